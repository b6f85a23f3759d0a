r"""The frontier's numbers that the README quotes, from the frontier's results: one source.

`headline` reads a run's ``frontier.csv`` (one row per configuration, as
[`dprec.experiments.frontier`][] writes it) and returns the figures the README's
"Results in brief" quotes: how many configurations and how many were attacked, the
references, the largest gain with co-rated cosine and the sketches, with `KNNBaseline`
and with the centred cosine, the end-to-end models' gain and cost, and the most accurate
configuration under each guarantee label. ``dprec frontier`` writes them next to its
tables (``headline.json``); the repository keeps the full run's in
``docs/frontier.json``, and `readme_region` writes the README's text from them, between
the markers `BEGIN` and `END`. ``tests/test_front_page.py`` checks that the README and
docs/frontier.md agree with ``docs/frontier.json``.

After a full run:

```sh
python -m dprec.experiments.front_page results/frontier/frontier.csv   # both files
python -m dprec.experiments.front_page            # the README from docs/frontier.json
python -m dprec.experiments.front_page --check    # exit status 1 if they differ
```
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

#: the README's generated region lies between these two lines
BEGIN = ("<!-- the frontier's numbers: written by `python -m dprec.experiments.front_page` "
         "from docs/frontier.json (template: dprec/experiments/front_page.py); not by hand -->")
END = "<!-- end of the frontier numbers -->"
#: the guarantee labels in the order of the README's table
ORDER = ("none", "as published", "in part", "holds")
#: how the tables name the similarities and selectors
SIMILARITY = {"cosine": "cosine", "centered_cosine": "centred cosine",
              "rr_minhash": "RR-MinHash", "noisy_minhash": "Noisy-MinHash", "sjlt": "SJLT",
              "gaussian_jl": "Gaussian JL"}
SELECTOR = {"topk": "top-k", "probabilistic": "probabilistic", "pncf": "PNCF", "ppns": "PPNS",
            "pncf_corrected": "PNCF corrected"}
#: the configuration whose RMSE the README sets against `KNNBaseline`'s: co-rated cosine
COSINE = "cosine/topk/baseline/item"


def _number(value, digits: int = 3) -> float | None:
    """``value`` rounded as quoted; None where it is missing (NaN)."""
    return None if value is None or pd.isna(value) else round(float(value), digits)


def describe(row: pd.Series) -> str:
    """A configuration as the tables name it: ``"centred cosine / PPNS / baseline / user,
    ε = 2, λ = 16"``, ``"`DPBaseline` (user), ε = 5"``, ``"`KNNBaseline`
    (pearson-baseline)"``."""
    epsilon = "" if pd.isna(row.epsilon) else f", ε = {float(row.epsilon):g}"
    if row.family == "knn":
        text = " / ".join([SIMILARITY.get(row.similarity, row.similarity),
                           SELECTOR.get(row.selector, row.selector), row.rule,
                           row.neighbourhood]) + epsilon
        if row.neighbourhood == "user" and not pd.isna(row.get("shrinkage")):
            text += ", λ = " + ("∞" if math.isinf(row.shrinkage) else f"{row.shrinkage:g}")
        return text
    if row.config == "KNNBaseline":
        return "`KNNBaseline` (pearson-baseline)"
    name, _, variant = row.config.split("/eps=")[0].partition(" (")   # "DPBaseline (user)"
    return f"`{name}`" + (f" ({variant}" if variant else "") + epsilon


