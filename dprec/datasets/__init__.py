"""Rating datasets: MovieLens, Jester, Netflix, HetRec Last.fm and a synthetic generator.

Every loader returns a Surprise `Dataset` with raw
ids as strings (as Surprise's own loaders give them), so the result plugs into
``build_full_trainset``, ``train_test_split``, ``cross_validate`` and
``GridSearchCV`` unchanged.

* [`load`][] -- a dataset by name (`DATASETS`), read offline only, never
  downloaded: ``"ml-100k"`` (Surprise's builtin copy), the MovieLens
  releases ``"ml-1m"`` to ``"ml-32m"`` and ``"ml-latest-small"``,
  ``"jester"``, ``"netflix"`` (their files read by
  [`dprec.datasets.files.load_dataset_files`][]), ``"lastfm"`` (HetRec 2011
  Last.fm play counts turned into 1-5 ratings, see [`lastfm_ratings`][]) or
  ``"synthetic"`` ([`synthetic`][] with a fixed seed).
* [`dprec.datasets.ratings_table.load_ratings_table`][] -- any CSV, TSV or Parquet table
  of ratings.
* [`synthetic`][] -- a MovieLens-like dataset of any shape, with
  collaborative signal, generated without a Python loop over ratings.
* [`user_item_matrix`][] -- a trainset as a ``scipy.sparse.csr_matrix``.
* [`ArrayDataset`][dprec.datasets.arrays.ArrayDataset],
  [`ArrayKFold`][dprec.datasets.arrays.ArrayKFold] -- the larger data as
  arrays: Surprise's trainsets, folds and algorithms at about 30 bytes a
  rating (``load(..., as_arrays=True)``, ``synthetic(..., as_arrays=True)``).

The public datasets are not redistributed with dprec; the documentation's
[data section](../getting_started.md#data) says where to get them and how to cite them.

The package `dprec.datasets`: these loaders, `arrays` (ratings as arrays), `files`
(where the data lives), `ratings_table` (a ratings file read as a table) and
`generator` (the synthetic ratings).
Floor 1 of the package map in ``docs/development.md``. May import: `dprec.utils`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from surprise import Dataset, Reader

from ..utils._ratings import user_item_matrix
from .arrays import ArrayDataset, ArrayKFold, ArrayTestset, ArrayTrainset, array_train_test_split
from .files import (
    RATING_SCALES,
    TITLES,
    DatasetUnavailable,
    data_folder_setting,
    load_dataset_files,
    read_dataset_columns,
    surprise_data_folder,
)
from .generator import ML100K_HISTOGRAM, synthetic

__all__ = [
    "DATASETS",
    "ArrayDataset",
    "ArrayKFold",
    "ArrayTestset",
    "ArrayTrainset",
    "array_train_test_split",
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
DATASETS: tuple[str, ...] = ("ml-100k", "ml-1m", "ml-10m", "ml-20m", "ml-25m", "ml-32m",
                             "ml-latest-small", "jester", "netflix", "lastfm", "synthetic")


_ML100K_SUBPATH = Path("ml-100k") / "ml-100k" / "u.data"
_LASTFM_DIR = "hetrec2011-lastfm-2k"
_LASTFM_FILE = "user_artists.dat"


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
    labels = {"ml-100k": "MovieLens 100k", "lastfm": "HetRec 2011 Last.fm", **TITLES}
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

def load(name: str, path: str | os.PathLike | None = None, *, as_arrays: bool = False,
         **kwargs) -> Dataset | ArrayDataset:
    """Load a dataset by name, offline.

    Parameters
    ----------
    name : str
        One of `DATASETS`, case-insensitive.

        * ``"ml-100k"``: MovieLens 100k through Surprise's
          ``Dataset.load_builtin("ml-100k", prompt=False)`` (100000 ratings,
          943 users, 1682 items, ratings 1-5).  The file is looked for first
          and [`DatasetUnavailable`][] raised if it is missing, so Surprise
          never prompts or tries a download.
        * ``"ml-1m"``, ``"ml-10m"`` (``ratings.dat``, ratings 1-5 and
          0.5-5), ``"ml-20m"``, ``"ml-25m"``, ``"ml-32m"``,
          ``"ml-latest-small"`` (``ratings.csv``, ratings 0.5-5): MovieLens;
          ``"jester"``: Jester dataset 2's ``jester_ratings.dat`` (ratings
          -10 to 10); ``"netflix"``: the Netflix Prize training set
          (``training_set/mv_*.txt`` or ``combined_data_*.txt``, ratings
          1-5).  Read by [`dprec.datasets.files.load_dataset_files`][].
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
        else inside it.  For the others: the file, a folder holding it, or a
        folder holding the dataset's folder (``ml-1m/``, ``ml-10M100K/``,
        ``ml-25m/``, ``jester/``, ``netflix/``, ``training_set/``, ...);
        default: those folders in ``$SURPRISE_DATA_FOLDER``, see
        [`dprec.datasets.files.find_dataset_files`][].  Not used by
        ``"synthetic"``.
    as_arrays : bool, default False
        Return an [`ArrayDataset`][dprec.datasets.arrays.ArrayDataset] (three
        arrays, the raw ids once each) instead of a Surprise `Dataset` (a tuple
        per rating): for the larger releases.  MovieLens 1M to 32M, Jester and
        Netflix are then read without a Python object per rating.  The same
        ratings in the same order: [`ArrayKFold`][dprec.datasets.arrays.ArrayKFold]
        gives the folds Surprise's `KFold` gives.
    **kwargs
        Keyword arguments of [`synthetic`][] (``"synthetic"`` only).

    Returns
    -------
    surprise.dataset.Dataset or ArrayDataset

    Raises
    ------
    ValueError
        For an unknown ``name`` (the message lists `DATASETS`).
    TypeError
        For a ``name`` that is not a string, ``path`` given to
        ``"synthetic"``, or ``kwargs`` given to another dataset.
    DatasetUnavailable
        When no local copy of a public dataset is found.  The message names
        the paths tried and ``SURPRISE_DATA_FOLDER`` (or ``DPREC_LASTFM``).

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
        return synthetic(**kwargs, as_arrays=as_arrays)
    if kwargs:
        raise TypeError(f"load({key!r}) got unexpected keyword arguments {sorted(kwargs)}")
    if key in TITLES:
        if as_arrays:
            return ArrayDataset.from_columns(*read_dataset_columns(key, path),
                                             rating_scale=RATING_SCALES[key])
        return load_dataset_files(key, path)
    data = _load_ml100k(path) if key == "ml-100k" else _load_lastfm(path)
    return ArrayDataset.from_surprise(data) if as_arrays else data


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
    candidates = [surprise_data_folder() / _ML100K_SUBPATH]
    builtin = _surprise_builtin_ml100k()
    if builtin is not None and os.path.abspath(builtin) != os.path.abspath(candidates[0]):
        candidates.append(builtin)
    return candidates


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
        f"MovieLens 100k is not available offline: no file at {tried} ({data_folder_setting()}). "
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
    folder = surprise_data_folder()
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
        f"{data_folder_setting()}). "
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
