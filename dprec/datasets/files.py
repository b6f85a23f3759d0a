"""Rating files read offline: MovieLens 1M to 32M, Jester, the Netflix Prize.

Every reader parses with pandas' C parser (no Python loop over the ratings)
and gives raw ids as strings, as Surprise's own loaders do; each id's string
is made once and shared by all its ratings.  dprec never downloads a file.

* [`load_dataset_files`][] -- a public dataset from its local files, by name
  (one of `TITLES`); [`dprec.datasets.load`][] calls it.
* [`find_dataset_files`][] -- the files it reads, or [`DatasetUnavailable`][]
  naming every path it tried.
* [`read_dataset_files`][] -- the same ratings as a `pandas.DataFrame`;
  [`read_dataset_columns`][] as three arrays (what
  `dprec.datasets.load(name, as_arrays=True)` reads).

Where the files are looked for: ``path=`` (the file, the folder holding it,
or a folder holding the dataset's own folder, e.g. ``ml-25m/``), else the
folder Surprise uses, ``$SURPRISE_DATA_FOLDER`` (default ``~/.surprise_data``).
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from surprise import Dataset, Reader
from surprise.builtin_datasets import BUILTIN_DATASETS

from ..utils._environment import IGNORED

__all__ = [
    "RATING_SCALES",
    "TITLES",
    "DatasetUnavailable",
    "data_folder_setting",
    "find_dataset_files",
    "load_dataset_files",
    "ratings_frame",
    "read_dataset_columns",
    "read_dataset_files",
    "surprise_data_folder",
]

PathLike = str | os.PathLike


class DatasetUnavailable(FileNotFoundError, RuntimeError):
    """A public dataset has no local copy (dprec never downloads one).

    Subclasses both `FileNotFoundError` and `RuntimeError`; the
    message says which files were looked for and which setting to change.
    """


# Raised, documented and imported as dprec.datasets.DatasetUnavailable, its home
# before the file readers had a module of their own.
DatasetUnavailable.__module__ = "dprec.datasets"


def surprise_data_folder() -> Path:
    """The folder Surprise's ``get_dataset_dir()`` names now (without creating it)."""
    default = os.path.expanduser("~") + "/.surprise_data/"
    return Path(os.environ.get("SURPRISE_DATA_FOLDER", default))


def data_folder_setting() -> str:
    """``SURPRISE_DATA_FOLDER`` in the loaders' messages: its value, why it was ignored at
    import (the words of that warning), or that it is not set."""
    folder = os.environ.get("SURPRISE_DATA_FOLDER")
    if folder is not None:
        return f"SURPRISE_DATA_FOLDER={folder!r}"
    return IGNORED or "SURPRISE_DATA_FOLDER is not set, so Surprise uses ~/.surprise_data"


# --------------------------------------------------------------------------
# The formats: each parser gives (users, items, ratings) arrays for one file
# --------------------------------------------------------------------------

_Columns = tuple[np.ndarray, np.ndarray, np.ndarray]


def _parse_double_colon(file: Path) -> _Columns:
    """MovieLens' ``UserID::MovieID::Rating::Timestamp`` lines.  The C parser takes one
    character as separator: split at every ``:``, the fields are columns 0, 2, 4, 6."""
    table = pd.read_csv(file, sep=":", header=None, usecols=[0, 2, 4], engine="c",
                        dtype={0: np.int64, 2: np.int64, 4: np.float64})
    return table[0].to_numpy(), table[2].to_numpy(), table[4].to_numpy()


def _parse_movielens_csv(file: Path) -> _Columns:
    """MovieLens' ``ratings.csv``: header ``userId,movieId,rating,timestamp``."""
    table = pd.read_csv(file, usecols=["userId", "movieId", "rating"], engine="c",
                        dtype={"userId": np.int64, "movieId": np.int64, "rating": np.float64})
    return table["userId"].to_numpy(), table["movieId"].to_numpy(), table["rating"].to_numpy()


def _parse_jester(file: Path) -> _Columns:
    """Jester dataset 2's ``jester_ratings.dat``: ``user item rating``, any whitespace."""
    table = pd.read_csv(file, sep=r"\s+", header=None, usecols=[0, 1, 2], engine="c",
                        dtype={0: np.int64, 1: np.int64, 2: np.float64})
    return table[0].to_numpy(), table[1].to_numpy(), table[2].to_numpy()


