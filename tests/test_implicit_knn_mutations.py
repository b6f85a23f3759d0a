"""ImplicitKNN's details the other files leave open: `get_neighbors` against a by-hand
ranking, the privacy report of each configuration, the documented defaults, the released
sets' prior and neighbours, and the errors that name their parameter."""

from __future__ import annotations

import numpy as np
import pytest
from strategies import fit_quietly, trainset_of

from dprec.accountant.ledger import BudgetExceededError, Unit
from dprec.implicit.knn import ImplicitKNN, check_sim_options
from dprec.implicit.set_reports import flip_probability, item_counts

OUTPUT = "scores and recommendations (estimate, test, predict, recommend)"
#: the items of `sets`, as a public catalogue (the released sets' mechanics tested here
#: are over a fixed list; the private list is tests/test_implicit_lists.py's)
ITEMS = [f"i{i}" for i in range(12)]




@pytest.fixture(scope="module")
def sets():
    """14 users × 12 items: u3 = u0 (ties), u5 holds one item, every row non-empty."""
    rng = np.random.default_rng(11)
    X = (rng.random((14, 12)) < 0.4).astype(float)
    X[:, 0] = 1.0
    X[3] = X[0]
    X[5] = 0.0
    X[5, 2] = 1.0
    X[7, 4] = X[8, 4] = 0.0
    return X


def cosine(X: np.ndarray) -> np.ndarray:
    sizes = np.sqrt(X.sum(axis=1))
    return (X @ X.T) / np.maximum(np.outer(sizes, sizes), 1e-300)


def by_hand(sims: np.ndarray, row: int, min_sim: float, inner: list) -> list:
    """The neighbours of `row` (rows sorted by raw id): similarity >= min_sim, not the
    row itself, most similar first, ties by raw id; as inner ids (None: not in the
    trainset)."""
    order = sorted((-sims[row, c], c) for c in range(sims.shape[1])
                   if c != row and sims[row, c] >= min_sim and inner[c] is not None)
    return [inner[c] for _, c in order]


def test_get_neighbors_user_based_is_the_ranking_of_the_similarity_row(sets):
    trainset = trainset_of(sets)
    model = ImplicitKNN(k=3).fit(trainset)
    raw = sorted(f"u{u}" for u in range(14))
    order = [int(r[1:]) for r in raw]                 # rows by raw id
    sims = cosine(sets[order])
    inner = [trainset.to_inner_uid(r) for r in raw]
    for u in range(14):
        row = raw.index(trainset.to_raw_uid(u))
        expected = by_hand(sims, row, 1e-6, inner)
        assert model.get_neighbors(u, 100) == expected
        assert model.get_neighbors(u, 2) == expected[:2]
        assert u not in expected
    assert model.get_neighbors(0, 1) == [3]           # the same set
    assert model.get_neighbors(13, 1) == model.get_neighbors(13, 100)[:1]
    assert 0 in model.get_neighbors(3, 100)           # inner id 0 is a neighbour


def test_get_neighbors_item_based_is_the_ranking_of_the_item_similarities(sets):
    trainset = trainset_of(sets)
    catalogue = [f"i{i}" for i in range(12)] + ["a0", "zz"]        # held by nobody
    model = ImplicitKNN(sim_options={"user_based": False}, items=catalogue).fit(trainset)
    raw = sorted(catalogue)
    columns = np.zeros((14, len(raw)))
    for c, r in enumerate(raw):
        if r.startswith("i"):
            columns[:, c] = sets[:, int(r[1:])]
    sims = cosine(columns.T)
    inner = [trainset.to_inner_iid(r) if r.startswith("i") else None for r in raw]
    for i in range(trainset.n_items):
        row = raw.index(trainset.to_raw_iid(i))
        assert model.get_neighbors(i, 100) == by_hand(sims, row, 1e-6, inner)
    assert 0 in model.get_neighbors(1, 100)
    with pytest.raises(ValueError, match="^iid must be <= 11, got 12$"):
        model.get_neighbors(12, 1)                    # 14 users, 12 items


def test_get_neighbors_checks_its_ids_against_the_rows_of_its_side(sets):
    model = ImplicitKNN().fit(trainset_of(sets))
    assert len(model.get_neighbors(13, 1)) == 1       # a user past the 12 items
    assert len(model.get_neighbors(0, 1)) == 1
    with pytest.raises(ValueError, match="^iid must be <= 13, got 14$"):
        model.get_neighbors(14, 1)
    with pytest.raises(ValueError, match="^iid must be >= 0, got -1$"):
        model.get_neighbors(-1, 1)
    with pytest.raises(ValueError, match="^k must be >= 1, got 0$"):
        model.get_neighbors(0, 0)


