"""Neighbour selectors under cross-validation: accuracy, top-N quality, α and β against ε.

Every selector × ε × k × neighbourhood × prediction rule (Surprise's
``KNNBasic``, ``KNNWithMeans``, ``KNNWithZScore``, ``KNNBaseline``), cosine
similarity, k-fold cross-validation on MovieLens 100k (synthetic data of its
shape when it is absent): RMSE, MAE, precision@10 and NDCG@10 (over each
user's test items, relevance: rating ≥ 3.5).  Writes ``selectors_cv.csv``
(one row per configuration and fold) and ``selectors_mae.png`` (MAE against
ε per selector).

Run: ``python experiments/selectors_cv.py [--quick] [--rules basic means baseline]
[--out results/selectors]``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from ..datasets import load_or_synthetic
from ..evaluation import grid_table
from ..knn import PrivateKNN
from ..utils._plotting import save, subplots
from ._options import EPSILON, POSITIVE_INT, check_folds, experiment_parser

EPSILONS = (0.1, 0.5, 1.0, 2.0, 5.0, 10.0)
PRIVATE = ("pncf", "ppns")


def configurations(epsilons=EPSILONS, ks=(20, 40), neighbourhoods=("item", "user"),
                   p: float = 0.5, rules=("basic",)) -> list[dict]:
    """The grid: ε only varies for the private selectors (top-k and probabilistic once)."""
    grid = []
    for rule in rules:
        for neighbourhood in neighbourhoods:
            for k in ks:
                cell = {"k": k, "neighbourhood": neighbourhood, "prediction": rule}
                grid.append({"selector": "topk", "epsilon": None, **cell})
                grid.append({"selector": "probabilistic", "epsilon": None, **cell})
                grid += [{"selector": selector, "epsilon": epsilon, **cell}
                         for selector in PRIVATE for epsilon in epsilons]
    for config in grid:
        config["p"] = p if config["selector"] == "ppns" else None
    return grid


def make_algo(selector, epsilon, k, neighbourhood, p=None, prediction="basic",
              seed: int = 0) -> PrivateKNN:
    """The configuration's model (the basic rule in the user neighbourhood is the papers'
    mean-centred one)."""
    return PrivateKNN(k=k, sim_options={"name": "cosine"}, selector=selector, epsilon=epsilon,
                      p=p, neighbourhood=neighbourhood, prediction=prediction,
                      centered=neighbourhood == "user" and prediction == "basic",
                      random_state=seed, verbose=False)


def run(data=None, epsilons=EPSILONS, ks=(20, 40), neighbourhoods=("item", "user"),
        n_folds: int = 5, seed: int = 0, n_jobs: int = 1, progress: bool = True,
        rules=("basic",)) -> pd.DataFrame:
    """The sweep as a DataFrame (see [`dprec.evaluation.grid_table`][])."""
    if data is None:
        data, label = load_or_synthetic("auto", seed)
    else:
        label = "given"
    table = grid_table(configurations(epsilons, ks, neighbourhoods, rules=rules), make_algo, data,
                       n_folds=n_folds, random_state=seed, n_jobs=n_jobs, progress=progress)
    table.insert(0, "dataset", label)
    return table


def summary(table: pd.DataFrame) -> pd.DataFrame:
    """Fold means per configuration."""
    keys = ["prediction", "neighbourhood", "k", "selector", "epsilon"]
    table = table.assign(epsilon=table["epsilon"].fillna(float("inf")))
    return (table.groupby(keys, sort=True)[["rmse", "mae", "precision@10", "ndcg@10", "alpha",
                                            "beta", "impossible", "fit_time", "test_time"]]
            .mean().reset_index().replace({"epsilon": {float("inf"): None}}))


def plot(table: pd.DataFrame, path: Path) -> None:
    """MAE against ε, one line per selector, one panel per (rule, neighbourhood, k)."""

    means = summary(table)
    panels = means[["prediction", "neighbourhood", "k"]].drop_duplicates().to_numpy()
    fig, axes = subplots(1, len(panels), figsize=(4.2 * len(panels), 3.6), squeeze=False)
    for ax, (rule, neighbourhood, k) in zip(axes[0], panels):
        panel = means[(means.prediction == rule) & (means.neighbourhood == neighbourhood)
                      & (means.k == k)]
        for selector, rows in panel.groupby("selector"):
            if rows["epsilon"].isna().all():
                ax.axhline(rows["mae"].iloc[0], ls="--", lw=1, label=selector,
                           color="k" if selector == "topk" else "tab:gray")
            else:
                ax.plot(rows["epsilon"].astype(float), rows["mae"], marker="o", label=selector)
        ax.set(xscale="log", xlabel="ε", ylabel="MAE", title=f"{rule}, {neighbourhood} nbhd, k={k}")
    axes[0][0].legend(fontsize=8)
    save(fig, path)


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> pd.DataFrame:
    """The command line of ``dprec selectors``: run the experiment on ``argv`` and write its
    results under ``--out`` (``--help`` for the options)."""
    parser = experiment_parser(prog, __doc__, "results/selectors", folds=5, n_jobs=1,
                               jobs="(configuration, fold) jobs", data=True)
    parser.add_argument("--rules", nargs="+", default=["basic"],
                        choices=["basic", "means", "zscore", "baseline"],
                        help="prediction rules (Surprise's KNNBasic, KNNWithMeans, ...)")
    parser.add_argument("--epsilons", nargs="+", type=EPSILON, default=list(EPSILONS),
                        quick=[1.0, 10.0],
                        help="privacy budgets of the private selectors (quick: 1 10)")
    parser.add_argument("--ks", nargs="+", type=POSITIVE_INT, default=[20, 40], quick=[20],
                        help="numbers of neighbours (default 20 40; quick 20)")
    parser.add_argument("--neighbourhoods", nargs="+", default=["item", "user"],
                        choices=["item", "user"],
                        help="item: Surprise's semantics; user: the papers' (default both)")
    parser.add_argument("--quick", action="store_true",
                        help="a small run: synthetic 300 users, 2 folds, ε ∈ {1, 10}, k = 20 "
                             "(the options given win)")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    data, label = load_or_synthetic(args.dataset, args.seed, quick=args.quick,
                                    path=args.data_path)
    check_folds(args.folds, data, label)
    if args.quick:
        print(f"quick run on {label}", flush=True)
    table = run(data, epsilons=args.epsilons, ks=args.ks, neighbourhoods=args.neighbourhoods,
                n_folds=args.folds, seed=args.seed, n_jobs=args.n_jobs,
                progress=not args.quick, rules=args.rules).assign(dataset=label)
    table.to_csv(out / "selectors_cv.csv", index=False)
    plot(table, out / "selectors_mae.png")
    print(summary(table).to_string(index=False, float_format=lambda x: f"{x:.4f}"))
    print(f"written: {out / 'selectors_cv.csv'}, {out / 'selectors_mae.png'}")
    return table


if __name__ == "__main__":
    main()
