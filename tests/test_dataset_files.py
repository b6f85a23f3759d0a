"""Tests of dprec.datasets.files: each public dataset's format, written small into a temporary
folder and read back through dprec.datasets.load, and any ratings table."""

from __future__ import annotations

import gzip
import importlib.util

import pandas as pd
import pytest
from strategies import raises_naming

from dprec.datasets import DATASETS, DatasetUnavailable, load, load_or_synthetic
from dprec.datasets.files import RATING_SCALES, TITLES, find_dataset_files, read_dataset_files
from dprec.datasets.ratings_table import load_ratings_table

#: (user, item, rating) of the small files, in file order
RATINGS = [("1", "10", 4.0), ("1", "20", 3.5), ("2", "10", 0.5), ("3", "30", 5.0),
           ("3", "20", 2.0)]
WHOLE = [(u, i, float(round(r + 0.01))) for u, i, r in RATINGS]      # ratings 1-5


def _ratings(data) -> list[tuple]:
    return [(u, i, r) for u, i, r, _ in data.raw_ratings]


def _check(data, expected, scale) -> None:
    """Raw ratings as written (ids as ``str``), the scale, and a trainset of them."""
    assert _ratings(data) == expected
    assert all(type(u) is str and type(i) is str for u, i, *_ in data.raw_ratings)
    assert all(t is None for *_, t in data.raw_ratings)
    assert data.reader.rating_scale == scale
    trainset = data.build_full_trainset()
    assert trainset.n_ratings == len(expected)
    assert trainset.n_users == len({u for u, _, _ in expected})
    assert trainset.n_items == len({i for _, i, _ in expected})


def _double_colon(ratings) -> str:
    return "".join(f"{u}::{i}::{r:g}::97830076{n}\n" for n, (u, i, r) in enumerate(ratings))


def _movielens_csv(ratings) -> str:
    return "userId,movieId,rating,timestamp\n" + "".join(
        f"{u},{i},{r:.1f},1147880044\n" for u, i, r in ratings)


def test_ml_1m_double_colon_in_its_folder_or_surprises(tmp_path):
    (tmp_path / "ml-1m").mkdir()
    (tmp_path / "ml-1m" / "ratings.dat").write_text(_double_colon(WHOLE))
    for path in (tmp_path, tmp_path / "ml-1m", tmp_path / "ml-1m" / "ratings.dat"):
        _check(load("ml-1m", path=path), WHOLE, (1, 5))
    nested = tmp_path / "surprise" / "ml-1m" / "ml-1m"      # as Surprise unzips it
    nested.mkdir(parents=True)
    (nested / "ratings.dat").write_text(_double_colon(WHOLE))
    _check(load("ML-1M", path=tmp_path / "surprise"), WHOLE, (1, 5))


def test_ml_10m_half_stars_in_ml_10M100K(tmp_path):
    folder = tmp_path / "ml-10M100K"
    folder.mkdir()
    (folder / "ratings.dat").write_text(_double_colon(RATINGS))
    data = load("ml-10m", path=tmp_path)
    _check(data, RATINGS, (0.5, 5))
    assert data.raw_ratings[0][0] is data.raw_ratings[1][0]      # one string per id


@pytest.mark.parametrize("name", ["ml-20m", "ml-25m", "ml-32m", "ml-latest-small"])
def test_movielens_csv_with_header_and_half_stars(tmp_path, name):
    (tmp_path / name).mkdir()
    (tmp_path / name / "ratings.csv").write_text(_movielens_csv(RATINGS))
    for path in (tmp_path, tmp_path / name, tmp_path / name / "ratings.csv"):
        _check(load(name, path=path), RATINGS, (0.5, 5))


def test_the_default_folder_is_surprise_data_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("SURPRISE_DATA_FOLDER", str(tmp_path))
    (tmp_path / "ml-25m").mkdir()
    (tmp_path / "ml-25m" / "ratings.csv").write_text(_movielens_csv(RATINGS))
    _check(load("ml-25m"), RATINGS, (0.5, 5))
    data, label = load_or_synthetic("ml-25m")
    assert label == "MovieLens 25M" and _ratings(data) == RATINGS


