"""Implicit-feedback kNN on Last.fm: recall@10 and NDCG@10 against ε, with private set sketches.

The setting of Aumüller, Bourgeat & Schmurr (SISAP 2020) run end to end: each user
releases a locally private MinHash sketch of their set of artists, and the server
recommends with [`ImplicitKNN`][dprec.implicit_knn.ImplicitKNN] (LensKit's implicit kNN:
sums of similarities).

Data: HetRec 2011 Last.fm ``user_artists.dat``, each listened artist an interaction
(play counts ignored); a seeded per-user hold-out of ``round(0.2 n)`` of each user's
``n`` artists (at least one when ``n >= 3``, none for ``n < 3``).  Every user with a
held-out artist gets a top-10 list of the artists they did not listen to in training,
scored with [`dprec.metrics`][] against their held-out artists (binary relevance):
precision@10, recall@10 and NDCG@10, means over those users (a user with no list counts
0).  ``--quick`` runs on synthetic sets (clusters of taste plus popularity) in seconds.

Models, at ``k = 20`` (LensKit's default):

* ``popularity``: the artists with the most listeners in training;
* ``item-kNN cosine``, ``user-kNN cosine``, ``user-kNN jaccard``: exact, not private;
* ``user-kNN minhash``: Jaccard estimated from non-private MinHash sketches (what the
  sketches lose before any noise);
* ``user-kNN rr_minhash`` and ``user-kNN noisy_minhash`` at each ε: each user's ε-LDP
  sketch chooses the neighbours; the scores read the neighbours' raw sets (the privacy
  report: *in part*);
* ``released sets`` at each ε: ε/2 for an RR-MinHash sketch, ε/2 for the user's set by
  randomised response on every artist ([`dprec.set_reports`][]); the scores read only
  these releases (the report: *holds*, ε per user and item of the set).

The sketches: δ = 1e-4, one item of a set (α = 1), public τ = 20 (users with fewer
training artists release no sketch and get no list: ``small_users="exclude"``), and
``width`` 16 hashes of ``B = 2`` buckets: the width whose RR-MinHash estimate of a
Jaccard of 0.1 has the smallest standard deviation at τ = 20 and ε = 8 (a public
computation, `estimate_sd`: 0.43 at width 16, 0.52 at 32, 0.99 at 128; each hash's
budget ε/⌈L⌉ shrinks as the width grows).  Noise varies with ``--reps`` seeds (the hash functions
and MinHash too); the split is ``--seed``'s.  ``guarantee`` is what each model's privacy
report says when fitted with fresh noise (on public synthetic data; a seeded run is void).

Writes ``implicit.csv`` (one row per model, ε and seed, with fit and recommend times),
``summary.csv`` (means and standard deviations over seeds) and ``implicit.png`` under
``--out`` (default ``results/implicit``):

    python experiments/implicit_feedback.py --quick
    python experiments/implicit_feedback.py
"""

from __future__ import annotations

import math
import os
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from surprise import Dataset, Reader

from dprec import datasets
from dprec._plotting import save, subplots
from dprec.experiments._options import (
    EPSILON,
    POSITIVE_INT,
    existing_path,
    experiment_parser,
    run_folder,
)
from dprec.experiments.hyperparameters import guarantee_label
from dprec.implicit_knn import ImplicitKNN
from dprec.metrics import ndcg_at_k, precision_at_k, recall_at_k
from dprec.similarity import RRMinHash

EPSILONS: tuple[float, ...] = (0.5, 1.0, 2.0, 4.0, 8.0)
#: the sketches' parameters (every private model and ``user-kNN minhash``)
SKETCH = {"width": 16, "B": 2, "delta": 1e-4, "tau": 20, "set_difference": 1,
          "small_users": "exclude"}
HOLDOUT = 0.2
N = 10
#: the non-private kNN models: label -> sim_options
EXACT = {"item-kNN cosine": {"name": "cosine", "user_based": False},
         "user-kNN cosine": {"name": "cosine"}, "user-kNN jaccard": {"name": "jaccard"}}
PRIVATE = ("rr_minhash", "noisy_minhash")
RELEASED = "released sets"


# ------------------------------------------------------------------ data
def lastfm_interactions(path: str | os.PathLike | None = None) -> pd.DataFrame:
    """Last.fm's (user, artist) pairs as raw ids (``user``, ``item``): one interaction
    per listened artist."""
    raw = datasets.read_lastfm(path)
    return pd.DataFrame({"user": raw["userID"], "item": raw["artistID"]})


