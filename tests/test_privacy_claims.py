"""Privacy claims end to end: what the mechanisms spend is what the accountant registers.

For every private configuration, the mechanisms that fit and prediction
actually call are recorded by a spy wrapped around each sampler where its
caller looks it up.  From the parameters they were called with (noise scales,
exponential coefficients, keep probabilities, Mallows θ), the ε/δ each one
spends is recomputed here from first principles (privacy maps written out in
this file, not dprec's), and compared with

* what the docstrings promise (hard-coded per configuration below), and
* ``privacy_report()``: one entry per mechanism applied, none missing, none
  extra, each at least what was spent per application (how the accountant
  counts applications per user is tested in ``tests/test_accounting.py``).

The public bounds a guarantee depends on (``tau`` for the MinHash sketches,
the rating range for the projections) raise or are reported when violated.
"""

from __future__ import annotations

import itertools
import math
import threading
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import special, stats
from surprise import Dataset, Reader
from surprise.model_selection import train_test_split

import dprec.mechanisms
import dprec.ranking.learner
import dprec.ranking.mallows
import dprec.selectors.ppns
import dprec.selectors.probabilistic
import dprec.similarity.minhash
import dprec.similarity.sjlt
from dprec import MallowsRanker, PrivateKNN, datasets
from dprec.accountant.ledger import PrivacyLeakWarning, Status, Unit
from dprec.selectors import PNCF

K = 6
EPSILON = 1.5


# ------------------------------------------------------------------ privacy maps
def lattice_epsilon(scale: float, sensitivity: float, changed: int = 1) -> float:
    """ε of the lattice Laplace sampler (docs/mechanisms.md, "Laplace"): the inputs are rounded to
    the grid ``γ = 2**(⌊log2 scale⌋ − 20)``, so ``changed`` coordinates whose values
    move by ``Δ`` in total move by at most ``⌈Δ/γ⌉ + changed − 1`` grid steps, and
    discrete Laplace noise of scale ``scale/γ`` steps costs ``γ/scale`` per step."""
    grid = 2.0 ** (math.floor(math.log2(scale)) - 20)
    if grid > scale * 2.0**-20:  # log2 rounded up at a power of two
        grid /= 2.0
    return (math.ceil(sensitivity / grid) + changed - 1) * grid / scale


def exponential_epsilon(coefficient: float, score_sensitivity: float, draws: int) -> float:
    """``draws`` exponential-mechanism draws with weights ``exp(c·q)``: ``2·c·Δq`` each."""
    return draws * 2.0 * coefficient * score_sensitivity


def randomized_response_epsilon(n_values: int, epsilon: float) -> float:
    """k-ary RR keeping with ``p = e^ε/(e^ε + n − 1)``: ``ln(p(n − 1)/(1 − p))``."""
    p = math.exp(epsilon) / (math.exp(epsilon) + n_values - 1)
    return math.log(p * (n_values - 1) / (1 - p))


def changed_coordinates(K: int, B: int, alpha: int, tau: int, delta: float) -> float:
    """Aumüller et al.'s bound on differing MinHash coordinates, made valid for small
    ``K r`` (dprec's documented correction): max of the paper's Chernoff bound and
    the exact binomial quantile, capped at ``K``."""
    r = alpha / tau * (1 - 1 / B)
    paper = K * r + math.sqrt(3 * math.log(1 / delta) * K * r)
    binomial = next(n for n in range(K + 1) if stats.binom.sf(n, K, r) <= delta)
    return min(K, max(paper, binomial))


def gaussian_delta(sigma: float, l2_sensitivity: float, epsilon: float) -> float:
    """Exact δ(ε) of the Gaussian mechanism (Balle & Wang 2018, Thm 8)."""
    a, b = l2_sensitivity / (2 * sigma), epsilon * sigma / l2_sensitivity
    return float(special.ndtr(a - b) - math.exp(epsilon) * special.ndtr(-a - b))


