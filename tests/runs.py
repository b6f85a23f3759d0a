"""The test suite's two long runs: the README's first command as an offline newcomer runs
it (a fresh virtual environment, ``pip install``, the serial demo: about 100 s), and a
notebook executed in quick mode (10–45 s each).  Each runs in the test that checks it, in a
process of its own; pytest-xdist spreads those tests over the cores with the rest."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: what the newcomer's copy of the repository leaves out (built or local state)
IGNORED = shutil.ignore_patterns(
    ".venv", ".git", "results", "mutants", "site", "__pycache__", ".ci", "*.egg-info",
    ".pytest_cache", ".hypothesis", ".ruff_cache", "build")
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def readme_commands() -> list[str]:
    """The ``sh`` blocks of the README's "Two commands" section, in order."""
    section = ROOT.joinpath("README.md").read_text().split("## Two commands")[1].split("\n## ")[0]
    return re.findall(r"```sh\n(.+?)\n```", section)


def run_as_newcomer(folder: Path, timeout: float = 1200) -> tuple[int, str, str, Path]:
    """The README's first command, verbatim, in a copy of the repository under ``folder``
    without ``.venv``, with no data variable set and an empty home: ``(exit status, stdout,
    stderr, the copy)``."""
    repo = folder / "dprec"
    shutil.copytree(ROOT, repo, ignore=IGNORED)
    env = {key: value for key, value in os.environ.items() if key not in (
        "SURPRISE_DATA_FOLDER", "DPREC_LASTFM", "PYTHONPATH", "VIRTUAL_ENV")}
    env["HOME"] = str(folder / "home")
    completed = subprocess.run(["bash", "-c", readme_commands()[0]], cwd=repo, env=env,
                               stdin=subprocess.DEVNULL, capture_output=True, text=True,
                               timeout=timeout)
    return completed.returncode, completed.stdout, completed.stderr, repo


def execute_notebook(path: Path) -> tuple:
    """``path`` executed in quick mode (``DPREC_QUICK=1``, the inline backend: the kernel's
    environment, not this process's) in its own kernel working in a temporary folder (what
    a quick run writes is not left in ``notebooks/``): ``(executed notebook, its error or
    None, DPREC_QUICK of the kernel, the names the run added to ``notebooks/``)``."""
    import nbclient
    import nbformat

    env = {key: value for key, value in os.environ.items() if key != "MPLBACKEND"}
    env["DPREC_QUICK"] = "1"
    notebook = nbformat.read(path, as_version=4)
    before = set(os.listdir(path.parent))
    error = None
    with tempfile.TemporaryDirectory(prefix="dprec-notebook-") as folder:
        client = nbclient.NotebookClient(notebook, timeout=600, kernel_name="python3",
                                         resources={"metadata": {"path": folder}})
        try:
            client.execute(env=env)
        except Exception as raised:      # reported by that notebook's test
            error = raised
    return notebook, error, env["DPREC_QUICK"], sorted(set(os.listdir(path.parent)) - before)
