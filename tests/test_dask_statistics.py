"""The end-to-end private models' sums over users, per partition of the users, on a Dask
cluster: the same numbers as in one process for the same seed.

`DPBaseline`, `DPALS` and `DPItemKNN` (covariance and factors) fitted with
``backend="dask"`` on an in-process ``LocalCluster`` (2 single-threaded workers) and with
``backend="threads"`` give equal predictions (``==`` on floats) and the same privacy report;
the partitions change nothing; the noise is drawn in the driver's thread only, the
partitions' sums on the workers.
"""

from __future__ import annotations

import importlib.util
import threading
import warnings

import numpy as np
import pytest
from surprise.model_selection import train_test_split

from dprec import DPALS, DPBaseline, DPItemKNN, datasets
from dprec.endtoend import covariance_release, dp_als, effects_release
from dprec.endtoend.partitions import PARTITION_RATINGS, partition_bounds

pytestmark = [
    pytest.mark.skipif(importlib.util.find_spec("distributed") is None,
                       reason="dask[distributed] is not installed"),
]

#: name -> factory(**backend options); every one releases what it is named after (the
#: factors and the covariance: `baseline_share` given, the public size rule bypassed)
MODELS = {
    "baseline-gaussian": lambda **kw: DPBaseline(epsilon=2.0, random_state=3, **kw),
    "baseline-laplace": lambda **kw: DPBaseline(epsilon=2.0, mechanism="laplace",
                                                random_state=3, **kw),
    "baseline-per-rating": lambda **kw: DPBaseline(epsilon=2.0, unit="rating",
                                                   mechanism="gaussian", random_state=3, **kw),
    "als": lambda **kw: DPALS(epsilon=20.0, baseline_share=0.3, n_epochs=2, random_state=3,
                              **kw),
    "item-knn-factors": lambda **kw: DPItemKNN(epsilon=20.0, similarity="factors",
                                               baseline_share=0.3, random_state=3, **kw),
    "item-knn-covariance": lambda **kw: DPItemKNN(epsilon=20.0, baseline_share=0.3,
                                                  random_state=3, **kw),
    "item-knn-laplace": lambda **kw: DPItemKNN(epsilon=20.0, mechanism="laplace",
                                               items=CATALOGUE, random_state=3, **kw),
}
#: the Laplace DPItemKNN's public item catalogue (its partition selection lists no item
#: of these data): every item of the data, whose ids are the generator's
CATALOGUE = [str(i) for i in range(1, 151)]
#: the epochs of the DPALS releases (DPItemKNN's on factors: DPALS's default)
EPOCHS = {"als": 2, "item-knn-factors": 3}


@pytest.fixture(scope="module")
def split():
    data = datasets.synthetic(200, 150, 4000, random_state=0)
    return train_test_split(data, test_size=0.2, random_state=0)


@pytest.fixture
def client():
    """A client in scope on an in-process cluster of 2 single-threaded workers (about
    0.1 s to start), closed after the test (the next test has no client)."""
    distributed = pytest.importorskip("distributed")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the cluster's own start-up chatter
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                      dashboard_address=None) as cluster, \
                distributed.Client(cluster) as connected:
            yield connected


def outcome(model, testset) -> tuple:
    """What a fit shows: every estimate and detail, the report, the released arrays."""
    predictions = model.test(testset)
    report = model.privacy_report()
    released = [np.asarray(getattr(model, name)) for name in
                ("item_effects_", "item_factors_", "sim") if hasattr(model, name)]
    return ([(p.est, p.details) for p in predictions], str(report),
            [(entry.epsilon, entry.delta) for entry in report.entries], released)


def assert_same(ours: tuple, theirs: tuple) -> None:
    assert ours[0] == theirs[0]
    assert ours[1] == theirs[1] and ours[2] == theirs[2]
    assert len(ours[3]) == len(theirs[3])
    for a, b in zip(ours[3], theirs[3]):
        np.testing.assert_array_equal(a, b)


def test_the_models_release_what_the_comparison_needs(split):
    # the comparison below is not of empty releases: factors and covariance are released
    # and the test data are cut into 4 partitions of users
    trainset, _ = split
    als = MODELS["als"]().fit(trainset)
    assert (als.item_factors_.to_numpy() != 0).any()
    knn = MODELS["item-knn-covariance"]().fit(trainset)
    assert (knn.sim.to_numpy() != 0).sum() > knn.sim.shape[0]    # more than the diagonal
    assert "covariance" in str(knn.privacy_report())
    assert len(partition_bounds(als.baseline_.rating_space.matrix.indptr, 4)) == 4
    laplace = MODELS["item-knn-laplace"]().fit(trainset)
    assert (laplace.sim.to_numpy() != 0).any()


