"""PrivateKNN: Surprise integration, the reference formulas, the user neighbourhood, the
report and the budget.
"""

from __future__ import annotations

import copy
import math
import re

import numpy as np
import pandas as pd
import pytest
from strategies import algo_items, algo_users
from surprise import KNNBasic, dump
from surprise.model_selection import GridSearchCV, KFold, cross_validate

from dprec import PrivateKNN
from dprec.accountant.ledger import BudgetExceededError, Unit
from dprec.utils._surprise import inner_ids


def reference_prediction(algo, trainset, u, i, centered, neighbourhood):
    """Plain-Python prediction of either neighbourhood semantics (top-k): the k most
    similar users overall who rated ``i`` ("user", ties by inner id), or the k most
    similar raters of ``i`` ("item", Surprise's: ties in the order of ``ir[i]``, as
    ``heapq.nlargest`` keeps them)."""
    rated = dict(trainset.ir[i])
    pool = range(trainset.n_users) if neighbourhood == "user" else [v for v, _ in trainset.ir[i]]
    sims = [(algo.sim[u, v], v) for v in pool if neighbourhood == "item" or v != u]
    neighbours = sorted(sims, key=lambda t: -t[0])[: algo.k]  # stable: ties keep pool order
    means = {v: np.mean([r for _, r in trainset.ur[v]]) for v in range(trainset.n_users)}
    num = den = 0.0
    n = 0
    for s, v in neighbours:
        if v not in rated:
            continue
        if centered and s != 0:
            num += s * (rated[v] - means[v])
            den += abs(s)
            n += 1
        elif not centered and s > 0:
            num += s * rated[v]
            den += s
            n += 1
    if n == 0:
        return None
    return means[u] + num / den if centered else num / den


@pytest.mark.parametrize("centered", [False, True])
@pytest.mark.parametrize("name", ["cosine", "pearson"])
@pytest.mark.parametrize("neighbourhood", ["user", "item"])
def test_neighbourhoods_match_reference(split, centered, name, neighbourhood):
    trainset, testset = split
    algo = PrivateKNN(k=7, sim_options={"name": name}, neighbourhood=neighbourhood,
                      centered=centered, verbose=False).fit(trainset)
    predictions = algo.test(testset[:150])
    low, high = trainset.rating_scale
    known_users, known_items = algo_users(trainset), algo_items(trainset)
    n_possible = 0
    for p in predictions:
        if p.uid not in known_users or p.iid not in known_items:
            continue
        u, i = trainset.to_inner_uid(p.uid), trainset.to_inner_iid(p.iid)
        expected = reference_prediction(algo, trainset, u, i, centered, neighbourhood)
        if expected is None:
            assert p.details["was_impossible"]
        else:
            n_possible += 1
            assert not p.details["was_impossible"]
            assert p.est == pytest.approx(min(high, max(low, expected)), abs=1e-9)
    assert n_possible > 20


def test_user_neighbourhood_never_contains_the_user(split):
    trainset, _ = split
    algo = PrivateKNN(k=15, sim_options={"name": "cosine"}, neighbourhood="user").fit(trainset)
    users = np.arange(trainset.n_users)
    neighbours = algo.kneighbors(users)[0]
    assert not (neighbours == users[:, None]).any()
    assert ((neighbours >= 0) & (neighbours < trainset.n_users)).all()


@pytest.mark.parametrize("neighbourhood", ["item", "user"])
def test_cross_validate_n_jobs_agree(small_data, neighbourhood):
    algo = PrivateKNN(k=10, sim_options={"name": "cosine"}, neighbourhood=neighbourhood,
                      random_state=0)
    folds = KFold(n_splits=3, random_state=0)
    one = cross_validate(algo, small_data, measures=["rmse", "mae"], cv=folds, n_jobs=1)
    two = cross_validate(algo, small_data, measures=["rmse", "mae"], cv=folds, n_jobs=2)
    np.testing.assert_array_equal(one["test_rmse"], two["test_rmse"])
    np.testing.assert_array_equal(one["test_mae"], two["test_mae"])


