"""The vectorised ALS baselines equal Surprise's ``baseline_als``."""

from __future__ import annotations

import numpy as np
import pytest
from surprise import BaselineOnly

from dprec import PrivateKNN, PrivateKNNBaseline, datasets
from dprec.evaluation import baselines
from dprec.evaluation.baselines import als_baselines
from dprec.knn import biases
from dprec.utils._ratings import RatingArrays


@pytest.mark.parametrize("options", [{}, {"n_epochs": 3, "reg_u": 2.5, "reg_i": 0.0}])
def test_als_equals_surprise(small_data, options):
    trainset = small_data.build_full_trainset()
    reference = BaselineOnly(bsl_options={"method": "als", **options}, verbose=False)
    bu, bi = reference.fit(trainset).compute_baselines()
    matrix = RatingArrays.from_trainset(trainset).matrix
    users = np.repeat(np.arange(trainset.n_users), np.diff(matrix.indptr))
    ours = als_baselines(users, matrix.indices, matrix.data, trainset.n_users, trainset.n_items,
                         trainset.global_mean, **options)
    np.testing.assert_allclose(ours[0], bu, rtol=0, atol=1e-13)
    np.testing.assert_allclose(ours[1], bi, rtol=0, atol=1e-13)
    assert np.abs(bu).max() > 0.1  # the baselines are not trivially 0


@pytest.mark.parametrize("user_based", [True, False])
@pytest.mark.parametrize("method", ["als", "sgd"])
def test_fitted_baselines_are_surprises(small_data, user_based, method):
    trainset = small_data.build_full_trainset()
    reference = BaselineOnly(bsl_options={"method": method}, verbose=False).fit(trainset)
    algo = PrivateKNNBaseline(sim_options={"user_based": user_based},
                              bsl_options={"method": method}, verbose=False).fit(trainset)
    np.testing.assert_allclose(algo.bu, reference.bu, rtol=0, atol=1e-13)
    np.testing.assert_allclose(algo.bi, reference.bi, rtol=0, atol=1e-13)


def test_models_on_one_trainset_fit_the_baselines_once(monkeypatch):
    """``trainset_baselines``: the ALS runs once per trainset and options; every model gets
    its own copy of the same numbers, and other options or trainsets fit anew."""
    calls = []
    original = baselines.als_baselines

    def counted(*args):
        calls.append(args[-3:])
        return original(*args)

    monkeypatch.setattr(biases, "als_baselines", counted)
    data = datasets.synthetic(60, 50, 900, random_state=4)
    trainset = data.build_full_trainset()
    first, second = (PrivateKNN(k=5, prediction="baseline", verbose=False).fit(trainset)
                     for _ in range(2))
    assert len(calls) == 1
    np.testing.assert_array_equal(first.bu, second.bu)
    assert first.bu is not second.bu
    first.bu[:] = 0.0                                   # a model's copy is its own
    third = PrivateKNN(k=5, prediction="baseline", verbose=False).fit(trainset)
    np.testing.assert_array_equal(third.bu, second.bu)
    PrivateKNN(k=5, prediction="baseline", bsl_options={"reg_u": 3}, verbose=False).fit(trainset)
    PrivateKNN(k=5, prediction="baseline", verbose=False).fit(data.build_full_trainset())
    assert len(calls) == 3