def _parse_netflix(file: Path) -> _Columns:
    """A Netflix Prize training file: blocks of a ``MovieID:`` line then
    ``CustomerID,Rating,Date`` lines (one block in ``mv_*.txt``, many in
    ``combined_data_*.txt``).

    With ``:`` read as the start of a comment, a ``MovieID:`` line is a row of one
    field, the movie id, and no rating: the rows without a rating start the blocks,
    and each block's movie id is repeated over the block's rows.
    """
    text = file.read_bytes()
    table = pd.read_csv(io.BytesIO(text), header=None, names=["id", "rating", "date"],
                        usecols=["id", "rating"], comment=":", engine="c",
                        dtype={"id": np.int64, "rating": np.float64})
    ids, ratings = table["id"].to_numpy(), table["rating"].to_numpy()
    starts = np.flatnonzero(np.isnan(ratings))
    if len(starts) == 0 or starts[0] != 0:
        raise ValueError("the first line is not a 'MovieID:' line")
    if len(starts) != text.count(b":"):
        raise ValueError("a line has no rating and is not a 'MovieID:' line")
    movies = np.repeat(ids[starts], np.diff(np.append(starts, len(ids))) - 1)
    rated = np.ones(len(ids), dtype=bool)
    rated[starts] = False
    return ids[rated], movies, ratings[rated]


_DAT_FORM = "'::'-separated UserID::MovieID::Rating::Timestamp lines"
_CSV_FORM = "comma-separated, with the header userId,movieId,rating,timestamp"


@dataclass(frozen=True)
class _Layout:
    """How a public dataset's ratings are stored, and where they are looked for."""

    title: str
    scale: tuple[float, float]
    what: str                               # the file, in messages
    form: str                               # its format, in messages
    parse: Callable[[Path], _Columns]
    files: tuple[str, ...]                  # its names (globs) in a folder given as path=
    places: tuple[str, ...]                 # under a data folder (path= or the default)


def _movielens(title: str, name: str, folder: str, file: str,
               scale: tuple[float, float]) -> _Layout:
    """A MovieLens release: ``file`` in ``folder`` (the zip's folder), itself in
    ``name/`` when unzipped Surprise's way (as ``ml-1m/ml-1m/ratings.dat``)."""
    dat = file.endswith(".dat")
    return _Layout(title, scale, file, _DAT_FORM if dat else _CSV_FORM,
                   _parse_double_colon if dat else _parse_movielens_csv, (file,),
                   (f"{folder}/{file}", f"{name}/{folder}/{file}"))


_LAYOUTS: dict[str, _Layout] = {
    "ml-1m": _movielens("MovieLens 1M", "ml-1m", "ml-1m", "ratings.dat", (1, 5)),
    "ml-10m": _movielens("MovieLens 10M", "ml-10m", "ml-10M100K", "ratings.dat", (0.5, 5)),
    "ml-20m": _movielens("MovieLens 20M", "ml-20m", "ml-20m", "ratings.csv", (0.5, 5)),
    "ml-25m": _movielens("MovieLens 25M", "ml-25m", "ml-25m", "ratings.csv", (0.5, 5)),
    "ml-32m": _movielens("MovieLens 32M", "ml-32m", "ml-32m", "ratings.csv", (0.5, 5)),
    "ml-latest-small": _movielens("MovieLens latest small", "ml-latest-small",
                                  "ml-latest-small", "ratings.csv", (0.5, 5)),
    "jester": _Layout("Jester (dataset 2)", (-10, 10), "jester_ratings.dat",
                      "whitespace-separated user item rating lines", _parse_jester,
                      ("jester_ratings.dat",), ("jester/jester_ratings.dat",)),
    "netflix": _Layout("Netflix Prize", (1, 5), "training set",
                       "a 'MovieID:' line, then CustomerID,Rating,Date lines", _parse_netflix,
                       ("combined_data_*.txt", "mv_*.txt"),
                       ("netflix/combined_data_*.txt", "netflix/training_set/mv_*.txt",
                        "training_set/mv_*.txt")),
}

#: The datasets [`load_dataset_files`][] reads, with their titles.
TITLES: dict[str, str] = {name: layout.title for name, layout in _LAYOUTS.items()}

#: Each dataset's rating scale ``(lowest, highest)``: the ``rating_scale`` of its `Dataset`.
RATING_SCALES: dict[str, tuple[float, float]] = {
    name: layout.scale for name, layout in _LAYOUTS.items()}


