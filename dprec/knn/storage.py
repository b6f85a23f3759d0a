"""How a fitted model holds its similarities (`storage=`), behind one small interface:
"the similarity rows of these users".

`DenseSimilarities` keeps the whole $n \\times n$ matrix (Surprise's way);
`BlockedSimilarities` keeps none and computes the rows a batch of queries
needs, a block of users at a time: from co-rated sums
(`dprec.similarity.rows.SimilarityRows`: cosine, msd, pearson, centered_cosine) or estimated
from the users' one sketch release (`dprec.similarity.rows.SketchRows`), on
this machine's threads or as tasks on Dask (`backend=`).  The same numbers
either way.  `similarities` computes what `fit` stores, whichever it is.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from typing import Protocol

import numpy as np

from ..similarity import (
    BLOCKED_SIMILARITIES,
    SimilarityRows,
    SketchRelease,
    SketchRows,
    similarity_matrix,
    similarity_rows,
)
from ..similarity.rows import ROW_BLOCK_CELLS
from ..utils._arrays import segment_ids
from ..utils._ratings import RatingArrays
from ..utils._rng import derive_generator
from ..utils._threads import map_blocks, map_on_dask, thread_count

#: how the fitted model holds its similarities: the whole matrix, or rows computed on demand
STORAGES = ("auto", "dense", "blocked")
#: where the blocks of a blocked model run: this machine's threads, or a Dask cluster
BACKENDS = ("threads", "dask")
#: `storage="auto"` keeps the whole matrix while one float64 n × n matrix stays below this
#: (256 MiB, about 5,800 rows; at the MovieLens-1M shape, 6,040 users, the whole matrix
#: would make top-k about 20% faster and PPNS with RS about 25% slower, at 1.1-1.7x the
#: memory: `benchmarks/bench_scale.py`)
DENSE_SIMILARITY_BYTES = 1 << 28


class Similarities(Protocol):
    """What the neighbourhood engines read of a storage."""

    name: str                 # what `storage` resolved to: "dense" or "blocked"
    matrix: np.ndarray | None   # the whole matrix, if kept
    row_block_cells: int | None   # cells per block of rows (None: the default block)

    def rows(self, rows: np.ndarray) -> np.ndarray:
        """The similarity rows `rows` (a new array)."""

    def all_rows(self) -> np.ndarray:
        """Every row: the whole matrix (a new array)."""

    def query_groups(self, users: np.ndarray) -> list[np.ndarray]:
        """The queries (positions) in groups whose users' rows are read together."""

    def candidate_rows(self, users: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """`(sim, rows)`: rows holding every user of `users`, and each one's row there."""

    def map(self, function: Callable, state, blocks: list, threads: bool = True) -> list:
        """`[function(state, block) for block in blocks]`, where the rows are."""


class DenseSimilarities:
    """The whole similarity matrix, in memory (`storage="dense"`).

    Parameters
    ----------
    matrix : ndarray of shape (n, n)
    """

    name = "dense"
    row_block_cells = None

    def __init__(self, matrix: np.ndarray) -> None:
        self.matrix = matrix

    def rows(self, rows: np.ndarray) -> np.ndarray:
        """The similarity rows `rows` (a new array)."""
        return self.matrix[rows]

    def all_rows(self) -> np.ndarray:
        """A copy of the matrix."""
        return self.matrix.copy()

    def query_groups(self, users: np.ndarray) -> list[np.ndarray]:
        """All the queries at once: every row is there."""
        return [np.arange(len(users))]

    def candidate_rows(self, users: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The matrix itself, each user at their own row."""
        return self.matrix, users

    def map(self, function: Callable, state, blocks: list, threads: bool = True) -> list:
        """`[function(state, block) for block in blocks]`, here."""
        return _here(function, state, blocks, threads)


class BlockedSimilarities:
    """No matrix: the rows a batch of queries needs, computed for it
    (`storage="blocked"`), on this machine's threads or on Dask.

    Parameters
    ----------
    source : SimilarityRows or SketchRows
        What computes the rows: `source(rows)`.
    backend : {"threads", "dask"}
        Where the blocks run.
    """

    name = "blocked"
    matrix = None
    row_block_cells = ROW_BLOCK_CELLS

    def __init__(self, source: SimilarityRows | SketchRows, backend: str) -> None:
        self.source, self.backend = source, backend

    def rows(self, rows: np.ndarray) -> np.ndarray:
        """The similarity rows `rows`, computed."""
        return self.source(rows)

    def all_rows(self) -> np.ndarray:
        """Every row, computed: the whole matrix."""
        return self.source(np.arange(self.source.n_rows))

    def query_groups(self, users: np.ndarray) -> list[np.ndarray]:
        """The queries by blocks of users whose rows are computed together (a block per
        thread)."""
        unique, rows = np.unique(users, return_inverse=True)
        by_user = np.argsort(rows, kind="stable")
        bounds = np.searchsorted(rows[by_user], np.arange(0, len(unique),
                                                          self.source.block_size() *
                                                          thread_count()))
        return np.split(by_user, bounds[1:])

    def candidate_rows(self, users: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The rows of the distinct users, computed in threads, and each user's row."""
        unique, rows = np.unique(users, return_inverse=True)
        return np.concatenate(map_blocks(self.source, np.array_split(
            unique, min(thread_count(), len(unique))))), rows

    def map(self, function: Callable, state, blocks: list, threads: bool = True) -> list:
        """`[function(state, block) for block in blocks]`: here, or as tasks on the Dask
        client in scope (`backend="dask"`), `state` sent to the workers once (the rows
        never leave them)."""
        if self.backend == "dask":
            return map_on_dask(function, state, blocks)
        return _here(function, state, blocks, threads)


def _here(function: Callable, state, blocks: list, threads: bool) -> list:
    """`[function(state, block) for block in blocks]` on this machine: in threads, or in
    turn when `function` runs its own (`threads=False`)."""
    if threads:
        return map_blocks(partial(function, state), blocks)
    return [function(state, block) for block in blocks]


def resolves_to_blocked(storage: str, backend: str, name: str, n: int) -> bool:
    """Whether `storage` resolves to blocked similarities for `n` rows of the similarity
    `name` (`"auto"`: above `DENSE_SIMILARITY_BYTES`, where rows apply)."""
    storage = storage.lower()
    return storage == "blocked" or backend == "dask" or (
        storage == "auto" and 8 * n * n > DENSE_SIMILARITY_BYTES
        and name in BLOCKED_SIMILARITIES)


def held(similarities: np.ndarray | SimilarityRows | SketchRows,
         backend: str) -> DenseSimilarities | BlockedSimilarities:
    """The storage of a matrix, or of rows computed on demand on `backend`."""
    if isinstance(similarities, SimilarityRows | SketchRows):
        return BlockedSimilarities(similarities, backend)
    return DenseSimilarities(similarities)


def similarities(options: Mapping, ratings: RatingArrays, with_sensitivity: bool,
                 rating_scale: tuple, entropy: bytes,
                 baselines: Callable[[], tuple[np.ndarray, np.ndarray]], verbose: bool,
                 rows_backend: str | None = None,
                 ) -> tuple[np.ndarray | SimilarityRows | SketchRows, np.ndarray | None,
                            SketchRelease | None]:
    """`(similarities, sensitivity, release)` of `options` on `ratings`: the matrix
    (`dprec.similarity.similarity_matrix`; `baselines()` gives $(b_x, b_y)$ for
    `pearson_baseline`), or, given a `rows_backend`, its rows on demand there
    (`dprec.similarity.similarity_rows`); each user's `RS` `with_sensitivity`, and the
    users' release through a sketch backend."""
    name = options["name"]
    generator = derive_generator(entropy, "similarity")
    if rows_backend is not None:
        if verbose:
            print(f"Computing the {name} similarities by blocks of "
                  "rows as queries need them (storage='blocked', no n × n matrix)...")
        return similarity_rows(options, ratings, with_sensitivity, rows_backend,
                               rating_scale=rating_scale, random_state=generator)
    residuals = None
    if name == "pearson_baseline":
        mu = ratings.global_mean
        b_rows, b_columns = baselines()
        rows = segment_ids(np.diff(ratings.matrix.indptr))
        residuals = ratings.matrix.data - (mu + b_columns[ratings.matrix.indices]
                                           + b_rows[rows])
    if verbose:
        print(f"Computing the {name} similarity matrix...")
    result = similarity_matrix(options, ratings, with_sensitivity=with_sensitivity,
                               rating_scale=rating_scale, random_state=generator,
                               residuals=residuals)
    if verbose:
        print("Done computing similarity matrix.")
    return result
