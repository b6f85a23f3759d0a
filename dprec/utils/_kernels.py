"""Compiled loops for the hot paths of exact kNN, when Numba is installed.

Each kernel replaces a chain of whole-array numpy passes by one pass over
the data (Numba is one of dprec's dependencies; where it cannot be imported,
`enabled` is False and dprec runs its numpy code, which gives the same numbers):

- `add_co_rated_sums`: the co-rated sums of a block of rows against every row, by the
  rows' ratings and each rated column's raters: work ``Σ_{u ∈ block} Σ_{i ∈ I_u} |U_i|``
  (the pairs that share a column), not a sparse product's ``nnz × block``.  Sums of
  integers are exact in float64 whatever the order: the numpy products' bit for bit.
- `similarity_rows`: the same pairs, each row's sums turned into its
  similarities at once (no ``n × n`` sums).
- `centered_sensitivity`: the centred cosine's ``RS``, removals that cannot matter skipped.
- `stable_top`: per query, the ``prefix`` most similar of its candidates (the raters of
  its item), in the order of `dprec.utils._arrays.stable_descending_order` (Surprise's
  ``heapq.nlargest``): a count by value bucket leaves one bucket to resolve, by a
  min-heap; no padded matrix of the candidates' similarities.
- `weighted_means`: each query's weighted mean of its chosen
  neighbours' ratings, added one neighbour at a time as Surprise adds them.

The kernels release the GIL (``nogil``), so `dprec.utils._threads.map_blocks`
runs blocks of them on every core; their machine code is compiled by the
first process that calls them (10–40 s on 2 cores) and cached on disk (``cache=True``)
for the next ones (`warm_up`).  Numba is imported at the first `enabled` of a process
(0.3 s that ``--help`` does not pay).  ``DPREC_DISABLE_NUMBA=1`` turns them off (the
tests run both paths).
"""

from __future__ import annotations

import importlib.util
import os
import threading
import time
from collections.abc import Callable

import numpy as np
import scipy.sparse as sp

#: whether the compiled kernels can run: Numba installed and not disabled
AVAILABLE = (os.environ.get("DPREC_DISABLE_NUMBA", "").strip() in ("", "0")
             and importlib.util.find_spec("numba") is not None)


def enabled() -> bool:
    """Whether dprec uses the kernels now (`AVAILABLE`, unless the tests turned
    them off with `set_enabled`)."""
    return AVAILABLE and _STATE["enabled"] and _wrapped()


def set_enabled(value: bool) -> bool:
    """Use the kernels (``True``, when available) or the numpy code; returns the
    previous setting.  For tests and benchmarks that compare both paths."""
    previous = _STATE["enabled"]
    _STATE["enabled"] = bool(value)
    return previous


_STATE: dict = {"enabled": True}
_WRAPPING = threading.Lock()


def _co_raters(column_ptr, column_rows, column, u, upper):  # pragma: no cover - compiled
    """``(first, last)``: the range of ``column``'s rows (sorted) that pair with row
    ``u``: all of them, or only ``v >= u`` with ``upper``."""
    first, last = column_ptr[column], column_ptr[column + 1]
    if upper:
        first += np.searchsorted(column_rows[first:last], u)
    return first, last


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
            r = data[p]
            r2 = r * r
            first, last = _co_raters(column_ptr, column_rows, indices[p], u, upper)
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


def _similarity_of(kind, freq, sq_i, sq_j, prods, s_i, s_j):  # pragma: no cover - compiled
    """The similarity ``kind`` (`SIMILARITY_KINDS`) of one pair from its
    co-rated sums: [`dprec.similarity.exact.similarity_from_sums`][], operation for
    operation (0 where a denominator vanishes)."""
    if kind == 3:                                   # centred cosine: sums of unit rows
        return min(max(prods, -1.0), 1.0)
    if kind == 0:                                   # cosine
        denominator = np.sqrt(sq_i * sq_j)
        return prods / denominator if denominator != 0.0 else 0.0
    if kind == 1:                                   # msd
        if freq == 0.0:
            return 0.0
        denominator = (sq_i + sq_j - 2.0 * prods) / freq + 1.0
        return 1.0 / denominator if denominator != 0.0 else 0.0
    numerator = freq * prods - s_i * s_j            # pearson
    var_i = max(freq * sq_i - s_i * s_i, 0.0)
    var_j = max(freq * sq_j - s_j * s_j, 0.0)
    denominator = np.sqrt(var_i * var_j)
    return numerator / denominator if denominator != 0.0 else 0.0


