"""Ranking DP privatizers: exact privacy by enumeration, sampler laws, utility.

Privacy is checked on the exact output law, enumerated over all ``m!``
outputs: for Mallows from its definition (``exp(θT)`` normalised by explicit
summation), for Laplace by numerical integration
(:func:`laplace_order_probabilities`, accurate to ~1e-13, itself checked
against the closed-form pair marginals and against sampling).  Both
mechanisms are equivariant under relabelling the items, so checking the
identity input against each of its ``m(m-1)/2`` swap-neighbours covers every
neighbouring pair; ``test_equivariance_all_inputs`` checks that directly for
m = 4.
"""

from __future__ import annotations

import copy
import itertools
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats
from strategies import fuzz, orders_lists, raises_naming

from dprec.ranking import (
    concordant_pairs,
    laplace_expected_concordant,
    laplace_order_probabilities,
    laplace_privatize,
    mallows_expected_concordant,
    mallows_log_normaliser,
    mallows_privatize,
    mallows_theta,
)
from dprec.ranking.mallows import insertion_positions, truncated_geometric


# ---------------------------------------------------------------- helpers
def _outputs(m: int) -> np.ndarray:
    return np.array(list(itertools.permutations(range(m))), dtype=np.int64)


def _concordant(outputs: np.ndarray, reference: np.ndarray) -> np.ndarray:
    ranks = np.argsort(reference)[outputs]
    m = outputs.shape[1]
    upper = np.triu(np.ones((m, m), dtype=bool), 1)
    return ((ranks[:, :, None] < ranks[:, None, :]) & upper).sum(axis=(1, 2))


def _mallows_log_pmf(outputs: np.ndarray, reference: np.ndarray, theta: float) -> np.ndarray:
    """The definition: exp(θ T) normalised by summing over every output."""
    x = theta * _concordant(outputs, reference)
    return x - (x.max() + np.log(np.exp(x - x.max()).sum()))


def _swap_neighbours(m: int) -> list[np.ndarray]:
    out = []
    for a, b in itertools.combinations(range(m), 2):
        s = np.arange(m)
        s[[a, b]] = s[[b, a]]
        out.append(s)
    return out


def _max_loss_mallows(m: int, theta: float) -> float:
    outputs = _outputs(m)
    base = _mallows_log_pmf(outputs, np.arange(m), theta)
    return max(np.abs(base - _mallows_log_pmf(outputs, s, theta)).max()
               for s in _swap_neighbours(m))


def _frequencies(samples: np.ndarray, outputs: np.ndarray) -> np.ndarray:
    m = outputs.shape[1]
    code = samples @ (m ** np.arange(m))
    table = outputs @ (m ** np.arange(m))
    index = np.searchsorted(np.sort(table), code)
    counts = np.bincount(index, minlength=len(table))
    return counts[np.argsort(np.argsort(table))]


def _check_law(samples: np.ndarray, outputs: np.ndarray, probs: np.ndarray) -> None:
    """Chi-square (p > 1e-4) and TV below twice its expected size under H0."""
    n = len(samples)
    counts = _frequencies(samples, outputs)
    assert counts.sum() == n
    tv = 0.5 * np.abs(counts / n - probs).sum()
    expected_tv = np.sum(np.sqrt(probs * (1 - probs) / (2 * np.pi * n)))
    assert tv < 2 * expected_tv, (tv, expected_tv)
    assert stats.chisquare(counts, probs * n).pvalue > 1e-4


# ---------------------------------------------------------------- building blocks
def test_insertion_positions_match_list_insert():
    rng = np.random.default_rng(1)
    lengths = [0, 1, 2, 3, 7, 8, 9, 33, 64, 100]
    codes = np.concatenate([[rng.integers(0, t + 1) for t in range(m)] for m in lengths]
                           ).astype(np.int64)
    owner = np.repeat(np.arange(len(lengths)), lengths)
    rank = np.concatenate([np.arange(m) for m in lengths]).astype(np.int64)
    pos = insertion_positions(codes, owner, rank)
    start = 0
    for m in lengths:
        order: list[int] = []
        for t in range(m):
            order.insert(int(codes[start + t]), t)
        expected = np.empty(m, dtype=np.int64)
        expected[order] = np.arange(m)
        np.testing.assert_array_equal(pos[start:start + m], expected)
        start += m


