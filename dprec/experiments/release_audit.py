r"""Audits of everything the private models release, on the neighbouring datasets that break them.

A guarantee that *holds* must hold for every output of the model, not for the
one the auditor thought of.  `released` collects what a fitted model
publishes — predictions and every detail (`was_impossible`, `actual_k`...),
`kneighbors` ids *and* weights, `get_neighbors`, every public fitted array
(attributes ending in `_`, and `sim`), and the privacy report's text and
figures — keyed by raw ids where the model keys them so, and by position
where it keys them by Surprise's inner ids (which follow the data's order).
[`audit_surface`][dprec.audit.surface.audit_surface] then chooses the events on pilot
runs and measures them on fresh ones.

The neighbouring datasets are the edge cases where a guarantee breaks first
(`scenarios`; every end-to-end model is also attacked at its defaults, without
catalogues, in `default_scenarios`):

* a **renumbering removal**: the first user of the data, or a rating whose
  removal changes the order in which items first appear — Surprise numbers
  users and items by first appearance, so every later inner id moves;
* the **sole rater of an item** (the item exists only through them);
* a **single-rating user** under a one-rating unit (their only rating removed);
* a **user at the threshold** $\tau$ of a set sketch (one item removed takes them
  below it).

Each scenario names a configuration (defaults, non-default parameters, a tiny
and a large ε), the neighbouring pair, and the target whose ε is read from
the model's own report on the larger dataset.  A target the report puts
outside the guarantee (ε = ∞) is not measured — the report has told the truth
about them; every other row must have its lower bound at or below the claim.
"""

from __future__ import annotations

import copy
import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd
from joblib import Parallel, delayed
from surprise import Dataset, Reader

from ..accountant.ledger import Unit
from ..audit.surface import audit_surface
from ..endtoend.dp_als import DPALS
from ..endtoend.dp_baseline import DPBaseline
from ..endtoend.dp_item_knn import DPItemKNN
from ..endtoend.local_knn import LocalKNN
from ..knn import PrivateKNN

__all__ = ["Scenario", "audit_scenario", "crowded_edge_data", "default_scenarios", "edge_data",
           "released", "run", "scenarios"]

#: confidence of every lower bound
CONFIDENCE = 0.95


def _raw(trainset, inner: np.ndarray, users: bool) -> list:
    convert = trainset.to_raw_uid if users else trainset.to_raw_iid
    return [convert(int(n)) for n in np.asarray(inner).ravel() if n >= 0]


def _public_arrays(model, depth: int = 1) -> dict:
    """The public fitted attributes (``name_``, and ``sim``) that hold numbers, and those
    of fitted sub-models (e.g. ``DPItemKNN.baseline_``), one level down."""
    out = {}
    names = [n for n in vars(model) if not n.startswith("_") and (n.endswith("_") or n == "sim")]
    if "sim" not in names and "sim" in dir(type(model)):
        names.append("sim")
    for name in names:
        try:
            value = getattr(model, name)
        except Exception as error:   # noqa: BLE001 - a property that refuses is an answer too
            out[name] = f"error: {type(error).__name__}"
            continue
        if isinstance(value, (np.ndarray, pd.Series, pd.DataFrame, float, int, np.number)):
            out[name] = value
        elif depth and hasattr(value, "trainset") and hasattr(value, "fit"):
            out[name] = _public_arrays(value, depth - 1)
    return out


def _call(function: Callable, *args):
    """``function(*args)``, or the name of the error it raises (a refusal is an output)."""
    try:
        return function(*args)
    except Exception as error:   # noqa: BLE001
        return f"error: {type(error).__name__}"


