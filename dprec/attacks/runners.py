"""The per-algorithm runners: fit an attacked recommender on a scenario's data and read it.

A runner fits a copy of its configured algorithm on a `ScenarioData`
and returns an `Outcome`: the estimates of the scenario's users for
the items asked (NaN where the prediction is impossible), their exposure of
the target and the selector's reported β.

* `SurpriseRunner` works with any Surprise algorithm: a full ``fit``
  and Surprise's ``test``; the exposure is read from Surprise's own
  user-based kNN (``heapq`` semantics) or from an
  algorithm's ``neighbours_`` (raw ids keyed by raw user id, as LocalKNN's).
* `PrivateKNNRunner` serves user-based [`PrivateKNN`][]
  (every prediction rule) through its public API only (``fit_precomputed`` with
  a similarity state shared by the scenarios, ``estimate_rules``,
  ``kneighbors``, ``selection_summary``); models that differ only in their
  prediction rule ([`RULE_PARAMETERS`][], same integer seed) share
  one runner, one fit and one selection per scenario.

`make_runner` picks the runner of an algorithm, `make_runners` those of
several, grouped.
"""

from __future__ import annotations

import copy
import inspect
import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from surprise import AlgoBase, Trainset
from surprise.prediction_algorithms.knns import SymmetricAlgo

from ..knn import RULE_PARAMETERS, PrivateKNN
from ..similarity import SKETCH_BACKENDS, sketch_backend, with_public_bounds
from ..similarity.incremental import (
    INCREMENTAL_SIMILARITIES,
    IncrementalSimilarity,
    IncrementalSketchSimilarity,
)
from ..utils._ratings import RatingArrays
from .poisoning import AttackTarget, ScenarioData

__all__ = ["Outcome", "PrivateKNNRunner", "SurpriseRunner", "make_runner", "make_runners"]


@dataclass(frozen=True)
class Outcome:
    """What one fitted model shows the users of a scenario.

    Attributes
    ----------
    estimates : ndarray, shape (n_users, len(columns))
        Clipped to the rating scale; NaN where the prediction is impossible.
    columns : ndarray of int64
        The items of the columns (every other item: impossible).
    exposure : ndarray, shape (n_users,)
        Each user's exposure of the target; NaN when it cannot be measured.
    selector_beta : float
        The β the selector reports for the selections made (NaN for
        Surprise's algorithms).
    """

    estimates: np.ndarray
    columns: np.ndarray
    exposure: np.ndarray
    selector_beta: float

    def at(self, items: np.ndarray, n_items: int) -> np.ndarray:
        """The estimates of ``items`` (NaN for items outside `columns`)."""
        position = np.full(n_items, -1)
        position[self.columns] = np.arange(len(self.columns))
        where = position[items]
        out = self.estimates[:, np.maximum(where, 0)] if len(self.columns) else \
            np.full((len(self.estimates), len(items)), np.nan)
        return np.where(where[None, :] >= 0, out, np.nan)


