"""Tests of dprec.datasets.arrays: the array-backed dataset, trainset, testset and splits
give Surprise's numbers (the same folds, inner ids, algorithms' estimates) at a fraction of
the memory; the loaders and the generator give them without a tuple per rating."""

from __future__ import annotations

import numpy as np
import pytest
from surprise import SVD, BaselineOnly, Dataset, KNNWithMeans, SlopeOne, Trainset
from surprise.model_selection import KFold, cross_validate, train_test_split

from dprec import DPALS, DPBaseline, DPItemKNN, LocalKNN, PrivateKNN
from dprec.datasets import (
    ArrayDataset,
    ArrayKFold,
    ArrayTestset,
    ArrayTrainset,
    array_train_test_split,
    load,
    synthetic,
)
from dprec.endtoend.rating_space import Catalogue
from dprec.utils._ratings import RatingArrays


@pytest.fixture(scope="module")
def data() -> Dataset:
    try:
        return load("ml-100k")
    except FileNotFoundError:       # the same checks on data of MovieLens 100k's shape
        return synthetic(random_state=0)


@pytest.fixture(scope="module")
def split(data):
    surprise_split = train_test_split(data, test_size=0.2, random_state=0)
    array_split = array_train_test_split(ArrayDataset.from_surprise(data), test_size=0.2,
                                         random_state=0)
    return surprise_split, array_split


def _same_trainsets(expected: Trainset, got: ArrayTrainset) -> None:
    assert isinstance(got, Trainset)
    assert (got.n_users, got.n_items, got.n_ratings) == (
        expected.n_users, expected.n_items, expected.n_ratings)
    assert got.rating_scale == expected.rating_scale
    assert got._raw2inner_id_users == expected._raw2inner_id_users
    assert got._raw2inner_id_items == expected._raw2inner_id_items
    assert all(got.ur[u] == expected.ur[u] for u in expected.all_users())
    assert all(got.ir[i] == expected.ir[i] for i in expected.all_items())
    assert list(got.all_ratings()) == list(expected.all_ratings())
    assert got.global_mean == expected.global_mean        # bit for bit, the same order


def test_train_test_split_gives_surprises_trainset_and_testset(split):
    (trainset, testset), (array_trainset, array_testset) = split
    _same_trainsets(trainset, array_trainset)
    assert isinstance(array_testset, ArrayTestset)
    assert list(array_testset) == testset
    assert array_testset[3] == testset[3] and list(array_testset[5:9]) == testset[5:9]


def test_kfold_gives_surprises_folds(data):
    folds = zip(KFold(3, random_state=1).split(data),
                ArrayKFold(3, random_state=1).split(ArrayDataset.from_surprise(data)))
    for (trainset, testset), (array_trainset, array_testset) in folds:
        _same_trainsets(trainset, array_trainset)
        assert list(array_testset) == testset
    # a Surprise Dataset is accepted as it is
    first = next(ArrayKFold(3, random_state=1).split(data))[1]
    assert list(first) == next(KFold(3, random_state=1).split(data))[1]


@pytest.mark.parametrize("algo", [BaselineOnly(verbose=False), SVD(random_state=0),
                                  KNNWithMeans(verbose=False), SlopeOne()],
                         ids=["BaselineOnly", "SVD", "KNNWithMeans", "SlopeOne"])
def test_surprises_algorithms_fit_it_to_the_same_numbers(split, algo):
    (trainset, testset), (array_trainset, array_testset) = split
    expected = [p.est for p in algo.fit(trainset).test(testset)]
    assert [p.est for p in algo.fit(array_trainset).test(array_testset)] == expected


def test_cross_validate_takes_array_folds(data):
    arrays = ArrayDataset.from_surprise(data)
    expected = cross_validate(BaselineOnly(verbose=False), data, measures=["rmse"],
                              cv=KFold(3, random_state=0))["test_rmse"]
    got = cross_validate(BaselineOnly(verbose=False), arrays, measures=["rmse"],
                         cv=ArrayKFold(3, random_state=0))["test_rmse"]
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("model", [
    lambda: DPBaseline(epsilon=1.0, random_state=0),
    lambda: DPALS(epsilon=1.0, random_state=0),
    lambda: DPItemKNN(epsilon=1.0, random_state=0),
    lambda: DPItemKNN(epsilon=1.0, similarity="factors", random_state=0),
    lambda: LocalKNN(epsilon=1.0, random_state=0),
    lambda: PrivateKNN(random_state=0),
    lambda: PrivateKNN(sim_options={"user_based": False}, storage="blocked", random_state=0),
], ids=["DPBaseline", "DPALS", "DPItemKNN", "DPItemKNN-factors", "LocalKNN", "PrivateKNN",
        "PrivateKNN-items-blocked"])
