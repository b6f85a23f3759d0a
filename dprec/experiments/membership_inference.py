"""Membership inference against every model: the attacks' AUC, their TPR at low FPR and the
one-run empirical ε, next to each model's claimed ε.

For Surprise's `KNNBasic` and `SVD` and each end-to-end private model (`DPBaseline`,
`DPItemKNN`, `DPALS`, `LocalKNN`) at every ε, with the item list chosen by private
partition selection (the default) or given as a public catalogue (``items=``): the
user-level and the rating-level attacks of
[`dprec.attacks.membership`][] (``attack="threshold"``), each in its two views
(``own``: the answers to the canary's own user; ``others``: only the answers to
other users), one fit each, and Zhang et al.'s shadow-model attack
([`dprec.attacks.shadow_membership`][]; ``attack="shadow"``, user level, ``own``
view: the canaries' recommendation lists; two fits, whose noise is drawn apart), with
their one-run lower bounds on ε at
95 % confidence for the whole table (Bonferroni over its bounds).

Every dprec model shows a user's answers to that user alone (its report says so),
so its claim covers the ``others`` view: `refuted` is true where that view's audit,
tested at the claim's own δ, bounds ε above the claimed ε for the unit (a user-level
claim covers the rating level too). ``empirical_epsilon`` is the bound for a pure ε
(δ = 0), which no claim with δ > 0 is held to.
The ``own`` view shows what a user's answers reveal to whoever sees them.

The claim of each row is read from the report of a copy fitted with fresh noise
(`random_state=None`); the attacked fits are seeded (experiments, reproducible), and
a seeded fit guarantees nothing.

Writes ``membership.csv`` under ``--out`` (default ``results/membership``):

    dprec membership --quick
    dprec membership
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from surprise import SVD, KNNBasic
from tqdm import tqdm

from ..accountant.entries import Unit
from ..attacks.membership import membership_audit
from ..attacks.shadow_membership import CLASSIFIERS, shadow_membership_attack
from ..datasets.arrays import ArrayDataset
from ..endtoend.dp_als import DPALS
from ..endtoend.dp_baseline import DPBaseline
from ..endtoend.dp_item_knn import DPItemKNN
from ..endtoend.local_knn import LocalKNN
from ._options import EPSILON, POSITIVE_INT, experiment_data, experiment_parser
from .frontier_privacy import claims, covering, refutes
from .privacy_labels import guarantee_label, privacy_label

__all__ = ["EPSILONS", "claim", "configurations", "main", "markdown_table", "run"]

#: the ε of the private models
EPSILONS: tuple[float, ...] = (0.5, 1.0, 2.0, 5.0)
#: the private models, by name
PRIVATE = {"DPBaseline": DPBaseline, "DPItemKNN": DPItemKNN, "DPALS": DPALS,
           "LocalKNN": LocalKNN}
#: the columns of the table, in order
COLUMNS = ("model", "epsilon", "items", "attack", "unit", "view", "mia_auc", "mia_tpr_1pct",
           "mia_tpr_01pct", "empirical_epsilon", "canaries", "claim", "guarantee",
           "claimed_epsilon", "claimed_delta", "claimed_unit", "covered", "refuted")


def configurations(epsilons: Sequence[float] = EPSILONS,
                   models: Sequence[str] = tuple(PRIVATE)) -> list[dict]:
    """The rows' models: ``KNNBasic``, ``SVD``, then each private model at each ε, with
    its items chosen by partition selection (``"selected"``) or public (``"public"``)."""
    rows = [{"model": "KNNBasic", "epsilon": math.inf, "items": "all"},
            {"model": "SVD", "epsilon": math.inf, "items": "all"}]
    rows += [{"model": model, "epsilon": float(epsilon), "items": items}
             for model in models for epsilon in epsilons for items in ("selected", "public")]
    return rows


def factory(config: dict, catalogue: list, random_state) -> Callable[[], object]:
    """A new unfitted model of the row ``config`` on each call."""
    if config["model"] == "KNNBasic":
        return lambda: KNNBasic(verbose=False)
    if config["model"] == "SVD":
        return lambda: SVD(random_state=random_state)
    model = PRIVATE[config["model"]]
    items = catalogue if config["items"] == "public" else None
    return lambda: model(epsilon=config["epsilon"], items=items, random_state=random_state)


def fresh_seeds(config: dict, catalogue: list, seed: int | None) -> Callable[[], object]:
    """A new unfitted model of the row ``config`` on each call, each with a seed of its own
    derived from ``seed`` (the shadow-model attack's shadow and target models must not
    share their noise: the attacker does not know the target's)."""
    calls = itertools.count(1)
    return lambda: factory(config, catalogue, None if seed is None else int(
        np.random.SeedSequence([seed, next(calls)]).generate_state(1)[0]))()


def claim(make: Callable[[], object], trainset) -> dict:
    """The claim of a model fitted with fresh noise on ``trainset``: its report's label,
    category, and its claims that hold, ``{Unit: (ε, δ)}``
    ([`claims`][dprec.experiments.frontier_privacy.claims])."""
    algo = make()
    if hasattr(algo, "random_state"):
        algo.random_state = None
    algo.fit(trainset)
    return {"claim": privacy_label(algo), "guarantee": guarantee_label(algo),
            "holds": claims(algo)["holds"]}


def run(data, epsilons: Sequence[float] = EPSILONS, models: Sequence[str] = tuple(PRIVATE),
        user_canaries: int = 200, rating_canaries: int = 1000, seed: int = 0,
        progress: bool = True, shadow_classifier: str = "logistic") -> pd.DataFrame:
    """The table: one row per (model, ε, items, attack, unit, view), `COLUMNS`; the
    shadow-model attack with ``user_canaries`` canaries (none below 2) and
    ``shadow_classifier``, its shadow and target models seeded apart (`fresh_seeds`)."""
    data = data if isinstance(data, ArrayDataset) else ArrayDataset.from_surprise(data)
    catalogue = data.item_ids.tolist()
    full = data.build_full_trainset()
    configs = configurations(epsilons, models)
    each = 1.0 - 0.05 / (5 * len(configs))      # 95 % for the whole table (Bonferroni)
    rows = []
    for config in tqdm(configs, desc="membership", disable=not progress):
        make = factory(config, catalogue, seed)
        claimed = claim(make, full)
        results = membership_audit(make, data, user_canaries, rating_canaries,
                                   confidence=each, random_state=seed)
        attacked = [("threshold", result) for result in results.values()]
        if user_canaries >= 2:   # the shadow and the target models: noise of their own
            attacked.append(("shadow", shadow_membership_attack(
                fresh_seeds(config, catalogue, seed), data, user_canaries,
                classifier=shadow_classifier, confidence=each, random_state=seed)))
        for attack, result in attacked:
            unit, view = result.unit, result.view
            covers = covering(claimed["holds"], unit) if view == "others" else []
            unit_of, epsilon, delta = min(covers, key=lambda c: c[1],
                                          default=(None, math.inf, 0.0))
            rows.append({**config, "attack": attack, **result.summary(),
                         "claim": claimed["claim"],
                         "guarantee": claimed["guarantee"], "claimed_epsilon": epsilon,
                         "claimed_delta": delta,
                         "claimed_unit": "user" if unit_of == Unit.USER else
                         "rating" if unit_of == Unit.RATING else "none",
                         "covered": bool(covers),
                         "refuted": any(refutes(result, e, d, each) for _, e, d in covers)})
    return pd.DataFrame(rows, columns=list(COLUMNS))


def markdown_table(table: pd.DataFrame) -> str:
    """The table of docs/membership.md: a row per model, ε and item list; per attack, unit
    and view, AUC / TPR at 1 % FPR / empirical ε; the claim."""
    columns = [("threshold", "user", "own"), ("threshold", "user", "others"),
               ("shadow", "user", "own"), ("threshold", "rating", "own"),
               ("threshold", "rating", "others")]
    lines = ["| model | ε | items | user, own | user, others | user, own (shadow) "
             "| rating, own | rating, others | claim |",
             "| --- | ---: | --- | --- | --- | --- | --- | --- | --- |"]
    for (model, epsilon, items), rows in table.groupby(["model", "epsilon", "items"],
                                                       sort=False):
        cell = {(row.attack, row.unit, row.view): f"{row.mia_auc:.2f} / "
                f"{row.mia_tpr_1pct:.2f} / {row.empirical_epsilon:.2f}"
                for row in rows.itertuples()}
        cells = [cell.get(column, "–") for column in columns]
        eps = "–" if math.isinf(epsilon) else f"{epsilon:g}"
        lines.append(f"| {model} | {eps} | {items} | " + " | ".join(cells)
                     + f" | {rows['claim'].iloc[0]} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> pd.DataFrame:
    """The command line of ``dprec membership``: run the experiment on ``argv`` and write
    its table under ``--out`` (``--help`` for the options)."""
    parser = experiment_parser(prog, __doc__, "results/membership", data=True)
    parser.add_argument("--quick", action="store_true",
                        help="a small run: synthetic data, ε = 1 only, DPBaseline and "
                             "LocalKNN, fewer canaries (the options given win)")
    parser.add_argument("--epsilons", type=EPSILON, nargs="+", default=list(EPSILONS),
                        quick=[1.0], help="ε of the private models (default 0.5 1 2 5)")
    parser.add_argument("--user-canaries", type=POSITIVE_INT, default=200, quick=60,
                        help="canary users per fit (default 200)")
    parser.add_argument("--rating-canaries", type=POSITIVE_INT, default=1000, quick=300,
                        help="canary ratings per fit (default 1000)")
    parser.add_argument("--shadow-classifier", choices=CLASSIFIERS, default="logistic",
                        help="the shadow-model attack's classifier (default logistic)")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    data, label = experiment_data(args)
    models = ("DPBaseline", "LocalKNN") if args.quick else tuple(PRIVATE)
    table = run(data, args.epsilons, models, args.user_canaries, args.rating_canaries,
                args.seed, shadow_classifier=args.shadow_classifier).assign(dataset=label)
    table.to_csv(out / "membership.csv", index=False)
    shown = table[["model", "epsilon", "items", "attack", "unit", "view", "mia_auc",
                   "mia_tpr_1pct", "empirical_epsilon", "claimed_epsilon", "refuted"]]
    print(shown.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    return table


if __name__ == "__main__":
    main()
