"""What `PrivateKNN`'s parameters may be, and how `check_params` resolves them.

Parameters are stored as given (scikit-learn's convention) and checked here,
at `fit` or by `PrivateKNN.check_params`, which sets what they resolve to:
`sim_options_`, `bsl_options_`, `selector_`, `neighbourhood_`, `prediction_`,
`fallback_`, `neighbour_shrinkage_`, `min_sim_` (a float), `backend_`, `k_` and
`min_k_` (plain `int`s: a numpy integer given as `k` is never used in arithmetic).
The choices themselves are defined where they are implemented: `PREDICTIONS`,
`FALLBACKS` and `RULE_PARAMETERS` with the rules, `STORAGES` and `BACKENDS` with the
storages, `NEIGHBOURHOODS` with the engines.
"""

from __future__ import annotations

import inspect
import math
import warnings
from collections.abc import Mapping

import numpy as np

from ..selectors import SELECTORS, Selector
from ..similarity import BLOCKED_SIMILARITIES, EXACT_SIMILARITIES, check_sim_options
from ..utils._rng import validate_random_state
from ..utils._validation import (
    check_bool,
    check_budget,
    check_choice,
    check_epsilon,
    check_int,
    check_real,
    check_real_array,
)
from .neighbourhoods import NEIGHBOURHOODS
from .rules import FALLBACKS, PREDICTIONS, check_signed_rule
from .storage import BACKENDS, STORAGES

_BASELINE_OPTIONS = {"method", "n_epochs", "reg", "reg_u", "reg_i", "learning_rate"}

#: the range of each flat selector parameter, whichever selector uses it
_FLAT_CHECKS = {
    "epsilon": lambda v: check_epsilon(v, "epsilon"),
    "p": lambda v: check_real(v, "p", low=0.0, high=1.0, low_inclusive=False),
    "alpha": lambda v: check_real(v, "alpha", low=0.0, high=1.0, low_inclusive=False),
    "rho": lambda v: check_real(v, "rho", low=0.0, high=1.0, low_inclusive=False,
                                high_inclusive=False),
    "floor": lambda v: check_real(v, "floor", low=0.0, low_inclusive=False),
}


def check_params(model) -> None:
    """Validate the parameters of the `PrivateKNN` `model` and set what they resolve to
    on it, in this order (the first invalid parameter raises, naming it)."""
    model.sim_options_ = check_sim_options(model.sim_options)
    model.bsl_options_ = check_bsl_options(model.bsl_options)
    model.k_ = check_int(model.k, "k", minimum=1)
    model.min_k_ = check_int(model.min_k, "min_k", minimum=0)
    model.selector_ = make_selector(model.selector, epsilon=model.epsilon, p=model.p,
                                    alpha=model.alpha, rho=model.rho, floor=model.floor)
    model.selector_.check_k(model.k_)
    model.neighbourhood_ = check_choice(model.neighbourhood, "neighbourhood", NEIGHBOURHOODS)
    check_bool(model.centered, "centered")
    model.prediction_ = check_choice(model.prediction, "prediction", PREDICTIONS)
    model.fallback_ = check_choice(model.fallback, "fallback", FALLBACKS)
    model.neighbour_shrinkage_ = check_real(model.neighbour_shrinkage, "neighbour_shrinkage",
                                            low=0.0, allow_inf=True)
    if model.centered and model.prediction_ != "basic":
        raise ValueError("centered=True (the papers' rule) needs prediction='basic'; "
                         "Surprise's mean-centred rule is prediction='means'")
    # None: the rule's own, s > 0 (Surprise's), every s != 0 centred (the papers')
    model.min_sim_ = ((-math.inf if model.centered else 0.0) if model.min_sim is None
                      else check_real(model.min_sim, "min_sim"))
    check_signed_rule(model.prediction_, model.centered, model.min_sim_, "prediction")
    validate_random_state(model.random_state)
    check_bool(model.verbose, "verbose")
    check_bool(model.diagnostics, "diagnostics")
    if model.budget is not None:
        check_budget(model.budget)
    storage = check_choice(model.storage, "storage", STORAGES)
    backend = model.backend_ = check_choice(model.backend, "backend", BACKENDS)
    blocked = "storage='blocked'" if storage == "blocked" else (
        "backend='dask' (which distributes blocked similarities)" if backend == "dask"
        else None)
    if blocked and model.sim_options_["name"] not in BLOCKED_SIMILARITIES:
        raise ValueError(f"{blocked} is for the similarities {BLOCKED_SIMILARITIES}, "
                         f"not {model.sim_options_['name']!r}")
    if backend == "dask" and storage == "dense":
        raise ValueError("backend='dask' distributes blocked similarities; "
                         "storage='dense' keeps the whole matrix here")


