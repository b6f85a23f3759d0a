"""Neighbour selectors: their distributions, guarantees and Surprise integration."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats
from strategies import fuzz, raises_naming
from surprise import dump
from surprise.model_selection import GridSearchCV, KFold, cross_validate

from dprec import PrivateKNN
from dprec.accountant.ledger import Status
from dprec.mechanisms import laplace_epsilon
from dprec.selectors import (
    PNCF,
    PPNS,
    CorrectedPNCF,
    Probabilistic,
    QueryNoise,
    TopK,
    ppns_schedule,
)
from dprec.selectors.base import mask_to_positions, top_by_key
from dprec.similarity.exact import (
    change_bound,
    exact_similarity,
    exact_similarity_and_sums,
    recommendation_aware_sensitivity,
)

PRIVATE = ["pncf", "ppns"]
RANDOMISED = ["probabilistic", *PRIVATE]


def batch(sims_row, n_rows, seed=0):
    """The same sorted candidate row for ``n_rows`` independent queries."""
    sims = np.tile(np.sort(np.asarray(sims_row, dtype=float))[::-1], (n_rows, 1))
    n_valid = np.full(n_rows, sims.shape[1])
    return sims, n_valid, QueryNoise(seed, (np.arange(n_rows),)), np.ones(n_rows)


# ------------------------------------------------------------------ distributions
def test_probabilistic_frequencies_are_proportional_to_weights():
    sims, n_valid, noise, _ = batch([0.9, 0.6, 0.3, 0.1, 0.0005], 40_000)
    chosen = Probabilistic(floor=0.05).select(sims, n_valid, 1, noise).positions[:, 0]
    weights = np.maximum(sims[0], 0.05)
    counts = np.bincount(chosen, minlength=5)
    assert stats.chisquare(counts, weights / weights.sum() * counts.sum()).pvalue > 1e-3
    # and the test has power: uniform weights are rejected
    assert stats.chisquare(counts).pvalue < 1e-6


def test_ppns_never_returns_the_exact_top_k_and_follows_the_schedule():
    k, p = 5, 0.8  # p = (k-1)/k, the largest p allowed
    rng = np.random.default_rng(1)
    sims, n_valid, noise, rs = batch(rng.random(23), 10_000)
    positions = PPNS(epsilon=1.0, p=p).select(sims, n_valid, k, noise, rs).positions
    assert (positions >= 0).all()
    as_sets = np.sort(positions, axis=1)
    assert not (as_sets == np.arange(k)).all(axis=1).any()
    partitions = positions // k
    per_partition = np.stack([(partitions == j).sum(axis=1) for j in range(5)], axis=1)
    schedule = ppns_schedule(k, p)  # [4]
    np.testing.assert_array_equal(per_partition[:, :len(schedule)], np.broadcast_to(
        schedule, (len(positions), len(schedule))))
    assert (per_partition[:, len(schedule):].sum(axis=1) == 1).all()  # the last neighbour


def test_ppns_gives_every_candidate_a_positive_probability():
    k = 5
    sims, n_valid, noise, rs = batch(np.linspace(1, 0, 30), 10_000, seed=3)
    positions = PPNS(epsilon=1.0, p=0.5).select(sims, n_valid, k, noise, rs).positions
    counts = np.bincount(positions.ravel(), minlength=30)
    assert (counts > 0).all()
    # exactly ceil(p k) neighbours from partition 1 when it holds k candidates
    assert ((positions < k).sum(axis=1) == np.ceil(0.5 * k)).all()


def test_ppns_within_partition_draws_follow_the_exponential_weights():
    k, eps = 4, 40.0
    sims_row = [1.0, 0.7, 0.4, 0.1] + [0.05] * 12  # four partitions of k = 4
    sims, n_valid, noise, rs = batch(sims_row, 40_000, seed=5)
    positions = PPNS(epsilon=eps, p=0.25).select(sims, n_valid, k, noise, rs).positions
    first = positions[:, 0]  # schedule [1, 1, 1]: one draw from partition 1
    assert ((first >= 0) & (first < k)).all()
    weights = np.exp(eps * np.asarray(sims_row[:k]) / (4 * k))
    counts = np.bincount(first, minlength=k)
    assert stats.chisquare(counts, weights / weights.sum() * len(first)).pvalue > 1e-3


def test_pncf_respects_the_truncation_band():
    k, eps, rho = 3, 2000.0, 0.5
    sims_row = np.array([0.99, 0.98, 0.9, 0.7, 0.69, 0.68, 0.67, 0.2, 0.1, 0.05])
    sims, n_valid, noise, rs = batch(sims_row, 5_000, seed=2)
    selector = PNCF(epsilon=eps, rho=rho)
    sim_k, lam = selector.truncation(sims, n_valid, k, rs)
    assert 0 < lam[0] < sim_k[0]
    positions = selector.select(sims, n_valid, k, noise, rs).positions
    chosen_sims = sims_row[positions]
    assert (chosen_sims >= sim_k[0] - lam[0]).all()          # never below the band
    above = np.flatnonzero(sims_row >= sim_k[0] + lam[0])
    assert len(above) > 0
    assert all(np.isin(above, row).all() for row in positions)  # always above it
    band = np.flatnonzero((sims_row < sim_k[0] + lam[0]) & (sims_row >= sim_k[0] - lam[0]))
    assert len(np.unique(positions[~np.isin(positions, above)])) == len(band)  # all drawn


@pytest.mark.parametrize("epsilon", [1e7])
def test_large_epsilon_gives_the_deterministic_limits(epsilon):
    k = 4
    sims, n_valid, noise, rs = batch(np.linspace(1, 0.01, 17), 200)
    pncf = PNCF(epsilon=epsilon).select(sims, n_valid, k, noise, rs).positions
    np.testing.assert_array_equal(np.sort(pncf, axis=1), np.tile(np.arange(k), (200, 1)))
    ppns = PPNS(epsilon=epsilon, p=0.5).select(sims, n_valid, k, noise, rs).positions
    # schedule [2, 1]: the top 2 of partition 1, the top 1 of partition 2, the top of partition 3
    np.testing.assert_array_equal(np.sort(ppns, axis=1), np.tile([0, 1, 4, 8], (200, 1)))


def test_small_epsilon_spreads_the_choices():
    k = 4
    sims, n_valid, noise, rs = batch(np.linspace(1, 0.01, 17), 2000)
    pncf = PNCF(epsilon=0.1).select(sims, n_valid, k, noise, rs).positions
    assert (np.sort(pncf, axis=1) != np.arange(k)).any(axis=1).mean() > 0.5


def test_topk_object_equals_the_name(split):
    trainset, testset = split
    by_name = PrivateKNN(k=10, sim_options={"name": "cosine"}).fit(trainset).test(testset)
    by_object = PrivateKNN(k=10, sim_options={"name": "cosine"},
                           selector=TopK()).fit(trainset).test(testset)
    assert by_name == by_object


# ---------------------------------------------------------------- sensitivity
@pytest.mark.parametrize("name", ["cosine", "msd", "pearson"])
@pytest.mark.parametrize("min_support", [1, 2])
@pytest.mark.parametrize("density, low", [(0.55, 1), (0.9, 1), (0.8, -2)])
def test_recommendation_aware_sensitivity_is_exact(name, min_support, density, low):
    rng = np.random.default_rng(0)
    values = rng.integers(low, 6, size=(11, 12))
    dense = np.where(values == 0, 1, values) * (rng.random((11, 12)) < density)
    ratings = sp.csr_matrix(dense.astype(float))
    sim, sums = exact_similarity_and_sums(name, ratings, min_support)
    fast = recommendation_aware_sensitivity(name, ratings, sim, sums, min_support, floor=0.0)
    brute = np.zeros(len(dense))
    for item in range(dense.shape[1]):
        without = dense.copy()
        without[:, item] = 0
        sim_without = exact_similarity(name, sp.csr_matrix(without.astype(float)), min_support)
        rated = dense[:, item] != 0
        change = np.abs(sim - sim_without) * np.outer(rated, rated)
        np.fill_diagonal(change, 0)
        brute = np.maximum(brute, change.max(axis=1))
    np.testing.assert_allclose(fast, brute, atol=1e-12)
    if density == 0.55 and name != "pearson":  # both passes run: users settled and not
        settled = (brute >= change_bound(name, ratings.data)).sum()
        assert 0 < settled < len(dense)


# ------------------------------------------------------------ model integration
@pytest.mark.parametrize("neighbourhood", ["item", "user"])
@pytest.mark.parametrize("selector", RANDOMISED)
def test_one_query_one_draw(split, tmp_path, selector, neighbourhood):
    trainset, testset = split
    algo = PrivateKNN(k=8, sim_options={"name": "cosine"}, selector=selector, epsilon=1.0,
                      neighbourhood=neighbourhood, random_state=7).fit(trainset)
    batch_predictions = algo.test(testset[:200])
    assert [algo.predict(u, i, r) for u, i, r in testset[:200]] == batch_predictions
    assert algo.test(testset[:200]) == batch_predictions  # asking again reveals nothing new
    dump.dump(str(tmp_path / "m"), algo=algo)
    assert dump.load(str(tmp_path / "m"))[1].test(testset[:200]) == batch_predictions
    other = PrivateKNN(k=8, sim_options={"name": "cosine"}, selector=selector, epsilon=1.0,
                       neighbourhood=neighbourhood, random_state=8).fit(trainset)
    assert [p.est for p in other.test(testset[:200])] != [p.est for p in batch_predictions]
    same = PrivateKNN(k=8, sim_options={"name": "cosine"}, selector=selector, epsilon=1.0,
                      neighbourhood=neighbourhood, random_state=7).fit(trainset)
    assert same.test(testset[:200]) == batch_predictions


@pytest.mark.parametrize("selector", RANDOMISED)
def test_cross_validate_n_jobs_agree_for_randomised_selectors(small_data, selector):
    algo = PrivateKNN(k=10, sim_options={"name": "cosine"}, selector=selector, random_state=0)
    folds = KFold(n_splits=3, random_state=0)
    one = cross_validate(algo, small_data, measures=["rmse"], cv=folds, n_jobs=1)
    two = cross_validate(algo, small_data, measures=["rmse"], cv=folds, n_jobs=2)
    np.testing.assert_array_equal(one["test_rmse"], two["test_rmse"])


@pytest.mark.parametrize(("selector", "expected"), [
    ("pncf", [(0.5, 0.1, "candidates"), (0.5, 0.0, "chosen")]),
    ("ppns", [(0.5, 0.0, "candidates")])])
def test_private_selectors_register_their_claims_as_published(split, selector, expected):
    algo = PrivateKNN(k=5, selector=selector, epsilon=1.0, random_state=0).fit(split[0])
    report = algo.privacy_report()
    assert [(e.epsilon, e.delta, e.applies_to) for e in report] == [
        (pytest.approx(eps, rel=1e-6), d, a) for eps, d, a in expected]
    assert all(e.component == "selector" and e.status is Status.AS_PUBLISHED
               and "not a guarantee" in e.note for e in report)
    assert report.total() == (0.0, 0.0)  # nothing answered yet, nothing charged
    assert len(PrivateKNN(selector="probabilistic").fit(split[0]).privacy_report()) == 0


def test_details_and_selection_summary(split):
    trainset, testset = split
    k, p = 10, 0.5
    algo = PrivateKNN(k=k, sim_options={"name": "cosine"}, selector="ppns", epsilon=1.0, p=p,
                      neighbourhood="user", random_state=0, diagnostics=True).fit(trainset)
    predictions = algo.test(testset)
    possible = [pr for pr in predictions if not pr.details["was_impossible"]]
    assert possible
    # without diagnostics=True the details reveal nothing of the exact similarities
    plain = PrivateKNN(k=k, sim_options={"name": "cosine"}, selector="ppns", epsilon=1.0, p=p,
                       neighbourhood="user", random_state=0).fit(trainset)
    for prediction, other in zip(predictions, plain.test(testset)):
        assert other.est == prediction.est
        assert not {"alpha", "beta", "partitions"} & set(other.details)
    for prediction in possible[:50]:
        details = prediction.details
        assert {"actual_k", "alpha", "beta", "partitions"} <= set(details)
        assert len(details["partitions"]) == k
        assert sum(part == 1 for part in details["partitions"]) == int(np.ceil(p * k))
    summary = algo.selection_summary()
    assert summary["selections"] > 0
    assert summary["alpha"] >= p  # the paper's bound (non-negative similarities)
    assert summary["beta"] == len(ppns_schedule(k, p)) + 1
    assert summary["max_partition"] >= summary["beta"]


def test_grid_search_over_selectors_and_epsilon(small_data):
    grid = {"selector": ["probabilistic", "ppns", "pncf"], "epsilon": [0.5, 5.0], "p": [0.5],
            "k": [10], "random_state": [0], "sim_options": {"name": ["cosine"]}}
    search = GridSearchCV(PrivateKNN, grid, measures=["rmse"], cv=KFold(2, random_state=0))
    search.fit(small_data)
    assert np.isfinite(search.cv_results["mean_test_rmse"]).all()
    assert len(search.cv_results["params"]) == 6


@pytest.mark.parametrize(
    ("kwargs", "error", "needle"),
    [
        ({"selector": "ppns", "p": 0.95, "k": 10}, ValueError, "top-k set"),
        ({"selector": "ppns", "k": 1}, ValueError, "k >= 2"),
        ({"selector": "ppns", "p": 0.5, "alpha": 0.5}, ValueError, "not both"),
        ({"selector": "ppns", "p": 0.0}, ValueError, "p"),
        ({"selector": "pncf", "epsilon": 0.0}, ValueError, "epsilon"),
        ({"selector": "pncf", "epsilon": float("nan")}, ValueError, "epsilon"),
        ({"selector": "pncf", "rho": 1.0}, ValueError, "rho"),
        ({"selector": "ppns", "epsilon": "1"}, TypeError, "epsilon"),
        ({"selector": PPNS(), "epsilon": 1.0}, ValueError, "epsilon"),
    ],
)
def test_bad_selector_parameters(kwargs, error, needle):
    with pytest.raises(error, match=needle):
        PrivateKNN(**kwargs).check_params()


# ------------------------------------------------------------------ the selection contract
SELECTOR_OBJECTS = [TopK(), Probabilistic(), PNCF(epsilon=1.0), PPNS(epsilon=1.0, p=0.5)]


@pytest.mark.parametrize("selector", SELECTOR_OBJECTS, ids=lambda s: s.name)
def test_selections_are_int64_with_minus_one_for_empty_slots(selector):
    """Rows with 0, 2 and 30 candidates for k = 5: positions are int64, distinct, within
    the row's candidates, exactly -1 in empty slots; β int64 >= 1; weights 0 in empty slots."""
    k, width = 5, 30
    n_valid = np.array([0, 2, 30, 30])
    sims = np.full((4, width), -np.inf)
    for row, n in enumerate(n_valid):
        sims[row, :n] = np.linspace(0.9, 0.1, n) if n else []
    selection = selector.select(sims, n_valid, k, QueryNoise(1, (np.arange(4),)),
                                np.full(4, 0.5))
    positions = selection.positions
    assert positions.dtype == np.int64 and selection.beta.dtype == np.int64
    assert positions.shape == (4, k)
    for row, n in enumerate(n_valid):
        taken = positions[row][positions[row] >= 0]
        assert len(taken) == min(n, k) and len(set(taken.tolist())) == len(taken)
        assert (taken < n).all() and (positions[row][len(taken):] == -1).all()
    assert (selection.beta >= 1).all() and selection.beta[0] == 1
    if selection.weights is not None:
        assert (selection.weights[positions < 0] == 0.0).all()


