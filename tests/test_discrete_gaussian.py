"""The discrete Gaussian mechanism (`dprec.mechanisms.discrete_gaussian`): its law, its
rejection step, its zCDP accounting and the integer ℓ2-clipped sums it is applied to.

Sampling tests use fixed seeds and honest tolerances: a chi-square p-value above 1e-3 on
the exact pmf $P(z) \\propto e^{-z^2 / (2\\sigma^2)}$ (normalised over ±(40σ + 10)), exact
binomial tests, or 5 standard errors; a companion test shows that the same check rejects
the nearest wrong laws (the rounded continuous Gaussian, the discrete Laplace of the same
variance).  The rejection step is checked exactly, with the discrete Laplace and the
log-uniform draws forced, at the boundary $\\ln U = -\\gamma$.

Accounting: `zcdp_epsilon` is dp-accounting's Rényi accountant on a `ZCDpEvent`; it is
never below the exact $(\\varepsilon, \\delta)$ of the continuous Gaussian at the same σ
(nor below the discrete Gaussian's own privacy-loss distribution), and never looser than
``1.25 ε_exact + 0.01`` on the grid tested (the zCDP conversion's documented price), nor
than Bun & Steinke's $\\rho + 2\\sqrt{\\rho \\ln(1/\\delta)}$.

`integer_l2_sums`: every unit's integer vector has ℓ2 norm at most K, checked in exact
integer arithmetic for random, rounding-boundary and huge values (property-based).
"""

from __future__ import annotations

import copy
import importlib
import math
from fractions import Fraction
from functools import cache

import numpy as np
import pytest
from dp_accounting import ZCDpEvent
from dp_accounting.pld import privacy_loss_distribution
from dp_accounting.rdp import RdpAccountant
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats
from strategies import fuzz, raises_naming

from dprec.mechanisms import gaussian_epsilon
from dprec.mechanisms.exact_laplace import MAX_T, discrete_laplace_noise

# the module itself (`dprec.mechanisms.discrete_gaussian` is also the function's name)
DG = importlib.import_module("dprec.mechanisms.discrete_gaussian")

N = 200_000


# ------------------------------------------------------------------------ helpers


def _pmf(sigma: float, support: np.ndarray) -> np.ndarray:
    """The exact discrete Gaussian pmf at `support`, normalised over ±(40σ + 10)."""
    width = math.ceil(40 * sigma) + 10
    z = np.arange(-width, width + 1, dtype=np.float64)
    total = np.exp(-z * z / (2 * sigma * sigma)).sum()
    s = np.asarray(support, dtype=np.float64)
    return np.exp(-s * s / (2 * sigma * sigma)) / total


def _variance(sigma: float) -> float:
    """The exact variance of the discrete Gaussian (it is below σ² for small σ)."""
    width = math.ceil(40 * sigma) + 10
    z = np.arange(-width, width + 1, dtype=np.float64)
    return float((z * z * _pmf(sigma, z)).sum())


@cache
def _draws(sigma: float, n: int = N, seed: int = 0) -> np.ndarray:
    z = DG.discrete_gaussian_noise(sigma, n, np.random.default_rng(seed))
    z.setflags(write=False)
    return z


def _chi_square_pvalue(z: np.ndarray, sigma: float) -> float:
    """Chi-square of the counts of `z` against the exact pmf: one cell per integer whose
    expected count is at least 20, the two tails pooled into one cell each."""
    width = math.ceil(40 * sigma) + 10
    support = np.arange(-width, width + 1)
    expected = _pmf(sigma, support) * len(z)
    inner = support[expected >= 20]
    low, high = inner.min(), inner.max()
    counts = [np.count_nonzero(z < low)]
    counts += list(np.bincount((z[(z >= low) & (z <= high)] - low).astype(np.int64),
                               minlength=high - low + 1))
    counts.append(np.count_nonzero(z > high))
    cells = [expected[support < low].sum()] + list(expected[(support >= low)
                                                            & (support <= high)])
    cells.append(expected[support > high].sum())
    counts, cells = np.array(counts, dtype=float), np.array(cells)
    keep = cells > 0
    counts, cells = counts[keep], cells[keep]
    assert counts.sum() == len(z)
    return float(stats.chisquare(counts, cells * len(z) / cells.sum()).pvalue)


def _steps(value: float, bits: int) -> int:
    """`value` on the grid 2^-bits, rounded half to even, in exact arithmetic."""
    return round(Fraction(value) * 2**bits)


# -------------------------------------------------------------- the sampler's law


