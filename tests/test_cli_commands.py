"""Issue #53: `dprec cv` runs every model with its report's verdict, readable plots, a fast
start, and the command line's odd inputs (each a regression test that failed before)."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_cli_errors import RunStarted, run_main

from dprec import cli
from dprec.experiments import demo_cv, end_to_end, users_scaling

ROOT = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------ fast start (point 4)
def test_the_command_line_parses_without_the_heavy_libraries():
    """`dprec --help` took 1.7 s idle (17.5 s under load): `import dprec.cli` imported
    Numba, Surprise, pandas and SciPy through dprec's models. Now it imports none of them,
    and neither does `import dprec` (the models load on first use)."""
    heavy = ("numba", "surprise", "matplotlib", "pandas", "scipy", "numpy")
    code = ("import sys, dprec.cli; parser = dprec.cli.build_parser(); "
            "parser.parse_args(['cv', '--algo', 'dpals', '--out', '/tmp']); "
            f"print(sorted(m for m in {heavy!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout
    assert out.strip() == "[]"


def test_an_experiments_help_and_errors_load_neither_numba_nor_scipys_solvers():
    """An experiment's `--help` or one-line error imports its module: 1.3–1.8 s idle while
    dprec's kernels imported Numba and the shadow attack SciPy's solvers at import (0.3 s
    and 0.2 s); both now load where they are first used (0.8–1.2 s)."""
    code = ("import sys\n"
            "import dprec.experiments.frontier, dprec.experiments.end_to_end\n"
            "import dprec.experiments.membership_inference\n"
            "print(sorted(m for m in ('numba', 'scipy.optimize', 'scipy.sparse.linalg')"
            " if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_lazy_names_are_the_models_and_submodules():
    import dprec
    from dprec import DPALS, DPBaseline, audit, datasets
    from dprec.endtoend.dp_baseline import DPBaseline as defined
    from dprec.evaluation import metrics

    assert DPBaseline is defined and DPALS.__name__ == "DPALS"
    assert datasets.load and metrics and audit.clopper_pearson
    assert all(getattr(dprec, name) is not None for name in dprec.__all__)
    assert set(dprec.__all__) <= set(dir(dprec))
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        dprec.nothing  # noqa: B018


def test_the_parsers_names_agree_with_the_modules():
    """The parser's choices are written out (its modules are not imported to parse)."""
    from dprec import datasets
    from dprec.similarity import EXACT_SIMILARITIES, SKETCH_BACKENDS

    assert ("auto", *datasets.DATASETS) == cli.DATASET_CHOICES
    assert (*EXACT_SIMILARITIES, *SKETCH_BACKENDS) == cli.CV_SIMILARITIES
    assert all(hasattr(demo_cv, name) for name in cli.RUN_NAMES)


# ------------------------------------------------------- dprec cv runs every model (point 2)
def test_cv_offers_every_model_and_points_to_endtoend():
    """`--algo` had no end-to-end model, and "invalid choice" did not say where they are."""
    assert {"dpbaseline", "dpitemknn", "dpals", "localknn"} <= set(cli.CV_ALGORITHMS)
    status, err = run_main(["cv", "--algo", "svd", "--out", "/tmp"])
    assert status == 2 and err.count("\n") == 1
    assert err.startswith("dprec cv: error: argument --algo: expected one of knnbasic, ")
    assert "'dprec endtoend'" in err and "got 'svd'" in err


@pytest.mark.parametrize("algo, kind", [("dpbaseline", "DPBaseline"),
                                        ("dpitemknn", "DPItemKNN"), ("dpals", "DPALS"),
                                        ("localknn", "LocalKNN")])
def test_cv_builds_the_end_to_end_models(algo, kind):
    model = demo_cv.cv_algorithm(algo, 2.0, k=7, seed=3)
    assert type(model).__name__ == kind and model.epsilon == 2.0
    assert model.random_state == 3 and getattr(model, "k", 7) == 7
    assert demo_cv.default_epsilon(algo) == 1.0


def test_cv_refuses_the_knn_options_an_end_to_end_model_would_not_read():
    status, err = run_main(["cv", "--quick", "--algo", "dpals", "--sim", "msd", "--out",
                            "/tmp"])
    assert status == 2 and err.count("\n") == 1
    assert "--sim not read by --algo dpals" in err


