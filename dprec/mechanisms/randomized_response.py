r"""Generalised (k-ary) randomised response on integer codes: sampler, core, privacy map.

A value ``x ∈ {0..n−1}`` is kept with probability ``p = e^ε / (e^ε + n − 1)``
and otherwise replaced by one of the other ``n − 1`` values uniformly at
random: every output has probability ``p`` under one input and
``(1 − p)/(n − 1) = e^{−ε} p`` under any other, so the mechanism is ε-DP for
a change of one value (Warner 1965; Kairouz, Oh & Viswanath 2014).

References
----------
- S. Warner, "Randomized Response: A Survey Technique for Eliminating Evasive
  Answer Bias", JASA 1965.
- P. Kairouz, S. Oh and P. Viswanath, "Extremal Mechanisms for Local
  Differential Privacy", NeurIPS 2014.

See [Mechanisms](../mechanisms.md) for the formulas and the privacy maps.
"""

from __future__ import annotations

import math

import numpy as np

from ..utils._rng import RandomStateLike, check_random_state
from ..utils._validation import (
    check_code_array,
    check_epsilon,
    check_int,
    check_real,
    check_uniforms,
)
from .common import log_uniform, open_uniform

__all__ = [
    "randomized_response",
    "randomized_response_epsilon",
    "randomized_response_from_log_uniform",
    "randomized_response_from_uniform",
    "randomized_response_keep_probability",
]

_MAX_CODES = 2**53        # the offsets are exact below this
#: the largest ε randomized_response_from_log_uniform draws at (ln U ends at -3.2e18)
MAX_EPSILON = 1e18


def randomized_response_keep_probability(n_values: int, epsilon: float) -> float:
    r"""``p = e^ε / (e^ε + n_values − 1)``: the probability k-ary RR keeps the value."""
    n_values = check_int(n_values, "n_values", minimum=2, maximum=_MAX_CODES)
    epsilon = check_epsilon(epsilon)
    return 1.0 / (1.0 + (n_values - 1) * math.exp(-epsilon))


def randomized_response_epsilon(n_values: int, keep_probability: float) -> float:
    r"""ε of k-ary RR that keeps the value with probability ``p``.

    ``ε = ln(p (n − 1) / (1 − p))``: the largest ratio of the probabilities of
    one output under two inputs, ``p`` against ``(1 − p)/(n − 1)``
    (Kairouz, Oh & Viswanath 2014).  Requires ``1/n < p < 1``.
    """
    n_values = check_int(n_values, "n_values", minimum=2, maximum=_MAX_CODES)
    keep_probability = check_real(keep_probability, "keep_probability",
                                  low=1.0 / n_values, high=1.0, low_inclusive=False,
                                  high_inclusive=False)
    return math.log(keep_probability * (n_values - 1) / (1.0 - keep_probability))


def randomized_response_from_uniform(values: np.ndarray, n_values: int, epsilon: float,
                                     uniforms: np.ndarray) -> np.ndarray:
    r"""k-ary randomised response driven by one uniform per value.

    With ``p = e^ε/(e^ε + n − 1)``: keep ``x`` if ``u < p``; otherwise report
    ``(x + o) mod n`` with offset ``o = 1 + ⌊(u − p)/(1 − p) · (n − 1)⌋`` in
    ``1..n−1``, uniform given ``u ≥ p``: each other value with probability
    ``(1 − p)/(n − 1)``.

    One 53-bit uniform realises these probabilities only to about $2^{-53}$: once
    $1 - p < 2^{-53}$ (ε ≳ 36.7 + ln(n − 1)) it never moves, and some outputs become
    impossible.  [`randomized_response_from_log_uniform`][] is exact at every ε; the
    private components use it.

    Parameters
    ----------
    values : integer array_like in ``0..n_values-1`` (not modified)
    n_values : int, ``2 <= n_values <= 2**53``
    epsilon : float ``> 0``
    uniforms : float array of the shape of ``values``, in (0, 1)

    Returns
    -------
    numpy.ndarray of int64, the shape of ``values``.
    """
    codes, n_values, epsilon = _check_randomized_response(values, n_values, epsilon)
    return _randomized_response(codes, n_values, epsilon, check_uniforms(uniforms, codes.shape))


def randomized_response_log_move(n_values: int, epsilon: float) -> float:
    r"""$\ln(1 - p) = -\ln(1 + e^{\varepsilon}/(n - 1))$, the log-probability that k-ary RR
    reports another value, computed without overflow at any ε."""
    d = epsilon - math.log(n_values - 1)
    return -(d + math.log1p(math.exp(-d))) if d > 0 else -math.log1p(math.exp(d))


