"""Top-N lists of `PrivateKNN` (issue #38): which items a list may hold (`min_k`, by default
never a fallback's answer) and the support-aware score (`neighbour_shrinkage`), on hand-made
data, against references from `predict`; a ranking option chosen on the training ratings
alone (`dprec.evaluation.choose_ranking_option`); precision@10 on MovieLens u1."""

from __future__ import annotations

import copy
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from strategies import trainset_state
from surprise import Dataset, Reader
from surprise.builtin_datasets import get_dataset_dir
from surprise.model_selection import PredefinedKFold

from dprec import ImplicitKNN, PrivateKNN, PrivateKNNBaseline, PrivateKNNWithMeans, datasets
from dprec.evaluation import choose_ranking_option, holdout_split
from dprec.evaluation.metrics import precision_at_k
from dprec.evaluation.topn import recommend_batch
from dprec.knn.queries import RANKING_SHRINKAGE


def _trainset(rows):
    frame = pd.DataFrame(rows, columns=["user", "item", "rating"])
    return Dataset.load_from_df(frame, Reader(rating_scale=(1, 5))).build_full_trainset()


@pytest.fixture(scope="module")
def fallback_data():
    """`u0` (mean 4.5) shares A, B with `u1`; `u3`, who alone rated D and X, shares
    nothing with `u0` (msd similarity 0): `u0`'s D and X are the fallback's μ = 4.5, C is
    4.5 + (2 − 11/3) from one neighbour."""
    return _trainset([("u0", "A", 5), ("u0", "B", 4), ("u1", "A", 5), ("u1", "B", 4),
                      ("u1", "C", 2), ("u3", "D", 3), ("u3", "X", 5)])


@pytest.fixture(scope="module")
def support_data():
    """`u0` rated A, B at 3 (mean 3); P is 5 by one neighbour, Q 4.5 by three (each of
    similarity 1): the basic rule ranks P first, a shrinkage λ = 2 ranks Q first
    (3 + 1/3 · 2 = 3.67 < 3 + 3/5 · 1.5 = 3.9)."""
    rows = [("u0", "A", 3), ("u0", "B", 3)]
    for user, item, rating in [("u1", "P", 5), ("u2", "Q", 5), ("u3", "Q", 4), ("u4", "Q", 4.5)]:
        rows += [(user, "A", 3), (user, "B", 3), (user, item, rating)]
    return _trainset(rows)


def _list(algo, **options):
    return [(iid, round(est, 12)) for iid, est in algo.recommend("u0", 5, **options)]


def test_the_fallbacks_answers_are_ranked_only_with_min_k_0(fallback_data):
    algo = PrivateKNNWithMeans(k=5, verbose=False).fit(fallback_data)
    c = round(4.5 + 2 - 11 / 3, 12)
    unshrunk = {"neighbour_shrinkage": 0}
    assert _list(algo, **unshrunk) == [("C", c)]          # default: the model's min_k, 1
    assert _list(algo, min_k=0, **unshrunk) == [("D", 4.5), ("X", 4.5), ("C", c)]
    assert _list(algo, min_k=2) == []
    # the model's min_k is the default: with min_k=2 every item falls back, none is ranked
    assert _list(PrivateKNNWithMeans(k=5, min_k=2, verbose=False).fit(fallback_data)) == []
    # the basic rule with fallback="user_mean" and the baseline fallback: the same items
    for fallback in ("user_mean", "baseline"):
        model = PrivateKNN(k=5, fallback=fallback, verbose=False).fit(fallback_data)
        assert [iid for iid, _ in _list(model)] == ["C"]
        assert sorted(iid for iid, _ in _list(model, min_k=0)) == ["C", "D", "X"]


def test_min_k_and_shrinkage_rank_by_support(support_data):
    algo = PrivateKNN(k=5, verbose=False).fit(support_data)
    assert _list(algo, neighbour_shrinkage=0) == [("P", 5.0), ("Q", 4.5)]
    assert _list(algo, min_k=2, neighbour_shrinkage=0) == [("Q", 4.5)]   # P: one neighbour
    assert _list(algo, neighbour_shrinkage=2) == [("Q", 3.9), ("P", round(3 + 2 / 3, 12))]
    assert _list(algo, neighbour_shrinkage=math.inf) == [("P", 3.0), ("Q", 3.0)]
    # the predictions are the model's own, unshrunk
    assert algo.predict("u0", "P").est == 5.0 and algo.neighbour_shrinkage == 0