def test_get_neighbors_is_declared_once_as_an_output_with_a_gap(sets):
    model = ImplicitKNN().fit(trainset_of(sets))
    before = len(model.privacy_report().outputs)
    model.get_neighbors(0, 2)
    model.get_neighbors(1, 2)
    outputs = model.privacy_report().outputs
    assert len(outputs) == before + 1
    assert outputs[-1].name == "neighbour lists (get_neighbors, inner ids)"
    assert outputs[-1].covered_by == ()
    assert "inner ids follow the order of the data" in outputs[-1].gap


def test_get_neighbors_from_the_reports_leaves_out_the_listed_users_without_data(sets):
    """ŝ(u, v) = Σ_{i ∈ S_u} x̂_vi / |S_u|, x̂ the debiased report; a listed user without
    data reports noise, may be similar, and has no inner id."""
    trainset = trainset_of(sets)
    users = [f"u{u}" for u in range(14)] + ["a0", "nobody"]
    epsilon, alpha = 1.0, 2
    model = fit_quietly(ImplicitKNN(set_epsilon=epsilon, users=users, random_state=4,
                                    sim_options={"set_difference": alpha}, items=ITEMS),
                        trainset)
    raw = sorted(users)
    own = np.zeros((len(raw), 12))
    for r, name in enumerate(raw):
        if name.startswith("u"):
            own[r] = sets[int(name[1:])]
    own = own[:, [int(i[1:]) for i in model.item_list_]]     # items by raw id too
    q = flip_probability(epsilon, alpha)
    debiased = (model.reports_.toarray() - q) / (1 - 2 * q)
    sims = (own @ debiased.T) / np.maximum(own.sum(axis=1), 1)[:, None]
    inner = [trainset.to_inner_uid(r) if r.startswith("u") else None for r in raw]
    sims = np.round(sims, 9)                          # ties: up to rounding
    position = {inner[c]: c for c in range(len(raw))}
    for u in range(14):
        row = raw.index(trainset.to_raw_uid(u))
        found = model.get_neighbors(u, 100)
        assert sorted(found) == sorted(by_hand(sims, row, 1e-6, inner))
        assert np.all(np.diff([sims[row, position[v]] for v in found]) <= 0)
    # u5 holds one item: a reporter of it is (1 - q) / (1 - 2q) similar
    row = raw.index("u5")
    high = 0.75 * (1 - q) / (1 - 2 * q)
    close = fit_quietly(ImplicitKNN(set_epsilon=epsilon, users=users, random_state=4,
                                    min_sim=high, sim_options={"set_difference": alpha},
                                    items=ITEMS), trainset)
    assert by_hand(sims, row, high, inner)
    for u in range(14):                       # the share of u's items, whatever |S_u|
        row = raw.index(trainset.to_raw_uid(u))
        assert sorted(close.get_neighbors(u, 100)) == sorted(by_hand(sims, row, high, inner))


def test_the_report_of_exact_similarities(sets):
    trainset = trainset_of(sets)
    default = ImplicitKNN().fit(trainset).privacy_report()
    assert default.model == "ImplicitKNN(k=20, similarity 'cosine', user-based)"
    report = ImplicitKNN(k=3, sim_options={"name": "jaccard", "user_based": False}
                         ).fit(trainset).privacy_report()
    assert report.model == "ImplicitKNN(k=3, similarity 'jaccard', item-based)"
    assert report.entries == ()
    (output,) = report.outputs
    assert (output.name, output.covered_by) == (OUTPUT, ())
    assert output.gap == "computed from the raw interactions, without noise"


def test_the_report_of_a_private_sketch(sets):
    report = fit_quietly(ImplicitKNN(k=4, sim_options={"name": "rr_minhash", "epsilon": 1.0,
                                                       "tau": 1}), trainset_of(sets)
                         ).privacy_report()
    assert report.model == "ImplicitKNN(k=4, similarity 'rr_minhash', user-based)"
    (entry,) = report.entries
    assert (entry.component, entry.unit) == ("similarity", Unit.SET_ITEM)
    (output,) = report.outputs
    assert (output.name, output.covered_by) == (OUTPUT, (0,))
    assert "the raw sets are not covered by them" in output.gap


@pytest.mark.parametrize("sketch", [False, True])
def test_the_report_of_the_released_sets(sets, sketch):
    options = ({"name": "rr_minhash", "epsilon": 0.5, "tau": 2, "set_difference": 2,
                "small_users": "exclude"}
               if sketch else {"set_difference": 2})
    report = fit_quietly(ImplicitKNN(k=3, set_epsilon=1.5, sim_options=options, items=ITEMS),
                         trainset_of(sets)).privacy_report()
    name = "rr_minhash" if sketch else "reports"
    assert report.model == f"ImplicitKNN(k=3, similarity {name!r}, user-based, set_epsilon=1.5)"
    entry = report.entries[-1]
    assert (entry.component, entry.epsilon, entry.delta, entry.unit) == (
        "set report", 1.5, 0.0, Unit.SET_ITEM)
    assert "ε/α = 0.75; 2 item(s)" in entry.note
    (output,) = report.outputs
    assert output.name == OUTPUT and output.gap is None
    assert output.covered_by == ((0, 1) if sketch else (0,))
    own_neighbours = [note for note in report.notes if "chooses their neighbours" in note]
    own_set = [note for note in report.notes if note.startswith("a user's own list")]
    assert (len(own_neighbours), len(own_set)) == ((0, 1) if sketch else (1, 0))


