"""LocalKNN's server-side formulas recomputed pair by pair from the stated quantities (the
tests that kill the mutants tests/test_local_knn.py leaves alive: `tools/mutation.py`)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from surprise import Dataset, Reader

from dprec import LocalKNN, datasets
from dprec.endtoend import local_knn
from dprec.endtoend.dp_baseline import effects_above_noise
from dprec.endtoend.local_knn import krr_reports


@pytest.fixture(scope="module")
def data():
    return datasets.synthetic(80, 30, 900, random_state=3)


@pytest.fixture(scope="module")
def trainset(data):
    return data.build_full_trainset()


@pytest.fixture(scope="module")
def listed(data):
    """The data's items as a public catalogue (the formulas over every item, no selection)."""
    return {"items": list(dict.fromkeys(r[1] for r in data.raw_ratings))}


def spy(monkeypatch, name: str) -> list:
    """Every call's positional arguments of `dprec.endtoend.local_knn.<name>`, which still runs."""
    calls, function = [], getattr(local_knn, name)

    def wrapper(*args):
        calls.append(args)
        return function(*args)

    monkeypatch.setattr(local_knn, name, wrapper)
    return calls


def neighbour_weights(algo) -> np.ndarray:
    """The dense users × users matrix of the released neighbour weights, by loops."""
    rows = algo._space.users.index
    weights = np.zeros((len(rows),) * 2)
    for uid, neighbours in algo.neighbours_.iterrows():
        for v, w in zip(neighbours, algo.weights_.loc[uid]):
            weights[rows[uid], rows[v]] += w
    return weights


@pytest.mark.parametrize("gamma", [None, 0.7])
def test_every_deviation_is_the_stated_posterior_mean(trainset, listed, gamma):
    # at ε = 20 (krr) the deviations pass their test, about 3 in 4 pairs pass the gate, and
    # the noise's term spread² unit² / (count − gate) is about a quarter of the count
    algo = LocalKNN(epsilon=20.0, k=10, neighbour_shrinkage=gamma,
                    random_state=3, **listed).fit(trainset)
    assert algo._deviates
    n_users, n_items = algo._count_reports.shape
    weights = neighbour_weights(algo)
    expected = np.zeros((n_users, n_items))
    passed = 0
    for u in range(n_users):
        spread = math.sqrt(sum(w * w for w in weights[u]))
        gate = 2.0 * algo._count_sd * spread
        for i in range(n_items):
            numerator = weights[u] @ algo._residual_reports[:, i]
            count = weights[u] @ algo._count_reports[:, i]
            if count > gate:
                noise = (spread * algo._stabiliser_unit) ** 2 / (count - gate)
                expected[u, i] = numerator / (count + (gamma or 0.0) + noise)
                passed += 1
    assert 0.5 * expected.size < passed < expected.size
    users, items = np.divmod(np.arange(n_users * n_items), n_items)
    np.testing.assert_allclose(algo._deviations(users, items), expected.ravel(),
                               rtol=1e-9, atol=1e-12)


