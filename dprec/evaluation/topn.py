"""Top-N recommendation from any fitted Surprise algorithm, dprec's by whole rows.

A user's top-N list ranks every item of the catalogue by its estimate; the
estimates of a block of users × all items are one call of the model's
``estimate_arrays`` (whole item rows at once, no Python loop over items), so
a private model answers, and its accountant charges, them as any other
queries; a model that scores whole rows (`PrivateKNN.score_rows`,
[`ImplicitKNN`][dprec.implicit.knn.ImplicitKNN]'s) is asked for them by its
``score_rows(users, **options)`` instead, which also says which items a list may hold
(`PrivateKNN`: those at least ``min_k`` neighbours support, by default every
estimate but a fallback's).  The columns are the trainset's items in inner order, or
the model's ``item_list_`` where it has one (`ImplicitKNN`, and `DPBaseline` and the
other models of [`dprec.endtoend.rating_space`][]: raw ids, sorted; with a public catalogue,
items nobody rated too; a trainset item the model does not list, e.g. one its partition
selection did not choose, is never recommended).  Items without an estimate
(``was_impossible``) are never recommended, nor, with ``exclude_rated``, those the user
rated in the trainset.  Ties are broken by column order, so the lists are reproducible.

See [Top-N recommendation](../topn.md) for what ranks well, and
[Prediction rules](../prediction_rules.md) for the kNN API.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable

import numpy as np
import pandas as pd
from surprise import PredictionImpossible

from ..utils._arrays import segment_ids, top_mask
from ..utils._ratings import RatingArrays
from ..utils._validation import check_bool, check_int

__all__ = ["Recommender", "check_uids", "recommend_batch"]

#: largest number of (user × item) estimates computed at once
_BLOCK_CELLS = 1 << 20


def recommend_batch(algo, uids: Iterable, n: int = 10, exclude_rated: bool = True,
                    **options) -> pd.DataFrame:
    """The top-``n`` items of each user in ``uids`` (raw ids), by estimate.

    Parameters
    ----------
    algo : fitted Surprise algorithm
        A dprec model ([`dprec.PrivateKNN`][], [`dprec.DPBaseline`][], ...), ranked by
        its ``score_rows(users)`` or ``estimate_arrays(users, items)``, or any other
        Surprise algorithm (``SVD``, ``KNNBasic``, ...), ranked by its unclipped
        ``estimate(u, i)``, one call per item as Surprise's ``test`` makes.
    uids : iterable of raw user ids, known to the trainset
    n : int, default 10
        List length (``>= 1``); shorter when fewer items have an estimate.
    exclude_rated : bool, default True
        Leave out the items the user rated in the trainset.
    **options
        Passed to the model's ``score_rows``: for `PrivateKNN`, ``min_k`` (rank only
        the items at least that many neighbours support) and ``neighbour_shrinkage``
        (rank by the estimate shrunk towards the rule's offset); see
        `PrivateKNN.score_rows`.

    Returns
    -------
    pandas.DataFrame
        Columns ``uid``, ``rank`` (1 = best), ``iid`` (raw ids) and ``est``,
        ``n`` rows per user at most, in the order of ``uids``.
    """
    n = check_int(n, "n", minimum=1)
    exclude_rated = check_bool(exclude_rated, "exclude_rated")
    trainset = getattr(algo, "trainset", None)
    if trainset is None or not any(hasattr(algo, name) for name in (
            "estimate_arrays", "score_rows", "estimate")):
        raise TypeError("algo must be a fitted Surprise algorithm (e.g. PrivateKNN, "
                        f"DPBaseline, SVD), got {type(algo).__name__}"
                        + (" not fitted (no trainset)" if trainset is None else ""))
    uids = check_uids(uids)
    _check_options(algo, options)
    users = np.array([_inner_uid(trainset, uid) for uid in uids], dtype=np.int64)
    rows_model = hasattr(algo, "score_rows")
    item_ids, columns = _item_columns(algo, trainset)
    n_items = len(item_ids)
    rated = RatingArrays.from_trainset(trainset).matrix if exclude_rated else None
    size = max(1, _BLOCK_CELLS // max(n_items, 1))
    frames = []
    for start in range(0, max(len(users), 1), size):   # once with no user: checks options
        block = users[start:start + size]
        if rows_model:
            est, possible = algo.score_rows(block, **options)
        elif not hasattr(algo, "estimate_arrays"):
            est, possible = _surprise_estimates(algo, block, n_items)
        else:
            est, possible = algo.estimate_arrays(np.repeat(block, n_items),
                                                 np.tile(np.arange(n_items), len(block)))
        scores = np.where(possible, est, -np.inf).reshape(len(block), n_items)
        if rated is not None:
            rows = rated[block]
            cells = columns[rows.indices]
            listed = cells >= 0                 # a rated item the model does not list
            scores[segment_ids(np.diff(rows.indptr))[listed],
                   cells[listed]] = -np.inf
        position, rank, item, est = _top(scores, n)
        frames.append((position + start, rank, item, est))
    position, rank, item, est = (np.concatenate(column) for column in zip(*frames))
    return pd.DataFrame({
        "uid": [uids[j] for j in position.tolist()],
        "rank": rank,
        "iid": [item_ids[i] for i in item.tolist()],
        "est": est,
    })


def _surprise_estimates(algo, users: np.ndarray, n_items: int) -> tuple[np.ndarray, np.ndarray]:
    """Every item's unclipped estimate for each of `users` (inner ids) from a Surprise
    algorithm without array queries (`SVD`, `KNNBasic`, ...): one `estimate(u, i)` per
    cell, as Surprise's own `test` makes, and which of them were possible."""
    est = np.zeros(len(users) * n_items)
    possible = np.ones(len(users) * n_items, dtype=bool)
    cell = 0
    for u in users.tolist():
        for i in range(n_items):
            try:
                value = algo.estimate(u, i)
            except PredictionImpossible:
                possible[cell] = False
            else:
                est[cell] = value[0] if isinstance(value, tuple) else value
            cell += 1
    return est, possible


def _check_options(algo, options: dict) -> None:
    """``options`` must be keyword-only parameters of the model's ``score_rows``."""
    if not options:
        return
    scorer = getattr(algo, "score_rows", None)
    accepted = [] if scorer is None else [
        name for name, parameter in inspect.signature(scorer).parameters.items()
        if parameter.kind is parameter.KEYWORD_ONLY]
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        raise TypeError(f"{', '.join(unknown)}: not a ranking option of "
                        f"{type(algo).__name__}, which takes "
                        + (", ".join(accepted) if accepted else "none"))


def check_uids(uids) -> list:
    """``uids`` as a list of raw user ids: an iterable (not a string) of hashable ids.

    Raises
    ------
    TypeError
        Naming ``uids``: a single id (``recommend(uid)`` is for one user), or an id that
        cannot be a raw id (unhashable, e.g. a list).
    """
    if isinstance(uids, (str, bytes)) or not hasattr(uids, "__iter__"):
        raise TypeError(f"uids must be a list of raw user ids (for one user: "
                        f"recommend(uid)), got {type(uids).__name__} {uids!r}")
    uids = list(uids)
    for uid in uids:
        try:
            hash(uid)
        except TypeError:
            raise TypeError(f"uids must hold raw user ids (str, int, ...: hashable), got "
                            f"{type(uid).__name__} {uid!r}; for several users pass one "
                            "flat list") from None
    return uids


def _item_columns(algo, trainset) -> tuple[list, np.ndarray]:
    """The raw ids of the columns ranked, and the column of each inner item id (``-1``
    where the model does not list it): the trainset's items in inner order, or the
    model's ``item_list_``."""
    inner = [trainset.to_raw_iid(i) for i in range(trainset.n_items)]
    if not hasattr(algo, "item_list_"):
        return inner, np.arange(trainset.n_items)
    item_ids = list(algo.item_list_)
    where = {raw: n for n, raw in enumerate(item_ids)}
    return item_ids, np.fromiter((where.get(raw, -1) for raw in inner), np.int64, len(inner))


def _inner_uid(trainset, uid) -> int:
    try:
        return trainset.to_inner_uid(uid)
    except ValueError:
        raise ValueError(f"uids must be users of the trainset, got unknown user {uid!r}") from None


def _top(scores: np.ndarray, n: int) -> tuple[np.ndarray, ...]:
    """Columns ``(position, rank, item, est)`` of the ``n`` best finite scores per row,
    by descending score, ties by item id (`dprec.utils._arrays.top_mask`)."""
    rows, items = np.nonzero(top_mask(scores, n))
    values = scores[rows, items]
    order = np.lexsort((items, -values, rows))
    rows, items, values = rows[order], items[order], values[order]
    rank = np.arange(len(rows)) - np.searchsorted(rows, rows, side="left") + 1
    keep = np.isfinite(values)
    return rows[keep], rank[keep], items[keep], values[keep]


class Recommender:
    """Mixin: `recommend` and `recommend_batch` of a model that
    [`recommend_batch`][dprec.evaluation.topn.recommend_batch] ranks (by its `score_rows` or
    `estimate_arrays`), with `PrivateKNN`'s arguments and outputs.

    A model may define `_listed_estimates(top)`, the lists' `est` column as it answers
    `test` (e.g. clipped to the rating scale) where it ranks by another monotone score
    (an unclipped estimate, a raw score): the order is the score's, ties included.
    """

    def recommend(self, uid, n: int = 10, exclude_rated: bool = True,
                  **options) -> list[tuple]:
        """The top-`n` items for raw user id `uid`: `[(raw iid, est), ...]`, best first
        (`recommend_batch` for one user; it names any `options` the model does not
        take in a `TypeError`)."""
        top = self.recommend_batch([uid], n, exclude_rated, **options)
        return list(zip(top["iid"].tolist(), top["est"].tolist()))

    def recommend_batch(self, uids, n: int = 10, exclude_rated: bool = True,
                        **options) -> pd.DataFrame:
        """Top-`n` lists of many users at once, a DataFrame (`uid`, `rank`, `iid`,
        `est`): [`dprec.evaluation.topn.recommend_batch`][], `est` as `test` answers."""
        self._check_fitted()
        return self._listed_estimates(recommend_batch(self, uids, n, exclude_rated, **options))

    def _listed_estimates(self, top: pd.DataFrame) -> pd.DataFrame:
        """The lists' `est` as `test` answers (here: as ranked)."""
        return top
