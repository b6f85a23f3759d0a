"""The printed privacy report: the text of a
[`PrivacyAccountant`][dprec.accountant.ledger.PrivacyAccountant] (its `str`), and its headline.

No ε is printed without what it is: never "ε = 0" (a unit nothing was charged
for says so), and every composed ε carries its status beside it — the guarantee
for everything released, a bound for some entries only (no end-to-end
guarantee), or not a guarantee (void, as published).

No line contradicts itself.  The first line states, per unit, the worst of *all*
users: when some users are outside the guarantee (ε = ∞) it says so in words, with
the rule that puts them there, and states the guarantee of the others as theirs
("for the other users"); an infinite ε is never printed next to *holds*.  Noise
from the caller's generator makes every guarantee conditional ("holds only if the
generator's state is secret").  The dp-accounting line is printed only when it is
tighter than the composed line at the same δ.

The report is a shared release: it prints no count of the data — neither how many
users the accountant follows nor how many are outside the guarantee, only the rule
(who they are and how many is the curator's to read: `n_users`, `per_user()`,
`out_of_scope_users()` and [`Headline.outside`][dprec.accountant.report.Headline]).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .entries import APPLIES_TO, Status, Unit, worst_status

__all__ = ["Headline", "headline", "report_text"]

#: `Headline.status` of a unit whose entries hold while some output is not covered
IN_PART = "in part"
#: The short name of each unit in a label (`Headline.__str__`)
SHORT_UNITS = {Unit.USER: "user", Unit.RATING: "rating", Unit.SET_ITEM: "item of a set",
               Unit.RANKING_SWAP: "ranking swap"}
#: Why users with an entry of ε = ∞ applied to them have no guarantee
NOT_PRIVATE = "an entry of ε = ∞ (no privacy) was applied to them"


@dataclass(frozen=True)
class Headline:
    r"""The worst user's guarantee for one unit, as the report's first line states it.

    Attributes
    ----------
    unit : Unit
        The protected unit.
    epsilon, delta : float
        The worst $(\varepsilon, \delta)$ of *all* users (basic composition): $\infty$
        when some user is outside the guarantee.  ``epsilon = 0`` when nothing was
        released yet.
    status : str
        What that ε is, in the report's words: ``"holds"`` (the guarantee for everything
        released), ``"holds only if the generator's state is secret"`` (the same, on
        that condition), ``"in part"`` (the unit's entries hold, but some output is not
        covered: no end-to-end guarantee), ``"as published"`` or ``"void"`` (not a
        guarantee).  It describes the users who have a guarantee; see ``outside``.
    outside : int
        How many users have no guarantee (ε = ∞): outside the unit's scope, or charged
        an entry of ε = ∞.  The curator's count, never printed in the report.
    others : (float, float)
        The worst $(\varepsilon, \delta)$ of the users who are not outside (all of
        them when ``outside == 0``; ``(inf, 0.0)`` when every user is outside).
    rule : str or None
        Why users are outside (printed in the report), ``None`` when none is.
    """

    unit: Unit
    epsilon: float
    delta: float
    status: str
    outside: int
    others: tuple[float, float]
    rule: str | None = None

    @property
    def holds(self) -> bool:
        """Whether every user has an unconditional guarantee, at a finite ε, for
        everything the model released."""
        return (self.status == str(Status.HOLDS) and self.outside == 0
                and math.isfinite(self.epsilon))

    def __str__(self) -> str:
        """A label for the curator's tables, e.g. ``"ε = 1, δ = 1e-05 per user, holds"``
        or ``"ε = ∞ per user: no guarantee for 12 users; ε = 1 for the others, holds"``
        (the count of users outside is the curator's: the report does not print it)."""
        unit = SHORT_UNITS[self.unit]
        if self.outside == 0:
            return f"{_pair(self.epsilon, self.delta)} per {unit}, {self.status}"
        if not math.isfinite(self.others[0]):
            return f"ε = ∞ per {unit}: no guarantee for any user ({self.outside})"
        return (f"ε = ∞ per {unit}: no guarantee for {self.outside} user"
                f"{'s' * (self.outside != 1)}; {_pair(*self.others)} for the others, "
                f"{self.status}")


def _pair(epsilon: float, delta: float) -> str:
    """``"ε = 1, δ = 1e-05"`` (no δ when 0), or ``"nothing released yet"`` at ε = 0."""
    if epsilon == 0.0:
        return "nothing released yet"
    return f"ε = {_number(epsilon)}" + (f", δ = {delta:.3g}" if delta else "")


def _number(value: float) -> str:
    """``value`` for the report: 4 significant digits, ``∞`` for infinity."""
    return "∞" if value == math.inf else f"{value:.4g}"


def _unit_status(accountant, unit: Unit) -> Status:
    """The weakest status of ``unit``'s applied entries; of all its entries when none
    was applied yet (what its first release will be)."""
    indices = [n for n, entry in enumerate(accountant.entries) if entry.unit == unit]
    applied = [n for n in indices if accountant.applications(n).any()]
    return worst_status(accountant.entries[n].status for n in applied or indices)


def headline(accountant) -> tuple[Headline, ...]:
    """Per unit of ``accountant`` (in order of registration), what its report's first line
    states: the worst user of all, its status, how many users are outside and the worst
    of the others (see [`Headline`][dprec.accountant.report.Headline]).  Empty when no private
    mechanism was registered."""
    end_to_end = accountant.end_to_end()
    out = []
    for unit in accountant.units():
        frame = accountant.per_user(unit)
        eps, delta = frame.epsilon.to_numpy(), frame.delta.to_numpy()
        finite = np.isfinite(eps)
        others = ((float(eps[finite].max()), float(delta[finite].max())) if finite.any()
                  else (math.inf, 0.0))
        status = _unit_status(accountant, unit)
        if status in (Status.HOLDS, Status.CONDITIONAL):
            status = IN_PART if end_to_end is None else str(worst_status([status,
                                                                           end_to_end]))
        rules = [accountant.scope_rule(unit)]
        if (~finite).sum() > len(accountant.out_of_scope_users(unit)):
            rules.append(NOT_PRIVATE)
        rule = "; ".join(r for r in rules if r) or None
        out.append(Headline(unit, float(eps.max()), float(delta.max()), str(status),
                            int((~finite).sum()), others, rule))
    return tuple(out)


def report_text(accountant) -> str:
    """The report of ``accountant``: the model, the end-to-end guarantee and its
    conditions, the outputs not covered, each entry, then each unit's composed ε."""
    lines = [f"Privacy report: {accountant.model}"]
    heads = headline(accountant)
    end_to_end = accountant.end_to_end()
    lines.append(_guarantee_line(heads, end_to_end))
    lines.extend(f"  condition: {condition}" for condition in accountant.conditions)
    if accountant.budget is not None:
        lines.append(f"  budget: ε = {accountant.budget[0]:.4g}, δ = {accountant.budget[1]:.3g} "
                     "per user (a charge past it is refused)")
    entries = accountant.entries
    for output in accountant.outputs:
        if output.gap is not None:
            lines.append(f"  not covered: {output.name}: {output.gap}")
        else:
            weak = sorted({str(entries[c].status) for c in output.covered_by
                           if entries[c].status not in (Status.HOLDS, Status.CONDITIONAL)})
            if weak:
                lines.append(f"  {output.name}: covered only by entries that do not hold "
                             f"({', '.join(weak)})")
    if not entries:
        lines.append("No private mechanism ran.")
    for index, entry in enumerate(entries):
        lines.append(f"- {entry.component}: {entry.mechanism}: ε = {entry.epsilon:.4g}, "
                     f"δ = {entry.delta:.3g} per application ({entry.unit}), "
                     f"{entry.status}; {_applied_text(entry, accountant.applications(index))}")
        if entry.note:
            lines.append(f"    {entry.note}")
    for head in heads:
        lines.extend(_unit_lines(accountant, head, end_to_end))
    lines.extend(f"Note: {note}" for note in accountant.notes)
    return "\n".join(lines)


def _guarantee_line(heads: tuple[Headline, ...], end_to_end: Status | None) -> str:
    """The report's first line: per unit, the worst user of all; when some users are
    outside, that in words with the rule, then the guarantee of the others."""
    line = "Guarantee for everything the model releases: "
    if end_to_end is None:
        return line + "none (ε = ∞)."
    parts = []
    for head in heads:
        if head.outside == 0:
            parts.append(f"nothing released yet per {head.unit}" if head.epsilon == 0.0 else
                         f"ε = {head.epsilon:.4g}, δ = {head.delta:.3g} per {head.unit} "
                         f"(worst user; {end_to_end})")
        elif not math.isfinite(head.others[0]):
            parts.append(f"none for any user per {head.unit} (ε = ∞): {head.rule}")
        else:
            others = ("nothing released yet" if head.others[0] == 0.0 else
                      f"ε = {head.others[0]:.4g}, δ = {head.others[1]:.3g} (the worst of "
                      f"them; {end_to_end})")
            parts.append(f"no guarantee for some users per {head.unit} (worst user: ε = ∞): "
                         f"{head.rule}; for the other users {others}")
    return line + "; ".join(parts)


def _applied_text(entry, counts: np.ndarray) -> str:
    """Whom ``entry`` is applied to and how often it was, e.g. "applied to every candidate
    of a neighbour set another user asks for; so far 2 times to the median user, 7 to the
    most exposed"."""
    median = float(np.median(counts))
    return (f"applied to {APPLIES_TO[entry.applies_to]}; so far {median:g} time"
            f"{'' if median == 1 else 's'} to the median user, {counts.max()} to the most "
            "exposed")


def _applied(accountant, unit) -> list[int]:
    """The indices of ``unit``'s entries that were applied to someone."""
    return [n for n, entry in enumerate(accountant.entries)
            if entry.unit == unit and accountant.applications(n).any()]


def _unit_lines(accountant, head: Headline, end_to_end: Status | None) -> list[str]:
    """The report's lines for the users' composed (ε, δ) of ``head.unit``."""
    unit = head.unit
    line = f"Per user, composed ({unit}): "
    released = bool(_applied(accountant, unit))
    eps, delta = head.others
    tag = _tag(accountant, unit, end_to_end)
    if not released:
        lines = [line + "nothing released through these entries yet"]
    elif not math.isfinite(eps):
        lines = [line + "worst ε = ∞ for every user (no guarantee: outside it, below)"]
    elif eps == 0.0:                          # only users outside were charged
        lines = [line + "worst ε = ∞ (no guarantee for some users, below); nothing released "
                 "through these entries to the other users yet"]
    else:
        composed = accountant.per_user(unit).epsilon.to_numpy()
        median = float(np.median(composed[np.isfinite(composed)]))
        typical = ("most users untouched so far" if median == 0.0
                   else f"median ε = {_number(median)}")
        worst = f"worst ε = {_number(eps)}, δ = {delta:.3g} ({tag}); {typical}"
        lines = [line + (worst if head.outside == 0 else
                         f"worst ε = ∞ (no guarantee for some users, below); the other "
                         f"users: {worst}")]
    if head.rule is not None:
        lines.append("    outside the guarantee, ε = ∞ (who they are depends on the data: "
                     f"out_of_scope_users() lists them for the curator): {head.rule}")
    if released:
        tight = _tight_text(accountant, unit, (eps, delta), tag, head.outside > 0)
        lines.extend([] if tight is None else ["    " + tight])
    return lines


def _tag(accountant, unit, end_to_end: Status | None) -> str:
    """What the composed ε of ``unit`` is: the guarantee for everything released (on the
    generator's condition when its noise came from the caller's generator), a bound for
    its applied entries only (some output is not covered, or covered by entries that do
    not hold), or not a guarantee (void, as published)."""
    status = accountant.status(unit)
    if status in (Status.AS_PUBLISHED, Status.VOID):
        return f"{status}: not a guarantee"
    if end_to_end is Status.HOLDS:
        return "holds: the guarantee for everything released"
    if end_to_end is Status.CONDITIONAL:
        return (f"{Status.CONDITIONAL}: the guarantee for everything released, on that "
                "condition")
    parts = dict.fromkeys(accountant.entries[n].component for n in _applied(accountant, unit))
    holds = f"{Status.CONDITIONAL}," if status is Status.CONDITIONAL else "holds"
    return f"{holds} for the {' and '.join(parts)} entries only: no end-to-end guarantee"


def _tight_text(accountant, unit, composed: tuple[float, float], tag: str,
                scoped: bool) -> str | None:
    """The dp-accounting bound of ``unit`` when it is tighter than the composed line (a
    smaller ε at the same δ), why no composition bounds it, or ``None`` (omitted)."""
    eps, delta = composed
    if not math.isfinite(eps) or eps == 0.0:
        return None
    if sum(accountant.entries[n].delta * int(accountant.applications(n).max())
           for n in _applied(accountant, unit)) >= 1.0:
        return "(the entries' δ add up to 1: no composition bounds it)"
    try:
        tight, fallback = accountant.tight_bound(unit, delta=delta)
    except ImportError:
        return "(install dp-accounting, a dependency of dprec, for a tighter bound)"
    if fallback:
        return f"(basic composition is the bound here: {fallback})"
    if not tight < eps or _number(tight) == _number(eps):
        return None                       # not tighter at the same δ: omitted
    users = "every other user" if scoped else "every user"
    return (f"tighter (dp-accounting PLD): ε ≤ {_number(tight)} for {users} at the same "
            f"δ = {delta:.3g} ({tag})")