class SurpriseRunner:
    """Fits one configured Surprise algorithm on scenario data and reads its answers.

    Any Surprise algorithm with an integer ``k``: each scenario fits a copy
    from scratch and asks Surprise's ``test``.

    Parameters
    ----------
    name : str
        The algorithm's name in the attack's table.
    algo : surprise.AlgoBase
        The configured algorithm (never fitted itself).
    """

    #: the key of the shared, incrementally updated similarity state (None: full refit)
    sim_key: tuple | None = None
    #: whether the shared state must carry each user's sensitivity ``RS``
    needs_sensitivity = False

    def __init__(self, name: str, algo: AlgoBase) -> None:
        self.name, self.algo = name, algo
        self.k = int(algo.k)

    @property
    def names(self) -> tuple[str, ...]:
        """The names of the algorithms this runner answers for (one row each)."""
        return (self.name,)

    def outcomes(self, data: ScenarioData,
                 state: IncrementalSimilarity | IncrementalSketchSimilarity | None, seed: int,
                 target: AttackTarget, items: np.ndarray,
                 exposure: bool = True) -> dict[str, Outcome]:
        """`outcome` of every algorithm of the runner, by name."""
        return {self.name: self.outcome(data, state, seed, target, items, exposure)}

    def outcome(self, data: ScenarioData,
                state: IncrementalSimilarity | IncrementalSketchSimilarity | None, seed: int,
                target: AttackTarget, items: np.ndarray, exposure: bool = True) -> Outcome:
        """Fit a copy on ``data`` and read what it shows ``data.users``.

        Parameters
        ----------
        data : ScenarioData
        state : IncrementalSimilarity or IncrementalSketchSimilarity or None
            The shared similarity state updated to ``data`` (unused here: a
            full ``fit``).
        seed : int
            The copy's ``random_state`` (when it has one).
        target : AttackTarget
        items : ndarray of int64
            The items to estimate for every user of ``data.users``.
        exposure : bool, default True
            Whether to measure the users' exposure of ``target`` (else NaN).

        Returns
        -------
        Outcome
        """
        algo = copy.deepcopy(self.algo)  # the caller's object is never refitted
        if hasattr(algo, "random_state"):
            algo.random_state = seed
        algo.fit(data.trainset)
        estimates = _test_estimates(algo, data.trainset, data.users, items)
        exposed = np.full(len(data.users), np.nan)
        if exposure and _is_user_based_knn(algo):
            exposed = _heapq_exposure(algo.sim, data.ratings, data.users, target, algo.k)
        elif exposure and hasattr(algo, "neighbours_"):   # raw ids, keyed by raw user id
            raw = [data.trainset.to_raw_uid(int(u)) for u in data.users]
            exposed = (algo.neighbours_.loc[raw].to_numpy() == target.raw_id).any(axis=1) * 1.0
        return Outcome(estimates, items, exposed, math.nan)


