"""The Python examples of docs/getting_started.md run as written, on the local
MovieLens 100k (a newcomer's script from the docs alone: cross-validate the private
models next to Surprise's, print their reports and a user's top 10)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "getting_started.md"


def _examples() -> list[str]:
    return re.findall(r"```python\n(.+?)```", PAGE.read_text(), re.S)


def test_the_page_has_the_newcomers_script():
    script = next(code for code in _examples() if "recommend_batch" in code)
    for name in ("DPBaseline", "DPItemKNN", "DPALS", "KNNBasic", "SVD", "cross_validate",
                 "privacy_report"):
        assert name in script
    assert len(script.strip().splitlines()) <= 25


@pytest.mark.data
@pytest.mark.parametrize("number", range(len(_examples())))
def test_each_example_runs_as_written(number, ml100k, tmp_path):
    completed = subprocess.run([sys.executable, "-c", _examples()[number]], cwd=tmp_path,
                               env={**os.environ, "MPLBACKEND": "Agg"}, capture_output=True,
                               text=True, timeout=600)
    out = completed.stdout
    assert completed.returncode == 0, f"{completed.stderr[-3000:]}\n--- stdout:\n{out[-3000:]}"
    if "recommend_batch" in _examples()[number]:
        assert out.count("Guarantee for everything the model releases: ε = 1") == 3, out
        for name in ("KNNBasic", "SVD", "DPBaseline", "DPItemKNN", "DPALS"):
            assert re.search(rf"^{name} \[('\d+', ){{9}}'\d+'\]$", out, re.M), (name, out)
