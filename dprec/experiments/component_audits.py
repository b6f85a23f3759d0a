r"""Neighbouring-dataset audits of the components whose guarantee holds, and the result
every audit returns.

The sketches' local releases (`sketch_release`, `fixed_hash_seed`: each sketch backend's
user release, with the event whose log-probability ratio is the claimed ε itself) and
the Mallows privatiser (`mallows_swap`, and `mallows_ranker` through the fitted model).
Each gives an `AuditResult`: the claim, the neighbouring datasets' event counts and a
99 % Clopper–Pearson lower bound on ε (`dprec.audit`).  `dprec.experiments.privacy_audit`
puts them in its table next to the refuted claims.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.sparse as sp
from surprise import Dataset, Reader

from ..audit import Event, audit_model, audit_release, with_rating
from ..ranking import MallowsRanker, mallows_privatize
from ..similarity import GaussianJL, MinHash, NoisyMinHash, PrivateSJLT, RRMinHash

__all__ = ["CONFIDENCE", "AuditResult", "audit_result", "fixed_hash_seed", "mallows_ranker",
           "mallows_swap", "sketch_release"]

CONFIDENCE = 0.99


@dataclass(frozen=True)
class AuditResult:
    """One audit: the claim, the neighbouring datasets' event counts and the bound.

    ``lower_bound`` holds with probability 99 % (over the runs); the claim is
    refuted when it exceeds ``claimed_epsilon`` (δ taken into account).
    """

    component: str
    status: str
    unit: str
    claimed_epsilon: float
    claimed_delta: float
    lower_bound: float
    event: str
    counts: str
    n_runs: int
    finding: str
    data: str = "constructed"

    @property
    def refuted(self) -> bool:
        """Whether the audit's lower bound exceeds the claimed ε."""
        return self.lower_bound > self.claimed_epsilon


def audit_result(component, status, unit, epsilon, delta, bound, n_runs, finding,
                 data: str = "constructed") -> AuditResult:
    """The `AuditResult` of a claim `(epsilon, delta)` and the lower bound `bound` (an
    `estimate_epsilon_lower_bound` result) over `n_runs` runs, at its most telling event."""
    direction = "D/D′" if bound.direction == "a/b" else "D′/D"
    best = int(np.argmax(bound.per_event))
    return AuditResult(component, status, unit, float(epsilon), float(delta),
                       float(bound.epsilon), f"{bound.event} ({direction})",
                       f"{int(bound.counts_a[best])} / {int(bound.counts_b[best])}",
                       int(n_runs), finding, data)


def _sets(*rows: Sequence[int], n_items: int = 2000) -> sp.csr_matrix:
    """A 0/1 set matrix with the given rows of items."""
    indptr = np.cumsum([0] + [len(r) for r in rows])
    return sp.csr_matrix((np.ones(indptr[-1]), np.concatenate([np.asarray(r, int) for r in rows]),
                          indptr), shape=(len(rows), n_items))


def _all_coordinates_differ(K: int, B: int) -> tuple[int, sp.csr_matrix]:
    """A public hash seed under which the sketches of ``{0}`` and ``{0, 1}`` differ in all
    ``K`` coordinates (chosen from the hash functions alone, before any noise)."""
    sets = _sets([0], [0, 1], n_items=2)
    for hash_seed in range(100_000):
        buckets = MinHash(K, B, hash_seed=hash_seed).sketch(sets).values
        if (buckets[0] != buckets[1]).all():
            return hash_seed, sets
    raise ValueError("no hash seed makes every coordinate differ")  # pragma: no cover


def _sketch_runs(make, row: sp.csr_matrix, seeds: np.ndarray) -> np.ndarray:
    """One release of ``row`` per seed: ``len(seeds)`` copies sketched with distinct
    keys (each user's noise depends on their key only: independent releases)."""
    backend = make(int(seeds[0]))
    copies = sp.vstack([row] * len(seeds), format="csr")
    return backend.sketch(copies, keys=np.arange(len(seeds))).values


def _beyond(mean_a: np.ndarray, mean_b: np.ndarray, coordinates: np.ndarray) -> Event:
    """Every coordinate that moves lies beyond ``D``'s mean, away from ``D′``'s: for
    Laplace noise its probability ratio is ``exp(‖μ_a − μ_b‖₁ / scale)``, the worst case."""
    direction = np.sign(mean_b - mean_a)[coordinates]
    return Event("every moved coordinate beyond D's mean",
                 lambda y: ((np.asarray(y)[:, coordinates] - mean_a[coordinates])
                            * direction < 0).all(axis=1))


