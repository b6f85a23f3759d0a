"""Distribution, privacy-map and validation tests of dprec.mechanisms.

Sampling tests use fixed seeds and tolerances of 5 standard errors (or a
chi-square p-value above 1e-3); each has a companion showing that the same
check rejects a wrong distribution.
"""

from __future__ import annotations

import math
import sys
import warnings
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, stats
from strategies import TailDraws, raises_naming

from dprec import mechanisms as M
from dprec.audit import lattice_resolution
from dprec.mechanisms.randomized_response import randomized_response_log_move
from dprec.similarity import sjlt
from dprec.utils._rng import keyed_uniform

N = 200_000


def _zero_noise_uniforms(shape) -> np.ndarray:
    """Uniforms for which the lattice sampler adds no noise (u ≥ P(|Z| ≥ 1))."""
    u = np.full(tuple(shape) + (3,), 0.5)
    u[..., 0] = 1.0 - 1e-12
    return u


# ---------------------------------------------------------------- Laplace: grid


@pytest.mark.parametrize("scale", [1.0, 0.37, 1e-3, 123.4])
def test_lattice_outputs_of_0_and_1_share_one_grid(scale):
    y0 = M.laplace(np.zeros(50_000), scale, 0)
    y1 = M.laplace(np.ones(50_000), scale, 1)
    resolution = lattice_resolution(np.concatenate([y0, y1]))
    assert resolution >= 2.0**-45
    assert resolution >= M.laplace_grid(scale)


def test_numpy_sampler_outputs_are_not_on_a_common_grid():
    y0 = M.laplace(np.zeros(50_000), 1.0, 0, sampler="numpy")
    y1 = M.laplace(np.ones(50_000), 1.0, 1, sampler="numpy")
    assert lattice_resolution(np.concatenate([y0, y1])) < 2.0**-45
    # the resolution depends on the input: the low bits carry it (Mironov 2012)
    assert lattice_resolution(y0) < 2.0**-60 < lattice_resolution(y1[np.abs(y1) > 0.5])


def test_laplace_grid_is_largest_power_of_two_below_scale_over_2_20():
    for scale in [1.0, 1.5, 0.999, 3e-7, 2.0**40]:
        grid = M.laplace_grid(scale)
        assert math.frexp(grid)[0] == 0.5                     # a power of two
        assert grid <= scale * 2.0**-M.LATTICE_BITS < 2 * grid
    assert M.laplace_grid(1.0) == 2.0**-20


# ----------------------------------------------------------- Laplace: moments


@pytest.mark.parametrize("x, scale", [(0.0, 1.0), (2.5, 0.37), (-1e6, 3.0)])
def test_lattice_laplace_mean_and_variance(x, scale):
    y = M.laplace(np.full(N, x), scale, 7)
    se_mean = math.sqrt(2.0) * scale / math.sqrt(N)
    se_var = math.sqrt(20.0 / N) * scale**2           # Var(X²) = 24b⁴ − 4b⁴
    assert abs(y.mean() - x) < 5 * se_mean
    assert abs(y.var() - 2 * scale**2) < 5 * se_var


def test_lattice_laplace_rejects_a_wrong_scale():
    # the variance check above has power: scale × 1.05 is rejected
    y = M.laplace(np.zeros(N), 1.05, 7)
    assert abs(y.var() - 2.0) > 5 * math.sqrt(20.0 / N)


@pytest.mark.parametrize("t", [0.7, 1.5, 3.0])
def test_discrete_laplace_pmf_is_exact(t):
    u = np.random.default_rng(11).random((N, 3))
    z = M.discrete_laplace_from_uniform(u, t)
    assert np.array_equal(z, np.round(z))
    q = math.exp(-1.0 / t)
    top = int(6 * t) + 1
    support = np.arange(-top, top + 1)
    pmf = (1 - q) / (1 + q) * q ** np.abs(support)
    tail = 1.0 - pmf.sum()                     # |z| > top, both sides pooled
    observed = np.append([(z == v).sum() for v in support], (np.abs(z) > top).sum())
    expected = N * np.append(pmf, tail)
    assert stats.chisquare(observed, expected).pvalue > 1e-3
    # power: the same test rejects t × 1.1
    q_wrong = math.exp(-1.0 / (1.1 * t))
    pmf_wrong = (1 - q_wrong) / (1 + q_wrong) * q_wrong ** np.abs(support)
    expected_wrong = N * np.append(pmf_wrong, 1.0 - pmf_wrong.sum())
    assert stats.chisquare(observed, expected_wrong).pvalue < 1e-6


