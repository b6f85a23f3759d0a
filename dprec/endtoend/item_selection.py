r"""A private item list for the models whose users report about every listed item.

The local models ([`LocalKNN`][dprec.LocalKNN], [`ImplicitKNN`][dprec.ImplicitKNN] with
`set_epsilon`, [`PrivatePopularity`][dprec.PrivatePopularity] with
`mechanism="reports"`) have each user randomise a report over *every item of a list*:
the list must be fixed before anyone reports, and a list read from the data names the
sole rater's item.  Without a public catalogue (`items=`) the list is chosen here by
**differentially private partition selection** on the number of users who rated each
item: every rating (or set item) adds 1 to one item's count, so one unit moves one count
by 1 ($k = 1$), and the count gets lattice Laplace noise of scale $1/\varepsilon_s$; an
item is listed when someone counts it and its noisy count reaches the threshold of
[`threshold_steps`][dprec.mechanisms.partition_selection.threshold_steps].  The argument
of [`dprec.mechanisms.partition_selection`][dprec.mechanisms.partition_selection] makes
the pair $(\varepsilon_s, \delta_s)$-DP, $\delta_s$ = `selection_delta`, for
neighbouring datasets that differ in one rating.

This one step is **central**: a curator counts who rated what (not the ratings' values)
and releases only the selected list; every report after it is local.  The report states
it as a condition; give `items=` for a model local from end to end.
"""

from __future__ import annotations

import math

import numpy as np

from ..accountant.ledger import LedgerEntry, Status, Unit
from ..mechanisms import laplace, laplace_epsilon, laplace_grid, laplace_scale
from ..mechanisms.partition_selection import selection_delta, threshold_steps
from ..utils._validation import check_delta, check_positive
from .rating_space import RatingSpace

__all__ = ["CENTRAL", "item_list_entry", "select_items"]

#: what the report adds to the selection's rule: who runs it
CENTRAL = ("; counted by a curator (the users of each item, not their ratings): the only "
           "central step, give items= for a model local from end to end")


def item_list_entry(epsilon: float, delta: float, unit: Unit) -> tuple[LedgerEntry, float]:
    """The ledger entry of [`select_items`][dprec.endtoend.item_selection.select_items] at `epsilon`
    and `delta` (δ its target, the entry's δ what the threshold adds), and the threshold,
    both public functions of the parameters.

    Raises
    ------
    ValueError
        For `epsilon` not positive or `delta` not in (0, 1), naming them.
    """
    epsilon = check_positive(epsilon, "epsilon")
    delta = check_delta(delta, "delta")
    scale = laplace_scale(epsilon, 1.0)
    step = laplace_grid(scale)
    spent = laplace_epsilon(scale, 1.0)
    signal = math.ceil(1.0 / step)          # one unit adds 1 to one count
    steps = threshold_steps("laplace", scale / step, delta, max_partitions=1, signal=signal)
    added = selection_delta("laplace", scale / step, steps, max_partitions=1, signal=signal)
    threshold = steps * step
    rule = (f"an item is listed when its noisy count of users is at least {threshold:.4g} "
            f"({threshold / scale:.3g} noise scales), a threshold that adds δ = {added:.2g}"
            + CENTRAL)
    return LedgerEntry("item list", "laplace (lattice) partition selection", spent, added, unit,
                       Status.HOLDS, "user", rule), threshold


def select_items(space: RatingSpace, epsilon: float, delta: float, unit: Unit,
                 rng: np.random.Generator) -> tuple[RatingSpace, LedgerEntry]:
    """`space` restricted to the items whose noisy count of raters passes the threshold
    (see the module docstring), and the selection's ledger entry.  A public catalogue
    (`space.items.given`) is returned as it is, with no entry (`None`).

    Raises
    ------
    ValueError
        For invalid `epsilon` or `delta` (`item_list_entry`).
    """
    if space.items.given:
        return space, None
    entry, threshold = item_list_entry(epsilon, delta, unit)
    counts = np.bincount(space.matrix.indices, minlength=space.matrix.shape[1])
    noisy = laplace(counts.astype(np.float64), laplace_scale(epsilon, 1.0), rng)
    # an item nobody counts (a column of ratings that are no interactions) is never listed
    return space.selected((counts > 0) & (noisy >= threshold), entry.note), entry
