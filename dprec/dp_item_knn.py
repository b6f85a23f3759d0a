r"""Item-based kNN whose every answer is post-processing of one user-level ε-DP release.

McSherry & Mironov's construction ("Differentially Private Recommender
Systems", KDD 2009, §4), central model, one user (all of their ratings) as
the unit:

1. **global and item effects** ``μ``, ``b_i``: a :class:`~dprec.DPBaseline`
   release (``baseline_share`` of ε);
2. **item–item covariance** of each user's residuals
   ``e_ui = clip(r_ui − μ − b_i − b_u, −C, C)`` rounded to the grid ``h``,
   and the **co-rating weights**, each user weighted ``w_u``::

       Cov = Σ_u w_u e_u e_uᵀ,     W = Σ_u w_u 1_{I_u} 1_{I_u}ᵀ

   released (upper triangles) with the discrete Laplace mechanism, half of
   the remaining ε each;
3. the similarity ``s_ij = Ĉ_ij / √(Ĉ_ii Ĉ_jj)`` of the stabilised covariance
   ``Ĉ_ij = Cov_ij / (max(W_ij, 0) + β)``, and Surprise's ``KNNBaseline`` rule
   on it: ``r̂_ui = b_ui + Σ_j s_ij e_uj / Σ_j s_ij`` over the ``k`` items rated
   by ``u`` most similar to ``i`` (``s_ij > 0``).

**Exact integer release.** ``w_u = 2^{-a_u}`` with ``a_u = ⌈2 log₂ |I_u|⌉``
(so ``w_u |I_u|² ≤ 1``), and the residuals are multiples of ``h = 2^{-b}``:
every term ``w_u e_ui e_uj`` is then an integer multiple of
``g = h² 2^{-A}`` (``A = ⌈2 log₂ n_items⌉``, public), and the sums — computed
as one matrix product in float64 — are exact integers (below 2^53).  Adding
or removing one user changes the upper triangle of ``Cov / g`` by at most
``Σ_{i≤j ∈ I_u} w_u |e_ui e_uj| / g ≤ w_u C² |I_u|² / g ≤ C²/g`` in ℓ1
(``(|I_u|² + |I_u|)/2 ≤ |I_u|²``) and that of ``W 2^A`` by at most ``2^A``:
integer sensitivities, so discrete Laplace noise of scale ``Δ/ε`` makes each
release ε-DP exactly, with integer outputs (no floating-point attack).  The
three releases compose (basic composition) to ``epsilon``.

A prediction for ``u`` also uses ``u``'s own ratings (``b_u`` and ``e_uj``):
it is shown to ``u`` alone, and DP protects each user against what the
others see.  The item catalogue is taken as public.  With few users the
noise drowns the covariance (each entry is a sum of ``w_u ≈ 1/|I_u|²``
terms): the stabiliser ``β`` then pulls the similarities to 0 and the
model falls back to the baseline.

See ``docs/end_to_end.md`` for the construction, its accounting and its accuracy.
"""

from __future__ import annotations

import math

import numpy as np
from surprise import AlgoBase

from ._arrays import pattern_matrix, safe_divide
from ._ratings import RatingArrays
from ._rng import derive_generator, fit_entropy, validate_random_state
from ._surprise import inner_ids, predictions, raw_ids
from ._validation import check_epsilon, check_int, check_open_unit, check_real
from .dp_baseline import DPBaseline
from .ledger import LedgerEntry, PrivacyAccountant, Status, Unit
from .mechanisms import discrete_laplace, discrete_laplace_epsilon

__all__ = ["DPItemKNN"]


