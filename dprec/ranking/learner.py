r"""``MallowsRanker``: a pairwise matrix-factorisation ranker on privatised orders.

Xu, Sun & Cheng (2023), *Ranking Differential Privacy*, §5.  Each user's
training ratings become an order (ties broken
uniformly at random), privatised once with ε-ranking DP
([`mallows_privatize`][] or
[`laplace_privatize`][]), each user with their own
$\varepsilon_u$ if wanted.  A pairwise logistic model

$$
f(u, i) = b_i + p_u^\top q_i,\qquad
\min \sum_{(u, i \succ j)} \log\big(1 + e^{-(f(u,i) - f(u,j))}\big)
+ \lambda\big(\|p_u\|^2 + \|q_i\|^2 + \|q_j\|^2 + b_i^2 + b_j^2\big)
$$

is then fitted by mini-batch SGD on pairs sampled from the privatised orders
only (post-processing: the model has the privacy of the orders).

What is protected: the order of a user's items (ε-ranking DP, one
transposition = swapping the ratings of two of the user's items; the random
tie breaking couples so that such a swap is one transposition of the order).
Not protected, and used: *which* items each user rated and the histogram of
their ratings (both invariant under a transposition).

Surprise needs ratings, so [`MallowsRanker.estimate`][] maps a score to the
rating scale by quantiles: the score's position among the user's training
scores (a smoothed empirical CDF, $F_u$) is read on the user's training
rating distribution (ratings spread uniformly over their half-steps, so the
map is strictly increasing and the estimates keep the ranking, without ties).

See [Ranking differential privacy](../ranking.md) for the formulas and the paper.
"""

from __future__ import annotations

import copy
import math
import numbers
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
from scipy.special import expit
from surprise import AlgoBase, PredictionImpossible
from surprise.prediction_algorithms.predictions import Prediction

from ..accountant.ledger import LedgerEntry, PrivacyAccountant, Status, Unit
from ..accountant.private_model import PrivateModel
from ..evaluation.topn import Recommender
from ..knn.parameters import check_ids
from ..utils._arrays import segment_ids, segment_positions
from ..utils._memory import check_memory
from ..utils._ratings import check_ratings, check_unique_pairs
from ..utils._rng import RandomStateLike, check_random_state, is_seeded, validate_random_state
from ..utils._surprise import UNKNOWN, inner_ids, predictions, raw_ids
from ..utils._validation import (
    check_bool,
    check_choice,
    check_epsilon,
    check_int,
    check_real,
    check_within,
)
from .mallows import (
    CALIBRATIONS,
    LAPLACE_MAX_EPSILON,
    MALLOWS_MAX_EPSILON,
    laplace_privatize,
    mallows_privatize,
)
from .pairwise import Segments, epoch_bytes, sample_pairs, sgd_step

__all__ = ["MECHANISMS", "MallowsRanker"]

#: Names accepted by ``mechanism``.
MECHANISMS: tuple[str, ...] = ("mallows", "laplace")
_ARGUMENT = ("each user's order privatised once (exact enumeration bounds the loss of a "
             "swap); the model is fitted on the privatised orders only, and a prediction reads "
             "the user's own rating histogram, which a swap does not change")
#: Largest ``n_factors`` (the factors are n_users × n_factors and n_items × n_factors).
MAX_FACTORS = 1 << 16
#: the most pairs one epoch draws (`pairs_per_rating` × the ratings in orders of two or
#: more): they are counted exactly in float64 and drawn at once
MAX_EPOCH_PAIRS = 2.0**53
#: Largest number of (query × training score) cells evaluated at once.
_BLOCK_CELLS = 1 << 22

EpsilonSpec = float | None | Mapping | Callable


# ------------------------------------------------------------ helpers
def _check_user_epsilon(value, name: str) -> float:
    """One user's ε: ``> 0``; ``None`` or ``inf`` mean no privacy (returned as inf)."""
    if value is None:
        return math.inf
    return check_epsilon(value, name, allow_inf=True)


def _check_epsilon_spec(epsilon) -> None:
    if epsilon is None or callable(epsilon):
        return
    if isinstance(epsilon, Mapping):
        for uid, value in epsilon.items():
            _check_user_epsilon(value, f"epsilon[{uid!r}]")
        return
    if isinstance(epsilon, numbers.Real) and not isinstance(epsilon, bool):
        check_epsilon(epsilon, "epsilon", allow_inf=True)
        return
    raise TypeError("epsilon must be a number, None, a mapping {raw user id: epsilon} or a "
                    f"callable(raw user id) -> epsilon, got {type(epsilon).__name__}")


