"""Top-k neighbour selection: the ``k`` most similar candidates.

See [Neighbour selectors](../selectors.md) for the formulas and the paper.
"""

from __future__ import annotations

import numpy as np

from ..utils._rng import QueryNoise
from .base import Selection, Selector, first_positions


class TopK(Selector):
    """The ``k`` first candidates of the similarity-sorted list.

    This is Surprise's ``KNNBasic`` selection (``heapq.nlargest``), accuracy
    ``α = 1`` and security ``β = 1`` in the terms of Lu & Shen (ComSIS 2015):
    ``k`` fake users with the target's known ratings fill the whole
    neighbourhood (the kNN attack of Calandrino et al., S&P 2011).
    """

    name = "topk"

    def sorted_prefix(self, k: int) -> int:
        return k

    def select(self, sims: np.ndarray, n_valid: np.ndarray, k: int, noise: QueryNoise,
               sensitivity: np.ndarray | None = None) -> Selection:
        return Selection(first_positions(n_valid, k), np.ones(len(sims), dtype=np.int64))
