"""Ranking metrics against brute-force references and scipy."""

from __future__ import annotations

import copy
import itertools
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats
from strategies import fuzz, raises_naming
from surprise.prediction_algorithms.predictions import Prediction

import dprec.evaluation.metrics as metrics
from dprec.evaluation.metrics import kendall_tau, ndcg_at_k, pairwise_accuracy


def _random_predictions(seed: int, n_users: int = 30, max_items: int = 25) -> list[Prediction]:
    rng = np.random.default_rng(seed)
    preds = []
    for u in range(n_users):
        n = int(rng.integers(1, max_items))
        true = rng.integers(1, 6, size=n).astype(float)
        # coarse estimates: plenty of ties, some correlation with the truth
        est = np.round(true + rng.normal(0, 1.2, size=n))
        for i in range(n):
            preds.append(Prediction(f"u{u}", f"i{i}", float(true[i]), float(est[i]), {}))
    order = rng.permutation(len(preds))  # users interleaved
    return [preds[j] for j in order]


def _by_user(preds):
    groups: dict = {}
    for p in preds:
        groups.setdefault(p.uid, []).append((p.r_ui, p.est))
    return groups


def _brute_pairs(preds):
    per_user = {}
    for uid, rows in _by_user(preds).items():
        score = count = 0.0
        for (r1, e1), (r2, e2) in itertools.combinations(rows, 2):
            if r1 == r2:
                continue
            count += 1
            score += 0.5 if e1 == e2 else float((e1 - e2) * (r1 - r2) > 0)
        per_user[uid] = (score, count)
    return per_user


def _brute_ndcg(preds, k, gain=lambda r: r):
    values = []
    for rows in _by_user(preds).values():
        disc = [1 / math.log2(p + 2) if p < k else 0.0 for p in range(len(rows))]
        ideal = sum(gain(r) * d for r, d in zip(sorted((r for r, _ in rows), reverse=True),
                                                disc, strict=True))
        if ideal == 0:
            continue
        # expected DCG over all orders of the ties in the estimates
        total = 0.0
        perms = [p for p in itertools.permutations(range(len(rows)))
                 if all(rows[p[a]][1] >= rows[p[a + 1]][1] for a in range(len(p) - 1))]
        for p in perms:
            total += sum(gain(rows[j][0]) * disc[pos] for pos, j in enumerate(p))
        values.append(total / len(perms) / ideal)
    return float(np.mean(values))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_pairwise_accuracy_matches_brute_force(seed):
    preds = _random_predictions(seed)
    per_user = _brute_pairs(preds)
    pooled = sum(s for s, _ in per_user.values()) / sum(c for _, c in per_user.values())
    user = np.mean([s / c for s, c in per_user.values() if c > 0])
    assert pairwise_accuracy(preds) == pytest.approx(pooled, rel=1e-12)
    assert pairwise_accuracy(preds, average="user") == pytest.approx(user, rel=1e-12)


def test_pairwise_accuracy_known_values():
    p = [Prediction("a", i, r, e, {}) for i, (r, e) in
         enumerate([(5, 4.0), (3, 3.0), (1, 3.0), (4, 4.0)])]
    # pairs with distinct truth: (5,3) ok, (5,1) ok, (5,4) tie .5, (3,1) tie .5, (3,4) ok,
    # (1,4) ok  -> 5 / 6
    assert pairwise_accuracy(p) == pytest.approx(5 / 6)
    perfect = [Prediction("a", i, float(r), float(r) / 10, {}) for i, r in enumerate([1, 2, 5])]
    reverse = [Prediction("b", i, float(r), -float(r), {}) for i, r in enumerate([1, 2, 5, 5])]
    assert pairwise_accuracy(perfect) == 1.0
    assert pairwise_accuracy(reverse) == 0.0
    # pooled weighs users by their pairs (3 and 5), user-mean weighs users equally
    assert pairwise_accuracy(perfect + reverse) == pytest.approx(3 / 8)
    assert pairwise_accuracy(perfect + reverse, average="user") == pytest.approx(0.5)


