"""Private Jaccard sketches: MAE on synthetic pairs and recall@10 on real data.

Aumüller, Bourgeat & Schmurr, "Differentially Private Sketches for Jaccard
Similarity Estimation", SISAP 2020, §6, with dprec's
[`RRMinHash`][],
[`NoisyMinHash`][] and the non-private
[`MinHash`][] (1-bit MinHash, ``B = 2``, is the
paper's baseline).

(a) Synthetic pairs: two sets of ``τ ∈ {50, 250, 1000}`` items with Jaccard
    ``J ∈ {0.1, 0.5, 0.9}`` (overlap ``round(2τJ/(1+J))``; the MAE is taken
    against the pair's exact J), ``K`` from 10 to 500, ``ε ∈ {2, 4, 6, 8}``,
    ``B ∈ {2, 4}``, ``δ = 1e-4``, ``α = 1``, ``τ`` the public bound, 100
    repetitions with fresh hash functions.  All repetitions are sketched in
    one call: each pair lives on its own block of columns, and fully random
    hash functions restricted to disjoint blocks are independent
    (`disjoint_set_pairs`).  The paper draws
    the sets from a universe of 100000 items; with fully random hash
    functions only the sizes and the overlap matter, so item ids do not
    enter.  For each ``B`` the ``K = 500`` MinHash buckets are computed once
    per block of repetitions and every ``K`` uses their first ``K`` hashes
    (iid, so that is a ``K``-hash sketch); each mechanism then privatises
    them with its own ``ε'`` or ``s`` for that ``K``.
(b) Real data: HetRec Last.fm (each user's 20 most played artists; users with
    at least 20) and MovieLens 100k (items rated ≥ 4; users with at least 50
    such items, the paper's smallest variant; τ = 20 and 50).  50 queries
    among the users whose true 10th nearest neighbour has J ≥ 0.1.
    recall@10 as in ann-benchmarks (Aumüller et al.): the fraction of the 10
    users ranked first by the private estimates whose true similarity is at
    least the query's true 10th-largest (ties in the truth count as hits),
    averaged over queries and repetitions; also the paper's approximate
    similarity ratio (true similarity of the 10 returned / of the true 10).
    Candidates are ranked by the unclipped estimates, ties at random.

Note: where the paper's bound ``L`` on changed coordinates is invalid (small
``Kα/τ``: large sets, few hashes) dprec raises it to the exact binomial
quantile ([`difference_bound`][dprec.similarity.difference_bound]), so the noise
there is larger than in the paper's figures; the ``L`` column says which.

Writes ``mae.csv``, ``mae_rr_minhash.png``, ``mae_noisy_minhash.png``,
``recall.csv`` and ``recall.png`` under ``--out`` (default
``results/sketches``):

    python experiments/jaccard_sketches.py --quick
    python experiments/jaccard_sketches.py
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp
from tqdm import tqdm

from dprec import datasets
from dprec.experiments._options import (
    POSITIVE_INT,
    existing_path,
    experiment_parser,
    run_folder,
)
from dprec.similarity.minhash import (
    MinHash,
    NoisyMinHash,
    RRMinHash,
    difference_bound_paper,
)
from dprec.utils._plotting import save, subplots
from dprec.utils._validation import check_int

TAUS: tuple[int, ...] = (50, 250, 1000)
JACCARDS: tuple[float, ...] = (0.1, 0.5, 0.9)
KS: tuple[int, ...] = (10, 20, 30, 50, 75, 100, 150, 200, 300, 400, 500)
EPSILONS: tuple[float, ...] = (2.0, 4.0, 6.0, 8.0)
BS: tuple[int, ...] = (2, 4)
DELTA = 1e-4
ALPHA = 1
UNIVERSE = 100_000
PRIVATE = (RRMinHash, NoisyMinHash)
#: gathered hash codes per block of repetitions (memory bound of the MinHash pass)
_CELLS = 1 << 24


# ------------------------------------------------------------------ (a) synthetic pairs
def disjoint_set_pairs(n_pairs: int, size: int, overlap: int,
                       size_b: int | None = None) -> sp.csr_matrix:
    r"""``n_pairs`` pairs of sets with a given overlap, each pair on its own items.

    Rows ``2i`` and ``2i + 1`` are ``x_i = {0..size-1}`` and
    ``y_i = {size-overlap .. size-overlap+size_b-1}``, shifted to the block
    of columns ``i·w .. (i+1)·w - 1`` (``w = |x ∪ y|``), so
    ``J(x_i, y_i) = overlap / (size + size_b - overlap)``.  With fully random
    hash functions, the sketch of a pair depends on it only through its
    sizes and overlap, and the orders a uniform permutation induces on
    disjoint blocks are independent: **one** ``sketch`` call then gives every
    pair fresh, independent hash functions (the paper's repetitions).

    Returns
    -------
    scipy.sparse.csr_matrix of int8 ones, shape ``(2 n_pairs, n_pairs · w)``.
    """
    n_pairs = check_int(n_pairs, "n_pairs", minimum=1)
    size = check_int(size, "size", minimum=1)
    size_b = size if size_b is None else check_int(size_b, "size_b", minimum=1)
    overlap = check_int(overlap, "overlap", minimum=0, maximum=min(size, size_b))
    width = size + size_b - overlap
    block = np.arange(width)
    x, y = block[:size], block[size - overlap:]
    offsets = (np.arange(n_pairs) * width)[:, None]
    indices = np.concatenate([x[None, :] + offsets, y[None, :] + offsets], axis=1).ravel()
    indptr = np.zeros(2 * n_pairs + 1, dtype=np.int64)
    indptr[1:] = np.cumsum(np.tile([size, size_b], n_pairs))
    return sp.csr_matrix((np.ones(indices.size, dtype=np.int8), indices, indptr),
                         shape=(2 * n_pairs, n_pairs * width))


def _seed(*parts: float) -> int:
    """A reproducible 63-bit seed from numbers (``hash()`` of strings is salted per process)."""
    words = [int(round(p * 1000)) if p == p else 0 for p in parts]      # NaN -> 0
    return int(np.random.SeedSequence(words).generate_state(1, np.uint64)[0] >> np.uint64(1))


def _pair_buckets(tau: int, overlap: int, B: int, k_max: int, reps: int,
                  seed: int) -> np.ndarray:
    """MinHash buckets ``(2·reps, k_max)`` of ``reps`` pairs, in blocks of repetitions."""
    per_block = max(1, _CELLS // (k_max * (2 * tau - overlap)))
    blocks = []
    for i, start in enumerate(range(0, reps, per_block)):
        X = disjoint_set_pairs(min(per_block, reps - start), tau, overlap)
        blocks.append(MinHash(k_max, B, random_state=_seed(seed, i)).sketch(X).values)
    return np.vstack(blocks)


def _errors(backend, buckets: np.ndarray, truth: float, seed: int) -> np.ndarray:
    S = backend.privatize(buckets, seed)
    return backend.estimate_paired(S[0::2], S[1::2]) - truth


def _row(tau, J, truth, backend, eps, B, K, err) -> dict:
    private = isinstance(backend, PRIVATE)
    L = backend.changed_coordinates() if private else np.nan
    return {
        "tau": tau, "J": J, "J_true": truth, "mechanism": backend.name, "B": B,
        "epsilon": eps, "K": K, "L": L,
        "L_paper": difference_bound_paper(K, B, ALPHA, tau, DELTA) if private else np.nan,
        "epsilon_prime": backend.epsilon_prime() if isinstance(backend, RRMinHash) else np.nan,
        "laplace_scale": backend.scale() if isinstance(backend, NoisyMinHash) else np.nan,
        "mae": float(np.mean(np.abs(err))), "bias": float(np.mean(err)),
        "sd": float(np.std(err, ddof=1)), "reps": len(err),
    }


def mae_table(taus: Sequence[int] = TAUS, jaccards: Sequence[float] = JACCARDS,
              ks: Sequence[int] = KS, epsilons: Sequence[float] = EPSILONS,
              bs: Sequence[int] = BS, reps: int = 100, seed: int = 0,
              verbose: bool = True) -> pd.DataFrame:
    """MAE of every mechanism on ``reps`` pairs per (τ, J, B, K, ε); see the module docstring."""
    rows = []
    k_max = max(ks)
    for ti, tau in enumerate(tqdm(taus, desc="MAE (a)", unit="τ", disable=not verbose)):
        for ji, J in enumerate(jaccards):
            overlap = round(2 * tau * J / (1 + J))
            truth = overlap / (2 * tau - overlap)
            start = time.perf_counter()
            for B in bs:
                cell = 100 * ti + 10 * ji + B
                buckets = _pair_buckets(tau, overlap, B, k_max, reps, _seed(seed, cell))
                for K in ks:
                    plain = MinHash(K, B)
                    rows.append(_row(tau, J, truth, plain, np.nan, B, K,
                                     _errors(plain, buckets[:, :K], truth, 0)))
                    for eps in epsilons:
                        for m, cls in enumerate(PRIVATE):
                            backend = cls(K, B, epsilon=eps, delta=DELTA, tau=tau,
                                          set_difference=ALPHA)
                            noise_seed = _seed(seed, cell, K, eps, m)
                            err = _errors(backend, buckets[:, :K], truth, noise_seed)
                            rows.append(_row(tau, J, truth, backend, eps, B, K, err))
            if verbose:
                tqdm.write(f"  τ={tau:<5} J={J}: {time.perf_counter() - start:.1f} s")
    return pd.DataFrame(rows)


def plot_mae(table: pd.DataFrame, mechanism: str, path: Path) -> None:
    """MAE against K: rows τ, columns J; a line per (ε, B), 1-bit MinHash dashed."""
    import matplotlib

    taus, jaccards = sorted(table.tau.unique()), sorted(table.J.unique())
    fig, axes = subplots(len(taus), len(jaccards), figsize=(4 * len(jaccards),
                             3 * len(taus)), squeeze=False, sharex=True)
    eps_values = sorted(table.epsilon.dropna().unique())
    colours = matplotlib.colormaps["viridis"](np.linspace(0, 0.9, len(eps_values)))
    for i, tau in enumerate(taus):
        for j, J in enumerate(jaccards):
            ax = axes[i][j]
            cell = table[(table.tau == tau) & (table.J == J)]
            for colour, eps in zip(colours, eps_values):
                for B, style in zip(sorted(cell.B.unique()), ("-", ":")):
                    line = cell[(cell.mechanism == mechanism) & (cell.epsilon == eps)
                                & (cell.B == B)]
                    ax.plot(line.K, line.mae, style, color=colour, label=f"ε={eps:g}, B={B}")
            base = cell[(cell.mechanism == "minhash") & (cell.B == 2)]
            ax.plot(base.K, base.mae, "k--", label="1-bit MinHash")
            ax.set_title(f"τ={tau}, J={J}", fontsize=9)
            ax.set_ylim(0, 0.6)
            ax.grid(alpha=0.3)
            if i == len(taus) - 1:
                ax.set_xlabel("K")
            if j == 0:
                ax.set_ylabel("MAE")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=min(len(labels), 5))
    fig.suptitle(f"{mechanism}: MAE of the Jaccard estimate (δ = {DELTA:g}, α = {ALPHA})")
    save(fig, path)


# ------------------------------------------------------------------ (b) real data
def _rows_to_sets(users: np.ndarray, items: np.ndarray) -> sp.csr_matrix:
    """A users × items 0/1 matrix from (user code, item code) pairs."""
    n_users, n_items = int(users.max()) + 1, int(items.max()) + 1
    return sp.csr_matrix((np.ones(len(users), dtype=np.int8), (users, items)),
                         shape=(n_users, n_items))


def lastfm_sets(path: str | os.PathLike | None = None, top: int = 20) -> sp.csr_matrix:
    """Each HetRec Last.fm user's ``top`` most played artists (users with at least ``top``)."""
    raw = datasets.read_lastfm(path).apply(pd.to_numeric)
    raw = raw.sort_values(["userID", "weight", "artistID"], ascending=[True, False, True])
    raw = raw.groupby("userID", sort=False).head(top)
    counts = raw.groupby("userID")["artistID"].transform("size")
    raw = raw[counts >= top]
    users = pd.factorize(raw["userID"])[0]
    items = pd.factorize(raw["artistID"])[0]
    return _rows_to_sets(users, items)


def movielens_sets(path=None, threshold: float = 4.0, min_size: int = 50) -> sp.csr_matrix:
    """MovieLens 100k items rated ``>= threshold``, users with at least ``min_size`` of them."""
    trainset = datasets.load("ml-100k", path=path).build_full_trainset()
    sets = datasets.user_item_matrix(trainset, threshold=threshold)
    return sets[np.diff(sets.indptr) >= min_size]


def exact_jaccard(sets: sp.csr_matrix) -> np.ndarray:
    """All-pairs Jaccard from ``|x ∩ y| = (X Xᵀ)`` and ``|x ∪ y| = |x| + |y| - |x ∩ y|``."""
    X = sets.astype(np.float64)
    inter = (X @ X.T).toarray()
    sizes = np.diff(sets.indptr).astype(np.float64)
    union = sizes[:, None] + sizes[None, :] - inter
    return np.divide(inter, union, out=np.zeros_like(inter), where=union > 0)


def choose_queries(jaccard: np.ndarray, n_queries: int, k: int, min_kth: float,
                   rng: np.random.Generator) -> np.ndarray:
    """``n_queries`` users whose true ``k``-th nearest neighbour has J ≥ ``min_kth``."""
    others = jaccard.copy()
    np.fill_diagonal(others, -np.inf)
    kth = -np.partition(-others, k - 1, axis=1)[:, k - 1]
    eligible = np.flatnonzero(kth >= min_kth)
    return np.sort(rng.choice(eligible, size=min(n_queries, eligible.size), replace=False))


def recall_at_k(estimates: np.ndarray, truth: np.ndarray, queries: np.ndarray, k: int,
                rng: np.random.Generator) -> tuple[float, float]:
    """(recall@k, approximate similarity ratio) of ranking by ``estimates`` (queries × n)."""
    est = estimates.copy()
    est[np.arange(len(queries)), queries] = -np.inf          # never return the query
    true = truth[queries].copy()
    true[np.arange(len(queries)), queries] = -np.inf
    order = np.lexsort((rng.random(est.shape), -est), axis=1)[:, :k]   # ties at random
    kth = -np.partition(-true, k - 1, axis=1)[:, k - 1]
    returned = np.take_along_axis(true, order, axis=1)
    recall = float(np.mean(returned >= kth[:, None] - 1e-12))
    best = -np.sort(-true, axis=1)[:, :k]
    ratio = float(np.mean(returned.sum(axis=1) / best.sum(axis=1)))
    return recall, ratio


def chance_recall(truth: np.ndarray, queries: np.ndarray, k: int) -> float:
    """recall@k of a uniformly random ranking: the share of other users that count as hits."""
    true = truth[queries].copy()
    true[np.arange(len(queries)), queries] = -np.inf
    kth = -np.partition(-true, k - 1, axis=1)[:, k - 1]
    hits = np.sum(true >= kth[:, None] - 1e-12, axis=1)
    return float(np.mean(hits / (truth.shape[0] - 1)))


def recall_table(name: str, sets: sp.csr_matrix, tau: int, ks: Sequence[int],
                 epsilons: Sequence[float], bs: Sequence[int], reps: int, seed: int,
                 n_queries: int = 50, k: int = 10) -> pd.DataFrame:
    """recall@k of every mechanism on one dataset (see the module docstring)."""
    rng = np.random.default_rng(seed)
    truth = exact_jaccard(sets)
    queries = choose_queries(truth, n_queries, k, 0.1, rng)
    chance = chance_recall(truth, queries, k)
    rows = []
    for rep in range(reps):
        for B in bs:
            buckets = MinHash(max(ks), B, random_state=_seed(seed, rep, B)).sketch(sets).values
            for K in ks:
                configs = [(MinHash(K, B), np.nan)] + [
                    (cls(K, B, epsilon=eps, delta=DELTA, tau=tau, set_difference=ALPHA), eps)
                    for eps in epsilons for cls in PRIVATE]
                for m, (backend, eps) in enumerate(configs):
                    S = backend.privatize(buckets[:, :K], _seed(seed, rep, B, K, eps, m))
                    est = backend.estimate(S[queries], S, clip=False)
                    recall, ratio = recall_at_k(est, truth, queries, k, rng)
                    rows.append({"dataset": name, "users": sets.shape[0], "tau": tau,
                                 "queries": len(queries), "mechanism": backend.name, "B": B,
                                 "epsilon": eps, "K": K, "rep": rep, "recall": recall,
                                 "similarity_ratio": ratio, "chance_recall": chance})
    return pd.DataFrame(rows)


#: (b)'s real datasets: `--dataset` name -> (label, reader of the sets, τ)
REAL_DATA = {"lastfm": ("lastfm-top20", lastfm_sets, 20),
             "ml-100k": ("ml-100k-liked", movielens_sets, 50)}


def real_sets(dataset: str = "auto", path: str | os.PathLike | None = None
              ) -> list[tuple[str, sp.csr_matrix, int]]:
    """`(label, sets, τ)` of (b)'s real data, read before any run: `"auto"` both
    datasets, each when a local copy is found (one that is absent is skipped, saying so);
    `"lastfm"` or `"ml-100k"` that one, from `path` when given; `"synthetic"` none.

    Raises
    ------
    DatasetUnavailable
        For a dataset named (not `"auto"`) without a local copy.
    ValueError
        For a file that is not the dataset named (`dprec.datasets.read_lastfm`).
    """
    chosen = {"auto": list(REAL_DATA), "synthetic": []}.get(dataset, [dataset])
    found = []
    for key in chosen:
        label, read, tau = REAL_DATA[key]
        try:
            found.append((label, read(path), tau))
        except datasets.DatasetUnavailable as exc:
            if dataset != "auto":
                raise
            print(f"skipping {label}: {exc}")
    return found


def real_data(ks, epsilons, bs, reps, seed, real: Sequence[tuple[str, sp.csr_matrix, int]],
              verbose=True) -> pd.DataFrame:
    """The recall table of every `(label, sets, τ)` of `real` (`real_sets`)."""
    tables = []
    for name, sets, tau in real:
        start = time.perf_counter()
        tables.append(recall_table(name, sets, tau, ks, epsilons, bs, reps, seed))
        if verbose:
            sizes = np.diff(sets.indptr)
            print(f"  {name}: {sets.shape[0]} users, {sets.shape[1]} items, mean set "
                  f"{sizes.mean():.1f} (sd {sizes.std():.1f}), "
                  f"{time.perf_counter() - start:.1f} s", flush=True)
    if not tables:
        return pd.DataFrame()
    return pd.concat(tables, ignore_index=True)


def summarise_recall(recall: pd.DataFrame) -> pd.DataFrame:
    """Mean recall@10, similarity ratio and chance recall per setting, over the
    repetitions."""
    keys = ["dataset", "users", "tau", "mechanism", "B", "epsilon", "K"]
    values = ["recall", "similarity_ratio", "chance_recall"]
    return recall.groupby(keys, dropna=False)[values].mean().reset_index()


def plot_recall(summary: pd.DataFrame, path: Path) -> None:
    """Recall@10 against ε per dataset and mechanism, written to ``path``."""
    import matplotlib

    names = list(summary.dataset.unique())
    mechanisms = [cls.name for cls in PRIVATE]
    fig, axes = subplots(len(names), len(mechanisms), figsize=(5 * len(mechanisms),
                             3.2 * len(names)), squeeze=False)
    eps_values = sorted(summary.epsilon.dropna().unique())
    colours = matplotlib.colormaps["viridis"](np.linspace(0, 0.9, len(eps_values)))
    for i, name in enumerate(names):
        data = summary[summary.dataset == name]
        for j, mechanism in enumerate(mechanisms):
            ax = axes[i][j]
            for colour, eps in zip(colours, eps_values):
                for B, style in zip(sorted(data.B.unique()), ("-o", ":s")):
                    line = data[(data.mechanism == mechanism) & (data.epsilon == eps)
                                & (data.B == B)]
                    ax.plot(line.K, line.recall, style, color=colour, ms=3,
                            label=f"ε={eps:g}, B={B}")
            base = data[(data.mechanism == "minhash") & (data.B == 2)]
            ax.plot(base.K, base.recall, "k--", label="1-bit MinHash")
            ax.axhline(data.chance_recall.iloc[0], color="grey", ls=":", label="random ranking")
            ax.set_title(f"{name}: {mechanism}", fontsize=9)
            ax.set_ylim(0, 1)
            ax.set_xlabel("K")
            ax.set_ylabel("recall@10")
            ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=6, ncol=2)
    save(fig, path)


