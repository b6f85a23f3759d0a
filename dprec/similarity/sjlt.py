r"""Private random projections of rating vectors: the private SJLT and Gaussian JL.

Stausholm, "Improved Differentially Private Euclidean Distance
Approximation", PODS 2021; Kenthapadi, Korolova, Mironov & Mishra,
"Privacy via the Johnson-Lindenstrauss Transform", J. Privacy and
Confidentiality 2013.

A user's vector ``x ∈ R^d`` (their ratings, 0 where unrated) is projected by a
public ``k × d`` matrix and noise is added to each of the ``k`` coordinates.
The curator estimates squared distances, squared norms and, for kNN, cosines.

Privacy unit: one coordinate of ``x`` (one rating: added, removed or changed)
moves by at most ``Δ = rating_bound`` (the largest ``|rating|``).

* [`PrivateSJLT`][]: the sparser JL transform of Kane & Nelson (2014,
  block construction): ``s`` blocks of ``k/s`` rows; for block ``r`` and item
  ``j`` a bucket ``h_r(j) ∈ [k/s]`` and a sign ``σ_r(j) ∈ {±1}``,
  ``S[(r, h_r(j)), j] = σ_r(j)/√s``: exactly ``s`` non-zeros of ``±1/√s`` per
  column, one per block.  ``x' = Sx + Lap(b)^k`` with ``b = √s·Δ/ε`` (the ℓ1
  sensitivity of ``Sx`` is ``s · Δ/√s``): pure ε-DP.  Unbiased estimators

      ``‖x - y‖² ≈ ‖x' - y'‖² - 4k b²``,   ``‖x‖² ≈ ‖x'‖² - 2k b²``,

  and ``Var = Var_S ‖Sz‖² + 16 b² ‖z‖² + 56 k b⁴`` (``z = x - y``) with
  ``Var_S ‖Sz‖² = (2/k)(‖z‖₂⁴ - ‖z‖₄⁴) ≤ 2‖z‖⁴/k`` for fully random hashes
  ([`sjlt_distance_variance`][]).  Laplace noise from the lattice sampler
  ([`dprec.mechanisms.laplace_from_log_uniform`][]); ``b`` from
  [`dprec.mechanisms.laplace_scale`][] (within a relative ``s·2**-20`` of
  the formula).

* [`GaussianJL`][]: ``P`` with iid ``N(0, 1/k)`` entries,
  ``x' = Px + N(0, σ²)^k``, ``σ = (w₂/ε) sqrt(2(ln(1/(2δ)) + ε))`` with
  ``w₂ = Δ · max_j ‖P e_j‖₂`` computed from the drawn (public) ``P``
  (Kenthapadi et al.; ``calibration="analytic"`` uses the smallest valid σ of
  Balle & Wang 2018 instead).  ``‖x - y‖² ≈ ‖x' - y'‖² - 2kσ²``,
  ``‖x‖² ≈ ‖x'‖² - kσ²``, ``Var = 2‖z‖⁴/k + 8σ²‖z‖² + 8kσ⁴``
  ([`gaussian_jl_distance_variance`][]).  (ε, δ)-DP as published; the
  noise is floating-point Gaussian, whose low bits reveal the input (Mironov
  2012), so dprec reports it *as published*, not as a guarantee (the SJLT's
  lattice Laplace has no such leak).

The SJLT's noise term ``56 k b⁴ = 56 k s² Δ⁴/ε⁴`` beats the Gaussian's
``8 k σ⁴ ≈ 32 k (w₂/Δ)⁴ Δ⁴ (ln(1/(2δ)) + ε)²/ε⁴`` when
``s ≲ 0.76 (w₂/Δ)² (ln(1/(2δ)) + ε)``: small ``s`` and small ``δ``
(the paper's "δ < e^{-s}" regime).

Cosine for kNN (dprec's choice): from the three estimates,
``(‖x‖² + ‖y‖² - ‖x-y‖²)/(2‖x‖‖y‖)``; its numerator is exactly ``⟨x', y'⟩``.
A norm estimate is floored at the standard deviation of a pure-noise norm
estimate, ``sqrt(k Var(η²))`` (a tiny floor would make every user whose
estimate is near 0 everybody's ±1 neighbour), and the result clipped to
``[-1, 1]``.  ``similarity_matrix`` uses the raw rating vectors: centring each
user on their own mean would let one rating move every coordinate and break
the privacy unit.

See [Similarities](../similarities.md) for the formulas and the paper.
"""

