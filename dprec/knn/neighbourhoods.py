"""The two neighbourhoods (`neighbourhood=`) and the one interface their engines answer
through: "answer these queries under these rules".

- `"item"`, `ItemNeighbourhood` (Surprise's semantics): the neighbours of $u$ for
  item $i$ are chosen among the raters of $i$, per `(u, i)`;
- `"user"`, `UserNeighbourhood` (the papers'): $u$ has one neighbour set, chosen
  once among all other users and kept; its members who rated $i$ predict.

(Item-based, read "item" for "user" and conversely.)  Either engine returns a
`Batch` (estimates, one row per rule, and the selections behind them) and
charges the queries it answers to the model's `Book`.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from ..utils._ratings import RatingArrays
from .accounting import Book
from .answers import Batch
from .item_neighbourhood import ItemNeighbourhood
from .rules import Rule, Rules
from .selection import Selection
from .storage import Similarities
from .user_neighbourhood import KeptSets, UserNeighbourhood

NEIGHBOURHOODS = ("item", "user")


class Neighbourhood(Protocol):
    """What the model asks of a neighbourhood's engine."""

    def answer(self, users: np.ndarray, items: np.ndarray, rules: list[Rule],
               book: Book) -> Batch:
        """Estimates under `rules` for known inner ids in Surprise's `(x, y)` roles, and
        the selections behind them, charged to `book`."""


def engine(neighbourhood: str, storage: Similarities, ratings: RatingArrays,
           selection: Selection, rules: Rules, sets: KeptSets) -> Neighbourhood:
    """The engine of `neighbourhood` (`"item"` or `"user"`) on a fit's parts."""
    if neighbourhood == "item":
        return ItemNeighbourhood(storage, ratings, selection, rules)
    return UserNeighbourhood(sets, ratings, rules)
