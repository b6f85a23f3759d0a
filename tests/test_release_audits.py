"""Every *holds* end-to-end model, audited through everything it releases on the edge cases
(`dprec.experiments.release_audit`): no lower bound above the claim; and the same audit
refutes models that leak in the ways the independent audit found (arrays in the data's
order, exact values, a count), so a leak of that class cannot pass unseen."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from test_experiments import FITTING_MESSAGES

from dprec import DPBaseline, PrivateKNN
from dprec.accountant.ledger import Status, Unit
from dprec.experiments import release_audit
from dprec.experiments.release_audit import (
    Scenario,
    audit_scenario,
    crowded_edge_data,
    edge_data,
    released,
)

DATA = edge_data()
QUICK = release_audit.scenarios(DATA, quick=True)


#: the full sweep less the quick set: ε = 0.1 and 5, and the non-default parameters
SWEEP = [s for s in release_audit.scenarios(DATA) if s.name not in {q.name for q in QUICK}]


@pytest.mark.slow
def test_dprec_audit_quick_refutes_the_claims_and_not_the_guarantees(tmp_path, capsys):
    """``dprec audit --quick``: the components' audits refute the claims *as published* and
    no guarantee that holds; the release audit of every quick scenario (each through
    `audit_scenario` with 200 runs and 100 pilot runs, seed 0; two at a time, the same
    rows) finds no release beating its claim, and the scenarios come in their order."""
    from dprec.experiments import privacy_audit

    table = privacy_audit.main(["--quick", "--out", str(tmp_path), "--n-jobs", "2"])
    assert not FITTING_MESSAGES.findall(capsys.readouterr().out)    # 826 lines of 864
    written = pd.read_csv(tmp_path / "privacy_audit.csv")
    assert len(written) == len(table) == 14
    assert (written.refuted == (written.status == "as published")).all()
    assert set(written.status) == {"as published", "holds"}
    composed = pd.read_csv(tmp_path / "cross_validated_privacy.csv")
    assert list(composed.models) == ["fold 1", "fold 2", "2 folds composed"]
    # the composed claim is the sum over the folds for the users in both
    assert composed.worst_epsilon.iloc[-1] <= composed.worst_epsilon.iloc[:-1].sum()
    assert composed.worst_epsilon.iloc[-1] >= composed.worst_epsilon.iloc[:-1].max()
    surfaces = pd.read_csv(tmp_path / "release_audit.csv")
    assert list(surfaces.scenario) == [s.name for s in QUICK]
    assert not surfaces.refuted.any(), surfaces[surfaces.refuted]
    measured = surfaces[np.isfinite(surfaces.claimed_epsilon)]
    assert measured.counts.str.endswith(" of 200").all(), measured
    assert (surfaces.verdict[~np.isfinite(surfaces.claimed_epsilon)]
            == "outside the guarantee, as reported").all()


@pytest.mark.slow
@pytest.mark.parametrize("scenario", SWEEP, ids=lambda s: s.name)
def test_no_release_beats_the_claim_non_default_and_extreme(scenario):
    # the sweep beyond the quick set (ε = 0.1 and 5, non-default parameters), small form
    result = audit_scenario(scenario, DATA, n_runs=150, pilot_runs=75, seed=2)
    assert not result.refuted, result


def _catalogue():
    return release_audit.catalogue(DATA)


class InnerOrderBaseline(DPBaseline):
    """A DPBaseline that also publishes its items in Surprise's inner order (the data's
    order, which a removal renumbers: the old `item_effects_` and `sim` were so ordered)."""

    def fit(self, trainset):
        super().fit(trainset)
        self.inner_order_ = np.asarray([trainset.to_raw_iid(i) for i in trainset.all_items()])
        return self


class ExactCountBaseline(DPBaseline):
    """A DPBaseline that also publishes the exact number of ratings."""

    def fit(self, trainset):
        super().fit(trainset)
        self.n_ratings_ = trainset.n_ratings
        return self


def _leaky(cls):
    users, items = _catalogue()
    return lambda seed: cls(unit="user", users=users, items=items,
                            random_state=None if seed is None else np.random.default_rng(seed))


@pytest.mark.parametrize("cls", [InnerOrderBaseline, ExactCountBaseline])
def test_the_audit_refutes_a_leak_of_the_class_found(cls):
    scenario = Scenario(cls.__name__, _leaky(cls), Unit.USER, "first")
    result = audit_scenario(scenario, DATA, n_runs=200, pilot_runs=100, seed=3)
    assert result.claimed_epsilon == pytest.approx(1.0)
    assert result.refuted and result.lower_bound > 3.0, result


def test_released_keys_arrays_by_raw_id_and_leaves_the_targets_own_answers_out():
    users, items = _catalogue()
    model = DPBaseline(users=users, items=items, random_state=None).fit(
        DATA.build_full_trainset())
    surface = released(model, users, items, own=("target",))
    assert "prediction/u1/i0" in surface and not any(k.startswith("prediction/target/")
                                                      for k in surface)
    assert "item_effects_" in surface["arrays"]
    assert set(surface["arrays"]["item_effects_"].index) == set(items)
    assert surface["report"]["text"].startswith("Privacy report")


def test_a_target_outside_the_guarantee_is_reported_not_measured():
    # the corrected PNCF's candidate with a single rating (removing it removes them from
    # the trainset): the report says ε = ∞, and the audit does not measure them
    scenario = Scenario("single", lambda seed: PrivateKNN(
        epsilon=1.0, k=2, verbose=False, selector="pncf_corrected", neighbourhood="user",
        random_state=seed), Unit.RATING, "single", "i1", outputs=("neighbour ids",),
        probes=("u1",))
    result = audit_scenario(scenario, DATA, n_runs=10, pilot_runs=10)
    assert math.isinf(result.claimed_epsilon) and not result.refuted
    assert result.verdict == "outside the guarantee, as reported"
    assert math.isnan(result.lower_bound) and result.counts == ""


def test_the_sole_raters_item_is_inside_the_defaults_guarantee():
    # DPBaseline at its defaults, without catalogues: the sole rater of an item is inside
    # the guarantee (ε = 1, the selection's δ included) and their item is not listed (the
    # attack on that boundary, and a model it refutes: tests/test_dp_baseline_lists.py)
    model = DPBaseline().fit(crowded_edge_data().build_full_trainset())
    report = model.privacy_report()
    claim = report.per_user(Unit.USER)
    assert np.isfinite(claim.epsilon).all()                    # nobody outside
    epsilon, delta = claim.loc["sole", ["epsilon", "delta"]]
    assert epsilon == pytest.approx(1.0, rel=1e-6) and 0.0 < delta <= 1e-5
    assert {e.status for e in report.entries} == {Status.HOLDS}
    assert "solo" not in model.item_effects_.index
