"""Rating files read offline: MovieLens 1M to 32M, Jester, the Netflix Prize, any table.

Every reader parses with pandas' C parser (no Python loop over the ratings)
and gives raw ids as strings, as Surprise's own loaders do; each id's string
is made once and shared by all its ratings.  dprec never downloads a file.

* [`load_dataset_files`][] -- a public dataset from its local files, by name
  (one of `TITLES`); [`dprec.datasets.load`][] calls it.
* [`find_dataset_files`][] -- the files it reads, or [`DatasetUnavailable`][]
  naming every path it tried.
* [`read_dataset_files`][] -- the same ratings as a `pandas.DataFrame`.
* [`load_ratings_table`][] -- any CSV, TSV or Parquet table of ratings, with
  the columns named.

Where the files are looked for: ``path=`` (the file, the folder holding it,
or a folder holding the dataset's own folder, e.g. ``ml-25m/``), else the
folder Surprise uses, ``$SURPRISE_DATA_FOLDER`` (default ``~/.surprise_data``).
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from surprise import Dataset, Reader
from surprise.builtin_datasets import BUILTIN_DATASETS

from ._environment import IGNORED
from ._validation import check_real

__all__ = [
    "RATING_SCALES",
    "TITLES",
    "DatasetUnavailable",
    "data_folder_setting",
    "find_dataset_files",
    "load_dataset_files",
    "load_ratings_table",
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


def _frame(users: np.ndarray, items: np.ndarray, ratings: np.ndarray) -> pd.DataFrame:
    # Object columns: Surprise iterates the frame row by row, which is slow on
    # pandas' string dtype.
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
        return _frame(*parts[0])
    return _frame(*(np.concatenate(column) for column in zip(*parts)))


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
    about 3.7 GB (20 s on 2 cores, `benchmarks/bench_loaders.py`), the Netflix
    Prize's 100 million ratings need about 15 GB.
    """
    key, _ = _layout(name)
    return _dataset(read_dataset_files(key, path), RATING_SCALES[key])


def _dataset(frame: pd.DataFrame, scale: tuple[float, float]) -> Dataset:
    return Dataset.load_from_df(frame, Reader(rating_scale=scale))


# --------------------------------------------------------------------------
# Any table of ratings
# --------------------------------------------------------------------------

_COMPRESSED = (".gz", ".bz2", ".zip", ".xz", ".zst")
_SEPARATORS = {".csv": ",", ".tsv": "\t", ".tab": "\t"}
_PARQUET = (".parquet", ".pq")
_PARAMETERS = ("user", "item", "rating")


def _separator(file: Path, sep: str | None) -> str | None:
    """The separator of a text table, ``None`` for Parquet."""
    suffixes = [s.lower() for s in file.suffixes]
    if suffixes and suffixes[-1] in _COMPRESSED:
        suffixes.pop()
    suffix = suffixes[-1] if suffixes else ""
    if suffix in _PARQUET:
        if sep is not None:
            raise ValueError(f"sep is not used for a Parquet file ({file.name}), got {sep!r}")
        return None
    if sep is None:
        if suffix not in _SEPARATORS:
            raise ValueError(f"sep: the separator of {file.name} cannot be guessed from its "
                             f"extension (known: {', '.join([*_SEPARATORS, *_PARQUET])}); "
                             "pass sep=...")
        return _SEPARATORS[suffix]
    if not isinstance(sep, str):
        raise TypeError(f"sep must be a string, got {type(sep).__name__}")
    if len(sep) != 1 and sep not in ("::", r"\s+"):
        raise ValueError(f"sep must be one character, '::' or r'\\s+', got {sep!r}")
    return sep


def _check_columns(columns: Sequence) -> bool:
    """Whether the columns are names (a header) rather than 0-based positions."""
    for parameter, column in zip(_PARAMETERS, columns):
        if isinstance(column, bool) or not isinstance(column, (str, int, np.integer)):
            raise TypeError(f"{parameter} must be a column name or a 0-based position, got "
                            f"{type(column).__name__} {column!r}")
        if not isinstance(column, str) and column < 0:
            raise ValueError(f"{parameter} must be a position >= 0, got {column}")
    named = [isinstance(column, str) for column in columns]
    if any(named) and not all(named):
        raise TypeError("user, item and rating must all be column names (a table with a "
                        f"header) or all positions (without), got {tuple(columns)}")
    if len(set(columns)) != 3:
        raise ValueError(f"user, item and rating must be three columns, got {tuple(columns)}")
    return all(named)


def _positions(file: Path, found: list[str], columns: Sequence, named: bool) -> list[int]:
    """The positions of ``columns`` among the ``found`` columns of ``file``."""
    positions = []
    for parameter, column in zip(_PARAMETERS, columns):
        if named and column not in found:
            raise ValueError(f"{parameter}={column!r} is not a column of {file}: its columns "
                             f"are {found}")
        if not named and column >= len(found):
            raise ValueError(f"{parameter}={column!r} is not a column of {file}: it has "
                             f"{len(found)} columns")
        positions.append(found.index(column) if named else int(column))
    return positions


def _unreadable(file: Path, columns: Sequence, error: Exception) -> ValueError:
    user, item, rating = columns
    return ValueError(f"{file} could not be read as a ratings table with columns "
                      f"user={user!r}, item={item!r}, rating={rating!r}: {error}")


