"""Partition selection (`dprec.mechanisms.partition_selection`): the noises' tails against
exact enumeration, the threshold's δ, contribution bounding, and the selection's privacy
claim audited exactly on the smallest neighbouring pair (an item with one unit)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dprec.mechanisms.partition_selection import (
    cap_contributions,
    log_noise_tail,
    noise_tail,
    selection_delta,
    threshold_steps,
)


def exact_tail(noise: str, scale: float, steps: int) -> float:
    """P(Z >= steps) by enumeration (the mass beyond 60 scales is below 1e-25)."""
    z = np.arange(-int(60 * scale) - 60, int(60 * scale) + 61, dtype=np.float64)
    weights = np.exp(-z**2 / (2 * scale**2)) if noise != "laplace" else np.exp(-np.abs(z) / scale)
    return float(weights[z >= steps].sum() / weights.sum())


@pytest.mark.parametrize("noise", ["gaussian", "laplace", "subgaussian"])
@pytest.mark.parametrize("scale", [0.3, 1.0, 2.5, 7.0])
@pytest.mark.parametrize("steps", [1, 2, 5, 13])
def test_the_tails_bound_the_exact_ones(noise, scale, steps):
    exact = exact_tail(noise, scale, steps)
    bound = noise_tail(noise, scale, steps)
    assert exact <= bound * (1 + 1e-12)
    if noise == "laplace":                       # exact, not only a bound
        assert bound == pytest.approx(exact, rel=1e-9)
    elif noise == "gaussian" and scale >= 2.5:   # and one step from the exact one
        assert bound <= exact_tail(noise, scale, steps - 2)


def test_the_selection_delta_is_k_tails_below_the_units_signal():
    tail = noise_tail("laplace", 2.0, 9 - 3)
    assert selection_delta("laplace", 2.0, 9, max_partitions=7, signal=3) == \
        pytest.approx(7 * tail)
    assert selection_delta("gaussian", 1.0, 4, max_partitions=1, signal=3) == \
        noise_tail("gaussian", 1.0, 1)
    assert selection_delta("gaussian", 1.0, 3, max_partitions=1, signal=3) == 1.0   # at w
    assert selection_delta("gaussian", 1.0, 2, max_partitions=10**6, signal=0) == 1.0


@pytest.mark.parametrize("noise", ["gaussian", "laplace"])
@pytest.mark.parametrize("delta", [1e-3, 1e-5, 1e-9])
def test_the_threshold_is_the_smallest_within_delta(noise, delta):
    m = threshold_steps(noise, 40.0, delta, max_partitions=100, signal=5)
    assert selection_delta(noise, 40.0, m, max_partitions=100, signal=5) <= delta
    assert selection_delta(noise, 40.0, m - 1, max_partitions=100, signal=5) > delta


RNG = np.random.default_rng(0)
BAD = [
    ("threshold_steps", lambda: threshold_steps("gaussian", 1.0, 0.0, max_partitions=1,
                                                signal=0), "delta"),
    ("threshold_steps", lambda: threshold_steps("gaussian", 1.0, 1.0, max_partitions=1,
                                                signal=0), "delta"),
    ("threshold_steps", lambda: threshold_steps("gaussian", 0.0, 1e-5, max_partitions=1,
                                                signal=0), "scale"),
    ("threshold_steps", lambda: threshold_steps("uniform", 1.0, 1e-5, max_partitions=1,
                                                signal=0), "noise"),
    ("threshold_steps", lambda: threshold_steps("laplace", 1.0, 1e-5, max_partitions=1,
                                                signal=-1), "signal"),
    ("threshold_steps", lambda: threshold_steps("laplace", 1.0, 1e-5, max_partitions=0,
                                                signal=0), "max_partitions"),
    ("selection_delta", lambda: selection_delta("laplace", 1.0, 5, max_partitions=0,
                                                signal=0), "max_partitions"),
    # a negative signal, or a threshold of 0 steps, would otherwise pass: 5 - (-1) >= 1,
    # and 0 - 0 < 1 returns δ = 1
    ("selection_delta", lambda: selection_delta("laplace", 1.0, 5, max_partitions=1,
                                                signal=-1), "signal"),
    ("selection_delta", lambda: selection_delta("laplace", 1.0, 0, max_partitions=1,
                                                signal=0), "steps"),
    ("log_noise_tail", lambda: log_noise_tail("uniform", 1.0, 1), "noise"),
    ("log_noise_tail", lambda: log_noise_tail("laplace", 0.0, 1), "scale"),
    ("log_noise_tail", lambda: log_noise_tail("laplace", math.inf, 1), "scale"),
    # steps = 0 has a finite formula for every noise: only the check stops it
    ("log_noise_tail", lambda: log_noise_tail("laplace", 1.0, 0), "steps"),
    ("log_noise_tail", lambda: log_noise_tail("gaussian", 1.0, 0), "steps"),
    ("cap_contributions", lambda: cap_contributions(np.zeros(3, dtype=int), 0, RNG), "cap"),
]


@pytest.mark.parametrize(("call", "name"), [case[1:] for case in BAD],
                         ids=[f"{case[0]}-{case[2]}-{n}" for n, case in enumerate(BAD)])
def test_bad_arguments_are_named(call, name):
    # as everywhere (tests/test_arguments.py): a ValueError whose message starts with the
    # parameter's name
    with pytest.raises(ValueError) as info:
        call()
    assert str(info.value).startswith(f"{name} must be"), str(info.value)


@pytest.mark.parametrize("noise", ["gaussian", "laplace", "subgaussian"])
@pytest.mark.parametrize("signal", [0, 3])
def test_a_delta_met_exactly_is_met_by_the_threshold(noise, signal):
    """δ(m) ≤ δ includes equality: with the target set to δ(m) itself, the threshold is m
    (found by the first bracket, m = w + 1, or by the bisection after it), not m + 1."""
    for m in range(signal + 1, signal + 12):
        delta = selection_delta(noise, 2.0, m, max_partitions=1, signal=signal)
        below = 1.0 if m - 1 <= signal else selection_delta(noise, 2.0, m - 1,
                                                             max_partitions=1, signal=signal)
        assert 0.0 < delta < below
        assert threshold_steps(noise, 2.0, delta, max_partitions=1, signal=signal) == m


@pytest.mark.parametrize("scale", [0.7, 3.0, 40.0])
@pytest.mark.parametrize("steps", [1, 2, 6, 25])
def test_each_tail_is_its_formula(scale, steps):
    """The values, not only bounds: Φ̄((m−1)/σ) by scipy's normal tail, q^m/(1+q) by the
    geometric sums Σ_{z≥m} q^z / Σ_z q^|z|, and Chernoff's e^{−m²/2σ²}."""
    from scipy.stats import norm

    x = (steps - 1) / scale
    assert log_noise_tail("gaussian", scale, steps) == pytest.approx(norm.logsf(x), rel=1e-12,
                                                                     abs=1e-12)
    q = math.exp(-1.0 / scale)
    laplace = (q**steps / (1 - q)) / ((1 + q) / (1 - q))
    assert noise_tail("laplace", scale, steps) == pytest.approx(laplace, rel=1e-12)
    assert log_noise_tail("subgaussian", scale, steps) == pytest.approx(
        -steps**2 / (2 * scale**2), rel=1e-12)


