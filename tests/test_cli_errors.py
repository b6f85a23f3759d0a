"""The command line answers every mistake in one line, exit status 2, before a run starts.

`no_run` lets a command parse its options and stops it where its run would begin
(`RunStarted`): a mistake must be caught at parse time, without loading data or
fitting anything. The property test draws malformed values for every option of every
subcommand, read from the parsers themselves (so a new option is covered, and one
taking a bare `int` or `float` fails the test).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import fuzz

import dprec
from dprec import cli, datasets
from dprec.experiments import _options as OPTIONS
from dprec.experiments import (
    attack_resistance,
    backends_cv,
    demo_cv,
    end_to_end,
    frontier,
    implicit_feedback,
    jaccard_sketches,
    selectors_cv,
    sjlt_variance,
    users_scaling,
)

COMMANDS = ["demo", "cv", *cli.EXPERIMENTS]
ROOT = Path(__file__).resolve().parents[1]


class RunStarted(Exception):
    """Raised where a command's run would begin: its options were all accepted."""


@contextlib.contextmanager
def no_run(parsers: list | None = None):
    """Stop every command after parsing (`RunStarted`); append each parser used to
    `parsers`."""
    parse_args, parse_known = argparse.ArgumentParser.parse_args, \
        argparse.ArgumentParser.parse_known_args

    def parsed(self, args=None, namespace=None):
        parse_args(self, args, namespace)
        raise RunStarted(self.prog)

    def known(self, args=None, namespace=None):
        if parsers is not None:
            parsers.append(self)
        return parse_known(self, args, namespace)

    def handler(args):
        raise RunStarted(args.command)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(argparse.ArgumentParser, "parse_args", parsed)
        patch.setattr(argparse.ArgumentParser, "parse_known_args", known)
        patch.setattr(cli, "run_demo", handler)
        patch.setattr(cli, "run_cv", handler)
        yield