def test_jester_negative_ratings_any_whitespace(tmp_path, monkeypatch):
    monkeypatch.setenv("SURPRISE_DATA_FOLDER", str(tmp_path))
    (tmp_path / "jester").mkdir()
    (tmp_path / "jester" / "jester_ratings.dat").write_text(
        "1\t\t5\t\t0.219\n1\t\t7\t\t-9.281\n63978 150 -10\n2  5  10.0\n")
    expected = [("1", "5", 0.219), ("1", "7", -9.281), ("63978", "150", -10.0),
                ("2", "5", 10.0)]
    _check(load("jester"), expected, (-10, 10))
    _check(load("jester", path=tmp_path / "jester"), expected, (-10, 10))


NETFLIX = {"1": [("1488844", 3.0), ("822109", 5.0)], "2": [("1488844", 1.0)],
           "3": [("30878", 4.0), ("822109", 2.0)]}
NETFLIX_RATINGS = [(user, movie, rating) for movie, rows in NETFLIX.items()
                   for user, rating in rows]


def _netflix_block(movie: str) -> str:
    return f"{movie}:\n" + "".join(f"{user},{rating:g},2005-09-06\n"
                                   for user, rating in NETFLIX[movie])


def test_netflix_training_set_folder(tmp_path):
    folder = tmp_path / "training_set"
    folder.mkdir()
    for movie in NETFLIX:
        (folder / f"mv_{int(movie):07d}.txt").write_text(_netflix_block(movie))
    for path in (tmp_path, folder):
        _check(load("netflix", path=path), NETFLIX_RATINGS, (1, 5))
    assert len(find_dataset_files("netflix", tmp_path)) == 3
    _check(load("netflix", path=folder / "mv_0000002.txt"), NETFLIX_RATINGS[2:3], (1, 5))


def test_netflix_combined_data_files(tmp_path, monkeypatch):
    monkeypatch.setenv("SURPRISE_DATA_FOLDER", str(tmp_path))
    (tmp_path / "netflix").mkdir()
    (tmp_path / "netflix" / "combined_data_1.txt").write_text(
        _netflix_block("1") + _netflix_block("2"))
    (tmp_path / "netflix" / "combined_data_2.txt").write_text(_netflix_block("3"))
    _check(load("netflix"), NETFLIX_RATINGS, (1, 5))
    frame = read_dataset_files("netflix")
    assert list(frame.columns) == ["user", "item", "rating"] and len(frame) == 5


@pytest.mark.parametrize(("content", "needle"), [
    ("1488844,3,2005-09-06\n", "'MovieID:'"),
    ("1:\n1488844,3,2005-09-06\n822109\n", "no rating"),
])
def test_netflix_lines_out_of_format_are_named(tmp_path, content, needle):
    wrong = tmp_path / "combined_data_1.txt"
    wrong.write_text(content)
    with pytest.raises(ValueError, match=needle) as info:
        load("netflix", path=wrong)
    assert str(info.value).startswith(f"{wrong} is not Netflix Prize's training set")


@pytest.mark.parametrize(("name", "content"), [
    ("ml-1m", "1,10,4,978300760\n"),            # a CSV where '::' is expected
    ("ml-25m", "user,item,rating\n1,10,4\n"),    # other columns
    ("ml-1m", "1::10::7::978300760\n"),          # a rating outside 1-5
    ("jester", "1 5\n"),
])
def test_a_file_that_is_not_the_dataset_is_named(tmp_path, name, content):
    wrong = tmp_path / "wrong.txt"
    wrong.write_text(content)
    with pytest.raises(ValueError) as info:
        load(name, path=wrong)
    assert str(info.value).startswith(f"{wrong} is not {TITLES[name]}'s"), info.value


@pytest.mark.parametrize("name", sorted(TITLES))
def test_missing_files_name_every_path_tried(tmp_path, monkeypatch, name):
    # not Surprise's own builtin copies (a machine may hold ml-1m or jester there)
    monkeypatch.setattr("dprec.datasets.files.BUILTIN_DATASETS", {})
    with pytest.raises(DatasetUnavailable, match="path given") as info:
        load(name, path=tmp_path)
    assert str(info.value).count(str(tmp_path)) >= 2       # in the folder and below
    monkeypatch.setenv("SURPRISE_DATA_FOLDER", str(tmp_path / "data"))
    with pytest.raises(DatasetUnavailable) as info:
        load(name)
    message = str(info.value)
    assert "SURPRISE_DATA_FOLDER" in message and "path=" in message
    assert str(tmp_path / "data") in message and "never downloads" in message
    assert list(tmp_path.iterdir()) == []                  # nothing made or downloaded


