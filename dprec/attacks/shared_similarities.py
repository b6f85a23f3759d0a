"""The similarity states the runners share: built once per attack, updated per scenario.

The similarities among real users do not change with the poisoning.  For
each distinct ``sim_key`` of the runners, `similarity_states` computes
the real users' similarities once: an exact one (with the
recommendation-aware sensitivity ``RS`` when a runner's selector needs it)
as an [`IncrementalSimilarity`][] (the centred cosine's:
[`IncrementalCenteredSimilarity`][dprec.similarity.incremental.IncrementalCenteredSimilarity]),
a sketch backend as an [`IncrementalSketchSimilarity`][]
(every real user's sketch released once, seeded from the attack's entropy and
the options).  `scenario_states` then updates a state to each scenario
of a target: only the changed users' rows are computed.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Iterator, Sequence

import numpy as np
import scipy.sparse as sp

from ..similarity import sketch_backend, with_public_bounds
from ..similarity.incremental import (
    IncrementalSimilarity,
    IncrementalSketchSimilarity,
    incremental_similarity,
)
from .poisoning import BaseData, Scenario
from .runners import SurpriseRunner

__all__ = ["SimilarityState", "scenario_states", "similarity_states"]

#: what a shared similarity state is
SimilarityState = IncrementalSimilarity | IncrementalSketchSimilarity


def similarity_states(runners: Sequence[SurpriseRunner], base: BaseData,
                      entropy: int) -> dict[tuple, SimilarityState]:
    """The real users' similarity state of every distinct ``sim_key`` of ``runners``.

    Parameters
    ----------
    runners : sequence of SurpriseRunner
        Runners without a ``sim_key`` (full refits) get no state.
    base : BaseData
    entropy : int
        The attack's root seed; a sketch backend's state is seeded from it
        and a hash of its options.

    Returns
    -------
    dict
        ``sim_key -> IncrementalSimilarity or IncrementalSketchSimilarity``.
    """
    ratings = base.ratings
    states = {}
    for runner in runners:
        key = runner.sim_key
        if key is None or key in states:
            continue
        if key[0] == "exact":
            sensitive = any(r.needs_sensitivity for r in runners if r.sim_key == key)
            states[key] = incremental_similarity(key[1], ratings.matrix, key[2], sensitive)
        else:
            options = with_public_bounds(runner.sim_options, base.trainset.rating_scale)
            seed = np.random.SeedSequence(entropy, spawn_key=(
                2, zlib.crc32(key[1].encode()))).generate_state(1, np.uint32)[0]
            backend = sketch_backend(options, random_state=int(seed))
            states[key] = IncrementalSketchSimilarity.fit(backend, ratings.matrix,
                                                          ratings.item_keys)
    return states


def scenario_states(state: SimilarityState | None, scenarios: Sequence[Scenario]
                    ) -> Iterator[tuple[Scenario, SimilarityState | None, float]]:
    """The state updated to each scenario, one at a time.

    Yields ``(scenario, updated state, seconds)``; with ``state`` None (runners
    that refit from scratch) ``(scenario, None, 0.0)``.  The similarity
    matrices of successive scenarios of the same size share one buffer (so
    each is only valid until the next is yielded); a sketch state sketches the
    changed rows of all scenarios in one call (one draw of the public hash
    functions), whose time is shared equally among them.
    """
    buffers: dict[int, np.ndarray] = {}
    sketches = None
    if isinstance(state, IncrementalSketchSimilarity):
        start = time.perf_counter()
        rows = sp.vstack([scenario.data.rows for scenario in scenarios], format="csr")
        sketches = state.sketch(rows, np.concatenate([sc.keys for sc in scenarios]))
        bounds = np.cumsum([0] + [len(scenario.data.ids) for scenario in scenarios])
        share = (time.perf_counter() - start) / len(scenarios)
    for j, scenario in enumerate(scenarios):
        if state is None:
            yield scenario, None, 0.0
            continue
        start = time.perf_counter()
        n_users = scenario.data.ratings.n_users
        out = buffers.setdefault(n_users, np.empty((n_users, n_users)))
        if sketches is None:
            updated = state.update(scenario.data.ids, scenario.data.rows, out=out)
        else:
            updated = state.update(scenario.data.ids, scenario.data.rows, scenario.keys,
                                   precomputed=sketches[bounds[j]:bounds[j + 1]], out=out)
            start -= share
        yield scenario, updated, time.perf_counter() - start
