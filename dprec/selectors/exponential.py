"""PNCF's selection corrected so that it carries a guarantee: k exponential draws, nothing else.

See [Neighbour selectors](../selectors.md) for the formulas and the paper.
"""

from __future__ import annotations

import numpy as np

from .. import mechanisms
from ..accountant.ledger import LedgerEntry, Status, Unit
from ..utils._rng import QueryNoise
from ..utils._validation import check_epsilon, check_real
from .base import (
    Selection,
    Selector,
    gumbel_keys,
    reachable_partitions,
    top_by_key,
    valid_candidates,
)


class CorrectedPNCF(Selector):
    r"""PNCF's neighbour selection (Zhu et al., 2013/2014), corrected: ``k`` exponential
    draws over every candidate with a data-independent sensitivity.

    The ``k`` neighbours are drawn without replacement with weights

    $$
    \exp\Big(\frac{\varepsilon}{2k\,\Delta}\, sim(u, v)\Big)
    $$

    (one Gumbel top-k per query with exact tails, `gumbel_keys`),
    where ``Δ = score_range`` is the width of the similarity's range, fixed
    before the data (2 covers every similarity in ``[−1, 1]``; 1 suffices for
    msd and for cosine on non-negative ratings).  The prediction weighs the
    chosen neighbours by their similarities.  What PNCF *as published* adds
    and this variant drops: the truncation at ``sim_k ± λ`` (certain and
    impossible events, no δ covers them), the sensitivity ``RS`` computed
    from the raw data, and the Laplace perturbation scaled by it.

    **Guarantee** (``Unit.RATING``, ε per neighbour set): for a query of
    user ``u`` whose candidates are fixed in advance (the user neighbourhood:
    every other user), one rating of another user ``v`` changes one score,
    ``sim(u, v)``, and by at most ``Δ``, when ``sim(u, ·)`` depends on ``u``'s
    and ``v``'s ratings alone (cosine, msd, pearson; not ``pearson_baseline``,
    whose baselines are global fits).  Each draw of the exponential mechanism
    with coefficient ``c`` is then ``2cΔ``-DP, and ``k`` draws ``2kcΔ = ε``
    (McSherry & Talwar 2007; Durfee & Rogers 2019 for the Gumbel top-k).  A
    user's ε over a model's answers is the sum over every neighbour set they
    were a candidate of (the accountant composes it).

    **Not covered**: the predictions, which average the chosen neighbours'
    raw ratings; the neighbours' weights ``kneighbors`` returns beside their ids,
    which are their exact similarities (the draws release the ids only; the
    model's report declares the weights); the item neighbourhood, where one rating decides whether a
    user is a candidate at all (PrivateKNN's ledger then marks the entry
    void); a candidate with a single rating, whom its removal takes out of the
    trainset and so out of every list (never chosen on one dataset, chosen with
    positive probability on the other): PrivateKNN's report puts them outside
    the guarantee (`dprec.knn.accounting.declare_candidates`).  With two
    ratings or more, one removal leaves the candidate in place.

    Parameters
    ----------
    epsilon : float, default 1.0
        Budget per neighbour set (``> 0``).
    score_range : float, default 2.0
        ``Δ``, the width of the similarity's range (``> 0``); PrivateKNN
        checks it against its similarity.
    """

    name = "pncf_corrected"

    def __init__(self, *, epsilon: float = 1.0, score_range: float = 2.0) -> None:
        self.epsilon = check_epsilon(epsilon)
        self.score_range = check_real(score_range, "score_range", low=0.0, low_inclusive=False)

    def coefficient(self, k: int) -> float:
        """``c = ε / (2kΔ)``."""
        return mechanisms.exponential_coefficient(self.epsilon, self.score_range, k)

    def select(self, sims: np.ndarray, n_valid: np.ndarray, k: int, noise: QueryNoise,
               sensitivity: np.ndarray | None = None) -> Selection:
        n_valid = np.asarray(n_valid)
        valid = valid_candidates(n_valid, sims.shape[1])
        keys = gumbel_keys(np.where(valid, sims, 0.0), self.coefficient(k), noise, mask=valid)
        positions = top_by_key(keys, np.minimum(n_valid, k), k)
        return Selection(positions, reachable_partitions(n_valid, k))

    def privacy(self, k: int, sensitivity: np.ndarray | None = None) -> list[LedgerEntry]:
        """One neighbour set: ``k`` draws of coefficient ``ε/(2kΔ)`` on scores of
        sensitivity ``Δ`` ([`dprec.mechanisms.exponential_epsilon`][])."""
        epsilon = mechanisms.exponential_epsilon(self.coefficient(k), self.score_range, k)
        return [LedgerEntry(
            "selector", "exponential (corrected PNCF, k Gumbel draws)", epsilon, 0.0,
            Unit.RATING, Status.HOLDS, "candidates",
            f"one rating of a candidate moves its score by at most Δ = {self.score_range:g} "
            "and no other score; candidates fixed in advance (user neighbourhood), "
            "similarities of each pair's own ratings")]