def _layout(name: str) -> tuple[str, _Layout]:
    if not isinstance(name, str):
        raise TypeError(f"name must be a string, one of {tuple(TITLES)}, "
                        f"got {type(name).__name__}")
    key = name.strip().lower()
    if key not in _LAYOUTS:
        raise ValueError(f"unknown dataset {name!r}; name must be one of {', '.join(TITLES)}")
    return key, _LAYOUTS[key]


# --------------------------------------------------------------------------
# Finding the files
# --------------------------------------------------------------------------

def _surprise_builtin(name: str) -> Path | None:
    """The path Surprise fixed for its builtin ``name`` at its import, if it has one."""
    entry = BUILTIN_DATASETS.get(name)
    return Path(entry.path) if entry is not None else None


def _candidates(name: str, layout: _Layout, path: PathLike | None) -> list[Path]:
    """The files (or glob patterns) tried, in order: see [`find_dataset_files`][]."""
    if path is not None:
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"path must be a string or a path, got {type(path).__name__}")
        base = Path(path)
        if not base.is_dir():
            return [base]
        return [base / file for file in layout.files] + [base / p for p in layout.places]
    folder = surprise_data_folder()
    candidates = [folder / place for place in layout.places]
    builtin = _surprise_builtin(name)      # fixed at Surprise's import: may differ
    if builtin is not None and os.path.abspath(builtin) not in map(os.path.abspath, candidates):
        candidates.append(builtin)
    return candidates


def _existing(candidate: Path) -> list[Path]:
    """The files a candidate names: itself, or a glob pattern's matches, sorted."""
    if "*" in candidate.name:
        return sorted(f for f in candidate.parent.glob(candidate.name) if f.is_file())
    return [candidate] if candidate.is_file() else []


def find_dataset_files(name: str, path: PathLike | None = None) -> list[Path]:
    """The files [`load_dataset_files`][] reads for dataset ``name``.

    Parameters
    ----------
    name : str
        One of `TITLES`, case-insensitive.
    path : str or path-like, optional
        The file itself; or a folder holding it (``ratings.dat``,
        ``ratings.csv``, ``jester_ratings.dat``, Netflix's ``combined_data_*.txt``
        or ``mv_*.txt``); or a folder holding the dataset's own folder: ``ml-1m/``,
        ``ml-10M100K/``, ``ml-20m/``, ``ml-25m/``, ``ml-32m/``,
        ``ml-latest-small/``, ``jester/``, ``netflix/`` or ``training_set/`` (the
        MovieLens folders also inside a folder of the dataset's name, as
        Surprise unzips them: ``ml-10m/ml-10M100K/ratings.dat``).  Default: the
        same folders in ``$SURPRISE_DATA_FOLDER`` (default ``~/.surprise_data``),
        and the path Surprise itself uses for its builtin ``"ml-1m"`` and
        ``"jester"``.

    Returns
    -------
    list of pathlib.Path
        One file, or Netflix's files of the first place that has any, sorted.

    Raises
    ------
    DatasetUnavailable
        When no place has the file; the message names every path tried.
    """
    key, layout = _layout(name)
    candidates = _candidates(key, layout, path)
    for candidate in candidates:
        files = _existing(candidate)
        if files:
            return files
    tried = ", ".join(str(c) for c in candidates)
    if path is not None:
        raise DatasetUnavailable(
            f"{layout.title} is not at the path given: no file at {tried}; give its "
            f"{layout.what} or a folder containing it")
    raise DatasetUnavailable(
        f"{layout.title} is not available offline: no file at {tried} "
        f"({data_folder_setting()}). dprec never downloads it. Put it at "
        f"<folder>/{layout.places[0]} and set SURPRISE_DATA_FOLDER=<folder>, or pass "
        "path=... (the file or a folder holding it) to load().")


# --------------------------------------------------------------------------
# Reading them
# --------------------------------------------------------------------------

def _string_ids(ids: np.ndarray) -> np.ndarray:
    """``ids`` as an object array of ``str``, one string object per distinct id."""
    codes, distinct = pd.factorize(ids)
    return np.asarray(distinct).astype(str).astype(object)[codes]


