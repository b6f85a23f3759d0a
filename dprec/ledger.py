"""The privacy ledger: what a fitted model spent, per protected unit.

The idea of diffprivlib's ``BudgetAccountant``, kept small: every private
component of a model records each mechanism it applies as one
:class:`LedgerEntry` -- (component, mechanism, ε, δ, protected unit,
applications per user, group of users) -- and :meth:`PrivacyLedger.total`
composes them: sequentially within a group, ``(Σ n·ε, Σ n·δ)`` (Dwork & Roth
2014, Thm 3.16), and in parallel across disjoint groups of users (McSherry,
SIGMOD 2009), so heterogeneous per-user budgets report the largest one.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import pandas as pd

from ._validation import check_delta, check_epsilon, check_int

#: the ``users`` value of an entry that applies to every user
ALL_USERS = "all"


@dataclass(frozen=True)
class LedgerEntry:
    """One mechanism applied by one component of a model.

    Attributes
    ----------
    component : str
        Which part of the model applied it (``"similarity"``, ``"selector"``...).
    mechanism : str
        The mechanism (``"randomized_response"``, ``"exponential"``...).
    epsilon, delta : float
        The guarantee of one application.
    unit : str
        The protected unit: what two neighbouring inputs differ in
        (``"one rating"``, ``"one item of a user's set"``...).
    applications : int
        How many times it is applied to each user's data.
    users : str
        Whom it applies to: ``"all"`` (every user) or the name of a group of
        users; different groups are disjoint.
    """

    component: str
    mechanism: str
    epsilon: float
    delta: float
    unit: str
    applications: int = 1
    users: str = ALL_USERS


class PrivacyLedger:
    """The list of mechanisms a model applied, composed sequentially.

    Examples
    --------
    >>> ledger = PrivacyLedger()
    >>> entry = ledger.record("selector", "exponential", epsilon=0.5, unit="one rating")
    >>> ledger.total()
    (0.5, 0.0)
    """

    def __init__(self) -> None:
        self._entries: list[LedgerEntry] = []

    def record(self, component: str, mechanism: str, epsilon: float, delta: float = 0.0,
               unit: str = "one rating", applications: int = 1,
               users: str = ALL_USERS) -> LedgerEntry:
        """Append one entry after checking its parameters; returns it."""
        entry = LedgerEntry(
            component=str(component),
            mechanism=str(mechanism),
            epsilon=check_epsilon(epsilon, "epsilon", allow_inf=True),
            delta=check_delta(delta, "delta"),
            unit=str(unit),
            applications=check_int(applications, "applications", minimum=1),
            users=str(users),
        )
        self._entries.append(entry)
        return entry

    @property
    def entries(self) -> tuple[LedgerEntry, ...]:
        """The recorded entries, in order."""
        return tuple(self._entries)

    def total(self) -> tuple[float, float]:
        """``(ε, δ)`` of the most exposed user.

        Entries for ``users="all"`` add up for everybody; entries for a named
        group add up within it; the groups are disjoint, so the total is the
        "all" sum plus the largest group sum.  ``(0.0, 0.0)`` for an empty
        ledger (nothing private was applied).
        """
        def sums(entries) -> tuple[float, float]:
            entries = list(entries)
            return (math.fsum(e.epsilon * e.applications for e in entries),
                    math.fsum(e.delta * e.applications for e in entries))

        shared = sums(e for e in self._entries if e.users == ALL_USERS)
        groups = {e.users for e in self._entries} - {ALL_USERS}
        worst = max((sums(e for e in self._entries if e.users == g) for g in groups),
                    default=(0.0, 0.0))
        return shared[0] + worst[0], min(shared[1] + worst[1], 1.0)

    def to_frame(self) -> pd.DataFrame:
        """The entries as a DataFrame, one row each."""
        columns = [f for f in LedgerEntry.__dataclass_fields__]
        return pd.DataFrame([asdict(e) for e in self._entries], columns=columns)

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self):
        return iter(self._entries)

    def __str__(self) -> str:
        if not self._entries:
            return "PrivacyLedger: no private mechanism applied (ε = 0)"
        eps, delta = self.total()
        table = self.to_frame().to_string(index=False)
        return f"{table}\ntotal per user: ε = {eps:g}, δ = {delta:g}"

    def __repr__(self) -> str:
        eps, delta = self.total()
        return f"PrivacyLedger(entries={len(self)}, epsilon={eps:g}, delta={delta:g})"
