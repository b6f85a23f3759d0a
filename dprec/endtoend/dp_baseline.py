r"""A differentially private baseline predictor: the yardstick every private kNN must beat.

$\hat r_{ui} = \mu + b_i + b_u$ (Koren's baseline; McSherry & Mironov's "global
effects", KDD 2009 §4.1), where $\mu$ and every $b_i$ are post-processing of **one
differentially private release** and $b_u$ comes from the user's own ratings.

**What is released.**  Per unit (a user, or a rating: `unit=`), ratings clipped to the
public scale $[r_{\min}, r_{\max}]$ (centre $c$, half-range $B$) give

* per item of the item list, the weighted sum $S_i = \sum w\, x_{ui}$ of the *centred and
  clipped* ratings $x_{ui} = \mathrm{clip}(r_{ui} - m_u, -C, C)$ and their weight
  $N_i = \sum w$, where $m_u$ is the scale's centre $c$ (`centre="scale"`) or the user's
  own mean (`centre="user"`, user level only), $C$ = `clip`;
* the global sum and count of $(\bar r - c)/B$ per unit ($\bar r$ the user's mean, or the
  rating), giving $\mu = c + B \tilde G / \max(\tilde G_n, 1)$.

The weights bound each unit's contribution: $w = 1$ per rating (`unit="rating"`); per
user, $w_u = 1/\sqrt{|I_u|}$ with the Gaussian mechanism (the user's item block then has
ℓ2 norm at most $\sqrt 2$ in units of $C$) or $w_u = 1/|I_u|$ with Laplace (ℓ1 norm at
most 2, McSherry & Mironov's weighting).

**Mechanisms** (`mechanism=`):

* `"gaussian"` (default per user): the whole vector, the global coordinates scaled by
  $a = \sqrt{s/(1-s)}$ ($s$ = `global_share`, their share of the squared sensitivity),
  is put on the integer grid $2^{-12}$ with each unit's integer vector clipped to an
  exact ℓ2 bound $K$
  (`dprec.mechanisms.discrete_gaussian.integer_l2_sums`), and one
  discrete Gaussian release of scale $\sigma = K/\sqrt{2\rho}$ is $\rho$-zCDP for the unit
  (Canonne, Kamath & Steinke 2020); $\rho$ is the largest whose $(\varepsilon, \delta)$ by
  `dp-accounting` is at most (`epsilon`, `delta`);
* `"laplace"` (default per rating): the global and item vectors, each of ℓ1 sensitivity
  2, through the lattice Laplace sampler (`dprec.mechanisms.laplace`),
  `global_share` of ε and the rest (basic composition), δ = 0.

**What is answered** (post-processing, and the user's own data).  Each item effect
reads the release and its public noise scale (empirical Bayes with a known noise
variance): $b_i = \tilde S_i / (\tilde N_i + \beta + \sigma_S^2 / (\tau^2 (\tilde N_i -
2\sigma_N)))$ where $\tilde N_i > 2 \sigma_N$, else 0 ($\sigma_S, \sigma_N$ the noise's
standard deviations, $\beta$ = `item_shrinkage`, $\tau^2$ = `prior_variance`), then all
centred at their mean weighted by $\max(\tilde N_i, 0)$: the items below their noise
share one effect and add nothing between them.  Then $b_u = \sum_{i \in I_u} (r_{ui} -
\mu - b_i) / (|I_u| + \lambda')$ from the user's own ratings, $\lambda'$ the shrinkage
$\lambda$ discounted by the noise of $\mu$ (`towards_noisy_mean`): a prediction for $u$
is shown to $u$ alone, and differential privacy protects each user against what the
*others* see.  Where no item is above its noise every $b_i$ is 0 and the answer is the
user's own mean, shrunk by $\lambda'$ towards $\mu$ (not at all where $\mu$ is mostly
noise): the model is never far from what the user's own data give for free.

**Nothing structural depends on the data's order.**  Surprise numbers users and items
by first appearance, so one rating removed renumbers many of them.  The model works in
the canonical space of [`dprec.endtoend.rating_space`][dprec.endtoend.rating_space] (users and items
sorted by raw id, the noise drawn in that order); `item_effects_` is keyed by raw item
id, and a renumbering of the same data gives bit-identical releases for the same seed.

**The lists of users and items.**  With `items=` (a public catalogue, chosen without
looking at the ratings) every item of it has a released effect, noise only where nobody
rated it; with `users=` the same for users (a listed user without ratings has
$b_u = 0$).  Without them the lists are read from the data, and the report states it as
a condition: the guarantee is for neighbouring datasets with the same lists, and the
users at its boundary are outside it (ε = ∞ for them, with the reason): the sole rater
of an item when `items` is not given; when `users` is not given, under `unit="rating"`
every user with a single rating, and under `unit="user"` every user.

See [End-to-end models](../end_to_end.md) for the construction, its accounting and its accuracy.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

import numpy as np
import pandas as pd
from surprise import AlgoBase

from ..accountant.ledger import LedgerEntry, PrivacyAccountant, Status, Unit
from ..mechanisms.discrete_gaussian import grid_sensitivity, stated_epsilon
from ..mechanisms.partition_selection import cap_contributions
from ..utils._ratings import ratings_matrix
from ..utils._rng import FitNoise, NoiseSource, validate_random_state
from ..utils._validation import (
    check_choice,
    check_epsilon,
    check_int,
    check_open_unit,
    check_positive,
    check_real,
    check_within,
)
from .effects_release import (  # noqa: F401  (re-exported: their home was this module)
    DELTA,
    GRID_BITS,
    MAX_ITEMS_PER_USER,
    SELECTION_SHARE,
    Contributions,
    ReleasePlan,
    SelectionBudget,
    Settings,
    check_grid_units,
    check_mechanism_delta,
    contributions,
    gaussian_release,
    laplace_release,
    release_plan,
    release_sums,
    reselect,
    weight_of,
)
from .noisy_effects import (  # noqa: F401  (re-exported: their home was this module)
    SIGNAL,
    effects_above_noise,
    noise_shares,
    own_effects,
    shrunk_effects,
    stabilised_effects,
    towards_noisy_mean,
)
from .partitions import Partitions, UserRows, check_partitioning
from .rating_space import (  # noqa: F401  (re-exported: their home was this module)
    SCOPE,
    Catalogue,
    ListedModel,
    RatingSpace,
    sorted_ids,
    surprise_details,
)

__all__ = ["SCOPE", "DPBaseline", "sorted_ids"]

UNITS = {"rating": Unit.RATING, "user": Unit.USER}
MECHANISMS = ("gaussian", "laplace")
CENTRES = ("scale", "user")
#: the `global_share` range of the Gaussian release: $a = \sqrt{s/(1-s)} \ge 2^{-12}$ (a
#: unit's count in the global pair at least one step of the grid $2^{-12}$) and
#: $a^2 \le 2^{27}$ (a unit's squared norm in grid steps, $\le 2 a^2 2^{24} + 2^{25}$,
#: below $2^{53}$)
GLOBAL_SHARES = (2.0**-24, 1.0 - 2.0**-27)
#: the ledger's notes: each release's argument in brief, and the answers'
NOTES = {
    "laplace": "Laplace (lattice sampler) on (clipped centred sums / C, weights), l1 "
               "sensitivity 2 per {unit} (weights {weights})",
    "gaussian": "discrete Gaussian on the integer (clipped centred sums / C, weights), each "
                "{unit}'s vector clipped to l2 norm K (weights {weights}); rho-zCDP, "
                "(epsilon, delta) by dp-accounting",
    "answers": "every answer is post-processing of the release; a prediction for u also "
               "uses u's own ratings (b_u), shown to u alone",
}
#: the weights per unit and mechanism, as the notes print them
WEIGHTS = {("rating", "laplace"): "1", ("rating", "gaussian"): "1",
           ("user", "laplace"): "1/|I_u|", ("user", "gaussian"): "1/sqrt(|I_u|)"}
#: what the model releases, all post-processing of the release
OUTPUTS = ("predictions", "details", "recommendations", "item effects")


class DPBaseline(ListedModel, AlgoBase):
    r"""Baseline predictor $\mu + b_i + b_u$ from one differentially private release.

    See the module docstring for the construction, the privacy argument and its
    conditions; `privacy_report()` gives the ledger (ε and δ for the unit, every output
    covered by the release).

    Parameters
    ----------
    epsilon : float, default 1.0
        The privacy budget of the whole release, `> 0`.
    unit : {"user", "rating"}, default "user"
        What two neighbouring datasets differ in: all of one user's ratings, or one
        rating.
    mechanism : {"gaussian", "laplace"}, optional
        The noise: the discrete Gaussian with weights $1/\sqrt{|I_u|}$ (default per user),
        or the lattice Laplace with weights $1/|I_u|$ (default per rating).
    delta : float, optional
        The model's δ, in (0, 1), default `1e-5`: with the Gaussian mechanism, the
        release's and (without `items=`) the partition selection's, half each; with
        Laplace, the partition selection's alone.  With Laplace and a public item
        catalogue the model has δ = 0 (giving another `delta` then is an error).
    centre : {"scale", "user"}, default "scale"
        What ratings are centred at before clipping: the middle of the rating scale, or
        (`unit="user"` only) each user's own mean.
    clip : float, optional
        $C$, in rating units, in $(0, r_{\max} - r_{\min}]$: centred ratings are clipped
        to $[-C, C]$ (none is farther from its centre than the scale's range, so a larger
        $C$ would clip nothing and only scale the noise up).  Default a quarter of the
        scale's range per user (1 on 1–5), half of it per rating (no clipping when centred
        at the scale's middle).
    global_share : float, default 0.1
        The share of the budget spent on $\mu$ (in (0, 1)): of ε (Laplace), of the
        squared sensitivity (Gaussian, in $[2^{-24}, 1 - 2^{-27}]$: below, a unit's count
        in the global pair, scaled by $\sqrt{s/(1-s)}$, is under the grid step
        $2^{-12}$, and $\mu$ would be noise alone; above, a unit's squared norm in grid
        steps passes $2^{53}$).
    item_shrinkage : float, optional
        $\beta$, `>= 0`, in units of the weights: default ten raters of a hundred
        ratings each ($10$ per rating, $10/\sqrt{100}$ or $10/100$ per user).
    prior_variance : float, optional
        $\tau^2$, the spread of the item effects the shrinkage assumes (`> 0`, in
        squared rating units); default $(B/2)^2/2.5$ (0.4 on 1–5).
    user_shrinkage : float, default 3.0
        $\lambda$ in the user effect (`>= 0`), towards a noise-free $\mu$; the fit
        discounts it by $\mu$'s noise (`user_shrinkage_`).
    users, items : sequence of raw ids, optional
        Public catalogues (stored as given, validated at `fit`): every rating must be
        by a listed user of a listed item (else `ValueError` naming the parameter).
        Without `items=` the items are chosen by private partition selection, and
        without `users=` the user list is kept private (see the module docstring).
    max_items_per_user : int, default 1000
        Per user without `items=`: the most items one user contributes to (a random
        subset of a user who rated more), which bounds the items one user can bring
        into the list (the partition selection's $k$): an item only dropped ratings
        reach is never listed.
    random_state : None, int, RandomState or Generator
        `None` (default) draws fresh entropy at each fit; an int gives **seeded
        noise**, reproducible, for experiments only: the report's entries are then void
        (anyone who guesses the seed removes the noise).
    verbose : bool, default False
    budget : (float, float), optional
        A per-`unit` `(ε, δ)` budget
        ([`PrivateModel`][dprec.accountant.private_model.PrivateModel]): a fit whose release would
        spend more is refused before any noise is drawn
        (`BudgetExceededError`, a `ValueError`), the model left as it was.
    backend : {"threads", "dask"}, default "threads"
        Where the sums over users are computed
        ([`dprec.endtoend.partitions`][dprec.endtoend.partitions]): per partition of the
        users, on this machine's threads, or (`"dask"`) as tasks on the
        `dask.distributed` client in scope (`ValueError` at `fit` without one).  The
        partial sums are added in partition order and the noise drawn once, here, from
        the model's generator: the same numbers on both backends for the same
        `random_state` and `n_partitions`.
    n_partitions : int, optional
        The partitions, of consecutive users holding about equal numbers of ratings
        (`>= 1`); default one per $2^{22}$ ratings.  Their boundaries depend on the
        users' numbers of ratings, but the release does not: the Gaussian sums are exact
        integers and each user is clipped within their own row (the Laplace totals may
        differ in their last bit, before the lattice sampler rounds them).

    Attributes
    ----------
    mu_ : float
        The released global mean.
    item_effects_ : pandas.Series
        The released $b_i$, indexed by raw item id in sorted order (every item of the
        item list).
    noise_sd_ : tuple of float
        $(\sigma_S, \sigma_N)$: the standard deviations of the noise on each item's sum
        (rating units) and weight, public functions of the parameters.
    unlisted_effect_ : float
        The effect of an item with no release behind it (centred as the others): the
        answer's item effect, for a known user, for an item not in `item_effects_`.
    rho_ : float or None
        The zCDP ρ released in all (Gaussian; None with Laplace).
    selection_delta_ : float
        The δ the partition selection added (0 with a public item catalogue).
    user_shrinkage_ : float
        The $\lambda'$ of each $b_u$: `user_shrinkage` discounted by the noise of $\mu$
        (`towards_noisy_mean`), so that where $\mu$ is mostly noise a user's answer is
        their own mean, not shrunk towards noise.

    Notes
    -----
    Each user's own $b_u$ is kept privately (`_user_effects`, in the sorted order of the
    user list): it is computed from their raw ratings and used in their own predictions
    only, so it is not a release.

    References
    ----------
    F. McSherry and I. Mironov, "Differentially Private Recommender Systems: Building
    Privacy into the Netflix Prize Contenders", KDD 2009.  C. Canonne, G. Kamath and
    T. Steinke, "The Discrete Gaussian for Differential Privacy", NeurIPS 2020.
    """

    def __init__(self, *, epsilon: float = 1.0, unit: str = "user", mechanism: str | None = None,
                 delta: float | None = None, centre: str = "scale", clip: float | None = None,
                 global_share: float = 0.1, item_shrinkage: float | None = None,
                 prior_variance: float | None = None, user_shrinkage: float = 3.0,
                 users: Iterable | None = None, items: Iterable | None = None,
                 max_items_per_user: int = MAX_ITEMS_PER_USER, random_state=None,
                 verbose: bool = False, budget: tuple[float, float] | None = None,
                 backend: str = "threads", n_partitions: int | None = None) -> None:
        AlgoBase.__init__(self)
        self.epsilon = epsilon
        self.unit = unit
        self.mechanism = mechanism
        self.delta = delta
        self.centre = centre
        self.clip = clip
        self.global_share = global_share
        self.item_shrinkage = item_shrinkage
        self.prior_variance = prior_variance
        self.user_shrinkage = user_shrinkage
        self.users = users
        self.items = items
        self.max_items_per_user = max_items_per_user
        self.random_state = random_state
        self.verbose = verbose
        self.budget = budget
        self.backend = backend
        self.n_partitions = n_partitions

    def _settings(self, rating_scale: tuple[float, float]) -> Settings:
        """The parameters checked, the defaults resolved for `rating_scale`."""
        epsilon = check_epsilon(self.epsilon)
        unit = check_choice(self.unit, "unit", tuple(UNITS))
        mechanism = ("gaussian" if unit == "user" else "laplace") if self.mechanism is None \
            else check_choice(self.mechanism, "mechanism", MECHANISMS)
        delta = check_mechanism_delta(mechanism, self.delta, self.items is None)
        centre = check_choice(self.centre, "centre", CENTRES)
        if centre == "user" and unit == "rating":
            raise ValueError("centre='user' is for unit='user': one rating moves its "
                             "user's mean, and with it every centred rating of theirs "
                             "(use centre='scale' per rating)")
        half_range = (rating_scale[1] - rating_scale[0]) / 2.0
        clip = (half_range / 2.0 if unit == "user" else half_range) if self.clip is None \
            else check_within(check_positive(self.clip, "clip"), "clip", high=2.0 * half_range,
                              why="the rating scale's range r_max - r_min: no centred rating is "
                                  "farther from its centre, so a larger clip clips nothing and "
                                  "only scales the noise up")
        share = check_open_unit(self.global_share, "global_share")
        if mechanism == "gaussian":
            check_within(share, "global_share", low=GLOBAL_SHARES[0], high=GLOBAL_SHARES[1],
                         why="[2^-24, 1 - 2^-27] with mechanism='gaussian', which puts the "
                             "global pair, scaled by a = sqrt(global_share / (1 - "
                             "global_share)), on the grid 2^-12: below, a unit's count is "
                             "under one grid step and the released mean would be noise "
                             "alone; above, a unit's squared norm in grid steps passes 2^53, "
                             "float64's exact integers")
        beta = 10.0 * weight_of(100, unit, mechanism) if self.item_shrinkage is None \
            else check_real(self.item_shrinkage, "item_shrinkage", low=0.0)
        tau2 = (half_range / 2.0) ** 2 / 2.5 if self.prior_variance is None \
            else check_positive(self.prior_variance, "prior_variance")
        lam = check_real(self.user_shrinkage, "user_shrinkage", low=0.0)
        cap = check_int(self.max_items_per_user, "max_items_per_user", minimum=1)
        validate_random_state(self.random_state)
        return Settings(epsilon, delta, unit, mechanism, centre, clip, share, beta, tau2, lam,
                        cap)

    def fit(self, trainset):
        """Release $\\mu$ and the item effects (spending `epsilon`) and compute $b_u$."""
        return self.fit_part(trainset)

    def fit_part(self, trainset, noise: FitNoise | bytes | None = None,
                 seeded: NoiseSource | bool | None = None, rho: float | None = None,
                 selection: SelectionBudget | None = None,
                 more: Callable[[int, float], float] | None = None):
        """`fit` as part of another model (e.g. [`DPItemKNN`][dprec.DPItemKNN]): the noise
        from that model's `noise` (a `dprec.utils._rng.FitNoise`, its source deciding the
        entries' status; this model's `random_state` is then unused) — bytes a caller
        chose count as a caller's generator at least (`seeded` may say more: an int seed),
        never as fresh noise — with the Gaussian mechanism the release's zCDP `rho`
        (its share of the model's; `epsilon` is then unused and the entry states
        `zcdp_epsilon(rho, delta)`), and without `items=` the partition selection's
        `selection` budget (the δ it may spend).  Refused past the
        `budget`, before any noise.

        `more` (Gaussian only) is the calling model's public rule: given the number of
        listed items and the released (noisy) number of units, both known after the
        release, it returns a further zCDP ρ to spend on the same statistics (0 for
        none).  They are then released again over the listed items and the two releases
        averaged by inverse variance: one release at the summed ρ, in distribution.
        `rho_` is the ρ spent in all."""
        s = self._settings(trainset.rating_scale)
        backend, n_partitions = check_partitioning(self.backend, self.n_partitions)
        space = RatingSpace.build(trainset, self.users, self.items)
        if space.items.given:
            selection = None
        elif selection is None:
            selection = SelectionBudget(s.delta * (
                SELECTION_SHARE if s.mechanism == "gaussian" else 1.0))
        elif more is not None:              # two selections may run: half of δ each
            selection = SelectionBudget(selection.delta, stages=2)
        plan = release_plan(s, space.matrix.shape[1], rho, selection)
        self._refuse_past_budget([entry[2:] for entry in plan.entries], UNITS[s.unit])
        noise = FitNoise.of(noise, self.random_state, seeded)
        rng = noise.generator("dp-baseline")
        low, high = trainset.rating_scale
        centre, half_range = (low + high) / 2.0, (high - low) / 2.0
        released = space.matrix
        if selection is not None and s.unit == "user":      # at most `cap` items per user
            kept = cap_contributions(space.rows, s.cap, noise.generator("cap"))
            released = ratings_matrix(space.rows[kept], released.indices[kept],
                                      released.data[kept], released.shape)
        if s.mechanism == "gaussian":       # the partitions' exact integers, added
            check_grid_units(released.nnz if s.unit == "rating" else
                             int(np.count_nonzero(np.diff(released.indptr))), plan.noise[1])
        with Partitions(released, backend, n_partitions) as partitions:
            sums = partitions.sum(_release_sums, (s, (low, high), plan.noise))
        release = gaussian_release if s.mechanism == "gaussian" else laplace_release
        noisy, sd = release(sums, rng, plan.noise)
        n_items = space.matrix.shape[1]
        # partition selection, among the items a kept rating brings: one whose ratings the
        # cap dropped is no item of the release (k = cap counts the kept ones)
        kept_items = np.bincount(released.indices, minlength=n_items) > 0
        listed = np.ones(n_items, dtype=bool) if plan.threshold is None else \
            kept_items & (noisy[n_items:2 * n_items] >= plan.threshold)
        rho_spent, added, rule, entries = plan.rho, plan.selection_delta, plan.rule, plan.entries
        extra = 0.0 if more is None else float(more(int(listed.sum()), float(noisy[-1])))
        if extra > 0.0:                         # the same statistics again, averaged
            sigma, bound, a = plan.noise
            again = grid_sensitivity(bound, GRID_BITS) / math.sqrt(2.0 * extra)
            second, _ = release(sums, noise.generator("dp-baseline more"), (again, bound, a))
            weight = again**2 / (sigma**2 + again**2)
            noisy = weight * noisy + (1.0 - weight) * second
            combined = sigma * again / math.hypot(sigma, again)   # in grid steps
            sd = tuple(value * combined / sigma for value in sd)
            rho_spent = plan.rho + extra
            again_added = 0.0
            if plan.threshold is not None:      # the items chosen again, on both releases
                listed, again_added, rule = reselect(noisy[n_items:2 * n_items], combined,
                                                     selection, s)
                listed &= kept_items
            ((component, mechanism, _, delta),) = entries     # the one Gaussian entry
            own = delta - added
            entries = [(component, mechanism, stated_epsilon(rho_spent, own, s.epsilon),
                        delta + again_added)]
            added += again_added
        sums, counts = s.clip * noisy[:n_items], noisy[n_items:2 * n_items]
        global_sum, global_count = noisy[2 * n_items:]
        mu = float(np.clip(centre + half_range * global_sum / max(global_count, 1.0), low, high))
        item_sd = (s.clip * sd[0], sd[1])
        # the listed items' effects, and last that of an item with no release behind it
        effects = shrunk_effects(np.r_[sums[listed], 0.0], np.r_[counts[listed], 0.0], item_sd,
                                 s.item_shrinkage, s.prior_variance, high - low)
        effects, unlisted = effects[:-1], float(effects[-1])
        # μ's noise: its standard deviation to first order in both noises of the global pair
        mu_sd = half_range * sd[2] * math.hypot(1.0, global_sum / max(global_count, 1.0)) \
            / max(global_count, 1.0)
        user_shrinkage = towards_noisy_mean(s.user_shrinkage, mu_sd, half_range)
        base = np.full(n_items, mu + unlisted)
        base[listed] = mu + effects
        user_effects = own_effects(space.matrix, base, user_shrinkage)   # all own ratings
        if plan.threshold is not None:
            space = space.selected(listed, rule)
        AlgoBase.fit(self, trainset)           # the model is changed only after the release
        self.mu_, self._item_effects, self._space = mu, effects, space
        self.rho_, self.selection_delta_ = rho_spent, added
        self.unlisted_effect_ = unlisted
        self.noise_sd_ = (float(s.clip * sd[0]), float(sd[1]))
        self.item_effects_ = pd.Series(effects.copy(), index=space.items.labels(),
                                       name="item_effect")
        self.user_shrinkage_ = user_shrinkage
        self._user_effects = user_effects
        self._accountant = self._ledger(space, s, noise.source, entries)
        if self.verbose:
            print(f"DPBaseline: released μ and {len(space.items)} item effects "
                  f"({s.mechanism}), ε = {s.epsilon:g}, δ = {s.delta:g} per {UNITS[s.unit]}")
        return self

    def release_entries(self, rating_scale: tuple[float, float], n_items: int,
                        rho: float | None = None, selection: SelectionBudget | None = None
                        ) -> list[tuple[str, str, float, float]]:
        """The ledger entries `(component, mechanism, ε, δ)` a release over `n_items` items
        on `rating_scale` would make (with `fit_part`'s `rho` and `selection`), the
        parameters checked: public functions of them (and, with Laplace and a public
        catalogue, of its size), known before any noise is drawn
        ([`release_plan`][dprec.endtoend.dp_baseline.release_plan])."""
        return release_plan(self._settings(rating_scale), n_items, rho, selection).entries

    def _ledger(self, space: RatingSpace, s: Settings, seeded: bool,
                entries: list[tuple[str, str, float, float]]) -> PrivacyAccountant:
        """The accountant: one entry per release `(component, mechanism, ε, δ)`, charged
        once to every user of the user list; every output covered; the lists' scope."""
        accountant = self._open_accountant(space.users.ids, f"DPBaseline(unit={s.unit!r}, "
                                           f"mechanism={s.mechanism!r})", seeded)
        note = NOTES[s.mechanism].format(unit=s.unit, weights=WEIGHTS[s.unit, s.mechanism])
        indices = [accountant.register(LedgerEntry(
            component, mechanism, eps, delta, UNITS[s.unit], Status.HOLDS, "user", note))
            for component, mechanism, eps, delta in entries]
        self._release_once(accountant, indices, OUTPUTS, NOTES["answers"], UNITS[s.unit])
        return accountant

    @property
    def rating_space(self) -> RatingSpace:
        """The fitted lists and the ratings in their sorted order (the private data)."""
        self._check_fitted()
        return self._space

    def residuals(self) -> np.ndarray:
        r"""Each rating's $r_{ui} - \mu - b_i - b_u$, in the order of
        `rating_space.matrix.data`: each user's own data, used in their own answers and
        never released."""
        space = self.rating_space
        matrix = space.matrix
        return (matrix.data - self.mu_ - self._item_effects[matrix.indices]
                - self._user_effects[space.rows])

    def _estimates(self, users: np.ndarray, items: np.ndarray) -> np.ndarray:
        """Estimates (not clipped) for positions in the lists (`-1`: unknown)."""
        known_user, known_item = users >= 0, items >= 0
        effects = self._item_effects[np.maximum(items, 0)] if len(self._item_effects) else 0.0
        return (self.mu_ + np.where(known_user, self._user_effects[np.maximum(users, 0)], 0.0)
                + np.where(known_item, effects, np.where(known_user, self.unlisted_effect_, 0.0)))


def _release_sums(shared: tuple, rows: UserRows) -> np.ndarray:
    """One partition's partial sums of the release's vector (`Partitions.sum`'s function):
    `shared` is `(settings, rating_scale, noise)`; no randomness."""
    s, rating_scale, noise = shared
    return release_sums(contributions(rows.matrix, s, rating_scale), s.mechanism, noise)


# ------------------------------------------------------------------ the release
