"""LocalKNN: the users' local releases, their debiasing, the ledger, its lists, and audits."""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pandas as pd
import pytest
from strategies import catalogues
from surprise import Dataset, Reader

from dprec import LocalKNN, datasets
from dprec.accountant.ledger import SEEDED, Status, Unit
from dprec.audit import audit_release, threshold_events, with_rating
from dprec.endtoend.dp_baseline import effects_above_noise, noise_shares, shrunk_effects, sorted_ids
from dprec.endtoend.local_knn import _top_k_neighbours, krr_reports, laplace_reports
from dprec.similarity import PrivateSJLT
from dprec.utils._ratings import RatingArrays


@pytest.fixture(scope="module")
def data():
    return datasets.synthetic(80, 30, 900, random_state=3)


@pytest.fixture(scope="module")
def trainset(data):
    return data.build_full_trainset()


@pytest.fixture(scope="module")
def listed(data):
    """The data's items as a public catalogue: every item reported, for the tests of the
    mechanics (without it the items are chosen by partition selection, few at a small ε)."""
    return {"items": catalogues(data)["items"]}


def frame(rows) -> Dataset:
    return Dataset.load_from_df(pd.DataFrame(rows), Reader(rating_scale=(1, 5)))


@pytest.mark.parametrize("scale", [(1.0, 5.0), (0.5, 5.0)])
@pytest.mark.parametrize("reports", [krr_reports, laplace_reports])
def test_debiased_reports_are_unbiased(trainset, reports, scale):
    # the mean of many independent releases is the true (x, n) of every cell: per class
    # of cells with the same true value (many cells, many runs: a tight bound), and per
    # cell; the asymmetric scale makes the levels' sum non-zero
    ratings = RatingArrays.from_trainset(trainset)
    dense = ratings.matrix.toarray()
    low, high = scale
    levels = np.round(np.clip(dense, low, high)) if reports is krr_reports else dense
    true_x = np.where(dense != 0, (np.clip(levels, low, high) - (low + high) / 2)
                      / ((high - low) / 2), 0.0)
    true_n = (dense != 0).astype(float)
    runs = 200
    rng = np.random.default_rng(0)
    x_sum, n_sum = np.zeros_like(true_x), np.zeros_like(true_n)
    x_squares = np.zeros_like(true_x)
    for _ in range(runs):
        (x, n), noise, _ = reports(ratings.matrix, scale, 1.0, rng)
        x_sum += x
        x_squares += x**2
        n_sum += n
    sd_x, sd_n = noise.x, noise.count
    variances = []
    for value in np.unique(true_x):
        cells = true_x == value
        spread = sd_x / np.sqrt(runs * cells.sum())
        assert abs(x_sum[cells].mean() / runs - value) < 5 * spread, value
        variance = x_squares[cells].mean() / runs - value**2
        variances.append(variance)
        if value == 0.0 and not true_n[cells].any():      # unrated cells: their exact sd
            assert variance == pytest.approx(noise.x_unrated**2, rel=0.05)
    # the largest over the ratings is exact (the extremes, for krr), the bound above it
    assert max(variances) == pytest.approx(noise.x_rated**2, rel=0.05)
    assert max(variances) <= 1.05 * sd_x**2
    for value in (0.0, 1.0):
        cells = true_n == value
        assert abs(n_sum[cells].mean() / runs - value) < 5 * sd_n / np.sqrt(runs * cells.sum())
    assert np.abs(x_sum / runs - true_x).max() < 5.5 * sd_x / np.sqrt(runs)
    assert np.abs(n_sum / runs - true_n).max() < 5.5 * sd_n / np.sqrt(runs)


@pytest.mark.parametrize("release", ["krr", "laplace"])
def test_the_ledger_sums_each_users_two_releases_and_queries_add_nothing(data, trainset,
                                                                        release):
    algo = LocalKNN(epsilon=1.5, sketch_share=0.4, rating_release=release, k=5,
                    random_state=None, **catalogues(data)).fit(trainset)
    report = algo.privacy_report()
    assert [e.unit for e in report.entries] == [Unit.RATING, Unit.RATING]
    assert {e.status for e in report.entries} == {Status.HOLDS}
    assert report.entries[0].epsilon == pytest.approx(0.6)
    eps, delta = report.total(Unit.RATING)
    assert eps == pytest.approx(1.5) and delta == 0.0
    assert report.guarantee == {Unit.RATING: (eps, 0.0)}
    predictions = algo.test(trainset.build_testset()[:200])
    assert all(np.isfinite(p.est) and 1 <= p.est <= 5 for p in predictions)
    assert report.total(Unit.RATING) == (eps, delta)


def test_a_minhash_sketch_is_charged_per_rating(trainset, listed):
    algo = LocalKNN(epsilon=2.0, sim_options={"name": "rr_minhash", "width": 16, "B": 2,
                                              "delta": 1e-3, "tau": 1},
                    random_state=0, **listed).fit(trainset)
    entry = algo.privacy_report().entries[0]
    assert entry.unit is Unit.RATING and "one item of the rated set" in entry.note


