"""DPItemKNN: its ledger, its lists, its answers, and audits of its guarantee (the exact
integer release and its sensitivities: tests/test_dp_item_knn_release.py)."""

from __future__ import annotations

import copy
import math
import re
from statistics import NormalDist

import numpy as np
import pandas as pd
import pytest
from strategies import catalogues
from surprise import Dataset, Reader

from dprec import DPItemKNN, datasets
from dprec.accountant.ledger import SEEDED, Status, Unit
from dprec.audit import audit_release, threshold_events
from dprec.endtoend import dp_item_knn
from dprec.endtoend.dp_baseline import SIGNAL, sorted_ids
from dprec.mechanisms import zcdp_epsilon, zcdp_rho

MECHANISMS = ("gaussian", "laplace")
#: w_u = 2^-ceil(p log2 |I_u|) and A = ceil(p log2 n_items), p = 1 (l2) or 2 (l1)
POWER = {"gaussian": 1, "laplace": 2, "l2": 1, "l1": 2}


@pytest.fixture(autouse=True)
def covariance_on_small_data(request, monkeypatch):
    """The tests of the covariance release run it on small data: the public rule
    (`default_share`) would release none there (too few users, too few listed items);
    its own tests are `test_the_public_rule_...`.  One listed item still counts: with
    none there is nothing to release."""
    if not request.node.name.startswith("test_the_public_rule"):
        monkeypatch.setattr(dp_item_knn, "COVARIANCE_SNR", 0.0)
        monkeypatch.setattr(dp_item_knn, "MIN_ITEMS", 1)


@pytest.fixture(scope="module")
def data():
    return datasets.synthetic(150, 40, 2500, random_state=2)


@pytest.fixture(scope="module")
def trainset(data):
    return data.build_full_trainset()


def frame(rows) -> Dataset:
    return Dataset.load_from_df(pd.DataFrame(rows), Reader(rating_scale=(1, 5)))


def without_user(data, uid):
    smaller = copy.copy(data)
    smaller.raw_ratings = [r for r in data.raw_ratings if r[0] != uid]
    return smaller


def noiseless(monkeypatch, mechanism, data, **kwargs):
    """A fit whose covariance and weights are released without noise: Laplace at ε = 10^12;
    the Gaussian's least noise (ρ capped at MAX_RHO) is still ~10^-3 C² on the covariance,
    so its sampler is replaced by the identity (its scales: the sampler spy's tests).
    Over the data's public catalogues: every item is listed."""
    if mechanism == "gaussian":
        monkeypatch.setattr("dprec.endtoend.covariance_release.discrete_gaussian",
                            lambda values, sigma, rng: np.array(values, dtype=np.float64))
    return DPItemKNN(epsilon=1e12, mechanism=mechanism, random_state=0,
                     **catalogues(data), **kwargs).fit(data.build_full_trainset())


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_without_noise_the_release_is_the_weighted_covariance(data, trainset, monkeypatch,
                                                              mechanism):
    algo = noiseless(monkeypatch, mechanism, data, shrinkage=0.0)
    base = algo.baseline_
    items = sorted_ids(trainset.to_raw_iid(i) for i in trainset.all_items())
    where = {iid: n for n, iid in enumerate(items)}
    n = len(items)
    cov, co = np.zeros((n, n)), np.zeros((n, n))
    for u, rated in trainset.ur.items():
        w = 2.0 ** -np.ceil(POWER[mechanism] * np.log2(len(rated)))
        raw = [trainset.to_raw_iid(i) for i, _ in rated]
        own = base._user_effects[base._space.users.index[trainset.to_raw_uid(u)]]
        e = np.array([r - base.mu_ - base.item_effects_[iid] - own
                      for iid, (_, r) in zip(raw, rated)])
        e = np.clip(np.round(e * 16), -16, 16) / 16          # round, then clip
        cells = [where[iid] for iid in raw]
        cov[np.ix_(cells, cells)] += w * np.outer(e, e)
        co[np.ix_(cells, cells)] += w
    expected = cov / np.maximum(co, 1e-300)
    variance = np.diag(expected)
    expected = expected / np.sqrt(np.outer(variance, variance))
    seen = co > 0
    assert list(algo.sim.index) == list(algo.sim.columns) == items    # raw ids, sorted
    np.testing.assert_allclose(algo.sim.to_numpy()[seen], np.clip(expected, -1, 1)[seen],
                               atol=1e-6)


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_every_release_is_charged_once_and_queries_add_nothing(data, trainset, mechanism):
    algo = DPItemKNN(epsilon=0.8, k=10, mechanism=mechanism, random_state=None,
                     **catalogues(data)).fit(trainset)
    report = algo.privacy_report()
    eps, delta = report.total(Unit.USER)
    if mechanism == "gaussian":        # one entry: the three releases composed in zCDP
        assert len(report.entries) == 1 and delta == 1e-5
        assert eps == pytest.approx(0.8, rel=1e-6) and eps <= 0.8
    else:                              # the baseline's two, the covariance, the weights
        assert len(report.entries) == 4 and delta == 0.0
        assert eps == pytest.approx(0.8)
    assert {e.status for e in report.entries} == {Status.HOLDS}
    assert report.guarantee == {Unit.USER: (eps, delta)}
    assert list(report.user_ids) == sorted_ids(catalogues(data)["users"])
    predictions = algo.test(trainset.build_testset()[:300])
    assert all(np.isfinite(p.est) for p in predictions)
    assert report.total(Unit.USER) == (eps, delta)


@pytest.mark.parametrize(("mechanism", "components"), [
    ("gaussian", ["effects, covariance and co-rating weights"]),
    ("laplace", ["global effect", "item effects", "covariance", "co-rating weights"])])
def test_seeded_noise_voids_every_entry_the_baselines_too(data, trainset, mechanism,
                                                         components):
    algo = DPItemKNN(mechanism=mechanism, random_state=5, **catalogues(data)).fit(trainset)
    report = algo.privacy_report()
    assert {e.status for e in report.entries} == {Status.VOID} and report.guarantee is None
    assert all(e.note.startswith(SEEDED) for e in report.entries)
    assert {e.status for e in algo.baseline_.privacy_report().entries} == {Status.VOID}
    assert [e.component for e in report.entries] == components
    # without catalogues too (the partition selection's entry is the baseline's): void
    selected = DPItemKNN(mechanism=mechanism, random_state=5).fit(trainset).privacy_report()
    assert {e.status for e in selected.entries} == {Status.VOID} and selected.guarantee is None
    assert any("(items by partition selection)" in e.component for e in selected.entries)


def sole_rater_data() -> Dataset:
    """40 users of 4 items, the sole rater of "solo" (who also rated i0), and a user of a
    single rating."""
    rows = [(f"u{u:02d}", f"i{i}", float(1 + (u + 2 * i) % 5)) for u in range(40)
            for i in range(4)]
    rows += [("sole", "i0", 4.0), ("sole", "solo", 5.0), ("single", "i1", 2.0)]
    return frame(rows)


