"""The local models' private item list (`dprec.endtoend.item_selection`): its entry, its threshold,
and what it lists — the sole rater's item only through its δ."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from surprise import Dataset, Reader

from dprec.accountant.ledger import PrivacyAccountant, Status, Unit
from dprec.endtoend import item_selection
from dprec.endtoend.item_selection import CENTRAL, item_list_entry, select_items
from dprec.endtoend.rating_space import SCOPE, Catalogue, RatingSpace
from dprec.mechanisms import laplace, laplace_epsilon, laplace_grid, laplace_scale
from dprec.mechanisms.partition_selection import selection_delta


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
    # the rule states the threshold in noise scales, 1/ε each
    assert f"({threshold * epsilon:.3g} noise scales)" in entry.note
    # and the report names the mechanism that ran: `laplace`'s lattice sampler, thresholded
    assert entry.mechanism == "laplace (lattice) partition selection"


@pytest.mark.parametrize(("epsilon", "delta", "name"), [(0.0, 1e-5, "epsilon"),
                                                         (1.0, 0.0, "delta"),
                                                         (1.0, 1.0, "delta")])
def test_bad_budgets_are_named(epsilon, delta, name):
    with pytest.raises(ValueError) as info:
        item_list_entry(epsilon, delta, Unit.RATING)
    assert str(info.value).startswith(f"{name} must be"), str(info.value)


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


def test_the_noise_drawn_is_the_one_the_entry_charges(monkeypatch):
    # the counts get lattice Laplace noise of scale 1/ε (one unit moves one count by 1):
    # the ε of the entry is that noise's, nothing more
    scales = []

    def spy(values, scale, rng, *args, **kwargs):
        scales.append((scale, args, kwargs))
        return laplace(values, scale, rng, *args, **kwargs)

    monkeypatch.setattr(item_selection, "laplace", spy)
    rows = [(f"u{u}", f"i{u % 4}", 3.0) for u in range(40)]
    _, entry = select_items(space_of(rows), 0.5, 1e-5, Unit.RATING, np.random.default_rng(0))
    ((scale, args, kwargs),) = scales
    assert scale == pytest.approx(2.0) and not args and not kwargs     # the lattice sampler
    assert laplace_epsilon(scale, 1.0) == entry.epsilon == pytest.approx(0.5)


def test_a_count_at_the_threshold_is_listed_and_the_order_kept(monkeypatch):
    # "listed when its noisy count is at least T": a noisy count of exactly T (the lattice
    # puts outputs on T's grid, so this has a positive probability) is listed, one grid
    # step below is not, as selection_delta's tail P(Z >= m - w) counts; the listed items
    # keep the catalogue's order, with their own columns
    rows = [("u1", "a", 1.0), ("u1", "b", 2.0), ("u2", "c", 3.0), ("u2", "d", 4.0),
            ("u3", "a", 5.0)]
    space = space_of(rows)
    entry, threshold = item_list_entry(1.0, 1e-5, Unit.RATING)
    step = laplace_grid(laplace_scale(1.0, 1.0))
    noisy = np.array([threshold + step, threshold - step, threshold, 0.0])   # a, b, c, d
    monkeypatch.setattr(item_selection, "laplace", lambda values, scale, rng: noisy)
    chosen, got = select_items(space, 1.0, 1e-5, Unit.RATING, np.random.default_rng(0))
    assert got == entry
    assert chosen.items == Catalogue(("a", "c"), {"a": 0, "c": 1}, False, entry.note)
    assert chosen.users == space.users
    assert (chosen.matrix.toarray() == space.matrix.toarray()[:, [0, 2]]).all()


def test_items_nobody_holds_are_counted_as_zeros():
    # `select_local` selects on the interactions, where an item of the list may have no
    # holder at all (its ratings below the implicit threshold), last in the list too: its
    # count is 0, not missing
    space = space_of([(f"u{u}", item, 4.0) for u in range(50) for item in ("a", "b", "z")])
    held = space.matrix.copy()
    held.data[:] = 1.0
    held = held.multiply(np.array([[1.0, 1.0, 0.0]])).tocsr()        # nobody holds "z"
    held.eliminate_zeros()
    bare = RatingSpace(space.users, space.items, held)
    chosen, _ = select_items(bare, 1.0, 1e-5, Unit.RATING, np.random.default_rng(3))
    assert chosen.items.ids == ("a", "b") and chosen.matrix.shape == (50, 2)


@pytest.mark.parametrize("keep", [np.array([1, 0, 1]), np.array([True, False]),
                                  np.array([True, False, True, True])])
def test_a_selection_is_a_boolean_mask_of_every_item(keep):
    # an integer mask or one of another length is refused (a shorter mask would silently
    # drop the items past its end)
    space = space_of([("u", "a", 1.0), ("u", "b", 2.0), ("v", "c", 3.0)])
    with pytest.raises(ValueError) as info:
        space.selected(keep, "rule")
    assert str(info.value).startswith("keep must be a boolean mask of the 3 items")


@pytest.mark.parametrize("unit", [Unit.RATING, Unit.USER])
def test_lists_read_from_the_data_put_their_boundary_users_outside(unit):
    """A space whose lists are read from the data (no catalogue, no selection: no model's
    default since #51, the fallback of `declare_scope`): the sole rater of an item is
    outside either unit's guarantee; the user list puts every user outside the user-level
    one and a single-rating user outside the rating-level one; each reason is printed."""
    space = space_of({"user": ["a", "a", "b", "b", "solo", "solo", "one"],
                      "item": ["x", "y", "x", "y", "x", "z", "y"],
                      "rating": [4.0, 3.0, 5.0, 2.0, 1.0, 4.0, 3.0]})
    assert not space.items.given and space.items.selection is None
    accountant = PrivacyAccountant(list(space.users.ids))
    space.declare_scope(accountant, unit)
    expected = {"a", "b", "solo", "one"} if unit is Unit.USER else {"solo", "one"}
    assert set(accountant.out_of_scope_users(unit)) == expected
    reason = accountant.scope_rule(unit)
    assert SCOPE["sole rater"] in reason
    assert SCOPE["any user" if unit is Unit.USER else "single rating"] in reason
    assert accountant.conditions == [SCOPE["items from data"], SCOPE["users from data"]]
    # nobody is outside for the user list when it is no release (joint DP)
    private = PrivacyAccountant(list(space.users.ids))
    space.declare_scope(private, unit, user_list=False)
    assert private.out_of_scope_users(unit) == ["solo"]
    assert private.conditions == [SCOPE["items from data"], SCOPE["users private"]]
