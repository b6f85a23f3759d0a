"""The private implicit models' lists and yardstick: public catalogues (items nobody holds
are scored, the sole holder's audit), the released sets' scores (neighbours chosen by the
user's own set, the share shrunk towards the private popularity), `dprec.implicit.set_reports`'
sums, and `PrivatePopularity`."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
from strategies import fit_quietly, trainset_of

from dprec import PrivatePopularity, datasets
from dprec.accountant.ledger import BudgetExceededError, Status, Unit
from dprec.audit import audit_release, threshold_events, value_events
from dprec.experiments.hyperparameters import guarantee_label
from dprec.implicit import set_reports
from dprec.implicit.knn import ImplicitKNN
from dprec.implicit.popularity import capped_counts
from dprec.implicit.set_reports import (
    debias,
    dense_reports,
    flip_probability,
    item_counts,
    noise_variance,
    overlaps,
    report_sets,
    set_report_entry,
    shrunk_shares,
)
from dprec.similarity import RRMinHash

#: the items of `sets`, as a public catalogue (where the lists are not what is tested)
ITEMS = [f"i{i}" for i in range(30)]


@pytest.fixture(scope="module")
def sets():
    """40 users × 30 items, each set of 6 to 14 items, every item held by two or more."""
    rng = np.random.default_rng(5)
    X = rng.random((40, 30)) < 0.3
    X[np.arange(40), rng.integers(30, size=40)] = True
    X[:2, :] |= ~X.any(axis=0)
    return X.astype(float)


def sole_listener_pair():
    """8 users, 12 items all held by two or more, and `solo`, held by `u0` alone; the
    neighbour drops it (`u0` keeps 5 or more items)."""
    X = np.random.default_rng(2).random((8, 12)) < 0.6
    X[:, :2] = True
    items = [f"i{i}" for i in range(12)]
    a = trainset_of(np.column_stack([X, np.eye(8)[:, 0]]), items=items + ["solo"])
    b = trainset_of(X, items=items)
    return a, b, items + ["solo", "never heard"]


# ---------------------------------------------------------------- catalogues
def test_a_catalogue_scores_items_nobody_holds_and_lists_them_sorted(sets):
    trainset = trainset_of(sets)
    catalogue = ["zz", *[f"i{i}" for i in range(30)], "aa"]
    exact = ImplicitKNN(k=5, items=catalogue).fit(trainset)
    assert exact.item_list_ == tuple(sorted(catalogue))
    assert exact.predict("u0", "aa").details["was_impossible"]      # nobody holds it
    assert exact.predict("u0", "i3").est == ImplicitKNN(k=5).fit(trainset).predict(
        "u0", "i3").est
    released = fit_quietly(ImplicitKNN(k=5, set_epsilon=2.0, items=catalogue,
                                       random_state=0), trainset)
    assert released.reports_.shape == (40, 32)
    assert not released.predict("u0", "aa").details["was_impossible"]
    top = released.recommend_batch(["u0"], n=32)
    assert {"aa", "zz"} <= set(top["iid"])                            # rankable
    assert not set(top["iid"]) & {f"i{i}" for i in np.flatnonzero(sets[0])}


def test_the_report_says_which_lists_are_public_and_who_is_outside():
    a, _, catalogue = sole_listener_pair()
    model = fit_quietly(ImplicitKNN(k=3, set_epsilon=1.0), a)
    read = model.privacy_report()
    # #51: the items by partition selection, who reports a condition: u0 (the sole
    # listener) was outside, at ε = ∞
    assert "chosen from the data by differentially private partition selection" in str(read)
    assert "who reports is public (local model)" in str(read)
    assert read.out_of_scope_users(Unit.SET_ITEM) == []
    assert guarantee_label(model) == "holds"
    users = [f"u{u}" for u in range(8)]
    given = fit_quietly(ImplicitKNN(k=3, set_epsilon=1.0, items=catalogue, users=users),
                        a).privacy_report()
    assert "item catalogue given as items= is public" in str(given)
    assert "user catalogue given as users= is public" in str(given)
    assert given.out_of_scope_users(Unit.SET_ITEM) == []             # every user
    assert given.guarantee[Unit.SET_ITEM] == (1.0, 0.0)
    assert any("own raw set" in note for note in given.notes)


def test_a_user_of_one_interaction_is_covered_and_users_adds_users_without_data(sets):
    X = sets.copy()
    X[5] = 0
    X[5, 3] = 1                                  # u5 holds one item
    trainset = trainset_of(X)
    read = fit_quietly(ImplicitKNN(set_epsilon=1.0), trainset).privacy_report()
    assert read.out_of_scope_users(Unit.SET_ITEM) == []      # #51: u5 was outside
    users = [f"u{u}" for u in range(40)] + ["nobody yet"]
    listed = fit_quietly(ImplicitKNN(set_epsilon=1.0, users=users,
                                     items=[f"i{i}" for i in range(30)]), trainset)
    assert listed.privacy_report().out_of_scope_users(Unit.SET_ITEM) == []
    assert listed.reports_.shape == (41, 30)     # the listed user without data reports too
    assert len(listed.privacy_report().user_ids) == 41


def test_an_audit_of_the_sole_listener_holds_with_the_catalogue_and_without():
    """The neighbour drops the only interaction with `solo`: another user's score of it
    is within the stated ε once the catalogue lists it, and without the catalogue (#51:
    refuted when the item list was read from the data, `solo` then disappearing; now
    chosen by partition selection, which lists `solo` with probability at most δ)."""
    a, b, catalogue = sole_listener_pair()
    epsilon = 2.0

    def score(items):
        def release(trainset, seed):
            model = ImplicitKNN(k=3, set_epsilon=epsilon, items=items, random_state=seed)
            prediction = fit_quietly(model, trainset).predict("u1", "solo")
            return math.inf if prediction.details["was_impossible"] else prediction.est
        return release

    fresh = fit_quietly(ImplicitKNN(k=3, set_epsilon=epsilon, items=catalogue), a)
    assert fresh.privacy_report().guarantee[Unit.SET_ITEM] == (epsilon, 0.0)
    events = threshold_events(np.linspace(-0.5, 0.5, 11))
    bound = audit_release(score(catalogue), a, b, events, n_runs=400, random_state=3)
    assert not bound.violates(epsilon), bound
    selected = audit_release(score(None), a, b, threshold_events([1e300]), n_runs=150,
                             random_state=3, delta=1e-5)
    assert not selected.violates(epsilon), selected


# ---------------------------------------------------------------- the released sets' scores
def reference_scores(model, X: np.ndarray, k: int, prior_sd, min_nbrs: int = 1):
    """The released sets' scores by plain numpy from the model's reports (users sorted
    by raw id, as the model lists them): overlaps of each user's own set with the
    debiased reports, the k nearest, their weighted share, shrunk towards the share of
    all users."""
    epsilon = model.set_epsilon
    q = flip_probability(epsilon)
    order = sorted(range(X.shape[0]), key=lambda u: f"u{u}")
    own = X[order][:, [int(i[1:]) for i in model.item_list_]]
    reports = model.reports_.toarray()
    x_hat = (reports - q) / (1 - 2 * q)
    sizes = own.sum(axis=1, keepdims=True)       # integer sums first: ties stay exact
    sims = (own @ reports.T - q * sizes) / (1 - 2 * q) / sizes
    np.fill_diagonal(sims, -np.inf)
    prior = x_hat.mean(axis=0)
    out = np.zeros(own.shape)
    for u in range(len(own)):
        ranked = sorted(range(len(own)), key=lambda v: (-sims[u, v], v))
        chosen = [v for v in ranked[:k] if sims[u, v] >= 1e-6]
        if len(chosen) < min_nbrs:
            chosen = []
        w = sims[u, chosen]
        share = w @ x_hat[chosen] / w.sum() if len(chosen) else np.zeros(own.shape[1])
        if prior_sd is None:
            out[u] = share
            continue
        noise = noise_variance(epsilon) * (w**2).sum() / w.sum() ** 2 if len(chosen) \
            else math.inf
        a = 1.0 if math.isinf(noise) else noise / (noise + prior_sd**2)
        out[u] = (1 - a) * share + a * prior
    return out, order


@pytest.mark.parametrize(("k", "prior_sd"), [(4, 0.05), (40, 0.2), (6, None)])
def test_released_scores_are_the_neighbours_share_shrunk_towards_popularity(sets, k,
                                                                             prior_sd):
    trainset = trainset_of(sets)
    model = fit_quietly(ImplicitKNN(k=k, set_epsilon=1.5, prior_sd=prior_sd,
                                    random_state=4, items=ITEMS), trainset)
    expected, order = reference_scores(model, sets, k, prior_sd)
    users = np.array([trainset.to_inner_uid(f"u{u}") for u in order])
    est, possible = model.score_rows(users)
    assert possible.all()
    np.testing.assert_allclose(est, expected, rtol=2e-5, atol=2e-6)   # float32 products


def test_too_few_neighbours_leave_the_private_popularity_or_no_score(sets):
    trainset = trainset_of(sets)
    kwargs = {"k": 45, "min_nbrs": 45, "set_epsilon": 1.0, "random_state": 1,
              "items": ITEMS}
    shrunk = fit_quietly(ImplicitKNN(**kwargs), trainset)
    est, possible = shrunk.score_rows(np.arange(5))
    q = flip_probability(1.0)
    prior = ((shrunk.reports_.toarray() - q) / (1 - 2 * q)).mean(axis=0)
    assert possible.all()
    np.testing.assert_allclose(est, np.tile(prior, (5, 1)), rtol=1e-12, atol=1e-12)
    alone = fit_quietly(ImplicitKNN(prior_sd=None, **kwargs), trainset)
    assert not alone.score_rows(np.arange(5))[1].any()
    assert alone.predict("u0", "i0").details["reason"] == "Not enough neighbors."


def test_the_sketches_choose_the_neighbours_of_released_sets_too(sets):
    trainset = trainset_of(sets)
    sketch = {"name": "rr_minhash", "epsilon": 1.0, "width": 8, "tau": 3}
    model = fit_quietly(ImplicitKNN(k=5, sim_options=sketch, set_epsilon=1.0,
                                    random_state=2, items=ITEMS), trainset)
    report = model.privacy_report()
    assert [e.component for e in report.entries] == ["similarity", "set report"]
    est, possible = model.score_rows(np.arange(trainset.n_users))
    assert possible.all() and np.isfinite(est).all()


def test_a_sketch_object_fits_as_its_options_do(sets):
    # a backend object carries threshold=None, which is the model's own default
    trainset = trainset_of(sets)
    given = {"epsilon": 1.0, "width": 8, "tau": 3}
    objects = fit_quietly(ImplicitKNN(k=5, sim_options=RRMinHash(**given), random_state=4),
                          trainset)
    names = fit_quietly(ImplicitKNN(k=5, sim_options={"name": "rr_minhash", **given},
                                    random_state=4), trainset)
    np.testing.assert_array_equal(objects.score_rows(np.arange(5))[0],
                                  names.score_rows(np.arange(5))[0])
    with pytest.raises(ValueError, match="give threshold= to the model"):
        ImplicitKNN(sim_options=RRMinHash(threshold=4.0, **given)).fit(trainset)


def test_a_plain_minhash_sketch_still_fits(sets):
    model = ImplicitKNN(k=5, sim_options={"name": "minhash", "width": 8},
                        random_state=0).fit(trainset_of(sets))
    assert guarantee_label(model) == "none"


# ---------------------------------------------------------------- set_reports' sums
def test_item_counts_are_unbiased_and_the_noise_variance_is_the_bits():
    rng = np.random.default_rng(0)
    X = sp.csr_matrix((rng.random((300, 6)) < 0.3).astype(float))
    counts = np.array([item_counts(report_sets(X, 1.0, 1, seed), 1.0)
                       for seed in range(200)])
    truth = np.asarray(X.sum(axis=0)).ravel()
    sd = math.sqrt(300 * noise_variance(1.0))
    np.testing.assert_allclose(counts.mean(axis=0), truth, atol=4 * sd / math.sqrt(200))
    np.testing.assert_allclose(counts.std(axis=0), sd, rtol=0.2)
    q = flip_probability(1.0)
    assert noise_variance(1.0) == pytest.approx(q * (1 - q) / (1 - 2 * q) ** 2)
    assert noise_variance(1.0) == pytest.approx(0.92, abs=0.005)


def test_the_debiasing_is_exact_at_a_small_epsilon():
    """p - q = tanh(ε/2): 1 - 2q cancels (a relative error of 2e-7 at ε = 1e-9, and 0, a
    division by zero, below 1e-16), so the variance and the debiased counts were off."""
    for epsilon in (1e-9, 1e-6, 1.0, 30.0, 1e18):
        signal = math.tanh(epsilon / 2)
        q = flip_probability(epsilon)
        assert noise_variance(epsilon) == pytest.approx(q * (1 - q) / signal**2, rel=1e-14)
        counts = item_counts(sp.csr_matrix(np.array([[1.0, 0.0], [1.0, 1.0]])), epsilon)
        np.testing.assert_allclose(counts, [(2 - 2 * q) / signal, (1 - 2 * q) / signal],
                                   rtol=1e-12)
    assert noise_variance(1e-9) == pytest.approx(1 / (4 * math.sinh(5e-10) ** 2), rel=1e-12)
    assert math.isfinite(noise_variance(2.0**-42))


def test_the_dense_and_sparse_reports_give_the_same_sums():
    rng = np.random.default_rng(1)
    X = sp.csr_matrix((rng.random((30, 20)) < 0.3).astype(float))
    reports = report_sets(X, 0.5, 1, 9)
    dense = dense_reports(reports)
    assert isinstance(dense, np.ndarray) and dense.dtype == np.float32
    own = sp.csr_matrix(np.ones((7, 20)))       # dense enough for the BLAS product
    np.testing.assert_array_equal(overlaps(own, reports, 0.5, dense=dense),
                                  overlaps(own, reports, 0.5))       # integer sums, exact
    weights = sp.csr_matrix(rng.random((7, 30)) * (rng.random((7, 30)) < 0.9))
    prior = item_counts(reports, 0.5) / 30
    np.testing.assert_allclose(shrunk_shares(weights, reports, prior, 0.5, prior_sd=0.1,
                                             dense=dense),
                               shrunk_shares(weights, reports, prior, 0.5, prior_sd=0.1),
                               rtol=1e-5, atol=1e-5)


def test_the_set_report_entry_states_the_guarantee():
    entry = set_report_entry(2.0)
    assert (entry.component, entry.mechanism, entry.epsilon, entry.delta) == (
        "set report", "randomized_response per item (unary encoding)", 2.0, 0.0)
    assert (entry.unit, entry.status, entry.applies_to) == (Unit.SET_ITEM, Status.HOLDS, "user")
    assert entry.note == ("every item of the item list through binary randomised response "
                          "at ε/α = 2; 1 item(s) of a set change at most that many bits")
    assert "ε/α = 0.5; 4 item(s)" in set_report_entry(2.0, 4, "eps").note


def test_the_set_budgets_are_refused_by_their_names():
    for call in (lambda: set_report_entry(0.0), lambda: flip_probability(-1.0),
                 lambda: noise_variance(0.0, 2)):
        with pytest.raises(ValueError, match="^set_epsilon must be > 0"):
            call()
    with pytest.raises(ValueError, match="^eps must be > 0"):
        set_report_entry(0.0, 1, "eps")
    for alpha in (0, -1):
        with pytest.raises(ValueError, match="^set_difference must be >= 1"):
            flip_probability(1.0, alpha)
    with pytest.raises(TypeError, match="^set_difference must be an integer"):
        set_report_entry(1.0, 1.5)


def test_the_sums_debias_at_epsilon_per_item():
    """ε/α per bit: with α = 2 at ε = 2, the flip probability and the debiasing of ε_b = 1;
    α = 1 by default."""
    q, signal = 1 / (1 + math.e), math.tanh(0.5)
    assert flip_probability(2.0, 2) == pytest.approx(q, rel=1e-14)
    assert noise_variance(2.0, 2) == pytest.approx(q * (1 - q) / signal**2, rel=1e-14)
    reports = sp.csr_matrix(np.array([[1.0, 0.0, 1.0], [1.0, 1.0, 0.0]]))
    np.testing.assert_allclose(item_counts(reports, 2.0, 2),
                               (np.array([2, 1, 1]) - 2 * q) / signal, rtol=1e-12)
    own = sp.csr_matrix(np.array([[1.0, 1.0, 0.0], [0.0, 0.0, 0.0]]))
    np.testing.assert_allclose(overlaps(own, reports, 2.0, 2),
                               [[(1 - 2 * q) / signal, (2 - 2 * q) / signal], [0.0, 0.0]],
                               rtol=1e-12, atol=1e-15)
    weights = sp.csr_matrix(np.array([[0.25, 0.25], [0.0, 0.0], [1.0, 3.0]]))
    prior = np.array([0.5, 0.4, 0.3])
    shares = (np.array([[0.5, 0.25, 0.25], [0.0, 0.0, 0.0], [4.0, 3.0, 1.0]])
              - q * np.array([0.5, 0.0, 4.0])[:, None]) / signal / [[0.5], [1.0], [4.0]]
    np.testing.assert_allclose(shrunk_shares(weights, reports, prior, 2.0, 2), shares,
                               rtol=1e-12, atol=1e-15)
    noise = noise_variance(2.0, 2) * np.array([0.125 / 0.25, 10.0 / 16.0])
    shrink = noise / (noise + 0.2**2)
    expected = shares.copy()
    expected[[0, 2]] = shares[[0, 2]] * (1 - shrink)[:, None] + np.outer(shrink, prior)
    expected[1] = prior                          # no weight: the prior
    np.testing.assert_allclose(shrunk_shares(weights, reports, prior, 2.0, 2, prior_sd=0.2),
                               expected, rtol=1e-12)
    q1 = flip_probability(2.0)
    assert q1 == pytest.approx(1 / (1 + math.e**2), rel=1e-14)
    np.testing.assert_allclose(debias(np.array([[1.0]]), [1], 2.0), [[(1 - q1) / (1 - 2 * q1)]])
    np.testing.assert_allclose(item_counts(reports, 2.0), item_counts(reports, 2.0, 1))
    np.testing.assert_allclose(overlaps(own, reports, 2.0), overlaps(own, reports, 2.0, 1))
    np.testing.assert_allclose(shrunk_shares(weights, reports, prior, 2.0),
                               shrunk_shares(weights, reports, prior, 2.0, 1))


def test_an_empty_set_overlaps_every_report_by_nothing():
    reports = report_sets(sp.csr_matrix(np.eye(4)), 1.0, 1, 3)
    own = sp.csr_matrix((2, 4))
    np.testing.assert_array_equal(overlaps(own, reports, 1.0, dense=dense_reports(reports)),
                                  np.zeros((2, 4)))


def test_the_reports_are_float64_and_their_blocks_are_invisible(monkeypatch):
    rng = np.random.default_rng(2)
    X = sp.csr_matrix((rng.random((9, 5)) < 0.4).astype(float))
    reports = report_sets(X, 0.7, 1, 11)
    assert reports.dtype == np.float64 and reports.format == "csr"
    monkeypatch.setattr(set_reports, "_BLOCK_CELLS", 7)     # a block of one row
    np.testing.assert_array_equal(report_sets(X, 0.7, 1, 11).toarray(), reports.toarray())
    empty = report_sets(sp.csr_matrix((0, 5)), 0.7, 1, 11)
    assert empty.shape == (0, 5)


def test_a_sparse_product_that_costs_no_more_ignores_the_dense_copy():
    """The BLAS product (float32) only where it costs less than the sparse one: 40 weight
    rows × 30 users × 20 items = 24000 against 100 × 30 × 240 / 30 multiply-adds, a tie,
    keeps the float64 sums."""
    rng = np.random.default_rng(4)
    cells = np.zeros(30 * 20)
    cells[rng.permutation(600)[:240]] = 1.0
    reports = sp.csr_matrix(cells.reshape(30, 20))
    w = np.zeros(40 * 30)
    w[rng.permutation(1200)[:30]] = rng.random(30) + 0.1
    weights = sp.csr_matrix(w.reshape(40, 30))
    prior = np.full(20, 0.3)
    np.testing.assert_array_equal(
        shrunk_shares(weights, reports, prior, 0.5, prior_sd=0.1, dense=dense_reports(reports)),
        shrunk_shares(weights, reports, prior, 0.5, prior_sd=0.1))


def test_the_reports_are_dense_up_to_dense_cells(monkeypatch):
    monkeypatch.setattr(set_reports, "DENSE_CELLS", 6)
    assert dense_reports(sp.csr_matrix((2, 3))).shape == (2, 3)    # 6 cells: dense
    assert dense_reports(sp.csr_matrix((3, 3))) is None
    assert dense_reports(sp.csr_matrix((7, 1))) is None


# ---------------------------------------------------------------- PrivatePopularity
def test_capped_counts_count_at_most_cap_items_of_each_set():
    X = sp.csr_matrix(np.array([[1, 1, 1, 1, 0], [0, 1, 0, 0, 1], [1, 0, 1, 0, 0]],
                               dtype=float))
    assert capped_counts(X, 5, np.random.default_rng(0)).tolist() == [2, 2, 2, 1, 1]
    draws = np.array([capped_counts(X[:1], 2, np.random.default_rng(s)) for s in range(400)])
    assert (draws.sum(axis=1) == 2).all()
    np.testing.assert_allclose(draws[:, :4].mean(axis=0), 0.5, atol=0.08)   # uniform
    before = X.toarray().copy()
    capped_counts(X, 1, np.random.default_rng(0))
    np.testing.assert_array_equal(X.toarray(), before)


def test_popularity_reports_say_per_what_it_holds(sets):
    trainset = trainset_of(sets)
    central = PrivatePopularity(2.0, cap=8, items=ITEMS).fit(trainset)
    report = central.privacy_report()
    assert guarantee_label(central) == "holds"
    assert report.guarantee == {Unit.USER: (2.0, 0.0)}
    assert "the user list is not released" in str(report)        # sums over the users
    assert "read from the data" not in str(report) and "trusted curator" in str(report)
    assert central.counts_.index.tolist() == list(central.item_list_)
    local = PrivatePopularity(2.0, mechanism="reports", items=ITEMS).fit(trainset)
    assert local.privacy_report().guarantee == {Unit.SET_ITEM: (2.0, 0.0)}
    seeded = PrivatePopularity(2.0, cap=8, random_state=0).fit(trainset)
    assert {e.status for e in seeded.privacy_report().entries} == {Status.VOID}


def test_popularity_recommends_the_largest_counts_without_the_users_items(sets):
    trainset = trainset_of(sets)
    model = PrivatePopularity(8.0, cap=30, random_state=0, items=ITEMS).fit(trainset)
    own = {f"i{i}" for i in np.flatnonzero(sets[3])}
    expected = [i for i in model.counts_.sort_values(ascending=False, kind="stable").index
                if i not in own][:5]
    assert [iid for iid, _ in model.recommend("u3", n=5)] == expected
    assert model.predict("u3", "i0").est == model.counts_["i0"]


def sole_listener_user_pair():
    """`(a, b, items)`: 8 users over 12 items, and `a` with a 9th user, the sole
    listener of `solo`, who holds nothing else; `items` is `a`'s catalogue."""
    X = np.random.default_rng(2).random((8, 12)) < 0.6
    X[:, :2] = True
    items = [f"i{i}" for i in range(12)]
    with_solo = np.zeros((9, 13))
    with_solo[:8, :12], with_solo[8, 12] = X, 1.0
    return trainset_of(with_solo, items=items + ["solo"]), trainset_of(X, items=items), items


