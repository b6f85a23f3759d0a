"""DPBaseline's lists: public catalogues, who is outside the guarantee without them,
and ids of any type."""

from __future__ import annotations

import copy
import math

import numpy as np
import pandas as pd
import pytest
from strategies import catalogues
from surprise import Dataset, Reader

from dprec import DPBaseline, datasets
from dprec.accountant.ledger import Unit
from dprec.audit import with_rating
from dprec.endtoend import dp_baseline
from dprec.endtoend.dp_baseline import NOTES, OUTPUTS, SCOPE, contributions, sorted_ids


@pytest.fixture(scope="module")
def data():
    return datasets.synthetic(120, 60, 2500, random_state=1)


def frame(rows) -> Dataset:
    return Dataset.load_from_df(pd.DataFrame(rows), Reader(rating_scale=(1, 5)))


def sole_rater_data() -> Dataset:
    rows = [(f"u{u}", f"i{i}", float(1 + (u + 2 * i) % 5)) for u in range(8) for i in range(3)]
    rows += [("sole", "i0", 4.0), ("sole", "solo", 5.0), ("single", "i1", 2.0)]
    return frame(rows)


UNIT = {"user": Unit.USER, "rating": Unit.RATING}


@pytest.mark.parametrize(("unit", "mechanism"), [("rating", "laplace"), ("user", "gaussian"),
                                                ("user", "laplace"), ("rating", "gaussian")])
def test_without_catalogues_every_user_is_inside_the_guarantee(unit, mechanism):
    # #51: the items are chosen by private partition selection (the sole rater's item
    # passes only with the selection's δ) and the user list is no release (each user's
    # answers are theirs alone): the sole rater, the single-rating user and every other
    # user have the ε asked for — on #33's lists read from the data all were at ε = ∞
    data = sole_rater_data()
    report = DPBaseline(unit=unit, mechanism=mechanism).fit(
        data.build_full_trainset()).privacy_report()
    eps = report.per_user(UNIT[unit])["epsilon"]
    assert np.isfinite(eps).all() and eps.max() <= 1.0 + 1e-9, eps
    assert report.out_of_scope_users(UNIT[unit]) == [] and report.scope_rule() is None
    assert report.total(UNIT[unit])[0] == pytest.approx(1.0, rel=1e-6)
    assert report.conditions[0].startswith(SCOPE["items selected"])
    assert report.conditions[1] == SCOPE["users private"]
    assert "sole rater" not in str(report) and "single rating" not in str(report)
    assert 0 < report.total(UNIT[unit])[1] <= 1e-5          # the selection's δ, charged


def test_the_sole_raters_item_is_listed_only_through_the_selections_delta():
    # the item "solo" exists through one user: at ε = 1 it is never listed (its weight,
    # one user's, is far below the threshold), while items with enough raters are; the
    # threshold is a public function of the parameters (the same on both datasets)
    rows = [(f"u{u:03d}", f"i{i}", float(1 + (u + 2 * i) % 5)) for u in range(400)
            for i in range(3)] + [("sole", "i0", 4.0), ("sole", "solo", 5.0)]
    trainset = frame(rows).build_full_trainset()
    listed = [set(DPBaseline(epsilon=1.0, unit=unit).fit(trainset).item_effects_.index)
              for unit in ("user", "rating") for _ in range(5)]
    assert all(items == {"i0", "i1", "i2"} for items in listed), listed


def test_a_user_with_many_items_brings_at_most_max_items_per_user(monkeypatch):
    # the partition selection's k: a user's contribution to the release is capped to a
    # random subset of `max_items_per_user` items, fresh per fit (their own answers still
    # read all of their ratings); with a public catalogue nothing is capped
    from dprec.endtoend import dp_baseline

    rows = [(f"u{u:03d}", f"m{i}", 3.0) for u in range(5) for i in range(3)]
    rows += [("many", f"m{i}", 5.0) for i in range(30)]
    trainset = frame(rows).build_full_trainset()
    released = []

    def recording(matrix, *args):
        released.append(np.diff(matrix.indptr))
        return contributions(matrix, *args)

    monkeypatch.setattr(dp_baseline, "contributions", recording)
    model = DPBaseline(max_items_per_user=4, random_state=None).fit(trainset)
    many = model.rating_space.users.index["many"]
    assert released[-1][many] == 4 and (np.delete(released[-1], many) == 3).all()
    assert "k = 4 items" in str(model.privacy_report())
    DPBaseline(max_items_per_user=4, **catalogues(frame(rows))).fit(trainset)
    assert released[-1][many] == 30
    own = model._user_effects[many]              # b_u from all 30 ratings of 5.0
    assert own == pytest.approx((30 * 5.0 - 30 * model.mu_ - 30 * model.unlisted_effect_
                                 - sum(model.item_effects_.get(f"m{i}", 0.0) -
                                       model.unlisted_effect_ for i in range(3)
                                       if f"m{i}" in model.item_effects_))
                                / (30 + model.user_shrinkage_), rel=1e-9)
    with pytest.raises(ValueError, match="^max_items_per_user"):
        DPBaseline(max_items_per_user=0).fit(trainset)