def test_grid_search_matches_knnbasic(small_data):
    grid = {"k": [5, 20], "sim_options": {"name": ["msd", "cosine"], "min_support": [1, 3]}}
    folds = KFold(n_splits=3, random_state=0)
    ours = GridSearchCV(PrivateKNN, grid, measures=["rmse"], cv=folds)
    ours.fit(small_data)
    grid_knn = copy.deepcopy(grid)
    grid_knn["verbose"] = [False]
    theirs = GridSearchCV(KNNBasic, grid_knn, measures=["rmse"], cv=folds)
    theirs.fit(small_data)
    np.testing.assert_allclose(ours.cv_results["mean_test_rmse"],
                               theirs.cv_results["mean_test_rmse"], atol=1e-12)
    assert ours.best_params["rmse"]["k"] == theirs.best_params["rmse"]["k"]


@pytest.mark.parametrize("neighbourhood", ["item", "user"])
def test_dump_round_trip(tmp_path, split, neighbourhood):
    trainset, testset = split
    algo = PrivateKNN(k=10, sim_options={"name": "msd"}, neighbourhood=neighbourhood,
                      random_state=3).fit(trainset)
    before = algo.test(testset)
    path = tmp_path / "model.pkl"
    dump.dump(str(path), algo=algo)
    _, loaded = dump.load(str(path))
    assert loaded.test(testset) == before


def test_unknown_ids_are_impossible(split):
    trainset, testset = split
    algo = PrivateKNN(k=10).fit(trainset)
    uid, iid, _ = testset[0]
    for pair in [("no such user", iid), (uid, "no such item")]:
        prediction = algo.predict(*pair)
        assert prediction.details["was_impossible"]
        assert prediction.est == trainset.global_mean
        assert algo.test([(*pair, 3.0)])[0] == algo.predict(*pair, r_ui=3.0)
    assert algo.test([]) == []
    # Surprise's defaultdicts must not grow when asked about unknown ids
    assert len(trainset.ur) == trainset.n_users and len(trainset.ir) == trainset.n_items


def test_random_state_types_and_reproducibility(split):
    # a randomised selector, so that the predictions depend on the draws
    trainset, testset = split
    for seed in [None, 0, np.random.RandomState(1), np.random.default_rng(2)]:
        algo = PrivateKNN(k=5, selector="probabilistic", random_state=seed).fit(trainset)
        assert algo.test(testset[:50]) == algo.test(testset[:50])
    algo = PrivateKNN(k=5, selector="probabilistic", random_state=4)
    first = algo.fit(trainset).test(testset[:50])
    assert algo.fit(trainset).test(testset[:50]) == first  # an int seed: the same draws
    other = PrivateKNN(k=5, selector="probabilistic", random_state=5).fit(trainset)
    assert other.test(testset[:50]) != first


def test_inputs_are_not_mutated(split):
    trainset, testset = split
    options = {"name": "cosine"}
    snapshot = (copy.deepcopy(trainset.ur), copy.deepcopy(trainset.ir), list(testset))
    PrivateKNN(sim_options=options).fit(trainset).test(testset)
    assert options == {"name": "cosine"}
    assert snapshot == (trainset.ur, trainset.ir, testset)


def test_privacy_report_of_exact_topk_says_nothing_is_protected(split):
    report = PrivateKNN().fit(split[0]).privacy_report()
    assert len(report) == 0
    assert report.total() == (math.inf, 0.0) and report.guarantee is None
    assert "No private mechanism ran" in str(report)