def test_cv_runs_an_end_to_end_model_with_its_reports_verdict(tmp_path, capsys):
    """Each ε's row carries what the fitted model's report computes for its worst user
    (ε, unit, status), and the note says when ε does not change the RMSE."""
    assert cli.main(["cv", "--quick", "--algo", "dpbaseline", "--epsilons", "0.5", "4",
                     "--no-progress", "--out", str(tmp_path)]) == 0
    table = pd.read_csv(tmp_path / "cv.csv")
    assert set(table["epsilon"]) == {0.5, 4.0} and len(table) == 4
    labels = dict(zip(table["epsilon"], table["privacy"]))
    assert labels == {0.5: "ε = 0.5, δ = 1e-05 per user, holds",
                      4.0: "ε = 4, δ = 1e-05 per user, holds"}
    printed = capsys.readouterr().out
    assert all(label in printed for label in labels.values())
    assert (tmp_path / "cv.png").stat().st_size > 1000


def test_the_note_says_when_epsilon_does_not_change_the_rmse():
    """PPNS at ε = 0.5 / 1 / 2 gave 1.0274 / 1.0274 / 1.0273 without a comment."""
    table = pd.DataFrame({"algo": "ppns", "epsilon": np.repeat([0.5, 1.0, 2.0], 3),
                          "rmse": [1.02, 1.03, 1.0322, 1.0201, 1.03, 1.032, 1.02, 1.0299,
                                   1.032], "mae": 0.8, "privacy": "label"})
    means = demo_cv.cv_summary(table)
    note = demo_cv.flat_note(means, "ppns")
    assert note.startswith("Note: ppns's RMSE does not measurably change with ε here: at "
                           "ε = 0.5, 1, 2")
    assert "set by p, not ε" in note
    moving = table.assign(rmse=table["rmse"] + np.repeat([0.2, 0.1, 0.0], 3))
    assert demo_cv.flat_note(demo_cv.cv_summary(moving), "ppns") is None
    assert demo_cv.flat_note(means.iloc[:1], "ppns") is None


# ------------------------------------------------------------------- plots (point 2)
def end_to_end_table() -> pd.DataFrame:
    """A results table of `dprec endtoend`'s shape: every model, ε and two folds."""
    rng = np.random.default_rng(0)
    configurations = end_to_end.configurations()
    rows = [{**c, "fold": fold, "rmse": 0.95 + 0.2 * rng.random(), "mae": 0.75,
             "precision@10": 0.5, "ndcg@10": 0.8} for c in configurations for fold in (0, 1)]
    return pd.DataFrame(rows)


def line_style(line) -> tuple:
    return (line.get_color(), line.get_marker(), line.get_linestyle())


def check_readable(figure, epsilons) -> None:
    """Every line its own style, the legend outside the data, ε ticks as plain numbers."""
    figure.draw_without_rendering()
    (axes,) = figure.axes
    styles = [line_style(line) for line in axes.get_lines() if line.get_label()[0] != "_"]
    assert len(set(styles)) == len(styles)
    legend = axes.get_legend()
    assert len(legend.get_texts()) == len(styles)
    assert not legend.get_window_extent().overlaps(axes.get_window_extent())
    ticks = [label.get_text() for label in axes.get_xticklabels() if label.get_text()]
    assert ticks == [f"{e:g}" for e in sorted(epsilons)]


def saved_figure(module, draw, monkeypatch):
    """The figure `draw()` saves through `module.save`."""
    saved = []
    real_save = module.save
    monkeypatch.setattr(module, "save", lambda figure, path: (saved.append(figure),
                                                              real_save(figure, path)))
    draw()
    (figure,) = saved
    return figure


def test_the_endtoend_plot_is_readable(tmp_path, monkeypatch):
    """14 lines in 10 colours, the legend over the data, unlabelled references and ε
    ticks as 10^0."""
    figure = saved_figure(end_to_end, lambda: end_to_end.plot(end_to_end_table(),
                                                              tmp_path / "rmse.png"),
                          monkeypatch)
    check_readable(figure, end_to_end.EPSILONS)
    labels = [text.get_text() for text in figure.axes[0].get_legend().get_texts()]
    assert all(f"{model} (no privacy)" in labels for model in end_to_end.REFERENCES)
    assert len(labels) == len(end_to_end.ALL)


def test_the_cv_plot_is_readable(tmp_path, monkeypatch):
    table = pd.DataFrame({"algo": "ppns", "epsilon": np.repeat([0.5, 1.0, 2.0], 2),
                          "rmse": [1.0, 1.1, 0.9, 0.95, 0.9, 0.91], "mae": 0.8})
    figure = saved_figure(demo_cv, lambda: demo_cv.plot_cv(table, tmp_path / "cv.png"),
                          monkeypatch)
    check_readable(figure, [0.5, 1.0, 2.0])