def _neighbours(model, users: Sequence, items: Sequence, weights: bool = True) -> dict:
    """`kneighbors` ids and weights (``weights=False``: the ids alone, each weighed 1), and
    `get_neighbors`, as raw ids of the probes."""
    out: dict = {}
    trainset = model.trainset
    if hasattr(model, "kneighbors"):
        user_based = getattr(model, "sim_options_", {}).get("user_based", True)
        if getattr(model, "neighbourhood_", "user") == "user":
            probes = users if user_based else items
            for raw in probes:
                inner = _inner(trainset, raw, user_based)
                if inner is None:
                    out[f"kneighbors/{raw}"] = "unknown"
                    continue
                answer = _call(lambda n: model.kneighbors(**{("users" if user_based else
                                                               "items"): np.array([n])}), inner)
                out[f"kneighbors/{raw}"] = answer if isinstance(answer, str) else {
                    _raw(trainset, [v], user_based)[0]: float(w) if weights else 1.0
                    for v, w in zip(answer[0][0], answer[1][0]) if v >= 0}
        else:
            for raw_u in users:
                for raw_i in items:
                    u, i = _inner(trainset, raw_u, True), _inner(trainset, raw_i, False)
                    if u is None or i is None:
                        out[f"kneighbors/{raw_u}/{raw_i}"] = "unknown"
                        continue
                    answer = _call(lambda a, b: model.kneighbors(np.array([a]), np.array([b])),
                                   u, i)
                    out[f"kneighbors/{raw_u}/{raw_i}"] = answer if isinstance(answer, str) else {
                        _raw(trainset, [v], user_based)[0]: float(w) if weights else 1.0
                        for v, w in zip(answer[0][0], answer[1][0]) if v >= 0}
    # get_neighbors where the model covers it: a kNN's lists as raw ids (PrivateKNN). A
    # model of public lists releases its neighbours keyed by raw id (`sim`, `neighbours_`:
    # the arrays); its get_neighbors is Surprise's inner-id interface, which shows which
    # ids the trainset holds, and its report lists it as not covered once it is called
    if hasattr(model, "kneighbors"):
        k = int(getattr(model, "k", 2) or 2)
        for raw in users:
            inner = _inner(trainset, raw, True)
            answer = "unknown" if inner is None else _call(model.get_neighbors, inner, k)
            out[f"get_neighbors/{raw}"] = answer if isinstance(answer, str) else {
                v: 1.0 for v in _raw(trainset, answer, True)}
    return out


def _inner(trainset, raw, users: bool):
    try:
        return (trainset.to_inner_uid if users else trainset.to_inner_iid)(raw)
    except ValueError:
        return None


def _report(model) -> dict:
    """The printed report and its public figures (the per-user frame is the curator's)."""
    report = model.privacy_report()
    out = {"text": str(report)}
    guarantee = report.guarantee
    out["guarantee"] = "none" if guarantee is None else {
        str(unit): {"epsilon": eps, "delta": delta} for unit, (eps, delta) in guarantee.items()}
    return out


def released(model, users: Sequence, items: Sequence, outputs: Sequence[str] | None = None,
             own: Sequence = ()) -> dict:
    """Everything ``model`` (fitted) publishes about the probe ``users`` × ``items`` (raw ids).

    Parameters
    ----------
    model : fitted dprec model
    users, items : sequences of raw ids
        The probes: predictions for every pair (with every detail), neighbour
        lists of every probe user, and top-``3`` lists where the model has
        ``recommend``.  Ids unknown to the trainset are asked too.
    outputs : sequence of str, optional
        The parts to collect, among ``"predictions"``, ``"neighbours"``,
        ``"neighbour ids"`` (the neighbours without their weights, as raw ids),
        ``"recommendations"``, ``"arrays"``, ``"report"`` (default all but
        ``"neighbour ids"``): the part a component's claim covers.
    own : sequence of raw user ids
        Users whose own answers (their predictions, neighbour lists and
        top-N) are left out: they are shown to that user alone, and
        differential privacy protects a user against what the *others* see.

    Returns
    -------
    dict
        Nested, for [`flatten_release`][dprec.audit.surface.flatten_release].
    """
    parts = set(outputs or ("predictions", "neighbours", "recommendations", "arrays", "report"))
    out: dict = {}
    users = [u for u in users if u not in set(own)]
    if "predictions" in parts:
        pairs = [(u, i, 0.0) for u in users for i in items]
        for prediction in model.test(pairs):
            details = {key: value for key, value in prediction.details.items()
                       if isinstance(value, (bool, int, float, str))}
            out[f"prediction/{prediction.uid}/{prediction.iid}"] = {"est": prediction.est,
                                                                  **details}
    if "neighbours" in parts or "neighbour ids" in parts:
        out.update(_neighbours(model, users, items, weights="neighbours" in parts))
    if "recommendations" in parts and hasattr(model, "recommend_batch"):
        known = [raw for raw in users if _inner(model.trainset, raw, True) is not None]
        lists = _call(model.recommend_batch, known, 3)     # one call: the lists as one batch
        if isinstance(lists, str):
            answered = dict.fromkeys(known, lists)
        else:       # one pass over the batch: each user's items with their 0-based rank
            answered = {raw: {} for raw in known}
            for uid, iid, rank in zip(lists["uid"].tolist(), lists["iid"].tolist(),
                                      lists["rank"].tolist()):
                answered[uid][iid] = rank - 1
        for raw in users:
            out[f"recommend/{raw}"] = answered.get(raw, "unknown")
    if "arrays" in parts:
        out["arrays"] = _public_arrays(model)
    if "report" in parts:
        out["report"] = _report(model)
    return out


