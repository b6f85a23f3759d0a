"""Implicit-feedback kNN on Last.fm: recall@10 and NDCG@10 against ε, private models
against private popularity.

The setting of Aumüller, Bourgeat & Schmurr (SISAP 2020) run end to end: each user
releases a locally private MinHash sketch of their set of artists, or the set itself by
randomised response, and the server recommends with
[`ImplicitKNN`][dprec.implicit.knn.ImplicitKNN] (LensKit's implicit kNN: sums of
similarities); the yardstick is the popularity released with differential privacy.

Data: HetRec 2011 Last.fm ``user_artists.dat``, each listened artist an interaction
(play counts ignored); a seeded per-user hold-out of ``round(0.2 n)`` of each user's
``n`` artists (at least one when ``n >= 3``, none for ``n < 3``).  Every user with a
held-out artist gets a top-10 list of the artists they did not listen to in training,
scored with [`dprec.evaluation.metrics`][] against their held-out artists (binary relevance):
precision@10, recall@10 and NDCG@10, means over those users (a user with no list counts
0).  ``--quick`` runs on synthetic sets (clusters of taste plus popularity) in seconds.

Models, at ``k = 20`` (LensKit's default) for the non-private ones:

* ``popularity``: the artists with the most listeners in training;
* ``item-kNN cosine``, ``user-kNN cosine``, ``user-kNN jaccard``: exact, not private;
* ``user-kNN minhash``: Jaccard estimated from non-private MinHash sketches (what the
  sketches lose before any noise);
* ``user-kNN rr_minhash`` and ``user-kNN noisy_minhash`` at each ε: each user's ε-LDP
  sketch chooses the neighbours; the scores read the neighbours' raw sets (the privacy
  report: *in part*);
* ``private popularity (per user)`` at each ε: [`PrivatePopularity`][dprec.PrivatePopularity],
  the counts of the sets capped at ``CAP`` = 40 artists plus discrete Laplace noise, ε
  per user (central);
* ``private popularity (reports)`` at each ε: the same counts from each user's set
  released by randomised response on every artist ([`dprec.implicit.set_reports`][]), ε per item
  of a set (local);
* ``released sets`` at each ε: [`ImplicitKNN`][dprec.implicit.knn.ImplicitKNN] with
  ``set_epsilon`` = ε: those reports, the neighbours chosen by the overlap of the user's
  own set with the others' reports, the scores the neighbours' share shrunk towards the
  private popularity (``prior_sd`` 0.05);
* ``released sets, sketches`` at each ε: ε/2 for an RR-MinHash sketch that chooses the
  neighbours, ε/2 for the reports.

The private models that hold are given the public catalogues: ``items=`` the artists of
``artists.dat`` (published metadata: an artist's name and page, not anyone's listening)
and ``users=`` the users (who is enrolled, as the end-to-end experiments take it), so
their guarantee covers every user; ``outside`` says how many users their report leaves
out on the data (``--no-catalogue``: the lists read from the data).

``k`` of the private models: ``--private-k rule`` (default) takes
``max(k, ⌈V / TOLERANCE²⌉)`` neighbours, ``V`` the variance of one neighbour's noise
relative to its signal (a public function of ε: the reports' $q(1 - q)/(1 - 2q)^2$; for
the sketches ``(estimate_sd / 0.1)²``) and ``TOLERANCE`` = 0.05 (chosen with
``prior_sd`` on the synthetic sets, not on Last.fm: `tuning`, ``--tune``): every private
sketch then sums all the holders.  ``--private-k k`` gives them ``k``,
``--private-k all`` every user.

The sketches: δ = 1e-4, one item of a set (α = 1), public τ = 20 (users with fewer
training artists release no sketch and get no list: ``small_users="exclude"``), and
``width`` 16 hashes of ``B = 2`` buckets: the width whose RR-MinHash estimate of a
Jaccard of 0.1 has the smallest standard deviation at τ = 20 and ε = 8 (a public
computation, `estimate_sd`: 0.43 at width 16, 0.52 at 32, 0.99 at 128; each hash's
budget ε/⌈L⌉ shrinks as the width grows).  Noise varies with ``--reps`` seeds (the hash functions
and MinHash too); the split is ``--seed``'s.  ``guarantee`` is what each model's privacy
report says when fitted with fresh noise (on public synthetic data; a seeded run is void).

Writes ``implicit.csv`` (one row per model, ε and seed, with fit and recommend times,
``k``, the guarantee's unit and ``outside``), ``summary.csv`` (means and standard
deviations over seeds) and ``implicit.png`` under ``--out`` (default
``results/implicit``; ``--tune``: ``tuning.csv`` only):

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

from dprec import datasets, evaluation
from dprec.accountant.ledger import Unit
from dprec.evaluation.metrics import ndcg_at_k, precision_at_k, recall_at_k
from dprec.experiments._options import (
    EPSILON,
    POSITIVE_INT,
    existing_path,
    experiment_parser,
    run_folder,
)
from dprec.experiments.hyperparameters import guarantee_label
from dprec.implicit.knn import ImplicitKNN
from dprec.implicit.popularity import PrivatePopularity
from dprec.implicit.set_reports import noise_variance
from dprec.similarity import RRMinHash
from dprec.utils._plotting import save, subplots

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
RELEASED_SKETCHES = "released sets, sketches"
POPULARITY_USER = "private popularity (per user)"
POPULARITY_REPORTS = "private popularity (reports)"
#: the private models whose guarantee holds (given the public catalogues)
HOLDS = (POPULARITY_USER, POPULARITY_REPORTS, RELEASED, RELEASED_SKETCHES)
#: the noise a neighbour may carry, relative to its signal, in the rule for k (chosen
#: with ``prior_sd`` on the synthetic sets)
TOLERANCE = 0.05
#: the Jaccard of reference of the sketches' noise (`estimate_sd`'s default)
REFERENCE_JACCARD = 0.1
#: HetRec keeps each user's 50 most-listened artists: at most 50 - round(0.2 · 50) = 40
#: stay in training (the cap of ``private popularity (per user)``)
LASTFM_CAP = 40
#: the synthetic sets' 30 items per user, less round(0.2 · 30) = 6 held out
SYNTHETIC_CAP = 24
#: how the private models' k is chosen (``--private-k``)
PRIVATE_K = ("rule", "k", "all")


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
    at random (seeded), none for a user where that is 0 (a pair listed twice counts
    once; [`dprec.evaluation.holdout_split`][])."""
    return evaluation.holdout_split(frame.drop_duplicates(["user", "item"]), share, seed)


