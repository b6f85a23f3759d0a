"""LocalKNN's lists without catalogues (#51): the items chosen by private partition
selection, charged with the two local releases; who reports public (the population), so
nobody is outside the guarantee for either list."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from surprise import Dataset, Reader

from dprec import LocalKNN
from dprec.accountant.ledger import BudgetExceededError, Status, Unit
from dprec.audit import with_rating
from dprec.endtoend import local_knn
from dprec.endtoend.local_knn import NOTES
from dprec.endtoend.rating_space import SCOPE


def crowd_data(n_crowd: int = 300) -> Dataset:
    """``n_crowd`` users rate three of ``i0``…``i3`` each (225 raters an item at 300),
    "sole" alone rates "solo", and "single" has one rating."""
    rows = [(f"c{u:03d}", f"i{i}", float(1 + (u + 2 * i) % 5)) for u in range(n_crowd)
            for i in range(4) if (u + i) % 4]
    rows += [("sole", "i0", 4.0), ("sole", "solo", 5.0), ("single", "i1", 2.0)]
    return Dataset.load_from_df(pd.DataFrame(rows), Reader(rating_scale=(1, 5)))


@pytest.fixture(scope="module")
def data():
    return crowd_data()


@pytest.fixture(scope="module")
def trainset(data):
    return data.build_full_trainset()


@pytest.mark.parametrize("release", ["krr", "laplace"])
def test_without_catalogues_nobody_is_outside_the_guarantee(trainset, release):
    # #51: the item list and the user list read from the data put the sole rater of an
    # item and every single-rating user at ε = ∞ (58 users on MovieLens 100k); the
    # selection and the population condition cover them, at ε = `epsilon` for everyone
    model = LocalKNN(epsilon=1.0, k=3, rating_release=release).fit(trainset)
    report = model.privacy_report()
    per_user = report.per_user(Unit.RATING)
    assert report.out_of_scope_users(Unit.RATING) == []
    assert np.isfinite(per_user["epsilon"]).all()
    assert per_user["epsilon"].max() <= 1.0
    assert per_user["epsilon"].min() == pytest.approx(1.0, rel=1e-9)
    assert per_user.loc[["sole", "single"], "epsilon"].tolist() == [per_user["epsilon"].max()] * 2
    assert report.status(Unit.RATING) is Status.HOLDS
    assert report.total(Unit.RATING) == (per_user["epsilon"].max(), report.entries[0].delta)
    assert 0.0 < report.entries[0].delta <= 1e-5
    assert report.conditions == [SCOPE["items selected"] + report.entries[0].note,
                                 NOTES["population"]]
    text = str(report)
    assert "no guarantee" not in text and "ε = inf" not in text and "∞" not in text
    assert all(SCOPE[reason] not in text for reason in ("sole rater", "single rating",
                                                       "users from data", "users private"))


def test_the_sole_raters_item_is_never_listed_and_answered_as_unknown(data, trainset):
    # at ε = 1 (ε_s = 0.1: a threshold of 109.2 raters) the crowd's items (225 raters) are
    # listed, "solo" (1 rater) is listed with probability at most δ: in none of 40 fits;
    # it is then answered like an item nobody rated, and no report holds it
    for seed in range(40):
        model = LocalKNN(epsilon=1.0, k=3, random_state=seed).fit(trainset)
        assert list(model.item_effects_.index) == ["i0", "i1", "i2", "i3"]
    assert model._count_reports.shape == (len(model.sim), 4)
    for uid in ("sole", "c001", "nobody"):
        solo, unknown = model.predict(uid, "solo"), model.predict(uid, "never rated")
        assert (solo.est, solo.details) == (unknown.est, unknown.details)
    # sole's own effect reads both their ratings, solo's effect 0 (4 of i0, 5 of solo)
    assert model.predict("sole", "solo").est == pytest.approx(
        4.5 - model.item_effects_["i0"] / 2, abs=1e-12)
    # the sole rating of solo removed: the same lists, the same releases for the same seed
    smaller = with_rating(data, "sole", "solo", None).build_full_trainset()
    again = LocalKNN(epsilon=1.0, k=3, random_state=39).fit(smaller)
    pd.testing.assert_frame_equal(again.sim, model.sim, rtol=0, atol=0)
    pd.testing.assert_series_equal(again.item_effects_, model.item_effects_, rtol=0, atol=0)
    # with the item read from the data (a catalogue holding it) it is reported and answered
    everything = LocalKNN(epsilon=1.0, k=3, random_state=0,
                          items=["i0", "i1", "i2", "i3", "solo"]).fit(trainset)
    assert "solo" in everything.item_effects_.index


@pytest.mark.parametrize(("epsilon", "shares"), [
    (1.0, (0.1, 0.5)), (0.3, (0.1, 0.5)), (0.3, (0.1, 0.7)), (2.0, (0.25, 0.4)),
    (7.3, (0.05, 0.35))])
@pytest.mark.parametrize("release", ["krr", "laplace"])
def test_the_ledger_charges_the_item_list_and_both_releases_up_to_epsilon(trainset, epsilon,
                                                                          shares, release):
    # item list, sketch, ratings: selection_share ε, then sketch_share of the rest, and the
    # rest, composing to ε (never above it in floats: at ε = 0.3 the three shares' sum
    # rounds above it, so the ratings' share is taken at most ε minus the others)
    selection, sketch = shares
    model = LocalKNN(epsilon=epsilon, k=3, selection_share=selection, sketch_share=sketch,
                     rating_release=release).fit(trainset)
    report = model.privacy_report()
    entries = report.entries
    assert [e.component for e in entries] == ["item list", "similarity", "ratings"]
    assert {e.unit for e in entries} == {Unit.RATING}
    assert entries[0].epsilon == pytest.approx(selection * epsilon, rel=1e-9)
    assert entries[1].epsilon == pytest.approx(sketch * (1 - selection) * epsilon, rel=1e-9)
    assert entries[2].epsilon == pytest.approx((1 - sketch) * (1 - selection) * epsilon,
                                               rel=1e-9)
    assert [e.delta for e in entries[1:]] == [0.0, 0.0]
    assert all(report.applications(n).tolist() == [1] * len(model.sim) for n in range(3))
    assert all(o.covered_by == (0, 1, 2) for o in report.outputs)
    worst = report.per_user(Unit.RATING)["epsilon"].max()
    assert worst <= epsilon and worst == pytest.approx(epsilon, rel=1e-9)


def test_the_budget_refuses_the_item_list_before_any_noise(trainset, monkeypatch):
    # the selection's (ε_s, δ) counts in the refusal: a δ = 0 budget is refused before the
    # list is chosen (no noise drawn, the model as it was); with items= it is not spent
    def no_noise(*args):
        raise AssertionError("noise drawn before the refusal")

    monkeypatch.setattr(local_knn, "select_items", no_noise)
    for budget in ((1.0, 0.0), (0.95, 1e-3)):
        refused = LocalKNN(epsilon=1.0, budget=budget)
        with pytest.raises(BudgetExceededError, match=r"^budget .* ε = 1, δ = 1e-05 for one "
                                                      "rating"):
            refused.fit(trainset)
        assert not hasattr(refused, "trainset")
    monkeypatch.undo()
    LocalKNN(epsilon=1.0, budget=(1.0, 1e-5), random_state=0).fit(trainset)
    public = LocalKNN(epsilon=1.0, budget=(1.0, 0.0), items=["i0", "i1", "i2", "i3", "solo"])
    assert public.fit(trainset).privacy_report().total(Unit.RATING)[1] == 0.0


def test_with_an_item_catalogue_the_model_is_local_from_end_to_end(trainset):
    # δ = 0, the two local releases alone (sketch_share of the whole ε), the catalogue's
    # items reported; the users are the population: the single-rating user in scope
    items = ["i0", "i1", "i2", "i3", "solo", "unrated"]
    model = LocalKNN(epsilon=2.0, k=3, sketch_share=0.4, items=items).fit(trainset)
    report = model.privacy_report()
    assert [e.component for e in report.entries] == ["similarity", "ratings"]
    assert [e.epsilon for e in report.entries] == pytest.approx([0.8, 1.2], rel=1e-12)
    assert report.total(Unit.RATING) == (pytest.approx(2.0, rel=1e-12), 0.0)
    assert report.out_of_scope_users(Unit.RATING) == []
    assert report.conditions == [SCOPE["items given"], NOTES["population"]]
    assert list(model.item_effects_.index) == sorted(items)
    assert LocalKNN(items=items, delta=0.0, random_state=0).fit(trainset).privacy_report(
        ).total(Unit.RATING)[1] == 0.0


def test_a_delta_target_sets_the_selections_threshold(trainset):
    strict = LocalKNN(k=3, random_state=0).fit(trainset).privacy_report().entries[0]
    loose = LocalKNN(k=3, delta=1e-2, random_state=0).fit(trainset).privacy_report().entries[0]
    assert strict.delta <= 1e-5 < loose.delta <= 1e-2
    assert strict.epsilon == loose.epsilon == pytest.approx(0.1)
    threshold = [float(e.note.split("at least ")[1].split(" ")[0]) for e in (strict, loose)]
    assert threshold[0] > threshold[1] > 1.0


@pytest.mark.parametrize(("kwargs", "name", "words"), [
    ({"selection_share": 0.0}, "selection_share", ""),
    ({"selection_share": 1.0}, "selection_share", ""),
    ({"selection_share": "0.1"}, "selection_share", ""),
    ({"delta": 0.0}, "delta", "without items="),
    ({"delta": 1.0}, "delta", ""),
    ({"delta": -1e-5}, "delta", ""),
    ({"delta": 1e-5, "items": ["i0", "i1", "i2", "i3", "solo"]}, "delta", "items="),
    ({"delta": math.nan}, "delta", ""),
])
def test_bad_selection_parameters_are_named_at_fit(trainset, kwargs, name, words):
    algo = LocalKNN(**kwargs)
    with pytest.raises((ValueError, TypeError), match=rf"^{name}\b.*{words}"):
        algo.fit(trainset)
    assert not hasattr(algo, "trainset")


def test_with_no_item_listed_every_user_gets_their_own_mean(trainset):
    # at ε = 0.01 the threshold is over 10^4 raters: no item is listed, the reports are
    # empty, and every known user's answer is their own mean (μ cancels at λ = 0)
    model = LocalKNN(epsilon=0.01, k=3, random_state=1).fit(trainset)
    assert model.item_effects_.empty and model._count_reports.shape == (len(model.sim), 0)
    for uid, mean in (("sole", 4.5), ("single", 2.0), ("c001", None)):
        ratings = [r for u, _, r, _ in crowd_data().raw_ratings if u == uid]
        assert model.predict(uid, "i0").est == pytest.approx(np.mean(ratings), abs=1e-12)
        assert mean is None or np.mean(ratings) == mean
    assert model.predict("nobody", "i0").details["was_impossible"]
    assert model.privacy_report().out_of_scope_users(Unit.RATING) == []