def test_large_epsilon_recovers_the_item_effects(trainset):
    algo = LocalKNN(epsilon=1e6, item_shrinkage=0.0, user_shrinkage=0.0,
                    random_state=0).fit(trainset)
    # μ is the mean over the items the private partition selection lists (here all but
    # an item rated once)
    listed = set(algo.item_effects_.index)
    assert 0 < trainset.n_items - len(listed) <= 2
    on_listed = [r for i, rs in trainset.ir.items() if trainset.to_raw_iid(i) in listed
                 for _, r in rs]
    assert algo.mu_ == pytest.approx(np.mean(on_listed), abs=1e-3)
    for i in (0, 5, 11):
        ratings = np.array([r for _, r in trainset.ir[i]])
        assert algo.item_effects_[trainset.to_raw_iid(i)] == pytest.approx(
            np.mean(ratings - algo.mu_), abs=1e-3)
    assert list(algo.item_effects_.index) == sorted_ids(algo.item_effects_.index)


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
    assert algo.test([]) == []
    est, details = algo.estimate(0, 0)
    assert est == algo.predict(trainset.to_raw_uid(0), trainset.to_raw_iid(0), clip=False).est
    assert details == {"was_impossible": False}
    with pytest.raises(AttributeError, match="fit"):
        LocalKNN().default_prediction()


def test_seeded_noise_is_reproducible_and_voids_the_entries(trainset):
    a = LocalKNN(random_state=4).fit(trainset)
    b = LocalKNN(random_state=4).fit(trainset)
    pd.testing.assert_series_equal(a.item_effects_, b.item_effects_)
    pd.testing.assert_frame_equal(a.sim, b.sim)
    pd.testing.assert_frame_equal(a.neighbours_, b.neighbours_)
    # fresh noise (at an ε where the effects are released: below, both are all 0)
    assert not LocalKNN(epsilon=10.0).fit(trainset).item_effects_.equals(
        LocalKNN(epsilon=10.0).fit(trainset).item_effects_)
    report = a.privacy_report()
    assert {e.status for e in report.entries} == {Status.VOID} and report.guarantee is None
    assert all(e.note.startswith(SEEDED) for e in report.entries)


def test_a_renumbering_of_the_same_data_gives_bit_identical_answers(data):
    # finding 2 (#33): shuffled ratings renumber the inner ids; the item list's selection,
    # the sketches, reports, similarities, neighbour lists (ties by the users' sorted rank)
    # and answers must not move (at ε = 4 the selection lists 16 of the 30 items)
    shuffled = copy.copy(data)
    order = np.random.default_rng(5).permutation(len(data.raw_ratings))
    shuffled.raw_ratings = [data.raw_ratings[n] for n in order]
    a, b = data.build_full_trainset(), shuffled.build_full_trainset()
    for options in ({"name": "sjlt"}, {"name": "rr_minhash", "width": 8, "B": 2,
                                       "delta": 1e-3, "tau": 1}):
        fits = [LocalKNN(epsilon=4.0, k=4, sim_options=options, random_state=8).fit(t)
                for t in (a, b)]
        assert 0 < len(fits[0].item_effects_) < 30
        for name in ("sim", "neighbours_", "weights_"):
            pd.testing.assert_frame_equal(getattr(fits[0], name), getattr(fits[1], name),
                                          rtol=0, atol=0)
        pd.testing.assert_series_equal(fits[0].item_effects_, fits[1].item_effects_, rtol=0,
                                       atol=0)
        pairs = a.build_testset()[:300]
        assert [p.est for p in fits[0].test(pairs)] == [p.est for p in fits[1].test(pairs)]


def test_neighbour_lists_are_raw_ids_keyed_by_raw_user_id(data, trainset):
    algo = LocalKNN(k=4, random_state=None).fit(trainset)
    users = sorted_ids(trainset.to_raw_uid(u) for u in trainset.all_users())
    assert list(algo.sim.index) == list(algo.sim.columns) == users
    assert list(algo.neighbours_.index) == users and algo.neighbours_.shape == (len(users), 4)
    for uid in users[:10]:
        row = algo.neighbours_.loc[uid]
        assert uid not in set(row) and set(row) <= set(users)
        sims = algo.sim.loc[uid].drop(uid)
        np.testing.assert_array_equal(algo.weights_.loc[uid],
                                      np.maximum(sims[list(row)].to_numpy(), 0.0))
        assert sims[list(row)].min() >= sims.drop(list(row)).max()


def test_ties_between_neighbours_go_to_the_lower_rank():
    sim = np.array([[1.0, 0.2, 0.2, 0.2], [0.2, 1.0, 0.0, 0.0], [0.2, 0.0, 1.0, 0.0],
                    [0.2, 0.0, 0.0, 1.0]])
    order, weights = _top_k_neighbours(sim, 2)
    np.testing.assert_array_equal(order, [[1, 2], [0, 2], [0, 1], [0, 1]])
    np.testing.assert_array_equal(weights, [[0.2, 0.2], [0.2, 0.0], [0.2, 0.0], [0.2, 0.0]])
    assert _top_k_neighbours(sim, 0)[0].shape == (4, 0)