def randomized_response_from_log_uniform(values: np.ndarray, n_values: int, epsilon: float,
                                         log_uniforms: np.ndarray,
                                         uniforms: np.ndarray) -> np.ndarray:
    r"""k-ary randomised response, exact at every ε: the move decided by one $\ln U$.

    Another value is reported iff $\ln U < \ln(1 - p)
    = \ln(n - 1) - \ln(e^{\varepsilon} + n - 1)$, with probability $1 - p$; the offset
    $o = 1 + \lfloor u\,(n - 1) \rfloor$ in $1..n-1$ comes from an independent uniform
    $u$.  With $\ln U$ drawn exact in its tail (`dprec.mechanisms.common.log_uniform`,
    `keyed_log_uniform`), the event
    $\{\ln U < t\}$ keeps its probability $e^t$ (to a factor $e^{\pm|t| 2^{-52}}$) however
    small, so every output keeps a positive probability and the ratio
    $p \,/\, \tfrac{1-p}{n-1} = e^{\varepsilon}$ holds at any ε (to a relative $2^{-52}$
    of ε, from rounding $\ln(1 - p)$).  The offsets' probabilities are those of a 53-bit
    uniform, $1/(n-1)$ to a relative $(n - 1)\,2^{-53}$.

    Parameters
    ----------
    values : integer array_like in ``0..n_values-1`` (not modified)
    n_values : int, ``2 <= n_values <= 2**53``
    epsilon : float, ``0 < epsilon <= 1e18``
    log_uniforms : float array of the shape of ``values``, $\ln U \le 0$
    uniforms : float array of the shape of ``values``, in (0, 1)

    Returns
    -------
    numpy.ndarray of int64, the shape of ``values``.
    """
    codes, n_values, epsilon = _check_randomized_response(values, n_values, epsilon)
    log_u = np.asarray(log_uniforms, dtype=np.float64)
    if log_u.shape != codes.shape:
        raise ValueError(f"log_uniforms must have shape {codes.shape}, got {log_u.shape}")
    if log_u.size and not (log_u <= 0.0).all():
        raise ValueError("log_uniforms must be logarithms of uniforms: every entry <= 0")
    return _exact_response(codes, n_values, epsilon, log_u, check_uniforms(uniforms, codes.shape))


def _exact_response(codes: np.ndarray, n_values: int, epsilon: float, log_u: np.ndarray,
                    u: np.ndarray) -> np.ndarray:
    """The core of [`randomized_response_from_log_uniform`][] on checked arguments."""
    log_move = randomized_response_log_move(n_values, epsilon)
    out = codes.copy()
    moved = log_u < log_move
    offset = np.minimum(np.floor(u[moved] * (n_values - 1)), n_values - 2).astype(np.int64)
    out[moved] = (codes[moved] + offset + 1) % n_values
    return out


def _check_randomized_response(values: np.ndarray, n_values: int,
                                epsilon: float) -> tuple[np.ndarray, int, float]:
    """The checked ``(codes, n_values, epsilon)``."""
    n_values = check_int(n_values, "n_values", minimum=2, maximum=_MAX_CODES)
    epsilon = check_epsilon(epsilon)
    if epsilon > MAX_EPSILON:
        raise ValueError(f"epsilon must be at most 1e18 (ln U ends at about -3.2e18), got "
                         f"{epsilon!r}")
    return check_code_array(values, n_values), n_values, epsilon


def _randomized_response(codes: np.ndarray, n_values: int, epsilon: float,
                         u: np.ndarray) -> np.ndarray:
    """The core of [`randomized_response_from_uniform`][] on checked arguments."""
    p_keep = randomized_response_keep_probability(n_values, epsilon)
    # (1 - p) / (n - 1) = e^{-ε} p, computed without cancellation
    p_other = math.exp(-epsilon) * p_keep
    if p_other == 0.0:                       # ε > ~745: every u < 1 keeps
        return codes.copy()
    out = codes.copy()
    moved = u >= p_keep                      # (u − p)/p_other < n − 1 there: no overflow
    offset = np.floor((u[moved] - p_keep) / p_other)
    offset = np.clip(offset, 0, n_values - 2).astype(np.int64) + 1
    out[moved] = (codes[moved] + offset) % n_values
    return out


def randomized_response(values: np.ndarray, n_values: int, epsilon: float,
                        random_state: RandomStateLike) -> np.ndarray:
    r"""Generalised (k-ary) randomised response on integer codes, elementwise.

    Each value ``x ∈ {0..n−1}`` is kept with probability
    ``p = e^ε / (e^ε + n − 1)``, and otherwise replaced by one of the other
    ``n − 1`` values uniformly at random (an offset in ``1..n−1`` added mod
    ``n``).  ε-DP for a change of one value (Warner 1965; Kairouz et al. 2014), at
    every ε up to ``1e18``: drawn by [`randomized_response_from_log_uniform`][]
    (its offsets are uniform to a relative ``(n − 1) 2**-53``: the loss stays within
    ``ε + 1e-9`` for ``n ≤ 2**23``).

    Parameters
    ----------
    values : integer array_like in ``0..n_values-1``
        Not modified.
    n_values : int
        The alphabet size ``n ≥ 2`` (at most ``2**53``).
    epsilon : float
        ``> 0``.
    random_state : None, int, RandomState or Generator

    Returns
    -------
    numpy.ndarray of int64, the shape of ``values``.
    """
    codes, n_values, epsilon = _check_randomized_response(values, n_values, epsilon)
    rng = check_random_state(random_state)
    return _exact_response(codes, n_values, epsilon, log_uniform(rng, codes.shape),
                           open_uniform(rng, codes.shape))

