"""The user neighbourhood's answers (the papers' semantics, and the kNN attack's): every
user has one neighbour set, chosen once per fit among all other users and kept; its
members who rated $i$ predict.

`KeptSets` chooses each user's set the first time it is asked (a block of
users at a time, on threads or on Dask: `SetChooser` is what the tasks are
sent) and reads it back afterwards; `UserNeighbourhood` answers a batch of
`(u, i)` queries from the kept sets by sparse products.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np
import scipy.sparse as sp

from ..utils._arrays import pattern_matrix, safe_divide
from ..utils._ratings import RatingArrays
from .accounting import Book
from .answers import Batch, Chosen
from .blocks import blocks
from .rules import Rule, Rules, counts
from .selection import Selection
from .storage import Similarities


@dataclass(frozen=True)
class SetChooser:
    """What choosing users' neighbour sets reads (and what Dask tasks are sent): the
    similarity rows, the selection, and how many users there are."""

    storage: Similarities
    selection: Selection
    n_users: int

    def choose(self, rows: np.ndarray) -> Chosen:
        """The neighbour sets of the users `rows` among all other users."""
        sims = self.storage.rows(rows)
        sims[np.arange(len(rows)), rows] = -np.inf  # a user is not their own neighbour
        return self.selection.select(sims, np.full(len(rows), self.n_users - 1), rows, (rows,))


class KeptSets:
    """Each user's neighbour set (user ids in `columns`, `-1` for none), chosen once per
    fit and kept.

    A set is chosen from the user's similarity row, and kept (`n · k` numbers,
    never the rows): its noise is keyed by the user, so choosing it again would
    give the same set; later calls read it back.

    Parameters
    ----------
    chooser : SetChooser
    apart : bool
        Key the sets' charges apart from the item neighbourhood's `(u, i)` queries
        (an item-neighbourhood model's `get_neighbors`).
    """

    def __init__(self, chooser: SetChooser, apart: bool) -> None:
        self.chooser, self.apart = chooser, apart
        self.sets: Chosen | None = None     # chosen once per user, then kept
        self.has_set = np.zeros(chooser.n_users, dtype=bool)

    def take(self, users: np.ndarray, book: Book) -> Chosen:
        """The sets of `users` (chosen now if new), charged to `book` and logged."""
        if not len(users):
            return Batch.empty(self.chooser.selection.k).chosen
        with book.lock:   # one caller fills the kept sets at a time
            new = np.unique(users[~self.has_set[users]])
            if len(new):
                storage = self.chooser.storage
                found = Chosen.concatenate(storage.map(
                    SetChooser.choose, self.chooser, [new[block] for block in blocks(
                        np.arange(len(new)), self.chooser.n_users, storage.row_block_cells)]))
                if self.sets is None:
                    self.sets = Chosen(*(
                        np.zeros((self.chooser.n_users,) + getattr(found, f.name).shape[1:],
                                 getattr(found, f.name).dtype) for f in fields(Chosen)))
                for f in fields(Chosen):
                    getattr(self.sets, f.name)[new] = getattr(found, f.name)
                self.has_set[new] = True
            chosen = self.sets.take(users)
        # keyed by u; in the item neighbourhood (get_neighbors) apart from the (u, i) keys
        book.charge(-1 - users if self.apart else users, users, None, chosen.columns)
        book.log([chosen])
        return chosen


class UserNeighbourhood:
    """Answers from one kept neighbour set per user (`neighbourhood="user"`).

    Parameters
    ----------
    sets : KeptSets
        The users' neighbour sets.
    ratings : RatingArrays
        The fitted ratings.
    rules : Rules
        The fitted prediction rules.
    """

    def __init__(self, sets: KeptSets, ratings: RatingArrays, rules: Rules) -> None:
        self.sets, self.ratings, self.rules = sets, ratings, rules

    def answer(self, users: np.ndarray, items: np.ndarray, rules: list[Rule],
               book: Book) -> Batch:
        """One neighbour set per user; its members who rated `i` predict.

        The weighted sums of every (user, item) pair asked are sparse products
        $W D$ and $|W| B$ ($W$ the weights of the users' neighbours that count, $D$
        the rule's deviations, $B$ the rating pattern, restricted to the items
        asked), per block of users.
        """
        unique_users, row = np.unique(users, return_inverse=True)
        chosen = self.sets.take(unique_users, book)
        unique_items, column = np.unique(items, return_inverse=True)
        # one deviation matrix per prediction (the rules of one prediction share it)
        slot = {id(rule.matrix): j for j, rule in reversed(list(enumerate(rules)))}
        deviations = {j: rules[j].matrix[:, unique_items] for j in set(slot.values())}
        pattern = pattern_matrix(next(iter(deviations.values())))
        counted = (chosen.columns >= 0) & counts(chosen.weights, self.rules.min_sim)
        shift = np.zeros((len(rules), len(users)))
        actual_k = np.zeros(len(users), dtype=np.int64)
        by_row = np.argsort(row, kind="stable")
        bounds = np.searchsorted(row[by_row], np.arange(len(unique_users) + 1))
        for block in blocks(np.arange(len(unique_users)), len(unique_items)):
            use = counted[block]
            w = chosen.weights[block][use]
            weights = sp.csr_matrix(
                (w, chosen.columns[block][use], np.concatenate([[0], np.cumsum(use.sum(axis=1))])),
                shape=(len(block), self.ratings.n_users))
            numerators = {j: (weights @ matrix).toarray() for j, matrix in deviations.items()}
            weights.data = np.abs(w)   # Σ |s|: Σ s bit for bit where every s > 0
            denominator = (weights @ pattern).toarray()
            weights.data = np.ones(len(w))
            count = (weights @ pattern).toarray()
            asked = by_row[bounds[block[0]]:bounds[block[-1] + 1]]
            cells = (row[asked] - block[0], column[asked])
            denominator = denominator[cells]
            for j, rule in enumerate(rules):
                shift[j, asked] = safe_divide(numerators[slot[id(rule.matrix)]][cells],
                                              denominator)
            actual_k[asked] = count[cells]
        est = np.array([self.rules.finish(rule, users, items, shift[j], actual_k)
                        for j, rule in enumerate(rules)])
        return Batch(est, actual_k, row, [chosen])
