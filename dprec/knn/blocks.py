"""How queries are cut into blocks of array work, and added up so that a block's padding
changes no bit.

A block is a set of queries answered by one set of array operations (in one
thread): its candidates padded to a rectangle (the numpy path), or listed end
to end for the compiled kernels (nothing padded).  Sums over a row are added
left to right, as a loop adds them, so that the padding of a wider block
leaves every answer bit-identical to the same query answered alone.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from ..utils._threads import thread_count

#: largest number of (query × candidate) cells handled in one block
_BLOCK_CELLS = 1 << 17
#: most candidate cells per block of queries answered by the compiled kernel (nothing
#: padded; at least four blocks per thread)
_KERNEL_CELLS = 1 << 21


def blocks(rows: np.ndarray, n_candidates: int, cells: int | None = None) -> Iterator[np.ndarray]:
    """Split query rows so that one block holds at most `cells` cells (by default
    `_BLOCK_CELLS`, $2^{17}$)."""
    cells = _BLOCK_CELLS if cells is None else cells
    size = max(1, cells // max(n_candidates, 1))
    for start in range(0, len(rows), size):
        yield rows[start:start + size]


def length_blocks(rows: np.ndarray, sorted_lengths: np.ndarray,
                  slack: float = 1.25) -> Iterator[np.ndarray]:
    """Cut rows sorted by length into blocks whose longest row is at most `slack`
    times the shortest (little padding) and that hold at most `_BLOCK_CELLS` cells."""
    start = 0
    while start < len(rows):
        shortest = max(int(sorted_lengths[start]), 1)
        stop = int(np.searchsorted(sorted_lengths, shortest * slack, side="right"))
        stop = min(stop, start + max(1, _BLOCK_CELLS // int(sorted_lengths[stop - 1] or 1)))
        yield rows[start:stop]
        start = stop


def row_blocks(rows: np.ndarray, lengths: np.ndarray) -> list[np.ndarray]:
    """Queries (positions) for the compiled kernel, which pads nothing: by similarity row
    (its cache reused), cut into blocks of about equal candidate cells, at most
    `_KERNEL_CELLS` ($2^{21}$) each and at least four per thread."""
    order = np.argsort(rows, kind="stable")
    cells = np.cumsum(lengths[order])
    n_blocks = max(-(-int(cells[-1]) // _KERNEL_CELLS), 4 * thread_count())
    return np.split(order, np.searchsorted(cells, np.arange(1, n_blocks)
                                           * (int(cells[-1]) / n_blocks)))


def sequential_sum(values: np.ndarray) -> np.ndarray:
    """Row sums added left to right from 0 (as a loop adds them: a sum of `-0.0` is
    `0.0`), so that trailing zeros (the padding of a wider block) leave them
    bit-identical, unlike numpy's pairwise `sum`."""
    if values.shape[1] == 0:
        return np.zeros(len(values))
    return np.cumsum(values, axis=1)[:, -1] + 0.0


def at_positions(values: np.ndarray, starts: np.ndarray, positions: np.ndarray,
                 fill) -> np.ndarray:
    """`values[starts[q] + positions[q, j]]` (a query's candidates from its start),
    `fill` where the position is `-1`."""
    found = positions >= 0
    return np.where(found, values[np.where(found, starts[:, None] + positions, 0)], fill)
