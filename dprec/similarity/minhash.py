r"""MinHash sketches of users' item sets: plain, RRMinHash and NoisyMinHash.

Aumüller, Bourgeat & Schmurr, "Differentially Private Sketches for Jaccard
Similarity Estimation", SISAP 2020.

A user's set ``S_u`` is row ``u`` of a sparse users × items matrix (a stored
non-zero entry = a member).  ``K`` (parameter ``width``) public range-``B``
MinHash functions map it
to ``[B]^K``: hash ``j`` is the bucket ``g_j(e)`` of ``e = argmin_{e ∈ S_u}
π_j(e)``, with ``π_j`` a uniformly random permutation of the item universe and
``g_j`` a uniformly random map to ``{0..B-1}`` (Broder 1997; Li & König 2010).
For two sets with Jaccard similarity ``J``, ``P[g_j(x) = g_j(y)] = J + (1-J)/B``.

Privacy unit: neighbouring sets differ in at most ``α`` items (parameter
``set_difference``) and have at least ``τ`` items.  Then the ``K`` hash values of two
neighbours differ in a ``Binomial(K, q)`` number of coordinates with
``q ≤ r = (α/τ)(1 - 1/B)``, at most ``L`` with probability ``1 - δ``: the paper's
``L = K r + sqrt(3 ln(1/δ) K r)``, corrected where its Chernoff step does not hold
(`difference_bound` in `dprec.similarity.minhash_functions`).

* [`RRMinHash`][]: each coordinate through ``B``-ary randomised response
  with ``ε' = ε/⌈L⌉`` (keep with ``p = e^{ε'}/(e^{ε'} + B - 1)``).
  ``Ĵ = (B-1)(B P̂ - 1)/(B p - 1)²`` with ``P̂`` the fraction of matching
  coordinates, since ``P[match] = 1/B + J (1-1/B) ((Bp-1)/(B-1))²``.
* [`NoisyMinHash`][]: ``bucket + Lap(s)`` per coordinate,
  ``s = (B-1) L/ε`` (ℓ1 sensitivity ``L(B-1)``), with the lattice sampler of
  [`dprec.mechanisms.laplace_from_log_uniform`][].  With ``D = Σ_j (a_j - b_j)²``,
  ``E[D/K] = (1-J)(B²-1)/6 + 4s²`` gives ``Ĵ = 1 - 6(D/K - 4s²)/(B²-1)``.
* [`MinHash`][]: the non-private baseline, ``Ĵ = (B P̂ - 1)/(B - 1)``
  (RRMinHash's estimator with ``p = 1``).

All three estimators are unbiased before clipping to ``[0, 1]``.

``τ`` is a public bound given by the caller.  ``tau=None`` reads it from the
data (the smallest non-empty set passed to ``sketch``): that releases the
smallest set size and makes every user's noise level depend on another
user's data, so it emits a [`dprec.accountant.ledger.PrivacyLeakWarning`][] and the privacy
entry is [`Status.VOID`][dprec.accountant.ledger.Status].  Sets smaller than ``τ`` do not get the
stated guarantee: ``sketch`` raises ``ValueError`` naming ``tau``, or with
``small_users="exclude"`` releases nothing for them (their row is invalid, their
similarities 0) and warns how many.  Empty sets likewise.
Nor do the sets at the boundary, of ``τ`` to ``τ + α − 1`` items: ``α`` items
fewer exclude them (or make ``sketch`` raise), an event no finite ε bounds;
the release marks them outside the guarantee (the ``outside`` of a
[`SketchRelease`][dprec.similarity.SketchRelease], ε = ∞ in a model's report), and
states ``τ`` public as its condition.

The hash functions come from the public ``hash_seed`` (see
[`dprec.similarity.sketches`][]); the δ above is over their random draw.

See [Similarities](../similarities.md) for the formulas and the paper.
"""

from __future__ import annotations

import math
import warnings
from types import MappingProxyType

import numpy as np
import scipy.sparse as sp

