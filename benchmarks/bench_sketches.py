"""Speed of the private similarity sketches on all MovieLens 100k users.

For each backend: ``sketch`` of all 943 users (width 256; the MinHash family
on all rated items, the projections on the rating vectors) and the all-pairs
``estimate``, best of ``--repeat`` runs, against the targets: sketch under
0.1 s, estimate under 0.5 s.  Synthetic data of the same shape when
MovieLens is absent (the output says so).  Run:
``python benchmarks/bench_sketches.py``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _common import SHARED_SURPRISE  # noqa: F401  (sets SURPRISE_DATA_FOLDER)

from dprec.datasets import load_or_synthetic, user_item_matrix
from dprec.similarity.minhash import MinHash, NoisyMinHash, RRMinHash
from dprec.similarity.sjlt import GaussianJL, PrivateSJLT

SKETCH_TARGET, ESTIMATE_TARGET = 0.1, 0.5


def backends(width: int, s: int):
    return [
        MinHash(width, 2, random_state=0),
        MinHash(width, 4, random_state=0),
        RRMinHash(width, 2, epsilon=4.0, delta=1e-4, random_state=0),
        RRMinHash(width, 4, epsilon=4.0, delta=1e-4, random_state=0),
        NoisyMinHash(width, 4, epsilon=4.0, delta=1e-4, random_state=0),
        PrivateSJLT(width, s, epsilon=4.0, rating_bound=5.0, random_state=0),
        GaussianJL(width, epsilon=4.0, delta=1e-4, rating_bound=5.0, random_state=0),
    ]


def best_of(repeat: int, function) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return min(times), result


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--width", type=int, default=256, help="K (MinHash) and k (projections)")
    parser.add_argument("--s", type=int, default=4, help="SJLT non-zeros per column")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)

    data, label = load_or_synthetic("auto")
    ratings = user_item_matrix(data.build_full_trainset())
    print(f"{label}: {ratings.shape[0]} users, {ratings.shape[1]} items, {ratings.nnz} ratings; "
          f"width {args.width}, best of {args.repeat}")
    print(f"{'backend':<22} {'sketch s':>9} {'estimate s':>11} {'matrix s':>9}  targets")
    for backend in backends(args.width, args.s):
        X = backend._similarity_input(ratings)
        sketch_s, S = best_of(args.repeat, lambda b=backend, X=X: b.sketch(X))
        estimate_s, sims = best_of(args.repeat, lambda b=backend, S=S: b.estimate(S))
        matrix_s, _ = best_of(1, lambda b=backend: b.similarity_matrix(ratings))
        assert np.isfinite(sims).all()
        ok = "ok" if sketch_s < SKETCH_TARGET and estimate_s < ESTIMATE_TARGET else "SLOW"
        name = f"{backend.name}(B={backend.B})" if hasattr(backend, "B") else backend.name
        print(f"{name:<22} {sketch_s:>9.4f} {estimate_s:>11.4f} {matrix_s:>9.4f}  {ok}")


if __name__ == "__main__":
    main()
