r"""The Surprise side of dprec's implicit-feedback models: scores over an item list, for top-N.

[`ImplicitKNN`][dprec.implicit_knn.ImplicitKNN] and
[`PrivatePopularity`][dprec.implicit_popularity.PrivatePopularity] score every item of
their **item list** for a user, whole rows at a time (`score_rows`, which
[`dprec.topn.recommend_batch`][] ranks).  The lists are a
[`RatingSpace`][dprec.rating_space.RatingSpace]'s: the public catalogues `users=` and
`items=` when given, else the trainset's users and items; each sorted by raw id, an order
of the ids alone (Surprise's inner ids follow the data's order, which one removal
changes, and ties would follow it).  `item_list_` holds the raw ids of the columns.

A listed item nobody holds is still scored: with a catalogue, the items of the
recommendations do not depend on which items the data holds.  Listed users without
interactions take part in the releases (their sets are empty) but are not Surprise
users: `score_rows`, `recommend` and `predict` are for the trainset's users.

A score is **not a rating**: `estimate`, `predict` and `test` return it unclipped (the
trainset's rating scale does not apply), 0 where impossible (Surprise's
`was_impossible`).
"""

from __future__ import annotations

import numpy as np
from surprise import AlgoBase, PredictionImpossible
from surprise.prediction_algorithms.predictions import Prediction

from ._surprise import UNKNOWN, cyclic_gc_paused, inner_ids, raw_ids
from .knn.parameters import check_ids
from .private_model import PrivateModel
from .rating_space import RatingSpace
from .topn import recommend_batch

__all__ = ["TOO_FEW", "ImplicitModel"]

#: Surprise's reason for an item scored by fewer than `min_nbrs` similarities
TOO_FEW = "Not enough neighbors."
#: (user, item) scores computed at once
_BLOCK_CELLS = 1 << 20