def test_renumbering_removal_audit_of_a_neighbour_list():
    # finding 2 (#33): "x" has one rating, below τ = 3, so no sketch: similarity 0 to
    # everybody, and its neighbour is the first of a tie.  "lead" rates first, so
    # Surprise numbers lead 0; without lead's first rating lead comes last.  With ties
    # broken by inner id, x's neighbour told the two apart every time (bound 3.66
    # against ε = 2); by sorted rank it is "a0" in both datasets
    rows = [("lead", "i0", 5.0)] + [(f"a{u}", f"i{i}", float(1 + (u + i) % 5))
                                    for u in range(6) for i in range(6)]
    rows += [("x", "i1", 4.0)] + [("lead", f"i{i}", 3.0) for i in range(1, 5)]
    data, epsilon = frame(rows), 2.0
    a, b = data.build_full_trainset(), with_rating(data, "lead", "i0", None).build_full_trainset()
    options = {"name": "rr_minhash", "tau": 3, "small_users": "exclude", "width": 16, "B": 2,
               "delta": 1e-3}

    def release(trainset, seed):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")           # x is excluded from the sketches
            model = LocalKNN(epsilon=epsilon, k=1, sim_options=options,
                             random_state=seed).fit(trainset)
        return first_neighbour(model, "x") == "lead"

    events = [lambda hit: np.asarray(hit, bool), lambda hit: ~np.asarray(hit, bool)]
    bound = audit_release(release, a, b, events, n_runs=200, random_state=0)
    assert not bound.violates(epsilon), bound


def first_neighbour(model, uid):
    """``uid``'s first neighbour as a raw id (also from the inner-id array of old)."""
    neighbours = model.neighbours_
    if isinstance(neighbours, np.ndarray):
        trainset = model.trainset
        return trainset.to_raw_uid(int(neighbours[trainset.to_inner_uid(uid), 0]))
    return neighbours.loc[uid, 0]


def sole_rater_data() -> Dataset:
    rows = [(f"u{u}", f"i{i}", float(1 + (u + 2 * i) % 5)) for u in range(8) for i in range(3)]
    rows += [("sole", "i0", 4.0), ("sole", "solo", 5.0), ("single", "i1", 2.0)]
    return frame(rows)


def test_a_catalogue_makes_the_lists_public():
    data = sole_rater_data()
    listed = catalogues(data)
    users, items = listed["users"] + ["ghost"], listed["items"] + ["new"]
    a = data.build_full_trainset()
    b = with_rating(data, "single", "i1", None).build_full_trainset()
    fits = [LocalKNN(k=3, users=users, items=items).fit(t) for t in (a, b)]
    for model in fits:
        report = model.privacy_report()
        assert list(report.user_ids) == sorted_ids(users)
        assert report.total(Unit.RATING)[0] == pytest.approx(1.0)
        assert list(model.sim.index) == sorted_ids(users) == list(model.neighbours_.index)
        assert list(model.item_effects_.index) == sorted_ids(items)
        for uid, iid in (("ghost", "new"), ("single", "solo"), ("stranger", "new")):
            assert not model.predict(uid, iid).details["was_impossible"]
        assert np.isfinite(model.sim.to_numpy()).all()


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
        (x, n), _, entry = reports(ratings.matrix, (1.0, 5.0), epsilon, seed)
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
    epsilon, listed = 3.0, catalogues(data)

    def release(trainset, seed):
        algo = LocalKNN(epsilon=epsilon, k=3, item_shrinkage=1.0, neighbour_shrinkage=1.0,
                        random_state=seed, **listed).fit(trainset)
        return algo.predict(other, iid).est

    bound = audit_release(release, a, b, threshold_events(np.linspace(1.5, 4.5, 13)),
                          n_runs=800, random_state=1)
    assert not bound.violates(epsilon), bound


@pytest.mark.parametrize(("kwargs", "name"), [
    ({"epsilon": 0.0}, "epsilon"), ({"k": 0}, "k"), ({"sketch_share": 1.0}, "sketch_share"),
    ({"rating_release": "oue"}, "rating_release"), ({"noise_tolerance": 0.0}, "noise_tolerance"),
    ({"item_shrinkage": -1.0}, "item_shrinkage"), ({"user_shrinkage": -1.0}, "user_shrinkage"),
    ({"neighbour_shrinkage": -1.0}, "neighbour_shrinkage"),
    ({"sim_options": {"name": "msd"}}, "sim_options"),
    ({"sim_options": {"name": 3}}, "sim_options"),
    ({"sim_options": {"name": "sjlt", "epsilon": 1.0}}, "sim_options"),
    ({"users": ["nobody"]}, "users"), ({"items": b"i1"}, "items"),
])
def test_bad_parameters_are_named_at_fit(trainset, kwargs, name):
    algo = LocalKNN(**kwargs)                   # stored as given
    with pytest.raises((ValueError, TypeError), match=rf"^{name}\b"):
        algo.fit(trainset)


