"""Rating datasets: MovieLens 100k, HetRec Last.fm and a synthetic generator.

Every loader returns a Surprise `Dataset` with raw
ids as strings (as Surprise's own loaders give them), so the result plugs into
``build_full_trainset``, ``train_test_split``, ``cross_validate`` and
``GridSearchCV`` unchanged.

* [`load`][] -- a dataset by name: ``"ml-100k"`` (Surprise's builtin copy,
  read offline only, never downloaded), ``"lastfm"`` (HetRec 2011 Last.fm play
  counts turned into 1-5 ratings, see [`lastfm_ratings`][]) or
  ``"synthetic"`` ([`synthetic`][] with a fixed seed).
* [`synthetic`][] -- a MovieLens-like dataset of any shape, with
  collaborative signal, generated without a Python loop over ratings.
* [`user_item_matrix`][] -- a trainset as a ``scipy.sparse.csr_matrix``.

The public datasets are not redistributed with dprec; the documentation's
[data section](../getting_started.md#data) says where to get them and how to cite them.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from surprise import Dataset, Reader

from ._environment import IGNORED
from ._ratings import user_item_matrix
from ._rng import RandomStateLike, check_random_state
from ._validation import check_int, check_real

__all__ = [
    "DATASETS",
    "ML100K_HISTOGRAM",
    "DatasetUnavailable",
    "lastfm_ratings",
    "load",
    "find_lastfm",
    "load_or_synthetic",
    "read_lastfm",
    "synthetic",
    "user_item_matrix",
]

#: Names accepted by `load`.
DATASETS: tuple[str, ...] = ("ml-100k", "lastfm", "synthetic")

#: Share of each rating 1..5 in MovieLens 100k (6110, 11370, 27145, 34174 and
#: 21201 of its 100000 ratings); the default histogram of `synthetic`.
ML100K_HISTOGRAM: tuple[float, ...] = (0.0611, 0.1137, 0.27145, 0.34174, 0.21201)

_ML100K_SUBPATH = Path("ml-100k") / "ml-100k" / "u.data"
_LASTFM_DIR = "hetrec2011-lastfm-2k"
_LASTFM_FILE = "user_artists.dat"
# Cells (users x items) of the dense block sampled at once by ``synthetic``.
_BLOCK_CELLS = 1 << 22


class DatasetUnavailable(FileNotFoundError, RuntimeError):
    """A public dataset has no local copy (dprec never downloads one).

    Subclasses both `FileNotFoundError` and `RuntimeError`; the
    message says which files were looked for and which setting to change.
    """


def load_or_synthetic(name: str = "auto", seed: int = 0, quick: bool = False,
                      path: str | os.PathLike | None = None) -> tuple[Dataset, str]:
    """``(Dataset, label)``: a named dataset, with a synthetic fallback for ``"auto"``.

    ``"auto"`` loads MovieLens 100k and, when it has no local copy, says so on
    stderr and returns [`synthetic`][] data of the same shape instead (with
    ``quick``: 300 users, 400 items, 12000 ratings).  ``"synthetic"`` always
    gives that synthetic data; other names as [`load`][], from ``path`` if
    given (the command line's ``--data-path``; no fallback then: a path given
    that holds no dataset raises [`DatasetUnavailable`][]).
    """
    labels = {"ml-100k": "MovieLens 100k", "lastfm": "HetRec 2011 Last.fm"}
    shape = (300, 400, 12_000) if quick else (943, 1682, 100_000)
    synthetic_label = f"synthetic ({shape[0]} users, {shape[1]} items, {shape[2]} ratings)"
    if name == "synthetic":
        return synthetic(*shape, random_state=seed), synthetic_label
    real = "ml-100k" if name == "auto" else name
    try:
        return load(real, path), labels.get(real, real)
    except DatasetUnavailable as error:
        if name != "auto" or path is not None:     # a path given must be read
            raise
        print(f"MovieLens 100k could not be loaded: {error}\n"
              f"Falling back to dprec's {synthetic_label} data.", file=sys.stderr)
        return synthetic(*shape, random_state=seed), synthetic_label


# --------------------------------------------------------------------------
# load()
# --------------------------------------------------------------------------

def load(name: str, path: str | os.PathLike | None = None, **kwargs) -> Dataset:
    """Load a dataset by name, offline.

    Parameters
    ----------
    name : {"ml-100k", "lastfm", "synthetic"}
        Case-insensitive.

        * ``"ml-100k"``: MovieLens 100k through Surprise's
          ``Dataset.load_builtin("ml-100k", prompt=False)`` (100000 ratings,
          943 users, 1682 items, ratings 1-5).  The file is looked for first
          and [`DatasetUnavailable`][] raised if it is missing, so Surprise
          never prompts or tries a download.
        * ``"lastfm"``: HetRec 2011 Last.fm ``user_artists.dat`` (92834
          user-artist play counts, 1892 users, 17632 artists) with the play
          counts turned into ratings 1-5 by per-user quantiles, see
          [`lastfm_ratings`][].
        * ``"synthetic"``: [`synthetic`][] with its default ML-100k shape and
          ``random_state=0`` unless given in ``kwargs``.
    path : str or path-like, optional
        Where the files are.  For ``"ml-100k"``: the ``u.data`` file, or a
        folder holding ``u.data``, ``ml-100k/u.data`` or
        ``ml-100k/ml-100k/u.data`` (a ``SURPRISE_DATA_FOLDER``).  Default: the
        folder Surprise uses, ``$SURPRISE_DATA_FOLDER`` or
        ``~/.surprise_data``.  For ``"lastfm"``: ``user_artists.dat`` or the
        ``hetrec2011-lastfm-2k`` folder (or a folder containing it).  Default:
        ``$DPREC_LASTFM`` if set, else ``hetrec2011-lastfm-2k/user_artists.dat``
        next to the ``SURPRISE_DATA_FOLDER`` folder (that is, in its parent),
        else inside it.  Not used by ``"synthetic"``.
    **kwargs
        Keyword arguments of [`synthetic`][] (``"synthetic"`` only).

    Returns
    -------
    surprise.dataset.Dataset

    Raises
    ------
    ValueError
        For an unknown ``name`` (the message lists `DATASETS`).
    TypeError
        For a ``name`` that is not a string, ``path`` given to
        ``"synthetic"``, or ``kwargs`` given to another dataset.
    DatasetUnavailable
        When no local copy of ``"ml-100k"`` or ``"lastfm"`` is found.  The
        message names the paths tried and ``SURPRISE_DATA_FOLDER`` (or
        ``DPREC_LASTFM``).

    Examples
    --------
    >>> data = load("synthetic", n_users=50, n_items=80, n_ratings=1500)
    >>> len(data.raw_ratings)
    1500
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a string, one of {DATASETS}, got {type(name).__name__}")
    key = name.strip().lower()
    if key not in DATASETS:
        raise ValueError(f"unknown dataset {name!r}; name must be one of {', '.join(DATASETS)}")
    if key == "synthetic":
        if path is not None:
            raise TypeError("path is not used by the 'synthetic' dataset")
        kwargs.setdefault("random_state", 0)
        return synthetic(**kwargs)
    if kwargs:
        raise TypeError(f"load({key!r}) got unexpected keyword arguments {sorted(kwargs)}")
    if key == "ml-100k":
        return _load_ml100k(path)
    return _load_lastfm(path)