@pytest.mark.parametrize("n,theta", [(1, 0.3), (4, 1e-12), (6, 0.7), (10, 2.5)])
def test_truncated_geometric_law(n, theta):
    rng = np.random.default_rng(2)
    size = 60_000
    v = truncated_geometric(rng.random(size), np.full(size, n), np.full(size, theta))
    assert v.min() >= 0 and v.max() <= n - 1
    p = np.exp(-theta * np.arange(n))
    p /= p.sum()
    counts = np.bincount(v, minlength=n)
    if n > 1:
        assert stats.chisquare(counts, p * size).pvalue > 1e-4


def test_truncated_geometric_infinite_theta_is_zero():
    v = truncated_geometric(np.array([0.0, 0.5, 1 - 2**-53]), np.array([5, 5, 5]),
                             np.array([np.inf] * 3))
    np.testing.assert_array_equal(v, 0)


# ---------------------------------------------------------------- exact privacy
@pytest.mark.parametrize("m", [2, 3, 4, 5, 6])
@pytest.mark.parametrize("eps", [0.5, 2.0])
def test_mallows_enumeration_privacy_loss(m, eps):
    tight = float(mallows_theta(eps, m))
    conservative = float(mallows_theta(eps, m, "conservative"))
    # the tight calibration attains ε exactly; the conservative one stays below
    assert _max_loss_mallows(m, tight) == pytest.approx(eps, rel=1e-9)
    assert _max_loss_mallows(m, conservative) == pytest.approx(eps * (2 * m - 3) / (2 * m),
                                                               rel=1e-9)
    # any larger θ breaks the definition (so ε/(2m-3) is the largest valid one)
    assert _max_loss_mallows(m, tight * 1.01) > eps
    # the extracted Lemma 1, θ = εm/2, is not ε-ranking DP for m >= 3
    if m >= 3:
        assert _max_loss_mallows(m, eps * m / 2) > eps


@pytest.mark.parametrize("m", [3, 5])
def test_mallows_normaliser_closed_form(m):
    theta = 0.37
    outputs = _outputs(m)
    discordant = m * (m - 1) // 2 - _concordant(outputs, np.arange(m))
    direct = np.log(np.exp(-theta * discordant).sum())
    assert mallows_log_normaliser(m, theta) == pytest.approx(direct, rel=1e-12)


def test_equivariance_all_inputs():
    """Every neighbouring pair (not only identity vs swap) has the same worst loss, m = 4."""
    m, eps = 4, 1.0
    theta = float(mallows_theta(eps, m))
    outputs = _outputs(m)
    worst_mallows = worst_laplace = 0.0
    laplace = {tuple(r): np.log(laplace_order_probabilities(m, eps, r)[1]) for r in outputs}
    for ref in outputs:
        for a, b in itertools.combinations(range(m), 2):
            other = ref.copy()
            other[[a, b]] = other[[b, a]]
            loss = np.abs(_mallows_log_pmf(outputs, ref, theta)
                          - _mallows_log_pmf(outputs, other, theta)).max()
            worst_mallows = max(worst_mallows, loss)
            worst_laplace = max(worst_laplace,
                                np.abs(laplace[tuple(ref)] - laplace[tuple(other)]).max())
    assert worst_mallows == pytest.approx(eps, rel=1e-9)
    identity = np.log(laplace_order_probabilities(m, eps)[1])
    from_identity = max(np.abs(identity - np.log(laplace_order_probabilities(m, eps, s)[1])).max()
                        for s in _swap_neighbours(m))
    assert worst_laplace == pytest.approx(from_identity, rel=1e-9)


@pytest.mark.parametrize("m", [2, 3, 4, 5, 6])
@pytest.mark.parametrize("eps", [0.5, 2.0])
def test_laplace_enumeration_privacy_loss(m, eps):
    outputs, base = laplace_order_probabilities(m, eps)
    assert base.sum() == pytest.approx(1.0, abs=1e-12)
    assert base.min() > 0
    # the integration reproduces the closed-form pair marginal (first vs last item)
    lam = 2 * (m - 1) / eps
    g = m - 1
    keep = base[np.argsort(outputs, axis=1)[:, 0] < np.argsort(outputs, axis=1)[:, m - 1]].sum()
    assert keep == pytest.approx(1 - 0.5 * math.exp(-g / lam) * (1 + g / (2 * lam)), abs=1e-12)
    loss = max(np.abs(np.log(base) - np.log(laplace_order_probabilities(m, eps, s)[1])).max()
               for s in _swap_neighbours(m))
    assert loss <= eps + 1e-9
    assert loss > 0.4 * eps  # the bound is not vacuous: the loss is of the order of ε


