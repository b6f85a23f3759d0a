"""The shared array kernels (dprec.utils._arrays) against their definitions."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from dprec.utils._arrays import (
    distinct_rows,
    has_repeats,
    pattern_matrix,
    safe_divide,
    segment_ids,
    segment_positions,
    stable_descending_order,
    top_k_indices,
    top_mask,
)

# few distinct values, so that ties (the hard part) are common
TIED = arrays(np.float64, st.tuples(st.integers(1, 6), st.integers(1, 9)),
              elements=st.sampled_from([-np.inf, -1.0, 0.0, 0.5, 2.0]))


@settings(max_examples=200, deadline=None)
@given(TIED, st.integers(-1, 10))
def test_top_mask_is_the_head_of_a_stable_descending_sort(values, n):
    reference = np.zeros(values.shape, dtype=bool)
    order = np.argsort(-values, axis=1, kind="stable")[:, :max(0, n)]
    np.put_along_axis(reference, order, True, axis=1)
    np.testing.assert_array_equal(top_mask(values, n), reference)


@settings(max_examples=200, deadline=None)
@given(TIED, st.integers(1, 10), st.booleans())
def test_stable_descending_order_with_a_prefix_equals_the_full_sort(values, prefix, tail):
    full, full_values = stable_descending_order(values, None)
    order, ordered = stable_descending_order(values, prefix, keep_tail=tail)
    head = min(prefix, values.shape[1])
    np.testing.assert_array_equal(order[:, :head], full[:, :head])
    np.testing.assert_array_equal(ordered[:, :head], full_values[:, :head])
    if tail and prefix < values.shape[1]:       # every column follows, the head masked
        rest = order[:, prefix:]
        np.testing.assert_array_equal(rest, np.broadcast_to(np.arange(values.shape[1]),
                                                            rest.shape))
        masked = np.take_along_axis(ordered[:, prefix:], full[:, :prefix], axis=1)
        assert np.isneginf(masked).all()


# rows drawn from a few patterns, so that repeated rows (what `distinct_rows` finds) are
# common; the patterns differ in few places, some beyond the probe's 8 columns
ROWS = st.tuples(arrays(np.float64, st.tuples(st.integers(1, 3), st.integers(1, 12)),
                        elements=st.sampled_from([-np.inf, -1.0, -0.0, 0.0, 0.5])),
                 st.lists(st.integers(0, 2), min_size=1, max_size=12))


@settings(max_examples=200, deadline=None)
@given(ROWS, st.sampled_from([None, 1, 3, 20]), st.booleans())
def test_stable_descending_order_sorts_repeated_rows_once_and_equally(rows, prefix, tail):
    """Each row sorted alone (no repeats to share) gives the same bits as the block,
    whose repeated rows are sorted once; -0.0 and 0.0 are different rows."""
    patterns, picks = rows
    values = patterns[np.array(picks) % len(patterns)]
    order, ordered = stable_descending_order(values, prefix, keep_tail=tail)
    for row in range(len(values)):
        alone, alone_values = stable_descending_order(values[row:row + 1], prefix,
                                                      keep_tail=tail)
        np.testing.assert_array_equal(order[row], alone[0])
        assert ordered[row].tobytes() == alone_values[0].tobytes()


def test_distinct_rows_groups_equal_bits_whatever_the_probe_finds():
    """Every row maps to a row equal to it bit for bit; rows equal past the probe are
    grouped even when the probe's first row differs from them (each row compared with
    its own group's first: the probe only says whether any two rows may be equal);
    -0.0 is not 0.0; float32 and strided input too; ``None`` past ``most`` groups."""
    base = np.arange(40, dtype=np.float64).reshape(2, 20)
    values = base[[0, 1, 0, 0, 1]]
    values[3, 15] = 99.0          # equal to rows 0 and 2 in the first 8 columns only
    first, inverse = distinct_rows(values)
    np.testing.assert_array_equal(values[first][inverse], values)
    assert len(first) == 3 and inverse[0] == inverse[2] and inverse[1] == inverse[4]
    tail = np.zeros((4, 12))
    tail[1:, 10] = 1.0            # rows 1-3 equal, row 0 equal to them in the probe only
    first, inverse = distinct_rows(tail)
    assert len(first) == 2 and inverse[1] == inverse[2] == inverse[3] != inverse[0]
    for probe in (0, 1, 100):
        first, inverse = distinct_rows(tail, probe=probe)
        np.testing.assert_array_equal(tail[first][inverse], tail)
        assert len(first) == 2
    assert distinct_rows(tail, most=1) is None                    # 2 groups: more than 1
    assert len(distinct_rows(tail, probe=0, most=2)[0]) == 2
    strided = np.asfortranarray(tail.astype(np.float32))[:, ::2]
    first, inverse = distinct_rows(strided)
    assert strided[first][inverse].tobytes() == np.ascontiguousarray(strided).tobytes()
    zeros = np.array([[0.0, 1.0], [-0.0, 1.0]])
    assert distinct_rows(zeros) is None                   # -0.0 is not 0.0, bit for bit
    assert distinct_rows(np.eye(3)) is None and distinct_rows(np.ones((1, 4))) is None
    assert distinct_rows(np.ones((3, 0))) is None


def test_top_k_indices_are_the_largest_first_and_break_single_ties_to_the_left():
    keys = np.random.default_rng(0).gumbel(size=(50, 30))
    for k in (1, 2, 7, 30):
        expected = np.argsort(-keys, axis=1)[:, :k]
        np.testing.assert_array_equal(top_k_indices(keys, k), expected)
    tied = np.array([[0.0, 3.0, 3.0, 3.0], [5.0, 5.0, 1.0, 5.0]])
    np.testing.assert_array_equal(top_k_indices(tied, 1), [[1], [0]])
    assert top_k_indices(tied, 1).dtype == np.int64


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16, np.int16])
def test_top_k_indices_are_exact_for_every_k_and_dtype(dtype):
    """Distinct keys: the k largest, largest first, for every k.  A partition guarantees
    only its kth position; float16/int16 take numpy's generic introselect, which (unlike
    the AVX-512 one of float32/64) orders nothing past it."""
    keys = np.stack([np.random.default_rng(row).permutation(40) for row in range(20)])
    expected = np.argsort(-keys, axis=1)
    keys = keys.astype(dtype)
    for k in range(1, 41):
        np.testing.assert_array_equal(top_k_indices(keys, k), expected[:, :k])


def test_pattern_matrix_keeps_stored_zeros_and_the_format():
    matrix = sp.csc_matrix(([0.0, 2.5, -1.0], ([0, 1, 1], [2, 0, 2])), shape=(2, 3))
    ones = pattern_matrix(matrix)
    assert ones.format == "csc" and ones.dtype == np.float64 and ones.nnz == 3
    np.testing.assert_array_equal(ones.toarray(), [[0, 0, 1], [1, 0, 1]])
    assert pattern_matrix(matrix, np.int8).dtype == np.int8
    assert matrix.data.tolist() == [2.5, 0.0, -1.0]          # not modified


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_safe_divide_fills_where_the_denominator_is_zero(dtype):
    numerator = np.array([1.0, 2.0, 3.0], dtype=dtype)
    out = safe_divide(numerator, np.array([0.0, 4.0, -2.0], dtype=dtype))
    np.testing.assert_array_equal(out, [0.0, 0.5, -1.5])
    assert out.dtype == dtype
    np.testing.assert_array_equal(safe_divide(numerator, 0.0, fill=1.0), [1.0, 1.0, 1.0])
    assert safe_divide(np.arange(3), np.array([1, 0, 2])).tolist() == [0.0, 0.0, 1.0]


@settings(max_examples=200, deadline=None)
@given(arrays(np.int64, st.integers(0, 12), elements=st.integers(-5, 5)))
def test_has_repeats_is_whether_np_unique_drops_a_value(values):
    assert has_repeats(values) == (len(np.unique(values)) < len(values))
    assert has_repeats(values.reshape(-1, 1)) == has_repeats(values)      # any shape


def test_has_repeats_finds_one_repeat_among_a_million_keys():
    keys = np.arange(0, 3_000_000, 3, dtype=np.int64)
    assert not has_repeats(keys)
    keys[-1] = keys[123_456]
    assert has_repeats(keys)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 4), max_size=8), st.integers(0, 5))
def test_segments_number_and_place_every_element(lengths, start):
    ids = [start + s for s, n in enumerate(lengths) for _ in range(n)]
    positions = [p for n in lengths for p in range(n)]
    got_ids, got_positions = segment_ids(lengths, start=start), segment_positions(lengths)
    assert got_ids.tolist() == ids and got_positions.tolist() == positions
    assert got_ids.dtype == got_positions.dtype == np.int64
    matrix = sp.random(6, 5, density=0.4, format="csr", random_state=start)
    assert (segment_ids(np.diff(matrix.indptr)) == matrix.tocoo().row).all()


@pytest.mark.parametrize("lengths", [[1.5, 2.0], 3, [[1, 2]]])
def test_segments_refuse_lengths_that_are_not_integers_in_a_row(lengths):
    for helper in (segment_ids, segment_positions):
        with pytest.raises(TypeError, match="lengths must be a 1-d array of integers"):
            helper(lengths)

