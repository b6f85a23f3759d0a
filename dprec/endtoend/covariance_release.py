r"""The integer releases of [`DPItemKNN`][dprec.DPItemKNN]: each user's rounded, clipped
residuals summed into an item–item covariance and co-rating weights, exact integers, and
their discrete Laplace or discrete Gaussian noise (the argument is in
[`dprec.endtoend.dp_item_knn`][dprec.endtoend.dp_item_knn]'s docstring)."""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

from ..mechanisms import discrete_gaussian, discrete_laplace, discrete_laplace_epsilon
from ..mechanisms.exact_laplace import MAX_T
from ..utils._arrays import pattern_matrix
from ..utils._validation import check_choice
from .partitions import Partitions, UserRows

__all__ = ["check_laplace_scale", "gaussian_sums", "grid_levels", "grid_residuals",
           "integer_sums", "laplace_sum_epsilons", "noisy_sums", "sum_sensitivities"]


def check_laplace_scale(n_items: int, grid: tuple[float, int], epsilon_each: float,
                        epsilon: float) -> None:
    """Refuse a Laplace covariance whose noise (over `n_items` items, `grid` =
    `(clip, grid_bits)`, `epsilon_each` per release of the model's `epsilon`) is beyond
    the sampler (`MAX_T`).

    Raises
    ------
    ValueError
        Naming `clip`, `grid_bits` and `epsilon`.
    """
    scale = sum_sensitivities(n_items, *grid, "l1")[0] / epsilon_each
    if scale > MAX_T:
        size = f"2^{math.log2(scale):.1f}" if math.isfinite(scale) else "beyond float64"
        raise ValueError(f"grid_bits = {grid[1]} with epsilon = {epsilon:g} needs discrete "
                         f"Laplace noise of scale {size} integer steps (clip = {grid[0]:g}), "
                         "above the sampler's 2^42: give fewer grid_bits (a coarser grid), a "
                         "smaller clip or a larger epsilon")


def noisy_sums(sums, sensitivities, epsilon: float,
               rng) -> tuple[list[np.ndarray], list[float]]:
    r"""Each symmetric integer matrix of `sums` released: its upper triangle plus discrete
    Laplace noise of scale $t = \Delta/\varepsilon$ ($\Delta$ its ℓ1 sensitivity in
    `sensitivities`), mirrored below the diagonal (post-processing).

    Returns the noisy matrices (integers) and the ε each release spends, from the
    mechanism's privacy map (`discrete_laplace_epsilon(t, Δ)`, that is ε).
    """
    out = []
    for total, sensitivity in zip(sums, sensitivities):
        n = len(total)
        upper = np.triu_indices(n)
        noisy = np.zeros((n, n))
        noisy[upper] = discrete_laplace(total[upper], sensitivity / epsilon, rng)
        out.append(noisy + np.triu(noisy, 1).T)
    return out, laplace_sum_epsilons(sensitivities, epsilon)


def laplace_sum_epsilons(sensitivities, epsilon: float) -> list[float]:
    r"""The ε each release of [`noisy_sums`][dprec.endtoend.covariance_release.noisy_sums]
    spends, from the mechanism's privacy map (`discrete_laplace_epsilon(Δ/ε, Δ)`, that is ε): public
    functions of the parameters, known before any noise is drawn."""
    return [discrete_laplace_epsilon(sensitivity / epsilon, sensitivity)
            for sensitivity in sensitivities]


def gaussian_sums(sums, sensitivities, rho: float,
                  rng) -> tuple[list[np.ndarray], float]:
    r"""Each symmetric integer matrix of `sums` released: its upper triangle plus discrete
    Gaussian noise of scale $\sigma = \Delta/\sqrt{2\rho}$ ($\Delta$ its ℓ2 sensitivity in
    `sensitivities`), so $\rho$-zCDP each, mirrored below the diagonal (post-processing).

    Returns the noisy matrices (integers) and the standard deviation of the noise on the
    last one divided by its sensitivity (the co-rating weights' noise, in $W$'s units).
    """
    out = []
    for total, sensitivity in zip(sums, sensitivities):
        n = len(total)
        upper = np.triu_indices(n)
        sigma = sensitivity / math.sqrt(2.0 * rho)
        noisy = np.zeros((n, n))
        noisy[upper] = discrete_gaussian(total[upper], sigma, rng)
        out.append(noisy + np.triu(noisy, 1).T)
    return out, 1.0 / math.sqrt(2.0 * rho)


def grid_levels(clip: float, bits: int) -> int:
    r"""$m = \lfloor C / h \rfloor$, $h = 2^{-b}$: the clipped residuals are the multiples
    $k h$ with $|k| \le m$ (so $|e| \le m h \le C$).

    Raises
    ------
    ValueError
        If $C < h$ (every residual would round to 0), or if $C / h$ overflows float64
        ($C \ge 2^{1024 - b}$), naming `clip` and `grid_bits`.
    """
    if not math.isfinite(clip * 2.0**bits):
        raise ValueError(f"clip must be below 2^(1024 - grid_bits) = 2^{1024 - bits} "
                         f"(clip / 2^-grid_bits, its number of grid steps, must be a finite "
                         f"float64), got {clip:g} with grid_bits = {bits}")
    levels = math.floor(clip * 2.0**bits)          # exact: a power-of-two scaling
    if levels < 1:
        raise ValueError(f"clip = {clip!r} is below the grid step 2^-grid_bits = "
                         f"{2.0**-bits!r}: every residual would round to 0 (give a clip of "
                         "at least the step, or more grid_bits)")
    return levels