def run_main(argv: list[str]) -> tuple[object, str]:
    """`(exit status, stderr)` of `dprec argv` in-process; `RunStarted` propagates."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            status = cli.main(argv)
        except SystemExit as exit_:
            status = exit_.code
    return status, err.getvalue()


def usage_error(argv: list[str]) -> str:
    """The one-line error of `dprec argv`, caught before any run (exit status 2)."""
    with no_run():
        status, err = run_main(argv)
    assert status == 2, (argv, status, err)
    assert "Traceback" not in err and err.endswith("\n") and err.count("\n") == 1, err
    assert not re.search(r"invalid \w+ value", err), err     # argparse's name of a type
    command = argv[0] if argv and argv[0] in COMMANDS else None
    assert err.startswith(f"dprec {command}: error: " if command else "dprec: error: "), err
    return err.strip()


def parser_of(command: str) -> argparse.ArgumentParser:
    """The parser `dprec command` reads its options with."""
    parsers: list = []
    with no_run(parsers), pytest.raises(RunStarted):
        run_main([command, "--out", "/tmp"])
    return [p for p in parsers if p.prog == f"dprec {command}"][-1]


# ---------------------------------------------------------------------------
# the cases, each a regression test
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("folder", ["/dev/null/x", "/proc/dprec-forbidden/x", __file__])
def test_an_unusable_output_folder_is_refused_before_the_run(command, folder):
    message = usage_error([command, "--quick", "--out", folder])
    assert message.startswith(f"dprec {command}: error: argument --out: cannot write "
                              f"results to the folder {folder!r}"), message


def test_checking_an_output_folder_creates_nothing_on_its_path(tmp_path, monkeypatch):
    """Two processes parsing the same default `results/cv` in one directory (the test
    workers) raced: the first created `results` to probe it, the second then failed
    ("a file is in the way") or found it removed."""
    from dprec.experiments._options import output_folder

    monkeypatch.chdir(tmp_path)
    made: list = []
    real_mkdir = Path.mkdir

    def recording_mkdir(self, *args, **kwargs):
        made.append(self.name)
        return real_mkdir(self, *args, **kwargs)

    monkeypatch.setattr(Path, "mkdir", recording_mkdir)
    assert output_folder("results/cv") == "results/cv"
    assert made == [] and list(tmp_path.iterdir()) == []
    (tmp_path / "results").mkdir()          # another process made it meanwhile: still fine
    assert output_folder("results/cv") == "results/cv"


@pytest.mark.parametrize("argv", [
    ["attack", "--quick", "--k", "0"], ["attack", "--quick", "--targets", "0"],
    ["endtoend", "--quick", "--epsilons", "-1"], ["endtoend", "--epsilons", "1", "-2"],
    ["endtoend", "--targets", "0"], ["selectors", "--quick", "--ks", "0"],
    ["frontier", "--quick", "--folds", "1"], ["backends", "--quick", "--folds", "0"],
    ["sjlt", "--quick", "--reps", "0"], ["sketches", "--quick", "--reps", "0"],
    ["sketches", "--quick", "--dataset", "lastfm", "--data-path", "/nonexistent"],
    ["demo", "--data-path", "/nonexistent/u.data"], ["ranking", "--folds", "1"],
    ["sjlt", "--reps", "-1"], ["scaling", "--epsilons", "nan"], ["audit", "--seed", "-1"],
    ["frontier", "--inner-folds", "1"], ["attack", "--n-known", "0"],
])
def test_invalid_values_are_refused_at_parse_time(argv):
    message = usage_error(argv)
    option = next(arg for arg in reversed(argv) if arg.startswith("--") and arg != "--quick")
    assert f"error: argument {option}: " in message, message


@pytest.mark.parametrize("argv, message", [
    (["cv", "--epsilons", "abc"],
     "dprec cv: error: argument --epsilons: expected a finite number > 0, got 'abc'"),
    (["ranking", "--folds", "1"],
     "dprec ranking: error: argument --folds: expected a number of folds >= 2, got '1'"),
    (["sjlt", "--reps", "-1"],
     "dprec sjlt: error: argument --reps: expected a whole number >= 1, got '-1'"),
    (["demo", "--k", "99999999999"], "dprec demo: error: argument --k: expected a whole "
                                     "number >= 1, at most 2147483647, got '99999999999'"),
    (["cv", "--bogus", "1"], "dprec cv: error: unrecognized arguments: --bogus 1"),
    (["cv", "--quick", "--data-path", __file__], "dprec cv: error: argument --data-path: "
     "not read on synthetic data (--quick or --dataset synthetic); add --dataset ml-100k to "
     "read it, or drop --data-path"),
])
def test_errors_are_one_readable_line(argv, message):
    assert usage_error(argv) == message


def test_knnbasic_with_a_sketch_is_one_line_not_surprises_name_error(tmp_path):
    status, err = run_main(["cv", "--quick", "--algo", "knnbasic", "--sim", "rr_minhash",
                            "--out", str(tmp_path)])
    assert status == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith("dprec cv: error: --sim rr_minhash is one of dprec's sketches"), err


@pytest.mark.parametrize("module, name, argv, read", [
    (attack_resistance, "run", ["--k", "7", "--targets", "3"], lambda a, k: (a[2], a[5])),
    (end_to_end, "run", ["--epsilons", "3", "--folds", "4"],
     lambda a, k: (list(k["epsilons"]), k["n_folds"])),
    (selectors_cv, "run", ["--ks", "7", "--neighbourhoods", "user", "--epsilons", "3"],
     lambda a, k: (list(k["ks"]), list(k["neighbourhoods"]), list(k["epsilons"]))),
    (backends_cv, "run", ["--folds", "4"], lambda a, k: k["n_folds"]),
    (frontier, "accuracy_table", ["--folds", "4", "--k-grid", "7"], lambda a, k: (a[2], a[3])),
    (users_scaling, "run", ["--epsilons", "3"], lambda a, k: a[1]),
    (sjlt_variance, "run", ["--reps", "7"], lambda a, k: k["reps"]),
    (jaccard_sketches, "run", ["--reps", "7"], lambda a, k: k["reps"]),
    (implicit_feedback, "run", ["--reps", "7", "--epsilons", "3"],
     lambda a, k: (k["reps"], list(k["epsilons"]))),
])
def test_the_values_given_win_over_quick(module, name, argv, read, tmp_path):
    """`--quick` sets the options the user left out, never the ones given."""
    expected = {"run": {attack_resistance: (7, 3), end_to_end: ([3.0], 4),
                        selectors_cv: ([7], ["user"], [3.0]), backends_cv: 4,
                        users_scaling: (3.0,), sjlt_variance: 7, jaccard_sketches: 7,
                        implicit_feedback: (7, [3.0])},
                "accuracy_table": {frontier: (4, (7,))}}[name][module]
    calls: list = []

    def record(*args, **kwargs):
        calls.append((args, kwargs))
        raise RunStarted(name)

    with pytest.MonkeyPatch.context() as patch, pytest.raises(RunStarted):
        patch.setattr(module, name, record)
        module.main(["--quick", "--out", str(tmp_path), *argv])
    assert read(*calls[0]) == expected


def test_cv_and_demo_read_the_values_given_with_quick(tmp_path):
    calls: list = []

    def record(configurations, make, data, n_folds, **options):
        calls.append((make(**configurations[0]).k, n_folds))
        raise RunStarted("grid_table")

    with pytest.MonkeyPatch.context() as patch, pytest.raises(RunStarted):
        patch.setattr(demo_cv, "grid_table", record)
        cli.main(["cv", "--quick", "--k", "7", "--folds", "3", "--out", str(tmp_path)])
    assert calls == [(7, 3)]


def test_a_data_path_given_is_read_or_refused(tmp_path):
    """`auto` falls back to synthetic data only when no path was given."""
    with pytest.raises(datasets.DatasetUnavailable, match="path given"):
        datasets.load_or_synthetic("auto", path=tmp_path)


# ---------------------------------------------------------------------------
# property: malformed values for every option of every subcommand
# ---------------------------------------------------------------------------

def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=8)
NOT_A_NUMBER = TEXT.filter(lambda s: not s.lstrip().startswith("-") and not _is_float(s))
NOT_FINITE = st.sampled_from(["nan", "inf", "-inf", "1e999", "NaN", "-1e999"])


def _huge(high: int) -> st.SearchStrategy:
    return st.one_of(st.integers(high + 1, 10**30).map(str), st.just("9" * 5000))


def _ints(low: int, high: int = OPTIONS.MAX_COUNT) -> st.SearchStrategy:
    """Whole numbers below `low` or above `high`, decimals and text."""
    return st.one_of(st.integers(max_value=low - 1).map(str), _huge(high), NOT_A_NUMBER,
                     st.floats(0.1, 1e6).filter(lambda x: x != int(x)).map(str), NOT_FINITE)


BAD = {
    OPTIONS.POSITIVE_INT: _ints(1),
    OPTIONS.FOLDS: _ints(2),
    OPTIONS.SEED: _ints(0, OPTIONS.MAX_SEED),
    OPTIONS.N_JOBS: st.one_of(st.just("0"), _huge(OPTIONS.MAX_COUNT), NOT_A_NUMBER,
                              NOT_FINITE),
    OPTIONS.EPSILON: st.one_of(st.floats(max_value=0.0, allow_nan=False).map(repr),
                               st.integers(max_value=0).map(str), NOT_A_NUMBER, NOT_FINITE),
    OPTIONS.PROBABILITY: st.one_of(st.floats(max_value=0.0, allow_nan=False).map(repr),
                                   st.floats(min_value=1.0, exclude_min=True).map(repr),
                                   NOT_A_NUMBER, NOT_FINITE),
    OPTIONS.existing_path: TEXT.map(lambda s: f"/nonexistent-dprec/{s}"),
    OPTIONS.output_folder: st.one_of(
        TEXT.map(lambda s: f"/dev/null/{s}"), st.just(__file__), st.just("a\x00b"),
        TEXT.filter(lambda s: "/" not in s and s not in ("", ".", ".."))
            .map(lambda s: f"/proc/dprec-{s}/x")),
}


def _checked_options(command: str) -> dict[str, argparse.Action]:
    """The options of `dprec command` that take a value, by flag."""
    return {action.option_strings[-1]: action for action in parser_of(command)._actions
            if action.option_strings and action.nargs != 0}


CHECKED = {command: _checked_options(command) for command in COMMANDS}


@pytest.mark.parametrize("command", COMMANDS)
def test_every_option_taking_a_number_or_path_is_checked(command):
    """No option parses a bare `int`/`float` (which lets 0, -1 and NaN through)."""
    bare = [flag for flag, action in CHECKED[command].items() if action.type in (int, float)]
    assert bare == []
    assert CHECKED[command]["--out"].type is OPTIONS.output_folder


def _bad_value(action: argparse.Action) -> st.SearchStrategy | None:
    if action.type in BAD:
        return BAD[action.type]
    if action.choices is not None:
        return TEXT.filter(lambda s: s.lower() not in action.choices
                           and not s.lstrip().startswith("-"))
    return None


@fuzz(300)
@given(command=st.sampled_from(COMMANDS), data=st.data())
def test_malformed_values_are_one_line_and_exit_2(command, data):
    """Any malformed value, anywhere among valid options: exit status 2, one line on
    stderr naming the option, no traceback, no run started."""
    options = {flag: action for flag, action in CHECKED[command].items()
               if _bad_value(action) is not None}
    flag = data.draw(st.sampled_from(sorted(options)), label="option")
    value = data.draw(_bad_value(options[flag]), label="value")
    argv = [command, flag, value]
    if options[flag].nargs == "+" and data.draw(st.booleans()):
        argv = [command, flag, "3", value]     # a valid value first
    if data.draw(st.booleans()):
        argv.insert(1, "--quick")
    message = usage_error(argv)
    # a negative number is a value, "-1e+16" and "-inf" included (argparse took them for
    # options: "expected one argument", or "unrecognized arguments" after a valid value)
    assert message.startswith(f"dprec {command}: error: argument {flag}: "), message


@pytest.mark.parametrize("command", COMMANDS)
def test_every_subcommand_parses_its_defaults(command):
    with no_run(), pytest.raises(RunStarted):
        run_main([command, "--quick", "--out", "/tmp"])


def test_the_installed_command_prints_one_line():
    """The real process: `python -m dprec`, stderr of one line and exit status 2."""
    # both at once: each process is mostly the import of dprec
    processes = [subprocess.Popen([sys.executable, "-m", "dprec", *argv], cwd=ROOT, text=True,
                                  stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE)
                 for argv in (["sjlt", "--reps", "-1"], ["cv", "--out", "/dev/null/x"])]
    for process in processes:
        out, err = process.communicate(timeout=120)
        assert process.returncode == 2 and err.count("\n") == 1, err
        assert "Traceback" not in err and out == ""


# ---------------------------------------------------------------------------
# issue #37: the command line's consistency, each a regression test
# ---------------------------------------------------------------------------

def stop_at(name: str):
    """A stand-in for the function `name` where a run starts: raises `RunStarted`."""
    def stop(*args, **kwargs):
        raise RunStarted(name)
    return stop


def checked_error(argv: list[str], module, name: str = "run") -> str:
    """The one-line error of `dprec argv` caught after parsing, before `module.name` (the
    run) starts: exit status 2, no traceback."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(module, name, stop_at(name))
        status, err = run_main(argv)
    assert status == 2 and err.count("\n") == 1 and "Traceback" not in err, (argv, err)
    return err.strip()


