"""PrivateKNN: Surprise integration, user neighbourhood, validation."""

from __future__ import annotations

import copy
import math
import re
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from strategies import (
    check_predictions,
    full_testset,
    fuzz,
    knn_parameters,
    raises_naming,
    rating_frames,
    to_dataset,
    trainset_state,
    valid_knn_configurations,
)
from surprise import KNNBasic, dump
from surprise.model_selection import GridSearchCV, KFold, cross_validate

from dprec import PrivateKNN, datasets
from dprec._surprise import inner_ids
from dprec.knn.user_neighbourhood import SetChooser
from dprec.ledger import BudgetExceededError, Status, Unit
from dprec.selectors import PNCF, PPNS, Probabilistic, TopK
from dprec.similarity import SKETCH_BACKENDS, with_public_bounds


@pytest.fixture(scope="module")
def split(small_data):
    return next(KFold(n_splits=4, random_state=0).split(small_data))


def reference_prediction(algo, trainset, u, i, centered, neighbourhood):
    """Plain-Python prediction of either neighbourhood semantics (top-k): the k most
    similar users overall who rated ``i`` ("user"), or the k most similar raters of
    ``i`` ("item", Surprise's)."""
    rated = dict(trainset.ir[i])
    pool = range(trainset.n_users) if neighbourhood == "user" else sorted(rated)
    sims = [(algo.sim[u, v], v) for v in pool if neighbourhood == "item" or v != u]
    neighbours = sorted(sims, key=lambda t: -t[0])[: algo.k]  # stable: ties by inner id
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
         {"prediction": "zscore", "neighbour_shrinkage": math.inf}]


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


@pytest.mark.parametrize("neighbourhood", ["item", "user"])
def test_neighbours_and_fit_precomputed(split, neighbourhood):
    trainset, testset = split
    kwargs = {"k": 6, "sim_options": {"name": "cosine"}, "selector": "ppns", "epsilon": 1.0,
              "neighbourhood": neighbourhood, "random_state": 2}
    algo = PrivateKNN(**kwargs).fit(trainset)
    users = np.arange(10)
    items = np.array([trainset.ur[u][0][0] for u in users])
    chosen = algo.kneighbors(users, items)[0]
    assert chosen.shape == (10, 6)
    assert ((chosen >= -1) & (chosen < trainset.n_users)).all()
    if neighbourhood == "item":  # chosen among the raters of the item
        for i, row in zip(items, chosen):
            raters = {v for v, _ in trainset.ir[i]}
            assert set(row[row >= 0]) <= raters
    again = PrivateKNN(**kwargs).fit_precomputed(trainset, algo.sim, algo.sensitivity_)
    np.testing.assert_array_equal(again.kneighbors(users, items)[0], chosen)
    with pytest.warns(DeprecationWarning, match="kneighbors"):   # the old name still works
        np.testing.assert_array_equal(again.neighbours(users, items), chosen)
    assert again.test(testset[:100]) == algo.test(testset[:100])
    with pytest.raises(ValueError, match="sensitivity"):
        PrivateKNN(**kwargs).fit_precomputed(trainset, algo.sim)
    with pytest.raises(ValueError, match="shape"):
        PrivateKNN(**kwargs).fit_precomputed(trainset, algo.sim[1:], algo.sensitivity_)


SKETCH_OPTIONS = [
    {"name": "rr_minhash", "width": 64, "B": 4, "epsilon": 4.0, "delta": 1e-4, "tau": 5},
    {"name": "noisy_minhash", "width": 64, "B": 4, "epsilon": 4.0, "delta": 1e-4, "tau": 5},
    {"name": "sjlt", "width": 64, "s": 4, "epsilon": 2.0},
    {"name": "gaussian_jl", "width": 64, "epsilon": 2.0, "delta": 1e-5},
]


