"""The accuracy-against-security frontier (dprec.experiments.frontier)."""

import json
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from surprise import AlgoBase, PredictionImpossible
from surprise.model_selection import KFold

from dprec import PrivateKNN
from dprec.accountant.entries import Unit
from dprec.datasets import synthetic
from dprec.experiments import frontier
from dprec.selectors import CorrectedPNCF
from dprec.similarity import sketch_backend, with_public_bounds


def test_the_grid_covers_every_combination():
    configs = frontier.configurations()
    knn = [c for c in configs if c["family"] == "knn"]
    # each exact similarity (co-rated and centred cosine): 2 non-private selectors + 3
    # private × 4 ε; each private sketch: 5 × 4 ε
    assert len(knn) == 2 * (2 + 3 * 4) * 3 * 2 + 4 * 5 * 4 * 3 * 2
    assert len(configs) == len(knn) + 5 * 4 + 3      # 5 end-to-end models × 4 ε, 3 references
    assert len({c["config"] for c in configs}) == len(configs)
    seen = {(c["similarity"], c["selector"], c["rule"], c["neighbourhood"]) for c in knn}
    assert len(seen) == 6 * 5 * 3 * 2
    assert {c["epsilon"] for c in knn if c["similarity"] not in frontier.EXACT} == \
        set(frontier.EPSILONS)
    assert {c["epsilon"] for c in knn if c["similarity"] in frontier.EXACT
            and c["selector"] in ("topk", "probabilistic")} == {None}


def test_make_algo_follows_the_configuration():
    configs = {c["config"]: c for c in frontier.configurations()}
    user = frontier.make_algo(configs["cosine/topk/basic/user"], 10).check_params()
    assert user.fallback_ == "user_mean" and user.neighbourhood_ == "user" and user.k == 10
    item = frontier.make_algo(configs["cosine/topk/basic/item"], 20).check_params()
    assert item.fallback_ == "global_mean" and item.epsilon is None
    means = frontier.make_algo(configs["cosine/ppns/means/user/eps=2"], 20).check_params()
    assert means.fallback_ == "global_mean" and means.prediction_ == "means"
    assert means.selector_.epsilon == 2.0
    sketch = frontier.make_algo(configs["sjlt/pncf_corrected/baseline/item/eps=0.5"], 40)
    assert isinstance(sketch.selector, CorrectedPNCF) and sketch.selector.epsilon == 0.5
    width = sketch_backend(with_public_bounds(sketch.sim_options, (1.0, 5.0))).score_range
    assert sketch.selector.score_range == width and sketch.sim_options["epsilon"] == 0.5


def test_the_centred_cosine_runs_in_quick_mode(tmp_path):
    """#38: the centred cosine is an exact similarity of the grid: its own sim_options,
    the width of its range [−1, 1] for the corrected PNCF, and a quick run gives its rows
    (scored, attacked, labelled as co-rated cosine's)."""
    configs = {c["config"]: c for c in frontier.configurations(
        (1.0,), ("centered_cosine",), ("topk", "pncf_corrected"), ("means",), ("user",))}
    topk = frontier.make_algo(configs["centered_cosine/topk/means/user"], 10)
    assert topk.sim_options == {"name": "centered_cosine"} and topk.epsilon is None
    corrected = frontier.make_algo(configs["centered_cosine/pncf_corrected/means/user/eps=1"], 10)
    assert isinstance(corrected.selector, CorrectedPNCF) and corrected.selector.score_range == 2
    table = frontier.main(["--quick", "--similarities", "centered_cosine", "--targets", "3",
                           "--out", str(tmp_path)]).set_index("config")
    rows = table[table.similarity == "centered_cosine"]
    assert set(rows.index) == {f"centered_cosine/{selector}/{rule}/{nbhd}" + suffix
                               for selector, suffix in (("topk", ""), ("ppns", "/eps=1"))
                               for rule in ("basic", "means") for nbhd in ("item", "user")}
    assert rows.rmse.between(0.5, 2).all() and rows["precision@10"].between(0, 1).all()
    assert rows.max_gain.between(-1, 1).all() and (rows.targets == 3).all()
    assert rows.guarantee["centered_cosine/topk/basic/item"] == "none"
    assert rows.guarantee["centered_cosine/ppns/means/user/eps=1"] == "as published"


