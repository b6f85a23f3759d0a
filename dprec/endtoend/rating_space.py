"""The lists of users and items of dprec's private models, and Surprise's answers over them.

Surprise numbers users and items by first appearance in the data, so one rating
removed renumbers many of them, and an array in inner-id order leaks the data's
order.  dprec's private models ([`DPBaseline`][dprec.DPBaseline],
[`DPItemKNN`][dprec.DPItemKNN], [`LocalKNN`][dprec.LocalKNN]) therefore work in a
*canonical space*: a [`Catalogue`][dprec.endtoend.rating_space.Catalogue] of users and one of
items, each sorted by `(type name, raw id)` (a total order that depends on the id set
alone), either given as a public catalogue (`users=` / `items=`) or read from the data, and a
[`RatingSpace`][dprec.endtoend.rating_space.RatingSpace] holding the ratings in that order.
The space also says, in a model's privacy report, what the lists make a condition
of the guarantee and which users are at its boundary
(`SCOPE`).

[`ListedModel`][dprec.endtoend.rating_space.ListedModel] gives such a model Surprise's
`estimate`, `predict` and `test`, and top-N lists (`recommend`, `recommend_batch`):
raw ids are resolved against the lists, and the model answers positions through its
`_estimates(users, items)`.  It is a
[`PrivateModel`][dprec.accountant.private_model.PrivateModel] whose releases are made once, at
`fit`, for every listed user.

**Top-N lists.**  A user's list ranks the listed items only (an item outside the list
was never released, and is never recommended) by the model's estimates, unclipped (the
list's `est` is clipped as `test` answers): post-processing of the releases and of the
user's own ratings (which the list leaves out with `exclude_rated`), shown to that user
alone, like a prediction.  The report covers it as its output `"recommendations"`, under
the same conditions as the predictions.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import scipy.sparse as sp
from surprise import PredictionImpossible
from surprise.prediction_algorithms.predictions import Prediction

from ..accountant.ledger import PrivacyAccountant, Unit
from ..accountant.private_model import PrivateModel
from ..evaluation.topn import Recommender
from ..knn.parameters import check_ids
from ..utils._arrays import segment_ids
from ..utils._ratings import RatingArrays, ratings_matrix
from ..utils._surprise import predictions, raw_ids, testset_columns
from ..utils._validation import check_int

if TYPE_CHECKING:
    from .pairwise import PairMatrix

__all__ = ["SCOPE", "UNKNOWN_BOTH", "Catalogue", "ListedModel", "RatingSpace", "sorted_ids",
           "surprise_details"]

#: Surprise's reason when neither the user nor the item is known
UNKNOWN_BOTH = "User and item are unknown."


# ------------------------------------------------------------------ the lists
def _id_key(raw) -> tuple:
    return (type(raw).__name__, raw)


def sorted_ids(ids: Iterable, name: str = "ids") -> list:
    """Raw ids in the order dprec's private models use: by `(type name, value)`, a
    total order that depends on the set of ids alone (ints and strings may mix).

    Raises
    ------
    TypeError
        If ids of one type cannot be compared (e.g. tuples of mixed types).
    """
    try:
        return sorted(ids, key=_id_key)
    except TypeError as error:
        raise TypeError(f"{name}: raw ids of one type must be comparable to be sorted "
                        f"({error})") from None


@dataclass(frozen=True)
class Catalogue:
    """The users or items of a model: raw ids in sorted order, and who chose them.

    Attributes
    ----------
    ids : tuple
        The raw ids, sorted (`sorted_ids`).
    index : dict
        `raw id -> position` in `ids`.
    given : bool
        A public catalogue given to the model (`users=` / `items=`), not read
        from the data.
    selection : str or None
        For a list chosen by differentially private partition selection from the data's
        ids (see [`RatingSpace.selected`][dprec.endtoend.rating_space.RatingSpace.selected]), the
        rule that chose it, as the report states it; None otherwise.
    """

    ids: tuple
    index: dict
    given: bool
    selection: str | None = None

    @classmethod
    def build(cls, given, data_ids: list, name: str) -> Catalogue:
        """The catalogue `given` (validated; every id of `data_ids` must be in it), or
        the sorted `data_ids` when `given` is None."""
        if given is None:
            ids = sorted_ids(data_ids, name)
            return cls(tuple(ids), {raw: n for n, raw in enumerate(ids)}, False)
        if isinstance(given, (np.ndarray, pd.Index, pd.Series)):
            given = given.tolist()
        if isinstance(given, (str, bytes, Mapping)) or not isinstance(given, Iterable):
            raise TypeError(f"{name} must be a sequence of raw ids (a public catalogue), got "
                            f"{type(given).__name__}")
        ids = list(given)
        if not ids:
            raise ValueError(f"{name} must not be empty")
        try:
            distinct = set(ids)
        except TypeError:
            raise TypeError(f"{name}: raw ids must be hashable") from None
        if len(distinct) != len(ids):
            seen: set = set()
            repeated = next(raw for raw in ids if raw in seen or seen.add(raw))
            raise ValueError(f"{name} holds a repeated id, {repeated!r}")
        outside = [raw for raw in data_ids if raw not in distinct]
        if outside:
            raise ValueError(f"{name}: the ratings hold {len(outside)} id(s) outside the "
                             f"catalogue, e.g. {outside[0]!r}; a catalogue lists every id "
                             "that can be rated")
        ids = sorted_ids(ids, name)
        return cls(tuple(ids), {raw: n for n, raw in enumerate(ids)}, True)

    def __len__(self) -> int:
        return len(self.ids)

    def labels(self) -> pd.Index:
        """The ids as a pandas Index (tuples stay ids, not levels)."""
        return pd.Index(list(self.ids), tupleize_cols=False)

    def positions(self, raws) -> np.ndarray:
        """The position of each raw id, `-1` where it is not listed: for an array (an
        `ArrayTestset`'s columns) a hash lookup in C, up to 100 times faster than one
        `dict.get` per id, with the same positions (ids equal by value, as in a dict)."""
        if isinstance(raws, np.ndarray) and raws.dtype.kind in "iuUO" \
                and self._lookup is not None:
            return self._lookup.get_indexer(raws).astype(np.int64, copy=False)
        get = self.index.get
        return np.fromiter((get(raw, -1) for raw in raws), np.int64, len(raws))

    @cached_property
    def _lookup(self) -> pd.Index | None:
        """The ids as a pandas Index, built on the first array lookup; None where pandas
        would not find what the dict finds: missing values among the ids (pandas takes
        every NaN and None for one another, and refuses a repeated one) or a boolean Index
        (which finds no integer, where the dict finds ``0 == False``)."""
        labels = self.labels()
        usable = labels.is_unique and not labels.hasnans and labels.dtype != bool
        return labels if usable else None


@dataclass(frozen=True)
class RatingSpace:
    """A trainset's ratings in the sorted order of the user and item lists.

    Attributes
    ----------
    users, items : Catalogue
    matrix : scipy.sparse.csr_matrix
        Listed users × listed items (sorted orders): every release is computed
        from it and its noise drawn in its order, so renumbering the data
        (Surprise's inner ids) changes nothing.
    """

    users: Catalogue
    items: Catalogue
    matrix: sp.csr_matrix

    @classmethod
    def build(cls, trainset, users=None, items=None) -> RatingSpace:
        """The lists (`users=` / `items=`, or the trainset's) and the ratings in their order.

        Raises
        ------
        ValueError, TypeError
            For an invalid catalogue, or ratings outside it (naming `users` or `items`).
        """
        inner_users, inner_items = raw_ids(trainset), raw_ids(trainset, users=False)
        user_list = Catalogue.build(users, inner_users, "users")
        item_list = Catalogue.build(items, inner_items, "items")
        ratings = RatingArrays.from_trainset(trainset)
        rows = user_list.positions(inner_users)[
            segment_ids(np.diff(ratings.matrix.indptr))]
        columns = item_list.positions(inner_items)[ratings.matrix.indices]
        matrix = ratings_matrix(rows, columns, ratings.matrix.data,
                                (len(user_list), len(item_list)))
        return cls(user_list, item_list, matrix)

    @property
    def rows(self) -> np.ndarray:
        """The user (row) of every stored rating, in `matrix.data` order."""
        return segment_ids(np.diff(self.matrix.indptr))

    def positions(self, uids, iids) -> tuple[np.ndarray, np.ndarray]:
        """Positions of raw user and item ids in the lists (`-1`: not listed)."""
        return self.users.positions(uids), self.items.positions(iids)

    def selected(self, keep: np.ndarray, rule: str) -> RatingSpace:
        """The space restricted to the items `keep` (a boolean mask over the item list),
        chosen by differentially private partition selection under `rule` (stated in the
        report): the items not kept, and their ratings, are gone from every release.

        Raises
        ------
        ValueError
            If `keep` is not a boolean mask of the items, or the item list is a public
            catalogue (given: nothing to select).
        """
        keep = np.asarray(keep)
        if keep.dtype != bool or keep.shape != (len(self.items),):
            raise ValueError(f"keep must be a boolean mask of the {len(self.items)} items, got "
                             f"{keep.dtype} {keep.shape}")
        if self.items.given:
            raise ValueError("the item list is a public catalogue (items=): nothing is selected")
        ids = tuple(raw for raw, kept in zip(self.items.ids, keep.tolist()) if kept)
        items = Catalogue(ids, {raw: n for n, raw in enumerate(ids)}, False, str(rule))
        return RatingSpace(self.users, items, self.matrix[:, np.flatnonzero(keep)].tocsr())

    def declare_scope(self, accountant: PrivacyAccountant, unit: Unit,
                      user_list: bool = True) -> None:
        """State the lists' conditions in the report (`SCOPE`) and mark the boundary users
        (those whose unit, removed, would change a list read from the data) out of
        `unit`'s scope.

        Items: a public catalogue, or a list chosen by private partition selection (its
        rule stated; nobody is at a boundary: the selection's δ covers the sole rater of
        an item), or a list read from the data (the sole raters of an item are outside).
        `user_list=False`: no shared output names, counts or orders the users (each user's
        answers are shown to them alone, and the releases are sums over the users), so
        the user list is no release: this is stated, and nobody is outside for it.
        """
        if self.items.given:
            accountant.add_condition(SCOPE["items given"])
        elif self.items.selection is not None:
            accountant.add_condition(SCOPE["items selected"] + self.items.selection)
        else:
            counts = np.bincount(self.matrix.indices)     # read at rated items only
            sole = np.zeros(self.matrix.shape[0], dtype=bool)
            sole[self.rows[counts[self.matrix.indices] == 1]] = True
            accountant.add_condition(SCOPE["items from data"])
            accountant.out_of_scope(unit, sole, SCOPE["sole rater"])
        if self.users.given:
            accountant.add_condition(SCOPE["users given"])
        elif not user_list:
            accountant.add_condition(SCOPE["users private"])
        elif unit is Unit.USER:
            accountant.add_condition(SCOPE["users from data"])
            accountant.out_of_scope(unit, np.ones(self.matrix.shape[0], dtype=bool),
                                    SCOPE["any user"])
        else:
            accountant.add_condition(SCOPE["users from data"])
            accountant.out_of_scope(unit, np.diff(self.matrix.indptr) == 1,
                                    SCOPE["single rating"])


#: What the report says of the lists: the conditions (`... given`, `... selected`,
#: `... private`, `... from data`) and why users are outside the guarantee (`sole rater`,
#: `any user`, `single rating`).
SCOPE = {
    "items given": "the item catalogue given as items= is public (chosen without looking "
                   "at the ratings)",
    "users given": "the user catalogue given as users= is public (chosen without looking "
                   "at the ratings)",
    "items from data": "the item list is read from the data (the items someone rated): the "
                       "guarantee is for neighbouring datasets with the same items; give "
                       "items= (a public catalogue) to lift this",
    "items selected": "the item list is chosen from the data by differentially private "
                      "partition selection (charged in the entries, its δ included): ",
    "users private": "the user list is not released: each user's answers are shown to that "
                     "user alone and every shared output is a sum over the users (joint "
                     "differential privacy)",
    "users from data": "the user list is read from the data (the users with a rating): the "
                       "guarantee is for neighbouring datasets with the same users; give "
                       "users= (a public catalogue) to lift this",
    "sole rater": "the sole rater of an item, which exists only through them (the item list "
                  "is read from the data)",
    "any user": "removing a user removes them from the user list, read from the data",
    "single rating": "a single rating: removing it removes the user from the user list, "
                     "read from the data",
}


# ------------------------------------------------------------------ the answers
def surprise_details(known_user: np.ndarray, known_item: np.ndarray) -> list[dict]:
    r"""Surprise's `details` of each answer: impossible where neither is known (the
    estimate there is the released $\mu$ alone, Surprise's default prediction)."""
    lost = ~(known_user | known_item)
    return [{"was_impossible": True, "reason": UNKNOWN_BOTH} if gone
            else {"was_impossible": False} for gone in lost.tolist()]


class ListedModel(Recommender, PrivateModel):
    """Surprise's `estimate`, `predict` and `test`, and top-N lists, for a model of the
    lists.

    A private model inherits this before `surprise.AlgoBase`, sets `_space` (its
    [`RatingSpace`][dprec.endtoend.rating_space.RatingSpace]) and `_accountant` (its
    [`PrivacyAccountant`][dprec.PrivacyAccountant], set last: the model is fitted once
    it exists) at `fit`, and defines `_estimates(users, items)` — estimates (not
    clipped) for positions in the lists (`-1`: not listed), arrays of any length — and
    `mu_`, the released global mean; `_answers` adds Surprise's `details` (a model
    with details of its own overrides it).  Raw ids are resolved against the lists:
    listed users and items without ratings are known.  Its report must list
    `"recommendations"` among its outputs (`OUTPUTS`).
    """

    _space: RatingSpace
    mu_: float
    #: the released similarities between listed users or items (sorted lists' order), set
    #: at `fit` by a neighbourhood model, and which lists they are between
    _sim: np.ndarray | PairMatrix | None = None
    _similar: str = "users"
    #: whether a shared output names the users (e.g. neighbour lists of users): then the
    #: user list read from the data is a release, with its boundary users outside
    _names_users: bool = False

    def _estimates(self, users: np.ndarray, items: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _answers(self, users: np.ndarray, items: np.ndarray) -> tuple[np.ndarray, list]:
        """Estimates (not clipped) and Surprise's `details` for positions in the lists."""
        return self._estimates(users, items), surprise_details(users >= 0, items >= 0)

    # ------------------------------------------------------------ top-N
    @property
    def item_list_(self) -> tuple:
        """The raw ids of the listed items, sorted: the columns of `score_rows`, and the
        only items a top-N list may hold."""
        return self._space.items.ids

    def score_rows(self, users) -> tuple[np.ndarray, np.ndarray]:
        """Every listed item's estimate for each of `users` (inner ids of the trainset),
        not clipped, and where a top-N list may hold it (every listed item): both
        `(len(users), len(item_list_))`, columns in the order of `item_list_`.  What
        [`dprec.evaluation.topn.recommend_batch`][] ranks; a row is the user's predictions, from
        the releases and the user's own ratings (nothing is charged).

        Raises
        ------
        TypeError, ValueError
            For `users` that are not a 1-D array of inner user ids of the trainset.
        """
        self._check_fitted()
        users = check_ids(users, "users", self.trainset.n_users)
        rows = self._space.users.positions([self.trainset.to_raw_uid(u) for u in users.tolist()])
        n_items = len(self._space.items)
        est = self._estimates(np.repeat(rows, n_items),
                              np.tile(np.arange(n_items, dtype=np.int64), len(rows)))
        shape = (len(rows), n_items)
        return est.reshape(shape), np.ones(shape, dtype=bool)

    def _listed_estimates(self, top: pd.DataFrame) -> pd.DataFrame:
        """The lists' `est` clipped to the rating scale, as `test` answers (the lists are
        ranked by the unclipped estimates: clipping would tie every estimate above the
        scale's top)."""
        low, high = self.trainset.rating_scale
        top["est"] = np.clip(top["est"].to_numpy(), low, high)
        return top

    def _release_once(self, accountant: PrivacyAccountant, indices: list[int],
                      outputs: Iterable[str], note: str, unit: Unit) -> None:
        """The ledger's tail: the entries `indices` charged once to every listed user (the
        releases made at `fit`), `outputs` declared post-processing of them, the answers'
        `note`, and the lists' scope for `unit`
        ([`RatingSpace.declare_scope`][dprec.endtoend.rating_space.RatingSpace.declare_scope], the
        user list a release only where `_names_users`)."""
        accountant.release_once(indices, outputs, note)
        self._space.declare_scope(accountant, unit, user_list=self._names_users)

    def get_neighbors(self, iid: int, k: int) -> list[int]:
        """Surprise's `get_neighbors`: the `k` users (items, for an item-based model) most
        similar to inner id `iid` by the released similarities `sim`, as inner ids, most
        similar first (ties in the lists' sorted order), among the trainset's listed ones
        (none for an item the model's partition selection did not list).

        Post-processing of the released `sim`, so nothing is charged.  But inner ids
        follow the data's order (one removal renumbers them), and only the
        trainset's ids have one (an answer shows whether an id was rated at all,
        which a public catalogue does not): once this is called, the privacy
        report lists the answers as an output no guarantee covers.  Publish from
        `sim` (and `neighbours_`), keyed by raw id over the lists, instead.

        Raises
        ------
        TypeError
            For a model that releases no similarities (no neighbours).
        ValueError
            For an `iid` that is not an inner id of the trainset, or `k < 1`.
        """
        self._check_fitted()
        if self._sim is None:
            return super().get_neighbors(iid, k)
        items = self._similar == "items"
        known = raw_ids(self.trainset, users=not items)
        iid = check_int(iid, "iid", minimum=0, maximum=len(known) - 1)
        k = check_int(k, "k", minimum=1)
        names = {output.name for output in self._accountant.outputs}
        if _INNER_NEIGHBOURS not in names:
            self._accountant.declare_output(_INNER_NEIGHBOURS, gap=_INNER_ORDER)
        catalogue = self._space.items if items else self._space.users
        listed = catalogue.positions(known)             # each inner id's place in the list
        if listed[iid] < 0:          # not listed (partition selection): no similarity
            return []
        others = np.flatnonzero(listed >= 0)
        others = others[others != iid]
        by_list = others[np.argsort(listed[others], kind="stable")]
        row = self._sim[listed[iid]][listed[by_list]]
        order = np.argsort(-np.nan_to_num(row, nan=-np.inf), kind="stable")[:k]
        return by_list[order].tolist()

    def compute_similarities(self):
        """Surprise's `compute_similarities`: a model of the lists computes none on
        demand; a neighbourhood model releases them at `fit` as `sim`.

        Raises
        ------
        TypeError
            Always, saying where the similarities are.
        """
        self._check_fitted()
        if self._sim is None:
            return super().compute_similarities()
        raise TypeError(f"{type(self).__name__} releases its similarities at fit: read its "
                        f"sim attribute (a DataFrame, raw {self._similar[:-1]} ids on both "
                        "axes); it computes none on demand")

    def default_prediction(self) -> float:
        """The released global mean $\\mu$ (Surprise's default reads the raw data's)."""
        self._check_fitted()
        return self.mu_

    def estimate(self, u, i):
        """Estimate one rating from inner ids (or Surprise's `"UKN__"` strings), as `test`
        does: `(est, details)`, or `PredictionImpossible`."""
        self._check_fitted()
        trainset = self.trainset
        uid = [trainset.to_raw_uid(u)] if trainset.knows_user(u) else [_NOT_LISTED]
        iid = [trainset.to_raw_iid(i)] if trainset.knows_item(i) else [_NOT_LISTED]
        est, details = self._answers(*self._space.positions(uid, iid))
        if details[0]["was_impossible"]:
            raise PredictionImpossible(details[0]["reason"])
        return float(est[0]), details[0]

    def predict(self, uid, iid, r_ui=None, clip=True, verbose=False):
        """Surprise's `predict` by raw ids (resolved against the lists)."""
        self._check_fitted()
        est, details = self._answers(*self._space.positions([uid], [iid]))
        est = float(est[0])
        if clip:
            low, high = self.trainset.rating_scale
            est = max(low, min(high, est))
        prediction = Prediction(uid, iid, r_ui, est, details[0])
        if verbose:
            print(prediction)
        return prediction

    def test(self, testset, verbose: bool = False):
        """Surprise's `test`, all pairs at once (the same numbers as `predict`)."""
        self._check_fitted()
        uids, iids, r_uis = testset_columns(testset)   # any iterable of (uid, iid, r_ui)
        if not uids:
            return []
        columns = (testset.rating_columns()[:2] if callable(getattr(testset, "rating_columns",
                                                                    None)) else (uids, iids))
        est, details = self._answers(*self._space.positions(*columns))
        return predictions(self.trainset, uids, iids, r_uis, est, details, verbose)


#: what `get_neighbors` releases beside `sim`, and why no guarantee covers it
_INNER_NEIGHBOURS = "neighbours' inner ids (get_neighbors)"
_INNER_ORDER = ("inner ids follow the order of the data (one removal renumbers them), and only "
                "the trainset's ids have one (which shows whether an id was rated at all): the "
                "released similarities are keyed by raw id (sim)")

#: a raw id in no list (what an unknown inner id stands for)
_NOT_LISTED = object()
