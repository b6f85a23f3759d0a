"""The β-kNN attack simulator (dprec.attacks) and the incremental similarities behind it."""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from hypothesis import event, given
from hypothesis import strategies as st
from strategies import (
    POSITIVE_SCALES,
    attack_parameters,
    fuzz,
    raises_naming,
    rating_frames,
    to_dataset,
)
from surprise import SVD, KNNBasic, accuracy
from surprise.model_selection import KFold

from dprec import PrivateKNN, attacks
from dprec.attacks import COLUMNS, BetaKNNAttack, fit_prepared, round_to_grid, scenario_seed
from dprec.attacks.metrics import pooled_vote
from dprec.attacks.poisoning import BaseData, baseline_data, poisoned_data, scenarios
from dprec.attacks.runners import make_runner, make_runners
from dprec.attacks.shared_similarities import scenario_states, similarity_states
from dprec.datasets import synthetic
from dprec.experiments import attack_resistance
from dprec.selectors import ppns_schedule
from dprec.similarity import SKETCH_BACKENDS, sketch_backend
from dprec.similarity.exact import exact_similarity_and_sums, recommendation_aware_sensitivity
from dprec.similarity.incremental import IncrementalSimilarity, IncrementalSketchSimilarity
from dprec.utils._ratings import RatingArrays

K, N_KNOWN = 10, 8


@pytest.fixture(scope="module")
def data():
    """300 users with 50 ratings on average: enough targets with 40+ ratings."""
    return synthetic(300, 400, 15_000, random_state=0)


def knn(selector="topk", min_support=N_KNOWN, **kwargs) -> PrivateKNN:
    eps = 1.0 if selector in ("pncf", "ppns") else None
    kwargs.setdefault("neighbourhood", "user")
    return PrivateKNN(k=K, sim_options={"name": "cosine", "min_support": min_support},
                      selector=selector, epsilon=eps, **kwargs)


def attack(algo, data, **kwargs) -> BetaKNNAttack:
    options = {"n_known": N_KNOWN, "betas": (1,), "n_targets": 8, "min_target_ratings": 40,
               "random_state": 0, **kwargs}
    return BetaKNNAttack(algo, data, **options)


def prepared(simulation: BetaKNNAttack, algo):
    """What ``simulation.run`` prepares once for ``algo``: the unpoisoned base data, the
    runner, and the real users' shared similarity state (None: refitted from scratch)."""
    runner = make_runner("x", algo)
    base = BaseData.from_trainset(simulation.trainset)
    state = similarity_states([runner], base, simulation.entropy).get(runner.sim_key)
    return base, runner, state


# --------------------------------------------------------------- the attack works
def test_topk_with_overlap_aware_similarity_is_broken_at_beta_1(data):
    table = attack(knn("topk"), data).run()
    assert len(table) == 8 and (table.n_fake == K).all()
    assert table.exposure.mean() >= 0.95
    assert table.recovery.mean() >= 0.9
    assert table.recovery_pooled.mean() >= 0.9
    assert (table.recovery - table.baseline_recovery).mean() > 0.5  # the attack adds a lot
    assert table.possible_precision.mean() >= 0.9 and table.topn_precision.mean() >= 0.9


def test_plain_co_rated_cosine_hides_the_target(data):
    """Every real user sharing one known item also has cosine 1 with the fakes; ties go
    to the lower inner id (real users come first), so they crowd the target out."""
    plain = attack(knn("topk", min_support=1), data).run()
    overlap = attack(knn("topk", min_support=N_KNOWN), data).run()
    assert plain.exposure.mean() <= 0.5 < 0.95 <= overlap.exposure.mean()
    assert plain.recovery.mean() < overlap.recovery.mean() - 0.3


