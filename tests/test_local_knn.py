"""LocalKNN: the users' local releases, their debiasing, the ledger, and an audit."""

from __future__ import annotations

import numpy as np
import pytest

from dprec import LocalKNN, datasets
from dprec._ratings import RatingArrays
from dprec.audit import audit_release, threshold_events, with_rating
from dprec.ledger import Status, Unit
from dprec.local_knn import krr_reports, laplace_reports
from dprec.similarity import PrivateSJLT


@pytest.fixture(scope="module")
def data():
    return datasets.synthetic(80, 30, 900, random_state=3)


@pytest.fixture(scope="module")
def trainset(data):
    return data.build_full_trainset()


@pytest.mark.parametrize("reports", [krr_reports, laplace_reports])
def test_debiased_reports_are_unbiased(trainset, reports):
    # the mean of many independent releases converges to the true (x, n) of every cell
    ratings = RatingArrays.from_trainset(trainset)
    dense = ratings.matrix.toarray()
    true_x = np.where(dense != 0, (np.clip(dense, 1, 5) - 3.0) / 2.0, 0.0)
    true_n = (dense != 0).astype(float)
    runs = 400
    rng = np.random.default_rng(0)
    x_sum, n_sum = np.zeros_like(true_x), np.zeros_like(true_n)
    for _ in range(runs):
        (x, n), (sd_x, sd_n), _ = reports(ratings, (1.0, 5.0), 1.0, rng)
        x_sum += x
        n_sum += n
    # each cell's mean has standard deviation at most sd / √runs; 5 of them over all cells
    assert np.abs(x_sum / runs - true_x).max() < 5.5 * sd_x / np.sqrt(runs)
    assert np.abs(n_sum / runs - true_n).max() < 5.5 * sd_n / np.sqrt(runs)
    assert abs((x_sum / runs - true_x).mean()) < 0.1 * sd_x   # no bias overall


@pytest.mark.parametrize("release", ["krr", "laplace"])
def test_the_ledger_sums_each_users_two_releases_and_queries_add_nothing(trainset, release):
    algo = LocalKNN(epsilon=1.5, sketch_share=0.4, rating_release=release, k=5,
                    random_state=0).fit(trainset)
    report = algo.privacy_report()
    assert [e.unit for e in report.entries] == [Unit.RATING, Unit.RATING]
    assert {e.status for e in report.entries} == {Status.HOLDS}
    assert report.entries[0].epsilon == pytest.approx(0.6)
    eps, delta = report.total(Unit.RATING)
    assert eps == pytest.approx(1.5) and delta == 0.0
    predictions = algo.test(trainset.build_testset()[:200])
    assert all(np.isfinite(p.est) and 1 <= p.est <= 5 for p in predictions)
    assert report.total(Unit.RATING) == (eps, delta)


def test_a_minhash_sketch_is_charged_per_rating(trainset):
    algo = LocalKNN(epsilon=2.0, sim_options={"name": "rr_minhash", "width": 16, "B": 2,
                                              "delta": 1e-3, "tau": 1},
                    random_state=0).fit(trainset)
    entry = algo.privacy_report().entries[0]
    assert entry.unit is Unit.RATING and "one item of the rated set" in entry.note


def test_large_epsilon_recovers_the_item_effects(trainset):
    algo = LocalKNN(epsilon=1e6, item_shrinkage=0.0, user_shrinkage=0.0,
                    random_state=0).fit(trainset)
    assert algo.mu_ == pytest.approx(trainset.global_mean, abs=1e-3)
    for i in (0, 5, 11):
        ratings = np.array([r for _, r in trainset.ir[i]])
        assert algo.item_effects_[i] == pytest.approx(np.mean(ratings - algo.mu_), abs=1e-3)


def test_batched_test_equals_predict_and_unknowns_fall_back(trainset):
    algo = LocalKNN(epsilon=3.0, k=5, random_state=1).fit(trainset)
    testset = trainset.build_testset()[:150] + [("nobody", trainset.to_raw_iid(0), 3.0),
                                                 (trainset.to_raw_uid(0), "nothing", 3.0),
                                                 ("nobody", "nothing", 3.0)]
    batched = algo.test(testset)
    for p in batched:
        single = algo.predict(p.uid, p.iid, p.r_ui)
        assert p.est == pytest.approx(single.est, abs=1e-12)
        assert p.details == single.details
    assert batched[-1].details["was_impossible"]
    assert batched[-1].est == pytest.approx(algo.mu_)


def test_seeded_noise_is_reproducible(trainset):
    a = LocalKNN(random_state=4).fit(trainset)
    b = LocalKNN(random_state=4).fit(trainset)
    np.testing.assert_array_equal(a.item_effects_, b.item_effects_)
    np.testing.assert_array_equal(a.sim, b.sim)
    assert not np.array_equal(LocalKNN().fit(trainset).item_effects_,
                              LocalKNN().fit(trainset).item_effects_)


