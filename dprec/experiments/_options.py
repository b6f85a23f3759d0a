"""The command-line options every experiment shares, named and explained once."""

from __future__ import annotations

import argparse

from ..datasets import load_or_synthetic, synthetic


def experiment_parser(prog: str | None, doc: str, out: str, **options) -> argparse.ArgumentParser:
    """An experiment's command line: described by the first paragraph of its module's
    docstring `doc`, with the options every experiment shares (`add_common_options`:
    `out` the default folder, `options` its keywords)."""
    parser = argparse.ArgumentParser(prog=prog, description=doc.split("\n\n")[0])
    add_common_options(parser, out, **options)
    return parser


def add_common_options(parser: argparse.ArgumentParser, out: str, *, folds: int | None = None,
                       n_jobs: int | None = None, jobs: str = "jobs",
                       data: bool = False) -> None:
    """Add ``--out`` and ``--seed``; ``--folds`` and ``--n-jobs`` when given a default
    (``jobs`` says what runs in parallel); with ``data``, ``--dataset`` and
    ``--data-path`` (read by :func:`dprec.datasets.load_or_synthetic`)."""
    parser.add_argument("--out", default=out, help=f"output folder (default {out})")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the data, folds and noise (default 0)")
    if folds is not None:
        parser.add_argument("--folds", type=int, default=folds,
                            help=f"cross-validation folds (default {folds})")
    if n_jobs is not None:
        parser.add_argument("--n-jobs", type=int, default=n_jobs,
                            help=f"{jobs} in parallel (default {n_jobs})")
    if data:
        parser.add_argument("--dataset", default="auto", choices=("auto", "ml-100k", "synthetic"),
                            help="auto (default): MovieLens 100k when a local copy is found, "
                                 "else synthetic data of its shape, saying so")
        add_data_path(parser)


def add_data_path(parser: argparse.ArgumentParser) -> None:
    """Add ``--data-path``: where MovieLens 100k is read from (for experiments whose
    ``--dataset`` choices are their own)."""
    parser.add_argument("--data-path", default=None, metavar="PATH",
                        help="MovieLens 100k's u.data or its folder (default: "
                             "SURPRISE_DATA_FOLDER)")


def experiment_data(args: argparse.Namespace):
    """``(data, label)`` of an experiment's options: with ``--quick`` the quick runs'
    synthetic data (300 users, 400 items, 15,000 ratings, ``--seed``), else ``--dataset``
    and ``--data-path`` (:func:`dprec.datasets.load_or_synthetic`, which says which)."""
    if args.quick:
        return synthetic(300, 400, 15_000, random_state=args.seed), "synthetic (quick)"
    return load_or_synthetic(args.dataset, args.seed, path=args.data_path)
