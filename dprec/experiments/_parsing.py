"""The command line's options, named and explained once: the typed values every
subcommand parses (`POSITIVE_INT`, `FOLDS`, `EPSILON`, `output_folder`, …), the
parser that answers a mistake in one line, and the options every experiment shares.

The standard library only: `dprec --help` and a usage error are answered without
loading NumPy, Surprise or Numba (`dprec.experiments._options` adds the data)."""

from __future__ import annotations

import argparse
import math
import os
import re
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

#: the largest count an option takes (k, targets, repetitions, folds, jobs)
MAX_COUNT = 2**31 - 1
#: the largest seed (NumPy's legacy seeds, which Surprise's folds use, are 32-bit)
MAX_SEED = 2**32 - 1
#: marks an option without a `--quick` default
_NO_QUICK = object()


class _NegativeNumber:
    """argparse's test of whether an argument that starts with `-` is a value (a negative
    number) rather than an option: any number `float` reads. argparse's own pattern
    takes `-1` and `-1.5` only, so `--epsilons -1e+16` read `-1e+16` as an option and
    answered "expected one argument" instead of checking the value."""

    @staticmethod
    def match(text: str) -> bool:
        """Whether `text` is `-` followed by a number (`-1e+16`, `-inf`, `-.5`)."""
        try:
            float(text)
        except ValueError:
            return False
        return text.startswith("-")


