"""The ``dprec`` command line (``dprec --help``, also ``python -m dprec``).

Ordinary mistakes (a dataset with no local copy, an invalid combination of
options, a missing extra) end in one line naming the fix and exit status 2;
``--debug`` anywhere on the line shows the traceback instead.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path

from surprise import KNNBasic

from . import __version__, datasets
from . import _kernels as kernels
from ._plotting import save, subplots
from .dp_baseline import DPBaseline
from .dp_item_knn import DPItemKNN
from .evaluation import cross_validate_table, dask_client, grid_table, parallel_backend, summarise
from .experiments._options import (
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
from .experiments.privacy_labels import first_fold, fresh_labels
from .knn import PrivateKNN
from .ranking import MallowsRanker
from .selectors import SELECTORS
from .similarity import EXACT_SIMILARITIES, SKETCH_BACKENDS, SURPRISE_SIMILARITIES

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
}


CV_ALGORITHMS = ("knnbasic", "topk", "probabilistic", "pncf", "pncf_corrected", "ppns",
                 "mallows")
#: ``dprec cv --sim``: Surprise's similarities (every algorithm), the centred cosine and dprec's
#: sketches (PrivateKNN)
CV_SIMILARITIES = (*EXACT_SIMILARITIES, *SKETCH_BACKENDS)
#: the errors an ordinary mistake raises: one line and exit status 2 (``--debug``: traceback)
USER_ERRORS = (datasets.DatasetUnavailable, ValueError, TypeError, ImportError)
CV_COLUMNS = ["algo", "epsilon", "fold", "rmse", "mae", "fit_time", "test_time"]


#: the user neighbourhood's shrinkage λ in the demo: the one the frontier's inner
#: cross-validation chose for every basic-rule user-neighbourhood configuration of MovieLens
#: 100k (`docs/frontier.md`)
USER_SHRINKAGE = 4.0
#: the ε of the demo's private rows
DEMO_EPSILON = 1.0


def demo_algorithms(k: int, seed: int) -> dict:
    """Surprise's KNNBasic next to every dprec algorithm, one configuration each, and the
    end-to-end private models given ``epsilon=1`` (their names say the parameters given;
    what their reports guarantee is the demo's column ``private``, `demo_privacy`)."""
    cosine = {"name": "cosine"}
    epsilon = DEMO_EPSILON

    def private(**options) -> PrivateKNN:
        return PrivateKNN(k=k, sim_options=cosine, random_state=seed, verbose=False, **options)

    return {
        "KNNBasic (Surprise, cosine)": KNNBasic(k=k, sim_options=dict(cosine), verbose=False),
        "PrivateKNN top-k, item nbhd": private(),
        f"PrivateKNN top-k, user nbhd λ={USER_SHRINKAGE:g}": private(
            neighbourhood="user", fallback="user_mean", neighbour_shrinkage=USER_SHRINKAGE),
        "PrivateKNN probabilistic": private(selector="probabilistic"),
        f"PrivateKNN PNCF epsilon={epsilon:g}": private(selector="pncf", epsilon=epsilon),
        f"PrivateKNN PPNS epsilon={epsilon:g} p=0.5": private(selector="ppns", epsilon=epsilon,
                                                              p=0.5),
        f"DPItemKNN epsilon={epsilon:g}": DPItemKNN(epsilon=epsilon, k=k, random_state=seed),
        f"DPBaseline epsilon={epsilon:g}": DPBaseline(epsilon=epsilon, unit="user",
                                                      random_state=seed),
    }


def run_demo(args: argparse.Namespace) -> int:
    """``dprec demo``: cross-validate KNNBasic and dprec's algorithms; prints the
    report and writes ``demo.csv``."""
    data, label = datasets.load_or_synthetic(args.dataset, args.seed, quick=args.quick,
                                             path=args.data_path)
    print(f"dprec demo: {args.folds}-fold cross-validation on {label}, k={args.k}", flush=True)
    algorithms = demo_algorithms(args.k, args.seed)
    compiled = []

    def compiling() -> None:          # the warm-up has to compile: no disk cache yet
        compiled.append(True)
        print("compiling dprec's kernels with Numba: once, on the first run after installing "
              "(20 to 40 s on 2 cores); cached on disk for the next runs, and not in the "
              "timings below", flush=True)

    seconds = kernels.warm_up(compiling)
    if compiled:
        print(f"compiled kernels ready in {seconds:.1f} s (compiled once: the next runs load "
              "them in about a second; not in the timings below)", flush=True)
    elif seconds:
        print(f"compiled kernels loaded in {seconds:.1f} s (once per process; not in the "
              "timings below)", flush=True)
    table = cross_validate_table(algorithms, data, n_folds=args.folds,
                                 random_state=args.seed, n_jobs=args.n_jobs, progress=True)
    table.insert(0, "dataset", label)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / "demo.csv", index=False)
    privacy = demo_privacy(algorithms, data, args.folds, args.seed)
    print()
    print(demo_report(table, privacy, args.folds))
    print(f"\nper-fold results written to {out / 'demo.csv'}")
    return 0