@pytest.mark.parametrize("mechanism", MECHANISMS)
@pytest.mark.parametrize("share", [None, 0.3])
def test_without_catalogues_every_user_is_inside_the_guarantee(monkeypatch, mechanism, share):
    # #51: without items= the items are chosen by private partition selection (the sole
    # rater's item is listed only through its δ) and without users= the user list is no
    # release (each user's answers are theirs alone): every user, the sole rater and the
    # single-rating user too, has the ε asked for, and the report states both conditions.
    # On lists read from the data (#33) every user was at ε = ∞.  Both paths: the rule's
    # (no covariance on these sizes) and the covariance's (share 0.3)
    from dprec.endtoend.dp_baseline import SCOPE

    if share is None:
        monkeypatch.undo()                      # the public rule as it is
    trainset = sole_rater_data().build_full_trainset()
    report = DPItemKNN(mechanism=mechanism, baseline_share=share).fit(trainset).privacy_report()
    eps = report.per_user(Unit.USER)["epsilon"]
    assert len(eps) == trainset.n_users == 42
    assert np.isfinite(eps).all() and eps.max() <= 1.0 + 1e-9, eps
    assert eps.min() == pytest.approx(1.0, rel=1e-6)
    assert report.out_of_scope_users(Unit.USER) == [] and report.scope_rule() is None
    assert len(report.conditions) == 2
    assert report.conditions[0].startswith(SCOPE["items selected"] + "an item is released when")
    assert report.conditions[1] == SCOPE["users private"]
    epsilon, delta = report.total(Unit.USER)
    assert epsilon == pytest.approx(1.0, rel=1e-6) and 0.0 < delta <= 1e-5   # the selection's
    assert report.guarantee == {Unit.USER: (epsilon, delta)}
    text = str(report)
    assert all(SCOPE[reason] not in text for reason in ("sole rater", "single rating",
                                                        "any user"))
    # an item catalogue alone: the items are public, the user list still private
    items = DPItemKNN(mechanism=mechanism, baseline_share=share,
                      items=catalogues(sole_rater_data())["items"]).fit(trainset)
    listed = items.privacy_report()
    assert listed.conditions == [SCOPE["items given"], SCOPE["users private"]]
    assert listed.out_of_scope_users(Unit.USER) == []
    assert np.isfinite(listed.per_user(Unit.USER)["epsilon"]).all()
    assert "solo" in items.sim.index


def test_with_laplace_and_no_item_listed_the_model_answers_with_its_baseline(trainset):
    # #51: Laplace without items=: at ε = 1 the partition selection lists none of the 40
    # items (each item's weight, a sum of 1/|I_u|, is far below the threshold); the model
    # answers with its baseline (μ + b_u + the effect of an item with no release) and
    # charges what it planned: ε in all, δ the selection's
    algo = DPItemKNN(epsilon=1.0, mechanism="laplace", k=5, random_state=None).fit(trainset)
    assert algo.sim.shape == (0, 0) and algo.baseline_.item_effects_.empty
    report = algo.privacy_report()
    assert [e.component for e in report.entries] == [
        "global effect", "item effects (items by partition selection)", "covariance",
        "co-rating weights"]
    epsilon, delta = report.total(Unit.USER)
    assert epsilon == pytest.approx(1.0)
    assert delta == algo.baseline_.selection_delta_ and 0.0 < delta <= 1e-5
    assert report.out_of_scope_users(Unit.USER) == []
    pairs = trainset.build_testset()[:300]
    ours = algo.test(pairs)
    assert [p.est for p in ours] == [p.est for p in algo.baseline_.test(pairs)]
    assert all(p.details == {"was_impossible": False} for p in ours)
    base = algo.baseline_
    uid = pairs[0][0]
    own = base._user_effects[base.rating_space.users.index[uid]]
    assert ours[0].est == pytest.approx(np.clip(base.mu_ + own + base.unlisted_effect_, 1, 5))


def test_max_items_per_user_is_the_selections_k(trainset):
    # the most items one user brings into the partition selection, passed to the baseline
    # and stated in the rule; refused by name when not a positive int
    algo = DPItemKNN(max_items_per_user=4, random_state=None).fit(trainset)
    assert algo.baseline_.max_items_per_user == 4
    assert "k = 4 items" in str(algo.privacy_report())
    assert "k = 1000 items" in str(DPItemKNN(random_state=None).fit(trainset).privacy_report())
    with pytest.raises(ValueError, match="^max_items_per_user"):
        DPItemKNN(max_items_per_user=0).fit(trainset)


def test_seeded_noise_is_reproducible(data, trainset):
    listed = catalogues(data)
    a = DPItemKNN(random_state=5, **listed).fit(trainset).sim
    assert a.to_numpy().any()                        # a covariance released, not all zeros
    pd.testing.assert_frame_equal(a, DPItemKNN(random_state=5, **listed).fit(trainset).sim)
    assert not DPItemKNN(**listed).fit(trainset).sim.equals(
        DPItemKNN(**listed).fit(trainset).sim)
    # without catalogues the listed items are part of the seeded release
    b = DPItemKNN(epsilon=50.0, random_state=5).fit(trainset)
    again = DPItemKNN(epsilon=50.0, random_state=5).fit(trainset)
    pd.testing.assert_frame_equal(b.sim, again.sim)
    pd.testing.assert_series_equal(b.baseline_.item_effects_, again.baseline_.item_effects_)


def test_a_renumbering_of_the_same_data_gives_bit_identical_answers(data):
    # finding 2 (#33): shuffled ratings renumber the inner ids; the similarities, the
    # effects, the predictions and their details (ties among neighbours broken by the
    # items' sorted rank, not by inner id) must not move
    shuffled = copy.copy(data)
    order = np.random.default_rng(4).permutation(len(data.raw_ratings))
    shuffled.raw_ratings = [data.raw_ratings[n] for n in order]
    a, b = data.build_full_trainset(), shuffled.build_full_trainset()
    fits = [DPItemKNN(k=5, epsilon=50.0, random_state=9).fit(t) for t in (a, b)]
    assert 1 < len(fits[0].sim) < 40 and fits[0].sim.to_numpy().any()   # items selected
    pd.testing.assert_frame_equal(fits[0].sim, fits[1].sim, rtol=0, atol=0)
    pd.testing.assert_series_equal(fits[0].baseline_.item_effects_,
                                   fits[1].baseline_.item_effects_, rtol=0, atol=0)
    pairs = a.build_testset()[:400]
    first, second = fits[0].test(pairs), fits[1].test(pairs)
    assert [(p.est, p.details) for p in first] == [(p.est, p.details) for p in second]
    assert any(p.details.get("actual_k", 0) > 0 for p in first)


def test_ties_between_equally_similar_items_go_to_the_lower_sorted_rank(data, trainset):
    # every similarity tied (and every residual distinct): the k chosen are the user's
    # first k items in the sorted order of the item ids, whatever Surprise's inner ids
    algo = DPItemKNN(k=2, random_state=0, **catalogues(data)).fit(trainset)
    space = algo._space
    algo._sim, algo._sim_noise = np.full_like(algo._sim, 0.5), np.zeros_like(algo._sim_noise)
    algo._residuals_by_rating = np.arange(space.matrix.nnz, dtype=np.float64) ** 2
    users = np.arange(10)
    shift, actual_k = algo._shifts(users, np.zeros(10, dtype=np.int64))
    first = space.matrix.indptr[users]
    np.testing.assert_array_equal(actual_k, 2)
    np.testing.assert_array_equal(shift, (first.astype(float) ** 2 + (first + 1.0) ** 2) / 2)
    rated = [space.items.ids[j] for j in space.matrix.indices[first[0]:first[0] + 2]]
    assert rated == sorted_ids(trainset.to_raw_iid(i) for i, _ in
                               trainset.ur[trainset.to_inner_uid(space.users.ids[0])])[:2]