def sketch_release(name: str, epsilon: float = 2.0, n_runs: int = 200_000,
                   seed: int = 0) -> AuditResult:
    """A user's sketch on neighbouring data, many releases each, with the event whose
    log-probability ratio is the claimed ε itself (so a miscalibrated ε is refuted).

    MinHash family: ``{a}`` and ``{a, b}`` (τ = 1) under a public hash seed that makes
    all ``K = ⌈L⌉ = 4`` coordinates differ; event: all of them as in ``D``
    (randomised response) or beyond ``D``'s buckets (Laplace).  SJLT: one rating
    of ``Δ`` added; event: the ``s`` moved coordinates beyond ``D``'s projection.
    Gaussian JL: the same rating and Mironov's low-bit event on the coordinate
    that moves most (floating-point noise: *as published*).
    """
    if name in ("rr_minhash", "noisy_minhash"):
        K, B = 4, 2
        hash_seed, sets = _all_coordinates_differ(K, B)
        cls = RRMinHash if name == "rr_minhash" else NoisyMinHash

        def make(s):
            return cls(K, B, epsilon=epsilon, delta=1e-4, tau=1, hash_seed=hash_seed,
                       random_state=s)

        truth = MinHash(K, B, hash_seed=hash_seed).sketch(sets).values.astype(float)
        every = np.arange(K)
        if name == "rr_minhash":
            events = [Event("every coordinate as in D",
                            lambda y: (np.asarray(y) == truth[0]).all(axis=1))]
        else:
            events = [_beyond(truth[0], truth[1], every)]
        unit, row_a, row_b = "one item of a user's set", sets[0], sets[1]
    else:
        k_out, s, n_items = 16, 4, 30
        row_a = sp.csr_matrix(([5.0, 3.0, 4.0], ([0, 0, 0], [1, 4, 7])), shape=(1, n_items))
        row_b = sp.csr_matrix(([5.0, 3.0, 4.0, 5.0], ([0, 0, 0, 0], [1, 4, 7, 9])),
                              shape=(1, n_items))               # one rating of Δ = 5 added
        cls = PrivateSJLT if name == "sjlt" else GaussianJL

        def make(s_):
            if cls is PrivateSJLT:
                return PrivateSJLT(k_out, s, epsilon=epsilon, rating_bound=5.0, hash_seed=7,
                                   random_state=s_)
            return GaussianJL(k_out, epsilon=epsilon, delta=1e-5, rating_bound=5.0, hash_seed=7,
                              random_state=s_)

        probe = make(0)
        probe.sketch(row_a)                    # the public matrix, from hash_seed
        projection = sp.csr_matrix(probe.projection_)
        mean_a = (row_a @ projection.T).toarray().ravel()
        mean_b = (row_b @ projection.T).toarray().ravel()
        if cls is PrivateSJLT:
            events = [_beyond(mean_a, mean_b, np.flatnonzero(mean_b != mean_a))]
        else:
            j = int(np.argmax(np.abs(mean_b - mean_a)))
            # Mironov: near 0, fl(0 + noise) has bits below 2**-53 that fl(μ + noise) lacks
            row_a = sp.csr_matrix((1, n_items))
            row_b = sp.csr_matrix(([5.0], ([0], [9])), shape=(1, n_items))
            events = [Event("fine low bits", lambda y: (np.abs(np.asarray(y)[:, j]) < 0.5) & (
                np.asarray(y)[:, j] * 2.0**53 != np.floor(np.asarray(y)[:, j] * 2.0**53)))]
        unit = "one rating"
    backend = make(None)                        # the claim of a fit with fresh noise
    backend.sketch(row_a)                       # σ (Gaussian JL) depends on the drawn matrix
    entry = backend.privacy()
    bound = audit_release(lambda row, seeds: _sketch_runs(make, row, seeds), row_a, row_b,
                          events, n_runs, CONFIDENCE, delta=entry.delta, random_state=seed,
                          batched=True)
    return audit_result(f"{type(backend).__name__} sketch", str(entry.status), unit, entry.epsilon,
                        entry.delta, bound, n_runs, "one user's release, neighbouring data")


