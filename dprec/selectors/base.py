"""The selector interface: choose neighbours from similarity-sorted candidates.

A selector answers many queries at once.  For each query (a row) it gets the
candidates' similarities sorted in descending order (ties in candidate order,
as ``heapq.nlargest`` keeps them), the number of valid candidates in the row
(the rest is padding), ``k``, the querying users' sensitivities ``RS`` and
the queries' own randomness ([`QueryNoise`][dprec.selectors.QueryNoise]: "one query,
one draw").  It returns a [`Selection`][]: per row, the
positions of the chosen candidates in the sorted row and the selector's
security ``β`` for that query (Lu & Shen, ComSIS 2015): the index of the
furthest partition of ``k`` candidates a neighbour can come from.

See [Neighbour selectors](../selectors.md) for the interface, α, β and which guarantee holds.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np

from ..accountant.ledger import LedgerEntry
from ..mechanisms import exponential_coefficient
from ..mechanisms.common import keyed_gumbel
from ..mechanisms.exponential import exponential_keys
from ..utils._arrays import segment_positions, top_k_indices
from ..utils._rng import QueryNoise


@dataclass(frozen=True)
class Selection:
    """The neighbours chosen for a batch of queries.

    Attributes
    ----------
    positions : ndarray of int64, shape (n_queries, k)
        Positions into the sorted candidate rows, ``-1`` for empty slots.
    beta : ndarray of int64, shape (n_queries,)
        The selector's security β for each query (1 for top-k).
    weights : ndarray of shape (n_queries, k), optional
        Similarities to use in the prediction instead of the true ones
        (PNCF's perturbed similarities), produced by a mechanism of the
        selector's own, which [`Selector.weight_entries`][] names; ``None``
        means the true ones, which no entry of the selector covers.
    """

    positions: np.ndarray
    beta: np.ndarray
    weights: np.ndarray | None = None


class Selector(ABC):
    """Base class of the neighbour selectors.

    Subclasses set `name`, implement [`select`][], and private ones
    set `needs_sensitivity` and override [`privacy`][].
    """

    #: the name accepted by ``PrivateKNN(selector=...)``
    name: str = ""
    #: whether `select` needs the users' sensitivities ``RS``
    needs_sensitivity: bool = False
    #: whether `select` reads the candidates after `sorted_prefix`
    #: (then given unsorted, in candidate order, as one pool)
    reads_tail: bool = False

    @abstractmethod
    def select(self, sims: np.ndarray, n_valid: np.ndarray, k: int, noise: QueryNoise,
               sensitivity: np.ndarray | None = None) -> Selection:
        """Choose up to ``k`` neighbours per row.

        Parameters
        ----------
        sims : ndarray of shape (n_queries, n_candidates)
            Candidate similarities, each row sorted in descending order (up to
            [`sorted_prefix`][]); padding is ``-inf``, at the end of the
            sorted part (anywhere in an unsorted tail).
        n_valid : ndarray of int, shape (n_queries,)
            Number of real candidates per row.
        k : int
            Number of neighbours wanted.
        noise : QueryNoise
            The queries' randomness (unused by deterministic selectors).
        sensitivity : ndarray of shape (n_queries,), optional
            The querying user's recommendation-aware sensitivity ``RS``.
        """

    def check_k(self, k: int) -> None:  # noqa: B027
        """Reject a number of neighbours the selector cannot honour (nothing by default)."""

    def sorted_prefix(self, k: int) -> int | None:
        """How many leading positions [`select`][] needs sorted (None: all).

        Lets the caller skip sorting what the selector never orders: the
        positions after the prefix are omitted, or, with `reads_tail`,
        passed unsorted.
        """
        return None

    def privacy(self, k: int, sensitivity: np.ndarray | None = None) -> list[LedgerEntry]:
        """What one neighbour selection claims, one entry per mechanism (none by default).

        ``sensitivity`` holds the users' ``RS`` when the selector needs it.
        Each entry says whose data one application touches (``applies_to``:
        every candidate of the neighbour set, or every chosen neighbour).
        """
        return []

    def weight_entries(self, entries: list[LedgerEntry]) -> list[int]:
        """The positions in ``entries`` (what [`privacy`][] returned) of the mechanisms
        that produce `Selection.weights`, the weights a model releases beside the
        neighbours' ids (``PrivateKNN.kneighbors``).

        None by default: the selector chooses ids only and returns no weights, so
        the model weighs the neighbours by their similarities, which its entries do
        not cover (an exponential draw protects which candidates are chosen, not
        their scores); the model's privacy report declares them.
        """
        return []

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if not k.startswith("_"))
        return f"{type(self).__name__}({params})"


def partition_count(n_valid: np.ndarray, k: int) -> np.ndarray:
    """Number of partitions of ``k`` candidates in each row, ``⌈n_valid / k⌉``."""
    return -(-np.asarray(n_valid) // k)


def reachable_partitions(n_reachable: np.ndarray, k: int) -> np.ndarray:
    """The security β of rows whose first ``n_reachable`` candidates can be chosen:
    ``max(⌈n_reachable / k⌉, 1)`` partitions, int64 (β ≥ 1 also for an empty row)."""
    return np.maximum(partition_count(n_reachable, k), 1).astype(np.int64)


def valid_candidates(n_valid: np.ndarray, width: int) -> np.ndarray:
    """Boolean ``(n_rows, width)`` mask of each row's first ``n_valid`` positions."""
    return np.arange(width)[None, :] < np.asarray(n_valid)[:, None]


def first_positions(n_valid: np.ndarray, k: int) -> np.ndarray:
    """Positions ``0..k-1`` of every row, ``-1`` past the row's valid candidates."""
    positions = np.broadcast_to(np.arange(k), (len(n_valid), k))
    return np.where(positions < np.asarray(n_valid)[:, None], positions, -1)


def gumbel_keys(scores: np.ndarray, coefficient: float, noise: QueryNoise,
                mask: np.ndarray | None = None, stream: int = 0) -> np.ndarray:
    r"""The exponential mechanism's keys $c\,q(j) + G_j$ of every query, exact at any $c$.

    $G_j$ are standard Gumbel variates keyed by the query's ids ("one query,
    one draw"), drawn by `keyed_gumbel` with
    both tails to a relative $2^{-52}$: every candidate can win at every ε,
    with its exact probability.  (One 53-bit uniform per candidate, as
    [`gumbel_keys_from_uniform`][dprec.mechanisms.exponential.gumbel_keys_from_uniform]
    takes, bounds every key within about 40.4 of $c\,q(j)$: above
    $c\,(\max q - \min q) \approx 40$ the worst candidates could never be drawn, and a
    sampler that cannot produce every output has no pure-DP guarantee.)
    """
    gumbel = keyed_gumbel(noise.seed, noise.keys, scores.shape[1], stream)
    return exponential_keys(scores, coefficient, gumbel, mask=mask)


def top_by_key(keys: np.ndarray, counts: np.ndarray, k: int) -> np.ndarray:
    """Per row, the positions of the ``counts[q]`` largest ``keys`` (``-inf`` never),
    padded with ``-1`` to width ``k``; best first.

    The Gumbel top-k of the selectors: with the keys of
    [`dprec.mechanisms.gumbel_keys_from_uniform`][], the positions are
    ``counts[q]`` exponential-mechanism draws without replacement (Durfee &
    Rogers 2019).  The ``max(counts)`` best of every row come from
    `dprec.utils._arrays.top_k_indices`, the kernel of
    [`dprec.mechanisms.gumbel_top_k_from_uniform`][] (a partition, then a
    sort of those kept; the keys are continuous noise: ties have probability
    0; for one, ``argmax``, the first tied column on every CPU).
    """
    counts = np.asarray(counts)
    most = min(int(counts.max(initial=0)), keys.shape[1], k)
    out = np.full((len(keys), k), -1)
    if most == 0:
        return out
    order = top_k_indices(keys, most)
    ranked = np.take_along_axis(keys, order, axis=1)
    keep = (np.arange(most)[None, :] < counts[:, None]) & np.isfinite(ranked)
    out[:, :most] = np.where(keep, order, -1)
    return out


def mask_to_positions(mask: np.ndarray, k: int) -> np.ndarray:
    """The positions of the ``True`` cells of each row (at most ``k``), ascending,
    padded with ``-1``."""
    rows, columns = np.nonzero(mask)
    counts = mask.sum(axis=1)
    rank = segment_positions(counts)
    keep = rank < k
    out = np.full((len(mask), k), -1)
    out[rows[keep], rank[keep]] = columns[keep]
    return out


def positions_to_mask(positions: np.ndarray, width: int) -> np.ndarray:
    """Boolean ``(n_rows, width)`` mask of the (non-negative) ``positions``."""
    mask = np.zeros((len(positions), width + 1), dtype=bool)
    np.put_along_axis(mask, np.where(positions >= 0, positions, width), True, axis=1)
    return mask[:, :width]


def normalised_scores(sims: np.ndarray, valid: np.ndarray, sensitivity: np.ndarray) -> np.ndarray:
    """``sim / RS`` per row (0 on padding): scores of sensitivity 1.

    The selectors' weights ``exp(ε·sim / (4k·RS))`` are then
    ``exp(c·score)`` with ``c = ε/(4k)`` (`normalised_coefficient`):
    each of ``k`` draws spends ``2c = ε/(2k)`` and a neighbour set ``ε/2``
    ([`dprec.mechanisms.exponential_epsilon`][]).
    """
    return np.where(valid, sims, 0.0) / np.asarray(sensitivity, dtype=np.float64)[:, None]


def normalised_coefficient(epsilon: float, k: int) -> float:
    """``c = ε/(4k)``: the coefficient of PNCF's and PPNS's weights ``exp(c·sim/RS)``.

    ``exponential_coefficient(ε/2, 1, k)`` ([`dprec.mechanisms.exponential_coefficient`][]):
    ``k`` draws on the `normalised_scores` (sensitivity 1) spend ε/2, the
    half of the budget the papers give the selection.
    """
    return exponential_coefficient(epsilon / 2, 1.0, k)
