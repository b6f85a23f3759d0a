r"""Implicit-feedback kNN inside Surprise: scores are sums of similarities, for top-N.

Every stored (user, item) pair of the trainset is an *interaction* (with `threshold`,
only the ratings at least that high); ratings and play counts are otherwise ignored.
[`ImplicitKNN`][dprec.implicit.knn.ImplicitKNN] scores an item for a user as LensKit's
implicit kNN does (`feedback="implicit"`, lkpy 2025: `ItemKNNScorer`, `UserKNNScorer`):

* **item-based** (`sim_options={"user_based": False}`): with $s(i, j)$ the cosine (or
  Jaccard) of the two items' sets of users, the score of $i$ for $u$ is the sum of the
  $k$ largest $s(i, j) \ge$ `min_sim` over the items $j \ne i$ of $u$;
* **user-based** (default): with $s(u, v)$ the cosine or Jaccard of the users' sets, the
  sum of the $k$ largest $s(u, v) \ge$ `min_sim` over the users $v \ne u$ who hold $i$.

An item is scored when at least `min_nbrs` similarities are summed; otherwise the score is
impossible (Surprise's `was_impossible`).  Scores are over the model's item list (a public
catalogue `items=`, or the trainset's items; [`dprec.implicit.base`][]); rank them
([`recommend`][dprec.implicit.base.ImplicitModel.recommend],
[`dprec.evaluation.topn.recommend_batch`][], which leave out the user's trainset items) and score
the lists with [`dprec.evaluation.metrics`][] against held-out interactions.

**Private set sketches** (user-based): `sim_options={"name": "rr_minhash" |
"noisy_minhash", "epsilon": ε, ...}` (Aumüller, Bourgeat & Schmurr, SISAP 2020): each
user releases an ε-LDP MinHash sketch of their set once, at `fit`, and $s(u, v)$ is the
Jaccard estimated from the two sketches; the neighbours are chosen from those estimates
(post-processing).  But the score then sums the similarities of the neighbours *who hold
the item*, read from their raw sets, which the sketches' ε does not cover: the privacy
report says so (an output with a gap, the label *in part*).

**Released sets** (`set_epsilon`): each user releases their set through randomised
response on every item of the item list ([`dprec.implicit.set_reports`][]), at `set_epsilon` per
`set_difference` items (less the item list's selection without `items=`, below), and
the scores read only these reports.  The score of $i$ for
$u$ is the share of $u$'s neighbours $N_k(u)$ who hold $i$, estimated from their
debiased reports $\hat x_{vi}$ (unbiased for $1[i \in S_v]$) and weighted by
similarity, shrunk towards the share $P_i$ of all users who hold it (the reports'
item counts: the private popularity, free once released) by as much as the reports'
noise in it (`prior_sd`; [`dprec.implicit.set_reports.shrunk_shares`][]).  Who holds $i$ is known
only through noise, so the neighbours are fixed per user.  They are chosen by:

* `sim_options={"name": "reports"}` (the default with `set_epsilon`): $\hat s(u, v) =
  \sum_{i \in S_u} \hat x_{vi} / |S_u|$, the estimated share of $u$'s items that $v$
  holds, from $u$'s own set and $v$'s report.  No other release: $u$'s scores read
  $u$'s own raw set, so they are computed on $u$'s device and shown to $u$ alone;
* a private sketch (`"rr_minhash"`, `"noisy_minhash"`): the Jaccard estimated from the
  two sketches; each user releases a sketch too.

Everything else is post-processing of the releases, and a user's own list leaves out
their own items (shown to them alone), so every score is covered: per user,
`set_epsilon` (plus the sketch's ε and δ; basic composition, `Unit.SET_ITEM`).

**The lists with `set_epsilon`.**  Every user reports about every item of the item
list, so the list is fixed before anyone reports.  With `items=` (a public catalogue)
the model is local from end to end, δ = 0.  Without it the list is chosen first by
differentially private partition selection ([`dprec.implicit.base`][], the argument):
a curator counts the holders of each item, adds lattice Laplace noise of scale
$1/\varepsilon_s$, $\varepsilon_s$ = `selection_share` · `set_epsilon`, and lists the
items whose noisy count reaches a threshold set by `delta`; one item of a set moves one
count by 1, so the list is $(\varepsilon_s, \delta_s)$-DP per item of a set,
$\delta_s \le$ `delta` (the report states it), and the sole holder of an item shows
only through $\delta_s$.  The reports then spend the rest of `set_epsilon` over the
listed items, and the two compose to `set_epsilon` per item of a set, never more; an
unlisted item is in no report and is not scored (a user's own set, which chooses their
neighbours, and a private sketch read the listed items and the whole set respectively:
the sketch's guarantee does not depend on the list).  This one central step is stated
as a condition.  *Users*: who reports is public in the local model (every device sends a
report, a user without items that of an empty set), so the user list (the trainset's,
or `users=`, which adds users without items) is a condition, not a release.  Nobody is
outside the guarantee for the lists with `"reports"`; the sketches leave out the sets of
fewer than $\tau + \alpha$ items.  Without `set_epsilon` (exact similarities, sketches
alone) the lists are read from the data, as the report says: the sole holder of an item
and a user of one interaction are outside any guarantee.

See [Implicit feedback](../implicit.md) for the measured accuracy on Last.fm.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np
import scipy.sparse as sp
from surprise import AlgoBase

from ..accountant.ledger import Unit
from ..endtoend.rating_space import RatingSpace
from ..similarity import SketchBackend, UnknownSimilarityError, backend_options, sketch_backend
from ..utils._rng import (
    RandomStateLike,
    derive_generator,
    derive_seed,
    fit_entropy,
    is_seeded,
    stable_keys,
)
from ..utils._threads import map_blocks, thread_count
from ..utils._validation import check_bool, check_epsilon, check_int, check_real
from . import scores, set_reports
from .base import (
    SELECTION_DELTA,
    SELECTION_SHARE,
    TOO_FEW,
    ImplicitModel,
    LocalPlan,
    check_selection,
    declare_local_scope,
    local_plan,
    select_local,
)

__all__ = ["PRIVATE_SKETCHES", "REPORTS", "SKETCHES", "TOO_FEW", "ImplicitKNN",
           "check_sim_options"]

#: the private sketches of sets ImplicitKNN takes (`sim_options["name"]`)
PRIVATE_SKETCHES = ("rr_minhash", "noisy_minhash")
#: every sketch of sets it takes: the private ones and the plain MinHash
SKETCHES = ("minhash", *PRIVATE_SKETCHES)
#: the similarity of a user's own set to the others' released sets (with `set_epsilon`)
REPORTS = "reports"
# what the privacy report says of the outputs
_RAW = "computed from the raw interactions, without noise"
_RAW_SETS = ("each score sums the similarities of the neighbours who hold the item, read "
             "from their raw sets: the neighbours are chosen from the sketches "
             "(post-processing), the raw sets are not covered by them")
_INNER_IDS = "inner ids follow the order of the data (one removal renumbers them)"
_OWN_SET = ("a user's own list leaves out the items of their own set: shown to them alone "
            "(their device), not charged")
_OWN_NEIGHBOURS = ("a user's scores and list read their own raw set (it chooses their "
                   "neighbours, sim_options 'reports', and their own items are left out): "
                   "computed on their device and shown to them alone, not charged")


class ImplicitKNN(ImplicitModel):
    r"""Implicit-feedback kNN (LensKit's sums of similarities) as a Surprise algorithm.

    See the module docstring for the scores, the private sketches and their privacy.
    Parameters are stored as given and validated by `fit` (scikit-learn's convention).

    Parameters
    ----------
    k : int, default 20
        How many similarities each score sums at most (LensKit's `max_nbrs`); with
        `set_epsilon`, how many neighbours each user has at most.  `>= 1`.
    min_nbrs : int, default 1
        Fewer summed similarities (with `set_epsilon`: fewer neighbours) make the score
        impossible, or, with `prior_sd`, leave the private popularity alone;
        `1 <= min_nbrs <= k`.
    sim_options : dict or SketchBackend, optional
        `name`: `"cosine"` (default) or `"jaccard"` of the sets, or a sketch of sets
        (`"rr_minhash"`, `"noisy_minhash"`, or the non-private `"minhash"`) with its
        parameters (`epsilon`, `width`, `B`, `tau`, `delta`, `set_difference`,
        `small_users`, `hash_seed`; [`dprec.similarity.RRMinHash`][]), or, with
        `set_epsilon`, `"reports"` (the default then; its option `set_difference`,
        default 1); `user_based` (default True; False for item-based, exact
        similarities only).  Not modified.
    min_sim : float, default 1e-6
        The smallest similarity that counts (LensKit's), `> 0`.
    threshold : float, optional
        Only the ratings `>= threshold` are interactions (default: every stored pair).
    set_epsilon : float, optional
        Each user's ε per `set_difference` items of their set: without `items=` the item
        list's selection and the reports compose to it (see the module docstring), and
        the scores read only the releases; default None, the neighbours' raw sets.
    prior_sd : float or None, default 0.05
        With `set_epsilon`: the prior standard deviation of the neighbours' share of an
        item around the share of all users, `> 0` (checked even without `set_epsilon`,
        where it is unused; chosen on synthetic sets, see
        [Implicit feedback](../implicit.md)); None for the neighbours' share alone.
    selection_share : float, default 0.1
        With `set_epsilon` and without `items=`: the share of `set_epsilon`, in (0, 1),
        that chooses the item list by partition selection (the reports get the rest).
    delta : float, default 1e-5
        With `set_epsilon` and without `items=`: the selection's δ target, in (0, 1) (the
        report states the δ its threshold adds, at most this).  Unused otherwise.
    users, items : sequence of raw ids, optional
        Public catalogues: who releases, and the items scored and reported (validated at
        `fit`; every interaction must be within them).  Default: the trainset's users;
        with `set_epsilon` the items chosen by partition selection, else the trainset's.
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
    item_list_ : tuple
        The raw ids of the items scored (the columns of `score_rows`), sorted.
    sketch_release_ : SketchRelease or None
        What the users released through the sketch backend.
    reports_ : scipy.sparse.csr_matrix or None
        With `set_epsilon`: the listed users' reports (users × `item_list_`, users
        sorted by raw id), 1 where reported.
    report_epsilon_ : float or None
        With `set_epsilon`: the reports' ε per `set_difference` items, `set_epsilon`
        less the item list's selection (all of it with `items=`).

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
                 set_epsilon: float | None = None, prior_sd: float | None = 0.05,
                 selection_share: float = SELECTION_SHARE, delta: float = SELECTION_DELTA,
                 users: Iterable | None = None, items: Iterable | None = None,
                 random_state: RandomStateLike = None,
                 budget: tuple[float, float] | None = None) -> None:
        AlgoBase.__init__(self)
        self.k, self.min_nbrs = k, min_nbrs
        self.sim_options = {} if sim_options is None else sim_options
        self.min_sim, self.threshold, self.set_epsilon = min_sim, threshold, set_epsilon
        self.prior_sd, self.users, self.items = prior_sd, users, items
        self.selection_share, self.delta = selection_share, delta
        self.random_state, self.budget = random_state, budget

    # ------------------------------------------------------------ parameters
    def _checked(self) -> dict:
        """The parameters validated (naming the first invalid one)."""
        k = check_int(self.k, "k", minimum=1)
        checked = {"k": k,
                   # checked whether used or not (only with set_epsilon): a bad value is
                   # refused rather than ignored
                   "prior_sd": (None if self.prior_sd is None else check_real(
                       self.prior_sd, "prior_sd", low=0.0, low_inclusive=False)),
                   "min_nbrs": check_int(self.min_nbrs, "min_nbrs", minimum=1, maximum=k),
                   "min_sim": check_real(self.min_sim, "min_sim", low=0.0,
                                         low_inclusive=False),
                   "threshold": (None if self.threshold is None
                                 else check_real(self.threshold, "threshold")),
                   "sim_options": check_sim_options(
                       self.sim_options, REPORTS if self.set_epsilon is not None else "cosine")}
        name = checked["sim_options"]["name"]
        if self.set_epsilon is not None:
            if name not in (*PRIVATE_SKETCHES, REPORTS):
                raise ValueError(f"set_epsilon makes the scores read the users' released "
                                 f"sets, but the similarity {name!r} reads their raw sets: "
                                 "leave out sim_options['name'] (the released sets choose "
                                 "the neighbours, 'reports'), give a private sketch "
                                 "('rr_minhash' or 'noisy_minhash' with its 'epsilon'), or "
                                 "drop set_epsilon")
            checked["set_epsilon"] = check_epsilon(self.set_epsilon, "set_epsilon")
            checked["selection_share"], checked["delta"] = check_selection(
                self.selection_share, self.delta, self.items is None)
        elif name == REPORTS:
            raise ValueError("sim_options name 'reports' chooses the neighbours from the "
                             "users' released sets: give set_epsilon (their ε per item of a "
                             "set)")
        else:
            checked["set_epsilon"] = None
        self._checked_budget()
        return checked

    # ------------------------------------------------------------ fit
    def fit(self, trainset) -> ImplicitKNN:
        """Read the interactions of `trainset` over the lists, compute the item
        similarities (item-based) or make the users' releases (sketches, reports), and
        open the privacy report.  A fit that fails (e.g. refused by the `budget`) leaves
        the model as it was."""
        checked = self._checked()
        options, user_based = checked["sim_options"], checked["sim_options"]["user_based"]
        space = RatingSpace.build(trainset, self.users, self.items)
        X = scores.interactions(space.matrix, checked["threshold"])
        # what the releases spend, a public function of the parameters: refused past the
        # budget before any randomness is drawn (in the ledger's order)
        sketch = sketch_backend(options).privacy() if options["name"] in SKETCHES else None
        plan = None
        if checked["set_epsilon"] is not None:
            alpha = (sketch_backend(options).set_difference if sketch is not None
                     else options["set_difference"])
            plan = local_plan(checked["set_epsilon"], checked["selection_share"],
                              checked["delta"], Unit.SET_ITEM, not space.items.given, alpha)
        spent = [] if plan is None or plan.selection is None else [plan.selection]
        spent += [] if sketch is None else [sketch]
        spent = [(entry.epsilon, entry.delta) for entry in spent]
        if plan is not None:
            spent.append((plan.report_epsilon, 0.0))
        self._refuse_past_budget(spent, Unit.SET_ITEM)
        entropy = fit_entropy(self.random_state)
        backend = sketches = reports = release = item_sims = prior = None
        if options["name"] in SKETCHES:
            backend = sketch_backend(options, derive_generator(entropy, "similarity"))
            try:
                sketches = backend.release(X, stable_keys(space.items.ids))
            except ValueError as error:          # e.g. tau: named as the user gave it
                empty = "" if X.nnz or checked["threshold"] is None else (
                    f" (threshold = {checked['threshold']:g} keeps no rating)")
                raise ValueError(f"sim_options for {options['name']!r}: {error}{empty}"
                                 ) from None
            release = backend.release_
            if checked["set_epsilon"] is not None:     # a private sketch (`_checked`)
                checked["set_difference"] = backend.set_difference
        elif options["name"] == REPORTS:
            checked["set_difference"] = options["set_difference"]
        elif not user_based:
            item_sims = scores.item_similarities(X, options["name"], checked["min_sim"])
        if plan is not None:           # the list first (without items=), then the reports
            space, X = select_local(space, X, plan, derive_generator(entropy, "item selection"))
            epsilon, alpha = plan.report_epsilon, checked["set_difference"]
            checked["report_epsilon"] = epsilon
            reports = set_reports.report_sets(X, epsilon, alpha,
                                              derive_seed(entropy, "set reports"))
            prior = set_reports.item_counts(reports, epsilon, alpha) / max(X.shape[0], 1)
        AlgoBase.fit(self, trainset)
        self._set_space(trainset, space)
        self.sim_options_ = options
        self._params, self._X, self._item_sims, self._prior = checked, X, item_sims, prior
        self._backend, self._sketches = backend, sketches
        self.sketch_release_, self.reports_ = release, reports
        self.report_epsilon_ = None if plan is None else plan.report_epsilon
        self._dense = None if reports is None else set_reports.dense_reports(reports)
        self._inner_users = np.full(X.shape[0], -1, dtype=np.int64)
        self._inner_users[self._user_rows] = np.arange(trainset.n_users)
        self._neighbours_declared = False
        self._accountant = self._account(space, checked, release, plan)
        return self

    def _account(self, space: RatingSpace, params: dict, release, plan: LocalPlan | None):
        """The privacy report: the releases charged once to every listed user (the item
        list's selection first), the outputs, and (released sets) the lists' scope."""
        name = params["sim_options"]["name"]
        based = "user" if params["sim_options"]["user_based"] else "item"
        extra = "" if plan is None else f", set_epsilon={params['set_epsilon']:g}"
        accountant = self._open_accountant(
            space.users.ids, f"ImplicitKNN(k={params['k']}, similarity {name!r}, "
                             f"{based}-based{extra})", is_seeded(self.random_state))
        selection = ([] if plan is None or plan.selection is None
                     else [accountant.register(plan.selection)])
        sketch = (release.charge(accountant) if release is not None
                  and np.isfinite(release.entry.epsilon) else None)
        output = "scores and recommendations (estimate, test, predict, recommend)"
        if plan is None:
            accountant.declare_output(output, [] if sketch is None else [sketch],
                                      _RAW if sketch is None else _RAW_SETS)
            return accountant
        entry = set_reports.set_report_entry(plan.report_epsilon, params["set_difference"])
        index = accountant.register(entry)
        everyone = np.ones(accountant.n_users, dtype=np.int64)
        accountant.charge({n: everyone for n in [*selection, index]})
        accountant.declare_output(output, [*selection, *([] if sketch is None else [sketch]),
                                           index])
        accountant.notes.append(_OWN_NEIGHBOURS if name == REPORTS else _OWN_SET)
        declare_local_scope(space, accountant)
        return accountant

    # ------------------------------------------------------------ scores
    def _similarity_rows(self, rows: np.ndarray) -> np.ndarray:
        """The similarity rows of the listed users `rows` (exact, estimated from the
        sketches, or from their own sets and the reports)."""
        if self._backend is not None:
            return self._backend.estimate_rows(self._sketches, rows)
        if self.sim_options_["name"] == REPORTS:
            own = self._X[rows]
            params = self._params
            common = set_reports.overlaps(own, self.reports_, params["report_epsilon"],
                                          params["set_difference"], self._dense)
            sizes = np.maximum(np.diff(own.indptr), 1).astype(np.float64)
            return common / sizes[:, None]
        return scores.user_similarity_rows(self._X, rows, self.sim_options_["name"])

    def _score_block(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The scores of the listed users `rows` and where they are possible, both
        `(len(rows), n_listed_items)`."""
        params = self._params
        if self._item_sims is not None:
            block = self._X[rows]
            left = (block.indptr, block.indices, block.data)
            right = self._item_sims
        else:
            sims = self._similarity_rows(rows)
            if self.reports_ is not None:
                return self._released_scores(sims, rows)
            left, right = scores.neighbour_rows(sims, rows, params["min_sim"]), self._X
        ordered = self._item_sims is None      # neighbours by descending similarity, 0/1 sets
        chunks = [c for c in np.array_split(np.arange(len(rows)), thread_count()) if len(c)]
        k = min(params["k"], self._X.shape[0] + self._X.shape[1])   # k past them: all
        parts = map_blocks(lambda part: scores.top_k_sums(_left_slice(left, part), right,
                                                          k, ordered), chunks)
        if not parts:
            n_items = self._X.shape[1]
            return np.zeros((0, n_items)), np.zeros((0, n_items), dtype=bool)
        counts = np.vstack([p[1] for p in parts])
        return np.vstack([p[0] for p in parts]), counts >= params["min_nbrs"]

    def _released_scores(self, sims: np.ndarray, rows: np.ndarray):
        """The neighbours' share of each item, from the reports, shrunk towards the
        share of all users (`set_reports.shrunk_shares`)."""
        params = self._params
        ptr, columns, weights = scores.neighbour_rows(sims, rows, params["min_sim"],
                                                      min(params["k"], self._X.shape[0]))
        enough = np.diff(ptr) >= params["min_nbrs"]
        weights = weights * np.repeat(enough, np.diff(ptr))     # too few: no neighbours
        W = sp.csr_matrix((weights, columns, ptr), shape=(len(rows), self._X.shape[0]))
        out = set_reports.shrunk_shares(W, self.reports_, self._prior,
                                        params["report_epsilon"], params["set_difference"],
                                        params["prior_sd"], self._dense)
        possible = np.broadcast_to((enough | (params["prior_sd"] is not None))[:, None],
                                   out.shape).copy()
        return out, possible

    def get_neighbors(self, iid: int, k: int) -> list[int]:
        """The `k` users (items, item-based) most similar to inner id `iid`, as inner
        ids, most similar first (ties: the earlier in the sorted list), among the
        trainset's of similarity at least `min_sim`.  Inner ids follow the order of the
        data: once called, the privacy report lists these answers as an output no
        guarantee covers."""
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
            row, inner = np.array([self._user_rows[iid]]), self._inner_users
            similarities = self._similarity_rows(row)
        else:
            row = np.array([self._item_columns[iid]])
            inner = np.full(self._X.shape[1], -1, dtype=np.int64)
            inner[self._item_columns] = np.arange(self.trainset.n_items)
            similarities = self._item_sims[row[0]].toarray()
        neighbours = inner[scores.neighbour_rows(similarities, row, self._params["min_sim"])[1]]
        return neighbours[neighbours >= 0][:k].tolist()

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


def check_sim_options(sim_options, default: str = "cosine") -> dict:
    """`ImplicitKNN`'s `sim_options` validated: a new dict with `name` (`default` when
    not given) and `user_based` (and a sketch's parameters, or the reports'
    `set_difference`).

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
    names = (*scores.SIMILARITIES, *SKETCHES, REPORTS)
    name = options.get("name", default)
    if not isinstance(name, str) or name.lower() not in names:
        raise UnknownSimilarityError(f"sim_options['name'] must be one of {names} for "
                                     f"ImplicitKNN, got {name!r}")
    options["name"] = name.lower()
    options["user_based"] = check_bool(options.get("user_based", True),
                                       "sim_options['user_based']")
    if options["name"] in (*SKETCHES, REPORTS):
        if not options["user_based"]:
            raise ValueError(f"sim_options['user_based'] must be True for "
                             f"{options['name']!r}: a user releases their own set (or its "
                             "sketch), and no user holds an item's set of users")
        if options.pop("threshold", None) is not None:      # None: a backend's default
            raise ValueError("sim_options['threshold'] is not read by ImplicitKNN: give "
                             "threshold= to the model (it decides the interactions of every "
                             "similarity)")
    if options["name"] in SKETCHES:
        sketch_backend(options)                     # validates every option
        return options
    allowed = ["name", "user_based"] + (["set_difference"] if options["name"] == REPORTS
                                        else [])
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise ValueError(f"sim_options has unknown option(s) {unknown} for "
                         f"{options['name']!r}; allowed: {allowed}")
    if options["name"] == REPORTS:
        options["set_difference"] = check_int(options.get("set_difference", 1),
                                              "sim_options['set_difference']", minimum=1)
    return options
