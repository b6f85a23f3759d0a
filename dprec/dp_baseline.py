r"""A differentially private baseline predictor, the yardstick of a private kNN.

$\hat r_{ui} = \mu + b_i + b_u$ (Koren's baseline, McSherry & Mironov's "global
effects", KDD 2009 §4.1), where $\mu$ and every $b_i$ come from **one
differentially private release** and $b_u$ from the user's own ratings:

1. *global effect*: the noisy sum $S$ and count $N$ of the (weighted) ratings
   centred at the middle $c$ of the public rating scale, with
   $\mu = c + B \tilde S / \max(\tilde N, 1)$;
2. *item effects*: per item of the item list, the noisy centred sum $S_i$ and
   count $N_i$, with $b_i = (B \tilde S_i - \tilde N_i (\mu - c)) / (\max(\tilde N_i, 0) + \beta)$
   (shrunk towards 0 by the stabiliser $\beta$);
3. *user effect* (not released): $b_u = \sum_i (r_{ui} - \mu - b_i) / (|I_u| + \lambda)$.

Each release is the Laplace mechanism (the lattice sampler of
`laplace`, hardened against floating-point attacks)
on the vector $(S / B, N)$ ($B = (r_{\max} - r_{\min})/2$, the largest centred
rating), whose ℓ1 sensitivity is 2 for the unit:

* `unit="rating"` (one rating added or removed): every rating has weight 1;
  a rating moves one sum by at most $B$ and one count by 1;
* `unit="user"` (all of one user's ratings added or removed): user $u$'s
  ratings have weight $w_u = 1/|I_u|$ (McSherry & Mironov's per-user
  weighting), so their centred sums move by at most $B$ in total and their
  counts by 1; the global release sums each user's mean.

The ε of the two releases add up (basic composition) to `epsilon`
(`global_share` of it for the global effect).  Everything the model answers
(predictions, `details`) is post-processing of the releases, except $b_u$: a
prediction for $u$ also uses $u$'s own ratings, which is allowed because it is
shown to $u$ alone — differential privacy protects each user against what the
*others* see.

**Nothing structural depends on the data's order.**  Surprise numbers users and
items by first appearance, so one rating removed renumbers many of them.  The
model therefore works in a *canonical space*: the users and items of the lists
below, each sorted by `(type name, raw id)` (a total order that depends on the
id set alone), the noise drawn in that order.  Released arrays are keyed by raw
id (`item_effects_` is a Series indexed by raw item id), ties are broken by
that sorted rank, and a renumbering of the same data gives bit-identical
releases for the same seed.

**The lists of users and items.**  With `items=` (a public catalogue, chosen
without looking at the ratings) every item of it has a released effect, noise
only where nobody rated it, and no prediction of it is impossible; with
`users=` the same for users (a listed user without ratings has $b_u = 0$) and
the privacy report lists exactly the catalogue.  Without them the lists are
read from the data, and the report states it as a condition: the guarantee is
for neighbouring datasets with the same lists, and the users at its boundary
are outside it (ε = ∞ for them, with the reason): the sole rater of an item
(removing them removes the item) when `items` is not given; when `users` is
not given, under `unit="rating"` every user with a single rating, and under
`unit="user"` every user (removing a user removes them from the list).

See `docs/end_to_end.md` for the construction, its accounting and its accuracy.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.sparse as sp
from surprise import AlgoBase, PredictionImpossible
from surprise.prediction_algorithms.predictions import Prediction

from ._arrays import safe_divide
from ._ratings import RatingArrays, ratings_matrix
from ._rng import derive_generator, fit_entropy, is_seeded, validate_random_state
from ._surprise import cyclic_gc_paused, predictions, raw_ids
from ._validation import check_choice, check_epsilon, check_open_unit, check_real
from .ledger import LedgerEntry, PrivacyAccountant, Status, Unit
from .mechanisms import laplace, laplace_epsilon, laplace_scale

__all__ = ["SCOPE", "DPBaseline", "sorted_ids"]

UNITS = {"rating": Unit.RATING, "user": Unit.USER}
#: Surprise's reason when neither the user nor the item is known
UNKNOWN_BOTH = "User and item are unknown."
#: the ledger's notes: each release's argument in brief (per unit), and the answers'
NOTES = {
    "rating": "Laplace (lattice sampler) on (centred sums / B, counts), l1 sensitivity 2 "
              "per one rating",
    "user": "Laplace (lattice sampler) on (centred sums / B, counts), l1 sensitivity 2 per "
            "one user (all of their ratings) (weights 1/|I_u|)",
    "answers": "every answer is post-processing of the two releases; a prediction for u "
               "also uses u's own ratings (b_u), shown to u alone",
}
#: what the model releases, all post-processing of the two releases
OUTPUTS = ("predictions", "details", "recommendations", "item effects")


class DPBaseline(AlgoBase):
    r"""Baseline predictor $\mu + b_i + b_u$ from one ε-differentially private release.

    See the module docstring for the construction, the privacy argument and
    its conditions; `privacy_report()` gives the ledger (ε for the unit,
    δ = 0, every output covered by the release).

    Parameters
    ----------
    epsilon : float, default 1.0
        The privacy budget of the whole release, `> 0`.
    unit : {"user", "rating"}, default "user"
        What two neighbouring datasets differ in: all of one user's ratings,
        or one rating.
    global_share : float, default 0.1
        The share of `epsilon` spent on $\mu$ (in (0, 1)); the rest goes to
        the item effects.
    item_shrinkage : float, optional
        $\beta$ in the item effects (`>= 0`), in units of the (weighted)
        counts; default ten times the Laplace scale of the noisy counts (a
        function of ε alone: 22 at ε = 1), so that noisy items shrink towards 0.
    user_shrinkage : float, default 10.0
        $\lambda$ in the user effect (`>= 0`).
    users, items : sequence of raw ids, optional
        Public catalogues (stored as given, validated at `fit`): every rating
        must be by a listed user of a listed item (else `ValueError` naming
        the parameter).  Without them the lists are read from the data (see
        the module docstring for what the guarantee then excludes).
    random_state : None, int, RandomState or Generator
        `None` (default) draws fresh entropy at each fit; an int gives
        **seeded noise**, reproducible, for experiments only: the report's
        entries are then void (anyone who guesses the seed removes the noise).
    verbose : bool, default False

    Attributes
    ----------
    mu_ : float
        The released global mean.
    item_effects_ : pandas.Series
        The released $b_i$, indexed by raw item id in sorted order (every
        item of the item list).  It was an array in Surprise's inner-id
        order, which follows the data's order and leaked it.

    Notes
    -----
    Each user's own $b_u$ is kept privately (`_user_effects`, in the sorted
    order of the user list): it is computed from their raw ratings and used
    in their own predictions only, so it is not a release.

    References
    ----------
    F. McSherry and I. Mironov, "Differentially Private Recommender Systems:
    Building Privacy into the Netflix Prize Contenders", KDD 2009.
    """

    def __init__(self, *, epsilon: float = 1.0, unit: str = "user", global_share: float = 0.1,
                 item_shrinkage: float | None = None, user_shrinkage: float = 10.0,
                 users: Iterable | None = None, items: Iterable | None = None,
                 random_state=None, verbose: bool = False) -> None:
        AlgoBase.__init__(self)
        self.epsilon = epsilon
        self.unit = unit
        self.global_share = global_share
        self.item_shrinkage = item_shrinkage
        self.user_shrinkage = user_shrinkage
        self.users = users
        self.items = items
        self.random_state = random_state
        self.verbose = verbose

    def _check_params(self) -> tuple[float, str, float, float, float]:
        epsilon = check_epsilon(self.epsilon)
        unit = check_choice(self.unit, "unit", tuple(UNITS))
        share = check_open_unit(self.global_share, "global_share")
        beta = None if self.item_shrinkage is None else \
            check_real(self.item_shrinkage, "item_shrinkage", low=0.0)
        lam = check_real(self.user_shrinkage, "user_shrinkage", low=0.0)
        validate_random_state(self.random_state)
        return epsilon, unit, share, beta, lam

    def fit(self, trainset):
        """Release $\\mu$ and the item effects (spending `epsilon`) and compute $b_u$."""
        return self.fit_part(trainset)

    def fit_part(self, trainset, entropy: bytes | None = None, seeded: bool | None = None):
        """`fit` as part of another model (e.g. [`DPItemKNN`][dprec.DPItemKNN]): the noise
        from that model's `entropy` (this one's `random_state` is then unused) and its
        accountant `seeded` alike."""
        epsilon, unit, share, beta, lam = self._check_params()
        space = RatingSpace.build(trainset, self.users, self.items)
        AlgoBase.fit(self, trainset)
        if entropy is None:
            entropy, seeded = fit_entropy(self.random_state), is_seeded(self.random_state)
        rng = derive_generator(entropy, "dp-baseline")
        low, high = trainset.rating_scale
        centre, half_range = (low + high) / 2.0, (high - low) / 2.0
        true_global, true_items = effect_sums(space.matrix, unit, (low, high))
        n_items = space.matrix.shape[1]

        # 1. global effect
        epsilon_global = share * epsilon
        scale_global = laplace_scale(epsilon_global, 2.0, max_changed=2)
        noisy_sum, noisy_count = laplace(true_global, scale_global, rng)
        self.mu_ = float(np.clip(centre + half_range * noisy_sum / max(noisy_count, 1.0),
                                 low, high))

        # 2. item effects, in the sorted order of the item list
        epsilon_items = epsilon - epsilon_global
        changed = 2 if unit == "rating" else 2 * n_items
        scale_items = laplace_scale(epsilon_items, 2.0, max_changed=changed)
        noisy = laplace(true_items, scale_items, rng)
        noisy_sums, noisy_counts = half_range * noisy[:n_items], noisy[n_items:]
        if beta is None:
            beta = 10.0 * scale_items   # ten noise scales: a public function of ε alone
        self._item_effects = stabilised_effects(noisy_sums, noisy_counts, self.mu_ - centre,
                                                beta, high - low)
        self.item_effects_ = pd.Series(self._item_effects.copy(), index=space.items.labels(),
                                       name="item_effect")

        # 3. user effects, from each user's own ratings (not released)
        self._user_effects = own_effects(space.matrix, self.mu_ + self._item_effects, lam)
        self._space = space
        self._accountant = self._ledger(space, unit, seeded,
                                        {"global effect": (scale_global, 2),
                                         "item effects": (scale_items, changed)})
        if self.verbose:
            print(f"DPBaseline: released μ and {n_items} item effects, ε = "
                  f"{epsilon:g} per {UNITS[unit]}")
        return self

    def _ledger(self, space: RatingSpace, unit: str, seeded: bool,
                releases: dict) -> PrivacyAccountant:
        """The accountant: one entry per release (`component -> (scale, max_changed)`),
        each charged once to every user of the user list; every output covered by both;
        the lists' conditions and boundary users (`RatingSpace.declare_scope`)."""
        accountant = PrivacyAccountant(space.users.ids, model=f"DPBaseline(unit={unit!r})",
                                       seeded=seeded)
        entries = [accountant.register(LedgerEntry(
            component, "laplace (lattice)", laplace_epsilon(scale, 2.0, max_changed=m), 0.0,
            UNITS[unit], Status.HOLDS, "user", NOTES[unit]))
            for component, (scale, m) in releases.items()]
        accountant.release_once(entries, OUTPUTS, NOTES["answers"])
        space.declare_scope(accountant, UNITS[unit])
        return accountant

    def privacy_report(self) -> PrivacyAccountant:
        """The fitted model's privacy accountant."""
        self._check_fitted()
        return self._accountant

    @property
    def rating_space(self) -> RatingSpace:
        """The fitted lists and the ratings in their sorted order (the private data)."""
        self._check_fitted()
        return self._space

    def residuals(self) -> np.ndarray:
        r"""Each rating's $r_{ui} - \mu - b_i - b_u$, in the order of
        `rating_space.matrix.data`: each user's own data, used in their own answers and
        never released."""
        space = self.rating_space
        matrix = space.matrix
        return (matrix.data - self.mu_ - self._item_effects[matrix.indices]
                - self._user_effects[space.rows])

    def _check_fitted(self) -> None:
        if not hasattr(self, "_accountant"):
            raise AttributeError(f"this {type(self).__name__} is not fitted yet: call fit "
                                 "first")

    def default_prediction(self) -> float:
        """The released global mean $\\mu$ (Surprise's default reads the raw data's)."""
        if not hasattr(self, "mu_"):
            raise AttributeError("this DPBaseline is not fitted yet: call fit first")
        return self.mu_

    # the answers, by raw ids resolved against the lists (shared with DPItemKNN, LocalKNN)
    def estimate(self, u, i):
        """Estimate one rating from inner ids (Surprise's hook; as `test` does)."""
        return answer_one(self, u, i)

    def predict(self, uid, iid, r_ui=None, clip=True, verbose=False):
        """Surprise's `predict` by raw ids: listed users and items without ratings are
        known (their statistics are the release's), the rest unknown."""
        return predict_one(self, uid, iid, r_ui, clip, verbose)

    def test(self, testset, verbose: bool = False):
        """Surprise's `test`, all pairs at once (the same numbers as `predict`)."""
        return test_all(self, testset, verbose)

    def _answers(self, users: np.ndarray, items: np.ndarray) -> tuple[np.ndarray, list]:
        """Estimates (not clipped) and `details` for positions in the lists (`-1`: unknown)."""
        known_user, known_item = users >= 0, items >= 0
        est = (self.mu_ + np.where(known_user, self._user_effects[np.maximum(users, 0)], 0.0)
               + np.where(known_item, self._item_effects[np.maximum(items, 0)], 0.0))
        return est, surprise_details(known_user, known_item)