def test_renumbering_removal_audit_of_the_similarities():
    # finding 2 (#33): "lead" rates c first, so Surprise numbers c 0 and a 1; without lead
    # a is 0 and b is 1.  a and b are alike, a and c opposite: an event on the position
    # (0, 1) of the similarities then saw two different pairs (bound 2.41 against ε = 1
    # on inner-id arrays); with sorted raw ids (0, 1) is (a, b) in both datasets.  The
    # items are a public catalogue (given unsorted): at ε = 1 the partition selection
    # would list at most "a" of these 61 users' items, and no pair would be released
    rows = [("lead", "c", 3.0)]
    rows += [(f"p{u:02d}", i, 5.0 if u % 2 else 1.0) for u in range(30) for i in ("a", "b")]
    rows += [(f"q{u:02d}", i, r) for u in range(30)
             for i, r in (("a", 5.0 if u % 2 else 1.0), ("c", 1.0 if u % 2 else 5.0))]
    rows += [("lead", "a", 3.0)]
    data, epsilon = frame(rows), 1.0
    a, b = data.build_full_trainset(), without_user(data, "lead").build_full_trainset()
    assert a.to_raw_iid(0) != b.to_raw_iid(0)

    def release(trainset, seed):
        return np.asarray(DPItemKNN(epsilon=epsilon, k=2, random_state=seed,
                                    items=["c", "b", "a"]).fit(trainset).sim)[0, 1]

    bound = audit_release(release, a, b, threshold_events([-0.5, 0.0, 0.5]), n_runs=300,
                          delta=1e-5, random_state=0)
    assert not bound.violates(epsilon), bound


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_user_level_audit_of_a_similarity_stays_below_the_claim(mechanism):
    # a target user who rated exactly the two items whose similarity is released; at
    # ε = 1 no event sees them at all (bound < 0), so the audit runs at ε = 20, where the
    # events do separate the datasets, and the bound must stay below the claim (the
    # Gaussian's at its δ = 1e-5).  1000 runs: bounds 1.9 (Gaussian) and 2.7 (Laplace), as
    # with 2000; no count of this size can refute ε = 20 (no noise at all: 4.9; 2000: 5.6)
    rows = [(f"u{u}", f"i{i}", float(1 + (u * 3 + i * 5) % 5)) for u in range(10)
            for i in range(4)]
    rows += [("target", "i0", 5.0), ("target", "i1", 1.0)]
    a = frame(rows)
    b = without_user(a, "target")
    epsilon, listed = 20.0, catalogues(a)

    def release(trainset, seed):
        algo = DPItemKNN(epsilon=epsilon, mechanism=mechanism, baseline_share=0.1,
                         shrinkage=0.0, random_state=seed, **listed).fit(trainset)
        return algo.sim.loc["i0", "i1"]

    bound = audit_release(release, a.build_full_trainset(), b.build_full_trainset(),
                          threshold_events(np.linspace(-0.95, 0.95, 20)), n_runs=1000,
                          delta=1e-5 if mechanism == "gaussian" else 0.0, random_state=0)
    assert not bound.violates(epsilon), bound
    assert bound.epsilon > 1.0, bound


@pytest.mark.parametrize(("kwargs", "name"), [
    ({"epsilon": -1.0}, "epsilon"), ({"k": 0}, "k"), ({"baseline_share": 0.0}, "baseline_share"),
    ({"mechanism": "uniform"}, "mechanism"), ({"mechanism": 1}, "mechanism"),
    ({"delta": 0.0}, "delta"), ({"delta": 1.0}, "delta"), ({"delta": -1e-5}, "delta"),
    ({"mechanism": "laplace", "delta": 0.0}, "delta"),
    ({"mechanism": "laplace", "epsilon": 0.0}, "epsilon"),
    ({"clip": 0.0}, "clip"), ({"clip": math.inf}, "clip"), ({"grid_bits": -1}, "grid_bits"),
    ({"grid_bits": 13}, "grid_bits"), ({"clip": 0.01, "grid_bits": 4}, "clip"),
    ({"shrinkage": -1.0}, "shrinkage"), ({"random_state": 1.5}, "random_state"),
    ({"items": ["i0"]}, "items"), ({"users": []}, "users"),
])
def test_bad_parameters_are_named_at_fit(trainset, kwargs, name):
    with pytest.raises((ValueError, TypeError), match=rf"^{name}\b"):
        DPItemKNN(**kwargs).fit(trainset)


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_delta_is_the_partition_selections_without_an_item_catalogue(data, trainset, mechanism):
    # #51: without items= the partition selection spends δ (half of it with the Gaussian,
    # all of it with Laplace, whose default is then 1e-5); with Laplace and a public item
    # catalogue δ is 0 and another δ is refused, naming it
    items = catalogues(data)["items"]
    if mechanism == "laplace":
        with pytest.raises(ValueError, match=r"^delta = 1e-05 is for"):
            DPItemKNN(mechanism=mechanism, delta=1e-5, items=items).fit(trainset)
        with pytest.raises(ValueError, match=r"^delta must be > 0 without a public item"):
            DPItemKNN(mechanism=mechanism, delta=0.0).fit(trainset)
        public = DPItemKNN(mechanism=mechanism, items=items).fit(trainset).privacy_report()
        assert public.total(Unit.USER)[1] == 0.0
    for delta in (None, 1e-7):
        algo = DPItemKNN(mechanism=mechanism, delta=delta).fit(trainset)
        _, spent = algo.privacy_report().total(Unit.USER)
        asked = 1e-5 if delta is None else delta
        own = asked / 2.0 if mechanism == "gaussian" else 0.0
        # Gaussian: the selections' budget charged, a bound on what they added (a second
        # selection may run); Laplace: the one selection's δ, public before the noise
        added = algo.baseline_.selection_delta_
        assert 0.0 < added <= asked - own
        assert spent == (asked if mechanism == "gaussian" else pytest.approx(added, rel=1e-12))


def test_a_noise_scale_beyond_the_sampler_is_refused_with_its_size(data, trainset):
    # Laplace: Δ = m² 2^A = 2^24 2^11 over ε_each = 0.00035: 2^46.5 integer steps, above 2^42
    # (over the public catalogue's 40 items: the scale is known before any noise)
    listed = catalogues(data)
    with pytest.raises(ValueError, match=r"^grid_bits = 12 with epsilon = 0\.001 needs discrete "
                                         r"Laplace noise of scale 2\^46\.5 integer steps"):
        DPItemKNN(epsilon=0.001, grid_bits=12, mechanism="laplace", **listed).fit(trainset)
    # Gaussian: σ = m² 2^A / √(2 ρ_each) = 2^24 2^6 / √(0.7 ρ), above 2^42 at this ε (the
    # sampler's refusal names epsilon, not grid_bits); nothing is kept of the fit
    sigma = 2.0**30 / math.sqrt(2.0 * ((1.0 - 0.3) * zcdp_rho(0.00355, 1e-5) / 2.0))
    assert math.log2(sigma) > 42
    # (baseline_share given: the rule reads the released count of users, whose noise at
    # this ε may well make it negative, and would then release no covariance)
    algo = DPItemKNN(epsilon=0.00355, grid_bits=12, baseline_share=0.3, **listed)
    with pytest.raises(ValueError, match=re.escape(f"sigma = {sigma:g} is above the sampler's "
                                                   "largest scale 2^42") + ".*epsilon"):
        algo.fit(trainset)
    assert not hasattr(algo, "_accountant") and not hasattr(algo, "baseline_")


def test_batched_test_equals_predict_and_never_reads_the_raw_mean(trainset):
    algo = DPItemKNN(epsilon=50.0, k=5, random_state=1).fit(trainset)
    testset = trainset.build_testset()[:400] + [("nobody", trainset.to_raw_iid(0), 3.0),
                                                 (trainset.to_raw_uid(0), "nothing", 3.0),
                                                 ("nobody", "nothing", 3.0)]
    batched = algo.test(testset)
    for p in batched:
        single = algo.predict(p.uid, p.iid, p.r_ui)
        assert p.est == pytest.approx(single.est, abs=1e-12)
        assert p.details == single.details
    assert any(p.details.get("actual_k", 0) > 0 for p in batched)
    assert "actual_k" not in batched[-2].details and "actual_k" not in batched[-3].details
    # a known user and an unknown item: μ + b_u + the effect of an item with no release
    base = algo.baseline_
    own = base._user_effects[base.rating_space.users.index[trainset.to_raw_uid(0)]]
    assert batched[-2].est == pytest.approx(min(5, max(1, base.mu_ + own
                                                       + base.unlisted_effect_)), abs=1e-12)
    lost = batched[-1]
    assert lost.details["was_impossible"]
    assert lost.est == pytest.approx(min(5, max(1, algo.baseline_.mu_)))
    assert lost.est != pytest.approx(trainset.global_mean, abs=1e-9)
    est, details = algo.estimate(0, 0)
    assert est == pytest.approx(algo.predict(trainset.to_raw_uid(0), trainset.to_raw_iid(0),
                                             clip=False).est)
    assert details["actual_k"] >= 0 and algo.default_prediction() == algo.baseline_.mu_


