"""Fit many [`PrivateKNN`][] configurations on one trainset, each similarity once,
and score them on a testset without building ``Prediction`` objects."""

from __future__ import annotations

import copy
import warnings

import numpy as np

from ..knn import PrivateKNN
from ..similarity import SKETCH_BACKENDS, sketch_backend, with_public_bounds
from ..similarity.exact import SUM_SIMILARITIES
from ..similarity.incremental import IncrementalSimilarity
from ..utils._ratings import RatingArrays
from ..utils._surprise import inner_ids


class SharedFits:
    """Fits of many configurations on one ``trainset`` sharing their similarities.

    Exact sum similarities (cosine, msd, pearson) are computed once per
    ``name`` and ``min_support``, with each user's ``RS``, and every model is
    fitted through [`fit_precomputed`][dprec.knn.PrivateKNN.fit_precomputed].  A sketch
    backend is released by the first full ``fit`` of its options and integer
    ``random_state`` (every selector with that seed would draw the same
    sketches) and shared with its release, the sensitivity of its scores
    being the backend's score range.  Anything else (other similarities,
    unseeded sketches, other Surprise algorithms) is fitted in full.  The
    models equal full fits (``tests/test_attacks.py``).
    """

    def __init__(self, trainset) -> None:
        self.trainset = trainset
        self.ratings = RatingArrays.from_trainset(trainset)
        self._states: dict[str, tuple] = {}

    def fit(self, algo):
        """Fit ``algo`` (any Surprise algorithm; in place, as ``fit`` does) and return it."""
        if not isinstance(algo, PrivateKNN):
            return algo.fit(self.trainset)
        checked = copy.deepcopy(algo).check_params()
        options = checked.sim_options_
        name = options["name"]
        seeded = isinstance(algo.random_state, (int, np.integer))
        if not options["user_based"] or not (name in SUM_SIMILARITIES
                                             or (name in SKETCH_BACKENDS and seeded)):
            return algo.fit(self.trainset)
        needs_sensitivity = checked.selector_.needs_sensitivity
        if name in SUM_SIMILARITIES:
            key = repr(sorted(options.items()))
            if key not in self._states:
                state = IncrementalSimilarity.fit(name, self.ratings.matrix,
                                                  options.get("min_support", 1), True)
                self._states[key] = (state.sim, state.sensitivity(), None)
        else:
            key = repr((sorted(options.items()), algo.random_state))
            if key not in self._states:
                with warnings.catch_warnings():  # users below τ release no sketch: documented
                    warnings.filterwarnings("ignore", message=".*no sketch released.*")
                    algo.fit(self.trainset)
                backend = sketch_backend(with_public_bounds(options, self.trainset.rating_scale))
                self._states[key] = (algo.sim, np.full(self.trainset.n_users,
                                                       float(backend.score_range)),
                                     algo.sketch_release_)
                return algo
        sim, sensitivity, release = self._states[key]
        self.ratings.remember(self.trainset)  # registered: fit_precomputed does not rebuild
        return algo.fit_precomputed(self.trainset, sim,
                                    sensitivity if needs_sensitivity else None, release)


def batch_estimates(algo, trainset, testset) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(truth, est, possible)`` of ``algo.test(testset)``: the true ratings, the
    estimates as Surprise's accuracy functions read them (clipped; the global mean where
    impossible) and whether each was possible.

    [`PrivateKNN`][] answers from its batch arrays
    (``estimate_arrays``); any other fitted Surprise algorithm through ``test``.
    """
    if not isinstance(algo, PrivateKNN):
        predictions = algo.test(testset)
        return (np.array([p.r_ui for p in predictions], dtype=np.float64),
                np.array([p.est for p in predictions], dtype=np.float64),
                np.array([not p.details.get("was_impossible", False) for p in predictions]))
    return rule_estimates(algo, trainset, testset, [{}])[0][0]


def rule_estimates(algo: PrivateKNN, trainset, testset, rules) -> tuple[list[tuple], tuple]:
    """`batch_estimates` of a fitted ``PrivateKNN`` under each of ``rules``, from one
    selection of neighbours ([`estimate_rules`][dprec.knn.PrivateKNN.estimate_rules]), and the
    ``(neighbours, weights)`` of the known queries (the testset's with a known user and
    item, in order)."""
    _, _, r_uis, users, items = inner_ids(trainset, testset)
    truth = np.asarray(r_uis, dtype=np.float64)
    known = np.flatnonzero((users >= 0) & (items >= 0))
    answers, neighbours = algo.estimate_rules(users[known], items[known], rules,
                                              with_neighbours=True)
    out = []
    for known_est, known_possible in answers:
        possible = np.zeros(len(testset), dtype=bool)
        est = np.full(len(testset), algo.default_prediction())
        est[known], possible[known] = known_est, known_possible
        out.append((truth, est, possible))
    return out, neighbours
