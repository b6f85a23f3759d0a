"""Empirical privacy audits of the sketches, with controls that must fail.

The audit (:func:`dprec.audit.estimate_epsilon_lower_bound`) runs a
mechanism many times on two neighbouring inputs and turns event counts into a
lower bound on ε that holds with 95 % confidence.  Each audit here is paired
with a control: the same audit on a deliberately mis-calibrated mechanism
must flag it, so a passing audit is evidence, not a test that cannot fail.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
from scipy import stats

from dprec.audit import Event, clopper_pearson, estimate_epsilon_lower_bound
from dprec.experiments.jaccard_sketches import disjoint_set_pairs
from dprec.mechanisms import randomized_response_from_uniform
from dprec.similarity.minhash import (
    MinHash,
    RRMinHash,
    difference_bound,
    difference_bound_paper,
)
from dprec.utils._rng import keyed_uniform

N_RUNS = 200_000
K, B, TAU, DELTA, EPSILON = 8, 2, 4, 1e-4, 2.0


def _neighbours(n_items: int = 30) -> sp.csr_matrix:
    """Row 0: a set of τ items; row 1: the same set plus one item (α = 1)."""
    rows = [np.arange(TAU), np.arange(TAU + 1)]
    indptr = np.array([0, TAU, 2 * TAU + 1])
    return sp.csr_matrix((np.ones(indptr[-1]), np.concatenate(rows), indptr),
                         shape=(2, n_items))


def _differing_hashes(min_differences: int = 3):
    """A public hash seed whose true sketches of the neighbours differ in ≥ 3 coordinates.

    Chosen from the hash functions alone (before any noise is drawn), so the
    events built from it are fixed before looking at the samples.
    """
    X = _neighbours()
    for seed in range(1000):
        buckets = MinHash(K, B, hash_seed=seed).sketch(X).values
        differ = np.flatnonzero(buckets[0] != buckets[1])
        if differ.size >= min_differences:
            return seed, buckets, differ
    raise AssertionError("no hash seed with enough differing coordinates")  # pragma: no cover


def _runs(mechanism, buckets_row: np.ndarray, seed: int) -> np.ndarray:
    """``N_RUNS`` independent releases of one user's buckets (keyed noise, one key per run)."""
    tiled = np.broadcast_to(buckets_row, (N_RUNS, K))
    return mechanism(tiled, seed, np.arange(N_RUNS))


def _events(buckets: np.ndarray, differ: np.ndarray) -> list[Event]:
    a = buckets[0, differ]
    events = [Event("all differing coordinates as in a",
                    lambda y: (y[:, differ] == a).all(axis=1))]
    events += [Event(f"coordinate {j} as in a", lambda y, j=j: y[:, j] == buckets[0, j])
               for j in differ]
    return events


def _audit(mechanism, buckets, differ):
    samples_a = _runs(mechanism, buckets[0], seed=1)
    samples_b = _runs(mechanism, buckets[1], seed=2)
    return estimate_epsilon_lower_bound(samples_a, samples_b, _events(buckets, differ),
                                        confidence=0.95, delta=DELTA)


def test_rr_minhash_audit_stays_below_the_declared_epsilon_and_a_broken_one_does_not():
    hash_seed, buckets, differ = _differing_hashes()
    rr = RRMinHash(K, B, epsilon=EPSILON, delta=DELTA, tau=TAU, hash_seed=hash_seed)
    assert np.array_equal(rr.sketch(_neighbours()).valid, [True, True])
    plain = MinHash(K, B, hash_seed=hash_seed)
    plain.sketch(_neighbours())
    assert np.array_equal(rr.hash_functions_.codes, plain.hash_functions_.codes)

    def private(tiled, seed, keys):
        return rr.privatize(tiled, seed, keys).values

    audit = _audit(private, buckets, differ)
    actual_loss = differ.size * rr.epsilon_prime()          # the joint event's true log-ratio
    assert not audit.violates(EPSILON), audit
    assert audit.epsilon <= actual_loss
    assert audit.epsilon > 0.6 * actual_loss, (audit.epsilon, actual_loss)   # the audit has power

    def forgot_to_divide_by_L(tiled, seed, keys):            # ε per coordinate instead of ε/⌈L⌉
        uniforms = keyed_uniform(seed, keys, K)
        return randomized_response_from_uniform(tiled, B, EPSILON, uniforms)

    broken = _audit(forgot_to_divide_by_L, buckets, differ)
    assert broken.violates(EPSILON), broken


def test_the_papers_L_would_violate_delta_where_dprec_raises_it():
    """Count differing coordinates of neighbouring sets over fresh hash functions.

    K = 10, τ = 100, B = 2: the paper's L = 1.23 allows one differing
    coordinate (NoisyMinHash's sensitivity L(B - 1)), but two differ with
    probability ~1e-3 > δ = 1e-4.  dprec's L (the binomial quantile) holds.
    """
    k, tau, n_pairs = 10, 100, 30_000
    paper = difference_bound_paper(k, 2, 1, tau, DELTA)
    used = difference_bound(k, 2, 1, tau, DELTA)
    assert math.floor(paper) == 1 and used == 2
    X = disjoint_set_pairs(n_pairs, tau, tau, size_b=tau + 1)       # y = x plus one item
    S = MinHash(k, 2, random_state=0).sketch(X)
    differences = np.sum(S.values[0::2] != S.values[1::2], axis=1)
    beyond_paper = int(np.sum(differences > math.floor(paper)))
    low = float(clopper_pearson(beyond_paper, n_pairs, 0.001, "lower"))
    assert low > DELTA, (beyond_paper, low)                         # the paper's δ fails
    beyond_used = int(np.sum(differences > used))
    high = float(clopper_pearson(beyond_used, n_pairs, 0.001, "upper"))
    r = (1 / (tau + 1)) * 0.5
    assert stats.binom.sf(used, k, r) <= DELTA and high < 10 * DELTA


@pytest.mark.parametrize("tau", [4, 50, 1000])
def test_declared_delta_bounds_the_exact_tail(tau):
    for k in (10, 100, 500):
        for b in (2, 4):
            L = difference_bound(k, b, 1, tau, DELTA)
            r = (1 / tau) * (1 - 1 / b)
            assert stats.binom.sf(math.floor(L), k, r) <= DELTA
