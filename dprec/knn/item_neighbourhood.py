"""The item neighbourhood's answers (Surprise's kNN semantics): the neighbours of user
$u$ for item $i$ are chosen among the raters of $i$, query by query.

Queries are answered by groups whose users' similarity rows are read together
(all of them with the whole matrix, blocks of users with blocked storage,
here or as tasks on Dask), each group in blocks of queries on threads; the
`Book` is charged here, per `(u, i)` not asked before.
"""

from __future__ import annotations

import numpy as np

from ..selectors import TopK
from ..utils import _kernels as kernels
from ..utils._ratings import RatingArrays
from ..utils._threads import map_blocks
from .accounting import Book
from .answers import Batch, Chosen
from .blocks import length_blocks, row_blocks
from .rules import Rule, Rules, weighted_mean
from .selection import Selection
from .storage import Similarities


class ItemNeighbourhood:
    """Answers with the neighbours of `u` among the raters of `i` (`neighbourhood="item"`).

    Parameters
    ----------
    storage : Similarities
        The fitted similarities.
    ratings : RatingArrays
        The fitted ratings (who rated each item).
    selection : Selection
        How the neighbours are chosen.
    rules : Rules
        The fitted prediction rules (those asked are built before `answer`).
    """

    def __init__(self, storage: Similarities, ratings: RatingArrays, selection: Selection,
                 rules: Rules) -> None:
        self.storage, self.ratings, self.selection, self.rules = (storage, ratings, selection,
                                                                  rules)

    def answer(self, users: np.ndarray, items: np.ndarray, rules: list[Rule],
               book: Book) -> Batch:
        """KNNBasic: neighbours of `u` among the raters of `i`, answered by groups of
        queries (`answer_queries`), here or on Dask, and charged to `book` here."""
        ratings = self.ratings
        keys = tuple(rule.key for rule in rules)   # what a task is sent: the rules are here
        groups = self.storage.query_groups(users)
        parts = self.storage.map(ItemNeighbourhood.answer_queries, self,
                                 [(users[g], items[g], keys) for g in groups], threads=False)
        in_blocks = np.concatenate([group[order] for group, (order, _) in zip(groups, parts)])
        answers = [answer for _, group_answers in parts for answer in group_answers]
        # the selections stay in block order (`row` maps each query to its own)
        row = np.empty(len(users), dtype=np.int64)
        row[in_blocks] = np.arange(len(users))
        est = np.concatenate([answer[1] for answer in answers], axis=1)
        actual_k = np.concatenate([answer[2] for answer in answers])
        users, items = users[in_blocks], items[in_blocks]
        batch = Batch(est[:, row], actual_k[row], row, [answer[0] for answer in answers],
                      ratings.item_ptr[items], ratings.item_users)
        if book.entries:   # else the neighbours' ids are built only if read
            book.charge(users * ratings.n_items + items, users, items, batch.neighbours)
        book.log([answer[0] for answer in answers])
        return batch

    def answer_queries(self, queries: tuple) -> tuple[np.ndarray, list]:
        """Item-neighbourhood answers to `queries = (users, items, rule keys)`: their
        order and one `(chosen, est, actual_k)` per block of that order (`est` one
        row per rule; the chosen columns are positions among the item's raters).

        With the compiled kernels and a selector that reads only a sorted
        prefix (top-k), `dprec.utils._kernels.stable_top` finds each query's
        prefix from its raters' similarities directly, the queries in blocks
        of about $2^{21}$ candidates ordered by similarity row
        (`dprec.knn.blocks.row_blocks`).
        Otherwise queries are sorted by their item's number of raters and cut
        into blocks of similar length, each padded to a rectangle (padding has
        similarity $-\\infty$), so a whole block is one set of array operations.
        Blocks run in threads (`dprec.utils._threads.map_blocks`), their
        randomness keyed by the queries, so the answer does not depend on it.
        With blocked storage the rows of the queries' users are computed first.
        """
        users, items, keys = queries
        rules = [self.rules[key] for key in keys]
        ratings, selection = self.ratings, self.selection
        sim, rows = self.storage.candidate_rows(users)
        starts = ratings.item_ptr[items]
        lengths = ratings.item_ptr[items + 1] - starts

        prefix = selection.selector.sorted_prefix(selection.k)
        compiled = (kernels.enabled() and prefix is not None
                    and not selection.selector.reads_tail)

        def answer(part) -> tuple[Chosen, np.ndarray, np.ndarray]:
            block, placed = part   # a block of queries and its rows in the kept prefixes
            if compiled:   # the prefix straight from the raters' similarities
                sorted_ = kernels.stable_top(sim, rows[block], starts[block], lengths[block],
                                             ratings.item_users, prefix,
                                             None if kept is None else
                                             (kept[0][placed], kept[1][placed]))
                chosen = selection.select(None, lengths[block], users[block],
                                          (users[block], items[block]), sorted_)
            else:
                width = max(int(lengths[block].max()), 1)  # a padding column if no raters
                offsets = np.arange(width)
                valid = offsets[None, :] < lengths[block][:, None]
                cells = np.where(valid, starts[block][:, None] + offsets[None, :], 0)
                flat = rows[block][:, None] * ratings.n_users + ratings.item_users[cells]
                sims = np.where(valid, sim.ravel().take(flat), -np.inf)
                chosen = selection.select(sims, lengths[block], users[block],
                                          (users[block], items[block]))
            est = np.empty((len(rules), len(block)))
            means = {}   # per deviations (rules with one prediction share them)
            for j, rule in enumerate(rules):
                if id(rule.by_column) not in means:
                    means[id(rule.by_column)] = weighted_mean(
                        chosen.columns, chosen.weights, starts[block], rule.by_column,
                        self.rules.min_sim)
                shift, actual_k = means[id(rule.by_column)]
                est[j] = self.rules.finish(rule, users[block], items[block], shift, actual_k)
            return chosen, est, actual_k

        kept = None
        if compiled:
            blocks = row_blocks(rows, lengths)
            if type(selection.selector) is TopK:   # the prefixes are the choice, kept: one
                kept = (np.empty((len(users), prefix), dtype=np.int64),  # allocation here,
                        np.empty((len(users), prefix)))                   # not per thread
        else:
            by_length = np.argsort(lengths, kind="stable")
            blocks = list(length_blocks(by_length, lengths[by_length]))
        ends = np.cumsum([len(block) for block in blocks])
        return np.concatenate(blocks), map_blocks(answer, [
            (block, slice(end - len(block), end)) for block, end in zip(blocks, ends)])