from __future__ import annotations

import math
from types import MappingProxyType

import numpy as np
import scipy.sparse as sp

from ..accountant.ledger import LedgerEntry, Status, Unit
from ..mechanisms import (
    LATTICE_BITS,
    gaussian_delta,
    gaussian_from_uniform,
    gaussian_sigma,
    kenthapadi_sigma,
    laplace_epsilon,
    laplace_from_log_uniform,
    laplace_scale,
)
from ..mechanisms.common import keyed_log_uniform
from ..utils._linalg import gram
from ..utils._rng import RandomStateLike, keyed_bits, keyed_uniform
from ..utils._validation import (
    check_choice,
    check_epsilon,
    check_int,
    check_open_interval,
    check_positive,
    check_real,
)
from .sketches import (
    MAX_WIDTH,
    Sketch,
    SketchBackend,
    as_csr,
    check_clip,
    check_columns,
    check_keys,
    finish_estimate,
    pair_operands,
    squared_distances,
)

__all__ = [
    "GAUSSIAN_CALIBRATIONS",
    "GaussianJL",
    "PrivateSJLT",
    "gaussian_jl_distance_variance",
    "gaussian_jl_matrix",
    "kenthapadi_sigma",
    "sjlt_distance_variance",
    "sjlt_matrix",
]

#: Values of ``GaussianJL(calibration=...)``.
GAUSSIAN_CALIBRATIONS = ("kenthapadi", "analytic")
#: The largest noise standard deviation per coordinate the estimators handle (they sum
#: fourth powers of it over the width): a release that needs more is refused.
MAX_NOISE_SD = 1e60


# ----------------------------------------------------------------------------
# the public projections
# ----------------------------------------------------------------------------

def sjlt_matrix(width: int, s: int, columns, hash_seed: int) -> sp.csc_matrix:
    r"""The ``k × n`` SJLT (``k = width`` (Kane & Nelson 2014, block construction) of ``n`` items.

    Column ``j`` (the item with public key ``columns[j]``) has one entry
    ``σ_r(j)/√s`` in each block ``r = 0..s-1``, at row ``r·(k/s) + h_r(j)``; the
    bucket ``h_r(j)`` and the sign ``σ_r(j)`` are uniform, functions of
    ``hash_seed`` and the item's key only (`dprec.utils._rng.keyed_bits`).

    Returns
    -------
    scipy.sparse.csc_matrix, float64, exactly ``s`` non-zeros per column,
    row indices sorted.
    """
    k, s = _check_k_s(width, s)
    columns = np.asarray(columns, dtype=np.int64)
    n_features = len(columns)
    block = k // s
    buckets = (keyed_bits(hash_seed, columns, s) % np.uint64(block)).astype(np.int64)
    signs = 2.0 * (keyed_bits(hash_seed, columns, s, stream=1) >> np.uint64(63)) - 1.0
    rows = buckets + (np.arange(s) * block)[None, :]
    indptr = np.arange(0, n_features * s + 1, s)
    return sp.csc_matrix((signs.ravel() / math.sqrt(s), rows.ravel(), indptr),
                         shape=(k, n_features))


def longest_sole_rater(X: sp.spmatrix, projection: np.ndarray) -> np.ndarray:
    """Mask of the rows of ``X`` (users) who alone rated the item whose column of
    ``projection`` is strictly the longest (at most one): removing their rating shortens
    the longest column, which sets [`GaussianJL.sigma`][].  Nobody when no column is
    strictly the longest or two users rated it (a removal then leaves ``w₂`` as it is)."""
    out = np.zeros(X.shape[0], dtype=bool)
    norms = np.sum(projection**2, axis=0)
    top = np.flatnonzero(norms == norms.max(initial=0.0))
    raters = sp.csc_matrix(X)[:, top[0]].indices if len(top) == 1 else ()
    if len(raters) == 1:
        out[raters[0]] = True
    return out


def gaussian_jl_matrix(width: int, columns, hash_seed: int) -> np.ndarray:
    """The ``k × n`` matrix (``k = width``) of iid ``N(0, 1/k)`` entries (dense), column
    ``j`` a function of ``hash_seed`` and the key ``columns[j]`` only (Box–Muller)."""
    k = check_int(width, "width", minimum=1, maximum=MAX_WIDTH)
    columns = np.asarray(columns, dtype=np.int64)
    u = keyed_uniform(hash_seed, columns, 2 * k).reshape(len(columns), k, 2)
    normal = np.sqrt(-2.0 * np.log(u[..., 0])) * np.cos(2.0 * np.pi * u[..., 1])
    return np.ascontiguousarray(normal.T) / math.sqrt(k)


