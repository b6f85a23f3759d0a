r"""Membership inference against recommenders: was this user, or this rating, trained on?

Differential privacy bounds what anyone learns about whether a unit (a user's
whole history, or one rating) was in the training data.  The attacks here
measure it, with one fit each, as *canaries*: $m$ units drawn at random, each
included in the training data independently with probability ½, every other
rating always included.  The model is fitted once; the attacker scores each
canary from what the model releases (higher: more likely a member).  From the
scores come

* the ROC of the attack: its **AUC** and its **TPR at FPR = 1 % and 0.1 %**
  (Carlini et al., "Membership Inference Attacks From First Principles",
  S&P 2022: an attack is judged by how many members it finds with almost no
  false alarms, not by its average accuracy) -- [`membership_roc`][];
* a **lower bound on the model's ε** for that unit, at 95 % confidence, by the
  one-run audit of Steinke, Nasr & Jagielski (NeurIPS 2023),
  [`dprec.audit.one_run.one_run_audit`][]: the canaries are exactly its
  random inclusions.  The bound here is for a *pure* ε (δ = 0); a claim with
  δ > 0 must be tested at its own δ (`one_run_audit(..., delta=δ)` on
  ``scores``), which makes it much harder to refute.

What the attacker sees and knows (both attacks):

* the model's answers (Surprise's `test`: the estimates, clipped to the
  rating scale, and `details`, among them `was_impossible`), in one of two
  **views**: ``"own"``, the answers to the canary's own user (what Yeom et al.
  and Zhang et al. query: the strongest view), or ``"others"``, only the
  answers to `n_observers` other users, always in the data, on the canary's
  items;
* the canaries' own ratings (the data whose membership is in question), and
  nothing else: no shadow data, no other user's ratings, no model internals.

Which view a claim covers: a model whose report says that each user's answers
are shown to that user alone (joint differential privacy: `DPBaseline`,
`DPItemKNN`, `DPALS`) guarantees nothing about the ``"own"`` view -- a user's
answers use that user's ratings, by design -- and its claim is to be compared
with the ``"others"`` view only.  A claim that covers every answer (local
differential privacy, or a model without such a condition) is compared with
both.

**Rating level** ([`rating_membership_attack`][]), in the style of Yeom et al.,
"Privacy Risk in Machine Learning" (CSF 2018): a model fits its training ratings
better than unseen ones, so the score of a canary rating $r_{ui}$ is minus its
squared error, $-(r_{ui} - \hat r_{ui})^2$, with $\hat r_{ui}$ the answer to $u$
(view ``"own"``) or the mean answer to the observers on $i$ (``"others"``: a
member pulls its item's estimate towards its rating).  The canaries are ratings
of users and items that stay in the data through their other ratings.

**User level** ([`user_membership_attack`][]), after Zhang et al., "Membership
Inference Attacks Against Recommender Systems" (CCS 2021): their attacker
compares what a user is recommended with the user's history, a member's
answers being personalised to it.  Here the comparison is on the predictions
for the user's history.  View ``"own"``: the score is minus the mean squared
error of the answers to the canary on its ratings, minus $((r_{max} -
r_{min})^2 + 1)$ times the share of them that say they know nothing
(`was_impossible`, Surprise's answer to an unknown user), so that an attacker
reading `details` ranks those below every error.  View ``"others"``: the
covariance, over the canary's items, between its centred ratings and the
observers' mean answers on those items (a member pulls the items it rated
towards its ratings).  Zhang et al. train a classifier on a shadow model's
recommendation lists (`dprec.attacks.shadow_membership`); this variant needs
no shadow data and no classifier.  Neither attack dominates the other: this one
reads the answers on the user's own ratings (on MovieLens 100k it finds more
of `SVD`'s members), theirs the items recommended; a low AUC from either is a
weak statement.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..audit.one_run import OneRunAudit, one_run_audit
from ..datasets.arrays import ArrayDataset, ArrayTestset
from ..utils._rng import RandomStateLike, check_random_state
from ..utils._validation import check_int, check_real

__all__ = ["MembershipResult", "MembershipROC", "membership_audit", "membership_roc",
           "rating_membership_attack", "user_membership_attack"]


@dataclass(frozen=True)
class MembershipROC:
    """How well scores separate members from non-members.

    Attributes
    ----------
    auc : float
        Area under the ROC curve (ties count ½): the probability that a random member
        scores above a random non-member; 0.5 is chance.
    tpr_at_1pct, tpr_at_01pct : float
        The largest share of members found at a threshold that flags at most 1 %
        (0.1 %) of the non-members.
    n_members, n_non_members : int
    """

    auc: float
    tpr_at_1pct: float
    tpr_at_01pct: float
    n_members: int
    n_non_members: int


def membership_roc(member_scores, non_member_scores) -> MembershipROC:
    """The ROC summary of an attack's scores (higher: more likely a member).

    The TPR at a false-positive rate $f$ is read at the threshold $t$ that flags
    the scores $\\ge t$, for the lowest $t$ whose share of non-members flagged is at
    most $f$ (so that with fewer than $1/f$ non-members it is the TPR above every
    non-member).

    Raises
    ------
    ValueError
        If either group is empty or a score is not finite.
    """
    members = np.asarray(member_scores, dtype=np.float64).ravel()
    others = np.asarray(non_member_scores, dtype=np.float64).ravel()
    if len(members) == 0 or len(others) == 0:
        raise ValueError(f"member_scores and non_member_scores must both be non-empty, got "
                         f"{len(members)} and {len(others)}")
    if not (np.isfinite(members).all() and np.isfinite(others).all()):
        raise ValueError("membership scores must be finite numbers")
    pooled = np.concatenate([members, others])
    ranks = pd.Series(pooled).rank(method="average").to_numpy()  # ties: mean rank
    n_in, n_out = len(members), len(others)
    auc = (ranks[:n_in].sum() - n_in * (n_in + 1) / 2) / (n_in * n_out)
    return MembershipROC(float(auc), _tpr_at(members, others, 0.01),
                         _tpr_at(members, others, 0.001), n_in, n_out)


def _tpr_at(members: np.ndarray, others: np.ndarray, fpr: float) -> float:
    """TPR at the lowest threshold flagging at most ``fpr`` of the non-members."""
    ordered = np.sort(others)[::-1]                  # non-members, highest first
    allowed = int(np.floor(fpr * len(others)))       # false positives allowed
    # flag scores strictly above the (allowed+1)-th highest non-member score
    threshold = ordered[allowed] if allowed < len(ordered) else -np.inf
    return float(np.mean(members > threshold))


@dataclass(frozen=True)
class MembershipResult:
    """An attack's outcome on one fit.

    Attributes
    ----------
    unit : str
        ``"user"`` or ``"rating"``.
    view : str
        ``"own"`` or ``"others"``: the answers the attacker saw.
    roc : MembershipROC
        The attack's AUC and TPR at low FPR.
    audit : OneRunAudit
        The one-run lower bound on ε for the unit (95 % confidence by default).
    scores : pandas.DataFrame
        One row per canary: its ids, whether it was included and its score.
    """

    unit: str
    view: str
    roc: MembershipROC
    audit: OneRunAudit
    scores: pd.DataFrame

    def summary(self) -> dict:
        """The flat row of the frontier: ``unit``, ``view``, ``mia_auc``,
        ``mia_tpr_1pct``, ``mia_tpr_01pct``, ``empirical_epsilon`` and ``canaries``."""
        return {"unit": self.unit, "view": self.view, "mia_auc": self.roc.auc,
                "mia_tpr_1pct": self.roc.tpr_at_1pct, "mia_tpr_01pct": self.roc.tpr_at_01pct,
                "empirical_epsilon": self.audit.epsilon, "canaries": self.audit.m}


def _answers(algo, data: ArrayDataset, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(estimates, impossible)`` of the fitted ``algo`` for the ratings at ``rows``."""
    predictions = algo.test(data.testset(rows))
    estimates = np.fromiter((p.est for p in predictions), np.float64, len(predictions))
    impossible = np.fromiter((bool(p.details.get("was_impossible", False))
                              if isinstance(p.details, dict) else False
                              for p in predictions), bool, len(predictions))
    return estimates, impossible


