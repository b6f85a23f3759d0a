"""What an attack reveals: the measures of one scenario and of the baselines.

`attack_metrics` turns the `Outcome` of
a poisoned scenario into its row of measures (exposure, per-fake and pooled
recovery, item inference); `recovery` and `item_mean_recovery`
are the two baselines (the unpoisoned model, the crowd).  Estimates are
compared with the target's ratings after [`round_to_grid`][].
"""

from __future__ import annotations

import math

import numpy as np

from ..utils._arrays import top_mask
from .poisoning import AttackTarget, BaseData
from .runners import Outcome

__all__ = ["attack_metrics", "item_mean_recovery", "pooled_vote", "recovery", "round_to_grid"]


def round_to_grid(estimates: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Each estimate rounded to the nearest value of the sorted rating ``grid``.

    Halfway cases go up (3.5 → 4 on 1..5); a tolerance of 1e-9 absorbs the
    summation-order noise of a weighted mean that is exactly halfway.  NaN
    (an impossible prediction) stays NaN.

    Parameters
    ----------
    estimates : array_like of float
    grid : array_like of float
        The possible ratings, sorted ascending.

    Returns
    -------
    ndarray of float64, the shape of ``estimates``
    """
    estimates = np.asarray(estimates, dtype=np.float64)
    grid = np.asarray(grid, dtype=np.float64)
    midpoints = (grid[1:] + grid[:-1]) / 2
    rounded = grid[np.searchsorted(midpoints, np.nan_to_num(estimates) + 1e-9, side="right")]
    return np.where(np.isnan(estimates), np.nan, rounded)


def pooled_vote(rounded: np.ndarray, estimates: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """The attacker's pooled guess: per column, the most frequent rounded value.

    Parameters
    ----------
    rounded : ndarray, shape (n_fakes, n_items)
        ``round_to_grid(estimates, grid)``; NaN (impossible) is ignored.
    estimates : ndarray, shape (n_fakes, n_items)
    grid : ndarray
        The sorted rating values.

    Returns
    -------
    ndarray, shape (n_items,)
        The vote; ties go to the value nearest the mean of the column's
        estimates; NaN for a column without any possible estimate.
    """
    counts = (rounded[:, :, None] == grid[None, None, :]).sum(axis=0).astype(np.float64)
    possible = ~np.isnan(estimates)
    n = possible.sum(axis=0)
    mean = np.where(possible, estimates, 0.0).sum(axis=0) / np.maximum(n, 1)
    span = float(grid[-1] - grid[0]) + 1.0
    score = counts - 0.5 * np.abs(grid[None, :] - mean[:, None]) / span
    vote = grid[np.argmax(score, axis=1)]
    return np.where(n > 0, vote, np.nan)


def _top_n_mask(keys: np.ndarray, n: int) -> np.ndarray:
    """Per row, the ``n`` largest finite keys (ties: the lower column first, as a stable
    descending sort): `dprec.utils._arrays.top_mask` without the infinite keys."""
    return top_mask(keys, n) & np.isfinite(keys)


def _precision_recall(inferred: np.ndarray, truth: np.ndarray,
                      n_truth: int) -> tuple[float, float]:
    """Precision and recall of the ``inferred`` columns against the ``truth`` columns
    (``n_truth`` true items in all, some possibly outside the columns); NaN when
    nothing is inferred / nothing is true."""
    hits = float((inferred & truth).sum())
    precision = hits / inferred.sum() if inferred.any() else math.nan
    recall = hits / n_truth if n_truth else math.nan
    return precision, recall


def attack_metrics(outcome: Outcome, target: AttackTarget, n_items: int, grid: np.ndarray,
                   top_n: int | None) -> dict[str, float]:
    """The measures of one poisoned scenario (see `dprec.attacks.simulator`).

    Parameters
    ----------
    outcome : Outcome
        What the model fitted on the poisoned data shows the fake users.
    target : AttackTarget
    n_items : int
        Number of items of the dataset.
    grid : ndarray
        The sorted rating values.
    top_n : int or None
        Length of the recommendation lists used for item inference; None when
        the outcome covers the hidden items only (the four item-inference
        measures are then NaN).

    Returns
    -------
    dict
        ``exposure``, ``exposure_any``, ``recovery``, ``recovery_pooled``,
        ``recovery_any``, ``possible_precision``, ``possible_recall``,
        ``topn_precision``, ``topn_recall`` and ``selector_beta``.
    """
    hidden_est = outcome.at(target.hidden_items, n_items)
    rounded = round_to_grid(hidden_est, grid)
    hits = rounded == target.hidden_ratings[None, :]
    pooled = pooled_vote(rounded, hidden_est, grid) == target.hidden_ratings
    possible_pr = topn_pr = (math.nan, math.nan)
    if top_n is not None:
        columns, estimates = outcome.columns, outcome.estimates
        role = np.zeros(n_items, dtype=np.int8)
        role[target.hidden_items], role[target.known_items] = 1, 2
        hidden = role[columns] == 1
        possible = ~np.isnan(estimates) & (role[columns] != 2)[None, :]
        in_top = _top_n_mask(np.where(possible, estimates, -np.inf), top_n)  # sorted columns
        possible_pr = _precision_recall(possible.any(axis=0), hidden, len(target.hidden_items))
        topn_pr = _precision_recall(in_top.any(axis=0), hidden, len(target.hidden_items))
    exposure = outcome.exposure
    measured = not np.isnan(exposure).all()
    return {
        "exposure": float(exposure.mean()) if measured else math.nan,
        "exposure_any": float((exposure > 0).any()) if measured else math.nan,
        "recovery": float(hits.mean(axis=1).mean()),
        "recovery_pooled": float(pooled.mean()),
        "recovery_any": float(hits.any(axis=0).mean()),
        "possible_precision": possible_pr[0], "possible_recall": possible_pr[1],
        "topn_precision": topn_pr[0], "topn_recall": topn_pr[1],
        "selector_beta": outcome.selector_beta,
    }


def recovery(outcome: Outcome, target: AttackTarget, n_items: int, grid: np.ndarray) -> float:
    """Fraction of the hidden items whose estimate (the outcome's first user's row) rounds
    to the target's rating; an impossible estimate is a miss."""
    estimates = outcome.at(target.hidden_items, n_items)[0]
    return float((round_to_grid(estimates, grid) == target.hidden_ratings).mean())


def item_mean_recovery(base: BaseData, target: AttackTarget) -> float:
    """What the crowd reveals: the fraction of the hidden items whose mean rating among
    the other users rounds to the target's rating (an item nobody else rated is a miss)."""
    ratings = base.ratings
    totals = np.concatenate([[0.0], np.cumsum(ratings.item_ratings)])
    items = target.hidden_items
    sums = totals[ratings.item_ptr[items + 1]] - totals[ratings.item_ptr[items]]
    counts = np.diff(ratings.item_ptr)[items] - 1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        means = np.where(counts > 0, (sums - target.hidden_ratings) / counts, np.nan)
    return float((round_to_grid(means, base.grid) == target.hidden_ratings).mean())