# ----------------------------------------------------------------------------
# variance formulas
# ----------------------------------------------------------------------------

def _norms(z) -> tuple[float, float]:
    z = np.asarray(z, dtype=np.float64).ravel()
    sq = float(z @ z)
    return sq, float(np.sum(z**4))


def sjlt_distance_variance(z, width: int, scale: float) -> float:
    r"""Variance of the private SJLT's ``‖x - y‖²`` estimate for ``z = x - y``, ``k = width``.

    ``(2/k)(‖z‖₂⁴ - ‖z‖₄⁴) + 16 b² ‖z‖² + 56 k b⁴``: the SJLT's own variance
    (exact for fully random hashes, any ``s`` dividing ``k``; at most
    ``2‖z‖⁴/k``), the cross term ``2⟨Sz, e⟩`` and the noise term
    ``‖e‖²`` with ``e`` a difference of two ``Lap(b)`` (``E e⁴ = 72 b⁴``).
    """
    k = check_int(width, "width", minimum=1, maximum=MAX_WIDTH)
    b = check_real(scale, "scale", low=0.0)
    sq, fourth = _norms(z)
    return 2.0 / k * (sq * sq - fourth) + 16.0 * b**2 * sq + 56.0 * k * b**4


def gaussian_jl_distance_variance(z, width: int, sigma: float) -> float:
    r"""Variance of the Gaussian JL's ``‖x - y‖²`` estimate: ``2‖z‖⁴/k + 8σ²‖z‖² + 8kσ⁴``,
    ``k = width``."""
    k = check_int(width, "width", minimum=1, maximum=MAX_WIDTH)
    sigma = check_real(sigma, "sigma", low=0.0)
    sq, _ = _norms(z)
    return 2.0 / k * sq * sq + 8.0 * sigma**2 * sq + 8.0 * k * sigma**4


def _check_k_s(width, s) -> tuple[int, int]:
    k = check_int(width, "width", minimum=1, maximum=MAX_WIDTH)
    s = check_int(s, "s", minimum=1)
    if k % s:
        raise ValueError(f"s must divide width (s blocks of width/s rows), got width={k}, "
                         f"s={s}")
    return k, s


# ----------------------------------------------------------------------------
# backends
# ----------------------------------------------------------------------------

