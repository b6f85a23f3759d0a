"""PrivateKNN's storages and answer engines: precomputed similarities, sketch backends,
blocked rows, threads.
"""

from __future__ import annotations

import numpy as np
import pytest
from strategies import (
    raises_naming,
)

from dprec import PrivateKNN
from dprec.accountant.ledger import Status, Unit
from dprec.knn.user_neighbourhood import SetChooser
from dprec.similarity import SKETCH_BACKENDS, with_public_bounds


@pytest.mark.parametrize("neighbourhood", ["item", "user"])
def test_neighbours_and_fit_precomputed(split, neighbourhood):
    trainset, testset = split
    kwargs = {"k": 6, "sim_options": {"name": "cosine"}, "selector": "ppns", "epsilon": 1.0,
              "neighbourhood": neighbourhood, "random_state": 2}
    algo = PrivateKNN(**kwargs).fit(trainset)
    users = np.arange(10)
    items = np.array([trainset.ur[u][0][0] for u in users])
    chosen = algo.kneighbors(users, items)[0]
    assert chosen.shape == (10, 6)
    assert ((chosen >= -1) & (chosen < trainset.n_users)).all()
    if neighbourhood == "item":  # chosen among the raters of the item
        for i, row in zip(items, chosen):
            raters = {v for v, _ in trainset.ir[i]}
            assert set(row[row >= 0]) <= raters
    again = PrivateKNN(**kwargs).fit_precomputed(trainset, algo.sim, algo.sensitivity_)
    np.testing.assert_array_equal(again.kneighbors(users, items)[0], chosen)
    with pytest.warns(DeprecationWarning, match="kneighbors"):   # the old name still works
        np.testing.assert_array_equal(again.neighbours(users, items), chosen)
    assert again.test(testset[:100]) == algo.test(testset[:100])
    with pytest.raises(ValueError, match="sensitivity"):
        PrivateKNN(**kwargs).fit_precomputed(trainset, algo.sim)
    with pytest.raises(ValueError, match="shape"):
        PrivateKNN(**kwargs).fit_precomputed(trainset, algo.sim[1:], algo.sensitivity_)


SKETCH_OPTIONS = [
    {"name": "rr_minhash", "width": 64, "B": 4, "epsilon": 4.0, "delta": 1e-4, "tau": 5},
    {"name": "noisy_minhash", "width": 64, "B": 4, "epsilon": 4.0, "delta": 1e-4, "tau": 5},
    {"name": "sjlt", "width": 64, "s": 4, "epsilon": 2.0},
    {"name": "gaussian_jl", "width": 64, "epsilon": 2.0, "delta": 1e-5},
]


@pytest.mark.parametrize("neighbourhood", ["item", "user"])
@pytest.mark.parametrize("options", [*SKETCH_OPTIONS, {"name": "minhash", "width": 64, "B": 4}],
                         ids=lambda o: o["name"])
def test_blocked_sketch_storage_gives_the_same_model(split, options, neighbourhood):
    """With storage='blocked' a sketch backend's rows are estimated from the users' one
    release, never the n × n matrix: the dense model's similarities (the same bits for
    the code sketches, float64 rounding for the projections), predictions, neighbours
    and privacy report (one release per user, charged once)."""
    trainset, testset = split
    fitted = []
    for storage in ("dense", "blocked"):
        algo = PrivateKNN(k=10, sim_options=options, selector="ppns", epsilon=1.0,
                          neighbourhood=neighbourhood, random_state=3, storage=storage,
                          verbose=False).fit(trainset)
        assert algo.storage_ == storage
        predictions = algo.test(testset)
        algo.test(testset[:50])                           # asked again: nothing new
        fitted.append((algo.compute_similarities(), [p.est for p in predictions],
                       str(algo.privacy_report()),
                       algo.privacy_report().applications(0).tolist()))
    (dense_sim, dense_est, dense_report, dense_uses), blocked = fitted
    exact = options["name"] in ("minhash", "rr_minhash")
    if exact:
        np.testing.assert_array_equal(dense_sim, blocked[0])
        assert dense_est == blocked[1]
    else:
        np.testing.assert_allclose(dense_sim, blocked[0], rtol=0, atol=1e-12)
        np.testing.assert_allclose(dense_est, blocked[1], rtol=0, atol=1e-9)
    assert dense_report == blocked[2]
    assert dense_uses == blocked[3]
    if options["name"] != "minhash":                # entry 0: the sketch, released once
        assert dense_uses == [1] * trainset.n_users