# ------------------------------------------------------------------ the data
def edge_data() -> Dataset:
    """A small dataset with every edge case in it, in a data order that a removal renumbers.

    Ten users ``u0…u9`` over items ``i0…i5`` (rated in a fixed pattern), and:
    ``first`` rates ``i5`` then ``i3`` as the data's first ratings (removing
    them renumbers items and users); ``sole`` is the only rater of ``solo``;
    ``single`` has one rating; ``target`` rates against the crowd.
    """
    rows = [("first", "i5", 5.0), ("first", "i3", 1.0), ("first", "i0", 4.0)]
    rows += [(f"u{u}", f"i{i}", float(1 + (u * 3 + i * 5) % 5)) for u in range(10)
             for i in range(6) if (u + i) % 3]
    rows += [("target", "i0", 5.0), ("target", "i1", 1.0), ("target", "i2", 5.0),
             ("sole", "i0", 3.0), ("sole", "solo", 5.0), ("sole", "i4", 2.0),
             ("single", "i1", 4.0)]
    return Dataset.load_from_df(pd.DataFrame(rows, columns=["u", "i", "r"]),
                                Reader(rating_scale=(1, 5)))


def crowded_edge_data(n_crowd: int = 150) -> Dataset:
    """`edge_data` in a crowd: ``n_crowd`` more users ``c000…`` rate ``i0…i5`` (each rates
    four of them), enough raters for the models at their defaults (ε = 1, no catalogue)
    to list those items by private partition selection, while ``solo`` (its sole rater's)
    and the edge cases stay as in `edge_data`."""
    rows = [(f"c{u:03d}", f"i{i}", float(1 + (u + 2 * i) % 5)) for u in range(n_crowd)
            for i in range(6) if (u + i) % 3]
    crowd = pd.DataFrame(rows, columns=["u", "i", "r"])
    edge = pd.DataFrame(edge_data().raw_ratings, columns=["u", "i", "r", "t"])[["u", "i", "r"]]
    return Dataset.load_from_df(pd.concat([edge, crowd], ignore_index=True),
                                Reader(rating_scale=(1, 5)))


def without(data: Dataset, uid, iid=None) -> Dataset:
    """A copy of ``data`` without ``uid``'s ratings (all of them, or of ``iid`` only)."""
    smaller = copy.copy(data)
    smaller.raw_ratings = [r for r in data.raw_ratings
                           if not (r[0] == uid and (iid is None or r[1] == iid))]
    return smaller


def catalogue(data: Dataset) -> tuple[list, list]:
    """The raw user and item ids of ``data`` (a public catalogue for its neighbours)."""
    return (list(dict.fromkeys(r[0] for r in data.raw_ratings)),
            list(dict.fromkeys(r[1] for r in data.raw_ratings)))


# ------------------------------------------------------------------ scenarios
@dataclass(frozen=True)
class Scenario:
    """One audit: a configuration, a neighbouring pair, the target and the outputs."""

    name: str
    factory: Callable = field(repr=False)      # (seed) -> unfitted model
    unit: Unit
    target: object                             # the raw user whose data differs
    removed: object = None                     # the raw item removed (one-rating units)
    outputs: tuple[str, ...] | None = None     # what the claim covers (default all)
    probes: tuple | None = None                # the users asked about (default every user)
    crowded: bool = False                      # on `crowded_edge_data` (else `edge_data`)


@dataclass
class ScenarioResult:
    scenario: str
    unit: str
    target: str
    claimed_epsilon: float
    lower_bound: float
    event: str
    counts: str
    refuted: bool
    verdict: str


