"""The generator at the large shapes: time and peak memory of ``synthetic(..., as_arrays=True)``.

Each shape is generated in its own process, one after the other (seed 0, the
calibrated defaults): the wall-clock and CPU time of ``synthetic`` and the peak
resident memory of the process, with the largest numbers of ratings of an item and
of a user.  Shapes above 10^9 users x items (the 20M, 25M and Netflix ones) use the
sparse sampler (``dprec.datasets.sampling.sparse_sample``); the 1M and 10M shapes
the dense one.  Targets: the 25M shape under 5 minutes and 8 GB on 2 cores, the
Netflix shape under 20 minutes and 16 GB.
Run: ``python benchmarks/bench_generator_shapes.py [--shapes ml-20m ml-25m netflix]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

SHAPES = {"ml-1m": (6040, 3706, 1_000_209), "ml-10m": (69_878, 10_677, 10_000_054),
          "ml-20m": (138_493, 26_744, 20_000_263), "ml-25m": (162_541, 59_047, 25_000_095),
          "netflix": (480_189, 17_770, 100_480_507)}

_CHILD = """
import json, resource, sys, time
import numpy as np
from dprec.datasets import synthetic
shape = json.loads(sys.argv[1])
wall, cpu = time.perf_counter(), time.process_time()
data = synthetic(*shape, random_state=0, as_arrays=True)
wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
print(json.dumps({"seconds": wall, "cpu_seconds": cpu,
                  "peak_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
                  "ratings": len(data), "top_item": int(np.bincount(data.item_codes).max()),
                  "top_user": int(np.bincount(data.user_codes).max())}))
"""


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", nargs="+", choices=tuple(SHAPES),
                        default=["ml-20m", "ml-25m", "netflix"])
    args = parser.parse_args(argv)
    rows = []
    print(f"{'shape':8} {'users':>8} {'items':>7} {'ratings':>11} {'wall s':>7} "
          f"{'cpu s':>7} {'peak GB':>7} {'top item':>9} {'top user':>8}")
    for name in args.shapes:
        shape = SHAPES[name]
        out = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(shape)], check=True,
                             capture_output=True, text=True).stdout
        row = {"shape": name, **json.loads(out.strip().splitlines()[-1])}
        rows.append(row)
        print(f"{name:8} {shape[0]:8,} {shape[1]:7,} {shape[2]:11,} {row['seconds']:7.1f} "
              f"{row['cpu_seconds']:7.1f} {row['peak_gb']:7.2f} {row['top_item']:9,} "
              f"{row['top_user']:8,}", flush=True)
    return rows


if __name__ == "__main__":
    main()
