"""DPItemKNN: the exact integer release, its ledger, and an audit of its guarantee."""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest
from surprise import Dataset, Reader

from dprec import DPItemKNN, datasets
from dprec.audit import audit_release, threshold_events
from dprec.dp_item_knn import integer_sums
from dprec.ledger import Status, Unit


@pytest.fixture(scope="module")
def trainset():
    return datasets.synthetic(150, 40, 2500, random_state=2).build_full_trainset()


def test_without_noise_the_release_is_the_weighted_covariance(trainset):
    algo = DPItemKNN(epsilon=1e12, shrinkage=0.0, random_state=0).fit(trainset)
    base = algo.baseline_
    n = trainset.n_items
    cov, co = np.zeros((n, n)), np.zeros((n, n))
    for u, rated in trainset.ur.items():
        w = 2.0 ** -np.ceil(2 * np.log2(len(rated)))
        items = np.array([i for i, _ in rated])
        e = np.array([r - base.mu_ - base.item_effects_[i] - base.user_effects_[u]
                      for i, r in rated])
        e = np.round(np.clip(e, -1.0, 1.0) * 16) / 16
        cov[np.ix_(items, items)] += w * np.outer(e, e)
        co[np.ix_(items, items)] += w
    expected = cov / np.maximum(co, 1e-300)
    variance = np.diag(expected)
    expected = expected / np.sqrt(np.outer(variance, variance))
    seen = co > 0
    np.testing.assert_allclose(algo.sim[seen], np.clip(expected, -1, 1)[seen], atol=1e-6)


def test_one_user_moves_the_integer_sums_by_at_most_the_stated_sensitivity(trainset):
    # the residuals are fixed by the first release (adaptive composition): remove one
    # user's row and compare the upper triangles; the sums must also be exact integers
    algo = DPItemKNN(random_state=0).fit(trainset)
    matrix, residuals = algo._ratings.matrix, algo._residuals_by_rating
    cov, w, d_cov, d_w = integer_sums(matrix, residuals, 1.0, 4)
    assert np.array_equal(cov, np.round(cov)) and np.array_equal(w, np.round(w))
    upper = np.triu_indices(matrix.shape[1])
    counts = np.diff(matrix.indptr)
    worst = [0.0, 0.0]
    for u in np.argsort(-counts)[:5].tolist() + [int(np.argmin(counts))]:
        keep = np.arange(matrix.shape[0]) != u
        rows = np.repeat(np.arange(matrix.shape[0]), counts)
        cov_u, w_u, _, _ = integer_sums(matrix[keep], residuals[rows != u], 1.0, 4)
        worst[0] = max(worst[0], np.abs(cov - cov_u)[upper].sum() / d_cov)
        worst[1] = max(worst[1], np.abs(w - w_u)[upper].sum() / d_w)
    assert worst[0] <= 1.0 and worst[1] <= 1.0
    assert worst[1] > 0.25           # the bound is not loose by orders of magnitude


def test_every_release_is_charged_once_and_queries_add_nothing(trainset):
    algo = DPItemKNN(epsilon=0.8, k=10, random_state=0).fit(trainset)
    report = algo.privacy_report()
    eps, delta = report.total(Unit.USER)
    assert eps == pytest.approx(0.8) and delta == 0.0
    assert {e.status for e in report.entries} == {Status.HOLDS}
    assert report.guarantee == {Unit.USER: (eps, 0.0)}
    predictions = algo.test(trainset.build_testset()[:300])
    assert all(np.isfinite(p.est) for p in predictions)
    assert report.total(Unit.USER) == (eps, delta)


def test_seeded_noise_is_reproducible(trainset):
    a = DPItemKNN(random_state=5).fit(trainset).sim
    np.testing.assert_array_equal(a, DPItemKNN(random_state=5).fit(trainset).sim)
    assert not np.array_equal(DPItemKNN().fit(trainset).sim, DPItemKNN().fit(trainset).sim)


def test_user_level_audit_of_a_similarity_stays_below_the_claim():
    # a target user who rated exactly the two items whose similarity is released; at
    # ε = 1 no event sees them at all (bound < 0), so the audit runs at ε = 20, where the
    # events do separate the datasets, and the bound must stay below the claim
    reader = Reader(rating_scale=(1, 5))
    rows = [(f"u{u}", f"i{i}", float(1 + (u * 3 + i * 5) % 5)) for u in range(10)
            for i in range(4)]
    rows += [("target", "i0", 5.0), ("target", "i1", 1.0)]
    a = Dataset.load_from_df(pd.DataFrame(rows), reader)
    b = copy.copy(a)
    b.raw_ratings = [r for r in a.raw_ratings if r[0] != "target"]
    epsilon = 20.0

    def release(trainset, seed):
        algo = DPItemKNN(epsilon=epsilon, baseline_share=0.1, shrinkage=0.0,
                         random_state=seed).fit(trainset)
        return algo.sim[trainset.to_inner_iid("i0"), trainset.to_inner_iid("i1")]

    bound = audit_release(release, a.build_full_trainset(), b.build_full_trainset(),
                          threshold_events(np.linspace(-0.95, 0.95, 20)), n_runs=2000,
                          random_state=0)
    assert not bound.violates(epsilon), bound
    assert bound.epsilon > 1.0, bound


@pytest.mark.parametrize(("kwargs", "name"), [
    ({"epsilon": -1.0}, "epsilon"), ({"k": 0}, "k"), ({"baseline_share": 0.0}, "baseline_share"),
    ({"clip": 0.0}, "clip"), ({"grid_bits": -1}, "grid_bits"), ({"shrinkage": -1.0}, "shrinkage"),
])
def test_bad_parameters_are_named_at_fit(trainset, kwargs, name):
    with pytest.raises((ValueError, TypeError), match=name):
        DPItemKNN(**kwargs).fit(trainset)


def test_batched_test_equals_predict_and_never_reads_the_raw_mean(trainset):
    algo = DPItemKNN(epsilon=50.0, k=5, random_state=1).fit(trainset)
    testset = trainset.build_testset()[:400] + [("nobody", trainset.to_raw_iid(0), 3.0),
                                                 (trainset.to_raw_uid(0), "nothing", 3.0),
                                                 ("nobody", "nothing", 3.0)]
    batched = algo.test(testset)
    for p in batched:
        single = algo.predict(p.uid, p.iid, p.r_ui)
        assert p.est == pytest.approx(single.est, abs=1e-12)
        assert p.details == single.details
    assert any(p.details.get("actual_k", 0) > 0 for p in batched)
    lost = batched[-1]
    assert lost.details["was_impossible"]
    assert lost.est == pytest.approx(min(5, max(1, algo.baseline_.mu_)))
    assert lost.est != pytest.approx(trainset.global_mean, abs=1e-9)
