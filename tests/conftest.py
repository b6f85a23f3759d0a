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

#: the modules that take longest (their tests a few minutes in all), scheduled first so
#: that no long test starts last while the other workers sit idle (pytest-xdist hands the
#: workers two tests at a time, in the order of the items: ``--maxschedchunk 2``)
LONGEST_FIRST = ("test_project.py", "test_release_audits.py", "test_notebooks.py",
                 "test_end_to_end_audits.py", "test_docs_examples.py", "test_frontier.py",
                 "test_experiments.py", "test_dp_item_knn.py", "test_array_trainset.py",
                 "test_data_ladder.py")


def pytest_collection_modifyitems(config, items):
    """The `LONGEST_FIRST` modules first, the rest in their order (the same on every
    worker: pytest-xdist requires it)."""
    rank = {name: n for n, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


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
