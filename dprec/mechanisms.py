"""Differential-privacy mechanisms: Laplace, Gaussian, randomised response, exponential top-k.

Every sampler works on whole arrays at once and comes in two layers
("one query, one draw"):

* a public function that takes ``random_state`` (``None``, an int, a
  ``RandomState`` or a ``Generator``; see :func:`dprec._rng.check_random_state`),
  draws the uniforms it needs and calls
* a ``*_from_uniform`` core that turns an array of uniforms in the open
  interval (0, 1) into the sample.  Selectors and backends feed these cores
  with :func:`dprec._rng.keyed_uniform`, so the noise that answers a query is a
  function of the query's ids.  :data:`UNIFORMS_PER_DRAW` says how many
  uniforms each core consumes per output value.

Each mechanism also exposes its privacy map (``laplace_epsilon``,
``gaussian_delta``, ``randomized_response_epsilon``, ``exponential_epsilon``
...), so callers record what they spent in the :class:`~dprec.ledger.PrivacyLedger`
without re-deriving it.

Floating point.  Textbook floating-point Laplace noise leaks its input through
the low bits of the output (Mironov, "On significance of the least significant
bits for differential privacy", CCS 2012).  The default ``laplace`` sampler is
therefore a *lattice* mechanism: the input is rounded to a grid of spacing
``2**-j`` chosen from the scale alone and discrete Laplace noise on that grid
is added, so the set of possible outputs does not depend on the input.  The
uniforms are 53-bit numbers, so probabilities can only be realised to within
about ``2**-53``; the discrete Laplace core is built (three uniforms per draw)
so that every output within ~50 scales of the input keeps its exact
probability up to a relative ``2e-9``, i.e. the privacy loss stays within
``ε + 1e-8`` except on an event of probability below ``1e-21`` (see
:func:`discrete_laplace_from_uniform`).  The
Gaussian sampler is plain floating point and carries Mironov's caveat.

References
----------
- C. Dwork and A. Roth, *The Algorithmic Foundations of Differential Privacy*,
  2014 (Laplace, exponential mechanism, composition).
- I. Mironov, CCS 2012 (floating-point attack, snapping mechanism).
- C. Canonne, G. Kamath and T. Steinke, "The Discrete Gaussian for
  Differential Privacy", NeurIPS 2020 (discrete Laplace on a lattice).
- B. Balle and Y.-X. Wang, "Improving the Gaussian Mechanism for Differential
  Privacy: Analytical Calibration and Optimal Denoising", ICML 2018.
- D. Durfee and R. Rogers, "Practical Differentially Private Top-k Selection
  with Pay-what-you-get Composition", NeurIPS 2019 (one-shot Gumbel top-k).
- S. Warner, JASA 1965; P. Kairouz, S. Oh and P. Viswanath, ICML 2014
  (generalised randomised response).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np
from scipy import optimize, special

from ._rng import RandomStateLike, check_random_state
from ._validation import (
    check_choice,
    check_code_array,
    check_epsilon,
    check_int,
    check_open_unit,
    check_positive,
    check_real,
    check_real_array,
    check_uniforms,
)

__all__ = [
    "LATTICE_BITS",
    "LAPLACE_SAMPLERS",
    "UNIFORMS_PER_DRAW",
    "laplace",
    "laplace_from_uniform",
    "discrete_laplace",
    "discrete_laplace_epsilon",
    "discrete_laplace_from_uniform",
    "laplace_grid",
    "laplace_epsilon",
    "laplace_scale",
    "gaussian",
    "gaussian_from_uniform",
    "gaussian_delta",
    "gaussian_epsilon",
    "gaussian_sigma",
    "gaussian_rho",
    "randomized_response",
    "randomized_response_from_uniform",
    "randomized_response_keep_probability",
    "randomized_response_epsilon",
    "exponential_top_k",
    "gumbel_top_k_from_uniform",
    "gumbel_keys_from_uniform",
    "exponential_coefficient",
    "exponential_epsilon",
]

#: The lattice Laplace grid is the largest power of two ``<= scale * 2**-LATTICE_BITS``.
LATTICE_BITS = 20

#: Values of the ``sampler`` argument of :func:`laplace`.
LAPLACE_SAMPLERS = ("lattice", "numpy", "opendp")

#: Uniforms each ``*_from_uniform`` core consumes per output value (last axis
#: of its ``uniforms`` argument; ``exponential_top_k``: one per candidate).
UNIFORMS_PER_DRAW = MappingProxyType({
    "laplace": 3,
    "discrete_laplace": 3,
    "gaussian": 2,
    "randomized_response": 1,
    "exponential_top_k": 1,
})

_CHUNK = 1 << 14          # elements per block of the lattice sampler (fits in L2)
_TINY = 2.0**-54          # smallest uniform handed to a core (same as keyed_uniform)
_MAX_CODES = 2**53        # randomized_response: offsets are exact below this


# ----------------------------------------------------------------------------
# argument checks
# ----------------------------------------------------------------------------

def _open_uniform(rng: np.random.Generator, shape) -> np.ndarray:
    """Uniforms in [2**-54, 1 - 2**-53], i.e. in the open interval (0, 1)."""
    return np.maximum(rng.random(shape), _TINY)




# ----------------------------------------------------------------------------
# Laplace
# ----------------------------------------------------------------------------

def laplace_grid(scale: float) -> float:
    r"""Spacing of the lattice Laplace sampler for ``scale``.

    ``γ = 2**(⌊log2 scale⌋ - LATTICE_BITS)``, the largest power of two not
    above ``scale · 2**-20``.  It depends on the scale only, never on the
    input, so the outputs for any two inputs lie on one common grid (for
    ``scale = 1`` the grid is ``2**-20``; every output is a multiple of
    ``2**-45`` as long as ``scale >= 2**-25``).  The noise is then
    ``2**20 .. 2**21`` grid steps per unit of scale, so the lattice adds a
    variance of order ``γ²``, i.e. a relative ``2**-40``.

    Raises
    ------
    ValueError
        If ``scale`` is not a positive finite number or is so small that the
        grid underflows.
    """
    scale = check_positive(scale, "scale")
    _, exponent = math.frexp(scale)          # scale = m * 2**exponent, m in [0.5, 1)
    grid = math.ldexp(1.0, exponent - 1 - LATTICE_BITS)
    if grid == 0.0:
        raise ValueError(f"scale must be >= 2**-1050 for the lattice grid, got {scale}")
    return grid


def _round_half_up(a: np.ndarray, out: np.ndarray, frac: np.ndarray,
                   flags: np.ndarray) -> np.ndarray:
    """``floor(a + 1/2)`` computed exactly (``a + 0.5`` itself may round).

    Monotone, and ``R(a + m) = R(a) + m`` for integers ``m``: the property that
    keeps the lattice's sensitivity at ``ceil(Δ/γ)`` grid steps.  ``frac`` may
    be ``a`` itself (it is overwritten).
    """
    np.floor(a, out=out)
    np.subtract(a, out, out=frac)            # exact fractional part in [0, 1)
    np.greater_equal(frac, 0.5, out=flags)
    np.add(out, flags, out=out)
    return out


@dataclass(frozen=True)
class _DLaplace:
    """Constants of the discrete Laplace sampler ``P(Z = z) ∝ exp(-|z| / t)``."""

    t: float            # noise scale in grid steps
    block: float        # M: the geometric part is split as M·A + B
    a_rate: float       # t / M
    a_shift: float      # log(P(|Z| >= 1)) · t / M
    c: float            # 1 - q**M

    @classmethod
    def from_t(cls, t: float) -> _DLaplace:
        block = float(max(1, math.ceil(t)))
        # P(|Z| >= 1) = 2q / (1 + q) with q = exp(-1/t)
        log_nonzero = math.log(2.0) - 1.0 / t - math.log1p(math.exp(-1.0 / t))
        return cls(t=t, block=block, a_rate=t / block, a_shift=log_nonzero * t / block,
                   c=-math.expm1(-block / t))


def _dlaplace_kernel(u1: np.ndarray, u1_low: np.ndarray, u2: np.ndarray, p: _DLaplace,
                     out: np.ndarray, work: np.ndarray, sign: np.ndarray,
                     nonzero: np.ndarray) -> np.ndarray:
    """Discrete Laplace noise (integer-valued floats) into ``out``; 1-D arrays.

    ``|Z| = 0`` with probability ``(1 - q)/(1 + q)``, else ``|Z| = 1 + M·A + B``
    with ``A ~ Geometric(q**M)`` (inversion of the 106-bit uniform
    ``(⌊2**53 u1⌋ + u1_low) 2**-53``, after the zero test) and ``B`` a geometric
    truncated to ``0 .. M-1`` (inversion of ``u2``'s low 52 bits); the sign is
    ``u2``'s top bit.  Only unmasked ufuncs (``where=`` is 10x slower).
    """
    # fine uniform u = (floor(2**53 u1) + u1_low) * 2**-53, in (0, 1]
    np.multiply(u1, 2.0**53, out=out)
    np.floor(out, out=out)
    np.add(out, u1_low, out=out)
    np.multiply(out, 2.0**-53, out=out)
    # E = (-log u + log P(|Z| >= 1)) * t / M ; |Z| >= 1 iff E >= 0 ; then A = floor(E)
    np.log(out, out=out)
    np.multiply(out, -p.a_rate, out=out)
    np.add(out, p.a_shift, out=out)
    np.greater_equal(out, 0.0, out=nonzero)
    np.floor(out, out=out)
    np.multiply(out, p.block, out=out)
    np.add(out, 1.0, out=out)
    # s = floor(2 u2) in {0, 1}, v = 2 u2 - s uniform in [0, 1) and independent of s
    np.multiply(u2, 2.0, out=work)
    np.floor(work, out=sign)
    np.subtract(work, sign, out=work)
    # B = floor(-t log(1 - v (1 - q**M))), at most M - 1
    np.multiply(work, -p.c, out=work)
    np.add(work, 1.0, out=work)
    np.log(work, out=work)
    np.multiply(work, -p.t, out=work)
    np.floor(work, out=work)
    np.minimum(work, p.block - 1.0, out=work)
    np.add(out, work, out=out)
    # Z = (1 - 2 s) * [|Z| >= 1] * |Z|
    np.multiply(sign, -2.0, out=sign)
    np.add(sign, 1.0, out=sign)
    np.multiply(sign, nonzero, out=sign)
    np.multiply(out, sign, out=out)
    return out


def _lattice_block(x, start, stop, grid, inv_grid, p, draw, result, buffers) -> None:
    """One block of :func:`_lattice_laplace_1d`, written into ``result[start:stop]``."""
    m = stop - start
    work, work2, sign, nonzero = (b[:m] for b in buffers)
    out = result[start:stop]
    u1, u1_low, u2 = draw(start, stop)
    _dlaplace_kernel(u1, u1_low, u2, p, out, work, sign, nonzero)
    np.multiply(x[start:stop], inv_grid, out=work)
    _round_half_up(work, work2, work, nonzero)
    np.add(out, work2, out=out)
    np.multiply(out, grid, out=out)


def _lattice_laplace_1d(x: np.ndarray, grid: float, p: _DLaplace, draw) -> np.ndarray:
    """``grid · (round_half_up(x / grid) + Z)`` block by block.

    ``draw(start, stop)`` returns the three uniform arrays ``(u1, u1_low, u2)`` of a block.
    ``x`` is 1-D and never written to.
    """
    n = x.size
    result = np.empty(n, dtype=np.float64)
    size = min(n, _CHUNK)
    work, work2, sign = np.empty(size), np.empty(size), np.empty(size)
    nonzero = np.empty(size, dtype=bool)
    inv_grid = 1.0 / grid
    with np.errstate(over="ignore", invalid="ignore"):   # overflow is caught below
        for start in range(0, n, _CHUNK):
            _lattice_block(x, start, min(n, start + _CHUNK), grid, inv_grid, p, draw, result,
                           (work, work2, sign, nonzero))
    if not np.isfinite(result).all():
        raise ValueError("values are too large for the lattice grid of this scale "
                         "(|values| / laplace_grid(scale) overflows)")
    return result


def discrete_laplace_from_uniform(uniforms, t: float) -> np.ndarray:
    r"""Discrete Laplace integers ``P(Z = z) = (1-q)/(1+q) · q^|z|``, ``q = e^{-1/t}``.

    The two-sided geometric distribution (Canonne, Kamath & Steinke 2020, §5;
    Ghosh, Roughgarden & Sundararajan 2009).  Built by inversion from three
    uniforms per draw.  Inverting one 53-bit uniform would leave the tail beyond
    ~20 scales coarse (bins of probability comparable to ``2**-53``, a relative
    error of order 1 on the privacy loss there); instead:

    * ``|Z| ≥ 1`` iff ``u ≤ 2q/(1+q)``, where ``u = (⌊2^53 u₀⌋ + u₁)·2^-53`` is a
      uniform with 106 bits of resolution;
    * then ``|Z| = 1 + M·A + B`` with ``M = ⌈t⌉``, ``A ~ Geometric(q^M)`` from
      the same ``u`` (memorylessness) and ``B`` truncated-geometric on
      ``0..M-1`` from the low 52 bits of ``u₂``; the sign is ``u₂ ≥ 1/2``.

    Accuracy: for ``t ≥ 2**20`` (the lattice sampler) each value of ``B`` holds
    ``> 2**30`` grid points of ``u₂``, and ``A``'s bins are resolved to
    ``2**-106``, so every ``z`` with ``|z| < 50 t`` has its exact probability
    up to a relative ``2e-9``.  Beyond, the relative error grows (probability
    below ``1e-21``), and ``|Z| ≤ M(1 + 75 t/M)`` since ``u ≥ 2**-107``.

    Parameters
    ----------
    uniforms : array of shape ``(..., 3)``
        Uniforms in the open interval (0, 1), e.g. from
        :func:`dprec._rng.keyed_uniform` reshaped.
    t : float
        The scale in lattice steps (``scale / grid``), ``> 0``.

    Returns
    -------
    numpy.ndarray of shape ``uniforms.shape[:-1]``, float64 holding integers.
    """
    t = check_positive(t, "t")
    u = np.asarray(uniforms)
    if u.ndim < 1 or u.shape[-1] != 3:
        raise ValueError(f"uniforms must have shape (..., 3), got {u.shape}")
    u = check_uniforms(u, u.shape)
    shape = u.shape[:-1]
    cols = [np.ascontiguousarray(u[..., j]).ravel() for j in range(3)]
    n = cols[0].size
    out = np.empty(n)
    # the kernel's work buffers must match ``out`` exactly (no draws: nothing to do)
    _dlaplace_kernel(cols[0], cols[1], cols[2], _DLaplace.from_t(t), out, np.empty(n),
                     np.empty(n), np.empty(n, dtype=bool))
    return out.reshape(shape)


def discrete_laplace(values, t: float, random_state: RandomStateLike) -> np.ndarray:
    r"""The discrete Laplace mechanism on an integer-valued query: ``x + Z``, elementwise.

    ``P(Z = z) ∝ e^{-|z|/t}`` (:func:`discrete_laplace_from_uniform`).  For a
    query whose values are integers and whose ℓ1 sensitivity is ``Δ`` (an
    integer) it is ``Δ/t``-DP (Ghosh, Roughgarden & Sundararajan 2009;
    Canonne, Kamath & Steinke 2020, Thm 2.3): every output is an integer, so
    no floating-point low-bit leak exists (Mironov 2012).

    Parameters
    ----------
    values : array_like of integers (any real dtype holding integers)
        Not modified; magnitudes below 2^52.
    t : float
        The scale, ``> 0`` (``Δ/ε`` for ε-DP).
    random_state : None, int, RandomState or Generator

    Returns
    -------
    numpy.ndarray, float64 holding integers, of the shape of ``values``.
    """
    x = check_real_array(values)
    if not (np.all(x == np.round(x)) and np.all(np.abs(x) < 2.0**52)):
        raise ValueError("values must be integers below 2**52 in magnitude")
    t = check_positive(t, "t")
    rng = check_random_state(random_state)
    return _finite_sum(x, discrete_laplace_from_uniform(_open_uniform(rng, x.shape + (3,)), t))


def discrete_laplace_epsilon(t: float, sensitivity: float) -> float:
    r"""ε of :func:`discrete_laplace` for an integer query of ℓ1 sensitivity ``Δ``: ``Δ / t``.

    For integer inputs ``x, x'`` with ``‖x − x'‖₁ ≤ Δ`` the ratio of the output
    probabilities is ``q^{|y−x|₁ − |y−x'|₁} ≤ q^{−Δ} = e^{Δ/t}`` (``q = e^{−1/t}``).
    """
    return check_positive(sensitivity, "sensitivity") / check_positive(t, "t")


def laplace_from_uniform(values, scale: float, uniforms) -> np.ndarray:
    r"""The lattice Laplace mechanism driven by given uniforms.

    ``y = γ · (⌊x/γ + 1/2⌋ + Z)``, with ``γ = laplace_grid(scale)`` and ``Z``
    the discrete Laplace integer of :func:`discrete_laplace_from_uniform` with
    ``t = scale / γ``: the discrete analogue of ``x + Lap(scale)`` whose outputs
    lie on a grid fixed by the scale (Mironov 2012; Canonne et al. 2020).
    Privacy: see :func:`laplace_epsilon`.

    Parameters
    ----------
    values : array_like of real numbers
        The true values ``x`` (not modified).
    scale : float
        The Laplace scale ``b > 0``; ``ε = Δ₁/b`` for a query of sensitivity
        ``Δ₁`` on the grid.
    uniforms : array of shape ``np.shape(values) + (3,)``
        Uniforms in (0, 1), e.g. ``keyed_uniform(seed, keys, 3 * n).reshape(-1, n, 3)``.

    Returns
    -------
    numpy.ndarray, float64, of the shape of ``values``.
    """
    x = check_real_array(values)
    scale = check_positive(scale, "scale")
    u = check_uniforms(uniforms, x.shape + (3,))
    grid = laplace_grid(scale)
    cols = [np.ascontiguousarray(u[..., j]).ravel() for j in range(3)]
    out = _lattice_laplace_1d(x.ravel(), grid, _DLaplace.from_t(scale / grid),
                              lambda a, b: (cols[0][a:b], cols[1][a:b], cols[2][a:b]))
    return out.reshape(x.shape)


def _import_opendp():
    try:
        import opendp.prelude as dp
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "laplace(..., sampler='opendp') needs the optional dependency OpenDP: "
            "pip install 'dprec[opendp]' (or pip install opendp)"
        ) from exc
    return dp


def _opendp_laplace(x: np.ndarray, scale: float, grid: float) -> np.ndarray:
    """OpenDP's exact Laplace sampler on the grid ``grid`` (its ``k``)."""
    dp = _import_opendp()
    if x.size == 0:
        return np.empty(x.shape)
    dp.enable_features("contrib")
    try:
        atom = dp.atom_domain(T=float, nan=False)        # recent OpenDP (0.16)
    except TypeError:
        atom = dp.atom_domain(T=float)                   # 0.10 - 0.12: NaN-free by default
    domain = dp.vector_domain(atom, size=int(x.size))
    measurement = dp.m.make_laplace(domain, dp.l1_distance(T=float), scale,
                                    k=math.frexp(grid)[1] - 1)
    out = np.asarray(measurement(x.ravel().tolist()), dtype=np.float64).reshape(x.shape)
    if not np.isfinite(out).all():
        raise ValueError("values are too large for the Laplace sampler (overflow)")
    return out


def laplace(values, scale: float, random_state: RandomStateLike,
            sampler: str = "lattice") -> np.ndarray:
    r"""The Laplace mechanism ``x + Lap(scale)``, elementwise.

    ``P(y) ∝ exp(-|y - x| / scale)``; with ``scale = Δ₁/ε`` it is ε-DP for a
    query of ℓ1 sensitivity ``Δ₁`` (Dwork & Roth 2014, Thm 3.6).

    Parameters
    ----------
    values : array_like of real numbers
        The true values (not modified); any shape.
    scale : float
        The noise scale ``b > 0`` (standard deviation ``√2·b``).
    random_state : None, int, RandomState or Generator
        The randomness; see :func:`dprec._rng.check_random_state`.
    sampler : {"lattice", "numpy", "opendp"}
        * ``"lattice"`` (default, safe): :func:`laplace_from_uniform`: the input
          rounded to the grid ``laplace_grid(scale)`` plus discrete Laplace noise
          on it; the outputs for every input lie on that common grid, which
          defeats Mironov's (2012) low-bit attack.  Privacy map:
          :func:`laplace_epsilon`.
        * ``"numpy"``: ``values + Generator.laplace(0, scale)``: fast but
          **unsafe**: the low bits of the floating-point output reveal the
          input (Mironov 2012).  For tests and comparisons only.
        * ``"opendp"``: OpenDP's exact sampler (``opendp.measurements.make_laplace``
          with ``k`` set to the same grid), from the optional extra
          ``dprec[opendp]``.  OpenDP draws from the operating system's CSPRNG:
          ``random_state`` is checked but cannot seed it, so results are not
          reproducible.  Calls ``opendp.prelude.enable_features("contrib")``.
          Several hundred times slower than the lattice sampler.

    Returns
    -------
    numpy.ndarray, float64, of the shape of ``values`` (0-d for a scalar).

    Raises
    ------
    ValueError
        If ``scale`` is not positive and finite, ``values`` hold NaN or
        infinity, ``sampler`` is unknown, or the result overflows.
    TypeError
        For non-numeric ``values`` or a bad ``random_state``.
    ImportError
        For ``sampler="opendp"`` without OpenDP installed.
    """
    x = check_real_array(values)
    scale = check_positive(scale, "scale")
    sampler = check_choice(sampler, "sampler", LAPLACE_SAMPLERS)
    rng = check_random_state(random_state)
    if sampler == "numpy":
        out = x + rng.laplace(0.0, scale, size=x.shape)
        if not np.isfinite(out).all():
            raise ValueError("values are too large for the Laplace sampler (overflow)")
        return out
    grid = laplace_grid(scale)
    if sampler == "opendp":
        return _opendp_laplace(x, scale, grid)
    size = min(x.size, _CHUNK)
    buffers = (np.empty(size), np.empty(size), np.empty(size))

    def draw(start: int, stop: int):
        u1, u1_low, u2 = (b[: stop - start] for b in buffers)
        rng.random(out=u1)
        rng.random(out=u1_low)
        np.maximum(u1_low, _TINY, out=u1_low)
        rng.random(out=u2)
        return u1, u1_low, u2

    return _lattice_laplace_1d(x.ravel(), grid, _DLaplace.from_t(scale / grid),
                               draw).reshape(x.shape)


def laplace_epsilon(scale: float, sensitivity: float, sampler: str = "lattice",
                    max_changed: int = 1) -> float:
    r"""ε of :func:`laplace` for a query of ℓ1 sensitivity ``Δ₁``.

    * ``"numpy"``: ``Δ₁ / scale`` (nominal; the floating-point sampler does
      not actually meet it, see Mironov 2012).
    * ``"lattice"``: the inputs are rounded half-up to the grid ``γ``; a
      coordinate that moves by ``d`` moves by at most ``⌈d/γ⌉`` grid steps, so
      ``ε = (⌈Δ₁/γ⌉ + max_changed − 1) · γ / scale``.  This equals
      ``Δ₁ / scale`` exactly when one coordinate changes by a multiple of the
      grid (e.g. ``Δ₁ = 1`` and ``scale < 2**21``), and exceeds it by at most
      ``max_changed · 2**-20`` otherwise.
    * ``"opendp"``: OpenDP's own accounting, ``(Δ₁ + max_changed·γ) / scale``
      (its map charges one grid step per coordinate of the vector).

    Parameters
    ----------
    scale : float
        The Laplace scale ``> 0``.
    sensitivity : float
        ``Δ₁ > 0``: the largest ℓ1 distance between the true values of two
        neighbouring inputs.
    sampler : {"lattice", "numpy", "opendp"}
    max_changed : int
        The most coordinates two neighbouring inputs can differ in (1 for a
        scalar query; the vector length when unknown).
    """
    scale = check_positive(scale, "scale")
    sensitivity = check_positive(sensitivity, "sensitivity")
    sampler = check_choice(sampler, "sampler", LAPLACE_SAMPLERS)
    max_changed = check_int(max_changed, "max_changed", minimum=1)
    if sampler == "numpy":
        return sensitivity / scale
    grid = laplace_grid(scale)
    if sampler == "opendp":
        return (sensitivity + max_changed * grid) / scale
    steps = math.ceil(sensitivity / grid) + max_changed - 1
    return steps * grid / scale


def laplace_scale(epsilon: float, sensitivity: float, sampler: str = "lattice",
                  max_changed: int = 1) -> float:
    r"""The smallest scale ``b`` (up to the grid) with ``laplace_epsilon(b, Δ₁, ...) ≤ ε``.

    ``Δ₁ / ε`` for ``"numpy"``, and for grid-aligned sensitivities of the
    lattice sampler; otherwise ``Δ₁`` is first rounded up to the grid (a
    fixed point: the grid grows with the scale).

    Raises
    ------
    ValueError
        If ``ε`` is so small (below about ``max_changed · 2**-20``) that the
        lattice rounding alone exceeds it.
    """
    epsilon = check_epsilon(epsilon)
    sensitivity = check_positive(sensitivity, "sensitivity")
    sampler = check_choice(sampler, "sampler", LAPLACE_SAMPLERS)
    max_changed = check_int(max_changed, "max_changed", minimum=1)
    scale = sensitivity / epsilon
    for _ in range(64):
        if laplace_epsilon(scale, sensitivity, sampler, max_changed) <= epsilon:
            return scale
        scale = max(math.nextafter(scale, math.inf),
                    laplace_epsilon(scale, sensitivity, sampler, max_changed) * scale / epsilon)
    raise ValueError(f"epsilon={epsilon} is too small for the lattice grid "
                     f"(max_changed={max_changed}): no scale reaches it")


# ----------------------------------------------------------------------------
# Gaussian
# ----------------------------------------------------------------------------

def gaussian_from_uniform(values, sigma: float, uniforms) -> np.ndarray:
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
    return _finite_sum(x, sigma * normal)


def _finite_sum(x: np.ndarray, noise: np.ndarray) -> np.ndarray:
    out = x + noise
    if not np.isfinite(out).all():
        raise ValueError("values are too large for the noise (overflow)")
    return out


def gaussian(values, sigma: float, random_state: RandomStateLike) -> np.ndarray:
    r"""The Gaussian mechanism ``x + N(0, σ²)``, elementwise.

    With ``σ = gaussian_sigma(ε, δ, Δ₂)`` it is (ε, δ)-DP for a query of ℓ2
    sensitivity ``Δ₂`` (analytic calibration, Balle & Wang 2018), and
    ``ρ``-zCDP with ``ρ = Δ₂² / (2σ²)`` (Bun & Steinke 2016).

    Floating-point sampler (``Generator.standard_normal``): unlike the default
    :func:`laplace`, it is not hardened against Mironov's (2012) low-bit
    attack.

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
    return _finite_sum(x, sigma * rng.standard_normal(x.shape))


def _gaussian_delta(sigma: float, sensitivity: float, epsilon: float) -> float:
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

    Inverts the exact curve of :func:`gaussian_delta` numerically (Balle &
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
    sigma = math.exp(optimize.brentq(excess, low, high, xtol=1e-13))
    while _gaussian_delta(sigma, sensitivity, epsilon) > delta:
        sigma = math.nextafter(sigma, math.inf) * (1 + 1e-12)
    return sigma


def gaussian_rho(sigma: float, sensitivity: float) -> float:
    r"""zCDP parameter ``ρ = Δ₂² / (2σ²)`` of the Gaussian mechanism (Bun & Steinke 2016)."""
    sigma = check_positive(sigma, "sigma")
    sensitivity = check_positive(sensitivity, "sensitivity")
    return sensitivity**2 / (2.0 * sigma**2)


# ----------------------------------------------------------------------------
# Randomised response
# ----------------------------------------------------------------------------

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


def randomized_response_from_uniform(values, n_values: int, epsilon: float,
                                     uniforms) -> np.ndarray:
    r"""k-ary randomised response driven by one uniform per value.

    With ``p = e^ε/(e^ε + n − 1)``: keep ``x`` if ``u < p``; otherwise report
    ``(x + o) mod n`` with offset ``o = 1 + ⌊(u − p)/(1 − p) · (n − 1)⌋`` in
    ``1..n−1``, uniform given ``u ≥ p``: each other value with probability
    ``(1 − p)/(n − 1)``.

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


def _check_randomized_response(values, n_values, epsilon) -> tuple[np.ndarray, int, float]:
    n_values = check_int(n_values, "n_values", minimum=2, maximum=_MAX_CODES)
    epsilon = check_epsilon(epsilon)
    return check_code_array(values, n_values), n_values, epsilon


def _randomized_response(codes: np.ndarray, n_values: int, epsilon: float,
                         u: np.ndarray) -> np.ndarray:
    p_keep = randomized_response_keep_probability(n_values, epsilon)
    # (1 - p) / (n - 1) = e^{-ε} p, computed without cancellation
    p_other = math.exp(-epsilon) * p_keep
    if p_other == 0.0:                       # ε > ~745: every u < 1 keeps
        return codes.copy()
    offset = np.floor((u - p_keep) / p_other)
    offset = np.clip(offset, 0, n_values - 2).astype(np.int64) + 1
    return np.where(u < p_keep, codes, (codes + offset) % n_values)


def randomized_response(values, n_values: int, epsilon: float,
                        random_state: RandomStateLike) -> np.ndarray:
    r"""Generalised (k-ary) randomised response on integer codes, elementwise.

    Each value ``x ∈ {0..n−1}`` is kept with probability
    ``p = e^ε / (e^ε + n − 1)``, and otherwise replaced by one of the other
    ``n − 1`` values uniformly at random (an offset in ``1..n−1`` added mod
    ``n``).  ε-DP for a change of one value (Warner 1965; Kairouz et al. 2014).

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
    return _randomized_response(codes, n_values, epsilon, _open_uniform(rng, codes.shape))


# ----------------------------------------------------------------------------
# Exponential mechanism, top-k
# ----------------------------------------------------------------------------

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


def _check_mask(mask, scores: np.ndarray) -> np.ndarray:
    if mask is None:
        return np.ones(scores.shape, dtype=bool)
    valid = np.asarray(mask)
    if valid.dtype != bool:
        raise TypeError(f"mask must be a boolean array, got dtype {valid.dtype}")
    if valid.shape != scores.shape:
        raise ValueError(f"mask must have the shape of scores {scores.shape}, got {valid.shape}")
    return valid


def _check_scores(scores, k, mask) -> tuple[np.ndarray, int, np.ndarray]:
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


def _gumbel_keys(scores: np.ndarray, coefficient: float, uniforms: np.ndarray,
                 valid: np.ndarray) -> np.ndarray:
    keys = -np.log(-np.log(uniforms))
    keys += coefficient * np.where(valid, scores, 0.0)
    keys[~valid] = -np.inf
    return keys


def _top_k_of_keys(keys: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` largest keys along the last axis, largest first."""
    keys = np.negative(keys)                 # ascending order = best first
    part = np.argpartition(keys, k - 1, axis=-1)[..., :k]
    order = np.argsort(np.take_along_axis(keys, part, axis=-1), axis=-1)
    return np.take_along_axis(part, order, axis=-1).astype(np.int64)


def gumbel_keys_from_uniform(scores, coefficient: float, uniforms, mask=None) -> np.ndarray:
    r"""Gumbel keys ``c·q(j) − ln(−ln u_j)`` (``−inf`` where ``mask`` is False).

    The building block of the exponential mechanism for selectors that draw
    from parts of a candidate list (PPNS's partitions): the indices of the
    ``m`` largest keys within any subset ``S`` of the candidates are
    distributed as ``m`` sequential draws without replacement from ``S`` with
    ``P(j) ∝ exp(c·q(j))`` (the Gumbel-max trick; Durfee & Rogers 2019), and
    draws from disjoint subsets are independent, so one array of keys per
    query serves them all.  Each such draw is ``2Δc``-DP
    (:func:`exponential_epsilon`).

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
    coefficient = check_positive(coefficient, "coefficient")
    arr = check_real_array(scores, "scores", finite=False)
    valid = _check_mask(mask, arr)
    if not np.isfinite(arr[valid]).all():
        raise ValueError("scores must be finite where mask is True")
    return _gumbel_keys(arr, coefficient, check_uniforms(uniforms, arr.shape), valid)


def gumbel_top_k_from_uniform(scores, k: int, epsilon: float, sensitivity: float,
                              uniforms, mask=None) -> np.ndarray:
    r"""Exponential top-k from one uniform per candidate (Gumbel top-k).

    Returns the indices of the ``k`` largest
    ``ε·q(c)/(2kΔ) + G_c`` with ``G_c = −ln(−ln u_c)`` standard Gumbel, in
    decreasing order.  The ordered ``k``-tuple has exactly the distribution of
    ``k`` sequential exponential-mechanism draws without replacement, draw
    ``j`` choosing among the remaining candidates with
    ``P(c) ∝ exp((ε/k) q(c) / (2Δ))`` (Durfee & Rogers 2019, Lemma 4.2;
    the Gumbel-max trick).  ε-DP in total (:func:`exponential_epsilon`).

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
    return _top_k_of_keys(_gumbel_keys(arr, coefficient, u, valid), k)


def exponential_top_k(scores, k: int, epsilon: float, sensitivity: float,
                      random_state: RandomStateLike, mask=None) -> np.ndarray:
    r"""Choose ``k`` candidates without replacement by the exponential mechanism.

    Equivalent to ``k`` sequential draws, each with budget ``ε/k``:
    ``P(c) ∝ exp((ε/k) · q(c) / (2Δ))`` over the candidates not yet chosen
    (McSherry & Talwar 2007; Dwork & Roth 2014, Thm 3.10), implemented as one
    Gumbel top-k (Durfee & Rogers 2019): see :func:`gumbel_top_k_from_uniform`.
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
    return _top_k_of_keys(_gumbel_keys(arr, coefficient, _open_uniform(rng, arr.shape), valid), k)