@pytest.mark.parametrize("argv", [
    ["frontier", "--epsilons", "-1e+16"], ["frontier", "--epsilons", "1", "-1e+16"],
    ["cv", "--epsilons", "-inf"], ["endtoend", "--epsilons", "2", "-1E5"],
    ["selectors", "--ks", "-1e+16"], ["scaling", "--epsilons", "-.5e-3"],
])
def test_a_negative_number_in_scientific_notation_is_a_value(argv):
    """argparse read "-1e+16" as an option: "expected at least one argument", or
    "unrecognized arguments" after a valid value, instead of the value's check."""
    message = usage_error(argv)
    assert message == (f"dprec {argv[0]}: error: argument {argv[1]}: expected "
                       f"{'a whole number >= 1' if argv[1] == '--ks' else 'a finite number > 0'}"
                       f", got '{argv[-1]}'")


@pytest.mark.parametrize("content", [b"root:x:0:0:root:/root:/bin/bash\n", b"\x7fELF\xd0\x00\xff"])
def test_sketches_checks_a_wrong_lastfm_file_before_the_run(tmp_path, content):
    """A file that is not Last.fm's failed after the synthetic part, with a KeyError."""
    wrong = tmp_path / "user_artists.dat"
    wrong.write_bytes(content)
    message = checked_error(["sketches", "--quick", "--dataset", "lastfm", "--data-path",
                             str(wrong), "--out", str(tmp_path)], jaccard_sketches)
    assert message.startswith(f"dprec sketches: error: {wrong} "), message
    assert "user_artists.dat" in message.split(str(wrong), 1)[1], message