@pytest.mark.parametrize("neighbourhood", ["item", "user"])
@pytest.mark.parametrize("options", [*SKETCH_OPTIONS, {"name": "minhash", "width": 64, "B": 4}],
                         ids=lambda o: o["name"])
def test_blocked_sketch_storage_gives_the_same_model(split, options, neighbourhood):
    """With storage='blocked' a sketch backend's rows are estimated from the users' one
    release, never the n × n matrix: the dense model's similarities (the same bits for
    the code sketches, float64 rounding for the projections), predictions, neighbours
    and privacy report (one release per user, charged once)."""
    trainset, testset = split
    fitted = []
    for storage in ("dense", "blocked"):
        algo = PrivateKNN(k=10, sim_options=options, selector="ppns", epsilon=1.0,
                          neighbourhood=neighbourhood, random_state=3, storage=storage,
                          verbose=False).fit(trainset)
        assert algo.storage_ == storage
        predictions = algo.test(testset)
        algo.test(testset[:50])                           # asked again: nothing new
        fitted.append((algo.compute_similarities(), [p.est for p in predictions],
                       str(algo.privacy_report()),
                       algo.privacy_report().applications(0).tolist()))
    (dense_sim, dense_est, dense_report, dense_uses), blocked = fitted
    exact = options["name"] in ("minhash", "rr_minhash")
    if exact:
        np.testing.assert_array_equal(dense_sim, blocked[0])
        assert dense_est == blocked[1]
    else:
        np.testing.assert_allclose(dense_sim, blocked[0], rtol=0, atol=1e-12)
        np.testing.assert_allclose(dense_est, blocked[1], rtol=0, atol=1e-9)
    assert dense_report == blocked[2]
    assert dense_uses == blocked[3]
    if options["name"] != "minhash":                # entry 0: the sketch, released once
        assert dense_uses == [1] * trainset.n_users


@pytest.mark.parametrize("options", SKETCH_OPTIONS, ids=lambda o: o["name"])
def test_private_sketch_backends_in_privateknn(split, options):
    trainset, testset = split
    algo = PrivateKNN(k=10, sim_options=options, selector="ppns", epsilon=1.0,
                      random_state=np.random.default_rng(0)).fit(trainset)
    predictions = algo.test(testset[:100])
    assert predictions == [algo.predict(u, i, r) for u, i, r in testset[:100]]
    assert all(np.isfinite(p.est) for p in predictions)
    report = algo.privacy_report()
    sketch, selector = report.entries
    assert (sketch.component, selector.component) == ("similarity", "selector")
    assert selector.status is Status.AS_PUBLISHED
    assert sketch.status is (Status.AS_PUBLISHED if options["name"] == "gaussian_jl"
                             else Status.HOLDS)  # floating-point Gaussian noise
    # each user released one sketch, at the ε asked for
    assert sketch.epsilon == pytest.approx(options["epsilon"], rel=1e-5)
    assert sketch.delta <= options.get("delta", 0.0)
    assert report.applications(0).tolist() == [1] * trainset.n_users
    # the units are reported apart, never added
    if sketch.unit is Unit.SET_ITEM:
        assert report.total(Unit.SET_ITEM) == (sketch.epsilon, sketch.delta)
        with pytest.raises(ValueError, match="different units"):
            report.total()
    assert np.allclose(np.diag(algo.sim), 1.0) and np.isfinite(algo.sim).all()
    again = PrivateKNN(k=10, sim_options=options, selector="ppns", epsilon=1.0,
                       random_state=0).fit(trainset)
    np.testing.assert_array_equal(again.sim, algo.sim)
    with pytest.raises(ValueError, match="fit_precomputed"):
        algo.fit_precomputed(trainset, algo.sim, np.ones(trainset.n_users))


