"""DPALS: private alternating least squares on DPBaseline's release (user level, joint DP).

Each step is held against a plain numpy reference (the users' ridge solves, the items'
integer statistics, the items' solves), the sensitivity by neighbouring datasets (every
user removed in turn moves the integer statistics by at most K in ℓ2, exactly), the
noise against its stated scale (seeded, pooled over every coordinate), and the model
by its report, its reproducibility, its independence of the data's order and its
accuracy where the noise is negligible.  The end-to-end audits of its predictions and
top-N lists are in `tests/test_end_to_end_audits.py`.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from surprise import Dataset, Reader, accuracy
from surprise.model_selection import train_test_split

from dprec import DPALS, DPBaseline, datasets, dp_als
from dprec.dp_als import (
    FACTOR_SHARE,
    FACTOR_SNR,
    default_share,
    item_factors,
    item_statistics,
    user_factors,
)
from dprec.dp_baseline import GRID_BITS
from dprec.ledger import Unit
from dprec.mechanisms.discrete_gaussian import zcdp_rho


@pytest.fixture(scope="module")
def data():
    return datasets.synthetic(60, 40, 900, random_state=0)


@pytest.fixture(scope="module")
def trainset(data):
    return data.build_full_trainset()


def random_matrix(n_users=12, n_items=7, density=0.5, seed=0):
    """A users × items CSR matrix of residuals in [-1, 1], with an empty user."""
    rng = np.random.default_rng(seed)
    mask = rng.random((n_users, n_items)) < density
    mask[3] = False                                      # a user without ratings
    mask[5] = True                                       # a user who rated everything
    values = np.where(mask, rng.uniform(-1, 1, (n_users, n_items)), 0.0)
    matrix = sp.csr_matrix(values)
    matrix.eliminate_zeros()
    return matrix


# ------------------------------------------------------------------ parameters
@pytest.mark.parametrize(("name", "value"), [
    ("epsilon", 0.0), ("delta", 0.0), ("delta", 1.0), ("n_factors", 0), ("n_factors", 1.5),
    ("n_factors", "4"), ("n_epochs", 0), ("max_ratings", 0), ("reg", 0.0), ("reg", -1.0),
    ("noise_reg", -0.5), ("noise_reg", math.nan), ("clip", 0.0), ("baseline_share", 0.0),
    ("baseline_share", 1.0), ("random_state", "seed")])
def test_a_bad_parameter_is_refused_at_fit_naming_it(trainset, name, value):
    model = DPALS(**{name: value})                       # stored as given
    assert getattr(model, name) is value
    with pytest.raises((ValueError, TypeError), match=name):
        model.fit(trainset)


def test_an_unfitted_model_refuses_to_answer():
    model = DPALS()
    for call in (model.privacy_report, model.default_prediction,
                 lambda: model.predict("1", "1"), lambda: model.test([("1", "1", 3.0)])):
        with pytest.raises(AttributeError, match="fit"):
            call()


# ------------------------------------------------------------------ the steps
def test_user_factors_solve_each_users_ridge_and_project_on_the_unit_ball(monkeypatch):
    matrix = random_matrix()
    rng = np.random.default_rng(1)
    factors = rng.normal(0, 0.4, (matrix.shape[1], 3))   # small: some x_u beyond the ball
    reg = 0.1
    expected = np.zeros((matrix.shape[0], 3))
    for u in range(matrix.shape[0]):
        items = matrix.indices[matrix.indptr[u]:matrix.indptr[u + 1]]
        e = matrix.data[matrix.indptr[u]:matrix.indptr[u + 1]]
        v = factors[items]
        x = np.linalg.solve(v.T @ v + reg * np.eye(3), v.T @ e)
        expected[u] = x / max(1.0, np.linalg.norm(x))
    got = user_factors(matrix, matrix.data, factors, reg)
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)
    assert np.all(got[3] == 0.0)
    norms = np.linalg.norm(got, axis=1)
    assert norms.max() <= 1.0 + 1e-12 and np.isclose(norms, 1.0).any()   # some projected
    monkeypatch.setattr(dp_als, "BLOCK_RATINGS", 3)      # blocks of a few users: the same
    np.testing.assert_allclose(user_factors(matrix, matrix.data, factors, reg), got,
                               rtol=1e-12, atol=1e-14)


def reference_statistics(matrix, residuals, own, weights, bits):
    """The integer sums by loops: each rating's block rounded to the grid, no clipping."""
    n_users, n_items = matrix.shape
    d = own.shape[1]
    upper = np.triu_indices(d)
    sums = np.zeros((n_items, len(upper[0]) + d))
    for u in range(n_users):
        for cell in range(matrix.indptr[u], matrix.indptr[u + 1]):
            x = weights[u] * own[u]
            block = np.concatenate([np.outer(x, own[u])[upper], x * residuals[cell]])
            sums[matrix.indices[cell]] += np.round(block * 2.0**bits)
    return sums