from ..accountant.ledger import LedgerEntry, PrivacyLeakWarning, Status, Unit
from ..mechanisms import (
    laplace_epsilon,
    laplace_from_log_uniform,
    laplace_scale,
    randomized_response_from_log_uniform,
    randomized_response_keep_probability,
)
from ..mechanisms.common import keyed_log_uniform
from ..utils._rng import RandomStateLike, keyed_uniform
from ..utils._validation import check_choice, check_epsilon, check_int, check_open_unit, check_real
from .minhash_functions import (
    MAX_B,
    MinHashFunctions,
    check_bound_arguments,
    coordinate_epsilon,
    difference_bound,
    difference_bound_binomial,
    difference_bound_paper,
    finish_paired,
    jaccard_from_distances,
    jaccard_from_matches,
    match_counts,
    one_hot,
    paired_sketches,
)
from .sketches import (
    MAX_WIDTH,
    Sketch,
    SketchBackend,
    check_clip,
    check_columns,
    check_keys,
    finish_estimate,
    pair_operands,
    set_matrix,
    squared_distances,
)

__all__ = [
    "MinHash",
    "MinHashFunctions",
    "NoisyMinHash",
    "RRMinHash",
    "difference_bound",
    "difference_bound_binomial",
    "difference_bound_paper",
]

#: What `sketch` does with a set smaller than τ
SMALL_USERS = ("raise", "exclude")


