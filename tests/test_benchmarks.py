"""The benchmarks that compare dprec with other libraries run without those libraries."""

from __future__ import annotations

import csv
import os
import subprocess
import sys

from runs import ROOT


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


def test_bench_private_scale_quick_runs_every_model_and_writes_the_csv_and_plot(tmp_path):
    """`benchmarks/bench_private_scale.py --quick`: every private model, each in its own
    process, fits and answers the small shape's 20 % fold (10,000 ratings) from arrays; the
    CSV holds a row each with their figures (and whether factors were released) and the
    plot is written."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), os.environ.get("PYTHONPATH", "")]), "MPLBACKEND": "Agg"}
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_private_scale.py"), "--quick",
         "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=900, cwd=tmp_path, env=env,
        stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stderr
    assert "failed" not in result.stdout
    with (tmp_path / "private_scale.csv").open() as stream:
        rows = list(csv.DictReader(stream))
    # at this shape DPALS's size rule gives the effects the whole budget; "-forced" the factors
    assert [(row["model"], row["factors"]) for row in rows] == [
        ("DPBaseline", "-"), ("DPALS", "no"), ("DPItemKNN-factors", "no"),
        ("PrivateKNN-item-blocked", "-"), ("DPALS-forced", "yes"),
        ("DPItemKNN-factors-forced", "yes")]
    for row in rows:
        assert row["shape"] == "quick" and row["train"] == "40000" and row["test"] == "10000"
        assert 0.5 < float(row["rmse"]) < 2.0
        assert float(row["fit_s"]) > 0 and float(row["test_s"]) > 0
        assert float(row["total_s"]) == float(row["fit_s"]) + float(row["test_s"])
        assert 0 < float(row["data_mb"]) <= float(row["peak_mb"])
    assert (tmp_path / "private_scale.png").stat().st_size > 10_000
    assert "PrivateKNN-item-blocked  quick" in result.stdout
