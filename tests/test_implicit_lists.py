"""Issue 51 for the implicit models: their defaults (only the privacy parameter given, no
catalogues, fresh noise) guarantee every user.  `PrivatePopularity` thresholds its own
noisy capped counts; `ImplicitKNN(set_epsilon=...)` and `PrivatePopularity(mechanism=
"reports")` choose their item list by partition selection before anyone reports, and
state who reports as a condition.  The regressions: the sole listener of an item and a
user of one item were outside the guarantee (ε = ∞) while the first line said *holds*."""

from __future__ import annotations

import math

import numpy as np
import pytest
from strategies import fit_quietly, trainset_of
from surprise import PredictionImpossible

from dprec import DPBaseline, PrivatePopularity
from dprec.accountant.ledger import BudgetExceededError, Status, Unit
from dprec.audit import audit_release, value_events
from dprec.endtoend.item_selection import item_list_entry
from dprec.endtoend.rating_space import SCOPE
from dprec.experiments.privacy_labels import guarantee_label
from dprec.implicit import knn as knn_module
from dprec.implicit import popularity as popularity_module
from dprec.implicit.knn import ImplicitKNN
from dprec.implicit.set_reports import item_counts
from dprec.mechanisms.partition_selection import selection_delta, threshold_steps

ITEMS = ["p0", "p1", "p2", "solo"]


def crowded(n_users: int = 400) -> np.ndarray:
    """`n_users` sets over `ITEMS`: everyone holds `p0`; all but `u1` hold `p1`; half
    hold `p2`; `u0` alone holds `solo` (its sole listener); `u1` holds `p0` alone (a
    user of one item).  No set has more than 3 items."""
    X = np.zeros((n_users, 4))
    X[:, 0] = X[:, 1] = 1.0
    X[:, 2] = np.random.default_rng(0).random(n_users) < 0.5
    X[0, 2], X[0, 3] = 0.0, 1.0
    X[1, 1:] = 0.0
    return X


@pytest.fixture(scope="module")
def trainset():
    return trainset_of(crowded(), items=ITEMS)


def without_solo():
    """`crowded()` less the sole listener's one interaction (`solo` then exists nowhere)."""
    X = crowded()
    X[0, 3] = 0.0
    return trainset_of(X[:, :3], items=ITEMS[:3])


#: name -> (the default model of that name, its unit, the ε asked)
DEFAULTS = {
    "PrivatePopularity": (lambda **kw: PrivatePopularity(1.0, cap=3, **kw), Unit.USER),
    "PrivatePopularity reports": (lambda **kw: PrivatePopularity(1.0, mechanism="reports",
                                                                 **kw), Unit.SET_ITEM),
    "ImplicitKNN set_epsilon": (lambda **kw: ImplicitKNN(set_epsilon=1.0, **kw),
                                Unit.SET_ITEM),
}


# ---------------------------------------------------------------- the regressions
@pytest.mark.parametrize("name", DEFAULTS)
def test_the_defaults_guarantee_every_user_at_the_epsilon_asked(name, trainset):
    """Without catalogues `u0` (the sole listener of `solo`) and, for the local models,
    `u1` (a user of one item) were outside the guarantee, at ε = ∞."""
    make, unit = DEFAULTS[name]
    model = fit_quietly(make(), trainset)
    report = model.privacy_report()
    assert report.out_of_scope_users(unit) == []
    per_user = report.per_user(unit)
    assert np.isfinite(per_user["epsilon"]).all()
    epsilon, delta = report.guarantee[unit]
    assert epsilon == per_user["epsilon"].max() == pytest.approx(1.0, rel=1e-12)
    assert epsilon <= 1.0                                    # never more than asked
    assert 0.0 < delta <= 1e-5
    assert guarantee_label(model) == "holds"
    head = next(h for h in report.headline() if h.unit == unit)
    assert head.holds and head.outside == 0 and head.epsilon == epsilon
    selected = [c for c in report.conditions if c.startswith(SCOPE["items selected"])]
    assert len(selected) == 1, report.conditions
    users = (SCOPE["users private"] if unit is Unit.USER
             else "who reports is public (local model): every user")
    assert any(c.startswith(users) for c in report.conditions), report.conditions
    assert not any("read from the data" in c for c in report.conditions)


