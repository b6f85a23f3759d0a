"""`RatingArrays`' statistics of its rows: computed once, shared, equal to their formulas."""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest
from surprise import Dataset, Reader

from dprec import PrivateKNN
from dprec.utils._ratings import RatingArrays


def ratings():
    """A trainset of 30 users and 12 items, built anew at each call."""
    rng = np.random.default_rng(3)
    cells = rng.choice(30 * 12, size=150, replace=False)
    frame = pd.DataFrame({"user": cells // 12, "item": cells % 12,
                          "rating": rng.integers(1, 6, len(cells)).astype(float)})
    frame.loc[frame.user == frame.user.iloc[0], "rating"] = 4.0   # a user of equal ratings
    data = Dataset.load_from_df(frame, Reader(rating_scale=(1, 5)))
    return data.build_full_trainset()


@pytest.fixture(scope="module")
def trainset():
    return ratings()


@pytest.mark.parametrize("user_based", [True, False])
def test_deviations_are_their_formulas_in_both_orders(trainset, user_based):
    """By row (the matrix) and by column (item-major): r, r - μ_x, (r - μ_x)/σ_x; rows are
    items when not ``user_based``."""
    arrays = RatingArrays.from_trainset(trainset, user_based)
    by = trainset.ur if user_based else trainset.ir
    for x in range(arrays.n_users):
        values = np.array([r for _, r in by[x]])
        assert arrays.user_means()[x] == pytest.approx(values.mean())
        sigma = values.std() if values.std() > 0 else np.std(arrays.matrix.data)
        assert arrays.user_sigmas()[x] == pytest.approx(sigma)
    means, sigmas = arrays.user_means(), arrays.user_sigmas()
    x_of_column = arrays.item_users
    for kind, expected in [("basic", arrays.item_ratings),
                           ("means", arrays.item_ratings - means[x_of_column]),
                           ("zscore", (arrays.item_ratings - means[x_of_column])
                            / sigmas[x_of_column])]:
        matrix, by_column = arrays.deviations(kind)
        np.testing.assert_allclose(by_column, expected, rtol=0, atol=1e-12)
        dense = arrays.matrix.toarray()
        stored = arrays.matrix.toarray() != 0
        want = np.where(stored, dense - (means[:, None] if kind != "basic" else 0), 0.0)
        if kind == "zscore":
            want = np.where(stored, want / sigmas[:, None], 0.0)
        np.testing.assert_allclose(matrix.toarray(), want, rtol=0, atol=1e-12)


def test_statistics_are_computed_once_and_handed_out_safely(trainset):
    """`deviations` returns the same arrays at every call (shared by every fit);
    `user_means` and `user_sigmas` a copy each time, so a caller's write cannot reach
    another fit; an unknown kind names the parameter."""
    arrays = RatingArrays.from_trainset(trainset)
    assert arrays.deviations("means")[1] is arrays.deviations("means")[1]
    means = arrays.user_means()
    means[:] = -1.0
    sigmas = arrays.user_sigmas()
    sigmas[:] = -1.0
    assert (arrays.user_means() > 0).all() and (arrays.user_sigmas() > 0).all()
    with pytest.raises(ValueError, match="kind must be"):
        arrays.deviations("baseline")


def test_a_pickled_model_does_not_carry_other_fits_deviations():
    """Fits of other rules on the same trainset leave a fitted model's pickle as it was
    (the shared cache of deviations is not pickled), and the unpickled model answers
    the same."""
    trainset = ratings()        # its own: no earlier test's deviations cached
    model = PrivateKNN(k=5, prediction="means", verbose=False).fit(trainset)
    alone = pickle.dumps(model)
    for prediction in ("zscore", "basic"):
        PrivateKNN(k=5, prediction=prediction, verbose=False).fit(trainset)
    assert len(pickle.dumps(model)) == len(alone)
    copy = pickle.loads(alone)
    for u, i in [(0, 0), (3, 7), (29, 11)]:
        raw = trainset.to_raw_uid(u), trainset.to_raw_iid(i)
        assert copy.predict(*raw).est == model.predict(*raw).est