def test_a_users_ratings_of_unlisted_items_count_against_the_unlisted_effect():
    """b_u reads a rating of an item left off the list against μ + the unlisted item's
    effect, as the answers do: on data whose listed items are all rated above the scale's
    middle, that effect is far from 0, so its sign and its use both show."""
    rows = [(f"u{u:03d}", f"m{i}", float(4 + (u + i) % 2)) for u in range(300) for i in range(4)]
    rows += [("one", "m0", 4.0), ("one", "solo", 2.0), ("one", "solo2", 1.0)]
    model = DPBaseline(epsilon=10.0, random_state=0).fit(frame(rows).build_full_trainset())
    assert list(model.item_effects_.index) == [f"m{i}" for i in range(4)]
    assert model.unlisted_effect_ < -0.3
    base = {item: model.mu_ + effect for item, effect in model.item_effects_.items()}
    own = sum(r - base.get(i, model.mu_ + model.unlisted_effect_)
              for i, r in [("m0", 4.0), ("solo", 2.0), ("solo2", 1.0)])
    b_u = own / (3 + model.user_shrinkage_)
    expected = model.mu_ + b_u + model.item_effects_["m1"]
    assert 1.0 < expected < 5.0
    assert model.predict("one", "m1").est == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("unit", ["user", "rating"])
def test_a_catalogue_makes_the_lists_public(unit):
    # with users= and items= the sole rater and the single-rating user are inside the
    # guarantee: their removal changes no list, no prediction becomes impossible, and
    # the report's users are the catalogue's
    data = sole_rater_data()
    listed = catalogues(data)
    target, item = ("sole", "solo") if unit == "user" else ("single", "i1")
    a = data.build_full_trainset()
    smaller = copy.copy(data)
    smaller.raw_ratings = [r for r in data.raw_ratings if r[0] != target]
    b = (smaller if unit == "user" else with_rating(data, target, item, None)).build_full_trainset()
    fits = [DPBaseline(unit=unit, **listed).fit(t) for t in (a, b)]
    reports = [f.privacy_report() for f in fits]
    assert list(reports[0].user_ids) == list(reports[1].user_ids) == sorted_ids(listed["users"])
    assert all(r.total(UNIT[unit])[0] == pytest.approx(1.0) for r in reports)
    for model in fits:
        assert list(model.item_effects_.index) == sorted_ids(listed["items"])
        for uid in ("stranger", target):
            assert not model.predict(uid, "solo").details["was_impossible"]
        assert model.predict("stranger", "nothing").details["was_impossible"]


def test_listed_users_and_items_without_ratings_get_the_release():
    data = sole_rater_data()
    listed = catalogues(data)
    users, items = listed["users"] + ["ghost"], listed["items"] + ["new"]
    trainset = data.build_full_trainset()
    algo = DPBaseline(user_shrinkage=0.0, users=users, items=items,
                      random_state=None).fit(trainset)
    assert np.isfinite(algo.item_effects_["new"])           # noise only, no NaN
    assert algo._user_effects[algo._space.users.index["ghost"]] == 0.0   # λ = 0, no rating
    ghost = algo.predict("ghost", "new")
    assert ghost.details == {"was_impossible": False}
    assert ghost.est == pytest.approx(np.clip(algo.mu_ + algo.item_effects_["new"], 1, 5))
    assert users[-1] == "ghost" and items[-1] == "new"        # the catalogues are not sorted
    assert algo.privacy_report().n_users == len(users)


