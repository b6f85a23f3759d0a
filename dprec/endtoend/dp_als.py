r"""Private alternating least squares: the strongest published user-level DP yardstick.

Chien, Jain, Krichene, Rendle, Song, Thakurta & Zhang, "Private Alternating Least
Squares: Practical Private Matrix Completion with Tighter Rates", ICML 2021, under
*joint* differential privacy (a user's own factor and predictions are shown to them
alone; everything shared is private), one user (all of their ratings) as the unit, on
top of [`DPBaseline`][dprec.DPBaseline]:

1. **global and item effects** $\mu$, $b_i$: a [`DPBaseline`][dprec.DPBaseline]
   release (discrete Gaussian, `baseline_share` of the zCDP budget $\rho$), and each
   user's residuals $e_{ui} = \mathrm{clip}(r_{ui} - \mu - b_i - b_u, -C, C) / C$ from
   their own ratings;
2. **item factors**, `n_epochs` times: every user solves their own factor from the
   released item factors $V$ (the first $V$ drawn at random, independent of the data),
   $x_u = \Pi\big((V_{I_u}^\top V_{I_u} + \lambda I)^{-1} V_{I_u}^\top e_u\big)$, with
   $\Pi$ the projection on the unit ball; then, per item, the sufficient statistics

    $$G_i = \sum_{u \ni i} w_u x_u x_u^\top, \qquad g_i = \sum_{u \ni i} w_u e_{ui} x_u,
    \qquad w_u = \min\big(1, \sqrt{m / |I_u|}\big)$$

    ($m$ = `max_ratings`, the weights doing what the paper's sampling of at most $m$
    ratings per user does) are released with discrete Gaussian noise, the upper triangle
    of $G_i$ mirrored below it, and $v_i = (\Pi_+(\tilde G_i) + \lambda_i I)^{-1} \tilde g_i$,
    with $\Pi_+$ the projection on positive semi-definite matrices and the ridge
    $\lambda_i = \lambda + \gamma \cdot 2\sigma\sqrt d$ grown by `noise_reg` $\gamma$ times the
    noise's spectral norm ($\sigma$ its public standard deviation); $v_i = 0$ where
    $\operatorname{tr} \tilde G_i$ is not above twice its noise, $2\sigma\sqrt d$: such an
    item answers the baseline's.

3. **Answers**: $\hat r_{ui} = \mu + b_i + b_u + C\, x_u^\top v_i$, with $x_u$ solved once
   more from the last $V$ and $u$'s own ratings.

**Privacy.**  One user's vector of statistics (over every item, both blocks) has ℓ2
norm at most $\sqrt{\sum_{i \in I_u} w_u^2 (\lVert x_u x_u^\top \rVert_F^2 + e_{ui}^2
\lVert x_u \rVert^2)} \le \sqrt{2 m}$, since $\lVert x_u \rVert \le 1$, $|e_{ui}| \le 1$
and $w_u^2 |I_u| \le m$; every other user's $x_v$ depends only on released $V$ and $v$'s
own data.  The statistics are put on the grid $2^{-12}$ with each user's integer vector
clipped to ℓ2 norm $K = \lfloor \sqrt{2m}\, 2^{12} \rfloor$
(`dprec.mechanisms.discrete_gaussian.integer_l2_block_sums`),
and discrete Gaussian noise of scale $K / \sqrt{2\rho_t}$ makes each epoch
$\rho_t$-zCDP (Canonne, Kamath & Steinke 2020).  The baseline's release and the
epochs compose adaptively: $\rho = \rho_b + T \rho_t$, the largest $\rho$ whose
$(\varepsilon, \delta)$ by `dp-accounting` is (`epsilon`, `delta`).  Everything released
(the effects, the item factors, each epoch's) is post-processing of these releases;
$x_u$ and $b_u$ are $u$'s own and used in $u$'s predictions only.  The lists of users
and items are [`DPBaseline`][dprec.DPBaseline]'s (sorted by raw id, public catalogues
or the data's, with the scope the report then states).

**Where it pays.**  User-level noise per item shrinks as users grow: by default
(`baseline_share=None`) the factors get $1 - 0.3$ of $\rho$ only where
$(n_{\text{users}} / n_{\text{items}}) \sqrt\rho \ge$ `FACTOR_SNR`, and otherwise the
model is the baseline with the whole budget (its measured break-even, see
[End-to-end private models](../end_to_end.md)).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
import pandas as pd
import scipy.sparse as sp
from surprise import AlgoBase

from ..accountant.ledger import LedgerEntry, PrivacyAccountant, Status, Unit
from ..mechanisms.discrete_gaussian import (
    discrete_gaussian,
    grid_sensitivity,
    integer_l2_block_sums,
    stated_epsilon,
    zcdp_rho,
)
from ..utils._arrays import segment_ids
from ..utils._rng import FitNoise, NoiseSource, validate_random_state
from ..utils._validation import (
    check_epsilon,
    check_int,
    check_open_unit,
    check_positive,
    check_real,
)
from .dp_baseline import (
    GRID_BITS,
    MAX_ITEMS_PER_USER,
    SELECTION_SHARE,
    DPBaseline,
    SelectionBudget,
    check_mechanism_delta,
)
from .effects_release import check_effects_rho
from .noisy_effects import SIGNAL
from .partitions import Partitions, UserRows, check_partitioning
from .rating_space import ListedModel

__all__ = ["DPALS", "default_share", "item_factors", "item_statistics", "user_factors"]

#: the public rule's threshold on $(n_{\text{users}} / n_{\text{items}}) \sqrt\rho$ above
#: which the factors get a share of the budget (measured: see `default_share`)
FACTOR_SNR = 1.0
#: the factors' share of ρ when the rule releases them
FACTOR_SHARE = 0.7
#: the fewest listed items the factors are released for (`default_share`): on MovieLens
#: 100k at ε = 5 the baseline's share lists 149, where the factors cost 0.04 RMSE
MIN_ITEMS = 500
#: ratings per block of the vectorised passes (memory: about 100 floats per rating)
BLOCK_RATINGS = 1 << 17
NOTES = {
    "gaussian": "discrete Gaussian on the baseline's release and, each epoch, on every "
                "item's integer (G_i, g_i) = sums of w_u (x_u x_u^T, e_ui x_u), |x_u| <= 1, "
                "|e_ui| <= 1, w_u = min(1, sqrt(m/|I_u|)): l2 sensitivity sqrt(2m) per user; "
                "the releases composed in zCDP, (epsilon, delta) by dp-accounting",
    "answers": "every shared output is post-processing of the releases; a prediction for u "
               "also uses u's own ratings (b_u, x_u), shown to u alone",
}
OUTPUTS = ("predictions", "details", "recommendations", "item effects", "item factors")


class DPALS(ListedModel, AlgoBase):
    r"""Matrix factorisation by private alternating least squares (user-level, joint DP).

    See the module docstring for the construction, the privacy argument and the public
    rule that decides whether the factors are released at all.

    Parameters
    ----------
    epsilon : float, default 1.0
        The privacy budget of everything released, `> 0`.
    delta : float, optional
        δ in (0, 1), default `1e-5`.
    n_factors : int, default 8
        $d$, the factors' dimension (Surprise's `SVD` name).
    n_epochs : int, default 3
        $T$, the item-factor releases (each spends $\rho_t$).
    max_ratings : int, default 50
        $m$: each user's weight is $\min(1, \sqrt{m/|I_u|})$ and the sensitivity
        $\sqrt{2m}$.
    reg : float, default 1.0
        $\lambda$, the ridge of both solves (`> 0`).
    noise_reg : float, default 1.0
        $\gamma$ (`>= 0`): the item solves' ridge grows by $\gamma$ times the noise's
        spectral norm $2\sigma\sqrt d$.
    clip : float, default 1.0
        $C$ (rating units, `> 0`): residuals are clipped to $[-C, C]$.
    baseline_share : float, optional
        The baseline's share of ρ, in (0, 1); default the public rule
        (`default_share`).
    users, items : sequence of raw ids, optional
        Public catalogues, as [`DPBaseline`][dprec.DPBaseline]'s: without `items=` its
        release chooses the items (private partition selection, half of δ).
    max_items_per_user : int, default 1000
        Without `items=`: the most items one user brings into that selection, as
        [`DPBaseline`][dprec.DPBaseline]'s.
    random_state : None, int, RandomState or Generator
        `None` (default) draws fresh entropy at each fit; an int gives **seeded noise**,
        for experiments only (the report's entries are then void).
    verbose : bool, default False
    budget : (float, float), optional
        A per-user `(ε, δ)` budget ([`PrivateModel`][dprec.accountant.private_model.PrivateModel]):
        a fit whose releases would spend more is refused before any noise is drawn
        (`BudgetExceededError`, a `ValueError`), the model left as it was.
    backend : {"threads", "dask"}, default "threads"
        Where the sums over users are computed (the baseline's and each epoch's, with
        every user's $x_u$): per partition of the users, on this machine's threads or
        (`"dask"`) as tasks on the `dask.distributed` client in scope, each partition's
        rows sent to the workers once and the released $V$ once per epoch
        ([`dprec.endtoend.partitions`][dprec.endtoend.partitions]).  The integer
        statistics are added in partition order and the noise drawn once, here, from the
        model's generator: the same numbers on both backends for the same `random_state`
        and `n_partitions`.
    n_partitions : int, optional
        The partitions of consecutive users, of about equal numbers of ratings (`>= 1`);
        default one per $2^{22}$ ratings.  Their boundaries depend on the users' numbers
        of ratings, the release does not: the statistics are exact integers and each
        user is clipped within their own row.

    Attributes
    ----------
    baseline_ : DPBaseline
        The fitted global and item effects (and each user's own $b_u$).
    mu_ : float
        The released global mean (the baseline's).
    item_factors_ : pandas.DataFrame
        The released $v_i$ (rating units per unit of $x_u$ are $C$), indexed by raw item
        id in sorted order; all 0 when the rule releases no factors.
    noise_sd_ : float
        $\sigma$, the standard deviation of each epoch's noise on a coordinate of $G_i$
        or $g_i$ (0 when no factors are released).
    factor_noise_ : pandas.Series
        The noise of each $v_i$ the noise on $\tilde g_i$ makes,
        $\sigma \sqrt{\operatorname{tr} A_i^{-2}}$ ($A_i$ the item's solve), 0 where
        $v_i = 0$: a function of the release and its public scale.

    References
    ----------
    S. Chien, P. Jain, W. Krichene, S. Rendle, S. Song, A. Thakurta and L. Zhang,
    "Private Alternating Least Squares: Practical Private Matrix Completion with Tighter
    Rates", ICML 2021.
    """

    def __init__(self, *, epsilon: float = 1.0, delta: float | None = None, n_factors: int = 8,
                 n_epochs: int = 3, max_ratings: int = 50, reg: float = 1.0,
                 noise_reg: float = 1.0, clip: float = 1.0, baseline_share: float | None = None,
                 users: Iterable | None = None, items: Iterable | None = None,
                 max_items_per_user: int = MAX_ITEMS_PER_USER, random_state=None,
                 verbose: bool = False, budget: tuple[float, float] | None = None,
                 backend: str = "threads", n_partitions: int | None = None) -> None:
        AlgoBase.__init__(self)
        self.epsilon = epsilon
        self.delta = delta
        self.n_factors = n_factors
        self.n_epochs = n_epochs
        self.max_ratings = max_ratings
        self.reg = reg
        self.noise_reg = noise_reg
        self.clip = clip
        self.baseline_share = baseline_share
        self.users = users
        self.items = items
        self.max_items_per_user = max_items_per_user
        self.random_state = random_state
        self.verbose = verbose
        self.budget = budget
        self.backend = backend
        self.n_partitions = n_partitions

    def fit(self, trainset):
        """Release the effects and `n_epochs` item factors (spending `epsilon`); refused
        past the `budget`, before any noise."""
        return self.fit_part(trainset)

    def fit_part(self, trainset, noise: FitNoise | bytes | None = None,
                 seeded: NoiseSource | bool | None = None):
        """`fit` as part of another model (e.g. [`DPItemKNN`][dprec.DPItemKNN] on the
        factors' similarities): the noise from that model's `noise` (a
        `dprec.utils._rng.FitNoise`, its source deciding the entries' status; this model's
        `random_state` is then unused).  Bytes a caller chose count as a caller's
        generator at least (`seeded` may say more: an int seed), never as fresh noise."""
        epsilon = check_epsilon(self.epsilon)
        delta = check_mechanism_delta("gaussian", self.delta)
        d = check_int(self.n_factors, "n_factors", minimum=1, maximum=64)
        epochs = check_int(self.n_epochs, "n_epochs", minimum=1, maximum=1000)
        m = check_int(self.max_ratings, "max_ratings", minimum=1, maximum=1 << 20)
        reg = check_positive(self.reg, "reg")
        noise_reg = check_real(self.noise_reg, "noise_reg", low=0.0)
        clip = check_positive(self.clip, "clip")
        share = None if self.baseline_share is None else check_open_unit(
            self.baseline_share, "baseline_share")
        validate_random_state(self.random_state)
        backend, n_partitions = check_partitioning(self.backend, self.n_partitions)
        selection = None if self.items is not None else SelectionBudget(SELECTION_SHARE * delta)
        own_delta = delta - (0.0 if selection is None else selection.delta)
        rho = zcdp_rho(epsilon, own_delta)
        spent = stated_epsilon(rho, own_delta, epsilon)   # the one entry's ε: known now
        self._refuse_past_budget([(spent, delta)], Unit.USER)
        noise = FitNoise.of(noise, self.random_state, seeded)
        first = 1.0 - FACTOR_SHARE if share is None else share
        baseline = DPBaseline(epsilon=epsilon, unit="user", mechanism="gaussian", delta=delta,
                              users=self.users, items=self.items,
                              max_items_per_user=self.max_items_per_user, backend=backend,
                              n_partitions=n_partitions)
        check_effects_rho(first * rho, baseline.global_share, rho, "baseline_share")
        # the size rule reads the release's own (noisy) sizes: without factors, the rest
        # of ρ goes to the effects (`fit_part`'s `more`)
        rest = None if share is not None else lambda n_items, n_users: (
            (1.0 - first) * rho if default_share(n_users, n_items, rho) == 1.0 else 0.0)
        baseline.fit_part(trainset, noise.derive("effects"),
                          rho=first * rho, selection=selection, more=rest)
        share = baseline.rho_ / rho
        space = baseline.rating_space
        matrix = space.matrix
        residuals = np.clip(baseline.residuals(), -clip, clip) / clip
        n_items = matrix.shape[1]
        factors, factor_noise, sd = np.zeros((n_items, d)), np.zeros(n_items), 0.0
        weights = np.minimum(1.0, np.sqrt(m / np.maximum(np.diff(matrix.indptr), 1)))
        with Partitions(matrix, backend, n_partitions, ratings=(residuals,),
                        users=(weights,)) as partitions:
            if share < 1.0 - 1e-12:
                rng = noise.generator("factors")
                factors = rng.normal(0.0, 1.0 / math.sqrt(d), (n_items, d))
                rho_epoch = (1.0 - share) * rho / epochs
                sensitivity = _check_grid(matrix.shape[0], math.sqrt(2.0 * m))
                for epoch in range(epochs):
                    # each partition's x_u and integer statistics, added; the noise here
                    sums = partitions.sum(_epoch_statistics, (factors, reg, math.sqrt(2.0 * m)))
                    sigma = sensitivity / math.sqrt(2.0 * rho_epoch)
                    noisy = discrete_gaussian(sums, sigma, rng) * 2.0**-GRID_BITS
                    sd = sigma * 2.0**-GRID_BITS
                    ridge = reg + noise_reg * 2.0 * sd * math.sqrt(d)
                    factors, factor_noise = item_factors(noisy, d, ridge, sd)
                    if self.verbose:
                        print(f"DPALS: epoch {epoch + 1}/{epochs} released")
            own = np.concatenate(partitions.map(_own_factors, (factors, reg)))
        AlgoBase.fit(self, trainset)            # the model is changed only after the releases
        self.baseline_, self._space, self._factors = baseline, space, factors
        self._user_factors = own
        self._clip, self.noise_sd_ = clip, float(sd)
        self.item_factors_ = pd.DataFrame(factors.copy(), index=space.items.labels(),
                                          columns=[f"f{j}" for j in range(d)])
        self.factor_noise_ = pd.Series(factor_noise, index=space.items.labels(),
                                       name="factor_noise")
        component = (f"effects and item factors ({epochs} epochs)" if share < 1.0 - 1e-12
                     else "effects (no factors: too few users or items for this budget)")
        if selection is not None:
            component += " (items by partition selection)"
        # δ as planned before the noise: the selection's share bounds what it added
        self._accountant = self._ledger(noise.source, delta, {component: spent})
        if self.verbose:
            print(f"DPALS: ε = {epsilon:g}, δ = {delta:g} per user")
        return self

    def _ledger(self, seeded: NoiseSource, delta: float, epsilons: dict) -> PrivacyAccountant:
        """The accountant: one entry (the releases composed in zCDP) charged once to every
        listed user, every output covered, the lists' scope."""
        accountant = self._open_accountant(self._space.users.ids,
                                           f"DPALS(n_factors={self._factors.shape[1]})", seeded)
        indices = [accountant.register(LedgerEntry(
            component, "discrete gaussian (zCDP)", eps, delta, Unit.USER, Status.HOLDS,
            "user", NOTES["gaussian"])) for component, eps in epsilons.items()]
        self._release_once(accountant, indices, OUTPUTS, NOTES["answers"], Unit.USER)
        return accountant

    @property
    def mu_(self) -> float:
        """The released global mean (the baseline's)."""
        return self.baseline_.mu_

    def _estimates(self, users: np.ndarray, items: np.ndarray) -> np.ndarray:
        """Estimates (not clipped) for positions in the lists (`-1`: unknown): the
        baseline's, plus $C x_u^\\top v_i$ where both are listed."""
        est = self.baseline_._estimates(users, items)
        known = (users >= 0) & (items >= 0)
        if not len(self._factors):               # no item listed: no factor to read
            return est
        dot = np.einsum("nd,nd->n", self._user_factors[np.maximum(users, 0)],
                        self._factors[np.maximum(items, 0)])
        return est + np.where(known, self._clip * dot, 0.0)


def default_share(n_users: float, n_items: int, rho: float) -> float:
    r"""The public rule for `baseline_share`: $1 -$ `FACTOR_SHARE` when
    $(n_{\text{users}} / n_{\text{items}}) \sqrt\rho \ge$ `FACTOR_SNR`, else 1 (no
    factors).  Raters per item grow with $n_{\text{users}} / n_{\text{items}}$ and the
    noise's scale is $\propto 1/\sqrt\rho$; the threshold was set where the factors
    started paying on dprec's synthetic data before its calibration to MovieLens; on
    the calibrated data they pay from about 1.8 and cost at 1.1-1.2
    ([End-to-end models](../end_to_end.md)); fewer than `MIN_ITEMS` items give no factors
    either.  The model reads released sizes only: the baseline release's noisy number of
    users and the number of items it lists (a public catalogue's, or those its partition
    selection chose)."""
    return 1.0 - FACTOR_SHARE if n_items >= MIN_ITEMS and \
        n_users / n_items * math.sqrt(rho) >= FACTOR_SNR else 1.0


def _blocks(indptr: np.ndarray) -> list[tuple[int, int]]:
    """Ranges of users holding about `BLOCK_RATINGS` ratings each (at least one user)."""
    bounds, start, n_users = [], 0, len(indptr) - 1
    while start < n_users:
        stop = int(np.searchsorted(indptr, indptr[start] + BLOCK_RATINGS, side="right")) - 1
        stop = min(max(stop, start + 1), n_users)
        bounds.append((start, stop))
        start = stop
    return bounds


def _row_sums(indptr: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Per-row sums of `values` (one row of it per rating, rows contiguous per user); 0
    for rows without any (a block of users without ratings included)."""
    local = indptr - indptr[0]
    if local[-1] == 0:
        return np.zeros((len(indptr) - 1,) + values.shape[1:])
    summing = sp.csr_matrix((np.ones(local[-1]), np.arange(local[-1]), local),
                            shape=(len(indptr) - 1, local[-1]))
    return np.asarray(summing @ values.reshape(len(values), -1)).reshape(
        (len(indptr) - 1,) + values.shape[1:])


def _check_grid(n_users: int, bound: float) -> float:
    """`item_statistics`' check for the sum of the partitions' integer statistics: their
    sums could pass $2^{52}$ with `n_users`; returns the sensitivity $K$."""
    sensitivity = grid_sensitivity(bound, GRID_BITS)
    if float(n_users) * sensitivity >= 2.0**52:
        raise ValueError("the integer sums could pass 2^52: too many users for this grid")
    return sensitivity


def _epoch_statistics(shared: tuple, rows: UserRows) -> np.ndarray:
    """One partition's integer item statistics of an epoch (`Partitions.sum`'s function):
    its users' $x_u$ from the released factors, then their clipped sums; `shared` is
    `(factors, reg, bound)`.  No randomness."""
    factors, reg, bound = shared
    (residuals,), (weights,) = rows.ratings, rows.users
    own = user_factors(rows.matrix, residuals, factors, reg)
    return item_statistics(rows.matrix, residuals, own, weights, bound, GRID_BITS)[0]


def _own_factors(shared: tuple, rows: UserRows) -> np.ndarray:
    """One partition's users' $x_u$ from the last released factors (`shared` is
    `(factors, reg)`), each user's own, for their own answers."""
    factors, reg = shared
    return user_factors(rows.matrix, rows.ratings[0], factors, reg)


def user_factors(matrix, residuals: np.ndarray, factors: np.ndarray, reg: float) -> np.ndarray:
    r"""Every user's $x_u = \Pi((V_{I_u}^\top V_{I_u} + \lambda I)^{-1} V_{I_u}^\top e_u)$ from
    their own `residuals` (in the order of `matrix.data`) and the item `factors` $V$,
    projected on the unit ball (0 for a user without ratings).

    A block whose systems float64 cannot solve by elimination (a tiny $\lambda$ against
    large factors: $V_{I_u}^\top V_{I_u}$ of rank below $d$ for a user with fewer ratings
    than factors, and $\lambda$ lost in its rounding) is solved through the eigenvectors
    of the Gram matrix instead, $\sum_j q_j q_j^\top b / (\max(l_j, 0) + \lambda)$: the
    same ridge solution, finite for every $\lambda > 0$."""
    n_users, d = matrix.shape[0], factors.shape[1]
    out = np.zeros((n_users, d))
    for start, stop in _blocks(matrix.indptr):
        indptr = matrix.indptr[start:stop + 1]
        cells = slice(indptr[0], indptr[-1])
        rated = factors[matrix.indices[cells]]
        gram = _row_sums(indptr, rated[:, :, None] * rated[:, None, :]) + reg * np.eye(d)
        target = _row_sums(indptr, rated * residuals[cells, None])
        try:
            solved = np.linalg.solve(gram, target[:, :, None])[:, :, 0]
        except np.linalg.LinAlgError:
            solved = None
        if solved is None or not np.isfinite(solved).all():
            values, vectors = np.linalg.eigh(gram - reg * np.eye(d))
            inverse = 1.0 / (np.maximum(values, 0.0) + reg)
            solved = np.einsum("nij,nj,nkj,nk->ni", vectors, inverse, vectors, target)
        out[start:stop] = solved
    norms = np.linalg.norm(out, axis=1)
    return out / np.maximum(norms, 1.0)[:, None]


def item_statistics(matrix, residuals: np.ndarray, own: np.ndarray, weights: np.ndarray,
                    bound: float, bits: int) -> tuple[np.ndarray, float]:
    r"""Every item's integer sums of $w_u (\mathrm{upper}(x_u x_u^\top), e_{ui} x_u)$, each
    user's vector clipped to ℓ2 norm $K = \lfloor \text{bound} \cdot 2^{\text{bits}}
    \rfloor$ on the grid $2^{-\text{bits}}$; shape `(n_items, d(d+1)/2 + d)`, and $K$."""
    n_users, n_items = matrix.shape
    d = own.shape[1]
    upper = np.triu_indices(d)
    total, sensitivity = None, 0.0
    if float(n_users) * math.floor(bound * 2.0**bits) >= 2.0**52:
        raise ValueError("the integer sums could pass 2^52: too many users for this grid")
    for start, stop in _blocks(matrix.indptr):
        cells = slice(matrix.indptr[start], matrix.indptr[stop])
        counts = np.diff(matrix.indptr[start:stop + 1])
        rows = segment_ids(counts)
        x = own[start:stop] * weights[start:stop, None]
        outer = (x[:, upper[0]] * own[start:stop, upper[1]])[rows]
        blocks = np.hstack([outer, x[rows] * residuals[cells, None]])
        sums, sensitivity = integer_l2_block_sums(rows, matrix.indices[cells], blocks, n_items,
                                                  bound, bits)
        total = sums if total is None else total + sums
    if total is None:            # no user: nothing to sum, the sensitivity all the same
        total = np.zeros((n_items, len(upper[0]) + d))
        sensitivity = float(math.floor(bound * 2.0**bits))
    return total, sensitivity


def item_factors(statistics: np.ndarray, d: int, ridge: float,
                 sd: float) -> tuple[np.ndarray, np.ndarray]:
    r"""$v_i = A_i^{-1} \tilde g_i$, $A_i = \Pi_+(\tilde G_i) + \lambda I$ (`ridge` $\lambda$),
    from the released `statistics` (rows: the upper triangle of $\tilde G_i$, then
    $\tilde g_i$), $\Pi_+$ setting negative eigenvalues to 0, where the item carries
    signal: $\operatorname{tr} \tilde G_i > 2 \sigma \sqrt d$ (`SIGNAL` times the noise sd
    of the trace, `sd` $= \sigma$ that of a coordinate); $v_i = 0$ elsewhere.  Also each
    $v_i$'s noise from that of $\tilde g_i$, $\sigma \sqrt{\operatorname{tr} A_i^{-2}}$ (0
    where $v_i = 0$).  Post-processing."""
    upper = np.triu_indices(d)
    n_items = statistics.shape[0]
    gram = np.zeros((n_items, d, d))
    gram[:, upper[0], upper[1]] = statistics[:, : len(upper[0])]
    gram[:, upper[1], upper[0]] = statistics[:, : len(upper[0])]
    signal = np.trace(gram, axis1=1, axis2=2) > SIGNAL * sd * math.sqrt(d)
    target = np.where(signal[:, None], statistics[:, len(upper[0]):], 0.0)
    values, vectors = np.linalg.eigh(gram)
    inverse = 1.0 / (np.maximum(values, 0.0) + ridge)
    factors = np.einsum("nij,nj,nkj,nk->ni", vectors, inverse, vectors, target)
    noise = np.where(signal, sd * np.sqrt((inverse**2).sum(axis=1)), 0.0)
    return factors, noise
