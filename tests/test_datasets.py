"""Tests of dprec.datasets: loaders, the synthetic generator, user_item_matrix."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st
from strategies import (
    fuzz,
    raises_naming,
    rating_frames,
    synthetic_parameters,
    to_dataset,
    trainset_state,
)
from surprise import Dataset, KNNBasic, Reader, accuracy
from surprise.model_selection import train_test_split

from dprec import PrivateKNN
from dprec.datasets import (
    DATASETS,
    ML100K_HISTOGRAM,
    DatasetUnavailable,
    _ml100k_candidates,
    lastfm_ratings,
    load,
    load_or_synthetic,
    synthetic,
    user_item_matrix,
)

REPO = Path(__file__).resolve().parents[1]


def _frame(data: Dataset) -> pd.DataFrame:
    return pd.DataFrame(data.raw_ratings, columns=["user", "item", "rating", "timestamp"])


@pytest.fixture(scope="module")
def ml_shape():
    """Synthetic data at MovieLens 100k's shape, with its generation time."""
    start = time.perf_counter()
    data = synthetic(random_state=0)
    return data, time.perf_counter() - start


# --------------------------------------------------------------------------
# synthetic()
# --------------------------------------------------------------------------

def test_synthetic_small_shape_and_ids(small_data):
    trainset = small_data.build_full_trainset()
    assert (trainset.n_users, trainset.n_items, trainset.n_ratings) == (120, 200, 4000)
    assert small_data.reader.rating_scale == (1, 5)
    frame = _frame(small_data)
    assert set(frame["user"]) == {str(u) for u in range(1, 121)}
    assert set(frame["item"]) == {str(i) for i in range(1, 201)}
    assert all(isinstance(u, str) and isinstance(i, str) for u, i, *_ in small_data.raw_ratings)
    assert set(frame["rating"]) <= {1.0, 2.0, 3.0, 4.0, 5.0}
    assert frame["timestamp"].isna().all()
    assert not frame.duplicated(["user", "item"]).any()
    assert frame.groupby("user").size().min() >= 20


def test_synthetic_movielens_shape(ml_shape):
    data, seconds = ml_shape
    frame = _frame(data)
    assert len(frame) == 100_000
    assert frame["user"].nunique() == 943 and frame["item"].nunique() == 1682
    assert not frame.duplicated(["user", "item"]).any()
    histogram = frame["rating"].value_counts(normalize=True).sort_index().to_numpy()
    np.testing.assert_allclose(histogram, ML100K_HISTOGRAM, atol=1e-4)
    per_user = frame.groupby("user").size()
    per_item = frame.groupby("item").size()
    assert per_user.min() >= 20
    # Popularity skew: heavy-tailed activity and item popularity.
    assert per_user.max() > 10 * per_user.min()
    assert per_user.mean() > 1.3 * per_user.median()
    assert per_item.max() > 10 * per_item.median()
    assert per_item.min() >= 1
    assert seconds < 10


def test_synthetic_reproducible_and_seed_dependent():
    kwargs = dict(n_users=60, n_items=90, n_ratings=1800)
    first = synthetic(random_state=7, **kwargs)
    assert first.raw_ratings == synthetic(random_state=7, **kwargs).raw_ratings
    assert first.raw_ratings != synthetic(random_state=8, **kwargs).raw_ratings
    # numpy RandomState and Generator seeds are accepted too.
    rs = synthetic(random_state=np.random.RandomState(3), **kwargs)
    gen = synthetic(random_state=np.random.default_rng(3), **kwargs)
    assert len(rs.raw_ratings) == len(gen.raw_ratings) == 1800


def test_synthetic_does_not_mutate_arguments():
    histogram = [1, 1, 1, 1, 1]
    rng = np.random.default_rng(0)
    data = synthetic(30, 40, 600, random_state=rng, rating_histogram=histogram)
    assert histogram == [1, 1, 1, 1, 1]
    counts = _frame(data)["rating"].value_counts().to_numpy()
    assert set(counts) == {120}