def lastfm_catalogue(path: str | os.PathLike | None = None) -> list[str]:
    """The artist ids of HetRec Last.fm's ``artists.dat`` (next to ``user_artists.dat``):
    published metadata (an artist's name and page), the public item catalogue."""
    file = datasets.find_lastfm(path).parent / "artists.dat"
    if not file.is_file():
        raise datasets.DatasetUnavailable(f"no artist catalogue at {file}")
    return pd.read_csv(file, sep="\t", dtype=str, usecols=[0], encoding="utf-8",
                       quoting=3).iloc[:, 0].str.strip().tolist()


def lastfm_lists(frame: pd.DataFrame, path: str | os.PathLike | None = None
                 ) -> tuple[list, list] | None:
    """The public ``(users, items)`` of Last.fm: its users (who is enrolled) and the
    artists of ``artists.dat``; None, saying so, when there is no ``artists.dat``."""
    try:
        return sorted(set(frame["user"])), lastfm_catalogue(path)
    except datasets.DatasetUnavailable as error:
        print(f"{error}: the lists are read from the data", file=sys.stderr)
        return None


def synthetic_lists(n_users: int = 300, n_items: int = 400) -> tuple[list, list]:
    """The users and items `synthetic_interactions` names (public by construction)."""
    return [f"u{u}" for u in range(n_users)], [f"i{i}" for i in range(n_items)]


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


