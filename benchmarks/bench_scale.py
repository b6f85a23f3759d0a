"""Scale: time and peak memory from the MovieLens-100k to the MovieLens-10M shape.

Three synthetic shapes (``dprec.datasets.synthetic``): ``ml-100k`` (943 users,
1682 items, 100,000 ratings), ``ml-1m`` (6040, 3706, 1,000,209) and
``ml-10m`` (69,878, 10,677, 10,000,054).  Each configuration runs in its own
process, so its wall time (fit + test of every fold, data generation
excluded) and its peak memory (maximum resident set size of that process,
data included) are its own:

- ``knnbasic``: Surprise ``KNNBasic`` (cosine, k = 40);
- ``topk``: ``PrivateKNN`` top-k (cosine, k = 40, Surprise's item
  neighbourhood, ``storage="auto"``: the whole matrix up to about 5,800 users,
  similarity rows per block of users beyond);
- ``topk_dense``: the same with ``storage="dense"`` (the n × n matrix);
- ``ppns``: ``PrivateKNN`` PPNS (ε = 1, p = 0.5) on the exact cosine, with
  every user's recommendation-aware sensitivity RS (``storage="auto"``);
- ``ppns_rrminhash``: PPNS on RRMinHash similarities (width 256, B = 4, ε = 4,
  δ = 1e-4, sets of rated items);
- ``topk_items``: top-k item-based (cosine between items, k = 40).

``--shapes ml-100k ml-1m ml-10m`` runs several shapes and ends with each
configuration's growth exponent: the slope of log(seconds per fold) and of
log(peak memory) against log(ratings) between consecutive shapes.  The
10M shape runs one fold (``--fold-limit 1``) unless told otherwise.
Targets: ML-1M 5-fold CV under 15 s; the 10M shape, one fold, under 10
minutes and 12 GB.
Run: ``python benchmarks/bench_scale.py [--shapes ml-1m] [--folds 5] [--configs ...]``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import resource
import subprocess
import sys
import time

SHAPES = {"ml-100k": (943, 1682, 100_000), "ml-1m": (6040, 3706, 1_000_209),
          "ml-10m": (69_878, 10_677, 10_000_054)}
CONFIGURATIONS = ("knnbasic", "topk", "topk_dense", "ppns", "ppns_rrminhash", "topk_items")
#: what runs at each shape by default (Surprise's KNNBasic is not run at the 10M shape:
#: its 69,878² similarity matrix alone is 39 GB)
DEFAULTS = {"ml-100k": ("knnbasic", "topk", "topk_dense", "ppns"),
            "ml-1m": ("knnbasic", "topk", "topk_dense", "ppns", "ppns_rrminhash"),
            "ml-10m": ("topk", "ppns", "topk_items")}


def make_algo(name: str):
    from surprise import KNNBasic

    from dprec import PrivateKNN

    if name == "knnbasic":
        return KNNBasic(k=40, sim_options={"name": "cosine"}, verbose=False)
    cosine = {"name": "cosine"}
    if name in ("topk", "topk_dense"):
        return PrivateKNN(k=40, sim_options=cosine, random_state=0, verbose=False,
                          storage="dense" if name == "topk_dense" else "auto")
    if name == "topk_items":
        return PrivateKNN(k=40, sim_options={**cosine, "user_based": False},
                          random_state=0, verbose=False)
    if name == "ppns":
        return PrivateKNN(k=40, selector="ppns", epsilon=1.0, p=0.5, sim_options=cosine,
                          random_state=0, verbose=False)
    return PrivateKNN(k=40, selector="ppns", epsilon=1.0, p=0.5, random_state=0, verbose=False,
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


def run_shape(shape: str, configs, n_folds: int, fold_limit: int | None) -> list[dict]:
    """Every configuration of one shape, each in a child process; prints a row each."""
    users, items, n_ratings = SHAPES[shape]
    print(f"\n{shape}: {users} users × {items} items, {n_ratings:,} ratings; {n_folds}-fold "
          f"CV, fit + test, one process per configuration (data generation excluded)")
    print(f"{'configuration':<16} {'seconds':>9} {'s/fold':>8} {'peak MB':>9} {'RMSE':>7}")
    results = []
    for name in configs:
        limit = [] if fold_limit is None else ["--fold-limit", str(fold_limit)]
        child = subprocess.run([sys.executable, __file__, "--one", name, "--folds",
                                str(n_folds), "--shapes", shape, *limit],
                               capture_output=True, text=True)
        if child.returncode != 0:
            print(f"{name:<16} failed: {child.stderr.strip().splitlines()[-1]}")
            continue
        result = json.loads(child.stdout.strip().splitlines()[-1])
        estimate = "" if result["folds_run"] == n_folds else \
            f"  (estimated from {result['folds_run']} fold(s))"
        print(f"{name:<16} {result['seconds']:>9.1f} {result['seconds_per_fold']:>8.1f} "
              f"{result['peak_mb']:>9.0f} {result['rmse']:>7.4f}{estimate}", flush=True)
        results.append({"shape": shape, "ratings": n_ratings, **result})
    return results


def growth_exponents(results: list[dict]) -> list[tuple[str, str, float, float]]:
    """``(config, "a → b", time exponent, memory exponent)`` between consecutive shapes:
    the slopes of log(seconds per fold) and log(peak MB) against log(ratings)."""
    rows = []
    for config in dict.fromkeys(r["config"] for r in results):
        runs = sorted((r for r in results if r["config"] == config), key=lambda r: r["ratings"])
        for a, b in itertools.pairwise(runs):
            scale = math.log(b["ratings"] / a["ratings"])
            rows.append((config, f"{a['shape']} → {b['shape']}",
                         math.log(b["seconds_per_fold"] / a["seconds_per_fold"]) / scale,
                         math.log(b["peak_mb"] / a["peak_mb"]) / scale))
    return rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", nargs="+", choices=sorted(SHAPES), default=["ml-1m"],
                        help="data shapes to run, smallest first (default: ml-1m)")
    parser.add_argument("--shape", choices=sorted(SHAPES), help=argparse.SUPPRESS)
    parser.add_argument("--folds", type=int, default=5, help="folds of the split (default 5)")
    parser.add_argument("--configs", nargs="+", choices=CONFIGURATIONS,
                        help="configurations to run (default: each shape's, see DEFAULTS)")
    parser.add_argument("--skip", nargs="*", default=[], choices=CONFIGURATIONS,
                        help="configurations not to run")
    parser.add_argument("--fold-limit", type=int, default=None,
                        help="run only the first folds; the time is scaled to all folds "
                             "(default: 1 at the 10M shape, else all)")
    parser.add_argument("--one", choices=CONFIGURATIONS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    shapes = [args.shape] if args.shape else args.shapes
    if args.one:
        print(json.dumps(run_one(args.one, args.folds, args.fold_limit, shapes[0])))
        return
    results = []
    for shape in shapes:
        limit = 1 if shape == "ml-10m" and args.fold_limit is None else args.fold_limit
        configs = [c for c in args.configs or DEFAULTS[shape] if c not in args.skip]
        results += run_shape(shape, configs, args.folds, limit)
    exponents = growth_exponents(results)
    if exponents:
        print("\ngrowth exponents against the number of ratings (time per fold, peak memory)")
        for config, between, time_exponent, memory_exponent in exponents:
            print(f"{config:<16} {between:<20} time {time_exponent:5.2f}   "
                  f"memory {memory_exponent:5.2f}")


if __name__ == "__main__":
    main()
