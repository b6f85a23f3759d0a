"""Properties of every mechanism of dprec.mechanisms over arbitrary inputs (hypothesis):
shapes, laws, reproducibility and clear errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import finite_arrays, fuzz, raises_naming, random_states

from dprec import mechanisms as M


# ---------------------------------------------------------------- properties (hypothesis)
@fuzz(200)
@given(finite_arrays, st.floats(1e-4, 1e4), random_states,
       st.sampled_from(["lattice", "numpy", "Lattice"]))
def test_laplace_of_any_finite_array(values, scale, random_state, sampler):
    before = values.copy()
    out = M.laplace(values, scale, random_state, sampler=sampler)
    assert out.shape == values.shape and out.dtype == np.float64
    assert np.isfinite(out).all()
    np.testing.assert_array_equal(values, before)
    if sampler.lower() == "lattice":  # every output lies on the scale's grid
        steps = out / M.laplace_grid(scale)
        np.testing.assert_array_equal(steps, np.round(steps))
    if isinstance(random_state, int):
        np.testing.assert_array_equal(
            out, M.laplace(values, scale, random_state, sampler=sampler))


@fuzz(120)
@given(st.sampled_from([
    ("scale", {"scale": 0.0}), ("scale", {"scale": -1.0}), ("scale", {"scale": math.nan}),
    ("scale", {"scale": math.inf}), ("scale", {"scale": "1"}),
    ("values", {"values": np.array([1.0, math.nan])}), ("values", {"values": np.array([math.inf])}),
    ("values", {"values": np.array(["a"])}), ("values", {"values": np.array([1e300])}),
    ("sampler", {"sampler": "gauss"}), ("sampler", {"sampler": 3}),
    ("random_state", {"random_state": -5}), ("random_state", {"random_state": 0.5}),
]), st.sampled_from(["lattice", "numpy"]))
def test_laplace_rejects_bad_arguments_with_either_sampler(case, sampler):
    name, change = case
    kwargs = {"values": np.array([1.0, 2.0]), "scale": 1e-3, "random_state": 0,
              "sampler": sampler, **change}
    if name == "values" and kwargs["sampler"] == "numpy" and change["values"][0] == 1e300:
        return  # numpy's float sampler does not overflow here
    raises_naming(lambda: M.laplace(**kwargs), name)


@fuzz(100)
@given(st.integers(0, 30), st.floats(1e-3, 1e3), st.integers(0, 2**32), st.data())
def test_uniform_cores(n, scale, seed, data):
    rng = np.random.default_rng(seed)
    values = rng.normal(0, 100, n)
    before = values.copy()
    u3 = rng.random((n, 3)) * 0.999 + 5e-4
    out = M.laplace_from_uniform(values, scale, u3)
    assert out.shape == (n,) and np.isfinite(out).all()
    z = M.discrete_laplace_from_uniform(u3, scale)
    np.testing.assert_array_equal(z, np.round(z))
    sigma = data.draw(st.floats(1e-3, 1e3))
    g = M.gaussian_from_uniform(values, sigma, u3[:, :2])
    assert np.isfinite(g).all()
    np.testing.assert_array_equal(values, before)
    raises_naming(lambda: M.laplace_from_uniform(values, scale, u3[:, :2]), "uniforms")
    if n:
        raises_naming(lambda: M.laplace_from_uniform(values, scale, u3 * 0.0), "uniforms")
    raises_naming(lambda: M.gaussian_from_uniform(values, sigma, u3), "uniforms")
    raises_naming(lambda: M.discrete_laplace_from_uniform(u3, 0.0), "t")


@fuzz(150)
@given(finite_arrays, st.floats(1e-4, 1e4), random_states)
def test_gaussian_of_any_finite_array(values, sigma, random_state):
    before = values.copy()
    out = M.gaussian(values, sigma, random_state)
    assert out.shape == values.shape and np.isfinite(out).all()
    np.testing.assert_array_equal(values, before)
    raises_naming(lambda: M.gaussian(values, -sigma, 0), "sigma")
    raises_naming(lambda: M.gaussian(values, math.nan, 0), "sigma")


@fuzz(200)
@given(st.integers(2, 50), st.floats(1e-3, 1e3), random_states, st.data())
def test_randomized_response_of_any_codes(n_values, epsilon, random_state, data):
    shape = tuple(data.draw(st.lists(st.integers(0, 5), max_size=2)))
    codes = np.asarray(data.draw(st.lists(st.integers(0, n_values - 1),
                                          min_size=int(np.prod(shape)),
                                          max_size=int(np.prod(shape))))).reshape(shape)
    codes = codes.astype(data.draw(st.sampled_from([np.int64, np.int32, np.uint8]))) \
        if codes.size and codes.max() < 256 else codes.astype(np.int64)
    before = codes.copy()
    out = M.randomized_response(codes, n_values, epsilon, random_state)
    assert out.shape == codes.shape and out.dtype == np.int64
    assert ((out >= 0) & (out < n_values)).all()
    np.testing.assert_array_equal(codes, before)
    keep = M.randomized_response_keep_probability(n_values, epsilon)
    # p = e^ε / (e^ε + n − 1), written so that e^ε cannot overflow
    assert keep == pytest.approx(1.0 / (1.0 + (n_values - 1) * math.exp(-epsilon)), rel=1e-12)
    if keep < 1.0:  # p is a double: 1 - p, hence ε, is resolved to ~2**-53 / (1 - p)
        assert M.randomized_response_epsilon(n_values, keep) == pytest.approx(
            epsilon, rel=1e-9, abs=4 * 2.0**-53 / (1.0 - keep))
    if codes.size:
        raises_naming(lambda: M.randomized_response(codes.astype(np.int64) + n_values,
                                                    n_values, epsilon, 0), "values")
    raises_naming(lambda: M.randomized_response(codes, 1, epsilon, 0), "n_values")
    raises_naming(lambda: M.randomized_response(codes * 1.0, n_values, epsilon, 0), "values")
    raises_naming(lambda: M.randomized_response(codes, n_values, 0.0, 0), "epsilon")


@fuzz(200)
@given(st.integers(1, 4), st.integers(1, 12), st.data())
def test_exponential_top_k_picks_distinct_allowed_candidates(rows, n, data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32)))
    scores = rng.normal(0, 10, (rows, n))
    mask = rng.random((rows, n)) < 0.8
    mask[:, 0] = True
    k = data.draw(st.integers(1, int(mask.sum(axis=1).min())))
    epsilon = data.draw(st.floats(1e-3, 1e3))
    sensitivity = data.draw(st.floats(1e-3, 10.0))
    before = scores.copy(), mask.copy()
    chosen = M.exponential_top_k(scores, k, epsilon, sensitivity, data.draw(random_states),
                                 mask=mask)
    assert chosen.shape == (rows, k)
    for row, picked in enumerate(chosen):
        assert len(set(picked.tolist())) == k
        assert mask[row, picked].all()
    np.testing.assert_array_equal(scores, before[0])
    np.testing.assert_array_equal(mask, before[1])
    one = M.exponential_top_k(scores[0], 1, epsilon, sensitivity, 0)
    assert one.shape == (1,)
    raises_naming(lambda: M.exponential_top_k(scores, n + 1, epsilon, sensitivity, 0), "k")
    raises_naming(lambda: M.exponential_top_k(scores, 0, epsilon, sensitivity, 0), "k")
    raises_naming(lambda: M.exponential_top_k(scores, 1, -epsilon, sensitivity, 0), "epsilon")
    raises_naming(lambda: M.exponential_top_k(scores, 1, epsilon, 0.0, 0), "sensitivity")
    raises_naming(lambda: M.exponential_top_k(scores, 1, epsilon, sensitivity, 0,
                                              mask=mask.astype(int)), "mask")


@fuzz(200)
@given(st.floats(1e-3, 20.0), st.floats(1e-12, 0.5), st.floats(1e-3, 1e3), st.integers(1, 50))
def test_privacy_maps_round_trip(epsilon, delta, sensitivity, k):
    # Laplace, lattice: laplace_scale stops at the first scale whose ε is at most the
    # target, reached by a multiplicative step onto it, so the ε is the target to rounding
    scale = M.laplace_scale(epsilon, sensitivity)
    assert M.laplace_epsilon(scale, sensitivity) <= epsilon
    assert M.laplace_epsilon(scale, sensitivity) == pytest.approx(epsilon, rel=1e-12)
    assert M.laplace_epsilon(scale, sensitivity, "numpy") == pytest.approx(
        sensitivity / scale, rel=1e-15)
    # Gaussian: σ is solved to ~1e-12 (relative), which the slopes of δ(σ) and ε(σ)
    # amplify to at most ~3e-10 (δ) and ~2e-9 (ε) over this domain: bands of 1e-7
    sigma = M.gaussian_sigma(epsilon, delta, sensitivity)
    assert M.gaussian_delta(sigma, sensitivity, epsilon) <= delta
    assert M.gaussian_delta(sigma, sensitivity, epsilon) == pytest.approx(delta, rel=1e-7)
    assert M.gaussian_epsilon(sigma, sensitivity, delta) <= epsilon * (1 + 1e-9)
    assert M.gaussian_epsilon(sigma, sensitivity, delta) == pytest.approx(epsilon, rel=1e-7)
    assert M.gaussian_rho(sigma, sensitivity) == pytest.approx(
        sensitivity**2 / (2 * sigma**2), rel=1e-15)
    c = M.exponential_coefficient(epsilon, sensitivity, k)
    assert c == pytest.approx(epsilon / (2 * k * sensitivity), rel=1e-15)
    assert M.exponential_epsilon(c, sensitivity, k) == pytest.approx(epsilon, rel=1e-12)
    raises_naming(lambda: M.gaussian_sigma(epsilon, 0.0, sensitivity), "delta")
    raises_naming(lambda: M.gaussian_sigma(epsilon, 1.0, sensitivity), "delta")
    raises_naming(lambda: M.laplace_scale(-epsilon, sensitivity), "epsilon")
    raises_naming(lambda: M.exponential_coefficient(epsilon, sensitivity, 0), "k")


def test_discrete_laplace_of_no_values():
    """Regression: an empty batch raised a broadcasting ValueError."""
    out = M.discrete_laplace_from_uniform(np.full((0, 3), 0.5), 2.0)
    assert out.shape == (0,)
    assert M.discrete_laplace_from_uniform(np.full((2, 0, 3), 0.5), 2.0).shape == (2, 0)
