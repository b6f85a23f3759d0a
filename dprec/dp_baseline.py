r"""A differentially private baseline predictor, the yardstick of a private kNN.

``r̂_ui = μ + b_i + b_u`` (Koren's baseline, McSherry & Mironov's "global
effects", KDD 2009 §4.1), where ``μ`` and every ``b_i`` come from **one
differentially private release** and ``b_u`` from the user's own ratings:

1. *global effect*: the noisy sum ``S`` and count ``N`` of the (weighted)
   ratings centred at the middle ``c`` of the public rating scale, with
   ``μ = c + S̃ / max(Ñ, 1)``;
2. *item effects*: per item, the noisy centred sum ``S_i`` and count ``N_i``,
   with ``b_i = (S̃_i − Ñ_i (μ − c)) / (max(Ñ_i, 0) + β)`` (shrunk towards 0
   by the stabiliser ``β``);
3. *user effect* (not released): ``b_u = Σ_i (r_ui − μ − b_i) / (|I_u| + λ)``.

Each release is the Laplace mechanism (the lattice sampler of
:func:`dprec.mechanisms.laplace`, hardened against floating-point attacks) on
the vector ``(S / B, N)`` (``B = (r_max − r_min)/2``, the largest centred
rating), whose ℓ1 sensitivity is 2 for the unit:

* ``unit="rating"`` (one rating added or removed): every rating has weight
  1; a rating moves one sum by at most ``B`` and one count by 1;
* ``unit="user"`` (all of one user's ratings added or removed): user ``u``'s
  ratings have weight ``w_u = 1/|I_u|`` (McSherry & Mironov's per-user
  weighting), so their centred sums move by at most ``B`` in total and
  their counts by 1; the global release sums each user's mean.

The ε of the two releases add up (basic composition) to ``epsilon``
(``global_share`` of it for the global effect).  Everything the model
answers (predictions, ``details``, recommendations) is post-processing of
the releases, except ``b_u``: a prediction for ``u`` also uses ``u``'s own
ratings, which is allowed because it is shown to ``u`` alone — differential
privacy protects each user against what the *others* see.  The item
catalogue (the trainset's item ids) is treated as public, as MovieLens's is;
an item that exists only because someone rated it would reveal that rating.

See ``docs/end_to_end.md`` for the construction, its accounting and its accuracy.
"""

from __future__ import annotations

import numpy as np
from surprise import AlgoBase, PredictionImpossible

from ._arrays import safe_divide
from ._ratings import RatingArrays
from ._rng import derive_generator, fit_entropy, validate_random_state
from ._surprise import raw_ids
from ._validation import check_choice, check_epsilon, check_open_unit, check_real
from .ledger import LedgerEntry, PrivacyAccountant, Status, Unit
from .mechanisms import laplace, laplace_epsilon, laplace_scale

__all__ = ["DPBaseline"]

UNITS = {"rating": Unit.RATING, "user": Unit.USER}


