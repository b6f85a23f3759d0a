"""Surprise's exact similarities from co-rated sums (dprec.similarity.exact)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from dprec.similarity import exact


@pytest.mark.parametrize("integer", [True, False])
def test_co_rated_sums_in_column_blocks_equal_one_product(monkeypatch, integer):
    """Wide rating matrices are summed in blocks of columns (bounded dense operands): the
    float32 sums of integers are the same numbers, the float64 ones equal to rounding;
    stored zero ratings count in both."""
    ratings = sp.random(60, 500, density=0.1, format="csr", random_state=5)
    ratings.data = np.ceil(ratings.data * 5) if integer else ratings.data * 5
    ratings.data[::7] = 0.0                                  # explicit zero ratings
    whole = exact.co_rated_sums(ratings)
    monkeypatch.setattr(exact, "DENSE_BLOCK_BYTES", 8 * 60 * 37)   # blocks of 37 columns
    blocked = exact.co_rated_sums(ratings)
    assert blocked[0].dtype == np.float32                    # counts: exact in float32
    assert blocked[2].dtype == (np.float32 if integer else np.float64)
    for a, b in zip(whole, blocked):
        if integer:
            np.testing.assert_array_equal(a, b)
        else:
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(np.diag(blocked[0]), np.diff(ratings.indptr))
    for name in exact.SUM_SIMILARITIES:                      # and the similarities on them
        np.testing.assert_allclose(exact.exact_similarity(name, ratings),
                                   _unblocked(monkeypatch, name, ratings), atol=1e-12)


def _unblocked(monkeypatch, name, ratings):
    with monkeypatch.context() as patch:
        patch.setattr(exact, "DENSE_BLOCK_BYTES", 1 << 30)
        return exact.exact_similarity(name, ratings)