def test_catalogue_errors_say_what_is_wrong(data):
    trainset = data.build_full_trainset()
    users = catalogues(data)["users"]
    with pytest.raises(ValueError, match=f"^users holds a repeated id, {users[3]!r}$"):
        DPBaseline(users=users + [users[3]]).fit(trainset)
    with pytest.raises(TypeError, match="^ids: "):
        sorted_ids([(1, "a"), (1, 2)])
    odd = frame([((1, "a"), "x", 4.0), ((1, 2), "y", 2.0)]).build_full_trainset()
    with pytest.raises(TypeError, match="^users: "):
        DPBaseline().fit(odd)
    odd = frame([(1, (1, "a"), 4.0), (2, (1, 2), 2.0)]).build_full_trainset()
    with pytest.raises(TypeError, match="^items: "):
        DPBaseline(items=[(1, "a"), (1, 2)]).fit(odd)
    flat = frame([("u", ("x", 1), 4.0), ("v", ("y", 2), 2.0)]).build_full_trainset()
    index = DPBaseline(items=[("y", 2), ("x", 1)]).fit(flat).item_effects_.index
    assert index.nlevels == 1 and list(index) == [("x", 1), ("y", 2)]


def test_catalogues_of_any_id_type():
    # numpy arrays are read as Python ids; tuples stay ids (not index levels)
    rows = [((1, "a"), "x", 4.0), ((2, "b"), "y", 2.0), ((1, "a"), "y", 3.0)]
    trainset = frame(rows).build_full_trainset()
    algo = DPBaseline(items=np.array(["y", "x", "z"]), random_state=None).fit(trainset)
    assert list(algo.item_effects_.index) == ["x", "y", "z"]
    assert {type(i) for i in algo.item_effects_.index} == {str}
    assert algo.item_effects_.name == "item_effect"
    assert list(algo.privacy_report().user_ids) == [(1, "a"), (2, "b")]
    users = pd.Index([(2, "b"), (1, "a"), (3, "c")], tupleize_cols=False)
    algo = DPBaseline(users=users, random_state=None).fit(trainset)
    assert algo.privacy_report().user_ids.tolist() == [(1, "a"), (2, "b"), (3, "c")]
    assert not algo.predict((3, "c"), "x").details["was_impossible"]
    assert algo.predict((4, "d"), "nothing").details["was_impossible"]
    given = ["z", "y", "x"]
    DPBaseline(items=given).fit(trainset)
    assert given == ["z", "y", "x"]                       # the catalogue is not modified


def test_the_report_states_the_models_texts(data):
    from dprec.endtoend.dp_baseline import WEIGHTS

    trainset = data.build_full_trainset()
    for unit, mechanism in (("user", "gaussian"), ("rating", "laplace"),
                            ("user", "laplace")):
        report = DPBaseline(unit=unit, mechanism=mechanism).fit(trainset).privacy_report()
        assert report.model == f"DPBaseline(unit={unit!r}, mechanism={mechanism!r})"
        note = NOTES[mechanism].format(unit=unit, weights=WEIGHTS[unit, mechanism])
        selected = " (items by partition selection)"
        if mechanism == "gaussian":
            expected = [("effects" + selected, "discrete gaussian (zCDP)", "user", note)]
        else:
            expected = [("global effect", "laplace (lattice)", "user", note),
                        ("item effects" + selected, "laplace (lattice)", "user", note)]
        assert [(e.component, e.mechanism, e.applies_to, e.note)
                for e in report.entries] == expected
        indices = tuple(range(len(expected)))
        assert [o.name for o in report.outputs] == list(OUTPUTS)
        assert all(o.covered_by == indices and o.gap is None for o in report.outputs)
        assert report.notes == [NOTES["answers"]]
        assert [report.conditions[0][:len(SCOPE["items selected"])],
                report.conditions[1]] == [SCOPE["items selected"], SCOPE["users private"]]
        for index in indices:
            assert report.applications(index).tolist() == [1] * report.n_users
    given = DPBaseline(**catalogues(data)).fit(trainset).privacy_report()
    assert given.conditions == [SCOPE["items given"], SCOPE["users given"]]
    for unit in ("rating", "user"):     # nobody outside, whatever the lists hold
        text = str(DPBaseline(unit=unit).fit(sole_rater_data().build_full_trainset())
                   .privacy_report())
        assert all(SCOPE[reason] not in text for reason in ("sole rater", "single rating",
                                                            "any user"))


