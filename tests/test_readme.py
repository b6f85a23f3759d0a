"""The README's Quickstart, run as a newcomer runs it: offline, in a fresh interpreter."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from runs import ROOT

#: prepended to the Quickstart: no connection and no name lookup can be made (dprec
#: promises never to download data)
OFFLINE = '''\
import socket

def _offline(*args, **kwargs):
    raise OSError("network disabled by tests/test_readme.py")

socket.socket.connect = socket.socket.connect_ex = _offline
socket.getaddrinfo = socket.create_connection = _offline
'''


def quickstart_code() -> str:
    """The ``python`` blocks of the README's "Quickstart" section, in order, as one
    script (the later blocks use the names of the first)."""
    section = ROOT.joinpath("README.md").read_text().split("\n## Quickstart\n")[1]
    blocks = re.findall(r"```python\n(.+?)```", section.split("\n## ")[0], flags=re.DOTALL)
    assert blocks, "the README's Quickstart has no python block"
    return "\n".join(blocks)


def run_quickstart(tmp_path, data_folder: str) -> subprocess.CompletedProcess:
    """The Quickstart in a new interpreter with the network disabled, this checkout's
    dprec and ``SURPRISE_DATA_FOLDER=data_folder``."""
    script = tmp_path / "quickstart.py"
    script.write_text(OFFLINE + "\n" + quickstart_code())
    env = {**os.environ, "SURPRISE_DATA_FOLDER": data_folder, "HOME": str(tmp_path),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600,
                          stdin=subprocess.DEVNULL)


@pytest.mark.data
def test_quickstart_runs_offline_on_the_local_copy(tmp_path, ml100k):
    """With MovieLens 100k in SURPRISE_DATA_FOLDER, the Quickstart runs through offline:
    its cross-validation table, a prediction and the privacy report."""
    result = run_quickstart(tmp_path, os.environ["SURPRISE_DATA_FOLDER"])
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Mean" in result.stdout and "RMSE" in result.stdout


def test_quickstart_without_the_data_says_where_to_put_it(tmp_path):
    """Without a local copy (an empty SURPRISE_DATA_FOLDER) and offline, the Quickstart
    stops at once with dprec's one-line error naming SURPRISE_DATA_FOLDER: no download
    attempted, no chained network error."""
    empty = tmp_path / "data"
    empty.mkdir()
    result = run_quickstart(tmp_path, str(empty))
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("dprec.datasets.DatasetUnavailable: MovieLens 100k"), \
        result.stderr[-3000:]
    assert "SURPRISE_DATA_FOLDER" in last and str(empty) in last
    assert "During handling" not in result.stderr and "direct cause" not in result.stderr
    assert "URLError" not in result.stderr
    assert not any(empty.rglob("*"))                   # nothing downloaded or unpacked