class DPBaseline(AlgoBase):
    r"""Baseline predictor ``μ + b_i + b_u`` from one ε-differentially private release.

    See the module docstring for the construction and the privacy argument;
    ``privacy_report()`` gives the ledger (ε for the unit, δ = 0, every
    output covered by the release).

    Parameters
    ----------
    epsilon : float, default 1.0
        The privacy budget of the whole release, ``> 0``.
    unit : {"user", "rating"}, default "user"
        What two neighbouring datasets differ in: all of one user's ratings,
        or one rating.
    global_share : float, default 0.1
        The share of ``epsilon`` spent on ``μ`` (in (0, 1)); the rest goes to
        the item effects.
    item_shrinkage : float, optional
        ``β`` in the item effects (``>= 0``), in units of the (weighted)
        counts; default ten times the Laplace scale of the noisy counts (a
        function of ε alone: 22 at ε = 1), so that noisy items shrink towards 0.
    user_shrinkage : float, default 10.0
        ``λ`` in the user effect (``>= 0``).
    random_state : None, int, RandomState or Generator
        ``None`` (default) draws fresh entropy at each fit; an int gives
        **seeded noise**, reproducible, for experiments only.
    verbose : bool, default False

    Attributes
    ----------
    mu_ : float
        The released global mean.
    item_effects_ : ndarray of shape (n_items,)
        The released ``b_i`` (inner item ids).
    user_effects_ : ndarray of shape (n_users,)
        Each user's ``b_u`` from their own ratings (never released to others).

    References
    ----------
    F. McSherry and I. Mironov, "Differentially Private Recommender Systems:
    Building Privacy into the Netflix Prize Contenders", KDD 2009.
    """

    def __init__(self, *, epsilon: float = 1.0, unit: str = "user", global_share: float = 0.1,
                 item_shrinkage: float | None = None, user_shrinkage: float = 10.0,
                 random_state=None, verbose: bool = False) -> None:
        AlgoBase.__init__(self)
        self.epsilon = epsilon
        self.unit = unit
        self.global_share = global_share
        self.item_shrinkage = item_shrinkage
        self.user_shrinkage = user_shrinkage
        self.random_state = random_state
        self.verbose = verbose

    def _check_params(self) -> tuple[float, str, float, float, float]:
        epsilon = check_epsilon(self.epsilon)
        unit = check_choice(self.unit, "unit", tuple(UNITS))
        share = check_open_unit(self.global_share, "global_share")
        beta = None if self.item_shrinkage is None else \
            check_real(self.item_shrinkage, "item_shrinkage", low=0.0)
        lam = check_real(self.user_shrinkage, "user_shrinkage", low=0.0)
        validate_random_state(self.random_state)
        return epsilon, unit, share, beta, lam

    def fit(self, trainset):
        """Release ``μ`` and the item effects (spending ``epsilon``) and compute ``b_u``."""
        epsilon, unit, share, beta, lam = self._check_params()
        AlgoBase.fit(self, trainset)
        rng = derive_generator(fit_entropy(self.random_state), "dp-baseline")
        ratings = RatingArrays.from_trainset(trainset)
        low, high = trainset.rating_scale
        centre, half_range = (low + high) / 2.0, (high - low) / 2.0
        true_global, true_items = effect_sums(ratings.matrix, unit, (low, high))
        n_items = ratings.n_items

        # 1. global effect
        epsilon_global = share * epsilon
        scale_global = laplace_scale(epsilon_global, 2.0, max_changed=2)
        noisy_sum, noisy_count = laplace(true_global, scale_global, rng)
        self.mu_ = float(np.clip(centre + half_range * noisy_sum / max(noisy_count, 1.0),
                                 low, high))

        # 2. item effects
        epsilon_items = epsilon - epsilon_global
        changed = 2 if unit == "rating" else 2 * n_items
        scale_items = laplace_scale(epsilon_items, 2.0, max_changed=changed)
        noisy = laplace(true_items, scale_items, rng)
        noisy_sums, noisy_counts = half_range * noisy[:n_items], noisy[n_items:]
        if beta is None:
            beta = 10.0 * scale_items   # ten noise scales: a public function of ε alone
        self.item_effects_ = stabilised_effects(noisy_sums, noisy_counts, self.mu_ - centre,
                                                beta, high - low)

        # 3. user effects, from each user's own ratings
        self.user_effects_ = own_effects(ratings.matrix, self.mu_ + self.item_effects_, lam)

        self._accountant = self._ledger(trainset, unit, {"global effect": (scale_global, 2),
                                                         "item effects": (scale_items, changed)})
        if self.verbose:
            print(f"DPBaseline: released μ and {n_items} item effects, ε = "
                  f"{epsilon:g} per {UNITS[unit]}")
        return self

    @staticmethod
    def _ledger(trainset, unit: str, releases: dict) -> PrivacyAccountant:
        """The accountant: one entry per release (``component -> (scale, max_changed)``),
        each charged once to every user; every output covered by both."""
        accountant = PrivacyAccountant(raw_ids(trainset),
                                       model=f"DPBaseline(unit={unit!r})")
        note = ("Laplace (lattice sampler) on (centred sums / B, counts), l1 sensitivity 2 "
                f"per {UNITS[unit]}" + (" (weights 1/|I_u|)" if unit == "user" else "")
                + "; item catalogue public")
        entries = [accountant.register(LedgerEntry(
            component, "laplace (lattice)", laplace_epsilon(scale, 2.0, max_changed=m), 0.0,
            UNITS[unit], Status.HOLDS, "user", note))
            for component, (scale, m) in releases.items()]
        accountant.release_once(entries, ("predictions", "details", "recommendations"),
                                "every answer is post-processing of the two releases; a "
                                "prediction for u also uses u's own ratings (b_u), shown to "
                                "u alone")
        return accountant

    def privacy_report(self) -> PrivacyAccountant:
        """The fitted model's privacy accountant."""
        if not hasattr(self, "_accountant"):
            raise AttributeError("this DPBaseline is not fitted yet: call fit first")
        return self._accountant

    def default_prediction(self) -> float:
        """The released global mean ``μ`` (Surprise's default reads the raw data's)."""
        if not hasattr(self, "mu_"):
            raise AttributeError("this DPBaseline is not fitted yet: call fit first")
        return self.mu_

    def estimate(self, u, i):
        """Estimate one rating from inner ids (Surprise's hook; as ``test`` does)."""
        known_user, known_item = self.trainset.knows_user(u), self.trainset.knows_item(i)
        if not (known_user or known_item):
            raise PredictionImpossible("User and item are unknown.")
        est = self.mu_
        if known_user:
            est += self.user_effects_[u]
        if known_item:
            est += self.item_effects_[i]
        return est


