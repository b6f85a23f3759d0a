"""Where user-level privacy pays: accuracy against the number of users.

User-level noise is the same whatever the number of users, while an item's signal
grows with its raters: every end-to-end model gets closer to its non-private
counterpart as users grow, and the private kNN's neighbours start to add something
to the private baseline at some size.  This experiment measures where, on

* MovieLens 100k subsampled by users (about a quarter, half and all of its 943
  users; synthetic data of its shape when the copy is absent, saying so), and
* synthetic data of the MovieLens-1M shape (6,040 users), 20,000 users, the
  MovieLens-10M shape (69,878 users, 10,677 items, 10,000,054 ratings), the 20M
  (138,493 × 26,744) and 25M (162,541 × 59,047) shapes and the Netflix Prize's
  (480,189 × 17,770, 100,480,507 ratings), generated and split as arrays
  (`dprec.datasets.arrays`: the same ratings and split as Surprise's),

at ε ∈ {0.5, 1, 2, 5, 10}, per user and per rating, every end-to-end model
(`DPBaseline`, `DPItemKNN`, `LocalKNN` up to 20,000 users: its reports are dense,
users × items; `DPItemKNN (covariance)` up to 20,000 items) next to the user's own mean
(free under joint DP), Surprise's `BaselineOnly` and `SVD`, and the item-based
`KNNBaseline` (dprec's, equal to Surprise's; up to 30 million ratings and 20,000
items).  Each
shape is one seeded 80/20 split; every private fit is seeded (reproducible, so its
guarantee is void: the guarantee is that of the same configuration fitted with
`random_state=None`).  Hyper-parameters are the models' defaults and `k = 40`,
the same at every size.

Writes `users_scaling.csv` (one row per shape, model, unit and ε), and
`users_scaling.png` (RMSE against the number of users, one panel per ε), and
prints the table and, per ε, the first size at which `DPItemKNN` beats
`DPBaseline` per user.

Run: `python experiments/users_scaling.py [--quick] [--max-users N] [--test-pairs N]
[--out DIR]`.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from surprise import SVD, BaselineOnly, accuracy
from surprise.model_selection import train_test_split

from ..datasets import (
    ArrayDataset,
    ArrayTestset,
    array_train_test_split,
    load_or_synthetic,
    synthetic,
)
from ..endtoend.dp_als import DPALS
from ..endtoend.dp_baseline import DPBaseline
from ..endtoend.dp_item_knn import BASELINE_SHARE, DPItemKNN
from ..endtoend.local_knn import LocalKNN
from ..evaluation.baselines import MeanRating
from ..knn import PrivateKNNBaseline
from ..utils._plotting import line_styles, reference_styles, save, subplots
from ._options import EPSILON, POSITIVE_INT, experiment_parser
from .hyperparameters import PUBLIC_K

EPSILONS = (0.5, 1.0, 2.0, 5.0, 10.0)
#: MovieLens 100k's share of users kept (236, 472 and 943 users)
ML100K_SHARES = (0.25, 0.5, 1.0)
#: MovieLens 100k's users (and those of the synthetic data of its shape)
ML100K_USERS = 943
#: (users, items, ratings) of the synthetic shapes
SHAPES = ((6040, 3706, 1_000_209), (20_000, 3706, 3_000_000), (69_878, 10_677, 10_000_054),
          (138_493, 26_744, 20_000_263), (162_541, 59_047, 25_000_095),
          (480_189, 17_770, 100_480_507))
#: DPItemKNN (covariance) and the item-based KNNBaseline keep items × items matrices:
#: they run up to this many items
COVARIANCE_MAX_ITEMS = 20_000
#: the item-based KNNBaseline: up to this many ratings (its similarities are a
#: Python-level pass over Surprise's lists)
REFERENCE_MAX_RATINGS = 30_000_000
#: LocalKNN's reports are dense (users × items): it runs up to this many users
LOCAL_MAX_USERS = 20_000
#: the private models: name -> (unit, factory(ε, seed))
PRIVATE = {
    "DPBaseline": ("user", lambda eps, seed: DPBaseline(epsilon=eps, random_state=seed)),
    "DPItemKNN": ("user", lambda eps, seed: DPItemKNN(epsilon=eps, k=PUBLIC_K,
                                                      random_state=seed)),
    "DPItemKNN (covariance)": ("user", lambda eps, seed: DPItemKNN(
        epsilon=eps, k=PUBLIC_K, baseline_share=BASELINE_SHARE, random_state=seed)),
    "DPItemKNN (factors)": ("user", lambda eps, seed: DPItemKNN(
        epsilon=eps, k=PUBLIC_K, similarity="factors", random_state=seed)),
    "DPALS": ("user", lambda eps, seed: DPALS(epsilon=eps, random_state=seed)),
    "DPBaseline (rating)": ("rating", lambda eps, seed: DPBaseline(epsilon=eps, unit="rating",
                                                                   random_state=seed)),
    "LocalKNN": ("rating", lambda eps, seed: LocalKNN(epsilon=eps, k=PUBLIC_K,
                                                      random_state=seed)),
}
#: the references (no privacy, or free)
REFERENCES = {
    "user mean": lambda: MeanRating("user"),
    "BaselineOnly": lambda: BaselineOnly(verbose=False),
    "KNNBaseline (item)": lambda: PrivateKNNBaseline(k=PUBLIC_K, sim_options={
        "name": "pearson_baseline", "user_based": False}, verbose=False),
    "SVD": lambda: SVD(random_state=0),
}


def subsample_users(data, share: float, seed: int = 0):
    """A copy of `data` with a random `share` of its users (all of their ratings)."""
    users = sorted({r[0] for r in data.raw_ratings})
    rng = np.random.default_rng(seed)
    kept = set(rng.choice(len(users), round(share * len(users)), replace=False).tolist())
    kept = {users[n] for n in kept}
    out = copy.copy(data)
    out.raw_ratings = [r for r in data.raw_ratings if r[0] in kept]
    return out


#: the quick run's shapes: (users of the base, shares kept) and one larger synthetic shape
QUICK_BASE = (400, 300, 16_000)
QUICK_SHARES = (0.5, 1.0)
QUICK_SHAPE = (1200, 300, 48_000)


def in_window(users: int, max_users: int | None = None, min_users: int | None = None) -> bool:
    """Whether a shape of `users` users is within `min_users` to `max_users` (either
    `None`: no bound)."""
    return (max_users is None or users <= max_users) and (min_users is None
                                                          or users >= min_users)


def quick_users() -> tuple[int, ...]:
    """The numbers of users of the quick run's shapes, in growing order."""
    return (*(round(share * QUICK_BASE[0]) for share in QUICK_SHARES), QUICK_SHAPE[0])


