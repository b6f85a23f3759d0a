"""Distribution, exact-tail and validation tests of the exponential mechanism's top-k
(dprec.mechanisms): the Gumbel and exponential keys, with the conventions of
test_mechanisms.py (fixed seeds, 5 standard errors or a chi-square p-value above 1e-3)."""

from __future__ import annotations

import itertools
import math
from itertools import permutations

import numpy as np
import pytest
from scipy import integrate, stats
from strategies import raises_naming

from dprec import mechanisms as M
from dprec.utils._rng import keyed_uniform

N = 200_000


# ---------------------------------------------------------- exponential top-k


def _sequential_probabilities(scores, k, epsilon, sensitivity, valid):
    """P(ordered tuple) of k sequential exponential draws, budget ε/k each."""
    weights = np.exp(epsilon / k * np.asarray(scores) / (2 * sensitivity))
    weights = np.where(valid, weights, 0.0)
    probs = {}
    for tup in permutations(np.flatnonzero(valid), k):
        p, left = 1.0, weights.copy()
        for c in tup:
            p *= left[c] / left.sum()
            left[c] = 0.0
        probs[tup] = p
    return probs


def _tuple_counts(chosen, tuples):
    index = {t: i for i, t in enumerate(tuples)}
    counts = np.zeros(len(tuples))
    for t, c in zip(*np.unique(chosen, axis=0, return_counts=True), strict=True):
        counts[index[tuple(int(v) for v in t)]] = c
    return counts


@pytest.mark.parametrize("k", [1, 2])
@pytest.mark.parametrize("use_mask", [False, True])
def test_exponential_top_k_matches_sequential_draws(k, use_mask):
    scores = np.array([0.0, 0.5, 1.0, 2.0, 3.0])
    valid = np.array([True, True, False, True, True]) if use_mask else np.ones(5, bool)
    eps, sens, n = 3.0, 1.0, 100_000
    probs = _sequential_probabilities(scores, k, eps, sens, valid)
    tuples = list(probs)
    rows = np.tile(scores, (n, 1))
    mask = np.tile(valid, (n, 1)) if use_mask else None
    chosen = M.exponential_top_k(rows, k, eps, sens, 4, mask=mask)
    assert chosen.shape == (n, k) and chosen.dtype == np.int64
    assert valid[chosen].all()                       # invalid candidates never chosen
    counts = _tuple_counts(chosen, tuples)
    expected = n * np.array([probs[t] for t in tuples])
    assert stats.chisquare(counts, expected).pvalue > 1e-3
    # power: the same test rejects the budget spent per draw without the 1/k
    # (k=2) or with the 1/2 of the exponential mechanism dropped (k=1)
    wrong = _sequential_probabilities(scores, k, 2 * eps, sens, valid)
    wrong_expected = n * np.array([wrong[t] for t in tuples])
    assert stats.chisquare(counts, wrong_expected).pvalue < 1e-6


def test_exponential_top_k_one_dimensional_and_distinct():
    scores = np.linspace(0, 1, 30)
    chosen = M.exponential_top_k(scores, 10, 1.0, 1.0, 0)
    assert chosen.shape == (10,) and len(set(chosen.tolist())) == 10
    batch = M.exponential_top_k(np.tile(scores, (500, 1)), 30, 1.0, 1.0, 0)
    assert all(sorted(row) == list(range(30)) for row in batch.tolist())
    # a huge budget is the exact top-k, in order
    assert M.exponential_top_k(scores, 3, 1e6, 1.0, 0).tolist() == [29, 28, 27]


def test_gumbel_top_k_from_keyed_uniforms():
    scores = np.random.default_rng(0).random((50, 20))
    u = keyed_uniform(3, np.arange(50), 20)
    first = M.gumbel_top_k_from_uniform(scores, 4, 1.0, 0.1, u)
    assert np.array_equal(first, M.gumbel_top_k_from_uniform(scores, 4, 1.0, 0.1, u))
    part = M.gumbel_top_k_from_uniform(scores[10:12], 4, 1.0, 0.1,
                                       keyed_uniform(3, np.arange(10, 12), 20))
    assert np.array_equal(part, first[10:12])