def test_dprecs_models_read_the_arrays_to_the_same_answers(split, model):
    (trainset, testset), (array_trainset, array_testset) = split
    expected = model().fit(trainset).test(testset)
    fitted = model().fit(array_trainset)
    got = fitted.test(array_testset)
    assert [p.est for p in got] == [p.est for p in expected]
    assert [p.details for p in got] == [p.details for p in expected]
    assert [p.uid for p in got[:100]] == [p.uid for p in expected[:100]]


def test_the_models_arrays_come_from_the_trainsets_arrays(data, split, monkeypatch):
    """No list of tuples is made: reading `ur` or `ir` would fail here."""
    (trainset, _), _ = split
    fresh, _ = array_train_test_split(ArrayDataset.from_surprise(data), test_size=0.2,
                                      random_state=0)
    monkeypatch.setattr(fresh, "ur", None)
    monkeypatch.setattr(fresh, "ir", None)
    for user_based in (True, False):
        arrays = RatingArrays.from_trainset(fresh, user_based)
        expected = RatingArrays.from_trainset(trainset, user_based)   # from Surprise's lists
        np.testing.assert_array_equal(arrays.item_ptr, expected.item_ptr)
        np.testing.assert_array_equal(arrays.item_users, expected.item_users)
        np.testing.assert_array_equal(arrays.item_ratings, expected.item_ratings)
        assert (arrays.matrix != expected.matrix).nnz == 0
        assert arrays.item_ids == expected.item_ids


def test_it_costs_what_the_data_costs(split):
    (trainset, _), (array_trainset, _) = split
    assert array_trainset.nbytes / array_trainset.n_ratings <= 32
    # the lists of tuples are made per row, when asked, not kept
    assert array_trainset.ur[0] is not array_trainset.ur[0]


def test_surprises_trainset_methods(split):
    (trainset, _), (array_trainset, _) = split
    raw = trainset.to_raw_uid(5)
    assert array_trainset.to_raw_uid(5) == raw and array_trainset.to_inner_uid(raw) == 5
    assert array_trainset.to_raw_iid(7) == trainset.to_raw_iid(7)
    assert array_trainset.knows_user(0) and not array_trainset.knows_user(trainset.n_users)
    assert not array_trainset.knows_item(-1)
    for method, bad in ((array_trainset.to_raw_uid, trainset.n_users),
                        (array_trainset.to_raw_iid, -1)):
        with pytest.raises(ValueError, match="not a valid inner id"):
            method(bad)
    with pytest.raises(ValueError, match="not part of the trainset"):
        array_trainset.to_inner_uid("no such user")
    assert array_trainset.build_testset()[:500] == trainset.build_testset()[:500]


def test_surprises_own_iterators_still_work_with_a_warning():
    arrays = synthetic(60, 40, 900, random_state=1, as_arrays=True)
    with pytest.warns(UserWarning, match="tuple per rating") as warned:
        folds = list(KFold(3, random_state=0).split(arrays))
    assert len(warned) == 1          # made once (Surprise's KFold reads it per rating)
    assert arrays.raw_ratings is arrays.raw_ratings
    expected = list(ArrayKFold(3, random_state=0).split(arrays))
    for (trainset, testset), (array_trainset, array_testset) in zip(folds, expected):
        assert isinstance(trainset, ArrayTrainset)
        assert testset == list(array_testset)
        _same_trainsets(trainset, array_trainset)


def test_the_generator_gives_the_same_ratings_as_arrays():
    data = synthetic(80, 50, 1500, random_state=3)
    arrays = synthetic(80, 50, 1500, random_state=3, as_arrays=True)
    assert isinstance(arrays, ArrayDataset) and len(arrays) == 1500
    _same_trainsets(data.build_full_trainset(), arrays.build_full_trainset())
    assert load("synthetic", n_users=80, n_items=50, n_ratings=1500, random_state=3,
                as_arrays=True).ratings.tolist() == arrays.ratings.tolist()


def _double_colon(rows) -> str:
    return "".join(f"{u}::{i}::{r:g}::978300760\n" for u, i, r in rows)


