"""Top-N precision@10 of dprec's kNN on MovieLens 100k's u1 split, and of LensKit's and
Cornac's kNN when they are installed: the table of docs/topn.md.

The protocol, the same for every row: fit on ``u1.base``; for each user with at least
one ``u1.test`` rating >= 4, rank every item of ``u1.base`` the user has not rated
there and keep the first 10; precision@10 is the share of them the user rated >= 4 in
``u1.test``, averaged over those users (456; ``dprec.evaluation.metrics.precision_at_k`` with
``threshold=4`` over the lists, all 10 long).  LensKit (lkpy 2025) and Cornac are read
only if importable (``--others``); dprec never needs them.

The ranking's shrinkage λ of the recommended configuration (``RECOMMENDED``) is chosen on
``u1.base`` alone (``dprec.evaluation.choose_ranking_option``: 20 % of each user's
ratings held out, seed 0, relevant = held-out rating >= 4, the best precision@10 over
``LAMBDAS``), then the model is refit on all of ``u1.base`` and scored on ``u1.test``;
the ``u1.test`` precision of every λ is printed beside, as a sensitivity check only.
Run: ``python benchmarks/bench_topn.py [--others] [--no-table]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
from _common import u1_split

from dprec import ImplicitKNN, PrivateKNN, PrivateKNNBaseline, PrivateKNNWithMeans
from dprec.evaluation import choose_ranking_option
from dprec.evaluation.metrics import precision_at_k

#: LensKit's bias model (undamped, items first) as Surprise's ALS baselines
LENSKIT_BIAS = {"method": "als", "n_epochs": 1, "reg_u": 0.0, "reg_i": 0.0}
#: LensKit's explicit kNN defaults: k = 20, s >= 1e-6, min_nbrs = 1, bias fallback
LENSKIT = {"k": 20, "min_sim": 1e-6, "fallback": "baseline", "bsl_options": LENSKIT_BIAS}
COSINE = {"name": "cosine", "user_based": False}
CENTRED = {"name": "centered_cosine", "user_based": False}

#: (row, model); every PrivateKNN row is ranked under each of RANKINGS
MODELS = [
    ("KNNBasic item, cosine, k=40", lambda: PrivateKNN(k=40, sim_options=COSINE)),
    ("KNNWithMeans item, cosine, k=40", lambda: PrivateKNNWithMeans(k=40, sim_options=COSINE)),
    ("KNNBasic item, centered_cosine, k=40",
     lambda: PrivateKNN(k=40, sim_options=CENTRED)),
    ("KNNBasic item, centered_cosine, k=20, min_sim=1e-6",
     lambda: PrivateKNN(k=20, min_sim=1e-6, sim_options=CENTRED)),
    ("KNNWithMeans item, centered_cosine, k=40",
     lambda: PrivateKNNWithMeans(k=40, sim_options=CENTRED)),
    ("LensKit's item kNN: KNNWithMeans item, centered_cosine, LENSKIT",
     lambda: PrivateKNNWithMeans(**LENSKIT, sim_options=CENTRED)),
    ("KNNBaseline item, cosine, k=40", lambda: PrivateKNNBaseline(k=40, sim_options=COSINE)),
    ("KNNBaseline item, centered_cosine, k=40",
     lambda: PrivateKNNBaseline(k=40, sim_options=CENTRED)),
    ("LensKit's user kNN: KNNWithMeans user, centered_cosine, LENSKIT",
     lambda: PrivateKNNWithMeans(**LENSKIT, sim_options={"name": "centered_cosine"})),
]
RANKINGS = {"min_k=0, unshrunk": {"min_k": 0, "neighbour_shrinkage": 0},
            "unshrunk (old default)": {"neighbour_shrinkage": 0},
            "default (λ = 5)": {}, "neighbour_shrinkage=10": {"neighbour_shrinkage": 10},
            "neighbour_shrinkage=inf": {"neighbour_shrinkage": float("inf")}}
#: the configuration docs/topn.md recommends for ranking with ratings; its λ is chosen
RECOMMENDED = ("KNNBaseline item, cosine, k=40",
               lambda: PrivateKNNBaseline(k=40, sim_options=COSINE))
#: the candidate λ of the ranking (``neighbour_shrinkage``)
LAMBDAS = [0, 2, 5, 10, 20, 50, 100, float("inf")]
IMPLICIT = [("ImplicitKNN item, cosine, k=20",
             lambda: ImplicitKNN(k=20, sim_options={"user_based": False})),
            ("ImplicitKNN user, cosine, k=20", lambda: ImplicitKNN(k=20))]


def protocol():
    """``(trainset, uids, testset)``: u1's trainset, its users with a test rating >= 4,
    and u1.test."""
    split = u1_split()
    if split is None:
        raise SystemExit("MovieLens 100k's u1.base/u1.test are not available")
    [(trainset, testset)] = split
    uids = sorted({uid for uid, _, r in testset if r >= 4}, key=int)
    return trainset, uids, testset


def precision(top: pd.DataFrame, uids, testset) -> tuple[float, int]:
    """Precision@10 of the lists, and how many users' lists are shorter than 10."""
    full = int((top.groupby("uid").size() == 10).sum())
    return precision_at_k(top, 10, threshold=4, testset=testset), len(uids) - full