# ------------------------------------------------------------------ entry points
def run(out: str | os.PathLike | None = None, quick: bool = False, seed: int = 0,
        reps: int | None = None, real: Sequence[tuple[str, sp.csr_matrix, int]] | None = None,
        verbose: bool = True) -> pd.DataFrame:
    """Run (a) and (b), write the CSVs and figures; return the MAE table of (a).

    ``out``: the folder written (default ``results/sketches``; ``results/quick/sketches`` when
    ``quick``).

    ``real``: (b)'s data, `(label, sets, τ)` (default: `real_sets()`, every real dataset
    that is found).

    ``quick``: τ ∈ {50, 250}, K ∈ {10, 50, 100, 200}, ε ∈ {2, 8}, 30
    repetitions in (a); K ∈ {50, 200}, ε ∈ {4, 8}, B = 2, one repetition in (b).
    """
    out = run_folder(out, "results/sketches", quick)
    out.mkdir(parents=True, exist_ok=True)
    if quick:
        grid = dict(taus=(50, 250), ks=(10, 50, 100, 200), epsilons=(2.0, 8.0),
                    reps=reps or 30)
        grid_b = dict(ks=(50, 200), epsilons=(4.0, 8.0), bs=(2,), reps=1)
    else:
        grid = dict(reps=reps or 100)
        grid_b = dict(ks=(25, 50, 100, 200, 500), epsilons=EPSILONS, bs=BS, reps=5)
    real = real_sets() if real is None else real
    if verbose:
        print("(a) synthetic pairs", flush=True)
    mae = mae_table(seed=seed, verbose=verbose, **grid)
    mae.to_csv(out / "mae.csv", index=False)
    for cls in PRIVATE:
        plot_mae(mae, cls.name, out / f"mae_{cls.name}.png")
    if verbose:
        print("(b) real data", flush=True)
    recall = real_data(seed=seed, real=real, verbose=verbose, **grid_b)
    if len(recall):
        summary = summarise_recall(recall)
        summary.to_csv(out / "recall.csv", index=False)
        plot_recall(summary, out / "recall.png")
    return mae


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> int:
    """The command line of ``dprec sketches``: run the experiment on ``argv`` and write its
    results under ``--out`` (``--help`` for the options)."""
    parser = experiment_parser(prog, __doc__, "results/sketches")
    parser.add_argument("--quick", action="store_true", help="a small fast run")
    parser.add_argument("--reps", type=POSITIVE_INT, default=100, quick=30,
                        help="repetitions in (a) (default 100; quick 30)")
    parser.add_argument("--dataset", choices=("auto", *REAL_DATA, "synthetic"),
                        default="auto",
                        help="the real data of recall@10: auto (default): Last.fm and "
                             "MovieLens 100k, each when a local copy is found (skipped, "
                             "saying so, when not); lastfm or ml-100k: that one only; "
                             "synthetic: the synthetic pairs' MAE only, no real data")
    parser.add_argument("--data-path", type=existing_path, default=None, metavar="PATH",
                        help="where --dataset lastfm or ml-100k is: Last.fm's "
                             "user_artists.dat, MovieLens's u.data, or their folder "
                             "(default: DPREC_LASTFM, SURPRISE_DATA_FOLDER)")
    args = parser.parse_args(argv)
    if args.data_path is not None and args.dataset == "auto":
        parser.error("argument --data-path: the file of one dataset: add --dataset lastfm "
                     "or --dataset ml-100k")
    real = real_sets(args.dataset, args.data_path)     # a wrong file fails here, at once
    mae = run(args.out, quick=args.quick, seed=args.seed, reps=args.reps, real=real)
    view = mae[mae.K.isin([50, 100, 200]) & (mae.tau == mae.tau.max())]
    table = view.pivot_table(index=["mechanism", "B", "epsilon", "J"], columns="K",
                             values="mae", dropna=False).dropna(how="all")
    with pd.option_context("display.width", 200, "display.max_rows", 200,
                           "display.float_format", "{:.3f}".format):
        print(table)
        recall_file = Path(args.out) / "recall.csv"
        if recall_file.is_file():
            print(pd.read_csv(recall_file).to_string(index=False))
    print(f"wrote {Path(args.out).resolve()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
