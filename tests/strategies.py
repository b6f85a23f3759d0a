"""Hypothesis strategies, settings and data builders shared by the property tests.

The property tests live next to the other tests of the module they exercise
(``test_knn.py``, ``test_mechanisms.py``, ...) and import from here.  Their
invariants, for random valid and invalid parameters and small random datasets
(one user, one item, all-equal ratings, users with one rating, unknown users
and items at prediction time, ``k`` larger than the number of users):

* an invalid parameter raises ``ValueError``/``TypeError`` naming it;
* valid parameters never raise anything else;
* no prediction is NaN or outside the rating scale, ``was_impossible`` is set
  where no neighbour exists, ``predict`` agrees with ``test``;
* the inputs (``Dataset``, ``Trainset``, test sets, arrays, option dicts) are
  unchanged afterwards (compared with deep copies).

Every property test is derandomised (:func:`fuzz`: the same examples on every
run) and has a small ``max_examples``, so that all of them stay within the CI
budget.  pytest puts ``tests/`` on ``sys.path`` (its default ``prepend``
import mode; ``tests/`` is not a package), so ``from strategies import ...``
works from any test module.
"""

from __future__ import annotations

import copy
import math
import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, settings
from hypothesis import strategies as st
from surprise import Dataset, Reader

from dprec.cli import CV_ALGORITHMS
from dprec.mechanisms.common import words_for
from dprec.selectors import PNCF, PPNS, Probabilistic, TopK

NAN, INF = float("nan"), float("inf")


def fuzz(max_examples: int):
    """Deterministic, deadline-free hypothesis settings (reproducible in CI)."""
    return settings(max_examples=max_examples, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])


def raises_naming(call, *names, errors=(ValueError, TypeError)):
    """``call()`` raises one of ``errors`` whose message names one of ``names``."""
    with pytest.raises(errors) as info:
        call()
    message = str(info.value)
    assert any(re.search(rf"(?<![A-Za-z_]){re.escape(name)}(?![A-Za-z_])", message)
               for name in names), (names, message)
    return info.value


class Picker:
    """Draws each parameter valid or invalid, and remembers the invalid ones.

    With ``odds=1`` half of the examples have only valid parameters; the others
    corrupt one or two of them (so both the success path and every error get
    examples).
    """

    def __init__(self, draw, names, odds: int = 1) -> None:
        self.draw = draw  # all valid with probability odds / (odds + 1)
        self.corrupt = set() if draw(st.integers(0, odds)) else draw(
            st.sets(st.sampled_from(sorted(names)), min_size=1, max_size=2))
        self.bad: set[str] = set()

    def __call__(self, name, valid, invalid):
        if name in self.corrupt:
            self.bad.add(name)
            return self.draw(invalid)
        return self.draw(valid)


# ------------------------------------------------------------------ small datasets
#: arguments of ``datasets.synthetic`` for data whose latent factors are worth much more
#: than MovieLens' (the generator's defaults are calibrated to MovieLens 100k, where
#: factors and neighbours gain little over the baseline): for the tests that check a
#: model finds collaborative signal where there is plenty
STRONG_SIGNAL = {"interaction": 1.2, "noise": 0.5, "user_scale": 0.0, "n_clusters": 0}

#: (low, high, step) of the rating scales drawn; some contain 0 and negative ratings
SCALES = [(1, 5, 1), (1, 10, 1), (0.5, 5, 0.5), (-2, 2, 1), (0, 1, 1), (1, 2, 0.25)]
#: the scales whose ratings are all positive
POSITIVE_SCALES = tuple(scale for scale in SCALES if scale[0] > 0)


@st.composite
def rating_frames(draw, max_users: int = 9, max_items: int = 8, scales=tuple(SCALES),
                  min_density: float = 0.0):
    """A small ratings DataFrame and its rating scale.

    Shapes include a single user, a single item, users with one rating and
    all-equal ratings.
    """
    n_users = draw(st.integers(1, max_users))
    n_items = draw(st.integers(1, max_items))
    low, high, step = draw(st.sampled_from(scales))
    values = np.round(np.arange(low, high + step / 2, step), 6).tolist()
    cells = draw(st.lists(st.tuples(st.integers(0, n_users - 1), st.integers(0, n_items - 1)),
                          min_size=max(1, int(min_density * n_users * n_items)),
                          max_size=n_users * n_items, unique=True))
    if draw(st.booleans()):
        ratings = [draw(st.sampled_from(values))] * len(cells)
    else:
        ratings = draw(st.lists(st.sampled_from(values), min_size=len(cells),
                                max_size=len(cells)))
    frame = pd.DataFrame({"user": [f"u{u}" for u, _ in cells],
                          "item": [f"i{i}" for _, i in cells],
                          "rating": [float(r) for r in ratings]})
    return frame, (low, high)