def test_pareto_front():
    cost = np.array([1.0, 2.0, 3.0, 2.0, 1.0, np.nan, 0.5])
    loss = np.array([3.0, 2.0, 1.0, 2.5, 3.0, 0.0, np.nan])
    # 0 and 4 tie (neither dominates the other); 3 is dominated by 1; NaN never optimal
    np.testing.assert_array_equal(frontier.pareto(cost, loss),
                                  [True, True, True, False, True, False, False])


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    out = tmp_path_factory.mktemp("frontier")
    table = frontier.main(["--quick", "--out", str(out)])
    return out, table


def test_quick_run_writes_the_frontier(quick):
    out, table = quick
    for name in ("accuracy.csv", "attack.csv", "frontier.csv", "by_accuracy.csv",
                 "frontier.png", "headline.json"):
        assert (out / name).is_file(), name
    pd.testing.assert_frame_equal(pd.read_csv(out / "frontier.csv"), table,
                                  check_dtype=False)
    headline = json.loads((out / "headline.json").read_text())   # the README's figures
    assert headline["configurations"] == len(table) and headline["folds"] == 2
    assert headline["attacked"] == table.max_gain.notna().sum()
    assert set(table.guarantee) <= set(frontier.LABELS)
    label = table.set_index("config").guarantee
    assert table.set_index("config").privacy["DPItemKNN/eps=1"].endswith("per user, holds")
    assert label["DPItemKNN/eps=1"] == "holds"
    assert label["cosine/topk/basic/item"] == "none"
    assert label["cosine/ppns/means/user/eps=1"] == "as published"
    assert label["rr_minhash/topk/basic/user/eps=1"] == "in part"
    chosen = table.set_index("config").hyperparameters
    assert chosen["DPItemKNN/eps=1"] == "public rule"
    assert chosen[["global mean", "BaselineOnly"]].eq("public rule").all()
    assert chosen[table.set_index("config").k.isin([5, 10])].eq(
        "cross-validated (not private)").all()
    # a row holds only when its hyper-parameters are by the public rule
    assert (table.hyperparameters[table.guarantee == "holds"] == "public rule").all()
    assert table.set_index("config").k["DPItemKNN/eps=1"] == 40
    attacked = table[table.max_gain.notna()]
    assert set(table.config) - set(attacked.config) == {"global mean", "BaselineOnly"}
    assert (attacked.targets == 6).all()
    assert attacked.max_gain.between(-1, 1).all() and table.pareto_rmse.any()
    assert (attacked.max_gain_se >= 0).all()
    assert table.max_gain_se[table.max_gain.isna()].isna().all()
    gains = attacked[["gain_b1", "gain_b8"]].max(axis=1)
    np.testing.assert_allclose(attacked.max_gain, gains)
    knn = table[table.family == "knn"]
    assert knn.vulnerable.between(0, 1).all() and knn.k.isin([5, 10]).all()
    assert table.set_index("config").vulnerable.isna()[["DPItemKNN/eps=1", "BaselineOnly"]].all()
    levels = pd.read_csv(out / "by_accuracy.csv")
    assert levels.max_gain.is_monotonic_decreasing and levels.rmse.is_monotonic_increasing


def test_pareto_configurations_are_not_dominated(quick):
    _, table = quick
    attacked = table.dropna(subset=["max_gain"])
    for row in attacked[attacked.pareto_rmse].itertuples():
        better = attacked[(attacked.rmse <= row.rmse) & (attacked.max_gain <= row.max_gain)
                          & ((attacked.rmse < row.rmse) | (attacked.max_gain < row.max_gain))]
        assert better.empty, row.config


