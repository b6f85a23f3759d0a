"""Tests of dprec.accountant.ledger: the per-user privacy accountant."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import optimize, special
from strategies import fuzz

from dprec.accountant.ledger import (
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
    assert acc.tight_epsilon(delta=2e-3) == pytest.approx(4.0, abs=1e-5)   # not tighter
    assert "tighter" not in str(acc)                   # so not printed


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
    # the guarantee is for the users in scope; who is outside depends on the data, so the
    # report prints the rule and not the users (nor their number)
    assert acc.total(Unit.SET_ITEM)[0] == 2.0
    assert acc.out_of_scope_users(Unit.SET_ITEM) == ["c"]
    text = str(acc)
    assert "outside the guarantee, ε = ∞" in text and "a set smaller than τ" in text
    assert "1 user" not in text and "'c'" not in text
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


# ------------------------------------------------------------------ the report's text
GOLDEN = """\
Privacy report: M
Guarantee for everything the model releases: none (ε = ∞).
  not covered: predictions: raw ratings
  neighbour lists: covered only by entries that do not hold (as published, void)
- similarity: laplace (x): ε = 1, δ = 0 per application (one item of a user's set), holds; \
applied to the releasing user, once per fit; so far 1 time to the median user, 1 to the most \
exposed
    the argument
- selector: exponential (y): ε = 0.5, δ = 0.1 per application (one rating), as published; \
applied to every candidate of a neighbour set another user asks for; so far 1 time to the \
median user, 2 to the most exposed
    a reason
- selector: z: ε = 1, δ = 0 per application (one rating), void; applied to every neighbour \
chosen for another user's query; so far 0 times to the median user, 0 to the most exposed
Per user, composed (one item of a user's set): worst ε = ∞ (no guarantee for some users, \
below); the other users: worst ε = 1, δ = 0 (holds for the similarity entries only: no \
end-to-end guarantee); median ε = 1
    outside the guarantee, ε = ∞ (who they are depends on the data: out_of_scope_users() \
lists them for the curator): no sketch
Per user, composed (one rating): worst ε = 1, δ = 0.2 (as published: not a guarantee); \
median ε = 0.5
    tighter (dp-accounting PLD): ε ≤ 0.9676 for every user at the same δ = 0.2 (as \
published: not a guarantee)
Note: seeded"""


def _reported() -> PrivacyAccountant:
    acc = PrivacyAccountant(["a", "b", "c"], model="M")
    held = acc.register(LedgerEntry("similarity", "laplace (x)", 1.0, 0.0, Unit.SET_ITEM,
                                    Status.HOLDS, "user", "the argument"))
    claim = acc.register(LedgerEntry("selector", "exponential (y)", 0.5, 0.1, Unit.RATING,
                                     Status.AS_PUBLISHED, "candidates", "a reason"))
    void = acc.register(LedgerEntry("selector", "z", 1.0, 0.0, Unit.RATING, Status.VOID,
                                    "chosen"))
    acc.charge({held: np.array([1, 1, 0]), claim: np.array([2, 0, 1])})
    acc.out_of_scope(Unit.SET_ITEM, np.array([False, False, True]), "no sketch")
    acc.declare_output("predictions", gap="raw ratings")
    acc.declare_output("neighbour lists", [claim, void])
    acc.notes.append("seeded")
    return acc


def test_the_report_reads_as_written():
    pytest.importorskip("dp_accounting")
    acc = _reported()
    assert str(acc) == GOLDEN
    assert (acc.status(Unit.SET_ITEM), acc.status(Unit.RATING)) == (Status.HOLDS,
                                                                     Status.AS_PUBLISHED)


def test_a_guarantee_over_two_units_and_no_mechanism():
    acc = PrivacyAccountant(1)
    one = acc.register(entry(1.0, applies_to="user"))
    two = acc.register(entry(2.0, 1e-5, unit=Unit.USER, applies_to="user"))
    acc.charge({one: np.array([1]), two: np.array([1])})
    acc.declare_output("answers", [one, two])
    assert str(acc).splitlines()[1] == (
        "Guarantee for everything the model releases: ε = 1, δ = 0 per one rating (worst "
        "user; holds); ε = 2, δ = 1e-05 per one user (all of their ratings) (worst user; "
        "holds)")
    assert str(PrivacyAccountant(1)).splitlines()[-1] == "No private mechanism ran."


def test_a_guarantee_line_and_the_tight_text_branches():
    pytest.importorskip("dp_accounting")
    acc = PrivacyAccountant(["only"], model="R")
    one = acc.register(LedgerEntry("ranking", "mallows", 1.0, 0.0, Unit.RANKING_SWAP,
                                   Status.HOLDS, "user"))
    acc.charge({one: np.array([1])})
    acc.declare_output("scores", [one])
    text = str(acc).splitlines()
    assert text[:2] == ["Privacy report: R",
                        "Guarantee for everything the model releases: ε = 1, δ = 0 per a swap "
                        "of two items in one user's ranking (worst user; holds)"]
    assert text[-1] == ("Per user, composed (a swap of two items in one user's ranking): worst "
                        "ε = 1, δ = 0 (holds: the guarantee for everything released); median "
                        "ε = 1")                  # one pure release: nothing tighter at δ = 0
    saturated = PrivacyAccountant(1)
    half = saturated.register(entry(0.5, 0.5))
    saturated.charge({half: np.array([2])})
    assert str(saturated).splitlines()[-1] == ("    (the entries' δ add up to 1: no "
                                               "composition bounds it)")
    assert saturated.tight_epsilon() == math.inf          # δ = 1 + 1e-6: nothing to bound


def test_no_dp_accounting_is_said(monkeypatch):
    import builtins

    real = builtins.__import__

    def no_accounting(name, *args, **kwargs):
        if name.startswith("dp_accounting"):
            raise ImportError(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_accounting)
    acc = PrivacyAccountant(1)
    acc.charge({acc.register(entry(1.0)): np.array([1])})
    assert str(acc).splitlines()[-1] == ("    (install dp-accounting, a dependency of dprec, "
                                         "for a tighter bound)")


# ------------------------------------------------------------------ pinned details
def test_entries_convert_to_floats_and_name_their_parameters():
    e = LedgerEntry("c", "m", 1, 0, Unit.RATING, Status.HOLDS, "user")
    assert type(e.epsilon) is float and type(e.delta) is float
    assert LedgerEntry("c", "none", math.inf, 0, Unit.RATING, Status.HOLDS,
                       "user").epsilon == math.inf    # "no privacy" is a valid entry
    with pytest.raises(ValueError, match="^epsilon must"):
        LedgerEntry("c", "m", 0, 0, Unit.RATING, Status.HOLDS, "user")
    with pytest.raises(ValueError, match="^delta must"):
        LedgerEntry("c", "m", 1, -0.1, Unit.RATING, Status.HOLDS, "user")


def test_users_are_kept_as_given_and_must_exist():
    acc = PrivacyAccountant([1, "1", "a"])
    acc.charge({acc.register(entry(0.5)): np.array([1, 2, 0])})
    frame = acc.per_user()
    assert frame.index.tolist() == [1, "1", "a"] and frame.index.name == "user"
    assert frame.releases.dtype == np.int64 and acc.applications(0).dtype == np.int64
    assert acc.tight_epsilon(user="1") == pytest.approx(1.0, abs=1e-3)
    assert acc.tight_epsilon(user="a") == 0.0                 # nothing applied to them
    with pytest.raises(ValueError, match="not in this accountant"):
        acc.tight_epsilon(user=2)
    for users in (0, [], -1):
        with pytest.raises((ValueError, TypeError), match="users must"):
            PrivacyAccountant(users)
    assert PrivacyAccountant(1).n_users == 1


def test_delta_adds_up_over_entries_and_stops_at_one():
    acc = PrivacyAccountant(1)
    a, b = acc.register(entry(0.1, 0.3)), acc.register(entry(0.1, 0.4, applies_to="chosen"))
    acc.charge({a: np.array([1]), b: np.array([1])})
    assert acc.total() == pytest.approx((0.2, 0.7))
    acc.charge({a: np.array([2])})                  # 0.3 · 3 + 0.4 = 1.3: capped
    assert acc.total()[1] == 1.0
    assert acc.per_user().delta.tolist() == [1.0]


def test_tight_epsilon_accounts_for_each_entrys_delta():
    """One (ε = 1, δ = 0.01) mechanism at δ′ = 0.02: ε′ = ln(e − (δ′ − δ)(1 + e)/(1 − δ))
    (its privacy profile), not the pure mechanism's ln(e − δ′(1 + e))."""
    pytest.importorskip("dp_accounting")
    acc = PrivacyAccountant(1)
    acc.charge({acc.register(entry(1.0, 0.01)): np.array([1])})
    e = math.e
    expected = math.log(e - (0.02 - 0.01) * (1 + e) / (1 - 0.01))
    assert expected - 1e-9 <= acc.tight_epsilon(delta=0.02) <= expected + 2e-3
    with pytest.raises(ValueError, match="^delta must"):
        acc.tight_epsilon(delta=1.0)


def test_units_are_named_where_several_exist():
    acc = PrivacyAccountant(2)
    acc.charge({acc.register(entry(1.0)): np.array([1, 0]),
                acc.register(entry(2.0, unit=Unit.USER, applies_to="user")): np.array([0, 1])})
    assert acc.status(Unit.USER) is Status.HOLDS
    assert acc.tight_epsilon(Unit.USER) == pytest.approx(2.0, abs=1e-3)
    assert acc.tight_epsilon(Unit.SET_ITEM) == math.inf     # nothing protects that unit
    assert PrivacyAccountant(1).status() is Status.HOLDS      # nothing applied: vacuous


def test_budget_names_the_first_user_past_it():
    acc = PrivacyAccountant(["x", "y", "z"], budget=(1.0, 0.05))
    e = acc.register(entry(0.5, 0.02))
    d = acc.register(entry(0.01, 0.02, applies_to="chosen"))
    acc.charge({e: np.array([2, 0, 0])})                     # x exactly at ε = 1
    with pytest.raises(BudgetExceededError, match=r"user 'y' to ε = 0.03, δ = 0.06"):
        acc.charge({d: np.array([0, 3, 0])})                 # past δ only
    with pytest.raises(BudgetExceededError, match=r"user 'x' to ε = 1.5, δ = 0.06"):
        acc.charge({e: np.array([1, 0, 1])})                 # past ε only
    acc.charge({d: np.array([0, 2, 0])})                     # y: δ = 0.04, not past 0.05
    exact = PrivacyAccountant(["w"], budget=(1.0, 0.04))
    f = exact.register(entry(0.25, 0.02))
    exact.charge({f: np.array([2])})                         # δ exactly at the budget
    two_units = exact.register(entry(2.0, 0.0, unit=Unit.USER, applies_to="user"))
    with pytest.raises(BudgetExceededError, match=r"ε = 2, δ = 0 \(one user"):
        exact.charge({two_units: np.array([1])})             # each unit has its own budget


def test_index_errors_name_the_entry():
    acc = PrivacyAccountant(1)
    acc.register(entry())
    with pytest.raises(IndexError, match=r"no entry 1 \(the accountant has 1\)"):
        acc.applications(1)
    with pytest.raises(IndexError, match="no entry -1"):
        acc.applications(-1)


def test_out_of_scope_needs_a_boolean_mask():
    acc = PrivacyAccountant(3)
    with pytest.raises(ValueError, match="boolean mask of 3"):
        acc.out_of_scope(Unit.RATING, np.array([0, 1, 0]), "why")
    with pytest.raises(ValueError, match="boolean mask of 3"):
        acc.out_of_scope(Unit.RATING, np.array([True, False]), "why")


def test_compose_keeps_scope_notes_and_releases():
    one, two = PrivacyAccountant(["a", "b"]), PrivacyAccountant(["b", "c"])
    for acc, mask, note in ((one, [True, False], "n1"), (two, [False, True], "n2")):
        acc.charge({acc.register(entry(1.0)): np.array([1, 1])})
        acc.out_of_scope(Unit.RATING, np.array(mask), "out")
        acc.notes += [note, "shared"]
    merged = compose([one, two])
    assert merged.per_user().epsilon.tolist() == [math.inf, 2.0, math.inf]   # a, b, c
    assert merged.out_of_scope_users() == ["a", "c"] and merged.total() == (2.0, 0.0)
    assert str(merged).count("curator): out\n") == 1   # one reason, said once
    assert merged.notes == ["n1", "shared", "n2"] and merged.releases == 2


def test_to_frame_columns_without_entries():
    assert list(PrivacyAccountant(1).to_frame().columns) == [
        "component", "mechanism", "epsilon", "delta", "unit", "status", "applies_to", "note",
        "applications_median", "applications_max"]


def test_release_once_charges_every_user_once_and_covers_the_outputs():
    from dprec.accountant.ledger import LedgerEntry, PrivacyAccountant, Status, Unit

    acc = PrivacyAccountant(["a", "b", "c"])
    first = acc.register(LedgerEntry("x", "laplace", 0.25, 0.0, Unit.USER, Status.HOLDS, "user"))
    second = acc.register(LedgerEntry("y", "laplace", 0.5, 0.0, Unit.USER, Status.HOLDS, "user"))
    acc.release_once([first, second], ["predictions", "lists"], "post-processing")
    assert acc.applications(first).tolist() == [1, 1, 1]
    assert acc.applications(second).tolist() == [1, 1, 1]
    assert [o.name for o in acc.outputs] == ["predictions", "lists"]
    assert all(o.covered_by == (first, second) and o.gap is None for o in acc.outputs)
    assert acc.notes == ["post-processing"] and acc.releases == 1
    assert acc.guarantee == {Unit.USER: (0.75, 0.0)}


# ---------------------------------------------------------------- properties (hypothesis)
@fuzz(150)
@given(st.lists(st.tuples(st.floats(0.01, 10.0), st.floats(0.0, 0.01),
                          st.sampled_from([Unit.RATING, Unit.SET_ITEM]),
                          st.lists(st.integers(0, 5), min_size=4, max_size=4)), max_size=8))
def test_accountant_composes_per_user_and_unit(entries):
    acc = PrivacyAccountant(4)
    for eps, delta, unit, counts in entries:
        index = acc.register(LedgerEntry("c", "m", eps, delta, unit, Status.HOLDS, "user"))
        acc.charge({index: np.array(counts)})
    for unit in (Unit.RATING, Unit.SET_ITEM):
        mine = [(e, d, c) for e, d, u, c in entries if u == unit]
        if not mine:
            assert acc.total(unit) == (math.inf, 0.0)
            continue
        per_user = [math.fsum(e * c[n] for e, _, c in mine) for n in range(4)]
        deltas = [min(1.0, math.fsum(d * c[n] for _, d, c in mine)) for n in range(4)]
        np.testing.assert_allclose(acc.per_user(unit)["epsilon"], per_user, rtol=1e-12)
        eps, delta = acc.total(unit)
        assert eps == pytest.approx(max(per_user), rel=1e-12)
        assert delta == pytest.approx(max(deltas), rel=1e-12, abs=1e-300)


# ------------------------------------------- issue #33, finding 8: what the report prints
def _epsilons_without_status(text: str) -> list[str]:
    """The report's lines that print a composed ε (not an entry's own, which carries its
    status) without a status beside it, and any ε = 0."""
    tags = ("holds", "not a guarantee")
    bad = [line for line in text.splitlines() if re.search(r"ε = 0(?![.\d])", line)]
    return bad + [line for line in text.splitlines()
                  if re.search(r"ε (=|≤) \d", line) and not line.startswith("- ")
                  and not any(tag in line for tag in tags)]


def test_nothing_charged_is_said_not_printed_as_epsilon_zero():
    acc = PrivacyAccountant(3, model="M")
    acc.register(entry(1.0))
    acc.declare_output("neighbour lists", [0])
    text = str(acc)
    assert "Per user, composed (one rating): nothing released through these entries yet" in text
    assert "Guarantee for everything the model releases: nothing released yet per one rating" \
        in text
    assert _epsilons_without_status(text) == []
    acc.charge({0: np.array([0, 0, 1])})          # two of three untouched: no median ε = 0
    assert "most users untouched so far" in str(acc)
    assert _epsilons_without_status(str(acc)) == []


def test_every_composed_epsilon_carries_its_status():
    pytest.importorskip("dp_accounting")
    acc = PrivacyAccountant(2, model="M")
    sketch = acc.register(entry(1.0, applies_to="user", status=Status.HOLDS))
    acc.charge({sketch: np.array([1, 1])})
    acc.declare_output("predictions", gap="raw ratings")
    text = str(acc)
    assert ("worst ε = 1, δ = 0 (holds for the selector entries only: no end-to-end guarantee); "
            "median ε = 1") in text
    assert _epsilons_without_status(text) == []
    assert _epsilons_without_status(GOLDEN) == []
    seeded = PrivacyAccountant(2, seeded=True)
    seeded.charge({seeded.register(entry(1.0)): np.array([1, 1])})
    assert "worst ε = 1, δ = 0 (void: not a guarantee)" in str(seeded)


@pytest.mark.parametrize("epsilon", [710.0, 1e4])
def test_a_large_epsilon_falls_back_to_basic_composition_and_says_so(epsilon):
    pytest.importorskip("dp_accounting")
    acc = PrivacyAccountant(["a", "b"])
    big = acc.register(entry(epsilon, applies_to="user"))
    small = acc.register(entry(0.5))
    acc.charge({big: np.array([1, 0]), small: np.array([3, 2])})
    with pytest.warns(RuntimeWarning, match="basic composition is returned"):
        assert acc.tight_epsilon() == epsilon + 1.5
    with pytest.warns(RuntimeWarning):
        assert acc.tight_epsilon(user="a") == epsilon + 1.5
    assert acc.tight_epsilon(user="b") < 1.0          # b's entries compose as before
    assert "basic composition is the bound" not in str(acc)   # δ = 0: nothing tighter anyway
    approximate = PrivacyAccountant(["a", "b"])          # δ > 0: a tighter bound could exist
    big = approximate.register(entry(epsilon, 1e-3, applies_to="user"))
    small = approximate.register(entry(0.5, 1e-3))
    approximate.charge({big: np.array([1, 0]), small: np.array([3, 2])})
    text = str(approximate)
    assert f"(basic composition is the bound here: an entry's ε = {epsilon:.4g} is past what " \
           "dp-accounting represents" in text


def test_an_overflow_inside_dp_accounting_falls_back(monkeypatch):
    pytest.importorskip("dp_accounting")
    from dp_accounting.pld import privacy_loss_distribution as pld

    def overflow(*args, **kwargs):
        raise OverflowError("math range error")

    monkeypatch.setattr(pld, "from_privacy_parameters", overflow)
    acc = PrivacyAccountant(1)
    acc.charge({acc.register(entry(2.0, 1e-3)): np.array([4])})
    with pytest.warns(RuntimeWarning, match="overflowed composing ε = 8"):
        assert acc.tight_epsilon() == 8.0
    assert "(basic composition is the bound here: dp-accounting overflowed" in str(acc)

