"""Tests of dprec.audit.one_run: the one-run lower bound on ε (Steinke, Nasr & Jagielski 2023)
never exceeds a correct claim more often than its confidence allows (exact enumeration on
randomized response), rises above a planted false claim, and refuses bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dprec.audit.one_run import (
    OneRunAudit,
    default_guess_counts,
    one_run_audit,
    one_run_epsilon,
    one_run_p_value,
)


def _q(epsilon: float) -> float:
    return 1.0 / (1.0 + math.exp(-epsilon))


@pytest.mark.parametrize("epsilon", [0.25, 1.0, 2.0, 4.0])
@pytest.mark.parametrize("r", [20, 200, 1000])
def test_randomized_response_exceeds_the_bound_at_most_5_percent_exact(epsilon, r):
    """Guesses as accurate as ε-randomized response: V ~ Bin(r, q_ε).  The bound exceeds ε
    exactly when V >= v*, the smallest such count: P[V >= v*] <= 0.05, enumerated."""
    bounds = np.array([one_run_epsilon(r, r, v) for v in range(r + 1)])
    assert np.all(np.diff(bounds) >= 0)                 # more correct guesses, higher bound
    above = np.flatnonzero(bounds > epsilon)
    v_star = above[0] if len(above) else r + 1
    assert stats.binom.sf(v_star - 1, r, _q(epsilon)) <= 0.05
    # and the bound is tight: one guess fewer would exceed 5 % (the bisection's tolerance)
    if len(above) and v_star > 0:
        assert stats.binom.sf(v_star - 2, r, _q(epsilon)) > 0.05 - 1e-6


def test_every_guess_right_gives_the_closed_form():
    """V = r: P[Bin(r, q) >= r] = q^r = 0.05, so ε = logit(0.05^(1/r))."""
    for r in (10, 100, 1000):
        q = 0.05 ** (1 / r)
        assert one_run_epsilon(r, r, r) == pytest.approx(math.log(q / (1 - q)), abs=1e-7)


def test_chance_level_guesses_bound_nothing_and_delta_only_lowers_it():
    assert one_run_epsilon(1000, 1000, 500) == 0.0
    assert one_run_epsilon(1000, 0, 0) == 0.0
    pure = one_run_epsilon(1000, 1000, 700)
    assert 0.5 < pure < 1.0
    assert one_run_epsilon(1000, 1000, 700, delta=1e-4) < pure
    assert one_run_epsilon(1000, 1000, 700, confidence=0.99) < pure
    assert one_run_p_value(100, 50, 0, 1.0) == 1.0
    assert one_run_p_value(100, 50, 50, 0.0) == pytest.approx(0.5 ** 50)


def test_the_delta_term_is_the_papers():
    """p = β + 2mδα, α = max_i P[v - i <= Bin(r, q) < v] / i (Steinke et al., Alg. 2)."""
    m, r, v, epsilon, delta = 300, 120, 80, 0.5, 1e-3
    q = _q(epsilon)
    beta = stats.binom.sf(v - 1, r, q)
    alpha = max(sum(stats.binom.pmf(v - j, r, q) for j in range(1, i + 1)) / i
                for i in range(1, v + 1))
    assert one_run_p_value(m, r, v, epsilon, delta) == pytest.approx(
        beta + 2 * m * delta * alpha, rel=1e-12)


def _randomized_response_scores(rng, included: np.ndarray, epsilon: float) -> np.ndarray:
    flip = rng.random(len(included)) < 1.0 / (1.0 + math.exp(epsilon))
    return (included ^ flip) + 1e-3 * rng.random(len(included))


def _laplace_scores(rng, included: np.ndarray, epsilon: float) -> np.ndarray:
    """Each canary's own count (0 or 1, sensitivity 1) with Laplace noise of scale 1/ε."""
    return included + rng.laplace(0.0, 1.0 / epsilon, len(included))