def test_missing_files_list_the_places(tmp_path, monkeypatch):
    monkeypatch.setenv("SURPRISE_DATA_FOLDER", str(tmp_path))
    with pytest.raises(DatasetUnavailable) as info:
        load("ml-10m")
    for place in ("ml-10M100K/ratings.dat", "ml-10m/ml-10M100K/ratings.dat"):
        assert str(tmp_path / place) in str(info.value)
    with pytest.raises(DatasetUnavailable) as info:
        load("netflix")
    for place in ("netflix/combined_data_*.txt", "netflix/training_set/mv_*.txt",
                  "training_set/mv_*.txt"):
        assert str(tmp_path / place) in str(info.value)
    with pytest.raises(DatasetUnavailable, match="not at the path given") as info:
        load("ml-1m", path=tmp_path / "nothing.dat")
    assert str(tmp_path / "nothing.dat") in str(info.value)


def test_unknown_names_list_the_new_datasets():
    with pytest.raises(ValueError) as info:
        load("movielens")
    for name in ("ml-1m", "ml-10m", "ml-20m", "ml-25m", "ml-32m", "ml-latest-small",
                 "jester", "netflix"):
        assert name in str(info.value) and name in DATASETS
    assert set(RATING_SCALES) == set(TITLES) <= set(DATASETS)
    raises_naming(lambda: find_dataset_files("ml-100k"), "name")
    raises_naming(lambda: find_dataset_files(3), "name")
    raises_naming(lambda: load("ml-1m", path=3), "path")
    raises_naming(lambda: load("ml-1m", n_users=3), "n_users")


# --------------------------------------------------------------------------
# load_ratings_table
# --------------------------------------------------------------------------

TABLE = [("u1", "i9", 1.5), ("u2", "i9", 2.0), ("u1", "i3", 7.0)]


def test_csv_with_header_other_columns_and_default_scale(tmp_path):
    file = tmp_path / "ratings.csv"
    file.write_text("stars,when,user_id,item_id\n"
                    + "".join(f"{r},0,{u},{i}\n" for u, i, r in TABLE))
    data = load_ratings_table(file, user="user_id", item="item_id", rating="stars")
    _check(data, TABLE, (1.5, 7))
    data = load_ratings_table(str(file), "user_id", "item_id", "stars", rating_scale=(0, 10))
    assert data.reader.rating_scale == (0, 10)


def test_tsv_ids_keep_their_text(tmp_path):
    file = tmp_path / "ratings.tsv"
    file.write_text("user\titem\trating\n007\t1.0\t3\n7\t1\t4\n")
    _check(load_ratings_table(file), [("007", "1.0", 3.0), ("7", "1", 4.0)], (3, 4))


def test_positions_double_colon_and_compression(tmp_path):
    file = tmp_path / "ratings.dat"
    file.write_text(_double_colon(RATINGS))
    _check(load_ratings_table(file, 0, 1, 2, sep="::"), RATINGS, (0.5, 5))
    file = tmp_path / "ratings.csv.gz"
    with gzip.open(file, "wt") as stream:
        stream.write("".join(f"{u},{i},{r}\n" for u, i, r in RATINGS))
    _check(load_ratings_table(file, 0, 1, 2), RATINGS, (0.5, 5))
    file = tmp_path / "header.dat"
    file.write_text("user::item::rating::ts\n" + _double_colon(RATINGS))
    _check(load_ratings_table(file, "user", "item", "rating", sep="::"), RATINGS, (0.5, 5))
    file = tmp_path / "spaces.txt"
    file.write_text("".join(f"{i}  {u}\t{r}\n" for u, i, r in RATINGS))
    _check(load_ratings_table(file, 1, 0, 2, sep=r"\s+"), RATINGS, (0.5, 5))


@pytest.mark.skipif(importlib.util.find_spec("pyarrow") is None,
                    reason="pyarrow is not installed (the parquet extra)")
def test_parquet(tmp_path):
    file = tmp_path / "ratings.parquet"
    pd.DataFrame({"user": [1, 1, 2], "item": ["a", "b", "a"], "rating": [1, 2, 5]}).to_parquet(
        file)
    _check(load_ratings_table(file), [("1", "a", 1.0), ("1", "b", 2.0), ("2", "a", 5.0)],
           (1, 5))
    with pytest.raises(ValueError, match=r"columns are \['user', 'item', 'rating'\]"):
        load_ratings_table(file, user="who")


