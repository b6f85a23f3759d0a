"""The README is a front page, and the documentation in docs/ is where each fact lives:
the README stays short and readable, every link it gives leads somewhere, and every page
of docs/ is in the site's navigation."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
LINK = re.compile(r"\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6} +(.+?) *$", re.MULTILINE)
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)


def _prose(text: str) -> str:
    """The text without its fenced code blocks (a `#` there is a comment, not a heading)."""
    return FENCE.sub("", text)


def _github_anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to dashes."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _mkdocs_anchor(heading: str) -> str:
    """Python-Markdown's default ``toc`` slug, which the site's anchors use."""
    text = unicodedata.normalize("NFKD", heading).encode("ascii", "ignore").decode()
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def _anchors(path: Path, slug) -> set[str]:
    return {slug(h) for h in HEADING.findall(_prose(path.read_text()))}


def test_readme_is_a_front_page():
    lines = README.read_text().splitlines()
    assert len(lines) <= 300, f"README.md has {len(lines)} lines: move detail to docs/"
    long = [n for n, line in enumerate(lines, 1) if len(line) > 200]
    assert not long, f"README.md lines over 200 characters: {long}"
    headings = HEADING.findall(_prose(README.read_text()))
    for needed in ("Two commands for a fresh machine", "Quickstart",
                   "Which configuration should I use?"):
        assert needed in headings, needed


def test_every_link_of_the_readme_leads_somewhere():
    own = _anchors(README, _github_anchor)
    for target in LINK.findall(_prose(README.read_text())):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        path, _, anchor = target.partition("#")
        if not path:
            assert anchor in own, f"README.md links to a missing section: #{anchor}"
            continue
        linked = (ROOT / path).resolve()
        assert linked.exists(), f"README.md links to a missing file: {path}"
        if anchor and linked.suffix == ".md":
            slug = _mkdocs_anchor if DOCS in linked.parents else _github_anchor
            assert anchor in _anchors(linked, slug), f"{path} has no section #{anchor}"


def test_every_page_of_the_docs_is_in_the_site_and_stands_alone():
    nav = (ROOT / "mkdocs.yml").read_text()
    for page in DOCS.rglob("*.md"):
        relative = page.relative_to(DOCS)
        if relative.parts[0] == "notebooks":     # the notebooks' folder, linked in
            continue
        assert f": {relative.as_posix()}" in nav, f"docs/{relative} is not in mkdocs.yml's nav"
        text = page.read_text()
        assert "../shared" not in text and "/work/" not in text, f"docs/{relative}"


# ------------------------------------------------ the numbers: one source, the results
def _numbers() -> dict:
    import json

    return json.loads((DOCS / "frontier.json").read_text())


def test_the_readme_quotes_the_frontier_as_its_results_record():
    """The README's frontier paragraph, table and bullets are written from
    docs/frontier.json (`python -m dprec.experiments.front_page`): it said 587
    configurations and "at most 0.043 whatever the similarity" while the run on
    docs/frontier.md had 671 and the centred cosine at 0.104."""
    from dprec.experiments import front_page

    readme = README.read_text()
    assert readme.count(front_page.BEGIN) == 1, "run python -m dprec.experiments.front_page"
    assert front_page.with_region(readme, _numbers()) == readme, \
        "README.md differs from docs/frontier.json: python -m dprec.experiments.front_page"


def test_the_frontier_page_quotes_the_same_run():
    """docs/frontier.md reports the run that docs/frontier.json records: its counts, the
    largest gains and the most accurate configuration under each label."""
    numbers, page = _numbers(), (DOCS / "frontier.md").read_text()
    flat = " ".join(page.split())
    assert f"That is {numbers['configurations']} configurations" in flat
    assert f"each of the {numbers['attacked']} that have neighbours" in flat
    assert (f"Over the {numbers['other_similarities']} attacked configurations of the other "
            f"similarities, the largest gain is at most {numbers['other_largest_gain']:.3f}, "
            f"except for `KNNBaseline`, at {numbers['knnbaseline_gain']:.3f}; over the centred "
            f"cosine's {numbers['centred_cosine']} it reaches "
            f"{numbers['centred_largest_gain']:.3f}") in flat
    for best in numbers["best"]:
        gain = "—" if best["largest_gain"] is None else f"{best['largest_gain']:.3f}"
        row = re.compile(rf"^\| {best['guarantee']} \| [^|]+ \| {best['rmse']:.3f} \| "
                         rf"{best['precision@10']:.3f} \| {gain} \|$", re.MULTILINE)
        assert row.search(page), best


def test_the_headline_is_computed_from_the_frontier_table():
    """`headline` reads a frontier.csv: counts, references, the largest gains without the
    centred cosine (KNNBaseline apart), with it, the end-to-end models' gain and cost, and
    the most accurate configuration per label, named as the tables name them."""
    import numpy as np
    import pandas as pd

    from dprec.experiments import front_page

    nan = np.nan
    columns = ["config", "family", "similarity", "selector", "rule", "neighbourhood",
               "epsilon", "shrinkage", "rmse", "precision@10", "max_gain", "targets",
               "guarantee", "gain_b1", "gain_b8"]
    rows = [
        ["global mean", "reference", None, None, None, None, nan, nan, 1.1264, .58, nan, nan,
         "none", nan, nan],
        ["BaselineOnly", "reference", None, None, None, None, nan, nan, 0.9481, .73, nan, nan,
         "none", nan, nan],
        ["KNNBaseline", "reference", None, None, None, None, nan, nan, 0.9351, .74, 0.169, 50,
         "none", .1, .169],
        ["cosine/topk/baseline/item", "knn", "cosine", "topk", "baseline", "item", nan, 0.0,
         0.9432, .73, 0.023, 50, "none", .02, .023],
        ["rr_minhash/ppns/basic/user/eps=2", "knn", "rr_minhash", "ppns", "basic", "user", 2.0,
         np.inf, 0.9401, .70, 0.041, 50, "as published", .04, .041],
        ["centered_cosine/pncf_corrected/means/user/eps=5", "knn", "centered_cosine",
         "pncf_corrected", "means", "user", 5.0, 16.0, 0.9600, .71, 0.104, 50, "in part", .1,
         .104],
        ["DPItemKNN/eps=5", "end-to-end", None, None, None, None, 5.0, nan, 0.9831, .68, 0.012,
         50, "holds", .01, .012],
        ["DPALS/eps=0.5", "end-to-end", None, None, None, None, 0.5, nan, 1.0442, .60, nan, nan,
         "holds", nan, nan]]
    numbers = front_page.headline(pd.DataFrame(rows, columns=columns), folds=3)
    assert numbers["configurations"] == 8 and numbers["attacked"] == 5
    assert numbers["betas"] == [1, 8] and numbers["epsilons"] == [0.5, 2.0, 5.0]
    assert (numbers["global_mean_rmse"], numbers["baseline_only_rmse"]) == (1.126, 0.948)
    assert numbers["other_similarities"] == 4 and numbers["other_largest_gain"] == 0.041
    assert numbers["knnbaseline_gain"] == 0.169 and numbers["cosine_rmse_cost"] == 0.008
    assert (numbers["centred_cosine"], numbers["centred_largest_gain"]) == (1, 0.104)
    assert numbers["end_to_end_largest_gain"] == 0.012
    assert numbers["end_to_end_cost"] == [0.035, 0.096]
    assert [(b["guarantee"], b["configuration"]) for b in numbers["best"]] == [
        ("none", "`KNNBaseline` (pearson-baseline)"),
        ("as published", "RR-MinHash / PPNS / basic / user, ε = 2, λ = ∞"),
        ("in part", "centred cosine / PNCF corrected / means / user, ε = 5, λ = 16"),
        ("holds", "`DPItemKNN`, ε = 5")]
    assert front_page.describe(pd.Series({"config": "DPBaseline (user)/eps=5", "epsilon": 5.0,
                                          "family": "end-to-end"})) == "`DPBaseline` (user), ε = 5"
    region = front_page.readme_region(numbers)
    assert "8 configurations" in region and "| holds | `DPItemKNN`, ε = 5 | 0.983 |" in region
    assert all(len(line) <= 200 for line in region.splitlines())


def test_the_notebook_shows_the_run_the_docs_quote():
    """The frontier notebook's saved outputs come from the run that docs/frontier.json
    records (its outputs were once from an older, 587-configuration run): the counts of
    configurations and of Pareto-optimal ones that its first table cell prints."""
    nbformat = pytest.importorskip("nbformat")
    numbers = _numbers()
    notebook = nbformat.read(ROOT / "notebooks" / "accuracy_vs_security.ipynb", as_version=4)
    printed = "".join(output.get("text", "") for cell in notebook.cells
                      if cell.cell_type == "code" for output in cell.outputs)
    counts = re.search(r"(\d+) configurations; Pareto-optimal for RMSE: (\d+), for "
                       r"precision@10: (\d+)", printed)
    assert counts, "the notebook prints no frontier counts: build_notebooks.py --execute"
    assert tuple(map(int, counts.groups())) == (
        numbers["configurations"], numbers["pareto_rmse"], numbers["pareto_precision"])


def test_the_privacy_figures_count_what_the_axis_measured():
    """`privacy_figures` reads the privacy axis's columns: the configurations measured, the
    largest bound over both units, the claims (finite) and those refuted, the *as
    published* ones, and the own-view leaks (user AUC ≥ 0.9); None without the axis."""
    import numpy as np
    import pandas as pd

    from dprec.experiments import front_page

    nan, inf = np.nan, np.inf
    frame = pd.DataFrame({
        "guarantee": ["none", "as published", "holds", "holds", "none"],
        "empirical_epsilon_user": [0.0, 0.4, 0.0, 0.1, nan],
        "empirical_epsilon_rating": [0.2, 0.0, 0.3, 0.0, nan],
        "claimed_epsilon": [inf, inf, 1.0, 2.0, nan],
        "published_epsilon": [nan, 83.5, nan, nan, nan],
        "refuted": [False, False, False, True, False],
        "published_refuted": [False, True, False, False, False],
        "mia_auc_user": [1.0, 0.95, 0.5, 0.91, nan]})
    assert front_page.privacy_figures(frame) == {
        "measured": 4, "largest_bound": 0.4, "claims": 2, "refuted": 1, "published": 1,
        "published_refuted": 1, "own_leak": 3, "own_leak_holds": 1, "holds_measured": 2}
    assert front_page.privacy_figures(frame.drop(columns="empirical_epsilon_user")) is None
