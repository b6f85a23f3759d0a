"""Privacy audits of the mechanisms, and tests of the audit helper itself.

Each audit runs a mechanism on two neighbouring inputs (≥ 10^5 runs each),
bounds ε from below with Clopper–Pearson intervals over a fixed family of
output events, and checks that the bound stays at or below the declared ε.
Each is paired with a power check: the same audit flags a mechanism that
uses half the noise it needs (the bound exceeds the declared ε).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dprec import audit as A
from dprec import mechanisms as M

N = 200_000
CONFIDENCE = 0.99
LAPLACE_EVENTS = A.threshold_events(np.arange(-3.0, 6.01, 0.25))


def _audit(a, b, events, delta=0.0):
    return A.estimate_epsilon_lower_bound(a, b, events, CONFIDENCE, delta=delta)


# ------------------------------------------------------ randomised response


@pytest.mark.parametrize("n_values, epsilon", [(2, 0.5), (4, 1.0), (8, 2.0)])
def test_randomized_response_audit(n_values, epsilon):
    events = A.value_events(range(n_values))
    zeros, ones = np.zeros(N, dtype=int), np.ones(N, dtype=int)
    honest = _audit(M.randomized_response(zeros, n_values, epsilon, 1),
                    M.randomized_response(ones, n_values, epsilon, 2), events)
    assert honest.epsilon <= epsilon
    assert honest.epsilon > 0.9 * epsilon            # the audit is nearly tight
    # power: RR run with 2ε while declaring ε is flagged
    cheat = _audit(M.randomized_response(zeros, n_values, 2 * epsilon, 3),
                   M.randomized_response(ones, n_values, 2 * epsilon, 4), events)
    assert cheat.violates(epsilon)


# ------------------------------------------------------------------ Laplace


@pytest.mark.parametrize("scale, sensitivity", [(1.0, 1.0), (2.0, 0.5)])
def test_lattice_laplace_audit(scale, sensitivity):
    declared = M.laplace_epsilon(scale, sensitivity)
    events = A.threshold_events(np.arange(-3.0, 6.01, 0.25) * scale)
    honest = _audit(M.laplace(np.zeros(N), scale, 1),
                    M.laplace(np.full(N, sensitivity), scale, 2), events)
    assert honest.epsilon <= declared
    assert honest.epsilon > 0.85 * declared
    # power: half the scale, same declaration
    cheat = _audit(M.laplace(np.zeros(N), scale / 2, 3),
                   M.laplace(np.full(N, sensitivity), scale / 2, 4), events)
    assert cheat.violates(declared)


def test_numpy_laplace_passes_the_threshold_audit():
    # threshold events cannot see the low bits: the float sampler looks fine here ...
    audit = _audit(M.laplace(np.zeros(N), 1.0, 1, sampler="numpy"),
                   M.laplace(np.ones(N), 1.0, 2, sampler="numpy"), LAPLACE_EVENTS)
    assert audit.epsilon <= 1.0


def _low_bit_events():
    """Mironov's distinguisher: outputs in (-1/2, 1/2) that are not multiples of 2**-53.

    ``fl(1 + L)`` in that interval is always a multiple of ``2**-53``;
    ``fl(0 + L) = L`` rarely is.
    """
    def fine_bits(y):
        y = np.asarray(y)
        return (np.abs(y) < 0.5) & (y * 2.0**53 != np.floor(y * 2.0**53))

    return [A.Event("|y| < 1/2, not a multiple of 2**-53", fine_bits)]


def test_low_bit_audit_flags_numpy_but_not_the_lattice():
    n = 100_000
    leaky = _audit(M.laplace(np.zeros(n), 1.0, 1, sampler="numpy"),
                   M.laplace(np.ones(n), 1.0, 2, sampler="numpy"), _low_bit_events())
    assert leaky.violates(5.0)                       # far beyond the declared ε = 1
    safe = _audit(M.laplace(np.zeros(n), 1.0, 1), M.laplace(np.ones(n), 1.0, 2),
                  _low_bit_events() + LAPLACE_EVENTS)
    assert safe.epsilon <= 1.0


def test_opendp_laplace_audit():
    pytest.importorskip("opendp")
    n = 100_000
    declared = M.laplace_epsilon(1.0, 1.0, sampler="opendp")
    audit = _audit(M.laplace(np.zeros(n), 1.0, None, sampler="opendp"),
                   M.laplace(np.ones(n), 1.0, None, sampler="opendp"),
                   _low_bit_events() + LAPLACE_EVENTS)
    assert audit.epsilon <= declared


# ---------------------------------------------------------------- Gaussian


def test_gaussian_audit():
    delta = 1e-3
    sigma = M.gaussian_sigma(1.0, delta, 1.0)
    events = A.threshold_events(np.arange(-3.0, 12.01, 0.25))
    honest = _audit(M.gaussian(np.zeros(N), sigma, 1), M.gaussian(np.ones(N), sigma, 2),
                    events, delta=delta)
    assert honest.epsilon <= 1.0
    cheat = _audit(M.gaussian(np.zeros(N), sigma / 2, 3),
                   M.gaussian(np.ones(N), sigma / 2, 4), events, delta=delta)
    assert cheat.violates(1.0)


# ------------------------------------------------------ exponential mechanism


def test_exponential_mechanism_audit():
    # worst case for one draw: candidate 0 loses Δ while the 49 others gain Δ,
    # so P[0] moves by a factor close to e^ε
    m, epsilon = 50, 1.0
    a = np.zeros(m)
    a[0] = 1.0
    b = 1.0 - a
    events = A.membership_events(range(3))
    honest = _audit(M.exponential_top_k(np.tile(a, (N, 1)), 1, epsilon, 1.0, 1),
                    M.exponential_top_k(np.tile(b, (N, 1)), 1, epsilon, 1.0, 2), events)
    assert honest.epsilon <= epsilon
    assert honest.epsilon > 0.8 * epsilon
    cheat = _audit(M.exponential_top_k(np.tile(a, (N, 1)), 1, 2 * epsilon, 1.0, 3),
                   M.exponential_top_k(np.tile(b, (N, 1)), 1, 2 * epsilon, 1.0, 4), events)
    assert cheat.violates(epsilon)


def test_exponential_top_k_audit_composes_to_epsilon():
    # k = 3 draws at ε/3 each; the event "0 is chosen" over the whole set
    m, k, epsilon = 30, 3, 1.5
    a = np.zeros(m)
    a[0] = 1.0
    b = 1.0 - a
    n = 100_000
    audit = _audit(M.exponential_top_k(np.tile(a, (n, 1)), k, epsilon, 1.0, 1),
                   M.exponential_top_k(np.tile(b, (n, 1)), k, epsilon, 1.0, 2),
                   A.membership_events(range(2)))
    assert 0.0 < audit.epsilon <= epsilon


# --------------------------------------------------------- the audit helper


def test_audit_bounds_are_valid_lower_bounds():
    # coverage: over 200 small audits of RR with known ε (tight on the event
    # x == 0), the bound exceeds the true ε in at most ~(1 - confidence) of
    # them; a point estimate instead of Clopper–Pearson would exceed it ~half
    # the time, which this test would catch.
    rng = np.random.default_rng(0)
    epsilon, n, trials, confidence = 1.0, 2_000, 200, 0.9
    events = A.value_events(range(2))
    over, naive_over = 0, 0
    for _ in range(trials):
        a = M.randomized_response(np.zeros(n, dtype=int), 2, epsilon, rng)
        b = M.randomized_response(np.ones(n, dtype=int), 2, epsilon, rng)
        over += A.estimate_epsilon_lower_bound(a, b, events, confidence).epsilon > epsilon
        pa, pb = (a == 0).mean(), (b == 0).mean()
        naive_over += math.log(pa / pb) > epsilon
    assert over <= trials * (1 - confidence)
    assert naive_over > trials / 4                   # the point estimate is not a bound


def test_identical_distributions_give_no_evidence():
    rng = np.random.default_rng(1)
    a, b = rng.laplace(size=N), rng.laplace(size=N)
    audit = A.estimate_epsilon_lower_bound(a, b, LAPLACE_EVENTS, CONFIDENCE)
    assert audit.epsilon <= 0.0


def test_audit_result_fields():
    a = np.zeros(1000, dtype=int)
    b = np.ones(1000, dtype=int)
    audit = A.estimate_epsilon_lower_bound(a, b, A.value_events([0, 1]), 0.95)
    assert audit.per_event.shape == (2,)
    assert audit.counts_a.tolist() == [1000, 0] and audit.counts_b.tolist() == [0, 1000]
    assert audit.n_a == audit.n_b == 1000
    # 1000 vs 0 occurrences: ε ≥ ln(p̲ / p̄) with p̄ = 1 − (α/8)^(1/1000)
    upper = 1 - (0.05 / 8) ** (1 / 1000)
    lower = (0.05 / 8) ** (1 / 1000)
    assert audit.epsilon == pytest.approx(math.log(lower / upper))
    assert float(audit) == audit.epsilon and audit.violates(1.0)
    assert audit.direction in ("a/b", "b/a") and audit.event in ("x == 0", "x == 1")
    # a plain callable is accepted as an event
    # (one event: Bonferroni over 4 bounds instead of 8)
    same = A.estimate_epsilon_lower_bound(a, b, [lambda x: x == 0], 0.95)
    alpha = 0.05 / 4
    assert same.epsilon == pytest.approx(math.log(alpha ** (1 / 1000) / (1 - alpha ** (1 / 1000))))


def test_audit_with_delta_discounts_rare_events():
    a = np.zeros(10_000, dtype=int)
    b = np.zeros(10_000, dtype=int)
    a[:50] = 1                                        # 0.5% of the runs, only under a
    events = A.value_events([1])
    assert A.estimate_epsilon_lower_bound(a, b, events, 0.95).epsilon > 1.0
    assert A.estimate_epsilon_lower_bound(a, b, events, 0.95, delta=0.01).epsilon == -math.inf


def test_clopper_pearson_edges():
    alpha = 0.05
    assert A.clopper_pearson(0, 100, alpha, "lower") == 0.0
    assert A.clopper_pearson(100, 100, alpha, "upper") == 1.0
    assert A.clopper_pearson(0, 100, alpha, "upper") == pytest.approx(1 - alpha ** (1 / 100))
    assert A.clopper_pearson(100, 100, alpha, "lower") == pytest.approx(alpha ** (1 / 100))
    lo, hi = (A.clopper_pearson(30, 100, alpha, s) for s in ("lower", "upper"))
    assert lo < 0.3 < hi
    with pytest.raises(ValueError, match="side"):
        A.clopper_pearson(1, 10, alpha, "both")
    with pytest.raises(ValueError, match="successes"):
        A.clopper_pearson(11, 10, alpha)
    with pytest.raises(ValueError, match="alpha"):
        A.clopper_pearson(1, 10, 0.0)


def test_audit_rejects_bad_input():
    a = np.zeros(10)
    with pytest.raises(ValueError, match="events"):
        A.estimate_epsilon_lower_bound(a, a, [])
    with pytest.raises(ValueError, match="one bool per run"):
        A.estimate_epsilon_lower_bound(a, a, [lambda x: x[:5] > 0])
    with pytest.raises(ValueError, match="samples"):
        A.estimate_epsilon_lower_bound([], a, A.threshold_events([0.0]))
    with pytest.raises(ValueError, match="confidence"):
        A.estimate_epsilon_lower_bound(a, a, A.threshold_events([0.0]), confidence=1.0)
    with pytest.raises(ValueError, match="delta"):
        A.estimate_epsilon_lower_bound(a, a, A.threshold_events([0.0]), delta=-0.1)


def test_membership_events_on_rows():
    rows = np.array([[0, 1], [2, 3], [1, 4]])
    hits = A.membership_events([1, 4])
    assert hits[0](rows).tolist() == [True, False, True]
    assert hits[1](rows).tolist() == [False, False, True]


def test_lattice_resolution():
    assert A.lattice_resolution([0.5, 0.75]) == 0.25
    assert A.lattice_resolution([3.0, -6.0]) == 1.0
    assert A.lattice_resolution([0.0]) == math.inf
    assert A.lattice_resolution([2.0**-1074, 1.0]) == 2.0**-1074
    assert A.lattice_resolution([2.0**60 + 2.0**8]) == 2.0**8
    with pytest.raises(ValueError, match="finite"):
        A.lattice_resolution([math.nan])


# ------------------------------------------------------------------ audit_surface
def test_flatten_release_keys_labels_positions_and_skips_none():
    import pandas as pd

    from dprec.audit.surface import flatten_release

    flat = flatten_release({"s": pd.Series([1.0, 2.0], index=["b", "a"]),
                            "a": np.array([[1, 2]]), "t": "x", "n": None, "f": True})
    assert flat == {"s/['b']": 1.0, "s/['a']": 2.0, "a/[0, 0]": 1.0, "a/[0, 1]": 2.0,
                    "t": "x", "f": 1.0}


def test_audit_surface_finds_an_exact_value_and_a_missing_key_unnamed():
    from dprec.audit.surface import audit_surface

    def release(data, seed):   # Laplace(1) on the value, but also the exact value, half the time
        rng = np.random.default_rng(seed)
        return {"noisy": data + rng.laplace(), "exact": data if rng.random() < 0.5 else None}

    bound = audit_surface(release, 0.0, 1.0, n_runs=300, pilot_runs=100, random_state=0)
    assert bound.epsilon > 2.5 and "exact" in bound.event


def test_audit_surface_does_not_refute_the_laplace_mechanism():
    from dprec.audit.surface import audit_surface

    def release(data, seed):
        return {"noisy": data + np.random.default_rng(seed).laplace(0.0, 1.0)}

    bound = audit_surface(release, 0.0, 1.0, n_runs=2000, pilot_runs=500, random_state=0)
    assert 0.3 < bound.epsilon <= 1.0


def test_audit_surface_checks_its_arguments():
    from dprec.audit.surface import audit_surface

    with pytest.raises(ValueError, match="n_events"):
        audit_surface(lambda d, s: {"x": d}, 0, 1, n_events=0)
    with pytest.raises(ValueError, match="published nothing"):
        audit_surface(lambda d, s: {}, 0, 1, n_runs=2, pilot_runs=2)


def _naive_events(runs_a: list[dict], runs_b: list[dict]) -> dict:
    """The pilots' candidate events counted one by one with pandas (the search before it
    was vectorised): {(key, kind, value): (count_a, count_b)}."""
    import pandas as pd

    from dprec.audit.surface import FREQUENT, QUANTILES

    a, b = pd.DataFrame.from_records(runs_a), pd.DataFrame.from_records(runs_b)

    def hits(frame, key, kind, value):
        if key not in frame:
            return 0
        column = frame[key]
        if kind == "present":
            return int(column.notna().sum())
        if kind == "equals":
            return int((column == value).sum())
        return int((pd.to_numeric(column, errors="coerce") > value).sum())

    events = {}
    for key in dict.fromkeys([*a.columns, *b.columns]):
        found = [(key, "present", None)]
        pooled = pd.concat([a.get(key, pd.Series(dtype=object)),
                            b.get(key, pd.Series(dtype=object))]).dropna()
        for side in (a, b):
            if key in side:
                shares = side[key].value_counts(normalize=True)
                found += [(key, "equals", v) for v in shares.index[shares >= FREQUENT]]
        numeric = pd.to_numeric(pooled, errors="coerce").dropna()
        if numeric.nunique() > 1:
            found += [(key, "above", float(t))
                      for t in np.unique(np.quantile(numeric.to_numpy(float), QUANTILES))]
        for event in found:
            events[event] = (hits(a, *event), hits(b, *event))
    return events


@pytest.mark.parametrize("seed", range(6))
def test_the_vectorised_search_proposes_and_counts_what_a_naive_one_does(seed):
    """Every event the pilots propose (a key present, a frequent number or text, a
    threshold), with its counts on both sides, as a pandas search event by event finds:
    keys absent from one side, text and numbers under one key, NaN, ties."""
    from dprec.audit.surface import SurfaceEvent, _proposals, _Table

    rng = np.random.default_rng(seed)

    def run(side):
        out = {f"k{j}": float(rng.integers(0, 4)) for j in range(rng.integers(3, 7))}
        out["noisy"] = float(rng.normal(side))
        if rng.random() < 0.3:
            out["mixed"] = str(rng.choice(["unknown", "error: ValueError"]))
        elif rng.random() < 0.5:
            out["mixed"] = float(rng.integers(0, 2))
        if side and rng.random() < 0.5:
            out["only b"] = "x"
        if rng.random() < 0.2:
            out["k0"] = math.nan
        return out

    runs_a = [run(0) for _ in range(int(rng.integers(5, 40)))]
    runs_b = [run(1) for _ in range(int(rng.integers(5, 40)))]
    expected = _naive_events(runs_a, runs_b)
    proposed, counts_a, counts_b = _proposals(_Table(runs_a + runs_b), len(runs_a))
    found = [SurfaceEvent(*event) for event in proposed]
    assert len(found) == len(set(found))
    counted = {(e.key, e.kind, e.value): (a, b) for e, a, b in zip(found, counts_a, counts_b)}
    assert all(counted[e.key, e.kind, e.value] == (e.hits(runs_a).sum(), e.hits(runs_b).sum())
               for e in found)
    exact = {k: v for k, v in expected.items() if k[1] != "above"}
    assert {k: v for k, v in counted.items() if k[1] != "above"} == exact
    thresholds = sorted((k[0], k[2], v) for k, v in expected.items() if k[1] == "above")
    mine = sorted((k[0], k[2], v) for k, v in counted.items() if k[1] == "above")
    assert [(k, c) for k, _, c in mine] == [(k, c) for k, _, c in thresholds]
    assert np.allclose([t for _, t, _ in mine], [t for _, t, _ in thresholds], rtol=1e-12)