@pytest.mark.parametrize(
    ("kwargs", "error", "needle"),
    [
        ({"k": 0}, ValueError, "k"),
        ({"k": 2.5}, TypeError, "k"),
        ({"k": True}, TypeError, "k"),
        ({"min_k": -1}, ValueError, "min_k"),
        ({"neighbourhood": "items"}, ValueError, "neighbourhood"),
        ({"centered": "yes", "neighbourhood": "user"}, TypeError, "centered"),
        ({"sim_options": {"name": "jaccard"}}, ValueError, "name"),
        ({"sim_options": {"name": "minhash", "user_based": False}}, ValueError, "user_based"),
        ({"sim_options": {"user_based": 0}}, TypeError, "user_based"),
        ({"sim_options": {"name": "pearson_baseline", "shrinkage": -1}}, ValueError,
         "shrinkage"),
        ({"sim_options": {"name": "msd", "shrinkage": 1}}, ValueError, "shrinkage"),
        ({"prediction": "median"}, ValueError, "prediction"),
        ({"fallback": "item_mean"}, ValueError, "fallback"),
        ({"fallback": None}, TypeError, "fallback"),
        ({"neighbour_shrinkage": -1}, ValueError, "neighbour_shrinkage"),
        ({"neighbour_shrinkage": math.nan}, ValueError, "neighbour_shrinkage"),
        ({"neighbour_shrinkage": "10"}, TypeError, "neighbour_shrinkage"),
        ({"centered": True, "prediction": "means"}, ValueError,
         "centered"),
        ({"bsl_options": {"method": "lbfgs"}}, ValueError, "method"),
        ({"bsl_options": {"n_epochs": 0}}, ValueError, "n_epochs"),
        ({"bsl_options": {"reg": -1}}, ValueError, "reg"),
        ({"bsl_options": {"regu": 1}}, ValueError, "regu"),
        ({"bsl_options": "als"}, TypeError, "bsl_options"),
        ({"sim_options": {"min_support": -1}}, ValueError, "min_support"),
        ({"sim_options": {"min_suport": 2}}, ValueError, "min_suport"),
        ({"sim_options": "cosine"}, TypeError, "sim_options"),
        ({"selector": "best"}, ValueError, "selector"),
        ({"random_state": "seed"}, TypeError, "random_state"),
        ({"random_state": -3}, ValueError, "random_state"),
    ],
)
def test_bad_parameters_are_rejected_at_fit(kwargs, error, needle, split):
    algo = PrivateKNN(**kwargs)           # scikit-learn's convention: stored as given
    with pytest.raises(error, match=needle):
        algo.fit(split[0])
    with pytest.raises(error, match=needle):
        algo.check_params()


def test_parameters_changed_after_construction_take_effect_at_fit(split):
    trainset, testset = split
    algo = PrivateKNN(k=5, selector="ppns", epsilon=1.0, verbose=False)
    algo.epsilon = 4.0
    algo.fit(trainset)
    assert algo.selector_.epsilon == 4.0
    entries = algo.privacy_report().entries
    assert entries[0].epsilon == pytest.approx(2.0)      # PPNS claims ε/2 per selection
    options = {"name": "cosine"}
    PrivateKNN(sim_options=options, verbose=False).fit(trainset)
    assert options == {"name": "cosine"}                  # not mutated (Surprise's adds keys)


@pytest.mark.parametrize("neighbourhood, centered, min_k", [
    ("user", False, 1), ("user", True, 3), ("item", False, 2)])
def test_user_mean_fallback_replaces_only_the_impossible_predictions(split, neighbourhood,
                                                                     centered, min_k):
    """``fallback="user_mean"``: where the basic rule is impossible, the user's mean
    (``KNNWithMeans``'s fallback, possible); everywhere else the same estimate."""
    trainset, testset = split
    options = {"k": 5, "min_k": min_k, "sim_options": {"name": "cosine"},
               "neighbourhood": neighbourhood, "centered": centered, "verbose": False}
    plain = PrivateKNN(**options).fit(trainset).test(testset)
    fallback = PrivateKNN(fallback="user_mean", **options).fit(trainset)
    impossible = 0
    for p, q in zip(plain, fallback.test(testset)):
        if not p.details["was_impossible"]:
            assert q.est == p.est and q.details == p.details
        elif p.details["reason"] == "Not enough neighbors.":
            impossible += 1
            u = trainset.to_inner_uid(p.uid)
            mean = np.mean([r for _, r in trainset.ur[u]])
            assert q.est == pytest.approx(mean, abs=1e-12)
            assert not q.details["was_impossible"] and q.details["actual_k"] < min_k
        else:                                      # unknown user or item: still impossible
            assert q.details["was_impossible"] and q.est == p.est
    assert impossible > 0                          # the case was exercised


RULES = [{"prediction": "basic"}, {"prediction": "means"},
         {"prediction": "baseline", "neighbour_shrinkage": 5.0},
         {"prediction": "basic", "fallback": "user_mean", "neighbour_shrinkage": 2.5},
         {"prediction": "zscore", "neighbour_shrinkage": math.inf},
         {"prediction": "means", "fallback": "baseline"}]