def test_listed_users_and_items_without_ratings_are_known(data, trainset):
    listed = catalogues(data)
    algo = DPItemKNN(k=3, users=listed["users"] + ["ghost"], items=listed["items"] + ["new"],
                     random_state=None).fit(trainset)
    assert algo.sim.shape == (41, 41) and np.isfinite(algo.sim.to_numpy()).all()
    ghost = algo.predict("ghost", "new")
    assert ghost.details == {"actual_k": 0, "was_impossible": False}
    rated = algo.predict(listed["users"][0], "new")
    assert not rated.details["was_impossible"] and rated.details["actual_k"] >= 0
    sim = algo.sim
    with pytest.raises(ValueError, match="read-only"):
        sim.iloc[0, 0] = 2.0                            # the release is not rewritten
    with pytest.raises(AttributeError, match="fit"):
        DPItemKNN().privacy_report()


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_the_report_states_the_models_texts(data, trainset, capsys, mechanism):
    from dprec.endtoend.dp_baseline import NOTES as BASELINE_NOTES
    from dprec.endtoend.dp_baseline import SCOPE
    from dprec.endtoend.dp_item_knn import NOTES, OUTPUTS

    algo = DPItemKNN(epsilon=0.8, k=7, mechanism=mechanism, verbose=True,
                     **catalogues(data)).fit(trainset)
    spent = "ε = 0.8, δ = 1e-05" if mechanism == "gaussian" else "ε = 0.8"
    assert capsys.readouterr().out == ("DPItemKNN: released the item effects and the 40-item "
                                       f"covariance, {spent} per user\n")
    report = algo.privacy_report()
    assert report.model == "DPItemKNN(k=7)" and algo.k_ == 7
    assert {(e.unit, e.status, e.applies_to) for e in report.entries} == {
        (Unit.USER, Status.HOLDS, "user")}
    if mechanism == "gaussian":
        assert [(e.component, e.mechanism, e.note, e.delta) for e in report.entries] == [
            ("effects, covariance and co-rating weights", "discrete gaussian (zCDP)",
             NOTES["gaussian"], 1e-5)]
        assert report.entries[0].epsilon == pytest.approx(0.8, rel=1e-6)
        baseline_note = BASELINE_NOTES["gaussian"].format(unit="user", weights="1/sqrt(|I_u|)")
        assert [(e.mechanism, e.note) for e in algo.baseline_.privacy_report().entries] == [
            ("discrete gaussian (zCDP)", baseline_note)]
    else:
        baseline_note = BASELINE_NOTES["laplace"].format(unit="user", weights="1/|I_u|")
        assert [(e.component, e.mechanism, e.note, e.delta) for e in report.entries] == [
            ("global effect", "laplace (lattice)", baseline_note, 0.0),
            ("item effects", "laplace (lattice)", baseline_note, 0.0),
            ("covariance", "discrete laplace", NOTES["sums"], 0.0),
            ("co-rating weights", "discrete laplace", NOTES["sums"], 0.0)]
        epsilons = [e.epsilon for e in report.entries]
        assert sum(epsilons[:2]) == pytest.approx(0.3 * 0.8)
        assert epsilons[2] == pytest.approx(0.28) and epsilons[3] == pytest.approx(0.28)
    n = len(report.entries)
    assert [o.name for o in report.outputs] == list(OUTPUTS)
    assert all(o.covered_by == tuple(range(n)) for o in report.outputs)
    assert report.notes == [NOTES["answers"]]
    assert report.conditions == [SCOPE["items given"], SCOPE["users given"]]
    assert all(report.applications(i).tolist() == [1] * report.n_users for i in range(n))
    # without catalogues: the items by partition selection (its rule, from the baseline's
    # plan), the user list not released; the selection named in the effects' entry
    quiet = DPItemKNN(k=2, mechanism=mechanism, baseline_share=0.3).fit(trainset)
    assert capsys.readouterr().out == ""
    conditions = quiet.privacy_report().conditions
    rule = quiet.baseline_.rating_space.items.selection
    assert rule.startswith("an item is released when its noisy weight is at least ")
    assert conditions == [SCOPE["items selected"] + rule, SCOPE["users private"]]
    assert quiet.baseline_.privacy_report().conditions == conditions
    components = [e.component for e in quiet.privacy_report().entries]
    assert components == (["effects, covariance and co-rating weights (items by partition "
                           "selection)"] if mechanism == "gaussian" else
                          ["global effect", "item effects (items by partition selection)",
                           "covariance", "co-rating weights"])
    assert quiet.baseline_.epsilon == pytest.approx(0.3) and quiet.baseline_.unit == "user"
    assert quiet.baseline_.mechanism == mechanism


def reference_shift(algo, uid, iid):
    """The KNNBaseline rule by hand: u's rated items by similarity to i (ties by sorted
    id), the first k, those with s > 0: (Σ s e / (Σ s + κ), their number), κ = 2 √(Σ τ²)."""
    space = algo._space
    u, i = space.users.index[uid], space.items.index[iid]
    start, end = space.matrix.indptr[u], space.matrix.indptr[u + 1]
    rated = space.matrix.indices[start:end]
    sims = algo.sim.loc[iid].to_numpy()[rated]
    order = sorted(range(len(rated)), key=lambda n: (-sims[n], space.items.ids[rated[n]]))
    chosen = [n for n in order[: algo.k_] if sims[n] > 0]
    weights = sims[chosen]
    residuals = algo._residuals_by_rating[start + np.array(chosen, dtype=int)]
    kappa = SIGNAL * np.sqrt(np.sum(algo._sim_noise[i, rated[chosen]].astype(float) ** 2))
    shift = float(weights @ residuals / (weights.sum() + kappa)) if chosen else 0.0
    return shift, len(chosen), i


@pytest.mark.parametrize("k", [3, 40])
def test_every_prediction_follows_the_knn_baseline_rule(data, trainset, k):
    # more than 4096 queries (several blocks), every user and item (a public catalogue:
    # every item listed): the batched rule equals the rule by hand
    algo = DPItemKNN(epsilon=2000.0, k=k, shrinkage=0.5, random_state=None,
                     **catalogues(data)).fit(trainset)
    base = algo.baseline_
    queries = trainset.build_testset() + trainset.build_anti_testset()
    assert len(queries) > 4096
    predictions = algo.test(queries)
    positives = 0
    for prediction in predictions[::7]:
        uid, iid = prediction.uid, prediction.iid
        shift, count, i = reference_shift(algo, uid, iid)
        own = base._user_effects[algo._space.users.index[uid]]
        expected = np.clip(base.mu_ + own + base._item_effects[i] + shift, 1, 5)
        assert prediction.est == pytest.approx(expected, abs=1e-7)      # κ: float32 τ
        assert prediction.details == {"actual_k": count, "was_impossible": False}
        assert type(prediction.details["actual_k"]) is int
        positives += count > 0
    assert positives > 100


def test_zero_similarities_count_for_nothing(data, trainset):
    algo = DPItemKNN(k=5, random_state=0, **catalogues(data)).fit(trainset)
    algo._sim = np.zeros_like(algo._sim)
    shift, actual_k = algo._shifts(np.arange(20), np.arange(20))
    assert not shift.any() and not actual_k.any()
    algo._sim = np.full_like(algo._sim, -0.5)
    shift, actual_k = algo._shifts(np.arange(20), np.arange(20))
    assert not shift.any() and not actual_k.any()