def test_ppns_exposure_matches_its_schedule(data):
    """Per fake user, PPNS takes the target with probability c₁/k: the target and the
    other fakes fill partition 1 with equal similarity 1, of which the schedule draws
    c₁ = ⌈pk⌉ uniformly.  Pooling the fake users still recovers the ratings."""
    p, betas = 0.3, (1, 3)
    algo = PrivateKNN(k=K, sim_options={"name": "cosine", "min_support": N_KNOWN},
                      selector="ppns", epsilon=1.0, p=p, neighbourhood="user")
    simulation = attack(algo, data, betas=betas, n_targets=10)
    table = simulation.run()
    expected = []
    similarity = knn("topk")  # the same similarities, without computing RS
    for target in simulation.targets():
        for beta in betas:
            poisoned = simulation.poisoned_dataset(target, beta).build_full_trainset()
            full = copy.deepcopy(similarity).fit(poisoned)
            fake = poisoned.n_users - 1
            sims = np.delete(full.sim[fake], fake)
            order = np.argsort(-sims, kind="stable")
            rank = int(np.flatnonzero(np.delete(np.arange(poisoned.n_users), fake)[order]
                                      == target.inner_id)[0])
            partition = rank // K
            assert np.ptp(sims[order][partition * K:(partition + 1) * K]) == 0
            expected += [ppns_schedule(K, p)[partition] / K] * (beta * K)
    n_draws = len(expected)
    measured = float((table.exposure * table.n_fake).sum() / table.n_fake.sum())
    probability = float(np.mean(expected))
    assert probability == pytest.approx(0.3)
    assert abs(measured - probability) < 4 * np.sqrt(probability * (1 - probability) / n_draws)
    assert (table.selector_beta == len(ppns_schedule(K, p)) + 1).all()
    by_beta = table.groupby("beta")[["recovery", "recovery_pooled"]].mean()
    assert (by_beta.recovery < 0.5).all()
    assert (by_beta.recovery_pooled - by_beta.recovery > 0.3).all()  # pooling adds a lot
    assert by_beta.recovery_pooled[3] >= 0.95  # 3k fakes: the majority recovers every rating


# ----------------------------------------------------------- inputs and seeds
def test_attack_works_on_a_copy(data):
    raw = list(data.raw_ratings)
    algo = knn("ppns")
    before = copy.deepcopy(vars(algo))
    simulation = attack(algo, data, betas=(1, 2), n_targets=3)
    simulation.run()
    poisoned = simulation.poisoned_dataset(simulation.targets()[0], 2)
    assert data.raw_ratings == raw
    assert not hasattr(algo, "trainset") and vars(algo).keys() == before.keys()
    assert algo.random_state is None and algo.sim_options == before["sim_options"]
    assert len(poisoned.raw_ratings) == len(raw) + 2 * K * N_KNOWN
    trainset = poisoned.build_full_trainset()
    real_ids = {u for u, *_ in raw}
    fakes = [u for u in trainset.all_users() if trainset.to_raw_uid(u) not in real_ids]
    real = len(real_ids)
    assert sorted(fakes) == list(range(real, real + 2 * K))  # new accounts, after every real one


def test_same_seed_same_table_and_targets_do_not_share_draws(data):
    algos = {"ppns": knn("ppns"), "pncf": knn("pncf")}
    one = attack(algos, data, betas=(1, 2), n_targets=3, random_state=5).run()
    two = attack(algos, data, betas=(1, 2), n_targets=3, random_state=5, n_jobs=2).run()
    pd.testing.assert_frame_equal(one.drop(columns="seconds"), two.drop(columns="seconds"))
    other = attack(algos, data, betas=(1, 2), n_targets=3, random_state=6).run()
    assert not one.drop(columns="seconds").equals(other.drop(columns="seconds"))
    seeds = {scenario_seed(5, t, b) for t in range(50) for b in range(9)}
    assert len(seeds) == 50 * 9


def test_unseeded_attack_is_consistent_within_one_object(data):
    simulation = attack(knn("topk"), data, random_state=None, n_targets=2)
    assert [t.inner_id for t in simulation.targets()] == \
        [t.inner_id for t in simulation.targets()]


# -------------------------------------------------------- incremental == full fit
@pytest.mark.parametrize("name", ["cosine", "msd", "pearson"])
@pytest.mark.parametrize("min_support", [1, 3])
def test_incremental_similarity_equals_full_computation(name, min_support):
    R = sp.csr_matrix(RatingArrays.from_trainset(
        synthetic(80, 120, 2000, random_state=2).build_full_trainset()).matrix)
    base = IncrementalSimilarity.fit(name, R, min_support, with_sensitivity=True)
    n = R.shape[0]
    fakes = sp.csr_matrix(np.tile(R[4].toarray() * (R[4].toarray() < 3), (6, 1)))
    replaced = R[7].toarray()
    replaced[0, replaced[0] > 3] = 0
    for state in (base.update(np.arange(n, n + 6), fakes),
                  base.update(np.array([7]), sp.csr_matrix(replaced)),
                  base.update(np.array([n + 1, 2, n]), sp.vstack([fakes[:2], R[9]]))):
        sim, sums = exact_similarity_and_sums(name, state.ratings, min_support)
        np.testing.assert_array_equal(state.sim, sim)
        np.testing.assert_array_equal(
            state.sensitivity(),
            recommendation_aware_sensitivity(name, state.ratings, sim, sums, min_support))
    np.testing.assert_array_equal(base.ratings.toarray(), R.toarray())  # not modified


