r"""Ranking metrics on Surprise predictions and top-N lists: pairwise accuracy,
Kendall τ, NDCG@k, precision@k, recall@k, MAP@k and catalogue coverage.

Every function takes a list of Surprise ``Prediction`` tuples (``uid``,
``iid``, ``r_ui``, ``est``, ``details``), groups them by user and compares, for
each user, the order of the estimates with the order of the true ratings
(Xu, Sun & Cheng 2023, §5).  Work is done on numpy arrays per block of users; there is
no Python loop over pairs or predictions.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import pandas as pd

from ..utils._arrays import safe_divide, segment_positions
from ..utils._validation import check_choice, check_int, check_real

__all__ = ["coverage", "kendall_tau", "map_at_k", "ndcg_at_k", "pairwise_accuracy",
           "precision_at_k", "recall_at_k"]

#: The error for predictions (a list, or a top-N frame) with nothing to score.
_EMPTY = "predictions is empty: there is nothing to score (a metric of no user is undefined)"

#: Largest number of within-user pairs materialised at once.
_PAIR_BLOCK = 1 << 22


def _arrays(predictions: Sequence) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """User codes, true ratings and estimates, sorted by user (stable)."""
    if isinstance(predictions, (str, bytes)) or not isinstance(predictions, Sequence):
        raise TypeError("predictions must be a list of Surprise Prediction tuples, "
                        f"got {type(predictions).__name__}")
    if len(predictions) == 0:
        raise ValueError(_EMPTY)
    try:
        frame = pd.DataFrame([p[:4] for p in predictions], columns=["uid", "iid", "r_ui", "est"])
    except (TypeError, ValueError) as err:
        raise TypeError("predictions must be Surprise Prediction tuples "
                        "(uid, iid, r_ui, est, details)") from err
    if frame["r_ui"].isna().any():
        raise ValueError("predictions need true ratings: some r_ui are None/NaN")
    true = pd.to_numeric(frame["r_ui"], errors="coerce").to_numpy(np.float64)
    est = pd.to_numeric(frame["est"], errors="coerce").to_numpy(np.float64)
    if np.isnan(true).any() or not np.isfinite(est).all():
        raise ValueError("predictions must have numeric r_ui and finite est")
    users = pd.factorize(frame["uid"])[0]
    order = np.argsort(users, kind="stable")
    return users[order], true[order], est[order]


def _user_pairs(users: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Index pairs ``(a, b)``, ``a < b``, of predictions of the same user, in blocks.

    ``users`` must be sorted.  Users are never split across blocks.
    """
    _, starts, sizes = np.unique(users, return_index=True, return_counts=True)
    pairs = sizes * (sizes - 1) // 2
    cum = np.cumsum(pairs)
    lo = 0
    while lo < len(sizes):
        hi = max(lo + 1, int(np.searchsorted(cum, cum[lo] - pairs[lo] + _PAIR_BLOCK, "right")))
        hi = min(hi, len(sizes))
        first, size = starts[lo:hi], sizes[lo:hi]
        n_items = int(size.sum())
        index = np.arange(first[0], first[0] + n_items)
        within = index - np.repeat(first, size)
        partners = np.repeat(size, size) - 1 - within
        total = int(partners.sum())
        if total:
            left = np.repeat(index, partners)
            offset = segment_positions(partners)
            yield left, left + 1 + offset
        lo = hi


def pairwise_accuracy(predictions: Sequence, average: str = "pooled") -> float:
    r"""Fraction of each user's test pairs that the estimates order correctly.

    Over the pairs $(i, j)$ of predictions of the same user with
    $r_{ui} \ne r_{uj}$:

    $$
    \mathrm{acc} = \frac{\sum \big[\mathbb 1\{(\hat r_{ui} - \hat r_{uj})
    (r_{ui} - r_{uj}) > 0\} + \tfrac12 \mathbb 1\{\hat r_{ui} = \hat r_{uj}\}\big]}
    {\#\text{pairs}}
    $$

    Parameters
    ----------
    predictions : list of surprise Prediction
    average : {"pooled", "user"}
        ``"pooled"``: all users' pairs together (Xu, Sun & Cheng 2023, §5);
        ``"user"``: the mean of the per-user accuracies (users with at least
        one such pair).

    Raises
    ------
    ValueError
        If no user has two predictions with different true ratings.
    """
    average = check_choice(average, "average", ("pooled", "user"))
    users, true, est = _arrays(predictions)
    n_users = int(users.max()) + 1
    score = np.zeros(n_users)
    count = np.zeros(n_users)
    for a, b in _user_pairs(users):
        dr = true[a] - true[b]
        de = est[a] - est[b]
        keep = dr != 0
        points = np.where(de == 0, 0.5, (np.sign(de) == np.sign(dr)).astype(np.float64))[keep]
        owner = users[a][keep]
        score += np.bincount(owner, points, minlength=n_users)
        count += np.bincount(owner, minlength=n_users)
    if count.sum() == 0:
        raise ValueError("no user has two predictions with different true ratings")
    if average == "pooled":
        return float(score.sum() / count.sum())
    has = count > 0
    return float(np.mean(score[has] / count[has]))