@pytest.mark.parametrize("selector, neighbourhood, user_based, storage", [
    ("topk", "item", True, "dense"), ("ppns", "item", True, "blocked"),
    ("pncf", "user", True, "dense"), ("probabilistic", "user", False, "dense"),
    ("topk", "item", False, "dense")])
def test_estimate_rules_equal_models_fitted_with_each_rule(split, selector, neighbourhood,
                                                            user_based, storage):
    """One selection, every rule: bit for bit the estimates of a model fitted with that
    rule (same seed, so the same noise), and the neighbours charged once."""
    trainset, testset = split
    options = {"k": 6, "sim_options": {"name": "cosine", "user_based": user_based},
               "selector": selector, "neighbourhood": neighbourhood, "random_state": 3,
               "verbose": False, "storage": storage,
               **({"epsilon": 1.0} if selector in ("ppns", "pncf") else {})}
    _, _, _, users, items = inner_ids(trainset, testset)
    known = (users >= 0) & (items >= 0)
    users, items = users[known], items[known]
    shared = PrivateKNN(**options).fit(trainset)
    answers = shared.estimate_rules(users, items, RULES)
    assert len(answers) == len(RULES)
    for rule, (est, possible) in zip(RULES, answers):
        alone = PrivateKNN(**options, **rule).fit(trainset)
        expected_est, expected_possible = alone.estimate_arrays(users, items)
        np.testing.assert_array_equal(est, expected_est)
        np.testing.assert_array_equal(possible, expected_possible)
        pd.testing.assert_frame_equal(shared.privacy_report().per_user(),
                                      alone.privacy_report().per_user())


def test_neighbour_shrinkage_weighs_the_neighbours_by_their_number(split):
    """``λ``: the neighbours' term weighted ``n / (n + λ)`` towards the fallback (``μ_u``,
    or ``b_ui`` with the baseline rule); ``inf`` predicts the fallback itself."""
    trainset, testset = split
    _, _, _, users, items = inner_ids(trainset, testset)
    known = (users >= 0) & (items >= 0)
    users, items = users[known], items[known]
    for prediction in ("basic", "means", "baseline"):
        model = PrivateKNN(k=5, sim_options={"name": "cosine"}, neighbourhood="user",
                           prediction=prediction, fallback="user_mean", verbose=False,
                           ).fit(trainset)
        batch = model.estimate_rules(users, items, [{}, {"neighbour_shrinkage": 3.0},
                                                    {"neighbour_shrinkage": math.inf}])
        (plain, _), (shrunk, _), (fallback, possible) = batch
        actual_k = np.array([model.estimate(u, i)[1]["actual_k"] for u, i in
                             zip(users[:200].tolist(), items[:200].tolist())])
        offset = (model.means[users] if prediction != "baseline" else
                  trainset.global_mean + model.bu[users] + model.bi[items])
        np.testing.assert_allclose(fallback, np.clip(offset, 1, 5), atol=1e-12)
        assert possible.all()
        inside = (plain[:200] > 1) & (plain[:200] < 5)   # no clipping either way
        weight = actual_k / (actual_k + 3.0)
        expected = offset[:200] + weight * (plain[:200] - offset[:200])
        np.testing.assert_allclose(shrunk[:200][inside], np.clip(expected, 1, 5)[inside],
                                   atol=1e-12)
        assert (actual_k > 0).any() and (actual_k == 0).any()


@pytest.mark.parametrize("rules, error, needle", [
    ({"prediction": "means"}, TypeError, "rules"),
    ([], TypeError, "rules"),
    (["means"], TypeError, "dicts"),
    ([{"k": 3}], ValueError, "k"),
    ([{"prediction": "median"}], ValueError, "prediction"),
    ([{"neighbour_shrinkage": -2}], ValueError, "neighbour_shrinkage"),
    ([{"fallback": "none"}], ValueError, "fallback")])
def test_estimate_rules_rejects_bad_rules(split, rules, error, needle):
    algo = PrivateKNN(k=3, verbose=False).fit(split[0])
    with pytest.raises(error, match=needle):
        algo.estimate_rules(np.array([0]), np.array([0]), rules)


