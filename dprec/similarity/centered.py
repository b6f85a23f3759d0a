r"""The centred cosine (LensKit's kNN similarity) and its recommendation-aware sensitivity.

Each row of the ratings (a user's ratings of the items, or item-based an item's ratings
by its raters) is centred at its own mean, missing entries 0, and two rows' similarity is
the cosine of their centred vectors, each norm over **all** of its vector's entries (not
over the co-rated ones, as Surprise's cosine and pearson take them):

$$
c_{ui} = r_{ui} - \mu_u, \qquad
sim(u, v) = \frac{\sum_{i \in I_{uv}} c_{ui} c_{vi}}{\lVert c_u \rVert \, \lVert c_v \rVert} .
$$

Scaled first to unit norm, $\hat c_u = c_u / \lVert c_u \rVert$ (`centered_unit_rows`), the
similarity is the co-rated sum $\sum_{I_{uv}} \hat c_{ui} \hat c_{vi}$: the sparse products
and the compiled pair loop of Surprise's similarities
([`dprec.similarity.exact`][]) on other values, clipped to $[-1, 1]$ (rounding).

**Zero norms.** A row whose ratings are all equal (one rating, say) has a centred vector
of 0 and similarity 0 to every other row (its diagonal is 1, as for every similarity).
dprec tests equality of the ratings themselves, so such a row's centred values are
exactly 0 even where its mean is not exact in floating point (ten ratings of 0.1).

**RS.** Removing one rating $r_{us}$ moves $u$'s mean, hence every entry of $\hat c_u$ and
its norm.  With $n = |I_u|$, $a = \hat c_{us}$, $g = a / (n - 1)$ and the co-rated sum
$C_{vu} = \sum_{I_{uv}} \hat c_{vi}$, the similarity of $u$ and any $v$ without that rating
is, exactly (sums of unit-row values, so in float64 to rounding):

$$
sim_{-us}(u, v) = \frac{sim(u, v) + g \, C_{vu} - (a + g)\, \hat c_{vs}}
                       {\sqrt{1 - a^2 n / (n - 1)}}
$$

($\hat c_{vs} = 0$ when $v$ did not rate $s$), 0 when fewer than
$\max(\texttt{min\_support}, 1)$ co-rated entries remain or when $u$'s remaining ratings
are all equal (tested on the ratings, as above; always the case for $n \le 2$).
$RS(u, v)$ is the largest change of $sim(u, v)$ by removing one rating of $u$ or one of
$v$, and $RS(u) = \max_{v \ne u} RS(u, v)$ ([`centered_cosine_sensitivity`][]).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..utils import _kernels as kernels
from ..utils._arrays import pattern_matrix, safe_divide, segment_ids, segment_positions
from ..utils._threads import map_blocks, thread_count

#: cells of one block of the sensitivity's work arrays (8 MB per float64 array)
_CELLS = 1 << 20


def _row_entries(unit: sp.csr_matrix, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(owner, entries)``: the positions in ``unit.data`` of the stored cells of each of
    ``rows``, and for each the index in ``rows`` of the row it belongs to."""
    lengths = np.diff(unit.indptr)[rows]
    owner = segment_ids(lengths)
    entries = np.repeat(unit.indptr[rows], lengths) + segment_positions(lengths)
    return owner, entries


def _constant_rows(ratings: sp.csr_matrix, owner: np.ndarray) -> tuple[np.ndarray, ...]:
    """``(constant, at_low, at_high, n_low, n_high)``: whether each row's ratings are all
    equal (empty rows too), whether each entry is its row's lowest or highest rating, and
    how many of each row's ratings are."""
    n, counts = ratings.shape[0], np.diff(ratings.indptr)
    low, rated = np.zeros(n), counts > 0
    low[rated] = np.minimum.reduceat(ratings.data, ratings.indptr[:-1][rated])
    high = _row_maxima(ratings, ratings.data)
    at_low, at_high = ratings.data == low[owner], ratings.data == high[owner]
    return (low == high, at_low, at_high, np.bincount(owner, at_low, minlength=n),
            np.bincount(owner, at_high, minlength=n))


