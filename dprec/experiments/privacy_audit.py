r"""Do the printed ε hold?  Neighbouring-dataset audits of every private component.

Each audit builds two datasets that differ in **one unit** (one rating, one
item of a set, a swap in a ranking), chosen adversarially (a candidate at a
partition boundary, an item with a single rater, a pair whose sensitivity
jumps), runs the whole pipeline many times on each with independent seeds,
and turns the counts of one output event into a 99 % Clopper–Pearson lower
bound on ε ([`dprec.audit`][]).  A component whose claim *holds* must never
be refuted (lower bound ≤ claimed ε); a component reproduced *as published*
is refuted where the bound exceeds its claim.

As published (refuted):

* PPNS: a candidate at the last visited partition's boundary loses one
  co-rated rating and drops into the unvisited pool
  (`ppns_partition_boundary`);
* PNCF: the truncation gives probability 1 to a candidate at ``2·sim_k``
  and a small score change makes it unlikely (`pncf_truncation`); the
  recommendation-aware sensitivity RS, computed from the raw data, jumps when
  one rating of a candidate is removed, and the Laplace scale with it
  (`pncf_sensitivity_jump`);
* every selector's predictions average raw ratings: an item with a single
  rater (`single_rater_item`); the diagnostics α reveal the exact
  similarities (`diagnostics_alpha`).

Holds (no violation): the sketches' local releases (`sketch_release`)
and the Mallows privatiser (`mallows_swap`); and every end-to-end model
through *everything* it releases, on the edge cases (a renumbering removal,
the sole rater of an item, a single-rating user, a user at τ), at default,
non-default and extreme parameters: [`release_audit`][dprec.experiments.release_audit]
(written to ``release_audit.csv``).

Run ``python -m dprec.experiments.privacy_audit`` (or ``dprec audit``);
``--quick`` uses synthetic data and fewer runs.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd
from surprise import Dataset, Reader
from surprise.model_selection import KFold

from .. import datasets
from ..accountant.ledger import Unit, compose
from ..audit import Event, audit_model, estimate_epsilon_lower_bound, with_rating
from ..knn import PrivateKNN
from ..selectors import PNCF, PPNS, Selector, ppns_schedule
from ..utils._rng import QueryNoise
from . import release_audit
from ._options import experiment_parser
from ._shared_fits import SharedFits
from .component_audits import (
    CONFIDENCE,
    AuditResult,
    audit_result,
    fixed_hash_seed,
    mallows_ranker,
    mallows_swap,
    sketch_release,
)

__all__ = ["AuditResult", "cross_validated_privacy", "diagnostics_alpha", "fixed_hash_seed",
           "main", "mallows_ranker", "mallows_swap", "pncf_sensitivity_jump", "pncf_truncation",
           "ppns_boundary_pair", "ppns_partition_boundary", "run", "selection_runs",
           "single_rater_item", "sketch_release"]

# ------------------------------------------------------------------ selection runs
def selection_runs(selector: Selector, sims: np.ndarray, sensitivity: float, k: int,
                   n_runs: int, seed: int) -> np.ndarray:
    """``n_runs`` independent selections from one candidate list, as a model makes them.

    ``sims`` are the candidates' similarities in candidate order; they are
    sorted as [`PrivateKNN`][] sorts them (descending, ties in
    candidate order) and each run gets its own query noise (a model's noise
    for one query is a function of its seed, here one key per run).

    Returns
    -------
    ndarray of shape (n_runs, k): chosen candidates (indices into ``sims``), -1 if none.
    """
    order = np.argsort(-np.asarray(sims, dtype=np.float64), kind="stable")
    rows = np.tile(np.asarray(sims, dtype=np.float64)[order], (n_runs, 1))
    n_valid = np.full(n_runs, len(order))
    noise = QueryNoise(seed, (np.arange(n_runs),))
    positions = selector.select(rows, n_valid, k, noise, np.full(n_runs, float(sensitivity)))
    return np.where(positions.positions >= 0, order[np.maximum(positions.positions, 0)], -1)


def _chosen(candidate: int) -> Event:
    return Event(f"candidate {candidate} chosen",
                 lambda runs: (np.asarray(runs) == candidate).any(axis=1))


# ------------------------------------------------------------------ PPNS
def _cosine(a: dict, b: dict, min_support: int = 1) -> float:
    """Surprise's co-rated cosine of two users' {item: rating} dicts."""
    common = a.keys() & b.keys()
    if len(common) < max(min_support, 1):
        return 0.0
    num = sum(a[i] * b[i] for i in common)
    return num / math.sqrt(sum(a[i] ** 2 for i in common) * sum(b[i] ** 2 for i in common))


def ppns_boundary_pair(data: Dataset, k: int = 5, p: float = 0.5,
                       max_users: int = 400) -> tuple:
    """``(u, v, item)`` (raw ids): ``v`` is the candidate at the last rank of the
    partitions PPNS visits for ``u`` (user neighbourhood, cosine), and removing
    ``v``'s rating of ``item`` (which ``u`` also rated) moves ``v`` out of them.

    The new similarity is recomputed for the pair only (co-rated cosine: the
    other candidates' similarities to ``u`` do not change).
    """
    trainset = data.build_full_trainset()
    visited = len(ppns_schedule(k, p)) * k
    base = PrivateKNN(k=k, sim_options={"name": "cosine"}, neighbourhood="user",
                      verbose=False).fit(trainset)
    ratings = [dict(trainset.ur[u]) for u in range(trainset.n_users)]
    for u in range(min(trainset.n_users, max_users)):
        row = base.sim[u].copy()
        row[u] = -np.inf
        v = int(np.argsort(-row, kind="stable")[visited - 1])
        rest = np.delete(row, [u, v])
        others = np.delete(np.arange(trainset.n_users), [u, v])
        for item in sorted(ratings[u].keys() & ratings[v].keys()):
            lowered = _cosine(ratings[u], {i: r for i, r in ratings[v].items() if i != item})
            ahead = int(np.sum(rest > lowered) + np.sum((rest == lowered) & (others < v)))
            if ahead >= visited:
                return (trainset.to_raw_uid(u), trainset.to_raw_uid(v),
                        trainset.to_raw_iid(item))
    raise ValueError("no candidate at the partition boundary moves out with one rating")


def ppns_partition_boundary(data: Dataset, k: int = 5, p: float = 0.5, epsilon: float = 1.0,
                            n_runs: int = 20_000, seed: int = 0) -> AuditResult:
    """PPNS's partitions are cut at exact ranks: one rating moves a candidate out of them.

    The pair of `ppns_boundary_pair`; each run is one neighbour set of
    ``u`` drawn by PPNS from the model's similarities and ``RS(u)``
    (`selection_runs`).  Event: ``v`` chosen.  Claim: ε/2 per neighbour
    set (one rating), whatever ε.
    """
    raw_u, raw_v, item = ppns_boundary_pair(data, k, p)
    visited = len(ppns_schedule(k, p)) * k
    runs = []
    for ts in (data.build_full_trainset(),
               with_rating(data, raw_v, item, None).build_full_trainset()):
        model = PrivateKNN(k=k, sim_options={"name": "cosine"}, selector="ppns",
                           epsilon=epsilon, p=p, neighbourhood="user", verbose=False).fit(ts)
        inner_u, inner_v = ts.to_inner_uid(raw_u), ts.to_inner_uid(raw_v)
        sims = np.delete(model.sim[inner_u], inner_u)
        candidate = inner_v - (inner_v > inner_u)
        chosen = selection_runs(PPNS(epsilon=epsilon, p=p), sims,
                                model.sensitivity_[inner_u], k, n_runs, seed + len(runs))
        runs.append((chosen == candidate).any(axis=1))
    bound = estimate_epsilon_lower_bound(runs[0], runs[1], [Event("v chosen", lambda x: x)],
                                         CONFIDENCE)
    return audit_result(f"PPNS selection (ε = {epsilon:g})", "as published", "one rating",
                        epsilon / 2, 0.0, bound, n_runs,
                        f"user {raw_u!r}: candidate {raw_v!r} at rank {visited} leaves the visited "
                        f"partitions when their rating of {item!r} is removed", "the data")


# ------------------------------------------------------------------ PNCF
def pncf_truncation(epsilon: float = 1.0, rho: float = 0.1, k: int = 2, n: int = 40,
                    sensitivity: float = 0.5, change: float = 0.005, n_runs: int = 20_000,
                    seed: int = 0) -> AuditResult:
    """PNCF's truncation: a candidate at ``2·sim_k`` is chosen with probability 1.

    Scores differ by ``change ≤ RS`` (the claim's neighbouring inputs): the
    candidate drops from the certain set into the drawn band.  Claim: (ε/2, ρ).
    """
    others = np.linspace(0.30, 0.20, n - 1)            # sim_k = 0.30, λ = sim_k
    top = 2 * others[0]
    runs = []
    for score in (top, top - change):
        sims = np.concatenate([[score], others])
        runs.append(selection_runs(PNCF(epsilon=epsilon, rho=rho), sims, sensitivity, k,
                                   n_runs, seed + len(runs)))
    bound = estimate_epsilon_lower_bound(runs[0], runs[1], [_chosen(0)], CONFIDENCE,
                                         delta=rho)
    return audit_result("PNCF selection", "as published", "one rating", epsilon / 2, rho, bound,
                        n_runs,
                        f"a candidate at 2·sim_k moves by {change:g} ≤ RS = {sensitivity:g}")


def _dense_with_a_sparse_candidate(n_users: int = 30, n_items: int = 12,
                                   seed: int = 0) -> Dataset:
    """Every user rates every item near a shared profile; user ``v`` rates two of ``u0``'s
    items exactly as ``u0`` does (cosine 1 on two co-rated items)."""
    rng = np.random.default_rng(seed)
    profile = rng.integers(3, 6, n_items)
    rows = []
    for u in range(n_users):
        r = np.clip(profile + rng.integers(-1, 2, n_items), 1, 5)
        rows += [(f"u{u}", f"i{j}", float(r[j])) for j in range(n_items)]
    first = {i: r for user, i, r in rows if user == "u0"}
    rows += [("v", "i0", first["i0"]), ("v", "i1", first["i1"])]
    frame = pd.DataFrame(rows, columns=["user", "item", "rating"])
    return Dataset.load_from_df(frame, Reader(rating_scale=(1, 5)))


def pncf_sensitivity_jump(epsilon: float = 1.0, rho: float = 0.1, k: int = 5,
                          n_runs: int = 1000, seed: int = 0) -> AuditResult:
    """RS is computed from the raw data: one removed rating moves it from near 0 to 1.

    ``v`` shares two items with ``u0`` (cosine 1); removing one leaves a single
    co-rated item, whose removal would change the similarity by 1, so
    ``RS(u0)`` jumps and with it the Laplace scale of PNCF's weights.  Event:
    some chosen neighbour's noisy weight is ≤ 0 (``actual_k < k`` for an item
    all of them rated).  Claim: ε (ε/2 + ε/2, δ = ρ) per neighbour set.
    """
    data = _dense_with_a_sparse_candidate(seed=seed)
    a = data.build_full_trainset()
    b = with_rating(data, "v", "i1", None).build_full_trainset()

    def factory(s):
        return PrivateKNN(k=k, sim_options={"name": "cosine"}, selector="pncf",
                          epsilon=epsilon, rho=rho, neighbourhood="user", random_state=s,
                          verbose=False)

    bound = audit_model(factory, a, b, lambda m: m.predict("u0", "i0").details.get("actual_k", 0),
                        [Event(f"actual_k < {k}", lambda x: np.asarray(x) < k)], n_runs,
                        CONFIDENCE, delta=rho, random_state=seed)
    rs = [PrivateKNN(k=k, sim_options={"name": "cosine"}, selector="pncf",
                     neighbourhood="user", verbose=False).fit(ts).sensitivity_[
              ts.to_inner_uid("u0")]
          for ts in (a, b)]
    return audit_result("PNCF perturbation", "as published", "one rating", epsilon, rho, bound,
                        n_runs, f"RS(u0) {rs[0]:.3g} → {rs[1]:.3g} when one rating of a candidate "
                        "is removed")


# ------------------------------------------------------------------ predictions, diagnostics
def _sharing_pair(trainset, min_common: int = 3) -> tuple[int, int]:
    """Two users who co-rated at least ``min_common`` items (the first such pair)."""
    items = [set(i for i, _ in trainset.ur[u]) for u in range(trainset.n_users)]
    for u, v in itertools.combinations(range(trainset.n_users), 2):
        if len(items[u] & items[v]) >= min_common:
            return u, v
    raise ValueError("no two users share enough items")


def _reusing_similarities(factory: Callable[[int], PrivateKNN]) -> Callable:
    """``factory`` for [`dprec.audit.audit_model`][] whose models fit through
    ``fit_precomputed`` with the similarities and RS of one fit per trainset.

    Both are deterministic functions of the trainset (the exact similarities),
    so every run releases what ``factory(seed).fit(trainset)`` would, bit for
    bit (`SharedFits`): only the seeded
    noise differs between runs, and the runs skip recomputing the rest.
    """
    # by id(trainset), the trainset kept (in its SharedFits) so that no id is reused meanwhile
    shared: dict[int, SharedFits] = {}

    class Reusing:
        def __init__(self, seed: int) -> None:
            self.model = factory(seed)

        def fit(self, trainset) -> PrivateKNN:
            if id(trainset) not in shared:
                shared[id(trainset)] = SharedFits(trainset)
            return shared[id(trainset)].fit(self.model)

    return Reusing


def single_rater_item(data: Dataset, selector: str = "ppns", epsilon: float = 1.0, k: int = 5,
                      n_runs: int = 200, seed: int = 0) -> AuditResult:
    """Predictions average raw ratings: an item whose only rater changes their rating.

    A new item rated only by ``v`` (5 in ``D``, 1 in ``D′``); ``u`` asks for
    it (item neighbourhood: the candidates are its raters).  Event: the
    estimate is above 4.5.  Claim: the selector's ε per neighbour set.
    """
    trainset = data.build_full_trainset()
    u, v = _sharing_pair(trainset)
    raw_u, raw_v = trainset.to_raw_uid(u), trainset.to_raw_uid(v)
    item = "single-rater item"
    a = with_rating(data, raw_v, item, 5.0).build_full_trainset()
    b = with_rating(data, raw_v, item, 1.0).build_full_trainset()

    def factory(s):
        return PrivateKNN(k=k, sim_options={"name": "cosine"}, selector=selector,
                          epsilon=epsilon, random_state=s, verbose=False)

    bound = audit_model(_reusing_similarities(factory), a, b,
                        lambda m: m.predict(raw_u, item).est,
                        [Event("estimate > 4.5", lambda x: np.asarray(x) > 4.5)], n_runs,
                        CONFIDENCE, random_state=seed)
    claimed = PrivateKNN(k=k, selector=selector, epsilon=epsilon,
                         verbose=False).fit(a).privacy_report()
    eps = sum(e.epsilon for e in claimed)
    delta = sum(e.delta for e in claimed)
    return audit_result(f"{selector.upper()} predictions", "as published", "one rating", eps, delta,
                        bound, n_runs, "an item with a single rater, whose rating goes 5 → 1",
                        "the data, plus one item")


def _alpha_support(sims: np.ndarray, k: int) -> np.ndarray:
    """Every value ``Σ sim(chosen)₊ / Σ sim(top k)₊`` can take when ``k`` of the
    candidates are chosen (enumerated)."""
    positive = np.maximum(np.asarray(sims, dtype=np.float64), 0.0)
    top = np.sort(positive)[::-1][:k].sum()
    return np.array([positive[list(c)].sum() / top
                     for c in itertools.combinations(range(len(sims)), min(k, len(sims)))])


def diagnostics_alpha(data: Dataset, k: int = 5, p: float = 0.5, epsilon: float = 1.0,
                      n_runs: int = 200, seed: int = 0, max_raters: int = 9) -> AuditResult:
    """The diagnostic α reveals the exact similarities.

    PPNS, item neighbourhood, ``diagnostics=True``: for a query whose item has
    few raters, the values α can take under ``D`` are enumerated from the
    exact similarities; ``D′`` removes one co-rated rating of ``u``'s most
    similar candidate, which changes every one of them.  Event: α is one of
    ``D``'s values.  Claim: PPNS's ε/2 per neighbour set.
    """
    trainset = data.build_full_trainset()
    model = PrivateKNN(k=k, sim_options={"name": "cosine"}, verbose=False).fit(trainset)
    query = None
    for i in range(trainset.n_items):
        raters = [v for v, _ in trainset.ir[i]]
        if not k < len(raters) <= max_raters:
            continue
        for u in range(trainset.n_users):
            if u in raters:
                continue
            sims = model.sim[u, raters]
            top = raters[int(np.argmax(sims))]
            common = {j for j, _ in trainset.ur[u]} & {j for j, _ in trainset.ur[top]}
            if (sims > 0).all() and len(common) >= 3:
                query = (u, i, top, min(common - {i}))
                break
        if query:
            break
    if query is None:
        raise ValueError("no item with a few raters, all similar to one user")
    u, i, top, removed = query
    raw_u, raw_i = trainset.to_raw_uid(u), trainset.to_raw_iid(i)
    raters = [v for v, _ in trainset.ir[i]]
    support = _alpha_support(model.sim[u, raters], k)
    b = with_rating(data, trainset.to_raw_uid(top), trainset.to_raw_iid(removed),
                    None).build_full_trainset()

    def factory(s):
        return PrivateKNN(k=k, sim_options={"name": "cosine"}, selector="ppns",
                          epsilon=epsilon, p=p, diagnostics=True, random_state=s,
                          verbose=False)

    def in_support(alpha):
        alpha = np.asarray(alpha, dtype=np.float64)
        return np.isclose(alpha[:, None], support[None, :], rtol=1e-9, atol=0).any(axis=1)

    bound = audit_model(_reusing_similarities(factory), trainset, b,
                        lambda m: m.predict(raw_u, raw_i).details.get("alpha", np.nan),
                        [Event("α is one of D's values", in_support)], n_runs, CONFIDENCE,
                        random_state=seed)
    return audit_result("PPNS diagnostics (α)", "as published", "one rating", epsilon / 2, 0.0,
                        bound, n_runs, f"{len(support)} possible α under D; one co-rated rating of "
                        "the most similar candidate removed", "the data")


# ------------------------------------------------------------------ composition
def cross_validated_privacy(data: Dataset, selector: str = "pncf", epsilon: float = 1.0,
                            k: int = 40, n_folds: int = 5, seed: int = 0) -> pd.DataFrame:
    """What a ``k``-fold cross-validation of a private selector claims per user.

    Each fold's model answers its test set; its accountant composes, per
    user, every neighbour set they were a candidate of (and every weight of
    theirs released); [`dprec.accountant.ledger.compose`][] adds the folds.  The
    figures compose the selector's *claims* (as published), not guarantees.

    Returns
    -------
    DataFrame with one row per fold and one for all folds: worst and median
    per-user ε (basic composition), the tighter dp-accounting bound for the
    worst user, δ, and the worst user's number of releases.
    """
    accountants, rows = [], []
    for fold, (trainset, testset) in enumerate(KFold(n_folds, random_state=seed).split(data)):
        algo = PrivateKNN(k=k, sim_options={"name": "cosine"}, selector=selector,
                          epsilon=epsilon, random_state=seed, verbose=False).fit(trainset)
        algo.test(testset)
        accountants.append(algo.privacy_report())
        rows.append(_composition_row(f"fold {fold + 1}", accountants[-1], Unit.RATING))
    rows.append(_composition_row(f"{n_folds} folds composed", compose(accountants),
                                 Unit.RATING))
    return pd.DataFrame(rows)


def _composition_row(label: str, accountant, unit) -> dict:
    per_user = accountant.per_user(unit)
    eps, delta = accountant.total(unit)
    try:
        tight = accountant.tight_epsilon(unit)
    except ImportError:
        tight = float("nan")
    return {"models": label, "worst_epsilon": eps, "median_epsilon": per_user.epsilon.median(),
            "tight_worst_epsilon": tight, "worst_delta": delta,
            "worst_releases": int(per_user.releases.max()),
            "median_releases": float(per_user.releases.median())}


# ------------------------------------------------------------------ the table
def run(data: Dataset, quick: bool = False, seed: int = 0,
        progress: bool = False) -> pd.DataFrame:
    """Every audit, one row each (``quick``: fewer runs; ``progress``: a tqdm bar)."""
    scale = 10 if quick else 1
    few = 60 if quick else 100
    audits = [
        partial(ppns_partition_boundary, data, n_runs=20_000 // scale, seed=seed),
        partial(ppns_partition_boundary, data, epsilon=0.1, n_runs=20_000 // scale, seed=seed),
        partial(pncf_truncation, n_runs=20_000 // scale, seed=seed),
        partial(pncf_sensitivity_jump, n_runs=1000 // scale * 2, seed=seed),
        partial(single_rater_item, data, "ppns", n_runs=few, seed=seed),
        partial(single_rater_item, data, "pncf", n_runs=few, seed=seed),
        partial(diagnostics_alpha, data, n_runs=few, seed=seed),
        *(partial(sketch_release, name, n_runs=200_000 // scale, seed=seed)
          for name in ("rr_minhash", "noisy_minhash", "sjlt", "gaussian_jl")),
        partial(fixed_hash_seed, n_runs=200_000 // scale, seed=seed),
        partial(mallows_swap, n_runs=200_000 // scale, seed=seed),
        partial(mallows_ranker, n_runs=60 if quick else 300, seed=seed),
    ]
    if progress:
        from tqdm import tqdm

        audits = tqdm(audits, desc="audits", unit="audit")
    results = [audit() for audit in audits]
    table = pd.DataFrame([asdict(r) for r in results])
    table["refuted"] = [r.refuted for r in results]
    return table


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> pd.DataFrame:
    """The command line of ``dprec audit``: run the experiment on ``argv`` and write its
    results under ``--out`` (``--help`` for the options)."""
    parser = experiment_parser(prog, __doc__, "results/privacy_audit", data=True, n_jobs=1,
                               jobs="release-audit scenarios audited")
    parser.add_argument("--quick", action="store_true",
                        help="synthetic data and a tenth of the runs (about a minute)")
    args = parser.parse_args(argv)
    data, label = datasets.load_or_synthetic(args.dataset, seed=args.seed, quick=args.quick,
                                             path=args.data_path)
    start = time.perf_counter()
    table = run(data, quick=args.quick, seed=args.seed, progress=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / "privacy_audit.csv", index=False)
    composed = cross_validated_privacy(data, n_folds=2 if args.quick else 5, seed=args.seed)
    composed.to_csv(out / "cross_validated_privacy.csv", index=False)
    surfaces = release_audit.run(quick=args.quick, seed=args.seed, progress=True,
                                 n_jobs=args.n_jobs)
    surfaces.to_csv(out / "release_audit.csv", index=False)
    with pd.option_context("display.width", 200, "display.max_colwidth", 60):
        print(f"Privacy audits on {label} ({time.perf_counter() - start:.0f} s); lower bounds "
              f"hold with {CONFIDENCE:.0%} confidence")
        print(table[["component", "status", "unit", "data", "claimed_epsilon",
                     "claimed_delta", "lower_bound", "refuted", "counts"]].to_string(index=False))
        print("\nPNCF (ε = 1, k = 40, item neighbourhood) per user over a cross-validation "
              "(the paper's claims composed, not guarantees):")
        print(composed.to_string(index=False))
        print("\nEnd-to-end models, everything they release, on the edge cases (claimed ε of "
              "the target from the model's own report; ∞: outside the guarantee, as reported):")
        print(surfaces[["scenario", "claimed_epsilon", "lower_bound", "verdict",
                        "event"]].to_string(index=False, max_colwidth=70))
    return table


if __name__ == "__main__":  # pragma: no cover
    main()