# ---------------------------------------------------------------- sampler laws
@pytest.mark.parametrize("m,eps", [(4, 1.5), (5, 4.0)])
def test_mallows_sampler_matches_pmf(m, eps):
    items = np.array([17, 3, 42, 8, 0][:m])
    reference = np.arange(m)
    n = 100_000
    draws = mallows_privatize(np.tile(items, (n, 1)), eps, random_state=3)
    # relabel item ids to their rank in the input: outputs over 0..m-1
    samples = np.argsort(items)[np.searchsorted(np.sort(items), draws)]
    outputs = _outputs(m)
    probs = np.exp(_mallows_log_pmf(outputs, reference, float(mallows_theta(eps, m))))
    _check_law(samples, outputs, probs)


def test_laplace_sampler_matches_integrated_law():
    m, eps, n = 4, 2.0, 100_000
    draws = laplace_privatize(np.tile(np.arange(m), (n, 1)), eps, random_state=4)
    outputs, probs = laplace_order_probabilities(m, eps)
    _check_law(draws, outputs, probs)


# ---------------------------------------------------------------- utility (Lemma 4)
@pytest.mark.parametrize("eps", [1.0, 5.0])
def test_mallows_mean_concordance_lemma4(eps):
    m, n = 50, 4000
    draws = mallows_privatize(np.tile(np.arange(m), (n, 1)), eps, random_state=5)
    t = concordant_pairs(np.arange(m), draws)
    mean, var = mallows_expected_concordant(m, float(mallows_theta(eps, m)))
    assert abs(t.mean() - mean) < 4 * math.sqrt(var / n)
    assert t.var() == pytest.approx(var, rel=0.15)


def test_heterogeneous_epsilon_in_one_batch():
    m, n = 50, 3000
    eps = np.repeat([0.5, 10.0], n)
    draws = mallows_privatize([np.arange(m)] * (2 * n), eps, random_state=6)
    t = concordant_pairs(np.arange(m), np.array(draws))
    for k, e in enumerate([0.5, 10.0]):
        mean, var = mallows_expected_concordant(m, float(mallows_theta(e, m)))
        assert abs(t[k * n:(k + 1) * n].mean() - mean) < 4 * math.sqrt(var / n)


@pytest.mark.parametrize("eps", [1.0, 5.0])
def test_laplace_mean_concordance_pairwise_formula(eps):
    m, n = 50, 4000
    draws = laplace_privatize(np.tile(np.arange(m), (n, 1)), eps, random_state=7)
    t = concordant_pairs(np.arange(m), draws)
    se = t.std(ddof=1) / math.sqrt(n)
    assert abs(t.mean() - laplace_expected_concordant(m, eps)) < 4 * se


@pytest.mark.parametrize("mechanism", [mallows_privatize, laplace_privatize])
@pytest.mark.parametrize("eps", [1e9, np.inf])
def test_huge_epsilon_returns_input(mechanism, eps):
    rng = np.random.default_rng(8)
    orders = [rng.permutation(1000)[:m] for m in (0, 1, 2, 5, 80, 300)]
    out = mechanism(orders, eps, random_state=0)
    for a, b in zip(out, orders, strict=True):
        np.testing.assert_array_equal(a, b)


def test_small_epsilon_is_nearly_uniform():
    m, n = 30, 3000
    draws = mallows_privatize(np.tile(np.arange(m), (n, 1)), 1e-6, random_state=9)
    t = concordant_pairs(np.arange(m), draws)
    pairs = m * (m - 1) / 2
    sd = math.sqrt(m * (m - 1) * (2 * m + 5) / 72)  # Kendall's null variance
    assert abs(t.mean() - pairs / 2) < 4 * sd / math.sqrt(n)


