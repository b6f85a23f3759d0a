"""Surprise's kNN family against dprec's (top-k, exact similarities), user- and item-based.

Each Surprise class (``KNNBasic``, ``KNNWithMeans``, ``KNNWithZScore``,
``KNNBaseline``) and dprec's counterpart (``PrivateKNN`` with the same
``prediction`` rule) fit and test on the same 5 folds of MovieLens 100k
(synthetic data of the same shape when it is absent) and on its canonical
``u1.base``/``u1.test`` split (when the files are available); the script
prints both times and the speed-up measured in this run, and checks that
every prediction agrees: the largest ``|Δest|`` and the number of rows whose
``details`` (``actual_k``, ``was_impossible``) differ.  The ``arrays`` column
times dprec's fit and ``estimate_arrays`` on the same splits (the same numbers
without ``Prediction`` objects or the test set's raw ids: the arithmetic's
own speed) and its speed-up over Surprise.
Run: ``python benchmarks/bench_knn.py`` (``--help`` for the options).
"""

from __future__ import annotations

import argparse

import numpy as np
from _common import folds, time_arrays, time_cv, u1_split
from surprise import KNNBaseline, KNNBasic, KNNWithMeans, KNNWithZScore, accuracy

from dprec import PrivateKNN
from dprec.datasets import load_or_synthetic

SURPRISE = {"basic": KNNBasic, "means": KNNWithMeans, "zscore": KNNWithZScore,
            "baseline": KNNBaseline}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sims", nargs="+", default=["msd"],
                        help="msd, cosine, pearson, pearson_baseline")
    parser.add_argument("--rules", nargs="+", default=list(SURPRISE), choices=list(SURPRISE))
    parser.add_argument("--based", nargs="+", default=["user", "item"], choices=["user", "item"])
    parser.add_argument("--k", type=int, default=40)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--splits", nargs="+", default=["kfold", "u1"], choices=["kfold", "u1"],
                        help="the k folds of the data, and/or MovieLens 100k's u1 split")
    parser.add_argument("--repeat", type=int, default=3,
                        help="dprec runs per row, each on freshly split folds (the fastest "
                             "is reported)")
    args = parser.parse_args(argv)

    data, label = load_or_synthetic("auto")
    for kind in args.splits:
        if kind == "kfold":
            print(f"{label}: {args.folds} folds, k={args.k}, fit + test, times summed over "
                  "the folds")
            _compare(args, lambda: folds(data, args.folds))
        elif u1_split() is None:
            print("u1 split: MovieLens 100k's u1.base/u1.test are not available; skipped")
        else:
            print(f"MovieLens 100k u1 split (80,000 / 20,000 ratings), k={args.k}, fit + test")
            _compare(args, u1_split)


def _compare(args, make_splits) -> None:
    """One row per (neighbourhood, similarity, rule): both times, the speed-up, parity."""
    splits = make_splits()
    print(f"{'Surprise class':<14} {'based':<5} {'similarity':<16} {'Surprise s':>10} "
          f"{'dprec s':>8} {'speed-up':>9} {'arrays s':>9} {'speed-up':>9} {'RMSE':>7} "
          f"{'max |Δest|':>11} {'Δdetails':>9}")
    for based in args.based:
        for name in args.sims:
            options = {"name": name, "user_based": based == "user"}
            for rule in args.rules:
                reference_class = SURPRISE[rule]
                surprise_s, reference = time_cv(
                    lambda cls=reference_class, options=options: cls(
                        k=args.k, sim_options=dict(options), verbose=False),
                    splits)
                # fresh trainsets for every run: dprec reads each trainset into arrays once
                # and reuses them, which a second run on the same folds would not pay for
                dprec_s, ours = float("inf"), None
                for _ in range(args.repeat):   # one run's predictions kept: all are equal
                    seconds, predictions = time_cv(lambda options=options, rule=rule: PrivateKNN(
                        k=args.k, sim_options=options, prediction=rule, verbose=False),
                        make_splits())
                    dprec_s, ours = min(dprec_s, seconds), ours or predictions
                    del predictions
                arrays_s = min(time_arrays(lambda options=options, rule=rule: PrivateKNN(
                    k=args.k, sim_options=options, prediction=rule, verbose=False),
                    make_splits()) for _ in range(args.repeat))
                pairs = [(a, b) for fold_a, fold_b in zip(reference, ours)
                         for a, b in zip(fold_a, fold_b)]
                gap = max(abs(a.est - b.est) for a, b in pairs)
                details = sum(a.details != b.details for a, b in pairs)
                rmse = np.mean([accuracy.rmse(p, verbose=False) for p in ours])
                print(f"{reference_class.__name__:<14} {based:<5} {name:<16} {surprise_s:>10.2f} "
                      f"{dprec_s:>8.3f} {surprise_s / dprec_s:>8.1f}x {arrays_s:>9.3f} "
                      f"{surprise_s / arrays_s:>8.1f}x {rmse:>7.4f} "
                      f"{gap:>11.1e} {details:>9d}", flush=True)


if __name__ == "__main__":
    main()
