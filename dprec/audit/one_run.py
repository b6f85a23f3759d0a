r"""Privacy auditing with one training run (Steinke, Nasr & Jagielski, NeurIPS 2023).

The multi-run audits of `dprec.audit` fit a model hundreds of times on two
neighbouring datasets.  The one-run audit fits it **once**: $m$ *canaries*
(users, or ratings) are each included in the training data independently with
probability ½; an attacker who sees the model's outputs guesses, for $r$ of
them, whether they were included, and abstains on the others.  If the model is
$(\varepsilon, \delta)$-DP for the unit a canary is, the number $V$ of correct
guesses satisfies (Steinke et al., Theorem 3.1 and Proposition 5.7)

$$P[V \ge v] \;\le\; \beta + 2m\,\delta\,\alpha, \qquad
\beta = P[\mathrm{Bin}(r, q) \ge v], \quad
\alpha = \max_{1 \le i \le v} \tfrac1i\, P[v - i \le \mathrm{Bin}(r, q) < v],
\quad q = \frac{e^\varepsilon}{1 + e^\varepsilon}:$$

the guesses are no more accurate than $r$ independent answers of
$\varepsilon$-randomized response.  [`one_run_epsilon`][] inverts this
p-value: the largest $\varepsilon$ at which $v$ correct guesses of $r$ are
still less likely than 1 − `confidence` is a lower bound on the
$\varepsilon$ of the model, with that confidence.  A bound above a model's
printed $\varepsilon$ refutes the printed guarantee (with that confidence);
a bound below says nothing more than that this attack did not refute it.

[`one_run_audit`][] makes the guesses from scores (higher: more likely
included): the $k_+$ highest-scored canaries are guessed in, the $k_-$ lowest
out.  Several $(k_+, k_-)$ may be tried, each then tested at level
$(1 - \text{confidence}) / n$ (Bonferroni), so that the bound keeps its
confidence: choosing the best of several guesses after seeing the outcome
would otherwise overstate it.

The canaries must be chosen, and included, independently of the outputs; the
scores may be any function of the released outputs and public data.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..utils._validation import check_int, check_real

__all__ = ["OneRunAudit", "default_guess_counts", "one_run_audit", "one_run_epsilon",
           "one_run_p_value"]

#: no bound is given above this ε (randomized response's accuracy is then 1 - 2e-22)
_MAX_EPSILON = 50.0


def _counts(m: int, r: int, v: int) -> tuple[int, int, int]:
    m = check_int(m, "m", minimum=1)
    r = check_int(r, "r", minimum=0)
    v = check_int(v, "v", minimum=0)
    if not v <= r <= m:
        raise ValueError(f"the counts must satisfy 0 <= v <= r <= m (correct guesses <= "
                         f"guesses <= canaries), got v={v}, r={r}, m={m}")
    return m, r, v


def one_run_p_value(m: int, r: int, v: int, epsilon: float, delta: float = 0.0) -> float:
    r"""The probability of at least `v` correct guesses out of `r` (of `m` canaries)
    under an $(\varepsilon, \delta)$-DP model: $\min(1, \beta + 2m\delta\alpha)$ (see
    the module's introduction).

    Parameters
    ----------
    m : int
        Canaries, each included independently with probability ½ (``m >= 1``).
    r : int
        Guesses made (``0 <= r <= m``); the attacker abstains on the others.
    v : int
        Correct guesses (``0 <= v <= r``).
    epsilon : float
        $\varepsilon \ge 0$ of the null hypothesis.
    delta : float, default 0
        $\delta \in [0, 1]$ of the null hypothesis.
    """
    m, r, v = _counts(m, r, v)
    epsilon = check_real(epsilon, "epsilon", low=0.0)
    delta = check_real(delta, "delta", low=0.0, high=1.0)
    if v == 0:
        return 1.0
    from scipy import stats  # on first use: importing scipy.stats takes 0.5 s

    q = 1.0 / (1.0 + np.exp(-epsilon))
    beta = float(stats.binom.sf(v - 1, r, q))
    alpha = 0.0
    if delta > 0.0:
        below = stats.binom.pmf(np.arange(v - 1, -1, -1), r, q)   # P[Bin = v-1], ..., P[= 0]
        alpha = float(np.max(np.cumsum(below) / np.arange(1, v + 1)))
    return min(1.0, beta + 2.0 * m * delta * alpha)


def one_run_epsilon(m: int, r: int, v: int, delta: float = 0.0,
                    confidence: float = 0.95) -> float:
    r"""The lower bound on $\varepsilon$ from `v` correct guesses out of `r`, of `m`
    canaries: the largest $\varepsilon$ whose p-value ([`one_run_p_value`][]) is below
    ``1 - confidence`` (0 when even $\varepsilon = 0$ explains the guesses).

    The p-value falls as $\varepsilon$ falls.  With $\delta = 0$ it is the binomial
    tail $P[\mathrm{Bin}(r, q) \ge v] = I_q(v, r - v + 1)$, whose root in $q$ is the
    one-sided Clopper-Pearson lower bound: $\varepsilon = \operatorname{logit} q$,
    exactly.  With $\delta > 0$ the root lies between 0 and that bound and is found by
    Brent's method (to 1e-10).  Randomized response with $\varepsilon$ exceeds the
    bound with probability at most ``1 - confidence`` (tested by exact enumeration).

    Examples
    --------
    >>> round(one_run_epsilon(1000, 1000, 1000), 3)     # every guess right
    5.809
    >>> one_run_epsilon(1000, 1000, 520)                # no better than chance
    0.0
    """
    m, r, v = _counts(m, r, v)
    delta = check_real(delta, "delta", low=0.0, high=1.0)
    confidence = check_real(confidence, "confidence", low=0.0, high=1.0,
                            low_inclusive=False, high_inclusive=False)
    level = 1.0 - confidence
    if v == 0:
        return 0.0
    from scipy import optimize, stats

    q = float(stats.beta.ppf(level, v, r - v + 1))      # P[Bin(r, q) >= v] = level
    if not q > 0.5:
        return 0.0
    pure = min(_MAX_EPSILON, math.log(q) - math.log1p(-q))
    if delta == 0.0:
        return pure

    def excess(epsilon: float) -> float:
        return one_run_p_value(m, r, v, epsilon, delta) - level

    if excess(0.0) >= 0.0:
        return 0.0
    if excess(pure) < 0.0:          # only by rounding: δ never raises the bound
        return pure
    return float(optimize.brentq(excess, 0.0, pure, xtol=1e-10))


@dataclass(frozen=True)
class OneRunAudit:
    """The result of [`one_run_audit`][].

    Attributes
    ----------
    epsilon : float
        The lower bound on ε, with `confidence` (over the tried guess counts).
    m : int
        Canaries.
    guesses, correct : int
        Guesses made and how many were right, for the best `(k_in, k_out)`.
    k_in, k_out : int
        The numbers of canaries guessed in (highest scores) and out (lowest).
    delta, confidence : float
        The δ of the hypothesis tested and the confidence of the bound.
    tried : int
        How many `(k_in, k_out)` were tried (the Bonferroni factor).
    """

    epsilon: float
    m: int
    guesses: int
    correct: int
    k_in: int
    k_out: int
    delta: float
    confidence: float
    tried: int

    def __float__(self) -> float:
        return self.epsilon

    def refutes(self, claimed_epsilon: float) -> bool:
        """Whether the bound exceeds `claimed_epsilon`: the claim is then false, with
        the audit's confidence."""
        return self.epsilon > claimed_epsilon


def default_guess_counts(m: int) -> list[tuple[int, int]]:
    """The `(k_in, k_out)` tried by default: 1 %, 2 %, 5 %, 10 %, 20 % and 50 % of the
    `m` canaries guessed in only, and as many guessed in as out (at most 12 tries)."""
    counts = []
    for share in (0.01, 0.02, 0.05, 0.1, 0.2, 0.5):
        k = max(1, int(round(share * m)))
        counts += [(k, 0), (k // 2, k - k // 2)]
    return sorted(set(c for c in counts if 0 < c[0] + c[1] <= m))


def one_run_audit(scores, included, delta: float = 0.0, confidence: float = 0.95,
                  guess_counts: Sequence[tuple[int, int]] | None = None) -> OneRunAudit:
    r"""The one-run lower bound on ε from the canaries' membership scores.

    Parameters
    ----------
    scores : array-like of float, shape (m,)
        One score per canary, from the released outputs only: higher means more
        likely included.  Ties are broken by position (give the canaries in a
        random order).
    included : array-like of bool, shape (m,)
        Whether each canary was in the training data (each drawn with probability ½,
        independently of everything else).
    delta : float, default 0
        The δ of the guarantee tested.
    confidence : float, default 0.95
        Confidence of the bound, over all the guess counts tried.
    guess_counts : sequence of (k_in, k_out), optional
        The guesses tried: the `k_in` highest-scored canaries guessed in, the `k_out`
        lowest guessed out.  Default: [`default_guess_counts`][].  Each is tested at
        level ``(1 - confidence) / len(guess_counts)``.

    Returns
    -------
    OneRunAudit
        The best bound over the guess counts, with its counts.

    Raises
    ------
    ValueError
        For scores that are not finite, arrays of different lengths, or guess counts
        outside ``0 < k_in + k_out <= m``.
    """
    scores = np.asarray(scores, dtype=np.float64)
    included = np.asarray(included)
    if scores.ndim != 1 or scores.shape != included.shape or len(scores) == 0:
        raise ValueError(f"scores and included must be 1-d arrays of one length >= 1, got "
                         f"shapes {scores.shape} and {included.shape}")
    if not np.isfinite(scores).all():
        raise ValueError("scores must be finite numbers")
    if included.dtype != bool:
        if not np.isin(included, (0, 1)).all():
            raise ValueError("included must hold booleans (or 0/1)")
        included = included.astype(bool)
    m = len(scores)
    counts = default_guess_counts(m) if guess_counts is None else [
        (check_int(k_in, "k_in", minimum=0), check_int(k_out, "k_out", minimum=0))
        for k_in, k_out in guess_counts]
    if not counts or any(not 0 < k_in + k_out <= m for k_in, k_out in counts):
        raise ValueError(f"guess_counts must be (k_in, k_out) pairs with 0 < k_in + k_out <= "
                         f"m = {m}, got {guess_counts!r}")
    confidence = check_real(confidence, "confidence", low=0.0, high=1.0,
                            low_inclusive=False, high_inclusive=False)
    level = (1.0 - confidence) / len(counts)
    ranked = included[np.argsort(-scores, kind="stable")]    # highest score first
    best = None
    for k_in, k_out in counts:
        correct = int(ranked[:k_in].sum()) + int((~ranked[m - k_out:]).sum() if k_out else 0)
        epsilon = one_run_epsilon(m, k_in + k_out, correct, delta, 1.0 - level)
        if best is None or epsilon > best.epsilon:
            best = OneRunAudit(epsilon, m, k_in + k_out, correct, k_in, k_out, float(delta),
                               float(confidence), len(counts))
    return best
