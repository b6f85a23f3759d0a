"""A synthetic rating generator calibrated to MovieLens 100k.

[`synthetic`][] draws a rating dataset of any shape from a generative model
whose defaults were fitted to MovieLens 100k so that the accuracy ladder
(global, user and item means, `BaselineOnly`, `SVD`, the kNN family) of the
generated data matches the real data's at its shape; [Data](../data.md)
gives both ladders, what the model reproduces and what it does not.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from types import MappingProxyType

import numpy as np
from surprise import Dataset, Reader

from ..utils._arrays import segment_ids
from ..utils._rng import RandomStateLike, check_random_state
from ..utils._validation import check_int, check_real
from .arrays import ArrayDataset
from .files import ratings_frame
from .sampling import DENSE_CELLS, dense_sample, sparse_sample

__all__ = ["ML100K_CALIBRATION", "ML100K_HISTOGRAM", "synthetic"]

#: Share of each rating 1..5 in MovieLens 100k (6110, 11370, 27145, 34174 and
#: 21201 of its 100000 ratings); the default histogram of `synthetic`.
ML100K_HISTOGRAM: tuple[float, ...] = (0.0611, 0.1137, 0.27145, 0.34174, 0.21201)

#: The defaults of `synthetic`'s generative model, fitted to MovieLens 100k (see
#: [Data](../data.md) for the ladder they reproduce).
ML100K_CALIBRATION: Mapping[str, float] = MappingProxyType({
    "n_factors": 10, "user_bias": 0.5, "item_bias": 0.72, "popularity_bias": 0.4,
    "interaction": 0.68, "n_clusters": 50, "cluster_spread": 0.3, "user_scale": 0.5,
    "noise": 0.86, "consistency": 0.08, "popular_noise": 0.05, "popularity_sigma": 1.5,
    "selection_bias": 0.5, "activity_sigma": 1.2,
})

# The users' log-activity is truncated at this many stds (MovieLens 100k's most active
# user rated 737 films, not all of them).
_ACTIVITY_CLIP = 1.8
# The largest `user_scale`, `consistency` and |`popular_noise`|.
_MAX_EXPONENT = 5.0
# Ratings per user at which the rating noise has its nominal std ``noise``.
_REFERENCE_ACTIVITY = 100.0
_C = ML100K_CALIBRATION


def _check_histogram(histogram) -> np.ndarray:
    try:
        probs = np.asarray(histogram, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError("rating_histogram must be a sequence of 5 numbers") from None
    if probs.shape != (5,):
        raise ValueError(f"rating_histogram must have 5 entries (ratings 1..5), got shape "
                         f"{probs.shape}")
    if not np.all(np.isfinite(probs)) or np.any(probs < 0) or probs.sum() <= 0:
        raise ValueError("rating_histogram must be finite, >= 0 and not all 0")
    return probs / probs.sum()


def _user_counts(rng: np.random.Generator, n_users: int, n_items: int, n_ratings: int,
                 minimum: int, activity_sigma: float) -> np.ndarray:
    """Ratings per user: ``minimum`` each plus a truncated log-normal share of the rest."""
    counts = np.full(n_users, minimum, dtype=np.int64)
    log_activity = activity_sigma * np.minimum(rng.standard_normal(n_users), _ACTIVITY_CLIP)
    activity = np.exp(log_activity - log_activity.max())     # in (0, 1]: no overflow
    remaining = n_ratings - minimum * n_users
    while remaining > 0:
        room = n_items - counts
        weights = np.where(room > 0, activity, 0.0)
        if weights.sum() <= 0:    # only users of activity ~0 have room: spread evenly
            weights = (room > 0).astype(np.float64)
        extra = np.minimum(rng.multinomial(remaining, weights / weights.sum()), room)
        counts += extra
        remaining -= int(extra.sum())
    return counts


def _item_factors(rng: np.random.Generator, n_items: int, n_factors: int, n_clusters: int,
                  cluster_spread: float) -> tuple[np.ndarray, np.ndarray]:
    """Unit-variance item factors, around ``n_clusters`` random centres (0: no centres),
    and each item's centre (all 0 without centres)."""
    if n_clusters == 0:
        return rng.standard_normal((n_items, n_factors)), np.zeros(n_items, dtype=np.int64)
    centres = rng.standard_normal((n_clusters, n_factors))
    members = rng.integers(n_clusters, size=n_items)
    spread = cluster_spread * rng.standard_normal((n_items, n_factors))
    return (centres[members] + spread) / math.sqrt(1.0 + cluster_spread ** 2), members