def audit_scenario(scenario: Scenario, data: Dataset, n_runs: int = 300,
                   pilot_runs: int = 100, seed: int = 0) -> ScenarioResult:
    """Audit one scenario: the claim read from the model's own report on the larger
    dataset once it has released everything audited (the target's ε: a model that charges
    as it answers, such as `PrivateKNN`, has charged every answer by then), the bound from
    `released` through [`audit_surface`][dprec.audit.surface.audit_surface]."""
    a = data.build_full_trainset()
    b = without(data, scenario.target, scenario.removed).build_full_trainset()
    users, items = catalogue(data)
    users = list(scenario.probes or users)
    model = scenario.factory(None).fit(a)
    released(model, users, items, scenario.outputs, own=(scenario.target,))
    report = model.privacy_report()
    per_user = report.per_user(scenario.unit)
    claimed = (float(per_user.loc[scenario.target, "epsilon"])
               if scenario.target in per_user.index else math.inf)
    common = dict(scenario=scenario.name, unit=str(scenario.unit),
                  target=f"{scenario.target}" + (f" ({scenario.removed})" if scenario.removed
                                                 else ""), claimed_epsilon=claimed)
    if not math.isfinite(claimed):
        return ScenarioResult(**common, lower_bound=math.nan, event="", counts="",
                              refuted=False, verdict="outside the guarantee, as reported")

    def release(trainset, run_seed):
        return released(scenario.factory(run_seed).fit(trainset), users, items,
                        scenario.outputs, own=(scenario.target,))

    bound = audit_surface(release, a, b, n_runs=n_runs, pilot_runs=pilot_runs,
                          confidence=CONFIDENCE, random_state=seed)
    best = int(np.argmax(bound.per_event))
    refuted = bound.violates(claimed)
    return ScenarioResult(**common, lower_bound=bound.epsilon, event=bound.event,
                          counts=f"{bound.counts_a[best]} / {bound.counts_b[best]} of {n_runs}",
                          refuted=refuted, verdict="REFUTED" if refuted else "holds")


def scenarios(data: Dataset, quick: bool = False) -> list[Scenario]:
    """Every *holds* component on every edge case of `edge_data` (``quick``: the
    defaults and the edge cases only, no parameter sweep)."""
    users, items = catalogue(data)
    listed = {"users": users, "items": items}

    def make(cls, **params):
        def factory(seed):
            return cls(random_state=None if seed is None else np.random.default_rng(seed),
                       **params)
        return factory

    out = []
    for eps in (1.0,) if quick else (0.1, 1.0, 5.0):
        out.append(Scenario(f"PrivateKNN pncf_corrected ε={eps:g}, neighbour ids, first rating "
                            "removed", make(PrivateKNN, epsilon=eps, k=2, verbose=False,
                                            selector="pncf_corrected", neighbourhood="user"),
                            Unit.RATING, "first", "i5", outputs=("neighbour ids",),
                            probes=("u1",)))
        out += [
            Scenario(f"DPBaseline user ε={eps:g}, first user removed (catalogue)",
                     make(DPBaseline, epsilon=eps, unit="user", **listed), Unit.USER, "first"),
            Scenario(f"DPBaseline rating ε={eps:g}, first rating removed (catalogue)",
                     make(DPBaseline, epsilon=eps, unit="rating", **listed), Unit.RATING,
                     "first", "i5"),
            Scenario(f"DPItemKNN ε={eps:g}, first user removed (catalogue)",
                     make(DPItemKNN, epsilon=eps, k=3, baseline_share=0.3, **listed),
                     Unit.USER, "first"),
            Scenario(f"LocalKNN ε={eps:g}, first rating removed (catalogue)",
                     make(LocalKNN, epsilon=eps, k=3, **listed), Unit.RATING, "first", "i5"),
        ]
    out += [
        Scenario("PrivateKNN pncf_corrected, single-rating user's rating (outside, as "
                 "reported)", make(PrivateKNN, epsilon=1.0, k=2, verbose=False,
                                   selector="pncf_corrected", neighbourhood="user"),
                 Unit.RATING, "single", "i1", outputs=("neighbour ids",), probes=("u1",)),
        Scenario("DPBaseline user, sole rater removed (catalogue)",
                 make(DPBaseline, unit="user", **listed), Unit.USER, "sole"),
        Scenario("DPBaseline rating, single-rating user's rating (catalogue)",
                 make(DPBaseline, unit="rating", **listed), Unit.RATING, "single", "i1"),
        Scenario("DPItemKNN, sole rater removed (catalogue)",
                 make(DPItemKNN, k=3, baseline_share=0.3, **listed), Unit.USER, "sole"),
        Scenario("DPItemKNN clip=0.75 grid_bits=1, target removed (catalogue)",
                 make(DPItemKNN, k=3, clip=0.75, grid_bits=1, baseline_share=0.3,
                      **listed), Unit.USER, "target"),
        Scenario("LocalKNN laplace rr_minhash τ=3, a rating of a user above τ (catalogue)",
                 make(LocalKNN, k=3, rating_release="laplace",
                      sim_options={"name": "rr_minhash", "tau": 3, "small_users": "exclude"},
                      **listed),
                 Unit.RATING, "u1", "i0"),
    ]
    out += default_scenarios(make)
    if not quick:
        out += [
            Scenario("DPBaseline user global_share=0.9 item_shrinkage=0 (catalogue)",
                     make(DPBaseline, unit="user", global_share=0.9, item_shrinkage=0.0,
                          **listed), Unit.USER, "target"),
            Scenario("LocalKNN noisy_minhash τ=3, user at τ (catalogue)",
                     make(LocalKNN, k=3, sim_options={"name": "noisy_minhash", "tau": 3,
                                                      "small_users": "exclude"}, **listed),
                     Unit.RATING, "target", "i0"),
            Scenario("DPItemKNN k=1 shrinkage=0 (catalogue)",
                     make(DPItemKNN, k=1, shrinkage=0.0, baseline_share=0.3, **listed),
                     Unit.USER, "target"),
        ]
    return out