class _PrivateProjection(SketchBackend):
    """Shared parts: sketch = projection + keyed noise; the estimators."""

    similarity = "cosine"
    score_range = 2.0
    renamed = MappingProxyType({"k": "width", "sensitivity": "rating_bound"})

    def _init_common(self, deprecated, width, epsilon, rating_bound, hash_seed,
                     random_state) -> None:
        given = self._current_names(deprecated, width=width, rating_bound=rating_bound)
        self.width = check_int(given["width"], "width", minimum=1, maximum=MAX_WIDTH)
        self.epsilon = check_epsilon(epsilon)
        if given["rating_bound"] is None:
            raise ValueError("rating_bound is required: the largest |rating| of the public "
                             "rating scale (a rating added or removed moves one coordinate "
                             "by at most that much)")
        self.rating_bound = check_positive(given["rating_bound"], "rating_bound")
        self._init_seeds(hash_seed, random_state)

    # subclasses: draw the public matrix, set the noise, describe the noise
    def _project(self, X: sp.csr_matrix, columns: np.ndarray,
                 hash_seed: int) -> tuple[np.ndarray, dict]:
        raise NotImplementedError  # pragma: no cover - abstract

    def _add_noise(self, values: np.ndarray, params: dict, uniforms_of,
                   log_uniforms) -> np.ndarray:
        r"""``values`` plus the noise, drawn from ``uniforms_of(n)`` (``n`` uniforms per
        coordinate, shape ``values.shape + (n,)``) and ``log_uniforms()`` ($\ln U$ exact
        in its tail, one per coordinate), both keyed by the user."""
        raise NotImplementedError  # pragma: no cover - abstract

    @staticmethod
    def _noise_moments(params) -> tuple[float, float]:
        """``(Var η, Var η²)`` of one noise coordinate."""
        raise NotImplementedError  # pragma: no cover - abstract

    #: the parameters that set the noise (named when it is refused)
    _noise_inputs: tuple[str, ...] = ("epsilon", "rating_bound")

    @staticmethod
    def _noise_sd(params) -> float:
        """The standard deviation of one noise coordinate."""
        raise NotImplementedError  # pragma: no cover - abstract

    def sketch(self, X, keys=None, columns=None) -> Sketch:
        """Every user's private projection ``x' = Mx + noise``, one row each.

        Parameters
        ----------
        X : scipy.sparse matrix or 2-D array, users × features
            Row ``u`` is ``x_u`` (not modified).
        keys : 1-D integer array of length ``n_users``, optional
            Row ``u``'s noise depends only on ``keys[u]`` (default: the row
            index).
        columns : 1-D integer array of length ``n_features``, optional
            The features' (items') public keys, from which the matrix is
            drawn column by column (default: the column index;
            [`sketches.check_columns`][dprec.similarity.sketches.check_columns]).

        Returns
        -------
        Sketch
            ``values`` of shape (n_users, k), float64; ``params`` holds the
            noise parameter and the hash seed.  The public matrix is kept in
            ``self.projection_``, drawn from ``hash_seed_``.  An int
            ``random_state`` gives the same release on every call (seeded
            noise, for experiments); ``None`` or a Generator, a new one.
        """
        matrix = as_csr(X)
        row_keys = check_keys(keys, matrix.shape[0])
        items = check_columns(columns, matrix.shape[1])
        hash_seed, seed = self._release_seeds()
        values, params = self._project(matrix, items, hash_seed)
        self._check_noise(params)
        params["hash_seed"] = hash_seed
        noisy = self._add_noise(values, params,
                                lambda n: keyed_uniform(seed, row_keys, n * self.width)
                                .reshape(-1, self.width, n),
                                lambda: keyed_log_uniform(seed, row_keys, self.width, stream=1))
        return Sketch(noisy, np.ones(matrix.shape[0], dtype=bool), self.name, params)

    def _check_noise(self, params: dict) -> None:
        """Refuse, before any noise is drawn, a noise the estimators cannot handle (a
        standard deviation above `MAX_NOISE_SD`), naming the parameters that set it."""
        sd = self._noise_sd(params)
        if sd > MAX_NOISE_SD:
            given = ", ".join(f"{name} = {getattr(self, name):g}" for name in self._noise_inputs)
            raise ValueError(
                f"{self.name}: {given} give noise of standard deviation {sd:.3g} per "
                f"coordinate, above {MAX_NOISE_SD:g}, where the similarity estimates (sums of "
                f"its fourth power) would overflow; epsilon must be at least about "
                f"{self.epsilon * sd / MAX_NOISE_SD:.3g} (or rating_bound smaller)")

    def _noise_variance(self, S: Sketch) -> float:
        return self._noise_moments(S.params)[0]

    def squared_norms(self, S: Sketch) -> np.ndarray:
        """Unbiased ``‖x‖²`` estimates: ``‖x'‖² - k Var(η)`` (may be negative)."""
        S, _ = pair_operands(S, None, self.name, self.width)
        return np.einsum("ij,ij->i", S.values, S.values) - self.width * self._noise_variance(S)

    def squared_distances(self, S: Sketch, other: Sketch | None = None) -> np.ndarray:
        """Unbiased ``‖x - y‖²`` estimates for all pairs: ``‖x' - y'‖² - 2k Var(η)``.

        From the Gram matrix.  Not clipped (may be negative); the diagonal of
        the ``other=None`` case is 0 (a vector's distance to itself).
        """
        S, T = pair_operands(S, other, self.name, self.width)
        D = squared_distances(S.values, None if other is None else T.values)
        D -= 2.0 * self.width * self._noise_variance(S)
        if other is None:
            np.fill_diagonal(D, 0.0)
        return D

    def squared_distances_paired(self, S: Sketch, other: Sketch) -> np.ndarray:
        """Unbiased ``‖x_i - y_i‖²`` between ``S[i]`` and ``other[i]`` (1-D)."""
        S, T = pair_operands(S, other, self.name, self.width)
        if len(S) != len(T):
            raise ValueError(f"paired estimates need as many rows in other as in S, got "
                             f"{len(T)} and {len(S)}")
        D = np.sum((S.values - T.values) ** 2, axis=1)
        return D - 2.0 * self.width * self._noise_variance(S)

    def norm_floor(self, S: Sketch) -> float:
        """``sqrt(k Var(η²))``: the standard deviation of a pure-noise norm estimate."""
        return max(math.sqrt(self.width * self._noise_moments(S.params)[1]), 1e-12)

    def estimate(self, S: Sketch, other: Sketch | None = None, clip: bool = True) -> np.ndarray:
        r"""Cosine estimates ``(n̂_x + n̂_y - D̂)/(2 sqrt(n̂_x n̂_y))`` for all pairs.

        ``n̂`` the norm estimates floored at `norm_floor`, ``D̂`` the
        distance estimates; the numerator is ``⟨x', y'⟩`` (a Gram matrix).
        Clipped to ``[-1, 1]`` if ``clip``; diagonal 1 (``other`` None).
        """
        clip = check_clip(clip)
        S, T = pair_operands(S, other, self.name, self.width)
        floor = self.norm_floor(S)
        norms_s = np.sqrt(np.maximum(self.squared_norms(S), floor))
        norms_t = norms_s if other is None else np.sqrt(np.maximum(self.squared_norms(T), floor))
        sims = gram(S.values, T.values)
        sims /= norms_s[:, None]
        sims /= norms_t[None, :]
        return finish_estimate(sims, S.valid, T.valid, other is None, -1.0, 1.0, clip)

    def similarity_input(self, ratings: sp.csr_matrix) -> sp.csr_matrix:
        """The raw rating vectors; every ``|rating|`` must be ``<= rating_bound``."""
        if ratings.nnz and np.abs(ratings.data).max() > self.rating_bound:
            raise ValueError(
                f"a rating of absolute value {np.abs(ratings.data).max():g} exceeds "
                f"rating_bound={self.rating_bound:g}: adding or removing it would not be "
                "covered by the privacy unit; set rating_bound to the largest |rating| of the "
                "scale")
        return ratings

    def _entry(self, mechanism: str, epsilon: float, delta: float) -> LedgerEntry:
        """The entry of one release (void when seeded: `SketchBackend._seeded`)."""
        return self._seeded(LedgerEntry(
            "similarity", mechanism, epsilon, delta, Unit.RATING, Status.HOLDS, "user",
            f"one rating added, removed or changed by at most rating_bound = "
            f"{self.rating_bound:g} moves one coordinate of x; any public projection"))


