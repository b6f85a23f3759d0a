"""Similarity backends for :class:`dprec.PrivateKNN`.

``sim_options`` follows Surprise: ``{"name": ..., "user_based": True,
"min_support": 1}`` plus each private backend's own parameters.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from .._ratings import RatingArrays
from .._validation import check_int
from .exact import (
    EXACT_SIMILARITIES,
    exact_similarity,
    exact_similarity_and_sums,
    recommendation_aware_sensitivity,
)

_EXACT_KEYS = {"name", "user_based", "min_support"}


def check_sim_options(sim_options: Mapping | None) -> dict:
    """Validate ``sim_options`` and return a normalised copy (the input is not mutated).

    Raises
    ------
    TypeError
        If ``sim_options`` is not a mapping.
    ValueError
        For an unknown similarity name or option, ``user_based=False`` (dprec is
        user-based), or ``min_support < 0``.
    """
    if sim_options is None:
        sim_options = {}
    if not isinstance(sim_options, Mapping):
        raise TypeError(f"sim_options must be a dict, got {type(sim_options).__name__}")
    options = dict(sim_options)
    name = options.get("name", "msd")
    if not isinstance(name, str) or name.lower() not in EXACT_SIMILARITIES:
        raise ValueError(f"sim_options['name'] must be one of {EXACT_SIMILARITIES}, got {name!r}")
    options["name"] = name.lower()
    if options.get("user_based", True) is not True:
        raise ValueError("sim_options['user_based'] must be True: dprec's kNN is user-based")
    options["user_based"] = True
    options["min_support"] = check_int(options.get("min_support", 1),
                                       "sim_options['min_support']", minimum=0)
    unknown = set(options) - _EXACT_KEYS
    if unknown:
        raise ValueError(f"sim_options has unknown option(s) {sorted(unknown)} for "
                         f"{options['name']!r}; allowed: {sorted(_EXACT_KEYS)}")
    return options


def similarity_matrix(options: Mapping, ratings: RatingArrays,
                      with_sensitivity: bool = False) -> tuple[np.ndarray, np.ndarray | None]:
    """The user × user similarity matrix described by validated ``options``.

    Returns ``(sim, sensitivity)``; ``sensitivity`` is each user's
    recommendation-aware sensitivity ``RS(u)`` when ``with_sensitivity`` is
    set (the private selectors need it), else ``None``.
    """
    name, min_support = options["name"], options["min_support"]
    sim, sums = exact_similarity_and_sums(name, ratings.matrix, min_support)
    if not with_sensitivity:
        return sim, None
    return sim, recommendation_aware_sensitivity(name, ratings.matrix, sim, sums, min_support)


__all__ = ["EXACT_SIMILARITIES", "check_sim_options", "exact_similarity",
           "recommendation_aware_sensitivity", "similarity_matrix"]
