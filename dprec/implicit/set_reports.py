r"""Each user's set released under local differential privacy: randomised response on
every item of the item list (unary encoding).

User $u$'s set over the item list $I$ is the bit vector $x_u \in \{0, 1\}^{|I|}$.  Each
bit goes through binary randomised response at $\varepsilon_b = \varepsilon / \alpha$:
kept with probability $p = e^{\varepsilon_b} / (1 + e^{\varepsilon_b})$, flipped
otherwise (Warner 1965; RAPPOR's one-time response, Erlingsson, Pihur & Korolova 2014).

**Guarantee** (`Unit.SET_ITEM`, $\alpha$ items of one user's set added or removed):
the bits are independent, and two neighbouring sets differ in at most $\alpha$ of them,
each an $\varepsilon_b$-DP randomised response, so the report is
$\alpha \varepsilon_b = \varepsilon$-LDP, with $\delta = 0$, against anyone who sees it,
whatever the set's size (no bound $\tau$ is needed).  The flip of bit $(u, i)$ happens
iff $\ln U < \ln(1 - p)$ with $\ln U$ exact in its tail
(`dprec.mechanisms.common.keyed_log_uniform`, the test of
[`dprec.mechanisms.randomized_response_from_log_uniform`][]): the ratio $e^{\varepsilon_b}$
holds at every ε.  The item list must not depend on the data (a public catalogue):
read from the data, it makes the sole holder of an item and a user of a single item
boundary cases, which the model using it states (see
[`ImplicitKNN`][dprec.implicit.knn.ImplicitKNN]).

**Use**: $\hat x_{ui} = (y_{ui} - q) / (p - q)$, $q = 1 - p$, is unbiased for $x_{ui}$
with variance $V = p q / (p - q)^2$ ([`noise_variance`][]: about 0.92 at
$\varepsilon_b = 1$, 0.019 at 4, $3.4 \cdot 10^{-4}$ at 8): every item of every report
carries it, held or not ($p - q = \tanh(\varepsilon_b / 2)$, computed as such: $1 - 2q$
cancels to 0 at a tiny $\varepsilon_b$, which must be at least $2^{-42}$).  Sums of them
are post-processing: every item's number of holders ([`item_counts`][]), the overlap
of a user's own set with each report ([`overlaps`][]), and a weighted share of users
holding each item, shrunk towards the share of all users ([`shrunk_shares`][]).

**Cost**: $n_{\text{users}} \times |I|$ draws at `fit` (a block of users at a time); the
reported ones are kept sparse, about $q |I|$ per user (at $\varepsilon_b = 1$, 27% of
the items).
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

from ..accountant.ledger import LedgerEntry, Status, Unit
from ..mechanisms.common import keyed_log_uniform
from ..mechanisms.exact_laplace import MAX_T
from ..mechanisms.randomized_response import MAX_EPSILON, randomized_response_log_move
from ..utils._validation import check_epsilon, check_int

__all__ = ["DENSE_CELLS", "MIN_BIT_EPSILON", "debias", "dense_reports", "flip_probability",
           "item_counts", "noise_variance", "overlaps", "report_sets", "set_report_entry",
           "shrunk_shares"]

#: the smallest ε per bit: a debiased bit's noise sd, about 1 / ε_b, stays below 2**42
#: (the largest noise scale of the discrete Laplace, `MAX_T`)
MIN_BIT_EPSILON = 1.0 / MAX_T
#: bits drawn at once
_BLOCK_CELLS = 1 << 21
#: the largest reports kept dense for the products (float32: 512 MB)
DENSE_CELLS = 1 << 27
#: a sparse product's cost per multiply-add, against a dense BLAS one's (measured: about
#: 100 million against 10 billion a second)
_SPARSE_COST = 100


def _bit_epsilon(epsilon: float, set_difference: int, name: str = "set_epsilon") -> float:
    """$\\varepsilon_b = \\varepsilon / \\alpha$, checked (`name`: the user's parameter)."""
    epsilon = check_epsilon(epsilon, name)
    alpha = check_int(set_difference, "set_difference", minimum=1)
    bit = epsilon / alpha
    if bit > MAX_EPSILON:
        raise ValueError(f"{name} must be at most {MAX_EPSILON:g} per item, got "
                         f"{epsilon!r}")
    if bit < MIN_BIT_EPSILON:
        raise ValueError(f"{name} must be at least 2**-42 = {MIN_BIT_EPSILON:.3g} per item "
                         f"(divided by set_difference = {alpha}), got {epsilon!r}: below it "
                         "a debiased report bit's noise has an sd above 2**42")
    return bit


def _signal(epsilon: float, set_difference: int) -> tuple[float, float]:
    """$(q, p - q)$: the flip probability and $p - q = \\tanh(\\varepsilon_b / 2)$, exact
    where $1 - 2q$ would cancel."""
    return (flip_probability(epsilon, set_difference),
            math.tanh(_bit_epsilon(epsilon, set_difference) / 2.0))


def flip_probability(epsilon: float, set_difference: int = 1) -> float:
    r"""$q = 1 / (1 + e^{\varepsilon / \alpha})$: the probability a bit is flipped."""
    return math.exp(randomized_response_log_move(2, _bit_epsilon(epsilon, set_difference)))


def report_sets(X: sp.csr_matrix, epsilon: float, set_difference: int, seed: int
                ) -> sp.csr_matrix:
    """Every row's report: the 0/1 matrix `X` (users × items) with each bit flipped with
    probability `flip_probability(epsilon, set_difference)`, as a sparse matrix of the
    reported ones (float64).  Row `u`'s draws are a function of `(seed, u)` alone
    (`dprec.mechanisms.common.keyed_log_uniform`); `X` is not modified."""
    log_move = randomized_response_log_move(2, _bit_epsilon(epsilon, set_difference))
    n_users, n_items = X.shape
    step = max(1, _BLOCK_CELLS // max(n_items, 1))
    parts = []
    for start in range(0, n_users, step):
        rows = np.arange(start, min(start + step, n_users))
        held = X[rows].toarray() != 0
        flipped = keyed_log_uniform(seed, rows, n_items) < log_move
        parts.append(sp.csr_matrix(held != flipped, dtype=np.float64))
    if not parts:
        return sp.csr_matrix((0, n_items))
    return sp.vstack(parts, format="csr")


def debias(sums: np.ndarray, weights: np.ndarray, epsilon: float,
           set_difference: int = 1) -> np.ndarray:
    r"""$\sum_v w_v \hat x_{vi} = (\sum_v w_v y_{vi} - q \sum_v w_v) / (p - q)$ from the
    weighted sums of reports `sums` (rows × items) and each row's total weight
    `weights`: the unbiased weighted count of the items in the weighted users' sets."""
    q, signal = _signal(epsilon, set_difference)
    return (sums - q * np.asarray(weights, dtype=np.float64)[:, None]) / signal


def noise_variance(epsilon: float, set_difference: int = 1) -> float:
    r"""$V = q (1 - q) / (1 - 2 q)^2$, with $1 - 2q = \tanh(\varepsilon_b / 2)$: the
    variance of one debiased report bit $\hat x_{ui}$, whether the item is held or not."""
    q, signal = _signal(epsilon, set_difference)
    return q * (1.0 - q) / signal**2


def item_counts(reports: sp.csr_matrix, epsilon: float, set_difference: int = 1
                ) -> np.ndarray:
    r"""$\hat n_i = \sum_v \hat x_{vi}$: every item's number of holders, unbiased, from
    every row's report (users × items, `report_sets`), with variance $n V$."""
    sums = np.asarray(reports.sum(axis=0), dtype=np.float64)
    return debias(sums, [reports.shape[0]], epsilon, set_difference).ravel()


def dense_reports(reports: sp.csr_matrix) -> np.ndarray | None:
    """A dense float32 copy of the reports for [`overlaps`][] and [`shrunk_shares`][] (their
    products then run in BLAS where that is cheaper: at a small ε a third of the bits
    are reported ones), or None past `DENSE_CELLS` cells."""
    if reports.shape[0] * reports.shape[1] > DENSE_CELLS:
        return None
    return reports.toarray().astype(np.float32)


def _product(left: sp.csr_matrix, right: sp.csr_matrix, dense: np.ndarray | None,
             dense_side: str = "right") -> np.ndarray:
    """`left @ right` as a dense float64 array: sparse, or a float32 BLAS product with
    `dense` (the `dense_side` operand as a dense array) when that costs less (the sums
    are of 0/1 bits times the other operand: integers stay exact below 2^24)."""
    sparse_cost = _SPARSE_COST * left.nnz * right.nnz / max(right.shape[0], 1)
    if dense is not None and left.shape[0] * left.shape[1] * right.shape[1] < sparse_cost:
        if dense_side == "right":
            return (left.toarray().astype(np.float32) @ dense).astype(np.float64)
        return (dense @ right.toarray().astype(np.float32)).astype(np.float64)
    return np.asarray((left @ right).todense(), dtype=np.float64)


def overlaps(own: sp.csr_matrix, reports: sp.csr_matrix, epsilon: float,
             set_difference: int = 1, dense: np.ndarray | None = None) -> np.ndarray:
    r"""$\hat c(u, v) = \sum_{i \in S_u} \hat x_{vi}$ for each row $u$ of `own` (0/1
    sets, rows × items) and each report $v$: unbiased for $|S_u \cap S_v|$, with
    variance $|S_u| V$; dense, `(own rows, reports rows)`.  `dense`: the reports'
    `dense_reports`, for speed."""
    sums = _product(reports, own.T.tocsr(), dense, "left").T
    sizes = np.asarray(own.sum(axis=1), dtype=np.float64).ravel()
    return debias(sums, sizes, epsilon, set_difference)


def shrunk_shares(weights: sp.csr_matrix, reports: sp.csr_matrix, prior: np.ndarray,
                  epsilon: float, set_difference: int = 1,
                  prior_sd: float | None = None,
                  dense: np.ndarray | None = None) -> np.ndarray:
    r"""Per row of `weights` $w$ (rows × reports, $w \ge 0$) and item $i$: the weighted
    share of the reporting users who hold $i$, $S_i = \sum_v w_v \hat x_{vi} / \sum_v
    w_v$, shrunk towards `prior` $P_i$ (e.g. the share of all users,
    `item_counts / n`):

    $$(1 - a) S_i + a P_i, \qquad a = \frac{\sigma^2}{\sigma^2 + s^2}, \quad
    \sigma^2 = V \frac{\sum_v w_v^2}{(\sum_v w_v)^2},$$

    the posterior mean when the neighbours' true share has prior sd $s$ = `prior_sd`
    around $P_i$ and $S_i$ carries the reports' noise of variance $\sigma^2$ (a public
    function of ε and the weights).  A row without weight gets $P$.  With `prior_sd`
    None, $S$ alone (0 in a row without weight).  `dense` is unused (kept for the
    callers): the weighted sums are the sparse product in float64, each row's summed in
    its own entries' order, so a row's shares do not depend on the other rows of the call
    (a BLAS product, chosen or not by the call's size, and in float32, changed them by up
    to 1e-6 relative)."""
    totals = np.asarray(weights.sum(axis=1), dtype=np.float64).ravel()
    sums = np.asarray((weights @ reports).todense(), dtype=np.float64)
    safe = np.where(totals > 0, totals, 1.0)
    shares = debias(sums, totals, epsilon, set_difference) / safe[:, None]
    if prior_sd is None:
        return shares
    squares = np.asarray(weights.multiply(weights).sum(axis=1), dtype=np.float64).ravel()
    noise = noise_variance(epsilon, set_difference) * squares / safe**2
    noise[totals <= 0] = np.inf
    shrink = np.divide(noise, noise + prior_sd**2, out=np.ones_like(noise),
                       where=np.isfinite(noise))
    return shares * (1.0 - shrink)[:, None] + np.outer(shrink, prior)


def set_report_entry(epsilon: float, set_difference: int = 1, name: str = "set_epsilon"
                     ) -> LedgerEntry:
    """The guarantee of one user's report (see the module docstring); ``epsilon`` checked
    (``name``: the user's parameter), from `MIN_BIT_EPSILON` to 1e18 per item."""
    bit = _bit_epsilon(epsilon, set_difference, name)
    return LedgerEntry(
        "set report", "randomized_response per item (unary encoding)",
        check_epsilon(epsilon, name), 0.0, Unit.SET_ITEM, Status.HOLDS, "user",
        f"every item of the item list through binary randomised response at ε/α = "
        f"{bit:.4g}; {set_difference} item(s) of a set change at most that many bits")
