"""DPItemKNN on the cosine of a DPALS release's item factors (`similarity="factors"`):
the similarities and their noise are post-processing of that release, the rule the same
noise-shrunk KNNBaseline rule, the report DPALS's (tests/test_dp_item_knn.py: the
covariance; tests/test_end_to_end_audits.py: the audits)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from surprise import accuracy
from surprise.model_selection import train_test_split

from dprec import DPALS, DPItemKNN, datasets
from dprec.ledger import Unit


@pytest.fixture(scope="module")
def data():
    return datasets.synthetic(300, 60, 9000, random_state=1)


@pytest.fixture(scope="module")
def fitted(data):
    trainset = data.build_full_trainset()
    catalogues = {"users": [trainset.to_raw_uid(u) for u in trainset.all_users()],
                  "items": [trainset.to_raw_iid(i) for i in trainset.all_items()]}
    return DPItemKNN(similarity="factors", epsilon=20.0, baseline_share=0.3, k=5,
                     random_state=0, **catalogues).fit(trainset)


@pytest.mark.parametrize(("options", "match"), [
    ({"similarity": "pearson"}, "similarity"),
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
    data = datasets.synthetic(400, 120, 16_000, random_state=1)
    train, test = train_test_split(data, test_size=0.2, random_state=0)
    knn = DPItemKNN(similarity="factors", epsilon=1e4, baseline_share=0.3,
                    random_state=0).fit(train)
    gain = (accuracy.rmse(knn.baseline_.test(test), verbose=False)
            - accuracy.rmse(knn.test(test), verbose=False))
    assert gain > 0.03
