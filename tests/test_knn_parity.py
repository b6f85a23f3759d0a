"""PrivateKNN (top-k, item neighbourhood) reproduces Surprise's kNN family exactly:
KNNBasic, KNNWithMeans, KNNWithZScore and KNNBaseline, user- and item-based."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from joblib import Parallel, delayed
from strategies import POSITIVE_SCALES, full_testset, fuzz, rating_frames, to_dataset
from surprise import KNNBaseline, KNNBasic, KNNWithMeans, KNNWithZScore
from surprise.model_selection import KFold

from dprec import PrivateKNN, PrivateKNNBaseline, PrivateKNNWithMeans, PrivateKNNWithZScore

SIMILARITIES = ["msd", "cosine", "pearson"]
#: MovieLens 100k folds compared (of KFold(5, random_state=0))
ML100K_FOLDS = 1
#: test rows of a MovieLens 100k fold whose predictions are compared (of 20,000; the whole
#: similarity matrix is compared, and the synthetic tests compare every row of every fold)
ML100K_TEST_ROWS = 2000
#: prediction rule -> (Surprise's class, dprec's class)
FAMILY = {"basic": (KNNBasic, PrivateKNN), "means": (KNNWithMeans, PrivateKNNWithMeans),
          "zscore": (KNNWithZScore, PrivateKNNWithZScore),
          "baseline": (KNNBaseline, PrivateKNNBaseline)}


def assert_same_predictions(reference, ours, tol=1e-9):
    assert len(reference) == len(ours)
    for a, b in zip(reference, ours):
        assert (a.uid, a.iid, a.r_ui) == (b.uid, b.iid, b.r_ui)
        assert abs(a.est - b.est) <= tol, (a, b)
        assert a.details == b.details, (a, b)


def compare_on_fold(trainset, testset, name, min_support, k) -> int:
    """One fold: the similarities and every prediction equal KNNBasic's; returns the
    number of impossible predictions."""
    options = {"name": name, "min_support": min_support}
    reference = KNNBasic(k=k, min_k=1, sim_options=dict(options), verbose=False)
    reference.fit(trainset)
    ours = PrivateKNN(k=k, min_k=1, sim_options=options).fit(trainset)
    np.testing.assert_array_equal(ours.sim, reference.sim)
    expected = reference.test(testset)
    # the same sums, added in Surprise's order: equal bit for bit
    assert_same_predictions(expected, ours.test(testset), tol=0.0)
    return sum(p.details["was_impossible"] for p in expected)


def compare_on_folds(data, name, min_support=1, k=40):
    return sum(compare_on_fold(trainset, testset, name, min_support, k)
               for trainset, testset in KFold(n_splits=5, random_state=0).split(data))


def _checked(check, *args):
    """``check(*args)``'s result, or the exception it raised (to be raised by the test)."""
    try:
        return check(*args), None
    except Exception as error:
        return None, error


@pytest.fixture(scope="module")
def ml100k_checks(ml100k):
    """Every MovieLens 100k comparison of this module, run once, two at a time in joblib's
    processes (they are independent, and Surprise's own predictions, 20,000 a fold in
    Python, are most of their time): ("parity", similarity, fold) -> (impossible
    predictions, error) for the first `ML100K_FOLDS` folds of each similarity (every
    fold is the same code on other rows), ("family", rule, user_based) -> (None, error)
    for fold 0 of each prediction rule (msd); the predictions of each fold's first
    `ML100K_TEST_ROWS` test rows."""
    folds = [(trainset, testset[:ML100K_TEST_ROWS])
             for trainset, testset in KFold(n_splits=5, random_state=0).split(ml100k)]
    jobs = {("family", rule, user_based): (compare_family_fold, folds[0], rule,
                                           {"name": "msd", "user_based": user_based})
            for user_based in (False, True) for rule in sorted(FAMILY)}
    # KNNBasic with user-based msd, k = 40, min_k = 1, min_support = 1 on fold 0, compared
    # exactly, is the family's basic rule, user-based: one job for both
    del jobs["family", "basic", True]
    jobs.update({("parity", name, fold): (compare_on_fold, *folds[fold], name, 1, 40)
                 for name in SIMILARITIES for fold in range(ML100K_FOLDS)})
    results = dict(zip(jobs, Parallel(n_jobs=2)(delayed(_checked)(*job)
                                                for job in jobs.values())))
    results["family", "basic", True] = (None, results["parity", "msd", 0][1])
    return results


