"""The experiments run end to end in their quick form and write what they promise."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from dprec.evaluation import grid_table
from dprec.experiments import selectors_cv

#: what a kNN model prints as it fits, when verbose (Surprise's messages, PrivateKNN's too):
#: an experiment builds its models quiet and prints its results and a progress bar only
FITTING_MESSAGES = re.compile(r"Computing the \w+ similarit|Done computing|Estimating biases")


@pytest.mark.slow
def test_selectors_cv_quick_writes_csv_and_plot(tmp_path):
    table = selectors_cv.main(["--quick", "--out", str(tmp_path), "--rules", "basic",
                               "baseline"])
    written = pd.read_csv(tmp_path / "selectors_cv.csv")
    assert len(written) == len(table) > 0
    assert {"selector", "epsilon", "k", "neighbourhood", "prediction", "fold", "rmse", "mae",
            "precision@10", "ndcg@10", "alpha", "beta", "fit_time",
            "test_time"} <= set(written.columns)
    assert set(written.prediction) == {"basic", "baseline"}
    assert written[["precision@10", "ndcg@10"]].apply(lambda c: c.between(0, 1)).all().all()
    assert set(written.selector) == {"topk", "probabilistic", "pncf", "ppns"}
    assert written[["rmse", "mae", "alpha", "beta"]].notna().all().all()
    assert (tmp_path / "selectors_mae.png").stat().st_size > 10_000
    topk = written[written.selector == "topk"]
    assert (topk.alpha == 1).all() and (topk.beta == 1).all()


def test_grid_table_runs_every_configuration_on_the_same_folds(small_data):
    configs = [{"selector": "topk", "epsilon": None, "k": 5, "neighbourhood": "item"},
               {"selector": "ppns", "epsilon": 1.0, "k": 5, "neighbourhood": "item"}]
    one = grid_table(configs, selectors_cv.make_algo, small_data, n_folds=2, n_jobs=1)
    two = grid_table(configs, selectors_cv.make_algo, small_data, n_folds=2, n_jobs=2)
    assert len(one) == 4
    pd.testing.assert_frame_equal(one.drop(columns=["fit_time", "test_time"]),
                                  two.drop(columns=["fit_time", "test_time"]))


@pytest.mark.slow
def test_ranking_dp_quick_writes_tables_and_figure(tmp_path):
    from dprec.experiments import ranking_dp

    assert ranking_dp.main(["--quick", "--dataset", "synthetic", "--out", str(tmp_path)]) == 0
    for name in ["concordance.csv", "accuracy.csv", "accuracy_summary.csv", "ranking_dp.png"]:
        assert (tmp_path / name).stat().st_size > 0
    concordance = pd.read_csv(tmp_path / "concordance.csv")
    assert len(concordance) > 0 and concordance.notna().all().all()


@pytest.mark.slow
def test_backends_cv_quick(tmp_path, capsys):
    from dprec.experiments import backends_cv

    table = backends_cv.main(["--quick", "--out", str(tmp_path)])
    assert not FITTING_MESSAGES.findall(capsys.readouterr().out)    # 112 lines of 142
    assert set(table.backend) == set(backends_cv.BACKENDS)
    assert table[["rmse", "mae"]].notna().all().all()
    assert (tmp_path / "backends_cv.csv").is_file()


@pytest.mark.slow
def test_end_to_end_quick_compares_every_model(tmp_path):
    from dprec.experiments import end_to_end

    table = end_to_end.main(["--quick", "--scaling", "--attack", "--out", str(tmp_path)])
    written = pd.read_csv(tmp_path / "end_to_end.csv")
    assert len(written) == len(table)
    means = end_to_end.summary(written)
    assert set(means["model"]) == set(end_to_end.ALL)
    assert means["rmse"].notna().all() and (means["rmse"] > 0).all()
    private = means[means["model"] == "DPBaseline (rating)"].set_index("epsilon")["rmse"]
    assert private[10.0] <= private[1.0] + 0.02         # more budget, no worse (2 folds)
    scaling = pd.read_csv(tmp_path / "end_to_end_scaling.csv")
    assert sorted(scaling["users"].unique()) == [300, 600]
    assert (tmp_path / "end_to_end_rmse.png").stat().st_size > 0
    attacked = end_to_end.attack_summary(pd.read_csv(tmp_path / "end_to_end_attack.csv"))
    assert set(attacked["algo"]) == {end_to_end.ATTACK_REFERENCE} | {
        f"{m} ε=1" for m in end_to_end.ATTACKED}
    assert sorted(attacked["beta"].unique()) == [1, 4]
    assert attacked[["recovery_pooled", "baseline_item_mean"]].notna().all().all()


def test_end_to_end_rows_take_public_hyperparameters(small_data):
    """Issue #33: no end-to-end row's hyper-parameters are read from the data; the table
    says so (``hyperparameters``), and every kNN model has the public rule's k = 40."""
    from dprec.experiments import end_to_end

    models = ("DPBaseline (user)", "DPItemKNN (user)", "LocalKNN (krr, rating)")
    table = end_to_end.run(small_data, epsilons=(1.0,), n_folds=2, progress=False,
                           models=models)
    assert len(table) == 2 * len(models)
    assert (table["hyperparameters"] == "public rule").all()
    assert table["rmse"].notna().all()
    # #51: the label is what the fresh-noise report says, one per configuration
    labels = table.groupby("model").privacy.unique()
    assert all(len(label) == 1 for label in labels)
    assert labels["DPBaseline (user)"][0] == "ε = 1, δ = 1e-05 per user, holds"
    # every user inside: the item list's δ is the only δ (#51)
    assert labels["LocalKNN (krr, rating)"][0] == "ε = 1, δ = 1e-05 per rating, holds"
    assert end_to_end.summary(table).columns.tolist()[:3] == ["model", "epsilon", "privacy"]
    for model in models[1:] + ("KNNBasic", "PNCF (as published)"):
        assert end_to_end.make_algo(model, 1.0).k == 40