# ---------------------------------------------------------------- forms and checks
def test_forms_dtypes_and_no_mutation():
    single = np.array([5, 2, 9, 1], dtype=np.int32)
    matrix = np.array([[0, 1, 2], [2, 1, 0]])
    ragged = [np.array([3, 1, 4, 10]), np.array([7]), np.array([], dtype=np.int64)]
    copies = [single.copy(), matrix.copy(), [a.copy() for a in ragged]]
    for mech in (mallows_privatize, laplace_privatize):
        out = mech(single, 1.0, 0)
        assert isinstance(out, np.ndarray) and out.dtype == np.int32
        assert sorted(out.tolist()) == sorted(single.tolist())
        out = mech(matrix, 1.0, 0)
        assert out.shape == matrix.shape
        assert all(sorted(r) == [0, 1, 2] for r in out.tolist())
        out = mech(ragged, [1.0, 2.0, 3.0], 0)
        assert isinstance(out, list) and [len(a) for a in out] == [4, 1, 0]
        assert sorted(out[0].tolist()) == [1, 3, 4, 10]
        out = mech([4, 2, 8], 1.0, 0)
        assert isinstance(out, np.ndarray) and sorted(out.tolist()) == [2, 4, 8]
        assert mech([], 1.0, 0) == []
    np.testing.assert_array_equal(single, copies[0])
    np.testing.assert_array_equal(matrix, copies[1])
    for a, b in zip(ragged, copies[2], strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("mechanism", [mallows_privatize, laplace_privatize])
def test_seeded_reproducible(mechanism):
    orders = [np.arange(40), np.arange(10)[::-1]]
    a = mechanism(orders, 1.0, random_state=11)
    b = mechanism(orders, 1.0, random_state=11)
    c = mechanism(orders, 1.0, random_state=12)
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    assert not all(np.array_equal(x, y) for x, y in zip(a, c, strict=True))


@pytest.mark.parametrize("mechanism", [mallows_privatize, laplace_privatize])
def test_validation(mechanism):
    order = np.arange(5)
    with pytest.raises(ValueError, match="epsilon"):
        mechanism(order, 0.0, 0)
    with pytest.raises(ValueError, match="epsilon"):
        mechanism(order, -1.0, 0)
    with pytest.raises(ValueError, match="epsilon"):
        mechanism(order, float("nan"), 0)
    with pytest.raises(ValueError, match="epsilon"):
        mechanism([order, order], [1.0, 2.0, 3.0], 0)
    with pytest.raises(ValueError, match="epsilon"):
        mechanism([order, order], [1.0, float("nan")], 0)
    with pytest.raises(TypeError, match="epsilon"):
        mechanism(order, "1", 0)
    with pytest.raises(TypeError, match="orders"):
        mechanism(np.arange(5.0), 1.0, 0)
    with pytest.raises(TypeError, match="orders"):
        mechanism("abc", 1.0, 0)
    with pytest.raises(ValueError, match="orders"):
        mechanism(np.array([1, 2, 1]), 1.0, 0)
    with pytest.raises(ValueError, match="orders"):
        mechanism(np.zeros((2, 2, 2), dtype=int), 1.0, 0)
    with pytest.raises(TypeError, match="random_state"):
        mechanism(order, 1.0, "seed")


def test_calibration_parameter():
    with pytest.raises(ValueError, match="calibration"):
        mallows_privatize(np.arange(4), 1.0, 0, calibration="paper")
    assert float(mallows_theta(1.0, 10)) == pytest.approx(1 / 17)
    assert float(mallows_theta(1.0, 10, "conservative")) == pytest.approx(1 / 20)
    assert float(mallows_theta(1.0, 2)) == pytest.approx(1.0)


# ------------------------------------------------------------------ calibration, pinned
def test_calibration_maps_and_their_edges():
    from dprec.ranking.mallows import laplace_scale, mallows_theta

    np.testing.assert_allclose(mallows_theta([1.0, 2.0], [5, 2]), [1 / 7, 2.0])
    np.testing.assert_allclose(mallows_theta(1.0, 5, calibration="conservative"), 0.1)
    assert mallows_theta(np.inf, 5) == np.inf
    np.testing.assert_allclose(laplace_scale(2.0, [5, 1, 0]), [4.0, 0.0, 0.0])
    assert mallows_theta(np.float64(3.0), np.int64(3)) == 1.0


def test_no_privacy_returns_the_order_and_warns_of_nothing():
    import warnings

    from dprec.ranking import laplace_privatize

    order = np.array([4, 0, 3, 1, 2])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(mallows_privatize(order, np.inf, 0), order)
        huge = mallows_privatize(np.tile(order, (200, 1)), 1e6, 0)    # θ huge: identity
        assert (huge == order).all()
        assert laplace_privatize(order, np.inf, 0).tolist() == order.tolist()
        small = mallows_privatize(np.tile(order, (2000, 1)), 1e-9, 0)  # θ ≈ 0: uniform
    assert sorted(np.unique(small[:, 0]).tolist()) == sorted(order.tolist())


@pytest.mark.parametrize("epsilon, error, match", [
    (np.array([True, False]), TypeError, "^epsilon must be a number or an array"),
    (np.array(["a", "b"]), TypeError, "^epsilon must be a number or an array"),
    (np.array([1.0, np.nan]), ValueError, "^epsilon must not contain NaN"),
    (np.array([1.0, 0.0]), ValueError, r"^epsilon must be > 0 \(inf for no privacy\)"),
    (np.array([1.0, 2.0, 3.0]), ValueError, r"^epsilon must be one number or one per order"),
    (0.0, ValueError, "^epsilon must"),
])
def test_per_order_budgets_are_checked(epsilon, error, match):
    with pytest.raises(error, match=match):
        mallows_privatize([np.arange(3), np.arange(4)], epsilon, 0)


def test_a_zero_dimensional_budget_is_one_number():
    out = mallows_privatize([np.arange(3), np.arange(4)], np.array(1e6), 0)
    assert [o.tolist() for o in out] == [[0, 1, 2], [0, 1, 2, 3]]


# ---------------------------------------------------------------- properties (hypothesis)
@fuzz(200)
@given(orders_lists, st.data(), st.sampled_from(["mallows", "laplace"]))
def test_privatizers_return_permutations(orders, data, mechanism):
    form = data.draw(st.sampled_from(["list", "single", "matrix"]))
    if form == "single":
        orders = orders[0] if orders else np.arange(0, dtype=np.int64)
        n = 1
    elif form == "matrix":
        width = data.draw(st.integers(0, 6))
        rows = data.draw(st.integers(0, 4))
        orders = np.array([data.draw(st.permutations(range(width))) for _ in range(rows)],
                          dtype=np.int64).reshape(rows, width)
        n = rows
    else:
        n = len(orders)
    if data.draw(st.booleans()) or form == "single":
        epsilon = data.draw(st.one_of(st.floats(1e-3, 1e3), st.just(math.inf)))
    else:
        epsilon = data.draw(st.lists(st.one_of(st.floats(1e-3, 1e3), st.just(math.inf)),
                                     min_size=n, max_size=n))
    before = copy.deepcopy(orders)
    seed = data.draw(st.integers(0, 2**32))
    if mechanism == "mallows":
        calibration = data.draw(st.sampled_from(["tight", "conservative"]))
        out = mallows_privatize(orders, epsilon, seed, calibration=calibration)
        again = mallows_privatize(orders, epsilon, seed, calibration=calibration)
    else:
        out = laplace_privatize(orders, epsilon, seed)
        again = laplace_privatize(orders, epsilon, seed)
    pieces_in = [orders] if form == "single" else list(orders)
    pieces_out = [out] if form == "single" else list(out)
    assert len(pieces_out) == len(pieces_in)
    for a, b in zip(pieces_in, pieces_out):
        assert sorted(np.asarray(a).tolist()) == sorted(np.asarray(b).tolist())
        assert np.asarray(b).dtype == np.asarray(a).dtype
    if form == "matrix":
        assert out.shape == orders.shape
    for a, b in zip(pieces_out, [again] if form == "single" else list(again)):
        np.testing.assert_array_equal(a, b)  # same seed, same draw
    if form == "single":
        np.testing.assert_array_equal(orders, before)
    else:
        for a, b in zip(orders, before):
            np.testing.assert_array_equal(a, b)


@fuzz(100)
@given(st.sampled_from(["mallows", "laplace"]), st.sampled_from([
    ("orders", [np.array([1, 2, 1])]),
    ("orders", np.array([0.5, 1.5])),
    ("orders", "abc"),
    ("orders", np.zeros((2, 2, 2), dtype=int)),
    ("orders", [np.array([True, False])]),
    ("epsilon", 0.0), ("epsilon", -1.0), ("epsilon", math.nan), ("epsilon", "1"),
    ("epsilon", [1.0, 2.0, 3.0]), ("epsilon", [1.0, math.nan]), ("epsilon", [1.0, 0.0]),
    ("epsilon", True),
    ("random_state", -1), ("random_state", "x"),
    ("calibration", "paper"),
]))
def test_privatizers_reject_bad_arguments(mechanism, case):
    name, value = case
    kwargs = {"orders": [np.array([3, 1, 2]), np.array([5, 4])], "epsilon": 1.0,
              "random_state": 0}
    if name == "calibration":
        if mechanism == "laplace":
            return
        kwargs["calibration"] = value
    else:
        kwargs[name] = value
    function = mallows_privatize if mechanism == "mallows" else laplace_privatize
    raises_naming(lambda: function(**kwargs), name)


@pytest.mark.parametrize("privatize", [mallows_privatize, laplace_privatize])
def test_privatizers_accept_a_matrix_without_rows(privatize):
    """Regression: a (0, m) matrix of orders raised IndexError."""
    out = privatize(np.zeros((0, 3), dtype=np.int32), 1.0, 0)
    assert out.shape == (0, 3) and out.dtype == np.int32
    assert privatize(np.zeros((2, 0), dtype=np.int64), 1.0, 0).shape == (2, 0)
