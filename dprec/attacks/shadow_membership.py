r"""User-level membership inference with a shadow model and a trained classifier.

The attack of Zhang et al., "Membership Inference Attacks Against Recommender
Systems" (CCS 2021), beside the shadow-free variant of
[`user_membership_attack`][dprec.attacks.membership.user_membership_attack]: a
member's recommendations are personalised to its history, a non-member's are not
(they are what the model tells a stranger), so the gap between what a user rated
and what the model recommends to that user tells them apart.  The attacker learns
what that gap looks like for members on a model of their own (the *shadow*
model), then reads it on the target.

**The canaries.**  $m$ users are drawn uniformly as the target's canaries, each
included (all their ratings) with probability ½, independently, as in
[`membership_audit`][dprec.attacks.membership.membership_audit].  A share
`shadow_share` of the other users is the attacker's shadow data; the rest are
always in the target's training data.  The shadow users are never in it: the
attacker's data is disjoint from the target's, drawn from the same population.

**The attack**, in Zhang et al.'s steps:

1. *Shadow model.*  The shadow users are split at random into shadow members
   and non-members (½ each); the attacker fits the same algorithm (`factory()`)
   on the shadow members' ratings alone.
2. *Item vectors.*  The attacker factorises its shadow rating matrix (every
   shadow user, ratings as given, unrated cells 0) by a truncated SVD,
   $R \approx U \Sigma V^\top$ with `n_factors` factors; item $i$'s vector is
   $q_i = \Sigma v_i$ (an item no shadow user rated has $q_i = 0$).  Zhang et
   al. factorise the user–item matrix too.
3. *Feature of a user* $u$ with history $H_u$ (the items it rated) and
   recommendation list $L_u$: the difference of centroids
   $f_u = \frac{1}{|H_u|}\sum_{i \in H_u} q_i - \frac{1}{|L_u|}\sum_{i \in L_u} q_i$,
   with its norm $\lVert f_u \rVert$ appended.  $L_u$ is the model's top
   `n_recommended` among `n_candidates` public candidate items (drawn
   uniformly once, shared by every user, so that the queries stay bounded),
   leaving out the items in $H_u$, ranked by the model's answers to $u$
   (Surprise's `test`; an unknown user gets whatever the model answers, for
   Surprise's algorithms the default estimate; ties are broken by a random
   order of the candidates drawn once).
4. *Classifier.*  Zhang et al. train a multi-layer perceptron on the shadow
   members (label 1) and non-members (label 0).  Here, on the standardised
   features, either an L2-regularised logistic regression (``"logistic"``,
   the default: 22 weights for a few hundred shadow users) or a perceptron
   with one hidden layer of `hidden_units` tanh units (``"mlp"``, Zhang et
   al.'s kind of learner; its start drawn from `random_state`), both with the
   penalty `l2` on the weights and none on the intercepts, fitted by L-BFGS.
5. *Target.*  The target model is fitted once (always-in users and the
   included canaries), the canaries' features are computed the same way from
   its answers to them, and each canary is scored by the classifier's
   log-odds (the probability's logit: the same ranking without the ties of a
   probability rounded to 1).

From the scores come the ROC and the one-run ε lower bound, exactly as for the
shadow-free attacks ([`membership_roc`][dprec.attacks.membership.membership_roc],
[`dprec.audit.one_run.one_run_audit`][]).  The view is ``"own"``: the
recommendations to the canary user itself, which a claim of joint differential
privacy does not cover (see `dprec.attacks.membership`).

What the attacker is assumed to see and know:

* the target's answers to the canary users on the candidate items (the
  recommendation lists those answers rank), and the same of its own shadow
  model, built by the same `factory` (the algorithm and its hyperparameters
  are known);
* the canaries' own ratings (the data whose membership is in question);
* shadow data: the full ratings of other users from the same distribution as
  the target's, disjoint from its training data -- Zhang et al.'s central
  assumption, and a strong one; no model internals.

The attack is as strong as its classifier and its features: a low AUC here is a
weak statement, whichever classifier read the centroid difference.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.special import expit

from ..audit.one_run import one_run_audit
from ..datasets.arrays import ArrayDataset, ArrayTestset
from ..utils._rng import RandomStateLike, check_random_state
from ..utils._validation import check_int, check_real
from .membership import MembershipResult, membership_roc

__all__ = ["CLASSIFIERS", "shadow_membership_attack"]


def _item_vectors(data: ArrayDataset, users: np.ndarray, n_factors: int,
                  rng: np.random.Generator) -> np.ndarray:
    """The ``(n_items, n_factors)`` item vectors $\\Sigma v_i$ of the truncated SVD of the
    rating matrix of ``users`` (user codes)."""
    from scipy.sparse.linalg import svds  # here: scipy's solvers cost every import 0.2 s

    rows = np.flatnonzero(np.isin(data.user_codes, users))
    local = np.searchsorted(np.sort(users), data.user_codes[rows])
    matrix = sp.csr_matrix((data.ratings[rows], (local, data.item_codes[rows])),
                           shape=(len(users), len(data.item_ids)))
    v0 = rng.uniform(-1.0, 1.0, min(matrix.shape))      # ARPACK's start: reproducible
    _, sigma, vt = svds(matrix, k=n_factors, v0=v0)
    order = np.argsort(sigma)[::-1]
    return (vt[order].T * sigma[order]).astype(np.float64)


def _features(algo, data: ArrayDataset, users: np.ndarray, candidates: np.ndarray,
              vectors: np.ndarray, n_recommended: int) -> np.ndarray:
    """The features (centroid of history minus centroid of top-n list, and its norm) of
    ``users`` (user codes) from the answers of the fitted ``algo`` on ``candidates``."""
    n_users, n_cand = len(users), len(candidates)
    testset = ArrayTestset(np.repeat(data.user_ids[users], n_cand),
                           np.tile(data.item_ids[candidates], n_users),
                           np.zeros(n_users * n_cand))
    estimates = np.fromiter((p.est for p in algo.test(testset)), np.float64, len(testset))
    estimates = estimates.reshape(n_users, n_cand)
    # the users' histories, as a user x item indicator (row k: users[k])
    rows = np.flatnonzero(np.isin(data.user_codes, users))
    position = np.full(len(data.user_ids), -1)
    position[users] = np.arange(n_users)
    history = sp.csr_matrix((np.ones(len(rows)), (position[data.user_codes[rows]],
                                                  data.item_codes[rows])),
                            shape=(n_users, len(data.item_ids)))
    history.data[:] = 1.0                                # a pair rated twice counts once
    rated = history[:, candidates].toarray() > 0
    estimates[rated] = -np.inf                           # recommend unrated items only
    # stable sort: ties keep the candidates' (random) order
    top = np.argsort(-estimates, axis=1, kind="stable")[:, :n_recommended]
    valid = np.isfinite(np.take_along_axis(estimates, top, axis=1))
    listed = vectors[candidates[top]] * valid[..., None]
    n_listed = np.maximum(valid.sum(axis=1), 1)[:, None]
    n_rated = np.maximum(np.asarray(history.sum(axis=1)), 1.0)
    difference = np.asarray(history @ vectors) / n_rated - listed.sum(axis=1) / n_listed
    return np.column_stack([difference, np.linalg.norm(difference, axis=1)])


class _Standardised:
    """Features centred and scaled by the training set's means and deviations (a constant
    feature is left unscaled)."""

    def __init__(self, features: np.ndarray) -> None:
        self.mean = features.mean(axis=0)
        scale = features.std(axis=0)
        self.scale = np.where(scale > 0, scale, 1.0)

    def standard(self, features: np.ndarray) -> np.ndarray:
        return (features - self.mean) / self.scale


class _Logistic(_Standardised):
    """L2-regularised logistic regression on standardised features (numpy and L-BFGS)."""

    def __init__(self, features: np.ndarray, labels: np.ndarray, l2: float) -> None:
        super().__init__(features)
        x = np.column_stack([self.standard(features), np.ones(len(features))])
        y = labels.astype(np.float64)
        penalised = np.ones(x.shape[1])
        penalised[-1] = 0.0                              # no penalty on the intercept

        def loss(w: np.ndarray) -> tuple[float, np.ndarray]:
            z = x @ w
            value = np.sum(np.logaddexp(0.0, z) - y * z) + 0.5 * l2 * np.sum(penalised * w * w)
            return float(value), x.T @ (expit(z) - y) + l2 * penalised * w

        from scipy.optimize import minimize  # here: see `_item_vectors`

        fit = minimize(loss, np.zeros(x.shape[1]), jac=True, method="L-BFGS-B")
        self.weights = fit.x

    def log_odds(self, features: np.ndarray) -> np.ndarray:
        return self.standard(features) @ self.weights[:-1] + self.weights[-1]


class _Perceptron(_Standardised):
    """A perceptron with one hidden layer of tanh units on standardised features: the
    summed log-loss plus an L2 penalty on both weight matrices (not the intercepts),
    minimised by L-BFGS from a start drawn from ``rng``."""

    def __init__(self, features: np.ndarray, labels: np.ndarray, l2: float, hidden: int,
                 rng: np.random.Generator) -> None:
        super().__init__(features)
        self.x, self.y, self.l2 = self.standard(features), labels.astype(np.float64), l2
        d = self.x.shape[1]
        self.shapes = ((d, hidden), (hidden,), (hidden,), ())
        self.start = np.concatenate([rng.normal(0.0, 1.0 / np.sqrt(d), d * hidden),
                                     np.zeros(hidden),
                                     rng.normal(0.0, 1.0 / np.sqrt(hidden), hidden), [0.0]])
        from scipy.optimize import minimize  # here: see `_item_vectors`

        self.weights = minimize(self.loss, self.start, jac=True, method="L-BFGS-B",
                                options={"maxiter": 1000}).x

    def loss(self, w: np.ndarray) -> tuple[float, np.ndarray]:
        """The penalised log-loss of the weights ``w`` (flat) and its gradient."""
        w1, b1, w2, b2 = self._unpack(w)
        x, y, l2 = self.x, self.y, self.l2
        h = np.tanh(x @ w1 + b1)
        z = h @ w2 + b2
        value = np.sum(np.logaddexp(0.0, z) - y * z) + 0.5 * l2 * (np.sum(w1 * w1)
                                                                   + np.sum(w2 * w2))
        dz = expit(z) - y
        dh = np.outer(dz, w2) * (1.0 - h * h)
        grad = (x.T @ dh + l2 * w1, dh.sum(axis=0), h.T @ dz + l2 * w2, dz.sum())
        return float(value), np.concatenate([np.ravel(g) for g in grad])

    def _unpack(self, w: np.ndarray) -> list[np.ndarray]:
        parts, at = [], 0
        for shape in self.shapes:
            size = int(np.prod(shape))
            parts.append(w[at:at + size].reshape(shape))
            at += size
        return parts

    def log_odds(self, features: np.ndarray) -> np.ndarray:
        w1, b1, w2, b2 = self._unpack(self.weights)
        return np.tanh(self.standard(features) @ w1 + b1) @ w2 + b2


#: the classifiers of step 4, by name
CLASSIFIERS = ("logistic", "mlp")


def shadow_membership_attack(factory: Callable[[], object], data, n_canaries: int = 200,
                             shadow_share: float = 0.5, n_recommended: int = 10,
                             n_factors: int = 20, n_candidates: int = 300, l2: float = 1.0,
                             classifier: str = "logistic", hidden_units: int = 32,
                             confidence: float = 0.95,
                             random_state: RandomStateLike = None) -> MembershipResult:
    r"""Zhang et al.'s user-level membership inference: a classifier trained on a shadow
    model's recommendations, with the one-run ε bound at the user level.

    The attack, its canaries and what the attacker is assumed to know are in the
    module's introduction (`dprec.attacks.shadow_membership`).  Two fits of
    `factory()`: the shadow model and the target.

    Parameters
    ----------
    factory : callable
        Returns a new, unfitted Surprise algorithm (a dprec model or Surprise's own);
        the shadow and the target models are both built by it.
    data : surprise Dataset or ArrayDataset
    n_canaries : int, default 200
        Canary users, drawn uniformly, each included (all their ratings) in the
        target's training data with probability ½.
    shadow_share : float in (0, 1), default 0.5
        The share of the other users given to the attacker as shadow data (never in
        the target's training data); half of them, rounded down, are the shadow
        model's members.
    n_recommended : int, default 10
        The length $n$ of each recommendation list (top-$n$ unrated candidates).
    n_factors : int, default 20
        Factors of the truncated SVD giving the item vectors; below the number of
        shadow users and of items.
    n_candidates : int, default 300
        Public candidate items, drawn uniformly once, among which the lists are
        ranked (capped at the number of items); each model answers
        ``n_candidates`` queries per user asked.
    l2 : float, default 1.0
        The logistic regression's L2 penalty $\frac{\lambda}{2}\lVert w\rVert^2$ on its
        summed log-loss (the perceptron's: on both weight matrices).
    classifier : {"logistic", "mlp"}, default "logistic"
        Step 4's learner: a logistic regression, or a perceptron with one hidden layer.
    hidden_units : int, default 32
        The perceptron's hidden tanh units (``classifier="mlp"`` only).
    confidence : float, default 0.95
        Of the ε bound.
    random_state : None, int, RandomState or Generator
        Draws the canaries, their inclusion, the shadow users and their split, the
        candidates and their order, the SVD's start and the perceptron's (not the
        model's noise: give the factory its own).

    Returns
    -------
    MembershipResult
        ``unit="user"``, ``view="own"``; ``scores`` has the columns ``uid``,
        ``included``, ``n_ratings``, ``probability`` (the classifier's) and ``score``
        (its log-odds).

    Raises
    ------
    ValueError
        If ``n_canaries < 2`` or leaves fewer than 4 other users, ``shadow_share``
        is outside (0, 1) or leaves fewer than 4 shadow users or no always-in user,
        ``n_recommended < 1``, ``n_factors`` is not in
        ``[1, min(shadow users, items))``, ``n_candidates < 1``, ``l2 < 0``,
        ``classifier`` is not one of `CLASSIFIERS`, ``hidden_units < 1``, or every
        canary was drawn in (or out).
    """
    if not isinstance(data, ArrayDataset):
        data = ArrayDataset.from_surprise(data)
    n_users, n_items = len(data.user_ids), len(data.item_ids)
    n_canaries = check_int(n_canaries, "n_canaries", minimum=2)
    if n_canaries > n_users - 4:
        raise ValueError(f"n_canaries={n_canaries} must leave at least 4 of the {n_users} "
                         "users for the shadow data and the always-in part")
    shadow_share = check_real(shadow_share, "shadow_share", low=0.0, high=1.0,
                              low_inclusive=False, high_inclusive=False)
    n_recommended = check_int(n_recommended, "n_recommended", minimum=1)
    n_factors = check_int(n_factors, "n_factors", minimum=1)
    n_candidates = check_int(n_candidates, "n_candidates", minimum=1)
    l2 = check_real(l2, "l2", low=0.0)
    if classifier not in CLASSIFIERS:
        raise ValueError(f"classifier={classifier!r} must be one of {CLASSIFIERS}")
    hidden_units = check_int(hidden_units, "hidden_units", minimum=1)
    confidence = check_real(confidence, "confidence", low=0.0, high=1.0,
                            low_inclusive=False, high_inclusive=False)
    others_count = n_users - n_canaries
    n_shadow = int(round(shadow_share * others_count))
    if not 4 <= n_shadow < others_count:
        raise ValueError(f"shadow_share={shadow_share} gives {n_shadow} shadow users of the "
                         f"{others_count} who are not canaries: it must give at least 4 and "
                         "leave at least one user always in the target's data")
    if n_factors >= min(n_shadow, n_items):
        raise ValueError(f"n_factors={n_factors} must be below the number of shadow users, "
                         f"{n_shadow}, and of items, {n_items}")

    rng = check_random_state(random_state)
    canaries = rng.choice(n_users, n_canaries, replace=False)
    included = rng.random(n_canaries) < 0.5
    if included.all() or not included.any():
        raise ValueError(f"every one of the {n_canaries} user canaries was drawn "
                         f"{'in' if included.all() else 'out'}: give more canaries "
                         "(each is in with probability 1/2)")
    others = rng.permutation(np.setdiff1d(np.arange(n_users), canaries))
    shadow, always = others[:n_shadow], others[n_shadow:]
    shadow_in = rng.permutation(n_shadow) < n_shadow // 2
    candidates = rng.permutation(rng.choice(n_items, min(n_candidates, n_items),
                                            replace=False))
    vectors = _item_vectors(data, shadow, n_factors, rng)

    # 1-4: the shadow model, its answers to every shadow user, the classifier
    shadow_rows = np.flatnonzero(np.isin(data.user_codes, shadow[shadow_in]))
    shadow_model = factory().fit(data.trainset(shadow_rows))
    features = _features(shadow_model, data, shadow, candidates, vectors, n_recommended)
    learner = (_Logistic(features, shadow_in, l2) if classifier == "logistic"
               else _Perceptron(features, shadow_in, l2, hidden_units, rng))
    # 5: the target, fitted once, and its answers to the canaries
    target_rows = np.flatnonzero(np.isin(data.user_codes,
                                         np.concatenate([always, canaries[included]])))
    target = factory().fit(data.trainset(target_rows))
    score = learner.log_odds(_features(target, data, canaries, candidates, vectors,
                                          n_recommended))
    frame = pd.DataFrame({"uid": data.user_ids[canaries], "included": included,
                          "n_ratings": np.bincount(data.user_codes, minlength=n_users)[canaries],
                          "probability": expit(score), "score": score})
    roc = membership_roc(score[included], score[~included])
    return MembershipResult("user", "own", roc,
                            one_run_audit(score, included, confidence=confidence), frame)