def datasets(quick: bool, seed: int, max_users: int | None = None,
             min_users: int | None = None):
    """`(label, data)` of every shape, in growing numbers of users (those with
    `min_users` to `max_users` users, when given: the quick run's shapes, or MovieLens
    100k's subsamples and the synthetic shapes)."""
    if quick:
        base = synthetic(*QUICK_BASE, random_state=seed)
        for share in QUICK_SHARES:
            if in_window(round(share * QUICK_BASE[0]), max_users, min_users):
                yield (f"synthetic {QUICK_BASE[0]}, {share:.0%} of users",
                       subsample_users(base, share, seed))
        if in_window(QUICK_SHAPE[0], max_users, min_users):
            yield "synthetic 1,200 users", synthetic(*QUICK_SHAPE, random_state=seed)
        return
    shares, shapes = chosen_shapes(max_users, min_users)
    if shares:
        base, label = load_or_synthetic("auto", seed)
        for share in shares:
            yield f"{label}, {share:.0%} of users", subsample_users(base, share, seed)
    for n_users, n_items, n_ratings in shapes:     # arrays: the same ratings, and splits
        yield (f"synthetic {n_users:,} × {n_items:,}, {n_ratings:,} ratings",
               synthetic(n_users, n_items, n_ratings, random_state=seed, as_arrays=True))


