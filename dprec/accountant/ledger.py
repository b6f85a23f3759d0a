r"""The privacy accountant of a fitted model.

In the manner of diffprivlib's ``BudgetAccountant`` and of OpenDP's privacy
maps: every private component of a model registers what one application of
its mechanism guarantees (a [`LedgerEntry`][]: ε and δ computed by the
mechanism's own privacy map in [`dprec.mechanisms`][], the protected
[`Unit`][], and a [`Status`][] saying whether dprec guarantees it), and
the model charges the entry to every user whose data each release touches,
as it answers (``fit``, ``test``, ``predict``, ``neighbours``...).  The
accountant then composes, **per user**:

* basic (sequential) composition: a user with ``n_e`` applications of entry
  ``e`` has ``ε_u = Σ_e n_e ε_e`` and ``δ_u = Σ_e n_e δ_e`` (Dwork & Roth
  2014, Thm 3.16); users whose data a release does not touch are not charged
  for it (parallel composition, McSherry 2009);
* a tighter bound from Google's ``dp-accounting`` (its privacy-loss
  distributions, Koskela et al. 2020; Doroshenko et al. 2022) when installed
  (a core dependency): [`PrivacyAccountant.tight_epsilon`][].

Entries protect different units (one rating, one item of a set, a swap in a
ranking, one user); entries of different units are never added
([`PrivacyAccountant.total`][] reports one unit at a time).

What is *guaranteed* is said explicitly.  An entry's status is

* `Status.HOLDS`: a guarantee for its unit, with the argument in the
  docstring of the component and an audit in the tests;
* `Status.CONDITIONAL`: the same guarantee, but only if the state of the
  caller's generator (a ``RandomState`` or ``Generator`` given as
  ``random_state``) is secret: whoever knows it reproduces the noise;
* `Status.AS_PUBLISHED`: a paper's claim that dprec reproduces but does
  not guarantee, with the reason in `LedgerEntry.note`;
* `Status.VOID`: a guarantee that would hold but is voided by how the
  component was configured (e.g. a public bound read from the data, an int
  seed).

Outputs the model releases that no mechanism covers (predictions averaging
raw ratings, diagnostics computed from exact similarities) are declared with
[`PrivacyAccountant.declare_output`][]; the model's end-to-end guarantee
([`PrivacyAccountant.guarantee`][]) exists only when every output is
covered by entries that hold.  [`PrivacyAccountant.headline`][] states it as
the report's first line does: per unit, the worst of *all* users (∞ when some
user is outside the guarantee), what that ε is, and how many users are outside
(the curator's count: the printed report gives the rule, never the count).

The vocabulary (units, statuses, entries, outputs) lives in
[`dprec.accountant.entries`][dprec.accountant.entries] and the printed report in
[`dprec.accountant.report`][dprec.accountant.report]; every name is importable from here.
See [Privacy accounting](../privacy.md) for the units, the statuses, composition and the report.
"""

from __future__ import annotations

import math
import numbers
import threading
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict

import numpy as np
import pandas as pd

from ..utils._rng import NoiseSource
from ..utils._validation import check_budget, check_delta, check_int
from .entries import (
    APPLIES_TO,
    CALLER_GENERATOR,
    SEEDED,
    TIGHT_DELTA,
    BudgetExceededError,
    LedgerEntry,
    Output,
    PrivacyLeakWarning,
    Status,
    Unit,
    for_noise,
    noise_of,
    worst_status,
)
from .report import Headline, headline, report_text

__all__ = [
    "APPLIES_TO",
    "BudgetExceededError",
    "CALLER_GENERATOR",
    "Headline",
    "LedgerEntry",
    "NoiseSource",
    "Output",
    "PrivacyAccountant",
    "PrivacyLeakWarning",
    "SEEDED",
    "Status",
    "TIGHT_DELTA",
    "Unit",
    "compose",
    "past_budget",
]

#: Value discretisation of dp-accounting's privacy-loss distributions; pessimistic,
#: so the bound stays an upper bound (coarser is faster, never unsafe).
_PLD_DISCRETISATION = 1e-3
#: Largest ε of one entry handed to dp-accounting (its distributions hold e^ε in floats,
#: which overflow at ε ≈ 709.8): above it, basic composition is the bound.
_PLD_MAX_EPSILON = 700.0


