"""The ``dprec`` command line (``dprec --help``, also ``python -m dprec``).

Ordinary mistakes (a dataset with no local copy, an invalid combination of
options, a missing extra) end in one line naming the fix and exit status 2;
``--debug`` anywhere on the line shows the traceback instead.

Parsing imports the standard library only: ``dprec --help``, ``dprec cv --help`` and
a usage error answer in a few hundredths of a second. ``demo`` and ``cv`` run from
``dprec.experiments.demo_cv``, the experiments from their modules, each imported
when it runs (an experiment's ``--help`` imports its module).
"""

from __future__ import annotations

import argparse
import importlib
import sys

from . import __version__
from .experiments._parsing import (
    EPSILON,
    FOLDS,
    N_JOBS,
    POSITIVE_INT,
    PROBABILITY,
    SEED,
    OptionParser,
    existing_path,
    output_folder,
    plain_text,
    quick_folder,
)

#: ``dprec <command> [options]`` runs ``dprec.experiments.<module>.main(options)``
EXPERIMENTS = {
    "frontier": ("frontier", "accuracy against the β-kNN attack and vulnerable users, the "
                             "whole grid (the main comparison)"),
    "selectors": ("selectors_cv", "neighbour selectors × ε × k × neighbourhood (accuracy, α, β)"),
    "backends": ("backends_cv", "top-k and PPNS on every similarity backend"),
    "sketches": ("jaccard_sketches", "Jaccard sketches: MAE against K, recall@10 on real data"),
    "implicit": ("implicit_feedback", "implicit-feedback kNN on Last.fm: recall@10 and NDCG@10 "
                                      "against ε, private set sketches"),
    "sjlt": ("sjlt_variance", "private SJLT against Gaussian JL: distance variances"),
    "ranking": ("ranking_dp", "ranking DP: Mallows against Laplace, the private ranker"),
    "attack": ("attack_resistance", "the β-kNN attack against every configuration"),
    "endtoend": ("end_to_end", "end-to-end DP models against ε, Surprise's and the published"),
    "scaling": ("users_scaling", "end-to-end DP models against the number of users: where "
                                 "user-level privacy pays"),
    "audit": ("privacy_audit", "neighbouring-dataset audits: which printed ε hold"),
    "membership": ("membership_inference", "membership inference on every model: AUC, TPR "
                                           "at low FPR, the one-run empirical ε against the "
                                           "claim"),
}


#: ``dprec cv --algo``: Surprise's KNNBasic, PrivateKNN's selectors, the Mallows ranker and
#: the end-to-end private models
CV_ALGORITHMS = ("knnbasic", "topk", "probabilistic", "pncf", "pncf_corrected", "ppns",
                 "mallows", "dpbaseline", "dpitemknn", "dpals", "localknn")
#: ``dprec cv --sim``: Surprise's similarities (every kNN algorithm), the centred cosine and
#: dprec's sketches (PrivateKNN); ``dprec.similarity``'s names, tested to agree
CV_SIMILARITIES = ("cosine", "msd", "pearson", "pearson_baseline", "centered_cosine",
                   "minhash", "rr_minhash", "noisy_minhash", "sjlt", "gaussian_jl")
#: ``--dataset``: ``auto`` and ``dprec.datasets.DATASETS`` (tested to agree)
DATASET_CHOICES = ("auto", "ml-100k", "ml-1m", "ml-10m", "ml-20m", "ml-25m", "ml-32m",
                   "ml-latest-small", "jester", "netflix", "lastfm", "synthetic")
#: the errors an ordinary mistake raises: one line and exit status 2 (``--debug``: traceback);
#: and ``dprec.datasets.DatasetUnavailable`` (`is_user_error`)
USER_ERRORS = (ValueError, TypeError, ImportError)
#: the module that runs ``dprec demo`` and ``dprec cv``, imported when one of them runs
RUNS = "dprec.experiments.demo_cv"
#: the names of `RUNS` this module gives (``from dprec.cli import run_cv`` still works)
RUN_NAMES = ("CV_COLUMNS", "DEMO_EPSILON", "USER_SHRINKAGE", "cv_algorithm", "default_epsilon",
             "demo_algorithms", "demo_privacy", "demo_report", "plot_cv", "run_cv", "run_demo")