def _surprise_data_folder() -> Path:
    """The folder Surprise's ``get_dataset_dir()`` names now (without creating it)."""
    default = os.path.expanduser("~") + "/.surprise_data/"
    return Path(os.environ.get("SURPRISE_DATA_FOLDER", default))


def _surprise_builtin_ml100k() -> Path | None:
    """The ``u.data`` path Surprise fixed when it was imported."""
    from surprise.builtin_datasets import BUILTIN_DATASETS

    entry = BUILTIN_DATASETS.get("ml-100k")
    return Path(entry.path) if entry is not None else None


def _ml100k_candidates(path: str | os.PathLike | None = None) -> list[Path]:
    """Files that may be MovieLens 100k's ``u.data``, in the order tried.

    With ``path`` given: ``path`` itself if it is not a folder, else
    ``path/u.data``, ``path/ml-100k/u.data`` and ``path/ml-100k/ml-100k/u.data``.
    Without: ``$SURPRISE_DATA_FOLDER/ml-100k/ml-100k/u.data`` (default folder
    ``~/.surprise_data``) and the path Surprise computed at its import, when
    different (the variable is read by Surprise at import time only).
    """
    if path is not None:
        path = Path(path)
        if not path.is_dir():
            return [path]
        return [path / "u.data", path / "ml-100k" / "u.data", path / _ML100K_SUBPATH]
    candidates = [_surprise_data_folder() / _ML100K_SUBPATH]
    builtin = _surprise_builtin_ml100k()
    if builtin is not None and os.path.abspath(builtin) != os.path.abspath(candidates[0]):
        candidates.append(builtin)
    return candidates


