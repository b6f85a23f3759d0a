"""Audits of what the end-to-end models release, event by event: another user's
prediction, their top-N list, and a neighbour list, on neighbouring datasets (one user
removed, or one rating), must not beat the ε the ledger states."""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest
from surprise import Dataset, Reader

from dprec import DPBaseline, DPItemKNN, LocalKNN
from dprec.audit import audit_release, threshold_events, with_rating
from dprec.ledger import Unit

N_RUNS = 400


@pytest.fixture(scope="module")
def data():
    # 10 users over 6 items; "target" rates i0 high and i1 low, against the crowd
    rows = [(f"u{u}", f"i{i}", float(1 + (u * 3 + i * 5) % 5)) for u in range(10)
            for i in range(6) if (u + i) % 3]
    rows += [("target", "i0", 5.0), ("target", "i1", 1.0), ("target", "i2", 5.0)]
    return Dataset.load_from_df(pd.DataFrame(rows), Reader(rating_scale=(1, 5)))


def without_target(data):
    smaller = copy.copy(data)
    smaller.raw_ratings = [r for r in data.raw_ratings if r[0] != "target"]
    return smaller


def top_n(model, uid: str, n: int = 2) -> np.ndarray:
    """Which items are in ``uid``'s top-``n`` (a 0/1 vector over i0..i5)."""
    items = [f"i{i}" for i in range(6)]
    est = np.array([p.est for p in model.test([(uid, i, 0.0) for i in items])])
    chosen = np.argsort(-est, kind="stable")[:n]
    return np.isin(np.arange(len(items)), chosen)


# model factory, unit of its guarantee, how the neighbouring dataset is made
CONFIGURATIONS = {
    "DPBaseline (user)": (lambda eps, seed: DPBaseline(epsilon=eps, unit="user",
                                                       random_state=seed), Unit.USER),
    "DPBaseline (rating)": (lambda eps, seed: DPBaseline(epsilon=eps, unit="rating",
                                                         random_state=seed), Unit.RATING),
    "DPItemKNN (user)": (lambda eps, seed: DPItemKNN(epsilon=eps, k=3, shrinkage=1.0,
                                                     random_state=seed), Unit.USER),
    "LocalKNN (rating)": (lambda eps, seed: LocalKNN(epsilon=eps, k=3, item_shrinkage=1.0,
                                                     neighbour_shrinkage=1.0,
                                                     random_state=seed), Unit.RATING),
}
EVENTS = {
    "prediction": (lambda model: model.predict("u1", "i0").est,
                   threshold_events(np.linspace(1.25, 4.75, 15))),
    "top-N list": (lambda model: top_n(model, "u1"),
                   [lambda x, j=j: np.asarray(x)[..., j] for j in range(6)]),
}


def neighbours_event(name):
    """A neighbour list of the model, as a 0/1 vector (items or users)."""
    if name.startswith("DPItemKNN"):   # the 3 items most similar to i0
        def query(model):
            inner = model.trainset.to_inner_iid
            sims = model.sim[inner("i0")].copy()
            sims[inner("i0")] = -np.inf
            best = np.argsort(-sims, kind="stable")[:3]
            return np.isin([inner(f"i{i}") for i in range(1, 6)], best)
        return query, [lambda x, j=j: np.asarray(x)[..., j] for j in range(5)]
    if name.startswith("LocalKNN"):    # is u1 among u2's neighbours
        def query(model):
            inner = model.trainset.to_inner_uid
            return np.array([inner("u1") in model.neighbours_[inner("u2")]])
        return query, [lambda x: np.asarray(x)[..., 0], lambda x: ~np.asarray(x)[..., 0]]
    return None


def neighbouring(data, unit):
    a = data.build_full_trainset()
    if unit is Unit.USER:
        return a, without_target(data).build_full_trainset()
    return a, with_rating(data, "target", "i0", None).build_full_trainset()


@pytest.mark.parametrize(("configuration", "event"), [
    (c, e) for c in CONFIGURATIONS for e in (*EVENTS, "neighbour list")
    if e != "neighbour list" or neighbours_event(c) is not None])
def test_no_event_beats_the_stated_epsilon(data, configuration, event):
    factory, unit = CONFIGURATIONS[configuration]
    query, events = (neighbours_event(configuration) if event == "neighbour list"
                     else EVENTS[event])
    epsilon = 2.0
    a, b = neighbouring(data, unit)
    stated = factory(epsilon, 0).fit(a).privacy_report().total(unit)
    assert stated[0] == pytest.approx(epsilon) and stated[1] == 0.0

    def release(trainset, seed):
        return query(factory(epsilon, seed).fit(trainset))

    bound = audit_release(release, a, b, events, n_runs=N_RUNS, random_state=7)
    assert not bound.violates(epsilon), (configuration, event, bound)


@pytest.mark.parametrize("configuration", list(CONFIGURATIONS))
def test_the_audit_would_catch_a_model_without_noise(data, configuration):
    # the same audit against the model at ε = 10^4 (as good as no noise): the events then
    # separate the datasets far beyond ε = 2, so a leak at ε = 2 would not go unseen
    factory, unit = CONFIGURATIONS[configuration]
    if configuration.startswith("LocalKNN"):   # the sketches' hash functions still vary: drop
        def factory(eps, seed):                # the neighbourhood term to see the effects
            return LocalKNN(epsilon=eps, k=3, item_shrinkage=1.0, neighbour_shrinkage=1e9,
                            random_state=seed)
    query, events = EVENTS["prediction"]
    a, b = neighbouring(data, unit)

    def release(trainset, seed):
        return query(factory(1e4, seed).fit(trainset))

    bound = audit_release(release, a, b, events, n_runs=N_RUNS, random_state=7)
    assert bound.violates(2.0), (configuration, bound)
