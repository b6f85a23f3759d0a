"""Items × items matrices held as one vector per item (dprec.endtoend.pairwise): the pairs,
the rows and the whole matrix agree bit for bit with each other and with the stored
matrix they replace, and DPItemKNN(similarity="factors") holds n d numbers, not n²."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import STRONG_SIGNAL

from dprec import DPItemKNN, datasets
from dprec.endtoend import pairwise
from dprec.endtoend.pairwise import FactorCosines, PairSums


def some_factors() -> np.ndarray:
    out = np.random.default_rng(3).normal(size=(50, 8))
    out[[4, 17]] = 0.0                         # items without a factor: similarity 0
    return out


@pytest.fixture
def factors():
    return some_factors()


def test_the_cosines_are_the_clipped_cosines_and_zero_for_a_zero_factor(factors):
    whole = np.asarray(FactorCosines(factors))
    norms = np.linalg.norm(factors, axis=1)
    unit = np.divide(factors, norms[:, None], out=np.zeros_like(factors),
                     where=norms[:, None] > 0)
    np.testing.assert_allclose(whole, np.clip(unit @ unit.T, -1, 1), rtol=0, atol=1e-15)
    assert (whole[[4, 17]] == 0).all() and (whole[:, [4, 17]] == 0).all()
    assert (np.abs(whole) <= 1).all() and not whole.flags.writeable
    assert whole.shape == (50, 50) and np.array_equal(whole, whole.T)
    assert not np.asarray(FactorCosines(np.zeros((7, 0)))).any()      # d = 0: all zero


@settings(max_examples=30, deadline=None)
@given(rows=st.lists(st.integers(-50, 49), min_size=1, max_size=30),
       width=st.integers(1, 12), chunk=st.sampled_from([1, 7, 1 << 22]))
def test_pairs_rows_and_the_whole_agree_bit_for_bit_in_any_chunks(rows, width, chunk):
    rng = np.random.default_rng(len(rows) + width)
    cols = rng.integers(0, 50, size=(len(rows), width))
    for matrix in (FactorCosines(some_factors()), PairSums(np.linspace(0.0, 3.0, 50))):
        whole = np.asarray(matrix)                    # in chunks of 2^22 pairs
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(pairwise, "_CHUNK", chunk)
            pairs, row, some_rows = (matrix[np.array(rows)[:, None], cols], matrix[rows[0]],
                                     matrix[np.array(rows)])
            one = matrix[rows[0], int(cols[0, 0])]
        assert pairs.dtype == whole.dtype
        np.testing.assert_array_equal(pairs, whole[np.array(rows)[:, None], cols])
        np.testing.assert_array_equal(row, whole[rows[0]])
        np.testing.assert_array_equal(some_rows, whole[np.array(rows)])
        assert one == whole[rows[0], cols[0, 0]]


def test_the_noise_sums_are_summed_in_float64_then_stored_in_float32():
    values = np.array([0.1, 1e-9, 2.5])
    sums = np.asarray(PairSums(values))
    assert sums.dtype == np.float32
    np.testing.assert_array_equal(sums, (values[:, None] + values[None, :]).astype(np.float32))


@pytest.mark.parametrize("key", [(0, 50), (np.array([-51]), 0), 50, (slice(None), 0),
                                 (0, 1, 2)])
def test_an_id_outside_the_matrix_or_a_slice_pair_is_an_index_error(factors, key):
    with pytest.raises(IndexError):
        FactorCosines(factors)[key]


def stored(value) -> int:
    """The numbers an array, or a PairMatrix's vectors, hold."""
    if isinstance(value, np.ndarray):
        return value.size
    return sum(part.size for part in vars(value).values() if isinstance(part, np.ndarray))


def test_dpitemknn_on_factors_holds_no_items_by_items_array():
    # 2,000 listed items, 80 of them rated: the model holds the factors (n d numbers);
    # a stored matrix would hold n² = 4,000,000 per similarity and noise
    data = datasets.synthetic(200, 80, 3000, random_state=2, **STRONG_SIGNAL)
    trainset = data.build_full_trainset()
    items = [trainset.to_raw_iid(i) for i in trainset.all_items()]
    items += [f"unrated {n}" for n in range(2000 - len(items))]
    model = DPItemKNN(similarity="factors", items=items, epsilon=5.0, random_state=0)
    model.fit(trainset)
    sizes = {name: stored(value) for name, value in vars(model).items()
             if isinstance(value, (np.ndarray, pairwise.PairMatrix))}
    assert sizes and max(sizes.values()) < 2000 * 100, sizes
    assert model.sim.shape == (2000, 2000)                    # computed when read
    row = model.sim.loc[items[0]].to_numpy()
    np.testing.assert_array_equal(row, model._sim[0])


def test_the_whole_matrix_takes_its_own_memory_and_a_chunk_more():
    # np.asarray(m) once ravelled the broadcast rows and columns first: two n² int64
    # arrays beside the n² result (84 GB more for the 25M shape's sim)
    matrix = FactorCosines(np.random.default_rng(0).normal(size=(600, 8)))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pairwise, "_CHUNK", 4096)
        tracemalloc.start()
        try:
            whole = np.asarray(matrix)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert whole.shape == (600, 600) and peak < 1.5 * whole.nbytes, peak / whole.nbytes


def test_the_whole_matrix_is_refused_before_it_starts_when_memory_is_short(monkeypatch):
    # model.sim of the factors model at the 25M shape builds 59,047² float64s (26 GiB):
    # the kernel killed the process instead of raising
    from dprec.utils import _memory

    matrix = FactorCosines(np.random.default_rng(0).normal(size=(300, 4)))
    monkeypatch.setattr(_memory, "available_bytes", lambda: 300 * 300 * 8 - 1)
    with monkeypatch.context() as patch:
        patch.setattr(FactorCosines, "_entries", lambda *_: pytest.fail("it started"))
        with pytest.raises(MemoryError, match=r"^the whole 300 x 300 matrix needs .* read "
                                              r"the pairs you need instead: m\[rows, cols\]"):
            np.asarray(matrix)
    monkeypatch.setattr(_memory, "available_bytes", lambda: 300 * 300 * 8)
    assert np.asarray(matrix)[2, 3] == matrix[2, 3]


def test_one_pair_is_a_scalar_and_asarray_refuses_copy_false(factors):
    matrix = FactorCosines(factors)
    one = matrix[3, 5]
    assert isinstance(one, np.float64) and one == np.asarray(matrix)[3, 5]
    with pytest.raises(ValueError, match="copy=False"):
        np.asarray(matrix, copy=False)
    assert not np.asarray(PairSums(np.ones(3)), dtype=np.float64).flags.writeable