def test_k_is_chosen_on_the_training_part_only():
    """No peeking: changing every rating of the test fold changes the test scores, never
    the inner cross-validation nor the k chosen."""
    data = synthetic(150, 200, 5000, random_state=1)
    trainset, testset = next(KFold(n_splits=3, random_state=0).split(data))
    flipped = [(u, i, 6.0 - r) for u, i, r in testset]
    configs = [c for c in frontier.configurations((1.0,), ("cosine",), ("topk", "ppns"),
                                                  ("basic",), ("item", "user"), ())
               if c["family"] == "knn"]
    first = pd.DataFrame(frontier.fold_scores(configs, trainset, testset, 0, (3, 8), 2))
    second = pd.DataFrame(frontier.fold_scores(configs, trainset, flipped, 0, (3, 8), 2))
    assert first.k.tolist() == second.k.tolist()
    assert first.inner_rmse.tolist() == second.inner_rmse.tolist()
    assert not np.allclose(first.rmse, second.rmse)
    for row in first.itertuples():     # the chosen (k, λ) has the lowest inner RMSE
        label = f"k={row.k}" + (f" λ={row.shrinkage:g}" if row.shrinkage else "")
        assert row.inner_rmse[label] == min(row.inner_rmse.values())
        user = "/user" in row.config
        assert (f"k={row.k} λ=inf" in row.inner_rmse) == user   # λ is the user nbhd's
    assert (first.shrinkage[~first.config.str.contains("/user")] == 0).all()


def test_guarantee_label_of_models_without_an_accountant():
    from surprise import BaselineOnly

    from dprec.experiments import hyperparameters
    assert hyperparameters.guarantee_label(BaselineOnly()) == "none"
    fitted = PrivateKNN(k=3, verbose=False).fit(synthetic(30, 40, 300, random_state=0)
                                               .build_full_trainset())
    assert hyperparameters.guarantee_label(fitted) == "none"


def test_from_saved_redoes_the_frontier_only(quick, tmp_path):
    out, table = quick
    again = frontier.main(["--quick", "--from-saved", "--out", str(out)])
    pd.testing.assert_frame_equal(again, table)
    with pytest.raises(ValueError, match="no finished run"):
        frontier.main(["--quick", "--from-saved", "--out", str(tmp_path)])


def test_holds_rows_take_the_public_rule_whatever_the_private_data(monkeypatch):
    """Issue #33, finding 9: the end-to-end models' ``(k, λ)`` is a public constant, never
    the inner cross-validation's choice: on two datasets, with a ``k`` grid that does not
    hold it, the holds rows get k = 40 and λ = 0, say so, and no model of theirs is built
    for an inner fold."""
    configs = frontier.configurations((1.0,), ("cosine",), ("topk",), ("basic",), ("item",),
                                      ("DPItemKNN", "LocalKNN (krr)"), ())
    holds = ["DPItemKNN/eps=1", "LocalKNN (krr)/eps=1"]
    built, make_algo = [], frontier.make_algo

    def recording(config, k, *args, **kwargs):
        built.append((config["config"], k))
        return make_algo(config, k, *args, **kwargs)

    monkeypatch.setattr(frontier, "make_algo", recording)
    tables = []
    for seed in (1, 2):
        trainset, testset = next(KFold(n_splits=3, random_state=0).split(
            synthetic(100, 300, 2000, random_state=seed)))
        tables.append(pd.DataFrame(frontier.fold_scores(configs, trainset, testset, 0, (2, 30),
                                                        2)).set_index("config"))
    assert {name: [int(t.k[name]) for t in tables] for name in holds} == \
        {name: [40, 40] for name in holds}
    assert {k for name, k in built if name in holds} == {40}   # no inner-CV candidate
    for table in tables:
        assert (table.shrinkage[holds] == 0).all()
        assert (table.hyperparameters[holds] == "public rule").all()
        assert all(scores == {} for scores in table.inner_rmse[holds])
        knn = table.loc["cosine/topk/basic/item"]
        assert knn.hyperparameters == "cross-validated (not private)" and knn.k in (2, 30)
    alone = frontier.fold_scores(configs[-2:], trainset, testset, 0, (2, 30), 2)  # no inner CV
    assert [(row["config"], row["k"]) for row in alone] == [(name, 40) for name in holds]


