"""Private similarity sketches: hashing, estimators, formulas, τ, options."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from strategies import SKETCH_OPTIONS, fuzz, raises_naming, random_sets, sketch_backends

from dprec.accountant.ledger import PrivacyLeakWarning, Status, Unit
from dprec.experiments.jaccard_sketches import disjoint_set_pairs
from dprec.mechanisms import gaussian_delta, gaussian_sigma, laplace_epsilon
from dprec.similarity import sketch_backend
from dprec.similarity.minhash import (
    MinHash,
    MinHashFunctions,
    NoisyMinHash,
    RRMinHash,
    difference_bound,
    difference_bound_binomial,
    difference_bound_paper,
)
from dprec.similarity.sjlt import (
    GaussianJL,
    PrivateSJLT,
    gaussian_jl_distance_variance,
    gaussian_jl_matrix,
    kenthapadi_sigma,
    sjlt_distance_variance,
    sjlt_matrix,
)


def _pairs(backend, X):
    """Sketch ``X`` (pairs in rows 2i, 2i+1) and return the two halves."""
    S = backend.sketch(X)
    return S[0::2], S[1::2]


# ----------------------------------------------------------------------------
# MinHash hashing
# ----------------------------------------------------------------------------

@st.composite
def _set_matrices(draw):
    n_rows = draw(st.integers(1, 12))
    n_items = draw(st.integers(1, 40))
    rows = [draw(st.lists(st.integers(0, n_items - 1), max_size=15)) for _ in range(n_rows)]
    indices = np.array([i for row in rows for i in row], dtype=np.int64)
    indptr = np.concatenate([[0], np.cumsum([len(r) for r in rows])])
    data = np.ones(indices.size)
    return sp.csr_matrix((data, indices, indptr), shape=(n_rows, n_items)), rows


@settings(max_examples=40, deadline=None)
@given(_set_matrices(), st.integers(1, 9), st.integers(2, 5), st.integers(0, 10))
def test_minhash_buckets_equal_brute_force(case, K, B, seed):
    """Bucket of the argmin of π_j over each row's set; -1 for empty rows (any position)."""
    X, rows = case
    hashes = MinHashFunctions.draw(K, B, np.arange(X.shape[1]), seed)
    got = hashes.buckets(sp.csr_matrix(X.toarray() != 0))
    codes = hashes.codes.astype(np.int64)
    for u, row in enumerate(rows):
        if not row:
            assert (got[u] == -1).all()
        else:
            element = np.array(row)[np.argmin(codes[row] // B, axis=0)]
            assert np.array_equal(got[u], codes[element, np.arange(K)] % B)


def test_hash_table_holds_random_permutations_and_uniform_buckets():
    hashes = MinHashFunctions.draw(64, 3, np.arange(500), 0)
    ranks, buckets = hashes.codes // 3, hashes.codes % 3
    assert all(len(np.unique(ranks[:, j])) == 500 for j in range(64))   # no ties
    first = np.bincount(np.argmin(MinHashFunctions.draw(2000, 3, np.arange(5), 1).codes,
                                  axis=0), minlength=5)
    assert stats.chisquare(first).pvalue > 1e-4      # each item the minimum equally often
    counts = np.bincount(buckets.ravel().astype(np.int64), minlength=3)
    assert stats.chisquare(counts).pvalue > 1e-4
    assert not hashes.codes.flags.writeable


def test_hash_functions_depend_on_the_item_key_only():
    """An item's hash values, projection column and signs are functions of the public
    seed and its key: other items, or their order, never change them."""
    keys = np.array([17, 4, 99, 23, 8])
    shuffled = keys[[3, 0, 4]]
    full = MinHashFunctions.draw(16, 4, keys, 5).codes
    np.testing.assert_array_equal(MinHashFunctions.draw(16, 4, shuffled, 5).codes,
                                  full[[3, 0, 4]])
    sjlt = sjlt_matrix(16, 4, keys, 5).toarray()
    np.testing.assert_array_equal(sjlt_matrix(16, 4, shuffled, 5).toarray(), sjlt[:, [3, 0, 4]])
    jl = gaussian_jl_matrix(16, keys, 5)
    np.testing.assert_array_equal(gaussian_jl_matrix(16, shuffled, 5), jl[:, [3, 0, 4]])
    assert not np.array_equal(MinHashFunctions.draw(16, 4, keys, 6).codes, full)


def test_sketch_handles_empty_rows_at_both_ends_and_in_the_middle():
    X = sp.csr_matrix(np.array([[0, 0, 0, 0], [1, 0, 1, 0], [0, 0, 0, 0], [0, 1, 0, 0],
                                [0, 0, 0, 0]]))
    S = MinHash(5, 2, random_state=0).sketch(X)
    assert S.valid.tolist() == [False, True, False, True, False]
    assert (S.values[~S.valid] == -1).all() and (S.values[S.valid] >= 0).all()
    sims = MinHash(5, 2, random_state=0).estimate(S)
    assert np.array_equal(np.diag(sims), np.ones(5))
    assert (sims[0, 1:] == 0).all() and (sims[1:, 0] == 0).all()


def test_blocks_of_rows_give_the_same_buckets_as_one_block(monkeypatch):
    import dprec.similarity.minhash_functions as mh

    X = sp.random(60, 80, density=0.2, format="csr", random_state=1)
    whole = MinHash(7, 3, random_state=2).sketch(X).values
    monkeypatch.setattr(mh, "_BLOCK", 7 * 5)          # ~5 gathered items per block
    assert np.array_equal(MinHash(7, 3, random_state=2).sketch(X).values, whole)


# ----------------------------------------------------------------------------
# estimators: unbiased, consistent, improving
# ----------------------------------------------------------------------------

UNBIASED_CASES = [
    (MinHash, dict(width=16, B=2), 40, 10),
    (MinHash, dict(width=24, B=4), 30, 20),
    (RRMinHash, dict(width=32, B=2, epsilon=4.0, delta=1e-4, tau=30), 30, 28),
    (RRMinHash, dict(width=16, B=4, epsilon=8.0, delta=1e-4, tau=20), 20, 10),
    (RRMinHash, dict(width=48, B=3, epsilon=2.0, delta=1e-3, tau=40), 40, 4),
    (NoisyMinHash, dict(width=32, B=2, epsilon=6.0, delta=1e-4, tau=30), 30, 20),
    (NoisyMinHash, dict(width=16, B=4, epsilon=8.0, delta=1e-4, tau=20), 20, 4),
]


@pytest.mark.parametrize("cls,params,size,overlap", UNBIASED_CASES)
def test_jaccard_estimators_are_unbiased_before_clipping(cls, params, size, overlap):
    n_pairs = 2000
    truth = overlap / (2 * size - overlap)
    backend = cls(**params, random_state=7)
    a, b = _pairs(backend, disjoint_set_pairs(n_pairs, size, overlap))
    est = backend.estimate_paired(a, b, clip=False)
    se = est.std(ddof=1) / math.sqrt(n_pairs)
    assert abs(est.mean() - truth) < 4.0 * se, (est.mean(), truth, se)
    clipped = backend.estimate_paired(a, b)
    assert clipped.min() >= 0.0 and clipped.max() <= 1.0


def test_paired_and_cross_estimates_agree_with_the_full_matrix():
    X = disjoint_set_pairs(12, 20, 8)
    for backend in sketch_backends(random_state=3, tau=20):
        S = backend.sketch(X)
        full = backend.estimate(S, clip=False)
        cross = backend.estimate(S[:5], S[5:], clip=False)
        np.testing.assert_allclose(cross, full[:5, 5:], rtol=1e-10, atol=1e-10)
        if hasattr(backend, "estimate_paired"):
            paired = backend.estimate_paired(S[0::2], S[1::2], clip=False)
            np.testing.assert_allclose(paired, np.diag(full[0::2, 1::2]), rtol=1e-10,
                                       atol=1e-10)
        np.testing.assert_array_equal(np.diag(full), 1.0)
        np.testing.assert_allclose(full, full.T, atol=1e-9)


def test_wide_one_hot_encodings_use_the_sparse_product():
    from dprec.similarity.minhash_functions import _DENSE_ONE_HOT, match_counts

    rng = np.random.default_rng(0)
    codes = rng.integers(0, 1000, size=(30, 8))
    codes[4] = -1                                             # a row without a sketch
    assert _DENSE_ONE_HOT < 8 * 1000
    expected = (codes[:, None, :] == codes[None, :, :]).sum(axis=2).astype(float)
    expected[4, :] = expected[:, 4] = 0.0
    np.testing.assert_array_equal(match_counts(codes, codes, 1000), expected)
    small = codes % 7                                         # dense path, cross product
    small[4] = -1
    expected = (small[:, None, :] == small[None, :5, :]).sum(axis=2).astype(float)
    expected[4, :] = expected[:, 4] = 0.0
    np.testing.assert_array_equal(match_counts(small, small[:5], 7), expected)


def _mae(backend, n_pairs=400, size=50, overlap=30):
    truth = overlap / (2 * size - overlap)
    a, b = _pairs(backend, disjoint_set_pairs(n_pairs, size, overlap))
    return float(np.mean(np.abs(backend.estimate_paired(a, b) - truth)))


def test_mae_falls_as_K_grows_at_fixed_per_coordinate_noise():
    tau, delta, B = 50, 1e-4, 2
    rr_eps_prime, noisy_scale = 2.0, 0.25           # mild: clipping must not dominate
    mae = {}
    for K in (32, 256):
        L = difference_bound(K, B, 1, tau, delta)
        rr = RRMinHash(K, B, epsilon=rr_eps_prime * math.ceil(L), delta=delta, tau=tau,
                       random_state=K)
        assert rr.epsilon_prime() == pytest.approx(rr_eps_prime)
        noisy = NoisyMinHash(K, B, epsilon=(B - 1) * L / noisy_scale, delta=delta, tau=tau,
                             random_state=K)
        assert noisy.scale() == pytest.approx(noisy_scale, rel=1e-4)
        mae[K] = (_mae(rr), _mae(noisy), _mae(MinHash(K, B, random_state=K)))
    for small, large in zip(mae[32], mae[256]):
        assert large < 0.6 * small                  # ~1/sqrt(8) = 0.35 expected


def test_mae_falls_as_epsilon_grows():
    for cls in (RRMinHash, NoisyMinHash):
        errors = [_mae(cls(64, 2, epsilon=eps, delta=1e-4, tau=50,
                           random_state=1)) for eps in (2.0, 8.0)]
        assert errors[1] < 0.8 * errors[0], (cls.name, errors)


def test_more_noise_cannot_beat_plain_minhash():
    plain = _mae(MinHash(64, 2, random_state=4))
    private = _mae(RRMinHash(64, 2, epsilon=4.0, delta=1e-4, tau=50, random_state=4))
    assert plain < private


# ----------------------------------------------------------------------------
# formulas: L, ε', the Laplace scale
# ----------------------------------------------------------------------------

def test_paper_bound_by_hand():
    # K = 500, B = 2, α/τ = 1/50: K r = 5, L = 5 + sqrt(3 ln(1e4) · 5)
    expected = 5.0 + math.sqrt(3.0 * math.log(1e4) * 5.0)
    assert difference_bound_paper(500, 2, 1, 50, 1e-4) == pytest.approx(expected)
    assert expected == pytest.approx(16.75, abs=0.01)


@pytest.mark.parametrize("K,B,tau,eps", [(500, 2, 50, 4.0), (200, 4, 20, 2.0),
                                         (128, 4, 10, 6.0), (300, 2, 5, 8.0)])
def test_epsilon_prime_and_scale_follow_the_paper_where_its_bound_holds(K, B, tau, eps):
    L = difference_bound_paper(K, B, 1, tau, 1e-4)
    r = (1 / tau) * (1 - 1 / B)
    if K * r >= 3 * math.log(1e4):                 # the Chernoff step's own condition
        assert difference_bound(K, B, 1, tau, 1e-4) == pytest.approx(L)
    if difference_bound(K, B, 1, tau, 1e-4) == pytest.approx(L):
        rr = RRMinHash(K, B, epsilon=eps, delta=1e-4, tau=tau)
        assert rr.epsilon_prime() == pytest.approx(eps / math.ceil(L))
        p = math.exp(eps / math.ceil(L)) / (math.exp(eps / math.ceil(L)) + B - 1)
        assert rr.keep_probability() == pytest.approx(p)
        noisy = NoisyMinHash(K, B, epsilon=eps, delta=1e-4, tau=tau)
        assert noisy.scale() == pytest.approx((B - 1) * L / eps, rel=1e-5)
        assert laplace_epsilon(noisy.scale(), noisy.sensitivity(), "lattice",
                               math.ceil(L)) <= eps


def test_binomial_bound_is_used_where_the_paper_bound_fails():
    # K = 100, τ = 1000, B = 2: L_paper = 1.23 but P[Bin(100, 5e-4) > 1] = 1.2e-3 > δ
    K, B, tau, delta = 100, 2, 1000, 1e-4
    r = (1 / tau) * (1 - 1 / B)
    paper = difference_bound_paper(K, B, 1, tau, delta)
    assert stats.binom.sf(math.floor(paper), K, r) > 10 * delta
    used = difference_bound(K, B, 1, tau, delta)
    assert used == difference_bound_binomial(K, B, 1, tau, delta) == 2
    assert stats.binom.sf(used, K, r) <= delta
    assert NoisyMinHash(K, B, epsilon=4.0, delta=delta, tau=tau).scale() == pytest.approx(
        (B - 1) * used / 4.0, rel=1e-5)
    assert difference_bound(10, 2, 1, 2, 1e-9) == 10          # capped at K


# ----------------------------------------------------------------------------
# the device's view: a row depends on its row only
# ----------------------------------------------------------------------------

@pytest.mark.parametrize("backend", sketch_backends(), ids=lambda b: b.name)
def test_a_rows_sketch_does_not_depend_on_other_rows(backend):
    rng = np.random.default_rng(0)
    X = sp.random(20, 60, density=0.2, format="csr", random_state=rng,
                  data_rvs=lambda n: rng.integers(1, 6, n).astype(float))
    X = X + sp.csr_matrix((np.ones(20), (np.arange(20), np.arange(20) + 5)), shape=(20, 60))
    other = X.tolil()
    other[1:, :] = sp.random(19, 60, density=0.3, random_state=1).toarray() * 4 + 1
    other[1:, :10] = 1.0
    S, T = backend.sketch(X), backend.sketch(other.tocsr())
    np.testing.assert_array_equal(S.values[0], T.values[0])
    rows = np.array([3, 7, 11])
    alone = backend.sketch(X[rows], keys=rows)
    np.testing.assert_array_equal(alone.values, S.values[rows])


def test_sketches_are_reproducible_for_int_seeds_and_fresh_for_generators():
    X = disjoint_set_pairs(5, 10, 4)
    rr = RRMinHash(16, 2, epsilon=4.0, delta=1e-4, tau=10, random_state=3)
    np.testing.assert_array_equal(rr.sketch(X).values, rr.sketch(X).values)
    fresh = RRMinHash(16, 2, epsilon=4.0, delta=1e-4, tau=10, random_state=np.random.default_rng(3))
    assert not np.array_equal(fresh.sketch(X).values, fresh.sketch(X).values)


def test_inputs_are_not_mutated_and_sketches_are_read_only(small_ratings):
    X = small_ratings.copy()
    X.data[::7] = 0.0                                # explicit zeros are not members
    before = (X.data.copy(), X.indices.copy(), X.indptr.copy())
    backends = sketch_backends(tau=1) + [MinHash(8, 2, threshold=4.0),
                                       RRMinHash(8, 2, epsilon=1.0, delta=1e-4, threshold=3.5,
                                                 small_users="exclude")]
    for backend in backends:
        S = backend.sketch(X)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            backend.similarity_matrix(X)
        with pytest.raises(ValueError):
            S.values[0, 0] = 1
    for a, b in zip(before, (X.data, X.indices, X.indptr)):
        np.testing.assert_array_equal(a, b)


# ----------------------------------------------------------------------------
# the projections
# ----------------------------------------------------------------------------

@pytest.mark.parametrize("k,s", [(32, 1), (32, 4), (30, 6), (16, 16)])
def test_sjlt_has_s_entries_of_plus_minus_one_over_root_s_per_column(k, s):
    S = sjlt_matrix(k, s, np.arange(200), 0)
    assert S.shape == (k, 200)
    assert np.array_equal(np.diff(S.indptr), np.full(200, s))
    np.testing.assert_allclose(np.abs(S.data), 1 / math.sqrt(s))
    blocks = S.indices.reshape(200, s) // (k // s)
    assert np.array_equal(blocks, np.broadcast_to(np.arange(s), (200, s)))  # one per block
    signs = np.sign(S.data)
    assert 0.4 < np.mean(signs > 0) < 0.6


def test_sjlt_sketch_is_the_sparse_product_plus_noise():
    X = sp.random(10, 40, density=0.3, format="csr", random_state=2)
    sjlt = PrivateSJLT(16, 4, epsilon=1e6, rating_bound=1.0,
                       random_state=0)        # negligible noise
    S = sjlt.sketch(X)
    np.testing.assert_allclose(S.values, X.toarray() @ sjlt.projection_.toarray().T,
                               atol=1e-3)
    jl = GaussianJL(16, epsilon=1e9, delta=0.1, rating_bound=1.0, random_state=0)  # σ ≈ 6e-5
    np.testing.assert_allclose(jl.sketch(X).values, X.toarray() @ jl.projection_.T, atol=1e-3)


def _pair_vectors(R, d=24):
    rng = np.random.default_rng(5)
    x, y = np.zeros(d), np.zeros(d)
    x[:10], y[6:16] = rng.integers(1, 6, 10), rng.integers(1, 6, 10)
    X = sp.block_diag([sp.csr_matrix(np.vstack([x, y]))] * R, format="csr")
    return x, y, X


@pytest.mark.parametrize("backend", [
    PrivateSJLT(32, 4, epsilon=2.0, rating_bound=5.0, random_state=11),
    PrivateSJLT(64, 1, epsilon=6.0, rating_bound=5.0, random_state=12),
    PrivateSJLT(16, 8, epsilon=8.0, rating_bound=1.0, random_state=13),
    GaussianJL(32, epsilon=2.0, delta=1e-4, rating_bound=5.0, random_state=14),
], ids=lambda b: f"{b.name}-{getattr(b, 's', '')}")
def test_projection_distance_estimates_are_unbiased_with_the_stated_variance(backend):
    R = 3000
    x, y, X = _pair_vectors(R)
    z = x - y
    a, b = _pairs(backend, X)          # each pair on its own columns: fresh matrix per pair
    D = backend.squared_distances_paired(a, b)
    var = D.var(ddof=1)
    m4 = np.mean((D - D.mean()) ** 4)
    se_var = math.sqrt((m4 - var**2) / R)
    formula = backend.distance_variance(z)
    assert abs(D.mean() - z @ z) < 4.0 * math.sqrt(var / R)
    assert abs(var - formula) < 4.0 * se_var, (var, formula, se_var)
    norms = backend.squared_norms(a)
    assert abs(norms.mean() - x @ x) < 4.0 * norms.std() / math.sqrt(R)


def test_variance_formulas_by_hand():
    z = np.array([3.0, -1.0, 0.0, 2.0])                       # ‖z‖² = 14, ‖z‖₄⁴ = 98
    assert sjlt_distance_variance(z, 8, 0.5) == pytest.approx(
        2 / 8 * (196 - 98) + 16 * 0.25 * 14 + 56 * 8 * 0.0625)
    assert gaussian_jl_distance_variance(z, 8, 0.5) == pytest.approx(
        2 / 8 * 196 + 8 * 0.25 * 14 + 8 * 8 * 0.0625)
    assert sjlt_distance_variance(z, 8, 0.0) <= 2 * 14**2 / 8


def test_sjlt_scale_and_gaussian_sigma_follow_the_formulas():
    sjlt = PrivateSJLT(64, 4, epsilon=2.0, rating_bound=5.0)
    assert sjlt.scale() == pytest.approx(math.sqrt(4) * 5.0 / 2.0, rel=1e-5)
    assert laplace_epsilon(sjlt.scale(), 2 * 5.0, "lattice", 4) <= 2.0
    X = sp.random(3, 50, density=0.5, format="csr", random_state=0)
    for calibration in ("kenthapadi", "analytic"):
        jl = GaussianJL(64, epsilon=1.5, delta=1e-5, rating_bound=4.0, random_state=1,
                        calibration=calibration)
        S = jl.sketch(X)
        w2 = 4.0 * np.sqrt((jl.projection_**2).sum(axis=0)).max()
        expected = (w2 / 1.5 * math.sqrt(2 * (math.log(1 / 2e-5) + 1.5))
                    if calibration == "kenthapadi" else gaussian_sigma(1.5, 1e-5, w2))
        assert S.params["sigma"] == pytest.approx(expected)
        assert gaussian_delta(S.params["sigma"], w2, 1.5) <= 1e-5


@pytest.mark.parametrize("eps", [0.1, 1.0, 4.0, 16.0])
@pytest.mark.parametrize("delta", [0.3, 1e-3, 1e-8])
def test_kenthapadi_sigma_is_a_valid_gaussian_calibration(eps, delta):
    assert gaussian_delta(kenthapadi_sigma(eps, delta, 2.0), 2.0, eps) <= delta


def test_cosine_estimates_track_the_truth_and_stay_in_range(small_ratings):
    R = small_ratings
    sjlt = PrivateSJLT(1024, 4, epsilon=1e4, rating_bound=5.0,
                       random_state=0)      # nearly noiseless
    sims = sjlt.similarity_matrix(R)
    dense = R.toarray()
    norms = np.linalg.norm(dense, axis=1)
    truth = dense @ dense.T / np.outer(norms, norms)
    off = ~np.eye(len(truth), dtype=bool)
    assert np.abs(sims - truth)[off].mean() < 0.05          # JL error ~ 1/sqrt(k)
    noisy = PrivateSJLT(64, 4, epsilon=0.5, rating_bound=5.0, random_state=0).similarity_matrix(R)
    assert np.isfinite(noisy).all() and noisy.min() >= -1 and noisy.max() <= 1


# ----------------------------------------------------------------------------
# τ
# ----------------------------------------------------------------------------

@pytest.mark.parametrize("cls", [RRMinHash, NoisyMinHash])
def test_sets_below_tau_raise_naming_tau(cls):
    X = random_sets([30, 12, 40, 0])
    with pytest.raises(ValueError, match=r"2 user\(s\).*tau=20"):
        cls(16, 2, epsilon=4.0, delta=1e-4, tau=20).sketch(X)


@pytest.mark.parametrize("cls", [RRMinHash, NoisyMinHash])
def test_sets_below_tau_are_excluded_with_a_warning(cls):
    X = random_sets([30, 12, 40, 0, 25])
    backend = cls(16, 2, epsilon=4.0, delta=1e-4, tau=20,
                  random_state=np.random.default_rng(0), small_users="exclude")
    with pytest.warns(UserWarning, match=r"2 user\(s\).*tau=20"):
        S = backend.sketch(X)
    assert S.valid.tolist() == [True, False, True, False, True]
    sims = backend.estimate(S)
    assert (sims[[1, 3]][:, [0, 2, 4]] == 0).all() and (sims[:, [1, 3]][[0, 2, 4]] == 0).all()
    assert np.array_equal(np.diag(sims), np.ones(5))
    entry = backend.privacy()
    assert entry.unit is Unit.SET_ITEM and entry.status is Status.HOLDS
    assert entry.note.startswith("1 item(s) of one user's set, sets of at least τ = 20 items")


def test_tau_from_the_data_warns_and_voids_the_guarantee():
    rr = RRMinHash(16, 2, epsilon=4.0, delta=1e-4, random_state=0)
    with pytest.raises(ValueError, match="tau is not known yet"):
        rr.epsilon_prime()
    with pytest.warns(PrivacyLeakWarning, match="τ = 12 from the data"):
        S = rr.sketch(random_sets([30, 12, 40]))
    assert rr.tau_ == 12 and S.params["tau"] == 12
    entry = rr.privacy()
    assert entry.status is Status.VOID and "τ was read from the data" in entry.note
    assert (entry.component, entry.unit, entry.applies_to) == ("similarity", Unit.SET_ITEM,
                                                               "user")
    assert entry.mechanism == "randomized_response (RRMinHash)"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        with pytest.raises(ValueError, match="tau"):
            RRMinHash(16, 2, epsilon=4.0, delta=1e-4).sketch(random_sets([30, 0,
                                                                    40]))   # empty set: same rule
        with pytest.raises(ValueError, match="every set is empty"):
            RRMinHash(16, 2, epsilon=4.0, delta=1e-4).sketch(random_sets([0, 0]))
        with pytest.warns(UserWarning, match=r"1 user\(s\)"):
            RRMinHash(16, 2, epsilon=4.0, delta=1e-4, small_users="exclude").sketch(
                random_sets([30, 0, 40]))


# ----------------------------------------------------------------------------
# properties (hypothesis)
# ----------------------------------------------------------------------------

def _backend_of(options: dict, seed: int):
    """The backend of ``options`` (the projections with a public rating bound of 5)."""
    options = dict(options)
    if options["name"] in ("sjlt", "gaussian_jl"):
        options.setdefault("rating_bound", 5.0)
    return sketch_backend(options, random_state=seed)


@fuzz(150)
@given(SKETCH_OPTIONS, st.integers(1, 8), st.integers(1, 10), st.integers(0, 2**32), st.data())
def test_sketch_backends_on_any_small_matrix(options, n_users, n_items, seed, data):
    rng = np.random.default_rng(seed)
    dense = np.where(rng.random((n_users, n_items)) < data.draw(st.floats(0.0, 1.0)),
                     rng.integers(1, 6, (n_users, n_items)), 0).astype(np.float64)
    X = sp.csr_matrix(dense)
    before = X.copy()
    backend = _backend_of(options, data.draw(st.integers(0, 99)))
    sizes = np.diff(X.indptr)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            sketch = backend.sketch(X)
        except ValueError as error:  # a set below tau (empty sets included)
            assert "tau" in str(error)
            assert options["name"] in ("rr_minhash", "noisy_minhash")
            positive = sizes[sizes > 0]
            tau = options.get("tau", positive.min() if positive.size else None)
            assert tau is None or (options.get("small_users", "raise") == "raise"
                                   and sizes.min() < tau)
            return
    assert sketch.values.shape[0] == n_users and len(sketch) == n_users
    assert not sketch.values.flags.writeable
    sims = backend.estimate(sketch)
    assert sims.shape == (n_users, n_users)
    low = -1.0 if backend.similarity == "cosine" else 0.0
    assert np.isfinite(sims).all() and (sims >= low).all() and (sims <= 1.0).all()
    np.testing.assert_array_equal(np.diag(sims), 1.0)
    invalid = ~sketch.valid
    off_diagonal = ~np.eye(n_users, dtype=bool)
    assert (sims[invalid][off_diagonal[invalid]] == 0).all()  # no sketch: similarity 0
    if options["name"] in ("rr_minhash", "noisy_minhash", "minhash"):
        assert not sketch.valid[sizes == 0].any()  # an empty set releases nothing
        if options["name"] != "minhash" and sketch.valid.any():
            tau = options.get("tau", sizes[sizes > 0].min())
            assert (sizes[sketch.valid] >= tau).all()
            if invalid.any():
                assert any(issubclass(w.category, UserWarning) for w in caught)
    # a repeated int-seeded release is the same release; the input is untouched
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the same exclusions, warned above
        np.testing.assert_array_equal(backend.sketch(X).values, sketch.values)
        if options.get("threshold") is None:  # (a threshold makes other, smaller sets)
            np.testing.assert_array_equal(backend.similarity_matrix(X),
                                          backend.estimate(sketch))
    assert X.shape == before.shape and abs(X - before).nnz == 0
    # one release costs the ε asked for (to rounding: the maps invert the calibrations)
    privacy = backend.privacy()
    if options["name"] == "minhash":
        assert (privacy.epsilon, privacy.delta) == (math.inf, 0.0)  # no protection
    else:
        assert privacy.epsilon == pytest.approx(options["epsilon"], rel=1e-12)
        if options["name"] == "gaussian_jl":  # exact δ(ε) of the σ used: at most the δ asked
            assert 0.0 <= privacy.delta <= options["delta"]
        else:
            assert privacy.delta == options.get("delta", 0.0)


@pytest.mark.parametrize("name", ["rr_minhash", "noisy_minhash", "minhash"])
def test_minhash_sketches_of_empty_sets(name):
    X = sp.csr_matrix((3, 5))
    options = {"name": name, "width": 8, "B": 2}
    if name != "minhash":
        options.update(epsilon=1.0, delta=1e-3)
        raises_naming(lambda: _backend_of(options, 0).sketch(X), "tau")
        options.update(tau=2, small_users="exclude")
    backend = _backend_of(options, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        sketch = backend.sketch(X)
    assert not sketch.valid.any()
    np.testing.assert_array_equal(backend.estimate(sketch), np.eye(3))


@pytest.mark.parametrize("options", [
    {"name": "minhash", "width": 32, "B": 4},
    {"name": "rr_minhash", "width": 32, "B": 4, "epsilon": 4.0, "delta": 1e-4, "tau": 2},
    {"name": "noisy_minhash", "width": 32, "B": 4, "epsilon": 4.0, "delta": 1e-4, "tau": 2},
    {"name": "sjlt", "width": 32, "s": 4, "epsilon": 2.0, "rating_bound": 5.0},
    {"name": "gaussian_jl", "width": 32, "epsilon": 2.0, "delta": 1e-5, "rating_bound": 5.0},
], ids=lambda o: o["name"])
def test_estimate_rows_is_the_rows_of_estimate(options):
    """``estimate_rows(S, rows)`` equals ``estimate(S[rows], S)`` bit for bit, in any
    block of rows and again after the sketches change (the one-hot encoding MinHash
    prepares is that of the sketches asked)."""
    backend = sketch_backend(options, random_state=0)
    for seed in (1, 2):                       # one backend, two different releases
        ratings = sp.random(60, 80, density=0.2, format="csr", random_state=seed)
        ratings.data = np.ceil(ratings.data * 5)
        S = backend.release(ratings)
        for rows in (np.arange(60), np.array([7, 3, 59, 3]), np.array([], dtype=int)):
            np.testing.assert_array_equal(backend.estimate_rows(S, rows),
                                          backend.estimate(S[rows], S))


def test_minhash_pickles_without_its_prepared_encoding():
    import pickle

    ratings = sp.random(30, 40, density=0.3, format="csr", random_state=0)
    backend = sketch_backend({"name": "minhash", "width": 16, "B": 4}, random_state=0)
    S = backend.release(ratings)
    expected = backend.estimate_rows(S, np.arange(5))
    copy = pickle.loads(pickle.dumps(backend))
    assert not hasattr(copy, "_one_hot_of") and hasattr(backend, "_one_hot_of")
    np.testing.assert_array_equal(copy.estimate_rows(S, np.arange(5)), expected)
