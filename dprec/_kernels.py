"""Compiled loops for the two hot paths of exact kNN, when Numba is installed.

Two kernels, each replacing a chain of whole-array numpy passes by one
pass over the data (installed with ``pip install 'dprec[fast]'``; without
Numba, :data:`AVAILABLE` is False and dprec runs its numpy code, which gives
the same numbers):

- :func:`add_co_rated_sums`: the co-rated sums of a block of rows against every
  row, by the rows' ratings and each rated column's raters: work
  ``Σ_{u ∈ block} Σ_{i ∈ I_u} |U_i|`` (the pairs that share a column), not
  the ``nnz × block`` of a sparse-times-dense product or the ``n² m`` of a
  dense one.  Sums of integers (every rating in Surprise's built-in
  datasets) are exact in float64 whatever the order, so the sums equal the
  numpy products' bit for bit; other ratings agree up to the rounding of
  a float64 sum.
- :func:`stable_top`: per query, the ``prefix`` most similar of its
  candidates (the raters of its item), in the order of
  :func:`dprec._arrays.stable_descending_order` (descending similarity,
  ties in candidate order: Surprise's ``heapq.nlargest``), through a
  min-heap of the ``prefix`` best so far: the candidates' similarities are
  read once and never laid out as a padded matrix.

The kernels release the GIL (``nogil``), so :func:`dprec._threads.map_blocks`
runs blocks of them on every core; their machine code is cached on disk
(``cache=True``) after the first call.  ``DPREC_DISABLE_NUMBA=1`` turns them
off (the tests run both paths).
"""

from __future__ import annotations

import os
import time

import numpy as np
import scipy.sparse as sp

try:  # pragma: no cover - which branch runs depends on the environment
    if os.environ.get("DPREC_DISABLE_NUMBA", "").strip() not in ("", "0"):
        raise ImportError("DPREC_DISABLE_NUMBA is set")
    from numba import njit
except ImportError:
    njit = None

#: whether the compiled kernels can run (Numba importable and not disabled)
AVAILABLE = njit is not None


def enabled() -> bool:
    """Whether dprec uses the kernels now (:data:`AVAILABLE`, unless the tests turned
    them off with :func:`set_enabled`)."""
    return AVAILABLE and _STATE["enabled"]


def set_enabled(value: bool) -> bool:
    """Use the kernels (``True``, when available) or the numpy code; returns the
    previous setting.  For tests and benchmarks that compare both paths."""
    previous = _STATE["enabled"]
    _STATE["enabled"] = bool(value)
    return previous


_STATE = {"enabled": True}


def _co_rated_rows_py(rows, upper, indptr, indices, data, column_ptr, column_rows,
                      column_data, freq, sq_i, sq_j, prods, s_i, s_j):  # pragma: no cover
    """For ``a, u = enumerate(rows)`` and every ``v`` (``v >= u`` if ``upper``; each
    column's rows sorted): the sums over ``I_u ∩ I_v`` of ``1``, ``r_ui²``, ``r_vi²``,
    ``r_ui r_vi``, ``r_ui``, ``r_vi`` added into row ``a`` of the outputs (zeroed by
    the caller; an output with no rows is not computed)."""
    with_freq, with_sq_j = freq.shape[0] > 0, sq_j.shape[0] > 0
    with_s_i, with_s_j = s_i.shape[0] > 0, s_j.shape[0] > 0
    for a in range(len(rows)):
        u = rows[a]
        for p in range(indptr[u], indptr[u + 1]):
            column, r = indices[p], data[p]
            r2 = r * r
            first, last = column_ptr[column], column_ptr[column + 1]
            if upper:
                first += np.searchsorted(column_rows[first:last], u)
            for q in range(first, last):
                v, s = column_rows[q], column_data[q]
                sq_i[a, v] += r2
                prods[a, v] += r * s
                if with_freq:
                    freq[a, v] += 1.0
                if with_sq_j:
                    sq_j[a, v] += s * s
                if with_s_i:
                    s_i[a, v] += r
                if with_s_j:
                    s_j[a, v] += s


