"""Ranking metrics against brute-force references and scipy."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats
from surprise.prediction_algorithms.predictions import Prediction

import dprec.metrics as metrics
from dprec.metrics import kendall_tau, ndcg_at_k, pairwise_accuracy


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
