"""Plumbing shared by dprec's Surprise algorithms' batched ``test``."""

from __future__ import annotations

import gc
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from itertools import repeat

import numpy as np
from surprise.prediction_algorithms.predictions import Prediction

#: Surprise's own message for an unknown user or item (``KNNBasic.estimate``)
UNKNOWN = "User and/or item is unknown."


def inner_ids(trainset, testset) -> tuple[tuple, tuple, tuple, np.ndarray, np.ndarray]:
    """``(uids, iids, r_uis, users, items)``: the raw columns of ``testset`` and the
    inner ids of its users and items (``-1`` where the trainset does not know them)."""
    uids, iids, r_uis = testset_columns(testset)
    users = np.fromiter(map(trainset._raw2inner_id_users.get, uids, repeat(-1)), np.int64,
                        len(uids))
    items = np.fromiter(map(trainset._raw2inner_id_items.get, iids, repeat(-1)), np.int64,
                        len(iids))
    return uids, iids, r_uis, users, items


def testset_columns(testset) -> tuple[tuple, tuple, tuple]:
    """`(uids, iids, r_uis)`: the columns of `testset`, any iterable of `(uid, iid, r_ui)`
    rows (empty tuples for an empty one), read from its arrays without a tuple per row
    when it has them (`rating_columns()`, as `dprec.datasets.ArrayTestset`).

    Raises
    ------
    TypeError
        If `testset` is not an iterable of rows (naming `testset`).
    ValueError
        If a row has not 3 fields (Surprise's `AlgoBase.test` raises too): naming
        `testset`, the row and the rows expected.
    """
    if callable(getattr(testset, "rating_columns", None)):    # an ArrayTestset
        return tuple(tuple(column.tolist()) for column in testset.rating_columns())
    try:
        rows = testset if isinstance(testset, (list, tuple)) else list(testset)
    except TypeError as error:
        raise TypeError("testset must be an iterable of (uid, iid, r_ui) rows (e.g. "
                        f"trainset.build_testset()), got {type(testset).__name__}") from error
    if not rows:
        return (), (), ()
    try:
        lengths = np.fromiter(map(len, rows), np.int64, len(rows))
    except TypeError as error:
        row = next(row for row in rows if not hasattr(row, "__len__"))
        raise TypeError("testset must hold (uid, iid, r_ui) rows (e.g. "
                        f"trainset.build_testset()), got a row {row!r}") from error
    wrong = np.flatnonzero(lengths != 3)
    if len(wrong):
        raise ValueError(f"testset must hold (uid, iid, r_ui) rows (e.g. "
                         f"trainset.build_testset()), but row {wrong[0]} has "
                         f"{lengths[wrong[0]]} value(s): {rows[wrong[0]]!r}")
    with cyclic_gc_paused():  # zip(*rows) makes one iterator object per rating
        uids, iids, r_uis = zip(*rows)
    return uids, iids, r_uis


def raw_to_inner(trainset, users: bool = True) -> dict:
    """A new dict ``raw id -> inner id`` of the trainset's users (items if not ``users``):
    Surprise keeps it private (``Trainset._raw2inner_id_*``); dprec reads it here only."""
    return dict(_raw2inner(trainset, users))


def raw_ids(trainset, users: bool = True) -> list:
    """The raw ids of the trainset's users (items if not ``users``) by inner id:
    ``[trainset.to_raw_uid(u) for u in range(trainset.n_users)]``, read from the
    id dict at once when its order is the inner ids' (as Surprise builds it)."""
    mapping = _raw2inner(trainset, users)
    inner = np.fromiter(mapping.values(), np.int64, len(mapping))
    if np.array_equal(inner, np.arange(len(mapping))):
        return list(mapping)
    return [raw for _, raw in sorted(zip(inner.tolist(), mapping))]


def _raw2inner(trainset, users: bool) -> dict:
    return trainset._raw2inner_id_users if users else trainset._raw2inner_id_items


@contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while building many small containers.

    A batched ``test`` creates two containers per prediction (its ``details``
    dict and its ``Prediction`` tuple); every few hundred of them trigger a
    collection that walks the caller's live objects (the dataset, the
    trainset's dicts, earlier predictions) although none of them can form a
    cycle.  On MovieLens 100k that walk cost more than the estimates.  The
    collector's previous state is restored on exit; reference counting frees
    memory as usual meanwhile.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def predictions(trainset, uids, iids, r_uis, est: np.ndarray, details: Iterable[dict],
                verbose: bool = False) -> list[Prediction]:
    """Surprise ``Prediction`` tuples, estimates clipped to the rating scale as
    ``AlgoBase.predict`` clips them.

    ``details`` may be lazy (a generator): its dicts are then built here,
    with the tuples, while the cyclic garbage collector is paused.
    """
    low, high = trainset.rating_scale
    est = np.minimum(high, np.maximum(low, est))
    with cyclic_gc_paused():
        # tuple.__new__ builds the namedtuple in C (Prediction's own __new__ is Python)
        result = list(map(tuple.__new__, repeat(Prediction),
                          zip(uids, iids, r_uis, est.tolist(), details)))
    if verbose:
        for prediction in result:
            print(prediction)
    return result