@pytest.mark.parametrize(
    "shape",
    [(5, 4, 20),  # every pair rated
     (3, 1, 3),  # one item
     (50, 10, 50),  # one rating per user, fewer items than ratings
     (10, 500, 30)],  # fewer ratings than items: not every item can be rated
)
def test_synthetic_edge_shapes(shape):
    n_users, n_items, n_ratings = shape
    frame = _frame(synthetic(n_users, n_items, n_ratings, random_state=0))
    assert len(frame) == n_ratings
    assert frame["user"].nunique() == n_users
    assert not frame.duplicated(["user", "item"]).any()
    if n_ratings >= n_items:
        assert frame["item"].nunique() == n_items


@pytest.mark.parametrize(
    ("kwargs", "error", "needle"),
    [
        (dict(n_users=0), ValueError, "n_users"),
        (dict(n_items=0), ValueError, "n_items"),
        (dict(n_users=2.5), TypeError, "n_users"),
        (dict(n_users=True), TypeError, "n_users"),
        (dict(n_users=4, n_items=5, n_ratings=21), ValueError, "n_ratings"),
        (dict(n_users=10, n_items=5, n_ratings=9), ValueError, "n_ratings"),
        (dict(n_ratings=0), ValueError, "n_ratings"),
        (dict(n_factors=0), ValueError, "n_factors"),
        (dict(noise=-0.1), ValueError, "noise"),
        (dict(noise=float("nan")), ValueError, "noise"),
        (dict(popularity_sigma=-1.0), ValueError, "popularity_sigma"),
        (dict(selection_bias="x"), TypeError, "selection_bias"),
        (dict(min_user_ratings=0), ValueError, "min_user_ratings"),
        (dict(n_users=10, n_items=50, n_ratings=100, min_user_ratings=11), ValueError,
         "min_user_ratings"),
        (dict(rating_histogram=[1, 2, 3]), ValueError, "rating_histogram"),
        (dict(rating_histogram=[0, 0, 0, 0, 0]), ValueError, "rating_histogram"),
        (dict(user_scale=6.0), ValueError, "user_scale"),
        (dict(popular_noise=1000.0), ValueError, "popular_noise"),
        (dict(consistency=-1.0), ValueError, "consistency"),
        (dict(popularity_bias=1.5), ValueError, "popularity_bias"),
        (dict(n_clusters=-1), ValueError, "n_clusters"),
        (dict(random_state=-1), ValueError, "random_state"),
        (dict(random_state="seed"), TypeError, "random_state"),
    ],
)
def test_synthetic_validation(kwargs, error, needle):
    with pytest.raises(error, match=needle):
        synthetic(**{"n_users": 20, "n_items": 30, "n_ratings": 200, **kwargs})


@pytest.mark.parametrize("kwargs", [dict(activity_sigma=500.0), dict(
    user_scale=5.0, consistency=5.0, popular_noise=-5.0, noise=0.0, popularity_sigma=50.0)])
def test_synthetic_extreme_parameters_give_whole_ratings(kwargs):
    """No overflow at the edges of the ranges: whole ratings, every user at least 20."""
    frame = _frame(synthetic(200, 300, 9000, random_state=0, **kwargs))
    assert len(frame) == 9000 and set(frame["rating"]) <= {1.0, 2.0, 3.0, 4.0, 5.0}
    assert frame.groupby("user").size().min() >= 20


def test_synthetic_has_collaborative_signal():
    data = synthetic(n_users=300, n_items=400, n_ratings=20_000, random_state=0)
    trainset, testset = train_test_split(data, test_size=0.2, random_state=0)
    truth = np.array([r for *_, r in testset])
    global_rmse = float(np.sqrt(np.mean((truth - trainset.global_mean) ** 2)))
    algo = KNNBasic(k=40, sim_options={"name": "cosine"}, verbose=False).fit(trainset)
    knn_rmse = accuracy.rmse(algo.test(testset), verbose=False)
    assert knn_rmse < 0.95 * global_rmse, (knn_rmse, global_rmse)


@pytest.mark.slow
def test_synthetic_movielens_1m_shape_is_fast():
    start = time.perf_counter()
    data = synthetic(6040, 3706, 1_000_209, random_state=0)
    seconds = time.perf_counter() - start
    assert len(data.raw_ratings) == 1_000_209
    assert seconds < 30, seconds


# --------------------------------------------------------------------------
# load()
# --------------------------------------------------------------------------

