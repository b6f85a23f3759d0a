"""PPNS: partitioned probabilistic neighbour selection (Lu & Shen, ComSIS 2015).

See [Neighbour selectors](../selectors.md) for the formulas and the paper.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from ..accountant.ledger import LedgerEntry, Status, Unit
from ..mechanisms import exponential_epsilon
from ..utils._arrays import top_k_indices
from ..utils._rng import QueryNoise
from ..utils._validation import check_epsilon, check_int, check_real
from .base import (
    Selection,
    Selector,
    gumbel_keys,
    mask_to_positions,
    normalised_coefficient,
    normalised_scores,
    partition_count,
    positions_to_mask,
    top_by_key,
)


def ppns_schedule(k: int, p: float) -> np.ndarray:
    r"""Draws per partition: ``⌈p(1−p)^{i−1}k⌉`` for ``i = 1, 2, …`` until ``k − 1``.

    The last count is capped so that the total is exactly ``k − 1``; the
    ``k``-th neighbour comes from the unvisited partitions.  E.g. ``k = 40``,
    ``p = 0.5``: ``[20, 10, 5, 3, 1]``.
    """
    k = check_int(k, "k", minimum=1)
    p = check_real(p, "p", low=0.0, high=1.0, low_inclusive=False)  # p = 0 would never end
    counts, total, i = [], 0, 0
    while total < k - 1:
        count = min(math.ceil(p * (1 - p) ** i * k), k - 1 - total)
        counts.append(count)
        total += count
        i += 1
    return np.array(counts, dtype=np.int64)


class PPNS(Selector):
    r"""Partitioned probabilistic neighbour selection (the paper's Algorithm 1).

    The similarity-sorted candidates are cut into partitions of ``k``
    (partition ``i`` holds ranks ``(i−1)k+1 … ik``).  Partition ``i = 1, 2, …``
    gives ``⌈p(1−p)^{i−1}k⌉`` neighbours ([`ppns_schedule`][]), drawn
    without replacement with exponential-mechanism weights
    ``exp(ε·sim / (4k·RS))``, until ``k − 1`` are chosen; the last neighbour is
    drawn with the same weights from all **unvisited** partitions, so every
    candidate has a non-zero probability (if the partitions run out first,
    the missing neighbours come from all remaining candidates).

    With ``p ≤ (k−1)/k`` partition 1 gives at most ``k − 1`` neighbours, so the
    exact top-k set is never chosen (no kNN attack with ``k`` fake users).
    Accuracy: the realised ``α = Σ sim(chosen)/Σ sim(top-k)`` is at least
    ``p`` on average (the paper's bound, for non-negative similarities).
    Security ``β`` = the partitions the schedule visits, plus one for the last
    neighbour: ``βk`` fake users are needed to cover where neighbours come from.

    Privacy, **as published** (reproduced, not guaranteed): ``k`` exponential
    draws of ``ε/(2k)`` each, i.e. ε/2 per neighbour set, relative to one
    rating of a candidate with score sensitivity ``RS`` (PNCF's weights, which
    give the selection half of ε; PPNS adds no noise for the other half, and
    the privacy report says so).  The claim does not
    hold for what a model releases: the partitions are cut at exact ranks,
    so one rating moves a candidate across a partition boundary and changes
    its probability by far more than ``e^{ε/2}`` (the exponential weights
    bound a ratio only within a fixed partition); ``RS`` is computed from the
    raw data without noise; and the predictions average the neighbours' raw
    ratings.  `AS_PUBLISHED` states it; ``tests/test_privacy_findings.py``
    measures it.

    Parameters
    ----------
    epsilon : float, default 1.0
        Budget parameter of the weights (``> 0``).
    p : float, optional
        Geometric parameter, ``0 < p ≤ (k−1)/k`` (checked against ``k`` when
        the selector is attached to a model).  Default 0.5 unless ``alpha``
        is given.
    alpha : float, optional
        Target accuracy ``α₀ ∈ (0, 1]``; the paper sets ``p = α₀``, which
        guarantees ``α ≥ α₀`` (so, like ``p``, at most ``(k−1)/k``, checked when
        the selector is attached to a model).  Give ``p`` or ``alpha``, not both.
    """

    name = "ppns"
    needs_sensitivity = True
    reads_tail = True

    def __init__(self, *, epsilon: float = 1.0, p: float | None = None,
                 alpha: float | None = None) -> None:
        self.epsilon = check_epsilon(epsilon)
        if p is not None and alpha is not None:
            raise ValueError("give p or alpha (the target accuracy, which sets p = alpha), "
                             "not both")
        if alpha is not None:
            p = check_real(alpha, "alpha", low=0.0, high=1.0, low_inclusive=False)
        self.alpha = alpha
        self.p = 0.5 if p is None else check_real(p, "p", low=0.0, high=1.0,
                                                  low_inclusive=False)

    def check_k(self, k: int) -> None:
        k = check_int(k, "k", minimum=1)
        # exact: p·k > k − 1, up to 4 units in the last place of p (so 1 − 1/k and
        # (k − 1)/k, which round differently, both pass); p = 1 never passes
        if self.p >= 1.0 or Fraction(self.p) * k > k - 1 + Fraction(k, 2**50):
            given = f"alpha={self.alpha} (so p = alpha)" if self.alpha is not None else \
                f"p={self.p}"
            shown = f"{(k - 1) / k:.4g}"                   # a fraction where that rounds
            shown = shown if Fraction(shown) == Fraction(k - 1, k) else f"{k - 1}/{k}"
            raise ValueError(
                f"{given} > (k-1)/k = {shown} for k={k}: partition 1 would give "
                f"all k neighbours, so the exact top-k set becomes reachable and PPNS no "
                f"longer resists the kNN attack; choose p <= (k-1)/k"
                + (" (PPNS needs k >= 2)" if k < 2 else ""))

    def beta(self, n_valid: np.ndarray, k: int) -> np.ndarray:
        """β per row: partitions visited by the schedule + 1, at most the partitions there are."""
        visited = len(ppns_schedule(k, self.p))
        return np.maximum(np.minimum(visited + 1, partition_count(n_valid, k)), 1)

    def sorted_prefix(self, k: int) -> int:
        """Only the partitions the schedule visits need sorting; the rest is one pool."""
        return len(ppns_schedule(k, self.p)) * k

    def select(self, sims: np.ndarray, n_valid: np.ndarray, k: int, noise: QueryNoise,
               sensitivity: np.ndarray | None = None) -> Selection:
        n_rows, width = sims.shape
        n_valid = np.asarray(n_valid)
        valid = np.isfinite(sims)  # the unsorted tail may hold padding anywhere
        scores = normalised_scores(sims, valid, sensitivity)
        coefficient = normalised_coefficient(self.epsilon, k)
        keys = gumbel_keys(scores, coefficient, noise, mask=valid)

        # stage 1: the schedule, partition by partition of the sorted head: a Gumbel
        # top-c within each partition of k keys (c = its count, at most the first's)
        schedule = ppns_schedule(k, self.p)
        head = min(width, len(schedule) * k)
        n_parts = -(-head // k)
        chosen = np.zeros((n_rows, width), dtype=bool)
        if n_parts:
            blocks = np.full((n_rows, n_parts * k), -np.inf)
            blocks[:, :head] = keys[:, :head]
            blocks = blocks.reshape(n_rows, n_parts, k)
            counts = schedule[:n_parts]
            order = top_k_indices(blocks, int(counts.max()))
            take = (np.arange(order.shape[2])[None, None, :] < counts[None, :, None]) & \
                np.isfinite(np.take_along_axis(blocks, order, axis=2))
            picked = (order + k * np.arange(n_parts)[None, :, None]).reshape(n_rows, -1)
            chosen = positions_to_mask(np.where(take.reshape(n_rows, -1), picked, -1), width)

        # stage 2: the remaining neighbour(s) from the unvisited partitions (the tail),
        # or, when there is none, from all remaining candidates with fresh keys
        tail = valid.copy()
        tail[:, :head] = False
        has_tail = tail.any(axis=1)
        pool_keys = np.where(tail, keys, -np.inf)
        rows = np.flatnonzero(~has_tail)
        if len(rows):
            rest = valid[rows] & ~chosen[rows]
            pool_keys[rows] = gumbel_keys(scores[rows], coefficient, noise.subset(rows), mask=rest,
                                          stream=1)
        extra = np.minimum(n_valid, k) - chosen.sum(axis=1)
        chosen |= positions_to_mask(top_by_key(pool_keys, extra, k), width)
        return Selection(mask_to_positions(chosen, k), self.beta(n_valid, k).astype(np.int64))

    def privacy(self, k: int, sensitivity: np.ndarray | None = None) -> list[LedgerEntry]:
        """The paper's claim per neighbour set: ``k`` draws with weights
        ``exp(c·sim/RS)``, ``c = ε/(4k)`` ([`dprec.mechanisms.exponential_epsilon`][])."""
        epsilon = exponential_epsilon(normalised_coefficient(self.epsilon, k), sensitivity=1.0,
                                      k=k)
        return [LedgerEntry("selector", "exponential (PPNS selection, k draws)", epsilon, 0.0,
                            Unit.RATING, Status.AS_PUBLISHED, "candidates",
                            SPLIT.format(epsilon=self.epsilon) + AS_PUBLISHED)]


#: How PPNS's entry relates to the `epsilon` given (the start of its note).
SPLIT = ("ε/2 of epsilon = {epsilon:g}, per neighbour set: PPNS draws with PNCF's weights "
         "exp(ε·sim/(4k·RS)), which give the selection half of ε (PNCF spends the other half "
         "on noise on the chosen similarities, which PPNS does not add); ")


#: Why PPNS's ε/2 is not a guarantee (the reason its entry carries).
AS_PUBLISHED = (
    "the paper's claim, not a guarantee: partitions are cut at exact ranks (one rating moves "
    "a candidate across a boundary; no bound on the ratio), RS is computed from the raw data "
    "unprivatised, and only the draw within a fixed candidate order is covered")