@pytest.mark.parametrize("options", SKETCH_OPTIONS, ids=lambda o: o["name"])
def test_private_sketch_backends_in_privateknn(split, options):
    trainset, testset = split
    algo = PrivateKNN(k=10, sim_options=options, selector="ppns", epsilon=1.0,
                      random_state=np.random.default_rng(0)).fit(trainset)
    predictions = algo.test(testset[:100])
    assert predictions == [algo.predict(u, i, r) for u, i, r in testset[:100]]
    assert all(np.isfinite(p.est) for p in predictions)
    report = algo.privacy_report()
    sketch, selector = report.entries
    assert (sketch.component, selector.component) == ("similarity", "selector")
    assert selector.status is Status.AS_PUBLISHED
    assert sketch.status is (Status.AS_PUBLISHED if options["name"] == "gaussian_jl"
                             else Status.CONDITIONAL)  # floating-point Gaussian noise; the
    # caller's generator: a guarantee only if its state is secret (#51)
    # each user released one sketch, at the ε asked for
    assert sketch.epsilon == pytest.approx(options["epsilon"], rel=1e-5)
    assert sketch.delta <= options.get("delta", 0.0)
    assert report.applications(0).tolist() == [1] * trainset.n_users
    # the units are reported apart, never added
    if sketch.unit is Unit.SET_ITEM:
        assert report.total(Unit.SET_ITEM) == (sketch.epsilon, sketch.delta)
        with pytest.raises(ValueError, match="different units"):
            report.total()
    assert np.allclose(np.diag(algo.sim), 1.0) and np.isfinite(algo.sim).all()
    again = PrivateKNN(k=10, sim_options=options, selector="ppns", epsilon=1.0,
                       random_state=0).fit(trainset)
    np.testing.assert_array_equal(again.sim, algo.sim)
    with pytest.raises(ValueError, match="fit_precomputed"):
        algo.fit_precomputed(trainset, algo.sim, np.ones(trainset.n_users))


@pytest.mark.parametrize("options", SKETCH_OPTIONS, ids=lambda o: o["name"])
def test_a_backend_object_stands_for_its_options(split, options):
    trainset, testset = split
    public = with_public_bounds(options, trainset.rating_scale)  # the projections' bound
    params = {key: value for key, value in public.items() if key != "name"}
    backend = SKETCH_BACKENDS[options["name"]](**params)
    given = PrivateKNN(k=10, sim_options=backend, random_state=0).fit(trainset)
    from_dict = PrivateKNN(k=10, sim_options=options, random_state=0).fit(trainset)
    np.testing.assert_array_equal(given.sim, from_dict.sim)
    assert given.sim_options is backend and not hasattr(backend, "release_")  # not mutated
    seeded = SKETCH_BACKENDS[options["name"]](**params, random_state=1)
    with pytest.raises(ValueError, match="random_state"):
        PrivateKNN(sim_options=seeded).fit(trainset)


def test_sketch_guarantees_are_not_silently_weakened(split):
    trainset, _ = split
    smallest = min(len(ratings) for ratings in trainset.ur.values())
    options = {"name": "rr_minhash", "width": 32, "B": 2, "epsilon": 4.0, "tau": smallest + 5}
    with pytest.raises(ValueError, match="tau"):
        PrivateKNN(sim_options=options).fit(trainset)
    with pytest.raises(ValueError, match="rating_bound"):
        PrivateKNN(sim_options={"name": "sjlt", "width": 16, "s": 4, "epsilon": 1.0,
                                "rating_bound": 2.0}).fit(trainset)
    with pytest.raises(ValueError, match="epsilon"):
        PrivateKNN(sim_options={"name": "rr_minhash", "width": 32}).check_params()
    with pytest.raises(ValueError, match="min_support"):
        PrivateKNN(sim_options={"name": "rr_minhash", "epsilon": 1.0,
                                "min_support": 2}).check_params()


@pytest.mark.parametrize("neighbourhood", ["item", "user"])
def test_threads_do_not_change_the_answers(split, monkeypatch, neighbourhood):
    from dprec.knn import blocks

    trainset, testset = split
    monkeypatch.setattr(blocks, "_BLOCK_CELLS", 1 << 10)  # many blocks on small data
    runs = []
    for threads in ("1", "3"):
        monkeypatch.setenv("DPREC_NUM_THREADS", threads)
        algo = PrivateKNN(k=10, sim_options={"name": "cosine"}, selector="ppns", epsilon=1.0,
                          neighbourhood=neighbourhood, random_state=3).fit(trainset)
        runs.append((algo.test(testset), algo.selection_summary()))
    assert runs[0] == runs[1]


def test_thread_count_follows_the_limits(monkeypatch):
    from dprec.utils._threads import map_blocks, thread_count

    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    monkeypatch.delenv("DPREC_NUM_THREADS", raising=False)
    assert thread_count() == 3
    monkeypatch.setenv("DPREC_NUM_THREADS", "2")
    assert thread_count() == 2
    monkeypatch.setenv("DPREC_NUM_THREADS", "zero")  # not a positive integer: ignored
    assert thread_count() == 3
    assert map_blocks(lambda x: x * x, range(7)) == [x * x for x in range(7)]