def test_discrete_laplace_resolves_the_far_tail():
    # the first 53-bit cell of u0 is refined by u1: |Z| keeps following the exact
    # quantile function |Z| = floor(log(u (1 + q) / 2) / log q) out to ~70 scales
    t = 1.0
    q = math.exp(-1.0 / t)
    u_fine = np.logspace(-15, -0.01, 60)
    u = np.column_stack([np.full(60, 2.0**-54), u_fine, np.full(60, 0.25)])
    z = M.discrete_laplace_from_uniform(u, t)
    exact = np.floor(np.log(u_fine * 2.0**-53 * (1 + q) / 2) / math.log(q))
    assert np.all(np.abs(np.abs(z) - exact) <= 1)
    assert len(np.unique(z)) > 30 and np.abs(z).max() > 65


def test_laplace_from_keyed_uniforms_is_one_query_one_draw():
    keys = np.arange(N)
    u = keyed_uniform(12345, keys, 3).reshape(N, 3)
    y = M.laplace_from_uniform(np.zeros(N), 1.0, u)
    assert abs(y.mean()) < 5 * math.sqrt(2.0 / N)
    assert abs(y.var() - 2.0) < 5 * math.sqrt(20.0 / N)
    # the same query answered in another batch gets the same noise
    rows = np.array([5, 17, 170_000])
    again = M.laplace_from_uniform(np.zeros(3), 1.0, keyed_uniform(12345, keys[rows], 3))
    assert np.array_equal(again, y[rows])


# ------------------------------------------------- Laplace: lattice rounding


def test_lattice_rounds_half_up_exactly():
    scale = 2.0**20                                      # grid 1.0
    assert M.laplace_grid(scale) == 1.0
    x = np.array([0.5, 1.5, -0.5, 2.4999999999, 0.49999999999999994, -2.5, 2.0**53 - 1])
    y = M.laplace_from_uniform(x, scale, _zero_noise_uniforms(x.shape))
    assert y.tolist() == [1.0, 2.0, 0.0, 2.0, 0.0, -2.0, 2.0**53 - 1]
    # the default sampler's rounding (`laplace`, `laplace_from_log_uniform`): ln U = 0
    # draws no noise (|Z| >= 1 needs -ln U >= -ln P(|Z| >= 1) > 0)
    y = M.laplace_from_log_uniform(x, scale, np.zeros(x.shape), np.full(x.shape + (2,), 0.5))
    assert y.tolist() == [1.0, 2.0, 0.0, 2.0, 0.0, -2.0, 2.0**53 - 1]


@settings(max_examples=300, deadline=None)
@given(a=st.floats(-1e9, 1e9), b=st.floats(-1e9, 1e9))
def test_lattice_rounding_moves_at_most_ceil_of_the_distance(a, b):
    # the property behind laplace_epsilon: |R(a) - R(b)| <= ceil(|a - b| / grid)
    y = M.laplace_from_uniform([a, b], 2.0**20, _zero_noise_uniforms((2,)))
    assert abs(y[0] - y[1]) <= math.ceil(abs(Fraction(a) - Fraction(b)))


# ------------------------------------------------------ Laplace: privacy map


def test_laplace_epsilon_lattice():
    assert M.laplace_epsilon(1.0, 1.0) == 1.0
    assert M.laplace_epsilon(0.5, 1.0) == 2.0
    eps = M.laplace_epsilon(1.0, 0.3)                   # 0.3 is not on the grid 2**-20
    assert 0.3 < eps <= 0.3 + 2.0**-20
    assert M.laplace_epsilon(1.0, 1.0, max_changed=4) == 1.0 + 3 * 2.0**-20
    assert M.laplace_epsilon(1.0, 0.3, sampler="numpy") == 0.3


@pytest.mark.parametrize("epsilon, sensitivity, changed", [(1.0, 1.0, 1), (0.7, 0.3, 1),
                                                           (2.0, 5.5, 3), (1e-4, 1.0, 1)])
def test_laplace_scale_inverts_laplace_epsilon(epsilon, sensitivity, changed):
    scale = M.laplace_scale(epsilon, sensitivity, max_changed=changed)
    achieved = M.laplace_epsilon(scale, sensitivity, max_changed=changed)
    assert achieved <= epsilon
    assert achieved >= epsilon * (1 - 1e-5)
    assert scale >= sensitivity / epsilon


@pytest.mark.parametrize("epsilon, sensitivity", [(1e300, 1.0), (1e300, 2.0**-300),
                                                  (1.0, 5e-324)])
def test_laplace_scale_floors_keep_the_grid_a_float(epsilon, sensitivity):
    # a huge ε is spent only down to the floors Δ₁ · 2**-900 and 2**-1000; below
    # them the lattice's grid would leave the floats and the sampler refuse
    scale = M.laplace_scale(epsilon, sensitivity)
    assert scale == max(math.ldexp(sensitivity, -900), 2.0**-1000)
    assert M.laplace_epsilon(scale, sensitivity) <= epsilon
    noisy = M.laplace(np.zeros(8), scale, np.random.RandomState(0))
    assert np.isfinite(noisy).all()


