"""What a model's private mechanisms guarantee: the units, statuses and entries of a ledger.

The vocabulary of [`dprec.ledger`][dprec.ledger] (which re-exports every name here): a
[`LedgerEntry`][dprec.ledger_entries.LedgerEntry] says what one application of one
mechanism guarantees, for which [`Unit`][dprec.ledger_entries.Unit], with which
[`Status`][dprec.ledger_entries.Status]; an [`Output`][dprec.ledger_entries.Output] says
what covers something a model releases.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum

from ._validation import check_delta, check_epsilon

__all__ = ["APPLIES_TO", "SEEDED", "TIGHT_DELTA", "BudgetExceededError", "LedgerEntry",
           "Output", "PrivacyLeakWarning", "Status", "Unit", "worst_status"]

#: The δ at which `PrivacyAccountant.tight_epsilon` reports by default
#: (plus the entries' own δ).
TIGHT_DELTA = 1e-6
#: Why an entry of a model fitted with an int ``random_state`` is void.
SEEDED = ("seeded noise (random_state is an int): reproducible, for experiments; anyone who "
          "knows or guesses the seed reproduces the noise, so nothing is guaranteed (fit with "
          "random_state=None for the guarantee)")
class Unit(Enum):
    """What two neighbouring datasets differ in."""

    RATING = "one rating"
    SET_ITEM = "one item of a user's set"
    RANKING_SWAP = "a swap of two items in one user's ranking"
    USER = "one user (all of their ratings)"

    def __str__(self) -> str:
        return self.value


class Status(Enum):
    """Whether dprec guarantees an entry's (ε, δ)."""

    HOLDS = "holds"
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
            raise TypeError(f"unit must be a dprec.ledger.Unit, got {self.unit!r}")
        if not isinstance(self.status, Status):
            raise TypeError(f"status must be a dprec.ledger.Status, got {self.status!r}")
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
    """The weakest of ``statuses`` (holds < as published < void); holds when empty."""
    order = [Status.HOLDS, Status.AS_PUBLISHED, Status.VOID]
    return max(statuses, key=order.index, default=Status.HOLDS)
