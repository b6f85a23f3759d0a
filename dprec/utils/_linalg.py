"""Gram matrices ``A Cᵀ`` that stay clear of a crash in multi-threaded OpenBLAS.

NumPy computes ``A @ A.T`` with BLAS's symmetric rank-k update (``syrk``),
half the work of a general product.  Multi-threaded OpenBLAS's ``dsyrk``
crashes (segmentation fault) on large inputs (numpy/numpy#19685, open;
reproduced on this project's machines with a 20,000 × 256 float64 matrix,
not with 16,384 rows).  `gram` keeps the fast path for fewer than
``SYRK_ROWS`` rows and otherwise multiplies blocks of rows by the whole
transpose: general products (``gemm``), never that path, with the same
values (each entry is one dot product either way, up to summation order).
"""

from __future__ import annotations

import numpy as np

#: the most rows for which ``A @ A.T`` takes the symmetric rank-k update
SYRK_ROWS = 8192
#: rows of ``A`` per general product above that
_BLOCK_ROWS = 4096


def gram(A: np.ndarray, C: np.ndarray | None = None) -> np.ndarray:
    """``A @ C.T`` (``C = A`` when None) for dense 2-D arrays, in row blocks when large."""
    other = A if C is None else C
    if other is not A or len(A) <= SYRK_ROWS:
        return A @ other.T
    out = np.empty((len(A), len(other)), dtype=np.result_type(A, other))
    for start in range(0, len(A), _BLOCK_ROWS):
        np.matmul(A[start:start + _BLOCK_ROWS], other.T, out=out[start:start + _BLOCK_ROWS])
    return out
