"""The frontier's privacy axis: membership inference and the one-run ε of every configuration.

For each configuration of the frontier, with the ``(k, λ)`` it was attacked with, one
fit with canaries ([`membership_audit`][dprec.attacks.membership.membership_audit]:
200 canary users and 1,000 canary ratings, each included with probability ½, seeded)
gives

* ``mia_auc_user``, ``mia_tpr_user`` (TPR at 1 % FPR) and ``mia_auc_rating``: the
  attacks on the answers a user receives (the ``own`` view: what membership a
  configuration leaks to whoever sees a user's answers);
* ``empirical_epsilon_user`` and ``empirical_epsilon_rating``: the one-run lower bounds
  on a *pure* ε (δ = 0), at 95 % for the whole table (Bonferroni over its bounds), in the
  ``others`` view, the one every dprec claim covers (a user's own answers are shown to
  that user alone);
* ``own_epsilon_user``: the same bound in the ``own`` view;
* ``claimed_epsilon``, ``claimed_delta`` and ``claimed_unit``: the report's worst-user
  (ε, δ) that *holds*, for the finest unit it covers (``inf``, ``"none"``: no claim
  holds); ``published_epsilon``: the ε of an *as published* claim, where there is one;
* ``refuted`` (``published_refuted``): a claim that holds (as published) refuted: the
  audit's bound, computed at the claim's own δ (Steinke et al.'s δ term, which makes
  an (ε, δ) claim much harder to refute than a pure one), above its ε, for a unit it
  covers (a user-level claim covers the ratings too).

[`disagreements`][dprec.experiments.frontier_privacy.disagreements] lists where a
claim (that holds, or as published) is below what the audit measures;
[`plot_privacy`][dprec.experiments.frontier_privacy.plot_privacy] draws accuracy
against the empirical ε with each claim marked.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from joblib import Parallel, delayed
from tqdm import tqdm

from ..accountant.entries import Status, Unit
from ..attacks.membership import MembershipResult, membership_audit
from ..audit.one_run import one_run_audit
from ..datasets.arrays import ArrayDataset
from ..utils._plotting import save, subplots

__all__ = ["COLUMNS", "claims", "covering", "disagreements", "plot_privacy", "privacy_axis",
           "privacy_table", "refutes"]

#: the columns `privacy_table` adds to the frontier
COLUMNS = ("mia_auc_user", "mia_tpr_user", "mia_auc_rating", "empirical_epsilon_user",
           "empirical_epsilon_rating", "own_epsilon_user", "claimed_epsilon", "claimed_delta",
           "claimed_unit", "published_epsilon", "refuted", "published_refuted")


def claims(algo) -> dict:
    """A fitted model's claims: ``{"holds": {unit: (ε, δ)}, "published": {unit: (ε, δ)}}``,
    the worst user's ε and δ per unit of its report's headline, by status (empty without a
    report)."""
    heads = algo.privacy_report().headline() if hasattr(algo, "privacy_report") else []
    return {"holds": {head.unit: (head.epsilon, head.delta) for head in heads if head.holds},
            "published": {head.unit: (head.epsilon, head.delta) for head in heads
                          if head.status == str(Status.AS_PUBLISHED)}}


def covering(by_unit: dict, unit: str) -> list[tuple[Unit, float, float]]:
    """The claims among ``by_unit`` (``{Unit: (ε, δ)}``) that cover an attack on ``unit``
    (``"user"`` or ``"rating"``): a user-level claim covers a rating too."""
    units = (Unit.USER,) if unit == "user" else (Unit.RATING, Unit.USER)
    return [(u, *by_unit[u]) for u in units if u in by_unit and math.isfinite(by_unit[u][0])]


def refutes(result: MembershipResult, epsilon: float, delta: float,
            confidence: float) -> bool:
    """Whether the one-run audit of ``result``'s canaries, tested at the claim's δ
    (Steinke et al.'s δ term), bounds ε above the claim's ``epsilon`` with
    ``confidence``."""
    scores = result.scores
    audit = one_run_audit(scores["score"].to_numpy(), scores["included"].to_numpy(),
                          delta=delta, confidence=confidence)
    return audit.epsilon > epsilon


def _refuted(by_unit: dict, results: dict, confidence: float) -> bool:
    """Whether a claim among ``by_unit`` is refuted in the ``others`` view."""
    return any(refutes(results[unit, "others"], epsilon, delta, confidence)
               for unit in ("user", "rating")
               for _, epsilon, delta in covering(by_unit, unit))


def _finest(by_unit: dict) -> tuple[float, float, str]:
    """``(ε, δ, unit)`` of the finest unit's claim (``(inf, 0, "none")``: none)."""
    for unit, name in ((Unit.RATING, "rating"), (Unit.USER, "user")):
        if unit in by_unit:
            return (*by_unit[unit], name)
    return math.inf, 0.0, "none"


def _row(config: dict, make: Callable[[dict, int | None], object], data: ArrayDataset,
         user_canaries: int, rating_canaries: int, seed: int, confidence: float) -> dict:
    """The privacy columns of one configuration (`privacy_table`)."""
    fitted = []

    def factory():
        fitted.append(make(config, None))       # fresh noise: its report is its claim
        return fitted[-1]

    results = membership_audit(factory, data, user_canaries, rating_canaries,
                               confidence=confidence, random_state=seed)
    held = claims(fitted[0])                    # after every answer of the attack
    claimed, delta, unit = _finest(held["holds"])
    published = _finest(held["published"])[0]
    return {"mia_auc_user": results["user", "own"].roc.auc,
            "mia_tpr_user": results["user", "own"].roc.tpr_at_1pct,
            "mia_auc_rating": results["rating", "own"].roc.auc,
            "empirical_epsilon_user": results["user", "others"].audit.epsilon,
            "empirical_epsilon_rating": results["rating", "others"].audit.epsilon,
            "own_epsilon_user": results["user", "own"].audit.epsilon,
            "claimed_epsilon": claimed, "claimed_delta": delta, "claimed_unit": unit,
            "published_epsilon": published if math.isfinite(published) else math.nan,
            "refuted": _refuted(held["holds"], results, confidence),
            "published_refuted": _refuted(held["published"], results, confidence)}


def privacy_table(data, configs: Sequence[dict], make: Callable[[dict, int | None], object],
                  user_canaries: int = 200, rating_canaries: int = 1000, seed: int = 0,
                  n_jobs: int = 1, progress: bool = True,
                  confidence: float = 0.95) -> pd.DataFrame:
    """The privacy axis of every configuration, indexed by ``config`` (`COLUMNS`).

    Parameters
    ----------
    data : surprise Dataset or ArrayDataset
    configs : sequence of dict
        The frontier's configurations.
    make : callable
        ``make(config, seed)``: the configuration's unfitted model, with its ``(k, λ)``;
        called with ``seed=None`` (fresh noise), so that the attacked fit's report is a
        guarantee, read after every answer the attack asked for.
    user_canaries, rating_canaries : int
        Canaries per fit.
    seed : int
        Draws the canaries, their inclusion and the observers (the model's noise is
        fresh: the numbers vary a little between runs).
    n_jobs : int
        Configurations in parallel (joblib: on a Dask cluster inside
        `dprec.evaluation.parallel_backend("dask")`).
    confidence : float
        Of all the table's bounds together: each of its ``4 n`` bounds (two units, two
        views, ``n`` configurations) is computed at ``1 - (1 - confidence) / (4 n)``
        (Bonferroni), so that a correct claim is refuted anywhere in the table with
        probability at most ``1 - confidence``.
    """
    if min(user_canaries, rating_canaries) < 20:
        raise ValueError(f"user_canaries and rating_canaries must be 20 or more (both units "
                         f"are measured), got {user_canaries} and {rating_canaries}")
    data = data if isinstance(data, ArrayDataset) else ArrayDataset.from_surprise(data)
    each = 1.0 - (1.0 - confidence) / (4 * max(len(configs), 1))
    jobs = (delayed(_row)(config, make, data, user_canaries, rating_canaries, seed, each)
            for config in configs)
    rows = Parallel(n_jobs=n_jobs, return_as="generator")(jobs)
    rows = list(tqdm(rows, total=len(configs), desc="membership", disable=not progress))
    table = pd.DataFrame(rows, index=[config["config"] for config in configs],
                         columns=list(COLUMNS))
    table.index.name = "config"
    return table


def privacy_axis(data, configs: Sequence[dict], make: Callable[[dict, int | None], object],
                 canaries: tuple[int, int], seed: int, n_jobs: int, out: Path,
                 from_saved: bool = False) -> pd.DataFrame:
    """`privacy_table`, written to ``out/privacy.csv`` (read from it when ``from_saved``
    and it is there)."""
    saved = Path(out) / "privacy.csv"
    if from_saved and saved.is_file():
        table = pd.read_csv(saved, index_col="config")
        missing = {config["config"] for config in configs} - set(table.index)
        if not missing and set(COLUMNS) <= set(table.columns):
            return table
        print(f"{saved} lacks {len(missing) or 'columns'} of these configurations: the "
              "privacy axis is measured again", flush=True)
    table = privacy_table(data, configs, make, *canaries, seed, n_jobs)
    table.to_csv(saved)
    return table


def disagreements(frontier: pd.DataFrame) -> pd.DataFrame:
    """Where the claim and the measurement disagree: a claim that holds refuted
    (`refuted`), or an *as published* claim refuted (`published_refuted`), each by the
    one-run audit at the claim's own δ, in the view it covers, for a unit it covers.
    Columns: ``config``, ``rmse``, ``privacy``, the ε columns and ``disagreement``; empty
    when every claim stands."""
    refuted = frontier.refuted.eq(True)                 # a row without a measurement: no
    published = frontier.published_refuted.eq(True)
    kinds = np.select([refuted, published],
                      ["claim refuted", "as published: refuted by the measurement"],
                      default="")
    out = frontier.assign(disagreement=kinds)
    columns = ["config", "rmse", "privacy", "claimed_epsilon", "claimed_delta",
               "claimed_unit", "published_epsilon", "empirical_epsilon_user",
               "empirical_epsilon_rating", "own_epsilon_user", "mia_auc_user", "disagreement"]
    return out.loc[out.disagreement != "", [c for c in columns if c in out]]


def plot_privacy(frontier: pd.DataFrame, path: str | Path) -> None:
    """RMSE against the empirical ε (the larger of the user and rating bounds in the
    covered view; the ``own`` view's user bound in grey), each claimed ε marked by a
    cross on the same row; one colour per family."""
    fig, ax = subplots(figsize=(9, 6.5))
    colours = {"reference": "tab:grey", "knn": "tab:blue", "end-to-end": "tab:green"}
    measured = frontier[["empirical_epsilon_user", "empirical_epsilon_rating"]].max(axis=1)
    for family, part in frontier.groupby("family", sort=False):
        colour = colours.get(family, "tab:purple")
        ax.scatter(measured[part.index], part.rmse, s=18, color=colour, alpha=0.8,
                   label=f"{family}: measured (others' answers)")
        claimed = part[np.isfinite(part.claimed_epsilon)]
        if len(claimed):
            ax.scatter(claimed.claimed_epsilon, claimed.rmse, marker="x", s=28, color=colour,
                       label=f"{family}: claimed ε")
    ax.scatter(frontier.own_epsilon_user, frontier.rmse, s=10, color="0.6", alpha=0.5,
               label="measured on a user's own answers (no claim covers it)")
    ax.set_xlabel("ε (one-run lower bound at 95 %, or the report's claim)")
    ax.set_ylabel("RMSE")
    ax.set_title("Accuracy against measured and claimed privacy")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=2)   # off the data
    save(fig, path)
