"""The centred cosine (dprec.similarity.centered): LensKit's kNN similarity against the
obvious formula, its RS against leave-one-rating-out recomputation, both kernel paths,
blocked rows, and PrivateKNN with every rule, selector and neighbourhood."""

from __future__ import annotations

import copy
import itertools
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from strategies import raises_naming

from dprec import PrivateKNN
from dprec.similarity import check_sim_options, exact
from dprec.similarity.centered import centered_unit_rows
from dprec.similarity.rows import SimilarityRows
from dprec.utils import _kernels
from dprec.utils._ratings import RatingArrays

NAME = "centered_cosine"


def reference(values: np.ndarray, rated: np.ndarray, min_support: int = 1) -> np.ndarray:
    """The centred cosine by its definition, on dense arrays: each row centred at the mean
    of its ratings (missing 0; rows whose ratings are all equal are 0), the cosine over
    all entries, 0 below ``min_support`` co-rated entries, diagonal 1."""
    n = len(values)
    centred = np.zeros_like(values)
    for u in range(n):
        mine = values[u, rated[u]]
        if len(mine) and mine.max() > mine.min():
            centred[u, rated[u]] = mine - mine.mean()
    norms = np.linalg.norm(centred, axis=1)
    sim = np.zeros((n, n))
    for u, v in itertools.product(range(n), repeat=2):
        if norms[u] > 0 and norms[v] > 0:
            sim[u, v] = centred[u] @ centred[v] / (norms[u] * norms[v])
    sim[rated.astype(float) @ rated.T.astype(float) < min_support] = 0.0
    np.fill_diagonal(sim, 1.0)
    return sim


def brute_force_rs(values: np.ndarray, rated: np.ndarray, min_support: int) -> np.ndarray:
    """``RS(u)``: the largest change of ``sim(u, v)``, ``v != u``, by removing any one
    rating and recomputing (floored at 1e-6)."""
    sim = reference(values, rated, min_support)
    rs = np.zeros(len(values))
    for u, i in zip(*np.nonzero(rated)):
        fewer = rated.copy()
        fewer[u, i] = False
        change = np.abs(sim - reference(values, fewer, min_support))
        np.fill_diagonal(change, 0.0)
        rs = np.maximum(rs, change.max(axis=1))
    return np.maximum(rs, 1e-6)


def random_ratings(seed: int, kind: str, n: int = 22, m: int = 14):
    """``(values, rated, csr)``: random ratings with the cases that matter: a single
    rating, all-equal ratings (integers, and 0.1 ten times, whose float mean is not 0.1),
    two values with one odd out (equal once it is removed), an empty row, stored zero
    ratings; ``kind`` is "integer" (1..5), "quarters" or "real"."""
    rng = np.random.default_rng(seed)
    rated = rng.random((n, m)) < 0.35
    steps = {"integer": 1, "quarters": 4}.get(kind)
    values = (np.ceil(rng.random((n, m)) * 5 * steps) / steps if steps
              else rng.random((n, m)) * 5)
    values[rng.random((n, m)) < 0.05] = 0.0                  # stored ratings of 0
    rated[0], rated[1], rated[2], rated[3], rated[4] = False, False, False, False, False
    rated[0, 3] = True                                       # one rating
    rated[1, :5], values[1, :5] = True, 3.0                  # all equal
    rated[2, :10], values[2, :10] = True, 0.1                # all equal, inexact mean
    rated[3, :6], values[3, :6] = True, [2, 2, 2, 2, 2, 5]   # equal once the 5 is removed
    values = np.where(rated, values, 0.0)
    rows, columns = np.nonzero(rated)
    return values, rated, sp.csr_matrix((values[rows, columns], (rows, columns)),
                                        shape=(n, m))


