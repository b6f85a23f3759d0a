"""Cross-validation comparisons as tidy pandas tables.

One function, [`cross_validate_table`][], runs Surprise's
``cross_validate`` for several named algorithms on the same folds and returns
one row per (algorithm, fold); [`summarise`][] averages the folds.  The
``dprec demo`` and ``dprec cv`` commands and the experiments print and save
these tables.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager

import numpy as np
import pandas as pd
from joblib import Parallel, delayed
from surprise import accuracy
from surprise.model_selection import KFold, cross_validate

from ._validation import check_int
from .metrics import ndcg_at_k, precision_at_k

FOLD_COLUMNS = ["algo", "fold", "rmse", "mae", "fit_time", "test_time"]


def cross_validate_table(algorithms: Mapping[str, object], data, n_folds: int = 5,
                         random_state: int = 0, n_jobs: int = 1,
                         progress: bool = False) -> pd.DataFrame:
    """Cross-validate every algorithm on the same ``KFold`` split.

    Parameters
    ----------
    algorithms : mapping of name to Surprise algorithm instance
    data : surprise.dataset.Dataset
    n_folds : int
        Number of folds (``>= 2``).
    random_state : int
        Seed of the fold split (the same folds for every algorithm).
    n_jobs : int
        Folds run in parallel by Surprise (joblib).
    progress : bool
        Show a progress bar over the algorithms (tqdm, on stderr).

    Returns
    -------
    pandas.DataFrame
        Columns ``algo, fold, rmse, mae, fit_time, test_time``.
    """
    n_folds = check_int(n_folds, "n_folds", minimum=2)
    rows = []
    names = list(algorithms)
    if progress:
        from tqdm import tqdm

        names = tqdm(names, desc="cross-validating", unit="algorithm", leave=False)
    for name in names:
        algo = algorithms[name]
        folds = KFold(n_splits=n_folds, random_state=random_state)
        result = cross_validate(algo, data, measures=["rmse", "mae"], cv=folds, n_jobs=n_jobs)
        for fold in range(n_folds):
            rows.append({
                "algo": name, "fold": fold,
                "rmse": result["test_rmse"][fold], "mae": result["test_mae"][fold],
                "fit_time": result["fit_time"][fold], "test_time": result["test_time"][fold],
            })
    return pd.DataFrame(rows, columns=FOLD_COLUMNS)


def summarise(table: pd.DataFrame, by: str | list[str] = "algo") -> pd.DataFrame:
    """Mean RMSE and MAE, total fit and test seconds per group, in first-seen order."""
    summary = table.groupby(by, sort=False).agg(
        rmse=("rmse", "mean"), mae=("mae", "mean"),
        fit_time=("fit_time", "sum"), test_time=("test_time", "sum"))
    return summary.reset_index()


def fit_and_score(algo, trainset, testset) -> dict:
    """Fit ``algo``, test it, and return RMSE, MAE, precision@10 (relevance: rating
    ≥ 3.5) and NDCG@10 over the test predictions, seconds and (for dprec's kNN) the
    selection summary's mean α, β and furthest partition."""
    start = time.perf_counter()
    algo.fit(trainset)
    fitted = time.perf_counter()
    predictions = algo.test(testset)
    tested = time.perf_counter()
    row = {"rmse": accuracy.rmse(predictions, verbose=False),
           "mae": accuracy.mae(predictions, verbose=False),
           "precision@10": precision_at_k(predictions, 10),
           "ndcg@10": ndcg_at_k(predictions, 10),
           "impossible": float(np.mean([p.details["was_impossible"] for p in predictions])),
           "fit_time": fitted - start, "test_time": tested - fitted}
    if hasattr(algo, "selection_summary"):
        summary = algo.selection_summary()
        row.update(alpha=summary["alpha"], beta=summary["beta"],
                   max_partition=summary["max_partition"])
    return row


def grid_table(configurations: Sequence[Mapping], make_algo: Callable[..., object], data,
               n_folds: int = 5, random_state: int = 0, n_jobs: int = 1,
               progress: bool = False) -> pd.DataFrame:
    """Cross-validate ``make_algo(**configuration)`` for every configuration.

    Every (configuration, fold) pair is one job for joblib (``n_jobs`` workers,
    any joblib backend, e.g. Dask's); the folds are Surprise's ``KFold`` with
    ``random_state``, the same for every configuration.  ``progress`` shows a
    tqdm bar over the jobs as they finish.

    Returns
    -------
    pandas.DataFrame
        One row per (configuration, fold): the configuration's keys, ``fold``,
        and the columns of [`fit_and_score`][].
    """
    n_folds = check_int(n_folds, "n_folds", minimum=2)
    splits = list(KFold(n_splits=n_folds, random_state=random_state).split(data))
    jobs = [(config, fold) for config in configurations for fold in range(n_folds)]
    tasks = (delayed(fit_and_score)(make_algo(**config), *splits[fold]) for config, fold in jobs)
    if progress:   # a tqdm bar over the jobs as they finish
        from tqdm import tqdm

        done = Parallel(n_jobs=n_jobs, return_as="generator")(tasks)
        results = list(tqdm(done, total=len(jobs), desc="cross-validating", unit="fold"))
    else:
        results = Parallel(n_jobs=n_jobs)(tasks)
    rows = [{**config, "fold": fold, **result} for (config, fold), result in zip(jobs, results)]
    return pd.DataFrame(rows)


@contextmanager
def parallel_backend(backend: str = "loky", scheduler: str | None = None,
                     n_workers: int = 2) -> Iterator[None]:
    """Run the joblib jobs inside the block locally or on a Dask cluster.

    Parameters
    ----------
    backend : {"loky", "dask"}
        ``"loky"``: joblib's local processes.  ``"dask"``: joblib's Dask
        backend (``dask.distributed``); every (configuration, fold) job of
        [`grid_table`][] and every fold of Surprise's ``cross_validate``
        runs on the workers, which need dprec installed.
    scheduler : str, optional
        Address of an existing Dask scheduler (``"tcp://host:8786"``);
        without it a ``LocalCluster`` of ``n_workers`` single-threaded worker
        processes is started for the block and closed after it.
    n_workers : int
        Workers of that ``LocalCluster`` (``>= 1``).

    Raises
    ------
    ValueError, TypeError
        For an unknown ``backend``, ``n_workers < 1`` or a non-string ``scheduler``,
        before anything is started.
    """
    import joblib

    if backend not in ("loky", "dask"):
        raise ValueError(f"backend must be 'loky' or 'dask', got {backend!r}")
    if backend == "loky":
        yield
        return
    with dask_client(scheduler, n_workers), joblib.parallel_backend("dask"):
        yield


@contextmanager
def dask_client(scheduler: str | None = None, n_workers: int = 2) -> Iterator[object]:
    """A ``dask.distributed`` client in scope for the block (yielded): connected to
    ``scheduler``, or to a ``LocalCluster`` of ``n_workers`` single-threaded worker
    processes started for the block; closed after it (the cluster too).  Models
    with ``backend="dask"`` ([`dprec.PrivateKNN`][]) send their blocks to it.
    ``n_workers`` and ``scheduler`` are checked before any cluster starts (a
    ``LocalCluster`` without workers never runs a job)."""
    n_workers = check_int(n_workers, "n_workers", minimum=1)
    if scheduler is not None and not isinstance(scheduler, str):
        raise TypeError(f"scheduler must be an address string or None, "
                        f"got {type(scheduler).__name__}")
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError as error:  # pragma: no cover - depends on the extra
        raise ImportError("the Dask backend needs dask[distributed]: "
                          "pip install 'dprec[dask]'") from error
    cluster = None if scheduler else LocalCluster(n_workers=n_workers, threads_per_worker=1,
                                                  processes=True, dashboard_address=None)
    with Client(scheduler or cluster) as client:
        try:
            yield client
        finally:
            client.close()
            if cluster is not None:
                cluster.close()
