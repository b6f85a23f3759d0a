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
"""

from __future__ import annotations

import numpy as np
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
    to_dataset,
    trainset_state,
)

from dprec import (
    DPALS,
    DPBaseline,
    DPItemKNN,
    LocalKNN,
    MallowsRanker,
    PrivateKNN,
    PrivateKNNBaseline,
    PrivateKNNWithZScore,
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
    try:
        neighbours = algo.get_neighbors(0, 2)
    except TypeError as error:
        assert "no neighbours" in str(error)
    else:
        assert all(isinstance(n, int) for n in neighbours)
    assert str(algo.privacy_report())
    assert trainset_state(trainset) == before
