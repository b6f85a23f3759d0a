"""The generator's two samplers of who rates which items (dprec.datasets.sampling):
the sparse one draws the dense one's law, and the datasets up to DENSE_CELLS are
the ones the generator always gave."""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import dprec.datasets.generator as generator
import dprec.datasets.sampling as sampling
from dprec.datasets import synthetic
from dprec.datasets.sampling import DENSE_CELLS, dense_sample, sparse_sample
from dprec.experiments.data_ladder import ladder


def _model(n_items: int, selection_bias: float = 1.0):
    rng = np.random.default_rng(11)
    log_popularity = 1.5 * rng.standard_normal(n_items)
    item_factors = rng.standard_normal((n_items, 3))
    groups = rng.integers(4, size=n_items)
    user = np.array([0.5, -0.3, 0.2])
    weights = np.exp(log_popularity + selection_bias * item_factors @ user)
    return log_popularity, item_factors, groups, user, weights / weights.sum()


def _positions(sampler, n_items: int, n_users: int, count: int, seed: int, **kw):
    """The first two draws of `n_users` users who share one factor vector."""
    log_popularity, item_factors, groups, user, _ = _model(n_items)
    users = np.tile(user, (n_users, 1))
    counts = np.full(n_users, count)
    items = sampler(np.random.default_rng(seed), log_popularity, users, item_factors,
                    counts, 1.0, **kw).reshape(n_users, count)
    assert all(len(set(row)) == count for row in items)       # without replacement
    return items[:, 0], items[:, 1]


def _exact_law(n_items: int):
    """Successive sampling's law of the first and of the second draw."""
    *_, first = _model(n_items)
    odds = first / (1.0 - first)
    second = first * (odds.sum() - odds)
    return first, second


def _chi2_pvalue(draws: np.ndarray, probs: np.ndarray) -> float:
    """Chi-square goodness of fit, the items expected fewer than 5 times pooled."""
    observed = np.bincount(draws, minlength=len(probs)).astype(float)
    expected = probs * len(draws)
    rare = expected < 5
    if rare.any():
        observed = np.append(observed[~rare], observed[rare].sum())
        expected = np.append(expected[~rare], expected[rare].sum())
    return float(stats.chisquare(observed, expected * observed.sum() / expected.sum()).pvalue)


@pytest.mark.parametrize("n_items, count, switched", [(1000, 6, 0), (30, 12, 20_000)])
def test_sparse_sampler_draws_successive_sampling(monkeypatch, n_items, count, switched):
    """The first and second draws follow $w_i / W$ and $\\sum_j w_j w_i / (W (W - w_j))$,
    by rejection (1000 items, 6 each: no user switches to dense keys) and through
    the switch to Efraimidis-Spirakis keys (30 items, 12 each: every user switches);
    a sampler ignoring the preferences ($\\lambda = 0$) fails the same check."""
    rest = sampling._dense_rest
    calls = []
    monkeypatch.setattr(sampling, "_dense_rest",
                        lambda *args: calls.append(len(args[5])) or rest(*args))
    first, second = _exact_law(n_items)
    drawn_first, drawn_second = _positions(sparse_sample, n_items, 20_000, count, seed=1,
                                           groups=_model(n_items)[2])
    assert sum(calls) == switched
    assert _chi2_pvalue(drawn_first, first) > 1e-3
    assert _chi2_pvalue(drawn_second, second) > 1e-3
    dense_first, dense_second = _positions(dense_sample, n_items, 20_000, count, seed=2)
    assert _chi2_pvalue(dense_first, first) > 1e-3
    assert _chi2_pvalue(dense_second, second) > 1e-3

    log_popularity, item_factors, _, user, _ = _model(n_items)
    blind = sparse_sample(np.random.default_rng(3), log_popularity,
                          np.tile(user, (20_000, 1)), item_factors,
                          np.full(20_000, count), 0.0).reshape(20_000, count)
    assert _chi2_pvalue(blind[:, 0], first) < 1e-6


