"""Shared set-up of the benchmarks: data, folds and timing."""

from __future__ import annotations

import os
import time
from pathlib import Path

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
