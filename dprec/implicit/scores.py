r"""The arithmetic of implicit-feedback kNN: interaction sets, their similarities, and
sums of the $k$ largest similarities per item.

Users hold *sets* of items (an interaction is a stored pair of the trainset).  With $X$
the users × items 0/1 matrix, $n_i$ the users of item $i$ and $|S_u|$ the items of user
$u$:

* item–item (LensKit's implicit `ItemKNNScorer`): cosine
  $s(i, j) = |U_i \cap U_j| / \sqrt{n_i n_j}$, or Jaccard
  $|U_i \cap U_j| / |U_i \cup U_j|$, stored sparse ([`item_similarities`][]): only the
  pairs with a common user, at least `min_sim`, no diagonal;
* user–user: the same of the users' sets ([`user_similarity_rows`][]), a block of rows
  at a time (no $n \times n$ matrix).

A score is a **sum of similarities** ([`top_k_sums`][]): for a query row $q$ and a target
$t$, the $k$ largest of the contributions $a_{qj}\, b_{jt}$ over the stored entries of
row $q$ of a left matrix $A$ and row $j$ of a right matrix $B$:

* item-based, $A = X$ (the user's items, $a = 1$), $B$ the item similarities: the $k$
  items of the user most similar to $t$;
* user-based, $A$ the user's neighbours (similarity at least `min_sim`), $B = X$
  ($b = 1$): the $k$ most similar neighbours who hold $t$.

The sum is over the $k$ largest contributions whatever their order (ties do not change
it); `counts` says how many were summed.  Compiled with Numba when available: one pass
when each target's contributions arrive largest first (the user-based scores, neighbours
by descending similarity), else one pass counting each target's contributions and a
second summing them, only targets with more than $k$ sorted; without Numba the same
numbers by numpy (a `lexsort` of the contributions), up to the rounding of the sums'
order.
"""

from __future__ import annotations

import functools

import numpy as np
import scipy.sparse as sp

from ..utils import _kernels as kernels
from ..utils._arrays import segment_ids, segment_positions, top_mask

__all__ = ["SIMILARITIES", "LeftRows", "interactions", "item_similarities",
           "neighbour_rows", "top_k_sums", "user_similarity_rows"]

#: the exact similarities of sets
SIMILARITIES = ("cosine", "jaccard")
#: contributions expanded at once by the numpy path
_NUMPY_BLOCK = 1 << 22

#: the stored entries of a block of rows: `(ptr, indices, weights)`, CSR-like
LeftRows = tuple[np.ndarray, np.ndarray, np.ndarray]


def interactions(matrix: sp.csr_matrix, threshold: float | None) -> sp.csr_matrix:
    """The 0/1 interaction matrix of a users × items rating matrix: every stored pair
    (rating `>= threshold` when given), float64 ones, sorted indices; a new matrix."""
    keep = (np.ones(matrix.nnz, dtype=bool) if threshold is None
            else matrix.data >= threshold)
    kept_before = np.concatenate([[0], np.cumsum(keep)])
    indptr = kept_before[matrix.indptr].astype(np.int64)
    out = sp.csr_matrix((np.ones(int(indptr[-1])), matrix.indices[keep].astype(np.int64),
                         indptr), shape=matrix.shape)
    out.sort_indices()
    return out


def _set_similarity(name: str, common: np.ndarray, size_a: np.ndarray,
                    size_b: np.ndarray) -> np.ndarray:
    """Cosine or Jaccard from the common count and the two sizes (0 where undefined)."""
    denominator = (np.sqrt(size_a * size_b) if name == "cosine"
                   else size_a + size_b - common)
    return np.divide(common, denominator, out=np.zeros_like(common, dtype=np.float64),
                     where=denominator > 0)


def item_similarities(X: sp.csr_matrix, name: str, min_sim: float) -> sp.csr_matrix:
    """The item–item similarity matrix of `X` (users × items, 0/1), sparse: the pairs
    of items with a common user whose similarity is at least `min_sim`, without the
    diagonal, each row sorted by item."""
    items = X.T.tocsr()
    common = (items @ X).tocoo()                      # |U_i ∩ U_j| of pairs sharing a user
    sizes = np.asarray(X.sum(axis=0)).ravel()
    sims = _set_similarity(name, common.data.astype(np.float64), sizes[common.row],
                           sizes[common.col])
    keep = (common.row != common.col) & (sims >= min_sim)
    out = sp.csr_matrix((sims[keep], (common.row[keep], common.col[keep])),
                        shape=(X.shape[1], X.shape[1]))
    out.sort_indices()
    return out


