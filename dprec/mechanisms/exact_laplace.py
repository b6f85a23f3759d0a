r"""Discrete Laplace noise exact at every scale: every integer keeps its probability.

$P(Z = z) = \frac{1-q}{1+q}\, q^{|z|}$ with $q = e^{-1/t}$.  A sampler that inverts a
fixed number of 53-bit uniforms cannot do this at every $t$: its tail ends (no $|Z|$
beyond some 75 scales, and for $t$ below $1/75$ no noise at all), and for large $t$ one
uniform spread over $t$ values leaves some of them with probability 0 — a pure-DP claim
then fails outright.  This sampler draws

* **the zero test and the number of blocks** from one $\ln U$ exact in its tail
  (`dprec.mechanisms.common.log_uniform`): $|Z| \ge 1$ iff
  $\ln U \le \ln P(|Z| \ge 1) = \ln\frac{2q}{1+q}$; given that,
  $E = \ln P(|Z| \ge 1) - \ln U$ is exactly exponential (memorylessness), and
  $|Z| = 1 + \lfloor E\,t \rfloor$ is geometric with ratio $q$.  The integer part is
  split as $M A + B$ with a block $M \ge t$: $A = \lfloor E t / M \rfloor$ is geometric
  with ratio $q^M$, unbounded;
* **the offset in the block** $B \in 0..M-1$ (truncated geometric, ratio $q$) in
  mixed radix, $B = \sum_i b_i\, u_i$ with units $u_0 = 1, u_{i+1} = u_i L$ and digits
  $b_i \in 0..K_i - 1$, $K_i \le L = 2^{21}$, each digit an independent truncated
  geometric with ratio $q^{u_i}$ (the probability of $B$ is the product of its digits'),
  inverted from its own 53-bit uniform.  A level decays by at most about
  $e^{-1 - 1/K_i}$ over its $K_i$ values, so each value holds more than $2^{29}$ grid
  points even where the grid's spacing is $2^{-52}$: its probability is exact to a
  relative $2^{-29}$ (counted exactly in the tests, on both grids);
* **the sign** from one more uniform ($u < \tfrac12$: exactly one half on the grid).

So the privacy loss between neighbouring integers stays within $\varepsilon$ plus
$4 \cdot 2^{-29} < 10^{-8}$ (two levels at most, for $t \le 2^{42}$, the largest scale
accepted) on every output within $10^8$ scales of the input, and no output is
impossible, however far out.  (Beyond $10^8$ scales, an event of probability below
$e^{-10^8}$, the float64 rounding of $\ln U$, an absolute $|\ln U|\,2^{-53}$, grows past
$10^{-8}$.)  ``t`` must be at least $10^{-18}$: $\ln U$ ends at
$-\mathrm{TAIL\_LIMIT} \approx -3.2 \cdot 10^{18}$, below which no noise could be drawn.
The noise is returned as float64 integers, exact while $|x + Z| < 2^{53}$, that is unless $|Z|$
exceeds $2^{52}$ (probability $e^{-2^{52}/t} \le e^{-1024}$).  The lattice Laplace
sampler's scales, $t \in [2^{20}, 2^{21})$ grid steps, take one level.

References
----------
- A. Ghosh, T. Roughgarden and M. Sundararajan, "Universally Utility-Maximizing
  Privacy Mechanisms", STOC 2009.
- C. Canonne, G. Kamath and T. Steinke, "The Discrete Gaussian for Differential
  Privacy", NeurIPS 2020, §5 (discrete Laplace by geometric blocks).
"""

from __future__ import annotations

import math

import numpy as np

from ..utils._validation import check_positive, check_uniforms
from .common import log_uniform

__all__ = ["MAX_T", "MIN_T", "discrete_laplace_from_log_uniform", "discrete_laplace_noise",
           "discrete_laplace_uniforms"]

#: values per level of the offset in a block (each keeps > 2^29 grid points of a uniform)
LEVEL = 1 << 21
#: the largest scale accepted (two levels; the noise stays an exact float64 integer but
#: for an event of probability below e^-1024)
MAX_T = 2.0**42
#: the smallest scale accepted: ln U ends at -TAIL_LIMIT (about -3.2e18)
MIN_T = 1e-18


def _levels(t: float) -> list[tuple[float, int]]:
    """``(unit, K)`` of each digit of the offset, lowest first; the block is
    ``M = unit_top · K_top >= t``."""
    levels, unit = [], 1.0
    while unit * LEVEL < t:
        levels.append((unit, LEVEL))
        unit *= LEVEL
    levels.append((unit, max(1, math.ceil(t / unit))))
    return levels