def test_laplace_scale_refuses_epsilon_below_the_grid():
    # the lattice's rounding spends one grid step, 2**-21 ε-units, per coordinate
    with pytest.raises(ValueError, match=r"^epsilon = 1e-07 is too small for the lattice .*"
                       r"rounding to the lattice grid alone spends about 10 \* 2\*\*-21 .*"
                       r"at least about 9\.54e-06$"):
        M.laplace_scale(1e-7, 1.0, max_changed=10)
    # a scale past 2**990: the lattice's grid, or numpy's floats, would overflow
    for args, minimum in [((1e-300, 1.0, "numpy"), "9.56e-299"), ((1.0, 1e300), "95.6"),
                          ((1e-3, 1e297, "numpy"), "0.0956")]:
        with pytest.raises(ValueError, match=rf"would pass 2\*\*990; epsilon must be at "
                                             rf"least about {minimum}$"):
            M.laplace_scale(*args)
    with pytest.raises(ValueError, match=r"^item_epsilon must be > 0"):   # the caller's name
        M.laplace_scale(-1.0, 1.0, name="item_epsilon")


# ---------------------------------------------------------- Laplace: OpenDP


def test_opendp_sampler_on_the_same_grid_and_map():
    dp = pytest.importorskip("opendp.prelude")
    y0 = M.laplace(np.zeros(20_000), 1.0, None, sampler="opendp")
    y1 = M.laplace(np.ones(20_000), 1.0, None, sampler="opendp")
    assert lattice_resolution(np.concatenate([y0, y1])) >= M.laplace_grid(1.0)
    assert abs(y0.mean()) < 5 * math.sqrt(2.0 / 20_000)
    assert abs(y0.var() - 2.0) < 5 * math.sqrt(20.0 / 20_000)
    dp.enable_features("contrib")
    try:
        atom = dp.atom_domain(T=float, nan=False)
    except TypeError:                       # OpenDP 0.10 - 0.12
        atom = dp.atom_domain(T=float)
    space = atom, dp.absolute_distance(T=float)
    for scale, sensitivity in [(1.0, 1.0), (0.37, 0.3)]:
        k = math.frexp(M.laplace_grid(scale))[1] - 1
        own = dp.m.make_laplace(*space, scale=scale, k=k).map(sensitivity)
        assert M.laplace_epsilon(scale, sensitivity, sampler="opendp") == pytest.approx(own)


def test_opendp_missing_gives_a_clear_import_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "opendp", None)
    monkeypatch.setitem(sys.modules, "opendp.prelude", None)
    with pytest.raises(ImportError, match=r"pip install 'dprec\[opendp\]'"):
        M.laplace([0.0], 1.0, 0, sampler="opendp")


# ------------------------------------------- Laplace: API, reproducibility


def test_laplace_reproducible_and_random_state_kinds():
    x = np.arange(10.0)
    assert np.array_equal(M.laplace(x, 1.0, 3), M.laplace(x, 1.0, 3))
    assert not np.array_equal(M.laplace(x, 1.0, 3), M.laplace(x, 1.0, 4))
    rng = np.random.default_rng(3)
    assert not np.array_equal(M.laplace(x, 1.0, rng), M.laplace(x, 1.0, rng))
    assert M.laplace(x, 1.0, np.random.RandomState(0)).shape == (10,)
    assert M.laplace(x, 1.0, None).shape == (10,)


def test_laplace_shapes_and_no_mutation():
    x = np.arange(12.0).reshape(3, 4)
    x.setflags(write=False)
    for sampler in ("lattice", "numpy"):                 # read-only input: never written to
        y = M.laplace(x, 1.0, 0, sampler=sampler)
        assert y.shape == (3, 4) and y.dtype == np.float64
    assert M.laplace(1.5, 1.0, 0).shape == ()
    assert M.laplace(np.array([], dtype=float), 1.0, 0).shape == (0,)
    assert M.laplace([1, 2, 3], 1.0, 0).dtype == np.float64      # integers accepted
    u = _zero_noise_uniforms((3, 4))
    u_before = u.copy()
    M.laplace_from_uniform(x, 1.0, u)
    assert np.array_equal(u, u_before)
    big = M.laplace(np.array([-3e300, 3e300]), 1e300, 0)
    assert np.isfinite(big).all()


@pytest.mark.parametrize("scale, error", [(0.0, ValueError), (-1.0, ValueError),
                                          (math.nan, ValueError), (math.inf, ValueError),
                                          ("1", TypeError), (None, TypeError),
                                          (True, TypeError)])
def test_laplace_rejects_bad_scale(scale, error):
    with pytest.raises(error, match="scale"):
        M.laplace([0.0], scale, 0)
    with pytest.raises(error, match="scale"):
        M.laplace_epsilon(scale, 1.0)