def _before(v1, p1, v2, p2):  # pragma: no cover - compiled
    """Whether candidate ``(v1, p1)`` comes after ``(v2, p2)`` in the stable descending
    order: a lower similarity, or the same one at a later position."""
    return v1 < v2 or (v1 == v2 and p1 > p2)


def _sift_down(values, order, size, value, position):  # pragma: no cover - compiled
    """Put ``(value, position)`` at the root of the min-heap ``values[:size]`` (the last
    in the stable order on top) and sift it down."""
    i = 0
    while True:
        child = 2 * i + 1
        if child >= size:
            break
        right = child + 1
        if right < size and _before(values[right], order[right], values[child], order[child]):
            child = right
        if not _before(values[child], order[child], value, position):
            break
        values[i], order[i] = values[child], order[child]
        i = child
    values[i], order[i] = value, position


def _stable_top_py(sim, sim_rows, starts, lengths, candidates, prefix,
                   order, values):  # pragma: no cover - compiled
    """Per query ``q``: its candidates are ``candidates[starts[q]:starts[q] + lengths[q]]``
    (row ids), with similarities ``sim[sim_rows[q], candidate]``; write the positions
    (within the query's candidates) of the ``prefix`` first in the stable descending
    order into ``order[q]``, in that order, and their similarities into ``values[q]``;
    ``-1`` and ``-inf`` pad a query with fewer candidates.

    A min-heap of the ``prefix`` best so far (its root the last of them in the
    order); a candidate enters only if strictly more similar than the root (an
    equal one comes later, so after it): ``O(n + entries · log prefix)``, then
    a heap sort of the kept ``prefix``.
    """
    for q in range(len(starts)):
        row, start, n = sim_rows[q], starts[q], lengths[q]
        heap_values, heap_order = values[q], order[q]
        size = 0
        for j in range(n):
            s = sim[row, candidates[start + j]]
            if size < prefix:                     # sift up
                i = size
                size += 1
                while i > 0:
                    parent = (i - 1) // 2
                    if not _before(s, j, heap_values[parent], heap_order[parent]):
                        break
                    heap_values[i], heap_order[i] = heap_values[parent], heap_order[parent]
                    i = parent
                heap_values[i], heap_order[i] = s, j
            elif s > heap_values[0]:
                _sift_down(heap_values, heap_order, size, s, j)
        for end in range(size - 1, 0, -1):        # the root (last) to the end, in turn
            value, position = heap_values[end], heap_order[end]
            heap_values[end], heap_order[end] = heap_values[0], heap_order[0]
            _sift_down(heap_values, heap_order, end, value, position)
        for slot in range(size, prefix):
            heap_values[slot] = -np.inf
            heap_order[slot] = -1


if AVAILABLE:
    _co_rated_rows = njit(nogil=True, cache=True)(_co_rated_rows_py)
    _before = njit(inline="always")(_before)
    _sift_down = njit(nogil=True, inline="always")(_sift_down)
    _stable_top = njit(nogil=True, cache=True)(_stable_top_py)


def rating_triples(ratings: sp.csr_matrix) -> tuple[tuple, tuple]:
    """``(by_row, by_column)``: the ratings as ``(ptr, ids, values)`` triples (int64,
    int64, float64), CSR by row and by column, as :func:`add_co_rated_sums` reads them
    (stored zeros are ratings and stay)."""
    def triple(matrix) -> tuple:
        if not matrix.has_sorted_indices:
            matrix = matrix.sorted_indices()          # a sorted copy: the input is kept
        return (matrix.indptr.astype(np.int64), matrix.indices.astype(np.int64),
                matrix.data.astype(np.float64))

    return triple(ratings), triple(ratings.tocsc())