@pytest.mark.parametrize("sigma", [0.7, 1.0, 3.5, 40.0])
def test_draws_follow_the_exact_pmf(sigma):
    z = _draws(sigma)
    assert np.array_equal(z, np.round(z))
    assert _chi_square_pvalue(z, sigma) > 1e-3
    variance = _variance(sigma)
    assert abs(z.mean()) < 5 * math.sqrt(variance / len(z))
    kurtosis_se = math.sqrt(((z**4).mean() - variance**2) / len(z))
    assert abs((z * z).mean() - variance) < 5 * kurtosis_se


def test_the_chi_square_check_rejects_the_nearest_wrong_laws():
    """The rounded continuous Gaussian and the discrete Laplace of the same variance fail
    the check that the sampler passes (so the check has power)."""
    rng = np.random.default_rng(1)
    for sigma in (0.7, 1.0):
        rounded = np.round(rng.normal(0.0, sigma, N))
        assert _chi_square_pvalue(rounded, sigma) < 1e-6
    sigma = 3.5
    variance = _variance(sigma)
    t = 1.0 / math.acosh(1.0 + 1.0 / variance)         # Var = 2q/(1-q)^2 = variance
    laplace = discrete_laplace_noise(t, N, np.random.default_rng(2))
    assert abs(laplace.var() / variance - 1.0) < 0.05
    assert _chi_square_pvalue(laplace, sigma) < 1e-6


def test_small_sigma_law_by_exact_binomial_tests():
    """σ = 0.2: P(|Z| = 1) = 7.45e-6 and P(|Z| ≥ 2) = 3.9e-22."""
    sigma, n = 0.2, 4 * N
    z = DG.discrete_gaussian_noise(sigma, n, np.random.default_rng(3))
    p_one = 2 * float(_pmf(sigma, np.array([1.0]))[0])
    ones = int(np.count_nonzero(np.abs(z) == 1))
    assert stats.binomtest(ones, n, p_one).pvalue > 1e-3
    assert np.count_nonzero(np.abs(z) >= 2) == 0
    assert 0 < ones < 20


def test_a_large_sigma_by_its_moments():
    """σ = 1e6 (t = 1e6 + 1, below the discrete Laplace's one-level scale): the moments and
    the shape of N(0, σ²), and no gap in the low digits."""
    sigma = 1e6
    z = _draws(sigma)
    assert np.array_equal(z, np.round(z))
    n = len(z)
    assert abs(z.mean()) < 5 * sigma / math.sqrt(n)
    assert abs(z.var() / sigma**2 - 1.0) < 5 * math.sqrt(2.0 / n)
    assert abs(stats.kurtosis(z)) < 5 * math.sqrt(24.0 / n)
    assert stats.kstest(z / sigma, "norm").pvalue > 1e-3
    residues = np.bincount((z % 8).astype(np.int64), minlength=8)
    assert stats.chisquare(residues).pvalue > 1e-3


@pytest.mark.parametrize("sigma", [1.0, 3.5, 40.0])
def test_the_law_is_symmetric(sigma):
    z = _draws(sigma)
    positive, negative = int(np.count_nonzero(z > 0)), int(np.count_nonzero(z < 0))
    assert stats.binomtest(positive, positive + negative, 0.5).pvalue > 1e-3
    k = np.arange(1, math.ceil(3 * sigma) + 1)
    up = np.array([np.count_nonzero(z == v) for v in k], dtype=float)
    down = np.array([np.count_nonzero(z == -v) for v in k], dtype=float)
    statistic = float((((up - down) ** 2) / (up + down)).sum())   # χ² with len(k) dof
    assert stats.chi2.sf(statistic, len(k)) > 1e-3


@pytest.mark.parametrize("sigma, reach", [(0.7, 3), (3.5, 10), (40.0, 120)])
def test_every_integer_within_a_few_sigma_is_drawn(sigma, reach):
    z = _draws(sigma)
    assert set(range(-reach, reach + 1)) <= set(z.astype(np.int64).tolist())


def test_the_same_seed_gives_the_same_draws():
    a = DG.discrete_gaussian_noise(2.5, 1000, np.random.default_rng(11))
    b = DG.discrete_gaussian_noise(2.5, 1000, np.random.default_rng(11))
    c = DG.discrete_gaussian_noise(2.5, 1000, np.random.default_rng(12))
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)
    rng = np.random.default_rng(11)
    first, second = DG.discrete_gaussian_noise(2.5, 1000, rng), \
        DG.discrete_gaussian_noise(2.5, 1000, rng)
    assert np.array_equal(first, a) and not np.array_equal(first, second)


def test_noise_shape_and_dtype():
    z = DG.discrete_gaussian_noise(1.0, 7, np.random.default_rng(0))
    assert z.shape == (7,) and z.dtype == np.float64
    assert DG.discrete_gaussian_noise(1.0, 0, np.random.default_rng(0)).shape == (0,)


