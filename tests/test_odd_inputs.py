"""The last odd inputs of #53 (point 5): each answered with a clear `ValueError` or
`TypeError` naming the parameter and the range that works, or with a finite, correct
answer; defaults that fit; `NotFittedError` before `fit`.  Every test here failed before
its fix (the old answer is in its docstring)."""

from __future__ import annotations

import warnings
from functools import partial

import numpy as np
import pytest

import dprec
from dprec import (
    DPALS,
    DPBaseline,
    DPItemKNN,
    ImplicitKNN,
    LocalKNN,
    MallowsRanker,
    NotFittedError,
    PrivateKNN,
    PrivateKNNBaseline,
    PrivateKNNWithMeans,
    PrivateKNNWithZScore,
    PrivatePopularity,
    datasets,
)

#: every public model, built with its defaults
PUBLIC = {"DPALS": DPALS, "DPBaseline": DPBaseline, "DPItemKNN": DPItemKNN,
          "ImplicitKNN": ImplicitKNN, "LocalKNN": LocalKNN, "MallowsRanker": MallowsRanker,
          "PrivateKNN": PrivateKNN, "PrivateKNNBaseline": PrivateKNNBaseline,
          "PrivateKNNWithMeans": PrivateKNNWithMeans,
          "PrivateKNNWithZScore": PrivateKNNWithZScore, "PrivatePopularity": PrivatePopularity}


@pytest.fixture(scope="module")
def trainset():
    return datasets.synthetic(30, 40, 400, random_state=0).build_full_trainset()


# ------------------------------------------------------------------ not fitted
def test_not_fitted_error_is_scikit_learns_pattern():
    assert issubclass(NotFittedError, ValueError) and issubclass(NotFittedError, AttributeError)
    assert "NotFittedError" in dprec.__all__


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_every_answer_before_fit_raises_not_fitted_error(name):
    """Before: `AttributeError` (and `estimate` of the end-to-end models `'DPBaseline'
    object has no attribute 'trainset'`)."""
    model = PUBLIC[name]()
    calls = {"predict": lambda: model.predict("u1", "i1"),
             "test": lambda: model.test([("u1", "i1", 3.0)]),
             "estimate": lambda: model.estimate(0, 0),
             "privacy_report": model.privacy_report,
             "default_prediction": model.default_prediction,
             "get_neighbors": lambda: model.get_neighbors(0, 5)}
    for method, argument in (("recommend", "u1"), ("recommend_batch", ["u1"]),
                             ("kneighbors", [0])):
        if hasattr(model, method):
            calls[method] = partial(getattr(model, method), argument)
    for label, call in calls.items():
        with pytest.raises(NotFittedError, match="not fitted yet: call fit first"):
            call()
        try:
            call()
        except AttributeError as error:      # what callers caught before still catches it
            assert isinstance(error, ValueError), label


def test_data_usage_before_fit_raises_not_fitted_error():
    from dprec.audit.data_usage import data_usage

    with pytest.raises(NotFittedError, match="not fitted"):
        data_usage(PrivateKNN(), np.array([0]), np.array([0]))


# ------------------------------------------------------------------ out-of-range numbers
def fit(model, trainset):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model.fit(trainset)


def estimates(model, trainset) -> np.ndarray:
    return np.array([p.est for p in model.test(trainset.build_testset()[:60])])


