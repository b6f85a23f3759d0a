r"""The one release of [`DPBaseline`][dprec.DPBaseline]: each unit's bounded contribution,
the plan of what it spends (fixed before any noise), the discrete Gaussian or lattice
Laplace release, and the private partition selection of its items.  The argument is in
[`dprec.endtoend.dp_baseline`][dprec.endtoend.dp_baseline]'s docstring."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..mechanisms import laplace, laplace_epsilon, laplace_grid, laplace_scale
from ..mechanisms.discrete_gaussian import (
    discrete_gaussian,
    grid_sensitivity,
    integer_l2_sums,
    stated_epsilon,
    zcdp_rho,
)
from ..mechanisms.exact_laplace import MAX_T
from ..mechanisms.partition_selection import selection_delta, threshold_steps
from ..utils._arrays import safe_divide, segment_ids
from ..utils._validation import check_delta

__all__ = ["DELTA", "GRID_BITS", "MAX_ITEMS_PER_USER", "SELECTION_SHARE", "Contributions",
           "ReleasePlan", "SelectionBudget", "Settings", "check_effects_rho",
           "check_grid_units", "check_mechanism_delta", "contributions", "gaussian_release",
           "laplace_release", "release_plan", "release_sums", "reselect", "selection_rule",
           "weight_of"]

#: the default δ of the Gaussian mechanism
DELTA = 1e-5
#: the Gaussian release's grid: contributions are counted in steps of 2^-GRID_BITS
GRID_BITS = 12
#: the share of δ that partition selection may spend (the rest is the release's own)
SELECTION_SHARE = 0.5
#: the default bound on the items one user contributes to (more: a random subset)
MAX_ITEMS_PER_USER = 1000


@dataclass(frozen=True)
class Settings:
    """The checked parameters of a fit (the defaults resolved for the rating scale)."""

    epsilon: float
    delta: float
    unit: str
    mechanism: str
    centre: str
    clip: float
    share: float
    item_shrinkage: float
    prior_variance: float
    user_shrinkage: float
    cap: int


@dataclass(frozen=True)
class SelectionBudget:
    """What private partition selection of the items may spend: `delta`, its share of
    the model's δ ([`selection_delta`][dprec.mechanisms.partition_selection.selection_delta]
    at the threshold), split evenly between `stages` selections (2 when the items may be
    chosen again on a second release)."""

    delta: float
    stages: int = 1

    @property
    def per_stage(self) -> float:
        """The δ each selection may add."""
        return self.delta / self.stages


def check_mechanism_delta(mechanism: str, delta: float | None, selecting: bool = False) -> float:
    """The δ of `mechanism` (`None`: `DELTA`, or 0 for Laplace with a public catalogue);
    `selecting`: the items are chosen by partition selection, which needs δ > 0.

    Raises
    ------
    ValueError
        For δ = 0 with the Gaussian or with partition selection, or δ > 0 with Laplace
        and a public catalogue, naming `delta`.
    """
    if mechanism == "gaussian" or selecting:
        delta = DELTA if delta is None else check_delta(delta)
        if delta == 0.0:
            raise ValueError("delta must be > 0 " + (
                "with mechanism='gaussian' (or choose mechanism='laplace', which has delta = "
                "0 with a public item catalogue)" if mechanism == "gaussian" else
                "without a public item catalogue: partition selection spends it (give items= "
                "for delta = 0)"))
        return delta
    delta = 0.0 if delta is None else check_delta(delta)
    if delta != 0.0:
        raise ValueError(f"delta = {delta:g} is for mechanism='gaussian' or partition "
                         "selection; the Laplace mechanism with a public item catalogue has "
                         "delta = 0 (leave delta unset)")
    return delta


def _gaussian_bound(share: float) -> tuple[float, float]:
    r"""$a = \sqrt{s/(1-s)}$ and the ℓ2 bound $\sqrt{2 + 2a^2}$ of a unit's vector."""
    a = math.sqrt(share / (1.0 - share))
    return a, math.sqrt(2.0 + 2.0 * a * a)


