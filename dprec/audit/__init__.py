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

Two levels here, and two more in [`dprec.audit.one_run`][] and [`dprec.audit.surface`][]:

* [`estimate_epsilon_lower_bound`][] takes samples already drawn (any
  array whose first axis indexes runs) and events (callables that map the
  samples to one boolean per run);
* [`audit_release`][] and [`audit_model`][] draw them: they run a whole
  pipeline (a release function, or a model factory fitted and queried) on two
  neighbouring datasets with independent seeds, many times, and return the
  same bound.  [`with_rating`][] builds the neighbouring datasets (one
  rating changed, added or removed);
* [`dprec.audit.one_run`][] fits a model **once**: canaries (users or
  ratings), each included with probability ½, are guessed from its outputs
  and the guesses bound ε (Steinke, Nasr & Jagielski, NeurIPS 2023), where
  refitting hundreds of times would cost too much;
* [`dprec.audit.surface`][] needs no events: the release returns
  *everything* it publishes, and pilot runs choose the events that separate
  the two datasets most.

See [Privacy accounting](../privacy.md) for the audits of every component and their results.

The package `dprec.audit`: these audits, `one_run` (the one-run audit), `surface` (the
release surface of a model, audited) and `data_usage` (how often each user's ratings
serve others). Floor 4 of the package map in ``docs/development.md``. May import:
`dprec.utils`, `dprec.accountant`, `dprec.mechanisms`, `dprec.datasets`,
`dprec.evaluation`, `dprec.similarity`, `dprec.selectors`, `dprec.knn`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from ..utils._rng import RandomStateLike, check_random_state
from ..utils._validation import check_int, check_real

__all__ = [
    "Event",
    "EpsilonLowerBound",
    "audit_model",
    "audit_release",
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
    from scipy import stats  # here, on first use: importing scipy.stats takes 0.5 s

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

    @classmethod
    def from_counts(cls, names: Sequence[str], counts_a, n_a: int, counts_b, n_b: int,
                    confidence: float = 0.95, delta: float = 0.0) -> EpsilonLowerBound:
        """The bound of the events ``names`` that occurred ``counts_a`` times in ``n_a``
        runs on one input and ``counts_b`` in ``n_b`` on the other (both directions,
        Bonferroni over the events, as `epsilon_lower_bound_from_counts`)."""
        counts_a, counts_b = np.asarray(counts_a), np.asarray(counts_b)
        forward, backward = _directional_bounds(counts_a, n_a, counts_b, n_b, confidence,
                                                delta)
        per_event = np.maximum(forward, backward)
        best = int(np.argmax(per_event))
        return cls(epsilon=float(per_event[best]), event=names[best],
                   direction="a/b" if forward[best] >= backward[best] else "b/a",
                   per_event=per_event, counts_a=counts_a, counts_b=counts_b, n_a=n_a,
                   n_b=n_b, confidence=float(confidence))


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
    return EpsilonLowerBound.from_counts([e.name for e in events], counts_a, len(samples_a),
                                         counts_b, len(samples_b), confidence, delta)


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