def test_the_documented_defaults(sets):
    trainset = trainset_of(sets)
    assert check_sim_options({}) == {"name": "cosine", "user_based": True}
    default = fit_quietly(ImplicitKNN(set_epsilon=1.0, random_state=2, items=ITEMS), trainset)
    given = fit_quietly(ImplicitKNN(set_epsilon=1.0, prior_sd=0.05, random_state=2,
                                    items=ITEMS), trainset)
    np.testing.assert_array_equal(default.score_rows(range(14))[0],
                                  given.score_rows(range(14))[0])


def test_the_options_and_parameters_are_named(sets):
    trainset = trainset_of(sets)
    with pytest.raises(ValueError, match=r"^sim_options has unknown option\(s\) "
                                         r"\['set_difference'\] for 'cosine'"):
        check_sim_options({"name": "cosine", "set_difference": 2})
    with pytest.raises(TypeError, match=r"^sim_options\['user_based'\] must be True or False"):
        ImplicitKNN(sim_options={"user_based": 1}).fit(trainset)
    with pytest.raises(ValueError, match="^min_nbrs must be >= 1, got 0$"):
        ImplicitKNN(min_nbrs=0).fit(trainset)
    with pytest.raises(BudgetExceededError, match="for one item of a user's set: the fit"):
        ImplicitKNN(set_epsilon=2.0, budget=(1.0, 0.0)).fit(trainset)


def test_a_sketch_error_says_the_threshold_only_when_it_keeps_nothing(sets):
    message = (r"^sim_options for 'rr_minhash': 14 user\(s\) have fewer than tau=100 items "
               r"\(smallest: 1\).* release no sketch for them\.$")
    options = {"name": "rr_minhash", "epsilon": 1.0, "tau": 100}
    with pytest.raises(ValueError, match=message):
        ImplicitKNN(sim_options=options).fit(trainset_of(sets))
    with pytest.raises(ValueError, match=message):
        ImplicitKNN(sim_options=options, threshold=0.5).fit(trainset_of(sets))


def test_the_sketches_hash_the_raw_item_ids_not_the_columns(sets):
    """A catalogue item sorted first shifts every column: the sketches do not change."""
    trainset = trainset_of(sets)
    options = {"name": "minhash", "width": 16, "hash_seed": 5}
    plain = fit_quietly(ImplicitKNN(sim_options=options), trainset)
    shifted = fit_quietly(ImplicitKNN(sim_options=options,
                                      items=["a0", *(f"i{i}" for i in range(12))]), trainset)
    assert ([plain.get_neighbors(u, 13) for u in range(14)]
            == [shifted.get_neighbors(u, 13) for u in range(14)])


def test_no_user_gives_an_empty_block(sets):
    for options in ({}, {"user_based": False}):
        model = ImplicitKNN(sim_options=options).fit(trainset_of(sets))
        block, possible = model.score_rows(np.zeros(0, dtype=np.int64))
        assert block.shape == possible.shape == (0, 12)
        assert possible.dtype == bool


def test_min_nbrs_equal_to_k_neighbours_is_enough(sets):
    model = fit_quietly(ImplicitKNN(k=3, min_nbrs=3, set_epsilon=2.0, prior_sd=None,
                                    random_state=1, items=ITEMS), trainset_of(sets))
    _, possible = model.score_rows(range(14))
    assert possible.all()


def test_without_neighbours_the_score_is_the_private_popularity(sets):
    """With prior_sd and no neighbour (min_sim out of reach), the score of i is P_i, the
    debiased share of all users' reports (at ε per set_difference items)."""
    model = fit_quietly(ImplicitKNN(set_epsilon=1.0, min_sim=1e9, random_state=3,
                                    sim_options={"set_difference": 2}, items=ITEMS),
                        trainset_of(sets))
    scores, possible = model.score_rows(range(14))
    assert possible.all()
    prior = item_counts(model.reports_, 1.0, 2) / 14
    np.testing.assert_allclose(scores, np.broadcast_to(prior, scores.shape))
    alone = fit_quietly(ImplicitKNN(set_epsilon=1.0, random_state=3, items=ITEMS),
                        trainset_of(sets[:1]))
    np.testing.assert_allclose(alone.score_rows([0])[0][0],
                               item_counts(alone.reports_, 1.0))   # n = 1 user