def _fingerprint(data) -> str:
    digest = hashlib.sha256()
    for column in (data.user_ids[data.user_codes].astype(str),
                   data.item_ids[data.item_codes].astype(str), data.ratings):
        digest.update(np.ascontiguousarray(column).tobytes())
    return digest.hexdigest()[:16]


def test_shapes_up_to_dense_cells_keep_their_datasets():
    """Below `DENSE_CELLS` the generator gives the datasets of the dense sampler it
    always had (hashes taken before the sparse sampler existed); forcing the sparse
    sampler changes them."""
    assert DENSE_CELLS == 10**9
    assert _fingerprint(synthetic(120, 200, 4000, random_state=1, as_arrays=True)) \
        == "d765d72d13c00725"
    assert _fingerprint(synthetic(200, 300, 9000, random_state=0, n_clusters=0,
                                  selection_bias=2.0, as_arrays=True)) == "8f05a2cd750c368f"


def _ks(a: np.ndarray, b: np.ndarray) -> float:
    return float(stats.ks_2samp(a, b).statistic)


def test_sparse_generator_matches_dense_one(monkeypatch):
    """At 1500 x 1200 with 120,000 ratings, the sparse sampler (forced) against the
    dense one on the same model (same seed): the same ratings per user, close item
    popularity (sorted counts, Kolmogorov-Smirnov distance) and ladder rungs."""
    shape = (1500, 1200, 120_000)
    dense = synthetic(*shape, random_state=4)
    monkeypatch.setattr(generator, "DENSE_CELLS", 0)
    sparse = synthetic(*shape, random_state=4)
    assert _fingerprint(synthetic(120, 200, 4000, random_state=1, as_arrays=True)) \
        != "d765d72d13c00725"
    frames = [pd.DataFrame(d.raw_ratings, columns=["user", "item", "rating", "time"])
              for d in (dense, sparse)]
    assert not frames[1].duplicated(["user", "item"]).any()
    per_user = [f.groupby("user").size().sort_index() for f in frames]
    pd.testing.assert_series_equal(per_user[0], per_user[1])
    per_item = [f.groupby("item").size().to_numpy() for f in frames]
    assert _ks(per_item[0], per_item[1]) < 0.04
    top = [np.sort(counts)[-30:].sum() for counts in per_item]
    assert abs(top[1] / top[0] - 1.0) < 0.02
    rungs = ("user mean", "item mean", "BaselineOnly")
    gap = ladder(sparse, 0, rungs) - ladder(dense, 0, rungs)
    assert gap.abs().max() < 0.01, gap.to_dict()


@pytest.mark.parametrize("kwargs", [
    dict(n_users=5, n_items=3, n_ratings=15),                  # every user rates everything
    dict(n_users=30, n_items=500, n_ratings=60),
    dict(n_users=200, n_items=300, n_ratings=9000, n_clusters=0, selection_bias=2.0),
    dict(n_users=100, n_items=400, n_ratings=5000, selection_bias=0.0, popularity_sigma=0.0),
    dict(n_users=100, n_items=400, n_ratings=5000, interaction=0.0, popularity_sigma=4.0),
])
def test_sparse_generator_on_edge_parameters(monkeypatch, kwargs):
    """Forced through the sparse sampler, edge shapes and parameters still give every
    user its count of distinct items, the exact number of ratings and every item
    rated, with the same ratings per user as the dense sampler."""
    dense = pd.DataFrame(synthetic(random_state=0, **kwargs).raw_ratings)
    monkeypatch.setattr(generator, "DENSE_CELLS", 0)
    sparse = pd.DataFrame(synthetic(random_state=0, **kwargs).raw_ratings)
    assert len(sparse) == kwargs["n_ratings"]
    assert not sparse.duplicated([0, 1]).any()
    if kwargs["n_ratings"] >= kwargs["n_items"]:
        assert sparse[1].nunique() == kwargs["n_items"]
    pd.testing.assert_series_equal(sparse.groupby(0).size(), dense.groupby(0).size())
