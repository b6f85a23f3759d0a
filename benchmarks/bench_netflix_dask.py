"""The Netflix Prize shape on a Dask LocalCluster: `DPALS` and `DPItemKNN(similarity="factors")`.

The calibrated generator at the Netflix shape (480,189 users × 17,770 items,
100,480,507 ratings, ``as_arrays=True``), split 80/20 (``array_train_test_split``,
seed 0); each model fitted with ``backend="dask"`` on a ``LocalCluster`` of
``--workers`` single-threaded worker processes with a memory limit each
(``--worker-memory``): the per-user sums run per partition of users on the workers,
the noise is added once, in this process.  Then each model answers ``--test-sample``
pairs drawn from the 20 % test fold (Surprise's ``test``: a ``Prediction`` per pair),
and the RMSE is printed next to the user mean's on the same pairs.

Prints the time of each stage, this process's peak resident memory and the workers'
largest after each fit (their peak is capped by the memory limit), and writes
``results/netflix_dask/netflix_dask.csv``.  On a real cluster the same fits run with
``with dask.distributed.Client("tcp://scheduler:8786"):`` around them (see
docs/end_to_end.md, "Running on a cluster").

Run (about 15 minutes on 2 quiet cores, an hour on a loaded machine; 12 GB)::

    python benchmarks/bench_netflix_dask.py [--scale 0.01] [--workers 2]
"""

from __future__ import annotations

import argparse
import resource
import time
import warnings
from pathlib import Path

import _common  # noqa: F401  (points SURPRISE_DATA_FOLDER at the shared copy)
import numpy as np
import pandas as pd

NETFLIX = (480_189, 17_770, 100_480_507)


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _worker_rss_mb() -> float:
    """A worker's resident memory now (its peak is capped by the nanny's memory limit:
    a worker above 95 % of it is restarted, and the fit would fail)."""
    import psutil

    return psutil.Process().memory_info().rss / 2**20


def main(argv: list[str] | None = None) -> pd.DataFrame:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0,
                        help="share of the Netflix shape's users and ratings, all its "
                             "items (default 1)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--worker-memory", default="4GB", help="memory limit per worker")
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--test-sample", type=int, default=1_000_000,
                        help="test pairs answered (default 1,000,000)")
    parser.add_argument("--out", default="results/netflix_dask")
    args = parser.parse_args(argv)

    from dask.distributed import Client, LocalCluster

    from dprec import DPALS, DPItemKNN
    from dprec.datasets import array_train_test_split, synthetic
    from dprec.experiments.users_scaling import sample_test_fold

    users, ratings = (max(int(round(n * args.scale)), 10) for n in (NETFLIX[0], NETFLIX[2]))
    items = NETFLIX[1]
    rows, start = [], time.perf_counter()
    data = synthetic(users, items, ratings, random_state=0, as_arrays=True)
    generated = time.perf_counter() - start
    print(f"generated {len(data):,} ratings ({users:,} users x {items:,} items) in "
          f"{generated:.0f} s, peak {peak_mb():,.0f} MB", flush=True)
    start = time.perf_counter()
    trainset, testset = array_train_test_split(data, test_size=0.2, random_state=0)
    del data
    sample = sample_test_fold(testset, args.test_sample, 0)   # `dprec scaling`'s pairs
    truth = sample.rating_columns()[2]
    del testset
    split = time.perf_counter() - start
    print(f"split 80/20 in {split:.0f} s: {trainset.n_ratings:,} training ratings; "
          f"{len(sample):,} test pairs answered", flush=True)

    # the user mean on the same pairs: the yardstick a private model must beat
    means = np.add.reduceat(trainset.user_ratings, trainset.user_ptr[:-1]) / np.diff(
        trainset.user_ptr)
    inner = pd.Series(np.arange(trainset.n_users), index=trainset.raw_user_ids)
    known = inner.reindex(sample.uids).to_numpy()
    guess = np.where(np.isnan(known), trainset.global_mean,
                     means[np.nan_to_num(known).astype(int)])
    user_mean_rmse = float(np.sqrt(np.mean((truth - guess) ** 2)))
    print(f"user mean on the sample: RMSE {user_mean_rmse:.4f}", flush=True)

    models = {"DPALS": lambda: DPALS(epsilon=args.epsilon, backend="dask"),
              "DPItemKNN(factors)": lambda: DPItemKNN(epsilon=args.epsilon,
                                                      similarity="factors", backend="dask")}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")          # the cluster's start-up chatter
        cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                               memory_limit=args.worker_memory, dashboard_address=None)
    with cluster, Client(cluster) as client:
        for name, make in models.items():
            start = time.perf_counter()
            model = make().fit(trainset)
            fitted = time.perf_counter() - start
            start = time.perf_counter()
            predictions = model.test(sample)
            answered = time.perf_counter() - start
            est = np.fromiter((p.est for p in predictions), np.float64, len(predictions))
            rmse = float(np.sqrt(np.mean((truth - est) ** 2)))
            workers = max(client.run(_worker_rss_mb).values())
            label = model.privacy_report().headline()
            rows.append({"model": name, "users": trainset.n_users, "items": trainset.n_items,
                         "train_ratings": trainset.n_ratings, "epsilon": args.epsilon,
                         "fit_seconds": fitted, "answer_seconds": answered,
                         "test_pairs": len(sample), "rmse": rmse,
                         "user_mean_rmse": user_mean_rmse, "driver_peak_mb": peak_mb(),
                         "worker_rss_mb": workers, "workers": args.workers,
                         "worker_memory": args.worker_memory,
                         "generate_seconds": generated, "split_seconds": split,
                         "claim": "; ".join(str(head) for head in label)})
            print(f"{name}: fit {fitted:.0f} s, {len(sample):,} answers {answered:.0f} s, "
                  f"RMSE {rmse:.4f} (user mean {user_mean_rmse:.4f}), driver peak "
                  f"{peak_mb():,.0f} MB, largest worker after the fit {workers:,.0f} MB; "
                  f"{rows[-1]['claim']}", flush=True)
            del model, predictions
    table = pd.DataFrame(rows)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / "netflix_dask.csv", index=False)
    return table


if __name__ == "__main__":
    main()