def test_laplace_rejects_bad_arguments():
    with pytest.raises(ValueError, match="values"):
        M.laplace([0.0, math.nan], 1.0, 0)
    with pytest.raises(ValueError, match="values"):
        M.laplace([math.inf], 1.0, 0)
    with pytest.raises(TypeError, match="values"):
        M.laplace(["a"], 1.0, 0)
    with pytest.raises(TypeError, match="values"):
        M.laplace([True], 1.0, 0)
    with pytest.raises(ValueError, match="sampler"):
        M.laplace([0.0], 1.0, 0, sampler="float")
    with pytest.raises(TypeError, match="random_state"):
        M.laplace([0.0], 1.0, "seed")
    with pytest.raises(ValueError, match="too large"):
        M.laplace([1e308], 1.0, 0)
    with pytest.raises(ValueError, match="sensitivity"):
        M.laplace_epsilon(1.0, 0.0)
    with pytest.raises(ValueError, match="max_changed"):
        M.laplace_epsilon(1.0, 1.0, max_changed=0)
    with pytest.raises(ValueError, match="uniforms"):
        M.laplace_from_uniform([0.0], 1.0, np.full((1, 2), 0.5))
    with pytest.raises(ValueError, match="uniforms"):
        M.laplace_from_uniform([0.0], 1.0, np.array([[0.5, 0.0, 0.5]]))
    with pytest.raises(ValueError, match="uniforms"):
        M.discrete_laplace_from_uniform(np.array([[0.5, 1.0, 0.5]]), 1.0)
    with pytest.raises(ValueError, match="t"):
        M.discrete_laplace_from_uniform(np.full((1, 3), 0.5), 0.0)


# ------------------------------------------------------------------ Gaussian


def test_gaussian_mean_and_variance():
    sigma = 1.7
    y = M.gaussian(np.full(N, 3.0), sigma, 5)
    assert abs(y.mean() - 3.0) < 5 * sigma / math.sqrt(N)
    assert abs(y.var() - sigma**2) < 5 * math.sqrt(2.0 / N) * sigma**2
    assert abs(stats.kurtosis(y)) < 5 * math.sqrt(24.0 / N)          # Gaussian, not Laplace


def test_gaussian_from_keyed_uniforms():
    u = keyed_uniform(99, np.arange(N), 2).reshape(N, 2)
    y = M.gaussian_from_uniform(np.zeros(N), 2.0, u)
    assert abs(y.mean()) < 5 * 2.0 / math.sqrt(N)
    assert abs(y.var() - 4.0) < 5 * math.sqrt(2.0 / N) * 4.0
    assert stats.kstest(y / 2.0, "norm").pvalue > 1e-3
    assert stats.kstest(y / 2.2, "norm").pvalue < 1e-6            # power


@pytest.mark.parametrize("sigma, eps", [(1.0, 0.5), (3.0, 1.0), (0.5, 2.0)])
def test_gaussian_delta_matches_numerical_integral(sigma, eps):
    # δ(ε) = ∫ (p_0(y) − e^ε p_1(y))_+ dy for N(0, σ²) against N(1, σ²)
    def excess(y):
        return max(0.0, stats.norm.pdf(y, 0, sigma) - math.exp(eps) * stats.norm.pdf(y, 1, sigma))

    exact, _ = integrate.quad(excess, -40 * sigma, 40 * sigma, points=[0.0, 0.5], limit=400)
    assert M.gaussian_delta(sigma, 1.0, eps) == pytest.approx(exact, rel=1e-6, abs=1e-12)


def test_gaussian_calibration_round_trip_and_classic_bound():
    for eps, delta in [(0.5, 1e-5), (1.0, 1e-3), (4.0, 1e-6)]:
        sigma = M.gaussian_sigma(eps, delta, 2.0)
        assert M.gaussian_delta(sigma, 2.0, eps) <= delta
        assert M.gaussian_delta(sigma * (1 - 1e-6), 2.0, eps) > delta
        assert M.gaussian_epsilon(sigma, 2.0, delta) == pytest.approx(eps, rel=1e-6)
        if eps < 1:   # Dwork & Roth Thm A.1 is valid for ε < 1 and looser
            assert sigma <= 2.0 * math.sqrt(2 * math.log(1.25 / delta)) / eps
    assert M.gaussian_rho(2.0, 1.0) == 0.125
    assert M.gaussian_epsilon(1e6, 1.0, 0.5) == 0.0


def test_gaussian_rejects_bad_arguments():
    for sigma in (0.0, -1.0, math.nan, math.inf):
        with pytest.raises(ValueError, match="sigma"):
            M.gaussian([0.0], sigma, 0)
    with pytest.raises(ValueError, match="values"):
        M.gaussian([math.nan], 1.0, 0)
    with pytest.raises(ValueError, match="delta"):
        M.gaussian_sigma(1.0, 0.0, 1.0)
    with pytest.raises(ValueError, match="epsilon"):
        M.gaussian_sigma(0.0, 1e-5, 1.0)
    x = np.zeros(4)
    x.setflags(write=False)
    assert np.array_equal(M.gaussian(x, 1.0, 1), M.gaussian(x, 1.0, 1))