# ------------------------------------------------------------------ the lists
def _id_key(raw) -> tuple:
    return (type(raw).__name__, raw)


def sorted_ids(ids: Iterable, name: str = "ids") -> list:
    """Raw ids in the order dprec's private models use: by `(type name, value)`, a
    total order that depends on the set of ids alone (ints and strings may mix).

    Raises
    ------
    TypeError
        If ids of one type cannot be compared (e.g. tuples of mixed types).
    """
    try:
        return sorted(ids, key=_id_key)
    except TypeError as error:
        raise TypeError(f"{name}: raw ids of one type must be comparable to be sorted "
                        f"({error})") from None


@dataclass(frozen=True)
class Catalogue:
    """The users or items of a model: raw ids in sorted order, and who chose them.

    Attributes
    ----------
    ids : tuple
        The raw ids, sorted (`sorted_ids`).
    index : dict
        `raw id -> position` in `ids`.
    given : bool
        A public catalogue given to the model (`users=` / `items=`), not read
        from the data.
    """

    ids: tuple
    index: dict
    given: bool

    @classmethod
    def build(cls, given, data_ids: list, name: str) -> Catalogue:
        """The catalogue `given` (validated; every id of `data_ids` must be in it), or
        the sorted `data_ids` when `given` is None."""
        if given is None:
            ids = sorted_ids(data_ids, name)
            return cls(tuple(ids), {raw: n for n, raw in enumerate(ids)}, False)
        if isinstance(given, (np.ndarray, pd.Index, pd.Series)):
            given = given.tolist()
        if isinstance(given, (str, bytes, Mapping)) or not isinstance(given, Iterable):
            raise TypeError(f"{name} must be a sequence of raw ids (a public catalogue), got "
                            f"{type(given).__name__}")
        ids = list(given)
        if not ids:
            raise ValueError(f"{name} must not be empty")
        try:
            distinct = set(ids)
        except TypeError:
            raise TypeError(f"{name}: raw ids must be hashable") from None
        if len(distinct) != len(ids):
            seen: set = set()
            repeated = next(raw for raw in ids if raw in seen or seen.add(raw))
            raise ValueError(f"{name} holds a repeated id, {repeated!r}")
        outside = [raw for raw in data_ids if raw not in distinct]
        if outside:
            raise ValueError(f"{name}: the ratings hold {len(outside)} id(s) outside the "
                             f"catalogue, e.g. {outside[0]!r}; a catalogue lists every id "
                             "that can be rated")
        ids = sorted_ids(ids, name)
        return cls(tuple(ids), {raw: n for n, raw in enumerate(ids)}, True)

    def __len__(self) -> int:
        return len(self.ids)

    def labels(self) -> pd.Index:
        """The ids as a pandas Index (tuples stay ids, not levels)."""
        return pd.Index(list(self.ids), tupleize_cols=False)

    def positions(self, raws) -> np.ndarray:
        """The position of each raw id, `-1` where it is not listed."""
        get = self.index.get
        return np.fromiter((get(raw, -1) for raw in raws), np.int64, len(raws))


