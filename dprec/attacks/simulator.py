r"""The β-kNN attack on neighbourhood recommenders, as a simulator.

**The kNN attack** (Calandrino, Kilzer, Narayanan, Felten, Shmatikov, "You
Might Also Like: Privacy Risks of Collaborative Filtering", IEEE S&P 2011,
§V): an attacker who knows ``n_known`` (about 8) of a target user's ratings
and the recommender's ``k`` creates ``k`` fake users, each rating exactly
those items with the target's values.  Each fake user's ``k`` nearest
neighbours are then the ``k − 1`` other fakes and the target, and the only
neighbour who rated anything else is the target: the fake users'
predictions and recommendations reveal the target's other ratings.

**The β-kNN attack** (Lu & Shen, "An Accuracy-Assured Privacy-Preserving
Recommender System for Internet Commerce", ComSIS 2015, §4)
generalises it to randomised neighbour selection: if neighbours come from
the top ``βk`` candidates, ``βk`` fake users cover them.  A selector's
security ``β`` is the fake-user budget it claims to need (Lu & Shen, ComSIS 2015).

[`BetaKNNAttack`][] runs the attack for many targets and ``β`` values on
copies of a dataset and measures, per (target, β):

``exposure``
    Fraction of the fake users whose neighbour set contains the target
    (user neighbourhood); with an item neighbourhood (Surprise's
    ``KNNBasic`` semantics) a fake user's exposure is the fraction of the
    target's hidden items for which the target is among the chosen raters.
``recovery``
    Fraction of the target's hidden items whose prediction for a fake user
    rounds to the target's rating, averaged over the fake users.  An
    impossible prediction is a miss (never Surprise's global-mean fallback).
``recovery_pooled`` / ``recovery_any``
    The attacker pools all ``βk`` fake users: per hidden item the majority
    vote of their rounded possible predictions (ties: the value nearest the
    mean estimate) / whether any of them gets it right (an optimistic bound:
    it needs an oracle to pick the right fake).
``possible_precision`` / ``possible_recall``, ``topn_precision`` / ``topn_recall``
    Item inference, pooled over the fake users: the items (other than the
    known ones) that any fake user gets a possible prediction for / that are
    in any fake user's top-N recommendations, against the target's hidden
    items.
``baseline_recovery``
    What the model reveals without the attack: the unpoisoned model, trained
    with the target's hidden ratings left out (the target keeps only the
    known ones), predicting the hidden items for the target.  Leaving them
    out is needed: an item-neighbourhood model predicting a rating it was
    trained on uses the user as their own neighbour and returns the rating.
    The attack's gain is ``recovery − baseline_recovery``.
``baseline_item_mean``
    What the crowd reveals: the fraction of hidden items whose mean rating
    among the *other* users rounds to the target's rating.  The pooled vote
    of many fake users whose neighbours are random real users converges to
    about this, so it is the fair yardstick for ``recovery_pooled``: a
    configuration resists the pooled attack when ``recovery_pooled`` stays
    near it.

Fake users are new accounts: their inner ids come after every real user's
and their ratings after every real rating (as if appended to the raw ratings
of a copy of the dataset, [`BetaKNNAttack.poisoned_dataset`][]).  The
dataset given is never modified.

Speed: the similarities among real users do not change with the poisoning.
For [`PrivateKNN`][dprec.PrivateKNN] with an exact similarity, each scenario only
computes the fake users' rows (and extends the recommendation-aware
sensitivity ``RS``) with
[`IncrementalSimilarity`][dprec.similarity.incremental.IncrementalSimilarity] and fits
with them through [`fit_precomputed`][dprec.knn.PrivateKNN.fit_precomputed]; the
result equals a full ``fit`` (tested).  With a sketch backend (local DP)
every real user's sketch is released once per attack (seeded from
``random_state`` and the options) and each scenario sketches only its fake
users, with their own noise keys
([`IncrementalSketchSimilarity`][dprec.similarity.incremental.IncrementalSketchSimilarity]; equal
to the backend's full computation with those keys).  Other Surprise
algorithms, and a sketch backend whose ``τ`` is computed from the data, are
refitted from scratch.  Targets run in parallel with joblib.

The parts: `dprec.attacks.poisoning` (the attacked copies of the data),
`dprec.attacks.shared_similarities` (the similarity states shared by
the scenarios), `dprec.attacks.runners` (fitting and reading each
algorithm), `dprec.attacks.metrics` (the measures).

See [The β-kNN attack](../attack.md) for the scenarios, the measures and the results.
"""