def neighbour_noise(label: str, epsilon: float) -> float:
    r"""The variance of one neighbour's noise relative to its signal, a public function of
    ε: the reports' $q (1 - q)/(1 - 2q)^2$ ([`dprec.implicit.set_reports.noise_variance`][]), the
    sketches' `(estimate_sd / REFERENCE_JACCARD)²` (RR-MinHash's, for both sketches), the
    larger of the two for ``released sets, sketches`` (ε/2 each)."""
    if label == RELEASED:
        return noise_variance(epsilon)
    if label == RELEASED_SKETCHES:
        sketch = (estimate_sd(SKETCH["width"], SKETCH["B"], epsilon / 2, SKETCH["tau"])
                  / REFERENCE_JACCARD) ** 2
        return max(noise_variance(epsilon / 2), sketch)
    return (estimate_sd(SKETCH["width"], SKETCH["B"], epsilon, SKETCH["tau"])
            / REFERENCE_JACCARD) ** 2


def private_k(label: str, epsilon: float, k: int, n_users: int, rule: str = "rule") -> int:
    """The k of a private kNN model: ``k`` (``rule="k"``), every user (``"all"``), or
    ``max(k, ⌈V / TOLERANCE²⌉)`` with V = `neighbour_noise` (``"rule"``), at most
    ``n_users``: enough neighbours to average their noise down to TOLERANCE."""
    if rule == "k":
        return k
    if rule == "all":
        return n_users
    return int(min(max(k, math.ceil(neighbour_noise(label, epsilon) / TOLERANCE**2)),
                   max(n_users, k)))


def make_model(label: str, epsilon: float | None, seed: int | None, k: int = 20,
               lists: tuple[list, list] | None = None, cap: int = LASTFM_CAP,
               k_private: int | None = None):
    """The unfitted model of a row (``popularity`` is not one: None).  ``lists``:
    the public ``(users, items)`` of the models that hold; ``k_private``: their k and the
    sketches' (default ``k``)."""
    users, items = (None, None) if lists is None else lists
    k_private = k if k_private is None else k_private
    if label == "popularity":
        return None
    if label in EXACT:
        return ImplicitKNN(k=k, sim_options=EXACT[label])
    if label == "user-kNN minhash":
        options = {key: value for key, value in SKETCH.items()
                   if key in ("width", "B")}
        return ImplicitKNN(k=k, sim_options={"name": "minhash", **options},
                           random_state=seed)
    if label == POPULARITY_USER:
        return PrivatePopularity(epsilon, cap=cap, users=users, items=items,
                                 random_state=seed)
    if label == POPULARITY_REPORTS:
        return PrivatePopularity(epsilon, mechanism="reports", users=users, items=items,
                                 random_state=seed)
    if label == RELEASED:
        return ImplicitKNN(k=k_private, set_epsilon=epsilon, users=users, items=items,
                           random_state=seed)
    if label == RELEASED_SKETCHES:
        return ImplicitKNN(k=k_private, sim_options={"name": "rr_minhash",
                                                     "epsilon": epsilon / 2, **SKETCH},
                           set_epsilon=epsilon / 2, users=users, items=items,
                           random_state=seed)
    return ImplicitKNN(k=k_private, sim_options={"name": label.split()[-1],
                                                 "epsilon": epsilon, **SKETCH},
                       random_state=seed)


def configurations(epsilons: Sequence[float], reps: int) -> list[tuple[str, float | None, int]]:
    """``(label, ε, rep)`` of every run: the deterministic models once, the others per seed."""
    runs = [("popularity", None, 0), *((label, None, 0) for label in EXACT)]
    for rep in range(reps):
        runs.append(("user-kNN minhash", None, rep))
        for epsilon in epsilons:
            runs += [(f"user-kNN {name}", epsilon, rep) for name in PRIVATE]
            runs += [(label, epsilon, rep) for label in HOLDS]
    return runs


def scope(model, label: str) -> tuple[str, float]:
    """The unit of a model's guarantee and how many users its report leaves outside it on
    the data (NaN for the models without a guarantee)."""
    if label not in HOLDS:
        return "", math.nan
    report = model.privacy_report()
    unit = Unit.USER if label == POPULARITY_USER else Unit.SET_ITEM
    return ("user" if unit is Unit.USER else "item of a set",
            float(len(report.out_of_scope_users(unit))))


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
                model = make_model(label, 1.0, None, k, cap=SYNTHETIC_CAP).fit(public)
            out[label] = guarantee_label(model)
    return out