def synthetic_interactions(seed: int = 0, n_users: int = 300, n_items: int = 400,
                           per_user: int = 30, n_groups: int = 6) -> pd.DataFrame:
    """Synthetic sets with signal for kNN: each user belongs to one of ``n_groups`` taste
    groups and draws ``per_user`` distinct items, weighted by a Zipf popularity times 8
    on their group's share of the items (a Gumbel top-k per user, no loop)."""
    rng = np.random.default_rng(seed)
    popularity = 1.0 / np.arange(1, n_items + 1) ** 0.8
    groups = rng.integers(n_groups, size=n_users)
    liked = rng.integers(n_groups, size=n_items)
    weights = popularity[None, :] * np.where(liked[None, :] == groups[:, None], 8.0, 1.0)
    keys = np.log(weights) + rng.gumbel(size=weights.shape)
    chosen = np.argpartition(-keys, per_user - 1, axis=1)[:, :per_user]
    return pd.DataFrame({"user": np.repeat([f"u{u}" for u in range(n_users)], per_user),
                         "item": [f"i{i}" for i in chosen.ravel()]})


def holdout_split(frame: pd.DataFrame, share: float = HOLDOUT, seed: int = 0
                  ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(train, test)``: ``round(share · n)`` of each user's ``n`` interactions held out,
    at random (seeded), none for a user where that is 0."""
    rng = np.random.default_rng(seed)
    frame = frame.drop_duplicates(["user", "item"]).reset_index(drop=True)
    shuffled = frame.iloc[rng.permutation(len(frame))]
    position = shuffled.groupby("user", sort=False).cumcount()
    size = shuffled.groupby("user", sort=False)["item"].transform("size")
    held = position < np.floor(share * size + 0.5)
    return (shuffled[~held].sort_index().reset_index(drop=True),
            shuffled[held].sort_index().reset_index(drop=True))


def trainset_of(train: pd.DataFrame):
    """A Surprise trainset of the training interactions (each rated 1)."""
    ratings = train.assign(rating=1.0)[["user", "item", "rating"]]
    return Dataset.load_from_df(ratings, Reader(rating_scale=(0, 1))).build_full_trainset()


# ------------------------------------------------------------------ models
def estimate_sd(width: int, B: int = 2, epsilon: float = 8.0, tau: int = 20,
                jaccard: float = 0.1, delta: float = 1e-4) -> float:
    r"""The standard deviation of RR-MinHash's Jaccard estimate of two sets of Jaccard
    `jaccard` (at least `tau` items, one item of a set protected): the binomial
    variance of the matches, $P (1 - P) / K$ with
    $P = 1/B + J (1 - 1/B) ((Bp - 1)/(B - 1))^2$, through
    $\hat J = (B - 1)(B \hat P - 1)/(Bp - 1)^2$.  A function of public parameters
    only (no data)."""
    p = RRMinHash(width, B, epsilon=epsilon, delta=delta, tau=tau).keep_probability()
    contrast = B * p - 1.0
    matches = 1.0 / B + jaccard * (1.0 - 1.0 / B) * (contrast / (B - 1)) ** 2
    return (B - 1) * B * math.sqrt(matches * (1.0 - matches) / width) / contrast**2


def make_model(label: str, epsilon: float | None, seed: int | None, k: int = 20):
    """The unfitted model of a row (``popularity`` is not one: None)."""
    if label == "popularity":
        return None
    if label in EXACT:
        return ImplicitKNN(k=k, sim_options=EXACT[label])
    if label == "user-kNN minhash":
        options = {key: value for key, value in SKETCH.items()
                   if key in ("width", "B")}
        return ImplicitKNN(k=k, sim_options={"name": "minhash", **options},
                           random_state=seed)
    if label == RELEASED:
        return ImplicitKNN(k=k, sim_options={"name": "rr_minhash", "epsilon": epsilon / 2,
                                             **SKETCH},
                           set_epsilon=epsilon / 2, random_state=seed)
    return ImplicitKNN(k=k, sim_options={"name": label.split()[-1], "epsilon": epsilon,
                                         **SKETCH}, random_state=seed)


def configurations(epsilons: Sequence[float], reps: int) -> list[tuple[str, float | None, int]]:
    """``(label, ε, rep)`` of every run: the deterministic models once, the others per seed."""
    runs = [("popularity", None, 0), *((label, None, 0) for label in EXACT)]
    for rep in range(reps):
        runs.append(("user-kNN minhash", None, rep))
        for epsilon in epsilons:
            runs += [(f"user-kNN {name}", epsilon, rep) for name in PRIVATE]
            runs.append((RELEASED, epsilon, rep))
    return runs


def popularity_lists(trainset, uids: Sequence, n: int = N) -> pd.DataFrame:
    """Top-``n`` lists by the number of training users of each item (ties: inner id),
    without the user's own items, as ``recommend_batch`` gives them."""
    counts = np.array([len(trainset.ir[i]) for i in range(trainset.n_items)], dtype=float)
    order = np.argsort(-counts, kind="stable")
    rows = []
    for uid in uids:
        own = {i for i, _ in trainset.ur[trainset.to_inner_uid(uid)]}
        picked = [i for i in order[:n + len(own)] if i not in own][:n]
        rows += [(uid, rank + 1, trainset.to_raw_iid(i), counts[i])
                 for rank, i in enumerate(picked)]
    return pd.DataFrame(rows, columns=["uid", "rank", "iid", "est"])


def guarantee_labels(labels: Sequence[str], k: int) -> dict[str, str]:
    """What each model's privacy report says when fitted with fresh noise, read on public
    synthetic data (not the private data)."""
    public = trainset_of(synthetic_interactions(seed=0, n_users=40, n_items=80))
    out = {"popularity": "none"}
    for label in labels:
        if label != "popularity":
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = make_model(label, 1.0, None, k).fit(public)
            out[label] = guarantee_label(model)
    return out


def scores(top: pd.DataFrame, testset: list) -> dict[str, float]:
    """precision@10, recall@10 and NDCG@10 of the lists against the held-out pairs."""
    return {"precision": precision_at_k(top, N, threshold=None, testset=testset),
            "recall": recall_at_k(top, N, threshold=None, testset=testset),
            "ndcg": ndcg_at_k(top, N, testset=testset)}


def evaluate(frame: pd.DataFrame, label: str = "synthetic", epsilons: Sequence[float] = EPSILONS,
             reps: int = 3, seed: int = 0, k: int = 20, verbose: bool = True) -> pd.DataFrame:
    """One row per run of `configurations` on `frame`'s interactions (see the module
    docstring)."""
    train, test = holdout_split(frame, seed=seed)
    trainset = trainset_of(train)
    known = set(train["user"])
    test = test[test["user"].isin(known)]
    testset = [(u, i, 1.0) for u, i in zip(test["user"], test["item"])]
    uids = list(dict.fromkeys(test["user"]))
    runs = configurations(epsilons, reps)
    guarantee = guarantee_labels(list(dict.fromkeys(run[0] for run in runs)), k)
    if verbose:
        print(f"{label}: {trainset.n_users} users, {trainset.n_items} items, "
              f"{trainset.n_ratings} training and {len(testset)} held-out interactions, "
              f"{len(uids)} users scored", flush=True)
    rows = []
    for model_label, epsilon, rep in runs:
        start = time.perf_counter()
        model = make_model(model_label, epsilon, seed * 1000 + rep, k)
        if model is not None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")      # the small users excluded: said above
                model.fit(trainset)
        fitted = time.perf_counter()
        top = (popularity_lists(trainset, uids) if model is None
               else model.recommend_batch(uids, N))
        done = time.perf_counter()
        row = {"dataset": label, "model": model_label, "epsilon": epsilon, "rep": rep,
               **scores(top, testset), "fit_time": fitted - start,
               "recommend_time": done - fitted, "guarantee": guarantee[model_label]}
        rows.append(row)
        if verbose:
            eps = "" if epsilon is None else f" ε={epsilon:g}"
            print(f"  {model_label}{eps} (seed {rep}): recall@10 {row['recall']:.4f}, "
                  f"NDCG@10 {row['ndcg']:.4f}, fit {row['fit_time']:.1f} s, recommend "
                  f"{row['recommend_time']:.1f} s", flush=True)
    return pd.DataFrame(rows)


def summarise(table: pd.DataFrame) -> pd.DataFrame:
    """Means and standard deviations over the seeds, per model and ε."""
    keys = ["dataset", "model", "epsilon", "guarantee"]
    metrics = ["precision", "recall", "ndcg", "fit_time", "recommend_time"]
    grouped = table.groupby(keys, dropna=False, sort=False)
    out = grouped[metrics].mean()
    for metric in ("recall", "ndcg"):
        out[f"{metric}_sd"] = grouped[metric].std(ddof=1).fillna(0.0)
    out["reps"] = grouped.size()
    return out.reset_index()


def plot(summary: pd.DataFrame, path: Path) -> None:
    """recall@10 and NDCG@10 against ε: the private models as lines (± one sd over the
    seeds), the non-private ones as horizontal lines."""
    from matplotlib.ticker import NullLocator

    fig, axes = subplots(1, 2, figsize=(11, 5.2))
    private = summary.dropna(subset=["epsilon"])
    flat = summary[summary["epsilon"].isna()]
    epsilons = sorted(private["epsilon"].unique())
    for ax, metric, title in zip(axes, ("recall", "ndcg"), ("recall@10", "NDCG@10")):
        for model, line in private.groupby("model", sort=False):
            ax.errorbar(line["epsilon"], line[metric], yerr=line[f"{metric}_sd"],
                        marker="o", capsize=3, label=f"{model} ({line['guarantee'].iloc[0]})")
        for n, (_, row) in enumerate(flat.iterrows()):
            ax.axhline(row[metric], color=f"C{n + 3}", ls="--", lw=1,
                       label=f"{row['model']} (not private)")
        ax.set(xscale="log", xlabel="ε per user (one item of the set)", ylabel=title,
               title=f"{summary['dataset'].iloc[0]}: {title}")
        ax.set_xticks(epsilons, [f"{e:g}" for e in epsilons])
        ax.xaxis.set_minor_locator(NullLocator())
        ax.grid(alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=3)
    save(fig, path)


# ------------------------------------------------------------------ entry points
def run(out: str | os.PathLike | None = None, quick: bool = False, seed: int = 0,
        epsilons: Sequence[float] | None = None, reps: int | None = None,
        k: int = 20, frame: pd.DataFrame | None = None, label: str | None = None,
        verbose: bool = True) -> pd.DataFrame:
    """Run the experiment and write its files; returns the summary.

    ``frame``: the interactions (``user``, ``item``; default Last.fm, or the synthetic
    sets when ``quick``).  ``quick``: ε ∈ {1, 8}, one seed, synthetic sets.
    ``out``: the folder written (default ``results/implicit``; ``results/quick/implicit``
    when ``quick``).
    """
    out = run_folder(out, "results/implicit", quick)
    out.mkdir(parents=True, exist_ok=True)
    if frame is None:
        frame, label = ((synthetic_interactions(seed), "synthetic (quick)") if quick
                        else (lastfm_interactions(), "HetRec 2011 Last.fm"))
    epsilons = epsilons or ((1.0, 8.0) if quick else EPSILONS)
    table = evaluate(frame, label or "interactions", epsilons, reps or (1 if quick else 3),
                     seed, k, verbose)
    table.to_csv(out / "implicit.csv", index=False)
    summary = summarise(table)
    summary.to_csv(out / "summary.csv", index=False)
    plot(summary, out / "implicit.png")
    return summary


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> int:
    """The command line of ``dprec implicit`` (``--help`` for the options)."""
    parser = experiment_parser(prog, __doc__, "results/implicit")
    parser.add_argument("--quick", action="store_true",
                        help="a small fast run: synthetic sets, ε ∈ {1, 8}, one seed")
    parser.add_argument("--dataset", choices=("auto", "lastfm", "synthetic"), default="auto",
                        quick="synthetic",
                        help="auto (default): Last.fm when a local copy is found, else "
                             "synthetic sets, saying so (quick: synthetic)")
    parser.add_argument("--data-path", type=existing_path, default=None, metavar="PATH",
                        help="Last.fm's user_artists.dat or its folder (default: "
                             "DPREC_LASTFM, next to SURPRISE_DATA_FOLDER)")
    parser.add_argument("--epsilons", type=EPSILON, nargs="+", metavar="E",
                        help="ε per user of the private models (default 0.5 1 2 4 8; "
                             "quick 1 8)")
    parser.add_argument("--reps", type=POSITIVE_INT, default=3, quick=1,
                        help="seeds of the noise (default 3; quick 1)")
    parser.add_argument("--k", type=POSITIVE_INT, default=20,
                        help="similarities summed per score (default 20, LensKit's)")
    args = parser.parse_args(argv)
    frame, label = None, None
    if args.dataset == "synthetic":
        frame, label = synthetic_interactions(args.seed), "synthetic"
    else:
        try:
            frame, label = lastfm_interactions(args.data_path), "HetRec 2011 Last.fm"
        except datasets.DatasetUnavailable as error:
            if args.dataset != "auto" or args.data_path is not None:
                raise
            print(f"Last.fm could not be loaded: {error}\nFalling back to synthetic sets.",
                  file=sys.stderr)
            frame, label = synthetic_interactions(args.seed), "synthetic"
    summary = run(args.out, quick=args.quick, seed=args.seed, epsilons=args.epsilons,
                  reps=args.reps, k=args.k, frame=frame, label=label)
    with pd.option_context("display.width", 200, "display.max_rows", 200,
                           "display.float_format", "{:.4f}".format):
        print(summary[["model", "epsilon", "recall", "recall_sd", "ndcg", "ndcg_sd",
                       "fit_time", "recommend_time", "guarantee"]].to_string(index=False))
    print(f"wrote {Path(args.out).resolve()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
