"""The privacy maps and calibrations, each checked against an independent computation.

A wrong formula in a privacy map crashes nothing: it prints a false ε.  These
tests pin every map at parameter values where a plausible mistake changes
the result (Δ ≠ 1, σ ≠ 2, k > 1, scale ≠ 1, the regime where a term binds),
against numerical integration, exact enumeration or the paper's closed form,
never against another function of the same module.  ``tools/mutation.py``
measures how many such mistakes they catch.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import integrate, stats

from dprec import mechanisms as M
from dprec.selectors import PNCF, PPNS, QueryNoise, ppns_schedule


# ------------------------------------------------------------------ Gaussian
def _gaussian_delta_by_integration(sigma: float, sensitivity: float, epsilon: float) -> float:
    """∫ max(0, p(x) − e^ε q(x)) dx for p = N(0, σ²), q = N(Δ, σ²) (the hockey stick)."""
    p = stats.norm(0.0, sigma).pdf
    q = stats.norm(sensitivity, sigma).pdf
    # p > e^ε q left of the crossing point x* = Δ/2 − εσ²/Δ
    crossing = sensitivity / 2 - epsilon * sigma**2 / sensitivity
    value, _ = integrate.quad(lambda x: p(x) - math.exp(epsilon) * q(x), -np.inf, crossing,
                              epsabs=1e-14, epsrel=1e-10)
    return value


@pytest.mark.parametrize("sigma, sensitivity, epsilon", [
    (3.0, 2.0, 1.0), (7.46, 2.0, 1.0), (1.5, 0.5, 0.3), (4.0, 3.0, 2.5)])
def test_gaussian_delta_at_sensitivities_other_than_one(sigma, sensitivity, epsilon):
    expected = _gaussian_delta_by_integration(sigma, sensitivity, epsilon)
    assert M.gaussian_delta(sigma, sensitivity, epsilon) == pytest.approx(expected, rel=1e-6,
                                                                         abs=1e-15)


@pytest.mark.parametrize("epsilon, delta, sensitivity", [(1.0, 1e-5, 2.0), (0.5, 1e-3, 3.0),
                                                         (2.0, 1e-8, 0.25)])
def test_gaussian_sigma_is_the_smallest_valid_sigma(epsilon, delta, sensitivity):
    sigma = M.gaussian_sigma(epsilon, delta, sensitivity)
    assert _gaussian_delta_by_integration(sigma, sensitivity, epsilon) <= delta * (1 + 1e-6)
    assert _gaussian_delta_by_integration(sigma * 0.99, sensitivity, epsilon) > delta
    if (epsilon, delta, sensitivity) == (1.0, 1e-5, 2.0):
        assert sigma == pytest.approx(7.46, abs=0.01)   # not 2.34 (ε·σ·Δ in the map)


@pytest.mark.parametrize("sigma, sensitivity, delta", [(3.0, 2.0, 1e-4), (10.0, 0.5, 1e-6)])
def test_gaussian_epsilon_is_the_smallest_valid_epsilon(sigma, sensitivity, delta):
    epsilon = M.gaussian_epsilon(sigma, sensitivity, delta)
    assert _gaussian_delta_by_integration(sigma, sensitivity, epsilon) <= delta * (1 + 1e-6)
    assert _gaussian_delta_by_integration(sigma, sensitivity, epsilon * 0.99) > delta


def test_gaussian_epsilon_is_zero_when_delta_covers_everything():
    # δ(0) = 2Φ(Δ/(2σ)) − 1 for the Gaussian: at or above it, ε = 0 suffices
    sigma, sensitivity = 3.0, 2.0
    delta0 = 2 * stats.norm.cdf(sensitivity / (2 * sigma)) - 1
    assert M.gaussian_epsilon(sigma, sensitivity, delta0 * 1.001) == 0.0
    assert M.gaussian_epsilon(sigma, sensitivity, delta0 * 0.9) > 0.0


@pytest.mark.parametrize("sigma, sensitivity", [(3.0, 2.0), (0.5, 1.5), (2.0, 1.0)])
def test_gaussian_rho_is_the_zcdp_closed_form(sigma, sensitivity):
    # Bun & Steinke (2016), Prop. 1.6: ρ = Δ² / (2σ²)
    assert M.gaussian_rho(sigma, sensitivity) == pytest.approx(sensitivity**2 / (2 * sigma**2),
                                                               rel=1e-15)


# ------------------------------------------------------------------ Laplace
@pytest.mark.parametrize("scale, sensitivity", [(2.5, 1.5), (0.3, 0.7), (40.0, 3.0)])
def test_numpy_laplace_map_is_sensitivity_over_scale(scale, sensitivity):
    assert M.laplace_epsilon(scale, sensitivity, "numpy") == pytest.approx(
        sensitivity / scale, rel=1e-15)
    assert M.laplace_scale(sensitivity / scale, sensitivity, "numpy") == pytest.approx(
        scale, rel=1e-12)


def _grid(scale: float) -> float:
    """The lattice spacing, from its definition: the largest power of two ≤ scale·2^-20."""
    grid = 2.0 ** math.floor(math.log2(scale * 2.0**-20))
    return grid


@pytest.mark.parametrize("scale, sensitivity, changed", [(3.7, 1.3, 2), (0.9, 0.4, 1),
                                                         (12.0, 5.0, 3)])
def test_opendp_laplace_map_charges_one_grid_step_per_coordinate(scale, sensitivity, changed):
    expected = (sensitivity + changed * _grid(scale)) / scale
    assert M.laplace_epsilon(scale, sensitivity, "opendp", max_changed=changed) == expected


@pytest.mark.parametrize("scale, sensitivity, changed", [(3.7, 1.3, 2), (0.9, 0.4, 1),
                                                         (12.0, 5.0, 3)])
def test_lattice_laplace_map_counts_grid_steps(scale, sensitivity, changed):
    grid = _grid(scale)
    expected = (math.ceil(sensitivity / grid) + changed - 1) * grid / scale
    assert M.laplace_epsilon(scale, sensitivity, "lattice", max_changed=changed) == expected
    assert M.LATTICE_BITS == 20 and M.laplace_grid(scale) == grid


@pytest.mark.parametrize("sampler", ["numpy", "lattice"])
@pytest.mark.parametrize("scale", [0.25, 3.0])
def test_laplace_noise_has_the_requested_scale(sampler, scale):
    # E|X − x| = b and Var = 2b² for Laplace(b); 2·10^5 draws: s.e. of the mean b/√n
    n = 200_000
    x = np.full(n, 1.75)
    noise = M.laplace(x, scale, 7, sampler=sampler) - x
    assert np.mean(np.abs(noise)) == pytest.approx(scale, rel=5 * 1 / math.sqrt(n))
    assert np.var(noise) == pytest.approx(2 * scale**2, rel=0.03)


def test_opendp_outputs_lie_on_the_accounted_grid():
    pytest.importorskip("opendp")
    from dprec.audit import lattice_resolution

    scale = 3.0
    out = M.laplace(np.zeros(400), scale, None, sampler="opendp")
    # every output on the grid γ the map charges for, and not all on a coarser one
    assert lattice_resolution(out) == _grid(scale)


# ------------------------------------------------------------------ exponential top-k
def _sequential_top2_probability(scores: np.ndarray, coefficient: float, first: int,
                                 second: int) -> float:
    """P(first, then second) for two draws without replacement, P(c) ∝ exp(coef·q(c))."""
    w = np.exp(coefficient * scores)
    return w[first] / w.sum() * w[second] / (w.sum() - w[first])


@pytest.mark.parametrize("k", [2, 3])
def test_gumbel_top_k_spends_epsilon_over_k_per_draw(k):
    """k draws of ε/k each: the ordered pair frequencies of the first two draws match the
    exact sequential probabilities with coefficient ε/(2kΔ), not ε/(2Δ)."""
    scores = np.array([0.0, 1.0, 2.0, 3.0, 4.0])
    epsilon, sensitivity, n = 6.0, 2.0, 200_000
    rng = np.random.default_rng(11)
    uniforms = rng.random((n, len(scores)))
    chosen = M.gumbel_top_k_from_uniform(np.tile(scores, (n, 1)), k, epsilon, sensitivity,
                                         uniforms)
    pairs = list(itertools.permutations(range(len(scores)), 2))
    counts = np.array([np.sum((chosen[:, 0] == a) & (chosen[:, 1] == b)) for a, b in pairs])
    expected = np.array([_sequential_top2_probability(scores, epsilon / (2 * k * sensitivity),
                                                      a, b) for a, b in pairs]) * n
    _, p = stats.chisquare(counts, expected)
    assert p > 1e-4, p
    wrong = np.array([_sequential_top2_probability(scores, epsilon / (2 * sensitivity), a, b)
                      for a, b in pairs]) * n
    assert stats.chisquare(counts, wrong * n / wrong.sum())[1] < 1e-12  # the test has power


@pytest.mark.parametrize("epsilon, sensitivity, k", [(3.0, 0.5, 4), (1.0, 2.0, 1)])
def test_exponential_coefficient_and_epsilon_are_inverse_closed_forms(epsilon, sensitivity, k):
    c = M.exponential_coefficient(epsilon, sensitivity, k)
    assert c == pytest.approx(epsilon / (2 * k * sensitivity), rel=1e-15)
    assert M.exponential_epsilon(0.37, sensitivity, k) == pytest.approx(
        2 * k * sensitivity * 0.37, rel=1e-15)


# ------------------------------------------------------------------ randomised response
@pytest.mark.parametrize("n_values, epsilon", [(3, 0.8), (10, 2.0)])
def test_randomized_response_maps(n_values, epsilon):
    p = math.exp(epsilon) / (math.exp(epsilon) + n_values - 1)
    assert M.randomized_response_keep_probability(n_values, epsilon) == pytest.approx(p,
                                                                                    rel=1e-14)
    assert M.randomized_response_epsilon(n_values, p) == pytest.approx(epsilon, rel=1e-12)


# ------------------------------------------------------------------ bounds, both sides
@pytest.mark.parametrize("call, bad, good", [
    (lambda d: M.gaussian_epsilon(2.0, 1.0, d), [0.0, 1.0, 1.5], [1e-12, 0.999]),
    (lambda d: M.gaussian_sigma(1.0, d, 1.0), [0.0, 1.0, 2.0], [1e-12, 0.5]),
    (lambda p: M.randomized_response_epsilon(4, p), [0.25, 1.0, 0.1], [0.2501, 0.999]),
    (lambda k: M.exponential_coefficient(1.0, 1.0, k), [0, -1], [1, 7]),
    (lambda k: M.exponential_epsilon(0.5, 1.0, k), [0], [1]),
    (lambda e: M.laplace_scale(e, 1.0), [0.0, -1.0, math.nan, math.inf], [1e-3, 50.0]),
    (lambda s: M.laplace_epsilon(s, 1.0), [0.0, -2.0, math.inf], [1e-3, 5.0]),
    (lambda n: M.randomized_response_keep_probability(n, 1.0), [1, 0], [2, 50]),
    (lambda m: M.laplace_epsilon(1.0, 1.0, "lattice", max_changed=m), [0], [1, 4]),
    (lambda rho: PNCF(epsilon=1.0, rho=rho), [0.0, 1.0, -0.1, 1.5], [1e-9, 0.999]),
    (lambda p: PPNS(epsilon=1.0, p=p), [0.0, -0.5, 1.5], [1e-9, 1.0]),
    (lambda a: PPNS(epsilon=1.0, alpha=a), [0.0, 1.1], [0.5, 1.0]),
    (lambda e: PPNS(epsilon=e), [0.0, -1.0, math.nan], [1e-6, 100.0]),
    (lambda e: PNCF(epsilon=e), [0.0, math.inf], [1e-6]),
    (lambda p: ppns_schedule(10, p), [0.0, 1.5, -0.2], [0.01, 0.9, 1.0]),
    (lambda k: ppns_schedule(k, 0.5), [0, -3], [1, 2]),
])
def test_parameter_bounds_on_both_sides(call, bad, good):
    for value in bad:
        with pytest.raises((ValueError, TypeError)):
            call(value)
    for value in good:
        call(value)


# ------------------------------------------------------------------ PPNS
@pytest.mark.parametrize("k, p, expected", [
    (40, 0.5, [20, 10, 5, 3, 1]),   # the docstring's example
    (10, 0.5, [5, 3, 1]),
    (20, 0.3, [6, 5, 3, 3, 2]),
    (40, 0.9, [36, 3]),
    (2, 0.5, [1]),
    (1, 0.5, []),                   # k − 1 = 0 neighbours from the schedule
])
def test_ppns_schedule_is_the_papers(k, p, expected):
    """⌈p(1−p)^(i−1)k⌉ for i = 1, 2, … until k − 1, the last capped (worked by hand)."""
    assert ppns_schedule(k, p).tolist() == expected


@pytest.mark.parametrize("k, p, n_valid, beta", [
    (40, 0.5, [1000, 100, 40, 1, 0], [6, 3, 1, 1, 1]),
    (10, 0.5, [95, 25, 10], [4, 3, 1]),
    (20, 0.3, [500], [6]),
])
def test_ppns_beta_is_visited_partitions_plus_one(k, p, n_valid, beta):
    assert PPNS(epsilon=1.0, p=p).beta(np.array(n_valid), k).tolist() == beta


def test_ppns_weights_spend_epsilon_over_two_per_neighbour_set():
    """k draws with coefficient ε/(4k) on scores of sensitivity 1: ε/2 in all (the claim)."""
    for epsilon, k in [(1.0, 10), (3.0, 4)]:
        (entry,) = PPNS(epsilon=epsilon, p=0.5).privacy(k)
        assert entry.epsilon == pytest.approx(2 * k * 1.0 * epsilon / (4 * k)) == epsilon / 2
        assert entry.delta == 0.0 and entry.applies_to == "candidates"


# ------------------------------------------------------------------ PNCF
@pytest.mark.parametrize("sims, k, rs, epsilon, rho, sim_k, lam", [
    # the differential-privacy term binds: λ = (4k·RS/ε)·ln(k(n − k)/ρ) < sim_k
    ([0.9, 0.5, 0.4, 0.3, 0.2, 0.1, 0.05, 0.04, 0.03, 0.02], 2, 1e-3, 1.0, 0.1,
     0.5, 4 * 2 * 1e-3 / 1.0 * math.log(2 * 8 / 0.1)),
    ([0.8, 0.7, 0.6, 0.5, 0.4, 0.3], 3, 2e-3, 2.0, 0.05,
     0.6, 4 * 3 * 2e-3 / 2.0 * math.log(3 * 3 / 0.05)),
    # sim_k binds
    ([0.9, 0.5, 0.4], 2, 0.5, 1.0, 0.1, 0.5, 0.5),
    # fewer candidates than k: n − k is taken as 1
    ([0.9, 0.5], 4, 1e-3, 1.0, 0.1, 0.5, 4 * 4 * 1e-3 * math.log(4 * 1 / 0.1)),
])
def test_pncf_truncation_closed_form(sims, k, rs, epsilon, rho, sim_k, lam):
    sims = np.array([sims])
    got_k, got_lam = PNCF(epsilon=epsilon, rho=rho).truncation(sims, np.array([sims.shape[1]]), k,
                                                   np.array([rs]))
    assert got_k[0] == sim_k
    assert got_lam[0] == pytest.approx(lam, rel=1e-12)


def test_pncf_perturbation_scale_is_two_rs_over_epsilon():
    for epsilon, rs in [(1.0, 0.25), (2.0, 1.0), (0.5, 0.125)]:  # grid-aligned: exact
        assert PNCF(epsilon=epsilon).noise_scale(rs) == 2 * rs / epsilon
    # off the grid, never below (it would overspend)
    assert 2 * 0.3 / 1.0 <= PNCF(epsilon=1.0).noise_scale(0.3) <= 2 * 0.3 * (1 + 2**-19)


class _RecordingNoise(QueryNoise):
    """Query noise that records the streams it was asked for."""

    def __init__(self, *args) -> None:
        super().__init__(*args)
        self.streams: list[int] = []

    def uniform(self, n_draws, stream=0):
        self.streams.append(stream)
        return super().uniform(n_draws, stream)

    def subset(self, rows):
        child = _RecordingNoise(self.seed, tuple(k[rows] for k in self.keys))
        child.streams = self.streams
        return child


@pytest.fixture
def recorded(monkeypatch):
    """The streams of the selectors' exact Gumbel keys (`selectors.base.keyed_gumbel`) and
    of their uniforms (`_RecordingNoise`), in one list."""
    import dprec.selectors.base as base

    noise = _RecordingNoise(3, (np.arange(6),))
    original = base.keyed_gumbel

    def keyed_gumbel(seed, keys, n_draws, stream=0):
        noise.streams.append(stream)
        return original(seed, keys, n_draws, stream)

    monkeypatch.setattr(base, "keyed_gumbel", keyed_gumbel)
    return noise


def test_pncf_stages_draw_from_independent_streams(recorded):
    sims = np.sort(np.random.default_rng(0).random((6, 30)), axis=1)[:, ::-1]
    PNCF(epsilon=1.0).select(sims, np.full(6, 30), 5, recorded, np.full(6, 0.5))
    assert sorted(recorded.streams) == [0, 1]        # selection and perturbation apart


def test_ppns_stages_draw_from_independent_streams(recorded):
    # fewer candidates than the partitions the schedule visits: stage 2 draws again
    sims = np.sort(np.random.default_rng(0).random((6, 12)), axis=1)[:, ::-1]
    PPNS(epsilon=1.0, p=0.5).select(sims, np.full(6, 12), 10, recorded, np.full(6, 0.5))
    assert sorted(recorded.streams) == [0, 1]


def test_pncf_weight_noise_is_independent_of_the_selection():
    """Across many queries, the Laplace noise of a chosen weight is uncorrelated with
    which candidate was chosen (a reused stream would couple them)."""
    n, width, k = 20_000, 8, 2
    sims = np.tile(np.linspace(0.8, 0.1, width), (n, 1))
    selection = PNCF(epsilon=1.0).select(sims, np.full(n, width), k, QueryNoise(5, (np.arange(n),)),
                                 np.full(n, 1.0))
    first = selection.positions[:, 0]
    noise = selection.weights[:, 0] - sims[np.arange(n), first]
    assert abs(stats.spearmanr(first, noise)[0]) < 0.03


# ------------------------------------------------------------------ module constants
def test_uniforms_per_draw_is_what_each_core_consumes():
    values = np.zeros(4)
    for name, call in [
        ("laplace", lambda u: M.laplace_from_uniform(values, 1.0, u)),
        ("gaussian", lambda u: M.gaussian_from_uniform(values, 1.0, u)),
    ]:
        n = M.UNIFORMS_PER_DRAW[name]
        call(np.full((4, n), 0.5))
        with pytest.raises(ValueError):
            call(np.full((4, n + 1), 0.5))
    assert M.UNIFORMS_PER_DRAW["randomized_response"] == 1
    M.randomized_response_from_uniform(np.zeros(4, int), 3, 1.0, np.full(4, 0.5))
    assert M.UNIFORMS_PER_DRAW["discrete_laplace"] == 3
    M.discrete_laplace_from_uniform(np.full((4, 3), 0.5), 2.0)
    assert M.UNIFORMS_PER_DRAW["exponential_top_k"] == 1


def test_the_smallest_uniform_is_positive_and_tiny():
    class Zeros:
        def random(self, shape=None, out=None):
            if out is not None:
                out[...] = 0.0
                return out
            return np.zeros(shape)

    u = M.common.open_uniform(Zeros(), 5)
    assert (u > 0).all() and (u <= 2.0**-53).all()


def test_exponential_epsilon_defaults_to_one_draw():
    # ε = 2·k·Δ·c: one draw (k = 1) unless told otherwise
    assert M.exponential_epsilon(0.25, 2.0) == 1.0
    assert M.exponential_epsilon(0.25, 2.0, k=3) == 3.0


def test_lattice_laplace_reads_the_low_bits_of_its_first_uniform():
    # with u1 < 2**-53 the fine uniform (⌊2**53 u1⌋ + u1_low)·2**-53 is u1_low·2**-53 alone:
    # the noise lies in the far tail, set by u1_low (column 1), never by u2 (column 2)
    tiny = 2.0**-60
    noise = M.laplace_from_uniform(np.zeros(3), 1.0, np.array([[tiny, 0.2, 0.7],
                                                               [tiny, 0.9, 0.7],
                                                               [tiny, 0.9, 0.2]]))
    # scale 1: |noise| has the integer part of -ln(u_fine), 38.3 (u1_low = 0.2) and
    # 36.8 (u1_low = 0.9); the top bit of u2 gives the sign
    tail = np.floor(-np.log(np.array([0.2, 0.9, 0.9]) * 2.0**-53))
    assert np.array_equal(np.floor(np.abs(noise)), tail)
    assert np.array_equal(np.sign(noise), [-1.0, -1.0, 1.0])


def test_gumbel_top_k_on_wide_rows_is_the_order_of_the_keys():
    # ε = 1, Δ = 1, k = 40: coefficient ε / (2kΔ) = 1/80; keys c·q − ln(−ln u) by hand
    rng = np.random.default_rng(6)
    scores, u = 10 * rng.random((30, 3000)), rng.random((30, 3000))
    keys = scores / 80 - np.log(-np.log(u))
    got = M.gumbel_top_k_from_uniform(scores, 40, 1.0, 1.0, u)
    np.testing.assert_array_equal(got, np.argsort(-keys, axis=1)[:, :40])


def test_gumbel_keys_ignore_masked_scores_even_when_not_finite():
    keys = M.gumbel_keys_from_uniform([np.nan, 1.0], 1.0, [0.5, 0.5], mask=[False, True])
    assert keys[0] == -np.inf and np.isfinite(keys[1])