def transposition_loss(m: int) -> int:
    """The most a transposition changes the concordant pairs with any output (by
    enumeration for small m; ``2m − 3`` from the argument in dprec.ranking.mallows)."""
    if m < 2:
        return 0
    if m > 6:
        return 2 * m - 3

    def concordant(a, b):
        pos = {item: r for r, item in enumerate(b)}
        return sum(pos[x] < pos[y] for x, y in itertools.combinations(a, 2))

    ref = tuple(range(m))
    worst = 0
    for a, b in itertools.combinations(range(m), 2):
        swapped = list(ref)
        swapped[a], swapped[b] = swapped[b], swapped[a]
        for out in itertools.permutations(range(m)):
            worst = max(worst, abs(concordant(ref, out) - concordant(swapped, out)))
    return worst


def test_the_transposition_bound_is_2m_minus_3():
    assert [transposition_loss(m) for m in range(1, 7)] == [0, 1, 3, 5, 7, 9]


def test_lattice_epsilon_agrees_with_the_documented_rule():
    assert lattice_epsilon(1.0, 1.0) == 1.0
    assert lattice_epsilon(2.0, 1.0) == 0.5
    assert lattice_epsilon(1.0, 1.0 + 2**-30) == pytest.approx(1.0 + 2**-20)


# ------------------------------------------------------------------ the spy
class Spy:
    """Records the calls of samplers, wrapped where their callers look them up."""

    def __init__(self, monkeypatch) -> None:
        self.calls: list[tuple[str, dict]] = []
        self._monkeypatch = monkeypatch

    def wrap(self, owner, name: str, tag: str, record) -> None:
        original = getattr(owner, name)

        def wrapper(*args, **kwargs):
            entry = record(*args, **kwargs)  # before the call: nested calls come after
            entry["thread"] = threading.get_ident()  # blocks of queries run in threads
            self.calls.append((tag, entry))
            result = original(*args, **kwargs)
            entry["result"] = result
            return result

        self._monkeypatch.setattr(owner, name, wrapper)

    def of(self, tag: str) -> list[dict]:
        return [entry for t, entry in self.calls if t == tag]

    def tags(self) -> set[str]:
        return {t for t, _ in self.calls}


@pytest.fixture
def spy(monkeypatch):
    spy = Spy(monkeypatch)
    gumbel = "gumbel_keys"   # selectors.base's exact keys, looked up in each selector module

    def keys(scores, coefficient, noise, mask=None, stream=0):
        return {"c": coefficient, "scores": np.asarray(scores),
                "mask": np.ones(np.shape(scores), bool) if mask is None else np.asarray(mask)}

    spy.wrap(dprec.selectors.ppns, gumbel, "ppns:exponential", keys)
    spy.wrap(dprec.selectors.probabilistic, gumbel, "probabilistic:gumbel", keys)
    spy.wrap(dprec.selectors.pncf, gumbel, "pncf:exponential", keys)
    spy.wrap(dprec.mechanisms, "laplace_from_uniform", "pncf:laplace",
             lambda values, scale, uniforms: {"scale": scale})
    spy.wrap(PNCF, "select", "pncf:select",
             lambda self, sims, n_valid, k, noise, sensitivity=None:
             {"sensitivity": np.asarray(sensitivity, dtype=float)})
    spy.wrap(dprec.similarity.minhash, "randomized_response_from_log_uniform", "sketch:rr",
             lambda values, n_values, epsilon, log_uniforms, uniforms: {"n_values": n_values,
                                                                        "epsilon": epsilon})
    spy.wrap(dprec.similarity.minhash, "laplace_from_log_uniform", "sketch:minhash-laplace",
             lambda values, scale, log_uniforms, uniforms: {"scale": scale})
    spy.wrap(dprec.similarity.sjlt, "laplace_from_log_uniform", "sketch:sjlt-laplace",
             lambda values, scale, log_uniforms, uniforms: {"scale": scale})
    spy.wrap(dprec.similarity.sjlt, "gaussian_from_uniform", "sketch:gaussian",
             lambda values, sigma, uniforms: {"sigma": sigma})
    spy.wrap(dprec.similarity.sjlt, "gaussian_jl_matrix", "sketch:projection",
             lambda k, n_features, random_state: {})
    spy.wrap(dprec.ranking.mallows, "mallows_theta", "ranking:theta",
             lambda epsilon, m, calibration="tight": {"epsilon": np.asarray(epsilon),
                                                     "m": np.asarray(m)})
    spy.wrap(dprec.ranking.mallows, "laplace_scale", "ranking:laplace",
             lambda epsilon, m: {"epsilon": np.asarray(epsilon), "m": np.asarray(m)})
    return spy


