"""The privacy ledger: what a fitted model spent, per protected unit.

The idea of diffprivlib's ``BudgetAccountant``, kept small: every private
component of a model records each mechanism it applies as one
:class:`LedgerEntry` -- (component, mechanism, ε, δ, protected unit,
applications per user) -- and :meth:`PrivacyLedger.total` composes them by
basic sequential composition, ``(Σ n·ε, Σ n·δ)`` (Dwork & Roth 2014, Thm 3.16).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import pandas as pd

from ._validation import check_delta, check_epsilon, check_int


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
    """

    component: str
    mechanism: str
    epsilon: float
    delta: float
    unit: str
    applications: int = 1


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
               unit: str = "one rating", applications: int = 1) -> LedgerEntry:
        """Append one entry after checking its parameters; returns it."""
        entry = LedgerEntry(
            component=str(component),
            mechanism=str(mechanism),
            epsilon=check_epsilon(epsilon, "epsilon", allow_inf=True),
            delta=check_delta(delta, "delta"),
            unit=str(unit),
            applications=check_int(applications, "applications", minimum=1),
        )
        self._entries.append(entry)
        return entry

    @property
    def entries(self) -> tuple[LedgerEntry, ...]:
        """The recorded entries, in order."""
        return tuple(self._entries)

    def total(self) -> tuple[float, float]:
        """``(ε, δ)`` of all entries by basic sequential composition.

        ``(0.0, 0.0)`` for an empty ledger (nothing private was applied).
        """
        eps = math.fsum(e.epsilon * e.applications for e in self._entries)
        delta = math.fsum(e.delta * e.applications for e in self._entries)
        return eps, min(delta, 1.0)

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
