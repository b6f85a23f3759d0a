"""How one fit's selector chooses each query's neighbours among its sorted candidates,
and what the choice is worth: the realised accuracy α, the selector's security β and
the partitions of `k` the neighbours came from.

Both neighbourhoods' engines hand their candidates' similarities here (padded
rows, or the sorted prefix the compiled kernels found); nothing here has side
effects, so blocks of queries run in threads.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..selectors import Selector, TopK
from ..utils._arrays import stable_descending_order
from ..utils._rng import QueryNoise
from .answers import Chosen
from .blocks import sequential_sum


@dataclass(frozen=True)
class Selection:
    """The neighbour selection of one fit.

    Parameters
    ----------
    selector : Selector
        The fitted model's selector (`selector_`).
    k : int
        Neighbours per query.
    seed : int
        The fit's seed of the queries' noise (each query's randomness is derived from
        it and the query's key).
    sensitivity : ndarray or None
        Each user's recommendation-aware sensitivity `RS(u)`, for the selectors that
        read it.
    """

    selector: Selector
    k: int
    seed: int
    sensitivity: np.ndarray | None

    def select(self, sims: np.ndarray | None, n_valid: np.ndarray,
               querying_users: np.ndarray, keys: tuple[np.ndarray, ...],
               sorted_: tuple[np.ndarray, np.ndarray] | None = None) -> Chosen:
        """Sort candidates (stable, descending) and let the selector choose (no side
        effects but on `sorted_`, which top-k's choice reuses: blocks of queries run in
        threads; the caller logs the selections).

        `sims` holds `n_valid` finite candidates per row, padding is `-inf`;
        or `sorted_` gives their sorted prefix already (`(order, sorted_sims)`,
        `dprec.utils._kernels.stable_top`, for a selector that reads no tail).
        """
        k = self.k
        if sorted_ is not None and type(self.selector) is TopK:   # not a subclass's select
            # the sorted prefix is the choice (what the general path below gives top-k)
            # (in place, and the partitions a view: no new n × k arrays)
            (columns, weights), taken = sorted_, sorted_[0] >= 0
            weights[~taken] = 0.0
            return Chosen(columns=columns, weights=weights, alpha=np.ones(len(n_valid)),
                          beta=np.ones(len(n_valid), dtype=np.int64),
                          partitions=taken.view(np.uint8))
        prefix = self.selector.sorted_prefix(k)
        order, sorted_sims = (stable_descending_order(sims, prefix,
                                                      keep_tail=self.selector.reads_tail)
                              if sorted_ is None else sorted_)
        sensitivity = (self.sensitivity[querying_users]
                       if self.sensitivity is not None else None)
        selection = self.selector.select(sorted_sims, n_valid, k, QueryNoise(self.seed, keys),
                                         sensitivity)
        positions = selection.positions
        taken = positions >= 0
        safe = np.maximum(positions, 0)
        columns = np.where(taken, np.take_along_axis(order, safe, axis=1), -1)
        true_sims = np.where(taken, np.take_along_axis(sorted_sims, safe, axis=1), 0.0)
        weights = true_sims if selection.weights is None else selection.weights
        if isinstance(self.selector, TopK):
            alpha = np.ones(len(n_valid))
        else:
            top = np.where(np.arange(min(k, sorted_sims.shape[1]))[None, :] < n_valid[:, None],
                           sorted_sims[:, :k], 0.0)
            chosen_sims = -np.sort(-np.maximum(true_sims, 0), axis=1)
            alpha = np.minimum(_ratio(sequential_sum(chosen_sims),
                                      sequential_sum(np.maximum(top, 0))), 1.0)
        # a position past the sorted prefix (in the tail) is ranked among all candidates
        tail = self.selector.reads_tail and prefix is not None
        ranks = _ranks(sims, columns, true_sims, safe, prefix) if tail else safe
        return Chosen(columns=columns, weights=np.where(taken, weights, 0.0), alpha=alpha,
                      beta=selection.beta, partitions=np.where(taken, ranks // k + 1, 0))


def _ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """`numerator / denominator`, 1 where the denominator is 0 (nothing to lose)."""
    out = np.ones_like(numerator, dtype=np.float64)
    np.divide(numerator, denominator, out=out, where=denominator > 0)
    return out


def _ranks(sims: np.ndarray, columns: np.ndarray, values: np.ndarray, positions: np.ndarray,
           prefix: int) -> np.ndarray:
    """0-based rank, in the full stable descending order, of each chosen candidate.

    Positions in the sorted prefix are their rank; a candidate from the
    unsorted tail is ranked by counting the candidates before it.
    """
    ranks = positions.copy()
    rows, slots = np.nonzero((positions >= prefix) & (columns >= 0))
    if len(rows):
        row_sims = sims[rows]
        value = values[rows, slots][:, None]
        column = columns[rows, slots][:, None]
        before = (row_sims > value) | ((row_sims == value)
                                       & (np.arange(sims.shape[1])[None, :] < column))
        ranks[rows, slots] = before.sum(axis=1)
    return ranks