def test_parquet_without_pyarrow_names_the_extra(tmp_path, monkeypatch):
    def no_engine(*args, **kwargs):
        raise ImportError("Unable to find a usable engine")

    monkeypatch.setattr(pd, "read_parquet", no_engine)
    file = tmp_path / "ratings.parquet"
    file.write_bytes(b"PAR1")
    with pytest.raises(ImportError, match=r"pyarrow.*dprec\[parquet\]"):
        load_ratings_table(file)


def test_table_errors_name_the_parameter(tmp_path):
    file = tmp_path / "ratings.csv"
    file.write_text("user,item,rating\na,x,1\nb,y,\n")
    with pytest.raises(ValueError, match=r"user='who'.*\['user', 'item', 'rating'\]"):
        load_ratings_table(file, user="who")
    raises_naming(lambda: load_ratings_table(file), "rating")           # a rating missing
    raises_naming(lambda: load_ratings_table(file, 0, 1, 5), "rating")  # 3 columns
    raises_naming(lambda: load_ratings_table(file, "user", 1, "rating"), "user")
    raises_naming(lambda: load_ratings_table(file, "user", "user", "rating"), "user")
    raises_naming(lambda: load_ratings_table(file, user=1.5), "user")
    raises_naming(lambda: load_ratings_table(file, sep=";;"), "sep")
    raises_naming(lambda: load_ratings_table(file, rating_scale=5), "rating_scale")
    raises_naming(lambda: load_ratings_table(3), "path")
    other = tmp_path / "ratings.xyz"
    other.write_text("user,item,rating\na,x,1\n")
    raises_naming(lambda: load_ratings_table(other), "sep")
    words = tmp_path / "words.csv"
    words.write_text("user,item,rating\na,x,good\n")
    raises_naming(lambda: load_ratings_table(words), "rating")
    ok = tmp_path / "ok.csv"
    ok.write_text("user,item,rating\na,x,1\nb,y,3\n")
    raises_naming(lambda: load_ratings_table(ok, rating_scale=(1, 2)), "rating_scale")
    with pytest.raises(DatasetUnavailable, match="missing.csv"):
        load_ratings_table(tmp_path / "missing.csv")


def test_the_command_line_reads_a_release_by_name(tmp_path):
    """`dprec cv --dataset ml-1m --data-path ...` parses, and the data it reads carry the
    release's title."""
    from dprec.cli import build_parser

    (tmp_path / "ml-1m").mkdir()
    (tmp_path / "ml-1m" / "ratings.dat").write_text(_double_colon(WHOLE))
    args = build_parser().parse_args(["cv", "--dataset", "ml-1m", "--data-path", str(tmp_path)])
    assert args.dataset == "ml-1m"
    data, label = load_or_synthetic(args.dataset, path=args.data_path)
    assert label == TITLES["ml-1m"]
    _check(data, WHOLE, (1, 5))


@pytest.mark.parametrize(("content", "kwargs", "needle"), [
    ("u,i,r\n1,a,4\n1,a,5\n", {}, "more than once"),                    # a pair twice
    ("u,i,r\n1,a,4\n2,b,4\n", {}, "rating_scale=(lowest, highest)"),   # one rating value
    ("u,i,r\n1,a,4\n2,b,4\n", {"rating_scale": (4, 4)}, "lowest < highest"),
])
def test_tables_no_model_could_fit_are_refused(tmp_path, content, kwargs, needle):
    file = tmp_path / "t.csv"
    file.write_text(content)
    with pytest.raises(ValueError, match=needle.replace("(", r"\(").replace(")", r"\)")):
        load_ratings_table(file, "u", "i", "r", **kwargs)


def test_a_colon_inside_a_double_colon_field_is_refused(tmp_path):
    file = tmp_path / "t.dat"
    file.write_text("1::10::4::978300760\n2::x:y:4::5::9\n")
    with pytest.raises(ValueError, match="line 2"):
        load_ratings_table(file, 0, 1, 2, sep="::")


def test_ids_keep_their_text_after_a_comma_and_space(tmp_path):
    """Ids such as NA or null are ids, not missing values; a space after the comma is not
    part of the id; Windows line ends and a trailing blank line are read."""
    file = tmp_path / "t.csv"
    file.write_bytes(b"user,item,rating\r\n1, NA,4\r\nnull, 2,3\r\n\r\n")
    assert _ratings(load_ratings_table(file)) == [("1", "NA", 4.0), ("null", "2", 3.0)]
