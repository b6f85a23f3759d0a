r"""The β-kNN attack on neighbourhood recommenders, as a simulator.

**The kNN attack** (Calandrino, Kilzer, Narayanan, Felten, Shmatikov, "You
Might Also Like: Privacy Risks of Collaborative Filtering", IEEE S&P 2011,
§V): an attacker who knows ``n_known`` (about 8) of a target user's ratings
and the recommender's ``k`` creates ``k`` fake users, each rating exactly
those items with the target's values.  Each fake user's ``k`` nearest
neighbours are then the ``k − 1`` other fakes and the target, and the only
neighbour who rated anything else is the target: the fake users'
predictions and recommendations reveal the target's other ratings.

**The β-kNN attack** (Lu & Shen, "An Accuracy-Assured Privacy-Preserving
Recommender System for Internet Commerce", ComSIS 2015, §4)
generalises it to randomised neighbour selection: if neighbours come from
the top ``βk`` candidates, ``βk`` fake users cover them.  A selector's
security ``β`` is the fake-user budget it claims to need (Lu & Shen, ComSIS 2015).

:class:`BetaKNNAttack` runs the attack for many targets and ``β`` values on
copies of a dataset and measures, per (target, β):

``exposure``
    Fraction of the fake users whose neighbour set contains the target
    (user neighbourhood); with an item neighbourhood (Surprise's
    ``KNNBasic`` semantics) a fake user's exposure is the fraction of the
    target's hidden items for which the target is among the chosen raters.
``recovery``
    Fraction of the target's hidden items whose prediction for a fake user
    rounds to the target's rating, averaged over the fake users.  An
    impossible prediction is a miss (never Surprise's global-mean fallback).
``recovery_pooled`` / ``recovery_any``
    The attacker pools all ``βk`` fake users: per hidden item the majority
    vote of their rounded possible predictions (ties: the value nearest the
    mean estimate) / whether any of them gets it right (an optimistic bound:
    it needs an oracle to pick the right fake).
``possible_precision`` / ``possible_recall``, ``topn_precision`` / ``topn_recall``
    Item inference, pooled over the fake users: the items (other than the
    known ones) that any fake user gets a possible prediction for / that are
    in any fake user's top-N recommendations, against the target's hidden
    items.
``baseline_recovery``
    What the model reveals without the attack: the unpoisoned model, trained
    with the target's hidden ratings left out (the target keeps only the
    known ones), predicting the hidden items for the target.  Leaving them
    out is needed: an item-neighbourhood model predicting a rating it was
    trained on uses the user as their own neighbour and returns the rating.
    The attack's gain is ``recovery − baseline_recovery``.
``baseline_item_mean``
    What the crowd reveals: the fraction of hidden items whose mean rating
    among the *other* users rounds to the target's rating.  The pooled vote
    of many fake users whose neighbours are random real users converges to
    about this, so it is the fair yardstick for ``recovery_pooled``: a
    configuration resists the pooled attack when ``recovery_pooled`` stays
    near it.

Fake users are new accounts: their inner ids come after every real user's
and their ratings after every real rating (as if appended to the raw ratings
of a copy of the dataset, :meth:`BetaKNNAttack.poisoned_dataset`).  The
dataset given is never modified.

Speed: the similarities among real users do not change with the poisoning.
For :class:`~dprec.PrivateKNN` with an exact similarity, each scenario only
computes the fake users' rows (and extends the recommendation-aware
sensitivity ``RS``) with :class:`~dprec.similarity.incremental.IncrementalSimilarity`
and fits with them, as :meth:`~dprec.PrivateKNN.fit_precomputed` would; the
result equals a full ``fit`` (tested).  With a sketch backend (local DP)
every real user's sketch is released once per attack (seeded from
``random_state`` and the options) and each scenario sketches only its fake
users, with their own noise keys
(:class:`~dprec.similarity.incremental.IncrementalSketchSimilarity`; equal
to the backend's full computation with those keys).  Other Surprise
algorithms, and a sketch backend whose ``τ`` is computed from the data, are
refitted from scratch.  Targets run in parallel with joblib.
"""

from __future__ import annotations

import copy
import math
import sys
import time
import warnings
import zlib
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.sparse as sp
from joblib import Parallel, delayed
from surprise import AlgoBase, Dataset, Reader, Trainset
from surprise.prediction_algorithms.knns import SymmetricAlgo

from ._ratings import RatingArrays
from ._rng import RandomStateLike, check_random_state, validate_random_state
from ._surprise import raw_to_inner
from ._validation import check_bool, check_int
from .knn import PrivateKNN
from .similarity import SKETCH_BACKENDS, sketch_backend, with_public_bounds
from .similarity.exact import SUM_SIMILARITIES
from .similarity.incremental import IncrementalSimilarity, IncrementalSketchSimilarity

__all__ = ["COLUMNS", "AttackTarget", "BetaKNNAttack", "round_to_grid", "scenario_seed"]

#: columns of :meth:`BetaKNNAttack.run`, in order
COLUMNS = ["algo", "target", "beta", "n_fake", "n_known", "n_hidden", "exposure",
           "exposure_any", "recovery", "recovery_pooled", "recovery_any", "possible_precision",
           "possible_recall", "topn_precision", "topn_recall", "baseline_recovery",
           "baseline_item_mean", "selector_beta", "seconds"]