@pytest.mark.parametrize("options", SKETCH_OPTIONS, ids=lambda o: o["name"])
def test_a_backend_object_stands_for_its_options(split, options):
    trainset, testset = split
    public = with_public_bounds(options, trainset.rating_scale)  # the projections' bound
    params = {key: value for key, value in public.items() if key != "name"}
    backend = SKETCH_BACKENDS[options["name"]](**params)
    given = PrivateKNN(k=10, sim_options=backend, random_state=0).fit(trainset)
    from_dict = PrivateKNN(k=10, sim_options=options, random_state=0).fit(trainset)
    np.testing.assert_array_equal(given.sim, from_dict.sim)
    assert given.sim_options is backend and not hasattr(backend, "release_")  # not mutated
    seeded = SKETCH_BACKENDS[options["name"]](**params, random_state=1)
    with pytest.raises(ValueError, match="random_state"):
        PrivateKNN(sim_options=seeded).fit(trainset)


def test_sketch_guarantees_are_not_silently_weakened(split):
    trainset, _ = split
    smallest = min(len(ratings) for ratings in trainset.ur.values())
    options = {"name": "rr_minhash", "width": 32, "B": 2, "epsilon": 4.0, "tau": smallest + 5}
    with pytest.raises(ValueError, match="tau"):
        PrivateKNN(sim_options=options).fit(trainset)
    with pytest.raises(ValueError, match="rating_bound"):
        PrivateKNN(sim_options={"name": "sjlt", "width": 16, "s": 4, "epsilon": 1.0,
                                "rating_bound": 2.0}).fit(trainset)
    with pytest.raises(ValueError, match="epsilon"):
        PrivateKNN(sim_options={"name": "rr_minhash", "width": 32}).check_params()
    with pytest.raises(ValueError, match="min_support"):
        PrivateKNN(sim_options={"name": "rr_minhash", "epsilon": 1.0,
                                "min_support": 2}).check_params()


@pytest.mark.parametrize("neighbourhood", ["item", "user"])
def test_threads_do_not_change_the_answers(split, monkeypatch, neighbourhood):
    from dprec.knn import blocks

    trainset, testset = split
    monkeypatch.setattr(blocks, "_BLOCK_CELLS", 1 << 10)  # many blocks on small data
    runs = []
    for threads in ("1", "3"):
        monkeypatch.setenv("DPREC_NUM_THREADS", threads)
        algo = PrivateKNN(k=10, sim_options={"name": "cosine"}, selector="ppns", epsilon=1.0,
                          neighbourhood=neighbourhood, random_state=3).fit(trainset)
        runs.append((algo.test(testset), algo.selection_summary()))
    assert runs[0] == runs[1]


def test_thread_count_follows_the_limits(monkeypatch):
    from dprec._threads import map_blocks, thread_count

    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    monkeypatch.delenv("DPREC_NUM_THREADS", raising=False)
    assert thread_count() == 3
    monkeypatch.setenv("DPREC_NUM_THREADS", "2")
    assert thread_count() == 2
    monkeypatch.setenv("DPREC_NUM_THREADS", "zero")  # not a positive integer: ignored
    assert thread_count() == 3
    assert map_blocks(lambda x: x * x, range(7)) == [x * x for x in range(7)]


def test_map_blocks_reuses_one_pool_runs_nested_calls_inline_and_waits_on_errors(
        monkeypatch):
    """The blocks run on one pool of threads per process (the same threads call after
    call, a new pool when the thread count changes); a call from inside a block runs in
    that block's thread instead of waiting for the busy pool; and when a block raises,
    the call raises only once every block has finished."""
    import threading
    import time

    from dprec._threads import map_blocks

    monkeypatch.setenv("DPREC_NUM_THREADS", "2")

    def names(_):
        time.sleep(0.01)
        return threading.current_thread().name

    first, second = set(map_blocks(names, range(6))), set(map_blocks(names, range(6)))
    assert first == second and all(name.startswith("dprec") for name in first)
    monkeypatch.setenv("DPREC_NUM_THREADS", "3")
    together = threading.Barrier(3, timeout=30)    # three blocks at once: three threads
    assert len(set(map_blocks(lambda _: (together.wait(), threading.get_ident())[1],
                              range(3)))) == 3

    def nested(block):
        inner = map_blocks(lambda _: threading.current_thread().name, range(4))
        return set(inner) == {threading.current_thread().name}

    assert all(map_blocks(nested, range(6)))
    finished = []

    def fails_first(block):
        if block == 0:
            raise RuntimeError("block 0")
        time.sleep(0.05)
        finished.append(block)

    with pytest.raises(RuntimeError, match="block 0"):
        map_blocks(fails_first, range(4))
    assert sorted(finished) == [1, 2, 3]


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