def test_the_deviations_are_tested_on_the_neighbours_weighted_reports(trainset, listed,
                                                                     monkeypatch):
    # `effects_above_noise` on every pair's neighbour-weighted reports, with the noise sds
    # spread · unit · tolerance and spread · count sd (spread: the root of the summed
    # squared weights)
    calls = spy(monkeypatch, "effects_above_noise")
    algo = LocalKNN(epsilon=20.0, k=10, noise_tolerance=0.3, random_state=3,
                    **listed).fit(trainset)
    assert len(calls) == 2                       # the item effects', then the deviations'
    sums, counts, (sd_sum, sd_count) = calls[1]
    weights = neighbour_weights(algo)
    np.testing.assert_allclose(sums, weights @ algo._residual_reports, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(counts, weights @ algo._count_reports, rtol=1e-12, atol=1e-12)
    spread = np.sqrt((weights**2).sum(axis=1))[:, None]
    assert spread.min() > 0.0 and spread.max() != spread.min()
    np.testing.assert_allclose(np.broadcast_to(sd_sum, sums.shape),
                               np.broadcast_to(spread * algo._stabiliser_unit * 0.3, sums.shape),
                               rtol=1e-12)
    np.testing.assert_allclose(np.broadcast_to(sd_count, sums.shape),
                               np.broadcast_to(spread * algo._count_sd, sums.shape), rtol=1e-12)
    assert algo._deviates == effects_above_noise(sums, counts, (sd_sum, sd_count))


def test_the_item_effects_read_the_stated_noise_prior_shrinkage_and_bound(listed,
                                                                         monkeypatch):
    # on a 1..10 scale (B = 4.5: the prior variance (B/2)²/2.5 and the bound high − low
    # differ from their mutants there, not on 1..5) with a given β
    data = datasets.synthetic(80, 30, 900, random_state=3)
    rows = pd.DataFrame(data.raw_ratings).iloc[:, :3]
    trainset = Dataset.load_from_df(rows, Reader(rating_scale=(1, 10))).build_full_trainset()
    shrunk, tested = spy(monkeypatch, "shrunk_effects"), spy(monkeypatch, "effects_above_noise")
    algo = LocalKNN(epsilon=20.0, k=10, item_shrinkage=3.0, random_state=3,
                    **listed).fit(trainset)
    (sums, counts, noise_sd, beta, prior, bound), = shrunk
    assert (beta, prior, bound) == (3.0, 4.5**2 / 4 / 2.5, 9.0)
    n_users = algo._count_reports.shape[0]
    _, noise, _ = krr_reports(algo._space.matrix, (1.0, 10.0), 10.0, np.random.default_rng(0))
    assert noise_sd == pytest.approx((4.5 * noise.x * math.sqrt(n_users),
                                      noise.count * math.sqrt(n_users)), rel=1e-12)
    np.testing.assert_allclose(counts, algo._count_reports.sum(axis=0), rtol=1e-12)
    centred = algo._residual_reports.sum(axis=0) + counts * (algo.mu_ + algo._item_effects - 5.5)
    np.testing.assert_allclose(sums, centred, rtol=1e-9, atol=1e-9)
    sums_tested, counts_tested, (sd_sum, sd_count) = tested[0]
    np.testing.assert_array_equal(sums_tested, sums)
    np.testing.assert_array_equal(counts_tested, counts)
    np.testing.assert_allclose(sd_sum, 4.5 * noise.sum_sd(counts, n_users), rtol=1e-12)
    assert sd_count == noise_sd[1]
    assert np.abs(algo._item_effects).max() > 0.5           # the effects are released


def test_the_krr_noise_bounds_at_every_epsilon():
    # the rated indicator is Bernoulli(1 − p) unrated, Bernoulli(1 − q) rated: p(1 − p) is
    # the larger variance with three symbols or more, also at a small ε, where q(1 − q)
    # is close to it (and q/(1 − q), q(1 + q), q(2 − q) above it); x's bound is
    # min(1, 2 sqrt(1 − p)) / (p − q): 1 (x in [−1, 1]) where p < 3/4
    import scipy.sparse as sp

    matrix = sp.csr_matrix(np.array([[0.0, 4.0, 3.0], [4.0, 0.0, 1.0]]))
    for epsilon in (0.02, 0.5, 1.0, 3.0):
        n_symbols = 6                                       # ⊥ and the levels 1..5
        p = math.exp(epsilon) / (math.exp(epsilon) + n_symbols - 1)
        q = (1.0 - p) / (n_symbols - 1)
        _, noise, _ = krr_reports(matrix, (1.0, 5.0), epsilon, np.random.default_rng(0))
        assert noise.count == pytest.approx(math.sqrt(p * (1.0 - p)) / (p - q), rel=1e-9)
        bound = 1.0 if p < 0.75 else 2.0 * math.sqrt(1.0 - p)
        assert noise.x == pytest.approx(bound / (p - q), rel=1e-9)
    assert p > 0.75                                         # both branches, at ε = 3


@pytest.mark.parametrize("epsilon", [20.0, 4.0])
def test_each_users_own_effect_is_their_mean_residual_against_the_released_effects(trainset,
                                                                                    epsilon):
    # over all their own ratings, an item the selection did not list with effect 0 (at
    # ε = 4 it lists 16 of the 30 items; at 20 those with about 7 raters or more)
    algo = LocalKNN(epsilon=epsilon, k=10, user_shrinkage=0.5, random_state=3).fit(trainset)
    assert np.abs(algo._item_effects).max() > 0.4           # so that its sign matters
    users, items = algo._space.users.index, algo._space.items.index
    assert 0 < len(items) < trainset.n_items
    for inner, rated in trainset.ur.items():
        residuals = [r - algo.mu_ - (algo._item_effects[items[trainset.to_raw_iid(i)]]
                                     if trainset.to_raw_iid(i) in items else 0.0)
                     for i, r in rated]
        row = users[trainset.to_raw_uid(inner)]
        assert algo._user_effects[row] == pytest.approx(
            sum(residuals) / (len(residuals) + 0.5), rel=1e-9, abs=1e-12)


@pytest.mark.parametrize(("release", "spent"), [("krr", 1e18), ("laplace", 2e18)])
def test_a_huge_epsilon_caps_only_the_randomised_response(trainset, listed, release, spent):
    # k-RR resolves ε up to 10^18, and is spent up to it; the Laplace reports spend it all
    algo = LocalKNN(epsilon=4e18, rating_release=release, random_state=0,
                    **listed).fit(trainset)
    entries = algo.privacy_report().entries
    assert [e.component for e in entries] == ["similarity", "ratings"]
    assert [e.epsilon for e in entries] == pytest.approx([2e18, spent], rel=1e-12)
    # the item list's selection first (its lattice spends at most 8.5e270 at any ε)
    selected = LocalKNN(epsilon=4e18, rating_release=release, random_state=0).fit(trainset)
    entries = selected.privacy_report().entries
    assert [e.component for e in entries] == ["item list", "similarity", "ratings"]
    assert [e.epsilon for e in entries] == pytest.approx([4e17, 1.8e18, min(1.8e18, spent)],
                                                         rel=1e-12)


def test_a_fit_past_the_budget_names_the_unit_it_protects(trainset):
    with pytest.raises(ValueError, match=r"^budget .* for one rating"):
        LocalKNN(epsilon=2.0, budget=(1.0, 0.0)).fit(trainset)


def test_a_rating_budget_only_k_rr_resolves_is_refused_for_laplace_before_the_fit(trainset,
                                                                                   listed):
    # ε_r ≈ 10^-12: k-RR states it; the lattice Laplace cannot, and the fit is refused before
    # the model is changed, naming epsilon and the shares
    share = 1 - 1e-12
    algo = LocalKNN(epsilon=1.0, sketch_share=share, random_state=0, **listed).fit(trainset)
    assert algo.privacy_report().entries[1].epsilon == pytest.approx(1e-12, rel=1e-3)
    for catalogue, shares in ((listed, "sketch_share = 1"),
                              ({}, "selection_share = 0.1 and sketch_share = 1")):
        refused = LocalKNN(epsilon=1.0, sketch_share=share, rating_release="laplace",
                           **catalogue)
        with pytest.raises(ValueError, match=f"^epsilon = 1 with {shares} gives .* too small"):
            refused.fit(trainset)
        assert not hasattr(refused, "trainset")