@pytest.mark.parametrize("mechanism", [_randomized_response_scores, _laplace_scores],
                         ids=["randomized response", "Laplace"])
def test_correct_claims_are_not_refuted(mechanism):
    """ε-DP mechanisms audited 200 times with 1000 canaries: the bound over the default
    guess counts exceeds ε in at most 5 % of the runs (here, in none)."""
    epsilon, refuted = 1.0, 0
    for seed in range(200):
        rng = np.random.default_rng(seed)
        included = rng.random(1000) < 0.5
        audit = one_run_audit(mechanism(rng, included, epsilon), included)
        refuted += audit.refutes(epsilon)
    assert refuted <= 10


@pytest.mark.parametrize("mechanism", [_randomized_response_scores, _laplace_scores],
                         ids=["randomized response", "Laplace"])
def test_a_planted_false_claim_is_refuted(mechanism):
    """The mechanism runs at ε = 4 but claims 1: refuted, with the claim's ε well below the
    bound; and the bound stays below the true ε."""
    rng = np.random.default_rng(7)
    included = rng.random(1000) < 0.5
    audit = one_run_audit(mechanism(rng, included, 4.0), included)
    assert audit.refutes(1.0) and 1.5 < audit.epsilon < 4.0
    assert isinstance(audit, OneRunAudit) and float(audit) == audit.epsilon
    assert audit.tried == len(default_guess_counts(1000)) and audit.correct <= audit.guesses


def test_a_model_that_memorises_is_bounded_far_from_zero():
    included = np.random.default_rng(1).random(500) < 0.5
    audit = one_run_audit(included.astype(float), included, guess_counts=[(100, 100)])
    assert audit.correct == 200 and audit.epsilon > 3.0


def test_guesses_follow_the_scores_and_ties_keep_their_order():
    included = np.array([True, False, True, False, True, False])
    scores = np.array([5.0, 0.0, 4.0, 1.0, 3.0, 2.0])
    audit = one_run_audit(scores, included, guess_counts=[(3, 3)])
    assert (audit.guesses, audit.correct, audit.k_in, audit.k_out) == (6, 6, 3, 3)
    reverse = one_run_audit(-scores, included, guess_counts=[(3, 3)])
    assert reverse.correct == 0 and reverse.epsilon == 0.0


@pytest.mark.parametrize(("call", "error", "needle"), [
    (lambda: one_run_epsilon(10, 11, 3), ValueError, "v <= r <= m"),
    (lambda: one_run_epsilon(10, 5, 6), ValueError, "v <= r <= m"),
    (lambda: one_run_epsilon(0, 0, 0), ValueError, "m"),
    (lambda: one_run_epsilon(10, 5, 3, confidence=1.0), ValueError, "confidence"),
    (lambda: one_run_p_value(10, 5, 3, -1.0), ValueError, "epsilon"),
    (lambda: one_run_p_value(10, 5, 3, 1.0, delta=2.0), ValueError, "delta"),
    (lambda: one_run_audit([1.0, np.nan], [True, False]), ValueError, "finite"),
    (lambda: one_run_audit([1.0, 2.0], [True]), ValueError, "one length"),
    (lambda: one_run_audit([1.0, 2.0], [2, 0]), ValueError, "booleans"),
    (lambda: one_run_audit([1.0, 2.0], [True, False], guess_counts=[(2, 1)]), ValueError,
     "k_in \\+ k_out <= m"),
    (lambda: one_run_audit([1.0, 2.0], [True, False], guess_counts=[]), ValueError,
     "guess_counts"),
])
def test_bad_arguments_name_the_parameter(call, error, needle):
    with pytest.raises(error, match=needle):
        call()


def test_inputs_are_not_mutated():
    scores, included = np.array([3.0, 1.0, 2.0]), np.array([1, 0, 1])
    one_run_audit(scores, included, guess_counts=[(1, 1)])
    assert scores.tolist() == [3.0, 1.0, 2.0] and included.tolist() == [1, 0, 1]