def _movielens_csv(rows) -> str:
    return "userId,movieId,rating,timestamp\n" + "".join(f"{u},{i},{r:.1f},1147880044\n"
                                                         for u, i, r in rows)


ROWS = [(1, 10, 4.0), (1, 20, 3.5), (2, 10, 0.5), (3, 30, 5.0), (3, 20, 2.0), (2, 30, 1.0)]
FILES = {
    "ml-10m": ("ml-10M100K/ratings.dat", _double_colon(ROWS)),
    "ml-25m": ("ml-25m/ratings.csv", _movielens_csv(ROWS)),
    "ml-latest-small": ("ml-latest-small/ratings.csv", _movielens_csv(ROWS)),
    "jester": ("jester/jester_ratings.dat", "".join(f"{u}\t{i}\t{r - 5:g}\n"
                                                    for u, i, r in ROWS)),
    "netflix": ("training_set/mv_0000010.txt", "10:\n1,4,2005-09-06\n2,1,2005-09-06\n"),
}


@pytest.mark.parametrize("name", sorted(FILES))
def test_each_format_loads_as_arrays_as_surprise_reads_it(tmp_path, name):
    relative, content = FILES[name]
    (tmp_path / relative).parent.mkdir(parents=True)
    (tmp_path / relative).write_text(content)
    expected = load(name, path=tmp_path)
    arrays = load(name, path=tmp_path, as_arrays=True)
    assert isinstance(arrays, ArrayDataset)
    assert arrays.rating_scale == expected.reader.rating_scale
    assert list(zip(arrays.user_ids[arrays.user_codes], arrays.item_ids[arrays.item_codes],
                    arrays.ratings.tolist())) == [r[:3] for r in expected.raw_ratings]
    assert all(type(u) is str for u in arrays.user_ids)
    _same_trainsets(expected.build_full_trainset(), arrays.build_full_trainset())


def test_ml100k_and_lastfm_load_as_arrays(data):
    try:
        arrays = load("ml-100k", as_arrays=True)
    except FileNotFoundError:
        pytest.skip("MovieLens 100k is not on this machine")
    assert len(arrays) == 100_000 and arrays.rating_scale == (1.0, 5.0)
    assert arrays.to_surprise().raw_ratings[:50] == [r[:3] + (None,)
                                                     for r in data.raw_ratings[:50]]


@pytest.mark.parametrize(("call", "error", "needle"), [
    (lambda: ArrayKFold(1), ValueError, "n_splits must be an integer >= 2"),
    (lambda: ArrayKFold(2.5), TypeError, "n_splits"),
    (lambda: list(ArrayKFold(7).split(synthetic(3, 3, 5, random_state=0, as_arrays=True))),
     ValueError, "at most the number of ratings"),
    (lambda: array_train_test_split(synthetic(5, 5, 20, random_state=0), test_size=0),
     ValueError, r"test_size=0 must be in \(0, 20\)"),
    (lambda: array_train_test_split(synthetic(5, 5, 20, random_state=0), test_size=0.5,
                                    train_size=15), ValueError, "at most the number"),
    (lambda: array_train_test_split(synthetic(5, 5, 20, random_state=0), test_size="2"),
     TypeError, "test_size must be a share"),
    (lambda: array_train_test_split([("u", "i", 1.0)]), TypeError, "data must be"),
    (lambda: ArrayDataset.from_columns([1, 2], [1], [3.0, 4.0], (1, 5)), ValueError,
     "one length"),
    (lambda: ArrayDataset.from_columns([1], [1], [3.0], (5, 1)), ValueError,
     "rating_scale must be"),
    (lambda: ArrayDataset(np.array([0, 3]), np.array([0, 0]), np.ones(2),
                          np.array(["a", "b"], object), np.array(["x"], object), (1, 5)),
     ValueError, r"user_codes must be in \[0, 2\)"),
    (lambda: ArrayTrainset.rating_columns(
        synthetic(5, 5, 20, random_state=0, as_arrays=True).build_full_trainset(), "rows"),
     ValueError, "by must be 'item' or 'user'"),
])
def test_bad_arguments_name_the_parameter(call, error, needle):
    with pytest.raises(error, match=needle):
        call()