class _MinHashFamily(SketchBackend):
    """Shared parts: hashing, τ handling, ``similarity_matrix`` input."""

    similarity = "jaccard"
    score_range = 1.0
    option_defaults = {"delta": 1e-4}
    renamed = MappingProxyType({"K": "width", "alpha": "set_difference"})
    private = True

    def _init_common(self, width, B, threshold, hash_seed, random_state) -> None:
        self.width = check_int(width, "width", minimum=1, maximum=MAX_WIDTH)
        self.B = check_int(B, "B", minimum=2, maximum=MAX_B)
        if threshold is not None:
            check_real(threshold, "threshold")
        self.threshold = threshold
        self._init_seeds(hash_seed, random_state)

    def _init_private(self, epsilon, delta, tau, set_difference, small_users) -> None:
        self.epsilon = check_epsilon(epsilon)
        self.delta = check_open_unit(delta, "delta")
        self.tau = None if tau is None else check_int(tau, "tau", minimum=1)
        self.set_difference = check_int(set_difference, "set_difference", minimum=1)
        if self.tau is not None:
            check_bound_arguments(self.width, self.B, self.set_difference, self.tau, self.delta)
        self.small_users = check_choice(small_users, "small_users", SMALL_USERS)
        self.tau_: int | None = self.tau

    # ------------------------------------------------------------ hashing
    def hash_functions(self, columns: np.ndarray, hash_seed: int) -> MinHashFunctions:
        """The public hash functions of the items with keys ``columns``, from ``hash_seed``."""
        return MinHashFunctions.draw(self.width, self.B, columns, hash_seed)

    def sketch(self, X, keys=None, columns=None) -> Sketch:
        """Every user's sketch: MinHash, then the mechanism, row by row.

        Parameters
        ----------
        X : scipy.sparse matrix, users × items
            Row ``u`` is ``S_u`` (stored non-zero entries are members); not
            modified.  ``n_items = X.shape[1]`` is the universe the public hash
            functions are drawn for.
        keys : 1-D integer array of length ``n_users``, optional
            Row ``u``'s noise is a function of ``keys[u]`` only (default: the
            row index), so ``sketch(X[rows], keys=rows)`` gives the same rows
            as ``sketch(X)[rows]``.
        columns : 1-D integer array of length ``n_items``, optional
            The items' public keys (default: the column index): the hash functions
            are drawn per key ([`check_columns`][dprec.similarity.sketches.check_columns]).

        Returns
        -------
        Sketch
            ``values`` of shape (n_users, K).  The hash functions are kept in
            ``self.hash_functions_``, their seed in ``self.hash_seed_``.

        Notes
        -----
        Randomness: one draw of ``random_state`` per call gives the noise seed
        (and the hash seed, one-way, when ``hash_seed`` is None; see
        `SketchBackend._release_seeds`).  An int ``random_state``
        therefore gives the same sketches on every call (a repeat releases
        nothing new; seeded noise is for experiments); ``None`` or a Generator
        give new noise each call (a second release: sketch all users in one
        call).
        """
        sets = set_matrix(X)
        row_keys = check_keys(keys, sets.shape[0])
        items = check_columns(columns, sets.shape[1])
        released = self._check_sizes(np.diff(sets.indptr))
        hash_seed, noise_seed = self._release_seeds()
        self.hash_functions_ = self.hash_functions(items, hash_seed)
        buckets = self.hash_functions_.buckets(sets)
        buckets[~released] = -1
        return self.privatize(buckets, noise_seed, row_keys)

    def _check_sizes(self, sizes: np.ndarray) -> np.ndarray:
        """Which users get a sketch (all non-empty for the non-private baseline)."""
        return sizes > 0

    def similarity_input(self, ratings: sp.csr_matrix) -> sp.csr_matrix:
        """The set of items rated ``>= threshold`` (all rated items if None); new arrays."""
        if self.threshold is None:
            keep = np.ones(ratings.data.shape, dtype=bool)
        else:
            keep = ratings.data >= self.threshold
        kept_before = np.concatenate([[0], np.cumsum(keep)])
        indptr = kept_before[ratings.indptr]
        return sp.csr_matrix((np.ones(indptr[-1], dtype=np.int8), ratings.indices[keep], indptr),
                             shape=ratings.shape)

    def privatize(self, buckets: np.ndarray, seed: int, keys=None) -> Sketch:  # pragma: no cover
        raise NotImplementedError

    def estimate(self, S: Sketch, other: Sketch | None = None, clip: bool = True) -> np.ndarray:
        """``Ĵ = (B-1)(B P̂ - 1)/(B p - 1)²`` for all pairs; clipped to [0, 1] if ``clip``.

        ``p`` is the keep probability the sketches were made with (``S.params``;
        1 for the non-private MinHash, where this is ``(B P̂ - 1)/(B - 1)``).  The
        diagonal (``other`` None) is 1; pairs with a user without a sketch
        are 0.  Cost: one product of ``n × KB`` one-hot matrices.
        """
        clip = check_clip(clip)
        S, T = pair_operands(S, other, self.name, self.width)
        matches = match_counts(S.values, T.values if other is not None else S.values, self.B)
        return self._from_matches(matches, S, T, other is None, clip)

    def _from_matches(self, matches: np.ndarray, S: Sketch, T: Sketch, same: bool,
                      clip: bool) -> np.ndarray:
        """``Ĵ`` of every pair from its match counts (in place), finished."""
        sims = jaccard_from_matches(matches, self.width, self.B, S.params)
        return finish_estimate(sims, S.valid, T.valid, same, 0.0, 1.0, clip)

    def estimate_paired(self, S: Sketch, other: Sketch, clip: bool = True) -> np.ndarray:
        """``Ĵ`` between ``S[i]`` and ``other[i]`` for each row ``i`` (1-D, O(nK))."""
        clip = check_clip(clip)
        S, T = paired_sketches(S, other, self.name, self.width)
        matches = np.sum(S.values == T.values, axis=1).astype(np.float64)
        sims = jaccard_from_matches(matches, self.width, self.B, S.params)
        return finish_paired(sims, S, T, 0.0, 1.0, clip)

    def __getstate__(self) -> dict:
        """Pickled without the prepared one-hot encoding (rebuilt where it is used)."""
        state = self.__dict__.copy()
        state.pop("_one_hot_of", None)
        return state

    def estimate_rows(self, S: Sketch, rows: np.ndarray) -> np.ndarray:
        """``estimate(S[rows], S)``, the same numbers, with the one-hot encoding of ``S``
        (``n × KB``) built once for the last ``S`` asked, not once per block."""
        S, _ = pair_operands(S, None, self.name, self.width)
        prepared = getattr(self, "_one_hot_of", None)
        if prepared is None or prepared[0] is not S:
            prepared = self._one_hot_of = (S, one_hot(S.values, self.B))
        block = S[rows]
        matches = match_counts(block.values, S.values, self.B, right=prepared[1])
        return self._from_matches(matches, block, S, False, True)

    def _check_buckets(self, buckets) -> tuple[np.ndarray, np.ndarray]:
        codes = np.asarray(buckets)
        if codes.dtype.kind not in "iu" or codes.ndim != 2 or codes.shape[1] != self.width:
            raise ValueError(f"buckets must be an integer array of shape (n, K={self.width}), "
                             f"got {codes.dtype} {codes.shape}")
        codes = codes.astype(np.int64)
        valid = codes[:, 0] >= 0 if codes.shape[0] else np.zeros(0, dtype=bool)
        if np.any(codes[valid] >= self.B) or np.any(codes[valid] < 0) \
                or np.any(codes[~valid] != -1):
            raise ValueError(f"buckets must be rows of codes in 0..B-1={self.B - 1} or rows "
                             f"of -1 (no sketch)")
        return codes, valid