def test_users_without_a_sketch_are_out_of_the_guarantee(data, trainset):
    # sets below τ are excluded from the sketches: that exclusion depends on their data,
    # so their ε is ∞ (as in PrivateKNN), the others' the sum of their two releases
    sizes = np.array([len(trainset.ur[u]) for u in trainset.all_users()])
    tau = int(np.median(sizes)) + 1
    algo = LocalKNN(epsilon=2.0, sim_options={"name": "rr_minhash", "width": 16, "B": 2,
                                              "delta": 1e-3, "tau": tau,
                                              "small_users": "exclude"}, random_state=None,
                    **catalogues(data))
    with pytest.warns(UserWarning, match="excluded"):
        algo.fit(trainset)
    report = algo.privacy_report()
    eps = report.per_user(Unit.RATING)["epsilon"]
    small = [trainset.to_raw_uid(u) for u in np.flatnonzero(sizes < tau)]
    assert small and np.isinf(eps[small]).all()
    # (a set of exactly τ is the sketch backend's boundary: its own tests say what holds)
    large = [trainset.to_raw_uid(u) for u in np.flatnonzero(sizes > tau)]
    assert np.isfinite(eps[large]).all() and eps[large].max() == pytest.approx(2.0)


def test_a_sketch_backend_object_is_accepted_at_its_share_of_epsilon(trainset, listed):
    # sketch_share of ε with items=, of what the item list's selection leaves without
    options = {"width": 32, "s": 2, "rating_bound": 5.0}
    for catalogue, share in ((listed, 1.0), ({}, 0.9)):
        given = LocalKNN(epsilon=2.0, sim_options=PrivateSJLT(**options, epsilon=share),
                         random_state=3, **catalogue).fit(trainset)
        from_dict = LocalKNN(epsilon=2.0, sim_options={"name": "sjlt", **options},
                             random_state=3, **catalogue).fit(trainset)
        pd.testing.assert_frame_equal(given.sim, from_dict.sim)
    with pytest.raises(ValueError, match="sketch_share"):
        LocalKNN(epsilon=2.0, sim_options=PrivateSJLT(**options, epsilon=2.0)).fit(trainset)
    with pytest.raises(ValueError, match=r"sketch_share \* \(1 - selection_share\) \* epsilon "
                                         "= 0.9"):
        LocalKNN(epsilon=2.0, sim_options=PrivateSJLT(**options, epsilon=1.0)).fit(trainset)


def test_the_report_states_the_models_texts(data, trainset, capsys):
    from dprec.endtoend.dp_baseline import SCOPE
    from dprec.endtoend.item_selection import CENTRAL
    from dprec.endtoend.local_knn import NOTES, OUTPUTS

    algo = LocalKNN(epsilon=2.0, k=3, rating_release="laplace", verbose=True,
                    **catalogues(data)).fit(trainset)
    assert capsys.readouterr().out == ("LocalKNN: 80 users released a sjlt sketch and their "
                                       "ratings (laplace), ε = 2 per rating\n")
    report = algo.privacy_report()
    assert report.model == "LocalKNN(rating_release='laplace')"
    assert [(e.component, e.mechanism) for e in report.entries] == [
        ("similarity", report.entries[0].mechanism), ("ratings", "laplace (lattice)")]
    assert report.entries[1].note == NOTES["laplace"]
    assert [o.name for o in report.outputs] == list(OUTPUTS)
    assert all(o.covered_by == (0, 1) for o in report.outputs)
    assert report.notes == [NOTES["answers"]]
    assert report.conditions[-2:] == [SCOPE["items given"], SCOPE["users given"]]
    assert all(report.applications(n).tolist() == [1] * 80 for n in (0, 1))
    krr = LocalKNN(epsilon=20.0, k=2, sim_options={"name": "rr_minhash", "width": 8, "B": 2,
                                                   "delta": 1e-3, "tau": 1}
                   ).fit(trainset).privacy_report()
    assert capsys.readouterr().out == ""
    assert krr.model == "LocalKNN(rating_release='krr')"
    assert [e.component for e in krr.entries] == ["item list", "similarity", "ratings"]
    assert krr.entries[2].note == ("every item's symbol (unrated or one of 5 levels); a rating "
                                   "added or removed changes one symbol")
    assert krr.entries[1].note.endswith(NOTES["set item"])
    assert krr.entries[0].note.endswith(CENTRAL)
    assert krr.conditions[-2:] == [SCOPE["items selected"] + krr.entries[0].note,
                                   NOTES["population"]]
    assert all(o.covered_by == (0, 1, 2) for o in krr.outputs)