def test_end_to_end_has_the_centred_cosine_reference(small_data):
    """#38: the most accurate non-private kNN, KNNWithMeans item-based on the centred
    cosine (k = 40), is a reference row of the end-to-end comparison."""
    from dprec import PrivateKNNWithMeans
    from dprec.experiments import end_to_end

    model = "KNNWithMeans (centred cosine, item)"
    assert model in end_to_end.REFERENCES
    algo = end_to_end.make_algo(model)
    assert isinstance(algo, PrivateKNNWithMeans) and algo.k == 40
    assert algo.sim_options == {"name": "centered_cosine", "user_based": False}
    table = end_to_end.run(small_data, n_folds=2, progress=False, models=(model,))
    assert len(table) == 2 and table.epsilon.isna().all() and table.rmse.between(0.5, 2).all()


def test_users_scaling_quick_measures_every_model_at_every_size(tmp_path):
    from dprec.experiments import users_scaling

    results = users_scaling.main(["--quick", "--out", str(tmp_path)])
    written = pd.read_csv(tmp_path / "users_scaling.csv")
    assert len(written) == len(results) and (tmp_path / "users_scaling.png").stat().st_size > 0
    assert sorted(written["users"].unique()) == [200, 400, 1200]
    expected = set(users_scaling.REFERENCES) | set(users_scaling.PRIVATE)
    assert all(set(g["model"]) == expected for _, g in written.groupby("users"))
    assert written["rmse"].between(0.5, 2.0).all()
    pays = users_scaling.knn_pays(results)
    assert list(pays["epsilon"]) == [1.0]


def test_knn_pays_reads_the_first_size_where_the_knn_is_below_the_baseline():
    from dprec.experiments.users_scaling import knn_pays

    rows = [(10, "DPBaseline", 1.0), (10, "DPItemKNN", 0.99),     # a gain, then none: noise
            (50, "DPBaseline", 1.0), (50, "DPItemKNN", 0.9995),             # a tie: no gain
            (100, "DPBaseline", 1.0), (100, "DPItemKNN", 1.1), (1000, "DPBaseline", 1.0),
            (1000, "DPItemKNN", 0.98), (9000, "DPBaseline", 0.9), (9000, "DPItemKNN", 0.85)]
    results = pd.DataFrame([{"users": u, "model": m, "rmse": r, "epsilon": 1.0}
                            for u, m, r in rows])
    pays = knn_pays(results).iloc[0]
    assert pays["first users"] == 1000
    assert pays["gain there"] == pytest.approx(0.02) and pays["gain at the largest"] == \
        pytest.approx(0.05)
    assert knn_pays(results[results["model"] == "DPItemKNN"]).empty     # one model: no row
    renamed = results.replace({"model": {"DPItemKNN": "DPALS"}})
    assert knn_pays(renamed, model="DPALS").iloc[0]["first users"] == 1000
    assert knn_pays(renamed).empty


def test_the_user_mean_is_each_users_own_mean():
    import numpy as np

    from dprec.datasets import synthetic
    from dprec.evaluation.baselines import MeanRating
    from dprec.experiments.users_scaling import subsample_users

    data = synthetic(50, 30, 600, random_state=0)
    trainset = data.build_full_trainset()
    algo = MeanRating().fit(trainset)
    for u in (0, 7):
        ratings = [r for _, r in trainset.ur[u]]
        uid = trainset.to_raw_uid(u)
        assert algo.predict(uid, "anything").est == pytest.approx(np.mean(ratings))
    assert algo.predict("nobody", "x").est == pytest.approx(trainset.global_mean)
    items = MeanRating("item").fit(trainset)
    for i in (0, 5):
        ratings = [r for _, r in trainset.ir[i]]
        assert items.predict("nobody", trainset.to_raw_iid(i)).est == pytest.approx(
            np.mean(ratings))
    assert items.predict("1", "nothing").est == pytest.approx(trainset.global_mean)
    with pytest.raises(ValueError, match="of"):
        MeanRating("both").fit(trainset)
    half = subsample_users(data, 0.5, seed=1)
    assert len({r[0] for r in half.raw_ratings}) == 25
    assert set(half.raw_ratings) <= set(data.raw_ratings)