def test_predict_before_fit_is_an_error():
    with pytest.raises(AttributeError, match="fit"):
        PrivateKNN().test([("1", "1", 3.0)])


# ---------------------------------------------------------------- regressions
@pytest.mark.parametrize("neighbourhood", ["item", "user"])
@pytest.mark.parametrize("prediction", ["basic", "means", "baseline"])
def test_testset_of_only_unknown_rows(split, neighbourhood, prediction):
    # no row with both its user and its item known (a fold of new users): no crash,
    # the same answers as predict() row by row
    trainset, _ = split
    algo = PrivateKNN(k=5, neighbourhood=neighbourhood, prediction=prediction,
                      verbose=False).fit(trainset)
    rows = [("new user", trainset.to_raw_iid(0), 3.0), ("new user", "new item", None)]
    assert algo.test(rows) == [algo.predict(*row) for row in rows]
    assert algo.test([]) == []


@pytest.mark.parametrize("selector", ["probabilistic", "pncf", "ppns"])
@pytest.mark.parametrize("neighbourhood", ["item", "user"])
def test_alpha_is_the_same_batched_and_alone_and_at_most_one(split, selector, neighbourhood):
    # alpha used to depend on the block width (summation order) and reach 1 + 4e-16
    trainset, testset = split
    epsilon = None if selector == "probabilistic" else 2.0
    algo = PrivateKNN(k=10, selector=selector, epsilon=epsilon, neighbourhood=neighbourhood,
                      diagnostics=True, random_state=3, verbose=False).fit(trainset)
    batch = algo.test(testset[:400])
    single = [algo.predict(u, i, r) for u, i, r in testset[:400]]
    assert [p.details for p in batch] == [p.details for p in single]
    alphas = [p.details["alpha"] for p in batch if not p.details["was_impossible"]]
    assert alphas and all(0.0 <= a <= 1.0 for a in alphas)


def test_verbose_follows_surprise(split, capsys):
    trainset, _ = split
    assert PrivateKNN().verbose is True
    PrivateKNN(sim_options={"name": "pearson_baseline"}).fit(trainset)
    printed = capsys.readouterr().out
    assert "Estimating biases using als..." in printed
    assert "Computing the pearson_baseline similarity matrix..." in printed
    assert "Done computing similarity matrix." in printed
    PrivateKNN(verbose=False).fit(trainset)
    assert capsys.readouterr().out == ""
    PrivateKNN(sim_options={"name": "cosine"}, storage="blocked").fit(trainset)
    assert "Computing the cosine similarities by blocks" in capsys.readouterr().out
    PrivateKNN(storage="blocked", verbose=False).fit(trainset)
    assert capsys.readouterr().out == ""


def test_item_based_neighbours_are_items_and_not_charged_to_users(split):
    trainset, _ = split
    algo = PrivateKNN(k=6, sim_options={"name": "cosine", "user_based": False},
                      selector="ppns", epsilon=1.0, random_state=0, verbose=False)
    algo.fit(trainset)
    assert algo.sim.shape == (trainset.n_items, trainset.n_items)
    users = np.arange(8)
    items = np.array([trainset.ur[u][0][0] for u in users])
    chosen = algo.kneighbors(users, items)[0]   # among the items rated by u
    for u, row in zip(users, chosen):
        rated = {j for j, _ in trainset.ur[u]}
        assert set(row[row >= 0]) <= rated
    report = algo.privacy_report()
    assert len(report) == 0 and "item-based" in str(report)
    per_item = PrivateKNN(k=6, sim_options={"user_based": False}, neighbourhood="user",
                          verbose=False).fit(trainset)
    assert per_item.kneighbors(items=items)[0].shape == (8, 6)
    with pytest.raises(ValueError, match="items"):
        per_item.kneighbors(users)[0]


