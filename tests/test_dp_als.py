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
from strategies import STRONG_SIGNAL, catalogues
from surprise import Dataset, Reader, accuracy
from surprise.model_selection import train_test_split

from dprec import DPALS, DPBaseline, datasets
from dprec.accountant.ledger import BudgetExceededError, Status, Unit
from dprec.endtoend import dp_als, dp_baseline
from dprec.endtoend.dp_als import (
    FACTOR_SHARE,
    FACTOR_SNR,
    MIN_ITEMS,
    default_share,
    item_factors,
    item_statistics,
    user_factors,
)
from dprec.endtoend.dp_baseline import GRID_BITS, MAX_ITEMS_PER_USER
from dprec.endtoend.rating_space import SCOPE
from dprec.mechanisms.discrete_gaussian import grid_sensitivity, zcdp_epsilon, zcdp_rho
from dprec.utils._rng import FitNoise, derive_generator


@pytest.fixture(scope="module")
def data():
    return datasets.synthetic(60, 40, 900, random_state=0)


@pytest.fixture(scope="module")
def trainset(data):
    return data.build_full_trainset()


#: the start of the entry's component on the rule's "no factors" path
NO_FACTORS = "effects (no factors: too few users"


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
    ("baseline_share", 1.0), ("max_items_per_user", 0), ("max_items_per_user", 1.5),
    ("random_state", "seed")])
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
    # factors where (n_users / n_items) sqrt(rho) >= FACTOR_SNR and at least MIN_ITEMS items
    # are listed; n_users is a released noisy count (a real number, possibly negative)
    rho = 0.25                                           # sqrt(rho) = 0.5
    at = FACTOR_SNR / 0.5 * MIN_ITEMS                    # the users at the threshold
    assert default_share(at, MIN_ITEMS, rho) == pytest.approx(1.0 - FACTOR_SHARE)
    assert default_share(math.nextafter(at, 0.0), MIN_ITEMS, rho) == 1.0
    assert default_share(2 * at, 2 * MIN_ITEMS, rho) == pytest.approx(1.0 - FACTOR_SHARE)
    assert default_share(2 * at - 1, 2 * MIN_ITEMS, rho) == 1.0     # the ratio, not the count
    assert default_share(at / 2, MIN_ITEMS, 4 * rho) == pytest.approx(1.0 - FACTOR_SHARE)
    # fewer listed items than MIN_ITEMS: no factors, however many users
    assert default_share(1e12, MIN_ITEMS - 1, rho) == 1.0
    assert default_share(1e12, 0, rho) == 1.0            # no item listed
    assert default_share(-3.5, MIN_ITEMS, rho) == 1.0    # a noisy count below 0


# ------------------------------------------------------------------ the model
def releases(monkeypatch) -> list:
    """Record the noise of every Gaussian release of DPBaseline's statistics during a fit:
    `(sigma, bound, a)` and the released vector (its last coordinate the noisy count)."""
    calls, original = [], dp_baseline.gaussian_release

    def recorded(parts, rng, noise):
        out = original(parts, rng, noise)
        calls.append((noise, out[0].copy()))
        return out

    monkeypatch.setattr(dp_baseline, "gaussian_release", recorded)
    return calls