def test_blocks_do_not_change_results(monkeypatch):
    preds = _random_predictions(3, n_users=40)
    expected = (pairwise_accuracy(preds), kendall_tau(preds))
    monkeypatch.setattr(metrics, "_PAIR_BLOCK", 7)
    assert (pairwise_accuracy(preds), kendall_tau(preds)) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("seed", [0, 4])
def test_kendall_tau_matches_scipy(seed):
    preds = _random_predictions(seed)
    taus = []
    for rows in _by_user(preds).values():
        r, e = np.array(rows).T
        if len(set(r)) < 2:
            continue
        taus.append(0.0 if len(set(e)) < 2 else stats.kendalltau(r, e).statistic)
    assert kendall_tau(preds) == pytest.approx(np.mean(taus), rel=1e-12)


def test_ndcg_matches_brute_force_with_ties():
    preds = _random_predictions(5, n_users=12, max_items=7)
    for k in (1, 3, 10):
        assert ndcg_at_k(preds, k=k) == pytest.approx(_brute_ndcg(preds, k), rel=1e-12)
    assert ndcg_at_k(preds, k=3, gains="exponential") == pytest.approx(
        _brute_ndcg(preds, 3, gain=lambda r: 2**r - 1), rel=1e-12)


def test_ndcg_perfect_and_order_invariant():
    rng = np.random.default_rng(6)
    true = rng.integers(1, 6, 40).astype(float)
    perfect = [Prediction("u", i, t, t + 0.01 * i / 40, {}) for i, t in enumerate(true)]
    assert ndcg_at_k(perfect, k=10) == pytest.approx(1.0)
    preds = _random_predictions(7)
    shuffled = [preds[j] for j in rng.permutation(len(preds))]
    assert ndcg_at_k(shuffled) == ndcg_at_k(preds)
    worst = [Prediction("u", i, t, -t, {}) for i, t in enumerate([1.0, 5.0, 3.0])]
    assert ndcg_at_k(worst, k=1) == pytest.approx(1 / 5)


def test_metric_validation():
    good = [Prediction("u", 1, 5.0, 4.0, {}), Prediction("u", 2, 3.0, 2.0, {})]
    for fn in (pairwise_accuracy, kendall_tau, ndcg_at_k):
        with pytest.raises(ValueError, match="empty"):
            fn([])
        with pytest.raises(ValueError, match="r_ui"):
            fn([Prediction("u", 1, None, 4.0, {})] + good)
        with pytest.raises(ValueError, match="est"):
            fn([Prediction("u", 1, 4.0, float("nan"), {})] + good)
        with pytest.raises(TypeError, match="predictions"):
            fn("abc")
    with pytest.raises(ValueError, match="average"):
        pairwise_accuracy(good, average="macro")
    with pytest.raises(ValueError, match="k"):
        ndcg_at_k(good, k=0)
    with pytest.raises(ValueError, match="gains"):
        ndcg_at_k(good, gains="log")
    same = [Prediction("u", i, 4.0, float(i), {}) for i in range(3)]
    with pytest.raises(ValueError, match="different true ratings"):
        pairwise_accuracy(same)
    with pytest.raises(ValueError, match="different true ratings"):
        kendall_tau(same)
    with pytest.raises(ValueError, match="negative"):
        ndcg_at_k([Prediction("u", 1, -2.0, 1.0, {})])


# ------------------------------------------------------------------ top-N metrics
def faq_precision_recall(predictions, k, threshold):
    """Surprise's FAQ code (docs: "How to compute precision@k and recall@k"), verbatim."""
    from collections import defaultdict

    user_est_true = defaultdict(list)
    for uid, _, true_r, est, _ in predictions:
        user_est_true[uid].append((est, true_r))
    precisions, recalls = {}, {}
    for uid, user_ratings in user_est_true.items():
        user_ratings.sort(key=lambda x: x[0], reverse=True)
        n_rel = sum((true_r >= threshold) for (_, true_r) in user_ratings)
        n_rec_k = sum((est >= threshold) for (est, _) in user_ratings[:k])
        n_rel_and_rec_k = sum(((true_r >= threshold) and (est >= threshold))
                              for (est, true_r) in user_ratings[:k])
        precisions[uid] = n_rel_and_rec_k / n_rec_k if n_rec_k != 0 else 0
        recalls[uid] = n_rel_and_rec_k / n_rel if n_rel != 0 else 0
    return np.mean(list(precisions.values())), np.mean(list(recalls.values()))