@pytest.mark.parametrize("reports", [krr_reports, laplace_reports])
def test_audit_of_a_users_release_stays_below_the_claim(reports):
    # what the server receives from the target about one item, with and without their
    # rating of it: the events must not separate the two by more than ε_r
    data = datasets.synthetic(6, 4, 16, random_state=0)
    uid, iid = data.raw_ratings[0][:2]
    a = data.build_full_trainset()
    b = with_rating(data, uid, iid, None).build_full_trainset()
    epsilon = 2.0

    def release(trainset, seed):
        ratings = RatingArrays.from_trainset(trainset)
        (x, n), _, entry = reports(ratings, (1.0, 5.0), epsilon, seed)
        assert entry.epsilon <= epsilon + 1e-6
        u, i = trainset.to_inner_uid(uid), trainset.to_inner_iid(iid)
        return x[u, i] + 10.0 * n[u, i]   # both coordinates in one number

    events = threshold_events(np.linspace(-30, 30, 61))
    bound = audit_release(release, a, b, events, n_runs=3000, random_state=0)
    assert not bound.violates(epsilon), bound
    assert bound.epsilon > 0.5, bound       # the audit has power


def test_audit_of_another_users_prediction_stays_below_the_claim():
    # end to end: another user's prediction of the item, with and without the target's
    # rating (the post-processing argument: no event may beat ε)
    data = datasets.synthetic(10, 4, 30, random_state=2)
    uid, iid = data.raw_ratings[0][:2]
    other = next(u for u, *_ in data.raw_ratings if u != uid)
    a = data.build_full_trainset()
    b = with_rating(data, uid, iid, None).build_full_trainset()
    epsilon = 3.0

    def release(trainset, seed):
        algo = LocalKNN(epsilon=epsilon, k=3, item_shrinkage=1.0, neighbour_shrinkage=1.0,
                        random_state=seed).fit(trainset)
        return algo.predict(other, iid).est

    bound = audit_release(release, a, b, threshold_events(np.linspace(1.5, 4.5, 13)),
                          n_runs=800, random_state=1)
    assert not bound.violates(epsilon), bound


@pytest.mark.parametrize(("kwargs", "name"), [
    ({"epsilon": 0.0}, "epsilon"), ({"k": 0}, "k"), ({"sketch_share": 1.0}, "sketch_share"),
    ({"rating_release": "oue"}, "rating_release"), ({"noise_tolerance": 0.0}, "noise_tolerance"),
    ({"item_shrinkage": -1.0}, "item_shrinkage"), ({"user_shrinkage": -1.0}, "user_shrinkage"),
    ({"sim_options": {"name": "msd"}}, "sim_options"),
    ({"sim_options": {"name": "sjlt", "epsilon": 1.0}}, "sim_options"),
])
def test_bad_parameters_are_named_at_fit(trainset, kwargs, name):
    algo = LocalKNN(**kwargs)                   # stored as given
    with pytest.raises((ValueError, TypeError), match=name):
        algo.fit(trainset)


def test_users_without_a_sketch_are_out_of_the_guarantee(trainset):
    # sets below τ are excluded from the sketches: that exclusion depends on their data,
    # so their ε is ∞ (as in PrivateKNN), the others' the sum of their two releases
    sizes = np.array([len(trainset.ur[u]) for u in trainset.all_users()])
    tau = int(np.median(sizes)) + 1
    algo = LocalKNN(epsilon=2.0, sim_options={"name": "rr_minhash", "width": 16, "B": 2,
                                              "delta": 1e-3, "tau": tau,
                                              "small_users": "exclude"}, random_state=0)
    with pytest.warns(UserWarning, match="excluded"):
        algo.fit(trainset)
    report = algo.privacy_report()
    eps = report.per_user(Unit.RATING)["epsilon"]
    small = [trainset.to_raw_uid(u) for u in np.flatnonzero(sizes < tau)]
    assert small and np.isinf(eps[small]).all()
    large = [uid for uid in eps.index if uid not in small]
    assert np.isfinite(eps[large]).all() and eps[large].max() == pytest.approx(2.0)


def test_a_sketch_backend_object_is_accepted_at_its_share_of_epsilon(trainset):
    options = {"width": 32, "s": 2, "rating_bound": 5.0}
    given = LocalKNN(epsilon=2.0, sim_options=PrivateSJLT(**options, epsilon=1.0),
                     random_state=3).fit(trainset)
    from_dict = LocalKNN(epsilon=2.0, sim_options={"name": "sjlt", **options},
                         random_state=3).fit(trainset)
    np.testing.assert_array_equal(given.sim, from_dict.sim)
    with pytest.raises(ValueError, match="sketch_share"):
        LocalKNN(epsilon=2.0, sim_options=PrivateSJLT(**options, epsilon=2.0)).fit(trainset)