def test_selector_defaults_and_repr():
    assert (PNCF().epsilon, PNCF().rho) == (1.0, 0.1)
    assert (PPNS().epsilon, PPNS().p, PPNS().alpha) == (1.0, 0.5, None)
    assert Probabilistic().floor == 1e-3
    assert repr(PPNS(epsilon=2, p=0.3)) == "PPNS(epsilon=2.0, alpha=None, p=0.3)"
    assert repr(PNCF(epsilon=0.5, rho=0.2)) == "PNCF(epsilon=0.5, rho=0.2)"
    assert repr(TopK()) == "TopK()"


def test_ppns_p_bound_against_k_and_its_message():
    PPNS(p=0.75).check_k(4)                           # p = (k − 1)/k: still allowed
    PPNS(p=0.7).check_k(4)
    with pytest.raises(ValueError, match=r"^p=0.76 > \(k-1\)/k = 0.75 for k=4"):
        PPNS(p=0.76).check_k(4)
    with pytest.raises(ValueError, match=r"^alpha=0.9 \(so p = alpha\) > \(k-1\)/k"):
        PPNS(alpha=0.9).check_k(4)
    with pytest.raises(ValueError, match=r"PPNS needs k >= 2"):
        PPNS(p=0.5).check_k(1)
    assert PPNS(alpha=1.0).p == 1.0 and PPNS(alpha=0.3).alpha == 0.3
    for alpha in (0.0, 1.5):
        with pytest.raises(ValueError, match="^alpha must"):
            PPNS(alpha=alpha)