# ---------------------------------------------------- randomised response


@pytest.mark.parametrize("n_values, eps", [(2, 0.5), (4, 1.0), (17, 3.0)])
def test_randomized_response_keep_probability_and_uniform_flips(n_values, eps):
    rng = np.random.default_rng(2)
    x = rng.integers(0, n_values, N)
    y = M.randomized_response(x, n_values, eps, 8)
    assert y.dtype == np.int64 and y.min() >= 0 and y.max() < n_values
    p = math.exp(eps) / (math.exp(eps) + n_values - 1)
    assert M.randomized_response_keep_probability(n_values, eps) == pytest.approx(p)
    kept = (y == x).mean()
    assert abs(kept - p) < 5 * math.sqrt(p * (1 - p) / N)
    if n_values > 2:
        offsets = ((y - x) % n_values)[y != x]
        counts = np.bincount(offsets, minlength=n_values)[1:]
        assert stats.chisquare(counts).pvalue > 1e-3


def test_randomized_response_check_has_power():
    x = np.zeros(N, dtype=int)
    y = M.randomized_response(x, 4, 1.2, 8)                 # declared 1.0 below
    p = M.randomized_response_keep_probability(4, 1.0)
    assert abs((y == x).mean() - p) > 5 * math.sqrt(p * (1 - p) / N)


def test_randomized_response_epsilon_map():
    for n_values, eps in [(2, 0.1), (4, 1.0), (1000, 5.0)]:
        p = M.randomized_response_keep_probability(n_values, eps)
        assert M.randomized_response_epsilon(n_values, p) == pytest.approx(eps)
    with pytest.raises(ValueError, match="keep_probability"):
        M.randomized_response_epsilon(4, 0.25)         # 1/n: no privacy loss, ε = 0
    # large ε: p is computed without overflow, and RR runs without FP warnings
    assert M.randomized_response_keep_probability(4, 800.0) == 1.0
    with np.errstate(all="raise"):
        x = np.arange(8) % 4
        assert np.array_equal(M.randomized_response(x, 4, 800.0, 0), x)
        assert M.randomized_response(x, 4, 30.0, 0).shape == (8,)


def test_randomized_response_from_keyed_uniforms():
    x = np.arange(1000) % 5
    u = keyed_uniform(7, np.arange(1000), 1)[:, 0]
    y = M.randomized_response_from_uniform(x, 5, 1.0, u)
    assert np.array_equal(y, M.randomized_response_from_uniform(x, 5, 1.0, u))
    p = M.randomized_response_keep_probability(5, 1.0)
    assert np.array_equal(y == x, u < p)


def test_randomized_response_rejects_bad_arguments():
    with pytest.raises(ValueError, match="n_values"):
        M.randomized_response([0], 1, 1.0, 0)
    with pytest.raises(TypeError, match="n_values"):
        M.randomized_response([0], 2.0, 1.0, 0)
    for eps in (0.0, -1.0, math.nan, math.inf):
        with pytest.raises(ValueError, match="epsilon"):
            M.randomized_response([0], 2, eps, 0)
    with pytest.raises(ValueError, match="values"):
        M.randomized_response([0, 4], 4, 1.0, 0)
    with pytest.raises(ValueError, match="values"):
        M.randomized_response([-1], 4, 1.0, 0)
    with pytest.raises(TypeError, match="values"):
        M.randomized_response([0.0, 1.0], 4, 1.0, 0)
    x = np.array([3, 1, 2])
    x.setflags(write=False)                            # read-only input: never written to
    assert M.randomized_response(x, 4, 0.1, 0).shape == (3,)


# ------------------------------------------------------------------ pinned samplers
def test_gaussian_from_uniform_is_box_muller_as_documented():
    """N = sqrt(-2 ln u0) cos(2π u1): u0 = e^{-1/2}, u1 = 1/8 give N = cos(π/4)."""
    u = np.array([[math.exp(-0.5), 0.125], [math.exp(-2.0), 0.5]])
    out = M.gaussian_from_uniform([1.0, -2.0], 3.0, u)
    np.testing.assert_allclose(out, [1.0 + 3.0 * math.cos(math.pi / 4), -2.0 - 3.0 * 2.0],
                               rtol=1e-14)


