"""Exact similarities a block of rows at a time (dprec.similarity.rows)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st
from strategies import fuzz

from dprec.similarity import exact
from dprec.similarity.rows import SimilarityRows


def _ratings(seed: int, kind: str, n: int = 40, m: int = 30) -> sp.csr_matrix:
    """Ratings on 1..5 (``"integer"``), in steps of 1/4 (``"quarters"``, as MovieLens's
    halves: float64 sums still exact) or ``"real"``."""
    ratings = sp.random(n, m, density=0.25, format="csr", random_state=seed)
    steps = {"integer": 1, "quarters": 4}.get(kind)
    ratings.data = (np.ceil(ratings.data * 5 * steps) / steps if steps
                    else ratings.data * 5)
    ratings.data[::9] = 0.0                           # explicit zero ratings count
    return ratings


@fuzz(40)
@given(seed=st.integers(0, 10**6), kind=st.sampled_from(["integer", "quarters", "real"]),
       name=st.sampled_from(exact.SUM_SIMILARITIES), min_support=st.integers(0, 4),
       block=st.integers(1, 40))
def test_rows_equal_the_whole_matrix(seed, kind, name, min_support, block):
    """Every block of rows is the matrix's rows, and so is each row's RS: the same bits
    when every sum is exact in any order (integer ratings in float32, quarters in
    float64).  On real-valued ratings the similarities agree to float64 rounding (which
    pearson's ``n Σr² − (Σr)²`` amplifies to ~1e-10 on two co-rated items); RS is not
    compared there: removing an item can leave a pair one co-rated item, whose pearson
    denominator is then rounding noise in either order of summation."""
    ratings = _ratings(seed, kind)
    whole, sums = exact.exact_similarity_and_sums(name, ratings, min_support)
    sensitivity = exact.recommendation_aware_sensitivity(name, ratings, whole, sums,
                                                         min_support)
    rows = SimilarityRows(name, ratings, min_support)
    order = np.random.default_rng(seed).permutation(ratings.shape[0])   # any order, any block
    blocks = [order[start:start + block] for start in range(0, len(order), block)]
    by_rows = np.empty_like(whole)
    rs = np.empty(len(order))
    for ids in blocks:
        by_rows[ids] = rows(ids)
        rs[ids] = rows.sensitivity(ids)
    if kind == "real":
        np.testing.assert_allclose(by_rows, whole, rtol=1e-8, atol=1e-8)
    else:
        np.testing.assert_array_equal(by_rows, whole)
        np.testing.assert_array_equal(rs, sensitivity)


def test_rows_dtype_and_input_untouched():
    """Integer ratings whose sums fit 2^24 run in float32, others in float64; the rows
    are float64 with the diagonal 1, and the caller's matrix is not modified."""
    ratings = _ratings(3, "integer")
    before = ratings.copy()
    rows = SimilarityRows("msd", ratings)
    assert rows.dtype == np.float32
    assert SimilarityRows("msd", _ratings(3, "quarters")).dtype == np.float64
    block = rows(np.array([4, 0, 4]))
    assert block.dtype == np.float64 and block.shape == (3, ratings.shape[0])
    assert block[0, 4] == block[1, 0] == block[2, 4] == 1.0
    assert (ratings != before).nnz == 0 and rows.n_rows == 40
    assert rows.block_size(400) == 10 and rows.block_size(1) == 1


def test_rows_reject_what_is_not_a_sum_similarity():
    with pytest.raises(ValueError, match="name"):
        SimilarityRows("pearson_baseline", _ratings(0, "integer"))
