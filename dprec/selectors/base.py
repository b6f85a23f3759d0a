"""The selector interface: choose neighbours from similarity-sorted candidates.

A selector answers many queries at once.  For each query (a row) it gets the
candidates' similarities sorted in descending order (ties in candidate order,
as ``heapq.nlargest`` keeps them), the number of valid candidates in the row
(the rest is padding), ``k``, and the query's own randomness
(:class:`dprec._rng.QueryNoise`, ALGORITHMS.md §2 "one query, one draw").
It returns, per row, the positions of the chosen candidates in the sorted row.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from .._rng import QueryNoise


class Selector(ABC):
    """Base class of the neighbour selectors.

    Subclasses implement :meth:`select`; private ones also override
    :meth:`record_privacy` to write what they spend into a model's ledger.
    """

    #: the name accepted by ``PrivateKNN(selector=...)``
    name: str = ""

    @abstractmethod
    def select(self, sims: np.ndarray, n_valid: np.ndarray, k: int,
               noise: QueryNoise) -> np.ndarray:
        """Choose up to ``k`` neighbours per row.

        Parameters
        ----------
        sims : ndarray of shape (n_queries, n_candidates)
            Candidate similarities, each row sorted in descending order; entries
            at positions ``>= n_valid[q]`` are padding.
        n_valid : ndarray of int, shape (n_queries,)
            Number of real candidates per row.
        k : int
            Number of neighbours wanted.
        noise : QueryNoise
            The queries' randomness (unused by deterministic selectors).

        Returns
        -------
        ndarray of int64, shape (n_queries, k)
            Positions into the sorted rows, ``-1`` for empty slots (rows with
            fewer than ``k`` candidates).
        """

    def sorted_prefix(self, k: int) -> int | None:
        """How many leading sorted positions :meth:`select` reads (None: all).

        Lets the caller skip sorting what the selector never looks at.
        """
        return None

    def record_privacy(self, ledger, n_neighbours: int) -> None:  # noqa: B027
        """Write the selector's privacy spending into ``ledger`` (none by default)."""

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if not k.startswith("_"))
        return f"{type(self).__name__}({params})"
