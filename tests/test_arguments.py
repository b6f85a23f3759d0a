"""Bad input gets a clear error that starts with the name of the parameter.

One row per (function, parameter, bad value): the exception type, and a message
that begins with the parameter's name (``"scale must be ..."``), so a caller
knows at once which argument to fix.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp

from dprec import PrivacyAccountant
from dprec import mechanisms as M
from dprec.ranking import mallows_privatize
from dprec.ranking.mallows import laplace_scale as rank_laplace_scale
from dprec.ranking.mallows import mallows_theta
from dprec.selectors import PNCF, PPNS, Probabilistic
from dprec.selectors.ppns import ppns_schedule
from dprec.similarity import GaussianJL, MinHash, NoisyMinHash, PrivateSJLT, RRMinHash
from dprec.similarity.minhash import difference_bound, difference_bound_binomial
from dprec.similarity.sjlt import kenthapadi_sigma

U3 = np.full((2, 3), 0.5)           # uniforms for two Laplace draws
U2 = np.full((2, 2), 0.5)

CASES = [
    # mechanisms: Laplace
    ("laplace_grid", lambda: M.laplace_grid(0.0), ValueError, "scale"),
    ("laplace_from_uniform", lambda: M.laplace_from_uniform([0, 1], -1.0, U3), ValueError,
     "scale"),
    ("laplace_from_uniform", lambda: M.laplace_from_uniform(["a"], 1.0, U3[:1]), TypeError,
     "values"),
    ("laplace_from_uniform", lambda: M.laplace_from_uniform([0, np.nan], 1.0, U3), ValueError,
     "values"),
    ("laplace_from_uniform", lambda: M.laplace_from_uniform([0, 1], 1.0, U2), ValueError,
     "uniforms"),
    ("laplace_from_uniform", lambda: M.laplace_from_uniform([0, 1], 1.0, U3.astype(int)),
     TypeError, "uniforms"),
    ("laplace_from_uniform", lambda: M.laplace_from_uniform([0, 1], 1.0, U3 * 0), ValueError,
     "uniforms"),
    ("discrete_laplace_from_uniform", lambda: M.discrete_laplace_from_uniform(U3, 0.0),
     ValueError, "t"),
    ("discrete_laplace_from_uniform", lambda: M.discrete_laplace_from_uniform(U2, 1.0),
     ValueError, "uniforms"),
    ("laplace", lambda: M.laplace([0.0], 0.0, 0), ValueError, "scale"),
    ("laplace", lambda: M.laplace([0.0], 1.0, 0, sampler="exact"), ValueError, "sampler"),
    ("laplace_noise", lambda: M.laplace_noise(math.inf, 3, 0), ValueError, "scale"),
    ("laplace_noise", lambda: M.laplace_noise(["a"], 3, 0), TypeError, "scale"),
    ("laplace_epsilon", lambda: M.laplace_epsilon(0.0, 1.0), ValueError, "scale"),
    ("laplace_epsilon", lambda: M.laplace_epsilon(1.0, 0.0), ValueError, "sensitivity"),
    ("laplace_epsilon", lambda: M.laplace_epsilon(1.0, 1.0, "x"), ValueError, "sampler"),
    ("laplace_epsilon", lambda: M.laplace_epsilon(1.0, 1.0, max_changed=0), ValueError,
     "max_changed"),
    ("laplace_scale", lambda: M.laplace_scale(0.0, 1.0), ValueError, "epsilon"),
    ("laplace_scale", lambda: M.laplace_scale(1.0, -1.0), ValueError, "sensitivity"),
    ("laplace_scale", lambda: M.laplace_scale(1.0, 1.0, "x"), ValueError, "sampler"),
    ("laplace_scale", lambda: M.laplace_scale(1.0, 1.0, max_changed=0), ValueError,
     "max_changed"),
    # Gaussian
    ("gaussian_from_uniform", lambda: M.gaussian_from_uniform([0, 1], 0.0, U2), ValueError,
     "sigma"),
    ("gaussian", lambda: M.gaussian([0.0], -1.0, 0), ValueError, "sigma"),
    ("gaussian_delta", lambda: M.gaussian_delta(0.0, 1.0, 1.0), ValueError, "sigma"),
    ("gaussian_delta", lambda: M.gaussian_delta(1.0, 0.0, 1.0), ValueError, "sensitivity"),
    ("gaussian_delta", lambda: M.gaussian_delta(1.0, 1.0, -1.0), ValueError, "epsilon"),
    ("gaussian_epsilon", lambda: M.gaussian_epsilon(0.0, 1.0, 0.1), ValueError, "sigma"),
    ("gaussian_epsilon", lambda: M.gaussian_epsilon(1.0, 0.0, 0.1), ValueError,
     "sensitivity"),
    ("gaussian_epsilon", lambda: M.gaussian_epsilon(1.0, 1.0, 1.0), ValueError, "delta"),
    ("gaussian_sigma", lambda: M.gaussian_sigma(0.0, 0.1, 1.0), ValueError, "epsilon"),
    ("gaussian_sigma", lambda: M.gaussian_sigma(1.0, 0.0, 1.0), ValueError, "delta"),
    ("gaussian_sigma", lambda: M.gaussian_sigma(1.0, 0.1, 0.0), ValueError, "sensitivity"),
    ("gaussian_rho", lambda: M.gaussian_rho(0.0, 1.0), ValueError, "sigma"),
    ("gaussian_rho", lambda: M.gaussian_rho(1.0, 0.0), ValueError, "sensitivity"),
    # randomised response
    ("randomized_response_keep_probability",
     lambda: M.randomized_response_keep_probability(1, 1.0), ValueError, "n_values"),
    ("randomized_response_keep_probability",
     lambda: M.randomized_response_keep_probability(2**53 + 1, 1.0), ValueError, "n_values"),
    ("randomized_response_keep_probability",
     lambda: M.randomized_response_keep_probability(3, 0.0), ValueError, "epsilon"),
    ("randomized_response_epsilon", lambda: M.randomized_response_epsilon(1, 0.9), ValueError,
     "n_values"),
    ("randomized_response_epsilon", lambda: M.randomized_response_epsilon(2**53 + 1, 0.9),
     ValueError, "n_values"),
    ("randomized_response_epsilon", lambda: M.randomized_response_epsilon(4, 0.2), ValueError,
     "keep_probability"),
    ("randomized_response_from_uniform",
     lambda: M.randomized_response_from_uniform([0, 3], 3, 1.0, np.full(2, 0.5)), ValueError,
     "values"),
    ("randomized_response_from_uniform",
     lambda: M.randomized_response_from_uniform([0.5], 3, 1.0, np.full(1, 0.5)), TypeError,
     "values"),
    ("randomized_response_from_uniform",
     lambda: M.randomized_response_from_uniform([0], 1, 1.0, np.full(1, 0.5)), ValueError,
     "n_values"),
    ("randomized_response_from_uniform",
     lambda: M.randomized_response_from_uniform([0], 2**53 + 1, 1.0, np.full(1, 0.5)),
     ValueError, "n_values"),
    ("randomized_response", lambda: M.randomized_response([0], 3, -1.0, 0), ValueError,
     "epsilon"),
    ("discrete_laplace_epsilon", lambda: M.discrete_laplace_epsilon(0.0, 1.0), ValueError, "t "),
    ("discrete_laplace_epsilon", lambda: M.discrete_laplace_epsilon(1.0, -1.0), ValueError,
     "sensitivity"),
    ("discrete_laplace", lambda: M.discrete_laplace([1.0], 0.0, 0), ValueError, "t "),
    # exponential
    ("exponential_coefficient", lambda: M.exponential_coefficient(0.0, 1.0), ValueError,
     "epsilon"),
    ("exponential_coefficient", lambda: M.exponential_coefficient(1.0, 0.0), ValueError,
     "sensitivity"),
    ("exponential_coefficient", lambda: M.exponential_coefficient(1.0, 1.0, 0), ValueError,
     "k"),
    ("exponential_epsilon", lambda: M.exponential_epsilon(0.0, 1.0), ValueError,
     "coefficient"),
    ("exponential_epsilon", lambda: M.exponential_epsilon(1.0, 0.0), ValueError,
     "sensitivity"),
    ("exponential_epsilon", lambda: M.exponential_epsilon(1.0, 1.0, 0), ValueError, "k"),
    ("gumbel_keys_from_uniform", lambda: M.gumbel_keys_from_uniform([1.0], 0.0, [0.5]),
     ValueError, "coefficient"),
    ("gumbel_keys_from_uniform", lambda: M.gumbel_keys_from_uniform(["a"], 1.0, [0.5]),
     TypeError, "scores"),
    ("gumbel_keys_from_uniform",
     lambda: M.gumbel_keys_from_uniform([1.0, 2.0], 1.0, [0.5, 0.5], mask=[1, 0]), TypeError,
     "mask"),
    ("gumbel_keys_from_uniform",
     lambda: M.gumbel_keys_from_uniform([1.0, 2.0], 1.0, [0.5, 0.5], mask=np.ones(3, bool)),
     ValueError, "mask"),
    ("gumbel_keys_from_uniform",
     lambda: M.gumbel_keys_from_uniform([np.nan, 2.0], 1.0, [0.5, 0.5]), ValueError, "scores"),
    ("gumbel_top_k_from_uniform",
     lambda: M.gumbel_top_k_from_uniform([1.0, 2.0], 0, 1.0, 1.0, [0.5, 0.5]), ValueError,
     "k"),
    ("gumbel_top_k_from_uniform",
     lambda: M.gumbel_top_k_from_uniform([1.0, 2.0], 3, 1.0, 1.0, [0.5, 0.5]), ValueError,
     "k"),
    ("gumbel_top_k_from_uniform",
     lambda: M.gumbel_top_k_from_uniform(np.ones((2, 2, 2)), 1, 1.0, 1.0, np.full((2, 2, 2),
                                                                                  0.5)),
     ValueError, "scores"),
    ("exponential_top_k", lambda: M.exponential_top_k([1.0, 2.0], 1, 0.0, 1.0, 0), ValueError,
     "epsilon"),
    ("exponential_top_k", lambda: M.exponential_top_k(["a", "b"], 1, 1.0, 1.0, 0), TypeError,
     "scores"),
    # selectors
    ("PNCF", lambda: PNCF(epsilon=-1.0), ValueError, "epsilon"),
    ("PNCF", lambda: PNCF(rho=1.0), ValueError, "rho"),
    ("PPNS", lambda: PPNS(epsilon=0.0), ValueError, "epsilon"),
    ("PPNS", lambda: PPNS(p=0.0), ValueError, "p"),
    ("PPNS", lambda: PPNS(alpha=1.5), ValueError, "alpha"),
    ("PPNS", lambda: PPNS(p=0.5, alpha=0.5), ValueError, "give p or alpha"),
    ("Probabilistic", lambda: Probabilistic(floor=0.0), ValueError, "floor"),
    ("ppns_schedule", lambda: ppns_schedule(0, 0.5), ValueError, "k"),
    ("ppns_schedule", lambda: ppns_schedule(40, 0.0), ValueError, "p"),
    ("ppns_schedule", lambda: ppns_schedule(40, 1.5), ValueError, "p"),
    ("ppns_schedule", lambda: ppns_schedule(40, "x"), TypeError, "p"),
    # sketches
    ("MinHash", lambda: MinHash(0, 2), ValueError, "width"),
    ("MinHash", lambda: MinHash(8, 1), ValueError, "B"),
    ("MinHash", lambda: MinHash(8, 2**12), ValueError, "B"),
    ("MinHash", lambda: MinHash(8, 2, threshold="x"), TypeError, "threshold"),
    ("MinHash", lambda: MinHash(8, 2, hash_seed=-1), ValueError, "hash_seed"),
    ("RRMinHash", lambda: RRMinHash(8, 2, epsilon=0.0, delta=1e-4), ValueError, "epsilon"),
    ("RRMinHash", lambda: RRMinHash(8, 2, epsilon=1.0, delta=1.0), ValueError, "delta"),
    ("RRMinHash", lambda: RRMinHash(8, 2, epsilon=1.0, delta=1e-4, tau=0), ValueError, "tau"),
    ("RRMinHash", lambda: RRMinHash(8, 2, epsilon=1.0, delta=1e-4, tau=4, set_difference=0),
     ValueError, "set_difference"),
    ("RRMinHash", lambda: RRMinHash(8, 2, epsilon=1.0, delta=1e-4, tau=4, set_difference=5),
     ValueError, "set_difference"),
    ("RRMinHash", lambda: RRMinHash(8, 2, epsilon=1.0, delta=1e-4, small_users="drop"), ValueError,
     "small_users"),
    ("NoisyMinHash", lambda: NoisyMinHash(8, 2, epsilon=1.0, delta=0.0), ValueError, "delta"),
    ("difference_bound", lambda: difference_bound(8, 2, 1, 4, 1.0), ValueError, "delta"),
    ("difference_bound", lambda: difference_bound(0, 2, 1, 4, 0.1), ValueError, "width"),
    ("difference_bound", lambda: difference_bound(8, 1, 1, 4, 0.1), ValueError, "B"),
    ("difference_bound", lambda: difference_bound(8, 2.0, 1, 4, 0.1), TypeError, "B"),
    ("difference_bound", lambda: difference_bound(8, 2, 0, 4, 0.1), ValueError,
     "set_difference"),
    ("difference_bound", lambda: difference_bound(8, 2, 1.0, 4, 0.1), TypeError,
     "set_difference"),
    ("difference_bound", lambda: difference_bound(8, 2, 1, 0, 0.1), ValueError, "tau"),
    ("difference_bound", lambda: difference_bound(8, 2, 1, 4.0, 0.1), TypeError, "tau"),
    ("difference_bound", lambda: difference_bound(8, 2, 1, 4, 0.0), ValueError, "delta"),
    ("difference_bound", lambda: difference_bound(8, 2, 1, 4, -0.5), ValueError, "delta"),
    ("difference_bound_binomial", lambda: difference_bound_binomial(8, 2, 1, 4, 0.0),
     ValueError, "delta"),
    ("kenthapadi_sigma", lambda: kenthapadi_sigma(1.0, 0.0, 1.0), ValueError, "delta"),
    ("kenthapadi_sigma", lambda: kenthapadi_sigma(1.0, -0.1, 1.0), ValueError, "delta"),
    ("kenthapadi_sigma", lambda: kenthapadi_sigma(1.0, 0.5, 1.0), ValueError, "delta"),
    ("kenthapadi_sigma", lambda: kenthapadi_sigma(1.0, 0.7, 1.0), ValueError, "delta"),
    ("kenthapadi_sigma", lambda: kenthapadi_sigma(1.0, "x", 1.0), TypeError, "delta"),
    ("kenthapadi_sigma", lambda: kenthapadi_sigma(1.0, 0.1, 0.0), ValueError,
     "l2_sensitivity"),
    ("kenthapadi_sigma", lambda: kenthapadi_sigma(1.0, 0.1, -1.0), ValueError,
     "l2_sensitivity"),
    ("kenthapadi_sigma", lambda: kenthapadi_sigma(1.0, 0.1, "x"), TypeError,
     "l2_sensitivity"),
    ("kenthapadi_sigma", lambda: kenthapadi_sigma(0.0, 0.1, 1.0), ValueError, "epsilon"),
    ("PrivateSJLT", lambda: PrivateSJLT(16, 3, epsilon=1.0, rating_bound=1.0), ValueError, "s"),
    ("PrivateSJLT", lambda: PrivateSJLT(16, 4, epsilon=0.0, rating_bound=1.0), ValueError,
     "epsilon"),
    ("PrivateSJLT", lambda: PrivateSJLT(16, 4, epsilon=1.0, rating_bound=0.0), ValueError,
     "rating_bound"),
    ("PrivateSJLT", lambda: PrivateSJLT(0, 1, epsilon=1.0, rating_bound=1.0), ValueError,
     "width"),
    ("GaussianJL", lambda: GaussianJL(16, epsilon=1.0, delta=0.5, rating_bound=1.0), ValueError,
     "delta"),
    ("GaussianJL", lambda: GaussianJL(0, epsilon=1.0, rating_bound=1.0), ValueError, "width"),
    ("GaussianJL", lambda: GaussianJL(16, epsilon=1.0, delta=0.1, rating_bound=1.0,
                                      calibration="x"), ValueError,
     "calibration"),
    ("sketch", lambda: PrivateSJLT(16, 4, epsilon=1.0, rating_bound=5.0).sketch(sp.eye(2,
                                                                                      format="csr"),
                                                             columns=[1, 1]), ValueError,
     "columns"),
    ("sketch", lambda: MinHash(8, 2).sketch(sp.eye(2, format="csr"), columns=[1]), ValueError,
     "columns"),
    # the accountant
    ("PrivacyAccountant", lambda: PrivacyAccountant(2.5), TypeError, "users"),
    ("PrivacyAccountant", lambda: PrivacyAccountant(0), ValueError, "users"),
    ("PrivacyAccountant", lambda: PrivacyAccountant("ab"), TypeError, "users"),
    # Mallows calibration
    ("mallows_theta", lambda: mallows_theta(0.0, 5), ValueError, "epsilon"),
    ("mallows_theta", lambda: mallows_theta(1.0, 5, calibration="TIGHT "), ValueError,
     "calibration"),
    ("mallows_theta", lambda: mallows_theta(1.0, 5, calibration="x"), ValueError,
     "calibration"),
    ("laplace_scale (ranks)", lambda: rank_laplace_scale(-1.0, 5), ValueError, "epsilon"),
    ("mallows_privatize", lambda: mallows_privatize([np.arange(3)], [1.0, 2.0], 0), ValueError,
     "epsilon"),
]


@pytest.mark.parametrize("call, error, name", [c[1:] for c in CASES],
                         ids=[f"{c[0]}-{c[3].split()[0]}-{n}" for n, c in enumerate(CASES)])
def test_bad_input_names_the_parameter(call, error, name):
    with pytest.raises(error) as info:
        call()
    assert str(info.value).startswith(name), str(info.value)


def test_bounds_that_are_inclusive_accept_their_end():
    assert M.randomized_response_keep_probability(2**53, 1.0) > 0
    assert M.randomized_response_epsilon(2, 0.9) == pytest.approx(math.log(9))
    assert M.laplace_scale(1.0, 1.0, max_changed=1) == 1.0
    PPNS(p=1.0)                                      # checked against k when attached
    assert ppns_schedule(3, 1.0).tolist() == [2]              # k − 1 from the first partition
    assert kenthapadi_sigma(1.0, 0.499, 1.0) > 0
    MinHash(8, 2**11)
