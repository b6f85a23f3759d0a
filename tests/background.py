"""The test suite's two long, independent runs, started in the background.

The README's first command run as an offline newcomer would run it (a fresh virtual
environment, ``pip install``, the serial demo: about 100 s) and the notebooks executed in
quick mode (about 60 s) each use one process of their own.  ``conftest.py`` starts them as
soon as a test that needs them is collected, so they go on, mostly on the other core, while
the rest of the suite runs; ``tests/test_project.py`` and ``tests/test_notebooks.py`` wait
for them and check what they did.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
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


class NewcomerRun:
    """The README's first command, verbatim, started at once: in a temporary copy of the
    repository without ``.venv``, with no data variable set and an empty home.
    :meth:`result` waits for it; :meth:`stop` ends it and removes the copy."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="dprec-newcomer-"))
        self.repo = self.folder / "dprec"
        shutil.copytree(ROOT, self.repo, ignore=IGNORED)
        env = {key: value for key, value in os.environ.items() if key not in (
            "SURPRISE_DATA_FOLDER", "DPREC_LASTFM", "PYTHONPATH", "VIRTUAL_ENV")}
        env["HOME"] = str(self.folder / "home")
        self.log = self.folder / "log"
        with self.log.with_suffix(".out").open("w") as out, \
                self.log.with_suffix(".err").open("w") as err:
            # its own process group: stop() ends pip or the demo too, not only bash
            self.process = subprocess.Popen(["bash", "-c", readme_commands()[0]],
                                            cwd=self.repo, env=env, stdin=subprocess.DEVNULL,
                                            stdout=out, stderr=err, start_new_session=True)

    def result(self, timeout: float) -> tuple[int, str, str]:
        """``(exit status, stdout, stderr)`` once the command has finished."""
        code = self.process.wait(timeout=timeout)
        return (code, self.log.with_suffix(".out").read_text(),
                self.log.with_suffix(".err").read_text())

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


class NotebookRuns:
    """Every notebook executed in quick mode (``DPREC_QUICK=1``, the inline backend: the
    kernels' environment, not this process's), each in its own kernel working in a
    temporary folder (what a quick run writes is not left in ``notebooks/``), one after the
    other in a thread started at once.  :meth:`result` waits for them."""

    def __init__(self) -> None:
        self.env = {key: value for key, value in os.environ.items() if key != "MPLBACKEND"}
        self.env["DPREC_QUICK"] = "1"
        self.results: dict | None = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            self.results = asyncio.run(self._execute_all())
        except BaseException as error:  # raised by result(), in the test
            self.error = error

    async def _execute_all(self) -> dict:
        return {path: await self._execute(path) for path in NOTEBOOKS}

    async def _execute(self, path: Path) -> tuple:
        """(executed notebook, its error or None, the names it added to its own folder)
        for one notebook."""
        import nbclient
        import nbformat

        notebook = nbformat.read(path, as_version=4)
        before = set(os.listdir(path.parent))
        with tempfile.TemporaryDirectory(prefix="dprec-notebook-") as folder:
            client = nbclient.NotebookClient(notebook, timeout=600, kernel_name="python3",
                                             resources={"metadata": {"path": folder}})
            try:
                await client.async_execute(env=self.env)
            except Exception as error:      # reported by that notebook's test
                return notebook, error, sorted(set(os.listdir(path.parent)) - before)
        return notebook, None, sorted(set(os.listdir(path.parent)) - before)

    def result(self, timeout: float) -> dict:
        """path -> (executed notebook, its error or None, DPREC_QUICK of the kernels, the
        names the run added to ``notebooks/``)."""
        self.thread.join(timeout)
        if self.error is not None:
            raise self.error
        if self.results is None:
            raise TimeoutError(f"the notebooks did not finish within {timeout} s")
        return {path: (notebook, error, self.env["DPREC_QUICK"], added)
                for path, (notebook, error, added) in self.results.items()}
