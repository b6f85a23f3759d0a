"""Valid but extreme parameters, numpy integer types and malformed arguments (#36, points
1, 2, 13 and 16): every model either works, with finite estimates inside the rating scale,
`test() == predict()` and a privacy report within the budget asked, or raises a clear
`ValueError`/`TypeError` naming the user's parameter (never an internal one)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from surprise import Dataset, Reader

from dprec import (
    DPBaseline,
    DPItemKNN,
    LocalKNN,
    MallowsRanker,
    PrivateKNN,
    datasets,
    mechanisms,
)
from dprec.similarity.minhash_functions import jaccard_from_matches

#: names of internal quantities a message must not lead with (the user never passed them)
INTERNAL = ("scale must", "sigma must", "keep_probability must", "sensitivity must",
            "Maximum allowed", "out of bounds", "too large to convert", "float division")


@pytest.fixture(scope="module")
def trainset():
    return datasets.synthetic(30, 40, 400, random_state=0).build_full_trainset()


def knn(**kwargs) -> PrivateKNN:
    return PrivateKNN(verbose=False, random_state=0, **kwargs)


def sketch(name: str, **options) -> PrivateKNN:
    return knn(sim_options={"name": name, **options})


#: (label, model) that must work
WORKS = [
    ("DPBaseline epsilon=1e308", lambda: DPBaseline(epsilon=1e308, random_state=0)),
    ("DPBaseline laplace epsilon=1e308",
     lambda: DPBaseline(epsilon=1e308, mechanism="laplace", random_state=0)),
    ("DPItemKNN epsilon=1e308", lambda: DPItemKNN(epsilon=1e308, random_state=0)),
    ("DPItemKNN clip=1e300", lambda: DPItemKNN(clip=1e300, random_state=0)),
    ("LocalKNN epsilon=1e308", lambda: LocalKNN(epsilon=1e308, random_state=0)),
    ("LocalKNN laplace epsilon=1e308",
     lambda: LocalKNN(epsilon=1e308, rating_release="laplace", random_state=0)),
    ("LocalKNN epsilon=1e12", lambda: LocalKNN(epsilon=1e12, random_state=0)),
    ("LocalKNN krr share near 1",
     lambda: LocalKNN(epsilon=1.0, sketch_share=1 - 1e-16, random_state=0)),
    ("PNCF epsilon=1e308", lambda: knn(selector="pncf", epsilon=1e308)),
    ("PPNS epsilon=1e308", lambda: knn(selector="ppns", epsilon=1e308)),
    ("noisy_minhash epsilon=1e308", lambda: sketch("noisy_minhash", epsilon=1e308)),
    ("sjlt epsilon=1e308", lambda: sketch("sjlt", epsilon=1e308)),
    ("sjlt rating_bound=1e50", lambda: sketch("sjlt", epsilon=1.0, rating_bound=1e50)),
    ("gaussian_jl epsilon=1e308", lambda: sketch("gaussian_jl", epsilon=1e308)),
    ("gaussian_jl delta=5e-324", lambda: sketch("gaussian_jl", epsilon=1.0, delta=5e-324)),
    ("gaussian_jl epsilon=1e-50", lambda: sketch("gaussian_jl", epsilon=1e-50)),
    ("rr_minhash epsilon=1e-20", lambda: sketch("rr_minhash", epsilon=1e-20)),
    ("rr_minhash epsilon=1e12", lambda: sketch("rr_minhash", epsilon=1e12)),
    ("rr_minhash epsilon=1e308", lambda: sketch("rr_minhash", epsilon=1e308)),
    ("PrivateKNN k=10**20", lambda: knn(k=10**20)),
    ("PPNS k=10**20", lambda: knn(k=10**20, selector="ppns")),
    ("PNCF k=10**20", lambda: knn(k=10**20, selector="pncf")),
    ("PPNS alpha=1-1/3 k=3", lambda: knn(k=3, selector="ppns", alpha=1 - 1 / 3)),
    ("MallowsRanker epsilon=1e308", lambda: MallowsRanker(epsilon=1e308, random_state=0)),
    ("MallowsRanker epsilon=1e-300", lambda: MallowsRanker(epsilon=1e-300, random_state=0)),
]


@pytest.mark.parametrize("label, make", WORKS, ids=[label for label, _ in WORKS])
def test_extreme_but_valid_parameters_work(trainset, label, make):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = make().fit(trainset)
        predictions = model.test(trainset.build_testset()[:60])
    low, high = trainset.rating_scale
    est = np.array([p.est for p in predictions])
    assert np.isfinite(est).all() and (est >= low).all() and (est <= high).all()
    for p in predictions[:8]:
        assert model.predict(p.uid, p.iid).est == p.est
    report = getattr(model, "privacy_report", None)
    asked = getattr(model, "epsilon", None)
    if report is not None and isinstance(asked, float):
        # the guarantee stated is within the budget asked (a budget beyond what a sampler
        # resolves is spent only up to it)
        for entry in report().entries:
            assert math.isfinite(entry.epsilon) and entry.epsilon <= asked


#: (label, model, exception, words its message must contain)
FAILS = [
    ("LocalKNN epsilon=1e-20", lambda: LocalKNN(epsilon=1e-20), ValueError,
     ("epsilon = 1e-20", "sketch_share", "at least")),
    ("PNCF epsilon=1e-20", lambda: knn(selector="pncf", epsilon=1e-20), ValueError,
     ("epsilon / 2", "at least")),
    ("PNCF epsilon=1e-300", lambda: knn(selector="pncf", epsilon=1e-300), ValueError,
     ("epsilon / 2", "at least")),
    ("noisy_minhash epsilon=1e-300", lambda: sketch("noisy_minhash", epsilon=1e-300),
     ValueError, ("epsilon = 1e-300", "at least")),
    ("sjlt epsilon=1e-300", lambda: sketch("sjlt", epsilon=1e-300), ValueError,
     ("epsilon = 1e-300", "at least")),
    ("sjlt rating_bound=1e300", lambda: sketch("sjlt", epsilon=1.0, rating_bound=1e300),
     ValueError, ("rating_bound = 1e+300", "epsilon must be at least")),
    ("gaussian_jl epsilon=1e-300", lambda: sketch("gaussian_jl", epsilon=1e-300), ValueError,
     ("epsilon = 1e-300", "epsilon must be at least")),
    ("rr_minhash epsilon=1e-300", lambda: sketch("rr_minhash", epsilon=1e-300), ValueError,
     ("epsilon = 1e-300", "at least")),
    ("DPBaseline laplace global_share=1e-300",
     lambda: DPBaseline(mechanism="laplace", global_share=1e-300), ValueError,
     ("global_share * epsilon", "at least")),
    ("DPBaseline laplace epsilon=1e-300",
     lambda: DPBaseline(mechanism="laplace", epsilon=1e-300), ValueError,
     ("epsilon", "at least")),
    ("DPItemKNN clip=1e-300", lambda: DPItemKNN(clip=1e-300), ValueError, ("clip",)),
    ("PrivateKNN sketch width=2**63", lambda: sketch("minhash", width=2**63), ValueError,
     ("width", "16777216")),
    ("sjlt width=2**63", lambda: sketch("sjlt", epsilon=1.0, width=2**63), ValueError,
     ("width",)),
    ("LocalKNN width=2**63", lambda: LocalKNN(sim_options={"name": "sjlt", "width": 2**63}),
     ValueError, ("width",)),
    ("MallowsRanker n_factors=10**20", lambda: MallowsRanker(n_factors=10**20), ValueError,
     ("n_factors",)),
    ("PPNS p=1 k=10**5", lambda: knn(k=10**5, selector="ppns", p=1.0), ValueError,
     ("p=1.0", "99999/100000")),
    ("PPNS p=1 k=2**60", lambda: knn(k=2**60, selector="ppns", p=1.0), ValueError,
     ("p=1.0",)),
]


@pytest.mark.parametrize("label, make, error, words", FAILS,
                         ids=[label for label, *_ in FAILS])
def test_out_of_reach_parameters_say_which_and_why(trainset, label, make, error, words):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(error) as info:
            make().fit(trainset)
    message = str(info.value)
    for word in words:
        assert word in message
    assert not message.startswith(INTERNAL)


#: numpy integers: the fit reads plain ints (the same model as with the int)
INTEGER_TYPES = [
    ("PPNS k", lambda k: knn(k=k, selector="ppns"), np.uint8),
    ("PNCF k", lambda k: knn(k=k, selector="pncf"), np.uint64),
    ("top-k user k", lambda k: knn(k=k, neighbourhood="user"), np.uint64),
    ("PrivateKNN min_k", lambda k: knn(k=5, min_k=k), np.uint8),
    ("DPItemKNN k", lambda k: DPItemKNN(k=k, random_state=0), np.uint8),
    ("LocalKNN k", lambda k: LocalKNN(k=k, random_state=0), np.uint8),
    ("MallowsRanker batch_size", lambda k: MallowsRanker(batch_size=k, random_state=0), np.int8),
    ("MallowsRanker n_factors", lambda k: MallowsRanker(n_factors=k, random_state=0), np.uint8),
    ("MallowsRanker n_epochs", lambda k: MallowsRanker(n_epochs=k, random_state=0), np.uint8),
]


@pytest.mark.parametrize("label, make, kind", INTEGER_TYPES,
                         ids=[label for label, *_ in INTEGER_TYPES])
def test_numpy_integers_give_the_model_of_the_int(trainset, label, make, kind):
    testset = trainset.build_testset()[:60]
    given = make(kind(4)).fit(trainset).test(testset)
    plain = make(4).fit(trainset).test(testset)
    assert [p.est for p in given] == [p.est for p in plain]


@pytest.mark.parametrize("selector", ["topk", "ppns", "pncf", "probabilistic"])
def test_k_above_the_users_is_k_equal_to_them(trainset, selector):
    """No query has more than n_users candidates: a larger k chooses them all, as
    k = n_users does, with the same draws."""
    testset = trainset.build_testset()[:60]
    n = trainset.n_users
    huge = knn(k=10**20, selector=selector).fit(trainset).test(testset)
    exact = knn(k=n, selector=selector).fit(trainset).test(testset)
    assert [p.est for p in huge] == [p.est for p in exact]


MODELS = [
    ("DPBaseline", lambda: DPBaseline(random_state=0)),
    ("DPItemKNN", lambda: DPItemKNN(random_state=0)),
    ("LocalKNN", lambda: LocalKNN(random_state=0)),
    ("PrivateKNN", knn),
    ("MallowsRanker", lambda: MallowsRanker(random_state=0)),
]


@pytest.mark.parametrize("name, make", MODELS, ids=[name for name, _ in MODELS])
def test_malformed_testset_rows_are_named(trainset, name, make):
    model = make().fit(trainset)
    u, i = trainset.to_raw_uid(0), trainset.to_raw_iid(0)
    with pytest.raises(ValueError, match=r"\(uid, iid, r_ui\) rows.*row 0 has 2 value"):
        model.test([(u, i)])
    with pytest.raises((TypeError, ValueError), match="testset"):
        model.test("abc")


def test_malformed_arguments_of_private_knn(trainset):
    model = knn().fit(trainset)
    with pytest.raises(TypeError, match="uids must be a list of raw user ids"):
        model.recommend_batch(5)
    with pytest.raises(TypeError, match="uids"):
        model.recommend_batch(trainset.to_raw_uid(0))
    with pytest.raises(TypeError, match="sim must be an array of real numbers"):
        model.fit_precomputed(trainset, "x")
    with pytest.raises(TypeError, match="sensitivity must be an array of real numbers"):
        knn(selector="ppns").fit_precomputed(trainset, np.zeros((30, 30)), ["a"] * 30)


def test_a_pair_rated_twice_gets_one_message_from_every_model():
    frame = pd.DataFrame({"u": ["a", "a", "b", "b", "c"], "i": ["x", "x", "y", "x", "y"],
                          "r": [1, 2, 3, 4, 5]})
    twice = Dataset.load_from_df(frame, Reader(rating_scale=(1, 5))).build_full_trainset()
    messages = set()
    for _, make in MODELS:
        with pytest.raises(ValueError) as info:
            make().fit(twice)
        messages.add(str(info.value))
    assert len(messages) == 1
    assert "repeated (user, item) pairs" in messages.pop()


# ------------------------------------------------------------------ the mechanisms
def test_laplace_scale_at_a_huge_budget_spends_at_most_it():
    for sensitivity, changed in [(1.0, 1), (2.0, 2), (2.0 * (1 + 1e-9), 4)]:
        scale = mechanisms.laplace_scale(1e308, sensitivity, max_changed=changed)
        spent = mechanisms.laplace_epsilon(scale, sensitivity, max_changed=changed)
        assert 0.0 < scale < 1e-250 and 0.0 < spent <= 1e308
    # below the floor nothing changes
    assert mechanisms.laplace_scale(1e250, 1.0) == 1e-250


@pytest.mark.parametrize("sampler", ["lattice", "numpy"])
def test_laplace_scale_at_a_tiny_budget_names_it(sampler):
    with pytest.raises(ValueError, match="my_eps = 1e-300 is too small.*my_eps must be at "
                                         "least"):
        mechanisms.laplace_scale(1e-300, 1.0, sampler, name="my_eps")


def test_lattice_minimum_stated_is_enough():
    for changed in (1, 2, 4, 17):
        for sensitivity in (1.0, 2.0, 2.0 * (1 + 1e-9), 16.586):
            minimum = changed * 2.0**-mechanisms.LATTICE_BITS
            scale = mechanisms.laplace_scale(minimum, sensitivity, max_changed=changed)
            assert mechanisms.laplace_epsilon(scale, sensitivity,
                                              max_changed=changed) <= minimum


def test_kenthapadi_sigma_at_extremes_is_the_formula():
    sigma = mechanisms.kenthapadi_sigma(1e308, 1e-4, 1.0)
    assert sigma == pytest.approx(math.sqrt(2.0 / 1e308))
    assert mechanisms.kenthapadi_sigma(1.0, 5e-324, 1.0) == pytest.approx(
        math.sqrt(2.0 * (-math.log(2.0) - math.log(5e-324) + 1.0)))


def test_rr_jaccard_estimate_without_cancellation():
    """At a tiny ε' the keep probability rounds to 1/B: the contrast Bp − 1 comes from ε'."""
    B, K = 4, 8
    eps = 1e-20
    keep = mechanisms.randomized_response_keep_probability(B, eps)
    assert B * keep - 1.0 == 0.0          # what the estimator divided by before
    sims = jaccard_from_matches(np.array([2.0, 3.0]), K, B,
                                {"keep_probability": keep, "epsilon_prime": eps})
    contrast = (B - 1) * eps / B
    assert np.isfinite(sims).all()
    assert sims[1] == pytest.approx((B * 3 / K - 1) * (B - 1) / contrast**2)