def chosen_shapes(max_users: int | None = None, min_users: int | None = None
                  ) -> tuple[tuple[float, ...], list[tuple[int, int, int]]]:
    """What a full run reads: the shares of MovieLens 100k's 943 users kept (its
    subsamples with `min_users` to `max_users` users), and the synthetic `SHAPES` with
    `min_users` to `max_users` users."""
    shapes = [shape for shape in SHAPES if in_window(shape[0], max_users, min_users)]
    shares = tuple(share for share in ML100K_SHARES
                   if in_window(round(share * ML100K_USERS), max_users, min_users))
    return shares, shapes


def evaluate(algo, trainset, testset) -> tuple[float, float]:
    """RMSE of `algo` fitted on `trainset`, and its fit and test seconds."""
    start = time.perf_counter()
    predictions = algo.fit(trainset).test(testset)
    return accuracy.rmse(predictions, verbose=False), time.perf_counter() - start


def shape_jobs(trainset, epsilons: Sequence[float], seed: int) -> list[tuple]:
    """`(model, unit, ε, factory)` of every fit a shape gets: the references (no ε), then
    each private model at each ε, but `KNNBaseline (item)` only up to
    `REFERENCE_MAX_RATINGS` ratings, the two items × items models (`KNNBaseline (item)`,
    `DPItemKNN (covariance)`) only up to `COVARIANCE_MAX_ITEMS` items and `LocalKNN` only
    up to `LOCAL_MAX_USERS` users."""
    square = trainset.n_items <= COVARIANCE_MAX_ITEMS
    jobs = [(name, "none", None, make) for name, make in REFERENCES.items()
            if name != "KNNBaseline (item)"
            or (trainset.n_ratings <= REFERENCE_MAX_RATINGS and square)]
    jobs += [(name, unit, eps, (lambda make=make, eps=eps: make(eps, seed)))
             for name, (unit, make) in PRIVATE.items() for eps in epsilons
             if (name != "LocalKNN" or trainset.n_users <= LOCAL_MAX_USERS)
             and (name != "DPItemKNN (covariance)" or square)]
    return jobs


def sample_test_fold(testset, pairs: int | None, seed: int):
    """`testset` (a list of triples or an `ArrayTestset`), or `pairs` of its pairs drawn
    without replacement by `numpy.random.default_rng(seed)` when it has more."""
    if pairs is None or len(testset) <= pairs:
        return testset
    pick = np.random.default_rng(seed).choice(len(testset), pairs, replace=False)
    if isinstance(testset, ArrayTestset):
        uids, iids, truth = testset.rating_columns()
        return ArrayTestset(uids[pick], iids[pick], truth[pick])
    return [testset[n] for n in pick]


