"""Pluggable neighbour selectors (top-k, probabilistic, PNCF and its corrected variant, PPNS).

Each selector is a small class with one job: choose neighbours from a
similarity-sorted candidate list, for many queries at once.

See [Neighbour selectors](../selectors.md) for the interface, α, β and which guarantee holds.

Floor 2 of the package map in ``docs/development.md``. May import: `dprec.utils`,
`dprec.accountant`, `dprec.mechanisms`, `dprec.datasets`, `dprec.evaluation`.
"""

from ..utils._rng import QueryNoise
from .base import Selection, Selector
from .exponential import CorrectedPNCF
from .pncf import PNCF
from .ppns import PPNS, ppns_schedule
from .probabilistic import Probabilistic
from .topk import TopK

SELECTORS: dict[str, type[Selector]] = {
    cls.name: cls for cls in (TopK, Probabilistic, PNCF, CorrectedPNCF, PPNS)
}

__all__ = ["PNCF", "PPNS", "SELECTORS", "CorrectedPNCF", "Probabilistic", "QueryNoise",
           "Selection", "Selector", "TopK", "ppns_schedule"]