#: (label, model, words its message must contain); before: the error in the label's comment
REFUSED = [
    # NaN estimates without an error
    ("DPBaseline clip=1e308", lambda: DPBaseline(clip=1e308, random_state=0),
     ("clip must be <= 4", "the rating scale's range", "got 1e+308")),
    # OverflowError (34, 'Numerical result out of range')
    ("DPBaseline clip=1e155", lambda: DPBaseline(clip=1e155, random_state=0),
     ("clip must be <= 4",)),
    ("DPBaseline clip=1e300 laplace",
     lambda: DPBaseline(clip=1e300, mechanism="laplace", random_state=0),
     ("clip must be <= 4",)),
    ("DPBaseline global_share=1e-300",
     lambda: DPBaseline(global_share=1e-300, random_state=0),
     ("global_share must be in [5.960464478e-08, 0.9999999925]", "2^-24", "grid step")),
    # 'a unit's contributions are too large for exact integer norms: lower bits'
    ("DPBaseline global_share=1-1e-16",
     lambda: DPBaseline(global_share=1 - 1e-16, random_state=0),
     ("global_share must be in [5.960464478e-08, 0.9999999925]", "2^53")),
    ("DPItemKNN baseline_share=1e-300",
     lambda: DPItemKNN(baseline_share=1e-300, random_state=0),
     ("baseline_share must be at least", "2^42")),
    ("DPALS baseline_share=1e-300", lambda: DPALS(baseline_share=1e-300, random_state=0),
     ("baseline_share must be at least", "2^42")),
    # OverflowError: cannot convert float infinity to integer
    ("DPItemKNN clip=1e308", lambda: DPItemKNN(clip=1e308, random_state=0),
     ("clip must be below 2^(1024 - grid_bits)",)),
    # OverflowError: int too large to convert to float
    ("DPItemKNN clip=1e200 laplace",
     lambda: DPItemKNN(clip=1e200, mechanism="laplace", random_state=0),
     ("clip = 1e+200", "a smaller clip")),
    # OverflowError: cannot convert float infinity to integer
    ("MallowsRanker pairs_per_rating=1e308",
     lambda: MallowsRanker(pairs_per_rating=1e308, random_state=0),
     ("pairs_per_rating must be <= 2.251799814e+13", "2^53 pairs per epoch")),
    # "lr=0.05: the pairwise model diverged ... use a smaller lr"
    ("MallowsRanker reg=1e308", lambda: MallowsRanker(reg=1e308, random_state=0),
     ("reg=1e+308", "a smaller reg")),
]


@pytest.mark.parametrize("label, make, words", REFUSED, ids=[label for label, *_ in REFUSED])
def test_a_parameter_out_of_its_range_is_named_with_the_range(trainset, label, make, words):
    with pytest.raises(ValueError) as info:
        fit(make(), trainset)
    for word in words:
        assert word in str(info.value)


#: (label, model) at the edge of the ranges above, or past what used to crash: they work
WORKS = [
    ("DPBaseline clip=4", lambda: DPBaseline(clip=4.0, random_state=0)),
    ("DPBaseline global_share=2^-24", lambda: DPBaseline(global_share=2.0**-24, random_state=0)),
    ("DPBaseline global_share=1-2^-27",
     lambda: DPBaseline(global_share=1 - 2.0**-27, random_state=0)),
    ("DPItemKNN baseline_share=3.4e-17",
     lambda: DPItemKNN(baseline_share=3.4e-17, random_state=0)),
    ("DPALS baseline_share=3.4e-17", lambda: DPALS(baseline_share=3.4e-17, random_state=0)),
    ("DPItemKNN clip=2^1019", lambda: DPItemKNN(clip=2.0**1019, random_state=0)),
    # OverflowError (34, 'Numerical result out of range')
    ("LocalKNN noise_tolerance=1e308",
     lambda: LocalKNN(noise_tolerance=1e308, random_state=0)),
    # numba TypingError (k past int64)
    ("ImplicitKNN k=10**20", lambda: ImplicitKNN(k=10**20, random_state=0)),
    ("ImplicitKNN item-based k=10**20",
     lambda: ImplicitKNN(k=10**20, sim_options={"user_based": False}, random_state=0)),
    # LinAlgError: Singular matrix
    ("DPALS reg=1e-9 noise_reg=0 epsilon=100",
     lambda: DPALS(noise_reg=0.0, reg=1e-9, epsilon=100.0, baseline_share=0.5,
                   random_state=0)),
]


