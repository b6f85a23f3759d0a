"""One base for the private models (`dprec.accountant.private_model.PrivateModel`): every model
refuses calls before `fit` with one error, and takes `budget=(ε, δ)`, stored as given,
checked at `fit`, refusing a fit that would spend more (the model left as it was) and
shown in the report."""

from __future__ import annotations

import math

import numpy as np
import pytest
from strategies import catalogues

from dprec import (
    DPALS,
    DPBaseline,
    DPItemKNN,
    ImplicitKNN,
    LocalKNN,
    MallowsRanker,
    PrivateKNN,
    PrivatePopularity,
    datasets,
)
from dprec.accountant.ledger import BudgetExceededError

DATA = datasets.synthetic(40, 25, 600, random_state=3)
#: the data's users and items as public catalogues (the paths without partition selection)
LISTED = catalogues(DATA)
#: one configuration per model, small enough to fit fast; PrivateKNN with a private
#: selector and a sketch backend, whose one release is charged at fit
MODELS = {
    "DPBaseline": lambda **kw: DPBaseline(epsilon=1.0, **kw),
    "DPItemKNN": lambda **kw: DPItemKNN(epsilon=1.0, k=5, baseline_share=0.3, **kw),
    "LocalKNN": lambda **kw: LocalKNN(epsilon=1.0, k=5, **kw),
    "DPALS": lambda **kw: DPALS(epsilon=1.0, n_factors=2, n_epochs=1, baseline_share=0.3,
                                **kw),
    "MallowsRanker": lambda **kw: MallowsRanker(epsilon=1.0, n_factors=2, n_epochs=1, **kw),
    "PrivateKNN": lambda **kw: PrivateKNN(k=5, selector="pncf", epsilon=1.0,
                                          sim_options={"name": "sjlt", "epsilon": 1.0},
                                          verbose=False, **kw),
    "ImplicitKNN": lambda **kw: ImplicitKNN(k=5, set_epsilon=1.0, **kw),
    "PrivatePopularity": lambda **kw: PrivatePopularity(1.0, cap=10, **kw),
}
#: the models whose releases are all planned before any noise (PrivateKNN's sketch
#: release is refused by its accountant when charged, its queries as they are answered)
PLANNED = sorted(set(MODELS) - {"PrivateKNN"})
#: variants whose cost each takes another path to the ledger
VARIANTS = {
    "DPBaseline per rating, Laplace": lambda **kw: DPBaseline(epsilon=0.7, unit="rating",
                                                              **kw),
    "DPBaseline per user, Laplace": lambda **kw: DPBaseline(epsilon=0.7, mechanism="laplace",
                                                            **kw),
    "DPItemKNN, the rule's baseline only": lambda **kw: DPItemKNN(epsilon=0.5, **kw),
    "DPItemKNN, Laplace": lambda **kw: DPItemKNN(epsilon=2.0, mechanism="laplace", **kw),
    "DPItemKNN on factors": lambda **kw: DPItemKNN(epsilon=1.5, similarity="factors", **kw),
    "LocalKNN, Laplace reports": lambda **kw: LocalKNN(epsilon=3.0, rating_release="laplace",
                                                       **kw),
    # (the catalogues: every user keeps their items, so that the sets reach τ = 5)
    "LocalKNN, a MinHash sketch": lambda **kw: LocalKNN(
        epsilon=2.0, sim_options={"name": "rr_minhash", "tau": 5, "delta": 1e-4}, **LISTED,
        **kw),
    "DPALS, the rule's baseline only": lambda **kw: DPALS(epsilon=0.5, n_epochs=1, **kw),
    "MallowsRanker, Laplace": lambda **kw: MallowsRanker(epsilon=3.0, mechanism="laplace",
                                                         n_epochs=1, **kw),
    "ImplicitKNN, sketch neighbours": lambda **kw: ImplicitKNN(
        k=5, set_epsilon=0.5, sim_options={"name": "rr_minhash", "epsilon": 0.5, "tau": 5,
                                           "small_users": "exclude"}, **kw),
    "PrivatePopularity, reports": lambda **kw: PrivatePopularity(2.0, mechanism="reports",
                                                                 **kw),
    "DPBaseline per user, public catalogues": lambda **kw: DPBaseline(epsilon=0.7, **LISTED,
                                                                      **kw),
    "DPItemKNN, public catalogues": lambda **kw: DPItemKNN(epsilon=1.0, k=5, baseline_share=0.3,
                                                           **LISTED, **kw),
    "DPItemKNN, Laplace, public catalogues": lambda **kw: DPItemKNN(
        epsilon=2.0, mechanism="laplace", **LISTED, **kw),
    "DPALS, public catalogues": lambda **kw: DPALS(epsilon=1.0, n_factors=2, n_epochs=1,
                                                   baseline_share=0.3, **LISTED, **kw),
    "DPALS, the rule's baseline only, public catalogues": lambda **kw: DPALS(
        epsilon=0.5, n_epochs=1, **LISTED, **kw),
}
#: (ASCII names: mutmut passes the test ids back to pytest, which escapes non-ASCII ones)
BAD_BUDGETS = {"negative eps": ((-1.0, 0.0), ValueError), "eps = 0": ((0.0, 0.0), ValueError),
               "NaN eps": ((float("nan"), 0.0), ValueError),
               "negative delta": ((1.0, -1e-5), ValueError),
               "delta = 1": ((1.0, 1.0), ValueError),
               "one number in a tuple": ((1.0,), TypeError),
               "three numbers": ((1.0, 0.0, 0.0), TypeError), "a str": ("1.0", TypeError),
               "a number": (1.0, TypeError)}


