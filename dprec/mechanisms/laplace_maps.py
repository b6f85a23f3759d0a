r"""The lattice Laplace sampler's grid and the privacy maps of the Laplace samplers.

`laplace_grid` fixes the lattice from the scale alone; `laplace_epsilon` gives the ε
of a scale for each sampler of `dprec.mechanisms.laplace`, and `laplace_scale`
inverts it (moved out of that module, which re-exports them).  See
[Mechanisms](../mechanisms.md) for the formulas.
"""

from __future__ import annotations

import math

from ..utils._validation import check_choice, check_epsilon, check_int, check_positive

__all__ = ["LAPLACE_SAMPLERS", "LATTICE_BITS", "laplace_epsilon", "laplace_grid",
           "laplace_scale"]

#: The lattice Laplace grid is the largest power of two ``<= scale * 2**-LATTICE_BITS``.
LATTICE_BITS = 20

#: `laplace_scale` never goes below `sensitivity * 2**-_MIN_SCALE_BITS` nor
#: `_SMALLEST_SCALE` (the grid, 2**-20 of the scale, stays a float with the values
#: and the sensitivity in grid steps finite), nor above `_LARGEST_SCALE`.
_MIN_SCALE_BITS = 900
_SMALLEST_SCALE = 2.0**-1000
_LARGEST_SCALE = 2.0**990

#: Values of the `sampler` argument of `dprec.mechanisms.laplace.laplace`.
LAPLACE_SAMPLERS = ("lattice", "numpy", "opendp")


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


def laplace_epsilon(scale: float, sensitivity: float, sampler: str = "lattice",
                    max_changed: int = 1) -> float:
    r"""ε of [`laplace`][dprec.mechanisms.laplace.laplace] for a query of ℓ1 sensitivity ``Δ₁``.

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
                  max_changed: int = 1, *, name: str = "epsilon") -> float:
    r"""The smallest scale ``b`` (up to the grid) with ``laplace_epsilon(b, Δ₁, ...) ≤ ε``.

    ``Δ₁ / ε`` for ``"numpy"``, and for grid-aligned sensitivities of the
    lattice sampler; otherwise ``Δ₁`` is first rounded up to the grid (a
    fixed point: the grid grows with the scale).

    The scale is never below ``Δ₁ · 2**-900`` (nor ``2**-1000``): a larger ε
    (above about ``8e270`` for ``Δ₁ = 1``) is spent only up to what that scale
    spends, [`laplace_epsilon`][] of it.  That noise is far below the last bit
    of any value, and spending less than the budget keeps within it; a smaller
    scale would put the grid past what floats hold.

    Parameters
    ----------
    name : str, default "epsilon"
        How the errors name ``epsilon`` (the caller's parameter it comes from).

    Raises
    ------
    ValueError
        If ``ε`` is so small that the scale ``Δ₁/ε`` passes ``2**990`` (about
        ``1e298``), or (below about ``max_changed · 2**-20``) that the lattice
        rounding alone exceeds it.
    """
    epsilon = check_epsilon(epsilon, name)
    sensitivity = check_positive(sensitivity, "sensitivity")
    sampler = check_choice(sampler, "sampler", LAPLACE_SAMPLERS)
    max_changed = check_int(max_changed, "max_changed", minimum=1)
    scale = max(sensitivity / epsilon, math.ldexp(sensitivity, -_MIN_SCALE_BITS),
                _SMALLEST_SCALE)
    for _ in range(64):
        if scale > _LARGEST_SCALE:
            break
        if laplace_epsilon(scale, sensitivity, sampler, max_changed) <= epsilon:
            return scale
        scale = max(math.nextafter(scale, math.inf),
                    laplace_epsilon(scale, sensitivity, sampler, max_changed) * scale / epsilon)
    overflow = sensitivity / _LARGEST_SCALE
    if sampler == "numpy" or overflow > max_changed * 2.0**-LATTICE_BITS:
        reason, minimum = f"its scale sensitivity / {name} would pass 2**990", overflow
    else:
        reason, minimum = (f"rounding to the lattice grid alone spends about {max_changed} "
                           f"* 2**-21 (one step per coordinate)",
                           max_changed * 2.0**-LATTICE_BITS)
    raise ValueError(f"{name} = {epsilon:g} is too small for the {sampler} Laplace sampler "
                     f"(sensitivity {sensitivity:g}, {max_changed} coordinate(s)): {reason}; "
                     f"{name} must be at least about {minimum:.3g}")