@dataclass(frozen=True)
class RatingSpace:
    """A trainset's ratings in the sorted order of the user and item lists.

    Attributes
    ----------
    users, items : Catalogue
    matrix : scipy.sparse.csr_matrix
        Listed users × listed items (sorted orders): every release is computed
        from it and its noise drawn in its order, so renumbering the data
        (Surprise's inner ids) changes nothing.
    """

    users: Catalogue
    items: Catalogue
    matrix: sp.csr_matrix

    @classmethod
    def build(cls, trainset, users=None, items=None) -> RatingSpace:
        """The lists (`users=` / `items=`, or the trainset's) and the ratings in their order.

        Raises
        ------
        ValueError, TypeError
            For an invalid catalogue, or ratings outside it (naming `users` or `items`).
        """
        inner_users, inner_items = raw_ids(trainset), raw_ids(trainset, users=False)
        user_list = Catalogue.build(users, inner_users, "users")
        item_list = Catalogue.build(items, inner_items, "items")
        ratings = RatingArrays.from_trainset(trainset)
        rows = user_list.positions(inner_users)[
            np.repeat(np.arange(ratings.n_users), np.diff(ratings.matrix.indptr))]
        columns = item_list.positions(inner_items)[ratings.matrix.indices]
        matrix = ratings_matrix(rows, columns, ratings.matrix.data,
                                (len(user_list), len(item_list)))
        return cls(user_list, item_list, matrix)

    @property
    def rows(self) -> np.ndarray:
        """The user (row) of every stored rating, in `matrix.data` order."""
        return np.repeat(np.arange(self.matrix.shape[0]), np.diff(self.matrix.indptr))

    def positions(self, uids, iids) -> tuple[np.ndarray, np.ndarray]:
        """Positions of raw user and item ids in the lists (`-1`: not listed)."""
        return self.users.positions(uids), self.items.positions(iids)

    def declare_scope(self, accountant: PrivacyAccountant, unit: Unit) -> None:
        """State the lists' conditions in the report (`SCOPE`) and
        mark the boundary users (those whose unit, removed, would change a list read from
        the data) out of `unit`'s scope."""
        if self.items.given:
            accountant.add_condition(SCOPE["items given"])
        else:
            counts = np.bincount(self.matrix.indices)     # read at rated items only
            sole = np.zeros(self.matrix.shape[0], dtype=bool)
            sole[self.rows[counts[self.matrix.indices] == 1]] = True
            accountant.add_condition(SCOPE["items from data"])
            accountant.out_of_scope(unit, sole, SCOPE["sole rater"])
        if self.users.given:
            accountant.add_condition(SCOPE["users given"])
        elif unit is Unit.USER:
            accountant.add_condition(SCOPE["users from data"])
            accountant.out_of_scope(unit, np.ones(self.matrix.shape[0], dtype=bool),
                                    SCOPE["any user"])
        else:
            accountant.add_condition(SCOPE["users from data"])
            accountant.out_of_scope(unit, np.diff(self.matrix.indptr) == 1,
                                    SCOPE["single rating"])