def _similarity_rows_py(rows, upper, kind, min_support, indptr, indices, data, column_ptr,
                        column_rows, column_data, out):  # pragma: no cover - compiled
    """For ``a, u = enumerate(rows)``: ``out[a, v]`` the similarity ``kind`` of ``u`` and
    every ``v`` sharing a column with it (``v >= u`` if ``upper``), 0 below
    ``min_support`` co-rated columns, and ``out[a, u] = 1``; the other cells are
    not written (the caller zeroes them: no co-rated column, similarity 0).

    The sums of one row are accumulated in a per-call ``n × 6`` buffer (one
    cache line per other row), only at the rows it touches, and reset there;
    ``Σ r_ui`` and ``Σ r_vi`` only for pearson, the one similarity that
    reads them.
    """
    acc = np.zeros((out.shape[1], 6))
    touched = np.empty(out.shape[1], dtype=np.int64)
    for a in range(len(rows)):
        u = rows[a]
        n_touched = 0
        for p in range(indptr[u], indptr[u + 1]):
            r = data[p]
            r2 = r * r
            first, last = _co_raters(column_ptr, column_rows, indices[p], u, upper)
            for q in range(first, last):
                v, s = column_rows[q], column_data[q]
                if acc[v, 0] == 0.0:
                    touched[n_touched] = v
                    n_touched += 1
                acc[v, 0] += 1.0
                acc[v, 1] += r2
                acc[v, 2] += s * s
                acc[v, 3] += r * s
                if kind == 2:
                    acc[v, 4] += r
                    acc[v, 5] += s
        for t in range(n_touched):
            v = touched[t]
            freq = acc[v, 0]
            out[a, v] = (0.0 if freq < min_support else
                         _similarity_of(kind, freq, acc[v, 1], acc[v, 2], acc[v, 3],
                                        acc[v, 4], acc[v, 5]))
            acc[v, :] = 0.0
        out[a, u] = 1.0


def _change(s, c_sum, c, f, g, coefficient, inverse, support):  # pragma: no cover
    """How far a centred cosine ``s`` moves without a rating ([`dprec.similarity.centered`][])."""
    new = min(max((s + g * c_sum - coefficient * c) * inverse, -1.0), 1.0)
    return abs(s - (0.0 if f < support else new))