from __future__ import annotations

import sys
import time
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import replace

import numpy as np
import pandas as pd
from joblib import Parallel, delayed
from surprise import AlgoBase, Dataset, Reader, Trainset

from ..utils._progress import progress_bar
from ..utils._rng import RandomStateLike, check_random_state, validate_random_state
from ..utils._validation import check_bool, check_int
from .metrics import attack_metrics, item_mean_recovery, recovery
from .poisoning import AttackTarget, BaseData, fake_prefix, scenarios
from .runners import SurpriseRunner, make_runners
from .shared_similarities import SimilarityState, scenario_states, similarity_states

__all__ = ["COLUMNS", "BetaKNNAttack"]

#: columns of `BetaKNNAttack.run`, in order
COLUMNS = ["algo", "target", "beta", "n_fake", "n_known", "n_hidden", "exposure",
           "exposure_any", "recovery", "recovery_pooled", "recovery_any", "possible_precision",
           "possible_recall", "topn_precision", "topn_recall", "baseline_recovery",
           "baseline_item_mean", "selector_beta", "seconds"]


class BetaKNNAttack:
    r"""Simulate the β-kNN attack on a Surprise recommender (Calandrino et al., S&P 2011).

    For each of ``n_targets`` target users (drawn among those with at least
    ``min_target_ratings`` ratings) the attacker knows ``n_known`` of their
    ratings (drawn uniformly); for each ``β`` in ``betas`` they add ``β·k``
    fake users who rate exactly those items with the target's values, the
    recommender is fitted on the poisoned copy, and the fake users'
    predictions and top-N lists are read (Calandrino et al., S&P 2011;
    Lu & Shen, ComSIS 2015).  See the module docstring for the measures.

    Parameters
    ----------
    algo : surprise.AlgoBase or mapping of str to AlgoBase
        The configured (unfitted) recommender; ``k`` is read from it.  A
        mapping attacks several recommenders on the same targets, known
        items and fake users (similarities are shared where the options
        agree); its keys name them in the ``algo`` column.  Never modified:
        each scenario fits a copy whose ``random_state`` (if any) is set to
        [`scenario_seed`][dprec.attacks.scenario_seed] of (``random_state``, target, β).
    data : surprise.dataset.Dataset
        With raw ratings (``load_builtin``, ``load_from_df``,
        ``load_from_file``); never modified.
    n_known : int, default 8
        Ratings of the target the attacker knows (``>= 1``).
    betas : sequence of int, default (1, 2, 3, 4, 6, 8)
        Attack sizes: ``β·k`` fake users (each ``>= 1``, not empty).
    n_targets : int, default 50
        Number of targets (``>= 1``); fewer when fewer users qualify (warned).
    min_target_ratings : int, default 50
        Targets have at least this many ratings (and more than ``n_known``).
    top_n : int, default 10
        Length of the recommendation lists used for item inference.
    inference : bool, default True
        Whether the fake users ask for every item, to measure item inference
        (``possible_*`` and ``topn_*``); ``False`` asks only for the target's
        hidden items (enough for exposure and recovery, many times faster;
        the four item-inference columns are then NaN).
    n_asked : int, optional
        Measure recovery and exposure on at most this many of each target's
        hidden items, drawn uniformly (seeded by ``random_state``); all of
        them by default.  The target's other hidden ratings stay hidden (left
        out of the baseline model); only fewer items are asked and scored,
        which makes each scenario cheaper and each target's measures noisier.
    random_state : None, int, RandomState or Generator
        Seeds the choice of targets and known items and every scenario's
        noise.  ``None``: fresh entropy, drawn once per attack object.
    n_jobs : int, default 1
        Targets run in parallel with joblib (``-1``: all cores).
    progress : bool, default False
        Show progress (tqdm if installed, else one line per target).

    Examples
    --------
    >>> from dprec import PrivateKNN, datasets
    >>> data = datasets.synthetic(150, 200, 5000, random_state=0)
    >>> algo = PrivateKNN(k=5, sim_options={"name": "cosine", "min_support": 4},
    ...                   neighbourhood="user")
    >>> table = BetaKNNAttack(algo, data, n_known=4, betas=(1,), n_targets=3,
    ...                       min_target_ratings=30, random_state=0).run()
    >>> float(table.exposure.min())
    1.0
    """

    def __init__(self, algo, data: Dataset, n_known: int = 8,
                 betas: Sequence[int] = (1, 2, 3, 4, 6, 8), n_targets: int = 50,
                 min_target_ratings: int = 50, top_n: int = 10, inference: bool = True,
                 n_asked: int | None = None, random_state: RandomStateLike = None, n_jobs: int = 1,
                 progress: bool = False) -> None:
        self.algorithms = _check_algorithms(algo)
        self.algo = algo
        if not isinstance(data, Dataset):
            raise TypeError(f"data must be a surprise Dataset, got {type(data).__name__}")
        if not hasattr(data, "raw_ratings"):
            raise ValueError("data must hold raw ratings (Dataset.load_builtin, load_from_df or "
                             "load_from_file), not predefined folds")
        self.data = data
        self.n_known = check_int(n_known, "n_known", minimum=1)
        self.betas = _check_betas(betas)
        self.n_targets = check_int(n_targets, "n_targets", minimum=1)
        self.min_target_ratings = check_int(min_target_ratings, "min_target_ratings", minimum=1)
        self.top_n = check_int(top_n, "top_n", minimum=1)
        self.inference = check_bool(inference, "inference")
        self.n_asked = None if n_asked is None else check_int(n_asked, "n_asked", minimum=1)
        validate_random_state(random_state)
        self.random_state = random_state
        self.n_jobs = check_int(n_jobs, "n_jobs")
        if self.n_jobs == 0:
            raise ValueError("n_jobs must be a positive number of workers or negative "
                             "(joblib's convention), not 0")
        self.progress = check_bool(progress, "progress")
        self._entropy: int | None = None
        self._trainset: Trainset | None = None

    # ----------------------------------------------------------- targets
    @property
    def entropy(self) -> int:
        """The root seed: ``random_state`` itself when an int, else drawn once."""
        if self._entropy is None:
            if isinstance(self.random_state, (int, np.integer)):
                self._entropy = int(self.random_state)
            else:
                rng = check_random_state(self.random_state)
                self._entropy = int(rng.integers(0, 2**63))
        return self._entropy

    @property
    def trainset(self) -> Trainset:
        """``data.build_full_trainset()``, built once."""
        if self._trainset is None:
            self._trainset = self.data.build_full_trainset()
        return self._trainset

    def targets(self) -> list[AttackTarget]:
        """The targets and their known / hidden ratings (the same on every call)."""
        ts = self.trainset
        rng = np.random.default_rng(np.random.SeedSequence(self.entropy, spawn_key=(0,)))
        counts = np.array([len(ts.ur[u]) for u in range(ts.n_users)])
        eligible = np.flatnonzero(counts >= max(self.min_target_ratings, self.n_known + 1))
        if len(eligible) == 0:
            raise ValueError(f"no user has min_target_ratings={self.min_target_ratings} "
                             f"ratings (and more than n_known={self.n_known})")
        if len(eligible) < self.n_targets:
            warnings.warn(f"only {len(eligible)} users qualify as targets "
                          f"(n_targets={self.n_targets})", stacklevel=2)
        chosen = np.sort(rng.choice(eligible, size=min(self.n_targets, len(eligible)),
                                    replace=False))
        targets = []
        for u in chosen.tolist():
            items = np.array([i for i, _ in ts.ur[u]], dtype=np.int64)
            values = np.array([r for _, r in ts.ur[u]], dtype=np.float64)
            known = np.zeros(len(items), dtype=bool)
            known[rng.choice(len(items), size=self.n_known, replace=False)] = True
            targets.append(AttackTarget(ts.to_raw_uid(u), u, items[known], values[known],
                                        items[~known], values[~known]))
        return targets

    def poisoned_dataset(self, target: AttackTarget, beta: int) -> Dataset:
        """A new ``Dataset``: the raw ratings of ``data`` followed by the ``β·k`` fake
        users' (what every scenario simulates; ``data`` is not modified).

        With several algorithms of different ``k``, the first one's ``k`` is used.
        """
        beta = _check_betas([beta])[0]
        k = next(iter(self.algorithms.values())).k
        ts = self.trainset
        raw = [(u, i, r) for u, i, r, *_ in self.data.raw_ratings]
        items = [ts.to_raw_iid(i) for i in target.known_items.tolist()]
        prefix = fake_prefix(ts)
        raw += [(f"{prefix}{f}", item, rating) for f in range(beta * k)
                for item, rating in zip(items, target.known_ratings.tolist())]
        frame = pd.DataFrame(raw, columns=["user", "item", "rating"])
        return Dataset.load_from_df(frame, Reader(rating_scale=ts.rating_scale))

    # --------------------------------------------------------------- run
    def run(self) -> pd.DataFrame:
        """Attack every target with every β; one row per (algorithm, target, β).

        Returns
        -------
        pandas.DataFrame
            Columns `COLUMNS` (see the module docstring): ``algo``,
            ``target`` (raw id), ``beta``, ``n_fake``, ``n_known``,
            ``n_hidden``, ``exposure``, ``exposure_any``, ``recovery``,
            ``recovery_pooled``, ``recovery_any``, ``possible_precision``,
            ``possible_recall``, ``topn_precision``, ``topn_recall``,
            ``baseline_recovery``, ``baseline_item_mean``, ``selector_beta`` (the β the selector
            reports for the fake users' selections, NaN for Surprise's
            algorithms) and ``seconds`` (this scenario's fit and reads,
            including the shared poisoning, split equally among the models that
            differ only in their prediction rule, which share one fit and one
            selection: `make_runners`).  ``exposure`` is NaN for
            algorithms without user neighbours (e.g. SVD, item-based kNN).
        """
        targets = self.targets()
        runners = make_runners(self.algorithms)
        base = BaseData.from_trainset(self.trainset)
        states = similarity_states(runners, base, self.entropy)
        order = {name: j for j, name in enumerate(self.algorithms)}
        jobs = (delayed(_attack_target)(base, states, runners, target, self.betas,
                                        self.entropy, self.top_n if self.inference else None,
                                        self.n_asked, order)
                for target in targets)
        results = Parallel(n_jobs=self.n_jobs, return_as="generator")(jobs)
        rows = []
        for result in _progress(results, len(targets), self.progress):
            rows += result
        return pd.DataFrame(rows, columns=COLUMNS)


