"""The command line's parser: valid arguments parse to their values, bad ones exit with 2."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import CV_OPTIONS, DEMO_OPTIONS, fuzz

from dprec import DPBaseline
from dprec.accountant.ledger import Unit
from dprec.cli import EXPERIMENTS, build_parser, main
from dprec.experiments._options import OptionParser


def parse_error(argv) -> str:
    """The exit code 2 and message of argparse rejecting ``argv``."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), pytest.raises(SystemExit) as info:
        build_parser().parse_args(argv)
    assert info.value.code == 2
    return err.getvalue()


@fuzz(200)
@given(st.sampled_from(["demo", "cv"]), st.data())
def test_cli_parses_valid_arguments(command, data):
    options = DEMO_OPTIONS if command == "demo" else CV_OPTIONS
    chosen = data.draw(st.lists(st.sampled_from(sorted(options)), unique=True))
    argv = [command]
    expected = {}
    for option in chosen:
        value = data.draw(options[option])
        argv += [option, str(value)]
        expected[option.lstrip("-").replace("-", "_")] = value
    if command == "cv" and data.draw(st.booleans()):
        epsilons = data.draw(st.lists(st.floats(0.01, 100.0), min_size=1, max_size=4))
        flag = data.draw(st.sampled_from(["--epsilons", "--epsilon"]))  # its former name
        argv += [flag, *map(str, epsilons)]
        expected["epsilons"] = epsilons
    if command == "demo" and data.draw(st.booleans()):
        argv.append("--quick")
        expected["quick"] = True
    args = build_parser().parse_args(argv)
    assert args.command == command
    assert args.handler == {"demo": "run_demo", "cv": "run_cv"}[command]
    for key, value in expected.items():
        assert getattr(args, key) == value, key


@fuzz(100)
@given(st.sampled_from([
    (["demo", "--folds", "two"], "--folds"), (["demo", "--k", "4.5"], "--k"),
    (["demo", "--dataset", "movielens"], "--dataset"), (["cv", "--algo", "svd"], "--algo"),
    (["cv", "--epsilons", "one"], "--epsilons"), (["cv", "--backend", "ray"], "--backend"),
    (["cv", "--neighbourhood", "both"], "--neighbourhood"), (["cv", "--p", "x"], "--p"),
    (["demo", "--seed"], "--seed"), (["bogus"], "command"), ([], "command"),
    (["cv", "--bogus", "1"], "--bogus"),
]))
def test_cli_rejects_malformed_arguments(case):
    argv, name = case
    message = parse_error(argv)
    assert re.search(rf"error: .*(?<![\w-]){re.escape(name)}(?![\w-])", message), message


@pytest.mark.parametrize("argv", [
    ["demo", "--k", "0"], ["demo", "--folds", "1"], ["demo", "--n-jobs", "0"],
    ["cv", "--k", "-3"], ["cv", "--folds", "0"], ["cv", "--epsilons", "0"],
    ["cv", "--epsilons", "nan"], ["cv", "--p", "1.5"], ["cv", "--seed", "-1"],
    ["cv", "--epsilon", "0"],
])
def test_cli_rejects_out_of_range_numbers(argv):
    message = parse_error(argv)
    assert re.search(rf"error: argument {re.escape(argv[1])}: ", message), message


def test_attack_takes_the_common_option_names(tmp_path):
    """``--dataset`` everywhere (``--data`` still accepted by ``attack``), and
    ``--data-path`` next to it."""
    import argparse

    from dprec.experiments import attack_resistance

    captured, parse = {}, argparse.ArgumentParser.parse_args
    path = str(tmp_path / "u.data")
    (tmp_path / "u.data").write_text("1\t1\t5\t0\n")

    def stop(self, args=None, namespace=None):
        captured["args"] = parse(self, args, namespace)
        raise SystemExit(0)

    for option in ("--dataset", "--data"):
        with pytest.MonkeyPatch.context() as patch, pytest.raises(SystemExit):
            patch.setattr(argparse.ArgumentParser, "parse_args", stop)
            attack_resistance.main([option, "ml-100k", "--data-path", path])
        assert captured["args"].dataset == "ml-100k" and captured["args"].data_path == path
    for command in ("demo", "cv"):
        args = build_parser().parse_args([command, "--data-path", path, "--quick",
                                          "--dataset", "auto"])
        assert args.data_path == path and args.quick


