"""Issue #51, point 3: a report never contradicts itself.

The accountant's report and headline first, then every private model fitted on small
data: no line states an infinite ε and *holds* about the same users (the first line is
about the worst of all users), the header states no count of the data, the noise of the
caller's generator never gives an unconditional *holds* (an int seed none at all), and
the dp-accounting line is printed only when it is tighter at the main line's δ.  The
rest of the report's wording is tested in ``test_ledger.py``.
"""

from __future__ import annotations

import math
import re
import warnings

import numpy as np
import pytest
from strategies import trainset_of
from test_ledger import entry

from dprec import DPALS, DPBaseline, DPItemKNN, LocalKNN, MallowsRanker, PrivateKNN
from dprec.accountant.ledger import (
    CALLER_GENERATOR,
    SEEDED,
    NoiseSource,
    PrivacyAccountant,
    Status,
    Unit,
    compose,
)
from dprec.datasets import synthetic
from dprec.implicit.knn import ImplicitKNN
from dprec.implicit.popularity import PrivatePopularity


# ---------------------------------------------------------------- the accountant
def contradictions(text: str) -> list[str]:
    """The report's lines (entries aside) that state an infinite ε ("ε = ∞", "ε = inf")
    and *holds* about the same users: both before "the other users" (or "for the
    others"), which starts what a line says of the users who have a guarantee."""
    bad = []
    for line in text.splitlines():
        if line.startswith("- "):                        # an entry: its own ε per application
            continue
        first = re.split(r"the other users|for the others", line)[0]
        if re.search(r"ε = (∞|inf)", first) and "holds" in first:
            bad.append(line)
    return bad


def plain_holds(text: str) -> list[str]:
    """The lines of a report that state a status and say *holds* unconditionally (not
    "holds only if"): the guarantee line, the composed lines, the tighter lines and each
    entry's status."""
    lines = text.splitlines()
    stating = [lines[1]] + [line for line in lines if line.startswith("Per user, composed")
                            or "tighter (dp-accounting" in line]
    return ([line for line in stating if re.search(r"holds(?! only if)", line)]
            + [line for line in lines if line.startswith("- ") and ", holds; " in line])


def _guaranteed(users, outside=None, rule="the sole rater of an item") -> PrivacyAccountant:
    acc = PrivacyAccountant(users, model="M")
    release = acc.register(entry(2.0, 1e-5, unit=Unit.USER, applies_to="user"))
    acc.release_once([release], ["predictions"], "post-processing")
    if outside is not None:
        acc.out_of_scope(Unit.USER, np.array(outside), rule)
    return acc


def test_every_user_outside_is_no_guarantee_not_infinity_that_holds():
    """Every user outside the scope: `total` is (inf, 0), and the first line printed
    "ε = inf, δ = 0 per one user (...) (worst user; holds)"."""
    acc = _guaranteed(["a", "b"], [True, True])
    text = str(acc)
    assert contradictions(text) == [], text
    assert text.splitlines()[1] == (
        "Guarantee for everything the model releases: none for any user per one user (all "
        "of their ratings) (ε = ∞): the sole rater of an item")
    assert "Per user, composed (one user (all of their ratings)): worst ε = ∞ for every user "\
           "(no guarantee: outside it, below)" in text
    (head,) = acc.headline()
    assert (head.epsilon, head.outside, head.others, head.holds) == (math.inf, 2,
                                                                     (math.inf, 0.0), False)
    assert str(head) == "ε = ∞ per user: no guarantee for any user (2)"