def grid_residuals(raw: np.ndarray, clip: float, bits: int) -> np.ndarray:
    r"""Residuals rounded to the grid $h = 2^{-b}$, **then** clipped to $\pm m h$
    (`grid_levels`): multiples of $h$ no larger than $C$ in magnitude, whatever $C$
    (rounding after clipping could reach $C + h/2$).  The input is not modified."""
    levels = grid_levels(clip, bits)
    return np.clip(np.round(np.asarray(raw) * 2.0**bits),
                   -levels, levels) * 2.0**-bits


def integer_sums(matrix, residuals: np.ndarray, clip: float, bits: int, norm: str, *,
                 backend: str = "threads", n_partitions: int | None = None
                 ) -> tuple[np.ndarray, np.ndarray, float, float]:
    r"""The covariance and co-rating sums as exact integers, and their `norm` sensitivities.

    $\mathrm{Cov}/g$ and $W 2^A$ (see the module docstring) for the users × items
    `matrix` whose stored entries have the residuals `residuals` (multiples of
    $2^{-b}$ in $[-m h, m h]$, as
    [`grid_residuals`][dprec.endtoend.covariance_release.grid_residuals] makes them), with every
    user weighted $w_u = 2^{-\lceil 2 \log_2 |I_u| \rceil}$.
    Returns `(cov, w, Δ_cov, Δ_w)`: dense $n_{\text{items}} \times n_{\text{items}}$ arrays of
    integers and the largest change of the upper triangle of each (in `norm`, `"l1"` or
    `"l2"`) when one user is added or removed, $m^2 2^A$ and $2^A$ (`sum_sensitivities`).

    The sums are computed per partition of the users on `backend` (`"threads"` or
    `"dask"`, the client in scope; `n_partitions` as
    [`Partitions`][dprec.endtoend.partitions.Partitions]) and added: exact integers,
    the same whatever the partitions.

    Raises
    ------
    ValueError
        If a residual is off the grid or beyond $m h$ (the sensitivity would not
        bound it), if the sums could exceed $2^{53}$ (float64 rounds), or for another `norm`.
    """
    norm = check_choice(norm, "norm", ("l1", "l2"))
    n_users, n_items = matrix.shape
    levels = grid_levels(clip, bits)
    scaled = np.asarray(residuals) * 2.0**bits
    if np.any(np.abs(scaled) > levels) or np.any(scaled != np.round(scaled)):
        raise ValueError(f"residuals must be multiples of 2^-grid_bits within ±{levels} "
                         "steps (round, then clip: grid_residuals)")
    power = {"l1": 2, "l2": 1}[norm]           # w_u |I_u|^2 <= 1 (l1) or w_u |I_u| <= 1 (l2)
    sensitivity_cov, scale = sum_sensitivities(n_items, clip, bits, norm)
    if n_users * sensitivity_cov >= 2.0**53:
        raise ValueError(f"clip = {clip!r} and grid_bits = {bits} give integer sums beyond "
                         f"2^53 for {n_users} users and {n_items} items (float64 would round "
                         "them): lower clip or grid_bits")
    counts = np.diff(matrix.indptr)
    weights = 2.0 ** -np.ceil(power * np.log2(np.maximum(counts, 1)))
    with Partitions(matrix, backend, n_partitions, ratings=(scaled,),
                    users=(weights,)) as partitions:
        cov, w = partitions.sum(_grams, None)
    return cov * scale, w * scale, sensitivity_cov, scale


def _grams(_, rows: UserRows) -> tuple[np.ndarray, np.ndarray]:
    r"""One partition's $\sum_u w_u k_u k_u^\top$ and $\sum_u w_u 1_{I_u} 1_{I_u}^\top$
    (`Partitions.sum`'s function), exact on the common dyadic grid."""
    (scaled,), (weights,) = rows.ratings, rows.users
    values = rows.matrix.copy()
    values.data = scaled
    pattern = pattern_matrix(rows.matrix)

    def gram(m) -> np.ndarray:        # Σ_u w_u x_u x_uᵀ, exact on the common dyadic grid
        return (m.T @ sp.diags(weights) @ m).toarray()

    return gram(values), gram(pattern)


def sum_sensitivities(n_items: int, clip: float, bits: int,
                      norm: str) -> tuple[float, float]:
    r"""$m^2 2^A$ and $2^A$: how far one user moves the upper triangles of
    [`integer_sums`][dprec.endtoend.covariance_release.integer_sums]' $\mathrm{Cov}/g$
    and $W 2^A$ (in ℓ1, or in ℓ2 with `norm="l2"`), with
    $A = \lceil 2 \log_2 n_{\text{items}} \rceil$ (ℓ1) or
    $\lceil \log_2 n_{\text{items}} \rceil$ (ℓ2): public functions of the number of items
    and the grid, known before any sum."""
    levels = grid_levels(clip, bits)
    power = {"l1": 2, "l2": 1}[norm]
    scale = 2.0 ** math.ceil(power * math.log2(max(n_items, 2)))       # 2^A: public
    return float(levels) * float(levels) * scale, scale      # inf past float64, no error
