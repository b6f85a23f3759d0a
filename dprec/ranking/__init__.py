"""Ranking differential privacy (Xu, Sun & Cheng 2023): privatizers and a ranker.

* :func:`mallows_privatize`, :func:`laplace_privatize` -- ε-ranking DP
  privatizers for one order or many (:mod:`dprec.ranking.mallows`).
* :class:`MallowsRanker` -- a Surprise algorithm trained on privatised
  per-user orders (:mod:`dprec.ranking.learner`).
"""

from .learner import MallowsRanker
from .mallows import (
    concordant_pairs,
    laplace_expected_concordant,
    laplace_order_probabilities,
    laplace_privatize,
    laplace_scale,
    mallows_expected_concordant,
    mallows_log_normaliser,
    mallows_privatize,
    mallows_theta,
)

__all__ = [
    "MallowsRanker",
    "concordant_pairs",
    "laplace_expected_concordant",
    "laplace_order_probabilities",
    "laplace_privatize",
    "laplace_scale",
    "mallows_expected_concordant",
    "mallows_log_normaliser",
    "mallows_privatize",
    "mallows_theta",
]