@pytest.mark.parametrize("sigma", [0.0, -1.0, math.nan, math.inf, MAX_T, 2 * MAX_T])
def test_invalid_sigma_is_refused(sigma):
    raises_naming(lambda: DG.discrete_gaussian_noise(sigma, 3, np.random.default_rng(0)),
                  "sigma")


def test_sigma_just_below_the_largest_scale_is_sampled():
    sigma = math.nextafter(MAX_T, 0.0)
    z = DG.discrete_gaussian_noise(sigma, 2000, np.random.default_rng(5))
    assert np.array_equal(z, np.round(z))
    assert 0.8 < z.std() / sigma < 1.2


# ------------------------------------------------- the rejection step (Algorithm 3)


class _Forced:
    """Stands in for the discrete Laplace sampler and `log_uniform`: returns the given
    rounds of draws in order and records the scales and sizes asked for."""

    def __init__(self, laplace_rounds, log_u_rounds):
        self.laplace_rounds, self.log_u_rounds = list(laplace_rounds), list(log_u_rounds)
        self.scales, self.sizes = [], []

    def laplace(self, t, size, rng):
        self.scales.append(t)
        self.sizes.append(size)
        draws = np.asarray(self.laplace_rounds.pop(0), dtype=np.float64)
        assert draws.shape == (size,)
        return draws

    def log_uniform(self, rng, size):
        draws = np.asarray(self.log_u_rounds.pop(0), dtype=np.float64)
        assert draws.shape == (size,)
        return draws


def _force(monkeypatch, laplace_rounds, log_u_rounds) -> _Forced:
    forced = _Forced(laplace_rounds, log_u_rounds)
    monkeypatch.setattr(DG, "discrete_laplace_noise", forced.laplace)
    monkeypatch.setattr(DG, "log_uniform", forced.log_uniform)
    return forced


def _gamma(y: int, sigma: Fraction) -> Fraction:
    """Canonne, Kamath & Steinke's γ = (|y| − σ²/t)² / (2σ²), t = ⌊σ⌋ + 1, exactly."""
    t = math.floor(sigma) + 1
    return (abs(y) - sigma * sigma / t) ** 2 / (2 * sigma * sigma)


@pytest.mark.parametrize("sigma, t, ys", [
    (Fraction(3, 2), 2.0, [3, -3, 0, 6, -6]),          # γ = 25/32, 9/32, 169/32: exact
    (Fraction(7, 2), 4.0, [49, -49, 0, 0, 49]),        # γ = 22050/256, 98/256: exact
])
def test_the_acceptance_rule_is_ln_u_at_most_minus_gamma(monkeypatch, sigma, t, ys):
    """A draw Y of the discrete Laplace of scale t = ⌊σ⌋ + 1 is kept iff ln U ≤ −γ: kept at
    ln U = −γ exactly, redrawn one ulp above; the redrawn ones are drawn again together."""
    gammas = [_gamma(y, sigma) for y in ys]
    assert all(g.denominator & (g.denominator - 1) == 0 for g in gammas)   # dyadic
    at = [-float(g) for g in gammas]
    above = [math.nextafter(a, 0.0) for a in at]
    log_u = [at[0], above[1], at[2] - 1.0, above[3], at[4]]
    again = [ys[3], ys[0]]                            # the two redrawn positions (1 and 3)
    forced = _force(monkeypatch, [ys, again],
                    [log_u, [-float(_gamma(y, sigma)) for y in again]])
    out = DG.discrete_gaussian_noise(float(sigma), len(ys), np.random.default_rng(0))
    assert forced.scales == [t, t]
    assert forced.sizes == [5, 2]
    assert out.tolist() == [ys[0], again[0], ys[2], again[1], ys[4]]


def test_far_tail_draws_are_kept_where_exp_minus_gamma_underflows(monkeypatch):
    """σ = 0.2, Y = ±40: γ ≈ 19980, e^{−γ} = 0 in float64, yet the draw is kept with its
    positive probability (ln U exact in its tail), and rejected for ln U just above −γ."""
    sigma = 0.2
    gamma = (40 - sigma * sigma) ** 2 / (2 * sigma * sigma)
    assert math.exp(-gamma) == 0.0
    forced = _force(monkeypatch, [[40, -40, 40], [0]],
                    [[-gamma - 1.0, -gamma - 1e-9 * gamma, -gamma + 1.0], [-1.0]])
    out = DG.discrete_gaussian_noise(sigma, 3, np.random.default_rng(0))
    assert out.tolist() == [40.0, -40.0, 0.0]
    assert forced.scales == [1.0, 1.0]


# ------------------------------------------------------------ discrete_gaussian()