class PrivateKNNRunner(SurpriseRunner):
    """[`PrivateKNN`][] with similarities updated row by row.

    Exact similarities: [`IncrementalSimilarity`][]
    (the centred cosine: its subclass, the rows centred at the users' means; equal
    to a full ``fit``).  Sketch backends:
    [`IncrementalSketchSimilarity`][] (local
    DP: the real users' sketches are released once, from a seed derived from
    the attack's ``random_state`` and the options; the fake users sketch
    theirs in each scenario with scenario-specific noise keys).  A sketch
    backend whose ``tau`` is computed from the data (it changes when fakes
    join) is refitted from scratch (``sim_key`` is None).

    Only ``PrivateKNN``'s public API (``fit_precomputed``, ``estimate_arrays``,
    ``kneighbors``, ``selection_summary``), with the rating arrays the
    simulator already has registered for each changed copy, so that one
    scenario costs milliseconds; equality with a full ``fit`` is tested in
    ``tests/test_attacks.py``.

    ``rules`` adds models that differ from ``algo`` only in
    [`RULE_PARAMETERS`][], by name: each scenario fits once and
    reads every rule from the same selections (``estimate_rules``), which a
    fit of each model with the scenario's seed would make too.
    """

    def __init__(self, name: str, algo: PrivateKNN,
                 rules: Mapping[str, Mapping] | None = None) -> None:
        super().__init__(name, algo)
        self.rules = {name: {}, **(rules or {})}
        checked = copy.deepcopy(algo).check_params()
        self.needs_sensitivity = bool(checked.selector_.needs_sensitivity)
        #: the validated similarity options (``sim_options_`` of the checked copy)
        self.sim_options = options = checked.sim_options_
        if options["name"] in INCREMENTAL_SIMILARITIES:
            self.sim_key = ("exact", options["name"], int(options.get("min_support", 1)))
        elif options["name"] in SKETCH_BACKENDS:
            backend = sketch_backend(with_public_bounds(options, (1.0, 1.0)))
            if getattr(backend, "tau", 0) is not None:  # τ fixed: incremental is exact
                self.sim_key = ("sketch", repr(sorted(options.items())))

    @property
    def names(self) -> tuple[str, ...]:
        """The names of the models this runner answers for: ``name``, then ``rules``'."""
        return tuple(self.rules)

    def outcome(self, data: ScenarioData,
                state: IncrementalSimilarity | IncrementalSketchSimilarity | None, seed: int,
                target: AttackTarget, items: np.ndarray, exposure: bool = True) -> Outcome:
        """Fit a copy on ``data`` with the similarities of ``state`` (a full ``fit``
        when None) and read what it shows ``data.users`` (see
        `SurpriseRunner.outcome`)."""
        return self.outcomes(data, state, seed, target, items, exposure)[self.name]

    def outcomes(self, data: ScenarioData,
                 state: IncrementalSimilarity | IncrementalSketchSimilarity | None, seed: int,
                 target: AttackTarget, items: np.ndarray,
                 exposure: bool = True) -> dict[str, Outcome]:
        """`outcome` of every rule, from one fit and one selection."""
        algo = copy.deepcopy(self.algo)
        algo.random_state = seed
        if state is None:
            algo.fit(data.trainset)
        else:
            release = state.release() if isinstance(state, IncrementalSketchSimilarity) else None
            data.ratings.remember(data.trainset)  # registered: fit_precomputed does not rebuild
            algo.fit_precomputed(data.trainset, state.sim,
                                 state.sensitivity() if self.needs_sensitivity else None, release)
        users, rules = data.users, list(self.rules.values())
        if algo.neighbourhood_ == "user":
            answers = algo.estimate_rules(np.repeat(users, len(items)),
                                          np.tile(items, len(users)), rules)
            neighbours = algo.kneighbors(users)[0]
            exposed = (neighbours == target.inner_id).any(axis=1).astype(np.float64)
        else:
            answers, exposed = _item_neighbourhood_estimates(algo, users, items, target, rules)
        if not exposure:
            exposed = np.full(len(users), np.nan)
        beta = float(algo.selection_summary()["beta"])
        return {name: Outcome(np.where(possible, est, np.nan).reshape(len(users), -1), items,
                              exposed, beta)
                for name, (est, possible) in zip(self.rules, answers)}


def make_runner(name: str, algo: AlgoBase) -> SurpriseRunner:
    """The runner of ``algo``: `PrivateKNNRunner` for user-based ``PrivateKNN``
    (any prediction rule); `SurpriseRunner` (query by query through ``test``) for
    any other algorithm, item-based kNN included."""
    if (isinstance(algo, PrivateKNN)
            and copy.deepcopy(algo).check_params().sim_options_["user_based"]):
        return PrivateKNNRunner(name, algo)
    return SurpriseRunner(name, algo)


def make_runners(algorithms: Mapping[str, AlgoBase]) -> list[SurpriseRunner]:
    """The runners of ``algorithms`` (`make_runner`), one `PrivateKNNRunner`
    for the user-based ``PrivateKNN`` models that differ only in their prediction rule
    (`selection_key`), in the order of their first model."""
    runners: list[SurpriseRunner] = []
    grouped: dict[str, PrivateKNNRunner] = {}
    for name, algo in algorithms.items():
        runner = make_runner(name, algo)
        key = selection_key(algo) if isinstance(runner, PrivateKNNRunner) else None
        if key is not None and key in grouped:
            grouped[key].rules[name] = {parameter: getattr(algo, parameter)
                                        for parameter in RULE_PARAMETERS}
            continue
        if key is not None:
            grouped[key] = runner
        runners.append(runner)
    return runners