def _folder_setting() -> str:
    """``SURPRISE_DATA_FOLDER`` in the loaders' messages: its value, why it was ignored at
    import (the words of that warning), or that it is not set."""
    folder = os.environ.get("SURPRISE_DATA_FOLDER")
    if folder is not None:
        return f"SURPRISE_DATA_FOLDER={folder!r}"
    return IGNORED or "SURPRISE_DATA_FOLDER is not set, so Surprise uses ~/.surprise_data"


def _find_ml100k(path: str | os.PathLike | None = None) -> Path:
    """The first existing `_ml100k_candidates` file, or [`DatasetUnavailable`][]."""
    candidates = _ml100k_candidates(path)
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    tried = ", ".join(str(c) for c in candidates)
    if path is not None:
        raise DatasetUnavailable(
            f"MovieLens 100k is not at the path given (--data-path): no file at {tried}; "
            "give MovieLens 100k's u.data or a folder containing it")
    raise DatasetUnavailable(
        f"MovieLens 100k is not available offline: no file at {tried} ({_folder_setting()}). "
        "dprec never downloads it. Extract GroupLens' ml-100k.zip into <folder>/ml-100k "
        "(giving <folder>/ml-100k/ml-100k/u.data) and set SURPRISE_DATA_FOLDER=<folder>, or "
        "pass path=... to load() (--data-path on the dprec command line)."
    )


def _load_ml100k(path: str | os.PathLike | None) -> Dataset:
    file = _find_ml100k(path)
    from surprise.builtin_datasets import BUILTIN_DATASETS

    builtin = _surprise_builtin_ml100k()
    try:
        if path is None and builtin is not None and file == builtin:
            # The file exists, so Surprise reads it and neither prompts nor downloads.
            return Dataset.load_builtin("ml-100k", prompt=False)
        # Same reader as the builtin (tab separated, scale 1-5): same Dataset.
        return Dataset.load_from_file(str(file),
                                      Reader(**BUILTIN_DATASETS["ml-100k"].reader_params))
    except ValueError as error:          # Surprise's parse error, UnicodeDecodeError
        raise ValueError(f"{file} is not MovieLens 100k's u.data (tab-separated user, item, "
                         f"rating, timestamp): {error}") from None


def _lastfm_candidates(path: str | os.PathLike | None = None) -> list[Path]:
    """Files that may be HetRec Last.fm's ``user_artists.dat``, in the order tried."""
    explicit = path if path is not None else os.environ.get("DPREC_LASTFM") or None
    if explicit is not None:
        explicit = Path(explicit)
        if not explicit.is_dir():
            return [explicit]
        return [explicit / _LASTFM_FILE, explicit / _LASTFM_DIR / _LASTFM_FILE]
    folder = _surprise_data_folder()
    return [folder.parent / _LASTFM_DIR / _LASTFM_FILE, folder / _LASTFM_DIR / _LASTFM_FILE]


