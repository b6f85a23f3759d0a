"""The attacked copies of the data, built without touching the dataset given.

What the attacker knows about a target ([`AttackTarget`][]), the
unpoisoned data every scenario starts from (`BaseData`), the copies a
scenario fits on (`ScenarioData`: `poisoned_data` with fake users
appended, `baseline_data` with the target's hidden ratings left out),
and the scenarios of one target with their seeds and noise keys
(`scenarios`, [`scenario_seed`][], `fake_keys`).

Fake users are new accounts: their inner ids come after every real user's and
their ratings after every real rating of their item, as if appended to the raw
ratings of a copy of the dataset.  Each copy gets new dicts and rating arrays;
the rating lists it does not change are shared with the original, never
modified.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from surprise import Trainset

from ..utils._arrays import segment_ids
from ..utils._ratings import RatingArrays, ratings_matrix
from ..utils._surprise import raw_to_inner

__all__ = ["FAKE_PREFIX", "AttackTarget", "BaseData", "Scenario", "ScenarioData", "baseline_data",
           "fake_keys", "fake_prefix", "poisoned_data", "scenario_seed", "scenarios"]

#: the raw ids of the fake users start with this (``"_"`` prepended while a real id does)
FAKE_PREFIX = "betaknn-fake-"


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


def fake_prefix(trainset: Trainset) -> str:
    """A raw-id prefix for the fake users that no real user's raw id starts with.

    `FAKE_PREFIX`, with ``"_"`` prepended until no real id (as a string)
    starts with it.
    """
    prefix = FAKE_PREFIX
    raw_ids = [str(u) for u in raw_to_inner(trainset)]
    while any(u.startswith(prefix) for u in raw_ids):
        prefix = "_" + prefix
    return prefix


@dataclass(frozen=True)
class BaseData:
    """The unpoisoned data, prepared once and shared by every scenario.

    Attributes
    ----------
    trainset : surprise.Trainset
        ``data.build_full_trainset()``.
    ratings : RatingArrays
        Its (user-based) rating arrays.
    grid : ndarray
        The sorted distinct rating values (what estimates are rounded to).
    fake_prefix : str
        The raw-id prefix of the fake users (`fake_prefix`).
    """

    trainset: Trainset
    ratings: RatingArrays
    grid: np.ndarray
    fake_prefix: str

    @classmethod
    def from_trainset(cls, trainset: Trainset) -> BaseData:
        """The base data of ``trainset``: its rating arrays, rating grid and fake prefix."""
        ratings = RatingArrays.from_trainset(trainset)
        return cls(trainset, ratings, np.unique(ratings.item_ratings), fake_prefix(trainset))


@dataclass(frozen=True)
class ScenarioData:
    """A changed copy of the data: trainset, rating arrays, and the changed rows.

    Attributes
    ----------
    trainset : surprise.Trainset
        The copy (new dicts; unchanged rating lists shared with the base).
    ratings : RatingArrays
        Its rating arrays, equal to ``RatingArrays.from_trainset(trainset)``.
    ids : ndarray of int64
        The users whose rows changed (or were appended).
    rows : scipy.sparse.csr_matrix
        Their ratings, one row per id.
    users : ndarray of int64
        The users whose predictions the scenario reads.
    """

    trainset: Trainset
    ratings: RatingArrays
    ids: np.ndarray
    rows: sp.csr_matrix
    users: np.ndarray


def _rating_arrays(base: RatingArrays, keep: np.ndarray, users: np.ndarray,
                   items: np.ndarray, ratings: np.ndarray, n_users: int) -> RatingArrays:
    """``base`` without the entries ``~keep`` and with new ratings appended after
    every old rating of their item (what ``RatingArrays.from_trainset`` gives for
    the changed trainset, without reading it rating by rating)."""
    n_items = base.n_items
    old_items = segment_ids(np.diff(base.item_ptr))
    all_users = np.concatenate([base.item_users[keep], users]).astype(np.int64)
    all_items = np.concatenate([old_items[keep], items]).astype(np.int64)
    all_ratings = np.concatenate([base.item_ratings[keep], ratings]).astype(np.float64)
    order = np.argsort(all_items, kind="stable")
    all_users, all_items, all_ratings = all_users[order], all_items[order], all_ratings[order]
    item_ptr = np.concatenate([[0], np.cumsum(np.bincount(all_items, minlength=n_items))])
    matrix = ratings_matrix(all_users, all_items, all_ratings, (n_users, n_items))
    keys = all_users * n_items + all_items
    by_key = np.argsort(keys, kind="stable")
    return RatingArrays(n_users, n_items, item_ptr, all_users, all_ratings, matrix,
                        keys[by_key], all_ratings[by_key], base.item_ids)


def _copy_trainset(trainset: Trainset, ur: dict, ir: dict, n_users: int, n_ratings: int,
                   raw2inner_users: dict) -> Trainset:
    """A new ``Trainset`` (new dicts; unchanged rating lists are shared, never modified)."""
    return Trainset(defaultdict(list, ur), defaultdict(list, ir), n_users, trainset.n_items,
                    n_ratings, trainset.rating_scale, raw2inner_users,
                    raw_to_inner(trainset, users=False))


def poisoned_data(base: BaseData, target: AttackTarget, n_fake: int) -> ScenarioData:
    """The data with ``n_fake`` fake users appended, each rating the known items.

    Parameters
    ----------
    base : BaseData
    target : AttackTarget
        Its known items and ratings are what every fake user rates.
    n_fake : int
        Number of fake users; their inner ids are ``n_users, ..., n_users + n_fake - 1``
        and their raw ids ``base.fake_prefix`` followed by ``0, ..., n_fake - 1``.

    Returns
    -------
    ScenarioData
        ``ids``, ``users``: the fake users; ``rows``: their ratings.
    """
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
    rows = ratings_matrix(new_users - n, new_items, new_ratings, (n_fake, ts.n_items))
    return ScenarioData(trainset, arrays, fakes, rows, fakes)


def baseline_data(base: BaseData, target: AttackTarget) -> ScenarioData:
    """The data with the target's hidden ratings left out (the known ones stay in place).

    Returns
    -------
    ScenarioData
        ``ids``, ``users``: the target alone; ``rows``: its known ratings.
    """
    ts, t = base.trainset, target.inner_id
    hidden = set(target.hidden_items.tolist())
    ur, ir = dict(ts.ur), dict(ts.ir)
    ur[t] = [(i, r) for i, r in ts.ur[t] if i not in hidden]
    for item in hidden:
        ir[item] = [(u, r) for u, r in ts.ir[item] if u != t]
    trainset = _copy_trainset(ts, ur, ir, ts.n_users, ts.n_ratings - len(hidden),
                              raw_to_inner(ts))
    arrays = base.ratings
    entry_items = segment_ids(np.diff(arrays.item_ptr))
    keep = ~((arrays.item_users == t) & np.isin(entry_items, target.hidden_items))
    empty = np.zeros(0, dtype=np.int64)
    arrays = _rating_arrays(arrays, keep, empty, empty, np.zeros(0), ts.n_users)
    rows = ratings_matrix(np.zeros(len(target.known_items), np.int64), target.known_items,
                          target.known_ratings, (1, ts.n_items))
    users = np.array([t], dtype=np.int64)
    return ScenarioData(trainset, arrays, users, rows, users)


# ------------------------------------------------------------- scenarios
def scenario_seed(entropy: int, target: int, beta: int) -> int:
    """The seed of scenario (target, β): ``SeedSequence(entropy, spawn_key=(1, target, β))``.

    ``β = 0`` is the target's unpoisoned baseline.  The attacked algorithm's
    ``random_state`` is set to it, so targets and β values do not share draws.
    32 bits, so that Surprise's own algorithms (``RandomState``) accept it.
    """
    sequence = np.random.SeedSequence(entropy, spawn_key=(1, int(target), int(beta)))
    return int(sequence.generate_state(1, np.uint32)[0])


def fake_keys(seed: int, n_fake: int) -> np.ndarray:
    """Noise keys of the fake users' sketches in the scenario seeded ``seed``: distinct
    from every real user's key (its index) and from other scenarios' fakes."""
    return (1 << 53) + (int(seed) << 20) + np.arange(n_fake, dtype=np.int64)


@dataclass
class Scenario:
    """One scenario of a target: its data, seed, noise keys and the time spent building it.

    Attributes
    ----------
    beta : int
        ``0``: the baseline (hidden ratings left out, no fakes); else ``β·k`` fakes.
    data : ScenarioData
    seed : int
        [`scenario_seed`][] of (entropy, target, β).
    keys : ndarray of int64
        Noise keys of the changed rows' sketches.
    seconds : float
        Time spent building the data.
    """

    beta: int
    data: ScenarioData
    seed: int
    keys: np.ndarray
    seconds: float


def scenarios(base: BaseData, target: AttackTarget, betas: Sequence[int], k: int,
              entropy: int) -> list[Scenario]:
    """The baseline (``β = 0``) and the ``β·k``-fake-user scenarios of ``target``, in order."""
    out = []
    for beta in (0, *betas):
        start = time.perf_counter()
        seed = scenario_seed(entropy, target.inner_id, beta)
        if beta == 0:
            data = baseline_data(base, target)
            keys = data.ids
        else:
            data = poisoned_data(base, target, beta * k)
            keys = fake_keys(seed, len(data.ids))
        out.append(Scenario(beta, data, seed, keys, time.perf_counter() - start))
    return out
