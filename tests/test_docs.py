"""The documentation site: it builds from the repository with warnings as errors (a
broken link or cross-reference, a docstring the API reference cannot parse), and every
public function, class and method has a docstring."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import pkgutil
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


@pytest.mark.skipif(bool(_missing_tools()), reason="the docs extra is not installed")
def test_site_builds_with_warnings_as_errors(tmp_path):
    site = tmp_path / "site"
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d",
                             str(site)], cwd=ROOT, capture_output=True, text=True, timeout=600,
                            env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert result.returncode == 0, result.stderr[-4000:]
    reference = (site / "api" / "knn" / "index.html").read_text()
    assert "PrivateKNN" in reference and "storage" in reference   # rendered from docstrings
    for notebook in (ROOT / "notebooks").glob("*.ipynb"):
        assert (site / "notebooks" / notebook.stem / "index.html").is_file(), notebook.name
    assert (site / "getting_started" / "index.html").is_file()
    for paper in ("ppns", "sketches", "sjlt", "ranking"):     # each shows its figures
        assert "<img" in (site / "reproductions" / paper / "index.html").read_text(), paper


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
