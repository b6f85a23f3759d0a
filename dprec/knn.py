"""``PrivateKNN``: Surprise's kNN family with private neighbour selection and similarity.

One algorithm class, composed of a similarity backend (:mod:`dprec.similarity`),
a neighbour selector (:mod:`dprec.selectors`) and one of Surprise's kNN
prediction rules (``KNNBasic``, ``KNNWithMeans``, ``KNNWithZScore``,
``KNNBaseline``), user- or item-based.  With the exact similarities and the
top-k selector it reproduces the corresponding Surprise class prediction for
prediction, computed for whole test sets at once.

See ``docs/prediction_rules.md`` for the rules and ``docs/selectors.md`` for the selectors.
"""

from __future__ import annotations

import copy
import inspect
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from functools import cached_property, partial

import numpy as np
import scipy.sparse as sp
from surprise import AlgoBase, PredictionImpossible
from surprise.prediction_algorithms.optimize_baselines import baseline_sgd
from surprise.prediction_algorithms.predictions import Prediction

from . import _kernels as kernels
from ._arrays import pattern_matrix, safe_divide, stable_descending_order
from ._ratings import RatingArrays
from ._rng import (
    QueryNoise,
    RandomStateLike,
    derive_generator,
    derive_seed,
    fit_entropy,
    is_seeded,
    validate_random_state,
)
from ._surprise import UNKNOWN, inner_ids, predictions, raw_ids
from ._threads import map_blocks, map_on_dask, thread_count
from ._validation import (
    check_bool,
    check_budget,
    check_choice,
    check_epsilon,
    check_int,
    check_real,
)
from .baselines import als_baselines, trainset_baselines
from .ledger import LedgerEntry, PrivacyAccountant, Status
from .selectors import SELECTORS, Selector, TopK
from .similarity import (
    BLOCKED_SIMILARITIES,
    EXACT_SIMILARITIES,
    SKETCH_BACKENDS,
    SimilarityRows,
    SketchRelease,
    SketchRows,
    change_bound,
    check_sim_options,
    similarity_matrix,
    similarity_rows,
)
from .similarity.rows import ROW_BLOCK_CELLS
from .topn import recommend_batch

NEIGHBOURHOODS = ("item", "user")
#: Surprise's kNN prediction rules: KNNBasic, KNNWithMeans, KNNWithZScore, KNNBaseline
PREDICTIONS = ("basic", "means", "zscore", "baseline")
_BASELINE_OPTIONS = {"method", "n_epochs", "reg", "reg_u", "reg_i", "learning_rate"}
#: how the fitted model holds its similarities: the whole matrix, or rows computed on demand
STORAGES = ("auto", "dense", "blocked")
#: what the basic rule predicts with fewer than ``min_k`` contributing neighbours
FALLBACKS = ("global_mean", "user_mean")
#: the parameters that only turn the chosen neighbours into an estimate: models that differ
#: in them alone make the same selections (:meth:`PrivateKNN.estimate_rules`)
RULE_PARAMETERS = ("prediction", "fallback", "neighbour_shrinkage")
#: where the blocks of a blocked model run: this machine's threads, or a Dask cluster
BACKENDS = ("threads", "dask")
#: what a model sent to Dask workers leaves behind (answers are charged by the caller)
_LOCAL_STATE = ("trainset", "_accountant", "_selections", "_answered", "_neighbour_sets",
                "_has_neighbour_set")
#: ``storage="auto"`` keeps the whole matrix while one float64 n × n matrix stays below this
#: (256 MiB, about 5,800 rows; at the MovieLens-1M shape, 6,040 users, the whole matrix
#: would make top-k about 20% faster and PPNS with RS about 25% slower, at 1.1-1.7x the
#: memory: ``benchmarks/bench_scale.py``)
DENSE_SIMILARITY_BYTES = 1 << 28


@dataclass
class _Chosen:
    """Neighbours chosen for a batch of queries (one row each)."""

    columns: np.ndarray      # candidate columns (user ids or rater slots), -1 if empty
    weights: np.ndarray      # similarities used in the prediction, 0 if empty
    alpha: np.ndarray        # realised accuracy α per query
    beta: np.ndarray         # selector's security β per query
    partitions: np.ndarray   # 1-based partition of each chosen neighbour, 0 if empty

    def take(self, rows: np.ndarray) -> _Chosen:
        return _Chosen(*(getattr(self, f.name)[rows] for f in fields(self)))

    @staticmethod
    def concatenate(parts: list[_Chosen]) -> _Chosen:
        return _Chosen(*(np.concatenate([getattr(c, f.name) for c in parts])
                         for f in fields(_Chosen)))


@dataclass
class _Batch:
    """Estimates for a batch of queries and the selections behind them.

    ``chosen`` and ``neighbours`` hold one row per selection and ``row`` maps
    each query to its selection: one per query in the item neighbourhood, one
    per user in the user neighbourhood (many queries share it).  In the item
    neighbourhood the chosen columns are positions among the raters of the
    item asked, ``candidates[starts[row] + position]``; in the user
    neighbourhood they are user ids (``starts`` is None).
    """

    est: np.ndarray          # (n_rules, n_queries): one row per prediction rule asked
    actual_k: np.ndarray
    row: np.ndarray          # each query's row of `chosen` and `neighbours`
    parts: list[_Chosen]     # `chosen` in blocks, joined when first read
    starts: np.ndarray | None = None      # per selection: where its candidates start
    candidates: np.ndarray | None = None  # the raters, item by item

    @cached_property
    def chosen(self) -> _Chosen:
        return _Chosen.concatenate(self.parts) if len(self.parts) > 1 else self.parts[0]

    @cached_property
    def neighbours(self) -> np.ndarray:
        """Inner ids of the chosen neighbours, ``-1`` if empty (built when first read,
        part by part: the parts' other fields are not joined for it)."""
        if self.starts is None:
            return self.chosen.columns
        ends = np.cumsum([len(part.columns) for part in self.parts])
        return np.concatenate([
            _at_positions(self.candidates, self.starts[end - len(part.columns):end],
                          part.columns, -1) for part, end in zip(self.parts, ends)])

    @classmethod
    def empty(cls, k: int, n_rules: int = 1) -> _Batch:
        nothing = np.zeros(0, dtype=np.int64)
        chosen = _Chosen(np.full((0, k), -1), np.zeros((0, k)), np.ones(0), np.ones(0, np.int64),
                         np.zeros((0, k), dtype=np.int64))
        return cls(np.zeros((n_rules, 0)), nothing, nothing, [chosen])


@dataclass(frozen=True)
class _Rule:
    """A prediction rule of a fitted model: what each stored rating contributes to the
    weighted sum over the chosen neighbours, and how that sum becomes an estimate."""

    prediction: str
    fallback: str
    shrinkage: float
    by_column: np.ndarray    # the deviations in the item-major order (``item_users``)
    matrix: sp.csc_matrix    # the deviations as a rows × columns matrix

    @property
    def key(self) -> tuple[str, str, float]:
        """``(prediction, fallback, shrinkage)``: the rule's key in the model's rules."""
        return self.prediction, self.fallback, self.shrinkage


class _SelectionLog:
    """Running totals of the selections a fitted model has made."""

    def __init__(self) -> None:
        self.count = 0
        self.alpha = self.beta = self.max_partition_sum = 0.0
        self.max_partition = 0

    def add(self, chosen: _Chosen) -> None:
        if len(chosen.alpha) == 0:
            return
        furthest = chosen.partitions.max(axis=1)
        self.count += len(chosen.alpha)
        self.alpha += float(chosen.alpha.sum())
        self.beta += float(chosen.beta.sum())
        self.max_partition_sum += float(furthest.sum())
        self.max_partition = max(self.max_partition, int(furthest.max()))

    def summary(self) -> dict:
        n = max(self.count, 1)
        return {"selections": self.count, "alpha": self.alpha / n if self.count else float("nan"),
                "beta": self.beta / n if self.count else float("nan"),
                "max_partition": self.max_partition,
                "mean_max_partition": self.max_partition_sum / n if self.count else float("nan")}
_TOO_FEW = "Not enough neighbors."
# what the privacy report says of the outputs no mechanism covers
_ITEM_CANDIDATES = ("in the item neighbourhood the candidates are the raters of the item asked: "
                    "one rating decides whether a user can be chosen at all")
_EXACT_NEIGHBOURS = "chosen from similarities computed on the raw data, without noise"
_INNER_IDS = ("the neighbour sets are post-processing of the sketches, but kneighbors() "
              "returns inner ids, which follow the order of the data")
#: the output of the neighbours' inner ids, where the selector covers the lists as raw ids
_INNER_LISTS = "neighbours' inner ids (kneighbors, get_neighbors)"
_INNER_ORDER = ("inner ids follow the order of the data (one removal renumbers them): the "
                "selector's entries cover the lists as raw ids (trainset.to_raw_uid of each)")
_NOT_PAIRWISE = ("pearson_baseline's baselines are fitted on every rating: one rating moves "
                 "every similarity, not one score per query")
_RAW_RATINGS = ("they average the chosen neighbours' raw ratings (and use means or baselines "
                "of raw ratings)")
_ITEM_BASED = ("item-based: the neighbours are items, whose similarities aggregate all their "
               "raters' ratings; the selectors' guarantees are stated for user-based selection")
_DIAGNOSTICS = "computed from the exact similarities and ranks"
_EXACT_WEIGHTS = ("the chosen neighbours' similarities, computed on the raw data without "
                  "noise: the selector's entries cover which neighbours are chosen, not these")
#: the output of the neighbours' weights (what ``kneighbors`` returns beside the ids)
_WEIGHTS = "neighbour weights (kneighbors, estimate_rules with_neighbours)"
_OWN_QUERIES = ("per-user figures count what other users see: a user's own answers are shown "
                "to them only and are not charged to them")
#: largest number of (query × candidate) cells handled in one block
_BLOCK_CELLS = 1 << 17
#: most candidate cells per block of queries answered by the compiled kernel (nothing
#: padded; at least four blocks per thread)
_KERNEL_CELLS = 1 << 21