def test_the_headline_is_the_worst_of_all_users_and_says_who_is_outside_in_words():
    acc = _guaranteed(["a", "b", "c"], [False, True, False])
    text = str(acc)
    assert contradictions(text) == [], text
    assert text.splitlines()[1] == (
        "Guarantee for everything the model releases: no guarantee for some users per one "
        "user (all of their ratings) (worst user: ε = ∞): the sole rater of an item; for the "
        "other users ε = 2, δ = 1e-05 (the worst of them; holds)")
    assert "1 user" not in text and "'b'" not in text    # the rule, not who nor how many
    assert ("worst ε = ∞ (no guarantee for some users, below); the other users: worst ε = 2, "
            "δ = 1e-05 (holds: the guarantee for everything released); median ε = 2") in text
    (head,) = acc.headline()
    assert (head.unit, head.epsilon, head.status, head.outside) == (Unit.USER, math.inf,
                                                                    "holds", 1)
    assert head.others == (2.0, 1e-5) and head.rule == "the sole rater of an item"
    assert not head.holds and acc.guarantee == {Unit.USER: (2.0, 1e-5)}   # those in scope
    assert str(head) == ("ε = ∞ per user: no guarantee for 1 user; ε = 2, δ = 1e-05 for "
                         "the others, holds")
    everyone = _guaranteed(["a", "b", "c"]).headline()[0]
    assert everyone.holds and str(everyone) == "ε = 2, δ = 1e-05 per user, holds"


def test_an_entry_of_infinite_epsilon_is_no_guarantee_for_its_users():
    acc = PrivacyAccountant(["a", "b"], model="M")
    none = acc.register(entry(math.inf, unit=Unit.USER, applies_to="user"))
    some = acc.register(entry(1.0, unit=Unit.USER, applies_to="user"))
    acc.charge({none: np.array([1, 0]), some: np.array([0, 1])})
    acc.declare_output("scores", [none, some])
    text = str(acc)
    assert contradictions(text) == [], text
    (head,) = acc.headline()
    assert (head.epsilon, head.outside, head.others) == (math.inf, 1, (1.0, 0.0))
    assert "an entry of ε = ∞ (no privacy) was applied to them" in text.splitlines()[1]


def test_the_report_header_prints_no_count_of_the_data():
    acc = _guaranteed([f"u{n}" for n in range(943)])
    assert str(acc).splitlines()[0] == "Privacy report: M"
    assert "943" not in str(acc) and acc.n_users == 943    # the curator's figure


@pytest.mark.parametrize("seeded, status, reason", [
    (NoiseSource.GENERATOR, Status.CONDITIONAL, CALLER_GENERATOR),
    (NoiseSource.SEED, Status.VOID, SEEDED), (True, Status.VOID, SEEDED),
    (NoiseSource.FRESH, Status.HOLDS, ""), (False, Status.HOLDS, "")])
def test_the_noise_source_sets_the_status_of_what_holds(seeded, status, reason):
    acc = PrivacyAccountant(["a"], seeded=seeded)
    release = acc.register(entry(1.0, unit=Unit.USER, applies_to="user"))
    published = acc.register(entry(1.0, status=Status.AS_PUBLISHED))
    assert acc.entries[release].status is status and acc.entries[release].note == reason
    assert acc.entries[published].status is Status.AS_PUBLISHED    # a claim stays a claim
    assert acc.seeded is (status is not Status.HOLDS)


def test_a_caller_generator_gives_a_conditional_guarantee_never_a_plain_holds():
    acc = PrivacyAccountant(["a", "b"], model="M", seeded=NoiseSource.GENERATOR)
    acc.release_once([acc.register(entry(1.0, 1e-6, unit=Unit.USER, applies_to="user"))],
                     ["predictions"], "post-processing")
    assert acc.guarantee is None and acc.end_to_end() is Status.CONDITIONAL
    text = str(acc)
    assert plain_holds(text) == [], text
    assert text.splitlines()[1] == (
        "Guarantee for everything the model releases: ε = 1, δ = 1e-06 per one user (all of "
        "their ratings) (worst user; holds only if the generator's state is secret)")
    (head,) = acc.headline()
    assert head.status == "holds only if the generator's state is secret" and not head.holds
    merged = compose([acc, _guaranteed(["b", "c"])])
    assert merged.noise_source is NoiseSource.GENERATOR and merged.seeded


def test_the_seeded_flag_of_an_older_pickle_is_read():
    acc = PrivacyAccountant(1)
    state = acc.__getstate__()
    del state["noise_source"]
    state["seeded"] = True
    older = PrivacyAccountant.__new__(PrivacyAccountant)
    older.__setstate__(state)
    assert older.noise_source is NoiseSource.SEED