def find_lastfm(path: str | os.PathLike | None = None) -> Path:
    """The HetRec Last.fm ``user_artists.dat`` [`load`][] reads (see its ``path``);
    raises [`DatasetUnavailable`][] naming where it looked."""
    candidates = _lastfm_candidates(path)
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    tried = ", ".join(str(c) for c in candidates)
    raise DatasetUnavailable(
        f"HetRec 2011 Last.fm is not available offline: no file at {tried} "
        f"(DPREC_LASTFM={os.environ.get('DPREC_LASTFM')!r}, "
        f"{_folder_setting()}). "
        "Pass path= (user_artists.dat or the hetrec2011-lastfm-2k folder), set DPREC_LASTFM, "
        "or put hetrec2011-lastfm-2k/ next to the SURPRISE_DATA_FOLDER folder."
    )


def read_lastfm(path: str | os.PathLike | None = None) -> pd.DataFrame:
    """HetRec Last.fm's `user_artists.dat` ([`find_lastfm`][] of `path`) as text:
    its columns ``userID``, ``artistID`` and ``weight`` (the play count), stripped.

    Raises
    ------
    DatasetUnavailable
        When there is no such file.
    ValueError
        For a file that is not it (other columns, not tab-separated text), naming it.
    """
    file = find_lastfm(path)
    expected = ["userID", "artistID", "weight"]
    try:
        raw = pd.read_csv(file, sep="\t", dtype=str, encoding="utf-8")
    except ValueError as error:          # pandas' ParserError, UnicodeDecodeError
        raise ValueError(f"{file} is not HetRec Last.fm's user_artists.dat (tab-separated "
                         f"columns {expected}): {error}") from None
    raw.columns = [c.strip() for c in raw.columns]
    if list(raw.columns[:3]) != expected:
        raise ValueError(f"{file} does not look like HetRec user_artists.dat: "
                         f"columns {list(raw.columns)}, expected {expected}")
    return raw[expected].apply(lambda column: column.str.strip())


def _load_lastfm(path: str | os.PathLike | None) -> Dataset:
    raw = read_lastfm(path)
    users = raw["userID"].astype(object)
    items = raw["artistID"].astype(object)
    counts = pd.to_numeric(raw["weight"], errors="raise")
    ratings = lastfm_ratings(users, counts)
    frame = pd.DataFrame({"user": users, "item": items, "rating": ratings.astype(np.float64)})
    return Dataset.load_from_df(frame, Reader(rating_scale=(1, 5)))


def lastfm_ratings(users: Sequence | np.ndarray | pd.Series,
                   counts: Sequence | np.ndarray | pd.Series) -> np.ndarray:
    """Per-user log-count quantile ratings 1-5 from play counts.

    Within each user, the artists are ranked by ``log(count)`` and an artist's
    quantile is ``q = (number of this user's artists with a count <= its
    count) / (number of this user's artists)``, the user's empirical CDF, in
    ``(0, 1]``.  The rating is ``ceil(5 q)``, computed exactly in integers as
    ``(5 * rank + n - 1) // n`` with ``rank`` the "max" rank (ties take the
    highest rank of their group, so equal counts share one rating).  The
    user's most played artist always gets 5; a user's ratings are close to
    uniform over 1-5 when their counts are distinct.

    Parameters
    ----------
    users : array-like of length n
        User id of each row (any hashable values).
    counts : array-like of length n
        Positive play counts.

    Returns
    -------
    numpy.ndarray of int64, values in 1..5, in the order of the inputs.

    Raises
    ------
    ValueError
        For different lengths, or counts that are not finite and > 0.
    """
    users = pd.Series(np.asarray(users)).reset_index(drop=True)
    counts = np.asarray(counts, dtype=np.float64)
    if counts.ndim != 1 or len(counts) != len(users):
        raise ValueError(f"users and counts must be 1-d of the same length, got {len(users)} "
                         f"and {counts.shape}")
    if not np.all(np.isfinite(counts) & (counts > 0)):
        raise ValueError("counts must be finite and > 0")
    log_counts = pd.Series(np.log(counts))
    grouped = log_counts.groupby(users, sort=False)
    rank = grouped.rank(method="max").to_numpy(dtype=np.int64)
    size = grouped.transform("size").to_numpy(dtype=np.int64)
    return (5 * rank + size - 1) // size


