"""The README is a front page, and the documentation in docs/ is where each fact lives:
the README stays short and readable, every link it gives leads somewhere, and every page
of docs/ is in the site's navigation."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

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