def _check_algorithms(algo) -> dict[str, AlgoBase]:
    """``algo`` as a mapping name -> algorithm, each a Surprise ``AlgoBase`` with an
    integer ``k >= 1`` (a lone algorithm is named after its class)."""
    algorithms = dict(algo) if isinstance(algo, Mapping) else {type(algo).__name__: algo}
    if not algorithms:
        raise ValueError("algo must not be an empty mapping")
    for name, candidate in algorithms.items():
        if not isinstance(candidate, AlgoBase):
            raise TypeError(f"algo must be a surprise AlgoBase (or a mapping of them), got "
                            f"{type(candidate).__name__} for {name!r}")
        k = getattr(candidate, "k", None)
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ValueError(f"algo {name!r} has no integer k >= 1 (the attack adds β·k fake "
                             f"users); attack a kNN algorithm")
    return algorithms


def _check_betas(betas) -> tuple[int, ...]:
    """``betas`` as a non-empty tuple of integers ``>= 1``."""
    if isinstance(betas, (str, bytes)) or not isinstance(betas, (Sequence, np.ndarray)):
        raise TypeError(f"betas must be a sequence of integers, got {type(betas).__name__}")
    if len(betas) == 0:
        raise ValueError("betas must not be empty")
    return tuple(check_int(beta, "betas[]", minimum=1) for beta in betas)