@pytest.mark.parametrize("name", DEFAULTS)
def test_the_sole_listeners_item_is_never_listed_where_crowded_items_are(name, trainset):
    make, _ = DEFAULTS[name]
    for seed in range(15):
        listed = set(fit_quietly(make(random_state=seed), trainset).item_list_)
        assert {"p0", "p1"} <= listed and "solo" not in listed, (seed, listed)


def test_an_audit_finds_no_trace_of_the_sole_listener_in_the_default_popularity():
    """Whether `solo` is released at all: every time with `u0`, never without, before
    (a lower bound far above ε); now within the stated (ε, δ)."""
    a, b = trainset_of(crowded(), items=ITEMS), without_solo()

    def solo_released(trainset, seed):
        model = PrivatePopularity(1.0, cap=3, random_state=seed).fit(trainset)
        return float("solo" in model.counts_.index)

    bound = audit_release(solo_released, a, b, value_events([1.0]), n_runs=60,
                          random_state=0, delta=1e-5)
    assert not bound.violates(1.0), bound


def test_the_gaussian_popularity_guarantees_every_user_within_its_epsilon_and_delta(trainset):
    """The Gaussian release without catalogues: nobody outside, (ε, δ) within what was
    asked, and the sole listener's item never listed where the crowded ones are."""
    make = lambda **kw: PrivatePopularity(1.0, cap=3, mechanism="gaussian", **kw)  # noqa: E731
    report = fit_quietly(make(), trainset).privacy_report()
    assert report.out_of_scope_users(Unit.USER) == []
    epsilon, delta = report.guarantee[Unit.USER]
    assert 1.0 - 1e-8 < epsilon <= 1.0 and 5e-6 < delta <= 1e-5
    assert guarantee_label(fit_quietly(make(), trainset)) == "holds"
    assert any(c.startswith(SCOPE["items selected"]) for c in report.conditions)
    for seed in range(15):
        listed = set(fit_quietly(make(random_state=seed), trainset).item_list_)
        assert {"p0", "p1"} <= listed and "solo" not in listed, (seed, listed)

    def solo_released(trainset, seed):
        return float("solo" in make(random_state=seed).fit(trainset).counts_.index)

    bound = audit_release(solo_released, trainset_of(crowded(), items=ITEMS), without_solo(),
                          value_events([1.0]), n_runs=60, random_state=0, delta=delta)
    assert not bound.violates(epsilon), bound


def many_of_ones_own(rating: float = 1.0) -> np.ndarray:
    """40 users holding `i0` and `i1` (rating 5); `u0` alone holds 2,000 other items, at
    `rating` (far more than any cap below)."""
    X = np.zeros((41, 2002))
    X[1:, :2] = 5.0
    X[0, 2:] = rating
    return X


@pytest.mark.parametrize("mechanism", ["laplace", "gaussian"])
@pytest.mark.parametrize("threshold", [None, 4.0])
def test_a_user_past_the_cap_brings_no_more_than_cap_items(mechanism, threshold):
    """The cap bounds what a user adds to the counts, not which items exist: `u0`'s
    2,000 items beyond the cap (or rated below `threshold`: no interactions) had noisy
    counts too, and noise alone listed some, past the stated δ (cap = 1, delta = 0.01:
    in 6 fits of 20 with the Gaussian, in every fit with the Laplace)."""
    trainset = trainset_of(many_of_ones_own(5.0 if threshold is None else 1.0),
                           scale=(1, 5))
    for seed in range(10):
        model = PrivatePopularity(1.0, cap=1, mechanism=mechanism, delta=0.01,
                                  threshold=threshold, random_state=seed).fit(trainset)
        assert set(model.item_list_) <= {"i0", "i1"}, (seed, len(model.item_list_))


def test_the_local_selection_lists_no_item_without_an_interaction():
    """The local models' list (`select_items` on the holders' counts): `u0`'s 2,000
    items rated below `threshold` are no interactions, counted 0, and were listed by
    noise alone."""
    trainset = trainset_of(many_of_ones_own(1.0), scale=(1, 5))
    for seed in range(10):
        model = PrivatePopularity(1.0, mechanism="reports", threshold=4.0, delta=0.3,
                                  random_state=seed).fit(trainset)
        assert set(model.item_list_) <= {"i0", "i1"}, (seed, len(model.item_list_))