def run(quick: bool = False, epsilons: Sequence[float] = EPSILONS, seed: int = 0,
        max_users: int | None = None, progress: bool = True, min_users: int | None = None,
        models: Sequence[str] | None = None, test_pairs: int | None = None) -> pd.DataFrame:
    """One row per shape, model, unit and ε (`None` for the references): `rmse`,
    `seconds`, the shape's `users`, `items`, `ratings` and `test_pairs` answered; only
    the shapes with `min_users` to `max_users` users and the `models` named, when given,
    and a seeded sample of `test_pairs` pairs of a larger test fold (`sample_test_fold`;
    the Netflix shape's fold has 20 million).  A fit the machine cannot hold (a model's
    `MemoryError`; `DPItemKNN` raises it before it starts) gets a row with no `rmse` and
    the error in `note`; the run goes on."""
    rows = []
    for label, data in datasets(quick, seed, max_users, min_users):
        split = array_train_test_split if isinstance(data, ArrayDataset) else train_test_split
        trainset, testset = split(data, test_size=0.2, random_state=seed)
        del data
        testset = sample_test_fold(testset, test_pairs, seed)
        shape = {"dataset": label, "users": trainset.n_users, "items": trainset.n_items,
                 "ratings": trainset.n_ratings, "test_pairs": len(testset)}
        for name, unit, eps, make in shape_jobs(trainset, epsilons, seed):
            if models is not None and name not in models:
                continue
            row = {**shape, "model": name, "unit": unit, "epsilon": eps}
            try:
                rmse, seconds = evaluate(make(), trainset, testset)
            except MemoryError as error:    # e.g. DPItemKNN's refusal (`check_memory`)
                rows.append({**row, "rmse": np.nan, "seconds": np.nan,
                             "note": f"MemoryError: {error}"})
                if progress:
                    print(f"{label}: {name} ε={eps} not run: {error}", flush=True)
                continue
            rows.append({**row, "rmse": rmse, "seconds": seconds, "note": ""})
            if progress:
                print(f"{label}: {name} ε={eps} RMSE {rmse:.4f} ({seconds:.0f} s)", flush=True)
    return pd.DataFrame(rows)


def table(results: pd.DataFrame) -> pd.DataFrame:
    """RMSE per model and ε (rows) against the number of users (columns)."""
    results = results.assign(epsilon=results["epsilon"].fillna(np.inf))
    out = results.pivot_table(index=["model", "unit", "epsilon"], columns="users",
                              values="rmse", sort=False)
    return out.rename(index={np.inf: "—"}, level="epsilon")


def knn_pays(results: pd.DataFrame, min_gain: float = 0.001,
             model: str = "DPItemKNN") -> pd.DataFrame:
    """Per ε, the smallest number of users from which `model` (the DP kNN by default) is
    below `DPBaseline` (per user) by more than `min_gain` RMSE at that size and every
    larger one measured (a tie within the noise of one split is no gain, and a gain at
    one small size alone is noise), that gain, and the gain at the largest size (`None`
    when never, or when either model was not run)."""
    rows = []
    both = results[results["model"].isin(["DPBaseline", model])]
    for eps, group in both.groupby("epsilon"):
        wide = group.pivot_table(index="users", columns="model", values="rmse")
        if not {"DPBaseline", model} <= set(wide.columns):
            continue
        gain = (wide["DPBaseline"] - wide[model]).dropna().sort_index()
        # a size counts when it and every larger one gain: reversed cumulative minimum
        holds = (gain > min_gain)[::-1].cummin()[::-1]
        first = gain[holds]
        rows.append({"epsilon": eps, "first users": first.index[0] if len(first) else None,
                     "gain there": first.iloc[0] if len(first) else None,
                     "gain at the largest": gain.iloc[-1] if len(gain) else None})
    return pd.DataFrame(rows, columns=["epsilon", "first users", "gain there",
                                       "gain at the largest"])