#: What the report says of the lists: the conditions (`... given`, `... from data`) and
#: why users are outside the guarantee (`sole rater`, `any user`, `single rating`).
SCOPE = {
    "items given": "the item catalogue given as items= is public (chosen without looking "
                   "at the ratings)",
    "users given": "the user catalogue given as users= is public (chosen without looking "
                   "at the ratings)",
    "items from data": "the item list is read from the data (the items someone rated): the "
                       "guarantee is for neighbouring datasets with the same items; give "
                       "items= (a public catalogue) to lift this",
    "users from data": "the user list is read from the data (the users with a rating): the "
                       "guarantee is for neighbouring datasets with the same users; give "
                       "users= (a public catalogue) to lift this",
    "sole rater": "the sole rater of an item, which exists only through them (the item list "
                  "is read from the data)",
    "any user": "removing a user removes them from the user list, read from the data",
    "single rating": "a single rating: removing it removes the user from the user list, "
                     "read from the data",
}


# ------------------------------------------------------------------ the answers
def surprise_details(known_user: np.ndarray, known_item: np.ndarray) -> list[dict]:
    r"""Surprise's `details` of each answer: impossible where neither is known (the
    estimate there is the released $\mu$ alone, Surprise's default prediction)."""
    lost = ~(known_user | known_item)
    return [{"was_impossible": True, "reason": UNKNOWN_BOTH} if gone
            else {"was_impossible": False} for gone in lost.tolist()]