@pytest.mark.parametrize("selector", [TopK(), Probabilistic(), PNCF(epsilon=1.0),
                                      PPNS(epsilon=1.0, p=0.5), CorrectedPNCF(epsilon=1.0)],
                         ids=lambda s: s.name)
def test_selectors_without_any_candidate_column(selector):
    """Rows without a single candidate (zero columns): no partition; every slot empty, β 1."""
    selection = selector.select(np.empty((2, 0)), np.zeros(2, int), 3,
                                QueryNoise(0, (np.arange(2),)), np.ones(2))
    np.testing.assert_array_equal(selection.positions, np.full((2, 3), -1))
    np.testing.assert_array_equal(selection.beta, [1, 1])
    if selector.name == "pncf":                   # its perturbed weights: 0 in empty slots
        np.testing.assert_array_equal(selection.weights, np.zeros((2, 3)))
    else:
        assert selection.weights is None


def test_ppns_schedule_of_k_1_is_an_empty_int_array():
    assert ppns_schedule(1, 0.5).dtype == np.int64 and ppns_schedule(1, 0.5).size == 0


def test_ppns_tops_up_from_the_remaining_candidates_when_the_partitions_run_out():
    """12 candidates for k = 10 (p = 0.5 visits two partitions of 10): every row gets 10
    distinct neighbours."""
    sims = np.sort(np.random.default_rng(2).random((50, 12)), axis=1)[:, ::-1]
    positions = PPNS(epsilon=1.0, p=0.5).select(sims, np.full(50, 12), 10,
                                        QueryNoise(5, (np.arange(50),)),
                                        np.full(50, 0.5)).positions
    assert ((positions >= 0).sum(axis=1) == 10).all()
    assert all(len(set(row.tolist())) == 10 for row in positions)


