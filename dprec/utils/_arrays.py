"""Array kernels shared across dprec: orders with ties, top-k, 0/1 patterns, safe division,
segments.

Ties follow Surprise's ``heapq.nlargest``: among equal values, the lower
column comes first.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def top_mask(values: np.ndarray, n: int) -> np.ndarray:
    """Per row, a mask of the ``n`` largest values (ties: the lower column first).

    Found by a partition in linear time; when the ``n``-th value is tied with
    values beyond it, the tied columns are taken in column order until the row
    holds ``n`` (the *tie spill*).  ``n`` is clipped to ``[0, n_columns]``.
    """
    n_cols = values.shape[1]
    n = max(0, min(n, n_cols))
    if n == 0:
        return np.zeros(values.shape, dtype=bool)
    threshold = np.partition(values, n_cols - n, axis=1)[:, n_cols - n, None]
    taken = values >= threshold
    spill = np.flatnonzero(taken.sum(axis=1) > n)
    if len(spill):
        row_values, row_threshold = values[spill], threshold[spill]
        above = row_values > row_threshold
        ties = row_values == row_threshold
        room = n - above.sum(axis=1, keepdims=True)
        taken[spill] = above | (ties & (np.cumsum(ties, axis=1) <= room))
    return taken


def stable_descending_order(values: np.ndarray, prefix: int | None,
                            keep_tail: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Columns of each row in descending order of ``values``, ties in column order.

    This is the order of ``heapq.nlargest`` (what Surprise's KNNBasic uses).
    With ``prefix`` set, only the first ``prefix`` columns of that order are
    sorted, found by `top_mask` instead of a full sort; with
    ``keep_tail`` every column then follows in column order, those of the
    prefix masked (``-inf``), else the rest is left out.

    Rows equal bit for bit (e.g. the candidates of identical users for one item) are
    sorted once (`distinct_rows`), where they make at most half the rows distinct
    (sorting a few repeats once saves less than finding them costs).

    Returns ``(order, sorted_values)``: the columns and their values.
    """
    groups = distinct_rows(values, most=len(values) // 2)
    if groups is None:
        return _sorted_rows(values, prefix, keep_tail)
    first, inverse = groups
    order, sorted_values = _sorted_rows(values[first], prefix, keep_tail)
    return order[inverse], sorted_values[inverse]


def _sorted_rows(values: np.ndarray, prefix: int | None,
                 keep_tail: bool) -> tuple[np.ndarray, np.ndarray]:
    """`stable_descending_order`, every row sorted."""
    n_rows, n_cols = values.shape
    if prefix is None or prefix >= n_cols:
        order = np.argsort(-values, axis=1, kind="stable")
        return order, np.take_along_axis(values, order, axis=1)
    taken = top_mask(values, prefix)
    columns = (np.flatnonzero(taken) % n_cols).reshape(n_rows, prefix)
    head_values = np.take_along_axis(values, columns, axis=1)
    inner = np.argsort(-head_values, axis=1, kind="stable")
    head = np.take_along_axis(columns, inner, axis=1)
    head_values = np.take_along_axis(head_values, inner, axis=1)
    if not keep_tail:
        return head, head_values
    # the tail: every column in column order, those already in the head masked out
    order = np.concatenate([head, np.broadcast_to(np.arange(n_cols), (n_rows, n_cols))], axis=1)
    return order, np.concatenate([head_values, np.where(taken, -np.inf, values)], axis=1)


def distinct_rows(values: np.ndarray, probe: int = 8,
                  most: int | None = None) -> tuple[np.ndarray, np.ndarray] | None:
    """The rows of a 2-d array up to bitwise equality: ``(first, inverse)`` with
    ``values[first][inverse]`` equal to ``values`` bit for bit (``first`` the first row of
    each group), or ``None`` when no two rows are equal, or when there are more than
    ``most`` groups (and always for fewer than two rows, no columns, or elements of other
    than 1, 2, 4 or 8 bytes).

    A hash of the first ``probe`` columns says in one pass how many groups there are at
    least (rows that differ there are distinct): when every row, or more than ``most``,
    must be apart, that is all it costs (a pass over the probe and a sort of ``n_rows``
    keys).  Otherwise the rows are grouped by a hash of all their columns and each is
    compared in full with its group's first row; a row that differs from it (a collision
    of the hash) is its own group.
    """
    n_rows = values.shape[0]
    if (n_rows < 2 or values.shape[1] == 0 or values.dtype.hasobject
            or values.itemsize not in (1, 2, 4, 8)):
        return None
    most = n_rows - 1 if most is None else most
    bits = np.ascontiguousarray(values).view(np.dtype(f"u{values.itemsize}"))
    if len(np.unique(_row_hash(bits[:, :max(probe, 1)]))) > most:
        return None
    _, first, inverse = np.unique(_row_hash(bits), return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    alone = np.flatnonzero((bits != bits[first[inverse]]).any(axis=1))
    if len(alone):   # a collision of the hash: each its own group
        inverse[alone] = len(first) + np.arange(len(alone))
        first = np.concatenate([first, alone])
    return (first, inverse) if len(first) <= most else None


def _row_hash(bits: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each row of an unsigned-integer array: $\\sum_j b_j c_j$ modulo
    $2^{64}$ with odd $c_j$, so that rows differing in one column never collide."""
    odd = (np.arange(1, bits.shape[1] + 1, dtype=np.uint64)
           * np.uint64(0x9E3779B97F4A7C15)) | np.uint64(1)
    with np.errstate(over="ignore"):
        return np.multiply(bits, odd, dtype=np.uint64).sum(axis=1, dtype=np.uint64)


def top_k_indices(keys: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` largest keys along the last axis, largest first (int64).

    A partition, then a sort of the ``k`` kept; ties in an unspecified order
    (the keys this serves are continuous: Gumbel-perturbed scores), except
    for ``k = 1``: ``argmax``, the first of tied columns on every CPU (the
    SIMD partition of numpy >= 2 picks another tied column on AVX-512
    machines).  ``1 <= k <= keys.shape[-1]``.
    """
    if k == 1:
        return np.argmax(keys, axis=-1)[..., None].astype(np.int64)
    negated = np.negative(keys)                 # ascending order = best first
    part = np.argpartition(negated, k - 1, axis=-1)[..., :k]
    order = np.argsort(np.take_along_axis(negated, part, axis=-1), axis=-1)
    return np.take_along_axis(part, order, axis=-1).astype(np.int64)


def pattern_matrix(matrix: sp.spmatrix, dtype=None) -> sp.spmatrix:
    """The 0/1 matrix of the stored entries of ``matrix`` (a stored 0 is an entry, as a
    rating of 0 is a rating): a copy in the same format, of ``dtype`` (default: the
    matrix's)."""
    out = matrix.copy()
    out.data = np.ones_like(out.data, dtype=dtype)
    return out


def safe_divide(numerator, denominator, fill: float = 0.0) -> np.ndarray:
    """``numerator / denominator`` elementwise, ``fill`` where the denominator is 0.

    The result has the broadcast shape and the result dtype of the operands.
    """
    numerator, denominator = np.asarray(numerator), np.asarray(denominator)
    out = np.full(np.broadcast_shapes(numerator.shape, denominator.shape), fill,
                  dtype=np.result_type(numerator, denominator, np.float16))
    np.divide(numerator, denominator, out=out, where=denominator != 0)
    return out


def has_repeats(values: np.ndarray) -> bool:
    """Whether a value occurs more than once (``len(np.unique(values)) < len(values)``),
    by one sort.

    numpy 2.4's ``np.unique`` without ``return_*`` finds the distinct values with a
    hash table: on millions of distinct integers that is 50-100 times slower than a
    sort (18 s against 0.25 s for 4 million int64 keys), which made it the main cost
    of a private model's fit at the MovieLens-10M shape.  For arrays without NaN.
    """
    ordered = np.sort(np.asarray(values).ravel())
    return bool(np.any(ordered[1:] == ordered[:-1]))


def segment_ids(lengths, start: int = 0) -> np.ndarray:
    """The segment of every element of consecutive segments of these lengths,
    numbered from `start`: ``segment_ids([2, 0, 3])`` is ``[0, 0, 2, 2, 2]``.  The row
    of every stored entry of a CSR matrix is ``segment_ids(np.diff(indptr))``."""
    lengths = _lengths(lengths)
    return np.repeat(np.arange(start, start + len(lengths), dtype=np.int64), lengths)


def segment_positions(lengths) -> np.ndarray:
    """The position of every element within its segment, for consecutive segments of
    these lengths: ``segment_positions([2, 0, 3])`` is ``[0, 1, 0, 1, 2]``."""
    lengths = _lengths(lengths)
    return np.arange(int(lengths.sum()), dtype=np.int64) - np.repeat(
        np.cumsum(lengths) - lengths, lengths)


def _lengths(lengths) -> np.ndarray:
    """``lengths`` as int64, refusing what is not a 1-d array of integers (a float count
    would otherwise be truncated without a word)."""
    array = np.asarray(lengths)
    if array.ndim != 1 or (array.size and array.dtype.kind not in "iub"):
        raise TypeError(f"lengths must be a 1-d array of integers, got {array.dtype} of "
                        f"shape {array.shape}")
    return array.astype(np.int64, copy=False)