class MinHash(_MinHashFamily):
    r"""Plain range-``B`` MinHash (no privacy): the baseline.

    ``Ĵ = (B P̂ - 1)/(B - 1)``, ``P̂`` the fraction of the ``K`` buckets that
    match (Li & König 2010; ``B = 2`` is 1-bit MinHash), clipped to ``[0, 1]``.

    Parameters
    ----------
    width : int, default 128
        Hash functions ``K``, ``>= 1`` (deprecated name: ``K``).
    B : int, default 2
        Buckets per hash, ``>= 2``.
    threshold : float, optional
        For [`similarity_matrix`][dprec.similarity.SketchBackend.similarity_matrix]: the
        set is the items rated ``>= threshold`` (default: all rated items).
    random_state : None, int, RandomState or Generator
        Draws the hash seed when ``hash_seed`` is None (no noise here).
    hash_seed : int, optional
        The public seed of the hash functions.
    """

    name = "minhash"
    private = False

    def __init__(self, width: int = 128, B: int = 2, threshold: float | None = None,
                 random_state: RandomStateLike = None, hash_seed: int | None = None,
                 **deprecated) -> None:
        given = self._current_names(deprecated, stacklevel=3, width=width)
        self._init_common(given["width"], B, threshold, hash_seed, random_state)

    def privacy(self) -> LedgerEntry:
        """No privacy: ``ε = inf`` (the exact hash values are released)."""
        return self._seeded(LedgerEntry("similarity", "none (non-private MinHash)", math.inf,
                                        0.0, Unit.SET_ITEM, Status.HOLDS, "user",
                                        "the exact MinHash buckets: no protection"))

    def privatize(self, buckets: np.ndarray, seed: int | None = None, keys=None) -> Sketch:
        """The buckets themselves (``seed`` and ``keys`` are unused)."""
        codes, valid = self._check_buckets(buckets)
        return Sketch(codes, valid, self.name, {"keep_probability": 1.0,
                                                "hash_seed": self._hash_seed_used()})