def test_discrete_gaussian_adds_the_noise_of_its_seed():
    x = np.arange(-6.0, 6.0).reshape(3, 4)
    kept = x.copy()
    out = DG.discrete_gaussian(x, 2.5, 7)
    assert np.array_equal(x, kept)                                  # input not modified
    assert out.shape == x.shape
    noise = DG.discrete_gaussian_noise(2.5, x.size, np.random.default_rng(7)).reshape(3, 4)
    assert np.array_equal(out - x, noise)
    assert np.array_equal(DG.discrete_gaussian(x, 2.5, 7), out)
    assert np.array_equal(DG.discrete_gaussian(x.tolist(), 2.5, np.random.default_rng(7)),
                          out)
    ints = np.arange(12, dtype=np.int32)
    assert np.array_equal(DG.discrete_gaussian(ints, 2.5, 7), ints + noise.ravel())


def test_discrete_gaussian_noise_has_the_exact_variance():
    sigma = 0.6
    x = np.full(N, 1000.0)
    noise = DG.discrete_gaussian(x, sigma, 8) - x
    variance = _variance(sigma)
    assert variance < 0.98 * sigma**2                         # σ² would fail the check
    fourth = float((np.arange(-80.0, 81.0) ** 4 * _pmf(sigma, np.arange(-80, 81))).sum())
    assert abs(noise.var() - variance) < 5 * math.sqrt((fourth - variance**2) / N)
    assert abs(noise.mean()) < 5 * math.sqrt(variance / N)


@pytest.mark.parametrize("values", [[0.5], [1.0, math.nan], [math.inf], [-math.inf],
                                    [2.0**52], [-(2.0**52)], [1e300], [3.0, 1e-9]])
def test_discrete_gaussian_refuses_non_integer_non_finite_or_huge_values(values):
    x = np.array(values)
    kept = x.copy()
    raises_naming(lambda: DG.discrete_gaussian(x, 1.0, 0), "values")
    assert np.array_equal(x, kept, equal_nan=True)


def test_discrete_gaussian_refuses_python_integers_beyond_2_52():
    for values in ([2**70], [0, -(2**64)], [2**52]):
        raises_naming(lambda v=values: DG.discrete_gaussian(v, 1.0, 0), "values")


def test_discrete_gaussian_accepts_integers_just_below_2_52():
    x = np.array([2.0**52 - 1, -(2.0**52 - 1), 0.0])
    out = DG.discrete_gaussian(x, 0.2, 0)
    assert np.abs(out - x).max() <= 1


# --------------------------------------------------------------------- zCDP → (ε, δ)

RHOS = [1e-6, 1e-3, 0.02, 0.5, 1.0, 8.0, 300.0]
DELTAS = [1e-2, 1e-5, 1e-9]


@pytest.mark.parametrize("delta", DELTAS)
def test_zcdp_epsilon_is_dp_accountings_renyi_accountant(delta):
    for rho in RHOS:
        accountant = RdpAccountant()
        accountant.compose(ZCDpEvent(rho))
        assert DG.zcdp_epsilon(rho, delta) == accountant.get_epsilon(delta)


def test_zcdp_epsilon_is_monotone():
    rhos = np.geomspace(1e-8, 1e3, 60)
    for delta in DELTAS:
        eps = [DG.zcdp_epsilon(r, delta) for r in rhos]
        assert all(b >= a for a, b in zip(eps, eps[1:]))
        assert all(b > a for a, b in zip(eps, eps[1:]) if a > 0)
        assert eps[-1] > 1000
    for rho in RHOS:
        eps = [DG.zcdp_epsilon(rho, d) for d in (0.3, 1e-2, 1e-5, 1e-9, 1e-30)]
        assert all(b >= a for a, b in zip(eps, eps[1:]))
        assert eps[-1] > eps[1]


@pytest.mark.parametrize("delta", [1e-3, 1e-5, 1e-8])
@pytest.mark.parametrize("sigma", [0.5, 1.0, 2.0, 5.0, 20.0, 100.0])
def test_zcdp_epsilon_is_valid_and_not_loose_against_the_exact_gaussian_curve(sigma, delta):
    """ρ = Δ²/(2σ²) is the discrete Gaussian's zCDP (at most the continuous one's), so its
    ε can never be below the continuous Gaussian's exact ε (Balle & Wang); the conversion
    costs at most 25 % + 0.01 on this grid, and beats Bun & Steinke's closed form."""
    for sensitivity in (1.0, 3.0):
        rho = sensitivity**2 / (2 * sigma**2)
        eps = DG.zcdp_epsilon(rho, delta)
        exact = gaussian_epsilon(sigma, sensitivity, delta)
        assert exact <= eps <= 1.25 * exact + 0.01
        assert eps <= rho + 2 * math.sqrt(rho * math.log(1 / delta))


