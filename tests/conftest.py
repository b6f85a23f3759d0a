"""Shared fixtures.

``SURPRISE_DATA_FOLDER`` must be set before ``surprise`` is first imported
(Surprise computes its data paths at import time), so it is set here, at the
top of the first module pytest imports, when the project's shared copy exists.
"""

from __future__ import annotations

import os
from pathlib import Path

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
if "SURPRISE_DATA_FOLDER" not in os.environ and (SHARED_DATA / "surprise").is_dir():
    os.environ["SURPRISE_DATA_FOLDER"] = str(SHARED_DATA / "surprise")

import pytest  # noqa: E402

#: the long runs started in the background (``tests/background.py``), and which of them the
#: selected tests need
NEWCOMER, NOTEBOOKS, SELECTED = pytest.StashKey(), pytest.StashKey(), pytest.StashKey()
#: the tests that wait for them
BACKGROUND_TESTS = {"test_readme_commands_work_for_an_offline_newcomer": NEWCOMER,
                    "test_notebook_executes_in_quick_mode": NOTEBOOKS}


def _worker(config) -> bool:
    """Whether this process is one of pytest-xdist's workers (``-n``): it does not know, at
    collection, which tests it will run."""
    return hasattr(config, "workerinput")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist, the tests that wait for the background runs go first, together,
    to one worker (``--dist loadgroup``): it starts the runs and waits for them while the
    other worker runs the rest of the suite."""
    if not _worker(config):
        return
    waiting = [item for item in items if item.originalname in BACKGROUND_TESTS]
    for item in waiting:
        item.add_marker(pytest.mark.xdist_group("background"))
    items[:] = waiting + [item for item in items if item.originalname not in BACKGROUND_TESTS]


def _start_background(config) -> None:
    """Start the selected background runs, once per process."""
    import importlib.util

    from background import NewcomerRun, NotebookRuns

    for key in config.stash.get(SELECTED, []):
        if key in config.stash:
            continue
        if key is NEWCOMER:
            config.stash[NEWCOMER] = NewcomerRun()
        elif importlib.util.find_spec("nbclient") is not None:
            config.stash[NOTEBOOKS] = NotebookRuns()


def pytest_collection_finish(session):
    """Start the suite's two long independent runs when a test that needs them is
    selected: the newcomer's install and demo (about 100 s) and the notebooks in quick mode
    (about 60 s) go on in the background, mostly on the other core, while the other tests
    run; their tests then wait for the results (fixtures `newcomer_run`, `notebook_runs`).
    An xdist worker starts them when it reaches the first of those tests instead."""
    if session.config.option.collectonly:
        return
    selected = {item.originalname for item in session.items}
    session.config.stash[SELECTED] = [key for name, key in BACKGROUND_TESTS.items()
                                      if name in selected]
    if not _worker(session.config):
        _start_background(session.config)


def pytest_runtest_setup(item):
    if _worker(item.config) and item.originalname in BACKGROUND_TESTS:
        _start_background(item.config)


@pytest.fixture
def newcomer_run(request):
    """The README's first command run as an offline newcomer (`background.NewcomerRun`)."""
    return request.config.stash[NEWCOMER]


@pytest.fixture(scope="module")
def notebook_runs(request):
    """Every notebook executed in quick mode (`background.NotebookRuns`): path -> (executed
    notebook, its error or None, DPREC_QUICK of the kernels, the names its run added to
    `notebooks/`)."""
    pytest.importorskip("nbformat")
    pytest.importorskip("nbclient")
    return request.config.stash[NOTEBOOKS].result(timeout=1200)


@pytest.fixture(scope="session")
def ml100k():
    """MovieLens 100k as a Surprise Dataset, found as ``dprec.datasets.load`` finds it;
    skips (naming where it looked) when no offline copy exists."""
    from dprec import datasets

    try:
        return datasets.load("ml-100k")
    except datasets.DatasetUnavailable as error:
        pytest.skip(str(error))


@pytest.fixture(scope="session")
def lastfm_path() -> Path:
    """Path of HetRec Last.fm ``user_artists.dat``, found wherever
    ``dprec.datasets.load("lastfm")`` finds it (``DPREC_LASTFM``, next to the
    ``SURPRISE_DATA_FOLDER`` folder, ...); skips when absent."""
    from dprec import datasets

    try:
        return datasets.find_lastfm()
    except datasets.DatasetUnavailable as error:
        pytest.skip(str(error))


@pytest.fixture(scope="session")
def small_data():
    """A small MovieLens-like synthetic Dataset (always available)."""
    from dprec.datasets import synthetic

    return synthetic(n_users=120, n_items=200, n_ratings=4000, random_state=0)


@pytest.fixture(scope="session")
def small_ratings(small_data):
    """`small_data` as a users × items rating matrix (`dprec.datasets.user_item_matrix`)."""
    from dprec.datasets import user_item_matrix

    return user_item_matrix(small_data.build_full_trainset())


@pytest.fixture(scope="session")
def quick_release_audit():
    """``dprec.experiments.release_audit.run(quick=True, seed=0)``, computed once a
    session: every quick scenario of the release audit (200 runs, 100 pilot runs each),
    one row per scenario.  ``tests/test_release_audits.py`` asserts on its rows, and
    ``dprec audit --quick`` (``tests/test_experiments.py``) is handed this very table for
    that very call instead of auditing the same 13 scenarios a second time.  The scenarios
    are audited two at a time (``n_jobs=2``: the same rows)."""
    from dprec.experiments import release_audit

    return release_audit.run(quick=True, seed=0, n_jobs=2)


@pytest.fixture(params=["compiled", "numpy"])
def kernel_path(request):
    """Runs a test on both of dprec's paths for the hot loops: the compiled kernels
    (``dprec.utils._kernels``, skipped without Numba) and the numpy code."""
    from dprec.utils import _kernels

    if request.param == "compiled" and not _kernels.AVAILABLE:
        pytest.skip("numba cannot be imported here (a dependency of dprec)")
    previous = _kernels.set_enabled(request.param == "compiled")
    yield request.param
    _kernels.set_enabled(previous)


@pytest.fixture(scope="module")
def split(small_data):
    """The first of 4 folds of `small_data` (Surprise's `KFold`, seed 0): (trainset, testset)."""
    from surprise.model_selection import KFold

    return next(KFold(n_splits=4, random_state=0).split(small_data))