def test_laplace_noise_is_numpys_floating_point_laplace_times_the_scale():
    """laplace_noise(b, n, seed) is Generator.laplace(size=n) * b bit for bit (the ranking
    privatizer's published draws), per-value scales included; 0 gives no noise."""
    scale = np.array([0.0, 0.5, 2.0, 7.25] * 250)
    np.testing.assert_array_equal(M.laplace_noise(scale, 1000, 5),
                                  np.random.default_rng(5).laplace(size=1000) * scale)
    rng = np.random.default_rng(5)
    np.testing.assert_array_equal(M.laplace_noise(2.5, (40, 3), rng),
                                  np.random.default_rng(5).laplace(size=(40, 3)) * 2.5)
    assert not np.array_equal(M.laplace_noise(1.0, 5, rng), M.laplace_noise(1.0, 5, rng))
    assert (M.laplace_noise(scale, 1000, 1)[scale == 0.0] == 0.0).all()
    with pytest.raises(ValueError, match="scale"):
        M.laplace_noise(-1.0, 3, 0)
    with pytest.raises(ValueError, match="scale"):
        M.laplace_noise(np.ones(4), 3, 0)
    with pytest.raises(ValueError, match="scale"):
        M.laplace_noise(math.inf, 3, 0)


def test_kenthapadi_sigma_is_one_function_in_both_homes():
    assert sjlt.kenthapadi_sigma is M.kenthapadi_sigma
    assert "kenthapadi_sigma" in M.__all__ and "laplace_noise" in M.__all__


def test_seeded_laplace_draws_its_uniforms_in_the_documented_order():
    """laplace(x, b, seed) is laplace_from_log_uniform(x, b, ln U, u): ln U from the seeded
    generator's words first, then the two uniforms of each value."""
    n, scale = 1000, 2.5
    x = np.linspace(-3.0, 3.0, n)
    rng = np.random.default_rng(11)
    log_u = M.common.log_uniform(rng, n)
    u = np.maximum(rng.random((n, 2)), 2.0**-54)    # the value of u = 0 is never used
    np.testing.assert_array_equal(M.laplace(x, scale, 11),
                                  M.laplace_from_log_uniform(x, scale, log_u, u))
    numpy_out = M.laplace(x, scale, 11, sampler="numpy")
    np.testing.assert_array_equal(numpy_out, x + np.random.default_rng(11).laplace(0, scale, n))


def test_laplace_from_uniform_is_the_rounded_input_plus_discrete_laplace_steps():
    rng = np.random.default_rng(3)
    u = rng.random((500, 3))
    x = rng.normal(0.0, 10.0, 500)
    scale = 0.7
    grid = M.laplace_grid(scale)
    steps = M.discrete_laplace_from_uniform(u, scale / grid)
    np.testing.assert_array_equal(M.laplace_from_uniform(x, scale, u),
                                  grid * (np.floor(x / grid + 0.5) + steps))


def test_discrete_laplace_keeps_the_shape_of_the_draws():
    u = np.random.default_rng(0).random((2, 4, 3))
    out = M.discrete_laplace_from_uniform(u, 2.0)
    assert out.shape == (2, 4)
    np.testing.assert_array_equal(out.ravel(), M.discrete_laplace_from_uniform(
        u.reshape(-1, 3), 2.0))
    assert M.discrete_laplace_from_uniform(u[0, 0], 2.0).shape == ()      # one draw
    with pytest.raises(ValueError, match=r"uniforms must have shape \(\.\.\., 3\)"):
        M.discrete_laplace_from_uniform(np.full((4, 2), 0.5), 2.0)


def test_randomized_response_maps_uniforms_as_documented():
    """Keep iff u < p; else offset o = 1 + ⌊(u − p)/((1 − p)/(n − 1))⌋, output (x + o) mod n."""
    n, eps = 3, math.log(3.0)                          # p = 3/(3 + 2) = 0.6
    p = M.randomized_response_keep_probability(n, eps)
    assert p == pytest.approx(0.6)
    u = np.array([p, 0.59, p + 0.1, p + 0.3])          # u = p flips (P(keep) is exactly p)
    out = M.randomized_response_from_uniform(np.zeros(4, dtype=int), n, eps, u)
    assert out.tolist() == [1, 0, 1, 2]


def test_randomized_response_never_wraps_an_offset_back_to_the_input():
    """Near u = 1 the offset's floor reaches n − 1 in floating point (n = 2**20, ε = 20):
    it must be capped, else (x + n) mod n = x keeps the value it should replace."""
    n, eps = 2**20, 20.0
    u = 1.0 - np.arange(1, 200) * 2.0**-53
    out = M.randomized_response_from_uniform(np.full(len(u), 5), n, eps, u)
    assert (out != 5).all()


def test_randomized_response_offsets_are_exact_integers_at_the_largest_alphabet():
    """n = 2**53 (the largest allowed): (x + o) mod n in int64; in float64,
    2**53 − 1 + 2 would round to 2**53 and wrap to 0 instead of 1."""
    n, eps = 2**53, 1.0
    p = M.randomized_response_keep_probability(n, eps)
    u = np.full(3, p + 1.5 * math.exp(-eps) * p)         # offset o = 2
    out = M.randomized_response_from_uniform(np.array([n - 1, n - 2, 7]), n, eps, u)
    assert out.tolist() == [1, 0, 9]