@pytest.mark.parametrize("sigma", [0.5, 1.0, 2.0, 5.0])
def test_zcdp_epsilon_bounds_the_discrete_gaussians_own_privacy_loss(sigma):
    """dp-accounting's privacy-loss distribution of the 1-D discrete Gaussian (sensitivity 1,
    a pessimistic upper estimate) never exceeds the zCDP bound."""
    loss = privacy_loss_distribution.from_discrete_gaussian_mechanism(
        sigma, sensitivity=1, value_discretization_interval=1e-4)
    for delta in (1e-3, 1e-5, 1e-8):
        assert loss.get_epsilon_for_delta(delta) <= DG.zcdp_epsilon(1 / (2 * sigma**2), delta)


def test_zcdp_epsilon_refuses_invalid_arguments():
    for rho in (0.0, -1.0, math.nan, math.inf):
        raises_naming(lambda r=rho: DG.zcdp_epsilon(r, 1e-5), "rho")
    for delta in (-0.1, 1.0, math.nan):
        raises_naming(lambda d=delta: DG.zcdp_epsilon(1.0, d), "delta")


# --------------------------------------------------------------------- (ε, δ) → ρ


@pytest.mark.parametrize("delta", [1e-3, 1e-5, 1e-9])
def test_zcdp_rho_is_the_largest_rho_within_epsilon(delta):
    for epsilon in (0.05, 0.3, 1.0, 4.0, 50.0, 1e4):
        rho = DG.zcdp_rho(epsilon, delta)
        assert DG.MIN_RHO <= rho < DG.MAX_RHO
        assert DG.zcdp_epsilon(rho, delta) <= epsilon
        assert DG.zcdp_epsilon(rho * (1 + 1e-6), delta) > epsilon


def test_zcdp_rho_round_trips_through_zcdp_epsilon():
    for rho in (1e-4, 0.01, 0.7, 20.0):
        epsilon = DG.zcdp_epsilon(rho, 1e-6)
        assert rho * (1 - 2e-9) <= DG.zcdp_rho(epsilon, 1e-6) <= rho * (1 + 1e-9)


def test_zcdp_rho_is_capped_at_max_rho():
    """The documented cap: ρ = 1e6, spending ε ≈ 1.1e6 at δ = 1e-5; a larger ε gets the cap
    (spending less than it is allowed), an ε exactly at the cap's gets the cap itself."""
    assert DG.MAX_RHO == 1e6
    delta = 1e-5
    cap = DG.zcdp_epsilon(1e6, delta)
    assert 1.05e6 < cap < 1.15e6
    assert DG.zcdp_rho(cap, delta) == 1e6
    assert DG.zcdp_rho(1e300, delta) == 1e6
    below = DG.zcdp_rho(0.999 * cap, delta)
    assert below < 1e6
    assert DG.zcdp_epsilon(below, delta) <= 0.999 * cap


def test_zcdp_rho_at_the_smallest_rho():
    """At δ = 1e-12 even ρ → 0 costs ε ≈ 0.019 (the accountant's largest Rényi order):
    an ε exactly at MIN_RHO's is calibrated, to the largest ρ of the plateau where the
    accountant's ε equals it (not MIN_RHO), and a smaller one is refused, naming epsilon."""
    delta = 1e-12
    floor = DG.zcdp_epsilon(DG.MIN_RHO, delta)
    assert 0.0 < floor < 0.05
    rho = DG.zcdp_rho(floor, delta)
    assert 10 * DG.MIN_RHO < rho < 1e-20
    assert DG.zcdp_epsilon(rho, delta) == floor
    assert DG.zcdp_epsilon(rho * (1 + 1e-6), delta) > floor
    raises_naming(lambda: DG.zcdp_rho(0.999 * floor, delta), "epsilon")
    small = DG.zcdp_rho(0.001, 1e-5)          # below that floor at δ = 1e-5 (≈ 0.0035): the
    assert DG.zcdp_epsilon(small, 1e-5) <= 0.001 < DG.zcdp_epsilon(small * (1 + 1e-6), 1e-5)


def test_zcdp_rho_refuses_invalid_arguments():
    with pytest.raises(ValueError, match="delta must be > 0 for zCDP"):
        DG.zcdp_rho(1.0, 0.0)
    for delta in (-0.1, 1.0, math.nan):
        raises_naming(lambda d=delta: DG.zcdp_rho(1.0, d), "delta")
    for epsilon in (0.0, -1.0, math.nan, math.inf):
        raises_naming(lambda e=epsilon: DG.zcdp_rho(e, 1e-5), "epsilon")


# --------------------------------------------------------------- integer_l2_sums