def add_co_rated_sums(rows: np.ndarray, by_row: tuple, by_column: tuple,
                      sums: tuple, upper: bool = False) -> None:
    """Add into row ``a`` of ``sums = (freq, sq_i, sq_j, prods, s_i, s_j)`` the sums over
    ``I_u ∩ I_v`` (``u = rows[a]``, every ``v``, or only ``v >= u`` with ``upper``) of
    ``1``, ``r_ui²``, ``r_vi²``, ``r_ui r_vi``, ``r_ui`` and ``r_vi``; an entry ``None`` is
    not computed (``sq_i`` and ``prods`` always are).

    ``sums`` are ``(len(rows), n_rows)`` arrays, zeroed or partial sums
    (C-contiguous rows), of one dtype but for ``freq``; ``by_row`` and
    ``by_column`` come from :func:`rating_triples`.  float32 sums are exact
    only when every partial sum is an integer below 2^24 (the caller checks,
    as for BLAS products).
    """
    rows = np.asarray(rows, dtype=np.int64)
    shape = (len(rows), len(by_row[0]) - 1)
    if len(rows) and (rows.min() < 0 or rows.max() >= shape[1]):
        raise ValueError(f"rows must be ids in [0, {shape[1]})")
    if sums[1] is None or sums[3] is None:
        raise ValueError("sq_i and prods are always computed: give arrays for them")
    if any(m is not None and (m.shape != shape or not m.flags.c_contiguous
                              or (j and m.dtype != sums[1].dtype))
           for j, m in enumerate(sums)):
        raise ValueError(f"sums must be C-contiguous {shape} arrays, all but freq of one "
                         "dtype")
    empty = np.zeros((0, 0), dtype=sums[1].dtype)
    freq = np.zeros((0, 0), dtype=np.float32) if sums[0] is None else sums[0]
    _co_rated_rows(rows, upper, *by_row, *by_column, freq,
                   *(empty if m is None else m for m in sums[1:]))


def stable_top(sim: np.ndarray, sim_rows: np.ndarray, starts: np.ndarray,
               lengths: np.ndarray, candidates: np.ndarray,
               prefix: int) -> tuple[np.ndarray, np.ndarray]:
    """``(order, values)``, both ``(len(starts), prefix)``: the ``prefix`` most similar
    candidates of each query, as positions among its candidates (``-1`` past its
    last) and their similarities (``-inf`` there); see the module docstring.

    The query rows and candidate ranges are checked; the candidates themselves
    must be column ids of ``sim`` and its values finite (not checked: an
    ``O(nnz)`` pass per call; dprec's callers pass the trainset's raters).
    """
    n = len(starts)
    order = np.empty((n, prefix), dtype=np.int64)
    values = np.empty((n, prefix), dtype=np.float64)
    if n and prefix:
        if (np.max(sim_rows) >= len(sim) or np.min(sim_rows) < 0 or np.min(starts) < 0
                or np.min(lengths) < 0 or np.max(starts + lengths) > len(candidates)):
            raise ValueError("stable_top: query rows or candidate ranges out of bounds")
        _stable_top(sim, np.asarray(sim_rows, dtype=np.int64),
                    np.asarray(starts, dtype=np.int64), np.asarray(lengths, dtype=np.int64),
                    candidates, prefix, order, values)
    return order, values


def warm_up() -> float:
    """Load the kernels' machine code (compiling it on first use, then from the disk
    cache) for the argument types dprec passes, on tiny inputs; returns the seconds
    taken (0 when the kernels are off).  About 0.3 s once per process with a warm
    cache: a timing that should not include it (``dprec demo``) calls this first."""
    if not enabled():
        return 0.0
    start = time.perf_counter()
    by_row, by_column = rating_triples(sp.csr_matrix(np.array([[1.0, 0.0, 2.0],
                                                              [3.0, 4.0, 0.0]])))
    for counts, dtype in ((np.float32, np.float32), (np.float32, np.float64),
                          (np.float64, np.float64)):
        sums = (np.zeros((2, 2), counts), *(np.zeros((2, 2), dtype) for _ in range(5)))
        add_co_rated_sums(np.arange(2), by_row, by_column, sums, upper=True)
    stable_top(np.zeros((2, 2)), np.arange(2), np.zeros(2, np.int64), np.ones(2, np.int64),
               np.arange(2), 1)
    return time.perf_counter() - start
