r"""The accuracy-against-security frontier, on recommenders worth attacking.

Every neighbour selector × similarity × prediction rule × neighbourhood, each
private configuration at every ε, next to the end-to-end DP models and the
references, on the same folds and against the same attack:

* **configurations** — the selectors top-k, probabilistic, PNCF and PPNS (as published)
  and PNCF corrected; the exact co-rated cosine and centred cosine (LensKit's; its own
  RS and range) and the private sketch backends RR-MinHash, Noisy-MinHash, SJLT and
  Gaussian-JL (the backend's ε equal to the selector's; the MinHash family with the
  public ``τ = n_known``); Surprise's ``basic``, ``means`` and ``baseline`` rules; the
  item neighbourhood (Surprise's semantics) and the user neighbourhood (the papers'),
  whose basic rule falls back to the user's mean where no neighbour rated the item
  (``fallback="user_mean"``) and whose rules shrink towards their fallback by the number
  of contributing neighbours (``neighbour_shrinkage`` λ; λ = ∞ *is* the fallback, μ_u or
  ``b_ui``, so the user semantics never lose to it on the validation folds); the
  end-to-end DP models ``DPItemKNN``, ``LocalKNN`` (k-RR and Laplace ratings),
  ``DPBaseline`` and ``DPALS``; references: the global mean, ``BaselineOnly`` and
  ``KNNBaseline`` (pearson-baseline, computed by dprec's top-k, equal to Surprise's).
  The non-private top-k of each rule and neighbourhood is in the grid.
* **hyper-parameters** (`dprec.experiments.hyperparameters`; column
  ``hyperparameters``) — the models that hold end to end, and those with
  nothing to tune, by the **public rule** (``k = 40``, the models' default
  stabilisers: nothing read from the data); the others **cross-validated
  (not private)**: per outer fold, the ``(k, λ)`` (``--k-grid``; λ in the
  user neighbourhood) with the lowest RMSE in an inner cross-validation of
  the training part.  The attack uses the pair chosen most often.  Configurations
  differing only in their rule (and λ) share one fit and selection
  ([`estimate_rules`][dprec.knn.PrivateKNN.estimate_rules]).
* **accuracy** — RMSE, MAE and precision@10 (Surprise's FAQ: a user's ten
  best-estimated test items with estimate ≥ 3.5, relevant when rated ≥ 3.5),
  means over the outer folds.
* **security (a): the β-kNN attack** ([`BetaKNNAttack`][]), on the
  whole dataset, ``n_targets`` targets (≥ 50 ratings, 8 known), β ∈ {1, 2, 4,
  8}: the pooled recovery of the β·k fake users (majority vote per hidden
  item) and its **gain** over the crowd yardstick (the other users' mean
  rating, rounded).  In the item neighbourhood a fake user's neighbours are
  chosen among the raters of each hidden item it asks about: the fakes are
  the target's closest raters only where the known items are all they
  share, so exposure there is per item.  The fake users ask for the hidden
  items only (``inference=False``).  Models without neighbours (global
  mean, ``BaselineOnly``, ``DPBaseline``, ``DPALS``) are not attacked.
* **security (b): vulnerable users without any attacker** — ReuseKNN's
  measure (Müllner et al., ACM TIST 2023; [`dprec.audit.data_usage`][]): per
  outer fold, how many test predictions each user's ratings contribute to,
  and the share of users at or above ReuseKNN's threshold τ, computed as
  their code does from plain UserKNN (top-k, item neighbourhood, basic rule,
  cosine) at the configuration's ``k`` on the same fold.  User-based kNN
  configurations only (``DPItemKNN`` is item-based: its neighbours are
  items).  ``--anchor`` repeats it on synthetic data of MovieLens 1M's shape
  at ``k = 10``, next to the paper's 80.4% (UserKNN) and 24.1% (its best
  variant).
* **privacy: membership and an empirical ε** — one fit with canaries per configuration
  ([`dprec.experiments.frontier_privacy`][]): the membership attacks' AUC, the one-run
  lower bound on ε in the view the claims cover, the claimed ε, ``refuted``.
* **guarantee label** — what the report of the configuration fitted with fresh
  noise on the whole data computes for its worst user (the seeded runs have
  none; [`dprec.experiments.privacy_labels`][]): ``privacy``, its ε, δ, unit and
  status, and ``guarantee``, *holds* (every user, end to end, hyper-parameters
  by the public rule), *in part* (some outputs or users only; or ``k``
  cross-validated), *as published* (a paper's claim), *none*.
* **the frontier** — per configuration the largest gain over β (the attacker
  picks β); Pareto-optimal configurations for (RMSE, gain) and for
  (precision@10, gain) are marked, and for each accuracy level the most
  resistant configuration is listed.

Writes under ``--out`` (default ``results/frontier``): ``accuracy.csv`` (one
row per configuration and outer fold: ``k``, λ, how they were chosen, the
inner RMSE of every candidate), ``attack.csv`` (one row per configuration ×
target × β), ``frontier.csv`` (one row per configuration), ``by_accuracy.csv``,
``anchor.csv`` (with ``--anchor``), ``frontier.png``, ``privacy.csv``, ``privacy.png``,
``disagreements.csv`` and ``headline.json`` (the README's figures,
[`dprec.experiments.front_page`][]):

    python experiments/frontier.py --quick
    SURPRISE_DATA_FOLDER=/path/to/surprise_data python experiments/frontier.py --anchor
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from joblib import Parallel, delayed
from surprise import BaselineOnly
from surprise.model_selection import KFold
from tqdm.auto import tqdm

from ..attacks import BetaKNNAttack
from ..audit.data_usage import data_usage, reuseknn_threshold, vulnerable_share
from ..datasets import synthetic
from ..endtoend.dp_als import DPALS
from ..endtoend.dp_baseline import DPBaseline
from ..endtoend.dp_item_knn import DPItemKNN
from ..endtoend.local_knn import LocalKNN
from ..evaluation import parallel_backend
from ..evaluation.metrics import precision_at_k
from ..knn import PrivateKNN
from ..selectors import CorrectedPNCF
from ..similarity import sketch_backend, with_public_bounds
from ..similarity.exact import change_bound
from ..utils._surprise import inner_ids
from . import hyperparameters as hp
from ._options import EPSILON, FOLDS, POSITIVE_INT, check_folds, experiment_data, experiment_parser
from ._shared_fits import SharedFits, batch_estimates, rule_estimates
from .attack_resistance import backend_options
from .front_page import headline
from .frontier_figure import plot_frontier
from .frontier_privacy import disagreements, plot_privacy, privacy_axis
from .frontier_summary import by_accuracy_level, summary
from .frontier_summary import pareto as pareto  # re-exported
from .privacy_labels import LABELS as LABELS  # the guarantee labels, re-exported

EPSILONS = (0.5, 1.0, 2.0, 5.0)
BETAS = (1, 2, 4, 8)
SELECTORS = ("topk", "probabilistic", "pncf", "ppns", "pncf_corrected")
PRIVATE_SELECTORS = ("pncf", "ppns", "pncf_corrected")
SIMILARITIES = ("cosine", "centered_cosine", "rr_minhash", "noisy_minhash", "sjlt",
                "gaussian_jl")
#: the exact similarities (non-private; the sketch backends are private at ε)
EXACT = ("cosine", "centered_cosine")
RULES = ("basic", "means", "baseline")
NEIGHBOURHOODS = ("item", "user")
END_TO_END = ("DPItemKNN", "LocalKNN (krr)", "LocalKNN (laplace)", "DPBaseline (user)", "DPALS")
REFERENCES = ("global mean", "BaselineOnly", "KNNBaseline")
#: PPNS's geometric parameter (the papers' p = 0.5)
PPNS_P = 0.5
#: ratings of the target the attacker knows, and the public τ of the MinHash family
N_KNOWN = 8
#: hidden items asked and scored per target (a seeded sample; all when fewer)
N_ASKED = 20
#: what ReuseKNN reports on MovieLens 1M at k = 10 (Müllner et al., TIST 2023)
REUSEKNN_ANCHOR = {"UserKNN": 0.804, "ReuseKNN (best variant)": 0.241}


# ---------------------------------------------------------- configurations
def configurations(epsilons: Sequence[float] = EPSILONS,
                   similarities: Sequence[str] = SIMILARITIES,
                   selectors: Sequence[str] = SELECTORS, rules: Sequence[str] = RULES,
                   neighbourhoods: Sequence[str] = NEIGHBOURHOODS,
                   end_to_end: Sequence[str] = END_TO_END,
                   references: Sequence[str] = REFERENCES) -> list[dict]:
    """The grid: references, then kNN configurations (similarity × selector × rule ×
    neighbourhood × ε where something is private), then the end-to-end DP models × ε.

    Each configuration is a dict with ``config`` (its label), ``family``
    (``"reference"``, ``"knn"``, ``"end-to-end"``), ``similarity``,
    ``selector``, ``rule``, ``neighbourhood`` and ``epsilon`` (None when
    nothing is private).
    """
    grid = [{"config": name, "family": "reference", "similarity": None, "selector": None,
             "rule": None, "neighbourhood": None, "epsilon": None} for name in references]
    for similarity in similarities:
        for selector in selectors:
            private = similarity not in EXACT or selector in PRIVATE_SELECTORS
            for rule in rules:
                for neighbourhood in neighbourhoods:
                    for epsilon in (epsilons if private else (None,)):
                        label = f"{similarity}/{selector}/{rule}/{neighbourhood}" + (
                            f"/eps={epsilon:g}" if private else "")
                        grid.append({"config": label, "family": "knn",
                                     "similarity": similarity, "selector": selector,
                                     "rule": rule, "neighbourhood": neighbourhood,
                                     "epsilon": epsilon})
    grid += [{"config": f"{model}/eps={epsilon:g}", "family": "end-to-end", "similarity": None,
              "selector": None, "rule": None, "neighbourhood": None, "epsilon": epsilon,
              "model": model} for model in end_to_end for epsilon in epsilons]
    return grid


def rule_of(config: dict, shrinkage: float = 0.0) -> dict:
    """The prediction rule of a kNN configuration ([`dprec.knn.RULE_PARAMETERS`][]): the
    basic rule of the user neighbourhood falls back to the user's mean."""
    rule, neighbourhood = config["rule"], config["neighbourhood"]
    return {"prediction": rule,
            "fallback": "user_mean" if neighbourhood == "user" and rule == "basic"
            else "global_mean", "neighbour_shrinkage": float(shrinkage)}


