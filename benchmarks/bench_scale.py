"""Scale: cross-validation on MovieLens-1M- and MovieLens-10M-shaped synthetic data.

6040 users, 3706 items, 1,000,209 ratings (``--shape ml-1m``, the default) or
69,878 users, 10,677 items, 10,000,054 ratings (``--shape ml-10m``: one fold
of item-based top-k) (``dprec.datasets.synthetic``).
Each configuration runs in its own process, so its wall time (fit + test
of every fold, data generation excluded) and its peak memory (maximum
resident set size of that process, data included) are its own:

- Surprise ``KNNBasic`` (cosine, k = 40);
- ``PrivateKNN`` top-k (cosine, k = 40, item neighbourhood);
- ``PrivateKNN`` PPNS (ε = 1, p = 0.5) on RRMinHash similarities
  (width 256, B = 4, ε = 4, δ = 1e-4, sets of rated items);
- ``PrivateKNN`` top-k item-based (cosine between items, k = 40): ``topk_items``.

Targets: at the MovieLens-1M shape dprec's configurations under 2 minutes and
4 GB each; at the MovieLens-10M shape one fold under 10 minutes and 12 GB.
Run: ``python benchmarks/bench_scale.py [--shape ml-10m] [--folds 5] [--skip knnbasic]``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import resource
import subprocess
import sys
import time

SHAPES = {"ml-1m": (6040, 3706, 1_000_209), "ml-10m": (69_878, 10_677, 10_000_054)}
CONFIGURATIONS = ("knnbasic", "topk", "ppns_rrminhash", "topk_items")
#: what runs at each shape by default (the 10M shape: one fold, item-based)
DEFAULTS = {"ml-1m": ("knnbasic", "topk", "ppns_rrminhash"), "ml-10m": ("topk_items",)}


def make_algo(name: str):
    from surprise import KNNBasic

    from dprec import PrivateKNN

    if name == "knnbasic":
        return KNNBasic(k=40, sim_options={"name": "cosine"}, verbose=False)
    if name == "topk":
        return PrivateKNN(k=40, sim_options={"name": "cosine"}, random_state=0)
    if name == "topk_items":
        return PrivateKNN(k=40, sim_options={"name": "cosine", "user_based": False},
                          random_state=0, verbose=False)
    return PrivateKNN(k=40, selector="ppns", epsilon=1.0, p=0.5, random_state=0,
                      sim_options={"name": "rr_minhash", "width": 256, "B": 4, "epsilon": 4.0,
                                   "delta": 1e-4})


def run_one(name: str, n_folds: int, fold_limit: int | None = None,
            shape: str = "ml-1m") -> dict:
    """Cross-validate one configuration in this process; returns its figures.

    ``fold_limit`` runs only the first folds of the ``n_folds`` split (for a
    slow reference); ``seconds`` is then scaled to all folds, an estimate.
    """
    from surprise import accuracy
    from surprise.model_selection import KFold

    from dprec import datasets

    data = datasets.synthetic(*SHAPES[shape], random_state=0)
    # only the folds that run are built (a 10M-rating trainset takes 3 GB)
    splits = list(itertools.islice(KFold(n_splits=n_folds, random_state=0).split(data),
                                   fold_limit))
    del data                                  # the folds hold what the runs need
    seconds, rmse = 0.0, []
    for trainset, testset in splits:
        start = time.perf_counter()
        predictions = make_algo(name).fit(trainset).test(testset)
        seconds += time.perf_counter() - start
        rmse.append(accuracy.rmse(predictions, verbose=False))
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"config": name, "seconds": seconds * n_folds / len(splits), "peak_mb": peak_mb,
            "rmse": sum(rmse) / len(rmse), "folds_run": len(splits),
            "seconds_per_fold": seconds / len(splits)}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", choices=sorted(SHAPES), default="ml-1m")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--configs", nargs="+", choices=CONFIGURATIONS,
                        help="default: the shape's (see DEFAULTS)")
    parser.add_argument("--skip", nargs="*", default=[], choices=CONFIGURATIONS)
    parser.add_argument("--fold-limit", type=int, default=None,
                        help="run only the first folds; the time is scaled to all folds")
    parser.add_argument("--one", choices=CONFIGURATIONS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.shape == "ml-10m" and args.fold_limit is None:
        args.fold_limit = 1
    if args.one:
        print(json.dumps(run_one(args.one, args.folds, args.fold_limit, args.shape)))
        return
    users, items, n_ratings = SHAPES[args.shape]
    print(f"{users} users × {items} items, {n_ratings} ratings; {args.folds}-fold CV, "
          f"fit + test, one process per configuration (data generation excluded)")
    print(f"{'configuration':<16} {'seconds':>9} {'s/fold':>8} {'peak MB':>9} {'RMSE':>7}")
    for name in args.configs or DEFAULTS[args.shape]:
        if name in args.skip:
            continue
        limit = [] if args.fold_limit is None else ["--fold-limit", str(args.fold_limit)]
        child = subprocess.run([sys.executable, __file__, "--one", name, "--folds",
                                str(args.folds), "--shape", args.shape, *limit],
                               capture_output=True, text=True)
        if child.returncode != 0:
            print(f"{name:<16} failed: {child.stderr.strip().splitlines()[-1]}")
            continue
        result = json.loads(child.stdout.strip().splitlines()[-1])
        estimate = "" if result["folds_run"] == args.folds else \
            f"  (estimated from {result['folds_run']} fold(s))"
        print(f"{name:<16} {result['seconds']:>9.1f} {result['seconds_per_fold']:>8.1f} "
              f"{result['peak_mb']:>9.0f} {result['rmse']:>7.4f}{estimate}", flush=True)


if __name__ == "__main__":
    main()