def _pncf_counts(sims, k, rs, n_rows=4000, epsilon=1.0):
    rows = np.tile(np.asarray(sims, float), (n_rows, 1))
    positions = PNCF(epsilon=epsilon).select(rows, np.full(n_rows, rows.shape[1]), k,
                                     QueryNoise(9, (np.arange(n_rows),)),
                                     np.full(n_rows, rs)).positions
    return np.bincount(positions[positions >= 0], minlength=rows.shape[1]), positions


def test_pncf_truncation_boundaries_are_inclusive():
    # λ = sim_k = 0.3: 0.6 = sim_k + λ is certain; 0.0 = sim_k − λ can be drawn
    counts, positions = _pncf_counts([0.6, 0.5, 0.3, 0.1, 0.0, 0.0, 0.0], 3, rs=10.0)
    assert counts[0] == 4000                       # certain (≥ sim_k + λ)
    assert counts[4:].sum() > 0                    # at sim_k − λ: in the band
    assert counts[3] > 0                           # two drawn from the band of five
    # λ = 0 (sim_k = 0): the first k at or above 0 are certain, in order
    _, positions = _pncf_counts([0.5, 0.4, 0.0, 0.0, 0.0], 3, rs=10.0)
    assert (positions == [0, 1, 2]).all()


def test_pncf_weights_favour_higher_scores_and_beta_counts_the_reachable_partitions():
    counts, _ = _pncf_counts([0.9, 0.5, 0.45, 0.1, 0.05, 0.0], 2, rs=0.01, epsilon=20.0)
    assert counts[1] > counts[3]                  # exp(ε·sim/(4k·RS)) weights, not uniform
    sims = np.tile(np.linspace(0.9, 0.0, 30), (2, 1))
    beta = PNCF(epsilon=1.0).select(sims, np.full(2, 30), 5, QueryNoise(1, (np.arange(2),)),
                            np.full(2, 10.0)).beta
    assert beta.tolist() == [6, 6]                # λ = sim_k: all 30 reachable, 6 partitions