class _PrivateMinHash(_MinHashFamily):
    """The private MinHash backends' shared parameters (see [`RRMinHash`][])."""

    def __init__(self, width: int = 128, B: int = 2, *, epsilon: float, delta: float = 1e-4,
                 tau: int | None = None, set_difference: int = 1,
                 threshold: float | None = None, random_state: RandomStateLike = None,
                 small_users: str = "raise", hash_seed: int | None = None,
                 **deprecated) -> None:
        given = self._current_names(deprecated, stacklevel=3, width=width,
                                    set_difference=set_difference)
        self._init_common(given["width"], B, threshold, hash_seed, random_state)
        self._init_private(epsilon, delta, tau, given["set_difference"], small_users)

    def _check_sizes(self, sizes: np.ndarray) -> np.ndarray:
        """``τ`` (given, or the smallest non-empty set) and who is at least that large."""
        if self.tau is None:
            positive = sizes[sizes > 0]
            if not positive.size:
                raise ValueError("every set is empty: no tau can be taken from the data; "
                                 "give tau")
            tau = int(positive.min())
            warnings.warn(
                f"tau=None reads τ = {tau} from the data (the smallest set): that releases it "
                "and makes every user's noise depend on another user's data, so the (ε, δ) "
                "guarantee is void; give a public tau", PrivacyLeakWarning, stacklevel=3)
        else:
            tau = self.tau
        check_bound_arguments(self.width, self.B, self.set_difference, tau, self.delta)
        small = sizes < tau
        n_small = int(small.sum())
        if n_small and self.small_users == "raise":
            raise ValueError(
                f"{n_small} user(s) have fewer than tau={tau} items (smallest: "
                f"{int(sizes.min())}): their sketches would not get the stated (ε, δ) "
                "guarantee. Lower tau, or pass small_users='exclude' to release no sketch "
                "for them.")
        if n_small:
            warnings.warn(f"{n_small} user(s) with fewer than tau={tau} items (empty sets "
                          "included) are excluded: no sketch released, similarity 0",
                          stacklevel=3)
        self.tau_ = tau
        self._boundary = (~small & (sizes < tau + self.set_difference), tau)
        return ~small

    def _scope(self) -> tuple[tuple[tuple[np.ndarray, str], ...], tuple[str, ...]]:
        r"""The users at the τ boundary, outside the guarantee, and τ public as its condition.

        A set of $\tau \le |S_u| < \tau + \alpha$ items is sketched, but $\alpha$ items
        fewer take it below τ, where it is excluded (``small_users="exclude"``: no
        sketch, similarity 0 to everybody) or the whole release is refused
        (``"raise"``): an event of probability 1 on one dataset and 0 on its
        neighbour, which no finite ε bounds (a removal excluding a user at
        $|S_u| = \tau$ is seen with certainty).  Those users are outside the
        guarantee (ε = ∞ for them), as the users below τ are; the users of at
        least $\tau + \alpha$ items stay sketched on every neighbouring dataset,
        where the mechanism's argument holds.
        """
        boundary, tau = getattr(self, "_boundary", (None, None))
        if boundary is None:
            return (), ()
        alpha = self.set_difference
        fate = ("would exclude them (no sketch, similarity 0)" if self.small_users == "exclude"
                else "would make the release fail (small_users='raise' refuses it)")
        sets = (f"a set of exactly τ = {tau} items, which one item fewer" if alpha == 1 else
                f"a set of τ = {tau} to {tau + alpha - 1} items, which {alpha} items fewer")
        reason = f"at the τ boundary: {sets} {fate}"
        conditions = () if self.tau is None else (
            f"τ = {tau} is public, fixed before the data; the sketches' guarantee covers the "
            f"sets of at least τ + α = {tau + alpha} items",)
        return ((boundary, reason),), conditions

    def _tau(self) -> int:
        if self.tau_ is None:
            raise ValueError("tau is not known yet: give tau or call sketch() first "
                             "(tau=None takes the smallest set of the data)")
        return self.tau_

    def changed_coordinates(self) -> float:
        """``L`` ([`difference_bound`][]) at the current ``τ``."""
        return difference_bound(self.width, self.B, self.set_difference, self._tau(), self.delta)

    def _coordinates_epsilon(self, changed: float) -> float:  # pragma: no cover - abstract
        """ε of a release whose true buckets differ in ``changed`` coordinates."""
        raise NotImplementedError

    def _entry(self, mechanism: str) -> LedgerEntry:
        """The entry of one sketch release, ε from the mechanism's privacy map.

        Random hash functions (``hash_seed=None``): (ε, δ) for sets of at
        least τ, δ the probability over the hash functions that more than
        ``L`` coordinates differ.  A fixed ``hash_seed`` is known before the
        data, so neighbouring sets can be chosen to differ in all ``K``
        coordinates: the entry is then the worst case, ``δ = 0``.  Void if τ
        came from the data, or when ``random_state`` is an int
        (`SketchBackend._seeded`).
        """
        if self.tau_ is None:                      # tau=None and no sketch yet
            return LedgerEntry("similarity", mechanism, self.epsilon, self.delta,
                               Unit.SET_ITEM, Status.VOID, "user", "τ not known yet")
        scope = (f"{self.set_difference} item(s) of one user's set, sets of at least "
                 f"τ = {self.tau_} items")
        if self.hash_seed is not None:
            epsilon, delta = self._coordinates_epsilon(self.width), 0.0
            scope += (f"; hash functions fixed by hash_seed = {self.hash_seed}: worst case over "
                      f"neighbouring sets, all K = {self.width} coordinates may differ")
        else:
            L = self.changed_coordinates()
            epsilon, delta = self._coordinates_epsilon(L), self.delta
            scope += (f"; δ over the random hash functions (at most L = {L:.4g} coordinates "
                      "differ with probability 1 − δ)")
        if self.tau is None:
            return LedgerEntry("similarity", mechanism, epsilon, delta, Unit.SET_ITEM,
                               Status.VOID, "user",
                               f"{scope}; void: τ was read from the data (tau=None)")
        return self._seeded(LedgerEntry("similarity", mechanism, epsilon, delta, Unit.SET_ITEM,
                                        Status.HOLDS, "user", scope))