class PrivateSJLT(_PrivateProjection):
    r"""The private sparser JL transform (Stausholm 2021): ``x' = Sx + Lap(b)^k``.

    ε-DP (pure) when one coordinate of ``x`` moves by at most
    ``Δ = rating_bound``; ``b = √s·Δ/ε``.  See the module docstring for the
    estimators and their variance.

    Parameters
    ----------
    width : int, default 256
        Output dimension ``k``, ``>= 1`` (deprecated name: ``k``).
    s : int, default 4
        Non-zeros per column (blocks), ``>= 1``, dividing ``width``.
    epsilon : float
        ``ε > 0`` of one user's sketch.
    rating_bound : float
        ``Δ > 0``: the most one coordinate (rating) can move, the largest
        ``|rating|`` of the scale (deprecated name: ``sensitivity``).
    random_state : None, int, RandomState or Generator
        The noise (and the hash seed when ``hash_seed`` is None); ``None``:
        fresh entropy per release; an int: seeded noise, for experiments.
    hash_seed : int, optional
        The public seed of the projection (any fixed projection keeps the
        guarantee: the sensitivity holds for every matrix of this form).

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> X = sp.random(4, 50, density=0.3, format="csr", random_state=0)
    >>> sjlt = PrivateSJLT(64, 4, epsilon=2.0, rating_bound=1.0, random_state=0)
    >>> sjlt.squared_distances(sjlt.sketch(X)).shape
    (4, 4)
    """

    name = "sjlt"
    required = ("rating_bound",)

    def __init__(self, width: int = 256, s: int = 4, *, epsilon: float,
                 rating_bound: float | None = None, random_state: RandomStateLike = None,
                 hash_seed: int | None = None, **deprecated) -> None:
        self._init_common(deprecated, width, epsilon, rating_bound, hash_seed, random_state)
        self.width, self.s = _check_k_s(self.width, s)

    def _l1_sensitivity(self) -> float:
        """``√s·Δ``, raised by a relative ``1e-9``: the computed projections of two
        neighbouring vectors differ by ``√s·Δ`` up to floating-point rounding, which
        can add one lattice step when ``√s·Δ`` is a multiple of the grid."""
        return math.sqrt(self.s) * self.rating_bound * (1 + 1e-9)

    def scale(self) -> float:
        """The Laplace scale ``b ≈ √s·Δ/ε`` (lattice sampler, ``s`` coordinates move).

        Raises
        ------
        ValueError
            If ε is below about ``max(s·2**-20, √(2s)·Δ / MAX_NOISE_SD)``: the
            lattice's rounding alone would spend more, or the noise would overflow
            the estimates.
        """
        minimum = max(self.s * 2.0**-LATTICE_BITS,
                      math.sqrt(2.0) * self._l1_sensitivity() / MAX_NOISE_SD)
        if self.epsilon < minimum:
            raise ValueError(
                f"sjlt: epsilon = {self.epsilon:g} is too small for rating_bound = "
                f"{self.rating_bound:g} and s = {self.s}: epsilon must be at least about "
                f"{minimum:.3g} (the lattice Laplace sampler's rounding alone spends about "
                f"s * 2**-21, and noise of standard deviation above {MAX_NOISE_SD:g} "
                f"would overflow the estimates)")
        return laplace_scale(self.epsilon, self._l1_sensitivity(), "lattice", max_changed=self.s)

    def privacy(self) -> LedgerEntry:
        """Lattice Laplace of ℓ1 sensitivity ``√s·Δ`` over ``s`` coordinates
        ([`dprec.mechanisms.laplace_epsilon`][] at the scale used)."""
        epsilon = laplace_epsilon(self.scale(), self._l1_sensitivity(), "lattice",
                                  max_changed=self.s)
        return self._entry("laplace (private SJLT)", epsilon, 0.0)

    def _project(self, X, columns, hash_seed):
        self.projection_ = sjlt_matrix(self.width, self.s, columns, hash_seed)
        values = (X @ self.projection_.T.tocsr()).toarray()
        return values, {"scale": self.scale()}

    def _add_noise(self, values, params, uniforms_of, log_uniforms):
        return laplace_from_log_uniform(values, params["scale"], log_uniforms(),
                                        uniforms_of(2))

    @staticmethod
    def _noise_sd(params) -> float:
        return math.sqrt(2.0) * params["scale"]

    @staticmethod
    def _noise_moments(params) -> tuple[float, float]:
        b = params["scale"]
        return 2.0 * b * b, 20.0 * b**4                   # E η⁴ = 24 b⁴

    def distance_variance(self, z) -> float:
        """[`sjlt_distance_variance`][] of ``z = x - y`` at this backend's width and ``b``."""
        return sjlt_distance_variance(z, self.width, self.scale())