def test_integer_l2_sums_rounds_to_the_grid_and_sums_by_column():
    rows, columns = np.array([0, 0, 1, 2]), np.array([0, 1, 1, 2])
    values = np.array([0.3, -0.2, 0.5, 0.5 / 16])            # 4.8, -3.2, 8, 0.5 steps
    sums, k = DG.integer_l2_sums(rows, columns, values, 4, 1.0, 4)
    assert k == 16.0
    assert sums.tolist() == [5.0, 5.0, 0.0, 0.0]             # 0.5 rounds to even: 0
    assert sums.dtype == np.float64
    sums, k = DG.integer_l2_sums(rows, columns, [0.3, -0.2, 0.5, 1.5 / 32], 3, 0.75, 5)
    assert k == 24.0
    assert sums.tolist() == [10.0, -6.0 + 16.0, 2.0]             # 1.5 rounds to even: 2
    sums, k = DG.integer_l2_sums(rows, columns, [1.2, 2.5, 3.5, 2.0], 3, 9.0, 0)
    assert (sums.tolist(), k) == ([1.0, 2.0 + 4.0, 2.0], 9.0)


def test_integer_l2_sums_compute_in_float64_whatever_the_input_dtype():
    # float32 values: their steps are exact, but float32 squares of steps near 2^20 are not,
    # and the clipped units' shrink factors would differ
    rng = np.random.default_rng(5)
    rows, columns = np.repeat(np.arange(200), 3), np.tile(np.arange(3), 200)
    values = rng.uniform(-1.0, 1.0, 600).astype(np.float32)
    exact = DG.integer_l2_sums(rows, columns, values.astype(np.float64), 3, 0.9, 20)
    np.testing.assert_array_equal(DG.integer_l2_sums(rows, columns, values, 3, 0.9, 20)[0],
                                  exact[0])
    blocks = DG.integer_l2_block_sums(np.arange(200), np.zeros(200, np.int64),
                                      values.reshape(200, 3), 1, 0.9, 20)
    np.testing.assert_array_equal(blocks[0][0], exact[0])


def test_integer_l2_sums_clips_each_unit_towards_zero():
    """(6, 8) at K = 5 is scaled by 1/2 and truncated: each coordinate moves towards 0,
    by less than one step past the exact scaling; (3, 4), of norm exactly K, is kept."""
    rows, columns = np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1])
    sums, k = DG.integer_l2_sums(rows, columns, [6.0, -8.0, 3.0, 4.0], 2, 5.0, 0)
    assert k == 5.0
    clipped = sums - np.array([3.0, 4.0])
    assert clipped[0] ** 2 + clipped[1] ** 2 <= 25
    assert 2 <= clipped[0] <= 3 and -4 <= clipped[1] <= -3


@pytest.mark.parametrize("k", [2**20, 2**26])
def test_integer_l2_sums_clips_a_norm_one_above_k_squared(k):
    """(K, 1): ‖c‖² = K² + 1, whose square root rounds to K itself at K = 2^26: the shrink
    factor must still move the vector inside (no endless loop, no norm above K)."""
    sums, limit = DG.integer_l2_sums(np.array([0, 0]), np.array([0, 1]),
                                     np.array([float(k), 1.0]), 2, float(k), 0)
    assert limit == k
    c = [int(v) for v in sums]
    assert c[0] ** 2 + c[1] ** 2 <= k * k
    assert c == [k - 1, 0]


def test_integer_l2_sums_clips_what_rounding_pushes_over_the_bound():
    """20 entries of 3.5 steps: ℓ2 norm 15.65 ≤ K = 16 before rounding, 4·√20 = 17.9 after
    (3.5 rounds to 4): the integer vector is clipped, its exact norm at most 16."""
    n = 20
    values = np.full(n, 3.5 / 16)
    sums, k = DG.integer_l2_sums(np.zeros(n, np.int64), np.arange(n), values, n, 1.0, 4)
    assert k == 16.0
    assert math.sqrt(n) * 3.5 <= 16
    c = [int(v) for v in sums]
    assert sum(v * v for v in c) <= 256
    assert all(v in (3, 4) for v in c) and sum(c) > 0


def test_integer_l2_sums_equals_the_rounded_sums_when_nothing_is_clipped():
    rng = np.random.default_rng(4)
    rows = np.repeat(np.arange(50), 5)
    columns = np.concatenate([rng.choice(30, 5, replace=False) for _ in range(50)])
    values = rng.uniform(-0.4, 0.4, len(rows))                # norm ≤ 0.9 < 1
    sums, k = DG.integer_l2_sums(rows, columns, values, 30, 1.0, 10)
    expected = np.zeros(30)
    np.add.at(expected, columns, np.round(values * 1024))
    assert k == 1024.0 and np.array_equal(sums, expected)