def ratings_frame(users: np.ndarray, items: np.ndarray, ratings: np.ndarray) -> pd.DataFrame:
    """The `(user, item, rating)` frame Surprise's `Dataset.load_from_df` reads, ids as
    ``str`` objects (Surprise iterates the frame row by row, which is slow on pandas'
    string dtype)."""
    return pd.DataFrame({"user": pd.Series(_string_ids(users), dtype=object, copy=False),
                         "item": pd.Series(_string_ids(items), dtype=object, copy=False),
                         "rating": ratings}, copy=False)


def _check_ratings(ratings: np.ndarray, scale: tuple[float, float]) -> None:
    if len(ratings) == 0:
        raise ValueError("no ratings")
    if not np.isfinite(ratings).all():
        raise ValueError(f"{np.count_nonzero(~np.isfinite(ratings))} ratings are missing "
                         "or not finite")
    low, high = ratings.min(), ratings.max()
    if low < scale[0] or high > scale[1]:
        raise ValueError(f"ratings from {low:g} to {high:g}, outside the scale {scale[0]:g} "
                         f"to {scale[1]:g}")


def read_dataset_columns(name: str, path: PathLike | None = None) -> _Columns:
    """``(users, items, ratings)``: the ratings of dataset ``name`` as three arrays
    (ids as the files' integers), in the files' order; see [`read_dataset_files`][]."""
    key, layout = _layout(name)
    parts = []
    for file in find_dataset_files(key, path):
        try:
            part = layout.parse(file)
            _check_ratings(part[2], layout.scale)
        except ValueError as error:      # pandas' ParserError, UnicodeDecodeError, ours
            raise ValueError(f"{file} is not {layout.title}'s {layout.what} ({layout.form}): "
                             f"{error}") from None
        parts.append(part)
    if len(parts) == 1:
        return parts[0]
    return tuple(np.concatenate(column) for column in zip(*parts))


def read_dataset_files(name: str, path: PathLike | None = None) -> pd.DataFrame:
    """The ratings of dataset ``name`` as a table (see [`find_dataset_files`][] for
    ``name`` and ``path``).

    Returns
    -------
    pandas.DataFrame
        Columns ``user`` and ``item`` (object: raw ids as ``str``) and ``rating``
        (float64), in the files' order; the timestamps are not read.

    Raises
    ------
    DatasetUnavailable
        When the files are not found.
    ValueError
        For a file that is not in the dataset's format (or has ratings outside its
        scale, `RATING_SCALES`), naming the file.
    """
    return ratings_frame(*read_dataset_columns(name, path))


def load_dataset_files(name: str, path: PathLike | None = None) -> Dataset:
    """Dataset ``name`` as a Surprise `Dataset`, read offline from its local files.

    Parameters
    ----------
    name : str
        One of `TITLES`, case-insensitive:

        * ``"ml-1m"``, ``"ml-10m"``: MovieLens' ``ratings.dat``
          (``UserID::MovieID::Rating::Timestamp``), ratings 1-5 and 0.5-5 (half stars);
        * ``"ml-20m"``, ``"ml-25m"``, ``"ml-32m"``, ``"ml-latest-small"``:
          MovieLens' ``ratings.csv`` (header ``userId,movieId,rating,timestamp``),
          ratings 0.5-5;
        * ``"jester"``: Jester dataset 2's ``jester_ratings.dat`` (``user item
          rating``), ratings -10 to 10;
        * ``"netflix"``: the Netflix Prize training set, ``training_set/mv_*.txt`` or
          ``combined_data_*.txt`` (movies as items, customers as users), ratings 1-5.
    path : str or path-like, optional
        Where the files are; see [`find_dataset_files`][].

    Returns
    -------
    surprise.dataset.Dataset
        ``rating_scale`` from `RATING_SCALES`; raw ids are strings, timestamps
        ``None`` (as ``Dataset.load_from_df`` gives them).

    Raises
    ------
    DatasetUnavailable
        When the files are not found; the message names every path tried.
    ValueError
        For a file in another format, naming it.

    Notes
    -----
    Surprise keeps a `Dataset`'s ratings as a list of tuples, about 100 bytes a
    rating, beside the frame it was made from: loading MovieLens 25M peaks at
    about 3.7 GB (20 s on 2 cores, `benchmarks/bench_loaders.py`); at that rate
    (not measured) the Netflix Prize's 100 million ratings would need about 15 GB.
    """
    key, _ = _layout(name)
    return Dataset.load_from_df(read_dataset_files(key, path),
                                Reader(rating_scale=RATING_SCALES[key]))