def test_audit_of_the_sole_raters_item_in_the_default_models_effects(monkeypatch):
    # #51's acceptance audit: the sole rater of "solo" removed (user level, the defaults,
    # no catalogue); the event "solo is among the released item effects".  Lists read
    # from the data made it certain on one side and impossible on the other (the bound
    # then passes 3, checked below by switching the selection off); the selection makes
    # it an event of probability at most δ on both
    from dprec.audit import audit_release, threshold_events
    from dprec.endtoend import effects_release
    from dprec.experiments.release_audit import crowded_edge_data, without

    data = crowded_edge_data()
    a, b = data.build_full_trainset(), without(data, "sole").build_full_trainset()

    def release(trainset, seed):
        model = DPBaseline(random_state=np.random.default_rng(seed)).fit(trainset)
        return float("solo" in model.item_effects_.index)

    bound = audit_release(release, a, b, threshold_events([0.5]), n_runs=300, random_state=0)
    assert not bound.violates(1.0) and bound.epsilon <= 1.0, bound
    plan = effects_release.release_plan

    def unselective(*args, **kwargs):          # every item of the data listed
        chosen = plan(*args, **kwargs)
        return chosen if chosen.threshold is None else \
            effects_release.ReleasePlan(chosen.noise, chosen.entries, -np.inf,
                                        chosen.selection_delta, chosen.rule, chosen.rho)

    monkeypatch.setattr(dp_baseline, "release_plan", unselective)
    leaked = audit_release(release, a, b, threshold_events([0.5]), n_runs=300,
                           random_state=0)
    assert leaked.violates(1.0) and leaked.epsilon > 3.0, leaked


def test_a_second_release_is_averaged_in_and_charged_in_the_entry():
    # `fit_part`'s `more` (DPItemKNN's and DPALS's size rule): the rule reads the listed
    # items and the noisy number of users; the ρ it returns is released again and
    # averaged in, the items chosen again; the entry states the whole ρ and both δ
    from dprec.endtoend.dp_baseline import SelectionBudget
    from dprec.experiments.release_audit import crowded_edge_data
    from dprec.mechanisms import zcdp_epsilon

    trainset = crowded_edge_data().build_full_trainset()
    seen = []

    def rule(n_items, n_users):
        seen.append((n_items, n_users))
        return 0.3

    model = DPBaseline(random_state=None).fit_part(
        trainset, b"0123456789abcdef", False, rho=0.1, selection=SelectionBudget(4e-6),
        more=rule)
    ((n_items, n_users),) = seen
    assert 0 <= n_items <= 7 and abs(n_users - trainset.n_users) < 60   # noisy, σ ≈ 11
    assert model.rho_ == pytest.approx(0.4)
    (entry,) = model.privacy_report().entries
    # the release's own δ is the model's less the whole selection budget (both stages'):
    # the entry's δ never passes the δ asked (it did with the budget halved first)
    assert entry.epsilon == pytest.approx(zcdp_epsilon(0.4, 1e-5 - 4e-6), rel=1e-9)
    assert 0 < model.selection_delta_ <= 4e-6
    assert entry.delta == pytest.approx(1e-5 - 4e-6 + model.selection_delta_, rel=1e-12)
    assert entry.delta <= 1e-5
    sigma = model.noise_sd_[1]                              # the averaged release's sd
    alone = DPBaseline(random_state=None).fit_part(
        trainset, b"0123456789abcdef", False, rho=0.4, selection=SelectionBudget(4e-6))
    assert sigma == pytest.approx(alone.noise_sd_[1], rel=1e-12)
    assert "average of two releases" in str(model.privacy_report())
    none = DPBaseline(random_state=None).fit_part(
        trainset, b"0123456789abcdef", False, rho=0.1, selection=SelectionBudget(4e-6),
        more=lambda n_items, n_users: 0.0)
    assert none.rho_ == pytest.approx(0.1)
    assert "average of two releases" not in str(none.privacy_report())


SELECTIONS = [("rating", "laplace", 1), ("user", "laplace", 2), ("rating", "gaussian", 2),
              ("user", "gaussian", 1)]