def test_the_shrinkage_reads_the_noise_and_the_tolerance_only_the_deviations(trainset,
                                                                             listed):
    # #34: b_i no longer depends on the tolerance (DPBaseline's posterior mean, β = 0 by
    # default); a tiny tolerance (the deviations' prior sd) shrinks every d_ui to 0
    loose = LocalKNN(epsilon=1e6, noise_tolerance=1e12, random_state=None,
                     **listed).fit(trainset)
    given = LocalKNN(epsilon=1e6, item_shrinkage=0.0, random_state=None,
                     **listed).fit(trainset)
    np.testing.assert_allclose(loose.item_effects_, given.item_effects_, atol=1e-6)
    tight = LocalKNN(epsilon=1.0, noise_tolerance=1e-9, random_state=None,
                     **listed).fit(trainset)
    pairs = trainset.build_testset()[:50]
    users, items = tight._space.positions([p[0] for p in pairs], [p[1] for p in pairs])
    np.testing.assert_allclose(tight._deviations(users, items), 0.0, atol=1e-6)
    est = np.array([p.est for p in tight.test(pairs)])
    np.testing.assert_allclose(est, np.clip(tight.mu_ + tight._user_effects[users]
                                            + tight._item_effects[items], 1, 5), atol=1e-6)
    p, n = 0.9, 6
    _, noise, _ = krr_reports(RatingArrays.from_trainset(trainset).matrix, (1.0, 5.0),
                              np.log(p * (n - 1) / (1 - p)), np.random.default_rng(0))
    q = (1 - p) / (n - 1)
    # the shrinkage's bound, 2 sqrt(1 - p) in x, vanishes with the noise; the exact sds
    # (#34) by enumeration of the reported symbol given the true one
    assert noise.x == pytest.approx(min(1.0, 2.0 * np.sqrt(1 - p)) / (p - q))
    levels = [0.0, -1.0, -0.5, 0.0, 0.5, 1.0]
    variances = []
    for truth in range(n):
        probability = [p if s == truth else q for s in range(n)]
        mean = sum(w * v for w, v in zip(probability, levels))
        variances.append(sum(w * (v - mean) ** 2 for w, v in zip(probability, levels)))
    assert noise.x_rated == pytest.approx(np.sqrt(max(variances[1:])) / (p - q), rel=1e-12)
    assert noise.x_unrated == pytest.approx(np.sqrt(variances[0]) / (p - q), rel=1e-12)
    assert noise.x_unrated < noise.x_rated < noise.x
    assert noise.count == pytest.approx(np.sqrt(max(p * (1 - p), q * (1 - q))) / (p - q))
    counts = np.array([-5.0, 0.0, 3.0, 7.0])
    np.testing.assert_allclose(noise.sum_sd(counts, 5), np.sqrt(
        (5 - np.clip(counts, 0, 5)) * noise.x_unrated**2
        + np.clip(counts, 0, 5) * noise.x_rated**2))


@pytest.mark.parametrize("gamma", [None, 0.7])
def test_every_prediction_adds_the_neighbourhood_deviation(trainset, gamma):
    algo = LocalKNN(epsilon=300.0, k=4, neighbour_shrinkage=gamma, random_state=None)
    algo.fit(trainset)
    space = algo._space
    pairs = trainset.build_testset()[:200] + [(space.users.ids[0], space.items.ids[0], 1.0),
                                               (space.users.ids[-1], "nothing", 1.0),
                                               ("nobody", space.items.ids[-1], 1.0)]
    gated = 0
    for prediction in algo.test(pairs):
        u = space.users.index.get(prediction.uid, -1)
        i = space.items.index.get(prediction.iid, -1)
        expected = algo.mu_ + (algo._user_effects[u] if u >= 0 else 0.0) + (
            algo.item_effects_[prediction.iid] if i >= 0 else 0.0)
        if u >= 0 and i >= 0:
            weights = algo.weights_.loc[prediction.uid].to_numpy()
            rows = [space.users.index[v] for v in algo.neighbours_.loc[prediction.uid]]
            numerator = weights @ algo._residual_reports[rows, i]
            count = weights @ algo._count_reports[rows, i]
            shrink = gamma if gamma is not None else \
                np.sqrt((weights**2).sum()) * algo._stabiliser_unit
            noise = 2.0 * algo._count_sd * np.sqrt((weights**2).sum())   # the gate (#34)
            if max(count, 0.0) + shrink > 0 and count > noise:
                expected += numerator / (max(count, 0.0) + shrink)
                gated += 1
        assert prediction.est == pytest.approx(np.clip(expected, 1, 5), abs=1e-9)
        assert prediction.details == {"was_impossible": False}
    assert gated > 20                    # the deviations above their noise are added


def test_reports_without_noise_are_the_centred_ratings():
    # at a huge ε the reports are the ratings themselves: (clip(r) − c)/B and 1 where rated
    import scipy.sparse as sp

    matrix = sp.csr_matrix(np.array([[0.0, 7.0, 3.0], [4.0, 0.0, 0.5]]))
    matrix.eliminate_zeros()
    (x, n), _, entry = laplace_reports(matrix, (1.0, 5.0), 1e9, np.random.default_rng(0))
    np.testing.assert_allclose(x, [[0, 1, 0], [0.5, 0, -1]], atol=1e-6)
    np.testing.assert_allclose(n, [[0, 1, 1], [1, 0, 1]], atol=1e-6)
    assert entry.epsilon <= 1e9
    _, _, entry = krr_reports(matrix, (1.0, 5.0), 3.0, np.random.default_rng(0))
    assert entry.epsilon == pytest.approx(3.0, rel=1e-9)
    for epsilon in (0.3, 1.0, 2.5):
        _, _, entry = laplace_reports(matrix, (1.0, 5.0), epsilon, np.random.default_rng(0))
        assert entry.epsilon <= epsilon and entry.epsilon == pytest.approx(epsilon)