def _standardised(values: np.ndarray) -> np.ndarray:
    """`values` at mean 0 and std 1 (the biases' realised spread is the nominal one)."""
    centred = values - values.mean()
    std = centred.std()
    return centred / std if std > 0 else centred


def synthetic(n_users: int = 943, n_items: int = 1682, n_ratings: int = 100_000,
              random_state: RandomStateLike = None, n_factors: int = _C["n_factors"], *,
              user_bias: float = _C["user_bias"], item_bias: float = _C["item_bias"],
              popularity_bias: float = _C["popularity_bias"],
              interaction: float = _C["interaction"], n_clusters: int = _C["n_clusters"],
              cluster_spread: float = _C["cluster_spread"],
              user_scale: float = _C["user_scale"], noise: float = _C["noise"],
              consistency: float = _C["consistency"],
              popular_noise: float = _C["popular_noise"],
              popularity_sigma: float = _C["popularity_sigma"],
              selection_bias: float = _C["selection_bias"],
              activity_sigma: float = _C["activity_sigma"],
              min_user_ratings: int | None = None,
              rating_histogram: Sequence[float] = ML100K_HISTOGRAM,
              as_arrays: bool = False) -> Dataset | ArrayDataset:
    r"""A rating dataset drawn from a latent-factor model calibrated to MovieLens 100k.

    The generative model, each step vectorised (no Python loop over ratings):

    1. **Who rates how much.**  Every user gets `min_user_ratings` ratings plus
       a share of the rest proportional to a log-normal activity
       $e^{\sigma_a \min(z_u, 1.8)}$ ($\sigma_a$ = `activity_sigma`), capped at
       `n_items`.
    2. **Items.**  Log-popularity $\ell_i = \sigma_p z_i$
       ($\sigma_p$ = `popularity_sigma`); the item bias
       $b_i = \beta_i(\rho\, \tilde\ell_i + \sqrt{1-\rho^2}\, z'_i)$, with
       $\tilde\ell$ the standardised log-popularity and $\rho$ =
       `popularity_bias` (popular films are rated higher); item factors
       $q_i$ around one of `n_clusters` random centres (genres, series) with
       spread `cluster_spread`, unit variance per factor.
    3. **Users.**  A bias $b_u = \beta_u z_u$, factors
       $p_u \sim \mathcal N(0, \gamma^2 / k)$ ($\gamma$ = `interaction`, so
       $p_u \cdot q_i$ has variance $\gamma^2$), a log-normal scale
       $s_u$ (`user_scale`: some users spread their ratings, others do not)
       and a noise level that falls with activity,
       $\sigma_u = \sigma (n_u / 100)^{-c}$ ($c$ = `consistency`: frequent
       raters are more consistent), times $e^{\eta\, \tilde\ell_i}$ per item
       ($\eta$ = `popular_noise`).
    4. **Which items.**  User $u$ draws $n_u$ items without replacement with
       weights $e^{\ell_i + \lambda\, p_u \cdot q_i}$ ($\lambda$ =
       `selection_bias`: people rate more of what they like): successive
       sampling, by Efraimidis–Spirakis keys over dense blocks of users up to
       $10^9$ users $\times$ items, beyond by rejection from the popularity
       with repeats dropped, the same law
       ([`sparse_sample`][dprec.datasets.sampling.sparse_sample]); when `n_ratings`
       $\ge$ `n_items`, unrated items are swapped in for surplus ratings of
       items rated several times, so every item has a rating.
    5. **Ratings.**  The preference
       $b_u + s_u (b_i + p_u \cdot q_i) + \sigma_u e^{\eta \tilde\ell_i} z_{ui}$
       of each chosen pair is cut at its quantiles into 1–5 with exactly
       `rating_histogram` (by default MovieLens 100k's).

    Parameters
    ----------
    n_users, n_items : int, >= 1
        Raw ids are the strings `"1"..str(n_users)` and `"1"..str(n_items)`.
    n_ratings : int
        Exactly this many ratings, no (user, item) pair twice; from `n_users`
        (every user rates) to `n_users * n_items`.
    random_state : None, int, numpy RandomState or Generator
        Same int seed (and same other arguments), same dataset.
    n_factors : int, >= 1
        Dimension of the latent preferences.
    user_bias, item_bias : float, >= 0
        Std of the user bias and of the item bias ($\beta_u$, $\beta_i$; with
        `popularity_sigma` = 0 the item bias' std is $\beta_i \sqrt{1-\rho^2}$).
    popularity_bias : float in [-1, 1]
        Correlation of the item bias with the item's log-popularity.
    interaction : float, >= 0
        Std of the user-item interaction $p_u \cdot q_i$ (0: no collaborative
        signal).
    n_clusters : int, >= 0
        Centres the item factors gather around (0: independent Gaussian factors).
    cluster_spread : float, >= 0
        Std of an item's factors around its centre, relative to the centres'.
    user_scale : float in [0, 5]
        Std of the users' log rating scale; a user's scale is
        $s_u = e^{\sigma_s z_u - \sigma_s^2}$ ($E[s_u^2] = 1$).
    noise : float, >= 0
        Std of the rating noise of a user with 100 ratings.
    consistency : float in [0, 5]
        How fast the noise falls with a user's number of ratings.
    popular_noise : float in [-5, 5]
        How the noise grows (> 0) or falls with an item's log-popularity.
    popularity_sigma : float, >= 0
        Std of the items' log-popularity (0: uniform popularity).
    selection_bias : float, >= 0
        How much liking an item raises the chance of rating it.
    activity_sigma : float, >= 0
        Std of the users' log-activity (0: the ratings above the minimum are
        spread evenly).
    min_user_ratings : int, optional
        Ratings every user has.  Default `min(20, n_items, n_ratings //
        n_users)` (MovieLens keeps users with at least 20 ratings).
    rating_histogram : sequence of 5 floats
        Relative frequencies of ratings 1..5 (normalised to sum to 1).
    as_arrays : bool, default False
        Return the same ratings, in the same order, as an
        [`ArrayDataset`][dprec.datasets.arrays.ArrayDataset] (no Python object per
        rating) instead of a Surprise `Dataset`.

    Returns
    -------
    surprise.dataset.Dataset or ArrayDataset
        `rating_scale` (1, 5), ratings as floats in {1, ..., 5}, raw ratings
        ordered by user then item, no timestamps.

    Raises
    ------
    TypeError
        For arguments of the wrong type.
    ValueError
        For sizes < 1, `n_ratings` outside `[n_users, n_users * n_items]`, an
        impossible `min_user_ratings`, a parameter out of its range or a bad
        histogram.

    Notes
    -----
    Up to $10^9$ users $\times$ items, time and memory grow with
    `n_users * n_items` (dense blocks of about 4M cells are sampled at a time):
    the ML-100k shape takes a fraction of a second, ML-1M's (6040 x 3706,
    1000209 ratings) a few seconds, ML-10M's minutes.  Beyond, they grow with
    `n_ratings`: on 2 shared cores with `as_arrays=True`, ML-25M's shape
    (162,541 x 59,047, 25,000,095 ratings) takes about a minute and 2.0 GB,
    Netflix's (480,189 x 17,770, 100,480,507) 4–5 minutes and 7.7 GB.  The datasets up to
    $10^9$ cells are the ones this function always gave for the same seed.

    Examples
    --------
    >>> data = synthetic(n_users=100, n_items=150, n_ratings=3000, random_state=0)
    >>> trainset = data.build_full_trainset()
    >>> trainset.n_users, trainset.n_items, trainset.n_ratings
    (100, 150, 3000)
    """
    n_users = check_int(n_users, "n_users", minimum=1)
    n_items = check_int(n_items, "n_items", minimum=1)
    n_ratings = check_int(n_ratings, "n_ratings", minimum=1)
    n_factors = check_int(n_factors, "n_factors", minimum=1)
    n_clusters = check_int(n_clusters, "n_clusters", minimum=0)
    user_bias, item_bias, interaction, cluster_spread, noise, popularity_sigma, \
        selection_bias, activity_sigma = (
            check_real(value, name, low=0.0) for value, name in (
                (user_bias, "user_bias"), (item_bias, "item_bias"),
                (interaction, "interaction"), (cluster_spread, "cluster_spread"),
                (noise, "noise"), (popularity_sigma, "popularity_sigma"),
                (selection_bias, "selection_bias"), (activity_sigma, "activity_sigma")))
    # the multipliers of the noise and of the scale are exponentials: bounded, so that
    # none overflows (beyond, a handful of users or items would hold all the variance)
    user_scale = check_real(user_scale, "user_scale", low=0.0, high=_MAX_EXPONENT)
    consistency = check_real(consistency, "consistency", low=0.0, high=_MAX_EXPONENT)
    popular_noise = check_real(popular_noise, "popular_noise", low=-_MAX_EXPONENT,
                               high=_MAX_EXPONENT)
    popularity_bias = check_real(popularity_bias, "popularity_bias", low=-1.0, high=1.0)
    probs = _check_histogram(rating_histogram)
    if n_ratings > n_users * n_items:
        raise ValueError(f"n_ratings must be <= n_users * n_items = {n_users * n_items} "
                         f"(no pair is rated twice), got {n_ratings}")
    if n_ratings < n_users:
        raise ValueError(f"n_ratings must be >= n_users = {n_users} (every user rates at "
                         f"least one item), got {n_ratings}")
    if min_user_ratings is None:
        minimum = min(20, n_items, n_ratings // n_users)
    else:
        minimum = check_int(min_user_ratings, "min_user_ratings", minimum=1, maximum=n_items)
        if minimum * n_users > n_ratings:
            raise ValueError(f"min_user_ratings must be <= n_ratings // n_users = "
                             f"{n_ratings // n_users}, got {minimum}")
    rng = check_random_state(random_state)

    # Items: popularity, bias, factors.
    log_popularity = popularity_sigma * rng.standard_normal(n_items)
    popularity_z = _standardised(log_popularity)
    item_bias_ = item_bias * (popularity_bias * popularity_z + math.sqrt(
        1.0 - popularity_bias ** 2) * _standardised(rng.standard_normal(n_items)))
    item_factors, members = _item_factors(rng, n_items, n_factors, n_clusters, cluster_spread)
    # Users: bias, factors, scale, activity.
    user_bias_ = user_bias * _standardised(rng.standard_normal(n_users))
    user_factors = rng.standard_normal((n_users, n_factors)) * (interaction
                                                                / math.sqrt(n_factors))
    scale = np.exp(user_scale * rng.standard_normal(n_users) - user_scale ** 2)
    counts = _user_counts(rng, n_users, n_items, n_ratings, minimum, activity_sigma)

    # Who rates which items: weighted sampling without replacement per user.
    if n_users * n_items <= DENSE_CELLS:
        items = dense_sample(rng, log_popularity, user_factors, item_factors, counts,
                             selection_bias)
    else:
        items = sparse_sample(rng, log_popularity, user_factors, item_factors, counts,
                              selection_bias, groups=members)
    users = segment_ids(counts)
    if n_ratings >= n_items:
        items = _cover_items(rng, items, n_items)

    # Ratings: preference cut at its quantiles into the target histogram.
    user_noise = noise * (counts / _REFERENCE_ACTIVITY) ** -consistency
    item_noise = np.exp(popular_noise * popularity_z)
    preference = rng.standard_normal(n_ratings) * user_noise[users] * item_noise[items]
    preference += user_bias_[users]
    for start in range(0, n_ratings, 1 << 18):
        part = slice(start, start + (1 << 18))
        u, i = users[part], items[part]
        preference[part] += scale[u] * (item_bias_[i] + np.einsum(
            "ij,ij->i", user_factors[u], item_factors[i]))
    cuts = np.round(np.cumsum(probs)[:-1] * n_ratings).astype(np.int64)
    ratings = np.empty(n_ratings, dtype=np.float64)
    ratings[np.argsort(preference, kind="stable")] = np.repeat(
        np.arange(1.0, 6.0), np.diff(np.concatenate([[0], cuts, [n_ratings]])))

    order = np.argsort(users * n_items + items)    # by user, then item (no pair twice)
    if as_arrays:
        return ArrayDataset.from_columns(users[order] + 1, items[order] + 1, ratings[order],
                                         rating_scale=(1, 5))
    frame = ratings_frame(users[order] + 1, items[order] + 1, ratings[order])
    return Dataset.load_from_df(frame, Reader(rating_scale=(1, 5)))


def _cover_items(rng: np.random.Generator, items: np.ndarray, n_items: int) -> np.ndarray:
    """Give every unrated item one rating taken from an item with several.

    A rating ``(u, j)`` of an item ``j`` rated at least twice becomes
    ``(u, i)`` for an unrated ``i``: no pair can repeat (nobody rated ``i``),
    users keep their counts and ``j`` keeps at least one rating.
    """
    item_counts = np.bincount(items, minlength=n_items)
    unrated = np.flatnonzero(item_counts == 0)
    if len(unrated) == 0:
        return items
    # Position of each rating within its item (0 for the first): all but one
    # rating of every item may be given away.
    order = np.argsort(items, kind="stable")
    starts = np.concatenate([[0], np.cumsum(item_counts)[:-1]])
    within = np.empty(len(items), dtype=np.int64)
    within[order] = np.arange(len(items)) - starts[items[order]]
    spare = np.flatnonzero(within > 0)
    taken = rng.choice(spare, size=len(unrated), replace=False)
    items = items.copy()
    items[taken] = rng.permutation(unrated)
    return items