def test_incremental_similarity_rejects_bad_updates():
    base = IncrementalSimilarity.fit("cosine", sp.csr_matrix(np.eye(3) + 1))
    with pytest.raises(ValueError, match="numbered 3"):
        base.update(np.array([4]), sp.csr_matrix(np.ones((1, 3))))
    with pytest.raises(ValueError, match="shape"):
        base.update(np.array([3]), sp.csr_matrix(np.ones((2, 3))))
    with pytest.raises(ValueError, match="distinct"):
        base.update(np.array([1, 1]), sp.csr_matrix(np.ones((2, 3))))
    with pytest.raises(ValueError, match="with_sensitivity"):
        base.sensitivity()


@pytest.mark.parametrize("selector, neighbourhood, centered, min_k, prediction", [
    ("topk", "user", False, 1, "basic"), ("ppns", "user", False, 2, "basic"),
    ("pncf", "user", True, 1, "basic"), ("probabilistic", "user", False, 1, "basic"),
    ("ppns", "item", False, 1, "basic"), ("pncf", "item", False, 2, "basic"),
    ("topk", "user", False, 2, "means"), ("ppns", "item", False, 1, "baseline"),
    ("topk", "user", False, 1, "basic+user_mean")])
def test_scenario_equals_a_full_fit_of_the_poisoned_copy(data, selector, neighbourhood,
                                                         centered, min_k, prediction):
    """Similarities, RS, neighbours and every prediction of the fast path are those of
    ``PrivateKNN.fit`` on the poisoned dataset (and of its public API), for every rule."""
    rule, _, fallback = prediction.partition("+")
    algo = knn(selector, min_support=3, neighbourhood=neighbourhood, centered=centered,
               min_k=min_k, prediction=rule, fallback=fallback or "global_mean")
    simulation = attack(algo, data, n_targets=1)
    target = simulation.targets()[0]
    base, runner, real = prepared(simulation, algo)
    scenario = poisoned_data(base, target, 2 * K)
    poisoned = simulation.poisoned_dataset(target, 2).build_full_trainset()
    assert dict(scenario.trainset.ur) == dict(poisoned.ur)
    assert dict(scenario.trainset.ir) == dict(poisoned.ir)
    assert raw_user_ids(scenario.trainset) == raw_user_ids(poisoned)
    expected = RatingArrays.from_trainset(poisoned)
    for field in ("item_ptr", "item_users", "item_ratings", "keys", "key_ratings"):
        np.testing.assert_array_equal(getattr(scenario.ratings, field), getattr(expected, field))
    state = real.update(scenario.ids, scenario.rows)
    full = copy.deepcopy(algo)
    full.random_state = 99
    full.fit(poisoned)
    np.testing.assert_array_equal(state.sim, full.sim)
    if runner.needs_sensitivity:
        np.testing.assert_array_equal(state.sensitivity(), full.sensitivity_)
    items = np.arange(poisoned.n_items)
    outcome = runner.outcome(scenario, state, 99, target, items)
    fakes = scenario.users
    testset = [(poisoned.to_raw_uid(int(f)), poisoned.to_raw_iid(int(i)), None)
               for f in fakes for i in items]
    predictions = full.test(testset)
    public = np.array([np.nan if p.details["was_impossible"] else p.est
                       for p in predictions]).reshape(len(fakes), -1)
    estimates = outcome.at(items, poisoned.n_items)
    np.testing.assert_array_equal(estimates, public)  # NaN where impossible, in both
    if neighbourhood == "user":
        exposed = (full.kneighbors(fakes)[0] == target.inner_id).any(axis=1)
    else:
        hidden = target.hidden_items
        chosen = full.kneighbors(np.repeat(fakes, len(hidden)), np.tile(hidden, len(fakes)))[0]
        exposed = (chosen == target.inner_id).any(axis=1).reshape(len(fakes), -1).mean(axis=1)
    np.testing.assert_array_equal(outcome.exposure, exposed)