def test_item_statistics_are_the_rounded_weighted_sums_when_nothing_is_clipped(monkeypatch):
    matrix = random_matrix()
    rng = np.random.default_rng(2)
    own = rng.normal(0, 1, (matrix.shape[0], 3))
    own /= np.maximum(1.0, np.linalg.norm(own, axis=1))[:, None]
    weights = rng.uniform(0.2, 1.0, matrix.shape[0])
    bound = 100.0                                        # far above any user's norm
    sums, k = item_statistics(matrix, matrix.data, own, weights, bound, 10)
    assert k == math.floor(bound * 2**10)
    np.testing.assert_array_equal(sums, reference_statistics(matrix, matrix.data, own,
                                                             weights, 10))
    assert sums.shape == (matrix.shape[1], 6 + 3)
    monkeypatch.setattr(dp_als, "BLOCK_RATINGS", 4)      # summed over blocks: the same
    np.testing.assert_array_equal(item_statistics(matrix, matrix.data, own, weights, bound,
                                                  10)[0], sums)


@pytest.mark.parametrize("weights_of", ["the model's", "too large"])
def test_removing_any_one_user_moves_the_statistics_by_at_most_k(weights_of):
    # the neighbouring datasets of the unit: every user removed in turn, the other users'
    # factors unchanged (they depend on the released V and their own data only); with
    # the model's weights min(1, sqrt(m/|I_u|)) no user is clipped, with weights 3x too
    # large the exact ℓ2 clipping still bounds them, and some user is then at K
    matrix = random_matrix(n_users=15, n_items=9, density=0.7, seed=3)
    rng = np.random.default_rng(4)
    own = rng.normal(0, 1, (15, 2))
    own /= np.linalg.norm(own, axis=1)[:, None]          # |x_u| = 1: the worst case
    m = 3
    weights = np.minimum(1.0, np.sqrt(m / np.maximum(np.diff(matrix.indptr), 1)))
    residuals = np.sign(matrix.data)                     # |e| = 1: the worst case
    if weights_of == "too large":
        weights = 3.0 * weights
    bound = math.sqrt(2 * m)
    full, k = item_statistics(matrix, residuals, own, weights, bound, GRID_BITS)
    moves = []
    for u in range(15):
        keep = np.ones(15, dtype=bool)
        keep[u] = False
        rest = sp.csr_matrix(matrix[keep])
        cells = np.concatenate([np.arange(matrix.indptr[v], matrix.indptr[v + 1])
                                for v in np.flatnonzero(keep)])
        smaller, _ = item_statistics(rest, residuals[cells], own[keep], weights[keep], bound,
                                     GRID_BITS)
        moves.append(math.sqrt(((full - smaller) ** 2).sum()))
    assert max(moves) <= k
    if weights_of == "too large":
        assert max(moves) > 0.999 * k
    else:                     # a user with m ratings or more reaches sqrt(2m) up to rounding
        assert max(moves) > 0.99 * k


def test_item_factors_solve_on_the_psd_part_and_keep_only_items_above_the_noise():
    rng = np.random.default_rng(5)
    d, n_items, sd = 3, 6, 0.5
    upper = np.triu_indices(d)
    grams = []
    for i in range(n_items):
        a = rng.normal(0, 1, (d, d))
        grams.append(a @ a.T - (2.0 if i == 1 else 0.0) * np.eye(d))  # item 1: indefinite
    grams[4] = np.diag([0.5, 0.5, 0.5])                  # trace 1.5 < 2 sd sqrt(3) = 1.73
    targets = rng.normal(0, 1, (n_items, d))
    stats = np.hstack([np.array([g[upper] for g in grams]), targets])
    got, noise = item_factors(stats, d, 0.3, sd)
    for i in range(n_items):
        values, vectors = np.linalg.eigh(grams[i])
        solve = vectors @ np.diag(1.0 / (np.maximum(values, 0) + 0.3)) @ vectors.T
        kept = np.trace(grams[i]) > 2 * sd * math.sqrt(d)
        np.testing.assert_allclose(got[i], solve @ targets[i] if kept else 0.0, rtol=1e-10,
                                   atol=1e-12)
        # the noise of v_i = A^-1 g from iid noise of sd σ on g: σ ||A^-1||_F
        assert noise[i] == pytest.approx(sd * np.linalg.norm(solve) if kept else 0.0,
                                         rel=1e-10)
    assert np.all(got[4] == 0.0) and np.any(got[1] != 0.0)


