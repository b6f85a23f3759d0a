r"""Private popularity: every item's number of holders, released with differential
privacy, as a top-N model — the yardstick of the private implicit models.

Popularity ranks the items by how many users hold them; it needs no neighbours, so a
private model that cannot beat it is no use.  Three releases, each a model with its
privacy report ([`PrivatePopularity`][dprec.implicit.popularity.PrivatePopularity]):

* `mechanism="laplace"` (central, **per user**): a curator caps each user's set at a
  public `cap` items (a uniformly random `cap` of a larger set) and releases the
  counts plus discrete Laplace noise of scale $t = \text{cap} / \varepsilon$
  ([`dprec.mechanisms.discrete_laplace`][]).  Removing a user changes the capped counts
  by at most `cap` in ℓ1, so the counts over a fixed item list are ε-DP for a whole
  user (`Unit.USER`), δ = 0;
* `mechanism="gaussian"` (central, **per user**): the same capped counts plus discrete
  Gaussian noise ([`discrete_gaussian`][dprec.mechanisms.discrete_gaussian.discrete_gaussian]).
  Removing a user moves them by at most $\sqrt{\text{cap}}$ in ℓ2, so
  $\sigma = \sqrt{\text{cap} / 2\rho}$ makes them $\rho$-zCDP (Canonne, Kamath &
  Steinke 2020), with $\rho$ the largest whose $(\varepsilon, \delta)$ by
  `dp-accounting` is within (`epsilon`, `delta`); `delta` is then the Gaussian's (all
  of it with `items=`, half without: the threshold below takes the rest).  The noise
  grows as $\sqrt{\text{cap}}$, not as `cap`: the choice for large sets;
* `mechanism="reports"` (local, **per item of a set**; the default, without `cap`): each
  user releases their set by randomised response on every item of the item list
  ([`dprec.implicit.set_reports`][], as
  [`ImplicitKNN`][dprec.implicit.knn.ImplicitKNN]'s `set_epsilon`), and the counts are
  the reports' debiased sums ([`dprec.implicit.set_reports.item_counts`][]), ε-LDP per item of a
  set (`Unit.SET_ITEM`) over a fixed item list, δ = 0.  The same counts come free with
  `ImplicitKNN`'s released sets (its prior; the same seed gives the same list and
  reports).

Every user's scores are the released counts; a user's own list leaves out their own
items (shown to them alone).

**Without `items=`** (the defaults) the released items are chosen privately, and nobody
is outside the guarantee:

* `"laplace"` and `"gaussian"`: the noisy capped counts themselves are thresholded, as
  [`DPBaseline`][dprec.DPBaseline] thresholds its noisy weights (no extra ε): an item is
  released only when a capped set holds it and its noisy count reaches $T$ (an item
  whose holders' caps all dropped it, or rated only below `threshold`, is no item of
  the release: one user could bring any number of those), the smallest threshold of
  [`threshold_steps`][dprec.mechanisms.partition_selection.threshold_steps] (the
  noise's tail, $k$ = `cap` items one user can bring, each counted at most once) whose
  added δ is at most `delta` (`"gaussian"`: `delta` / 2).  By the argument of
  [`dprec.mechanisms.partition_selection`][dprec.mechanisms.partition_selection] the
  release is $(\varepsilon, \delta_M + \delta_T)$-DP per user, $\delta_M$ the counts'
  own (0 for `"laplace"`) and $\delta_T = k\, P(Z \ge T - 1)$, both in the entry: the
  sole listener of an item shows only through $\delta_T$.  `counts_` holds the released
  items only.  The releases are sums over the users, and each user's list is shown to
  them alone: the user list is no release (joint differential privacy), and the report
  says so.  `"laplace"`'s threshold grows as $t \ln(\text{cap}/\delta)$, the
  Gaussian's as $\sigma \sqrt{2 \ln(\text{cap}/\delta)}$: at ε = 1 and `cap` = 40
  `"laplace"`'s is 582 capped listeners, which no artist of HetRec Last.fm reaches (the
  most listened has 611 listeners, about 490 in an 80 % training split): the list is
  then empty, and a larger ε (292 at ε = 2), `"gaussian"` (157 at `cap` = 50 and
  ε = 1: 62–69 artists listed, five seeds) or `items=` is needed;
* `"reports"`: every user reports about every listed item, so the list is chosen
  first, by partition selection on the holders' counts with `selection_share` of ε and
  the δ target `delta` ([`dprec.implicit.base`][], the argument: the one central step,
  stated as a condition), and the reports spend the rest over the listed items: ε per
  item of a set and the selection's δ in all, never more.  Who reports is public in the
  local model (every device reports; a user without items that of an empty set): the
  user list (the trainset's, or `users=`, which adds users without items) is a
  condition, not a release.

With `items=` (a public catalogue) every item of it is released, δ = 0, and `delta` and
`selection_share` are unused (but by `"gaussian"`: δ = `delta`, the counts').
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import replace
from typing import NamedTuple

import numpy as np
import pandas as pd
from surprise import AlgoBase

from ..accountant.ledger import LedgerEntry, Status, Unit
from ..endtoend.rating_space import RatingSpace
from ..mechanisms import (
    discrete_gaussian,
    discrete_laplace,
    discrete_laplace_epsilon,
    zcdp_rho,
)
from ..mechanisms.discrete_gaussian import stated_epsilon
from ..mechanisms.exact_laplace import MAX_T, MIN_T
from ..mechanisms.partition_selection import selection_delta, threshold_steps
from ..utils._arrays import segment_ids
from ..utils._rng import RandomStateLike, derive_generator, derive_seed, fit_entropy, is_seeded
from ..utils._validation import check_choice, check_epsilon, check_int, check_real
from . import scores, set_reports
from .base import (
    SELECTION_DELTA,
    SELECTION_SHARE,
    ImplicitModel,
    LocalPlan,
    check_selection,
    declare_local_scope,
    local_plan,
    select_local,
)

__all__ = ["MECHANISMS", "CentralNoise", "PrivatePopularity", "Threshold", "capped_counts"]

#: the releases of the counts (`mechanism`)
MECHANISMS = ("gaussian", "laplace", "reports")
_OUTPUT = "scores and recommendations (estimate, test, predict, recommend)"
_OWN_SET = ("a user's own list leaves out the items of their own set: shown to them alone "
            "(their device), not charged")
_CURATOR = ("central model: a trusted curator reads the raw sets and releases only the "
            "noisy counts")


class Threshold(NamedTuple):
    """The partition selection of the central releases: an item is released when its
    noisy capped count is at least `steps`; `rule` says so in the report."""

    steps: int
    rule: str


class CentralNoise(NamedTuple):
    """The noise of a central release: `"laplace"` (discrete Laplace of scale `scale`)
    or `"gaussian"` (discrete Gaussian of standard deviation `scale`)."""

    kind: str
    scale: float


class PrivatePopularity(ImplicitModel):
    r"""Items ranked by their number of holders, released with differential privacy.

    See the module docstring for the two releases and their guarantees.  Parameters
    are stored as given and validated by `fit` (scikit-learn's convention).

    Parameters
    ----------
    epsilon : float, default 1.0
        The ε of the release: per user (`"laplace"`, `"gaussian"`) or per item of a set
        (`"reports"`).
    mechanism : {"laplace", "gaussian", "reports"}, optional
        Central counts with discrete Laplace noise (ε per user, δ = 0 with `items=`) or
        discrete Gaussian noise (ε and `delta` per user: noise growing as √`cap`, not
        `cap`), or the users' randomised responses.
        Default `"laplace"` when `cap` is given, else `"reports"`: the default model,
        `PrivatePopularity()`, is then the local release, whose unit (one item of a
        user's set) needs no bound on the sets, a public choice made before any data.
        It guarantees every user, nobody outside: each user's report is ε-LDP per item
        of their set over the item list, and the list's selection (`selection_share` of
        ε, the δ target `delta`) composes with it to ε per item of a set (see the
        module docstring).  The per-user release needs a `cap` fitting the data (its
        threshold grows with it: on HetRec Last.fm at ε = 1 a cap of 1 lists 4
        artists and a cap of 5 one, seed 0, where the reports list 116–122 over five
        seeds and `"gaussian"` with a cap of 50 lists 62–69).
    cap : int, optional
        With `"laplace"` and `"gaussian"` (required there): the public bound on a set's
        items counted (a larger set counts a uniformly random `cap` of its items), `>= 1`.
    threshold : float, optional
        Only the ratings `>= threshold` are interactions (default: every stored pair).
    delta : float, default 1e-5
        Without `items=`: the δ target of the items' selection, in (0, 1) (the entry
        states the δ its threshold adds, at most this).  Unused with `items=` (δ = 0),
        but by `"gaussian"`, whose whole δ it is (half for the counts and half for the
        threshold without `items=`).
    selection_share : float, default 0.1
        With `"reports"` and without `items=`: the share of ε, in (0, 1), that chooses
        the item list before the reports (`"laplace"` thresholds its own counts).
    users, items : sequence of raw ids, optional
        Public catalogues (validated at `fit`; every interaction must be within them).
        Default: the trainset's users, and the items chosen privately (see the module
        docstring).
    random_state : None, int, RandomState or Generator
        The noise (and the cap's choice).  `None` (default): fresh entropy at each fit;
        an int gives seeded noise, for experiments (the report's entry is void).
    budget : (float, float), optional
        A per-user `(ε, δ)` budget: a fit that spends more is refused before any noise
        is drawn (`BudgetExceededError`, a `ValueError`).

    Attributes
    ----------
    counts_ : pandas.Series
        The released counts, by raw item id (`item_list_`), named `"count"`: integers
        (central), debiased sums (`"reports"`); without `items=` the selected
        items only.
    item_list_ : tuple
        The raw ids of the items scored, sorted.

    Examples
    --------
    >>> from dprec import datasets
    >>> trainset = datasets.synthetic(100, 80, 1500, random_state=0).build_full_trainset()
    >>> algo = PrivatePopularity(epsilon=1.0, cap=20).fit(trainset)
    >>> len(algo.recommend(trainset.to_raw_uid(0), n=5))
    5
    """

    def __init__(self, epsilon: float = 1.0, *, mechanism: str | None = None,
                 cap: int | None = None, threshold: float | None = None,
                 delta: float = SELECTION_DELTA, selection_share: float = SELECTION_SHARE,
                 users: Iterable | None = None, items: Iterable | None = None,
                 random_state: RandomStateLike = None,
                 budget: tuple[float, float] | None = None) -> None:
        AlgoBase.__init__(self)
        self.epsilon, self.mechanism, self.cap = epsilon, mechanism, cap
        self.threshold, self.users, self.items = threshold, users, items
        self.delta, self.selection_share = delta, selection_share
        self.random_state, self.budget = random_state, budget

    def _entry(self) -> tuple[LedgerEntry, str, int | None, CentralNoise | None,
                              LocalPlan | Threshold | None]:
        """The release's ledger entry, the mechanism, the cap, the central noise and,
        without `items=`, the selection (`"reports"`: the plan, its entry first; the
        central releases: the threshold on the noisy counts, its δ in the entry),
        validated: public functions of the parameters."""
        epsilon = check_epsilon(self.epsilon)
        mechanism = (("reports" if self.cap is None else "laplace") if self.mechanism is None
                     else check_choice(self.mechanism, "mechanism", MECHANISMS))
        selecting = self.items is None
        share, delta = check_selection(self.selection_share, self.delta, selecting)
        if mechanism == "reports":
            if self.cap is not None:
                raise ValueError("cap is read with mechanism='laplace' only (each report "
                                 "covers the whole item list): drop cap")
            plan = local_plan(epsilon, share, delta, Unit.SET_ITEM, selecting, name="epsilon")
            entry = set_reports.set_report_entry(plan.report_epsilon, name="epsilon")
            return entry, mechanism, None, None, plan
        if self.cap is None:
            raise ValueError(f"cap must be given with mechanism={mechanism!r}: the public "
                             "bound on the items of a set counted (the counts' sensitivity "
                             "per user), e.g. the most items a user can have")
        cap = check_int(self.cap, "cap", minimum=1)
        if mechanism == "gaussian":
            if delta == 0.0:
                raise ValueError("delta must be > 0 with mechanism='gaussian' (the Gaussian "
                                 "has no pure-DP guarantee), or choose mechanism='laplace'")
            entry, noise = _gaussian_entry(epsilon, cap, delta / 2 if selecting else delta)
        else:
            entry, noise = _laplace_entry(epsilon, cap)
        if not selecting:
            return entry, mechanism, cap, noise, None
        target = delta / 2 if mechanism == "gaussian" else delta
        steps = threshold_steps(noise.kind, noise.scale, target, max_partitions=cap, signal=1)
        added = selection_delta(noise.kind, noise.scale, steps, max_partitions=cap, signal=1)
        rule = (f"an item is released when its noisy capped count is at least {steps} "
                f"({steps / noise.scale:.3g} noise scales), a threshold that adds δ = "
                f"{added:.2g} (a bound on the chance that one of the k = cap = {cap} items "
                "one user can bring alone passes it, each counted once)")
        entry = replace(entry, component="popularity (items by partition selection)",
                        delta=entry.delta + added, note=f"{entry.note}; {rule}")
        return entry, mechanism, cap, noise, Threshold(steps, rule)

    def fit(self, trainset) -> PrivatePopularity:
        """Release the counts of the listed items (spending `epsilon` once per listed
        user; without `items=`, the items chosen privately) and open the privacy report;
        refused past the `budget`, before any noise."""
        entry, mechanism, cap, noise, selection = self._entry()
        threshold = None if self.threshold is None else check_real(self.threshold,
                                                                   "threshold")
        self._checked_budget()
        space = RatingSpace.build(trainset, self.users, self.items)
        entries = [entry]
        if isinstance(selection, LocalPlan) and selection.selection is not None:
            entries.insert(0, selection.selection)
        self._refuse_past_budget([(e.epsilon, e.delta) for e in entries], entry.unit)
        X = scores.interactions(space.matrix, threshold)
        entropy = fit_entropy(self.random_state)
        if mechanism == "reports":
            space, X = select_local(space, X, selection,
                                    derive_generator(entropy, "item selection"))
            reports = set_reports.report_sets(X, entry.epsilon, 1,
                                              derive_seed(entropy, "set reports"))
            counts = set_reports.item_counts(reports, entry.epsilon)
        else:
            rng = derive_generator(entropy, "popularity")
            draw = discrete_gaussian if noise.kind == "gaussian" else discrete_laplace
            capped = capped_counts(X, cap, rng)
            counts = draw(capped, noise.scale, rng)
            if selection is not None:   # partition selection among the items of a capped set
                listed = (capped > 0) & (counts >= selection.steps)
                space, counts = space.selected(listed, selection.rule), counts[listed]
        AlgoBase.fit(self, trainset)
        self._set_space(trainset, space)
        self._counts = counts
        self.counts_ = pd.Series(counts, index=space.items.labels(), name="count")
        accountant = self._open_accountant(
            space.users.ids, f"PrivatePopularity(mechanism={mechanism!r})",
            is_seeded(self.random_state))
        accountant.release_once([accountant.register(e) for e in entries], [_OUTPUT],
                                _OWN_SET)
        if mechanism != "reports":
            accountant.notes.append(_CURATOR)
            space.declare_scope(accountant, entry.unit, user_list=False)
        else:
            declare_local_scope(space, accountant)
        self._accountant = accountant
        return self

    def _score_block(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Every listed user's scores are the released counts."""
        out = np.broadcast_to(self._counts, (len(rows), len(self._counts))).copy()
        return out, np.ones(out.shape, dtype=bool)


def _laplace_entry(epsilon: float, cap: int) -> tuple[LedgerEntry, CentralNoise]:
    """The counts' entry with discrete Laplace noise of scale `cap / epsilon` (ℓ1
    sensitivity `cap` per user): ε-DP, δ = 0."""
    t = cap / epsilon
    if not MIN_T <= t <= MAX_T:
        raise ValueError(f"epsilon = {epsilon:g} with cap = {cap} gives the noise scale "
                         f"cap / epsilon = {t:g}, outside [{MIN_T:g}, 2**42]: choose an "
                         "epsilon within [cap / 2**42, cap * 1e18]")
    entry = LedgerEntry(
        "popularity", "discrete Laplace on capped counts",
        discrete_laplace_epsilon(t, cap), 0.0, Unit.USER, Status.HOLDS, "user",
        f"each set capped at cap = {cap} items (ℓ1 sensitivity {cap} per user), "
        f"discrete Laplace of scale cap/ε = {t:.4g} on every item's count")
    return entry, CentralNoise("laplace", t)


def _gaussian_entry(epsilon: float, cap: int, delta: float) -> tuple[LedgerEntry,
                                                                       CentralNoise]:
    r"""The counts' entry with discrete Gaussian noise: ℓ2 sensitivity $\sqrt{cap}$ per
    user, so $\rho = cap / 2\sigma^2$-zCDP (Canonne, Kamath & Steinke 2020), with the
    largest ρ whose $(\varepsilon, \delta)$ by `dp-accounting` is within
    (`epsilon`, `delta`); the entry states `stated_epsilon` (`epsilon` where the
    accountant proves 0)."""
    rho = zcdp_rho(epsilon, delta)
    sigma = math.sqrt(cap / (2.0 * rho))
    entry = LedgerEntry(
        "popularity", "discrete Gaussian on capped counts (zCDP)",
        stated_epsilon(rho, delta, epsilon), delta, Unit.USER, Status.HOLDS, "user",
        f"each set capped at cap = {cap} items (ℓ2 sensitivity √{cap} per user), "
        f"discrete Gaussian of σ = {sigma:.4g} on every item's count: ρ = {rho:.4g}-zCDP, "
        f"(ε, δ) at δ = {delta:.2g}")
    return entry, CentralNoise("gaussian", sigma)


def capped_counts(X, cap: int, rng: np.random.Generator) -> np.ndarray:
    """Every column's number of rows of the 0/1 matrix `X` (users × items, CSR), each
    row counting a uniformly random `cap` of its items when it holds more (`X` is not
    modified)."""
    rows = segment_ids(np.diff(X.indptr))
    order = np.lexsort((rng.random(X.nnz), rows))
    rank = np.arange(X.nnz) - X.indptr[rows]             # rows are sorted in CSR order
    kept = order[rank < cap]
    return np.bincount(X.indices[kept], minlength=X.shape[1]).astype(np.float64)
