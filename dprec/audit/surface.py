"""Audits of *everything* a release publishes, with the events chosen on pilot runs.

A release returns what one run publishes as a nested mapping (predictions,
neighbour ids and weights, public arrays, the report's text...);
[`flatten_release`][] turns it into ``{key: scalar}``.  Pilot runs on each
of two neighbouring datasets propose events — a key present, a value seen in
at least 5 % of one side's runs, a threshold at the pooled quantiles — and the
ones whose frequencies differ most are measured on fresh runs
([`audit_surface`][]), bounded as [`dprec.audit`][] bounds any event.
Released values that should be noisy but are exact, or arrays whose positions
follow the data's order, are found without anyone naming the event in
advance.

The pilots are searched as one table (runs × keys, NaN where a key is absent
or holds text) with numpy: a release of tens of thousands of numbers (a
similarity matrix, neighbour lists) proposes hundreds of thousands of events,
counted in a few vectorised passes.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain

import numpy as np
import pandas as pd

from ..utils._rng import RandomStateLike, check_random_state
from ..utils._validation import check_int
from . import EpsilonLowerBound

__all__ = ["SurfaceEvent", "audit_surface", "flatten_release"]

#: the quantiles of the pooled pilots at which thresholds are proposed
QUANTILES = (0.1, 0.25, 0.5, 0.75, 0.9)
#: a value is proposed when it is at least this share of one side's runs that hold the key
FREQUENT = 0.05
#: the cells compared at once when events are counted (bounds the memory)
_CELLS = 1 << 22


def flatten_release(output, prefix: str = "") -> dict[str, object]:
    """A release as a flat ``{key: value}`` mapping of scalars.

    Mappings recurse (``"a/b"``), pandas Series and DataFrames are keyed by
    their labels (``"x[label]"``, ``"x[row, column]"``), numpy arrays, lists
    and tuples by position (``"x[3]"``: so an array whose positions follow the
    data's order is audited as such); numbers become floats, strings stay;
    ``None`` is left out (absent).
    """
    out: dict[str, object] = {}
    _flatten(output, prefix, out)
    return out


def _flatten(output, prefix: str, out: dict) -> None:
    if output is None:
        return
    if isinstance(output, Mapping):
        for key, value in output.items():
            _flatten(value, f"{prefix}{key}/", out)
        return
    if isinstance(output, pd.DataFrame):
        rows, columns = map(repr, output.index), [repr(c) for c in output.columns]
        keys = [f"{prefix}[{row}, {column}]" for row in rows for column in columns]
        _cells(keys, output.to_numpy(), out)
        return
    if isinstance(output, pd.Series):
        _cells([f"{prefix}[{label!r}]" for label in output.index], output.to_numpy(), out)
        return
    if isinstance(output, (np.ndarray, list, tuple)):
        array = output if isinstance(output, np.ndarray) else np.asarray(output, dtype=object)
        keys = [f"{prefix}{list(index)}" for index in np.ndindex(array.shape)]
        _cells(keys, array, out)
        return
    key = prefix.rstrip("/") or "value"
    out[key] = float(output) if isinstance(output, (bool, np.bool_, numbers.Number)) \
        else str(output)


def _cells(keys: list[str], values: np.ndarray, out: dict) -> None:
    """The cells of an array under their ``keys`` (row-major): numbers at once, anything
    else as `_flatten` takes it."""
    if values.dtype.kind in "biuf":
        out.update(zip(keys, values.astype(float).ravel().tolist()))
        return
    for key, value in zip(keys, values.ravel().tolist()):
        if isinstance(value, str):
            out[key] = value
        elif isinstance(value, (bool, int, float)):
            out[key] = float(value)
        else:
            _flatten(value, key + "/", out)


@dataclass(frozen=True)
class SurfaceEvent:
    """An event on one key of a flattened release: present, equal to a value, or above a
    threshold (an absent key is in neither of the last two)."""

    key: str
    kind: str
    value: object = None

    @property
    def name(self) -> str:
        """The event in words: ``"key present"``, ``"key == value"``, ``"key > threshold"``."""
        if self.kind == "present":
            return f"{self.key} present"
        return f"{self.key} {'==' if self.kind == 'equals' else '>'} {self.value!r}"

    def hits(self, runs: Sequence[Mapping]) -> np.ndarray:
        """One bool per flattened run (`flatten_release`): whether the event occurred."""
        values = [run.get(self.key) for run in runs]
        if self.kind == "present":       # a NaN is no value, as in the pilots' table
            hit = [value is not None and value == value for value in values]
        elif self.kind == "equals":
            hit = [value == self.value for value in values]
        else:
            hit = [isinstance(value, float) and value > self.value for value in values]
        return np.array(hit, dtype=bool)


class _Table:
    """Flattened runs as two matrices: ``numbers`` (runs × ``keys``, NaN where a key is
    absent or holds text) and ``texts`` (runs × the keys that ever hold text, their
    columns ``text_keys``; each text as its position in ``vocabulary``, NaN elsewhere),
    so that numbers and texts are searched alike."""

    def __init__(self, runs: list[dict]):
        self.keys = list(dict.fromkeys(chain.from_iterable(runs)))
        index, vocabulary = {key: n for n, key in enumerate(self.keys)}, {}
        self.numbers = np.full((len(runs), len(index)), np.nan)
        cells: list[tuple[int, int, int]] = []           # (run, column, text)
        for i, run in enumerate(runs):
            columns = np.fromiter(map(index.__getitem__, run), np.intp, len(run))
            values = list(run.values())
            for n, value in enumerate(values):
                if isinstance(value, str):
                    cells.append((i, int(columns[n]),
                                  vocabulary.setdefault(value, len(vocabulary))))
                    values[n] = np.nan
            self.numbers[i, columns] = values
        self.vocabulary = list(vocabulary)
        run, column, text = np.array(cells, dtype=np.intp).reshape(-1, 3).T
        self.text_keys, position = np.unique(column, return_inverse=True)
        self.texts = np.full((len(runs), len(self.text_keys)), np.nan)
        self.texts[run, position] = text
        self.present = ~np.isnan(self.numbers)
        self.present[:, self.text_keys] |= ~np.isnan(self.texts)


def _count(matrix: np.ndarray, columns: np.ndarray, values: np.ndarray,
           above: bool = False) -> np.ndarray:
    """How many rows have ``matrix[:, column] == value`` (``above``: ``>``), per pair."""
    out = np.zeros(len(columns), dtype=np.int64)
    step = max(1, _CELLS // max(len(matrix), 1))
    for start in range(0, len(columns), step):
        cells = matrix[:, columns[start:start + step]]
        bound = values[start:start + step]
        out[start:start + step] = (cells > bound if above else cells == bound).sum(axis=0)
    return out


def _frequent(matrix: np.ndarray, held: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The (column, value) pairs of ``matrix`` whose value fills at least `FREQUENT` of
    the ``held`` runs holding its key, from runs of equal values down each sorted column."""
    columns = np.sort(matrix, axis=0).T                 # columns × runs, NaN last
    start = np.ones(columns.shape, dtype=bool)
    start[:, 1:] = columns[:, 1:] != columns[:, :-1]
    where = np.flatnonzero(start)
    length = np.diff(np.append(where, columns.size))
    column = where // max(columns.shape[1], 1)
    value = columns.ravel()[where]
    keep = ~np.isnan(value) & (length >= FREQUENT * held[column])
    return column[keep], value[keep]


def _thresholds(pooled: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The (column, threshold) pairs at the `QUANTILES` of each column of ``pooled`` that
    holds two values or more (linear interpolation, as ``numpy.quantile``)."""
    pooled = np.sort(pooled, axis=0)                    # NaN last
    held = (~np.isnan(pooled)).sum(axis=0)
    last = pooled[np.maximum(held - 1, 0), np.arange(pooled.shape[1])]
    varying = np.flatnonzero((held > 1) & (last > pooled[0]))
    cells = pooled[:, varying]
    at = np.outer(QUANTILES, held[varying] - 1)          # quantiles × columns
    low = np.floor(at).astype(np.intp)
    high = np.minimum(low + 1, held[varying] - 1)
    below, above = (np.take_along_axis(cells, n, axis=0) for n in (low, high))
    t, step = at - low, above - below                     # numpy's lerp, to the last bit
    values = np.where(t >= 0.5, above - step * (1 - t), below + step * t)
    new = np.ones(values.shape, dtype=bool)
    new[1:] = values[1:] != values[:-1]
    column = np.broadcast_to(varying, values.shape)
    return column.T[new.T], values.T[new.T]


def _unique_pairs(column: np.ndarray, value: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    order = np.lexsort((value, column))
    column, value = column[order], value[order]
    new = np.ones(len(column), dtype=bool)
    new[1:] = (column[1:] != column[:-1]) | (value[1:] != value[:-1])
    return column[new], value[new]


def _equal_values(a: np.ndarray, b: np.ndarray, held_a: np.ndarray, held_b: np.ndarray):
    """The frequent (column, value) pairs of either side and their counts on both."""
    column, value = _unique_pairs(*map(np.concatenate, zip(_frequent(a, held_a),
                                                           _frequent(b, held_b))))
    return column, value, _count(a, column, value), _count(b, column, value)


def _proposals(pilots: _Table, n_a: int) -> tuple[list[tuple], np.ndarray, np.ndarray]:
    """Every event the pilots propose (runs ``:n_a`` on one dataset, the rest on the
    other), as `SurfaceEvent`'s ``(key, kind, value)`` (thousands on a large release: the
    events are made for the chosen few only): a key present, a value that fills at least
    `FREQUENT` of one side's runs holding the key, a threshold at the `QUANTILES` of the
    pooled numbers; and how many runs of each side it holds in."""
    a, b = slice(None, n_a), slice(n_a, None)
    numbers, texts, text_keys = pilots.numbers, pilots.texts, pilots.text_keys
    held_a, held_b = pilots.present[a].sum(axis=0), pilots.present[b].sum(axis=0)
    found: list[tuple] = [(np.arange(len(pilots.keys)), [None] * len(pilots.keys),
                           "present", held_a, held_b)]
    column, value, count_a, count_b = _equal_values(numbers[a], numbers[b], held_a, held_b)
    found.append((column, value.tolist(), "equals", count_a, count_b))
    column, text, count_a, count_b = _equal_values(texts[a], texts[b], held_a[text_keys],
                                                   held_b[text_keys])
    found.append((text_keys[column], [pilots.vocabulary[int(t)] for t in text], "equals",
                  count_a, count_b))
    column, value = _thresholds(numbers)
    found.append((column, value.tolist(), "above", _count(numbers[a], column, value, True),
                  _count(numbers[b], column, value, True)))
    keys = pilots.keys
    events = [(keys[c], kind, v) for column, value, kind, *_ in found
              for c, v in zip(column.tolist(), value)]
    return (events, np.concatenate([f[3] for f in found]),
            np.concatenate([f[4] for f in found]))


def _best_events(pilots: _Table, n_a: int, n_events: int) -> list[SurfaceEvent]:
    """The ``n_events`` `_proposals` whose pilot frequencies differ most in log ratio
    (counts smoothed by 1/2, both directions)."""
    events, counts_a, counts_b = _proposals(pilots, n_a)
    n_b = len(pilots.numbers) - n_a
    ratio = np.abs(np.log((counts_a + 0.5) / (n_a + 1)) - np.log((counts_b + 0.5) / (n_b + 1)))
    return [SurfaceEvent(*events[n]) for n in np.argsort(-ratio, kind="stable")[:n_events].tolist()]


def audit_surface(release: Callable, a, b, n_runs: int = 400, pilot_runs: int = 200,
                  n_events: int = 16, confidence: float = 0.95, delta: float = 0.0,
                  random_state: RandomStateLike = None) -> EpsilonLowerBound:
    r"""Audit *everything* a release publishes, with events chosen on pilot runs.

    ``release(data, seed)`` returns what one run publishes as a nested
    mapping (predictions, neighbour ids and weights, public arrays, the
    report's text...), flattened by [`flatten_release`][].  ``pilot_runs``
    runs on each dataset propose events (a key present; a value seen in at
    least 5 % of one side's runs; thresholds at the pooled quantiles) and keep
    the ``n_events`` whose frequencies differ most; ``n_runs`` fresh runs on
    each dataset, with seeds disjoint from the pilots', then bound ε for those
    events alone, as [`dprec.audit.estimate_epsilon_lower_bound`][] does (the
    choice is made on other runs, so it does not bias the bound).

    A deterministic release that differs between the datasets (an exact
    similarity used as a weight, an array in the data's order, a count in the
    report) gives an event of probability 1 on one side and 0 on the other,
    and a bound of about ``ln(n_runs)`` at once.

    Returns
    -------
    EpsilonLowerBound
        With ``event`` naming the key and the value.
    """
    n_runs = check_int(n_runs, "n_runs", minimum=1)
    pilot_runs = check_int(pilot_runs, "pilot_runs", minimum=1)
    n_events = check_int(n_events, "n_events", minimum=1)
    rng = check_random_state(random_state)
    seeds = rng.choice(2**62, size=2 * (n_runs + pilot_runs), replace=False).tolist()
    pilot_a = [flatten_release(release(a, seed)) for seed in seeds[:pilot_runs]]
    pilot_b = [flatten_release(release(b, seed)) for seed in seeds[pilot_runs:2 * pilot_runs]]
    pilots = _Table(pilot_a + pilot_b)
    if not pilots.keys:
        raise ValueError("the release published nothing: no event to audit")
    events = _best_events(pilots, pilot_runs, n_events)
    rest = seeds[2 * pilot_runs:]
    counts_a = _counts(events, (release(a, seed) for seed in rest[:n_runs]))
    counts_b = _counts(events, (release(b, seed) for seed in rest[n_runs:]))
    return EpsilonLowerBound.from_counts([event.name for event in events], counts_a, n_runs,
                                         counts_b, n_runs, confidence, delta)


def _counts(events: list[SurfaceEvent], outputs: Iterable) -> np.ndarray:
    """How often each event occurs over the runs' ``outputs`` (each flattened once)."""
    runs = [flatten_release(output) for output in outputs]
    return np.array([int(event.hits(runs).sum()) for event in events])
