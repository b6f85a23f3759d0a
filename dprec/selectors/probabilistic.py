"""Probabilistic neighbour selection (Adamopoulos & Tuzhilin, RecSys 2014).

See [Neighbour selectors](../selectors.md) for the formulas and the paper.
"""

from __future__ import annotations

import numpy as np

from ..utils._rng import QueryNoise
from ..utils._validation import check_real
from .base import (
    Selection,
    Selector,
    gumbel_keys,
    reachable_partitions,
    top_by_key,
    valid_candidates,
)


class Probabilistic(Selector):
    r"""``k`` draws without replacement with probability ∝ ``max(sim, floor)``.

    Every valid candidate can be drawn (``floor > 0``, dprec's
    choice), so the selector's security β is the number of partitions of
    the whole candidate list.  Implemented as the top-k of
    ``log max(sim, floor) + Gumbel`` (one draw per query).  It makes **no
    privacy claim** (its paper targets diversity, not privacy): nothing is
    registered with the accountant, and its neighbour lists are not covered.

    Parameters
    ----------
    floor : float, default 1e-3
        Weight of candidates with similarity ``<= floor`` (``> 0``).
    """

    name = "probabilistic"

    def __init__(self, floor: float = 1e-3) -> None:
        self.floor = check_real(floor, "floor", low=0.0, low_inclusive=False)

    def select(self, sims: np.ndarray, n_valid: np.ndarray, k: int, noise: QueryNoise,
               sensitivity: np.ndarray | None = None) -> Selection:
        valid = valid_candidates(n_valid, sims.shape[1])
        weights = np.maximum(np.where(valid, sims, self.floor), self.floor)
        keys = gumbel_keys(np.log(weights), 1.0, noise, mask=valid)
        positions = top_by_key(keys, np.minimum(n_valid, k), k)
        return Selection(positions, reachable_partitions(n_valid, k))