class PrivateKNN(AlgoBase):
    r"""kNN collaborative filtering with pluggable neighbour selection and similarity.

    Surprise's prediction rules, for user :math:`u` and item :math:`i`, over
    the chosen neighbours :math:`v \in N` with :math:`s(u, v) > 0` who rated
    :math:`i` (user-based; item-based swaps the roles of users and items):

    .. math::
        \text{basic:}\quad \hat r_{ui} = \frac{\sum_v s(u,v)\, r_{vi}}{\sum_v s(u,v)}
        \qquad
        \text{means:}\quad \hat r_{ui} = \mu_u + \frac{\sum_v s(u,v)(r_{vi} - \mu_v)}
                                                       {\sum_v s(u,v)}

    ``zscore``: :math:`\mu_u + \sigma_u \sum_v s(u,v)(r_{vi} - \mu_v)/\sigma_v / \sum_v s(u,v)`;
    ``baseline``: :math:`b_{ui} + \sum_v s(u,v)(r_{vi} - b_{vi}) / \sum_v s(u,v)` with
    :math:`b_{ui} = \mu + b_u + b_i` (Koren 2010).  The last three fall back to
    :math:`\mu_u` (or :math:`b_{ui}`) when fewer than ``min_k`` neighbours
    contribute, as Surprise's do; ``basic`` is then impossible.  With
    ``centered=True`` (the papers' formula, in either neighbourhood):
    :math:`\bar r_u + \sum_{v} s(u,v)(r_{vi} - \bar r_v) / \sum_v |s(u,v)|` over the
    neighbours with :math:`s \ne 0` who rated :math:`i`.

    Parameters are stored as given (scikit-learn's convention: changing one
    after construction takes effect at the next ``fit``) and validated by
    ``fit``, or by :meth:`check_params`, which also resolves them into the
    fitted attributes ``selector_``, ``sim_options_``, ``bsl_options_``,
    ``neighbourhood_``, ``prediction_``, ``fallback_``, ``neighbour_shrinkage_`` and
    ``backend_``; everything after
    ``sim_options`` is keyword-only.

    Parameters
    ----------
    k : int, default 40
        Number of neighbours (``>= 1``).
    min_k : int, default 1
        Fewer contributing neighbours than this makes the prediction impossible
        (Surprise then falls back to the global mean, ``was_impossible=True``).
    fallback : {"global_mean", "user_mean"}, default "global_mean"
        The basic rule's answer with fewer than ``min_k`` contributing
        neighbours: impossible, hence Surprise's global mean
        (``"global_mean"``), or the user's own mean :math:`\mu_u`
        (``"user_mean"``, ``was_impossible=False``), as ``KNNWithMeans`` falls
        back.  User-based it reads only the asking user's own ratings, shown
        to them alone: nothing to charge.  Item-based it is the item's mean
        over its raters, which, like every prediction, no privacy claim covers
        (the accountant says so).  The other rules always fall back to
        :math:`\mu_u` or :math:`b_{ui}`.
    neighbour_shrinkage : float, default 0
        :math:`\lambda \ge 0` (``inf`` allowed): the neighbours' term of the
        rule is weighted by :math:`n / (n + \lambda)`, ``n`` the number of
        contributing neighbours (``actual_k``), shrinking each estimate
        towards the rule's fallback, :math:`\mu_u` (basic, means, zscore,
        centred) or :math:`b_{ui}` (baseline), where few neighbours speak
        (the support shrinkage of Koren, TKDD 2010, applied to the
        prediction).  ``0`` is Surprise's rule; ``inf`` predicts
        :math:`\mu_u` or :math:`b_{ui}` itself, so a ``λ`` chosen by
        cross-validation over a grid holding ``inf`` is never worse than it on
        the validation folds (the basic rule with ``fallback="global_mean"``
        stays impossible below ``min_k`` neighbours: use ``"user_mean"`` to
        predict :math:`\mu_u` everywhere).  Reads nothing the rule does not
        (``n`` is in ``details``).
    sim_options : dict, optional
        Surprise-style similarity options: ``name`` (``"msd"`` (default),
        ``"cosine"``, ``"pearson"``, ``"pearson_baseline"`` with ``shrinkage``,
        default 100), ``user_based`` (default True; False for item-based kNN,
        exact similarities only), ``min_support`` (default 1); or a private
        sketch backend (user-based), e.g.
        ``{"name": "rr_minhash", "width": 128, "B": 4, "epsilon": 4.0, "delta": 1e-4}``
        (also ``"noisy_minhash"``, ``"minhash"``, ``"sjlt"``, ``"gaussian_jl"``;
        see :mod:`dprec.similarity`), whose release the privacy accountant
        records.
        The dict is copied, never modified.
    selector : str or Selector, default "topk"
        Neighbour selector, by name (``"topk"``, ``"probabilistic"``,
        ``"pncf"``, ``"ppns"``, ``"pncf_corrected"``) or as an object from
        :mod:`dprec.selectors`.
    epsilon, p, alpha, rho, floor : float, optional
        The selector's parameters as flat keyword arguments (so that
        ``GridSearchCV`` can grid over them): ``epsilon`` for PNCF, PPNS and
        the corrected PNCF,
        ``p`` or the target accuracy ``alpha`` for PPNS, ``rho`` for PNCF,
        ``floor`` for probabilistic selection.
        ``None`` keeps the selector's default; parameters a named selector
        does not use are ignored with a ``UserWarning`` (``epsilon`` with
        ``"topk"`` buys no privacy).  With a selector object, leave them ``None``.
    neighbourhood : {"item", "user"}, default "item"
        ``"item"``: Surprise's kNN semantics, the neighbours of ``u`` are
        chosen among the raters of ``i``.  ``"user"``: every user has one
        neighbour set chosen among all other users (the semantics of the
        papers and of the kNN attack); the members who rated ``i`` predict.
        (Item-based, read "item" for "user" and conversely.)
    prediction : {"basic", "means", "zscore", "baseline"}, default "basic"
        Surprise's ``KNNBasic``, ``KNNWithMeans``, ``KNNWithZScore`` or
        ``KNNBaseline`` rule (also as the classes :class:`PrivateKNNWithMeans`,
        :class:`PrivateKNNWithZScore`, :class:`PrivateKNNBaseline`).
    bsl_options : dict, optional
        Surprise's baseline options (``method`` ``"als"`` (default) or
        ``"sgd"``, ``n_epochs``, ``reg_u``, ``reg_i``, ``reg``,
        ``learning_rate``), for ``prediction="baseline"`` and the
        ``pearson_baseline`` similarity; computed by Surprise itself.
    centered : bool, default False
        The papers' mean-centred prediction (with ``prediction="basic"``; either
        neighbourhood); Surprise's is ``prediction="means"``.
    random_state : None, int, RandomState or Generator
        Stored as given; :meth:`fit` draws 128 bits from it, from which the
        randomness of each query (derived from it and the query's ids) and
        of a sketch backend are derived.  ``None`` (default) draws fresh
        entropy at each fit; an int gives **seeded noise**: reproducible, for
        experiments (a refit with the same seed on neighbouring data reuses
        the same noise, which then cancels), so the privacy report records
        every entry void (:data:`dprec.ledger.SEEDED`): for a guarantee, give
        ``None`` or a numpy ``Generator``.
    verbose : bool, default True
        Print progress messages during ``fit`` (as Surprise's kNN algorithms).
    diagnostics : bool, default False
        Add the selector's diagnostics to each prediction's ``details``: the
        realised accuracy ``alpha``, the security ``beta`` and the
        ``partitions`` the neighbours came from.  They are computed from the
        exact similarities and ranks, so they reveal them: off by default,
        and never covered by a privacy claim.
    storage : {"auto", "dense", "blocked"}, default "auto"
        How the fitted model holds the similarities.  ``"dense"``: the whole
        ``n × n`` matrix ``sim`` (Surprise's way).  ``"blocked"`` (cosine, msd,
        pearson and the sketch backends): no ``n × n`` matrix at all; the rows
        a batch of queries needs are computed for it, a block of users at a
        time (:class:`~dprec.similarity.rows.SimilarityRows`), and so is
        ``RS``, or estimated from the users' one sketch release
        (:class:`~dprec.similarity.rows.SketchRows`): memory ``O(block)``
        instead of ``O(n²)``, the same predictions, neighbours and privacy
        accounting bit for bit (integer ratings, code sketches; else up to
        float64 rounding).  ``"auto"`` is ``"dense"`` while one float64
        ``n × n`` matrix stays below :data:`DENSE_SIMILARITY_BYTES` (256 MiB,
        about 5,800 users), else ``"blocked"`` where it applies (on
        MovieLens-shaped data the rows are within about 25% of the whole
        matrix's speed, either way, from a few thousand users on:
        ``benchmarks/bench_scale.py``).
    backend : {"threads", "dask"}, default "threads"
        Where the blocks of similarity rows are computed and reduced.
        ``"threads"``: this machine's cores.  ``"dask"``: as tasks on the
        ``dask.distributed`` client in scope (blocked storage; the fitted
        state is sent to the workers once per call, the rows never leave
        them: each task returns its queries' answers or its users' RS, and
        the accountant is charged here).  The same numbers either way.
    budget : (float, float), optional
        A per-user ``(ε, δ)`` budget for the privacy accountant: a query
        whose answer would take some user past it raises
        :class:`dprec.ledger.BudgetExceededError` (answers already given stay
        valid).  Composed per unit, basic composition of the entries' claims.

    Attributes
    ----------
    sim : ndarray of shape (n_users, n_users), or (n_items, n_items) item-based
        The similarity matrix (as in Surprise's kNN algorithms).  Like the
        trainset, it holds the raw data: publish answers, never the fitted
        object.  Not kept with blocked storage (``storage_ == "blocked"``;
        :meth:`compute_similarities` builds it).
    storage_ : {"dense", "blocked"}
        What ``storage`` resolved to at ``fit``.
    means, sigmas : ndarray
        Each user's (item's, item-based) mean rating and standard deviation
        (Surprise's ``KNNWithMeans.means`` and ``KNNWithZScore.sigmas``).
    bu, bi : ndarray or None
        The user and item baselines (``prediction="baseline"`` or
        ``pearson_baseline``), as Surprise's ``compute_baselines`` returns them.
    sensitivity_ : ndarray of shape (n_users,) or None
        Each user's recommendation-aware sensitivity ``RS(u)`` (the private
        selectors' score sensitivity), computed on the raw data; ``None`` for
        selectors that do not use it.
    sketch_release_ : SketchRelease or None
        What the users released through a sketch backend (its privacy entry
        and who released), ``None`` for the exact similarities.

    Examples
    --------
    >>> from surprise.model_selection import cross_validate
    >>> from dprec import PrivateKNN, datasets
    >>> data = datasets.synthetic(200, 300, 6000, random_state=0)
    >>> algo = PrivateKNN(k=20, sim_options={"name": "cosine"})
    >>> res = cross_validate(algo, data, measures=["rmse"], cv=3)
    """

    def __init__(self, k: int = 40, min_k: int = 1, sim_options: Mapping | None = None, *,
                 selector: str | Selector = "topk", epsilon: float | None = None,
                 p: float | None = None, alpha: float | None = None, rho: float | None = None,
                 floor: float | None = None, neighbourhood: str = "item",
                 centered: bool = False, random_state: RandomStateLike = None,
                 verbose: bool = True, diagnostics: bool = False,
                 budget: tuple[float, float] | None = None, prediction: str = "basic",
                 bsl_options: Mapping | None = None, storage: str = "auto",
                 backend: str = "threads", fallback: str = "global_mean",
                 neighbour_shrinkage: float = 0.0) -> None:
        AlgoBase.__init__(self)  # with no options: Surprise's would add keys to the caller's
        self.sim_options = {} if sim_options is None else sim_options
        self.bsl_options = {} if bsl_options is None else bsl_options
        self.k, self.min_k = k, min_k
        self.selector, self.epsilon, self.p, self.alpha, self.rho, self.floor = (
            selector, epsilon, p, alpha, rho, floor)
        self.neighbourhood, self.centered, self.prediction = neighbourhood, centered, prediction
        self.random_state, self.verbose, self.diagnostics = random_state, verbose, diagnostics
        self.budget, self.storage, self.backend = budget, storage, backend
        self.fallback, self.neighbour_shrinkage = fallback, neighbour_shrinkage

    def check_params(self) -> PrivateKNN:
        """Validate the parameters (as ``fit`` does first) and set what they resolve to:
        ``sim_options_``, ``bsl_options_`` (validated copies), ``selector_`` (the
        :class:`~dprec.selectors.Selector` object), ``neighbourhood_``, ``prediction_``,
        ``fallback_``, ``backend_`` (lower-cased) and ``neighbour_shrinkage_`` (a float).
        Returns ``self``.

        Raises
        ------
        ValueError, TypeError
            Naming the first invalid parameter.
        """
        self.sim_options_ = check_sim_options(self.sim_options)
        self.bsl_options_ = _check_bsl_options(self.bsl_options)
        check_int(self.k, "k", minimum=1)
        check_int(self.min_k, "min_k", minimum=0)
        self.selector_ = _make_selector(self.selector, epsilon=self.epsilon, p=self.p,
                                        alpha=self.alpha, rho=self.rho, floor=self.floor)
        self.selector_.check_k(self.k)
        self.neighbourhood_ = check_choice(self.neighbourhood, "neighbourhood", NEIGHBOURHOODS)
        check_bool(self.centered, "centered")
        self.prediction_ = check_choice(self.prediction, "prediction", PREDICTIONS)
        self.fallback_ = check_choice(self.fallback, "fallback", FALLBACKS)
        self.neighbour_shrinkage_ = check_real(self.neighbour_shrinkage, "neighbour_shrinkage",
                                               low=0.0, allow_inf=True)
        if self.centered and self.prediction_ != "basic":
            raise ValueError("centered=True (the papers' rule) needs prediction='basic'; "
                             "Surprise's mean-centred rule is prediction='means'")
        validate_random_state(self.random_state)
        check_bool(self.verbose, "verbose")
        check_bool(self.diagnostics, "diagnostics")
        if self.budget is not None:
            check_budget(self.budget)
        storage = check_choice(self.storage, "storage", STORAGES)
        backend = self.backend_ = check_choice(self.backend, "backend", BACKENDS)
        blocked = "storage='blocked'" if storage == "blocked" else (
            "backend='dask' (which distributes blocked similarities)" if backend == "dask"
            else None)
        if blocked and self.sim_options_["name"] not in BLOCKED_SIMILARITIES:
            raise ValueError(f"{blocked} is for the similarities {BLOCKED_SIMILARITIES}, "
                             f"not {self.sim_options_['name']!r}")
        if backend == "dask" and storage == "dense":
            raise ValueError("backend='dask' distributes blocked similarities; "
                             "storage='dense' keeps the whole matrix here")
        return self

    # ------------------------------------------------------------------ fit
    def fit(self, trainset):
        """Compute the similarities (and spend any privacy budget) on ``trainset``.

        All or nothing: built on a copy of the model, swapped in once its release is
        charged.  A fit that fails (e.g. refused by the ``budget``) leaves the model as it
        was, fitted before or not: nothing of a refused release is readable.
        """
        return self._swap_in(PrivateKNN._fit, trainset)

    def _swap_in(self, fit, *args) -> PrivateKNN:
        """``fit(copy, *args)`` on a shallow copy of the model, whose state replaces this
        one's (in one assignment) only if it returns."""
        shadow = copy.copy(self)
        fit(shadow, *args)
        self.__dict__ = shadow.__dict__
        return self

    def _fit(self, trainset) -> PrivateKNN:
        self.check_params()
        entropy = fit_entropy(self.random_state)
        AlgoBase.fit(self, trainset)
        ratings = RatingArrays.from_trainset(trainset, self.sim_options_["user_based"])
        if self._blocked(ratings.n_users):
            if self.verbose:
                print(f"Computing the {self.sim_options_['name']} similarities by blocks of "
                      "rows as queries need them (storage='blocked', no n × n matrix)...")
            rows, sensitivity, release = similarity_rows(
                self.sim_options_, ratings, self.selector_.needs_sensitivity, self.backend_,
                rating_scale=trainset.rating_scale,
                random_state=derive_generator(entropy, "similarity"))
            return self._fit_precomputed(trainset, ratings, rows, sensitivity, entropy,
                                         release)
        sim, sensitivity, release = self._similarities(ratings, entropy)
        return self._fit_precomputed(trainset, ratings, sim, sensitivity, entropy, release)

    def _blocked(self, n: int) -> bool:
        """Whether ``storage`` resolves to blocked similarities for ``n`` rows."""
        storage = self.storage.lower()
        return storage == "blocked" or self.backend_ == "dask" or (
            storage == "auto" and 8 * n * n > DENSE_SIMILARITY_BYTES
            and self.sim_options_["name"] in BLOCKED_SIMILARITIES)

    def _map(self, function, blocks: list, threads: bool = True) -> list:
        """``[function(self, block) for block in blocks]``: here (in threads, or in turn
        when ``function`` runs its own), or as tasks on Dask (blocked storage with
        ``backend="dask"``), sent a copy of the model without what stays here: the
        trainset and the accounting, which the caller does with the results."""
        if self._sim is None and self.backend_ == "dask":
            shipped = object.__new__(type(self))
            shipped.__dict__.update({name: value for name, value in self.__dict__.items()
                                     if name not in _LOCAL_STATE})
            return map_on_dask(function, shipped, blocks)
        if threads:
            return map_blocks(partial(function, self), blocks)
        return [function(self, block) for block in blocks]

    @property
    def sim(self) -> np.ndarray:
        """The similarity matrix (dense storage; see the class's attributes)."""
        if getattr(self, "_sim", None) is None:
            raise AttributeError("sim: " + ("this model holds no n × n matrix "
                                            "(storage_='blocked'); compute_similarities() "
                                            "builds it" if hasattr(self, "_sim")
                                            else "the model is not fitted yet: call fit first"))
        return self._sim

    def _similarity_rows(self, rows: np.ndarray) -> np.ndarray:
        """The similarity rows ``rows`` (a new array), from the matrix or computed."""
        return self._sim[rows] if self._sim is not None else self._rows(rows)

    def compute_similarities(self) -> np.ndarray:
        """The similarity matrix of ``sim_options`` on the trainset (Surprise's hook).

        For an exact similarity it is computed afresh.  A sketch backend's
        similarities come from the users' one release made by :meth:`fit`
        (a new release would spend their budget again): a copy of ``sim``, or
        every row estimated from that release with blocked storage.
        """
        if not hasattr(self, "trainset"):
            raise AttributeError(f"this {type(self).__name__} is not fitted yet: call fit first "
                                 "(compute_similarities needs its trainset)")
        if self.sim_options_["name"] not in EXACT_SIMILARITIES:
            self._check_fitted()
            return (self.sim.copy() if self._sim is not None
                    else self._rows(np.arange(self._rows.n_rows)))
        ratings = RatingArrays.from_trainset(self.trainset, self.sim_options_["user_based"])
        return self._similarities(ratings, fit_entropy(self.random_state))[0]

    def default_prediction(self) -> float:
        """The global mean rating, Surprise's fallback for impossible predictions."""
        self._check_fitted()
        return self._ratings.global_mean

    def _similarities(self, ratings: RatingArrays, entropy: bytes):
        """``similarity_matrix`` of ``sim_options`` (baselines computed if it needs them)."""
        name = self.sim_options_["name"]
        residuals = None
        if name == "pearson_baseline":
            mu = ratings.global_mean
            b_rows, b_columns = self._baselines(ratings)
            rows = np.repeat(np.arange(ratings.n_users), np.diff(ratings.matrix.indptr))
            residuals = ratings.matrix.data - (mu + b_columns[ratings.matrix.indices]
                                               + b_rows[rows])
        if self.verbose:
            print(f"Computing the {name} similarity matrix...")
        result = similarity_matrix(
            self.sim_options_, ratings, with_sensitivity=self.selector_.needs_sensitivity,
            rating_scale=self.trainset.rating_scale,
            random_state=derive_generator(entropy, "similarity"), residuals=residuals)
        if self.verbose:
            print("Done computing similarity matrix.")
        return result

    def _baselines(self, ratings: RatingArrays) -> tuple[np.ndarray, np.ndarray]:
        """``(b_x, b_y)``: the baselines ``bu``, ``bi`` as Surprise's ``compute_baselines``
        fits them (cached per fit, ALS once per trainset and options:
        :func:`dprec.baselines.trainset_baselines`; vectorised by
        :func:`dprec.baselines.als_baselines`,
        SGD by Surprise), in the roles of the rows and columns of ``ratings`` (users and
        items, or swapped)."""
        user_based = self.sim_options_["user_based"]
        method = self.bsl_options_.get("method", "als")
        if self.bu is None:
            if self.verbose:
                print(f"Estimating biases using {method}...")
            if method == "als":
                options = (user_based, self.bsl_options_.get("n_epochs", 10),
                           self.bsl_options_.get("reg_u", 15), self.bsl_options_.get("reg_i", 10))

                def fit() -> tuple[np.ndarray, np.ndarray]:
                    matrix = ratings.matrix
                    rows = np.repeat(np.arange(ratings.n_users), np.diff(matrix.indptr))
                    users, items = ((rows, matrix.indices) if user_based
                                    else (matrix.indices, rows))
                    return als_baselines(users, items, matrix.data, self.trainset.n_users,
                                         self.trainset.n_items, ratings.global_mean,
                                         *options[1:])

                self.bu, self.bi = trainset_baselines(self.trainset, options, fit)
            else:   # Surprise's own SGD (it reads the options, validated, from bsl_options)
                self.bu, self.bi = baseline_sgd(self)
        return (self.bu, self.bi) if user_based else (self.bi, self.bu)

    def fit_precomputed(self, trainset, sim: np.ndarray, sensitivity: np.ndarray | None = None,
                        release: SketchRelease | None = None) -> PrivateKNN:
        """Fit with a similarity matrix computed elsewhere (e.g. extended incrementally).

        For simulations that refit on slightly changed data, such as the β-kNN
        attack adding fake users: the caller supplies ``sim`` (n_users ×
        n_users, inner ids of ``trainset``) and, for the private selectors,
        each user's sensitivity ``RS`` — they must equal what :meth:`fit`
        would compute.  For a sketch backend, ``release`` is what the users
        released (the sketches behind ``sim``), which the accountant records;
        without it only the exact similarities are accepted (a sketch backend
        spends its budget inside :meth:`fit`).  All or nothing, as :meth:`fit`.
        """
        return self._swap_in(PrivateKNN._fit_given, trainset, sim, sensitivity, release)

    def _fit_given(self, trainset, sim, sensitivity, release) -> PrivateKNN:
        self.check_params()
        if self.sim_options_["name"] not in EXACT_SIMILARITIES and release is None:
            raise ValueError("fit_precomputed is for the exact similarities; "
                             f"{self.sim_options_['name']!r} must be fitted with fit() "
                             "or given the sketches' release")
        AlgoBase.fit(self, trainset)
        ratings = RatingArrays.from_trainset(trainset, self.sim_options_["user_based"])
        n = ratings.n_users
        sim = np.asarray(sim, dtype=np.float64)
        if sim.shape != (n, n):
            raise ValueError(f"sim must have shape ({n}, {n}), got {sim.shape}")
        if self.selector_.needs_sensitivity and (sensitivity is None or len(sensitivity) != n):
            raise ValueError(f"sensitivity (one RS per user, {n}) is required by the "
                             f"{self.selector_.name} selector")
        if not np.isfinite(sim).all():
            raise ValueError("sim must be finite (no NaN or infinity)")
        if sensitivity is not None:
            sensitivity = np.asarray(sensitivity, dtype=np.float64)
            if not (np.isfinite(sensitivity) & (sensitivity > 0)).all():
                raise ValueError("sensitivity must be finite and > 0 (each user's RS)")
        return self._fit_precomputed(trainset, ratings, sim, sensitivity,
                                     fit_entropy(self.random_state), release)

    def _fit_precomputed(self, trainset, ratings,
                         sim: np.ndarray | SimilarityRows | SketchRows,
                         sensitivity, entropy: bytes,
                         release: SketchRelease | None = None) -> PrivateKNN:
        """The fit once the similarities are known (the matrix, or its rows on demand);
        ``release`` is what the users released through a sketch backend (``None`` for
        exact similarities)."""
        if getattr(self, "trainset", None) is not trainset:
            AlgoBase.fit(self, trainset)
        self._seed = derive_seed(entropy, "queries")
        blocked = isinstance(sim, SimilarityRows | SketchRows)
        self.storage_ = "blocked" if blocked else "dense"
        self._sim, self._rows = (None, sim) if blocked else (sim, None)
        self._ratings, self.sensitivity_ = ratings, sensitivity
        self.means, self.sigmas = ratings.user_means(), ratings.user_sigmas()
        self._rules: dict[tuple, _Rule] = {}
        self._rule_ = self._rule((self.prediction_, self.fallback_, self.neighbour_shrinkage_))
        self._selections = _SelectionLog()
        self._answered: set[int] = set()
        self._neighbour_sets: _Chosen | None = None     # chosen once per user, then kept
        self._has_neighbour_set = np.zeros(ratings.n_users, dtype=bool)
        self.sketch_release_ = release
        self._accountant = self._new_accountant(trainset, release)
        return self

    def _new_accountant(self, trainset, release: SketchRelease | None) -> PrivacyAccountant:
        """Register what the model may release and charge the sketches' one release."""
        name = self.sim_options_["name"]
        model = (f"PrivateKNN(selector={self.selector_.name!r}, similarity {name!r}, "
                 f"{self.neighbourhood_} neighbourhood, k={self.k})")
        accountant = PrivacyAccountant(raw_ids(trainset), budget=self.budget, model=model,
                                       seeded=is_seeded(self.random_state))
        similarity = None
        if release is not None and release.entry.epsilon < np.inf:
            similarity = release.charge(accountant)
        entries = self._selector_privacy() if self.sim_options_["user_based"] else []
        self._selector_entries = [(accountant.register(entry), entry.applies_to)
                                  for entry in entries]
        selector = [index for index, _ in self._selector_entries]
        weighed = [selector[n] for n in self.selector_.weight_entries(entries)]
        if not self.sim_options_["user_based"]:
            for output in ("neighbour lists", _WEIGHTS):
                accountant.declare_output(output, gap=_ITEM_BASED)
        elif self.neighbourhood_ == "item":
            accountant.declare_output("neighbour lists", selector, _ITEM_CANDIDATES)
            accountant.declare_output(_WEIGHTS, weighed, _ITEM_CANDIDATES)
        elif similarity is not None:   # post-processing of the sketches, weights included
            accountant.declare_output("neighbour lists", [similarity], _INNER_IDS)
            accountant.declare_output(_WEIGHTS, [similarity])
        else:
            accountant.declare_output("neighbour lists, as raw ids", selector,
                                      None if selector else _EXACT_NEIGHBOURS)
            accountant.declare_output(_INNER_LISTS, gap=_INNER_ORDER)
            accountant.declare_output(_WEIGHTS, weighed, None if weighed else _EXACT_WEIGHTS)
        accountant.declare_output("predictions and details", gap=_RAW_RATINGS)
        accountant.declare_output("diagnostics (details with diagnostics=True, "
                                  "selection_summary())", gap=_DIAGNOSTICS)
        accountant.notes.append(_OWN_QUERIES)
        return accountant

    def _selector_privacy(self) -> list[LedgerEntry]:
        """The selector's entries, with what a guarantee assumes of the model checked: a
        score range at least the similarity's, a similarity of each pair's own ratings
        and candidates fixed in advance (else the entry is void)."""
        entries = self.selector_.privacy(self.k, self.sensitivity_)
        score_range = getattr(self.selector_, "score_range", None)
        name = self.sim_options_["name"]
        if score_range is not None:
            needed = (SKETCH_BACKENDS[name].score_range if name in SKETCH_BACKENDS
                      else change_bound(name, np.array(self.trainset.rating_scale, float)))
            if score_range < needed:
                raise ValueError(f"the selector's score_range {score_range:g} is below the "
                                 f"range width {needed:g} of the similarity {name!r}")
        reason = (_NOT_PAIRWISE if name == "pearson_baseline"
                  else _ITEM_CANDIDATES if self.neighbourhood_ == "item" else None)
        if reason is None:
            return entries
        return [replace(e, status=Status.VOID, note=reason) if e.status is Status.HOLDS else e
                for e in entries]

    def neighbours(self, users=None, items=None) -> np.ndarray:
        """Deprecated: the neighbours' ids of :meth:`kneighbors` (``kneighbors(...)[0]``)."""
        warnings.warn("PrivateKNN.neighbours is deprecated; use kneighbors(users, items)[0]",
                      DeprecationWarning, stacklevel=2)
        return self.kneighbors(users, items)[0]

    def kneighbors(self, users=None, items=None) -> tuple[np.ndarray, np.ndarray]:
        """The neighbours the model uses and their weights, through the selector.

        The neighbours are inner ids (``-1`` for empty slots): user ids, or
        item ids item-based; the weights are what the prediction rule weighs
        them by (the similarities, or the selector's weights), 0 for empty
        slots.  The same draws as the predictions, charged to the accountant
        as they are.

        A selector's entries cover the ids only: the weights are the report's output
        ``"neighbour weights"``, covered where a mechanism made them (a sketch release,
        PNCF's Laplace noise), else declared not covered (the exact similarities, for
        every other selector).  The ids are inner ids, which follow the order of the
        data (one removal renumbers them; the report's output ``"neighbours' inner ids"``
        says so): the selector's entries cover the lists as raw ids.  Publish
        ``trainset.to_raw_uid`` of each id of ``[0]``, and nothing else, to stay within
        the selector's claim.

        Parameters
        ----------
        users : array of inner user ids
        items : array of inner item ids
            With ``neighbourhood="item"`` both, one item per user (the
            neighbours of ``u`` for item ``i`` are chosen among the raters of
            ``i``); with ``neighbourhood="user"`` only ``users`` (``items``
            item-based): one neighbour set each.

        Returns
        -------
        neighbours : ndarray of int64, shape (n_queries, k)
        weights : ndarray of float64, shape (n_queries, k)
        """
        self._check_fitted()
        user_based = self.sim_options_["user_based"]
        given = {name: _check_ids(ids, name, n) for name, ids, n in
                 (("users", users, self.trainset.n_users), ("items", items, self.trainset.n_items))
                 if ids is not None}
        if self.neighbourhood_ == "user":
            name = "users" if user_based else "items"
            if name not in given:
                raise ValueError(f"{name} is required with neighbourhood='user'"
                                 + ("" if user_based else " item-based"))
            chosen = self._user_neighbours(given[name])
            return chosen.columns, chosen.weights
        if len(given) < 2:
            raise ValueError("users and items are both required with neighbourhood='item'")
        if len(given["items"]) != len(given["users"]):
            raise ValueError(f"items must have one id per user ({len(given['users'])}), got "
                             f"{len(given['items'])}")
        batch = self._estimate_item_neighbourhood(*self._switch(given["users"], given["items"]),
                                                  [self._rule_])
        return batch.neighbours[batch.row], batch.chosen.weights[batch.row]

    def get_neighbors(self, iid: int, k: int) -> list[int]:
        """The ``k`` neighbours of user (item, item-based) ``iid``, as Surprise's
        ``AlgoBase.get_neighbors`` returns them (inner ids), through the selector.

        With top-k: the ``k`` most similar others, ties by inner id, as
        Surprise.  With a private selector, ``k`` must be the model's ``k`` (its
        privacy entries are for that ``k``) and the answer is the user's
        neighbour set of ``neighbourhood="user"``, drawn and charged as such.  Inner ids
        follow the data's order: publish the raw ids (as :meth:`kneighbors` says).
        """
        self._check_fitted()
        n = self._ratings.n_users
        iid = check_int(iid, "iid", minimum=0, maximum=n - 1)
        k = check_int(k, "k", minimum=1)
        if isinstance(self.selector_, TopK):
            sims = self._similarity_rows(np.array([iid]))[0]
            sims[iid] = -np.inf
            order, _ = stable_descending_order(sims[None, :], min(k, n - 1))
            return order[0, :min(k, n - 1)].tolist()
        if k != self.k:
            raise ValueError(f"k must be the model's k={self.k} with the {self.selector_.name} "
                             f"selector (its privacy entries are for that k), got {k}")
        columns = self._user_neighbours(np.array([iid])).columns[0]
        return columns[columns >= 0].tolist()

    def predict(self, uid, iid, r_ui=None, clip=True, verbose=False) -> Prediction:
        """Surprise's ``predict`` (raw ids), after checking the model is fitted."""
        self._check_fitted()
        return AlgoBase.predict(self, uid, iid, r_ui, clip, verbose)

    def recommend(self, uid, n: int = 10, exclude_rated: bool = True) -> list[tuple]:
        """The top-``n`` items for raw user id ``uid``: ``[(raw iid, est), ...]``, best
        first (see :func:`dprec.topn.recommend_batch`; charged as ``n_items`` queries)."""
        self._check_fitted()
        top = recommend_batch(self, [uid], n, exclude_rated)
        return list(zip(top["iid"].tolist(), top["est"].tolist()))

    def recommend_batch(self, uids, n: int = 10, exclude_rated: bool = True):
        """Top-``n`` lists of many users at once, a DataFrame (``uid``, ``rank``,
        ``iid``, ``est``): :func:`dprec.topn.recommend_batch`."""
        self._check_fitted()
        return recommend_batch(self, uids, n, exclude_rated)

    def estimate_arrays(self, users, items, with_neighbours: bool = False) -> tuple:
        """Estimates for arrays of inner ids, as :meth:`test` computes them.

        Parameters
        ----------
        users, items : 1-D arrays of inner ids, of the same length
        with_neighbours : bool, default False
            Also return each query's neighbours (as :meth:`kneighbors`).

        Returns
        -------
        est : ndarray of float64
            Clipped to the rating scale; the global mean where impossible.
        possible : ndarray of bool
            False where the prediction was impossible (``was_impossible``).
        neighbours : ndarray of int64, shape (len(users), k), with ``with_neighbours``
        """
        self._check_fitted()
        [(est, possible)], chosen = self._estimate_rules(users, items, [self._rule_],
                                                         with_neighbours)
        return (est, possible, chosen[0]) if with_neighbours else (est, possible)

    def estimate_rules(self, users, items, rules: Sequence[Mapping],
                       with_neighbours: bool = False) -> list[tuple] | tuple[list, tuple]:
        """The estimates of :meth:`estimate_arrays` under several prediction rules, from
        one selection of neighbours.

        The neighbours a model chooses do not depend on :data:`RULE_PARAMETERS`
        (``prediction``, ``fallback``, ``neighbour_shrinkage``): models that differ
        only in them, fitted on the same data with the same ``random_state``, make
        the same selections.  Each rule's estimates equal those of such a model
        (``tests/test_knn.py``), for the cost of one selection.  Charged to the
        accountant once, as one :meth:`estimate_arrays` call (the neighbour
        lists released are the same; predictions are covered by no claim).

        Parameters
        ----------
        users, items : 1-D arrays of inner ids, of the same length
        rules : list of dict
            Each sets some of :data:`RULE_PARAMETERS` (the model's value for the
            others), e.g. ``[{"prediction": "basic"}, {"prediction": "baseline",
            "neighbour_shrinkage": 10}]``.
        with_neighbours : bool, default False
            Also return each query's neighbours and their weights, as
            :meth:`kneighbors` returns them (the same draws).

        Returns
        -------
        list of (est, possible)
            One pair per rule, as :meth:`estimate_arrays` returns them.
        (neighbours, weights) : ndarrays of shape (len(users), k), with ``with_neighbours``
        """
        self._check_fitted()
        answers, neighbours = self._estimate_rules(
            users, items, [self._rule(key) for key in self._rule_keys(rules)], with_neighbours)
        return (answers, neighbours) if with_neighbours else answers

    def _estimate_rules(self, users, items, rules: list[_Rule],
                        with_neighbours: bool) -> tuple[list, tuple | None]:
        """``[(est, possible) per rule]`` and, with ``with_neighbours``, the queries'
        ``(neighbours, weights)`` (else None), for arrays of inner ids."""
        self._check_fitted()
        users = _check_ids(users, "users", self.trainset.n_users)
        items = _check_ids(items, "items", self.trainset.n_items)
        if len(items) != len(users):
            raise ValueError(f"items must have one id per user ({len(users)}), got {len(items)}")
        batch = self._estimate_batch(*self._switch(users, items), rules)
        low, high = self.trainset.rating_scale
        out = []
        for rule, est in zip(rules, batch.est):
            possible = self._possible(rule, batch.actual_k)
            out.append((np.where(possible, np.clip(est, low, high), self.default_prediction()),
                        possible))
        return out, ((batch.neighbours[batch.row], batch.chosen.weights[batch.row])
                     if with_neighbours else None)

    def privacy_report(self) -> PrivacyAccountant:
        """The privacy accountant of the fitted model: what each mechanism claims, per
        user, composed over everything answered so far (``print`` it to read it)."""
        self._check_fitted()
        return self._accountant

    def selection_summary(self) -> dict:
        """Accuracy α and security β of the neighbour selections made so far.

        Returns
        -------
        dict
            ``selections`` (how many), ``alpha`` (mean realised
            ``Σ sim(chosen) / Σ sim(top-k)``, similarities clipped at 0),
            ``beta`` (mean of the selector's security β), ``max_partition``
            (the furthest partition of ``k`` any neighbour came from) and
            ``mean_max_partition`` (its mean per selection).
        """
        self._check_fitted()
        return self._selections.summary()

    # ------------------------------------------------------------- predict
    def estimate(self, u, i):
        """Estimate one rating from inner ids (same numbers as :meth:`test`)."""
        self._check_fitted()
        known_u, known_i = self.trainset.knows_user(u), self.trainset.knows_item(i)
        if not (known_u and known_i):
            if self.prediction_ == "baseline":  # KNNBaseline: the baseline of what is known
                return float(self._unknown_baseline(np.array([u if known_u else -1]),
                                                    np.array([i if known_i else -1]))[0])
            raise PredictionImpossible(UNKNOWN)
        batch = self._estimate_batch(*self._switch(np.array([u]), np.array([i])))
        if not self._possible(self._rule_, batch.actual_k)[0]:
            raise PredictionImpossible(_TOO_FEW)
        return float(batch.est[0, 0]), next(self._details(batch))

    def test(self, testset, verbose: bool = False) -> list[Prediction]:
        """Predict a whole testset at once; equal to ``predict`` one by one."""
        self._check_fitted()
        if len(testset) == 0:
            return []
        uids, iids, r_uis, users, items = inner_ids(self.trainset, testset)
        known = np.flatnonzero((users >= 0) & (items >= 0))
        batch = self._estimate_batch(*self._switch(users[known], items[known]))
        position = np.full(len(testset), -1)
        position[known] = np.arange(len(known))
        possible = np.zeros(len(testset), dtype=bool)
        possible[known] = self._possible(self._rule_, batch.actual_k)
        est = np.full(len(testset), self.default_prediction(), dtype=np.float64)
        est[possible] = batch.est[0, position[possible]]
        baseline = self.prediction_ == "baseline"
        if baseline:  # KNNBaseline answers unknown users and items with their baseline
            unknown = position < 0
            est[unknown] = self._unknown_baseline(users[unknown], items[unknown])
        known_details = self._details(batch, was_impossible=False)  # one per known query
        if len(known) == len(testset) and possible.all():
            return predictions(self.trainset, uids, iids, r_uis, est, known_details, verbose)

        def details():   # built in predictions' pause of the collector, placed in C loops
            placed = np.empty(len(testset), dtype=object)
            placed[known] = list(known_details)
            impossible = np.flatnonzero(~possible)
            placed[impossible] = [
                {"was_impossible": False} if baseline else
                {"was_impossible": True, "reason": UNKNOWN if j < 0 else _TOO_FEW}
                for j in position[impossible].tolist()]
            yield from placed.tolist()

        return predictions(self.trainset, uids, iids, r_uis, est, details(), verbose)

    # ----------------------------------------------------------- internals
    def _switch(self, users: np.ndarray, items: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(x, y)`` in Surprise's roles: ``(users, items)``, swapped item-based."""
        return (users, items) if self.sim_options_["user_based"] else (items, users)

    def _rule(self, key: tuple[str, str, float]) -> _Rule:
        """The rule ``(prediction, fallback, shrinkage)`` on the fitted ratings (built once
        per fit, the baselines fitted if it needs them): what each stored rating ``r_xy``
        contributes to the weighted sum, ``r`` (basic), ``r − μ_x`` (means, centred),
        ``(r − μ_x) / σ_x`` (zscore), ``r − (μ + b_x + b_y)`` (baseline)."""
        if key in self._rules:
            return self._rules[key]
        shared = next((other for other in self._rules.values() if other.prediction == key[0]),
                      None)
        if shared is not None:   # the deviations depend on the prediction alone
            self._rules[key] = replace(shared, fallback=key[1], shrinkage=key[2])
            return self._rules[key]
        ratings = self._ratings
        if key[0] == "baseline":
            self.bx, self.by = self._baselines(ratings)
        matrix = ratings.matrix
        by_row = (np.repeat(np.arange(ratings.n_users), np.diff(matrix.indptr)), matrix.indices,
                  matrix.data)
        by_column = (ratings.item_users, np.repeat(np.arange(ratings.n_items),
                                                   np.diff(ratings.item_ptr)),
                     ratings.item_ratings)
        rule = "means" if self.centered else key[0]
        out = []
        for x, y, r in (by_row, by_column):
            if rule == "basic":
                out.append(r)
            elif rule == "baseline":
                out.append(r - (ratings.global_mean + self.bx[x] + self.by[y]))
            elif rule == "zscore":
                out.append((r - self.means[x]) / self.sigmas[x])
            else:
                out.append(r - self.means[x])
        deviations = sp.csc_matrix(sp.csr_matrix((out[0], matrix.indices, matrix.indptr),
                                                 shape=matrix.shape))
        self._rules[key] = _Rule(*key, by_column=out[1], matrix=deviations)
        return self._rules[key]

    def _rule_keys(self, rules: Sequence[Mapping]) -> list[tuple[str, str, float]]:
        """``rules`` (dicts of :data:`RULE_PARAMETERS`, the model's own values where
        absent) as validated ``(prediction, fallback, shrinkage)`` keys."""
        if isinstance(rules, (Mapping, str)) or not isinstance(rules, Sequence) or not rules:
            raise TypeError("rules must be a non-empty list of dicts of "
                            f"{RULE_PARAMETERS}, got {type(rules).__name__}")
        keys = []
        for rule in rules:
            if not isinstance(rule, Mapping):
                raise TypeError(f"rules must hold dicts, got {type(rule).__name__}")
            unknown = set(rule) - set(RULE_PARAMETERS)
            if unknown:
                raise ValueError(f"rules: unknown parameter(s) {sorted(unknown)}; a rule sets "
                                 f"{RULE_PARAMETERS} (the selection is the model's)")
            prediction = check_choice(rule.get("prediction", self.prediction_),
                                      "rules[]['prediction']", PREDICTIONS)
            if self.centered and prediction != "basic":
                raise ValueError("rules: a centered=True model has the basic rule only")
            keys.append((prediction,
                         check_choice(rule.get("fallback", self.fallback_),
                                      "rules[]['fallback']", FALLBACKS),
                         check_real(rule.get("neighbour_shrinkage", self.neighbour_shrinkage_),
                                    "rules[]['neighbour_shrinkage']", low=0.0,
                                    allow_inf=True)))
        return keys

    def _possible(self, rule: _Rule, actual_k: np.ndarray) -> np.ndarray:
        """Which known queries have an estimate: ``basic`` needs ``min_k`` (at least 1)
        contributing neighbours unless it falls back to the user's mean, the other rules
        fall back to a mean or baseline."""
        if rule.prediction == "basic" and rule.fallback == "global_mean":
            return actual_k >= max(self.min_k, 1)
        return np.ones(len(actual_k), dtype=bool)

    def _unknown_baseline(self, users: np.ndarray, items: np.ndarray) -> np.ndarray:
        """KNNBaseline's estimate where the user or item is unknown (inner id ``-1``):
        ``μ + b_u + b_i`` over the known ones."""
        est = np.full(len(users), self._ratings.global_mean)
        est += np.where(users >= 0, self.bu[np.maximum(users, 0)], 0.0)
        return est + np.where(items >= 0, self.bi[np.maximum(items, 0)], 0.0)

    def _finish(self, rule: _Rule, xs: np.ndarray, ys: np.ndarray, shift: np.ndarray,
                actual_k: np.ndarray) -> np.ndarray:
        """The rule's estimates from the weighted mean ``shift`` of its deviations
        (:meth:`_rule`): the mean itself (basic), or an offset plus it, dropped where
        fewer than ``min_k`` neighbours contribute (Surprise's fallback; the basic rule's
        is ``fallback``); the neighbours' term weighted ``n / (n + λ)``, ``λ`` the rule's
        shrinkage."""
        few = actual_k < max(self.min_k, 1)
        weight = None
        if rule.shrinkage > 0:
            weight = (np.zeros(len(actual_k)) if np.isinf(rule.shrinkage)
                      else actual_k / (actual_k + rule.shrinkage))
        if rule.prediction == "basic" and not self.centered:
            if weight is not None:   # towards the user's mean
                shift = self.means[xs] + weight * (shift - self.means[xs])
            if rule.fallback == "user_mean":
                return np.where(few, self.means[xs], shift)
            return shift
        if weight is not None:
            shift = weight * shift
        if self.centered:
            if rule.fallback == "user_mean":
                shift = np.where(few, 0.0, shift)
            return self.means[xs] + shift
        shift = np.where(actual_k < self.min_k, 0.0, shift)
        if rule.prediction == "baseline":
            return self._ratings.global_mean + self.bx[xs] + self.by[ys] + shift
        if rule.prediction == "zscore":
            shift = shift * self.sigmas[xs]
        return self.means[xs] + shift

    def _check_fitted(self) -> None:
        if not hasattr(self, "_sim"):
            raise AttributeError(f"this {type(self).__name__} is not fitted yet: call fit first")

    def _details(self, batch: _Batch, **extra) -> Iterator[dict]:
        """The ``details`` of every query, in order: ``actual_k`` as KNNBasic, plus, with
        ``diagnostics=True``, α, β and the chosen neighbours' partitions for every
        selector but top-k (and ``extra``).  Lazy, so that :func:`predictions` builds
        them."""
        if isinstance(self.selector_, TopK) or not self.diagnostics:
            return ({"actual_k": n, **extra} for n in batch.actual_k.tolist())
        chosen = batch.chosen.take(batch.row)
        return ({"actual_k": n, "alpha": a, "beta": b, "partitions": [p for p in row if p],
                 **extra}
                for n, a, b, row in zip(batch.actual_k.tolist(), chosen.alpha.tolist(),
                                        chosen.beta.tolist(), chosen.partitions.tolist()))

    def _estimate_batch(self, users: np.ndarray, items: np.ndarray,
                        rules: list[_Rule] | None = None) -> _Batch:
        """Estimates under ``rules`` (default: the model's own), and the selections behind
        them, for known inner ids in the ``(x, y)`` roles (:meth:`_switch`)."""
        rules = [self._rule_] if rules is None else rules
        if not len(users):
            return _Batch.empty(self.k, len(rules))
        if self.neighbourhood_ == "item":
            return self._estimate_item_neighbourhood(users, items, rules)
        return self._estimate_user_neighbourhood(users, items, rules)

    def _estimate_item_neighbourhood(self, users, items, rules: list[_Rule]) -> _Batch:
        """KNNBasic: neighbours of ``u`` among the raters of ``i``, answered by groups of
        queries (:meth:`_answer_queries`), here or on Dask, and charged here."""
        ratings = self._ratings
        keys = tuple(rule.key for rule in rules)   # what a task is sent: the model has them
        groups = self._query_groups(users)
        parts = self._map(PrivateKNN._answer_queries,
                          [(users[g], items[g], keys) for g in groups], threads=False)
        in_blocks = np.concatenate([group[order] for group, (order, _) in zip(groups, parts)])
        answers = [answer for _, group_answers in parts for answer in group_answers]
        # the selections stay in block order (``row`` maps each query to its own)
        row = np.empty(len(users), dtype=np.int64)
        row[in_blocks] = np.arange(len(users))
        est = np.concatenate([answer[1] for answer in answers], axis=1)
        actual_k = np.concatenate([answer[2] for answer in answers])
        users, items = users[in_blocks], items[in_blocks]
        batch = _Batch(est[:, row], actual_k[row], row, [answer[0] for answer in answers],
                       ratings.item_ptr[items], ratings.item_users)
        if self._selector_entries:   # else the neighbours' ids are built only if read
            self._charge(users * ratings.n_items + items, users, items, batch.neighbours)
        for answer in answers:
            self._selections.add(answer[0])
        return batch

    def _query_groups(self, users: np.ndarray) -> list[np.ndarray]:
        """The queries (positions) in groups whose users' similarity rows are computed
        together: all of them with the whole matrix, else blocks of users."""
        if self._sim is not None:
            return [np.arange(len(users))]
        unique, rows = np.unique(users, return_inverse=True)
        by_user = np.argsort(rows, kind="stable")
        bounds = np.searchsorted(rows[by_user], np.arange(0, len(unique),
                                                          self._rows.block_size() *
                                                          thread_count()))
        return np.split(by_user, bounds[1:])

    def _answer_queries(self, queries: tuple) -> tuple[np.ndarray, list]:
        """Item-neighbourhood answers to ``queries = (users, items, rule keys)``: their
        order and one ``(chosen, est, actual_k)`` per block of that order (``est`` one
        row per rule; the chosen columns are positions among the item's raters).

        With the compiled kernels and a selector that reads only a sorted
        prefix (top-k), :func:`dprec._kernels.stable_top` finds each query's
        prefix from its raters' similarities directly, the queries in blocks
        of about :data:`_KERNEL_CELLS` candidates ordered by similarity row.
        Otherwise queries are sorted by their item's number of raters and cut
        into blocks of similar length, each padded to a rectangle (padding has
        similarity ``-inf``), so a whole block is one set of array operations.
        Blocks run in threads (:func:`dprec._threads.map_blocks`), their
        randomness keyed by the queries, so the answer does not depend on it.
        With blocked storage the rows of the queries' users are computed first.
        """
        users, items, keys = queries
        rules = [self._rules[key] for key in keys]
        ratings = self._ratings
        if self._sim is not None:
            sim, rows = self._sim, users
        else:
            unique, rows = np.unique(users, return_inverse=True)
            sim = np.concatenate(map_blocks(self._rows, np.array_split(
                unique, min(thread_count(), len(unique)))))
        starts = ratings.item_ptr[items]
        lengths = ratings.item_ptr[items + 1] - starts

        prefix = self.selector_.sorted_prefix(self.k)
        compiled = (kernels.enabled() and prefix is not None
                    and not self.selector_.reads_tail)

        def answer(part):   # a block of queries and its rows in the kept prefixes
            block, placed = part
            if compiled:   # the prefix straight from the raters' similarities
                sorted_ = kernels.stable_top(sim, rows[block], starts[block], lengths[block],
                                             ratings.item_users, prefix,
                                             None if kept is None else
                                             (kept[0][placed], kept[1][placed]))
                chosen = self._select(None, lengths[block], users[block],
                                      (users[block], items[block]), sorted_)
            else:
                width = max(int(lengths[block].max()), 1)  # a padding column if no raters
                offsets = np.arange(width)
                valid = offsets[None, :] < lengths[block][:, None]
                cells = np.where(valid, starts[block][:, None] + offsets[None, :], 0)
                flat = rows[block][:, None] * ratings.n_users + ratings.item_users[cells]
                sims = np.where(valid, sim.ravel().take(flat), -np.inf)
                chosen = self._select(sims, lengths[block], users[block],
                                      (users[block], items[block]))
            est = np.empty((len(rules), len(block)))
            means = {}   # per deviations (rules with one prediction share them)
            for j, rule in enumerate(rules):
                if id(rule.by_column) not in means:
                    means[id(rule.by_column)] = _weighted_mean(
                        chosen.columns, chosen.weights, starts[block], rule.by_column,
                        self.centered)
                shift, actual_k = means[id(rule.by_column)]
                est[j] = self._finish(rule, users[block], items[block], shift, actual_k)
            return chosen, est, actual_k

        kept = None
        if compiled:
            blocks = _row_blocks(rows, lengths)
            if type(self.selector_) is TopK:   # the prefixes are the choice, kept: one
                kept = (np.empty((len(users), prefix), dtype=np.int64),  # allocation here,
                        np.empty((len(users), prefix)))                   # not per thread
        else:
            by_length = np.argsort(lengths, kind="stable")
            blocks = list(_length_blocks(by_length, lengths[by_length]))
        ends = np.cumsum([len(block) for block in blocks])
        return np.concatenate(blocks), map_blocks(answer, [
            (block, slice(end - len(block), end)) for block, end in zip(blocks, ends)])

    def _estimate_user_neighbourhood(self, users, items, rules: list[_Rule]) -> _Batch:
        """One neighbour set per user; its members who rated ``i`` predict.

        The weighted sums of every (user, item) pair asked are sparse products
        ``W D`` and ``W B`` (``W`` the users' neighbour weights, ``D`` the rule's
        deviations, ``B`` the rating pattern, restricted to the items asked),
        per block of users.
        """
        unique_users, row = np.unique(users, return_inverse=True)
        chosen = self._user_neighbours(unique_users)
        unique_items, column = np.unique(items, return_inverse=True)
        # one deviation matrix per prediction (the rules of one prediction share it)
        slot = {id(rule.matrix): j for j, rule in reversed(list(enumerate(rules)))}
        deviations = {j: rules[j].matrix[:, unique_items] for j in set(slot.values())}
        pattern = pattern_matrix(next(iter(deviations.values())))
        counted = (chosen.columns >= 0) & _counts(chosen.weights, self.centered)
        shift = np.zeros((len(rules), len(users)))
        actual_k = np.zeros(len(users), dtype=np.int64)
        by_row = np.argsort(row, kind="stable")
        bounds = np.searchsorted(row[by_row], np.arange(len(unique_users) + 1))
        for block in _blocks(np.arange(len(unique_users)), len(unique_items)):
            use = counted[block]
            w = chosen.weights[block][use]
            weights = sp.csr_matrix(
                (w, chosen.columns[block][use], np.concatenate([[0], np.cumsum(use.sum(axis=1))])),
                shape=(len(block), self._ratings.n_users))
            numerators = {j: (weights @ matrix).toarray() for j, matrix in deviations.items()}
            weights.data = np.abs(w) if self.centered else w
            denominator = (weights @ pattern).toarray()
            weights.data = np.ones(len(w))
            count = (weights @ pattern).toarray()
            asked = by_row[bounds[block[0]]:bounds[block[-1] + 1]]
            cells = (row[asked] - block[0], column[asked])
            denominator = denominator[cells]
            for j, rule in enumerate(rules):
                shift[j, asked] = safe_divide(numerators[slot[id(rule.matrix)]][cells],
                                              denominator)
            actual_k[asked] = count[cells]
        est = np.array([self._finish(rule, users, items, shift[j], actual_k)
                        for j, rule in enumerate(rules)])
        return _Batch(est, actual_k, row, [chosen])

    def _user_neighbours(self, users: np.ndarray) -> _Chosen:
        """Each user's neighbour set (user ids in ``columns``, ``-1`` for none).

        A set is chosen once per fit, from the user's similarity row, and kept
        (``n · k`` numbers, never the rows): its noise is keyed by the user, so
        choosing it again would give the same set; later calls read it back.
        """
        if not len(users):
            return _Batch.empty(self.k).chosen
        with self._accountant.lock:   # one caller fills the kept sets at a time
            new = np.unique(users[~self._has_neighbour_set[users]])
            if len(new):
                cells = _BLOCK_CELLS if self._sim is not None else ROW_BLOCK_CELLS
                found = _Chosen.concatenate(self._map(
                    PrivateKNN._choose, [new[block] for block in _blocks(
                        np.arange(len(new)), self._ratings.n_users, cells)]))
                if self._neighbour_sets is None:
                    self._neighbour_sets = _Chosen(*(
                        np.zeros((self._ratings.n_users,) + getattr(found, f.name).shape[1:],
                                 getattr(found, f.name).dtype) for f in fields(_Chosen)))
                for f in fields(_Chosen):
                    getattr(self._neighbour_sets, f.name)[new] = getattr(found, f.name)
                self._has_neighbour_set[new] = True
            chosen = self._neighbour_sets.take(users)
        # keyed by u; in the item neighbourhood (get_neighbors) apart from the (u, i) keys
        self._charge(users if self.neighbourhood_ == "user" else -1 - users, users, None,
                     chosen.columns)
        self._selections.add(chosen)
        return chosen

    def _choose(self, rows: np.ndarray) -> _Chosen:
        """The neighbour sets of the users ``rows`` among all other users."""
        sims = self._similarity_rows(rows)
        sims[np.arange(len(rows)), rows] = -np.inf  # a user is not their own neighbour
        return self._select(sims, np.full(len(rows), self._ratings.n_users - 1), rows, (rows,))

    # ----------------------------------------------------------- accounting
    def _charge(self, keys: np.ndarray, users: np.ndarray, items: np.ndarray | None,
                neighbours: np.ndarray) -> None:
        """Charge the selector's entries for the queries not answered before.

        A query is keyed by ``(u, i)`` in the item neighbourhood and by ``u`` in
        the user neighbourhood; its noise is a function of the key, so asking
        it again releases nothing new and is not charged again.  Per new
        query, every candidate other than the querying user is charged the
        ``"candidates"`` entries (the raters of ``i``, or all other users), and
        every chosen neighbour other than the querying user the ``"chosen"``
        ones.  The querying user is not charged: their own answers are shown to
        them only.  All or nothing (the budget is checked first).
        """
        if not self._selector_entries or not len(keys):
            return
        with self._accountant.lock:
            self._charge_new(keys, users, items, neighbours)

    def _charge_new(self, keys, users, items, neighbours) -> None:
        _, first = np.unique(keys, return_index=True)
        first = first[[key not in self._answered for key in keys[first].tolist()]]
        if not len(first):
            return
        n_users = self._ratings.n_users
        asking = users[first]
        own = np.bincount(asking, minlength=n_users)
        if items is None:
            candidates = len(first) - own
        else:
            ratings = self._ratings
            per_item = np.bincount(items[first], minlength=ratings.n_items)
            candidates = np.bincount(ratings.item_users,
                                     weights=np.repeat(per_item, np.diff(ratings.item_ptr)),
                                     minlength=n_users).astype(np.int64)
            _, rated = ratings.lookup(asking, items[first])
            candidates -= np.bincount(asking[rated], minlength=n_users)
        picked = neighbours[first]
        others = (picked >= 0) & (picked != asking[:, None])
        chosen = np.bincount(picked[others], minlength=n_users)
        self._accountant.charge({index: candidates if applies_to == "candidates" else chosen
                                 for index, applies_to in self._selector_entries})
        self._answered.update(keys[first].tolist())

    def _select(self, sims: np.ndarray | None, n_valid: np.ndarray,
                querying_users: np.ndarray, keys: tuple[np.ndarray, ...],
                sorted_: tuple[np.ndarray, np.ndarray] | None = None) -> _Chosen:
        """Sort candidates (stable, descending) and let the selector choose (no side
        effects but on ``sorted_``, which top-k's choice reuses: blocks of queries run in
        threads; the caller logs the selections).

        ``sims`` holds ``n_valid`` finite candidates per row, padding is ``-inf``;
        or ``sorted_`` gives their sorted prefix already (``(order, sorted_sims)``,
        :func:`dprec._kernels.stable_top`, for a selector that reads no tail).
        """
        k = self.k
        if sorted_ is not None and type(self.selector_) is TopK:   # not a subclass's select
            # the sorted prefix is the choice (what the general path below gives top-k)
            # (in place, and the partitions a view: no new n × k arrays)
            (columns, weights), taken = sorted_, sorted_[0] >= 0
            weights[~taken] = 0.0
            return _Chosen(columns=columns, weights=weights, alpha=np.ones(len(n_valid)),
                           beta=np.ones(len(n_valid), dtype=np.int64),
                           partitions=taken.view(np.uint8))
        prefix = self.selector_.sorted_prefix(k)
        order, sorted_sims = (stable_descending_order(sims, prefix,
                                                      keep_tail=self.selector_.reads_tail)
                              if sorted_ is None else sorted_)
        sensitivity = (self.sensitivity_[querying_users]
                       if self.sensitivity_ is not None else None)
        selection = self.selector_.select(sorted_sims, n_valid, k, QueryNoise(self._seed, keys),
                                          sensitivity)
        positions = selection.positions
        taken = positions >= 0
        safe = np.maximum(positions, 0)
        columns = np.where(taken, np.take_along_axis(order, safe, axis=1), -1)
        true_sims = np.where(taken, np.take_along_axis(sorted_sims, safe, axis=1), 0.0)
        weights = true_sims if selection.weights is None else selection.weights
        if isinstance(self.selector_, TopK):
            alpha = np.ones(len(n_valid))
        else:
            top = np.where(np.arange(min(k, sorted_sims.shape[1]))[None, :] < n_valid[:, None],
                           sorted_sims[:, :k], 0.0)
            chosen_sims = -np.sort(-np.maximum(true_sims, 0), axis=1)
            alpha = np.minimum(_ratio(_sequential_sum(chosen_sims),
                                      _sequential_sum(np.maximum(top, 0))), 1.0)
        # a position past the sorted prefix (in the tail) is ranked among all candidates
        tail = self.selector_.reads_tail and prefix is not None
        ranks = _ranks(sims, columns, true_sims, safe, prefix) if tail else safe
        return _Chosen(columns=columns, weights=np.where(taken, weights, 0.0), alpha=alpha,
                       beta=selection.beta, partitions=np.where(taken, ranks // k + 1, 0))


class PrivateKNNWithMeans(PrivateKNN):
    """:class:`PrivateKNN` with ``prediction="means"``: Surprise's ``KNNWithMeans``."""

    def __init__(self, k: int = 40, min_k: int = 1, sim_options: Mapping | None = None,
                 **kwargs) -> None:
        super().__init__(k, min_k, sim_options, prediction="means", **kwargs)


class PrivateKNNWithZScore(PrivateKNN):
    """:class:`PrivateKNN` with ``prediction="zscore"``: Surprise's ``KNNWithZScore``."""

    def __init__(self, k: int = 40, min_k: int = 1, sim_options: Mapping | None = None,
                 **kwargs) -> None:
        super().__init__(k, min_k, sim_options, prediction="zscore", **kwargs)


class PrivateKNNBaseline(PrivateKNN):
    """:class:`PrivateKNN` with ``prediction="baseline"``: Surprise's ``KNNBaseline``
    (``bsl_options`` as Surprise's)."""

    def __init__(self, k: int = 40, min_k: int = 1, sim_options: Mapping | None = None,
                 bsl_options: Mapping | None = None, **kwargs) -> None:
        super().__init__(k, min_k, sim_options, prediction="baseline", bsl_options=bsl_options,
                         **kwargs)


def _check_bsl_options(bsl_options: Mapping | None) -> dict:
    """Validate Surprise's ``bsl_options`` and return a copy (the input is not mutated)."""
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


#: the range of each flat selector parameter, whichever selector uses it
_FLAT_CHECKS = {
    "epsilon": lambda v: check_epsilon(v, "epsilon"),
    "p": lambda v: check_real(v, "p", low=0.0, high=1.0, low_inclusive=False),
    "alpha": lambda v: check_real(v, "alpha", low=0.0, high=1.0, low_inclusive=False),
    "rho": lambda v: check_real(v, "rho", low=0.0, high=1.0, low_inclusive=False,
                                high_inclusive=False),
    "floor": lambda v: check_real(v, "floor", low=0.0, low_inclusive=False),
}


def _check_ids(ids, name: str, n: int) -> np.ndarray:
    """Inner ids as a 1-D int64 array, each in ``0 .. n-1``."""
    arr = np.asarray(ids)
    if arr.dtype.kind not in "iu" or arr.ndim != 1:
        raise TypeError(f"{name} must be a 1-D array of integer inner ids, got "
                        f"{arr.dtype} of shape {arr.shape}")
    if arr.size and (arr.min() < 0 or arr.max() >= n):
        raise ValueError(f"{name} must be inner ids in 0..{n - 1}, got range "
                         f"[{arr.min()}, {arr.max()}]")
    return arr.astype(np.int64)


def _make_selector(selector: str | Selector, **params) -> Selector:
    """A selector object from a name and the flat keyword arguments it uses."""
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
                      UserWarning, stacklevel=3)
    return cls(**{name: value for name, value in given.items() if name in accepted})


def _sequential_sum(values: np.ndarray) -> np.ndarray:
    """Row sums added left to right from 0 (as a loop adds them: a sum of ``-0.0`` is
    ``0.0``), so that trailing zeros (the padding of a wider block) leave them
    bit-identical, unlike numpy's pairwise ``sum``."""
    if values.shape[1] == 0:
        return np.zeros(len(values))
    return np.cumsum(values, axis=1)[:, -1] + 0.0


def _ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """``numerator / denominator``, 1 where the denominator is 0 (nothing to lose)."""
    out = np.ones_like(numerator, dtype=np.float64)
    np.divide(numerator, denominator, out=out, where=denominator > 0)
    return out


def _ranks(sims: np.ndarray, columns: np.ndarray, values: np.ndarray, positions: np.ndarray,
           prefix: int) -> np.ndarray:
    """0-based rank, in the full stable descending order, of each chosen candidate.

    Positions in the sorted prefix are their rank; a candidate from the
    unsorted tail is ranked by counting the candidates before it.
    """
    ranks = positions.copy()
    rows, slots = np.nonzero((positions >= prefix) & (columns >= 0))
    if len(rows):
        row_sims = sims[rows]
        value = values[rows, slots][:, None]
        column = columns[rows, slots][:, None]
        before = (row_sims > value) | ((row_sims == value)
                                       & (np.arange(sims.shape[1])[None, :] < column))
        ranks[rows, slots] = before.sum(axis=1)
    return ranks


def _blocks(rows: np.ndarray, n_candidates: int, cells: int = _BLOCK_CELLS):
    """Split query rows so that one block holds at most ``cells`` cells."""
    size = max(1, cells // max(n_candidates, 1))
    for start in range(0, len(rows), size):
        yield rows[start:start + size]


def _length_blocks(rows: np.ndarray, sorted_lengths: np.ndarray, slack: float = 1.25):
    """Cut rows sorted by length into blocks whose longest row is at most ``slack``
    times the shortest (little padding) and that hold at most ``_BLOCK_CELLS`` cells."""
    start = 0
    while start < len(rows):
        shortest = max(int(sorted_lengths[start]), 1)
        stop = int(np.searchsorted(sorted_lengths, shortest * slack, side="right"))
        stop = min(stop, start + max(1, _BLOCK_CELLS // int(sorted_lengths[stop - 1] or 1)))
        yield rows[start:stop]
        start = stop


def _row_blocks(rows: np.ndarray, lengths: np.ndarray) -> list[np.ndarray]:
    """Queries (positions) for the compiled kernel, which pads nothing: by similarity row
    (its cache reused), cut into blocks of about equal candidate cells, at most
    :data:`_KERNEL_CELLS` each and at least four per thread."""
    order = np.argsort(rows, kind="stable")
    cells = np.cumsum(lengths[order])
    n_blocks = max(-(-int(cells[-1]) // _KERNEL_CELLS), 4 * thread_count())
    return np.split(order, np.searchsorted(cells, np.arange(1, n_blocks)
                                           * (int(cells[-1]) / n_blocks)))


def _at_positions(values: np.ndarray, starts: np.ndarray, positions: np.ndarray,
                  fill) -> np.ndarray:
    """``values[starts[q] + positions[q, j]]`` (a query's candidates from its start),
    ``fill`` where the position is ``-1``."""
    found = positions >= 0
    return np.where(found, values[np.where(found, starts[:, None] + positions, 0)], fill)


def _counts(weights: np.ndarray, centered: bool) -> np.ndarray:
    """Which neighbours count: similarity ``> 0`` (Surprise), ``≠ 0`` centred (the
    papers' rule)."""
    return weights != 0 if centered else weights > 0


def _weighted_mean(positions: np.ndarray, weights: np.ndarray, starts: np.ndarray,
                   values: np.ndarray, centered: bool) -> tuple[np.ndarray, np.ndarray]:
    """Row-wise ``Σ w·x / Σ w`` over the neighbours that count (0 where none), and their
    count: :func:`dprec._kernels.weighted_means` (``x = values[starts + positions]``),
    compiled or in numpy.  Both add one neighbour at a time in row order, as
    Surprise's kNN does (the same numbers bit for bit)."""
    if kernels.enabled():
        return kernels.weighted_means(positions, weights, starts, values, centered)
    use = (positions >= 0) & _counts(weights, centered)
    w = np.where(use, weights, 0.0)
    x = np.where(use, _at_positions(values, starts, positions, 0.0), 0.0)
    denominator = _sequential_sum(np.abs(w) if centered else w)
    return safe_divide(_sequential_sum(w * x), denominator), use.sum(axis=1)