def test_pncf_privacy_uses_the_users_sensitivities():
    entries = PNCF(epsilon=1.0).privacy(4)
    assert [e.mechanism for e in entries] == [
        "exponential (PNCF selection, k draws, truncated)",
        "laplace (PNCF perturbed similarities)"]
    assert entries[1].epsilon == laplace_epsilon(PNCF(epsilon=1.0).noise_scale(1.0), 1.0)
    rs = np.array([0.3, 0.7, 0.3])
    assert PNCF(epsilon=1.0).privacy(4, rs)[1].epsilon == max(
        laplace_epsilon(PNCF(epsilon=1.0).noise_scale(r), r) for r in (0.3, 0.7))
    assert PPNS(epsilon=1.0).privacy(4)[0].mechanism == "exponential (PPNS selection, k draws)"


def test_probabilistic_beta_is_at_least_one_partition():
    sims = np.full((2, 3), -np.inf)
    sims[1, :2] = [0.5, 0.2]
    beta = Probabilistic().select(sims, np.array([0, 2]), 5, QueryNoise(0, (np.arange(2),)),
                                  None).beta
    assert beta.tolist() == [1, 1] and beta.dtype == np.int64


def test_position_helpers():
    mask = np.array([[True, True, True, False, True], [False] * 5])
    assert mask_to_positions(mask, 3).tolist() == [[0, 1, 2], [-1, -1, -1]]
    assert mask_to_positions(mask, 3).dtype == np.int64
    rng = np.random.default_rng(4)
    keys = rng.random((200, 40))
    got = top_by_key(keys, np.full(200, 7), 7)
    np.testing.assert_array_equal(got, np.argsort(-keys, axis=1)[:, :7])
    counts = np.array([0, 1, 3] * 2)
    some = top_by_key(keys[:6], counts, 4)
    assert ((some >= 0).sum(axis=1) == counts).all() and (some[:, 3] == -1).all()
    assert top_by_key(keys[:2, :3], np.array([5, 5]), 5).tolist() == \
        np.c_[np.argsort(-keys[:2, :3], axis=1), np.full((2, 2), -1)].tolist()
    assert top_by_key(keys[:0], np.zeros(0, int), 3).shape == (0, 3)
    assert top_by_key(keys[:2], np.array([10, 10]), 3).shape == (2, 3)