def answer_one(model, u, i):
    """`model.estimate(u, i)` for inner ids (or Surprise's `"UKN__"` strings):
    `(est, details)`, or `PredictionImpossible`."""
    trainset = model.trainset
    uid = [trainset.to_raw_uid(u)] if trainset.knows_user(u) else [_NOT_LISTED]
    iid = [trainset.to_raw_iid(i)] if trainset.knows_item(i) else [_NOT_LISTED]
    est, details = model._answers(*model._space.positions(uid, iid))
    if details[0]["was_impossible"]:
        raise PredictionImpossible(details[0]["reason"])
    return float(est[0]), details[0]


def predict_one(model, uid, iid, r_ui, clip: bool, verbose: bool):
    """Surprise's `predict` for a model of the lists (raw ids, not inner ids)."""
    model._check_fitted()
    est, details = model._answers(*model._space.positions([uid], [iid]))
    est = float(est[0])
    if clip:
        low, high = model.trainset.rating_scale
        est = max(low, min(high, est))
    prediction = Prediction(uid, iid, r_ui, est, details[0])
    if verbose:
        print(prediction)
    return prediction


def test_all(model, testset, verbose: bool):
    """Surprise's `test` for a model of the lists, every pair at once."""
    model._check_fitted()
    testset = list(testset)                 # any iterable of (uid, iid, r_ui)
    if not testset:
        return []
    with cyclic_gc_paused():          # zip(*testset) makes one iterator object per rating
        uids, iids, r_uis = zip(*testset)
    est, details = model._answers(*model._space.positions(uids, iids))
    return predictions(model.trainset, uids, iids, r_uis, est, details, verbose)


