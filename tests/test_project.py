"""The project's promises about itself: README commands, CI script, command line."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pandas as pd
import pytest
from runs import ROOT, readme_commands, run_as_newcomer


def test_readme_has_exactly_two_commands_and_ci_runs_the_test_one():
    commands = readme_commands()
    assert len(commands) == 2
    assert "dprec demo" in commands[0]
    assert "pytest" in commands[1]
    assert commands[1] in ROOT.joinpath(".ci", "run").read_text()


def test_demo_falls_back_to_synthetic_data_says_so_and_writes_the_table(tmp_path):
    env = {"SURPRISE_DATA_FOLDER": str(tmp_path / "empty"), "PATH": "/usr/bin:/bin"}
    # --quick with --dataset auto and no data: the fallback to the quick synthetic shape;
    # the folds run at once (--n-jobs 2); the serial full-size demo is the newcomer test's
    result = subprocess.run(
        [sys.executable, "-m", "dprec", "demo", "--quick", "--dataset", "auto", "--n-jobs",
         "2", "--out", str(tmp_path / "out")],
        capture_output=True, text=True, timeout=300, cwd=ROOT, env=env, check=True)
    assert "SURPRISE_DATA_FOLDER" in result.stderr and "synthetic" in result.stderr
    table = pd.read_csv(tmp_path / "out" / "demo.csv")
    assert set(table.columns) >= {"algo", "fold", "rmse", "mae", "fit_time", "test_time"}
    assert table["algo"].nunique() >= 3 and len(table) == 2 * table["algo"].nunique()
    assert table[["rmse", "mae"]].notna().all().all()
    knnbasic = table[table.algo.str.startswith("KNNBasic")].rmse.to_numpy()
    topk = table[table.algo.str.contains("top-k, item")].rmse.to_numpy()
    assert abs(knnbasic - topk).max() < 1e-9  # the same folds, the same predictions
    assert "synthetic" in result.stdout
    report = result.stdout[result.stdout.index("algorithm"):]
    assert report.count("RMSE") >= 2 and "lower is better" in report  # one table, read once
    assert "s/fold" in report and "faster" in report and "equal on every fold" in report
    # #51: the private column is what each fresh-noise report says of its worst user
    assert re.search(r"PNCF epsilon=1 .* ε = [\d.]+, δ = 1 per rating, as published", report)
    assert re.search(r"KNNBasic.*not private", report)
    # the end-to-end models beside the published selectors: their guarantee holds, per user
    assert re.search(r"DPItemKNN epsilon=1 .* ε = 1, δ = 1e-05 per user, holds", report)
    assert re.search(r"DPBaseline epsilon=1 .* ε = 1, δ = 1e-05 per user, holds", report)
    assert "user nbhd λ=4" in report and "user nbhd: the papers' semantics" in report


def test_the_demo_user_neighbourhood_is_not_worse_than_the_users_own_mean():
    """The demo's user-neighbourhood row (the papers' semantics) shrinks its neighbours'
    term towards the user's mean (the frontier's λ): on the demo's quick data it beats that
    mean, where the unshrunk centred rule it replaces lost to it by 0.13."""
    from dprec import PrivateKNN
    from dprec.cli import demo_algorithms
    from dprec.datasets import load_or_synthetic
    from dprec.evaluation import cross_validate_table

    data, _ = load_or_synthetic("synthetic", quick=True)
    [(name, algo)] = [(name, algo) for name, algo in demo_algorithms(10, 0).items()
                      if "user nbhd" in name]
    own_mean = PrivateKNN(k=10, sim_options={"name": "cosine"}, neighbourhood="user",
                          fallback="user_mean", neighbour_shrinkage=float("inf"),
                          verbose=False)
    table = cross_validate_table({name: algo, "the user's mean": own_mean}, data, n_folds=2)
    rmse = table.groupby("algo").rmse.mean()
    assert rmse[name] < rmse["the user's mean"], rmse


def _dprec(*args, env=None, timeout=300):
    return subprocess.run([sys.executable, "-m", "dprec", *args], capture_output=True,
                          text=True, timeout=timeout, cwd=ROOT, env=env)


def _dprec_all(*commands, env=None, timeout=300) -> list[subprocess.CompletedProcess]:
    """``python -m dprec`` with each argument list, all at once; their results in order."""
    processes = [subprocess.Popen([sys.executable, "-m", "dprec", *args], cwd=ROOT, env=env,
                                  text=True, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE) for args in commands]
    results = []
    try:
        for process in processes:
            out, err = process.communicate(timeout=timeout)
            results.append(subprocess.CompletedProcess(process.args, process.returncode,
                                                       out, err))
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.communicate()
    return results


def test_ordinary_mistakes_give_one_line_and_exit_2(tmp_path):
    """No traceback for a dataset without a local copy or an invalid configuration:
    one line naming the fix, exit status 2; ``--debug`` shows the traceback."""
    env = {**os.environ, "SURPRISE_DATA_FOLDER": str(tmp_path / "empty")}
    # three independent processes, run at once (each is mostly the import of dprec)
    offline, debug, invalid = _dprec_all(
        ["demo", "--dataset", "ml-100k", "--out", str(tmp_path)],
        ["demo", "--dataset", "ml-100k", "--debug", "--out", str(tmp_path)],
        ["cv", "--quick", "--algo", "ppns", "--sim", "rr_minhash", "--out", str(tmp_path)],
        env=env)
    assert offline.returncode == 2 and "Traceback" not in offline.stderr
    lines = offline.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dprec demo: error: MovieLens 100k")
    assert "SURPRISE_DATA_FOLDER" in lines[0]
    assert debug.returncode != 0 and "Traceback" in debug.stderr
    assert invalid.returncode == 2 and "Traceback" not in invalid.stderr
    assert invalid.stderr.strip().startswith("dprec cv: error: ")


@pytest.mark.parametrize("value", ["", "/proc/no/such/folder"])
def test_an_unusable_data_folder_is_explained_not_a_crash(value):
    """Surprise crashes on import for an empty or uncreatable SURPRISE_DATA_FOLDER; dprec
    drops it with a warning naming it, and the command line works."""
    env = {**os.environ, "SURPRISE_DATA_FOLDER": value}
    result = _dprec("--help", env=env)
    assert result.returncode == 0 and "usage: dprec" in result.stdout
    assert f"SURPRISE_DATA_FOLDER={value!r}" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("command", ["demo", "cv", "selectors", "backends", "sketches", "sjlt",
                                     "ranking", "attack", "frontier"])
def test_every_subcommand_has_help(command, capsys):
    from dprec.cli import main

    with pytest.raises(SystemExit) as exit_:
        main([command, "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert "usage" in out and "--out" in out


def test_experiment_subcommands_are_thin_fronts(tmp_path):
    run_cli("selectors", "--quick", "--out", str(tmp_path))
    assert (tmp_path / "selectors_cv.csv").is_file()


def run_cli(*args, timeout=600):
    return subprocess.run([sys.executable, "-m", "dprec", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT, check=True)


def test_cv_on_a_dask_cluster_equals_the_local_run(tmp_path):
    pytest.importorskip("dask.distributed")
    common = ["cv", "--quick", "--algo", "ppns", "--epsilons", "1", "5", "--n-jobs", "2",
              "--seed", "3"]          # --quick: synthetic data of 12,000 ratings, 2 folds, k 10
    # the two runs are independent: the local one (loky) goes on while the cluster starts
    with (tmp_path / "local.err").open("w") as err:
        local_run = subprocess.Popen([sys.executable, "-m", "dprec", *common, "--out",
                                      str(tmp_path / "local")], cwd=ROOT, text=True,
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=err)
    try:
        run_cli(*common, "--backend", "dask", "--out", str(tmp_path / "dask"))
        assert local_run.wait(timeout=600) == 0, (tmp_path / "local.err").read_text()[-3000:]
    finally:
        if local_run.poll() is None:
            local_run.kill()
            local_run.wait()
    local = pd.read_csv(tmp_path / "local" / "cv.csv")
    remote = pd.read_csv(tmp_path / "dask" / "cv.csv")
    assert list(local.columns[:7]) == ["algo", "epsilon", "fold", "rmse", "mae", "fit_time",
                                       "test_time"]
    scores = [c for c in local.columns if not c.endswith("_time")]
    pd.testing.assert_frame_equal(local[scores], remote[scores])
    assert len(local) == 4 and (tmp_path / "local" / "cv.png").is_file()


@pytest.mark.slow
def test_readme_commands_work_for_an_offline_newcomer(tmp_path):
    """The README's first command in a fresh virtual environment, in a temporary copy of
    the repository without ``.venv``, with no data variable set and an empty home: the
    demo falls back to synthetic data, says so, exits 0 and prints its report.  The
    second command is what CI runs verbatim on a clean checkout (checked above), so
    installing it here again would only repeat CI."""
    code, out, err, repo = run_as_newcomer(tmp_path)
    assert code == 0, err[-3000:]
    assert "synthetic" in err and "SURPRISE_DATA_FOLDER is not set" in err
    assert "lower is better" in out
    assert "KNNBasic's algorithm: RMSE equal on every fold" in out
    assert (repo / "results" / "demo.csv").is_file()
    # numba is installed with dprec; its first run compiles the kernels and says so
    assert "compiling dprec's kernels with Numba: once" in out
    assert re.search(r"compiled kernels ready in [\d.]+ s .*not in the timings", out)


def test_the_docs_list_every_command():
    """The command table of the docs (docs/command_line.md) left out frontier and scaling."""
    from dprec.cli import EXPERIMENTS

    text = ROOT.joinpath("docs", "command_line.md").read_text()
    listed = set(re.findall(r"^\| `(\w+)` \|", text, flags=re.M))
    assert listed == {"demo", "cv", *EXPERIMENTS}