def test_ties_among_many_rated_items_go_to_the_lower_sorted_rank(data, trainset):
    algo = DPItemKNN(k=5, random_state=0, **catalogues(data)).fit(trainset)
    space = algo._space
    counts = np.diff(space.matrix.indptr)
    users = np.flatnonzero(counts >= 18)          # longer than numpy's small-sort cut-off
    assert len(users) >= 10
    algo._sim, algo._sim_noise = np.full_like(algo._sim, 0.5), np.zeros_like(algo._sim_noise)
    algo._residuals_by_rating = np.arange(space.matrix.nnz, dtype=np.float64)
    shift, actual_k = algo._shifts(users, np.zeros(len(users), dtype=np.int64))
    np.testing.assert_array_equal(actual_k, 5)
    np.testing.assert_array_equal(shift, space.matrix.indptr[users] + 2.0)   # mean of 0..4


def test_the_neighbours_weights_are_shrunk_by_their_noise(data, trainset):
    # Σ s e / (Σ s + κ), κ = 2 √(Σ τ²) over the counted neighbours only (s > 0), τ the
    # noise of each (query item, neighbour) similarity; similarities of three values, so
    # that the k chosen are ties broken by the sorted rank (a sort that is not stable
    # breaks them otherwise, on rows of mixed values)
    algo = DPItemKNN(k=3, random_state=0, **catalogues(data)).fit(trainset)
    space = algo._space
    n_items = space.matrix.shape[1]
    assert n_items == 40
    values = np.array([0.5, 0.25, -0.2, 0.25])[np.arange(n_items) % 4]
    sims = np.tile(values, (n_items, 1))                                 # s_ij by neighbour j
    noise = np.tile(np.linspace(0.1, 0.9, n_items, dtype=np.float32)[:, None], (1, n_items))
    noise[:, values < 0] = 1e6                                  # s < 0: never counted
    algo._sim, algo._sim_noise = sims, noise + np.arange(n_items, dtype=np.float32) / 100
    algo._residuals_by_rating = np.cos(np.arange(space.matrix.nnz, dtype=np.float64))
    users = np.arange(space.matrix.shape[0])
    items = users % n_items
    shift, actual_k = algo._shifts(users, items)
    for u, i, got, count in zip(users, items, shift, actual_k):
        rated = space.matrix.indices[space.matrix.indptr[u]:space.matrix.indptr[u + 1]]
        top = sorted(range(len(rated)), key=lambda n: -sims[i, rated[n]])[:3]
        chosen = [n for n in top if sims[i, rated[n]] > 0]
        s, tau = sims[i, rated[chosen]], algo._sim_noise[i, rated[chosen]].astype(float)
        e = algo._residuals_by_rating[space.matrix.indptr[u] + np.array(chosen, dtype=int)]
        kappa = SIGNAL * math.sqrt((tau**2).sum())
        assert SIGNAL == 2.0 and count == len(chosen)
        assert got == pytest.approx(s @ e / (s.sum() + kappa) if chosen else 0.0, abs=1e-7)


def test_predict_passes_its_arguments_on(data, trainset, capsys):
    algo = DPItemKNN(k=5, random_state=0, **catalogues(data)).fit(trainset)
    uid, iid = trainset.to_raw_uid(0), trainset.to_raw_iid(0)
    algo.baseline_._user_effects[:] = 10.0
    assert algo.predict(uid, iid).est == 5.0
    unclipped = algo.predict(uid, iid, r_ui=2.0, clip=False, verbose=True)
    assert unclipped.est > 5.0 and unclipped.r_ui == 2.0
    assert capsys.readouterr().out == f"{unclipped}\n"
    algo.test([(uid, iid, 2.0)])
    assert capsys.readouterr().out == ""
    algo.test([(uid, iid, 2.0)], verbose=True)
    assert capsys.readouterr().out == f"{algo.predict(uid, iid, 2.0)}\n"


def test_defaults():
    params = vars(DPItemKNN())
    assert {key: params[key] for key in ("epsilon", "k", "mechanism", "delta", "baseline_share",
                                         "clip", "grid_bits", "shrinkage", "users", "items",
                                         "similarity", "max_items_per_user", "random_state",
                                         "verbose", "budget")} == {
        "epsilon": 1.0, "k": 40, "mechanism": "gaussian", "delta": None, "baseline_share": None,
        "clip": 1.0, "grid_bits": 4, "shrinkage": None, "users": None, "items": None,
        "similarity": "covariance", "max_items_per_user": 1000, "random_state": None,
        "verbose": False, "budget": None}


@pytest.mark.parametrize("mechanism", MECHANISMS)
@pytest.mark.parametrize("beta", [0.0, 2.0])
def test_without_noise_the_similarity_is_the_stabilised_covariance(data, monkeypatch, beta,
                                                                   mechanism):
    algo = noiseless(monkeypatch, mechanism, data, shrinkage=beta, k=1, clip=0.5)
    space, residuals = algo._space, algo._residuals_by_rating
    dense = space.matrix.copy()
    dense.data = residuals
    dense = dense.toarray()
    pattern = np.zeros_like(dense, dtype=bool)
    pattern[np.repeat(np.arange(space.matrix.shape[0]), np.diff(space.matrix.indptr)),
            space.matrix.indices] = True
    weights = 2.0 ** -np.ceil(POWER[mechanism] * np.log2(np.maximum(pattern.sum(axis=1), 1)))
    cov = (dense * weights[:, None]).T @ dense
    co = (pattern * weights[:, None]).T @ pattern
    stabilised = cov / (co + beta) if beta else np.divide(cov, co, out=np.zeros_like(cov),
                                                          where=co > 0)
    variance = np.maximum(np.diag(stabilised), 1e-12)
    expected = np.clip(stabilised / np.sqrt(np.outer(variance, variance)), -1, 1)
    np.testing.assert_allclose(algo.sim.to_numpy(), expected, atol=1e-6)
    # each similarity's noise τ = C_h² sd_w / ((max(W, 0) + β) √(Ĉ_ii Ĉ_jj)), C_h = 0.5, sd_w
    # W's noise sd: 1/√(2ρ_each) (ρ = MAX_RHO here) or √2/ε_each
    sd_w = (1.0 / math.sqrt(0.7e6) if mechanism == "gaussian" else math.sqrt(2.0) / 0.35e12)
    if beta:
        tau = 0.25 * sd_w / ((co + beta) * np.sqrt(np.outer(variance, variance)))
        np.testing.assert_allclose(algo._sim_noise, tau, rtol=1e-6)
        assert algo._sim_noise.dtype == np.float32


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_the_default_shrinkage_is_ten_noise_scales_of_the_weights(data, trainset, mechanism):
    # β = 10 sd_w / √2, sd_w the standard deviation of W's noise in W's units: 1/√(2ρ_each),
    # ρ_each = (1 − baseline_share) ρ / 2 (Gaussian), or √2/ε_each, ε_each = (1 −
    # baseline_share) ε / 2 (Laplace: β = 10/ε_each): the same seed with β given explicitly
    # releases the same similarities (ε large enough for pairs above the noise; a public
    # item catalogue, so that δ is the release's own)
    if mechanism == "gaussian":
        sd_w = 1.0 / math.sqrt(2.0 * ((1.0 - 0.2) * zcdp_rho(200.0, 1e-5) / 2.0))
    else:
        sd_w = math.sqrt(2.0) / ((1.0 - 0.2) * 200.0 / 2.0)
    beta = 10.0 * sd_w / math.sqrt(2.0)
    assert mechanism == "gaussian" or beta == pytest.approx(10.0 / 80, rel=1e-15)

    def fit(shrinkage):
        return DPItemKNN(epsilon=200.0, mechanism=mechanism, baseline_share=0.2,
                         shrinkage=shrinkage, random_state=3, **catalogues(data)).fit(
            trainset).sim

    default = fit(None)
    assert (default.to_numpy() != 0).sum() > 100
    pd.testing.assert_frame_equal(default, fit(beta), rtol=0, atol=0)
    assert not fit(beta * 1.01).equals(default)
    assert DPItemKNN(k=1, random_state=0).fit(trainset).k_ == 1        # k = 1 is accepted