def dprec_rows(trainset, uids, testset) -> None:
    print(f"{'dprec (item-based unless said)':66s} " + " ".join(f"{r:>22s}" for r in RANKINGS))
    for name, make in MODELS:
        start = time.perf_counter()
        algo = make()
        algo.verbose = False
        algo.fit(trainset)
        cells = []
        for options in RANKINGS.values():
            p, short = precision(algo.recommend_batch(uids, 10, **options), uids, testset)
            cells.append(f"{p:.4f}" + (f" ({short} short)" if short else ""))
        print(f"{name:66s} " + " ".join(f"{c:>22s}" for c in cells)
              + f"   [{time.perf_counter() - start:.0f} s]", flush=True)
    for name, make in IMPLICIT:
        p, _ = precision(make().fit(trainset).recommend_batch(uids, 10), uids, testset)
        print(f"{name:66s} {p:22.4f}", flush=True)


def chosen_shrinkage(name, make, trainset, uids, testset, values=LAMBDAS):
    """λ chosen on a hold-out of ``trainset`` alone (``choose_ranking_option``, the seed 0
    and 20 % of each user's ratings), printed with its validation curve beside the
    ``testset`` precision@10 of every λ (the model refit on all of ``trainset``); returns
    ``(λ chosen, its testset precision@10)``."""
    algo = make()
    algo.verbose = False
    best, curve = choose_ranking_option(algo, trainset, "neighbour_shrinkage", values)
    algo.fit(trainset)
    test = [precision(algo.recommend_batch(uids, 10, neighbour_shrinkage=value), uids,
                      testset)[0] for value in values]
    print(f"\n{name}: neighbour_shrinkage chosen on u1.base alone (20 % of each user's "
          f"ratings held out, seed 0): {best:g}")
    print(f"{'λ':>6s} {'validation (u1.base)':>22s} {'u1.test (sensitivity only)':>28s}")
    for value, valid, tested in zip(values, curve.to_numpy(), test):
        mark = "  <- chosen" if value == best else ""
        print(f"{value:6g} {valid:22.4f} {tested:28.4f}{mark}", flush=True)
    return best, test[values.index(best)]


def other_rows(trainset, uids, testset) -> None:
    """LensKit's and Cornac's kNN on the same lists' protocol (when installed)."""
    frame = pd.DataFrame([(trainset.to_raw_uid(u), trainset.to_raw_iid(i), r)
                          for u, i, r in trainset.all_ratings()],
                         columns=["user", "item", "rating"])
    try:
        from lenskit.basic import BiasScorer, PopScorer
        from lenskit.batch import recommend
        from lenskit.data import from_interactions_df
        from lenskit.knn import ItemKNNScorer, UserKNNScorer
        from lenskit.pipeline import topn_pipeline
    except ImportError:
        print("LensKit is not installed")
    else:
        data = from_interactions_df(frame.copy(), user_col="user", item_col="item",
                                    rating_col="rating")
        for name, scorer, config in [
                ("ItemKNNScorer explicit, max_nbrs=20 (default)", ItemKNNScorer, {}),
                ("ItemKNNScorer explicit, max_nbrs=40", ItemKNNScorer, {"max_nbrs": 40}),
                ("ItemKNNScorer implicit, max_nbrs=20", ItemKNNScorer,
                 {"feedback": "implicit"}),
                ("UserKNNScorer explicit, max_nbrs=20", UserKNNScorer, {}),
                ("UserKNNScorer implicit, max_nbrs=20", UserKNNScorer,
                 {"feedback": "implicit"}),
                ("BiasScorer (undamped)", BiasScorer, {}),
                ("BiasScorer damping user 15, item 10", BiasScorer,
                 {"damping": {"user": 15, "item": 10}}),
                ("PopScorer", PopScorer, {})]:
            pipe = topn_pipeline(scorer, config, n=10)
            pipe.train(data)
            lists = recommend(pipe, uids, n=10, n_jobs=1)
            top = pd.DataFrame([(key.user_id, rank, iid) for key, items in lists
                                for rank, iid in enumerate(items.ids(), 1)],
                               columns=["uid", "rank", "iid"])
            p, short = precision(top, uids, testset)
            print(f"LensKit {name:58s} {p:.4f}" + (f" ({short} short)" if short else ""),
                  flush=True)
    try:
        import cornac
        from cornac.models import ItemKNN
    except ImportError:
        print("Cornac is not installed")
        return
    data = cornac.data.Dataset.from_uir(list(frame.itertuples(index=False, name=None)),
                                        seed=0)
    raw = np.array(list(data.iid_map))
    for name, model in [("ItemKNN cosine, k=20 (default)", ItemKNN(k=20, verbose=False)),
                        ("ItemKNN cosine, k=20, mean_centered", ItemKNN(
                            k=20, mean_centered=True, verbose=False))]:
        model.fit(data)
        rows = []
        for uid in uids:
            user = data.uid_map[uid]
            scores = model.score(user).astype(float)
            scores[data.matrix[user].indices] = -np.inf
            best = np.argsort(-scores, kind="stable")[:10]
            rows += [(uid, rank, iid) for rank, iid in enumerate(raw[best], 1)]
        p, _ = precision(pd.DataFrame(rows, columns=["uid", "rank", "iid"]), uids, testset)
        print(f"Cornac {name:59s} {p:.4f}", flush=True)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--others", action="store_true",
                        help="also LensKit's and Cornac's, if installed")
    parser.add_argument("--no-table", action="store_true",
                        help="only the λ chosen on u1.base for the recommended configuration")
    args = parser.parse_args(argv)
    trainset, uids, testset = protocol()
    print(f"u1: {len(uids)} users with a test rating >= 4, {trainset.n_items} items")
    if not args.no_table:
        dprec_rows(trainset, uids, testset)
    chosen_shrinkage(*RECOMMENDED, trainset, uids, testset)
    if args.others:
        other_rows(trainset, uids, testset)


if __name__ == "__main__":
    main()
