r"""Effects read from noisy released sums: shrunk by what the noise allows.

Post-processing shared by the end-to-end models ([`DPBaseline`][dprec.DPBaseline],
[`LocalKNN`][dprec.LocalKNN]; `SIGNAL` by [`DPItemKNN`][dprec.DPItemKNN] and
[`DPALS`][dprec.DPALS] too): every function reads released statistics and the public
scales of their noise (empirical Bayes with a known noise variance), or a user's own
ratings for their own answers, never anything else.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import ndtr

from ..utils._arrays import safe_divide, segment_ids

__all__ = ["SIGNAL", "effects_above_noise", "noise_shares", "own_effects", "shrunk_effects",
           "stabilised_effects", "towards_noisy_mean"]

#: an item's effect is used only where its noisy weight exceeds this many noise
#: standard deviations (a public constant: below it the statistics are mostly noise)
SIGNAL = 2.0


def shrunk_effects(sums: np.ndarray, counts: np.ndarray, noise_sd: tuple[float, float],
                   shrinkage: float, prior_variance: float, bound: float) -> np.ndarray:
    r"""Item effects from noisy centred sums and weights, shrunk by what the noise allows.

    $b_i = \tilde S_i / (\max(\tilde N_i, 0) + \beta + \sigma_S^2 / (\tau^2 (\tilde N_i -
    2\sigma_N)))$ where $\tilde N_i > 2 \sigma_N$ (`SIGNAL`), 0 elsewhere — the posterior
    mean of an effect of prior variance $\tau^2$ seen through noise of standard deviations
    `noise_sd` $= (\sigma_S, \sigma_N)$, its weight taken at a low estimate — then
    centred at their mean weighted by $\max(\tilde N_i, 0)$ (an item below the noise,
    at 0 before, is then at the scale's middle against the average item: less-rated items
    are rated lower, measured on MovieLens 100k by 0.008 RMSE at ε = 1) and clipped to
    `[-bound, bound]`.  Everything read is released or public (post-processing)."""
    sd_sum, sd_count = noise_sd
    signal = counts > SIGNAL * sd_count
    support = np.where(signal, counts - SIGNAL * sd_count, 1.0)
    denominator = np.maximum(counts, 0.0) + shrinkage + sd_sum**2 / (prior_variance * support)
    effects = np.where(signal, safe_divide(sums, denominator), 0.0)     # denominator > 0
    weights = np.maximum(counts, 0.0)
    if weights.sum() > 0:     # centred: an item below the noise sits at the scale's middle
        effects -= np.dot(weights, effects) / weights.sum()
    return np.clip(effects, -bound, bound)


def effects_above_noise(sums: np.ndarray, counts: np.ndarray,
                        noise_sd: tuple[np.ndarray | float, np.ndarray | float]) -> bool:
    r"""Whether the releases show any effect beyond their noise: a one-sided test of
    "every ratio $\tilde S_i / \tilde N_i$ is 0 plus noise" over the items whose weight is
    above `SIGNAL` noise standard deviations.  With $e_i = \tilde S_i / \tilde N_i$ and
    its noise's variance $v_i = (\sigma_{S,i}^2 + e_i^2 \sigma_{N,i}^2) / \tilde N_i^2$ (first
    order in the noise of both), the statistic $\sum_i w_i (e_i^2 - v_i) / \sum_i w_i$
    with $w_i = v_i^{-2}$ (the most powerful weights against no effect) has standard error
    $\sqrt{2 / \sum_i w_i}$ without effects; the test passes above `SIGNAL` of them.
    The noise standard deviations `noise_sd` $= (\sigma_S, \sigma_N)$ broadcast against
    the statistics; an upper bound on them makes the test conservative.
    Post-processing: public noise scales and released statistics only."""
    sd_sum, sd_count = (np.broadcast_to(np.asarray(sd, dtype=np.float64), counts.shape)
                        for sd in noise_sd)
    signal = counts > SIGNAL * sd_count
    if not signal.any():
        return False
    weights = counts[signal]
    ratios = sums[signal] / weights
    variance = (sd_sum[signal] ** 2 + ratios**2 * sd_count[signal] ** 2) / weights**2
    if not (variance > 0).all():        # a ratio seen without noise: an effect if not 0
        return bool(np.any(ratios[variance == 0] != 0))
    precision = variance**-2.0
    statistic = np.dot(precision, ratios**2 - variance) / precision.sum()
    return bool(statistic > SIGNAL * math.sqrt(2.0 / precision.sum()))


def noise_shares(counts: np.ndarray, count_sd: float) -> np.ndarray:
    r"""Each item's estimated share of pure noise among the items released at least as
    heavy: the Benjamini–Hochberg tail-area false discovery rate
    $q_i = \min_{j: \tilde N_j \le \tilde N_i} \min(1, n\, \bar\Phi(\tilde N_j / \sigma_N)
    / \#\{k : \tilde N_k \ge \tilde N_j\})$ of the noisy weights `counts` against
    Gaussian noise of standard deviation `count_sd` (an item with no raters).  Where the
    release is mostly noise (as many items above a level as noise alone would put there)
    $q_i \to 1$; public noise scale and released statistics only (post-processing)."""
    counts = np.asarray(counts, dtype=np.float64)
    n = len(counts)
    if n == 0:
        return np.zeros(0)
    # P(noise > Ñ_i); without noise, 1 exactly where nothing was released
    tail = ndtr(-counts / count_sd) if count_sd > 0 else (counts <= 0).astype(np.float64)
    order = np.argsort(-counts, kind="stable")          # heaviest first
    q = np.minimum(1.0, n * tail[order] / np.arange(1, n + 1))
    shares = np.empty(n)
    shares[order] = np.minimum.accumulate(q[::-1])[::-1]
    return shares


def stabilised_effects(sums: np.ndarray, counts: np.ndarray, offset: float, beta: float,
                       bound: float) -> np.ndarray:
    """Item effects `(S_i − N_i · offset) / (max(N_i, 0) + β)` from noisy sums and counts
    (0 where the denominator is 0), clipped to `[−bound, bound]`: post-processing."""
    denominator = np.maximum(counts, 0.0) + beta
    effects = safe_divide(sums - counts * offset, denominator)     # denominator >= 0
    return np.clip(effects, -bound, bound)


def towards_noisy_mean(shrinkage: float, mean_sd: float, half_range: float) -> float:
    r"""The user shrinkage towards a released mean of noise standard deviation `mean_sd`:
    $\lambda = \sigma^2 / \tau_u^2$ read with $\sigma = B/2$ ($B$ = `half_range`), the
    prior variance $\tau_u^2$ of a user's offset grown by the mean's noise, $\lambda' =
    \lambda / (1 + \lambda\, \sigma_\mu^2 / \sigma^2)$: where the mean is mostly noise
    $\lambda' \to 0$ and $b_u$ is the user's own mean's offset, unshrunk."""
    return shrinkage / (1.0 + shrinkage * (mean_sd / (half_range / 2.0)) ** 2)


def own_effects(matrix, base: np.ndarray, shrinkage: float) -> np.ndarray:
    r"""Each user's $b_u = \sum_i (r_{ui} - \text{base}_i) / (|I_u| + \lambda)$ from their
    own ratings (the rows of `matrix`; `base` per item, e.g. $\mu + b_i$); 0 for a user
    without ratings (also when $\lambda = 0$)."""
    counts = np.diff(matrix.indptr)
    users = segment_ids(counts)
    residuals = matrix.data - base[matrix.indices]
    return safe_divide(np.bincount(users, residuals, matrix.shape[0]), counts + shrinkage)
