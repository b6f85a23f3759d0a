"""The compiled kernels (dprec.utils._kernels) give the numpy code's numbers, and a model
fitted on either path is the same model."""

from __future__ import annotations

import collections

import numpy as np
import pytest
import scipy.sparse as sp

from dprec import PrivateKNN
from dprec.utils import _kernels
from dprec.utils._arrays import pattern_matrix, stable_descending_order

pytestmark = pytest.mark.skipif(not _kernels.AVAILABLE,
                                reason="numba cannot be imported here (a dependency of dprec)")


@pytest.fixture(autouse=True)
def _numba_imported():
    """dprec wraps its kernels at the first `enabled()` of a process (Numba imported
    then); these tests call the kernels directly."""
    _kernels.enabled()


def _padded(sim, rows, starts, lengths, candidates):
    """The candidates' similarities as the numpy path lays them out: one row per query,
    ``-inf`` padding."""
    width = max(int(lengths.max(initial=0)), 1)
    offsets = np.arange(width)
    valid = offsets < lengths[:, None]
    cells = np.where(valid, starts[:, None] + offsets, 0)
    return np.where(valid, sim[rows[:, None], candidates[cells]], -np.inf)


@pytest.mark.parametrize("seed", range(12))
def test_stable_top_is_the_stable_descending_prefix(seed):
    """Descending similarity, ties in candidate order (heapq.nlargest's), padding ``-1`` /
    ``-inf``: equal to stable_descending_order on the padded rows, with many ties (values
    rounded to 0–2 decimals), empty queries and prefixes wider than the candidates."""
    rng = np.random.default_rng(seed)
    n_rows = int(rng.integers(1, 60))
    sim = np.round(rng.random((30, n_rows)), int(rng.integers(0, 3)))
    n_queries = 150
    lengths = rng.integers(0, 120, n_queries)
    lengths[:5] = 0
    candidates = rng.integers(0, n_rows, 2000)
    starts = rng.integers(0, len(candidates) - lengths)
    rows = rng.integers(0, len(sim), n_queries)
    prefix = int(rng.integers(1, 50))
    order, values = _kernels.stable_top(sim, rows, starts, lengths, candidates, prefix)
    expected_order, expected = stable_descending_order(
        _padded(sim, rows, starts, lengths, candidates), prefix)
    width = expected.shape[1]
    assert order.shape == values.shape == (n_queries, prefix)
    np.testing.assert_array_equal(values[:, :width], expected)
    np.testing.assert_array_equal(order[:, :width],
                                  np.where(np.isfinite(expected), expected_order, -1))
    assert (order[:, width:] == -1).all() and np.isneginf(values[:, width:]).all()


@pytest.mark.parametrize("values", ["equal", "extreme", "long"])
def test_stable_top_buckets_resolve_any_spread(values):
    """The value buckets leave the same prefix whatever the spread: all candidates equal
    (one bucket), values from -1e308 to 1e308 (a width that overflows) and 1e-310 apart
    (one that underflows), and lists far longer than the prefix (most buckets above it
    empty)."""
    rng = np.random.default_rng(7)
    n_rows, n_queries = 500, 60
    if values == "equal":
        sim = np.full((4, n_rows), 0.25)
    elif values == "extreme":
        sim = rng.choice([-1e308, 1e308, 0.0, 1e-310, 2e-310, 5e-324], size=(4, n_rows))
    else:
        sim = np.round(rng.normal(size=(4, n_rows)) ** 3, 2)
    lengths = rng.integers(1, 400, n_queries)
    candidates = rng.integers(0, n_rows, 4000)
    starts = rng.integers(0, len(candidates) - lengths)
    rows = rng.integers(0, len(sim), n_queries)
    for prefix in (1, 7, 40):
        order, got = _kernels.stable_top(sim, rows, starts, lengths, candidates, prefix)
        expected_order, expected = stable_descending_order(
            _padded(sim, rows, starts, lengths, candidates), prefix)
        np.testing.assert_array_equal(got, expected)
        np.testing.assert_array_equal(order, np.where(np.isfinite(expected), expected_order,
                                                      -1))