# ------------------------------------------------------------------ data
@pytest.fixture(scope="module")
def split():
    data = datasets.synthetic(40, 60, 1200, random_state=3)
    return train_test_split(data, test_size=0.2, random_state=0)


#: similarity options, with the (ε, δ) and ledger mechanism their docstrings promise
SIMILARITIES = {
    "cosine": ({"name": "cosine"}, None),
    "rr_minhash": ({"name": "rr_minhash", "width": 32, "B": 4, "epsilon": 3.0, "delta": 1e-4,
                    "tau": 10}, ("randomized_response", 3.0, 1e-4)),
    "noisy_minhash": ({"name": "noisy_minhash", "width": 32, "B": 3, "epsilon": 2.0,
                       "delta": 1e-3, "tau": 10}, ("laplace", 2.0, 1e-3)),
    "minhash": ({"name": "minhash", "width": 32, "B": 2}, None),
    "sjlt": ({"name": "sjlt", "width": 32, "s": 4, "epsilon": 2.5}, ("laplace", 2.5, 0.0)),
    "gaussian_jl": ({"name": "gaussian_jl", "width": 16, "epsilon": 1.0, "delta": 1e-5},
                    ("gaussian", 1.0, 1e-5)),
}
#: selector keyword arguments, with the ledger entries their docstrings promise
SELECTORS = {
    "topk": ({}, []),
    "probabilistic": ({}, []),
    "ppns": ({"epsilon": EPSILON, "p": 0.5}, [("exponential", EPSILON / 2, 0.0)]),
    "pncf": ({"epsilon": EPSILON, "rho": 0.2},
             [("exponential", EPSILON / 2, 0.2), ("laplace", EPSILON / 2, 0.0)]),
}


def spent_by_selector(spy: Spy, selector: str, algo: PrivateKNN) -> list[tuple]:
    """(mechanism, ε, δ) per neighbour set, recomputed from the recorded calls."""
    spent = []
    if selector == "ppns":
        calls = spy.of("ppns:exponential")
        assert calls, "PPNS drew no neighbours"
        # stage 1 and stage 2 together draw min(n_valid, k) <= k neighbours per query
        eps = max(exponential_epsilon(call["c"], 1.0, K) for call in calls)
        spent.append(("exponential", eps, 0.0))
    if selector == "pncf":
        calls = spy.of("pncf:exponential")
        assert calls
        spent.append(("exponential", max(exponential_epsilon(c["c"], 1.0, K) for c in calls),
                      None))  # δ: the truncation's ρ, a parameter, not a call
        # each select() perturbs with one Laplace call per distinct RS, ascending,
        # in the thread that runs it
        laplace = []
        events = [(t, e) for t, e in spy.calls if t in ("pncf:select", "pncf:laplace")]
        for n, (tag, entry) in enumerate(events):
            if tag != "pncf:select":
                continue
            scales = []
            same_thread = [(t, e) for t, e in events[n + 1:] if e["thread"] == entry["thread"]]
            for later_tag, later in same_thread:
                if later_tag == "pncf:select":
                    break
                scales.append(later["scale"])
            distinct = np.unique(entry["sensitivity"])
            assert len(scales) == len(distinct)
            laplace += [lattice_epsilon(b, rs) for b, rs in zip(scales, distinct)]
        spent.append(("laplace", max(laplace), 0.0))
    # the scores the exponential mechanism saw have sensitivity 1 (sim / RS): the
    # RS they were divided by is the model's, i.e. at least the change of sim(u, v)
    for call in spy.of("ppns:exponential") + spy.of("pncf:exponential"):
        assert np.isfinite(call["scores"][call["mask"]]).all()
    if algo.sim_options["name"] not in ("cosine", "msd", "pearson") and \
            selector in ("ppns", "pncf"):
        # sketch similarities: a bounded score, divided by its range -> spread <= 1
        for call in spy.of("ppns:exponential") + spy.of("pncf:exponential"):
            scores = call["scores"][call["mask"]]
            if scores.size:
                assert np.ptp(scores) <= 1.0 + 1e-12
    return spent


