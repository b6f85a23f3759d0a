"""The command-line options every experiment shares, named and explained once."""

from __future__ import annotations

import argparse


def add_common_options(parser: argparse.ArgumentParser, out: str, *, folds: int | None = None,
                       n_jobs: int | None = None, jobs: str = "jobs") -> None:
    """Add ``--out`` and ``--seed``, and ``--folds`` and ``--n-jobs`` when given a
    default (``jobs`` says what runs in parallel)."""
    parser.add_argument("--out", default=out, help=f"output folder (default {out})")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the data, folds and noise (default 0)")
    if folds is not None:
        parser.add_argument("--folds", type=int, default=folds,
                            help=f"cross-validation folds (default {folds})")
    if n_jobs is not None:
        parser.add_argument("--n-jobs", type=int, default=n_jobs,
                            help=f"{jobs} in parallel (default {n_jobs})")
