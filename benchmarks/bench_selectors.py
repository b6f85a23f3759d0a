"""Private selectors against Surprise's ``KNNBasic``: 5-fold cross-validation time.

``PrivateKNN`` with PPNS and PNCF (cosine, item neighbourhood, ε = 1)
against ``KNNBasic`` (cosine) on the same folds of MovieLens 100k (synthetic
data of its shape when it is absent), fit + test, measured in one run.
The exact recommendation-aware sensitivity is computed in every fit.
Run: ``python benchmarks/bench_selectors.py``.
"""

from __future__ import annotations

import argparse

from _common import folds, time_cv
from surprise import KNNBasic, accuracy

from dprec import PrivateKNN
from dprec.datasets import load_or_synthetic


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, default=40)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--epsilon", type=float, default=1.0)
    args = parser.parse_args(argv)
    data, label = load_or_synthetic("auto")
    splits = folds(data, args.folds)
    cosine = {"name": "cosine"}
    reference_s, _ = time_cv(lambda: KNNBasic(k=args.k, sim_options=dict(cosine),
                                              verbose=False), splits)
    print(f"{label}: {args.folds} folds, k={args.k}, fit + test; KNNBasic {reference_s:.2f} s")
    print(f"{'selector':<14} {'seconds':>8} {'speed-up':>9} {'RMSE':>7}")
    for selector in ["topk", "probabilistic", "pncf", "ppns"]:
        seconds, predictions = time_cv(
            lambda selector=selector: PrivateKNN(k=args.k, sim_options=cosine,
                                                 selector=selector, epsilon=args.epsilon,
                                                 random_state=0), splits)
        rmse = sum(accuracy.rmse(p, verbose=False) for p in predictions) / len(predictions)
        print(f"{selector:<14} {seconds:>8.2f} {reference_s / seconds:>8.1f}x {rmse:>7.4f}")


if __name__ == "__main__":
    main()