def test_an_audit_of_popularity_removing_the_sole_listener_holds_with_the_catalogue():
    """A whole user removed, the sole listener of `solo` (who holds nothing else): its
    count moves by the cap, 1, and no event beats the stated ε."""
    a, b, items = sole_listener_user_pair()
    epsilon = 2.0

    def count(trainset, seed):
        model = PrivatePopularity(epsilon, cap=1, items=items + ["solo"], random_state=seed)
        return model.fit(trainset).counts_["solo"]

    bound = audit_release(count, a, b, value_events(range(-2, 4)), n_runs=500,
                          random_state=0)
    assert not bound.violates(epsilon), bound
    assert bound.epsilon > 0.5 * epsilon, bound                    # the audit has power


def test_an_audit_of_the_gaussian_popularity_removing_the_sole_listener_holds():
    """As above, with discrete Gaussian noise: the count of `solo` moves by 1 (ℓ2
    sensitivity √cap = 1), and no event beats the stated (ε, δ); the audit has power."""
    a, b, items = sole_listener_user_pair()
    epsilon, delta = 2.0, 1e-3

    def count(trainset, seed):
        model = PrivatePopularity(epsilon, cap=1, mechanism="gaussian", delta=delta,
                                  items=items + ["solo"], random_state=seed)
        return model.fit(trainset).counts_["solo"]

    # these events catch σ 2.5 times too small (a bound of 2.74; 1.97 at half σ)
    bound = audit_release(count, a, b, threshold_events([0.5, 1.5, 2.5, 3.5, 4.5]),
                          n_runs=3000, random_state=0, delta=delta)
    assert not bound.violates(epsilon), bound
    assert bound.epsilon > 0.25 * epsilon, bound                   # the audit has power


