"""DPBaseline: the construction, its ledger, and an audit of its guarantee."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from surprise import Dataset, Reader

from dprec import DPBaseline, datasets
from dprec.audit import audit_release, threshold_events
from dprec.dp_baseline import effect_sums
from dprec.ledger import Status, Unit


@pytest.fixture(scope="module")
def data():
    return datasets.synthetic(120, 60, 2500, random_state=1)


def test_large_epsilon_gives_the_exact_baseline(data):
    trainset = data.build_full_trainset()
    algo = DPBaseline(epsilon=1e7, unit="rating", item_shrinkage=5.0, user_shrinkage=3.0,
                      random_state=0).fit(trainset)
    assert algo.mu_ == pytest.approx(trainset.global_mean, abs=1e-4)
    items = np.array([i for i in trainset.all_items()])
    by_item = [np.array([r for _, r in trainset.ir[i]]) for i in items]
    expected = [np.sum(r - algo.mu_) / (len(r) + 5.0) for r in by_item]
    np.testing.assert_allclose(algo.item_effects_, expected, atol=1e-4)
    u = 7
    residual = [r - algo.mu_ - algo.item_effects_[i] for i, r in trainset.ur[u]]
    assert algo.user_effects_[u] == pytest.approx(sum(residual) / (len(residual) + 3.0))
    uid, iid = trainset.to_raw_uid(u), trainset.to_raw_iid(3)
    assert algo.predict(uid, iid).est == pytest.approx(
        algo.mu_ + algo.user_effects_[u] + algo.item_effects_[3])


@pytest.mark.parametrize("unit", ["user", "rating"])
def test_the_ledger_states_epsilon_for_the_unit_and_queries_add_nothing(data, unit):
    trainset = data.build_full_trainset()
    algo = DPBaseline(epsilon=0.7, unit=unit, random_state=0).fit(trainset)
    report = algo.privacy_report()
    unit_ = Unit.USER if unit == "user" else Unit.RATING
    eps, delta = report.total(unit_)
    assert 0.7 * (1 - 1e-6) <= eps <= 0.7 and delta == 0.0
    assert {e.status for e in report.entries} == {Status.HOLDS}
    assert report.guarantee == {unit_: (eps, 0.0)}
    algo.test(trainset.build_testset()[:500])
    assert report.total(unit_) == (eps, delta)


def test_seeded_noise_is_reproducible_and_fresh_noise_is_not(data):
    trainset = data.build_full_trainset()
    a = DPBaseline(random_state=3).fit(trainset).item_effects_
    np.testing.assert_array_equal(a, DPBaseline(random_state=3).fit(trainset).item_effects_)
    b = DPBaseline(random_state=np.random.RandomState(3)).fit(trainset).item_effects_
    np.testing.assert_array_equal(
        b, DPBaseline(random_state=np.random.RandomState(3)).fit(trainset).item_effects_)
    c = DPBaseline(random_state=np.random.default_rng(3)).fit(trainset).item_effects_
    d = DPBaseline(random_state=np.random.default_rng(3)).fit(trainset).item_effects_
    np.testing.assert_array_equal(c, d)
    assert not np.array_equal(DPBaseline().fit(trainset).item_effects_,
                              DPBaseline().fit(trainset).item_effects_)


def test_noise_has_the_stated_laplace_scale(data):
    # rating level, β = 0 and a large item: b_i ≈ (S_i + B·L₁ − N_i·(μ − c)) / (N_i + L₂)
    # with L₁, L₂ ~ Laplace(b); the spread of b_i over seeds is about √2·b·B / N_i
    trainset = data.build_full_trainset()
    busiest = max(trainset.all_items(), key=lambda i: len(trainset.ir[i]))
    n = len(trainset.ir[busiest])
    draws = np.array([DPBaseline(epsilon=2.0, unit="rating", global_share=0.5,
                                 item_shrinkage=0.0, random_state=s).fit(trainset)
                      .item_effects_[busiest] for s in range(400)])
    scale = 2.0 / 1.0          # l1 sensitivity 2, ε for the items 2 · (1 − 0.5) = 1
    expected = np.sqrt(2.0) * scale * 2.0 / n   # B = 2 on the 1..5 scale
    assert np.std(draws) == pytest.approx(expected, rel=0.25)


def test_user_level_audit_stays_below_the_claim():
    # one user who rated only item "x" (weight 1: their whole contribution lands on
    # one item); neighbouring datasets: with and without that user
    reader = Reader(rating_scale=(1, 5))
    rows = [(f"u{u}", f"i{i}", float(1 + (u * 7 + i) % 5)) for u in range(12) for i in range(4)]
    rows += [("target", "i0", 5.0)] + [(f"u{u}", "i0", 1.0) for u in range(12, 14)]
    a = Dataset.load_from_df(__import__("pandas").DataFrame(rows), reader)
    b = copy.copy(a)
    b.raw_ratings = [r for r in a.raw_ratings if r[0] != "target"]
    trainset_a, trainset_b = a.build_full_trainset(), b.build_full_trainset()
    epsilon = 1.0

    def release(trainset, seed):
        algo = DPBaseline(epsilon=epsilon, unit="user", global_share=0.05, item_shrinkage=0.5,
                          random_state=seed).fit(trainset)
        return algo.item_effects_[trainset.to_inner_iid("i0")]

    events = threshold_events(np.linspace(-1.5, 1.5, 13))
    bound = audit_release(release, trainset_a, trainset_b, events, n_runs=3000,
                          random_state=0)
    assert not bound.violates(epsilon), bound
    assert bound.epsilon > 0.1, bound      # the events do see the user (the audit has power)


@pytest.mark.parametrize(("kwargs", "name"), [
    ({"epsilon": 0.0}, "epsilon"), ({"epsilon": float("nan")}, "epsilon"),
    ({"unit": "item"}, "unit"), ({"global_share": 1.0}, "global_share"),
    ({"item_shrinkage": -1.0}, "item_shrinkage"), ({"user_shrinkage": -2.0}, "user_shrinkage"),
    ({"random_state": "seed"}, "random_state"),
])
def test_bad_parameters_are_named_at_fit(data, kwargs, name):
    algo = DPBaseline(**kwargs)          # stored as given (scikit-learn's convention)
    with pytest.raises((ValueError, TypeError), match=name):
        algo.fit(data.build_full_trainset())


def test_unknown_user_and_item(data):
    trainset = data.build_full_trainset()
    algo = DPBaseline(random_state=0).fit(trainset)
    iid = trainset.to_raw_iid(0)
    assert algo.predict("nobody", iid).est == pytest.approx(
        np.clip(algo.mu_ + algo.item_effects_[0], 1, 5))
    lost = algo.predict("nobody", "nothing")
    assert lost.details["was_impossible"]
    assert lost.est == algo.mu_ != trainset.global_mean   # the released mean, not the raw one


def test_no_stabiliser_and_no_count_gives_a_zero_effect_not_nan(data):
    trainset = data.build_full_trainset()
    effects = [DPBaseline(epsilon=0.05, item_shrinkage=0.0, random_state=s).fit(trainset)
               .item_effects_ for s in range(20)]
    assert np.isfinite(effects).all() and any((e == 0).any() for e in effects)


def test_one_unit_moves_the_released_sums_by_at_most_two(data):
    # the construction's sensitivity, on data: remove one user (user level) or one of
    # their ratings (rating level) and compare the true vectors in l1; extreme ratings
    # make the bound nearly tight
    trainset = data.build_full_trainset()
    from dprec._ratings import RatingArrays

    matrix = RatingArrays.from_trainset(trainset).matrix.copy()
    matrix.data = np.where(matrix.data >= 3, 5.0, 1.0)
    counts = np.diff(matrix.indptr)
    rows = np.repeat(np.arange(matrix.shape[0]), counts)
    for unit in ("user", "rating"):
        full = effect_sums(matrix, unit, (1, 5))
        largest = np.zeros(2)
        for u in np.argsort(-counts)[:4].tolist() + [int(np.argmin(counts))]:
            drop = rows == u if unit == "user" else np.arange(len(rows)) == matrix.indptr[u]
            keep = matrix.copy()
            keep.data = np.where(drop, 0.0, matrix.data)
            keep.eliminate_zeros()
            keep = keep[np.diff(keep.indptr) > 0] if unit == "user" else keep
            assert keep.nnz == matrix.nnz - drop.sum()
            less = effect_sums(keep, unit, (1, 5))
            largest = np.maximum(largest, [np.abs(a - b).sum() for a, b in zip(full, less)])
        assert np.all(largest >= 1.9) and np.all(largest <= 2.0 + 1e-12), (unit, largest)


def test_released_values_stay_on_the_rating_scale(data):
    trainset = data.build_full_trainset()
    for seed in range(30):
        algo = DPBaseline(epsilon=0.01, random_state=seed).fit(trainset)
        assert 1 <= algo.mu_ <= 5
        assert np.all(np.abs(algo.item_effects_) <= 4) and np.all(np.isfinite(
            algo.user_effects_))
    wide = [DPBaseline(epsilon=0.01, item_shrinkage=0.0, random_state=s).fit(trainset)
            for s in range(30)]
    assert any(np.abs(a.item_effects_).max() == 4 for a in wide)   # the clip is reached
