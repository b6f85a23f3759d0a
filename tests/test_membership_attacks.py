"""Tests of dprec.attacks.membership: the ROC summary by hand, attacks that find a model that
memorises, canaries drawn and left out as documented, and DP claims not refuted in the view
they cover."""

from __future__ import annotations

import numpy as np
import pytest
from surprise import AlgoBase, KNNBasic, PredictionImpossible

from dprec import DPBaseline
from dprec.attacks.membership import (
    membership_audit,
    membership_roc,
    rating_membership_attack,
    user_membership_attack,
)
from dprec.datasets import synthetic

DATA = synthetic(300, 200, 8000, random_state=0, as_arrays=True)


class Memoriser(AlgoBase):
    """Answers its training rating where it has one, the global mean elsewhere."""

    def fit(self, trainset):
        AlgoBase.fit(self, trainset)
        self.known = {(u, i): r for u, i, r in trainset.all_ratings()}
        return self

    def estimate(self, u, i):
        if (u, i) not in self.known:
            raise PredictionImpossible("not a training rating")
        return self.known[(u, i)]


def test_roc_by_hand():
    perfect = membership_roc([3.0, 4.0], [1.0, 2.0])
    assert perfect.auc == 1.0 and perfect.tpr_at_1pct == 1.0
    assert membership_roc([1.0, 2.0], [3.0, 4.0]).auc == 0.0
    assert membership_roc([1.0, 1.0], [1.0, 1.0]).auc == 0.5
    # 1000 non-members 0..999: at FPR 1 % the threshold is the 11th highest, 989
    others = np.arange(1000.0)
    members = np.array([999.5, 990.0, 989.5, 989.0, 5.0])
    roc = membership_roc(members, others)
    assert roc.tpr_at_1pct == pytest.approx(3 / 5)           # 999.5, 990, 989.5 > 989
    assert roc.tpr_at_01pct == pytest.approx(1 / 5)          # at 0.1 %: only 999.5 > 998
    assert roc.auc == pytest.approx((1000 + 990.5 + 990 + 989.5 + 5.5) / 5000)
    assert (roc.n_members, roc.n_non_members) == (5, 1000)


def test_a_model_that_memorises_is_found_at_both_levels():
    rating = rating_membership_attack(Memoriser, DATA, 400, random_state=1)
    assert rating.roc.auc > 0.95 and rating.audit.epsilon > 1.0
    user = user_membership_attack(lambda: KNNBasic(verbose=False), DATA, 100,
                                  random_state=1)
    assert user.roc.auc == 1.0 and user.audit.epsilon > 1.0  # Surprise: unknown is said
    assert set(user.summary()) == {"unit", "view", "mia_auc", "mia_tpr_1pct",
                                   "mia_tpr_01pct", "empirical_epsilon", "canaries"}


def test_canaries_are_left_out_as_drawn():
    result = user_membership_attack(lambda: KNNBasic(verbose=False), DATA, 60, random_state=3)
    frame = result.scores
    assert 15 < frame["included"].sum() < 45                  # about half, Bernoulli(1/2)
    # Surprise's KNNBasic says it knows nothing of exactly the users left out
    assert ((frame["impossible_share"] == 1.0) == ~frame["included"]).all()
    again = user_membership_attack(lambda: KNNBasic(verbose=False), DATA, 60, random_state=3)
    assert frame.equals(again.scores)


def test_one_fit_gives_both_units_and_views_as_the_single_attacks():
    both = membership_audit(lambda: KNNBasic(verbose=False), DATA, 50, 200, random_state=4)
    assert set(both) == {(u, v) for u in ("user", "rating") for v in ("own", "others")}
    assert both["user", "own"].roc.auc == 1.0
    assert not set(both["rating", "own"].scores.uid) & set(both["user", "own"].scores.uid)
    alone = user_membership_attack(lambda: KNNBasic(verbose=False), DATA, 50, random_state=4)
    # the same canary users first (the scores differ: the rating canaries left out differ)
    assert alone.scores[["uid", "included"]].equals(both["user", "own"].scores[["uid",
                                                                               "included"]])


def test_a_dp_claim_is_not_refuted_in_the_view_it_covers():
    """DPBaseline at ε = 1 per user (joint DP: the others' answers): the bound stays below."""
    result = user_membership_attack(lambda: DPBaseline(epsilon=1.0, random_state=0), DATA,
                                    150, view="others", random_state=0)
    assert result.view == "others" and result.audit.epsilon <= 1.0
    assert 0.3 < result.roc.auc < 0.7
    ratings = rating_membership_attack(lambda: DPBaseline(epsilon=1.0, random_state=0), DATA,
                                       400, view="others", random_state=0)
    assert ratings.audit.epsilon <= 1.0


@pytest.mark.parametrize(("call", "error", "needle"), [
    (lambda: membership_roc([], [1.0]), ValueError, "non-empty"),
    (lambda: membership_roc([np.inf], [1.0]), ValueError, "finite"),
    (lambda: user_membership_attack(Memoriser, DATA, 10, view="mine"), ValueError,
     "view must be 'own' or 'others'"),
    (lambda: user_membership_attack(Memoriser, DATA, 300), ValueError,
     "below the number of users"),
    (lambda: rating_membership_attack(Memoriser, DATA, 10**6), ValueError,
     "n_canaries=1000000 must be 2 or more and at most"),
    (lambda: rating_membership_attack(Memoriser, DATA, 10, n_observers=0), ValueError,
     "n_observers"),
    (lambda: rating_membership_attack(Memoriser, DATA, 10, confidence=1.5), ValueError,
     "confidence"),
])
def test_bad_arguments_name_the_parameter(call, error, needle):
    with pytest.raises(error, match=needle):
        call()