def test_stable_top_stays_in_bounds_on_a_nan():
    """A NaN similarity (outside the contract: similarities are finite) gives some order,
    but every position written is one of the query's candidates."""
    sim = np.linspace(0.0, 1.0, 50)[None, :].copy()
    sim[0, 7] = np.nan
    order, _ = _kernels.stable_top(sim, np.zeros(3, np.int64), np.zeros(3, np.int64),
                                   np.array([50, 30, 10]), np.arange(50), 5)
    assert ((order >= 0) & (order < np.array([50, 30, 10])[:, None])).all()


def test_stable_top_rejects_out_of_bounds_queries():
    sim = np.zeros((3, 4))
    with pytest.raises(ValueError, match="out of bounds"):
        _kernels.stable_top(sim, np.array([3]), np.array([0]), np.array([2]),
                            np.array([0, 1]), 2)
    with pytest.raises(ValueError, match="out of bounds"):
        _kernels.stable_top(sim, np.array([0]), np.array([1]), np.array([2]),
                            np.array([0, 1]), 2)


def test_stable_top_writes_into_the_given_arrays():
    """``out``: the same answer, written into slices of larger arrays; wrong shapes,
    dtypes or layouts are refused."""
    rng = np.random.default_rng(3)
    sim, candidates = rng.random((5, 40)), rng.integers(0, 40, 300)
    rows, starts, lengths = np.arange(5), np.array([0, 50, 90, 200, 250]), np.array(
        [50, 3, 60, 0, 45])
    expected = _kernels.stable_top(sim, rows, starts, lengths, candidates, 8)
    order, values = np.full((9, 8), 7), np.zeros((9, 8))
    got = _kernels.stable_top(sim, rows, starts, lengths, candidates, 8,
                              (order[2:7], values[2:7]))
    assert got[0].base is order and got[1].base is values
    for a, b in zip(expected, (order[2:7], values[2:7])):
        np.testing.assert_array_equal(a, b)
    assert (order[:2] == 7).all() and (order[7:] == 7).all()
    for bad in ((np.zeros((5, 8), np.int32), np.zeros((5, 8))),
                (np.zeros((5, 8), np.int64), np.zeros((5, 9))),
                (np.zeros((8, 5), np.int64).T, np.zeros((5, 8)))):
        with pytest.raises(ValueError, match="out must be"):
            _kernels.stable_top(sim, rows, starts, lengths, candidates, 8, bad)


def _surprise_weighted_mean(positions, weights, starts, values, min_sim):
    """Surprise's loop (``KNNBasic.estimate``) over each query's neighbours, in Python:
    ``w > 0`` over ``Σ w`` at ``min_sim = 0``, else ``w ≠ 0``, ``w > min_sim`` over
    ``Σ |w|``."""
    shift, count = [], []
    for q in range(len(positions)):
        sum_sim = sum_ratings = 0.0
        n = 0
        for p, w in zip(positions[q], weights[q]):
            if p >= 0 and (w > 0 if min_sim == 0 else w != 0 and w > min_sim):
                sum_sim += w if min_sim == 0 else abs(w)
                sum_ratings += w * values[starts[q] + p]
                n += 1
        shift.append(sum_ratings / sum_sim if sum_sim != 0 else 0.0)
        count.append(n)
    return np.array(shift), np.array(count)


