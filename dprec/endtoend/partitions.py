r"""Sums over users, computed per partition of the users: on this machine's threads or as
tasks on a Dask cluster.

Every statistic the end-to-end private models release is a sum over users of each
user's bounded contribution: [`DPBaseline`][dprec.DPBaseline]'s clipped item and global
sums, [`DPALS`][dprec.DPALS]'s item-side sufficient statistics (each epoch's, from every
user's own factor), [`DPItemKNN`][dprec.DPItemKNN]'s covariance and co-rating weights.
A **partition** is a run of consecutive users (rows of the users × items CSR matrix, in
the canonical sorted order of the user list), cut so that the partitions hold about equal
numbers of ratings; one function of a partition's rows alone returns its partial sums,
each partition runs on a thread (`backend="threads"`) or as a task on the
`dask.distributed` client in scope (`backend="dask"`, the rows sent to the workers once
per statistic), and the partial sums are added in partition order (a left fold, on the
cluster for Dask).  The noise is then drawn **once, on the driver**, from the model's
generator, exactly as in one process: workers never draw noise.

**Nothing data-dependent leaks through the partitioning.**  The boundaries depend on the
users' numbers of ratings (the data) but the release does not depend on them: a user's
row is never split, so each user's clipping (to the ℓ2 or ℓ1 bound the noise is
calibrated to) is the same whatever the boundaries, and the Gaussian sums and the
covariance sums are exact integers on their grids (checked below $2^{52}$ or $2^{53}$),
whose sum is the same in any order.  The only sums that can round differently are the
floating-point totals of the Laplace effects release (`DPBaseline(mechanism="laplace")`),
in their last bit, as with any order of summation, before the lattice sampler rounds them
to its grid; and [`DPALS`][dprec.DPALS]'s users fall back to the eigenvector solve per
block of ratings within a partition (the same ridge solution).  Both backends use the same
boundaries for the same `n_partitions`, hence the same bits.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

import numpy as np
import scipy.sparse as sp

from ..utils._threads import dask_client_in_scope, map_blocks, thread_count
from ..utils._validation import check_choice, check_int

__all__ = ["BACKENDS", "PARTITION_RATINGS", "Partitions", "UserRows", "add_partials",
           "check_partitioning", "partition_bounds"]

#: where the partitions run: this machine's threads, or the Dask client in scope
BACKENDS = ("threads", "dask")
#: ratings per partition by default (`n_partitions=None`): one partition below it, so
#: a fit of fewer ratings is the one-process computation itself
PARTITION_RATINGS = 1 << 22


def check_partitioning(backend, n_partitions) -> tuple[str, int | None]:
    """`backend` (lower-cased) and `n_partitions` checked; with `"dask"`, a client must be
    in scope (checked here, before the fit draws any noise).

    Raises
    ------
    ValueError
        For a backend not in `BACKENDS`, `n_partitions < 1`, or `backend="dask"` without
        a client in scope (the message of [`PrivateKNN`][dprec.PrivateKNN]'s).
    TypeError
        For a backend that is not a string or a non-integer `n_partitions`.
    """
    backend = check_choice(backend, "backend", BACKENDS)
    if n_partitions is not None:
        n_partitions = check_int(n_partitions, "n_partitions", minimum=1)
    if backend == "dask":
        dask_client_in_scope()
    return backend, n_partitions


def partition_bounds(indptr: np.ndarray, n_partitions: int | None = None
                     ) -> list[tuple[int, int]]:
    """Ranges `(start, stop)` of consecutive users holding about equal numbers of ratings,
    cut at the boundary between users nearest to each equal share: `n_partitions` of them
    (fewer when there are fewer users, or users heavier than a share), or by default one
    per `PARTITION_RATINGS` ratings (at least one, also without users)."""
    n_users, n_ratings = len(indptr) - 1, int(indptr[-1])
    count = max(1, math.ceil(n_ratings / PARTITION_RATINGS)) if n_partitions is None \
        else n_partitions
    if n_users <= 1 or count == 1:
        return [(0, n_users)]
    targets = np.linspace(0.0, n_ratings, min(count, n_users) + 1)[1:-1]
    after = np.searchsorted(indptr, targets, side="left")     # first boundary at or past
    before = np.maximum(after - 1, 0)
    cuts = np.where(targets - indptr[before] < indptr[after] - targets, before, after)
    bounds = np.unique(np.concatenate([[0], cuts, [n_users]]))      # the nearest boundary
    return [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])]


@dataclass(frozen=True)
class UserRows:
    """One partition: the users `start` to `start + matrix.shape[0]` (exclusive), their
    rows of the users × items `matrix` (CSR, its own `indptr` from 0), `ratings` (arrays of
    one entry per rating, in the order of `matrix.data`) and `users` (arrays of one entry
    per user)."""

    start: int
    matrix: sp.csr_matrix
    ratings: tuple = ()
    users: tuple = ()


def user_rows(matrix: sp.csr_matrix, bounds: Sequence[tuple[int, int]], ratings=(),
              users=()) -> list[UserRows]:
    """The partitions `bounds` of `matrix` with their slices of the per-rating `ratings`
    and per-user `users` arrays (views; one partition of every user is `matrix` itself)."""
    if list(bounds) == [(0, matrix.shape[0])]:
        return [UserRows(0, matrix, tuple(ratings), tuple(users))]
    out = []
    for start, stop in bounds:
        cells = slice(int(matrix.indptr[start]), int(matrix.indptr[stop]))
        rows = sp.csr_matrix((matrix.data[cells], matrix.indices[cells],
                              matrix.indptr[start:stop + 1] - matrix.indptr[start]),
                             shape=(stop - start, matrix.shape[1]))
        out.append(UserRows(start, rows, tuple(array[cells] for array in ratings),
                            tuple(array[start:stop] for array in users)))
    return out


def add_partials(left, right):
    """`left + right`, elementwise for tuples of arrays (one step of the left fold)."""
    if isinstance(left, tuple):
        return tuple(a + b for a, b in zip(left, right))
    return left + right


class Partitions:
    """The partitions of a users × items matrix, where the statistics run on them.

    `map(function, shared)` is `[function(shared, rows) for rows in partitions]` and
    `sum(function, shared)` the left fold of those results with `add_partials`, in
    partition order: on `backend="threads"` as many partitions at a time as
    `thread_count` (`dprec.utils._threads`) allows, on `"dask"` as tasks on the
    client in scope, the partitions sent to the workers once (at construction) and
    `shared` broadcast once per call.  `function` must be a module-level function (Dask
    pickles it) that draws no randomness.  Use as a context manager: on Dask, leaving it
    releases the partitions from the cluster.
    """

    def __init__(self, matrix: sp.csr_matrix, backend: str = "threads",
                 n_partitions: int | None = None, ratings=(), users=()) -> None:
        self.backend = backend
        self.parts = user_rows(matrix, partition_bounds(matrix.indptr, n_partitions),
                               ratings, users)
        self._client = dask_client_in_scope() if backend == "dask" else None
        self._futures = None if self._client is None else self._client.scatter(
            self.parts, hash=False)

    def __len__(self) -> int:
        return len(self.parts)

    def __enter__(self) -> Partitions:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Release the partitions held by the cluster (Dask; nothing on threads)."""
        if self._futures is not None:
            self._client.cancel(self._futures)
            self._futures = None

    def _tasks(self, function: Callable, shared) -> list:
        """The futures of `function(shared, rows)` per partition, `shared` sent once."""
        (broadcast,) = self._client.scatter([shared], broadcast=True, hash=False)
        return self._client.map(function, [broadcast] * len(self.parts), self._futures,
                                pure=False)

    def map(self, function: Callable, shared=None) -> list:
        """`[function(shared, rows) for rows in self.parts]`, in partition order."""
        if self._client is not None:
            return self._client.gather(self._tasks(function, shared))
        return map_blocks(partial(function, shared), self.parts)

    def sum(self, function: Callable, shared=None):
        """The left fold with `add_partials` of `function(shared, rows)` over the
        partitions in order: the same additions in the same order on both backends."""
        if self._client is not None:
            futures = self._tasks(function, shared)
            total = futures[0]
            for future in futures[1:]:
                total = self._client.submit(add_partials, total, future, pure=False)
            return total.result()
        total, width = None, max(thread_count(), 1)     # at most `width` partials at once
        for begin in range(0, len(self.parts), width):
            for result in map_blocks(partial(function, shared),
                                     self.parts[begin:begin + width]):
                total = result if total is None else add_partials(total, result)
        return total
