"""Cross-validation comparisons as tidy pandas tables, and a ranking option chosen on
the training ratings alone.

One function, [`cross_validate_table`][], runs Surprise's
``cross_validate`` for several named algorithms on the same folds and returns
one row per (algorithm, fold); [`summarise`][] averages the folds.  The
``dprec demo`` and ``dprec cv`` commands and the experiments print and save
these tables.  [`choose_ranking_option`][] picks a top-N ranking option (e.g.
`neighbour_shrinkage`) by precision@n on a per-user hold-out of the training ratings
([`holdout_split`][]), never on the test ratings.

The package `dprec.evaluation`: this cross-validation module, `metrics` (rating and top-N
metrics), `topn` (top-N lists from any Surprise algorithm) and `baselines` (Surprise's
baseline estimates). Floor 1 of the package map in ``docs/development.md``. May import:
`dprec.utils`.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager

import numpy as np
import pandas as pd
from joblib import Parallel, delayed
from surprise import Dataset, Reader, accuracy
from surprise.model_selection import KFold, cross_validate

from ..utils._progress import progress_bar
from ..utils._validation import check_int, check_open_unit, check_real
from .metrics import ndcg_at_k, precision_at_k
from .topn import recommend_batch

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
    with progress_bar(list(algorithms), progress, desc="cross-validating", unit="algorithm",
                      leave=False) as names:
        for name in names:
            algo = algorithms[name]
            folds = KFold(n_splits=n_folds, random_state=random_state)
            result = cross_validate(algo, data, measures=["rmse", "mae"], cv=folds,
                                    n_jobs=n_jobs)
            for fold in range(n_folds):
                rows.append({
                    "algo": name, "fold": fold,
                    "rmse": result["test_rmse"][fold], "mae": result["test_mae"][fold],
                    "fit_time": result["fit_time"][fold],
                    "test_time": result["test_time"][fold],
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
        done = Parallel(n_jobs=n_jobs, return_as="generator")(tasks)
        with progress_bar(done, total=len(jobs), desc="cross-validating", unit="fold") as bar:
            results = list(bar)
    else:
        results = Parallel(n_jobs=n_jobs)(tasks)
    rows = [{**config, "fold": fold, **result} for (config, fold), result in zip(jobs, results)]
    return pd.DataFrame(rows)


def holdout_split(frame: pd.DataFrame, share: float = 0.2, seed: int = 0
                  ) -> tuple[pd.DataFrame, pd.DataFrame]:
    r"""``(train, held)``: $\min(\lfloor s n + 1/2 \rfloor, n - 1)$ of each user's $n$
    rows held out at random, $s$ = ``share``: none for a user where that is 0, never all
    of a user's rows (every user keeps one to be fitted on).

    Parameters
    ----------
    frame : pandas.DataFrame
        One row per (user, item) pair, with a ``user`` column; not modified.
    share : float, default 0.2
        The share of each user's rows held out, in $(0, 1)$.
    seed : int, default 0
        The seed of the draw (``>= 0``): the same seed, the same split.

    Returns
    -------
    (pandas.DataFrame, pandas.DataFrame)
        The rows kept and the rows held out, each in the order of ``frame``, with a
        new index.
    """
    share = check_open_unit(share, "share")
    seed = check_int(seed, "seed", minimum=0)
    if not isinstance(frame, pd.DataFrame) or "user" not in frame.columns:
        raise TypeError("frame must be a pandas DataFrame with a 'user' column")
    frame = frame.reset_index(drop=True)
    shuffled = frame.iloc[np.random.default_rng(seed).permutation(len(frame))]
    position = shuffled.groupby("user", sort=False).cumcount()
    size = shuffled.groupby("user", sort=False)["user"].transform("size")
    held = position < np.minimum(np.floor(share * size + 0.5), size - 1)
    return (shuffled[~held].sort_index().reset_index(drop=True),
            shuffled[held].sort_index().reset_index(drop=True))


def choose_ranking_option(algo, trainset, option: str, values: Sequence, n: int = 10,
                          threshold: float = 4.0, share: float = 0.2, seed: int = 0
                          ) -> tuple[object, pd.Series]:
    r"""Choose a top-N ranking option on the training ratings alone: the value of
    ``option`` of best precision@``n`` on a hold-out of ``trainset``.

    ``share`` of each user's ratings of ``trainset`` are held out ([`holdout_split`][],
    seeded); a copy of ``algo`` is fitted on the rest, once, and ranks the top ``n`` of
    every user with a held-out rating $\ge$ ``threshold`` under each value
    ([`dprec.evaluation.topn.recommend_batch`][] with ``option=value``); precision@``n`` counts the
    listed items the user rated $\ge$ ``threshold`` in the hold-out
    ([`dprec.evaluation.metrics.precision_at_k`][]).  Refit on the whole ``trainset`` and rank with
    the value chosen: the test ratings never enter the choice.

    Parameters
    ----------
    algo : model
        Unfitted or fitted; a copy is fitted, ``algo`` is not changed.  Its ``fit`` must
        take a Surprise trainset, and its lists take ``option`` (e.g. `PrivateKNN`'s
        ``neighbour_shrinkage`` or ``min_k``).
    trainset : surprise.Trainset
        The training ratings (not modified).
    option : str
        The ranking option, a keyword of ``recommend_batch``.
    values : sequence
        The candidate values, at least one.
    n : int, default 10
        The lists' length (``>= 1``).
    threshold : float, default 4.0
        Relevance: a held-out rating ``>= threshold``.
    share : float, default 0.2
        The share of each user's ratings held out, in $(0, 1)$.
    seed : int, default 0
        The hold-out's seed.

    Returns
    -------
    (value, pandas.Series)
        The value chosen (the first of the best precision, in the order of ``values``),
        and precision@``n`` of every value (the validation curve, indexed by value).

    Raises
    ------
    TypeError
        For an ``option`` the model's lists do not take (naming it).
    ValueError
        For no ``values``, or no held-out rating ``>= threshold``.
    """
    if not isinstance(option, str):
        raise TypeError(f"option must be the name of a ranking option (a str), "
                        f"got {type(option).__name__} {option!r}")
    values = list(values)
    if not values:
        raise ValueError(f"values must hold at least one value of {option}")
    n = check_int(n, "n", minimum=1)
    threshold = check_real(threshold, "threshold")
    frame = pd.DataFrame([(trainset.to_raw_uid(u), trainset.to_raw_iid(i), r)
                          for u, i, r in trainset.all_ratings()],
                         columns=["user", "item", "rating"])
    train, held = holdout_split(frame, share, seed)
    relevant = held[held["rating"] >= threshold]
    if relevant.empty:
        raise ValueError(f"no held-out rating is >= threshold ({threshold:g}): raise share or "
                         "lower threshold")
    fitted = copy.deepcopy(algo)
    fitted.fit(Dataset.load_from_df(train, Reader(rating_scale=trainset.rating_scale))
               .build_full_trainset())
    uids = list(dict.fromkeys(relevant["user"]))
    testset = list(held.itertuples(index=False, name=None))
    curve = [precision_at_k(recommend_batch(fitted, uids, n, **{option: value}), n,
                            threshold=threshold, testset=testset) for value in values]
    curve = pd.Series(curve, index=pd.Index(values, name=option), name=f"precision@{n}")
    return values[int(np.argmax(curve.to_numpy()))], curve


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
