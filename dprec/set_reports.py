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
[`ImplicitKNN`][dprec.implicit_knn.ImplicitKNN]).

**Use**: $\hat x_{ui} = (y_{ui} - q) / (p - q)$, $q = 1 - p$, is unbiased for $x_{ui}$
with variance $p q / (p - q)^2$ (about 0.92 at $\varepsilon_b = 1$, 0.019 at 4,
$3.4 \cdot 10^{-4}$ at 8): every item of every report carries it, held or not.

**Cost**: $n_{\text{users}} \times |I|$ draws at `fit` (a block of users at a time); the
reported ones are kept sparse, about $q |I|$ per user (at $\varepsilon_b = 1$, 27% of
the items).
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

from ._validation import check_epsilon, check_int
from .ledger import LedgerEntry, Status, Unit
from .mechanisms.common import keyed_log_uniform
from .mechanisms.randomized_response import MAX_EPSILON, randomized_response_log_move

__all__ = ["debias", "flip_probability", "report_sets", "set_report_entry"]

#: bits drawn at once
_BLOCK_CELLS = 1 << 21


def _bit_epsilon(epsilon: float, set_difference: int) -> float:
    """$\\varepsilon_b = \\varepsilon / \\alpha$, checked."""
    epsilon = check_epsilon(epsilon, "set_epsilon")
    alpha = check_int(set_difference, "set_difference", minimum=1)
    bit = epsilon / alpha
    if bit > MAX_EPSILON:
        raise ValueError(f"set_epsilon must be at most {MAX_EPSILON:g} per item, got "
                         f"{epsilon!r}")
    return bit


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
    q = flip_probability(epsilon, set_difference)
    return (sums - q * np.asarray(weights, dtype=np.float64)[:, None]) / (1.0 - 2.0 * q)


def set_report_entry(epsilon: float, set_difference: int = 1) -> LedgerEntry:
    """The guarantee of one user's report (see the module docstring)."""
    bit = _bit_epsilon(epsilon, set_difference)
    return LedgerEntry(
        "set report", "randomized_response per item (unary encoding)",
        check_epsilon(epsilon, "set_epsilon"), 0.0, Unit.SET_ITEM, Status.HOLDS, "user",
        f"every item of the item list through binary randomised response at ε/α = "
        f"{bit:.4g}; {set_difference} item(s) of a set change at most that many bits")
