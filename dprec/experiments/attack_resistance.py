"""β-kNN attack resistance of every neighbour selector, and what it costs in accuracy.

The β-kNN attack (Calandrino et al., S&P 2011; Lu & Shen, ComSIS 2015) with
[`dprec.BetaKNNAttack`][] against
[`dprec.PrivateKNN`][] (user neighbourhood, ``k = 20``, the papers' and the
attack's semantics, uncentred weighted mean as in ``KNNBasic``) for every
selector × ε ∈ {0.5, 1, 2, 5} × β ∈ {1, 2, 3, 4, 6, 8}, with

* exact co-rated cosine (Surprise's), ``min_support = 1``;
* the same with ``min_support = n_known`` (overlap-aware: a user sharing a
  single item with you no longer has similarity 1);
* the private similarity backends of [`dprec.similarity`][] when
  ``PrivateKNN`` accepts them (``rr_minhash``, ``noisy_minhash``, ``sjlt``,
  ``gaussian_jl`` and the non-private ``minhash``), with the backend's ε
  equal to the selector's ε (top-k and probabilistic: the backend's ε only).

on MovieLens 100k with 50 targets (dprec's synthetic data when it is absent).
The accuracy side is the RMSE of the same configurations under k-fold
cross-validation (computed here, because ``selectors_cv`` covers neither
``min_support`` nor the backends nor the uncentred user neighbourhood).

Writes under ``--out`` (default ``results/attack_resistance``):
``attack_resistance.csv`` (one row per configuration × target × β),
``attack_summary.csv`` (means per configuration × β, with the RMSE),
``accuracy.csv`` (per configuration and fold), ``attack_vs_beta.png`` (attack
success against β per selector, per similarity) and ``frontier.png`` (RMSE
against pooled recovery at β = 1 and β = 3):

    python experiments/attack_resistance.py --quick
    SURPRISE_DATA_FOLDER=/path/to/surprise_data python experiments/attack_resistance.py

(MovieLens 100k is read offline from ``SURPRISE_DATA_FOLDER``; without it the
run says so on stderr and uses synthetic data.)  The full sweep (94
configurations with the five backends, 50 targets, 6 β, 3-fold accuracy)
took 9 min 25 s with ``--n-jobs 2`` on the project's 2-core machine while
other jobs shared it (9 min 41 s of CPU).  ``--neighbourhood item`` runs
the same grid with Surprise's ``KNNBasic`` semantics (much slower).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from joblib import Parallel, delayed
from surprise.model_selection import KFold

from ..attacks import BetaKNNAttack
from ..knn import PrivateKNN
from ..utils._plotting import save, subplots
from ._options import POSITIVE_INT, check_folds, experiment_data, experiment_parser
from ._shared_fits import SharedFits, batch_estimates

EPSILONS = (0.5, 1.0, 2.0, 5.0)
BETAS = (1, 2, 3, 4, 6, 8)
SELECTORS = ("topk", "probabilistic", "pncf", "ppns")
BACKENDS = ("minhash", "rr_minhash", "noisy_minhash", "sjlt", "gaussian_jl")
PRIVATE_SELECTORS = ("pncf", "ppns")
#: PPNS's geometric parameter (k = 20: schedule 10, 5, 3, 1 + 1, β = 5)
PPNS_P = 0.5
#: columns averaged per configuration × β by `summary`
MEASURES = ["exposure", "exposure_any", "recovery", "recovery_pooled", "recovery_any",
            "possible_precision", "possible_recall", "topn_precision", "topn_recall",
            "baseline_recovery", "baseline_item_mean", "selector_beta", "seconds"]
CONFIG_KEYS = ["config", "similarity", "selector", "epsilon", "neighbourhood"]


# ---------------------------------------------------------- configurations
def backend_options(name: str, epsilon: float | None, n_known: int) -> dict:
    """``sim_options`` of a sketch backend at privacy level ``epsilon``.

    The backends' defaults (MinHash family ``K = 128``, ``B = 2``,
    ``δ = 1e-4``; projections ``k = 256``, sensitivity the largest rating,
    Gaussian-JL ``δ = 1e-4``), with one **choice**: ``τ = n_known`` for the
    private MinHash family.  The public lower bound on set sizes must admit
    the fake users, who rate ``n_known`` items (a larger τ rejects or
    excludes them: requiring longer profiles is itself a defence, not
    measured here), and it must not be computed from the data (the fakes
    would change it for everybody).  Users below τ (a few in the
    cross-validation folds) release no sketch (``small_users="exclude"``):
    similarity 0 to everybody.
    """
    options: dict = {"name": name}
    if name != "minhash":
        options["epsilon"] = epsilon
    if name in ("rr_minhash", "noisy_minhash"):
        options.update(tau=n_known, small_users="exclude")
    return options


def available_backends(names: Sequence[str] = BACKENDS, n_known: int = 8) -> list[str]:
    """The backends ``PrivateKNN`` accepts now (the others are skipped, with a note)."""
    found = []
    for name in names:
        try:
            PrivateKNN(sim_options=backend_options(name, 1.0, n_known))
        except (ValueError, TypeError) as error:
            print(f"similarity backend {name!r} skipped: {error}", file=sys.stderr)
        else:
            found.append(name)
    return found


def configurations(epsilons: Sequence[float] = EPSILONS, backends: Sequence[str] = (),
                   n_known: int = 8, neighbourhood: str = "user") -> list[dict]:
    """The grid: ``similarity`` × ``selector`` × ``epsilon``.

    ``epsilon`` is the ε of the private parts of the configuration: the
    selector's (PNCF, PPNS) and the backend's (private sketches); ``None``
    when nothing is private (top-k / probabilistic on exact or MinHash).
    """
    grid = []
    similarities = ["cosine", f"cosine_ms{n_known}", *backends]
    for similarity in similarities:
        private_sim = similarity in backends and similarity != "minhash"
        for selector in SELECTORS:
            private = private_sim or selector in PRIVATE_SELECTORS
            for epsilon in (epsilons if private else (None,)):
                label = f"{similarity}/{selector}" + (f"/eps={epsilon:g}" if private else "")
                grid.append({"config": label, "similarity": similarity, "selector": selector,
                             "epsilon": epsilon, "neighbourhood": neighbourhood})
    return grid


def make_algo(config: dict, k: int = 20, n_known: int = 8, seed: int = 0) -> PrivateKNN:
    """The [`PrivateKNN`][] of one configuration (uncentred; user neighbourhood unless
    the configuration says ``"item"``)."""
    similarity, selector, epsilon = config["similarity"], config["selector"], config["epsilon"]
    if similarity == "cosine":
        sim_options = {"name": "cosine"}
    elif similarity.startswith("cosine_ms"):
        sim_options = {"name": "cosine", "min_support": int(similarity[len("cosine_ms"):])}
    else:
        sim_options = backend_options(similarity, epsilon, n_known)
    return PrivateKNN(k=k, sim_options=sim_options, selector=selector,
                      epsilon=epsilon if selector in PRIVATE_SELECTORS else None,
                      p=PPNS_P if selector == "ppns" else None,
                      neighbourhood=config.get("neighbourhood", "user"),
                      random_state=seed, verbose=False)


# ------------------------------------------------------------------ attack
def run(data, configs: Sequence[dict], k: int = 20, n_known: int = 8,
        betas: Sequence[int] = BETAS, n_targets: int = 50, min_target_ratings: int = 50,
        seed: int = 0, n_jobs: int = 1, progress: bool = True) -> pd.DataFrame:
    """The attack on every configuration (same targets, known items and fake users)."""
    algos = {c["config"]: make_algo(c, k, n_known, seed) for c in configs}
    table = BetaKNNAttack(algos, data, n_known=n_known, betas=betas, n_targets=n_targets,
                          min_target_ratings=min_target_ratings, random_state=seed,
                          n_jobs=n_jobs, progress=progress).run()
    keys = pd.DataFrame(configs)
    return keys.merge(table.rename(columns={"algo": "config"}), on="config", how="right")


# ---------------------------------------------------------------- accuracy
def _scores(algo: PrivateKNN, trainset, testset) -> dict:
    """RMSE and MAE of ``algo.test(testset)`` (Surprise's ``accuracy.rmse``/``mae``: clipped
    estimates, the global mean where impossible), from the batch arrays behind
    ``test()``; also over the possible predictions only, and the share of impossible
    ones."""
    truth, est, possible = batch_estimates(algo, trainset, testset)
    error = est - truth
    return {"rmse": float(np.sqrt(np.mean(error**2))), "mae": float(np.mean(np.abs(error))),
            "rmse_possible": float(np.sqrt(np.mean(error[possible]**2))),
            "impossible": float(1 - possible.mean())}


def _fold_accuracy(configs, trainset, testset, fold, k, n_known, seed) -> list[dict]:
    """Scores of every configuration on one fold (each similarity computed once per fold
    and shared by the selectors: `SharedFits`)."""
    shared = SharedFits(trainset)
    rows = []
    for config in configs:
        start = time.perf_counter()
        algo = shared.fit(make_algo(config, k, n_known, seed))
        rows.append({"config": config["config"], "fold": fold,
                     **_scores(algo, trainset, testset),
                     "seconds": time.perf_counter() - start})
    return rows


def accuracy_table(data, configs: Sequence[dict], k: int = 20, n_known: int = 8,
                   n_folds: int = 3, seed: int = 0, n_jobs: int = 1) -> pd.DataFrame:
    """Cross-validated accuracy of the attacked configurations (one row per fold).

    Columns ``config``, ``fold``, ``rmse``, ``mae`` (impossible predictions
    fall back to the global mean, as in Surprise), ``rmse_possible`` (over
    the possible ones only), ``impossible`` (their share) and ``seconds``.
    """
    folds = KFold(n_splits=n_folds, random_state=seed).split(data)
    jobs = (delayed(_fold_accuracy)(configs, trainset, testset, fold, k, n_known, seed)
            for fold, (trainset, testset) in enumerate(folds))
    rows = [row for part in Parallel(n_jobs=n_jobs)(jobs) for row in part]
    return pd.DataFrame(rows)


# ----------------------------------------------------------------- summary
def summary(table: pd.DataFrame, accuracy_rows: pd.DataFrame | None = None) -> pd.DataFrame:
    """Means over targets per configuration × β (and the mean RMSE, MAE over folds)."""
    means = table.groupby(["config", "beta"], sort=False)[MEASURES].mean().reset_index()
    keys = table[CONFIG_KEYS].drop_duplicates("config")
    out = keys.merge(means, on="config")
    out["n_targets"] = out.config.map(table.groupby("config").target.nunique())
    if accuracy_rows is not None and len(accuracy_rows):
        acc = accuracy_rows.groupby("config")[["rmse", "mae", "rmse_possible",
                                               "impossible"]].mean()
        out = out.merge(acc.reset_index(), on="config", how="left")
    return out


def resisting(summary_table: pd.DataFrame, beta: int, margin: float = 0.05) -> pd.DataFrame:
    """Configurations whose pooled recovery at ``beta`` stays within ``margin`` of what
    the crowd reveals (``baseline_item_mean``), cheapest (lowest RMSE) first."""
    rows = summary_table[summary_table.beta == beta]
    keep = rows[rows.recovery_pooled - rows.baseline_item_mean <= margin]
    return keep.sort_values("rmse") if "rmse" in keep else keep


# ------------------------------------------------------------------- plots
_COLOURS = {"topk": "black", "probabilistic": "tab:gray", "pncf": "tab:orange",
            "ppns": "tab:blue"}
_MARKERS = "osD^v<>pP*"


def plot_attack(summary_table: pd.DataFrame, path: Path, epsilon: float = 1.0) -> None:
    """Attack success against β: one row of panels per similarity (exposure, per-fake
    recovery, pooled recovery), one line per selector at ``epsilon`` (thin lines: the
    other ε), the no-attack baseline dotted."""

    similarities = list(dict.fromkeys(summary_table.similarity))
    measures = [("exposure", "exposure (per fake user)"),
                ("recovery", "recovery (per fake user)"),
                ("recovery_pooled", "pooled recovery (majority)")]
    fig, axes = subplots(len(similarities), 3, figsize=(12, 2.7 * len(similarities)),
                             squeeze=False, sharex=True, sharey=True)
    for row, similarity in zip(axes, similarities):
        part = summary_table[summary_table.similarity == similarity]
        for ax, (measure, title) in zip(row, measures):
            if measure == "recovery_pooled":
                crowd = part.groupby("beta").baseline_item_mean.mean()
                ax.plot(crowd.index, crowd.values, ls="--", lw=1, color="tab:red",
                        label="item mean (crowd)")
            for (selector, eps), lines in part.groupby(["selector", "epsilon"], dropna=False,
                                                       sort=False):
                main = eps is None or (isinstance(eps, float) and math.isnan(eps)) \
                    or eps == epsilon
                ax.plot(lines.beta, lines[measure], marker="o" if main else None,
                        lw=1.8 if main else 0.7, alpha=1 if main else 0.35,
                        color=_COLOURS[selector], label=selector if main else None)
                if measure != "exposure" and main:
                    ax.plot(lines.beta, lines.baseline_recovery, ls=":", lw=1,
                            color=_COLOURS[selector])
            ax.set(ylim=(-0.03, 1.03), title=f"{similarity}: {title}")
            ax.grid(alpha=0.3)
        row[0].set_ylabel("fraction")
    for ax in axes[-1]:
        ax.set_xlabel("β (β·k fake users)")
    axes[0][0].legend(fontsize=8, title=f"ε = {epsilon:g} (thin: other ε; dotted: "
                      "no-attack baseline)", title_fontsize=7)
    axes[0][2].legend(fontsize=7, loc="lower right")
    save(fig, path)


def plot_frontier(summary_table: pd.DataFrame, path: Path, betas: Sequence[int] = (1, 3)) -> None:
    """RMSE against pooled recovery at each β of ``betas``: the accuracy–security plane
    (down-left is better); colour = selector, marker = similarity, a grey bar down to
    the configuration's no-attack baseline recovery."""

    betas = [b for b in betas if b in set(summary_table.beta)]
    similarities = list(dict.fromkeys(summary_table.similarity))
    fig, axes = subplots(1, len(betas), figsize=(6 * len(betas), 4.6), squeeze=False)
    for ax, beta in zip(axes[0], betas):
        part = summary_table[summary_table.beta == beta]
        for s, similarity in enumerate(similarities):
            for selector, points in part[part.similarity == similarity].groupby("selector"):
                ax.scatter(points.rmse, points.recovery_pooled, color=_COLOURS[selector],
                           marker=_MARKERS[s % len(_MARKERS)], s=36, alpha=0.8,
                           label=f"{similarity}/{selector}")
        ax.vlines(part.rmse, part.baseline_recovery, part.recovery_pooled, color="0.75",
                  lw=0.8, zorder=0)
        ax.axhline(part.baseline_item_mean.mean(), ls="--", lw=1, color="tab:red")
        ax.set(xlabel="RMSE (cross-validation)", ylabel="pooled recovery",
               title=f"β = {beta}: {beta}·k fake users", ylim=(-0.03, 1.03))
        ax.grid(alpha=0.3)
    axes[0][-1].legend(fontsize=6, ncol=2, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.suptitle("Accuracy against pooled recovery (grey bar: down to the model's no-attack "
                 "baseline; dashed: the item-mean yardstick)", fontsize=9)
    save(fig, path)


# -------------------------------------------------------------------- main
def _print_report(summary_table: pd.DataFrame, epsilon: float = 1.0) -> None:
    columns = ["config", "beta", "exposure", "recovery", "recovery_pooled", "recovery_any",
               "baseline_recovery", "baseline_item_mean", "selector_beta", "rmse"]
    columns = [c for c in columns if c in summary_table]
    at = summary_table[summary_table.epsilon.isna() | (summary_table.epsilon == epsilon)]
    at = at[at.beta.isin([1, 3])]
    print(at[columns].to_string(index=False, float_format=lambda x: f"{x:.3f}"))


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> pd.DataFrame:
    """The command line of ``dprec attack``: run the experiment on ``argv`` and write its
    results under ``--out`` (``--help`` for the options)."""
    parser = experiment_parser(prog, __doc__, "results/attack_resistance", folds=3, n_jobs=2,
                               jobs="targets attacked", data=True)
    parser.add_argument("--data", dest="dataset", choices=("auto", "ml-100k", "synthetic"),
                        help=argparse.SUPPRESS)                 # --dataset's former name
    parser.add_argument("--targets", type=POSITIVE_INT, default=50, quick=5,
                        help="users attacked per configuration (default 50; quick 5)")
    parser.add_argument("--k", type=POSITIVE_INT, default=20, quick=10,
                        help="neighbours (default 20; quick 10)")
    parser.add_argument("--n-known", type=POSITIVE_INT, default=8,
                        help="target ratings each fake user copies (default 8)")
    parser.add_argument("--no-backends", action="store_true",
                        help="exact similarities only")
    parser.add_argument("--neighbourhood", choices=("user", "item"), default="user",
                        help="item: Surprise's KNNBasic semantics (much slower: every fake "
                             "user × item query has its own neighbours)")
    parser.add_argument("--quick", action="store_true",
                        help="a small run: synthetic 300 users, k = 10, 5 targets, β ∈ {1, 3}, "
                             "ε = 1, 2 folds (the options given win)")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    data, label = experiment_data(args)
    check_folds(args.folds, data, label)
    k, targets, folds = args.k, args.targets, args.folds
    betas, epsilons, min_ratings = ((1, 3), (1.0,), 40) if args.quick else (BETAS, EPSILONS, 50)
    backends = [] if args.no_backends else available_backends(BACKENDS, args.n_known)
    configs = configurations(epsilons, backends, args.n_known, args.neighbourhood)
    print(f"{label}: {len(configs)} configurations × {targets} targets × β ∈ {list(betas)}, "
          f"k = {k}, n_known = {args.n_known}; backends: {backends or 'none'}", flush=True)
    table = run(data, configs, k, args.n_known, betas, targets, min_ratings, args.seed,
                args.n_jobs)
    table.insert(0, "dataset", label)
    table.to_csv(out / "attack_resistance.csv", index=False)
    attacked = time.perf_counter()
    acc = accuracy_table(data, configs, k, args.n_known, folds, args.seed, args.n_jobs)
    acc.to_csv(out / "accuracy.csv", index=False)
    means = summary(table, acc)
    means.to_csv(out / "attack_summary.csv", index=False)
    plot_attack(means, out / "attack_vs_beta.png", epsilon=1.0)
    plot_frontier(means, out / "frontier.png")
    _print_report(means)
    end = time.perf_counter()
    print(f"attack {attacked - start:.0f} s, accuracy {end - attacked:.0f} s, total "
          f"{end - start:.0f} s; written to {out}/", flush=True)
    return table


if __name__ == "__main__":
    main()
