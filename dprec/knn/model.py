"""`PrivateKNN`: the model, its parameters, `fit` as orchestration and Surprise's API.

`fit` computes the similarities into a storage (`dprec.knn.storage`) and builds the
fit's rules (`dprec.knn.rules`), selection (`dprec.knn.selection`), neighbourhood
engine (`dprec.knn.neighbourhoods`) and privacy book (`dprec.knn.accounting`);
`estimate` and `test` are the engine's answers, charged to the book.  The kNN API
is `dprec.knn.queries`; [How PrivateKNN answers](../knn_internals.md) follows the data
to a `Prediction`.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import replace
from functools import partial

import numpy as np
from surprise import AlgoBase

from ..accountant.private_model import NotFittedError, PrivateModel
from ..selectors import Selector
from ..similarity import EXACT_SIMILARITIES, SimilarityRows, SketchRelease, SketchRows
from ..utils._ratings import RatingArrays
from ..utils._rng import RandomStateLike, derive_seed, fit_entropy
from .accounting import Book, book_at, open_book
from .biases import fit_baselines
from .neighbourhoods import engine
from .parameters import check_params, check_precomputed
from .predictions import SurprisePredictions
from .queries import KNNQueries
from .rules import Rule, Rules
from .selection import Selection
from .storage import held, resolves_to_blocked, similarities
from .user_neighbourhood import KeptSets, SetChooser


class PrivateKNN(SurprisePredictions, KNNQueries, PrivateModel, AlgoBase):
    r"""kNN collaborative filtering with pluggable neighbour selection and similarity.

    Surprise's prediction rules (`prediction`), user- or item-based, over the chosen
    neighbours $v$ with $s(u, v) > 0$ (or $>$ `min_sim`) who rated $i$: `KNNBasic`'s
    $\hat r_{ui} = \sum_v s(u,v)\, r_{vi} / \sum_v s(u,v)$, `KNNWithMeans`,
    `KNNWithZScore` and `KNNBaseline` (Koren 2010), falling back to $\mu_u$ or
    $b_{ui}$ below `min_k` neighbours as Surprise's do (or to $b_{ui}$ for every rule,
    `fallback="baseline"`, as LensKit's pipelines), and the papers' centred rule
    (`centered=True`); each a short function of `dprec.knn.rules`, its formula in its
    docstring.

    Parameters are stored as given (scikit-learn's convention: changing one
    after construction takes effect at the next `fit`) and validated by
    `fit`, or by `check_params`, which also resolves them into the
    fitted attributes `selector_`, `sim_options_`, `bsl_options_`,
    `neighbourhood_`, `prediction_`, `fallback_`, `neighbour_shrinkage_`,
    `min_sim_`, `backend_`, `k_` and `min_k_`; everything after
    `sim_options` is keyword-only.

    Parameters
    ----------
    k : int, default 40
        Number of neighbours (`>= 1`).  A `k` above the number of users
        chooses every candidate, as `k` = that number does (the same
        neighbours, drawn the same way).
    min_k : int, default 1
        Fewer contributing neighbours than this makes the prediction impossible
        (Surprise then falls back to the global mean, `was_impossible=True`).
    fallback : {"global_mean", "user_mean", "baseline"}, default "global_mean"
        The answer with fewer than `min_k` contributing neighbours.
        `"global_mean"`: Surprise's, the basic rule impossible (hence the global
        mean, `was_impossible=True`), the other rules their own fallback,
        $\mu_u$ or $b_{ui}$.  `"user_mean"`: the basic rule answers the user's
        own mean $\mu_u$ (`was_impossible=False`), as `KNNWithMeans` falls
        back; user-based it reads only the asking user's own ratings, shown to
        them alone, item-based the item's mean over its raters.
        `"baseline"`: every rule answers Surprise's baseline
        $b_{ui} = \mu + b_u + b_i$ (fitted with `bsl_options` as
        `compute_baselines` fits them) below $\max(\texttt{min\_k}, 1)$
        contributing neighbours, and unknown users or items the baseline of
        what is known, as `KNNBaseline` does (`was_impossible=False`):
        LensKit's kNN with its bias fallback.  The baselines are fitted on
        every rating; like every prediction, no privacy claim covers them
        (the accountant says so).
    neighbour_shrinkage : float, default 0
        $\lambda \ge 0$ (`inf` allowed): the neighbours' term of the
        rule is weighted by $n / (n + \lambda)$, `n` the number of
        contributing neighbours (`actual_k`), shrinking each estimate
        towards the rule's offset, $\mu_u$ (basic, means, zscore,
        centred) or $b_{ui}$ (baseline), where few neighbours speak
        (the support shrinkage of Koren, TKDD 2010, applied to the
        prediction).  `0` is Surprise's rule; `inf` predicts
        $\mu_u$ or $b_{ui}$ itself, so a `λ` chosen by
        cross-validation over a grid holding `inf` is never worse than it on
        the validation folds (the basic rule with `fallback="global_mean"`
        stays impossible below `min_k` neighbours: use `"user_mean"` to
        predict $\mu_u$ everywhere; `"baseline"` still answers $b_{ui}$
        below `min_k`).  Reads nothing the rule does not
        (`n` is in `details`).  `recommend` ranks by this rule when
        `λ > 0`; at `0` it ranks by the rule shrunk with
        `dprec.knn.queries.RANKING_SHRINKAGE` (5) unless told otherwise
        (`score_rows`).
    min_sim : float, optional
        The chosen neighbours contribute if their similarity $s$ is above
        `min_sim` (and $s \ne 0$), and the rules divide by
        $\sum_v |s(u,v)|$.  `None` (default) is the rule's own: $s > 0$,
        Surprise's (`0.0`, the same numbers bit for bit), or every
        $s \ne 0$ with `centered=True`.  LensKit keeps $s \ge$ `min_sim`
        (`1e-6` by default).  A negative `min_sim` lets negative similarities
        contribute, against the neighbour's deviation (old LensKit's and Java
        LensKit's $\sum |s|$ average): for the rules on deviations
        (`prediction` `"means"`, `"zscore"`, `"baseline"`, or
        `centered=True`) only.  Applied to the neighbours the selector
        chose (with top-k, the same as choosing the `k` most similar among
        those above `min_sim`, as LensKit does).
    sim_options : dict, optional
        Surprise-style similarity options: `name` (`"msd"` (default),
        `"cosine"`, `"pearson"`, `"pearson_baseline"` with `shrinkage`,
        default 100, or LensKit's `"centered_cosine"`: each row centred at its
        mean, the cosine over all entries; see `dprec.similarity.centered`),
        `user_based` (default True; False for item-based kNN, exact
        similarities only), `min_support` (default 1); or a private
        sketch backend (user-based), e.g.
        `{"name": "rr_minhash", "width": 128, "B": 4, "epsilon": 4.0, "delta": 1e-4}`
        (also `"noisy_minhash"`, `"minhash"`, `"sjlt"`, `"gaussian_jl"`;
        see `dprec.similarity`), whose release the privacy accountant
        records.
        The dict is copied, never modified.
    selector : str or Selector, default "topk"
        Neighbour selector, by name (`"topk"`, `"probabilistic"`,
        `"pncf"`, `"ppns"`, `"pncf_corrected"`) or as an object from
        `dprec.selectors`.
    epsilon, p, alpha, rho, floor : float, optional
        The selector's parameters as flat keyword arguments (so that
        `GridSearchCV` can grid over them): `epsilon` for PNCF, PPNS and
        the corrected PNCF,
        `p` or the target accuracy `alpha` for PPNS, `rho` for PNCF,
        `floor` for probabilistic selection.
        `None` keeps the selector's default; parameters a named selector
        does not use are ignored with a `UserWarning` (`epsilon` with
        `"topk"` buys no privacy).  With a selector object, leave them `None`.
    neighbourhood : {"item", "user"}, default "item"
        `"item"`: Surprise's kNN semantics, the neighbours of `u` are
        chosen among the raters of `i`.  `"user"`: every user has one
        neighbour set chosen among all other users (the semantics of the
        papers and of the kNN attack); the members who rated `i` predict.
        (Item-based, read "item" for "user" and conversely.)
    prediction : {"basic", "means", "zscore", "baseline"}, default "basic"
        Surprise's `KNNBasic`, `KNNWithMeans`, `KNNWithZScore` or
        `KNNBaseline` rule (also as the classes `PrivateKNNWithMeans`,
        `PrivateKNNWithZScore`, `PrivateKNNBaseline`).
    bsl_options : dict, optional
        Surprise's baseline options (`method` `"als"` (default) or
        `"sgd"`, `n_epochs`, `reg_u`, `reg_i`, `reg`,
        `learning_rate`), for `prediction="baseline"` and the
        `pearson_baseline` similarity; computed by Surprise itself.
    centered : bool, default False
        The papers' mean-centred prediction (with `prediction="basic"`; either
        neighbourhood); Surprise's is `prediction="means"`.
    random_state : None, int, RandomState or Generator
        Stored as given; `fit` draws 128 bits from it, from which the
        randomness of each query (derived from it and the query's ids) and
        of a sketch backend are derived.  `None` (default) draws fresh
        entropy at each fit; an int gives **seeded noise**: reproducible, for
        experiments (a refit with the same seed on neighbouring data reuses
        the same noise, which then cancels), so the privacy report records
        every entry void (`dprec.accountant.ledger.SEEDED`): for a guarantee, give
        `None` or a numpy `Generator`.
    verbose : bool, default True
        Print progress messages during `fit` (as Surprise's kNN algorithms).
    diagnostics : bool, default False
        Add the selector's diagnostics to each prediction's `details`: the
        realised accuracy `alpha`, the security `beta` and the
        `partitions` the neighbours came from.  They are computed from the
        exact similarities and ranks, so they reveal them: off by default,
        and never covered by a privacy claim.
    storage : {"auto", "dense", "blocked"}, default "auto"
        How the fitted model holds the similarities.  `"dense"`: the whole
        `n × n` matrix `sim` (Surprise's way).  `"blocked"` (cosine, msd,
        pearson and the sketch backends): no `n × n` matrix at all; the rows
        a batch of queries needs are computed for it, a block of users at a
        time (`dprec.similarity.rows.SimilarityRows`), and so is
        `RS`, or estimated from the users' one sketch release
        (`dprec.similarity.rows.SketchRows`): memory `O(block)`
        instead of `O(n²)`, the same predictions, neighbours and privacy
        accounting bit for bit (integer ratings, code sketches; else up to
        float64 rounding).  `"auto"` is `"dense"` while one float64
        `n × n` matrix stays below `DENSE_SIMILARITY_BYTES` (256 MiB,
        about 5,800 users), else `"blocked"` where it applies (on
        MovieLens-shaped data the rows are within about 25% of the whole
        matrix's speed, either way, from a few thousand users on:
        `benchmarks/bench_scale.py`).
    backend : {"threads", "dask"}, default "threads"
        Where the blocks of similarity rows are computed and reduced.
        `"threads"`: this machine's cores.  `"dask"`: as tasks on the
        `dask.distributed` client in scope (blocked storage; the fitted
        state is sent to the workers once per call, the rows never leave
        them: each task returns its queries' answers or its users' RS, and
        the accountant is charged here).  The same numbers either way.
    budget : (float, float), optional
        A per-user `(ε, δ)` budget for the privacy accountant
        ([`PrivateModel`][dprec.accountant.private_model.PrivateModel]): a query
        whose answer would take some user past it raises
        `dprec.accountant.ledger.BudgetExceededError` (answers already given stay
        valid), and so does a `fit` whose sketch release would (the model is then
        left as it was).  Composed per unit, basic composition of the entries' claims.

    Attributes
    ----------
    sim : ndarray of shape (n_users, n_users), or (n_items, n_items) item-based
        The similarity matrix (as in Surprise's kNN algorithms).  Like the
        trainset, it holds the raw data: publish answers, never the fitted
        object.  Not kept with blocked storage (`storage_ == "blocked"`;
        `compute_similarities` builds it).
    storage_ : {"dense", "blocked"}
        What `storage` resolved to at `fit`.
    means, sigmas : ndarray
        Each user's (item's, item-based) mean rating and standard deviation
        (Surprise's `KNNWithMeans.means` and `KNNWithZScore.sigmas`).
    bu, bi : ndarray or None
        The user and item baselines (`prediction="baseline"`,
        `fallback="baseline"` or `pearson_baseline`), as Surprise's
        `compute_baselines` returns them.
    sensitivity_ : ndarray of shape (n_users,) or None
        Each user's recommendation-aware sensitivity `RS(u)` (the private
        selectors' score sensitivity), computed on the raw data; `None` for
        selectors that do not use it.
    sketch_release_ : SketchRelease or None
        What the users released through a sketch backend (its privacy entry
        and who released), `None` for the exact similarities.

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
                 neighbour_shrinkage: float = 0.0, min_sim: float | None = None) -> None:
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
        self.min_sim = min_sim

    def check_params(self) -> PrivateKNN:
        """Validate the parameters (as `fit` does first) and set what they resolve to:
        `sim_options_`, `bsl_options_` (validated copies), `selector_` (the
        `dprec.selectors.Selector` object), `neighbourhood_`, `prediction_`,
        `fallback_`, `backend_` (lower-cased), `neighbour_shrinkage_` and `min_sim_`
        (floats), `k_` and `min_k_` (`int`s)
        (`dprec.knn.parameters`).  Returns `self`.

        Raises
        ------
        ValueError, TypeError
            Naming the first invalid parameter.
        """
        check_params(self)
        return self

    # ------------------------------------------------------------------ fit
    def fit(self, trainset) -> PrivateKNN:
        """Compute the similarities (and spend any privacy budget) on `trainset`.

        All or nothing: built on a copy of the model, swapped in once its release is
        charged.  A fit that fails (e.g. refused by the `budget`) leaves the model as it
        was, fitted before or not: nothing of a refused release is readable.
        """
        return self._swap_in(PrivateKNN._fit, trainset)

    def _swap_in(self, fit, *args) -> PrivateKNN:
        """`fit(copy, *args)` on a shallow copy of the model, whose state replaces this
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
        blocked = resolves_to_blocked(self.storage, self.backend_, self.sim_options_["name"],
                                      ratings.n_users)
        sim, sensitivity, release = self._similarities(ratings, entropy,
                                                       self.backend_ if blocked else None)
        return self._fit_precomputed(trainset, ratings, sim, sensitivity, entropy, release)

    def fit_precomputed(self, trainset, sim: np.ndarray, sensitivity: np.ndarray | None = None,
                        release: SketchRelease | None = None) -> PrivateKNN:
        """Fit with a similarity matrix computed elsewhere (e.g. extended incrementally).

        For simulations that refit on slightly changed data, such as the β-kNN
        attack adding fake users: the caller supplies `sim` (n_users ×
        n_users, inner ids of `trainset`) and, for the private selectors,
        each user's sensitivity `RS` — they must equal what `fit`
        would compute.  For a sketch backend, `release` is what the users
        released (the sketches behind `sim`), which the accountant records;
        without it only the exact similarities are accepted (a sketch backend
        spends its budget inside `fit`).  All or nothing, as `fit`.
        """
        return self._swap_in(PrivateKNN._fit_given, trainset, sim, sensitivity, release)

    def _fit_given(self, trainset, sim, sensitivity, release) -> PrivateKNN:
        self.check_params()
        AlgoBase.fit(self, trainset)
        ratings = RatingArrays.from_trainset(trainset, self.sim_options_["user_based"])
        sim, sensitivity = check_precomputed(self.sim_options_["name"], release, sim,
                                             sensitivity, ratings.n_users, self.selector_)
        return self._fit_precomputed(trainset, ratings, sim, sensitivity,
                                     fit_entropy(self.random_state), release)

    def _fit_precomputed(self, trainset, ratings,
                         sim: np.ndarray | SimilarityRows | SketchRows,
                         sensitivity, entropy: bytes,
                         release: SketchRelease | None = None) -> PrivateKNN:
        """The fit once the similarities are known (the matrix, or its rows on demand);
        `release` is what the users released through a sketch backend (`None` for
        exact similarities)."""
        if getattr(self, "trainset", None) is not trainset:
            AlgoBase.fit(self, trainset)
        storage = self._storage = held(sim, self.backend_)
        self.storage_ = storage.name
        self._ratings, self.sensitivity_ = ratings, sensitivity
        self._rules = Rules(ratings, self.centered, self.min_k_, self.min_sim_)
        self.means, self.sigmas = self._rules.means, self._rules.sigmas
        self._rule_ = self._rule((self.prediction_, self.fallback_, self.neighbour_shrinkage_))
        # no query has more than n_users candidates: a larger k chooses them all, as k =
        # n_users does (every selector takes all candidates once k reaches their number)
        self._width = min(self.k_, ratings.n_users)
        selection = Selection(self.selector_, self._width, derive_seed(entropy, "queries"),
                              sensitivity)
        self._sets = KeptSets(SetChooser(storage, selection, ratings.n_users),
                              apart=self.neighbourhood_ == "item")
        self._sets_at_k: dict[int, tuple[KeptSets, Book]] = {}
        self._engine = engine(self.neighbourhood_, storage, ratings, selection, self._rules,
                              self._sets)
        self.sketch_release_ = release
        self._book = open_book(
            trainset, ratings, selector=self.selector_, k=self.k_, sensitivity=sensitivity,
            sim_options=self.sim_options_, neighbourhood=self.neighbourhood_,
            budget=self.budget, random_state=self.random_state, release=release)
        self._accountant = self._book.accountant
        return self

    def _neighbour_sets(self, k: int) -> tuple[KeptSets, Book]:
        """The kept neighbour sets of size `k` and the book they are charged to: the
        model's own at its width; at another (`get_neighbors`), sets of their own, with
        independent noise, charged as selections of their own (made once per width).  A
        `k` above the number of users chooses them all, as for the model's own `k`."""
        model = self._sets.chooser
        width = min(k, model.n_users)
        if width == self._width:
            return self._sets, self._book
        with self._book.lock:
            if width not in self._sets_at_k:
                seed = derive_seed(model.selection.seed.to_bytes(8, "little"), f"k={width}")
                chooser = replace(model, selection=replace(model.selection, k=width, seed=seed))
                book = book_at(self._book, selector=self.selector_, k=width,
                               sensitivity=self.sensitivity_, sim_options=self.sim_options_,
                               rating_scale=self.trainset.rating_scale,
                               neighbourhood=self.neighbourhood_)
                self._sets_at_k[width] = (KeptSets(chooser, apart=False), book)
            return self._sets_at_k[width]

    def _similarities(self, ratings: RatingArrays, entropy: bytes,
                      rows_backend: str | None = None):
        """`dprec.knn.storage.similarities` of `sim_options` (the baselines fitted if it
        needs them): the matrix, or its rows on `rows_backend`."""
        return similarities(self.sim_options_, ratings, self.selector_.needs_sensitivity,
                            self.trainset.rating_scale, entropy,
                            partial(fit_baselines, self, ratings), self.verbose, rows_backend)

    def _rule(self, key: tuple[str, str, float]) -> Rule:
        """The rule `(prediction, fallback, shrinkage)` of this fit (`Rules.rule`), the
        baselines fitted (and set as `bx`, `by`) if it is the first to need them."""
        return self._rules.rule(key, self._rule_baselines)

    def _rule_baselines(self) -> tuple[np.ndarray, np.ndarray]:
        self.bx, self.by = fit_baselines(self, self._ratings)
        return self.bx, self.by

    @property
    def sim(self) -> np.ndarray:
        """The similarity matrix (dense storage; see the class's attributes)."""
        storage = getattr(self, "_storage", None)
        if storage is None:
            raise NotFittedError("sim: the model is not fitted yet: call fit first")
        if storage.matrix is None:
            raise AttributeError("sim: " + ("this model holds no n × n matrix "
                                            "(storage_='blocked'); compute_similarities() "
                                            "builds it"))
        return storage.matrix

    def compute_similarities(self) -> np.ndarray:
        """The similarity matrix of `sim_options` on the trainset (Surprise's hook).

        For an exact similarity it is computed afresh.  A sketch backend's
        similarities come from the users' one release made by `fit`
        (a new release would spend their budget again): a copy of `sim`, or
        every row estimated from that release with blocked storage.
        """
        if not hasattr(self, "trainset"):
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet: call fit first "
                                 "(compute_similarities needs its trainset)")
        if self.sim_options_["name"] not in EXACT_SIMILARITIES:
            self._check_fitted()
            return self._storage.all_rows()
        ratings = RatingArrays.from_trainset(self.trainset, self.sim_options_["user_based"])
        return self._similarities(ratings, fit_entropy(self.random_state))[0]

    def default_prediction(self) -> float:
        """The global mean rating, Surprise's fallback for impossible predictions."""
        self._check_fitted()
        return self._ratings.global_mean
