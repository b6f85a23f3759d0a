r"""How the frontier's configurations get their hyper-parameters, and the label that allows.

A hyper-parameter chosen by looking at the private data is a release too: an
inner cross-validation fits the model many times on the training part and
keeps the candidate with the lowest validation RMSE, and neither those fits
nor the choice are covered by the model's ε.  So the frontier chooses each
configuration's ``k`` (and, in the user neighbourhood, the neighbour
shrinkage λ) in one of two ways, and its table says which
(`PUBLIC_RULE` or `CROSS_VALIDATED`, the column
``hyperparameters``):

* **public rule** (`public_parameters`) — ``k = 40``
  (`PUBLIC_K`: Surprise's and the models' default) and λ = 0, with the
  end-to-end models' own default stabilisers (``DPItemKNN``'s shrinkage,
  ``LocalKNN``'s and ``DPBaseline``'s item shrinkage: functions of ε alone).
  Nothing is read from the data, so nothing needs charging.  Every
  configuration whose model alone holds end to end gets it: the end-to-end
  models ``DPItemKNN``, ``LocalKNN`` and ``DPBaseline``, and any
  ``PrivateKNN`` configuration whose fitted model's accountant gives an
  end-to-end guarantee.  So do the models with nothing to tune (the global
  mean, ``BaselineOnly``: their defaults).
* **cross-validated (not private)** (`choose_parameters`) — every other
  configuration: for each outer fold, the ``(k, λ)`` of ``K_GRID`` ×
  ``SHRINKAGE_GRID`` with the lowest RMSE in an inner cross-validation of
  that fold's training part (ties: the smaller ``k``, then the smaller λ);
  the test fold is used once, to score.  This is what the papers and
  Surprise do, and no ε covers it.

A row is labelled *holds* only when both the model and its hyper-parameter
choice are covered (`row_label`): a model that would hold with a fixed
``k`` but whose ``k`` was cross-validated is labelled *in part*.  A private
selection (an exponential mechanism over the grid's validation scores, or
Papernot & Steinke's random stopping, with its ε composed into the row's) is
not offered: the validation score of a model fitted on private data has no
sensitivity bound dprec can argue for one user's ratings, so its ε could not
be stated honestly.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterable, Sequence

import pandas as pd
from surprise import Dataset, Reader
from surprise.model_selection import KFold

from ..datasets import synthetic
from ._shared_fits import SharedFits
from .privacy_labels import guarantee_label, privacy_label

__all__ = ["COVERED", "CROSS_VALIDATED", "K_GRID", "PUBLIC_K", "PUBLIC_RULE", "SHRINKAGE_GRID",
           "attack_parameters", "candidates", "choose_parameters", "chosen_by",
           "fresh_noise_labels", "guarantee_label", "hyperparameter_method",
           "hyperparameter_methods", "parameter_label", "public_parameters", "row_label",
           "tunes_k", "tunes_shrinkage"]

K_GRID = (10, 20, 40)
#: the neighbour shrinkage λ of the user neighbourhood, chosen by the inner CV with k
#: (∞: the rule's fallback itself, μ_u or b_ui)
SHRINKAGE_GRID = (0.0, 1.0, 4.0, 16.0, math.inf)
#: the public rule's ``k``: Surprise's default and every dprec model's
PUBLIC_K = 40
#: the ``hyperparameters`` column of a configuration under the public rule
PUBLIC_RULE = "public rule"
#: the ``hyperparameters`` column of a configuration whose ``(k, λ)`` the inner CV chose
CROSS_VALIDATED = "cross-validated (not private)"
#: hyper-parameter choices that a *holds* label may rest on (a private selection would
#: join them, as ``"private selection (ε …)"``, with its ε composed into the row's)
COVERED = (PUBLIC_RULE,)


def tunes_k(config: dict) -> bool:
    """Whether the configuration has a ``k`` (every model with neighbours).

    Parameters
    ----------
    config : dict
        A configuration of `dprec.experiments.frontier.configurations`.
    """
    return config["config"] not in ("global mean", "BaselineOnly") and not \
        config.get("model", "").startswith(("DPBaseline", "DPALS"))


def tunes_shrinkage(config: dict) -> bool:
    """Whether the configuration has a neighbour shrinkage λ (the user neighbourhood of
    ``PrivateKNN``)."""
    return config["family"] == "knn" and config["neighbourhood"] == "user"


def public_parameters(config: dict) -> tuple[int | None, float]:
    """The public rule's ``(k, λ)`` of ``config``: ``(PUBLIC_K, 0.0)``, ``k`` None for a
    model without neighbours.

    A constant: it reads neither the ratings nor their sizes, so it costs no ε.  The
    end-to-end models' other stabilisers stay at their defaults, functions of ε alone.
    """
    return (PUBLIC_K if tunes_k(config) else None), 0.0


def hyperparameter_method(config: dict, model_holds: bool) -> str:
    """How ``config``'s hyper-parameters are chosen: `PUBLIC_RULE` when its model
    alone holds end to end (``model_holds``) or it has nothing to tune, else
    `CROSS_VALIDATED`.

    Parameters
    ----------
    config : dict
        A configuration of `dprec.experiments.frontier.configurations`.
    model_holds : bool
        Whether the configuration's model, fitted with fresh noise, guarantees
        everything it releases (decided without the private data: see
        `hyperparameter_methods`).
    """
    if model_holds or not (tunes_k(config) or tunes_shrinkage(config)):
        return PUBLIC_RULE
    return CROSS_VALIDATED


def row_label(model_label: str, method: str) -> str:
    """The label of a row: the model's (`guarantee_label`), except that *holds*
    needs its hyper-parameters covered too (`COVERED`); a model that holds with
    hyper-parameters read from the private data is *in part*."""
    if model_label == "holds" and method not in COVERED:
        return "in part"
    return model_label


def hyperparameter_methods(configs: Sequence[dict], make_algo: Callable) -> dict:
    """Per configuration, how its hyper-parameters are chosen (`hyperparameter_method`).

    The public rule for the end-to-end DP models, for models with nothing to tune, and
    for any kNN configuration whose model, fitted with fresh noise at ``k = PUBLIC_K``,
    holds end to end; cross-validated otherwise.  Whether a kNN model holds is a property
    of its configuration, read here from a fit on public synthetic data
    ([`dprec.datasets.synthetic`][]), never the private data: choosing the rule peeks
    at nothing.

    Parameters
    ----------
    configs : sequence of dict
        Configurations of `dprec.experiments.frontier.configurations`.
    make_algo : callable
        ``make_algo(config, k, λ, seed=None)``: the configuration's unfitted model
        (`dprec.experiments.frontier.make_algo`).
    """
    probe = SharedFits(synthetic(60, 80, 1500, random_state=0).build_full_trainset())
    out = {}
    for config in configs:
        holds = config["family"] == "end-to-end"
        if config["family"] == "knn":
            with warnings.catch_warnings():   # the probe's short profiles release no sketch
                warnings.simplefilter("ignore")
                holds = guarantee_label(probe.fit(make_algo(config, PUBLIC_K, 0.0,
                                                            seed=None))) == "holds"
        out[config["config"]] = hyperparameter_method(config, holds)
    return out


def fresh_noise_labels(data, configs: Sequence[dict], parameters: dict, make_algo: Callable,
                       methods: dict) -> pd.DataFrame:
    """Each configuration's labels, read from the report of the configuration fitted with
    fresh noise (``random_state=None``) on the whole of ``data`` with its ``(k, λ)`` of
    ``parameters``: its category (`guarantee_label` through `row_label` with its
    ``methods`` entry) and the report's headline (`privacy_label`).

    Parameters
    ----------
    data : surprise.Dataset
    configs : sequence of dict
    parameters : dict
        ``config → (k, λ)`` (`attack_parameters`).
    make_algo : callable
        ``make_algo(config, k, λ, seed=None, rating_scale=...)``: the unfitted model.
    methods : dict
        ``config →`` how its hyper-parameters were chosen (`chosen_by`).

    Returns
    -------
    pandas.DataFrame
        Indexed by ``config``: ``guarantee`` (one of
        [`LABELS`][dprec.experiments.privacy_labels.LABELS]) and ``privacy`` (the
        headline: the worst user's ε, δ, unit and status).
    """
    missing = [c["config"] for c in configs if c["config"] not in methods]
    if missing:
        raise ValueError(f"methods has no hyper-parameter choice for {len(missing)} "
                         f"configurations, e.g. {missing[0]!r}")
    shared = SharedFits(data.build_full_trainset())
    scale = shared.trainset.rating_scale
    rows = {}
    for c in configs:
        algo = shared.fit(make_algo(c, *parameters[c["config"]], seed=None, rating_scale=scale))
        rows[c["config"]] = {"guarantee": row_label(guarantee_label(algo), methods[c["config"]]),
                             "privacy": privacy_label(algo)}
    return pd.DataFrame.from_dict(rows, orient="index", columns=["guarantee", "privacy"]
                                  ).rename_axis("config")


# ------------------------------------------------------- inner cross-validation
def as_dataset(trainset) -> Dataset:
    """The ratings of ``trainset`` as a Dataset with raw ids (to split it again)."""
    frame = pd.DataFrame([(trainset.to_raw_uid(u), trainset.to_raw_iid(i), r)
                          for u, i, r in trainset.all_ratings()],
                         columns=["user", "item", "rating"])
    return Dataset.load_from_df(frame, Reader(rating_scale=trainset.rating_scale))


def candidates(configs: Sequence[dict], k_grid: Sequence[int],
               shrinkage_grid: Sequence[float]) -> list[tuple[dict, int | None, float]]:
    """Every ``(config, k, λ)`` the inner cross-validation scores."""
    return [(config, k, shrinkage) for config in configs
            for k in (k_grid if tunes_k(config) else (None,))
            for shrinkage in (shrinkage_grid if tunes_shrinkage(config) else (0.0,))]


def choose_parameters(configs: Sequence[dict], trainset, k_grid: Sequence[int],
                      inner_folds: int, seed: int,
                      shrinkage_grid: Sequence[float] = SHRINKAGE_GRID, *,
                      score: Callable[[list, object, list], Iterable[tuple]]) -> pd.DataFrame:
    """Inner cross-validation on ``trainset`` alone (the `CROSS_VALIDATED`
    configurations).

    Parameters
    ----------
    configs : sequence of dict
        The configurations to tune.
    trainset : surprise.Trainset
        The outer fold's training part; nothing else is read.
    k_grid, shrinkage_grid : sequence
        The candidate ``k`` and λ.
    inner_folds, seed : int
        The inner ``KFold``.
    score : callable
        ``score(candidates, train, test)`` yields ``(config, k, λ, rmse)`` for each
        candidate fitted on ``train`` and scored on ``test``.

    Returns
    -------
    pandas.DataFrame
        One row per configuration, ``k`` and λ: ``inner_rmse`` (the mean over the
        inner folds), and ``chosen`` flagging the lowest (ties: the smaller ``k``, then
        the smaller λ).  Empty (same columns) without configurations.
    """
    columns = ["config", "k", "shrinkage", "inner_rmse", "chosen"]
    if not configs:
        return pd.DataFrame(columns=columns).astype({"chosen": bool})
    rows = []
    splits = KFold(n_splits=inner_folds, random_state=seed).split(as_dataset(trainset))
    scored = candidates(configs, k_grid, shrinkage_grid)
    for inner, (train, test) in enumerate(splits):
        for config, k, shrinkage, rmse in score(scored, train, test):
            rows.append({"config": config["config"], "k": k, "shrinkage": shrinkage,
                         "inner": inner, "inner_rmse": rmse})
    table = pd.DataFrame(rows).groupby(["config", "k", "shrinkage"], sort=False, dropna=False)
    table = table["inner_rmse"].mean().reset_index()
    best = table.sort_values(["inner_rmse", "k", "shrinkage"],
                             kind="stable").groupby("config").head(1)
    table["chosen"] = table.index.isin(best.index)
    return table[columns]


def parameter_label(k: int | None, shrinkage: float) -> str:
    """How ``inner_rmse`` names a candidate: ``"k=10"``, or ``"k=10 λ=4"``."""
    return f"k={k}" + (f" λ={shrinkage:g}" if shrinkage else "")


# ------------------------------------------------------------ over the folds
def attack_parameters(accuracy: pd.DataFrame) -> dict:
    """Per configuration, the ``(k, λ)`` chosen most often over the folds of
    ``accuracy`` (ties: the smaller ``k``, then the smaller λ; ``k`` None without
    neighbours).  A run saved before λ was chosen reads as λ = 0."""
    out = {}
    accuracy = accuracy.assign(shrinkage=accuracy.get("shrinkage", 0.0))
    for config, part in accuracy.groupby("config", sort=False):
        if part.k.isna().all():
            out[config] = (None, 0.0)
            continue
        counts = part.groupby(["k", "shrinkage"]).size().sort_index(kind="stable")
        k, shrinkage = counts.idxmax()
        out[config] = (int(k), float(shrinkage))
    return out


def chosen_by(accuracy: pd.DataFrame) -> dict:
    """Per configuration, how ``accuracy`` (`dprec.experiments.frontier.accuracy_table`)
    chose its hyper-parameters: its ``hyperparameters`` column.  A run saved before the
    column existed cross-validated every ``k``: `CROSS_VALIDATED` where a row has a
    ``k``, else `PUBLIC_RULE` (nothing to tune)."""
    if "hyperparameters" in accuracy:
        return accuracy.groupby("config", sort=False).hyperparameters.first().to_dict()
    tuned = accuracy.groupby("config", sort=False).k.apply(lambda k: k.notna().any())
    return {config: CROSS_VALIDATED if has_k else PUBLIC_RULE
            for config, has_k in tuned.items()}
