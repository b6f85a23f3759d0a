"""Differential-privacy mechanisms: Laplace, Gaussian, randomised response, exponential top-k.

One module per mechanism, each with its seeded sampler, its ``*_from_uniform``
core and its privacy map; everything is re-exported here:

* `dprec.mechanisms.laplace`: the lattice Laplace sampler (default),
  the discrete Laplace, numpy's floating-point Laplace, the OpenDP path;
* `dprec.mechanisms.gaussian`: the Gaussian mechanism and its exact
  (ε, δ) curve;
* `dprec.mechanisms.partition_selection`: private partition selection (which
  items a release may name at all: thresholds on noisy weights, their δ);
* `dprec.mechanisms.discrete_gaussian`: the discrete Gaussian (integer
  noise, exact), its zCDP and the (ε, δ) conversion by ``dp-accounting``;
* `dprec.mechanisms.randomized_response`: k-ary randomised response;
* `dprec.mechanisms.exponential`: the exponential mechanism as a
  one-shot Gumbel top-k;
* `dprec.mechanisms.common`: the uniforms the cores are driven by.

Every sampler works on whole arrays at once and comes in two layers
("one query, one draw"):

* a public function that takes ``random_state`` (``None``, an int, a
  ``RandomState`` or a ``Generator``; see `dprec.utils._rng.check_random_state`),
  draws the uniforms it needs and calls
* a ``*_from_uniform`` core that turns an array of uniforms in the open
  interval (0, 1) into the sample.  Selectors and backends feed these cores
  with `dprec.utils._rng.keyed_uniform`, so the noise that answers a query is a
  function of the query's ids.  `UNIFORMS_PER_DRAW` says how many
  uniforms each core consumes per output value.

Each mechanism also exposes its privacy map (``laplace_epsilon``,
``gaussian_delta``, ``randomized_response_epsilon``, ``exponential_epsilon``
...), so callers record what they spent in the [`PrivacyAccountant`][dprec.PrivacyAccountant]
without re-deriving it.

Floating point.  Textbook floating-point Laplace noise leaks its input through
the low bits of the output (Mironov, CCS 2012); the default ``laplace``
sampler is therefore a lattice mechanism whose outputs lie on a grid fixed by
the scale, its discrete Laplace noise drawn so that every output keeps its
probability (see `dprec.mechanisms.exact_laplace`).  The Gaussian samplers and
[`laplace_noise`][] are plain floating point and carry Mironov's caveat.

References
----------
- C. Dwork and A. Roth, *The Algorithmic Foundations of Differential Privacy*,
  2014 (Laplace, exponential mechanism, composition).
- I. Mironov, "On significance of the least significant bits for differential
  privacy", CCS 2012 (floating-point attack, snapping mechanism).
- C. Canonne, G. Kamath and T. Steinke, "The Discrete Gaussian for
  Differential Privacy", NeurIPS 2020 (discrete Laplace on a lattice).
- B. Balle and Y.-X. Wang, "Improving the Gaussian Mechanism for Differential
  Privacy: Analytical Calibration and Optimal Denoising", ICML 2018.
- D. Durfee and R. Rogers, "Practical Differentially Private Top-k Selection
  with Pay-what-you-get Composition", NeurIPS 2019 (one-shot Gumbel top-k).
- S. Warner, JASA 1965; P. Kairouz, S. Oh and P. Viswanath, NeurIPS 2014
  (generalised randomised response).

See [Mechanisms](../mechanisms.md) for the formulas and the privacy maps.

Floor 1 of the package map in ``docs/development.md``. May import: `dprec.utils`.
"""

from __future__ import annotations

from .common import UNIFORMS_PER_DRAW
from .discrete_gaussian import (
    discrete_gaussian,
    discrete_gaussian_noise,
    zcdp_epsilon,
    zcdp_rho,
)
from .exact_laplace import discrete_laplace_from_log_uniform, discrete_laplace_noise
from .exponential import (
    exponential_coefficient,
    exponential_epsilon,
    exponential_top_k,
    gumbel_keys_from_uniform,
    gumbel_top_k_from_uniform,
)
from .gaussian import (
    gaussian,
    gaussian_delta,
    gaussian_epsilon,
    gaussian_from_uniform,
    gaussian_rho,
    gaussian_sigma,
    kenthapadi_sigma,
)
from .laplace import (
    LAPLACE_SAMPLERS,
    LATTICE_BITS,
    discrete_laplace,
    discrete_laplace_epsilon,
    discrete_laplace_from_uniform,
    laplace,
    laplace_epsilon,
    laplace_from_log_uniform,
    laplace_from_uniform,
    laplace_grid,
    laplace_noise,
    laplace_scale,
)
from .randomized_response import (
    randomized_response,
    randomized_response_epsilon,
    randomized_response_from_log_uniform,
    randomized_response_from_uniform,
    randomized_response_keep_probability,
)

__all__ = [
    "LATTICE_BITS",
    "LAPLACE_SAMPLERS",
    "UNIFORMS_PER_DRAW",
    "laplace",
    "laplace_from_log_uniform",
    "laplace_from_uniform",
    "laplace_noise",
    "discrete_laplace",
    "discrete_laplace_epsilon",
    "discrete_laplace_from_uniform",
    "discrete_laplace_from_log_uniform",
    "discrete_gaussian",
    "discrete_gaussian_noise",
    "zcdp_epsilon",
    "zcdp_rho",
    "discrete_laplace_noise",
    "laplace_grid",
    "laplace_epsilon",
    "laplace_scale",
    "gaussian",
    "gaussian_from_uniform",
    "gaussian_delta",
    "gaussian_epsilon",
    "gaussian_sigma",
    "gaussian_rho",
    "kenthapadi_sigma",
    "randomized_response",
    "randomized_response_from_log_uniform",
    "randomized_response_from_uniform",
    "randomized_response_keep_probability",
    "randomized_response_epsilon",
    "exponential_top_k",
    "gumbel_top_k_from_uniform",
    "gumbel_keys_from_uniform",
    "exponential_coefficient",
    "exponential_epsilon",
]