def test_top_by_key_on_wide_rows_is_a_full_sort():
    # a partition on thousands of candidates leaves the rest unordered: the k-th best
    # must still be found exactly (argpartition at k - 1, not k - 2)
    keys = np.random.default_rng(5).random((50, 3000))
    np.testing.assert_array_equal(top_by_key(keys, np.full(50, 40), 40),
                                  np.argsort(-keys, axis=1)[:, :40])


def test_top_by_key_of_one_is_the_argmax_and_never_a_masked_key():
    """At most one neighbour per row: the row's largest key (its first, on a tie), -1 where
    the count is 0 or every key is -inf."""
    keys = np.random.default_rng(6).random((300, 25))
    keys[:50] = np.round(keys[:50], 1)                     # ties: the first column wins
    keys[7] = -np.inf
    counts = np.ones(300, int)
    counts[3] = 0
    got = top_by_key(keys, counts, 4)
    expected = np.argmax(keys, axis=1)
    expected[[3, 7]] = -1
    np.testing.assert_array_equal(got[:, 0], expected)
    assert (got[:, 1:] == -1).all()


def test_pncf_draws_the_band_by_the_exponential_mechanism():
    # one candidate above sim_k + λ is always kept; the other of k = 2 is one draw from
    # the band with P(j) ∝ exp(ε·sim_j / (4k·RS)) (Zhu et al. 2013), here ε/(4k) = 12.5
    sims_row = np.array([0.95, 0.5, 0.45, 0.4, 0.1, 0.0])
    k, n = 2, 20_000
    sims, n_valid, noise, rs = batch(sims_row, n, seed=3)
    selector = PNCF(epsilon=100.0, rho=0.5)
    sim_k, lam = selector.truncation(sims, n_valid, k, rs)
    sure = sims_row >= sim_k[0] + lam[0]
    band = ~sure & (sims_row >= sim_k[0] - lam[0])
    assert sure.tolist() == [True] + [False] * 5 and band.sum() >= 3
    positions = selector.select(sims, n_valid, k, noise, rs).positions
    assert (positions[:, 0] == 0).all() and (positions >= 0).all()
    counts = np.bincount(positions[:, 1], minlength=len(sims_row))
    weights = np.where(band, np.exp(12.5 * sims_row), 0.0)
    p = weights / weights.sum()
    assert (np.abs(counts - n * p) <= 5 * np.sqrt(n * p * (1 - p)) + 1).all(), (counts, n * p)