@pytest.mark.parametrize("min_sim", [0.0, -np.inf, 0.3, -0.2])
@pytest.mark.parametrize("seed", range(4))
def test_weighted_means_add_as_surprise_on_both_paths(seed, min_sim):
    """Σ w·x / Σ |w| over the neighbours that count, padding ``-1`` and weights ≤
    ``min_sim`` or 0 skipped, 0 where nothing counts: Surprise's loop bit for bit at
    ``min_sim = 0`` (``Σ w``), compiled and in numpy (knn's twin, which adds left to
    right too)."""
    from dprec.knn.rules import weighted_mean as _weighted_mean

    rng = np.random.default_rng(seed)
    n, k = 200, 9
    values = np.round(rng.normal(3.0, 1.5, 500), 1)
    lengths = rng.integers(0, 30, n)
    starts = rng.integers(0, len(values) - lengths)
    positions = np.where(np.arange(k) < np.minimum(lengths, k)[:, None],
                         rng.integers(0, 30, (n, k)) % np.maximum(lengths, 1)[:, None], -1)
    weights = np.where(positions >= 0, rng.normal(0.2, 0.5, (n, k)), 0.0)
    weights[::7] = 0.0                                   # nothing counts on these rows
    expected = _surprise_weighted_mean(positions, weights, starts, values, min_sim)
    for compiled in (True, False):
        previous = _kernels.set_enabled(compiled)
        try:
            shift, count = _weighted_mean(positions, weights, starts, values, min_sim)
        finally:
            _kernels.set_enabled(previous)
        np.testing.assert_array_equal(shift, expected[0])
        np.testing.assert_array_equal(count, expected[1])
    assert (expected[1][::7] == 0).all() and (expected[0][::7] == 0).all()


def test_weighted_means_reject_bad_arguments():
    positions, weights = np.array([[0, 2, -1]]), np.array([[0.5, 0.25, 0.0]])
    with pytest.raises(ValueError, match="outside the values"):
        _kernels.weighted_means(positions, weights, np.array([1]), np.ones(3), 0.0)
    with pytest.raises(ValueError, match=r"\(n, k\)"):
        _kernels.weighted_means(positions, weights[:, :2], np.array([0]), np.ones(3), 0.0)
    with pytest.raises(ValueError, match=r"\(n, k\)"):
        _kernels.weighted_means(positions, weights, np.array([0, 0]), np.ones(3), 0.0)
    shift, count = _kernels.weighted_means(positions, weights, np.array([0]),
                                           np.array([2.0, 9.0, 4.0]), 0.0)
    assert shift[0] == (0.5 * 2.0 + 0.25 * 4.0) / 0.75 and count[0] == 2


def test_weighted_means_of_signed_zeros_start_from_zero_on_both_paths():
    """A loop from 0 adds ``-0.0`` to ``0.0``: the numpy twin's sums give ``+0.0`` too."""
    from dprec.knn.rules import weighted_mean as _weighted_mean

    for compiled in (True, False):
        previous = _kernels.set_enabled(compiled)
        try:
            shift, _ = _weighted_mean(np.array([[0]]), np.array([[-0.5]]), np.array([0]),
                                      np.array([0.0]), -np.inf)
        finally:
            _kernels.set_enabled(previous)
        assert shift[0] == 0.0 and not np.signbit(shift[0])


@pytest.mark.parametrize("integer", [True, False])
def test_co_rated_sums_equal_the_sparse_products(integer):
    """Every sum over co-rated columns equals its sparse product (bit for bit with integer
    ratings, to rounding otherwise); stored zero ratings count; rows in any order, and
    an output left out (None) is not written."""
    ratings = sp.random(70, 90, density=0.15, format="csr", random_state=3)
    ratings.data = np.ceil(ratings.data * 5) if integer else ratings.data * 5
    ratings.data[::9] = 0.0
    pattern, squares = pattern_matrix(ratings), ratings.multiply(ratings).tocsr()
    expected = {"freq": pattern @ pattern.T, "sq_i": squares @ pattern.T,
                "sq_j": pattern @ squares.T, "prods": ratings @ ratings.T,
                "s_i": ratings @ pattern.T, "s_j": pattern @ ratings.T}
    rows = np.array([5, 0, 69, 5, 33])
    sums = tuple(np.zeros((len(rows), 70)) for _ in expected)
    _kernels.add_co_rated_sums(rows, *_kernels.rating_triples(ratings), sums)
    for (name, product), got in zip(expected.items(), sums):
        want = product.toarray()[rows]
        if integer:
            np.testing.assert_array_equal(got, want, err_msg=name)
        else:
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, err_msg=name)
    partial = (None, np.zeros((len(rows), 70)), None, np.zeros((len(rows), 70)), None, None)
    _kernels.add_co_rated_sums(rows, *_kernels.rating_triples(ratings), partial)
    np.testing.assert_array_equal(partial[3], sums[3])


