"""The documentation site: it builds from the repository with warnings as errors (a
broken link or cross-reference, a docstring the API reference cannot parse), shows no
markup it did not render (Sphinx roles and directives, maths), leaves the notebooks' run
outputs out, and every public function, class and method has a docstring."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import os
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import pytest

import dprec

ROOT = Path(__file__).resolve().parents[1]
SITE_TOOLS = ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python",
              "mkdocs_jupyter")


def _missing_tools() -> list[str]:
    missing = []
    for name in SITE_TOOLS:
        try:
            found = importlib.util.find_spec(name) is not None
        except ModuleNotFoundError:
            found = False
        if not found:
            missing.append(name)
    return missing


needs_site_tools = pytest.mark.skipif(bool(_missing_tools()),
                                      reason="the docs extra is not installed")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The site built once for this module's tests: (the build's result, its directory)."""
    out = tmp_path_factory.mktemp("docs") / "site"
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d",
                             str(out)], cwd=ROOT, capture_output=True, text=True, timeout=600,
                            env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    return result, out


@needs_site_tools
def test_site_builds_with_warnings_as_errors(site):
    result, site = site
    assert result.returncode == 0, result.stderr[-4000:]
    reference = (site / "api" / "knn" / "index.html").read_text()
    assert "PrivateKNN" in reference and "storage" in reference   # rendered from docstrings
    # each parameter's type and default stand next to its name (a four-column table
    # pushed the Default column out of sight)
    assert re.search(r"<code>min_k</code></b>\s*\(<code>.*?</code>, default:\s*<code>1</code>",
                     reference, re.S)
    assert "stylesheets/extra.css" in reference
    for notebook in (ROOT / "notebooks").glob("*.ipynb"):
        assert (site / "notebooks" / notebook.stem / "index.html").is_file(), notebook.name
    assert not list((site / "notebooks").glob("*_out"))
    assert (site / "getting_started" / "index.html").is_file()
    for paper in ("ppns", "sketches", "sjlt", "ranking"):     # each shows its figures
        assert "<img" in (site / "reproductions" / paper / "index.html").read_text(), paper


# What a page shows literally when the site did not render it.  Code is left out first:
# there markup is shown on purpose (`:func:` in a sentence about Sphinx).
UNRENDERED = {
    "Sphinx role": re.compile(r":(?:py:)?(?:func|class|meth|attr|mod|data|obj|exc|const|math|"
                              r"ref|doc|term|cite):(?:\s*<code|`)"),
    "Sphinx directive": re.compile(r"(?<![\w.])\.\. [a-z][a-z-]*::"),
    "reST literal-block marker": re.compile(r"\S::\s*</p>"),
    "maths": re.compile(r"\$"),
}


def _shown_markup(page: str) -> list[str]:
    """The unrendered markup in a built page's text, outside code, scripts and maths."""
    text = re.sub(r"<(pre|script|style)\b.*?</\1>", " ", page, flags=re.S)
    text = re.sub(r'<(span|div) class="arithmatex">.*?</\1>', " ", text, flags=re.S)
    text = re.sub(r"<code\b.*?</code>", "<code>", text, flags=re.S)
    found = []
    for what, pattern in UNRENDERED.items():
        searched = re.sub(r"<[^>]+>", " ", text) if what == "maths" else text
        found += [f"{what}: ...{searched[max(m.start() - 40, 0):m.end() + 20]!r}"
                  for m in pattern.finditer(searched)]
    return found


@needs_site_tools
def test_site_shows_no_unrendered_markup(site):
    result, site = site
    assert result.returncode == 0, result.stderr[-4000:]
    shown = {}
    for page in sorted(site.rglob("*.html")):
        if page.relative_to(site).parts[0] == "notebooks":   # nbconvert's own pages
            continue
        found = _shown_markup(page.read_text())
        if found:
            shown[str(page.relative_to(site))] = found
    assert not shown, "\n".join(f"{page} ({len(found)}): {found[:3]}"
                                 for page, found in shown.items())


#: a line of a rendered paragraph that starts like a list item: Markdown read the item as
#: the paragraph's continuation (an item right after an indented block, no blank line)
SWALLOWED_ITEM = re.compile(r"\n[ \t]*(?:\d+\.|[-*+])[ \t]+\S")