def raw_user_ids(trainset) -> dict:
    """``raw id -> inner id`` of every user of ``trainset``."""
    return {trainset.to_raw_uid(u): u for u in trainset.all_users()}


SKETCH_OPTIONS = {"minhash": {}, "rr_minhash": {"epsilon": 2.0, "tau": N_KNOWN},
                  "noisy_minhash": {"epsilon": 2.0, "tau": N_KNOWN},
                  "sjlt": {"epsilon": 2.0, "rating_bound": 5.0},
                  "gaussian_jl": {"epsilon": 2.0, "rating_bound": 5.0}}


@pytest.mark.parametrize("name", sorted(SKETCH_OPTIONS))
def test_incremental_sketches_equal_the_backends_full_computation(data, name):
    """Real users sketched once, fakes (and a re-sketched user) added row by row: the
    backend's own ``similarity_matrix`` of the changed ratings, to rounding."""
    assert name in SKETCH_BACKENDS
    backend = sketch_backend({"name": name, **SKETCH_OPTIONS[name]}, random_state=4)
    R = RatingArrays.from_trainset(data.build_full_trainset()).matrix
    base = IncrementalSketchSimilarity.fit(backend, R)
    n = R.shape[0]
    fakes = sp.csr_matrix(np.tile(R[4].toarray() * (R[4].toarray() >= 3), (5, 1)))
    fakes = fakes.multiply(np.arange(R.shape[1]) < 200).tocsr()  # ≥ τ items each
    for state in (base.update(np.arange(n, n + 5), fakes),
                  base.update(np.array([7]), R[8])):
        np.testing.assert_allclose(state.sim, backend.similarity_matrix(state.ratings),
                                   rtol=0, atol=1e-12)
        assert state.sensitivity().tolist() == [backend.score_range] * state.ratings.shape[0]
    batch = base.sketch(fakes, np.arange(n, n + 5))  # precomputed sketches, into a buffer
    out = np.empty((n + 5, n + 5))
    again = base.update(np.arange(n, n + 5), fakes, precomputed=batch, out=out)
    assert again.sim is out
    np.testing.assert_array_equal(out, base.update(np.arange(n, n + 5), fakes).sim)
    with pytest.raises(ValueError, match="int random_state"):
        IncrementalSketchSimilarity.fit(sketch_backend({"name": "minhash"}, None), R)


def test_attack_with_sketch_backends_runs(data):
    """Incremental where τ is public, full refit where τ comes from the data."""
    algos = {name: PrivateKNN(k=K, sim_options={"name": name, **options}, selector="ppns",
                              epsilon=1.0, neighbourhood="user")
             for name, options in SKETCH_OPTIONS.items()}
    algos["refit"] = PrivateKNN(k=K, sim_options={"name": "rr_minhash", "epsilon": 2.0},
                                neighbourhood="user")
    runners = {name: make_runner(name, algo) for name, algo in algos.items()}
    assert runners["refit"].sim_key is None and runners["rr_minhash"].sim_key[0] == "sketch"
    table = attack(algos, data, n_targets=2, betas=(1, 2)).run()
    assert len(table) == len(algos) * 4 and table.exposure.between(0, 1).all()
    assert (table.possible_recall > 0.5).all()  # the fake users' predictions are read
    np.testing.assert_array_equal(table.selector_beta,
                                  np.where(table.algo == "refit", 1,  # top-k; PPNS, p = 0.5
                                           len(ppns_schedule(K, 0.5)) + 1))


@pytest.mark.parametrize("name, noisy", [("minhash", False), ("rr_minhash", True)])
def test_fake_users_sketch_with_fresh_noise_in_every_scenario(data, name, noisy):
    """The real users' sketches are released once; a fake user's sketch, the same
    ratings in every scenario, gets the scenario's noise (none without privacy)."""
    algo = PrivateKNN(k=K, sim_options={"name": name, **SKETCH_OPTIONS[name]},
                      selector="ppns", epsilon=1.0, neighbourhood="user")
    simulation = attack(algo, data, n_targets=1, betas=(1, 2))
    base, _, real = prepared(simulation, algo)
    n = base.trainset.n_users
    first_fake = []
    for scenario, state, _ in scenario_states(real, scenarios(
            base, simulation.targets()[0], simulation.betas, K, simulation.entropy)):
        if scenario.beta > 0:   # (the baseline re-sketches the target without its hidden items)
            np.testing.assert_array_equal(state.sim[:n, :n], real.sim)
            first_fake.append(state.sim[n, :n].copy())
    assert len(first_fake) == 2
    assert (first_fake[0] != first_fake[1]).any() == noisy


