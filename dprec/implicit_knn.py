r"""Implicit-feedback kNN inside Surprise: scores are sums of similarities, for top-N.

Every stored (user, item) pair of the trainset is an *interaction* (with `threshold`,
only the ratings at least that high); ratings and play counts are otherwise ignored.
[`ImplicitKNN`][dprec.implicit_knn.ImplicitKNN] scores an item for a user as LensKit's
implicit kNN does (`feedback="implicit"`, lkpy 2025: `ItemKNNScorer`, `UserKNNScorer`):

* **item-based** (`sim_options={"user_based": False}`): with $s(i, j)$ the cosine (or
  Jaccard) of the two items' sets of users, the score of $i$ for $u$ is the sum of the
  $k$ largest $s(i, j) \ge$ `min_sim` over the items $j \ne i$ of $u$;
* **user-based** (default): with $s(u, v)$ the cosine or Jaccard of the users' sets, the
  sum of the $k$ largest $s(u, v) \ge$ `min_sim` over the users $v \ne u$ who hold $i$.

An item is scored when at least `min_nbrs` similarities are summed; otherwise the score is
impossible (Surprise's `was_impossible`).  A score is **not a rating**: `estimate`,
`predict` and `test` return it unclipped (the trainset's rating scale does not apply), 0
where impossible; rank by it ([`recommend`][dprec.implicit_knn.ImplicitKNN.recommend],
[`dprec.topn.recommend_batch`][], which leave out the user's trainset items) and score
the lists with [`dprec.metrics`][] against held-out interactions.

**Private set sketches** (user-based): `sim_options={"name": "rr_minhash" |
"noisy_minhash", "epsilon": ε, ...}` (Aumüller, Bourgeat & Schmurr, SISAP 2020): each
user releases an ε-LDP MinHash sketch of their set once, at `fit`, and $s(u, v)$ is the
Jaccard estimated from the two sketches; the neighbours are chosen from those estimates
(post-processing).  But the score then sums the similarities of the neighbours *who hold
the item*, read from their raw sets, which the sketches' ε does not cover: the privacy
report says so (an output with a gap, the label *in part*).

**Released sets** (`set_epsilon`): each user also releases their set through randomised
response on every item ([`dprec.set_reports`][]), at `set_epsilon` per
`set_difference` items.  The score of $i$ for $u$ is then
$\sum_{v \in N_k(u)} \hat s(u, v)\, \hat x_{vi}$, $N_k(u)$ the $k$ users most similar to
$u$ by the sketches ($\hat s \ge$ `min_sim`; who holds $i$ is known only through noise,
so the neighbours are fixed per user) and $\hat x_{vi}$ the debiased report (unbiased for
$1[i \in S_v]$).  Both releases are made on the user's device; everything else is
post-processing of them, and a user's own list leaves out their own items (shown to them
alone), so every score is covered: per user, ε of the sketch + `set_epsilon`, the
sketch's δ (basic composition, `Unit.SET_ITEM`), for the users within both releases'
scope (sets of at least $\tau + \alpha$ items; the item and user lists are read from the
data, so the sole holder of an item and a user of one interaction are outside it).

See [Implicit feedback](../implicit.md) for the measured accuracy on Last.fm.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import scipy.sparse as sp
from surprise import AlgoBase, PredictionImpossible
from surprise.prediction_algorithms.predictions import Prediction

from . import implicit_scores as scores
from . import set_reports
from ._ratings import RatingArrays
from ._rng import RandomStateLike, derive_generator, derive_seed, fit_entropy, is_seeded
from ._surprise import UNKNOWN, cyclic_gc_paused, inner_ids, raw_ids
from ._threads import map_blocks, thread_count
from ._validation import check_bool, check_epsilon, check_int, check_real
from .knn.parameters import check_ids
from .ledger import Unit
from .private_model import PrivateModel
from .rating_space import SCOPE
from .similarity import SketchBackend, UnknownSimilarityError, backend_options, sketch_backend
from .topn import recommend_batch

__all__ = ["PRIVATE_SKETCHES", "SKETCHES", "ImplicitKNN", "check_sim_options"]

#: the private sketches of sets ImplicitKNN takes (`sim_options["name"]`)
PRIVATE_SKETCHES = ("rr_minhash", "noisy_minhash")
#: every sketch of sets it takes: the private ones and the plain MinHash
SKETCHES = ("minhash", *PRIVATE_SKETCHES)
#: Surprise's reason for an item scored by fewer than `min_nbrs` similarities
TOO_FEW = "Not enough neighbors."
#: (user, item) scores computed at once
_BLOCK_CELLS = 1 << 20
# what the privacy report says of the outputs
_RAW = "computed from the raw interactions, without noise"
_RAW_SETS = ("each score sums the similarities of the neighbours who hold the item, read "
             "from their raw sets: the neighbours are chosen from the sketches "
             "(post-processing), the raw sets are not covered by them")
_INNER_IDS = "inner ids follow the order of the data (one removal renumbers them)"
_OWN_SET = ("a user's own list leaves out the items of their own set: shown to them alone "
            "(their device), not charged")
#: the conditions of the released sets' guarantee: the lists are read from the data
_LISTS = ("the item list is read from the data (the items of the trainset): the guarantee is "
          "for neighbouring datasets with the same items",
          "the user list is read from the data (the users of the trainset): the guarantee is "
          "for neighbouring datasets with the same users")


class ImplicitKNN(PrivateModel, AlgoBase):
    r"""Implicit-feedback kNN (LensKit's sums of similarities) as a Surprise algorithm.

    See the module docstring for the scores, the private sketches and their privacy.
    Parameters are stored as given and validated by `fit` (scikit-learn's convention).

    Parameters
    ----------
    k : int, default 20
        How many similarities each score sums at most (LensKit's `max_nbrs`), `>= 1`.
    min_nbrs : int, default 1
        Fewer summed similarities make the score impossible, `1 <= min_nbrs <= k`.
    sim_options : dict or SketchBackend, optional
        `name`: `"cosine"` (default) or `"jaccard"` of the sets, or a sketch of sets
        (`"rr_minhash"`, `"noisy_minhash"`, or the non-private `"minhash"`) with its
        parameters (`epsilon`, `width`, `B`, `tau`, `delta`, `set_difference`,
        `small_users`, `hash_seed`; [`dprec.similarity.RRMinHash`][]); `user_based`
        (default True; False for item-based, exact similarities only).  Not modified.
    min_sim : float, default 1e-6
        The smallest similarity that counts (LensKit's), `> 0`.
    threshold : float, optional
        Only the ratings `>= threshold` are interactions (default: every stored pair).
    set_epsilon : float, optional
        With a private sketch: each user also releases their set at this ε per
        `set_difference` items, and the scores read only the releases (see the module
        docstring); default None, the neighbours' raw sets.
    random_state : None, int, RandomState or Generator
        The noise of the sketches and reports.  `None` (default): fresh entropy at each
        fit; an int gives seeded noise, for experiments (the report's entries are void).
    budget : (float, float), optional
        A per-user `(ε, δ)` budget (`Unit.SET_ITEM`): a fit whose releases spend more is
        refused before any noise is drawn (`BudgetExceededError`, a `ValueError`).

    Attributes
    ----------
    sim_options_ : dict
        The validated similarity options.
    sketch_release_ : SketchRelease or None
        What the users released through the sketch backend.
    reports_ : scipy.sparse.csr_matrix or None
        With `set_epsilon`: the users' reports, users × items (inner ids), 1 where reported.

    Examples
    --------
    >>> from dprec import datasets
    >>> trainset = datasets.synthetic(100, 80, 1500, random_state=0).build_full_trainset()
    >>> algo = ImplicitKNN(k=10, sim_options={"user_based": False}).fit(trainset)
    >>> len(algo.recommend(trainset.to_raw_uid(0), n=5))
    5
    """

    def __init__(self, k: int = 20, min_nbrs: int = 1, sim_options: Mapping | None = None, *,
                 min_sim: float = 1e-6, threshold: float | None = None,
                 set_epsilon: float | None = None, random_state: RandomStateLike = None,
                 budget: tuple[float, float] | None = None) -> None:
        AlgoBase.__init__(self)
        self.k, self.min_nbrs = k, min_nbrs
        self.sim_options = {} if sim_options is None else sim_options
        self.min_sim, self.threshold, self.set_epsilon = min_sim, threshold, set_epsilon
        self.random_state, self.budget = random_state, budget

    # ------------------------------------------------------------ parameters
    def _checked(self) -> dict:
        """The parameters validated (naming the first invalid one)."""
        k = check_int(self.k, "k", minimum=1)
        checked = {"k": k, "min_nbrs": check_int(self.min_nbrs, "min_nbrs", minimum=1,
                                                 maximum=k),
                   "min_sim": check_real(self.min_sim, "min_sim", low=0.0,
                                         low_inclusive=False),
                   "threshold": (None if self.threshold is None
                                 else check_real(self.threshold, "threshold")),
                   "sim_options": check_sim_options(self.sim_options)}
        name = checked["sim_options"]["name"]
        if self.set_epsilon is not None:
            if name not in PRIVATE_SKETCHES:
                raise ValueError(f"set_epsilon makes the scores read the users' released "
                                 f"sets, but the similarity {name!r} reads their raw sets: "
                                 "give a private sketch, sim_options={'name': 'rr_minhash' "
                                 "or 'noisy_minhash', 'epsilon': ...}, or drop set_epsilon")
            checked["set_epsilon"] = check_epsilon(self.set_epsilon, "set_epsilon")
        else:
            checked["set_epsilon"] = None
        self._checked_budget()
        return checked

    # ------------------------------------------------------------ fit
    def fit(self, trainset) -> ImplicitKNN:
        """Read the interactions of `trainset`, compute the item similarities (item-based)
        or make the users' releases (sketches, reports), and open the privacy report.
        A fit that fails (e.g. refused by the `budget`) leaves the model as it was."""
        checked = self._checked()
        options, user_based = checked["sim_options"], checked["sim_options"]["user_based"]
        ratings = RatingArrays.from_trainset(trainset)
        X = scores.interactions(ratings.matrix, checked["threshold"])
        entropy = fit_entropy(self.random_state)
        backend = sketches = reports = release = item_sims = None
        if options["name"] in SKETCHES:
            backend = sketch_backend(options, derive_generator(entropy, "similarity"))
            entry = backend.privacy()
            spent = [(entry.epsilon, entry.delta)]
            if checked["set_epsilon"] is not None:
                spent.append((checked["set_epsilon"], 0.0))
            self._refuse_past_budget(spent, Unit.SET_ITEM)
            sketches = backend.release(X, ratings.item_keys)
            release = backend.release_
            if checked["set_epsilon"] is not None:     # a private sketch (`_checked`)
                checked["set_difference"] = backend.set_difference
                reports = set_reports.report_sets(X, checked["set_epsilon"],
                                                  checked["set_difference"],
                                                  derive_seed(entropy, "set reports"))
        elif not user_based:
            item_sims = scores.item_similarities(X, options["name"], checked["min_sim"])
        accountant = self._account(trainset, ratings, checked, release, reports)
        AlgoBase.fit(self, trainset)
        self.sim_options_ = options
        self._params, self._X, self._item_sims = checked, X, item_sims
        self._backend, self._sketches = backend, sketches
        self.sketch_release_, self.reports_ = release, reports
        self._neighbours_declared = False
        self._accountant = accountant
        return self

    def _account(self, trainset, ratings: RatingArrays, params: dict, release, reports):
        """The privacy report: the releases charged once to every user, the outputs."""
        name = params["sim_options"]["name"]
        based = "user" if params["sim_options"]["user_based"] else "item"
        extra = "" if reports is None else f", set_epsilon={params['set_epsilon']:g}"
        accountant = self._open_accountant(
            raw_ids(trainset), f"ImplicitKNN(k={params['k']}, similarity {name!r}, "
                               f"{based}-based{extra})", is_seeded(self.random_state))
        sketch = (release.charge(accountant) if release is not None
                  and np.isfinite(release.entry.epsilon) else None)
        output = "scores and recommendations (estimate, test, predict, recommend)"
        if reports is None:
            accountant.declare_output(output, [] if sketch is None else [sketch],
                                      _RAW if sketch is None else _RAW_SETS)
            return accountant
        entry = set_reports.set_report_entry(params["set_epsilon"],
                                             params["set_difference"])
        index = accountant.register(entry)
        accountant.charge({index: np.ones(accountant.n_users, dtype=np.int64)})
        accountant.declare_output(output, [sketch, index])
        accountant.notes.append(_OWN_SET)
        counts = np.bincount(ratings.matrix.indices, minlength=ratings.n_items)
        rows = np.repeat(np.arange(ratings.n_users), np.diff(ratings.matrix.indptr))
        sole = np.zeros(ratings.n_users, dtype=bool)
        sole[rows[counts[ratings.matrix.indices] == 1]] = True
        for condition in _LISTS:
            accountant.add_condition(condition)
        accountant.out_of_scope(Unit.SET_ITEM, sole, SCOPE["sole rater"])
        accountant.out_of_scope(Unit.SET_ITEM, np.diff(ratings.matrix.indptr) == 1,
                                SCOPE["single rating"])
        return accountant

    # ------------------------------------------------------------ scores
    def _similarity_rows(self, rows: np.ndarray) -> np.ndarray:
        """The users' similarity rows `rows` (exact, or estimated from the sketches)."""
        if self._backend is not None:
            return self._backend.estimate_rows(self._sketches, rows)
        return scores.user_similarity_rows(self._X, rows, self.sim_options_["name"])

    def score_rows(self, users) -> tuple[np.ndarray, np.ndarray]:
        """Every item's score for each of `users` (inner ids), and where it is possible
        (at least `min_nbrs` similarities summed; with `set_epsilon`, the user has that
        many neighbours): both `(len(users), n_items)`, the scores 0 where impossible.
        What `dprec.topn.recommend_batch` ranks."""
        self._check_fitted()
        users = check_ids(users, "users", self.trainset.n_users)
        block_scores, counts = self._scores(users)
        possible = counts >= self._params["min_nbrs"]
        block_scores[~possible] = 0.0
        return block_scores, possible

    def _scores(self, users: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The scores of `users` (checked inner ids) and how many similarities each sums
        (with `set_epsilon`: the user's neighbours), both `(len(users), n_items)`."""
        params = self._params
        if self._item_sims is not None:
            block = self._X[users]
            left = (block.indptr, block.indices, block.data)
            right = self._item_sims
        else:
            sims = self._similarity_rows(users)
            if self.reports_ is not None:
                return self._released_scores(sims, users)
            left, right = scores.neighbour_rows(sims, users, params["min_sim"]), self._X
        ordered = self._item_sims is None      # neighbours by descending similarity, 0/1 sets
        chunks = [c for c in np.array_split(np.arange(len(users)), thread_count()) if len(c)]
        parts = map_blocks(lambda rows: scores.top_k_sums(_left_slice(left, rows), right,
                                                          params["k"], ordered), chunks)
        if not parts:
            n_items = self.trainset.n_items
            return np.zeros((0, n_items)), np.zeros((0, n_items), dtype=np.int64)
        return np.vstack([p[0] for p in parts]), np.vstack([p[1] for p in parts])

    def _released_scores(self, sims: np.ndarray, users: np.ndarray):
        """$\\sum_{v \\in N_k(u)} \\hat s(u, v) \\hat x_{vi}$ from the reports."""
        params = self._params
        ptr, columns, weights = scores.neighbour_rows(sims, users, params["min_sim"],
                                                      params["k"])
        W = sp.csr_matrix((weights, columns, ptr), shape=(len(users), self.trainset.n_users))
        summed = np.asarray((W @ self.reports_).todense())
        totals = np.asarray(W.sum(axis=1)).ravel()
        out = set_reports.debias(summed, totals, params["set_epsilon"],
                                 params["set_difference"])
        counts = np.repeat(np.diff(ptr)[:, None], self.trainset.n_items, axis=1)
        return out, counts

    def estimate_arrays(self, users, items) -> tuple[np.ndarray, np.ndarray]:
        """Scores for arrays of inner ids (the same numbers as `test` and `score_rows`).

        Returns
        -------
        est : ndarray of float64
            The scores, 0 where impossible.
        possible : ndarray of bool
            False where fewer than `min_nbrs` similarities are summed.
        """
        self._check_fitted()
        users = check_ids(users, "users", self.trainset.n_users)
        items = check_ids(items, "items", self.trainset.n_items)
        if len(items) != len(users):
            raise ValueError(f"items must have one id per user ({len(users)}), got {len(items)}")
        est, possible = np.zeros(len(users)), np.zeros(len(users), dtype=bool)
        unique, inverse = np.unique(users, return_inverse=True)
        n_items = self.trainset.n_items
        size = max(1, _BLOCK_CELLS // max(n_items, 1))
        order = np.argsort(inverse, kind="stable")
        bounds = np.searchsorted(inverse[order], np.arange(0, len(unique) + size, size))
        for n, start in enumerate(range(0, len(unique), size)):
            block_scores, block_possible = self.score_rows(unique[start:start + size])
            where = order[bounds[n]:bounds[n + 1]]
            cells = (inverse[where] - start) * n_items + items[where]
            est[where] = block_scores.ravel()[cells]
            possible[where] = block_possible.ravel()[cells]
        return est, possible

    # ------------------------------------------------------------ Surprise's API
    def estimate(self, u, i):
        """The score of inner item `i` for inner user `u`: `(score, details)`, or
        `PredictionImpossible` (unknown ids, fewer than `min_nbrs` similarities)."""
        self._check_fitted()
        if not (self.trainset.knows_user(u) and self.trainset.knows_item(i)):
            raise PredictionImpossible(UNKNOWN)
        est, possible = self.estimate_arrays(np.array([u]), np.array([i]))
        if not possible[0]:
            raise PredictionImpossible(TOO_FEW)
        return float(est[0]), {"was_impossible": False}

    def default_prediction(self) -> float:
        """0: the score of an item nothing speaks for (not the global mean rating)."""
        self._check_fitted()
        return 0.0

    def predict(self, uid, iid, r_ui=None, clip=True, verbose=False) -> Prediction:
        """Surprise's `predict` by raw ids; `clip` has no effect (a score is not a rating,
        the rating scale does not bound it)."""
        self._check_fitted()
        return self.test([(uid, iid, r_ui)], verbose)[0]

    def test(self, testset, verbose: bool = False) -> list[Prediction]:
        """Scores of a whole testset at once (`est` unclipped, 0 where impossible)."""
        self._check_fitted()
        uids, iids, r_uis, users, items = inner_ids(self.trainset, testset)
        known = (users >= 0) & (items >= 0)
        est, possible = np.zeros(len(uids)), np.zeros(len(uids), dtype=bool)
        est[known], possible[known] = self.estimate_arrays(users[known], items[known])
        details = [{"was_impossible": False} if ok else
                   {"was_impossible": True, "reason": TOO_FEW if seen else UNKNOWN}
                   for ok, seen in zip(possible.tolist(), known.tolist())]
        with cyclic_gc_paused():
            out = list(map(Prediction, uids, iids, r_uis, est.tolist(), details))
        if verbose:
            for prediction in out:
                print(prediction)
        return out

    def recommend(self, uid, n: int = 10, exclude_rated: bool = True) -> list[tuple]:
        """The top-`n` items for raw user id `uid` by score: `[(raw iid, score), ...]`,
        best first, without the user's trainset items (`dprec.topn.recommend_batch`)."""
        self._check_fitted()
        top = recommend_batch(self, [uid], n, exclude_rated)
        return list(zip(top["iid"].tolist(), top["est"].tolist()))

    def recommend_batch(self, uids, n: int = 10, exclude_rated: bool = True):
        """Top-`n` lists of many users, a DataFrame (`uid`, `rank`, `iid`, `est`):
        `dprec.topn.recommend_batch`."""
        self._check_fitted()
        return recommend_batch(self, uids, n, exclude_rated)

    def get_neighbors(self, iid: int, k: int) -> list[int]:
        """The `k` users (items, item-based) most similar to inner id `iid`, as inner
        ids, most similar first (ties: the lower id), among those of similarity at
        least `min_sim`.  Inner ids follow the order of the data: once called, the
        privacy report lists these answers as an output no guarantee covers."""
        self._check_fitted()
        user_based = self.sim_options_["user_based"]
        n = self.trainset.n_users if user_based else self.trainset.n_items
        iid = check_int(iid, "iid", minimum=0, maximum=n - 1)
        k = check_int(k, "k", minimum=1)
        if not self._neighbours_declared:
            self._accountant.declare_output("neighbour lists (get_neighbors, inner ids)",
                                            gap=_INNER_IDS)
            self._neighbours_declared = True
        if user_based:
            row = self._similarity_rows(np.array([iid]))
        else:
            row = self._item_sims[iid].toarray()
        return scores.neighbour_rows(row, np.array([iid]), self._params["min_sim"],
                                     k)[1].tolist()

    def compute_similarities(self):
        """Surprise's hook: ImplicitKNN keeps no `n × n` matrix.

        Raises
        ------
        TypeError
            Always: the similarities are computed a block of rows at a time
            (`get_neighbors` gives a row's nearest).
        """
        raise TypeError("ImplicitKNN keeps no n × n similarity matrix: it computes the rows "
                        "each query needs; get_neighbors(iid, k) gives a row's nearest")


def _left_slice(left: scores.LeftRows, rows: np.ndarray) -> scores.LeftRows:
    """The left entries of a contiguous range of rows, their pointer rebased."""
    ptr, indices, weights = left
    first, last = ptr[rows[0]], ptr[rows[-1] + 1]
    return ptr[rows[0]:rows[-1] + 2] - first, indices[first:last], weights[first:last]


def check_sim_options(sim_options) -> dict:
    """`ImplicitKNN`'s `sim_options` validated: a new dict with `name` and `user_based`
    (and a sketch's parameters).

    Raises
    ------
    TypeError
        For options that are neither a mapping nor a sketch backend.
    ValueError
        For an unknown name or option, a sketch item-based or with its own `threshold`.
    """
    if isinstance(sim_options, SketchBackend):
        sim_options = backend_options(sim_options)
    if not isinstance(sim_options, Mapping):
        raise TypeError(f"sim_options must be a dict or a sketch backend, got "
                        f"{type(sim_options).__name__}")
    options = dict(sim_options)
    names = scores.SIMILARITIES + SKETCHES
    name = options.get("name", "cosine")
    if not isinstance(name, str) or name.lower() not in names:
        raise UnknownSimilarityError(f"sim_options['name'] must be one of {names} for "
                                     f"ImplicitKNN, got {name!r}")
    options["name"] = name.lower()
    options["user_based"] = check_bool(options.get("user_based", True),
                                       "sim_options['user_based']")
    if options["name"] in SKETCHES:
        if not options["user_based"]:
            raise ValueError(f"sim_options['user_based'] must be True for the sketch "
                             f"{options['name']!r}: a sketch is a user's release of their own "
                             "set, and no user holds an item's set of users")
        if "threshold" in options:
            raise ValueError("sim_options['threshold'] is not read by ImplicitKNN: give "
                             "threshold= to the model (it decides the interactions of every "
                             "similarity)")
        sketch_backend(options)                     # validates every option
        return options
    unknown = sorted(set(options) - {"name", "user_based"})
    if unknown:
        raise ValueError(f"sim_options has unknown option(s) {unknown} for "
                         f"{options['name']!r}; allowed: ['name', 'user_based']")
    return options
