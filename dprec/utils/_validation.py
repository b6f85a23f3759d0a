"""Argument checks shared by every public entry point.

Each check names the offending parameter and the allowed range, raises
``TypeError`` for a wrong type and ``ValueError`` for a wrong value, and
returns the value converted to a plain Python type.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable

import numpy as np

_REAL_KINDS = ("i", "u", "f")
_INTEGER_KINDS = ("i", "u")


def check_int(value, name: str, minimum: int | None = None, maximum: int | None = None) -> int:
    """Return ``value`` as an ``int`` in ``[minimum, maximum]``; bools are rejected."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {value}")
    return value


def check_real(value, name: str, low: float | None = None, high: float | None = None,
               low_inclusive: bool = True, high_inclusive: bool = True,
               allow_inf: bool = False) -> float:
    """Return ``value`` as a finite ``float`` in the given interval.

    NaN is always rejected; infinity only passes when ``allow_inf`` is set.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r}")
    value = float(value)
    if math.isnan(value) or (math.isinf(value) and not allow_inf):
        raise ValueError(f"{name} must be a finite number, got {value}")
    if low is not None and (value < low or (value == low and not low_inclusive)):
        raise ValueError(f"{name} must be {'>=' if low_inclusive else '>'} {low}, got {value}")
    if high is not None and (value > high or (value == high and not high_inclusive)):
        raise ValueError(f"{name} must be {'<=' if high_inclusive else '<'} {high}, got {value}")
    return value


def check_positive(value, name: str) -> float:
    """A finite number ``> 0`` (a scale, a sensitivity, a coefficient)."""
    return check_real(value, name, low=0.0, low_inclusive=False)


def check_within(value: float, name: str, low: float | None = None,
                 high: float | None = None, why: str = "") -> float:
    """`value` (a number already checked) within `[low, high]`, else a `ValueError`
    naming `name`, the range that works and `why` (what goes wrong beyond it)."""
    if (low is not None and not value >= low) or (high is not None and not value <= high):
        bounds = (f">= {low:.10g}" if high is None else f"<= {high:.10g}" if low is None
                  else f"in [{low:.10g}, {high:.10g}]")
        raise ValueError(f"{name} must be {bounds}" + (f" ({why})" if why else "")
                         + f", got {value:g}")
    return value


def check_open_interval(value, name: str, low: float, high: float) -> float:
    """A number in the open interval ``(low, high)``."""
    return check_real(value, name, low=low, high=high, low_inclusive=False, high_inclusive=False)


def check_open_unit(value, name: str) -> float:
    """A number in the open interval ``(0, 1)`` (e.g. a δ that must not be 0)."""
    return check_open_interval(value, name, 0.0, 1.0)


def check_real_array(values, name: str = "values", finite: bool = True) -> np.ndarray:
    """``values`` as a float64 array (no copy when already float64), finite unless
    ``finite`` is False; integers are accepted, booleans and strings are not."""
    arr = np.asarray(values)
    if arr.dtype.kind not in _REAL_KINDS:
        raise TypeError(f"{name} must be an array of real numbers, got dtype {arr.dtype}")
    arr = np.asarray(arr, dtype=np.float64)
    if finite and not np.isfinite(arr).all():
        raise ValueError(f"{name} must be finite (no NaN or infinity)")
    return arr


def check_code_array(values, n_values: int, name: str = "values") -> np.ndarray:
    """``values`` as an int64 array of codes in ``0 .. n_values - 1``."""
    arr = np.asarray(values)
    if arr.dtype.kind not in _INTEGER_KINDS:
        raise TypeError(f"{name} must be an array of integer codes, got dtype {arr.dtype}")
    if arr.size and (arr.min() < 0 or arr.max() >= n_values):
        raise ValueError(f"{name} must lie in 0 .. n_values - 1 = {n_values - 1}, "
                         f"got range [{arr.min()}, {arr.max()}]")
    return np.asarray(arr, dtype=np.int64)


def check_uniforms(uniforms, shape: tuple[int, ...], name: str = "uniforms") -> np.ndarray:
    """``uniforms`` as a float64 array of exactly ``shape`` with entries in (0, 1)."""
    arr = np.asarray(uniforms)
    if arr.dtype.kind != "f":
        raise TypeError(f"{name} must be a float array, got dtype {arr.dtype}")
    if arr.shape != tuple(shape):
        raise ValueError(f"{name} must have shape {tuple(shape)}, got {arr.shape}")
    arr = np.asarray(arr, dtype=np.float64)
    if arr.size and not ((arr > 0.0).all() and (arr < 1.0).all()):
        raise ValueError(f"{name} must lie in the open interval (0, 1)")
    return arr


def check_epsilon(value, name: str = "epsilon", allow_inf: bool = False) -> float:
    """A privacy budget: a number ``> 0`` (``inf`` only where it means "no privacy")."""
    return check_real(value, name, low=0.0, low_inclusive=False, allow_inf=allow_inf)


def check_delta(value, name: str = "delta") -> float:
    """A failure probability ``delta`` in ``[0, 1)``."""
    return check_real(value, name, low=0.0, high=1.0, high_inclusive=False)


def check_choice(value, name: str, choices: Iterable[str]) -> str:
    """Return ``value`` (lower-cased) if it is one of ``choices``."""
    choices = tuple(choices)
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, one of {choices}, got {type(value).__name__}")
    if value.lower() not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")
    return value.lower()


def check_bool(value, name: str) -> bool:
    """Return ``value`` if it is a ``bool`` (numpy bools included)."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {type(value).__name__} {value!r}")
    return bool(value)


def check_budget(budget, name: str = "budget") -> tuple[float, float]:
    """A privacy budget ``(epsilon, delta)``: ``epsilon > 0``, ``0 <= delta < 1``."""
    if isinstance(budget, (str, bytes)):
        raise TypeError(f"{name} must be a pair (epsilon, delta), got {budget!r}")
    try:
        eps, delta = budget
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a pair (epsilon, delta), got {budget!r}") from None
    return check_epsilon(eps, f"{name} epsilon"), check_delta(delta, f"{name} delta")
