"""The centred cosine updated row by row (dprec.similarity.incremental), and the β-kNN
attack on it without refits: the numbers of a full computation and of the refit path."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from dprec import PrivateKNN
from dprec.attacks import BetaKNNAttack, runners
from dprec.attacks.poisoning import BaseData
from dprec.attacks.runners import make_runners
from dprec.attacks.shared_similarities import similarity_states
from dprec.datasets import synthetic
from dprec.similarity.centered import centered_cosine_sensitivity, centered_pair_sensitivity
from dprec.similarity.exact import (
    SUM_SIMILARITIES,
    exact_similarity,
    exact_similarity_and_sums,
    recommendation_aware_sensitivity,
)
from dprec.similarity.incremental import IncrementalCenteredSimilarity, incremental_similarity
from dprec.utils._ratings import RatingArrays

NAME = "centered_cosine"


def matrix(n_users=80, n_items=120, n_ratings=2000, seed=2) -> sp.csr_matrix:
    return sp.csr_matrix(RatingArrays.from_trainset(
        synthetic(n_users, n_items, n_ratings, random_state=seed).build_full_trainset()).matrix)


def check_equal(kernel_path: str, actual: np.ndarray, expected: np.ndarray) -> None:
    """Bit-identical on the compiled path (the same sums in the same order); to rounding
    on the numpy path (sparse products against BLAS)."""
    if kernel_path == "compiled":
        np.testing.assert_array_equal(actual, expected)
    else:
        np.testing.assert_allclose(actual, expected, rtol=0, atol=1e-12)


def updates(R: sp.csr_matrix) -> list[tuple[np.ndarray, sp.csr_matrix]]:
    """The attack's changes (fakes appended; a user cut down) and mixed ones: a replaced
    row with fakes, a user left with one rating (norm 0), a fake with equal ratings."""
    n = R.shape[0]
    known = R[4].toarray() * (R[4].toarray() < 3)
    fakes = sp.csr_matrix(np.tile(known, (6, 1)))
    cut = R[7].toarray()
    cut[0, cut[0] > 3] = 0
    single = np.zeros((1, R.shape[1]))
    single[0, R[11].indices[0]] = 4.0
    flat = sp.csr_matrix((R[9].toarray() > 0) * 3.0)
    return [(np.arange(n, n + 6), fakes), (np.array([7]), sp.csr_matrix(cut)),
            (np.array([n + 1, 2, n]), sp.vstack([fakes[:2], R[9]])),
            (np.array([11, n]), sp.vstack([sp.csr_matrix(single), flat]))]


@pytest.mark.parametrize("min_support", [1, 3])
def test_incremental_centred_cosine_equals_full_computation(kernel_path, min_support):
    R = matrix()
    base = incremental_similarity(NAME, R, min_support, with_sensitivity=True)
    assert isinstance(base, IncrementalCenteredSimilarity)
    plain = incremental_similarity(NAME, R, min_support)
    for ids, rows in updates(R):
        state = base.update(ids, rows)
        sim, sums = exact_similarity_and_sums(NAME, state.ratings, min_support)
        check_equal(kernel_path, state.sim, sim)
        check_equal(kernel_path, plain.update(ids, rows).sim,
                    exact_similarity(NAME, state.ratings, min_support))
        check_equal(kernel_path, state.sensitivity(),
                    recommendation_aware_sensitivity(NAME, state.ratings, sim, sums,
                                                     min_support))
        np.testing.assert_array_equal(state.pair_sensitivity, state.pair_sensitivity.T)
    np.testing.assert_array_equal(base.ratings.toarray(), R.toarray())  # not modified


def test_pair_sensitivity_maxima_are_rs(kernel_path):
    """``max_v RS(u, v)`` is the centred cosine's ``RS(u)`` of either path, and a block of
    rows gives the rows of the whole matrix."""
    R = matrix(60, 90, 1500, seed=5)
    sim, (freq, s_i, sq_i, prods) = exact_similarity_and_sums(NAME, R, 2)
    rows = np.arange(R.shape[0])
    pairs = centered_pair_sensitivity(R, rows, sim, s_i, s_i.T, freq, 2)
    rs = centered_cosine_sensitivity(R, rows, sim, (freq, s_i, sq_i, prods), (s_i.T, sq_i.T), 2)
    np.testing.assert_array_equal(np.maximum(pairs.max(axis=1), 1e-6), rs)
    some = np.array([3, 17, 40])
    np.testing.assert_array_equal(
        centered_pair_sensitivity(R, some, sim[some], s_i[some], s_i.T[some], freq[some], 2),
        pairs[some])
    assert (np.diag(pairs) == 0).all() and (pairs >= 0).all()


def test_incremental_centred_cosine_rejects_other_names_and_bad_updates():
    with pytest.raises(ValueError, match="centered_cosine"):
        IncrementalCenteredSimilarity.fit("cosine", sp.csr_matrix(np.eye(3) + 1))
    base = incremental_similarity(NAME, sp.csr_matrix(np.eye(3) + 1))
    with pytest.raises(ValueError, match="numbered 3"):
        base.update(np.array([4]), sp.csr_matrix(np.ones((1, 3))))
    with pytest.raises(ValueError, match="with_sensitivity"):
        base.sensitivity()


def centred_algos() -> dict[str, PrivateKNN]:
    """User-based centred cosine under the selectors (RS read by PNCF and PPNS), both
    neighbourhoods and two rules, as the frontier configures it."""
    algos = {}
    for selector in ("topk", "ppns", "pncf"):
        for neighbourhood in ("user", "item"):
            for rule in ("basic", "means"):
                algos[f"{selector}/{neighbourhood}/{rule}"] = PrivateKNN(
                    k=10, sim_options={"name": NAME}, selector=selector,
                    epsilon=None if selector == "topk" else 1.0,
                    p=0.5 if selector == "ppns" else None, neighbourhood=neighbourhood,
                    prediction=rule, random_state=0, verbose=False)
    return algos


def test_attack_on_the_centred_cosine_updates_and_equals_the_refits(monkeypatch):
    """The centred cosine's scenarios use one shared incremental state (no refit), and
    the attack's table is that of refitting every scenario."""
    data = synthetic(200, 150, 4000, random_state=0)
    algos = centred_algos()
    options = {"n_known": 8, "betas": (1, 2, 4), "n_targets": 4, "min_target_ratings": 20,
               "inference": False, "n_asked": 10, "random_state": 0}
    fast_runners = make_runners(algos)
    assert all(r.sim_key == ("exact", NAME, 1) for r in fast_runners)
    base = BaseData.from_trainset(data.build_full_trainset())
    states = similarity_states(fast_runners, base, 0)
    assert isinstance(states[("exact", NAME, 1)], IncrementalCenteredSimilarity)
    fast = BetaKNNAttack(algos, data, **options).run()
    monkeypatch.setattr(runners, "INCREMENTAL_SIMILARITIES", SUM_SIMILARITIES)
    assert all(r.sim_key is None for r in make_runners(algos))   # every scenario refitted
    refit = BetaKNNAttack(algos, data, **options).run()
    assert len(fast) == len(algos) * 4 * 3
    columns = [c for c in fast.columns if c != "seconds"]
    numeric = [c for c in columns if pd.api.types.is_float_dtype(fast[c])]
    pd.testing.assert_frame_equal(fast[columns].drop(columns=numeric),
                                  refit[columns].drop(columns=numeric))
    np.testing.assert_allclose(fast[numeric].to_numpy(), refit[numeric].to_numpy(), rtol=0,
                               atol=1e-12)
