"""Shared set-up of the benchmarks: data, folds and timing."""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np

SHARED_SURPRISE = Path(__file__).resolve().parents[2] / "shared" / "data" / "surprise"
if "SURPRISE_DATA_FOLDER" not in os.environ and SHARED_SURPRISE.is_dir():
    os.environ["SURPRISE_DATA_FOLDER"] = str(SHARED_SURPRISE)


def folds(data, n_folds: int = 5, random_state: int = 0):
    """The (trainset, testset) pairs of Surprise's ``KFold``, materialised once."""
    from surprise.model_selection import KFold

    return list(KFold(n_splits=n_folds, random_state=random_state).split(data))


def u1_split():
    """MovieLens 100k's canonical ``u1.base`` / ``u1.test`` split as ``[(trainset, testset)]``,
    or ``None`` when the files are not available offline."""
    from surprise import Dataset, Reader
    from surprise.builtin_datasets import get_dataset_dir
    from surprise.model_selection import PredefinedKFold

    folder = Path(get_dataset_dir()) / "ml-100k" / "ml-100k"
    if not (folder / "u1.base").is_file():
        return None
    data = Dataset.load_from_folds([(str(folder / "u1.base"), str(folder / "u1.test"))],
                                   Reader("ml-100k"))
    return list(PredefinedKFold().split(data))


def time_cv(make_algo, splits) -> tuple[float, list]:
    """Seconds to fit and test a fresh algorithm on every split, and the predictions."""
    predictions = []
    start = time.perf_counter()
    for trainset, testset in splits:
        predictions.append(make_algo().fit(trainset).test(testset))
    return time.perf_counter() - start, predictions


def time_arrays(make_algo, splits) -> float:
    """Seconds to fit a fresh ``PrivateKNN`` on every split and answer its test set with
    ``estimate_arrays`` (the known queries; the inner ids are read before the clock)."""
    from dprec.utils._surprise import inner_ids

    queries = []
    for trainset, testset in splits:
        *_, users, items = inner_ids(trainset, testset)
        known = (users >= 0) & (items >= 0)   # an unknown user or item: impossible, not asked
        queries.append((users[known], items[known]))
    start = time.perf_counter()
    for (trainset, _), (users, items) in zip(splits, queries):
        make_algo().fit(trainset).estimate_arrays(users, items)
    return time.perf_counter() - start


#: MovieLens 25M's shape: users, items, and the highest movie id (the ids are not contiguous)
ML25M_USERS, ML25M_ITEMS, ML25M_MAX_MOVIE_ID = 162_541, 59_047, 209_171
#: half stars 0.5 .. 5 and their approximate shares in MovieLens 25M
STARS = np.arange(1, 11) / 2
SHARES = np.array([1.6, 3.1, 1.7, 6.6, 5.2, 19.9, 13.1, 26.6, 8.8, 14.4])


def movielens_like(n_ratings: int, n_users: int = ML25M_USERS, n_items: int = ML25M_ITEMS,
                   max_item_id: int = ML25M_MAX_MOVIE_ID, seed: int = 0
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(users, items, stars)``: ``n_ratings`` distinct (user, item) pairs of a
    MovieLens-like shape, fast (no Python loop per rating), the users in order.

    Users are ``1..n_users``; each rates at least 20 items (when there are enough
    ratings), the rest spread by a log-normal activity, at most ``n_items`` each.  A
    user's items are consecutive positions (so no pair repeats) from a start skewed
    towards the popular end for half of the users, uniform for the others (so every
    item is rated), mapped to ``n_items`` distinct ids in ``1..max_item_id``.
    ``stars`` indexes [`STARS`][] (half stars 0.5..5) with MovieLens 25M's shares.
    """
    if not 0 < n_ratings <= n_users * n_items:
        raise ValueError(f"n_ratings must be in [1, n_users * n_items], got {n_ratings} "
                         f"for {n_users} x {n_items}")
    rng = np.random.default_rng(seed)
    activity = rng.lognormal(0.0, 1.0, n_users)
    least = min(20, n_ratings // n_users)
    counts = least + rng.multinomial(n_ratings - least * n_users, activity / activity.sum())
    while counts.max() > n_items:     # the busiest users' excess to the others, by activity
        excess = int(np.maximum(counts - n_items, 0).sum())
        counts = np.minimum(counts, n_items)
        room = np.where(counts < n_items, activity, 0.0)
        counts = counts + rng.multinomial(excess, room / room.sum())
    users = np.repeat(np.arange(1, n_users + 1, dtype=np.int64), counts)
    skewed = rng.random(n_users) < 0.5
    start = np.floor(n_items * np.where(skewed, rng.beta(0.6, 3.0, n_users),
                                        rng.random(n_users))).astype(np.int64)
    within = np.arange(n_ratings) - np.repeat(np.cumsum(counts) - counts, counts)
    item_ids = np.sort(rng.choice(max_item_id, n_items, replace=False) + 1)
    items = item_ids[(np.repeat(start, counts) + within) % n_items]
    stars = rng.choice(len(STARS), n_ratings, p=SHARES / SHARES.sum())
    return users, items, stars
