r"""How often each user's ratings are used to answer others: ReuseKNN's "vulnerable users".

A neighbourhood recommender answers a query $(u, i)$ from the ratings
of its neighbours; a user whose ratings serve many answers is exposed to many
askers, with or without an attacker.  Müllner, Lex, Schedl & Kowald
("ReuseKNN: Neighborhood Reuse for Differentially Private KNN-Based
Recommendations", ACM TIST 14(5), 2023) count, per user, the predictions
their ratings contribute to (*data usage*) and call a user **vulnerable**
when that count reaches a threshold $\tau$; they report 80.4% of the
users vulnerable for plain UserKNN and 24.1% for their best variant on
MovieLens 1M at $k = 10$.

* [`data_usage`][] counts, for a fitted [`PrivateKNN`][] and a
  set of queries, how many of them each user contributes to: a chosen
  neighbour with a counted weight (similarity $> 0$, as ReuseKNN's
  UserKNN and Surprise's ``KNNBasic``; $\ne 0$ with ``centered=True``;
  above the model's ``min_sim`` if it has one) who rated the item (user
  neighbourhood: one neighbour set per user, so only its members who rated
  $i$ answer).  The asking user is never counted, nor anyone when the
  model's rule reads no neighbour: with ``neighbour_shrinkage=inf`` and a
  rule whose answer their number does not decide (not the basic rule with
  ``fallback="global_mean"``, impossible without them, nor a rule on
  $\mu_u$ with ``fallback="baseline"``).  The rule is the model's own:
  neighbours read for another rule of ``estimate_rules`` are counted by
  this model's.
* [`reuseknn_threshold`][] is $\tau$ as ReuseKNN's published code
  computes it from plain UserKNN's data usage (``get_privacy_threshold``):
  a 25-bin histogram of the usage, a Gaussian kernel density of bandwidth
  50 fitted to the histogram's *counts*, evaluated on 1,000 points from 0
  to the largest usage, and the point where its second difference is
  largest.  Reproduced as published (it mixes the count and usage axes; it
  is the anchor's rule, not one dprec would choose), so that shares can be
  compared with the paper's.
* [`vulnerable_share`][] is the fraction of users with usage
  $\ge \tau$ (``fraction_vulnerables`` in the same code).

These are measurements of exposure, not privacy guarantees.
"""

from __future__ import annotations

import numpy as np

from ..accountant.private_model import NotFittedError
from ..knn import PrivateKNN
from ..knn.rules import counts, reads_neighbours
from ..utils._ratings import RatingArrays
from ..utils._validation import check_real

__all__ = ["data_usage", "reuseknn_threshold", "vulnerable_share"]


def data_usage(algo: PrivateKNN, users, items,
               neighbours: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """Per user of ``algo``'s trainset, the number of queries ``(users[j], items[j])``
    their ratings contribute to.

    Reads the neighbours through [`kneighbors`][dprec.knn.PrivateKNN.kneighbors]: the
    same draws as the predictions (queries already answered are not
    charged again), unless given.

    Parameters
    ----------
    algo : PrivateKNN
        Fitted, user-based.
    users, items : 1-D arrays of inner ids, of the same length
    neighbours : (ndarray, ndarray), optional
        Each query's neighbours and weights, as already read for these
        queries (``estimate_rules(..., with_neighbours=True)``), instead of
        drawing them again.

    Returns
    -------
    ndarray of int64, shape (n_users,)
    """
    if not isinstance(algo, PrivateKNN):
        raise TypeError(f"algo must be a fitted PrivateKNN, got {type(algo).__name__}")
    if not hasattr(algo, "sim_options_"):
        raise NotFittedError("algo is not fitted yet: call fit first")
    if not algo.sim_options_["user_based"]:
        raise ValueError("data_usage counts user neighbours: algo must be user-based")
    users, items = np.asarray(users), np.asarray(items)
    if users.shape != items.shape or users.ndim != 1:
        raise ValueError(f"users and items must be 1-D arrays of the same length, got shapes "
                         f"{users.shape} and {items.shape}")
    n_users = algo.trainset.n_users
    if not reads_neighbours((algo.prediction_, algo.fallback_, algo.neighbour_shrinkage_)):
        return np.zeros(n_users, dtype=np.int64)
    if neighbours is not None:
        neighbours, weights = neighbours
        if neighbours.shape != weights.shape or len(neighbours) != len(users):
            raise ValueError(f"neighbours must be two arrays of one row per query "
                             f"({len(users)}), got shapes {neighbours.shape} and "
                             f"{weights.shape}")
    elif algo.neighbourhood_ == "item":
        neighbours, weights = algo.kneighbors(users, items)
    else:
        unique, row = np.unique(users, return_inverse=True)
        neighbours, weights = (part[row] for part in algo.kneighbors(unique))
    counted = counts(weights, algo.min_sim_) & (neighbours >= 0) & (neighbours != users[:, None])
    if algo.neighbourhood_ == "user":    # the set's members who rated the item answer
        rows, slots = np.nonzero(counted)
        _, rated = RatingArrays.from_trainset(algo.trainset).lookup(neighbours[rows, slots],
                                                                    items[rows])
        counted[rows, slots] = rated
    return np.bincount(neighbours[counted], minlength=n_users).astype(np.int64)


def reuseknn_threshold(usage) -> float:
    r"""ReuseKNN's threshold $\tau$ from plain UserKNN's data usage, as their code
    computes it (see the module docstring).

    $$
    \hat f(x) = \frac{1}{25} \sum_{b=1}^{25} \varphi_{50}(x - c_b), \qquad
    \tau = \operatorname*{arg\,max}_{x \in \{x_0, \dots, x_{999}\}} \Delta^2 \hat f(x)
    $$

    with $c_b$ the histogram counts, $\varphi_{50}$ the normal
    density of standard deviation 50, $x_j$ evenly spaced on
    $[0, \max \text{usage}]$ and $\Delta^2$ numpy's second
    ``gradient`` (unit spacing).

    Parameters
    ----------
    usage : array_like of non-negative numbers, not empty

    Returns
    -------
    float
    """
    usage = np.asarray(usage, dtype=np.float64)
    if usage.ndim != 1 or not len(usage):
        raise ValueError("usage must be a non-empty 1-D array of counts")
    if not np.isfinite(usage).all() or (usage < 0).any():
        raise ValueError("usage must hold finite counts >= 0")
    counts, edges = np.histogram(usage, bins=25)
    grid = np.linspace(0.0, float(edges.max()), 1000)
    bandwidth = 50.0
    density = np.exp(-0.5 * ((grid[:, None] - counts[None, :]) / bandwidth) ** 2).mean(axis=1)
    density /= bandwidth * np.sqrt(2 * np.pi)
    return float(grid[np.argmax(np.gradient(np.gradient(density)))])


def vulnerable_share(usage, threshold: float) -> float:
    """Fraction of users whose data usage reaches ``threshold`` (ReuseKNN's
    ``fraction_vulnerables``: ``usage >= threshold``)."""
    usage = np.asarray(usage, dtype=np.float64)
    if usage.ndim != 1 or not len(usage):
        raise ValueError("usage must be a non-empty 1-D array of counts")
    threshold = check_real(threshold, "threshold", low=0.0)
    return float(np.mean(usage >= threshold))
