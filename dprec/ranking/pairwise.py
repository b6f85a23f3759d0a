r"""The pairwise model's training: pairs $i \succ j$ drawn from each user's privatised
order, the logistic SGD steps on them, and the memory an epoch takes.

Everything here reads the privatised orders only (post-processing of
[`dprec.ranking.mallows`][]); [`MallowsRanker`][dprec.ranking.learner.MallowsRanker]
calls it once per epoch.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit

__all__ = ["PAIR_BYTES", "STEP_BYTES", "Segments", "epoch_bytes", "sample_pairs", "sgd_step"]

#: bytes a pair takes at the peak of its epoch's draw (measured with tracemalloc: 72)
PAIR_BYTES = 72
#: bytes a pair of one SGD step takes at its peak: ``(per factor, fixed)``, measured with
#: tracemalloc as 40 k + 16
STEP_BYTES = (40, 16)


def epoch_bytes(n_pairs: int, batch_size: int, n_factors: int) -> int:
    """The most an epoch holds at once, an upper bound: its pairs at their draw's peak
    (`PAIR_BYTES` each), and a step's work on `batch_size` of them."""
    per_factor, fixed = STEP_BYTES
    return PAIR_BYTES * n_pairs + (per_factor * n_factors + fixed) * min(batch_size, n_pairs)


@dataclass(frozen=True)
class Segments:
    """Per-user blocks of a flat array: block ``u`` is ``[start[u], start[u] + count[u])``."""

    start: np.ndarray
    count: np.ndarray

    @classmethod
    def from_sorted_owner(cls, owner: np.ndarray, n: int) -> Segments:
        count = np.bincount(owner, minlength=n).astype(np.int64)
        return cls(np.cumsum(count) - count, count)

    def search(self, values: np.ndarray, group: np.ndarray, query: np.ndarray) -> np.ndarray:
        """Per query, the first index in its group's block with ``values >= query``.

        Vectorised bisection over all queries (``values`` increasing within
        each block); clipped to the block's last index.
        """
        lo = self.start[group].copy()
        hi = lo + self.count[group]
        last = hi - 1
        while True:
            active = lo < hi
            if not active.any():
                break
            mid = (lo + hi) // 2
            right = values[np.minimum(mid, len(values) - 1)] < query
            lo = np.where(active & right, mid + 1, lo)
            hi = np.where(active & ~right, mid, hi)
        return np.minimum(lo, last)


def sample_pairs(rng: np.random.Generator, anchors: np.ndarray, owner: np.ndarray,
                 segments: Segments, flat: np.ndarray, n_pairs: int):
    """``n_pairs`` pairs ``(user, winner, loser)`` from the privatised orders ``flat``.

    A random position of an order with at least two items (orders weighted by
    their length), and another position of the same order drawn uniformly;
    the item ranked higher wins.
    """
    a = anchors[rng.integers(0, len(anchors), n_pairs)] if len(anchors) else anchors
    u = owner[a]
    start, size = segments.start[u], segments.count[u]
    other = start + rng.integers(0, size - 1)
    other += other >= a  # skip the anchor itself
    first, second = np.minimum(a, other), np.maximum(a, other)
    return u, flat[first], flat[second]


def sgd_step(P: np.ndarray, Q: np.ndarray, b: np.ndarray, u: np.ndarray, i: np.ndarray,
             j: np.ndarray, lr: float, reg: float) -> float:
    r"""One step on the pairs $i \succ j$ of users $u$; returns the summed loss.

    With $x = f(u,i) - f(u,j)$ and $g = -\sigma(-x)$:
    $\nabla_{p_u} = g(q_i - q_j) + \lambda p_u$,
    $\nabla_{q_i} = g\,p_u + \lambda q_i$,
    $\nabla_{q_j} = -g\,p_u + \lambda q_j$,
    $\nabla_{b_i} = g + \lambda b_i$, $\nabla_{b_j} = -g + \lambda b_j$.
    """
    pu, qi, qj = P[u], Q[i], Q[j]
    x = b[i] - b[j] + np.einsum("ij,ij->i", pu, qi - qj)
    g = -expit(-x)
    gcol = g[:, None]
    np.add.at(P, u, -lr * (gcol * (qi - qj) + reg * pu))
    np.add.at(Q, i, -lr * (gcol * pu + reg * qi))
    np.add.at(Q, j, -lr * (-gcol * pu + reg * qj))
    np.add.at(b, i, -lr * (g + reg * b[i]))
    np.add.at(b, j, -lr * (-g + reg * b[j]))
    return float(np.logaddexp(0.0, -x).sum())
