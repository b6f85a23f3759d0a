"""The sketch experiments: their pieces, and their quick runs end to end."""

from __future__ import annotations

import importlib

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp


def _load(name: str):
    return importlib.import_module(f"dprec.experiments.{name}")


@pytest.fixture(scope="module")
def jaccard():
    return _load("jaccard_sketches")


@pytest.fixture(scope="module")
def sjlt_variance():
    return _load("sjlt_variance")


def test_mae_table_on_a_tiny_grid(jaccard):
    table = jaccard.mae_table(taus=(20,), jaccards=(0.5,), ks=(8, 32), epsilons=(4.0,),
                              bs=(2,), reps=40, verbose=False)
    assert set(table.mechanism) == {"minhash", "rr_minhash", "noisy_minhash"}
    assert len(table) == 2 * 3 and table.reps.eq(40).all()
    assert table.J_true.eq(13 / 27).all()                      # overlap round(40·0.5/1.5) = 13
    plain = table[table.mechanism == "minhash"].set_index("K").mae
    assert plain[32] < plain[8]
    rr = table[table.mechanism == "rr_minhash"].iloc[0]
    assert rr.epsilon_prime == pytest.approx(4.0 / np.ceil(rr.L))
    assert table.mae.between(0, 1).all()
    again = jaccard.mae_table(taus=(20,), jaccards=(0.5,), ks=(8, 32), epsilons=(4.0,),
                              bs=(2,), reps=40, verbose=False)
    pd.testing.assert_frame_equal(table, again)                 # reproducible


def test_recall_counts_ties_in_the_truth_as_hits(jaccard):
    truth = np.array([[1.0, 0.5, 0.5, 0.2, 0.1],
                      [0.5, 1.0, 0.3, 0.3, 0.0],
                      [0.5, 0.3, 1.0, 0.0, 0.0],
                      [0.2, 0.3, 0.0, 1.0, 0.0],
                      [0.1, 0.0, 0.0, 0.0, 1.0]])
    queries = np.array([0, 1])
    rng = np.random.default_rng(0)
    recall, ratio = jaccard.recall_at_k(truth[queries], truth, queries, 2, rng)
    assert recall == 1.0 and ratio == pytest.approx(1.0)
    # the query itself is never returned, even with the largest estimate
    estimates = np.array([[9.0, 0.0, 0.0, 5.0, 4.0],      # q0 returns 3, 4: no hit
                          [0.0, 9.0, 0.0, 5.0, 4.0]])     # q1 returns 3 (J = 0.3, tied 2nd), 4
    recall, ratio = jaccard.recall_at_k(estimates, truth, queries, 2, rng)
    assert recall == pytest.approx((0.0 + 0.5) / 2)
    assert ratio == pytest.approx(((0.2 + 0.1) / 1.0 + (0.3 + 0.0) / 0.8) / 2)


def test_exact_jaccard_and_query_choice(jaccard):
    sets = sp.csr_matrix(np.array([[1, 1, 0, 0], [1, 1, 1, 0], [0, 0, 1, 1], [0, 0, 0, 0]]))
    J = jaccard.exact_jaccard(sets)
    np.testing.assert_allclose(J[0], [1.0, 2 / 3, 0.0, 0.0])
    np.testing.assert_allclose(J[1, 2], 1 / 4)
    chosen = jaccard.choose_queries(J, 5, 1, 0.5, np.random.default_rng(0))
    assert chosen.tolist() == [0, 1]


def test_lastfm_top_artists(jaccard, tmp_path):
    file = tmp_path / "user_artists.dat"
    rows = [(u, a, w) for u in (1, 2) for a, w in zip(range(10, 15), (5, 50, 7, 9, 1))]
    rows += [(3, 10, 4)]                                      # too few artists: dropped
    pd.DataFrame(rows, columns=["userID", "artistID", "weight"]).to_csv(file, sep="\t",
                                                                        index=False)
    sets = jaccard.lastfm_sets(file, top=3)
    assert sets.shape[0] == 2 and np.diff(sets.indptr).tolist() == [3, 3]


def test_sjlt_variance_rows_match_their_formulas(sjlt_variance):
    x, y = sjlt_variance.pair_vectors(0)
    row = sjlt_variance.sjlt_row(x, y, 32, 4, 2.0, 1500, seed=3)
    assert abs(row["z"]) < 4 and row["truth"] == pytest.approx((x - y) @ (x - y))
    row = sjlt_variance.jl_row(x, y, 32, 2.0, 1e-4, 1500, seed=4)
    assert abs(row["z"]) < 4
    table = sjlt_variance.comparison_table(epsilons=(1.0,), deltas=(1e-9, 1e-2), ks=(64,),
                                           ss=(1, 16), n_features=200)
    wins = table.set_index(["s", "delta"]).sjlt_wins_kenthapadi
    assert wins[(1, 1e-9)] and not wins[(16, 1e-2)]            # the paper's claim, both ways


@pytest.mark.slow
def test_quick_runs_write_their_outputs(jaccard, sjlt_variance, tmp_path):
    assert jaccard.main(["--quick", "--reps", "10", "--out", str(tmp_path / "sk")]) == 0
    mae = pd.read_csv(tmp_path / "sk" / "mae.csv")
    assert len(mae) and mae.mae.notna().all()
    for name in ("mae_rr_minhash.png", "mae_noisy_minhash.png"):
        assert (tmp_path / "sk" / name).stat().st_size > 10_000
    assert sjlt_variance.main(["--quick", "--reps", "200", "--out", str(tmp_path / "sj")]) == 0
    assert len(pd.read_csv(tmp_path / "sj" / "variance.csv")) > 0
    assert (tmp_path / "sj" / "sjlt_variance.png").stat().st_size > 10_000
