"""What the mechanism modules share: the uniforms they are driven by and the overflow check.

Every sampler of :mod:`dprec.mechanisms` has a ``*_from_uniform`` core that
turns uniforms in the open interval (0, 1) into the sample;
:data:`UNIFORMS_PER_DRAW` says how many each core consumes per output value,
and :func:`open_uniform` is how the seeded samplers draw them.
"""

from __future__ import annotations

from types import MappingProxyType

import numpy as np

__all__ = ["TINY", "UNIFORMS_PER_DRAW", "finite_sum", "open_uniform"]

#: Uniforms each ``*_from_uniform`` core consumes per output value (last axis
#: of its ``uniforms`` argument; ``exponential_top_k``: one per candidate).
UNIFORMS_PER_DRAW = MappingProxyType({
    "laplace": 3,
    "discrete_laplace": 3,
    "gaussian": 2,
    "randomized_response": 1,
    "exponential_top_k": 1,
})

#: Smallest uniform handed to a core, ``2**-54`` (the same floor as
#: :func:`dprec._rng.keyed_uniform`): ``log u`` stays finite.
TINY = 2.0**-54


def open_uniform(rng: np.random.Generator, shape: int | tuple[int, ...]) -> np.ndarray:
    """Uniforms in ``[2**-54, 1 - 2**-53]``, i.e. in the open interval (0, 1).

    ``max(U, 2**-54)`` with ``U`` from ``rng.random``, whose values are the
    multiples of ``2**-53`` in ``[0, 1)``: only ``U = 0`` is moved.
    """
    return np.maximum(rng.random(shape), TINY)


def finite_sum(x: np.ndarray, noise: np.ndarray) -> np.ndarray:
    """``x + noise``, refusing a result that overflows.

    Raises
    ------
    ValueError
        If any element of the sum is not finite.
    """
    out = x + noise
    if not np.isfinite(out).all():
        raise ValueError("values are too large for the noise (overflow)")
    return out