def fixed_hash_seed(epsilon: float = 2.0, n_runs: int = 200_000, seed: int = 0,
                    hash_seed: int = 61) -> AuditResult:
    """RRMinHash with a fixed, public ``hash_seed`` (K = 16, B = 4, τ = 20): sets chosen
    knowing the hash functions differ in at least 10 of the ``K`` coordinates, twice
    the ``⌈L⌉ = 5`` the random-hash claim allows, so that claim (ε with δ) is
    exceeded; the entry is then the worst case ``K·ε′`` (δ = 0), which holds.  Event:
    more coordinates report ``D``'s bucket than ``D′``'s, by at least a margin (the
    likelihood ratio of randomised response grows with that difference)."""
    K, B, tau, n_items, rigged = 16, 4, 20, 50_000, 10
    codes = MinHash(K, B).hash_functions(np.arange(n_items), hash_seed).codes
    ranks, buckets = codes // np.uint64(B), codes % np.uint64(B)
    # the item that comes early in `rigged` of the permutations, and sets of items that
    # all come after it there, in other buckets: those coordinates all differ
    extra = int(np.argmin(np.partition(ranks, rigged - 1, axis=1)[:, rigged - 1]))
    coords = np.argsort(ranks[extra])[:rigged]
    beaten = ((ranks[:, coords] > ranks[extra, coords]).all(axis=1)
              & (buckets[:, coords] != buckets[extra, coords]).all(axis=1))
    members = np.flatnonzero(beaten)[:tau]
    if len(members) < tau:
        raise ValueError("no adversarial sets for this hash seed")  # pragma: no cover
    sets = _sets(members, np.r_[members, extra], n_items=n_items)
    truth = MinHash(K, B, hash_seed=hash_seed).sketch(sets).values

    def make(s):
        return RRMinHash(K, B, epsilon=epsilon, delta=1e-4, tau=tau, hash_seed=hash_seed,
                         random_state=s)

    def margin(y):
        y = np.asarray(y)
        return (y == truth[0]).sum(axis=1) - (y == truth[1]).sum(axis=1)

    backend = make(None)                        # the claim of a fit with fresh noise
    backend.sketch(sets[0])
    entry = backend.privacy()
    events = [Event(f"margin ≥ {m}", lambda y, m=m: margin(y) >= m) for m in (6, 8, 10)]
    bound = audit_release(lambda row, seeds: _sketch_runs(make, row, seeds), sets[0], sets[1],
                          events, n_runs, CONFIDENCE, random_state=seed, batched=True)
    return audit_result("RRMinHash sketch, fixed hash_seed", str(entry.status),
                        "one item of a user's set", entry.epsilon, entry.delta, bound, n_runs,
                        f"sets chosen from the public hash functions: "
                        f"{int((truth[0] != truth[1]).sum())} of {K} coordinates differ (the "
                        f"random-hash claim is ε = {epsilon:g} with δ)")


def mallows_ranker(epsilon: float = 1.0, n_runs: int = 300, seed: int = 0) -> AuditResult:
    """MallowsRanker end to end: one user's two top items swapped; event: the fitted model
    scores the first above the second for that user."""
    rng = np.random.default_rng(seed)
    rows = [(f"u{u}", f"i{i}", float(rng.integers(1, 6))) for u in range(30) for i in range(8)]
    rows = [(u, i, 5.0 if (u, i) == ("u0", "i0") else 1.0 if (u, i) == ("u0", "i1") else r)
            for u, i, r in rows]
    frame = pd.DataFrame(rows, columns=["user", "item", "rating"])
    data = Dataset.load_from_df(frame, Reader(rating_scale=(1, 5)))
    swapped = with_rating(with_rating(data, "u0", "i0", 1.0), "u0", "i1", 5.0)

    def factory(s):
        return MallowsRanker(epsilon=epsilon, n_factors=4, n_epochs=3, random_state=s)

    bound = audit_model(factory, data.build_full_trainset(), swapped.build_full_trainset(),
                        lambda m: m.score("u0", "i0") > m.score("u0", "i1"),
                        [Event("i0 above i1", lambda x: np.asarray(x, dtype=bool))], n_runs,
                        CONFIDENCE, random_state=seed)
    return audit_result("MallowsRanker (end to end)", "holds", "a swap in one user's ranking",
                        epsilon, 0.0, bound, n_runs, "the user's two items swapped")


def mallows_swap(m: int = 5, epsilon: float = 1.0, n_runs: int = 200_000,
                 seed: int = 0) -> AuditResult:
    """The Mallows privatiser on a ranking and the ranking with its first and last items
    swapped (the worst swap: 2m − 3 concordant pairs change).  Holds: ε."""
    order = np.arange(m)
    swapped = order.copy()
    swapped[[0, -1]] = swapped[[-1, 0]]

    def release(ranking, seeds):
        return mallows_privatize(np.tile(ranking, (len(seeds), 1)), epsilon, int(seeds[0]))

    events = [Event("the output is D's ranking",
                    lambda y: (np.asarray(y) == order).all(axis=1))]
    bound = audit_release(release, order, swapped, events, n_runs, CONFIDENCE,
                          random_state=seed, batched=True)
    return audit_result("Mallows privatiser", "holds", "a swap in one user's ranking", epsilon, 0.0,
                        bound, n_runs, f"m = {m}, first and last items swapped")