def test_without_factors_the_model_answers_its_baselines_answers(trainset, monkeypatch):
    # 40 items, fewer than MIN_ITEMS: the rule says "no factors" and the rest of ρ goes to
    # a second release of the effects, averaged with the first: the whole ρ is spent
    drawn = releases(monkeypatch)
    model = DPALS(epsilon=1.0, random_state=0).fit(trainset)
    assert (model.item_factors_.to_numpy() == 0).all() and model.noise_sd_ == 0.0
    (entry,) = model.privacy_report().entries
    assert entry.component.startswith(NO_FACTORS)
    assert entry.component.endswith(" (items by partition selection)")
    pairs = [(u, i, 0.0) for u in ("1", "7", "60", "stranger") for i in ("1", "9", "nope")]
    ours = [p.est for p in model.test(pairs)]
    assert ours == [p.est for p in model.baseline_.test(pairs)]
    # ρ is that of δ/2 without items= (the other half is the selections'): 1 - FACTOR_SHARE
    # of it first, the rest in the second release
    rho = zcdp_rho(1.0, 0.5e-5)
    k = grid_sensitivity(drawn[0][0][1], GRID_BITS)
    assert [noise[0] for noise, _ in drawn] == pytest.approx(
        [k / math.sqrt(2 * (1 - FACTOR_SHARE) * rho), k / math.sqrt(2 * FACTOR_SHARE * rho)],
        rel=1e-12)
    assert model.baseline_.rho_ == pytest.approx(rho, rel=1e-12)
    # averaged: one release at the whole ρ, in distribution — DPBaseline's own at that ρ
    alone = DPBaseline(epsilon=1.0).fit_part(trainset, b"\0" * 16, True, rho=rho)
    assert alone.noise_sd_ == pytest.approx(model.baseline_.noise_sd_, rel=1e-12)
    # the entry: ε of the whole ρ at δ/2, and δ/2 plus the selections' budget δ/2, a
    # bound on what the two selections added (the cost planned before the noise)
    assert entry.epsilon == pytest.approx(zcdp_epsilon(rho, 0.5e-5), rel=1e-12)
    assert 0.0 < model.baseline_.selection_delta_ <= 0.5e-5
    assert entry.delta == 1e-5


def test_the_noise_is_discrete_gaussian_of_the_stated_scale(data, trainset, monkeypatch):
    calls = []
    draw = dp_als.discrete_gaussian

    def recorded(values, sigma, rng):
        out = draw(values, sigma, rng)
        calls.append((values.copy(), sigma, out))
        return out

    monkeypatch.setattr(dp_als, "discrete_gaussian", recorded)
    model = DPALS(epsilon=1.0, n_factors=3, n_epochs=4, max_ratings=20, baseline_share=0.4,
                  random_state=11, **catalogues(data)).fit(trainset)
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
    # without catalogues every user is inside the guarantee: ε as asked, δ at most δ
    without = DPALS(epsilon=1.0, random_state=11).fit(trainset)
    spent = without.privacy_report()
    epsilon, delta = spent.total(Unit.USER)
    assert epsilon == pytest.approx(1.0, rel=1e-6)
    assert delta == 1e-5 and 0.0 < without.baseline_.selection_delta_ <= 0.5e-5
    per_user = spent.per_user(Unit.USER)
    assert len(per_user) == 60 and (per_user.epsilon == epsilon).all()
    assert spent.conditions[0].startswith(SCOPE["items selected"])
    assert spent.conditions[1] == SCOPE["users private"]


