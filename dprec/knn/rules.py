r"""The prediction rules: how the chosen neighbours' ratings become an estimate.

Surprise's four kNN rules, for user $u$ and item $i$, over the chosen
neighbours $v \in N$ with $s(u, v) > 0$ who rated $i$ (user-based;
item-based swaps the roles of users and items; `min_sim` $m$ keeps those with
$s > m$ instead, $s \ne 0$, and divides by $\sum_v |s(u,v)|$, which is
$\sum_v s(u,v)$ bit for bit while $m \ge 0$), each a function below:

- `basic` (`KNNBasic`): $\hat r_{ui} = \sum_v s(u,v)\, r_{vi} / \sum_v s(u,v)$;
- `means` (`KNNWithMeans`):
  $\hat r_{ui} = \mu_u + \sum_v s(u,v)(r_{vi} - \mu_v) / \sum_v s(u,v)$;
- `zscore` (`KNNWithZScore`):
  $\hat r_{ui} = \mu_u + \sigma_u \sum_v s(u,v)(r_{vi} - \mu_v)/\sigma_v / \sum_v s(u,v)$;
- `baseline` (`KNNBaseline`):
  $\hat r_{ui} = b_{ui} + \sum_v s(u,v)(r_{vi} - b_{vi}) / \sum_v s(u,v)$,

with $b_{ui} = \mu + b_u + b_i$ (Koren 2010).  The last three fall back to
$\mu_u$ (or $b_{ui}$) when fewer than `min_k` neighbours contribute, as
Surprise's do; `basic` is then impossible, or $\mu_u$ with
`fallback="user_mean"`; with `fallback="baseline"` every rule answers $b_{ui}$
below $\max(\texttt{min\_k}, 1)$ neighbours.  The papers' centred rule
(`centered=True`) is $\mu_u + \sum_v s(u,v)(r_{vi} - \mu_v) / \sum_v |s(u,v)|$
over the neighbours with $s \ne 0$ (and $s >$ `min_sim` if one is given).  A
shrinkage $\lambda$ weighs the neighbours' term by $n / (n + \lambda)$, $n$ the
number of contributing neighbours (`actual_k`).

A fitted model keeps each rule it was asked for as a `Rule` (what each stored
rating contributes, in both orders of the ratings) in its `Rules`; the
neighbourhood engines compute the weighted mean of the contributions over the
chosen neighbours (`weighted_mean`, or sparse products) and `Rules.finish`
turns it into the estimate.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp

from ..utils import _kernels as kernels
from ..utils._arrays import safe_divide, segment_ids
from ..utils._ratings import RatingArrays, deviation_matrix
from ..utils._validation import check_choice, check_real
from .blocks import at_positions, sequential_sum

#: Surprise's kNN prediction rules: KNNBasic, KNNWithMeans, KNNWithZScore, KNNBaseline
PREDICTIONS = ("basic", "means", "zscore", "baseline")
#: what the rules predict with fewer than `min_k` contributing neighbours: Surprise's
#: fallbacks (`"global_mean"`: the basic rule impossible, the others theirs; `"user_mean"`:
#: the basic rule $\mu_u$), or $b_{ui}$ for every rule (`"baseline"`)
FALLBACKS = ("global_mean", "user_mean", "baseline")
#: the parameters that only turn the chosen neighbours into an estimate: models that differ
#: in them alone make the same selections (`PrivateKNN.estimate_rules`)
RULE_PARAMETERS = ("prediction", "fallback", "neighbour_shrinkage")


@dataclass(frozen=True)
class Rule:
    """A prediction rule of a fitted model: what each stored rating contributes to the
    weighted sum over the chosen neighbours, and how that sum becomes an estimate."""

    prediction: str
    fallback: str
    shrinkage: float
    by_column: np.ndarray    # the deviations in the item-major order (`item_users`)
    matrix: sp.csc_matrix    # the deviations as a rows × columns matrix

    @property
    def key(self) -> tuple[str, str, float]:
        """`(prediction, fallback, shrinkage)`: the rule's key in the model's rules."""
        return self.prediction, self.fallback, self.shrinkage


class Rules:
    """The prediction rules of one fit, built once each, and how their weighted means
    become estimates.

    Parameters
    ----------
    ratings : RatingArrays
        The fitted ratings, in Surprise's `(x, y)` roles (users and items, or swapped).
    centered : bool
        The papers' centred rule (every rule is then the basic one, centred).
    min_k : int
        Fewer contributing neighbours than this make the rule fall back.
    min_sim : float
        The chosen neighbours with similarity $s \\ne 0$ and $s >$ `min_sim` contribute
        (`counts`).

    Attributes
    ----------
    means, sigmas : ndarray
        Each row's mean rating $\\mu_x$ and standard deviation $\\sigma_x$
        (`RatingArrays.user_means`, `RatingArrays.user_sigmas`).
    """

    def __init__(self, ratings: RatingArrays, centered: bool, min_k: int,
                 min_sim: float) -> None:
        self.ratings = ratings
        self.means, self.sigmas = ratings.user_means(), ratings.user_sigmas()
        self.centered, self.min_k, self.min_sim = centered, min_k, min_sim
        self.bx = self.by = None
        self._built: dict[tuple, Rule] = {}

    def __getitem__(self, key: tuple[str, str, float]) -> Rule:
        """The rule `key`, built before by `rule`."""
        return self._built[key]

    def rule(self, key: tuple[str, str, float],
             baselines: Callable[[], tuple[np.ndarray, np.ndarray]]) -> Rule:
        """The rule `(prediction, fallback, shrinkage)` on the fitted ratings (built once
        per fit; `baselines()` gives $(b_x, b_y)$ when a baseline rule first needs them):
        what each stored rating $r_{xy}$ contributes to the weighted sum, $r$ (basic),
        $r - \\mu_x$ (means, centred), $(r - \\mu_x) / \\sigma_x$ (zscore; 0 where
        $\\sigma_x = 0$, i.e. all the ratings are equal, so the estimate is then $\\mu_u$),
        $r - (\\mu + b_x + b_y)$ (baseline); the baselines are fitted for
        `fallback="baseline"` too."""
        if key in self._built:
            return self._built[key]
        if "baseline" in key[:2] and self.bx is None:
            self.bx, self.by = baselines()
        shared = next((other for other in self._built.values() if other.prediction == key[0]),
                      None)
        if shared is not None:   # the deviations depend on the prediction alone
            self._built[key] = replace(shared, fallback=key[1], shrinkage=key[2])
            return self._built[key]
        ratings = self.ratings
        rule = "means" if self.centered else key[0]
        if rule == "baseline":   # b_x, b_y are the model's: computed here, per fit
            matrix, mu = ratings.matrix, ratings.global_mean
            rows = segment_ids(np.diff(matrix.indptr))
            columns = segment_ids(np.diff(ratings.item_ptr))
            deviations = deviation_matrix(
                matrix, matrix.data - (mu + self.bx[rows] + self.by[matrix.indices]))
            by_column = ratings.item_ratings - (mu + self.bx[ratings.item_users]
                                                + self.by[columns])
        else:                    # the ratings' own: computed once, shared by fits
            deviations, by_column = ratings.deviations(rule)
        self._built[key] = Rule(*key, by_column=by_column, matrix=deviations)
        return self._built[key]

    def possible(self, rule: Rule, actual_k: np.ndarray) -> np.ndarray:
        """Which known queries have an estimate: `basic` needs `min_k` (at least 1)
        contributing neighbours unless it falls back to the user's mean or the
        baseline, the other rules fall back to a mean or baseline."""
        if rule.prediction == "basic" and rule.fallback == "global_mean":
            return actual_k >= max(self.min_k, 1)
        return np.ones(len(actual_k), dtype=bool)

    def finish(self, rule: Rule, xs: np.ndarray, ys: np.ndarray, shift: np.ndarray,
               actual_k: np.ndarray) -> np.ndarray:
        """The rule's estimates from the weighted mean `shift` of its deviations (`rule`):
        the mean itself (basic), or an offset plus it, dropped where fewer than `min_k`
        neighbours contribute (Surprise's fallback; the basic rule's is `fallback`), or
        $b_{ui}$ below $\\max(\\texttt{min\\_k}, 1)$ with `fallback="baseline"`; the
        neighbours' term weighted $n / (n + \\lambda)$, $\\lambda$ the rule's shrinkage."""
        few = actual_k < max(self.min_k, 1)
        est = self._estimate(rule, xs, ys, shift, actual_k, few)
        if rule.fallback == "baseline":
            return np.where(few, self._baseline(xs, ys), est)
        return est

    def _estimate(self, rule: Rule, xs: np.ndarray, ys: np.ndarray, shift: np.ndarray,
                  actual_k: np.ndarray, few: np.ndarray) -> np.ndarray:
        """`finish`'s estimates, Surprise's fallbacks applied (not the baseline's)."""
        weight = shrinkage_weight(actual_k, rule.shrinkage)
        if self.centered:
            return centred(self.means[xs], shift, weight, few, rule.fallback)
        if rule.prediction == "basic":
            return basic(self.means[xs], shift, weight, few, rule.fallback)
        if weight is not None:
            shift = weight * shift
        shift = np.where(actual_k < self.min_k, 0.0, shift)
        if rule.prediction == "baseline":
            return baseline(self._baseline(xs, ys), shift)
        if rule.prediction == "zscore":
            return zscore(self.means[xs], self.sigmas[xs], shift)
        return means(self.means[xs], shift)

    def _baseline(self, xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
        """$b_{ui} = \\mu + b_x + b_y$ of the queries `(xs, ys)`."""
        return self.ratings.global_mean + self.bx[xs] + self.by[ys]


def shrinkage_weight(actual_k: np.ndarray, shrinkage: float) -> np.ndarray | None:
    """The weight $n / (n + \\lambda)$ of the neighbours' term ($0$ for
    $\\lambda = \\infty$), `None` for $\\lambda = 0$ (Surprise's rules)."""
    if shrinkage > 0:
        return (np.zeros(len(actual_k)) if np.isinf(shrinkage)
                else actual_k / (actual_k + shrinkage))
    return None


def basic(mean: np.ndarray, shift: np.ndarray, weight: np.ndarray | None, few: np.ndarray,
          fallback: str) -> np.ndarray:
    """`KNNBasic`: $\\hat r_{ui} = \\sum_v s(u,v)\\, r_{vi} / \\sum_v s(u,v)$ (`shift`),
    shrunk to $\\mu_u + w(\\hat r_{ui} - \\mu_u)$ by a `weight` $w$; $\\mu_u$ where `few`
    neighbours contribute with `fallback="user_mean"` (else impossible there)."""
    if weight is not None:   # towards the user's mean
        shift = mean + weight * (shift - mean)
    if fallback == "user_mean":
        return np.where(few, mean, shift)
    return shift


def centred(mean: np.ndarray, shift: np.ndarray, weight: np.ndarray | None, few: np.ndarray,
            fallback: str) -> np.ndarray:
    """The papers' rule: $\\mu_u + w \\sum_v s(u,v)(r_{vi} - \\mu_v) / \\sum_v |s(u,v)|$
    (`shift` the weighted mean, $w$ the shrinkage `weight`, 1 without); $\\mu_u$ where
    `few` neighbours contribute with `fallback="user_mean"`."""
    if weight is not None:
        shift = weight * shift
    if fallback == "user_mean":
        shift = np.where(few, 0.0, shift)
    return mean + shift


def means(mean: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """`KNNWithMeans`: $\\mu_u + \\sum_v s(u,v)(r_{vi} - \\mu_v) / \\sum_v s(u,v)$, `shift`
    the (shrunk) weighted mean, 0 below `min_k` neighbours."""
    return mean + shift


def zscore(mean: np.ndarray, sigma: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """`KNNWithZScore`: $\\mu_u + \\sigma_u \\sum_v s(u,v)(r_{vi} - \\mu_v)/\\sigma_v
    / \\sum_v s(u,v)$, `shift` the (shrunk) weighted mean, 0 below `min_k` neighbours."""
    return mean + shift * sigma


def baseline(b_ui: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """`KNNBaseline`: $b_{ui} + \\sum_v s(u,v)(r_{vi} - b_{vi}) / \\sum_v s(u,v)$ with
    $b_{ui} = \\mu + b_u + b_i$, `shift` the (shrunk) weighted mean, 0 below `min_k`
    neighbours."""
    return b_ui + shift


def unknown_baseline(global_mean: float, bu: np.ndarray, bi: np.ndarray, users: np.ndarray,
                     items: np.ndarray) -> np.ndarray:
    """KNNBaseline's estimate where the user or item is unknown (inner id `-1`):
    $\\mu + b_u + b_i$ over the known ones."""
    est = np.full(len(users), global_mean)
    est += np.where(users >= 0, bu[np.maximum(users, 0)], 0.0)
    return est + np.where(items >= 0, bi[np.maximum(items, 0)], 0.0)


def rule_keys(rules: Sequence[Mapping], prediction: str, fallback: str, shrinkage: float,
              centered: bool, min_sim: float) -> list[tuple[str, str, float]]:
    """`rules` (dicts of `RULE_PARAMETERS`, the model's own `prediction`, `fallback`
    and `shrinkage` where absent) as validated `(prediction, fallback, shrinkage)` keys
    (each prediction checked against the model's `min_sim`, `check_signed_rule`)."""
    if isinstance(rules, (Mapping, str)) or not isinstance(rules, Sequence) or not rules:
        raise TypeError("rules must be a non-empty list of dicts of "
                        f"{RULE_PARAMETERS}, got {type(rules).__name__}")
    keys = []
    for rule in rules:
        if not isinstance(rule, Mapping):
            raise TypeError(f"rules must hold dicts, got {type(rule).__name__}")
        unknown = set(rule) - set(RULE_PARAMETERS)
        if unknown:
            raise ValueError(f"rules: unknown parameter(s) {sorted(unknown)}; a rule sets "
                             f"{RULE_PARAMETERS} (the selection is the model's)")
        asked = check_choice(rule.get("prediction", prediction), "rules[]['prediction']",
                             PREDICTIONS)
        if centered and asked != "basic":
            raise ValueError("rules: a centered=True model has the basic rule only")
        check_signed_rule(asked, centered, min_sim, "rules[]['prediction']")
        keys.append((asked,
                     check_choice(rule.get("fallback", fallback), "rules[]['fallback']",
                                  FALLBACKS),
                     check_real(rule.get("neighbour_shrinkage", shrinkage),
                                "rules[]['neighbour_shrinkage']", low=0.0, allow_inf=True)))
    return keys


def check_signed_rule(prediction: str, centered: bool, min_sim: float, name: str) -> None:
    """A `min_sim < 0` (negative similarities contribute) only with a rule on deviations
    from a mean or baseline: the basic rule's $\\sum_v s\\, r_{vi} / \\sum_v |s|$ would
    not be an average of ratings (one neighbour of similarity $-1$ predicts $-r_{vi}$)."""
    if min_sim < 0 and prediction == "basic" and not centered:
        raise ValueError(f"min_sim={min_sim:g} < 0 lets negative similarities contribute, "
                         f"which the basic rule ({name}='basic') cannot weigh: use "
                         "prediction='means', 'zscore' or 'baseline' (or centered=True), or "
                         "min_sim >= 0")


def reads_neighbours(key: tuple[str, str, float]) -> bool:
    """Whether the rule `key` reads the chosen neighbours at all: not with
    $\\lambda = \\infty$ if its answer is then the same whatever their number (the
    rule's offset, $\\mu_u$ or $b_{ui}$, everywhere); but the basic rule's impossibility
    (`fallback="global_mean"`) and the baseline fallback of a rule whose offset is
    $\\mu_u$ depend on how many contribute."""
    prediction, fallback, shrinkage = key
    return (not np.isinf(shrinkage) or (prediction == "basic" and fallback == "global_mean")
            or (fallback == "baseline" and prediction != "baseline"))


def counts(weights: np.ndarray, min_sim: float) -> np.ndarray:
    """Which chosen neighbours count: similarity $s \\ne 0$ and $s >$ `min_sim` (Surprise's
    $s > 0$ at `min_sim = 0`, the papers' centred $s \\ne 0$ at $-\\infty$)."""
    return (weights != 0) & (weights > min_sim)


def weighted_mean(positions: np.ndarray, weights: np.ndarray, starts: np.ndarray,
                  values: np.ndarray, min_sim: float) -> tuple[np.ndarray, np.ndarray]:
    """Row-wise $\\sum w x / \\sum |w|$ over the neighbours that count (`counts`; 0 where
    none), and their count: `dprec.utils._kernels.weighted_means`
    (`x = values[starts + positions]`), compiled or in numpy.  Both add one neighbour at
    a time in row order, as Surprise's kNN does (the same numbers bit for bit: with
    $w > 0$, $|w| = w$)."""
    if kernels.enabled():
        return kernels.weighted_means(positions, weights, starts, values, min_sim)
    use = (positions >= 0) & counts(weights, min_sim)
    w = np.where(use, weights, 0.0)
    x = np.where(use, at_positions(values, starts, positions, 0.0), 0.0)
    return safe_divide(sequential_sum(w * x), sequential_sum(np.abs(w))), use.sum(axis=1)
