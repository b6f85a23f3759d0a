"""Surprise's contract on every private model, for random parameters and odd data (#36).

For every model class, hypothesis draws parameters (valid ones, extreme but
valid ones such as ε = 1e-300 or 1e300 and numpy integer types, and invalid
ones) and a small dataset (one user, one item, single-rating users, all-equal
ratings, scales with zero and negative ratings).  The contract:

* an invalid parameter raises `ValueError`/`TypeError` naming it;
* valid parameters either fit, or raise `ValueError`/`TypeError` naming one of the
  parameters given or the data;
* a fitted model's estimates are finite and inside the rating scale, `test()` equals
  `predict()`, an impossible prediction is the model's default (and, for `PrivateKNN`,
  unknown users and items are impossible: `strategies.check_predictions`),
  `get_neighbors` answers or raises a `TypeError`, and the privacy report prints;
* the trainset is unchanged.

The set models (`ImplicitKNN` exact, with a sketch and with `set_epsilon`;
`PrivatePopularity`) score sets, not ratings: a score is no rating, so "inside the rating
scale" does not apply (a released count or share may be negative), nor Surprise's
`verbose` (they take none).  What applies, checked for them
(`test_every_set_model_keeps_the_contract_that_applies`): a bad parameter named (or the
valid ones refused on their own, e.g. ε = 1e-300); a fit returns the model; scores
finite, `test()` equals `score_rows` and `predict()` (with `set_epsilon`, one user alone
up to float32 rounding: a known gap), an impossible score is the default 0, unknown
users and unlisted items impossible;
`score_rows` and the lists' shapes, the lists the best possible unrated items; bad ids,
users and `n` named; the same seed gives the same numbers; no input (trainset,
`sim_options`, catalogues, budget) changed.  No model has `get_params`/`clone` or is
pickled here: the rating models are not checked for them either.
"""

from __future__ import annotations

import copy
import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import (
    NAN,
    Picker,
    check_predictions,
    full_testset,
    fuzz,
    raises_naming,
    rating_frames,
    raw_ids,
    to_dataset,
    trainset_state,
)

from dprec import (
    DPALS,
    DPBaseline,
    DPItemKNN,
    ImplicitKNN,
    LocalKNN,
    MallowsRanker,
    PrivateKNN,
    PrivateKNNBaseline,
    PrivateKNNWithZScore,
    PrivatePopularity,
)

#: ε from tiny to huge: each either works with its guarantee or is refused, naming it
EPSILONS = st.one_of(st.floats(1e-2, 1e2), st.sampled_from([1e-300, 1e-20, 1e12, 1e300]))
BAD_NUMBERS = [0.0, -1.0, NAN, float("inf"), "1", True]
BAD_REALS = st.sampled_from([*BAD_NUMBERS, None])
NOT_NONE = st.sampled_from(BAD_NUMBERS)     # where None is a valid default
SHARES = st.floats(1e-6, 1 - 1e-6)
BAD_SHARES = st.sampled_from([0.0, 1.0, -0.5, 2.0, NAN, "0.5"])
DELTAS = st.one_of(st.floats(1e-12, 0.1), st.just(5e-324))
BAD_DELTAS = st.sampled_from([-1e-5, 1.0, 2.0, NAN, "1e-5"])
BAD_CHOICES = st.sampled_from(["bogus", 3, None])


def integers(low: int, high: int):
    """Python and numpy integers in `[low, high]`."""
    types = (int, np.int8, np.int64, np.uint8, np.uint64) if high <= 127 else (int, np.int64)
    return st.integers(low, high).flatmap(lambda n: st.sampled_from(types).map(lambda t: t(n)))


BAD_INTS = st.sampled_from([0, -1, 1.5, "3", True, np.int8(-1)])
BAD_COUNTS = st.sampled_from([-1, 1.5, "3", True, np.int8(-1)])   # where 0 is valid