@pytest.mark.parametrize("make", [
    lambda seed: DPBaseline(epsilon=1.0, delta=0.3, max_items_per_user=1, random_state=seed),
    lambda seed: DPBaseline(epsilon=1.0, mechanism="gaussian", delta=0.3,
                            max_items_per_user=1, random_state=seed)],
    ids=["laplace", "gaussian"])
def test_dpbaseline_lists_no_item_only_dropped_ratings_bring(make):
    """The same for the end-to-end models' release (DPBaseline, and so DPItemKNN and
    DPALS): a user's ratings past `max_items_per_user` are dropped, and their items, of
    weight 0, were thresholded with the rest."""
    trainset = trainset_of(many_of_ones_own(), scale=(1, 5))
    for seed in range(10):
        listed = set(fit_quietly(make(seed), trainset).item_effects_.index)
        assert len(listed - {"i0", "i1"}) <= 1, (seed, len(listed))


# ---------------------------------------------------------------- the central selection
def test_the_central_counts_are_thresholded_at_the_documented_steps(trainset, monkeypatch):
    """The released counts themselves are thresholded (no extra ε): T from
    `threshold_steps` at t = cap/ε, k = cap items per user; its δ is the entry's."""
    noisy = np.array([37.0, 38.0, 500.0, 39.0])      # p0, p1, p2, solo

    def fixed(values, t, random_state):
        assert t == 3.0
        return noisy.copy()

    monkeypatch.setattr(popularity_module, "discrete_laplace", fixed)
    model = PrivatePopularity(1.0, cap=3).fit(trainset)
    steps = threshold_steps("laplace", 3.0, 1e-5, max_partitions=3, signal=1)
    assert steps == 38
    assert model.counts_.to_dict() == {"p1": 38.0, "p2": 500.0, "solo": 39.0}
    assert model.item_list_ == ("p1", "p2", "solo")
    (entry,) = model.privacy_report().entries
    added = selection_delta("laplace", 3.0, steps, max_partitions=3, signal=1)
    assert (entry.component, entry.epsilon, entry.delta) == (
        "popularity (items by partition selection)", 1.0, added)
    assert "at least 38 (12.7 noise scales)" in entry.note
    assert "k = cap = 3 items one user can bring" in entry.note


def test_the_popularity_lists_only_what_passes_and_answers_the_rest_as_unknown(trainset):
    model = PrivatePopularity(1.0, cap=3, random_state=1).fit(trainset)
    assert "solo" not in model.item_list_
    solo = trainset.to_inner_iid("solo")
    est, possible = model.estimate_arrays([0, 0], [solo, trainset.to_inner_iid("p2")])
    assert possible.tolist() == [False, True] and est[0] == 0.0
    with pytest.raises(PredictionImpossible, match="unknown"):
        model.estimate(0, solo)
    assert model.predict("u5", "solo").details["was_impossible"]
    top = model.recommend_batch(["u1", "u0"], n=4)
    assert set(top["iid"]) <= set(model.item_list_)
    assert top[top["uid"] == "u1"]["iid"].tolist() == ["p1", "p2"]   # p0 is u1's own
    assert top[top["uid"] == "u0"]["iid"].tolist() == ["p2"]


def test_an_empty_list_answers_nothing():
    """At a small ε nothing passes the threshold: no item, no recommendation."""
    trainset = trainset_of(crowded(30), items=ITEMS)
    for model in (PrivatePopularity(0.5, cap=3, random_state=0).fit(trainset),
                  fit_quietly(ImplicitKNN(set_epsilon=0.5, random_state=0), trainset)):
        assert model.item_list_ == ()
        assert model.recommend("u3", n=3) == []
        assert model.score_rows([0, 1])[0].shape == (2, 0)
        assert model.privacy_report().out_of_scope_users() == []


