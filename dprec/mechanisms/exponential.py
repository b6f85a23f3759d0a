r"""The exponential mechanism and its one-shot top-k form (Gumbel keys).

One draw chooses candidate ``j`` with ``P(j) ∝ exp(c·q(j))``; when every
score ``q`` moves by at most ``Δ`` between neighbouring inputs the draw is
``2cΔ``-DP (McSherry & Talwar 2007; Dwork & Roth 2014, Thm 3.10), and ``k``
draws without replacement compose to ``2kcΔ`` ([`exponential_epsilon`][];
[`exponential_coefficient`][] is its inverse, ``c = ε/(2kΔ)``).

The ``k`` draws are made at once by the Gumbel-max trick: with $G_j$ standard
Gumbel, the indices of the ``k`` largest keys $c\,q(j) + G_j$, largest first
([`top_k_indices`][dprec.utils._arrays.top_k_indices]), are distributed exactly as ``k``
sequential draws without replacement (Durfee & Rogers 2019, Lemma 4.2).

**Exact at every ε.**  The trick is exact only if the $G_j$ are: a candidate whose
score is $d$ below the best wins with probability about $e^{-c d}$, i.e. only through
a key of the far upper tail, $P(G > g) \approx e^{-g}$.  $G = -\ln(-\ln u)$ of one
53-bit uniform lies within ``GUMBEL_UNIFORM_SPREAD`` $\approx 40.4$ of every other
such key, so such a candidate can never win once $c\,d > 40.4$ (no DP there), and
its probability is distorted well before.  The seeded sampler
[`exponential_top_k`][] therefore draws its keys with
`standard_gumbel`, exact in both tails
at every $c\,d$ (up to $3.2 \cdot 10^{18}$); `exponential_keys` is the core
driven by such Gumbel variates (e.g.
`keyed_gumbel` for one query, one draw).
[`gumbel_keys_from_uniform`][] and [`gumbel_top_k_from_uniform`][], driven by
one uniform per candidate, keep the bound: they realise every output only while
$c\,(\max q - \min q) <$ ``GUMBEL_UNIFORM_SPREAD``.

References
----------
- F. McSherry and K. Talwar, "Mechanism Design via Differential Privacy",
  FOCS 2007.
- C. Dwork and A. Roth, *The Algorithmic Foundations of Differential Privacy*,
  2014, Thm 3.10 and 3.16.
- D. Durfee and R. Rogers, "Practical Differentially Private Top-k Selection
  with Pay-what-you-get Composition", NeurIPS 2019.

See [Mechanisms](../mechanisms.md) for the formulas and the privacy maps.
"""

from __future__ import annotations

import numpy as np

from ..utils._arrays import top_k_indices
from ..utils._rng import RandomStateLike, check_random_state
from ..utils._validation import (
    check_epsilon,
    check_int,
    check_positive,
    check_real_array,
    check_uniforms,
)
from .common import TINY, standard_gumbel

__all__ = [
    "GUMBEL_UNIFORM_SPREAD",
    "exponential_coefficient",
    "exponential_epsilon",
    "exponential_keys",
    "exponential_top_k",
    "gumbel_keys_from_uniform",
    "gumbel_top_k_from_uniform",
]

#: Width of the range of $-\ln(-\ln u)$ over the uniforms $u \in [2^{-54}, 1 - 2^{-53}]$
#: (`dprec.utils._rng.keyed_uniform`, [`open_uniform`][dprec.mechanisms.common.open_uniform]):
#: the keys of the ``*_from_uniform`` cores realise every top-k only while
#: $c\,(\max q - \min q)$ is below it (about 40.36).
GUMBEL_UNIFORM_SPREAD = float(-np.log(-np.log1p(-2.0**-53)) + np.log(-np.log(TINY)))