def test_load_unknown_name_lists_names():
    with pytest.raises(ValueError, match="ml-100k, ml-1m, .*, netflix, lastfm, synthetic"):
        load("movielens")
    with pytest.raises(TypeError, match="name"):
        load(100)
    assert DATASETS[0] == "ml-100k" and DATASETS[-2:] == ("lastfm", "synthetic")


def test_load_synthetic_defaults_and_kwargs():
    data = load("Synthetic", n_users=40, n_items=60, n_ratings=900)
    assert data.raw_ratings == synthetic(40, 60, 900, random_state=0).raw_ratings
    with pytest.raises(TypeError, match="path"):
        load("synthetic", path="somewhere")
    with pytest.raises(TypeError, match="unexpected keyword"):
        load("ml-100k", n_users=3)


@pytest.mark.data
def test_load_ml100k(ml100k):
    data = load("ml-100k")
    assert len(data.raw_ratings) == 100_000
    trainset = data.build_full_trainset()
    assert (trainset.n_users, trainset.n_items) == (943, 1682)
    assert data.reader.rating_scale == (1, 5)
    assert data.raw_ratings == ml100k.raw_ratings
    # Explicit path: the SURPRISE_DATA_FOLDER-style folder or the file itself.
    folder = Path(os.environ["SURPRISE_DATA_FOLDER"])
    assert load("ML-100K", path=folder).raw_ratings == ml100k.raw_ratings
    assert load("ml-100k", path=folder / "ml-100k" / "ml-100k" / "u.data").raw_ratings[:5] == (
        ml100k.raw_ratings[:5])


def test_load_ml100k_missing_names_setting(tmp_path):
    """A path given that holds no u.data: the message names it and the path, and does not
    tell the user to pass the path they passed."""
    with pytest.raises(DatasetUnavailable, match="path given") as info:
        load("ml-100k", path=tmp_path)
    assert str(tmp_path) in str(info.value) and "pass path" not in str(info.value)
    assert isinstance(info.value, FileNotFoundError) and isinstance(info.value, RuntimeError)
    assert list(tmp_path.iterdir()) == []


def test_ml100k_candidates_follow_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("SURPRISE_DATA_FOLDER", str(tmp_path))
    assert _ml100k_candidates()[0] == tmp_path / "ml-100k" / "ml-100k" / "u.data"


def load_ml100k_in_fresh_interpreter(**environ: str) -> subprocess.CompletedProcess:
    """`load('ml-100k')` in a new process with `environ` set (Surprise reads
    SURPRISE_DATA_FOLDER at import); it must fail with DatasetUnavailable, printed."""
    env = {**os.environ, **environ,
           "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    code = ("from dprec.datasets import load, DatasetUnavailable\n"
            "try:\n    load('ml-100k')\n"
            "except DatasetUnavailable as e:\n    print(e)\n    raise SystemExit(3)\n")
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                            text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert result.returncode == 3, result.stderr
    return result


def test_load_ml100k_offline_error_in_fresh_interpreter(tmp_path):
    """Surprise reads SURPRISE_DATA_FOLDER at import: check in a new process."""
    result = load_ml100k_in_fresh_interpreter(SURPRISE_DATA_FOLDER=str(tmp_path))
    assert "SURPRISE_DATA_FOLDER" in result.stdout
    assert str(tmp_path / "ml-100k" / "ml-100k" / "u.data") in result.stdout
    assert list(tmp_path.iterdir()) == []  # no download attempted


def test_an_ignored_data_folder_is_said_the_same_way_twice(tmp_path):
    """An empty SURPRISE_DATA_FOLDER: the import's warning said it was ignored, then the
    loader said "SURPRISE_DATA_FOLDER is not set"; both now say what was ignored."""
    result = load_ml100k_in_fresh_interpreter(SURPRISE_DATA_FOLDER="", HOME=str(tmp_path))
    said = "SURPRISE_DATA_FOLDER='' is empty: ignored, so Surprise uses ~/.surprise_data"
    assert said in result.stderr and said in result.stdout, (result.stderr, result.stdout)
    assert "not set" not in result.stdout + result.stderr


@pytest.mark.parametrize("name", ["lastfm", "ml-100k"])
@pytest.mark.parametrize("content", [b"root:x:0:0:root:/root:/bin/bash\n",
                                     b"\x7fELF\xd0\x00\xff\n"])
