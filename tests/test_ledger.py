"""Tests of dprec.ledger.PrivacyLedger: sequential composition, table, validation."""

from __future__ import annotations

import dataclasses
import math

import pandas as pd
import pytest

from dprec import mechanisms as M
from dprec.ledger import LedgerEntry, PrivacyLedger


def _example() -> PrivacyLedger:
    ledger = PrivacyLedger()
    ledger.record("similarity", "randomized_response", epsilon=0.5,
                  unit="one item of a user's set", applications=2)
    ledger.record("selector", "exponential", epsilon=0.25, unit="one rating", applications=3)
    ledger.record("weights", "gaussian", epsilon=0.1, delta=1e-6, applications=4)
    return ledger


def test_total_is_sequential_composition():
    eps, delta = _example().total()
    assert eps == pytest.approx(2 * 0.5 + 3 * 0.25 + 4 * 0.1)
    assert delta == pytest.approx(4e-6)


def test_total_uses_exact_summation():
    ledger = PrivacyLedger()
    for _ in range(10):
        ledger.record("c", "laplace", epsilon=0.1)
    assert ledger.total() == (1.0, 0.0)                  # fsum, not 0.9999999999999999


def test_empty_ledger():
    ledger = PrivacyLedger()
    assert ledger.total() == (0.0, 0.0)
    assert len(ledger) == 0 and list(ledger) == []
    assert "no private mechanism" in str(ledger)
    frame = ledger.to_frame()
    assert frame.empty
    assert list(frame.columns) == [f.name for f in dataclasses.fields(LedgerEntry)]


def test_delta_total_is_capped_at_one():
    ledger = PrivacyLedger()
    ledger.record("a", "gaussian", epsilon=1.0, delta=0.6, applications=2)
    assert ledger.total() == (2.0, 1.0)


def test_infinite_epsilon_means_no_privacy():
    ledger = PrivacyLedger()
    ledger.record("exact", "none", epsilon=math.inf)
    ledger.record("selector", "exponential", epsilon=1.0)
    assert ledger.total()[0] == math.inf


def test_to_frame_and_table():
    ledger = _example()
    frame = ledger.to_frame()
    assert isinstance(frame, pd.DataFrame)
    assert frame.shape == (3, 7)
    assert frame["mechanism"].tolist() == ["randomized_response", "exponential", "gaussian"]
    assert frame["applications"].tolist() == [2, 3, 4]
    assert (frame["epsilon"] * frame["applications"]).sum() == pytest.approx(ledger.total()[0])
    assert frame.loc[0, "unit"] == "one item of a user's set"
    assert frame.loc[2, "unit"] == "one rating"                    # the default unit
    text = str(ledger)
    for word in ("randomized_response", "exponential", "gaussian", "total per user"):
        assert word in text
    assert "ε = 2.15" in text
    assert repr(ledger) == "PrivacyLedger(entries=3, epsilon=2.15, delta=4e-06)"


def test_entries_are_immutable_and_ordered():
    ledger = _example()
    entries = ledger.entries
    assert isinstance(entries, tuple) and [e.component for e in entries] == [
        "similarity", "selector", "weights"]
    assert list(ledger) == list(entries)
    with pytest.raises(dataclasses.FrozenInstanceError):
        entries[0].epsilon = 0.0
    entry = ledger.record("x", "laplace", epsilon=1)
    assert isinstance(entry, LedgerEntry) and entry.epsilon == 1.0
    assert isinstance(entry.epsilon, float)
    assert len(ledger) == 4


@pytest.mark.parametrize("kwargs, error, name", [
    ({"epsilon": 0.0}, ValueError, "epsilon"),
    ({"epsilon": -1.0}, ValueError, "epsilon"),
    ({"epsilon": math.nan}, ValueError, "epsilon"),
    ({"epsilon": "1"}, TypeError, "epsilon"),
    ({"epsilon": True}, TypeError, "epsilon"),
    ({"epsilon": 1.0, "delta": -0.1}, ValueError, "delta"),
    ({"epsilon": 1.0, "delta": 1.0}, ValueError, "delta"),
    ({"epsilon": 1.0, "delta": math.nan}, ValueError, "delta"),
    ({"epsilon": 1.0, "applications": 0}, ValueError, "applications"),
    ({"epsilon": 1.0, "applications": 1.5}, TypeError, "applications"),
    ({"epsilon": 1.0, "applications": True}, TypeError, "applications"),
])
def test_record_validates(kwargs, error, name):
    ledger = PrivacyLedger()
    with pytest.raises(error, match=name):
        ledger.record("c", "m", **kwargs)
    assert len(ledger) == 0                       # nothing recorded on failure


def test_records_mechanism_privacy_maps():
    # the intended use: record what the mechanisms' own maps say
    ledger = PrivacyLedger()
    ledger.record("similarity", "laplace", epsilon=M.laplace_epsilon(2.0, 1.0),
                  unit="one rating", applications=5)
    sigma = M.gaussian_sigma(1.0, 1e-5, 1.0)
    ledger.record("weights", "gaussian", epsilon=1.0,
                  delta=M.gaussian_delta(sigma, 1.0, 1.0))
    eps, delta = ledger.total()
    assert eps == pytest.approx(5 * 0.5 + 1.0)
    assert 0 < delta <= 1e-5


def test_disjoint_user_groups_compose_in_parallel():
    ledger = PrivacyLedger()
    ledger.record("similarity", "randomized_response", 1.0)
    ledger.record("ranking", "mallows", 0.5, users="group a")
    ledger.record("ranking", "mallows", 2.0, users="group b")
    ledger.record("ranking", "extra", 0.25, delta=1e-6, users="group a", applications=2)
    assert ledger.total() == pytest.approx((3.0, 0.0))
    assert "users" in ledger.to_frame().columns