def _read_text(file: Path, sep: str, columns: Sequence, named: bool) -> list[pd.Series]:
    """The three columns of a text table; ``'::'`` is read as ``':'``, taking every
    other field."""
    options = {"sep": ":" if sep == "::" else sep, "header": None, "engine": "c"}
    try:        # the first line: the header, or the number of fields
        first = pd.read_csv(file, nrows=1, dtype=str, keep_default_na=False, **options)
    except ValueError as error:       # pandas' ParserError, EmptyDataError, UnicodeDecodeError
        raise _unreadable(file, columns, error) from None
    found = [field.strip() for field in first.iloc[0].tolist()] if len(first) else []
    step = 2 if sep == "::" else 1
    positions = [step * p for p in _positions(file, found[::step], columns, named)]
    try:
        table = pd.read_csv(file, skiprows=1 if named else 0, usecols=positions,
                            dtype={positions[0]: object, positions[1]: object,
                                   positions[2]: np.float64}, **options)
    except ValueError as error:       # a rating that is not a number, a ragged line
        raise _unreadable(file, columns, error) from None
    return [table[p] for p in positions]


def _read_parquet(file: Path, columns: Sequence, named: bool) -> list[pd.Series]:
    try:
        table = pd.read_parquet(file)
    except ImportError:
        raise ImportError("reading a Parquet file needs pyarrow: pip install "
                          "'dprec[parquet]' (or pyarrow)") from None
    except ValueError as error:       # pyarrow's ArrowInvalid: not a Parquet file
        raise _unreadable(file, columns, error) from None
    found = [str(c) for c in table.columns]
    return [table.iloc[:, p] for p in _positions(file, found, columns, named)]


def _check_scale(rating_scale) -> tuple[float, float] | None:
    if rating_scale is None:
        return None
    if isinstance(rating_scale, (str, bytes)):
        raise TypeError(f"rating_scale must be a pair (lowest, highest), got {rating_scale!r}")
    try:
        lowest, highest = rating_scale
    except (TypeError, ValueError):
        raise TypeError("rating_scale must be a pair (lowest, highest), "
                        f"got {rating_scale!r}") from None
    check_real(lowest, "rating_scale lowest")
    check_real(highest, "rating_scale highest")
    if lowest > highest:
        raise ValueError(f"rating_scale must be (lowest, highest), got {rating_scale!r}")
    return lowest, highest


def _table_scale(scale: tuple[float, float] | None, ratings: np.ndarray,
                 file: Path) -> tuple[float, float]:
    """``scale``, checked to hold the ratings; by default their lowest and highest."""
    low, high = float(ratings.min()), float(ratings.max())
    if scale is None:
        return tuple(int(x) if x.is_integer() else x for x in (low, high))
    if low < scale[0] or high > scale[1]:
        raise ValueError(f"rating_scale {scale} does not hold the ratings of {file}, from "
                         f"{low:g} to {high:g}")
    return scale


def load_ratings_table(path: PathLike, user: str | int = "user", item: str | int = "item",
                       rating: str | int = "rating", *, sep: str | None = None,
                       rating_scale: tuple[float, float] | None = None) -> Dataset:
    """Any table of ratings, CSV, TSV or Parquet, as a Surprise `Dataset`.

    Parameters
    ----------
    path : str or path-like
        The file.  Its extension says its format: ``.csv`` (comma-separated),
        ``.tsv`` or ``.tab`` (tab-separated), ``.parquet`` or ``.pq``; text may
        be compressed (``.csv.gz``, ...).  Other extensions need ``sep``.
    user, item, rating : str or int
        The columns: all names from the file's header, or all 0-based
        positions for a text file without a header (or a Parquet file's
        column order).  Other columns are not used.
    sep : str, optional
        The separator of a text file: one character, ``"::"`` (MovieLens'
        ``.dat``; no field may hold a ``:``) or ``r"\\s+"`` (any whitespace).
        Default: guessed from the extension.
    rating_scale : (float, float), optional
        ``(lowest, highest)``.  Default: the lowest and highest rating in the file.

    Returns
    -------
    surprise.dataset.Dataset
        Raw ids are the id columns' text (``str``), ratings floats.

    Raises
    ------
    DatasetUnavailable
        When there is no such file.
    TypeError
        For arguments of the wrong type.
    ValueError
        For a column not in the file (the message lists its columns), an id or
        rating missing, ratings that are not numbers or lie outside
        ``rating_scale``, an unknown extension without ``sep``.
    ImportError
        For a Parquet file without pyarrow (``pip install 'dprec[parquet]'``).

    Examples
    --------
    >>> data = load_ratings_table("ratings.tsv", user="user_id", item="item_id",
    ...                           rating="stars")                      # doctest: +SKIP
    """
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a string or a path, got {type(path).__name__}")
    file = Path(path)
    columns = (user, item, rating)
    named = _check_columns(columns)
    separator = _separator(file, sep)
    scale = _check_scale(rating_scale)
    if not file.is_file():
        raise DatasetUnavailable(f"no ratings table at {file}: give the path of a CSV, TSV "
                                 "or Parquet file")
    read = _read_parquet(file, columns, named) if separator is None else \
        _read_text(file, separator, columns, named)
    for parameter, column, values in zip(_PARAMETERS, columns, read):
        if values.isna().any():
            raise ValueError(f"{parameter} column {column!r} of {file} has "
                             f"{int(values.isna().sum())} missing values")
    if not pd.api.types.is_numeric_dtype(read[2]) or pd.api.types.is_bool_dtype(read[2]):
        raise ValueError(f"rating column {rating!r} of {file} is not numeric ({read[2].dtype})")
    ratings = read[2].to_numpy(dtype=np.float64)
    if len(ratings) == 0:
        raise ValueError(f"{file} has no ratings")
    if not np.isfinite(ratings).all():
        raise ValueError(f"rating column {rating!r} of {file} has values that are not finite")
    scale = _table_scale(scale, ratings, file)
    return _dataset(_frame(read[0].to_numpy(), read[1].to_numpy(), ratings), scale)
