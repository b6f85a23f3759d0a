"""Statistical privacy audits: lower bounds on ε from samples.

A mechanism ``M`` is (ε, δ)-DP when, for neighbouring inputs ``a`` and ``b``
and every output event ``E``, ``P[M(a) ∈ E] ≤ e^ε P[M(b) ∈ E] + δ`` (and the
same with ``a`` and ``b`` swapped).  Run ``M`` many times on ``a`` and on
``b``, count how often each event of a family occurs, and bound the two
probabilities with Clopper–Pearson intervals: with confidence at least
``confidence`` (simultaneously over the family, Bonferroni),

    ε ≥ ln( (p̲_a(E) − δ) / p̄_b(E) )     for every event E,

where ``p̲`` is a lower and ``p̄`` an upper confidence bound.  The largest of
these is a lower bound on the true ε of the implementation: if it exceeds the
ε the mechanism declares, the implementation is (with that confidence) not as
private as it claims.  This is the black-box audit of Ding et al., "Detecting
Violations of Differential Privacy" (CCS 2018) and Jagielski, Ullman & Oprea,
"Auditing Differentially Private Machine Learning" (NeurIPS 2020), with the
binomial bounds of Clopper & Pearson (Biometrika 1934).

Two levels:

* [`estimate_epsilon_lower_bound`][] takes samples already drawn (any
  array whose first axis indexes runs) and events (callables that map the
  samples to one boolean per run);
* [`audit_release`][] and [`audit_model`][] draw them: they run a whole
  pipeline (a release function, or a model factory fitted and queried) on two
  neighbouring datasets with independent seeds, many times, and return the
  same bound.  [`with_rating`][] builds the neighbouring datasets (one
  rating changed, added or removed);
* [`audit_surface`][] needs no events: the release returns *everything*
  it publishes as a nested mapping (flattened by [`flatten_release`][]),
  pilot runs choose the events that separate the two datasets most (a key
  present in one and not the other, an exact value, a threshold), and
  fresh runs measure them.  Released values that should be noisy but are
  exact, or arrays whose positions follow the data's order, are found
  without anyone naming the event in advance.

See [Privacy accounting](../privacy.md) for the audits of every component and their results.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from ._rng import RandomStateLike, check_random_state
from ._validation import check_int, check_real

__all__ = [
    "Event",
    "EpsilonLowerBound",
    "audit_model",
    "audit_release",
    "audit_surface",
    "flatten_release",
    "with_rating",
    "clopper_pearson",
    "epsilon_lower_bound_from_counts",
    "estimate_epsilon_lower_bound",
    "threshold_events",
    "value_events",
    "membership_events",
    "lattice_resolution",
]


@dataclass(frozen=True)
class Event:
    """A named output event: ``indicator(samples)`` is one bool per run."""

    name: str
    indicator: Callable[[np.ndarray], np.ndarray]

    def __call__(self, samples: np.ndarray) -> np.ndarray:
        hits = np.asarray(self.indicator(samples))
        if hits.dtype != bool or hits.shape != (len(samples),):
            raise ValueError(f"event {self.name!r} must return one bool per run "
                             f"(shape ({len(samples)},)), got {hits.dtype} {hits.shape}")
        return hits


def threshold_events(thresholds: Iterable[float]) -> list[Event]:
    """Events ``{x > t}`` for scalar outputs, one per threshold (Laplace, Gaussian)."""
    return [Event(f"x > {t:g}", lambda x, t=float(t): np.asarray(x) > t) for t in thresholds]


def value_events(values: Iterable[int]) -> list[Event]:
    """Events ``{x == v}`` for discrete scalar outputs (randomised response)."""
    return [Event(f"x == {v}", lambda x, v=v: np.asarray(x) == v) for v in values]


def membership_events(items: Iterable[int]) -> list[Event]:
    """Events ``{j ∈ row}`` for set-valued outputs given as rows (top-k, neighbour sets)."""
    return [Event(f"{j} in output", lambda x, j=j: (np.asarray(x) == j).any(axis=-1))
            for j in items]


def clopper_pearson(successes, trials, alpha: float,
                    side: str = "lower") -> np.ndarray:
    r"""One-sided Clopper–Pearson bound on a binomial proportion.

    ``side="lower"``: ``B⁻¹(α; k, n − k + 1)`` (0 when ``k = 0``);
    ``side="upper"``: ``B⁻¹(1 − α; k + 1, n − k)`` (1 when ``k = n``), each
    holding with probability at least ``1 − α`` (Clopper & Pearson 1934).
    Vectorised over ``successes``.
    """
    alpha = check_real(alpha, "alpha", low=0.0, high=1.0, low_inclusive=False,
                       high_inclusive=False)
    k = np.asarray(successes, dtype=np.float64)
    n = np.asarray(trials, dtype=np.float64)
    if np.any(k < 0) or np.any(k > n):
        raise ValueError("successes must lie in 0 .. trials")
    if side == "lower":
        with np.errstate(invalid="ignore", divide="ignore"):
            bound = stats.beta.ppf(alpha, k, n - k + 1)
        return np.where(k == 0, 0.0, bound)
    if side == "upper":
        with np.errstate(invalid="ignore", divide="ignore"):
            bound = stats.beta.ppf(1.0 - alpha, k + 1, n - k)
        return np.where(k == n, 1.0, bound)
    raise ValueError(f"side must be 'lower' or 'upper', got {side!r}")


@dataclass(frozen=True)
class EpsilonLowerBound:
    """The result of an audit.

    Attributes
    ----------
    epsilon : float
        The lower bound on ε (``-inf`` if no event separates the samples).
    event : str
        The event achieving it, and ``direction`` ``"a/b"`` or ``"b/a"``.
    per_event : numpy.ndarray
        Lower bound for each event (max over both directions).
    counts_a, counts_b : numpy.ndarray
        How often each event occurred; ``n_a``, ``n_b`` runs.
    confidence : float
        Simultaneous confidence of all the bounds.
    """

    epsilon: float
    event: str
    direction: str
    per_event: np.ndarray
    counts_a: np.ndarray
    counts_b: np.ndarray
    n_a: int
    n_b: int
    confidence: float

    def __float__(self) -> float:
        return self.epsilon

    def violates(self, declared_epsilon: float) -> bool:
        """True if the lower bound exceeds ``declared_epsilon`` (a violation found)."""
        return self.epsilon > declared_epsilon


def epsilon_lower_bound_from_counts(counts_a, n_a: int, counts_b, n_b: int,
                                    confidence: float = 0.95,
                                    delta: float = 0.0) -> np.ndarray:
    r"""Per-event lower bounds on ε from event counts in two sets of runs.

    For each event and each direction,
    ``ln((p̲_a − δ) / p̄_b)`` with one-sided Clopper–Pearson bounds at level
    ``α / (4m)`` (``α = 1 − confidence``, ``m`` events, four bounds per event),
    so that all hold together with probability ``≥ confidence``.  Returns the
    larger direction per event (``-inf`` where nothing can be concluded).
    """
    forward, backward = _directional_bounds(counts_a, n_a, counts_b, n_b, confidence, delta)
    return np.maximum(forward, backward)


def _directional_bounds(counts_a, n_a, counts_b, n_b, confidence, delta):
    """``(ln((p̲_a − δ)/p̄_b), ln((p̲_b − δ)/p̄_a))`` per event, Bonferroni over all."""
    n_a = check_int(n_a, "n_a", minimum=1)
    n_b = check_int(n_b, "n_b", minimum=1)
    confidence = check_real(confidence, "confidence", low=0.0, high=1.0,
                            low_inclusive=False, high_inclusive=False)
    delta = check_real(delta, "delta", low=0.0, high=1.0, high_inclusive=False)
    counts_a = np.atleast_1d(np.asarray(counts_a))
    counts_b = np.atleast_1d(np.asarray(counts_b))
    if counts_a.shape != counts_b.shape or counts_a.ndim != 1:
        raise ValueError("counts_a and counts_b must be 1-D of the same length")
    alpha = (1.0 - confidence) / (4 * max(1, counts_a.size))
    low_a = clopper_pearson(counts_a, n_a, alpha, "lower")
    up_a = clopper_pearson(counts_a, n_a, alpha, "upper")
    low_b = clopper_pearson(counts_b, n_b, alpha, "lower")
    up_b = clopper_pearson(counts_b, n_b, alpha, "upper")
    return _log_ratio(low_a - delta, up_b), _log_ratio(low_b - delta, up_a)


def _log_ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.log(numerator) - np.log(denominator)
    return np.where(numerator > 0, out, -np.inf)


def estimate_epsilon_lower_bound(samples_a, samples_b, events: Sequence[Event | Callable],
                                 confidence: float = 0.95,
                                 delta: float = 0.0) -> EpsilonLowerBound:
    r"""A lower bound on the ε of a mechanism from its outputs on two neighbouring inputs.

    Parameters
    ----------
    samples_a, samples_b : array_like
        Outputs of independent runs of the mechanism on the neighbouring
        inputs ``a`` and ``b``; the first axis indexes runs.
    events : sequence of Event or callables
        The output events to test; each maps the samples to one bool per run.
        Choose them before looking at the samples (or on separate samples):
        choosing the best event on the same runs biases the bound upwards.
    confidence : float
        Probability (over the runs) that the returned bound is valid.
    delta : float
        The δ the mechanism declares (0 for pure DP).

    Returns
    -------
    EpsilonLowerBound
        ``.epsilon`` is the bound, ``.violates(declared)`` the verdict.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> a = rng.laplace(0.0, 1.0, 100_000); b = rng.laplace(1.0, 1.0, 100_000)
    >>> audit = estimate_epsilon_lower_bound(a, b, threshold_events([1.0, 1.5, 2.0]))
    >>> 0.8 < audit.epsilon <= 1.0
    True
    """
    samples_a = np.asarray(samples_a)
    samples_b = np.asarray(samples_b)
    if samples_a.ndim < 1 or samples_b.ndim < 1 or not len(samples_a) or not len(samples_b):
        raise ValueError("samples_a and samples_b must hold at least one run each")
    events = [e if isinstance(e, Event) else Event(getattr(e, "__name__", repr(e)), e)
              for e in events]
    if not events:
        raise ValueError("events must not be empty")
    counts_a = np.array([int(e(samples_a).sum()) for e in events])
    counts_b = np.array([int(e(samples_b).sum()) for e in events])
    forward, backward = _directional_bounds(counts_a, len(samples_a), counts_b,
                                            len(samples_b), confidence, delta)
    per_event = np.maximum(forward, backward)
    best = int(np.argmax(per_event))
    direction = "a/b" if forward[best] >= backward[best] else "b/a"
    return EpsilonLowerBound(
        epsilon=float(per_event[best]), event=events[best].name, direction=direction,
        per_event=per_event, counts_a=counts_a, counts_b=counts_b,
        n_a=len(samples_a), n_b=len(samples_b), confidence=float(confidence),
    )


def lattice_resolution(values) -> float:
    """The largest power of two dividing every value (``inf`` if all are zero).

    A sampler whose outputs all lie on a grid ``2**-j`` has resolution
    ``>= 2**-j``; floating-point Laplace noise has a resolution that depends on
    the input (Mironov 2012), typically near ``2**-1074`` for outputs close to 0.
    """
    x = np.asarray(values, dtype=np.float64).ravel()
    if not np.isfinite(x).all():
        raise ValueError("values must be finite")
    x = x[x != 0.0]
    if not x.size:
        return math.inf
    mantissa, exponent = np.frexp(np.abs(x))          # x = m 2**e, m in [0.5, 1)
    integer = (mantissa * 2.0**53).astype(np.int64)  # exact: 53-bit integer
    lowest = integer & -integer                       # lowest set bit
    trailing = np.frexp(lowest.astype(np.float64))[1] - 1
    return math.ldexp(1.0, int(np.min(exponent - 53 + trailing)))


# ----------------------------------------------------------------------------
# neighbouring datasets, run end to end
# ----------------------------------------------------------------------------

def _stack(outputs: list) -> np.ndarray:
    """Outputs of the runs as one array whose first axis indexes runs (objects if ragged)."""
    try:
        stacked = np.asarray(outputs)
        if stacked.dtype != object and stacked.shape[:1] == (len(outputs),):
            return stacked
    except ValueError:
        pass
    out = np.empty(len(outputs), dtype=object)
    out[:] = outputs
    return out


def audit_release(release: Callable, a, b, events: Sequence[Event | Callable],
                  n_runs: int = 1000, confidence: float = 0.95, delta: float = 0.0,
                  random_state: RandomStateLike = None,
                  batched: bool = False) -> EpsilonLowerBound:
    r"""Audit a release end to end on two neighbouring inputs.

    Runs ``release(a, seed)`` and ``release(b, seed)`` ``n_runs`` times each,
    with independent seeds (never shared between ``a`` and ``b``: a shared
    seed would let seeded noise cancel), and bounds ε from the events'
    counts ([`estimate_epsilon_lower_bound`][]).

    Parameters
    ----------
    release : callable
        ``release(data, seed) -> output`` for one run, or with ``batched``
        ``release(data, seeds) -> outputs`` for an array of seeds (first axis
        of the outputs: runs), e.g. a local randomiser applied to many copies
        of one user's data at once.
    a, b : any
        The neighbouring inputs (datasets, trainsets, rows...).
    events : sequence of Event or callables
        Fixed before the runs (see [`estimate_epsilon_lower_bound`][]).
    n_runs : int
        Runs on each input.
    confidence, delta : float
        As in [`estimate_epsilon_lower_bound`][].
    random_state : None, int, RandomState or Generator
        The auditor's own randomness (the seeds of the runs).
    batched : bool
        Whether ``release`` takes an array of seeds.

    Returns
    -------
    EpsilonLowerBound
    """
    n_runs = check_int(n_runs, "n_runs", minimum=1)
    rng = check_random_state(random_state)
    seeds = rng.choice(2**62, size=2 * n_runs, replace=False)
    if batched:
        samples_a = release(a, seeds[:n_runs])
        samples_b = release(b, seeds[n_runs:])
    else:
        samples_a = _stack([release(a, int(seed)) for seed in seeds[:n_runs]])
        samples_b = _stack([release(b, int(seed)) for seed in seeds[n_runs:]])
    return estimate_epsilon_lower_bound(samples_a, samples_b, events, confidence, delta)


def audit_model(factory: Callable, trainset_a, trainset_b, query: Callable,
                events: Sequence[Event | Callable], n_runs: int = 1000,
                confidence: float = 0.95, delta: float = 0.0,
                random_state: RandomStateLike = None) -> EpsilonLowerBound:
    r"""Audit a Surprise model end to end: fit on neighbouring trainsets, query, count events.

    Each run builds ``factory(seed)`` (an unfitted algorithm whose
    ``random_state`` is ``seed``), fits it on the trainset and returns
    ``query(fitted)``: a prediction, a neighbour list, a detail.  Everything
    the model does with its randomness (sketch noise, selection, weights) is
    then part of the audit.

    Parameters
    ----------
    factory : callable
        ``factory(seed) -> algorithm``.
    trainset_a, trainset_b : surprise.Trainset
        Neighbouring trainsets (e.g. from [`with_rating`][]).
    query : callable
        ``query(fitted) -> output``; use raw ids (inner ids may differ
        between the two trainsets).
    events, n_runs, confidence, delta, random_state
        As in [`audit_release`][].

    Examples
    --------
    >>> from dprec import PrivateKNN, datasets
    >>> data = datasets.synthetic(30, 20, 300, random_state=0)
    >>> uid, iid, _, _ = data.raw_ratings[0]
    >>> a = data.build_full_trainset()
    >>> b = with_rating(data, uid, iid, None).build_full_trainset()
    >>> bound = audit_model(lambda s: PrivateKNN(k=3, random_state=s), a, b,
    ...                     lambda m: m.predict(uid, iid).est,
    ...                     [lambda est: np.asarray(est) > 3.0], n_runs=20, random_state=0)
    >>> bound.epsilon <= math.inf
    True
    """
    def release(trainset, seed):
        return query(factory(seed).fit(trainset))

    return audit_release(release, trainset_a, trainset_b, events, n_runs, confidence, delta,
                         random_state)


def with_rating(data, uid, iid, rating: float | None):
    """A copy of a Surprise ``Dataset`` in which ``uid``'s rating of ``iid`` is ``rating``.

    ``rating=None`` removes it; a pair not in the data is added.  The input is
    not modified.  Neighbouring datasets for [`audit_model`][] (one rating
    changed, added or removed).

    Raises
    ------
    ValueError
        If ``rating`` is None and ``uid`` did not rate ``iid``.
    """
    import copy

    raw = list(data.raw_ratings)
    where = [n for n, (u, i, *_) in enumerate(raw) if u == uid and i == iid]
    if rating is None and not where:
        raise ValueError(f"{uid!r} did not rate {iid!r}: nothing to remove")
    if rating is not None:
        rating = check_real(rating, "rating")
    if where:
        n = where[0]
        if rating is None:
            del raw[n]
        else:
            raw[n] = (raw[n][0], raw[n][1], rating, *raw[n][3:])
    else:
        raw.append((uid, iid, rating, None))
    out = copy.copy(data)
    out.raw_ratings = raw
    return out


# ----------------------------------------------------------------------------
# everything a release publishes, events chosen on pilot runs
# ----------------------------------------------------------------------------

def flatten_release(output, prefix: str = "") -> dict[str, object]:
    """A release as a flat ``{key: value}`` mapping of scalars.

    Mappings recurse (``"a/b"``), pandas Series and DataFrames are keyed by
    their labels (``"x[label]"``, ``"x[row, column]"``), numpy arrays, lists
    and tuples by position (``"x[3]"``: so an array whose positions follow the
    data's order is audited as such); numbers become floats, strings stay;
    ``None`` is left out (absent).
    """
    out: dict[str, object] = {}
    if output is None:
        return out
    if isinstance(output, Mapping):
        for key, value in output.items():
            out.update(flatten_release(value, f"{prefix}{key}/"))
        return out
    if isinstance(output, pd.DataFrame):
        for (row, column), value in output.stack(future_stack=True).items():
            out.update(flatten_release(value, f"{prefix}[{row!r}, {column!r}]/"))
        return out
    if isinstance(output, pd.Series):
        for label, value in output.items():
            out.update(flatten_release(value, f"{prefix}[{label!r}]/"))
        return out
    if isinstance(output, (np.ndarray, list, tuple)):
        array = np.asarray(output, dtype=object) if not isinstance(output, np.ndarray) \
            else output
        for index in np.ndindex(array.shape):
            out.update(flatten_release(array[index], f"{prefix}{list(index)}/"))
        return out
    key = prefix.rstrip("/") or "value"
    if isinstance(output, (bool, np.bool_, numbers.Number)):
        out[key] = float(output)
    else:
        out[key] = str(output)
    return out


@dataclass(frozen=True)
class SurfaceEvent:
    """An event on one key of a flattened release: present, equal to a value, or above a
    threshold (an absent key is in neither of the last two)."""

    key: str
    kind: str
    value: object = None

    @property
    def name(self) -> str:
        if self.kind == "present":
            return f"{self.key} present"
        return f"{self.key} {'==' if self.kind == 'equals' else '>'} {self.value!r}"

    def hits(self, frame: pd.DataFrame) -> np.ndarray:
        if self.key not in frame:
            return np.zeros(len(frame), dtype=bool)
        column = frame[self.key]
        if self.kind == "present":
            return column.notna().to_numpy()
        if self.kind == "equals":
            return (column == self.value).to_numpy(dtype=bool)
        numeric = pd.to_numeric(column, errors="coerce")
        return (numeric > self.value).to_numpy(dtype=bool)


def _frame(outputs: list) -> pd.DataFrame:
    rows = [flatten_release(output) for output in outputs]
    return pd.DataFrame.from_records(rows)


def _candidates(pilot_a: pd.DataFrame, pilot_b: pd.DataFrame,
                quantiles: Sequence[float] = (0.1, 0.25, 0.5, 0.75, 0.9),
                frequent: float = 0.05) -> list[SurfaceEvent]:
    """Every event the pilots suggest: presence of each key, its frequent exact values
    (at least ``frequent`` of one side's runs) and thresholds at pooled quantiles."""
    events = []
    for key in dict.fromkeys([*pilot_a.columns, *pilot_b.columns]):
        events.append(SurfaceEvent(key, "present"))
        pooled = pd.concat([pilot_a.get(key, pd.Series(dtype=object)),
                            pilot_b.get(key, pd.Series(dtype=object))]).dropna()
        if not len(pooled):
            continue
        for side in (pilot_a, pilot_b):
            if key in side:
                shares = side[key].value_counts(normalize=True, dropna=True)
                events.extend(SurfaceEvent(key, "equals", value)
                              for value in shares.index[shares >= frequent])
        numeric = pd.to_numeric(pooled, errors="coerce").dropna()
        if len(numeric) and numeric.nunique() > 1:
            events.extend(SurfaceEvent(key, "above", float(t))
                          for t in np.unique(np.quantile(numeric.to_numpy(float), quantiles)))
    return list(dict.fromkeys(events))


def _best_events(events: list[SurfaceEvent], pilot_a: pd.DataFrame, pilot_b: pd.DataFrame,
                 n_events: int) -> list[SurfaceEvent]:
    """The ``n_events`` events whose pilot frequencies differ most in log ratio (counts
    smoothed by 1/2, both directions)."""
    if not events:
        return []
    n_a, n_b = len(pilot_a), len(pilot_b)
    counts_a = np.array([event.hits(pilot_a).sum() for event in events], dtype=float)
    counts_b = np.array([event.hits(pilot_b).sum() for event in events], dtype=float)
    ratio = np.abs(np.log((counts_a + 0.5) / (n_a + 1)) - np.log((counts_b + 0.5) / (n_b + 1)))
    order = np.argsort(-ratio, kind="stable")[:n_events]
    return [events[n] for n in order]


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
    events alone, as [`estimate_epsilon_lower_bound`][] does (the choice is
    made on other runs, so it does not bias the bound).

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
    pilot_a = _frame([release(a, seed) for seed in seeds[:pilot_runs]])
    pilot_b = _frame([release(b, seed) for seed in seeds[pilot_runs:2 * pilot_runs]])
    events = _best_events(_candidates(pilot_a, pilot_b), pilot_a, pilot_b, n_events)
    if not events:
        raise ValueError("the release published nothing: no event to audit")
    rest = seeds[2 * pilot_runs:]
    runs_a = _frame([release(a, seed) for seed in rest[:n_runs]])
    runs_b = _frame([release(b, seed) for seed in rest[n_runs:]])
    counts_a = np.array([int(event.hits(runs_a).sum()) for event in events])
    counts_b = np.array([int(event.hits(runs_b).sum()) for event in events])
    forward, backward = _directional_bounds(counts_a, n_runs, counts_b, n_runs, confidence,
                                            delta)
    per_event = np.maximum(forward, backward)
    best = int(np.argmax(per_event))
    return EpsilonLowerBound(
        epsilon=float(per_event[best]), event=events[best].name,
        direction="a/b" if forward[best] >= backward[best] else "b/a", per_event=per_event,
        counts_a=counts_a, counts_b=counts_b, n_a=n_runs, n_b=n_runs,
        confidence=float(confidence))