def test_baseline_leaves_the_hidden_ratings_out(data):
    algo = knn("topk", min_support=1)
    simulation = attack(algo, data, n_targets=2)
    base, _, real = prepared(simulation, algo)
    baseline_recovery = simulation.run().set_index("target").baseline_recovery
    original = data.build_full_trainset()
    kept = {(u, i, r) for u in original.all_users() for i, r in original.ur[u]}
    for target in simulation.targets():
        scenario = baseline_data(base, target)
        hidden = {(target.inner_id, i, r) for i, r in
                  zip(target.hidden_items.tolist(), target.hidden_ratings.tolist())}
        now = {(u, i, r) for u in scenario.trainset.all_users()
               for i, r in scenario.trainset.ur[u]}
        assert now == kept - hidden
        state = real.update(scenario.ids, scenario.rows)
        full = PrivateKNN(k=K, sim_options={"name": "cosine"}, neighbourhood="user")
        full.fit(scenario.trainset)
        np.testing.assert_array_equal(state.sim, full.sim)
        raw = scenario.trainset.to_raw_uid(target.inner_id)
        predictions = full.test([(raw, scenario.trainset.to_raw_iid(i), r) for i, r in
                                 zip(target.hidden_items.tolist(),
                                     target.hidden_ratings.tolist())])
        hits = [not p.details["was_impossible"] and round_to_grid([p.est], base.grid)[0] == p.r_ui
                for p in predictions]
        assert baseline_recovery[target.raw_id] == np.mean(hits)


# --------------------------------------------------------------- Surprise's kNN
def test_knnbasic_exposure_from_heapq_semantics_matches_private_knn(data):
    """KNNBasic (Surprise's own, refitted per scenario) and PrivateKNN with the item
    neighbourhood are the same model: the same exposure, recovery and inferences."""
    options = {"name": "cosine", "min_support": N_KNOWN, "user_based": True}
    algos = {"surprise": KNNBasic(k=K, sim_options=options, verbose=False),
             "dprec": PrivateKNN(k=K, sim_options=options, neighbourhood="item")}
    table = attack(algos, data, n_targets=3).run().set_index(["target", "beta"])
    columns = [c for c in COLUMNS if c not in ("algo", "target", "beta", "selector_beta",
                                                 "seconds")]
    surprise, dprec = table[table.algo == "surprise"], table[table.algo == "dprec"]
    pd.testing.assert_frame_equal(surprise[columns], dprec[columns], check_exact=True)
    assert surprise.exposure.mean() > 0.9 and surprise.selector_beta.isna().all()


def test_exposure_is_nan_without_user_neighbours(data):
    algo = SVD(n_epochs=2, random_state=0)
    algo.k = K  # the attack needs a k to size itself; SVD has no neighbours
    table = attack(algo, data, n_targets=1).run()
    assert len(table) == 1 and table.exposure.isna().all() and table.exposure_any.isna().all()


def test_fit_prepared_is_a_deprecated_alias_of_fit_precomputed(data):
    trainset = data.build_full_trainset()
    ratings = RatingArrays.from_trainset(trainset)
    state = IncrementalSimilarity.fit("cosine", ratings.matrix, N_KNOWN, with_sensitivity=True)
    with pytest.warns(DeprecationWarning, match="use PrivateKNN.fit_precomputed"):
        old = fit_prepared(knn("ppns", random_state=0), trainset, ratings, state.sim,
                           state.sensitivity())
    new = knn("ppns", random_state=0).fit_precomputed(trainset, state.sim, state.sensitivity())
    users = np.arange(trainset.n_users)
    np.testing.assert_array_equal(old.kneighbors(users)[0], new.kneighbors(users)[0])
    assert "fit_prepared" not in attacks.__all__


# ----------------------------------------------------------------- measures
def test_round_to_grid_and_pooled_vote():
    grid = np.arange(1.0, 6.0)
    np.testing.assert_array_equal(round_to_grid([0.2, 2.5, 3.49, 4.5000000001, 9, np.nan], grid),
                                  [1, 3, 3, 5, 5, np.nan])
    estimates = np.array([[4.0, 2.0, np.nan], [4.2, 3.0, np.nan], [1.0, 3.4, np.nan]])
    rounded = round_to_grid(estimates, grid)
    np.testing.assert_array_equal(pooled_vote(rounded, estimates, grid), [4, 3, np.nan])
    tie = np.array([[2.0], [4.6]])  # one vote each for 2 and 5: the one nearer the mean 3.3
    np.testing.assert_array_equal(pooled_vote(round_to_grid(tie, grid), tie, grid), [2])


