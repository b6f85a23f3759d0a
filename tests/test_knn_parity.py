"""PrivateKNN(top-k, item neighbourhood) reproduces Surprise's KNNBasic exactly."""

from __future__ import annotations

import numpy as np
import pytest
from surprise import KNNBasic
from surprise.model_selection import KFold

from dprec import PrivateKNN

SIMILARITIES = ["msd", "cosine", "pearson"]


def assert_same_predictions(reference, ours, tol=1e-9):
    assert len(reference) == len(ours)
    for a, b in zip(reference, ours):
        assert (a.uid, a.iid, a.r_ui) == (b.uid, b.iid, b.r_ui)
        assert abs(a.est - b.est) <= tol, (a, b)
        assert a.details == b.details, (a, b)


def compare_on_folds(data, name, min_support=1, k=40):
    n_impossible = 0
    for trainset, testset in KFold(n_splits=5, random_state=0).split(data):
        options = {"name": name, "min_support": min_support}
        reference = KNNBasic(k=k, min_k=1, sim_options=dict(options), verbose=False)
        reference.fit(trainset)
        ours = PrivateKNN(k=k, min_k=1, sim_options=options).fit(trainset)
        np.testing.assert_array_equal(ours.sim, reference.sim)
        expected = reference.test(testset)
        assert_same_predictions(expected, ours.test(testset))
        n_impossible += sum(p.details["was_impossible"] for p in expected)
    return n_impossible


@pytest.mark.parametrize("name", SIMILARITIES)
def test_parity_on_synthetic_data(small_data, name):
    compare_on_folds(small_data, name)


@pytest.mark.parametrize("name", SIMILARITIES)
def test_parity_with_min_support_makes_impossible_predictions(small_data, name):
    # a large min_support zeroes most similarities: KNNBasic then has
    # impossible predictions, which must be the same ones
    assert compare_on_folds(small_data, name, min_support=8, k=5) > 0


@pytest.mark.data
@pytest.mark.parametrize("name", SIMILARITIES)
def test_parity_on_movielens_100k(ml100k, name):
    compare_on_folds(ml100k, name)


def test_estimate_one_at_a_time_equals_test(small_data):
    trainset, testset = next(KFold(n_splits=3, random_state=1).split(small_data))
    algo = PrivateKNN(k=10, sim_options={"name": "cosine"}).fit(trainset)
    batch = algo.test(testset[:300])
    single = [algo.predict(uid, iid, r_ui) for uid, iid, r_ui in testset[:300]]
    assert_same_predictions(single, batch, tol=0.0)
