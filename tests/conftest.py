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


def _ml100k_path() -> Path:
    folder = Path(os.environ.get("SURPRISE_DATA_FOLDER", Path.home() / ".surprise_data"))
    return folder / "ml-100k" / "ml-100k" / "u.data"


LASTFM_PATH = SHARED_DATA / "hetrec2011-lastfm-2k" / "user_artists.dat"


@pytest.fixture(scope="session")
def ml100k():
    """MovieLens 100k as a Surprise Dataset; skips when no offline copy exists."""
    if not _ml100k_path().is_file():
        pytest.skip(f"MovieLens 100k not found at {_ml100k_path()} (set SURPRISE_DATA_FOLDER)")
    from surprise import Dataset

    return Dataset.load_builtin("ml-100k", prompt=False)


@pytest.fixture(scope="session")
def lastfm_path() -> Path:
    """Path of HetRec Last.fm ``user_artists.dat``; skips when absent."""
    if not LASTFM_PATH.is_file():
        pytest.skip(f"HetRec Last.fm not found at {LASTFM_PATH}")
    return LASTFM_PATH


@pytest.fixture(scope="session")
def small_data():
    """A small MovieLens-like synthetic Dataset (always available)."""
    from dprec.datasets import synthetic

    return synthetic(n_users=120, n_items=200, n_ratings=4000, random_state=0)
