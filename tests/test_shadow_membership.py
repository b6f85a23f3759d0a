"""Tests of dprec.attacks.shadow_membership (Zhang et al.'s attack with a shadow model): it
finds a model whose recommendations follow its members' histories, finds nothing in a model
that ignores its data (and then refutes nothing), is reproducible, and checks its arguments."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from surprise import AlgoBase, PredictionImpossible

from dprec.attacks import shadow_membership_attack
from dprec.attacks.shadow_membership import _Logistic, _Perceptron
from dprec.datasets import synthetic

DATA = synthetic(300, 200, 8000, random_state=0, as_arrays=True)


class CoRated(AlgoBase):
    """Memorises its training data: a known user's own training rating where it has one,
    elsewhere 1 + 4 × (how often the item was co-rated with the user's training items,
    over the user's largest such count); an unknown user gets Surprise's default."""

    def fit(self, trainset):
        AlgoBase.fit(self, trainset)
        users, items, ratings = zip(*trainset.all_ratings())
        rated = np.zeros((trainset.n_users, trainset.n_items))
        rated[users, items] = 1.0
        counts = rated @ (rated.T @ rated)
        self.scores = 1.0 + 4.0 * counts / np.maximum(counts.max(axis=1, keepdims=True), 1.0)
        self.known = {(u, i): r for u, i, r in zip(users, items, ratings)}
        return self

    def estimate(self, u, i):
        if not (self.trainset.knows_user(u) and self.trainset.knows_item(i)):
            raise PredictionImpossible("unknown user or item")
        return self.known.get((u, i), self.scores[u, i])


class Constant(AlgoBase):
    """Ignores its data: 3 for every pair."""

    def estimate(self, u, i):
        return 3.0


class FixedRanking(AlgoBase):
    """Ignores its data: a score per raw item id, fixed by a hash (the same ranking for
    every user, member or not)."""

    def estimate(self, u, i):
        raw = self.trainset.to_raw_iid(i) if isinstance(i, int) else str(i)[len("UKN__"):]
        return 1.0 + 4.0 * (zlib.crc32(str(raw).encode()) % 1000) / 1000


@pytest.mark.parametrize("classifier", ["logistic", "mlp"])
def test_a_model_that_memorises_its_members_is_found(classifier):
    result = shadow_membership_attack(CoRated, DATA, 100, n_recommended=10,
                                      classifier=classifier, random_state=1)
    assert result.roc.auc > 0.8
    assert result.audit.epsilon > 1.0                 # a real lower bound, not just a ROC
    assert (result.unit, result.view) == ("user", "own")
    frame = result.scores
    assert list(frame.columns) == ["uid", "included", "n_ratings", "probability", "score"]
    assert np.allclose(frame["probability"], 1 / (1 + np.exp(-frame["score"])))


@pytest.mark.parametrize("classifier", ["logistic", "mlp"])
@pytest.mark.parametrize("algo", [Constant, FixedRanking])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_model_that_ignores_its_data_is_not_found(algo, seed, classifier):
    result = shadow_membership_attack(algo, DATA, 150, classifier=classifier,
                                      random_state=seed)
    assert abs(result.roc.auc - 0.5) < 0.15           # 3 standard errors at 150 canaries
    assert result.audit.epsilon < 0.5                 # no false refutation (1 of 6: 0.21)


def test_the_same_seed_gives_the_same_scores():
    first = shadow_membership_attack(CoRated, DATA, 60, random_state=7)
    again = shadow_membership_attack(CoRated, DATA, 60, random_state=7)
    assert first.scores.equals(again.scores)
    other = shadow_membership_attack(CoRated, DATA, 60, random_state=8)
    assert not first.scores["uid"].equals(other.scores["uid"])


@pytest.mark.parametrize("kwargs, name", [
    ({"n_canaries": 1}, "n_canaries"), ({"n_canaries": 299}, "n_canaries"),
    ({"shadow_share": 0.0}, "shadow_share"), ({"shadow_share": 1.0}, "shadow_share"),
    ({"shadow_share": 1.5}, "shadow_share"), ({"shadow_share": 0.01}, "shadow_share"),
    ({"n_recommended": 0}, "n_recommended"), ({"n_factors": 0}, "n_factors"),
    ({"n_factors": 200}, "n_factors"), ({"n_candidates": 0}, "n_candidates"),
    ({"l2": -1.0}, "l2"), ({"confidence": 1.0}, "confidence"),
    ({"classifier": "svm"}, "classifier"), ({"hidden_units": 0}, "hidden_units"),
])
def test_bad_arguments_name_the_parameter(kwargs, name):
    with pytest.raises(ValueError, match=name):
        shadow_membership_attack(Constant, DATA, **{"random_state": 0, **kwargs})


@pytest.mark.parametrize("l2", [0.0, 0.7, 5.0])
def test_the_perceptrons_gradient_matches_its_loss(l2):
    """The hand-written gradient against finite differences, at the start and at random
    weights; the penalty is on the two weight matrices only (not the intercepts)."""
    from scipy.optimize import check_grad

    rng = np.random.default_rng(3)
    x, y = rng.normal(size=(50, 4)), rng.random(50) < 0.4
    net = _Perceptron(x, y, l2=l2, hidden=5, rng=np.random.default_rng(0))
    for w in (net.start, rng.normal(size=net.start.size)):
        error = check_grad(lambda v: net.loss(v)[0], lambda v: net.loss(v)[1], w)
        assert error < 1e-5 * max(1.0, np.linalg.norm(net.loss(w)[1]))
    w = rng.normal(size=net.start.size)
    bare = _Perceptron(x, y, l2=0.0, hidden=5, rng=np.random.default_rng(0))
    w1, b1, w2, b2 = net._unpack(w)
    penalty = 0.5 * l2 * (np.sum(w1 ** 2) + np.sum(w2 ** 2))
    assert np.isclose(net.loss(w)[0] - bare.loss(w)[0], penalty)


def test_the_perceptron_learns_what_no_line_separates():
    """XOR of two features' signs: a logistic regression stays at chance, the perceptron
    separates it."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(400, 2))
    y = (x[:, 0] * x[:, 1] > 0)
    line = _Logistic(x, y, l2=1.0).log_odds(x) > 0
    curve = _Perceptron(x, y, l2=0.1, hidden=8, rng=np.random.default_rng(1)).log_odds(x) > 0
    assert abs(np.mean(line == y) - 0.5) < 0.1
    assert np.mean(curve == y) > 0.95