def test_the_default_ranking_shrinks_a_model_that_does_not(support_data):
    """Issue 53: `PrivateKNN()`'s lists were items one or two neighbours rated 5.  A model
    without a shrinkage ranks by `RANKING_SHRINKAGE` (λ = 5: Q, 3 + 3/8 · 1.5, before P,
    3 + 1/6 · 2); a model with one ranks by its own."""
    assert RANKING_SHRINKAGE == 5
    algo = PrivateKNN(k=5, verbose=False).fit(support_data)
    assert _list(algo) == [("Q", 3.5625), ("P", round(3 + 2 / 6, 12))]
    assert _list(algo) == _list(algo, neighbour_shrinkage=RANKING_SHRINKAGE)
    own = PrivateKNN(k=5, neighbour_shrinkage=2, verbose=False).fit(support_data)
    assert _list(own) == _list(algo, neighbour_shrinkage=2)
    assert algo.predict("u0", "P").est == 5.0          # the predictions stay unshrunk


def _candidates(algo, uid):
    """`(-est, inner id, actual_k)` of the items `uid` did not rate and `test` (the
    numbers of `predict`) estimates, best first, ties by inner id."""
    trainset = algo.trainset
    rated = {i for i, _ in trainset.ur[trainset.to_inner_uid(uid)]}
    items = [i for i in trainset.all_items() if i not in rated]
    predictions = algo.test([(uid, trainset.to_raw_iid(i), 0.0) for i in items])
    return sorted((-p.est, i, p.details["actual_k"]) for i, p in zip(items, predictions)
                  if not p.details.get("was_impossible"))


@pytest.mark.parametrize("neighbourhood", ["item", "user"])
@pytest.mark.parametrize("make", [
    lambda nb: PrivateKNNWithMeans(k=8, min_k=2, neighbourhood=nb, verbose=False),
    lambda nb: PrivateKNNBaseline(k=8, neighbourhood=nb, sim_options={"user_based": False},
                                  verbose=False),
    lambda nb: PrivateKNN(k=8, fallback="user_mean", neighbourhood=nb, verbose=False),
    lambda nb: PrivateKNN(k=8, selector="ppns", epsilon=1.0, random_state=0,
                          neighbourhood=nb, verbose=False)])
def test_lists_equal_the_predictions_with_enough_neighbours(split, make, neighbourhood):
    trainset, _ = split
    algo = make(neighbourhood).fit(trainset)
    uids = [trainset.to_raw_uid(u) for u in (0, 3)]
    candidates = {uid: _candidates(algo, uid) for uid in uids}
    for min_k, options in [(max(algo.min_k, 1), {}), (0, {"min_k": 0}), (3, {"min_k": 3})]:
        top = algo.recommend_batch(uids, 6, neighbour_shrinkage=0, **options)
        for uid in uids:
            got = top[top["uid"] == uid]
            expected = [(i, -e) for e, i, n in candidates[uid] if n >= min_k][:6]
            assert got["iid"].tolist() == [trainset.to_raw_iid(i) for i, _ in expected]
            np.testing.assert_allclose(got["est"], [e for _, e in expected], rtol=0,
                                       atol=1e-12)


@pytest.mark.parametrize("neighbourhood", ["item", "user"])
@pytest.mark.parametrize("shrinkage", [3.0, math.inf])
def test_a_shrinkage_ranks_as_the_model_fitted_with_it(split, neighbourhood, shrinkage):
    trainset, _ = split
    uids = [trainset.to_raw_uid(u) for u in range(4)]
    for cls in (PrivateKNN, PrivateKNNBaseline):
        params = {"k": 8, "neighbourhood": neighbourhood, "selector": "ppns", "epsilon": 1.0,
                  "random_state": 0, "verbose": False}
        plain = cls(**params).fit(trainset)
        shrunk = cls(**params, neighbour_shrinkage=shrinkage).fit(trainset)
        pd.testing.assert_frame_equal(plain.recommend_batch(uids, 7, neighbour_shrinkage=shrinkage),
                                      shrunk.recommend_batch(uids, 7))