def exponential_coefficient(epsilon: float, sensitivity: float, k: int = 1) -> float:
    r"""``c = ε / (2kΔ)``: the weights ``exp(c·q)`` that make ``k`` draws ε-DP together.

    Each of the ``k`` draws is then an ``(ε/k)``-DP exponential mechanism
    ``P(c) ∝ exp((ε/k)·q(c)/(2Δ))`` (Dwork & Roth 2014, Thm 3.10) and the
    ``k`` compose to ε (Thm 3.16).
    """
    epsilon = check_epsilon(epsilon)
    sensitivity = check_positive(sensitivity, "sensitivity")
    k = check_int(k, "k", minimum=1)
    return epsilon / (2.0 * k * sensitivity)


def exponential_epsilon(coefficient: float, sensitivity: float, k: int = 1) -> float:
    r"""ε of ``k`` draws (without replacement) with weights ``exp(coefficient · q)``.

    ``ε = 2 k Δ c``: each draw is ``2Δc``-DP when every score moves by at
    most ``Δ`` between neighbouring inputs; sequential composition over the
    ``k`` draws.  E.g. the selectors' weights ``exp(ε q / (4 k RS))`` spend
    ``exponential_epsilon(ε / (4 k RS), RS, k) = ε / 2``.
    """
    coefficient = check_positive(coefficient, "coefficient")
    sensitivity = check_positive(sensitivity, "sensitivity")
    k = check_int(k, "k", minimum=1)
    return 2.0 * k * sensitivity * coefficient


def _check_mask(mask: np.ndarray | None, scores: np.ndarray) -> np.ndarray:
    """``mask`` as a boolean array of the shape of ``scores`` (all True for None)."""
    if mask is None:
        return np.ones(scores.shape, dtype=bool)
    valid = np.asarray(mask)
    if valid.dtype != bool:
        raise TypeError(f"mask must be a boolean array, got dtype {valid.dtype}")
    if valid.shape != scores.shape:
        raise ValueError(f"mask must have the shape of scores {scores.shape}, got {valid.shape}")
    return valid


def _check_scores(scores: np.ndarray, k: int,
                  mask: np.ndarray | None) -> tuple[np.ndarray, int, np.ndarray]:
    """The checked ``(scores, k, valid)`` of a top-k: every row has ``k`` valid candidates."""
    arr = check_real_array(scores, "scores", finite=False)
    if arr.ndim not in (1, 2):
        raise ValueError(f"scores must be 1-D or 2-D (rows of candidates), got {arr.ndim}-D")
    n_candidates = arr.shape[-1]
    k = check_int(k, "k", minimum=1)
    if k > n_candidates:
        raise ValueError(f"k must be <= the number of candidates {n_candidates}, got {k}")
    valid = _check_mask(mask, arr)
    if not np.isfinite(arr[valid]).all():
        raise ValueError("scores must be finite where mask is True")
    counts = valid.sum(axis=-1)
    if np.any(counts < k):
        row = int(np.argmax(np.atleast_1d(counts) < k))
        raise ValueError(f"k={k} exceeds the number of valid candidates "
                         f"({int(np.atleast_1d(counts)[row])} in row {row})")
    return arr, k, valid


def _gumbel_keys(scores: np.ndarray, coefficient: float, gumbel: np.ndarray,
                 valid: np.ndarray) -> np.ndarray:
    """``c·q + G`` on checked arguments (``gumbel`` is overwritten), ``−inf`` where not
    ``valid``."""
    keys = gumbel
    keys += coefficient * np.where(valid, scores, 0.0)
    keys[~valid] = -np.inf
    return keys


def _uniform_gumbel(uniforms: np.ndarray) -> np.ndarray:
    """``−ln(−ln u)``: bounded (see ``GUMBEL_UNIFORM_SPREAD``)."""
    return -np.log(-np.log(uniforms))