def test_the_public_rule_releases_factors_above_its_threshold_only():
    rho = 0.25                                           # sqrt(rho) = 0.5
    at = FACTOR_SNR / 0.5
    assert default_share(round(at * 100), 100, rho) == pytest.approx(1.0 - FACTOR_SHARE)
    assert default_share(round(at * 100) - 1, 100, rho) == 1.0
    assert default_share(10, 0, rho) == pytest.approx(1.0 - FACTOR_SHARE)   # no item


# ------------------------------------------------------------------ the model
def test_without_factors_the_model_answers_its_baselines_answers(trainset, data):
    model = DPALS(epsilon=1.0, random_state=0).fit(trainset)   # 60 users / 40 items: no factors
    assert (model.item_factors_.to_numpy() == 0).all() and model.noise_sd_ == 0.0
    (entry,) = model.privacy_report().entries
    assert "no factors" in entry.component
    pairs = [(u, i, 0.0) for u in ("1", "7", "60", "stranger") for i in ("1", "9", "nope")]
    ours = [p.est for p in model.test(pairs)]
    assert ours == [p.est for p in model.baseline_.test(pairs)]
    # the baseline is the whole budget's: DPBaseline's own release at the same ρ
    alone = DPBaseline(epsilon=1.0).fit_part(trainset, b"\0" * 16, True,
                                             rho=zcdp_rho(1.0, 1e-5))
    assert alone.noise_sd_ == pytest.approx(model.baseline_.noise_sd_, rel=1e-12)


def catalogues(trainset) -> dict:
    """The data's users and items as public catalogues: every user inside the guarantee."""
    return {"users": [trainset.to_raw_uid(u) for u in trainset.all_users()],
            "items": [trainset.to_raw_iid(i) for i in trainset.all_items()]}


def test_the_noise_is_discrete_gaussian_of_the_stated_scale(trainset, monkeypatch):
    calls = []
    draw = dp_als.discrete_gaussian

    def recorded(values, sigma, rng):
        out = draw(values, sigma, rng)
        calls.append((values.copy(), sigma, out))
        return out

    monkeypatch.setattr(dp_als, "discrete_gaussian", recorded)
    model = DPALS(epsilon=1.0, n_factors=3, n_epochs=4, max_ratings=20, baseline_share=0.4,
                  random_state=11, **catalogues(trainset)).fit(trainset)
    assert len(calls) == 4
    k = math.floor(math.sqrt(2 * 20) * 2**GRID_BITS)
    sigma = k / math.sqrt(2 * 0.6 * zcdp_rho(1.0, 1e-5) / 4)
    noise = np.concatenate([(out - values).ravel() for values, s, out in calls])
    assert all(s == pytest.approx(sigma, rel=1e-12) for _, s, _ in calls)
    assert np.all(noise == np.round(noise))                  # integers
    assert noise.size == 4 * 40 * (6 + 3)
    # sd estimated from 1,440 draws: standard error 1.9 %; the mean's 2.6 % of σ
    assert noise.std() == pytest.approx(sigma, rel=0.06)
    assert abs(noise.mean()) < 4 * sigma / math.sqrt(noise.size)
    assert model.noise_sd_ == pytest.approx(sigma * 2.0**-GRID_BITS, rel=1e-12)
    report = model.privacy_report()
    assert report.total(Unit.USER) == pytest.approx((1.0, 1e-5), rel=1e-6)
    without = DPALS(epsilon=1.0, random_state=11).fit(trainset).privacy_report()
    assert without.total(Unit.USER)[0] == math.inf      # the lists read from the data


def test_the_report_covers_every_output_and_is_void_when_seeded(trainset):
    fresh = DPALS(epsilon=2.0, baseline_share=0.3, **catalogues(trainset)).fit(
        trainset).privacy_report()
    assert fresh.total(Unit.USER) == pytest.approx((2.0, 1e-5), rel=1e-6)
    assert [o.name for o in fresh.outputs] == list(dp_als.OUTPUTS)
    assert all(o.covered_by == (0,) and o.gap is None for o in fresh.outputs)
    assert "item factors" in dp_als.OUTPUTS
    assert "epochs" in fresh.entries[0].component
    seeded = DPALS(epsilon=2.0, random_state=0).fit(trainset).privacy_report()
    assert seeded.seeded and not fresh.seeded


