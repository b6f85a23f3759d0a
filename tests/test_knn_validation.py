"""PrivateKNN's parameters: property-based constructor, fit and predict over valid and
invalid configurations, and their regressions.
"""

from __future__ import annotations

import copy
import math
import warnings

import numpy as np
import pytest
from hypothesis import given
from strategies import (
    algo_items,
    algo_users,
    check_predictions,
    full_testset,
    fuzz,
    knn_parameters,
    raises_naming,
    rating_frames,
    to_dataset,
    trainset_state,
    valid_knn_configurations,
)

from dprec import PrivateKNN, datasets
from dprec.selectors import PNCF, PPNS, Probabilistic, TopK
from dprec.similarity import sketch_backend


# ---------------------------------------------------------------- properties (hypothesis)
def expected_errors(kwargs: dict, bad: set) -> tuple[set, set]:
    """The names an error must mention: the invalid parameters and the violated
    constraints (empty: the constructor must succeed); and the invalid flat parameters
    the named selector does not use, which it may ignore (documented) or reject (see
    test_unused_flat_parameters_are_still_validated)."""
    names = set(bad)
    selector = kwargs["selector"]
    used = {"topk": set(), "probabilistic": set(), "pncf": {"epsilon", "rho"},
            "ppns": {"epsilon", "p", "alpha"}}
    flat = {"epsilon", "p", "alpha", "rho"}
    ignorable = set()
    if isinstance(selector, str) and selector.lower() in used:
        ignorable = names & (flat - used[selector.lower()])
        names -= ignorable
    given_flat = {n for n in flat if kwargs.get(n) is not None}
    if isinstance(selector, (TopK, Probabilistic, PNCF, PPNS)) and given_flat:
        names |= given_flat
    # constraints between parameters (evaluated where their parts are valid)
    k = kwargs["k"]
    if isinstance(selector, str) and selector.lower() == "ppns":
        if kwargs.get("p") is not None and kwargs.get("alpha") is not None:
            names |= {"p", "alpha"}
        elif not names & {"p", "alpha", "k"}:
            p = kwargs.get("alpha") or kwargs.get("p") or 0.5
            if p > (k - 1) / k:
                names.add("alpha" if kwargs.get("alpha") is not None else "p")
    elif isinstance(selector, PPNS) and "k" not in names and selector.p > (k - 1) / k:
        names.add("p")
    return {name.split(":")[-1] for name in names}, ignorable  # "sim_options:s" -> "s"


@fuzz(300)
@given(knn_parameters())
def test_privateknn_constructor(params):
    kwargs, bad = params
    options_before = copy.deepcopy(kwargs["sim_options"])
    names, ignorable = expected_errors(kwargs, bad)
    if names:
        raises_naming(lambda: PrivateKNN(**kwargs).check_params(), *(names | ignorable))
    else:
        try:
            algo = PrivateKNN(**kwargs).check_params()
        except (ValueError, TypeError):
            if not ignorable:
                raise
            raises_naming(lambda: PrivateKNN(**kwargs).check_params(), *ignorable)
        else:
            assert algo.k == kwargs["k"]
            assert algo.random_state is kwargs["random_state"]
    if isinstance(options_before, dict):
        assert kwargs["sim_options"] == options_before


def below_tau(options: dict, trainset) -> bool:
    """Whether some user's set is smaller than a MinHash backend's ``tau`` (or empty)."""
    if options["name"] not in ("rr_minhash", "noisy_minhash"):
        return False
    threshold = options.get("threshold")
    sizes = [sum(threshold is None or r >= threshold for _, r in trainset.ur[u])
             for u in trainset.all_users()]
    if "tau" not in options:  # tau from the data: the smallest non-empty set
        if max(sizes) == 0:
            return True
        tau = min(size for size in sizes if size > 0)
    else:
        tau = options["tau"]
    return options.get("small_users", "raise") == "raise" and min(sizes) < tau