@pytest.fixture(scope="module")
def trainset():
    return DATA.build_full_trainset()


def fitted(name: str, trainset, **kw):
    return (MODELS.get(name) or VARIANTS[name])(random_state=0, **kw).fit(trainset)


def cost(model) -> tuple[float, float]:
    """What the fitted model's releases spend for the most exposed user: each entry's
    (ε, δ) times its most applications, added (basic composition, as at fit)."""
    frame = model.privacy_report().to_frame()
    return (float((frame.epsilon * frame.applications_max).sum()),
            float((frame.delta * frame.applications_max).sum()))


def answers(model, trainset) -> list[float]:
    pairs = [(trainset.to_raw_uid(u), trainset.to_raw_iid(i), r)
             for u, i, r in list(trainset.all_ratings())[:20]]
    return [p.est for p in model.test(pairs)] + [model.default_prediction()]


# ------------------------------------------------------------------ (a) before fit
@pytest.mark.parametrize("name", sorted(MODELS))
def test_every_call_before_fit_raises_the_same_clear_error(name):
    model = MODELS[name]()
    calls = {"predict": lambda: model.predict("u1", "i1"),
             "test": lambda: model.test([("u1", "i1", 3.0)]),
             "privacy_report": model.privacy_report,
             "default_prediction": model.default_prediction,
             "get_neighbors": lambda: model.get_neighbors(0, 5)}
    for call in calls.values():
        with pytest.raises(AttributeError, match=f"^this {name} is not fitted yet: call fit "
                                                 "first$"):
            call()


# ------------------------------------------------------------------ (b) refused
@pytest.mark.parametrize("name", sorted(MODELS))
def test_a_budget_below_the_cost_refuses_the_fit_and_changes_nothing(name, trainset):
    epsilon, delta = cost(fitted(name, trainset))
    below = (0.9 * epsilon, delta)
    rng = np.random.default_rng(7)
    unfitted = MODELS[name](random_state=rng, budget=below)
    before, state = dict(vars(unfitted)), rng.bit_generator.state
    with pytest.raises(BudgetExceededError, match="budget") as refused:
        unfitted.fit(trainset)
    assert isinstance(refused.value, ValueError)
    assert vars(unfitted).keys() == before.keys()
    assert all(vars(unfitted)[key] is value for key, value in before.items())
    with pytest.raises(AttributeError, match="not fitted yet"):
        unfitted.privacy_report()
    if name in PLANNED:       # refused before any noise: the generator was not drawn from
        assert rng.bit_generator.state == state
        message = str(refused.value)
        assert message.startswith(f"budget (ε = {0.9 * epsilon:.10g}, δ = {delta:.3g})")
        assert f"spends, ε = {epsilon:.10g}, δ = {delta:.3g}" in message

    model = fitted(name, trainset)                     # a fitted model stays as it was
    report, before = model.privacy_report(), answers(model, trainset)
    model.budget = below
    with pytest.raises(BudgetExceededError, match="budget"):
        model.fit(trainset)
    assert model.privacy_report() is report and report.budget is None
    assert answers(model, trainset) == before


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_every_path_to_the_ledger_is_planned_exactly(name, trainset):
    """The cost checked before the noise is the cost the ledger states: at it the fit
    passes, a hair below it is refused."""
    epsilon, delta = cost(fitted(name, trainset))
    assert 0.0 < epsilon < math.inf
    assert fitted(name, trainset, budget=(epsilon, delta)).privacy_report().budget == (
        epsilon, delta)
    with pytest.raises(BudgetExceededError, match="^budget"):
        fitted(name, trainset, budget=(epsilon * (1 - 1e-9), delta))
    if delta > 0:
        with pytest.raises(BudgetExceededError, match="^budget"):
            fitted(name, trainset, budget=(epsilon, delta * (1 - 1e-6)))