def test_the_baseline_draws_from_the_models_seed(trainset):
    a, b = (DPItemKNN(random_state=8).fit(trainset) for _ in range(2))
    pd.testing.assert_series_equal(a.baseline_.item_effects_, b.baseline_.item_effects_)
    c = DPItemKNN(random_state=9).fit(trainset)
    assert not a.baseline_.item_effects_.equals(c.baseline_.item_effects_)


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_pairs_below_the_noise_get_no_similarity(mechanism):
    # #34: 200 users of one item each, so no pair of the 40 items is co-rated (W = 0: the
    # data are all noise) and every pair released is false; at ε = 1 a pair passes with
    # probability 1/(10 n_items), about 0.1 false pair per item: 780/400 = 1.95 pairs per
    # fit, 97.5 over 50 fits (the ungated model released all 780 per fit).  The 40 items a
    # public catalogue: the partition selection would list few of them
    rows = [(f"u{u:03d}", f"i{u % 40:02d}", float(1 + u % 5)) for u in range(200)]
    items = [f"i{i:02d}" for i in range(40)]
    trainset = frame(rows).build_full_trainset()
    passed = 0
    for seed in range(50):
        sim = DPItemKNN(epsilon=1.0, mechanism=mechanism, random_state=seed,
                        items=items).fit(trainset).sim
        assert sim.shape == (40, 40)
        passed += int(np.count_nonzero(np.triu(sim.to_numpy(), 1)))
    assert 0.6 * 97.5 <= passed <= 1.5 * 97.5, passed


def gate_threshold(mechanism: str) -> tuple[float, float]:
    """The gate's threshold T on W for 40 items, ε = 1, share 0.3, as the model states it
    (Gaussian: sd_w Φ⁻¹(1 − 0.1/n_items), sd_w = 1/√(2ρ_each); Laplace: ln(5 n_items) /
    ε_each), and the scale 2^A of the integer W."""
    if mechanism == "gaussian":
        sd_w = 1.0 / math.sqrt(2.0 * ((1.0 - 0.3) * zcdp_rho(1.0, 1e-5) / 2.0))
        threshold = sd_w * NormalDist().inv_cdf(1.0 - 0.1 / 40)
    else:
        threshold = math.log(5.0 * 40) / ((1.0 - 0.3) * 1.0 / 2.0)
    return threshold, 2.0 ** math.ceil(POWER[mechanism] * math.log2(40))


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_the_gate_is_the_stated_threshold(data, trainset, monkeypatch, mechanism):
    # the sampler replaced by a ramp of released values over [0, 2 T] (in W's units): a
    # pair keeps its similarity exactly where its W is above T = sd_w Φ⁻¹(1 − 0.1/n_items),
    # sd_w = 1/√(2ρ_each) (Gaussian), or T = ln(5 n_items)/ε_each (Laplace)
    threshold, top = gate_threshold(mechanism)
    ramp = np.linspace(0.0, 2.0 * threshold * top, 820)                  # 40·41/2 entries
    monkeypatch.setattr(f"dprec.endtoend.covariance_release.discrete_{mechanism}",
                        lambda values, scale, rng: ramp.copy())
    sim = DPItemKNN(epsilon=1.0, mechanism=mechanism, random_state=0,
                    **catalogues(data)).fit(trainset).sim
    upper = np.triu_indices(40, 1)
    co = np.zeros((40, 40))
    co[np.triu_indices(40)] = ramp / top
    kept = sim.to_numpy()[upper] != 0
    np.testing.assert_array_equal(kept, co[upper] > threshold)
    assert 300 < kept.sum() < 480


def test_no_shrinkage_fits_without_a_division_by_zero(data, trainset):
    with np.errstate(divide="raise", invalid="raise"):
        DPItemKNN(shrinkage=0.0, random_state=0, **catalogues(data)).fit(trainset)
        DPItemKNN(shrinkage=0.0, random_state=0).fit(trainset)


def test_the_public_rule_releases_the_covariance_only_with_enough_users_and_items():
    # #34: n_users / n_items · sqrt(ρ) >= 3 (measured on dprec's synthetic shapes) and at
    # least MIN_ITEMS listed items (#51): 0.3 of ρ for the baseline, else none of the
    # covariance (the baseline with all of ρ); n_users is a released, noisy count
    rho = zcdp_rho(1.0, 1e-5)                                      # sqrt(ρ) = 0.1748
    n_items = 2 * dp_item_knn.MIN_ITEMS
    assert dp_item_knn.default_share(18 * n_items, n_items, rho) == 0.3     # 3.15
    assert dp_item_knn.default_share(17 * n_items, n_items, rho) == 1.0     # 2.97
    assert dp_item_knn.default_share(18.0 * n_items + 0.5, n_items, rho) == 0.3
    assert dp_item_knn.default_share(-3.5, n_items, rho) == 1.0    # a noisy count below 0
    assert dp_item_knn.default_share(10, n_items, None) == 0.3     # Laplace: always
    assert dp_item_knn.default_share(10, 0, None) == 0.3


def test_the_public_rule_at_its_boundaries():
    # n_users / n_items · sqrt(ρ) >= 3 with n_items >= MIN_ITEMS: equality releases the
    # covariance; one listed item fewer, or none at all, releases none
    m = dp_item_knn.MIN_ITEMS
    assert m > 1
    assert dp_item_knn.default_share(3 * m, m, 1.0) == 0.3              # 3 m / m · 1 = 3
    assert dp_item_knn.default_share(3 * m, m, 0.99) == 1.0
    assert dp_item_knn.default_share(3 * m, m + 1, 1.0) == 1.0          # just below 3
    assert dp_item_knn.default_share(3 * m, m - 1, 1.0) == 1.0          # above 3, too few items
    assert dp_item_knn.default_share(100 * m, m - 1, 100.0) == 1.0
    assert dp_item_knn.default_share(3 * m, 0, 1.0) == 1.0              # no item listed


def spy(monkeypatch, module, name, calls):
    """`module.name` replaced by a wrapper that appends `(args, result)` to `calls`."""
    real = getattr(module, name)

    def recording(*args, **kwargs):
        result = real(*args, **kwargs)
        calls.append((args, result))
        return result

    monkeypatch.setattr(module, name, recording)


