"""The answers' bookkeeping: the neighbours chosen for a batch of queries, the batch of
estimates built on them, and the running totals of the selections a model has made.

Both neighbourhoods' engines answer in these terms: one `Chosen` row per
selection, a `Batch` mapping each query to its selection (`row`), and the
`details` Surprise shows with each prediction.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, fields
from functools import cached_property

import numpy as np

from .blocks import at_positions


@dataclass
class Chosen:
    """Neighbours chosen for a batch of queries (one row each)."""

    columns: np.ndarray      # candidate columns (user ids or rater slots), -1 if empty
    weights: np.ndarray      # similarities used in the prediction, 0 if empty
    alpha: np.ndarray        # realised accuracy α per query
    beta: np.ndarray         # selector's security β per query
    partitions: np.ndarray   # 1-based partition of each chosen neighbour, 0 if empty

    def take(self, rows: np.ndarray) -> Chosen:
        """The selections `rows` (a new `Chosen`)."""
        return Chosen(*(getattr(self, f.name)[rows] for f in fields(self)))

    @staticmethod
    def concatenate(parts: list[Chosen]) -> Chosen:
        """The selections of `parts`, one after the other."""
        return Chosen(*(np.concatenate([getattr(c, f.name) for c in parts])
                        for f in fields(Chosen)))


@dataclass
class Batch:
    """Estimates for a batch of queries and the selections behind them.

    `chosen` and `neighbours` hold one row per selection and `row` maps
    each query to its selection: one per query in the item neighbourhood, one
    per user in the user neighbourhood (many queries share it).  In the item
    neighbourhood the chosen columns are positions among the raters of the
    item asked, `candidates[starts[row] + position]`; in the user
    neighbourhood they are user ids (`starts` is None).
    """

    est: np.ndarray          # (n_rules, n_queries): one row per prediction rule asked
    actual_k: np.ndarray
    row: np.ndarray          # each query's row of `chosen` and `neighbours`
    parts: list[Chosen]      # `chosen` in blocks, joined when first read
    starts: np.ndarray | None = None      # per selection: where its candidates start
    candidates: np.ndarray | None = None  # the raters, item by item

    @cached_property
    def chosen(self) -> Chosen:
        """The selections, joined from `parts` when first read."""
        return Chosen.concatenate(self.parts) if len(self.parts) > 1 else self.parts[0]

    @cached_property
    def neighbours(self) -> np.ndarray:
        """Inner ids of the chosen neighbours, `-1` if empty (built when first read,
        part by part: the parts' other fields are not joined for it)."""
        if self.starts is None:
            return self.chosen.columns
        ends = np.cumsum([len(part.columns) for part in self.parts])
        return np.concatenate([
            at_positions(self.candidates, self.starts[end - len(part.columns):end],
                         part.columns, -1) for part, end in zip(self.parts, ends)])

    @classmethod
    def empty(cls, k: int, n_rules: int = 1) -> Batch:
        """A batch of no query (`k` columns, `n_rules` rows of estimates)."""
        nothing = np.zeros(0, dtype=np.int64)
        chosen = Chosen(np.full((0, k), -1), np.zeros((0, k)), np.ones(0), np.ones(0, np.int64),
                        np.zeros((0, k), dtype=np.int64))
        return cls(np.zeros((n_rules, 0)), nothing, nothing, [chosen])

    def details(self, diagnostics: bool, **extra) -> Iterator[dict]:
        """The `details` of every query, in order: `actual_k` as KNNBasic, plus, with
        `diagnostics`, α, β and the chosen neighbours' partitions (and `extra`).  Lazy,
        so that `dprec.utils._surprise.predictions` builds them."""
        if not diagnostics:
            return ({"actual_k": n, **extra} for n in self.actual_k.tolist())
        chosen = self.chosen.take(self.row)
        return ({"actual_k": n, "alpha": a, "beta": b, "partitions": [p for p in row if p],
                 **extra}
                for n, a, b, row in zip(self.actual_k.tolist(), chosen.alpha.tolist(),
                                        chosen.beta.tolist(), chosen.partitions.tolist()))


class SelectionLog:
    """Running totals of the selections a fitted model has made."""

    def __init__(self) -> None:
        self.count = 0
        self.alpha = self.beta = self.max_partition_sum = 0.0
        self.max_partition = 0

    def add(self, chosen: Chosen) -> None:
        """Count the selections of `chosen`."""
        if len(chosen.alpha) == 0:
            return
        furthest = chosen.partitions.max(axis=1)
        self.count += len(chosen.alpha)
        self.alpha += float(chosen.alpha.sum())
        self.beta += float(chosen.beta.sum())
        self.max_partition_sum += float(furthest.sum())
        self.max_partition = max(self.max_partition, int(furthest.max()))

    def summary(self) -> dict:
        """`selections`, the mean `alpha` and `beta`, `max_partition` and
        `mean_max_partition` (what `PrivateKNN.selection_summary` returns)."""
        n = max(self.count, 1)
        return {"selections": self.count, "alpha": self.alpha / n if self.count else float("nan"),
                "beta": self.beta / n if self.count else float("nan"),
                "max_partition": self.max_partition,
                "mean_max_partition": self.max_partition_sum / n if self.count else float("nan")}