def __getattr__(name: str):
    """A name of the runs' module (`RUN_NAMES`), imported on first use: parsing the
    options (and ``--help``) needs neither NumPy nor Surprise nor Numba."""
    if name in RUN_NAMES:
        return getattr(importlib.import_module(RUNS), name)
    raise AttributeError(f"module 'dprec.cli' has no attribute {name!r}")


def is_user_error(error: BaseException) -> bool:
    """Whether ``error`` is an ordinary mistake (`USER_ERRORS`, a dataset without a local
    copy): one line and exit status 2."""
    files = sys.modules.get("dprec.datasets.files")     # loaded when data was looked for
    return isinstance(error, USER_ERRORS) or (
        files is not None and isinstance(error, files.DatasetUnavailable))


def algorithm_name(text: str) -> str:
    """Parse ``dprec cv --algo`` (an argparse ``type``): one of `CV_ALGORITHMS`, else a
    one-line error listing them and pointing to the commands that run the others."""
    if text in CV_ALGORITHMS:
        return text
    raise argparse.ArgumentTypeError(
        f"expected one of {', '.join(CV_ALGORITHMS)}, got {text!r}; 'dprec endtoend' "
        "compares every end-to-end model with Surprise's (SVD, BaselineOnly, KNNBaseline, "
        "...), 'dprec implicit' the implicit-feedback models")