def demo_report(table, privacy: dict, n_folds: int) -> str:
    """The demo's report: one table of per-fold means, what is private at which ε
    (``privacy``: a label per algorithm), what the rows are, and the parity and speed of
    dprec's top-k against Surprise's ``KNNBasic``."""
    summary = summarise(table)
    summary["fit_time"] /= n_folds
    summary["test_time"] /= n_folds
    summary["private"] = [privacy[name] for name in summary["algo"]]
    summary.columns = ["algorithm", "RMSE", "MAE", "fit s/fold", "test s/fold", "private"]
    notes = [
        "RMSE and MAE: lower is better (means over the folds).",
        "private: what the privacy report computes for the worst user of the model fitted "
        "with fresh noise on the first training fold, after answering its test fold: ε (and "
        "δ), whom it protects (one rating; one user: all of their ratings) and its status: "
        "holds (end to end, for everything the model releases), in part (some outputs or "
        "users only), as published (a paper's claim, which dprec's audits refute) or void; "
        "ε = ∞, and how many users, when some are outside the guarantee. Never the epsilon "
        "given, which says neither how often it is spent nor whether it holds. The runs "
        "above are seeded, hence reproducible, and guarantee nothing themselves (void).",
        "user nbhd: the papers' semantics. Each user's k neighbours are chosen once among "
        "all users, and few of them rated a given item: their term is shrunk towards the "
        f"user's own mean by n/(n + λ), n the neighbours who rated it, λ = {USER_SHRINKAGE:g} "
        "(the frontier's choice). Without it (λ = 0) one or two neighbours' ratings make "
        "the prediction: on MovieLens 100k, worse than the global mean.",
        "DPItemKNN, DPBaseline: end-to-end private models. With few users (MovieLens 100k "
        "has 943) DPItemKNN's noisy item similarities are dropped and it answers with its "
        "private baseline, as DPBaseline does; where neighbours start to pay: "
        "docs/end_to_end.md."]
    lines = [summary.to_string(index=False, float_format=lambda x: f"{x:.4f}"),
             *(textwrap.fill(note, 88) for note in notes)]
    reference, ours = "KNNBasic (Surprise, cosine)", "PrivateKNN top-k, item nbhd"
    by = table.set_index(["algo", "fold"])
    gap = float((by.loc[reference, "rmse"] - by.loc[ours, "rmse"]).abs().max())
    seconds = table.groupby("algo")[["fit_time", "test_time"]].sum().sum(axis=1)
    lines.append(f"{ours} is KNNBasic's algorithm: RMSE equal on every fold (largest "
                 f"difference {gap:.1e}), {seconds[reference] / seconds[ours]:.1f}x faster.")
    return "\n".join(lines)


def demo_privacy(algorithms: dict, data, n_folds: int, seed: int) -> dict:
    """Per algorithm, its ``private`` label: what the privacy report of a copy fitted with
    fresh noise on the first training fold, having answered that fold's test set, computes
    for its worst user ([`fresh_labels`][dprec.experiments.privacy_labels.fresh_labels]);
    ``"not private"`` for a model without a private mechanism.  A seeded fit, reproducible,
    guarantees nothing (its entries are void): the label is that of fresh noise."""
    trainset, testset = first_fold(data, n_folds, seed)
    return {name: fresh_labels(algo, trainset, testset)[0] for name, algo in algorithms.items()}