#: model name -> (factory, {parameter: (valid values, invalid values)})
MODELS = {
    "DPBaseline": (DPBaseline, {
        "epsilon": (EPSILONS, BAD_REALS), "unit": (st.sampled_from(["user", "rating"]),
                                                   BAD_CHOICES),
        "mechanism": (st.sampled_from(["gaussian", "laplace"]), BAD_CHOICES),
        "centre": (st.sampled_from(["scale", "user"]), BAD_CHOICES),
        "global_share": (SHARES, BAD_SHARES),
        "user_shrinkage": (st.floats(0.0, 50.0), st.sampled_from([-1.0, NAN, "1"]))}),
    "DPItemKNN": (DPItemKNN, {
        "epsilon": (EPSILONS, BAD_REALS), "k": (integers(1, 60), BAD_INTS),
        "mechanism": (st.sampled_from(["gaussian", "laplace"]), BAD_CHOICES),
        "baseline_share": (SHARES, BAD_SHARES), "delta": (DELTAS, BAD_DELTAS),
        "clip": (st.floats(0.1, 1e6), BAD_REALS),
        "similarity": (st.sampled_from(["covariance", "factors"]), BAD_CHOICES)}),
    "LocalKNN": (LocalKNN, {
        "epsilon": (EPSILONS, BAD_REALS), "k": (integers(1, 60), BAD_INTS),
        "sketch_share": (SHARES, BAD_SHARES),
        "rating_release": (st.sampled_from(["krr", "laplace"]), BAD_CHOICES),
        "noise_tolerance": (st.floats(1e-3, 10.0), BAD_REALS)}),
    "DPALS": (DPALS, {
        "epsilon": (EPSILONS, BAD_REALS), "delta": (DELTAS, BAD_DELTAS),
        "n_factors": (integers(1, 6), BAD_INTS), "n_epochs": (integers(1, 3), BAD_INTS),
        "max_ratings": (integers(1, 60), BAD_INTS), "baseline_share": (SHARES, BAD_SHARES)}),
    "MallowsRanker": (MallowsRanker, {
        "epsilon": (EPSILONS, BAD_REALS),
        "mechanism": (st.sampled_from(["mallows", "laplace"]), BAD_CHOICES),
        "n_factors": (integers(1, 6), BAD_INTS), "n_epochs": (integers(0, 3), BAD_COUNTS),
        "batch_size": (integers(1, 100), BAD_INTS), "lr": (st.floats(1e-4, 1.0), BAD_REALS)}),
    "PrivateKNN": (PrivateKNN, {
        "k": (integers(1, 60), BAD_INTS), "epsilon": (EPSILONS, NOT_NONE),
        "selector": (st.sampled_from(["topk", "pncf", "ppns", "probabilistic"]), BAD_CHOICES),
        "neighbourhood": (st.sampled_from(["item", "user"]), BAD_CHOICES),
        "prediction": (st.sampled_from(["basic", "means", "zscore", "baseline"]),
                       BAD_CHOICES)}),
    "PrivateKNNWithZScore": (PrivateKNNWithZScore, {
        "k": (integers(1, 60), BAD_INTS),
        "sim_options": (st.sampled_from([{"name": "msd"}, {"name": "pearson"},
                                         {"name": "cosine", "user_based": False}]),
                        st.sampled_from([{"name": "bogus"}, "msd"]))}),
    "PrivateKNNBaseline": (PrivateKNNBaseline, {
        "k": (integers(1, 60), BAD_INTS),
        "sim_options": (st.sampled_from([{"name": "pearson_baseline"},
                                         {"name": "sjlt", "epsilon": 2.0, "width": 8}]),
                        st.sampled_from([{"name": "bogus"}, "msd"]))}),
}
#: the data's words: a valid parameter set may still be refused for the data's sake
DATA_WORDS = ("trainset", "ratings", "rating_scale", "users", "items", "scale", "rated")
#: the examples per model (their total is the number this module runs)
EXAMPLES = 30


