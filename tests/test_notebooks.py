"""The notebooks: committed executed, every plotting cell showing its figure, and every
one still executing in quick mode (``DPREC_QUICK=1``) from ``notebooks/``."""

from __future__ import annotations

import re

import pytest
from runs import NOTEBOOKS, execute_notebook

#: a code cell that draws: it must show an image
PLOTTING = re.compile(r"plt\.subplots|\.plot\(|\bImage\(")


def plotting_cells_without_image(notebook) -> list[int]:
    """Indices of the code cells that draw a figure and show no image."""
    return [index for index, cell in enumerate(notebook.cells)
            if cell.cell_type == "code" and PLOTTING.search(cell.source)
            and not any("image/png" in output.get("data", {}) for output in cell.outputs)]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_committed_notebook_is_executed_and_shows_its_figures(path):
    nbformat = pytest.importorskip("nbformat")
    notebook = nbformat.read(path, as_version=4)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert all(cell.execution_count for cell in code), "re-run build_notebooks.py --execute"
    assert not plotting_cells_without_image(notebook)
    assert not [o for cell in code for o in cell.outputs if o.output_type == "error"]
    assert "quick mode" not in "".join(o.get("text", "") for o in code[0].outputs)
    shown = "".join(o.get("text", "") for cell in code for o in cell.outputs)
    assert "similarity matrix" not in shown, "Surprise's fitting messages: fit verbose=False"
    assert path.stat().st_size < 600_000, "trim the outputs (images are meant to be small)"


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_executes_in_quick_mode(path):
    pytest.importorskip("nbformat")
    pytest.importorskip("nbclient")
    notebook, error, quick, added = execute_notebook(path)
    assert not added, f"the quick run wrote {added} into notebooks/, not its own folder"
    if error is not None:
        raise error
    errors = [output for cell in notebook.cells if cell.cell_type == "code"
              for output in cell.outputs if output.output_type == "error"]
    assert not errors
    assert not plotting_cells_without_image(notebook), "a plotting cell showed no figure"
    assert "quick mode" in "".join(o.get("text", "") for o in [
        cell for cell in notebook.cells if cell.cell_type == "code"][0].outputs)
    assert quick == "1"


def test_there_is_a_notebook_per_reproduction():
    names = {p.stem for p in NOTEBOOKS}
    assert {"accuracy_vs_security", "ppns_reproduction", "ranking_reproduction",
            "sketches_reproduction", "sjlt_reproduction"} <= names


def test_committed_notebooks_are_written_from_build_notebooks():
    """Each committed notebook's cells are the sources in notebooks/build_notebooks.py
    (edited there, written by it): the frontier notebook's introduction, which says which
    run its saved outputs come from, had been edited in the notebook only, and the next
    build would have put back "583 configurations"."""
    import importlib.util

    nbformat = pytest.importorskip("nbformat")
    script = NOTEBOOKS[0].parent / "build_notebooks.py"
    spec = importlib.util.spec_from_file_location("build_notebooks", script)
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    assert {p.name for p in NOTEBOOKS} == set(build.NOTEBOOKS)
    for path in NOTEBOOKS:
        written = [cell[3:] if cell.startswith("md:") else cell
                   for cell in build.NOTEBOOKS[path.name]]
        committed = [cell.source for cell in nbformat.read(path, as_version=4).cells]
        assert committed == written, path.name