def test_score_rows_are_the_estimates_and_what_is_ranked(split):
    trainset, _ = split
    algo = PrivateKNNWithMeans(k=6, min_k=2, verbose=False).fit(trainset)
    users = np.array([0, 5])
    items = np.arange(trainset.n_items)
    est, ranked = algo.score_rows(users, neighbour_shrinkage=0)
    assert est.shape == ranked.shape == (2, trainset.n_items)
    default = algo.score_rows(users)       # ranked by RANKING_SHRINKAGE, on the same items
    np.testing.assert_array_equal(default[0], algo.score_rows(
        users, neighbour_shrinkage=RANKING_SHRINKAGE)[0])
    np.testing.assert_array_equal(default[1], ranked)
    for row, user in enumerate(users):
        expected, _ = algo.estimate_arrays(np.full_like(items, user), items)
        np.testing.assert_array_equal(est[row], expected)
        actual_k = [p.details["actual_k"] for p in algo.test(
            [(trainset.to_raw_uid(user), trainset.to_raw_iid(i), 0) for i in items])]
        np.testing.assert_array_equal(ranked[row], np.array(actual_k) >= 2)
    assert algo.score_rows(users, min_k=0)[1].all()


def test_ranking_mutates_nothing(fallback_data):
    algo = PrivateKNNWithMeans(k=5, verbose=False).fit(fallback_data)
    ratings = copy.deepcopy(fallback_data.ur)
    before = [algo.predict("u0", iid).est for iid in "CDX"]
    uids = ["u0", "u1"]
    users = np.array([0, 1])
    algo.recommend_batch(uids, 3, min_k=0, neighbour_shrinkage=2)
    algo.score_rows(users, min_k=2, neighbour_shrinkage=1.5)
    assert uids == ["u0", "u1"] and users.tolist() == [0, 1]
    assert fallback_data.ur == ratings
    assert (algo.min_k, algo.neighbour_shrinkage) == (1, 0)
    assert [algo.predict("u0", iid).est for iid in "CDX"] == before


@pytest.mark.parametrize("options, error, needle", [
    ({"min_k": -1}, ValueError, "min_k must be >= 0"),
    ({"min_k": 6}, ValueError, r"min_k must be <= k \(5\)"),
    ({"min_k": 1.5}, TypeError, "min_k must be an integer"),
    ({"min_k": True}, TypeError, "min_k must be an integer"),
    ({"neighbour_shrinkage": -1}, ValueError, "neighbour_shrinkage must be >= 0"),
    ({"neighbour_shrinkage": math.nan}, ValueError, "neighbour_shrinkage"),
    ({"neighbour_shrinkage": "10"}, TypeError, "neighbour_shrinkage must be a real number"),
])
def test_bad_ranking_options_are_named(fallback_data, options, error, needle):
    algo = PrivateKNNWithMeans(k=5, verbose=False).fit(fallback_data)
    for call in (lambda: algo.recommend("u0", **options),
                 lambda: algo.recommend_batch([], **options),       # checked with no user
                 lambda: recommend_batch(algo, [], **options),
                 lambda: algo.score_rows(np.array([0]), **options)):
        with pytest.raises(error, match=needle):
            call()


def test_options_a_model_does_not_take_are_named(fallback_data):
    algo = PrivateKNNWithMeans(k=5, verbose=False).fit(fallback_data)
    with pytest.raises(TypeError, match="min_nbrs: not a ranking option of PrivateKNNWithMeans, "
                                        "which takes min_k, neighbour_shrinkage"):
        recommend_batch(algo, ["u0"], min_nbrs=2)
    implicit = ImplicitKNN(k=2).fit(fallback_data)
    for call in (lambda: recommend_batch(implicit, ["u0"], min_k=2),
                 lambda: implicit.recommend("u0", min_k=2),
                 lambda: implicit.recommend_batch(["u0"], min_k=2)):
        with pytest.raises(TypeError, match="min_k: not a ranking option of ImplicitKNN, "
                                            "which takes none"):
            call()


