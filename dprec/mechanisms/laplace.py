r"""The Laplace mechanism: lattice (default), discrete, floating point and OpenDP samplers.

``x + Lap(b)`` with density ``∝ exp(-|y - x| / b)`` is ε-DP for a query of ℓ1
sensitivity ``Δ₁`` when ``b = Δ₁/ε`` (Dwork & Roth 2014, Thm 3.6).

Floating point.  Textbook floating-point Laplace noise leaks its input through
the low bits of the output (Mironov, "On significance of the least significant
bits for differential privacy", CCS 2012).  The default [`laplace`][]
sampler is therefore a *lattice* mechanism: the input is rounded to a grid of
spacing ``2**-j`` chosen from the scale alone ([`laplace_grid`][]) and
discrete Laplace noise on that grid ([`laplace_from_log_uniform`][])
is added, so the set of possible outputs does not depend on the input.  The
uniforms are 53-bit numbers, so probabilities can only be realised to within
about ``2**-53``: the default sampler draws the discrete Laplace noise exact at
every output (`dprec.mechanisms.exact_laplace`), so the privacy loss stays within
``ε + 1e-8`` everywhere.

[`laplace_noise`][] is numpy's floating-point Laplace, for the places where
the published mechanism is the floating-point one and only an order of the
noisy values is released (the ranking privatizer).

Privacy maps: [`laplace_epsilon`][] (and its inverse [`laplace_scale`][])
for each sampler, [`discrete_laplace_epsilon`][].

References
----------
- C. Dwork and A. Roth, *The Algorithmic Foundations of Differential Privacy*,
  2014, Thm 3.6.
- I. Mironov, CCS 2012 (floating-point attack, snapping mechanism).
- A. Ghosh, T. Roughgarden and M. Sundararajan, "Universally Utility-Maximizing
  Privacy Mechanisms", STOC 2009 (the two-sided geometric mechanism).
- C. Canonne, G. Kamath and T. Steinke, "The Discrete Gaussian for
  Differential Privacy", NeurIPS 2020 (discrete Laplace on a lattice).

See [Mechanisms](../mechanisms.md) for the formulas and the privacy maps.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType

import numpy as np

from ..utils._rng import RandomStateLike, check_random_state
from ..utils._validation import check_choice, check_positive, check_real_array, check_uniforms
from .common import finite_sum
from .exact_laplace import discrete_laplace_from_log_uniform, discrete_laplace_noise
from .laplace_maps import (
    LAPLACE_SAMPLERS,
    LATTICE_BITS,
    laplace_epsilon,
    laplace_grid,
    laplace_scale,
)

__all__ = [
    "LAPLACE_SAMPLERS",
    "LATTICE_BITS",
    "discrete_laplace",
    "discrete_laplace_epsilon",
    "discrete_laplace_from_uniform",
    "laplace",
    "laplace_epsilon",
    "laplace_from_log_uniform",
    "laplace_from_uniform",
    "laplace_grid",
    "laplace_noise",
    "laplace_scale",
]

_CHUNK = 1 << 14          # elements per block of the lattice sampler (fits in L2)
#: ``draw(start, stop)`` of the 3-uniform lattice sampler: the uniform arrays of a block.
_Draw = Callable[[int, int], tuple[np.ndarray, np.ndarray, np.ndarray]]


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


def _lattice_block(x: np.ndarray, start: int, stop: int, grid: float, inv_grid: float,
                   p: _DLaplace, draw: _Draw, result: np.ndarray,
                   buffers: tuple[np.ndarray, ...]) -> None:
    """One block of `_lattice_laplace_1d`, written into ``result[start:stop]``."""
    m = stop - start
    work, work2, sign, nonzero = (b[:m] for b in buffers)
    out = result[start:stop]
    u1, u1_low, u2 = draw(start, stop)
    _dlaplace_kernel(u1, u1_low, u2, p, out, work, sign, nonzero)
    np.multiply(x[start:stop], inv_grid, out=work)
    _round_half_up(work, work2, work, nonzero)
    np.add(out, work2, out=out)
    np.multiply(out, grid, out=out)


def _lattice_laplace_1d(x: np.ndarray, grid: float, p: _DLaplace, draw: _Draw) -> np.ndarray:
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


def discrete_laplace_from_uniform(uniforms: np.ndarray, t: float) -> np.ndarray:
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

    Accuracy: for ``2**20 ≤ t < 2**21`` (the lattice sampler) each value of ``B``
    holds ``> 2**30`` grid points of ``u₂``, and ``A``'s bins are resolved to
    ``2**-106``, so every ``z`` with ``|z| < 50 t`` has its exact probability
    up to a relative ``2e-9``.  But ``|Z| ≤ M(1 + 75 t/M)`` since ``u ≥ 2**-107``
    (and ``Z = 0`` for ``t < 1/75``; for ``t > 2**21`` some values of ``B`` are
    impossible): no pure-DP sampler at every ε.  The private components use
    [`laplace_from_log_uniform`][] and [`discrete_laplace`][]; only PNCF's
    perturbation, reproduced as published, uses this core.

    Parameters
    ----------
    uniforms : array of shape ``(..., 3)``
        Uniforms in the open interval (0, 1), e.g. from
        `dprec.utils._rng.keyed_uniform` reshaped.
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


def discrete_laplace(values: np.ndarray, t: float,
                     random_state: RandomStateLike) -> np.ndarray:
    r"""The discrete Laplace mechanism on an integer-valued query: ``x + Z``, elementwise.

    ``P(Z = z) ∝ e^{-|z|/t}``, drawn exact at every ``t``: every integer keeps its
    probability to a relative ``2**-29`` (`dprec.mechanisms.exact_laplace`).  For a
    query whose values are integers and whose ℓ1 sensitivity is ``Δ`` (an
    integer) it is ``Δ/t``-DP (Ghosh, Roughgarden & Sundararajan 2009;
    Canonne, Kamath & Steinke 2020, Thm 2.3): every output is an integer, so
    no floating-point low-bit leak exists (Mironov 2012).

    Parameters
    ----------
    values : array_like of integers (any real dtype holding integers)
        Not modified; magnitudes below 2^52.
    t : float
        The scale, ``0 < t <= 2**42`` (``Δ/ε`` for ε-DP).
    random_state : None, int, RandomState or Generator

    Returns
    -------
    numpy.ndarray, float64 holding integers, of the shape of ``values``.
    """
    x = check_real_array(values)
    if not (np.all(x == np.round(x)) and np.all(np.abs(x) < 2.0**52)):
        raise ValueError("values must be integers below 2**52 in magnitude")
    rng = check_random_state(random_state)
    return finite_sum(x, discrete_laplace_noise(t, x.shape, rng))


def discrete_laplace_epsilon(t: float, sensitivity: float) -> float:
    r"""ε of [`discrete_laplace`][] for an integer query of ℓ1 sensitivity ``Δ``: ``Δ / t``.

    For integer inputs ``x, x'`` with ``‖x − x'‖₁ ≤ Δ`` the ratio of the output
    probabilities is ``q^{|y−x|₁ − |y−x'|₁} ≤ q^{−Δ} = e^{Δ/t}`` (``q = e^{−1/t}``).
    """
    return check_positive(sensitivity, "sensitivity") / check_positive(t, "t")


def laplace_from_uniform(values: np.ndarray, scale: float, uniforms: np.ndarray) -> np.ndarray:
    r"""The lattice Laplace mechanism driven by given uniforms.

    ``y = γ · (⌊x/γ + 1/2⌋ + Z)``, with ``γ = laplace_grid(scale)`` and ``Z``
    the discrete Laplace integer of [`discrete_laplace_from_uniform`][] with
    ``t = scale / γ``: the discrete analogue of ``x + Lap(scale)`` whose outputs
    lie on a grid fixed by the scale (Mironov 2012; Canonne et al. 2020).
    Privacy: see [`laplace_epsilon`][].

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


def laplace_from_log_uniform(values: np.ndarray, scale: float, log_uniforms: np.ndarray,
                             uniforms: np.ndarray) -> np.ndarray:
    r"""The lattice Laplace mechanism, exact in the tail (the default sampler's core).

    ``y = γ · (⌊x/γ + 1/2⌋ + Z)`` as [`laplace_from_uniform`][], with ``Z`` from
    `dprec.mechanisms.exact_laplace`: every grid point keeps its probability, however
    far out, so the privacy loss stays within [`laplace_epsilon`][] plus ``1e-8`` on
    every output.

    Parameters
    ----------
    values : array_like of real numbers (not modified)
    scale : float, the Laplace scale ``b > 0``
    log_uniforms : float array of the shape of ``values``: $\ln U$, exact in its tail
    uniforms : float array of shape ``np.shape(values) + (2,)``, in (0, 1)
    """
    x = check_real_array(values)
    grid = laplace_grid(scale)
    log_u = np.asarray(log_uniforms, dtype=np.float64)
    if log_u.shape != x.shape:
        raise ValueError(f"log_uniforms must have the shape of values {x.shape}, got "
                         f"{log_u.shape}")
    return _on_the_lattice(x, grid, discrete_laplace_from_log_uniform(log_u, uniforms,
                                                                      scale / grid))


def _on_the_lattice(x: np.ndarray, grid: float, noise: np.ndarray) -> np.ndarray:
    """``grid · (⌊x/grid + 1/2⌋ + noise)``, the half-up rounding exact."""
    with np.errstate(over="ignore", invalid="ignore"):   # overflow is caught below
        steps = np.divide(x.reshape(-1), grid)
        out = np.floor(steps)
        np.subtract(steps, out, out=steps)                # the exact fraction
        out += steps >= 0.5
        out += noise.reshape(-1)
        out = (out * grid).reshape(x.shape)
    if not np.isfinite(out).all():
        raise ValueError("values are too large for the lattice grid of this scale "
                         "(|values| / laplace_grid(scale) overflows)")
    return out


def laplace_noise(scale: float | np.ndarray, size: int | tuple[int, ...],
                  random_state: RandomStateLike) -> np.ndarray:
    r"""Floating-point Laplace noise ``b · L``, ``L`` numpy's standard Laplace draw.

    ``L = Generator.laplace(size=size)`` inverts one 53-bit uniform ``U``
    (``ln 2U`` below 1/2, ``−ln(2 − 2U)`` above; ``U = 0`` is redrawn), so
    ``|L| ≤ 52 ln 2 ≈ 36.04`` and ``b·L`` follows ``Lap(b)``, density
    ``e^{−|y|/b} / (2b)``, up to that rounding.  ``x + b·L`` with
    ``b = Δ₁/ε`` is the textbook ε-DP Laplace mechanism (Dwork & Roth 2014,
    Thm 3.6), **but** released as a float it leaks ``x`` through its low bits
    (Mironov 2012): prefer [`laplace`][] (the lattice sampler) whenever the
    noisy values themselves are released.

    Why it exists beside the lattice sampler: some published mechanisms are
    the floating-point one and release only a function of the noisy values
    that the low bits do not reach, e.g. the Laplace ranking privatizer
    (Xu, Sun & Cheng 2023; [`dprec.ranking.mallows.laplace_privatize`][]),
    which releases only the *order* of ``rank + b·L``.  This is that draw,
    bit for bit: ``Generator.laplace(size=size) * scale``, also what
    ``laplace(..., sampler="numpy")`` adds, so a seed gives the published
    numbers.

    Parameters
    ----------
    scale : float or array broadcastable to ``size``
        ``b ≥ 0`` (finite; 0 gives no noise), one per value or one for all.
    size : int or tuple of int
        The shape of the noise.
    random_state : None, int, RandomState or Generator
        The randomness (a Generator is drawn from in place).

    Returns
    -------
    numpy.ndarray, float64, of shape ``size``.

    Raises
    ------
    ValueError
        If ``scale`` is negative or not finite, or does not broadcast to ``size``.
    """
    b = check_real_array(scale, "scale")
    if (b < 0).any():
        raise ValueError("scale must be >= 0")
    shape = (size,) if isinstance(size, (int, np.integer)) else tuple(size)
    try:
        fits = np.broadcast_shapes(b.shape, shape) == shape
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(f"scale of shape {b.shape} does not broadcast to size {shape}")
    rng = check_random_state(random_state)
    return rng.laplace(size=shape) * b


def _import_opendp() -> ModuleType:
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


def laplace(values: np.ndarray, scale: float, random_state: RandomStateLike,
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
        The randomness; see `dprec.utils._rng.check_random_state`.
    sampler : {"lattice", "numpy", "opendp"}
        * ``"lattice"`` (default, safe): [`laplace_from_log_uniform`][]: the input
          rounded to the grid ``laplace_grid(scale)`` plus discrete Laplace noise
          on it; the outputs for every input lie on that common grid, which
          defeats Mironov's (2012) low-bit attack.  Privacy map:
          [`laplace_epsilon`][].
        * ``"numpy"``: ``values + laplace_noise(scale, shape, rng)`` (numpy's
          ``Generator.laplace``, [`laplace_noise`][]): fast but
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
        out = x + laplace_noise(scale, x.shape, rng)
        if not np.isfinite(out).all():
            raise ValueError("values are too large for the Laplace sampler (overflow)")
        return out
    grid = laplace_grid(scale)
    if sampler == "opendp":
        return _opendp_laplace(x, scale, grid)
    return _on_the_lattice(x, grid, discrete_laplace_noise(scale / grid, x.shape, rng))