def default_epsilon(algo: str) -> float | None:
    """The ε `dprec cv --algo algo` runs at without `--epsilons`: the algorithm's own
    default (PNCF, PPNS, the corrected PNCF, Mallows), or `None` for an algorithm that
    takes no ε (it is not private)."""
    if algo == "mallows":
        return MallowsRanker().epsilon
    return getattr(SELECTORS[algo](), "epsilon", None) if algo in SELECTORS else None


def cv_algorithm(algo: str, epsilon: float | None, k: int = 40, sim: str = "cosine",
                 p: float | None = None, neighbourhood: str = "item", seed: int = 0,
                 backend: str = "threads"):
    """The Surprise algorithm ``dprec cv --algo`` names, configured (``backend`` is
    [`PrivateKNN`][]'s: ``"dask"`` sends its blocked similarities to the cluster)."""
    if algo == "knnbasic":
        return KNNBasic(k=k, sim_options={"name": sim}, verbose=False)
    if algo == "mallows":
        return MallowsRanker(epsilon=epsilon, random_state=seed)
    return PrivateKNN(k=k, sim_options={"name": sim}, selector=algo, epsilon=epsilon, p=p,
                      neighbourhood=neighbourhood, random_state=seed, verbose=False,
                      backend=backend)


def run_cv(args: argparse.Namespace) -> int:
    """``dprec cv``: cross-validate one algorithm for each ε; writes ``cv.csv``."""
    if args.algo == "knnbasic" and args.sim not in SURPRISE_SIMILARITIES:
        kind = "dprec's centred cosine" if args.sim in EXACT_SIMILARITIES else (
            "one of dprec's sketches")
        raise ValueError(f"--sim {args.sim} is {kind}: Surprise's KNNBasic "
                         f"(--algo knnbasic) takes {', '.join(SURPRISE_SIMILARITIES)}; use "
                         "--algo topk for the same kNN with it")
    default = default_epsilon(args.algo)
    if args.epsilons and default is None:
        raise ValueError(f"--epsilons is not read by --algo {args.algo}, which is not private "
                         "(it takes no ε); drop --epsilons, or choose a private algorithm: "
                         "pncf, pncf_corrected, ppns or mallows")
    data, label = datasets.load_or_synthetic(args.dataset, args.seed, quick=args.quick,
                                             path=args.data_path)
    epsilons = args.epsilons or [default]
    private = default is not None
    budget = (f"epsilon = {', '.join(f'{e:g}' for e in epsilons)} given" if args.epsilons
              else f"epsilon = {default:g} given ({args.algo}'s default; --epsilons for others)"
              if private else "not private (no ε)")
    print(f"dprec cv: {args.algo} on {label}, {args.folds} folds, {budget}, backend "
          f"{args.backend}", flush=True)
    configurations = [{"algo": args.algo, "epsilon": epsilon} for epsilon in epsilons]
    # on Dask, a kNN model's blocks of similarity rows are the tasks (the folds run here);
    # the other algorithms send whole folds
    blocks = args.backend == "dask" and args.algo not in ("knnbasic", "mallows")

    def make(algo, epsilon, backend="dask" if blocks else "threads"):
        return cv_algorithm(algo, epsilon, k=args.k, sim=args.sim, p=args.p,
                            neighbourhood=args.neighbourhood, seed=args.seed, backend=backend)

    for configuration in configurations:    # a bad combination of options fails here, at once
        algo = make(**configuration)
        if hasattr(algo, "check_params"):
            algo.check_params()
    workers = max(args.n_jobs, 1)
    if blocks:
        print("Dask: each fold's similarity rows are computed and reduced on the workers, "
              "a block of users per task", flush=True)
    with (dask_client(args.scheduler, workers) if blocks
          else parallel_backend(args.backend, args.scheduler, workers)):
        table = grid_table(configurations, make, data, n_folds=args.folds,
                           random_state=args.seed, n_jobs=1 if blocks else args.n_jobs,
                           progress=args.progress)
    extra = [c for c in table.columns if c not in CV_COLUMNS]
    table = table[CV_COLUMNS + extra]
    # what the report of each configuration says, fitted with fresh noise on the first fold
    trainset, testset = first_fold(data, args.folds, args.seed)
    label_of = {c["epsilon"]: fresh_labels(make(**c, backend="threads"), trainset, testset)[0]
                for c in configurations}
    table["privacy"] = table["epsilon"].map(label_of) if private else label_of[None]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / "cv.csv", index=False)
    means = table.groupby("epsilon" if private else "algo", sort=False)[["rmse", "mae"]].mean()
    means["private"] = [label_of[e] for e in means.index] if private else label_of[None]
    print(means.to_string(float_format=lambda x: f"{x:.4f}", max_colwidth=200))
    print("RMSE and MAE: lower is better (means over the folds). private: what the privacy "
          "report of the model fitted with fresh noise on the first training fold, having "
          "answered its test fold, computes for its worst user (ε, δ, unit, status); the "
          "seeded runs above guarantee nothing themselves.")
    if len(epsilons) > 1 and means["rmse"].nunique() == 1:
        print(f"The RMSE is the same at every ε: with {args.algo}, ε changes which neighbours "
              "may be drawn, not the predictions here (docs/selectors.md says why "
              "PPNS's accuracy is set by p, not ε).")
    if len(epsilons) > 1:
        plot_cv(table, out / "cv.png")
    print(f"written: {out / 'cv.csv'}")
    return 0