# --------------------------------------------------------------- validation
@pytest.mark.parametrize("kwargs, error, needle", [
    ({"n_known": 0}, ValueError, "n_known"),
    ({"betas": ()}, ValueError, "betas"),
    ({"betas": (1, 0)}, ValueError, "betas"),
    ({"betas": 2}, TypeError, "betas"),
    ({"n_targets": 0}, ValueError, "n_targets"),
    ({"min_target_ratings": 0}, ValueError, "min_target_ratings"),
    ({"top_n": 0}, ValueError, "top_n"),
    ({"n_jobs": 0}, ValueError, "n_jobs"),
    ({"random_state": "x"}, TypeError, "random_state"),
    ({"progress": 1}, TypeError, "progress"),
])
def test_bad_parameters_are_rejected(data, kwargs, error, needle):
    with pytest.raises(error, match=needle):
        BetaKNNAttack(knn(), data, **kwargs)


def test_bad_algo_and_data_are_rejected(data):
    with pytest.raises(TypeError, match="AlgoBase"):
        BetaKNNAttack(object(), data)
    with pytest.raises(ValueError, match="k >= 1"):
        BetaKNNAttack(SVD(), data)
    with pytest.raises(ValueError, match="empty"):
        BetaKNNAttack({}, data)
    with pytest.raises(TypeError, match="Dataset"):
        BetaKNNAttack(knn(), data.build_full_trainset())
    with pytest.raises(ValueError, match="min_target_ratings"):
        BetaKNNAttack(knn(), data, min_target_ratings=10_000).run()


# ------------------------------------------------------------------ MovieLens
@pytest.mark.data
@pytest.mark.slow
def test_movielens_topk_broken_and_ppns_pooled(ml100k):
    """On MovieLens 100k (k = 20): top-k with min_support = n_known is fully exposed; PPNS
    halves the per-fake exposure, but the pooled vote still recovers the ratings."""
    algos = {name: PrivateKNN(k=20, sim_options={"name": "cosine", "min_support": N_KNOWN},
                              selector=name, epsilon=1.0 if name == "ppns" else None,
                              neighbourhood="user") for name in ("topk", "ppns")}
    table = BetaKNNAttack(algos, ml100k, betas=(1,), n_targets=5, random_state=0).run()
    means = table.groupby("algo").mean(numeric_only=True)
    assert means.loc["topk", "exposure"] >= 0.95 and means.loc["topk", "recovery"] >= 0.9
    assert 0.3 < means.loc["ppns", "exposure"] < 0.7
    assert means.loc["ppns", "recovery_pooled"] >= 0.9


# ----------------------------------------------------------------- experiment
@pytest.mark.slow
def test_attack_resistance_quick_writes_tables_and_plots(tmp_path):
    table = attack_resistance.main(["--quick", "--out", str(tmp_path), "--n-jobs", "1",
                                    "--targets", "3"])       # quick: 5
    written = pd.read_csv(tmp_path / "attack_resistance.csv")
    summary = pd.read_csv(tmp_path / "attack_summary.csv")
    assert len(written) == len(table) > 0
    assert set(written.selector) == {"topk", "probabilistic", "pncf", "ppns"}
    assert {"cosine", "cosine_ms8"} <= set(written.similarity)
    assert summary.rmse.notna().all() and set(summary.beta) == {1, 3}
    for name in ("attack_vs_beta.png", "frontier.png"):
        assert (tmp_path / name).stat().st_size > 10_000