@pytest.mark.parametrize("kind", ["integer", "quarters", "real"])
@pytest.mark.parametrize("min_support", [0, 1, 3])
def test_similarity_is_the_centred_cosine_over_all_entries(kernel_path, kind, min_support):
    """The whole matrix (alone and with its sums) and every block of rows equal the dense
    formula; rows whose ratings are all equal (0.1 ten times too) are 0 off the diagonal."""
    for seed in range(3):
        values, rated, ratings = random_ratings(seed, kind)
        expected = reference(values, rated, min_support)
        whole = exact.exact_similarity(NAME, ratings, min_support)
        np.testing.assert_allclose(whole, expected, rtol=0, atol=1e-12)
        with_sums, _ = exact.exact_similarity_and_sums(NAME, ratings, min_support)
        np.testing.assert_allclose(with_sums, expected, rtol=0, atol=1e-12)
        assert (np.abs(whole) <= 1.0).all() and (whole == whole.T).all()
        for row in (0, 1, 2, 4):
            assert not np.delete(whole[row], row).any()
        rows = SimilarityRows(NAME, ratings, min_support)
        for block in np.array_split(np.random.default_rng(seed).permutation(len(values)), 4):
            np.testing.assert_allclose(rows(block), expected[block], rtol=0, atol=1e-12)


def test_unit_rows_keep_the_pattern_and_leave_the_input():
    values, rated, ratings = random_ratings(0, "real")
    before = ratings.copy()
    unit = centered_unit_rows(ratings)
    assert unit.nnz == ratings.nnz and (unit.indices == ratings.indices).all()
    assert (ratings != before).nnz == 0 and (ratings.data == before.data).all()
    norms = np.sqrt(np.asarray(unit.multiply(unit).sum(axis=1)).ravel())
    flat = np.array([len(set(row[mine])) <= 1 for row, mine in zip(values, rated)])
    assert flat[[0, 1, 2, 4]].all() and not flat.all()
    assert (unit[np.flatnonzero(flat)].data == 0.0).all()   # exactly 0, not rounding
    np.testing.assert_allclose(norms[~flat], 1.0, rtol=1e-14)
    np.testing.assert_allclose(np.asarray(unit.sum(axis=1)).ravel(), 0.0, atol=1e-14)


@pytest.mark.parametrize("kind", ["integer", "real"])
@pytest.mark.parametrize("min_support", [0, 1, 2])
def test_rs_is_the_largest_change_by_removing_one_rating(kernel_path, kind, min_support):
    """``RS(u)`` from the closed form equals removing each rating in turn and recomputing
    the whole matrix, for the whole matrix and for blocks of rows."""
    values, rated, ratings = random_ratings(7 + min_support, kind, n=16, m=11)
    expected = brute_force_rs(values, rated, min_support)
    sim, sums = exact.exact_similarity_and_sums(NAME, ratings, min_support)
    rs = exact.recommendation_aware_sensitivity(NAME, ratings, sim, sums, min_support)
    np.testing.assert_allclose(rs, expected, rtol=0, atol=1e-10)
    rows = SimilarityRows(NAME, ratings, min_support)
    for block in (np.array([5, 0, 3]), np.arange(len(values))[::-1], np.array([], int)):
        np.testing.assert_allclose(rows.sensitivity(block), expected[block], rtol=0,
                                   atol=1e-10)
    assert rs[0] == rs[1] == rs[2] == 1e-6      # all equal with or without any one rating


def test_compiled_and_numpy_paths_agree():
    """The same similarities and RS either way (to rounding: the sums run in other
    orders); with the kernels blocks of rows are the matrix's rows bit for bit."""
    if not _kernels.AVAILABLE:
        pytest.skip("numba cannot be imported here")
    _, _, ratings = random_ratings(3, "real", n=40, m=30)
    results = []
    for compiled in (True, False):
        previous = _kernels.set_enabled(compiled)
        try:
            sim, sums = exact.exact_similarity_and_sums(NAME, ratings, 2)
            rs = exact.recommendation_aware_sensitivity(NAME, ratings, sim, sums, 2)
            rows = SimilarityRows(NAME, ratings, 2)
            ids = np.array([7, 1, 30])
            results.append((exact.exact_similarity(NAME, ratings, 2), sim, rs))
            if compiled:
                np.testing.assert_array_equal(rows(ids), sim[ids])
                np.testing.assert_array_equal(rows.sensitivity(ids), rs[ids])
        finally:
            _kernels.set_enabled(previous)
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)


