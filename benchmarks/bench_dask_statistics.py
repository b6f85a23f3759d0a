"""The end-to-end private models' sums over users on threads and on a Dask cluster.

Fits `DPBaseline` (ε = 1), `DPALS` and `DPItemKNN(similarity="factors")` (ε = 5,
`baseline_share=0.3`, 3 epochs) on the generator's data with ``backend="threads"`` (one
partition, then ``--partitions``) and ``backend="dask"`` on a ``LocalCluster`` of
``--workers`` single-threaded worker processes, after one untimed warm-up fit per model;
prints the seconds of each fit and whether its predictions (on 1,000 pairs) equal the
first fit's, ``==`` on floats.  Exits 1 if one does not.  Plain script (about 2 minutes
at the default 1,000,000 ratings on 2 cores)::

    python benchmarks/bench_dask_statistics.py [--ratings 1000000] [--partitions 4]
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings

import _common  # noqa: F401  (points SURPRISE_DATA_FOLDER at the shared copy)
import numpy as np

from dprec import DPALS, DPBaseline, DPItemKNN, datasets

MODELS = {
    "DPBaseline": lambda **kw: DPBaseline(epsilon=1.0, random_state=1, **kw),
    "DPALS": lambda **kw: DPALS(epsilon=5.0, baseline_share=0.3, random_state=1, **kw),
    "DPItemKNN(factors)": lambda **kw: DPItemKNN(epsilon=5.0, similarity="factors",
                                                 baseline_share=0.3, random_state=1, **kw),
}


def main(argv: list[str]) -> bool:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ratings", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    n_users, n_items = max(args.ratings * 6040 // 1_000_000, 50), \
        max(args.ratings * 3706 // 1_000_000, 40)
    start = time.perf_counter()
    trainset = datasets.synthetic(n_users, n_items, args.ratings,
                                  random_state=0).build_full_trainset()
    print(f"data: {trainset.n_users} users x {trainset.n_items} items, "
          f"{trainset.n_ratings} ratings, {time.perf_counter() - start:.1f} s", flush=True)
    pairs = [(trainset.to_raw_uid(u % trainset.n_users), trainset.to_raw_iid(i % trainset.n_items),
              0.0) for u, i in zip(range(0, 7000, 7), range(0, 3000, 3))]
    for make in MODELS.values():
        make().fit(trainset)                        # warm-up: compilation, caches
    first, same = {}, True

    def run(name: str, label: str, **options) -> None:
        nonlocal same
        start = time.perf_counter()
        model = MODELS[name](**options).fit(trainset)
        seconds = time.perf_counter() - start
        estimates = np.array([p.est for p in model.test(pairs)])
        equal = np.array_equal(estimates, first.setdefault(name, estimates))
        same &= equal
        print(f"{name:20s} {label:40s} {seconds:7.2f} s   same predictions: {equal}",
              flush=True)

    for name in MODELS:
        run(name, "threads, 1 partition", n_partitions=1)
        run(name, f"threads, {args.partitions} partitions", n_partitions=args.partitions)
    from distributed import Client, LocalCluster

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")            # the cluster's start-up chatter
        with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cluster, Client(cluster):
            for name in MODELS:
                run(name, f"dask, {args.workers} workers, {args.partitions} partitions",
                    backend="dask", n_partitions=args.partitions)
    return same


if __name__ == "__main__":
    sys.exit(0 if main(sys.argv[1:]) else 1)
