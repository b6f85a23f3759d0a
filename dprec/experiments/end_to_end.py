"""End-to-end DP configurations against ε, next to Surprise's and the published selectors.

Every model is cross-validated on the same folds: the global mean, Surprise's
``BaselineOnly``, ``KNNBasic`` and ``KNNBaseline`` (no privacy; the last two
computed by dprec's top-k, whose predictions equal Surprise's to 1e-9), ``SVD``, the
most accurate non-private kNN here (``KNNWithMeans``, item-based, LensKit's centred
cosine), dprec's ``DPBaseline`` (per user and per rating), ``DPItemKNN`` (per user) and
``LocalKNN`` (local model, per rating, with each rating release), whose
guarantees hold for everything they release, PNCF's selection *corrected*
(its neighbour lists hold, its predictions are unprotected), and PNCF and PPNS *as
published* (item neighbourhood, cosine, k = 40: their ε covers the neighbour
selection only, not the predictions).  No hyper-parameter is read from the data:
every configuration takes the public rule (column ``hyperparameters``,
`PUBLIC_RULE`): ``k = 40`` for every
kNN model and each model's default stabilisers (functions of ε alone), so
nothing outside the end-to-end models' ε chose them.  (These runs are seeded
for reproducibility, and a seeded run has no guarantee: the column ``privacy``
is what the report of the configuration fitted with ``random_state=None`` on
the first training fold, having answered its test fold, computes for its worst
user — ε, δ, unit and status, [`dprec.experiments.privacy_labels`][] — never
the ``epsilon`` given.)  RMSE, MAE, precision@10 and NDCG@10 per configuration;
``--scaling`` repeats the private models at ε = 1 on synthetic data of growing
numbers of users (the MovieLens-100k and -1M shapes and beyond), since user-level
noise averages out over users; ``--attack`` runs the β-kNN attack ([`BetaKNNAttack`][])
on the end-to-end kNN models at ε ≤ 2 and on the non-private top-k (Surprise's
``KNNBasic``), and compares the attacker's pooled recovery with the crowd
yardstick (the other users' mean rating). Writes ``end_to_end.csv``,
``end_to_end_scaling.csv``, ``end_to_end_attack.csv`` and
``end_to_end_rmse.png``.

Run: ``python experiments/end_to_end.py [--quick] [--scaling] [--attack] [--out DIR]``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd
from surprise import SVD, BaselineOnly

from ..attacks import BetaKNNAttack
from ..datasets import load_or_synthetic, synthetic
from ..endtoend.dp_als import DPALS, FACTOR_SHARE
from ..endtoend.dp_baseline import DPBaseline
from ..endtoend.dp_item_knn import BASELINE_SHARE, DPItemKNN
from ..endtoend.local_knn import LocalKNN
from ..evaluation import grid_table
from ..knn import PrivateKNN, PrivateKNNBaseline, PrivateKNNWithMeans
from ..selectors import CorrectedPNCF
from ..utils._plotting import (
    legend_outside,
    line_styles,
    plain_epsilon_ticks,
    reference_styles,
    save,
    subplots,
)
from ._options import EPSILON, POSITIVE_INT, check_folds, experiment_parser
from .hyperparameters import PUBLIC_K, PUBLIC_RULE
from .privacy_labels import first_fold, fresh_labels

EPSILONS = (0.1, 0.5, 1.0, 2.0, 5.0, 10.0)
REFERENCES = ("global mean", "BaselineOnly", "KNNBasic", "KNNBaseline", "SVD",
              "KNNWithMeans (centred cosine, item)")
PRIVATE = ("DPBaseline (user)", "DPBaseline (user, centre user)",
           "DPBaseline (user, laplace)", "DPBaseline (rating)", "DPItemKNN (user)",
           "DPItemKNN (user, covariance always)", "DPItemKNN (user, factors)",
           "DPALS (user)", "DPALS (user, factors always)",
           "LocalKNN (krr, rating)", "LocalKNN (laplace, rating)")
PUBLISHED = ("PNCF (as published)", "PPNS (as published)")
#: PNCF's selection corrected to hold (neighbour lists only: predictions use raw ratings)
CORRECTED = ("PNCF corrected (user neighbourhood)",)
#: the end-to-end kNN models the attack runs on, and its non-private reference
ATTACKED = ("DPItemKNN (user)", "LocalKNN (krr, rating)")
ATTACK_REFERENCE = "KNNBasic (top-k, no privacy)"
#: (users, items, ratings) of the scaling run: MovieLens 100k's and 1M's shapes, and larger
SHAPES = ((943, 1682, 100_000), (6040, 3706, 1_000_209), (20_000, 3706, 3_000_000))


def make_algo(model: str, epsilon: float | None = None, seed: int | None = 0):
    """The configuration's (unfitted) algorithm, its hyper-parameters by the public rule
    (``k = 40``, the models' defaults); ``seed`` its ``random_state``."""
    if model == "global mean":
        return BaselineOnly(bsl_options={"method": "als", "n_epochs": 0}, verbose=False)
    if model == "BaselineOnly":
        return BaselineOnly(verbose=False)
    if model == "KNNBasic":      # dprec's top-k: Surprise's predictions, tested to 1e-9
        return PrivateKNN(k=PUBLIC_K, verbose=False)
    if model == "KNNBaseline":
        return PrivateKNNBaseline(k=PUBLIC_K, verbose=False)
    if model == "SVD":
        return SVD(random_state=0)
    if model == "KNNWithMeans (centred cosine, item)":    # LensKit's similarity, top-k
        return PrivateKNNWithMeans(k=PUBLIC_K, sim_options={"name": "centered_cosine",
                                                            "user_based": False},
                                   verbose=False)
    if model.startswith("DPALS"):      # "factors always": the factors' share whatever the rule
        share = 1.0 - FACTOR_SHARE if "always" in model else None
        return DPALS(epsilon=epsilon, baseline_share=share, random_state=seed)
    if model.startswith("DPBaseline"):
        unit = "user" if "user" in model else "rating"
        return DPBaseline(epsilon=epsilon, unit=unit, random_state=seed,
                          centre="user" if "centre user" in model else "scale",
                          mechanism="laplace" if "laplace" in model else None)
    if model.startswith("DPItemKNN"):      # "always": the covariance's share whatever the rule
        similarity = "factors" if "factors" in model else "covariance"
        share = BASELINE_SHARE if "always" in model else None
        return DPItemKNN(epsilon=epsilon, k=PUBLIC_K, similarity=similarity,
                         baseline_share=share, random_state=seed)
    if model.startswith("LocalKNN"):
        release = "krr" if "krr" in model else "laplace"
        return LocalKNN(epsilon=epsilon, k=PUBLIC_K, rating_release=release, random_state=seed)
    if model in CORRECTED:   # candidates fixed in advance; cosine on 1..5 has range width 1
        return PrivateKNN(k=PUBLIC_K, sim_options={"name": "cosine"},
                          selector=CorrectedPNCF(epsilon=epsilon,
                                                 score_range=1.0), neighbourhood="user",
                          prediction="baseline", random_state=seed, verbose=False)
    selector = model.split()[0].lower()
    return PrivateKNN(k=PUBLIC_K, sim_options={"name": "cosine"}, selector=selector,
                      epsilon=epsilon, random_state=seed, verbose=False)


ALL = REFERENCES + PRIVATE + PUBLISHED + CORRECTED


def configurations(epsilons=EPSILONS, models=ALL) -> list[dict]:
    """Every model, the private ones at every ε."""
    return [{"model": m, "epsilon": None} if m in REFERENCES else {"model": m, "epsilon": e}
            for m in models for e in ((None,) if m in REFERENCES else epsilons)]


def run(data=None, epsilons=EPSILONS, n_folds: int = 5, seed: int = 0, n_jobs: int = 1,
        progress: bool = True, models=ALL) -> pd.DataFrame:
    """The sweep: one row per configuration and fold, with how its hyper-parameters were
    chosen (``hyperparameters``: the public rule for every row) and what its report says
    (``privacy``: `privacy_labels`)."""
    label = "given"
    if data is None:
        data, label = load_or_synthetic("auto", seed)
    configs = configurations(epsilons, models)
    table = grid_table(configs, make_algo, data, n_folds=n_folds,
                       random_state=seed, n_jobs=n_jobs, progress=progress)
    table.insert(0, "dataset", label)
    table["hyperparameters"] = PUBLIC_RULE
    labels = privacy_labels(data, configs, n_folds, seed)
    table["privacy"] = [labels[(model, None if pd.isna(epsilon) else float(epsilon))]
                        for model, epsilon in zip(table["model"], table["epsilon"])]
    return table


def privacy_labels(data, configs: Sequence[dict], n_folds: int = 5, seed: int = 0) -> dict:
    """Per configuration ``(model, ε)``, what the privacy report of the configuration
    fitted with fresh noise on the first of the ``n_folds`` training folds, having
    answered its test fold, computes for its worst user
    ([`fresh_labels`][dprec.experiments.privacy_labels.fresh_labels]): the seeded runs
    that score it guarantee nothing themselves."""
    trainset, testset = first_fold(data, n_folds, seed)
    return {(c["model"], c["epsilon"]): fresh_labels(make_algo(**c), trainset, testset)[0]
            for c in configs}


def scaling(shapes=SHAPES, epsilon: float = 1.0, n_folds: int = 2, seed: int = 0,
            n_jobs: int = 1) -> pd.DataFrame:
    """The private models (and BaselineOnly) at one ε on synthetic data of each shape."""
    tables = []
    for n_users, n_items, n_ratings in shapes:
        data = synthetic(n_users, n_items, n_ratings, random_state=seed)
        table = grid_table(configurations((epsilon,), ("BaselineOnly",) + PRIVATE), make_algo,
                           data, n_folds=n_folds, random_state=seed, n_jobs=n_jobs)
        table.insert(0, "users", n_users)
        table["hyperparameters"] = PUBLIC_RULE
        tables.append(table)
    return pd.concat(tables, ignore_index=True)


def attack(data, epsilons=(0.5, 1.0, 2.0), betas=(1, 2, 4, 8), n_targets: int = 50,
           seed: int = 0, n_jobs: int = 1, progress: bool = True) -> pd.DataFrame:
    """The β-kNN attack on every end-to-end kNN model at each ε (and the reference),
    same targets, known items and fake users for all: one row per (model, target, β)."""
    algorithms = {ATTACK_REFERENCE: PrivateKNN(k=40, verbose=False)}
    algorithms.update({f"{model} ε={epsilon:g}": make_algo(model, epsilon, seed)
                       for model in ATTACKED for epsilon in epsilons})
    return BetaKNNAttack(algorithms, data, betas=betas, n_targets=n_targets, random_state=seed,
                         n_jobs=n_jobs, progress=progress).run()


def attack_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per model and β: the pooled recovery, the crowd yardstick, their gap (mean and
    standard error over the targets) and the exposure."""
    table = table.assign(gap=table["recovery_pooled"] - table["baseline_item_mean"])
    grouped = table.groupby(["algo", "beta"], sort=False)
    out = grouped[["recovery_pooled", "baseline_item_mean", "gap", "exposure"]].mean()
    out["gap_se"] = grouped["gap"].sem()
    out["targets"] = grouped.size()
    return out.reset_index()


def summary(table: pd.DataFrame, keys=("model", "epsilon")) -> pd.DataFrame:
    """Fold means per configuration (and its ``privacy`` label, when the table has it)."""
    keys = list(keys) + (["privacy"] if "privacy" in table else [])
    table = table.assign(epsilon=table["epsilon"].fillna(float("inf")))
    return (table.groupby(keys, sort=False)[["rmse", "mae", "precision@10", "ndcg@10"]]
            .mean().reset_index().replace({"epsilon": {float("inf"): None}}))


def summary_text(means: pd.DataFrame) -> str:
    """`summary` as printed: the scores to 4 decimals, ε compactly (``1``, ``1e+300``;
    ``-`` for the references)."""
    return means.to_string(index=False, float_format=lambda x: f"{x:.4f}", formatters={
        "epsilon": lambda e: "-" if e is None or pd.isna(e) else f"{e:g}"})


def plot(table: pd.DataFrame, path: Path):
    """RMSE against ε per private model, each line its own colour and marker (and line
    style after ten); the references (no ε) as grey horizontal lines, each its own dash
    pattern, named in the legend; the legend outside the data. Returns the figure (saved
    to ``path``)."""
    means = summary(table)
    groups = list(means.groupby("model", sort=False))
    references = [(model, rows) for model, rows in groups if rows["epsilon"].isna().all()]
    curves = [(model, rows) for model, rows in groups if not rows["epsilon"].isna().all()]
    fig, ax = subplots(figsize=(9.0, 4.8))
    for (model, rows), style in zip(curves, line_styles(len(curves))):
        ax.plot(rows["epsilon"].astype(float), rows["rmse"], label=model, **style)
    for (model, rows), style in zip(references, reference_styles(len(references))):
        ax.axhline(rows["rmse"].iloc[0], label=f"{model} (no privacy)", **style)
    ax.set(xscale="log", xlabel="ε", ylabel="RMSE", title="accuracy against ε")
    plain_epsilon_ticks(ax, means["epsilon"].dropna().unique())
    legend_outside(ax, fontsize=7)
    save(fig, path)
    return fig


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> pd.DataFrame:
    """The command line of ``dprec endtoend``: run the experiment on ``argv`` and write its
    results under ``--out`` (``--help`` for the options)."""
    parser = experiment_parser(prog, __doc__, "results/end_to_end", folds=5, n_jobs=1,
                               jobs="(model, ε, fold) jobs", data=True)
    parser.add_argument("--epsilons", nargs="+", type=EPSILON, default=list(EPSILONS),
                        quick=[1.0, 10.0],
                        help="privacy budgets of the end-to-end models (quick: 1 10)")
    parser.add_argument("--shape", choices=("ml-100k", "ml-1m"), default="ml-100k",
                        help="MovieLens 100k (synthetic of its shape when absent), or "
                             "synthetic data of MovieLens 1M's shape")
    parser.add_argument("--scaling", action="store_true",
                        help="also the private models at ε = 1 on growing synthetic data")
    parser.add_argument("--attack", action="store_true",
                        help="also the β-kNN attack on the end-to-end kNN models at ε ≤ 2")
    parser.add_argument("--targets", type=POSITIVE_INT, default=50, quick=3,
                        help="targets of the attack (default 50; quick 3)")
    parser.add_argument("--quick", action="store_true",
                        help="a small run: synthetic 300 users, 2 folds, ε ∈ {1, 10} (the "
                             "options given win)")
    args = parser.parse_args(argv)
    if args.shape == "ml-1m" and not args.attack and (
            "dataset" not in parser.left_out or args.data_path is not None):
        parser.error("argument --shape: ml-1m is synthetic data of MovieLens 1M's shape, so "
                     "--dataset and --data-path are not read (only --attack runs on them); "
                     "drop them, or --shape ml-1m")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.shape == "ml-1m":
        data, label = (synthetic(*SHAPES[1], random_state=args.seed),
                       "synthetic, MovieLens-1M shape")
    else:
        data, label = load_or_synthetic(args.dataset, args.seed, quick=args.quick,
                                        path=args.data_path)
    check_folds(args.folds, data, label)
    if args.quick:
        print(f"quick run on {label}", flush=True)
    table = run(data, epsilons=args.epsilons, n_folds=args.folds, seed=args.seed,
                n_jobs=args.n_jobs, progress=not args.quick).assign(dataset=label)
    table.to_csv(out / "end_to_end.csv", index=False)
    plot(table, out / "end_to_end_rmse.png")
    print(summary_text(summary(table)))
    if args.scaling:
        shapes = ((300, 400, 12_000), (600, 400, 24_000)) if args.quick else SHAPES
        grown = scaling(shapes, seed=args.seed, n_jobs=args.n_jobs)
        grown.to_csv(out / "end_to_end_scaling.csv", index=False)
        print(summary_text(summary(grown, ("users", "model"))))
    if args.attack:
        if args.shape == "ml-1m":      # the attack runs on --dataset's data
            data = load_or_synthetic(args.dataset, args.seed, quick=args.quick,
                                     path=args.data_path)[0]
        small = dict(epsilons=(1.0,), betas=(1, 4), progress=False) if args.quick else {}
        attacked = attack(data, n_targets=args.targets, seed=args.seed, n_jobs=args.n_jobs,
                          **small)
        attacked.to_csv(out / "end_to_end_attack.csv", index=False)
        print(attack_summary(attacked).to_string(index=False,
                                                  float_format=lambda x: f"{x:.3f}"))
    print(f"written: {out}")
    return table