@pytest.mark.parametrize("prediction", ["means", "zscore", "baseline"])
@pytest.mark.parametrize("user_based", [True, False])
def test_user_neighbourhood_rules_match_reference(split, prediction, user_based):
    trainset, testset = split
    algo = PrivateKNN(k=7, sim_options={"name": "cosine", "user_based": user_based},
                      neighbourhood="user", prediction=prediction, min_k=2,
                      verbose=False).fit(trainset)
    known_users, known_items = algo_users(trainset), algo_items(trainset)
    queries = [(trainset.to_inner_uid(u), trainset.to_inner_iid(i)) for u, i, _ in testset[:300]
               if u in known_users and i in known_items]
    users, items = map(np.array, zip(*queries))
    est, possible = algo.estimate_arrays(users, items)
    assert possible.all()  # every rule but basic falls back to a mean or baseline
    xs, ys = (users, items) if user_based else (items, users)
    lookup = (trainset.ir if user_based else trainset.ur)
    mu = trainset.global_mean
    for x, y, got in zip(xs, ys, est):
        rated = dict(lookup[y])
        neighbours, weights = algo.kneighbors(**({"users": [x]} if user_based else
                                                 {"items": [x]}))
        num = den = 0.0
        n = 0
        for v, w in zip(neighbours[0], weights[0]):
            if v >= 0 and w > 0 and v in rated:
                if prediction == "baseline":
                    dev = rated[v] - (mu + algo.bx[v] + algo.by[y])
                else:
                    dev = rated[v] - algo.means[v]
                    if prediction == "zscore":
                        dev /= algo.sigmas[v]
                num, den, n = num + w * dev, den + w, n + 1
        shift = num / den if n >= 2 else 0.0
        if prediction == "baseline":
            expected = mu + algo.bx[x] + algo.by[y] + shift
        elif prediction == "zscore":
            expected = algo.means[x] + shift * algo.sigmas[x]
        else:
            expected = algo.means[x] + shift
        low, high = trainset.rating_scale
        assert got == pytest.approx(min(high, max(low, expected)), abs=1e-9)


def test_recommendations_are_charged_like_predictions(split):
    trainset, _ = split
    algo = PrivateKNN(k=5, selector="ppns", epsilon=1.0, random_state=0,
                      verbose=False).fit(trainset)
    report = algo.privacy_report()
    assert report.applications(0).sum() == 0
    uid = trainset.to_raw_uid(0)
    top = algo.recommend(uid, n=5, neighbour_shrinkage=0)     # ranked by the predictions
    charged = report.applications(0).copy()
    assert charged.sum() > 0 and len(top) == 5
    # the same list again releases nothing new: same keyed draws, no new charge
    assert algo.recommend(uid, n=5, neighbour_shrinkage=0) == top
    algo.recommend(uid, n=5)                          # the default ranking: the same draws
    np.testing.assert_array_equal(report.applications(0), charged)
    np.testing.assert_array_equal(report.applications(0), charged)
    # and equals the predictions one by one
    items = np.arange(trainset.n_items)
    est, possible = algo.estimate_arrays(np.zeros_like(items), items)
    rated = {i for i, _ in trainset.ur[0]}
    ranked = sorted((e, i) for e, i, ok in zip(-est, items, possible) if ok and i not in rated)
    assert [trainset.to_raw_iid(i) for _, i in ranked[:5]] == [iid for iid, _ in top]


@pytest.mark.parametrize("user_based", [True, False])
def test_get_neighbors_is_surprises_with_topk_and_the_selectors_otherwise(split, user_based):
    trainset, _ = split
    options = {"name": "msd", "user_based": user_based}
    reference = KNNBasic(sim_options=dict(options), verbose=False).fit(trainset)
    ours = PrivateKNN(sim_options=options, verbose=False).fit(trainset)
    for iid in (0, 3, 17):
        for k in (1, 5, 40):
            assert ours.get_neighbors(iid, k) == reference.get_neighbors(iid, k)
    private = PrivateKNN(k=6, sim_options=options, selector="ppns", epsilon=1.0,
                         neighbourhood="user", random_state=0, verbose=False).fit(trainset)
    x = {"users": [3]} if user_based else {"items": [3]}
    expected = private.kneighbors(**x)[0][0]
    assert private.get_neighbors(3, 6) == expected[expected >= 0].tolist()
    with pytest.raises(ValueError, match="iid"):
        private.get_neighbors(10**6, 6)