def user_similarity_rows(X: sp.csr_matrix, rows: np.ndarray, name: str) -> np.ndarray:
    """Rows `rows` of the user–user similarity of `X` (users × items, 0/1): a dense
    `(len(rows), n_users)` block (the diagonal included)."""
    common = (X[rows] @ X.T).toarray()
    sizes = np.diff(X.indptr).astype(np.float64)
    return _set_similarity(name, common, sizes[rows][:, None], sizes[None, :])


def neighbour_rows(sims: np.ndarray, rows: np.ndarray, min_sim: float,
                   k: int | None = None) -> LeftRows:
    """Each row's neighbours in a block of similarity rows: the columns other than the
    row's own (`rows[q]`) whose similarity is at least `min_sim`, all of them or the
    `k` most similar (ties: the lower column), as `(ptr, indices, weights)`, each row's
    by descending similarity (ties: the lower column first)."""
    block = np.array(sims, dtype=np.float64)
    block[np.arange(len(rows)), rows] = -np.inf
    keep = block >= min_sim
    if k is not None:
        keep &= top_mask(block, k)
    counts = keep.sum(axis=1)
    ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    owner, columns = np.nonzero(keep)
    weights = block[keep]
    order = np.lexsort((columns, -weights, owner))
    return ptr, columns[order].astype(np.int64), weights[order]


def _top_k_sums_py(left_ptr, left_idx, left_w, right_ptr, right_idx, right_w, k,
                   scores, counts, start, fill, touched, buffer):  # pragma: no cover - compiled
    """The compiled loop of [`top_k_sums`][] (`scores`, `counts` zeroed)."""
    for q in range(len(left_ptr) - 1):
        n_touched = 0
        for a in range(left_ptr[q], left_ptr[q + 1]):
            j = left_idx[a]
            for b in range(right_ptr[j], right_ptr[j + 1]):
                t = right_idx[b]
                if counts[q, t] == 0:
                    touched[n_touched] = t
                    n_touched += 1
                counts[q, t] += 1
        used = 0
        for m in range(n_touched):
            t = touched[m]
            if counts[q, t] > k:           # a segment of the buffer for its contributions
                start[t] = used
                fill[t] = 0
                used += counts[q, t]
        for a in range(left_ptr[q], left_ptr[q + 1]):
            j = left_idx[a]
            weight = left_w[a]
            for b in range(right_ptr[j], right_ptr[j + 1]):
                t = right_idx[b]
                w = weight * right_w[b]
                if counts[q, t] > k:
                    buffer[start[t] + fill[t]] = w
                    fill[t] += 1
                else:
                    scores[q, t] += w
        for m in range(n_touched):
            t = touched[m]
            c = counts[q, t]
            if c > k:
                segment = np.sort(buffer[start[t]:start[t] + c])
                total = 0.0
                for r in range(c - 1, c - 1 - k, -1):
                    total += segment[r]
                scores[q, t] = total
                counts[q, t] = k


def _first_k_sums_py(left_ptr, left_idx, left_w, right_ptr, right_idx, right_w, k,
                     scores, counts):  # pragma: no cover - compiled
    """The compiled loop of [`top_k_sums`][] when each target's contributions arrive in
    non-increasing order: the first `k` of each are its largest (one pass)."""
    for q in range(len(left_ptr) - 1):
        for a in range(left_ptr[q], left_ptr[q + 1]):
            j = left_idx[a]
            weight = left_w[a]
            for b in range(right_ptr[j], right_ptr[j + 1]):
                t = right_idx[b]
                if counts[q, t] < k:
                    scores[q, t] += weight * right_w[b]
                    counts[q, t] += 1



@functools.cache
def _compiled(function):
    """``function`` compiled by Numba (``nogil``, cached on disk), once per process; called
    where `dprec.utils._kernels.enabled` is True (it imports Numba at first use)."""
    from numba import njit

    return njit(nogil=True, cache=True)(function)

