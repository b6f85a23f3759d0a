"""MallowsRanker: the Surprise contract, privacy bookkeeping and learning."""

from __future__ import annotations

import copy
import math
import tracemalloc

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import (
    check_predictions,
    full_testset,
    fuzz,
    raises_naming,
    ranker_parameters,
    rating_frames,
    to_dataset,
    trainset_state,
)
from surprise import SVD, Dataset, Reader
from surprise.model_selection import GridSearchCV, cross_validate, train_test_split

from dprec.accountant.ledger import SEEDED, Status, Unit
from dprec.evaluation.metrics import ndcg_at_k, pairwise_accuracy
from dprec.ranking import mallows
from dprec.ranking.learner import MallowsRanker, _RatingQuantiles
from dprec.ranking.pairwise import Segments, epoch_bytes


def _toy_data(seed: int = 0, n_users: int = 80, n_items: int = 60, density: float = 0.5,
              noise: float = 0.5) -> Dataset:
    """Ratings from a 2-factor model plus item quality, rounded to 1..5."""
    rng = np.random.default_rng(seed)
    quality = rng.normal(0, 1, n_items)
    p, q = rng.normal(0, 1, (n_users, 2)), rng.normal(0, 1, (n_items, 2))
    latent = quality[None, :] + 0.7 * p @ q.T + rng.normal(0, noise, (n_users, n_items))
    ratings = np.clip(np.round(3 + 1.2 * latent), 1, 5)
    mask = rng.random((n_users, n_items)) < density
    u, i = np.nonzero(mask)
    frame = pd.DataFrame({"user": [f"u{x}" for x in u], "item": [f"i{x}" for x in i],
                          "rating": ratings[u, i]})
    return Dataset.load_from_df(frame, Reader(rating_scale=(1, 5)))


@pytest.fixture(scope="module")
def split():
    return train_test_split(_toy_data(), test_size=0.25, random_state=0)


# ---------------------------------------------------------------- parameters
def test_params_stored_verbatim():
    eps = {"u1": 1.0}
    algo = MallowsRanker(epsilon=eps, mechanism="Laplace", n_factors=3, n_epochs=2, lr=0.1,
                         reg=0.0, batch_size=7, pairs_per_rating=1.5, random_state=3)
    assert algo.epsilon is eps
    assert (algo.mechanism, algo.n_factors, algo.n_epochs, algo.lr, algo.reg, algo.batch_size,
            algo.pairs_per_rating, algo.random_state) == ("Laplace", 3, 2, 0.1, 0.0, 7, 1.5, 3)


@pytest.mark.parametrize("kwargs,error,name", [
    ({"epsilon": 0.0}, ValueError, "epsilon"),
    ({"epsilon": -1}, ValueError, "epsilon"),
    ({"epsilon": float("nan")}, ValueError, "epsilon"),
    ({"epsilon": "1"}, TypeError, "epsilon"),
    ({"epsilon": True}, TypeError, "epsilon"),
    ({"epsilon": {"u1": -2.0}}, ValueError, "epsilon"),
    ({"mechanism": "gauss"}, ValueError, "mechanism"),
    ({"mechanism": 1}, TypeError, "mechanism"),
    ({"calibration": "paper"}, ValueError, "calibration"),
    ({"n_factors": 0}, ValueError, "n_factors"),
    ({"n_factors": 2.0}, TypeError, "n_factors"),
    ({"n_epochs": -1}, ValueError, "n_epochs"),
    ({"lr": 0.0}, ValueError, "lr"),
    ({"reg": -0.1}, ValueError, "reg"),
    ({"batch_size": 0}, ValueError, "batch_size"),
    ({"pairs_per_rating": 0}, ValueError, "pairs_per_rating"),
    ({"random_state": "seed"}, TypeError, "random_state"),
    ({"random_state": -1}, ValueError, "random_state"),
    ({"verbose": "yes"}, TypeError, "verbose"),
])
def test_bad_parameters_are_named_when_checked(kwargs, error, name, split):
    ranker = MallowsRanker(**kwargs)                 # stored as given
    assert all(getattr(ranker, key) is value for key, value in kwargs.items())
    with pytest.raises(error, match=name):
        ranker.check_params()
    with pytest.raises(error, match=name):
        ranker.fit(split[0])