class PrivacyAccountant:
    """Per-user privacy accounting of one fitted model.

    Parameters
    ----------
    users : int or sequence
        The number of users, or their (raw) ids in inner-id order.  They are the
        curator's: [`n_users`][], [`per_user`][] and [`out_of_scope_users`][] read
        them, and the printed report states no count of them.
    budget : (float, float), optional
        ``(ε, δ)`` per user and unit; [`charge`][] raises
        [`BudgetExceededError`][] rather than let a release exceed it
        (basic composition).
    model : str
        What the report is about, e.g. ``"PrivateKNN(selector='ppns')"``.
    seeded : bool or NoiseSource, default False
        Where the model's noise comes from (``dprec.utils._rng.is_seeded(random_state)``).
        An int ``random_state`` (`NoiseSource.SEED`, or ``True``): anyone who knows
        or guesses the seed reproduces the noise (a small int is found by brute
        force, e.g. from a published hash seed), so every entry registered as
        `Status.HOLDS` is recorded as `Status.VOID` with the reason `SEEDED`.  The
        caller's ``RandomState`` or ``Generator`` (`NoiseSource.GENERATOR`): whoever
        knows its state reproduces the noise, so such an entry is recorded as
        `Status.CONDITIONAL` with the reason `CALLER_GENERATOR`.  ``False``
        (`NoiseSource.FRESH`, ``random_state=None``): entries keep their status.

    Examples
    --------
    >>> from dprec.accountant.ledger import LedgerEntry, PrivacyAccountant, Status, Unit
    >>> acc = PrivacyAccountant(3)
    >>> e = acc.register(LedgerEntry("selector", "exponential", 0.5, 0.0, Unit.RATING,
    ...                              Status.HOLDS, "candidates"))
    >>> acc.charge({e: np.array([2, 0, 1])})
    >>> acc.total(Unit.RATING)
    (1.0, 0.0)
    """

    def __init__(self, users: int | Sequence, budget: tuple[float, float] | None = None,
                 model: str = "model", seeded: bool = False) -> None:
        if isinstance(users, (numbers.Number, str, bytes)):
            users = range(check_int(users, "users"))
        ids = list(users)
        if not ids:
            raise ValueError("users must not be empty")
        self.user_ids = np.empty(len(ids), dtype=object)
        self.user_ids[:] = ids          # ids as given: 1 and "1" stay apart
        self.budget = None if budget is None else check_budget(budget)
        self.model = str(model)
        self.noise_source = noise_of(seeded)
        self.notes: list[str] = []
        self.conditions: list[str] = []
        self._entries: list[LedgerEntry] = []
        self._counts: list[np.ndarray] = []
        self._outputs: list[Output] = []
        self._out_of_scope: dict[Unit, tuple[np.ndarray, str]] = {}
        self.releases = 0          # calls of charge that released something
        self.lock = threading.RLock()

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        del state["lock"]          # pickled with the model (surprise.dump, joblib)
        return state

    def __setstate__(self, state: dict) -> None:
        if "seeded" in state:                  # pickled before the noise source
            state["noise_source"] = noise_of(bool(state.pop("seeded")))
        self.__dict__.update(state)
        self.lock = threading.RLock()

    # ------------------------------------------------------------ recording
    @property
    def seeded(self) -> bool:
        """Whether the caller fixed the noise (an int seed, or their generator): see
        ``noise_source`` and the ``seeded`` parameter."""
        return self.noise_source is not NoiseSource.FRESH

    @property
    def n_users(self) -> int:
        """The number of users the accountant follows: the curator's figure (a count of
        the data), never printed in the report."""
        return len(self.user_ids)

    @property
    def entries(self) -> tuple[LedgerEntry, ...]:
        """The registered entries, in order."""
        return tuple(self._entries)

    @property
    def outputs(self) -> tuple[Output, ...]:
        """What the model releases, with what covers it."""
        return tuple(self._outputs)

    def register(self, entry: LedgerEntry) -> int:
        """Add a mechanism the model may apply; returns its index (for [`charge`][])."""
        if not isinstance(entry, LedgerEntry):
            raise TypeError(f"entry must be a LedgerEntry, got {type(entry).__name__}")
        entry = for_noise(entry, self.noise_source)
        self._entries.append(entry)
        self._counts.append(np.zeros(self.n_users, dtype=np.int64))
        return len(self._entries) - 1

    def declare_output(self, name: str, covered_by: Iterable[int] = (),
                       gap: str | None = None) -> None:
        """Declare an output of the model and what protects it (``gap``: why nothing does)."""
        covered = tuple(int(c) for c in covered_by)
        for index in covered:
            self._entry(index)
        self._outputs.append(Output(str(name), covered, gap))

    def release_once(self, indices: Iterable[int], outputs: Iterable[str], note: str,
                     covered_by: Iterable[int] | None = None) -> None:
        """Charge the entries ``indices`` once to every user (one release made at fit) and
        declare ``outputs`` post-processing of them (or of ``covered_by``, e.g. with an
        entry charged before to some users only): no answer adds to the charge."""
        indices = list(indices)
        covered = indices if covered_by is None else list(covered_by)
        everyone = np.ones(self.n_users, dtype=np.int64)
        self.charge({index: everyone for index in indices})
        for output in outputs:
            self.declare_output(output, covered_by=covered)
        self.notes.append(str(note))

    def add_condition(self, condition: str) -> None:
        """State a condition of every guarantee in the report (e.g. "the item catalogue is
        public", "sets of at least τ = 20 items, τ public"): printed beside the guarantee."""
        condition = str(condition)
        if condition not in self.conditions:
            self.conditions.append(condition)

    def out_of_scope(self, unit: Unit, users: np.ndarray, reason: str) -> None:
        """Mark ``users`` (a boolean mask) as outside the scope of ``unit``'s guarantee
        (e.g. sets smaller than τ): their ε is ∞ whatever is charged."""
        mask = np.asarray(users)
        if mask.dtype != bool or mask.shape != (self.n_users,):
            raise ValueError(f"users must be a boolean mask of {self.n_users} users, got "
                             f"{mask.dtype} {mask.shape}")
        if mask.any():
            if unit in self._out_of_scope:      # several reasons: the union, both said
                before, said = self._out_of_scope[unit]
                mask, reason = before | mask, f"{said}; {reason}"
            self._out_of_scope[unit] = (mask.copy(), str(reason))

    def charge(self, applications: Mapping[int, np.ndarray]) -> None:
        """Record one release: ``applications[e][u]`` more applications of entry ``e`` to ``u``.

        All or nothing: if the release would take some user past the budget
        (for some unit), [`BudgetExceededError`][] is raised and nothing is
        recorded (answers already given stay valid).
        """
        added = {}
        for index, counts in applications.items():
            self._entry(index)
            counts = np.asarray(counts)
            if counts.shape != (self.n_users,) or not np.issubdtype(counts.dtype, np.integer):
                raise ValueError(f"applications[{index}] must be {self.n_users} integer counts, "
                                 f"got {counts.dtype} {counts.shape}")
            if counts.size and counts.min() < 0:
                raise ValueError("applications must be >= 0")
            added[index] = counts.astype(np.int64)
        if not any(c.any() for c in added.values()):
            return
        with self.lock:
            if self.budget is not None:
                self._check_budget(added)
            for index, counts in added.items():
                self._counts[index] += counts
            self.releases += 1

    def _entry(self, index: int) -> LedgerEntry:
        if not 0 <= index < len(self._entries):
            raise IndexError(f"no entry {index} (the accountant has {len(self._entries)})")
        return self._entries[index]

    def _check_budget(self, added: Mapping[int, np.ndarray]) -> None:
        budget_eps, budget_delta = self.budget
        for unit in self.units():
            eps, delta = self._per_user(unit, added)
            over = np.flatnonzero(past_budget(eps, delta, self.budget) & ~self._outside(unit))
            if len(over):
                user = over[0]
                raise BudgetExceededError(
                    f"this release would take user {self.user_ids[user]!r} to ε = "
                    f"{eps[user]:.4g}, δ = {delta[user]:.3g} ({unit}), past the budget "
                    f"(ε = {budget_eps:g}, δ = {budget_delta:g}); nothing was released "
                    "(answers already given stay valid)")

    # ------------------------------------------------------------ composition
    def units(self) -> list[Unit]:
        """The units of the registered entries, in order of first registration."""
        return list(dict.fromkeys(e.unit for e in self._entries))

    def applications(self, index: int) -> np.ndarray:
        """Per user, how many times entry ``index`` was applied to their data (a copy)."""
        self._entry(index)
        return self._counts[index].copy()

    def _of_unit(self, unit: Unit | None) -> tuple[Unit | None, list[int]]:
        units = self.units()
        if unit is None:
            if len(units) > 1:
                raise ValueError(f"the entries protect different units {[str(u) for u in units]}"
                                 ", which are never added: give unit=")
            unit = units[0] if units else None
        elif not isinstance(unit, Unit):
            raise TypeError(f"unit must be a dprec.accountant.ledger.Unit, got {unit!r}")
        return unit, [n for n, e in enumerate(self._entries) if e.unit == unit]

    def _per_user(self, unit: Unit | None, added: Mapping[int, np.ndarray] | None = None
                  ) -> tuple[np.ndarray, np.ndarray]:
        """Basic composition per user for ``unit``: ``(Σ n ε, min(1, Σ n δ))``; ε = ∞
        where no entry protects the unit and for users outside its scope."""
        unit, indices = self._of_unit(unit)
        eps = np.zeros(self.n_users) if indices else np.full(self.n_users, math.inf)
        delta = np.zeros(self.n_users)
        for n in indices:
            counts = self._counts[n] + (added.get(n, 0) if added else 0)
            entry = self._entries[n]
            if entry.epsilon == math.inf:
                eps = np.where(counts > 0, math.inf, eps)
            else:
                eps += counts * entry.epsilon
            delta += counts * entry.delta
        if unit in self._out_of_scope:
            eps = np.where(self._out_of_scope[unit][0], math.inf, eps)
        return eps, np.minimum(delta, 1.0)

    def per_user(self, unit: Unit | None = None) -> pd.DataFrame:
        """Each user's composed (ε, δ) for ``unit`` and how many releases touched them:
        the curator's view (one row per user of the data), never printed in the report.

        Returns
        -------
        pandas.DataFrame indexed by user id, columns ``epsilon``, ``delta``
        (basic composition) and ``releases`` (applications of all the unit's
        entries).
        """
        unit, indices = self._of_unit(unit)
        eps, delta = self._per_user(unit)
        releases = sum((self._counts[n] for n in indices), np.zeros(self.n_users, np.int64))
        return pd.DataFrame({"epsilon": eps, "delta": delta, "releases": releases},
                            index=pd.Index(self.user_ids, name="user"))

    def total(self, unit: Unit | None = None) -> tuple[float, float]:
        """``(ε, δ)`` of the most exposed user *in scope* for ``unit`` (basic composition).

        Users outside the unit's scope ([`out_of_scope`][]: e.g. a set at
        the τ boundary, the sole rater of an item without a public catalogue)
        have no guarantee (ε = ∞ in [`per_user`][]); the guarantee is stated
        for the others, with the rule that puts a user outside it printed in
        the report.  Which users those are depends on the data, so it is the
        curator's to read ([`out_of_scope_users`][]), not part of the
        report.  ``(inf, 0.0)`` when no entry protects that unit, or no user
        is in scope: nothing is guaranteed (never ``ε = 0``).  Raises
        ``ValueError`` if the entries protect several units and ``unit`` is
        not given.
        """
        unit, _ = self._of_unit(unit)
        eps, delta = self._per_user(unit)
        inside = ~self._outside(unit)
        if not inside.any():
            return math.inf, 0.0
        return float(eps[inside].max()), float(delta[inside].max())

    def _outside(self, unit: Unit | None) -> np.ndarray:
        """The mask of the users outside ``unit``'s scope (all False when none)."""
        if unit in self._out_of_scope:
            return self._out_of_scope[unit][0]
        return np.zeros(self.n_users, dtype=bool)

    def scope_rule(self, unit: Unit | None = None) -> str | None:
        """Why users are outside ``unit``'s guarantee (the rule the report prints), or None."""
        unit, _ = self._of_unit(unit)
        return self._out_of_scope[unit][1] if unit in self._out_of_scope else None

    def out_of_scope_users(self, unit: Unit | None = None) -> list:
        """The ids of the users outside ``unit``'s guarantee, with ε = ∞ (the curator's
        view: who they are depends on the data, so the printed report gives the rule only)."""
        unit, _ = self._of_unit(unit)
        return self.user_ids[self._outside(unit)].tolist()

    def status(self, unit: Unit | None = None) -> Status:
        """The weakest status among the entries of ``unit`` that were applied."""
        _, indices = self._of_unit(unit)
        return worst_status(self._entries[n].status for n in indices if self._counts[n].any())

    def tight_epsilon(self, unit: Unit | None = None, delta: float | None = None,
                      user=None) -> float:
        r"""A tighter ε for one user, or a bound for every user, from dp-accounting.

        Composes each entry's ``(ε_e, δ_e)`` privacy-loss distribution
        ``n_e`` times (dp-accounting's ``from_privacy_parameters`` and
        ``self_compose``, pessimistic discretisation) and reads ε at
        ``delta`` (default `TIGHT_DELTA` plus the basic δ).  With
        ``user=None``, ``n_e`` is the largest count of entry ``e`` over all
        users: composition only grows with the counts, so this bounds every
        user's ε, the most exposed user's included (two users may each have
        the largest count of a different entry).
        Never larger than the basic ε (the smaller of the two is returned);
        ``inf`` when ``delta`` is not above the probability that one of the
        composed (ε, δ) guarantees fails, ``1 − Π (1 − δ_e)^{n_e}``.

        dp-accounting's distributions hold $e^{\varepsilon_e}$ in floating point: an
        entry of $\varepsilon_e > 700$ (or a composition it cannot represent) overflows.
        Then basic composition is returned, with a ``RuntimeWarning`` saying so (an
        upper bound still, only not a tighter one); the report says it in its text.

        Raises
        ------
        ImportError
            Without the optional dependency ``dp-accounting``.
        """
        value, fallback = self.tight_bound(unit, delta, user)
        if fallback:
            warnings.warn(f"tight_epsilon: {fallback}; basic composition is returned",
                          RuntimeWarning, stacklevel=2)
        return value

    def tight_bound(self, unit: Unit | None = None, delta: float | None = None,
                    user=None) -> tuple[float, str | None]:
        """[`tight_epsilon`][]'s bound, and why it fell back to basic composition
        (``None`` when dp-accounting composed it), without a warning."""
        from dp_accounting.pld import common
        from dp_accounting.pld import privacy_loss_distribution as pld

        unit, indices = self._of_unit(unit)
        eps, _ = self._per_user(unit)
        basic_eps = (self.total(unit)[0] if user is None
                     else float(eps[self._user_row(user)]))   # every user in scope
        counts, basic_delta = self._tight_counts(indices, user)
        target = basic_delta + TIGHT_DELTA if delta is None else check_delta(delta, "delta")
        if not math.isfinite(basic_eps) or basic_eps == 0.0:
            return basic_eps, None
        # the probability that some (ε, δ) entry fails: no finite ε below it
        failure = -math.expm1(sum(count * math.log1p(-entry.delta) for entry, count in counts))
        if target >= 1.0 or target <= failure:
            return math.inf, None
        bound = float(sum(entry.epsilon * count for entry, count in counts))  # basic
        largest = max(entry.epsilon for entry, _ in counts)
        if largest > _PLD_MAX_EPSILON:
            return bound, (f"an entry's ε = {largest:.4g} is past what dp-accounting "
                           f"represents (e^ε overflows above ε ≈ {_PLD_MAX_EPSILON:g})")
        try:
            composed = None
            for entry, count in counts:
                params = common.DifferentialPrivacyParameters(entry.epsilon, entry.delta)
                one = pld.from_privacy_parameters(
                    params, value_discretization_interval=_PLD_DISCRETISATION).self_compose(count)
                composed = one if composed is None else composed.compose(one)
            tight = composed.get_epsilon_for_delta(target)
        except ArithmeticError as error:     # OverflowError, FloatingPointError
            return bound, f"dp-accounting overflowed composing ε = {bound:.4g} ({error})"
        return float(min(bound, tight)), None

    def _tight_counts(self, indices: list[int], user) -> tuple[list, float]:
        """``[(entry, applications)]`` composed for ``user`` (the largest per entry when
        None), and their basic δ (not capped at 1: callers ask whether it reaches 1)."""
        if user is None:
            counts = [(self._entries[n], int(self._counts[n].max())) for n in indices]
        else:
            row = self._user_row(user)
            counts = [(self._entries[n], int(self._counts[n][row])) for n in indices]
        counts = [(entry, count) for entry, count in counts if count]
        return counts, sum(entry.delta * count for entry, count in counts)

    def _user_row(self, user) -> int:
        matches = np.flatnonzero(self.user_ids == user)
        if not len(matches):
            raise ValueError(f"user {user!r} is not in this accountant")
        return int(matches[0])

    # ------------------------------------------------------------ reporting
    def end_to_end(self) -> Status | None:
        """Whether the model guarantees *everything* it released: `Status.HOLDS`,
        `Status.CONDITIONAL` (it would, if the caller's generator has a secret state), or
        ``None`` (some output is not covered, or an entry neither holds nor holds on that
        condition: no end-to-end guarantee, ε = ∞)."""
        good = (Status.HOLDS, Status.CONDITIONAL)
        if not self._outputs or any(e.status not in good for e in self._entries):
            return None
        for output in self._outputs:
            if output.gap is not None or any(self._entries[c].status not in good
                                             for c in output.covered_by):
                return None
        return worst_status(e.status for e in self._entries)

    @property
    def guarantee(self) -> dict[Unit, tuple[float, float]] | None:
        """Per unit, the worst ``(ε, δ)`` of the users *in scope* ([`total`][]) for
        *everything* the model released, or ``None`` when there is no unconditional
        end-to-end guarantee ([`end_to_end`][] is not `Status.HOLDS`: some output is
        not covered, some entry does not hold, or the noise came from the caller's
        generator).  Users outside a unit's scope have none (ε = ∞); [`headline`][]
        gives the worst of all users and how many are outside."""
        if self.end_to_end() is not Status.HOLDS:
            return None
        return {unit: self.total(unit) for unit in self.units()}

    def headline(self) -> tuple[Headline, ...]:
        """What the report's first line states, per unit: the worst ``(ε, δ)`` of *all*
        users (∞ when some user is outside the guarantee), its status, how many users are
        outside (the curator's count, not printed in the report) and the worst of the
        others ([`headline`][dprec.accountant.report.headline]).  Every label of a model
        (``dprec demo``, the experiments) is read from it."""
        return headline(self)

    def to_frame(self) -> pd.DataFrame:
        """One row per entry, with per-user applications (median and max)."""
        rows = []
        for entry, counts in zip(self._entries, self._counts):
            row = asdict(entry)
            row["unit"], row["status"] = str(entry.unit), str(entry.status)
            row["applications_median"] = float(np.median(counts))
            row["applications_max"] = int(counts.max())
            rows.append(row)
        columns = [f for f in LedgerEntry.__dataclass_fields__] + ["applications_median",
                                                                   "applications_max"]
        return pd.DataFrame(rows, columns=columns)

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self):
        return iter(self._entries)

    def __str__(self) -> str:
        """The report ([`report_text`][dprec.accountant.report.report_text])."""
        return report_text(self)

    def __repr__(self) -> str:
        return (f"PrivacyAccountant(model={self.model!r}, users={self.n_users}, "
                f"entries={len(self)}, releases={self.releases})")


