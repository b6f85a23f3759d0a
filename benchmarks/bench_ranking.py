"""Speed of the ranking-DP code on MovieLens 100k (synthetic fallback, said so).

Targets: privatising the orders of all 943 users under 1 s; one
``MallowsRanker`` fit on an 80/20 fold under 30 s.  Plain script::

    python benchmarks/bench_ranking.py
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np

_SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "surprise"
if "SURPRISE_DATA_FOLDER" not in os.environ and _SHARED.is_dir():
    os.environ["SURPRISE_DATA_FOLDER"] = str(_SHARED)

from surprise.model_selection import train_test_split  # noqa: E402

from dprec import datasets  # noqa: E402
from dprec.ranking import laplace_privatize, mallows_privatize  # noqa: E402
from dprec.ranking.learner import MallowsRanker  # noqa: E402

PRIVATIZE_BUDGET = 1.0
FIT_BUDGET = 30.0


def _data():
    try:
        return datasets.load("ml-100k"), "MovieLens 100k"
    except (FileNotFoundError, RuntimeError) as error:
        print(f"MovieLens 100k unavailable ({error}): using SYNTHETIC data of its shape")
        return datasets.synthetic(random_state=0), "synthetic (ML-100k shape)"


def _orders(trainset, rng) -> list[np.ndarray]:
    """Every user's items by decreasing rating, ties broken at random."""
    data = np.array(list(trainset.all_ratings()))
    users, items, ratings = data[:, 0].astype(int), data[:, 1].astype(int), data[:, 2]
    order = np.lexsort((rng.random(len(items)), -ratings, users))
    counts = np.bincount(users, minlength=trainset.n_users)
    return np.split(items[order], np.cumsum(counts)[:-1])


def _best_of(fn, repeat: int) -> tuple[float, float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times), float(np.median(times))


def main() -> int:
    data, label = _data()
    full = data.build_full_trainset()
    orders = _orders(full, np.random.default_rng(0))
    sizes = np.array([len(o) for o in orders])
    print(f"{label}: {len(orders)} users, {sizes.sum()} ratings, "
          f"items per user {sizes.min()}..{sizes.max()}")
    ok = True
    for name, fn in (("mallows_privatize", mallows_privatize),
                     ("laplace_privatize", laplace_privatize)):
        best, median = _best_of(lambda fn=fn: fn(orders, 1.0, 0), repeat=5)
        ok &= best < PRIVATIZE_BUDGET
        print(f"{name:<20} all users, ε=1: best {best:.3f} s, median {median:.3f} s "
              f"(budget {PRIVATIZE_BUDGET:.0f} s)")
    trainset, testset = train_test_split(data, test_size=0.2, random_state=0)
    for eps, mech in ((1.0, "mallows"), (1.0, "laplace"), (None, "mallows")):
        algo = MallowsRanker(epsilon=eps, mechanism=mech, random_state=0)
        start = time.perf_counter()
        algo.fit(trainset)
        fit = time.perf_counter() - start
        start = time.perf_counter()
        algo.test(testset)
        test = time.perf_counter() - start
        ok &= fit < FIT_BUDGET
        print(f"MallowsRanker fit ({mech}, ε={eps}): {fit:.1f} s (budget {FIT_BUDGET:.0f} s); "
              f"test on {len(testset)} ratings: {test:.2f} s")
    print("within budgets" if ok else "OVER BUDGET")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
