"""Surprise's exact similarities a block of rows at a time, never the whole n × n.

For a block ``b`` of rows (users, or items item-based) the co-rated sums
against every row are sparse-times-dense products: with ``B``, ``R`` and
``R∘R`` the pattern, the ratings and their squares (sparse, ``n × m``) and
``B_b``, ``R_b``, ``R∘R_b`` the block's rows (dense, ``|b| × m``):

    |I_uv|     = (B B_bᵀ)ᵀ[u, v]        Σ r_ui²  = (B (R∘R)_bᵀ)ᵀ[u, v]
    Σ r_ui r_vi = (R R_bᵀ)ᵀ[u, v]       Σ r_vi²  = ((R∘R) B_bᵀ)ᵀ[u, v]
    Σ r_ui     = (B R_bᵀ)ᵀ[u, v]        Σ r_vi   = (R B_bᵀ)ᵀ[u, v]      (pearson)

and the similarity is [`similarity_from_sums`][]
of them, the same expression as the whole matrix's.  With integer ratings
(when no sum can exceed 2^24, in float32) every sum is exact whatever the
order of its terms, so each row is **bit-identical** to the row of
[`exact_similarity`][dprec.similarity.exact_similarity]; otherwise equal up to the
rounding of a float64 sum.  Memory grows with the block (``|b| × n`` per
sum), the work with ``nnz × n`` products per row set, which on sparse data
(MovieLens: 1–6 % of the cells rated) rivals the dense products of the
whole matrix; with the compiled kernels (`dprec.utils._kernels`) the same
sums come from one loop over the pairs of rows that share a column
(``Σ_{u ∈ b} Σ_{i ∈ I_u} |U_i|`` steps), the same numbers.  The
recommendation-aware sensitivity ``RS`` of a block is
[`sensitivity_of_rows`][] on the block's sums.  The centred cosine
(`dprec.similarity.centered`) is the same computation on the unit centred rows
(``R`` holds them, ``B`` their pattern): its rows equal the whole matrix's to float64
rounding (the same bits with the compiled kernels, which sum each pair in one order).

See [Similarities](../similarities.md) (blocked similarities).
"""

from __future__ import annotations

from functools import cached_property

import numpy as np
import scipy.sparse as sp

from ..utils import _kernels as kernels
from .exact import (
    READS_ROW_SUMS,
    ROW_SIMILARITIES,
    sensitivity_of_rows,
    similarity_from_sums,
    summed_values,
)

#: cells (rows × columns) of one block of similarity rows: 16 MB per float64 array
ROW_BLOCK_CELLS = 1 << 21


