"""PNCF: private neighbour collaborative filtering (Zhu et al., 2013/2014)."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from .. import mechanisms
from .._rng import QueryNoise
from .._validation import check_epsilon, check_real
from .base import (
    Selection,
    Selector,
    mask_to_positions,
    normalised_scores,
    partition_count,
    positions_to_mask,
    top_by_key,
)


class PNCF(Selector):
    r"""Truncated exponential-mechanism selection with perturbed weights.

    With ``sim_k`` the k-th largest similarity, ``n`` the number of candidates
    and ``RS`` the querying user's recommendation-aware sensitivity:

    .. math::
        \lambda = \min\Big(sim_k,\ \frac{4k\,RS}{\varepsilon}
                  \ln\frac{k(n-k)}{\rho}\Big)

    candidates with ``sim ≥ sim_k + λ`` are always taken, those with
    ``sim < sim_k − λ`` never, and the rest are drawn with weights
    ``exp(ε·sim / (4k·RS))`` until ``k`` are chosen (one Gumbel top-k per
    query).  The prediction then uses the perturbed similarities
    ``sim + Lap(b)``, ``b ≈ 2RS/ε`` (lattice Laplace,
    :func:`dprec.mechanisms.laplace_from_uniform`, with ``b`` from
    :func:`dprec.mechanisms.laplace_scale` so that it spends at most ε/2;
    :meth:`noise_scale`).

    Privacy (as in public reimplementations, ALGORITHMS.md §3 **choice**):
    per neighbour selection, ε/2 for the ``k`` exponential draws and ε/2 for
    the Laplace noise on each chosen similarity, relative to one rating of
    a candidate with score sensitivity ``RS``.  Note Lu & Shen's objection
    (ComSIS 2015, §2.2): the truncation gives some candidates probability 0,
    which pure ε-DP does not allow; PNCF's guarantee holds only with
    probability ``1 − ρ`` (Zhu et al., Thm 3.1), so the ledger records the
    selection with ``δ = ρ`` (as the MinHash sketches record their
    "with probability ``1 − δ``" bound).

    Parameters
    ----------
    epsilon : float, default 1.0
        Budget per neighbour selection (``> 0``).
    rho : float, default 0.1
        Truncation failure probability, ``0 < ρ < 1``.
    """

    name = "pncf"
    needs_sensitivity = True

    def __init__(self, epsilon: float = 1.0, rho: float = 0.1) -> None:
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
        valid = np.arange(sims.shape[1])[None, :] < n_valid[:, None]
        sim_k, lam = self.truncation(sims, n_valid, k, sensitivity)
        sure = valid & (sims >= (sim_k + lam)[:, None])
        sure &= np.cumsum(sure, axis=1) <= k
        band = valid & ~sure & (sims >= (sim_k - lam)[:, None])
        need = np.minimum(n_valid, k) - sure.sum(axis=1)
        keys = mechanisms.gumbel_keys_from_uniform(
            normalised_scores(sims, valid, sensitivity), self.epsilon / (4 * k),
            noise.uniform(sims.shape[1]), mask=band)
        drawn = top_by_key(keys, need, k)
        positions = mask_to_positions(sure | positions_to_mask(drawn, sims.shape[1]), k)
        beta = partition_count((sure | band).sum(axis=1), k).astype(np.int64)
        return Selection(positions, np.maximum(beta, 1), self._perturb(sims, positions,
                                                                       sensitivity, noise))

    def noise_scale(self, sensitivity: float) -> float:
        """Laplace scale of the perturbed similarities of a user with sensitivity ``RS``.

        ``≈ 2RS/ε``: the smallest scale at which the lattice sampler spends at
        most ``ε/2`` on a similarity of sensitivity ``RS``
        (:func:`dprec.mechanisms.laplace_scale`; ``2RS/ε`` itself would spend
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

    def record_privacy(self, ledger, k: int) -> None:
        """ε/2 for the selection, with ``δ = ρ`` (the truncation's failure probability:
        the guarantee holds with probability ``1 − ρ``), and ε/2 for the perturbation."""
        unit = "one rating of a candidate neighbour (score sensitivity RS), per neighbour set"
        ledger.record("selector", "exponential (PNCF selection, k draws, truncated)",
                      self.epsilon / 2, delta=self.rho, unit=unit)
        ledger.record("selector", "laplace (PNCF perturbed similarities)", self.epsilon / 2,
                      unit=unit)


@lru_cache(maxsize=4096)
def _laplace_scale(epsilon: float, sensitivity: float) -> float:
    """:func:`dprec.mechanisms.laplace_scale` of the lattice sampler, cached (a model
    asks for the same few sensitivities in every block of queries)."""
    return mechanisms.laplace_scale(epsilon, sensitivity, "lattice")
