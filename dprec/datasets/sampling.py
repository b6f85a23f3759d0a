r"""Who rates which items: weighted sampling without replacement, per user.

User $u$ draws $n_u$ distinct items by *successive sampling* with weights
$w_{ui} = e^{\ell_i + \lambda\, p_u \cdot q_i}$: the first item with
probability $w_{ui} / \sum_j w_{uj}$, each next one among the items not yet
drawn, again in proportion to the weights.  Two samplers draw from that law:

* `dense_sample` (Efraimidis–Spirakis keys for every user and item, in dense
  blocks): time and memory grow with users $\times$ items;
* `sparse_sample` (rejection from the popularity, repeats dropped): time grows
  with the ratings, for shapes of $10^{10}$ cells.

[`synthetic`][dprec.datasets.generator.synthetic] uses the first up to `DENSE_CELLS`
cells (so its datasets up to there are those it always gave) and the second beyond.
"""

from __future__ import annotations

import numpy as np

from ..utils._arrays import segment_ids, segment_positions

__all__ = ["DENSE_CELLS", "dense_sample", "sparse_sample"]

#: Shapes of at most this many cells (users x items) are sampled densely.
DENSE_CELLS = 10**9
# Cells (users x items) of the dense block sampled at once.
_BLOCK_CELLS = 1 << 22
# Proposals drawn at once by the sparse sampler.
_CHUNK = 1 << 18
# Users whose bounds and pilot acceptance are computed at once.
_USER_BLOCK = 1 << 14
# Items of the pilot sample estimating each user's acceptance rate.
_PILOT = 256
# Margin of the per-user bound (against rounding: an acceptance probability never
# exceeds 1).
_BOUND_MARGIN = 1e-9


