"""DPItemKNN on the cosine of a DPALS release's item factors (`similarity="factors"`):
the similarities and their noise are post-processing of that release, the rule the same
noise-shrunk KNNBaseline rule, the report DPALS's (tests/test_dp_item_knn.py: the
covariance; tests/test_end_to_end_audits.py: the audits)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from strategies import STRONG_SIGNAL, algo_items
from surprise import accuracy
from surprise.model_selection import train_test_split

from dprec import DPALS, DPItemKNN, datasets
from dprec.accountant.ledger import Unit


@pytest.fixture(scope="module")
def data():
    return datasets.synthetic(300, 60, 9000, random_state=1, **STRONG_SIGNAL)


@pytest.fixture(scope="module")
def fitted(data):
    trainset = data.build_full_trainset()
    catalogues = {"users": [trainset.to_raw_uid(u) for u in trainset.all_users()],
                  "items": [trainset.to_raw_iid(i) for i in trainset.all_items()]}
    return DPItemKNN(similarity="factors", epsilon=20.0, baseline_share=0.3, k=5,
                     random_state=0, **catalogues).fit(trainset)


@pytest.mark.parametrize(("options", "match"), [
    ({"similarity": "pearson"}, "^similarity must be one of"),
    ({"similarity": "factors", "mechanism": "laplace"}, "similarity='factors'")])
def test_a_bad_similarity_is_refused_naming_it(data, options, match):
    with pytest.raises(ValueError, match=match):
        DPItemKNN(**options).fit(data.build_full_trainset())


def test_the_similarities_are_the_cosines_of_the_released_factors(fitted):
    factors = fitted.factors_.item_factors_
    assert isinstance(fitted.factors_, DPALS)
    assert (factors.index == fitted.sim.index).all() and (fitted.sim.columns == factors.index).all()
    norms = np.linalg.norm(factors.to_numpy(), axis=1)
    kept = norms > 0
    assert 0 < kept.sum() < len(kept)              # some items below their noise
    unit = factors.to_numpy()[kept] / norms[kept, None]
    np.testing.assert_allclose(fitted.sim.to_numpy()[np.ix_(kept, kept)], unit @ unit.T,
                               rtol=1e-12, atol=1e-12)
    sim = fitted.sim.to_numpy()
    assert (sim[~kept] == 0).all() and (sim[:, ~kept] == 0).all()
    assert fitted.baseline_ is fitted.factors_.baseline_


def test_a_prediction_is_the_noise_shrunk_rule_on_the_factors_similarities(fitted):
    # by hand: the k = 5 rated items most similar to i (s > 0), their residuals e_uj
    # (rounded to 2^-4, clipped to 1), κ = 2 sqrt(Σ τ²), τ_ij = ν_i/|v_i| + ν_j/|v_j|
    trainset = fitted.trainset
    raw_u, raw_i = "7", "3"
    factors = fitted.factors_.item_factors_
    noise = fitted.factors_.factor_noise_
    norms = np.linalg.norm(factors.to_numpy(), axis=1)
    relative = dict(zip(factors.index, np.where(norms > 0, noise.to_numpy() / np.where(
        norms > 0, norms, 1.0), 0.0)))
    baseline = fitted.baseline_
    rated = [(trainset.to_raw_iid(j), r) for j, r in trainset.ur[trainset.to_inner_uid(raw_u)]]
    rows = []
    for raw_j, r in rated:
        s = fitted.sim.loc[raw_i, raw_j]
        e = r - baseline.predict(raw_u, raw_j, clip=False).est
        e = float(np.clip(np.round(e * 16) / 16, -1.0, 1.0))
        rows.append((s, e, relative[raw_i] + relative[raw_j], sorted(factors.index).index(raw_j)))
    rows.sort(key=lambda row: (-row[0], row[3]))   # ties: the sorted rank
    best = [row for row in rows[:5] if row[0] > 0]
    kappa = 2.0 * math.sqrt(sum(float(np.float32(t)) ** 2 for _, _, t, _ in best))
    shift = sum(s * e for s, e, _, _ in best) / (sum(s for s, _, _, _ in best) + kappa)
    expected = baseline.predict(raw_u, raw_i, clip=False).est + shift
    got = fitted.predict(raw_u, raw_i, clip=False)
    assert got.est == pytest.approx(expected, rel=1e-6)
    assert got.details["actual_k"] == len(best) > 0


def test_the_report_is_the_dpals_release(fitted, data):
    report = fitted.privacy_report()
    (entry,) = report.entries
    assert entry == fitted.factors_.privacy_report().entries[0]
    assert report.total(Unit.USER) == pytest.approx((20.0, 1e-5), rel=1e-6)
    assert [o.name for o in report.outputs][:2] == ["predictions", "details"]
    seeded = DPItemKNN(similarity="factors", random_state=0).fit(data.build_full_trainset())
    assert seeded.privacy_report().seeded and not DPItemKNN(similarity="factors").fit(
        data.build_full_trainset()).privacy_report().seeded


def test_with_little_noise_the_neighbours_beat_the_baseline():
    data = datasets.synthetic(400, 120, 16_000, random_state=1, **STRONG_SIGNAL)
    train, test = train_test_split(data, test_size=0.2, random_state=0)
    knn = DPItemKNN(similarity="factors", epsilon=1e4, baseline_share=0.3,
                    random_state=0).fit(train)
    gain = (accuracy.rmse(knn.baseline_.test(test), verbose=False)
            - accuracy.rmse(knn.test(test), verbose=False))
    assert gain > 0.03


def test_the_factors_release_gets_the_models_delta_share_and_catalogues(data, capsys):
    trainset = data.build_full_trainset()
    users = [trainset.to_raw_uid(u) for u in trainset.all_users()] + ["nobody"]
    items = [trainset.to_raw_iid(i) for i in trainset.all_items()] + ["!new"]
    algo = DPItemKNN(similarity="factors", epsilon=20.0, k=3, delta=1e-7, baseline_share=0.6,
                     users=users, items=items, random_state=0, verbose=True).fit(trainset)
    assert capsys.readouterr().out == "DPItemKNN: the cosine of the DPALS item factors, " \
                                      "ε = 20 per user\n"
    assert algo.privacy_report().model == "DPItemKNN(k=3)"
    counts = [p.details["actual_k"] for p in algo.test(trainset.build_testset()[:300])]
    assert max(counts) == 3                                 # k of the many rated items
    als = algo.factors_
    assert (als.epsilon, als.delta, als.baseline_share) == (20.0, 1e-7, 0.6)
    assert algo.privacy_report().total(Unit.USER) == pytest.approx((20.0, 1e-7), rel=1e-6)
    assert "!new" in algo.sim.index and "!new" in als.item_factors_.index
    assert "nobody" in algo.privacy_report().user_ids


def test_the_factors_similarities_are_read_only_float_tables(data):
    # its own fit, not the module's fixture (mutmut runs a mutant with the tests that
    # first reached it, the fixture's first user only)
    fitted = DPItemKNN(similarity="factors", epsilon=20.0, baseline_share=0.3, k=5,
                       random_state=0).fit(data.build_full_trainset())
    sim = fitted.sim
    assert not sim.to_numpy().flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        sim.iloc[0, 1] = 2.0                              # the release is not rewritten
    # τ_ij = ν_i/|v_i| + ν_j/|v_j|, stored in float32
    factors = fitted.factors_.item_factors_.to_numpy()
    norms = np.linalg.norm(factors, axis=1)
    relative = np.where(norms > 0, fitted.factors_.factor_noise_.to_numpy()
                        / np.where(norms > 0, norms, 1.0), 0.0)
    assert fitted._sim_noise.dtype == np.float32
    np.testing.assert_array_equal(fitted._sim_noise,
                                  (relative[:, None] + relative[None, :]).astype(np.float32))


def test_the_factors_cosines_are_clipped_to_one_in_magnitude(data, monkeypatch):
    # the first item's factor is (√½, √½, 0, …) and the last one's its opposite: the squared
    # norm rounds to 1, yet their cosines are ±(1 + 2^-52) in any summation order (two
    # non-zero terms, with or without fused multiply-adds); they are released as ±1
    from dprec.endtoend import dp_item_knn

    class Opposite(DPALS):
        def fit_part(self, *args, **kwargs):
            super().fit_part(*args, **kwargs)
            factors = self.item_factors_.to_numpy().copy()
            factors[0] = 0.0
            factors[0, :2] = math.sqrt(0.5)
            factors[-1] = -factors[0]
            self.item_factors_ = pd.DataFrame(factors, index=self.item_factors_.index,
                                              columns=self.item_factors_.columns)
            return self

    unit = np.zeros(8)
    unit[:2] = math.sqrt(0.5)
    assert unit @ unit == 1.0 + 2.0**-52 and np.linalg.norm(unit) == 1.0
    monkeypatch.setattr(dp_item_knn, "DPALS", Opposite)
    sim = DPItemKNN(similarity="factors", epsilon=1e4, random_state=0).fit(
        data.build_full_trainset()).sim.to_numpy()
    assert (sim[0, 0], sim[-1, -1], sim[0, -1], sim[-1, 0]) == (1.0, 1.0, -1.0, -1.0)
    assert np.abs(sim).max() == 1.0


@pytest.mark.parametrize("similarity", ["covariance", "factors"])
def test_a_fit_past_the_budget_names_the_unit_it_protects(data, similarity):
    with pytest.raises(ValueError, match=r"^budget .* for one user \(all of their ratings\)"):
        DPItemKNN(similarity=similarity, epsilon=1.0, budget=(0.5, 1e-4)).fit(
            data.build_full_trainset())


def test_a_tiny_epsilon_is_stated_as_given_where_the_accountant_proves_zero(data):
    # ε = 10^-3 at δ = 10^-5: the zCDP conversion gives ε = 0, so the entry (and the budget's
    # check) states the ε asked
    model = DPItemKNN(similarity="factors", epsilon=1e-3, budget=(1.0, 1e-4), random_state=0
                      ).fit(data.build_full_trainset())
    assert [e.epsilon for e in model.privacy_report().entries] == [1e-3]


def test_the_same_seed_gives_the_same_factors_similarities(data):
    trainset = data.build_full_trainset()
    fits = [DPItemKNN(similarity="factors", epsilon=50.0, baseline_share=0.3, random_state=seed
                      ).fit(trainset).sim.to_numpy() for seed in (3, 3, 4)]
    np.testing.assert_array_equal(fits[0], fits[1])
    assert not np.array_equal(fits[0], fits[2])


def test_without_catalogues_the_factors_are_over_the_selected_items_and_nobody_is_outside(data):
    # #51: without items= / users= the DPALS release chooses its items by private partition
    # selection and keeps the user list private: the similarities are over those items
    # (the factors' and the effects' list), every user at the ε asked, the report stating
    # both conditions
    from dprec.endtoend.dp_baseline import SCOPE

    trainset = data.build_full_trainset()
    model = DPItemKNN(similarity="factors", epsilon=20.0, baseline_share=0.3,
                      random_state=None).fit(trainset)
    listed = list(model.sim.index)
    assert 0 < len(listed) < trainset.n_items
    assert listed == list(model.sim.columns) == list(model.factors_.item_factors_.index)
    assert listed == list(model.baseline_.item_effects_.index)
    report = model.privacy_report()
    assert report.conditions[0].startswith(SCOPE["items selected"])
    assert report.conditions[1] == SCOPE["users private"]
    assert report.out_of_scope_users(Unit.USER) == []
    eps = report.per_user(Unit.USER)["epsilon"]
    assert np.isfinite(eps).all() and eps.max() <= 20.0 * (1 + 1e-9)
    epsilon, delta = report.total(Unit.USER)
    assert epsilon == pytest.approx(20.0, rel=1e-6) and 5e-6 < delta <= 1e-5
    unlisted = sorted(algo_items(trainset) - set(listed))[0]
    answer = model.predict(trainset.to_raw_uid(0), unlisted)
    assert answer.details == {"was_impossible": False}             # the baseline's answer
    assert answer.est == model.baseline_.predict(trainset.to_raw_uid(0), unlisted).est
