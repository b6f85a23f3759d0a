"""DPItemKNN's exact integer release: the grid, the integer sums and their l1 / l2
sensitivities, the samplers each release is handed (tests/test_dp_item_knn.py: the model)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from strategies import catalogues
from surprise import Dataset, Reader

from dprec import DPItemKNN, datasets
from dprec.endtoend.dp_item_knn import gaussian_sums, grid_levels, grid_residuals, integer_sums
from dprec.mechanisms import zcdp_epsilon, zcdp_rho

MECHANISMS = ("gaussian", "laplace")
#: w_u = 2^-ceil(p log2 |I_u|) and A = ceil(p log2 n_items), p = 1 (l2) or 2 (l1)
POWER = {"gaussian": 1, "laplace": 2, "l2": 1, "l1": 2}
NORM = {"gaussian": "l2", "laplace": "l1"}


@pytest.fixture(scope="module")
def data():
    return datasets.synthetic(150, 40, 2500, random_state=2)


@pytest.fixture(scope="module")
def trainset(data):
    return data.build_full_trainset()


def frame(rows) -> Dataset:
    return Dataset.load_from_df(pd.DataFrame(rows), Reader(rating_scale=(1, 5)))


def size(change, norm: str) -> float:
    """The l1 or l2 norm of an array of changes."""
    return np.abs(change).sum() if norm == "l1" else math.sqrt(np.square(change).sum())


@pytest.mark.parametrize("norm", ["l1", "l2"])
def test_one_user_moves_the_integer_sums_by_at_most_the_stated_sensitivity(data, trainset,
                                                                           norm):
    # the residuals are fixed by the first release (adaptive composition): remove one
    # user's row and compare the upper triangles (l1: Laplace, l2: Gaussian); the sums
    # must also be exact integers (over the 40 items of a public catalogue)
    algo = DPItemKNN(random_state=0, **catalogues(data)).fit(trainset)
    matrix, residuals = algo._space.matrix, algo._residuals_by_rating
    assert matrix.shape == (150, 40)
    cov, w, d_cov, d_w = integer_sums(matrix, residuals, 1.0, 4, norm)
    assert np.array_equal(cov, np.round(cov)) and np.array_equal(w, np.round(w))
    upper = np.triu_indices(matrix.shape[1])
    counts = np.diff(matrix.indptr)
    worst = [0.0, 0.0]
    for u in np.argsort(-counts)[:5].tolist() + [int(np.argmin(counts))]:
        keep = np.arange(matrix.shape[0]) != u
        rows = np.repeat(np.arange(matrix.shape[0]), counts)
        cov_u, w_u, _, _ = integer_sums(matrix[keep], residuals[rows != u], 1.0, 4, norm)
        worst[0] = max(worst[0], size((cov - cov_u)[upper], norm) / d_cov)
        worst[1] = max(worst[1], size((w - w_u)[upper], norm) / d_w)
    assert worst[0] <= 1.0 and worst[1] <= 1.0
    assert worst[1] > 0.25           # the bound is not loose by orders of magnitude


CLIPS = (1e-3, 0.1, 0.25, 0.3, 0.5, 0.75, 1.0, 1.3, 2.0, 7.3)


def worst_case_matrix(clip: float, bits: int, n_items: int = 5):
    """Users × items ratings with residuals that push every bound: a single-rating user at
    the largest residual (w = 1, tight), a user of every item at ±(C + h/2) and ±C (rounded
    beyond C if clipped first), and users of random residuals."""
    rng = np.random.default_rng(bits)
    h = 2.0**-bits
    rows = [[0], list(range(n_items)), [0, 2], [1, 3, 4], [0, 1, 2, 3]]
    raw = [[10 * clip], [clip + h / 2, -clip, clip, -clip - h / 2, 3 * clip],
           [clip, clip], list(rng.uniform(-2 * clip, 2 * clip, 3)),
           list(rng.uniform(-2 * clip, 2 * clip, 4))]
    indptr = np.cumsum([0] + [len(r) for r in rows])
    matrix = sp.csr_matrix((np.ones(indptr[-1]), np.concatenate(rows), indptr),
                           shape=(len(rows), n_items))
    return matrix, np.concatenate(raw)


@pytest.mark.parametrize("norm", ["l1", "l2"])
@pytest.mark.parametrize("bits", range(13))
def test_the_covariance_sensitivity_bounds_every_accepted_clip_and_grid(trainset, bits, norm):
    # finding 3 (#33): for every (clip, grid_bits) the model accepts, one user added or
    # removed moves the upper triangle of the integer covariance by at most the declared
    # sensitivity, in l1 (Laplace: w_u |I_u|^2 <= 1) and in l2 (Gaussian: w_u |I_u| <= 1)
    # (rounding first, clipping after, keeps every residual within C)
    for clip in CLIPS:
        if clip < 2.0**-bits:                                   # refused, by name
            with pytest.raises(ValueError, match="clip.*grid_bits"):
                DPItemKNN(clip=clip, grid_bits=bits).fit(trainset)
            continue
        matrix, raw = worst_case_matrix(clip, bits)
        residuals = grid_residuals(raw, clip, bits)
        assert np.abs(residuals).max() <= clip
        cov, w, d_cov, d_w = integer_sums(matrix, residuals, clip, bits, norm)
        assert d_w == 2.0 ** math.ceil(POWER[norm] * math.log2(5))        # A, of 5 items
        assert d_cov == grid_levels(clip, bits) ** 2 * d_w <= clip**2 * 2.0 ** (2 * bits) * d_w
        assert np.array_equal(cov, np.round(cov)) and float(d_cov).is_integer()
        upper = np.triu_indices(matrix.shape[1])
        counts = np.diff(matrix.indptr)
        users = np.repeat(np.arange(matrix.shape[0]), counts)
        changes = []
        for u in range(matrix.shape[0]):
            keep = np.arange(matrix.shape[0]) != u
            cov_u, w_u, _, _ = integer_sums(matrix[keep], residuals[users != u], clip, bits,
                                            norm)
            changes.append((size((cov - cov_u)[upper], norm), size((w - w_u)[upper], norm)))
        changes = np.array(changes)
        assert np.all(changes[:, 0] <= d_cov) and np.all(changes[:, 1] <= d_w), (clip, bits)
        assert changes[0, 0] == d_cov and changes[0, 1] == d_w    # the single-rating user:
        assert changes[1:, 0].max() > 0.1 * d_cov                 # tight; others not far off


def test_rounded_residuals_never_exceed_the_clip():
    # finding 3 (#33): at clip = 0.75 and grid_bits = 1, clipping first and rounding after
    # gave residuals of 1.0, beyond C, so C²/g bounded nothing (the covariance release
    # spent 0.622 where the ledger said 0.35)
    rows = [(f"u{u}", f"i{i}", 5.0 if (u + i) % 2 else 1.0) for u in range(12) for i in range(4)]
    algo = DPItemKNN(epsilon=1e6, clip=0.75, grid_bits=1, random_state=0)
    residuals = algo.fit(frame(rows).build_full_trainset())._residuals_by_rating
    assert np.abs(residuals).max() <= 0.75
    assert np.abs(residuals).max() == 0.5 and np.all(residuals * 2 == np.round(residuals * 2))


def test_integer_sums_refuse_residuals_the_sensitivity_does_not_bound():
    matrix, raw = worst_case_matrix(0.75, 1)
    with pytest.raises(ValueError, match="grid_residuals"):
        integer_sums(matrix, np.clip(raw, -0.75, 0.75), 0.75, 1, "l1")    # off the grid, > C_h
    with pytest.raises(ValueError, match="2\\^53"):
        integer_sums(matrix, grid_residuals(raw, 7.3e6, 12), 7.3e6, 12, "l1")
    raw_copy = raw.copy()
    grid_residuals(raw, 0.75, 1)
    np.testing.assert_array_equal(raw, raw_copy)                       # input not modified


def test_integer_sums_refuse_a_norm_they_do_not_bound():
    """An unknown norm was read as ℓ2, whose sensitivity is not ℓ1's."""
    matrix, raw = worst_case_matrix(0.75, 1)
    with pytest.raises(ValueError, match="^norm must be one of"):
        integer_sums(matrix, grid_residuals(raw, 0.75, 1), 0.75, 1, "linf")


