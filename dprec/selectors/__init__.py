"""Pluggable neighbour selectors (ALGORITHMS.md §3)."""

from .base import Selector
from .topk import TopK

SELECTORS: dict[str, type[Selector]] = {cls.name: cls for cls in (TopK,)}

__all__ = ["SELECTORS", "Selector", "TopK"]