def headline(frontier: pd.DataFrame, folds: int) -> dict:
    """The README's figures from a run's ``frontier.csv`` table (``folds`` outer folds),
    rounded as quoted (3 decimals); None for a figure the run has no configuration for
    (a ``--quick`` run has no baseline rule, hence no co-rated cosine against
    `KNNBaseline`)."""
    attacked = frontier.dropna(subset=["max_gain"])
    centred = attacked[attacked.similarity == "centered_cosine"]
    others = attacked[attacked.similarity != "centered_cosine"]
    rmse = frontier.set_index("config").rmse.reindex(["global mean", "BaselineOnly",
                                                      "KNNBaseline", COSINE])
    end_to_end = frontier[frontier.family == "end-to-end"]
    cost = end_to_end.rmse - rmse["BaselineOnly"]
    best = []
    for label in ORDER:
        rows = frontier[(frontier.guarantee == label) & frontier.rmse.notna()]
        if len(rows):
            row = rows.loc[rows.rmse.idxmin()]
            best.append({"guarantee": label, "configuration": describe(row),
                         "rmse": _number(row.rmse), "precision@10": _number(row["precision@10"]),
                         "largest_gain": None if pd.isna(row.max_gain)
                         else _number(row.max_gain)})
    return {
        "source": "a run's frontier.csv, by dprec.experiments.front_page.headline",
        "configurations": len(frontier), "attacked": len(attacked), "folds": int(folds),
        "pareto_rmse": int(frontier.get("pareto_rmse", pd.Series(dtype=bool)).sum()),
        "pareto_precision": int(frontier.get("pareto_precision", pd.Series(dtype=bool)).sum()),
        "targets": int(attacked.targets.max()) if len(attacked) else 0,
        "betas": sorted(int(c[len("gain_b"):]) for c in frontier if c.startswith("gain_b")),
        "epsilons": sorted(float(e) for e in frontier.epsilon.dropna().unique()),
        "global_mean_rmse": _number(rmse["global mean"]),
        "baseline_only_rmse": _number(rmse["BaselineOnly"]),
        "other_similarities": len(others), "other_largest_gain": _number(
            others[others.config != "KNNBaseline"].max_gain.max()),
        "knnbaseline_gain": _number(attacked.set_index("config").max_gain.get("KNNBaseline")),
        "cosine_rmse_cost": _number(rmse[COSINE] - rmse["KNNBaseline"]),
        "centred_cosine": len(centred), "centred_largest_gain": _number(centred.max_gain.max()),
        "end_to_end_largest_gain": _number(end_to_end.max_gain.max()),
        "end_to_end_cost": [_number(cost.min()), _number(cost.max())],
        "best": best, "privacy": privacy_figures(frontier)}


def privacy_figures(frontier: pd.DataFrame) -> dict | None:
    """The privacy axis's figures (`dprec.experiments.frontier_privacy`), None for a run
    without it: the configurations measured; the largest one-run bound in the view the
    claims cover (users' and ratings'); the claims that hold and those *as published*,
    and how many of each the audit refuted; the configurations whose own-view user AUC
    is at least 0.9, in all and among those whose guarantee holds."""
    if "empirical_epsilon_user" not in frontier:
        return None
    measured = frontier.dropna(subset=["empirical_epsilon_user"])
    holds = measured[measured.guarantee == "holds"]
    bounds = measured[["empirical_epsilon_user", "empirical_epsilon_rating"]].max(axis=1)
    claimed = np.isfinite(measured.claimed_epsilon.astype(float))
    published = measured.published_epsilon.notna()
    return {"measured": len(measured), "largest_bound": _number(bounds.max()),
            "claims": int(claimed.sum()), "refuted": int(measured.refuted.astype(bool).sum()),
            "published": int(published.sum()),
            "published_refuted": int(measured.published_refuted.astype(bool).sum()),
            "own_leak": int((measured.mia_auc_user >= 0.9).sum()),
            "own_leak_holds": int((holds.mia_auc_user >= 0.9).sum()),
            "holds_measured": len(holds)}


#: the README's region; the fields are `headline`'s, with ``rows`` its table's rows
TEMPLATE = """\
**The frontier** (`dprec frontier`, [docs/frontier.md](docs/frontier.md)) is dprec's main
comparison: {configurations:,} configurations on MovieLens 100k (every selector × similarity ×
prediction rule × neighbourhood semantics, at ε ∈ {{{epsilons}}}, and the end-to-end models),
each scored for RMSE and precision@10 (the share of the ten items recommended to a user
that they rated at least 3.5); the {attacked:,} that have neighbours are attacked with
{targets} targets and β ∈ {{{betas}}}. Each is labelled by its guarantee: it **holds** for
everything the model releases; it holds **in part** (for some outputs, such as the
private similarity sketches, while the predictions read raw ratings); it is a paper's
claim **as published**, which dprec's audits refute; or there is **none**.

![accuracy against the attack gain](docs/frontier.png)

The most accurate configuration under each label (references: the global mean scores
RMSE {global_mean_rmse:.3f} and `BaselineOnly` {baseline_only_rmse:.3f} on these {folds} \
folds):

| guarantee | most accurate configuration | RMSE | precision@10 | largest gain |
| --- | --- | ---: | ---: | ---: |
{rows}

- **On competitive recommenders the attack gains little, but with overlap-aware
  similarities.** Over the {other_similarities:,} attacked configurations without the \
centred cosine
  the largest gain is at most {other_largest_gain:.3f}, whatever the selector, \
similarity or ε, but
  for `KNNBaseline` with the pearson-baseline similarity, at {knnbaseline_gain:.3f} \
(co-rated cosine
  costs {cosine_rmse_cost:.3f} RMSE and removes it). The centred cosine, overlap-aware \
too, reaches
  {centred_largest_gain:.3f} over its {centred_cosine} configurations \
([docs/frontier.md](docs/frontier.md)).
- **The papers' selectors make no difference there.** PPNS and PNCF gain as much as
  top-k where a user's neighbours for an item are chosen among its raters (Surprise's
  semantics), and their ε claims do not hold ([docs/privacy.md](docs/privacy.md#audits)).
- **Only the end-to-end models have a guarantee that holds.** Their largest gain is at
  most {end_to_end_largest_gain:.3f}, below 0 or within one standard error of it at \
every ε; they are
  never worse than the user's own mean, and cost {cost_low:.3f}–{cost_high:.3f} RMSE \
against
  `BaselineOnly` at 943 users, less with more users
  ([docs/end_to_end.md](docs/end_to_end.md#accuracy-against-the-number-of-users)).
{privacy_bullet}"""