def test_the_same_seed_gives_the_same_model_whatever_the_datas_order(data):
    shuffled = Dataset.load_from_df(pd.DataFrame(random.Random(0).sample(
        [r[:3] for r in data.raw_ratings], len(data.raw_ratings))), Reader(rating_scale=(1, 5)))
    fits = [DPALS(epsilon=5.0, baseline_share=0.3, random_state=seed).fit(
        d.build_full_trainset()) for d, seed in ((data, 3), (shuffled, 3), (data, 4))]
    pairs = [(u, i, 0.0) for u in ("1", "2", "33") for i in ("1", "5", "40")]
    pd.testing.assert_frame_equal(fits[0].item_factors_, fits[1].item_factors_)
    assert [p.est for p in fits[0].test(pairs)] == [p.est for p in fits[1].test(pairs)]
    assert not fits[0].item_factors_.equals(fits[2].item_factors_)
    assert (fits[0].item_factors_.abs().to_numpy() > 0).any()
    assert list(fits[0].item_factors_.index) == sorted(fits[0].item_factors_.index)


def test_an_item_of_the_catalogue_nobody_rated_gets_a_factor_of_noise_only(data):
    trainset = data.build_full_trainset()
    users = sorted({r[0] for r in data.raw_ratings})
    items = sorted({r[1] for r in data.raw_ratings}) + ["unrated"]
    model = DPALS(epsilon=1e6, baseline_share=0.3, users=users, items=items,
                  random_state=0).fit(trainset)
    assert "unrated" in model.item_factors_.index
    assert (model.item_factors_.loc["unrated"] == 0).all()        # below the noise: 0
    prediction = model.predict("1", "unrated")
    assert not prediction.details["was_impossible"]


def test_with_little_noise_the_factors_beat_the_baseline():
    data = datasets.synthetic(400, 120, 16_000, random_state=1)
    train, test = train_test_split(data, test_size=0.2, random_state=0)
    als = DPALS(epsilon=1e4, baseline_share=0.3, random_state=0).fit(train)
    base = DPBaseline(epsilon=1e4, random_state=0).fit(train)
    gain = accuracy.rmse(base.test(test), verbose=False) - accuracy.rmse(als.test(test),
                                                                        verbose=False)
    assert gain > 0.05
    assert (als.item_factors_.abs().to_numpy() > 0).all(axis=1).mean() > 0.9


def test_the_factors_do_not_move_the_answers_when_the_noise_drowns_them(trainset):
    # ε = 0.05 with the factors forced: pure noise passes the gate (2 sd of the trace)
    # with probability 2.3 %, so about 1 item of 40; every other item answers the baseline's
    model = DPALS(epsilon=0.05, baseline_share=0.3, random_state=0).fit(trainset)
    factors = model.item_factors_
    kept = factors.index[(factors != 0).any(axis=1)]
    assert len(kept) <= 4
    quiet = [i for i in factors.index if i not in set(kept)][:5]
    pairs = [(u, i, 0.0) for u in ("1", "7") for i in quiet]
    assert [p.est for p in model.test(pairs)] == [p.est for p in model.baseline_.test(pairs)]


def test_fit_part_draws_its_noise_from_the_entropy_given(trainset):
    # as part of another model: the noise from that model's entropy, its random_state
    # unused, and the report seeded as that model says
    options = {"epsilon": 5.0, "baseline_share": 0.3, **catalogues(trainset)}
    a = DPALS(random_state=1, **options).fit_part(trainset, b"\1" * 16, False)
    b = DPALS(random_state=2, **options).fit_part(trainset, b"\1" * 16, False)
    c = DPALS(random_state=2, **options).fit_part(trainset, b"\2" * 16, True)
    pd.testing.assert_frame_equal(a.item_factors_, b.item_factors_)
    assert not a.item_factors_.equals(c.item_factors_)
    assert not a.privacy_report().seeded and c.privacy_report().seeded
    pd.testing.assert_series_equal(a.factor_noise_, b.factor_noise_)
    kept = (a.item_factors_ != 0).any(axis=1)
    assert (a.factor_noise_[kept] > 0).all() and (a.factor_noise_[~kept] == 0).all()
