"""The discrete Laplace sampler exact at every scale (`dprec.mechanisms.exact_laplace`), and
the lattice Laplace built on it: its law, every output reachable, each level's resolution.

Regressions (#33, the class of finding 4, found by an independent audit of the samplers):
the three-uniform core could not produce |Z| beyond ~75 scales (so at ε ≳ 75 per coordinate
an output possible under one input was impossible under its neighbour), drew no noise at
all for t < 1/75, and for t > 2^21 left values of the offset with probability 0
(`DPItemKNN(grid_bits=12)` at ε = 0.1: infinite privacy loss while its report said holds).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from strategies import TailDraws, raises_naming

from dprec import DPItemKNN, datasets
from dprec import mechanisms as M
from dprec.mechanisms import exact_laplace as X


def _pmf(z: np.ndarray, t: float) -> np.ndarray:
    q = math.exp(-1.0 / t)
    return (1 - q) / (1 + q) * q ** np.abs(z)


@pytest.mark.parametrize("t", [0.3, 1.0, 3.5])
def test_small_scales_have_the_discrete_laplace_law(t):
    z = M.discrete_laplace(np.zeros(200_000), t, np.random.default_rng(3))
    support = np.arange(-12, 13)
    counts = np.array([(z == v).sum() for v in support])
    expected = _pmf(support, t) * len(z)
    keep = expected > 5
    counts, expected = counts[keep], expected[keep]
    expected *= counts.sum() / expected.sum()
    assert stats.chisquare(counts, expected).pvalue > 1e-4


@pytest.mark.parametrize("t", [2.0**20 + 3, 2.0**31.5, 2.0**41.5])
def test_large_scales_have_the_laplace_law_and_no_gaps_in_the_low_digits(t):
    z = M.discrete_laplace(np.zeros(100_000), t, np.random.default_rng(4))
    assert stats.kstest(z / t, "laplace").pvalue > 1e-3
    assert stats.chisquare(np.bincount((np.abs(z) % 8).astype(int), minlength=8)).pvalue > 1e-4


def test_no_noise_was_drawn_below_t_1_75_now_every_integer_is_reachable():
    t = 1 / 80                                           # P(Z != 0) = 3.6e-35
    log_nonzero = math.log(2) - 1 / t - math.log1p(math.exp(-1 / t))
    w = math.exp(log_nonzero) / 4                        # ln U below the zero test
    z = M.discrete_laplace(np.zeros(3), t, TailDraws(w))
    assert (np.abs(z) >= 1).all()
    deep = M.discrete_laplace(np.zeros(2), 2.0, TailDraws(2.0**-600))   # 208 scales out
    assert (np.abs(deep) > 200 * 2.0).all()


def test_the_lattice_laplace_reaches_beyond_75_scales():
    y = M.laplace(np.zeros(2), 1.0, TailDraws(2.0**-300))   # -ln w = 208 scales
    assert (np.abs(y) > 150).all()
    x = np.array([0.3, -2.0])
    y = M.laplace(x, 1.0, np.random.default_rng(5))
    grid = M.laplace_grid(1.0)
    np.testing.assert_array_equal(y / grid, np.round(y / grid))   # on the common grid
    np.testing.assert_array_equal(x, [0.3, -2.0])                  # not modified


#: the two grids of the uniforms: numpy's ``random`` (j 2^-53) and `keyed_uniform`'s
#: ((j + 1/2) 2^-53, rounded: spacing 2^-52 in the upper half), j = 0 .. 2^53 - 1
GRIDS = {"generator": lambda j: j * 2.0**-53,
         "keyed": lambda j: min((j + 0.5) * 2.0**-53, 1.0 - 2.0**-53)}


def _realised(level_log_ratio: float, size: int, b: int, grid) -> float:
    """P(digit = b) for a uniform on ``grid`` (the inversion is monotone)."""
    def first_at_least(value):                       # smallest j whose digit is >= value
        lo, hi = 0, 2**53
        while lo < hi:
            mid = (lo + hi) // 2
            digit = X._truncated_geometric(np.array([grid(mid)]), level_log_ratio, size)
            lo, hi = (mid + 1, hi) if digit[0] < value else (lo, mid)
        return lo
    return (first_at_least(b + 1) - first_at_least(b)) * 2.0**-53


@pytest.mark.parametrize("grid", sorted(GRIDS))
@pytest.mark.parametrize("t", [3.7, 2.0**20 * 1.5, 2.0**21, 2.0**21 + 1, 2.0**31.5, 2.0**42])
def test_every_digit_of_the_offset_keeps_its_probability(t, grid):
    """The exact probability each level's inversion gives a value (counting grid points),
    against the truncated geometric: within a relative 2^-29, at both ends and inside."""
    levels = X._levels(t)
    assert all(size <= X.LEVEL for _, size in levels) and len(levels) <= 2
    assert levels[-1][0] * levels[-1][1] >= t
    for unit, size in levels:
        log_ratio = -unit / t
        ratio = math.exp(log_ratio)
        for b in sorted({0, 1, size // 2, max(size - 2, 0), size - 1}):
            ideal = (1 - ratio) * ratio**b / (1 - ratio**size)
            assert _realised(log_ratio, size, b, GRIDS[grid]) == pytest.approx(ideal,
                                                                               rel=2.0**-29)


def test_the_cores_check_their_arguments():
    raises_naming(lambda: M.discrete_laplace(np.zeros(2), 2.0**43, 0), "t")
    raises_naming(lambda: M.discrete_laplace(np.zeros(2), 1e-19, 0), "t")
    raises_naming(lambda: M.randomized_response(np.zeros(2, np.int64), 3, 2e18, 0), "epsilon")
    raises_naming(lambda: X.discrete_laplace_from_log_uniform(np.ones(2), np.full((2, 2), .5),
                                                              3.0), "log_uniforms")
    raises_naming(lambda: X.discrete_laplace_from_log_uniform(np.zeros(2), np.full((2, 3), .5),
                                                              3.0), "uniforms")
    raises_naming(lambda: M.laplace_from_log_uniform(np.zeros(2), 1.0, np.zeros(3),
                                                     np.full((2, 2), .5)), "log_uniforms")
    assert X.discrete_laplace_uniforms(2.0**21) == 2 and X.discrete_laplace_uniforms(2.0**22) == 3


def test_a_noise_scale_beyond_the_sampler_is_refused_naming_the_parameters_and_changes_nothing():
    trainset = datasets.synthetic(30, 20, 300, random_state=1).build_full_trainset()
    with pytest.raises(ValueError, match="grid_bits"):
        DPItemKNN(epsilon=0.001, grid_bits=12, mechanism="laplace").fit(trainset)  # > 2^42
    model = DPItemKNN(epsilon=1.0, k=3, mechanism="laplace").fit(trainset)
    before, text = model.test([("0", "1", 3.0)]), str(model.privacy_report())
    other = datasets.synthetic(25, 30, 300, random_state=2).build_full_trainset()
    model.epsilon, model.grid_bits = 0.001, 12
    with pytest.raises(ValueError, match="grid_bits"):
        model.fit(other)
    assert model.trainset is not other and str(model.privacy_report()) == text
    assert model.test([("0", "1", 3.0)]) == before                 # still the first fit
