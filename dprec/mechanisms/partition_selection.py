r"""Differentially private partition selection: which items a release may name at all.

A model without a public item catalogue must not release an item that exists only
through one unit (the sole rater of an item): its mere presence would show that the
unit is in the data.  Partition selection (Korolova et al. 2009; Gopi et al.,
"Differentially Private Set Union", ICML 2020; Desfontaines, Voss, Gipson &
Mandayam, "Differentially private partition selection", PoPETs 2022; Google's DP
library) releases an item only when its **noisy weight passes a threshold** $T$ that
pure noise passes with a tiny probability.

**The argument** (the one every model here uses).  Let $D'$ be $D$ without one unit,
$N_c$ the noisy statistics of the items both have, $g$ the thresholding and everything
computed after it (which reads listed items only), so that $M(D') = g(N_c(D'))$; and
let $E$ be the event that some item only $D$ has — at most $k$ of them, each of weight
at most $w$ from the unit — passes $T$ in $M(D)$.  Off $E$, $M(D) = g(N_c(D))$, and
$N_c$ is $(\varepsilon, \delta_M)$-DP as the release over a fixed list is, so
$P[M(D) \in S] \le e^\varepsilon P[M(D') \in S] + \delta_M + P(E)$ with
$P(E) \le k\, \bar F(T - w)$.  The other way, let $M^*(D')$ be the release over $D$'s
items (those $D'$ lacks at weight 0), thresholded: it is $(\varepsilon, \delta_M)$-close
to $M(D)$ and equals $M(D')$ but on the event, of probability at most $k \bar F(T)$,
that noise alone passes $T$ on one of those items; so $P[M(D') \in S] \le
e^\varepsilon P[M(D) \in S] + \delta_M + k \bar F(T)$.  $M$ is therefore
$(\varepsilon, \delta_M + k \bar F(T - w))$-DP, and so is anything computed afterwards
from the selected items (adaptive composition: the list is a release).

**Which items count.**  "The items $D$ has" must be the items the *release* holds: those
with a contribution left after any cap.  A column the data has for another reason (an
item whose ratings a per-user cap dropped, or rated only below an interaction threshold)
carries weight 0 but would pass $T$ by noise alone, and one unit can bring any number
of them, past the $k$ of the argument.  So the callers list an item only when a
contribution they count reaches it *and* its noisy weight passes $T$.

[`selection_delta`][dprec.mechanisms.partition_selection.selection_delta] is that added
δ; [`threshold_steps`][dprec.mechanisms.partition_selection.threshold_steps] the
smallest threshold that keeps it within a target.

**The tails**, exact or upper bounds, in integer steps of the noise's lattice:

* discrete Gaussian of scale $\sigma$ (steps): $P(Z \ge m) \le \bar\Phi((m-1)/\sigma)$
  for $m \ge 1$ — each term $e^{-z^2/2\sigma^2}$ is at most its integral over
  $[z-1, z]$, and the normaliser $\sum_z e^{-z^2/2\sigma^2}$ is at least
  $\sqrt{2\pi}\sigma$ (Poisson summation);
* discrete Laplace of scale $t$ (steps), $P(Z = z) \propto q^{|z|}$, $q = e^{-1/t}$:
  $P(Z \ge m) = q^m / (1 + q)$ exactly for $m \ge 1$;
* $\sigma$-sub-Gaussian noise ($E e^{\lambda Z} \le e^{\lambda^2 \sigma^2 / 2}$; the
  discrete Gaussian of scale $\sigma$ is, Canonne, Kamath & Steinke 2020, and so is
  $\sum_j c_j Z_j$ of independent ones, with $\sigma^2 = \sum_j c_j^2 \sigma_j^2$):
  $P(Z \ge m) \le e^{-m^2 / 2\sigma^2}$ (Chernoff).

See [Mechanisms](../mechanisms.md) for the formulas.
"""

from __future__ import annotations

import math

import numpy as np

from ..utils._arrays import segment_positions
from ..utils._validation import check_choice, check_delta, check_int, check_positive

__all__ = ["NOISES", "cap_contributions", "log_noise_tail", "noise_tail", "selection_delta",
           "threshold_steps"]

#: the noises whose tails are known: the discrete Gaussian, the discrete Laplace, and any
#: σ-sub-Gaussian noise (e.g. a weighted sum of independent discrete Gaussians)
NOISES = ("gaussian", "laplace", "subgaussian")