class DPItemKNN(AlgoBase):
    r"""Item-based kNN on a user-level ε-DP item–item covariance (McSherry & Mironov 2009).

    See the module docstring for the construction and the privacy argument;
    ``privacy_report()`` gives the ledger (ε per user, δ = 0, every output
    covered).

    Parameters
    ----------
    epsilon : float, default 1.0
        The privacy budget of the whole model, per user, ``> 0``.
    k : int, default 40
        Neighbours (items rated by the user) per prediction.
    baseline_share : float, default 0.3
        Share of ε for the global and item effects (in (0, 1)).
    clip : float, default 1.0
        ``C``: residuals are clipped to ``[−C, C]``.
    grid_bits : int, default 4
        Residuals are rounded to multiples of ``h = 2^{-grid_bits}``.
    shrinkage : float, optional
        ``β``, in units of the weights ``W``; default ten times the noise
        scale of ``W`` (a function of ε alone).
    random_state : None, int, RandomState or Generator
        ``None`` (default) draws fresh entropy at each fit; an int gives
        **seeded noise**, for experiments only.
    verbose : bool, default False

    Attributes
    ----------
    baseline_ : DPBaseline
        The fitted global and item effects (and each user's own ``b_u``).
    sim : ndarray of shape (n_items, n_items)
        The released similarities (post-processing: public once released).
    """

    def __init__(self, *, epsilon: float = 1.0, k: int = 40, baseline_share: float = 0.3,
                 clip: float = 1.0, grid_bits: int = 4, shrinkage: float | None = None,
                 random_state=None, verbose: bool = False) -> None:
        AlgoBase.__init__(self)
        self.epsilon = epsilon
        self.k = k
        self.baseline_share = baseline_share
        self.clip = clip
        self.grid_bits = grid_bits
        self.shrinkage = shrinkage
        self.random_state = random_state
        self.verbose = verbose

    def fit(self, trainset):
        """Release the effects and the covariance (spending ``epsilon``), then the similarities."""
        epsilon = check_epsilon(self.epsilon)
        k = check_int(self.k, "k", minimum=1)
        share = check_open_unit(self.baseline_share, "baseline_share")
        clip = check_real(self.clip, "clip", low=0.0, low_inclusive=False)
        bits = check_int(self.grid_bits, "grid_bits", minimum=0, maximum=12)
        beta = None if self.shrinkage is None else check_real(self.shrinkage, "shrinkage",
                                                               low=0.0)
        validate_random_state(self.random_state)
        AlgoBase.fit(self, trainset)
        entropy = fit_entropy(self.random_state)
        self.k_ = k

        self.baseline_ = DPBaseline(epsilon=share * epsilon, unit="user",
                                    random_state=derive_generator(entropy, "effects"))
        self.baseline_.fit(trainset)
        ratings = RatingArrays.from_trainset(trainset)
        residuals = self._residuals(ratings, clip, 2.0**-bits)

        n_items = ratings.n_items
        cov_int, w_int, sensitivity_cov, sensitivity_w = integer_sums(
            ratings.matrix, residuals, clip, bits)
        unit_cov, unit_w = clip**2 / sensitivity_cov, 1.0 / sensitivity_w
        upper = np.triu_indices(n_items)
        epsilon_each = (1.0 - share) * epsilon / 2.0
        t_cov, t_w = sensitivity_cov / epsilon_each, sensitivity_w / epsilon_each
        rng = derive_generator(entropy, "covariance")
        cov = unit_cov * self._symmetric(discrete_laplace(cov_int[upper], t_cov, rng), upper,
                                         n_items)
        co = unit_w * self._symmetric(discrete_laplace(w_int[upper], t_w, rng), upper, n_items)

        if beta is None:
            beta = 10.0 / epsilon_each            # ten noise scales of W (in W's units)
        denominator = np.maximum(co, 0.0) + beta
        stabilised = safe_divide(cov, denominator)    # denominator >= 0
        variance = np.maximum(np.diag(stabilised), 1e-12)
        self.sim = np.clip(stabilised / np.sqrt(np.outer(variance, variance)), -1.0, 1.0)
        self._ratings, self._residuals_by_rating = ratings, residuals
        self._accountant = self._ledger(trainset, {
            "covariance": discrete_laplace_epsilon(t_cov, sensitivity_cov),
            "co-rating weights": discrete_laplace_epsilon(t_w, sensitivity_w)})
        if self.verbose:
            print(f"DPItemKNN: released the item effects and the {n_items}-item covariance, "
                  f"ε = {epsilon:g} per user")
        return self

    def _residuals(self, ratings: RatingArrays, clip: float, step: float) -> np.ndarray:
        """``e_ui`` in ``ratings.matrix.data`` order: clipped, rounded to the grid."""
        base = self.baseline_
        users = np.repeat(np.arange(ratings.n_users), np.diff(ratings.matrix.indptr))
        raw = (ratings.matrix.data - base.mu_ - base.item_effects_[ratings.matrix.indices]
               - base.user_effects_[users])
        return np.round(np.clip(raw, -clip, clip) / step) * step

    @staticmethod
    def _symmetric(values: np.ndarray, upper, n: int) -> np.ndarray:
        out = np.zeros((n, n))
        out[upper] = values
        return out + np.triu(out, 1).T

    def _ledger(self, trainset, epsilons: dict) -> PrivacyAccountant:
        accountant = PrivacyAccountant(raw_ids(trainset),
                                       model=f"DPItemKNN(k={self.k_})")
        base = self.baseline_.privacy_report()
        indices = [accountant.register(entry) for entry in base.entries]
        note = ("discrete Laplace on integer sums, l1 sensitivity bounded per user by the "
                "weights 2^-ceil(2 log2 |I_u|); item catalogue public")
        indices += [accountant.register(LedgerEntry(
            component, "discrete laplace", eps, 0.0, Unit.USER, Status.HOLDS, "user", note))
            for component, eps in epsilons.items()]
        accountant.release_once(indices, ("predictions", "details", "neighbour lists",
                                          "similarities"),
                                "every answer is post-processing of the releases; a "
                                "prediction for u also uses u's own ratings, shown to u alone")
        return accountant

    def privacy_report(self) -> PrivacyAccountant:
        """The fitted model's privacy accountant."""
        if not hasattr(self, "_accountant"):
            raise AttributeError("this DPItemKNN is not fitted yet: call fit first")
        return self._accountant

    def default_prediction(self) -> float:
        """The released global mean (Surprise's default reads the raw data's)."""
        return self.baseline_.default_prediction()

    def estimate(self, u, i):
        """Estimate one rating from inner ids (Surprise's hook; as ``test`` does)."""
        if not (self.trainset.knows_item(i) and self.trainset.knows_user(u)):
            return self.baseline_.estimate(u, i)
        shift, actual_k = self._shifts(np.array([u]), np.array([i]))
        return self.baseline_.estimate(u, i) + shift[0], {"actual_k": int(actual_k[0])}

    def test(self, testset, verbose: bool = False):
        """Surprise's ``test``, all known pairs at once (the same numbers as ``predict``)."""
        uids, iids, r_uis, users, items = inner_ids(self.trainset, testset)
        base = self.baseline_
        est = np.full(len(users), base.mu_)
        est += np.where(users >= 0, base.user_effects_[np.maximum(users, 0)], 0.0)
        est += np.where(items >= 0, base.item_effects_[np.maximum(items, 0)], 0.0)
        known = np.flatnonzero((users >= 0) & (items >= 0))
        actual_k = np.full(len(users), -1)
        shift, actual_k[known] = self._shifts(users[known], items[known])
        est[known] += shift
        impossible = (users < 0) & (items < 0)
        est[impossible] = self.default_prediction()

        def details():
            for n, lost in zip(actual_k.tolist(), impossible.tolist()):
                if lost:
                    yield {"was_impossible": True, "reason": "User and item are unknown."}
                elif n < 0:
                    yield {"was_impossible": False}
                else:
                    yield {"actual_k": n, "was_impossible": False}

        return predictions(self.trainset, uids, iids, r_uis, est, details(), verbose)

    def _shifts(self, users: np.ndarray, items: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``Σ_j s_ij e_uj / Σ_j s_ij`` over the ``k`` items rated by ``u`` most similar to
        ``i`` (``s_ij > 0``; ties by item order) and how many there are, for known pairs.

        Queries are cut into blocks of similar numbers of rated items, each padded
        to a rectangle, so a block is one set of array operations.
        """
        indptr = self._ratings.matrix.indptr
        lengths = indptr[users + 1] - indptr[users]
        order = np.argsort(lengths, kind="stable")
        shift, actual_k = np.zeros(len(users)), np.zeros(len(users), dtype=np.int64)
        for block in np.array_split(order, max(1, len(order) // 2048)):
            if not len(block):
                continue
            width = max(int(lengths[block].max()), 1)
            offsets = np.arange(width)
            valid = offsets[None, :] < lengths[block][:, None]
            cells = np.where(valid, indptr[users[block]][:, None] + offsets[None, :], 0)
            rated = self._ratings.matrix.indices[cells]
            sims = np.where(valid, self.sim[items[block][:, None], rated], -np.inf)
            best = np.argsort(-sims, axis=1, kind="stable")[:, : self.k_]
            chosen = np.take_along_axis(sims, best, axis=1)
            counted = chosen > 0
            weights = np.where(counted, chosen, 0.0)
            residuals = self._residuals_by_rating[np.take_along_axis(cells, best, axis=1)]
            total = weights.sum(axis=1)
            shift[block] = safe_divide((weights * residuals).sum(axis=1), total)  # total >= 0
            actual_k[block] = counted.sum(axis=1)
        return shift, actual_k


def integer_sums(matrix, residuals: np.ndarray, clip: float,
                 bits: int) -> tuple[np.ndarray, np.ndarray, float, float]:
    r"""The covariance and co-rating sums as exact integers, and their ℓ1 sensitivities.

    ``Cov / g`` and ``W · 2^A`` (see the module docstring) for the users ×
    items ``matrix`` whose stored entries have the residuals ``residuals``
    (multiples of ``2^-bits`` in ``[−clip, clip]``), with every user weighted
    ``w_u = 2^{-⌈2 log₂ |I_u|⌉}``.  Returns ``(cov, w, Δ_cov, Δ_w)``: dense
    ``n_items × n_items`` arrays of integers and the largest change of the
    upper triangle of each (ℓ1) when one user is added or removed.
    """
    n_items = matrix.shape[1]
    top = math.ceil(2 * math.log2(max(n_items, 2)))           # A: public
    counts = np.diff(matrix.indptr)
    weights = 2.0 ** -np.ceil(2 * np.log2(np.maximum(counts, 1)))
    values = matrix.copy()
    values.data = residuals
    pattern = pattern_matrix(matrix)

    def gram(m) -> np.ndarray:        # Σ_u w_u x_u x_uᵀ, exact on the common dyadic grid
        dense = m.toarray()
        return (dense * weights[:, None]).T @ dense

    unit_cov = 2.0 ** (-2 * bits - top)                        # g
    return (gram(values) / unit_cov, gram(pattern) * 2.0**top, clip**2 / unit_cov,
            2.0**top)