def scores(top: pd.DataFrame, testset: list) -> dict[str, float]:
    """precision@10, recall@10 and NDCG@10 of the lists against the held-out pairs."""
    return {"precision": precision_at_k(top, N, threshold=None, testset=testset),
            "recall": recall_at_k(top, N, threshold=None, testset=testset),
            "ndcg": ndcg_at_k(top, N, testset=testset)}


def evaluate(frame: pd.DataFrame, label: str = "synthetic", epsilons: Sequence[float] = EPSILONS,
             reps: int = 3, seed: int = 0, k: int = 20, verbose: bool = True,
             lists: tuple[list, list] | None = None, cap: int = LASTFM_CAP,
             private: str = "rule") -> pd.DataFrame:
    """One row per run of `configurations` on `frame`'s interactions (see the module
    docstring): ``lists`` the public ``(users, items)``, ``cap`` the per-user popularity's,
    ``private`` the rule of the private models' k (`private_k`)."""
    train, test = holdout_split(frame, seed=seed)
    trainset = trainset_of(train)
    known = set(train["user"])
    test = test[test["user"].isin(known)]
    testset = [(u, i, 1.0) for u, i in zip(test["user"], test["item"])]
    uids = list(dict.fromkeys(test["user"]))
    runs = configurations(epsilons, reps)
    guarantee = guarantee_labels(list(dict.fromkeys(run[0] for run in runs)), k)
    n_users = len(lists[0]) if lists is not None else trainset.n_users
    if verbose:
        print(f"{label}: {trainset.n_users} users, {trainset.n_items} items, "
              f"{trainset.n_ratings} training and {len(testset)} held-out interactions, "
              f"{len(uids)} users scored"
              + ("" if lists is None else f"; public lists of {len(lists[0])} users and "
                                          f"{len(lists[1])} items"), flush=True)
    rows = []
    for model_label, epsilon, rep in runs:
        k_private = None if epsilon is None else private_k(model_label, epsilon, k, n_users,
                                                           private)
        start = time.perf_counter()
        model = make_model(model_label, epsilon, seed * 1000 + rep, k, lists, cap, k_private)
        if model is not None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")      # the small users excluded: said above
                model.fit(trainset)
        fitted = time.perf_counter()
        top = (popularity_lists(trainset, uids) if model is None
               else model.recommend_batch(uids, N))
        done = time.perf_counter()
        unit, outside = scope(model, model_label)
        uses_k = model_label.startswith(("user-kNN rr", "user-kNN noisy", "released"))
        row = {"dataset": label, "model": model_label, "epsilon": epsilon, "rep": rep,
               **scores(top, testset), "fit_time": fitted - start,
               "recommend_time": done - fitted, "guarantee": guarantee[model_label],
               "unit": unit, "outside": outside,
               "k": float(k_private if uses_k else k) if model_label not in (
                   "popularity", POPULARITY_USER, POPULARITY_REPORTS) else math.nan}
        rows.append(row)
        if verbose:
            eps = "" if epsilon is None else f" ε={epsilon:g}"
            print(f"  {model_label}{eps} (seed {rep}): recall@10 {row['recall']:.4f}, "
                  f"NDCG@10 {row['ndcg']:.4f}, fit {row['fit_time']:.1f} s, recommend "
                  f"{row['recommend_time']:.1f} s", flush=True)
    return pd.DataFrame(rows)