def test_gumbel_keys_give_independent_draws_from_disjoint_subsets():
    # PPNS-style: one key array per query; the best of {0,1,2} and the best of
    # {3,4,5} are independent exponential-mechanism draws P(j) ∝ exp(c q(j))
    scores = np.array([0.0, 1.0, 2.0, 0.5, 1.5, 3.0])
    c, n = 0.8, 60_000
    u = keyed_uniform(5, np.arange(n), 6)
    keys = M.gumbel_keys_from_uniform(np.tile(scores, (n, 1)), c, u)
    first = np.argmax(keys[:, :3], axis=1)
    second = 3 + np.argmax(keys[:, 3:], axis=1)
    w = np.exp(c * scores)
    p1, p2 = w[:3] / w[:3].sum(), w[3:] / w[3:].sum()
    observed = np.bincount(first * 3 + (second - 3), minlength=9)
    assert stats.chisquare(observed, n * np.outer(p1, p2).ravel()).pvalue > 1e-3
    masked = M.gumbel_keys_from_uniform(scores, c, u[0], mask=scores > 0.7)
    assert np.isneginf(masked[scores <= 0.7]).all() and np.isfinite(masked[scores > 0.7]).all()
    with pytest.raises(ValueError, match="coefficient"):
        M.gumbel_keys_from_uniform(scores, 0.0, u[0])


def test_exponential_privacy_map():
    c = M.exponential_coefficient(1.0, 0.5, k=4)
    assert c == 1.0 / (2 * 4 * 0.5)
    assert M.exponential_epsilon(c, 0.5, k=4) == pytest.approx(1.0)
    # the selectors' weights exp(ε q / (4 k RS)) spend ε / 2
    assert M.exponential_epsilon(2.0 / (4 * 5 * 0.1), 0.1, k=5) == pytest.approx(1.0)


def test_exponential_top_k_rejects_bad_arguments():
    scores = np.zeros((2, 4))
    mask = np.ones((2, 4), bool)
    mask[1, :2] = False
    with pytest.raises(ValueError, match="k=3"):
        M.exponential_top_k(scores, 3, 1.0, 1.0, 0, mask=mask)
    with pytest.raises(ValueError, match="k"):
        M.exponential_top_k(scores, 5, 1.0, 1.0, 0)
    with pytest.raises(ValueError, match="k"):
        M.exponential_top_k(scores, 0, 1.0, 1.0, 0)
    with pytest.raises(TypeError, match="k"):
        M.exponential_top_k(scores, 1.5, 1.0, 1.0, 0)
    with pytest.raises(ValueError, match="epsilon"):
        M.exponential_top_k(scores, 1, 0.0, 1.0, 0)
    with pytest.raises(ValueError, match="sensitivity"):
        M.exponential_top_k(scores, 1, 1.0, -1.0, 0)
    with pytest.raises(TypeError, match="mask"):
        M.exponential_top_k(scores, 1, 1.0, 1.0, 0, mask=np.ones((2, 4)))
    with pytest.raises(ValueError, match="mask"):
        M.exponential_top_k(scores, 1, 1.0, 1.0, 0, mask=np.ones(4, bool))
    with pytest.raises(ValueError, match="scores"):
        M.exponential_top_k([0.0, math.nan], 1, 1.0, 1.0, 0)
    with pytest.raises(ValueError, match="scores"):
        M.exponential_top_k(np.zeros((2, 2, 2)), 1, 1.0, 1.0, 0)
    with pytest.raises(TypeError, match="scores"):
        M.exponential_top_k(["a", "b"], 1, 1.0, 1.0, 0)
    # NaN is fine where the mask excludes it, and the inputs are not modified
    s = np.array([[math.nan, 1.0, 2.0]])
    m = np.array([[False, True, True]])
    s.setflags(write=False)                            # read-only: never written to
    out = M.exponential_top_k(s, 2, 1.0, 1.0, 0, mask=m)
    assert sorted(out[0].tolist()) == [1, 2]
    assert m.tolist() == [[False, True, True]]


# ---------------------------------------------------------- exponential: exact Gumbel tails
_G_SPLIT = -math.log(math.log(2.0))          # G of U = 1/2: below, the lower side decides


def _largest_below(f, t, lo, hi):
    """The largest float x in [lo, hi] with f(x) <= t (f non-decreasing), vectorised over t."""
    lo = np.broadcast_to(np.asarray(lo, np.float64), np.shape(t)).view(np.int64).copy()
    hi = np.broadcast_to(np.asarray(hi, np.float64), np.shape(t)).view(np.int64).copy()
    while (hi > lo).any():                          # positive floats: bits in float order
        mid = lo + (hi - lo + 1) // 2
        ok = f(mid.view(np.float64)) <= t
        lo, hi = np.where(ok, mid, lo), np.where(ok, hi, mid - 1)
    return lo.view(np.float64)


def _gumbel_of(w, upper):
    return M.common.gumbel_from_words(*M.common.words_for(w, upper))


