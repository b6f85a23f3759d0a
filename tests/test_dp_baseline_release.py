"""DPBaseline: what the fit reads from its release (μ, the item effects, the noise scales
and the user shrinkage are post-processing of the released vector and its public sds)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dprec import DPBaseline, datasets
from dprec.endtoend import dp_baseline
from dprec.endtoend.dp_baseline import shrunk_effects


@pytest.fixture(scope="module")
def trainset():
    return datasets.synthetic(120, 60, 2500, random_state=1).build_full_trainset()


@pytest.mark.parametrize(("released_sum", "released_count"), [(0.9, 1.5), (-0.4, 0.5)])
def test_the_fit_reads_each_released_value_and_sd_where_it_belongs(trainset, monkeypatch,
                                                                    released_sum,
                                                                    released_count):
    # both releases give the item sums and weights one sd, and the global pair a count of
    # many units; a release with three distinct sds and a global count below 2 shows
    # which value each output reads: σ_S = C sd[0] (the sums in rating units), σ_N = sd[1],
    # μ = c + B G / max(N, 1), and μ's sd to first order in the noise of both G and N
    # (sd[2] each): B sd[2] √(1 + (G / max(N, 1))²) / max(N, 1), which discounts λ
    sd = (2.0, 0.1, 0.4)
    seen = {}
    release = dp_baseline.gaussian_release

    def chosen(parts, rng, noise):
        noisy, _ = release(parts, rng, noise)
        noisy[-2:] = released_sum, released_count
        seen["noisy"] = noisy.copy()
        return noisy, sd

    monkeypatch.setattr(dp_baseline, "gaussian_release", chosen)
    items = [trainset.to_raw_iid(i) for i in trainset.all_items()]     # a public catalogue
    algo = DPBaseline(epsilon=1.0, clip=0.5, item_shrinkage=1.0, prior_variance=0.4,
                      user_shrinkage=3.0, random_state=0, items=items).fit(trainset)
    noisy, n = seen["noisy"], trainset.n_items
    assert algo.noise_sd_ == (0.5 * 2.0, 0.1)
    expected = shrunk_effects(0.5 * noisy[:n], noisy[n:2 * n], (1.0, 0.1), 1.0, 0.4, 4.0)
    assert (noisy[n:2 * n] > 0.2).mean() > 0.5             # most items read their σ_S
    np.testing.assert_array_equal(algo.item_effects_.to_numpy(), expected)
    ratio = released_sum / max(released_count, 1.0)
    assert algo.mu_ == pytest.approx(3.0 + 2.0 * ratio, rel=1e-15)
    mu_sd = 2.0 * 0.4 * math.sqrt(1.0 + ratio**2) / max(released_count, 1.0)
    # λ' = λ / (1 + λ σ_μ² / (B/2)²), B/2 = 1
    assert algo.user_shrinkage_ == pytest.approx(3.0 / (1.0 + 3.0 * mu_sd**2), rel=1e-13)
    assert 0.5 < algo.user_shrinkage_ < 2.5                 # a discount, not the extremes