def check_bsl_options(bsl_options: Mapping | None) -> dict:
    """Validate Surprise's `bsl_options` and return a copy (the input is not mutated)."""
    if bsl_options is None:
        return {}
    if not isinstance(bsl_options, Mapping):
        raise TypeError(f"bsl_options must be a dict, got {type(bsl_options).__name__}")
    options = dict(bsl_options)
    unknown = set(options) - _BASELINE_OPTIONS
    if unknown:
        raise ValueError(f"bsl_options has unknown option(s) {sorted(unknown)}; allowed: "
                         f"{sorted(_BASELINE_OPTIONS)}")
    if "method" in options:
        options["method"] = check_choice(options["method"], "bsl_options['method']",
                                         ("als", "sgd"))
    if "n_epochs" in options:
        options["n_epochs"] = check_int(options["n_epochs"], "bsl_options['n_epochs']",
                                        minimum=1)
    for name in ("reg", "reg_u", "reg_i", "learning_rate"):
        if name in options:
            options[name] = check_real(options[name], f"bsl_options['{name}']", low=0.0)
    return options


def make_selector(selector: str | Selector, **params) -> Selector:
    """A selector object from a name and the flat keyword arguments it uses (those it
    ignores raise a `UserWarning` pointing at the caller of `check_params`)."""
    given = {name: value for name, value in params.items() if value is not None}
    if isinstance(selector, Selector):
        if given:
            raise ValueError(f"{sorted(given)} must be None when selector is an object; "
                             f"set them on the {type(selector).__name__} itself")
        return selector
    cls = SELECTORS[check_choice(selector, "selector", SELECTORS)]
    for name, value in given.items():  # valid for some selector, even if this one ignores it
        _FLAT_CHECKS[name](value)
    accepted = inspect.signature(cls).parameters
    ignored = sorted(set(given) - set(accepted))
    if ignored:
        warnings.warn(f"{ignored} {'is' if len(ignored) == 1 else 'are'} ignored by the "
                      f"{cls.name!r} selector" + (": it has no privacy parameter, and its "
                      "neighbour lists are not private" if "epsilon" in ignored else ""),
                      UserWarning, stacklevel=4)
    return cls(**{name: value for name, value in given.items() if name in accepted})


def check_ids(ids, name: str, n: int) -> np.ndarray:
    """Inner ids as a 1-D int64 array, each in `0 .. n-1`."""
    arr = np.asarray(ids)
    if arr.dtype.kind not in "iu" or arr.ndim != 1:
        raise TypeError(f"{name} must be a 1-D array of integer inner ids, got "
                        f"{arr.dtype} of shape {arr.shape}")
    if arr.size and (arr.min() < 0 or arr.max() >= n):
        raise ValueError(f"{name} must be inner ids in 0..{n - 1}, got range "
                         f"[{arr.min()}, {arr.max()}]")
    return arr.astype(np.int64)


def check_precomputed(name: str, release, sim, sensitivity, n: int,
                      selector: Selector) -> tuple[np.ndarray, np.ndarray | None]:
    """`fit_precomputed`'s arguments for the similarity `name`, checked: the sketches'
    `release` given for a sketch backend, `sim` (float64, $n \\times n$, finite) and
    `sensitivity` (one finite $RS > 0$ per user, required by the selectors that read
    it)."""
    if name not in EXACT_SIMILARITIES and release is None:
        raise ValueError("fit_precomputed is for the exact similarities; "
                         f"{name!r} must be fitted with fit() or given the sketches' release")
    sim = check_real_array(sim, "sim", finite=False)
    if sim.shape != (n, n):
        raise ValueError(f"sim must have shape ({n}, {n}), got {sim.shape}")
    if selector.needs_sensitivity and sensitivity is None:
        raise ValueError(f"sensitivity (one RS per user, {n}) is required by the "
                         f"{selector.name} selector")
    if not np.isfinite(sim).all():
        raise ValueError("sim must be finite (no NaN or infinity)")
    if sensitivity is not None:
        sensitivity = check_real_array(sensitivity, "sensitivity", finite=False)
        if sensitivity.shape != (n,):
            raise ValueError(f"sensitivity must hold one RS per user, shape ({n},) as sim, "
                             f"got shape {sensitivity.shape}")
        if not (np.isfinite(sensitivity) & (sensitivity > 0)).all():
            raise ValueError("sensitivity must be finite and > 0 (each user's RS)")
    return sim, sensitivity