def make_algo(config: dict, k: int | None, shrinkage: float = 0.0, *, seed: int | None = 0,
              rating_scale: tuple[float, float] = (1.0, 5.0)):
    """The (unfitted) model of ``config`` with ``k`` neighbours (ignored without) and
    neighbour shrinkage ``shrinkage`` (kNN configurations); ``seed`` its ``random_state``
    (None: fresh noise, the configuration as fitted for its guarantee)."""
    name = config["config"]
    if name == "global mean":
        return BaselineOnly(bsl_options={"method": "als", "n_epochs": 0}, verbose=False)
    if name == "BaselineOnly":
        return BaselineOnly(verbose=False)
    if name == "KNNBaseline":   # dprec's top-k: Surprise's predictions, tested to 1e-9
        return PrivateKNN(k=k, sim_options={"name": "pearson_baseline"}, prediction="baseline",
                          verbose=False)
    epsilon = config["epsilon"]
    if config["family"] == "end-to-end":
        model = config["model"]
        if model == "DPItemKNN":
            return DPItemKNN(epsilon=epsilon, k=k, random_state=seed)
        if model.startswith("LocalKNN"):
            release = "krr" if "krr" in model else "laplace"
            return LocalKNN(epsilon=epsilon, k=k, rating_release=release, random_state=seed)
        return (DPALS(epsilon=epsilon, random_state=seed) if model == "DPALS" else
                DPBaseline(epsilon=epsilon, unit="user", random_state=seed))
    similarity, selector = config["similarity"], config["selector"]
    options = ({"name": similarity} if similarity in EXACT
               else backend_options(similarity, epsilon, N_KNOWN))
    if selector == "pncf_corrected":   # Δ: the width of the similarity's range
        width = (change_bound(similarity, np.array(rating_scale, dtype=float))
                 if similarity in EXACT
                 else sketch_backend(with_public_bounds(options, rating_scale)).score_range)
        selector = CorrectedPNCF(epsilon=epsilon, score_range=float(width))
        epsilon = None
    elif selector not in PRIVATE_SELECTORS:
        epsilon = None
    return PrivateKNN(k=k, sim_options=options, selector=selector, epsilon=epsilon,
                      p=PPNS_P if selector == "ppns" else None,
                      neighbourhood=config["neighbourhood"], random_state=seed, verbose=False,
                      **rule_of(config, shrinkage))


