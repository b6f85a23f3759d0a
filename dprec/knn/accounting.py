"""What a fitted `PrivateKNN` may release and what its answers cost: the privacy
accountant's entries and declared outputs, and the charge of every new query.

`open_book` registers, at `fit`, the sketches' one release (charged then) and
the selector's entries, and declares each output the model can show (covered
by entries, or not, with the reason).  The `Book` then charges the selector's
entries for each query not answered before, and keeps the running totals of
the selections (`selection_summary`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import numpy as np

from ..accountant.ledger import LedgerEntry, PrivacyAccountant, Status, Unit
from ..selectors import Selector
from ..similarity import SKETCH_BACKENDS, SketchRelease, change_bound
from ..utils._ratings import RatingArrays
from ..utils._rng import RandomStateLike, is_seeded
from ..utils._surprise import raw_ids
from .answers import Chosen, SelectionLog

# what the privacy report says of the outputs no mechanism covers
_ITEM_CANDIDATES = ("in the item neighbourhood the candidates are the raters of the item asked: "
                    "one rating decides whether a user can be chosen at all")
_EXACT_NEIGHBOURS = "chosen from similarities computed on the raw data, without noise"
_INNER_IDS = ("the neighbour sets are post-processing of the sketches, but kneighbors() "
              "returns inner ids, which follow the order of the data")
#: the output of the neighbours' inner ids, where the selector covers the lists as raw ids
_INNER_LISTS = "neighbours' inner ids (kneighbors, get_neighbors)"
_INNER_ORDER = ("inner ids follow the order of the data (one removal renumbers them): the "
                "selector's entries cover the lists as raw ids (trainset.to_raw_uid of each)")
_NOT_PAIRWISE = ("pearson_baseline's baselines are fitted on every rating: one rating moves "
                 "every similarity, not one score per query")
_RAW_RATINGS = ("they average the chosen neighbours' raw ratings (and use means or baselines "
                "of raw ratings)")
_ITEM_BASED = ("item-based: the neighbours are items, whose similarities aggregate all their "
               "raters' ratings; the selectors' guarantees are stated for user-based selection")
_DIAGNOSTICS = "computed from the exact similarities and ranks"
_EXACT_WEIGHTS = ("the chosen neighbours' similarities, computed on the raw data without "
                  "noise: the selector's entries cover which neighbours are chosen, not these")
#: the output of the neighbours' weights (what `kneighbors` returns beside the ids)
_WEIGHTS = "neighbour weights (kneighbors, estimate_rules with_neighbours)"
_OWN_QUERIES = ("per-user figures count what other users see: a user's own answers are shown "
                "to them only and are not charged to them")
#: why users are outside a unit's guarantee: one change of that unit can remove them from
#: the trainset, hence from the candidates (`declare_candidates`)
CANDIDATE_SCOPE = {
    Unit.RATING: ("a single rating: removing it removes the user from the trainset, hence "
                  "from the candidates of every neighbour list (the users are read from the "
                  "data): whether they can be chosen at all is revealed"),
    Unit.USER: ("removing a user removes them from the candidates of every neighbour list "
                "(the users are read from the data)"),
}


class Book:
    """The answers' account of one fit: the selector's entries charged per new query, and
    the selections made.

    Parameters
    ----------
    accountant : PrivacyAccountant
        The fitted model's accountant (its `privacy_report`).
    entries : list of (int, str)
        The selector's entries in the accountant, each with what it applies to
        (`"candidates"` or `"chosen"`).
    ratings : RatingArrays
        The fitted ratings (who the candidates of a query are).
    """

    def __init__(self, accountant: PrivacyAccountant, entries: list[tuple[int, str]],
                 ratings: RatingArrays) -> None:
        self.accountant, self.entries, self.ratings = accountant, entries, ratings
        self.answered: set[int] = set()
        self.selections = SelectionLog()

    @property
    def lock(self):
        """The accountant's lock: one caller charges (or fills the kept sets) at a time."""
        return self.accountant.lock

    def log(self, parts: list[Chosen]) -> None:
        """Add the selections of `parts` to the running totals."""
        for chosen in parts:
            self.selections.add(chosen)

    def charge(self, keys: np.ndarray, users: np.ndarray, items: np.ndarray | None,
               neighbours: np.ndarray) -> None:
        """Charge the selector's entries for the queries not answered before.

        A query is keyed by `(u, i)` in the item neighbourhood and by `u` in
        the user neighbourhood; its noise is a function of the key, so asking
        it again releases nothing new and is not charged again.  Per new
        query, every candidate other than the querying user is charged the
        `"candidates"` entries (the raters of `i`, or all other users), and
        every chosen neighbour other than the querying user the `"chosen"`
        ones.  The querying user is not charged: their own answers are shown to
        them only.  All or nothing (the budget is checked first).
        """
        if not self.entries or not len(keys):
            return
        with self.lock:
            self._charge_new(keys, users, items, neighbours)

    def _charge_new(self, keys, users, items, neighbours) -> None:
        _, first = np.unique(keys, return_index=True)
        first = first[[key not in self.answered for key in keys[first].tolist()]]
        if not len(first):
            return
        n_users = self.ratings.n_users
        asking = users[first]
        own = np.bincount(asking, minlength=n_users)
        if items is None:
            candidates = len(first) - own
        else:
            ratings = self.ratings
            per_item = np.bincount(items[first], minlength=ratings.n_items)
            candidates = np.bincount(ratings.item_users,
                                     weights=np.repeat(per_item, np.diff(ratings.item_ptr)),
                                     minlength=n_users).astype(np.int64)
            _, rated = ratings.lookup(asking, items[first])
            candidates -= np.bincount(asking[rated], minlength=n_users)
        picked = neighbours[first]
        others = (picked >= 0) & (picked != asking[:, None])
        chosen = np.bincount(picked[others], minlength=n_users)
        self.accountant.charge({index: candidates if applies_to == "candidates" else chosen
                                for index, applies_to in self.entries})
        self.answered.update(keys[first].tolist())