def _implied_log_sf(g):
    """ln P(G > g) under the law the words imply (P(W <= w) = 2 nextafter(w, 1) for every
    value w of W = min(U, 1 − U)), read off the sampler by bisection."""
    g = np.asarray(g, dtype=np.float64)
    tiny, half = 2.0**-1022, np.nextafter(0.5, 0)
    out = np.empty_like(g)
    up = g >= _G_SPLIT
    # upper side, U = 1 − W: G decreases in W; {G >= g} = {W <= w}, P = nextafter(w, 1)
    w = _largest_below(lambda x: -_gumbel_of(x, True), -g[up], tiny, half)
    out[up] = np.log(np.nextafter(w, 1))
    # lower side, U = W: G increases in W; P(G <= g) = nextafter(w, 1)
    w = _largest_below(lambda x: _gumbel_of(x, False), g[~up], tiny, half)
    out[~up] = np.log1p(-np.nextafter(w, 1))
    return out


def test_gumbel_implied_law_is_exact_in_both_tails():
    """Regression (#33): the Gumbel law the sampler implies, in log space, far beyond the
    reach of −ln(−ln u) for a 53-bit u (36.7 above, −3.6 below)."""
    g = np.array([1.0, 5.0, 40.0, 200.0, 700.0])
    np.testing.assert_allclose(_implied_log_sf(g), np.log(-np.expm1(-np.exp(-g))), rtol=1e-13)
    g = np.array([0.3, -1.0, -3.0, -6.0])       # P(G <= g) = exp(−e^{−g}), down to e^-403
    tiny, half = 2.0**-1022, np.nextafter(0.5, 0)
    w = _largest_below(lambda x: _gumbel_of(x, False), g, tiny, half)
    np.testing.assert_allclose(np.log(np.nextafter(w, 1)), -np.exp(-g), rtol=1e-13)


@pytest.mark.parametrize("gap", [1.0, 40.0, 200.0])
def test_exponential_draw_implied_law_at_large_gaps(gap):
    """Regression (#33): two candidates c·Δ = ``gap`` apart; the probability that the
    worse one wins, ∫ f_G(g) P(G > g + gap) dg with the sampler's implied tail, is the
    exponential mechanism's 1 / (1 + e^gap) (Simpson's rule, in log space)."""
    g = np.linspace(-4.0, 45.0, 2001)
    log_f = -g - np.exp(-g)                         # the Gumbel density of the better key
    log_terms = log_f + _implied_log_sf(g + gap)
    weights = integrate.simpson(np.eye(len(g)), x=g)   # Simpson weights, one per node
    implied = np.log(np.sum(weights * np.exp(log_terms - log_terms.max()))) + log_terms.max()
    assert implied == pytest.approx(-np.logaddexp(0.0, gap), rel=1e-7, abs=1e-7)


class _ExtremeDraws(np.random.Generator):
    """Every draw at its extreme, per column: column 0 (the worse candidate) gets the
    largest key of either design (``random``: 1 − 2^-53; ``integers``: U = 1 − 2^-300),
    column 1 the smallest (``random``: 0; ``integers``: U = 2^-300)."""

    def __init__(self):
        super().__init__(np.random.PCG64(0))
        self._more, self._level = None, 0

    def random(self, size=None, *args, **kwargs):
        u = np.zeros(size)
        u[..., 0] = 1 - 2**-53
        return u

    def integers(self, low, high=None, size=None, *args, **kwargs):
        if self._more is None:
            upper = np.zeros(size, bool)
            upper[..., 0] = True
            words, self._more = M.common.words_for(np.full(size, 2.0**-300), upper)
            return words
        self._level += 1
        return self._more(self._level, np.arange(size))


def test_exponential_top_k_draws_a_winner_200_below_the_best():
    """Regression (#33): at c·Δ = 200 the worse of two candidates (probability e^-200) is
    drawn by the extreme keys; with −ln(−ln u) of one 53-bit u it never was."""
    scores = np.tile([0.0, 1.0], (3, 1))                # c = ε / 2 = 200
    assert M.exponential_top_k(scores, 1, 400.0, 1.0, _ExtremeDraws())[:, 0].tolist() == [0] * 3


def test_exponential_keys_far_tail_frequency_matches_its_exact_probability():
    """Regression (#33), seeded: c·Δ = 200, the worse candidate's key drawn from words
    conditioned on the far upper tail, U = 1 − W with W < b = 2^-288 (side bit set, head
    and 276 more bits zero); it wins with probability E[exp(−e^200 W)] = (1 − e^{−x}) / x,
    x = e^200 b (computed in log space; −ln U = W to a relative 1e-80)."""
    n, gap, extra = 20_000, 200.0, 276
    rng = np.random.default_rng(11)
    first = (rng.integers(0, 2**64, n, dtype=np.uint64) & np.uint64(2**52 - 1)
             ) | np.uint64(2**63)

    def more(level, index):
        words = rng.integers(0, 2**64, len(index), dtype=np.uint64)
        left = extra - 53 * (level - 1)
        return np.zeros_like(words) if left >= 53 else words >> np.uint64(max(left, 0))

    gumbel = np.stack([M.common.gumbel_from_words(first, more),
                       M.common.standard_gumbel(rng, n)], axis=1)
    keys = M.exponential.exponential_keys(np.tile([0.0, 1.0], (n, 1)), gap, gumbel)
    hits = int((np.argmax(keys, axis=1) == 0).sum())
    x = math.exp(gap - (12 + extra) * math.log(2))
    p = -math.expm1(-x) / x
    assert 0.2 < p < 0.8
    assert stats.binomtest(hits, n, p).pvalue > 1e-4, (hits / n, p)