def test_map_blocks_reuses_one_pool_runs_nested_calls_inline_and_waits_on_errors(
        monkeypatch):
    """The blocks run on one pool of threads per process (the same threads call after
    call, a new pool when the thread count changes); a call from inside a block runs in
    that block's thread instead of waiting for the busy pool; and when a block raises,
    the call raises only once every block has finished."""
    import threading
    import time

    from dprec.utils._threads import map_blocks

    monkeypatch.setenv("DPREC_NUM_THREADS", "2")

    def names(_):
        time.sleep(0.01)
        return threading.current_thread().name

    first, second = set(map_blocks(names, range(6))), set(map_blocks(names, range(6)))
    assert first == second and all(name.startswith("dprec") for name in first)
    monkeypatch.setenv("DPREC_NUM_THREADS", "3")
    together = threading.Barrier(3, timeout=30)    # three blocks at once: three threads
    assert len(set(map_blocks(lambda _: (together.wait(), threading.get_ident())[1],
                              range(3)))) == 3

    def nested(block):
        inner = map_blocks(lambda _: threading.current_thread().name, range(4))
        return set(inner) == {threading.current_thread().name}

    assert all(map_blocks(nested, range(6)))
    finished = []

    def fails_first(block):
        if block == 0:
            raise RuntimeError("block 0")
        time.sleep(0.05)
        finished.append(block)

    with pytest.raises(RuntimeError, match="block 0"):
        map_blocks(fails_first, range(4))
    assert sorted(finished) == [1, 2, 3]



# ------------------------------------------------------------------ blocked storage
_STORAGE_CASES = [(sim, selector, *variant) for (sim, selector), variant in zip(
    [(sim, selector) for sim in ("cosine", "msd", "pearson")
     for selector in ("topk", "probabilistic", "pncf", "ppns")],
    [(neighbourhood, user_based, prediction) for neighbourhood in ("item", "user")
     for user_based in (True, False) for prediction in ("basic", "means", "zscore")])]


@pytest.mark.parametrize("sim, selector, neighbourhood, user_based, prediction",
                         _STORAGE_CASES)
def test_blocked_storage_gives_the_same_model(split, sim, selector, neighbourhood,
                                              user_based, prediction):
    """Rows computed per block of queries give the dense matrix's predictions, details
    (with diagnostics), neighbours, RS, selection summary and privacy report, bit for bit
    (integer ratings): every selector, both neighbourhoods, user- and item-based."""
    trainset, testset = split
    fitted = []
    for storage in ("dense", "blocked"):
        algo = PrivateKNN(k=5, sim_options={"name": sim, "user_based": user_based,
                                            "min_support": 2},
                          selector=selector, neighbourhood=neighbourhood,
                          prediction=prediction, random_state=7, verbose=False,
                          diagnostics=True, storage=storage).fit(trainset)
        assert algo.storage_ == storage
        predictions = algo.test(testset)
        n = trainset.n_users if user_based else trainset.n_items
        ids = np.arange(n)
        if neighbourhood == "user":
            neighbours = algo.kneighbors(**{"users" if user_based else "items": ids})
        else:
            neighbours = algo.kneighbors(np.zeros(n, dtype=int) + 1, np.arange(n) % 7)
        fitted.append(([(p.est, p.details) for p in predictions], neighbours,
                       algo.sensitivity_, algo.get_neighbors(3, 5),
                       algo.selection_summary(), str(algo.privacy_report())))
    dense, blocked = fitted
    assert dense[0] == blocked[0]
    for a, b in zip(dense[1], blocked[1]):
        np.testing.assert_array_equal(a, b)
    if dense[2] is None:
        assert blocked[2] is None
    else:
        np.testing.assert_array_equal(dense[2], blocked[2])
    assert dense[3] == blocked[3]
    assert dense[4] == pytest.approx(blocked[4], rel=1e-12, nan_ok=True)
    assert dense[5] == blocked[5]