# ------------------------------------------------- choosing an option on the training ratings
def test_the_hold_out_is_a_seeded_share_of_each_users_rows_and_names_bad_input():
    frame = pd.DataFrame({"user": np.repeat(["a", "b", "c", "d"], [10, 3, 2, 1]),
                          "item": [f"i{n}" for n in range(16)], "rating": np.arange(16.0)})
    before = frame.copy()
    train, held = holdout_split(frame, 0.2, seed=4)
    assert held.groupby("user").size().to_dict() == {"a": 2, "b": 1}    # round(0.2 n)
    pd.testing.assert_frame_equal(pd.concat([train, held]).sort_values("item", key=lambda c:
                                  c.str[1:].astype(int)).reset_index(drop=True), before)
    for part in (train, held):                                   # the frame's order
        assert part["rating"].is_monotonic_increasing and part.index.tolist() == list(
            range(len(part)))
    pd.testing.assert_frame_equal(holdout_split(frame, 0.2, seed=4)[0], train)
    assert not holdout_split(frame, 0.2, seed=5)[0].equals(train)
    # never all of a user's rows: each keeps one to be fitted on
    assert holdout_split(frame, 0.9, seed=4)[1].groupby("user").size().to_dict() == {
        "a": 9, "b": 2, "c": 1}
    pd.testing.assert_frame_equal(frame, before)
    for kwargs, error, needle in [({"share": 0.0}, ValueError, "share"),
                                  ({"share": 1.0}, ValueError, "share"),
                                  ({"share": "0.2"}, TypeError, "share"),
                                  ({"seed": -1}, ValueError, "seed"),
                                  ({"seed": 1.5}, TypeError, "seed")]:
        with pytest.raises(error, match=needle):
            holdout_split(frame, **kwargs)
    with pytest.raises(TypeError, match="'user' column"):
        holdout_split(frame.rename(columns={"user": "uid"}))


@pytest.fixture(scope="module")
def small():
    """A small synthetic trainset with signal (a few seconds to fit and rank)."""
    return datasets.synthetic(120, 150, 2400, random_state=0).build_full_trainset()


def _reference_curve(make, trainset, option, values, share, seed):
    """Precision@10 of each value on the hold-out, computed from its definition."""
    frame = pd.DataFrame([(trainset.to_raw_uid(u), trainset.to_raw_iid(i), r)
                          for u, i, r in trainset.all_ratings()],
                         columns=["user", "item", "rating"])
    train, held = holdout_split(frame, share, seed)
    fitted = make().fit(Dataset.load_from_df(train, Reader(rating_scale=trainset.rating_scale))
                        .build_full_trainset())
    uids = sorted(set(held.loc[held["rating"] >= 4, "user"]))
    truth = list(held.itertuples(index=False, name=None))
    return [precision_at_k(fitted.recommend_batch(uids, 10, **{option: value}), 10,
                           threshold=4, testset=truth) for value in values]


@pytest.mark.parametrize("option, values", [("neighbour_shrinkage", [0, 3, 10, math.inf]),
                                            ("min_k", [0, 1, 3, 5])])
def test_an_option_is_chosen_by_its_precision_on_the_hold_out(small, option, values):
    def make():
        return PrivateKNNBaseline(k=8, sim_options={"name": "cosine", "user_based": False},
                                  verbose=False)
    algo = make()
    state = trainset_state(small)
    best, curve = choose_ranking_option(algo, small, option, values, share=0.25, seed=3)
    expected = _reference_curve(make, small, option, values, share=0.25, seed=3)
    np.testing.assert_allclose(curve.to_numpy(), expected, rtol=0, atol=1e-12)
    assert curve.index.tolist() == values and curve.index.name == option
    assert best == values[int(np.argmax(expected))]
    assert len(set(expected)) > 1                      # the choice is not a tie
    assert not hasattr(algo, "trainset") and trainset_state(small) == state
    # another seed, another hold-out (the curve moves)
    _, other = choose_ranking_option(algo, small, option, values, share=0.25, seed=4)
    assert not np.allclose(other.to_numpy(), curve.to_numpy())