def kendall_tau(predictions: Sequence) -> float:
    r"""Mean over users of Kendall's $\tau_b$ between true ratings and estimates.

    $$
    \tau_b = \frac{C - D}{\sqrt{(n_0 - n_1)(n_0 - n_2)}}
    $$

    with $C, D$ the concordant and discordant pairs, $n_0$ all
    pairs, $n_1, n_2$ the pairs tied in the true ratings and in the
    estimates (the value of ``scipy.stats.kendalltau``).  Users whose true
    ratings are all equal are skipped (τ undefined); a user whose estimates are
    all equal gets τ = 0 (no ordering, no association).

    Raises
    ------
    ValueError
        If no user has two predictions with different true ratings.
    """
    users, true, est = _arrays(predictions)
    n_users = int(users.max()) + 1
    net = np.zeros(n_users)
    pairs = np.zeros(n_users)
    tied_true = np.zeros(n_users)
    tied_est = np.zeros(n_users)
    for a, b in _user_pairs(users):
        owner = users[a]
        sign = np.sign(true[a] - true[b]) * np.sign(est[a] - est[b])
        net += np.bincount(owner, sign, minlength=n_users)
        pairs += np.bincount(owner, minlength=n_users)
        tied_true += np.bincount(owner, true[a] == true[b], minlength=n_users)
        tied_est += np.bincount(owner, est[a] == est[b], minlength=n_users)
    defined = pairs - tied_true > 0
    if not defined.any():
        raise ValueError("no user has two predictions with different true ratings")
    denom = np.sqrt((pairs - tied_true) * (pairs - tied_est))
    tau = np.where(denom > 0, net / np.where(denom > 0, denom, 1.0), 0.0)
    return float(np.mean(tau[defined]))


def ndcg_at_k(predictions, k: int = 10, gains: str = "linear", *,
              threshold: float | None = None, testset=None) -> float:
    r"""Mean over users of NDCG@k, ranking each user's test items by estimate (or of top-N
    lists against a testset).

    $$
    \mathrm{DCG@k} = \sum_{p=1}^{k} \frac{g(r_{(p)})}{\log_2(p + 1)},\qquad
    \mathrm{NDCG@k} = \mathrm{DCG@k} / \mathrm{IDCG@k}
    $$

    with gain $g(r) = r$ (``"linear"``) or $2^r - 1$
    (``"exponential"``), and IDCG the DCG of the items sorted by true rating.
    Items with equal estimates share the mean discount of the positions they
    occupy (the expected DCG over the orders of the tie; McSherry & Najork,
    ECIR 2008), so the value does not depend on the order of the input.
    Users whose IDCG is 0 are skipped.

    Over a top-N frame ([`dprec.evaluation.topn.recommend_batch`][]) and ``testset`` the relevance
    is binary (held-out interactions): an item at rank $p \le k$ gains 1 if the testset
    holds it for that user (with ``threshold``, rated at least that), and
    $\mathrm{IDCG@k} = \sum_{p=1}^{\min(k, |R_u|)} 1/\log_2(p + 1)$ over the user's
    relevant items $R_u$; users without one are skipped.

    Parameters
    ----------
    predictions : list of surprise Prediction, or DataFrame (uid, iid, rank)
    k : int, default 10
        Cut-off (``>= 1``).
    gains : {"linear", "exponential"}
        For predictions (a top-N frame's gains are binary).
    threshold : float, optional
        With a top-N frame: relevant if rated ``>= threshold`` in the testset (default:
        every pair of the testset).
    testset : list of (uid, iid, r_ui), required with a top-N frame

    Raises
    ------
    ValueError
        For a negative gain (shift the ratings) or when every IDCG is 0.
    """
    k = check_int(k, "k", minimum=1)
    gains = check_choice(gains, "gains", ("linear", "exponential"))
    if isinstance(predictions, pd.DataFrame):
        users, rank, relevant, _, n_relevant = _ranked(predictions, k, _check_threshold(
            threshold, predictions), testset)
        discount = 1.0 / np.log2(np.arange(k) + 2.0)
        dcg = np.bincount(users, discount[rank] * relevant, minlength=len(n_relevant))
        idcg = np.cumsum(discount)[np.minimum(n_relevant, k) - 1]
        valid = n_relevant > 0
        if not valid.any():
            raise ValueError("no user has a relevant item in testset: every ideal DCG is 0")
        return min(float(np.mean(dcg[valid] / idcg[valid])), 1.0)
    if threshold is not None or testset is not None:
        raise ValueError("threshold and testset are for a top-N frame (recommend_batch); "
                         "test predictions are scored by their true ratings")
    users, true, est = _arrays(predictions)
    gain = true if gains == "linear" else np.exp2(true) - 1.0
    if (gain < 0).any():
        raise ValueError("ndcg_at_k needs non-negative gains: some ratings are negative")
    n_users = int(users.max()) + 1

    def discounts(order: np.ndarray) -> np.ndarray:
        sorted_users = users[order]
        first = np.searchsorted(sorted_users, sorted_users, side="left")
        position = np.arange(len(order)) - first
        return np.where(position < k, 1.0 / np.log2(position + 2.0), 0.0)

    by_est = np.lexsort((-est, users))
    disc = discounts(by_est)
    key_users, key_est = users[by_est], est[by_est]
    new_group = np.r_[True, (np.diff(key_users) != 0) | (np.diff(key_est) != 0)]
    group = np.cumsum(new_group) - 1
    mean_disc = (np.bincount(group, disc) / np.bincount(group))[group]
    dcg = np.bincount(key_users, gain[by_est] * mean_disc, minlength=n_users)
    by_true = np.lexsort((-true, users))
    idcg = np.bincount(users[by_true], gain[by_true] * discounts(by_true), minlength=n_users)
    valid = idcg > 0
    if not valid.any():
        raise ValueError("every user's ideal DCG is 0 (all gains are 0)")
    # a perfect order can exceed 1 by rounding only
    return min(float(np.mean(dcg[valid] / idcg[valid])), 1.0)