def test_the_integer_release_is_noised_with_its_sensitivity(trainset):
    # each matrix's upper triangle gets discrete Laplace noise of scale Δ/ε (its own Δ),
    # mirrored; the privacy map of that scale gives back ε
    from dprec.endtoend.dp_item_knn import noisy_sums

    n = 60
    sums = (np.full((n, n), 7.0), np.zeros((n, n)))
    (first, second), spent = noisy_sums(sums, (4.0, 40.0), 0.5, np.random.default_rng(0))
    assert spent == [pytest.approx(0.5), pytest.approx(0.5)]
    for noisy, scale, centre in ((first, 8.0, 7.0), (second, 80.0, 0.0)):
        assert np.array_equal(noisy, noisy.T) and np.array_equal(noisy, np.round(noisy))
        noise = (noisy - centre)[np.triu_indices(n)]
        q = np.exp(-1.0 / scale)
        assert noise.std() == pytest.approx(np.sqrt(2 * q) / (1 - q), rel=0.1)
        assert abs(noise.mean()) < 0.15 * scale
    assert sums[0][0, 0] == 7.0 and not sums[1].any()                  # inputs not modified
    assert grid_levels(2.0, 2) == 8 and grid_levels(0.75, 1) == 1 and grid_levels(7.3, 3) == 58