def test_pairs_the_machine_cannot_hold_are_refused_naming_pairs_per_rating(split):
    # within the 2^53 bound, but an epoch's pairs (72 bytes each) pass the memory: numpy's
    # own MemoryError named no parameter; the model is left unfitted
    ranker = MallowsRanker(pairs_per_rating=1e12, n_epochs=1, random_state=0)
    with pytest.raises(MemoryError, match=r"pairs \(pairs_per_rating=1000000000000.0 × "
                                          r".*use a smaller pairs_per_rating"):
        ranker.fit(split[0])
    assert not hasattr(ranker, "orders_")


def test_an_epoch_takes_at_most_its_estimate_at_the_peak(split):
    # the check above is worth what its estimate is: the pairs' draw and a step's work,
    # the previous epoch's pairs let go before the next draw (they were held: 24 bytes
    # a pair more from the second epoch)
    trainset = split[0]
    ranker = MallowsRanker(pairs_per_rating=1000.0, n_epochs=2, random_state=0)
    tracemalloc.start()
    try:
        ranker.fit(trainset)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    n_pairs = 1000 * sum(len(r) for r in trainset.ur.values() if len(r) >= 2)
    assert n_pairs > 10**6 and peak < epoch_bytes(n_pairs, 1024, 32) + 2**20


def test_bad_per_user_epsilon_at_fit(split):
    trainset, _ = split
    with pytest.raises(ValueError, match="epsilon"):
        MallowsRanker(epsilon={"u0": 1.0}, n_epochs=1).fit(trainset)
    with pytest.raises(ValueError, match="epsilon"):
        MallowsRanker(epsilon=lambda uid: 0.0, n_epochs=1).fit(trainset)
    with pytest.raises(TypeError, match="epsilon"):
        MallowsRanker(epsilon=lambda uid: "big", n_epochs=1).fit(trainset)


# ---------------------------------------------------------------- Surprise contract
@pytest.mark.parametrize("mechanism,eps", [("mallows", 2.0), ("laplace", 2.0), ("mallows", None)])
def test_batch_test_equals_predict(split, mechanism, eps):
    trainset, testset = split
    extra = [("nobody", "i1", 3.0), ("u1", "no-item", 4.0), ("nobody", "no-item", 2.0)]
    queries = testset[:200] + extra
    algo = MallowsRanker(epsilon=eps, mechanism=mechanism, n_epochs=3, random_state=0)
    algo.fit(trainset)
    batch = algo.test(queries)
    single = [algo.predict(u, i, r) for u, i, r in queries]
    assert batch == single  # same est bit for bit, same details
    assert [p.details["was_impossible"] for p in batch[-3:]] == [True] * 3
    assert batch[-1].est == pytest.approx(trainset.global_mean)
    ests = np.array([p.est for p in batch])
    assert np.isfinite(ests).all() and ests.min() >= 1 and ests.max() <= 5
    assert algo.test([]) == []


def test_estimates_strictly_follow_scores(split):
    """The rating map is strictly increasing: no ties are created, the order is the score's."""
    trainset, _ = split
    algo = MallowsRanker(epsilon=None, n_epochs=3, random_state=1).fit(trainset)
    uid = trainset.to_raw_uid(0)
    iids = [trainset.to_raw_iid(i) for i in range(trainset.n_items)]
    scores = np.array([algo.score(uid, iid) for iid in iids])
    ests = np.array([p.est for p in algo.test([(uid, iid, 0.0) for iid in iids])])
    order = np.argsort(scores)
    assert (np.diff(ests[order]) > 0).all()