def _contributions(left: LeftRows, right: sp.csr_matrix, rows: slice
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`(row, target, weight)` of every contribution of the left rows `rows`."""
    left_ptr, left_idx, left_w = left
    first, last = left_ptr[rows.start], left_ptr[rows.stop]
    entries = np.arange(first, last)
    sizes = np.diff(left_ptr[rows.start:rows.stop + 1])
    owner = segment_ids(sizes, start=rows.start)
    js = left_idx[entries]
    lengths = np.diff(right.indptr)[js]
    positions = np.repeat(right.indptr[js], lengths) + segment_positions(lengths)
    return (np.repeat(owner, lengths), right.indices[positions].astype(np.int64),
            np.repeat(left_w[entries], lengths) * right.data[positions])


def _row_loads(left_ptr: np.ndarray, left_idx: np.ndarray, right: sp.csr_matrix
               ) -> np.ndarray:
    """How many contributions each left row has."""
    lengths = np.concatenate([[0], np.cumsum(np.diff(right.indptr)[left_idx])])
    return lengths[left_ptr[1:]] - lengths[left_ptr[:-1]]


def _top_k_sums_numpy(left: LeftRows, right: sp.csr_matrix, k: int, scores: np.ndarray,
                      counts: np.ndarray) -> None:
    """[`top_k_sums`][] by numpy, in blocks of rows of about `_NUMPY_BLOCK`
    contributions: the contributions sorted by (row, target, −weight), the first `k` of
    each (row, target) summed in that order."""
    left_ptr, left_idx, _ = left
    n_rows, n_targets = scores.shape
    per_row = _row_loads(left_ptr, left_idx, right)
    start = 0
    while start < n_rows:
        stop = start + 1
        load = per_row[start]
        while stop < n_rows and load + per_row[stop] <= _NUMPY_BLOCK:
            load += per_row[stop]
            stop += 1
        owner, target, weight = _contributions(left, right, slice(start, stop))
        key = owner * n_targets + target
        order = np.lexsort((-weight, key))
        key, weight = key[order], weight[order]
        rank = np.arange(len(key)) - np.searchsorted(key, key, side="left")
        kept = rank < k
        size = n_rows * n_targets
        scores += np.bincount(key[kept], weight[kept], minlength=size).reshape(scores.shape)
        counts += np.bincount(key[kept], minlength=size).reshape(counts.shape)
        start = stop


def top_k_sums(left: LeftRows, right: sp.csr_matrix, k: int,
               ordered: bool = False) -> tuple[np.ndarray, np.ndarray]:
    r"""Per left row $q$ and target $t$ (a column of `right`), the sum of the `k` largest
    contributions $a_{qj} b_{jt}$, and how many were summed (at most `k`).

    Parameters
    ----------
    left : (ptr, indices, weights)
        The stored entries $a_{qj}$ of the query rows (`indices`: rows of `right`).
    right : scipy.sparse.csr_matrix
        $b_{jt}$, float64, sorted indices.
    k : int
        How many contributions each sum takes, `>= 1`.
    ordered : bool, default False
        The caller's promise that each target's contributions arrive in non-increasing
        order (each left row sorted by descending weight, and `right`'s weights all
        equal, as the user-based scores' neighbours and 0/1 sets): one pass then.

    Returns
    -------
    scores : ndarray of float64, shape (n_rows, n_targets)
        0 where nothing contributes.
    counts : ndarray of int64, the same shape
    """
    left_ptr, left_idx, left_w = (np.ascontiguousarray(left[0], dtype=np.int64),
                                  np.ascontiguousarray(left[1], dtype=np.int64),
                                  np.ascontiguousarray(left[2], dtype=np.float64))
    n_rows, n_targets = len(left_ptr) - 1, right.shape[1]
    scores = np.zeros((n_rows, n_targets))
    counts = np.zeros((n_rows, n_targets), dtype=np.int64)
    if not kernels.enabled():
        _top_k_sums_numpy((left_ptr, left_idx, left_w), right, k, scores, counts)
        return scores, counts
    if ordered:
        _compiled(_first_k_sums_py)(
            left_ptr, left_idx, left_w, right.indptr.astype(np.int64),
            right.indices.astype(np.int64), right.data.astype(np.float64), int(k), scores,
            counts)
        return scores, counts
    largest = int(_row_loads(left_ptr, left_idx, right).max()) if n_rows else 0
    _compiled(_top_k_sums_py)(
        left_ptr, left_idx, left_w, right.indptr.astype(np.int64),
        right.indices.astype(np.int64), right.data.astype(np.float64), int(k), scores, counts,
        np.zeros(n_targets, np.int64), np.zeros(n_targets, np.int64),
        np.zeros(n_targets, np.int64), np.zeros(max(largest, 1)))
    return scores, counts
