"""Any table of ratings, CSV, TSV or Parquet, as a Surprise `Dataset`.

[`load_ratings_table`][] reads the user, item and rating columns (named, or
by position) with pandas' C parser, ids as strings, and refuses what no model
could fit: missing values, a pair rated twice, a scale it cannot hold.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from surprise import Dataset, Reader

from ..utils._validation import check_real
from .files import DatasetUnavailable, PathLike, ratings_frame

__all__ = ["load_ratings_table"]

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
    # with '::', the fields between the separators' two ':' are read too: they must be empty
    gaps = list(range(1, max(positions), 2)) if sep == "::" else []
    try:
        table = pd.read_csv(file, skiprows=1 if named else 0, usecols=positions + gaps,
                            dtype={**{p: object for p in positions[:2] + gaps},
                                   positions[2]: np.float64},
                            keep_default_na=False, na_values={positions[2]: [""]},
                            skipinitialspace=True, **options)
    except ValueError as error:       # a rating that is not a number, a ragged line
        raise _unreadable(file, columns, error) from None
    if gaps:
        inside = (table[gaps] != "").any(axis=1).to_numpy()
        if inside.any():
            line = int(np.argmax(inside)) + 1 + bool(named)
            raise ValueError(f"{file}, line {line}: a ':' inside a field of a '::'-separated "
                             "table (ids and ratings cannot hold ':')")
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
    lowest = check_real(lowest, "rating_scale lowest")
    highest = check_real(highest, "rating_scale highest")
    if lowest >= highest:
        raise ValueError(f"rating_scale must be (lowest, highest) with lowest < highest, got "
                         f"{rating_scale!r}")
    return lowest, highest


def _table_scale(scale: tuple[float, float] | None, ratings: np.ndarray,
                 file: Path) -> tuple[float, float]:
    """``scale``, checked to hold the ratings; by default their lowest and highest."""
    low, high = float(ratings.min()), float(ratings.max())
    if scale is None:
        if low == high:
            raise ValueError(f"every rating of {file} is {low:g}, so the rating scale cannot "
                             "be read from them: give rating_scale=(lowest, highest)")
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
    frame = ratings_frame(read[0].to_numpy(), read[1].to_numpy(), ratings)
    twice = frame.duplicated(["user", "item"]).to_numpy()
    if twice.any():
        first = frame.iloc[int(np.argmax(twice))]
        raise ValueError(f"{file} rates {int(twice.sum())} (user, item) pairs more than once, "
                         f"e.g. user {first['user']!r}, item {first['item']!r}: keep one "
                         "rating per pair")
    return Dataset.load_from_df(frame, Reader(rating_scale=scale))
