"""Descending order with ties in column order, as Surprise's ``heapq.nlargest`` keeps them."""

from __future__ import annotations

import numpy as np


def stable_descending_order(values: np.ndarray, prefix: int | None,
                             keep_tail: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Columns of each row in descending order of ``values``, ties in column order.

    This is the order of ``heapq.nlargest`` (what Surprise's KNNBasic uses).
    With ``prefix`` set, only the first ``prefix`` columns of that order are
    sorted, found by a partition in linear time instead of a full sort; with
    ``keep_tail`` every column then follows in column order, those of the
    prefix masked (``-inf``), else the rest is left out.

    Returns ``(order, sorted_values)``: the columns and their values.
    """
    n_rows, n_cols = values.shape
    if prefix is None or prefix >= n_cols:
        order = np.argsort(-values, axis=1, kind="stable")
        return order, np.take_along_axis(values, order, axis=1)
    threshold = np.partition(values, n_cols - prefix, axis=1)[:, n_cols - prefix, None]
    taken = values >= threshold
    spill = np.flatnonzero(taken.sum(axis=1) > prefix)  # ties at the threshold: first come
    if len(spill):
        row_values, row_threshold = values[spill], threshold[spill]
        ties = row_values == row_threshold
        room = prefix - (row_values > row_threshold).sum(axis=1, keepdims=True)
        taken[spill] = (row_values > row_threshold) | (ties & (np.cumsum(ties, axis=1) <= room))
    columns = (np.flatnonzero(taken) % n_cols).reshape(n_rows, prefix)
    head_values = np.take_along_axis(values, columns, axis=1)
    inner = np.argsort(-head_values, axis=1, kind="stable")
    head = np.take_along_axis(columns, inner, axis=1)
    head_values = np.take_along_axis(head_values, inner, axis=1)
    if not keep_tail:
        return head, head_values
    # the tail: every column in column order, those already in the head masked out
    order = np.concatenate([head, np.broadcast_to(np.arange(n_cols), (n_rows, n_cols))], axis=1)
    return order, np.concatenate([head_values, np.where(taken, -np.inf, values)], axis=1)
