"""Reproducibility of every algorithm.

The same ``random_state`` gives identical predictions across two fits, a refit
of the same object, ``cross_validate(n_jobs=1)`` and ``n_jobs=2`` (loky) and
the Dask backend (when ``dask.distributed`` is installed); different seeds give
different noise.  Equality is exact (``==`` on floats), not approximate.
"""

from __future__ import annotations

import importlib.util
import warnings

import numpy as np
import pytest
from surprise.model_selection import KFold, cross_validate, train_test_split

from dprec import MallowsRanker, PrivateKNN, datasets
from dprec.evaluation import cross_validate_table, dask_client, grid_table, parallel_backend

SKETCHES = {
    "rr_minhash": {"name": "rr_minhash", "width": 32, "B": 4, "epsilon": 3.0, "delta": 1e-4},
    "noisy_minhash": {"name": "noisy_minhash", "width": 32, "B": 2, "epsilon": 3.0, "delta": 1e-4},
    "minhash": {"name": "minhash", "width": 32, "B": 2},
    "sjlt": {"name": "sjlt", "width": 32, "s": 4, "epsilon": 2.0},
    "gaussian_jl": {"name": "gaussian_jl", "width": 32, "epsilon": 2.0, "delta": 1e-5},
}


def knn(selector="topk", neighbourhood="item", sim="cosine", seed=0, **kwargs):
    options = SKETCHES.get(sim, {"name": sim})
    if selector in ("pncf", "ppns"):
        kwargs.setdefault("epsilon", 1.0)
    return PrivateKNN(k=5, sim_options=options, selector=selector, neighbourhood=neighbourhood,
                      random_state=seed, **kwargs)


def ranker(mechanism="mallows", seed=0):
    return MallowsRanker(epsilon=2.0, mechanism=mechanism, n_factors=4, n_epochs=2,
                         random_state=seed)


#: name -> factory(seed); randomised ones draw noise, "topk-*" are deterministic
ALGORITHMS = {
    **{f"{selector}-{nb}": (lambda seed, s=selector, n=nb: knn(s, n, seed=seed))
       for selector in ("topk", "probabilistic", "pncf", "ppns") for nb in ("item", "user")},
    **{f"ppns-{sim}": (lambda seed, sim=sim: knn("ppns", "user", sim, seed=seed))
       for sim in SKETCHES},
    "topk-rr_minhash-item": lambda seed: knn("topk", "item", "rr_minhash", seed=seed),
    "centered-pncf-user": lambda seed: knn("pncf", "user", seed=seed, centered=True),
    "mallows": lambda seed: ranker("mallows", seed),
    "laplace-ranking": lambda seed: ranker("laplace", seed),
}
DETERMINISTIC = {"topk-item", "topk-user"}


@pytest.fixture(scope="module")
def data():
    return datasets.synthetic(60, 80, 1500, random_state=0)


@pytest.fixture(scope="module")
def split(data):
    return train_test_split(data, test_size=0.25, random_state=0)


@pytest.fixture(scope="module")
def scheduler():
    """The address of one local Dask cluster (2 single-threaded worker processes) for the
    module's Dask tests: its start-up is most of their time.  (``dprec cv --backend dask``
    in ``tests/test_project.py`` starts its own, through ``scheduler=None``.)"""
    distributed = pytest.importorskip("dask.distributed")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the cluster's own start-up chatter
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                      dashboard_address=None) as cluster:
            yield cluster.scheduler_address