class RRMinHash(_PrivateMinHash):
    r"""RRMinHash: MinHash buckets through ``B``-ary randomised response (Aumüller et al. 2020).

    Each of the ``K`` buckets is kept with probability
    ``p = e^{ε'}/(e^{ε'} + B - 1)``, ``ε' = ε/⌈L⌉``, else replaced by one of
    the other ``B - 1`` values ([`dprec.mechanisms.randomized_response_from_log_uniform`][],
    exact at every ε).
    (ε, δ)-LDP for sets of at least ``τ`` items differing in ``α``: with
    probability ``1 - δ`` at most ``⌈L⌉`` coordinates differ
    ([`difference_bound`][]), each costing ``ε'``.

    Estimator (unbiased before clipping; from
    ``P[match] = 1/B + J (1-1/B) ((Bp-1)/(B-1))²``):

        Ĵ = (B - 1)(B P̂ - 1) / (B p - 1)²,   P̂ = #matches / K,

    clipped to ``[0, 1]``.

    Parameters
    ----------
    width : int, default 128
        Hash functions ``K``, ``>= 1`` (deprecated name: ``K``).
    B : int, default 2
        Buckets, ``>= 2``.
    epsilon : float
        ``ε > 0`` of one user's sketch.
    delta : float
        ``δ ∈ (0, 1)``: the probability that more than ``L`` coordinates differ.
    tau : int, optional
        Public lower bound on set sizes, ``>= set_difference``.  ``None``: the smallest
        non-empty set of the data given to [`sketch`][dprec.similarity.SketchBackend.sketch]
        (data-dependent: that minimum is revealed through the noise level, and the noise
        of every row then depends on it).
    set_difference : int, default 1
        ``α``: items in which neighbouring sets differ, ``>= 1`` (the unit of
        privacy; deprecated name: ``alpha``).
    threshold : float, optional
        For [`similarity_matrix`][dprec.similarity.SketchBackend.similarity_matrix]: sets
        of the items rated ``>= threshold`` (default: all rated items).
    random_state : None, int, RandomState or Generator
        The noise (and the hash seed when ``hash_seed`` is None).  ``None``:
        fresh entropy for every release; an int: seeded noise, reproducible,
        for experiments only.
    small_users : {"raise", "exclude"}
        What to do with sets smaller than ``τ`` (and empty sets).
    hash_seed : int, optional
        The public seed of the hash functions.  ``None`` (default) derives a
        fresh one from ``random_state`` (one-way); a fixed int reproduces the
        hash functions, and the δ then assumes data chosen independently of it.

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> X = sp.random(5, 300, density=0.2, format="csr", random_state=0)
    >>> rr = RRMinHash(64, 4, epsilon=4.0, delta=1e-4, tau=40, random_state=0)
    >>> rr.estimate(rr.sketch(X)).shape
    (5, 5)
    """

    name = "rr_minhash"

    def epsilon_prime(self) -> float:
        """``ε' = ε / ⌈L⌉``, one coordinate's budget (`coordinate_epsilon`: 1e18 at most)."""
        return coordinate_epsilon(self.epsilon, self.changed_coordinates())

    def keep_probability(self) -> float:
        """``p = e^{ε'}/(e^{ε'} + B - 1)``."""
        return randomized_response_keep_probability(self.B, self.epsilon_prime())

    def privacy(self) -> LedgerEntry:
        """``⌈L⌉`` coordinates of ``ε' = ε/⌈L⌉`` each (randomised response drawn exact at
        every ``ε'``), with probability 1 − δ."""
        return self._entry("randomized_response (RRMinHash)")

    def _coordinates_epsilon(self, changed: float) -> float:
        # ε' itself: the sampler draws from ln(1 - p) computed from ε', exact at every ε'
        # (the map from p would lose it once p rounds to 1)
        return math.ceil(changed) * self.epsilon_prime()

    def privatize(self, buckets: np.ndarray, seed: int, keys=None) -> Sketch:
        """Randomised response on the buckets (``-1`` rows: no sketch), row ``u`` from ``keys[u]``.

        The device-side step after hashing; ``sketch`` calls it with a seed
        drawn after the hash functions.  Uses the current ``τ``.
        """
        codes, valid = self._check_buckets(buckets)
        row_keys = check_keys(keys, codes.shape[0])
        eps = self.epsilon_prime()
        out = np.full_like(codes, -1)
        if valid.any():
            keys = row_keys[valid]
            out[valid] = randomized_response_from_log_uniform(
                codes[valid], self.B, eps, keyed_log_uniform(seed, keys, self.width),
                keyed_uniform(seed, keys, self.width, stream=1))
        params = {"keep_probability": self.keep_probability(), "epsilon_prime": eps,
                  "tau": self._tau(), "hash_seed": self._hash_seed_used()}
        return Sketch(out, valid, self.name, params)