def test_integer_l2_sums_accepts_any_integer_valued_index_arrays():
    rows, columns, values = [0.0, 1.0, 1.0], [2.0, 0.0, 1.0], [0.25, 0.5, -0.75]
    expected = DG.integer_l2_sums(np.array([0, 1, 1]), np.array([2, 0, 1]),
                                  np.array(values), 3, 2.0, 2)
    for cast in (list, np.array, lambda a: np.array(a, dtype=np.int32)):
        got = DG.integer_l2_sums(cast(rows), cast(columns), values, 3, 2.0, 2)
        assert np.array_equal(got[0], expected[0]) and got[1] == expected[1]
    assert expected[0].tolist() == [2.0, -3.0, 1.0]


def test_every_distinct_pair_is_accepted():
    rows, columns = np.divmod(np.arange(12), 3)
    sums, _ = DG.integer_l2_sums(rows, columns, np.ones(12), 3, 2.0, 0)
    assert sums.tolist() == [4.0, 4.0, 4.0]


def test_integer_l2_sums_of_nothing():
    sums, k = DG.integer_l2_sums(np.array([], np.int64), np.array([], np.int64),
                                 np.array([]), 4, 1.5, 3)
    assert sums.tolist() == [0.0] * 4 and k == 12.0


def test_integer_l2_sums_does_not_modify_its_inputs():
    rows, columns = np.array([0, 0, 1]), np.array([0, 1, 1])
    values = np.array([30.0, -40.0, 0.3])
    copies = [a.copy() for a in (rows, columns, values)]
    DG.integer_l2_sums(rows, columns, values, 2, 1.0, 3)
    assert all(np.array_equal(a, b) for a, b in zip((rows, columns, values), copies))


@pytest.mark.parametrize("pairs", [[(0, 1), (0, 1)], [(2, 0), (1, 3), (2, 0)]])
def test_a_repeated_pair_is_refused(pairs):
    rows, columns = np.array(pairs).T
    raises_naming(lambda: DG.integer_l2_sums(rows, columns, np.ones(len(rows)), 4, 1.0, 2),
                  "pair")


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_values_are_refused(bad):
    raises_naming(lambda: DG.integer_l2_sums([0, 1], [0, 0], [1.0, bad], 1, 1.0, 2),
                  "values")


@pytest.mark.parametrize("bits", [-1, 31, 64])
def test_bits_out_of_range_are_refused(bits):
    raises_naming(lambda: DG.integer_l2_sums([0], [0], [0.0], 1, 1.0, bits), "bits")


@pytest.mark.parametrize("bits", [0, 30])
def test_the_extreme_bits_are_accepted(bits):
    grid = 2.0**-bits
    sums, k = DG.integer_l2_sums([0], [0], [5 * grid], 1, 8 * grid, bits)
    assert (sums.tolist(), k) == ([5.0], 8.0)


@pytest.mark.parametrize("bound, bits", [(0.0, 2), (-1.0, 2), (math.nan, 2), (math.inf, 2),
                                         (0.99, 0), (0.2, 2), (2.0**-31, 30)])
def test_a_bound_below_one_grid_step_is_refused(bound, bits):
    raises_naming(lambda: DG.integer_l2_sums([0], [0], [0.0], 1, bound, bits), "bound")


def test_a_bound_of_one_grid_step_is_accepted():
    for bits in (0, 3, 30):
        grid = 2.0**-bits
        sums, k = DG.integer_l2_sums([0, 1, 1], [0, 0, 1], [grid, grid, grid], 2, grid, bits)
        assert k == 1.0 and sums.tolist() == [1.0, 0.0]     # (1) kept, (1, 1) clipped to 0


@pytest.mark.parametrize("value", [2.0**26.5, 2.0**31.75, 2.0**32 - 1, 2.0**32, 2.0**33,
                                   2.0**63, 1e18, 1e300, -1e300, 2**70])
def test_values_too_large_for_exact_norms_are_refused(value):
    """A value whose squared steps would pass 2^53 (or wrap in 64-bit integers) is refused,
    never summed unclipped."""
    for bits in (0, 30):
        raises_naming(lambda b=bits: DG.integer_l2_sums([0, 0], [0, 1], [value, 0], 2, 1.0, b),
                      "bits")


def test_a_squared_norm_of_2_53_is_refused():
    """2^53 is where float64 integers stop being exact (2^53 + 1 is not one): a unit whose
    squared norm reaches it is refused; one just below is clipped and summed."""
    big = 2.0**26
    raises_naming(lambda: DG.integer_l2_sums([0, 0], [0, 1], [big, big], 2, 1.0, 0), "bits")
    sums, _ = DG.integer_l2_sums([0, 0], [0, 1], [big, big - 1], 2, 2.0, 0)
    assert sums[0] ** 2 + sums[1] ** 2 <= 4 and sums.tolist() == [1.0, 1.0]


