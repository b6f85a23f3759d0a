"""``dprec demo`` and ``dprec cv``: their runs, reports and plots.

[`dprec.cli`][] parses the options without importing this module (nor NumPy, Surprise
or Numba): it is imported when one of the two commands runs.  ``dprec cv``
cross-validates any of `dprec.cli.CV_ALGORITHMS` -- Surprise's ``KNNBasic``, every
[`PrivateKNN`][] selector, the Mallows ranker and the end-to-end private models
(``DPBaseline``, ``DPItemKNN``, ``DPALS``, ``LocalKNN``) -- at each ε given, and labels
every ε with what the privacy report of the fitted model computes for its worst user
([`dprec.experiments.privacy_labels`][]), never with the ε given.
"""

from __future__ import annotations

import argparse
import importlib
import math
import textwrap
from pathlib import Path

import pandas as pd
from surprise import KNNBasic

from .. import datasets
from ..endtoend.dp_als import DPALS
from ..endtoend.dp_baseline import DPBaseline
from ..endtoend.dp_item_knn import DPItemKNN
from ..endtoend.local_knn import LocalKNN
from ..evaluation import cross_validate_table, dask_client, grid_table, parallel_backend, summarise
from ..knn import PrivateKNN
from ..ranking import MallowsRanker
from ..selectors import SELECTORS
from ..similarity import EXACT_SIMILARITIES, SURPRISE_SIMILARITIES
from ..utils import _kernels as kernels
from ..utils._plotting import legend_outside, line_styles, plain_epsilon_ticks, save, subplots
from ._options import check_folds
from .privacy_labels import first_fold, fresh_labels

#: the columns of ``cv.csv`` first, in this order (then the scores' other columns)
CV_COLUMNS = ["algo", "epsilon", "fold", "rmse", "mae", "fit_time", "test_time"]
#: ``dprec cv --algo``'s end-to-end private models: name -> factory(ε, k, seed)
END_TO_END = {
    "dpbaseline": lambda epsilon, k, seed: DPBaseline(epsilon=epsilon, unit="user",
                                                      random_state=seed),
    "dpitemknn": lambda epsilon, k, seed: DPItemKNN(epsilon=epsilon, k=k, random_state=seed),
    "dpals": lambda epsilon, k, seed: DPALS(epsilon=epsilon, random_state=seed),
    "localknn": lambda epsilon, k, seed: LocalKNN(epsilon=epsilon, k=k, random_state=seed),
}
#: why a model's accuracy may not move with ε (the note under ``dprec cv``; others: the noise
#: costs less than the folds vary)
FLAT_REASONS = {
    "ppns": "PPNS's accuracy is set by p, not ε: ε changes which neighbours may be drawn "
            "(docs/selectors.md)",
    "pncf": "PNCF's ε perturbs the neighbour selection only, the predictions use the raw "
            "ratings (docs/selectors.md)",
    "dpitemknn": "with few users DPItemKNN drops its noisy similarities and answers with "
                 "its private baseline (docs/end_to_end.md)",
    "dpals": "with few users DPALS drops its noisy factors and answers with its private "
             "baseline (docs/end_to_end.md)",
}