# ---------------------------------------------------------------- the local selection
@pytest.mark.parametrize("name", ["PrivatePopularity reports", "ImplicitKNN set_epsilon"])
def test_the_local_ledger_charges_the_list_then_the_reports_to_everyone(name, trainset):
    model = fit_quietly(DEFAULTS[name][0](), trainset)
    report = model.privacy_report()
    selection, reports = report.entries
    expected, _ = item_list_entry(0.1, 1e-5, Unit.SET_ITEM)
    assert selection == expected
    assert (reports.component, reports.delta, reports.unit) == ("set report", 0.0,
                                                               Unit.SET_ITEM)
    assert selection.epsilon + reports.epsilon == 1.0 and reports.epsilon == 0.9
    assert report.applications(0).tolist() == report.applications(1).tolist() == [1] * 400
    (output,) = report.outputs
    assert output.covered_by == (0, 1)


@pytest.mark.parametrize("name", DEFAULTS)
def test_the_budget_counts_the_selection_before_any_noise(name, trainset, monkeypatch):
    make, _ = DEFAULTS[name]

    def no_noise(*args):
        raise AssertionError("noise drawn before the budget was checked")

    module = knn_module if name.startswith("ImplicitKNN") else popularity_module
    with monkeypatch.context() as patch:
        patch.setattr(module, "fit_entropy", no_noise)
        algo = make(budget=(1.0, 0.0))                     # the selection's δ > 0
        with pytest.raises(BudgetExceededError, match=r"^budget \(ε = 1, δ = 0\) is below"):
            algo.fit(trainset)
        assert not hasattr(algo, "trainset")
    fit_quietly(make(budget=(1.0, 1e-5)), trainset)
    fit_quietly(make(budget=(1.0, 0.0), items=ITEMS), trainset)   # δ = 0 with a catalogue


@pytest.mark.parametrize("name", DEFAULTS)
def test_a_catalogue_ignores_the_selections_parameters(name, trainset):
    """With `items=` nothing is selected: `delta` and `selection_share` change nothing,
    δ = 0, the report names the catalogue."""
    make, unit = DEFAULTS[name]
    kwargs = {"items": [*ITEMS, "nobody's"], "random_state": 3}
    base = fit_quietly(make(**kwargs), trainset)
    other = fit_quietly(make(delta=0.0, selection_share=0.9, **kwargs), trainset)
    assert base.item_list_ == other.item_list_ == tuple(sorted(kwargs["items"]))
    np.testing.assert_array_equal(base.score_rows(range(5))[0], other.score_rows(range(5))[0])
    fresh = fit_quietly(make(items=kwargs["items"]), trainset).privacy_report()
    assert fresh.guarantee[unit] == (1.0, 0.0)
    assert [e.component for e in fresh.entries if e.component == "item list"] == []
    assert SCOPE["items given"] in fresh.conditions


def test_the_reports_popularity_is_implicit_knns_prior_without_a_catalogue(trainset):
    """The same seed chooses the same list and the same reports in both models."""
    counts = PrivatePopularity(1.0, mechanism="reports", random_state=4).fit(trainset).counts_
    model = fit_quietly(ImplicitKNN(set_epsilon=1.0, random_state=4), trainset)
    assert counts.index.tolist() == list(model.item_list_)
    assert model.report_epsilon_ == 0.9
    np.testing.assert_array_equal(counts.to_numpy(), item_counts(model.reports_, 0.9))
    assert model.reports_.shape == (400, len(model.item_list_))


def test_a_sketch_and_the_list_compose_with_the_reports():
    X = crowded()
    X[:, 2] = 1.0                          # sets of 3 items: τ = 2 keeps everyone
    X[1, 1:3] = 1.0
    trainset = trainset_of(X, items=ITEMS)
    sketch = {"name": "rr_minhash", "epsilon": 0.5, "width": 8, "tau": 2}
    report = fit_quietly(ImplicitKNN(k=5, sim_options=sketch, set_epsilon=1.0),
                         trainset).privacy_report()
    assert [e.component for e in report.entries] == ["item list", "similarity", "set report"]
    assert report.out_of_scope_users(Unit.SET_ITEM) == []
    epsilon, _ = report.guarantee[Unit.SET_ITEM]
    assert epsilon == pytest.approx(1.5, rel=1e-12)


