r"""The public MinHash functions behind the sketches of `dprec.similarity.minhash`.

$K$ (`width`) range-$B$ MinHash functions as one table of codes drawn from the public
`hash_seed` and the items' public keys; every set's $K$ buckets; the match counts and
distances between two sets of buckets, as matrix products, and the Jaccard estimators
read from them; and $L$, the number of coordinates in which the sketches of two
neighbouring sets can differ (with probability $1 - \delta$ over the functions), which
the private sketches' noise is calibrated to.

**Correction (choice).** The paper's bound, ``L = K r + sqrt(3 ln(1/δ) K r)`` with ``r =
(α/τ)(1 - 1/B)``, is the Chernoff bound ``P[X ≥ (1+η)μ] ≤ exp(-η²μ/3)``, which holds
only for ``η ≤ 1``, i.e. for ``K r ≥ 3 ln(1/δ)``. For small ``K r`` (large sets) it
fails: with ``K = 100``, ``τ = 1000``, ``B = 2``, ``δ = 1e-4``, ``L = 1.23`` but ``P[X ≥
2] = 1.2e-3 > δ``. dprec therefore uses ``L = max(L_paper, L_bin)`` (capped at ``K``),
with ``L_bin`` the smallest integer such that ``P[Binomial(K, r) > L_bin] ≤ δ`` (exact,
by monotonicity of the binomial tail in ``q``): the paper's ``L`` wherever it is valid,
never a weaker guarantee. See `difference_bound`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..mechanisms.randomized_response import MAX_EPSILON as RR_MAX_EPSILON
from ..utils._rng import keyed_bits
from ..utils._validation import check_int, check_open_unit
from .sketches import MAX_WIDTH, Sketch, pair_operands

__all__ = [
    "MAX_B",
    "MinHashFunctions",
    "check_bound_arguments",
    "difference_bound",
    "difference_bound_binomial",
    "difference_bound_paper",
    "finish_paired",
    "jaccard_from_distances",
    "coordinate_epsilon",
    "jaccard_from_matches",
    "match_counts",
    "one_hot",
    "paired_sketches",
]

#: Gathered hash values per block of ``MinHashFunctions.buckets`` (fits in L2).
_BLOCK = 1 << 18
#: One-hot encodings wider than this are sparse in the match counts.
_DENSE_ONE_HOT = 4096

# ----------------------------------------------------------------------------
# the bound on changed coordinates
# ----------------------------------------------------------------------------

def check_bound_arguments(K, B, alpha, tau, delta) -> tuple[int, int, int, int, float]:
    """The bound's arguments checked, by the sketches' parameter names."""
    K = check_int(K, "width", minimum=1, maximum=MAX_WIDTH)
    B = check_int(B, "B", minimum=2)
    alpha = check_int(alpha, "set_difference", minimum=1)
    tau = check_int(tau, "tau", minimum=1)
    if alpha > tau:
        raise ValueError(f"set_difference must be <= tau (a set of at least tau items differs "
                         f"in at most set_difference of them), got set_difference={alpha}, "
                         f"tau={tau}")
    delta = check_open_unit(delta, "delta")
    return K, B, alpha, tau, delta


def difference_bound_paper(width: int, B: int, set_difference: int, tau: int,
                           delta: float) -> float:
    r"""The paper's bound ``L = K r + sqrt(3 ln(1/δ) K r)``, ``r = (α/τ)(1 - 1/B)``.

    Aumüller et al. 2020, §4 and §5.  A Chernoff bound valid when
    ``K r ≥ 3 ln(1/δ)``; below, see [`difference_bound`][].
    """
    K, B, alpha, tau, delta = check_bound_arguments(width, B, set_difference, tau, delta)
    mean = K * (alpha / tau) * (1.0 - 1.0 / B)
    return mean + math.sqrt(3.0 * math.log(1.0 / delta) * mean)


def difference_bound_binomial(width: int, B: int, set_difference: int, tau: int,
                              delta: float) -> int:
    r"""The smallest integer ``ℓ`` with ``P[Binomial(K, r) > ℓ] ≤ δ``, ``r = (α/τ)(1 - 1/B)``.

    The exact ``1 - δ`` quantile of the number of coordinates in which the
    sketches of two neighbouring sets differ (each hash independently, with
    probability at most ``r``; the tail grows with the probability).
    """
    K, B, alpha, tau, delta = check_bound_arguments(width, B, set_difference, tau, delta)
    r = (alpha / tau) * (1.0 - 1.0 / B)
    from scipy import stats  # here, on first use: importing scipy.stats takes 0.5 s

    tail = stats.binom.sf(np.arange(K + 1), K, r)          # P[X > ℓ], ℓ = 0..K
    return int(np.argmax(tail <= delta))                  # tail[K] = 0 <= δ


def difference_bound(width: int, B: int, set_difference: int, tau: int,
                     delta: float) -> float:
    r"""``L`` used by dprec: ``min(K, max(L_paper, L_bin))``, ``K = width``, ``α = set_difference``.

    With probability at least ``1 - δ`` over the hash functions, the sketches
    of two sets that differ in at most ``α`` items and have at least ``τ``
    items differ in at most ``L`` of the ``K`` coordinates.  ``L_paper`` is
    [`difference_bound_paper`][] (used wherever it is valid, so the numbers
    are the paper's), ``L_bin`` [`difference_bound_binomial`][] (raises it
    where the paper's Chernoff step does not hold); at most ``K`` coordinates
    can differ at all.
    """
    paper = difference_bound_paper(width, B, set_difference, tau, delta)
    binomial = difference_bound_binomial(width, B, set_difference, tau, delta)
    return float(min(width, max(paper, binomial)))


# ----------------------------------------------------------------------------
# the public hash functions
# ----------------------------------------------------------------------------

#: Bits of a hash rank: ``rank·B + bucket`` must fit in 64 bits for ``B <= MAX_B``.
_RANK_BITS = 53
#: The largest number of buckets (``2**(64 - _RANK_BITS)``).
MAX_B = 2 ** (64 - _RANK_BITS)


@dataclass(frozen=True)
class MinHashFunctions:
    r"""``K = width`` range-``B`` MinHash functions on a set of items, as one table.

    ``codes[e, j] = ρ_j(e) · B + g_j(e)``: ``ρ_j(e)`` a uniformly random
    53-bit rank of item ``e`` under hash ``j`` (a random permutation of the
    items, up to ties of probability below ``n²/2^54``) and ``g_j(e)`` a
    uniform bucket, both functions of the public ``hash_seed`` and the item's
    public key only (`dprec.utils._rng.keyed_bits`), so an item's hash values
    do not depend on which other items the data holds.  The minimum code over
    a set is its MinHash element's code, and ``min code mod B`` its bucket.
    """

    width: int
    B: int
    codes: np.ndarray

    @classmethod
    def draw(cls, width: int, B: int, columns, hash_seed: int) -> MinHashFunctions:
        """The table for the items with public keys ``columns``, from ``hash_seed``."""
        K = check_int(width, "width", minimum=1, maximum=MAX_WIDTH)
        B = check_int(B, "B", minimum=2, maximum=MAX_B)
        columns = np.asarray(columns, dtype=np.int64)
        ranks = keyed_bits(hash_seed, columns, K, stream=0) >> np.uint64(64 - _RANK_BITS)
        buckets = keyed_bits(hash_seed, columns, K, stream=1) % np.uint64(B)
        codes = ranks * np.uint64(B) + buckets
        codes.flags.writeable = False
        return cls(width=K, B=B, codes=codes)

    @property
    def n_items(self) -> int:
        """The number of items the hash functions are defined on."""
        return int(self.codes.shape[0])

    def buckets(self, sets: sp.csr_matrix) -> np.ndarray:
        """Every row's ``K`` buckets, ``-1`` for an empty row.

        One gather of the hash codes at the stored indices and one
        ``np.minimum.reduceat`` over the rows' segments, in blocks of rows of
        about ``2**18`` gathered codes; empty rows (which ``reduceat``
        mishandles) are left out of it.

        Parameters
        ----------
        sets : scipy.sparse.csr_matrix of shape (n, n_items)
            Stored entries are the members (see
            [`set_matrix`][dprec.similarity.sketches.set_matrix]).

        Returns
        -------
        numpy.ndarray of int64, shape (n, K).
        """
        if sets.shape[1] != self.n_items:
            raise ValueError(f"X has {sets.shape[1]} items (columns), the hash functions "
                             f"were drawn for {self.n_items}")
        n = sets.shape[0]
        indptr, indices = sets.indptr.astype(np.int64), sets.indices
        mins = np.full((n, self.width), np.iinfo(self.codes.dtype).max, dtype=self.codes.dtype)
        step = max(1, _BLOCK // self.width)
        start = 0
        while start < n:
            stop = int(np.searchsorted(indptr, indptr[start] + step, side="right")) - 1
            stop = min(n, max(stop, start + 1))
            self._block_minimum(indptr, indices, start, stop, mins)
            start = stop
        out = (mins % self.codes.dtype.type(self.B)).astype(np.int64)
        out[np.diff(indptr) == 0] = -1
        return out

    def _block_minimum(self, indptr: np.ndarray, indices: np.ndarray, start: int, stop: int,
                       out: np.ndarray) -> None:
        rows = start + np.flatnonzero(np.diff(indptr[start:stop + 1]))
        if not rows.size:
            return
        first = indptr[start]
        gathered = self.codes[indices[first:indptr[stop]]]
        out[rows] = np.minimum.reduceat(gathered, indptr[rows] - first, axis=0)


# ----------------------------------------------------------------------------
# estimators from matrix products
# ----------------------------------------------------------------------------

def one_hot(codes: np.ndarray, B: int) -> np.ndarray | sp.csr_matrix:
    """Row ``u``: ones at ``j·B + codes[u, j]`` (none for an invalid row of ``-1``)."""
    n, K = codes.shape
    valid = codes[:, 0] >= 0
    cols = (np.arange(K) * B + codes)[valid]
    if K * B <= _DENSE_ONE_HOT:
        out = np.zeros((n, K * B), dtype=np.float32)
        out[np.flatnonzero(valid)[:, None], cols] = 1.0
        return out
    indptr = np.zeros(n + 1, dtype=np.int64)
    indptr[1:] = np.cumsum(np.where(valid, K, 0))
    return sp.csr_matrix((np.ones(cols.size, dtype=np.float32), cols.ravel(), indptr),
                         shape=(n, K * B))


def match_counts(codes_a: np.ndarray, codes_b: np.ndarray, B: int,
                 right=None) -> np.ndarray:
    """``M[u, v] = #{j : a_uj = b_vj}``, as the product of one-hot encodings.

    float32 products of 0/1 entries are exact up to ``2**24`` matches; the
    result is float64.  ``right``, if given, is ``one_hot(codes_b, B)`` already
    built (reused across blocks of ``codes_a``).
    """
    left = one_hot(codes_a, B)
    if right is None:
        right = left if codes_b is codes_a else one_hot(codes_b, B)
    product = left @ right.T
    if sp.issparse(product):
        product = product.toarray()
    return np.asarray(product, dtype=np.float64)


def jaccard_from_matches(matches: np.ndarray, K: int, B: int, params: Mapping) -> np.ndarray:
    """``(B-1)(B P̂ - 1)/(B p - 1)²`` with ``P̂ = matches/K`` (unclipped, in place), ``p``
    the sketches' ``params["keep_probability"]``.

    ``B p − 1`` cancels when ``p`` is near ``1/B`` (a tiny ``ε'``): with
    ``params["epsilon_prime"]`` (RRMinHash) it is then computed from ``ε'`` as
    ``(B−1)(1 − e^{−ε'})/(1 + (B−1)e^{−ε'})`` (the same number, without cancellation).
    """
    contrast, eps = B * params["keep_probability"] - 1.0, params.get("epsilon_prime")
    if eps is not None and contrast < 1e-3:
        contrast = (B - 1) * -math.expm1(-eps) / (1.0 + (B - 1) * math.exp(-eps))
    matches *= B / K
    matches -= 1.0
    if contrast > 1e-100:
        matches *= (B - 1) / contrast**2
    else:                             # contrast² would underflow: one factor at a time
        matches /= contrast
        matches *= (B - 1) / contrast
    return matches


def coordinate_epsilon(epsilon: float, changed: float) -> float:
    """RRMinHash's budget of one coordinate, ``ε' = ε / ⌈L⌉`` (``L = changed``), at most
    ``1e18``: what the sampler resolves (a larger budget is spent up to it, and the entry
    states what is spent).

    Raises
    ------
    ValueError
        If ``ε'`` is below ``1e-300``: the estimates divide by about ``ε'²``.
    """
    n = math.ceil(changed)
    if epsilon / n < 1e-300:
        raise ValueError(f"rr_minhash: epsilon = {epsilon:g} is too small: each of the {n} "
                         f"coordinates that may change gets epsilon / {n}, and the estimates "
                         f"divide by about its square; epsilon must be at least {1e-300 * n:.3g}")
    return min(epsilon / n, RR_MAX_EPSILON)


def jaccard_from_distances(D: np.ndarray, K: int, B: int, scale: float) -> np.ndarray:
    """``1 - 6(D/K - 4s²)/(B² - 1)`` (unclipped)."""
    return 1.0 - 6.0 * (D / K - 4.0 * scale * scale) / (B**2 - 1)


def paired_sketches(S: Sketch, other: Sketch, backend: str, width: int) -> tuple[Sketch, Sketch]:
    """`S` and `other` checked as operands of row-by-row (paired) estimates."""
    S, T = pair_operands(S, other, backend, width)
    if len(S) != len(T):
        raise ValueError(f"paired estimates need as many rows in other as in S, got "
                         f"{len(T)} and {len(S)}")
    return S, T


def finish_paired(sims: np.ndarray, S: Sketch, T: Sketch, low: float, high: float,
                   clip: bool) -> np.ndarray:
    """Paired estimates clipped to `[low, high]` (if `clip`), 0 where a row has no sketch."""
    if clip:
        np.clip(sims, low, high, out=sims)
    sims[~(S.valid & T.valid)] = 0.0
    return sims