# ------------------------------------------------------------- top-N metrics
def _ranked(predictions, k: int, threshold: float, testset):
    """Per ranked row: user code, rank (0-based), relevant, recommended; and per user the
    number of relevant items.

    From test predictions (Surprise's FAQ): each user's test items ranked by
    estimate (ties in input order); an item in the first ``k`` is
    recommended if its estimate is ``>= threshold``, relevant if its true
    rating is.  From a top-N frame (``recommend_batch``) and ``testset``:
    every listed item of rank ``<= k`` is recommended, relevant if the
    testset rates it ``>= threshold`` for that user; a user's relevant items
    are those of the testset.
    """
    if isinstance(predictions, pd.DataFrame):
        if testset is None:
            raise ValueError("testset is required to score a top-N frame")
        frame = predictions
        missing = {"uid", "iid", "rank"} - set(frame.columns)
        if missing:
            raise ValueError(f"predictions frame lacks column(s) {sorted(missing)}")
        if frame.empty:
            raise ValueError(_EMPTY)
        truth = pd.DataFrame(list(testset), columns=["uid", "iid", "r_ui"])
        if threshold is not None:
            truth = truth[pd.to_numeric(truth["r_ui"]) >= threshold]
        listed = frame[frame["rank"] <= k].sort_values(["uid", "rank"], kind="stable")
        codes, uniques = pd.factorize(pd.concat([listed["uid"], truth["uid"]],
                                                ignore_index=True))
        users = codes[:len(listed)]
        relevant_pairs = set(zip(truth["uid"].tolist(), truth["iid"].tolist()))
        relevant = np.fromiter(((u, i) in relevant_pairs for u, i in
                                zip(listed["uid"].tolist(), listed["iid"].tolist())), bool,
                               len(listed))
        rank = listed["rank"].to_numpy(np.int64) - 1
        if len(uniques) == 0:
            raise ValueError(f"predictions: no row has rank <= k={k} and testset no rating "
                             ">= threshold: there is no user to score")
        n_relevant = np.bincount(codes[len(listed):], minlength=len(uniques))
        return users, rank, relevant, np.ones(len(listed), bool), n_relevant
    users, true, est = _arrays(predictions)
    order = np.lexsort((-est, users))      # stable: ties keep the input order
    users, true, est = users[order], true[order], est[order]
    rank = np.arange(len(users)) - np.searchsorted(users, users, side="left")
    relevant = true >= threshold
    n_relevant = np.bincount(users, relevant)
    top = rank < k
    return users[top], rank[top], relevant[top], (est >= threshold)[top], n_relevant