class _RowsOnDemand:
    """What a model with blocked storage asks of its similarity rows: their number and
    the size of a block; subclasses compute ``self(rows)``."""

    n_rows: int

    def block_size(self, cells: int = ROW_BLOCK_CELLS) -> int:
        """How many rows make a block of about ``cells`` cells (at least 1)."""
        return max(1, cells // max(self.n_rows, 1))


class SimilarityRows(_RowsOnDemand):
    """Rows of Surprise's exact similarity matrix, computed on demand.

    Parameters
    ----------
    name : {"cosine", "msd", "pearson", "centered_cosine"}
    ratings : scipy.sparse.csr_matrix
        Rows × columns ratings (users × items, or items × users item-based);
        explicit zeros are ratings (Surprise counts them).  Copied; the sums run over
        [`summed_values`][] of them (the unit centred rows for the centred cosine).
    min_support : int, default 1
        Pairs with fewer co-rated columns get similarity 0.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from dprec.similarity.exact import exact_similarity
    >>> ratings = sp.random(50, 40, density=0.2, format="csr", random_state=0)
    >>> ratings.data = np.ceil(ratings.data * 5)
    >>> rows = SimilarityRows("cosine", ratings)
    >>> bool((rows(np.array([3, 7])) == exact_similarity("cosine", ratings)[[3, 7]]).all())
    True
    """

    def __init__(self, name: str, ratings: sp.csr_matrix, min_support: int = 1) -> None:
        if name not in ROW_SIMILARITIES:
            raise ValueError(f"name must be one of {ROW_SIMILARITIES}, got {name!r}")
        self.name, self.min_support = name, min_support
        ratings = sp.csr_matrix(ratings, dtype=np.float64, copy=True)
        ratings.sort_indices()
        self.ratings = ratings                    # what RS removes ratings from
        self.values = values = summed_values(name, ratings)   # what the sums add up
        data = values.data
        exact_in_float32 = (ratings.shape[1] * float(np.max(data**2, initial=0.0)) < 2**24
                            and np.array_equal(data, np.round(data)))
        self.dtype = np.float32 if exact_in_float32 else np.float64

        def operand(values: np.ndarray) -> sp.csr_matrix:
            return sp.csr_matrix((values.astype(self.dtype), ratings.indices, ratings.indptr),
                                 shape=ratings.shape)   # the pattern of the values

        self._pattern, self._values, self._squares = (
            operand(np.ones_like(data)), operand(data), operand(data**2))

    @cached_property
    def _rating_triples(self) -> tuple[tuple, tuple]:
        """The summed values by row and by column, for the compiled kernel."""
        return kernels.rating_triples(self.values)

    @property
    def n_rows(self) -> int:
        """The number of rows (and columns) of the whole similarity matrix."""
        return self.ratings.shape[0]

    def __call__(self, rows: np.ndarray) -> np.ndarray:
        """The similarity rows ``rows``: ``(len(rows), n_rows)`` float64 (diagonal 1)."""
        if kernels.enabled():   # straight from each row's sums, never laid out
            sim = np.zeros((len(rows), self.n_rows))
            kernels.similarity_rows(self.name, rows, *self._rating_triples, sim,
                                    self.min_support)
            return sim
        return self._rows(rows, with_counts=(self.name not in ("cosine", "centered_cosine")
                                             or self.min_support > 1),
                          with_sums=self.name == "pearson")[0]

    def with_sums(self, rows: np.ndarray) -> tuple[np.ndarray, tuple, tuple]:
        """``(sim, sums, mirrored)`` of the rows ``rows``, all ``(len(rows), n_rows)``
        float64: ``sums = (freq, s_i, sq_i, prods)``, ``mirrored = (s_j, sq_j)`` as
        [`sensitivity_of_rows`][] reads them (``s_i``,
        ``s_j`` ``None`` but for `READS_ROW_SUMS`)."""
        return self._rows(rows, with_counts=True, with_sums=self.name in READS_ROW_SUMS)

    def _rows(self, rows: np.ndarray, with_counts: bool,
              with_sums: bool) -> tuple[np.ndarray, tuple, tuple]:
        """[`with_sums`][]; without ``with_counts`` ``freq`` is not computed (``None``):
        the cosines with ``min_support <= 1`` need no counts (a pair without co-rated item
        has ``Σ r_ui r_vi = 0`` and similarity 0 either way); ``Σ r_ui``, ``Σ r_vi`` only
        ``with_sums``."""
        rows = np.asarray(rows, dtype=np.int64)
        if kernels.enabled():
            sums = freq, sq_i, sq_j, prods, s_i, s_j = tuple(
                np.zeros((len(rows), self.n_rows)) if needed else None
                for needed in (with_counts, True, True, True, with_sums, with_sums))
            kernels.add_co_rated_sums(rows, *self._rating_triples, sums)
            return self._similarity(rows, freq, s_i, s_j, sq_i, sq_j, prods)
        pattern, values, squares = (m[rows].toarray().T for m in
                                    (self._pattern, self._values, self._squares))
        with_pattern = self._pattern @ np.hstack(
            ([pattern] if with_counts else []) + [squares] + ([values] if with_sums else []))
        with_values = self._values @ (np.hstack([values, pattern]) if with_sums else values)
        sq_j = self._squares @ pattern
        b = len(rows)

        def part(product: np.ndarray, j: int) -> np.ndarray:
            return np.ascontiguousarray(product[:, j * b:(j + 1) * b].T, dtype=np.float64)

        first = int(with_counts)
        freq = part(with_pattern, 0) if with_counts else None
        sq_i, prods, sq_j = part(with_pattern, first), part(with_values, 0), part(sq_j, 0)
        s_i, s_j = ((part(with_pattern, first + 1), part(with_values, 1)) if with_sums
                    else (None, None))
        return self._similarity(rows, freq, s_i, s_j, sq_i, sq_j, prods)

    def _similarity(self, rows, freq, s_i, s_j, sq_i, sq_j, prods) -> tuple:
        """[`with_sums`][] from the float64 co-rated sums of ``rows``."""
        sim = similarity_from_sums(self.name, freq, s_i, s_j, sq_i, sq_j, prods)
        if freq is not None:
            sim[freq < self.min_support] = 0.0
        sim[np.arange(len(rows)), rows] = 1.0
        return sim, (freq, s_i, sq_i, prods), (s_j, sq_j)

    def sensitivity(self, rows: np.ndarray, floor: float = 1e-6) -> np.ndarray:
        """Each of ``rows``' recommendation-aware sensitivity ``RS(u)`` (Zhu et al. 2013;
        [`recommendation_aware_sensitivity`][dprec.similarity.recommendation_aware_sensitivity])."""
        rows = np.asarray(rows, dtype=np.int64)
        sim, sums, mirrored = self.with_sums(rows)
        return sensitivity_of_rows(self.name, self.ratings, rows, sim, sums, mirrored,
                                   self.min_support, floor)


class SketchRows(_RowsOnDemand):
    """Rows of a sketch backend's similarity matrix, estimated on demand from one release.

    The users' privatised sketches (``n × width``, released once at fit and
    charged then) are kept; the rows ``rows`` are
    ``backend.estimate_rows(sketches, rows)`` (``estimate(sketches[rows],
    sketches)``) with the diagonal 1, what
    [`similarity_matrix`][dprec.similarity.SketchBackend.similarity_matrix] gives
    for those rows: the same numbers for the code sketches (MinHash,
    RRMinHash: match counts are integers), equal to float64 rounding for the
    real-valued ones (the whole matrix's products are symmetric rank-k
    updates, a block's general products).  Estimating more rows releases
    nothing new: they are post-processing of the one release.

    Parameters
    ----------
    backend : SketchBackend
        The backend that made ``sketches``.
    sketches : Sketch
        Every row's released sketch.
    """

    def __init__(self, backend, sketches) -> None:
        self.backend, self.sketches = backend, sketches

    @property
    def n_rows(self) -> int:
        """The number of rows (and columns) of the whole similarity matrix."""
        return len(self.sketches)

    def __call__(self, rows: np.ndarray) -> np.ndarray:
        """The similarity rows ``rows``: ``(len(rows), n_rows)`` float64 (diagonal 1)."""
        rows = np.asarray(rows, dtype=np.int64)
        sim = self.backend.estimate_rows(self.sketches, rows)
        sim[np.arange(len(rows)), rows] = 1.0
        return sim