def test_the_label_is_that_of_a_fresh_noise_fit(monkeypatch):
    """The label describes the configuration as fitted for its guarantee
    (``random_state=None``), not the seeded runs that score it: every model that
    :func:`frontier.labels` fits draws fresh noise."""
    configs = frontier.configurations((1.0,), ("cosine", "rr_minhash"), ("topk", "ppns"),
                                      ("basic",), ("user",), ("DPItemKNN", "LocalKNN (krr)"))
    parameters = {c["config"]: (None if c["config"] in ("global mean", "BaselineOnly")
                                else 5, 0.0) for c in configs}
    seeds = []
    make_algo = frontier.make_algo

    def recording(*args, **kwargs):
        algo = make_algo(*args, **kwargs)
        if hasattr(algo, "random_state"):   # every model with noise (not BaselineOnly)
            seeds.append(algo.random_state)
        return algo

    monkeypatch.setattr(frontier, "make_algo", recording)
    data = synthetic(80, 100, 2000, random_state=0)
    labels = frontier.labels(data, configs, parameters)
    assert len(seeds) >= len(configs) - 2 and set(seeds) == {None}
    label, privacy = labels.guarantee, labels.privacy
    assert label["DPItemKNN/eps=1"] == "holds"
    # #51: a user at ε = ∞ (LocalKNN's sole rater of an item, without catalogue) is never
    # under a "holds" label
    local = privacy["LocalKNN (krr)/eps=1"]
    assert label["LocalKNN (krr)/eps=1"] == ("in part" if "no guarantee" in local else "holds")
    assert label["rr_minhash/topk/basic/user/eps=1"] == "in part"
    assert label["cosine/ppns/basic/user/eps=1"] == "as published"
    # #51: the privacy column is the fresh report's worst user, never the epsilon given
    assert privacy["DPItemKNN/eps=1"] == "ε = 1, δ = 1e-05 per user, holds"
    assert privacy["cosine/ppns/basic/user/eps=1"] == "nothing released yet per rating, " \
                                                      "as published"        # no query yet
    assert privacy["cosine/topk/basic/user"] == "not private"


def test_a_model_that_holds_with_cross_validated_k_is_labelled_in_part(quick, tmp_path):
    """A run saved before the ``hyperparameters`` column cross-validated every ``k``:
    ``--from-saved`` labels its end-to-end rows *in part*, never *holds*."""
    from dprec.experiments import hyperparameters as hp

    out, _ = quick
    for name in ("accuracy.csv", "attack.csv"):
        frame = pd.read_csv(out / name)
        frame.drop(columns=["hyperparameters"], errors="ignore").to_csv(tmp_path / name,
                                                                        index=False)
    table = frontier.main(["--quick", "--from-saved", "--out", str(tmp_path)])
    row = table.set_index("config").loc["DPItemKNN/eps=1"]
    assert row.hyperparameters == hp.CROSS_VALIDATED and row.guarantee == "in part"
    assert hp.row_label("holds", hp.PUBLIC_RULE) == "holds"
    assert hp.row_label("holds", hp.CROSS_VALIDATED) == "in part"
    assert hp.row_label("as published", hp.CROSS_VALIDATED) == "as published"


def test_a_knn_configuration_that_holds_takes_the_public_rule():
    """The rule is decided per configuration on public synthetic data: a kNN
    configuration whose model holds end to end takes it, one that does not is
    cross-validated, one with nothing to tune takes it."""
    from dprec import DPItemKNN
    from dprec.experiments import hyperparameters as hp

    configs = {c["config"]: c for c in frontier.configurations((1.0,), ("cosine",),
                                                               ("topk",), ("basic",),
                                                               ("user",), ())}
    knn = configs["cosine/topk/basic/user"]

    def holding(config, k, shrinkage, seed=0, rating_scale=(1.0, 5.0)):
        return DPItemKNN(epsilon=1.0, k=k, random_state=seed)

    assert hp.hyperparameter_methods([knn], holding) == {knn["config"]: hp.PUBLIC_RULE}
    methods = hp.hyperparameter_methods(list(configs.values()), frontier.make_algo)
    assert methods[knn["config"]] == hp.CROSS_VALIDATED
    assert methods["BaselineOnly"] == methods["global mean"] == hp.PUBLIC_RULE
    assert methods["KNNBaseline"] == hp.CROSS_VALIDATED
    assert hp.public_parameters(knn) == (40, 0.0)
    assert hp.public_parameters(configs["BaselineOnly"]) == (None, 0.0)
    with pytest.raises(ValueError, match="methods has no hyper-parameter choice"):
        hp.fresh_noise_labels(synthetic(30, 40, 300, random_state=0), [knn], {}, holding, {})