@pytest.mark.parametrize("label, make", WORKS, ids=[label for label, _ in WORKS])
def test_extreme_but_valid_parameters_give_finite_estimates(trainset, label, make):
    model = fit(make(), trainset)
    est = estimates(model, trainset)
    low, high = trainset.rating_scale
    assert np.isfinite(est).all()
    if not isinstance(model, ImplicitKNN):           # scores, not ratings
        assert ((est >= low) & (est <= high)).all()


def test_implicit_k_past_the_rows_is_k_equal_to_them(trainset):
    for options in ({}, {"user_based": False}):
        huge = fit(ImplicitKNN(k=10**20, sim_options=options), trainset)
        every = fit(ImplicitKNN(k=trainset.n_users + trainset.n_items, sim_options=options),
                    trainset)
        assert estimates(huge, trainset).tolist() == estimates(every, trainset).tolist()


def test_dpals_eigenvector_solve_is_the_ridge_solution(trainset, monkeypatch):
    """Where elimination fails (`LinAlgError: Singular matrix` before: the DPALS case of
    `WORKS`), the users are solved through the Gram matrices' eigenvectors: the same
    ridge solution, checked here where both work."""
    from dprec.endtoend.dp_als import user_factors

    rng = np.random.default_rng(0)
    matrix = fit(DPBaseline(random_state=0), trainset).rating_space.matrix
    residuals, factors = rng.normal(size=matrix.nnz), rng.normal(size=(matrix.shape[1], 8))
    by_elimination = user_factors(matrix, residuals, factors, 0.01)

    def singular(*args, **kwargs):
        raise np.linalg.LinAlgError("Singular matrix")

    monkeypatch.setattr(np.linalg, "solve", singular)
    by_eigenvectors = user_factors(matrix, residuals, factors, 0.01)
    np.testing.assert_allclose(by_eigenvectors, by_elimination, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("value, error", [("basic", TypeError), (-1, ValueError),
                                          ([1], TypeError), (float("nan"), ValueError)])
def test_implicit_prior_sd_is_checked_without_set_epsilon(trainset, value, error):
    """Before: any `prior_sd` was accepted (and ignored) without `set_epsilon`."""
    with pytest.raises(error, match="prior_sd"):
        fit(ImplicitKNN(prior_sd=value), trainset)


# ------------------------------------------------------------------ one user, any call
def test_implicit_released_scores_of_a_user_do_not_depend_on_the_call(trainset):
    """Before: the weighted shares were a float32 BLAS product when the call's size made
    it cheaper, so `predict` differed from `test` by up to 7e-8 (here 137-198 of 600)."""
    data = datasets.synthetic(120, 150, 3000, random_state=0).build_full_trainset()
    items = sorted(data.to_raw_iid(i) for i in data.all_items())
    model = fit(ImplicitKNN(k=40, set_epsilon=2.0, items=items, random_state=0), data)
    pairs = [(data.to_raw_uid(u), data.to_raw_iid(i), 0.0)
             for u in range(0, data.n_users, 3) for i in range(0, data.n_items, 10)]
    together = [p.est for p in model.test(pairs)]
    alone = [model.predict(u, i).est for u, i, _ in pairs]
    assert together == alone


def test_shrunk_shares_of_a_row_are_those_it_has_alone():
    import scipy.sparse as sp

    from dprec.implicit import set_reports

    rng = np.random.default_rng(0)
    reports = sp.csr_matrix((rng.random((200, 300)) < 0.35).astype(np.float64))
    sizes = [3 if q % 2 else 30 for q in range(40)]      # cheap and dear rows together
    columns = [np.sort(rng.choice(200, k, replace=False)) for k in sizes]
    weights = sp.csr_matrix((rng.random(sum(sizes)), np.concatenate(columns),
                             np.r_[0, np.cumsum(sizes)]), shape=(40, 200))
    prior = rng.random(300) * 0.3
    dense = set_reports.dense_reports(reports)
    for prior_sd in (None, 0.05):
        together = set_reports.shrunk_shares(weights, reports, prior, 1.0, 1, prior_sd, dense)
        alone = np.vstack([set_reports.shrunk_shares(weights[q], reports, prior, 1.0, 1,
                                                     prior_sd, dense) for q in range(40)])
        assert np.array_equal(together, alone)


# ------------------------------------------------------------------ empty queries
@pytest.mark.parametrize("options", [{"neighbourhood": "item"},
                                     {"neighbourhood": "item", "selector": "ppns"},
                                     {"neighbourhood": "item",
                                      "sim_options": {"user_based": False}},
                                     {"neighbourhood": "user"}])
def test_kneighbors_of_no_query_is_empty_of_the_right_shape(trainset, options):
    """Before (item neighbourhood): `IndexError` or 'need at least one array to
    concatenate'."""
    model = fit(PrivateKNN(k=5, random_state=0, verbose=False, **options), trainset)
    none = np.array([], dtype=np.int64)
    neighbours, weights = model.kneighbors(none, none)
    some, some_weights = model.kneighbors(np.array([0, 1]), np.array([0, 1]))
    assert neighbours.shape == (0, some.shape[1]) == weights.shape
    assert neighbours.dtype == some.dtype and weights.dtype == some_weights.dtype


# ------------------------------------------------------------------ defaults that fit
def check_default_popularity(trainset, lists: bool) -> PrivatePopularity:
    """`PrivatePopularity()` fits, lists items (where the data are large enough for its
    fresh noise: `lists`), and its report's worst user (everyone in scope: `per_user`
    is inf for a user outside) has exactly the ε it claims."""
    model = fit(PrivatePopularity(), trainset)
    report = model.privacy_report()
    assert report.model == "PrivatePopularity(mechanism='reports')"
    assert model.mechanism is None                    # stored as given
    worst = report.per_user()["epsilon"].max()
    assert worst == report.total()[0] == model.epsilon == 1.0
    assert len(model.recommend(trainset.to_raw_uid(0), n=5)) <= 5
    if lists:
        assert len(model.counts_) > 100
        assert len(model.recommend(trainset.to_raw_uid(0), n=5)) == 5
    return model


def test_private_popularity_default_fits_and_guarantees_every_user():
    """Before: `PrivatePopularity().fit` raised 'cap must be given'.  Last.fm-like sets:
    about 50 items per user, a long tail of items."""
    lastfm_like = datasets.synthetic(400, 3000, 20000, random_state=0).build_full_trainset()
    check_default_popularity(lastfm_like, lists=False)
    with_cap = fit(PrivatePopularity(cap=3, random_state=0), lastfm_like).privacy_report()
    assert with_cap.model == "PrivatePopularity(mechanism='laplace')"
    with pytest.raises(ValueError, match="cap must be given"):
        fit(PrivatePopularity(mechanism="laplace"), lastfm_like)


@pytest.mark.data
def test_private_popularity_default_on_lastfm(lastfm_path):
    check_default_popularity(datasets.load("lastfm", path=lastfm_path).build_full_trainset(),
                             lists=True)


# ------------------------------------------------------------------ the harness, small form
def _harness():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "tools" / "fuzz_arguments.py"
    spec = importlib.util.spec_from_file_location("fuzz_arguments", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_every_parameter_of_the_wrong_type_is_named_at_fit(trainset, name):
    """`tools/fuzz_arguments.py` (every public model, 13 odd values per parameter, no
    finding) in its small form: a string for every parameter."""
    harness = _harness()
    model = PUBLIC[name]
    problems = {parameter: harness.answer(model, parameter, "basic", trainset)
                for parameter in harness.parameters(model) if parameter != "verbose"}
    assert {k: v for k, v in problems.items() if v is not None} == {}
