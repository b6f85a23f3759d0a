"""LensKit's explicit kNN in dprec: `min_sim`, `fallback="baseline"`, and a plain-Python
reference of LensKit's formulas that `PrivateKNNWithMeans` must equal on every pair.

The reference is LensKit 2025's `ItemKNNScorer` and `UserKNNScorer` with
`feedback="explicit"` (lkpy `src/accel/knn/item_score.rs`, `user_score.rs`,
`accum.rs`), with the denominator $\\sum |s|$ of lkpy 0.14 and Java LensKit for a
negative `min_sim`, and the `BiasScorer` fallback of LensKit's rating-prediction
pipelines (`BiasModel.learn`, damping $\\beta_u$, $\\beta_i$).  LensKit itself is not
imported: dprec never requires it.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from surprise import KNNWithMeans
from surprise.model_selection import KFold

from dprec import PrivateKNN, PrivateKNNWithMeans
from dprec.audit.data_usage import data_usage
from dprec.utils._surprise import inner_ids

#: (k, min_nbrs, min_sim, (β_u, β_i)): LensKit's defaults (k 20, min_sim 1e-6, no damping),
#: a stricter neighbourhood with a damped bias, and old LensKit's negative min_sim
SETTINGS = {"lenskit": (20, 1, 1e-6, (0.0, 0.0)), "strict": (10, 3, 0.2137, (5.0, 2.0)),
            "negative": (10, 2, -0.3, (0.0, 0.0))}


def bias_model(trainset, damping: tuple[float, float]) -> tuple[float, dict, dict]:
    """LensKit's `BiasModel.learn`: $b_g$ the mean rating,
    $b_i = \\sum_{R_i} (r - b_g) / (|R_i| + \\beta_i)$, then
    $b_u = \\sum_{R_u} (r - b_g - b_i) / (|R_u| + \\beta_u)$."""
    beta_u, beta_i = damping
    mu = trainset.global_mean
    b_i = {i: sum(r - mu for _, r in trainset.ir[i]) / (len(trainset.ir[i]) + beta_i)
           for i in trainset.all_items()}
    b_u = {u: sum(r - mu - b_i[i] for i, r in trainset.ur[u]) / (len(trainset.ur[u]) + beta_u)
           for u in trainset.all_users()}
    return mu, b_u, b_i


def lenskit_scores(trainset, sim: np.ndarray, users, items, *, k: int, min_nbrs: int,
                   min_sim: float, damping: tuple[float, float], user_based: bool):
    """LensKit's explicit kNN score of each pair of inner ids (`-1`: unknown), and whether
    it came from the bias fallback.

    User-based: the neighbours of $u$ are the other users who rated $i$ with
    $s_{uv} \\ge$ `min_sim`, the `k` most similar; the score is
    $\\mu_u + \\sum_v s_{uv}(r_{vi} - \\mu_v) / \\sum_v |s_{uv}|$.  Item-based: the items
    $j \\ne i$ that $u$ rated with $s_{ij} \\ge$ `min_sim`, the `k` most similar, and
    $\\mu_i + \\sum_j s_{ij}(r_{uj} - \\mu_j) / \\sum_j |s_{ij}|$.  Fewer than
    `min_nbrs` neighbours, or an unknown user or item: the bias $b_g + b_u + b_i$.
    (LensKit breaks ties between equal similarities in no stated order; here the
    earlier candidate, in the trainset's order, comes first, as in Surprise.)"""
    mu, b_u, b_i = bias_model(trainset, damping)
    rows = trainset.ur if user_based else trainset.ir     # the rows whose means centre
    means = {x: np.mean([r for _, r in rows[x]]) for x in rows}
    scores, fell_back, negative = [], [], 0
    for u, i in zip(users.tolist(), items.tolist()):
        bias = mu + b_u.get(u, 0.0) + b_i.get(i, 0.0)
        if u < 0 or i < 0:
            scores.append(bias)
            fell_back.append(True)
            continue
        target, candidates = (u, trainset.ir[i]) if user_based else (i, trainset.ur[u])
        found = [(sim[target, x], order, r - means[x])
                 for order, (x, r) in enumerate(candidates)
                 if x != target and sim[target, x] >= min_sim]
        neighbours = sorted(found, key=lambda t: (-t[0], t[1]))[:k]
        if len(neighbours) < min_nbrs:
            scores.append(bias)
            fell_back.append(True)
            continue
        negative += any(s < 0 for s, _, _ in neighbours)
        scores.append(means[target] + sum(s * d for s, _, d in neighbours)
                      / sum(abs(s) for s, _, _ in neighbours))
        fell_back.append(False)
    return np.array(scores), np.array(fell_back), negative


def random_similarities(n: int, seed: int) -> np.ndarray:
    """A symmetric matrix of similarities in (-1, 1), no two alike (no ties)."""
    upper = np.triu(np.random.default_rng(seed).uniform(-1.0, 1.0, (n, n)), 1)
    return upper + upper.T + np.eye(n)


# a negative min_sim on random similarities only: a similarity of exactly 0 (pearson's, of
# no co-rated item) takes one of dprec's k slots (Surprise's k most similar, chosen before
# those at or below min_sim are dropped) and never contributes, where old LensKit's sparse
# similarities hold no zero
@pytest.mark.parametrize("setting, source", [
    (setting, source) for setting in sorted(SETTINGS)
    for source in (("random",) if setting == "negative" else ("random", "cosine", "pearson"))])
@pytest.mark.parametrize("user_based", [True, False])
def test_means_with_min_sim_and_baseline_fallback_is_lenskits_knn(split, setting, source,
                                                                  user_based, kernel_path):
    """`PrivateKNNWithMeans(k, min_k=min_nbrs, min_sim=m, fallback="baseline")`, its
    baselines `bsl_options={"method": "als", "n_epochs": 1, "reg_u": β_u, "reg_i": β_i}`
    (LensKit's damped biases), equals the reference on every pair, unknown users and
    items included, clipped to the rating scale as Surprise clips."""
    trainset, testset = split
    k, min_nbrs, min_sim, (beta_u, beta_i) = SETTINGS[setting]
    some_user, some_item = trainset.to_raw_uid(0), trainset.to_raw_iid(0)
    testset = [*testset, ("new user", some_item, 3.0), (some_user, "new item", 3.0),
               ("new user", "new item", 3.0)]
    model = PrivateKNNWithMeans(
        k=k, min_k=min_nbrs, min_sim=min_sim, fallback="baseline",
        bsl_options={"method": "als", "n_epochs": 1, "reg_u": beta_u, "reg_i": beta_i},
        sim_options={"name": "cosine" if source == "random" else source,
                     "user_based": user_based}, verbose=False)
    if source == "random":
        n = trainset.n_users if user_based else trainset.n_items
        model.fit_precomputed(trainset, random_similarities(n, seed=k))
    else:
        model.fit(trainset)
    sim = model.sim
    assert not (sim == min_sim).any()          # LensKit's s >= min_sim is dprec's s > min_sim
    _, _, _, users, items = inner_ids(trainset, testset)
    expected, fell_back, negative = lenskit_scores(
        trainset, sim, users, items, k=k, min_nbrs=min_nbrs, min_sim=min_sim,
        damping=(beta_u, beta_i), user_based=user_based)
    predictions = model.test(testset)
    np.testing.assert_allclose([p.est for p in predictions], np.clip(expected, 1, 5),
                               rtol=0, atol=1e-9)
    assert not any(p.details["was_impossible"] for p in predictions)
    assert fell_back[-3:].all() and (~fell_back).sum() > len(testset) / 3
    if setting == "strict":                    # the fallback answered known pairs too
        assert fell_back[:-3].any()
    if setting == "negative":                  # negative similarities contributed
        assert negative > 0


@pytest.mark.parametrize("min_sim", [0.25, -0.25])
def test_the_user_neighbourhood_weighs_its_kept_set_above_min_sim(split, min_sim):
    """User neighbourhood: the members of $u$'s one set (`kneighbors`) who rated $i$ with
    $s \\ne 0$ and $s >$ `min_sim` give $\\mu_u + \\sum s (r - \\mu_v) / \\sum |s|$;
    fewer than `min_k`, the baseline."""
    trainset, testset = split
    model = PrivateKNNWithMeans(k=80, min_k=2, min_sim=min_sim, fallback="baseline",
                                neighbourhood="user", sim_options={"name": "pearson"},
                                verbose=False).fit(trainset)
    _, _, _, users, items = inner_ids(trainset, testset)
    known = (users >= 0) & (items >= 0)
    users, items = users[known], items[known]
    est, _ = model.estimate_arrays(users, items)
    sets, weights = model.kneighbors(np.arange(trainset.n_users))
    rated = [dict(trainset.ir[i]) for i in range(trainset.n_items)]
    means = [np.mean([r for _, r in trainset.ur[u]]) for u in range(trainset.n_users)]
    expected, counted = [], 0
    for u, i in zip(users.tolist(), items.tolist()):
        terms = [(w, rated[i][v] - means[v]) for v, w in zip(sets[u], weights[u])
                 if v in rated[i] and w != 0 and w > min_sim]
        counted += any(w < 0 for w, _ in terms)
        expected.append(means[u] + sum(w * d for w, d in terms) / sum(abs(w) for w, _ in terms)
                        if len(terms) >= 2 else
                        trainset.global_mean + model.bu[u] + model.bi[i])
    np.testing.assert_allclose(est, np.clip(expected, 1, 5), rtol=0, atol=1e-12)
    assert (counted > 0) == (min_sim < 0)


@pytest.mark.parametrize("user_based", [True, False])
def test_min_sim_zero_is_surprises_rule_bit_for_bit(small_data, user_based):
    """`min_sim=0.0` (the default's value): Surprise's $s > 0$ and $\\sum s$, every
    prediction of `KNNWithMeans` bit for bit (the denominators are $\\sum |s|$ now)."""
    trainset, testset = next(KFold(n_splits=3, random_state=0).split(small_data))
    options = {"name": "pearson", "user_based": user_based}
    ours = PrivateKNNWithMeans(k=15, min_k=2, min_sim=0.0, sim_options=options,
                               verbose=False).fit(trainset)
    theirs = KNNWithMeans(k=15, min_k=2, sim_options=dict(options), verbose=False)
    for a, b in zip(theirs.fit(trainset).test(testset), ours.test(testset)):
        assert a.est == b.est and a.details == b.details


@pytest.mark.parametrize("neighbourhood", ["item", "user"])
@pytest.mark.parametrize("prediction, centered", [
    ("basic", False), ("basic", True), ("means", False), ("zscore", False),
    ("baseline", False)])
@pytest.mark.parametrize("user_based", [True, False])
def test_baseline_fallback_answers_only_what_knn_cannot(split, prediction, centered,
                                                       neighbourhood, user_based):
    """`fallback="baseline"`: where fewer than `min_k` neighbours contribute (`min_support`
    zeroes many similarities), or the user or item is unknown, $b_{ui}$ (of what is
    known), `was_impossible=False`; everywhere else the model's own estimate and
    details, bit for bit."""
    trainset, testset = split
    options = {"k": 5, "min_k": 3, "prediction": prediction, "centered": centered,
               "neighbourhood": neighbourhood, "verbose": False,
               "sim_options": {"name": "cosine", "min_support": 4, "user_based": user_based}}
    testset = [*testset, ("new user", trainset.to_raw_iid(0), 3.0)]
    plain = PrivateKNN(**options).fit(trainset).test(testset)
    model = PrivateKNN(fallback="baseline", **options).fit(trainset)
    _, _, _, users, items = inner_ids(trainset, testset)
    bu, bi = np.append(model.bu, 0.0), np.append(model.bi, 0.0)    # [-1]: unknown, 0
    expected = np.clip(trainset.global_mean + bu[users] + bi[items], 1, 5)
    unknown = (users < 0) | (items < 0)
    few = 0
    for p, q, baseline, new in zip(plain, model.test(testset), expected, unknown):
        assert not q.details["was_impossible"]
        if new:
            assert q.est == pytest.approx(baseline, abs=1e-12)
        elif q.details["actual_k"] < 3:
            few += 1
            assert q.est == pytest.approx(baseline, abs=1e-12)
            assert p.details["was_impossible"] == (prediction == "basic")
        else:
            assert q.est == p.est and q.details == p.details
    assert few > 0 and unknown.any()


def test_the_centred_rule_is_the_means_rule_over_abs_similarities(split):
    """Given the same `min_sim`, the papers' centred rule and `prediction="means"` are one
    formula, $\\mu_u + \\sum s (r - \\mu_v) / \\sum |s|$ (with `min_k >= 1` and the
    baseline fallback): bit for bit."""
    trainset, testset = split
    options = {"k": 8, "min_k": 2, "min_sim": -0.2, "fallback": "baseline",
               "sim_options": {"name": "pearson"}, "verbose": False}
    centred = PrivateKNN(centered=True, **options).fit(trainset).test(testset)
    means = PrivateKNNWithMeans(**options).fit(trainset).test(testset)
    assert [p.est for p in centred] == [p.est for p in means]
    assert PrivateKNN(centered=True).check_params().min_sim_ == -math.inf
    assert PrivateKNN().check_params().min_sim_ == 0.0


def test_estimate_rules_lists_the_baseline_fallback(split):
    """`estimate_rules` reads `fallback="baseline"` from one selection, as a model fitted
    with it answers; a basic rule asked of a model with a negative `min_sim` is refused."""
    trainset, testset = split
    _, _, _, users, items = inner_ids(trainset, testset)
    known = (users >= 0) & (items >= 0)
    users, items = users[known], items[known]
    options = {"k": 5, "min_k": 2, "min_sim": -0.1, "prediction": "means",
               "sim_options": {"name": "pearson"}, "verbose": False}
    model = PrivateKNN(**options).fit(trainset)
    [(est, possible)] = model.estimate_rules(users, items, [{"fallback": "baseline"}])
    alone = PrivateKNN(**options, fallback="baseline").fit(trainset)
    expected, expected_possible = alone.estimate_arrays(users, items)
    np.testing.assert_array_equal(est, expected)
    assert possible.all() and expected_possible.all()
    with pytest.raises(ValueError, match=r"min_sim=-0\.1 < 0.*rules\[\]\['prediction'\]"):
        model.estimate_rules(users, items, [{"prediction": "basic"}])


@pytest.mark.parametrize("kwargs, error, needle", [
    ({"min_sim": math.nan}, ValueError, "min_sim must be a finite number"),
    ({"min_sim": math.inf}, ValueError, "min_sim must be a finite number"),
    ({"min_sim": -math.inf, "prediction": "means"}, ValueError, "min_sim must be a finite"),
    ({"min_sim": "0.1"}, TypeError, "min_sim must be a real number"),
    ({"min_sim": True}, TypeError, "min_sim must be a real number"),
    ({"min_sim": -0.5}, ValueError, r"min_sim=-0\.5 < 0 .*prediction='means'"),
    ({"fallback": "bias"}, ValueError,
     r"fallback must be one of \('global_mean', 'user_mean', 'baseline'\), got 'bias'")])
def test_bad_rule_options_are_rejected_naming_them(split, kwargs, error, needle):
    algo = PrivateKNN(**kwargs, verbose=False)
    with pytest.raises(error, match=needle):
        algo.check_params()
    with pytest.raises(error, match=needle):
        algo.fit(split[0])


def test_baseline_fallback_claims_nothing_more(split):
    """The baselines read every rating: the report covers the predictions no more than
    with Surprise's fallback (not at all), with the same entries."""
    trainset, _ = split
    options = {"k": 5, "selector": "ppns", "epsilon": 1.0, "neighbourhood": "user",
               "verbose": False}
    reports = [PrivateKNN(fallback=fallback, **options).fit(trainset).privacy_report()
               for fallback in ("global_mean", "baseline")]
    assert reports[0].entries == reports[1].entries
    assert reports[0].outputs == reports[1].outputs
    [predictions] = [o for o in reports[1].outputs if o.name.startswith("predictions")]
    assert not predictions.covered_by and "baselines" in predictions.gap


def test_data_usage_counts_the_neighbours_above_min_sim(split):
    """`data_usage` counts the neighbours that contribute under `min_sim` (their sum is
    Σ actual_k), and with λ = ∞ a baseline fallback still reads how many do."""
    trainset, testset = split
    *_, users, items = inner_ids(trainset, testset)
    known = (users >= 0) & (items >= 0)
    users, items = users[known], items[known]
    options = {"k": 7, "min_k": 2, "prediction": "means", "sim_options": {"name": "pearson"},
               "verbose": False}
    for min_sim in (0.3, -0.3):
        algo = PrivateKNN(min_sim=min_sim, **options).fit(trainset)
        usage = data_usage(algo, users, items)
        actual_k = [p.details["actual_k"] for p in algo.test(testset) if "actual_k" in p.details]
        assert usage.sum() == sum(actual_k) > 0
        shrunk = PrivateKNN(min_sim=min_sim, fallback="baseline", neighbour_shrinkage=math.inf,
                            **options).fit(trainset)
        np.testing.assert_array_equal(data_usage(shrunk, users, items), usage)
    options["prediction"] = "baseline"
    shrunk = PrivateKNN(fallback="baseline", neighbour_shrinkage=math.inf, **options)
    assert not data_usage(shrunk.fit(trainset), users, items).any()