def reference_map(predictions, k, threshold):
    by_user = {}
    for uid, _, true_r, est, _ in predictions:
        by_user.setdefault(uid, []).append((est, true_r))
    scores = []
    for rows in by_user.values():
        rows.sort(key=lambda x: x[0], reverse=True)
        n_rel = sum(t >= threshold for _, t in rows)
        if n_rel == 0:
            continue
        hits, total = 0, 0.0
        for p, (_, t) in enumerate(rows[:k], 1):
            if t >= threshold:
                hits += 1
                total += hits / p
        scores.append(total / min(k, n_rel))
    return np.mean(scores)


@pytest.mark.parametrize("k", [1, 3, 10])
@pytest.mark.parametrize("threshold", [3.5, 4.0])
def test_precision_recall_map_match_plain_python(k, threshold):
    rng = np.random.default_rng(k)
    preds = [Prediction(f"u{u}", f"i{i}", float(rng.integers(1, 6)),
                        float(np.round(rng.uniform(1, 5), 1)), {})
             for u in range(40) for i in range(rng.integers(1, 25))]
    precision, recall = faq_precision_recall(preds, k, threshold)
    assert metrics.precision_at_k(preds, k, threshold) == pytest.approx(precision, abs=1e-12)
    assert metrics.recall_at_k(preds, k, threshold) == pytest.approx(recall, abs=1e-12)
    expected_map = reference_map(preds, k, threshold)
    assert metrics.map_at_k(preds, k, threshold) == pytest.approx(expected_map, abs=1e-12)


def test_top_n_lists_are_scored_against_the_testset():
    top = pd.DataFrame({"uid": ["a", "a", "a", "b", "b"], "rank": [1, 2, 3, 1, 2],
                        "iid": ["x", "y", "z", "x", "w"], "est": [5, 4, 3, 5, 4]})
    testset = [("a", "y", 5.0), ("a", "q", 4.0), ("a", "z", 2.0), ("b", "v", 1.0),
               ("c", "x", 5.0)]
    # a: y relevant at rank 2 of 3, 2 relevant items (y, q); b: none relevant; c: no list
    assert metrics.precision_at_k(top, k=3, testset=testset) == pytest.approx((1 / 3 + 0 + 0) / 3)
    assert metrics.recall_at_k(top, k=3, testset=testset) == pytest.approx((1 / 2 + 0 + 0) / 3)
    assert metrics.precision_at_k(top, k=1, testset=testset) == 0.0
    # AP@3: a: (1/2) / min(3, 2); c: 0 over its 1 relevant item; b has none
    assert metrics.map_at_k(top, k=3, testset=testset) == pytest.approx((0.25 + 0.0) / 2)
    assert metrics.coverage(top, n_items=8) == 4 / 8
    with pytest.raises(ValueError, match="testset"):
        metrics.precision_at_k(top)
    with pytest.raises(ValueError, match="k"):
        metrics.recall_at_k(top, k=0, testset=testset)
    with pytest.raises(TypeError, match="recommendations"):
        metrics.coverage([("a", "x")], 3)