def discrete_laplace_uniforms(t: float) -> int:
    """The uniforms one draw of scale ``t`` consumes beside its $\\ln U$: the sign and
    one per level of the offset (2 for ``t <= 2**21``, else 3)."""
    t = _check_t(t)
    return 1 + len(_levels(t))


def _check_t(t: float) -> float:
    t = check_positive(t, "t")
    if t < MIN_T:
        raise ValueError(f"t must be at least 1e-18 (an ε of 1e18 per unit of sensitivity), "
                         f"got {t!r}: beyond, no noise could be drawn")
    if t > MAX_T:
        raise ValueError(f"t must be at most 2**42 (the noise must stay an exact float64 "
                         f"integer), got {t!r}: use a smaller sensitivity (a coarser grid) "
                         "or a larger epsilon")
    return t


def _truncated_geometric(v: np.ndarray, log_ratio: float, n_values: int,
                         out: np.ndarray | None = None) -> np.ndarray:
    r"""Values in $0..n-1$ with $P(b) \propto r^b$ ($\ln r$ = ``log_ratio`` $< 0$), by
    inversion: $b = \lfloor \ln(1 - v(1 - r^n)) / \ln r \rfloor$ (into ``out``)."""
    mass = -math.expm1(n_values * log_ratio)               # 1 - r^n
    out = np.multiply(v, -mass, out=out)
    np.log1p(out, out=out)
    np.divide(out, log_ratio, out=out)
    np.floor(out, out=out)
    return np.minimum(out, n_values - 1.0, out=out)


def discrete_laplace_from_log_uniform(log_uniforms: np.ndarray, uniforms: np.ndarray,
                                      t: float) -> np.ndarray:
    r"""Discrete Laplace integers of scale ``t``, exact at every ``t`` (module docstring).

    Parameters
    ----------
    log_uniforms : float array, $\ln U \le 0$
        One per draw, exact in its tail (`dprec.mechanisms.common.log_uniform` or
        `keyed_log_uniform`); its shape is the output's.
    uniforms : float array of shape ``log_uniforms.shape + (discrete_laplace_uniforms(t),)``
        In (0, 1): the sign, then one per level of the offset.
    t : float
        The scale, ``1e-18 <= t <= 2**42``.

    Returns
    -------
    numpy.ndarray of float64 integers, the shape of ``log_uniforms``.
    """
    t = _check_t(t)
    log_u = np.asarray(log_uniforms, dtype=np.float64)
    if log_u.size and not (log_u <= 0.0).all():
        raise ValueError("log_uniforms must be logarithms of uniforms: every entry <= 0")
    levels = _levels(t)
    return _noise(t, levels, log_u, check_uniforms(uniforms, log_u.shape + (1 + len(levels),)))


def discrete_laplace_noise(t: float, shape: int | tuple[int, ...],
                           rng: np.random.Generator) -> np.ndarray:
    r"""Discrete Laplace noise of scale ``t`` from ``rng``: $\ln U$ from its words
    (`dprec.mechanisms.common.log_uniform`), then the sign's and the
    levels' uniforms (``rng.random``: multiples of $2^{-53}$ in $[0, 1)$, on which
    $u < \tfrac12$ is exactly one half and $u = 0$ gives the offset 0, as it should)."""
    t = _check_t(t)
    levels = _levels(t)
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    log_u = log_uniform(rng, shape)
    return _noise(t, levels, log_u, rng.random(shape + (1 + len(levels),)))


def _noise(t: float, levels: list[tuple[float, int]], log_u: np.ndarray,
           u: np.ndarray) -> np.ndarray:
    """The sampler on checked arguments (flat work arrays, in place)."""
    shape = log_u.shape
    log_u = log_u.reshape(-1)
    u = u.reshape(-1, u.shape[-1])
    log_q = -1.0 / t
    log_nonzero = math.log(2.0) + log_q - math.log1p(math.exp(log_q))   # ln 2q/(1+q)
    block = levels[-1][0] * levels[-1][1]
    magnitude = np.subtract(log_nonzero, log_u)           # E, exponential where >= 0
    magnitude *= t / block
    np.floor(magnitude, out=magnitude)                    # A
    magnitude *= block
    magnitude += 1.0
    digit = np.empty_like(magnitude)
    for n, (unit, size) in enumerate(levels):
        _truncated_geometric(u[:, 1 + n], unit * log_q, size, out=digit)
        if unit != 1.0:
            digit *= unit
        magnitude += digit
    np.negative(magnitude, out=magnitude, where=u[:, 0] < 0.5)
    magnitude[log_u > log_nonzero] = 0.0                   # |Z| = 0
    return magnitude.reshape(shape)