def estimates(algo, testset) -> list[tuple]:
    return [(p.est, p.details.get("was_impossible")) for p in algo.test(testset)]


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_same_seed_same_predictions(split, name):
    trainset, testset = split
    make = ALGORITHMS[name]
    first = estimates(make(7).fit(trainset), testset)
    assert estimates(make(7).fit(trainset), testset) == first  # a second object
    algo = make(7)
    algo.fit(trainset)
    algo.fit(trainset)  # refitting an int-seeded model reproduces it
    assert estimates(algo, testset) == first
    # numpy seeds: two fresh RandomState / Generator objects of one seed agree too
    for wrap in (np.random.RandomState, np.random.default_rng):
        a, b = make(0), make(0)
        a.random_state, b.random_state = wrap(3), wrap(3)
        assert estimates(a.fit(trainset), testset) == estimates(b.fit(trainset), testset)


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_different_seeds_different_noise(split, name):
    trainset, testset = split
    make = ALGORITHMS[name]
    one, two = (estimates(make(seed).fit(trainset), testset) for seed in (1, 2))
    if name in DETERMINISTIC:
        assert one == two  # nothing random: the seed changes nothing
    else:
        assert one != two


def test_a_generator_seed_moves_on_between_fits(split):
    """A Generator (or RandomState) is consumed, as in Surprise: refits differ."""
    trainset, testset = split
    algo = knn("ppns", "user", seed=np.random.default_rng(0))
    first = estimates(algo.fit(trainset), testset)
    assert estimates(algo.fit(trainset), testset) != first


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_cross_validate_n_jobs_1_and_2_agree(data, name):
    algo = ALGORITHMS[name](11)
    results = [cross_validate(algo, data, measures=["rmse", "mae"],
                              cv=KFold(3, random_state=0), n_jobs=n_jobs)
               for n_jobs in (1, 2)]
    for measure in ("test_rmse", "test_mae"):
        np.testing.assert_array_equal(results[0][measure], results[1][measure])


def test_grid_table_n_jobs_1_and_2_agree(data):
    configurations = [{"selector": s, "neighbourhood": nb}
                      for s in ("probabilistic", "pncf", "ppns") for nb in ("item", "user")]
    tables = [grid_table(configurations, knn, data, n_folds=2, random_state=0, n_jobs=n_jobs)
              for n_jobs in (1, 2)]
    columns = ["rmse", "mae", "impossible", "alpha", "beta", "max_partition"]
    np.testing.assert_array_equal(tables[0][columns].to_numpy(), tables[1][columns].to_numpy())


@pytest.mark.skipif(importlib.util.find_spec("distributed") is None,
                    reason="dask[distributed] is not installed")