def test_inputs_are_not_mutated_and_views_are_read_only():
    users, items, ratings = np.array([3, 1, 3]), np.array([7, 7, 8]), np.array([1.0, 2, 3])
    arrays = ArrayDataset.from_columns(users, items, ratings, (1, 5))
    trainset = arrays.build_full_trainset()
    assert users.tolist() == [3, 1, 3] and ratings.tolist() == [1.0, 2.0, 3.0]
    ptr, ids, values = trainset.rating_columns()
    with pytest.raises(ValueError):
        values[0] = 5.0
    assert trainset.to_raw_uid(0) == "3" and trainset.ir[0] == [(0, 1.0), (1, 2.0)]


def test_same_seed_same_folds_generator_accepted():
    arrays = synthetic(40, 30, 600, random_state=2, as_arrays=True)
    first = [list(t) for _, t in ArrayKFold(3, random_state=np.random.default_rng(5))
             .split(arrays)]
    again = [list(t) for _, t in ArrayKFold(3, random_state=np.random.default_rng(5))
             .split(arrays)]
    assert first == again


def test_raw_ids_as_surprise_keeps_them():
    """Surprise's `load_from_df` keeps int ids: the arrays keep them too (they became
    strings, and every prediction for 1 said "unknown"); `from_columns` makes them `str`
    as Surprise's loaders do, `1` and `"1"` one id."""
    import pandas as pd
    from surprise import KNNBasic, Reader

    frame = pd.DataFrame({"u": [1, 1, 2, 3, 3, 2], "i": [10, 11, 10, 11, 12, 12],
                          "r": [4.0, 3.0, 5.0, 2.0, 1.0, 4.0]})
    data = Dataset.load_from_df(frame, Reader(rating_scale=(1, 5)))
    expected = data.build_full_trainset()
    got = ArrayDataset.from_surprise(data).build_full_trainset()
    _same_trainsets(expected, got)
    algo = KNNBasic(verbose=False)
    assert algo.fit(got).predict(1, 12).est == algo.fit(expected).predict(1, 12).est
    mixed = ArrayDataset.from_columns([1, "1", 2], ["a", "b", "a"], [1.0, 2.0, 3.0], (1, 5))
    assert mixed.user_ids.tolist() == ["1", "2"] and mixed.user_codes.tolist() == [0, 0, 1]
    with pytest.raises(ValueError, match="user_ids must hold each raw id once"):
        ArrayDataset(np.array([0]), np.array([0]), np.ones(1), np.array(["1", "1"], object),
                     np.array(["a"], object), (1, 5))
    with pytest.raises(ValueError, match="one length"):
        ArrayTestset(np.array(["1"], object), np.array([], object), np.ones(1))


@pytest.mark.parametrize(("catalogue", "queries"), [
    ([3, 1, 7, 10**12], np.array([7, 2, 1, 10**12, -1, 3])),
    (["a", "b", "c10"], np.array(["c10", "z", "a", ""])),
    (["a", "b", "c10"], np.array(["c10", "z", "a", 1], dtype=object)),
    ([1, "1", ("t", 2)], np.array(["1", 1, 1.0, True, ("t", 2), "t"], dtype=object)),
], ids=["ints", "strings", "objects", "mixed"])
def test_an_arrays_positions_are_the_dicts(catalogue, queries):
    """`Catalogue.positions` reads an array (an ArrayTestset's columns) with pandas'
    hash table, a list with the dict: the same positions, -1 for ids not listed."""
    listed = Catalogue.build(catalogue, [], "items")
    as_list = listed.positions(queries.tolist())
    np.testing.assert_array_equal(listed.positions(queries), as_list)
    assert as_list.dtype == listed.positions(queries).dtype == np.int64
    assert all((n >= 0) == (raw in catalogue) for n, raw in zip(as_list, queries.tolist()))


def _objects(*ids) -> np.ndarray:
    out = np.empty(len(ids), dtype=object)
    out[:] = list(ids)
    return out


@pytest.mark.parametrize(("catalogue", "queries"), [
    ([None, "a"], _objects(float("nan"), None, "a")),
    ([float("nan"), 1.0], _objects(float("nan"), 1.0)),
    ([None, float("nan"), "a"], _objects("a", None)),
    ([False, True], np.array([0, 1, 2])),
], ids=["none", "nan", "none-and-nan", "bools"])
def test_missing_and_boolean_ids_are_found_as_the_dict_finds_them(catalogue, queries):
    """pandas takes every NaN and None for one another (and refuses a repeated one), and
    a boolean Index finds no integer: those catalogues are read with the dict."""
    listed = Catalogue.build(catalogue, [], "items")
    np.testing.assert_array_equal(listed.positions(queries), listed.positions(queries.tolist()))