def test_get_neighbors_at_another_k_is_a_selection_of_its_own_charged_once(split):
    """#36.18: Surprise's get_neighbors takes any k; a private selector answers it with a
    set of that size, charged under the selector's entries at that k (once per user)."""
    trainset, _ = split
    private = PrivateKNN(k=6, selector="ppns", epsilon=1.0, neighbourhood="user",
                         random_state=0, verbose=False).fit(trainset)
    before = private.privacy_report().total()
    smaller = private.get_neighbors(3, 4)
    assert len(smaller) == 4 and 3 not in smaller
    assert len(private.get_neighbors(3, 20)) == 20
    after = private.privacy_report().total()
    assert private.get_neighbors(3, 4) == smaller            # kept: asked again, the same set
    assert private.privacy_report().total() == after   # and not charged again
    assert after[0] > before[0]
    lists = {o.name: o for o in private.privacy_report().outputs}
    assert lists["neighbour lists at k=4 (get_neighbors), as raw ids"].covered_by
    # the model's own sets (its predictions) are not changed by the other sizes
    assert private.get_neighbors(3, 6) == private.kneighbors(users=[3])[0][0].tolist()
    # a k above the number of users chooses them all, once, however large
    everyone = private.get_neighbors(3, 10**20)
    assert sorted(everyone) == [u for u in range(trainset.n_users) if u != 3]
    total = private.privacy_report().total()
    assert private.get_neighbors(3, trainset.n_users + 5) == everyone
    assert private.privacy_report().total() == total


# -------------------------------------- issue #33, finding 7: a refit refused by the budget
def _sjlt(epsilon):
    return {"name": "sjlt", "width": 16, "epsilon": epsilon}


def test_a_refit_refused_by_the_budget_leaves_the_model_as_it_was(split):
    trainset, testset = split
    algo = PrivateKNN(k=5, sim_options=_sjlt(1.0), budget=(1.0, 0.0), verbose=False,
                      random_state=np.random.default_rng(0)).fit(trainset)
    answers = algo.test(testset[:60])
    state, report, sim = dict(vars(algo)), str(algo.privacy_report()), algo.sim.copy()
    algo.sim_options = _sjlt(4.0)
    with pytest.raises(BudgetExceededError, match="nothing was released"):
        algo.fit(trainset)
    assert vars(algo).keys() == state.keys()
    assert [name for name, value in vars(algo).items()
            if value is not state[name]] == ["sim_options"]   # the parameter just set
    assert algo.test(testset[:60]) == answers                 # the ε = 1 sketches'
    np.testing.assert_array_equal(algo.sim, sim)
    assert str(algo.privacy_report()) == report


def test_a_first_fit_refused_by_the_budget_leaves_the_model_unfitted(split):
    trainset, testset = split
    algo = PrivateKNN(k=5, sim_options=_sjlt(4.0), budget=(1.0, 0.0), verbose=False)
    unfitted = dict(vars(algo))
    with pytest.raises(BudgetExceededError, match="nothing was released"):
        algo.fit(trainset)
    assert vars(algo) == unfitted
    uid, iid, _ = testset[0]
    ids = np.array([0])
    calls = {"sim": lambda: algo.sim, "test": lambda: algo.test(testset[:3]),
             "predict": lambda: algo.predict(uid, iid), "estimate": lambda: algo.estimate(0, 0),
             "kneighbors": lambda: algo.kneighbors(ids, ids),
             "get_neighbors": lambda: algo.get_neighbors(0, 5),
             "recommend": lambda: algo.recommend(uid),
             "recommend_batch": lambda: algo.recommend_batch([uid]),
             "score_rows": lambda: algo.score_rows(ids),
             "estimate_arrays": lambda: algo.estimate_arrays(ids, ids),
             "estimate_rules": lambda: algo.estimate_rules(ids, ids, [{}]),
             "privacy_report": algo.privacy_report, "selection_summary": algo.selection_summary,
             "default_prediction": algo.default_prediction,
             "compute_similarities": algo.compute_similarities}
    for name, call in calls.items():
        with pytest.raises(AttributeError, match="not fitted yet: call fit first"):
            call()
            pytest.fail(name)