def selection_key(algo: PrivateKNN) -> str | None:
    """What decides a ``PrivateKNN``'s neighbour selections: every parameter but
    [`RULE_PARAMETERS`][], the selector by its type and attributes; ``None``
    unless ``random_state`` is an int (other models draw fresh noise at each fit)."""
    if isinstance(algo.random_state, bool) or not isinstance(algo.random_state,
                                                             (int, np.integer)):
        return None
    parameters = [name for name in inspect.signature(PrivateKNN).parameters
                  if name not in RULE_PARAMETERS]
    values = {name: getattr(algo, name) for name in parameters}
    selector = values["selector"]
    if not isinstance(selector, str):
        values["selector"] = (type(selector).__name__, sorted(vars(selector).items()))
    return repr(sorted(values.items(), key=lambda item: item[0]))


def _item_neighbourhood_estimates(algo: PrivateKNN, users: np.ndarray, items: np.ndarray,
                                  target: AttackTarget,
                                  rules: list[Mapping]) -> tuple[list, np.ndarray]:
    """The answers of every rule
    ([`estimate_rules`][dprec.knn.PrivateKNN.estimate_rules]) for ``users`` × ``items``
    and, for the fake users, the fraction of the hidden items for which the target is
    among the chosen raters."""
    q_users, q_items = np.repeat(users, len(items)), np.tile(items, len(users))
    answers, (neighbours, _) = algo.estimate_rules(q_users, q_items, rules,
                                                   with_neighbours=True)
    hidden = np.isin(items, target.hidden_items)
    chosen = (neighbours == target.inner_id).any(axis=1).reshape(len(users), -1)
    exposure = chosen[:, hidden].mean(axis=1) if hidden.any() else np.full(len(users), np.nan)
    return answers, exposure


def _test_estimates(algo: AlgoBase, trainset: Trainset, users: np.ndarray,
                   items: np.ndarray) -> np.ndarray:
    """``algo.test`` on every (user, item) pair of inner ids.

    Any fitted Surprise algorithm (batched where its ``test`` is).

    Returns
    -------
    ndarray, shape (len(users), len(items))
        The estimates (clipped, as ``test`` returns them), NaN where impossible.
    """
    raw_users = [trainset.to_raw_uid(u) for u in users.tolist()]
    raw_items = [trainset.to_raw_iid(i) for i in items.tolist()]
    predictions = algo.test([(u, i, 0.0) for u in raw_users for i in raw_items])
    est = np.array([math.nan if p.details.get("was_impossible") else p.est
                    for p in predictions], dtype=np.float64)
    return est.reshape(len(users), len(items))


def _is_user_based_knn(algo: AlgoBase) -> bool:
    """One of Surprise's own kNN algorithms (``KNNBasic`` & co.), user-based."""
    return isinstance(algo, SymmetricAlgo) and algo.sim_options.get("user_based", True)


def _heapq_exposure(sim: np.ndarray, ratings: RatingArrays, users: np.ndarray,
                   target: AttackTarget, k: int) -> np.ndarray:
    """Per user, the fraction of the target's hidden items for which ``KNNBasic`` keeps
    the target among its neighbours.

    ``KNNBasic.estimate`` takes ``heapq.nlargest(k, raters of i, key=sim)``
    in ``trainset.ir[i]`` order (ties keep the earlier rater) and then uses
    the neighbours with ``sim > 0``.  The target is kept when it has positive
    similarity and fewer than ``k`` raters come before it: those more similar,
    and those as similar but earlier in ``ir[i]``.

    Returns
    -------
    ndarray, shape (len(users),)
        NaN for every user when the target has no hidden item.
    """
    exposed = np.zeros((len(users), len(target.hidden_items)))
    for column, item in enumerate(target.hidden_items.tolist()):
        raters = ratings.item_users[ratings.item_ptr[item]:ratings.item_ptr[item + 1]]
        position = np.flatnonzero(raters == target.inner_id)
        if len(position) == 0:
            continue
        s = sim[np.ix_(users, raters)]
        own = s[:, position[0]][:, None]
        ahead = (s > own).sum(axis=1) + (s[:, :position[0]] == own).sum(axis=1)
        exposed[:, column] = (own[:, 0] > 0) & (ahead < k)
    return exposed.mean(axis=1) if len(target.hidden_items) else np.full(len(users), np.nan)