# ------------------------------ issue #51, point 4: every label comes from the report
def _sole_holder():
    """12 users' sets; `u4` alone holds the last item: outside the guarantee of a
    `PrivatePopularity` whose item list is read from the data."""
    import numpy as np
    from strategies import trainset_of

    X = (np.random.default_rng(3).random((12, 8)) < 0.5).astype(float)
    X[:2] = 1.0
    return trainset_of(np.column_stack([X, np.eye(12)[:, 4]]), scale=(1, 5))


def test_a_model_whose_report_says_infinity_is_not_labelled_holds():
    """The labels read `report.guarantee`, the users in scope only: a model that left a
    user at ε = ∞ was labelled "holds" (`dprec demo`: "ε=1 per user, holds")."""
    from dprec import PrivatePopularity
    from dprec.accountant.ledger import Unit
    from dprec.experiments import hyperparameters
    from dprec.experiments.privacy_labels import fresh_labels, privacy_label

    trainset = _sole_holder()
    model = PrivatePopularity(1.0, cap=3).fit(trainset)
    outside = model.privacy_report().out_of_scope_users(Unit.USER)
    if not outside:
        pytest.skip("no user outside the guarantee: nothing to mislabel")
    assert hyperparameters.guarantee_label(model) == "in part"
    assert privacy_label(model).startswith(
        f"ε = ∞ per user: no guarantee for {len(outside)} user")
    unfitted = PrivatePopularity(1.0, cap=3, random_state=0)
    assert fresh_labels(unfitted, trainset) == (privacy_label(model), "in part")
    assert not hasattr(unfitted, "trainset")                # a copy was fitted, not it


def test_labels_are_the_reports_never_the_constructors(small_data):
    """A seeded fit is void whatever its epsilon; a published selector's ε after a test
    fold is the composed one its report computes, not the epsilon=1 given; a caller's
    generator is conditional; a model without a mechanism is not private."""
    import numpy as np

    from dprec import DPBaseline, PrivateKNN
    from dprec.experiments.privacy_labels import (
        first_fold,
        fresh_labels,
        guarantee_label,
        privacy_label,
    )

    trainset, testset = first_fold(small_data, 2, 0)
    seeded = DPBaseline(epsilon=1.0, random_state=0).fit(trainset)
    assert (privacy_label(seeded), guarantee_label(seeded)) == (
        "ε = 1, δ = 1e-05 per user, void", "none")
    assert fresh_labels(DPBaseline(epsilon=1.0, random_state=0), trainset) == (
        "ε = 1, δ = 1e-05 per user, holds", "holds")
    caller = DPBaseline(epsilon=1.0, random_state=np.random.default_rng(0)).fit(trainset)
    assert (privacy_label(caller), guarantee_label(caller)) == (
        "ε = 1, δ = 1e-05 per user, holds only if the generator's state is secret",
        "conditional")
    text, label = fresh_labels(PrivateKNN(k=5, selector="pncf", epsilon=1.0, verbose=False),
                               trainset, testset)
    assert label == "as published" and text.endswith("per rating, as published")
    assert float(re.match(r"ε = ([\d.]+)", text).group(1)) > 1.0     # composed, not 1
    assert fresh_labels(PrivateKNN(k=5, verbose=False), trainset, testset) == (
        "not private", "none")


def test_membership_quick_measures_every_view_and_refutes_no_covered_claim(tmp_path):
    from dprec.experiments import membership_inference

    table = membership_inference.main(["--quick", "--out", str(tmp_path)])
    assert (tmp_path / "membership.csv").is_file()
    assert list(table.columns[:-1]) == list(membership_inference.COLUMNS)
    # KNNBasic, SVD; DPBaseline and LocalKNN at ε = 1 with selected or public items;
    # each: 2 units x 2 views of the threshold attacks, and the shadow model's user-level
    assert len(table) == (2 + 2 * 2) * 5
    shadow = table[table["attack"] == "shadow"]
    assert len(shadow) == 6 and (shadow["unit"] == "user").all() and (
        shadow["view"] == "own").all() and not shadow["covered"].any()
    private = table[table["model"].isin(["DPBaseline", "LocalKNN"])]
    covered = private[private["covered"]]
    assert (covered["view"] == "others").all() and not covered["refuted"].any()
    assert np.allclose(covered["claimed_epsilon"], 1.0)      # the report's, composed
    # Surprise's KNNBasic says which users it does not know: found by the own view
    knn = table[(table["model"] == "KNNBasic") & (table["unit"] == "user")
                & (table["view"] == "own")]
    assert knn["mia_auc"].iloc[0] == 1.0 and not table[table["model"] == "KNNBasic"][
        "covered"].any()
