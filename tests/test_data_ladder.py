"""The generator's accuracy ladder against MovieLens 100k's (dprec.experiments.data_ladder)."""

from __future__ import annotations

import numpy as np
import pytest

from dprec.datasets import DatasetUnavailable, load, synthetic
from dprec.experiments.data_ladder import RUNGS, TOLERANCE, compare, ladder


@pytest.fixture(scope="module")
def movielens():
    try:
        return load("ml-100k")
    except DatasetUnavailable:
        pytest.skip("MovieLens 100k has no local copy (SURPRISE_DATA_FOLDER)")


def test_the_generator_climbs_movielens_ladder(movielens):
    """Every rung of synthetic() at the ML-100k shape within 0.015 of the real data's,
    averaged over three splits (each synthetic dataset against the real data on the same
    split seed); the old generator (interaction 1, noise 0.6) failed SVD by 0.034
    and the item-based KNNBaseline by 0.042."""
    table = compare(seeds=(0, 1, 2), shapes=("ml-100k",), verbose=False)
    assert list(table["rung"]) == list(RUNGS)
    worst = table.loc[table["difference"].abs().idxmax()]
    assert table["difference"].abs().max() <= TOLERANCE["ml-100k"], worst.to_dict()


def test_a_generator_with_too_much_signal_fails_the_ladder(movielens):
    """The comparison can fail: strong latent factors (as the generator had before its
    calibration) put SVD far below the real data's rung."""
    table = compare(seeds=(0,), shapes=("ml-100k",), verbose=False, interaction=1.2,
                    noise=0.5, user_scale=0.0, n_clusters=0).set_index("rung")
    assert not table.loc["SVD", "within"] and table.loc["SVD", "difference"] < -0.015


def test_ladder_rungs_and_errors():
    data = synthetic(60, 80, 1500, random_state=0)
    rmse = ladder(data, 0, ("global mean", "user mean", "BaselineOnly"))
    assert list(rmse.index) == ["global mean", "user mean", "BaselineOnly"]
    assert np.all(np.isfinite(rmse)) and rmse["BaselineOnly"] < rmse["global mean"]
    with pytest.raises(ValueError, match="rungs"):
        ladder(data, 0, ("SVD++",))
    with pytest.raises(ValueError, match="shapes"):
        compare(shapes=("ml-25m",), verbose=False)


def test_the_generator_matches_movielens_activity(movielens):
    """Ratings per user: the median, the 90th percentile and the maximum near
    MovieLens 100k's (65, 244, 737), no user rating every item."""
    import pandas as pd

    def per_user(data):
        return pd.DataFrame(data.raw_ratings).groupby(0).size()

    real, generated = per_user(movielens), per_user(synthetic(random_state=0))
    assert abs(generated.median() - real.median()) <= 10
    assert abs(generated.quantile(0.9) - real.quantile(0.9)) <= 30
    assert 400 <= generated.max() <= 900