def _rating_step(ratings: np.ndarray) -> float:
    """Smallest gap between distinct rating values (1 for MovieLens)."""
    values = np.unique(ratings)
    return float(np.diff(values).min()) if len(values) > 1 else 0.0


# ------------------------------------------------------------ the algorithm
class MallowsRanker(Recommender, PrivateModel, AlgoBase):
    r"""Pairwise logistic MF trained on ε-ranking-DP orders (Xu, Sun & Cheng 2023).

    Parameters
    ----------
    epsilon : float, None, mapping or callable, default 1.0
        Privacy budget of each user's order (ε-ranking DP: neighbouring
        orders differ by one transposition).  A number ``> 0`` for every
        user; ``None`` (or ``inf``) for no privacy; a mapping
        ``{raw user id: ε}`` or a callable ``raw user id -> ε`` for
        heterogeneous (per-user) budgets, ``None``/``inf`` values meaning that
        user is not protected.  A mapping must cover every training user.
        (Surprise's ``GridSearchCV`` mangles dict-valued parameters: grid
        over numbers or callables.)
    mechanism : {"mallows", "laplace"}, default "mallows"
        Privatizer of the orders.
    calibration : {"tight", "conservative"}, default "tight"
        Mallows dispersion θ = ε/(2m−3) or ε/(2m) (see
        `dprec.ranking.mallows`).
    n_factors : int, default 32
        Dimension of $p_u, q_i$ (at most ``MAX_FACTORS`` = 65536).
    n_epochs : int, default 20
        Passes; each samples ``pairs_per_rating × n_ratings`` pairs.
    lr : float, default 0.05
        SGD step size of the first epoch, decayed linearly towards 0.  A step so large
        that the model diverges (its factors or scores overflow) is refused at `fit`.
    reg : float, default 0.05
        L2 penalty $\lambda$.
    batch_size : int, default 1024
        Pairs per SGD step.
    pairs_per_rating : float, default 2.0
        Pairs sampled per epoch, per training rating (`> 0`, at most `MAX_EPOCH_PAIRS`
        $= 2^{53}$ pairs per epoch in all, checked at `fit`; an epoch draws its pairs at
        once, and an epoch past the available memory, `epoch_bytes`, raises
        `MemoryError`).  The defaults were tuned on one 80/20 split of MovieLens 100k
        (pooled pairwise accuracy 0.72 without privacy, SVD 0.71 on the same split).
    random_state : None, int, RandomState or Generator
        Stored as given; turned into a Generator in [`fit`][] (tie
        breaking, privatisation, initialisation, pair sampling).  An int seeds
        reproducible noise, for experiments: the privacy report is then void
        (``None`` or a Generator for the guarantee).
    verbose : bool, default False
        Print the loss per epoch.
    budget : (float, float), optional
        A per-user `(ε, δ)` budget for a swap in their ranking
        ([`PrivateModel`][dprec.accountant.private_model.PrivateModel]): a fit that would privatise
        some user's order with an ε past it (a per-user ε, or `None`/`inf`, included) is
        refused before any noise is drawn (`BudgetExceededError`, a `ValueError`), the
        model left as it was.

    Attributes
    ----------
    user_factors_, item_factors_ : ndarray
        $p_u$ (n_users × n_factors) and $q_i$.
    item_bias_ : ndarray
        $b_i$.
    user_epsilon_ : ndarray
        ε of each user (inner id order; inf = not protected).
    orders_ : list of ndarray
        The privatised orders (inner item ids, most preferred first).
    """

    def __init__(self, *, epsilon: EpsilonSpec = 1.0, mechanism: str = "mallows",
                 calibration: str = "tight", n_factors: int = 32, n_epochs: int = 20,
                 lr: float = 0.05, reg: float = 0.05, batch_size: int = 1024,
                 pairs_per_rating: float = 2.0, random_state: RandomStateLike = None,
                 verbose: bool = False, budget: tuple[float, float] | None = None) -> None:
        AlgoBase.__init__(self)
        self.epsilon = epsilon
        self.mechanism = mechanism
        self.calibration = calibration
        self.n_factors = n_factors
        self.n_epochs = n_epochs
        self.lr = lr
        self.reg = reg
        self.batch_size = batch_size
        self.pairs_per_rating = pairs_per_rating
        self.random_state = random_state
        self.verbose = verbose
        self.budget = budget

    def check_params(self) -> MallowsRanker:
        """Validate the parameters (as ``fit`` does first; scikit-learn's convention:
        the constructor only stores them).  Returns ``self``.

        Raises
        ------
        ValueError, TypeError
            Naming the first invalid parameter.
        """
        _check_epsilon_spec(self.epsilon)
        check_choice(self.mechanism, "mechanism", MECHANISMS)
        check_choice(self.calibration, "calibration", CALIBRATIONS)
        self._sizes()
        check_real(self.lr, "lr", low=0.0, low_inclusive=False)
        check_real(self.reg, "reg", low=0.0)
        check_real(self.pairs_per_rating, "pairs_per_rating", low=0.0, low_inclusive=False)
        validate_random_state(self.random_state)
        check_bool(self.verbose, "verbose")
        self._checked_budget()
        return self

    def _sizes(self) -> tuple[int, int, int]:
        """``(n_factors, n_epochs, batch_size)`` checked, as the plain ints the fit reads (a
        numpy integer would overflow in its arithmetic)."""
        return (check_int(self.n_factors, "n_factors", minimum=1, maximum=MAX_FACTORS),
                check_int(self.n_epochs, "n_epochs", minimum=0),
                check_int(self.batch_size, "batch_size", minimum=1))

    # ------------------------------------------------------------ fit
    def fit(self, trainset) -> MallowsRanker:
        """Privatise every user's order, then fit the pairwise model; refused, before any
        noise, where some user's ε is past the `budget`."""
        self.check_params()
        user_epsilon = self._user_epsilons(trainset)
        self._refuse_past_budget([(float(np.max(user_epsilon, initial=0.0)), 0.0)],
                                 Unit.RANKING_SWAP)        # one privatisation per user
        users, items, ratings = _rating_arrays(trainset)
        shadow = copy.copy(self)     # all or nothing: swapped in once the fit succeeds
        shadow._fit(trainset, users, items, ratings, user_epsilon)
        self.__dict__ = shadow.__dict__
        return self

    def _fit(self, trainset, users: np.ndarray, items: np.ndarray, ratings: np.ndarray,
             user_epsilon: np.ndarray) -> None:
        AlgoBase.fit(self, trainset)
        rng = check_random_state(self.random_state)
        self.user_epsilon_ = user_epsilon
        order = np.lexsort((rng.random(len(items)), -ratings, users))
        segments = Segments.from_sorted_owner(users[order], trainset.n_users)
        true_orders = np.split(items[order], np.cumsum(segments.count)[:-1])
        privatize = (mallows_privatize if self.mechanism.lower() == "mallows"
                     else laplace_privatize)
        kwargs = {"calibration": self.calibration} if privatize is mallows_privatize else {}
        self.orders_ = privatize(true_orders, self.user_epsilon_, rng, **kwargs)
        with np.errstate(over="ignore", invalid="ignore"):   # a divergence is refused below
            self._fit_factors(rng, np.concatenate(self.orders_), segments)
            self._fit_rating_map(users[order], items[order], ratings[order], segments)
        fitted = (self.user_factors_, self.item_factors_, self.item_bias_, self._train_scores,
                  self._bandwidth)
        if not all(np.isfinite(array).all() for array in fitted):
            raise ValueError(f"lr={self.lr!r}: the pairwise model diverged (its factors or "
                             f"scores overflowed) with reg={self.reg!r}; use a smaller lr "
                             "(default 0.05), or a smaller reg (default 0.05: each step "
                             "shrinks a factor by lr × reg, which must stay well below 1)")
        self._accountant = self._ledger()

    def _user_epsilons(self, trainset) -> np.ndarray:
        spec = self.epsilon
        n = trainset.n_users
        if spec is None or isinstance(spec, numbers.Real):
            return np.full(n, _check_user_epsilon(spec, "epsilon"))
        raw = raw_ids(trainset)
        if isinstance(spec, Mapping):
            missing = [r for r in raw if r not in spec]
            if missing:
                raise ValueError(f"epsilon: the mapping has no budget for {len(missing)} "
                                 f"training users (e.g. {missing[0]!r})")
            values = [spec[r] for r in raw]
        else:
            values = [spec(r) for r in raw]
        return np.array([_check_user_epsilon(v, f"epsilon({r!r})")
                         for r, v in zip(raw, values, strict=True)], dtype=np.float64)

    def _fit_factors(self, rng: np.random.Generator, flat: np.ndarray,
                     segments: Segments) -> None:
        """Mini-batch SGD on pairs ``(winner ≻ loser)`` drawn from the orders."""
        n_users, n_items = self.trainset.n_users, self.trainset.n_items
        k, n_epochs, batch_size = self._sizes()
        P = rng.normal(0.0, 0.1, (n_users, k))
        Q = rng.normal(0.0, 0.1, (n_items, k))
        b = np.zeros(n_items)
        lr, reg = float(self.lr), float(self.reg)
        anchors = np.flatnonzero(np.repeat(segments.count, segments.count) >= 2)
        owner = segment_ids(segments.count)
        n_pairs = 0
        if len(anchors):
            check_within(float(self.pairs_per_rating), "pairs_per_rating",
                         high=MAX_EPOCH_PAIRS / len(anchors),
                         why=f"2^53 pairs per epoch over the {len(anchors)} ratings in orders "
                             "of two or more items: an epoch's pairs are counted exactly in "
                             "float64 and drawn at once")
            n_pairs = int(math.ceil(self.pairs_per_rating * len(anchors)))
            if n_epochs:
                check_memory(epoch_bytes(n_pairs, batch_size, k),
                             f"an epoch's {n_pairs:,} pairs (pairs_per_rating="
                             f"{self.pairs_per_rating!r} × {len(anchors):,} ratings), in "
                             f"steps of {min(batch_size, n_pairs):,} pairs × {k} factors,",
                             "use a smaller pairs_per_rating (default 2.0) or batch_size "
                             "(default 1024)")
        for epoch in range(n_epochs):
            step = lr * (1.0 - epoch / n_epochs)  # linear decay to 0
            u, win, lose = sample_pairs(rng, anchors, owner, segments, flat, n_pairs)
            loss = 0.0
            for lo in range(0, n_pairs, batch_size):
                sl = slice(lo, lo + batch_size)
                loss += sgd_step(P, Q, b, u[sl], win[sl], lose[sl], step, reg)
            if self.verbose:
                print(f"epoch {epoch + 1}/{n_epochs}: mean pair loss "
                      f"{loss / max(n_pairs, 1):.4f}")
            del u, win, lose                 # before the next draw (`epoch_bytes`)
        self.user_factors_, self.item_factors_, self.item_bias_ = P, Q, b

    def _fit_rating_map(self, users: np.ndarray, items: np.ndarray, ratings: np.ndarray,
                        segments: Segments) -> None:
        """Sorted training scores, kernel bandwidths and rating quantiles per user."""
        scores = self._scores(users, items)
        order = np.lexsort((scores, users))
        self._train_scores = scores[order]
        self._score_segments = segments
        count = np.maximum(segments.count, 1)
        mean = np.bincount(users, scores, minlength=len(count)) / count
        var = np.bincount(users, (scores - mean[users]) ** 2, minlength=len(count)) / count
        spread = np.sqrt(var)
        floor = 1e-3 * max(float(scores.std()), 1e-12)
        # Silverman-type rule for the logistic kernel (sd = pi h / sqrt 3)
        self._bandwidth = np.maximum(0.5 * spread * count ** -0.2, floor)
        self._quantiles = _RatingQuantiles.build(users, ratings, len(count),
                                                 self.trainset.rating_scale)

    # ------------------------------------------------------------ predict
    def _scores(self, users: np.ndarray, items: np.ndarray) -> np.ndarray:
        return self.item_bias_[items] + np.einsum(
            "ij,ij->i", self.user_factors_[users], self.item_factors_[items])

    def _estimate_batch(self, users: np.ndarray, items: np.ndarray) -> np.ndarray:
        """Rating-scale estimates for known inner ids (same code for one or many)."""
        scores = self._scores(users, items)
        below, above = _kernel_cdf(scores, users, self._train_scores, self._score_segments,
                                   self._bandwidth)
        return self._quantiles(users, below, above)

    def score(self, uid, iid) -> float:
        r"""The raw ranking score $b_i + p_u^\top q_i$ of raw ids."""
        self._check_fitted()
        u = self.trainset.to_inner_uid(uid)
        i = self.trainset.to_inner_iid(iid)
        return float(self._scores(np.array([u]), np.array([i]))[0])

    def estimate(self, u, i) -> float:
        """Estimate from inner ids (the quantile-mapped score; same as [`test`][])."""
        self._check_fitted()
        if not (self.trainset.knows_user(u) and self.trainset.knows_item(i)):
            raise PredictionImpossible(UNKNOWN)
        return float(self._estimate_batch(np.array([u]), np.array([i]))[0])

    def score_rows(self, users) -> tuple[np.ndarray, np.ndarray]:
        """The ranking score of every item (inner order) for each of ``users`` (inner
        ids), and where a top-N list may hold it (everywhere): both ``(len(users),
        n_items)``.  What ``recommend_batch`` ranks: the estimates are a strictly
        increasing map of it per user, which ties near the scale's ends where it does not.
        A list is one of the "scores, predictions and rankings" the report covers."""
        self._check_fitted()
        users = check_ids(users, "users", self.trainset.n_users)
        n_items = self.trainset.n_items
        scores = self.item_bias_[None, :] + self.user_factors_[users] @ self.item_factors_.T
        return scores, np.ones((len(users), n_items), dtype=bool)

    def _listed_estimates(self, top):
        """The lists' ``est``: the estimates ``test`` answers (ranked by the score)."""
        users = np.array([self.trainset.to_inner_uid(u) for u in top["uid"]], np.int64)
        items = np.array([self.trainset.to_inner_iid(i) for i in top["iid"]], np.int64)
        top["est"] = self._estimate_batch(users, items) if len(top) else top["est"]
        return top

    def test(self, testset, verbose: bool = False) -> list[Prediction]:
        """Predict a whole testset at once; equal to ``predict`` one by one."""
        self._check_fitted()
        uids, iids, r_uis, users, items = inner_ids(self.trainset, testset)
        if not uids:
            return []
        known = (users >= 0) & (items >= 0)
        est = np.full(len(uids), self.default_prediction(), dtype=np.float64)
        if known.any():
            est[known] = self._estimate_batch(users[known], items[known])
        details = ({"was_impossible": False} if ok
                   else {"was_impossible": True, "reason": UNKNOWN} for ok in known.tolist())
        return predictions(self.trainset, uids, iids, r_uis, est, details, verbose)

    def _ledger(self) -> PrivacyAccountant:
        """The accountant (`privacy_report`): each user's order was privatised once, with
        their ε.

        One entry per distinct ε, charged to the users who have it (parallel
        composition across users: each user's guarantee is their own ε).  It
        holds for everything the model releases: the factors are fitted on
        the privatised orders only, and a prediction for user ``u`` also reads
        ``u``'s own rating histogram and rated items, which a swap of two of
        ``u``'s items does not change.  Users with ``ε = inf`` are not protected.

        The entries are void with an int ``random_state`` (seeded noise, reproducible by
        anyone who knows or guesses the seed: ``PrivacyAccountant(seeded=True)``), and
        above the ε at which the privatizer can no longer draw every order
        (``LAPLACE_MAX_EPSILON`` for Laplace, ``MALLOWS_MAX_EPSILON`` for Mallows).
        """
        accountant = self._open_accountant(
            raw_ids(self.trainset), f"MallowsRanker(mechanism={self.mechanism.lower()!r})",
            is_seeded(self.random_state))
        entries = []
        for eps in np.unique(self.user_epsilon_).tolist():
            mechanism = self.mechanism.lower() if math.isfinite(eps) else "none (not private)"
            if mechanism == "mallows":
                mechanism = f"mallows ({self.calibration.lower()} θ)"
            status, note = Status.HOLDS, _ARGUMENT
            if not math.isfinite(eps):
                note = "this user's order is released as is"
            elif self.mechanism.lower() == "laplace" and eps > LAPLACE_MAX_EPSILON:
                status = Status.VOID
                note = (f"void: above ε = {LAPLACE_MAX_EPSILON:g} the floating-point Laplace "
                        "noise cannot reach every order, so some orders get probability 0")
            elif self.mechanism.lower() == "mallows" and eps > MALLOWS_MAX_EPSILON:
                status = Status.VOID
                note = (f"void: above ε = {MALLOWS_MAX_EPSILON:g} the sampler's log-uniforms "
                        "do not reach the probability of the most discordant orders")
            index = accountant.register(LedgerEntry(
                "ranking", mechanism, eps, 0.0, Unit.RANKING_SWAP, status, "user", note))
            accountant.charge({index: (self.user_epsilon_ == eps).astype(np.int64)})
            entries.append(index)
        accountant.declare_output("scores, predictions and rankings", entries)
        accountant.notes.append("every answer is post-processing of the privatised orders: "
                                "queries add nothing")
        return accountant