@fuzz(250)
@given(rating_frames(), valid_knn_configurations())
def test_privateknn_fit_and_predict(frame_scale, kwargs):
    frame, scale = frame_scale
    data = to_dataset(frame, scale)
    raw_before = copy.deepcopy(data.raw_ratings)
    trainset = data.build_full_trainset()
    state_before = trainset_state(trainset)
    testset = full_testset(trainset)
    testset_before = copy.deepcopy(testset)
    options_before = copy.deepcopy(kwargs["sim_options"])

    algo = PrivateKNN(**kwargs)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # small users excluded (warned)
            algo.fit(trainset)
    except ValueError as error:  # a set below the public bound tau: documented refusal
        assert "tau" in str(error), error
        assert below_tau(kwargs["sim_options"], trainset), error
        return
    predictions = check_predictions(algo, trainset, testset)

    # was_impossible wherever no neighbour can contribute (exactly where top-k finds
    # fewer than min_k among the k most similar raters, in Surprise's semantics)
    sim = algo.sim
    assert np.isfinite(sim).all()
    known_users, known_items = algo_users(trainset), algo_items(trainset)
    for prediction in predictions:
        if prediction.uid not in known_users or prediction.iid not in known_items:
            continue  # unknown: checked by check_predictions
        u = trainset.to_inner_uid(prediction.uid)
        i = trainset.to_inner_iid(prediction.iid)
        raters = [v for v, _ in trainset.ir[i] if kwargs["neighbourhood"] == "item" or v != u]
        usable = [v for v in raters if (sim[u, v] != 0 if kwargs["centered"] else sim[u, v] > 0)]
        details = prediction.details
        if not raters or (not usable and kwargs["selector"] != "pncf"):
            assert details["was_impossible"], prediction  # PNCF: perturbed weights
        if not details["was_impossible"]:
            assert details["actual_k"] >= max(kwargs["min_k"], 1)
        if kwargs["selector"] == "topk" and kwargs["neighbourhood"] == "item":
            top = sorted(raters, key=lambda v: -sim[u, v])[:kwargs["k"]]  # stable: ir order
            n_counted = sum((sim[u, v] != 0 if kwargs["centered"] else sim[u, v] > 0)
                            for v in top)
            assert details["was_impossible"] == (n_counted < max(kwargs["min_k"], 1))
            if not details["was_impossible"]:
                assert details["actual_k"] == n_counted

    report = algo.privacy_report()
    assert report.guarantee is None  # PrivateKNN's predictions average raw ratings
    # nothing the caller gave was modified
    assert data.raw_ratings == raw_before
    assert trainset_state(trainset) == state_before
    assert testset == testset_before
    assert kwargs["sim_options"] == options_before


def test_check_bool_accepts_numpy_bools():
    """Regression: numpy 2 renamed ``np.bool_``; ``centered=np.True_`` was a TypeError."""
    PrivateKNN(neighbourhood="user", centered=np.True_, verbose=np.False_).check_params()
    raises_naming(lambda: PrivateKNN(neighbourhood="user", centered=np.int64(1)).check_params(),
                  "centered")


def test_ppns_names_alpha_when_alpha_sets_p():
    """Regression: ``alpha`` too large for ``k`` was reported as a bad ``p``."""
    raises_naming(lambda: PrivateKNN(k=5, selector="ppns", alpha=0.9).check_params(), "alpha")


@pytest.mark.parametrize(("kwargs", "name"), [
    ({"selector": "topk", "epsilon": -1.0}, "epsilon"),
    ({"selector": "probabilistic", "p": 7.0}, "p"),
    ({"selector": "pncf", "alpha": "x"}, "alpha"),
    ({"selector": "ppns", "rho": math.nan}, "rho"),
])
def test_unused_flat_parameters_are_still_validated(kwargs, name):
    raises_naming(lambda: PrivateKNN(**kwargs).check_params(), name)


@pytest.mark.parametrize(("neighbourhood", "users", "items", "name"), [
    (nb, users, items, name) for nb in ("item", "user")
    for users, items, name in [([-1], [0], "users"), ([0.5], [0], "users"),
                               ([99], [0], "users"), ([0], [-1], "items"), ([0], [99], "items")]
    if nb == "item" or name == "users"  # items are ignored with neighbourhood="user"
])
def test_kneighbors_rejects_ids_outside_the_trainset(neighbourhood, users, items, name):
    trainset = datasets.synthetic(8, 10, 40, random_state=0).build_full_trainset()
    algo = PrivateKNN(k=3, neighbourhood=neighbourhood).fit(trainset)
    raises_naming(lambda: algo.kneighbors(np.array(users), np.array(items)), name)


@pytest.mark.parametrize(("sim_fill", "sensitivity", "name"), [
    (np.nan, 1.0, "sim"), (np.inf, 1.0, "sim"),
    (0.5, -1.0, "sensitivity"), (0.5, 0.0, "sensitivity"), (0.5, np.nan, "sensitivity"),
])
def test_fit_precomputed_validates_its_arrays(sim_fill, sensitivity, name):
    trainset = datasets.synthetic(6, 8, 30, random_state=0).build_full_trainset()
    sim = np.full((6, 6), sim_fill)
    np.fill_diagonal(sim, 1.0)
    algo = PrivateKNN(k=3, selector="ppns", epsilon=1.0)
    raises_naming(lambda: algo.fit_precomputed(trainset, sim, np.full(6, sensitivity)), name)


@pytest.mark.parametrize("make", [
    lambda: PrivateKNN(sim_options={"name": "cosinus"}),
    lambda: PrivateKNN(sim_options={"name": "jaccard", "user_based": False}),
])
def test_an_unknown_similarity_is_both_surprises_name_error_and_a_value_error(make):
    """#36.19: Surprise raises NameError for an unknown similarity; code written for it
    catches NameError, and dprec's callers catch ValueError: the error is both."""
    trainset = datasets.synthetic(6, 8, 30, random_state=0).build_full_trainset()
    for caught in (NameError, ValueError):
        with pytest.raises(caught, match=r"sim_options\['name'\] must be one of"):
            make().fit(trainset)
    with pytest.raises(NameError, match="must be one of"):
        sketch_backend({"name": "rr_minhas"})
