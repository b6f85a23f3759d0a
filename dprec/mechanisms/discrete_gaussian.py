r"""The discrete Gaussian mechanism: integer noise, zCDP, and its tight $(\varepsilon, \delta)$.

$P(Z = z) \propto e^{-z^2 / (2\sigma^2)}$ on the integers (Canonne, Kamath & Steinke
2020).  Added to an integer-valued query $q$ whose ℓ2 sensitivity is $\Delta$ (any
real number), independently on every coordinate, it satisfies
$\rho$-zero-concentrated DP with $\rho = \Delta^2 / (2\sigma^2)$ (their Theorem 14, the
multivariate case), exactly as the continuous Gaussian does, and its outputs are
integers: no floating-point attack (Mironov 2012) applies.

**Sampler** (their Algorithm 3): with $t = \lfloor \sigma \rfloor + 1$, draw $Y$ from the
discrete Laplace of scale $t$ (the exact sampler of
[`exact_laplace`][dprec.mechanisms.exact_laplace]) and keep it with probability
$e^{-\gamma}$, $\gamma = (|Y| - \sigma^2/t)^2 / (2\sigma^2)$, else draw again: the kept
$Y$ is exactly discrete Gaussian.  The test is $\ln U \le -\gamma$ with $\ln U$ exact in
its tail ([`log_uniform`][dprec.mechanisms.common.log_uniform]), so every integer
keeps a positive probability; the only inexactness is the float64 rounding of
$\gamma$, a relative error below $2^{-50}$ in each acceptance probability.  About 1.3
to 1.8 draws per kept value, all vectorised.

**Accounting** ([`zcdp_epsilon`][dprec.mechanisms.discrete_gaussian.zcdp_epsilon]):
$\rho$-zCDP converted to $(\varepsilon, \delta)$ by Google's `dp-accounting` (its Rényi
accountant on a `ZCDpEvent`, with Canonne, Kamath & Steinke's conversion), and
[`zcdp_rho`][dprec.mechanisms.discrete_gaussian.zcdp_rho] inverts it by bisection, never
rounding towards more privacy than it has.

References
----------
- C. Canonne, G. Kamath and T. Steinke, "The Discrete Gaussian for Differential
  Privacy", NeurIPS 2020.
- M. Bun and T. Steinke, "Concentrated Differential Privacy: Simplifications,
  Extensions, and Lower Bounds", TCC 2016.
"""

from __future__ import annotations

import math

import numpy as np

from .._rng import RandomStateLike, check_random_state
from .._validation import check_delta, check_epsilon, check_positive
from .common import log_uniform
from .exact_laplace import MAX_T, discrete_laplace_noise

__all__ = ["MAX_RHO", "discrete_gaussian", "discrete_gaussian_noise", "zcdp_epsilon",
           "zcdp_rho"]

#: the largest ρ calibrated (ε beyond ~1.1e6 at δ = 1e-5): a larger ε gets this ρ, so the
#: release spends less than it is allowed, never more
MAX_RHO = 1e6
#: the smallest ρ calibrated: below it σ would pass the discrete Laplace's largest scale
MIN_RHO = 1e-24


def discrete_gaussian_noise(sigma: float, size: int, rng: np.random.Generator) -> np.ndarray:
    r"""`size` independent draws of the discrete Gaussian $N_{\mathbb Z}(0, \sigma^2)$,
    as float64 integers (exact while below $2^{53}$).

    Raises
    ------
    ValueError
        If `sigma` is not positive and finite, or above $2^{42}$ (the discrete Laplace
        sampler's largest scale).
    """
    sigma = check_positive(sigma, "sigma")
    if not sigma < MAX_T:
        raise ValueError(f"sigma = {sigma:g} is above the sampler's largest scale 2^42: "
                         "the noise would not be exact (spend a larger epsilon)")
    t = math.floor(sigma) + 1.0
    out = np.empty(size)
    todo = np.arange(size)
    while len(todo):
        y = discrete_laplace_noise(t, len(todo), rng)
        gamma = np.square(np.abs(y) - sigma * (sigma / t)) / (2.0 * sigma * sigma)
        kept = log_uniform(rng, len(todo)) <= -gamma
        out[todo[kept]] = y[kept]
        todo = todo[~kept]
    return out


def discrete_gaussian(values: np.ndarray, sigma: float,
                      random_state: RandomStateLike) -> np.ndarray:
    r"""Integer `values` plus independent discrete Gaussian noise of scale `sigma`.

    $\rho$-zCDP with $\rho = \Delta^2 / (2\sigma^2)$ for a query of ℓ2 sensitivity
    $\Delta$ (`zcdp_epsilon` gives its $(\varepsilon, \delta)$).  The input is not
    modified.

    Raises
    ------
    ValueError
        If `values` are not finite integers below $2^{52}$, or `sigma` is invalid.
    """
    x = np.asarray(values, dtype=np.float64)
    if not np.all(np.isfinite(x)) or np.any(x != np.round(x)) or np.any(np.abs(x) >= 2.0**52):
        raise ValueError("values must be finite integers below 2^52 (the discrete Gaussian "
                         "adds integer noise to an integer-valued query)")
    rng = check_random_state(random_state)
    return x + discrete_gaussian_noise(sigma, x.size, rng).reshape(x.shape)


def zcdp_epsilon(rho: float, delta: float) -> float:
    r"""The $\varepsilon$ of $\rho$-zCDP at `delta`: the smallest the Rényi accountant of
    `dp-accounting` proves (Canonne, Kamath & Steinke's conversion over its orders)."""
    from dp_accounting import ZCDpEvent
    from dp_accounting.rdp import RdpAccountant

    rho = check_positive(rho, "rho")
    delta = check_delta(delta, "delta")
    accountant = RdpAccountant()
    accountant.compose(ZCDpEvent(rho))
    return float(accountant.get_epsilon(delta))


def zcdp_rho(epsilon: float, delta: float) -> float:
    r"""The largest $\rho$ (up to a relative $10^{-9}$, rounded down) whose
    `zcdp_epsilon(ρ, delta)` is at most `epsilon`, capped at `MAX_RHO`.

    Raises
    ------
    ValueError
        If `delta` is 0, or if even `MIN_RHO` spends more than `epsilon` (the noise would pass the
        sampler's largest scale), naming `epsilon`.
    """
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta, "delta")
    if delta == 0.0:
        raise ValueError("delta must be > 0 for zCDP (the Gaussian mechanism has no pure-DP "
                         "guarantee)")
    if zcdp_epsilon(MAX_RHO, delta) <= epsilon:
        return MAX_RHO
    if zcdp_epsilon(MIN_RHO, delta) > epsilon:
        raise ValueError(f"epsilon = {epsilon:g} at delta = {delta:g} needs noise beyond the "
                         "discrete Gaussian sampler's largest scale: give a larger epsilon "
                         "or delta")
    low, high = math.log(MIN_RHO), math.log(MAX_RHO)     # ε(low) <= epsilon < ε(high)
    while high - low > 1e-9:
        middle = 0.5 * (low + high)
        if zcdp_epsilon(math.exp(middle), delta) <= epsilon:
            low = middle
        else:
            high = middle
    return math.exp(low)