def _observer_means(algo, data: ArrayDataset, observers: np.ndarray,
                    items: np.ndarray) -> np.ndarray:
    """The mean answer of the fitted ``algo`` to the ``observers`` (user codes) on each
    of ``items`` (item codes), one query per (observer, item)."""
    n_obs = len(observers)
    testset = ArrayTestset(np.repeat(data.user_ids[observers], len(items)),
                           np.tile(data.item_ids[items], n_obs),
                           np.zeros(n_obs * len(items)))
    estimates = np.fromiter((p.est for p in algo.test(testset)), np.float64, len(testset))
    return estimates.reshape(n_obs, len(items)).mean(axis=0)


def _result(unit: str, view: str, frame: pd.DataFrame, confidence: float
            ) -> MembershipResult:
    included = frame["included"].to_numpy()
    if included.all() or not included.any():
        raise ValueError(f"every one of the {len(included)} {unit} canaries was drawn "
                         f"{'in' if included.all() else 'out'}: give more canaries "
                         f"(each is in with probability 1/2)")
    scores = frame["score"].to_numpy()
    roc = membership_roc(scores[included], scores[~included])
    return MembershipResult(unit, view, roc, one_run_audit(scores, included,
                                                           confidence=confidence), frame)


class _Canaries:
    """The canaries of one fit: users, then observers among the other users, then ratings
    of the remaining users; each canary included with probability ½."""

    def __init__(self, data: ArrayDataset, n_users: int, n_ratings: int, n_observers: int,
                 rng: np.random.Generator, names: tuple[str, str]) -> None:
        total = len(data.user_ids)
        if n_users and not 2 <= n_users < total:
            raise ValueError(f"{names[0]}={n_users} must be 2 or more and below the number "
                             f"of users, {total}")
        self.users = rng.choice(total, n_users, replace=False)
        self.users_in = rng.random(n_users) < 0.5
        others = np.setdiff1d(np.arange(total), self.users)
        if n_observers > len(others):
            raise ValueError(f"n_observers={n_observers} must be at most the {len(others)} "
                             "users who are not canaries")
        self.observers = rng.choice(others, n_observers, replace=False)
        user_counts = np.bincount(data.user_codes, minlength=total)
        item_counts = np.bincount(data.item_codes, minlength=len(data.item_ids))
        owner_free = np.ones(total, dtype=bool)
        owner_free[self.users] = owner_free[self.observers] = False
        eligible = np.flatnonzero(owner_free[data.user_codes]
                                  & (user_counts[data.user_codes] >= 3)
                                  & (item_counts[data.item_codes] >= 3))
        if n_ratings == 1 or len(eligible) < n_ratings:
            raise ValueError(f"{names[1]}={n_ratings} must be 2 or more and at most the "
                             f"{len(eligible)} ratings of users and items with 3 ratings or "
                             "more (of users neither canaries nor observers)")
        self.ratings = rng.choice(eligible, n_ratings, replace=False)
        self.ratings_in = rng.random(n_ratings) < 0.5
        keep = np.ones(len(data), dtype=bool)
        keep[self.ratings[~self.ratings_in]] = False
        left_out = np.zeros(total, dtype=bool)
        left_out[self.users[~self.users_in]] = True
        self.kept = np.flatnonzero(keep & ~left_out[data.user_codes])