def check_effects_rho(rho: float, global_share: float, total: float, name: str) -> float:
    r"""Check that the Gaussian effects release at zCDP `rho`, `name` (the caller's
    parameter, a share of the model's `total` ρ) of it, draws noise the discrete Gaussian
    sampler can: $\sigma = K / \sqrt{2\rho}$ grid steps below its largest scale $2^{42}$,
    i.e. $\rho > K^2 / 2^{85}$ ($K$ from `global_share`, see
    [`release_plan`][dprec.endtoend.dp_baseline.release_plan]).  Returns `rho`.

    Raises
    ------
    ValueError
        Naming `name` and the smallest share that works.
    """
    _, bound = _gaussian_bound(global_share)
    sensitivity = grid_sensitivity(bound, GRID_BITS)
    minimum = sensitivity**2 / (2.0 * MAX_T**2) * (1.0 + 2.0**-40)
    if not rho >= minimum:
        raise ValueError(f"{name} must be at least {minimum / total:.4g} here, got "
                         f"{rho / total:g}: it gives the effects' release zCDP rho = "
                         f"{rho:.4g} of the model's {total:.4g}, whose noise (scale "
                         f"K / sqrt(2 rho) grid steps, K = {sensitivity:g}) would pass the "
                         "discrete Gaussian sampler's largest scale 2^42 (give a larger "
                         f"{name} or epsilon)")
    return rho


def weight_of(n_ratings, unit: str, mechanism: str):
    """A unit's weight per rating for a user with `n_ratings` ratings: 1 per rating,
    $1/\\sqrt n$ (Gaussian) or $1/n$ (Laplace) per user."""
    n = np.asarray(n_ratings, dtype=np.float64)
    if unit == "rating":
        return np.ones_like(n)
    return 1.0 / np.sqrt(n) if mechanism == "gaussian" else 1.0 / n


@dataclass(frozen=True)
class Contributions:
    """Each unit's contribution to the released vector, as sparse entries.

    The vector's coordinates: the item sums ($n$ items, in units of $C$), the item
    weights ($n$), then the global sum (in units of $B$) and count.  Entry $k$ adds
    `values[k]` to coordinate `columns[k]` for the unit `rows[k]`; `global_rows` marks
    the global coordinates' entries.
    """

    rows: np.ndarray
    columns: np.ndarray
    values: np.ndarray
    global_rows: np.ndarray
    n_coordinates: int

    def totals(self) -> np.ndarray:
        """The true vector (the sums over units)."""
        return np.bincount(self.columns, self.values, self.n_coordinates)


def contributions(matrix, s: Settings, rating_scale: tuple[float, float]) -> Contributions:
    r"""The entries of every unit's contribution (see
    [`Contributions`][dprec.endtoend.dp_baseline.Contributions]) for the users × items `matrix`:
    ratings clipped to the scale, centred ($c$ or the user's mean) and clipped to
    $\pm C$, divided by $C$, weighted per rating (`weight_of`); the global pair
    $((\bar r - c)/B, 1)$ per unit.  Per user the item block has ℓ2 norm at most
    $\sqrt 2$ (Gaussian weights) or ℓ1 norm at most 2 (Laplace weights), and the global
    pair norm at most $\sqrt 2$ / 2; per rating both blocks hold one rating."""
    low, high = rating_scale
    centre, half_range = (low + high) / 2.0, (high - low) / 2.0
    n_users, n_items = matrix.shape
    counts = np.diff(matrix.indptr)
    users = segment_ids(counts)
    ratings = np.clip(matrix.data, low, high)
    rated = counts > 0
    means = safe_divide(np.bincount(users, ratings, n_users), counts)   # 0 where no rating
    origin = centre if s.centre == "scale" else means[users]
    x = np.clip(ratings - origin, -s.clip, s.clip) / s.clip
    w = weight_of(counts[users], s.unit, s.mechanism)
    if s.unit == "rating":
        unit_of_item_entries = np.arange(len(ratings))
        global_rows, global_values = unit_of_item_entries, (ratings - centre) / half_range
    else:
        unit_of_item_entries = users
        global_rows, global_values = np.flatnonzero(rated), (means[rated] - centre) / half_range
    n_global = len(global_rows)
    rows = np.concatenate([unit_of_item_entries, unit_of_item_entries, global_rows,
                           global_rows])
    columns = np.concatenate([matrix.indices, n_items + matrix.indices,
                              np.full(n_global, 2 * n_items), np.full(n_global, 2 * n_items + 1)])
    values = np.concatenate([w * x, w, global_values, np.ones(n_global)])
    marks = np.concatenate([np.zeros(2 * len(ratings), dtype=bool), np.ones(2 * n_global,
                                                                             dtype=bool)])
    return Contributions(rows, columns, values, marks, 2 * n_items + 2)


