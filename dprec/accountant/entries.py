"""What a model's private mechanisms guarantee: the units, statuses and entries of a ledger.

The vocabulary of [`dprec.accountant.ledger`][dprec.accountant.ledger] (which re-exports
every name here): a
[`LedgerEntry`][dprec.accountant.entries.LedgerEntry] says what one application of one
mechanism guarantees, for which [`Unit`][dprec.accountant.entries.Unit], with which
[`Status`][dprec.accountant.entries.Status]; an [`Output`][dprec.accountant.entries.Output] says
what covers something a model releases.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from enum import Enum

from ..utils._rng import NoiseSource
from ..utils._validation import check_delta, check_epsilon

__all__ = ["APPLIES_TO", "CALLER_GENERATOR", "SEEDED", "TIGHT_DELTA", "BudgetExceededError",
           "LedgerEntry", "Output", "PrivacyLeakWarning", "Status", "Unit", "for_noise",
           "noise_of", "worst_status"]

#: The δ at which `PrivacyAccountant.tight_epsilon` reports by default
#: (plus the entries' own δ).
TIGHT_DELTA = 1e-6
#: Why an entry of a model fitted with an int ``random_state`` is void.
SEEDED = ("seeded noise (random_state is an int): reproducible, for experiments; anyone who "
          "knows or guesses the seed reproduces the noise, so nothing is guaranteed (fit with "
          "random_state=None for the guarantee)")
#: Why an entry of a model fitted with the caller's generator holds only on a condition.
CALLER_GENERATOR = (
    "noise from the caller's generator (random_state is a numpy RandomState or Generator): "
    "anyone who knows its state (e.g. the seed it was built from) reproduces the noise bit "
    "for bit, so the guarantee is conditional on that state being secret (fit with "
    "random_state=None for an unconditional guarantee)")


class Unit(Enum):
    """What two neighbouring datasets differ in."""

    RATING = "one rating"
    SET_ITEM = "one item of a user's set"
    RANKING_SWAP = "a swap of two items in one user's ranking"
    USER = "one user (all of their ratings)"

    def __str__(self) -> str:
        return self.value


class Status(Enum):
    """Whether dprec guarantees an entry's (ε, δ).

    From the strongest to the weakest: `HOLDS` (a guarantee), `CONDITIONAL` (a
    guarantee if the caller's generator, the source of the noise, has a secret
    state), `AS_PUBLISHED` (a paper's claim dprec does not guarantee) and `VOID`
    (voided by the configuration, e.g. an int seed).
    """

    HOLDS = "holds"
    CONDITIONAL = "holds only if the generator's state is secret"
    AS_PUBLISHED = "as published"
    VOID = "void"

    def __str__(self) -> str:
        return self.value


#: Whose data one application of an entry touches, as the model charges it.
APPLIES_TO = {
    "user": "the releasing user, once per fit",
    "candidates": "every candidate of a neighbour set another user asks for",
    "chosen": "every neighbour chosen for another user's query",
}


class PrivacyLeakWarning(UserWarning):
    """A configuration voids a privacy guarantee (diffprivlib's name for it)."""


class BudgetExceededError(ValueError):
    """A release would take some user past the accountant's budget."""


@dataclass(frozen=True)
class LedgerEntry:
    """What one application of one mechanism of a model guarantees.

    Attributes
    ----------
    component : str
        The part of the model that applies it (``"similarity"``, ``"selector"``...).
    mechanism : str
        The mechanism, e.g. ``"randomized_response (RRMinHash)"``.
    epsilon, delta : float
        One application, computed by the mechanism's privacy map.
    unit : Unit
        The protected unit.
    status : Status
        Whether dprec guarantees it (see the module docstring).
    applies_to : str
        A key of `APPLIES_TO`: whose data one application touches.
    note : str
        For `Status.HOLDS` the argument in brief (and the scope of the
        unit, e.g. ``"sets of at least τ = 20 items"``); otherwise the reason
        dprec does not guarantee it.
    """

    component: str
    mechanism: str
    epsilon: float
    delta: float
    unit: Unit
    status: Status
    applies_to: str
    note: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon, "epsilon",
                                                          allow_inf=True))
        object.__setattr__(self, "delta", check_delta(self.delta, "delta"))
        if not isinstance(self.unit, Unit):
            raise TypeError(f"unit must be a dprec.accountant.ledger.Unit, got {self.unit!r}")
        if not isinstance(self.status, Status):
            raise TypeError(f"status must be a dprec.accountant.ledger.Status, got {self.status!r}")
        if self.applies_to not in APPLIES_TO:
            raise ValueError(f"applies_to must be one of {sorted(APPLIES_TO)}, "
                             f"got {self.applies_to!r}")


@dataclass(frozen=True)
class Output:
    """Something a model releases, and what protects it.

    Attributes
    ----------
    name : str
        E.g. ``"predictions"``, ``"neighbour lists"``.
    covered_by : tuple of int
        Indices of the entries whose release it is post-processing of.
    gap : str or None
        Why the entries do not cover it (``None``: covered).
    """

    name: str
    covered_by: tuple[int, ...] = ()
    gap: str | None = None


def worst_status(statuses: Iterable[Status]) -> Status:
    """The weakest of ``statuses`` (holds < conditional < as published < void); holds when
    empty."""
    order = [Status.HOLDS, Status.CONDITIONAL, Status.AS_PUBLISHED, Status.VOID]
    return max(statuses, key=order.index, default=Status.HOLDS)


def for_noise(entry: LedgerEntry, source: NoiseSource | bool) -> LedgerEntry:
    """``entry`` as it stands when its noise comes from ``source``.

    An entry that holds stays so with fresh noise (`NoiseSource.FRESH`, or ``False``);
    with the caller's generator (`NoiseSource.GENERATOR`) it becomes
    `Status.CONDITIONAL` with the reason `CALLER_GENERATOR`; with an int seed
    (`NoiseSource.SEED`, or ``True``) `Status.VOID` with the reason `SEEDED`.  Any other
    status is kept.

    Raises
    ------
    TypeError
        For a ``source`` that is neither a `NoiseSource` nor a bool, naming ``source``.
    """
    source = noise_of(source, "source")
    if entry.status is not Status.HOLDS or source is NoiseSource.FRESH:
        return entry
    status, reason = ((Status.VOID, SEEDED) if source is NoiseSource.SEED
                      else (Status.CONDITIONAL, CALLER_GENERATOR))
    return replace(entry, status=status,
                   note=reason + (f"; {entry.note}" if entry.note else ""))


def noise_of(seeded: NoiseSource | bool, name: str = "seeded") -> NoiseSource:
    """``seeded`` as a `NoiseSource`: a bool reads ``True`` as an int seed (the accountant's
    former ``seeded=True``) and ``False`` as fresh noise.

    Raises
    ------
    TypeError
        For anything else, naming the parameter (``name``).
    """
    if isinstance(seeded, NoiseSource):
        return seeded
    if isinstance(seeded, bool):
        return NoiseSource.SEED if seeded else NoiseSource.FRESH
    raise TypeError(f"{name} must be a bool or a dprec.accountant.ledger.NoiseSource "
                    "(dprec.utils._rng."
                    f"is_seeded(random_state)), got {type(seeded).__name__}")