@pytest.mark.parametrize("name", sorted(MODELS))
def test_dask_partitions_equal_one_process(split, client, name):
    trainset, testset = split
    one = outcome(MODELS[name]().fit(trainset), testset)           # threads, one partition
    assert_same(one, outcome(MODELS[name](n_partitions=3).fit(trainset), testset))
    distributed = pytest.importorskip("distributed")
    with distributed.get_task_stream(client) as stream:
        remote = outcome(MODELS[name](backend="dask", n_partitions=4).fit(trainset), testset)
    assert_same(one, remote)
    # the sums ran as tasks on the cluster (4 partitions each, and the fold's additions)
    keys = [str(task["key"]) for task in stream.data]
    assert sum("_release_sums" in key for key in keys) >= 4
    assert any("add_partials" in key for key in keys)
    if name in EPOCHS:
        assert sum("_epoch_statistics" in key for key in keys) == 4 * EPOCHS[name]
    if name.startswith("item-knn-c") or name == "item-knn-laplace":
        assert sum("_grams" in key for key in keys) == 4
    # DPBaseline's default: backend "threads", one partition per 2^22 ratings
    assert DPBaseline().backend == "threads" and DPBaseline().n_partitions is None


def test_the_noise_is_drawn_on_the_driver_and_the_sums_on_the_workers(split, client,
                                                                      monkeypatch):
    trainset, _ = split
    threads = {"noise": [], "sums": []}

    def recorded(kind, function):
        def wrapper(*args, **kwargs):
            threads[kind].append(threading.current_thread())
            return function(*args, **kwargs)
        return wrapper

    for module, name in ((effects_release, "discrete_gaussian"), (effects_release, "laplace"),
                         (dp_als, "discrete_gaussian"),
                         (covariance_release, "discrete_gaussian"),
                         (covariance_release, "discrete_laplace")):
        monkeypatch.setattr(module, name, recorded("noise", getattr(module, name)))
    for module, name in ((effects_release, "integer_l2_sums"), (dp_als, "item_statistics"),
                         (covariance_release, "pattern_matrix")):
        monkeypatch.setattr(module, name, recorded("sums", getattr(module, name)))
    for name in ("als", "item-knn-covariance", "baseline-laplace"):
        MODELS[name](backend="dask", n_partitions=4).fit(trainset)
    main = threading.main_thread()
    assert len(threads["noise"]) >= 6 and all(t is main for t in threads["noise"])
    assert len(threads["sums"]) >= 12 and all(t is not main for t in threads["sums"])


def test_partitions_are_runs_of_users_of_about_equal_ratings():
    counts = np.array([5, 0, 1, 9, 2, 2, 0, 7, 3, 1])
    indptr = np.concatenate([[0], np.cumsum(counts)])
    for n in (1, 2, 3, 4, 10, 50):
        bounds = partition_bounds(indptr, n)
        assert bounds[0][0] == 0 and bounds[-1][1] == len(counts)
        assert all(a < b for a, b in bounds)
        assert all(b == c for (_, b), (c, _) in zip(bounds[:-1], bounds[1:]))
        assert 1 <= len(bounds) <= min(n, len(counts))
    assert partition_bounds(indptr, 2) == [(0, 4), (4, 10)]         # 15 ratings, then 15
    assert len(partition_bounds(indptr, 3)) == 3
    assert partition_bounds(indptr) == [(0, 10)]                    # default: below 2^22
    many = np.array([0, PARTITION_RATINGS, 2 * PARTITION_RATINGS + 1])
    assert partition_bounds(many) == [(0, 1), (1, 2)]               # 3 asked, 2 users
    assert partition_bounds(np.zeros(1, dtype=np.int64), 4) == [(0, 0)]    # no user


@pytest.mark.parametrize("make", [MODELS["baseline-gaussian"], MODELS["als"],
                                  MODELS["item-knn-factors"], MODELS["item-knn-covariance"]])
def test_bad_backends_and_partitions_are_refused_before_any_release(split, make):
    trainset, _ = split
    with pytest.raises(ValueError, match=r"^backend must be one of \('threads', 'dask'\), "
                                         r"got 'spark'"):
        make(backend="spark").fit(trainset)
    with pytest.raises(TypeError, match="^backend must be a string"):
        make(backend=None).fit(trainset)
    with pytest.raises(ValueError, match="^n_partitions must be >= 1, got 0"):
        make(n_partitions=0).fit(trainset)
    with pytest.raises(TypeError, match="^n_partitions must be an integer"):
        make(n_partitions=2.0).fit(trainset)
    # no client in scope: PrivateKNN's error, before any noise (the model left unfitted)
    model = make(backend="DASK")
    with pytest.raises(ValueError, match="^backend='dask' runs the blocks on the "
                                         "dask.distributed client in scope, and there is "
                                         "none"):
        model.fit(trainset)
    assert not hasattr(model, "trainset")