def tuning(tolerances: Sequence[float] = (0.03, 0.05, 0.1),
           prior_sds: Sequence[float | None] = (None, 0.0173, 0.0316, 0.05, 0.0548, 0.1,
                                                0.173, 0.316),
           epsilons: Sequence[float] = EPSILONS, reps: int = 4, seed: int = 0,
           verbose: bool = True) -> pd.DataFrame:
    """Mean recall@10 of ``released sets`` on the synthetic sets (public data only) for
    each tolerance of the rule for k and each ``prior_sd``, with the private
    popularity of the same reports: how TOLERANCE and the default ``prior_sd`` were
    chosen (``--tune``)."""
    train, test = holdout_split(synthetic_interactions(seed), seed=seed)
    trainset, lists = trainset_of(train), synthetic_lists()
    testset = [(u, i, 1.0) for u, i in zip(test["user"], test["item"])]
    uids = list(dict.fromkeys(test["user"]))
    rows = []
    for epsilon in epsilons:
        for rep in range(reps):
            popularity = make_model(POPULARITY_REPORTS, epsilon, rep, lists=lists).fit(trainset)
            rows.append({"epsilon": epsilon, "rep": rep, "tolerance": math.nan,
                         "prior_sd": math.nan, "recall": scores(
                             popularity.recommend_batch(uids, N), testset)["recall"]})
            for tolerance in tolerances:
                k = int(min(max(20, math.ceil(noise_variance(epsilon) / tolerance**2)),
                            len(lists[0])))
                for prior_sd in prior_sds:
                    model = ImplicitKNN(k=k, set_epsilon=epsilon, prior_sd=prior_sd,
                                        users=lists[0], items=lists[1], random_state=rep)
                    top = model.fit(trainset).recommend_batch(uids, N)
                    rows.append({"epsilon": epsilon, "rep": rep, "tolerance": tolerance,
                                 "prior_sd": math.inf if prior_sd is None else prior_sd,
                                 "recall": scores(top, testset)["recall"]})
        if verbose:
            print(f"  tuning: ε={epsilon:g} done", flush=True)
    table = pd.DataFrame(rows).groupby(["tolerance", "prior_sd", "epsilon"], dropna=False)
    return table["recall"].mean().unstack("epsilon").assign(
        mean=lambda frame: frame.mean(axis=1)).reset_index()


def summarise(table: pd.DataFrame) -> pd.DataFrame:
    """Means and standard deviations over the seeds, per model and ε."""
    keys = ["dataset", "model", "epsilon", "guarantee", "unit"]
    metrics = ["precision", "recall", "ndcg", "fit_time", "recommend_time", "outside", "k"]
    grouped = table.groupby(keys, dropna=False, sort=False)
    out = grouped[metrics].mean()
    for metric in ("recall", "ndcg"):
        out[f"{metric}_sd"] = grouped[metric].std(ddof=1).fillna(0.0)
    out["reps"] = grouped.size()
    return out.reset_index()


def _legend(model: str, row: pd.Series) -> str:
    """A private model's legend: its guarantee, and ε per user where it is (not per item
    of a set)."""
    per_user = ", ε per user" if row["unit"] == "user" and "per user" not in model else ""
    return f"{model}: {row['guarantee']}{per_user}"


#: colour and line style of the non-private models' horizontal lines
FLAT_STYLES = (("black", "--"), ("0.35", ":"), ("0.5", "-."), ("0.65", ":"),
               ("tab:brown", "--"))


def plot(summary: pd.DataFrame, path: Path) -> None:
    """recall@10 and NDCG@10 against ε: the private models as lines (± one sd over the
    seeds), the non-private ones as horizontal lines."""
    from matplotlib.ticker import NullLocator

    fig, axes = subplots(1, 2, figsize=(11, 6.4))
    private = summary.dropna(subset=["epsilon"])
    flat = summary[summary["epsilon"].isna()]
    epsilons = sorted(private["epsilon"].unique())
    for ax, metric, title in zip(axes, ("recall", "ndcg"), ("recall@10", "NDCG@10")):
        for model, line in private.groupby("model", sort=False):
            ax.errorbar(line["epsilon"], line[metric], yerr=line[f"{metric}_sd"],
                        marker="o", capsize=3, label=_legend(model, line.iloc[0]))
        for n, (_, row) in enumerate(flat.iterrows()):
            ax.axhline(row[metric], color=FLAT_STYLES[n % len(FLAT_STYLES)][0],
                       ls=FLAT_STYLES[n % len(FLAT_STYLES)][1], lw=1.2,
                       label=f"{row['model']}: not private")
        ax.set(xscale="log", xlabel="ε per item of a set; per user for 'per user'",
               ylabel=title,
               title=f"{summary['dataset'].iloc[0]}: {title}")
        ax.set_xticks(epsilons, [f"{e:g}" for e in epsilons])
        ax.xaxis.set_minor_locator(NullLocator())
        ax.grid(alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=2)
    save(fig, path)