def test_the_gaussian_release_is_noised_with_its_sensitivity():
    # each upper triangle gets discrete Gaussian noise of σ = Δ/√(2ρ) (its own Δ), mirrored;
    # the returned sd is the weights' noise in W's units, 1/√(2ρ); without noise, the sums
    n = 60
    sums = (np.full((n, n), 7.0), np.zeros((n, n)))
    (first, second), sd = gaussian_sums(sums, (4.0, 40.0), 0.125, np.random.default_rng(0))
    assert sd == 2.0
    for noisy, sigma, centre in ((first, 8.0, 7.0), (second, 80.0, 0.0)):
        assert np.array_equal(noisy, noisy.T) and np.array_equal(noisy, np.round(noisy))
        noise = (noisy - centre)[np.triu_indices(n)]
        assert noise.std() == pytest.approx(sigma, rel=0.06)
        assert abs(noise.mean()) < 0.15 * sigma
    assert sums[0][0, 0] == 7.0 and not sums[1].any()                  # inputs not modified
    exact = (np.arange(16.0).reshape(4, 4) + np.arange(16.0).reshape(4, 4).T, np.eye(4))
    (cov, w), sd = gaussian_sums(exact, (1.0, 3.0), 1e12, np.random.default_rng(0))
    np.testing.assert_array_equal(cov, exact[0])
    np.testing.assert_array_equal(w, exact[1])
    assert sd == pytest.approx(1 / math.sqrt(2e12))


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_each_release_gets_its_sums_its_sensitivity_and_its_share(data, trainset, monkeypatch,
                                                                  mechanism):
    # the sampler receives the upper triangles of integer_sums in the mechanism's norm, each
    # with its own sensitivity: σ = Δ/√(2ρ_each), ρ_each = (1 − s)ρ/2, the baseline's zCDP
    # sρ, the ledger's ε that of ρ (Gaussian; δ given); t = Δ/ε_each, ε_each = (1 − s)ε/2
    # (Laplace); over the public catalogues, so that δ is the release's own
    import dprec.endtoend.covariance_release as module

    name = "discrete_gaussian" if mechanism == "gaussian" else "discrete_laplace"
    real, calls = getattr(module, name), []

    def spy(values, scale, rng):
        calls.append((np.array(values), scale))
        return real(values, scale, rng)

    monkeypatch.setattr(module, name, spy)
    delta = 1e-7 if mechanism == "gaussian" else None
    algo = DPItemKNN(epsilon=3.0, mechanism=mechanism, delta=delta, baseline_share=0.2,
                     clip=0.5, grid_bits=3, random_state=1, **catalogues(data)).fit(trainset)
    cov, w, d_cov, d_w = integer_sums(algo._space.matrix, algo._residuals_by_rating, 0.5, 3,
                                      NORM[mechanism])
    assert d_w == 2.0 ** math.ceil(POWER[mechanism] * math.log2(40)) and d_cov == 16 * d_w
    upper = np.triu_indices(len(w))
    assert len(calls) == 2
    np.testing.assert_array_equal(calls[0][0], cov[upper])
    np.testing.assert_array_equal(calls[1][0], w[upper])
    entries, base = algo.privacy_report().entries, algo.baseline_.privacy_report().entries
    if mechanism == "gaussian":
        rho = zcdp_rho(3.0, 1e-7)
        each = math.sqrt(2.0 * (0.8 * rho / 2.0))
        assert [c[1] for c in calls] == pytest.approx([d_cov / each, d_w / each], rel=1e-12)
        assert [(e.epsilon, e.delta) for e in base] == [
            (pytest.approx(zcdp_epsilon(0.2 * rho, 1e-7), rel=1e-9), 1e-7)]
        assert len(entries) == 1 and entries[0].delta == 1e-7
        assert entries[0].epsilon == pytest.approx(3.0, rel=1e-6) and entries[0].epsilon <= 3.0
    else:
        assert [c[1] for c in calls] == pytest.approx([d_cov / 1.2, d_w / 1.2], rel=1e-12)
        assert sum(e.epsilon for e in base) == pytest.approx(0.6)
        assert [e.epsilon for e in entries[2:]] == pytest.approx([1.2, 1.2])
    np.testing.assert_array_equal(grid_residuals([0.26, -0.24, 0.74, 5.0, -5.0], 0.75, 1),
                                  [0.5, -0.0, 0.5, 0.5, -0.5])


