r"""Baseline estimates $b_{ui} = \mu + b_u + b_i$ (Koren 2010), as Surprise fits them.

Surprise's ``baseline_als`` alternates, for ``n_epochs``, the ridge updates

$$
b_i = \frac{\sum_{u \in U_i} (r_{ui} - \mu - b_u)}{\lambda_i + |U_i|}, \qquad
b_u = \frac{\sum_{i \in I_u} (r_{ui} - \mu - b_i)}{\lambda_u + |I_u|}
$$

item by item and user by user in Python-level loops; here each half-epoch
is one ``bincount`` over all the ratings, the same expressions summed in
another order (equal to Surprise's to about 1e-15).  Surprise's SGD visits
the ratings one after another, each step using the previous one: it is left
to Surprise (`surprise.AlgoBase.compute_baselines`).

[`trainset_baselines`][] fits them once per trainset and options: the
models of an experiment fitted on one trainset share them.  [`MeanRating`][]
is the simplest baseline of all: each user's (or item's) own mean rating.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable

import numpy as np
from surprise import AlgoBase

from ..utils._ratings import RatingArrays
from ..utils._validation import check_choice

__all__ = ["MeanRating", "als_baselines", "trainset_baselines"]


def als_baselines(users: np.ndarray, items: np.ndarray, ratings: np.ndarray, n_users: int,
                  n_items: int, global_mean: float, n_epochs: int = 10, reg_u: float = 15.0,
                  reg_i: float = 10.0) -> tuple[np.ndarray, np.ndarray]:
    """``(b_u, b_i)`` by Surprise's alternating least squares.

    Parameters
    ----------
    users, items : ndarray of int
        Inner ids of each rating.
    ratings : ndarray of float
    n_users, n_items : int
    global_mean : float
        μ, the trainset's mean rating.
    n_epochs, reg_u, reg_i
        Surprise's ``bsl_options`` (defaults 10, 15, 10).

    Returns
    -------
    (ndarray of shape (n_users,), ndarray of shape (n_items,))
    """
    bu, bi = np.zeros(n_users), np.zeros(n_items)
    per_user = reg_u + np.bincount(users, minlength=n_users)
    per_item = reg_i + np.bincount(items, minlength=n_items)
    centred = ratings - global_mean
    for _ in range(n_epochs):
        bi = np.bincount(items, centred - bu[users], n_items) / per_item
        bu = np.bincount(users, centred - bi[items], n_users) / per_user
    return bu, bi


def trainset_baselines(trainset, options: tuple, fit: Callable[[], tuple[np.ndarray, np.ndarray]]
                       ) -> tuple[np.ndarray, np.ndarray]:
    """``fit()``, the baselines of ``trainset`` under ``options`` (any hashable key of what
    they depend on), computed once per live trainset and key; copies are returned.

    Surprise's trainsets are not modified after they are built (the assumption
    of `dprec.utils._ratings.RatingArrays` too), so the baselines of one
    trainset and options are fixed.
    """
    fitted = _FITTED.setdefault(trainset, {})
    if options not in fitted:
        fitted[options] = fit()
    return tuple(b.copy() for b in fitted[options])


#: the baselines fitted on each live trainset, by options
_FITTED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class MeanRating(AlgoBase):
    """Each user's own mean rating (`of="user"`), or each item's (`of="item"`).

    An unknown user (item) gets the global mean.  The user's own mean is what a
    user's data give for free under joint differential privacy: it is shown to
    that user alone.  Fitted without a Python loop over the ratings (the
    trainset's arrays, `dprec.utils._ratings.RatingArrays`).

    Parameters
    ----------
    of : {"user", "item"}, default "user"
        Whose mean answers.
    """

    def __init__(self, of: str = "user") -> None:
        AlgoBase.__init__(self)
        self.of = of

    def fit(self, trainset) -> MeanRating:
        """The means of `trainset`'s users (items) and its global mean."""
        of = check_choice(self.of, "of", ("user", "item"))
        AlgoBase.fit(self, trainset)
        arrays = RatingArrays.from_trainset(trainset, user_based=of == "user")
        self.of_, self.means_, self.mu_ = of, arrays.user_means(), arrays.global_mean
        return self

    def estimate(self, u, i) -> float:
        """The user's (item's) mean, or the global mean when it is unknown."""
        if self.of_ == "user":
            known, inner = self.trainset.knows_user(u), u
        else:
            known, inner = self.trainset.knows_item(i), i
        return float(self.means_[inner]) if known else self.mu_
