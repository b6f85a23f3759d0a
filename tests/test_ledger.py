"""Tests of dprec.ledger: the per-user privacy accountant."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, special

from dprec.ledger import (
    BudgetExceededError,
    LedgerEntry,
    PrivacyAccountant,
    Status,
    Unit,
    compose,
)


def entry(eps=0.5, delta=0.0, unit=Unit.RATING, status=Status.HOLDS, applies_to="candidates",
          component="selector", mechanism="exponential") -> LedgerEntry:
    return LedgerEntry(component, mechanism, eps, delta, unit, status, applies_to)


def test_basic_composition_per_user_and_parallel_across_users():
    acc = PrivacyAccountant(["a", "b", "c"])
    e1 = acc.register(entry(0.5))
    e2 = acc.register(entry(0.25, 1e-6, applies_to="chosen"))
    acc.charge({e1: np.array([2, 0, 1]), e2: np.array([0, 3, 1])})
    acc.charge({e1: np.array([1, 0, 0])})
    frame = acc.per_user(Unit.RATING)
    np.testing.assert_allclose(frame["epsilon"], [1.5, 0.75, 0.75])
    np.testing.assert_allclose(frame["delta"], [0.0, 3e-6, 1e-6])
    assert frame["releases"].tolist() == [3, 3, 2]
    assert list(frame.index) == ["a", "b", "c"]
    assert acc.total(Unit.RATING) == (1.5, 3e-6)       # the worst user of each
    assert acc.total() == (1.5, 3e-6)                  # one unit: no need to name it
    assert acc.releases == 2
    np.testing.assert_array_equal(acc.applications(e1), [3, 0, 1])


def test_units_are_never_added():
    acc = PrivacyAccountant(2)
    rating = acc.register(entry(1.0))
    item = acc.register(entry(2.0, 1e-4, unit=Unit.SET_ITEM, applies_to="user"))
    acc.charge({rating: np.array([1, 1]), item: np.array([1, 0])})
    with pytest.raises(ValueError, match="different units"):
        acc.total()
    assert acc.total(Unit.RATING) == (1.0, 0.0)
    assert acc.total(Unit.SET_ITEM) == (2.0, 1e-4)
    assert acc.total(Unit.USER) == (math.inf, 0.0)     # nothing protects it
    assert acc.units() == [Unit.RATING, Unit.SET_ITEM]


def test_nothing_private_is_never_epsilon_zero():
    acc = PrivacyAccountant(3, model="PrivateKNN(topk)")
    assert acc.total() == (math.inf, 0.0)
    text = str(acc)
    assert "No private mechanism ran" in text and "ε = 0" not in text
    assert acc.guarantee is None
    assert len(acc) == 0 and list(acc) == []
    assert acc.to_frame().empty


def test_a_budget_refuses_a_release_that_would_exceed_it_and_records_nothing():
    acc = PrivacyAccountant(["u", "v"], budget=(2.0, 1e-5))
    e = acc.register(entry(0.5))
    acc.charge({e: np.array([4, 1])})                  # exactly at the budget: allowed
    with pytest.raises(BudgetExceededError, match="'u'.*ε = 2.5") as info:
        acc.charge({e: np.array([1, 1])})
    assert isinstance(info.value, ValueError)
    np.testing.assert_array_equal(acc.applications(e), [4, 1])  # all or nothing
    d = acc.register(entry(0.1, 4e-6, applies_to="chosen"))
    acc.charge({d: np.array([0, 2])})
    with pytest.raises(BudgetExceededError, match="δ"):
        acc.charge({d: np.array([0, 1])})              # δ = 1.2e-5 > 1e-5


@pytest.mark.parametrize("budget", [(0.0, 0.1), (1.0, 1.0), (math.nan, 0.0), "1,0", (1.0,)])
def test_bad_budget(budget):
    with pytest.raises((TypeError, ValueError), match="budget"):
        PrivacyAccountant(2, budget=budget)


@pytest.mark.parametrize("kwargs, match", [
    ({"eps": 0.0}, "epsilon"), ({"eps": -1.0}, "epsilon"), ({"eps": math.nan}, "epsilon"),
    ({"delta": 1.0}, "delta"), ({"applies_to": "everyone"}, "applies_to"),
])
def test_entries_are_validated(kwargs, match):
    with pytest.raises(ValueError, match=match):
        entry(**kwargs)


def test_entry_unit_and_status_are_typed():
    with pytest.raises(TypeError, match="unit"):
        LedgerEntry("c", "m", 1.0, 0.0, "one rating", Status.HOLDS, "user")
    with pytest.raises(TypeError, match="status"):
        LedgerEntry("c", "m", 1.0, 0.0, Unit.RATING, "holds", "user")


def test_charge_is_validated():
    acc = PrivacyAccountant(3)
    e = acc.register(entry())
    with pytest.raises(ValueError, match="3 integer counts"):
        acc.charge({e: np.array([1, 2])})
    with pytest.raises(ValueError, match="3 integer counts"):
        acc.charge({e: np.array([1.0, 2.0, 0.0])})
    with pytest.raises(ValueError, match=">= 0"):
        acc.charge({e: np.array([1, -1, 0])})
    with pytest.raises(IndexError, match="no entry 7"):
        acc.charge({7: np.zeros(3, dtype=np.int64)})
    acc.charge({e: np.zeros(3, dtype=np.int64)})       # nothing released: not a release
    assert acc.releases == 0


def test_status_is_the_weakest_applied():
    acc = PrivacyAccountant(2)
    holds = acc.register(entry(1.0))
    published = acc.register(entry(1.0, status=Status.AS_PUBLISHED))
    acc.charge({holds: np.array([1, 1])})
    assert acc.status() is Status.HOLDS                # the as-published one never applied
    acc.charge({published: np.array([0, 1])})
    assert acc.status() is Status.AS_PUBLISHED
    assert "as published: not a guarantee" in str(acc)


def test_guarantee_needs_every_output_covered_by_entries_that_hold():
    acc = PrivacyAccountant(["a", "b"])
    release = acc.register(entry(1.0, 1e-6, unit=Unit.USER, applies_to="user"))
    acc.charge({release: np.array([1, 1])})
    acc.declare_output("predictions", [release])
    assert acc.guarantee == {Unit.USER: (1.0, 1e-6)}
    assert "Guarantee for everything the model releases: ε = 1" in str(acc)
    acc.declare_output("diagnostics", gap="exact similarities")
    assert acc.guarantee is None
    assert "not covered: diagnostics: exact similarities" in str(acc)
    with pytest.raises(IndexError):
        acc.declare_output("x", [5])


def test_an_as_published_cover_is_no_guarantee():
    acc = PrivacyAccountant(1)
    claim = acc.register(entry(0.5, status=Status.AS_PUBLISHED))
    acc.declare_output("neighbour lists", [claim])
    assert acc.guarantee is None
    assert "covered only by entries that do not hold (as published)" in str(acc)


def _optimal_composition_delta(eps0: float, k: int, eps: float) -> float:
    """δ(ε) of k-fold composition of ε0-DP (Kairouz, Oh & Viswanath 2015, Thm 3.5; exact,
    independent of dp-accounting): Σ_l C(k,l) (e^{ε0(k−l)} − e^{ε+ε0 l})₊ / (1 + e^{ε0})^k."""
    total = 0.0
    for l in range(k + 1):
        gap = math.exp(eps0 * (k - l)) - math.exp(eps + eps0 * l)
        if gap > 0:
            total += math.exp(math.log(special.comb(k, l)) + math.log(gap)
                              - k * math.log1p(math.exp(eps0)))
    return total


@pytest.mark.parametrize("eps0, k", [(0.5, 10), (0.1, 200), (1.0, 30)])
def test_tight_epsilon_matches_the_optimal_composition_theorem(eps0, k):
    pytest.importorskip("dp_accounting")
    acc = PrivacyAccountant(2)
    e = acc.register(entry(eps0))
    acc.charge({e: np.array([k, 1])})
    delta = 1e-6
    exact = optimize.brentq(lambda x: _optimal_composition_delta(eps0, k, x) - delta,
                            0.0, k * eps0)
    tight = acc.tight_epsilon(delta=delta)
    assert exact - 1e-9 <= tight <= exact + 0.02       # valid (pessimistic) and close
    assert tight < k * eps0                            # better than basic composition
    assert acc.tight_epsilon(delta=delta, user=1) == pytest.approx(eps0, abs=0.01)


def test_tight_epsilon_never_exceeds_basic():
    pytest.importorskip("dp_accounting")
    acc = PrivacyAccountant(1)
    e = acc.register(entry(2.0, 1e-3))
    acc.charge({e: np.array([2])})
    assert acc.tight_epsilon(delta=1e-3) == math.inf   # below 1 − (1 − 1e-3)²: no finite ε
    assert acc.tight_epsilon() <= 4.0
    assert "tighter (dp-accounting PLD)" in str(acc)


def test_compose_matches_users_by_id():
    one = PrivacyAccountant(["a", "b"], model="fold 1")
    two = PrivacyAccountant(["b", "c"], model="fold 2")
    for acc, counts in ((one, [1, 2]), (two, [3, 4])):
        acc.charge({acc.register(entry(0.5)): np.array(counts)})
    acc = compose([one, two])
    frame = acc.per_user()
    assert frame.loc["a", "epsilon"] == 0.5
    assert frame.loc["b", "epsilon"] == 0.5 * (2 + 3)
    assert frame.loc["c", "epsilon"] == 2.0
    assert acc.total() == (2.5, 0.0)
    assert acc.model == "fold 1 + fold 2" and len(acc) == 2
    with pytest.raises(ValueError, match="empty"):
        compose([])


def test_to_frame_lists_entries_with_their_applications():
    acc = PrivacyAccountant(4)
    e = acc.register(entry(0.5, status=Status.AS_PUBLISHED))
    acc.charge({e: np.array([0, 1, 3, 10])})
    row = acc.to_frame().iloc[0]
    assert (row["unit"], row["status"]) == ("one rating", "as published")
    assert (row["applications_median"], row["applications_max"]) == (2.0, 10)
    assert repr(acc) == "PrivacyAccountant(model='model', users=4, entries=1, releases=1)"


def test_users_nothing_protects_have_infinite_epsilon():
    acc = PrivacyAccountant(["a", "b", "c"])
    sketch = acc.register(entry(2.0, 1e-4, unit=Unit.SET_ITEM, applies_to="user"))
    acc.charge({sketch: np.array([1, 1, 0])})
    acc.out_of_scope(Unit.SET_ITEM, np.array([False, False, True]), "a set smaller than τ")
    frame = acc.per_user(Unit.SET_ITEM)
    assert frame.epsilon.tolist() == [2.0, 2.0, math.inf]
    assert acc.total(Unit.SET_ITEM)[0] == math.inf
    assert "1 user(s) outside the guarantee (a set smaller than τ)" in str(acc)
    assert (acc.per_user(Unit.RATING).epsilon == math.inf).all()   # no entry: unprotected
    merged = compose([acc, acc])
    assert merged.per_user(Unit.SET_ITEM).epsilon.tolist() == [4.0, 4.0, math.inf]


def test_the_tight_bound_covers_every_user_not_only_the_largest_basic_one():
    """User a: 1000 applications of 0.0101 (basic 10.1, tight ≈ 2); user b: one of 10.
    The bound must cover b's 10 (composing each entry's largest count)."""
    pytest.importorskip("dp_accounting")
    acc = PrivacyAccountant(["a", "b"])
    small = acc.register(entry(0.0101))
    large = acc.register(entry(10.0, applies_to="chosen"))
    acc.charge({small: np.array([1000, 0]), large: np.array([0, 1])})
    assert acc.tight_epsilon(user="a") < 3.0
    assert acc.tight_epsilon(user="b") == pytest.approx(10.0)
    assert acc.tight_epsilon() >= 10.0


def test_the_accountant_pickles_without_its_lock():
    import pickle

    acc = PrivacyAccountant(2)
    acc.charge({acc.register(entry()): np.array([1, 2])})
    again = pickle.loads(pickle.dumps(acc))
    assert again.total() == acc.total() and again.lock is not acc.lock
    with again.lock:
        again.charge({0: np.array([1, 0])})
    assert again.total() == (1.0, 0.0)