def test_compute_similarities(split):
    trainset, _ = split
    exact = PrivateKNN(sim_options={"name": "pearson"}, verbose=False).fit(trainset)
    np.testing.assert_array_equal(exact.compute_similarities(), exact.sim)
    sketch = PrivateKNN(sim_options=SKETCH_OPTIONS[0], random_state=0,
                        verbose=False).fit(trainset)
    released = sketch.compute_similarities()  # the users' one release, not a new one
    np.testing.assert_array_equal(released, sketch.sim)
    assert released is not sketch.sim
    with pytest.raises(AttributeError, match="fit"):
        PrivateKNN(sim_options=SKETCH_OPTIONS[0]).compute_similarities()


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


def algo_users(trainset):
    return {trainset.to_raw_uid(u) for u in trainset.all_users()}


def algo_items(trainset):
    return {trainset.to_raw_iid(i) for i in trainset.all_items()}


def test_recommendations_are_charged_like_predictions(split):
    trainset, _ = split
    algo = PrivateKNN(k=5, selector="ppns", epsilon=1.0, random_state=0,
                      verbose=False).fit(trainset)
    report = algo.privacy_report()
    assert report.applications(0).sum() == 0
    uid = trainset.to_raw_uid(0)
    top = algo.recommend(uid, n=5)
    charged = report.applications(0).copy()
    assert charged.sum() > 0 and len(top) == 5
    # the same list again releases nothing new: same keyed draws, no new charge
    assert algo.recommend(uid, n=5) == top
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
    with pytest.raises(ValueError, match="k must be the model's k"):
        private.get_neighbors(3, 5)
    with pytest.raises(ValueError, match="iid"):
        private.get_neighbors(10**6, 6)


# ---------------------------------------------------------------- properties (hypothesis)
def expected_errors(kwargs: dict, bad: set) -> tuple[set, set]:
    """The names an error must mention: the invalid parameters and the violated
    constraints (empty: the constructor must succeed); and the invalid flat parameters
    the named selector does not use, which it may ignore (documented) or reject (see
    test_unused_flat_parameters_are_still_validated)."""
    names = set(bad)
    selector = kwargs["selector"]
    used = {"topk": set(), "probabilistic": set(), "pncf": {"epsilon", "rho"},
            "ppns": {"epsilon", "p", "alpha"}}
    flat = {"epsilon", "p", "alpha", "rho"}
    ignorable = set()
    if isinstance(selector, str) and selector.lower() in used:
        ignorable = names & (flat - used[selector.lower()])
        names -= ignorable
    given_flat = {n for n in flat if kwargs.get(n) is not None}
    if isinstance(selector, (TopK, Probabilistic, PNCF, PPNS)) and given_flat:
        names |= given_flat
    # constraints between parameters (evaluated where their parts are valid)
    k = kwargs["k"]
    if isinstance(selector, str) and selector.lower() == "ppns":
        if kwargs.get("p") is not None and kwargs.get("alpha") is not None:
            names |= {"p", "alpha"}
        elif not names & {"p", "alpha", "k"}:
            p = kwargs.get("alpha") or kwargs.get("p") or 0.5
            if p > (k - 1) / k:
                names.add("alpha" if kwargs.get("alpha") is not None else "p")
    elif isinstance(selector, PPNS) and "k" not in names and selector.p > (k - 1) / k:
        names.add("p")
    return {name.split(":")[-1] for name in names}, ignorable  # "sim_options:s" -> "s"


