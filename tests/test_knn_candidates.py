"""Issue 51, finding 1: a candidate who exists only through one rating.

PrivateKNN's candidates are the trainset's users, read from the data.  A user with a
single rating is a candidate on one dataset and, that rating removed, on none: the event
"they are in the target's list" is impossible on the neighbour, which no finite ε bounds.
The report must put them outside the guarantee (every unit whose change removes them),
with the rule in words, and keep everyone else inside; and the Gaussian JL's σ, which
follows the longest column of the projection among the rated items, must not hide that
the sole rater of that item sets every user's noise.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from surprise import Dataset, Reader

from dprec import PrivateKNN
from dprec.accountant.ledger import Unit
from dprec.audit import audit_model, with_rating
from dprec.similarity import GaussianJL
from dprec.similarity.sjlt import gaussian_jl_matrix
from dprec.utils._rng import stable_keys

#: the sim_options of every similarity PrivateKNN's user neighbourhood takes (sketches:
#: τ = 1 for MinHash, the lonely user's one item)
SIMILARITIES = {
    "msd": {},
    "cosine": {"name": "cosine"},
    "sjlt": {"name": "sjlt", "width": 16, "epsilon": 1.0},
    "gaussian_jl": {"name": "gaussian_jl", "width": 16, "epsilon": 1.0, "delta": 1e-5},
    "rr_minhash": {"name": "rr_minhash", "width": 16, "B": 4, "epsilon": 4.0, "tau": 1},
    "noisy_minhash": {"name": "noisy_minhash", "width": 16, "B": 4, "epsilon": 4.0, "tau": 1},
}


def lonely_data() -> Dataset:
    """``target`` rates i0..i4 at 3; ``lonely`` rates i0 at 3 only (msd 1 with target);
    ``pair`` rates i0 at 3 and i9 at 1 (two ratings: one removal leaves them a user);
    four others rate i1..i9 at 1 or 5 (msd 0.2 with target)."""
    rows = [("target", f"i{i}", 3.0) for i in range(5)]
    rows += [("lonely", "i0", 3.0), ("pair", "i0", 3.0), ("pair", "i9", 1.0)]
    rows += [(f"o{o}", f"i{i}", 5.0 if (o + i) % 2 else 1.0) for o in range(4)
             for i in range(1, 10)]
    return Dataset.load_from_df(pd.DataFrame(rows), Reader(rating_scale=(1, 5)))


def model(sim_options=None, seed=None, epsilon: float = 1.0) -> PrivateKNN:
    return PrivateKNN(k=1, selector="pncf_corrected", epsilon=epsilon, neighbourhood="user",
                      sim_options=dict(sim_options or {}), verbose=False,
                      random_state=None if seed is None else np.random.default_rng(seed))


def in_targets_list(user: str):
    """The query of the audits: whether ``user`` is in target's list, as raw ids."""
    def query(fitted) -> bool:
        trainset = fitted.trainset
        neighbours, _ = fitted.kneighbors(np.array([trainset.to_inner_uid("target")]))
        return user in {trainset.to_raw_uid(int(v)) for v in neighbours[0] if v >= 0}
    return query


@pytest.mark.parametrize("name", sorted(SIMILARITIES))
def test_a_single_rating_candidate_is_outside_every_unit_that_can_remove_them(name):
    """Regression: the report said *holds* and listed nobody outside."""
    fitted = model(SIMILARITIES[name]).fit(lonely_data().build_full_trainset())
    in_targets_list("lonely")(fitted)                        # one list, charged
    report = fitted.privacy_report()
    assert Unit.RATING in report.units()                     # the selector's unit
    for unit in report.units():
        assert "lonely" in report.out_of_scope_users(unit), unit
        assert report.per_user(unit).epsilon["lonely"] == math.inf
    # one rating removed, pair still exists: inside the selector's guarantee
    assert report.out_of_scope_users(Unit.RATING) == ["lonely"]
    rule = report.scope_rule(Unit.RATING)                   # the rule, in words
    assert rule is not None and "a single rating: removing it removes the user" in rule
    eps, _ = report.total(Unit.RATING)
    assert math.isfinite(eps) and eps > 0                    # for everyone else


def test_without_a_single_rating_nobody_is_outside():
    trainset = with_rating(lonely_data(), "lonely", "i0", None).build_full_trainset()
    fitted = model().fit(trainset)
    in_targets_list("pair")(fitted)
    report = fitted.privacy_report()
    assert report.out_of_scope_users(Unit.RATING) == []
    assert report.scope_rule(Unit.RATING) is None
    assert report.total(Unit.RATING) == (1.0, 0.0)