def test_a_file_that_is_not_the_dataset_is_named(tmp_path, name, content):
    """A wrong file gave pandas' or Surprise's message ("'utf-8' codec can't decode",
    "Impossible to parse line") without the file."""
    wrong = tmp_path / "wrong.dat"
    wrong.write_bytes(content)
    with pytest.raises(ValueError) as info:
        load(name, path=wrong)
    assert str(info.value).startswith(f"{wrong} "), info.value
    assert ("user_artists.dat" if name == "lastfm" else "u.data") in str(info.value)


@pytest.mark.data
def test_load_lastfm(lastfm_path):
    data = load("lastfm", path=lastfm_path)
    assert load("lastfm", path=lastfm_path.parent).raw_ratings == data.raw_ratings
    assert data.reader.rating_scale == (1, 5)
    frame = _frame(data)
    assert len(frame) == 92_834
    assert frame["user"].nunique() == 1892 and frame["item"].nunique() == 17_632
    assert set(frame["rating"]) == {1.0, 2.0, 3.0, 4.0, 5.0}
    shares = frame["rating"].value_counts(normalize=True)
    assert shares.between(0.15, 0.25).all(), shares
    # Roughly balanced per user; everyone's top artist is a 5.
    per_user = frame.groupby("user")["rating"]
    assert (per_user.max() == 5).all()
    assert (per_user.mean().median() == pytest.approx(3.0, abs=0.05))
    # Ratings rise with play counts within a user.
    raw = pd.read_csv(lastfm_path, sep="\t", dtype={"userID": str, "artistID": str})
    merged = frame.merge(raw, left_on=["user", "item"], right_on=["userID", "artistID"])
    assert len(merged) == len(frame)
    for _, group in list(merged.groupby("user"))[:50]:
        order = np.argsort(group["weight"].to_numpy(), kind="stable")
        assert np.all(np.diff(group["rating"].to_numpy()[order]) >= 0)


@pytest.mark.data
def test_load_lastfm_from_environment(lastfm_path, monkeypatch):
    monkeypatch.setenv("DPREC_LASTFM", str(lastfm_path.parent))
    assert len(load("lastfm").raw_ratings) == 92_834


def test_load_lastfm_missing(tmp_path, monkeypatch):
    monkeypatch.setenv("DPREC_LASTFM", str(tmp_path))
    with pytest.raises(DatasetUnavailable, match="DPREC_LASTFM"):
        load("lastfm")
    with pytest.raises(FileNotFoundError, match="user_artists.dat"):
        load("lastfm", path=tmp_path / "nope.dat")


def test_lastfm_ratings_rule():
    # Distinct counts: ceil(5 * rank / n).
    np.testing.assert_array_equal(lastfm_ratings(["a"] * 10, np.arange(1, 11)),
                                  [1, 1, 2, 2, 3, 3, 4, 4, 5, 5])
    # Ties share the highest rank of their group; input order is kept.
    np.testing.assert_array_equal(lastfm_ratings(["a"] * 5, [10, 1, 2, 1, 2]), [5, 2, 4, 2, 4])
    # Users are independent; a user with one artist gives it a 5.
    users = ["x", "y", "x", "z", "y", "x"]
    counts = [300, 1, 2, 7, 50, 1000]
    np.testing.assert_array_equal(lastfm_ratings(users, counts), [4, 3, 2, 5, 5, 5])
    with pytest.raises(ValueError, match="counts"):
        lastfm_ratings(["a", "b"], [1, 0])
    with pytest.raises(ValueError, match="same length"):
        lastfm_ratings(["a", "b"], [1])


# --------------------------------------------------------------------------
# user_item_matrix()
# --------------------------------------------------------------------------

def _toy_trainset(rows, scale=(1, 5)):
    frame = pd.DataFrame(rows, columns=["user", "item", "rating"])
    return Dataset.load_from_df(frame, Reader(rating_scale=scale)).build_full_trainset()