def _check_threshold(threshold, predictions) -> float | None:
    """``threshold`` checked: a number, or None with a top-N frame (every testset pair is
    relevant: held-out interactions)."""
    if threshold is None:
        if not isinstance(predictions, pd.DataFrame):
            raise ValueError("threshold=None (every testset pair relevant) is for a top-N "
                             "frame with testset; test predictions need a number")
        return None
    return check_real(threshold, "threshold")


def _check_topn_args(k, threshold, predictions):
    return check_int(k, "k", minimum=1), _check_threshold(threshold, predictions)


def precision_at_k(predictions, k: int = 10, threshold: float = 3.5, testset=None) -> float:
    r"""Mean over users of precision@k: relevant recommended items / recommended items.

    Over test predictions, as Surprise's FAQ computes it: a user's ``k``
    best-estimated test items with estimate ``>= threshold`` are recommended,
    relevant if the true rating is ``>= threshold``; a user with nothing
    recommended scores 0.  Over a top-N frame ([`dprec.evaluation.topn.recommend_batch`][])
    and ``testset``: the first ``k`` items of each list.

    Parameters
    ----------
    predictions : list of surprise Prediction, or DataFrame (uid, iid, rank)
    k : int, default 10
    threshold : float or None, default 3.5
        Relevance: true rating ``>= threshold``.  With a top-N frame, ``None`` makes every
        pair of ``testset`` relevant (held-out interactions, binary relevance).
    testset : list of (uid, iid, r_ui), required with a top-N frame
    """
    k, threshold = _check_topn_args(k, threshold, predictions)
    users, _, relevant, recommended, n_relevant = _ranked(predictions, k, threshold, testset)
    n = len(n_relevant)
    hits = np.bincount(users, relevant & recommended, minlength=n)
    shown = np.bincount(users, recommended, minlength=n)
    return float(np.mean(safe_divide(hits, shown)))


def recall_at_k(predictions, k: int = 10, threshold: float = 3.5, testset=None) -> float:
    r"""Mean over users of recall@k: relevant recommended items / relevant items.

    Same recommendations as [`precision_at_k`][]; a user without relevant
    items scores 0 (Surprise's FAQ).
    """
    k, threshold = _check_topn_args(k, threshold, predictions)
    users, _, relevant, recommended, n_relevant = _ranked(predictions, k, threshold, testset)
    n = len(n_relevant)
    hits = np.bincount(users, relevant & recommended, minlength=n)
    return float(np.mean(safe_divide(hits, n_relevant)))


def map_at_k(predictions, k: int = 10, threshold: float = 3.5, testset=None) -> float:
    r"""Mean average precision at k over the users with a relevant item.

    $$
    \mathrm{AP@k}(u) = \frac{1}{\min(k, |R_u|)} \sum_{p=1}^{k}
        \mathrm{P@p}(u)\, [\text{item at } p \in R_u]
    $$

    with the items ranked as in [`precision_at_k`][] (over test
    predictions every one of the first ``k`` counts as shown, whatever its
    estimate) and $R_u$ the user's relevant items.
    """
    k, threshold = _check_topn_args(k, threshold, predictions)
    users, rank, relevant, _, n_relevant = _ranked(predictions, k, threshold, testset)
    hits_so_far = np.zeros(len(users))
    if len(users):
        cumulative = np.cumsum(relevant)
        first = np.searchsorted(users, users, side="left")
        hits_so_far = cumulative - np.where(first > 0, cumulative[np.maximum(first - 1, 0)], 0)
    precision = np.where(relevant, hits_so_far / (rank + 1), 0.0)
    n = len(n_relevant)
    total = np.bincount(users, precision, minlength=n)
    valid = n_relevant > 0
    if not valid.any():
        raise ValueError("no user has a relevant item (true rating >= threshold)")
    return float(np.mean(total[valid] / np.minimum(k, n_relevant[valid])))


def coverage(recommendations: pd.DataFrame, n_items: int) -> float:
    """Catalogue coverage: the share of the ``n_items`` items that appear in some
    top-N list (a frame with an ``iid`` column, e.g. from ``recommend_batch``)."""
    n_items = check_int(n_items, "n_items", minimum=1)
    if not isinstance(recommendations, pd.DataFrame) or "iid" not in recommendations:
        raise TypeError("recommendations must be a DataFrame with an 'iid' column")
    return recommendations["iid"].nunique() / n_items