@pytest.mark.parametrize("x", [37.5, 40.0, 100.0, 1e3, 1e5])
def test_beyond_erfc_the_gaussian_tail_is_mills_bound(x):
    """Beyond erfc's range (tails below 1e-300) the bound is φ(x)/x, between the exact tail
    Φ̄(x) and Φ̄(x)/(1 − 1/x²) (Φ̄(x) ≥ φ(x)(1/x − 1/x³)); scipy's log_ndtr is the exact
    log tail."""
    from scipy.special import log_ndtr

    exact = float(log_ndtr(-x))
    bound = log_noise_tail("gaussian", 1.0 / x, 2)          # x = (2 − 1) / (1/x)
    rounding = 1e-14 * abs(exact)                          # the logs are of order −x²/2
    assert exact - rounding <= bound <= exact - math.log1p(-1.0 / x**2) + rounding
    assert bound < math.log(1e-300)


def test_the_gaussian_bound_never_rises_where_erfc_hands_over_to_mills():
    """Regression: φ(x)/x is above the tail by 1 + 1/x² ≈ 1.0007 where it takes over
    (x ≈ 37.05); with σ = 10⁶ steps, x moves 1e-6 a step and the tail falls only 0.004 %
    a step, so the bound rose by 0.07 % there and then fell again for ~20 steps, and the
    bisection returned a threshold 19 steps above the smallest (at δ = 1.0003e-300).  It
    is capped at 1e-300 now: non-increasing, still above the exact tail."""
    from scipy.special import log_ndtr

    scale = 1e6
    around = range(37_047_080, 37_047_130)
    logs = [log_noise_tail("gaussian", scale, m) for m in around]
    assert all(b <= a for a, b in zip(logs, logs[1:]))
    assert all(log >= log_ndtr(-(m - 1) / scale) - 1e-9 for m, log in zip(around, logs))
    for delta in (1.0003e-300, 1.00005e-300):
        m = threshold_steps("gaussian", scale, delta, max_partitions=1, signal=0)
        within = [n for n in around
                  if selection_delta("gaussian", scale, n, max_partitions=1, signal=0) <= delta]
        assert around[0] < m == within[0]


def test_the_smallest_delta_still_has_a_threshold():
    m = threshold_steps("laplace", 1.0, 1e-300, max_partitions=10**9, signal=1)
    assert selection_delta("laplace", 1.0, m, max_partitions=10**9, signal=1) <= 1e-300


