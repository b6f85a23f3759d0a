"""Ranking differential privacy experiment (Xu, Sun & Cheng 2023).

(a) The paper's Figure 2 setting: expected concordant pairs kept by the
    Mallows and Laplace privatizers at the same ε-ranking DP, against the
    number of items m and ε -- simulation next to the closed forms (Lemma 4 and
    the pairwise Laplace formula), for both Mallows calibrations.
(b) MovieLens 100k (synthetic data of the same shape when no local copy
    exists -- the output says so), k-fold: pooled pairwise accuracy, per-user
    pairwise accuracy, Kendall τ, NDCG@10 and RMSE of ``MallowsRanker`` for
    ε ∈ {0.5, 1, 2, 5, 10, ∞} and both mechanisms, a heterogeneous-ε run
    (three user groups), and Surprise's SVD and KNNBasic on the same folds.

Writes ``concordance.csv``, ``accuracy.csv`` and ``ranking_dp.png`` under
``--out`` (default ``results/ranking``):

    python experiments/ranking_dp.py --quick
    python experiments/ranking_dp.py --folds 5
    dprec ranking --quick
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from surprise import SVD, KNNBasic
from surprise.model_selection import KFold
from tqdm import tqdm

from dprec import datasets
from dprec.evaluation.metrics import kendall_tau, ndcg_at_k, pairwise_accuracy
from dprec.experiments._options import (
    FOLDS,
    add_data_path,
    check_folds,
    experiment_parser,
    run_folder,
)
from dprec.ranking import (
    concordant_pairs,
    laplace_expected_concordant,
    laplace_privatize,
    mallows_expected_concordant,
    mallows_privatize,
    mallows_theta,
)
from dprec.ranking.learner import MallowsRanker
from dprec.utils._plotting import save, subplots

EPSILONS: tuple[float, ...] = (0.5, 1.0, 2.0, 5.0, 10.0, math.inf)
FIG2_M: tuple[int, ...] = (5, 10, 20, 50, 100, 200)
FIG2_EPSILONS: tuple[float, ...] = (1.0, 2.0, 5.0, 10.0)
#: (share of users, ε) of the heterogeneous run
HETERO_GROUPS: tuple[float, ...] = (0.5, 2.0, 10.0)


# ------------------------------------------------------------------ (a)
def _mechanisms(inputs: np.ndarray, eps: float, rng: np.random.Generator):
    """(name, privatised draws, closed-form E[T]) of each privatizer at ε."""
    m = inputs.shape[1]
    for name, calibration in (("mallows (tight θ)", "tight"),
                              ("mallows (θ = ε/2m)", "conservative")):
        theta = float(mallows_theta(eps, m, calibration))
        yield (name, mallows_privatize(inputs, eps, rng, calibration=calibration),
               mallows_expected_concordant(m, theta)[0])
    yield "laplace", laplace_privatize(inputs, eps, rng), laplace_expected_concordant(m, eps)


def concordance_table(ms: Sequence[int] = FIG2_M, epsilons: Sequence[float] = FIG2_EPSILONS,
                      n_rep: int = 2000, seed: int = 0) -> pd.DataFrame:
    """Simulated and closed-form expected concordant pairs, per (m, ε, mechanism)."""
    rows = []
    rng = np.random.default_rng(seed)
    for m in ms:
        reference = np.arange(m)
        pairs = m * (m - 1) / 2
        for eps in epsilons:
            for name, draws, closed in _mechanisms(np.tile(reference, (n_rep, 1)), eps, rng):
                t = concordant_pairs(reference, draws)
                rows.append({"m": m, "epsilon": eps, "mechanism": name,
                             "simulated": t.mean(),
                             "simulated_se": t.std(ddof=1) / math.sqrt(n_rep),
                             "closed_form": closed, "pairs": pairs,
                             "closed_form_fraction": closed / pairs, "n_rep": n_rep})
    return pd.DataFrame(rows)


# ------------------------------------------------------------------ (b)
def _user_groups(raw_uids: Sequence, seed: int) -> dict:
    """Raw uid -> ε of its group: users split in three equal groups at random."""
    uids = sorted(set(raw_uids), key=str)
    perm = np.random.default_rng(seed).permutation(len(uids))
    return {uids[k]: HETERO_GROUPS[int(3 * r // len(uids))] for r, k in enumerate(perm)}


def _scores(predictions) -> dict:
    est = np.array([p.est for p in predictions])
    true = np.array([p.r_ui for p in predictions])
    return {"pairwise_accuracy": pairwise_accuracy(predictions),
            "pairwise_accuracy_user": pairwise_accuracy(predictions, average="user"),
            "kendall_tau": kendall_tau(predictions),
            "ndcg_at_10": ndcg_at_k(predictions, k=10),
            "rmse": float(np.sqrt(np.mean((est - true) ** 2)))}


def accuracy_table(data, label: str, epsilons: Sequence[float] = EPSILONS,
                   mechanisms: Sequence[str] = ("mallows", "laplace"), folds: int = 5,
                   seed: int = 0, ranker_params: dict | None = None,
                   verbose: bool = True) -> pd.DataFrame:
    """Ranking metrics per fold for every configuration and the two baselines."""
    ranker_params = dict(ranker_params or {})
    groups = _user_groups([r[0] for r in data.raw_ratings], seed)
    rows = []
    splits = KFold(folds, random_state=seed, shuffle=True).split(data)
    for fold, (trainset, testset) in enumerate(tqdm(splits, total=folds, desc="folds",
                                                    disable=not verbose)):
        configs = [(f"MallowsRanker/{mech}", mech, eps) for mech in mechanisms
                   for eps in epsilons]
        configs.append(("MallowsRanker/mallows", "mallows", "hetero"))
        for name, mech, eps in configs:
            spec = groups.__getitem__ if eps == "hetero" else eps
            algo = MallowsRanker(epsilon=spec, mechanism=mech, random_state=seed + fold,
                                 **ranker_params)
            rows += _evaluate(algo, name, eps, mech, trainset, testset, fold, label,
                              groups if eps == "hetero" else None, verbose)
        for name, algo in (("SVD", SVD(random_state=seed + fold)),
                           ("KNNBasic", KNNBasic(verbose=False))):
            rows += _evaluate(algo, name, "-", "-", trainset, testset, fold, label, None,
                              verbose)
    return pd.DataFrame(rows)


def _evaluate(algo, name, eps, mech, trainset, testset, fold, label, groups, verbose):
    start = time.perf_counter()
    algo.fit(trainset)
    fit_time = time.perf_counter() - start
    predictions = algo.test(testset)
    base = {"dataset": label, "fold": fold, "algorithm": name, "mechanism": mech,
            "epsilon": eps if eps == "-" else str(eps), "users": "all", "fit_seconds": fit_time}
    rows = [{**base, **_scores(predictions)}]
    if groups is not None:  # heterogeneous run: also each group's own users
        for value in HETERO_GROUPS:
            subset = [p for p in predictions if groups.get(p.uid) == value]
            rows.append({**base, "users": f"group ε={value:g}", **_scores(subset)})
    if verbose:
        tqdm.write(f"fold {fold} {name:<24} ε={base['epsilon']:<7} "
                   f"acc={rows[0]['pairwise_accuracy']:.4f} ndcg={rows[0]['ndcg_at_10']:.4f} "
                   f"({fit_time:.1f}s)")
    return rows


def summarise(accuracy: pd.DataFrame) -> pd.DataFrame:
    """Mean and standard deviation over folds."""
    keys = ["dataset", "algorithm", "mechanism", "epsilon", "users"]
    metrics = ["pairwise_accuracy", "pairwise_accuracy_user", "kendall_tau", "ndcg_at_10",
               "rmse", "fit_seconds"]
    return accuracy.groupby(keys, sort=False)[metrics].agg(["mean", "std"]).reset_index()


# ------------------------------------------------------------------ plots
def _epsilon_axis(values: pd.Series) -> np.ndarray:
    """ε as numbers for plotting; ∞ drawn at 40."""
    return np.array([40.0 if v == "inf" else float(v) for v in values])


def plot(concordance: pd.DataFrame, accuracy: pd.DataFrame, path: Path) -> None:
    """Concordance fraction vs m (one panel per ε) and accuracy/NDCG vs ε."""

    eps_values = sorted(concordance["epsilon"].unique())
    fig, axes = subplots(2, max(len(eps_values), 2), figsize=(4 * max(len(eps_values), 2),
                                                                  7.5), squeeze=False)
    for ax, eps in zip(axes[0], eps_values, strict=False):
        part = concordance[concordance["epsilon"] == eps]
        for mech, sub in part.groupby("mechanism", sort=False):
            line = ax.plot(sub["m"], sub["closed_form_fraction"], label=f"{mech} (closed form)")
            ax.errorbar(sub["m"], sub["simulated"] / sub["pairs"],
                        yerr=2 * sub["simulated_se"] / sub["pairs"], fmt="o",
                        color=line[0].get_color(), ms=3)
        ax.set_xscale("log")
        ax.set_xticks(sorted(part["m"].unique()), [str(m) for m in sorted(part["m"].unique())])
        ax.minorticks_off()
        ax.set_title(f"ε = {eps:g}")
        ax.set_xlabel("m (items)")
        ax.set_ylabel("E[concordant] / C(m,2)")
    overall = accuracy[accuracy["users"] == "all"]
    for ax, metric in zip(axes[1][:2], ["pairwise_accuracy", "ndcg_at_10"], strict=True):
        for (algo, mech), sub in overall.groupby(["algorithm", "mechanism"], sort=False):
            if algo.startswith("MallowsRanker"):
                sub = sub[sub["epsilon"] != "hetero"]
                mean = sub.groupby("epsilon", sort=False)[metric].mean()
                x = _epsilon_axis(mean.index.to_series())
                ax.plot(x[np.argsort(x)], mean.to_numpy()[np.argsort(x)], "o-", label=mech)
            else:
                ax.axhline(sub[metric].mean(), ls="--", color="grey" if algo == "SVD" else "k",
                           label=algo)
        hetero = overall[overall["epsilon"] == "hetero"][metric].mean()
        if not math.isnan(hetero):
            ax.axhline(hetero, ls=":", color="tab:green", label="mallows, hetero ε")
        ax.set_xscale("log")
        ax.set_xlabel("ε (∞ drawn at 40)")
        ax.set_ylabel(metric)
    # each row's legend in a spare panel of the second row (in its own panel without one)
    spare = list(axes[1][2:])
    for ax in spare:
        ax.axis("off")
    for source in (axes[0][0], axes[1][0]):
        target = spare.pop(0) if spare else source
        target.legend(*source.get_legend_handles_labels(),
                      loc="center" if target is not source else "best")
    save(fig, path)


# ------------------------------------------------------------------ entry points
def run(out: str | os.PathLike | None = None, quick: bool = False, folds: int | None = None,
        seed: int = 0, dataset: str = "ml-100k", ranker_params: dict | None = None,
        verbose: bool = True, data_path: str | os.PathLike | None = None) -> pd.DataFrame:
    """Run (a) and (b), write the CSVs and the figure; return the fold-level table of (b).

    ``out``: the folder written (default ``results/ranking``; ``results/quick/ranking`` when
    ``quick``).

    ``quick``: m ≤ 50 and 300 repetitions in (a); 2 folds, ε ∈ {1, ∞} and 5
    epochs in (b).
    """
    out = run_folder(out, "results/ranking", quick)
    out.mkdir(parents=True, exist_ok=True)
    data, label = datasets.load_or_synthetic("auto" if dataset == "ml-100k" else dataset,
                                             seed, quick=quick, path=data_path)
    if folds is not None:
        check_folds(folds, data, label)
    if quick:
        concordance = concordance_table(ms=(5, 10, 20, 50), n_rep=300, seed=seed)
        params = {"n_epochs": 5, **(ranker_params or {})}
        folds, epsilons = folds or 2, (1.0, math.inf)
    else:
        concordance = concordance_table(seed=seed)
        params = dict(ranker_params or {})
        folds, epsilons = folds or 5, EPSILONS
    concordance.to_csv(out / "concordance.csv", index=False)
    accuracy = accuracy_table(data, label, epsilons=epsilons, folds=folds, seed=seed,
                              ranker_params=params, verbose=verbose)
    accuracy.to_csv(out / "accuracy.csv", index=False)
    summarise(accuracy).to_csv(out / "accuracy_summary.csv", index=False)
    plot(concordance, accuracy, out / "ranking_dp.png")
    return accuracy


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> int:
    """The command line of ``dprec ranking``: run the experiment on ``argv`` and write its
    results under ``--out`` (``--help`` for the options)."""
    parser = experiment_parser(prog, __doc__, "results/ranking")
    parser.add_argument("--quick", action="store_true",
                        help="a small fast run on synthetic data")
    parser.add_argument("--folds", type=FOLDS, default=5, quick=2,
                        help="folds (default 5; quick 2)")
    parser.add_argument("--dataset", default="ml-100k", quick="synthetic",
                        choices=["ml-100k", "synthetic"],
                        help="ml-100k (default; synthetic of its shape when absent) or "
                             "synthetic (quick: synthetic)")
    add_data_path(parser)
    args = parser.parse_args(argv)
    accuracy = run(args.out, quick=args.quick, folds=args.folds, seed=args.seed,
                   dataset=args.dataset, data_path=args.data_path)
    summary = summarise(accuracy)
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(summary.to_string(index=False))
    print(f"wrote {Path(args.out).resolve()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