def build_parser() -> argparse.ArgumentParser:
    """The ``dprec`` argument parser: ``demo``, ``cv`` and the experiments."""
    parser = OptionParser(
        prog="dprec", description=plain_text(__doc__),
        epilog="Every command writes CSV (and PNG) under --out and takes --seed; "
               "--debug anywhere shows a traceback instead of a one-line error.")
    parser.add_argument("--version", action="version", version=f"dprec {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="command")
    demo = commands.add_parser(
        "demo", help="cross-validate Surprise's KNNBasic next to dprec's algorithms",
        description="5-fold cross-validation of Surprise's KNNBasic next to every dprec "
                    "algorithm on MovieLens 100k (synthetic data when it cannot be loaded).")
    add_data_options(demo)
    demo.add_argument("--k", type=POSITIVE_INT, default=40, quick=10,
                      help="neighbours (default 40; quick 10)")
    demo.add_argument("--out", type=output_folder, default="results",
                      quick=quick_folder("results"),
                      help="folder for demo.csv (default results; quick results/quick)")
    demo.set_defaults(handler="run_demo")

    cv = commands.add_parser(
        "cv", help="cross-validate one algorithm (any dprec model) over several ε",
        description="k-fold cross-validation of one algorithm for each ε, each labelled "
                    "with what its fitted model's privacy report computes for the worst user "
                    "(ε, unit, status); writes OUT/cv.csv (one row per ε and fold) and "
                    "OUT/cv.png when several ε are given. The same seed gives the same "
                    "scores whatever the backend and --n-jobs.")
    add_data_options(cv)
    cv.add_argument("--algo", type=algorithm_name, default="ppns", metavar="ALGO",
                    help="Surprise's KNNBasic (knnbasic), a PrivateKNN selector (topk, "
                         "probabilistic, pncf, pncf_corrected, ppns), the Mallows ranker "
                         "(mallows) or an end-to-end private model (dpbaseline, dpitemknn, "
                         "dpals, localknn); default ppns. 'dprec endtoend' compares them all "
                         "with Surprise's")
    cv.add_argument("--sim", type=str.lower, choices=CV_SIMILARITIES, default="cosine",
                    help="similarity of the kNN algorithms: cosine (default), msd, pearson, "
                         "pearson_baseline, or dprec's centered_cosine or a sketch (not "
                         "with knnbasic)")
    cv.add_argument("--epsilons", type=EPSILON, nargs="+", metavar="E",
                    help="privacy budgets, one run each (the private algorithms: pncf, "
                         "pncf_corrected, ppns, mallows, dpbaseline, dpitemknn, dpals, "
                         "localknn; default: the algorithm's, 1)")
    cv.add_argument("--epsilon", type=EPSILON, nargs="+", dest="epsilons",
                    help=argparse.SUPPRESS)       # its former name, still read
    cv.add_argument("--k", type=POSITIVE_INT, default=40, quick=10,
                    help="neighbours (default 40; quick 10)")
    cv.add_argument("--p", type=PROBABILITY, default=None,
                    help="PPNS's geometric parameter (default: the selector's)")
    cv.add_argument("--neighbourhood", choices=["item", "user"], default="item",
                    help="item: Surprise's semantics (default); user: one neighbour set per "
                         "user, the papers' semantics")
    cv.add_argument("--backend", choices=["loky", "dask"], default="loky",
                    help="loky: folds in local processes (--n-jobs); dask: a kNN model's "
                         "blocks of similarity rows as tasks on a Dask cluster (the other "
                         "algorithms: whole folds)")
    cv.add_argument("--scheduler", default=None, metavar="ADDRESS",
                    help="address of a running Dask scheduler (default: a LocalCluster of "
                         "--n-jobs workers)")
    cv.add_argument("--no-progress", dest="progress", action="store_false",
                    help="no progress bar (default: a tqdm bar over the (ε, fold) jobs)")
    cv.add_argument("--out", type=output_folder, default="results/cv",
                    quick=quick_folder("results/cv"),
                    help="output folder (default results/cv; quick results/quick/cv)")
    cv.set_defaults(handler="run_cv")

    for command, (_, summary) in EXPERIMENTS.items():
        commands.add_parser(command, help=f"{summary} ('dprec {command} --help' for its "
                                          "options)", add_help=False)
    return parser


def add_data_options(parser: OptionParser) -> None:
    """The data and cross-validation options of ``demo`` and ``cv``."""
    parser.add_argument("--dataset", choices=DATASET_CHOICES,
                        default="auto", quick="synthetic",
                        help="auto (default): MovieLens 100k when a local copy is found, else "
                             "synthetic data of its shape, saying so (quick: synthetic); or a "
                             "dataset's name, read from its local copy (ml-1m ... ml-32m, "
                             "ml-latest-small, jester, netflix, lastfm)")
    parser.add_argument("--data-path", type=existing_path, default=None, metavar="PATH",
                        help="where the dataset is: MovieLens's u.data or its folder, "
                             "Last.fm's user_artists.dat, a release's ratings file or folder "
                             "(default: SURPRISE_DATA_FOLDER, DPREC_LASTFM)")
    parser.add_argument("--seed", type=SEED, default=0,
                        help="seed of the folds and of every noise draw (default 0)")
    parser.add_argument("--folds", type=FOLDS, default=5, quick=2,
                        help="cross-validation folds (default 5; quick 2)")
    parser.add_argument("--n-jobs", type=N_JOBS, default=1,
                        help="folds run in parallel (joblib; -1: all cores; default 1)")
    parser.add_argument("--quick", action="store_true",
                        help="a small fast run: synthetic data, 2 folds, k = 10 (the options "
                             "given win)")


def run_experiment(command: str, argv: list[str]) -> int:
    """Hand the remaining arguments to ``dprec.experiments.<module>.main``."""
    module = importlib.import_module(f"dprec.experiments.{EXPERIMENTS[command][0]}")
    result = module.main(argv, prog=f"dprec {command}")
    return result if isinstance(result, int) else 0


def main(argv: list[str] | None = None) -> int:
    """Run ``dprec`` on ``argv`` (default ``sys.argv[1:]``); returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    argv = [arg for arg in argv if arg != "--debug"]
    parser = build_parser()
    args, rest = parser.parse_known_args(argv)
    try:
        if args.command in EXPERIMENTS:
            return run_experiment(args.command, rest)
        if rest:
            OptionParser(prog=f"dprec {args.command}").error(
                f"unrecognized arguments: {' '.join(rest)}")
        return getattr(sys.modules[__name__], args.handler)(args)
    except Exception as error:
        if debug or not is_user_error(error):
            raise
        message = str(error).strip().splitlines()[0] if str(error).strip() else repr(error)
        print(f"dprec {args.command}: error: {message} (--debug for the traceback)",
              file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
