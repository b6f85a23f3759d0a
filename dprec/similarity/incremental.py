"""Exact similarities updated row by row, for simulations that refit on changed data.

The β-kNN attack ([`dprec.attacks`][]) fits the same recommender many times
on data that differs from the original in a few users only: ``βk`` fake users
are appended, or one user's ratings are cut down.  The similarities among
the unchanged users do not move, so recomputing the whole matrix (and the
recommendation-aware sensitivity, an item-by-item loop) every time is
wasted work.  [`IncrementalSimilarity`][] keeps the matrix of the original
data and, for an update of the rows ``U``, computes only the sums between
``U`` and every user, as sparse products (``R_U`` the changed rows, ``B`` the
0/1 pattern):

    |I_uv| = B_U Bᵀ,   Σ r_u = R_U Bᵀ,   Σ r_v = B_U Rᵀ,
    Σ r_u² = R_U∘R_U Bᵀ,   Σ r_v² = B_U (R∘R)ᵀ,   Σ r_u r_v = R_U Rᵀ

then the similarities of those rows with [`similarity_from_sums`][],
the expressions of Surprise (``surprise/similarities.pyx``).  With ratings
on a binary grid (integers, halves) every sum is an exact integer multiple of
the grid, so the result is bit-identical to
[`exact_similarity_and_sums`][] on the changed data.

The recommendation-aware sensitivity of Zhu et al. (2013),
``RS(u) = max_{v ≠ u} max_{s ∈ I_uv} |sim(u, v) − sim_{−s}(u, v)|``, is
kept per pair: ``RS(u, v)`` is symmetric, an update recomputes the pairs
of the changed rows, and ``RS(u)`` is the row maximum.  So ``RS`` of an
unchanged user can only move through its pairs with the changed users
(grow by the new pairs with fakes, or change where the old maximum was a
pair with a replaced user).

The centred cosine is not a function of these sums, but with users as rows
each row is centred at its own mean: changing a user's ratings moves only
that user's unit centred row, so [`IncrementalCenteredSimilarity`][] updates
it the same way, from the co-rated sums of the unit centred rows and the pairwise
``RS`` ([`centered_pair_sensitivity`][dprec.similarity.centered.centered_pair_sensitivity]).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..utils import _kernels as kernels
from ..utils._arrays import pattern_matrix
from .centered import centered_pair_sensitivity, centered_unit_rows
from .exact import (
    SUM_SIMILARITIES,
    exact_similarity,
    exact_similarity_and_sums,
    similarity_from_sums,
    similarity_without_item,
)
from .sketches import Sketch, SketchRelease

__all__ = ["INCREMENTAL_SIMILARITIES", "IncrementalCenteredSimilarity", "IncrementalSimilarity",
           "IncrementalSketchSimilarity", "incremental_similarity", "pairwise_sensitivity",
           "row_sums"]

#: the exact similarities with an incremental update: the functions of the co-rated sums
#: ([`IncrementalSimilarity`][]) and the user-centred cosine
#: ([`IncrementalCenteredSimilarity`][])
INCREMENTAL_SIMILARITIES = (*SUM_SIMILARITIES, "centered_cosine")

#: default lower bound on ``RS(u)``, as in `recommendation_aware_sensitivity`
SENSITIVITY_FLOOR = 1e-6


def row_sums(rows: sp.csr_matrix, ratings: sp.csr_matrix,
             with_sums: bool = True) -> tuple[np.ndarray | None, ...]:
    """Co-rated sums between the users ``rows`` and every user of ``ratings``.

    Parameters
    ----------
    rows : scipy.sparse.csr_matrix of shape (n_rows, n_items)
        The ratings of the users whose rows are (re)computed.
    ratings : scipy.sparse.csr_matrix of shape (n_users, n_items)
        All users' ratings (the rows above included, at their own ids).
    with_sums : bool
        Compute ``Σ r_ui`` and ``Σ r_vi`` (pearson only); ``None`` otherwise.

    Returns
    -------
    tuple of six dense float64 arrays of shape (n_rows, n_users)
        ``(|I_uv|, Σ r_ui, Σ r_vi, Σ r_ui², Σ r_vi², Σ r_ui r_vi)`` over the
        co-rated items ``I_uv``, ``u`` a row, ``v`` a user.
    """
    rows = sp.csr_matrix(rows, dtype=np.float64)
    ratings = sp.csr_matrix(ratings, dtype=np.float64)
    rows_b, all_b = pattern_matrix(rows), pattern_matrix(ratings)
    squares_rows, squares_all = rows.multiply(rows).tocsr(), ratings.multiply(ratings).tocsr()
    products = [(rows_b, all_b), (rows, all_b), (rows_b, ratings), (squares_rows, all_b),
                (rows_b, squares_all), (rows, ratings)]
    return tuple(np.asarray((left @ right.T).toarray(), dtype=np.float64)
                 if with_sums or j not in (1, 2) else None
                 for j, (left, right) in enumerate(products))


def _similarity_rows(name: str, sums: tuple[np.ndarray, ...], ids: np.ndarray,
                     min_support: int) -> np.ndarray:
    """Similarities of the rows ``ids`` with every user, from [`row_sums`][]."""
    freq, s_row, s_all, sq_row, sq_all, prods = sums
    sim = similarity_from_sums(name, freq, s_row, s_all, sq_row, sq_all, prods)
    sim[freq < min_support] = 0.0
    sim[np.arange(len(ids)), ids] = 1.0
    return sim


def _sensitivity_rows(name: str, rows: sp.csr_matrix, ratings: sp.csr_matrix,
                      sums: tuple[np.ndarray, ...], sim_rows: np.ndarray, ids: np.ndarray,
                      min_support: int) -> np.ndarray:
    """``RS(u, v)`` for the rows ``ids`` and every user ``v``.

    The same floating-point operations as
    [`recommendation_aware_sensitivity`][dprec.similarity.recommendation_aware_sensitivity], one
    co-rated item of the rows at a time (the changed users rate few items).
    """
    freq, s_row, s_all, sq_row, sq_all, prods = sums
    by_item = sp.csc_matrix(ratings, dtype=np.float64)
    rows_by_item = sp.csc_matrix(rows, dtype=np.float64)
    out = np.zeros_like(sim_rows)
    for item in np.flatnonzero(np.diff(rows_by_item.indptr)):
        lo, hi = rows_by_item.indptr[item], rows_by_item.indptr[item + 1]
        positions, r_row = rows_by_item.indices[lo:hi], rows_by_item.data[lo:hi][:, None]
        lo, hi = by_item.indptr[item], by_item.indptr[item + 1]
        users, r_all = by_item.indices[lo:hi], by_item.data[lo:hi][None, :]
        block = np.ix_(positions, users)
        s_u, s_v = (s_row[block], s_all[block]) if name == "pearson" else (None, None)
        without = similarity_without_item(name, freq[block], s_u, s_v, sq_row[block],
                                          sq_all[block], prods[block], r_row, r_all,
                                          min_support)
        change = np.abs(sim_rows[block] - without)
        change[ids[positions][:, None] == users[None, :]] = 0.0
        out[block] = np.maximum(out[block], change)
    return out


def pairwise_sensitivity(name: str, ratings: sp.csr_matrix, sim: np.ndarray, sums: tuple,
                         min_support: int = 1) -> np.ndarray:
    r"""The matrix of per-pair sensitivities ``RS(u, v)`` (Zhu et al. 2013).

    $$
    RS(u, v) = \max_{s \in I_{uv}} |sim(u, v) - sim_{-s}(u, v)|
    $$

    (0 on the diagonal and for pairs without co-rated items).  Its row maxima,
    floored, are
    [`recommendation_aware_sensitivity`][dprec.similarity.recommendation_aware_sensitivity].

    Parameters
    ----------
    name : {"cosine", "msd", "pearson"}
    ratings : scipy.sparse.csr_matrix
        Users × items ratings.
    sim, sums
        The similarity matrix and ``(freq, s_i, sq_i, prods)`` of
        [`exact_similarity_and_sums`][].
    min_support : int

    Returns
    -------
    ndarray of shape (n_users, n_users), symmetric.
    """
    freq, s_i, sq_i, prods = sums
    n_users = ratings.shape[0]
    ids = np.arange(n_users)
    full = (freq, s_i, None if s_i is None else s_i.T, sq_i, sq_i.T, prods)
    return _sensitivity_rows(name, ratings, ratings, full, sim, ids, min_support)


@dataclass(frozen=True)
class IncrementalSimilarity:
    """An exact similarity matrix (and pairwise ``RS``) that updates by rows.

    Build it once with [`fit`][]; [`update`][] returns a new object for
    data with some users' rows replaced or new users appended, computing
    only those rows.  Objects are never modified.

    Attributes
    ----------
    name : {"cosine", "msd", "pearson"}
    min_support : int
    ratings : scipy.sparse.csr_matrix
        Users × items ratings the matrices describe.
    sim : ndarray of shape (n_users, n_users)
        Equal to [`exact_similarity`][dprec.similarity.exact_similarity] of ``ratings``.
    pair_sensitivity : ndarray of shape (n_users, n_users) or None
        ``RS(u, v)``, kept when built ``with_sensitivity``.

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> R = sp.csr_matrix([[5., 3., 0.], [4., 0., 1.]])
    >>> base = IncrementalSimilarity.fit("cosine", R, with_sensitivity=True)
    >>> fake = sp.csr_matrix([[5., 3., 0.]])
    >>> bigger = base.update(np.array([2]), fake)
    >>> bigger.sim.shape, float(bigger.sim[0, 2])
    ((3, 3), 1.0)
    """

    name: str
    min_support: int
    ratings: sp.csr_matrix
    sim: np.ndarray
    pair_sensitivity: np.ndarray | None

    @classmethod
    def fit(cls, name: str, ratings: sp.csr_matrix, min_support: int = 1,
            with_sensitivity: bool = False) -> IncrementalSimilarity:
        """The full computation ([`exact_similarity_and_sums`][]), done once."""
        if name not in SUM_SIMILARITIES:
            raise ValueError(f"name must be one of {SUM_SIMILARITIES}, got {name!r}")
        ratings = sp.csr_matrix(ratings, dtype=np.float64)
        ratings.sort_indices()
        sim, sums = exact_similarity_and_sums(name, ratings, min_support)
        pairs = (pairwise_sensitivity(name, ratings, sim, sums, min_support)
                 if with_sensitivity else None)
        return cls(name, min_support, ratings, sim, pairs)

    @property
    def n_users(self) -> int:
        """The number of rows (users) of the similarity matrix."""
        return self.ratings.shape[0]

    def sensitivity(self, floor: float = SENSITIVITY_FLOOR) -> np.ndarray:
        """``RS(u) = max(max_v RS(u, v), floor)``, as
        [`recommendation_aware_sensitivity`][dprec.similarity.recommendation_aware_sensitivity]
        gives it."""
        if self.pair_sensitivity is None:
            raise ValueError("built without with_sensitivity=True")
        if self.n_users == 0:
            return np.zeros(0)
        return np.maximum(self.pair_sensitivity.max(axis=1), floor)

    def update(self, ids: np.ndarray, rows: sp.csr_matrix,
               out: np.ndarray | None = None) -> IncrementalSimilarity:
        """The matrices for the ratings with the rows ``ids`` set to ``rows``.

        Parameters
        ----------
        ids : array of int
            Distinct user ids: existing users (``< n_users``) whose ratings are
            replaced, and/or new users ``n_users, n_users + 1, …`` (all of
            them, in any order) appended after every existing user.
        rows : scipy.sparse matrix of shape (len(ids), n_items)
            The new ratings of those users.
        out : ndarray of shape (n, n), optional
            Where to write the new similarity matrix (reusing a buffer saves
            allocating ``n²`` floats); the result then shares it.

        Returns
        -------
        IncrementalSimilarity
            For the updated ratings; ``self`` is unchanged.
        """
        ids, rows, n_users = _check_update(ids, rows, self.ratings.shape)
        ratings = _set_rows(self.ratings, ids, rows, n_users)
        sums = row_sums(rows, ratings, with_sums=self.name == "pearson")
        sim_rows = _similarity_rows(self.name, sums, ids, self.min_support)
        sim = _set_symmetric_rows(self.sim, ids, sim_rows, out)
        pairs = None
        if self.pair_sensitivity is not None:
            pair_rows = _sensitivity_rows(self.name, rows, ratings, sums, sim_rows, ids,
                                          self.min_support)
            pairs = _set_symmetric_rows(self.pair_sensitivity, ids, pair_rows)
        return IncrementalSimilarity(self.name, self.min_support, ratings, sim, pairs)


def _check_update(ids, rows, shape: tuple[int, int]) -> tuple[np.ndarray, sp.csr_matrix, int]:
    """Validate an update of the users ``ids``; return them, the rows and the new user count."""
    ids = np.asarray(ids, dtype=np.int64).ravel()
    rows = sp.csr_matrix(rows, dtype=np.float64)
    n_old, n_items = shape
    if rows.shape != (len(ids), n_items):
        raise ValueError(f"rows must have shape ({len(ids)}, {n_items}), got {rows.shape}")
    if len(np.unique(ids)) != len(ids) or (ids < 0).any():
        raise ValueError("ids must be distinct non-negative user ids")
    appended = np.sort(ids[ids >= n_old])
    if not np.array_equal(appended, n_old + np.arange(len(appended))):
        raise ValueError(f"new users must be numbered {n_old}, {n_old + 1}, … without gaps")
    return ids, rows, n_old + len(appended)


def _set_rows(ratings: sp.csr_matrix, ids: np.ndarray, rows: sp.csr_matrix,
              n_users: int) -> sp.csr_matrix:
    """``ratings`` grown to ``n_users`` rows, with the rows ``ids`` replaced by ``rows``."""
    old = ratings.tocoo()
    keep = ~np.isin(old.row, ids)
    new = rows.tocoo()
    matrix = sp.csr_matrix(
        (np.concatenate([old.data[keep], new.data]),
         (np.concatenate([old.row[keep], ids[new.row]]),
          np.concatenate([old.col[keep], new.col]))),
        shape=(n_users, ratings.shape[1]))
    matrix.sort_indices()
    return matrix


def _set_symmetric_rows(matrix: np.ndarray, ids: np.ndarray, rows: np.ndarray,
                        out: np.ndarray | None = None) -> np.ndarray:
    """A copy of the symmetric ``matrix`` (into ``out`` if given), grown to
    ``rows.shape[1]``, with the rows and columns ``ids`` set to ``rows`` (and its
    transpose)."""
    n_new, n_old = rows.shape[1], matrix.shape[0]
    if out is None:
        out = np.empty((n_new, n_new))
    elif out.shape != (n_new, n_new) or out is matrix:
        raise ValueError(f"out must be a new array of shape ({n_new}, {n_new})")
    out[:n_old, :n_old] = matrix
    out[ids, :] = rows
    out[:, ids] = rows.T
    return out


def incremental_similarity(name: str, ratings: sp.csr_matrix, min_support: int = 1,
                           with_sensitivity: bool = False) -> IncrementalSimilarity:
    """The incremental state of the exact similarity ``name`` (`INCREMENTAL_SIMILARITIES`)
    of the rows of ``ratings``: [`IncrementalCenteredSimilarity`][] for the centred cosine,
    [`IncrementalSimilarity`][] otherwise."""
    if name == "centered_cosine":
        return IncrementalCenteredSimilarity.fit(name, ratings, min_support, with_sensitivity)
    return IncrementalSimilarity.fit(name, ratings, min_support, with_sensitivity)


@dataclass(frozen=True)
class IncrementalCenteredSimilarity(IncrementalSimilarity):
    r"""The centred cosine (rows centred at their own means,
    [`dprec.similarity.centered`][]) and its pairwise ``RS``, updated by rows.

    Each row is centred at its **own** mean and scaled by its own norm, so
    replacing or appending rows changes only those rows' unit centred vectors
    $\hat c_u$: the similarity $\sum_{I_{uv}} \hat c_{ui} \hat c_{vi}$ of two
    unchanged rows does not move, nor does $RS(u, v)$ (its removal terms are the
    two rows' own,
    [`centered_pair_sensitivity`][dprec.similarity.centered.centered_pair_sensitivity]).
    An update computes the changed rows' co-rated sums against every row (the
    compiled pair loop when enabled, in the order of a full fit: the same numbers;
    else sparse products, to rounding) and their pairs' ``RS``.  With users as
    rows (user-based) these are the β-kNN attack's changes: fake users appended,
    one user's ratings cut down.  (Item-based, a user's ratings move the means of
    the items they rate, which this class does not follow.)

    ``fit`` costs one full computation and, ``with_sensitivity``, the ``n × n``
    pairwise ``RS`` (its row maxima are
    [`centered_cosine_sensitivity`][dprec.similarity.centered.centered_cosine_sensitivity]).

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> R = sp.csr_matrix([[5., 3., 1.], [4., 0., 1.]])
    >>> base = IncrementalCenteredSimilarity.fit("centered_cosine", R)
    >>> bigger = base.update(np.array([2]), sp.csr_matrix([[5., 3., 1.]]))
    >>> bigger.sim.shape, round(float(bigger.sim[0, 2]), 12)
    ((3, 3), 1.0)
    """

    @classmethod
    def fit(cls, name: str, ratings: sp.csr_matrix, min_support: int = 1,
            with_sensitivity: bool = False) -> IncrementalCenteredSimilarity:
        """The full computation, done once: [`exact_similarity`][dprec.similarity.exact_similarity]
        (with its sums, and the pairwise ``RS``, ``with_sensitivity``)."""
        if name != "centered_cosine":
            raise ValueError(f"name must be 'centered_cosine', got {name!r}")
        ratings = sp.csr_matrix(ratings, dtype=np.float64)
        ratings.sort_indices()
        if not with_sensitivity:
            return cls(name, min_support, ratings, exact_similarity(name, ratings, min_support),
                       None)
        sim, (freq, s_i, _, _) = exact_similarity_and_sums(name, ratings, min_support)
        pairs = centered_pair_sensitivity(ratings, np.arange(ratings.shape[0]), sim, s_i,
                                          s_i.T, freq, min_support)
        return cls(name, min_support, ratings, sim, pairs)

    def update(self, ids: np.ndarray, rows: sp.csr_matrix,
               out: np.ndarray | None = None) -> IncrementalCenteredSimilarity:
        """The matrices with the rows ``ids`` set to ``rows`` (as
        [`IncrementalSimilarity.update`][]); ``self`` is unchanged."""
        ids, rows, n_users = _check_update(ids, rows, self.ratings.shape)
        ratings = _set_rows(self.ratings, ids, rows, n_users)
        freq, s_i, s_j, prods = _centered_row_sums(centered_unit_rows(ratings), ids)
        sim_rows = np.clip(prods, -1.0, 1.0)
        sim_rows[freq < self.min_support] = 0.0
        sim_rows[np.arange(len(ids)), ids] = 1.0
        sim = _set_symmetric_rows(self.sim, ids, sim_rows, out)
        pairs = None
        if self.pair_sensitivity is not None:
            pair_rows = centered_pair_sensitivity(ratings, ids, sim_rows, s_i, s_j, freq,
                                                  self.min_support)
            pairs = _set_symmetric_rows(self.pair_sensitivity, ids, pair_rows)
        return IncrementalCenteredSimilarity(self.name, self.min_support, ratings, sim, pairs)


def _centered_row_sums(unit: sp.csr_matrix, ids: np.ndarray) -> tuple[np.ndarray, ...]:
    """``(|I_uv|, Σ ĉ_ui, Σ ĉ_vi, Σ ĉ_ui ĉ_vi)`` over the co-rated columns, ``u`` in ``ids``,
    ``v`` every row of the unit centred rows ``unit``: float64 ``(len(ids), n)``
    arrays, by the compiled pair loop (``u``'s columns in order, as a full fit sums
    them) or by sparse products ([`row_sums`][])."""
    if not kernels.enabled():
        freq, s_i, s_j, _, _, prods = row_sums(unit[ids], unit)
        return freq, s_i, s_j, prods
    freq, sq_i, prods, s_i, s_j = (np.zeros((len(ids), unit.shape[0])) for _ in range(5))
    by_row, by_column = kernels.rating_triples(unit)
    kernels.add_co_rated_sums(ids, by_row, by_column, (freq, sq_i, None, prods, s_i, s_j))
    return freq, s_i, s_j, prods


@dataclass(frozen=True)
class IncrementalSketchSimilarity:
    """A sketch backend's similarity matrix that updates by rows.

    Local DP: every user sketches their own data once, and
    with an ``int`` ``random_state`` a backend uses the same public hash
    functions (projection) and noise seed on every call, a row's noise
    depending on its key only.  So adding users, or re-sketching one, only
    needs their sketches and their estimates against everybody's:
    ``backend.estimate(S_rows, S_all)``.  With the rows' own indices as keys
    the result equals ``backend.similarity_matrix`` of the changed ratings
    (up to floating-point rounding of the products).

    Attributes
    ----------
    backend : SketchBackend
        With an integer ``random_state`` (and, for the private MinHash
        family, an explicit ``tau``: computed from the data it would change
        with the data).
    ratings : scipy.sparse.csr_matrix
    sketches : Sketch
        Every user's released sketch.
    sim : ndarray of shape (n_users, n_users)
    """

    backend: object
    ratings: sp.csr_matrix
    sketches: object
    sim: np.ndarray
    columns: np.ndarray | None = None

    @classmethod
    def fit(cls, backend, ratings: sp.csr_matrix,
            columns: np.ndarray | None = None) -> IncrementalSketchSimilarity:
        """Sketch every user once and estimate all pairs (diagonal 1); ``columns`` are
        the items' public keys ([`dprec.similarity.sketches.check_columns`][])."""
        if isinstance(backend.random_state, bool) or \
                not isinstance(backend.random_state, (int, np.integer)):
            raise ValueError("the backend needs an int random_state (the same hash functions "
                             "and noise seed on every call)")
        if getattr(backend, "tau", 0) is None:
            raise ValueError("the backend needs an explicit tau: a tau computed from the data "
                             "changes when users are added")
        ratings = sp.csr_matrix(ratings, dtype=np.float64)
        sketches = backend.sketch(backend.similarity_input(ratings), columns=columns)
        sim = backend.estimate(sketches)
        np.fill_diagonal(sim, 1.0)
        return cls(backend, ratings, sketches, sim, columns)

    def sensitivity(self) -> np.ndarray:
        """The score sensitivity the private selectors use: the similarity range."""
        return np.full(self.ratings.shape[0], float(self.backend.score_range))

    def release(self) -> SketchRelease:
        """What the users released: the backend's entry, and who has a sketch."""
        return SketchRelease(self.backend.privacy(), np.asarray(self.sketches.valid).copy())

    def sketch(self, rows: sp.csr_matrix, keys: np.ndarray):
        """The backend's sketches of ``rows`` with noise ``keys`` (one call: one draw
        of the public hash functions, however many rows)."""
        rows = sp.csr_matrix(rows, dtype=np.float64)
        return self.backend.sketch(self.backend.similarity_input(rows),
                                   keys=np.asarray(keys, dtype=np.int64), columns=self.columns)

    def update(self, ids: np.ndarray, rows: sp.csr_matrix, keys: np.ndarray | None = None,
               precomputed=None, out: np.ndarray | None = None) -> IncrementalSketchSimilarity:
        """The matrix with the users ``ids`` (re)sketched from ``rows``.

        ``ids`` and ``out`` as in [`IncrementalSimilarity.update`][];
        ``keys`` are the new sketches' noise keys (default: ``ids``, what a
        full computation uses); ``precomputed``, if given, is
        ``self.sketch(rows, keys)`` computed beforehand.  ``self`` is unchanged.
        """
        ids, rows, n_new = _check_update(ids, rows, self.ratings.shape)
        n_old = self.ratings.shape[0]
        ratings = _set_rows(self.ratings, ids, rows, n_new)
        new = precomputed if precomputed is not None else \
            self.sketch(rows, ids if keys is None else keys)
        values = np.empty((n_new, self.sketches.width), dtype=self.sketches.values.dtype)
        valid = np.empty(n_new, dtype=bool)
        values[:n_old], valid[:n_old] = self.sketches.values, self.sketches.valid
        values[ids], valid[ids] = new.values, new.valid
        sketches = Sketch(values, valid, self.sketches.backend, self.sketches.params)
        block = self.backend.estimate(new, sketches)
        block[np.arange(len(ids)), ids] = 1.0
        return IncrementalSketchSimilarity(self.backend, ratings, sketches,
                                           _set_symmetric_rows(self.sim, ids, block, out),
                                           self.columns)
