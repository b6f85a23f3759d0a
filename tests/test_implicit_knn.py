"""ImplicitKNN: LensKit's implicit kNN scores, top-N, the private set sketches' report,
the released sets' audit, and bad input."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from strategies import fit_quietly
from surprise import Dataset, Reader

from dprec import datasets
from dprec.accountant.ledger import BudgetExceededError, Status, Unit
from dprec.audit import audit_release, threshold_events, value_events
from dprec.experiments.hyperparameters import guarantee_label
from dprec.implicit.knn import ImplicitKNN
from dprec.implicit.set_reports import flip_probability, report_sets
from dprec.similarity import UnknownSimilarityError
from dprec.utils import _kernels

MIN_SIM = 1e-6


@pytest.fixture(params=[True, False], ids=["compiled", "numpy"])
def kernels(request):
    """Both paths of the scores: the compiled loops and the numpy code."""
    if request.param and not _kernels.AVAILABLE:
        pytest.skip("numba is not available")
    previous = _kernels.set_enabled(request.param)
    yield request.param
    _kernels.set_enabled(previous)


@pytest.fixture(scope="module")
def trainset():
    return datasets.synthetic(40, 30, 500, random_state=1).build_full_trainset()


def dense_sets(trainset, threshold=None) -> np.ndarray:
    X = np.zeros((trainset.n_users, trainset.n_items))
    for u, i, r in trainset.all_ratings():
        if threshold is None or r >= threshold:
            X[u, i] = 1.0
    return X


def set_similarity(X: np.ndarray, name: str) -> np.ndarray:
    """All pairs of rows of the 0/1 matrix X: cosine or Jaccard, by numpy."""
    common = X @ X.T
    sizes = X.sum(axis=1)
    denominator = (np.sqrt(np.outer(sizes, sizes)) if name == "cosine"
                   else sizes[:, None] + sizes[None, :] - common)
    return np.divide(common, denominator, out=np.zeros_like(common), where=denominator > 0)


def lenskit_item_scores(X, name, k, min_nbrs):
    """LensKit's implicit ItemKNNScorer, plainly: the sum of the k largest s(i, j) >= min_sim
    over the user's items j != i, where at least min_nbrs of them."""
    sim = set_similarity(X.T, name)
    scores = np.full(X.shape, np.nan)
    for u in range(X.shape[0]):
        mine = np.flatnonzero(X[u])
        for i in range(X.shape[1]):
            values = sim[i, mine[mine != i]]
            values = np.sort(values[values >= MIN_SIM])[::-1][:k]
            if len(values) >= min_nbrs:
                scores[u, i] = values.sum()
    return scores


def lenskit_user_scores(X, name, k, min_nbrs):
    """LensKit's implicit UserKNNScorer, plainly: the sum of the k largest s(u, v) >= min_sim
    over the users v != u who hold i, where at least min_nbrs of them."""
    sim = set_similarity(X, name)
    scores = np.full(X.shape, np.nan)
    for u in range(X.shape[0]):
        for i in range(X.shape[1]):
            holders = np.flatnonzero(X[:, i])
            values = sim[u, holders[holders != u]]
            values = np.sort(values[values >= MIN_SIM])[::-1][:k]
            if len(values) >= min_nbrs:
                scores[u, i] = values.sum()
    return scores


def in_list_order(algo, reference):
    """The columns of a reference in inner item order, put in the model's item list order."""
    return reference[:, [algo.trainset.to_inner_iid(i) for i in algo.item_list_]]