def log_noise_tail(noise: str, scale: float, steps: int) -> float:
    r"""The log of an upper bound on $P(Z \ge m)$, $m$ = `steps` $\ge 1$, for integer noise
    $Z$ of `scale` (in steps): $\bar\Phi((m-1)/\sigma)$ for the discrete Gaussian (by
    `erfc`, and beyond its range $\varphi(x)/x$ capped at $10^{-300}$: still an upper
    bound, and like the others never rising with $m$), $q^m/(1+q)$ for
    the discrete Laplace (exact), $e^{-m^2/2\sigma^2}$ for sub-Gaussian noise.  In logs,
    so that no tail underflows to 0 (a δ of 0 would be a false claim).

    Raises
    ------
    ValueError
        For an unknown `noise`, a `scale` that is not positive and finite, or `steps < 1`.
    """
    noise = check_choice(noise, "noise", NOISES)
    scale = check_positive(scale, "scale")
    steps = check_int(steps, "steps", minimum=1)
    if noise == "laplace":
        return -steps / scale - math.log1p(math.exp(-1.0 / scale))
    if noise == "subgaussian":
        return -0.5 * (steps / scale) ** 2
    x = (steps - 1) / scale
    tail = 0.5 * math.erfc(x / math.sqrt(2.0))
    if tail > 1e-300:
        return math.log(tail)
    # Mills, φ(x)/x, is above the tail by a factor 1 + 1/x² or so: where it takes over, it
    # would rise above the last erfc value, and threshold_steps needs a bound that never
    # rises; the tail is below 1e-300 here, so 1e-300 caps it
    return min(-0.5 * x * x - math.log(x * math.sqrt(2.0 * math.pi)), math.log(1e-300))


def noise_tail(noise: str, scale: float, steps: int) -> float:
    """[`log_noise_tail`][dprec.mechanisms.partition_selection.log_noise_tail], exponentiated."""
    return math.exp(log_noise_tail(noise, scale, steps))


def selection_delta(noise: str, scale: float, steps: int, *, max_partitions: int,
                    signal: int) -> float:
    r"""The δ that thresholding at `steps` adds to an $(\varepsilon, \delta_M)$ release:
    $k\, P(Z \ge m - w)$ ([`noise_tail`][dprec.mechanisms.partition_selection.noise_tail]),
    $k$ = `max_partitions` the most items one unit can bring and $w$ = `signal` the most
    it adds to one item's weight, both in steps (see the module docstring).  At most 1.

    Raises
    ------
    ValueError
        For invalid arguments, naming them (`max_partitions >= 1`, `signal >= 0`).
    """
    k = check_int(max_partitions, "max_partitions", minimum=1)
    signal = check_int(signal, "signal", minimum=0)
    steps = check_int(steps, "steps", minimum=1)
    if steps - signal < 1:
        return 1.0
    return math.exp(min(math.log(k) + log_noise_tail(noise, scale, steps - signal), 0.0))


def threshold_steps(noise: str, scale: float, delta: float, *, max_partitions: int,
                    signal: int) -> int:
    r"""The smallest threshold $m \ge 1$ (in steps of the noise's lattice) whose
    [`selection_delta`][dprec.mechanisms.partition_selection.selection_delta] is at most
    `delta`: a public function of the parameters, never of the data.

    Raises
    ------
    ValueError
        For `delta` not in (0, 1), or another invalid argument, naming it.
    """
    delta = check_delta(delta, "delta")
    if delta == 0.0:
        raise ValueError("delta must be > 0 for partition selection (an item that exists "
                         "through one unit is released with some probability)")
    scale = check_positive(scale, "scale")
    signal = check_int(signal, "signal", minimum=0)
    low, high = signal, signal + 1    # selection_delta(high) <= delta < selection_delta(low)
    while selection_delta(noise, scale, high, max_partitions=max_partitions,
                          signal=signal) > delta:
        low, high = high, signal + 2 * (high - signal)   # ends: the log tail falls unboundedly
    while high - low > 1:
        middle = (low + high) // 2
        if selection_delta(noise, scale, middle, max_partitions=max_partitions,
                           signal=signal) > delta:
            low = middle
        else:
            high = middle
    return high


def cap_contributions(rows: np.ndarray, cap: int, rng: np.random.Generator) -> np.ndarray:
    """The mask of the entries kept when each row (unit) keeps at most `cap` of its
    entries, chosen uniformly at random (contribution bounding: one unit then creates at
    most `cap` items).  `rows` is each entry's unit, in any order; all entries of a row
    with at most `cap` are kept, and no random draw depends on anything but their number.

    Raises
    ------
    ValueError
        For `cap < 1`.
    """
    cap = check_int(cap, "cap", minimum=1)
    rows = np.asarray(rows)
    if not len(rows):
        return np.zeros(0, dtype=bool)
    keys = rng.random(len(rows))
    order = np.lexsort((keys, rows))               # by row, then by the random key
    sorted_rows = rows[order]
    starts = np.flatnonzero(np.r_[True, sorted_rows[1:] != sorted_rows[:-1]])
    rank = segment_positions(np.diff(np.r_[starts, len(rows)]))
    kept = np.empty(len(rows), dtype=bool)
    kept[order] = rank < cap
    return kept