# --------------------------------------------------------------------------
# synthetic()
# --------------------------------------------------------------------------

def _check_histogram(histogram) -> np.ndarray:
    try:
        probs = np.asarray(histogram, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError("rating_histogram must be a sequence of 5 numbers") from None
    if probs.shape != (5,):
        raise ValueError(f"rating_histogram must have 5 entries (ratings 1..5), got shape "
                         f"{probs.shape}")
    if not np.all(np.isfinite(probs)) or np.any(probs < 0) or probs.sum() <= 0:
        raise ValueError("rating_histogram must be finite, >= 0 and not all 0")
    return probs / probs.sum()


def _user_counts(rng: np.random.Generator, n_users: int, n_items: int, n_ratings: int,
                 minimum: int) -> np.ndarray:
    """Ratings per user: ``minimum`` each plus a heavy-tailed share of the rest, capped."""
    counts = np.full(n_users, minimum, dtype=np.int64)
    activity = rng.standard_exponential(n_users)
    remaining = n_ratings - minimum * n_users
    while remaining > 0:
        room = n_items - counts
        weights = np.where(room > 0, activity, 0.0)
        if weights.sum() <= 0:  # exponential draws of exactly 0: spread evenly
            weights = (room > 0).astype(np.float64)
        extra = np.minimum(rng.multinomial(remaining, weights / weights.sum()), room)
        counts += extra
        remaining -= int(extra.sum())
    return counts


def synthetic(n_users: int = 943, n_items: int = 1682, n_ratings: int = 100_000,
              random_state: RandomStateLike = None, n_factors: int = 10, *,
              noise: float = 0.6, popularity_sigma: float = 1.5, selection_bias: float = 0.5,
              min_user_ratings: int | None = None,
              rating_histogram: Sequence[float] = ML100K_HISTOGRAM) -> Dataset:
    """A MovieLens-like rating dataset with latent-factor preferences.

    The generative model:

    1. **Who rates how much.**  Every user gets ``min_user_ratings`` ratings
       plus a share of the remaining ones proportional to an exponential
       "activity" draw (capped at ``n_items``), so activity is heavy-tailed
       like MovieLens' (20 to a few hundred ratings per user at the ML-100k
       shape).
    2. **Preferences.**  Each user has a bias and ``n_factors`` latent
       factors, each item a bias (correlated with its popularity, as
       MovieLens' popular films are rated higher) and factors; the
       preference of ``u`` for ``i`` is
       ``b_u + b_i + p_u . q_i`` plus Gaussian noise of std ``noise`` (the
       noise-free part has a variance of about 1.5).
    3. **Which items.**  Item popularity is heavy-tailed: log-popularity is
       Gaussian with std ``popularity_sigma`` (a log-normal law; with the
       default 1.5 the item counts at the ML-100k shape follow MovieLens'
       rank-frequency curve, from ~750 raters for the top item down to 1,
       where a pure Zipf law would have every user rate the top items).  User
       ``u`` draws their items without replacement with weights
       ``popularity_i * exp(selection_bias * p_u . q_i)`` (Efraimidis-Spirakis
       keys, vectorised over a dense block of users at a time), so people rate
       more of what they like, as in MovieLens.  When ``n_ratings >=
       n_items``, items left unrated are then swapped in for surplus ratings
       of items rated several times, so every item has a rating.
    4. **Ratings.**  The preferences of the chosen pairs are cut at their
       quantiles into 1-5 with exactly ``rating_histogram`` (rounded to whole
       ratings; by default MovieLens 100k's 6/11/27/34/21 %).

    Parameters
    ----------
    n_users, n_items : int, >= 1
        Raw ids are the strings ``"1"..str(n_users)`` and
        ``"1"..str(n_items)``.
    n_ratings : int
        Exactly this many ratings, no (user, item) pair twice; from
        ``n_users`` (every user rates) to ``n_users * n_items``.
    random_state : None, int, numpy RandomState or Generator
        Same int seed (and same other arguments), same dataset.
    n_factors : int, >= 1
        Dimension of the latent preferences.
    noise : float, >= 0
        Std of the per-rating noise added to the preference before cutting.
    popularity_sigma : float, >= 0
        Std of the items' log-popularity (0: uniform popularity).
    selection_bias : float, >= 0
        How much liking an item raises the chance of rating it (0: rated
        items depend on popularity only).
    min_user_ratings : int, optional
        Ratings every user has.  Default ``min(20, n_items, n_ratings //
        n_users)`` (MovieLens keeps users with >= 20 ratings).
    rating_histogram : sequence of 5 floats
        Relative frequencies of ratings 1..5 (normalised to sum to 1).

    Returns
    -------
    surprise.dataset.Dataset
        ``rating_scale`` (1, 5), ratings as floats in {1, ..., 5}, raw
        ratings ordered by user then item.

    Raises
    ------
    TypeError
        For arguments of the wrong type.
    ValueError
        For sizes < 1, ``n_ratings`` outside ``[n_users, n_users * n_items]``,
        an impossible ``min_user_ratings`` or a bad histogram.

    Notes
    -----
    Time and memory grow with ``n_users * n_items`` (dense blocks of about
    4M cells are sampled at a time): ML-100k's shape takes a fraction of a
    second, ML-1M's (6040 x 3706, 1000209 ratings) a few seconds.

    Examples
    --------
    >>> data = synthetic(n_users=100, n_items=150, n_ratings=3000, random_state=0)
    >>> trainset = data.build_full_trainset()
    >>> trainset.n_users, trainset.n_items, trainset.n_ratings
    (100, 150, 3000)
    """
    n_users = check_int(n_users, "n_users", minimum=1)
    n_items = check_int(n_items, "n_items", minimum=1)
    n_ratings = check_int(n_ratings, "n_ratings", minimum=1)
    n_factors = check_int(n_factors, "n_factors", minimum=1)
    noise = check_real(noise, "noise", low=0.0)
    popularity_sigma = check_real(popularity_sigma, "popularity_sigma", low=0.0)
    selection_bias = check_real(selection_bias, "selection_bias", low=0.0)
    probs = _check_histogram(rating_histogram)
    if n_ratings > n_users * n_items:
        raise ValueError(f"n_ratings must be <= n_users * n_items = {n_users * n_items} "
                         f"(no pair is rated twice), got {n_ratings}")
    if n_ratings < n_users:
        raise ValueError(f"n_ratings must be >= n_users = {n_users} (every user rates at "
                         f"least one item), got {n_ratings}")
    if min_user_ratings is None:
        minimum = min(20, n_items, n_ratings // n_users)
    else:
        minimum = check_int(min_user_ratings, "min_user_ratings", minimum=1, maximum=n_items)
        if minimum * n_users > n_ratings:
            raise ValueError(f"min_user_ratings must be <= n_ratings // n_users = "
                             f"{n_ratings // n_users}, got {minimum}")
    rng = check_random_state(random_state)

    # Latent preferences (unit-variance interaction p_u . q_i).
    user_factors = rng.standard_normal((n_users, n_factors)) / math.sqrt(n_factors)
    item_factors = rng.standard_normal((n_items, n_factors))
    log_popularity = popularity_sigma * rng.standard_normal(n_items)
    pop_z = log_popularity - log_popularity.mean()
    if pop_z.std() > 0:
        pop_z /= pop_z.std()
    item_bias = 0.5 * (0.7 * pop_z + math.sqrt(0.51) * rng.standard_normal(n_items))
    user_bias = 0.5 * rng.standard_normal(n_users)

    # Who rates which items: weighted sampling without replacement per user.
    counts = _user_counts(rng, n_users, n_items, n_ratings, minimum)
    block = max(1, _BLOCK_CELLS // n_items)
    column = np.arange(n_items)
    chosen = []
    for start in range(0, n_users, block):
        stop = min(start + block, n_users)
        log_weight = log_popularity[None, :] + selection_bias * (
            user_factors[start:stop] @ item_factors.T)
        # Efraimidis-Spirakis: smallest E / w, i.e. smallest log(E) - log(w).
        with np.errstate(divide="ignore"):  # an exponential draw of exactly 0 -> -inf
            keys = np.log(rng.standard_exponential((stop - start, n_items))) - log_weight
        order = np.argsort(keys, axis=1)
        chosen.append(order[column[None, :] < counts[start:stop, None]])
    items = np.concatenate(chosen).astype(np.int64)
    users = np.repeat(np.arange(n_users, dtype=np.int64), counts)

    if n_ratings >= n_items:
        items = _cover_items(rng, items, n_items)

    # Ratings: preference cut at its quantiles into the target histogram.
    preference = user_bias[users] + item_bias[items] + noise * rng.standard_normal(n_ratings)
    for start in range(0, n_ratings, 1 << 18):
        part = slice(start, start + (1 << 18))
        preference[part] += np.einsum("ij,ij->i", user_factors[users[part]],
                                      item_factors[items[part]])
    cuts = np.round(np.cumsum(probs)[:-1] * n_ratings).astype(np.int64)
    ratings = np.empty(n_ratings, dtype=np.float64)
    ratings[np.argsort(preference, kind="stable")] = np.repeat(
        np.arange(1.0, 6.0), np.diff(np.concatenate([[0], cuts, [n_ratings]])))

    order = np.lexsort((items, users))
    user_names = np.array([str(u) for u in range(1, n_users + 1)], dtype=object)
    item_names = np.array([str(i) for i in range(1, n_items + 1)], dtype=object)
    # Object columns: Surprise iterates the frame row by row, which is slow on
    # pandas' string dtype.
    frame = pd.DataFrame({"user": pd.Series(user_names[users[order]], dtype=object),
                          "item": pd.Series(item_names[items[order]], dtype=object),
                          "rating": ratings[order]})
    return Dataset.load_from_df(frame, Reader(rating_scale=(1, 5)))


def _cover_items(rng: np.random.Generator, items: np.ndarray, n_items: int) -> np.ndarray:
    """Give every unrated item one rating taken from an item with several.

    A rating ``(u, j)`` of an item ``j`` rated at least twice becomes
    ``(u, i)`` for an unrated ``i``: no pair can repeat (nobody rated ``i``),
    users keep their counts and ``j`` keeps at least one rating.
    """
    item_counts = np.bincount(items, minlength=n_items)
    unrated = np.flatnonzero(item_counts == 0)
    if len(unrated) == 0:
        return items
    # Position of each rating within its item (0 for the first): all but one
    # rating of every item may be given away.
    order = np.argsort(items, kind="stable")
    starts = np.concatenate([[0], np.cumsum(item_counts)[:-1]])
    within = np.empty(len(items), dtype=np.int64)
    within[order] = np.arange(len(items)) - starts[items[order]]
    spare = np.flatnonzero(within > 0)
    taken = rng.choice(spare, size=len(unrated), replace=False)
    items = items.copy()
    items[taken] = rng.permutation(unrated)
    return items