class NoisyMinHash(_PrivateMinHash):
    r"""NoisyMinHash: MinHash buckets plus Laplace noise (Aumüller et al. 2020, §5).

    Reports ``a_j = g_j + Lap(s)`` with ``s = (B - 1) L / ε`` (ℓ1 sensitivity
    ``Δ = L (B - 1)``: at most ``L`` coordinates move, each by at most
    ``B - 1``), sampled by the lattice Laplace sampler
    ([`dprec.mechanisms.laplace_from_log_uniform`][], safe against the
    floating-point attack; ``s`` from [`dprec.mechanisms.laplace_scale`][],
    within a relative ``2**-20 ⌈L⌉`` of the formula).

    Estimator (unbiased before clipping; the lattice noise has variance
    ``2s²`` up to a relative ``1e-12``):

        D = Σ_j (a_j - b_j)²,   Ĵ = 1 - 6 (D/K - 4 s²) / (B² - 1),

    from ``E[D/K] = (1 - J)(B² - 1)/6 + 4 s²``; clipped to ``[0, 1]``.
    ``D`` for all pairs from the Gram matrix: ``D = ‖a‖² + ‖b‖² - 2⟨a, b⟩``.

    Parameters are those of [`RRMinHash`][].
    """

    name = "noisy_minhash"

    def sensitivity(self) -> float:
        """``Δ = L (B - 1)``, the ℓ1 sensitivity of the bucket vector."""
        return self.changed_coordinates() * (self.B - 1)

    def scale(self) -> float:
        """The Laplace scale ``s ≈ (B - 1) L / ε``."""
        L = self.changed_coordinates()
        return laplace_scale(self.epsilon, L * (self.B - 1), "lattice",
                             max_changed=math.ceil(L))

    def privacy(self) -> LedgerEntry:
        """Lattice Laplace of ℓ1 sensitivity ``L(B − 1)`` ([`dprec.mechanisms.laplace_epsilon`][]
        at the scale used is at most ε), with probability 1 − δ."""
        return self._entry("laplace (NoisyMinHash)")

    def _coordinates_epsilon(self, changed: float) -> float:
        return laplace_epsilon(self.scale(), changed * (self.B - 1), "lattice",
                               max_changed=math.ceil(changed))

    def privatize(self, buckets: np.ndarray, seed: int, keys=None) -> Sketch:
        """``bucket + Lap(s)`` per coordinate (``-1`` rows: none), row ``u`` from ``keys[u]``."""
        codes, valid = self._check_buckets(buckets)
        row_keys = check_keys(keys, codes.shape[0])
        out = np.zeros(codes.shape, dtype=np.float64)
        scale = self.scale()
        if valid.any():
            keys = row_keys[valid]
            uniforms = keyed_uniform(seed, keys, 2 * self.width).reshape(-1, self.width, 2)
            out[valid] = laplace_from_log_uniform(
                codes[valid].astype(np.float64), scale,
                keyed_log_uniform(seed, keys, self.width, stream=1), uniforms)
        return Sketch(out, valid, self.name, {"scale": scale, "tau": self._tau(),
                                              "hash_seed": self._hash_seed_used()})

    #: distances, not match counts: no one-hot encoding to prepare
    estimate_rows = SketchBackend.estimate_rows

    def estimate(self, S: Sketch, other: Sketch | None = None, clip: bool = True) -> np.ndarray:
        """``Ĵ = 1 - 6(D/K - 4s²)/(B² - 1)`` for all pairs; clipped to [0, 1] if ``clip``."""
        clip = check_clip(clip)
        S, T = pair_operands(S, other, self.name, self.width)
        D = squared_distances(S.values, T.values if other is not None else None)
        sims = jaccard_from_distances(D, self.width, self.B, S.params["scale"])
        return finish_estimate(sims, S.valid, T.valid, other is None, 0.0, 1.0, clip)

    def estimate_paired(self, S: Sketch, other: Sketch, clip: bool = True) -> np.ndarray:
        """``Ĵ`` between ``S[i]`` and ``other[i]`` for each row ``i`` (1-D, O(nK))."""
        clip = check_clip(clip)
        S, T = paired_sketches(S, other, self.name, self.width)
        D = np.sum((S.values - T.values) ** 2, axis=1)
        sims = jaccard_from_distances(D, self.width, self.B, S.params["scale"])
        return finish_paired(sims, S, T, 0.0, 1.0, clip)