@pytest.mark.filterwarnings("ignore:.*no sketch released")
def test_fast_cross_validation_scores_equal_test_and_individual_fits(data):
    """The experiment's fold scores: shared similarities and batch scoring give what
    ``fit`` + ``test`` + ``surprise.accuracy`` give, configuration by configuration."""
    configs = [c for c in attack_resistance.configurations((1.0,), ["rr_minhash", "sjlt"],
                                                           N_KNOWN)
               if c["selector"] in ("topk", "ppns")]
    table = attack_resistance.accuracy_table(data, configs, k=K, n_known=N_KNOWN, n_folds=3,
                                             seed=3)
    trainset, testset = next(KFold(n_splits=3, random_state=3).split(data))
    rows = table[table.fold == 0]
    assert rows.config.tolist() == [config["config"] for config in configs]
    for config, row in zip(configs, rows.itertuples()):
        algo = attack_resistance.make_algo(config, K, N_KNOWN, 3)
        predictions = algo.fit(trainset).test(testset)
        assert row.rmse == pytest.approx(accuracy.rmse(predictions, verbose=False), abs=1e-12)
        assert row.mae == pytest.approx(accuracy.mae(predictions, verbose=False), abs=1e-12)
        assert row.impossible == pytest.approx(
            np.mean([p.details["was_impossible"] for p in predictions]), abs=1e-12)


def test_selector_names_are_case_insensitive_and_other_rules_are_attacked(data):
    # PrivateKNN(selector="PPNS") used to raise KeyError in the attack
    upper = attack(knn("PPNS", verbose=False), data, n_targets=2).run()
    lower = attack(knn("ppns", verbose=False), data, n_targets=2).run()
    pd.testing.assert_frame_equal(upper.drop(columns="seconds"), lower.drop(columns="seconds"))
    # the other rules take the fast path; item-based kNN is asked query by query
    means = attack(knn(prediction="means", verbose=False), data, n_targets=2).run()
    assert len(means) == 2 and (means.recovery == 1).all()  # as broken as the basic rule
    item_based = attack(PrivateKNN(k=K, sim_options={"user_based": False}, verbose=False),
                        data, n_targets=2).run()
    assert len(item_based) == 2 and (item_based.possible_recall == 1).all()
    assert item_based.exposure.isna().all()  # no user neighbours


# ---------------------------------------------------------------- properties (hypothesis)
@fuzz(50)
@given(rating_frames(max_users=8, max_items=6, scales=POSITIVE_SCALES, min_density=0.5),
       attack_parameters(), st.sampled_from(["topk", "ppns", "probabilistic"]),
       st.sampled_from(["item", "user"]), st.sampled_from([None, None, None, "mapping", "bad"]))
def test_beta_knn_attack_on_any_small_data(frame_scale, params, selector, neighbourhood, how):
    frame, scale = frame_scale
    data = to_dataset(frame, scale)
    raw_before = copy.deepcopy(data.raw_ratings)
    kwargs, bad = params
    algo = PrivateKNN(k=2, sim_options={"name": "cosine"}, selector=selector,
                      neighbourhood=neighbourhood, random_state=0)
    algo_before = copy.deepcopy(vars(algo))
    target = {None: algo, "mapping": {"a": algo, "b": PrivateKNN(k=3)}, "bad": object()}[how]
    if how == "bad":
        bad = bad | {"algo"}
    if bad:
        event("attack: invalid parameters")
        raises_naming(lambda: BetaKNNAttack(target, data, **kwargs), *bad)
        return
    attack = BetaKNNAttack(target, data, **kwargs)
    counts = frame.groupby("user").size()
    eligible = (counts >= max(kwargs["min_target_ratings"], kwargs["n_known"] + 1)).sum()
    if eligible == 0:
        event("attack: no target")
        raises_naming(attack.run, "min_target_ratings")
        return
    event("attack run")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # fewer qualifying targets than asked
        table = attack.run()
    assert list(table.columns) == COLUMNS
    n_algos = 2 if how == "mapping" else 1
    assert len(table) == n_algos * min(kwargs["n_targets"], eligible) * len(kwargs["betas"])
    for column in ("recovery", "recovery_any", "possible_precision", "possible_recall",
                   "topn_precision", "topn_recall", "baseline_recovery", "exposure"):
        values = table[column].dropna()
        assert ((values >= 0) & (values <= 1)).all(), column
    assert data.raw_ratings == raw_before
    assert repr(vars(algo)) == repr(algo_before)  # the caller's algorithm is never refitted


