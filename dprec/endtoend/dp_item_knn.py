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
from surprise import AlgoBase

from ..accountant.ledger import LedgerEntry, PrivacyAccountant, Status, Unit
from ..mechanisms import zcdp_rho
from ..mechanisms.discrete_gaussian import stated_epsilon
from ..utils._arrays import safe_divide
from ..utils._memory import check_memory
from ..utils._rng import FitNoise
from ..utils._threads import thread_count
from ..utils._validation import check_choice, check_epsilon, check_int, check_open_unit, check_real
from .covariance_release import (  # noqa: F401  (re-exported: their home was this module)
    check_laplace_scale,
    gaussian_sums,
    grid_levels,
    grid_residuals,
    integer_sums,
    laplace_sum_epsilons,
    noisy_sums,
    sum_sensitivities,
)
from .dp_als import DPALS
from .dp_baseline import (
    MAX_ITEMS_PER_USER,
    SELECTION_SHARE,
    DPBaseline,
    SelectionBudget,
    check_mechanism_delta,
)
from .effects_release import check_effects_rho
from .noisy_effects import SIGNAL
from .pairwise import FactorCosines, PairSums
from .partitions import PARTITION_RATINGS, check_partitioning
from .rating_space import ListedModel, RatingSpace, surprise_details

__all__ = ["DPItemKNN", "covariance_bytes", "default_share", "gaussian_sums", "grid_levels",
           "grid_residuals", "integer_sums", "laplace_sum_epsilons", "noisy_sums",
           "sum_sensitivities"]

MECHANISMS = ("gaussian", "laplace")
SIMILARITIES = ("covariance", "factors")
#: Peak bytes per item pair of a covariance fit after the sums (their noise, the
#: similarities and their noise's scale: 86-102 measured at 2,000-4,000 items)
PEAK_BYTES_PER_PAIR = 100
#: ... and while the sums run: the total and its sampler, plus 16 per partial sum in
#: flight (one per thread; 111, 175, 303 measured with 4, 8, 16 threads)
SUM_BYTES_PER_PAIR, PARTIAL_BYTES_PER_PAIR = 48, 16
#: the Gaussian covariance is released when n_users / n_items · sqrt(ρ) reaches this
#: (`default_share`)
COVARIANCE_SNR = 3.0
#: the baseline's share of the budget where the covariance is released
BASELINE_SHARE = 0.3
#: the fewest listed items the covariance is released for (`default_share`): on MovieLens
#: 100k at ε = 5 the baseline's share lists 149, where the covariance cost 0.04 RMSE
MIN_ITEMS = 500
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
OUTPUTS = ("predictions", "details", "recommendations", "neighbour lists", "similarities",
           "item effects")