# ------------------------------------------------------------------ entry points
def run(out: str | os.PathLike | None = None, quick: bool = False, seed: int = 0,
        epsilons: Sequence[float] | None = None, reps: int | None = None,
        k: int = 20, frame: pd.DataFrame | None = None, label: str | None = None,
        verbose: bool = True, lists: tuple[list, list] | None = None,
        cap: int | None = None, private: str = "rule") -> pd.DataFrame:
    """Run the experiment and write its files; returns the summary.

    ``frame``: the interactions (``user``, ``item``; default Last.fm with its artist
    catalogue, or the synthetic sets with theirs when ``quick``).  ``lists``: the public
    ``(users, items)`` (default with ``frame``: None, the lists read from the data).
    ``cap``: the per-user popularity's (default 40, Last.fm's; 24 for the synthetic
    sets).  ``quick``: ε ∈ {1, 8}, one seed, synthetic sets.  ``out``: the folder
    written (default ``results/implicit``; ``results/quick/implicit`` when ``quick``).
    """
    out = run_folder(out, "results/implicit", quick)
    out.mkdir(parents=True, exist_ok=True)
    if frame is None:
        if quick:
            frame, label, lists = synthetic_interactions(seed), "synthetic (quick)", \
                synthetic_lists()
        else:
            frame, label = lastfm_interactions(), "HetRec 2011 Last.fm"
            lists = lastfm_lists(frame)
    if cap is None:
        cap = LASTFM_CAP if label == "HetRec 2011 Last.fm" else SYNTHETIC_CAP
    epsilons = epsilons or ((1.0, 8.0) if quick else EPSILONS)
    table = evaluate(frame, label or "interactions", epsilons, reps or (1 if quick else 3),
                     seed, k, verbose, lists, cap, private)
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
                        help="similarities summed per score by the non-private models, and "
                             "the least k of the private ones (default 20, LensKit's)")
    parser.add_argument("--private-k", choices=PRIVATE_K, default="rule",
                        help="the private models' k: rule (default: enough neighbours to "
                             "average their noise down, a public function of ε), k (--k), "
                             "all (every user)")
    parser.add_argument("--tune", action="store_true",
                        help="only the grid that chose the rule's tolerance and prior_sd, "
                             "on the synthetic sets: writes tuning.csv")
    parser.add_argument("--no-catalogue", action="store_true",
                        help="read the user and item lists from the data instead of the "
                             "public catalogues (Last.fm's artists.dat; the synthetic ids)")
    args = parser.parse_args(argv)
    if args.tune:
        grid = tuning(seed=args.seed)
        out = run_folder(args.out, "results/implicit", args.quick)
        out.mkdir(parents=True, exist_ok=True)
        grid.to_csv(out / "tuning.csv", index=False)
        with pd.option_context("display.width", 200, "display.float_format",
                               "{:.4f}".format):
            print(grid.to_string(index=False))
        return 0
    frame, label, lists = None, None, None
    if args.dataset == "synthetic":
        frame, label = synthetic_interactions(args.seed), "synthetic"
        lists = synthetic_lists()
    else:
        try:
            frame, label = lastfm_interactions(args.data_path), "HetRec 2011 Last.fm"
            lists = lastfm_lists(frame, args.data_path)
        except datasets.DatasetUnavailable as error:
            if args.dataset != "auto" or args.data_path is not None:
                raise
            print(f"Last.fm could not be loaded: {error}\nFalling back to synthetic sets.",
                  file=sys.stderr)
            frame, label = synthetic_interactions(args.seed), "synthetic"
            lists = synthetic_lists()
    summary = run(args.out, quick=args.quick, seed=args.seed, epsilons=args.epsilons,
                  reps=args.reps, k=args.k, frame=frame, label=label,
                  lists=None if args.no_catalogue else lists, private=args.private_k)
    with pd.option_context("display.width", 200, "display.max_rows", 200,
                           "display.float_format", "{:.4f}".format):
        print(summary[["model", "epsilon", "recall", "recall_sd", "ndcg", "ndcg_sd",
                       "fit_time", "recommend_time", "k", "guarantee", "unit",
                       "outside"]].to_string(index=False))
    print(f"wrote {Path(args.out).resolve()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
