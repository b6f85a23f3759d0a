r"""User-based kNN in the local model: the server holds only each user's own randomised releases.

Every user $u$ of the user list runs two randomisers on their own device and
sends the outputs:

1. a **similarity sketch** of their ratings, through a sketch backend of
   [`dprec.similarity`][dprec.similarity] (default the private SJLT of
   Stausholm 2021), with `sketch_share` of ε;
2. a **rating release** with the rest, $\varepsilon_r$, for every item $i$ of the
   item list, of one of two kinds (`rating_release`):

   * `"laplace"`: the pair $(x_{ui}, n_{ui}) = ((\mathrm{clip}(r_{ui}) - c)/B, 1)$ if $u$
     rated $i$, $(0, 0)$ otherwise ($c$ the middle of the public rating scale,
     $B$ its half-width), each coordinate plus Laplace noise of scale
     $2/\varepsilon_r$ (the lattice sampler of `laplace`):
     adding or removing one rating changes one pair by at most 2 in ℓ1;
   * `"krr"`: the rating rounded to the scale's integer grid, or $\bot$ when
     unrated, through k-ary randomised response over the $L + 1$ symbols
     (Warner 1965; Kairouz, Oh & Viswanath 2014): adding or removing one
     rating changes one item's symbol.  The server debiases each report:
     $\hat 1[s] = (1[\text{report} = s] - q)/(p - q)$.

Both give the server an unbiased $(\hat x_{vi}, \hat n_{vi})$ per user and item.
From the releases alone the server computes

* $\mu = c + B \sum \hat x / \sum \hat n$ and, with $X_i = \sum_v \hat x_{vi}$ and
  $N_i = \sum_v \hat n_{vi}$, $b_i = (B X_i - N_i (\mu - c)) / (\max(N_i, 0) + \beta)$;
* each user's `k` most similar users by the sketches' similarities (ties by
  the users' sorted rank), with weights $w_{uv} = \max(s_{uv}, 0)$;
* the neighbourhood deviation
  $d_{ui} = \sum_v w_{uv} \hat e_{vi} / (\max(\sum_v w_{uv} \hat n_{vi}, 0) + \gamma)$ with
  $\hat e_{vi} = B \hat x_{vi} - \hat n_{vi} (\mu + b_i - c)$ (unbiased for $v$'s
  residual on $i$, 0 when unrated);

an item's $b_i$ and a pair's $d_{ui}$ being 0 where the weight behind them ($N_i$,
$\sum_v w_{uv} \hat n_{vi}$) is not above two standard deviations of its noise (what the
noise would swamp adds nothing: the answer is then the user's own mean), every
$b_i$ (every $d_{ui}$) being 0 unless the releases show an effect (a deviation) above
their noise at all (`effects_above_noise`), and
where the stabilisers $\beta$ and $\gamma$ are, by default, the standard deviation
of the numerator's noise divided by `noise_tolerance`: the noise of $b_i$ and
$d_{ui}$ then has a standard deviation of about `noise_tolerance` (in rating
units) or less, and what the noise would swamp shrinks to 0.  They are public
functions of ε, the number of users and the weights (post-processing);

and $u$'s prediction $\hat r_{ui} = \mu + b_i + b_u + d_{ui}$ adds $u$'s own
$b_u = \sum_{I_u} (r_{uj} - \mu - b_j)/(|I_u| + \lambda)$, computed from $u$'s raw
ratings: a prediction is shown to $u$ alone (it would run on $u$'s device),
and local DP protects each user against everyone else, the server included.

**Guarantee** (`Unit.RATING`, one rating of one user added or removed): each
user's two releases, with the item list's selection $\varepsilon_s$ without `items=`
(see the conditions), compose to $\varepsilon_s + \varepsilon_{\text{sketch}} + \varepsilon_r$
= `epsilon` (basic composition, from the mechanisms' privacy maps), against anyone
who sees them; everything else is post-processing.  A whole user is protected
only by group privacy ($|I_u|$ ratings): local DP on rating vectors is this
weak, and this noisy: every user reports every item, so each item's
aggregate carries the noise of all $n$ users (standard deviation
$\propto \sqrt n / \varepsilon_r$) against the signal of its raters alone.  The
dense $n_{\text{users}} \times n_{\text{items}}$ reports are the model's memory.

**Conditions.**  Who reports, and about which items, must not depend on the data.
*Items*: with `items=` (a public catalogue) the model is local from end to end, δ = 0.
Without it a curator first chooses the item list by partition selection
([`select_items`][dprec.endtoend.item_selection.select_items]): each item's count of raters
(not their ratings) plus lattice Laplace noise of scale $1/\varepsilon_s$,
$\varepsilon_s$ = `selection_share` · ε, listed when it reaches a threshold set by
`delta`.  One rating moves one count by 1, so the list is $(\varepsilon_s, \delta)$-DP
per rating (the sole rater's item is listed with probability at most δ); it is public
before anyone reports, the reports are over the listed items with the rest of ε
(split by `sketch_share`), and the three compose to ε, never above it, and δ.  This
central step is a stated condition.  An unlisted item is answered as an unknown one
(its ratings are in no report, only in the user's own $b_u$).  *Users*: in the local
model who reports is public (each device reports, $\bot$ for every item without
ratings): the user list, the trainset's or `users=`, is a condition, not a release;
neighbouring datasets differ in one rating of a reporting user, who still reports
when it was their only one (Surprise holds a user without ratings through `users=`).
Nobody is outside for the lists; the users the sketch backend puts outside its scope
(no sketch released) are (ε = ∞).  The lists are sorted, so the releases, the
similarities and the neighbour lists (keyed by raw user id) do not follow the data's
order.

See [End-to-end models](../end_to_end.md) for the construction, its accounting and its accuracy.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import NamedTuple

import numpy as np
import pandas as pd
from scipy import sparse
from surprise import AlgoBase

from ..accountant.ledger import LedgerEntry, PrivacyAccountant, Status, Unit
from ..mechanisms import (
    laplace,
    laplace_epsilon,
    laplace_scale,
    randomized_response,
    randomized_response_keep_probability,
)
from ..mechanisms.randomized_response import MAX_EPSILON as RR_MAX_EPSILON
from ..similarity import (
    SKETCH_BACKENDS,
    SketchBackend,
    SketchRelease,
    backend_options,
    check_sim_options,
    sketch_backend,
    with_public_bounds,
)
from ..utils import _rng as seeds
from ..utils._arrays import pattern_matrix, safe_divide, stable_descending_order
from ..utils._validation import check_choice, check_epsilon, check_int, check_open_unit, check_real
from .effects_release import DELTA
from .item_selection import item_list_entry, select_items
from .noisy_effects import SIGNAL, effects_above_noise, noise_shares, own_effects, shrunk_effects
from .rating_space import SCOPE, ListedModel, RatingSpace

__all__ = ["LocalKNN", "RATING_RELEASES"]

RATING_RELEASES = ("laplace", "krr")
#: the sketch backends with a privacy guarantee (all but the plain MinHash)
PRIVATE_SKETCHES = frozenset(SKETCH_BACKENDS) - {"minhash"}
#: the ledger's notes
NOTES = {
    "set item": "; a rating added or removed is one item of the rated set",
    "answers": "local model: each user's two releases, made on their device; every answer is "
               "post-processing of them, and a prediction for u also uses u's own ratings, "
               "shown to u alone",
    "laplace": "every item's (centred rating / B, rated) pair, l1 sensitivity 2 per rating "
               "added or removed",
    "population": "who reports is public (the local model's population): every user of the "
                  "trainset reports about every listed item, ⊥ where they rated nothing; "
                  "neighbouring datasets differ in one rating of a reporting user (removing "
                  "a user's only rating leaves them reporting ⊥); give users= to add users "
                  "without ratings",
}
#: how `fit` splits ε, with and without the item list's selection (in its errors)
_SPLIT = {True: "selection_share = {selection:g} and sketch_share = {sketch:g} gives the item "
                "list selection_share * epsilon, the sketch sketch_share * (1 - "
                "selection_share) * epsilon and the ratings the rest",
          False: "sketch_share = {sketch:g} gives the sketch sketch_share * epsilon and the "
                 "ratings (1 - sketch_share) * epsilon"}
#: what the model releases, all post-processing of the users' releases
OUTPUTS = ("predictions", "details", "neighbour lists", "similarities", "recommendations",
           "item effects")


class LocalKNN(ListedModel, AlgoBase):
    r"""User-based kNN whose server sees only local-DP releases (ε per rating, per user).

    See the module docstring for the construction, the privacy argument and
    its conditions; `privacy_report()` gives the ledger.

    Parameters
    ----------
    epsilon : float, default 1.0
        Each user's budget for one rating added or removed, `> 0`: the item list's
        selection (without `items=`), the sketch and the ratings compose to it.
    k : int, default 40
        Neighbours per user.
    sketch_share : float, default 0.5
        Share for the similarity sketch (in (0, 1)) of what the item list leaves:
        $\varepsilon_{\text{sketch}}$ = `sketch_share` · (1 − `selection_share`) · ε
        without `items=`, `sketch_share` · ε with it.
    selection_share : float, default 0.1
        Share of ε (in (0, 1)) for choosing the item list by partition selection
        without `items=` (unused with it): see the module docstring.
    delta : float, optional
        Without `items=`, the selection's δ target, in (0, 1), default `1e-5` (the
        report states the δ its threshold adds, at most this).  With `items=` the model
        has δ = 0, and another `delta` is an error.
    rating_release : {"krr", "laplace"}, default "krr"
        How each user releases their ratings.
    sim_options : dict or SketchBackend, optional
        A private sketch backend of [`dprec.similarity`][dprec.similarity] and its
        options, without `epsilon` (it is $\varepsilon_{\text{sketch}}$); default
        `{"name": "sjlt"}`.  A backend object must have that `epsilon`.
    noise_tolerance : float, default 0.2
        The standard deviation of noise the default stabilisers allow in
        $b_i$ and $d_{ui}$ (`> 0`).
    item_shrinkage, neighbour_shrinkage : float, optional
        $\beta$ and $\gamma$ (`>= 0`), overriding the defaults.
    user_shrinkage : float, default 0.0
        $\lambda$ in the user's own effect (`>= 0`): 0 keeps the noisy $\mu$ out of the
        answers (they are then the user's own mean plus what the releases add).
    users, items : sequence of raw ids, optional
        Public catalogues: who reports, and about which items (validated at
        `fit`; ratings outside them raise `ValueError` naming the parameter).
        Without them the users are the trainset's (who reports is public in the
        local model) and the items are chosen by partition selection (see the module
        docstring).
    random_state : None, int, RandomState or Generator
        `None` (default) draws fresh entropy at each fit; an int gives
        **seeded noise**, for experiments only (the report's entries are void).
    verbose : bool, default False
    budget : (float, float), optional
        A per-rating `(ε, δ)` budget of each user
        ([`PrivateModel`][dprec.accountant.private_model.PrivateModel]): a fit whose releases (the
        item list's selection included) would spend more is refused before any noise is
        drawn (`BudgetExceededError`, a `ValueError`), the model left as it was.  A sketch
        counts with its entry before the release (for `"gaussian_jl"` the declared δ,
        which bounds the δ its drawn projection states).

    Attributes
    ----------
    mu_ : float
    item_effects_ : pandas.Series
        $b_i$, indexed by raw item id (sorted): the item list, public or selected.
    sim : pandas.DataFrame
        The sketches' similarities, raw user ids (sorted) on both axes.
    neighbours_ : pandas.DataFrame
        Each user's `k` neighbours as raw user ids (columns: rank 0 to k − 1),
        indexed by raw user id.
    weights_ : pandas.DataFrame
        Their weights $\max(s_{uv}, 0)$, the same shape.

    Notes
    -----
    These were arrays in Surprise's inner-id order (neighbours as inner ids),
    which follows the data's order and leaked it.  Each user's own $b_u$ is
    kept privately (`_user_effects`): it is computed from their raw ratings and
    used in their own predictions only (on their device), so it is not a release.
    """

    _names_users = True    # its neighbour lists name users (the population: see _ledger)

    def __init__(self, *, epsilon: float = 1.0, k: int = 40, sketch_share: float = 0.5,
                 selection_share: float = 0.1, delta: float | None = None,
                 rating_release: str = "krr", sim_options: Mapping | None = None,
                 noise_tolerance: float = 0.2, item_shrinkage: float | None = None,
                 neighbour_shrinkage: float | None = None, user_shrinkage: float = 0.0,
                 users: Iterable | None = None, items: Iterable | None = None,
                 random_state=None, verbose: bool = False,
                 budget: tuple[float, float] | None = None) -> None:
        AlgoBase.__init__(self)
        self.epsilon = epsilon
        self.k = k
        self.sketch_share = sketch_share
        self.selection_share = selection_share
        self.delta = delta
        self.rating_release = rating_release
        self.sim_options = sim_options
        self.noise_tolerance = noise_tolerance
        self.item_shrinkage = item_shrinkage
        self.neighbour_shrinkage = neighbour_shrinkage
        self.user_shrinkage = user_shrinkage
        self.users = users
        self.items = items
        self.random_state = random_state
        self.verbose = verbose
        self.budget = budget

    # ------------------------------------------------------------------ fit
    def _sketch_options(self, sketch_epsilon: float, formula: str) -> dict:
        """The sketch backend's options, with `epsilon = sketch_epsilon` (`formula`)."""
        given = isinstance(self.sim_options, SketchBackend)
        if given:
            options = backend_options(self.sim_options)
        else:
            if not isinstance(self.sim_options, (Mapping, type(None))):
                raise TypeError(f"sim_options must be a dict or a sketch backend, got "
                                f"{type(self.sim_options).__name__} {self.sim_options!r}")
            options = dict(self.sim_options or {"name": "sjlt"})
            if "epsilon" in options:
                raise ValueError("sim_options must not give 'epsilon': the sketch's budget "
                                 f"is {formula}")
        name = options.get("name")
        if (name.lower() if isinstance(name, str) else name) not in PRIVATE_SKETCHES:
            raise ValueError(f"sim_options['name'] must be a private sketch backend, one of "
                             f"{sorted(PRIVATE_SKETCHES)}, got {name!r}")
        if given and not math.isclose(options["epsilon"], sketch_epsilon, rel_tol=1e-12):
            raise ValueError(f"sim_options: the backend's epsilon {options['epsilon']!r} "
                             f"must be {formula} = {sketch_epsilon!r}")
        return check_sim_options({**options, "epsilon": sketch_epsilon})

    def _delta(self) -> float:
        """The selection's δ target without `items=`, 0 with it; raises `ValueError` for
        `delta` not in (0, 1) without `items=`, or given non-zero with it."""
        delta = None if self.delta is None else check_real(self.delta, "delta", low=0.0,
                                                           high=1.0, high_inclusive=False)
        if self.items is not None:
            if delta:
                raise ValueError(f"delta = {delta:g} is the item list's selection's: with "
                                 "items= (a public catalogue) nothing is selected and "
                                 "LocalKNN has delta = 0 (leave delta unset)")
            return 0.0
        if delta == 0.0:
            raise ValueError("delta must be > 0 without items=: the item list's partition "
                             "selection spends it (give items= for delta = 0)")
        return DELTA if delta is None else delta

    def fit(self, trainset):
        """Choose the item list (without `items=`), draw every listed user's releases
        (spending `epsilon` per rating in all), aggregate them; refused past the `budget`,
        before any noise."""
        epsilon = check_epsilon(self.epsilon)
        k = check_int(self.k, "k", minimum=1)
        share = check_open_unit(self.sketch_share, "sketch_share")
        selection_share = check_open_unit(self.selection_share, "selection_share")
        delta, selecting = self._delta(), self.items is None
        release = check_choice(self.rating_release, "rating_release", RATING_RELEASES)
        # ε_s for the item list, the rest split by sketch_share (public functions)
        epsilon_s = selection_share * epsilon if selecting else 0.0
        rest = epsilon - epsilon_s
        options = self._sketch_options(share * rest, "sketch_share * (1 - selection_share) "
                                       "* epsilon" if selecting else "sketch_share * epsilon")
        tolerance = check_real(self.noise_tolerance, "noise_tolerance", low=0.0,
                               low_inclusive=False)
        beta, gamma = (None if v is None else check_real(v, name, low=0.0) for v, name in
                       ((self.item_shrinkage, "item_shrinkage"),
                        (self.neighbour_shrinkage, "neighbour_shrinkage")))
        lam = check_real(self.user_shrinkage, "user_shrinkage", low=0.0)
        seeds.validate_random_state(self.random_state)
        space = RatingSpace.build(trainset, self.users, self.items)
        low, high = trainset.rating_scale
        options = with_public_bounds(options, (low, high))
        # what each user's releases spend, public functions of the parameters
        try:
            entries = [item_list_entry(epsilon_s, delta, Unit.RATING)[0]] if selecting else []
            entries.append(sketch_backend(options).privacy())
            spent = sum(entry.epsilon for entry in entries)     # the accountant's sum
            # the ratings get the rest (k-ary randomised response resolves ε up to 1e18),
            # at most what keeps the sum, in floats, within epsilon
            cap = epsilon - spent
            while cap > 0.0 and spent + cap > epsilon:
                cap = math.nextafter(cap, 0.0)
            epsilon_r = min((1.0 - share) * rest, cap,
                            math.inf if release == "laplace" else RR_MAX_EPSILON)
            if not epsilon_r > 0.0:
                raise ValueError("nothing is left for the ratings")
            entries.append(laplace_entry(epsilon_r) if release == "laplace"
                           else krr_entry((low, high), epsilon_r))
        except ValueError as error:       # a budget too small for a release: say whose
            split = _SPLIT[selecting].format(selection=selection_share, sketch=share)
            raise ValueError(f"epsilon = {epsilon:g} with {split}: {error}") from None
        self._refuse_past_budget([(entry.epsilon, entry.delta) for entry in entries],
                                 Unit.RATING)
        AlgoBase.fit(self, trainset)
        entropy = seeds.fit_entropy(self.random_state)
        everything = space              # every rated item: the users' own b_u read them all
        seeds.stable_keys(space.items.ids)    # ids that collide as text are refused before any list
        if selecting:
            space, _ = select_items(space, epsilon_s, delta, Unit.RATING,
                                    seeds.derive_generator(entropy, "item list"))
        matrix, n_users = space.matrix, space.matrix.shape[0]
        centre, half = (low + high) / 2.0, (high - low) / 2.0

        # 1. the sketches, and the neighbours they give (ties by the users' sorted rank)
        backend = sketch_backend(options, seeds.derive_generator(entropy, "sketch"))
        self._sim = backend.similarity_matrix(matrix, columns=seeds.stable_keys(space.items.ids))
        self._neighbours, self._weights = _top_k_neighbours(self._sim, min(k, n_users - 1))
        self._publish(space)

        # 2. the rating reports, debiased
        rng = seeds.derive_generator(entropy, "ratings")
        reports = laplace_reports if release == "laplace" else krr_reports
        (x_hat, n_hat), noise, release_entry = reports(matrix, (low, high), epsilon_r, rng)
        # a bound on the noise sd of one residual report ê (|μ + b_i − c| ≤ 3B), over the
        # tolerance: β and γ are this times the root of the sum of the squared weights
        self._stabiliser_unit = half * (noise.x + 3.0 * noise.count) / tolerance

        # 3. the server's aggregates
        sums, counts = x_hat.sum(axis=0), n_hat.sum(axis=0)
        self.mu_ = float(np.clip(centre + half * sums.sum() / max(counts.sum(), 1.0), low, high))
        # b_i: DPBaseline's posterior mean under the aggregates' noise (0 below SIGNAL noise
        # sd, centred over the items: no noisy μ in it), weighted by its chance of not being
        # pure noise; all 0 where the releases show no effect beyond their noise (#34:
        # never worse than the user's own mean)
        noise_sd = (half * noise.x * math.sqrt(n_users), noise.count * math.sqrt(n_users))
        effects = shrunk_effects(half * sums, counts, noise_sd, 0.0 if beta is None else beta,
                                 (half / 2.0) ** 2 / 2.5, high - low)
        effects *= 1.0 - noise_shares(counts, noise_sd[1])
        tested_sd = (half * noise.sum_sd(counts, n_users), noise_sd[1])     # mostly exact
        self._item_effects = effects if effects_above_noise(half * sums, counts,
                                                            tested_sd) else 0.0 * effects
        self._count_sd = noise.count
        self.item_effects_ = pd.Series(self._item_effects.copy(), index=space.items.labels(),
                                       name="item_effect")
        self._residual_reports = half * x_hat - n_hat * (self.mu_ + self._item_effects - centre)
        self._count_reports = n_hat
        self._gamma = gamma
        self._deviates = self._deviations_above_noise()

        # 4. each user's own effect (their raw ratings, used in their own predictions only;
        # an unlisted item's effect is 0, as in their answers)
        base = np.full(len(everything.items), self.mu_)
        base[everything.items.positions(space.items.ids)] += self._item_effects
        self._user_effects = own_effects(everything.matrix, base, lam)
        self._accountant = self._ledger(entries[:-2], backend.release_, release_entry,
                                        release, seeds.is_seeded(self.random_state))
        if self.verbose:
            print(f"LocalKNN: {n_users} users released a {options['name']} sketch and their "
                  f"ratings ({release}), ε = {epsilon:g} per rating")
        return self

    def _deviations_above_noise(self) -> bool:
        """Whether the neighbours' weighted reports over every user × item pair show any
        deviation beyond their noise (`effects_above_noise`, with the numerator's bound
        `spread · unit · tolerance`): if not, no deviation is added."""
        n_users, k = self._neighbours.shape
        weights = sparse.csr_matrix((self._weights.ravel(), self._neighbours.ravel(),
                                     np.arange(n_users + 1) * k), shape=(n_users,) * 2)
        spread = np.sqrt((self._weights**2).sum(axis=1))[:, None]
        noise_sd = (spread * self._stabiliser_unit * self.noise_tolerance,
                    spread * self._count_sd)
        return effects_above_noise(weights @ self._residual_reports,
                                   weights @ self._count_reports, noise_sd)

    def _publish(self, space: RatingSpace) -> None:
        """The released similarities and neighbour lists, keyed by raw user id (sorted)."""
        self._space = space
        labels, ids = space.users.labels(), np.empty(len(space.users), dtype=object)
        ids[:] = space.users.ids
        self._sim.flags.writeable = False
        self.sim = pd.DataFrame(self._sim, index=labels, columns=labels, copy=False)
        ranks = pd.RangeIndex(self._neighbours.shape[1], name="rank")
        self.neighbours_ = pd.DataFrame(ids[self._neighbours], index=labels,
                                        columns=ranks).infer_objects()
        self.weights_ = pd.DataFrame(self._weights, index=labels, columns=ranks)

    def _ledger(self, selection: list[LedgerEntry], sketch: SketchRelease,
                ratings: LedgerEntry, release: str, seeded: bool) -> PrivacyAccountant:
        """The item list's `selection` (none with `items=`) and every listed user's two
        releases, charged once, in this order; the lists' conditions."""
        accountant = self._open_accountant(self._space.users.ids,
                                           f"LocalKNN(rating_release={release!r})", seeded)
        listed = [accountant.register(entry) for entry in selection]
        entry = sketch.entry
        if entry.unit is Unit.SET_ITEM:   # a rating added or removed is an item of the set
            entry = replace(entry, unit=Unit.RATING, note=entry.note + NOTES["set item"])
        indices = [*listed, sketch.charge(accountant, entry), accountant.register(ratings)]
        accountant.release_once([*listed, indices[-1]], OUTPUTS, NOTES["answers"], indices)
        # the lists' conditions (not ListedModel's scope: the user list is the population,
        # a condition of the local model, and nobody is outside for either list)
        items, users = self._space.items, self._space.users
        accountant.add_condition(SCOPE["items given"] if items.given
                                 else SCOPE["items selected"] + items.selection)
        accountant.add_condition(SCOPE["users given"] if users.given else NOTES["population"])
        return accountant

    # ------------------------------------------------------------- answers
    def _estimates(self, users: np.ndarray, items: np.ndarray) -> np.ndarray:
        """Estimates (not clipped) for positions in the lists (`-1`: unknown)."""
        known_user, known_item = users >= 0, items >= 0
        u, i = np.maximum(users, 0), np.maximum(items, 0)
        effects = self._item_effects[i] if len(self._item_effects) else 0.0   # none listed
        est = (self.mu_ + np.where(known_user, self._user_effects[u], 0.0)
               + np.where(known_item, effects, 0.0))
        both = known_user & known_item
        est[both] += self._deviations(u[both], i[both])
        return est

    def _deviations(self, users: np.ndarray, items: np.ndarray) -> np.ndarray:
        r"""$d_{ui}$ for listed pairs: the weighted debiased residual reports of $u$'s
        neighbours on $i$, stabilised by $\gamma$."""
        neighbours, weights = self._neighbours[users], self._weights[users]
        numerator = (weights * self._residual_reports[neighbours, items[:, None]]).sum(axis=1)
        count = (weights * self._count_reports[neighbours, items[:, None]]).sum(axis=1)
        spread = np.sqrt((weights**2).sum(axis=1))
        noise = SIGNAL * self._count_sd * spread       # the gate: SIGNAL noise sd of the count
        passed = count > noise
        # the posterior mean of a deviation of prior sd `noise_tolerance` seen through the
        # numerator's noise (sd ≤ spread · unit · tolerance), its weight at a low estimate
        support = np.where(passed, count - noise, 1.0)
        sd_numerator = spread * self._stabiliser_unit * self.noise_tolerance
        denominator = (np.maximum(count, 0.0) + (0.0 if self._gamma is None else self._gamma)
                       + (sd_numerator / self.noise_tolerance)**2 / support)  # any tolerance
        deviations = safe_divide(numerator, denominator)          # denominator > 0
        # neighbours whose weighted reports on i are below their noise add nothing
        return np.where(passed & self._deviates, deviations, 0.0)


def _top_k_neighbours(sim: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Each row's `k` most similar other rows (ties by row index: the sorted rank of the
    ids) and `max(s, 0)` weights, by blocks of rows (a partition per row, memory of one
    block).  `k <= n − 1`, so every row has `k` neighbours."""
    n = len(sim)
    order = np.zeros((n, max(k, 0)), dtype=np.int64)
    weights = np.zeros((n, max(k, 0)))
    if k < 1:
        return order, weights
    step = max(1, _BLOCK_CELLS // n)
    for start in range(0, n, step):
        rows = np.arange(start, min(start + step, n))
        scores = sim[rows].copy()
        scores[np.arange(len(rows)), rows] = -np.inf       # not one's own neighbour
        order[rows], best = stable_descending_order(scores, k)
        weights[rows] = np.maximum(best, 0.0)
    return order, weights


#: cells of one block of rows in the neighbour search
_BLOCK_CELLS = 1 << 22


class ReportNoise(NamedTuple):
    r"""Standard deviations of the debiased reports' noise, public functions of ε and the
    scale: of $\hat x$ the bound the shrinkage reads (`x`), exactly at its largest over
    the ratings (`x_rated`) and in a cell the user did not rate (`x_unrated`); of
    $\hat n$ at its largest (`count`)."""

    x: float
    x_rated: float
    x_unrated: float
    count: float

    def sum_sd(self, counts: np.ndarray, n_users: int) -> np.ndarray:
        r"""Per item, a bound on the noise sd of $\sum_v \hat x_{vi}$ over `n_users`
        reports (exact where no one rated), the released weights `counts` (clipped to
        `[0, n_users]`) standing for the number of rated cells (post-processing)."""
        rated = np.clip(counts, 0.0, n_users)
        return np.sqrt((n_users - rated) * self.x_unrated**2 + rated * self.x_rated**2)


def laplace_reports(matrix, scale_range: tuple[float, float], epsilon: float,
                    rng) -> tuple[tuple[np.ndarray, np.ndarray], ReportNoise, LedgerEntry]:
    r"""Every user's $(x, n)$ over all items (the users × items ratings `matrix`, not
    modified) plus lattice Laplace noise of scale $2/\varepsilon$; returns the reports, the
    standard deviations of their noise, and the entry."""
    low, high = scale_range
    centre, half = (low + high) / 2.0, (high - low) / 2.0
    values = matrix.copy()
    values.data = (np.clip(matrix.data, low, high) - centre) / half
    pattern = pattern_matrix(matrix)
    scale = laplace_scale(epsilon, 2.0, max_changed=2)
    noisy = laplace(np.stack([values.toarray(), pattern.toarray()]), scale, rng)
    return ((noisy[0], noisy[1]), ReportNoise(*(math.sqrt(2.0) * scale,) * 4),
            laplace_entry(epsilon))


def laplace_entry(epsilon: float) -> LedgerEntry:
    """The entry of `laplace_reports` at `epsilon`: ε from the lattice Laplace's privacy
    map at its scale, known before any noise."""
    scale = laplace_scale(epsilon, 2.0, max_changed=2)
    return LedgerEntry("ratings", "laplace (lattice)", laplace_epsilon(scale, 2.0, max_changed=2),
                       0.0, Unit.RATING, Status.HOLDS, "user", NOTES["laplace"])


def krr_reports(matrix, scale_range: tuple[float, float], epsilon: float,
                rng) -> tuple[tuple[np.ndarray, np.ndarray], ReportNoise, LedgerEntry]:
    """Every user's symbol per item of the users × items ratings `matrix` (not modified;
    `0` unrated, `1..L` the integer grid of the scale) through k-ary randomised response,
    debiased; returns the reports, bounds on the standard deviations of their noise, and
    the entry."""
    low, high = scale_range
    centre, half = (low + high) / 2.0, (high - low) / 2.0
    grid = krr_levels(scale_range)
    n_symbols = len(grid) + 1
    codes = matrix.copy()
    # the nearest level: a rating beyond the scale goes to the level at its end
    codes.data = 1.0 + np.abs(matrix.data[:, None] - grid).argmin(axis=1)
    reported = randomized_response(codes.toarray().astype(np.int64), n_symbols, epsilon, rng)
    p = randomized_response_keep_probability(n_symbols, epsilon)
    q = (1.0 - p) / (n_symbols - 1)
    gap = p * -math.expm1(-epsilon)        # p − q = p (1 − e^{−ε}), without cancellation
    levels = np.concatenate([[0.0], (grid - centre) / half])   # x of each symbol, ⊥ ↦ 0
    x_hat = (levels[reported] - q * levels.sum()) / gap
    n_hat = ((reported != 0) - q * (n_symbols - 1)) / gap
    # the debiased reports' noise: a report differs from the truth with probability 1 − p,
    # by at most 2 in x (the bound), each other symbol with probability q (row s of
    # `given`: exact); the rated indicator is Bernoulli(1 − p) or Bernoulli(1 − q)
    bound = min(1.0, 2.0 * math.sqrt(1.0 - p)) / gap
    given = q + gap * np.eye(n_symbols)
    variances = np.maximum(given @ levels**2 - (given @ levels) ** 2, 0.0)
    sd_x = np.sqrt(variances) / gap
    sd_n = math.sqrt(max(p * (1.0 - p), q * (1.0 - q))) / gap
    return ((x_hat, n_hat), ReportNoise(bound, float(sd_x[1:].max()), float(sd_x[0]), sd_n),
            krr_entry(scale_range, epsilon))


def krr_levels(scale_range: tuple[float, float]) -> np.ndarray:
    """The integer levels of the rating scale: the symbols of k-ary randomised response
    (with "unrated").

    Raises
    ------
    ValueError
        If the scale holds no integer.
    """
    low, high = scale_range
    grid = np.arange(math.ceil(low), math.floor(high) + 1)
    if len(grid) < 1:
        raise ValueError(f"krr needs an integer in the rating scale {scale_range}")
    return grid


def krr_entry(scale_range: tuple[float, float], epsilon: float) -> LedgerEntry:
    """The entry of `krr_reports` at `epsilon`, known before any noise: the sampler draws
    its move from ln(1 - p) computed from ε, exact at every ε (even where p rounds to 1),
    so one report spends ε."""
    return LedgerEntry("ratings", "k-ary randomised response", epsilon, 0.0, Unit.RATING,
                       Status.HOLDS, "user",
                       f"every item's symbol (unrated or one of {len(krr_levels(scale_range))} "
                       "levels); a rating added or removed changes one symbol")