@pytest.mark.parametrize(("norm", "grid"), [
    ("l1", ((1, 2, 12.0), (2, 2, 3.0), (5, 5, 3.0), (40, 11, 3.0))),
    ("l2", ((1, 1, 6.0), (2, 1, 3.0), (5, 3, 3.0), (40, 6, 3.0)))])
def test_the_integer_sums_state_their_grid_and_refuse_what_it_does_not_bound(norm, grid):
    # three users of every item: W 2^A = 3 w_u 2^A, w_u = 2^-⌈p log₂ n⌉ (1 for one item),
    # A = ⌈p log₂ max(n, 2)⌉, p = 2 (l1) or 1 (l2); m = 2
    for n_items, top, each in grid:
        matrix = sp.csr_matrix(np.ones((3, n_items)))
        _, w, d_cov, d_w = integer_sums(matrix, np.full(3 * n_items, 0.5), 1.0, 1, norm)
        assert d_w == 2.0**top and d_cov == 4 * 2.0**top
        assert np.array_equal(w, np.full((n_items, n_items), each))
    matrix, raw = worst_case_matrix(0.75, 1)
    on_grid = grid_residuals(raw, 0.75, 1)
    with pytest.raises(ValueError, match="grid_residuals"):          # on the grid, beyond C_h
        integer_sums(matrix, on_grid * 2, 0.75, 1, norm)
    with pytest.raises(ValueError, match="grid_residuals"):          # within C_h, off the grid
        integer_sums(matrix, on_grid * 0.5, 0.75, 1, norm)
    clip = 1e7 / 4096                                                  # m = 10^7 at 12 bits
    small = sp.csr_matrix(np.ones((5, 5)))
    if norm == "l1":
        with pytest.raises(ValueError, match="2\\^53"):               # 5 · 10^14 · 2^5 ≥ 2^53
            integer_sums(small, np.zeros(25), clip, 12, norm)
        integer_sums(small[:2], np.zeros(10), clip, 12, norm)         # 2 · 10^14 · 2^5 < 2^53


def test_without_noise_the_released_sums_are_the_sums():
    from dprec.endtoend.dp_item_knn import noisy_sums

    sums = (np.arange(16.0).reshape(4, 4) + np.arange(16.0).reshape(4, 4).T, np.eye(4))
    (cov, w), spent = noisy_sums(sums, (1.0, 1.0), 1e12, np.random.default_rng(0))
    np.testing.assert_array_equal(cov, sums[0])
    np.testing.assert_array_equal(w, sums[1])


@pytest.mark.parametrize(("norm", "levels"), [("l1", 2.0**20), ("l2", 2.0**23)])
def test_the_exactness_bound_is_strict_at_two_to_the_53(norm, levels):
    # 2 users, 64 items (A = 12 with l1, 6 with l2), m = 2^20 or 2^23: n m² 2^A = 2^53
    # exactly, which float64 may round
    matrix = sp.csr_matrix(np.ones((2, 64)))
    with pytest.raises(ValueError, match="2\\^53"):
        integer_sums(matrix, np.zeros(128), levels / 4096, 12, norm)
    integer_sums(matrix, np.zeros(128), (levels - 1) / 4096, 12, norm)