def _row_maxima(ratings: sp.csr_matrix, values: np.ndarray) -> np.ndarray:
    """The largest of ``values`` (one per stored entry) in each row, 0 in empty rows."""
    out, counts = np.zeros(ratings.shape[0]), np.diff(ratings.indptr)
    out[counts > 0] = np.maximum.reduceat(values, ratings.indptr[:-1][counts > 0])
    return out


def centered_unit_rows(ratings: sp.csr_matrix) -> sp.csr_matrix:
    """Each row of ``ratings`` centred at its mean and scaled to unit norm, on the same
    pattern (a stored 0 is a rating); rows whose ratings are all equal are exactly 0.
    float64, a new matrix (the input is not modified)."""
    ratings = sp.csr_matrix(ratings, dtype=np.float64)
    owner = segment_ids(np.diff(ratings.indptr))
    n, counts = ratings.shape[0], np.diff(ratings.indptr)
    means = safe_divide(np.bincount(owner, ratings.data, minlength=n), counts)
    centred = ratings.data - means[owner]
    centred[_constant_rows(ratings, owner)[0][owner]] = 0.0
    norms = np.sqrt(np.bincount(owner, centred**2, minlength=n))
    return sp.csr_matrix((safe_divide(centred, norms[owner]), ratings.indices.copy(),
                          ratings.indptr.copy()), shape=ratings.shape)


def _removal_terms(ratings: sp.csr_matrix) -> tuple:
    """``(unit, g, a + g, 1 / d)`` for every stored rating: the unit centred rows (sorted
    indices, the order of the terms) and the terms of the similarity without that rating
    (module docstring); ``1 / d = 0`` where the row's remaining ratings are all equal,
    which makes that similarity 0."""
    ratings = sp.csr_matrix(ratings, dtype=np.float64)
    if not ratings.has_sorted_indices:
        ratings = ratings.sorted_indices()            # a sorted copy: the input is kept
    unit = centered_unit_rows(ratings)
    owner = segment_ids(np.diff(ratings.indptr))
    n = np.diff(ratings.indptr)[owner].astype(np.float64)
    constant, at_low, at_high, n_low, n_high = _constant_rows(ratings, owner)
    two_values = (n_low + n_high)[owner] == n
    flat = (n <= 2) | constant[owner] | (two_values & ((at_low & (n_low[owner] == 1))
                                                       | (at_high & (n_high[owner] == 1))))
    a = unit.data
    g = np.where(flat, 0.0, a / np.maximum(n - 1.0, 1.0))
    remaining = np.maximum(1.0 - a * g * n, 0.0)          # ‖c'‖² / ‖c‖² = 1 − a² n / (n − 1)
    inverse = np.where(flat, 0.0, safe_divide(1.0, np.sqrt(remaining)))
    return unit, g, a + g, inverse


