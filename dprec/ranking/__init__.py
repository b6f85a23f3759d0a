"""Ranking differential privacy (Xu, Sun & Cheng 2023): privatizers and a ranker.

* [`mallows_privatize`][], [`laplace_privatize`][] -- ε-ranking DP
  privatizers for one order or many (`dprec.ranking.mallows`).
* [`MallowsRanker`][] -- a Surprise algorithm trained on privatised
  per-user orders (`dprec.ranking.learner`).

Floor 4 of the package map in ``docs/development.md``. May import: `dprec.utils`,
`dprec.accountant`, `dprec.mechanisms`, `dprec.datasets`, `dprec.evaluation`,
`dprec.similarity`, `dprec.selectors`, `dprec.knn`.
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