def _rating_scores(algo, data: ArrayDataset, canaries: _Canaries, view: str) -> pd.DataFrame:
    rows = canaries.ratings
    if view == "own":
        estimates, _ = _answers(algo, data, rows)
    else:
        items, position = np.unique(data.item_codes[rows], return_inverse=True)
        estimates = _observer_means(algo, data, canaries.observers, items)[position]
    ratings = data.ratings[rows]
    return pd.DataFrame({"uid": data.user_ids[data.user_codes[rows]],
                         "iid": data.item_ids[data.item_codes[rows]], "rating": ratings,
                         "included": canaries.ratings_in, "estimate": estimates,
                         "score": -(ratings - estimates) ** 2})


def _user_scores(algo, data: ArrayDataset, canaries: _Canaries, view: str) -> pd.DataFrame:
    n = len(canaries.users)
    canary_of = np.full(len(data.user_ids), -1)
    canary_of[canaries.users] = np.arange(n)
    asked = np.flatnonzero(canary_of[data.user_codes] >= 0)
    owner = canary_of[data.user_codes[asked]]
    counts = np.bincount(owner, minlength=n)
    ratings = data.ratings[asked]
    impossible_share = np.zeros(n)
    if view == "own":
        estimates, impossible = _answers(algo, data, asked)
        errors = np.bincount(owner, (ratings - estimates) ** 2, n) / counts
        impossible_share = np.bincount(owner, impossible, n) / counts
        low, high = data.rating_scale
        score = -errors - ((high - low) ** 2 + 1.0) * impossible_share
    else:
        items, position = np.unique(data.item_codes[asked], return_inverse=True)
        answers = _observer_means(algo, data, canaries.observers, items)[position]
        centred = ratings - (np.bincount(owner, ratings, n) / counts)[owner]
        answers = answers - (np.bincount(owner, answers, n) / counts)[owner]
        score = np.bincount(owner, centred * answers, n) / counts
    return pd.DataFrame({"uid": data.user_ids[canaries.users], "included": canaries.users_in,
                         "n_ratings": counts, "impossible_share": impossible_share,
                         "score": score})


