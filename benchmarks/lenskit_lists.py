"""Top-10 lists of LensKit's explicit item kNN (``ItemKNNScorer`` at its defaults) on a
ratings file, for ``bench_topn_defaults.py``; runs in LensKit's own environment (no
dprec, no Surprise).

Reads ``u1.base`` (tab-separated user, item, rating, time) from ``argv[1]`` and a JSON
list of users on stdin; prints a JSON list of ``[user, rank, item]`` rows: LensKit's
``topn_pipeline`` (candidates: every training item the user did not rate; items the
scorer cannot score are dropped), as ``bench_topn.py --others`` runs it.
Run: ``python lenskit_lists.py PATH/u1.base < users.json``.
"""

from __future__ import annotations

import json
import sys

import pandas as pd
from lenskit.batch import recommend
from lenskit.data import from_interactions_df
from lenskit.knn import ItemKNNScorer
from lenskit.pipeline import topn_pipeline


def main() -> None:
    frame = pd.read_csv(sys.argv[1], sep="\t", names=["user", "item", "rating", "time"],
                        dtype={"user": str, "item": str})
    users = json.load(sys.stdin)
    data = from_interactions_df(frame.drop(columns="time"), user_col="user",
                                item_col="item", rating_col="rating")
    pipe = topn_pipeline(ItemKNNScorer, {}, n=10)
    pipe.train(data)
    lists = recommend(pipe, users, n=10, n_jobs=1)
    json.dump([[key.user_id, rank, iid] for key, items in lists
               for rank, iid in enumerate(items.ids().tolist(), 1)], sys.stdout)


if __name__ == "__main__":
    main()