#: the users asked about in the crowded scenarios (the crowd's answers add nothing new)
CROWD_PROBES = ("c000", "c001", "u0", "u1", "first", "target", "single")


def default_scenarios(make: Callable) -> list[Scenario]:
    """Every end-to-end model **at its defaults, without catalogues** (ε = 1; the items
    chosen by private partition selection, the user list private), on
    `crowded_edge_data`, where the defaults list the crowd's items: the sole rater of an
    item removed, the data's first user removed (a renumbering), a single-rating user's
    only rating removed — through every shared output."""
    population = catalogue(crowded_edge_data())[0]

    def crowded(name, factory, unit, target, removed=None):
        return Scenario(f"{name} (defaults, no catalogue)", factory, unit, target, removed,
                        probes=CROWD_PROBES, crowded=True)

    return [
        crowded("DPBaseline, sole rater removed", make(DPBaseline), Unit.USER, "sole"),
        crowded("DPBaseline, first user removed", make(DPBaseline), Unit.USER, "first"),
        crowded("DPBaseline rating, the sole rating of solo", make(DPBaseline, unit="rating"),
                Unit.RATING, "sole", "solo"),
        crowded("DPBaseline rating, single-rating user's rating",
                make(DPBaseline, unit="rating"), Unit.RATING, "single", "i1"),
        crowded("DPItemKNN, sole rater removed", make(DPItemKNN), Unit.USER, "sole"),
        crowded("DPItemKNN, first user removed", make(DPItemKNN), Unit.USER, "first"),
        crowded("DPALS, sole rater removed", make(DPALS), Unit.USER, "sole"),
        crowded("LocalKNN, the sole rating of solo", make(LocalKNN), Unit.RATING, "sole",
                "solo"),
        # in the local model who reports is public (the condition LocalKNN states): the
        # single-rating user still reports, ⊥ everywhere, once their rating is removed
        crowded("LocalKNN, single-rating user's rating, its population given",
                make(LocalKNN, users=population), Unit.RATING, "single", "i1"),
    ]


def run(quick: bool = False, seed: int = 0, progress: bool = False,
        n_jobs: int = 1) -> pd.DataFrame:
    """Every scenario of `scenarios`, one row each (``quick``: fewer runs;
    ``n_jobs``: scenarios audited at once in joblib's processes, the same rows)."""
    data, crowd = edge_data(), crowded_edge_data()
    chosen = scenarios(data, quick=quick)
    if progress:
        from tqdm import tqdm

        chosen = tqdm(chosen, desc="release audits", unit="scenario")
    n_runs, pilot = (200, 100) if quick else (600, 200)
    results = Parallel(n_jobs=n_jobs)(
        delayed(_audit_recorded)(s, crowd if s.crowded else data, n_runs=n_runs,
                                 pilot_runs=pilot, seed=seed)
        for s in chosen)
    for message, category in dict.fromkeys(w for _, caught in results for w in caught):
        warnings.warn(message, category, stacklevel=2)      # each once, in this process
    return pd.DataFrame([asdict(result) for result, _ in results])


def _audit_recorded(*args, **kwargs) -> tuple[ScenarioResult, list[tuple[str, type]]]:
    """`audit_scenario` and the warnings it raised, as (message, category): a joblib
    worker would print them on stderr, `run` warns them in the caller's process."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = audit_scenario(*args, **kwargs)
    return result, [(str(w.message), w.category) for w in caught]