#: a raw id in no list (what an unknown inner id stands for)
_NOT_LISTED = object()


# ------------------------------------------------------------------ the releases
def effect_sums(matrix, unit: str, rating_scale: tuple[float, float]) -> tuple[np.ndarray, ...]:
    r"""The true vectors the two releases add noise to, each of ℓ1 sensitivity 2 per unit.

    `(global, items)`: `global` $= (\sum w (r - c) / B, \sum w)$ and `items` the
    per-item $\sum_u w_u (r_{ui} - c) / B$ followed by the per-item $\sum_u w_u$,
    for the users × items `matrix` (users without ratings add nothing), ratings
    clipped to the public `rating_scale` (centre $c$, half-range $B$), $w = 1$
    per rating (`unit="rating"`) or $1/|I_u|$ (`unit="user"`).
    """
    low, high = rating_scale
    centre, half_range = (low + high) / 2.0, (high - low) / 2.0
    counts = np.diff(matrix.indptr)
    users = np.repeat(np.arange(matrix.shape[0]), counts)
    centred = (np.clip(matrix.data, low, high) - centre) / half_range
    weights = np.ones(len(users)) if unit == "rating" else 1.0 / counts[users]
    n_items = matrix.shape[1]
    return (np.array([np.dot(weights, centred), weights.sum()]),
            np.concatenate([np.bincount(matrix.indices, weights * centred, n_items),
                            np.bincount(matrix.indices, weights, n_items)]))


def stabilised_effects(sums: np.ndarray, counts: np.ndarray, offset: float, beta: float,
                       bound: float) -> np.ndarray:
    """Item effects `(S_i − N_i · offset) / (max(N_i, 0) + β)` from noisy sums and counts
    (0 where the denominator is 0), clipped to `[−bound, bound]`: post-processing."""
    denominator = np.maximum(counts, 0.0) + beta
    effects = safe_divide(sums - counts * offset, denominator)     # denominator >= 0
    return np.clip(effects, -bound, bound)


def own_effects(matrix, base: np.ndarray, shrinkage: float) -> np.ndarray:
    r"""Each user's $b_u = \sum_i (r_{ui} - \text{base}_i) / (|I_u| + \lambda)$ from their
    own ratings (the rows of `matrix`; `base` per item, e.g. $\mu + b_i$); 0 for a user
    without ratings (also when $\lambda = 0$)."""
    counts = np.diff(matrix.indptr)
    users = np.repeat(np.arange(matrix.shape[0]), counts)
    residuals = matrix.data - base[matrix.indices]
    return safe_divide(np.bincount(users, residuals, matrix.shape[0]), counts + shrinkage)