def test_a_set_difference_of_several_items_selects_for_them():
    r"""$\alpha$ items move $\alpha$ counts: each count at ε_s/α and δ/α, the entry α
    times both, the rule says so."""
    from dprec.implicit.base import local_plan
    plan = local_plan(1.0, 0.1, 1e-5, Unit.SET_ITEM, True, set_difference=2)
    one, _ = item_list_entry(0.05, 5e-6, Unit.SET_ITEM)
    assert (plan.count_epsilon, plan.count_delta) == (0.05, 5e-6)
    assert plan.selection.epsilon == 2 * one.epsilon <= 0.1
    assert plan.selection.delta == 2 * one.delta <= 1e-5
    assert plan.selection.epsilon + plan.report_epsilon <= 1.0
    assert "set_difference = 2: 2 items of a set move 2 counts" in plan.selection.note
    model = fit_quietly(ImplicitKNN(set_epsilon=1.0, sim_options={"set_difference": 2}),
                        trainset_of(crowded(), items=ITEMS))
    assert model.privacy_report().entries[0] == plan.selection
    assert SCOPE["items selected"] + plan.selection.note in model.privacy_report().conditions
    assert model.privacy_report().guarantee[Unit.SET_ITEM][0] <= 1.0
    assert local_plan(1.0, 0.1, 1e-5, Unit.SET_ITEM, False).selection is None


def test_the_reports_get_the_rest_within_the_epsilon_asked():
    from dprec.implicit.base import local_plan

    for epsilon in (0.3, 1.0, 2.0 / 3.0, 7.1, 1e-3):
        plan = local_plan(epsilon, 0.1, 1e-5, Unit.SET_ITEM, True)
        assert 0.0 + plan.selection.epsilon + plan.report_epsilon <= epsilon
        assert plan.report_epsilon == pytest.approx(0.9 * epsilon, rel=1e-9)
    # the lattice's grid bounds the selection's ε from below: named by the parameter
    with pytest.raises(ValueError, match="^set_epsilon = 1e-06 with selection_share = 0.1: "
                                         "the item list's selection"):
        local_plan(1e-6, 0.1, 1e-5, Unit.SET_ITEM, True)
    assert local_plan(1e-6, 0.1, 1e-5, Unit.SET_ITEM, False).report_epsilon == 1e-6


# ---------------------------------------------------------------- the parameters
@pytest.mark.parametrize("name", DEFAULTS)
@pytest.mark.parametrize(("kwargs", "error", "message"), [
    ({"selection_share": 0.0}, ValueError, "^selection_share must be"),
    ({"selection_share": 1.0}, ValueError, "^selection_share must be"),
    ({"selection_share": "x"}, TypeError, "^selection_share must be"),
    ({"delta": 0.0}, ValueError, "^delta must be > 0 without items="),
    ({"delta": 1.0}, ValueError, "^delta must be"),
    ({"delta": math.nan}, ValueError, "^delta must be"),
])
def test_the_selection_parameters_are_refused_by_name(name, kwargs, error, message,
                                                      trainset):
    algo = DEFAULTS[name][0](**kwargs)
    with pytest.raises(error, match=message):
        algo.fit(trainset)
    assert not hasattr(algo, "trainset")


def test_the_documented_defaults():
    for algo in (PrivatePopularity(cap=3), ImplicitKNN()):
        assert (algo.delta, algo.selection_share) == (1e-5, 0.1)
    assert PrivatePopularity(cap=3).mechanism is None     # "laplace" with a cap (#53)


def test_the_non_private_configurations_keep_the_trainsets_items(trainset):
    """No selection without `set_epsilon` (no guarantee to keep): the exact scores keep
    every item, `solo` included, and their report is unchanged."""
    exact = ImplicitKNN(k=5).fit(trainset)
    assert exact.item_list_ == tuple(ITEMS)
    report = exact.privacy_report()
    assert report.guarantee is None and report.entries == () and report.conditions == []
    seeded = fit_quietly(ImplicitKNN(set_epsilon=1.0, random_state=0), trainset)
    assert {e.status for e in seeded.privacy_report().entries} == {Status.VOID}