@fuzz(300)
@given(knn_parameters())
def test_privateknn_constructor(params):
    kwargs, bad = params
    options_before = copy.deepcopy(kwargs["sim_options"])
    names, ignorable = expected_errors(kwargs, bad)
    if names:
        raises_naming(lambda: PrivateKNN(**kwargs).check_params(), *(names | ignorable))
    else:
        try:
            algo = PrivateKNN(**kwargs).check_params()
        except (ValueError, TypeError):
            if not ignorable:
                raise
            raises_naming(lambda: PrivateKNN(**kwargs).check_params(), *ignorable)
        else:
            assert algo.k == kwargs["k"]
            assert algo.random_state is kwargs["random_state"]
    if isinstance(options_before, dict):
        assert kwargs["sim_options"] == options_before


def below_tau(options: dict, trainset) -> bool:
    """Whether some user's set is smaller than a MinHash backend's ``tau`` (or empty)."""
    if options["name"] not in ("rr_minhash", "noisy_minhash"):
        return False
    threshold = options.get("threshold")
    sizes = [sum(threshold is None or r >= threshold for _, r in trainset.ur[u])
             for u in trainset.all_users()]
    if "tau" not in options:  # tau from the data: the smallest non-empty set
        if max(sizes) == 0:
            return True
        tau = min(size for size in sizes if size > 0)
    else:
        tau = options["tau"]
    return options.get("small_users", "raise") == "raise" and min(sizes) < tau


@fuzz(250)
@given(rating_frames(), valid_knn_configurations())
def test_privateknn_fit_and_predict(frame_scale, kwargs):
    frame, scale = frame_scale
    data = to_dataset(frame, scale)
    raw_before = copy.deepcopy(data.raw_ratings)
    trainset = data.build_full_trainset()
    state_before = trainset_state(trainset)
    testset = full_testset(trainset)
    testset_before = copy.deepcopy(testset)
    options_before = copy.deepcopy(kwargs["sim_options"])

    algo = PrivateKNN(**kwargs)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # small users excluded (warned)
            algo.fit(trainset)
    except ValueError as error:  # a set below the public bound tau: documented refusal
        assert "tau" in str(error), error
        assert below_tau(kwargs["sim_options"], trainset), error
        return
    predictions = check_predictions(algo, trainset, testset)

    # was_impossible wherever no neighbour can contribute (exactly where top-k finds
    # fewer than min_k among the k most similar raters, in Surprise's semantics)
    sim = algo.sim
    assert np.isfinite(sim).all()
    known_users, known_items = algo_users(trainset), algo_items(trainset)
    for prediction in predictions:
        if prediction.uid not in known_users or prediction.iid not in known_items:
            continue  # unknown: checked by check_predictions
        u = trainset.to_inner_uid(prediction.uid)
        i = trainset.to_inner_iid(prediction.iid)
        raters = [v for v, _ in trainset.ir[i] if kwargs["neighbourhood"] == "item" or v != u]
        usable = [v for v in raters if (sim[u, v] != 0 if kwargs["centered"] else sim[u, v] > 0)]
        details = prediction.details
        if not raters or (not usable and kwargs["selector"] != "pncf"):
            assert details["was_impossible"], prediction  # PNCF: perturbed weights
        if not details["was_impossible"]:
            assert details["actual_k"] >= max(kwargs["min_k"], 1)
        if kwargs["selector"] == "topk" and kwargs["neighbourhood"] == "item":
            top = sorted(raters, key=lambda v: -sim[u, v])[:kwargs["k"]]  # stable: ir order
            n_counted = sum((sim[u, v] != 0 if kwargs["centered"] else sim[u, v] > 0)
                            for v in top)
            assert details["was_impossible"] == (n_counted < max(kwargs["min_k"], 1))
            if not details["was_impossible"]:
                assert details["actual_k"] == n_counted

    report = algo.privacy_report()
    assert report.guarantee is None  # PrivateKNN's predictions average raw ratings
    # nothing the caller gave was modified
    assert data.raw_ratings == raw_before
    assert trainset_state(trainset) == state_before
    assert testset == testset_before
    assert kwargs["sim_options"] == options_before