@dataclass(frozen=True)
class ReleasePlan:
    """What a release will spend, fixed before any noise is drawn (public functions of the
    parameters): the noise scales, the ledger entries `(component, mechanism, ε, δ)`, and
    with partition selection the threshold on an item's noisy weight, the δ it adds
    (included in the entries) and the rule as the report states it."""

    noise: tuple[float, ...]
    entries: list
    threshold: float | None = None
    selection_delta: float = 0.0
    rule: str = ""
    rho: float | None = None


def release_plan(s: Settings, n_items: int, rho: float | None = None,
                 selection: SelectionBudget | None = None) -> ReleasePlan:
    r"""The release's noise scales, ledger entries and selection threshold, before any
    noise is drawn: public functions of the parameters (and, with Laplace and a public
    catalogue, of its size `n_items`).

    With the Gaussian, the noise is $(\sigma, \text{bound}, a)$: $\sigma = K / \sqrt{2\rho}$
    in grid steps, $K$ = `grid_sensitivity(bound)` with the ℓ2 bound $\sqrt{2 + 2a^2}$ that
    [`gaussian_release`][dprec.endtoend.dp_baseline.gaussian_release] clips each unit to (this
    one value, so the noise and the clipping cannot disagree), $a = \sqrt{s/(1-s)}$, and
    $\rho$ = `zcdp_rho(ε, δ − δ_sel)` unless `rho` is given, one entry; with Laplace, the
    scales of the global and of the item vectors (ℓ1 sensitivity 2 each per unit,
    `global_share` of ε and the rest), two entries.  An entry's ε comes from the
    mechanism's privacy map at that scale.

    With `selection` (no public item catalogue), an item is released only when its noisy
    weight reaches the smallest threshold whose
    [`selection_delta`][dprec.mechanisms.partition_selection.selection_delta] is within
    `selection.delta`, $k$ the items one unit can bring (`cap` per user, 1 per rating);
    that δ is added to the (last) entry.
    """
    k = 1 if s.unit == "rating" else s.cap
    if s.mechanism == "gaussian":
        a, bound = _gaussian_bound(s.share)
        sensitivity = grid_sensitivity(bound, GRID_BITS)
        own_delta = s.delta if selection is None else s.delta - selection.delta
        rho = zcdp_rho(s.epsilon, own_delta) if rho is None else check_effects_rho(
            rho, s.share, rho, "the effects' share of rho")
        sigma = sensitivity / math.sqrt(2.0 * rho)
        spent = stated_epsilon(sensitivity**2 / (2.0 * sigma**2), own_delta, s.epsilon)
        entries = [["effects", "discrete gaussian (zCDP)", spent, own_delta]]
        noise, step, scale, kind = (sigma, bound, a), 2.0**-GRID_BITS, sigma, "gaussian"
    else:
        changed = 2 if s.unit == "rating" else 2 * (n_items if selection is None else k)
        scale_global = laplace_scale(s.share * s.epsilon, 2.0, max_changed=2,
                                     name="global_share * epsilon")
        scale_items = laplace_scale((1.0 - s.share) * s.epsilon, 2.0, max_changed=changed,
                                    name="(1 - global_share) * epsilon")
        entries = [["global effect", "laplace (lattice)",
                    laplace_epsilon(scale_global, 2.0, max_changed=2), 0.0],
                   ["item effects", "laplace (lattice)",
                    laplace_epsilon(scale_items, 2.0, max_changed=changed), 0.0]]
        step = laplace_grid(scale_items)
        noise, scale, kind = (scale_global, scale_items), scale_items / step, "laplace"
    if selection is None:
        return ReleasePlan(noise, [tuple(entry) for entry in entries], rho=rho)
    signal = math.ceil(1.0 / step)          # a unit adds at most 1 to an item's weight
    steps = threshold_steps(kind, scale, selection.per_stage, max_partitions=k, signal=signal)
    added = selection_delta(kind, scale, steps, max_partitions=k, signal=signal)
    entries[-1][0] += " (items by partition selection)"
    entries[-1][3] += added
    threshold = steps * step
    rule = selection_rule(threshold, threshold / (scale * step), added, s, k)
    return ReleasePlan(noise, [tuple(entry) for entry in entries], threshold, added, rule, rho)


def selection_rule(threshold: float, scales: float, added: float, s: Settings, k: int) -> str:
    """The partition selection's rule as the report states it (public numbers only)."""
    return (f"an item is released when its noisy weight is at least {threshold:.4g} "
            f"({scales:.3g} noise scales), a threshold that adds δ = {added:.2g} (a bound on "
            f"the chance that one of the k = {k} items one {s.unit} can bring alone passes "
            "it, each of weight at most 1" + (
                "; each user contributes to at most k items, a random subset beyond)"
                if s.unit == "user" else ")"))