# ---------------------------------------------------------------- accuracy
def _rmse(truth: np.ndarray, est: np.ndarray) -> float:
    return float(np.sqrt(np.mean((est - truth) ** 2)))


def _scored(candidates: Sequence[tuple[dict, int | None, float]], shared: SharedFits,
            testset, seed: int):
    """Each candidate ``(config, k, λ)`` fitted on ``shared.trainset`` and scored on
    ``testset``: yields ``(config, k, λ, fitted model, (truth, est, possible),
    neighbours)``, ``neighbours`` the known queries' ``(neighbours, weights)`` of a kNN
    model (else None).

    The kNN candidates that differ only in their rule and λ share one fit and one
    selection (`rule_estimates`); the others are fitted one by one.
    """
    trainset = shared.trainset
    groups: dict = {}
    for config, k, shrinkage in candidates:
        key = ((config["similarity"], config["selector"], config["neighbourhood"],
                config["epsilon"], k) if config["family"] == "knn" else (config["config"], k))
        groups.setdefault(key, []).append((config, k, shrinkage))
    for members in groups.values():
        config, k, _ = members[0]   # fitted with λ = 0: each member's λ is in its rule
        algo = shared.fit(make_algo(config, k, seed=seed, rating_scale=trainset.rating_scale))
        if config["family"] == "knn":
            answers, neighbours = rule_estimates(algo, trainset, testset,
                                                 [rule_of(c, lam) for c, _, lam in members])
        else:
            answers, neighbours = [batch_estimates(algo, trainset, testset)], None
        for (config, k, shrinkage), answer in zip(members, answers):
            yield config, k, shrinkage, algo, answer, neighbours