def assert_scores(algo, reference):
    reference = in_list_order(algo, reference)
    est, possible = algo.score_rows(np.arange(algo.trainset.n_users))
    np.testing.assert_array_equal(possible, ~np.isnan(reference))
    np.testing.assert_allclose(est, np.nan_to_num(reference), rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------- the scores
@pytest.mark.parametrize("name", ["cosine", "jaccard"])
@pytest.mark.parametrize(("k", "min_nbrs"), [(1, 1), (3, 2), (200, 1)])
def test_item_scores_are_lenskits(kernels, trainset, name, k, min_nbrs):
    algo = ImplicitKNN(k=k, min_nbrs=min_nbrs,
                       sim_options={"name": name, "user_based": False}).fit(trainset)
    assert_scores(algo, lenskit_item_scores(dense_sets(trainset), name, k, min_nbrs))


@pytest.mark.parametrize("name", ["cosine", "jaccard"])
@pytest.mark.parametrize(("k", "min_nbrs"), [(1, 1), (3, 2), (200, 1)])
def test_user_scores_are_lenskits(kernels, trainset, name, k, min_nbrs):
    algo = ImplicitKNN(k=k, min_nbrs=min_nbrs, sim_options={"name": name}).fit(trainset)
    assert_scores(algo, lenskit_user_scores(dense_sets(trainset), name, k, min_nbrs))


def test_threshold_keeps_the_ratings_at_least_that_high(trainset):
    algo = ImplicitKNN(k=4, threshold=4.0).fit(trainset)
    assert_scores(algo, lenskit_user_scores(dense_sets(trainset, 4.0), "cosine", 4, 1))


def test_estimate_predict_and_test_give_the_score_unclipped(trainset):
    algo = ImplicitKNN(k=30, sim_options={"user_based": False}).fit(trainset)
    est, possible = algo.score_rows(np.arange(trainset.n_users))
    assert est.max() > trainset.rating_scale[1]          # a score, not a rating
    u, column = np.unravel_index(np.argmax(est), est.shape)
    uid, iid = trainset.to_raw_uid(int(u)), algo.item_list_[column]
    assert algo.estimate(int(u), trainset.to_inner_iid(iid))[0] == est[u, column]
    assert algo.predict(uid, iid).est == algo.predict(uid, iid, clip=True).est == est[u, column]
    pairs = [(trainset.to_raw_uid(a), b, None)
             for a in range(trainset.n_users) for b in algo.item_list_]
    predictions = algo.test(pairs + [("nobody", iid, None)])
    np.testing.assert_array_equal([p.est for p in predictions[:-1]], est.ravel())
    assert [not p.details["was_impossible"] for p in predictions[:-1]] == possible.ravel().tolist()
    unknown = predictions[-1]
    assert unknown.est == 0.0 and unknown.details["was_impossible"]


def test_top_n_ranks_by_score_without_the_users_items(trainset):
    algo = ImplicitKNN(k=5).fit(trainset)
    uids = [trainset.to_raw_uid(u) for u in range(6)]
    top = algo.recommend_batch(uids, n=8)
    est, possible = algo.score_rows(np.arange(6))
    for u, uid in enumerate(uids):
        rows = top[top["uid"] == uid]
        own = {trainset.to_raw_iid(i) for i, _ in trainset.ur[u]}
        assert not set(rows["iid"]) & own
        allowed = [est[u, c] for c, i in enumerate(algo.item_list_)
                   if i not in own and possible[u, c]]
        np.testing.assert_allclose(rows["est"], sorted(allowed, reverse=True)[:8], atol=0)
        assert rows["rank"].tolist() == list(range(1, len(rows) + 1))
    assert algo.recommend(uids[0], n=8) == list(zip(top["iid"][:8], top["est"][:8]))
    with_own = algo.recommend_batch(uids[:1], n=trainset.n_items, exclude_rated=False)
    assert len(with_own) == possible[0].sum()


def test_get_neighbors_are_the_most_similar_and_the_report_says_inner_ids(trainset):
    """Ties go by raw id (the sorted user list), not by the data's order."""
    algo = ImplicitKNN(sim_options={"name": "jaccard"}).fit(trainset)
    sim = set_similarity(dense_sets(trainset), "jaccard")[3]
    sim[3] = -1
    by_id = sorted(range(trainset.n_users), key=trainset.to_raw_uid)
    expected = [by_id[n] for n in np.argsort(-sim[by_id], kind="stable")[:5]]
    assert algo.get_neighbors(3, 5) == expected
    assert any("inner ids" in output.name for output in algo.privacy_report().outputs)


# ---------------------------------------------------------------- privacy
SKETCH = {"name": "rr_minhash", "epsilon": 1.0, "width": 8, "B": 2, "tau": 3,
          "small_users": "exclude"}



def test_the_report_says_what_each_configuration_guarantees(trainset):
    exact = ImplicitKNN().fit(trainset)
    assert guarantee_label(exact) == "none" and exact.privacy_report().guarantee is None
    raw = fit_quietly(ImplicitKNN(sim_options=SKETCH), trainset)
    report = raw.privacy_report()
    assert guarantee_label(raw) == "in part" and report.guarantee is None
    [entry] = report.entries
    assert (entry.status, entry.unit, entry.epsilon) == (Status.HOLDS, Unit.SET_ITEM, 1.0)
    [output] = report.outputs
    assert "raw sets" in output.gap and output.covered_by == (0,)
    released = fit_quietly(ImplicitKNN(sim_options=SKETCH, set_epsilon=2.0), trainset)
    report = released.privacy_report()
    outside = report.out_of_scope_users(Unit.SET_ITEM)     # #51: none of them is "holds"
    assert guarantee_label(released) == ("in part" if outside else "holds")
    epsilon, delta = report.guarantee[Unit.SET_ITEM]        # those in scope
    assert epsilon == pytest.approx(3.0) and 1e-4 < delta <= 1e-4 + 1e-5   # the list's δ
    assert [e.component for e in report.entries] == ["item list", "similarity", "set report"]
    assert "holds" in str(report) and "by differentially private partition selection" in str(
        report)
    items = [trainset.to_raw_iid(i) for i in trainset.all_items()]
    given = fit_quietly(ImplicitKNN(sim_options=SKETCH, set_epsilon=2.0, items=items),
                        trainset).privacy_report()
    assert given.guarantee[Unit.SET_ITEM] == pytest.approx((3.0, 1e-4))
    assert [e.component for e in given.entries] == ["similarity", "set report"]
    seeded = fit_quietly(ImplicitKNN(sim_options=SKETCH, set_epsilon=2.0, random_state=0),
                         trainset)
    assert {e.status for e in seeded.privacy_report().entries} == {Status.VOID}


def test_a_budget_below_both_releases_refuses_the_fit(trainset):
    algo = ImplicitKNN(sim_options=SKETCH, set_epsilon=2.0, budget=(2.5, 1e-3))
    with pytest.raises(BudgetExceededError, match="budget"):
        fit_quietly(algo, trainset)
    assert not hasattr(algo, "trainset")
    with pytest.raises(AttributeError, match="not fitted"):
        algo.privacy_report()
    fit_quietly(ImplicitKNN(sim_options=SKETCH, set_epsilon=2.0, budget=(3.0, 1e-3)), trainset)


def test_a_report_flips_each_bit_with_its_probability():
    rng = np.random.default_rng(0)
    X = (rng.random((400, 50)) < 0.3).astype(float)
    reports = report_sets(sp.csr_matrix(X), 1.0, 1, seed=7).toarray()
    q = flip_probability(1.0)
    assert q == pytest.approx(1 / (1 + math.e))
    assert np.mean(reports != X) == pytest.approx(q, abs=0.01)
    np.testing.assert_array_equal(report_sets(sp.csr_matrix(X[:5]), 1.0, 1, seed=7).toarray(),
                                  reports[:5])             # a row's noise is its own


def test_the_bit_audit_stays_below_the_reports_epsilon():
    epsilon = 1.0
    a, b = sp.csr_matrix(np.array([[1.0, 1.0, 0.0]])), sp.csr_matrix(np.array([[1.0, 0.0, 0.0]]))

    def release(row, seeds):               # one report per run: the rows' noise is their own
        copies = sp.vstack([row] * len(seeds), format="csr")
        return report_sets(copies, epsilon, 1, int(seeds[0])).toarray()[:, 1]

    bound = audit_release(release, a, b, value_events([0.0, 1.0]), n_runs=4000,
                          random_state=0, batched=True)
    assert not bound.violates(epsilon), bound
    assert bound.epsilon > 0.6 * epsilon, bound                   # the audit has power


def neighbouring_sets():
    """8 users, 12 items, every item held by at least two users and every set of at least
    five items; the target `u0` drops `i1`, which only `u0` and `u1` hold."""
    X = np.random.default_rng(2).random((8, 12)) < 0.6
    X[:, 1] = False
    X[[0, 1], 1] = True
    assert (X.sum(axis=0) >= 2).all() and (X.sum(axis=1) >= 5).all()
    frame = pd.DataFrame([(f"u{u}", f"i{i}", 1.0) for u, i in zip(*np.nonzero(X))],
                         columns=["user", "item", "rating"])
    reader = Reader(rating_scale=(0, 1))
    a = Dataset.load_from_df(frame, reader).build_full_trainset()
    smaller = frame[~((frame.user == "u0") & (frame.item == "i1"))]
    b = Dataset.load_from_df(smaller, reader).build_full_trainset()
    return a, b


def test_an_audit_refutes_the_raw_scores_but_not_the_released_ones():
    """`u1`'s score of the item the target `u0` drops: read from the neighbours' raw sets,
    it is impossible once `u0` no longer holds it (the report says *in part*); from the
    released sets, no event beats the ε the report states."""
    a, b = neighbouring_sets()

    def raw(trainset, seed):
        model = fit_quietly(ImplicitKNN(k=1, sim_options={**SKETCH, "epsilon": 0.5},
                                        random_state=seed), trainset)
        return float(not model.predict("u1", "i1").details["was_impossible"])

    bound = audit_release(raw, a, b, value_events([1.0]), n_runs=150, random_state=0)
    assert bound.violates(0.5), bound

    epsilon = 2.0

    def released(trainset, seed):
        return fit_quietly(model(seed), trainset).predict("u1", "i1").est

    def model(seed):
        return ImplicitKNN(k=3, sim_options={**SKETCH, "epsilon": epsilon / 2},
                           set_epsilon=epsilon / 2, random_state=seed,
                           items=[f"i{i}" for i in range(12)])

    fresh = fit_quietly(model(None), a).privacy_report()
    assert fresh.guarantee[Unit.SET_ITEM] == pytest.approx((epsilon, 1e-4))
    assert "u0" not in fresh.out_of_scope_users()
    bound = audit_release(released, a, b, threshold_events(np.linspace(-3, 3, 13)),
                          n_runs=400, random_state=1, delta=1e-4)
    assert not bound.violates(epsilon), bound


# ---------------------------------------------------------------- bad input
@pytest.mark.parametrize(("kwargs", "error", "message"), [
    ({"k": 0}, ValueError, "k must be >= 1"),
    ({"k": 2.5}, TypeError, "k must be an integer"),
    ({"k": 3, "min_nbrs": 4}, ValueError, "min_nbrs must be <= 3"),
    ({"min_sim": 0.0}, ValueError, "min_sim must be > 0"),
    ({"threshold": "4"}, TypeError, "threshold must be a real number"),
    ({"set_epsilon": 1.0, "sim_options": {"name": "cosine"}}, ValueError,
     "set_epsilon makes the scores read"),
    ({"sim_options": {"name": "reports"}}, ValueError, "give set_epsilon"),
    ({"set_epsilon": 1.0, "prior_sd": 0.0}, ValueError, "prior_sd must be > 0"),
    ({"set_epsilon": 1.0, "sim_options": {"set_difference": 0}}, ValueError,
     r"sim_options\['set_difference'\] must be >= 1"),
    ({"set_epsilon": 1.0, "sim_options": {"tau": 3}}, ValueError, r"unknown option\(s\) \['tau'\]"),
    ({"items": "abc"}, TypeError, "items must be a sequence of raw ids"),
    ({"items": ["not an item"]}, ValueError, "items: the ratings hold"),
    ({"sim_options": {"name": "rr_minhash", "epsilon": 1.0, "tau": 3},
      "set_epsilon": 0.0}, ValueError, "set_epsilon must be > 0"),
    ({"sim_options": {"name": "msd"}}, UnknownSimilarityError, r"sim_options\['name'\]"),
    ({"sim_options": ["cosine"]}, TypeError, "sim_options must be a dict"),
    ({"sim_options": {"name": "cosine", "min_support": 2}}, ValueError, "min_support"),
    ({"sim_options": {"name": "rr_minhash", "epsilon": 1.0, "user_based": False}},
     ValueError, "user_based'] must be True"),
    ({"sim_options": {"name": "rr_minhash", "epsilon": 1.0, "threshold": 4}},
     ValueError, "give threshold= to the model"),
    ({"sim_options": {"name": "rr_minhash"}}, ValueError, "must give 'epsilon'"),
    ({"budget": (0.0, 0.1)}, ValueError, "budget epsilon"),
    # the model contract's findings: the sketch's own checks and its tau read from the
    # data, named as given (were "epsilon must be ...", "every set is empty ... give
    # tau"), and a set_epsilon whose debiasing divides by 0 (was a ZeroDivisionError)
    ({"sim_options": {"name": "noisy_minhash", "epsilon": math.nan}}, ValueError,
     "^sim_options for 'noisy_minhash': epsilon must be a finite number"),
    ({"sim_options": {"name": "rr_minhash", "epsilon": 1.0}, "threshold": 9}, ValueError,
     r"^sim_options for 'rr_minhash': every set is empty: .* give tau \(threshold = 9 "
     "keeps no rating\\)$"),
    ({"set_epsilon": 1e-300}, ValueError, r"^set_epsilon must be at least 2\*\*-42"),
    ({"set_epsilon": 1e-12, "sim_options": {"set_difference": 10}}, ValueError,
     r"^set_epsilon must be at least .* \(divided by set_difference = 10\)"),
])
def test_bad_parameters_are_refused_at_fit_naming_them(trainset, kwargs, error, message):
    algo = ImplicitKNN(**kwargs)                 # stored as given
    with pytest.raises(error, match=message):
        algo.fit(trainset)
    assert not hasattr(algo, "trainset")


def test_the_caller_s_options_are_not_modified(trainset):
    options = {"name": "JACCARD"}
    ImplicitKNN(sim_options=options).fit(trainset)
    assert options == {"name": "JACCARD"}


def test_calls_before_fit_and_bad_ids_are_refused(trainset):
    algo = ImplicitKNN()
    for call in (lambda: algo.predict("a", "b"), lambda: algo.score_rows([0]),
                 lambda: algo.recommend("a")):
        with pytest.raises(AttributeError, match="not fitted"):
            call()
    algo.fit(trainset)
    with pytest.raises(ValueError, match="users must be inner ids"):
        algo.score_rows([trainset.n_users])
    with pytest.raises(ValueError, match="items must have one id per user"):
        algo.estimate_arrays([0, 1], [0])
    with pytest.raises(ValueError, match="unknown user"):
        algo.recommend("nobody")
    with pytest.raises(TypeError, match="no n × n similarity matrix"):
        algo.compute_similarities()