def test_check_bool_accepts_numpy_bools():
    """Regression: numpy 2 renamed ``np.bool_``; ``centered=np.True_`` was a TypeError."""
    PrivateKNN(neighbourhood="user", centered=np.True_, verbose=np.False_).check_params()
    raises_naming(lambda: PrivateKNN(neighbourhood="user", centered=np.int64(1)).check_params(),
                  "centered")


def test_ppns_names_alpha_when_alpha_sets_p():
    """Regression: ``alpha`` too large for ``k`` was reported as a bad ``p``."""
    raises_naming(lambda: PrivateKNN(k=5, selector="ppns", alpha=0.9).check_params(), "alpha")


@pytest.mark.parametrize(("kwargs", "name"), [
    ({"selector": "topk", "epsilon": -1.0}, "epsilon"),
    ({"selector": "probabilistic", "p": 7.0}, "p"),
    ({"selector": "pncf", "alpha": "x"}, "alpha"),
    ({"selector": "ppns", "rho": math.nan}, "rho"),
])
def test_unused_flat_parameters_are_still_validated(kwargs, name):
    raises_naming(lambda: PrivateKNN(**kwargs).check_params(), name)


@pytest.mark.parametrize(("neighbourhood", "users", "items", "name"), [
    (nb, users, items, name) for nb in ("item", "user")
    for users, items, name in [([-1], [0], "users"), ([0.5], [0], "users"),
                               ([99], [0], "users"), ([0], [-1], "items"), ([0], [99], "items")]
    if nb == "item" or name == "users"  # items are ignored with neighbourhood="user"
])
def test_kneighbors_rejects_ids_outside_the_trainset(neighbourhood, users, items, name):
    trainset = datasets.synthetic(8, 10, 40, random_state=0).build_full_trainset()
    algo = PrivateKNN(k=3, neighbourhood=neighbourhood).fit(trainset)
    raises_naming(lambda: algo.kneighbors(np.array(users), np.array(items)), name)


@pytest.mark.parametrize(("sim_fill", "sensitivity", "name"), [
    (np.nan, 1.0, "sim"), (np.inf, 1.0, "sim"),
    (0.5, -1.0, "sensitivity"), (0.5, 0.0, "sensitivity"), (0.5, np.nan, "sensitivity"),
])
def test_fit_precomputed_validates_its_arrays(sim_fill, sensitivity, name):
    trainset = datasets.synthetic(6, 8, 30, random_state=0).build_full_trainset()
    sim = np.full((6, 6), sim_fill)
    np.fill_diagonal(sim, 1.0)
    algo = PrivateKNN(k=3, selector="ppns", epsilon=1.0)
    raises_naming(lambda: algo.fit_precomputed(trainset, sim, np.full(6, sensitivity)), name)


# ------------------------------------------------------------------ blocked storage
_STORAGE_CASES = [(sim, selector, *variant) for (sim, selector), variant in zip(
    [(sim, selector) for sim in ("cosine", "msd", "pearson")
     for selector in ("topk", "probabilistic", "pncf", "ppns")],
    [(neighbourhood, user_based, prediction) for neighbourhood in ("item", "user")
     for user_based in (True, False) for prediction in ("basic", "means", "zscore")])]


@pytest.mark.parametrize("sim, selector, neighbourhood, user_based, prediction",
                         _STORAGE_CASES)
