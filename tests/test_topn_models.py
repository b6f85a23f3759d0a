"""Top-N lists of the end-to-end private models (`DPBaseline`, `DPItemKNN`, `DPALS`,
`LocalKNN`) and of `MallowsRanker`: only listed items, never a rated one, reproducible,
in `test()`'s order, scored by the ranking metrics, covered by the report; and
`recommend_batch`'s answer to a list of lists."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from surprise import Dataset, Reader

from dprec import DPALS, DPBaseline, DPItemKNN, LocalKNN, MallowsRanker, PrivateKNN, datasets
from dprec.audit import audit_model, membership_events, with_rating
from dprec.evaluation.metrics import ndcg_at_k, precision_at_k
from dprec.evaluation.topn import recommend_batch

#: each model (ε = 4: most items listed on the small data), and the name of the report's
#: output its lists are
MODELS = {
    "DPBaseline": (lambda seed: DPBaseline(epsilon=4.0, random_state=seed), "recommendations"),
    "DPItemKNN": (lambda seed: DPItemKNN(epsilon=4.0, random_state=seed), "recommendations"),
    "DPALS": (lambda seed: DPALS(epsilon=4.0, random_state=seed), "recommendations"),
    "LocalKNN": (lambda seed: LocalKNN(epsilon=4.0, random_state=seed), "recommendations"),
    "MallowsRanker": (lambda seed: MallowsRanker(n_epochs=3, random_state=seed),
                      "scores, predictions and rankings"),
}


@pytest.fixture(scope="module")
def split():
    data = datasets.synthetic(300, 60, 9000, random_state=3)
    raw = data.raw_ratings
    train = [r for n, r in enumerate(raw) if n % 5]
    test = [(u, i, r) for n, (u, i, r, _) in enumerate(raw) if not n % 5]
    data.raw_ratings = train
    return data.build_full_trainset(), test


@pytest.fixture(scope="module", params=sorted(MODELS))
def fitted(request, split):
    make, output = MODELS[request.param]
    trainset, _ = split
    return make(0).fit(trainset), output


def _uids(trainset, n=None):
    return [trainset.to_raw_uid(u) for u in range(trainset.n_users)][:n]


def _listed(algo) -> list:
    trainset = algo.trainset
    every = [trainset.to_raw_iid(i) for i in range(trainset.n_items)]
    return list(getattr(algo, "item_list_", every))


def test_lists_hold_listed_unrated_items_in_tests_order(fitted):
    algo, _ = fitted
    trainset = algo.trainset
    uids = _uids(trainset, 40)
    top = algo.recommend_batch(uids, 10)
    assert list(top.columns) == ["uid", "rank", "iid", "est"]
    listed = set(_listed(algo))
    assert set(top["iid"]) <= listed
    rated = {(trainset.to_raw_uid(u), trainset.to_raw_iid(i))
             for u, i, _ in trainset.all_ratings()}
    assert not any(pair in rated for pair in zip(top["uid"], top["iid"]))
    for uid in uids[:10]:
        candidates = [iid for iid in listed if (uid, iid) not in rated]
        est = {p.iid: p.est for p in algo.test([(uid, iid, 0.0) for iid in candidates])}
        mine = top[top["uid"] == uid]
        assert list(mine["rank"]) == list(range(1, min(10, len(candidates)) + 1))
        np.testing.assert_allclose(mine["est"], [est[iid] for iid in mine["iid"]], rtol=1e-12)
        assert (np.diff(mine["est"].to_numpy()) <= 0).all()
        others = [value for iid, value in est.items() if iid not in set(mine["iid"])]
        if others:
            assert max(others) <= mine["est"].min() + 1e-12
        assert algo.recommend(uid, 10) == list(zip(mine["iid"], mine["est"]))


def test_exclude_rated_false_ranks_the_rated_items_too(fitted):
    algo, _ = fitted
    trainset = algo.trainset
    uid = _uids(trainset, 1)[0]
    everything = algo.recommend_batch([uid], len(_listed(algo)), exclude_rated=False)
    assert sorted(everything["iid"]) == sorted(_listed(algo))


def test_lists_are_reproducible_for_a_seed(fitted, split):
    algo, _ = fitted
    trainset, _ = split
    again = MODELS[type(algo).__name__][0](0).fit(trainset)
    uids = _uids(trainset, 30)
    pd.testing.assert_frame_equal(algo.recommend_batch(uids, 5), again.recommend_batch(uids, 5))


def test_lists_are_an_output_the_report_covers(fitted):
    algo, output = fitted
    report = algo.privacy_report()
    before = report.to_frame()
    algo.recommend_batch(_uids(algo.trainset), 10)
    [declared] = [o for o in report.outputs if o.name == output]
    assert declared.covered_by and declared.gap is None
    pd.testing.assert_frame_equal(report.to_frame(), before)   # nothing more is charged


def test_ranking_metrics_score_every_models_lists(fitted, split):
    algo, _ = fitted
    _, testset = split
    uids = sorted({u for u, _, r in testset if r >= 4})
    top = algo.recommend_batch(uids, 10)
    for metric in (precision_at_k, ndcg_at_k):
        value = metric(top, 10, threshold=4, testset=testset)
        assert 0.0 <= value <= 1.0


def test_items_the_selection_did_not_list_are_never_recommended(split):
    trainset, _ = split
    algo = DPBaseline(epsilon=4.0, random_state=0).fit(trainset)
    every = {trainset.to_raw_iid(i) for i in range(trainset.n_items)}
    unlisted = every - set(algo.item_list_)
    assert unlisted and algo.item_list_              # the case this test is about
    top = algo.recommend_batch(_uids(trainset), 20, exclude_rated=False)
    assert not unlisted & set(top["iid"])
    assert len(top) == trainset.n_users * min(20, len(algo.item_list_))


def test_unknown_options_are_named(fitted):
    algo, _ = fitted
    with pytest.raises(TypeError, match="neighbour_shrinkage: not a ranking option"):
        algo.recommend_batch(_uids(algo.trainset, 2), neighbour_shrinkage=5)


def test_another_users_list_does_not_separate_neighbouring_datasets():
    """An audit of a list shown to `v`: one rating of `u` changed, `v`'s top item over
    fits with fresh seeds; the lower bound on ε stays within the claim (ε = 1 per rating)."""
    rows = [(f"u{u}", f"i{i}", float(1 + (3 * u + 2 * i) % 5))
            for u in range(12) for i in range(6) if (u + i) % 4]
    data = Dataset.load_from_df(pd.DataFrame(rows), Reader(rating_scale=(1, 5)))
    users = sorted({r[0] for r in rows})
    items = sorted({r[1] for r in rows})
    a = data.build_full_trainset()
    b = with_rating(data, "u1", "i2", 5.0).build_full_trainset()   # u1 rated it 1

    def top_item(model):
        return [items.index(iid) for iid, _ in model.recommend("u7", 3, exclude_rated=False)]

    bound = audit_model(lambda seed: DPBaseline(unit="rating", mechanism="laplace",
                                                epsilon=1.0, users=users, items=items,
                                                random_state=seed),
                        a, b, top_item, membership_events(range(len(items))), n_runs=400,
                        random_state=0)
    assert bound.epsilon <= 1.0


@pytest.mark.parametrize("algo", [PrivateKNN(k=3, verbose=False), DPBaseline()],
                         ids=["PrivateKNN", "DPBaseline"])
def test_a_list_of_lists_of_uids_is_named(algo, split):
    """Issue 53: `recommend_batch([["u0"]])` answered "unhashable type: 'list'"."""
    trainset, _ = split
    algo.fit(trainset)
    uid = _uids(trainset, 1)[0]
    for call in (lambda: algo.recommend_batch([[uid]]),
                 lambda: recommend_batch(algo, [[uid]])):
        with pytest.raises(TypeError, match=r"uids must hold raw user ids .* got list \["):
            call()


def test_surprises_own_algorithms_are_ranked_by_their_unclipped_estimates(split):
    from surprise import SVD, KNNBasic

    trainset, _ = split
    uids = _uids(trainset, 3)
    for algo in (SVD(random_state=0, n_epochs=5), KNNBasic(k=10, verbose=False)):
        algo.fit(trainset)
        top = recommend_batch(algo, uids, n=5)
        for uid in uids:
            u = trainset.to_inner_uid(uid)
            rated = {i for i, _ in trainset.ur[u]}
            expected = []
            for i in range(trainset.n_items):
                if i in rated:
                    continue
                prediction = algo.predict(uid, trainset.to_raw_iid(i), clip=False)
                if not prediction.details.get("was_impossible", False):
                    expected.append((-prediction.est, i, prediction.est))
            best = sorted(expected)[:5]
            mine = top[top["uid"] == uid]
            assert mine["iid"].tolist() == [trainset.to_raw_iid(i) for _, i, _ in best]
            assert np.allclose(mine["est"], [est for *_, est in best])


def test_an_unfitted_algorithm_is_named():
    from surprise import SVD

    with pytest.raises(TypeError, match="SVD not fitted"):
        recommend_batch(SVD(), ["1"])