def _centered_sensitivity_py(rows, indptr, indices, data, column_ptr, column_rows,
                             column_data, terms, column_terms, order, scale, sim, s_i, s_j,
                             freq, support, out):  # pragma: no cover - compiled
    """``out[a]``: the largest `_change` of ``sim[a, v]`` (``u = rows[a]``, ``v != u``,
    ``freq[a, v] >= support``: else 0 either way) by removing a rating of ``u`` or ``v``;
    the arguments and the bound ``w max(|sim|, |C|)`` that skips the rest of a row (its
    ratings by decreasing ``w``): `dprec.similarity.centered.centered_cosine_sensitivity`."""
    (g, coefficient, inverse, weight), (g_c, coefficient_c, inverse_c) = terms, column_terms
    stamp, column_stamp = np.full(sim.shape[1], -1), np.full(len(column_ptr) - 1, -1)
    for a in range(len(rows)):
        u, best = rows[a], 0.0
        for p in range(indptr[u], indptr[u + 1]):          # u's or v's rating of a column
            column_stamp[indices[p]] = u                    # both rated
            for q in range(column_ptr[indices[p]], column_ptr[indices[p] + 1]):
                v = column_rows[q]
                if v != u and freq[a, v] >= support:
                    f = freq[a, v] - 1.0
                    best = max(best, _change(sim[a, v], s_j[a, v], column_data[q], f, g[p],
                                             coefficient[p], inverse[p], support),
                               _change(sim[a, v], s_i[a, v], data[p], f, g_c[q],
                                       coefficient_c[q], inverse_c[q], support))
        for k in range(indptr[u], indptr[u + 1]):          # u's, of a column v did not rate
            p = order[k]
            if weight[p] * scale[a] * 1.000001 <= best:
                break
            for q in range(column_ptr[indices[p]], column_ptr[indices[p] + 1]):
                stamp[column_rows[q]] = p
            for v in range(sim.shape[1]):
                if v != u and stamp[v] != p and freq[a, v] >= support:
                    best = max(best, _change(sim[a, v], s_j[a, v], 0.0, freq[a, v], g[p],
                                             coefficient[p], inverse[p], support))
        for v in range(sim.shape[1]):                        # v's, of a column u did not rate
            if v != u and freq[a, v] >= support:
                for k in range(indptr[v], indptr[v + 1]):
                    e = order[k]
                    if weight[e] * max(abs(sim[a, v]), abs(s_i[a, v])) * 1.000001 <= best:
                        break
                    if column_stamp[indices[e]] != u:
                        best = max(best, _change(sim[a, v], s_i[a, v], 0.0, freq[a, v], g[e],
                                                 coefficient[e], inverse[e], support))
        out[a] = best


def _before(v1, p1, v2, p2):  # pragma: no cover - compiled
    """Whether candidate ``(v1, p1)`` comes after ``(v2, p2)`` in the stable descending
    order: a lower similarity, or the same one at a later position."""
    return v1 < v2 or (v1 == v2 and p1 > p2)


def _sift_down(values, order, size, i, value, position):  # pragma: no cover - compiled
    """Put ``(value, position)`` at node ``i`` of the min-heap ``values[:size]`` (the
    last in the stable order on top) and sift it down."""
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