def test_mallows_budget_refuses_any_user_past_it(trainset):
    uids = [trainset.to_raw_uid(u) for u in trainset.all_users()]
    spread = {uid: 1.0 for uid in uids} | {uids[3]: 2.5}
    with pytest.raises(BudgetExceededError, match=r"^budget .* ε = 2\.5, δ = 0 for a swap"):
        MallowsRanker(epsilon=spread, n_epochs=1, budget=(2.0, 0.0)).fit(trainset)
    with pytest.raises(BudgetExceededError, match=r"^budget .* ε = inf"):
        MallowsRanker(epsilon=lambda uid: None if uid == uids[0] else 1.0, n_epochs=1,
                      budget=(100.0, 0.0)).fit(trainset)
    model = MallowsRanker(epsilon=spread, n_epochs=1, budget=(2.5, 0.0)).fit(trainset)
    assert model.privacy_report().budget == (2.5, 0.0)


# ------------------------------------------------------------------ (c) within it
@pytest.mark.parametrize("name", sorted(MODELS))
def test_a_budget_at_or_above_the_cost_fits_and_the_report_shows_it(name, trainset):
    epsilon, delta = cost(fitted(name, trainset))
    for budget in ((epsilon, delta), (2 * epsilon, min(2 * delta + 1e-6, 0.5))):
        model = fitted(name, trainset, budget=budget)
        report = model.privacy_report()
        assert report.budget == budget
        assert f"  budget: ε = {budget[0]:.4g}, δ = {budget[1]:.3g} per user" in str(report)
        assert cost(model) == (epsilon, delta)


# ------------------------------------------------------------------ (d) checked at fit
@pytest.mark.parametrize("name", sorted(MODELS))
@pytest.mark.parametrize(("budget", "error"), list(BAD_BUDGETS.values()), ids=list(BAD_BUDGETS))
def test_a_bad_budget_is_a_clear_error_at_fit(name, budget, error, trainset):
    model = MODELS[name](budget=budget)
    with pytest.raises(error, match="^budget"):
        model.fit(trainset)
    with pytest.raises(AttributeError, match="not fitted yet"):
        model.privacy_report()


# ------------------------------------------------------------------ (e) stored as given
@pytest.mark.parametrize("name", sorted(MODELS))
def test_budget_is_a_parameter_stored_as_given(name):
    for budget in (None, (1.0, 1e-5), "not checked until fit", [3, 0]):
        model = MODELS[name](budget=budget)
        assert vars(model)["budget"] is budget
    assert MODELS[name]().budget is None


# ------------------------------------------------------------------ (f) Surprise's predict
@pytest.mark.parametrize("name", sorted(MODELS))
def test_predict_prints_the_prediction_only_when_verbose(name, trainset, capsys):
    model = fitted(name, trainset)
    capsys.readouterr()
    uid, iid = trainset.to_raw_uid(0), trainset.to_raw_iid(0)
    quiet = model.predict(uid, iid, r_ui=4.0)
    assert capsys.readouterr().out == ""
    loud = model.predict(uid, iid, r_ui=4.0, verbose=True)
    assert capsys.readouterr().out == f"{loud}\n"
    assert (loud.uid, loud.iid, loud.r_ui, loud.est) == (uid, iid, 4.0, quiet.est)