def spent_by_similarity(spy: Spy, name: str, options: dict, trainset) -> tuple | None:
    """(mechanism, ε, δ) of one user's sketch, recomputed from the recorded calls."""
    if name in ("cosine", "minhash"):
        if name == "minhash":
            assert not spy.tags() & {"sketch:rr", "sketch:minhash-laplace"}
        return None
    sizes = [len(trainset.ur[u]) for u in trainset.all_users()]
    if name == "rr_minhash":
        (call,) = spy.of("sketch:rr")
        tau = options.get("tau", min(sizes))
        L = changed_coordinates(options["width"], options["B"], 1, tau, options["delta"])
        eps = math.ceil(L) * randomized_response_epsilon(call["n_values"], call["epsilon"])
        return ("randomized_response", eps, options["delta"])
    if name == "noisy_minhash":
        (call,) = spy.of("sketch:minhash-laplace")
        tau = options.get("tau", min(sizes))
        L = changed_coordinates(options["width"], options["B"], 1, tau, options["delta"])
        return ("laplace", lattice_epsilon(call["scale"], L * (options["B"] - 1), math.ceil(L)),
                options["delta"])
    low, high = trainset.rating_scale
    largest = max(abs(low), abs(high))  # one rating added or removed (see the xfail below)
    if name == "sjlt":
        (call,) = spy.of("sketch:sjlt-laplace")
        s = options["s"]
        return ("laplace", lattice_epsilon(call["scale"], math.sqrt(s) * largest, s), 0.0)
    (call,) = spy.of("sketch:gaussian")
    (projection,) = spy.of("sketch:projection")
    w2 = largest * float(np.sqrt((projection["result"] ** 2).sum(axis=0).max()))
    delta = gaussian_delta(call["sigma"], w2, options["epsilon"])
    return ("gaussian", options["epsilon"], delta)


@pytest.mark.parametrize("neighbourhood", ["item", "user"])
@pytest.mark.parametrize("selector", sorted(SELECTORS))
@pytest.mark.parametrize("similarity", sorted(SIMILARITIES))
def test_privacy_report_lists_what_was_spent(split, spy, similarity, selector, neighbourhood):
    trainset, testset = split
    options, promised_sketch = SIMILARITIES[similarity]
    kwargs, promised_selector = SELECTORS[selector]
    if selector in ("topk", "probabilistic") and similarity == "cosine" \
            and neighbourhood == "user":
        pytest.skip("nothing private (covered by the item neighbourhood)")
    algo = PrivateKNN(k=K, sim_options=options, selector=selector, neighbourhood=neighbourhood,
                      random_state=np.random.default_rng(1), **kwargs).fit(trainset)
    predictions = algo.test(testset)
    assert any(not p.details["was_impossible"] for p in predictions)
    ledger = algo.privacy_report()
    entries = list(ledger)

    # 1. the entries are what the docstrings promise: one per mechanism
    promised = ([("similarity", *promised_sketch)] if promised_sketch else []) + \
        [("selector", *entry) for entry in promised_selector]
    assert [(e.component, e.mechanism.split(" ")[0], e.epsilon) for e in entries] == [
        (c, m, pytest.approx(eps, rel=1e-5)) for c, m, eps, _ in promised]
    for e, (*_, delta) in zip(entries, promised):  # Gaussian JL: the exact δ(ε) of its σ
        assert e.delta == pytest.approx(delta) or (e.mechanism.startswith("gaussian")
                                                   and e.delta <= delta)
    # 2. what the calls spent, recomputed, is covered by those entries
    spent = []
    sketch = spent_by_similarity(spy, similarity, options, trainset)
    if sketch:
        spent.append(("similarity", *sketch))
    spent += [("selector", *entry) for entry in spent_by_selector(spy, selector, algo)]
    assert len(spent) == len(entries), (spent, entries)
    for (component, mechanism, eps, delta), entry in zip(spent, entries):
        assert (component, mechanism) == (entry.component, entry.mechanism.split(" ")[0])
        assert eps <= entry.epsilon * (1 + 1e-12), (entry, eps)
        assert eps >= entry.epsilon * (1 - 1e-5) or mechanism == "gaussian"  # tight
        if delta is not None:
            assert delta <= entry.delta * (1 + 1e-9) + 1e-300, (entry, delta)
    if similarity == "gaussian_jl":  # Kenthapadi's σ is valid but not tight
        assert spent[0][3] <= options["delta"]
    if selector == "probabilistic":  # draws, but makes no claim: nothing registered
        assert spy.of("probabilistic:gumbel")
    # 3. the statuses: sketches hold for their release (but Gaussian JL, whose floating-point
    # noise leaks), only if the caller's generator is secret (#51); the selectors are as
    # published
    assert [e.status for e in entries] == [
        Status.CONDITIONAL if c == "similarity" and m != "gaussian" else Status.AS_PUBLISHED
        for c, m, *_ in promised]
    assert ledger.guarantee is None  # the predictions average raw ratings