def test_the_first_of_equal_values_is_chosen_and_bad_input_is_named(small):
    algo = PrivateKNN(k=5, verbose=False)
    best, curve = choose_ranking_option(algo, small, "neighbour_shrinkage", [2.0, 2.0])
    assert best == 2.0 and curve.iloc[0] == curve.iloc[1]
    for args, kwargs, error, needle in [
            (("min_nbrs", [1]), {}, TypeError, "min_nbrs: not a ranking option of PrivateKNN"),
            (("min_k", []), {}, ValueError, "values must hold at least one value of min_k"),
            ((3, [1]), {}, TypeError, "option must be the name of a ranking option"),
            (("min_k", [1]), {"threshold": 99}, ValueError, r"threshold \(99\)"),
            (("min_k", [1]), {"share": 1.5}, ValueError, "share"),
            (("min_k", [1]), {"n": 0}, ValueError, "n must be >= 1")]:
        with pytest.raises(error, match=needle):
            choose_ranking_option(algo, small, *args, **kwargs)


# ------------------------------------------------- MovieLens u1 (skips without the files)
@pytest.fixture(scope="module")
def u1():
    """u1.base's trainset, its users with a u1.test rating >= 4, and u1.test."""
    folder = Path(get_dataset_dir()) / "ml-100k" / "ml-100k"
    if not (folder / "u1.base").is_file():
        pytest.skip(f"MovieLens 100k's u1.base is not in {folder}")
    data = Dataset.load_from_folds([(str(folder / "u1.base"), str(folder / "u1.test"))],
                                   Reader("ml-100k"))
    [(trainset, testset)] = PredefinedKFold().split(data)
    return trainset, sorted({uid for uid, _, r in testset if r >= 4}), testset


@pytest.mark.parametrize("make, options, measured", [
    # docs/topn.md: LensKit's explicit item kNN, ranked as LensKit ranks it (0.0221 with
    # min_k=0, every fallback's answer ranked; LensKit's own 0.0632)
    (lambda: PrivateKNNWithMeans(k=20, min_sim=1e-6, fallback="baseline", bsl_options={
        "method": "als", "n_epochs": 1, "reg_u": 0.0, "reg_i": 0.0},
        sim_options={"name": "centered_cosine", "user_based": False}),
     {"neighbour_shrinkage": 0}, 0.0669),
    # issue 53: PrivateKNN()'s default ranking (λ = RANKING_SHRINKAGE; 0.0079 unshrunk,
    # its lists' items rated by 9 users on average; docs/topn.md#the-default-ranking)
    (lambda: PrivateKNN(), {}, 0.1322),
    # the recommended configuration: KNNBaseline item-based, shrunk for the ranking by the
    # λ = 5 that choose_ranking_option picks on u1.base alone (benchmarks/bench_topn.py;
    # docs/topn.md: the validation curve, and 0.1461 at the λ = 10 read off u1.test)
    (lambda: PrivateKNNBaseline(k=40, sim_options={"name": "cosine", "user_based": False}),
     {"neighbour_shrinkage": 5}, 0.1458),
])
def test_precision_at_10_on_u1(u1, make, options, measured):
    trainset, uids, testset = u1
    algo = make()
    algo.verbose = False
    top = algo.fit(trainset).recommend_batch(uids, 10, **options)
    assert len(top) == 10 * len(uids) == 4560
    # 0.005 is 23 of the 4560 recommendations: room for ties that other BLAS sum apart
    assert precision_at_k(top, 10, threshold=4, testset=testset) >= measured - 0.005


def test_the_default_ranking_on_u1_recommends_items_many_rated(u1):
    """Issue 53: `PrivateKNN()`'s unshrunk lists on u1 hold items rated by 2 users (the
    median), its default lists items rated by 100 or more."""
    trainset, uids, _ = u1
    raters = {trainset.to_raw_iid(i): len(r) for i, r in trainset.ir.items()}
    algo = PrivateKNN(verbose=False).fit(trainset)
    default = algo.recommend_batch(uids, 10)["iid"].map(raters)
    unshrunk = algo.recommend_batch(uids, 10, neighbour_shrinkage=0)["iid"].map(raters)
    assert default.median() >= 100 > 5 >= unshrunk.median()