def test_rating_quantiles_by_hand():
    users = np.zeros(4, dtype=np.int64)
    ratings = np.array([1.0, 3.0, 3.0, 5.0])  # step 2: intervals [1,2], [2,4], [4,5]
    q = _RatingQuantiles.build(users, ratings, 1, (1.0, 5.0))
    below = np.array([0.125, 0.5, 0.9, 0.0, 1.0])
    est = q(np.zeros(5, dtype=np.int64), below, 1.0 - below)
    np.testing.assert_allclose(est, [1.5, 3.0, 4.6, 1.0, 5.0])


def test_segment_search():
    values = np.array([0.2, 0.5, 1.0, 0.3, 1.0, 1.0])  # blocks [0,3) and [3,6)
    seg = Segments(np.array([0, 3]), np.array([3, 3]))
    got = seg.search(values, np.array([0, 0, 0, 1, 1, 1]), np.array([0.1, 0.5, 2.0, 0.3, 0.31,
                                                                      0.0]))
    np.testing.assert_array_equal(got, [0, 1, 2, 3, 4, 3])


def test_reproducible_and_refit(split):
    trainset, testset = split
    a = MallowsRanker(epsilon=1.0, n_epochs=2, random_state=5).fit(trainset)
    first = a.test(testset)
    assert a.fit(trainset).test(testset) == first  # int seed: refit reproduces
    b = MallowsRanker(epsilon=1.0, n_epochs=2, random_state=6).fit(trainset)
    assert b.test(testset) != first


def test_single_rating_users_and_no_mutation():
    frame = pd.DataFrame({"user": ["a", "a", "a", "b", "c"], "item": [1, 2, 3, 1, 2],
                          "rating": [5.0, 3.0, 1.0, 4.0, 2.0]})
    copy = frame.copy()
    trainset = Dataset.load_from_df(frame, Reader(rating_scale=(1, 5))).build_full_trainset()
    eps = {"a": 1.0, "b": 2.0, "c": None}
    algo = MallowsRanker(epsilon=eps, n_epochs=2, random_state=0).fit(trainset)
    preds = algo.test([("b", 1, 4.0), ("b", 3, 1.0), ("c", 3, 2.0)])
    assert all(math.isfinite(p.est) for p in preds)
    assert eps == {"a": 1.0, "b": 2.0, "c": None}
    pd.testing.assert_frame_equal(frame, copy)


def test_cross_validate_and_grid_search():
    data = _toy_data(1, n_users=40, n_items=30)
    out = cross_validate(MallowsRanker(n_epochs=2, random_state=0), data, measures=["rmse"],
                         cv=2)
    assert np.isfinite(out["test_rmse"]).all()
    grid = GridSearchCV(MallowsRanker, {"epsilon": [1.0, None], "n_epochs": [2],
                                        "random_state": [0]}, measures=["rmse"], cv=2)
    grid.fit(data)
    assert grid.best_params["rmse"]["n_epochs"] == 2


# ---------------------------------------------------------------- privacy bookkeeping
def test_privacy_report(split):
    trainset, _ = split
    n = trainset.n_users
    # fresh noise: a guarantee (the caller's Generator: a conditional one; an int seed: void)
    report = MallowsRanker(epsilon=2.0, n_epochs=1).fit(trainset).privacy_report()
    (entry,) = report.entries
    assert entry.epsilon == 2.0 and entry.mechanism.startswith("mallows")
    assert entry.unit is Unit.RANKING_SWAP and entry.status is Status.HOLDS
    assert report.applications(0).tolist() == [1] * n      # each order privatised once
    assert report.guarantee == {Unit.RANKING_SWAP: (2.0, 0.0)}  # queries: post-processing
    groups = {trainset.to_raw_uid(u): [0.5, 1.0, 5.0][u % 3] for u in range(n)}
    hetero = MallowsRanker(epsilon=groups, mechanism="laplace", n_epochs=1,
                           random_state=np.random.default_rng(0)).fit(trainset)
    report = hetero.privacy_report()
    assert [e.epsilon for e in report.entries] == [0.5, 1.0, 5.0]
    assert sum(report.applications(e).sum() for e in range(3)) == n
    assert report.total() == (5.0, 0.0)  # parallel over disjoint groups
    np.testing.assert_array_equal(report.per_user()["epsilon"], hetero.user_epsilon_)
    np.testing.assert_array_equal(hetero.user_epsilon_, [[0.5, 1.0, 5.0][u % 3]
                                                         for u in range(n)])
    # Laplace on ranks above ε = 144: some orders are impossible, no ε-ranking DP
    loud = MallowsRanker(epsilon=200.0, mechanism="laplace", n_epochs=1).fit(trainset)
    assert loud.privacy_report().entries[0].status is Status.VOID
    assert MallowsRanker(epsilon=100.0, mechanism="laplace", n_epochs=1).fit(
        trainset).privacy_report().entries[0].status is Status.HOLDS
    none = MallowsRanker(epsilon=None, n_epochs=1).fit(trainset).privacy_report()
    assert none.total()[0] == math.inf


