r"""The discrete Gaussian mechanism: integer noise, zCDP, and its tight $(\varepsilon, \delta)$.

$P(Z = z) \propto e^{-z^2 / (2\sigma^2)}$ on the integers (Canonne, Kamath & Steinke
2020).  Added to an integer-valued query $q$ whose ℓ2 sensitivity is $\Delta$ (any
real number), independently on every coordinate, it satisfies
$\rho$-zero-concentrated DP with $\rho = \Delta^2 / (2\sigma^2)$ (their Theorem 14, the
multivariate case), exactly as the continuous Gaussian does, and its outputs are
integers: no floating-point attack (Mironov 2012) applies.

**Sampler** (their Algorithm 3): with $t = \lfloor \sigma \rfloor + 1$, draw $Y$ from the
discrete Laplace of scale $t$ (the exact sampler of
[`exact_laplace`][dprec.mechanisms.exact_laplace]) and keep it with probability
$e^{-\gamma}$, $\gamma = (|Y| - \sigma^2/t)^2 / (2\sigma^2)$, else draw again: the kept
$Y$ is exactly discrete Gaussian.  The test is $\ln U \le -\gamma$ with $\ln U$ exact in
its tail ([`log_uniform`][dprec.mechanisms.common.log_uniform]), so every integer
keeps a positive probability; the only inexactness is the float64 rounding of
$\gamma$, a relative error below $2^{-50}$ in each acceptance probability.  About 1.3
to 1.8 draws per kept value, all vectorised.

**Accounting** ([`zcdp_epsilon`][dprec.mechanisms.discrete_gaussian.zcdp_epsilon]):
$\rho$-zCDP converted to $(\varepsilon, \delta)$ by Google's `dp-accounting` (its Rényi
accountant on a `ZCDpEvent`, with Canonne, Kamath & Steinke's conversion), and
[`zcdp_rho`][dprec.mechanisms.discrete_gaussian.zcdp_rho] inverts it by bisection, never
rounding towards more privacy than it has.

References
----------
- C. Canonne, G. Kamath and T. Steinke, "The Discrete Gaussian for Differential
  Privacy", NeurIPS 2020.
- M. Bun and T. Steinke, "Concentrated Differential Privacy: Simplifications,
  Extensions, and Lower Bounds", TCC 2016.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from ..utils._arrays import has_repeats
from ..utils._rng import RandomStateLike, check_random_state
from ..utils._validation import check_delta, check_epsilon, check_positive
from .common import log_uniform
from .exact_laplace import MAX_T, discrete_laplace_noise

__all__ = ["MAX_RHO", "discrete_gaussian", "discrete_gaussian_noise", "grid_sensitivity",
           "integer_l2_block_sums", "integer_l2_sums", "stated_epsilon", "zcdp_epsilon",
           "zcdp_rho"]

#: the largest ρ calibrated (ε beyond ~1.1e6 at δ = 1e-5): a larger ε gets this ρ, so the
#: release spends less than it is allowed, never more
MAX_RHO = 1e6
#: the smallest ρ calibrated: below it σ would pass the discrete Laplace's largest scale
MIN_RHO = 1e-24


def discrete_gaussian_noise(sigma: float, size: int, rng: np.random.Generator) -> np.ndarray:
    r"""`size` independent draws of the discrete Gaussian $N_{\mathbb Z}(0, \sigma^2)$,
    as float64 integers (exact while below $2^{53}$).

    Raises
    ------
    ValueError
        If `sigma` is not positive and finite, or above $2^{42}$ (the discrete Laplace
        sampler's largest scale).
    """
    sigma = check_positive(sigma, "sigma")
    if not sigma < MAX_T:
        raise ValueError(f"sigma = {sigma:g} is above the sampler's largest scale 2^42: "
                         "the noise would not be exact (spend a larger epsilon)")
    t = math.floor(sigma) + 1.0
    out = np.empty(size)
    todo = np.arange(size)
    while len(todo):
        y = discrete_laplace_noise(t, len(todo), rng)
        gamma = np.square(np.abs(y) - sigma * (sigma / t)) / (2.0 * sigma * sigma)
        kept = log_uniform(rng, len(todo)) <= -gamma
        out[todo[kept]] = y[kept]
        todo = todo[~kept]
    return out


def discrete_gaussian(values: np.ndarray, sigma: float,
                      random_state: RandomStateLike) -> np.ndarray:
    r"""Integer `values` plus independent discrete Gaussian noise of scale `sigma`.

    $\rho$-zCDP with $\rho = \Delta^2 / (2\sigma^2)$ for a query of ℓ2 sensitivity
    $\Delta$ (`zcdp_epsilon` gives its $(\varepsilon, \delta)$).  The input is not
    modified.

    Raises
    ------
    ValueError
        If `values` are not finite integers below $2^{52}$, or `sigma` is invalid.
    """
    x = np.asarray(values, dtype=np.float64)
    if not np.all(np.isfinite(x)) or np.any(x != np.round(x)) or np.any(np.abs(x) >= 2.0**52):
        raise ValueError("values must be finite integers below 2^52 (the discrete Gaussian "
                         "adds integer noise to an integer-valued query)")
    rng = check_random_state(random_state)
    return x + discrete_gaussian_noise(sigma, x.size, rng).reshape(x.shape)


@functools.lru_cache(maxsize=4096)     # a pure function: models and audits ask it often
def zcdp_epsilon(rho: float, delta: float) -> float:
    r"""The $\varepsilon$ of $\rho$-zCDP at `delta`: the smallest the Rényi accountant of
    `dp-accounting` proves (Canonne, Kamath & Steinke's conversion over its orders)."""
    from dp_accounting import ZCDpEvent
    from dp_accounting.rdp import RdpAccountant

    rho = check_positive(rho, "rho")
    delta = check_delta(delta, "delta")
    accountant = RdpAccountant()
    accountant.compose(ZCDpEvent(rho))
    return float(accountant.get_epsilon(delta))


def stated_epsilon(rho: float, delta: float, target: float) -> float:
    """The ε a ledger entry states for a ρ-zCDP release at `delta`: `zcdp_epsilon`'s, or
    `target` where it proves ε = 0 (tiny ρ: the release is then (0, δ)-DP, so any ε ≥ 0
    holds, and a ledger entry needs ε > 0)."""
    spent = zcdp_epsilon(rho, delta)
    return spent if spent > 0.0 else target


@functools.lru_cache(maxsize=4096)     # a pure function (a bisection of ~12 ms)
def zcdp_rho(epsilon: float, delta: float) -> float:
    r"""The largest $\rho$ (up to a relative $10^{-9}$, rounded down) whose
    `zcdp_epsilon(ρ, delta)` is at most `epsilon`, capped at `MAX_RHO`.

    Raises
    ------
    ValueError
        If `delta` is 0, or if even `MIN_RHO` spends more than `epsilon` (the noise would pass the
        sampler's largest scale), naming `epsilon`.
    """
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta, "delta")
    if delta == 0.0:
        raise ValueError("delta must be > 0 for zCDP (the Gaussian mechanism has no pure-DP "
                         "guarantee)")
    if zcdp_epsilon(MAX_RHO, delta) <= epsilon:
        return MAX_RHO
    if zcdp_epsilon(MIN_RHO, delta) > epsilon:
        raise ValueError(f"epsilon = {epsilon:g} at delta = {delta:g} needs noise beyond the "
                         "discrete Gaussian sampler's largest scale: give a larger epsilon "
                         "or delta")
    low, high = math.log(MIN_RHO), math.log(MAX_RHO)     # ε(low) <= epsilon < ε(high)
    while high - low > 1e-9:
        middle = 0.5 * (low + high)
        if zcdp_epsilon(math.exp(middle), delta) <= epsilon:
            low = middle
        else:
            high = middle
    return math.exp(low)


def integer_l2_sums(rows: np.ndarray, columns: np.ndarray, values: np.ndarray,
                    n_columns: int, bound: float, bits: int) -> tuple[np.ndarray, float]:
    r"""Per-column sums of contributions made integer, each row's ℓ2 norm bounded exactly.

    Entry $n$ adds `values[n]` to column `columns[n]` on behalf of the unit `rows[n]`
    (a user, or a rating: rows numbered from 0, each `(row, column)` pair at most once, so
    that a unit's entries are the coordinates of its contribution vector).  Every value is
    rounded to the grid $2^{-b}$ (`bits`) and counted in grid steps, an integer; a unit
    whose integer vector then has
    $\lVert c \rVert_2 > K = \lfloor \text{bound} \cdot 2^b \rfloor$ (rounding can add up to
    half a step per entry) is scaled towards 0 and truncated until it does not, the norm
    checked in exact integer arithmetic.  Adding or removing one unit therefore moves the
    integer sums by at most $K$ in ℓ2, whatever the values: $K$ is the sensitivity to
    hand the discrete Gaussian.

    Returns
    -------
    sums : numpy.ndarray of shape `(n_columns,)`
        The integer sums (float64, exact below $2^{53}$).
    sensitivity : float
        $K$, in grid steps.

    Raises
    ------
    ValueError
        If `bound` or `bits` is invalid, a value is not finite, a `(row, column)` pair
        repeats, or the sums could pass $2^{52}$.
    """
    values = np.asarray(values, dtype=np.float64)
    sums, sensitivity = integer_l2_block_sums(rows, columns, values.reshape(-1, 1), n_columns,
                                              bound, bits)
    return sums[:, 0], sensitivity


def grid_sensitivity(bound: float, bits: int) -> float:
    r"""$K = \lfloor \text{bound} \cdot 2^b \rfloor$ (`bits` $b$): the ℓ2 sensitivity, in grid
    steps, of [`integer_l2_sums`][dprec.mechanisms.discrete_gaussian.integer_l2_sums] with
    this `bound` — a public function of the parameters, known before any sum.

    Raises
    ------
    ValueError
        If `bound` is not `> 0`, `bits` not in 0..30, or `bound` below one grid step.
    """
    bound = check_positive(bound, "bound")
    if not 0 <= bits <= 30:
        raise ValueError(f"bits must be in 0..30, got {bits!r}")
    limit = math.floor(bound * 2.0**bits)
    if limit < 1:
        raise ValueError(f"bound = {bound:g} is below one grid step 2^-{bits}")
    return float(limit)


def integer_l2_block_sums(rows: np.ndarray, groups: np.ndarray, blocks: np.ndarray,
                          n_groups: int, bound: float, bits: int) -> tuple[np.ndarray, float]:
    r"""[`integer_l2_sums`][dprec.mechanisms.discrete_gaussian.integer_l2_sums] for
    contributions made of blocks: entry $n$ adds the row `blocks[n]` (length $p$) to the $p$
    coordinates of group `groups[n]` (e.g. an item's sufficient statistics) on behalf of
    the unit `rows[n]`, each `(row, group)` pair at most once.  A unit's vector is the
    concatenation of its blocks; its integer ℓ2 norm is bounded by $K$ exactly, as there.

    Returns the integer sums of shape `(n_groups, p)` and $K$.
    """
    limit = int(grid_sensitivity(bound, bits))
    blocks = np.asarray(blocks, dtype=np.float64)
    if blocks.ndim != 2:
        raise ValueError(f"blocks must be 2-dimensional, got shape {blocks.shape}")
    if not np.all(np.isfinite(blocks)):
        raise ValueError("values must be finite")
    rows = np.asarray(rows, dtype=np.int64)
    groups = np.asarray(groups, dtype=np.int64)
    if has_repeats(rows * n_groups + groups):     # a sort: np.unique hashes, slowly
        raise ValueError("each (row, column) pair must appear at most once")
    with np.errstate(over="ignore"):   # a huge value: an infinite square, refused below
        steps = np.round(blocks * 2.0**bits)      # float64 integers: no int64 wrap-around
        squared = (steps * steps).sum(axis=1)
    if len(rows):
        n_rows = int(rows.max()) + 1
        squares = np.bincount(rows, squared, n_rows)
        while True:          # float squares are exact integers while below 2^53 (checked)
            if squares.max() >= 2.0**53:
                raise ValueError("a unit's contributions are too large for exact integer "
                                 "norms: lower bits")
            over = squares > float(limit) ** 2
            if not over.any():
                break
            shrink = limit / np.sqrt(squares[over]) * (1.0 - 2.0**-40)
            factor = np.ones(n_rows)
            factor[np.flatnonzero(over)] = shrink
            steps = np.trunc(steps * factor[rows][:, None])     # |c| only shrinks
            squares = np.bincount(rows, (steps * steps).sum(axis=1), n_rows)
    if len(rows) and float(np.count_nonzero(np.bincount(rows))) * limit >= 2.0**52:
        raise ValueError("the integer sums could pass 2^52: lower bits")
    width = blocks.shape[1]
    sums = np.zeros((n_groups, width))
    for column in range(width):
        sums[:, column] = np.bincount(groups, steps[:, column], n_groups)
    return sums, float(limit)