@pytest.mark.parametrize(("kwargs", "error", "message"), [
    ({"epsilon": 0.0, "cap": 3}, ValueError, "epsilon must be > 0"),
    ({"mechanism": "gauss", "cap": 3}, ValueError, "mechanism must be one of"),
    ({"mechanism": "gaussian"}, ValueError, "cap must be given with mechanism='gaussian'"),
    ({"mechanism": "laplace"}, ValueError, "cap must be given with mechanism='laplace'"),
    ({"cap": 0}, ValueError, "cap must be >= 1"),
    ({"cap": 2.5}, TypeError, "cap must be an integer"),
    ({"mechanism": "reports", "cap": 3}, ValueError, "drop cap"),
    ({"epsilon": 1e-13, "cap": 1}, ValueError, "choose an epsilon within"),
    ({"cap": 3, "threshold": "x"}, TypeError, "threshold must be a real number"),
    ({"cap": 3, "items": ["i0"]}, ValueError, "items: the ratings hold"),
    ({"cap": 3, "budget": (0.5, 0.0)}, BudgetExceededError, "budget"),
    # the model contract's findings: the reports' ε named as the model's epsilon (was
    # "set_epsilon"), and one too small to debias refused (was -inf counts)
    ({"mechanism": "reports", "epsilon": 1e300}, ValueError, "^epsilon must be at most 1e"),
    ({"mechanism": "reports", "epsilon": 1e-300}, ValueError,
     r"^epsilon must be at least 2\*\*-42"),
])
def test_popularity_refuses_bad_parameters_at_fit_naming_them(sets, kwargs, error, message):
    algo = PrivatePopularity(**kwargs)
    with pytest.raises(error, match=message):
        algo.fit(trainset_of(sets))
    assert not hasattr(algo, "trainset")


def test_popularity_before_fit_is_refused():
    algo = PrivatePopularity(cap=3)
    for call in (lambda: algo.predict("a", "b"), lambda: algo.score_rows([0]),
                 lambda: algo.recommend("a"), algo.privacy_report):
        with pytest.raises(AttributeError, match="not fitted"):
            call()


@pytest.mark.data
def test_lastfm_artists_are_a_catalogue_of_every_listened_artist():
    from dprec.experiments import implicit_feedback as experiment

    try:
        frame = experiment.lastfm_interactions()
        catalogue = experiment.lastfm_catalogue()
    except datasets.DatasetUnavailable:
        pytest.skip("HetRec Last.fm is not available offline")
    assert len(catalogue) == len(set(catalogue)) == 17632
    assert set(frame["item"]) <= set(catalogue)