def test_blocked_storage_gives_the_same_model(split, sim, selector, neighbourhood,
                                              user_based, prediction):
    """Rows computed per block of queries give the dense matrix's predictions, details
    (with diagnostics), neighbours, RS, selection summary and privacy report, bit for bit
    (integer ratings): every selector, both neighbourhoods, user- and item-based."""
    trainset, testset = split
    fitted = []
    for storage in ("dense", "blocked"):
        algo = PrivateKNN(k=5, sim_options={"name": sim, "user_based": user_based,
                                            "min_support": 2},
                          selector=selector, neighbourhood=neighbourhood,
                          prediction=prediction, random_state=7, verbose=False,
                          diagnostics=True, storage=storage).fit(trainset)
        assert algo.storage_ == storage
        predictions = algo.test(testset)
        n = trainset.n_users if user_based else trainset.n_items
        ids = np.arange(n)
        if neighbourhood == "user":
            neighbours = algo.kneighbors(**{"users" if user_based else "items": ids})
        else:
            neighbours = algo.kneighbors(np.zeros(n, dtype=int) + 1, np.arange(n) % 7)
        fitted.append(([(p.est, p.details) for p in predictions], neighbours,
                       algo.sensitivity_, algo.get_neighbors(3, 5),
                       algo.selection_summary(), str(algo.privacy_report())))
    dense, blocked = fitted
    assert dense[0] == blocked[0]
    for a, b in zip(dense[1], blocked[1]):
        np.testing.assert_array_equal(a, b)
    if dense[2] is None:
        assert blocked[2] is None
    else:
        np.testing.assert_array_equal(dense[2], blocked[2])
    assert dense[3] == blocked[3]
    assert dense[4] == pytest.approx(blocked[4], rel=1e-12, nan_ok=True)
    assert dense[5] == blocked[5]


def test_storage_auto_switches_on_the_matrix_size(split, monkeypatch):
    """``storage="auto"`` keeps the matrix while it is small and computes rows past
    :data:`DENSE_SIMILARITY_BYTES`, for the sum similarities and the sketches (not
    pearson_baseline); ``sim`` then says why it is missing and ``compute_similarities``
    builds it whole (a sketch's from its one release)."""
    from dprec.knn import storage

    trainset, _ = split
    n = trainset.n_users
    algo = PrivateKNN(k=5, sim_options={"name": "pearson"}, verbose=False)
    assert algo.fit(trainset).storage_ == "dense"
    dense = algo.sim.copy()
    monkeypatch.setattr(storage, "DENSE_SIMILARITY_BYTES", 8 * n * n - 1)
    assert algo.fit(trainset).storage_ == "blocked"
    with pytest.raises(AttributeError, match="storage_='blocked'.*compute_similarities"):
        _ = algo.sim
    np.testing.assert_array_equal(algo.compute_similarities(), dense)
    baseline = PrivateKNN(k=5, sim_options={"name": "pearson_baseline"}, verbose=False)
    assert baseline.fit(trainset).storage_ == "dense"           # no rows form: stays dense
    sketch = PrivateKNN(k=5, sim_options={"name": "minhash", "width": 8}, random_state=0,
                        verbose=False)
    assert sketch.fit(trainset).storage_ == "blocked"
    sketched = sketch.compute_similarities()
    monkeypatch.setattr(storage, "DENSE_SIMILARITY_BYTES", 8 * n * n)
    assert sketch.fit(trainset).storage_ == "dense"
    np.testing.assert_array_equal(sketch.sim, sketched)
    with pytest.raises(AttributeError, match="not fitted"):
        _ = PrivateKNN().sim


def test_storage_is_validated():
    raises_naming(lambda: PrivateKNN(storage="sparse").check_params(), "storage")
    raises_naming(lambda: PrivateKNN(storage=3).check_params(), "storage")
    raises_naming(lambda: PrivateKNN(sim_options={"name": "pearson_baseline"},
                                     storage="blocked").check_params(), "storage")
    PrivateKNN(sim_options={"name": "rr_minhash", "epsilon": 1.0},
               storage="blocked").check_params()              # the sketches have rows too


