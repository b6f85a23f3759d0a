"""Surprise's `estimate` and `test` of a fitted `PrivateKNN`, over its neighbourhood's
answer engine: the same numbers one query at a time or a whole testset at once.

A mixin, as [`KNNQueries`][dprec.knn.queries.KNNQueries]: it reads the fitted model
through the hooks `PrivateKNN.fit` sets up (`dprec.knn.model`): the engine (`_engine`),
the rules (`_rules`, `_rule_`), the book (`_book`), the ratings and baselines
(`_ratings`, `bu`, `bi`), and `prediction_`, `fallback_`, `sim_options_`, `selector_`,
`diagnostics`, `k`, `trainset`, `_check_fitted`, `default_prediction`.
"""

from __future__ import annotations

import numpy as np
from surprise import PredictionImpossible
from surprise.prediction_algorithms.predictions import Prediction

from ..selectors import TopK
from ..utils._surprise import UNKNOWN, inner_ids, predictions
from .answers import Batch
from .rules import Rule, unknown_baseline

#: Surprise's reason for a prediction with fewer than `min_k` neighbours
TOO_FEW = "Not enough neighbors."


class SurprisePredictions:
    """Mixin: Surprise's `estimate` and `test` of `PrivateKNN` (its `predict` is
    [`PrivateModel`][dprec.accountant.private_model.PrivateModel]'s, through `estimate`), and the
    batch answers behind them."""

    def estimate(self, u, i):
        """Estimate one rating from inner ids (same numbers as `test`)."""
        self._check_fitted()
        known_u, known_i = self.trainset.knows_user(u), self.trainset.knows_item(i)
        if not (known_u and known_i):
            if self._baseline_answers_unknown():  # KNNBaseline: the baseline of what is known
                return float(self._unknown_baseline(np.array([u if known_u else -1]),
                                                    np.array([i if known_i else -1]))[0])
            raise PredictionImpossible(UNKNOWN)
        batch = self._estimate_batch(*self._switch(np.array([u]), np.array([i])))
        if not self._rules.possible(self._rule_, batch.actual_k)[0]:
            raise PredictionImpossible(TOO_FEW)
        return float(batch.est[0, 0]), next(self._details(batch))

    def test(self, testset, verbose: bool = False) -> list[Prediction]:
        """Predict a whole testset at once; equal to `predict` one by one."""
        self._check_fitted()
        uids, iids, r_uis, users, items = inner_ids(self.trainset, testset)
        n = len(uids)
        if n == 0:
            return []
        known = np.flatnonzero((users >= 0) & (items >= 0))
        batch = self._estimate_batch(*self._switch(users[known], items[known]))
        position = np.full(n, -1)
        position[known] = np.arange(len(known))
        possible = np.zeros(n, dtype=bool)
        possible[known] = self._rules.possible(self._rule_, batch.actual_k)
        est = np.full(n, self.default_prediction(), dtype=np.float64)
        est[possible] = batch.est[0, position[possible]]
        baseline = self._baseline_answers_unknown()
        if baseline:  # KNNBaseline answers unknown users and items with their baseline
            unknown = position < 0
            est[unknown] = self._unknown_baseline(users[unknown], items[unknown])
        known_details = self._details(batch, was_impossible=False)  # one per known query
        if len(known) == n and possible.all():
            return predictions(self.trainset, uids, iids, r_uis, est, known_details, verbose)

        def details():   # built in predictions' pause of the collector, placed in C loops
            placed = np.empty(n, dtype=object)
            placed[known] = list(known_details)
            impossible = np.flatnonzero(~possible)
            placed[impossible] = [
                {"was_impossible": False} if baseline else
                {"was_impossible": True, "reason": UNKNOWN if j < 0 else TOO_FEW}
                for j in position[impossible].tolist()]
            yield from placed.tolist()

        return predictions(self.trainset, uids, iids, r_uis, est, details(), verbose)

    def _switch(self, users: np.ndarray, items: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """`(x, y)` in Surprise's roles: `(users, items)`, swapped item-based."""
        return (users, items) if self.sim_options_["user_based"] else (items, users)

    def _estimate_batch(self, users: np.ndarray, items: np.ndarray,
                        rules: list[Rule] | None = None) -> Batch:
        """Estimates under `rules` (default: the model's own), and the selections behind
        them, for known inner ids in the `(x, y)` roles (`_switch`), by the
        neighbourhood's engine."""
        rules = [self._rule_] if rules is None else rules
        if not len(users):
            return Batch.empty(self._width, len(rules))
        return self._engine.answer(users, items, rules, self._book)

    def _baseline_answers_unknown(self) -> bool:
        """Whether unknown users and items get the baseline of what is known
        (`KNNBaseline`'s rule, and every rule's with `fallback="baseline"`)."""
        return "baseline" in (self.prediction_, self.fallback_)

    def _unknown_baseline(self, users: np.ndarray, items: np.ndarray) -> np.ndarray:
        return unknown_baseline(self._ratings.global_mean, self.bu, self.bi, users, items)

    def _details(self, batch: Batch, **extra):
        """Each query's `details` (`Batch.details`): the diagnostics with
        `diagnostics=True`, for every selector but top-k."""
        return batch.details(self.diagnostics and not isinstance(self.selector_, TopK),
                             **extra)