def _tau(shared: SharedFits, k: int, users, items, seed: int) -> float:
    """ReuseKNN's τ from plain UserKNN (top-k, item neighbourhood, basic, cosine) at ``k``
    on this fold's test queries."""
    reference = shared.fit(PrivateKNN(k=k, sim_options={"name": "cosine"}, random_state=seed,
                                      verbose=False))
    return reuseknn_threshold(data_usage(reference, users, items))


def fold_scores(configs: Sequence[dict], trainset, testset, fold: int,
                k_grid: Sequence[int] = hp.K_GRID, inner_folds: int = 2,
                seed: int = 0, shrinkage_grid: Sequence[float] = hp.SHRINKAGE_GRID,
                methods: dict | None = None) -> list[dict]:
    """One outer fold: ``(k, λ)`` by the public rule or by inner cross-validation of
    ``trainset`` (``methods``, default `hyperparameter_methods`; the column
    ``hyperparameters``), then every configuration scored on the test fold (RMSE, MAE,
    precision@10, impossible share, vulnerable share)."""
    methods = hp.hyperparameter_methods(configs, make_algo) if methods is None else methods
    tuned = [c for c in configs if methods[c["config"]] == hp.CROSS_VALIDATED]
    inner = hp.choose_parameters(     # each candidate fitted on an inner part, scored on the other
        tuned, trainset, k_grid, inner_folds, seed, shrinkage_grid,
        score=lambda cands, train, test: ((c, k, lam, _rmse(t, e)) for c, k, lam, _, (t, e, _), _
                                          in _scored(cands, SharedFits(train), test, seed)))
    chosen = inner[inner.chosen].set_index("config")
    uids, iids, r_uis, users, items = inner_ids(trainset, testset)
    known = (users >= 0) & (items >= 0)
    taus: dict = {}
    shared = SharedFits(trainset)
    candidates = []
    for config in configs:
        k, lam = hp.public_parameters(config)
        if methods[config["config"]] == hp.CROSS_VALIDATED:
            k, lam = chosen.k[config["config"]], chosen.shrinkage[config["config"]]
        candidates.append((config, None if pd.isna(k) else int(k), float(lam)))
    rows, usage, last = [], None, None
    start = time.perf_counter()
    for config, k, shrinkage, algo, (truth, est, possible), neighbours in _scored(
            candidates, shared, testset, seed):
        predictions = [(u, i, r, e, None) for u, i, r, e in zip(uids, iids, r_uis, est.tolist())]
        share = np.nan
        if isinstance(algo, PrivateKNN) and algo.sim_options_["user_based"]:
            if k not in taus:
                taus[k] = _tau(shared, k, users[known], items[known], seed)
            if algo is not last:   # a group's members share its neighbours
                usage = data_usage(algo, users[known], items[known], neighbours)
                last = algo
            # with λ = ∞ no neighbour's rating enters a prediction (the user-nbhd basic
            # rule, the one rule with λ here, falls back to the user's mean)
            share = vulnerable_share(usage * (not math.isinf(shrinkage)), taus[k])
        scores = inner[inner.config == config["config"]]
        rows.append({"config": config["config"], "fold": fold, "k": k, "shrinkage": shrinkage,
                     "hyperparameters": methods[config["config"]], "rmse": _rmse(truth, est),
                     "mae": float(np.mean(np.abs(est - truth))),
                     "precision@10": precision_at_k(predictions, 10),
                     "impossible": float(1 - possible.mean()),
                     "vulnerable": share, "tau": taus.get(k, np.nan),
                     "inner_rmse": {hp.parameter_label(*pair): round(value, 5) for *pair, value
                                    in zip(scores.k, scores.shrinkage, scores.inner_rmse)},
                     "seconds": time.perf_counter() - start})
        start = time.perf_counter()
    order = {config["config"]: j for j, config in enumerate(configs)}
    return sorted(rows, key=lambda row: order[row["config"]])