def _swallowed_items(page: str) -> list[str]:
    """The list items of a built page rendered inside a paragraph."""
    text = re.sub(r"<(pre|script|style)\b.*?</\1>", " ", page, flags=re.S)
    return [paragraph[match.start():match.start() + 80].strip()
            for paragraph in re.findall(r"<p>(.*?)</p>", text, re.S)
            for match in SWALLOWED_ITEM.finditer(paragraph)]


@needs_site_tools
def test_every_list_item_renders_as_one(site):
    """Step 3 of DPBaseline's, DPItemKNN's and DPALS's procedures (docs/end_to_end.md)
    rendered inside step 2's paragraph, as did bullets after a table there and in an API
    page: Python-Markdown needs a blank line before an item that follows indented
    content."""
    result, site = site
    assert result.returncode == 0, result.stderr[-4000:]
    found = {str(page.relative_to(site)): items for page in sorted(site.rglob("*.html"))
             if page.relative_to(site).parts[0] != "notebooks"
             and (items := _swallowed_items(page.read_text()))}
    assert not found, found


@needs_site_tools
def test_no_build_script_is_copied_into_the_site(site):
    """notebooks/build_notebooks.py was published as a file of the site."""
    result, site = site
    assert result.returncode == 0, result.stderr[-4000:]
    assert not [str(path.relative_to(site)) for path in site.rglob("*.py")]


def _docstrings():
    """(where, text) of every docstring in dprec/ and experiments/: modules, classes,
    functions and the attribute docstrings the API reference shows."""
    for path in sorted([*(ROOT / "dprec").rglob("*.py"), *(ROOT / "experiments").glob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) \
                    and isinstance(node.value.value, str):
                yield f"{path.relative_to(ROOT)}:{node.lineno}", node.value.value


SPHINX = [re.compile(r":(?:py:)?[a-z]+:`"),                 # :func:`x`, :math:`x`
          re.compile(r"^\s*\.\. [a-z][a-z-]*::", re.M),     # .. math::, .. note::
          re.compile(r"\S::[ \t]*$", re.M)]                  # reST literal block: "text::"


def test_docstrings_are_markdown_not_sphinx_markup():
    """The API reference renders Markdown: $…$ maths, [`name`][] cross-references."""
    found = [f"{where}: {match.group(0).strip()!r}" for where, doc in _docstrings()
             for pattern in SPHINX for match in pattern.finditer(doc)]
    assert not found, "\n".join(found)


@needs_site_tools
def test_notebook_outputs_are_excluded_from_the_site():
    """What running a notebook leaves next to it (notebooks/.gitignore: figures, tables)
    is no page of the site."""
    import pathspec
    import yaml

    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    excluded = pathspec.GitIgnoreSpec.from_lines(config.get("exclude_docs", "").splitlines())
    for pattern in (ROOT / "notebooks" / ".gitignore").read_text().split():
        example = ("notebooks/" + pattern.replace("*", "figure")
                   + ("table.csv" if pattern.endswith("/") else ""))
        assert excluded.match_file(example), example


def _public_objects():
    """Every public function and class defined in a dprec module, with its methods."""
    for info in pkgutil.walk_packages(dprec.__path__, "dprec."):
        if any(part.startswith("_") for part in info.name.split(".")[1:]):
            continue
        module = importlib.import_module(info.name)
        names = getattr(module, "__all__", None) or [n for n in vars(module)
                                                     if not n.startswith("_")]
        for name in names:
            obj = getattr(module, name)
            if not (inspect.isfunction(obj) or inspect.isclass(obj)) or \
                    getattr(obj, "__module__", None) != module.__name__:
                continue
            yield f"{module.__name__}.{name}", obj
            if inspect.isclass(obj):
                for attr, member in vars(obj).items():
                    if not attr.startswith("_") and (inspect.isfunction(member)
                                                     or isinstance(member, property)):
                        yield f"{module.__name__}.{name}.{attr}", member


def test_every_public_name_has_a_docstring():
    missing = sorted(name for name, obj in _public_objects() if not inspect.getdoc(obj))
    assert not missing, missing
