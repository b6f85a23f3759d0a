"""The command line's parser: valid arguments parse to their values, bad ones exit with 2."""

from __future__ import annotations

import contextlib
import io
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import CV_OPTIONS, DEMO_OPTIONS, fuzz

from dprec.cli import build_parser, run_cv, run_demo


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
        argv += ["--epsilon", *map(str, epsilons)]
        expected["epsilon"] = epsilons
    if command == "demo" and data.draw(st.booleans()):
        argv.append("--quick")
        expected["quick"] = True
    args = build_parser().parse_args(argv)
    assert args.command == command
    assert args.handler is {"demo": run_demo, "cv": run_cv}[command]
    for key, value in expected.items():
        assert getattr(args, key) == value, key


@fuzz(100)
@given(st.sampled_from([
    (["demo", "--folds", "two"], "--folds"), (["demo", "--k", "4.5"], "--k"),
    (["demo", "--dataset", "movielens"], "--dataset"), (["cv", "--algo", "svd"], "--algo"),
    (["cv", "--epsilon", "one"], "--epsilon"), (["cv", "--backend", "ray"], "--backend"),
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
    ["cv", "--k", "-3"], ["cv", "--folds", "0"], ["cv", "--epsilon", "0"],
    ["cv", "--epsilon", "nan"], ["cv", "--p", "1.5"], ["cv", "--seed", "-1"],
])
def test_cli_rejects_out_of_range_numbers(argv):
    message = parse_error(argv)
    assert re.search(rf"error: argument {re.escape(argv[1])}: ", message), message