class ImplicitModel(PrivateModel, AlgoBase):
    """Base of the implicit-feedback models: the lists, and Surprise's API over scores.

    A model builds its [`RatingSpace`][dprec.rating_space.RatingSpace] at `fit`
    (`RatingSpace.build(trainset, self.users, self.items)`), passes it to `_set_space`
    once the fit can no longer fail (after `AlgoBase.fit`), and defines
    `_score_block(rows)`: the scores of listed users (positions in the user list) for
    every listed item, and where they are possible.

    Attributes
    ----------
    item_list_ : tuple
        The raw ids of the items scored, in the order of `score_rows`' columns.
    """

    _space: RatingSpace
    item_list_: tuple

    def _set_space(self, trainset, space: RatingSpace) -> None:
        """Keep the lists of `space` (built from `trainset`) and where each inner id of
        the trainset is listed."""
        self._space = space
        self._user_rows = space.users.positions(raw_ids(trainset))
        self._item_columns = space.items.positions(raw_ids(trainset, users=False))
        self.item_list_ = space.items.ids

    def _score_block(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Scores and where they are possible (bool), `(len(rows), n_listed_items)`."""
        raise NotImplementedError

    # ------------------------------------------------------------ scores
    def score_rows(self, users) -> tuple[np.ndarray, np.ndarray]:
        """Every listed item's score for each of `users` (inner ids of the trainset), and
        where it is possible: both `(len(users), len(item_list_))`, the scores 0 where
        impossible, columns in the order of `item_list_`.  What
        `dprec.topn.recommend_batch` ranks."""
        self._check_fitted()
        users = check_ids(users, "users", self.trainset.n_users)
        block_scores, possible = self._score_block(self._user_rows[users])
        block_scores[~possible] = 0.0
        return block_scores, possible

    def _at(self, users: np.ndarray, columns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Scores and possibility of (inner user, listed item) pairs, a block of users'
        rows at a time."""
        est, possible = np.zeros(len(users)), np.zeros(len(users), dtype=bool)
        unique, inverse = np.unique(users, return_inverse=True)
        n_items = len(self.item_list_)
        size = max(1, _BLOCK_CELLS // max(n_items, 1))
        order = np.argsort(inverse, kind="stable")
        bounds = np.searchsorted(inverse[order], np.arange(0, len(unique) + size, size))
        for n, start in enumerate(range(0, len(unique), size)):
            block_scores, block_possible = self.score_rows(unique[start:start + size])
            where = order[bounds[n]:bounds[n + 1]]
            cells = (inverse[where] - start) * n_items + columns[where]
            est[where] = block_scores.ravel()[cells]
            possible[where] = block_possible.ravel()[cells]
        return est, possible

    def estimate_arrays(self, users, items) -> tuple[np.ndarray, np.ndarray]:
        """Scores for arrays of inner ids (the same numbers as `test` and `score_rows`).

        Returns
        -------
        est : ndarray of float64
            The scores, 0 where impossible.
        possible : ndarray of bool
            False where the model has no score (e.g. fewer than `min_nbrs` similarities).
        """
        self._check_fitted()
        users = check_ids(users, "users", self.trainset.n_users)
        items = check_ids(items, "items", self.trainset.n_items)
        if len(items) != len(users):
            raise ValueError(f"items must have one id per user ({len(users)}), got {len(items)}")
        return self._at(users, self._item_columns[items])

    # ------------------------------------------------------------ Surprise's API
    def estimate(self, u, i):
        """The score of inner item `i` for inner user `u`: `(score, details)`, or
        `PredictionImpossible` (unknown ids, no score)."""
        self._check_fitted()
        if not (self.trainset.knows_user(u) and self.trainset.knows_item(i)):
            raise PredictionImpossible(UNKNOWN)
        est, possible = self.estimate_arrays(np.array([u]), np.array([i]))
        if not possible[0]:
            raise PredictionImpossible(TOO_FEW)
        return float(est[0]), {"was_impossible": False}

    def default_prediction(self) -> float:
        """0: the score of an item nothing speaks for (not the global mean rating)."""
        self._check_fitted()
        return 0.0

    def predict(self, uid, iid, r_ui=None, clip=True, verbose=False) -> Prediction:
        """Surprise's `predict` by raw ids; `clip` has no effect (a score is not a rating,
        the rating scale does not bound it)."""
        self._check_fitted()
        return self.test([(uid, iid, r_ui)], verbose)[0]

    def test(self, testset, verbose: bool = False) -> list[Prediction]:
        """Scores of a whole testset at once (`est` unclipped, 0 where impossible); an
        item of the item list is known even if nobody holds it."""
        self._check_fitted()
        uids, iids, r_uis, users, _ = inner_ids(self.trainset, testset)
        columns = self._space.items.positions(iids)
        known = (users >= 0) & (columns >= 0)
        est, possible = np.zeros(len(uids)), np.zeros(len(uids), dtype=bool)
        est[known], possible[known] = self._at(users[known], columns[known])
        details = [{"was_impossible": False} if ok else
                   {"was_impossible": True, "reason": TOO_FEW if seen else UNKNOWN}
                   for ok, seen in zip(possible.tolist(), known.tolist())]
        with cyclic_gc_paused():
            out = list(map(Prediction, uids, iids, r_uis, est.tolist(), details))
        if verbose:
            for prediction in out:
                print(prediction)
        return out

    def recommend(self, uid, n: int = 10, exclude_rated: bool = True,
                  **options) -> list[tuple]:
        """The top-`n` listed items for raw user id `uid` by score: `[(raw iid, score),
        ...]`, best first, without the user's trainset items
        (`dprec.topn.recommend_batch`; it names any `options`, which this model
        does not take, in a `TypeError`)."""
        self._check_fitted()
        top = recommend_batch(self, [uid], n, exclude_rated, **options)
        return list(zip(top["iid"].tolist(), top["est"].tolist()))

    def recommend_batch(self, uids, n: int = 10, exclude_rated: bool = True, **options):
        """Top-`n` lists of many users, a DataFrame (`uid`, `rank`, `iid`, `est`):
        `dprec.topn.recommend_batch`."""
        self._check_fitted()
        return recommend_batch(self, uids, n, exclude_rated, **options)
