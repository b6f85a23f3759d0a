"""The default ranking of ``PrivateKNN()`` on MovieLens 100k's u1 split, against LensKit's
item kNN and popularity: the table of docs/topn.md's "The default ranking".

Protocol of ``bench_topn.py`` (fit on ``u1.base``; the 456 users with a ``u1.test``
rating >= 4; every ``u1.base`` item they did not rate there is a candidate; precision@10
of the lists against ``u1.test`` ratings >= 4), and the mean number of ``u1.base`` raters
of the recommended items (their popularity: a list of items rated by one or two users
is one nobody would trust).  Rows:

* ``PrivateKNN()`` (its defaults: user-based MSD, k = 40, the basic rule) ranked as
  before (``neighbour_shrinkage=0``), by its new default
  (``dprec.knn.queries.RANKING_SHRINKAGE``), and under a minimum support (``min_k``);
* the choice of the default's λ on ``u1.base`` alone: the validation curve of
  ``PrivateKNN()`` and of the nine configurations of ``bench_topn.py``
  (``dprec.evaluation.choose_ranking_option``, 20 % of each user's ratings held out,
  seed 0), each divided by its best; the λ of the best mean is the default (a default
  serves every configuration: the largest λ suit ``PrivateKNN()`` and ruin the basic
  rule item-based, whose offset is the item mean);
* LensKit's ``ItemKNNScorer`` at its defaults (``lenskit_lists.py``, run by
  ``--lenskit-python``, LensKit's own interpreter);
* popularity: the most rated ``u1.base`` items the user did not rate (ties by raw id).

Run: ``python bench_topn_defaults.py [--lenskit-python PATH] [--write ../docs/topn.md]``;
``--write`` replaces the text between the page's ``<!-- topn-defaults -->`` markers.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from _common import u1_split
from bench_topn import MODELS, precision, protocol
from surprise.builtin_datasets import get_dataset_dir

from dprec import PrivateKNN
from dprec.evaluation import choose_ranking_option
from dprec.knn.queries import RANKING_SHRINKAGE

#: the λ candidates of the default's choice, on u1.base alone
LAMBDAS = [2, 5, 10, 20, 50, 100]
#: the configurations the default is chosen for: PrivateKNN()'s and bench_topn's
CONFIGURATIONS = [("`PrivateKNN()`", PrivateKNN), *MODELS]
MARKERS = ("<!-- topn-defaults:start -->", "<!-- topn-defaults:end -->")


def popularity(trainset, uids) -> pd.DataFrame:
    """The 10 most rated training items each user did not rate (ties by raw id)."""
    counts = pd.Series({trainset.to_raw_iid(i): len(r) for i, r in trainset.ir.items()})
    order = counts.sort_index(key=lambda ids: ids.astype(int)).sort_values(
        ascending=False, kind="stable").index
    rows = []
    for uid in uids:
        rated = {trainset.to_raw_iid(i) for i, _ in trainset.ur[trainset.to_inner_uid(uid)]}
        best = [iid for iid in order if iid not in rated][:10]
        rows += [(uid, rank, iid) for rank, iid in enumerate(best, 1)]
    return pd.DataFrame(rows, columns=["uid", "rank", "iid"])


def lenskit(python: str, uids) -> pd.DataFrame:
    """LensKit's item kNN lists, from its own interpreter."""
    folder = Path(get_dataset_dir()) / "ml-100k" / "ml-100k"
    script = Path(__file__).with_name("lenskit_lists.py")
    out = subprocess.run([python, str(script), str(folder / "u1.base")], input=json.dumps(uids),
                         capture_output=True, text=True, check=True).stdout
    return pd.DataFrame(json.loads(out), columns=["uid", "rank", "iid"])


def row(name: str, top: pd.DataFrame, uids, testset, raters: pd.Series) -> str:
    p, short = precision(top, uids, testset)
    counts = top["iid"].map(raters)
    note = f" ({short} lists short)" if short else ""
    return (f"| {name} | {p:.4f}{note} | {counts.mean():.1f} | {counts.median():.0f} | "
            f"{(counts <= 3).mean():.1%} |")


def choice(trainset) -> tuple[float, list[str]]:
    """The λ of the best mean validation precision relative to each configuration's best
    (``u1.base`` alone), and the table of the curves."""
    lines = ["| configuration (item-based unless said) | " + " | ".join(
        f"λ = {v:g}" for v in LAMBDAS) + " |", "| --- |" + " ---: |" * len(LAMBDAS)]
    relative = []
    for name, make in CONFIGURATIONS:
        algo = make()
        algo.verbose = False
        _, curve = choose_ranking_option(algo, trainset, "neighbour_shrinkage", LAMBDAS)
        values = curve.to_numpy()
        relative.append(values / values.max())
        lines.append(f"| {name} | " + " | ".join(f"{v:.4f}" for v in values) + " |")
    mean = np.mean(relative, axis=0)
    lines.append("| **mean relative to each row's best** | " + " | ".join(
        f"**{v:.3f}**" for v in mean) + " |")
    return LAMBDAS[int(np.argmax(mean))], lines


def table(lenskit_python: str | None) -> str:
    trainset, uids, testset = protocol()
    raters = pd.Series({trainset.to_raw_iid(i): len(r) for i, r in trainset.ir.items()})
    algo = PrivateKNN(verbose=False).fit(trainset)
    lines = ["| ranking (u1.test) | precision@10 | mean raters | median raters | "
             "items with ≤ 3 raters |", "| --- | ---: | ---: | ---: | ---: |"]
    for name, options in [
            ("`PrivateKNN()`, old default (`neighbour_shrinkage=0`)", {"neighbour_shrinkage": 0}),
            (f"`PrivateKNN()`, **new default** (λ = {RANKING_SHRINKAGE:g})", {}),
            ("`PrivateKNN()`, `neighbour_shrinkage=10`", {"neighbour_shrinkage": 10}),
            ("`PrivateKNN()`, minimum support `min_k=10`, unshrunk",
             {"min_k": 10, "neighbour_shrinkage": 0})]:
        lines.append(row(name, algo.recommend_batch(uids, 10, **options), uids, testset, raters))
    if lenskit_python:
        lines.append(row("LensKit `ItemKNNScorer` (defaults)", lenskit(lenskit_python, uids),
                         uids, testset, raters))
    lines.append(row("popularity (most rated first)", popularity(trainset, uids), uids, testset,
                     raters))
    chosen, curves = choice(trainset)
    lines += ["", f"The default's λ, chosen on `u1.base` alone (precision@10 on a hold-out of "
              f"20 % of each user's ratings, seed 0): **{chosen:g}**"
              + ("" if chosen == RANKING_SHRINKAGE else
                 f" (the code's RANKING_SHRINKAGE is {RANKING_SHRINKAGE:g}: update it)"), "",
              *curves]
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lenskit-python", help="a Python with LensKit installed")
    parser.add_argument("--write", type=Path, help="the page whose marked table to replace")
    args = parser.parse_args(argv)
    if u1_split() is None:
        sys.exit("MovieLens 100k's u1.base/u1.test are not available")
    text = table(args.lenskit_python)
    print(text)
    if args.write:
        page = args.write.read_text()
        start, end = (page.index(marker) for marker in MARKERS)
        args.write.write_text(page[:start + len(MARKERS[0])] + "\n" + text + "\n" + page[end:])


if __name__ == "__main__":
    main()