def test_seeded_must_be_a_bool_or_a_noise_source():
    with pytest.raises(TypeError, match="^seeded must be a bool or a "
                                        "dprec.accountant.ledger.NoiseSource"):
        PrivacyAccountant(1, seeded="yes")


def test_the_tighter_line_of_one_release_is_absent_of_many_tighter_at_the_same_delta():
    """One Gaussian release (ε = 1, δ = 1e-5) printed "tighter: ε ≤ 1 ... at δ = 1.1e-05":
    not tighter (a larger δ)."""
    pytest.importorskip("dp_accounting")
    once = _guaranteed(["a"])
    assert "tighter" not in str(once)
    many = PrivacyAccountant(["a"])
    many.charge({many.register(entry(0.1, 1e-6)): np.array([100])})
    (line,) = [line for line in str(many).splitlines() if "tighter" in line]
    tight, delta = re.search(r"ε ≤ ([\d.]+) for every user at the same δ = ([\d.e-]+)",
                             line).groups()
    assert float(tight) < 10.0 and float(delta) == pytest.approx(1e-4)
    assert "worst ε = 10, δ = 0.0001" in str(many)


def test_only_users_outside_charged_is_never_epsilon_zero_for_the_others():
    acc = PrivacyAccountant(["a", "b"], model="M")
    acc.charge({acc.register(entry(1.0)): np.array([1, 0])})
    acc.out_of_scope(Unit.RATING, np.array([True, False]), "a rule")
    text = str(acc)
    assert not re.search(r"ε = 0(?![.\d])", text) and contradictions(text) == []
    assert "nothing released through these entries to the other users yet" in text
    assert str(acc.headline()[0]) == ("ε = ∞ per rating: no guarantee for 1 user; nothing "
                                      "released yet for the others, in part")


# ------------------------------------------------------------------ the models
#: every model whose accountant reads `is_seeded(random_state)`, at ε = 1
MODELS = {
    "DPBaseline": lambda rs: DPBaseline(epsilon=1.0, random_state=rs),
    "DPItemKNN": lambda rs: DPItemKNN(epsilon=1.0, random_state=rs),
    "DPItemKNN factors": lambda rs: DPItemKNN(epsilon=1.0, similarity="factors",
                                              random_state=rs),
    "DPALS": lambda rs: DPALS(epsilon=1.0, random_state=rs),
    "LocalKNN": lambda rs: LocalKNN(epsilon=1.0, random_state=rs),
    "PrivateKNN sjlt": lambda rs: PrivateKNN(k=5, sim_options={"name": "sjlt", "epsilon": 1.0},
                                             random_state=rs, verbose=False),
    "MallowsRanker": lambda rs: MallowsRanker(epsilon=1.0, random_state=rs),
    "ImplicitKNN": lambda rs: ImplicitKNN(set_epsilon=1.0, random_state=rs),
    "PrivatePopularity": lambda rs: PrivatePopularity(1.0, cap=40, random_state=rs),
}


@pytest.fixture(scope="module")
def trainset():
    return synthetic(400, 30, 8000, random_state=0).build_full_trainset()


def fitted(name: str, random_state, trainset):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return MODELS[name](random_state).fit(trainset)


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("make", [lambda: np.random.default_rng(7),
                                  lambda: np.random.RandomState(7)],
                         ids=["Generator", "RandomState"])
def test_a_caller_generator_never_prints_an_unconditional_holds(name, make, trainset):
    """`random_state=np.random.default_rng(7)` printed *holds*, although anyone who knows
    the seed reproduces the release bit for bit."""
    report = fitted(name, make(), trainset).privacy_report()
    text = str(report)
    assert plain_holds(text) == [], text
    assert report.guarantee is None
    assert Status.CONDITIONAL in {entry.status for entry in report.entries}
    assert all(head.status != "holds" and not head.holds for head in report.headline())