def test_sketches_reads_one_dataset_from_data_path_as_the_others_do(tmp_path):
    message = checked_error(["sketches", "--data-path", __file__, "--out", str(tmp_path)],
                            jaccard_sketches)
    assert message == ("dprec sketches: error: argument --data-path: the file of one dataset: "
                       "add --dataset lastfm or --dataset ml-100k")
    assert "--dataset {auto,lastfm,ml-100k,synthetic}" in parser_of("sketches").format_usage()


@pytest.mark.parametrize("given", [["--dataset", "ml-100k"], ["--data-path", __file__],
                                   ["--quick", "--dataset", "synthetic"]])
def test_endtoend_refuses_a_dataset_its_ml_1m_shape_would_not_read(given, tmp_path):
    message = checked_error(["endtoend", "--shape", "ml-1m", *given, "--out", str(tmp_path)],
                            end_to_end)
    assert message.startswith("dprec endtoend: error: argument --shape: ml-1m is synthetic "
                              "data of MovieLens 1M's shape, so --dataset and --data-path are "
                              "not read"), message


@pytest.mark.parametrize("argv", [["--quick", "--shape", "ml-1m"],
                                  ["--shape", "ml-1m", "--attack", "--dataset", "ml-100k"]])
def test_endtoend_runs_ml_1m_where_every_option_is_read(argv, tmp_path):
    with pytest.MonkeyPatch.context() as patch, pytest.raises(RunStarted):
        patch.setattr(end_to_end, "synthetic", stop_at("synthetic"))
        run_main(["endtoend", *argv, "--out", str(tmp_path)])


