"""Private similarity backends under cross-validation, next to exact cosine.

Top-k and PPNS (ε = 1, p = 0.5) on each backend (a small ε grid for the
private sketches), item neighbourhood, k = 40, k-fold cross-validation on
MovieLens 100k (synthetic data of its shape when it is absent).  Writes
``backends_cv.csv``; the summary gives RMSE and MAE per backend and ε.

Run: ``python experiments/backends_cv.py [--quick] [--out results/backends]``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from ..datasets import load_or_synthetic
from ..evaluation import grid_table
from ..knn import PrivateKNN
from ._options import check_folds, experiment_parser

#: backend name -> (sim_options without ε, the ε grid; None = not private)
BACKENDS = {
    "cosine": ({"name": "cosine"}, (None,)),
    "minhash": ({"name": "minhash", "width": 256, "B": 4}, (None,)),
    "rr_minhash": ({"name": "rr_minhash", "width": 256, "B": 4, "delta": 1e-4}, (2.0, 4.0, 8.0)),
    "noisy_minhash": ({"name": "noisy_minhash", "width": 256, "B": 4, "delta": 1e-4},
                      (2.0, 4.0, 8.0)),
    "sjlt": ({"name": "sjlt", "width": 256, "s": 4}, (1.0, 4.0, 16.0)),
    "gaussian_jl": ({"name": "gaussian_jl", "width": 256, "delta": 1e-5}, (1.0, 4.0, 16.0)),
}


def configurations(selectors=("topk", "ppns"), backends=tuple(BACKENDS)) -> list[dict]:
    """Every (backend, similarity ε, selector) to cross-validate."""
    return [{"backend": backend, "sim_epsilon": epsilon, "selector": selector}
            for backend in backends for epsilon in BACKENDS[backend][1]
            for selector in selectors]


def make_algo(backend: str, sim_epsilon: float | None, selector: str, k: int = 40,
              seed: int = 0) -> PrivateKNN:
    """The ``PrivateKNN`` of one configuration (``k`` neighbours, seeded noise)."""
    options = dict(BACKENDS[backend][0])
    if sim_epsilon is not None:
        options["epsilon"] = sim_epsilon
    private = {} if selector == "topk" else {"epsilon": 1.0, "p": 0.5}    # top-k has none
    return PrivateKNN(k=k, sim_options=options, selector=selector, random_state=seed,
                      verbose=False, **private)


def run(data=None, n_folds: int = 5, seed: int = 0, n_jobs: int = 1,
        backends=tuple(BACKENDS)) -> pd.DataFrame:
    """Cross-validate every configuration (MovieLens 100k, else synthetic, when
    ``data`` is None): one row per configuration and fold."""
    label = "given"
    if data is None:
        data, label = load_or_synthetic("auto", seed)
    table = grid_table(configurations(backends=backends), make_algo, data, n_folds=n_folds,
                       random_state=seed, n_jobs=n_jobs, progress=True)
    table.insert(0, "dataset", label)
    return table


def summary(table: pd.DataFrame) -> pd.DataFrame:
    """Mean RMSE, MAE and share of impossible predictions per configuration."""
    table = table.assign(sim_epsilon=table["sim_epsilon"].fillna(float("inf")))
    means = table.groupby(["backend", "sim_epsilon", "selector"], sort=False)[
        ["rmse", "mae", "impossible"]].mean().reset_index()
    return means.replace({"sim_epsilon": {float("inf"): None}})


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> pd.DataFrame:
    """The command line of ``dprec backends``: run the experiment on ``argv`` and write its
    results under ``--out`` (``--help`` for the options)."""
    parser = experiment_parser(prog, __doc__, "results/backends", folds=5, n_jobs=1,
                               jobs="(configuration, fold) jobs", data=True)
    parser.add_argument("--quick", action="store_true",
                        help="a small run on synthetic data, 2 folds (the options given win)")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    data, label = load_or_synthetic(args.dataset, args.seed, quick=args.quick,
                                    path=args.data_path)
    check_folds(args.folds, data, label)
    if args.quick:
        print(f"quick run on {label}", flush=True)
    table = run(data, n_folds=args.folds, seed=args.seed, n_jobs=args.n_jobs).assign(dataset=label)
    table.to_csv(out / "backends_cv.csv", index=False)
    print(summary(table).to_string(index=False, float_format=lambda x: f"{x:.4f}"))
    return table


if __name__ == "__main__":
    main()