def reselect(weights: np.ndarray, sigma: float, selection: SelectionBudget,
             s: Settings) -> tuple[np.ndarray, float, str]:
    r"""The items chosen again on the average of two Gaussian releases (`fit_part`'s
    `more`): noisy `weights` whose noise, a weighted sum of two discrete Gaussians, is
    `sigma`-sub-Gaussian (grid steps), against the threshold whose δ is within
    `selection.per_stage`.  Returns the listed mask, the δ added and the rule."""
    k = 1 if s.unit == "rating" else s.cap
    signal = 2**GRID_BITS                   # a unit adds at most 1 to an item's weight
    steps = threshold_steps("subgaussian", sigma, selection.per_stage, max_partitions=k,
                            signal=signal)
    added = selection_delta("subgaussian", sigma, steps, max_partitions=k, signal=signal)
    threshold = steps * 2.0**-GRID_BITS
    rule = selection_rule(threshold, steps / sigma, added, s, k) + (
        "; chosen on the average of two releases, both charged")
    return weights >= threshold, added, rule


def release_sums(parts: Contributions, mechanism: str, noise: tuple) -> np.ndarray:
    r"""The true vector a release adds its noise to, from units' `parts` (a partition's
    users, or all of them): with the Gaussian, the global entries scaled by $a$ and
    everything on the grid $2^{-12}$, each unit's integer vector clipped to ℓ2 norm
    $K = \lfloor \text{bound} \cdot 2^{12} \rfloor$ (`noise` $= (\sigma, \text{bound}, a)$
    from [`release_plan`][dprec.endtoend.dp_baseline.release_plan]): exact integers, whose
    sum over partitions of the units is the same in any order; with Laplace, the totals
    (`Contributions.totals`).  A unit is clipped within its own entries alone."""
    if mechanism == "gaussian":
        _, bound, a = noise
        values = np.where(parts.global_rows, a * parts.values, parts.values)
        sums, _ = integer_l2_sums(parts.rows, parts.columns, values, parts.n_coordinates,
                                  bound, GRID_BITS)
        return sums
    return parts.totals()


def check_grid_units(n_units: int, bound: float) -> None:
    """Refuse integer sums of `n_units` units, each clipped to `bound` on the grid, that
    could pass $2^{52}$ (what `integer_l2_sums` checks within one call, for the sum of
    the partitions' partial sums).

    Raises
    ------
    ValueError
        As `integer_l2_sums`.
    """
    if float(n_units) * grid_sensitivity(bound, GRID_BITS) >= 2.0**52:
        raise ValueError("the integer sums could pass 2^52: lower bits")


def gaussian_release(sums: Contributions | np.ndarray, rng: np.random.Generator,
                     noise: tuple[float, float, float]) -> tuple[np.ndarray, tuple]:
    r"""The discrete Gaussian release of the whole vector: its integer `sums` (from
    [`release_sums`][dprec.endtoend.effects_release.release_sums], which computes them
    here from `Contributions`) plus noise of scale $\sigma$; `noise`
    $= (\sigma, \text{bound}, a)$ from [`release_plan`][dprec.endtoend.dp_baseline.release_plan].

    Returns the noisy vector (the global pair divided back by $a$) and the standard
    deviations of the noise on an item sum and weight (in units of $C$ and of the
    weights) and on each of the global pair.
    """
    sigma, _, a = noise
    if isinstance(sums, Contributions):
        sums = release_sums(sums, "gaussian", noise)
    noisy = discrete_gaussian(sums, sigma, rng) * 2.0**-GRID_BITS
    noisy[-2:] /= a
    sd = sigma * 2.0**-GRID_BITS
    return noisy, (sd, sd, sd / a)


def laplace_release(totals: Contributions | np.ndarray, rng: np.random.Generator,
                    noise: tuple[float, float]) -> tuple[np.ndarray, tuple]:
    """The two Laplace releases (global, then items) of the `totals` (or those of
    `Contributions`) at the scales `noise` (from
    [`release_plan`][dprec.endtoend.dp_baseline.release_plan]); the standard deviations of the item
    noise (sum, weight) and of the global pair's."""
    scale_global, scale_items = noise
    if isinstance(totals, Contributions):
        totals = totals.totals()
    noisy = np.concatenate([laplace(totals[:-2], scale_items, rng),
                            laplace(totals[-2:], scale_global, rng)])
    sd = math.sqrt(2.0) * scale_items
    return noisy, (sd, sd, math.sqrt(2.0) * scale_global)