def _check_gumbel(gumbel, shape: tuple[int, ...]) -> np.ndarray:
    arr = np.asarray(gumbel)
    if arr.dtype.kind != "f":
        raise TypeError(f"gumbel must be a float array, got dtype {arr.dtype}")
    if arr.shape != shape:
        raise ValueError(f"gumbel must have shape {shape}, got {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValueError("gumbel must be finite")
    return np.array(arr, dtype=np.float64)                  # a copy: the keys are built in it


def exponential_keys(scores: np.ndarray, coefficient: float, gumbel: np.ndarray,
                     mask: np.ndarray | None = None) -> np.ndarray:
    r"""Keys $c\,q(j) + G_j$ from standard Gumbel variates ($-\infty$ where ``mask`` is False).

    The exact form of [`gumbel_keys_from_uniform`][]: with $G_j$ from
    `standard_gumbel` or
    `keyed_gumbel`, whose upper tail
    $P(G > g) = 1 - e^{-e^{-g}}$ is kept to a relative $2^{-52}$ for any $g$, the indices
    of the $m$ largest keys within any subset of the candidates are distributed exactly
    as $m$ sequential draws without replacement with $P(j) \propto e^{c\,q(j)}$, at
    every $c$ (each draw $2c\Delta$-DP, [`exponential_epsilon`][]).

    Parameters
    ----------
    scores : array_like of real numbers
        The qualities ``q``; finite where ``mask`` is True (not modified).
    coefficient : float
        ``c > 0``.
    gumbel : float array of the shape of ``scores``
        Standard Gumbel variates, finite (not modified).
    mask : bool array of the shape of ``scores``, optional

    Returns
    -------
    numpy.ndarray, float64, the shape of ``scores``.
    """
    arr, coefficient, valid = _checked_scores(scores, coefficient, mask)
    return _gumbel_keys(arr, coefficient, _check_gumbel(gumbel, arr.shape), valid)


def gumbel_keys_from_uniform(scores: np.ndarray, coefficient: float, uniforms: np.ndarray,
                             mask: np.ndarray | None = None) -> np.ndarray:
    r"""Gumbel keys ``c·q(j) − ln(−ln u_j)`` (``−inf`` where ``mask`` is False).

    The building block of the exponential mechanism for selectors that draw
    from parts of a candidate list (PPNS's partitions): the indices of the
    ``m`` largest keys within any subset ``S`` of the candidates are
    distributed as ``m`` sequential draws without replacement from ``S`` with
    ``P(j) ∝ exp(c·q(j))`` (the Gumbel-max trick; Durfee & Rogers 2019), and
    draws from disjoint subsets are independent, so one array of keys per
    query serves them all.  Each such draw is ``2Δc``-DP
    ([`exponential_epsilon`][]).

    **Bounded**: one 53-bit uniform per candidate puts every key within
    ``GUMBEL_UNIFORM_SPREAD`` ≈ 40.4 of $c\,q(j)$, so the draw realises every output only
    while $c\,(\max q - \min q)$ is below it, and is not exact near it.
    `exponential_keys` with
    `keyed_gumbel` variates is the exact form.

    Parameters
    ----------
    scores : array_like of real numbers
        The qualities ``q``; finite where ``mask`` is True (not modified).
    coefficient : float
        ``c > 0``, e.g. ``exponential_coefficient(ε, Δ, k)``.
    uniforms : float array of the shape of ``scores``, in (0, 1)
    mask : bool array of the shape of ``scores``, optional

    Returns
    -------
    numpy.ndarray, float64, the shape of ``scores``.
    """
    arr, coefficient, valid = _checked_scores(scores, coefficient, mask)
    return _gumbel_keys(arr, coefficient, _uniform_gumbel(check_uniforms(uniforms, arr.shape)),
                        valid)


def _checked_scores(scores, coefficient: float, mask) -> tuple[np.ndarray, float, np.ndarray]:
    """The keys' inputs checked: ``(scores as float64, c > 0, the mask)``, the scores
    finite where the mask is True."""
    coefficient = check_positive(coefficient, "coefficient")
    arr = check_real_array(scores, "scores", finite=False)
    valid = _check_mask(mask, arr)
    if not np.isfinite(arr[valid]).all():
        raise ValueError("scores must be finite where mask is True")
    return arr, coefficient, valid


def gumbel_top_k_from_uniform(scores: np.ndarray, k: int, epsilon: float, sensitivity: float,
                              uniforms: np.ndarray,
                              mask: np.ndarray | None = None) -> np.ndarray:
    r"""Exponential top-k from one uniform per candidate (Gumbel top-k).

    Returns the indices of the ``k`` largest
    ``ε·q(c)/(2kΔ) + G_c`` with ``G_c = −ln(−ln u_c)`` standard Gumbel, in
    decreasing order.  The ordered ``k``-tuple has exactly the distribution of
    ``k`` sequential exponential-mechanism draws without replacement, draw
    ``j`` choosing among the remaining candidates with
    ``P(c) ∝ exp((ε/k) q(c) / (2Δ))`` (Durfee & Rogers 2019, Lemma 4.2;
    the Gumbel-max trick).  ε-DP in total ([`exponential_epsilon`][]) while
    ``ε/(2kΔ)·(max q − min q) < GUMBEL_UNIFORM_SPREAD`` (the keys of one uniform are
    bounded, see [`gumbel_keys_from_uniform`][]; [`exponential_top_k`][] is exact).

    Parameters
    ----------
    scores : array of shape ``(n,)`` or ``(rows, n)``
        The quality ``q`` of each candidate (not modified; may be NaN where
        ``mask`` is False).
    k : int
        ``1 <= k <= n``.
    epsilon : float
        The total budget of the ``k`` draws, ``> 0``.
    sensitivity : float
        ``Δ > 0``, the most any score changes between neighbouring inputs.
    uniforms : float array of the shape of ``scores``, in (0, 1)
        E.g. ``keyed_uniform(seed, keys, n)`` for ``rows`` queries.
    mask : bool array of the shape of ``scores``, optional
        Valid candidates; invalid ones are never chosen.

    Returns
    -------
    numpy.ndarray of int64, shape ``(k,)`` or ``(rows, k)``.

    Raises
    ------
    ValueError
        If ``k`` exceeds the valid candidates of some row (no padding: a
        ``-1`` sentinel would be a valid Python index), or for bad parameters.
    """
    arr, k, valid = _check_scores(scores, k, mask)
    coefficient = exponential_coefficient(epsilon, sensitivity, k)
    u = check_uniforms(uniforms, arr.shape)
    return top_k_indices(_gumbel_keys(arr, coefficient, _uniform_gumbel(u), valid), k)


def exponential_top_k(scores: np.ndarray, k: int, epsilon: float, sensitivity: float,
                      random_state: RandomStateLike,
                      mask: np.ndarray | None = None) -> np.ndarray:
    r"""Choose ``k`` candidates without replacement by the exponential mechanism.

    Equivalent to ``k`` sequential draws, each with budget ``ε/k``:
    ``P(c) ∝ exp((ε/k) · q(c) / (2Δ))`` over the candidates not yet chosen
    (McSherry & Talwar 2007; Dwork & Roth 2014, Thm 3.10), implemented as one
    Gumbel top-k (Durfee & Rogers 2019) whose keys come from
    `standard_gumbel`: exact in both tails,
    so every ordered k-tuple keeps its probability at any ε (to the rounding of the
    keys: a relative error of about $2^{-52}\max(1, c\,|q|)$).
    ε-DP in total by sequential composition.

    Parameters
    ----------
    scores : array of shape ``(n,)`` or ``(rows, n)``
        Candidate qualities; 2-D for a batch of independent selections.
    k : int
        ``1 <= k <= n``.
    epsilon : float
        Total budget ``> 0``.
    sensitivity : float
        ``Δ > 0``.
    random_state : None, int, RandomState or Generator
    mask : bool array of the shape of ``scores``, optional
        Valid candidates.  A row with fewer than ``k`` valid candidates raises
        ``ValueError``.

    Returns
    -------
    numpy.ndarray of int64, shape ``(k,)`` or ``(rows, k)``: the chosen
    indices in the order drawn.
    """
    arr, k, valid = _check_scores(scores, k, mask)
    coefficient = exponential_coefficient(epsilon, sensitivity, k)
    rng = check_random_state(random_state)
    return top_k_indices(_gumbel_keys(arr, coefficient, standard_gumbel(rng, arr.shape), valid),
                         k)