@pytest.mark.parametrize("name", sorted(MODELS))
@fuzz(EXAMPLES)
@given(data=st.data())
def test_every_model_keeps_surprises_contract(name, data):
    make, parameters = MODELS[name]
    pick = Picker(data.draw, parameters)
    given_names = data.draw(st.sets(st.sampled_from(sorted(parameters)), max_size=4))
    kwargs = {p: pick(p, *parameters[p]) for p in sorted(given_names)}
    pick.bad &= set(kwargs)
    frame, scale = data.draw(rating_frames(max_users=8, max_items=7))
    trainset = to_dataset(frame, scale).build_full_trainset()
    before = trainset_state(trainset)
    algo = make(random_state=0, verbose=False, **kwargs)
    if pick.bad:
        raises_naming(lambda: algo.fit(trainset), *pick.bad)
        return
    try:
        algo.fit(trainset)
    except (ValueError, TypeError) as error:
        message = str(error)
        assert any(word in message for word in (*kwargs, *DATA_WORDS)), (kwargs, message)
        return
    check_predictions(algo, trainset, full_testset(trainset),
                      unknown_impossible=isinstance(algo, PrivateKNN)
                      and algo.prediction_ != "baseline")   # Surprise's KNNBaseline answers
    check_neighbours_report_and_trainset(algo, trainset, before)


# ------------------------------------------------------------------ the set models
THRESHOLDS = st.one_of(st.none(), st.floats(-3.0, 11.0))
BAD_THRESHOLDS = st.sampled_from([NAN, float("inf"), "1", True])
PRIOR_SDS = st.one_of(st.none(), st.floats(1e-3, 1.0))
BUDGETS = st.sampled_from([None, (1e6, 0.5)])
BAD_BUDGETS = st.sampled_from([(-1.0, 0.0), (1.0, 1.0), "1", (NAN, 0.0)])
#: "data": the data's own ids, "extra": them and an id nobody holds (a public catalogue)
CATALOGUES = st.sampled_from([None, "data", "extra"])
BAD_CATALOGUES = st.sampled_from(["missing", "a string"])
SET_SKETCHES = st.one_of(
    st.fixed_dictionaries(
        {"name": st.sampled_from(["rr_minhash", "noisy_minhash"]), "width": st.integers(1, 16),
         "B": st.integers(2, 5), "epsilon": st.floats(0.05, 20.0),
         "delta": st.floats(1e-6, 0.2)},
        optional={"tau": st.integers(1, 3), "small_users": st.sampled_from(["raise", "exclude"])}),
    st.fixed_dictionaries({"name": st.just("minhash"), "width": st.integers(1, 16),
                           "B": st.integers(2, 5)}))
COMMON = {"k": (integers(1, 30), BAD_INTS), "min_nbrs": (integers(1, 3), BAD_INTS),
          "min_sim": (st.floats(1e-9, 1.0), BAD_REALS), "threshold": (THRESHOLDS, BAD_THRESHOLDS),
          "users": (CATALOGUES, BAD_CATALOGUES), "items": (CATALOGUES, BAD_CATALOGUES),
          "budget": (BUDGETS, BAD_BUDGETS)}
#: model name -> (class, parameters always given, {parameter: (valid, invalid)})
SET_MODELS = {
    "ImplicitKNN": (ImplicitKNN, {}, {
        **COMMON, "sim_options": (
            st.sampled_from([None, {"name": "jaccard"}, {"user_based": False},
                             {"name": "Jaccard", "user_based": False}]),
            st.sampled_from([{"name": "bogus"}, "cosine", {"name": "cosine", "shrinkage": 1},
                             {"user_based": "no"}, {"name": "reports"}]))}),
    "ImplicitKNN sketch": (ImplicitKNN, {"sim_options": {"name": "minhash", "width": 8}}, {
        **COMMON, "sim_options": (SET_SKETCHES, st.sampled_from([
            {"name": "rr_minhash"}, {"name": "minhash", "user_based": False},
            {"name": "minhash", "threshold": 3.0}, {"name": "noisy_minhash", "epsilon": NAN}]))}),
    "ImplicitKNN set_epsilon": (ImplicitKNN, {"set_epsilon": 1.0}, {
        **COMMON, "set_epsilon": (EPSILONS, NOT_NONE), "prior_sd": (PRIOR_SDS, NOT_NONE),
        "sim_options": (
            st.one_of(st.sampled_from([None, {"name": "reports", "set_difference": 3}]),
                      SET_SKETCHES.filter(lambda o: o["name"] != "minhash")),
            st.sampled_from([{"name": "cosine"}, {"name": "minhash"},
                             {"name": "reports", "set_difference": 0},
                             {"name": "reports", "user_based": False}]))}),
    "PrivatePopularity": (PrivatePopularity, {"cap": 3}, {
        "epsilon": (EPSILONS, BAD_REALS), "mechanism": (st.just("laplace"), BAD_CHOICES),
        "cap": (integers(1, 10), BAD_INTS), "threshold": (THRESHOLDS, BAD_THRESHOLDS),
        "users": (CATALOGUES, BAD_CATALOGUES), "items": (CATALOGUES, BAD_CATALOGUES),
        "budget": (BUDGETS, BAD_BUDGETS)}),
    "PrivatePopularity reports": (PrivatePopularity, {"mechanism": "reports"}, {
        "epsilon": (EPSILONS, BAD_REALS), "threshold": (THRESHOLDS, BAD_THRESHOLDS),
        "users": (CATALOGUES, BAD_CATALOGUES), "items": (CATALOGUES, BAD_CATALOGUES),
        "budget": (BUDGETS, BAD_BUDGETS)}),
}


