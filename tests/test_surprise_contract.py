"""Surprise's inherited API on every private model (#36, points 4 and 8): the neighbours a
model releases through `get_neighbors`, and a clear `TypeError` where a model has none."""

from __future__ import annotations

import numpy as np
import pytest

from dprec import DPALS, DPBaseline, DPItemKNN, LocalKNN, MallowsRanker, datasets


@pytest.fixture(scope="module")
def trainset():
    """More items than users: Surprise's `get_neighbors` (user-based by default) would only
    rank the first `n_users` items of an item-based model."""
    return datasets.synthetic(30, 80, 900, random_state=0).build_full_trainset()


def _ranked(sim_row, exclude, to_inner) -> list[int]:
    """The released row's ids (without `exclude`) most similar first, ties in the row's
    (the lists' sorted) order, as inner ids."""
    row = sim_row.drop(exclude).sort_values(ascending=False, kind="stable")
    return [to_inner(raw) for raw in row.index]


def test_dpitemknn_ranks_every_item_by_its_released_similarities(trainset):
    items = [trainset.to_raw_iid(i) for i in trainset.all_items()]      # every item listed
    model = DPItemKNN(epsilon=1000.0, k=5, baseline_share=0.3, items=items).fit(trainset)
    assert model.privacy_report().guarantee is not None
    assert np.count_nonzero(model.sim.to_numpy()) > 1000     # a covariance was released
    beyond_users = set()
    for inner in range(trainset.n_items):
        raw = trainset.to_raw_iid(inner)
        expected = _ranked(model.sim.loc[raw], raw, trainset.to_inner_iid)
        assert model.get_neighbors(inner, 7) == expected[:7]
        beyond_users |= {i for i in expected[:7] if i >= trainset.n_users}
    assert beyond_users                                  # items past n_users are neighbours
    assert model.privacy_report().guarantee is None    # inner ids were shown: not covered
    assert model.get_neighbors(3, 10**6) == _ranked(
        model.sim.loc[trainset.to_raw_iid(3)], trainset.to_raw_iid(3), trainset.to_inner_iid)


def test_without_a_catalogue_get_neighbors_ranks_the_listed_items_only(trainset):
    # partition selection lists some items: an unlisted item has no similarity (no
    # neighbours), and a listed item's neighbours are listed items (an unlisted one read
    # as position -1 once took the last listed item's similarity)
    model = DPItemKNN(epsilon=1000.0, k=5, baseline_share=0.3).fit(trainset)
    listed = set(model.sim.index)
    assert 0 < len(listed) < trainset.n_items
    for inner in range(trainset.n_items):
        raw = trainset.to_raw_iid(inner)
        neighbours = model.get_neighbors(inner, 10**6)
        if raw not in listed:
            assert neighbours == []
        else:
            assert neighbours == _ranked(model.sim.loc[raw], raw, trainset.to_inner_iid)
            assert {trainset.to_raw_iid(i) for i in neighbours} == listed - {raw}


@pytest.mark.parametrize("sim_options", [None, {"name": "rr_minhash", "tau": 5,
                                                "delta": 1e-4}])
def test_localknn_gives_its_released_neighbours_at_any_k(trainset, sim_options):
    items = [trainset.to_raw_iid(i) for i in trainset.all_items()]   # every set whole
    model = LocalKNN(epsilon=4.0, k=5, sim_options=sim_options, random_state=0,
                     items=items).fit(trainset)
    for inner in (0, 7, 29):
        raw = trainset.to_raw_uid(inner)
        released = [trainset.to_inner_uid(v) for v in model.neighbours_.loc[raw]]
        assert model.get_neighbors(inner, 5) == released
        assert model.get_neighbors(inner, 3) == released[:3]
        longer = model.get_neighbors(inner, 12)
        assert longer[:5] == released and len(set(longer)) == 12 and inner not in longer


@pytest.mark.parametrize("make", [lambda: DPItemKNN(epsilon=1.0), lambda: LocalKNN(epsilon=1.0)])
def test_neighbourhood_models_check_the_ids_and_point_at_sim(trainset, make):
    model = make().fit(trainset)
    n = trainset.n_items if isinstance(model, DPItemKNN) else trainset.n_users
    with pytest.raises(ValueError, match="^iid must be <="):
        model.get_neighbors(10**6, 3)
    with pytest.raises(ValueError, match=f"^iid must be <= {n - 1}, got {n}$"):
        model.get_neighbors(n, 3)                      # one past the last inner id
    with pytest.raises(ValueError, match="^iid must be >= 0, got -1$"):
        model.get_neighbors(-1, 3)                     # not numpy's last row
    with pytest.raises(ValueError, match="^k must be >= 1"):
        model.get_neighbors(0, 0)
    with pytest.raises(TypeError, match="releases its similarities at fit: read its sim"):
        model.compute_similarities()
    assert model.privacy_report().guarantee is not None     # nothing was answered yet


@pytest.mark.parametrize("make", [lambda: DPItemKNN(epsilon=1.0), lambda: LocalKNN(epsilon=1.0)])
def test_the_report_names_the_inner_ids_get_neighbors_shows_once(trainset, make):
    model = make().fit(trainset)
    model.get_neighbors(0, 3)
    model.get_neighbors(1, 5)
    report = model.privacy_report()
    shown = [o for o in report.outputs if o.name == "neighbours' inner ids (get_neighbors)"]
    assert len(shown) == 1 and "order of the data" in shown[0].gap
    assert "not covered: neighbours' inner ids (get_neighbors): inner ids" in str(report)
    assert report.guarantee is None


@pytest.mark.parametrize("make", [DPBaseline, MallowsRanker, DPALS])
def test_models_without_neighbours_say_so(trainset, make):
    model = make().fit(trainset)
    name = type(model).__name__
    with pytest.raises(TypeError, match=f"^{name} has no neighbours"):
        model.get_neighbors(0, 3)
    with pytest.raises(TypeError, match=f"^{name} computes no similarities"):
        model.compute_similarities()
