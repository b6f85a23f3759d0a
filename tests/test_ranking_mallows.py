"""Ranking DP privatizers: exact privacy by enumeration, sampler laws, utility.

Privacy is checked on the exact output law, enumerated over all ``m!``
outputs: for Mallows from its definition (``exp(θT)`` normalised by explicit
summation), for Laplace by numerical integration
(:func:`laplace_order_probabilities`, accurate to ~1e-13, itself checked
against the closed-form pair marginals and against sampling).  Both
mechanisms are equivariant under relabelling the items, so checking the
identity input against each of its ``m(m-1)/2`` swap-neighbours covers every
neighbouring pair; ``test_equivariance_all_inputs`` checks that directly for
m = 4.
"""

from __future__ import annotations

import copy
import itertools
import math
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats
from strategies import fuzz, orders_lists, raises_naming

from dprec.mechanisms import common
from dprec.ranking import (
    concordant_pairs,
    laplace_expected_concordant,
    laplace_order_probabilities,
    laplace_privatize,
    mallows_expected_concordant,
    mallows_log_normaliser,
    mallows_privatize,
    mallows_theta,
)
from dprec.ranking.mallows import insertion_positions, truncated_geometric


# ---------------------------------------------------------------- helpers
def _outputs(m: int) -> np.ndarray:
    return np.array(list(itertools.permutations(range(m))), dtype=np.int64)


def _concordant(outputs: np.ndarray, reference: np.ndarray) -> np.ndarray:
    ranks = np.argsort(reference)[outputs]
    m = outputs.shape[1]
    upper = np.triu(np.ones((m, m), dtype=bool), 1)
    return ((ranks[:, :, None] < ranks[:, None, :]) & upper).sum(axis=(1, 2))


def _mallows_log_pmf(outputs: np.ndarray, reference: np.ndarray, theta: float) -> np.ndarray:
    """The definition: exp(θ T) normalised by summing over every output."""
    x = theta * _concordant(outputs, reference)
    return x - (x.max() + np.log(np.exp(x - x.max()).sum()))


def _swap_neighbours(m: int) -> list[np.ndarray]:
    out = []
    for a, b in itertools.combinations(range(m), 2):
        s = np.arange(m)
        s[[a, b]] = s[[b, a]]
        out.append(s)
    return out


def _max_loss_mallows(m: int, theta: float) -> float:
    outputs = _outputs(m)
    base = _mallows_log_pmf(outputs, np.arange(m), theta)
    return max(np.abs(base - _mallows_log_pmf(outputs, s, theta)).max()
               for s in _swap_neighbours(m))


def _frequencies(samples: np.ndarray, outputs: np.ndarray) -> np.ndarray:
    m = outputs.shape[1]
    code = samples @ (m ** np.arange(m))
    table = outputs @ (m ** np.arange(m))
    index = np.searchsorted(np.sort(table), code)
    counts = np.bincount(index, minlength=len(table))
    return counts[np.argsort(np.argsort(table))]


def _check_law(samples: np.ndarray, outputs: np.ndarray, probs: np.ndarray) -> None:
    """Chi-square (p > 1e-4) and TV below twice its expected size under H0."""
    n = len(samples)
    counts = _frequencies(samples, outputs)
    assert counts.sum() == n
    tv = 0.5 * np.abs(counts / n - probs).sum()
    expected_tv = np.sum(np.sqrt(probs * (1 - probs) / (2 * np.pi * n)))
    assert tv < 2 * expected_tv, (tv, expected_tv)
    assert stats.chisquare(counts, probs * n).pvalue > 1e-4


# ---------------------------------------------------------------- building blocks
def test_insertion_positions_match_list_insert():
    rng = np.random.default_rng(1)
    lengths = [0, 1, 2, 3, 7, 8, 9, 33, 64, 100]
    codes = np.concatenate([[rng.integers(0, t + 1) for t in range(m)] for m in lengths]
                           ).astype(np.int64)
    owner = np.repeat(np.arange(len(lengths)), lengths)
    rank = np.concatenate([np.arange(m) for m in lengths]).astype(np.int64)
    pos = insertion_positions(codes, owner, rank)
    start = 0
    for m in lengths:
        order: list[int] = []
        for t in range(m):
            order.insert(int(codes[start + t]), t)
        expected = np.empty(m, dtype=np.int64)
        expected[order] = np.arange(m)
        np.testing.assert_array_equal(pos[start:start + m], expected)
        start += m