def past_budget(epsilon, delta, budget: tuple[float, float]) -> np.ndarray:
    """Where `(epsilon, delta)` (numbers, or arrays of them) is past `budget` `(ε, δ)`,
    up to the rounding of basic composition (a relative $10^{-12}$ on ε, $10^{-15}$ on δ):
    what [`PrivacyAccountant`][dprec.PrivacyAccountant] refuses to charge."""
    budget_eps, budget_delta = budget
    return ((np.asarray(epsilon) > budget_eps * (1 + 1e-12))
            | (np.asarray(delta) > budget_delta + 1e-15))


def compose(accountants: Sequence[PrivacyAccountant]) -> PrivacyAccountant:
    """One accountant for several models fitted on overlapping users (e.g. the folds of a
    cross-validation): users are matched by id, applications added, entries kept apart.

    Outputs are not carried over (each model's coverage is its own); notes are.
    """
    accountants = list(accountants)
    if not accountants:
        raise ValueError("accountants must not be empty")
    ids = list(dict.fromkeys(uid for acc in accountants for uid in acc.user_ids.tolist()))
    position = {uid: n for n, uid in enumerate(ids)}
    out = PrivacyAccountant(ids, model=" + ".join(acc.model for acc in accountants))
    for acc in accountants:
        rows = np.fromiter((position[uid] for uid in acc.user_ids.tolist()), np.int64,
                           acc.n_users)
        for entry, counts in zip(acc.entries, acc._counts):
            index = out.register(entry)
            out._counts[index][rows] = counts
        for unit, (mask, reason) in acc._out_of_scope.items():
            combined = np.zeros(out.n_users, dtype=bool)
            combined[rows[mask]] = True
            if reason not in out._out_of_scope.get(unit, (None, ""))[1]:
                out.out_of_scope(unit, combined, reason)
            else:                                   # the same reason: the union only
                out._out_of_scope[unit] = (out._out_of_scope[unit][0] | combined,
                                           out._out_of_scope[unit][1])
        out.notes.extend(note for note in acc.notes if note not in out.notes)
        for condition in acc.conditions:
            out.add_condition(condition)
        out.noise_source = max(out.noise_source, acc.noise_source)
        out.releases += acc.releases
    return out