@pytest.mark.parametrize("random_state", [0, 7, np.int64(3)])
def test_an_int_seed_voids_the_report(split, random_state):
    """Seeded noise: anyone who knows or guesses the seed reproduces the orders' noise."""
    report = MallowsRanker(epsilon=2.0, n_epochs=1, random_state=random_state).fit(
        split[0]).privacy_report()
    (entry,) = report.entries
    assert entry.status is Status.VOID and entry.note.startswith(SEEDED)
    assert report.seeded and report.guarantee is None
    assert not any("seeded" in note for note in report.notes)   # the old note is gone
    fresh = MallowsRanker(epsilon=2.0, n_epochs=1).fit(split[0])
    assert fresh.privacy_report().entries[0].status is Status.HOLDS
    for caller in (np.random.default_rng(1), np.random.RandomState(2)):   # #51: whoever knows
        fitted = MallowsRanker(epsilon=2.0, n_epochs=1, random_state=caller).fit(split[0])
        assert fitted.privacy_report().entries[0].status is Status.CONDITIONAL   # its state


def test_mallows_is_void_only_above_the_epsilon_its_sampler_resolves(split):
    """Every order keeps its exact probability up to MALLOWS_MAX_EPSILON (1e18); above it
    the most discordant orders are out of the sampler's reach: void, and said why."""
    trainset, _ = split
    limit = mallows.MALLOWS_MAX_EPSILON
    statuses = {}
    for eps in (50.0, 1e4, limit, 2 * limit):
        entry = MallowsRanker(epsilon=eps, n_epochs=1).fit(trainset).privacy_report().entries[0]
        statuses[eps] = entry.status
        if entry.status is Status.VOID:
            assert f"{limit:g}" in entry.note
    assert statuses == {50.0: Status.HOLDS, 1e4: Status.HOLDS,
                        limit: Status.HOLDS,
                        2 * limit: Status.VOID}


def test_callable_epsilon_matches_mapping(split):
    trainset, testset = split
    groups = {trainset.to_raw_uid(u): 1.0 + (u % 2) for u in range(trainset.n_users)}
    a = MallowsRanker(epsilon=groups, n_epochs=2, random_state=0).fit(trainset)
    b = MallowsRanker(epsilon=groups.__getitem__, n_epochs=2, random_state=0).fit(trainset)
    assert a.test(testset) == b.test(testset)


# ---------------------------------------------------------------- learning
def test_learns_and_privacy_costs_accuracy():
    trainset, testset = train_test_split(_toy_data(2, n_users=120, n_items=80, density=0.5),
                                         test_size=0.25, random_state=1)
    accuracy = {}
    for eps in (None, 0.01):
        algo = MallowsRanker(epsilon=eps, n_epochs=10, random_state=0).fit(trainset)
        preds = algo.test(testset)
        accuracy[eps] = pairwise_accuracy(preds)
        assert 0.0 < ndcg_at_k(preds) <= 1.0
    # ~2000 distinct-rating test pairs: sd of a chance accuracy is about 0.01-0.02
    assert accuracy[None] > 0.75
    assert abs(accuracy[0.01] - 0.5) < 0.08
    # as ε → ∞ the mechanism returns the true order: same model as no privacy
    inf = MallowsRanker(epsilon=math.inf, n_epochs=2, random_state=0).fit(trainset)
    none = MallowsRanker(epsilon=None, n_epochs=2, random_state=0).fit(trainset)
    assert inf.test(testset) == none.test(testset)