@pytest.mark.parametrize("n,theta", [(1, 0.3), (4, 1e-12), (6, 0.7), (10, 2.5)])
def test_truncated_geometric_law(n, theta):
    rng = np.random.default_rng(2)
    size = 60_000
    v = truncated_geometric(common.log_uniform(rng, size), np.full(size, n), np.full(size, theta))
    assert v.min() >= 0 and v.max() <= n - 1
    p = np.exp(-theta * np.arange(n))
    p /= p.sum()
    counts = np.bincount(v, minlength=n)
    if n > 1:
        assert stats.chisquare(counts, p * size).pvalue > 1e-4


def test_truncated_geometric_infinite_theta_is_zero():
    log_u = np.array([-1e6, -0.7, -1e-300, -0.0])
    np.testing.assert_array_equal(truncated_geometric(log_u, np.full(4, 5), np.full(4, np.inf)),
                                  0)


def test_a_vanishing_theta_is_the_uniform_law_without_warnings():
    """θ below 1e-200 (ε = 5e-324 is a valid budget) is drawn as θ = 1e-200: uniform."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        v = truncated_geometric(np.log([0.9, 0.6, 0.3, 1e-9]), np.full(4, 4), np.zeros(4))
        out = mallows_privatize(np.tile(np.arange(3), (30_000, 1)), 5e-324, 0)
    assert v.tolist() == [0, 1, 2, 3]               # V = floor(n (1 − U))
    counts = np.unique(out, axis=0, return_counts=True)[1]
    assert len(counts) == 6 and stats.chisquare(counts).pvalue > 1e-4


def test_truncated_geometric_takes_the_log_of_a_uniform():
    with pytest.raises(ValueError, match="log_u"):
        truncated_geometric(np.array([0.5]), np.array([3]), np.array([1.0]))  # u, not ln u
    with pytest.raises(ValueError, match="log_u"):
        truncated_geometric(np.array([np.nan]), np.array([3]), np.array([1.0]))


def test_truncated_geometric_far_tail_from_extreme_log_uniforms():
    """Regression (#33): at θ = 40-50 the last value needs ln U below −θ(n−1), which no
    53-bit uniform reaches (ln U ≥ −36.7); given such an ln U, the inverse CDF returns it."""
    for theta in (40.0, 50.0):
        threshold = -theta - math.log1p(math.exp(-theta))      # ln P(V = 1), n = 2
        v = truncated_geometric(np.array([threshold - 1e-9, threshold + 1e-9, -36.7]),
                                np.full(3, 2), np.full(3, theta))
        assert v.tolist() == [1, 0, 0]
    v = truncated_geometric(np.array([-3000.0, -1e5]), np.array([4, 11]), np.array([140.0, 700.0]))
    assert v.tolist() == [3, 10]
    # up to MALLOWS_MAX_EPSILON = 1e18 the needed ln U is a float the words can give
    v = truncated_geometric(np.array([-1.01e18, -0.99e18]), np.full(2, 2), np.full(2, 1e18))
    assert v.tolist() == [1, 0]


def _largest_below(f, t, lo, hi):
    """The largest float x in [lo, hi] with f(x) <= t (f non-decreasing), vectorised over t."""
    lo = np.broadcast_to(np.asarray(lo, np.float64), np.shape(t)).view(np.int64).copy()
    hi = np.broadcast_to(np.asarray(hi, np.float64), np.shape(t)).view(np.int64).copy()
    while (hi > lo).any():                          # positive floats: bits in float order
        mid = lo + (hi - lo + 1) // 2
        ok = f(mid.view(np.float64)) <= t
        lo, hi = np.where(ok, mid, lo), np.where(ok, hi, mid - 1)
    return lo.view(np.float64)


def test_log_uniform_implied_law_is_exact_in_both_tails():
    """The law of ln U implied by the word construction, by bisection over every value
    W = min(U, 1 − U) the words can give: P(W <= w) = 2 nextafter(w, 1) for such w."""
    def lower(w):
        return common.log_uniform_from_words(*common.words_for(w, False))

    def upper(w):                                   # decreasing in w: negate
        return -common.log_uniform_from_words(*common.words_for(w, True))

    tiny, half = 2.0**-1022, np.nextafter(0.5, 0)
    t = np.array([-700.0, -200.0, -45.0, -40.0, -9.01, -9.0, -1.0, -0.70])
    w = _largest_below(lower, t, tiny, half)
    implied = np.log(np.nextafter(w, 1))            # P(U = W <= w) = nextafter(w, 1)
    np.testing.assert_allclose(implied, t, rtol=2**-50, atol=2**-51)
    t = -np.array([0.69, 0.3, 1e-3, 2**-14, 1e-20, 1e-100, 1e-300])
    w = _largest_below(upper, -t, tiny, half)       # the largest w with ln(1 - w) >= t
    w = np.nextafter(w, 1)                          # the smallest with ln(1 - w) < t
    implied_sf = np.log(w)                          # P(ln U > t) = P(1 − W > e^t) = w
    np.testing.assert_allclose(implied_sf, np.log(-np.expm1(t)), rtol=2**-48)


def _code_log_probability(theta: float, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Every order of m items and its log-probability under the sampler, read off its
    inverse CDF: the thresholds τ_j = sup{ln u : V >= j} found by bisection, so that
    P(V = j) = e^{τ_j} − e^{τ_{j+1}} under the exact law of ln U."""
    log_p = []
    for t in range(m):
        n = t + 1

        def code(x, n=n):                           # non-decreasing in x = −ln u
            return truncated_geometric(-x, np.full(x.shape, n), np.full(x.shape, theta))

        tau = np.zeros(n + 1)
        tau[n] = -np.inf
        if n > 1:
            j = np.arange(1, n)
            # the smallest x with code(x) >= j is just above the largest with code < j
            x = _largest_below(code, j - 0.5, np.zeros(n - 1), np.full(n - 1, 1e300))
            tau[1:n] = -np.nextafter(x, np.inf)
        with np.errstate(divide="ignore"):
            log_p.append(tau[:-1] + np.log(-np.expm1(tau[1:] - tau[:-1])))
    discordant = np.array(list(itertools.product(*[range(t + 1) for t in range(m)])), np.int64)
    total = sum(log_p[t][discordant[:, t]] for t in range(m))
    owner = np.repeat(np.arange(len(discordant)), m)
    rank = np.tile(np.arange(m), len(discordant))
    codes = rank - discordant.ravel()               # as mallows_privatize inserts them
    pos = insertion_positions(codes, owner, rank).reshape(len(discordant), m)
    orders = np.argsort(pos, axis=1)                # the item at each final position
    return orders, total


@pytest.mark.parametrize("m", [2, 3, 4])
@pytest.mark.parametrize("eps", [0.01, 1.0, 50.0, 700.0])
def test_sampler_implied_law_is_the_mallows_law_by_enumeration(m, eps):
    """Regression (#33): every order's log-probability under the sampler (its inverse CDF
    applied to the exact law of ln U) is the Mallows log-probability, at small, default
    and huge ε (at ε = 50 the reversed order has probability e^-50 at m = 2)."""
    theta = float(mallows_theta(eps, m))
    orders, implied = _code_log_probability(theta, m)
    exact = _mallows_log_pmf(orders, np.arange(m), theta)
    assert np.isfinite(implied).all() and len(np.unique(orders, axis=0)) == math.factorial(m)
    np.testing.assert_allclose(implied, exact, rtol=1e-12, atol=1e-12)
    if eps >= 50:                                   # the far tail, where 53 bits give 0
        assert implied.min() < -49


class _ExtremeDraws(np.random.Generator):
    """Every draw at its extreme: ``random`` gives 0 and 1 − 2^-53 alternately (the
    reach of a 53-bit uniform), ``integers`` the words of W = 2^-120 (lower side)."""

    def __init__(self):
        super().__init__(np.random.PCG64(0))
        self._more = None

    def random(self, size=None, *args, **kwargs):
        return np.resize([0.0, 1 - 2**-53], size)

    def integers(self, low, high=None, size=None, *args, **kwargs):
        if self._more is None:
            words, self._more = common.words_for(np.full(size, 2.0**-120), False)
            self._level = 0
            return words
        self._level += 1
        return self._more(self._level, np.arange(size))


@pytest.mark.parametrize("eps", [40.0, 50.0])
def test_far_tail_order_is_produced_by_the_public_sampler(eps):
    """Regression (#33): at ε = 40-50, m = 2, the reversed order (probability ≈ e^-ε) is
    produced by the extreme draws; with one 53-bit uniform per item it never was."""
    out = mallows_privatize(np.tile([0, 1], (4, 1)), eps, _ExtremeDraws())
    assert (out == [1, 0]).all(axis=1).any()


class _TailConditioned(np.random.Generator):
    """A seeded Generator whose first words are conditioned on the far lower tail:
    W < 2^-(12 + extra) (side bit and 11 head bits cleared, then ``extra`` more zeros)."""

    def __init__(self, seed: int, extra: int):
        super().__init__(np.random.PCG64(seed))
        self.calls, self.extra = 0, extra

    def integers(self, *args, **kwargs):
        words = super().integers(*args, **kwargs)
        self.calls += 1
        if self.calls == 1:
            return words & np.uint64(2**52 - 1)
        left = self.extra - 53 * (self.calls - 2)   # zeros still to force at this level
        if left >= 53:
            return np.zeros_like(words)
        return words >> np.uint64(left) if left > 0 else words


@pytest.mark.parametrize("eps,extra", [(40.0, 45), (50.0, 59)])
def test_far_tail_frequency_matches_its_exact_probability(eps, extra):
    """Regression (#33), seeded: conditioned on W < 2^-(12+extra) (a uniform law on that
    interval), the reversed order of m = 2 appears with probability
    P(U <= e^-ε / (1 + e^-ε)) / 2^-(12+extra), computed in log space."""
    n = 20_000
    out = mallows_privatize(np.tile([0, 1], (n, 1)), eps, _TailConditioned(7, extra))
    hits = int((out == [1, 0]).all(axis=1).sum())
    log_p = -eps - math.log1p(math.exp(-eps)) + (12 + extra) * math.log(2)
    p = math.exp(log_p)
    assert 0.2 < p < 0.8                            # the test has power both ways
    assert stats.binomtest(hits, n, p).pvalue > 1e-4, (hits / n, p)


# ---------------------------------------------------------------- exact privacy
@pytest.mark.parametrize("m", [2, 3, 4, 5, 6])
@pytest.mark.parametrize("eps", [0.5, 2.0])
def test_mallows_enumeration_privacy_loss(m, eps):
    tight = float(mallows_theta(eps, m))
    conservative = float(mallows_theta(eps, m, "conservative"))
    # the tight calibration attains ε exactly; the conservative one stays below
    assert _max_loss_mallows(m, tight) == pytest.approx(eps, rel=1e-9)
    assert _max_loss_mallows(m, conservative) == pytest.approx(eps * (2 * m - 3) / (2 * m),
                                                               rel=1e-9)
    # any larger θ breaks the definition (so ε/(2m-3) is the largest valid one)
    assert _max_loss_mallows(m, tight * 1.01) > eps
    # the extracted Lemma 1, θ = εm/2, is not ε-ranking DP for m >= 3
    if m >= 3:
        assert _max_loss_mallows(m, eps * m / 2) > eps


@pytest.mark.parametrize("m", [3, 5])
def test_mallows_normaliser_closed_form(m):
    theta = 0.37
    outputs = _outputs(m)
    discordant = m * (m - 1) // 2 - _concordant(outputs, np.arange(m))
    direct = np.log(np.exp(-theta * discordant).sum())
    assert mallows_log_normaliser(m, theta) == pytest.approx(direct, rel=1e-12)


def test_equivariance_all_inputs():
    """Every neighbouring pair (not only identity vs swap) has the same worst loss, m = 4."""
    m, eps = 4, 1.0
    theta = float(mallows_theta(eps, m))
    outputs = _outputs(m)
    worst_mallows = worst_laplace = 0.0
    laplace = {tuple(r): np.log(laplace_order_probabilities(m, eps, r)[1]) for r in outputs}
    for ref in outputs:
        for a, b in itertools.combinations(range(m), 2):
            other = ref.copy()
            other[[a, b]] = other[[b, a]]
            loss = np.abs(_mallows_log_pmf(outputs, ref, theta)
                          - _mallows_log_pmf(outputs, other, theta)).max()
            worst_mallows = max(worst_mallows, loss)
            worst_laplace = max(worst_laplace,
                                np.abs(laplace[tuple(ref)] - laplace[tuple(other)]).max())
    assert worst_mallows == pytest.approx(eps, rel=1e-9)
    identity = np.log(laplace_order_probabilities(m, eps)[1])
    from_identity = max(np.abs(identity - np.log(laplace_order_probabilities(m, eps, s)[1])).max()
                        for s in _swap_neighbours(m))
    assert worst_laplace == pytest.approx(from_identity, rel=1e-9)


@pytest.mark.parametrize("m", [2, 3, 4, 5, 6])
@pytest.mark.parametrize("eps", [0.5, 2.0])
def test_laplace_enumeration_privacy_loss(m, eps):
    outputs, base = laplace_order_probabilities(m, eps)
    assert base.sum() == pytest.approx(1.0, abs=1e-12)
    assert base.min() > 0
    # the integration reproduces the closed-form pair marginal (first vs last item)
    lam = 2 * (m - 1) / eps
    g = m - 1
    keep = base[np.argsort(outputs, axis=1)[:, 0] < np.argsort(outputs, axis=1)[:, m - 1]].sum()
    assert keep == pytest.approx(1 - 0.5 * math.exp(-g / lam) * (1 + g / (2 * lam)), abs=1e-12)
    loss = max(np.abs(np.log(base) - np.log(laplace_order_probabilities(m, eps, s)[1])).max()
               for s in _swap_neighbours(m))
    assert loss <= eps + 1e-9
    assert loss > 0.4 * eps  # the bound is not vacuous: the loss is of the order of ε


# ---------------------------------------------------------------- sampler laws
@pytest.mark.parametrize("m,eps", [(4, 1.5), (5, 4.0)])
def test_mallows_sampler_matches_pmf(m, eps):
    items = np.array([17, 3, 42, 8, 0][:m])
    reference = np.arange(m)
    n = 100_000
    draws = mallows_privatize(np.tile(items, (n, 1)), eps, random_state=3)
    # relabel item ids to their rank in the input: outputs over 0..m-1
    samples = np.argsort(items)[np.searchsorted(np.sort(items), draws)]
    outputs = _outputs(m)
    probs = np.exp(_mallows_log_pmf(outputs, reference, float(mallows_theta(eps, m))))
    _check_law(samples, outputs, probs)


def test_laplace_sampler_matches_integrated_law():
    m, eps, n = 4, 2.0, 100_000
    draws = laplace_privatize(np.tile(np.arange(m), (n, 1)), eps, random_state=4)
    outputs, probs = laplace_order_probabilities(m, eps)
    _check_law(draws, outputs, probs)


# ---------------------------------------------------------------- utility (Lemma 4)
@pytest.mark.parametrize("eps", [1.0, 5.0])
def test_mallows_mean_concordance_lemma4(eps):
    m, n = 50, 4000
    draws = mallows_privatize(np.tile(np.arange(m), (n, 1)), eps, random_state=5)
    t = concordant_pairs(np.arange(m), draws)
    mean, var = mallows_expected_concordant(m, float(mallows_theta(eps, m)))
    assert abs(t.mean() - mean) < 4 * math.sqrt(var / n)
    assert t.var() == pytest.approx(var, rel=0.15)


def test_heterogeneous_epsilon_in_one_batch():
    m, n = 50, 3000
    eps = np.repeat([0.5, 10.0], n)
    draws = mallows_privatize([np.arange(m)] * (2 * n), eps, random_state=6)
    t = concordant_pairs(np.arange(m), np.array(draws))
    for k, e in enumerate([0.5, 10.0]):
        mean, var = mallows_expected_concordant(m, float(mallows_theta(e, m)))
        assert abs(t[k * n:(k + 1) * n].mean() - mean) < 4 * math.sqrt(var / n)


@pytest.mark.parametrize("eps", [1.0, 5.0])
def test_laplace_mean_concordance_pairwise_formula(eps):
    m, n = 50, 4000
    draws = laplace_privatize(np.tile(np.arange(m), (n, 1)), eps, random_state=7)
    t = concordant_pairs(np.arange(m), draws)
    se = t.std(ddof=1) / math.sqrt(n)
    assert abs(t.mean() - laplace_expected_concordant(m, eps)) < 4 * se


@pytest.mark.parametrize("mechanism", [mallows_privatize, laplace_privatize])
@pytest.mark.parametrize("eps", [1e9, np.inf])
def test_huge_epsilon_returns_input(mechanism, eps):
    rng = np.random.default_rng(8)
    orders = [rng.permutation(1000)[:m] for m in (0, 1, 2, 5, 80, 300)]
    out = mechanism(orders, eps, random_state=0)
    for a, b in zip(out, orders, strict=True):
        np.testing.assert_array_equal(a, b)


def test_small_epsilon_is_nearly_uniform():
    m, n = 30, 3000
    draws = mallows_privatize(np.tile(np.arange(m), (n, 1)), 1e-6, random_state=9)
    t = concordant_pairs(np.arange(m), draws)
    pairs = m * (m - 1) / 2
    sd = math.sqrt(m * (m - 1) * (2 * m + 5) / 72)  # Kendall's null variance
    assert abs(t.mean() - pairs / 2) < 4 * sd / math.sqrt(n)


# ---------------------------------------------------------------- forms and checks
def test_forms_dtypes_and_no_mutation():
    single = np.array([5, 2, 9, 1], dtype=np.int32)
    matrix = np.array([[0, 1, 2], [2, 1, 0]])
    ragged = [np.array([3, 1, 4, 10]), np.array([7]), np.array([], dtype=np.int64)]
    copies = [single.copy(), matrix.copy(), [a.copy() for a in ragged]]
    for mech in (mallows_privatize, laplace_privatize):
        out = mech(single, 1.0, 0)
        assert isinstance(out, np.ndarray) and out.dtype == np.int32
        assert sorted(out.tolist()) == sorted(single.tolist())
        out = mech(matrix, 1.0, 0)
        assert out.shape == matrix.shape
        assert all(sorted(r) == [0, 1, 2] for r in out.tolist())
        out = mech(ragged, [1.0, 2.0, 3.0], 0)
        assert isinstance(out, list) and [len(a) for a in out] == [4, 1, 0]
        assert sorted(out[0].tolist()) == [1, 3, 4, 10]
        out = mech([4, 2, 8], 1.0, 0)
        assert isinstance(out, np.ndarray) and sorted(out.tolist()) == [2, 4, 8]
        assert mech([], 1.0, 0) == []
    np.testing.assert_array_equal(single, copies[0])
    np.testing.assert_array_equal(matrix, copies[1])
    for a, b in zip(ragged, copies[2], strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("mechanism", [mallows_privatize, laplace_privatize])
def test_seeded_reproducible(mechanism):
    orders = [np.arange(40), np.arange(10)[::-1]]
    a = mechanism(orders, 1.0, random_state=11)
    b = mechanism(orders, 1.0, random_state=11)
    c = mechanism(orders, 1.0, random_state=12)
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    assert not all(np.array_equal(x, y) for x, y in zip(a, c, strict=True))


@pytest.mark.parametrize("mechanism", [mallows_privatize, laplace_privatize])
def test_validation(mechanism):
    order = np.arange(5)
    with pytest.raises(ValueError, match="epsilon"):
        mechanism(order, 0.0, 0)
    with pytest.raises(ValueError, match="epsilon"):
        mechanism(order, -1.0, 0)
    with pytest.raises(ValueError, match="epsilon"):
        mechanism(order, float("nan"), 0)
    with pytest.raises(ValueError, match="epsilon"):
        mechanism([order, order], [1.0, 2.0, 3.0], 0)
    with pytest.raises(ValueError, match="epsilon"):
        mechanism([order, order], [1.0, float("nan")], 0)
    with pytest.raises(TypeError, match="epsilon"):
        mechanism(order, "1", 0)
    with pytest.raises(TypeError, match="orders"):
        mechanism(np.arange(5.0), 1.0, 0)
    with pytest.raises(TypeError, match="orders"):
        mechanism("abc", 1.0, 0)
    with pytest.raises(ValueError, match="orders"):
        mechanism(np.array([1, 2, 1]), 1.0, 0)
    with pytest.raises(ValueError, match="orders"):
        mechanism(np.zeros((2, 2, 2), dtype=int), 1.0, 0)
    with pytest.raises(TypeError, match="random_state"):
        mechanism(order, 1.0, "seed")


def test_calibration_parameter():
    with pytest.raises(ValueError, match="calibration"):
        mallows_privatize(np.arange(4), 1.0, 0, calibration="paper")
    assert float(mallows_theta(1.0, 10)) == pytest.approx(1 / 17)
    assert float(mallows_theta(1.0, 10, "conservative")) == pytest.approx(1 / 20)
    assert float(mallows_theta(1.0, 2)) == pytest.approx(1.0)


# ------------------------------------------------------------------ calibration, pinned
def test_calibration_maps_and_their_edges():
    from dprec.ranking.mallows import laplace_scale, mallows_theta

    np.testing.assert_allclose(mallows_theta([1.0, 2.0], [5, 2]), [1 / 7, 2.0])
    np.testing.assert_allclose(mallows_theta(1.0, 5, calibration="conservative"), 0.1)
    assert mallows_theta(np.inf, 5) == np.inf
    np.testing.assert_allclose(laplace_scale(2.0, [5, 1, 0]), [4.0, 0.0, 0.0])
    assert mallows_theta(np.float64(3.0), np.int64(3)) == 1.0


def test_no_privacy_returns_the_order_and_warns_of_nothing():
    import warnings

    from dprec.ranking import laplace_privatize

    order = np.array([4, 0, 3, 1, 2])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(mallows_privatize(order, np.inf, 0), order)
        huge = mallows_privatize(np.tile(order, (200, 1)), 1e6, 0)    # θ huge: identity
        assert (huge == order).all()
        assert laplace_privatize(order, np.inf, 0).tolist() == order.tolist()
        small = mallows_privatize(np.tile(order, (2000, 1)), 1e-9, 0)  # θ ≈ 0: uniform
    assert sorted(np.unique(small[:, 0]).tolist()) == sorted(order.tolist())


@pytest.mark.parametrize("epsilon, error, match", [
    (np.array([True, False]), TypeError, "^epsilon must be a number or an array"),
    (np.array(["a", "b"]), TypeError, "^epsilon must be a number or an array"),
    (np.array([1.0, np.nan]), ValueError, "^epsilon must not contain NaN"),
    (np.array([1.0, 0.0]), ValueError, r"^epsilon must be > 0 \(inf for no privacy\)"),
    (np.array([1.0, 2.0, 3.0]), ValueError, r"^epsilon must be one number or one per order"),
    (0.0, ValueError, "^epsilon must"),
])
def test_per_order_budgets_are_checked(epsilon, error, match):
    with pytest.raises(error, match=match):
        mallows_privatize([np.arange(3), np.arange(4)], epsilon, 0)


def test_a_zero_dimensional_budget_is_one_number():
    out = mallows_privatize([np.arange(3), np.arange(4)], np.array(1e6), 0)
    assert [o.tolist() for o in out] == [[0, 1, 2], [0, 1, 2, 3]]


# ---------------------------------------------------------------- properties (hypothesis)
@fuzz(200)
@given(orders_lists, st.data(), st.sampled_from(["mallows", "laplace"]))
def test_privatizers_return_permutations(orders, data, mechanism):
    form = data.draw(st.sampled_from(["list", "single", "matrix"]))
    if form == "single":
        orders = orders[0] if orders else np.arange(0, dtype=np.int64)
        n = 1
    elif form == "matrix":
        width = data.draw(st.integers(0, 6))
        rows = data.draw(st.integers(0, 4))
        orders = np.array([data.draw(st.permutations(range(width))) for _ in range(rows)],
                          dtype=np.int64).reshape(rows, width)
        n = rows
    else:
        n = len(orders)
    if data.draw(st.booleans()) or form == "single":
        epsilon = data.draw(st.one_of(st.floats(1e-3, 1e3), st.just(math.inf)))
    else:
        epsilon = data.draw(st.lists(st.one_of(st.floats(1e-3, 1e3), st.just(math.inf)),
                                     min_size=n, max_size=n))
    before = copy.deepcopy(orders)
    seed = data.draw(st.integers(0, 2**32))
    if mechanism == "mallows":
        calibration = data.draw(st.sampled_from(["tight", "conservative"]))
        out = mallows_privatize(orders, epsilon, seed, calibration=calibration)
        again = mallows_privatize(orders, epsilon, seed, calibration=calibration)
    else:
        out = laplace_privatize(orders, epsilon, seed)
        again = laplace_privatize(orders, epsilon, seed)
    pieces_in = [orders] if form == "single" else list(orders)
    pieces_out = [out] if form == "single" else list(out)
    assert len(pieces_out) == len(pieces_in)
    for a, b in zip(pieces_in, pieces_out):
        assert sorted(np.asarray(a).tolist()) == sorted(np.asarray(b).tolist())
        assert np.asarray(b).dtype == np.asarray(a).dtype
    if form == "matrix":
        assert out.shape == orders.shape
    for a, b in zip(pieces_out, [again] if form == "single" else list(again)):
        np.testing.assert_array_equal(a, b)  # same seed, same draw
    if form == "single":
        np.testing.assert_array_equal(orders, before)
    else:
        for a, b in zip(orders, before):
            np.testing.assert_array_equal(a, b)


@fuzz(100)
@given(st.sampled_from(["mallows", "laplace"]), st.sampled_from([
    ("orders", [np.array([1, 2, 1])]),
    ("orders", np.array([0.5, 1.5])),
    ("orders", "abc"),
    ("orders", np.zeros((2, 2, 2), dtype=int)),
    ("orders", [np.array([True, False])]),
    ("epsilon", 0.0), ("epsilon", -1.0), ("epsilon", math.nan), ("epsilon", "1"),
    ("epsilon", [1.0, 2.0, 3.0]), ("epsilon", [1.0, math.nan]), ("epsilon", [1.0, 0.0]),
    ("epsilon", True),
    ("random_state", -1), ("random_state", "x"),
    ("calibration", "paper"),
]))
def test_privatizers_reject_bad_arguments(mechanism, case):
    name, value = case
    kwargs = {"orders": [np.array([3, 1, 2]), np.array([5, 4])], "epsilon": 1.0,
              "random_state": 0}
    if name == "calibration":
        if mechanism == "laplace":
            return
        kwargs["calibration"] = value
    else:
        kwargs[name] = value
    function = mallows_privatize if mechanism == "mallows" else laplace_privatize
    raises_naming(lambda: function(**kwargs), name)


@pytest.mark.parametrize("privatize", [mallows_privatize, laplace_privatize])
def test_privatizers_accept_a_matrix_without_rows(privatize):
    """Regression: a (0, m) matrix of orders raised IndexError."""
    out = privatize(np.zeros((0, 3), dtype=np.int32), 1.0, 0)
    assert out.shape == (0, 3) and out.dtype == np.int32
    assert privatize(np.zeros((2, 0), dtype=np.int64), 1.0, 0).shape == (2, 0)