# -------------------------------------- issue #33, finding 8: what the report prints
def _composed_lines(report) -> list[str]:
    return [line for line in str(report).splitlines()
            if line.startswith(("Per user", "    tighter", "Guarantee"))]


def test_an_unqueried_private_model_prints_no_epsilon_of_zero(split):
    trainset, _ = split
    algo = PrivateKNN(k=5, selector="pncf_corrected", neighbourhood="user",
                      verbose=False).fit(trainset)
    text = str(algo.privacy_report())
    assert not re.search(r"ε = 0(?![.\d])", text)
    assert "Per user, composed (one rating): nothing released through these entries yet" in text


def test_a_holding_sketch_under_an_uncovered_output_is_tagged(split):
    trainset, testset = split
    algo = PrivateKNN(k=5, sim_options=_sjlt(1.0), verbose=False).fit(trainset)
    algo.test(testset[:20])
    # one release at δ = 0: no tighter ε at the same δ, so no tighter line (#51)
    (line,) = _composed_lines(algo.privacy_report())[1:]
    assert line.startswith("Per user, composed (one rating): worst ε = 1, δ = 0 (holds for the "
                           "similarity entries only: no end-to-end guarantee)")


@pytest.mark.parametrize("epsilon", [800.0, 5000.0])
def test_a_large_epsilon_is_reported_by_basic_composition(split, epsilon):
    pytest.importorskip("dp_accounting")
    trainset, testset = split
    algo = PrivateKNN(k=5, sim_options=_sjlt(epsilon), selector="pncf_corrected",
                      epsilon=epsilon, neighbourhood="user", verbose=False).fit(trainset)
    algo.test(testset[:20])
    report = algo.privacy_report()
    assert "tighter" not in str(report)         # δ = 0: no tighter ε at the same δ (#51)
    with pytest.warns(RuntimeWarning, match="basic composition is returned"):
        assert report.tight_epsilon(Unit.RATING) == report.total(Unit.RATING)[0]


# ------------------------------ issue #37, point 8: the report says what the user passed
def test_the_report_states_the_epsilon_given_and_how_it_is_split(split):
    """PPNS at epsilon=1 reported ε = 0.5 with nothing saying why: the header now names
    the epsilon given, the entry its share, and the worst user's ε is that share times
    the applications the entry line counts."""
    trainset, testset = split
    ppns = PrivateKNN(k=5, selector="ppns", epsilon=1.0, verbose=False).fit(trainset)
    ppns.test(testset[:1])
    report = ppns.privacy_report()
    text = str(report)
    assert text.startswith("Privacy report: PrivateKNN(selector='ppns', epsilon=1, ")
    (entry,) = report.entries
    assert entry.epsilon == 0.5 and entry.note.startswith(
        "ε/2 of epsilon = 1, per neighbour set: PPNS draws with PNCF's weights")
    most = int(report.applications(0).max())
    assert most == 1 and report.total() == (0.5 * most, 0.0)
    assert (f"applied to every candidate of a neighbour set another user asks for; so far "
            f"{np.median(report.applications(0)):g} time") in text
    assert f"{most} to the most exposed" in text and "(median / max)" not in text
    pncf = PrivateKNN(k=5, selector="pncf", epsilon=3.0, verbose=False).fit(trainset)
    notes = [entry.note for entry in pncf.privacy_report().entries]
    assert [note.split(";")[0] for note in notes] == [
        "ε/2 of epsilon = 3, per neighbour set (the other half: the perturbed similarities)",
        "ε/2 of epsilon = 3, per chosen similarity (the other half: the selection)"]


def test_a_seeded_report_names_the_seed_only_where_noise_ran(split):
    """Top-k draws no noise: its report says nothing of a seed; a seeded sketch does."""
    trainset, testset = split
    for selector in ("topk", "probabilistic"):
        algo = PrivateKNN(k=5, selector=selector, random_state=0, verbose=False).fit(trainset)
        algo.test(testset[:5])
        assert "seed" not in str(algo.privacy_report())
    sketched = PrivateKNN(k=5, sim_options=_sjlt(1.0), random_state=0,
                          verbose=False).fit(trainset)
    assert "seeded noise (random_state is an int)" in str(sketched.privacy_report())