def to_dataset(frame: pd.DataFrame, scale) -> Dataset:
    return Dataset.load_from_df(frame, Reader(rating_scale=scale))


def raw_ids(trainset) -> tuple[set, set]:
    """The raw ids of the trainset's users and items."""
    return ({trainset.to_raw_uid(u) for u in trainset.all_users()},
            {trainset.to_raw_iid(i) for i in trainset.all_items()})


def full_testset(trainset) -> list[tuple]:
    """Every known pair (rated or not) plus unknown users and items."""
    users = [trainset.to_raw_uid(u) for u in trainset.all_users()]
    items = [trainset.to_raw_iid(i) for i in trainset.all_items()]
    rated = {(trainset.to_raw_uid(u), trainset.to_raw_iid(i)): r
             for u, i, r in trainset.all_ratings()}
    testset = [(u, i, rated.get((u, i), trainset.global_mean)) for u in users for i in items]
    testset += [("no such user", items[0], 3.0), (users[0], "no such item", 3.0),
                ("no such user", "no such item", 3.0)]
    return testset


#: Trainset attributes Surprise fills lazily on first use (caches, not data)
LAZY = {"_global_mean", "_inner2raw_id_users", "_inner2raw_id_items"}


def trainset_state(trainset):
    """A deep copy of everything a Trainset holds (its lazy caches aside)."""
    return copy.deepcopy({key: (dict(value) if isinstance(value, dict) else value)
                          for key, value in vars(trainset).items() if key not in LAZY})


