"""PNCF: private neighbour collaborative filtering (Zhu et al., 2013/2014).

See [Neighbour selectors](../selectors.md) for the formulas and the paper.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from .. import mechanisms
from ..accountant.ledger import LedgerEntry, Status, Unit
from ..utils._rng import QueryNoise
from ..utils._validation import check_epsilon, check_real
from .base import (
    Selection,
    Selector,
    gumbel_keys,
    mask_to_positions,
    normalised_coefficient,
    normalised_scores,
    positions_to_mask,
    reachable_partitions,
    top_by_key,
    valid_candidates,
)


class PNCF(Selector):
    r"""Truncated exponential-mechanism selection with perturbed weights.

    With ``sim_k`` the k-th largest similarity, ``n`` the number of candidates
    and ``RS`` the querying user's recommendation-aware sensitivity:

    $$
    \lambda = \min\Big(sim_k,\ \frac{4k\,RS}{\varepsilon}
              \ln\frac{k(n-k)}{\rho}\Big)
    $$

    candidates with ``sim ≥ sim_k + λ`` are always taken, those with
    ``sim < sim_k − λ`` never, and the rest are drawn with weights
    ``exp(ε·sim / (4k·RS))`` until ``k`` are chosen (one Gumbel top-k per
    query).  The prediction then uses the perturbed similarities
    ``sim + Lap(b)``, ``b ≈ 2RS/ε`` (lattice Laplace,
    [`dprec.mechanisms.laplace_from_uniform`][], with ``b`` from
    [`dprec.mechanisms.laplace_scale`][] so that it spends at most ε/2;
    [`noise_scale`][]).

    Privacy, **as published** (reproduced, not guaranteed; the split of the
    budget follows public reimplementations): per neighbour selection, ε/2
    for the ``k`` exponential draws (with ``δ = ρ``, the paper's truncation
    failure probability, Zhu et al., Thm 3.1) and ε/2 for the Laplace noise
    on each chosen similarity, relative to one rating of a candidate with
    score sensitivity ``RS``.  No (ε, δ) holds for what a model releases:
    the truncation gives candidates below ``sim_k − λ`` probability 0 and
    those above ``sim_k + λ`` probability 1, so a small change of one score
    flips a certain event into an unlikely one (``δ`` near 1, Lu & Shen's
    objection, ComSIS 2015, §2.2); ``RS`` and hence the Laplace scale are
    computed from the raw data; and predictions average the neighbours' raw
    ratings.  `AS_PUBLISHED_SELECTION` and
    `AS_PUBLISHED_PERTURBATION` state it.

    Parameters
    ----------
    epsilon : float, default 1.0
        Budget per neighbour selection (``> 0``).
    rho : float, default 0.1
        Truncation failure probability, ``0 < ρ < 1``.
    """

    name = "pncf"
    needs_sensitivity = True

    def __init__(self, *, epsilon: float = 1.0, rho: float = 0.1) -> None:
        self.epsilon = check_epsilon(epsilon)
        self.rho = check_real(rho, "rho", low=0.0, high=1.0, low_inclusive=False,
                              high_inclusive=False)

    def truncation(self, sims: np.ndarray, n_valid: np.ndarray, k: int,
                   sensitivity: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(sim_k, λ)`` per row (λ clipped at 0)."""
        n_valid = np.asarray(n_valid)
        sim_k = sims[np.arange(len(sims)), np.clip(np.minimum(n_valid, k) - 1, 0, None)]
        spread = np.log(k * np.maximum(n_valid - k, 1) / self.rho)
        lam = np.minimum(sim_k, 4.0 * k * sensitivity / self.epsilon * spread)
        return sim_k, np.maximum(lam, 0.0)

    def select(self, sims: np.ndarray, n_valid: np.ndarray, k: int, noise: QueryNoise,
               sensitivity: np.ndarray | None = None) -> Selection:
        n_valid = np.asarray(n_valid)
        if sims.shape[1] == 0:           # not one candidate: every slot empty, as elsewhere
            return Selection(np.full((len(sims), k), -1), reachable_partitions(n_valid, k),
                             np.zeros((len(sims), k)))
        valid = valid_candidates(n_valid, sims.shape[1])
        sim_k, lam = self.truncation(sims, n_valid, k, sensitivity)
        sure = valid & (sims >= (sim_k + lam)[:, None])
        sure &= np.cumsum(sure, axis=1) <= k
        band = valid & ~sure & (sims >= (sim_k - lam)[:, None])
        need = np.minimum(n_valid, k) - sure.sum(axis=1)
        keys = gumbel_keys(normalised_scores(sims, valid, sensitivity),
                           normalised_coefficient(self.epsilon, k), noise, mask=band)
        drawn = top_by_key(keys, need, k)
        positions = mask_to_positions(sure | positions_to_mask(drawn, sims.shape[1]), k)
        beta = reachable_partitions((sure | band).sum(axis=1), k)
        return Selection(positions, beta, self._perturb(sims, positions, sensitivity, noise))

    def weight_entries(self, entries: list[LedgerEntry]) -> list[int]:
        """The Laplace perturbation (the second entry of [`privacy`][]) produces the
        weights, ``sim + Lap(b)``: they are covered by its claim (as published)."""
        return [1] if len(entries) == 2 else []

    def noise_scale(self, sensitivity: float) -> float:
        """Laplace scale of the perturbed similarities of a user with sensitivity ``RS``.

        ``≈ 2RS/ε``: the smallest scale at which the lattice sampler spends at
        most ``ε/2`` on a similarity of sensitivity ``RS``
        ([`dprec.mechanisms.laplace_scale`][]; ``2RS/ε`` itself would spend
        up to a relative ``2**-20`` more when ``RS`` is not on the lattice grid).
        """
        return _laplace_scale(self.epsilon / 2, float(sensitivity))

    def _perturb(self, sims, positions, sensitivity, noise) -> np.ndarray:
        """``sim + Lap(noise_scale(RS))`` for every chosen neighbour (0 in empty slots)."""
        k = positions.shape[1]
        chosen = np.take_along_axis(sims, np.maximum(positions, 0), axis=1)
        chosen = np.where(positions >= 0, chosen, 0.0)
        uniforms = noise.uniform(3 * k, stream=1).reshape(len(sims), k, 3)
        out = np.empty_like(chosen)
        distinct, group = np.unique(np.asarray(sensitivity, dtype=np.float64),
                                    return_inverse=True)
        for g, rs in enumerate(distinct):
            rows = group == g
            out[rows] = mechanisms.laplace_from_uniform(chosen[rows], self.noise_scale(rs),
                                                        uniforms[rows])
        return np.where(positions >= 0, out, 0.0)

    def privacy(self, k: int, sensitivity: np.ndarray | None = None) -> list[LedgerEntry]:
        """The paper's claims: the selection (``k`` draws of coefficient ``ε/(4k)`` on
        scores ``sim/RS``, [`dprec.mechanisms.exponential_epsilon`][], δ = ρ) per
        neighbour set, and the perturbation of each chosen similarity
        ([`dprec.mechanisms.laplace_epsilon`][] of [`noise_scale`][] at the
        largest ε over the users' ``RS``)."""
        selection = mechanisms.exponential_epsilon(normalised_coefficient(self.epsilon, k),
                                                   sensitivity=1.0, k=k)
        rs = np.unique(np.asarray(sensitivity if sensitivity is not None else [1.0], float))
        perturbation = max(mechanisms.laplace_epsilon(self.noise_scale(r), float(r), "lattice")
                           for r in rs)
        given = f"ε/2 of epsilon = {self.epsilon:g}, "
        return [
            LedgerEntry("selector", "exponential (PNCF selection, k draws, truncated)",
                        selection, self.rho, Unit.RATING, Status.AS_PUBLISHED, "candidates",
                        given + "per neighbour set (the other half: the perturbed "
                        "similarities); " + AS_PUBLISHED_SELECTION),
            LedgerEntry("selector", "laplace (PNCF perturbed similarities)", perturbation, 0.0,
                        Unit.RATING, Status.AS_PUBLISHED, "chosen",
                        given + "per chosen similarity (the other half: the selection); "
                        + AS_PUBLISHED_PERTURBATION),
        ]


#: Why PNCF's selection claim is not a guarantee.
AS_PUBLISHED_SELECTION = (
    "the paper's claim, not a guarantee: no (ε, δ) holds; the truncation gives probability 0 "
    "below sim_k − λ and 1 above sim_k + λ, so a small score change flips a certain event "
    "(δ = ρ is not a failure probability of the guarantee); RS is computed from the raw data")
#: Why PNCF's perturbation claim is not a guarantee.
AS_PUBLISHED_PERTURBATION = (
    "the paper's claim, not a guarantee: the Laplace scale 2·RS(u)/ε depends on RS, computed "
    "from the raw data unprivatised (one rating can move RS from near 0 to 1)")


@lru_cache(maxsize=4096)
def _laplace_scale(epsilon: float, sensitivity: float) -> float:
    """[`dprec.mechanisms.laplace_scale`][] of the lattice sampler, cached (a model
    asks for the same few sensitivities in every block of queries)."""
    return mechanisms.laplace_scale(epsilon, sensitivity, "lattice", name="epsilon / 2")
