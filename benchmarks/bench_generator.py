"""The synthetic generator's accuracy ladder against MovieLens, at two shapes.

Prints, per rung (global, user and item means, BaselineOnly, SVD, the kNN family),
the ladder of ``datasets.synthetic()`` with its calibrated defaults next to
MovieLens 100k's (measured in the same run, on the same 80/20 splits, seeds 0-2)
and, at the MovieLens-1M shape, next to the published MovieLens-1M figures; the
tolerances are 0.015 and 0.02.  Exits 1 when a rung at the ML-100k shape is out
of its tolerance (the ML-1M rows are printed, not judged: the generator is not
fitted to them, see docs/data.md).  Writes ``results/data_ladder/data_ladder.csv``.
Plain script (about 2 minutes on 2 cores)::

    python benchmarks/bench_generator.py [--quick]
"""

from __future__ import annotations

import sys

import _common  # noqa: F401  (points SURPRISE_DATA_FOLDER at the shared copy)

from dprec.experiments.data_ladder import main

if __name__ == "__main__":
    table = main(sys.argv[1:])
    fitted = table[table["shape"] == "ml-100k"]
    sys.exit(0 if fitted["within"].all() else 1)