@pytest.mark.parametrize("selector", ["topk", "ppns"])
def test_attack_when_only_the_target_rated_an_item(selector):
    # only the target u0 rated i0 and i1: the hidden one's only rater is the target, so
    # every selector gives it to the fake users (who share the known rating: similarity 1)
    # and the unpoisoned model, without the target's hidden rating, cannot predict it
    frame = pd.DataFrame({"user": ["u0", "u0", "u1"], "item": ["i0", "i1", "i2"],
                          "rating": [1.0, 2.0, 3.0]})
    algo = PrivateKNN(k=2, sim_options={"name": "cosine"}, selector=selector, random_state=0)
    table = BetaKNNAttack(algo, to_dataset(frame, (1, 5)), n_known=1, betas=[1], n_targets=1,
                          min_target_ratings=2, top_n=1, random_state=0).run()
    assert len(table) == 1
    row = table.iloc[0]
    assert (row["exposure"], row["recovery"], row["baseline_recovery"]) == (1.0, 1.0, 0.0)


@pytest.mark.parametrize("neighbourhood", ["user", "item"])
def test_hidden_items_only_gives_the_same_recovery_and_exposure(data, neighbourhood):
    """``inference=False`` asks the fake users for the hidden items only: every measure
    but item inference is unchanged, item inference is NaN."""
    algo = knn("ppns", neighbourhood=neighbourhood, verbose=False)
    full = attack(algo, data, n_targets=3, betas=(1, 2)).run()
    hidden = attack(algo, data, n_targets=3, betas=(1, 2), inference=False).run()
    inference = ["possible_precision", "possible_recall", "topn_precision", "topn_recall"]
    assert hidden[inference].isna().all().all() and full[inference].notna().all().all()
    # item neighbourhood: the selector's mean β is over the queries asked, fewer here
    other = ["seconds"] + (["selector_beta"] if neighbourhood == "item" else [])
    same = [c for c in full.columns if c not in inference + other]
    pd.testing.assert_frame_equal(hidden[same], full[same])
    with pytest.raises(TypeError, match="inference"):
        attack(algo, data, inference="no")


def test_asking_a_sample_of_the_hidden_items(data):
    """``n_asked``: the same scenarios scored on a seeded sample of each target's hidden
    items, which only the scoring sees (the baseline still leaves them all out)."""
    algo = knn("topk", verbose=False)
    full = attack(algo, data, n_targets=3, betas=(1,), inference=False).run()
    sampled = attack(algo, data, n_targets=3, betas=(1,), inference=False, n_asked=5).run()
    again = attack(algo, data, n_targets=3, betas=(1,), inference=False, n_asked=5).run()
    pd.testing.assert_frame_equal(sampled.drop(columns="seconds"),
                                  again.drop(columns="seconds"))
    assert (sampled.n_hidden == 5).all() and (full.n_hidden > 5).all()
    assert (sampled.recovery == 1).all() and (full.recovery == 1).all()  # top-k: broken
    whole = attack(algo, data, n_targets=3, betas=(1,), inference=False, n_asked=10_000).run()
    pd.testing.assert_frame_equal(whole.drop(columns="seconds"), full.drop(columns="seconds"))
    with pytest.raises(ValueError, match="n_asked"):
        attack(algo, data, n_asked=0)


@pytest.mark.parametrize("neighbourhood", ["item", "user"])
def test_models_differing_in_their_rule_share_a_runner_and_equal_separate_runs(
        data, neighbourhood):
    """The basic, means and baseline rules of one selector share one fit and one selection
    per scenario; every row equals that of the model attacked alone."""
    options = {"k": K, "sim_options": {"name": "cosine"}, "selector": "ppns", "epsilon": 1.0,
               "neighbourhood": neighbourhood, "random_state": 0, "verbose": False}
    algos = {"basic": PrivateKNN(**options, fallback="user_mean", neighbour_shrinkage=2.0),
             "topk": PrivateKNN(**{**options, "selector": "topk", "epsilon": None}),
             "means": PrivateKNN(**options, prediction="means"),
             "baseline": PrivateKNN(**options, prediction="baseline")}
    runners = make_runners(algos)
    assert [runner.names for runner in runners] == [("basic", "means", "baseline"), ("topk",)]
    unseeded = {name: copy.deepcopy(algo) for name, algo in algos.items()}
    for algo in unseeded.values():      # fresh noise at each fit: nothing to share
        algo.random_state = None
    assert len(make_runners(unseeded)) == len(algos)
    together = attack(algos, data, n_targets=3, betas=(1, 2), inference=False).run()
    assert together.algo.tolist()[:4] == list(algos)
    for name, algo in algos.items():
        alone = attack({name: algo}, data, n_targets=3, betas=(1, 2), inference=False).run()
        pd.testing.assert_frame_equal(
            together[together.algo == name].drop(columns="seconds").reset_index(drop=True),
            alone.drop(columns="seconds"))