@pytest.mark.parametrize("argv, message", [
    (["--min-users", "500", "--max-users", "100"], "argument --min-users: 500 is above "
     "--max-users 100, so no shape is between them; give --min-users <= --max-users"),
    (["--quick", "--min-users", "500", "--max-users", "100"], "argument --min-users: 500 is "
     "above --max-users 100, so no shape is between them; give --min-users <= --max-users"),
    (["--min-users", "7000", "--max-users", "10000"], "argument --min-users: no shape has "
     "7000 to 10000 users (they have 236, 472, 943 (MovieLens 100k's subsamples), 6040, "
     "20000, 69878, 138493, 162541, 480189); widen the range"),
])
def test_scaling_checks_its_range_of_users(argv, message, tmp_path):
    """--min-users above --max-users ran (and an empty range crashed with a KeyError)."""
    assert checked_error(["scaling", *argv, "--out", str(tmp_path)], users_scaling) == (
        f"dprec scaling: error: {message}")


def test_cv_runs_a_private_algorithm_at_its_default_epsilon_and_says_so(tmp_path, capsys):
    """Without --epsilons, `dprec cv` printed "ε = None" and wrote an empty epsilon column
    though PPNS ran at ε = 1, and ran Mallows without privacy (epsilon=None)."""
    seen: list = []

    def record(configurations, make, data, n_folds, **options):
        seen.extend((c["epsilon"], make(**c).epsilon) for c in configurations)
        raise RunStarted("grid_table")

    for algo in ("ppns", "mallows"):
        with pytest.MonkeyPatch.context() as patch, pytest.raises(RunStarted):
            patch.setattr(demo_cv, "grid_table", record)
            cli.main(["cv", "--quick", "--algo", algo, "--out", str(tmp_path)])
        assert f"folds, epsilon = 1 given ({algo}'s default; --epsilons for others)" in \
            capsys.readouterr().out     # the parameter; its report's ε is printed at the end
    assert seen == [(1.0, 1.0), (1.0, 1.0)]
    message = checked_error(["cv", "--quick", "--algo", "topk", "--epsilons", "1", "--out",
                             str(tmp_path)], demo_cv, "grid_table")
    assert message.startswith("dprec cv: error: --epsilons is not read by --algo topk, which "
                              "is not private"), message


def test_version_and_plain_help(capsys):
    """No `--version`; the help printed the docstrings' ``dprec`` markup."""
    with pytest.raises(SystemExit) as exit_:
        cli.main(["--version"])
    assert exit_.value.code == 0 and capsys.readouterr().out == f"dprec {dprec.__version__}\n"
    helps = [cli.build_parser().format_help(), *(parser_of(c).format_help() for c in COMMANDS)]
    assert not [text for text in helps if "`" in text]