def test_plots_leave_a_running_backend_alone(tmp_path):
    """The experiments draw on pyplot-free figures: a notebook's backend is not switched
    (they used to call matplotlib.use("Agg"))."""
    import matplotlib
    import pandas as pd

    from dprec.cli import plot_cv

    before = matplotlib.get_backend()
    matplotlib.use("svg")
    try:
        table = pd.DataFrame({"algo": ["ppns"] * 4, "epsilon": [1.0, 1.0, 2.0, 2.0],
                              "rmse": [1.0, 1.1, 0.9, 0.95], "mae": [0.8, 0.9, 0.7, 0.75]})
        plot_cv(table, tmp_path / "cv.png")
        assert matplotlib.get_backend() == "svg"
        assert (tmp_path / "cv.png").stat().st_size > 1000
    finally:
        matplotlib.use(before)


class Parsed(Exception):
    """Raised with a command's options once parsed, before its run."""


@pytest.mark.parametrize("command", ["demo", "cv", *EXPERIMENTS])
def test_a_quick_run_writes_apart_from_the_full_results(command, tmp_path, monkeypatch):
    """`--quick` without `--out` writes under `results/quick/`, never into the folder of
    the full run the notebooks and the documentation read (`dprec frontier --quick` used
    to replace `results/frontier`, and the notebook showed its numbers as the full run's)."""
    parse = OptionParser.parse_known_args

    def parsed(self, args=None, namespace=None):
        namespace, rest = parse(self, args, namespace)
        if self.prog == f"dprec {command}" and hasattr(namespace, "out"):   # not the stub
            raise Parsed(namespace.out)
        return namespace, rest

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(OptionParser, "parse_known_args", parsed)
    folders = []
    for argv in ([command], [command, "--quick"]):
        with pytest.raises(Parsed) as info:
            main(argv)
        folders.append(Path(info.value.args[0]))
    full, quick = folders
    assert full.parts[0] == "results" and "quick" not in full.parts
    assert quick == Path("results", "quick", *full.parts[1:])
    with pytest.raises(Parsed) as info:
        main([command, "--quick", "--out", "mine"])
    assert info.value.args[0] == "mine"


# ------------------------------ issue #51, point 4: every label comes from the report
class EveryUserOutside(DPBaseline):
    """A `DPBaseline` whose report leaves every user outside the guarantee (ε = ∞): its
    label must say so, whatever the epsilon given."""

    def fit(self, trainset):
        super().fit(trainset)
        report = self.privacy_report()
        report.out_of_scope(Unit.USER, np.ones(report.n_users, dtype=bool),
                            "every user, in this test")
        return self


def test_the_demo_labels_rows_with_what_the_report_computes():
    """`dprec demo` labelled its rows "ε=1 per user, holds" from the epsilon given, even
    for a model whose report said ε = ∞ (users outside) or void."""
    from dprec import MallowsRanker, PrivateKNN, datasets
    from dprec.cli import demo_privacy

    data = datasets.synthetic(120, 60, 3000, random_state=0)
    labels = demo_privacy({
        "outside": EveryUserOutside(epsilon=1.0, random_state=0),
        "void": MallowsRanker(epsilon=200.0, mechanism="laplace", random_state=0),
        "pncf": PrivateKNN(k=5, selector="pncf", epsilon=1.0, random_state=0,
                           verbose=False),
        "top-k": PrivateKNN(k=5, random_state=0, verbose=False)}, data, 2, 0)
    assert labels["outside"].startswith("ε = ∞ per user: no guarantee for any user (")
    assert "holds" not in labels["outside"]
    assert labels["void"] == "ε = 200 per ranking swap, void"
    composed = re.fullmatch(r"ε = ([\d.]+), δ = 1 per rating, as published", labels["pncf"])
    assert composed and float(composed.group(1)) > 1.0           # composed, not the 1 given
    assert labels["top-k"] == "not private"


def test_cv_labels_each_epsilon_with_what_the_report_computes(tmp_path, capsys):
    """`dprec cv` printed the epsilon given as the run's ε; its table and CSV now carry
    what the fresh-noise report of each configuration computes."""
    import pandas as pd

    assert main(["cv", "--quick", "--algo", "pncf", "--epsilons", "1", "2", "--folds", "2",
                 "--no-progress", "--out", str(tmp_path)]) == 0
    table = pd.read_csv(tmp_path / "cv.csv")
    labels = table.groupby("epsilon").privacy.unique()
    assert all(len(label) == 1 for label in labels)
    for epsilon, (label,) in labels.items():
        composed = re.fullmatch(r"ε = ([\d.]+), δ = 1 per rating, as published", label)
        assert composed and float(composed.group(1)) > epsilon
    printed = capsys.readouterr().out
    assert "epsilon = 1, 2 given" in printed
    assert all(label in printed for (label,) in labels)