def check_predictions(algo, trainset, testset, unknown_impossible: bool = True):
    """The shared invariants of any fitted Surprise algorithm's predictions (a model of
    public lists, `unknown_impossible=False`, may answer an unknown user or item from
    its releases)."""
    predictions = algo.test(testset)
    assert len(predictions) == len(testset)
    low, high = trainset.rating_scale
    known_users, known_items = raw_ids(trainset)
    for prediction, (uid, iid, r_ui) in zip(predictions, testset):
        assert (prediction.uid, prediction.iid, prediction.r_ui) == (uid, iid, r_ui)
        assert math.isfinite(prediction.est), prediction
        assert low <= prediction.est <= high, prediction
        if unknown_impossible and (uid not in known_users or iid not in known_items):
            assert prediction.details["was_impossible"], prediction
        if prediction.details["was_impossible"]:
            assert prediction.est == min(high, max(low, algo.default_prediction()))
    # predict() answers each query exactly as test() did ("one query, one draw")
    for prediction in predictions[:: max(1, len(predictions) // 6)] + predictions[-3:]:
        again = algo.predict(prediction.uid, prediction.iid, prediction.r_ui)
        assert again.est == prediction.est
        assert again.details["was_impossible"] == prediction.details["was_impossible"]
    return predictions


# ------------------------------------------------------------------ PrivateKNN
BAD_REAL = st.sampled_from([0.0, -1.0, NAN, INF, "1", True])
SIM_NAMES = ["msd", "cosine", "pearson", "MSD", "Cosine"]

#: valid sim_options of the sketch backends (a small width: tiny data)
PROBABILITY = st.floats(1e-6, 0.2)
SKETCH_OPTIONS = st.one_of(
    st.fixed_dictionaries(
        {"name": st.sampled_from(["rr_minhash", "noisy_minhash"]), "width": st.integers(1, 16),
         "B": st.integers(2, 5), "epsilon": st.floats(0.05, 20.0), "delta": PROBABILITY},
        optional={"tau": st.integers(1, 3), "small_users": st.sampled_from(["raise", "exclude"]),
                  "threshold": st.sampled_from([None, 1.0, 3.0])}),
    st.fixed_dictionaries({"name": st.just("minhash"), "width": st.integers(1, 16),
                           "B": st.integers(2, 5)},
                          optional={"threshold": st.sampled_from([None, 3.0])}),
    st.integers(1, 4).flatmap(lambda s: st.fixed_dictionaries(
        {"name": st.just("sjlt"), "s": st.just(s),
         "width": st.integers(1, 6).map(lambda m: m * s), "epsilon": st.floats(0.05, 20.0)},
        optional={"rating_bound": st.sampled_from([10.0, 100.0])})),
    st.fixed_dictionaries({"name": st.just("gaussian_jl"), "width": st.integers(1, 16),
                           "epsilon": st.floats(0.05, 20.0), "delta": st.floats(1e-6, 0.4)},
                          optional={"calibration": st.sampled_from(["kenthapadi", "analytic"])}),
)
#: invalid sketch options, and the parameter the error must name
BAD_SKETCH_OPTIONS = st.sampled_from([
    ({"name": "rr_minhash"}, "epsilon"),
    ({"name": "noisy_minhash", "epsilon": 1.0, "width": 0}, "width"),
    ({"name": "sjlt", "epsilon": 1.0, "width": 6, "s": 4}, "s"),
    ({"name": "sjlt", "epsilon": 1.0, "bogus": 1}, "bogus"),
    ({"name": "gaussian_jl", "epsilon": 1.0, "delta": 0.7}, "delta"),
    ({"name": "noisy_minhash", "epsilon": 1.0, "tau": 1, "set_difference": 2}, "set_difference"),
    ({"name": "minhash", "width": 4, "B": 1}, "B"),
    ({"name": "rr_minhash", "epsilon": 1.0, "small_users": "drop"}, "small_users"),
    ({"name": "sjlt", "epsilon": 1.0, "rating_bound": -1.0}, "rating_bound"),
    ({"name": "sjlt", "epsilon": 1.0, "user_based": False}, "user_based"),
    ({"name": "minhash", "min_support": 2}, "min_support"),
    ({"name": "minhash", "threshold": "a"}, "threshold"),
    ({"name": "rr_minhash", "epsilon": 1.0, "delta": 0.0}, "delta"),
    ({"name": "rr_minhash", "epsilon": NAN}, "epsilon"),
    ({"name": "gaussian_jl", "epsilon": 1.0, "calibration": "paper"}, "calibration"),
])


@st.composite
def knn_parameters(draw):
    """Keyword arguments of PrivateKNN, and the names of the invalid ones."""
    pick = Picker(draw, ["k", "min_k", "neighbourhood", "centered", "random_state", "verbose",
                         "epsilon", "p", "alpha", "rho"])
    bad = pick.bad
    kwargs = {
        "k": pick("k", st.integers(1, 10), st.sampled_from([0, -2, 2.5, "3", True, None])),
        "min_k": pick("min_k", st.integers(0, 3), st.sampled_from([-1, 1.5, "1", False])),
        "neighbourhood": pick("neighbourhood", st.sampled_from(["item", "user", "User"]),
                              st.sampled_from(["items", "both", 1, None])),
        "centered": pick("centered", st.booleans() | st.just(np.bool_(True)),
                         st.sampled_from([1, "yes", None])),
        "random_state": pick("random_state",
                             st.one_of(st.none(), st.integers(0, 2**32),
                                       st.integers(0, 9).map(np.random.RandomState),
                                       st.integers(0, 9).map(np.random.default_rng)),
                             st.sampled_from([-1, 1.5, "0", True])),
        "verbose": pick("verbose", st.just(False), st.sampled_from([0, "no"])),
    }
    if draw(st.integers(0, 3)):
        options = draw(st.one_of(
            st.none(), SKETCH_OPTIONS,
            st.fixed_dictionaries({"name": st.sampled_from(SIM_NAMES)},
                                  optional={"min_support": st.integers(0, 3),
                                            "user_based": st.just(True)}))), None
    else:
        options = draw(st.one_of(BAD_SKETCH_OPTIONS, st.sampled_from(
            [{"name": "jaccard"}, {"name": "minhash", "user_based": False}, {"min_support": -1},
             {"min_support": 1.5}, {"shrinkage": 100}, {"name": 3}, "cosine", ["cosine"]]).map(
            lambda v: (v, "sim_options"))))
    kwargs["sim_options"] = options[0]
    if options[1] is not None:
        bad.add(f"sim_options:{options[1]}")
    selector = draw(st.sampled_from(["topk", "probabilistic", "pncf", "ppns", "PPNS",
                                     "object", "bogus", 7]))
    if selector == "object":
        kwargs["selector"] = draw(st.sampled_from([TopK(), Probabilistic(floor=0.01),
                                                   PNCF(epsilon=2.0), PPNS(p=0.3)]))
    else:
        kwargs["selector"] = selector
        if selector in ("bogus", 7):
            bad.add("selector")
    for name in ("epsilon", "p", "alpha", "rho"):
        if draw(st.booleans()):
            continue
        valid = {"epsilon": st.floats(0.01, 50.0), "p": st.floats(0.05, 0.9),
                 "alpha": st.floats(0.05, 0.9), "rho": st.floats(0.01, 0.99)}[name]
        kwargs[name] = pick(name, valid, BAD_REAL)
    return kwargs, bad


@st.composite
def valid_knn_configurations(draw):
    """Keyword arguments of a valid PrivateKNN (exact similarities or a sketch backend)."""
    selector = draw(st.sampled_from(["topk", "probabilistic", "pncf", "ppns"]))
    neighbourhood = draw(st.sampled_from(["item", "user"]))
    k = draw(st.integers(2 if selector == "ppns" else 1, 9))
    if draw(st.integers(0, 2)) == 0:
        options = draw(SKETCH_OPTIONS)
    else:
        options = {"name": draw(st.sampled_from(["msd", "cosine", "pearson"])),
                   "min_support": draw(st.integers(0, 2))}
    kwargs = {"k": k, "min_k": draw(st.integers(0, 3)), "sim_options": options,
              "selector": selector, "neighbourhood": neighbourhood,
              "centered": draw(st.booleans()),
              "random_state": draw(st.integers(0, 1000))}
    if selector in ("pncf", "ppns"):
        kwargs["epsilon"] = draw(st.sampled_from([0.01, 1.0, 50.0, 1e4]))
    if selector == "ppns":
        kwargs["p"] = draw(st.floats(0.05, (k - 1) / k))
    if selector == "pncf":
        kwargs["rho"] = draw(st.floats(0.01, 0.99))
    return kwargs


# ------------------------------------------------------------------ MallowsRanker
@st.composite
def ranker_parameters(draw):
    """Keyword arguments of MallowsRanker, and the names of the invalid ones."""
    pick = Picker(draw, ["epsilon", "mechanism", "calibration", "n_factors", "n_epochs", "lr",
                         "reg", "batch_size", "pairs_per_rating", "random_state", "verbose"])
    bad = pick.bad
    kwargs = {
        "epsilon": pick("epsilon", st.one_of(st.none(), st.floats(0.01, 100.0), st.just(INF)),
                        st.sampled_from([0.0, -1.0, NAN, "1", True, [1.0]])),
        "mechanism": pick("mechanism", st.sampled_from(["mallows", "laplace", "Laplace"]),
                          st.sampled_from(["gauss", None])),
        "calibration": pick("calibration", st.sampled_from(["tight", "conservative"]),
                            st.sampled_from(["paper", 1])),
        "n_factors": pick("n_factors", st.integers(1, 4), st.sampled_from([0, 2.0])),
        "n_epochs": pick("n_epochs", st.integers(0, 3), st.sampled_from([-1, 1.0])),
        "lr": pick("lr", st.floats(0.001, 0.5), st.sampled_from([0.0, -0.1, NAN, "0.1"])),
        "reg": pick("reg", st.floats(0.0, 0.5), st.sampled_from([-0.1, INF, None])),
        "batch_size": pick("batch_size", st.integers(1, 64), st.sampled_from([0, 8.5])),
        "pairs_per_rating": pick("pairs_per_rating", st.floats(0.1, 3.0),
                                 st.sampled_from([0.0, -1.0, NAN])),
        "random_state": pick("random_state", st.one_of(st.none(), st.integers(0, 99)),
                             st.sampled_from([-1, "0"])),
        "verbose": pick("verbose", st.just(False), st.sampled_from([1])),
    }
    return kwargs, bad


#: lists of orders (distinct integer item ids), some empty
orders_lists = st.lists(
    st.lists(st.integers(-50, 50), unique=True, max_size=12).map(
        lambda xs: np.array(xs, dtype=np.int64)), max_size=6)


# ------------------------------------------------------------------ mechanisms
#: finite float64 arrays of 0 to 3 dimensions (some empty)
finite_arrays = st.integers(0, 3).flatmap(
    lambda ndim: st.lists(st.integers(0, 4), min_size=ndim, max_size=ndim)).flatmap(
    lambda shape: st.lists(st.floats(-1e6, 1e6), min_size=int(np.prod(shape)),
                           max_size=int(np.prod(shape))).map(
        lambda xs: np.array(xs, dtype=np.float64).reshape(shape)))
#: every accepted kind of random_state: an int seed, a RandomState, a Generator
random_states = st.one_of(st.integers(0, 2**32), st.integers(0, 9).map(np.random.RandomState),
                          st.integers(0, 9).map(np.random.default_rng))


# ------------------------------------------------------------------ datasets
@st.composite
def synthetic_parameters(draw):
    """Valid keyword arguments of :func:`dprec.datasets.synthetic` (small)."""
    n_users = draw(st.integers(1, 12))
    n_items = draw(st.integers(1, 12))
    n_ratings = draw(st.integers(n_users, n_users * n_items))
    kwargs = {"n_users": n_users, "n_items": n_items, "n_ratings": n_ratings,
              "random_state": draw(st.integers(0, 1000)),
              "n_factors": draw(st.integers(1, 4)),
              "noise": draw(st.floats(0.0, 2.0)),
              "popularity_sigma": draw(st.floats(0.0, 3.0)),
              "selection_bias": draw(st.floats(0.0, 2.0))}
    if draw(st.booleans()):
        kwargs["min_user_ratings"] = draw(st.integers(1, max(1, min(n_items,
                                                                    n_ratings // n_users))))
    if draw(st.booleans()):
        histogram = draw(st.lists(st.floats(0.0, 1.0), min_size=5, max_size=5))
        assume(sum(histogram) > 0.01)  # no mass: invalid (test_synthetic_rejects_bad_arguments)
        kwargs["rating_histogram"] = histogram
    return kwargs


# ------------------------------------------------------------------ command line
#: valid values of each option of ``dprec demo`` and ``dprec cv``
DEMO_OPTIONS = {"--dataset": st.sampled_from(["auto", "ml-100k", "synthetic"]),
                "--folds": st.integers(2, 10), "--k": st.integers(1, 100),
                "--seed": st.integers(0, 2**31), "--n-jobs": st.integers(1, 4),
                "--out": st.text("abcxyz/_", min_size=1, max_size=8)}
CV_OPTIONS = {"--dataset": st.sampled_from(["ml-100k", "lastfm", "synthetic", "auto"]),
              "--algo": st.sampled_from(CV_ALGORITHMS),
              "--sim": st.sampled_from(["cosine", "msd", "pearson"]),
              "--k": st.integers(1, 100), "--p": st.floats(0.01, 0.9),
              "--neighbourhood": st.sampled_from(["item", "user"]),
              "--folds": st.integers(2, 10), "--seed": st.integers(0, 2**31),
              "--n-jobs": st.integers(1, 4), "--backend": st.sampled_from(["loky", "dask"]),
              "--out": st.text("abcxyz/_", min_size=1, max_size=8)}


# ------------------------------------------------------------------ BetaKNNAttack
@st.composite
def attack_parameters(draw):
    """Keyword arguments of BetaKNNAttack, and the names of the invalid ones."""
    pick = Picker(draw, ["n_known", "betas", "n_targets", "min_target_ratings", "top_n",
                         "random_state", "n_jobs", "progress"], odds=4)
    bad = pick.bad
    kwargs = {
        "n_known": pick("n_known", st.integers(1, 3), st.sampled_from([0, 1.5, "2"])),
        "betas": pick("betas", st.lists(st.integers(1, 2), min_size=1, max_size=2),
                      st.sampled_from([[], [0], "12", 3, [1.5]])),
        "n_targets": pick("n_targets", st.integers(1, 2), st.sampled_from([0, None])),
        "min_target_ratings": pick("min_target_ratings", st.integers(1, 4),
                                   st.sampled_from([0, -2])),
        "top_n": pick("top_n", st.integers(1, 5), st.sampled_from([0, 2.0])),
        "random_state": pick("random_state", st.integers(0, 99), st.sampled_from([-1, "s"])),
        "n_jobs": pick("n_jobs", st.just(1), st.sampled_from([0, 1.5])),
        "progress": pick("progress", st.just(False), st.sampled_from(["no"])),
    }
    return kwargs, bad


class TailDraws(np.random.Generator):
    """A generator whose ``integers`` give words with ln U = ln ``w`` (the lower side, far
    below any 53-bit uniform) and whose ``random`` gives the uniform ``u``: drives the
    samplers that draw ln U exact in its tail to a chosen far-tail draw."""

    def __init__(self, w: float, u: float = 0.75):
        super().__init__(np.random.PCG64(0))
        self._w, self._u, self._more, self._level = w, u, None, 0

    def random(self, size=None, *args, **kwargs):
        return np.full(size, self._u)

    def integers(self, low, high=None, size=None, *args, **kwargs):
        if self._more is None:
            words, self._more = words_for(np.full(size, self._w), False)
            return words
        self._level += 1
        return self._more(self._level, np.arange(size))


def sketch_backends(random_state=0, tau=3) -> list:
    """One of each sketch backend at small widths, the private ones with a public τ."""
    from dprec.similarity import GaussianJL, MinHash, NoisyMinHash, PrivateSJLT, RRMinHash

    return [
        MinHash(32, 4, random_state=random_state),
        RRMinHash(32, 4, epsilon=6.0, delta=1e-4, tau=tau, random_state=random_state),
        NoisyMinHash(32, 4, epsilon=6.0, delta=1e-4, tau=tau, random_state=random_state),
        PrivateSJLT(32, 4, epsilon=2.0, rating_bound=5.0, random_state=random_state),
        GaussianJL(32, epsilon=2.0, delta=1e-4, rating_bound=5.0, random_state=random_state),
    ]


def random_sets(sizes, n_items=400, seed=0):
    """A 0/1 set matrix whose rows are random sets of the given sizes."""
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    rows = [rng.choice(n_items, size, replace=False) for size in sizes]
    indptr = np.concatenate([[0], np.cumsum(sizes)])
    indices = np.concatenate(rows).astype(np.int64) if rows else np.zeros(0, np.int64)
    return sp.csr_matrix((np.ones(indices.size), indices, indptr), shape=(len(sizes), n_items))


def catalogues(data) -> dict:
    """The users and items of ``data`` as public catalogues (``users=``, ``items=``)."""
    return {"users": list(dict.fromkeys(r[0] for r in data.raw_ratings)),
            "items": list(dict.fromkeys(r[1] for r in data.raw_ratings))}


def algo_users(trainset):
    """The raw ids of the users of `trainset`."""
    return {trainset.to_raw_uid(u) for u in trainset.all_users()}


def algo_items(trainset):
    """The raw ids of the items of `trainset`."""
    return {trainset.to_raw_iid(i) for i in trainset.all_items()}


def trainset_of(X: np.ndarray, users=None, items=None, scale=(0, 1)):
    """The trainset of a dense matrix: each non-zero entry a rating of that value (a 0/1
    matrix: sets), users `u0..` and items `i0..` or the names given (inner ids in row
    order; raw ids sort otherwise: `u10` before `u2`)."""
    users = [f"u{u}" for u in range(X.shape[0])] if users is None else users
    items = [f"i{i}" for i in range(X.shape[1])] if items is None else items
    frame = pd.DataFrame([(users[u], items[i], float(X[u, i])) for u, i in zip(*np.nonzero(X))],
                         columns=["user", "item", "rating"])
    return Dataset.load_from_df(frame, Reader(rating_scale=scale)).build_full_trainset()


def fit_quietly(algo, trainset):
    """`algo.fit(trainset)` with its warnings silenced (tests of what it fits, not of what
    it warns)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return algo.fit(trainset)
