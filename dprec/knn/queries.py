"""The kNN API of a fitted `PrivateKNN` (as scikit-learn's `KNeighborsMixin` is its
estimators'): the neighbours it chooses, its estimates for arrays of inner ids under
one rule or several, top-N lists, and what all of them have cost.

Every method reads the fitted model through the hooks `PrivateKNN.fit` sets up
(`dprec.knn.model`): its neighbourhood's engine (`_engine`), the users' kept
neighbour sets (`_sets`; `_neighbour_sets(k)` for another size), the rules
(`_rules`, `_rule`, `_rule_`), the book (`_book`), the storage and ratings
(`_storage`, `_ratings`) and `_estimate_batch`, `_switch`, `_check_fitted`.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence

import numpy as np

from ..evaluation.topn import recommend_batch
from ..selectors import TopK
from ..utils._arrays import stable_descending_order
from ..utils._validation import check_int, check_real
from .parameters import check_ids
from .rules import Rule, rule_keys

#: The shrinkage $\lambda$ a model without one (`neighbour_shrinkage=0`) ranks by: an
#: estimate few neighbours support moves towards the rule's offset, so a list is not
#: made of items one or two users rated 5.  Chosen on MovieLens 100k's `u1.base` alone,
#: the best on average over ten configurations
#: ([Top-N recommendation](../topn.md#the-default-ranking)).
RANKING_SHRINKAGE = 5.0


class KNNQueries:
    """Mixin: the kNN API of `PrivateKNN` (neighbours, estimates for arrays, top-N and
    the selections' summary; the privacy report is
    [`PrivateModel`][dprec.accountant.private_model.PrivateModel]'s)."""

    def neighbours(self, users=None, items=None) -> np.ndarray:
        """Deprecated: the neighbours' ids of `kneighbors` (`kneighbors(...)[0]`)."""
        warnings.warn("PrivateKNN.neighbours is deprecated; use kneighbors(users, items)[0]",
                      DeprecationWarning, stacklevel=2)
        return self.kneighbors(users, items)[0]

    def kneighbors(self, users=None, items=None) -> tuple[np.ndarray, np.ndarray]:
        """The neighbours the model uses and their weights, through the selector.

        The neighbours are inner ids (`-1` for empty slots): user ids, or
        item ids item-based; the weights are what the prediction rule weighs
        them by (the similarities, or the selector's weights), 0 for empty
        slots.  The same draws as the predictions, charged to the accountant
        as they are.

        A selector's entries cover the ids only: the weights are the report's output
        `"neighbour weights"`, covered where a mechanism made them (a sketch release,
        PNCF's Laplace noise), else declared not covered (the exact similarities, for
        every other selector).  The ids are inner ids, which follow the order of the
        data (one removal renumbers them; the report's output `"neighbours' inner ids"`
        says so): the selector's entries cover the lists as raw ids.  Publish
        `trainset.to_raw_uid` of each id of `[0]`, and nothing else, to stay within
        the selector's claim.

        Parameters
        ----------
        users : array of inner user ids
        items : array of inner item ids
            With `neighbourhood="item"` both, one item per user (the
            neighbours of `u` for item `i` are chosen among the raters of
            `i`); with `neighbourhood="user"` only `users` (`items`
            item-based): one neighbour set each.

        Returns
        -------
        neighbours : ndarray of int64, shape (n_queries, k)
        weights : ndarray of float64, shape (n_queries, k)
        """
        self._check_fitted()
        user_based = self.sim_options_["user_based"]
        given = {name: check_ids(ids, name, n) for name, ids, n in
                 (("users", users, self.trainset.n_users), ("items", items, self.trainset.n_items))
                 if ids is not None}
        if self.neighbourhood_ == "user":
            name = "users" if user_based else "items"
            if name not in given:
                raise ValueError(f"{name} is required with neighbourhood='user'"
                                 + ("" if user_based else " item-based"))
            chosen = self._sets.take(given[name], self._book)
            return chosen.columns, chosen.weights
        if len(given) < 2:
            raise ValueError("users and items are both required with neighbourhood='item'")
        if len(given["items"]) != len(given["users"]):
            raise ValueError(f"items must have one id per user ({len(given['users'])}), got "
                             f"{len(given['items'])}")
        if not len(given["users"]):      # no query: the shape of an answer, no row
            n = self.trainset.n_users if user_based else self.trainset.n_items
            width = min(self.k_, n)
            return np.empty((0, width), dtype=np.int64), np.empty((0, width))
        batch = self._engine.answer(*self._switch(given["users"], given["items"]),
                                    [self._rule_], self._book)
        return batch.neighbours[batch.row], batch.chosen.weights[batch.row]

    def get_neighbors(self, iid: int, k: int) -> list[int]:
        """The `k` neighbours of user (item, item-based) `iid`, as Surprise's
        `AlgoBase.get_neighbors` returns them (inner ids), through the selector.

        With top-k: the `k` most similar others, ties by inner id, as
        Surprise.  With a private selector, the answer is the user's neighbour
        set of `neighbourhood="user"`, drawn and charged as such: at the model's
        `k`, the set its predictions use; at another `k`, a set of that size
        drawn once with noise of its own and charged as a selection of its own
        (the selector's entries at that `k`, in the privacy report).  Inner ids
        follow the data's order: publish the raw ids (as `kneighbors` says).
        """
        self._check_fitted()
        n = self._ratings.n_users
        iid = check_int(iid, "iid", minimum=0, maximum=n - 1)
        k = check_int(k, "k", minimum=1)
        if isinstance(self.selector_, TopK):
            sims = self._storage.rows(np.array([iid]))[0]
            sims[iid] = -np.inf
            order, _ = stable_descending_order(sims[None, :], min(k, n - 1))
            return order[0, :min(k, n - 1)].tolist()
        sets, book = self._neighbour_sets(k)
        columns = sets.take(np.array([iid]), book).columns[0]
        return columns[columns >= 0].tolist()

    def recommend(self, uid, n: int = 10, exclude_rated: bool = True, *,
                  min_k: int | None = None,
                  neighbour_shrinkage: float | None = None) -> list[tuple]:
        """The top-`n` items for raw user id `uid`: `[(raw iid, est), ...]`, best
        first, ranked as `score_rows` says (`dprec.evaluation.topn.recommend_batch`; charged as
        `n_items` queries)."""
        self._check_fitted()
        top = recommend_batch(self, [uid], n, exclude_rated, min_k=min_k,
                              neighbour_shrinkage=neighbour_shrinkage)
        return list(zip(top["iid"].tolist(), top["est"].tolist()))

    def recommend_batch(self, uids, n: int = 10, exclude_rated: bool = True, *,
                        min_k: int | None = None, neighbour_shrinkage: float | None = None):
        """Top-`n` lists of many users at once, a DataFrame (`uid`, `rank`,
        `iid`, `est`), ranked as `score_rows` says: `dprec.evaluation.topn.recommend_batch`."""
        self._check_fitted()
        return recommend_batch(self, uids, n, exclude_rated, min_k=min_k,
                               neighbour_shrinkage=neighbour_shrinkage)

    def score_rows(self, users, *, min_k: int | None = None,
                   neighbour_shrinkage: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        r"""Every item's estimate for each of `users` (inner ids), and which of them a
        top-N list may hold: what `dprec.evaluation.topn.recommend_batch` ranks.

        A rating predictor ranks badly when it ranks what its neighbours hardly
        support: the fallback's $\mu_u$, $\mu_i$ or $b_{ui}$, or the estimate of one
        neighbour who rated 5 ([Top-N recommendation](../topn.md)).  Both options
        leave the model's predictions as they are.

        Parameters
        ----------
        users : 1-D array of inner user ids
        min_k : int, optional
            Rank only the items at least `min_k` neighbours contribute to (`actual_k`
            in `details`); the others are never recommended, as LensKit's pipelines
            drop what its kNN cannot score (its `min_nbrs`).  Default: the model's
            `min_k`, at least 1, so a fallback's answer is never ranked; `0` ranks
            every estimate; at most `k`.
        neighbour_shrinkage : float, optional
            Rank by the estimate of the model's rule with this shrinkage
            $\lambda \ge 0$ (`inf` allowed): the neighbours' term weighted
            $n / (n + \lambda)$, so an estimate few neighbours support moves
            towards the rule's offset ($\mu_u$, $\mu_i$ item-based, or $b_{ui}$).
            Default: the model's `neighbour_shrinkage` if it is positive, else
            `RANKING_SHRINKAGE` (5): a ranking is support-aware unless told otherwise
            (`neighbour_shrinkage=0` ranks by the model's unshrunk estimates).

        Returns
        -------
        est : ndarray of float64, shape (len(users), n_items)
            `estimate_arrays`' numbers (under `neighbour_shrinkage` if given).
        ranked : ndarray of bool, shape (len(users), n_items)
            Where there is an estimate with at least `min_k` contributing neighbours.
        """
        self._check_fitted()
        min_k, rule = self._ranking(min_k, neighbour_shrinkage)
        users = check_ids(users, "users", self.trainset.n_users)
        n_items = self.trainset.n_items
        [(est, possible)], _, actual_k = self._estimate_rules(
            np.repeat(users, n_items), np.tile(np.arange(n_items), len(users)), [rule], False)
        shape = (len(users), n_items)
        return est.reshape(shape), (possible & (actual_k >= min_k)).reshape(shape)

    def _ranking(self, min_k, neighbour_shrinkage) -> tuple[int, Rule]:
        """`score_rows`' options checked: the smallest `actual_k` ranked, and the rule."""
        if min_k is None:
            min_k = max(self.min_k_, 1)
        else:
            min_k = check_int(min_k, "min_k", minimum=0)
            if min_k > self.k_:
                raise ValueError(f"min_k must be <= k ({self.k_}): no item has more "
                                 f"contributing neighbours than k, got min_k={min_k}")
        if neighbour_shrinkage is None:
            if self.neighbour_shrinkage_ > 0:
                return min_k, self._rule_
            neighbour_shrinkage = RANKING_SHRINKAGE
        shrinkage = check_real(neighbour_shrinkage, "neighbour_shrinkage", low=0.0,
                               allow_inf=True)
        return min_k, self._rule((self.prediction_, self.fallback_, shrinkage))

    def estimate_arrays(self, users, items, with_neighbours: bool = False) -> tuple:
        """Estimates for arrays of inner ids, as `test` computes them.

        Parameters
        ----------
        users, items : 1-D arrays of inner ids, of the same length
        with_neighbours : bool, default False
            Also return each query's neighbours (as `kneighbors`).

        Returns
        -------
        est : ndarray of float64
            Clipped to the rating scale; the global mean where impossible.
        possible : ndarray of bool
            False where the prediction was impossible (`was_impossible`).
        neighbours : ndarray of int64, shape (len(users), k), with `with_neighbours`
        """
        self._check_fitted()
        [(est, possible)], chosen, _ = self._estimate_rules(users, items, [self._rule_],
                                                            with_neighbours)
        return (est, possible, chosen[0]) if with_neighbours else (est, possible)

    def estimate_rules(self, users, items, rules: Sequence[Mapping],
                       with_neighbours: bool = False) -> list[tuple] | tuple[list, tuple]:
        """The estimates of `estimate_arrays` under several prediction rules, from
        one selection of neighbours.

        The neighbours a model chooses do not depend on `RULE_PARAMETERS`
        (`prediction`, `fallback`, `neighbour_shrinkage`): models that differ
        only in them, fitted on the same data with the same `random_state`, make
        the same selections.  Each rule's estimates equal those of such a model
        (`tests/test_knn.py`), for the cost of one selection.  Charged to the
        accountant once, as one `estimate_arrays` call (the neighbour
        lists released are the same; predictions are covered by no claim).

        Parameters
        ----------
        users, items : 1-D arrays of inner ids, of the same length
        rules : list of dict
            Each sets some of `RULE_PARAMETERS` (the model's value for the
            others), e.g. `[{"prediction": "basic"}, {"prediction": "baseline",
            "neighbour_shrinkage": 10}]`.
        with_neighbours : bool, default False
            Also return each query's neighbours and their weights, as
            `kneighbors` returns them (the same draws).

        Returns
        -------
        list of (est, possible)
            One pair per rule, as `estimate_arrays` returns them.
        (neighbours, weights) : ndarrays of shape (len(users), k), with `with_neighbours`
        """
        self._check_fitted()
        keys = rule_keys(rules, self.prediction_, self.fallback_, self.neighbour_shrinkage_,
                         self.centered, self.min_sim_)
        answers, neighbours, _ = self._estimate_rules(users, items,
                                                      [self._rule(key) for key in keys],
                                                      with_neighbours)
        return (answers, neighbours) if with_neighbours else answers

    def _estimate_rules(self, users, items, rules: list[Rule],
                        with_neighbours: bool) -> tuple[list, tuple | None, np.ndarray]:
        """`[(est, possible) per rule]`, with `with_neighbours` the queries'
        `(neighbours, weights)` (else None), and their `actual_k`, for arrays of inner
        ids."""
        self._check_fitted()
        users = check_ids(users, "users", self.trainset.n_users)
        items = check_ids(items, "items", self.trainset.n_items)
        if len(items) != len(users):
            raise ValueError(f"items must have one id per user ({len(users)}), got {len(items)}")
        batch = self._estimate_batch(*self._switch(users, items), rules)
        low, high = self.trainset.rating_scale
        out = []
        for rule, est in zip(rules, batch.est):
            possible = self._rules.possible(rule, batch.actual_k)
            out.append((np.where(possible, np.clip(est, low, high), self.default_prediction()),
                        possible))
        return out, ((batch.neighbours[batch.row], batch.chosen.weights[batch.row])
                     if with_neighbours else None), batch.actual_k

    def selection_summary(self) -> dict:
        """Accuracy α and security β of the neighbour selections made so far.

        Returns
        -------
        dict
            `selections` (how many), `alpha` (mean realised
            `Σ sim(chosen) / Σ sim(top-k)`, similarities clipped at 0),
            `beta` (mean of the selector's security β), `max_partition`
            (the furthest partition of `k` any neighbour came from) and
            `mean_max_partition` (its mean per selection).
        """
        self._check_fitted()
        return self._book.selections.summary()