@pytest.mark.parametrize("storage", ["dense", "blocked"])
def test_user_neighbour_sets_are_chosen_once_per_fit(split, monkeypatch, storage):
    """In the user neighbourhood each user's set is chosen once from their row and kept
    (n · k numbers): later test calls and kneighbors read it back, the same sets, and a
    new fit chooses afresh."""
    trainset, testset = split
    algo = PrivateKNN(k=5, selector="ppns", epsilon=1.0, neighbourhood="user",
                      storage=storage, random_state=2, verbose=False).fit(trainset)
    chosen_rows = []
    choose = SetChooser.choose
    monkeypatch.setattr(SetChooser, "choose",
                        lambda self, rows: chosen_rows.append(len(rows)) or choose(self, rows))
    first = [p.est for p in algo.test(testset)]
    raw_users = {trainset.to_raw_uid(u) for u in trainset.all_users()}
    asked = len({u for u, _, _ in testset if u in raw_users})
    assert sum(chosen_rows) == asked
    assert [p.est for p in algo.test(testset)] == first
    columns, _ = algo.kneighbors(users=np.arange(trainset.n_users))
    assert sum(chosen_rows) == trainset.n_users          # only the users not asked before
    again, _ = algo.kneighbors(users=np.arange(trainset.n_users))
    np.testing.assert_array_equal(columns, again)
    assert sum(chosen_rows) == trainset.n_users
    algo.fit(trainset)
    np.testing.assert_array_equal(algo.kneighbors(users=np.arange(trainset.n_users))[0],
                                  columns)               # same seed: the same sets, chosen anew
    assert sum(chosen_rows) == 2 * trainset.n_users


def test_user_neighbour_sets_kept_safely_across_threads(split):
    """The kept sets are filled under the model's lock: concurrent kneighbors calls, and
    an empty one right after fit, give what one call in turn gives."""
    from concurrent.futures import ThreadPoolExecutor

    trainset, _ = split
    n = trainset.n_users

    def model():
        return PrivateKNN(k=5, selector="ppns", epsilon=1.0, neighbourhood="user",
                          random_state=5, verbose=False).fit(trainset)

    columns, weights = model().kneighbors(users=np.arange(n))
    algo = model()
    assert algo.kneighbors(users=np.array([], dtype=int))[0].shape == (0, 5)
    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(lambda part: algo.kneighbors(users=part),
                                np.array_split(np.arange(n), 8)))
    np.testing.assert_array_equal(np.concatenate([a[0] for a in answers]), columns)
    np.testing.assert_array_equal(np.concatenate([a[1] for a in answers]), weights)



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
    (line, tight) = _composed_lines(algo.privacy_report())[1:]
    assert line.startswith("Per user, composed (one rating): worst ε = 1, δ = 0 (holds for the "
                           "similarity entries only: no end-to-end guarantee)")
    assert tight.endswith("(holds for the similarity entries only: no end-to-end guarantee)")


@pytest.mark.parametrize("epsilon", [800.0, 5000.0])
def test_a_large_epsilon_is_reported_by_basic_composition(split, epsilon):
    pytest.importorskip("dp_accounting")
    trainset, testset = split
    algo = PrivateKNN(k=5, sim_options=_sjlt(epsilon), selector="pncf_corrected",
                      epsilon=epsilon, neighbourhood="user", verbose=False).fit(trainset)
    algo.test(testset[:20])
    report = algo.privacy_report()
    text = str(report)
    assert "(basic composition is the bound here: an entry's ε" in text
    with pytest.warns(RuntimeWarning, match="basic composition is returned"):
        assert report.tight_epsilon(Unit.RATING) == report.total(Unit.RATING)[0]
