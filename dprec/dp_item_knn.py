r"""Item-based kNN whose every answer is post-processing of one user-level DP release.

McSherry & Mironov's construction ("Differentially Private Recommender
Systems", KDD 2009, §4), central model, one user (all of their ratings) as
the unit:

1. **global and item effects** $\mu$, $b_i$: a [`DPBaseline`][dprec.DPBaseline]
   release (`baseline_share` of the budget), of the same `mechanism`;
2. **item–item covariance** of each user's residuals
   $r_{ui} - \mu - b_i - b_u$, *rounded* to the grid $h = 2^{-b}$ and *then
   clipped* to $[-C_h, C_h]$, $C_h = \lfloor C/h \rfloor h$ the largest grid
   point $\le C$ (so every residual $e_{ui}$ is a multiple of $h$ with
   $|e_{ui}| \le C_h \le C$), and the **co-rating weights**, each user weighted $w_u$,
   $\mathrm{Cov} = \sum_u w_u e_u e_u^\top$ and $W = \sum_u w_u 1_{I_u} 1_{I_u}^\top$,
   released (upper triangles), half of the remaining budget each;
3. the similarity $s_{ij} = \hat C_{ij} / \sqrt{\hat C_{ii} \hat C_{jj}}$ of the stabilised
   covariance $\hat C_{ij} = \mathrm{Cov}_{ij} / (\max(W_{ij}, 0) + \beta)$, set to 0 where
   the noisy $W_{ij}$ is not above a threshold pure noise passes with probability
   $1/(10 n_{\text{items}})$ (about 0.1 false pair per item; the answer then falls back
   to the baseline's), and Surprise's `KNNBaseline` rule on it, its weights shrunk by
   their noise: $\hat r_{ui} = b_{ui} + \sum_j s_{ij} e_{uj} / (\sum_j s_{ij} + \kappa_{ui})$
   over the `k` items rated by $u$ most similar to $i$ ($s_{ij} > 0$; ties by the items'
   sorted rank), with $\kappa_{ui} = 2 \sqrt{\sum_j \tau_{ij}^2}$ and $\tau_{ij} = C_h^2
   \sigma_W / ((\max(W_{ij}, 0) + \beta) \sqrt{\hat C_{ii} \hat C_{jj}})$ the noise of
   $s_{ij}$ ($\sigma_W$ the public noise sd of $W$; that of $\mathrm{Cov}$ is $C_h^2 \sigma_W$):
   a few weak, noisy neighbours move the answer little, and without noise
   $\kappa_{ui} = 0$.

**Exact integer release.**  $w_u = 2^{-a_u}$ and the residuals are $e_{ui} = k_{ui} h$
with integers $|k_{ui}| \le m = \lfloor C/h \rfloor$: every term $w_u e_{ui} e_{uj}$ is
then an integer multiple of $g = h^2 2^{-A}$ ($A$ public, below), and the sums — sparse
matrix products in float64 — are exact integers (checked: $n_{\text{users}} m^2 2^A <
2^{53}$).  (Clipping *before* rounding, as this model once did, lets a rounded residual
exceed $C$, and $C^2/g$ is then no bound.)

* `mechanism="gaussian"` (default): $a_u = \lceil \log_2 |I_u| \rceil$ (so
  $w_u |I_u| \le 1$), $A = \lceil \log_2 n_{\text{items}} \rceil$.  One user's term
  $w_u k_u k_u^\top 2^A$ has Frobenius norm $w_u \lVert k_u \rVert^2 2^A \le w_u |I_u| m^2
  2^A \le m^2 2^A$, so the upper triangle of $\mathrm{Cov}/g$ moves by at most $m^2 2^A$
  in ℓ2, and that of $W 2^A$ by at most $2^A$.  Discrete Gaussian noise of scale
  $\Delta/\sqrt{2\rho}$ makes each release $\rho$-zCDP (Canonne, Kamath & Steinke
  2020); the baseline's, the covariance's and the weights' $\rho$ add up to the
  $\rho$ whose $(\varepsilon, \delta)$ by `dp-accounting` is (`epsilon`, `delta`), and
  the ledger has one entry for the three.
* `mechanism="laplace"`: $a_u = \lceil 2 \log_2 |I_u| \rceil$ (so $w_u |I_u|^2 \le 1$),
  $A = \lceil 2 \log_2 n_{\text{items}} \rceil$; one user moves the upper triangle of
  $\mathrm{Cov}/g$ by at most $\sum_{i \le j \in I_u} w_u |k_{ui} k_{uj}| 2^A \le m^2 2^A$
  in ℓ1 and that of $W 2^A$ by at most $2^A$: discrete Laplace noise of scale
  $\Delta/\varepsilon$ makes each release ε-DP exactly; the three releases compose
  (basic composition) to `epsilon`, δ = 0.

Both give integer outputs: no floating-point attack applies.
A prediction for $u$ also uses $u$'s own ratings ($b_u$ and $e_{uj}$): it is
shown to $u$ alone, and DP protects each user against what the others see.
Everything is computed in the sorted order of the user and item lists
([`DPBaseline`][dprec.DPBaseline]'s canonical space: `users=` / `items=`
catalogues, or the lists read from the data, with the conditions and
out-of-scope users the report then states), so that nothing released follows
the data's order.  With few users the noise drowns the covariance (each entry is a sum
of $w_u \approx 1/|I_u|$ terms, $1/|I_u|^2$ with Laplace): its pairs are then dropped and
the model answers with its baseline.

With `similarity="factors"` the similarities are instead the cosines of the item
factors of a [`DPALS`][dprec.DPALS] release made with the whole budget ($d$ numbers
per item instead of $n_{\text{items}}$ pairs), and that release's ledger entry is the
model's.

See [End-to-end models](../end_to_end.md) for the construction, its accounting and its accuracy.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from statistics import NormalDist

import numpy as np
import pandas as pd
import scipy.sparse as sp
from surprise import AlgoBase

from ._arrays import pattern_matrix, safe_divide
from ._rng import derive_generator, fit_entropy, is_seeded
from ._validation import check_choice, check_epsilon, check_int, check_open_unit, check_real
from .dp_als import DPALS
from .dp_baseline import DPBaseline, check_mechanism_delta, stated_epsilon
from .ledger import LedgerEntry, PrivacyAccountant, Status, Unit
from .mechanisms import (
    discrete_gaussian,
    discrete_laplace,
    discrete_laplace_epsilon,
    zcdp_rho,
)
from .mechanisms.exact_laplace import MAX_T
from .noisy_effects import SIGNAL
from .rating_space import ListedModel, RatingSpace

__all__ = ["DPItemKNN", "default_share", "gaussian_sums", "grid_levels", "grid_residuals",
           "integer_sums", "laplace_sum_epsilons", "noisy_sums", "sum_sensitivities"]

MECHANISMS = ("gaussian", "laplace")
SIMILARITIES = ("covariance", "factors")
#: the Gaussian covariance is released when n_users / n_items · sqrt(ρ) reaches this
#: (`default_share`)
COVARIANCE_SNR = 3.0
#: the baseline's share of the budget where the covariance is released
BASELINE_SHARE = 0.3
#: the ledger's notes: the integer releases' argument in brief, and the answers'
NOTES = {
    "gaussian": "discrete Gaussian on the baseline's release and on integer sums (residuals "
                "rounded, then clipped), l2 sensitivity bounded per user by the weights "
                "2^-ceil(log2 |I_u|); the three releases composed in zCDP, (epsilon, delta) "
                "by dp-accounting",
    "sums": "discrete Laplace on integer sums (residuals rounded, then clipped), l1 "
            "sensitivity bounded per user by the weights 2^-ceil(2 log2 |I_u|)",
    "answers": "every answer is post-processing of the releases; a prediction for u also "
               "uses u's own ratings, shown to u alone",
}
#: what the model releases, all post-processing of the releases
OUTPUTS = ("predictions", "details", "neighbour lists", "similarities", "item effects")


class DPItemKNN(ListedModel, AlgoBase):
    r"""Item-based kNN on a user-level ε-DP item–item covariance (McSherry & Mironov 2009).

    See the module docstring for the construction, the privacy argument and
    its conditions; `privacy_report()` gives the ledger (ε per user, δ = 0,
    every output covered).

    Parameters
    ----------
    epsilon : float, default 1.0
        The privacy budget of the whole model, per user, `> 0`.
    k : int, default 40
        Neighbours (items rated by the user) per prediction.
    mechanism : {"gaussian", "laplace"}, default "gaussian"
        The noise of all three releases (see the module docstring).
    delta : float, optional
        δ of the Gaussian mechanism, in (0, 1), default `1e-5`; the Laplace mechanism
        has δ = 0.
    baseline_share : float, optional
        Share of the budget (of ρ with the Gaussian, of ε with Laplace) for the global
        and item effects (in (0, 1)); default the public rule `default_share`: 0.3, or
        with the Gaussian and too few users per item for the budget, no covariance at all.
    clip : float, default 1.0
        $C$: residuals are rounded to the grid, then clipped to the largest
        grid point $C_h \le C$ (`> 0`, at least the grid step $2^{-b}$).
    grid_bits : int, default 4
        $b$: residuals are rounded to multiples of $h = 2^{-b}$ (0 to 12).
    shrinkage : float, optional
        $\beta$, in units of the weights $W$; default ten noise scales of $W$ (its noise's
        standard deviation over $\sqrt 2$: a function of the budget alone).
    similarity : {"covariance", "factors"}, default "covariance"
        The released covariance (above), or the cosine of the item factors of a
        [`DPALS`][dprec.DPALS] release with the whole budget (Gaussian only; its
        `baseline_share` this model's, default its own rule): $s_{ij} = \cos(v_i, v_j)$,
        0 for an item whose factor is 0 (below its noise), and $\tau_{ij} = \nu_i /
        \lVert v_i \rVert + \nu_j / \lVert v_j \rVert$ in $\kappa_{ui}$, $\nu_i$ the factor's
        released noise (`DPALS.factor_noise_`).  Every similarity is post-processing of
        that release; `shrinkage` is then unused.
    users, items : sequence of raw ids, optional
        Public catalogues, as in [`DPBaseline`][dprec.DPBaseline] (validated
        at `fit`; ratings outside them raise `ValueError`).
    random_state : None, int, RandomState or Generator
        `None` (default) draws fresh entropy at each fit; an int gives
        **seeded noise**, for experiments only (the report's entries are void).
    verbose : bool, default False
    budget : (float, float), optional
        A per-user `(ε, δ)` budget ([`PrivateModel`][dprec.private_model.PrivateModel]):
        a fit whose releases would spend more is refused before any noise is drawn
        (`BudgetExceededError`, a `ValueError`), the model left as it was.

    Attributes
    ----------
    baseline_ : DPBaseline
        The fitted global and item effects (and each user's own $b_u$).
    mu_ : float
        The released global mean (the baseline's).
    sim : pandas.DataFrame
        The released similarities, raw item ids (sorted) on both axes.  It was
        an array in Surprise's inner-id order, which follows the data's order.
    """

    _similar = "items"     # get_neighbors: the released sim is between items

    def __init__(self, *, epsilon: float = 1.0, k: int = 40, mechanism: str = "gaussian",
                 delta: float | None = None, baseline_share: float | None = None,
                 clip: float = 1.0,
                 grid_bits: int = 4, shrinkage: float | None = None,
                 similarity: str = "covariance",
                 users: Iterable | None = None, items: Iterable | None = None,
                 random_state=None, verbose: bool = False,
                 budget: tuple[float, float] | None = None) -> None:
        AlgoBase.__init__(self)
        self.epsilon = epsilon
        self.k = k
        self.similarity = similarity
        self.mechanism = mechanism
        self.delta = delta
        self.baseline_share = baseline_share
        self.clip = clip
        self.grid_bits = grid_bits
        self.shrinkage = shrinkage
        self.users = users
        self.items = items
        self.random_state = random_state
        self.verbose = verbose
        self.budget = budget

    def fit(self, trainset):
        """Release the effects and the covariance (spending `epsilon`), then the similarities;
        refused past the `budget`, before any noise."""
        epsilon = check_epsilon(self.epsilon)
        k = check_int(self.k, "k", minimum=1)
        mechanism = check_choice(self.mechanism, "mechanism", MECHANISMS)
        delta = check_mechanism_delta(mechanism, self.delta)
        share = None if self.baseline_share is None else check_open_unit(
            self.baseline_share, "baseline_share")
        clip = check_real(self.clip, "clip", low=0.0, low_inclusive=False)
        bits = check_int(self.grid_bits, "grid_bits", minimum=0, maximum=12)
        grid_levels(clip, bits)
        beta = None if self.shrinkage is None else check_real(self.shrinkage, "shrinkage",
                                                               low=0.0)
        similarity = check_choice(self.similarity, "similarity", SIMILARITIES)
        if similarity == "factors" and mechanism != "gaussian":
            raise ValueError("similarity='factors' needs mechanism='gaussian' (DPALS's "
                             "release is a discrete Gaussian)")
        rho = zcdp_rho(epsilon, delta) if mechanism == "gaussian" else None
        if similarity == "factors":                # DPALS's one entry (the same call)
            self._refuse_past_budget([(stated_epsilon(rho, delta, epsilon), delta)], Unit.USER)
            entropy, seeded = fit_entropy(self.random_state), is_seeded(self.random_state)
            self._fit_factors(trainset, k, epsilon, share, (clip, bits), entropy, seeded)
            return self
        lists = None if share is not None and rho is not None else RatingSpace.build(
            trainset, self.users, self.items)
        if share is None:
            share = default_share(len(lists.users), len(lists.items), rho)
        baseline = DPBaseline(epsilon=share * epsilon, unit="user", mechanism=mechanism,
                              delta=self.delta, users=self.users, items=self.items)
        spent, cost = self._plan(trainset, baseline, lists, (share, epsilon, delta, rho),
                                 (clip, bits))
        self._refuse_past_budget(cost, Unit.USER)
        entropy, seeded = fit_entropy(self.random_state), is_seeded(self.random_state)
        # the baseline's noise comes from this model's entropy (its own random_state is unused)
        baseline.fit_part(trainset, derive_generator(entropy, "effects").bytes(16), seeded,
                          rho=None if rho is None else share * rho)
        space = baseline.rating_space          # the model is changed only once all is released
        matrix = space.matrix
        residuals = grid_residuals(baseline.residuals(), clip, bits)

        n_items = matrix.shape[1]
        if share == 1.0:                       # the rule releases no covariance
            self._fit_baseline_only(trainset, k, baseline, residuals, seeded, delta, spent)
            return self
        norm = "l2" if mechanism == "gaussian" else "l1"
        cov_int, w_int, sensitivity_cov, sensitivity_w = integer_sums(matrix, residuals,
                                                                      clip, bits, norm)
        rng = derive_generator(entropy, "covariance")
        if mechanism == "gaussian":
            rho_each = (1.0 - share) * rho / 2.0
            (cov, co), sd_w = gaussian_sums((cov_int, w_int), (sensitivity_cov, sensitivity_w),
                                            rho_each, rng)
            threshold = sd_w * NormalDist().inv_cdf(1.0 - 0.1 / n_items)
        else:
            epsilon_each = (1.0 - share) * epsilon / 2.0
            (cov, co), _ = noisy_sums((cov_int, w_int), (sensitivity_cov, sensitivity_w),
                                      epsilon_each, rng)
            sd_w = math.sqrt(2.0) / epsilon_each
            threshold = math.log(5.0 * n_items) / epsilon_each
        cov *= 2.0 ** (-2 * bits) / sensitivity_w         # g = h² 2^-A: back to Cov
        co /= sensitivity_w                                # 2^-A: back to W

        if beta is None:
            beta = 10.0 * sd_w / math.sqrt(2.0)      # ten noise scales of W (in W's units)
        stabilised = safe_divide(cov, np.maximum(co, 0.0) + beta)    # denominator >= 0
        variance = np.maximum(np.diag(stabilised), 1e-12)
        AlgoBase.fit(self, trainset)
        self.k_, self.baseline_, self._space = k, baseline, space
        scale = np.sqrt(np.outer(variance, variance))
        sim = np.clip(stabilised / scale, -1.0, 1.0)
        # each similarity's noise sd (Cov's noise is C_h² times W's), for the weights' κ
        levels = grid_levels(clip, bits) * 2.0**-bits
        support = (np.maximum(co, 0.0) + beta) * scale        # > 0 wherever a pair counts
        self._sim_noise = safe_divide(np.full_like(support, levels**2 * sd_w),
                                      support).astype(np.float32)
        # a pair counts only where its co-rating weight is above the noise: a threshold
        # that pure noise passes with probability 1/(10 n_items) (0.1 false pair per item)
        self._sim = np.where(co > threshold, sim, 0.0)
        self._sim.flags.writeable = False
        labels = space.items.labels()
        self.sim = pd.DataFrame(self._sim, index=labels, columns=labels, copy=False)
        self._residuals_by_rating = residuals
        self._accountant = self._ledger(seeded, mechanism, delta, spent)
        if self.verbose:
            print(f"DPItemKNN: released the item effects and the {n_items}-item covariance, "
                  f"ε = {epsilon:g}" + (f", δ = {delta:g}" if delta else "") + " per user")
        return self

    def _plan(self, trainset, baseline: DPBaseline, lists: RatingSpace | None,
              shares: tuple[float, float, float, float | None],
              grid: tuple[float, int]) -> tuple[dict, list]:
        """Before any noise: the model's own ledger entries `{component: ε}` and what every
        release spends, `(ε, δ)` in the ledger's order — public functions of the parameters
        and, with Laplace, of the number of items (`lists`).  `shares` is `(baseline_share,
        ε, δ, ρ)`, `ρ` None with Laplace; `grid` is `(clip, grid_bits)`.

        Raises
        ------
        ValueError
            If the Laplace noise of the covariance is beyond the sampler (`MAX_T`).
        """
        share, epsilon, delta, rho = shares
        if rho is not None:        # the releases composed in zCDP: one entry
            component = ("effects (no covariance: too few users for this budget)"
                         if share == 1.0 else "effects, covariance and co-rating weights")
            # zCDP composes by adding ρ: share·ρ for the effects and (1 − share)·ρ/2 for
            # each of the covariance and the co-rating weights, ρ in all
            spent = {component: stated_epsilon(rho, delta, epsilon)}
            return spent, [(spent[component], delta)]
        n_items = len(lists.items)
        epsilon_each = (1.0 - share) * epsilon / 2.0
        sensitivities = sum_sensitivities(n_items, *grid, "l1")
        if sensitivities[0] / epsilon_each > MAX_T:
            log_scale = math.log2(sensitivities[0] / epsilon_each)
            raise ValueError(f"grid_bits = {grid[1]} with epsilon = {epsilon:g} needs discrete "
                             f"Laplace noise of scale 2^{log_scale:.1f} integer steps, "
                             "above the sampler's 2^42: give fewer grid_bits (a coarser "
                             "grid) or a larger epsilon")
        spent = dict(zip(("covariance", "co-rating weights"),
                         laplace_sum_epsilons(sensitivities, epsilon_each)))
        effects = baseline.release_entries(trainset.rating_scale, n_items)
        return spent, [entry[2:] for entry in effects] + [(eps, 0.0) for eps in spent.values()]

    def _fit_baseline_only(self, trainset, k: int, baseline: DPBaseline,
                           residuals: np.ndarray, seeded: bool, delta: float,
                           spent: dict) -> None:
        """The fitted model when the rule releases no covariance: the baseline with all of
        the budget, every similarity 0 (every answer is the baseline's)."""
        AlgoBase.fit(self, trainset)
        self.k_, self.baseline_, self._space = k, baseline, baseline.rating_space
        n_items = len(self._space.items)
        self._sim = np.zeros((n_items, n_items))
        self._sim.flags.writeable = False
        self._sim_noise = np.zeros((n_items, n_items), dtype=np.float32)
        labels = self._space.items.labels()
        self.sim = pd.DataFrame(self._sim, index=labels, columns=labels, copy=False)
        self._residuals_by_rating = residuals
        self._accountant = self._ledger(seeded, "gaussian", delta, spent)
        if self.verbose:
            print(f"DPItemKNN: released the item effects only ({len(self._space.users)} users "
                  f"are too few for the covariance at this budget), ε = {self.epsilon:g}, "
                  f"δ = {delta:g} per user")

    def _fit_factors(self, trainset, k: int, epsilon: float, share: float | None,
                     grid: tuple[float, int], entropy: bytes, seeded: bool) -> None:
        """The fitted model on the cosine of a [`DPALS`][dprec.DPALS] release's item
        factors (`similarity="factors"`): that release is the whole model's."""
        als = DPALS(epsilon=epsilon, delta=self.delta, baseline_share=share, users=self.users,
                    items=self.items).fit_part(trainset,
                                               derive_generator(entropy, "factors").bytes(16),
                                               seeded)
        factors = als.item_factors_.to_numpy()
        norms = np.linalg.norm(factors, axis=1)
        unit = safe_divide(factors, norms[:, None])               # 0 where v_i = 0
        relative = safe_divide(als.factor_noise_.to_numpy(), norms)
        AlgoBase.fit(self, trainset)
        self.k_, self.baseline_, self._space = k, als.baseline_, als.baseline_.rating_space
        self.factors_ = als
        self._sim = np.clip(unit @ unit.T, -1.0, 1.0)
        self._sim.flags.writeable = False
        self._sim_noise = (relative[:, None] + relative[None, :]).astype(np.float32)
        labels = self._space.items.labels()
        self.sim = pd.DataFrame(self._sim, index=labels, columns=labels, copy=False)
        self._residuals_by_rating = grid_residuals(als.baseline_.residuals(), *grid)
        self._accountant = self._ledger(seeded, "factors", 0.0, {})
        if self.verbose:
            print(f"DPItemKNN: the cosine of the DPALS item factors, ε = {epsilon:g} per user")

    def _ledger(self, seeded: bool, mechanism: str, delta: float,
                epsilons: dict) -> PrivacyAccountant:
        """The accountant, charged once to every listed user, with the lists' scope: with
        the Gaussian mechanism one entry (the three releases composed in zCDP), with
        Laplace the baseline's entries (void alike when seeded) and the two integer
        releases; on factors (`mechanism="factors"`) the DPALS release's entry."""
        accountant = self._open_accountant(self._space.users.ids, f"DPItemKNN(k={self.k_})",
                                           seeded)
        if mechanism == "gaussian":
            indices = [accountant.register(LedgerEntry(
                component, "discrete gaussian (zCDP)", eps, delta, Unit.USER, Status.HOLDS,
                "user", NOTES["gaussian"])) for component, eps in epsilons.items()]
        elif mechanism == "factors":           # the DPALS release's entry (void alike)
            indices = [accountant.register(entry)
                       for entry in self.factors_.privacy_report().entries]
        else:
            indices = [accountant.register(entry)
                       for entry in self.baseline_.privacy_report().entries]
            indices += [accountant.register(LedgerEntry(
                component, "discrete laplace", eps, 0.0, Unit.USER, Status.HOLDS, "user",
                NOTES["sums"])) for component, eps in epsilons.items()]
        self._release_once(accountant, indices, OUTPUTS, NOTES["answers"], Unit.USER)
        return accountant

    @property
    def mu_(self) -> float:
        """The released global mean (the baseline's)."""
        return self.baseline_.mu_

    def _answers(self, users: np.ndarray, items: np.ndarray) -> tuple[np.ndarray, list]:
        """Estimates and `details` for positions in the lists (`-1`: unknown): the
        baseline's, plus the neighbourhood shift where both are listed."""
        est, details = self.baseline_._answers(users, items)
        known = np.flatnonzero((users >= 0) & (items >= 0))
        shift, actual_k = self._shifts(users[known], items[known])
        est[known] += shift
        for n, count in zip(known.tolist(), actual_k.tolist()):
            details[n] = {"actual_k": count, "was_impossible": False}
        return est, details

    def _shifts(self, users: np.ndarray, items: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        r"""$\sum_j s_{ij} e_{uj} / \sum_j s_{ij}$ over the `k` items rated by $u$ most similar
        to $i$ ($s_{ij} > 0$) and how many there are, for listed pairs (positions).

        A user's rated items are stored in the sorted order of the item list, and the
        stable sort keeps that order among equal similarities: ties go to the lower
        sorted rank, never to Surprise's inner ids.  Queries are cut into blocks of
        similar numbers of rated items, each padded to a rectangle, so a block is one
        set of array operations.
        """
        indptr = self._space.matrix.indptr
        lengths = indptr[users + 1] - indptr[users]
        order = np.argsort(lengths)          # any order: each query is answered alone
        shift, actual_k = np.zeros(len(users)), np.zeros(len(users), dtype=np.int64)
        for block in np.array_split(order, max(1, len(order) // 2048)):
            if not len(block):
                continue
            width = max(int(lengths[block].max()), 1)
            offsets = np.arange(width)
            valid = offsets[None, :] < lengths[block][:, None]
            cells = np.where(valid, indptr[users[block]][:, None] + offsets[None, :], 0)
            rated = self._space.matrix.indices[cells]
            sims = np.where(valid, self._sim[items[block][:, None], rated], -np.inf)
            best = np.argsort(-sims, axis=1, kind="stable")[:, : self.k_]
            chosen = np.take_along_axis(sims, best, axis=1)
            counted = chosen > 0
            weights = np.where(counted, chosen, 0.0)
            residuals = self._residuals_by_rating[np.take_along_axis(cells, best, axis=1)]
            noise = self._sim_noise[items[block][:, None], np.take_along_axis(rated, best, axis=1)]
            kappa = SIGNAL * np.sqrt((np.where(counted, noise, 0.0) ** 2).sum(axis=1))
            total = weights.sum(axis=1) + kappa
            shift[block] = safe_divide((weights * residuals).sum(axis=1), total)  # total >= 0
            actual_k[block] = counted.sum(axis=1)
        return shift, actual_k


def default_share(n_users: int, n_items: int, rho: float | None) -> float:
    r"""The public rule for `baseline_share`: 0.3 with Laplace (`rho` None); with the
    Gaussian, 0.3 when $(n_{\text{users}} / n_{\text{items}}) \sqrt\rho \ge$
    `COVARIANCE_SNR`, else 1 (no covariance release: the answers are the baseline's, with
    all of the budget).

    A pair's co-rating weight grows with the users per item while its noise scales as
    $1/\sqrt\rho$.  The threshold was measured on dprec's synthetic MovieLens-shaped data
    (`dprec scaling`: the covariance paid at 20,000 × 3,706 and 69,878 × 10,677 at ε = 5,
    ratios 4.0 and 4.8; it cost at ε ≤ 2, ratios up to 2.1), never on the data being
    protected.  The lists are public under the guarantee (catalogues `users=` and
    `items=`; without them it holds for neighbouring datasets with the same lists).
    """
    if rho is None:
        return BASELINE_SHARE
    return BASELINE_SHARE if n_users / max(n_items, 1) * math.sqrt(rho) >= COVARIANCE_SNR \
        else 1.0


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
    r"""The ε each release of [`noisy_sums`][dprec.dp_item_knn.noisy_sums] spends, from the
    mechanism's privacy map (`discrete_laplace_epsilon(Δ/ε, Δ)`, that is ε): public
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
        If $C < h$ (every residual would round to 0), naming `clip` and `grid_bits`.
    """
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


def integer_sums(matrix, residuals: np.ndarray, clip: float, bits: int,
                 norm: str) -> tuple[np.ndarray, np.ndarray, float, float]:
    r"""The covariance and co-rating sums as exact integers, and their `norm` sensitivities.

    $\mathrm{Cov}/g$ and $W 2^A$ (see the module docstring) for the users × items
    `matrix` whose stored entries have the residuals `residuals` (multiples of
    $2^{-b}$ in $[-m h, m h]$, as [`grid_residuals`][dprec.dp_item_knn.grid_residuals]
    makes them), with every user weighted $w_u = 2^{-\lceil 2 \log_2 |I_u| \rceil}$.
    Returns `(cov, w, Δ_cov, Δ_w)`: dense $n_{\text{items}} \times n_{\text{items}}$ arrays of
    integers and the largest change of the upper triangle of each (in `norm`, `"l1"` or
    `"l2"`) when one user is added or removed, $m^2 2^A$ and $2^A$ (`sum_sensitivities`).

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
    values = matrix.copy()
    values.data = scaled
    pattern = pattern_matrix(matrix)

    def gram(m) -> np.ndarray:        # Σ_u w_u x_u x_uᵀ, exact on the common dyadic grid
        return (m.T @ sp.diags(weights) @ m).toarray()

    return gram(values) * scale, gram(pattern) * scale, sensitivity_cov, scale


def sum_sensitivities(n_items: int, clip: float, bits: int,
                      norm: str) -> tuple[float, float]:
    r"""$m^2 2^A$ and $2^A$: how far one user moves the upper triangles of
    [`integer_sums`][dprec.dp_item_knn.integer_sums]' $\mathrm{Cov}/g$ and $W 2^A$ (in ℓ1,
    or in ℓ2 with `norm="l2"`), with $A = \lceil 2 \log_2 n_{\text{items}} \rceil$ (ℓ1) or
    $\lceil \log_2 n_{\text{items}} \rceil$ (ℓ2): public functions of the number of items
    and the grid, known before any sum."""
    levels = grid_levels(clip, bits)
    power = {"l1": 2, "l2": 1}[norm]
    scale = 2.0 ** math.ceil(power * math.log2(max(n_items, 2)))       # 2^A: public
    return float(levels**2) * scale, scale
