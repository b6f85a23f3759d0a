"""The sketch backends' parameters, options, privacy records and similarity_matrix,
and their privacy entries pinned (dprec.similarity: MinHash, RRMinHash, NoisyMinHash,
the private SJLT and the Gaussian JL)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from strategies import random_sets, sketch_backends
from surprise import Dataset, Reader

from dprec import LocalKNN, PrivateKNN
from dprec.accountant.ledger import PrivacyLeakWarning, Status, Unit
from dprec.mechanisms import gaussian_delta, laplace_epsilon
from dprec.similarity import SKETCH_BACKENDS, Sketch, SketchBackend, sketch_backend
from dprec.similarity.minhash import (
    MinHash,
    NoisyMinHash,
    RRMinHash,
    difference_bound,
    difference_bound_binomial,
)
from dprec.similarity.sjlt import (
    GaussianJL,
    PrivateSJLT,
    kenthapadi_sigma,
    sjlt_matrix,
)

# ----------------------------------------------------------------------------
# parameters, options, privacy records, similarity_matrix
# ----------------------------------------------------------------------------

BAD_PARAMETERS = [
    (lambda: RRMinHash(16, 2, epsilon=0.0, delta=1e-4), ValueError, "epsilon"),
    (lambda: RRMinHash(16, 2, epsilon=float("nan"), delta=1e-4), ValueError, "epsilon"),
    (lambda: NoisyMinHash(0, 2, epsilon=1.0, delta=1e-4), ValueError, "width"),
    (lambda: NoisyMinHash(8, 1, epsilon=1.0, delta=1e-4), ValueError, "B"),
    (lambda: RRMinHash(8.0, 2, epsilon=1.0, delta=1e-4), TypeError, "width"),
    (lambda: RRMinHash(8, 2, epsilon=1.0, delta=0.0), ValueError, "delta"),
    (lambda: RRMinHash(8, 2, epsilon=1.0, delta=1.0), ValueError, "delta"),
    (lambda: RRMinHash(8, 2, epsilon=1.0, delta=1e-4, tau=0), ValueError, "tau"),
    (lambda: RRMinHash(8, 2, epsilon=1.0, delta=1e-4, tau=2, set_difference=3), ValueError,
     "set_difference"),
    (lambda: RRMinHash(8, 2, epsilon=1.0, delta=1e-4, small_users="drop"), ValueError,
     "small_users"),
    (lambda: RRMinHash(8, 2, epsilon=1.0, delta=1e-4, random_state="x"), TypeError, "random_state"),
    (lambda: MinHash(8, 2, threshold=float("nan")), ValueError, "threshold"),
    (lambda: PrivateSJLT(0, 1, epsilon=1.0, rating_bound=1.0), ValueError, "width"),
    (lambda: PrivateSJLT(16, 0, epsilon=1.0, rating_bound=1.0), ValueError, "s"),
    (lambda: PrivateSJLT(16, 3, epsilon=1.0, rating_bound=1.0), ValueError, "s must divide width"),
    (lambda: PrivateSJLT(16, 4, epsilon=-1.0, rating_bound=1.0), ValueError, "epsilon"),
    (lambda: PrivateSJLT(16, 4, epsilon=1.0, rating_bound=0.0), ValueError, "rating_bound"),
    (lambda: PrivateSJLT(16, 4, epsilon=1.0), ValueError, "rating_bound is required"),
    (lambda: GaussianJL(16, epsilon=1.0, delta=0.7, rating_bound=1.0), ValueError, "delta"),
    (lambda: GaussianJL(16, epsilon=1.0, delta=1e-4, rating_bound=1.0, calibration="exact"),
     ValueError, "calibration"),
]


@pytest.mark.parametrize("make,error,name", BAD_PARAMETERS)
def test_bad_parameters_are_rejected_by_name(make, error, name):
    with pytest.raises(error, match=name):
        make()


def test_bad_sketch_inputs_are_rejected():
    rr = RRMinHash(8, 2, epsilon=1.0, delta=1e-4, tau=1)
    with pytest.raises(TypeError, match="X"):
        rr.sketch([[1, 0], [0, 1]])
    with pytest.raises(ValueError, match="keys"):
        rr.sketch(sp.eye(3, format="csr"), keys=[0, 0, 1])
    S = rr.sketch(sp.eye(3, format="csr"))
    with pytest.raises(ValueError, match="made by"):
        MinHash(8, 2).estimate(S)
    with pytest.raises(ValueError, match="coordinates"):
        RRMinHash(9, 2, epsilon=1.0, delta=1e-4, tau=1).estimate(S)
    seeded = RRMinHash(8, 2, epsilon=1.0, delta=1e-4, tau=1, hash_seed=3)
    S = seeded.sketch(sp.eye(3, format="csr"))
    with pytest.raises(ValueError, match="noise parameters"):
        rr.estimate(S, RRMinHash(8, 2, epsilon=2.0, delta=1e-4, tau=1, hash_seed=3)
                    .sketch(sp.eye(3, format="csr")))
    # sketches drawn with different hash functions are not comparable (datasketch's rule)
    with pytest.raises(ValueError, match="different hash functions"):
        rr.estimate(S, RRMinHash(8, 2, epsilon=1.0, delta=1e-4, tau=1, hash_seed=4)
                    .sketch(sp.eye(3, format="csr")))
    with pytest.raises(ValueError, match="buckets"):
        rr.privatize(np.full((2, 8), 2), seed=0)


def test_registry_and_from_options():
    assert set(SKETCH_BACKENDS) == {"minhash", "rr_minhash", "noisy_minhash", "sjlt",
                                    "gaussian_jl"}
    for name, cls in SKETCH_BACKENDS.items():
        assert cls.name == name and cls.score_range == (1.0 if name.endswith("minhash") else 2.0)
    rr = RRMinHash.from_options({"name": "rr_minhash", "width": 128, "B": 4, "epsilon": 4.0,
                                 "delta": 1e-4, "tau": 20}, random_state=3)
    assert (rr.width, rr.B, rr.epsilon, rr.delta, rr.tau, rr.set_difference, rr.random_state) == \
        (128, 4, 4.0, 1e-4, 20, 1, 3)
    defaults = sketch_backend({"name": "SJLT", "epsilon": 1.0, "rating_bound": 5})
    assert isinstance(defaults, PrivateSJLT) and (defaults.width, defaults.s) == (256, 4)
    assert sketch_backend({"name": "minhash"}).width == 128
    with pytest.raises(ValueError, match=r"unknown option\(s\) \['Kay', 'min_support'\]"):
        RRMinHash.from_options({"epsilon": 1.0, "Kay": 3, "min_support": 2})
    with pytest.raises(ValueError, match="must give 'epsilon'"):
        NoisyMinHash.from_options({"width": 16})
    with pytest.raises(ValueError, match="must give 'rating_bound'"):
        GaussianJL.from_options({"epsilon": 1.0})
    jl = GaussianJL.from_options({"epsilon": 1.0, "rating_bound": 5, "calibration": "analytic"})
    assert (jl.width, jl.delta, jl.calibration) == (256, 1e-4, "analytic")
    with pytest.raises(ValueError, match="sketch"):
        jl.distance_variance(np.ones(3))
    with pytest.raises(ValueError, match="'rr_minhash'"):
        RRMinHash.from_options({"name": "sjlt", "epsilon": 1.0})
    with pytest.raises(ValueError, match="one of"):
        sketch_backend({"name": "cosine"})
    with pytest.raises(ValueError, match="user_based"):
        MinHash.from_options({"user_based": False})


def test_the_backend_contract_is_abstract_and_sketches_keep_their_seed():
    with pytest.raises(TypeError, match="abstract"):
        SketchBackend()
    for cls in SKETCH_BACKENDS.values():
        assert issubclass(cls, SketchBackend) and not cls.__abstractmethods__
    X = sp.random(6, 40, density=0.3, format="csr", random_state=0)
    one = MinHash(16, 4, hash_seed=1).sketch(X)
    two = MinHash(16, 4, hash_seed=2).sketch(X)
    assert (one.hash_seed, two.hash_seed) == (1, 2)
    with pytest.raises(ValueError, match="different hash functions"):
        MinHash(16, 4).estimate(one, two)


@pytest.mark.parametrize("cls, old, new, value", [
    (RRMinHash, "K", "width", 32), (RRMinHash, "alpha", "set_difference", 2),
    (PrivateSJLT, "k", "width", 32), (PrivateSJLT, "sensitivity", "rating_bound", 5.0)])
def test_deprecated_parameter_names_still_work(cls, old, new, value):
    required = {"epsilon": 1.0, **({"delta": 1e-4, "tau": 10} if cls is RRMinHash else
                                   {"rating_bound": 5.0})}
    with pytest.warns(DeprecationWarning, match=f"'{old}' is deprecated, use '{new}'"):
        backend = cls(**{**required, old: value})
    assert getattr(backend, new) == value
    with pytest.warns(DeprecationWarning, match=f"{old} is deprecated"):
        assert getattr(backend, old) == value
    with pytest.warns(DeprecationWarning, match=f"sim_options\\['{old}'\\] is deprecated"):
        from_options = cls.from_options({**required, old: value})
    assert from_options.get_params() == backend.get_params()
    with pytest.raises(TypeError, match="unexpected keyword argument 'Kay'"):
        cls(**required, Kay=3)


@pytest.mark.parametrize("cls", [RRMinHash, NoisyMinHash])
def test_private_minhash_defaults(cls):
    backend = cls(epsilon=1.0)
    assert (backend.width, backend.B, backend.delta, backend.tau, backend.set_difference,
            backend.small_users, backend.hash_seed) == (128, 2, 1e-4, None, 1, "raise", None)


def test_privacy_entries_come_from_the_mechanisms_maps():
    entries = [b.privacy() for b in sketch_backends(np.random.default_rng(0), tau=20)]
    assert [e.component for e in entries] == ["similarity"] * 5
    assert [e.mechanism.split(" ")[0] for e in entries] == [
        "none", "randomized_response", "laplace", "laplace", "gaussian"]
    for e, eps in zip(entries[1:], [6.0, 6.0, 2.0, 2.0]):
        assert e.epsilon == pytest.approx(eps, rel=1e-5) and e.epsilon <= eps * (1 + 1e-12)
    assert [e.delta for e in entries[1:]] == [1e-4, 1e-4, 0.0, 1e-4]  # JL: δ before a sketch
    assert all(e.applies_to == "user" for e in entries)
    # Gaussian JL's floating-point noise leaks through its low bits: reproduced, not held
    assert [e.status for e in entries] == [Status.HOLDS] * 4 + [Status.AS_PUBLISHED]
    assert entries[0].epsilon == math.inf
    assert [e.unit for e in entries] == [Unit.SET_ITEM] * 3 + [Unit.RATING] * 2
    assert "rating_bound = 5" in entries[3].note
    assert "sets of at least τ = 20 items" in entries[1].note


@pytest.mark.parametrize("backend", sketch_backends(tau=None), ids=lambda b: b.name)
def test_similarity_matrix_is_ready_for_knn(backend, small_ratings):
    sims = backend.similarity_matrix(small_ratings)
    n = small_ratings.shape[0]
    low = 0.0 if backend.score_range == 1.0 else -1.0
    assert sims.shape == (n, n) and sims.dtype == np.float64
    assert np.isfinite(sims).all() and sims.min() >= low and sims.max() <= 1.0
    np.testing.assert_array_equal(np.diag(sims), 1.0)
    np.testing.assert_allclose(sims, sims.T, atol=1e-9)


def test_similarity_matrix_uses_threshold_and_checks_the_rating_bound(small_ratings):
    liked = MinHash(64, 2, threshold=4.0, random_state=0)
    S_liked = liked.sketch(liked.similarity_input(small_ratings))
    expected = (small_ratings >= 4.0).astype(np.int8)
    direct = MinHash(64, 2, random_state=0).sketch(expected)
    np.testing.assert_array_equal(S_liked.values, direct.values)
    with pytest.raises(ValueError, match="rating_bound"):
        PrivateSJLT(16, 4, epsilon=1.0, rating_bound=4.0).similarity_matrix(small_ratings)


def test_sketch_objects():
    S = Sketch(np.zeros((3, 2)), np.array([True, False, True]), "sjlt", {"scale": 1.0})
    assert len(S) == 3 and S.width == 2 and S[1:].valid.tolist() == [False, True]
    with pytest.raises(TypeError):
        S.params["scale"] = 2.0
    with pytest.raises(ValueError, match="shape"):
        Sketch(np.zeros(3), np.ones(3, bool), "sjlt")


# ----------------------------------------------------------------------------
# the privacy entries and parameters, pinned
# ----------------------------------------------------------------------------

def test_minhash_entries_field_by_field():
    X = random_sets([30, 12, 40])
    before = RRMinHash(16, 2, epsilon=4.0,
                       delta=1e-4).privacy()               # τ from the data, unknown
    assert (before.component, before.mechanism, before.epsilon, before.delta, before.unit,
            before.status, before.applies_to, before.note) == (
        "similarity", "randomized_response (RRMinHash)", 4.0, 1e-4, Unit.SET_ITEM,
        Status.VOID, "user", "τ not known yet")
    public = RRMinHash(16, 2, epsilon=4.0, delta=1e-4,
                       tau=10).privacy()       # τ public: known at once
    assert public.status is Status.HOLDS and public.epsilon == pytest.approx(4.0)
    random_hash = RRMinHash(16, 2, epsilon=4.0, delta=1e-4, tau=10,
                            random_state=np.random.default_rng(0))
    random_hash.sketch(X)
    L = difference_bound(16, 2, 1, 10, 1e-4)
    entry = random_hash.privacy()
    assert entry.epsilon == pytest.approx(4.0) and entry.delta == 1e-4
    assert entry.note == ("1 item(s) of one user's set, sets of at least τ = 10 items; δ over "
                          f"the random hash functions (at most L = {L:.4g} coordinates differ "
                          "with probability 1 − δ)")
    fixed = NoisyMinHash(16, 2, epsilon=4.0, delta=1e-4, tau=10, hash_seed=5,
                         random_state=np.random.default_rng(0))
    fixed.sketch(X)
    entry = fixed.privacy()
    assert (entry.mechanism, entry.delta) == ("laplace (NoisyMinHash)", 0.0)
    assert entry.epsilon == pytest.approx(laplace_epsilon(fixed.scale(), 16 * 1, "lattice",
                                                          max_changed=16))
    assert entry.note == ("1 item(s) of one user's set, sets of at least τ = 10 items; hash "
                          "functions fixed by hash_seed = 5: worst case over neighbouring sets, "
                          "all K = 16 coordinates may differ")
    assert NoisyMinHash(16, 4, epsilon=4.0, delta=1e-4, tau=10).sensitivity() == pytest.approx(
        difference_bound(16, 4, 1, 10, 1e-4) * 3)


def test_sketch_params_and_rows_without_a_sketch():
    X = random_sets([30, 2, 40])
    rr = RRMinHash(16, 4, epsilon=4.0, delta=1e-4, tau=10, small_users="exclude", threshold=3.0,
                   random_state=0)
    assert rr.threshold == 3.0
    with pytest.warns(UserWarning):
        S = rr.sketch(X)
    assert set(S.params) == {"keep_probability", "epsilon_prime", "tau", "hash_seed"}
    assert (np.asarray(S.values)[1] == -1).all() and (np.asarray(S.values)[[0, 2]] >= 0).all()
    noisy = NoisyMinHash(16, 4, epsilon=4.0, delta=1e-4, tau=10, small_users="exclude",
                         random_state=0)
    with pytest.warns(UserWarning):
        S = noisy.sketch(X)
    assert set(S.params) == {"scale", "tau", "hash_seed"}
    assert (np.asarray(S.values)[1] == 0.0).all()
    projection = PrivateSJLT(16, 4, epsilon=1.0, rating_bound=5.0, hash_seed=3, random_state=0)
    assert set(projection.sketch(X).params) == {"scale", "hash_seed"} and \
        projection.hash_seed == 3


def test_warnings_say_why():
    with pytest.warns(PrivacyLeakWarning, match=(
            r"tau=None reads τ = 1 from the data \(the smallest set\): that releases it and "
            r"makes every user's noise depend on another user's data, so the \(ε, δ\) "
            r"guarantee is void; give a public tau")):
        RRMinHash(16, 2, epsilon=4.0, delta=1e-4, random_state=0).sketch(random_sets([30, 1]))
    with pytest.warns(UserWarning, match=(r"1 user\(s\) with fewer than tau=5 items \(empty "
                                          r"sets included\) are excluded: no sketch released, "
                                          r"similarity 0")):
        RRMinHash(16, 2, epsilon=4.0, delta=1e-4, tau=5, small_users="exclude").sketch(
            random_sets([30, 1]))


def test_the_exact_binomial_quantile_reaches_k():
    # τ = 1, B = 2: a coordinate differs with probability 1/2, all four with 1/16 > δ
    assert difference_bound_binomial(4, 2, 1, 1, 1e-4) == 4
    assert difference_bound_binomial(1, 2, 1, 1, 0.6) == 0      # P[X > 0] = 1/2 ≤ 0.6


def test_projection_matrices_as_documented():
    from dprec.utils._rng import keyed_bits

    keys = np.array([3, 8, 1])
    S = sjlt_matrix(16, 4, keys, 9)
    assert S.shape == (16, 3)
    buckets = keyed_bits(9, keys, 4, stream=0) % np.uint64(4)
    signs = np.where(keyed_bits(9, keys, 4, stream=1) >> np.uint64(63), 1.0, -1.0)
    dense = np.zeros((16, 3))
    for j in range(3):
        dense[np.arange(4) * 4 + buckets[j].astype(int), j] = signs[j] / 2.0
    np.testing.assert_array_equal(S.toarray(), dense)
    assert sjlt_matrix(16, 1, np.array([7]), 0).shape == (16, 1)
    jl = GaussianJL(8, epsilon=1.0, delta=1e-5, rating_bound=0.5, hash_seed=2, random_state=0)
    jl.sketch(sp.csr_matrix(np.ones((1, 3))))
    w2 = 0.5 * np.sqrt((jl.projection_**2).sum(axis=0)).max()
    assert jl.sigma_ == kenthapadi_sigma(1.0, 1e-5, w2)
    assert jl.privacy().delta == gaussian_delta(jl.sigma_, w2, 1.0)
    assert jl.privacy().mechanism == "gaussian (Gaussian JL)"
    assert jl.privacy().note.startswith("Kenthapadi et al.'s baseline as published, not a "
                                        "guarantee: the noise is floating-point Gaussian, and "
                                        "the low bits of a released value reveal the input "
                                        "(Mironov 2012)")
    half = np.full((8, 2), 0.5 / np.sqrt(8))                     # column norms 0.5
    assert jl.sigma(half) == pytest.approx(kenthapadi_sigma(1.0, 1e-5, 0.25), rel=1e-12)
    unit = np.zeros((8, 1))
    unit[0, 0] = 1.0
    assert jl.sigma(unit) == kenthapadi_sigma(1.0, 1e-5, 0.5)
    assert jl.sigma(np.zeros((8, 0))) < 1e-200                   # no feature: no noise needed
    sjlt = PrivateSJLT(1, 1, epsilon=2.0, rating_bound=5.0,
                       random_state=0)          # k = 1 is allowed
    assert sjlt.privacy().mechanism == "laplace (private SJLT)"
    assert kenthapadi_sigma(1.0, 0.4999, 0.5) > 0                 # δ < 1/2, any w₂ > 0


def test_projections_reproduce_with_a_seed_and_keep_their_hash_seed():
    X = sp.random(5, 20, density=0.4, format="csr", random_state=0)
    a = PrivateSJLT(16, 4, epsilon=1.0, rating_bound=5.0, random_state=3).sketch(X).values
    np.testing.assert_array_equal(a, PrivateSJLT(16, 4, epsilon=1.0, rating_bound=5.0,
                                                 random_state=3)
                                  .sketch(X).values)
    one, two = (PrivateSJLT(16, 4, epsilon=1.0, rating_bound=5.0, hash_seed=5,
                            random_state=s) for s in (1, 2))
    one.sketch(X)
    two.sketch(X)
    assert (one.projection_ != two.projection_).nnz == 0 and one.hash_seed_ == 5


@pytest.mark.parametrize("make", [
    lambda: LocalKNN(epsilon=1.0),
    lambda: PrivateKNN(sim_options={"name": "sjlt", "epsilon": 1.0}, verbose=False),
])
def test_item_ids_that_read_the_same_as_text_are_named(make):
    """#36.15: the sketches key their public hashes by str(id), so 1 and "1" collide; the
    error names both ids and the fix."""
    rows = [(f"u{u}", (1, "1", "i2", "i3")[i], float((u + i) % 5 + 1))
            for u in range(6) for i in range(4)]
    trainset = Dataset.load_from_df(pd.DataFrame(rows),
                                    Reader(rating_scale=(1, 5))).build_full_trainset()
    with pytest.raises(ValueError, match=r"^item ids 1 and '1' read the same as text"):
        make().fit(trainset)