def test_the_privacy_axis_is_written_and_no_claim_that_holds_is_refuted(quick):
    out, table = quick
    for name in ("privacy.csv", "privacy.png", "disagreements.csv"):
        assert (out / name).is_file(), name
    rows = table.set_index("config")
    assert rows.mia_auc_user.between(0, 1).all() and rows.mia_auc_rating.between(0, 1).all()
    assert rows.claimed_epsilon["DPItemKNN/eps=1"] == pytest.approx(1.0)
    assert rows.claimed_unit["DPItemKNN/eps=1"] == "user"
    assert not rows.refuted.any() and pd.read_csv(out / "disagreements.csv").empty
    # PPNS's claim is the paper's, composed over the answers the attack asked for
    assert rows.published_epsilon["cosine/ppns/means/user/eps=1"] > 1.0
    # Surprise-like kNN says which users it does not know: the own view finds them all
    assert rows.mia_auc_user["cosine/topk/basic/item"] == 1.0


class _Head:
    holds, unit, status = True, Unit.RATING, "holds"

    def __init__(self, epsilon, delta):
        self.epsilon, self.delta = epsilon, delta


class ItemMeanClaimingTooMuch(AlgoBase):
    """The item means (a rating moves its item's mean by 1/n) claiming ε = 0.01 per
    rating (with δ = `DELTA`): a planted false claim."""

    DELTA = 0.0

    def fit(self, trainset):
        AlgoBase.fit(self, trainset)
        self.means = {i: np.mean([r for _, r in trainset.ir[i]]) for i in trainset.all_items()}
        return self

    def estimate(self, u, i):
        if i not in self.means:
            raise PredictionImpossible("unknown item")
        return self.means[i]

    def privacy_report(self):
        return SimpleNamespace(headline=lambda: [_Head(0.01, self.DELTA)])


def test_a_planted_false_claim_is_refuted_and_listed():
    from dprec.experiments.frontier_privacy import disagreements, privacy_table

    data = synthetic(300, 1000, 5000, random_state=0)      # five ratings an item
    configs = [{"config": "liar", "family": "knn"}]
    privacy = privacy_table(data, configs, lambda c, seed: ItemMeanClaimingTooMuch(), 40,
                            2000, progress=False)
    row = privacy.loc["liar"]
    assert row.claimed_epsilon == 0.01 and row.claimed_unit == "rating"
    assert row.refuted and row.empirical_epsilon_rating > 0.01
    listed = disagreements(privacy.reset_index().assign(rmse=1.0, privacy="ε = 0.01"))
    assert listed.disagreement.tolist() == ["claim refuted"]

    class WithDelta(ItemMeanClaimingTooMuch):
        DELTA = 0.1          # the δ term 2mδα then explains every guess: not refutable

    privacy = privacy_table(data, configs, lambda c, seed: WithDelta(), 40, 2000,
                            progress=False)
    assert privacy.loc["liar"].claimed_delta == 0.1 and not privacy.loc["liar"].refuted


@pytest.mark.slow
def test_the_frontier_runs_as_a_dask_sweep_with_the_same_accuracy(quick, tmp_path):
    """`--backend dask`: every job on a Dask cluster (here a LocalCluster of one worker);
    the same folds and seeds give the loky run's accuracy, bit for bit."""
    out, _ = quick
    frontier.main(["--quick", "--similarities", "cosine", "--targets", "2", "--canaries",
                   "20", "60", "--backend", "dask", "--n-jobs", "1", "--out", str(tmp_path)])
    dask_run = pd.read_csv(tmp_path / "accuracy.csv").drop(columns="seconds")
    loky_run = pd.read_csv(out / "accuracy.csv").drop(columns="seconds")
    loky_run = loky_run[loky_run.config.isin(dask_run.config)].reset_index(drop=True)
    pd.testing.assert_frame_equal(dask_run, loky_run)