def test_top_n_lists_are_scored_against_held_out_interactions():
    """Binary relevance: every pair of the testset is relevant with threshold=None, and
    NDCG@k of a frame, by hand."""
    top = pd.DataFrame({"uid": ["a", "a", "a", "b", "b"], "rank": [1, 2, 3, 1, 2],
                        "iid": ["x", "y", "z", "x", "w"], "est": [5, 4, 3, 5, 4]})
    held_out = [("a", "y", 1.0), ("a", "q", 1.0), ("b", "w", 1.0), ("c", "x", 1.0)]
    # a: y at rank 2 of 3 shown, relevant {y, q}; b: w at rank 2 of 2 shown; c: no list
    assert metrics.precision_at_k(top, 3, None, held_out) == pytest.approx((1 / 3 + 1 / 2) / 3)
    assert metrics.recall_at_k(top, 3, None, held_out) == pytest.approx((1 / 2 + 1) / 3)
    d2 = 1 / math.log2(3)                          # the discount of rank 2
    assert metrics.ndcg_at_k(top, 3, testset=held_out) == pytest.approx(
        (d2 / (1 + d2) + d2 / 1 + 0) / 3)
    assert metrics.ndcg_at_k(top, 1, testset=held_out) == 0.0
    # with a threshold the testset's ratings decide: only (a, q) is relevant at 4
    rated = [("a", "y", 3.0), ("a", "q", 5.0), ("b", "w", 1.0)]
    assert metrics.ndcg_at_k(top, 3, threshold=4.0, testset=rated) == 0.0
    assert metrics.recall_at_k(top, 3, 4.0, rated) == 0.0
    # at 3, a's y and q are relevant (b has none: skipped)
    assert metrics.ndcg_at_k(top, 3, threshold=3.0, testset=rated) == pytest.approx(d2 / (1 + d2))
    raises_naming(lambda: metrics.recall_at_k(_random_predictions(0), 3, None), "threshold")
    raises_naming(lambda: metrics.ndcg_at_k(_random_predictions(0), testset=held_out),
                  "testset")
    raises_naming(lambda: metrics.ndcg_at_k(top), "testset")
    with pytest.raises(ValueError, match="no user has a relevant item"):
        metrics.ndcg_at_k(top, 3, threshold=9.0, testset=rated)


def test_recommendations_rank_every_item_and_skip_what_was_rated(small_data):
    from dprec import PrivateKNN

    trainset = small_data.build_full_trainset()
    algo = PrivateKNN(k=10, verbose=False).fit(trainset)
    uids = [trainset.to_raw_uid(u) for u in range(5)]
    top = algo.recommend_batch(uids, n=7, neighbour_shrinkage=0)   # ranked by predictions
    assert top.groupby("uid").size().tolist() == [7] * 5
    for uid in uids:
        rows = top[top["uid"] == uid]
        rated = {trainset.to_raw_iid(i) for i, _ in trainset.ur[trainset.to_inner_uid(uid)]}
        assert not rated & set(rows["iid"])
        assert rows["est"].is_monotonic_decreasing and rows["rank"].tolist() == list(range(1, 8))
        # the list is the best of every unrated item's prediction
        preds = [algo.predict(uid, trainset.to_raw_iid(i)) for i in trainset.all_items()
                 if trainset.to_raw_iid(i) not in rated]
        best = sorted((p.est for p in preds if not p.details["was_impossible"]), reverse=True)
        np.testing.assert_allclose(rows["est"], best[:7], rtol=0, atol=1e-12)
    assert algo.recommend(uids[0], n=7, neighbour_shrinkage=0) == list(
        zip(top["iid"][:7], top["est"][:7]))
    with pytest.raises(ValueError, match="unknown user"):
        algo.recommend("nobody")


# ---------------------------------------------------------------- properties (hypothesis)
@fuzz(150)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(1, 5), st.floats(0.0, 6.0)),
                min_size=1, max_size=30), st.integers(1, 12))
def test_ranking_metrics_of_any_small_predictions(rows, k):
    predictions = [Prediction(f"u{u}", f"i{n}", float(r), est, {})
                   for n, (u, r, est) in enumerate(rows)]
    before = copy.deepcopy(predictions)
    has_pair = any(len({r for u2, r, _ in rows if u2 == u}) > 1 for u, _, _ in rows)
    for function in (metrics.pairwise_accuracy, metrics.kendall_tau):
        if has_pair:
            value = function(predictions)
            assert math.isfinite(value)
            assert (0.0 <= value <= 1.0) if function is metrics.pairwise_accuracy \
                else (-1.0 - 1e-12 <= value <= 1.0 + 1e-12)
        else:
            raises_naming(lambda f=function: f(predictions), "true ratings")
    value = metrics.ndcg_at_k(predictions, k=k)
    assert 0.0 <= value <= 1.0
    assert predictions == before
    raises_naming(lambda: metrics.ndcg_at_k(predictions, k=0), "k")
    raises_naming(lambda: metrics.pairwise_accuracy(predictions, average="mean"), "average")
    raises_naming(lambda: metrics.pairwise_accuracy([]), "predictions")
    raises_naming(lambda: metrics.pairwise_accuracy("abc"), "predictions")