#: the bullet of the privacy axis (`privacy_figures`), when the run has it
PRIVACY = """\
- **Privacy measured, not only claimed.** Each of the {measured:,} configurations is fitted
  once more with canary users and ratings: in the view the claims cover (the answers to
  other users) the one-run audit's largest lower bound is ε ≥ {largest_bound:.2f}; it
  refutes {refuted} of the {claims} claims that hold and {published_refuted} of the \
{published} *as published*
  (dprec's neighbouring-dataset audits refute those; a bound below a claim says that these
  membership attacks did not refute it, not that it is tight).
  A user's own answers give membership away (user AUC ≥ 0.9) in {own_leak:,} \
configurations, {own_leak_holds} of
  the {holds_measured} that hold among them: shown to that user alone, outside every claim
  ([docs/frontier.md](docs/frontier.md#the-privacy-axis)).
"""


def readme_region(numbers: dict) -> str:
    """The README's text from `headline`'s figures (`TEMPLATE`), markers included."""
    rows = "\n".join(
        f"| {b['guarantee']} | {b['configuration']} | {b['rmse']:.3f} | "
        f"{b['precision@10']:.3f} | "
        + ("—" if b["largest_gain"] is None else f"{b['largest_gain']:.3f}") + " |"
        for b in numbers["best"])
    fields = {**numbers, "rows": rows, "cost_low": numbers["end_to_end_cost"][0],
              "cost_high": numbers["end_to_end_cost"][1],
              "epsilons": ", ".join(f"{e:g}" for e in numbers["epsilons"]),
              "betas": ", ".join(str(b) for b in numbers["betas"]),
              "privacy_bullet": "" if numbers.get("privacy") is None
              else PRIVACY.format(**numbers["privacy"])}
    return f"{BEGIN}\n{TEMPLATE.format(**fields)}{END}"


def with_region(readme: str, numbers: dict) -> str:
    """``readme`` with its region between `BEGIN` and `END` written from ``numbers``."""
    if readme.count(BEGIN) != 1 or readme.count(END) != 1:
        raise ValueError("the README must hold the frontier's markers once each: "
                         f"{BEGIN!r} and {END!r}")
    start, stop = readme.index(BEGIN), readme.index(END) + len(END)
    return readme[:start] + readme_region(numbers) + readme[stop:]


def main(argv: Sequence[str] | None = None) -> int:
    """Write ``docs/frontier.json`` from a run's ``frontier.csv`` (when given) and the
    README's region from ``docs/frontier.json``; ``--check`` only compares."""
    parser = argparse.ArgumentParser(prog="python -m dprec.experiments.front_page",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("frontier_csv", nargs="?", type=Path,
                        help="a full run's frontier.csv (default: keep docs/frontier.json)")
    parser.add_argument("--folds", type=int, default=3, help="its outer folds (default 3)")
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[2],
                        help="the repository (default: this checkout)")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit status 1 when the README differs")
    args = parser.parse_args(argv)
    stored, readme = args.root / "docs" / "frontier.json", args.root / "README.md"
    if args.frontier_csv is not None:
        numbers = headline(pd.read_csv(args.frontier_csv), args.folds)
        if not args.check:
            stored.write_text(json.dumps(numbers, indent=1, ensure_ascii=False) + "\n")
    else:
        numbers = json.loads(stored.read_text())
    text = readme.read_text()
    written = with_region(text, numbers)
    if args.check:
        print("README.md agrees" if written == text else "README.md differs")
        return int(written != text)
    readme.write_text(written)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
