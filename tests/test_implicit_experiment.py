"""`dprec implicit`: the hold-out split, the baselines, the sketches' width, and the quick run."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dprec import cli, datasets
from dprec.experiments import implicit_feedback as experiment


def test_the_hold_out_is_a_seeded_fifth_of_each_users_items():
    frame = pd.DataFrame({"user": np.repeat(["a", "b", "c", "d"], [10, 3, 2, 1]),
                          "item": [f"i{n}" for n in range(16)]})
    train, test = experiment.holdout_split(frame, seed=4)
    assert test.groupby("user").size().to_dict() == {"a": 2, "b": 1}    # round(0.2 n)
    assert len(train) + len(test) == len(frame)
    assert not set(zip(train.user, train.item)) & set(zip(test.user, test.item))
    again, _ = experiment.holdout_split(frame, seed=4)
    pd.testing.assert_frame_equal(train, again)
    other, _ = experiment.holdout_split(frame, seed=5)
    assert not other.equals(train)


def test_popularity_ranks_by_listeners_without_the_users_items():
    frame = pd.DataFrame({"user": ["a", "a", "b", "b", "c", "c", "c"],
                          "item": ["x", "y", "x", "z", "x", "y", "w"]})
    trainset = experiment.trainset_of(frame)
    top = experiment.popularity_lists(trainset, ["a", "b"], n=2)
    assert top[top.uid == "a"].iid.tolist() == ["z", "w"]          # x, y are a's own
    assert top[top.uid == "b"].iid.tolist() == ["y", "w"]
    assert top[top.uid == "b"].est.tolist() == [2.0, 1.0]


def test_the_sketch_width_is_the_one_of_smallest_estimate_sd():
    """The experiment's width is chosen by a public computation, not on the data."""
    widths = (8, 16, 32, 64, 128)
    sds = [experiment.estimate_sd(width) for width in widths]
    assert widths[int(np.argmin(sds))] == experiment.SKETCH["width"] == 16
    assert sds[1] == pytest.approx(0.43, abs=0.005)


def test_the_private_k_is_a_public_function_of_epsilon():
    """Enough neighbours to average the reports' noise down to TOLERANCE; every user for
    the sketches, whose estimates are noise at ε ≤ 8; never below k."""
    rule = experiment.private_k
    assert experiment.TOLERANCE == 0.05
    assert [rule(experiment.RELEASED, e, 20, 1892) for e in (0.5, 1.0, 2.0, 4.0, 8.0)] == \
        [1568, 369, 73, 20, 20]
    assert rule("user-kNN rr_minhash", 8.0, 20, 1892) == 1892
    assert rule(experiment.RELEASED_SKETCHES, 8.0, 20, 1892) == 1892
    assert rule(experiment.RELEASED, 8.0, 50, 1892) == 50
    assert rule(experiment.RELEASED, 1.0, 20, 1892, "k") == 20
    assert rule(experiment.RELEASED, 8.0, 20, 1892, "all") == 1892


def test_the_tuning_grid_runs_on_the_synthetic_sets_only():
    grid = experiment.tuning(tolerances=(0.05,), prior_sds=(0.05, None), epsilons=(8.0,),
                             reps=1, verbose=False)
    assert grid.shape == (3, 4)                    # the popularity row and two prior_sds
    assert set(grid.prior_sd.dropna()) == {0.05, np.inf}
    assert grid[8.0].between(0, 1).all() and (grid["mean"] == grid[8.0]).all()


@pytest.mark.slow
def test_the_quick_run_writes_the_table_the_summary_and_the_figure(tmp_path, capsys):
    assert cli.main(["implicit", "--quick", "--out", str(tmp_path)]) == 0
    table = pd.read_csv(tmp_path / "implicit.csv")
    summary = pd.read_csv(tmp_path / "summary.csv")
    assert (tmp_path / "implicit.png").stat().st_size > 10_000
    assert set(table.model) == {"popularity", *experiment.EXACT, "user-kNN minhash",
                                "user-kNN rr_minhash", "user-kNN noisy_minhash",
                                *experiment.HOLDS}
    assert set(table.epsilon.dropna()) == {1.0, 8.0}
    assert table[["precision", "recall", "ndcg"]].apply(lambda c: c.between(0, 1)).all().all()
    labels = dict(zip(summary.model, summary.guarantee))
    assert labels["popularity"] == labels["user-kNN cosine"] == "none"
    assert labels["user-kNN rr_minhash"] == "in part"
    assert {labels[label] for label in experiment.HOLDS} == {"holds"}
    holds = summary[summary.model.isin(experiment.HOLDS)]
    assert (holds.outside == 0).all()                           # the public catalogues
    assert set(holds.unit) == {"user", "item of a set"}
    at_8 = summary[summary.epsilon == 8.0].set_index("model").recall
    assert at_8[experiment.RELEASED] > at_8[experiment.POPULARITY_REPORTS]
    recall = summary.set_index("model").recall
    assert recall["item-kNN cosine"] > recall["popularity"]     # the synthetic sets' signal
    assert "user-kNN cosine" in capsys.readouterr().out


@pytest.mark.data
def test_lastfm_interactions_and_their_split():
    try:
        frame = experiment.lastfm_interactions()
    except datasets.DatasetUnavailable:
        pytest.skip("HetRec Last.fm is not available offline")
    assert frame.shape == (92834, 2) and frame.user.nunique() == 1892
    train, test = experiment.holdout_split(frame, seed=0)
    assert (len(train), len(test)) == (74266, 18568)
    assert train.groupby("user").size().max() == experiment.LASTFM_CAP   # the public cap


@pytest.mark.data
def test_the_central_popularity_lists_what_its_docstring_says_on_lastfm():
    """`PrivatePopularity` without a catalogue on all of HetRec Last.fm at ε = 1: the
    Laplace threshold at cap 40 (582) passes the most listened artist (611 listeners)
    by no more than noise; the Gaussian's at cap 50 (157) lists 62–69 artists."""
    from dprec import PrivatePopularity

    try:
        trainset = experiment.trainset_of(experiment.lastfm_interactions())
    except datasets.DatasetUnavailable:
        pytest.skip("HetRec Last.fm is not available offline")
    assert max(len(raters) for raters in trainset.ir.values()) == 611
    laplace = PrivatePopularity(1.0, cap=40, random_state=0).fit(trainset)
    assert "at least 582 (" in laplace.privacy_report().entries[0].note
    listed = [len(PrivatePopularity(1.0, cap=50, mechanism="gaussian", random_state=seed)
                  .fit(trainset).item_list_) for seed in range(5)]
    assert (min(listed), max(listed)) == (62, 69)
    gaussian = PrivatePopularity(1.0, cap=50, mechanism="gaussian").fit(trainset)
    assert "at least 157 (" in gaussian.privacy_report().entries[0].note