def test_predict_and_test_pass_their_arguments_on(trainset, capsys):
    algo = LocalKNN(k=3, random_state=0).fit(trainset)
    uid, iid = trainset.to_raw_uid(0), trainset.to_raw_iid(0)
    algo._user_effects[:] = 10.0
    assert algo.predict(uid, iid).est == 5.0
    unclipped = algo.predict(uid, iid, r_ui=2.0, clip=False, verbose=True)
    assert unclipped.est > 5.0 and unclipped.r_ui == 2.0
    assert capsys.readouterr().out == f"{unclipped}\n"
    algo.test([(uid, iid, 2.0)])
    assert capsys.readouterr().out == ""
    algo.test([(uid, iid, 2.0)], verbose=True)
    assert capsys.readouterr().out == f"{algo.predict(uid, iid, 2.0)}\n"


def test_defaults():
    params = vars(LocalKNN())
    assert {key: params[key] for key in (
        "epsilon", "k", "sketch_share", "selection_share", "delta", "rating_release",
        "sim_options", "noise_tolerance", "item_shrinkage", "neighbour_shrinkage",
        "user_shrinkage", "users", "items", "random_state", "verbose")} == {
        "epsilon": 1.0, "k": 40, "sketch_share": 0.5, "selection_share": 0.1, "delta": None,
        "rating_release": "krr",
        "sim_options": None, "noise_tolerance": 0.2, "item_shrinkage": None,
        "neighbour_shrinkage": None, "user_shrinkage": 0.0, "users": None, "items": None,
        "random_state": None, "verbose": False}
    assert LocalKNN(neighbour_shrinkage=0.5).neighbour_shrinkage == 0.5


def test_the_rating_reports_state_their_scales_and_entries():
    import scipy.sparse as sp

    from dprec.endtoend.local_knn import NOTES
    from dprec.mechanisms import laplace_epsilon, laplace_scale

    matrix = sp.csr_matrix(np.array([[0.0, 7.0, 3.0], [4.0, 0.0, 0.5]]))
    for epsilon in (0.3, 2.5):
        reports, sds, entry = laplace_reports(matrix, (1.0, 5.0), epsilon,
                                              np.random.default_rng(1))
        scale = laplace_scale(epsilon, 2.0, max_changed=2)
        assert sds == (np.sqrt(2.0) * scale,) * 4          # x (every bound) and n
        assert entry.epsilon == laplace_epsilon(scale, 2.0, max_changed=2) <= epsilon
        assert (entry.component, entry.mechanism, entry.note) == ("ratings", "laplace (lattice)",
                                                                  NOTES["laplace"])
        again, _, _ = laplace_reports(matrix, (1.0, 5.0), epsilon, np.random.default_rng(1))
        np.testing.assert_array_equal(reports, again)                  # the rng's noise
    (x, n), _, entry = krr_reports(matrix, (1.0, 5.0), 60.0, np.random.default_rng(0))
    np.testing.assert_array_equal(x, [[0, 1, 0], [0.5, 0, -1]])       # clipped to 1..5
    np.testing.assert_array_equal(n, [[0, 1, 1], [1, 0, 1]])
    assert (entry.component, entry.mechanism) == ("ratings", "k-ary randomised response")
    assert entry.epsilon == 60.0   # p rounds to 1, yet the exact sampler can move: ε, not ∞
    (x, n), _, entry = krr_reports(matrix, (1.0, 1.5), 60.0, np.random.default_rng(0))
    np.testing.assert_array_equal(x, [[0, -1, -1], [-1, 0, -1]])       # one level: 1
    assert "one of 1 levels" in entry.note
    with pytest.raises(ValueError, match="integer"):
        krr_reports(matrix, (1.2, 1.8), 1.0, np.random.default_rng(0))


def test_neighbour_search_by_blocks_equals_one_block(monkeypatch):
    from dprec.endtoend import local_knn

    sim = np.random.default_rng(0).uniform(-1, 1, (9, 9))
    whole = _top_k_neighbours(sim, 3)
    monkeypatch.setattr(local_knn, "_BLOCK_CELLS", 20)               # blocks of 2 rows
    blocks = _top_k_neighbours(sim, 3)
    np.testing.assert_array_equal(whole[0], blocks[0])
    np.testing.assert_array_equal(whole[1], blocks[1])
    order, weights = _top_k_neighbours(sim, 1)
    np.testing.assert_array_equal(order[:, 0], np.argmax(sim - 9 * np.eye(9), axis=1))
    np.testing.assert_array_equal(weights[:, 0], np.maximum(sim[np.arange(9), order[:, 0]], 0))
    assert _top_k_neighbours(sim, 0)[1].shape == (9, 0)