_FAKE_PREFIX = "betaknn-fake-"


# ---------------------------------------------------------------- targets
@dataclass(frozen=True)
class AttackTarget:
    """A target user and what the attacker knows about them.

    Item ids are inner ids of ``data.build_full_trainset()`` (the same in
    every poisoned copy).

    Attributes
    ----------
    raw_id : raw user id
    inner_id : int
    known_items, known_ratings : ndarray
        The ``n_known`` ratings the attacker knows (drawn uniformly among the
        target's ratings) and copies into every fake user.
    hidden_items, hidden_ratings : ndarray
        The target's other ratings: what the attack tries to learn.
    """

    raw_id: object
    inner_id: int
    known_items: np.ndarray
    known_ratings: np.ndarray
    hidden_items: np.ndarray
    hidden_ratings: np.ndarray


def round_to_grid(estimates: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Each estimate rounded to the nearest value of the sorted rating ``grid``.

    Halfway cases go up (3.5 → 4 on 1..5); a tolerance of 1e-9 absorbs the
    summation-order noise of a weighted mean that is exactly halfway.  NaN
    (an impossible prediction) stays NaN.
    """
    estimates = np.asarray(estimates, dtype=np.float64)
    grid = np.asarray(grid, dtype=np.float64)
    midpoints = (grid[1:] + grid[:-1]) / 2
    rounded = grid[np.searchsorted(midpoints, np.nan_to_num(estimates) + 1e-9, side="right")]
    return np.where(np.isnan(estimates), np.nan, rounded)


# ------------------------------------------------------------------ data
@dataclass(frozen=True)
class _Base:
    """The unpoisoned data, prepared once and shared by every scenario."""

    trainset: Trainset
    ratings: RatingArrays
    grid: np.ndarray
    states: dict            # runner.sim_key -> Incremental(Sketch)Similarity
    fake_prefix: str


@dataclass(frozen=True)
class _ScenarioData:
    """A changed copy of the data: trainset, rating arrays, and the changed rows."""

    trainset: Trainset
    ratings: RatingArrays
    ids: np.ndarray          # user ids whose rows changed (or were appended)
    rows: sp.csr_matrix      # their ratings
    users: np.ndarray        # whose predictions the scenario reads


def _rating_arrays(base: RatingArrays, keep: np.ndarray, users: np.ndarray,
                   items: np.ndarray, ratings: np.ndarray, n_users: int) -> RatingArrays:
    """``base`` without the entries ``~keep`` and with new ratings appended after
    every old rating of their item (what ``RatingArrays.from_trainset`` gives for
    the changed trainset, without reading it rating by rating)."""
    n_items = base.n_items
    old_items = np.repeat(np.arange(n_items, dtype=np.int64), np.diff(base.item_ptr))
    all_users = np.concatenate([base.item_users[keep], users]).astype(np.int64)
    all_items = np.concatenate([old_items[keep], items]).astype(np.int64)
    all_ratings = np.concatenate([base.item_ratings[keep], ratings]).astype(np.float64)
    order = np.argsort(all_items, kind="stable")
    all_users, all_items, all_ratings = all_users[order], all_items[order], all_ratings[order]
    item_ptr = np.concatenate([[0], np.cumsum(np.bincount(all_items, minlength=n_items))])
    matrix = sp.csr_matrix((all_ratings, (all_users, all_items)), shape=(n_users, n_items))
    matrix.sort_indices()
    keys = all_users * n_items + all_items
    by_key = np.argsort(keys, kind="stable")
    return RatingArrays(n_users, n_items, item_ptr, all_users, all_ratings, matrix,
                        keys[by_key], all_ratings[by_key], base.item_keys)


def _copy_trainset(trainset: Trainset, ur: dict, ir: dict, n_users: int, n_ratings: int,
                   raw2inner_users: dict) -> Trainset:
    """A new ``Trainset`` (new dicts; unchanged rating lists are shared, never modified)."""
    return Trainset(defaultdict(list, ur), defaultdict(list, ir), n_users, trainset.n_items,
                    n_ratings, trainset.rating_scale, raw2inner_users,
                    raw_to_inner(trainset, users=False))


def _poisoned_data(base: _Base, target: AttackTarget, n_fake: int) -> _ScenarioData:
    """The data with ``n_fake`` fake users appended, each rating the known items."""
    ts, n = base.trainset, base.trainset.n_users
    fakes = np.arange(n, n + n_fake, dtype=np.int64)
    items, ratings = target.known_items, target.known_ratings
    ur, ir = dict(ts.ur), dict(ts.ir)
    pairs = list(zip(items.tolist(), ratings.tolist()))
    for item, rating in pairs:
        ir[item] = list(ts.ir[item]) + [(int(f), rating) for f in fakes]
    raw2inner = raw_to_inner(ts)
    for f in fakes:
        ur[int(f)] = list(pairs)
        raw2inner[f"{base.fake_prefix}{f - n}"] = int(f)
    trainset = _copy_trainset(ts, ur, ir, n + n_fake, ts.n_ratings + n_fake * len(items),
                              raw2inner)
    new_users = np.repeat(fakes, len(items))
    new_items, new_ratings = np.tile(items, n_fake), np.tile(ratings, n_fake)
    arrays = _rating_arrays(base.ratings, np.ones(len(base.ratings.item_users), bool),
                            new_users, new_items, new_ratings, n + n_fake)
    rows = sp.csr_matrix((new_ratings, (new_users - n, new_items)),
                         shape=(n_fake, ts.n_items))
    return _ScenarioData(trainset, arrays, fakes, rows, fakes)


def _baseline_data(base: _Base, target: AttackTarget) -> _ScenarioData:
    """The data with the target's hidden ratings left out (the known ones stay in place)."""
    ts, t = base.trainset, target.inner_id
    hidden = set(target.hidden_items.tolist())
    ur, ir = dict(ts.ur), dict(ts.ir)
    ur[t] = [(i, r) for i, r in ts.ur[t] if i not in hidden]
    for item in hidden:
        ir[item] = [(u, r) for u, r in ts.ir[item] if u != t]
    trainset = _copy_trainset(ts, ur, ir, ts.n_users, ts.n_ratings - len(hidden),
                              raw_to_inner(ts))
    arrays = base.ratings
    entry_items = np.repeat(np.arange(arrays.n_items), np.diff(arrays.item_ptr))
    keep = ~((arrays.item_users == t) & np.isin(entry_items, target.hidden_items))
    empty = np.zeros(0, dtype=np.int64)
    arrays = _rating_arrays(arrays, keep, empty, empty, np.zeros(0), ts.n_users)
    rows = sp.csr_matrix((target.known_ratings, (np.zeros(len(target.known_items), np.int64),
                                                 target.known_items)), shape=(1, ts.n_items))
    users = np.array([t], dtype=np.int64)
    return _ScenarioData(trainset, arrays, users, rows, users)


# -------------------------------------------------------------- outcomes
@dataclass(frozen=True)
class _Outcome:
    """What one fitted model shows the users of a scenario."""

    estimates: np.ndarray    # (n_users, len(columns)), NaN where impossible, clipped
    columns: np.ndarray      # the items of the columns (every other item: impossible)
    exposure: np.ndarray     # (n_users,), NaN when it cannot be measured
    selector_beta: float

    def at(self, items: np.ndarray, n_items: int) -> np.ndarray:
        """The estimates of ``items`` (NaN for items outside :attr:`columns`)."""
        position = np.full(n_items, -1)
        position[self.columns] = np.arange(len(self.columns))
        where = position[items]
        out = self.estimates[:, np.maximum(where, 0)] if len(self.columns) else \
            np.full((len(self.estimates), len(items)), np.nan)
        return np.where(where[None, :] >= 0, out, np.nan)


class _Runner:
    """Fits one configured Surprise algorithm on scenario data and reads its answers."""

    #: the key of the shared, incrementally updated similarity state (None: full refit)
    sim_key: tuple | None = None
    needs_sensitivity = False

    def __init__(self, name: str, algo: AlgoBase) -> None:
        self.name, self.algo = name, algo
        self.k = int(algo.k)

    def outcome(self, data: _ScenarioData, state: IncrementalSimilarity | None, seed: int,
                target: AttackTarget, items: np.ndarray, exposure: bool = True) -> _Outcome:
        """Fit a copy on ``data`` (seeded ``seed``) and read the estimates of
        ``data.users`` × ``items`` and, when ``exposure``, the users' exposure of
        ``target``."""
        algo = copy.deepcopy(self.algo)  # the caller's object is never refitted
        if hasattr(algo, "random_state"):
            algo.random_state = seed
        algo.fit(data.trainset)
        estimates = _test_estimates(algo, data.trainset, data.users, items)
        exposed = np.full(len(data.users), np.nan)
        if exposure and _is_user_based_knn(algo):
            exposed = _heapq_exposure(algo.sim, data.ratings, data.users, target, algo.k)
        elif exposure and hasattr(algo, "neighbours_"):   # one neighbour list per user
            exposed = (algo.neighbours_[data.users] == target.inner_id).any(axis=1) * 1.0
        return _Outcome(estimates, items, exposed, math.nan)


class _PrivateKNNRunner(_Runner):
    """:class:`~dprec.PrivateKNN` with similarities updated row by row.

    Exact similarities: :class:`IncrementalSimilarity` (equal to a full
    ``fit``).  Sketch backends: :class:`IncrementalSketchSimilarity` (local
    DP: the real users' sketches are released once, from a seed derived
    from the attack's ``random_state`` and the options; the fake users
    sketch theirs in each scenario with scenario-specific noise keys).  A
    sketch backend whose ``tau`` is computed from the data (it changes when
    fakes join) is refitted from scratch.

    Only ``PrivateKNN``'s public API (``fit_precomputed``, ``estimate_arrays``,
    ``neighbours``), with the rating arrays the simulator already has
    registered for each changed copy, so that one scenario costs milliseconds;
    equality with a full ``fit`` is tested in ``tests/test_attacks.py``.
    """

    def __init__(self, name: str, algo: PrivateKNN) -> None:
        super().__init__(name, algo)
        checked = copy.deepcopy(algo).check_params()
        self.needs_sensitivity = bool(checked.selector_.needs_sensitivity)
        self.sim_options = options = checked.sim_options_
        if options["name"] in SUM_SIMILARITIES:
            self.sim_key = ("exact", options["name"], int(options.get("min_support", 1)))
        elif options["name"] in SKETCH_BACKENDS:
            backend = sketch_backend(with_public_bounds(options, (1.0, 1.0)))
            if getattr(backend, "tau", 0) is not None:  # τ fixed: incremental is exact
                self.sim_key = ("sketch", repr(sorted(options.items())))

    def outcome(self, data, state, seed, target, items, exposure=True) -> _Outcome:
        algo = copy.deepcopy(self.algo)
        algo.random_state = seed
        if state is None:
            algo.fit(data.trainset)
        else:
            release = state.release() if isinstance(state, IncrementalSketchSimilarity) else None
            fit_prepared(algo, data.trainset, data.ratings, state.sim,
                         state.sensitivity() if self.needs_sensitivity else None, release)
        users = data.users
        if algo.neighbourhood_ == "user":
            est, possible = algo.estimate_arrays(np.repeat(users, len(items)),
                                                 np.tile(items, len(users)))
            estimates = np.where(possible, est, np.nan).reshape(len(users), -1)
            columns = items
            exposed = (algo.neighbours(users) == target.inner_id).any(axis=1).astype(np.float64)
        else:
            estimates, exposed = _item_neighbourhood_estimates(algo, users, items, target)
            columns = items
        if not exposure:
            exposed = np.full(len(users), np.nan)
        return _Outcome(estimates, columns, exposed, float(algo.selection_summary()["beta"]))


def fit_prepared(algo: PrivateKNN, trainset: Trainset, ratings: RatingArrays, sim: np.ndarray,
                 sensitivity: np.ndarray | None, release=None) -> PrivateKNN:
    """``algo.fit_precomputed(trainset, sim, sensitivity, release)`` with the rating arrays
    of ``trainset`` given (registered for it, so that they are not rebuilt: many refits on
    changed copies of the data repeat that work).  ``sim`` may come from a sketch backend,
    whose :class:`~dprec.similarity.SketchRelease` the model's accountant then records.
    """
    ratings.remember(trainset)
    return algo.fit_precomputed(trainset, sim, sensitivity, release)


def _item_neighbourhood_estimates(algo: PrivateKNN, users: np.ndarray, items: np.ndarray,
                                  target: AttackTarget) -> tuple[np.ndarray, np.ndarray]:
    """Estimates for ``users`` × ``items`` and, for the fake users, the fraction of the
    hidden items for which the target is among the chosen raters."""
    q_users, q_items = np.repeat(users, len(items)), np.tile(items, len(users))
    est, possible, neighbours = algo.estimate_arrays(q_users, q_items, with_neighbours=True)
    estimates = np.where(possible, est, np.nan).reshape(len(users), -1)
    hidden = np.isin(items, target.hidden_items)
    chosen = (neighbours == target.inner_id).any(axis=1).reshape(len(users), -1)
    exposure = chosen[:, hidden].mean(axis=1) if hidden.any() else np.full(len(users), np.nan)
    return estimates, exposure


def _test_estimates(algo: AlgoBase, trainset: Trainset, users: np.ndarray,
                    items: np.ndarray) -> np.ndarray:
    """``algo.test`` on every (user, item) pair of inner ids (any Surprise algorithm;
    batched where the algorithm's ``test`` is), clipped, NaN where impossible."""
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


# --------------------------------------------------------------- metrics
def _pooled_vote(rounded: np.ndarray, estimates: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Per column, the most frequent rounded value (NaN ignored; ties: the value nearest
    the mean of the estimates); NaN for a column without any value."""
    counts = (rounded[:, :, None] == grid[None, None, :]).sum(axis=0).astype(np.float64)
    possible = ~np.isnan(estimates)
    n = possible.sum(axis=0)
    mean = np.where(possible, estimates, 0.0).sum(axis=0) / np.maximum(n, 1)
    span = float(grid[-1] - grid[0]) + 1.0
    score = counts - 0.5 * np.abs(grid[None, :] - mean[:, None]) / span
    vote = grid[np.argmax(score, axis=1)]
    return np.where(n > 0, vote, np.nan)


def _top_n_mask(keys: np.ndarray, n: int) -> np.ndarray:
    """Per row, the ``n`` largest finite keys (ties: the lower column first, as a stable
    descending sort), found by a partition instead of a sort."""
    n = min(n, keys.shape[1])
    if n == 0:
        return np.zeros(keys.shape, dtype=bool)
    kth = np.partition(keys, keys.shape[1] - n, axis=1)[:, keys.shape[1] - n][:, None]
    above, ties = keys > kth, keys == kth
    room = n - above.sum(axis=1, keepdims=True)
    return (above | (ties & (np.cumsum(ties, axis=1) <= room))) & np.isfinite(keys)


def _precision_recall(inferred: np.ndarray, truth: np.ndarray,
                      n_truth: int) -> tuple[float, float]:
    """Precision and recall of the ``inferred`` columns against the ``truth`` columns
    (``n_truth`` true items in all, some possibly outside the columns)."""
    hits = float((inferred & truth).sum())
    precision = hits / inferred.sum() if inferred.any() else math.nan
    recall = hits / n_truth if n_truth else math.nan
    return precision, recall


def _attack_metrics(outcome: _Outcome, target: AttackTarget, n_items: int, grid: np.ndarray,
                    top_n: int) -> dict:
    """The row of one scenario (see the module docstring)."""
    hidden_est = outcome.at(target.hidden_items, n_items)
    rounded = round_to_grid(hidden_est, grid)
    hits = rounded == target.hidden_ratings[None, :]
    pooled = _pooled_vote(rounded, hidden_est, grid) == target.hidden_ratings
    columns, estimates = outcome.columns, outcome.estimates
    role = np.zeros(n_items, dtype=np.int8)
    role[target.hidden_items], role[target.known_items] = 1, 2
    hidden = role[columns] == 1
    possible = ~np.isnan(estimates) & (role[columns] != 2)[None, :]
    in_top = _top_n_mask(np.where(possible, estimates, -np.inf), top_n)  # columns are sorted
    possible_pr = _precision_recall(possible.any(axis=0), hidden, len(target.hidden_items))
    topn_pr = _precision_recall(in_top.any(axis=0), hidden, len(target.hidden_items))
    exposure = outcome.exposure
    measured = not np.isnan(exposure).all()
    return {
        "exposure": float(exposure.mean()) if measured else math.nan,
        "exposure_any": float((exposure > 0).any()) if measured else math.nan,
        "recovery": float(hits.mean(axis=1).mean()),
        "recovery_pooled": float(pooled.mean()),
        "recovery_any": float(hits.any(axis=0).mean()),
        "possible_precision": possible_pr[0], "possible_recall": possible_pr[1],
        "topn_precision": topn_pr[0], "topn_recall": topn_pr[1],
        "selector_beta": outcome.selector_beta,
    }


def _item_mean_recovery(base: _Base, target: AttackTarget) -> float:
    """Fraction of the hidden items whose mean rating among the other users rounds to
    the target's rating (an item nobody else rated is a miss)."""
    ratings = base.ratings
    totals = np.concatenate([[0.0], np.cumsum(ratings.item_ratings)])
    items = target.hidden_items
    sums = totals[ratings.item_ptr[items + 1]] - totals[ratings.item_ptr[items]]
    counts = np.diff(ratings.item_ptr)[items] - 1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        means = np.where(counts > 0, (sums - target.hidden_ratings) / counts, np.nan)
    return float((round_to_grid(means, base.grid) == target.hidden_ratings).mean())


def _recovery(outcome: _Outcome, target: AttackTarget, n_items: int, grid: np.ndarray) -> float:
    """Fraction of hidden items whose estimate (one user's row) rounds to the truth."""
    estimates = outcome.at(target.hidden_items, n_items)[0]
    return float((round_to_grid(estimates, grid) == target.hidden_ratings).mean())


# ------------------------------------------------------------- scenarios
def scenario_seed(entropy: int, target: int, beta: int) -> int:
    """The seed of scenario (target, β): ``SeedSequence(entropy, spawn_key=(1, target, β))``.

    ``β = 0`` is the target's unpoisoned baseline.  The attacked algorithm's
    ``random_state`` is set to it, so targets and β values do not share draws.
    32 bits, so that Surprise's own algorithms (``RandomState``) accept it.
    """
    sequence = np.random.SeedSequence(entropy, spawn_key=(1, int(target), int(beta)))
    return int(sequence.generate_state(1, np.uint32)[0])


def _fake_keys(seed: int, n_fake: int) -> np.ndarray:
    """Noise keys of the fake users' sketches in the scenario seeded ``seed``: distinct
    from every real user's key (its index) and from other scenarios' fakes."""
    return (1 << 53) + (int(seed) << 20) + np.arange(n_fake, dtype=np.int64)


@dataclass
class _Scenario:
    """One scenario of a target: its data, seed, noise keys and the users it reads."""

    beta: int                # 0: the baseline (hidden ratings left out, no fakes)
    data: _ScenarioData
    seed: int
    keys: np.ndarray         # noise keys of the changed rows' sketches
    seconds: float           # time spent building the data


def _scenarios(base: _Base, target: AttackTarget, betas: Sequence[int], k: int,
               entropy: int) -> list[_Scenario]:
    """The baseline and the ``β·k``-fake-user scenarios of ``target``."""
    out = []
    for beta in (0, *betas):
        start = time.perf_counter()
        seed = scenario_seed(entropy, target.inner_id, beta)
        if beta == 0:
            data = _baseline_data(base, target)
            keys = data.ids
        else:
            data = _poisoned_data(base, target, beta * k)
            keys = _fake_keys(seed, len(data.ids))
        out.append(_Scenario(beta, data, seed, keys, time.perf_counter() - start))
    return out


def _states(base: _Base, key, scenarios: Sequence[_Scenario]):
    """The state ``key`` updated to each scenario, one at a time.

    Yields ``(scenario, state, seconds)``.  The similarity matrices of
    successive scenarios of the same size share one buffer (so each is only
    valid until the next is yielded); a sketch state sketches the changed
    rows of all scenarios in one call (one draw of the public hash functions).
    """
    state = base.states[key] if key is not None else None
    buffers: dict[int, np.ndarray] = {}
    sketches = None
    if isinstance(state, IncrementalSketchSimilarity):
        start = time.perf_counter()
        rows = sp.vstack([scenario.data.rows for scenario in scenarios], format="csr")
        sketches = state.sketch(rows, np.concatenate([sc.keys for sc in scenarios]))
        bounds = np.cumsum([0] + [len(scenario.data.ids) for scenario in scenarios])
        share = (time.perf_counter() - start) / len(scenarios)
    for j, scenario in enumerate(scenarios):
        if state is None:
            yield scenario, None, 0.0
            continue
        start = time.perf_counter()
        n_users = scenario.data.ratings.n_users
        out = buffers.setdefault(n_users, np.empty((n_users, n_users)))
        if sketches is None:
            updated = state.update(scenario.data.ids, scenario.data.rows, out=out)
        else:
            updated = state.update(scenario.data.ids, scenario.data.rows, scenario.keys,
                                   precomputed=sketches[bounds[j]:bounds[j + 1]], out=out)
            start -= share
        yield scenario, updated, time.perf_counter() - start


def _attack_target(base: _Base, runners: Sequence[_Runner], target: AttackTarget,
                   betas: Sequence[int], entropy: int, top_n: int) -> list[dict]:
    """Every (runner, β) scenario of one target, with its baseline.

    Grouped by similarity state, so that one state's matrices are updated
    scenario by scenario and shared by every runner that uses it.
    """
    n_items = base.trainset.n_items
    rows, baseline = [], {}
    for k in sorted({runner.k for runner in runners}):
        group = [runner for runner in runners if runner.k == k]
        scenarios = _scenarios(base, target, betas, k, entropy)
        for key in dict.fromkeys(runner.sim_key for runner in group):
            users = [runner for runner in group if runner.sim_key == key]
            for scenario, state, shared in _states(base, key, scenarios):
                shared += scenario.seconds
                for runner in users:
                    start = time.perf_counter()
                    if scenario.beta == 0:
                        outcome = runner.outcome(scenario.data, state, scenario.seed, target,
                                                 target.hidden_items, exposure=False)
                        baseline[runner.name] = _recovery(outcome, target, n_items, base.grid)
                        continue
                    outcome = runner.outcome(scenario.data, state, scenario.seed, target,
                                             np.arange(n_items))
                    rows.append({
                        "algo": runner.name, "target": target.raw_id, "beta": scenario.beta,
                        "n_fake": scenario.beta * k, "n_known": len(target.known_items),
                        "n_hidden": len(target.hidden_items),
                        **_attack_metrics(outcome, target, n_items, base.grid, top_n),
                        "seconds": shared + time.perf_counter() - start})
    order = {runner.name: j for j, runner in enumerate(runners)}
    crowd = _item_mean_recovery(base, target)
    for row in rows:
        row["baseline_recovery"] = baseline[row["algo"]]
        row["baseline_item_mean"] = crowd
    rows.sort(key=lambda row: (list(betas).index(row["beta"]), order[row["algo"]]))
    return rows


# ------------------------------------------------------------------- API
class BetaKNNAttack:
    r"""Simulate the β-kNN attack on a Surprise recommender (Calandrino et al., S&P 2011).

    For each of ``n_targets`` target users (drawn among those with at least
    ``min_target_ratings`` ratings) the attacker knows ``n_known`` of their
    ratings (drawn uniformly); for each ``β`` in ``betas`` they add ``β·k``
    fake users who rate exactly those items with the target's values, the
    recommender is fitted on the poisoned copy, and the fake users'
    predictions and top-N lists are read (Calandrino et al., S&P 2011;
    Lu & Shen, ComSIS 2015).  See the module docstring for the measures.

    Parameters
    ----------
    algo : surprise.AlgoBase or mapping of str to AlgoBase
        The configured (unfitted) recommender; ``k`` is read from it.  A
        mapping attacks several recommenders on the same targets, known
        items and fake users (similarities are shared where the options
        agree); its keys name them in the ``algo`` column.  Never modified:
        each scenario fits a copy whose ``random_state`` (if any) is set to
        :func:`scenario_seed` of (``random_state``, target, β).
    data : surprise.dataset.Dataset
        With raw ratings (``load_builtin``, ``load_from_df``,
        ``load_from_file``); never modified.
    n_known : int, default 8
        Ratings of the target the attacker knows (``>= 1``).
    betas : sequence of int, default (1, 2, 3, 4, 6, 8)
        Attack sizes: ``β·k`` fake users (each ``>= 1``, not empty).
    n_targets : int, default 50
        Number of targets (``>= 1``); fewer when fewer users qualify (warned).
    min_target_ratings : int, default 50
        Targets have at least this many ratings (and more than ``n_known``).
    top_n : int, default 10
        Length of the recommendation lists used for item inference.
    random_state : None, int, RandomState or Generator
        Seeds the choice of targets and known items and every scenario's
        noise.  ``None``: fresh entropy, drawn once per attack object.
    n_jobs : int, default 1
        Targets run in parallel with joblib (``-1``: all cores).
    progress : bool, default False
        Show progress (tqdm if installed, else one line per target).

    Examples
    --------
    >>> from dprec import PrivateKNN, datasets
    >>> data = datasets.synthetic(150, 200, 5000, random_state=0)
    >>> algo = PrivateKNN(k=5, sim_options={"name": "cosine", "min_support": 4},
    ...                   neighbourhood="user")
    >>> table = BetaKNNAttack(algo, data, n_known=4, betas=(1,), n_targets=3,
    ...                       min_target_ratings=30, random_state=0).run()
    >>> float(table.exposure.min())
    1.0
    """

    def __init__(self, algo, data: Dataset, n_known: int = 8,
                 betas: Sequence[int] = (1, 2, 3, 4, 6, 8), n_targets: int = 50,
                 min_target_ratings: int = 50, top_n: int = 10,
                 random_state: RandomStateLike = None, n_jobs: int = 1,
                 progress: bool = False) -> None:
        self.algorithms = _check_algorithms(algo)
        self.algo = algo
        if not isinstance(data, Dataset):
            raise TypeError(f"data must be a surprise Dataset, got {type(data).__name__}")
        if not hasattr(data, "raw_ratings"):
            raise ValueError("data must hold raw ratings (Dataset.load_builtin, load_from_df or "
                             "load_from_file), not predefined folds")
        self.data = data
        self.n_known = check_int(n_known, "n_known", minimum=1)
        self.betas = _check_betas(betas)
        self.n_targets = check_int(n_targets, "n_targets", minimum=1)
        self.min_target_ratings = check_int(min_target_ratings, "min_target_ratings", minimum=1)
        self.top_n = check_int(top_n, "top_n", minimum=1)
        validate_random_state(random_state)
        self.random_state = random_state
        self.n_jobs = check_int(n_jobs, "n_jobs")
        if self.n_jobs == 0:
            raise ValueError("n_jobs must be a positive number of workers or negative "
                             "(joblib's convention), not 0")
        self.progress = check_bool(progress, "progress")
        self._entropy: int | None = None
        self._trainset: Trainset | None = None

    # ----------------------------------------------------------- targets
    @property
    def entropy(self) -> int:
        """The root seed: ``random_state`` itself when an int, else drawn once."""
        if self._entropy is None:
            if isinstance(self.random_state, (int, np.integer)):
                self._entropy = int(self.random_state)
            else:
                rng = check_random_state(self.random_state)
                self._entropy = int(rng.integers(0, 2**63))
        return self._entropy

    @property
    def trainset(self) -> Trainset:
        """``data.build_full_trainset()``, built once."""
        if self._trainset is None:
            self._trainset = self.data.build_full_trainset()
        return self._trainset

    def targets(self) -> list[AttackTarget]:
        """The targets and their known / hidden ratings (the same on every call)."""
        ts = self.trainset
        rng = np.random.default_rng(np.random.SeedSequence(self.entropy, spawn_key=(0,)))
        counts = np.array([len(ts.ur[u]) for u in range(ts.n_users)])
        eligible = np.flatnonzero(counts >= max(self.min_target_ratings, self.n_known + 1))
        if len(eligible) == 0:
            raise ValueError(f"no user has min_target_ratings={self.min_target_ratings} "
                             f"ratings (and more than n_known={self.n_known})")
        if len(eligible) < self.n_targets:
            warnings.warn(f"only {len(eligible)} users qualify as targets "
                          f"(n_targets={self.n_targets})", stacklevel=2)
        chosen = np.sort(rng.choice(eligible, size=min(self.n_targets, len(eligible)),
                                    replace=False))
        targets = []
        for u in chosen.tolist():
            items = np.array([i for i, _ in ts.ur[u]], dtype=np.int64)
            values = np.array([r for _, r in ts.ur[u]], dtype=np.float64)
            known = np.zeros(len(items), dtype=bool)
            known[rng.choice(len(items), size=self.n_known, replace=False)] = True
            targets.append(AttackTarget(ts.to_raw_uid(u), u, items[known], values[known],
                                        items[~known], values[~known]))
        return targets

    def poisoned_dataset(self, target: AttackTarget, beta: int) -> Dataset:
        """A new ``Dataset``: the raw ratings of ``data`` followed by the ``β·k`` fake
        users' (what every scenario simulates; ``data`` is not modified).

        With several algorithms of different ``k``, the first one's ``k`` is used.
        """
        beta = _check_betas([beta])[0]
        k = next(iter(self.algorithms.values())).k
        ts = self.trainset
        raw = [(u, i, r) for u, i, r, *_ in self.data.raw_ratings]
        items = [ts.to_raw_iid(i) for i in target.known_items.tolist()]
        prefix = self._fake_prefix()
        raw += [(f"{prefix}{f}", item, rating) for f in range(beta * k)
                for item, rating in zip(items, target.known_ratings.tolist())]
        frame = pd.DataFrame(raw, columns=["user", "item", "rating"])
        return Dataset.load_from_df(frame, Reader(rating_scale=ts.rating_scale))

    # --------------------------------------------------------------- run
    def run(self) -> pd.DataFrame:
        """Attack every target with every β; one row per (algorithm, target, β).

        Returns
        -------
        pandas.DataFrame
            Columns :data:`COLUMNS` (see the module docstring): ``algo``,
            ``target`` (raw id), ``beta``, ``n_fake``, ``n_known``,
            ``n_hidden``, ``exposure``, ``exposure_any``, ``recovery``,
            ``recovery_pooled``, ``recovery_any``, ``possible_precision``,
            ``possible_recall``, ``topn_precision``, ``topn_recall``,
            ``baseline_recovery``, ``baseline_item_mean``, ``selector_beta`` (the β the selector
            reports for the fake users' selections, NaN for Surprise's
            algorithms) and ``seconds`` (this scenario's fit and reads,
            including the shared poisoning).  ``exposure`` is NaN for
            algorithms without user neighbours (e.g. SVD, item-based kNN).
        """
        targets = self.targets()
        runners = [_make_runner(name, algo) for name, algo in self.algorithms.items()]
        base = self._base(runners)
        jobs = (delayed(_attack_target)(base, runners, target, self.betas, self.entropy,
                                        self.top_n) for target in targets)
        results = Parallel(n_jobs=self.n_jobs, return_as="generator")(jobs)
        rows = []
        for result in _progress(results, len(targets), self.progress):
            rows += result
        return pd.DataFrame(rows, columns=COLUMNS)

    # --------------------------------------------------------- internals
    def _fake_prefix(self) -> str:
        """A raw-id prefix that no real user id starts with."""
        prefix = _FAKE_PREFIX
        raw_ids = [str(u) for u in raw_to_inner(self.trainset)]
        while any(u.startswith(prefix) for u in raw_ids):
            prefix = "_" + prefix
        return prefix

    def _base(self, runners: Sequence[_Runner]) -> _Base:
        ts = self.trainset
        ratings = RatingArrays.from_trainset(ts)
        states = {}
        for runner in runners:
            key = runner.sim_key
            if key is None or key in states:
                continue
            if key[0] == "exact":
                sensitive = any(r.needs_sensitivity for r in runners if r.sim_key == key)
                states[key] = IncrementalSimilarity.fit(key[1], ratings.matrix, key[2], sensitive)
            else:
                options = with_public_bounds(runner.sim_options, ts.rating_scale)
                seed = np.random.SeedSequence(self.entropy, spawn_key=(
                    2, zlib.crc32(key[1].encode()))).generate_state(1, np.uint32)[0]
                backend = sketch_backend(options, random_state=int(seed))
                states[key] = IncrementalSketchSimilarity.fit(backend, ratings.matrix,
                                                              ratings.item_keys)
        grid = np.unique(ratings.item_ratings)
        return _Base(ts, ratings, grid, states, self._fake_prefix())


def _check_algorithms(algo) -> dict[str, AlgoBase]:
    algorithms = dict(algo) if isinstance(algo, Mapping) else {type(algo).__name__: algo}
    if not algorithms:
        raise ValueError("algo must not be an empty mapping")
    for name, candidate in algorithms.items():
        if not isinstance(candidate, AlgoBase):
            raise TypeError(f"algo must be a surprise AlgoBase (or a mapping of them), got "
                            f"{type(candidate).__name__} for {name!r}")
        k = getattr(candidate, "k", None)
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ValueError(f"algo {name!r} has no integer k >= 1 (the attack adds β·k fake "
                             f"users); attack a kNN algorithm")
    return algorithms


def _check_betas(betas) -> tuple[int, ...]:
    if isinstance(betas, (str, bytes)) or not isinstance(betas, (Sequence, np.ndarray)):
        raise TypeError(f"betas must be a sequence of integers, got {type(betas).__name__}")
    if len(betas) == 0:
        raise ValueError("betas must not be empty")
    return tuple(check_int(beta, "betas[]", minimum=1) for beta in betas)


def _make_runner(name: str, algo: AlgoBase) -> _Runner:
    """The batched runner for user-based ``PrivateKNN`` with the basic rule; any other
    algorithm (the other rules and item-based kNN included) is asked query by query."""
    if isinstance(algo, PrivateKNN):
        checked = copy.deepcopy(algo).check_params()
        if checked.prediction_ == "basic" and checked.sim_options_["user_based"]:
            return _PrivateKNNRunner(name, algo)
    return _Runner(name, algo)


def _progress(results, total: int, show: bool):
    """Yield ``results``, showing progress with tqdm when installed, else plain lines."""
    if not show:
        yield from results
        return
    try:
        from tqdm import tqdm
    except ImportError:
        start = time.perf_counter()
        for done, result in enumerate(results, 1):
            print(f"  target {done}/{total} ({time.perf_counter() - start:.0f}s)",
                  file=sys.stderr, flush=True)
            yield result
        return
    yield from tqdm(results, total=total, desc="β-kNN attack", unit="target")
