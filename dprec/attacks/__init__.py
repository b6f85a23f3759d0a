"""Attacks on recommenders: the β-kNN attack as a simulator, and membership inference.

An attacker who knows a few of a target's ratings creates ``β·k`` fake
users rating exactly those items (Calandrino et al., S&P 2011; Lu & Shen,
ComSIS 2015); [`BetaKNNAttack`][] runs the attack on copies of a dataset
and measures what the fake users learn of the target's other ratings
(exposure, recovery, item inference) against what the model and the crowd
reveal without the attack.  The measures are described in
`dprec.attacks.simulator`.

Modules
-------
simulator
    [`BetaKNNAttack`][] and `COLUMNS`: targets, scenarios, the table.
poisoning
    The attacked copies of the data: [`AttackTarget`][], the poisoned and
    baseline copies, [`scenario_seed`][].
shared_similarities
    The similarity states built once per attack and updated per scenario.
runners
    Fitting each attacked algorithm on a scenario and reading its answers.
metrics
    The measures, [`round_to_grid`][].
membership
    Membership inference, user and rating level, with the one-run ε bound
    (`dprec.attacks.membership`; see [Membership inference](../membership.md)).
shadow_membership
    Zhang et al.'s user-level attack with a shadow model and a trained classifier,
    [`shadow_membership_attack`][].

See [The β-kNN attack](../attack.md) for the scenarios, the measures and the results.

Floor 5 of the package map in ``docs/development.md`` (the membership attacks bound ε
with `dprec.audit`'s one-run audit). May import: `dprec.utils`, `dprec.accountant`,
`dprec.mechanisms`, `dprec.datasets`, `dprec.evaluation`, `dprec.similarity`,
`dprec.selectors`, `dprec.knn`, `dprec.endtoend`, `dprec.ranking`, `dprec.audit`.
"""

from __future__ import annotations

import warnings

import numpy as np
from surprise import Trainset

from ..knn import PrivateKNN
from ..similarity import SketchRelease
from ..utils._ratings import RatingArrays
from .metrics import round_to_grid
from .poisoning import AttackTarget, scenario_seed
from .shadow_membership import shadow_membership_attack
from .simulator import COLUMNS, BetaKNNAttack

__all__ = ["COLUMNS", "AttackTarget", "BetaKNNAttack", "round_to_grid", "scenario_seed",
           "shadow_membership_attack"]


def fit_prepared(algo: PrivateKNN, trainset: Trainset, ratings: RatingArrays, sim: np.ndarray,
                 sensitivity: np.ndarray | None,
                 release: SketchRelease | None = None) -> PrivateKNN:
    """Deprecated: register ``ratings`` for ``trainset``, then
    ``algo.fit_precomputed(trainset, sim, sensitivity, release)``.

    !!! warning "Deprecated"
        Use [`PrivateKNN.fit_precomputed`][dprec.knn.PrivateKNN.fit_precomputed] (after
        ``ratings.remember(trainset)`` if the rating arrays are already built).

    Returns
    -------
    PrivateKNN
        ``algo``, fitted.
    """
    warnings.warn("dprec.attacks.fit_prepared is deprecated: use PrivateKNN.fit_precomputed",
                  DeprecationWarning, stacklevel=2)
    ratings.remember(trainset)
    return algo.fit_precomputed(trainset, sim, sensitivity, release)