#: what the private models' first fit imports (the accountant's library): loaded before
#: the timings, as the kernels are
ACCOUNTING_MODULES = ("dp_accounting", "dp_accounting.rdp", "dp_accounting.pld")


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
    check_folds(args.folds, data, label)
    print(f"dprec demo: {args.folds}-fold cross-validation on {label}, k={args.k}", flush=True)
    algorithms = demo_algorithms(args.k, args.seed)
    compiled = []

    def compiling() -> None:          # the warm-up has to compile: no disk cache yet
        compiled.append(True)
        print("compiling dprec's kernels with Numba: once, on the first run after installing "
              "(10 to 40 s on 2 cores); cached on disk for the next runs, and not in the "
              "timings below", flush=True)

    seconds = kernels.warm_up(compiling)
    if compiled:
        print(f"compiled kernels ready in {seconds:.1f} s (compiled once: the next runs load "
              "them in about a second; not in the timings below)", flush=True)
    elif seconds:
        print(f"compiled kernels loaded in {seconds:.1f} s (once per process; not in the "
              "timings below)", flush=True)
    for module in ACCOUNTING_MODULES:   # imported by the first private fit: 0.7 s, once
        importlib.import_module(module)
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
    default (PNCF, PPNS, the corrected PNCF, Mallows, the end-to-end models), or `None`
    for an algorithm that takes no ε (it is not private)."""
    defaults = {"mallows": MallowsRanker, "dpbaseline": DPBaseline, "dpitemknn": DPItemKNN,
                "dpals": DPALS, "localknn": LocalKNN, **SELECTORS}
    return getattr(defaults[algo](), "epsilon", None) if algo in defaults else None


def cv_algorithm(algo: str, epsilon: float | None, k: int = 40, sim: str = "cosine",
                 p: float | None = None, neighbourhood: str = "item", seed: int = 0,
                 backend: str = "threads"):
    """The Surprise algorithm ``dprec cv --algo`` names, configured (``backend`` is
    [`PrivateKNN`][]'s: ``"dask"`` sends its blocked similarities to the cluster; ``sim``,
    ``p``, ``neighbourhood`` are read by the kNN algorithms, ``k`` by the kNN algorithms,
    ``DPItemKNN`` and ``LocalKNN``)."""
    if algo == "knnbasic":
        return KNNBasic(k=k, sim_options={"name": sim}, verbose=False)
    if algo == "mallows":
        return MallowsRanker(epsilon=epsilon, random_state=seed)
    if algo in END_TO_END:
        return END_TO_END[algo](epsilon, k, seed)
    return PrivateKNN(k=k, sim_options={"name": sim}, selector=algo, epsilon=epsilon, p=p,
                      neighbourhood=neighbourhood, random_state=seed, verbose=False,
                      backend=backend)


def check_cv_options(args: argparse.Namespace) -> None:
    """Refuse, in one line, the options ``dprec cv --algo`` would not read."""
    if args.algo == "knnbasic" and args.sim not in SURPRISE_SIMILARITIES:
        kind = "dprec's centred cosine" if args.sim in EXACT_SIMILARITIES else (
            "one of dprec's sketches")
        raise ValueError(f"--sim {args.sim} is {kind}: Surprise's KNNBasic "
                         f"(--algo knnbasic) takes {', '.join(SURPRISE_SIMILARITIES)}; use "
                         "--algo topk for the same kNN with it")
    if args.epsilons and default_epsilon(args.algo) is None:
        raise ValueError(f"--epsilons is not read by --algo {args.algo}, which is not private "
                         "(it takes no ε); drop --epsilons, or choose a private algorithm: "
                         "pncf, pncf_corrected, ppns, mallows, dpbaseline, dpitemknn, dpals "
                         "or localknn")
    if args.algo in END_TO_END or args.algo == "mallows":
        unread = [option for option, given in (("--sim", args.sim != "cosine"),
                                               ("--p", args.p is not None),
                                               ("--neighbourhood",
                                                args.neighbourhood != "item"))
                  if given]
        if unread:
            raise ValueError(f"{', '.join(unread)} not read by --algo {args.algo} (the kNN "
                             "selectors' options); drop them")


def run_cv(args: argparse.Namespace) -> int:
    """``dprec cv``: cross-validate one algorithm for each ε; writes ``cv.csv``."""
    check_cv_options(args)
    default = default_epsilon(args.algo)
    data, label = datasets.load_or_synthetic(args.dataset, args.seed, quick=args.quick,
                                             path=args.data_path)
    check_folds(args.folds, data, label)
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
    blocks = args.backend == "dask" and args.algo in SELECTORS

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
    means = cv_summary(table)
    print(means.to_string(index=False, max_colwidth=200, formatters={
        "epsilon": epsilon_text, **{c: "{:.4f}".format for c in ("rmse", "rmse_se", "mae")}}))
    print(textwrap.fill(
        "RMSE and MAE: lower is better (means over the folds; rmse_se: the folds' standard "
        "error). privacy: what the privacy report of the model fitted with fresh noise on "
        "the first training fold, having answered its test fold, computes for its worst "
        "user (ε, δ, unit, status); never the epsilon given. The seeded runs above "
        "guarantee nothing themselves.", 88))
    note = flat_note(means, args.algo)
    if note:
        print(textwrap.fill(note, 88))
    if len(epsilons) > 1:
        plot_cv(table, out / "cv.png")
    print(f"written: {out / 'cv.csv'}")
    return 0


def epsilon_text(epsilon) -> str:
    """An ε as the tables print it: compactly (``1``, ``0.5``, ``1e+300``), ``-`` for
    none."""
    return "-" if epsilon is None or (isinstance(epsilon, float) and math.isnan(epsilon)) \
        else f"{epsilon:g}"


def cv_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per ε (in the order run): the folds' mean RMSE, its standard error, the mean MAE,
    and the ``privacy`` label of the configuration."""
    keys = ["algo", "epsilon"]
    grouped = table.assign(epsilon=table["epsilon"].astype(object)).groupby(
        keys, sort=False, dropna=False)
    means = grouped[["rmse", "mae"]].mean()
    means.insert(1, "rmse_se", grouped["rmse"].sem())
    means["privacy"] = grouped["privacy"].first()
    return means.reset_index()


def flat_note(means: pd.DataFrame, algo: str) -> str | None:
    """The note ``dprec cv`` prints when ε does not change the RMSE: every ε's mean within
    the folds' standard error of the others (the spread of the means at most the largest
    standard error), or ``None`` (one ε, or an RMSE that moves with ε)."""
    if len(means) < 2:
        return None
    spread = float(means["rmse"].max() - means["rmse"].min())
    error = float(means["rmse_se"].max())
    if not spread <= error:
        return None
    reason = FLAT_REASONS.get(algo, "at these ε its noise costs less than the folds vary")
    values = ", ".join(epsilon_text(e) for e in means["epsilon"])
    shown = f"{spread:.4f}" if spread >= 1e-4 else f"{spread:.1e}"
    return (f"Note: {algo}'s RMSE does not measurably change with ε here: at ε = {values} "
            f"the fold means differ by at most {shown}, within the folds' standard "
            f"error ({error:.4f}). {reason[0].upper()}{reason[1:]}.")


def plot_cv(table, path: Path):
    """RMSE and MAE (fold means, with the folds' standard error) against ε; returns the
    figure (saved to ``path``)."""
    scored = table.dropna(subset=["epsilon"])
    grouped = scored.groupby("epsilon")
    fig, ax = subplots(figsize=(5.6, 3.6))
    for column, style in zip(["rmse", "mae"], line_styles(2)):
        means = grouped[column].mean()
        ax.errorbar(means.index, means, yerr=grouped[column].sem().fillna(0.0), fmt="none",
                    ecolor=style["color"], capsize=3)
        ax.plot(means.index, means, label=column.upper(), **style)
    ax.set(xscale="log", xlabel="ε given", ylabel="error (fold mean ± standard error)",
           title=f"{table['algo'].iloc[0]}: error against ε")
    plain_epsilon_ticks(ax, scored["epsilon"].unique())
    legend_outside(ax)
    save(fig, path)
    return fig