class GaussianJL(_PrivateProjection):
    r"""Gaussian JL with Gaussian noise (Kenthapadi et al. 2013): ``x' = Px + N(0, σ²)^k``.

    Claimed (ε, δ)-DP when one coordinate of ``x`` moves by at most
    ``Δ = rating_bound``; ``σ`` from ``w₂ = Δ · max_j ‖P e_j‖₂`` of the drawn
    (public) ``P``, so it is known after
    [`sketch`][dprec.similarity.SketchBackend.sketch] (``sigma_``, and in the sketch's
    params).  **As published**: the Gaussian noise is floating point,
    and the low bits of a released value reveal the input (Mironov 2012): the
    baseline of the paper, not a guarantee (see [`privacy`][]).

    Parameters
    ----------
    width : int, default 256
        Output dimension ``k``, ``>= 1`` (deprecated name: ``k``).
    epsilon : float
        ``ε > 0``.
    delta : float, default 1e-4
        ``δ ∈ (0, 1/2)``.
    rating_bound : float
        ``Δ > 0``, the largest ``|rating|`` (deprecated name: ``sensitivity``).
    random_state : None, int, RandomState or Generator
        The noise (and the hash seed when ``hash_seed`` is None).
    hash_seed : int, optional
        The public seed of ``P``.
    calibration : {"kenthapadi", "analytic"}
        ``σ = (w₂/ε) sqrt(2(ln(1/(2δ)) + ε))`` (the paper's, default) or the
        smallest valid σ ([`dprec.mechanisms.gaussian_sigma`][], Balle &
        Wang 2018; 20-50 % smaller).
    """

    name = "gaussian_jl"
    required = ("rating_bound",)

    def __init__(self, width: int = 256, *, epsilon: float, delta: float = 1e-4,
                 rating_bound: float | None = None, random_state: RandomStateLike = None,
                 calibration: str = "kenthapadi", hash_seed: int | None = None,
                 **deprecated) -> None:
        self._init_common(deprecated, width, epsilon, rating_bound, hash_seed, random_state)
        self.delta = check_open_interval(delta, "delta", 0.0, 0.5)
        self.calibration = check_choice(calibration, "calibration", GAUSSIAN_CALIBRATIONS)

    def sigma(self, projection: np.ndarray) -> float:
        """σ for the public matrix ``projection`` (``w₂ = Δ · max column norm``)."""
        w2 = self.rating_bound * float(np.sqrt(np.max(np.sum(projection**2, axis=0),
                                                     initial=0.0)))
        if w2 == 0.0:
            return 1e-300          # no feature: nothing to hide (noise irrelevant)
        if self.calibration == "kenthapadi":
            return kenthapadi_sigma(self.epsilon, self.delta, w2)
        return gaussian_sigma(self.epsilon, self.delta, w2)

    def privacy(self) -> LedgerEntry:
        """ε and the exact δ(ε) of σ at ℓ2 sensitivity ``w₂`` of the drawn ``P``
        ([`dprec.mechanisms.gaussian_delta`][]; the declared δ before a sketch),
        **as published**: the noise is floating-point Gaussian, whose low bits
        reveal the input (Mironov 2012), so dprec does not guarantee it."""
        delta = self.delta
        if hasattr(self, "sigma_"):
            w2 = self.rating_bound * float(np.sqrt(np.max(np.sum(self.projection_**2, axis=0),
                                                         initial=0.0)))
            if w2 > 0:
                delta = gaussian_delta(self.sigma_, w2, self.epsilon)
        return LedgerEntry(
            "similarity", "gaussian (Gaussian JL)", self.epsilon, delta, Unit.RATING,
            Status.AS_PUBLISHED, "user",
            "Kenthapadi et al.'s baseline as published, not a guarantee: the noise is "
            "floating-point Gaussian, and the low bits of a released value reveal the input "
            "(Mironov 2012)")

    def _project(self, X, columns, hash_seed):
        self.projection_ = gaussian_jl_matrix(self.width, columns, hash_seed)
        self.sigma_ = self.sigma(self.projection_)
        self._longest = longest_sole_rater(X, self.projection_)
        values = np.asarray(X @ self.projection_.T)
        return values, {"sigma": self.sigma_}

    def _scope(self) -> tuple[tuple[tuple[np.ndarray, str], ...], tuple[str, ...]]:
        r"""$\sigma$ follows $w_2 = \Delta \max_j \lVert P e_j \rVert_2$ over the items
        sketched, read from the data in `PrivateKNN`: the sole rater of the strictly longest
        column (`longest_sole_rater`) is outside the claim (removing their rating lowers
        $\sigma$ in every sketch, with certainty; no other removal moves $w_2$), and the
        claim is for neighbouring datasets with the same items (a rating of an item nobody
        rated may lengthen it, whoever adds it)."""
        longest = getattr(self, "_longest", None)
        if longest is None:
            return (), ()
        return ((longest, "the sole rater of the item whose column of P is the longest: "
                          "removing their rating lowers w₂ = Δ·max_j‖P e_j‖, hence σ, the "
                          "noise of every user's sketch"),), (
            "σ is calibrated to the longest column of P among the items sketched (the "
            "rated items, read from the data): the claim is for neighbouring datasets with "
            "the same items",)

    def _add_noise(self, values, params, uniforms_of, log_uniforms):
        return gaussian_from_uniform(values, params["sigma"], uniforms_of(2))

    _noise_inputs = ("epsilon", "delta", "rating_bound")

    @staticmethod
    def _noise_sd(params) -> float:
        return params["sigma"]

    @staticmethod
    def _noise_moments(params) -> tuple[float, float]:
        var = params["sigma"] ** 2
        return var, 2.0 * var * var

    def distance_variance(self, z) -> float:
        """[`gaussian_jl_distance_variance`][] at this backend's width and last ``σ``."""
        if not hasattr(self, "sigma_"):
            raise ValueError("σ depends on the public matrix: call sketch() first")
        return gaussian_jl_distance_variance(z, self.width, self.sigma_)