def membership_audit(factory: Callable[[], object], data, user_canaries: int = 200,
                     rating_canaries: int = 1000, n_observers: int = 20,
                     confidence: float = 0.95, random_state: RandomStateLike = None,
                     names: tuple[str, str] = ("user_canaries", "rating_canaries")
                     ) -> dict[tuple[str, str], MembershipResult]:
    """Both attacks in both views from **one** fit, by unit and view.

    Parameters
    ----------
    factory : callable
        Returns a new, unfitted Surprise algorithm (a dprec model or Surprise's own).
    data : surprise Dataset or ArrayDataset
    user_canaries : int, default 200
        Canary users, drawn uniformly, each included (all their ratings) with probability
        ½ (0: no user-level attack).
    rating_canaries : int, default 1000
        Canary ratings, drawn among the ratings of the other users (not observers) whose
        users and items have 3 ratings or more, each included with probability ½
        (0: no rating-level attack).
    n_observers : int, default 20
        Users, always in the data, whose answers the ``"others"`` view reads.
    confidence : float, default 0.95
        Of the ε bounds.
    random_state : None, int, RandomState or Generator
        Draws the canaries, their inclusion and the observers (not the model's noise:
        give the factory its own).
    names : (str, str)
        The parameters that give the two counts, as errors name them.

    Returns
    -------
    dict
        ``{(unit, view): MembershipResult}`` for ``unit`` in ``"user"``, ``"rating"``
        (those with canaries) and ``view`` in ``"own"``, ``"others"``.
    """
    if not isinstance(data, ArrayDataset):
        data = ArrayDataset.from_surprise(data)
    user_canaries = check_int(user_canaries, "user_canaries", minimum=0)
    rating_canaries = check_int(rating_canaries, "rating_canaries", minimum=0)
    if user_canaries + rating_canaries == 0:
        raise ValueError("user_canaries and rating_canaries cannot both be 0")
    n_observers = check_int(n_observers, "n_observers", minimum=1)
    confidence = check_real(confidence, "confidence", low=0.0, high=1.0,
                            low_inclusive=False, high_inclusive=False)
    canaries = _Canaries(data, user_canaries, rating_canaries, n_observers,
                         check_random_state(random_state), names)
    algo = factory().fit(data.trainset(canaries.kept))
    results = {}
    for unit, count, scores in (("user", user_canaries, _user_scores),
                                ("rating", rating_canaries, _rating_scores)):
        for view in ("own", "others") if count else ():
            results[unit, view] = _result(unit, view, scores(algo, data, canaries, view),
                                          confidence)
    return results


def _check_view(view: str) -> None:
    if view not in ("own", "others"):
        raise ValueError(f"view must be 'own' or 'others', got {view!r}")


def rating_membership_attack(factory: Callable[[], object], data, n_canaries: int = 1000,
                             view: str = "own", n_observers: int = 20,
                             confidence: float = 0.95,
                             random_state: RandomStateLike = None) -> MembershipResult:
    """Rating-level membership inference by loss threshold, with its one-run ε bound
    ([`membership_audit`][] without canary users).

    Parameters
    ----------
    factory : callable
        Returns a new, unfitted Surprise algorithm (a dprec model or Surprise's own).
    data : surprise Dataset or ArrayDataset
    n_canaries : int, default 1000
        Canary ratings, drawn among the ratings of users and items with at least 3
        ratings (so that both stay known without them), each included with
        probability ½.
    view : {"own", "others"}, default "own"
        The answers the attacker sees (see the module's introduction).
    n_observers : int, default 20
        Users whose answers the ``"others"`` view reads, drawn among the users, who then
        own no canary.
    confidence : float, default 0.95
        Of the ε bound.
    random_state : None, int, RandomState or Generator
        Draws the canaries and their inclusion (not the model's noise: give the
        factory its own).

    Returns
    -------
    MembershipResult
        ``scores`` has the columns ``uid``, ``iid``, ``rating``, ``included``,
        ``estimate``, ``score``.
    """
    _check_view(view)
    return membership_audit(factory, data, 0, n_canaries, n_observers, confidence,
                            random_state, ("n_canaries", "n_canaries"))["rating", view]


def user_membership_attack(factory: Callable[[], object], data, n_canaries: int = 200,
                           view: str = "own", n_observers: int = 20,
                           confidence: float = 0.95,
                           random_state: RandomStateLike = None) -> MembershipResult:
    """User-level membership inference from the answers on a user's own ratings, with its
    one-run ε bound at the user level ([`membership_audit`][] without canary ratings).

    Parameters
    ----------
    factory : callable
        Returns a new, unfitted Surprise algorithm.
    data : surprise Dataset or ArrayDataset
    n_canaries : int, default 200
        Canary users, drawn uniformly among the users, each included (all their
        ratings) with probability ½; every other user is always included.
    view : {"own", "others"}, default "own"
        The answers the attacker sees (see the module's introduction).
    n_observers : int, default 20
        Users whose answers the ``"others"`` view reads, drawn among the others.
    confidence : float, default 0.95
    random_state : None, int, RandomState or Generator
        Draws the canaries and their inclusion.

    Returns
    -------
    MembershipResult
        ``scores`` has the columns ``uid``, ``included``, ``n_ratings``,
        ``impossible_share`` (the share of answers with ``was_impossible``) and
        ``score``.
    """
    _check_view(view)
    return membership_audit(factory, data, n_canaries, 0, n_observers, confidence,
                            random_state, ("n_canaries", "n_canaries"))["user", view]