@pytest.mark.parametrize("epsilon", [1.0, 0.1])
def test_the_audit_of_the_lonely_candidate_is_bounded_or_declared(epsilon):
    """Fresh noise, D against D′ without one rating: the event "user in target's list"
    either stays within the claimed ε or the report puts the user outside.  The single-rating
    candidate refutes any ε (chosen about 1 time in 4 on D, never on D′): outside; the
    two-rating candidate, one rating removed, stays within the claim: inside."""
    data = lonely_data()
    a = data.build_full_trainset()
    report = model(epsilon=epsilon).fit(a).privacy_report()
    outside = report.out_of_scope_users(Unit.RATING)
    for user, refuted in (("lonely", True), ("pair", False)):
        b = with_rating(data, user, "i0", None).build_full_trainset()
        bound = audit_model(lambda seed, e=epsilon: model(seed=seed, epsilon=e), a, b,
                            in_targets_list(user), [lambda x: np.asarray(x)], n_runs=200,
                            random_state=1)
        assert bound.violates(epsilon) is refuted, (user, bound)
        assert not bound.violates(epsilon) or user in outside, (user, bound, outside)
        assert (user in outside) is refuted


# ------------------------------------------------ Gaussian JL: the longest column's rater
def _sole_rater_of_the_longest_column(width: int = 8, hash_seed: int = 3):
    """Four items; user 2 alone rates the item whose column of P is the longest."""
    keys = stable_keys(["a", "b", "c", "d"])
    norms = np.sum(gaussian_jl_matrix(width, keys, hash_seed) ** 2, axis=0)
    longest, second = np.argsort(norms)[::-1][:2]
    X = np.zeros((3, 4))
    X[0, second] = X[1, second] = 4.0
    X[:2, [j for j in range(4) if j not in (longest, second)]] = 2.0
    X[2, longest] = 5.0
    X[2, second] = 1.0
    return X, keys, longest


def test_the_gaussian_jl_puts_the_sole_rater_of_the_longest_column_outside():
    X, keys, longest = _sole_rater_of_the_longest_column()
    backend = GaussianJL(8, epsilon=1.0, rating_bound=5.0, hash_seed=3)
    backend.release(X, keys)
    sigma = backend.sigma_
    ((outside, reason),) = backend.release_.outside
    np.testing.assert_array_equal(outside, [False, False, True])
    assert "longest" in reason and "σ" in reason
    assert any("same items" in c for c in backend.release_.conditions)
    kept = [j for j in range(4) if j != longest]               # user 2's rating removed
    backend.release(X[:, kept], keys[kept])
    assert backend.sigma_ < sigma                               # every user's noise moved
    assert not backend.release_.outside[0][0].any()             # two raters: nobody


def test_longest_sole_rater_marks_nobody_where_a_removal_keeps_w2():
    from dprec.similarity.sjlt import longest_sole_rater

    X, keys, longest = _sole_rater_of_the_longest_column()
    P = gaussian_jl_matrix(8, keys, 3)
    assert longest_sole_rater(X, P).tolist() == [False, False, True]
    X[1, longest] = 3.0                                         # a second rater
    assert not longest_sole_rater(X, P).any()
    tied = np.hstack([P, P[:, [longest]]])                      # two longest columns
    assert not longest_sole_rater(np.hstack([X, np.zeros((3, 1))]), tied).any()
    assert not longest_sole_rater(np.zeros((2, 0)), np.zeros((8, 0))).any()


def test_privateknn_with_the_gaussian_jl_reports_the_longest_columns_rater():
    X, keys, longest = _sole_rater_of_the_longest_column()
    names = ["a", "b", "c", "d"]
    rows = [(f"u{u}", names[j], float(X[u, j])) for u in range(3) for j in range(4) if X[u, j]]
    trainset = Dataset.load_from_df(pd.DataFrame(rows),
                                    Reader(rating_scale=(1, 5))).build_full_trainset()
    fitted = model({"name": "gaussian_jl", "width": 8, "epsilon": 1.0, "hash_seed": 3}
                   ).fit(trainset)
    report = fitted.privacy_report()
    assert np.all(fitted.sketch_release_.outside[0][0] ==
                  [trainset.to_raw_uid(u) == "u2" for u in range(3)])
    assert "u2" in report.out_of_scope_users(Unit.RATING)
    assert "longest" in report.scope_rule(Unit.RATING)