def plot(results: pd.DataFrame, path: Path) -> None:
    """RMSE against the number of users, one panel per ε; the references (no ε) grey, unmarked."""
    epsilons = sorted(results["epsilon"].dropna().unique())
    legend_rows = -(-results["model"].nunique() // len(epsilons))   # below, a column a panel
    fig, axes = subplots(1, len(epsilons), figsize=(3.6 * len(epsilons), 3.6 + 0.3 * legend_rows),
                         sharey=True)
    axes = np.atleast_1d(axes)
    references = results[results["epsilon"].isna()]
    private = results[results["epsilon"].notna()]
    # one style a model in every panel (a panel lacking a model would shift the cycle);
    # the private models in colours and markers, the references in greys without one
    models, names = private["model"].unique(), references["model"].unique()
    styles = {**dict(zip(models, line_styles(len(models)))),
              **dict(zip(names, reference_styles(len(names))))}
    for ax, eps in zip(axes, epsilons):
        for model, rows in private[private["epsilon"] == eps].groupby("model", sort=False):
            ax.plot(rows["users"], rows["rmse"], label=model, **styles[model])
        for model, rows in references.groupby("model", sort=False):
            ax.plot(rows["users"], rows["rmse"], label=model, **styles[model])
        ax.set(xscale="log", xlabel="users", title=f"ε = {eps:g}")
    axes[0].set_ylabel("RMSE")
    handles = {}                     # every model once, from whichever panel has it
    for ax in axes:
        handles.update(zip(*reversed(ax.get_legend_handles_labels())))
    fig.legend(handles.values(), handles.keys(), loc="outside lower center",
               ncols=len(epsilons))
    save(fig, path)


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> pd.DataFrame:
    """The command line of `dprec scaling`: run the experiment on `argv` and write its
    results under `--out` (`--help` for the options)."""
    parser = experiment_parser(prog, __doc__, "results/users_scaling")
    parser.add_argument("--epsilons", nargs="+", type=EPSILON, default=list(EPSILONS),
                        quick=[1.0], help="privacy budgets (default 0.5 1 2 5 10; quick 1)")
    parser.add_argument("--max-users", type=POSITIVE_INT, default=None,
                        help="skip the shapes with more users (MovieLens 100k's subsamples "
                             "and the synthetic ones; the quick run's too)")
    parser.add_argument("--min-users", type=POSITIVE_INT, default=None,
                        help="skip the shapes with fewer users")
    parser.add_argument("--models", nargs="+", default=None,
                        choices=sorted(set(PRIVATE) | set(REFERENCES)), metavar="MODEL",
                        help="only these models (default: all)")
    parser.add_argument("--test-pairs", type=POSITIVE_INT, default=None, metavar="N",
                        help="answer a seeded sample of N pairs of a larger test fold "
                             "(default: the whole fold; the docs' Netflix column: 1000000)")
    parser.add_argument("--quick", action="store_true",
                        help="a small run: synthetic 200 to 1,200 users, ε ∈ {1} (the "
                             "options given win)")
    args = parser.parse_args(argv)
    low, high = args.min_users, args.max_users
    if low is not None and high is not None and low > high:
        parser.error(f"argument --min-users: {low} is above --max-users {high}, so no shape "
                     "is between them; give --min-users <= --max-users")
    users = quick_users() if args.quick else (
        *(round(share * ML100K_USERS) for share in ML100K_SHARES), *(s[0] for s in SHAPES))
    if not any(in_window(n, high, low) for n in users):
        window = (f"{low} to {high}" if low is not None and high is not None
                  else f"at least {low}" if low is not None else f"at most {high}")
        option = "--min-users" if low is not None else "--max-users"
        which = (f"the quick run's have {', '.join(map(str, users))}" if args.quick else
                 f"they have {', '.join(map(str, users[:3]))} (MovieLens 100k's "
                 f"subsamples), {', '.join(str(shape[0]) for shape in SHAPES)}")
        parser.error(f"argument {option}: no shape has {window} users ({which}); widen the "
                     "range")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results = run(args.quick, tuple(args.epsilons), args.seed, args.max_users,
                  progress=not args.quick, min_users=args.min_users, models=args.models,
                  test_pairs=args.test_pairs)
    results.to_csv(out / "users_scaling.csv", index=False)
    plot(results, out / "users_scaling.png")
    print(table(results).to_string(float_format=lambda x: f"{x:.4f}"))
    for model in ("DPItemKNN", "DPItemKNN (factors)", "DPALS"):
        print(f"where {model} first beats DPBaseline:")
        print(knn_pays(results, model=model).to_string(index=False,
                                                       float_format=lambda x: f"{x:.4f}"))
    print(f"written: {out}")
    return results
