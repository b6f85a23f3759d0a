r"""Ranking metrics on Surprise predictions: pairwise accuracy, Kendall τ, NDCG@k.

Every function takes a list of Surprise ``Prediction`` tuples (``uid``,
``iid``, ``r_ui``, ``est``, ``details``), groups them by user and compares, for
each user, the order of the estimates with the order of the true ratings
(ALGORITHMS.md §5).  Work is done on numpy arrays per block of users; there is
no Python loop over pairs or predictions.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import pandas as pd

from ._validation import check_choice, check_int

__all__ = ["kendall_tau", "ndcg_at_k", "pairwise_accuracy"]

#: Largest number of within-user pairs materialised at once.
_PAIR_BLOCK = 1 << 22


def _arrays(predictions: Sequence) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """User codes, true ratings and estimates, sorted by user (stable)."""
    if isinstance(predictions, (str, bytes)) or not isinstance(predictions, Sequence):
        raise TypeError("predictions must be a list of Surprise Prediction tuples, "
                        f"got {type(predictions).__name__}")
    if len(predictions) == 0:
        raise ValueError("predictions is empty")
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
            offset = np.arange(total) - np.repeat(np.cumsum(partners) - partners, partners)
            yield left, left + 1 + offset
        lo = hi


def pairwise_accuracy(predictions: Sequence, average: str = "pooled") -> float:
    r"""Fraction of each user's test pairs that the estimates order correctly.

    Over the pairs :math:`(i, j)` of predictions of the same user with
    :math:`r_{ui} \ne r_{uj}`:

    .. math::
        \mathrm{acc} = \frac{\sum \big[\mathbb 1\{(\hat r_{ui} - \hat r_{uj})
        (r_{ui} - r_{uj}) > 0\} + \tfrac12 \mathbb 1\{\hat r_{ui} = \hat r_{uj}\}\big]}
        {\#\text{pairs}}

    Parameters
    ----------
    predictions : list of surprise Prediction
    average : {"pooled", "user"}
        ``"pooled"``: all users' pairs together (ALGORITHMS.md §5);
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
    r"""Mean over users of Kendall's :math:`\tau_b` between true ratings and estimates.

    .. math::
        \tau_b = \frac{C - D}{\sqrt{(n_0 - n_1)(n_0 - n_2)}}

    with :math:`C, D` the concordant and discordant pairs, :math:`n_0` all
    pairs, :math:`n_1, n_2` the pairs tied in the true ratings and in the
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


def ndcg_at_k(predictions: Sequence, k: int = 10, gains: str = "linear") -> float:
    r"""Mean over users of NDCG@k, ranking each user's test items by estimate.

    .. math::
        \mathrm{DCG@k} = \sum_{p=1}^{k} \frac{g(r_{(p)})}{\log_2(p + 1)},\qquad
        \mathrm{NDCG@k} = \mathrm{DCG@k} / \mathrm{IDCG@k}

    with gain :math:`g(r) = r` (``"linear"``) or :math:`2^r - 1`
    (``"exponential"``), and IDCG the DCG of the items sorted by true rating.
    Items with equal estimates share the mean discount of the positions they
    occupy (the expected DCG over the orders of the tie; McSherry & Najork,
    ECIR 2008), so the value does not depend on the order of the input.
    Users whose IDCG is 0 are skipped.

    Parameters
    ----------
    predictions : list of surprise Prediction
    k : int, default 10
        Cut-off (``>= 1``).
    gains : {"linear", "exponential"}

    Raises
    ------
    ValueError
        For a negative gain (shift the ratings) or when every IDCG is 0.
    """
    k = check_int(k, "k", minimum=1)
    gains = check_choice(gains, "gains", ("linear", "exponential"))
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
