"""What dprec's privacy figures are worth, audited on neighbouring datasets.

Every claim docs/privacy.md makes about a component is backed here: the published
selectors' claims are *refuted* (the 95 % lower bound on ε exceeds what they
claim, so their "as published" label stays true), the components that
*hold* are not refuted (and the audit would catch a broken one), the leaks that
were dprec's own (noise derivable from the public hash seed, τ read from the
data, one query counted for thousands) stay fixed.  The constructions live in
:mod:`dprec.experiments.privacy_audit`, which runs them at full size on
MovieLens 100k.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from surprise import Dataset, Reader
from surprise.model_selection import train_test_split

from dprec import PrivateKNN
from dprec.accountant.ledger import (
    CALLER_GENERATOR,
    SEEDED,
    BudgetExceededError,
    PrivacyAccountant,
    PrivacyLeakWarning,
    Status,
    Unit,
)
from dprec.audit import Event, audit_model, audit_release, with_rating
from dprec.datasets import synthetic
from dprec.experiments.privacy_audit import (
    diagnostics_alpha,
    fixed_hash_seed,
    mallows_ranker,
    mallows_swap,
    pncf_sensitivity_jump,
    pncf_truncation,
    ppns_boundary_pair,
    ppns_partition_boundary,
    single_rater_item,
    sketch_release,
)
from dprec.mechanisms import randomized_response_from_log_uniform
from dprec.mechanisms.common import keyed_log_uniform
from dprec.ranking import mallows_privatize
from dprec.similarity import SKETCH_BACKENDS, NoisyMinHash, PrivateSJLT, RRMinHash
from dprec.similarity.minhash import MinHash, MinHashFunctions
from dprec.utils._rng import derive_seed, draw_seed, fit_entropy, keyed_uniform


@pytest.fixture(scope="module")
def data():
    return synthetic(300, 400, 12_000, random_state=0)


# ---------------------------------------------------------- 1. outputs are not protected
@pytest.mark.parametrize("selector", ["ppns", "pncf"])
def test_predictions_reveal_a_single_raters_rating(data, selector):
    result = single_rater_item(data, selector, n_runs=60)
    assert result.refuted and result.lower_bound > 1.5, result
    assert result.counts.endswith("/ 0")           # never above 4.5 once the rating is 1


def test_the_alpha_diagnostic_reveals_the_exact_similarities(data):
    result = diagnostics_alpha(data, n_runs=60)
    assert result.refuted and result.lower_bound > 2.0, result
    assert result.counts == "60 / 0"               # always one of D's values, never under D′


def test_probabilistic_selection_claims_nothing(data):
    trainset, testset = train_test_split(data, test_size=0.1, random_state=0)
    with pytest.warns(UserWarning, match="ignored by the 'probabilistic' selector"):
        algo = PrivateKNN(selector="probabilistic", epsilon=1.0).fit(trainset)
    report = algo.privacy_report()
    assert len(report) == 0 and report.guarantee is None
    assert report.total() == (np.inf, 0.0)


# ---------------------------------------------------------- 2. PPNS's partition boundaries
@pytest.mark.parametrize("epsilon", [1.0, 0.1])
def test_ppns_partition_boundary_refutes_its_claim_at_any_epsilon(data, epsilon):
    result = ppns_partition_boundary(data, epsilon=epsilon, n_runs=4000)
    assert result.claimed_epsilon == epsilon / 2
    assert result.refuted and result.lower_bound > 2 * epsilon / 2 + 1.0, result


@pytest.mark.slow
def test_ppns_partition_boundary_end_to_end():
    """The same, each run a whole fit of PrivateKNN and a call of ``neighbours``."""
    data = synthetic(120, 60, 2400, random_state=1)
    raw_u, raw_v, item = ppns_boundary_pair(data)
    trainset = data.build_full_trainset()
    other = with_rating(data, raw_v, item, None).build_full_trainset()

    def factory(seed):
        return PrivateKNN(k=5, sim_options={"name": "cosine"}, selector="ppns", epsilon=1.0,
                          p=0.5, neighbourhood="user", random_state=seed)

    def query(model):
        inner = model.trainset.to_inner_uid(raw_u)
        return raw_v in {model.trainset.to_raw_uid(x)
                         for x in model.kneighbors(np.array([inner]))[0][0] if x >= 0}

    # v is chosen with probability ≈ 0.2 on D and ≈ 0.01 on D′ (log-ratio ≈ 3): 300 runs
    # bound ε above 1.3 on every seed tried (counts ≈ 60 / 3), and still at 0.76 with
    # 2 s.d. fewer on D and 2 s.d. more on D′ (46 / 7), against the claimed 0.5
    bound = audit_model(factory, trainset, other, query,
                        [Event("v chosen", lambda x: np.asarray(x, dtype=bool))], n_runs=300,
                        random_state=0)
    assert bound.violates(0.5), bound


# ---------------------------------------------------------- 3. RS is unprivatised
def test_pncf_sensitivity_jump_refutes_its_claim():
    result = pncf_sensitivity_jump(n_runs=300)
    assert "RS(u0) 0.0148 → 1" in result.finding
    assert result.refuted and result.lower_bound > 2.0, result


# ---------------------------------------------------------- 4. PNCF's δ = ρ
def test_pncf_truncation_needs_delta_near_one():
    result = pncf_truncation(n_runs=4000)
    assert result.counts.startswith("4000 /")      # certain under D
    chosen_after = int(result.counts.split("/ ")[1])
    assert chosen_after < 0.2 * 4000               # missed with probability > 0.8 under D′
    assert result.refuted and result.lower_bound > 1.0, result


# ---------------------------------------------------------- 5. noise and public seeds
def _replay_rr(sketch, functions, X, noise_seed, B):
    """The true buckets an attacker recovers by replaying the noise from ``noise_seed``."""
    truth = functions.buckets(X)
    rows = np.arange(X.shape[0])
    log_u = keyed_log_uniform(noise_seed, rows, truth.shape[1])
    uniforms = keyed_uniform(noise_seed, rows, truth.shape[1], stream=1)
    eps = sketch.params["epsilon_prime"]
    outputs = np.stack([randomized_response_from_log_uniform(np.full_like(truth, b), B, eps,
                                                             log_u, uniforms)
                        for b in range(B)])
    guess = np.argmax(outputs == np.asarray(sketch.values)[None], axis=0)
    return float(np.mean(guess == truth))


@pytest.mark.parametrize("random_state", [None, 5])
def test_the_public_hash_seed_does_not_reveal_the_noise(random_state):
    X = sp.random(200, 300, density=0.2, format="csr", random_state=1)
    K, B = 64, 4
    rr = RRMinHash(K, B, epsilon=2.0, delta=1e-4, tau=10, random_state=random_state)
    S = rr.sketch(X)
    functions = MinHashFunctions.draw(K, B, np.arange(X.shape[1]), rr.hash_seed_)
    np.testing.assert_array_equal(functions.codes, rr.hash_functions_.codes)  # it is public
    keep = S.params["keep_probability"]
    # replaying the generator of the public seed (hash functions, then the noise seed), as
    # the audit did, decodes with uniforms independent of the noise: right with probability
    # p² + (1 − p)²/(B − 1), chance for an attacker who knows the mechanism
    chance = keep**2 + (1 - keep) ** 2 / (B - 1)
    sd = np.sqrt(chance * (1 - chance) / (X.shape[0] * K))
    replayed = np.random.default_rng(rr.hash_seed_)
    replayed.permuted(np.zeros((X.shape[1], K)), axis=0)      # the old draw: permutations,
    replayed.integers(0, B, size=(X.shape[1], K))              # then buckets,
    for guess in (draw_seed(replayed), rr.hash_seed_):          # then the noise seed
        recovered = _replay_rr(S, functions, X, guess, B)
        assert abs(recovered - chance) < 5 * sd, (recovered, chance)
    if random_state is not None:
        # seeded noise (the report says so): whoever knows the seed has the noise
        noise_seed = derive_seed(fit_entropy(random_state), "noise")
        assert _replay_rr(S, functions, X, noise_seed, B) == 1.0


def test_seeded_noise_cancels_on_a_refit_and_the_report_says_so(data):
    X = sp.csr_matrix(([5.0, 3.0, 4.0], ([0, 0, 1], [1, 4, 7])), shape=(2, 30))
    changed = sp.csr_matrix(([5.0, 1.0, 4.0], ([0, 0, 1], [1, 4, 7])), shape=(2, 30))
    seeded = [PrivateSJLT(16, 4, epsilon=1.0, rating_bound=5.0, hash_seed=3,
                          random_state=5) for _ in range(2)]
    a, b = seeded[0].sketch(X), seeded[1].sketch(changed)
    difference = np.asarray(b.values) - np.asarray(a.values)
    projected = ((changed - X) @ sp.csr_matrix(seeded[0].projection_).T).toarray()
    np.testing.assert_allclose(difference, projected, atol=1e-9)  # the change, exactly
    fresh = [PrivateSJLT(16, 4, epsilon=1.0, rating_bound=5.0, hash_seed=3) for _ in range(2)]
    difference = np.asarray(fresh[1].sketch(changed).values) - np.asarray(
        fresh[0].sketch(X).values)
    assert np.abs(difference - projected).max() > 1.0           # fresh noise each fit
    trainset = data.build_full_trainset()

    def report(random_state):
        return PrivateKNN(k=5, selector="pncf_corrected", neighbourhood="user",
                          random_state=random_state, verbose=False).fit(trainset).privacy_report()

    (seeded_entry,) = report(0).entries           # an int seed: void, the reason said
    assert seeded_entry.status is Status.VOID and seeded_entry.note.startswith(SEEDED)
    assert "seeded noise" in str(report(0)) and report(0).seeded
    (entry,) = report(None).entries                 # fresh noise: holds
    assert entry.status is Status.HOLDS and "seeded noise" not in str(report(None))
    (entry,) = report(np.random.default_rng(0)).entries     # the caller's generator: holds
    assert entry.status is Status.CONDITIONAL                 # only if its state is secret
    assert entry.note.startswith(CALLER_GENERATOR)            # (#51)


# ---------------------------------------------------------- 6. τ is public
def test_tau_from_the_data_leaks_it_and_voids_the_guarantee():
    sizes = [30, 45, 60]
    rows = [np.arange(n) for n in sizes]
    X = sp.csr_matrix((np.ones(sum(sizes)), np.concatenate(rows), np.cumsum([0] + sizes)),
                      shape=(3, 100))
    bigger = sp.csr_matrix((np.ones(sum(sizes) + 1), np.concatenate(
        [np.arange(31), rows[1], rows[2]]), np.cumsum([0, 31, 45, 60])), shape=(3, 100))
    params = []
    for sets in (X, bigger):
        backend = NoisyMinHash(256, 2, epsilon=4.0, delta=1e-4, random_state=0)
        with pytest.warns(PrivacyLeakWarning):
            params.append(backend.sketch(sets).params)
        assert backend.privacy().status is Status.VOID
    # one item added to the smallest set: τ and every user's noise scale change
    assert (params[0]["tau"], params[1]["tau"]) == (30, 31)
    assert params[0]["scale"] != params[1]["scale"]
    public = [NoisyMinHash(256, 2, epsilon=4.0, delta=1e-4, tau=20, random_state=0).sketch(s).params
              for s in (X, bigger)]
    assert public[0]["scale"] == public[1]["scale"] and public[0]["tau"] == 20
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        NoisyMinHash(256, 2, epsilon=4.0, delta=1e-4, tau=20).sketch(X)


def _boundary_data(with_small: bool) -> Dataset:
    """τ = 4: "a" 3 items (below), "b" exactly 4 (the boundary), "c" 5, the others 8."""
    sizes = {"a": 3, "b": 4, "c": 5, "d": 8, "e": 8, "f": 8}
    if not with_small:
        del sizes["a"]
    rows = [(u, f"i{(j + 2 * n) % 10}", float(1 + j % 5)) for n, (u, size) in
            enumerate(sizes.items()) for j in range(size)]
    return Dataset.load_from_df(pd.DataFrame(rows), Reader(rating_scale=(1, 5)))


@pytest.mark.parametrize("small_users", ["exclude", "raise"])
@pytest.mark.parametrize("name", ["rr_minhash", "noisy_minhash"])
def test_users_at_the_tau_boundary_are_outside_the_guarantee(name, small_users):
    """A set of exactly τ items is sketched, one item fewer excludes it (or refuses the
    release): certain on one dataset, impossible on its neighbour.  Such users get
    ε = ∞, the users of τ + 1 items and more a finite ε, and τ public is the condition."""
    data = _boundary_data(with_small=small_users == "exclude")
    options = {"name": name, "width": 16, "B": 2, "epsilon": 2.0, "tau": 4,
               "small_users": small_users}

    def fit(trainset):
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*no sketch released")
            return PrivateKNN(k=2, sim_options=options, neighbourhood="user",
                              verbose=False).fit(trainset)

    algo = fit(data.build_full_trainset())
    report = algo.privacy_report()
    eps = report.per_user(Unit.SET_ITEM)["epsilon"]
    assert eps["b"] == np.inf                               # exactly τ: at the boundary
    assert np.isfinite(eps[["c", "d", "e", "f"]]).all()     # τ + 1 and more: held
    assert eps.get("a", np.inf) == np.inf                   # below τ, as before
    assert any(c.startswith("τ = 4 is public") for c in report.conditions)
    assert "at the τ boundary: a set of exactly τ = 4 items" in str(report)
    # the event the boundary user cannot hide: one item fewer, and they are excluded
    first_item = next(iid for uid, iid, *_ in data.raw_ratings if uid == "b")
    fewer = with_rating(data, "b", first_item, None).build_full_trainset()
    if small_users == "raise":
        with pytest.raises(ValueError, match="tau=4"):
            fit(fewer)
    else:
        released = fit(fewer).sketch_release_.released
        assert not released[fewer.to_inner_uid("b")]
        assert algo.sketch_release_.released[algo.trainset.to_inner_uid("b")]


def test_the_boundary_is_as_wide_as_the_set_difference():
    sizes = [4, 5, 6, 9]
    X = sp.csr_matrix((np.ones(sum(sizes)), np.concatenate([np.arange(n) for n in sizes]),
                       np.cumsum([0] + sizes)), shape=(4, 12))
    backend = RRMinHash(16, 2, epsilon=2.0, delta=1e-4, tau=4, set_difference=2)
    backend.release(X)
    ((outside, reason),) = backend.release_.outside
    assert outside.tolist() == [True, True, False, False]   # 2 items fewer: below τ
    assert reason.startswith("at the τ boundary: a set of τ = 4 to 5 items")
    assert backend.release_.conditions == (
        "τ = 4 is public, fixed before the data; the sketches' guarantee covers the sets of "
        "at least τ + α = 6 items",)


def test_an_int_seed_is_found_from_the_published_hash_seed_and_its_entry_is_void():
    """The hash seed derived from an int random_state is published; a brute force over
    small ints finds the seed, hence all of the noise: the entry is void wherever charged."""
    X = sp.csr_matrix(np.random.default_rng(1).random((20, 60)) < 0.3)
    secret = 417

    def backend(random_state):
        return RRMinHash(32, 2, epsilon=2.0, delta=1e-4, tau=5, small_users="exclude",
                         random_state=random_state)

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*no sketch released")
        published = backend(secret)
        S = published.release(X)
        found = next(g for g in range(10_000)
                     if derive_seed(fit_entropy(g), "hash") == published.hash_seed_)
        replayed = backend(found).release(X)
    truth = MinHash(32, 2, hash_seed=published.hash_seed_).sketch(X).values
    flipped = (S.values != truth) & S.valid[:, None]
    assert found == secret and flipped.any()
    np.testing.assert_array_equal(replayed.values, S.values)   # 100 % of the noise
    for entry in (published.privacy(), published.release_.entry):
        assert entry.status is Status.VOID and entry.note.startswith(SEEDED)
    accountant = PrivacyAccountant(20)
    published.release_.charge(accountant)
    assert accountant.status(Unit.SET_ITEM) is Status.VOID
    for unseeded in (None, np.random.default_rng(0)):
        assert backend(unseeded).privacy().status is Status.HOLDS


# ---------------------------------------------------------- 7. every release is counted
def _inner_ids(trainset, testset) -> list[tuple[int, int]]:
    """The (inner user, inner item) pairs of the test ratings the trainset knows."""
    pairs = []
    for uid, iid, _ in testset:
        try:
            pairs.append((trainset.to_inner_uid(uid), trainset.to_inner_iid(iid)))
        except ValueError:
            continue
    return pairs


def _brute_force_counts(algo, queries) -> tuple[np.ndarray, np.ndarray]:
    """Per user: neighbour sets they were a candidate of, and were chosen in (queries by
    others only, each distinct query once), from the public API, one query at a time."""
    trainset = algo.trainset
    n = trainset.n_users
    candidates, chosen = np.zeros(n, int), np.zeros(n, int)
    for u, i in dict.fromkeys(queries):
        if algo.neighbourhood == "item":
            pool = {v for v, _ in trainset.ir[i]}
            picked = algo.kneighbors(np.array([u]), np.array([i]))[0][0]
        else:
            pool = set(range(n))
            picked = algo.kneighbors(np.array([u]))[0][0]
        for v in pool - {u}:
            candidates[v] += 1
        for v in set(picked[picked >= 0].tolist()) - {u}:
            chosen[v] += 1
    return candidates, chosen


@pytest.mark.parametrize("neighbourhood", ["item", "user"])
def test_the_accountant_counts_every_neighbour_set_a_user_is_in(data, neighbourhood):
    trainset, testset = train_test_split(data, test_size=0.05, random_state=0)
    algo = PrivateKNN(k=10, sim_options={"name": "cosine"}, selector="pncf", epsilon=1.0,
                      neighbourhood=neighbourhood, random_state=0).fit(trainset)
    algo.test(testset)
    known = [(u, i if neighbourhood == "item" else 0) for u, i in _inner_ids(trainset, testset)]
    report = algo.privacy_report()
    candidates, chosen = _brute_force_counts(algo, known)
    np.testing.assert_array_equal(report.applications(0), candidates)
    np.testing.assert_array_equal(report.applications(1), chosen)
    assert candidates.max() > 100                  # thousands of releases, not one
    before = report.per_user(Unit.RATING)["epsilon"].to_numpy().copy()
    algo.test(testset)                             # the same queries: the same noise
    algo.predict(*testset[0][:2])
    np.testing.assert_array_equal(report.per_user(Unit.RATING)["epsilon"], before)
    assert report.total(Unit.RATING)[0] == pytest.approx(before.max())


def test_a_budget_stops_answers_that_would_exceed_it(data):
    trainset, testset = train_test_split(data, test_size=0.05, random_state=0)
    algo = PrivateKNN(k=10, selector="ppns", epsilon=1.0, budget=(20.0, 0.0),
                      random_state=0).fit(trainset)
    first = algo.test(testset[:20])
    with pytest.raises(BudgetExceededError, match="past the budget"):
        algo.test(testset)
    assert algo.privacy_report().total()[0] <= 20.0
    assert algo.test(testset[:20]) == first        # answers already given stay valid


# ---------------------------------------------------------- components that hold
@pytest.mark.parametrize("name", ["rr_minhash", "noisy_minhash", "sjlt"])
def test_sketch_releases_hold_and_the_audit_is_tight(name):
    """The event's log-ratio is the claimed ε itself: the bound stays below the claim and
    close to it, so a mechanism spending even 25 % more would be refuted."""
    result = sketch_release(name, n_runs=60_000)
    # the audit's releases are seeded (reproducible), so their entry is void; the same
    # release with fresh noise holds
    unseeded = (PrivateSJLT(16, 4, epsilon=2.0, rating_bound=5.0, hash_seed=7)
                if name == "sjlt" else SKETCH_BACKENDS[name](4, 2, epsilon=2.0, delta=1e-4,
                                                             tau=1, hash_seed=0))
    assert unseeded.privacy().status is Status.HOLDS
    assert result.claimed_epsilon == pytest.approx(2.0)
    assert 0.8 * 2.0 < result.lower_bound <= result.claimed_epsilon, result


def test_gaussian_jl_leaks_through_its_low_bits():
    """Floating-point Gaussian noise: Mironov's low-bit event separates a rating from none
    (the reason Gaussian JL is reported as published)."""
    result = sketch_release("gaussian_jl", n_runs=60_000)
    assert result.status == "as published"
    assert result.refuted and result.lower_bound > 2 * result.claimed_epsilon, result


def test_a_fixed_hash_seed_gets_the_worst_case_entry():
    """Sets chosen knowing the public hash functions differ in 10 of the K = 16
    coordinates (the random-hash claim allows ⌈L⌉ = 5): that claim (ε = 2 with δ) is
    exceeded, the worst-case entry K·ε′ = 6.4 is not."""
    result = fixed_hash_seed(n_runs=100_000)
    assert "10 of 16 coordinates differ" in result.finding
    assert result.claimed_delta == 0.0 and result.claimed_epsilon == pytest.approx(16 * 2 / 5)
    assert 2.0 < result.lower_bound <= result.claimed_epsilon, result


def test_the_mallows_ranker_end_to_end_finds_no_violation():
    result = mallows_ranker(n_runs=100)
    assert not result.refuted, result


def test_public_hash_functions_follow_item_ids_not_the_order_of_the_data():
    """Removing a user's only rating of a rare item re-indexes every later item; the
    sketches of everybody else must not change (same public seed, same seeded noise)."""
    frame = pd.DataFrame([(f"u{u}", f"i{(u * 7 + j) % 40}", float(1 + (u + j) % 5))
                          for u in range(30) for j in range(12)], columns=["user", "item",
                                                                           "rating"])
    frame.loc[len(frame)] = ("u0", "rare", 4.0)
    frame = frame.iloc[np.r_[len(frame) - 1, :len(frame) - 1]]   # the rare item comes first
    data = Dataset.load_from_df(frame, Reader(rating_scale=(1, 5)))
    other = with_rating(data, "u0", "rare", None)
    for options in ({"name": "rr_minhash", "width": 32, "B": 4, "epsilon": 2.0, "tau": 5,
                     "hash_seed": 3},
                    {"name": "sjlt", "width": 16, "s": 4, "epsilon": 2.0, "hash_seed": 3}):
        sims, items = [], []
        for ts in (data.build_full_trainset(), other.build_full_trainset()):
            assert [ts.to_inner_uid(f"u{u}") for u in range(30)] == list(range(30))
            items.append(ts.to_inner_iid("i3"))
            algo = PrivateKNN(sim_options=options, neighbourhood="user", random_state=0).fit(ts)
            sims.append(algo.sim[1:, 1:])                    # everybody but u0
        assert items[0] != items[1]                          # the items were re-indexed
        np.testing.assert_array_equal(sims[0], sims[1])


def test_the_mallows_privatiser_holds_and_the_extracted_theta_does_not():
    result = mallows_swap(n_runs=60_000)
    assert not result.refuted and result.lower_bound > 0.5, result
    m, epsilon = 5, 1.0
    order = np.arange(m)
    swapped = order[[4, 1, 2, 3, 0]]
    # θ = εm/2 (the paper's extracted formula) is θ = ε'/(2m − 3) with ε' = ε m (2m − 3)/2
    paper = epsilon * m * (2 * m - 3) / 2
    bound = audit_release(
        lambda r, seeds: mallows_privatize(np.tile(r, (len(seeds), 1)), paper, int(seeds[0])),
        order, swapped, [Event("D's ranking", lambda y: (np.asarray(y) == order).all(axis=1))],
        n_runs=20_000, random_state=0, batched=True)
    assert bound.violates(epsilon), bound