# ---------------------------------------------------------------- properties (hypothesis)
@fuzz(200)
@given(st.integers(1, 4), st.integers(1, 14), st.integers(2, 9), st.data())
def test_selectors_choose_valid_distinct_candidates(rows, width, k, data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32)))
    if data.draw(st.booleans()):  # ties
        sims = rng.choice([-1.0, -0.5, 0.0, 0.3, 1.0], (rows, width))
    else:
        sims = rng.uniform(-1, 1, (rows, width))
    sims = -np.sort(-sims, axis=1)
    n_valid = np.asarray(data.draw(st.lists(st.integers(0, width), min_size=rows,
                                            max_size=rows)))
    sims[np.arange(width)[None, :] >= n_valid[:, None]] = -np.inf
    sensitivity = rng.uniform(1e-6, 2.0, rows)
    before = sims.copy(), n_valid.copy(), sensitivity.copy()
    epsilon = data.draw(st.sampled_from([1e-3, 1.0, 1e4]))
    p = data.draw(st.floats(0.01, (k - 1) / k))
    for selector in (TopK(), Probabilistic(floor=data.draw(st.floats(1e-6, 1.0))),
                     PNCF(epsilon=epsilon, rho=data.draw(st.floats(0.01, 0.99))),
                     PPNS(epsilon=epsilon, p=p)):
        selection = selector.select(sims, n_valid, k, QueryNoise(3, (np.arange(rows),)),
                                    sensitivity)
        assert selection.positions.shape == (rows, k)
        assert (selection.beta >= 1).all(), (selector, selection.beta)
        for row in range(rows):
            chosen = selection.positions[row][selection.positions[row] >= 0]
            assert len(set(chosen.tolist())) == len(chosen) == min(n_valid[row], k)
            assert (chosen < n_valid[row]).all()
            if isinstance(selector, PPNS) and n_valid[row] > k:
                assert set(chosen.tolist()) != set(range(k))  # never the exact top-k set
        if selection.weights is not None:
            assert np.isfinite(selection.weights).all()
        np.testing.assert_array_equal(sims, before[0])
        np.testing.assert_array_equal(n_valid, before[1])
        np.testing.assert_array_equal(sensitivity, before[2])


@pytest.mark.parametrize(("make", "name"), [
    (lambda: Probabilistic(floor=0.0), "floor"), (lambda: Probabilistic(floor="1"), "floor"),
    (lambda: PNCF(epsilon=-1.0), "epsilon"), (lambda: PNCF(rho=0.0), "rho"),
    (lambda: PPNS(p=1.5), "p"), (lambda: PPNS(alpha=0.0), "alpha"),
    (lambda: PPNS(epsilon=np.inf), "epsilon"),
])
def test_selector_objects_reject_bad_arguments(make, name):
    raises_naming(make, name)


def test_probabilistic_beta_is_at_least_one_without_candidates():
    """Regression: a row without candidates had β = 0 (every other selector says 1)."""
    sims = np.full((2, 3), -np.inf)
    sims[1, 0] = 0.5
    selection = Probabilistic().select(sims, np.array([0, 1]), 2, QueryNoise(0, (np.arange(2),)))
    np.testing.assert_array_equal(selection.beta, [1, 1])


@pytest.mark.parametrize("name", ["pncf_corrected", "ppns", "probabilistic"])
def test_every_candidate_can_win_far_beyond_the_bounded_uniform_keys(monkeypatch, name):
    """At c·Δ = 200 (far above the ≈ 40.4 that one 53-bit uniform per key can span), a
    Gumbel variate of 700 on the worst candidate makes it win: the selectors draw their keys
    from `keyed_gumbel`'s exact tails, so every output has positive probability (#33).
    PNCF as published is left out: its truncation makes such a candidate impossible."""
    import dprec.selectors.base as base

    def far_tail(seed, keys, n_draws, stream=0):
        g = np.zeros((len(np.asarray(keys[0])), n_draws))
        g[:, 1] = 700.0               # the worse candidate's variate, in the far upper tail
        return g

    monkeypatch.setattr(base, "keyed_gumbel", far_tail)
    sims = np.array([[1.0, 0.0]])
    selector = {"pncf_corrected": lambda: CorrectedPNCF(epsilon=400.0, score_range=1.0),
                "ppns": lambda: PPNS(epsilon=1600.0, p=0.5),
                "probabilistic": lambda: Probabilistic(floor=1e-300)}[name]()
    positions = selector.select(sims, np.array([2]), 1, QueryNoise(0, (np.arange(1),)),
                                np.ones(1)).positions
    assert positions[0, 0] == 1