def accuracy_table(data, configs: Sequence[dict], n_folds: int = 3,
                   k_grid: Sequence[int] = hp.K_GRID, inner_folds: int = 2, seed: int = 0,
                   n_jobs: int = 1, progress: bool = True,
                   shrinkage_grid: Sequence[float] = hp.SHRINKAGE_GRID) -> pd.DataFrame:
    """Every configuration scored per outer fold, its ``(k, λ)`` by the public rule or by
    nested cross-validation (`hyperparameter_methods`): one row per configuration
    and outer fold, in the order of ``configs``.

    Runs in parallel over (fold, similarity) pairs, the largest groups first: the
    configurations of one similarity share its computation (and a sketch's release).
    """
    methods = hp.hyperparameter_methods(configs, make_algo)
    groups: dict = {}
    for config in configs:
        groups.setdefault(config["similarity"], []).append(config)
    folds = list(KFold(n_splits=n_folds, random_state=seed).split(data))
    jobs = [delayed(fold_scores)(group, trainset, testset, fold, k_grid, inner_folds, seed,
                                 shrinkage_grid, methods)
            for group in sorted(groups.values(), key=len, reverse=True)
            for fold, (trainset, testset) in enumerate(folds)]
    parts = Parallel(n_jobs=n_jobs, return_as="generator")(jobs)
    rows = [row for part in tqdm(parts, total=len(jobs), desc="accuracy", unit="task",
                                 disable=not progress) for row in part]
    order = {config["config"]: j for j, config in enumerate(configs)}
    table = pd.DataFrame(rows)
    return table.sort_values(["fold", "config"], key=lambda column: column.map(order)
                             if column.name == "config" else column,
                             kind="stable").reset_index(drop=True)


