"""The frontier's table of configurations: fold means, the attack's gains per β, the
labels and the Pareto flags (`summary`), and the most resistant configuration per
accuracy level (`by_accuracy_level`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from . import hyperparameters as hp

__all__ = ["by_accuracy_level", "pareto", "summary"]


def pareto(cost: np.ndarray, loss: np.ndarray) -> np.ndarray:
    """Pareto-optimal points when both ``cost`` and ``loss`` are to be minimised: no other
    point is at most as large in both and smaller in one (NaN never optimal)."""
    cost, loss = np.asarray(cost, dtype=float), np.asarray(loss, dtype=float)
    valid = ~(np.isnan(cost) | np.isnan(loss))
    le = (cost[None, :] <= cost[:, None]) & (loss[None, :] <= loss[:, None])
    lt = (cost[None, :] < cost[:, None]) | (loss[None, :] < loss[:, None])
    dominated = (le & lt & valid[None, :]).any(axis=1)
    return valid & ~dominated


def summary(configs: Sequence[dict], accuracy: pd.DataFrame, attack: pd.DataFrame | None,
            guarantee: pd.DataFrame) -> pd.DataFrame:
    """One row per configuration: accuracy (fold means), ``k``, λ and how they were chosen
    (``hyperparameters``), the attack's pooled recovery and gain per β, the largest gain,
    the vulnerable share, the labels (`guarantee`: [`dprec.experiments.frontier.labels`][])
    and Pareto flags."""
    keys = ["config", "family", "similarity", "selector", "rule", "neighbourhood", "epsilon"]
    out = pd.DataFrame(configs).reindex(columns=keys)
    means = accuracy.groupby("config", sort=False)[
        ["rmse", "mae", "precision@10", "impossible", "vulnerable", "tau"]].mean()
    out = out.merge(means.reset_index(), on="config", how="left")
    parameters = hp.attack_parameters(accuracy)
    out["k"] = out.config.map({config: k for config, (k, _) in parameters.items()})
    out["shrinkage"] = out.config.map({config: lam for config, (_, lam) in parameters.items()})
    out["hyperparameters"] = out.config.map(hp.chosen_by(accuracy))
    out["guarantee"] = out.config.map(guarantee["guarantee"])
    out["privacy"] = out.config.map(guarantee["privacy"])
    if attack is not None and len(attack):
        gain = attack.assign(gain=attack.recovery_pooled - attack.baseline_item_mean)
        per_beta = gain.groupby(["config", "beta"]).agg(
            recovery=("recovery_pooled", "mean"), gain=("gain", "mean"), se=("gain", "sem"))
        for beta, part in per_beta.groupby(level="beta"):
            part = part.droplevel("beta")
            out[f"recovery_b{beta}"] = out.config.map(part.recovery)
            out[f"gain_b{beta}"] = out.config.map(part.gain)
        out["crowd"] = out.config.map(gain.groupby("config").baseline_item_mean.mean())
        # the attacker's best β (ties: the smaller), and the s.e. over the targets there
        best = per_beta.loc[per_beta.groupby(level="config").gain.idxmax()].droplevel("beta")
        out["max_gain"] = out.config.map(best.gain)
        out["max_gain_se"] = out.config.map(best.se)
        out["targets"] = out.config.map(gain.groupby("config").target.nunique())
    else:
        out["max_gain"] = np.nan
    out["pareto_rmse"] = pareto(out.rmse, out.max_gain)
    out["pareto_precision"] = pareto(-out["precision@10"], out.max_gain)
    return out


def by_accuracy_level(frontier: pd.DataFrame, width: float = 0.01) -> pd.DataFrame:
    """For each RMSE level (steps of ``width`` from the best attacked RMSE), the most
    resistant attacked configuration at least that accurate, and its guarantee."""
    attacked = frontier.dropna(subset=["max_gain", "rmse"])
    rows = []
    for level in np.arange(attacked.rmse.min() + width, attacked.rmse.max() + width, width):
        within = attacked[attacked.rmse <= level]
        best = within.loc[within.max_gain.idxmin()]
        rows.append({"rmse_at_most": round(float(level), 4), "config": best.config,
                     "rmse": best.rmse, "precision@10": best["precision@10"],
                     "max_gain": best.max_gain, "guarantee": best.guarantee,
                     "privacy": best.privacy})
    table = pd.DataFrame(rows)
    return table.drop_duplicates(subset=["config"], keep="first").reset_index(drop=True)