def effect_sums(matrix, unit: str, rating_scale: tuple[float, float]) -> tuple[np.ndarray, ...]:
    r"""The true vectors the two releases add noise to, each of ℓ1 sensitivity 2 per unit.

    ``(global, items)``: ``global = (Σ w (r − c) / B, Σ w)`` and ``items`` the
    per-item ``Σ_u w_u (r_ui − c) / B`` followed by the per-item ``Σ_u w_u``,
    for the users × items ``matrix``, ratings clipped to the public
    ``rating_scale`` (centre ``c``, half-range ``B``), ``w = 1`` per rating
    (``unit="rating"``) or ``1/|I_u|`` (``unit="user"``).
    """
    low, high = rating_scale
    centre, half_range = (low + high) / 2.0, (high - low) / 2.0
    counts = np.diff(matrix.indptr)
    users = np.repeat(np.arange(matrix.shape[0]), counts)
    centred = (np.clip(matrix.data, low, high) - centre) / half_range
    weights = np.ones(len(users)) if unit == "rating" else 1.0 / counts[users]
    n_items = matrix.shape[1]
    return (np.array([np.dot(weights, centred), weights.sum()]),
            np.concatenate([np.bincount(matrix.indices, weights * centred, n_items),
                            np.bincount(matrix.indices, weights, n_items)]))


def stabilised_effects(sums: np.ndarray, counts: np.ndarray, offset: float, beta: float,
                       bound: float) -> np.ndarray:
    """Item effects ``(S_i − N_i · offset) / (max(N_i, 0) + β)`` from noisy sums and counts
    (0 where the denominator is 0), clipped to ``[−bound, bound]``: post-processing."""
    denominator = np.maximum(counts, 0.0) + beta
    effects = safe_divide(sums - counts * offset, denominator)     # denominator >= 0
    return np.clip(effects, -bound, bound)


def own_effects(matrix, base: np.ndarray, shrinkage: float) -> np.ndarray:
    """Each user's ``b_u = Σ_i (r_ui − base_i) / (|I_u| + λ)`` from their own ratings
    (the rows of ``matrix``; ``base`` per item, e.g. ``μ + b_i``)."""
    counts = np.diff(matrix.indptr)
    users = np.repeat(np.arange(matrix.shape[0]), counts)
    residuals = matrix.data - base[matrix.indices]
    return np.bincount(users, residuals, matrix.shape[0]) / (counts + shrinkage)