def _heap_top(values, positions, m, k, out_values, out_order):  # pragma: no cover
    """The ``k`` first of ``(values, positions)[:m]`` (positions increasing) in the stable
    descending order, into ``out_*[:min(m, k)]`` as a min-heap (unsorted).

    The heap is built from the first ``k`` at once; a later candidate enters
    only if strictly more similar than the root (an equal one comes later, so
    after it): ``O(m + entries · log k)``.
    """
    size = min(m, k)
    for j in range(size):
        out_values[j], out_order[j] = values[j], positions[j]
    for i in range(size // 2 - 1, -1, -1):
        _sift_down(out_values, out_order, size, i, out_values[i], out_order[i])
    for j in range(size, m):
        if values[j] > out_values[0]:
            _sift_down(out_values, out_order, size, 0, values[j], positions[j])


#: value buckets of `stable_top`'s first pass
_BUCKETS = 128


def _bucket_top(values, n, lo, scale, k, bucket, counts, placed_values, placed_order,
                out_values, out_order):  # pragma: no cover - compiled
    """The ``k < n`` first of ``values[:n]`` (positions ``0..n-1``) in the stable order,
    into ``out_*[:k]``, by the buckets ``⌊(s − lo) · scale⌋`` (``scale`` =
    `_BUCKETS` over the values' finite, positive width): the buckets above the
    one where the count from the top reaches ``k`` are all in, placed highest bucket
    first (sorted but within buckets), the rest are that edge bucket's first by
    `_heap_top`.  ``bucket`` and ``placed_*`` (``n`` and ``n + 1`` long) and
    ``counts`` (`_BUCKETS`) are scratch space.

    The placement has no branch: each bucket's next slot is kept in
    ``counts``, the edge bucket's values go after those above it, and every
    bucket below the edge writes one slot past them, which is overwritten.
    """
    counts[:] = 0
    for j in range(n):
        b = max(0, min(np.int64((values[j] - lo) * scale), _BUCKETS - 1))  # NaN: in bounds
        bucket[j] = b
        counts[b] += 1
    above, edge = 0, _BUCKETS - 1
    while above + counts[edge] < k:
        above += counts[edge]
        edge -= 1
    n_edge = counts[edge]
    first = 0                   # each bucket above the edge starts where the higher end
    for b in range(_BUCKETS - 1, edge, -1):
        first, counts[b] = first + counts[b], first
    counts[edge] = above
    counts[:edge] = above + n_edge
    for j in range(n):
        b = bucket[j]
        slot = counts[b]
        placed_values[slot], placed_order[slot] = values[j], j
        counts[b] = slot + (b >= edge)
    out_values[:above], out_order[:above] = placed_values[:above], placed_order[:above]
    _heap_top(placed_values[above:], placed_order[above:], n_edge, k - above,
              out_values[above:], out_order[above:])


def _stable_top_py(sim, sim_rows, starts, lengths, candidates, prefix,
                   order, values):  # pragma: no cover - compiled
    """Per query ``q``: its candidates are ``candidates[starts[q]:starts[q] + lengths[q]]``
    (row ids), with similarities ``sim[sim_rows[q], candidate]``; write the positions
    (within the query's candidates) of the ``prefix`` first in the stable descending
    order into ``order[q]``, in that order, and their similarities into ``values[q]``;
    ``-1`` and ``-inf`` pad a query with fewer candidates.

    With more than ``prefix`` candidates, `_bucket_top` over
    `_BUCKETS` equal-width buckets between their minimum ``lo`` and
    maximum ``hi`` (``⌊(s − lo) · B / (hi − lo)⌋`` is non-decreasing in ``s``,
    so a higher bucket holds only higher values; `_heap_top` alone
    when that width is 0, tiny or overflows): most candidates are passed
    over in a few branch-free sweeps.  The kept ones (at most ``prefix``,
    sorted but within buckets) are then sorted by insertion.
    """
    longest = 1
    for q in range(len(starts)):
        longest = max(longest, lengths[q])
    gathered, bucket = np.empty(longest), np.empty(longest, dtype=np.int64)
    positions = np.arange(longest)
    placed_values, placed_order = np.empty(longest + 1), np.empty(longest + 1, dtype=np.int64)
    counts = np.zeros(_BUCKETS, dtype=np.int64)
    for q in range(len(starts)):
        start, n = starts[q], lengths[q]
        row = sim[sim_rows[q]]
        kept_values, kept_order = values[q], order[q]
        size = min(n, prefix)
        if n <= prefix:
            for j in range(n):
                kept_values[j], kept_order[j] = row[candidates[start + j]], j
        else:
            lo, hi = np.inf, -np.inf
            for j in range(n):
                s = row[candidates[start + j]]
                gathered[j] = s
                lo, hi = min(lo, s), max(hi, s)
            width = hi - lo
            if not 1e-300 < width < np.inf:   # one bucket (all equal, or an extreme spread)
                _heap_top(gathered, positions, n, prefix, kept_values, kept_order)
            else:
                _bucket_top(gathered, n, lo, _BUCKETS / width, prefix, bucket, counts,
                            placed_values, placed_order, kept_values, kept_order)
        for a in range(1, size):                   # insertion sort, in the stable order
            value, position = kept_values[a], kept_order[a]
            b = a
            while b > 0 and _before(kept_values[b - 1], kept_order[b - 1], value, position):
                kept_values[b], kept_order[b] = kept_values[b - 1], kept_order[b - 1]
                b -= 1
            kept_values[b], kept_order[b] = value, position
        for slot in range(size, prefix):
            kept_values[slot] = -np.inf
            kept_order[slot] = -1


def _weighted_means_py(positions, weights, starts, values, min_sim, shift,
                       count):  # pragma: no cover - compiled
    """Per query ``q``: ``shift[q] = Σ w · values[starts[q] + p] / Σ |w|`` over its
    neighbours ``(p, w)`` in ``(positions[q], weights[q])`` with ``p >= 0``,
    ``w != 0`` and ``w > min_sim``, added in row order (0 where the denominator is
    0); ``count[q]`` how many were added.  Returns whether every slot
    ``starts[q] + p`` was within ``values`` (else the outputs are not all written)."""
    for q in range(positions.shape[0]):
        numerator = denominator = 0.0
        n = 0
        for j in range(positions.shape[1]):
            p, w = positions[q, j], weights[q, j]
            if p >= 0 and w != 0.0 and w > min_sim:
                slot = starts[q] + p
                if slot >= len(values) or slot < 0:
                    return False
                numerator += w * values[slot]
                denominator += abs(w)
                n += 1
        shift[q] = numerator / denominator if denominator != 0.0 else 0.0
        count[q] = n
    return True


def _wrapped() -> bool:
    """Import Numba and wrap the kernels (each after the helpers it inlines), once per
    process: `_STATE["njit"]`; False where Numba cannot be imported."""
    global _co_raters, _co_rated_rows, _similarity_of, _similarity_rows, _change, _before
    global _centered_sensitivity, _sift_down, _heap_top, _bucket_top, _stable_top
    global _weighted_means
    with _WRAPPING:
        if "njit" in _STATE:
            return _STATE["njit"] is not None
        try:
            from numba import njit
        except Exception:  # pragma: no cover - installed but cannot be imported
            _STATE["njit"] = None
            return False
        _co_raters = njit(inline="always")(_co_raters)
        _co_rated_rows = njit(nogil=True, cache=True)(_co_rated_rows_py)
        _similarity_of = njit(inline="always")(_similarity_of)
        _similarity_rows = njit(nogil=True, cache=True)(_similarity_rows_py)
        _change = njit(inline="always")(_change)
        _centered_sensitivity = njit(nogil=True, cache=True)(_centered_sensitivity_py)
        _before = njit(inline="always")(_before)
        _sift_down = njit(nogil=True, inline="always")(_sift_down)
        _heap_top = njit(nogil=True, inline="always")(_heap_top)
        _bucket_top = njit(nogil=True, inline="always")(_bucket_top)
        _stable_top = njit(nogil=True, cache=True)(_stable_top_py)
        _weighted_means = njit(nogil=True, cache=True)(_weighted_means_py)
        _STATE["njit"] = njit
    return True


def rating_triples(ratings: sp.csr_matrix) -> tuple[tuple, tuple]:
    """``(by_row, by_column)``: the ratings as ``(ptr, ids, values)`` triples (int64,
    int64, float64), CSR by row and by column, as `add_co_rated_sums` reads them
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
    ``by_column`` come from `rating_triples`.  float32 sums are exact
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


#: the similarities `similarity_rows` computes, and their codes in the kernel (the centred
#: cosine from the unit centred rows, `dprec.similarity.exact.summed_values`)
SIMILARITY_KINDS = {"cosine": 0, "msd": 1, "pearson": 2, "centered_cosine": 3}


def similarity_rows(name: str, rows: np.ndarray, by_row: tuple, by_column: tuple,
                    out: np.ndarray, min_support: int = 1, upper: bool = False) -> None:
    """Write into row ``a`` of ``out`` (``(len(rows), n_rows)`` float64, zeroed,
    C-contiguous rows) Surprise's similarity ``name`` of ``u = rows[a]`` and every
    row ``v`` (``v >= u`` only with ``upper``; the rest stays 0), with pairs of
    fewer than ``min_support`` co-rated columns at 0 and ``out[a, u] = 1``.

    The co-rated sums of one row at a time, in float64, turned into the
    similarity at once (no ``n × n`` sums): with integer ratings every sum is
    exact, so each row is bit-identical to
    [`dprec.similarity.exact.exact_similarity`][]'s.  ``by_row`` and
    ``by_column`` come from `rating_triples`.
    """
    if name not in SIMILARITY_KINDS:
        raise ValueError(f"name must be one of {tuple(SIMILARITY_KINDS)}, got {name!r}")
    rows = np.asarray(rows, dtype=np.int64)
    shape = (len(rows), len(by_row[0]) - 1)
    if len(rows) and (rows.min() < 0 or rows.max() >= shape[1]):
        raise ValueError(f"rows must be ids in [0, {shape[1]})")
    if out.shape != shape or out.dtype != np.float64 or not out.flags.c_contiguous:
        raise ValueError(f"out must be a C-contiguous float64 array of shape {shape}")
    _similarity_rows(rows, upper, SIMILARITY_KINDS[name], float(min_support), *by_row,
                     *by_column, out)


def centered_sensitivity(rows: np.ndarray, by_row: tuple, by_column: tuple, terms: tuple,
                         column_terms: tuple, order: np.ndarray, scale: np.ndarray,
                         sim: np.ndarray, s_i: np.ndarray, s_j: np.ndarray, freq: np.ndarray,
                         min_support: int = 1) -> np.ndarray:
    """The centred cosine's ``RS`` of ``rows`` (unfloored; [`dprec.similarity.centered`][]):
    ``by_row``, ``by_column`` the unit centred rows' `rating_triples`, ``terms``,
    ``column_terms``, ``order`` and ``scale`` as the loop reads them, the others
    ``(len(rows), n_rows)`` arrays."""
    rows, out = np.asarray(rows, dtype=np.int64), np.empty(len(rows))
    arrays = [np.ascontiguousarray(m, dtype=np.float64) for m in (sim, s_i, s_j, freq)]
    if any(m.shape != (len(rows), len(by_row[0]) - 1) for m in arrays):
        raise ValueError("sim, s_i, s_j and freq must have one row per row asked")
    _centered_sensitivity(rows, *by_row, *by_column, tuple(terms), tuple(column_terms), order,
                          np.asarray(scale, np.float64), *arrays, float(max(min_support, 1)),
                          out)
    return out


def stable_top(sim: np.ndarray, sim_rows: np.ndarray, starts: np.ndarray,
               lengths: np.ndarray, candidates: np.ndarray, prefix: int,
               out: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(order, values)``, both ``(len(starts), prefix)``: the ``prefix`` most similar
    candidates of each query, as positions among its candidates (``-1`` past its
    last) and their similarities (``-inf`` there); see the module docstring.
    ``out``, if given, is where to write them (int64 and float64, C-contiguous).

    The query rows and candidate ranges are checked; the candidates themselves
    must be column ids of ``sim`` and its values finite (not checked: an
    ``O(nnz)`` pass per call; dprec's callers pass the trainset's raters).
    """
    n = len(starts)
    if out is None:
        out = np.empty((n, prefix), dtype=np.int64), np.empty((n, prefix), dtype=np.float64)
    order, values = out
    if (order.shape != (n, prefix) or values.shape != (n, prefix) or order.dtype != np.int64
            or values.dtype != np.float64 or not order.flags.c_contiguous
            or not values.flags.c_contiguous):
        raise ValueError(f"stable_top: out must be C-contiguous ({n}, {prefix}) int64 and "
                         "float64 arrays")
    if n and prefix:
        if (np.max(sim_rows) >= len(sim) or np.min(sim_rows) < 0 or np.min(starts) < 0
                or np.min(lengths) < 0 or np.max(starts + lengths) > len(candidates)):
            raise ValueError("stable_top: query rows or candidate ranges out of bounds")
        _stable_top(sim, np.asarray(sim_rows, dtype=np.int64),
                    np.asarray(starts, dtype=np.int64), np.asarray(lengths, dtype=np.int64),
                    candidates, prefix, order, values)
    return order, values


def weighted_means(positions: np.ndarray, weights: np.ndarray, starts: np.ndarray,
                   values: np.ndarray, min_sim: float) -> tuple[np.ndarray, np.ndarray]:
    """``(shift, count)``: per query (row), the weighted mean of its neighbours' values
    and how many count, as Surprise's kNN adds them (``Σ w · v / Σ |w|``, one neighbour
    at a time in row order, only those with ``w ≠ 0`` and ``w > min_sim``: with
    ``min_sim = 0``, Surprise's ``w > 0`` and ``Σ |w| = Σ w`` bit for bit; ``-inf``
    for every ``w ≠ 0``, the papers' centred rule); 0 where nothing counts.

    ``positions`` (``-1`` pads) and ``weights`` are ``(n, k)``; a neighbour's
    value is ``values[starts[q] + position]`` (checked in the loop).
    """
    positions = np.ascontiguousarray(positions, dtype=np.int64)
    weights = np.ascontiguousarray(weights, dtype=np.float64)
    starts = np.ascontiguousarray(starts, dtype=np.int64)
    if positions.shape != weights.shape or positions.ndim != 2 or starts.shape != (
            len(positions),):
        raise ValueError("weighted_means: positions and weights must be (n, k), starts (n,)")
    shift, count = np.empty(len(positions)), np.empty(len(positions), dtype=np.int64)
    if not _weighted_means(positions, weights, starts, np.asarray(values, dtype=np.float64),
                           float(min_sim), shift, count):
        raise ValueError("weighted_means: a neighbour's slot is outside the values")
    return shift, count


def _compiled() -> int:
    """How many (kernel, argument types) this process compiled rather than loaded from
    Numba's disk cache (the dispatchers' public ``stats``)."""
    kernels = (_co_rated_rows, _similarity_rows, _stable_top, _weighted_means,
               _centered_sensitivity)
    return sum(sum(kernel.stats.cache_misses.values()) for kernel in kernels)


def warm_up(compiling: Callable[[], object] | None = None) -> float:
    """Load the kernels' machine code for the argument types dprec passes, on tiny
    inputs; returns the seconds taken (0 when the kernels are off): about 1 s from Numba's
    disk cache; the first run after installing dprec compiles them (10–40 s on 2 cores)
    and writes the cache (next to the module, or in `NUMBA_CACHE_DIR`).  A timing that
    should include neither (`dprec demo`) calls this first.  ``compiling`` (no argument)
    is called once, as soon as a kernel had to be compiled, so the caller can say why
    this run waits."""
    if not enabled():
        return 0.0
    start = time.perf_counter()
    before = _compiled()
    by_row, by_column = rating_triples(sp.csr_matrix(np.array([[1.0, 0.0, 2.0],
                                                              [3.0, 4.0, 0.0]])))

    def co_rated_sums() -> None:
        for counts, dtype in ((np.float32, np.float32), (np.float32, np.float64),
                              (np.float64, np.float64)):
            sums = (np.zeros((2, 2), counts), *(np.zeros((2, 2), dtype) for _ in range(5)))
            add_co_rated_sums(np.arange(2), by_row, by_column, sums, upper=True)

    loads = (
        lambda: weighted_means(np.zeros((1, 1), np.int64), np.ones((1, 1)),
                               np.zeros(1, np.int64), np.ones(1), 0.0),
        lambda: similarity_rows("msd", np.arange(2), by_row, by_column, np.zeros((2, 2)),
                                upper=True),
        co_rated_sums,
        lambda: stable_top(np.zeros((2, 2)), np.arange(2), np.zeros(2, np.int64),
                           np.ones(2, np.int64), np.arange(2), 1),
        lambda: centered_sensitivity(np.arange(2), by_row, by_column, (np.ones(4),) * 4,
                                     (np.ones(4),) * 3, np.arange(4), np.ones(2),
                                     *[np.ones((2, 2))] * 4),
    )
    for load in loads:
        load()
        if compiling is not None and _compiled() > before:
            compiling()
            compiling = None
    return time.perf_counter() - start