@pytest.mark.parametrize("user_based", [True, False])
def test_privateknn_rows_are_users_or_items(split, user_based):
    """User-based: users' vectors over the items, centred at each user's mean; item-based:
    items' vectors over the users, centred at each item's mean."""
    trainset, _ = split
    matrix = RatingArrays.from_trainset(trainset, user_based).matrix
    algo = PrivateKNN(sim_options={"name": "Centered_Cosine", "user_based": user_based},
                      verbose=False).fit(trainset)
    dense = matrix.toarray()
    rated = np.zeros(matrix.shape, dtype=bool)
    rated[np.repeat(np.arange(matrix.shape[0]), np.diff(matrix.indptr)), matrix.indices] = True
    np.testing.assert_allclose(algo.sim, reference(dense, rated), rtol=0, atol=1e-12)
    assert algo.sim_options_["name"] == NAME
    assert algo.sim.shape[0] == (trainset.n_users if user_based else trainset.n_items)


@pytest.mark.parametrize("neighbourhood", ["item", "user"])
@pytest.mark.parametrize("prediction", ["basic", "means", "zscore", "baseline"])
def test_every_rule_and_selector_fits_and_predicts(split, neighbourhood, prediction):
    trainset, testset = split
    for selector, user_based in itertools.product(
            ("topk", "probabilistic", "pncf", "pncf_corrected", "ppns"), (True, False)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")               # privacy notes of the report
            algo = PrivateKNN(k=7, sim_options={"name": NAME, "user_based": user_based},
                              prediction=prediction, selector=selector,
                              neighbourhood=neighbourhood, random_state=0,
                              verbose=False).fit(trainset)
            estimates = [p.est for p in algo.test(testset[:300])]
        assert np.isfinite(estimates).all(), (selector, user_based)
        if algo.selector_.needs_sensitivity:
            assert np.isfinite(algo.sensitivity_).all() and (algo.sensitivity_ > 0).all()


@pytest.mark.parametrize("selector, neighbourhood, user_based", [
    ("topk", "item", True), ("ppns", "user", True), ("pncf", "item", False),
    ("probabilistic", "user", False)])
def test_blocked_storage_gives_the_same_model(split, selector, neighbourhood, user_based):
    """Rows computed for each batch of queries give the dense matrix's predictions, RS
    and neighbours: bit for bit with the kernels (each pair summed in one order), to
    rounding in numpy (sparse products against dense ones)."""
    trainset, testset = split
    fitted = []
    for storage in ("dense", "blocked"):
        algo = PrivateKNN(k=5, sim_options={"name": NAME, "user_based": user_based,
                                            "min_support": 2},
                          selector=selector, neighbourhood=neighbourhood, random_state=7,
                          verbose=False, storage=storage).fit(trainset)
        assert algo.storage_ == storage
        fitted.append(([p.est for p in algo.test(testset)], algo.sensitivity_,
                       algo.get_neighbors(3, 5)))
    (dense, dense_rs, dense_neighbours), (blocked, blocked_rs, blocked_neighbours) = fitted
    if _kernels.enabled():
        assert dense == blocked and dense_neighbours == blocked_neighbours
        if dense_rs is not None:
            np.testing.assert_array_equal(dense_rs, blocked_rs)
    else:
        np.testing.assert_allclose(dense, blocked, rtol=0, atol=1e-9)


#: a process where ``import numba`` fails: dprec's numpy code only; prints
#: `models_of_both_orientations`
WITHOUT_NUMBA = """
import json, sys
sys.modules["numba"] = None
from dprec import _kernels
from tests.test_centered_cosine import models_of_both_orientations
assert not _kernels.AVAILABLE and not _kernels.enabled()
print(json.dumps(models_of_both_orientations()))
"""


def models_of_both_orientations() -> list[list]:
    """Per orientation (user-, item-based) on small synthetic data: the estimates of top-k
    with the centred cosine (means rule, user and item neighbourhood) and every row's RS."""
    from dprec.datasets import synthetic

    trainset = synthetic(n_users=120, n_items=200, n_ratings=4000,
                         random_state=0).build_full_trainset()
    pairs = trainset.build_testset()[:500] + trainset.build_anti_testset()[:500]
    out = []
    for user_based in (True, False):
        ratings = RatingArrays.from_trainset(trainset, user_based).matrix
        sim, sums = exact.exact_similarity_and_sums(NAME, ratings, 2)
        out.append([[p.est for p in PrivateKNN(
            k=5, sim_options={"name": NAME, "user_based": user_based}, prediction="means",
            neighbourhood=neighbourhood, verbose=False).fit(trainset).test(pairs)]
            for neighbourhood in ("user", "item")] + [
            exact.recommendation_aware_sensitivity(NAME, ratings, sim, sums, 2).tolist()])
    return out


def test_without_numba_the_models_are_the_kernels_ones():
    """Where Numba cannot be imported dprec runs its numpy code (every removal computed,
    sums in another order): the same top-k estimates and RS, to rounding."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    if not _kernels.AVAILABLE:
        pytest.skip("numba cannot be imported here")
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), str(root / "tests"),
                                                        os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run([sys.executable, "-c", WITHOUT_NUMBA], cwd=root, env=env,
                            capture_output=True, text=True, timeout=300,
                            stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stderr[-3000:]
    without = json.loads(result.stdout.strip().splitlines()[-1])
    for compiled, numpy_only in zip(models_of_both_orientations(), without):
        for a, b in zip(compiled, numpy_only):
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)


def test_options_and_the_places_that_take_only_some_similarities(split, tmp_path, capsys):
    """``sim_options`` takes the name in any case and Surprise's exact keys only; the
    attack refits it in full (no incremental form: one rating moves its row's mean);
    Surprise's KNNBasic does not know it (one line, status 2); fit_precomputed takes it."""
    from dprec.attacks.runners import make_runner
    from dprec.cli import main
    from dprec.experiments._shared_fits import SharedFits
    from dprec.similarity.incremental import IncrementalSimilarity

    assert check_sim_options({"name": "CENTERED_COSINE"}) == {
        "name": NAME, "user_based": True, "min_support": 1}
    raises_naming(lambda: check_sim_options({"name": NAME, "shrinkage": 10}), "shrinkage")
    raises_naming(lambda: IncrementalSimilarity.fit(NAME, sp.csr_matrix((3, 3))), "name")
    algo = PrivateKNN(k=5, sim_options={"name": NAME}, selector="ppns", neighbourhood="user",
                      random_state=0, verbose=False)
    # the attack updates its user-centred rows incrementally (IncrementalCenteredSimilarity)
    assert make_runner("x", algo).sim_key == ("exact", NAME, 1)
    trainset, testset = split
    full = copy.deepcopy(algo).fit(trainset)
    shared = SharedFits(trainset).fit(copy.deepcopy(algo))
    assert [p.est for p in shared.test(testset)] == [p.est for p in full.test(testset)]
    given = copy.deepcopy(algo).fit_precomputed(trainset, full.sim, full.sensitivity_)
    assert [p.est for p in given.test(testset)] == [p.est for p in full.test(testset)]
    try:
        status = main(["cv", "--quick", "--algo", "knnbasic", "--sim", NAME,
                       "--out", str(tmp_path)])
    except SystemExit as exit_:
        status = exit_.code
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith(f"dprec cv: error: --sim {NAME} is dprec's centred cosine: "
                          "Surprise's KNNBasic (--algo knnbasic) takes cosine, msd, pearson, "
                          "pearson_baseline; use --algo topk"), err
