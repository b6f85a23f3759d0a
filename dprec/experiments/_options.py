"""The experiments' options (`dprec.experiments._parsing`: the typed values, the parser
that answers a mistake in one line, the options every experiment shares), the data
they name (`experiment_data`) and the checks of an option against the data
(`check_folds`)."""

from __future__ import annotations

import argparse

from ..datasets import load_or_synthetic, synthetic
from ._parsing import (
    EPSILON,
    FOLDS,
    MAX_COUNT,
    MAX_SEED,
    N_JOBS,
    POSITIVE_INT,
    PROBABILITY,
    SEED,
    OptionParser,
    add_common_options,
    add_data_path,
    existing_path,
    experiment_parser,
    output_folder,
    plain_text,
    quick_folder,
    run_folder,
)

__all__ = ["EPSILON", "FOLDS", "MAX_COUNT", "MAX_SEED", "N_JOBS", "POSITIVE_INT",
           "PROBABILITY", "SEED", "OptionParser", "add_common_options", "add_data_path",
           "check_folds", "existing_path", "experiment_data", "experiment_parser", "output_folder",
           "plain_text", "quick_folder", "run_folder"]


def experiment_data(args: argparse.Namespace):
    """`(data, label)` of an experiment's options: the quick runs' synthetic data (300
    users, 400 items, 15,000 ratings, `--seed`) with `--quick` and synthetic
    `--dataset`, else `--dataset` and `--data-path` (`dprec.datasets.load_or_synthetic`,
    which says which)."""
    if args.quick and args.dataset == "synthetic":
        return synthetic(300, 400, 15_000, random_state=args.seed), "synthetic (quick)"
    return load_or_synthetic(args.dataset, args.seed, path=args.data_path)


def check_folds(folds: int, data, label: str = "the data", inner_folds: int | None = None
                ) -> None:
    """Refuse ``--folds`` above the number of ratings of ``data``, and ``--inner-folds``
    (given) above those of its smallest training fold (each fold tests at least one): a
    ``ValueError`` naming the option and the range that works (Surprise's ``KFold`` said
    "n_splits=12000", the ratings' count, not the option given)."""
    n_ratings = len(data.raw_ratings)
    checks = [("--folds", folds, n_ratings, label)]
    if inner_folds is not None:
        checks.append(("--inner-folds", inner_folds, n_ratings - -(-n_ratings // folds),
                       f"a training fold of {label}"))
    for option, folds, most, of in checks:
        if not 2 <= folds <= most:
            raise ValueError(f"argument {option}: expected 2 to {most} folds (the ratings of "
                             f"{of}), got {folds}")