# ------------------------------------------------------------------ attack
def attack_table(data, configs: Sequence[dict], parameters: dict, n_targets: int = 50,
                 betas: Sequence[int] = BETAS, min_target_ratings: int = 50,
                 n_asked: int | None = N_ASKED, seed: int = 0, n_jobs: int = 1,
                 progress: bool = True) -> pd.DataFrame:
    """The β-kNN attack on every configuration with neighbours (same targets, known
    items and fake users), each with its ``(k, λ)`` of ``parameters``
    (`attack_parameters`), on ``n_asked`` of each target's hidden items: one row
    per configuration × target × β."""
    scale = data.build_full_trainset().rating_scale
    algos = {c["config"]: make_algo(c, *parameters[c["config"]], seed=seed, rating_scale=scale)
             for c in configs if hp.tunes_k(c)}
    attack = BetaKNNAttack(algos, data, n_known=N_KNOWN, betas=betas, n_targets=n_targets,
                           min_target_ratings=min_target_ratings, inference=False,
                           n_asked=n_asked, random_state=seed, n_jobs=n_jobs, progress=progress)
    return attack.run().rename(columns={"algo": "config"})


def labels(data, configs: Sequence[dict], parameters: dict,
           methods: dict | None = None) -> pd.DataFrame:
    """Each configuration's labels from the report of the configuration fitted with fresh
    noise on the whole data with its ``(k, λ)`` of ``parameters`` (`fresh_noise_labels`):
    ``guarantee`` (*holds* only when ``methods`` is covered too) and ``privacy``."""
    methods = hp.hyperparameter_methods(configs, make_algo) if methods is None else methods
    return hp.fresh_noise_labels(data, configs, parameters, make_algo, methods)


# ------------------------------------------------------------------ anchor
def reuseknn_anchor(seed: int = 0, k: int = 10, shape=(6040, 3706, 1_000_209)) -> pd.DataFrame:
    """The vulnerable share on synthetic data of MovieLens 1M's shape at ``k = 10`` (one
    fold of five, as ReuseKNN's protocol), for plain UserKNN and the user-based
    selectors at ε = 1, next to the paper's figures."""
    data = synthetic(*shape, random_state=seed)
    trainset, testset = next(KFold(n_splits=5, random_state=seed).split(data))
    _, _, _, users, items = inner_ids(trainset, testset)
    known = (users >= 0) & (items >= 0)
    users, items = users[known], items[known]
    rows = []
    tau = None
    for label, options in [("UserKNN (top-k, item nbhd)", {}),
                           ("top-k, user nbhd", {"neighbourhood": "user"}),
                           ("PPNS ε=1, item nbhd", {"selector": "ppns", "epsilon": 1.0,
                                                   "p": PPNS_P}),
                           ("PPNS ε=1, user nbhd", {"selector": "ppns", "epsilon": 1.0,
                                                   "p": PPNS_P, "neighbourhood": "user"}),
                           ("PNCF ε=1, user nbhd", {"selector": "pncf", "epsilon": 1.0,
                                                   "neighbourhood": "user"})]:
        algo = PrivateKNN(k=k, sim_options={"name": "cosine"}, random_state=seed,
                          verbose=False, **options).fit(trainset)
        usage = data_usage(algo, users, items)
        tau = reuseknn_threshold(usage) if tau is None else tau
        rows.append({"model": label, "k": k, "tau": tau,
                     "vulnerable": vulnerable_share(usage, tau),
                     "mean_usage": float(usage.mean()), "dataset": "synthetic, ML-1M shape"})
    rows += [{"model": f"{name} (ReuseKNN paper, real ML-1M)", "k": 10, "vulnerable": share,
              "dataset": "MovieLens 1M"} for name, share in REUSEKNN_ANCHOR.items()]
    return pd.DataFrame(rows)