@pytest.mark.parametrize("n_values", [2, 4, 16])
@pytest.mark.parametrize("epsilon", [40.0, 60.0, 700.0, 1e6, 1e18])
def test_randomized_response_realises_every_output_at_any_epsilon(epsilon, n_values):
    """Regression (#33, the class of finding 4): with one 53-bit uniform RR never moved once
    1 − p < 2^-53 (ε ≳ 36.7 + ln(n − 1)), so the other outputs had probability 0 and no
    pure-DP claim held.  Now ln U just below ln(1 − p) moves, to every other value, and
    just above it keeps."""
    log_move = randomized_response_log_move(n_values, epsilon)
    assert log_move == pytest.approx(math.log1p(-M.randomized_response_keep_probability(
        n_values, epsilon)) if epsilon < 30 else math.log(n_values - 1) - epsilon, rel=1e-12)
    x = np.array([0])
    seen = set()
    for offset in range(n_values - 1):
        u = np.array([(offset + 0.5) / (n_values - 1)])
        seen |= set(M.randomized_response_from_log_uniform(
            x, n_values, epsilon, np.array([log_move - 1e-3 * abs(log_move)]), u).tolist())
    assert seen == set(range(1, n_values))
    kept = M.randomized_response_from_log_uniform(x, n_values, epsilon,
                                                  np.array([log_move * (1 - 1e-9)]),
                                                  np.array([0.5]))
    assert kept.tolist() == [0]
    if epsilon <= 700:                # the public sampler draws ln U from its words
        w = math.exp(log_move) / 4    # ln U = ln w < ln(1 − p): a move, on its exact law
        moved = M.randomized_response(np.zeros(3, np.int64), n_values, epsilon,
                                      TailDraws(w, 0.5))
        assert (moved != 0).all()


def test_randomized_response_entries_at_large_epsilon_state_it_without_crashing():
    """Regression (#33): where p rounds to 1 (ε ≳ 37) the map from p failed (RRMinHash
    raised, LocalKNN's krr reported ε = ∞); the exact sampler spends ε there too."""
    from dprec import LocalKNN, datasets
    from dprec.similarity import RRMinHash

    entry = RRMinHash(16, 2, epsilon=1000.0, delta=1e-3, tau=3).privacy()
    assert math.isfinite(entry.epsilon) and entry.epsilon <= 1000.0 * (1 + 1e-12)
    trainset = datasets.synthetic(20, 15, 200, random_state=2).build_full_trainset()
    report = LocalKNN(epsilon=1000.0, k=2).fit(trainset).privacy_report()
    (krr,) = [e for e in report.entries if e.mechanism == "k-ary randomised response"]
    assert krr.epsilon == pytest.approx(450.0)   # its share of ε (0.9 after the item list)


def test_randomized_response_from_log_uniform_has_the_law_and_checks_its_arguments():
    n, eps, size = 5, 1.0, 200_000
    rng = np.random.default_rng(21)
    values = np.zeros(size, np.int64)
    before = values.copy()
    out = M.randomized_response_from_log_uniform(values, n, eps, M.common.log_uniform(
        rng, size), M.common.open_uniform(rng, size))
    np.testing.assert_array_equal(values, before)              # not modified
    p = M.randomized_response_keep_probability(n, eps)
    expected = np.array([p] + [(1 - p) / (n - 1)] * (n - 1)) * size
    assert stats.chisquare(np.bincount(out, minlength=n), expected).pvalue > 1e-4
    call = M.randomized_response_from_log_uniform
    raises_naming(lambda: call(values[:2], n, eps, np.zeros(3), np.full(2, 0.5)),
                  "log_uniforms")
    raises_naming(lambda: call(values[:2], n, eps, np.ones(2), np.full(2, 0.5)),
                  "log_uniforms")
    raises_naming(lambda: call(values[:2], n, eps, np.zeros(2), np.ones(2)), "uniforms")


def test_overflow_is_one_clear_error_without_runtime_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="too large"):
            M.laplace([1e308], 1e-300, 0)


def test_seeded_samplers_are_reproducible():
    scores = np.random.default_rng(0).random((20, 6))
    a = M.exponential_top_k(scores, 3, 1.0, 1.0, 7)
    np.testing.assert_array_equal(a, M.exponential_top_k(scores, 3, 1.0, 1.0, 7))
    assert not np.array_equal(a, M.exponential_top_k(scores, 3, 1.0, 1.0, 8))
    codes = np.arange(500) % 4
    r = M.randomized_response(codes, 4, 0.5, 7)
    np.testing.assert_array_equal(r, M.randomized_response(codes, 4, 0.5, 7))
    assert not np.array_equal(r, M.randomized_response(codes, 4, 0.5, 8))


