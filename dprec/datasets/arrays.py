"""Ratings as arrays: a Surprise `Trainset` that costs what the data costs.

Surprise keeps a dataset as a list of ``(user, item, rating, timestamp)``
tuples and each trainset as two dicts of lists of ``(id, rating)`` tuples:
about 250 bytes a rating between them, so the Netflix Prize's 100 million
ratings do not fit in 24 GB before a model starts.  The classes here hold the
same ratings as numpy arrays (about 30 bytes a rating for a trainset) and
keep Surprise's interface:

* [`ArrayDataset`][] -- the ratings of a dataset as three columns (codes of the
  raw user and item ids, the ratings) and the raw ids once each.
* [`ArrayTrainset`][] -- a `surprise.Trainset` over CSR (by user) and CSC (by item)
  arrays.  Surprise's algorithms read its `ur`, `ir`, `all_ratings()`,
  `global_mean` and id maps as usual: `ur[u]` and `ir[i]` build their lists of
  tuples when asked, never for the whole set at once.  dprec's models read its
  arrays directly.
* [`ArrayTestset`][] -- a testset (a sequence of ``(uid, iid, r_ui)`` tuples,
  made when read) over three columns.
* [`ArrayKFold`][] and [`array_train_test_split`][] -- the folds of
  Surprise's `KFold` and `train_test_split`: for the same `random_state` they
  hold the same ratings, and each trainset gives every user and item the same
  inner id, in the same order, as Surprise's, so Surprise's algorithms fit it to
  the same numbers.

Examples
--------
>>> from surprise import SVD
>>> from surprise.model_selection import cross_validate
>>> data = ArrayDataset.from_columns([1, 1, 2, 3], [10, 11, 10, 11], [4.0, 3.0, 5.0, 2.0],
...                                  rating_scale=(1, 5))
>>> trainset = data.build_full_trainset()
>>> trainset.n_users, trainset.n_items, trainset.ur[0]
(3, 2, [(0, 4.0), (1, 3.0)])
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Mapping, Sequence
from functools import cached_property
from math import ceil, floor

import numpy as np
import pandas as pd
from surprise import Dataset, Reader, Trainset

from ..utils._arrays import segment_ids
from ..utils._validation import check_real

__all__ = ["ArrayDataset", "ArrayKFold", "ArrayTestset", "ArrayTrainset",
           "array_train_test_split"]


def _codes(ids, as_str: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """``(codes, raw)``: the code of each id (int32 where it fits) and the distinct ids as
    an object array, in order of appearance; with ``as_str`` the ids are made ``str``
    first, as Surprise's loaders give them (``1`` and ``"1"`` are then one id), converting
    only the distinct ones."""
    codes, distinct = pd.factorize(np.asarray(ids), sort=False)
    raw = np.asarray(distinct, dtype=object)
    if as_str:
        remap, raw = pd.factorize(raw.astype(str), sort=False)
        codes, raw = remap[codes], np.asarray(raw, dtype=object)
    return codes.astype(np.int32 if len(raw) < 2**31 else np.int64, copy=False), raw


class ArrayDataset:
    """A dataset of ratings as columns: what a Surprise `Dataset` holds, as arrays.

    Build one with [`from_columns`][dprec.datasets.arrays.ArrayDataset.from_columns]
    (raw ids and ratings), [`from_surprise`][dprec.datasets.arrays.ArrayDataset.from_surprise]
    (a Surprise `Dataset`), or `dprec.datasets.load(..., as_arrays=True)` and
    `dprec.datasets.synthetic(..., as_arrays=True)`.

    Parameters
    ----------
    user_codes, item_codes : ndarray of int
        For each rating (in the data's order), the index of its user in
        `user_ids` and of its item in `item_ids`.
    ratings : ndarray of float64
    user_ids, item_ids : ndarray of object
        The raw ids (``str``, as Surprise's loaders give them), each once.
    rating_scale : tuple of float
        ``(low, high)``, as a Surprise `Reader`'s.
    """

    def __init__(self, user_codes: np.ndarray, item_codes: np.ndarray, ratings: np.ndarray,
                 user_ids: np.ndarray, item_ids: np.ndarray,
                 rating_scale: tuple[float, float]) -> None:
        self.user_codes = np.asarray(user_codes)
        self.item_codes = np.asarray(item_codes)
        self.ratings = np.asarray(ratings, dtype=np.float64)
        self.user_ids = np.asarray(user_ids, dtype=object)
        self.item_ids = np.asarray(item_ids, dtype=object)
        n = len(self.ratings)
        if self.ratings.ndim != 1 or len(self.user_codes) != n or len(self.item_codes) != n:
            raise ValueError("user_codes, item_codes and ratings must be 1-d arrays of one "
                             f"length, got {len(self.user_codes)}, {len(self.item_codes)}, "
                             f"{len(self.ratings)}")
        for name, ids in (("user_ids", self.user_ids), ("item_ids", self.item_ids)):
            if len(pd.unique(ids)) != len(ids):
                raise ValueError(f"{name} must hold each raw id once")
        for name, codes, ids in (("user_codes", self.user_codes, self.user_ids),
                                 ("item_codes", self.item_codes, self.item_ids)):
            if codes.dtype.kind not in "iu":
                raise TypeError(f"{name} must be integers, got {codes.dtype}")
            if n and (codes.min() < 0 or codes.max() >= len(ids)):
                raise ValueError(f"{name} must be in [0, {len(ids)}) (indices of the ids), "
                                 f"got {codes.min()}..{codes.max()}")
        low, high = (check_real(value, "rating_scale") for value in rating_scale)
        if not low < high:
            raise ValueError(f"rating_scale must be (low, high) with low < high, got "
                             f"{tuple(rating_scale)}")
        self.rating_scale = (low, high)

    @classmethod
    def from_columns(cls, users, items, ratings, rating_scale: tuple[float, float]
                     ) -> ArrayDataset:
        """A dataset from three columns of raw user ids, raw item ids and ratings
        (arrays, lists or pandas Series); raw ids become ``str`` as in Surprise's
        loaders (``1`` and ``"1"`` are one id)."""
        ratings = np.asarray(ratings, dtype=np.float64)
        if len(users) != len(ratings) or len(items) != len(ratings):
            raise ValueError(f"users, items and ratings must have one length, got "
                             f"{len(users)}, {len(items)}, {len(ratings)}")
        user_codes, user_ids = _codes(users)
        item_codes, item_ids = _codes(items)
        return cls(user_codes, item_codes, ratings, user_ids, item_ids, rating_scale)

    @classmethod
    def from_surprise(cls, dataset: Dataset) -> ArrayDataset:
        """The ratings of a Surprise `Dataset` (one pass over its ``raw_ratings``;
        timestamps are dropped), raw ids kept as they are (ints stay ints)."""
        if not isinstance(dataset, Dataset):
            raise TypeError(f"dataset must be a surprise Dataset, got "
                            f"{type(dataset).__name__}")
        users, items, ratings = _columns(dataset.raw_ratings)
        user_codes, user_ids = _codes(users, as_str=False)      # Surprise's ids, as they are
        item_codes, item_ids = _codes(items, as_str=False)
        return cls(user_codes, item_codes, ratings, user_ids, item_ids,
                   dataset.reader.rating_scale)

    @property
    def n_ratings(self) -> int:
        """The number of ratings."""
        return len(self.ratings)

    def __len__(self) -> int:
        return len(self.ratings)

    def __repr__(self) -> str:
        return (f"ArrayDataset({len(self.user_ids)} users, {len(self.item_ids)} items, "
                f"{len(self.ratings)} ratings, rating_scale={self.rating_scale})")

    def build_full_trainset(self) -> ArrayTrainset:
        """Every rating as a trainset (Surprise's ``build_full_trainset``)."""
        return self.trainset(np.arange(len(self.ratings)))

    def trainset(self, rows: np.ndarray) -> ArrayTrainset:
        """The trainset of the ratings at positions ``rows``, in that order (inner ids
        by first appearance, as Surprise's ``construct_trainset`` numbers them)."""
        return ArrayTrainset(self.user_codes[rows], self.item_codes[rows], self.ratings[rows],
                             self.user_ids, self.item_ids, self.rating_scale)

    def testset(self, rows: np.ndarray) -> ArrayTestset:
        """The testset of the ratings at positions ``rows``, in that order."""
        return ArrayTestset(self.user_ids[self.user_codes[rows]],
                            self.item_ids[self.item_codes[rows]], self.ratings[rows])

    def to_surprise(self) -> Dataset:
        """The same ratings, in the same order, as a Surprise `Dataset`
        (a tuple per rating: for small data and comparisons)."""
        frame = pd.DataFrame({"user": self.user_ids[self.user_codes],
                              "item": self.item_ids[self.item_codes],
                              "rating": self.ratings})
        return Dataset.load_from_df(frame, Reader(rating_scale=self.rating_scale))

    @cached_property
    def raw_ratings(self) -> list[tuple]:
        """Surprise's ``raw_ratings`` (a tuple per rating, made on first access and kept),
        so that Surprise's own cross-validation iterators accept this dataset; they then
        build Surprise's `Trainset`.  Use [`ArrayKFold`][] to keep the arrays."""
        warnings.warn("ArrayDataset.raw_ratings makes and keeps a tuple per rating; "
                      "Surprise's iterators then build dict trainsets: use "
                      "dprec.datasets.ArrayKFold or array_train_test_split to keep the "
                      "arrays", stacklevel=2)
        return list(zip(self.user_ids[self.user_codes].tolist(),
                        self.item_ids[self.item_codes].tolist(),
                        self.ratings.tolist(), [None] * len(self.ratings)))

    @property
    def reader(self) -> Reader:
        """A Surprise `Reader` with this `rating_scale` (what Surprise's
        ``construct_trainset`` reads)."""
        return Reader(rating_scale=self.rating_scale)

    def construct_trainset(self, raw_trainset: Sequence[tuple]) -> ArrayTrainset:
        """Surprise's ``Dataset.construct_trainset``: a trainset from rows
        ``(uid, iid, r, timestamp)`` (what Surprise's iterators pass)."""
        users, items, ratings = _columns(raw_trainset)
        return ArrayDataset.from_columns(users, items, ratings, self.rating_scale
                                         ).build_full_trainset()

    def construct_testset(self, raw_testset: Sequence[tuple]) -> list[tuple]:
        """Surprise's ``Dataset.construct_testset``."""
        return [(u, i, r) for (u, i, r, _) in raw_testset]


def _columns(rows: Sequence[tuple]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    users = np.fromiter((row[0] for row in rows), object, len(rows))
    items = np.fromiter((row[1] for row in rows), object, len(rows))
    ratings = np.fromiter((row[2] for row in rows), np.float64, len(rows))
    return users, items, ratings


def _first_appearance(codes: np.ndarray, n_codes: int) -> tuple[np.ndarray, np.ndarray]:
    """``(inner, present)``: each code's inner id, numbered by first appearance in
    ``codes`` (Surprise's numbering), and the codes present, by inner id."""
    seen, first = np.unique(codes, return_index=True)
    present = seen[np.argsort(first, kind="stable")]
    inner_of = np.full(n_codes, -1, dtype=np.int64)
    inner_of[present] = np.arange(len(present))
    return inner_of[codes], present


class _RatingLists(Mapping):
    """``trainset.ur`` or ``trainset.ir``: ``lists[x]`` is the list of ``(id, rating)``
    tuples of row ``x`` of a compressed matrix, made when asked."""

    def __init__(self, ptr: np.ndarray, ids: np.ndarray, ratings: np.ndarray) -> None:
        self.ptr, self.ids, self.ratings = ptr, ids, ratings

    def __getitem__(self, row) -> list[tuple[int, float]]:
        if not (isinstance(row, (int, np.integer)) and 0 <= row < len(self.ptr) - 1):
            raise KeyError(row)
        start, stop = self.ptr[row], self.ptr[row + 1]
        return list(zip(self.ids[start:stop].tolist(), self.ratings[start:stop].tolist()))

    def __contains__(self, row) -> bool:
        return isinstance(row, (int, np.integer)) and 0 <= row < len(self.ptr) - 1

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.ptr) - 1))

    def __len__(self) -> int:
        return len(self.ptr) - 1


class ArrayTrainset(Trainset):
    """A Surprise `Trainset` held as arrays (see the module's introduction).

    Parameters
    ----------
    user_codes, item_codes, ratings : ndarray
        The ratings, in the order Surprise's ``construct_trainset`` would read them;
        codes index `user_ids` and `item_ids`.
    user_ids, item_ids : ndarray of object
        Raw ids of the dataset (possibly more than this trainset holds).
    rating_scale : tuple of float

    Attributes
    ----------
    ur, ir : Mapping
        As Surprise's: ``ur[u]`` the list of ``(inner item id, rating)`` of user
        ``u`` in data order, ``ir[i]`` that of ``(inner user id, rating)``.
    user_ptr, user_items, user_ratings : ndarray
        The ratings by user (CSR): user ``u``'s are at ``user_ptr[u]:user_ptr[u+1]``.
    item_ptr, item_users, item_ratings : ndarray
        The ratings by item (CSC), in ``ir`` order.
    """

    def __init__(self, user_codes: np.ndarray, item_codes: np.ndarray, ratings: np.ndarray,
                 user_ids: np.ndarray, item_ids: np.ndarray,
                 rating_scale: tuple[float, float]) -> None:
        users, present_users = _first_appearance(user_codes, len(user_ids))
        items, present_items = _first_appearance(item_codes, len(item_ids))
        self.n_users, self.n_items = len(present_users), len(present_items)
        self.n_ratings = len(ratings)
        self.rating_scale = tuple(rating_scale)
        self.raw_user_ids = user_ids[present_users]
        self.raw_item_ids = item_ids[present_items]
        index = np.int32 if max(self.n_users, self.n_items) < 2**31 else np.int64
        by_user = np.argsort(users, kind="stable")
        self.user_ptr = _pointers(users, self.n_users)
        self.user_items = items[by_user].astype(index)
        self.user_ratings = ratings[by_user]
        by_item = np.argsort(items, kind="stable")
        self.item_ptr = _pointers(items, self.n_items)
        self.item_users = users[by_item].astype(index)
        self.item_ratings = ratings[by_item]
        self.ur = _RatingLists(self.user_ptr, self.user_items, self.user_ratings)
        self.ir = _RatingLists(self.item_ptr, self.item_users, self.item_ratings)
        # all_ratings() order (by user, then data order), as Surprise's mean is taken
        self._global_mean = float(np.mean(self.user_ratings)) if self.n_ratings else None
        self._inner2raw_id_users = self._inner2raw_id_items = None

    @cached_property
    def _raw2inner_id_users(self) -> dict:
        return dict(zip(self.raw_user_ids.tolist(), range(self.n_users)))

    @cached_property
    def _raw2inner_id_items(self) -> dict:
        return dict(zip(self.raw_item_ids.tolist(), range(self.n_items)))

    def to_raw_uid(self, iuid: int):
        """The raw id of inner user ``iuid`` (``ValueError`` if it is not one)."""
        return _raw(self.raw_user_ids, iuid)

    def to_raw_iid(self, iiid: int):
        """The raw id of inner item ``iiid`` (``ValueError`` if it is not one)."""
        return _raw(self.raw_item_ids, iiid)

    def all_ratings(self) -> Iterator[tuple[int, int, float]]:
        """``(u, i, r)`` for every rating, by user in inner-id order (as Surprise's)."""
        users = segment_ids(np.diff(self.user_ptr))
        for start in range(0, self.n_ratings, 1 << 16):
            part = slice(start, start + (1 << 16))
            yield from zip(users[part].tolist(), self.user_items[part].tolist(),
                           self.user_ratings[part].tolist())

    def rating_columns(self, by: str = "item") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(ptr, ids, ratings)``: the ratings by item (``ir`` order, ids of users) or,
        with ``by="user"``, by user (``ur`` order, ids of items); read-only views."""
        if by not in ("item", "user"):
            raise ValueError(f"by must be 'item' or 'user', got {by!r}")
        arrays = ((self.item_ptr, self.item_users, self.item_ratings) if by == "item"
                  else (self.user_ptr, self.user_items, self.user_ratings))
        views = tuple(array.view() for array in arrays)
        for view in views:
            view.flags.writeable = False
        return views

    @property
    def nbytes(self) -> int:
        """Bytes held by the rating arrays (the raw ids and their dicts not counted)."""
        return sum(array.nbytes for array in (
            self.user_ptr, self.user_items, self.user_ratings, self.item_ptr,
            self.item_users, self.item_ratings))


def _pointers(rows: np.ndarray, n_rows: int) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=n_rows))])


def _raw(raw_ids: np.ndarray, inner) -> object:
    if isinstance(inner, (int, np.integer)) and 0 <= inner < len(raw_ids):
        return raw_ids[inner]
    raise ValueError(f"{inner} is not a valid inner id.")


class ArrayTestset(Sequence):
    """A testset as three columns: ``testset[k]`` is the tuple ``(uid, iid, r_ui)``,
    made when read, as in the list Surprise's iterators give.

    Attributes
    ----------
    uids, iids : ndarray of object
        The raw ids of each rating's user and item.
    ratings : ndarray of float64
    """

    def __init__(self, uids: np.ndarray, iids: np.ndarray, ratings: np.ndarray) -> None:
        if not len(uids) == len(iids) == len(ratings):
            raise ValueError(f"uids, iids and ratings must have one length, got {len(uids)}, "
                             f"{len(iids)}, {len(ratings)}")
        self.uids, self.iids, self.ratings = uids, iids, ratings

    def __len__(self) -> int:
        return len(self.ratings)

    def __getitem__(self, k):
        if isinstance(k, slice):
            return ArrayTestset(self.uids[k], self.iids[k], self.ratings[k])
        return self.uids[k], self.iids[k], float(self.ratings[k])

    def __iter__(self) -> Iterator[tuple]:
        return zip(self.uids, self.iids, self.ratings.tolist())

    def rating_columns(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(uids, iids, ratings)``, the arrays themselves (what dprec's models read)."""
        return self.uids, self.iids, self.ratings


def _rng(random_state):
    """Surprise's ``get_rng`` (None: numpy's global RandomState), and a numpy
    ``Generator`` accepted as is."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    from surprise.utils import get_rng

    return get_rng(random_state)


def _as_arrays(data) -> ArrayDataset:
    if isinstance(data, ArrayDataset):
        return data
    if isinstance(data, Dataset):
        return ArrayDataset.from_surprise(data)
    raise TypeError(f"data must be an ArrayDataset or a surprise Dataset, got "
                    f"{type(data).__name__}")


class ArrayKFold:
    """Surprise's `KFold` on arrays: the same folds, as [`ArrayTrainset`][] and
    [`ArrayTestset`][].

    Use it as Surprise's: ``cross_validate(algo, data, cv=ArrayKFold(5, random_state=0))``.

    Parameters
    ----------
    n_splits : int, default 5
    random_state : None, int, RandomState or Generator
        As Surprise's (``None``: numpy's global RNG).  For the same seed the folds
        hold the same ratings as Surprise's ``KFold(n_splits, random_state)`` on
        the same data, in the same order.
    shuffle : bool, default True
    """

    def __init__(self, n_splits: int = 5, random_state=None, shuffle: bool = True) -> None:
        if isinstance(n_splits, bool) or not isinstance(n_splits, (int, np.integer)):
            raise TypeError(f"n_splits must be an integer >= 2, got {n_splits!r}")
        if n_splits < 2:
            raise ValueError(f"n_splits must be an integer >= 2, got {n_splits}")
        self.n_splits, self.random_state, self.shuffle = int(n_splits), random_state, shuffle

    def split(self, data) -> Iterator[tuple[ArrayTrainset, ArrayTestset]]:
        """``(trainset, testset)`` for each fold."""
        data = _as_arrays(data)
        n = len(data)
        if self.n_splits > n:
            raise ValueError(f"n_splits={self.n_splits} must be at most the number of "
                             f"ratings, {n}")
        indices = np.arange(n)
        if self.shuffle:
            _rng(self.random_state).shuffle(indices)
        start = stop = 0
        for fold in range(self.n_splits):
            start = stop
            stop += n // self.n_splits + (fold < n % self.n_splits)
            train = np.concatenate([indices[:start], indices[stop:]])
            yield data.trainset(train), data.testset(indices[start:stop])

    def get_n_folds(self) -> int:
        """The number of folds (Surprise's iterators' method)."""
        return self.n_splits


def array_train_test_split(data, test_size: float | int | None = 0.2,
                           train_size: float | int | None = None, random_state=None,
                           shuffle: bool = True) -> tuple[ArrayTrainset, ArrayTestset]:
    """Surprise's `train_test_split` on arrays: the same ratings in the trainset and the
    testset (for the same arguments), as [`ArrayTrainset`][] and [`ArrayTestset`][].

    ``test_size`` and ``train_size`` as Surprise's: a share (float) or a number of
    ratings (int), ``None`` for the complement of the other.
    """
    data = _as_arrays(data)
    n = len(data)
    n_train, n_test = _sizes(test_size, train_size, n)
    order = _rng(random_state).permutation(n) if shuffle else np.arange(n)
    return data.trainset(order[:n_train]), data.testset(order[n_train:n_train + n_test])


def _sizes(test_size, train_size, n: int) -> tuple[int, int]:
    """Surprise's ``ShuffleSplit.validate_train_test_sizes``, as ``(n_train, n_test)``."""
    for name, size in (("test_size", test_size), ("train_size", train_size)):
        if size is None:
            continue
        if isinstance(size, bool) or not isinstance(size, (int, float, np.integer, np.floating)):
            raise TypeError(f"{name} must be a share (float), a count (int) or None, "
                            f"got {size!r}")
        if not 0 < size < n:
            raise ValueError(f"{name}={size} must be in (0, {n}) (the number of ratings)")
    if test_size is None and train_size is None:
        raise ValueError("test_size and train_size cannot both be None")
    n_test = ceil(test_size * n) if isinstance(test_size, (float, np.floating)) else test_size
    if train_size is None:
        n_train = n - n_test
    else:
        n_train = (floor(train_size * n) if isinstance(train_size, (float, np.floating))
                   else train_size)
    if n_test is None:
        n_test = n - n_train
    if n_train + n_test > n:
        raise ValueError(f"train_size + test_size ({n_train + n_test} ratings) must be at "
                         f"most the number of ratings, {n}")
    return int(n_train), int(n_test)