def open_book(trainset, ratings: RatingArrays, *, selector: Selector, k: int,
              sensitivity: np.ndarray | None, sim_options: Mapping, neighbourhood: str,
              budget: tuple[float, float] | None, random_state: RandomStateLike,
              release: SketchRelease | None) -> Book:
    """Register what the model may release and charge the sketches' one release: the
    `Book` of a model fitted on `trainset` with these resolved parameters."""
    name = sim_options["name"]
    epsilon = getattr(selector, "epsilon", None)      # the selectors that take one
    given = "" if epsilon is None else f", epsilon={epsilon:g}"
    model = (f"PrivateKNN(selector={selector.name!r}{given}, similarity {name!r}, "
             f"{neighbourhood} neighbourhood, k={k})")
    accountant = PrivacyAccountant(raw_ids(trainset), budget=budget, model=model,
                                   seeded=is_seeded(random_state))
    similarity = None
    if release is not None and release.entry.epsilon < np.inf:
        similarity = release.charge(accountant)
    entries = (selector_privacy(selector, k, sensitivity, name, trainset.rating_scale,
                                neighbourhood) if sim_options["user_based"] else [])
    registered = [(accountant.register(entry), entry.applies_to) for entry in entries]
    if sim_options["user_based"]:
        declare_candidates(accountant, ratings)
    chosen = [index for index, _ in registered]
    weighed = [chosen[n] for n in selector.weight_entries(entries)]
    if not sim_options["user_based"]:
        for output in ("neighbour lists", _WEIGHTS):
            accountant.declare_output(output, gap=_ITEM_BASED)
    elif neighbourhood == "item":
        accountant.declare_output("neighbour lists", chosen, _ITEM_CANDIDATES)
        accountant.declare_output(_WEIGHTS, weighed, _ITEM_CANDIDATES)
    elif similarity is not None:   # post-processing of the sketches, weights included
        accountant.declare_output("neighbour lists", [similarity], _INNER_IDS)
        accountant.declare_output(_WEIGHTS, [similarity])
    else:
        accountant.declare_output("neighbour lists, as raw ids", chosen,
                                  None if chosen else _EXACT_NEIGHBOURS)
        accountant.declare_output(_INNER_LISTS, gap=_INNER_ORDER)
        accountant.declare_output(_WEIGHTS, weighed, None if weighed else _EXACT_WEIGHTS)
    accountant.declare_output("predictions and details", gap=_RAW_RATINGS)
    accountant.declare_output("diagnostics (details with diagnostics=True, "
                              "selection_summary())", gap=_DIAGNOSTICS)
    accountant.notes.append(_OWN_QUERIES)
    return Book(accountant, registered, ratings)