def test_releases_are_keyed_as_stated_and_read_only(data, trainset):
    algo = LocalKNN(k=500, random_state=0).fit(trainset)                 # k beyond n − 1
    assert algo.neighbours_.shape == algo.weights_.shape == (80, 79)
    pd.testing.assert_index_equal(algo.neighbours_.columns, pd.RangeIndex(79, name="rank"),
                                  exact=True)
    pd.testing.assert_index_equal(algo.weights_.columns, pd.RangeIndex(79, name="rank"),
                                  exact=True)
    with pytest.raises(ValueError, match="read-only"):
        algo.sim.iloc[0, 1] = 2.0
    # the sketches' hash functions are keyed by raw item id: an extra catalogue item (first
    # in the sorted order, so every position moves) leaves every user's sketch as it was
    listed = catalogues(data)
    a = LocalKNN(k=3, random_state=5, **listed).fit(trainset)
    b = LocalKNN(k=3, random_state=5, users=listed["users"],
                 items=["!new"] + listed["items"]).fit(trainset)
    pd.testing.assert_frame_equal(a.sim, b.sim, rtol=0, atol=0)


def test_the_aggregates_are_the_stated_functions_of_the_reports(trainset, listed):
    # μ, b_i and the stabiliser unit from the reports the server holds (the residual
    # reports give back B Σ x̂): b_i is DPBaseline's posterior mean under the aggregates'
    # noise (β = 0, τ² = 0.4, no μ in it), weighted by its chance of not being noise, and
    # 0 where the releases show no effect above their noise (#34)
    for epsilon, release in ((60.0, "krr"), (60.0, "laplace")):
        algo = LocalKNN(epsilon=epsilon, rating_release=release, noise_tolerance=0.3,
                        random_state=None, **listed).fit(trainset)
        matrix = algo._space.matrix
        reports = krr_reports if release == "krr" else laplace_reports
        _, noise, _ = reports(matrix, (1.0, 5.0), epsilon / 2, np.random.default_rng(0))
        unit = 2.0 * (noise.x + 3.0 * noise.count) / 0.3
        assert algo._stabiliser_unit == pytest.approx(unit, rel=1e-12)
        counts = algo._count_reports.sum(axis=0)
        effects = algo._item_effects
        sums = algo._residual_reports.sum(axis=0) + counts * (algo.mu_ + effects - 3.0)
        mu = 3.0 + sums.sum() / max(counts.sum(), 1.0)
        assert algo.mu_ == pytest.approx(np.clip(mu, 1, 5), abs=1e-9)
        n_users = matrix.shape[0]
        noise_sd = (2.0 * noise.x * np.sqrt(n_users), noise.count * np.sqrt(n_users))
        shares = noise_shares(counts, noise_sd[1])
        tested = (2.0 * noise.sum_sd(counts, n_users), noise_sd[1])
        assert effects_above_noise(sums, counts, tested)
        expected = shrunk_effects(sums, counts, noise_sd, 0.0, 0.4, 4.0) * (1.0 - shares)
        assert (counts > 2.0 * noise_sd[1]).sum() > 0     # some items above the gate
        np.testing.assert_allclose(effects, expected, atol=1e-9)
    for seed in range(10):
        assert 1.0 <= LocalKNN(epsilon=0.01, random_state=seed).fit(trainset).mu_ <= 5.0


def test_sketch_options_are_checked_against_the_budget(trainset, listed):
    for name in ("minhash", "msd"):
        with pytest.raises(ValueError, match="^sim_options\\['name'\\] must be a private "):
            LocalKNN(sim_options={"name": name}).fit(trainset)
    options = {"width": 32, "s": 2, "rating_bound": 5.0}
    with pytest.raises(ValueError, match="sketch_share"):
        LocalKNN(epsilon=2.0, sim_options=PrivateSJLT(**options, epsilon=1.0 + 1e-10),
                 **listed).fit(trainset)
    LocalKNN(epsilon=2.0, sim_options=PrivateSJLT(**options, epsilon=1.0 + 1e-14),
             **listed).fit(trainset)


def test_the_item_effects_are_a_named_series(trainset):
    algo = LocalKNN(k=3, random_state=0).fit(trainset)
    assert algo.item_effects_.name == "item_effect"
    np.testing.assert_array_equal(algo.item_effects_.to_numpy(), algo._item_effects)


def test_a_single_rating_gives_its_own_mean_and_effects_stay_in_bounds(trainset, listed):
    one = Dataset.load_from_df(pd.DataFrame([("u", "i", 4.5)]), Reader(rating_scale=(1, 5)))
    algo = LocalKNN(epsilon=1e6, rating_release="laplace", random_state=None, items=["i"])
    assert algo.fit(one.build_full_trainset()).mu_ == pytest.approx(4.5, abs=1e-3)
    wide = [LocalKNN(epsilon=0.05, item_shrinkage=0.0, user_shrinkage=10.0,
                     random_state=s, **listed).fit(trainset) for s in range(10)]
    assert all(np.abs(a.item_effects_).max() <= 4 for a in wide)
    from dprec.endtoend.dp_baseline import own_effects, stabilised_effects

    np.testing.assert_array_equal(stabilised_effects(np.array([100.0, -9.0]), np.ones(2), 0.0,
                                                     0.0, 4.0), [4.0, -4.0])   # the clip

    for algo in wide[:2]:
        np.testing.assert_array_equal(algo._user_effects, own_effects(
            algo._space.matrix, algo.mu_ + algo._item_effects, 10.0))