def test_upper_sums_are_the_upper_triangle():
    """``upper=True`` adds only the pairs ``v >= u`` (each column's raters are sorted
    once by rating_triples, whatever the input's order)."""
    ratings = sp.random(40, 30, density=0.2, format="csr", random_state=4)
    ratings.data = np.ceil(ratings.data * 5)
    reversed_ = np.concatenate([np.arange(stop - 1, start - 1, -1) for start, stop
                                in zip(ratings.indptr[:-1], ratings.indptr[1:])])
    shuffled = sp.csr_matrix((ratings.data[reversed_], ratings.indices[reversed_],
                              ratings.indptr), shape=(40, 30))   # columns unsorted in rows
    assert not shuffled.has_sorted_indices
    rows = np.arange(40)
    full, upper = (tuple(np.zeros((40, 40)) for _ in range(6)) for _ in range(2))
    _kernels.add_co_rated_sums(rows, *_kernels.rating_triples(shuffled), full)
    _kernels.add_co_rated_sums(rows, *_kernels.rating_triples(shuffled), upper, upper=True)
    for a, b in zip(full, upper):
        np.testing.assert_array_equal(np.triu(a), b)
    assert not shuffled.has_sorted_indices          # the input is not sorted in place


@pytest.mark.parametrize("integer", [True, False])
@pytest.mark.parametrize("with_sums", [True, False])
def test_whole_matrix_sums_equal_on_both_paths(integer, with_sums):
    """exact.co_rated_sums, compiled (upper triangle, then mirrored) and by dense
    products: the same sums, bit for bit with integer ratings, in the same dtypes."""
    from dprec.similarity import exact

    ratings = sp.random(80, 60, density=0.12, format="csr", random_state=8)
    ratings.data = np.ceil(ratings.data * 5) if integer else ratings.data * 5
    ratings.data[::11] = 0.0
    results = []
    for compiled in (True, False):
        previous = _kernels.set_enabled(compiled)
        try:
            results.append(exact.co_rated_sums(ratings, with_sums=with_sums))
        finally:
            _kernels.set_enabled(previous)
    for a, b in zip(*results):
        if a is None:
            assert b is None
            continue
        assert a.dtype == b.dtype
        if integer:
            np.testing.assert_array_equal(a, b)
        else:
            np.testing.assert_allclose(a, b, rtol=1e-6 if a.dtype == np.float32 else 1e-12,
                                       atol=1e-9)


