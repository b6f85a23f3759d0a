"""Data usage and ReuseKNN's vulnerable users (dprec.audit.data_usage)."""

import numpy as np
import pytest
from scipy import stats

from dprec import PrivateKNN
from dprec.audit.data_usage import data_usage, reuseknn_threshold, vulnerable_share
from dprec.utils._surprise import inner_ids


@pytest.fixture(scope="module")
def split(small_data):
    from surprise.model_selection import train_test_split
    return train_test_split(small_data, test_size=0.25, random_state=0)


@pytest.mark.parametrize("neighbourhood, selector, centered", [
    ("item", "topk", False), ("user", "topk", False), ("item", "ppns", False),
    ("user", "pncf", True)])
def test_usage_adds_up_to_the_contributing_neighbours_of_every_prediction(
        split, neighbourhood, selector, centered):
    """Σ usage = Σ actual_k: every counted neighbour of every answered query, once."""
    trainset, testset = split
    algo = PrivateKNN(k=7, sim_options={"name": "cosine", "min_support": 2}, selector=selector,
                      epsilon=None if selector == "topk" else 1.0, neighbourhood=neighbourhood,
                      centered=centered, random_state=0, verbose=False).fit(trainset)
    *_, users, items = inner_ids(trainset, testset)
    known = (users >= 0) & (items >= 0)
    users, items = users[known], items[known]
    predictions = [p for p, ok in zip(algo.test(testset), known) if ok]
    usage = data_usage(algo, users, items)
    assert usage.shape == (trainset.n_users,) and usage.dtype == np.int64
    assert usage.sum() == sum(p.details.get("actual_k", 0) for p in predictions) > 0
    # the neighbours read with the estimates are the same draws
    _, neighbours = algo.estimate_rules(users, items, [{}], with_neighbours=True)
    np.testing.assert_array_equal(data_usage(algo, users, items, neighbours), usage)
    # λ = ∞ reads no neighbour's rating, unless the neighbours decide whether basic answers
    alone = PrivateKNN(k=7, neighbour_shrinkage=np.inf, fallback="user_mean", verbose=False)
    assert not data_usage(alone.fit(trainset), users, items).any()
    alone.fallback = "global_mean"
    assert data_usage(alone.fit(trainset), users, items).any()


def test_usage_counts_each_neighbour_who_answers(split):
    """Top-k, item neighbourhood: the usage of each user is the number of queries whose
    neighbours (``kneighbors``) include them with a positive weight."""
    trainset, testset = split
    algo = PrivateKNN(k=5, sim_options={"name": "msd"}, verbose=False).fit(trainset)
    *_, users, items = inner_ids(trainset, testset[:300])
    known = (users >= 0) & (items >= 0)
    users, items = users[known], items[known]
    expected = np.zeros(trainset.n_users, dtype=np.int64)
    for u, i in zip(users.tolist(), items.tolist()):
        neighbours, weights = algo.kneighbors(np.array([u]), np.array([i]))
        for v, w in zip(neighbours[0].tolist(), weights[0].tolist()):
            if v >= 0 and w > 0:
                expected[v] += 1
    np.testing.assert_array_equal(data_usage(algo, users, items), expected)


def test_reuseknn_threshold_follows_the_published_code():
    """Histogram of 25 bins, a Gaussian KDE of bandwidth 50 over the bin counts, 1,000
    points on [0, max], the largest second difference (written out with scipy)."""
    usage = np.random.default_rng(0).negative_binomial(2, 0.02, size=3000).astype(float)
    counts, edges = np.histogram(usage, bins=25)
    grid = np.linspace(0, edges.max(), 1000)
    density = stats.norm.pdf(grid[:, None], loc=counts[None, :], scale=50.0).mean(axis=1)
    expected = grid[np.argmax(np.gradient(np.gradient(density)))]
    assert reuseknn_threshold(usage) == pytest.approx(expected, rel=1e-12)
    assert 0 <= reuseknn_threshold(usage) <= usage.max()


def test_vulnerable_share():
    usage = np.array([0, 1, 5, 9, 10])
    assert vulnerable_share(usage, 5) == pytest.approx(0.6)   # >= threshold, as ReuseKNN
    assert vulnerable_share(usage, 0) == 1.0 and vulnerable_share(usage, 11) == 0.0


@pytest.mark.parametrize("call, error, needle", [
    (lambda: reuseknn_threshold([]), ValueError, "usage"),
    (lambda: reuseknn_threshold([1.0, np.nan]), ValueError, "usage"),
    (lambda: reuseknn_threshold([-1.0, 2.0]), ValueError, "usage"),
    (lambda: vulnerable_share([1, 2], -1.0), ValueError, "threshold"),
    (lambda: vulnerable_share([1, 2], "3"), TypeError, "threshold"),
    (lambda: data_usage("model", [0], [0]), TypeError, "algo"),
])
def test_bad_input_is_rejected(call, error, needle):
    with pytest.raises(error, match=needle):
        call()


def test_usage_rejects_mismatched_queries_and_item_based_models(split):
    trainset, _ = split
    algo = PrivateKNN(k=3, verbose=False).fit(trainset)
    with pytest.raises(AttributeError, match="not fitted"):
        data_usage(PrivateKNN(), np.array([0]), np.array([0]))
    with pytest.raises(ValueError, match="same length"):
        data_usage(algo, np.array([0, 1]), np.array([0]))
    item_based = PrivateKNN(k=3, sim_options={"user_based": False}, verbose=False).fit(trainset)
    with pytest.raises(ValueError, match="user-based"):
        data_usage(item_based, np.array([0]), np.array([0]))