def test_a_plain_minhash_object_is_refused_by_name(trainset):
    from dprec.similarity import MinHash

    with pytest.raises(ValueError, match="^sim_options\\['name'\\] must be a private "):
        LocalKNN(sim_options=MinHash(width=8)).fit(trainset)
    assert LocalKNN(k=2, sim_options={"name": "SJLT"}).fit(trainset).privacy_report()


def test_below_the_noise_every_answer_is_the_users_own_mean(trainset):
    # #34: at ε = 0.01 no item aggregate and no neighbour report is above its noise: every
    # known user's answer is their own mean (μ cancels with user_shrinkage = 0), never a
    # noisy effect that makes it worse than what their own data give for free
    space = None
    for seed in range(3):
        algo = LocalKNN(epsilon=0.01, random_state=seed).fit(trainset)
        space = algo._space
        # the releases show no effect above their noise: none is used (the gate alone
        # lets 2.3 % of pure-noise items through)
        np.testing.assert_array_equal(algo._item_effects, 0.0)
        pairs = [(uid, iid, 0.0) for uid in space.users.ids[:15] for iid in space.items.ids[:6]]
        for prediction in algo.test(pairs):
            row = space.users.index[prediction.uid]
            own = space.matrix.data[space.matrix.indptr[row]:space.matrix.indptr[row + 1]]
            assert prediction.est == pytest.approx(own.mean(), abs=1e-12)



def test_noise_shares_are_the_benjamini_hochberg_q_values_of_the_released_weights():
    # by loops: q_i = min over items j at most as heavy of min(1, n P(noise > N_j) / #{k:
    # N_k >= N_j}); no noise: 1 exactly where nothing was released; pure noise: near 1
    from statistics import NormalDist

    rng = np.random.default_rng(0)
    counts = np.concatenate([rng.normal(0, 1.0, 40), [8.0, 6.0, 3.5, 3.5]])
    sd = 1.0
    n = len(counts)
    expected = np.empty(n)
    for i in range(n):
        expected[i] = min(min(1.0, n * NormalDist().cdf(-counts[j] / sd)
                              / (counts >= counts[j]).sum())
                          for j in range(n) if counts[j] <= counts[i])
    np.testing.assert_allclose(noise_shares(counts, sd), expected, rtol=1e-9, atol=1e-15)
    assert noise_shares(counts, sd)[40] < 1e-10 and np.median(noise_shares(counts, sd)[:40]) > 0.8
    np.testing.assert_array_equal(noise_shares(np.array([2.0, 0.0, -1.0]), 0.0), [0.0, 1.0, 1.0])
    assert noise_shares(np.zeros(0), 1.0).shape == (0,)


def test_effects_above_noise_tests_every_ratio_being_noise():
    # S = N b + noise (sd σ_S) with a noisy weight N (sd σ_N): with effects of sd 0.05 the
    # test passes; without, it fails but for SIGNAL standard errors' worth of luck
    rng = np.random.default_rng(0)
    sd_sum, sd_count = 30.0, 5.0

    def release(effect_sd, size):
        true_counts = rng.integers(20, 400, size=size).astype(float)
        sums = true_counts * rng.normal(0.0, effect_sd, size) + rng.normal(0.0, sd_sum, size)
        return sums, true_counts + rng.normal(0.0, sd_count, size)

    assert all(effects_above_noise(*release(0.05, 2000), (sd_sum, sd_count))
               for _ in range(20))
    lucky = sum(effects_above_noise(*release(0.0, 300), (sd_sum, sd_count))
                for _ in range(400))
    assert 1 <= lucky <= 18          # P(Z > 2) = 2.3 %: 9 expected, 18 is 3 sd above
    # no weight above the gate; per-item noise sds broadcast; a ratio seen without noise
    assert not effects_above_noise(np.ones(3), np.zeros(3), (1.0, 1.0))
    sums, counts = np.array([50.0, -40.0, 10.0]), np.array([100.0, 90.0, 80.0])
    assert (effects_above_noise(sums, counts, (np.full(3, 2.0), np.full(3, 1.0)))
            == effects_above_noise(sums, counts, (2.0, 1.0)))
    assert effects_above_noise(sums, counts, (0.0, 0.0))
    assert not effects_above_noise(0.0 * sums, counts, (0.0, 0.0))


def test_where_the_neighbours_reports_are_noise_the_deviations_are_zero(trainset, listed):
    # the deviations pass the same test over every user × item pair: at ε = 0.05 every
    # pair's weighted reports are noise and no deviation is added, even where a pair's
    # count passes its gate by chance; at ε = 300 they are added
    quiet = LocalKNN(epsilon=0.05, k=10, random_state=3, **listed).fit(trainset)
    assert not quiet._deviates
    users, items = np.divmod(np.arange(quiet._count_reports.size),
                             quiet._count_reports.shape[1])
    np.testing.assert_array_equal(quiet._deviations(users, items), 0.0)
    loud = LocalKNN(epsilon=300.0, k=10, random_state=3, **listed).fit(trainset)
    assert loud._deviates
    assert np.abs(loud._deviations(users, items)).max() > 0.1
