"""The local models' private item list (`dprec.item_selection`): its entry, its threshold,
and what it lists — the sole rater's item only through its δ."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from surprise import Dataset, Reader

from dprec.item_selection import CENTRAL, item_list_entry, select_items
from dprec.ledger import Status, Unit
from dprec.mechanisms import laplace_epsilon, laplace_grid, laplace_scale
from dprec.mechanisms.partition_selection import selection_delta
from dprec.rating_space import RatingSpace


def space_of(rows, items=None) -> RatingSpace:
    data = Dataset.load_from_df(pd.DataFrame(rows), Reader(rating_scale=(1, 5)))
    return RatingSpace.build(data.build_full_trainset(), items=items)


@pytest.mark.parametrize(("epsilon", "delta"), [(0.1, 1e-5), (1.0, 1e-6), (3.0, 1e-3)])
def test_the_entry_and_threshold_are_the_laplace_selections(epsilon, delta):
    entry, threshold = item_list_entry(epsilon, delta, Unit.SET_ITEM)
    scale = laplace_scale(epsilon, 1.0)
    step = laplace_grid(scale)
    steps = round(threshold / step)
    assert threshold == steps * step
    signal = math.ceil(1.0 / step)
    assert entry.delta == selection_delta("laplace", scale / step, steps, max_partitions=1,
                                          signal=signal) <= delta
    assert selection_delta("laplace", scale / step, steps - 1, max_partitions=1,
                           signal=signal) > delta                     # the smallest
    assert entry.epsilon == laplace_epsilon(scale, 1.0) and entry.unit is Unit.SET_ITEM
    assert entry.status is Status.HOLDS and entry.note.endswith(CENTRAL)
    assert f"{threshold:.4g}" in entry.note and 1.0 < threshold / scale < 40.0


@pytest.mark.parametrize(("epsilon", "delta", "name"), [(0.0, 1e-5, "epsilon"),
                                                         (1.0, 0.0, "delta"),
                                                         (1.0, 1.0, "delta")])
def test_bad_budgets_are_named(epsilon, delta, name):
    with pytest.raises(ValueError, match=name):
        item_list_entry(epsilon, delta, Unit.RATING)


def test_the_sole_raters_item_is_never_listed_and_the_crowds_are():
    rows = [(f"u{u:03d}", f"i{i}", 4.0) for u in range(60) for i in range(3)]
    rows += [("sole", "i0", 3.0), ("sole", "solo", 5.0)]
    space = space_of(rows)
    rng = np.random.default_rng(0)
    for _ in range(50):
        chosen, entry = select_items(space, 1.0, 1e-5, Unit.RATING, rng)
        assert set(chosen.items.ids) == {"i0", "i1", "i2"}
        assert chosen.items.selection == entry.note and not chosen.items.given
        assert chosen.matrix.shape == (61, 3) and chosen.matrix.nnz == 181
    # at a threshold below one rating's count the sole item would pass: the threshold
    # (not luck) keeps it out
    assert item_list_entry(1.0, 1e-5, Unit.RATING)[1] > 1.0


def test_a_public_catalogue_is_kept_with_no_entry():
    rows = [("a", "x", 4.0), ("b", "y", 2.0)]
    space = space_of(rows, items=["x", "y", "z"])
    kept, entry = select_items(space, 1.0, 1e-5, Unit.RATING, np.random.default_rng(0))
    assert kept is space and entry is None


def test_the_counts_are_of_raters_whatever_the_ratings():
    # a count of users per item, not of their ratings' values: 40 raters at 1 and 40 at 5
    # are listed alike; an item with 3 raters is not
    rows = [(f"u{u}", "low", 1.0) for u in range(40)] + [(f"v{u}", "high", 5.0)
                                                         for u in range(40)]
    rows += [(f"w{u}", "rare", 3.0) for u in range(3)]
    chosen, _ = select_items(space_of(rows), 2.0, 1e-5, Unit.RATING, np.random.default_rng(1))
    assert set(chosen.items.ids) == {"high", "low"}