def test_the_public_rule_without_covariance_spends_the_whole_budget_on_the_effects(
        trainset, monkeypatch):
    # #51: without catalogues the rule reads the baseline release's own sizes — its noisy
    # count of users and the number of items its partition selection listed — never the
    # data's; "no covariance" (150 users over 40 items at ε = 1: too few of both) sends
    # the rest of ρ (0.7 of it) to a second release of the effects, averaged with the
    # first by inverse variance, and the items are chosen again on that average.  The one
    # entry is then the whole model's: ε as asked, the release's half of δ plus both
    # selections'
    from dprec.endtoend import dp_baseline

    rules, releases, reselections = [], [], []
    spy(monkeypatch, dp_item_knn, "default_share", rules)
    spy(monkeypatch, dp_baseline, "gaussian_release", releases)
    spy(monkeypatch, dp_baseline, "reselect", reselections)
    algo = DPItemKNN(epsilon=1.0, random_state=3).fit(trainset)
    rho = zcdp_rho(1.0, 5e-6)                       # δ/2 is the release's own
    n = 40                                          # the items of the data, sorted
    items = sorted_ids(trainset.to_raw_iid(i) for i in trainset.all_items())
    # the rule: once, on the first release's noisy count and its listed items
    (((n_users, n_listed, rule_rho), share),) = rules
    first = releases[0][1][0]
    assert rule_rho == rho and share == 1.0
    assert n_users == first[-1] and n_users != trainset.n_users
    assert abs(n_users - trainset.n_users) < 200                   # σ ≈ 34 users
    plan = dp_baseline.release_plan(algo.baseline_._settings((1, 5)), n, 0.3 * rho,
                                    dp_baseline.SelectionBudget(2.5e-6))
    assert n_listed == int((first[n:2 * n] >= plan.threshold).sum()) < dp_item_knn.MIN_ITEMS
    # the second release and the items chosen on the average (weights 0.3 and 0.7: the
    # inverse variances of releases at 0.3 ρ and 0.7 ρ)
    assert len(releases) == 2 and len(reselections) == 1
    second = releases[1][1][0]
    ((weights, _, _, _), (listed, added, rule)) = reselections[0]
    np.testing.assert_allclose(weights, 0.3 * first[n:2 * n] + 0.7 * second[n:2 * n],
                               rtol=1e-12, atol=1e-9)
    assert listed.any() and not listed.all()
    assert weights[listed].min() > weights[~listed].max()         # a threshold on the average
    assert list(algo.sim.index) == [iid for iid, kept in zip(items, listed) if kept]
    assert list(algo.baseline_.item_effects_.index) == list(algo.sim.index)
    assert algo.baseline_.rating_space.items.selection == rule
    assert rule.endswith("chosen on the average of two releases, both charged")
    # the whole ρ spent, one entry, the model's ε
    baseline = algo.baseline_
    assert baseline.rho_ == pytest.approx(rho, rel=1e-12)
    (entry,) = algo.privacy_report().entries
    assert entry.component == ("effects (no covariance: too few users or items for this budget) "
                               "(items by partition selection)")
    assert entry.epsilon == pytest.approx(1.0, rel=1e-6) and entry.epsilon <= 1.0
    assert entry.delta == 1e-5          # δ/2 and the selections' budget δ/2
    assert 0.0 < baseline.selection_delta_ <= 5e-6 and added <= 2.5e-6
    # the baseline's own entry states the same ρ (all of it), converted at its own split
    # of δ (the release's share of its δ, without both selections')
    (own,) = baseline.privacy_report().entries
    assert own.epsilon == pytest.approx(zcdp_epsilon(baseline.rho_, own.delta
                                                     - baseline.selection_delta_), rel=1e-9)
    assert "average of two releases" in str(algo.privacy_report())
    # no similarity: every answer is the baseline's
    assert not algo.sim.to_numpy().any()
    pairs = trainset.build_testset()[:300]
    assert [p.est for p in algo.test(pairs)] == [p.est for p in baseline.test(pairs)]


def test_the_public_rule_with_the_covariance_spends_the_rest_on_it(trainset, monkeypatch):
    # the rule decides on what it is given: told "covariance" (0.3), no second release and
    # no reselection; the covariance over the first release's listed items
    from dprec.endtoend import dp_baseline

    monkeypatch.setattr(dp_item_knn, "default_share", lambda n_users, n_items, rho: 0.3)
    releases, reselections = [], []
    spy(monkeypatch, dp_baseline, "gaussian_release", releases)
    spy(monkeypatch, dp_baseline, "reselect", reselections)
    algo = DPItemKNN(epsilon=50.0, random_state=3).fit(trainset)
    assert len(releases) == 1 and not reselections
    assert algo.baseline_.rho_ == pytest.approx(0.3 * zcdp_rho(50.0, 5e-6), rel=1e-12)
    (entry,) = algo.privacy_report().entries
    assert entry.component == ("effects, covariance and co-rating weights (items by "
                               "partition selection)")
    assert entry.epsilon == pytest.approx(50.0, rel=1e-6)
    assert 1 < len(algo.sim) < 40 and algo.sim.to_numpy().any()


def test_the_public_rule_reads_the_released_count_of_users_and_the_listed_items(capsys,
                                                                               monkeypatch):
    # with public catalogues the listed items are the catalogue's (rated or not), while
    # the users are the release's noisy count of users with ratings: users of the
    # catalogue without ratings count for nothing.  At ε = 20 (sqrt(ρ) = 2.32) over
    # MIN_ITEMS items, 800 users give 3.7 (the covariance) and 150 users 0.70 (none), even
    # among 800 listed users; MIN_ITEMS − 1 items give none whatever the users
    m = dp_item_knn.MIN_ITEMS
    assert math.sqrt(zcdp_rho(20.0, 1e-5)) == pytest.approx(2.32, abs=0.01)
    many = datasets.synthetic(800, 40, 6000, random_state=2)
    few = datasets.synthetic(150, 40, 2500, random_state=2)
    users = sorted_ids(set(catalogues(many)["users"]) | set(catalogues(few)["users"]))
    items = sorted_ids(set(catalogues(many)["items"]) | set(catalogues(few)["items"]))
    items += [f"new{n:04d}" for n in range(m - len(items))]
    assert len(users) == 800 and len(items) == m

    def fit(data, listed_items, **kwargs):
        return DPItemKNN(epsilon=20.0, users=users, items=listed_items, **kwargs).fit(
            data.build_full_trainset())

    released = fit(many, items).privacy_report()
    assert [e.component for e in released.entries] == ["effects, covariance and co-rating "
                                                       "weights"]
    assert released.entries[0].epsilon == pytest.approx(20.0, rel=1e-6)
    for data, listed_items in ((few, items), (many, items[:-1])):
        rules = []
        spy(monkeypatch, dp_item_knn, "default_share", rules)
        algo = fit(data, listed_items, k=7, random_state=4, verbose=True)
        (((n_users, n_items, _), share),) = rules
        n_rated = data.build_full_trainset().n_users
        assert share == 1.0 and n_items == len(listed_items)
        assert n_users != n_rated and abs(n_users - n_rated) < 30     # noisy, σ ≈ 2.6
        assert capsys.readouterr().out == (
            f"DPItemKNN: released the item effects only ({len(listed_items)} items listed), "
            "ε = 20, δ = 1e-05 per user\n")
        report = algo.privacy_report()
        assert report.model == "DPItemKNN(k=7)" and algo.k_ == 7
        assert [(e.component, e.status) for e in report.entries] == [
            ("effects (no covariance: too few users or items for this budget)", Status.VOID)]
        assert report.entries[0].epsilon == pytest.approx(20.0, rel=1e-6)
        assert report.guarantee is None                                    # seeded
        assert list(algo.sim.index) == list(algo.sim.columns) == listed_items
        assert not algo.sim.to_numpy().any() and not np.asarray(algo._sim_noise).any()
        assert algo._sim_noise.shape == (len(listed_items),) * 2
        assert algo._sim_noise.dtype == np.float32
        released = algo.sim
        with pytest.raises(ValueError, match="read-only"):
            released.iloc[0, 0] = 2.0


@pytest.mark.parametrize("listed", [True, False])
@pytest.mark.parametrize("share", [None, 0.3])
def test_the_public_rule_states_the_target_where_the_accountant_proves_zero(data, trainset,
                                                                            share, listed):
    # at ε = 0.003 (δ = 1e-5) the accountant proves (0, δ): the ledger states the target
    # ε, with the covariance (share 0.3) and without (the rule on 150 users); with
    # catalogues δ is the release's, without them half of it plus the selections'
    lists = catalogues(data) if listed else {}
    report = DPItemKNN(epsilon=0.003, baseline_share=share, **lists).fit(
        trainset).privacy_report()
    [(epsilon, delta)] = [(e.epsilon, e.delta) for e in report.entries]
    assert epsilon == 0.003
    assert delta == 1e-5 if listed else 5e-6 < delta <= 1e-5
    assert ("no covariance" in report.entries[0].component) == (share is None)


