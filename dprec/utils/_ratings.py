"""A Surprise ``Trainset`` as flat numpy arrays, built once per fit.

Surprise keeps ratings in dicts of Python lists (``trainset.ur`` /
``trainset.ir``).  Every vectorised computation in dprec starts from
`RatingArrays`: the same ratings as a users × items CSR matrix and as
item-major arrays in ``trainset.ir`` order (the order Surprise's
``heapq.nlargest`` uses to break ties between equally similar raters).

For item-based kNN (``sim_options={"user_based": False}``) the roles swap as
in Surprise's ``SymmetricAlgo.switch``: the rows ("users" below) are the
items, the columns the users, and the column-major arrays follow
``trainset.ur``.
"""

from __future__ import annotations

import itertools
import weakref
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import scipy.sparse as sp
from surprise import Trainset

from ._arrays import safe_divide, segment_ids
from ._rng import stable_keys
from ._surprise import raw_ids
from ._validation import check_real


@dataclass(frozen=True)
class RatingArrays:
    """The ratings of a trainset, by item and by user (by user and by item when
    built with ``user_based=False``: rows are then items, columns users).

    Attributes
    ----------
    n_users, n_items : int
        Sizes of the trainset (inner ids are ``0..n-1``).
    item_ptr : ndarray of shape (n_items + 1,)
        Raters of item ``i`` are ``item_users[item_ptr[i]:item_ptr[i + 1]]``,
        in ``trainset.ir[i]`` order, with ratings ``item_ratings[...]``.
    item_users : ndarray of int64
    item_ratings : ndarray of float64
    matrix : scipy.sparse.csr_matrix
        Users × items ratings (sorted indices).
    keys : ndarray of int64
        Sorted ``u * n_items + i`` of every rating, for `lookup`.
    key_ratings : ndarray of float64
        The ratings in ``keys`` order.
    item_ids : tuple
        The raw id of each item (by inner id).
    """

    n_users: int
    n_items: int
    item_ptr: np.ndarray
    item_users: np.ndarray
    item_ratings: np.ndarray
    matrix: sp.csr_matrix
    keys: np.ndarray
    key_ratings: np.ndarray
    item_ids: tuple

    @cached_property
    def item_keys(self) -> np.ndarray:
        """A public key per item, a function of its raw id alone
        (`dprec.utils._rng.stable_keys`): public hash functions are keyed by it,
        never by inner ids, which follow the order of the data (computed when a
        sketch first needs it)."""
        return stable_keys(self.item_ids)

    @classmethod
    def from_trainset(cls, trainset: Trainset, user_based: bool = True) -> RatingArrays:
        """Read ``trainset.ir`` (``trainset.ur`` when not ``user_based``) once into flat
        arrays (no per-rating numpy work); an array-backed trainset
        (`dprec.datasets.ArrayTrainset`, any trainset with its ``rating_columns``) is
        read from its arrays, without a tuple per rating.

        Built once per trainset object and orientation, then reused (Surprise's
        trainsets are not modified after they are built).
        """
        cached = _BUILT.setdefault(trainset, {})
        if user_based not in cached:
            cached[user_based] = cls._build(trainset, user_based)
        return cached[user_based]

    def remember(self, trainset: Trainset) -> RatingArrays:
        """Register these (user-based) arrays as those of ``trainset``, for arrays built
        without it (the attack simulator's changed copies); returns them."""
        _BUILT.setdefault(trainset, {})[True] = self
        return self

    @classmethod
    def _build(cls, trainset: Trainset, user_based: bool) -> RatingArrays:
        n_ratings = trainset.n_ratings
        if user_based:
            n_users, n_items, by_column = trainset.n_users, trainset.n_items, trainset.ir
        else:
            n_users, n_items, by_column = trainset.n_items, trainset.n_users, trainset.ur
        if hasattr(trainset, "rating_columns"):     # an array-backed trainset
            item_ptr, users, ratings = trainset.rating_columns("item" if user_based else "user")
            item_ptr = np.asarray(item_ptr, np.int64)
            users, ratings = users.astype(np.int64), ratings.astype(np.float64)
            counts = np.diff(item_ptr)
        else:
            counts = np.fromiter((len(by_column[i]) for i in range(n_items)), np.int64,
                                 n_items)
            pairs = np.fromiter(
                itertools.chain.from_iterable(by_column[i] for i in range(n_items)),
                dtype=[("u", np.int64), ("r", np.float64)],
                count=n_ratings,
            )
            item_ptr = np.concatenate([[0], np.cumsum(counts)])
            users, ratings = pairs["u"].copy(), pairs["r"].copy()
        items = segment_ids(counts)
        if user_based:
            check_ratings(trainset, users, items, ratings)
        else:
            check_ratings(trainset, items, users, ratings)
        matrix = ratings_matrix(users, items, ratings, (n_users, n_items))
        # the CSR layout is already sorted by (user, item)
        rows = segment_ids(np.diff(matrix.indptr))
        keys = rows * n_items + matrix.indices
        return cls(n_users, n_items, item_ptr, users, ratings, matrix, keys, matrix.data,
                   tuple(raw_ids(trainset, users=not user_based)))

    def lookup(self, users: np.ndarray, items: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Ratings ``r_ui`` for arrays of inner ids (any shape).

        Returns
        -------
        ratings : ndarray of float64
            The rating where it exists, 0.0 elsewhere.
        found : ndarray of bool
            Whether ``u`` rated ``i`` in the trainset.
        """
        query = np.asarray(users, dtype=np.int64) * self.n_items + np.asarray(items, dtype=np.int64)
        pos = np.searchsorted(self.keys, query)
        pos = np.minimum(pos, len(self.keys) - 1)
        found = (self.keys[pos] == query) if len(self.keys) else np.zeros(query.shape, bool)
        return np.where(found, self.key_ratings[pos] if len(self.keys) else 0.0, 0.0), found

    @cached_property
    def global_mean(self) -> float:
        """The mean of all the ratings (Surprise's ``trainset.global_mean``, without its
        Python loop over every rating)."""
        return float(np.mean(self.item_ratings))

    def user_means(self) -> np.ndarray:
        """Each row's mean rating (every user and item in a trainset has one); a new array
        at each call, computed once."""
        return self._row_moments[0].copy()

    def user_sigmas(self) -> np.ndarray:
        """Each row's population standard deviation of its ratings, as Surprise's
        ``KNNWithZScore`` computes it: where it is 0, the standard deviation of all
        the ratings instead (a new array at each call, computed once)."""
        return self._row_moments[1].copy()

    def deviations(self, kind: str) -> tuple[sp.csc_matrix, np.ndarray]:
        """Each rating's deviation from its row: ``"basic"`` $r$, ``"means"``
        $r - \\mu_x$, ``"zscore"`` $(r - \\mu_x) / \\sigma_x$ (0 where $\\sigma_x$ is 0:
        every rating equal), as `user_means` and `user_sigmas` give them.

        Returns ``(matrix, by_column)``: the deviations as a rows × columns CSC matrix,
        and in the item-major order of ``item_users``.  Computed once per kind and shared
        by every caller (what a fitted model keeps of its rule), who must not write into
        them, as into the ratings themselves.
        """
        if kind not in ("basic", "means", "zscore"):
            raise ValueError(f"kind must be 'basic', 'means' or 'zscore', got {kind!r}")
        cache = self._deviations      # read once: a thread that lost a race still answers
        if kind not in cache:
            means, sigmas = self._row_moments
            by_row = segment_ids(np.diff(self.matrix.indptr))
            out = []
            for rows, r in ((by_row, self.matrix.data), (self.item_users, self.item_ratings)):
                if kind == "basic":
                    out.append(r)
                elif kind == "means":
                    out.append(r - means[rows])
                else:
                    out.append(safe_divide(r - means[rows], sigmas[rows]))
            cache.setdefault(kind, (deviation_matrix(self.matrix, out[0]), out[1]))
        return cache[kind]

    @cached_property
    def _deviations(self) -> dict[str, tuple[sp.csc_matrix, np.ndarray]]:
        return {}

    def __getstate__(self) -> dict:
        """Pickled without the shared cache of `deviations`: it holds every kind that any
        fit on these ratings asked for, and a fitted model keeps its own kind."""
        state = dict(self.__dict__)
        state.pop("_deviations", None)
        return state

    @cached_property
    def _row_moments(self) -> tuple[np.ndarray, np.ndarray]:
        """`user_means` and `user_sigmas`, computed once (the arrays never change: fits
        that share these ratings, such as the attack's runners, share the work)."""
        counts = np.diff(self.matrix.indptr)
        sums = np.asarray(self.matrix.sum(axis=1)).ravel()
        means = sums / np.maximum(counts, 1)
        rows = segment_ids(counts)
        deviations = self.matrix.data - means[rows]
        sigmas = np.sqrt(np.bincount(rows, deviations**2, self.n_users) / np.maximum(counts, 1))
        return means, np.where(sigmas == 0.0, float(np.std(self.matrix.data)), sigmas)


def deviation_matrix(matrix: sp.csr_matrix, data: np.ndarray) -> sp.csc_matrix:
    """``matrix``'s pattern with the values ``data`` (one per stored rating, in its
    order), as a CSC matrix."""
    return sp.csc_matrix(sp.csr_matrix((data, matrix.indices, matrix.indptr),
                                       shape=matrix.shape))


def check_ratings(trainset: Trainset, users: np.ndarray, items: np.ndarray,
                  ratings: np.ndarray) -> None:
    """Refuse a degenerate rating scale and a NaN or infinite rating (Surprise's `Reader`
    and `Dataset` accept both): every dprec model reads its trainset through this check,
    at `fit`.

    Parameters
    ----------
    trainset : surprise.Trainset
    users, items : ndarray of int64
        The inner user and item id of each rating.
    ratings : ndarray of float64

    Raises
    ------
    ValueError
        For a `rating_scale` whose low is not below its high (or not finite), naming
        it; for a non-finite rating, naming the raw user and item ids and the value of
        the first (in the order given) and how many there are.
    """
    low, high = trainset.rating_scale
    if not (np.isfinite(low) and np.isfinite(high) and low < high):
        raise ValueError(f"rating_scale {trainset.rating_scale!r}: the scale must be two "
                         "finite numbers (low, high) with low < high; build the Dataset "
                         "with Reader(rating_scale=(low, high))")
    bad = np.flatnonzero(~np.isfinite(ratings))
    if len(bad):
        first = bad[0]
        more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
        raise ValueError(f"rating of user {trainset.to_raw_uid(int(users[first]))!r} for item "
                         f"{trainset.to_raw_iid(int(items[first]))!r} is {ratings[first]}"
                         f"{more}: ratings must be finite numbers; drop or fix it in the data")


def ratings_matrix(rows: np.ndarray, columns: np.ndarray, ratings: np.ndarray,
                   shape: tuple[int, int]) -> sp.csr_matrix:
    """The CSR matrix of ratings given as (row, column, rating) triples: every pair
    stored once (a rating of 0 stays an explicit entry), indices sorted.

    The one policy for a pair rated twice: ``ValueError``.  Surprise's own kNN
    would count such a rating twice in its sums; summing or keeping one
    silently would give a different model, so the dataset must be
    deduplicated first.
    """
    matrix = sp.csr_matrix((ratings, (rows, columns)), shape=shape)
    if matrix.nnz != len(ratings):
        check_unique_pairs(rows, columns, shape)
    matrix.sort_indices()
    return matrix


def check_unique_pairs(rows: np.ndarray, columns: np.ndarray, shape: tuple[int, int]) -> None:
    """Raise the one `ValueError` of every model for a (user, item) pair rated twice
    (see `ratings_matrix`), naming the first such pair by inner ids."""
    keys = np.sort(np.asarray(rows, np.int64) * shape[1] + np.asarray(columns, np.int64))
    repeated = keys[1:][keys[1:] == keys[:-1]]
    if len(repeated):
        raise ValueError(f"the ratings hold {len(repeated)} repeated (user, item) pairs, e.g. "
                         f"inner ids ({repeated[0] // shape[1]}, {repeated[0] % shape[1]}); "
                         "deduplicate the dataset first")


#: the arrays built (or registered) for each live trainset, by orientation
_BUILT: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def user_item_matrix(trainset: Trainset, threshold: float | None = None) -> sp.csr_matrix:
    """The ratings of a trainset as a users x items sparse matrix.

    Parameters
    ----------
    trainset : surprise.Trainset
        Rows are inner user ids ``0..n_users-1``, columns inner item ids.
    threshold : float, optional
        If given, the 0/1 matrix of the ratings ``>= threshold`` (the pairs
        "u liked i"); only the ones are stored.

    Returns
    -------
    scipy.sparse.csr_matrix of shape (trainset.n_users, trainset.n_items)
        Without ``threshold``: float64 ratings, with exactly the rated pairs
        stored (a rating of 0 is an explicit zero).  With ``threshold``: int8
        ones.  Indices are sorted, without duplicates.

    Raises
    ------
    TypeError
        If ``trainset`` is not a Surprise ``Trainset`` or ``threshold`` not a
        real number.
    ValueError
        If ``threshold`` is NaN or infinite, or the trainset rates a pair
        twice (a dataset with duplicate rows).
    """
    if not isinstance(trainset, Trainset):
        raise TypeError(f"trainset must be a surprise.Trainset, got {type(trainset).__name__}")
    if threshold is not None:
        threshold = check_real(threshold, "threshold")
    matrix = RatingArrays.from_trainset(trainset).matrix.copy()    # the one conversion
    if threshold is not None:
        matrix.data = (matrix.data >= threshold).astype(np.int8)
        matrix.eliminate_zeros()
    return matrix