@pytest.mark.parametrize("below", [True, False])
def test_uniform_keys_realise_every_winner_only_below_the_spread(below):
    """The bounded core: with the extreme uniforms (2^-54 for the better candidate,
    1 − 2^-53 for the worse) the worse wins iff c·Δ < GUMBEL_UNIFORM_SPREAD."""
    spread = M.exponential.GUMBEL_UNIFORM_SPREAD
    assert spread == pytest.approx(-math.log(2**-53) + math.log(54 * math.log(2)), abs=1e-9)
    gap = spread * (1 - 1e-9) if below else spread * (1 + 1e-9)
    keys = M.gumbel_keys_from_uniform([0.0, gap], 1.0, np.array([1 - 2**-53, 2**-54]))
    assert (keys[0] > keys[1]) == below


def test_exponential_keys_are_c_q_plus_g_and_check_their_arguments():
    scores, gumbel = np.array([0.0, 1.0, np.nan]), np.array([3.0, -1.0, 700.0])
    before = gumbel.copy()
    keys = M.exponential.exponential_keys(scores, 2.0, gumbel, mask=np.array([1, 1, 0], bool))
    np.testing.assert_array_equal(keys, [3.0, 1.0, -np.inf])
    np.testing.assert_array_equal(gumbel, before)      # not modified
    keys_of = M.exponential.exponential_keys
    raises_naming(lambda: keys_of([0.0], 1.0, [1]), "gumbel")
    raises_naming(lambda: keys_of([0.0], 1.0, [1.0, 2.0]), "gumbel")
    raises_naming(lambda: keys_of([0.0], 1.0, [np.inf]), "gumbel")
    raises_naming(lambda: keys_of([0.0], 0.0, [1.0]), "coefficient")
    raises_naming(lambda: keys_of(["a"], 1.0, [1.0]), "scores")
    raises_naming(lambda: keys_of([0.0], 1.0, [1.0], mask=[1]), "mask")


def test_gumbel_cores_reject_bad_words():
    raises_naming(lambda: M.common.gumbel_from_words(np.zeros(3), None), "words")
    raises_naming(lambda: M.common.log_uniform_from_words(
        np.zeros(3, np.uint64), lambda level, index: np.zeros(len(index))), "more")
    raises_naming(lambda: M.common.words_for([0.5], False), "w")


def test_keyed_gumbel_is_one_query_one_draw_also_deep_in_the_tail():
    ids = np.arange(60)
    g = M.common.keyed_gumbel(9, ids, 1000)
    part = M.common.keyed_gumbel(9, ids[[5, 41]], 1000)
    np.testing.assert_array_equal(part, g[[5, 41]])
    assert np.abs(g).max() > 7.5                    # some draws took further words
    assert stats.kstest(g.ravel(), "gumbel_r").pvalue > 1e-3
    assert not np.array_equal(g, M.common.keyed_gumbel(9, ids, 1000, stream=1))



def test_keyed_further_words_take_a_stream_per_level():
    """The rare further words of a keyed draw (levels 1, 2, ...) are keyed by the query,
    the draw and the level: each level on its own stream, so no two levels repeat."""
    first, more = M.common._keyed_words(9, np.arange(50), 4, 0)
    index = np.arange(200)
    levels = [more(level, index) for level in (1, 2, 3)]
    assert all(not np.array_equal(a, b) for a, b in itertools.combinations(levels, 2))
    assert not np.array_equal(levels[0], first.ravel())
    np.testing.assert_array_equal(more(2, index[[7, 150]]), levels[1][[7, 150]])

def test_exact_samplers_are_seeded_and_have_the_standard_laws():
    a = M.common.standard_gumbel(np.random.default_rng(4), (300, 7))
    np.testing.assert_array_equal(a, M.common.standard_gumbel(np.random.default_rng(4),
                                                              (300, 7)))
    assert stats.kstest(M.common.standard_gumbel(np.random.default_rng(5), N),
                        "gumbel_r").pvalue > 1e-3
    assert stats.kstest(-M.common.log_uniform(np.random.default_rng(6), N),
                        "expon").pvalue > 1e-3
    # power: the same test rejects a Gumbel of scale 1.02
    assert stats.kstest(1.02 * M.common.standard_gumbel(np.random.default_rng(5), N),
                        "gumbel_r").pvalue < 1e-3