def test_user_item_matrix_values_and_threshold():
    rows = [("u1", "a", 5), ("u1", "b", 3), ("u2", "b", 4), ("u3", "c", 1), ("u3", "a", 2)]
    trainset = _toy_trainset(rows)
    ur_before = {u: list(v) for u, v in trainset.ur.items()}
    matrix = user_item_matrix(trainset)
    assert isinstance(matrix, sp.csr_matrix)
    assert matrix.shape == (3, 3) and matrix.dtype == np.float64 and matrix.nnz == 5
    assert matrix.has_sorted_indices
    for user, item, rating in rows:
        u, i = trainset.to_inner_uid(user), trainset.to_inner_iid(item)
        assert matrix[u, i] == rating
    liked = user_item_matrix(trainset, threshold=4)
    assert liked.dtype == np.int8 and liked.shape == (3, 3) and liked.nnz == 2
    expected = {(trainset.to_inner_uid(u), trainset.to_inner_iid(i))
                for u, i, r in rows if r >= 4}
    assert set(zip(*liked.nonzero(), strict=True)) == expected
    assert set(liked.data) == {1}
    assert {u: list(v) for u, v in trainset.ur.items()} == ur_before


def test_user_item_matrix_matches_trainset(small_data):
    trainset = small_data.build_full_trainset()
    matrix = user_item_matrix(trainset)
    assert matrix.shape == (trainset.n_users, trainset.n_items)
    assert matrix.nnz == trainset.n_ratings
    dense = matrix.toarray()
    for u, i, r in list(trainset.all_ratings())[:500]:
        assert dense[u, i] == r
    assert matrix.sum() == pytest.approx(sum(r for *_, r in trainset.all_ratings()))
    assert user_item_matrix(trainset, threshold=6).nnz == 0
    assert user_item_matrix(trainset, threshold=1).nnz == trainset.n_ratings


def test_user_item_matrix_keeps_zero_ratings_and_rejects_bad_input():
    trainset = _toy_trainset([("u1", "a", 0), ("u1", "b", -3), ("u2", "a", 2)], scale=(-5, 5))
    matrix = user_item_matrix(trainset)
    assert matrix.nnz == 3  # the 0 rating is stored explicitly
    assert user_item_matrix(trainset, threshold=0).nnz == 2
    with pytest.raises(TypeError, match="trainset"):
        user_item_matrix(matrix)
    with pytest.raises(ValueError, match="threshold"):
        user_item_matrix(trainset, threshold=float("nan"))
    with pytest.raises(TypeError, match="threshold"):
        user_item_matrix(trainset, threshold="4")
    duplicated = _toy_trainset([("u1", "a", 1), ("u1", "a", 2)])
    with pytest.raises(ValueError, match="repeated"):
        user_item_matrix(duplicated)
    with pytest.raises(ValueError, match="repeated"):   # one policy for every model
        PrivateKNN(k=1).fit(_toy_trainset([("u1", "a", 1), ("u1", "a", 2), ("u2", "a", 3)]))


# ---------------------------------------------------------------- properties (hypothesis)
@fuzz(150)
@given(synthetic_parameters())
def test_synthetic_on_any_valid_parameters(kwargs):
    data = synthetic(**kwargs)
    frame = pd.DataFrame(data.raw_ratings, columns=["user", "item", "rating", "ts"])
    assert len(frame) == kwargs["n_ratings"]
    assert not frame.duplicated(["user", "item"]).any()
    assert frame["user"].nunique() == kwargs["n_users"]  # every user rates
    assert set(frame["rating"]) <= {1.0, 2.0, 3.0, 4.0, 5.0}
    if "min_user_ratings" in kwargs:
        assert frame.groupby("user").size().min() >= kwargs["min_user_ratings"]
    if kwargs["n_ratings"] >= kwargs["n_items"]:
        assert frame["item"].nunique() == kwargs["n_items"]
    again = synthetic(**kwargs)
    assert again.raw_ratings == data.raw_ratings
    matrix = user_item_matrix(data.build_full_trainset())
    assert matrix.nnz == kwargs["n_ratings"]