def plot_cv(table, path: Path) -> None:
    """RMSE and MAE (fold means) against ε."""

    means = table.dropna(subset=["epsilon"]).groupby("epsilon")[["rmse", "mae"]].mean()
    fig, ax = subplots(figsize=(5, 3.5))
    for column in ["rmse", "mae"]:
        ax.plot(means.index, means[column], marker="o", label=column.upper())
    ax.set(xscale="log", xlabel="ε", title=f"{table['algo'].iloc[0]}: error against ε")
    ax.legend()
    save(fig, path)


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
    demo.set_defaults(handler=run_demo)

    cv = commands.add_parser(
        "cv", help="cross-validate one algorithm over several ε",
        description="k-fold cross-validation of one algorithm for each ε; writes OUT/cv.csv "
                    "(one row per ε and fold) and OUT/cv.png when several ε are given. The "
                    "same seed gives the same scores whatever the backend and --n-jobs.")
    add_data_options(cv)
    cv.add_argument("--algo", choices=CV_ALGORITHMS, default="ppns",
                    help="Surprise's KNNBasic, a PrivateKNN selector, or the Mallows ranker "
                         "(default ppns)")
    cv.add_argument("--sim", type=str.lower, choices=CV_SIMILARITIES, default="cosine",
                    help="similarity of the kNN algorithms: cosine (default), msd, pearson, "
                         "pearson_baseline, or dprec's centered_cosine or a sketch (not "
                         "with knnbasic)")
    cv.add_argument("--epsilons", type=EPSILON, nargs="+", metavar="E",
                    help="privacy budgets, one run each (pncf, pncf_corrected, ppns, "
                         "mallows; default: the algorithm's, 1)")
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
    cv.set_defaults(handler=run_cv)

    for command, (_, summary) in EXPERIMENTS.items():
        commands.add_parser(command, help=f"{summary} ('dprec {command} --help' for its "
                                          "options)", add_help=False)
    return parser


def add_data_options(parser: OptionParser) -> None:
    """The data and cross-validation options of ``demo`` and ``cv``."""
    parser.add_argument("--dataset", choices=["auto", *datasets.DATASETS],
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
    import importlib

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
        return args.handler(args)
    except USER_ERRORS as error:
        if debug:
            raise
        message = str(error).strip().splitlines()[0] if str(error).strip() else repr(error)
        print(f"dprec {args.command}: error: {message} (--debug for the traceback)",
              file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