@pytest.mark.parametrize("name", SIMILARITIES)
def test_parity_on_synthetic_data(small_data, name, kernel_path):
    compare_on_folds(small_data, name)


@pytest.mark.parametrize("name", SIMILARITIES)
def test_parity_with_min_support_makes_impossible_predictions(small_data, name, kernel_path):
    # a large min_support zeroes most similarities: KNNBasic then has
    # impossible predictions, which must be the same ones
    assert compare_on_folds(small_data, name, min_support=8, k=5) > 0


@pytest.mark.data
@pytest.mark.parametrize("name", SIMILARITIES)
def test_parity_on_movielens_100k(ml100k_checks, name):
    # compare_on_folds(ml100k, name) on its first folds, from the module's pool
    for fold in range(ML100K_FOLDS):
        _, error = ml100k_checks["parity", name, fold]
        if error is not None:
            raise error


def test_estimate_one_at_a_time_equals_test(small_data):
    trainset, testset = next(KFold(n_splits=3, random_state=1).split(small_data))
    algo = PrivateKNN(k=10, sim_options={"name": "cosine"}).fit(trainset)
    batch = algo.test(testset[:300])
    single = [algo.predict(uid, iid, r_ui) for uid, iid, r_ui in testset[:300]]
    assert_same_predictions(single, batch, tol=0.0)


def compare_family(data, rule, sim_options, n_folds=5, folds=None, **params):
    """Every prediction of dprec's class for ``rule`` against Surprise's, fold by fold."""
    splits = list(KFold(n_splits=n_folds, random_state=0).split(data))
    for fold in (splits if folds is None else [splits[f] for f in folds]):
        compare_family_fold(fold, rule, sim_options, **params)


def compare_family_fold(fold, rule, sim_options, **params):
    """One (trainset, testset) fold of :func:`compare_family`."""
    trainset, testset = fold
    reference_class, our_class = FAMILY[rule]
    reference = reference_class(sim_options=dict(sim_options), verbose=False, **params)
    ours = our_class(sim_options=sim_options, verbose=False, **params).fit(trainset)
    reference.fit(trainset)
    # the sum similarities are Surprise's bit for bit; basic and means then weigh the
    # same numbers in Surprise's order, while zscore and the baselines' deviations
    # (and pearson_baseline's similarities, to 1e-12) round differently
    exact = rule in ("basic", "means") and sim_options["name"] != "pearson_baseline"
    if sim_options["name"] == "pearson_baseline":
        np.testing.assert_allclose(ours.sim, reference.sim, rtol=0, atol=1e-12)
    else:
        np.testing.assert_array_equal(ours.sim, reference.sim)
    assert_same_predictions(reference.test(testset), ours.test(testset),
                            tol=0.0 if exact else 1e-9)


@pytest.mark.parametrize("user_based", [True, False])
@pytest.mark.parametrize("rule", sorted(FAMILY))
@pytest.mark.parametrize("name", [*SIMILARITIES, "pearson_baseline"])
def test_family_parity_on_synthetic_data(small_data, rule, name, user_based):
    compare_family(small_data, rule, {"name": name, "user_based": user_based}, n_folds=3,
                   k=20)