@pytest.mark.parametrize("mechanism", ["mallows", "laplace"])
@pytest.mark.parametrize("calibration", ["tight", "conservative"])
@pytest.mark.parametrize("budgets", ["uniform", "heterogeneous"])
def test_ranker_privacy_report(split, spy, mechanism, calibration, budgets):
    if mechanism == "laplace" and calibration == "conservative":
        pytest.skip("calibration applies to Mallows only")
    trainset, _ = split
    users = [trainset.to_raw_uid(u) for u in trainset.all_users()]
    if budgets == "uniform":
        epsilon, per_user = 2.0, {u: 2.0 for u in users}
    else:
        per_user = {u: [0.5, 3.0, math.inf][n % 3] for n, u in enumerate(users)}
        epsilon = per_user
    algo = MallowsRanker(epsilon=epsilon, mechanism=mechanism, calibration=calibration,
                         n_factors=4, n_epochs=1,
                         random_state=np.random.default_rng(0)).fit(trainset)
    sizes = np.array([len(trainset.ur[u]) for u in trainset.all_users()])
    budget = np.array([per_user[u] for u in users])
    # recompute each user's loss from the θ (or λ) their order was privatised with
    if mechanism == "mallows":
        (call,) = spy.of("ranking:theta")
        np.testing.assert_array_equal(call["m"], sizes)
        theta = np.asarray(call["result"])
        loss = np.array([t * transposition_loss(int(m)) if np.isfinite(t) else math.inf
                         for t, m in zip(theta, sizes)])
        if calibration == "tight":
            np.testing.assert_allclose(loss, budget, rtol=1e-12)
        else:
            assert (loss[np.isfinite(budget)] < budget[np.isfinite(budget)]).all()
    else:
        (call,) = spy.of("ranking:laplace")
        scale = np.asarray(call["result"])
        loss = np.where(scale > 0, 2.0 * (sizes - 1) / np.where(scale > 0, scale, 1), math.inf)
        np.testing.assert_allclose(loss, budget, rtol=1e-12)
    assert (loss <= budget * (1 + 1e-12)).all()
    # the accountant: one entry per distinct budget, charged once to the users who have it
    report = algo.privacy_report()
    assert len(report) == len(set(budget.tolist()))
    for n, entry in enumerate(report):
        members = budget == entry.epsilon
        np.testing.assert_array_equal(report.applications(n), members.astype(int))
        assert entry.delta == 0.0 and entry.component == "ranking"
        assert entry.unit is Unit.RANKING_SWAP       # the caller's generator (#51):
        assert entry.status is Status.CONDITIONAL     # it holds if its state is secret
        assert entry.mechanism.startswith(mechanism if np.isfinite(entry.epsilon) else "none")
    np.testing.assert_array_equal(report.per_user()["epsilon"], budget)
    assert report.total() == (float(budget.max()), 0.0)  # parallel composition
    assert not spy.tags() & {"ppns:exponential", "pncf:exponential", "sketch:rr"}