# ------------------------------------------------------------ training kernels
def _rating_arrays(trainset) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(inner user, inner item, rating) of every training rating; a pair rated twice
    raises the `ValueError` of every model."""
    n = trainset.n_ratings
    data = np.fromiter(trainset.all_ratings(), dtype=[("u", np.int64), ("i", np.int64),
                                                      ("r", np.float64)], count=n)
    users, items, ratings = data["u"].copy(), data["i"].copy(), data["r"].copy()
    check_ratings(trainset, users, items, ratings)
    check_unique_pairs(users, items, (trainset.n_users, trainset.n_items))
    return users, items, ratings


# ------------------------------------------------------------ the rating map
def _kernel_cdf(scores: np.ndarray, users: np.ndarray, train_scores: np.ndarray,
                segments: Segments, bandwidth: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r"""Smoothed CDF of each user's training scores at the query scores.

    $F_u(s) = \frac1{m_u}\sum_k \sigma\big((s - s_k)/h_u\big)$ and
    $1 - F_u(s)$ computed separately (accurate in both tails).
    Queries are processed in blocks of at most ``_BLOCK_CELLS`` cells.
    """
    below = np.zeros(len(scores))
    above = np.zeros(len(scores))
    sizes = segments.count[users]
    cum = np.cumsum(sizes)
    lo = 0
    while lo < len(scores):
        hi = int(np.searchsorted(cum, (cum[lo] - sizes[lo]) + _BLOCK_CELLS, side="right"))
        hi = min(max(hi, lo + 1), len(scores))
        size = sizes[lo:hi]
        query = segment_ids(size, start=lo)
        offset = segment_positions(size)
        cells = segments.start[users[query]] + offset
        z = (scores[query] - train_scores[cells]) / bandwidth[users[query]]
        below[lo:hi] = np.bincount(query - lo, expit(z), minlength=hi - lo)
        above[lo:hi] = np.bincount(query - lo, expit(-z), minlength=hi - lo)
        lo = hi
    count = np.maximum(sizes, 1)
    return below / count, above / count


@dataclass(frozen=True)
class _RatingQuantiles:
    r"""Quantile function of each user's training ratings, made continuous.

    Rating $r$ of weight $w_r$ is spread uniformly over
    $[r - \delta, r + \delta] \cap [r_{\min}, r_{\max}]$, $\delta$ half
    the smallest rating step, so $Q_u$ is strictly increasing and
    continuous in probability; $Q_u(F)$ is read from below for
    $F \le 1/2$ and from above (with $1 - F$) otherwise.
    """

    segments: Segments
    lower: np.ndarray      # interval start of each (user, rating value)
    upper: np.ndarray      # interval end
    weight: np.ndarray     # share of the user's ratings
    cum_below: np.ndarray  # share of the user's ratings strictly below the value
    cum_above: np.ndarray  # share strictly above

    @classmethod
    def build(cls, users: np.ndarray, ratings: np.ndarray, n_users: int,
              scale: tuple[float, float]) -> _RatingQuantiles:
        half = 0.5 * _rating_step(ratings)
        pairs, counts = np.unique(np.stack([users, ratings]), axis=1, return_counts=True)
        owner, value = pairs[0].astype(np.int64), pairs[1]
        segments = Segments.from_sorted_owner(owner, n_users)
        totals = np.bincount(owner, counts, minlength=n_users)[owner]
        before = np.cumsum(counts) - counts               # integer counts: exact
        before -= np.repeat(before[segments.start[segments.count > 0]],
                            segments.count[segments.count > 0])
        weight = counts / totals
        cum_below = before / totals
        cum_above = (totals - before - counts) / totals
        low, high = scale
        return cls(segments, np.maximum(value - half, low), np.minimum(value + half, high),
                   weight, cum_below, cum_above)

    def __call__(self, users: np.ndarray, below: np.ndarray, above: np.ndarray) -> np.ndarray:
        seg = self.segments.search(self.cum_below + self.weight, users, below)
        width = self.upper[seg] - self.lower[seg]
        from_low = self.lower[seg] + (below - self.cum_below[seg]) / self.weight[seg] * width
        from_high = self.upper[seg] - (above - self.cum_above[seg]) / self.weight[seg] * width
        est = np.where(below <= 0.5, from_low, from_high)
        return np.clip(est, self.lower[seg], self.upper[seg])
