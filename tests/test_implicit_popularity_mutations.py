"""`PrivatePopularity` in detail: the defaults, each release's ledger entry and report,
the noise scale used, the scale's bounds, the threshold, the user catalogue, the budget's
refusal and seeded reproducibility (the survivors of mutation testing).  The releases'
mechanics are tested over the item catalogue `ITEMS`; the items' selection without it is
tests/test_implicit_lists.py's."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from strategies import trainset_of

from dprec import PrivatePopularity
from dprec.accountant.ledger import BudgetExceededError, LedgerEntry, Status, Unit
from dprec.implicit import popularity
from dprec.implicit.knn import ImplicitKNN
from dprec.implicit.set_reports import item_counts
from dprec.mechanisms import zcdp_epsilon, zcdp_rho
from dprec.mechanisms.exact_laplace import MAX_T, MIN_T
from dprec.mechanisms.partition_selection import selection_delta, threshold_steps

ITEMS = [f"i{i}" for i in range(8)]


@pytest.fixture(scope="module")
def sets():
    """12 users × 8 items, every item held by two or more, `u5` of one item."""
    X = (np.random.default_rng(3).random((12, 8)) < 0.5).astype(float)
    X[:2] = 1.0
    X[5] = 0.0
    X[5, 3] = 1.0
    return X


def test_the_defaults_are_the_documented_ones(sets):
    algo = PrivatePopularity(cap=4)
    assert (algo.epsilon, algo.mechanism, algo.delta, algo.selection_share) == (
        1.0, None, 1e-5, 0.1)
    report = algo.fit(trainset_of(sets, scale=(1, 5))).privacy_report()
    assert report.model == "PrivatePopularity(mechanism='laplace')"    # with a cap
    epsilon, delta = report.guarantee[Unit.USER]         # the items' selection adds δ
    assert epsilon == 1.0 and 0.0 < delta <= 1e-5
    given = PrivatePopularity(cap=4, items=ITEMS).fit(trainset_of(sets, scale=(1, 5)))
    assert given.privacy_report().guarantee == {Unit.USER: (1.0, 0.0)}


def test_the_central_release_states_its_entry_and_report(sets):
    model = PrivatePopularity(2.0, cap=8, items=ITEMS).fit(trainset_of(sets, scale=(1, 5)))
    report = model.privacy_report()
    assert report.entries == (LedgerEntry(
        "popularity", "discrete Laplace on capped counts", 2.0, 0.0, Unit.USER,
        Status.HOLDS, "user", "each set capped at cap = 8 items (ℓ1 sensitivity 8 per "
        "user), discrete Laplace of scale cap/ε = 4 on every item's count"),)
    assert report.model == "PrivatePopularity(mechanism='laplace')"
    assert str(report).startswith("Privacy report: PrivatePopularity(mechanism='laplace')")
    assert any(note.startswith("a user's own list leaves out the items of their own set")
               for note in report.notes)
    assert model.counts_.name == "count"


def test_the_reports_release_states_its_entry_and_report(sets):
    report = PrivatePopularity(2.0, mechanism="reports", items=ITEMS).fit(
        trainset_of(sets, scale=(1, 5))).privacy_report()
    (entry,) = report.entries
    assert (entry.component, entry.epsilon, entry.delta, entry.unit, entry.status) == (
        "set report", 2.0, 0.0, Unit.SET_ITEM, Status.HOLDS)
    assert report.model == "PrivatePopularity(mechanism='reports')"
    assert any(note.startswith("a user's own list leaves out the items of their own set")
               for note in report.notes)


def test_the_noise_is_discrete_laplace_of_scale_cap_over_epsilon(sets, monkeypatch):
    calls = []

    def recorded(values, t, random_state):
        calls.append((np.array(values), t, random_state))
        return np.array(values)

    monkeypatch.setattr(popularity, "discrete_laplace", recorded)
    model = PrivatePopularity(0.5, cap=8, items=ITEMS).fit(trainset_of(sets, scale=(1, 5)))
    (values, t, rng), = calls
    assert t == 8 / 0.5
    assert isinstance(rng, np.random.Generator)
    np.testing.assert_array_equal(values, sets.sum(axis=0))       # no set above the cap
    np.testing.assert_array_equal(model.counts_.to_numpy(), values)


def test_the_gaussian_noise_is_calibrated_to_the_l2_sensitivity_by_zcdp(sets, monkeypatch):
    """σ = √(cap / 2ρ), ρ the largest zCDP whose (ε, δ) is within (epsilon, delta): with
    items= all of delta for the Gaussian; ℓ2 sensitivity √cap, not cap."""
    calls = []

    def recorded(values, sigma, random_state):
        calls.append((np.array(values), sigma, random_state))
        return np.array(values)

    monkeypatch.setattr(popularity, "discrete_gaussian", recorded)
    model = PrivatePopularity(0.5, cap=8, mechanism="gaussian", delta=1e-6,
                              items=ITEMS).fit(trainset_of(sets, scale=(1, 5)))
    (values, sigma, rng), = calls
    rho = zcdp_rho(0.5, 1e-6)
    assert sigma == math.sqrt(8 / (2 * rho)) and isinstance(rng, np.random.Generator)
    np.testing.assert_array_equal(values, sets.sum(axis=0))
    np.testing.assert_array_equal(model.counts_.to_numpy(), values)
    report = model.privacy_report()
    (entry,) = report.entries
    assert (entry.component, entry.mechanism, entry.unit, entry.status) == (
        "popularity", "discrete Gaussian on capped counts (zCDP)", Unit.USER, Status.HOLDS)
    assert (entry.epsilon, entry.delta) == (zcdp_epsilon(rho, 1e-6), 1e-6)
    assert 0.5 * (1 - 1e-8) < entry.epsilon <= 0.5
    assert entry.note == (f"each set capped at cap = 8 items (ℓ2 sensitivity √8 per user), "
                          f"discrete Gaussian of σ = {sigma:.4g} on every item's count: "
                          f"ρ = {rho:.4g}-zCDP, (ε, δ) at δ = 1e-06")
    assert report.model == "PrivatePopularity(mechanism='gaussian')"
    assert any(note.startswith("central model: a trusted curator") for note in report.notes)


def test_the_gaussian_selection_takes_half_the_delta_and_states_its_threshold(sets):
    cap, delta = 4, 1e-5
    model = PrivatePopularity(1.0, cap=cap, mechanism="gaussian").fit(
        trainset_of(sets, scale=(1, 5)))
    (entry,) = model.privacy_report().entries
    sigma = math.sqrt(cap / (2 * zcdp_rho(1.0, delta / 2)))
    steps = threshold_steps("gaussian", sigma, delta / 2, max_partitions=cap, signal=1)
    added = selection_delta("gaussian", sigma, steps, max_partitions=cap, signal=1)
    assert entry.component == "popularity (items by partition selection)"
    assert entry.delta == delta / 2 + added and 0 < added <= delta / 2
    assert f"at least {steps} ({steps / sigma:.3g} noise scales)" in entry.note
    with pytest.raises(ValueError, match="^delta must be > 0 with mechanism='gaussian'"):
        PrivatePopularity(mechanism="gaussian", cap=4, delta=0.0, items=ITEMS).fit(
            trainset_of(sets, scale=(1, 5)))
    with pytest.raises(ValueError, match="^cap must be given with mechanism='gaussian'"):
        PrivatePopularity(mechanism="gaussian").fit(trainset_of(sets, scale=(1, 5)))


def test_a_gaussian_the_accountant_proves_zero_for_states_the_epsilon_asked(sets):
    """At ε = 0.003 and δ = 1e-5 the largest ρ dp-accounting bounds within ε is one it
    proves (0, δ)-DP: the entry states the ε asked (it was refused, "epsilon must be >
    0.0, got 0.0")."""
    model = PrivatePopularity(0.003, cap=1, mechanism="gaussian", items=ITEMS).fit(
        trainset_of(sets, scale=(1, 5)))
    (entry,) = model.privacy_report().entries
    assert (entry.epsilon, entry.delta) == (0.003, 1e-5)
    assert zcdp_epsilon(zcdp_rho(0.003, 1e-5), 1e-5) == 0.0


@pytest.mark.parametrize(("epsilon", "cap", "t"), [(2.0**-42, 1, MAX_T), (1e18, 1, MIN_T)])
def test_the_scale_bounds_are_inclusive(sets, epsilon, cap, t):
    """`cap / epsilon` exactly at either bound is accepted, with that scale."""
    model = PrivatePopularity(epsilon, cap=cap).fit(trainset_of(sets, scale=(1, 5)))
    assert f"scale cap/ε = {t:.4g} on" in model.privacy_report().entries[0].note


def test_the_threshold_keeps_the_ratings_at_least_that_high():
    X = np.array([[5, 1, 4], [4, 5, 2], [1, 2, 5], [5, 4, 1]], dtype=float)
    trainset = trainset_of(X, scale=(1, 5))
    model = PrivatePopularity(1e5, cap=3, threshold=4).fit(trainset)   # t = 3e-5
    assert model.counts_.tolist() == [3.0, 2.0, 2.0]
    every = PrivatePopularity(1e5, cap=3).fit(trainset)
    assert every.counts_.tolist() == [4.0, 4.0, 4.0]


def test_the_reports_read_the_user_catalogue_given(sets):
    trainset = trainset_of(sets, scale=(1, 5))
    read = PrivatePopularity(mechanism="reports").fit(trainset).privacy_report()
    assert "who reports is public (local model)" in str(read)       # #51: a condition
    assert read.out_of_scope_users(Unit.SET_ITEM) == []     # u5, of one item, was outside
    users = [f"u{u}" for u in range(12)] + ["nobody yet"]
    given = PrivatePopularity(mechanism="reports", users=users).fit(trainset)
    assert "the user catalogue given as users= is public" in str(given.privacy_report())
    assert given.privacy_report().out_of_scope_users(Unit.SET_ITEM) == []
    assert len(given.privacy_report().user_ids) == 13
    with pytest.raises(ValueError, match="^users"):
        PrivatePopularity(cap=3, users=users[:5]).fit(trainset)


def test_the_sole_holder_is_inside_the_central_guarantee_without_the_catalogue(sets):
    X = np.column_stack([sets, np.eye(12)[:, 4]])                    # i8: u4's alone
    trainset = trainset_of(X, scale=(1, 5))
    read = PrivatePopularity(cap=3).fit(trainset).privacy_report()
    assert read.out_of_scope_users(Unit.USER) == []           # #51: u4 was outside
    given = PrivatePopularity(cap=3, items=ITEMS + ["i8"]).fit(trainset).privacy_report()
    assert given.out_of_scope_users(Unit.USER) == []


def test_a_refusal_past_the_budget_names_the_unit(sets):
    with pytest.raises(BudgetExceededError,
                       match=r"^budget .* for one user \(all of their ratings\)"):
        PrivatePopularity(cap=3, budget=(0.5, 0.0)).fit(trainset_of(sets, scale=(1, 5)))


@pytest.mark.parametrize("kwargs", [{"cap": 4}, {"mechanism": "reports"}])
def test_a_seed_reproduces_the_counts(sets, kwargs):
    trainset = trainset_of(sets, scale=(1, 5))

    def counts(seed):
        return PrivatePopularity(0.5, random_state=seed, items=ITEMS, **kwargs).fit(
            trainset).counts_

    pd.testing.assert_series_equal(counts(1), counts(1))
    assert not counts(1).equals(counts(2))


def test_the_reports_counts_are_implicit_knns_prior_from_the_same_seed(sets):
    """The same seed gives the same reports as `ImplicitKNN`'s `set_epsilon`, and the
    counts are their debiased sums."""
    trainset = trainset_of(sets, scale=(1, 5))
    counts = PrivatePopularity(0.7, mechanism="reports", random_state=4, items=ITEMS).fit(
        trainset).counts_
    knn = ImplicitKNN(k=3, set_epsilon=0.7, random_state=4, items=ITEMS).fit(trainset)
    np.testing.assert_array_equal(counts.to_numpy(), item_counts(knn.reports_, 0.7))
    assert counts.index.tolist() == ITEMS


def test_without_a_cap_the_default_is_the_local_reports(sets):
    model = PrivatePopularity().fit(trainset_of(sets, scale=(1, 5)))
    report = model.privacy_report()
    assert report.model == "PrivatePopularity(mechanism='reports')"
    assert set(report.guarantee) == {Unit.SET_ITEM}
    with pytest.raises(ValueError, match="^epsilon"):
        PrivatePopularity(0.0).fit(trainset_of(sets, scale=(1, 5)))


def test_the_central_selection_states_its_threshold_in_the_entry(sets):
    from dprec.mechanisms.partition_selection import selection_delta, threshold_steps

    cap, epsilon, delta = 4, 1.0, 1e-5
    model = PrivatePopularity(epsilon, cap=cap).fit(trainset_of(sets, scale=(1, 5)))
    (entry,) = model.privacy_report().entries
    steps = threshold_steps("laplace", cap / epsilon, delta, max_partitions=cap, signal=1)
    added = selection_delta("laplace", cap / epsilon, steps, max_partitions=cap, signal=1)
    assert entry.component == "popularity (items by partition selection)"
    assert entry.delta == added > 0
    rule = (f"an item is released when its noisy capped count is at least {steps} "
            f"({steps / (cap / epsilon):.3g} noise scales), a threshold that adds "
            f"δ = {added:.2g} (a bound on the chance that one of the k = cap = {cap} items "
            "one user can bring alone passes it, each counted once)")
    assert entry.note.endswith("; " + rule)
    assert entry.note.startswith(f"each set capped at cap = {cap} items")