def test_the_covariance_is_released_in_its_own_units_where_a_variance_is_floored(data, trainset,
                                                                               monkeypatch):
    # the released integers back to Cov by g = h² 2^-A (2^-8 2^-6 = 2^-14 here), W by 2^-A:
    # a scale on Cov cancels in Ĉ_ij / √(Ĉ_ii Ĉ_jj) except where a noisy variance is below
    # the floor 10^-12.  The sampler replaced by a chosen release: W = 1 everywhere (β = 0,
    # so Ĉ = Cov), Cov_00 = -g (floored), Cov_11 = 2^40 g, Cov_01 = g, Cov_ii = g elsewhere:
    # s_01 = 2^-14 / √(10^-12 · 2^26) = 2^-27 · 10^6; Cov_02 = -Cov_03 = 2^20 g give ±8·10^9
    # before the clip to [-1, 1]
    n = 40
    cov = np.eye(n)
    cov[0, 0], cov[1, 1], cov[0, 1], cov[0, 2], cov[0, 3] = -1.0, 2.0**40, 1.0, 2.0**20, -2.0**20
    upper = np.triu_indices(n)
    released = iter([cov[upper], np.full(len(upper[0]), 2.0**6)])
    monkeypatch.setattr("dprec.endtoend.covariance_release.discrete_gaussian",
                        lambda values, sigma, rng: next(released).copy())
    sim = DPItemKNN(epsilon=1e12, shrinkage=0.0, random_state=0,
                    **catalogues(data)).fit(trainset).sim.to_numpy()
    assert sim[0, 1] == sim[1, 0] == pytest.approx(2.0**-27 * 1e6, rel=1e-12)
    assert sim[0, 0] == -1.0 and np.all(np.diag(sim)[1:] == 1.0)
    assert sim[0, 2] == sim[2, 0] == 1.0 and sim[0, 3] == sim[3, 0] == -1.0
    off = ~np.eye(n, dtype=bool)
    off[0, 1:4] = off[1:4, 0] = False
    assert not sim[off].any()


def test_a_laplace_scale_of_exactly_the_samplers_largest_is_accepted(data, trainset):
    # Δ = m² 2^A = 2^24 2^11 (grid_bits = 12, 40 items) over ε_each = (1 − 0.5) 2^-5 / 2
    # = 2^-7: t = 2^42 exactly, which the sampler accepts (only a larger t is refused)
    algo = DPItemKNN(epsilon=2.0**-5, grid_bits=12, mechanism="laplace", baseline_share=0.5,
                     random_state=0, **catalogues(data)).fit(trainset)
    assert algo.sim.shape == (40, 40)
    assert [e.epsilon for e in algo.privacy_report().entries[2:]] == [2.0**-7, 2.0**-7]


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_the_gate_is_strict(data, trainset, monkeypatch, mechanism):
    # a released W exactly at the threshold T (computed as the model states it) gets no
    # similarity, the next float above it does; W 2^A / 2^A is exact (a power of two)
    threshold, top = gate_threshold(mechanism)
    at = np.full(820, threshold * top)                                   # 40·41/2 entries
    at[1::2] = np.nextafter(threshold * top, np.inf)
    released = iter([np.ones(820), at])
    monkeypatch.setattr(f"dprec.endtoend.covariance_release.discrete_{mechanism}",
                        lambda values, scale, rng: next(released).copy())
    sim = DPItemKNN(epsilon=1.0, mechanism=mechanism, random_state=0,
                    **catalogues(data)).fit(trainset).sim
    co = np.zeros((40, 40))
    co[np.triu_indices(40)] = at / top
    upper = np.triu_indices(40, 1)
    assert (co[upper] == threshold).sum() > 300 and (co[upper] > threshold).sum() > 300
    np.testing.assert_array_equal(sim.to_numpy()[upper] != 0, co[upper] > threshold)


def test_a_covariance_the_machine_cannot_hold_is_refused_before_it_starts(trainset,
                                                                          monkeypatch):
    # at the 20M shape and ε = 10 the covariance over the 17,465 items released needed
    # ~28 GiB and the kernel killed the process at 23 GB; now a MemoryError names the way
    # out before any n² sum, a fitted model keeps its fit, and the factors still fit
    from dprec.utils import _memory

    items = sorted({trainset.to_raw_iid(i) for i in trainset.all_items()})
    n_items = trainset.n_items
    needed = dp_item_knn.covariance_bytes(n_items, trainset.n_ratings, "threads", None)
    monkeypatch.setattr(_memory, "available_bytes", lambda: needed)
    algo = DPItemKNN(epsilon=5.0, items=items, random_state=0).fit(trainset)
    fitted, before = algo._sim, algo.predict("0", "1").est
    assert fitted.shape == (n_items, n_items)

    def no_sums(*args, **kwargs):
        raise AssertionError("the sums started")

    monkeypatch.setattr(dp_item_knn, "integer_sums", no_sums)
    monkeypatch.setattr(_memory, "available_bytes", lambda: needed - 1)
    message = rf"over the {n_items:,} items released needs about .* GiB .*similarity='factors'"
    algo.random_state = 1
    with pytest.raises(MemoryError, match=message):
        algo.fit(trainset)
    assert algo._sim is fitted and algo.predict("0", "1").est == before
    with pytest.raises(MemoryError, match=message):
        DPItemKNN(epsilon=5.0, items=items, mechanism="laplace", random_state=0).fit(trainset)
    fresh = DPItemKNN(epsilon=5.0, items=items, random_state=0)
    with pytest.raises(MemoryError, match=message):
        fresh.fit(trainset)
    with pytest.raises(ValueError, match="fit"):
        fresh.predict("0", "1")
    monkeypatch.setattr(_memory, "available_bytes", lambda: 1)
    DPItemKNN(epsilon=5.0, similarity="factors", random_state=0).fit(trainset)


def test_a_fit_that_runs_out_of_memory_midway_leaves_the_model_as_it_was(trainset,
                                                                         monkeypatch):
    # the model took its new baseline, k and lists before the n² similarities were built,
    # so a MemoryError there left the new baseline beside the old similarities and ledger
    algo = DPItemKNN(epsilon=5.0, random_state=0).fit(trainset)
    state = (algo.baseline_, algo._sim, algo._accountant, algo.predict("0", "1").est)
    real, calls = dp_item_knn.safe_divide, []

    def failing(numerator, denominator):
        calls.append(1)
        if len(calls) == 2:          # the similarities' noise scale: the last n² array
            raise MemoryError("simulated")
        return real(numerator, denominator)

    monkeypatch.setattr(dp_item_knn, "safe_divide", failing)
    algo.random_state = 1
    with pytest.raises(MemoryError, match="simulated"):
        algo.fit(trainset)
    assert (algo.baseline_, algo._sim, algo._accountant, algo.predict("0", "1").est) == state


def test_the_memory_estimate_counts_the_partial_sums_in_flight(monkeypatch):
    # measured: 86-102 bytes a pair after the sums; 111, 175, 303 with 4, 8, 16 threads
    n = 1000
    monkeypatch.setenv("DPREC_NUM_THREADS", "1")
    assert dp_item_knn.covariance_bytes(n, 10**9, "threads", None) == 100 * n**2
    for threads, per_pair in ((4, 112), (8, 176), (16, 304)):
        monkeypatch.setenv("DPREC_NUM_THREADS", str(threads))
        assert dp_item_knn.covariance_bytes(n, 10**9, "threads", None) == per_pair * n**2
        assert dp_item_knn.covariance_bytes(n, 10**9, "dask", None) == 100 * n**2
        assert dp_item_knn.covariance_bytes(n, 100, "threads", None) == 100 * n**2  # 1 part
    assert dp_item_knn.covariance_bytes(n, 100, "threads", 16) == 304 * n**2


def test_the_memory_check_reads_what_the_machine_has(monkeypatch):
    from dprec.utils import _memory

    assert _memory.available_bytes() > 2**20          # this machine: MemAvailable
    _memory.check_memory(1.0, "one byte", "nothing")
    monkeypatch.setattr(_memory, "available_bytes", lambda: 0)
    with pytest.raises(MemoryError, match=r"^the lot needs about 1.0 GiB and 0.0 GiB are "
                                          r"available: buy more$"):
        _memory.check_memory(2.0**30, "the lot", "buy more")
    monkeypatch.setattr(_memory, "available_bytes", lambda: None)
    _memory.check_memory(1e30, "anything", "nothing")     # unknown: no check