@pytest.mark.parametrize("user_based", [True, False])
@pytest.mark.parametrize("rule", sorted(FAMILY))
def test_family_parity_when_few_neighbours_contribute(small_data, rule, user_based):
    # min_support zeroes most similarities and min_k = 3 is then often not reached:
    # KNNBasic is impossible there, the other rules fall back to a mean or baseline
    compare_family(small_data, rule, {"name": "pearson", "min_support": 6,
                                      "user_based": user_based}, n_folds=3, k=5, min_k=3)


@pytest.mark.parametrize("bsl_options", [{"method": "sgd", "n_epochs": 7, "reg": 0.05},
                                         {"method": "als", "reg_u": 3, "reg_i": 2}])
def test_baseline_options_and_shrinkage_follow_surprise(small_data, bsl_options):
    compare_family(small_data, "baseline",
                   {"name": "pearson_baseline", "shrinkage": 10, "user_based": False},
                   n_folds=3, bsl_options=bsl_options)


def test_baseline_answers_unknown_users_and_items_as_knnbaseline(small_data):
    trainset = small_data.build_full_trainset()
    reference = KNNBaseline(verbose=False).fit(trainset)
    ours = PrivateKNNBaseline(verbose=False).fit(trainset)
    some_item = trainset.to_raw_iid(0)
    rows = [("new user", some_item, 3.0), (trainset.to_raw_uid(0), "new item", 3.0),
            ("new user", "new item", 3.0)]
    assert_same_predictions(reference.test(rows), ours.test(rows))
    for row in rows:
        assert_same_predictions([reference.predict(*row)], [ours.predict(*row)])


@pytest.mark.data
@pytest.mark.parametrize("user_based", [True, False])
@pytest.mark.parametrize("rule", sorted(FAMILY))
def test_family_parity_on_movielens_100k(ml100k_checks, rule, user_based):
    # one fold here; benchmarks/bench_knn.py checks all five and times them
    # compare_family(ml100k, rule, {"name": "msd", "user_based": ...}, folds=[0]), pooled
    _, error = ml100k_checks["family", rule, user_based]
    if error is not None:
        raise error


@fuzz(60)
@given(rating_frames(scales=POSITIVE_SCALES), st.sampled_from(SIMILARITIES), st.integers(1, 8),
       st.integers(1, 3), st.integers(1, 2))
def test_topk_equals_knnbasic_on_any_small_data(frame_scale, name, k, min_k, min_support):
    """With the exact similarities and top-k, PrivateKNN is KNNBasic on any small data.

    (``min_k >= 1`` and ``min_support >= 1``: with 0, Surprise itself divides by zero.)
    """
    frame, scale = frame_scale
    trainset = to_dataset(frame, scale).build_full_trainset()
    options = {"name": name, "min_support": min_support}
    ours = PrivateKNN(k=k, min_k=min_k, sim_options=options).fit(trainset)
    theirs = KNNBasic(k=k, min_k=min_k, sim_options=dict(options), verbose=False).fit(trainset)
    np.testing.assert_allclose(ours.sim, theirs.sim, rtol=0, atol=1e-12)
    testset = full_testset(trainset)
    for a, b in zip(ours.test(testset), theirs.test(testset)):
        assert a.est == pytest.approx(b.est, abs=1e-9)
        assert a.details["was_impossible"] == b.details["was_impossible"]


@pytest.mark.parametrize("name", ["msd", "pearson"])
def test_zero_ratings_are_ratings_in_the_exact_similarities(name):
    """Regression: with a rating scale containing 0, KNNBasic counts a 0 as a rating."""
    frame = pd.DataFrame({"user": ["a", "a", "b", "b", "c", "c"],
                          "item": ["x", "y", "x", "y", "x", "y"],
                          "rating": [0.0, 3.0, 0.0, 2.0, 1.0, 0.0]})
    trainset = to_dataset(frame, (0, 5)).build_full_trainset()
    ours = PrivateKNN(sim_options={"name": name}).fit(trainset)
    theirs = KNNBasic(sim_options={"name": name}, verbose=False).fit(trainset)
    np.testing.assert_allclose(ours.sim, theirs.sim, atol=1e-12)