def dense_sample(rng: np.random.Generator, log_popularity: np.ndarray,
                 user_factors: np.ndarray, item_factors: np.ndarray, counts: np.ndarray,
                 selection_bias: float) -> np.ndarray:
    r"""Each user's `counts` items, drawn by Efraimidis–Spirakis over all items.

    User $u$ keeps the $n_u$ items of smallest key $\log E_{ui} - \log w_{ui}$
    ($E_{ui}$ standard exponential), in the order of their keys: the items
    in the order successive sampling draws them.

    Returns
    -------
    ndarray of int64
        The items of user 0, then of user 1, ..., each user's in draw order.
    """
    n_users, n_items = len(counts), len(log_popularity)
    block = max(1, _BLOCK_CELLS // n_items)
    column = np.arange(n_items)
    chosen = []
    for start in range(0, n_users, block):
        stop = min(start + block, n_users)
        log_weight = log_popularity[None, :] + selection_bias * (
            user_factors[start:stop] @ item_factors.T)
        # Efraimidis-Spirakis: smallest E / w, i.e. smallest log(E) - log(w); only the
        # block's largest count of smallest keys is sorted, not the whole row
        with np.errstate(divide="ignore"):  # an exponential draw of exactly 0 -> -inf
            keys = np.log(rng.standard_exponential((stop - start, n_items))) - log_weight
        most = int(counts[start:stop].max())
        smallest = np.argpartition(keys, most - 1, axis=1)[:, :most]
        order = np.take_along_axis(smallest, np.argsort(
            np.take_along_axis(keys, smallest, axis=1), axis=1), axis=1)
        chosen.append(order[column[None, :most] < counts[start:stop, None]])
    return np.concatenate(chosen).astype(np.int64)


def _bounds(user_factors: np.ndarray, item_factors: np.ndarray,
            groups: np.ndarray) -> np.ndarray:
    r"""$B_u \ge \max_i p_u \cdot q_i$: over the groups $g$ of items,
    $\max_g p_u \cdot c_g + \|p_u\| r_g$ ($c_g$ the mean of the group's factors,
    $r_g$ its largest distance to it; Cauchy–Schwarz)."""
    labels, members = np.unique(groups, return_inverse=True)
    sizes = np.bincount(members, minlength=len(labels)).astype(np.float64)
    centres = np.zeros((len(labels), item_factors.shape[1]))
    np.add.at(centres, members, item_factors)
    centres /= sizes[:, None]
    distance = np.linalg.norm(item_factors - centres[members], axis=1)
    radius = np.zeros(len(labels))
    np.maximum.at(radius, members, distance)
    bound = np.empty(len(user_factors))
    for start in range(0, len(user_factors), _USER_BLOCK):
        p = user_factors[start:start + _USER_BLOCK]
        bound[start:start + _USER_BLOCK] = np.max(
            p @ centres.T + np.linalg.norm(p, axis=1)[:, None] * radius[None, :], axis=1)
    return bound + _BOUND_MARGIN * (1.0 + np.abs(bound))


def sparse_sample(rng: np.random.Generator, log_popularity: np.ndarray,
                  user_factors: np.ndarray, item_factors: np.ndarray, counts: np.ndarray,
                  selection_bias: float, groups: np.ndarray | None = None) -> np.ndarray:
    r"""Each user's `counts` items by successive sampling, at a cost that grows
    with the ratings (and the users' acceptance rates), not with users $\times$ items.

    The law is `dense_sample`'s, exactly up to floating point:

    1. **Successive sampling is sampling with replacement, repeats dropped.**
       Given the set $S$ of items a user has drawn so far, the next draw with
       replacement that falls outside $S$ is item $i \notin S$ with probability
       $w_{ui} / \sum_{j \notin S} w_{uj}$: the distinct items in the order of
       their first draw follow the successive-sampling law, which is the law of
       Efraimidis–Spirakis' keys in increasing order.
    2. **Draws with replacement by rejection.**  An item is proposed from the
       popularity, $\pi_i \propto e^{\ell_i}$ (Walker's alias method),
       and accepted with probability $e^{\lambda (p_u \cdot q_i - B_u)} \le 1$,
       where $B_u \ge \max_i p_u \cdot q_i$ (per group of items $g$:
       $p_u \cdot c_g + \|p_u\| r_g$, with $c_g$ the group's mean factor and
       $r_g$ its largest distance to it; the groups are `groups`, the
       generator's clusters).  Accepted proposals are independent draws
       with probability $\propto \pi_i e^{\lambda p_u \cdot q_i} \propto w_{ui}$.
    3. **Rounds.**  Each user draws its proposals in rounds sized by a pilot
       estimate of its acceptance rate; within a round the proposals are in
       draw order and the user keeps its first new items up to its count: the
       same stream as one proposal at a time.
    4. **A costly user's rest.**  A user whose proposals would exceed the
       number of items (a user rating most of the popular items draws many
       repeats) gets the rest of its items from Efraimidis–Spirakis keys over
       the items it has not drawn.  The switch depends only on the past
       draws, and given the drawn set the rest of a successive sample is a
       successive sample of the other items: the law is unchanged and no user
       costs more than about twice a dense row.

    Parameters
    ----------
    rng : numpy.random.Generator
    log_popularity : ndarray of shape (n_items,)
        $\ell_i$.
    user_factors, item_factors : ndarray of shape (n_users, k), (n_items, k)
        $p_u$, $q_i$.
    counts : ndarray of int of shape (n_users,)
        $n_u$, each in `[1, n_items]`.
    selection_bias : float
        $\lambda \ge 0$.
    groups : ndarray of int of shape (n_items,), optional
        A group per item, for the bounds $B_u$ (any grouping is exact; groups of
        close factors accept more); default one group.

    Returns
    -------
    ndarray of int64
        The items of user 0, then of user 1, ..., each user's in draw order.
    """
    n_users, n_items = len(counts), len(log_popularity)
    counts = np.asarray(counts, dtype=np.int64)
    table = _alias_table(np.exp(log_popularity - log_popularity.max()))
    bound = _bounds(user_factors, item_factors,
                    np.zeros(n_items, np.int64) if groups is None else groups)
    rate = _pilot_rates(rng, table, user_factors, item_factors, bound, selection_bias)
    offsets = np.concatenate([[0], np.cumsum(counts)])
    items = np.empty(offsets[-1], dtype=np.int64)
    filled = np.zeros(n_users, dtype=np.int64)
    spent = np.zeros(n_users, dtype=np.int64)
    active = np.arange(n_users)
    while len(active):
        need = counts[active] - filled[active]
        planned = np.ceil(1.25 * need / rate[active]).astype(np.int64) + 8
        costly = spent[active] + planned > n_items
        _dense_rest(rng, log_popularity, user_factors, item_factors, selection_bias,
                    active[costly], items, offsets, filled, counts)
        active, planned = active[~costly], planned[~costly]
        spent[active] += planned
        ends = np.cumsum(planned)
        starts = np.searchsorted(ends, np.arange(0, ends[-1], _CHUNK), side="right") \
            if len(active) else np.zeros(0, np.int64)
        edges = np.append(starts, len(active))
        for first, last in zip(edges[:-1], edges[1:], strict=True):
            if last <= first:
                continue
            chunk = active[first:last]
            drawn = _propose(rng, table, user_factors, item_factors, bound,
                             selection_bias, chunk, planned[first:last])
            got = _keep_new(drawn, chunk, items, offsets, filled, counts, n_items)
            # the yield of new items per proposal, with one pseudo-item at the old rate
            rate[chunk] = (got + 1.0) / (planned[first:last] + 1.0 / rate[chunk])
        active = active[filled[active] < counts[active]]
    return items


def _pilot_rates(rng: np.random.Generator, table: tuple[np.ndarray, np.ndarray],
                 user_factors: np.ndarray, item_factors: np.ndarray, bound: np.ndarray,
                 selection_bias: float) -> np.ndarray:
    """Each user's acceptance rate, estimated on `_PILOT` items drawn from the
    popularity (only the number of proposals depends on it, never which items)."""
    pilot = _draw(table, rng.random(_PILOT))
    rate = np.empty(len(user_factors))
    for start in range(0, len(user_factors), _USER_BLOCK):
        part = slice(start, start + _USER_BLOCK)
        rate[part] = np.mean(np.exp(selection_bias * (
            user_factors[part] @ item_factors[pilot].T - bound[part, None])), axis=1)
    return np.clip(rate, 1.0 / len(table[0]), 1.0)


def _alias_table(weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Walker's alias table of `weights` (Vose's construction): item ``j`` with
    probability ``threshold[j]``, else ``alias[j]``, for ``j`` uniform, is item ``i``
    with probability ``weights[i] / weights.sum()``.  A loop over the items, not
    the draws."""
    n = len(weights)
    scaled = weights * (n / weights.sum())
    threshold = np.ones(n)
    alias = np.arange(n)
    small = np.flatnonzero(scaled < 1.0).tolist()
    large = np.flatnonzero(scaled >= 1.0).tolist()
    values = scaled.tolist()
    while small and large:
        low, high = small.pop(), large[-1]
        threshold[low], alias[low] = values[low], high
        values[high] -= 1.0 - values[low]
        if values[high] < 1.0:
            small.append(large.pop())
    return threshold, alias


def _draw(table: tuple[np.ndarray, np.ndarray], uniform: np.ndarray) -> np.ndarray:
    """Items drawn from an alias table, one uniform each (its integer part picks the
    column, its fraction decides between the column and its alias)."""
    threshold, alias = table
    scaled = uniform * len(threshold)
    column = np.minimum(scaled.astype(np.int64), len(threshold) - 1)
    return np.where(scaled - column < threshold[column], column, alias[column])


def _propose(rng: np.random.Generator, table: tuple[np.ndarray, np.ndarray],
             user_factors: np.ndarray,
             item_factors: np.ndarray, bound: np.ndarray, selection_bias: float,
             users: np.ndarray, planned: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`planned` proposals per user of `users`, in draw order: ``(owner, item)`` of
    the accepted ones (``owner`` indexes `users`)."""
    owner = segment_ids(planned)
    item = _draw(table, rng.random(len(owner)))
    affinity = np.einsum("ij,ij->i", np.repeat(user_factors[users], planned, axis=0),
                         item_factors[item])
    # accept with probability exp(lambda (p.q - B)): E > lambda (B - p.q), E ~ Exp(1)
    accepted = rng.standard_exponential(len(owner)) > selection_bias * (
        np.repeat(bound[users], planned) - affinity)
    return owner[accepted], item[accepted]


def _keep_new(drawn: tuple[np.ndarray, np.ndarray], users: np.ndarray, items: np.ndarray,
              offsets: np.ndarray, filled: np.ndarray, counts: np.ndarray,
              n_items: int) -> np.ndarray:
    """Append to each user's items its accepted draws not drawn before, in draw
    order, up to its count; returns how many each user of `users` got."""
    owner, item = drawn
    before = filled[users]
    old_owner = segment_ids(before)
    old_item = items[np.repeat(offsets[users], before) + segment_positions(before)]
    keys = np.concatenate([old_owner * n_items + old_item, owner * n_items + item])
    order = np.argsort(keys, kind="stable")           # old keys first within a key
    ordered = keys[order]
    first = np.ones(len(keys), dtype=bool)
    first[1:] = ordered[1:] != ordered[:-1]
    fresh = np.sort(order[first]) - len(old_owner)    # first draws of new items
    fresh = fresh[fresh >= 0]
    owner, item = owner[fresh], item[fresh]
    starts = np.searchsorted(owner, np.arange(len(users)))
    rank = np.arange(len(owner)) - starts[owner]
    keep = rank < (counts[users] - before)[owner]
    owner, item, rank = owner[keep], item[keep], rank[keep]
    items[offsets[users][owner] + before[owner] + rank] = item
    got = np.bincount(owner, minlength=len(users))
    filled[users] += got
    return got


def _dense_rest(rng: np.random.Generator, log_popularity: np.ndarray,
                user_factors: np.ndarray, item_factors: np.ndarray, selection_bias: float,
                users: np.ndarray, items: np.ndarray, offsets: np.ndarray,
                filled: np.ndarray, counts: np.ndarray) -> None:
    """Complete the items of `users` with Efraimidis–Spirakis keys over the items
    each has not drawn (in key order, after the ones it has)."""
    n_items = len(log_popularity)
    block = max(1, _BLOCK_CELLS // n_items)
    for start in range(0, len(users), block):
        part = users[start:start + block]
        log_weight = log_popularity[None, :] + selection_bias * (
            user_factors[part] @ item_factors.T)
        with np.errstate(divide="ignore"):
            keys = np.log(rng.standard_exponential((len(part), n_items))) - log_weight
        before = filled[part]
        rows = segment_ids(before)
        taken = items[np.repeat(offsets[part], before) + segment_positions(before)]
        keys[rows, taken] = np.inf
        need = counts[part] - before
        most = int(need.max())
        smallest = np.argpartition(keys, most - 1, axis=1)[:, :most]
        order = np.take_along_axis(smallest, np.argsort(
            np.take_along_axis(keys, smallest, axis=1), axis=1), axis=1)
        row, rank = np.nonzero(np.arange(most)[None, :] < need[:, None])
        items[offsets[part][row] + before[row] + rank] = order[row, rank]
        filled[part] = counts[part]