def test_the_report_covers_every_output_and_is_void_when_seeded(data, trainset):
    fresh = DPALS(epsilon=2.0, baseline_share=0.3, **catalogues(data)).fit(
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
    # without items=: the items the selection lists, and their effects, are the same too
    chosen = [DPALS(epsilon=5.0, random_state=3).fit(d.build_full_trainset()).baseline_
              for d in (data, shuffled)]
    pd.testing.assert_series_equal(chosen[0].item_effects_, chosen[1].item_effects_)
    assert 0 < len(chosen[0].item_effects_) < 40          # a choice was made
    # with the item catalogue (every item listed): the factors
    items = catalogues(data)["items"]
    fits = [DPALS(epsilon=5.0, baseline_share=0.3, items=items, random_state=seed).fit(
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
    data = datasets.synthetic(400, 120, 16_000, random_state=1, **STRONG_SIGNAL)
    train, test = train_test_split(data, test_size=0.2, random_state=0)
    als = DPALS(epsilon=1e4, baseline_share=0.3, random_state=0).fit(train)
    base = DPBaseline(epsilon=1e4, random_state=0).fit(train)
    gain = accuracy.rmse(base.test(test), verbose=False) - accuracy.rmse(als.test(test),
                                                                        verbose=False)
    assert gain > 0.05
    assert (als.item_factors_.abs().to_numpy() > 0).all(axis=1).mean() > 0.9


def test_the_factors_do_not_move_the_answers_when_the_noise_drowns_them(data, trainset):
    # ε = 0.05 with the factors forced: pure noise passes the gate (2 sd of the trace)
    # with probability 2.3 %, so about 1 item of 40; every other item answers the baseline's
    # (the item catalogue given: all 40 items listed, none left out by the selection)
    model = DPALS(epsilon=0.05, baseline_share=0.3, items=catalogues(data)["items"],
                  random_state=0).fit(trainset)
    factors = model.item_factors_
    kept = factors.index[(factors != 0).any(axis=1)]
    assert len(factors) == 40 and len(kept) <= 4
    quiet = [i for i in factors.index if i not in set(kept)][:5]
    pairs = [(u, i, 0.0) for u in ("1", "7") for i in quiet]
    assert [p.est for p in model.test(pairs)] == [p.est for p in model.baseline_.test(pairs)]


def test_fit_part_draws_its_noise_from_the_entropy_given(data, trainset):
    # as part of another model: the noise from that model's entropy, its random_state
    # unused, and the report's status as that model says — but bytes a caller chose are
    # never fresh noise (whoever knows them reproduces the release): a caller's generator
    # at least (holds only if they are secret), void when the caller says an int seed
    options = {"epsilon": 5.0, "baseline_share": 0.3, **catalogues(data)}
    a = DPALS(random_state=1, **options).fit_part(trainset, b"\1" * 16, False)
    b = DPALS(random_state=2, **options).fit_part(trainset, b"\1" * 16, False)
    c = DPALS(random_state=2, **options).fit_part(trainset, b"\2" * 16, True)
    pd.testing.assert_frame_equal(a.item_factors_, b.item_factors_)
    assert not a.item_factors_.equals(c.item_factors_)
    assert {e.status for e in a.privacy_report().entries} == {Status.CONDITIONAL}
    assert {e.status for e in c.privacy_report().entries} == {Status.VOID}
    fresh = DPALS(random_state=2, **options).fit_part(trainset, FitNoise.draw(None))
    assert {e.status for e in fresh.privacy_report().entries} == {Status.HOLDS}
    pd.testing.assert_series_equal(a.factor_noise_, b.factor_noise_)
    kept = (a.item_factors_ != 0).any(axis=1)
    assert (a.factor_noise_[kept] > 0).all() and (a.factor_noise_[~kept] == 0).all()


# ------------------------------------------------------------------ the defaults and ranges
def spy(monkeypatch, name: str) -> list:
    """Record every call of `dp_als.<name>` made by the fit: (positional args, result)."""
    calls, original = [], getattr(dp_als, name)

    def recorded(*args):
        out = original(*args)
        calls.append((args, out))
        return out

    monkeypatch.setattr(dp_als, name, recorded)
    return calls


def test_the_defaults_are_stored_and_the_fit_uses_them(data, trainset, monkeypatch, capsys):
    model = DPALS(baseline_share=0.3)
    assert (model.epsilon, model.delta, model.n_factors, model.n_epochs, model.max_ratings,
            model.reg, model.noise_reg, model.clip, model.users, model.items,
            model.max_items_per_user, model.random_state) == (
        1.0, None, 8, 3, 50, 1.0, 1.0, 1.0, None, None, MAX_ITEMS_PER_USER, None)
    assert model.verbose is False and MAX_ITEMS_PER_USER == 1000
    # the item catalogue given (every item listed, δ all the release's): the fit's noise
    # and solves as the defaults make them
    model.items = catalogues(data)["items"]
    draws, solves, users = (spy(monkeypatch, name) for name in
                            ("discrete_gaussian", "item_factors", "user_factors"))
    model.fit_part(trainset, b"\3" * 16, True)
    # ε = 1, δ = 1e-5, 3 epochs of (1 - 0.3) ρ, m = 50: K = floor(sqrt(100) 2^12)
    sigma = math.floor(math.sqrt(100) * 2**GRID_BITS) / math.sqrt(
        2 * 0.7 * zcdp_rho(1.0, 1e-5) / 3)
    sd = sigma * 2.0**-GRID_BITS
    assert len(draws) == 3 and all(args[1] == pytest.approx(sigma, rel=1e-12)
                                   for args, _ in draws)
    assert model.noise_sd_ == pytest.approx(sd, rel=1e-12)
    assert len(solves) == 3
    for args, _ in solves:               # d = 8, λ = 1 + γ 2σ sqrt(d) with γ = 1
        assert args[1] == 8 and args[3] == pytest.approx(sd, rel=1e-12)
        assert args[2] == pytest.approx(1.0 + 2.0 * sd * math.sqrt(8), rel=1e-12)
    assert len(users) == 4               # each epoch's, then the answers'
    residuals = model.baseline_.residuals()
    assert (np.abs(residuals) > 1.0).any()
    for args, _ in users:                # C = 1: the residuals clipped to [-1, 1]; λ = 1
        np.testing.assert_array_equal(args[1], np.minimum(np.maximum(residuals, -1.0), 1.0))
        assert args[3] == 1.0
    assert model.item_factors_.shape == (40, 8)
    assert list(model.item_factors_.columns) == [f"f{j}" for j in range(8)]
    report = model.privacy_report()
    assert report.model == "DPALS(n_factors=8)"
    assert report.entries[0].component == "effects and item factors (3 epochs)"
    assert report.entries[0].delta == 1e-5
    assert capsys.readouterr().out == ""                 # not verbose


@pytest.mark.parametrize(("name", "value"), [
    ("n_factors", 65), ("n_factors", 0), ("n_epochs", 1001), ("n_epochs", 0),
    ("max_ratings", (1 << 20) + 1), ("max_ratings", 0), ("reg", 0.0), ("noise_reg", -0.5),
    ("clip", 0.0), ("baseline_share", 1.0), ("max_items_per_user", 0)])
def test_a_parameter_out_of_its_range_is_refused_by_its_own_name(trainset, name, value):
    # the message starts with the parameter's name, then its range
    with pytest.raises(ValueError, match=f"^{name} must be "):
        DPALS(**{name: value}).fit(trainset)


def test_the_smallest_values_of_the_ranges_are_accepted(data, trainset):
    model = DPALS(epsilon=5.0, n_factors=1, n_epochs=1, max_ratings=1, noise_reg=0.5,
                  baseline_share=0.3, max_items_per_user=1, items=catalogues(data)["items"],
                  random_state=0).fit(trainset)
    assert model.item_factors_.shape == (40, 1)
    assert model.privacy_report().entries[0].component == "effects and item factors (1 epochs)"
    assert DPALS(noise_reg=0.0, random_state=0).fit(trainset).noise_reg == 0.0
    # without items=, the selection's k is the baseline's max_items_per_user, as given
    one = DPALS(epsilon=5.0, baseline_share=0.3, max_items_per_user=1, random_state=0).fit(
        trainset)
    assert one.baseline_.max_items_per_user == 1
    assert "the k = 1 items one user can bring" in one.privacy_report().conditions[0]


def test_fit_part_checks_the_random_state_it_does_not_use(trainset):
    with pytest.raises(TypeError, match="random_state"):
        DPALS(random_state="seed").fit_part(trainset, b"\1" * 16, True)


def rule_calls(monkeypatch) -> list:
    """Record every call of the size rule made by a fit: `(n_users, n_items, rho, share)`."""
    calls, original = [], dp_als.default_share

    def recorded(n_users, n_items, rho):
        out = original(n_users, n_items, rho)
        calls.append((n_users, n_items, rho, out))
        return out

    monkeypatch.setattr(dp_als, "default_share", recorded)
    return calls


def test_the_public_rule_reads_the_released_sizes(data, trainset, monkeypatch):
    # once, after the first release: its noisy count of users (neither the data's 60 nor a
    # users= catalogue's size) and the number of items it lists (those the selection chose,
    # or the catalogue's), at the model's ρ; MIN_ITEMS lowered so that the few items the
    # selection lists here can have factors
    monkeypatch.setattr(dp_als, "MIN_ITEMS", 1)
    rule, drawn = rule_calls(monkeypatch), releases(monkeypatch)
    model = DPALS(epsilon=50.0, random_state=0).fit(trainset)
    ((n_users, n_items, rho, share),) = rule
    (sigma, _, a), first = drawn[0]
    assert n_users == first[-1]                          # the released count, as released
    assert n_users != 60 and abs(n_users - 60) < 6 * sigma * 2.0**-GRID_BITS / a
    assert rho == zcdp_rho(50.0, 0.5e-5) and share == pytest.approx(1.0 - FACTOR_SHARE)
    assert len(drawn) == 1                               # factors: no second release
    # the factors are over the listed items only, as the effects are
    assert 0 < n_items < 40 and n_items == len(model.item_factors_)
    assert list(model.item_factors_.index) == list(model.baseline_.item_effects_.index)
    assert (model.item_factors_.to_numpy() != 0).any()
    assert model.privacy_report().entries[0].component == (
        "effects and item factors (3 epochs) (items by partition selection)")
    # a users= catalogue with 400 users without ratings: the same count, the same answer
    users = catalogues(data)["users"] + [f"new{j}" for j in range(400)]
    DPALS(epsilon=50.0, users=users, random_state=0).fit(trainset)
    assert rule[1] == rule[0]
    # an item catalogue: its size, every item listed
    items = catalogues(data)["items"] + [f"new{j}" for j in range(20)]
    DPALS(epsilon=50.0, items=items, random_state=0).fit(trainset)
    assert rule[2][1] == 60 and rule[2][2] == zcdp_rho(50.0, 1e-5)


def test_the_public_rule_needs_enough_listed_items_and_users(monkeypatch):
    # at the real MIN_ITEMS: users enough for factors at ε = 20 (1.5 times the threshold),
    # then a catalogue of MIN_ITEMS items gives factors, one item fewer none; at ε = 1 the
    # same users are too few for that budget; without a catalogue the data's 40 items are
    # too few whatever the budget
    rho = zcdp_rho(20.0, 1e-5)
    n_users = math.ceil(1.5 * FACTOR_SNR * MIN_ITEMS / math.sqrt(rho))
    data = datasets.synthetic(n_users, 40, 10 * n_users, random_state=2)
    trainset = data.build_full_trainset()
    rule = rule_calls(monkeypatch)

    def component(epsilon, n_items=None):
        items = None if n_items is None else catalogues(data)["items"] + [
            f"new{j}" for j in range(n_items - 40)]
        model = DPALS(epsilon=epsilon, items=items, random_state=0).fit(trainset)
        assert (model.item_factors_.to_numpy() != 0).any() == (rule[-1][3] < 1.0)
        return model.privacy_report().entries[0].component

    assert component(20.0, MIN_ITEMS) == "effects and item factors (3 epochs)"
    assert rule[-1][:2] == (pytest.approx(n_users, abs=10), MIN_ITEMS)
    assert component(20.0, MIN_ITEMS - 1).startswith(NO_FACTORS)
    assert n_users / MIN_ITEMS * math.sqrt(zcdp_rho(1.0, 1e-5)) < 0.5 * FACTOR_SNR
    assert component(1.0, MIN_ITEMS).startswith(NO_FACTORS)
    without = component(20.0)
    assert without.startswith(NO_FACTORS)
    assert without.endswith(") (items by partition selection)")
    assert rule[-1][1] <= 40 < MIN_ITEMS


@pytest.mark.parametrize("epsilon", [1.0, 50.0], ids=["no factors", "factors"])
def test_the_budget_refusal_plans_what_the_report_charges_on_both_paths(trainset, monkeypatch,
                                                                       epsilon):
    # the rule's two paths without items= (MIN_ITEMS lowered so that one has factors): at
    # the cost the report states the fit passes, a hair below it the fit is refused
    monkeypatch.setattr(dp_als, "MIN_ITEMS", 1)
    report = DPALS(epsilon=epsilon, random_state=0).fit(trainset).privacy_report()
    assert ("no factors" in report.entries[0].component) == (epsilon == 1.0)
    spent, delta = report.total(Unit.USER)
    passed = DPALS(epsilon=epsilon, random_state=0, budget=(spent, delta)).fit(trainset)
    assert passed.privacy_report().total(Unit.USER) == (spent, delta)
    for below in ((spent * (1 - 1e-9), delta), (spent, delta * (1 - 1e-6))):
        with pytest.raises(BudgetExceededError, match="^budget"):
            DPALS(epsilon=epsilon, random_state=0, budget=below).fit(trainset)


def test_the_report_states_the_release_its_mechanism_and_its_notes(data, trainset):
    model = DPALS(epsilon=2.0, n_factors=5, baseline_share=0.3, **catalogues(data)).fit(
        trainset)
    report = model.privacy_report()
    assert report.model == "DPALS(n_factors=5)"
    (entry,) = report.entries
    assert entry.component == "effects and item factors (3 epochs)"
    assert entry.mechanism == "discrete gaussian (zCDP)"
    assert entry.note == dp_als.NOTES["gaussian"]
    assert entry.unit is Unit.USER and entry.applies_to == "user"
    assert report.notes == [dp_als.NOTES["answers"]]
    assert model.factor_noise_.name == "factor_noise"


def test_a_budget_below_the_accountants_resolution_is_stated_as_given(data, trainset):
    # at ε = 1e-3 the largest ρ spending at most ε is one the accountant proves ε = 0 for:
    # the entries (the model's and its baseline's) then state the ε given
    rho = zcdp_rho(1e-3, 1e-5)
    assert zcdp_epsilon(rho, 1e-5) == 0.0
    model = DPALS(epsilon=1e-3, **catalogues(data)).fit(trainset)
    assert model.privacy_report().entries[0].epsilon == 1e-3
    assert model.baseline_.privacy_report().entries[0].epsilon == 1e-3


def test_a_fit_past_the_budget_names_the_unit_it_protects(data, trainset):
    with pytest.raises(ValueError, match=r"^budget .* for one user \(all of their ratings\)"):
        DPALS(epsilon=1.0, budget=(0.5, 1e-4), **catalogues(data)).fit(trainset)


def test_verbose_prints_each_epoch_and_the_budget(trainset, capsys):
    DPALS(epsilon=5.0, n_factors=2, n_epochs=2, baseline_share=0.3, verbose=True,
          random_state=0).fit(trainset)
    assert capsys.readouterr().out == ("DPALS: epoch 1/2 released\nDPALS: epoch 2/2 released\n"
                                       "DPALS: ε = 5, δ = 1e-05 per user\n")


# ------------------------------------------------------------------ the fit, step by step
@pytest.fixture(scope="module")
def varied_data():
    """Users with different numbers of ratings (30 % of the ratings dropped) and a user
    ("solo", sorted last) with a single rating."""
    data = datasets.synthetic(60, 40, 900, random_state=0)
    keep = random.Random(1)
    rows = [r[:3] for r in data.raw_ratings if keep.random() > 0.3] + [("solo", "1", 5.0)]
    return Dataset.load_from_df(pd.DataFrame(rows), Reader(rating_scale=(1, 5)))


@pytest.fixture(scope="module")
def varied(varied_data):
    return varied_data.build_full_trainset()


def reference_user_factors(matrix, residuals, factors, reg):
    """Each user's ridge solve by a loop, projected on the unit ball."""
    d = factors.shape[1]
    out = np.zeros((matrix.shape[0], d))
    for u in range(matrix.shape[0]):
        cells = slice(matrix.indptr[u], matrix.indptr[u + 1])
        v = factors[matrix.indices[cells]]
        x = np.linalg.solve(v.T @ v + reg * np.eye(d), v.T @ residuals[cells])
        out[u] = x / max(1.0, np.linalg.norm(x))
    return out


def reference_item_factors(statistics, d, ridge, sd):
    """Each item's solve on the PSD part of its symmetric G, above the gate, by a loop."""
    upper = np.triu_indices(d)
    factors, noise = np.zeros((len(statistics), d)), np.zeros(len(statistics))
    for i, row in enumerate(statistics):
        gram = np.zeros((d, d))
        gram[upper] = row[:len(upper[0])]
        gram = gram + np.triu(gram, 1).T
        if np.trace(gram) > 2.0 * sd * math.sqrt(d):
            values, vectors = np.linalg.eigh(gram)
            solve = vectors @ np.diag(1.0 / (np.maximum(values, 0.0) + ridge)) @ vectors.T
            factors[i] = solve @ row[len(upper[0]):]
            noise[i] = sd * np.linalg.norm(solve)
    return factors, noise


@pytest.mark.parametrize(("epsilon", "options"), [
    (50.0, {"n_factors": 3, "n_epochs": 2, "max_ratings": 10, "reg": 0.5, "noise_reg": 0.7,
            "clip": 0.5}),
    (500.0, {"n_factors": 2, "n_epochs": 2, "max_ratings": 1, "reg": 2.0, "noise_reg": 0.0,
             "clip": 1.5})])
def test_each_step_of_the_fit_is_the_documented_construction(varied_data, varied, monkeypatch,
                                                             epsilon, options):
    # the item catalogue given (every item listed, δ all the releases'): the construction
    delta, share, entropy = 1e-6, 0.3, b"\7" * 16
    items = catalogues(varied_data)["items"]
    d, epochs, m = options["n_factors"], options["n_epochs"], options["max_ratings"]
    reg, gamma, c = options["reg"], options["noise_reg"], options["clip"]
    spies = {name: spy(monkeypatch, name) for name in
             ("user_factors", "item_statistics", "discrete_gaussian", "item_factors")}
    model = DPALS(epsilon=epsilon, delta=delta, baseline_share=share, items=items,
                  **options).fit_part(varied, entropy, True)
    rho = zcdp_rho(epsilon, delta)
    # 1. the effects: DPBaseline's release at share·ρ, its noise from the "effects" stream
    base = DPBaseline(epsilon=epsilon, delta=delta, items=items).fit_part(
        varied, derive_generator(entropy, "effects").bytes(16), True, rho=share * rho)
    assert model.baseline_.mu_ == base.mu_ and model.baseline_.noise_sd_ == base.noise_sd_
    pd.testing.assert_series_equal(model.baseline_.item_effects_, base.item_effects_)
    assert model.baseline_.privacy_report().entries == base.privacy_report().entries
    assert model.baseline_.privacy_report().seeded
    matrix = base.rating_space.matrix
    raw = base.residuals()
    residuals = np.minimum(np.maximum(raw, -c), c) / c
    counts = np.diff(matrix.indptr)
    weights = np.array([min(1.0, math.sqrt(m / n)) for n in counts])
    if c < 1.0:                                          # clipped on both sides
        assert (raw > c).any() and (raw < -c).any()
    if m > 1:                                            # weights below 1 and at 1
        assert (counts < m).any() and (counts > m).any()
    else:                                                # "solo": a weight 1 at m = 1
        assert counts[-1] == 1 and weights[-1] == 1.0
    # 2. the epochs: x_u from V, the integer statistics, the noise, the items' solves
    assert len(spies["user_factors"]) == epochs + 1
    assert len(spies["discrete_gaussian"]) == len(spies["item_factors"]) == epochs
    factors = derive_generator(entropy, "factors").normal(0.0, 1.0 / math.sqrt(d),
                                                          (matrix.shape[1], d))
    k = math.floor(math.sqrt(2 * m) * 2**GRID_BITS)
    sigma = k / math.sqrt(2 * (1 - share) * rho / epochs)
    sd = sigma * 2.0**-GRID_BITS
    ridge = reg + gamma * 2 * sd * math.sqrt(d)
    for epoch in range(epochs):
        (_, data, given, lam), own = spies["user_factors"][epoch]
        np.testing.assert_array_equal(given, factors)
        np.testing.assert_array_equal(data, residuals)
        assert lam == reg
        np.testing.assert_allclose(own, reference_user_factors(matrix, residuals, factors, reg),
                                   rtol=1e-9, atol=1e-12)
        sums, sensitivity = item_statistics(matrix, residuals, own, weights,
                                            math.sqrt(2 * m), GRID_BITS)
        assert sensitivity == k
        (values, scale, _), noisy = spies["discrete_gaussian"][epoch]
        np.testing.assert_array_equal(values, sums)
        assert scale == pytest.approx(sigma, rel=1e-12)
        (released, dim, lam, noise_sd), (factors, noise) = spies["item_factors"][epoch]
        np.testing.assert_array_equal(released, noisy * 2.0**-GRID_BITS)
        assert dim == d and noise_sd == pytest.approx(sd, rel=1e-12)
        assert lam == pytest.approx(ridge, rel=1e-12)
        expected, expected_noise = reference_item_factors(released, d, ridge, sd)
        np.testing.assert_allclose(factors, expected, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(noise, expected_noise, rtol=1e-9, atol=1e-12)
    # 3. the release and the answers: μ + b_i + b_u + C x_u·v_i, x_u from the last V
    np.testing.assert_array_equal(model.item_factors_.to_numpy(), factors)
    np.testing.assert_array_equal(model.factor_noise_.to_numpy(), noise)
    assert model.noise_sd_ == pytest.approx(sd, rel=1e-12)
    own = reference_user_factors(matrix, residuals, factors, reg)
    users, items = base.rating_space.users.ids, base.rating_space.items.ids
    assert list(model.item_factors_.index) == list(items)
    # the first user, and the first two items with factors (an item whose statistics stay
    # below the noise keeps factors 0): the answers tell users and items apart
    first, second = np.flatnonzero(np.all(factors != 0, axis=1))[:2]
    assert np.all(own[0] != 0)
    assert own[0] @ factors[first] != pytest.approx(own[1] @ factors[first])
    assert own[0] @ factors[first] != pytest.approx(own[0] @ factors[second])
    for u in (0, 1, len(users) - 1):
        for i in (0, first, second, len(items) - 1):
            est = model.predict(users[u], items[i], clip=False).est
            assert est == pytest.approx(base.predict(users[u], items[i], clip=False).est
                                        + c * own[u] @ factors[i], rel=1e-12, abs=1e-12)
    for u, i in (("stranger", items[0]), (users[0], "nope"), ("stranger", "nope")):
        assert model.predict(u, i, clip=False).est == base.predict(u, i, clip=False).est


# ------------------------------------------------------------------ the helpers' edges
def test_blocks_are_maximal_runs_of_users_of_at_most_block_ratings(monkeypatch):
    # in order, each block as many users as fit in BLOCK_RATINGS ratings, a user with
    # more alone
    monkeypatch.setattr(dp_als, "BLOCK_RATINGS", 4)
    indptr = np.concatenate([[0], np.cumsum([2, 2, 1, 3, 6, 0, 1, 4, 0])])
    assert dp_als._blocks(indptr) == [(0, 2), (2, 4), (4, 5), (5, 7), (7, 9)]


def test_item_statistics_refuse_integer_sums_that_could_pass_2_52():
    # n_users · K < 2^52 keeps every integer sum exact in float64: K = 1024 · 2^30 = 2^40
    below = sp.csr_matrix((4095, 2))
    sums, k = item_statistics(below, np.zeros(0), np.zeros((4095, 2)), np.ones(4095),
                              1024.0, 30)
    assert k == 2.0**40 and sums.shape == (2, 5) and not sums.any()
    with pytest.raises(ValueError, match="2\\^52"):
        item_statistics(sp.csr_matrix((4096, 2)), np.zeros(0), np.zeros((4096, 2)),
                        np.ones(4096), 1024.0, 30)


def test_item_statistics_without_users_are_zeros_with_the_same_sensitivity():
    sums, k = item_statistics(sp.csr_matrix((0, 3)), np.zeros(0), np.zeros((0, 2)),
                              np.zeros(0), 2.0, 4)
    assert k == 32.0
    np.testing.assert_array_equal(sums, np.zeros((3, 3 + 2)))


def test_an_item_exactly_at_the_gate_gets_no_factor():
    # d = 4, σ = 0.25: the gate 2σ sqrt(d) = 1 exactly; trace 1 is not above it
    d, upper = 4, np.triu_indices(4)
    grams = [0.25 * np.eye(d), 0.26 * np.eye(d)]
    stats = np.array([np.concatenate([g[upper], np.ones(d)]) for g in grams])
    factors, noise = item_factors(stats, d, 1.0, 0.25)
    assert not factors[0].any() and noise[0] == 0.0
    np.testing.assert_allclose(factors[1], np.ones(d) / 1.26, rtol=1e-12)


def test_a_listed_user_without_ratings_after_a_user_beyond_a_block(data, trainset, monkeypatch):
    monkeypatch.setattr(dp_als, "BLOCK_RATINGS", 10)     # every user here has 15 ratings
    users = catalogues(data)["users"] + ["zz-new"]   # sorted last, without ratings
    model = DPALS(epsilon=5.0, baseline_share=0.3, users=users, items=catalogues(data)["items"],
                  random_state=0).fit(trainset)
    assert (model.item_factors_.to_numpy() != 0).any()
    item = model.item_factors_.index[0]                  # no ratings: x_u = 0, the baseline's
    assert model.predict("zz-new", item).est == model.baseline_.predict("zz-new", item).est