def test_gumbel_top_k_respects_the_mask_and_returns_sorted_int_positions():
    rng = np.random.default_rng(1)
    n_rows, width, k = 2000, 50, 5
    scores = rng.normal(size=(n_rows, width))
    u = rng.random((n_rows, width))
    got = M.gumbel_top_k_from_uniform(scores, k, 4.0, 1.0, u)
    keys = scores * 4.0 / (2 * k) - np.log(-np.log(u))
    np.testing.assert_array_equal(got, np.argsort(-keys, axis=1)[:, :k])
    assert got.dtype == np.int64
    mask = np.ones((n_rows, width), bool)
    mask[:, np.argmax(scores.mean(axis=0))] = False
    masked = M.gumbel_top_k_from_uniform(scores, k, 4.0, 1.0, u, mask=mask)
    assert not np.isin(masked, np.flatnonzero(~mask[0])).any()
    everything = M.gumbel_top_k_from_uniform(scores[0], width, 4.0, 1.0, u[0])   # 1-D, k = n
    assert everything.dtype == np.int64 and sorted(everything.tolist()) == list(range(width))


def test_too_few_valid_candidates_names_the_row():
    mask = np.array([[True, True, True], [True, True, False], [True, False, False]])
    with pytest.raises(ValueError, match=r"k=2 exceeds the number of valid candidates "
                                         r"\(1 in row 2\)"):
        M.gumbel_top_k_from_uniform(np.zeros((3, 3)), 2, 1.0, 1.0, np.full((3, 3), 0.5),
                                    mask=mask)


def test_default_arguments():
    assert M.exponential_coefficient(3.0, 0.5) == 3.0
    assert M.laplace_scale(0.5, 1.3) == M.laplace_scale(0.5, 1.3, "lattice", max_changed=1)
    assert M.laplace_scale(1.0, 1.0) == 1.0            # exactly ε at scale 1: not beyond it


def test_gaussian_calibration_reaches_its_loops():
    """σ well below Δ/e (large ε and δ) and far above Δ·e (small ε): both bracket searches."""
    for eps, delta, sens in [(10.0, 0.2, 1.0), (0.05, 1e-8, 1.0)]:
        sigma = M.gaussian_sigma(eps, delta, sens)
        assert M.gaussian_delta(sigma, sens, eps) <= delta
        assert M.gaussian_delta(sigma * 0.999, sens, eps) > delta
    sigma, sens = 2.0, 1.0
    delta0 = M.gaussian_delta(sigma, sens, 0.0)
    assert M.gaussian_epsilon(sigma, sens, delta0) == 0.0


def test_opendp_sampler_shapes_and_features():
    dp = pytest.importorskip("opendp.prelude")
    out = M.laplace(np.zeros((2, 3)), 1.0, None, sampler="opendp")
    assert out.shape == (2, 3) and out.dtype == np.float64
    assert M.laplace(np.zeros(0), 1.0, None, sampler="opendp").shape == (0,)
    one = M.laplace(5.0, 0.01, None, sampler="opendp")
    assert one.shape == () and abs(float(one) - 5.0) < 1.0
    dp.disable_features("contrib")                     # dprec enables what it needs itself
    assert np.isfinite(M.laplace([0.0], 1.0, None, sampler="opendp")).all()


def test_discrete_laplace_mechanism_has_the_two_sided_geometric_law():
    t = 2.5
    noisy = M.discrete_laplace(np.full(100_000, 7.0), t, 11)
    assert np.array_equal(noisy, np.round(noisy))
    q = np.exp(-1.0 / t)
    z = np.arange(-6, 7)
    expected = (1 - q) / (1 + q) * q ** np.abs(z)
    observed = np.array([(noisy - 7 == v).mean() for v in z])
    # 4 binomial standard deviations per cell
    assert np.all(np.abs(observed - expected) <= 4 * np.sqrt(expected / 100_000))
    np.testing.assert_array_equal(noisy, M.discrete_laplace(np.full(100_000, 7.0), t, 11))


def test_discrete_laplace_refuses_non_integer_values():
    with pytest.raises(ValueError, match="values"):
        M.discrete_laplace([0.5], 1.0, 0)
    with pytest.raises(ValueError, match="values"):
        M.discrete_laplace([2.0**52], 1.0, 0)
    assert M.discrete_laplace([2.0**52 - 1], 1.0, 0).shape == (1,)
    with pytest.raises(ValueError, match=r"^t must"):
        M.discrete_laplace([1.0], 0.0, 0)


def test_discrete_laplace_epsilon_is_the_worst_log_ratio():
    # exact: neighbouring integer inputs 0 and Δ, the log ratio of the pmfs over outputs
    t, delta = 1.7, 3
    q = math.exp(-1 / t)
    z = np.arange(-40, 41)
    log_ratio = np.log(q) * (np.abs(z) - np.abs(z - delta))
    assert M.discrete_laplace_epsilon(t, delta) == pytest.approx(np.abs(log_ratio).max())
