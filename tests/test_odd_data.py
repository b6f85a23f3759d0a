"""Odd data and malformed arguments (issue 36, points 6, 7, 9, 10 and 12): constant
ratings under the z-score rule, non-finite ratings, a degenerate rating scale, a
diverging learner, empty top-N frames, malformed testset rows and a precomputed
sensitivity of the wrong length."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from surprise import Dataset, KNNWithZScore, Reader

from dprec import (
    DPALS,
    DPBaseline,
    DPItemKNN,
    LocalKNN,
    MallowsRanker,
    PrivateKNN,
    PrivateKNNBaseline,
    PrivateKNNWithMeans,
    PrivateKNNWithZScore,
    datasets,
)
from dprec.evaluation import metrics

#: one fresh, unfitted model of every class (and the private selectors, item-based)
MODELS = {
    "knn": lambda: PrivateKNN(random_state=0),
    "knn_ppns_items": lambda: PrivateKNN(selector="ppns", sim_options={"user_based": False},
                                         random_state=0),
    "knn_pncf": lambda: PrivateKNN(selector="pncf", random_state=0),
    "knn_means": lambda: PrivateKNNWithMeans(random_state=0),
    "knn_zscore": lambda: PrivateKNNWithZScore(random_state=0),
    "knn_baseline": lambda: PrivateKNNBaseline(random_state=0),
    "dp_baseline": lambda: DPBaseline(random_state=0),
    "dp_item_knn": lambda: DPItemKNN(random_state=0),
    "dp_item_knn_factors": lambda: DPItemKNN(similarity="factors", random_state=0),
    "local_knn": lambda: LocalKNN(random_state=0),
    "dp_als": lambda: DPALS(random_state=0),
    "mallows": lambda: MallowsRanker(random_state=0),
}


def trainset(ratings, scale=(1, 5), users=(1, 1, 2, 2, 3, 3, 7), items=(1, 2, 1, 3, 2, 3, 12)):
    frame = pd.DataFrame({"u": users[:len(ratings)], "i": items[:len(ratings)],
                          "r": ratings})
    return Dataset.load_from_df(frame, Reader(rating_scale=scale)).build_full_trainset()


@pytest.fixture(scope="module")
def synthetic():
    return datasets.synthetic(30, 40, 400, random_state=0).build_full_trainset()


# ----------------------------------------------------------- 6. z-score, constant ratings
@pytest.mark.parametrize("user_based", [True, False])
def test_zscore_equals_surprise_where_a_rater_is_constant(user_based):
    """Users (and items) with one rating or equal ratings (σ = 0) take the overall σ, as
    in Surprise's KNNWithZScore: the same σ's (bit for bit on these ratings) and the same
    estimates (to rounding: each contribution is $s (r - \\mu)/\\sigma$ here,
    $(s (r - \\mu))/\\sigma$ there, as in `tests/test_knn_parity.py`)."""
    frame = pd.DataFrame({"u": list("aabbbcddef"), "i": list("xyxyzxwvvz"),
                          "r": [3, 3, 4, 2, 5, 5, 1, 2, 2, 4]})
    data = Dataset.load_from_df(frame, Reader(rating_scale=(1, 5))).build_full_trainset()
    testset = data.build_testset() + data.build_anti_testset()
    options = {"user_based": user_based}
    surprise = KNNWithZScore(sim_options=dict(options), verbose=False).fit(data)
    assert (surprise.sigmas == surprise.overall_sigma).sum() >= 2     # σ = 0 replaced
    reference = surprise.test(testset)
    for model in (PrivateKNNWithZScore(sim_options=dict(options)),
                  PrivateKNN(prediction="zscore", sim_options=dict(options))):
        ours = model.fit(data).test(testset)
        assert model.sigmas.tolist() == surprise.sigmas.tolist()
        np.testing.assert_allclose([p.est for p in ours], [p.est for p in reference],
                                   rtol=0, atol=1e-12)
        assert [p.details for p in ours] == [p.details for p in reference]


@pytest.mark.parametrize("user_based", [True, False])
@pytest.mark.parametrize("selector", ["topk", "ppns"])
def test_zscore_on_all_equal_ratings_answers_the_mean(user_based, selector):
    """Every rating equal (overall σ = 0 too): no deviation exists; the estimate is the
    mean, finite, and test, predict, estimate_arrays and recommend agree."""
    data = trainset([3.0] * 6)
    model = PrivateKNN(prediction="zscore", selector=selector, random_state=0,
                       sim_options={"user_based": user_based}).fit(data)
    testset = data.build_anti_testset() + data.build_testset()
    tested = model.test(testset)
    assert [p.est for p in tested] == [3.0] * len(testset)
    assert [p.est for p in tested] == [model.predict(u, i).est for u, i, _ in testset]
    assert not any(p.details["was_impossible"] for p in tested)
    est, _ = model.estimate_arrays(np.array([0, 1, 2]), np.array([2, 0, 1]))
    assert est.tolist() == [3.0] * 3
    assert [e for _, e in model.recommend(1)] == [3.0]


# ----------------------------------------------------------- 7. non-finite ratings
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_a_non_finite_rating_is_refused_at_fit(name, bad):
    data = trainset([3, 4, 2, 5, 1, 3, bad])
    with pytest.raises(ValueError, match=f"rating of user 7 for item 12 is {bad}: ratings "
                                         "must be finite numbers; drop or fix it"):
        MODELS[name]().fit(data)


def test_fit_precomputed_refuses_a_non_finite_rating():
    data = trainset([3, 4, 2, 5, 1, 3, np.nan])
    with pytest.raises(ValueError, match="rating of user 7 for item 12 is nan"):
        PrivateKNN().fit_precomputed(data, np.eye(data.n_users))


def test_non_finite_ratings_are_counted_and_named_by_raw_ids():
    frame = pd.DataFrame({"u": ["a", "a", "b", "b"], "i": ["x", "y", "x", "y"],
                          "r": [3.0, np.nan, 4.0, np.inf]})
    data = Dataset.load_from_df(frame, Reader(rating_scale=(1, 5))).build_full_trainset()
    with pytest.raises(ValueError, match=r"user 'a' for item 'y' is nan \(and 1 more\)"):
        PrivateKNN().fit(data)


# ----------------------------------------------------------- 9. divergence, degenerate scale
def test_a_diverging_learning_rate_is_refused_naming_lr(synthetic):
    with pytest.raises(ValueError, match=r"lr=1e\+300: the pairwise model diverged"):
        MallowsRanker(lr=1e300, random_state=0).fit(synthetic)


def test_a_refused_fit_leaves_the_ranker_as_it_was(synthetic):
    model = MallowsRanker(n_epochs=2, random_state=0).fit(synthetic)
    testset = synthetic.build_testset()[:20]
    before = [p.est for p in model.test(testset)]
    model.lr = 1e300
    with pytest.raises(ValueError, match="lr="):
        model.fit(synthetic)
    assert [p.est for p in model.test(testset)] == before


@pytest.mark.parametrize("name", sorted(MODELS))
def test_a_degenerate_rating_scale_is_refused_at_fit(name):
    data = trainset([3] * 6, scale=(3, 3))
    with pytest.raises(ValueError, match=r"rating_scale \(3, 3\): the scale must be two "
                                         "finite numbers"):
        MODELS[name]().fit(data)


# ----------------------------------------------------------- 10. empty top-N frames
@pytest.mark.parametrize("metric", [metrics.precision_at_k, metrics.recall_at_k,
                                    metrics.map_at_k])
def test_an_empty_top_n_frame_raises_as_empty_predictions(synthetic, metric):
    model = PrivateKNN(random_state=0).fit(synthetic)
    with pytest.raises(ValueError, match="predictions is empty") as from_list:
        metric(model.test([]))
    for testset in (synthetic.build_testset(), []):
        with pytest.raises(ValueError, match="predictions is empty") as from_frame:
            metric(model.recommend_batch([], 5), testset=testset)
        assert str(from_frame.value) == str(from_list.value)


@pytest.mark.parametrize("metric", [metrics.precision_at_k, metrics.recall_at_k])
def test_a_frame_with_no_user_to_score_raises(metric):
    frame = pd.DataFrame({"uid": [1], "iid": [2], "rank": [3], "est": [4.0]})
    with pytest.raises(ValueError, match="no user to score"):
        metric(frame, k=2, testset=[(1, 2, 1.0)])


# ----------------------------------------------------------- 12. testset rows, sensitivity
@pytest.mark.parametrize("name", sorted(MODELS))
def test_a_testset_row_of_other_than_three_values_is_refused(synthetic, name):
    """Surprise's AlgoBase.test raises on a 5-tuple row; so does every model, naming
    `testset` (also where the rows have mixed lengths, which zip would truncate)."""
    model = MODELS[name]().fit(synthetic)
    rows = synthetic.build_testset()[:3]
    for testset in ([row + (0, 1) for row in rows], rows[:2] + [rows[2] + (0, 1)],
                    [row[:2] for row in rows]):
        with pytest.raises(ValueError, match=r"testset must hold \(uid, iid, r_ui\) rows"):
            model.test(testset)
    with pytest.raises(TypeError, match="testset must hold"):
        model.test([5])
    with pytest.raises(TypeError, match="testset must be an iterable"):
        model.test(5)
    assert [p.est for p in model.test(iter(rows))] == [p.est for p in model.test(rows)]


@pytest.mark.parametrize("selector", ["topk", "ppns"])
def test_fit_precomputed_refuses_a_sensitivity_of_the_wrong_length(synthetic, selector):
    reference = PrivateKNN(selector="ppns", random_state=0).fit(synthetic)
    model = PrivateKNN(selector=selector, random_state=0)
    for wrong in (reference.sensitivity_[:5], reference.sensitivity_[:, None], 1.0):
        with pytest.raises(ValueError, match=r"sensitivity must hold one RS per user, "
                                             r"shape \(30,\)"):
            model.fit_precomputed(synthetic, reference.sim, wrong)
    with pytest.raises(TypeError, match="sensitivity must be an array of real numbers"):
        model.fit_precomputed(synthetic, reference.sim, "x")
    model.fit_precomputed(synthetic, reference.sim, reference.sensitivity_)
    assert model.sensitivity_.shape == (30,)