def test_a_large_clipped_unit_is_summed_exactly():
    value = 2.0**26.4                                        # steps² just below 2^53
    sums, k = DG.integer_l2_sums([0, 1], [0, 0], [value, -0.5], 1, 3.0, 0)
    assert k == 3.0 and sums.tolist() == [2.0]              # 2 + 0 (−0.5 rounds to −0)


def test_sums_that_could_pass_2_52_are_refused():
    """units · K ≥ 2^52 is refused (the sums must stay exact float64 integers)."""
    raises_naming(lambda: DG.integer_l2_sums([0], [0], [0.0], 1, 2.0**22, 30), "bits")
    raises_naming(lambda: DG.integer_l2_sums([0, 1], [0, 0], [0.0, 0.0], 1, 2.0**21, 30),
                  "bits")
    sums, k = DG.integer_l2_sums([0], [0], [2.0**-10], 1, 2.0**21, 30)
    assert k == 2.0**51 and sums.tolist() == [2.0**20]
    sums, k = DG.integer_l2_sums([0], [0], [2.0**-10], 1, 2.0**22 - 2.0**-30, 30)
    assert k == 2.0**52 - 1 and sums.tolist() == [2.0**20]


# property: every unit's integer vector within K, the neighbouring sums within K


@st.composite
def contributions(draw):
    bits = draw(st.integers(0, 30))
    grid = 2.0**-bits
    bound = draw(st.one_of(st.sampled_from([grid, 1.0, 2.5, 4.0]),
                           st.floats(grid, 1e3, allow_nan=False)))
    k = math.floor(bound * 2.0**bits)
    n_columns = draw(st.integers(1, 6))
    n_units = draw(st.integers(1, 4))
    value = st.one_of(
        st.floats(-4 * bound, 4 * bound, allow_nan=False, allow_infinity=False),
        st.integers(-k - 2, k + 2).map(lambda s: (s + 0.5) * grid),        # rounding ties
        st.integers(-k - 2, k + 2).map(lambda s: s * grid),                # on the grid
        st.integers(-2, 2).map(lambda s: (k / math.sqrt(2) + s + 0.5) * grid),
        st.sampled_from([2.0**31, 2.0**32 - 1, 2.0**32, -(2.0**33), 1e18, 1e300]),
    )
    rows, columns, values = [], [], []
    for unit in range(n_units):
        cells = draw(st.lists(st.integers(0, n_columns - 1), unique=True, max_size=n_columns))
        for column in cells:
            rows.append(unit)
            columns.append(column)
            values.append(draw(value))
    return (np.array(rows, np.int64), np.array(columns, np.int64),
            np.array(values, np.float64), n_columns, bound, bits)


@fuzz(150)
@given(contributions())
def test_every_unit_moves_the_sums_by_at_most_k(case):
    rows, columns, values, n_columns, bound, bits = case
    k = math.floor(bound * 2.0**bits)
    steps = [_steps(v, bits) for v in values]
    units = sorted(set(rows.tolist()))
    squares = {u: sum(s * s for s, r in zip(steps, rows) if r == u) for u in units}
    inputs = copy.deepcopy((rows, columns, values))
    call = lambda keep: DG.integer_l2_sums(rows[keep], columns[keep], values[keep],   # noqa: E731
                                           n_columns, bound, bits)
    everyone = np.ones(len(rows), dtype=bool)
    if any(sq >= 2**53 for sq in squares.values()):
        raises_naming(lambda: call(everyone), "bits")
        return
    sums, sensitivity = call(everyone)
    assert all(np.array_equal(a, b) for a, b in zip((rows, columns, values), inputs))
    assert sensitivity == k
    assert sums.shape == (n_columns,)
    assert np.array_equal(sums, np.round(sums))
    if all(sq <= k * k for sq in squares.values()):                  # nothing clipped
        expected = [0] * n_columns
        for s, c in zip(steps, columns):
            expected[c] += s
        assert sums.tolist() == expected
    total = [0] * n_columns
    for u in units:
        alone = rows == u
        own = [int(v) for v in call(alone)[0]]
        without = [int(v) for v in call(~alone)[0]]
        move = [a - b for a, b in zip(sums.tolist(), without)]
        assert move == own                                             # units are independent
        assert sum(v * v for v in own) <= k * k                        # exact ℓ2 bound
        total = [a + b for a, b in zip(total, own)]
        scale = 1.0 if squares[u] <= k * k else k / math.sqrt(squares[u])
        for s, c in zip((s for s, r in zip(steps, rows) if r == u), columns[alone]):
            target = abs(s) * scale                                    # towards 0, < 1 step
            assert math.copysign(1, own[c]) == math.copysign(1, s) or own[c] == 0
            assert target - 1 - 1e-9 * target < abs(own[c]) <= target * (1 + 1e-12)
    assert total == sums.tolist()