# ------------------------------------------------------------------ public bounds
def _frame(ratings_per_user: dict[str, list[tuple[str, float]]]) -> pd.DataFrame:
    rows = [(u, i, r) for u, items in ratings_per_user.items() for i, r in items]
    return pd.DataFrame(rows, columns=["user", "item", "rating"])


@pytest.fixture(scope="module")
def uneven():
    """Users with 6, 6 and 2 ratings on 1-5."""
    frame = _frame({"a": [(f"i{j}", 1.0 + j % 5) for j in range(6)],
                    "b": [(f"i{j}", 5.0 - j % 5) for j in range(6)],
                    "c": [("i0", 3.0), ("i1", 4.0)]})
    return Dataset.load_from_df(frame, Reader(rating_scale=(1, 5))).build_full_trainset()


@pytest.mark.parametrize("name", ["rr_minhash", "noisy_minhash"])
def test_a_set_below_tau_raises(uneven, name):
    options = {"name": name, "width": 16, "B": 2, "epsilon": 1.0, "delta": 1e-3, "tau": 4}
    with pytest.raises(ValueError, match="tau"):
        PrivateKNN(k=2, sim_options=options).fit(uneven)


@pytest.mark.parametrize("name", ["rr_minhash", "noisy_minhash"])
def test_a_set_below_tau_is_excluded_and_reported(uneven, name):
    options = {"name": name, "width": 16, "B": 2, "epsilon": 1.0, "delta": 1e-3, "tau": 4,
               "small_users": "exclude"}
    with pytest.warns(UserWarning, match="tau=4"):
        algo = PrivateKNN(k=2, sim_options=options).fit(uneven)
    c = uneven.to_inner_uid("c")
    off = np.delete(algo.sim[c], c)
    assert (off == 0).all()  # no sketch released: similarity 0 to everybody
    report = algo.privacy_report()
    (entry,) = report
    assert "sets of at least τ = 4 items" in entry.note  # stated for sets of at least τ
    assert report.applications(0)[c] == 0 and report.applications(0).sum() == 2
    # c is outside the guarantee (their exclusion reveals a set below τ): ε = ∞, not 0
    assert report.per_user(Unit.SET_ITEM).loc["c", "epsilon"] == math.inf


def test_tau_taken_from_the_data_voids_the_guarantee(uneven):
    options = {"name": "rr_minhash", "width": 16, "B": 2, "epsilon": 1.0, "delta": 1e-3}
    with pytest.warns(PrivacyLeakWarning, match="τ = 2 from the data"):
        algo = PrivateKNN(k=2, sim_options=options).fit(uneven)
    (entry,) = algo.privacy_report()
    assert entry.status is Status.VOID and "τ was read from the data" in entry.note
    assert algo.privacy_report().status(Unit.SET_ITEM) is Status.VOID


@pytest.mark.parametrize("name", ["sjlt", "gaussian_jl"])
def test_a_rating_beyond_the_rating_bound_raises(uneven, name):
    options = {"name": name, "width": 8, "epsilon": 1.0, "rating_bound": 3.0}
    if name == "gaussian_jl":
        options["delta"] = 1e-5
    with pytest.raises(ValueError, match="rating_bound"):
        PrivateKNN(k=2, sim_options=options).fit(uneven)


@pytest.mark.parametrize("name", ["sjlt", "gaussian_jl"])
def test_a_rating_outside_the_declared_scale_raises(name):
    """The default rating_bound comes from the public rating scale: data outside it raise."""
    frame = _frame({"a": [("x", 1.0), ("y", 9.0)], "b": [("x", 2.0)]})
    trainset = Dataset.load_from_df(frame, Reader(rating_scale=(1, 5))).build_full_trainset()
    options = {"name": name, "width": 8, "epsilon": 1.0}
    if name == "gaussian_jl":
        options["delta"] = 1e-5
    with pytest.raises(ValueError, match="rating_bound"):
        PrivateKNN(k=2, sim_options=options).fit(trainset)