@pytest.mark.parametrize("name", MODELS)
def test_fresh_noise_holds_and_an_int_seed_is_void(name, trainset):
    fresh = fitted(name, None, trainset).privacy_report()
    assert Status.HOLDS in {entry.status for entry in fresh.entries}
    assert Status.CONDITIONAL not in {entry.status for entry in fresh.entries}
    seeded = fitted(name, 7, trainset).privacy_report()
    assert {entry.status for entry in seeded.entries} <= {Status.VOID, Status.AS_PUBLISHED}
    assert seeded.guarantee is None and plain_holds(str(seeded)) == []


@pytest.mark.parametrize("name", MODELS)
def test_no_line_says_infinity_holds_and_the_header_counts_nothing(name, trainset):
    report = fitted(name, None, trainset).privacy_report()
    text = str(report)
    assert contradictions(text) == [], text
    assert text.splitlines()[0] == f"Privacy report: {report.model}"
    assert f"{trainset.n_users} users" not in text


def catalogues(trainset) -> dict:
    """The trainset's users and items as public catalogues (`users=`, `items=`)."""
    return {"users": [trainset.to_raw_uid(u) for u in trainset.all_users()],
            "items": [trainset.to_raw_iid(i) for i in trainset.all_items()]}


@pytest.mark.parametrize("name", [*MODELS, "DPALS (catalogues)"])
def test_every_models_tighter_line_is_tighter_at_the_same_delta_or_absent(name, trainset):
    """DPALS(epsilon=1) printed "tighter (dp-accounting PLD): ε ≤ 1 ... at δ = 1.1e-05"
    under a main line of δ = 1e-05: not tighter."""
    pytest.importorskip("dp_accounting")
    if name == "DPALS (catalogues)":
        model = DPALS(epsilon=1.0, **catalogues(trainset)).fit(trainset)
    else:
        model = fitted(name, None, trainset)
    text = str(model.privacy_report())
    lines = text.splitlines()
    for n, line in enumerate(lines):
        if "tighter (dp-accounting" not in line:
            continue
        main = next(lines[m] for m in range(n - 1, -1, -1)
                    if lines[m].startswith("Per user, composed"))
        eps, delta = map(float, re.search(r"worst ε = ([\d.e+-]+), δ = ([\d.e+-]+)",
                                          main.split("the other users")[-1]).groups())
        tight, at = map(float, re.search(r"ε ≤ ([\d.e+-]+) .* δ = ([\d.e+-]+)", line).groups())
        assert tight < eps and at <= delta, (main, line)


def _sole_holder() -> object:
    """12 users' sets; `u4` alone holds item `i8`, `u5` holds one item."""
    X = (np.random.default_rng(3).random((12, 8)) < 0.5).astype(float)
    X[:2] = 1.0
    X[5] = 0.0
    X[5, 3] = 1.0
    return trainset_of(np.column_stack([X, np.eye(12)[:, 4]]), scale=(1, 5))


@pytest.mark.parametrize("model, unit", [
    (lambda: PrivatePopularity(cap=3), Unit.USER),
    (lambda: PrivatePopularity(mechanism="reports"), Unit.SET_ITEM)])
def test_users_outside_the_guarantee_make_the_worst_user_infinite_in_words(model, unit):
    """Some users outside the guarantee: the first line printed the others' ε as "worst
    user; holds"."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = model().fit(_sole_holder()).privacy_report()
    outside = report.out_of_scope_users(unit)
    if not outside:
        pytest.skip("no user outside the guarantee here")
    (head,) = [head for head in report.headline() if head.unit == unit]
    assert head.epsilon == math.inf and head.outside == len(outside) and not head.holds
    assert math.isfinite(head.others[0]) and head.rule == report.scope_rule(unit)
    text = str(report)
    assert contradictions(text) == [], text
    assert text.splitlines()[1].startswith(
        f"Guarantee for everything the model releases: no guarantee for some users per {unit} "
        "(worst user: ε = ∞): ")
    assert "for the other users ε = " in text.splitlines()[1]
    assert f"{len(outside)} user" not in text          # the rule, never the count