def test_dask_backend_agrees_with_n_jobs_1(data, scheduler):
    names = ["pncf-item", "ppns-user", "ppns-sjlt", "ppns-rr_minhash", "mallows"]
    folds = KFold(3, random_state=0)
    local = {name: cross_validate(ALGORITHMS[name](5), data, measures=["rmse"], cv=folds,
                                  n_jobs=1)["test_rmse"] for name in names}
    configurations = [{"selector": "ppns", "sim": "noisy_minhash"},
                      {"selector": "pncf", "neighbourhood": "user"}]
    grid_local = grid_table(configurations, knn, data, n_folds=2, random_state=0, n_jobs=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the cluster's own start-up chatter
        with parallel_backend("dask", scheduler=scheduler):
            remote = {name: cross_validate(ALGORITHMS[name](5), data, measures=["rmse"],
                                           cv=folds, n_jobs=2)["test_rmse"] for name in names}
            grid_remote = grid_table(configurations, knn, data, n_folds=2, random_state=0,
                                     n_jobs=2)
            table = cross_validate_table({"ppns": ALGORITHMS["ppns-item"](5)}, data,
                                         n_folds=2, n_jobs=2)
    for name in names:
        np.testing.assert_array_equal(local[name], remote[name])
    np.testing.assert_array_equal(grid_local[["rmse", "mae"]].to_numpy(),
                                  grid_remote[["rmse", "mae"]].to_numpy())
    again = cross_validate_table({"ppns": ALGORITHMS["ppns-item"](5)}, data, n_folds=2)
    np.testing.assert_array_equal(table["rmse"].to_numpy(), again["rmse"].to_numpy())


@pytest.mark.skipif(importlib.util.find_spec("distributed") is None,
                    reason="dask[distributed] is not installed")
def test_blocked_similarities_on_a_local_cluster_equal_the_local_run(data, scheduler):
    """``backend="dask"``: the similarity rows are computed (or estimated from the one
    sketch release) and reduced on the workers (RS, item-neighbourhood answers,
    user-neighbourhood sets); the predictions, details, neighbours, RS and privacy report
    equal the local blocked and dense runs."""
    trainset, testset = train_test_split(data, test_size=0.25, random_state=0)
    configurations = [
        {"selector": "ppns", "epsilon": 1.0},                                  # RS, item
        {"selector": "topk", "neighbourhood": "user"},
        {"selector": "pncf", "epsilon": 2.0, "neighbourhood": "user",
         "sim_options": {"name": "pearson", "user_based": False}},
        {"selector": "ppns", "epsilon": 1.0,                                   # a sketch
         "sim_options": {"name": "rr_minhash", "width": 32, "B": 4, "epsilon": 4.0,
                         "delta": 1e-4, "tau": 3}},
    ]

    def run(config, **storage):
        algo = PrivateKNN(k=5, random_state=4, verbose=False, diagnostics=True, **config,
                          **storage).fit(trainset)
        predictions = algo.test(testset)
        ids = np.arange(5)
        neighbours = (algo.kneighbors(**{"users" if algo.sim_options_["user_based"]
                                         else "items": ids})
                      if algo.neighbourhood_ == "user" else algo.kneighbors(ids, ids))
        return ([(p.est, p.details) for p in predictions], neighbours, algo.sensitivity_,
                str(algo.privacy_report()))

    local = [run(config, storage="blocked") for config in configurations]
    dense = [run(config, storage="dense") for config in configurations]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the cluster's own start-up chatter
        with dask_client(scheduler):
            remote = [run(config, backend="dask") for config in configurations]
    for ours, theirs, whole in zip(local, remote, dense):
        for other in (theirs, whole):
            assert ours[0] == other[0] and ours[3] == other[3]
            for a, b in zip(ours[1], other[1]):
                np.testing.assert_array_equal(a, b)
            if ours[2] is not None:
                np.testing.assert_array_equal(ours[2], other[2])


def test_dask_backend_needs_a_client_and_blocked_similarities(data):
    trainset = data.build_full_trainset()
    algo = PrivateKNN(k=5, backend="dask", verbose=False).fit(trainset)
    assert algo.storage_ == "blocked"
    if importlib.util.find_spec("distributed") is not None:
        with pytest.raises(ValueError, match="backend='dask'.*there is none"):
            algo.test([(trainset.to_raw_uid(0), trainset.to_raw_iid(0), 3.0)])
    for bad in ({"storage": "dense"}, {"sim_options": {"name": "pearson_baseline"}}):
        with pytest.raises(ValueError, match="backend"):
            PrivateKNN(backend="dask", **bad).check_params()
    PrivateKNN(backend="dask", sim_options={"name": "minhash"}).check_params()  # has rows
    with pytest.raises(ValueError, match="backend"):
        PrivateKNN(backend="spark").check_params()


# ------------------------------------------------------------------ regressions
@pytest.mark.parametrize(("kwargs", "name"), [
    ({"backend": "dask", "n_workers": 0}, "n_workers"),
    ({"backend": "dask", "n_workers": 1.5}, "n_workers"),
    ({"backend": "spark"}, "backend"),
    ({"backend": "dask", "scheduler": 8786}, "scheduler"),
])
def test_parallel_backend_rejects_bad_arguments(kwargs, name):
    """Regression: ``n_workers=0`` started a cluster without workers (a hang)."""
    with pytest.raises((ValueError, TypeError), match=name), parallel_backend(**kwargs):
        pass  # pragma: no cover - never entered
