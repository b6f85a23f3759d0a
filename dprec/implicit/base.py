r"""The Surprise side of dprec's implicit-feedback models: scores over an item list, for top-N.

[`ImplicitKNN`][dprec.implicit.knn.ImplicitKNN] and
[`PrivatePopularity`][dprec.implicit.popularity.PrivatePopularity] score every item of
their **item list** for a user, whole rows at a time (`score_rows`, which
[`dprec.evaluation.topn.recommend_batch`][] ranks).  The lists are a
[`RatingSpace`][dprec.endtoend.rating_space.RatingSpace]'s: the public catalogues `users=` and
`items=` when given, else the trainset's users and, for a private release, the items
chosen by differentially private partition selection (the non-private configurations
read the trainset's items); each sorted by raw id, an order of the ids alone
(Surprise's inner ids follow the data's order, which one removal changes, and ties
would follow it).  `item_list_` holds the raw ids of the columns.

A listed item nobody holds is still scored: with a catalogue, the items of the
recommendations do not depend on which items the data holds.  An item the selection did
not list is not scored (Surprise's `was_impossible`, as an unknown item).  Listed users
without interactions take part in the releases (their sets are empty) but are not
Surprise users: `score_rows`, `recommend` and `predict` are for the trainset's users.

**The local releases' lists** (each user randomises a report over *every* listed item:
`ImplicitKNN(set_epsilon=...)`, `PrivatePopularity(mechanism="reports")`).  The list must
be fixed before anyone reports.  Without `items=` it is chosen first by
[`select_items`][dprec.endtoend.item_selection.select_items] ([`local_plan`][], [`select_local`][]):
a curator counts the holders of each item (one item of a set moves one count by 1),
adds lattice Laplace noise of scale $1/\varepsilon_s$, $\varepsilon_s$ =
`selection_share` · ε, and lists the items whose noisy count reaches the threshold set by
`delta`: $(\varepsilon_s, \delta_s)$-DP per item of a set, $\delta_s \le$ `delta`, so the
sole holder of an item shows only through $\delta_s$.  The reports then spend the rest,
$\varepsilon - \varepsilon_s$, over the listed items, and the two compose (basically,
adaptively: the list is public before anyone reports) to ε per item of a set and
$\delta_s$, never more.  This is the one central step, stated as a condition.  *Who
reports* is public in the local model (every device sends a report; a user without
items reports an empty set): the user list is a condition, not a release, and nobody is
outside the guarantee for it (`REPORTERS`, [`declare_local_scope`][]).

A score is **not a rating**: `estimate`, `predict` and `test` return it unclipped (the
trainset's rating scale does not apply), 0 where impossible (Surprise's
`was_impossible`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp
from surprise import AlgoBase, PredictionImpossible
from surprise.prediction_algorithms.predictions import Prediction

from ..accountant.ledger import LedgerEntry, PrivacyAccountant, Unit
from ..accountant.private_model import PrivateModel
from ..endtoend.item_selection import item_list_entry, select_items
from ..endtoend.rating_space import SCOPE, RatingSpace
from ..evaluation.topn import recommend_batch
from ..knn.parameters import check_ids
from ..utils._surprise import UNKNOWN, cyclic_gc_paused, inner_ids, raw_ids
from ..utils._validation import check_delta, check_open_unit
from .set_reports import set_report_entry

__all__ = ["REPORTERS", "SELECTION_DELTA", "SELECTION_SHARE", "TOO_FEW", "ImplicitModel",
           "LocalPlan", "check_selection", "declare_local_scope", "local_plan", "select_local"]

#: Surprise's reason for an item scored by fewer than `min_nbrs` similarities
TOO_FEW = "Not enough neighbors."
#: (user, item) scores computed at once
_BLOCK_CELLS = 1 << 20
#: the local releases' defaults: the share of ε and the δ target of the item list's selection
SELECTION_SHARE = 0.1
SELECTION_DELTA = 1e-5
#: the condition of the local releases on who reports (no `users=`), in the style of
#: `dprec.endtoend.rating_space.SCOPE`
REPORTERS = ("who reports is public (local model): every user of the trainset (or of "
             "users=) sends a report from their device, a user without items the report of "
             "an empty set; the guarantee is for neighbouring datasets that differ in items "
             "of a reporting user's set, so the user list is a condition, not a release, and "
             "nobody is outside the guarantee for it; give users= to add users without items")


# ------------------------------------------------------------ the local releases' lists
@dataclass(frozen=True)
class LocalPlan:
    """What a local release spends, fixed before any noise (public functions of the
    parameters): the item list's selection and the ε left to the reports.

    Attributes
    ----------
    selection : LedgerEntry or None
        The selection's entry, per `set_difference` items of a set (None with `items=`).
    report_epsilon : float
        The reports' ε: the asked ε less the selection's, so that the two add up to at
        most the asked ε in floating point (the accountant's order).
    count_epsilon, count_delta : float
        The selection's ε and δ target per count (one item of a set), what
        [`select_items`][dprec.endtoend.item_selection.select_items] is given.
    """

    selection: LedgerEntry | None
    report_epsilon: float
    count_epsilon: float = 0.0
    count_delta: float = 0.0


def check_selection(share, delta, selecting: bool) -> tuple[float, float]:
    """`selection_share` in (0, 1) and `delta` in [0, 1), and > 0 when `selecting`.

    Raises
    ------
    ValueError, TypeError
        Naming `selection_share` or `delta`.
    """
    share = check_open_unit(share, "selection_share")
    delta = check_delta(delta, "delta")
    if selecting and delta == 0.0:
        raise ValueError("delta must be > 0 without items=: the item list's partition "
                         "selection spends it (give items= for delta = 0)")
    return share, delta


def local_plan(epsilon: float, share: float, delta: float, unit: Unit, selecting: bool,
               set_difference: int = 1, name: str = "set_epsilon") -> LocalPlan:
    r"""The plan of a local release of ε (the caller's parameter `name`) per
    `set_difference` = $\alpha$ items of a set: without `selecting` (a catalogue), all of
    ε for the reports; else the selection at $\varepsilon_s$ = `share` · ε and δ target
    `delta` and the rest for the reports.  With $\alpha > 1$ the $\alpha$ items move
    $\alpha$ counts by 1 each: each count gets $\varepsilon_s / \alpha$ and the δ target
    `delta` / $\alpha$ (the threshold of $k = \alpha$ partitions), and the entry states
    $\alpha$ times both.

    Raises
    ------
    ValueError
        For an ε outside the reports' range
        ([`set_report_entry`][dprec.implicit.set_reports.set_report_entry]) or too small for the
        selection, naming `name`.
    """
    set_report_entry(epsilon, set_difference, name)          # the reports' range first
    if not selecting:
        return LocalPlan(None, epsilon)
    alpha = set_difference
    count_epsilon, count_delta = share * epsilon / alpha, delta / alpha
    try:
        entry, _ = item_list_entry(count_epsilon, count_delta, unit)
    except ValueError as error:
        raise ValueError(f"{name} = {epsilon:g} with selection_share = {share:g}: the item "
                         f"list's selection at selection_share * {name}: {error}") from None
    if alpha > 1:
        entry = replace(entry, epsilon=alpha * entry.epsilon, delta=alpha * entry.delta,
                        note=entry.note + f"; set_difference = {alpha}: {alpha} items of a "
                        f"set move {alpha} counts by 1 each, so ε and δ are {alpha} times "
                        "one count's")
    rest = epsilon - entry.epsilon
    while entry.epsilon + rest > epsilon:          # within ε in floats, as the ledger adds
        rest = math.nextafter(rest, 0.0)
    return LocalPlan(entry, rest, count_epsilon, count_delta)


def select_local(space: RatingSpace, X: sp.csr_matrix, plan: LocalPlan,
                 rng: np.random.Generator) -> tuple[RatingSpace, sp.csr_matrix]:
    """`space` and its interactions `X` (users × items, 0/1) restricted to the items the
    plan's selection lists, by [`select_items`][dprec.endtoend.item_selection.select_items] on
    the counts of holders (the interactions, not the ratings); as they are without a
    selection."""
    if plan.selection is None:
        return space, X
    chosen, _ = select_items(RatingSpace(space.users, space.items, X), plan.count_epsilon,
                             plan.count_delta, plan.selection.unit, rng)
    items = replace(chosen.items, selection=plan.selection.note)
    columns = space.items.positions(list(items.ids))
    listed = chosen.matrix.tocsr()
    listed.sort_indices()
    return RatingSpace(space.users, items, space.matrix[:, columns].tocsr()), listed


def declare_local_scope(space: RatingSpace, accountant: PrivacyAccountant) -> None:
    """State the local release's lists in the report: the item catalogue given or the
    selection's rule (`dprec.endtoend.rating_space.SCOPE`), the user catalogue given or
    `REPORTERS`; nobody is outside for them."""
    if space.items.given:
        accountant.add_condition(SCOPE["items given"])
    else:
        accountant.add_condition(SCOPE["items selected"] + str(space.items.selection))
    accountant.add_condition(SCOPE["users given"] if space.users.given else REPORTERS)


class ImplicitModel(PrivateModel, AlgoBase):
    """Base of the implicit-feedback models: the lists, and Surprise's API over scores.

    A model builds its [`RatingSpace`][dprec.endtoend.rating_space.RatingSpace] at `fit`
    (`RatingSpace.build(trainset, self.users, self.items)`), passes it to `_set_space`
    once the fit can no longer fail (after `AlgoBase.fit`), and defines
    `_score_block(rows)`: the scores of listed users (positions in the user list) for
    every listed item, and where they are possible.

    Attributes
    ----------
    item_list_ : tuple
        The raw ids of the items scored, in the order of `score_rows`' columns.
    """

    _space: RatingSpace
    item_list_: tuple

    def _set_space(self, trainset, space: RatingSpace) -> None:
        """Keep the lists of `space` (built from `trainset`) and where each inner id of
        the trainset is listed."""
        self._space = space
        self._user_rows = space.users.positions(raw_ids(trainset))
        self._item_columns = space.items.positions(raw_ids(trainset, users=False))
        self.item_list_ = space.items.ids

    def _score_block(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Scores and where they are possible (bool), `(len(rows), n_listed_items)`."""
        raise NotImplementedError

    # ------------------------------------------------------------ scores
    def score_rows(self, users) -> tuple[np.ndarray, np.ndarray]:
        """Every listed item's score for each of `users` (inner ids of the trainset), and
        where it is possible: both `(len(users), len(item_list_))`, the scores 0 where
        impossible, columns in the order of `item_list_`.  What
        `dprec.evaluation.topn.recommend_batch` ranks."""
        self._check_fitted()
        users = check_ids(users, "users", self.trainset.n_users)
        block_scores, possible = self._score_block(self._user_rows[users])
        block_scores[~possible] = 0.0
        return block_scores, possible

    def _at(self, users: np.ndarray, columns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Scores and possibility of (inner user, listed item) pairs, a block of users'
        rows at a time."""
        est, possible = np.zeros(len(users)), np.zeros(len(users), dtype=bool)
        unique, inverse = np.unique(users, return_inverse=True)
        n_items = len(self.item_list_)
        size = max(1, _BLOCK_CELLS // max(n_items, 1))
        order = np.argsort(inverse, kind="stable")
        bounds = np.searchsorted(inverse[order], np.arange(0, len(unique) + size, size))
        for n, start in enumerate(range(0, len(unique), size)):
            block_scores, block_possible = self.score_rows(unique[start:start + size])
            where = order[bounds[n]:bounds[n + 1]]
            cells = (inverse[where] - start) * n_items + columns[where]
            est[where] = block_scores.ravel()[cells]
            possible[where] = block_possible.ravel()[cells]
        return est, possible

    def estimate_arrays(self, users, items) -> tuple[np.ndarray, np.ndarray]:
        """Scores for arrays of inner ids (the same numbers as `test` and `score_rows`).

        Returns
        -------
        est : ndarray of float64
            The scores, 0 where impossible.
        possible : ndarray of bool
            False where the model has no score (e.g. fewer than `min_nbrs` similarities).
        """
        self._check_fitted()
        users = check_ids(users, "users", self.trainset.n_users)
        items = check_ids(items, "items", self.trainset.n_items)
        if len(items) != len(users):
            raise ValueError(f"items must have one id per user ({len(users)}), got {len(items)}")
        columns = self._item_columns[items]
        listed = columns >= 0                  # an item the selection did not list: no score
        est, possible = np.zeros(len(users)), np.zeros(len(users), dtype=bool)
        est[listed], possible[listed] = self._at(users[listed], columns[listed])
        return est, possible

    # ------------------------------------------------------------ Surprise's API
    def estimate(self, u, i):
        """The score of inner item `i` for inner user `u`: `(score, details)`, or
        `PredictionImpossible` (unknown ids, no score)."""
        self._check_fitted()
        if not (self.trainset.knows_user(u) and self.trainset.knows_item(i)
                and self._item_columns[i] >= 0):
            raise PredictionImpossible(UNKNOWN)
        est, possible = self.estimate_arrays(np.array([u]), np.array([i]))
        if not possible[0]:
            raise PredictionImpossible(TOO_FEW)
        return float(est[0]), {"was_impossible": False}

    def default_prediction(self) -> float:
        """0: the score of an item nothing speaks for (not the global mean rating)."""
        self._check_fitted()
        return 0.0

    def predict(self, uid, iid, r_ui=None, clip=True, verbose=False) -> Prediction:
        """Surprise's `predict` by raw ids; `clip` has no effect (a score is not a rating,
        the rating scale does not bound it)."""
        self._check_fitted()
        return self.test([(uid, iid, r_ui)], verbose)[0]

    def test(self, testset, verbose: bool = False) -> list[Prediction]:
        """Scores of a whole testset at once (`est` unclipped, 0 where impossible); an
        item of the item list is known even if nobody holds it."""
        self._check_fitted()
        uids, iids, r_uis, users, _ = inner_ids(self.trainset, testset)
        columns = self._space.items.positions(iids)
        known = (users >= 0) & (columns >= 0)
        est, possible = np.zeros(len(uids)), np.zeros(len(uids), dtype=bool)
        est[known], possible[known] = self._at(users[known], columns[known])
        details = [{"was_impossible": False} if ok else
                   {"was_impossible": True, "reason": TOO_FEW if seen else UNKNOWN}
                   for ok, seen in zip(possible.tolist(), known.tolist())]
        with cyclic_gc_paused():
            out = list(map(Prediction, uids, iids, r_uis, est.tolist(), details))
        if verbose:
            for prediction in out:
                print(prediction)
        return out

    def recommend(self, uid, n: int = 10, exclude_rated: bool = True,
                  **options) -> list[tuple]:
        """The top-`n` listed items for raw user id `uid` by score: `[(raw iid, score),
        ...]`, best first, without the user's trainset items
        (`dprec.evaluation.topn.recommend_batch`; it names any `options`, which this model
        does not take, in a `TypeError`)."""
        self._check_fitted()
        top = recommend_batch(self, [uid], n, exclude_rated, **options)
        return list(zip(top["iid"].tolist(), top["est"].tolist()))

    def recommend_batch(self, uids, n: int = 10, exclude_rated: bool = True, **options):
        """Top-`n` lists of many users, a DataFrame (`uid`, `rank`, `iid`, `est`):
        `dprec.evaluation.topn.recommend_batch`."""
        self._check_fitted()
        return recommend_batch(self, uids, n, exclude_rated, **options)