@pytest.mark.slow
@pytest.mark.data
def test_ml100k_matches_svd(ml100k):
    """Done-criterion: non-private pooled pairwise accuracy >= SVD's, same split."""
    trainset, testset = train_test_split(ml100k, test_size=0.2, random_state=0)
    svd = pairwise_accuracy(SVD(random_state=0).fit(trainset).test(testset))
    ranker = pairwise_accuracy(MallowsRanker(epsilon=None, random_state=0)
                               .fit(trainset).test(testset))
    assert ranker >= svd


# ---------------------------------------------------------------- properties (hypothesis)
@fuzz(150)
@given(ranker_parameters())
def test_check_params_names_every_invalid_parameter(params):
    kwargs, bad = params
    ranker = MallowsRanker(**kwargs)                 # stored as given, checked by fit
    if bad:
        raises_naming(ranker.check_params, *bad)
    else:
        assert ranker.check_params() is ranker


@fuzz(120)
@given(rating_frames(), st.sampled_from(["mallows", "laplace"]),
       st.sampled_from(["tight", "conservative"]),
       st.sampled_from(["number", "none", "mapping", "callable"]),
       st.integers(0, 3), st.integers(0, 100))
def test_fit_and_predict_on_any_small_data(frame_scale, mechanism, calibration, how, n_epochs,
                                           seed):
    frame, scale = frame_scale
    data = to_dataset(frame, scale)
    raw_before = copy.deepcopy(data.raw_ratings)
    trainset = data.build_full_trainset()
    state_before = trainset_state(trainset)
    users = sorted(frame["user"].unique())
    budgets = {u: [0.5, 2.0, math.inf][n % 3] for n, u in enumerate(users)}
    epsilon = {"number": 1.0, "none": None, "mapping": budgets,
               "callable": lambda uid: budgets[uid]}[how]
    budgets_before = dict(budgets)
    algo = MallowsRanker(epsilon=epsilon, mechanism=mechanism, calibration=calibration,
                         n_factors=3, n_epochs=n_epochs, batch_size=16,
                         random_state=np.random.default_rng(seed))   # conditional (#51)
    algo.fit(trainset)
    testset = full_testset(trainset)
    check_predictions(algo, trainset, testset)
    # the privatised orders are permutations of each user's items
    for u, order in enumerate(algo.orders_):
        assert sorted(order.tolist()) == sorted(i for i, _ in trainset.ur[u])
    # each user's ε is the budget given for them (None: inf, not protected)
    expected = [{"number": 1.0, "none": math.inf}.get(how, budgets.get(uid))
                for uid in map(trainset.to_raw_uid, trainset.all_users())]
    np.testing.assert_array_equal(algo.user_epsilon_, expected)
    report = algo.privacy_report()
    assert report.total(Unit.RANKING_SWAP) == (max(expected), 0.0)
    assert report.guarantee is None and report.end_to_end() is Status.CONDITIONAL
    assert data.raw_ratings == raw_before
    assert trainset_state(trainset) == state_before
    assert budgets == budgets_before


def test_an_epsilon_mapping_must_cover_every_user():
    frame = pd.DataFrame({"user": ["a", "b"], "item": ["x", "y"], "rating": [1.0, 2.0]})
    trainset = to_dataset(frame, (1, 5)).build_full_trainset()
    raises_naming(lambda: MallowsRanker(epsilon={"a": 1.0}).fit(trainset), "epsilon")
    raises_naming(lambda: MallowsRanker(epsilon={"a": 1.0, "b": -1.0}).fit(trainset),
                  "epsilon")
    raises_naming(lambda: MallowsRanker(epsilon=lambda uid: "x").fit(trainset), "epsilon")