@fuzz(120)
@given(st.sampled_from([
    ("n_users", {"n_users": 0}), ("n_users", {"n_users": 2.0}), ("n_items", {"n_items": -1}),
    ("n_ratings", {"n_ratings": 0}), ("n_ratings", {"n_ratings": 1000}),
    ("n_ratings", {"n_ratings": 2}), ("n_factors", {"n_factors": 0}),
    ("noise", {"noise": -0.1}), ("noise", {"noise": np.nan}),
    ("popularity_sigma", {"popularity_sigma": -1.0}),
    ("selection_bias", {"selection_bias": np.inf}),
    ("min_user_ratings", {"min_user_ratings": 0}),
    ("min_user_ratings", {"min_user_ratings": 50}),
    ("min_user_ratings", {"min_user_ratings": 9}),
    ("rating_histogram", {"rating_histogram": [1, 2, 3]}),
    ("rating_histogram", {"rating_histogram": [0, 0, 0, 0, 0]}),
    ("rating_histogram", {"rating_histogram": [1, -1, 1, 1, 1]}),
    ("rating_histogram", {"rating_histogram": "abcde"}),
    ("random_state", {"random_state": -1}),
]))
def test_synthetic_rejects_bad_arguments(case):
    name, change = case
    kwargs = {"n_users": 5, "n_items": 8, "n_ratings": 40, "random_state": 0, **change}
    raises_naming(lambda: synthetic(**kwargs), name)


@fuzz(150)
@given(rating_frames(), st.one_of(st.none(), st.floats(-3, 11)))
def test_user_item_matrix_of_any_small_trainset(frame_scale, threshold):
    frame, scale = frame_scale
    trainset = to_dataset(frame, scale).build_full_trainset()
    before = trainset_state(trainset)
    matrix = user_item_matrix(trainset, threshold=threshold)
    assert matrix.shape == (trainset.n_users, trainset.n_items)
    dense = matrix.toarray()
    for u, i, r in trainset.all_ratings():
        if threshold is None:
            assert dense[u, i] == r
        else:
            assert dense[u, i] == (1 if r >= threshold else 0)
    expected_nnz = trainset.n_ratings if threshold is None else sum(
        r >= threshold for _, _, r in trainset.all_ratings())
    assert matrix.nnz == expected_nnz
    assert trainset_state(trainset) == before
    raises_naming(lambda: user_item_matrix(trainset, threshold=np.nan), "threshold")
    raises_naming(lambda: user_item_matrix(trainset, threshold="3"), "threshold")
    raises_naming(lambda: user_item_matrix(frame), "trainset")


@fuzz(150)
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(1, 10**6)), min_size=1, max_size=40))
def test_lastfm_ratings_are_monotone_per_user(rows):
    users = np.array([u for u, _ in rows])
    counts = np.array([c for _, c in rows])
    before = users.copy(), counts.copy()
    ratings = lastfm_ratings(users, counts)
    assert ratings.shape == (len(rows),)
    assert ((ratings >= 1) & (ratings <= 5)).all()
    for user in set(users.tolist()):
        mine = users == user
        assert ratings[mine][np.argmax(counts[mine])] == 5  # most played: 5
        order = np.argsort(counts[mine])  # monotone in the count
        assert (np.diff(ratings[mine][order]) >= 0).all()
    np.testing.assert_array_equal(users, before[0])
    np.testing.assert_array_equal(counts, before[1])
    raises_naming(lambda: lastfm_ratings(users, counts * 0), "counts")
    raises_naming(lambda: lastfm_ratings(users[:-1], counts)
                  if len(users) > 1 else lastfm_ratings(users, []), "counts")


@pytest.mark.parametrize(("args", "kwargs", "name"), [
    (("movielens",), {}, "name"), ((3,), {}, "name"),
    (("synthetic",), {"path": "x"}, "path"),
    (("ml-100k",), {"n_users": 3}, "n_users"),
    (("synthetic",), {"n_users": 0}, "n_users"),
])
def test_load_rejects_bad_arguments(args, kwargs, name):
    raises_naming(lambda: load(*args, **kwargs), name)
    if not kwargs and isinstance(args[0], str):
        raises_naming(lambda: load_or_synthetic(args[0]), name)


def test_load_names_the_setting_when_data_is_missing(tmp_path):
    raises_naming(lambda: load("ml-100k", path=tmp_path), "ml-100k",
                  errors=(DatasetUnavailable,))
    raises_naming(lambda: load("lastfm", path=tmp_path), "DPREC_LASTFM",
                  errors=(DatasetUnavailable,))