@pytest.mark.parametrize("name", ["sjlt", "gaussian_jl"])
def test_default_rating_bound_covers_a_changed_rating(spy, name):
    """The unit is one rating added, removed *or changed*: a change moves a coordinate
    by up to ``high − low``, more than ``max(|low|, |high|)`` when the scale spans 0."""
    frame = _frame({"a": [("x", -2.0), ("y", 2.0)], "b": [("x", 1.0), ("y", -1.0)]})
    trainset = Dataset.load_from_df(frame, Reader(rating_scale=(-2, 2))).build_full_trainset()
    options = {"name": name, "width": 8, "s": 2, "epsilon": 1.0}
    if name == "gaussian_jl":
        options = {"name": name, "width": 8, "epsilon": 1.0, "delta": 1e-5}
    algo = PrivateKNN(k=1, sim_options=options).fit(trainset)
    (entry,) = algo.privacy_report()
    change = 4.0  # a rating changed from -2 to 2
    if name == "sjlt":
        (call,) = spy.of("sketch:sjlt-laplace")
        assert lattice_epsilon(call["scale"], math.sqrt(2) * change, 2) <= entry.epsilon
    else:
        (call,) = spy.of("sketch:gaussian")
        (projection,) = spy.of("sketch:projection")
        w2 = change * float(np.sqrt((projection["result"] ** 2).sum(axis=0).max()))
        assert gaussian_delta(call["sigma"], w2, entry.epsilon) <= entry.delta


def test_pncf_laplace_spends_at_most_its_half(split, spy):
    """Regression: PNCF's perturbation used scale 2RS/ε, which on the lattice spends up
    to a relative 2**-20 more than the ε/2 it records when RS is off the grid."""
    trainset, testset = split
    algo = PrivateKNN(k=K, sim_options={"name": "pearson"}, selector="pncf", epsilon=1.0,
                      random_state=0).fit(trainset)
    algo.test(testset)
    spent = dict((m, eps) for m, eps, _ in spent_by_selector(spy, "pncf", algo))
    assert spent["laplace"] <= 0.5
    off_grid = [rs for rs in np.unique(algo.sensitivity_)
                if lattice_epsilon(2 * rs / 1.0, rs) > 0.5]
    assert off_grid  # the old scale would have overspent for these users


def test_pncf_registers_the_papers_claims_as_published(split):
    """PNCF claims (ε/2, δ = ρ) for the selection and ε/2 for the perturbation: dprec
    reproduces them, labelled as claims (``tests/test_privacy_findings.py`` refutes them)."""
    algo = PrivateKNN(k=K, selector="pncf", epsilon=1.0, rho=0.05).fit(split[0])
    selection, perturbation = algo.privacy_report()
    assert (selection.epsilon, selection.delta) == (0.5, 0.05)
    assert perturbation.epsilon <= 0.5 and perturbation.delta == 0.0
    assert selection.status is perturbation.status is Status.AS_PUBLISHED
    assert "no (ε, δ) holds" in selection.note


def test_fit_precomputed_records_only_the_selector(split):
    trainset, _ = split
    algo = PrivateKNN(k=K, sim_options={"name": "cosine"}, selector="ppns", epsilon=2.0)
    fitted = algo.fit(trainset)
    again = PrivateKNN(k=K, sim_options={"name": "cosine"}, selector="ppns",
                       epsilon=2.0).fit_precomputed(trainset, fitted.sim, fitted.sensitivity_)
    assert [(e.component, e.epsilon) for e in again.privacy_report()] == [
        ("selector", pytest.approx(1.0))]


def test_no_mechanism_runs_without_a_private_component(split, spy):
    trainset, testset = split
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        algo = PrivateKNN(k=K, sim_options={"name": "msd"}).fit(trainset)
    algo.test(testset)
    assert len(algo.privacy_report()) == 0
    assert algo.privacy_report().total() == (math.inf, 0.0)  # nothing protected
    assert not spy.calls
