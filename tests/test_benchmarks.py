"""The benchmarks that compare dprec with other libraries run without those libraries."""

from __future__ import annotations

import csv
import os
import subprocess
import sys

from background import ROOT


def test_bench_lenskit_quick_runs_and_says_lenskit_and_cornac_are_missing(tmp_path):
    """`benchmarks/bench_lenskit.py --quick` with LensKit and Cornac unimportable (stand-in
    packages that raise ImportError, whatever is installed): one line per missing library,
    then dprec's row alone in the table and the CSV (one configuration: one process)."""
    for name in ("lenskit", "cornac"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text(f"raise ImportError('no {name} here')\n")
    out = tmp_path / "table.csv"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(tmp_path), str(ROOT), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_lenskit.py"), "--quick",
         "--configs", "dprec", "lenskit", "cornac", "--based", "item", "--csv", str(out)],
        capture_output=True, text=True, timeout=600, cwd=tmp_path, env=env,
        stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "LensKit is not installed here (ImportError: no lenskit here)" in lines[0]
    assert "Cornac is not installed here (ImportError: no cornac here)" in lines[1]
    assert lines[2] == "comparing: dprec"
    with out.open() as stream:
        rows = list(csv.DictReader(stream))
    assert [(row["configuration"], row["based"]) for row in rows] == [("dprec", "item")]
    assert 0.5 < float(rows[0]["rmse"]) < 1.5 and float(rows[0]["seconds"]) > 0
    assert float(rows[0]["peak_mb"]) > 0 and rows[0]["folds_run"] == "2"
    assert "dprec            item" in result.stdout
    assert "parity" not in result.stdout          # nothing to compare dprec with