def test_the_cap_keeps_at_most_cap_entries_per_row_uniformly():
    rows = np.repeat([0, 1, 2], [5, 2, 9])
    rng = np.random.default_rng(0)
    kept = cap_contributions(rows, 3, rng)
    assert np.bincount(rows[kept]).tolist() == [3, 2, 3]
    counts = np.zeros(9)
    for _ in range(3000):
        counts += cap_contributions(rows, 3, rng)[rows == 2]
    assert np.allclose(counts / 3000, 3 / 9, atol=0.04)          # every entry alike
    none = np.zeros(0, dtype=int)
    kept = cap_contributions(none, 2, rng)     # no entries: an empty mask, still a mask
    assert kept.dtype == bool and kept.shape == (0,) and none[kept].shape == (0,)


@pytest.mark.parametrize("epsilon_m", [0.3, 1.0, 5.0])
@pytest.mark.parametrize("noise", ["gaussian", "laplace"])
def test_the_selection_of_an_item_with_one_unit_is_within_its_claim(noise, epsilon_m):
    """Exact audit of the smallest case: D has an item whose only unit contributes weight
    w (one step) next to a common item; D' lacks it.  The release is each item's weight
    plus noise, thresholded; we enumerate the distribution of the sole item's presence
    and of the common item's noisy value and check (ε, δ)-DP for every event: the
    hockey-stick divergence at e^ε is within δ_M + selection_delta."""
    scale = 3.0
    z = np.arange(-200, 201)
    p = np.exp(-z**2 / (2 * scale**2)) if noise == "gaussian" else np.exp(-np.abs(z) / scale)
    p /= p.sum()
    m = threshold_steps(noise, scale, 1e-3, max_partitions=1, signal=1)
    # common item: value 1 in D and 0 in D' (the unit contributes to it too)
    common_d, common_d2 = np.roll(p, 1), p
    # sole item: present in D with value 1, absent in D'
    sole_released = float(p[z >= m - 1].sum())
    d = np.concatenate([common_d * (1 - sole_released), common_d * sole_released])
    d2 = np.concatenate([common_d2, np.zeros_like(common_d2)])
    # the pair's divergence at e^ε for the release without the sole item (M*'s common part)
    def hockey(a, b, eps):
        return float(np.maximum(a - math.exp(eps) * b, 0).sum())
    delta_m = max(hockey(common_d, common_d2, epsilon_m), hockey(common_d2, common_d, epsilon_m))
    added = selection_delta(noise, scale, m, max_partitions=1, signal=1)
    assert max(hockey(d, d2, epsilon_m), hockey(d2, d, epsilon_m)) <= delta_m + added + 1e-15
    # and the threshold is what keeps it there: no threshold leaks
    d_open = np.concatenate([common_d * (1 - float(p[z >= 0].sum())),
                             common_d * float(p[z >= 0].sum())])
    assert max(hockey(d_open, d2, epsilon_m), hockey(d2, d_open, epsilon_m)) > delta_m + 0.1


@pytest.mark.parametrize("noise", ["gaussian", "laplace"])
def test_far_tails_never_underflow_to_zero(noise):
    """A tail of 0 would state δ = 0: far out, the bound stays positive and decreasing."""
    tails = [noise_tail(noise, 1.0, m) for m in (10, 30, 37)]
    logs = [log_noise_tail(noise, 1.0, m) for m in (30, 100, 1000)]
    assert all(t > 0 for t in tails) and tails == sorted(tails, reverse=True)
    assert logs == sorted(logs, reverse=True) and math.isfinite(logs[-1])
    if noise == "gaussian":              # the Mills bound meets erfc where they hand over
        x = 36.0
        assert log_noise_tail(noise, 1.0, 38) < math.log(0.5 * math.erfc(x / math.sqrt(2)))


def test_a_weighted_sum_of_discrete_gaussians_is_within_its_sub_gaussian_tail():
    """The combination of two releases (`DPBaseline.fit_part`'s `more`): c1 Z1 + c2 Z2 by
    exact convolution, against exp(-t²/2σ²) with σ² = c1²σ1² + c2²σ2²."""
    s1, s2 = 2.0, 3.0
    c1 = s2**2 / (s1**2 + s2**2)
    z = np.arange(-80, 81)
    p1, p2 = np.exp(-z**2 / (2 * s1**2)), np.exp(-z**2 / (2 * s2**2))
    p1, p2 = p1 / p1.sum(), p2 / p2.sum()
    values = (c1 * z[:, None] + (1 - c1) * z[None, :]).ravel()
    mass = (p1[:, None] * p2[None, :]).ravel()
    sigma = math.hypot(c1 * s1, (1 - c1) * s2)
    for m in (1, 2, 4, 6, 9):
        assert mass[values >= m].sum() <= noise_tail("subgaussian", sigma, m)
