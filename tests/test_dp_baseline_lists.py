"""DPBaseline's lists: public catalogues, who is outside the guarantee without them,
and ids of any type."""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest
from strategies import catalogues
from surprise import Dataset, Reader

from dprec import DPBaseline, datasets
from dprec.audit import with_rating
from dprec.dp_baseline import NOTES, OUTPUTS, SCOPE, sorted_ids
from dprec.ledger import Unit


@pytest.fixture(scope="module")
def data():
    return datasets.synthetic(120, 60, 2500, random_state=1)


def frame(rows) -> Dataset:
    return Dataset.load_from_df(pd.DataFrame(rows), Reader(rating_scale=(1, 5)))


def sole_rater_data() -> Dataset:
    rows = [(f"u{u}", f"i{i}", float(1 + (u + 2 * i) % 5)) for u in range(8) for i in range(3)]
    rows += [("sole", "i0", 4.0), ("sole", "solo", 5.0), ("single", "i1", 2.0)]
    return frame(rows)


def test_the_sole_rater_and_the_single_rating_user_are_outside_without_catalogues():
    # finding 5 (#33): without items= the item list is read from the data, so the sole
    # rater's removal removes an item; without users= one rating removed takes a
    # single-rating user out of the user list: the report must say ε = ∞ for both, and why
    data = sole_rater_data()
    report = DPBaseline(unit="rating").fit(data.build_full_trainset()).privacy_report()
    eps = report.per_user(Unit.RATING)["epsilon"]
    assert np.isinf(eps["sole"]) and np.isinf(eps["single"]), eps
    assert np.isfinite(eps.drop(["sole", "single"])).all()
    assert any("item list is read from the data" in c for c in report.conditions)
    assert "sole rater" in str(report) and "single rating" in str(report)


def test_the_sole_rater_is_outside_the_user_level_guarantee_without_items():
    data = sole_rater_data()
    users = catalogues(data)["users"]
    report = DPBaseline(unit="user", users=users).fit(data.build_full_trainset())
    eps = report.privacy_report().per_user(Unit.USER)["epsilon"]
    assert np.isinf(eps["sole"]) and np.isfinite(eps.drop("sole")).all()


UNIT = {"user": Unit.USER, "rating": Unit.RATING}


def test_the_single_rating_user_and_every_user_without_users():
    # finding 5 (#33): without users= the user list is read from the data: one rating
    # removed takes a single-rating user out of it (unit="rating"), one user removed
    # always does (unit="user")
    data = sole_rater_data()
    items = catalogues(data)["items"]
    trainset = data.build_full_trainset()
    rating = DPBaseline(unit="rating", items=items).fit(trainset).privacy_report()
    eps = rating.per_user(Unit.RATING)["epsilon"]
    assert np.isinf(eps["single"]) and np.isfinite(eps.drop("single")).all()
    user = DPBaseline(unit="user", items=items).fit(trainset).privacy_report()
    assert np.isinf(user.per_user(Unit.USER)["epsilon"]).all()
    assert any("user list is read from the data" in c for c in user.conditions)


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
    index = DPBaseline().fit(flat).item_effects_.index
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
    from dprec.dp_baseline import WEIGHTS

    trainset = data.build_full_trainset()
    for unit, mechanism in (("user", "gaussian"), ("rating", "laplace"),
                            ("user", "laplace")):
        report = DPBaseline(unit=unit, mechanism=mechanism).fit(trainset).privacy_report()
        assert report.model == f"DPBaseline(unit={unit!r}, mechanism={mechanism!r})"
        note = NOTES[mechanism].format(unit=unit, weights=WEIGHTS[unit, mechanism])
        if mechanism == "gaussian":
            expected = [("effects", "discrete gaussian (zCDP)", "user", note)]
        else:
            expected = [("global effect", "laplace (lattice)", "user", note),
                        ("item effects", "laplace (lattice)", "user", note)]
        assert [(e.component, e.mechanism, e.applies_to, e.note)
                for e in report.entries] == expected
        indices = tuple(range(len(expected)))
        assert [o.name for o in report.outputs] == list(OUTPUTS)
        assert all(o.covered_by == indices and o.gap is None for o in report.outputs)
        assert report.notes == [NOTES["answers"]]
        assert report.conditions == [SCOPE["items from data"], SCOPE["users from data"]]
        for index in indices:
            assert report.applications(index).tolist() == [1] * report.n_users
    given = DPBaseline(**catalogues(data)).fit(trainset).privacy_report()
    assert given.conditions == [SCOPE["items given"], SCOPE["users given"]]
    text = str(DPBaseline(unit="rating").fit(sole_rater_data().build_full_trainset())
               .privacy_report())
    assert SCOPE["sole rater"] in text and SCOPE["single rating"] in text
    text = str(DPBaseline(unit="user").fit(sole_rater_data().build_full_trainset())
               .privacy_report())
    assert SCOPE["sole rater"] in text and SCOPE["any user"] in text