def declare_candidates(accountant: PrivacyAccountant, ratings: RatingArrays) -> None:
    """Mark out of scope, for each unit of the accountant's entries, the users whom one
    change of that unit removes from the candidates (`CANDIDATE_SCOPE`).

    The candidates of a neighbour list are the trainset's users, read from the data: a
    user who exists only through the ratings one unit changes is a candidate on one
    dataset and not at all on its neighbour, so the event "they are in a list" is
    impossible on one side, which no finite ε bounds (issue 51, finding 1: 4,119 / 20,000
    against 0 / 20,000 at a claimed ε of 1).  The selectors' and the sketches' arguments
    hold for candidates fixed in advance, so those users are outside every unit's
    guarantee:

    * `Unit.RATING` (one rating added, removed or changed): the users with exactly one
      rating.  A user with two or more keeps a rating after one removal, so they stay a
      user and a candidate on both datasets; the change moves their own scores only, by
      at most the range the entries assume.  (The pair "no rating, one rating" is the
      same boundary seen from the dataset where the user exists, with one rating.)
    * `Unit.USER` (all of one user's ratings): every user.
    * `Unit.SET_ITEM` (α items of a user's set, the private MinHash sketches): nothing
      more here.  The release puts every set smaller than τ + α outside (no sketch below
      τ, the boundary from τ to τ + α − 1, `τ ≥ 1`), and a user whom α items fewer
      remove from the trainset has a set of at most α items.
    * `Unit.RANKING_SWAP`: a swap removes nobody.
    """
    counts = np.diff(ratings.matrix.indptr)
    boundary = {Unit.RATING: counts == 1, Unit.USER: np.ones(ratings.n_users, dtype=bool)}
    for unit in accountant.units():
        if unit in boundary:
            accountant.out_of_scope(unit, boundary[unit], CANDIDATE_SCOPE[unit])


def book_at(book: Book, *, selector: Selector, k: int, sensitivity: np.ndarray | None,
            sim_options: Mapping, rating_scale: tuple, neighbourhood: str) -> Book:
    """The `Book` of the selector's lists at another `k` (`get_neighbors` asked at that
    `k`): the selector's entries at `k` registered in `book`'s accountant, so that each
    such list is charged as a selection of its own, beside the model's."""
    entries = (selector_privacy(selector, k, sensitivity, sim_options["name"], rating_scale,
                                neighbourhood) if sim_options["user_based"] else [])
    registered = [(book.accountant.register(entry), entry.applies_to) for entry in entries]
    book.accountant.declare_output(f"neighbour lists at k={k} (get_neighbors), as raw ids",
                                   [index for index, _ in registered],
                                   None if registered else _ITEM_BASED)
    return Book(book.accountant, registered, book.ratings)


def selector_privacy(selector: Selector, k: int, sensitivity: np.ndarray | None, name: str,
                     rating_scale: tuple, neighbourhood: str) -> list[LedgerEntry]:
    """The selector's entries, with what a guarantee assumes of the model checked: a
    score range at least the similarity's, a similarity of each pair's own ratings
    and candidates fixed in advance (else the entry is void)."""
    entries = selector.privacy(k, sensitivity)
    score_range = getattr(selector, "score_range", None)
    if score_range is not None:
        needed = (SKETCH_BACKENDS[name].score_range if name in SKETCH_BACKENDS
                  else change_bound(name, np.array(rating_scale, float)))
        if score_range < needed:
            raise ValueError(f"the selector's score_range {score_range:g} is below the "
                             f"range width {needed:g} of the similarity {name!r}")
    reason = (_NOT_PAIRWISE if name == "pearson_baseline"
              else _ITEM_CANDIDATES if neighbourhood == "item" else None)
    if reason is None:
        return entries
    return [replace(e, status=Status.VOID, note=reason) if e.status is Status.HOLDS else e
            for e in entries]
