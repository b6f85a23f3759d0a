"""gram: the same products as ``A @ C.T``, in row blocks above the symmetric fast path."""

from __future__ import annotations

import numpy as np
import pytest

from dprec.utils import _linalg
from dprec.utils._linalg import gram


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_blocked_gram_equals_the_product(monkeypatch, dtype):
    monkeypatch.setattr(_linalg, "SYRK_ROWS", 10)
    monkeypatch.setattr(_linalg, "_BLOCK_ROWS", 7)
    rng = np.random.default_rng(0)
    A = rng.integers(0, 6, (45, 13)).astype(dtype)     # integers: every order sums exactly
    np.testing.assert_array_equal(gram(A), A @ A.T)
    np.testing.assert_array_equal(gram(A, A), A @ A.T)
    C = rng.integers(0, 6, (8, 13)).astype(dtype)
    np.testing.assert_array_equal(gram(A, C), A @ C.T)
    assert gram(A).dtype == dtype


def test_small_inputs_keep_the_plain_product():
    A = np.arange(12.0).reshape(4, 3)
    np.testing.assert_array_equal(gram(A), A @ A.T)
