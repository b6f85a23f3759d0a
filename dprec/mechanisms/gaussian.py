r"""The Gaussian mechanism ``x + N(0, σ²)``: sampler, Box–Muller core and privacy maps.

With ``σ = gaussian_sigma(ε, δ, Δ₂)`` the mechanism is (ε, δ)-DP for a query
of ℓ2 sensitivity ``Δ₂``; [`gaussian_delta`][] is the exact curve δ(ε)

$$
\delta(\varepsilon) = \Phi\Big(\frac{\Delta}{2\sigma} - \frac{\varepsilon\sigma}{\Delta}\Big)
  - e^{\varepsilon}\,\Phi\Big(-\frac{\Delta}{2\sigma} - \frac{\varepsilon\sigma}{\Delta}\Big)
$$

(Balle & Wang 2018, Thm 8), [`gaussian_epsilon`][] and
[`gaussian_sigma`][] invert it, [`gaussian_rho`][] is its zCDP parameter
and [`kenthapadi_sigma`][] the closed-form calibration of Kenthapadi et al.
(2013).  The samplers are plain floating point and carry Mironov's (2012)
low-bit caveat (see `dprec.mechanisms.laplace`).

References
----------
- B. Balle and Y.-X. Wang, "Improving the Gaussian Mechanism for Differential
  Privacy: Analytical Calibration and Optimal Denoising", ICML 2018.
- M. Bun and T. Steinke, "Concentrated Differential Privacy: Simplifications,
  Extensions, and Lower Bounds", TCC 2016.
- K. Kenthapadi, A. Korolova, I. Mironov and N. Mishra, "Privacy via the
  Johnson-Lindenstrauss Transform", Journal of Privacy and Confidentiality, 2013.
- C. Dwork and A. Roth, *The Algorithmic Foundations of Differential Privacy*,
  2014, Thm A.1.

See [Mechanisms](../mechanisms.md) for the formulas and the privacy maps.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from ..utils._rng import RandomStateLike, check_random_state
from ..utils._validation import (
    check_epsilon,
    check_open_interval,
    check_open_unit,
    check_positive,
    check_real,
    check_real_array,
    check_uniforms,
)
from .common import finite_sum

__all__ = [
    "gaussian",
    "gaussian_delta",
    "gaussian_epsilon",
    "gaussian_from_uniform",
    "gaussian_rho",
    "gaussian_sigma",
    "kenthapadi_sigma",
]


def gaussian_from_uniform(values: np.ndarray, sigma: float,
                          uniforms: np.ndarray) -> np.ndarray:
    r"""``x + σ·N(0, 1)`` with the normal from two uniforms (Box–Muller).

    ``N = √(-2 ln u₀) · cos(2π u₁)``.  Floating point: Mironov's (2012)
    low-bit caveat applies.

    Parameters
    ----------
    values : array_like of real numbers
    sigma : float
        Standard deviation ``> 0``.
    uniforms : array of shape ``np.shape(values) + (2,)`` in (0, 1)
    """
    x = check_real_array(values)
    sigma = check_positive(sigma, "sigma")
    u = check_uniforms(uniforms, x.shape + (2,))
    normal = np.sqrt(-2.0 * np.log(u[..., 0])) * np.cos(2.0 * np.pi * u[..., 1])
    return finite_sum(x, sigma * normal)


def gaussian(values: np.ndarray, sigma: float, random_state: RandomStateLike) -> np.ndarray:
    r"""The Gaussian mechanism ``x + N(0, σ²)``, elementwise.

    With ``σ = gaussian_sigma(ε, δ, Δ₂)`` it is (ε, δ)-DP for a query of ℓ2
    sensitivity ``Δ₂`` (analytic calibration, Balle & Wang 2018), and
    ``ρ``-zCDP with ``ρ = Δ₂² / (2σ²)`` (Bun & Steinke 2016).

    Floating-point sampler (``Generator.standard_normal``): unlike the default
    [`laplace`][dprec.mechanisms.laplace.laplace], it is not hardened against
    Mironov's (2012) low-bit attack.

    Parameters
    ----------
    values : array_like of real numbers
        Not modified.
    sigma : float
        Standard deviation ``> 0``.
    random_state : None, int, RandomState or Generator

    Returns
    -------
    numpy.ndarray, float64, of the shape of ``values``.
    """
    x = check_real_array(values)
    sigma = check_positive(sigma, "sigma")
    rng = check_random_state(random_state)
    return finite_sum(x, sigma * rng.standard_normal(x.shape))


def _gaussian_delta(sigma: float, sensitivity: float, epsilon: float) -> float:
    """[`gaussian_delta`][] of checked arguments, clipped to ``[0, 1]``."""
    a = sensitivity / (2.0 * sigma)
    b = epsilon * sigma / sensitivity
    value = special.ndtr(a - b) - math.exp(epsilon + special.log_ndtr(-a - b))
    return float(min(1.0, max(0.0, value)))


def gaussian_delta(sigma: float, sensitivity: float, epsilon: float) -> float:
    r"""The exact δ(ε) of the Gaussian mechanism (Balle & Wang 2018, Thm 8).

    ``δ(ε) = Φ(Δ/(2σ) − εσ/Δ) − e^ε · Φ(−Δ/(2σ) − εσ/Δ)``, the smallest δ for
    which ``x + N(0, σ²)`` is (ε, δ)-DP at ℓ2 sensitivity ``Δ``.
    """
    sigma = check_positive(sigma, "sigma")
    sensitivity = check_positive(sensitivity, "sensitivity")
    epsilon = check_real(epsilon, "epsilon", low=0.0)
    return _gaussian_delta(sigma, sensitivity, epsilon)


def gaussian_epsilon(sigma: float, sensitivity: float, delta: float) -> float:
    r"""The smallest ε with ``gaussian_delta(σ, Δ, ε) ≤ δ`` (0.0 if δ(0) ≤ δ).

    Inverts the exact curve of [`gaussian_delta`][] numerically (Balle &
    Wang 2018), valid for every ε (not only ε < 1 as in Dwork & Roth, Thm A.1).
    """
    sigma = check_positive(sigma, "sigma")
    sensitivity = check_positive(sensitivity, "sensitivity")
    delta = check_open_unit(delta, "delta")
    if _gaussian_delta(sigma, sensitivity, 0.0) <= delta:
        return 0.0
    high = 1.0
    while _gaussian_delta(sigma, sensitivity, high) > delta:
        high *= 2.0
        if high > 1e12:
            raise ValueError(f"no finite epsilon reaches delta={delta}")
    from scipy import optimize  # here, on first use: importing scipy.optimize takes 0.3 s

    root = optimize.brentq(lambda e: _gaussian_delta(sigma, sensitivity, e) - delta,
                           0.0, high, xtol=1e-14, rtol=1e-12)
    # round up onto the safe side of the curve
    while _gaussian_delta(sigma, sensitivity, root) > delta:
        root = math.nextafter(root, math.inf) * (1 + 1e-12)
    return float(root)


def gaussian_sigma(epsilon: float, delta: float, sensitivity: float) -> float:
    r"""The smallest σ for which ``x + N(0, σ²)`` is (ε, δ)-DP at ℓ2 sensitivity Δ.

    Solves ``gaussian_delta(σ, Δ, ε) = δ`` for σ (the analytic Gaussian
    mechanism of Balle & Wang 2018, Alg. 1, by root finding), returning a σ on
    the safe side.
    """
    epsilon = check_epsilon(epsilon)
    delta = check_open_unit(delta, "delta")
    sensitivity = check_positive(sensitivity, "sensitivity")

    def excess(log_sigma: float) -> float:
        return _gaussian_delta(math.exp(log_sigma), sensitivity, epsilon) - delta

    low, high = math.log(sensitivity) - 1.0, math.log(sensitivity) + 1.0
    while excess(low) < 0:
        low -= 1.0
    while excess(high) > 0:
        high += 1.0
    from scipy import optimize  # here, on first use: importing scipy.optimize takes 0.3 s

    sigma = math.exp(optimize.brentq(excess, low, high, xtol=1e-13))
    while _gaussian_delta(sigma, sensitivity, epsilon) > delta:
        sigma = math.nextafter(sigma, math.inf) * (1 + 1e-12)
    return sigma


def gaussian_rho(sigma: float, sensitivity: float) -> float:
    r"""zCDP parameter ``ρ = Δ₂² / (2σ²)`` of the Gaussian mechanism (Bun & Steinke 2016)."""
    sigma = check_positive(sigma, "sigma")
    sensitivity = check_positive(sensitivity, "sensitivity")
    return sensitivity**2 / (2.0 * sigma**2)


def kenthapadi_sigma(epsilon: float, delta: float, l2_sensitivity: float) -> float:
    r"""``σ = (w₂/ε) · sqrt(2 (ln(1/(2δ)) + ε))`` (Kenthapadi et al. 2013).

    (ε, δ)-DP for a query of ℓ2 sensitivity ``w₂``, for every ``ε > 0`` and
    ``δ < 1/2`` (checked against the exact curve of
    [`dprec.mechanisms.gaussian_delta`][] in the tests).
    """
    epsilon = check_epsilon(epsilon)
    delta = check_open_interval(delta, "delta", 0.0, 0.5)
    w2 = check_positive(l2_sensitivity, "l2_sensitivity")
    sigma = w2 / epsilon * math.sqrt(2.0 * (math.log(1.0 / (2.0 * delta)) + epsilon))
    if not 0.0 < sigma < math.inf:   # 1/(2δ) or 2ε overflowed (δ, 1/ε tiny): the same σ
        sigma = w2 * math.sqrt(2.0 * ((-math.log(2.0) - math.log(delta)) / epsilon + 1.0)
                               / epsilon)
    return sigma
