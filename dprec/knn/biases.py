"""The baselines $b_u$, $b_i$ of a fitted `PrivateKNN`, as Surprise's `compute_baselines`
fits them, for `prediction="baseline"` and the `pearson_baseline` similarity.

ALS is vectorised (`dprec.evaluation.baselines.als_baselines`) and fitted once per
trainset and options (`dprec.evaluation.baselines.trainset_baselines`); SGD is Surprise's
own.  $\\hat b_{ui} = \\mu + b_u + b_i$ minimises
$\\sum_{r_{ui}} (r_{ui} - \\mu - b_u - b_i)^2 + \\lambda_u b_u^2 + \\lambda_i b_i^2$
(Koren 2010).
"""

from __future__ import annotations

import numpy as np
from surprise.prediction_algorithms.optimize_baselines import baseline_sgd

from ..evaluation.baselines import als_baselines, trainset_baselines
from ..utils._arrays import segment_ids
from ..utils._ratings import RatingArrays


def fit_baselines(algo, ratings: RatingArrays) -> tuple[np.ndarray, np.ndarray]:
    """`(b_x, b_y)`: the baselines `algo.bu`, `algo.bi` (fitted and set on `algo` if
    they are `None`, cached per fit), in the roles of the rows and columns of `ratings`
    (users and items, or swapped).

    Parameters
    ----------
    algo : PrivateKNN
        A model being fitted: its `trainset`, `sim_options_`, `bsl_options_` and
        `verbose` are read (Surprise's SGD reads `bsl_options` itself).
    ratings : RatingArrays
        The fitted ratings, in Surprise's `(x, y)` roles.
    """
    user_based = algo.sim_options_["user_based"]
    method = algo.bsl_options_.get("method", "als")
    if algo.bu is None:
        if algo.verbose:
            print(f"Estimating biases using {method}...")
        if method == "als":
            options = (user_based, algo.bsl_options_.get("n_epochs", 10),
                       algo.bsl_options_.get("reg_u", 15), algo.bsl_options_.get("reg_i", 10))

            def fit() -> tuple[np.ndarray, np.ndarray]:
                matrix = ratings.matrix
                rows = segment_ids(np.diff(matrix.indptr))
                users, items = ((rows, matrix.indices) if user_based
                                else (matrix.indices, rows))
                return als_baselines(users, items, matrix.data, algo.trainset.n_users,
                                     algo.trainset.n_items, ratings.global_mean,
                                     *options[1:])

            algo.bu, algo.bi = trainset_baselines(algo.trainset, options, fit)
        else:   # Surprise's own SGD (it reads the options, validated, from bsl_options)
            algo.bu, algo.bi = baseline_sgd(algo)
    return (algo.bu, algo.bi) if user_based else (algo.bi, algo.bu)