# ------------------------------------------------------------ odd inputs (point 5)
@pytest.mark.parametrize("command", ["demo", "cv"])
def test_an_error_after_a_progress_bar_is_the_one_line_left(command, tmp_path, monkeypatch,
                                                           capsys):
    """`dprec cv`'s one-line error followed its progress bar, left frozen where the fit
    failed (``cross-validating:  50%|█████     | 1/2 [...]`` then the error: two lines on
    stderr). The bar is cleared first; the error is the one line left (demo's bar, over
    the algorithms, was cleared already)."""
    from dprec.knn import PrivateKNN

    fits = []
    real_fit = PrivateKNN.fit

    def failing_fit(self, trainset):
        fits.append(1)
        if len(fits) == 3:
            raise ValueError("a fit fails, in this test")
        return real_fit(self, trainset)

    monkeypatch.setattr(PrivateKNN, "fit", failing_fit)
    algo = ["--algo", "topk", "--folds", "4"] if command == "cv" else []
    status = cli.main([command, "--quick", *algo, "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert status == 2 and "cross-validating" in err
    assert err.count("\n") == 1 and err.endswith("\n")        # no bar line left above it
    *before, line = err[:-1].split("\r")
    assert line == f"dprec {command}: error: a fit fails, in this test (--debug for the " \
                   "traceback)"
    assert before[-1].strip() == ""                           # the bar's line cleared


def test_scaling_reads_max_users_in_a_quick_run(tmp_path, monkeypatch):
    """`dprec scaling --quick --max-users 1` ran every quick shape (200 to 1,200 users)."""
    def stop(*args, **kwargs):
        raise RunStarted

    monkeypatch.setattr(users_scaling, "run", stop)
    err = io.StringIO()
    with contextlib.redirect_stderr(err), pytest.raises(SystemExit) as exit_:
        users_scaling.main(["--quick", "--max-users", "1", "--out", str(tmp_path)],
                           prog="dprec scaling")
    assert exit_.value.code == 2
    assert err.getvalue() == ("dprec scaling: error: argument --max-users: no shape has at "
                              "most 1 users (the quick run's have 200, 400, 1200); widen the "
                              "range\n")
    shapes = [data for _, data in users_scaling.datasets(True, 0, max_users=500)]
    assert [len({r[0] for r in data.raw_ratings}) for data in shapes] == [200, 400]


def test_scaling_reads_max_users_for_movielens_too():
    """`--max-users 300` kept MovieLens 100k's 472- and 943-user subsamples."""
    shares, shapes = users_scaling.chosen_shapes(300, None)
    assert shares == (0.25,) and shapes == []


@pytest.mark.parametrize(("shape", "expected"), [
    ((943, 1682, 100_000), {"LocalKNN", "DPItemKNN (covariance)", "KNNBaseline (item)", "SVD"}),
    ((69_878, 10_677, 10_000_054), {"DPItemKNN (covariance)", "KNNBaseline (item)", "SVD"}),
    ((162_541, 59_047, 25_000_095), {"SVD"}),
    ((480_189, 17_770, 100_480_507), {"DPItemKNN (covariance)", "SVD"})])
def test_each_shape_gets_the_fits_its_memory_allows(shape, expected):
    """The item-based KNNBaseline (items × items similarities, 26 GiB at the 25M shape's
    59,047 items) was run up to 30 million ratings whatever the items."""
    class Shape:
        n_users, n_items, n_ratings = shape
    names = {name for name, *_ in users_scaling.shape_jobs(Shape, (1.0, 2.0), 0)}
    bounded = {"LocalKNN", "DPItemKNN (covariance)", "KNNBaseline (item)", "SVD"}
    assert names & bounded == expected
    assert {"user mean", "BaselineOnly", "DPBaseline", "DPALS"} <= names


def test_a_fit_the_machine_cannot_hold_is_a_row_and_the_run_goes_on(monkeypatch, capsys):
    """At the 20M shape and ε = 10 DPItemKNN's covariance took 23 GB and the kernel killed
    the whole scaling run; now the model refuses before it starts (`MemoryError`), and
    the run records that and goes on."""
    evaluate = users_scaling.evaluate

    def refusing(algo, trainset, testset):
        if type(algo).__name__ == "DPALS":
            raise MemoryError("DPALS needs about 9.0 GiB and 1.0 GiB are available: less")
        return evaluate(algo, trainset, testset)

    monkeypatch.setattr(users_scaling, "evaluate", refusing)
    results = users_scaling.run(quick=True, max_users=200, models=["DPBaseline", "DPALS"])
    refused = results[results.model == "DPALS"]
    assert len(refused) == len(results) / 2 and refused.rmse.isna().all()
    assert (refused.note == "MemoryError: DPALS needs about 9.0 GiB and 1.0 GiB are "
                           "available: less").all()
    done = results[results.model == "DPBaseline"]
    assert done.rmse.notna().all() and (done.note == "").all()
    assert "DPALS ε=1.0 not run: DPALS needs about 9.0 GiB" in capsys.readouterr().out


def test_scaling_answers_a_seeded_sample_of_a_large_test_fold(tmp_path):
    """The Netflix shape's test fold has 20 million pairs: `--test-pairs` answers a seeded
    sample, the same pairs whether the fold is a list or arrays."""
    from dprec.datasets import ArrayTestset

    triples = [(f"u{n % 7}", f"i{n % 11}", float(n % 5 + 1)) for n in range(40)]
    arrays = ArrayTestset(*(np.array(column) for column in zip(*triples)))
    for pairs in (None, 40, 100):
        assert users_scaling.sample_test_fold(triples, pairs, 0) is triples
    picked = users_scaling.sample_test_fold(triples, 9, 3)
    uids, iids, truth = users_scaling.sample_test_fold(arrays, 9, 3).rating_columns()
    assert len(picked) == 9 == len(set(picked)) and set(picked) <= set(triples)
    assert picked == [(u, i, r) for u, i, r in zip(uids, iids, truth.tolist())]
    assert picked != users_scaling.sample_test_fold(triples, 9, 4)
    results = users_scaling.main(["--quick", "--max-users", "200", "--models", "DPBaseline",
                                  "--test-pairs", "300", "--out", str(tmp_path)])
    assert (results["test_pairs"] == 300).all() and results["rmse"].notna().all()


@pytest.mark.parametrize("command", ["demo", "cv"])
def test_folds_are_checked_against_the_data(command, tmp_path):
    """`dprec demo --folds 1000000` answered "n_splits=12000" (the ratings' count, from
    Surprise), naming neither the option nor the range."""
    status, err = run_main([command, "--quick", "--folds", "1000000", "--out",
                            str(tmp_path)])
    assert status == 2 and err.count("\n") == 1, err
    assert err == (f"dprec {command}: error: argument --folds: expected 2 to 12000 folds (the "
                   "ratings of synthetic (300 users, 400 items, 12000 ratings)), got 1000000 "
                   "(--debug for the traceback)\n")


@pytest.mark.parametrize(("command", "option", "most"), [
    ("endtoend", "--folds", 12000), ("backends", "--folds", 12000),
    ("selectors", "--folds", 12000), ("ranking", "--folds", 12000),
    ("attack", "--folds", 15000), ("frontier", "--folds", 15000),
    ("frontier", "--inner-folds", 7500)])
def test_every_commands_folds_are_checked_against_its_data(command, option, most, tmp_path):
    """`dprec endtoend`, `backends`, `selectors`, `ranking`, `attack` and `frontier` passed
    `--folds` (and `--inner-folds`) to Surprise unchecked: "n_splits=…", not the option."""
    status, err = run_main([command, "--quick", option, "1000000", "--out", str(tmp_path)])
    assert status == 2 and err.count("\n") == 1, err
    assert f"error: argument {option}: expected 2 to {most} folds (the ratings of " in err
    assert "got 1000000 (--debug for the traceback)" in err


def test_endtoend_prints_epsilon_compactly(tmp_path, monkeypatch, capsys):
    """`dprec endtoend --epsilons 1e300` printed a 300-digit ε column."""
    table = end_to_end_table()
    table = table[table["epsilon"].isna() | (table["epsilon"] == 1.0)]
    table = table.assign(epsilon=table["epsilon"].where(table["epsilon"].isna(), 1e300))

    monkeypatch.setattr(end_to_end, "run", lambda *args, **kwargs: table)
    end_to_end.main(["--quick", "--epsilons", "1e300", "--out", str(tmp_path)])
    printed = capsys.readouterr().out
    assert " 1e+300 " in printed
    assert max(len(line) for line in printed.splitlines()) < 120


def test_the_demos_timings_start_after_the_accountants_import(tmp_path):
    """The demo's first `DPItemKNN` fold took 1.1 s against 0.07 s for the others: it
    imported `dp_accounting` (0.7 s), which the demo's "not in the timings" left in."""
    code = ("import sys\n"
            "from dprec import cli\n"
            "from dprec.experiments import demo_cv\n"
            "def timed(*args, **kwargs):\n"
            "    print('loaded' if 'dp_accounting.rdp' in sys.modules else 'not loaded')\n"
            "    raise SystemExit(0)\n"
            "demo_cv.cross_validate_table = timed\n"
            f"cli.main(['demo', '--quick', '--out', {str(tmp_path)!r}])\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "DPREC_DISABLE_NUMBA": "1"})
    assert done.stdout.strip().splitlines()[-1] == "loaded", done.stdout + done.stderr
