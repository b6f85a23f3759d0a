r"""Items × items matrices held as one vector per item, computed for the pairs asked for.

[`DPItemKNN`][dprec.DPItemKNN] with `similarity="factors"` answers from the cosines of
released item factors, $s_{ij} = v_i^\top v_j / (\lVert v_i \rVert \lVert v_j \rVert)$, and
from their noise, $\tau_{ij} = \rho_i + \rho_j$.  Both are functions of $n$ vectors, so
they cost $n d$ numbers, not the $n^2$ of a stored matrix (26 GiB for the 59,047 items of
MovieLens 25M).  A [`PairMatrix`][dprec.endtoend.pairwise.PairMatrix] is read like a
read-only array: `m[rows, cols]` gives the broadcast pairs, `m[i]` one row and
`np.asarray(m)` the whole matrix ($n^2$ numbers, for those who ask: a `MemoryError`
before it starts when the machine cannot hold them).  Every entry is
computed the same way (a fixed order of additions), so the whole matrix and the pairs
agree bit for bit.
"""

from __future__ import annotations

import numpy as np

from ..utils._arrays import safe_divide
from ..utils._memory import check_memory

__all__ = ["FactorCosines", "PairMatrix", "PairSums"]

#: the pairs computed at once (bounds the temporary arrays: about 32 MB each)
_CHUNK = 1 << 22


class PairMatrix:
    """A read-only $n \\times n$ matrix whose entry $(i, j)$ is computed from item $i$'s and
    item $j$'s vectors; subclasses say how (`_entries`)."""

    ndim = 2
    dtype = np.dtype(np.float64)

    def __init__(self, n: int) -> None:
        self.shape = (n, n)

    def _entries(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def __getitem__(self, key) -> np.ndarray:
        """`m[rows, cols]` (integer arrays or ints, broadcast together) or `m[rows]`
        (whole rows)."""
        n = self.shape[0]
        if isinstance(key, tuple):
            if len(key) != 2 or any(isinstance(part, slice) for part in key):
                raise IndexError(f"a {type(self).__name__} takes m[rows, cols] (integers or "
                                 "integer arrays) or m[rows]")
            rows, cols = (np.arange(n)[np.asarray(part)] for part in key)   # checks the ids
        else:
            rows, cols = np.arange(n)[key][..., None], np.arange(n)
        return self._computed(rows, cols)

    def _computed(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """The entries of the broadcast pairs, at most `_CHUNK` at a time: the pairs are
        never materialised whole (for `np.asarray(m)` that would be two $n^2$ arrays of
        int64 beside the result), and a numpy scalar for one pair, as an array gives."""
        out = np.empty(np.broadcast_shapes(rows.shape, cols.shape), dtype=self.dtype)
        if out.size:
            with np.nditer([rows, cols, out], flags=["external_loop", "buffered"],
                           op_flags=[["readonly"], ["readonly"], ["writeonly"]],
                           buffersize=_CHUNK) as pairs:
                for row, col, part in pairs:
                    part[...] = self._entries(row.ravel(), col.ravel()).reshape(part.shape)
        return out[()]

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        if copy is False:
            raise ValueError(f"a {type(self).__name__} holds no array: np.asarray computes "
                             "one (copy=False is refused)")
        n = self.shape[0]
        check_memory(float(self.dtype.itemsize) * n * n, f"the whole {n:,} x {n:,} matrix",
                     "read the pairs you need instead: m[rows, cols], a row m[i], or a "
                     "model's get_neighbors")
        whole = self[np.arange(n)]
        if dtype is not None:
            whole = whole.astype(dtype, copy=False)
        whole.flags.writeable = False
        return whole

    def __len__(self) -> int:
        return self.shape[0]


class FactorCosines(PairMatrix):
    r"""$s_{ij} = \cos(v_i, v_j)$ clipped to $[-1, 1]$, 0 where $v_i$ or $v_j$ is 0.

    Parameters
    ----------
    factors : numpy.ndarray
        One row $v_i$ per item ($n \times d$; $d = 0$ gives the zero matrix).
    """

    def __init__(self, factors: np.ndarray) -> None:
        factors = np.asarray(factors, dtype=float)
        super().__init__(len(factors))
        norms = np.linalg.norm(factors, axis=1)
        self._unit = safe_divide(factors, norms[:, None])          # 0 where v_i = 0

    def _entries(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        dot = np.zeros(rows.size)
        for column in self._unit.T:            # one factor at a time: a fixed order
            dot += column[rows] * column[cols]
        return np.clip(dot, -1.0, 1.0)


class PairSums(PairMatrix):
    r"""$\tau_{ij} = \rho_i + \rho_j$, stored as `dtype` (float32 by default).

    Parameters
    ----------
    values : numpy.ndarray
        One number $\rho_i$ per item.
    dtype : numpy dtype, default float32
        The entries' type (the sum is taken in float64, then cast).
    """

    def __init__(self, values: np.ndarray, dtype=np.float32) -> None:
        values = np.asarray(values, dtype=float)
        super().__init__(len(values))
        self._values, self.dtype = values, np.dtype(dtype)

    def _entries(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        return (self._values[rows] + self._values[cols]).astype(self.dtype)
