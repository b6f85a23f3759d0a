"""Similarity backends for [`dprec.PrivateKNN`][].

``sim_options`` follows Surprise: ``{"name": ..., "user_based": True,
"min_support": 1}`` for the exact similarities (``"msd"``, ``"cosine"``,
``"pearson"``, ``"pearson_baseline"`` with ``"shrinkage"``, default 100, and
LensKit's ``"centered_cosine"``, [`centered`][dprec.similarity.centered]),
user- or item-based, or a sketch backend's name and parameters
(``"rr_minhash"``, ``"noisy_minhash"``, ``"minhash"``, ``"sjlt"``,
``"gaussian_jl"``; see [`dprec.similarity.sketches`][]), or a sketch backend
object itself (``PrivateKNN(sim_options=PrivateSJLT(64, 4, epsilon=1.0,
rating_bound=5.0))``), which stands for its parameters.

Layers: [`exact`][dprec.similarity.exact] (Surprise's similarities and their sensitivity),
[`centered`][dprec.similarity.centered] (the centred cosine and its sensitivity),
[`sketches`][dprec.similarity.sketches] (the contract every sketch backend follows),
[`minhash`][dprec.similarity.minhash] and [`sjlt`][dprec.similarity.sjlt] (the backends),
[`incremental`][dprec.similarity.incremental] (similarities kept up to date as rows
change), [`rows`][dprec.similarity.rows] (the exact similarities a block of rows at a
time); this module builds the registry `SKETCH_BACKENDS` and turns ``sim_options`` into
matrices.

Floor 2 of the package map in ``docs/development.md``. May import: `dprec.utils`,
`dprec.accountant`, `dprec.mechanisms`, `dprec.datasets`, `dprec.evaluation`.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from types import MappingProxyType

import numpy as np

from ..utils._ratings import RatingArrays
from ..utils._rng import RandomStateLike
from ..utils._threads import map_blocks, map_on_dask, thread_count
from ..utils._validation import check_bool, check_int, check_real
from .exact import (
    EXACT_SIMILARITIES,
    ROW_SIMILARITIES,
    SURPRISE_SIMILARITIES,
    change_bound,
    exact_similarity,
    exact_similarity_and_sums,
    pearson_baseline_similarity,
    recommendation_aware_sensitivity,
)
from .minhash import MinHash, NoisyMinHash, RRMinHash, difference_bound
from .rows import SimilarityRows, SketchRows
from .sjlt import GaussianJL, PrivateSJLT
from .sketches import Sketch, SketchBackend, SketchRelease

#: Every sketch backend class by its ``name`` (the ``sim_options["name"]`` that selects it).
SKETCH_BACKENDS: Mapping[str, type[SketchBackend]] = MappingProxyType(
    {backend.name: backend for backend in (MinHash, RRMinHash, NoisyMinHash, PrivateSJLT,
                                           GaussianJL)})
#: what ``storage="blocked"`` serves: rows from co-rated sums, or from one sketch release
BLOCKED_SIMILARITIES = (*ROW_SIMILARITIES, *SKETCH_BACKENDS)

_EXACT_KEYS = {"name", "user_based", "min_support"}
_SHRINKAGE_KEYS = _EXACT_KEYS | {"shrinkage"}


class UnknownSimilarityError(ValueError, NameError):
    """An unknown `sim_options['name']`: a `ValueError`, like every invalid parameter in
    dprec, and a `NameError`, as Surprise raises for it (code written for Surprise
    catches `NameError`)."""


def sketch_backend(options: Mapping, random_state: RandomStateLike = None) -> SketchBackend:
    """The backend named by ``options["name"]``, built by its ``from_options``.

    Raises
    ------
    TypeError
        If ``options`` is not a mapping.
    ValueError
        If the name is not in `SKETCH_BACKENDS` (the message lists them),
        or for any invalid option.
    """
    if not isinstance(options, Mapping):
        raise TypeError(f"sim_options must be a dict, got {type(options).__name__}")
    name = options.get("name")
    key = name.lower() if isinstance(name, str) else name
    if key not in SKETCH_BACKENDS:
        raise UnknownSimilarityError(f"sim_options['name'] must be one of "
                                     f"{sorted(SKETCH_BACKENDS)}, got {name!r}")
    return SKETCH_BACKENDS[key].from_options({**options, "name": key}, random_state)


def backend_options(backend: SketchBackend) -> dict:
    """The ``sim_options`` a sketch backend object stands for: its name and parameters.

    The model that uses it draws the noise from its own ``random_state`` (one
    seed for the whole fit), so the backend must not carry one.

    Raises
    ------
    ValueError
        If the backend's ``random_state`` is set.
    """
    params = backend.get_params()
    if params.pop("random_state", None) is not None:
        raise ValueError(f"sim_options: the {type(backend).__name__} object has "
                         "random_state set; give random_state to the model instead (it "
                         "draws the sketches' noise)")
    return {"name": backend.name, "user_based": True, **params}


def check_sim_options(sim_options: Mapping | SketchBackend | None) -> dict:
    """Validate ``sim_options`` and return a normalised dict (the input is not mutated).

    ``sim_options`` is a Surprise-style dict, or a sketch backend object
    ([`backend_options`][]).

    Raises
    ------
    TypeError
        If ``sim_options`` is neither a mapping nor a sketch backend.
    ValueError
        For an unknown similarity name or option, ``user_based=False`` with a
        sketch backend (sketches are users' releases of their own rated sets),
        ``min_support < 0`` or ``shrinkage < 0``.
    """
    if sim_options is None:
        sim_options = {}
    if isinstance(sim_options, SketchBackend):
        sim_options = backend_options(sim_options)
    if not isinstance(sim_options, Mapping):
        raise TypeError(f"sim_options must be a dict or a sketch backend, got "
                        f"{type(sim_options).__name__}")
    options = dict(sim_options)
    name = options.get("name", "msd")
    names = EXACT_SIMILARITIES + tuple(SKETCH_BACKENDS)
    if not isinstance(name, str) or name.lower() not in names:
        raise UnknownSimilarityError(f"sim_options['name'] must be one of {names}, "
                                     f"got {name!r}")
    options["name"] = name.lower()
    user_based = check_bool(options.get("user_based", True), "sim_options['user_based']")
    if options["name"] in SKETCH_BACKENDS:
        if not user_based:
            raise ValueError(f"sim_options['user_based'] must be True for the sketch backend "
                             f"{options['name']!r}: a sketch is a user's release of their own "
                             "rated set, and no user holds an item's set of raters")
        options["user_based"] = True
        sketch_backend(with_public_bounds(options, (1.0, 1.0)))  # validates every option
        return options
    options["user_based"] = user_based
    options["min_support"] = check_int(options.get("min_support", 1),
                                       "sim_options['min_support']", minimum=0)
    allowed = _SHRINKAGE_KEYS if options["name"] == "pearson_baseline" else _EXACT_KEYS
    if "shrinkage" in allowed:
        options["shrinkage"] = check_real(options.get("shrinkage", 100.0),
                                          "sim_options['shrinkage']", low=0.0)
    unknown = set(options) - allowed
    if unknown:
        raise ValueError(f"sim_options has unknown option(s) {sorted(unknown)} for "
                         f"{options['name']!r}; allowed: {sorted(allowed)}")
    return options


def with_public_bounds(options: Mapping, rating_scale: tuple[float, float]) -> dict:
    """The options with the projections' ``rating_bound`` defaulting to the most one
    rating moves a coordinate on the (public) rating scale: ``max(|low|, |high|)``
    when it is added or removed, ``high - low`` when it is changed."""
    options = dict(options)
    backend = SKETCH_BACKENDS[options["name"]]
    if "rating_bound" in inspect.signature(backend.__init__).parameters \
            and "sensitivity" not in options:           # its deprecated name
        low, high = rating_scale
        options.setdefault("rating_bound", float(max(abs(low), abs(high), high - low)))
    return options


def similarity_matrix(options: Mapping, ratings: RatingArrays, with_sensitivity: bool = False,
                      rating_scale: tuple[float, float] = (1.0, 5.0),
                      random_state: RandomStateLike = None,
                      residuals: np.ndarray | None = None,
                      ) -> tuple[np.ndarray, np.ndarray | None, SketchRelease | None]:
    """The similarity matrix of the rows of ``ratings`` (users, or items when
    item-based) described by validated ``options``.

    Returns ``(sim, sensitivity, release)``.  ``sensitivity`` is, when
    ``with_sensitivity`` is set (the private selectors need it), each user's
    recommendation-aware sensitivity ``RS(u)`` for the exact similarities and
    the width of the similarity range for the sketches (their similarity is
    computed from privatised sketches; a bounded score moves by at most its
    range), else ``None``.  ``release`` says what the users released through
    a sketch backend ([`SketchRelease`][]), ``None`` for the exact
    similarities.  A sketch backend draws its noise (and hash seed) from
    ``random_state``.  ``pearson_baseline`` needs the baseline ``residuals``
    ``r − (μ + b_row + b_column)`` of the stored ratings, and its sensitivity is
    the width of its range, 2 (a bound on RS: its baselines are global fits,
    which the item-removal formula of RS does not follow).
    """
    name = options["name"]
    if name in SKETCH_BACKENDS:
        backend = sketch_backend(with_public_bounds(options, rating_scale), random_state)
        sim = backend.similarity_matrix(ratings.matrix, columns=ratings.item_keys)
        sensitivity = np.full(ratings.n_users, float(backend.score_range))
        return sim, (sensitivity if with_sensitivity else None), backend.release_
    min_support = options["min_support"]
    if name == "pearson_baseline":
        if residuals is None:
            raise ValueError("pearson_baseline needs the baseline residuals of the ratings")
        sim = pearson_baseline_similarity(ratings.matrix, residuals, min_support,
                                          options["shrinkage"])
        bound = change_bound(name, residuals)
        return sim, (np.full(ratings.n_users, bound) if with_sensitivity else None), None
    if not with_sensitivity:
        return exact_similarity(name, ratings.matrix, min_support), None, None
    sim, sums = exact_similarity_and_sums(name, ratings.matrix, min_support)
    return (sim, recommendation_aware_sensitivity(name, ratings.matrix, sim, sums, min_support),
            None)


def similarity_rows(options: Mapping, ratings: RatingArrays, with_sensitivity: bool = False,
                    backend: str = "threads", rating_scale: tuple[float, float] = (1.0, 5.0),
                    random_state: RandomStateLike = None,
                    ) -> tuple[SimilarityRows | SketchRows, np.ndarray | None,
                               SketchRelease | None]:
    """[`similarity_matrix`][] without the matrix: ``(rows, sensitivity, release)``, its
    rows on demand.

    For the similarities of co-rated sums (cosine, msd, pearson, centered_cosine)
    [`SimilarityRows`][] and, with ``with_sensitivity``,
    every row's ``RS``, computed by blocks of rows on every core
    (``backend="threads"``) or as tasks on the ``dask.distributed`` client in scope
    (``"dask"``): the same numbers as [`similarity_matrix`][].  For a sketch
    backend the users' one release and [`SketchRows`][]
    estimating rows from it (the sensitivity is the score range, as for the
    matrix).  Memory ``O(block)`` (plus the ``n × width`` sketches).
    """
    name = options["name"]
    if name not in BLOCKED_SIMILARITIES:
        raise ValueError(f"blocked similarities are for {BLOCKED_SIMILARITIES}, got {name!r}")
    if name in SKETCH_BACKENDS:
        sketcher = sketch_backend(with_public_bounds(options, rating_scale), random_state)
        rows = SketchRows(sketcher, sketcher.release(ratings.matrix, ratings.item_keys))
        sensitivity = np.full(ratings.n_users, float(sketcher.score_range))
        return rows, (sensitivity if with_sensitivity else None), sketcher.release_
    rows = SimilarityRows(name, ratings.matrix, options["min_support"])
    if not with_sensitivity:
        return rows, None, None
    n = rows.n_rows
    size = rows.block_size() if backend == "dask" else min(rows.block_size(),
                                                            -(-n // thread_count()))
    blocks = [np.arange(start, min(start + size, n)) for start in range(0, n, size)]
    parts = (map_on_dask(SimilarityRows.sensitivity, rows, blocks) if backend == "dask"
             else map_blocks(rows.sensitivity, blocks))
    return rows, np.concatenate(parts), None


__all__ = ["BLOCKED_SIMILARITIES", "EXACT_SIMILARITIES", "SKETCH_BACKENDS",
           "SURPRISE_SIMILARITIES", "GaussianJL", "MinHash", "NoisyMinHash", "PrivateSJLT",
           "RRMinHash", "SimilarityRows", "Sketch", "SketchBackend", "SketchRelease",
           "SketchRows", "UnknownSimilarityError",
           "backend_options", "change_bound", "check_sim_options", "difference_bound",
           "exact_similarity", "recommendation_aware_sensitivity", "similarity_matrix",
           "similarity_rows", "sketch_backend", "with_public_bounds"]