def _progress(results: Iterable[list[dict]], total: int, show: bool) -> Iterator[list[dict]]:
    """Yield ``results``, showing progress with tqdm when installed, else plain lines."""
    if not show:
        yield from results
        return
    try:
        from tqdm import tqdm  # optional
    except ImportError:
        start = time.perf_counter()
        for done, result in enumerate(results, 1):
            print(f"  target {done}/{total} ({time.perf_counter() - start:.0f}s)",
                  file=sys.stderr, flush=True)
            yield result
        return
    del tqdm                           # installed: its bar, closed on an error
    with progress_bar(results, total=total, desc="β-kNN attack", unit="target") as bar:
        yield from bar


def _attack_target(base: BaseData, states: Mapping[tuple, SimilarityState],
                   runners: Sequence[SurpriseRunner], target: AttackTarget,
                   betas: Sequence[int], entropy: int, top_n: int | None,
                   n_asked: int | None = None,
                   order: Mapping[str, int] | None = None) -> list[dict]:
    """Every (algorithm, β) scenario of one target, with its baseline: the target's rows
    of the table, ordered by β then ``order`` of the algorithms (default: the runners'
    order) (``top_n`` None: the fake users ask for the hidden items only, no item
    inference; ``n_asked``: a sample of them).

    Grouped by similarity state (``states``: the real users' state of each
    runner's ``sim_key``), so that one state's matrices are updated scenario
    by scenario and shared by every runner that uses it.
    """
    n_items = base.trainset.n_items
    measured = _measured(target, n_asked, entropy)
    asked = np.arange(n_items) if top_n is not None else measured.hidden_items
    rows, baseline = [], {}
    for k in sorted({runner.k for runner in runners}):
        group = [runner for runner in runners if runner.k == k]
        target_scenarios = scenarios(base, target, betas, k, entropy)
        for key in dict.fromkeys(runner.sim_key for runner in group):
            users = [runner for runner in group if runner.sim_key == key]
            state = states[key] if key is not None else None
            for scenario, updated, shared in scenario_states(state, target_scenarios):
                shared += scenario.seconds
                for runner in users:
                    start = time.perf_counter()
                    if scenario.beta == 0:
                        outcomes = runner.outcomes(scenario.data, updated, scenario.seed,
                                                   measured, measured.hidden_items,
                                                   exposure=False)
                        for name, outcome in outcomes.items():
                            baseline[name] = recovery(outcome, measured, n_items, base.grid)
                        continue
                    outcomes = runner.outcomes(scenario.data, updated, scenario.seed,
                                               measured, asked)
                    seconds = (shared + time.perf_counter() - start) / len(outcomes)
                    rows += [{"algo": name, "target": target.raw_id, "beta": scenario.beta,
                              "n_fake": scenario.beta * k, "n_known": len(target.known_items),
                              "n_hidden": len(measured.hidden_items),
                              **attack_metrics(outcome, measured, n_items, base.grid, top_n),
                              "seconds": seconds}
                             for name, outcome in outcomes.items()]
    if order is None:
        order = {name: j for j, name in enumerate(name for runner in runners
                                                  for name in runner.names)}
    crowd = item_mean_recovery(base, measured)
    for row in rows:
        row["baseline_recovery"] = baseline[row["algo"]]
        row["baseline_item_mean"] = crowd
    rows.sort(key=lambda row: (list(betas).index(row["beta"]), order[row["algo"]]))
    return rows


def _measured(target: AttackTarget, n_asked: int | None, entropy: int) -> AttackTarget:
    """``target`` with at most ``n_asked`` of its hidden items (a uniform sample, seeded
    by ``entropy`` and the target), those the scenarios ask and score."""
    if n_asked is None or n_asked >= len(target.hidden_items):
        return target
    rng = np.random.default_rng(np.random.SeedSequence(entropy,
                                                       spawn_key=(1, target.inner_id)))
    keep = np.sort(rng.choice(len(target.hidden_items), size=n_asked, replace=False))
    return replace(target, hidden_items=target.hidden_items[keep],
                   hidden_ratings=target.hidden_ratings[keep])
