"""The ``dprec`` command line (``dprec --help``, also ``python -m dprec``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import datasets
from .evaluation import cross_validate_table, summarise


def demo_algorithms(k: int, seed: int) -> dict:
    """Surprise's KNNBasic next to every dprec algorithm, one configuration each."""
    from surprise import KNNBasic

    from .knn import PrivateKNN

    cosine = {"name": "cosine"}
    return {
        "KNNBasic (Surprise, cosine)": KNNBasic(k=k, sim_options=dict(cosine), verbose=False),
        "PrivateKNN top-k, item nbhd": PrivateKNN(k=k, sim_options=cosine, random_state=seed),
        "PrivateKNN top-k, user nbhd": PrivateKNN(k=k, sim_options=cosine, neighbourhood="user",
                                                  centered=True, random_state=seed),
    }


def run_demo(args: argparse.Namespace) -> int:
    data, label = datasets.load_or_synthetic(args.dataset, args.seed)
    print(f"dprec demo: {args.folds}-fold cross-validation on {label}, k={args.k}", flush=True)
    table = cross_validate_table(demo_algorithms(args.k, args.seed), data, n_folds=args.folds,
                                 random_state=args.seed, n_jobs=args.n_jobs, progress=True)
    table.insert(0, "dataset", label)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / "demo.csv", index=False)
    print()
    print(summarise(table).to_string(index=False, float_format=lambda x: f"{x:.4f}"))
    print(f"\nper-fold results written to {out / 'demo.csv'}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dprec", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser(
        "demo", help="cross-validate Surprise's KNNBasic next to dprec's algorithms",
        description="5-fold cross-validation of Surprise's KNNBasic next to every dprec "
                    "algorithm on MovieLens 100k (synthetic data when it cannot be loaded).")
    demo.add_argument("--dataset", choices=["auto", "ml-100k", "synthetic"], default="auto",
                      help="auto: MovieLens 100k, else synthetic (default)")
    demo.add_argument("--folds", type=int, default=5)
    demo.add_argument("--k", type=int, default=40)
    demo.add_argument("--seed", type=int, default=0)
    demo.add_argument("--n-jobs", type=int, default=1)
    demo.add_argument("--out", default="results", help="folder for demo.csv (default results/)")
    demo.set_defaults(handler=run_demo)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.handler(args)


if __name__ == "__main__":
    sys.exit(main())