def centered_cosine_sensitivity(ratings: sp.csr_matrix, rows: np.ndarray, sim: np.ndarray,
                                sums: tuple, mirrored: tuple, min_support: int = 1,
                                floor: float = 1e-6) -> np.ndarray:
    r"""``RS(u)`` of the rows ``rows`` under the centred cosine (module docstring), exactly.

    Removing one of ``u``'s ratings changes ``u``'s whole row (``|I_u| · n`` cells),
    removing one of another row ``v``'s ratings its similarity to ``u`` (``nnz`` cells
    per ``u``).  The numpy code computes every one of these changes, as array operations
    over blocks of entries.  The compiled kernel (`dprec.utils._kernels.centered_sensitivity`)
    visits first the columns both rows rated (the pairs sharing a column, as Surprise's
    similarities do); a rating of a column the other row did not rate moves the
    similarity by $|(1 - 1/d)\, sim - (g/d)\, C| \le w \max(|sim|, |C|)$ with
    $w = |1 - 1/d| + |g/d|$, so each row's remaining ratings are visited by decreasing
    $w$ and the rest skipped once that bound cannot beat the largest change found: the
    same maximum (to a relative margin of $10^{-6}$ on the bound), in about the time of
    the co-rated pairs (0.13 s of CPU on MovieLens 100k, every user).  Both on every core.

    Parameters
    ----------
    ratings : scipy.sparse.csr_matrix
        The ratings themselves (not centred).
    rows : ndarray of int
        The rows asked.
    sim : ndarray (len(rows), n_rows)
        Their similarity rows (diagonal 1, 0 below ``min_support``).
    sums : tuple
        ``(freq, s_i, sq_i, prods)``, co-rated sums of the unit centred rows (only
        ``freq`` and ``s_i[u, v] = Σ_{I_uv} ĉ_ui`` are read).
    mirrored : tuple
        ``(s_j, sq_j)`` with ``s_j[u, v] = Σ_{I_uv} ĉ_vi`` (only ``s_j`` is read).
    min_support : int
    floor : float
        Lower bound on ``RS(u)``.

    Returns
    -------
    ndarray of shape (len(rows),)
    """
    rows = np.asarray(rows, dtype=np.int64)
    unit, *terms = _removal_terms(ratings)
    freq, s_i, s_j = sums[0], sums[1], mirrored[0]
    size = max(1, -(-len(rows) // thread_count()))
    blocks = [slice(start, start + size) for start in range(0, len(rows), size)]
    if kernels.enabled():
        triples = kernels.rating_triples(unit)
        entries = sp.csr_matrix((np.arange(unit.nnz, dtype=np.float64), unit.indices,
                                 unit.indptr), shape=unit.shape).tocsc().data.astype(np.int64)
        g, _, inverse = terms
        weight = np.abs(1.0 - inverse) + np.abs(g * inverse)
        order = np.lexsort((-weight, segment_ids(np.diff(unit.indptr))))
        parts = map_blocks(lambda b: kernels.centered_sensitivity(
            rows[b], *triples, (*terms, weight), [t[entries] for t in terms], order,
            _scale(rows[b], sim[b], s_j[b], freq[b], min_support), sim[b], s_i[b], s_j[b],
            freq[b], min_support), blocks)
    else:
        parts = map_blocks(lambda b: _sensitivity_by_arrays(
            unit, terms, rows[b], sim[b], s_i[b], s_j[b], freq[b], min_support), blocks)
    return np.maximum(np.concatenate(parts or [np.zeros(0)]), floor)


def _scale(rows: np.ndarray, sim: np.ndarray, s_j: np.ndarray, freq: np.ndarray,
           min_support: int) -> np.ndarray:
    """Per row asked, the largest ``max(|sim(u, v)|, |C_vu|)`` over the ``v != u`` with
    enough support (the kernel's bound of a removal's change is ``w`` times it)."""
    scale = np.where(freq >= max(min_support, 1), np.maximum(np.abs(sim), np.abs(s_j)), 0.0)
    scale[np.arange(len(rows)), rows] = 0.0
    return scale.max(axis=1, initial=0.0)


def _removal_changes(unit: sp.csr_matrix, terms, rows: np.ndarray, sim: np.ndarray,
                     s_i: np.ndarray, s_j: np.ndarray, freq: np.ndarray, min_support: int):
    """How far the similarities of the ``rows`` asked move when one stored rating is
    removed, block by block of removals (at most `_CELLS` cells at once): yields
    ``(True, owner, moved)`` for the removal of one of the asked rows' own ratings
    (``moved[n]``: row ``owner[n]``'s whole row of similarities) and ``(False, v, moved)``
    for the removal of one rating of row ``v[n]`` (``moved[:, n]``: the cells ``(u, v[n])``
    of every row asked).  ``terms`` are `_removal_terms`' ``(g, a + g, 1 / d)``."""
    g, coefficient, inverse = terms
    support = max(min_support, 1)

    def change(s, c_sum, c, f, rated, e):
        """How far the similarities ``s`` move without the entries ``e``."""
        new = (s + g[e] * c_sum - coefficient[e] * c) * inverse[e]
        np.clip(new, -1.0, 1.0, out=new)
        new[f - rated < support] = 0.0
        return np.abs(s - new, out=new)

    # 1. removing one of u's own ratings: every cell of u's row
    by_column = sp.csr_matrix(unit.T)
    pattern = pattern_matrix(by_column)
    owner, entries = _row_entries(unit, rows)
    step = max(1, _CELLS // max(unit.shape[0], 1))
    for start in range(0, len(entries), step):
        e, o = entries[start:start + step, None], owner[start:start + step]
        columns = unit.indices[e[:, 0]]
        yield True, o, change(sim[o], s_j[o], by_column[columns].toarray(), freq[o],
                              pattern[columns].toarray(), e)
    # 2. removing one rating of any row v: the cells (u, v) of every u asked
    asked = unit[rows]
    mine, rated = asked.toarray(), pattern_matrix(asked).toarray()
    v_all = segment_ids(np.diff(unit.indptr))
    step = max(1, _CELLS // max(len(rows), 1))
    for start in range(0, unit.nnz, step):
        e = np.arange(start, min(start + step, unit.nnz))
        v, columns = v_all[e], unit.indices[e]
        yield False, v, change(sim[:, v], s_i[:, v], mine[:, columns], freq[:, v],
                               rated[:, columns], e)


def _sensitivity_by_arrays(unit: sp.csr_matrix, terms: list, rows: np.ndarray,
                           sim: np.ndarray, s_i: np.ndarray, s_j: np.ndarray,
                           freq: np.ndarray, min_support: int) -> np.ndarray:
    """[`centered_cosine_sensitivity`][] of a block of rows (unfloored), in numpy: every
    removal as one array operation over a block of entries (`_removal_changes`), the
    cells (u, u) left out."""
    sensitivity = np.zeros(len(rows))
    for own, owner, moved in _removal_changes(unit, terms, rows, sim, s_i, s_j, freq,
                                              min_support):
        if own:
            moved[np.arange(len(owner)), rows[owner]] = 0.0
            np.maximum.at(sensitivity, owner, moved.max(axis=1, initial=0.0))
        else:
            moved[rows[:, None] == owner[None, :]] = 0.0
            np.maximum(sensitivity, moved.max(axis=1, initial=0.0), out=sensitivity)
    return sensitivity


def centered_pair_sensitivity(ratings: sp.csr_matrix, rows: np.ndarray, sim: np.ndarray,
                              s_i: np.ndarray, s_j: np.ndarray, freq: np.ndarray,
                              min_support: int = 1) -> np.ndarray:
    r"""The per-pair sensitivities $RS(u, v)$ of the centred cosine, for the rows ``rows``.

    $RS(u, v)$ is the largest change of $sim(u, v)$ by removing one rating of $u$ or
    one of $v$ (module docstring; 0 for $v = u$), so that
    $RS(u) = \max_{v \ne u} RS(u, v)$ ([`centered_cosine_sensitivity`][], before its
    floor).  Each cell is the same floating-point expression as there, so the row
    maxima are the same numbers.  ``RS(u, v)`` is symmetric: a simulation that
    changes a few rows (`dprec.similarity.incremental`) keeps the matrix and
    recomputes the changed rows' pairs.  Work ``len(rows) · (nnz of rows + nnz)``
    cells, in numpy blocks.

    Parameters
    ----------
    ratings : scipy.sparse.csr_matrix
        The ratings themselves (not centred).
    rows : ndarray of int
        The rows asked.
    sim, s_i, s_j, freq : ndarray of shape (len(rows), n_rows)
        Their similarity rows (diagonal 1, 0 below ``min_support``) and co-rated sums
        of the unit centred rows: ``s_i[u, v] = Σ_{I_uv} ĉ_ui``, ``s_j[u, v] = Σ_{I_uv}
        ĉ_vi``, ``freq[u, v] = |I_uv|``.
    min_support : int

    Returns
    -------
    ndarray of shape (len(rows), n_rows)
    """
    rows = np.asarray(rows, dtype=np.int64)
    unit, *terms = _removal_terms(ratings)
    out = np.zeros((len(rows), unit.shape[0]))
    for own, owner, moved in _removal_changes(unit, terms, rows, sim, s_i, s_j, freq,
                                              min_support):
        runs = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]])  # runs of one owner
        if own:
            out[owner[runs]] = np.maximum(out[owner[runs]],
                                          np.maximum.reduceat(moved, runs, axis=0))
        else:
            out[:, owner[runs]] = np.maximum(out[:, owner[runs]],
                                             np.maximum.reduceat(moved, runs, axis=1))
    out[np.arange(len(rows)), rows] = 0.0
    return out