def _catalogue(value, frame: pd.DataFrame, column: str):
    """A drawn catalogue made from the data's ids (`CATALOGUES`, `BAD_CATALOGUES`)."""
    ids = sorted(set(frame[column]))
    return {"data": ids, "extra": [*ids, f"{column} nobody holds"], "missing": ids[1:] or
            ["not in the data"], "a string": ids[0]}.get(value, value)


def check_scores(algo, trainset) -> None:
    """A fitted set model's scores: finite, the same by `test`, `predict`, `score_rows`
    and `estimate_arrays`, 0 where impossible; its lists the best possible unrated
    items; bad ids, users and `n` named."""
    testset = full_testset(trainset)
    predictions = algo.test(testset)
    assert len(predictions) == len(testset)
    users, _ = raw_ids(trainset)
    columns = {raw: n for n, raw in enumerate(algo.item_list_)}
    est, possible = algo.score_rows(np.arange(trainset.n_users))
    assert est.shape == possible.shape == (trainset.n_users, len(algo.item_list_))
    assert np.isfinite(est).all() and (est[~possible] == 0).all()
    assert algo.default_prediction() == 0.0
    for prediction, (uid, iid, r_ui) in zip(predictions, testset):
        assert (prediction.uid, prediction.iid, prediction.r_ui) == (uid, iid, r_ui)
        impossible = prediction.details["was_impossible"]
        if uid not in users or iid not in columns:
            assert impossible, prediction
            continue
        cell = trainset.to_inner_uid(uid), columns[iid]
        assert prediction.est == est[cell] and impossible != possible[cell], prediction
    # one user's scores alone (predict, recommend) against a block's: equal, but with the
    # released sets up to float32 rounding (their dense products run in float32 BLAS, whose
    # sums' order depends on the block's rows: a known gap, not fixed here)
    exact = getattr(algo, "reports_", None) is None
    for prediction in predictions[:: max(1, len(predictions) // 6)] + predictions[-3:]:
        again = algo.predict(prediction.uid, prediction.iid, prediction.r_ui)
        assert again.details == prediction.details
        assert again.est == (prediction.est if exact else pytest.approx(prediction.est,
                                                                        rel=1e-6, abs=1e-9))
    # an item of the trainset the model did not list (partition selection): no score
    cells = np.array([columns.get(trainset.to_raw_iid(i), -1) for i in range(trainset.n_items)])
    listed = cells >= 0
    expected = np.zeros((trainset.n_users, trainset.n_items))
    expected_ok = np.zeros(expected.shape, dtype=bool)
    expected[:, listed], expected_ok[:, listed] = est[:, cells[listed]], possible[:, cells[listed]]
    scores, ok = algo.estimate_arrays(np.repeat(np.arange(trainset.n_users), trainset.n_items),
                                      np.tile(np.arange(trainset.n_items), trainset.n_users))
    assert (scores == expected.ravel()).all() and (ok == expected_ok.ravel()).all()
    uids = [trainset.to_raw_uid(u) for u in range(trainset.n_users)]
    top = algo.recommend_batch(uids, 3)
    for user, uid in enumerate(uids):
        rated = {columns.get(trainset.to_raw_iid(i)) for i, _ in trainset.ur[user]}
        best = sorted((-est[user, c], c) for c in range(len(columns))
                      if possible[user, c] and c not in rated)[:3]
        mine = top[top["uid"] == uid]
        assert mine["iid"].tolist() == [algo.item_list_[c] for _, c in best]
        assert mine["rank"].tolist() == list(range(1, len(best) + 1))
        alone = algo.recommend(uid, 3)
        if exact:
            assert alone == list(zip(mine["iid"], mine["est"]))
        else:
            assert [e for _, e in alone] == pytest.approx(mine["est"].tolist(), rel=1e-6,
                                                          abs=1e-9)
    raises_naming(lambda: algo.recommend("no such user"), "uid", "uids")
    raises_naming(lambda: algo.recommend(uids[0], 0), "n")
    raises_naming(lambda: algo.score_rows(np.array([trainset.n_users])), "users")
    raises_naming(lambda: algo.estimate_arrays(np.array([0]), np.array([0, 0])), "items")


def _set_kwargs(fixed: dict, drawn: dict, frame: pd.DataFrame) -> dict:
    """The model's keyword arguments: `fixed`, then `drawn`, the catalogues made."""
    kwargs = {**fixed, **drawn}
    for column, key in (("user", "users"), ("item", "items")):
        if key in kwargs:
            kwargs[key] = _catalogue(kwargs[key], frame, column)
    return kwargs


@pytest.mark.parametrize("name", sorted(SET_MODELS))
@fuzz(EXAMPLES)
@given(data=st.data())
def test_every_set_model_keeps_the_contract_that_applies(name, data):
    cls, fixed, parameters = SET_MODELS[name]
    pick = Picker(data.draw, parameters)
    given_names = data.draw(st.sets(st.sampled_from(sorted(parameters)), max_size=4))
    drawn = {p: pick(p, *parameters[p]) for p in sorted(given_names)}
    pick.bad &= set(drawn)
    frame, scale = data.draw(rating_frames(max_users=8, max_items=7))
    kwargs = _set_kwargs(fixed, drawn, frame)
    trainset = to_dataset(frame, scale).build_full_trainset()
    before, given_before = trainset_state(trainset), copy.deepcopy(kwargs)
    algo = cls(random_state=0, **kwargs)
    if pick.bad:
        with pytest.raises((ValueError, TypeError)) as info:
            algo.fit(trainset)
        if not any(re.search(rf"(?<![A-Za-z_]){bad}(?![A-Za-z_])", str(info.value))
                   for bad in pick.bad):    # then the valid ones are refused on their own
            valid = {p: v for p, v in drawn.items() if p not in pick.bad}
            with pytest.raises(type(info.value), match=re.escape(str(info.value))):
                cls(random_state=0, **_set_kwargs(fixed, valid, frame)).fit(trainset)
        return
    try:
        fitted = algo.fit(trainset)
    except (ValueError, TypeError) as error:
        message = str(error)
        assert any(word in message for word in (*kwargs, *DATA_WORDS)), (kwargs, message)
        return
    assert fitted is algo
    check_scores(algo, trainset)
    again = cls(random_state=0, **kwargs).fit(trainset)        # the same seed, the same numbers
    users = np.arange(trainset.n_users)
    for result, expected in zip(again.score_rows(users), algo.score_rows(users)):
        np.testing.assert_array_equal(result, expected)
    check_neighbours_report_and_trainset(algo, trainset, before)
    assert kwargs == given_before


def check_neighbours_report_and_trainset(algo, trainset, before) -> None:
    """`get_neighbors` gives ints (or says the model has none), the report prints, and
    the trainset is as it was (`before`)."""
    try:
        neighbours = algo.get_neighbors(0, 2)
    except TypeError as error:
        assert "no neighbours" in str(error)
    else:
        assert all(isinstance(n, int) for n in neighbours)
    assert str(algo.privacy_report())
    assert trainset_state(trainset) == before