@pytest.mark.parametrize(("unit", "mechanism", "stages"), SELECTIONS)
def test_the_release_plans_threshold_is_the_smallest_within_its_delta(unit, mechanism, stages):
    """The plan's threshold T against the δ its definition gives, computed here from the
    noise of the plan: k P(noise ≥ T − 1), one unit's item of weight 1 passing alone, k the
    items a unit brings (the cap per user, 1 per rating); the discrete Gaussian's tail
    bounded by Φ̄((m − 1)/σ) in grid steps (scipy's), the lattice Laplace's exact
    q^m/(1 + q).  T is within the stage's δ, one grid step lower is not."""
    from scipy.stats import norm

    from dprec.endtoend.effects_release import GRID_BITS, SelectionBudget, release_plan
    from dprec.mechanisms import laplace_grid, laplace_scale

    s = DPBaseline(unit=unit, mechanism=mechanism, max_items_per_user=7)._settings((1.0, 5.0))
    budget = SelectionBudget(4e-6, stages)
    plan = release_plan(s, 50, None, budget)
    k = 1 if unit == "rating" else 7
    if mechanism == "gaussian":
        step = 2.0**-GRID_BITS
        sd = plan.noise[0] * step                          # σ, in units of weight

        def delta(t):
            return k * norm.sf((t - 1.0 - step) / sd)
    else:
        sd = plan.noise[1]                                 # the item vectors' Laplace scale
        step = laplace_grid(sd)

        def delta(t):
            return k * math.exp(-(t - 1.0) / sd) / (1.0 + math.exp(-step / sd))
        # with selection a user changes at most 2k coordinates (k items' sum and weight),
        # as with a catalogue of k items, whatever the number of items
        changed = 2 * k
        assert sd == laplace_scale((1.0 - s.share) * s.epsilon, 2.0, max_changed=changed)
        if unit == "user":
            assert release_plan(s, k).noise == plan.noise
    assert release_plan(s, 10**6, None, budget) == plan         # public: not n_items
    assert (plan.threshold / step).is_integer()
    assert plan.selection_delta == pytest.approx(delta(plan.threshold), rel=1e-9)
    assert delta(plan.threshold) <= budget.per_stage * (1 + 1e-9)
    assert delta(plan.threshold - step) > budget.per_stage
    assert plan.entries[-1][3] == pytest.approx(
        (s.delta - budget.delta if mechanism == "gaussian" else 0.0) + plan.selection_delta,
        rel=1e-12)
    # the rule states T, in noise scales too, and the k of this unit
    assert f"at least {plan.threshold:.4g} ({plan.threshold / sd:.3g} noise scales)" in plan.rule
    assert f"the k = {k} items one {unit} can bring" in plan.rule


@pytest.mark.parametrize("unit", ["rating", "user"])
def test_the_items_chosen_again_pass_the_sub_gaussian_threshold(unit):
    """`reselect` on the average of two releases: its noise is σ-sub-Gaussian (grid steps),
    so one unit's item of weight 1 (2^12 steps) passes T alone with probability at most
    exp(−(T − 1)² / 2σ²) (T in steps); k of them: k times.  T is the smallest multiple of
    2^-12 within the stage's δ; a weight of exactly T is listed, one step below is not."""
    from dprec.endtoend.effects_release import SelectionBudget, reselect

    s = DPBaseline(unit=unit, max_items_per_user=7)._settings((1.0, 5.0))
    k = 1 if unit == "rating" else 7
    sigma, budget, step = 3000.0, SelectionBudget(4e-6, stages=2), 2.0**-12

    def delta(m):                                   # m: the threshold in grid steps
        return k * math.exp(-(m - 2**12) ** 2 / (2 * sigma**2))

    m = 2**12 + math.ceil(sigma * math.sqrt(2 * math.log(k / budget.per_stage)))
    assert delta(m) <= budget.per_stage < delta(m - 1)
    weights = np.array([m - 1, m, m + 1, 0, 2**12]) * step
    listed, added, rule = reselect(weights, sigma, budget, s)
    assert listed.tolist() == [False, True, True, False, False]
    assert added == pytest.approx(delta(m), rel=1e-9)
    assert f"at least {m * step:.4g} ({m / sigma:.3g} noise scales)" in rule
    assert f"the k = {k} items one {unit} can bring" in rule
    assert rule.endswith("; chosen on the average of two releases, both charged")


def test_the_rule_states_the_cap_for_users_only():
    # the report's sentence: per user, the cap that bounds k is part of the argument; per
    # rating there is none (k = 1); the parenthesis opened by "(a bound on" closed once
    from dprec.endtoend.effects_release import selection_rule

    for unit in ("user", "rating"):
        s = DPBaseline(unit=unit)._settings((1.0, 5.0))
        rule = selection_rule(2.5, 4.0, 3e-6, s, 1 if unit == "rating" else s.cap)
        assert rule.startswith("an item is released when its noisy weight is at least 2.5 "
                               "(4 noise scales), a threshold that adds δ = 3e-06 (a bound on")
        assert "one of the k = " in rule and "alone passes it, each of weight at most 1" in rule
        assert rule.count("(") == rule.count(")") == 2
        if unit == "user":
            assert rule.endswith(f"k = {s.cap} items one user can bring alone passes it, "
                                 "each of weight at most 1; each user contributes to at most "
                                 "k items, a random subset beyond)")
        else:
            assert rule.endswith("k = 1 items one rating can bring alone passes it, each of "
                                 "weight at most 1)")