def test_storage_auto_switches_on_the_matrix_size(split, monkeypatch):
    """``storage="auto"`` keeps the matrix while it is small and computes rows past
    :data:`DENSE_SIMILARITY_BYTES`, for the sum similarities and the sketches (not
    pearson_baseline); ``sim`` then says why it is missing and ``compute_similarities``
    builds it whole (a sketch's from its one release)."""
    from dprec.knn import storage

    trainset, _ = split
    n = trainset.n_users
    algo = PrivateKNN(k=5, sim_options={"name": "pearson"}, verbose=False)
    assert algo.fit(trainset).storage_ == "dense"
    dense = algo.sim.copy()
    monkeypatch.setattr(storage, "DENSE_SIMILARITY_BYTES", 8 * n * n - 1)
    assert algo.fit(trainset).storage_ == "blocked"
    with pytest.raises(AttributeError, match="storage_='blocked'.*compute_similarities"):
        _ = algo.sim
    np.testing.assert_array_equal(algo.compute_similarities(), dense)
    baseline = PrivateKNN(k=5, sim_options={"name": "pearson_baseline"}, verbose=False)
    assert baseline.fit(trainset).storage_ == "dense"           # no rows form: stays dense
    sketch = PrivateKNN(k=5, sim_options={"name": "minhash", "width": 8}, random_state=0,
                        verbose=False)
    assert sketch.fit(trainset).storage_ == "blocked"
    sketched = sketch.compute_similarities()
    monkeypatch.setattr(storage, "DENSE_SIMILARITY_BYTES", 8 * n * n)
    assert sketch.fit(trainset).storage_ == "dense"
    np.testing.assert_array_equal(sketch.sim, sketched)
    with pytest.raises(AttributeError, match="not fitted"):
        _ = PrivateKNN().sim


def test_storage_is_validated():
    raises_naming(lambda: PrivateKNN(storage="sparse").check_params(), "storage")
    raises_naming(lambda: PrivateKNN(storage=3).check_params(), "storage")
    raises_naming(lambda: PrivateKNN(sim_options={"name": "pearson_baseline"},
                                     storage="blocked").check_params(), "storage")
    PrivateKNN(sim_options={"name": "rr_minhash", "epsilon": 1.0},
               storage="blocked").check_params()              # the sketches have rows too


@pytest.mark.parametrize("storage", ["dense", "blocked"])
def test_user_neighbour_sets_are_chosen_once_per_fit(split, monkeypatch, storage):
    """In the user neighbourhood each user's set is chosen once from their row and kept
    (n · k numbers): later test calls and kneighbors read it back, the same sets, and a
    new fit chooses afresh."""
    trainset, testset = split
    algo = PrivateKNN(k=5, selector="ppns", epsilon=1.0, neighbourhood="user",
                      storage=storage, random_state=2, verbose=False).fit(trainset)
    chosen_rows = []
    choose = SetChooser.choose
    monkeypatch.setattr(SetChooser, "choose",
                        lambda self, rows: chosen_rows.append(len(rows)) or choose(self, rows))
    first = [p.est for p in algo.test(testset)]
    raw_users = {trainset.to_raw_uid(u) for u in trainset.all_users()}
    asked = len({u for u, _, _ in testset if u in raw_users})
    assert sum(chosen_rows) == asked
    assert [p.est for p in algo.test(testset)] == first
    columns, _ = algo.kneighbors(users=np.arange(trainset.n_users))
    assert sum(chosen_rows) == trainset.n_users          # only the users not asked before
    again, _ = algo.kneighbors(users=np.arange(trainset.n_users))
    np.testing.assert_array_equal(columns, again)
    assert sum(chosen_rows) == trainset.n_users
    algo.fit(trainset)
    np.testing.assert_array_equal(algo.kneighbors(users=np.arange(trainset.n_users))[0],
                                  columns)               # same seed: the same sets, chosen anew
    assert sum(chosen_rows) == 2 * trainset.n_users


def test_user_neighbour_sets_kept_safely_across_threads(split):
    """The kept sets are filled under the model's lock: concurrent kneighbors calls, and
    an empty one right after fit, give what one call in turn gives."""
    from concurrent.futures import ThreadPoolExecutor

    trainset, _ = split
    n = trainset.n_users

    def model():
        return PrivateKNN(k=5, selector="ppns", epsilon=1.0, neighbourhood="user",
                          random_state=5, verbose=False).fit(trainset)

    columns, weights = model().kneighbors(users=np.arange(n))
    algo = model()
    assert algo.kneighbors(users=np.array([], dtype=int))[0].shape == (0, 5)
    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(lambda part: algo.kneighbors(users=part),
                                np.array_split(np.arange(n), 8)))
    np.testing.assert_array_equal(np.concatenate([a[0] for a in answers]), columns)
    np.testing.assert_array_equal(np.concatenate([a[1] for a in answers]), weights)


def test_compute_similarities(split):
    trainset, _ = split
    exact = PrivateKNN(sim_options={"name": "pearson"}, verbose=False).fit(trainset)
    np.testing.assert_array_equal(exact.compute_similarities(), exact.sim)
    sketch = PrivateKNN(sim_options=SKETCH_OPTIONS[0], random_state=0,
                        verbose=False).fit(trainset)
    released = sketch.compute_similarities()  # the users' one release, not a new one
    np.testing.assert_array_equal(released, sketch.sim)
    assert released is not sketch.sim
    with pytest.raises(AttributeError, match="fit"):
        PrivateKNN(sim_options=SKETCH_OPTIONS[0]).compute_similarities()
