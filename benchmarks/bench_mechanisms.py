"""Throughput of dprec.mechanisms' samplers next to numpy's ``Generator.laplace``.

Usage::

    python benchmarks/bench_mechanisms.py            # n = 10**7 draws per sampler
    python benchmarks/bench_mechanisms.py --n 1000000 --repeat 5

Prints draws per second and the ratio to ``numpy.random.Generator.laplace``
measured in the same run (best of ``--repeat`` timings).  Target: the safe
default (lattice Laplace) at least a third of numpy's speed.  OpenDP (optional)
runs on at most ``--opendp-n`` draws: it converts through Python lists.
For exponential top-k, a "draw" is one candidate scored (rows of
``--candidates`` candidates, ``k = --k``).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dprec import mechanisms as M  # noqa: E402


def best_time(function: Callable[[], object], repeat: int) -> float:
    """Best wall-clock time of ``repeat`` calls, in seconds."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - start)
    return best


def cases(n: int, args: argparse.Namespace, rng: np.random.Generator):
    """``(name, draws, callable)`` for every sampler."""
    x = np.zeros(n)
    codes = rng.integers(0, 4, n)
    rows = max(1, n // args.candidates)
    scores = rng.random((rows, args.candidates))
    yield "numpy Generator.laplace (reference)", n, lambda: rng.laplace(0.0, 1.0, n)
    yield "laplace, lattice (default, safe)", n, lambda: M.laplace(x, 1.0, rng)
    yield "laplace, numpy (unsafe)", n, lambda: M.laplace(x, 1.0, rng, sampler="numpy")
    if importlib.util.find_spec("opendp") is not None:
        m = min(n, args.opendp_n)
        xo = np.zeros(m)
        yield "laplace, opendp (exact)", m, lambda: M.laplace(xo, 1.0, None, sampler="opendp")
    yield "gaussian", n, lambda: M.gaussian(x, 1.0, rng)
    yield "randomized_response (n_values=4)", n, lambda: M.randomized_response(codes, 4, 1.0,
                                                                                 rng)
    yield (f"exponential_top_k (rows of {args.candidates}, k={args.k})", rows * args.candidates,
           lambda: M.exponential_top_k(scores, args.k, 1.0, 1.0, rng))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10**7, help="draws per sampler")
    parser.add_argument("--repeat", type=int, default=3, help="timings per sampler (best kept)")
    parser.add_argument("--opendp-n", type=int, default=10**5, help="draws for OpenDP")
    parser.add_argument("--candidates", type=int, default=50, help="candidates per top-k row")
    parser.add_argument("--k", type=int, default=10, help="k of exponential top-k")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)

    results = []
    for name, draws, function in cases(args.n, args, rng):
        seconds = best_time(function, args.repeat)
        results.append((name, draws, seconds, draws / seconds))
    reference = results[0][3]
    print(f"n = {args.n:,}, best of {args.repeat}, numpy {np.__version__}")
    print(f"{'sampler':48s} {'draws':>11s} {'seconds':>9s} {'draws/s':>12s} {'vs numpy':>9s}")
    for name, draws, seconds, rate in results:
        print(f"{name:48s} {draws:>11,d} {seconds:>9.4f} {rate:>12.3e} {rate / reference:>9.3f}")
    lattice = results[1][3] / reference
    verdict = "meets" if lattice >= 1 / 3 else "MISSES"
    print(f"lattice Laplace runs at {lattice:.2f}x numpy: {verdict} the 1/3 target")
    return 0 if lattice >= 1 / 3 else 1


if __name__ == "__main__":
    raise SystemExit(main())
