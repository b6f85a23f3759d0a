"""Plumbing shared by dprec's Surprise algorithms' batched ``test``."""

from __future__ import annotations

import numpy as np
from surprise.prediction_algorithms.predictions import Prediction

#: Surprise's own message for an unknown user or item (``KNNBasic.estimate``)
UNKNOWN = "User and/or item is unknown."


def inner_ids(trainset, testset) -> tuple[tuple, tuple, tuple, np.ndarray, np.ndarray]:
    """``(uids, iids, r_uis, users, items)``: the raw columns of ``testset`` and the
    inner ids of its users and items (``-1`` where the trainset does not know them)."""
    uids, iids, r_uis = zip(*testset)
    to_user, to_item = trainset._raw2inner_id_users, trainset._raw2inner_id_items
    users = np.fromiter((to_user.get(u, -1) for u in uids), np.int64, len(uids))
    items = np.fromiter((to_item.get(i, -1) for i in iids), np.int64, len(iids))
    return uids, iids, r_uis, users, items


def predictions(trainset, uids, iids, r_uis, est: np.ndarray, details: list[dict],
                verbose: bool = False) -> list[Prediction]:
    """Surprise ``Prediction`` tuples, estimates clipped to the rating scale as
    ``AlgoBase.predict`` clips them."""
    low, high = trainset.rating_scale
    est = np.minimum(high, np.maximum(low, est))
    result = list(map(Prediction, uids, iids, r_uis, est.tolist(), details))
    if verbose:
        for prediction in result:
            print(prediction)
    return result