class OptionParser(argparse.ArgumentParser):
    """An argparse parser whose usage errors are one line, `<prog>: error: <message>`,
    with exit status 2 (argparse prints its usage block first).

    `add_argument(..., quick=value)` gives an option another default under `--quick`;
    a value the user gives wins over both (`left_out` holds, after parsing, the
    options with a `--quick` default that the user did not give), and a default given as
    text is parsed by the option's `type`, as argparse parses its defaults. After parsing,
    `--data-path` with synthetic data (`--quick` or `--dataset synthetic`) is refused:
    the path would not be read. Every negative number is a value, `-1e+16` included.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.quick_defaults: dict[str, tuple[argparse.Action, Any, Any]] = {}
        self.left_out: set[str] = set()
        self._negative_number_matcher = _NegativeNumber()

    def error(self, message: str):
        """Print `<prog>: error: <message>` (one line, no usage block); exit with 2."""
        self.exit(2, f"{self.prog}: error: {' '.join(message.splitlines())}\n")

    def add_argument(self, *args: Any, quick: Any = _NO_QUICK, **kwargs: Any):
        """`argparse.ArgumentParser.add_argument`, with `quick` the option's default under
        `--quick`."""
        action = super().add_argument(*args, **kwargs)
        if quick is not _NO_QUICK:
            self.quick_defaults[action.dest] = (action, action.default, quick)
            action.default = None
        return action

    def parse_known_args(self, args: Sequence[str] | None = None,
                         namespace: argparse.Namespace | None = None):
        """Parse, then set the options the user left out to their default (their
        `--quick` default under `--quick`) and check the options read together."""
        namespace, rest = super().parse_known_args(args, namespace)
        quick = getattr(namespace, "quick", False)
        self.left_out = {dest for dest in self.quick_defaults
                         if getattr(namespace, dest, None) is None}
        for dest in self.left_out:
            action, default, quick_default = self.quick_defaults[dest]
            value = quick_default if quick else default
            if isinstance(value, str) and action.type is not None:
                try:
                    value = action.type(value)
                except argparse.ArgumentTypeError as error:
                    self.error(f"argument {'/'.join(action.option_strings)}: {error}")
            setattr(namespace, dest, value)
        if getattr(namespace, "data_path", None) is not None \
                and getattr(namespace, "dataset", None) == "synthetic":
            self.error("argument --data-path: not read on synthetic data (--quick or "
                       "--dataset synthetic); add --dataset ml-100k to read it, or drop "
                       "--data-path")
        return namespace, rest


def _number(kind: Callable[[str], Any], what: str, low: float, high: float,
            low_inclusive: bool = True, nonzero: bool = False) -> Callable[[str], Any]:
    """An argparse `type` parsing `kind` (`int` or `float`) in `[low, high]` (`(low,
    high]` unless `low_inclusive`); its message says what was `expected`."""
    def parse(text: str):
        try:
            value = kind(text)
        except (ValueError, OverflowError):
            value = math.nan
        if not (value > low or (low_inclusive and value == low)) or (nonzero and value == 0):
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
        if value > high or (kind is float and not math.isfinite(value)):
            limit = f"{high:g}" if kind is float else str(high)
            raise argparse.ArgumentTypeError(f"expected {what}, at most {limit}, got {text!r}")
        return value
    parse.__name__ = what
    parse.__doc__ = f"Parse {what} (an argparse `type`)."
    return parse


POSITIVE_INT = _number(int, "a whole number >= 1", 1, MAX_COUNT)
FOLDS = _number(int, "a number of folds >= 2", 2, MAX_COUNT)
SEED = _number(int, "a seed, a whole number >= 0", 0, MAX_SEED)
N_JOBS = _number(int, "a non-zero whole number (-1: all cores)", -MAX_COUNT, MAX_COUNT,
                 nonzero=True)
EPSILON = _number(float, "a finite number > 0", 0.0, 1e308, low_inclusive=False)
PROBABILITY = _number(float, "a number > 0", 0.0, 1.0, low_inclusive=False)


def existing_path(text: str) -> str:
    """Parse a file or folder that exists (an argparse `type`)."""
    if not os.path.exists(text):
        raise argparse.ArgumentTypeError(f"no such file or folder: {text!r}")
    return text


def output_folder(text: str) -> str:
    """Parse a folder the results can be written to (an argparse `type`): it exists, or
    can be created, and is writable. The path is not created (the run creates it): a
    folder of a unique name is made and removed in the nearest existing folder on it, so
    that parsing never races another process parsing the same default (`results/...`) in
    the same directory."""
    path = Path(text)
    try:
        if "\0" in text:
            raise ValueError("embedded null byte")
        existing = path
        while not existing.exists():        # the run creates the rest of the path
            existing = existing.parent
        if not existing.is_dir():
            raise FileExistsError(17, "a file is in the way")
        os.rmdir(tempfile.mkdtemp(prefix=".dprec-write-check-", dir=existing))
    except (OSError, ValueError) as error:     # ValueError: a null byte
        reason = "a file is in the way" if isinstance(error, FileExistsError) else (
            getattr(error, "strerror", None) or str(error))
        raise argparse.ArgumentTypeError(f"cannot write results to the folder {text!r}: "
                                         f"{reason}") from None
    return text


def plain_text(doc: str) -> str:
    """The first paragraph of the docstring `doc` as plain text, for `--help`: the code
    spans, cross-references and roles of docstrings are printed as their text (a name in
    single or double backticks, a Markdown reference `[name][dprec.name]`, a Sphinx role
    with a `~` path: the name alone)."""
    text = doc.strip().split("\n\n")[0]
    text = re.sub(r"\[`?([^`\]]+)`?\]\[[^\]]*\]", r"\1", text)
    text = re.sub(r":\w+:`(~?)([^`]+)`",
                  lambda m: m[2].rsplit(".", 1)[-1] if m[1] else m[2], text)
    return re.sub(r"``([^`]+)``|`([^`]+)`", lambda m: m[1] or m[2], text)


def quick_folder(out: str) -> str:
    """The default output folder of a `--quick` run whose full run writes to `out`:
    `results/quick/...` for `results/...`, so a quick run never replaces the full results
    the notebooks and the documentation read."""
    return str(Path("results", "quick", *Path(out).parts[1:]))


def run_folder(out: str | os.PathLike | None, default: str, quick: bool) -> Path:
    """The folder a Python `run(out, quick)` writes to: `out` when given, else `default`
    (`quick_folder(default)` for a quick run)."""
    return Path(out or (quick_folder(default) if quick else default))


def experiment_parser(prog: str | None, doc: str, out: str, **options) -> OptionParser:
    """An experiment's command line: described by the first paragraph of its module's
    docstring `doc` (`plain_text`), with the options every experiment shares
    (`add_common_options`: `out` the default folder, `options` its keywords)."""
    parser = OptionParser(prog=prog, description=plain_text(doc))
    add_common_options(parser, out, **options)
    return parser


def add_common_options(parser: OptionParser, out: str, *, folds: int | None = None,
                       quick_folds: int = 2, n_jobs: int | None = None, jobs: str = "jobs",
                       data: bool = False) -> None:
    """Add `--out` (`quick_folder(out)` under `--quick`) and `--seed`; `--folds`
    (`quick_folds` under `--quick`) and `--n-jobs` when given a default (`jobs` says what
    runs in parallel); with `data`, `--dataset` (synthetic under `--quick`) and
    `--data-path` (read by `experiment_data`)."""
    parser.add_argument("--out", type=output_folder, default=out, quick=quick_folder(out),
                        help=f"output folder (default {out}; quick {quick_folder(out)})")
    parser.add_argument("--seed", type=SEED, default=0,
                        help="seed of the data, folds and noise (default 0)")
    if folds is not None:
        parser.add_argument("--folds", type=FOLDS, default=folds, quick=quick_folds,
                            help=f"cross-validation folds (default {folds}; quick "
                                 f"{quick_folds})")
    if n_jobs is not None:
        parser.add_argument("--n-jobs", type=N_JOBS, default=n_jobs,
                            help=f"{jobs} in parallel (default {n_jobs})")
    if data:
        parser.add_argument("--dataset", choices=("auto", "ml-100k", "synthetic"),
                            default="auto", quick="synthetic",
                            help="auto (default): MovieLens 100k when a local copy is found, "
                                 "else synthetic data of its shape, saying so (quick: "
                                 "synthetic)")
        add_data_path(parser)


def add_data_path(parser: argparse.ArgumentParser) -> None:
    """Add `--data-path`: where MovieLens 100k is read from (for experiments whose
    `--dataset` choices are their own)."""
    parser.add_argument("--data-path", type=existing_path, default=None, metavar="PATH",
                        help="MovieLens 100k's u.data or its folder (default: "
                             "SURPRISE_DATA_FOLDER)")