# -------------------------------------------------------------------- main
def _print_report(frontier: pd.DataFrame) -> None:
    columns = [c for c in ["config", "k", "hyperparameters", "rmse", "precision@10", "gain_b1",
                           "gain_b8", "max_gain", "max_gain_se", "vulnerable", "guarantee",
                           "privacy"]
               if c in frontier]
    front = frontier[frontier.pareto_rmse | frontier.pareto_precision]
    print("Pareto-optimal configurations (RMSE or precision@10 against the largest gain):")
    print(front.sort_values("rmse")[columns].to_string(
        index=False, float_format=lambda x: f"{x:.3f}"))
    refs = frontier[frontier.family == "reference"][["config", "rmse", "precision@10"]]
    print("\nreferences:\n" + refs.to_string(index=False, float_format=lambda x: f"{x:.3f}"))


def _frontier_table(args, data, label: str, configs: list[dict], out: Path, start: float
                    ) -> pd.DataFrame:
    """The frontier's table: accuracy and the β-kNN attack (run, or read with
    ``--from-saved``), the labels, the privacy axis."""
    k_grid, folds, targets = tuple(args.k_grid), args.folds, args.targets
    betas, min_ratings = ((1, 8), 40) if args.quick else (BETAS, 50)
    if args.from_saved:
        saved = [out / name for name in ("accuracy.csv", "attack.csv")]
        if not all(path.is_file() for path in saved):
            raise ValueError(f"--from-saved: {out} holds no finished run (accuracy.csv and "
                             "attack.csv); run without --from-saved first")
        accuracy, attack = (pd.read_csv(path) for path in saved)
        missing = {c["config"] for c in configs} - set(accuracy.config)
        if missing:
            raise ValueError(f"--from-saved: {out / 'accuracy.csv'} lacks {len(missing)} of the "
                             f"configurations these options ask for, e.g. {sorted(missing)[0]!r}")
        parameters = hp.attack_parameters(accuracy)
    else:
        accuracy = accuracy_table(data, configs, folds, k_grid, args.inner_folds, args.seed,
                                  args.n_jobs)
        accuracy.insert(0, "dataset", label)
        accuracy.to_csv(out / "accuracy.csv", index=False)
        scored = time.perf_counter()
        print(f"accuracy: {scored - start:.0f} s", flush=True)
        parameters = hp.attack_parameters(accuracy)
        attack = attack_table(data, configs, parameters, targets, betas, min_ratings, args.asked,
                              args.seed, args.n_jobs)
        attack.to_csv(out / "attack.csv", index=False)
        print(f"attack: {time.perf_counter() - scored:.0f} s", flush=True)
    frontier = summary(configs, accuracy, attack,
                       labels(data, configs, parameters, hp.chosen_by(accuracy)))
    scale = data.build_full_trainset().rating_scale
    privacy = privacy_axis(data, configs, lambda c, seed: make_algo(
        c, *parameters[c["config"]], seed=seed, rating_scale=scale), args.canaries, args.seed,
        args.n_jobs, out, args.from_saved)
    print(f"privacy axis: {time.perf_counter() - start:.0f} s since the start", flush=True)
    return frontier.merge(privacy, left_on="config", right_index=True, how="left")


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> pd.DataFrame:
    """The command line of ``dprec frontier``: run the comparison on ``argv`` and write its
    results under ``--out`` (``--help`` for the options)."""
    parser = experiment_parser(prog, __doc__, "results/frontier", folds=3, n_jobs=2,
                               jobs="folds and targets", data=True)
    parser.add_argument("--targets", type=POSITIVE_INT, default=50, quick=6,
                        help="users attacked per configuration (default 50; quick 6)")
    parser.add_argument("--asked", type=POSITIVE_INT, default=N_ASKED,
                        help=f"hidden items asked and scored per target (default {N_ASKED})")
    parser.add_argument("--inner-folds", type=FOLDS, default=2,
                        help="inner cross-validation folds choosing k (default 2)")
    parser.add_argument("--k-grid", type=POSITIVE_INT, nargs="+", default=list(hp.K_GRID),
                        quick=[5, 10],
                        help="the k each cross-validated configuration chooses from (default "
                             "10 20 40, quick 5 10; the models that hold take k = 40)")
    parser.add_argument("--epsilons", type=EPSILON, nargs="+", default=list(EPSILONS),
                        quick=[1.0], help="ε of every private part (default 0.5 1 2 5; quick 1)")
    parser.add_argument("--similarities", nargs="+", default=list(SIMILARITIES),
                        quick=["cosine", "rr_minhash"], choices=SIMILARITIES,
                        help="similarities (default: all; quick: cosine rr_minhash)")
    parser.add_argument("--from-saved", action="store_true",
                        help="read accuracy.csv and attack.csv from --out (a finished run "
                             "with the same options) and redo only the labels, the frontier, "
                             "its tables and figure")
    parser.add_argument("--canaries", type=POSITIVE_INT, nargs=2, default=[200, 1000],
                        quick=[40, 200], metavar=("USERS", "RATINGS"),
                        help="canary users and ratings of the privacy axis's one fit per "
                             "configuration (default 200 1000; quick 40 200)")
    parser.add_argument("--backend", choices=["loky", "dask"], default="loky",
                        help="loky: local processes (--n-jobs); dask: every job on a Dask "
                             "cluster (--scheduler, or a LocalCluster of --n-jobs workers)")
    parser.add_argument("--scheduler", default=None, metavar="ADDRESS",
                        help="address of a running Dask scheduler (with --backend dask)")
    parser.add_argument("--anchor", action="store_true",
                        help="also measure ReuseKNN's vulnerable users on the MovieLens-1M "
                             "shape (about a minute)")
    parser.add_argument("--quick", action="store_true",
                        help="a small run: synthetic 300 users, top-k and PPNS, cosine and "
                             "RR-MinHash, ε = 1, k ∈ {5, 10}, 2 folds, 6 targets, β ∈ {1, 8} "
                             "(the options given win)")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    data, label = experiment_data(args)
    check_folds(args.folds, data, label, args.inner_folds)
    small = (("topk", "ppns"), ("basic", "means"), NEIGHBOURHOODS, ("DPItemKNN",))
    configs = configurations(tuple(args.epsilons), tuple(args.similarities),
                             *(small if args.quick else ()))
    k_grid, folds, targets = tuple(args.k_grid), args.folds, args.targets
    betas, min_ratings = ((1, 8), 40) if args.quick else (BETAS, 50)
    print(f"{label}: {len(configs)} configurations, k ∈ {list(k_grid)} by {args.inner_folds}-"
          f"fold inner CV in each of {folds} folds (models that hold: public rule, k = "
          f"{hp.PUBLIC_K}); attack: {targets} targets × β ∈ {list(betas)}", flush=True)
    with parallel_backend(args.backend, args.scheduler, max(args.n_jobs, 1)):
        frontier = _frontier_table(args, data, label, configs, out, start)
    frontier.insert(0, "dataset", label)
    frontier.to_csv(out / "frontier.csv", index=False)
    by_accuracy_level(frontier).to_csv(out / "by_accuracy.csv", index=False)
    (out / "headline.json").write_text(json.dumps(headline(frontier, folds), indent=1,
                                                  ensure_ascii=False) + "\n")
    plot_frontier(frontier, out / "frontier.png")
    disagreements(frontier).to_csv(out / "disagreements.csv", index=False)
    plot_privacy(frontier, out / "privacy.png")
    _print_report(frontier)
    if args.anchor:
        anchor = reuseknn_anchor(args.seed)
        anchor.to_csv(out / "anchor.csv", index=False)
        print("\n" + anchor.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    print(f"total {time.perf_counter() - start:.0f} s; written to {out}/", flush=True)
    return frontier


if __name__ == "__main__":
    main()