def covariance_bytes(n_items: int, n_ratings: int, backend: str,
                     n_partitions: int | None) -> float:
    """The peak memory of a covariance fit over `n_items` items and `n_ratings` ratings:
    the larger of its two phases, the sums (one partial per thread at once; on Dask, the
    calling process adds one at a time) and what follows them."""
    parts = n_partitions or max(1, -(-n_ratings // PARTITION_RATINGS))
    in_flight = 1 if backend == "dask" else min(thread_count(), parts)
    per_pair = max(PEAK_BYTES_PER_PAIR, SUM_BYTES_PER_PAIR + PARTIAL_BYTES_PER_PAIR * in_flight)
    return per_pair * float(n_items) ** 2


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
        The model's δ, in (0, 1), default `1e-5`: without `items=` half of it (all with
        Laplace) is the partition selection's; with Laplace and a public item
        catalogue δ = 0.
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
        at `fit`; ratings outside them raise `ValueError`); without `items=` the
        baseline's release chooses the items (private partition selection) and the
        covariance is over those.
    max_items_per_user : int, default 1000
        Without `items=`: the most items one user brings into that selection.
    random_state : None, int, RandomState or Generator
        `None` (default) draws fresh entropy at each fit; an int gives
        **seeded noise**, for experiments only (the report's entries are void).
    verbose : bool, default False
    budget : (float, float), optional
        A per-user `(ε, δ)` budget ([`PrivateModel`][dprec.accountant.private_model.PrivateModel]):
        a fit whose releases would spend more is refused before any noise is drawn
        (`BudgetExceededError`, a `ValueError`), the model left as it was.
    backend : {"threads", "dask"}, default "threads"
        Where the sums over users are computed (the baseline's, the covariance and
        co-rating weights, or with `similarity="factors"` [`DPALS`][dprec.DPALS]'s
        statistics): per partition of the users, on this machine's threads or (`"dask"`)
        as tasks on the `dask.distributed` client in scope
        ([`dprec.endtoend.partitions`][dprec.endtoend.partitions]).  The partial sums
        are added in partition order and the noise drawn once, here, from the model's
        generator: the same numbers on both backends for the same `random_state` and
        `n_partitions`.
    n_partitions : int, optional
        The partitions of consecutive users, of about equal numbers of ratings (`>= 1`);
        default one per $2^{22}$ ratings.  Their boundaries depend on the users' numbers
        of ratings, the release does not: the Gaussian and covariance sums are exact
        integers and each user is clipped within their own row.

    Attributes
    ----------
    baseline_ : DPBaseline
        The fitted global and item effects (and each user's own $b_u$).
    mu_ : float
        The released global mean (the baseline's).
    sim : pandas.DataFrame
        The released similarities, raw item ids (sorted) on both axes.  It was
        an array in Surprise's inner-id order, which follows the data's order.
        With `similarity="factors"` the model holds the factors, not the
        $n_{\text{items}}^2$ cosines, and `sim` computes them when it is read.
    """

    _similar = "items"     # get_neighbors: the released sim is between items

    def __init__(self, *, epsilon: float = 1.0, k: int = 40, mechanism: str = "gaussian",
                 delta: float | None = None, baseline_share: float | None = None,
                 clip: float = 1.0,
                 grid_bits: int = 4, shrinkage: float | None = None,
                 similarity: str = "covariance",
                 users: Iterable | None = None, items: Iterable | None = None,
                 max_items_per_user: int = MAX_ITEMS_PER_USER, random_state=None,
                 verbose: bool = False, budget: tuple[float, float] | None = None,
                 backend: str = "threads", n_partitions: int | None = None) -> None:
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
        self.max_items_per_user = max_items_per_user
        self.random_state = random_state
        self.verbose = verbose
        self.budget = budget
        self.backend = backend
        self.n_partitions = n_partitions

    def fit(self, trainset):
        """Release the effects and the covariance (spending `epsilon`), then the similarities;
        refused past the `budget`, before any noise."""
        epsilon = check_epsilon(self.epsilon)
        k = check_int(self.k, "k", minimum=1)
        mechanism = check_choice(self.mechanism, "mechanism", MECHANISMS)
        delta = check_mechanism_delta(mechanism, self.delta, self.items is None)
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
        backend, n_partitions = check_partitioning(self.backend, self.n_partitions)
        selection = None if self.items is not None else SelectionBudget(
            delta * (SELECTION_SHARE if mechanism == "gaussian" else 1.0))
        own_delta = delta - (0.0 if selection is None else selection.delta)
        rho = zcdp_rho(epsilon, own_delta) if mechanism == "gaussian" else None
        if similarity == "factors":                # DPALS's one entry (the same call)
            self._refuse_past_budget([(stated_epsilon(rho, own_delta, epsilon), delta)],
                                     Unit.USER)
            self._fit_factors(trainset, k, epsilon, share, (clip, bits),
                              FitNoise.draw(self.random_state), (backend, n_partitions))
            return self
        lists = None if rho is not None else RatingSpace.build(trainset, self.users,
                                                               self.items)
        first = BASELINE_SHARE if share is None else share
        baseline = DPBaseline(epsilon=first * epsilon, unit="user", mechanism=mechanism,
                              delta=self.delta, users=self.users, items=self.items,
                              max_items_per_user=self.max_items_per_user, backend=backend,
                              n_partitions=n_partitions)
        if rho is not None:
            check_effects_rho(first * rho, baseline.global_share, rho, "baseline_share")
        spent, cost = self._plan(trainset, baseline, lists, (first, epsilon, own_delta, rho),
                                 (clip, bits), selection)
        if lists is None and rho is None:     # items not chosen yet: what fails for one item
            check_laplace_scale(1, (clip, bits), (1.0 - first) * epsilon / 2.0, epsilon)
        self._refuse_past_budget(cost, Unit.USER)
        noise = FitNoise.draw(self.random_state)
        seeded = noise.source
        # the size rule reads the release's own (noisy) sizes: without the covariance, the
        # rest of ρ goes to the effects (`DPBaseline.fit_part`'s `more`)
        rest = None if share is not None or rho is None else lambda n_items, n_users: (
            (1.0 - first) * rho if default_share(n_users, n_items, rho) == 1.0 else 0.0)
        # the baseline's noise comes from this model's (its own random_state is unused)
        baseline.fit_part(trainset, noise.derive("effects"),
                          rho=None if rho is None else first * rho, selection=selection,
                          more=rest)
        share = first if rho is None else min(baseline.rho_ / rho, 1.0)
        if rho is not None:
            component = ("effects (no covariance: too few users or items for this budget)"
                         if share > 1.0 - 1e-12 else next(iter(spent)))
            spent = {component + ("" if selection is None else
                                  " (items by partition selection)"): next(iter(spent.values()))}
        space = baseline.rating_space          # the model is changed only once all is released
        matrix = space.matrix
        residuals = grid_residuals(baseline.residuals(), clip, bits)

        n_items = matrix.shape[1]
        if lists is None and rho is None:      # the selected items known: the noise's scale
            check_laplace_scale(n_items, (clip, bits), (1.0 - share) * epsilon / 2.0, epsilon)
        if share > 1.0 - 1e-12 or n_items == 0:    # no covariance (the rule, or no item)
            self._fit_baseline_only(trainset, k, baseline, residuals, seeded, mechanism,
                                    delta, spent)
            return self
        # the baseline is released (its items listed); the model is still unchanged
        check_memory(covariance_bytes(n_items, matrix.nnz, backend, n_partitions),
                     f"DPItemKNN's covariance similarity over the {n_items:,} items released",
                     "give similarity='factors' (n_items x d numbers) or a smaller "
                     "items= catalogue (the item effects' release is spent)")
        norm = "l2" if mechanism == "gaussian" else "l1"
        cov_int, w_int, sensitivity_cov, sensitivity_w = integer_sums(
            matrix, residuals, clip, bits, norm, backend=backend, n_partitions=n_partitions)
        rng = noise.generator("covariance")
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
        del cov_int, w_int
        cov *= 2.0 ** (-2 * bits) / sensitivity_w         # g = h² 2^-A: back to Cov
        co /= sensitivity_w                                # 2^-A: back to W

        if beta is None:
            beta = 10.0 * sd_w / math.sqrt(2.0)      # ten noise scales of W (in W's units)
        stabilised = safe_divide(cov, np.maximum(co, 0.0) + beta)    # denominator >= 0
        variance = np.maximum(np.diag(stabilised), 1e-12)
        scale = np.sqrt(np.outer(variance, variance))
        sim = np.clip(stabilised / scale, -1.0, 1.0)
        # each similarity's noise sd (Cov's noise is C_h² times W's), for the weights' κ
        levels = grid_levels(clip, bits) * 2.0**-bits
        support = (np.maximum(co, 0.0) + beta) * scale        # > 0 wherever a pair counts
        sim_noise = safe_divide(np.full_like(support, levels**2 * sd_w),
                                support).astype(np.float32)
        # a pair counts only where its co-rating weight is above the noise: a threshold
        # that pure noise passes with probability 1/(10 n_items) (0.1 false pair per item)
        sim = np.where(co > threshold, sim, 0.0)
        sim.flags.writeable = False
        # all computed: the model changes now (a MemoryError above leaves it as it was)
        AlgoBase.fit(self, trainset)
        self.k_, self.baseline_, self._space = k, baseline, space
        self._sim, self._sim_noise = sim, sim_noise
        self._residuals_by_rating = residuals
        self._accountant = self._ledger(seeded, mechanism, delta, spent)
        if self.verbose:
            print(f"DPItemKNN: released the item effects and the {n_items}-item covariance, "
                  f"ε = {epsilon:g}" + (f", δ = {delta:g}" if delta else "") + " per user")
        return self

    def _plan(self, trainset, baseline: DPBaseline, lists: RatingSpace | None,
              shares: tuple[float, float, float, float | None], grid: tuple[float, int],
              selection: SelectionBudget | None) -> tuple[dict, list]:
        """Before any noise: the model's own ledger entries `{component: ε}` and what every
        release spends, `(ε, δ)` in the ledger's order — public functions of the parameters
        (and, with Laplace and a public item catalogue, of its size: `lists`).  `shares` is
        `(baseline_share, ε, δ, ρ)`, δ the releases' own (without the selection's) and `ρ`
        None with Laplace; `grid` is `(clip, grid_bits)`.

        Raises
        ------
        ValueError
            If the Laplace noise of the covariance is beyond the sampler (`MAX_T`).
        """
        share, epsilon, delta, rho = shares
        selection_delta = 0.0 if selection is None else selection.delta
        if rho is not None:        # the releases composed in zCDP: one entry
            # zCDP composes by adding ρ: share·ρ for the effects and (1 − share)·ρ/2 for
            # each of the covariance and the co-rating weights, ρ in all
            spent = {"effects, covariance and co-rating weights":
                     stated_epsilon(rho, delta, epsilon)}
            return spent, [(*spent.values(), delta + selection_delta)]
        epsilon_each = (1.0 - share) * epsilon / 2.0
        if lists is not None:      # a public catalogue: the noise's scale is known now
            check_laplace_scale(len(lists.items), grid, epsilon_each, epsilon)
        spent = dict(zip(("covariance", "co-rating weights"),
                         laplace_sum_epsilons(sum_sensitivities(2, *grid, "l1"),
                                              epsilon_each)))
        try:
            effects = baseline.release_entries(trainset.rating_scale, 0 if lists is None else
                                               len(lists.items), selection=selection)
        except ValueError as error:           # say which of this model's parameters
            raise ValueError(f"baseline_share * epsilon = {share * epsilon:g} is too small "
                             f"for the baseline's release: {error}") from None
        return spent, [entry[2:] for entry in effects] + [(eps, 0.0) for eps in spent.values()]

    def _fit_baseline_only(self, trainset, k: int, baseline: DPBaseline,
                           residuals: np.ndarray, seeded: bool, mechanism: str, delta: float,
                           spent: dict) -> None:
        """The fitted model without a covariance release — the rule gives the baseline all
        of the budget, or no item was listed (the budget planned is still charged) —
        every similarity 0 (every answer is the baseline's)."""
        AlgoBase.fit(self, trainset)
        self.k_, self.baseline_, self._space = k, baseline, baseline.rating_space
        n_items = len(self._space.items)
        self._sim = FactorCosines(np.zeros((n_items, 0)))          # every similarity 0
        self._sim_noise = PairSums(np.zeros(n_items))
        self._residuals_by_rating = residuals
        self._accountant = self._ledger(seeded, mechanism, delta, spent)
        if self.verbose:
            print(f"DPItemKNN: released the item effects only ({n_items} items listed), "
                  f"ε = {self.epsilon:g}, δ = {delta:g} per user")

    def _fit_factors(self, trainset, k: int, epsilon: float, share: float | None,
                     grid: tuple[float, int], noise: FitNoise,
                     partitioning: tuple[str, int | None]) -> None:
        """The fitted model on the cosine of a [`DPALS`][dprec.DPALS] release's item
        factors (`similarity="factors"`): that release is the whole model's, its sums on
        `partitioning` = `(backend, n_partitions)`."""
        backend, n_partitions = partitioning
        als = DPALS(epsilon=epsilon, delta=self.delta, baseline_share=share, users=self.users,
                    items=self.items, max_items_per_user=self.max_items_per_user,
                    backend=backend, n_partitions=n_partitions)
        als.fit_part(trainset, noise.derive("factors"))
        factors = als.item_factors_.to_numpy()
        relative = safe_divide(als.factor_noise_.to_numpy(), np.linalg.norm(factors, axis=1))
        AlgoBase.fit(self, trainset)
        self.k_, self.baseline_, self._space = k, als.baseline_, als.baseline_.rating_space
        self.factors_ = als
        # n d numbers, not n²: each pair's cosine and noise computed when it is read
        self._sim, self._sim_noise = FactorCosines(factors), PairSums(relative)
        self._residuals_by_rating = grid_residuals(als.baseline_.residuals(), *grid)
        self._accountant = self._ledger(noise.source, "factors", 0.0, {})
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
    def sim(self) -> pd.DataFrame:
        """The released similarities, raw item ids (sorted) on both axes, read-only; with
        `similarity="factors"` computed when read ($n^2$ numbers: `MemoryError` before it
        starts when they do not fit; `get_neighbors` reads one item's row)."""
        if self._sim is None:
            raise AttributeError("DPItemKNN has no sim before fit: call fit first")
        labels = self._space.items.labels()
        return pd.DataFrame(np.asarray(self._sim), index=labels, columns=labels, copy=False)

    @property
    def mu_(self) -> float:
        """The released global mean (the baseline's)."""
        return self.baseline_.mu_

    def _estimates(self, users: np.ndarray, items: np.ndarray) -> np.ndarray:
        """Estimates (not clipped) for positions in the lists (`-1`: unknown): the
        baseline's, plus the neighbourhood shift where both are listed."""
        return self._shifted(users, items)[0]

    def _answers(self, users: np.ndarray, items: np.ndarray) -> tuple[np.ndarray, list]:
        """`_estimates` and `details`, with `actual_k` where both are listed."""
        est, known, actual_k = self._shifted(users, items)
        details = surprise_details(users >= 0, items >= 0)
        for n, count in zip(known.tolist(), actual_k.tolist()):
            details[n] = {"actual_k": count, "was_impossible": False}
        return est, details

    def _shifted(self, users: np.ndarray, items: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The estimates, the queries where both are listed, and their `actual_k`."""
        est = self.baseline_._estimates(users, items)
        known = np.flatnonzero((users >= 0) & (items >= 0))
        shift, actual_k = self._shifts(users[known], items[known])
        est[known] += shift
        return est, known, actual_k

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


def default_share(n_users: float, n_items: int, rho: float | None) -> float:
    r"""The public rule for `baseline_share`: 0.3 with Laplace (`rho` None); with the
    Gaussian, 0.3 when $(n_{\text{users}} / n_{\text{items}}) \sqrt\rho \ge$
    `COVARIANCE_SNR`, else 1 (no covariance release: the answers are the baseline's, with
    all of the budget).

    A pair's co-rating weight grows with the users per item while its noise scales as
    $1/\sqrt\rho$.  The threshold was measured on dprec's synthetic MovieLens-shaped data
    (`dprec scaling`: the covariance paid at 20,000 × 3,706 and 69,878 × 10,677 at ε = 5,
    ratios 4.0 and 4.8; it cost at ε ≤ 2, ratios up to 2.1), never on the data being
    protected.  Fewer than `MIN_ITEMS` listed items give no covariance either: partition
    selection lists the popular items, whose ratio is high, while the covariance among a
    few of them helps few answers and takes most of the budget from the effects.  The
    model reads released sizes only: the baseline release's noisy number of users and the
    number of items it lists (a public catalogue's, or those its partition selection
    chose).
    """
    if rho is None:
        return BASELINE_SHARE
    return BASELINE_SHARE if n_items >= MIN_ITEMS and \
        n_users / n_items * math.sqrt(rho) >= COVARIANCE_SNR else 1.0