@pytest.mark.parametrize("integer", [True, False])
@pytest.mark.parametrize("name", ["msd", "cosine", "pearson"])
def test_similarity_rows_equal_the_similarity_of_the_sums(integer, name):
    """Each row straight from its sums: the numpy expression of the sparse products' sums
    (bit for bit with integer ratings, to rounding otherwise), for rows in any order and
    repeated, with stored zero ratings, min_support, and ``upper`` writing only
    ``v >= u``."""
    from dprec.similarity.exact import similarity_from_sums

    ratings = sp.random(60, 50, density=0.15, format="csr", random_state=5)
    ratings.data = np.ceil(ratings.data * 5) if integer else ratings.data * 5
    ratings.data[::7] = 0.0
    pattern, squares = pattern_matrix(ratings), ratings.multiply(ratings).tocsr()
    freq, prods = (pattern @ pattern.T).toarray(), (ratings @ ratings.T).toarray()
    sq_i, s_i = (squares @ pattern.T).toarray(), (ratings @ pattern.T).toarray()
    rows = np.array([4, 0, 59, 4, 31])
    triples = _kernels.rating_triples(ratings)
    for min_support in (1, 3):
        expected = similarity_from_sums(name, freq, s_i, s_i.T, sq_i, sq_i.T, prods)
        expected[freq < min_support] = 0.0
        np.fill_diagonal(expected, 1.0)
        got = np.zeros((len(rows), 60))
        _kernels.similarity_rows(name, rows, *triples, got, min_support)
        upper = np.zeros((len(rows), 60))
        _kernels.similarity_rows(name, rows, *triples, upper, min_support, upper=True)
        if integer:
            np.testing.assert_array_equal(got, expected[rows])
        else:
            np.testing.assert_allclose(got, expected[rows], rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(upper, np.where(np.arange(60) >= rows[:, None], got, 0))


@pytest.mark.parametrize("name", ["msd", "cosine", "pearson"])
def test_similarity_rows_equal_the_sums_path_on_real_valued_ratings(name):
    """With the kernels on, the similarity top-k uses (rows straight from each row's
    sums) and the one the private selectors use with their sums (RS) are one function,
    bit for bit, also where float64 sums round (ratings to 0.01 on [-10, 10])."""
    from dprec.similarity.exact import exact_similarity, exact_similarity_and_sums

    ratings = sp.random(70, 40, density=0.3, format="csr", random_state=11)
    ratings.data = np.round(ratings.data * 20 - 10, 2)
    np.testing.assert_array_equal(exact_similarity(name, ratings),
                                  exact_similarity_and_sums(name, ratings)[0])


def test_similarity_rows_reject_bad_arguments():
    triples = _kernels.rating_triples(sp.random(10, 8, density=0.3, format="csr",
                                                random_state=0))
    with pytest.raises(ValueError, match="name"):
        _kernels.similarity_rows("jaccard", np.array([0]), *triples, np.zeros((1, 10)))
    with pytest.raises(ValueError, match="rows"):
        _kernels.similarity_rows("msd", np.array([10]), *triples, np.zeros((1, 10)))
    for bad in (np.zeros((1, 9)), np.zeros((1, 10), dtype=np.float32), np.zeros((10, 2)).T):
        with pytest.raises(ValueError, match="C-contiguous"):
            _kernels.similarity_rows("msd", np.arange(len(bad)), *triples, bad)


def test_co_rated_sums_reject_mismatched_outputs():
    ratings = sp.random(10, 8, density=0.3, format="csr", random_state=0)
    triples = _kernels.rating_triples(ratings)
    good = np.zeros((2, 10))
    for rows in (np.array([0, 10]), np.array([-1, 2])):          # no id outside [0, n)
        with pytest.raises(ValueError, match="rows"):
            _kernels.add_co_rated_sums(rows, *triples, (None, good, None, good, None, None))
    with pytest.raises(ValueError, match="always computed"):
        _kernels.add_co_rated_sums(np.array([0, 1]), *triples,
                                   (None, good, None, None, None, None))
    for bad in (np.zeros((2, 9)), np.zeros((2, 10), dtype=np.float32),
                np.zeros((10, 2)).T):
        with pytest.raises(ValueError, match="C-contiguous"):
            _kernels.add_co_rated_sums(np.array([0, 1]), *triples,
                                       (None, good, None, bad, None, None))


def _count_kernel_calls(monkeypatch) -> collections.Counter:
    """Calls of each public kernel of `dprec.utils._kernels` from now on, by name (the models
    call them through the module)."""
    calls = collections.Counter()
    for name in ("add_co_rated_sums", "similarity_rows", "stable_top", "weighted_means"):
        kernel = getattr(_kernels, name)

        def counted(*args, _kernel=kernel, _name=name, **kwargs):
            calls[_name] += 1
            return _kernel(*args, **kwargs)

        monkeypatch.setattr(_kernels, name, counted)
    return calls


@pytest.mark.parametrize("storage", ["dense", "blocked"])
@pytest.mark.parametrize("user_based", [True, False])
@pytest.mark.parametrize("name", ["msd", "cosine", "pearson"])
def test_both_paths_fit_the_same_model(split, storage, user_based, name, monkeypatch):
    """A model fitted and tested on the compiled path and on the numpy path: the same
    similarities, predictions, details and neighbours, bit for bit (integer ratings)."""
    trainset, testset = split
    calls = _count_kernel_calls(monkeypatch)
    results = []
    for compiled in (True, False):
        previous = _kernels.set_enabled(compiled)
        try:
            algo = PrivateKNN(k=7, sim_options={"name": name, "user_based": user_based},
                              storage=storage, verbose=False).fit(trainset)
            predictions = [(p.est, p.details) for p in algo.test(testset)]
            n = trainset.n_users if user_based else trainset.n_items
            neighbours = algo.kneighbors(np.arange(n) % 9, np.arange(n) % 11)
            sim = algo.compute_similarities() if storage == "blocked" else algo.sim
            results.append((sim, predictions, neighbours))
        finally:
            _kernels.set_enabled(previous)
        # each path is the one asked for: the kernels ran on the first, never on the second
        assert (sum(calls.values()) > 0) == compiled, calls
        calls.clear()
    (sim_a, predictions_a, neighbours_a), (sim_b, predictions_b, neighbours_b) = results
    np.testing.assert_array_equal(sim_a, sim_b)
    assert predictions_a == predictions_b
    for a, b in zip(neighbours_a, neighbours_b):
        np.testing.assert_array_equal(a, b)


def test_the_kernels_can_be_turned_off():
    """``set_enabled(False)`` routes everything to numpy and returns the old setting."""
    previous = _kernels.set_enabled(False)
    try:
        assert not _kernels.enabled()
        assert _kernels.set_enabled(True) is False
        assert _kernels.enabled()
    finally:
        _kernels.set_enabled(previous)


def test_warm_up_loads_the_kernels_once_and_is_nothing_when_off():
    assert _kernels.warm_up() > 0.0
    previous = _kernels.set_enabled(False)
    try:
        assert _kernels.warm_up() == 0.0
    finally:
        _kernels.set_enabled(previous)


def test_warm_up_says_once_when_it_compiles(monkeypatch):
    """``compiling`` is called once, as soon as a kernel had to be compiled (no disk
    cache: the first run after installing), and not when every kernel is loaded."""
    told = []
    _kernels.warm_up()
    _kernels.warm_up(compiling=lambda: told.append("compiling"))
    assert told == []                          # all loaded in this process already
    compiled = iter(range(100))                # as if each kernel loaded were compiled
    monkeypatch.setattr(_kernels, "_compiled", lambda: next(compiled))
    _kernels.warm_up(compiling=lambda: told.append("compiling"))
    assert told == ["compiling"]


#: a process on a platform without Numba (``import numba`` fails): dprec's numpy code only;
#: prints the estimates of two models (item and user neighbourhood) on small synthetic data
WITHOUT_NUMBA = """
import json, sys
sys.modules["numba"] = None
from dprec import _kernels
from tests.test_kernels import estimates_of_two_models
assert not _kernels.AVAILABLE and not _kernels.enabled() and _kernels.warm_up() == 0.0
print(json.dumps(estimates_of_two_models()))
"""


def estimates_of_two_models() -> list[list]:
    """The estimates compared by `test_the_numpy_path_without_numba_is_the_compiled_one`."""
    from dprec.datasets import synthetic

    trainset = synthetic(n_users=120, n_items=200, n_ratings=4000,
                         random_state=0).build_full_trainset()
    pairs = trainset.build_testset()[:800] + trainset.build_anti_testset()[:800]
    return [[(p.est, p.details["was_impossible"]) for p in PrivateKNN(
        k=7, sim_options={"name": "cosine"}, neighbourhood=neighbourhood,
        verbose=False).fit(trainset).test(pairs)] for neighbourhood in ("item", "user")]


def test_the_numpy_path_without_numba_is_the_compiled_one():
    """Where Numba cannot be imported (a platform it does not support: its import fails in
    a new process) dprec runs its numpy code, and the models' estimates are the compiled
    kernels' bit for bit (floats through JSON are exact)."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root),
                                                        os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run([sys.executable, "-c", WITHOUT_NUMBA], cwd=root, env=env,
                            capture_output=True, text=True, timeout=300,
                            stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stderr[-3000:]
    without = json.loads(result.stdout.strip().splitlines()[-1])
    assert _kernels.enabled()
    compiled = estimates_of_two_models()
    assert without == [[list(pair) for pair in model] for model in compiled]
