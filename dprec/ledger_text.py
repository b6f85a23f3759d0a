"""The printed privacy report: the text of a
[`PrivacyAccountant`][dprec.ledger.PrivacyAccountant] (its `str`).

No ε is printed without what it is: never "ε = 0" (a unit nothing was charged
for says so), and every composed ε carries its status beside it — the guarantee
for everything released, a bound for some entries only (no end-to-end
guarantee), or not a guarantee (void, as published).  The text reads only
what the accountant publishes: its entries, outputs, applications, the worst
user *in scope*, the rule that puts users outside it (never who they are:
that depends on the data), its conditions and notes.
"""

from __future__ import annotations

import math

import numpy as np

from .ledger_entries import APPLIES_TO, TIGHT_DELTA, Status

__all__ = ["report_text"]


def _number(value: float) -> str:
    """``value`` for the report: 4 significant digits, ``∞`` for infinity."""
    return "∞" if value == math.inf else f"{value:.4g}"


def report_text(accountant) -> str:
    """The report of ``accountant``: the model, the end-to-end guarantee and its
    conditions, the outputs not covered, each entry, then each unit's composed ε."""
    n = accountant.n_users
    lines = [f"Privacy report: {accountant.model}, {n} user" + "s" * (n != 1)]
    guarantee = accountant.guarantee
    if guarantee is None:
        lines.append("Guarantee for everything the model releases: none (ε = ∞).")
    else:
        parts = [f"nothing released yet per {unit}" if eps == 0.0 else
                 f"ε = {eps:.4g}, δ = {delta:.3g} per {unit} (worst user; holds)"
                 for unit, (eps, delta) in guarantee.items()]
        lines.append("Guarantee for everything the model releases: " + "; ".join(parts))
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
                           if entries[c].status is not Status.HOLDS})
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
    for unit in accountant.units():
        lines.extend(_unit_lines(accountant, unit, guarantee))
    lines.extend(f"Note: {note}" for note in accountant.notes)
    return "\n".join(lines)


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


def _unit_lines(accountant, unit, guarantee) -> list[str]:
    """The report's lines for the users' composed (ε, δ) of ``unit``."""
    head = f"Per user, composed ({unit}): "
    released = bool(_applied(accountant, unit))
    eps, delta = accountant.total(unit)
    rule = accountant.scope_rule(unit)
    if not released:
        lines = [head + "nothing released through these entries yet"]
    else:
        frame = accountant.per_user(unit)
        inside = frame.epsilon[~frame.index.isin(accountant.out_of_scope_users(unit))]
        median = float(inside.median()) if len(inside) else math.inf
        typical = ("most users untouched so far" if median == 0.0
                   else f"median ε = {_number(median)}")
        lines = [head + f"worst ε = {_number(eps)}, δ = {delta:.3g} "
                 f"({_tag(accountant, unit, guarantee)}); {typical}"]
    if rule is not None:
        lines.append("    outside the guarantee, ε = ∞ (who they are depends on the data: "
                     f"out_of_scope_users() lists them for the curator): {rule}")
    if released:
        lines.append("    " + _tight_text(accountant, unit, eps, guarantee, rule is not None))
    return lines


def _tag(accountant, unit, guarantee) -> str:
    """What the composed ε of ``unit`` is: the guarantee for everything released, a bound
    for its applied entries only (some output is not covered, or covered by entries that
    do not hold), or not a guarantee (void, as published)."""
    status = accountant.status(unit)
    if status is not Status.HOLDS:
        return f"{status}: not a guarantee"
    if guarantee is not None:
        return "holds: the guarantee for everything released"
    parts = dict.fromkeys(accountant.entries[n].component for n in _applied(accountant, unit))
    return f"holds for the {' and '.join(parts)} entries only: no end-to-end guarantee"


def _tight_text(accountant, unit, eps: float, guarantee, scoped: bool) -> str:
    """The dp-accounting bound of ``unit``, or why basic composition is the bound."""
    delta = sum(accountant.entries[n].delta * int(accountant.applications(n).max())
                for n in _applied(accountant, unit))
    if not math.isfinite(eps):
        return "(basic composition is the bound here)"
    if delta >= 1.0:
        return "(the entries' δ add up to 1: no composition bounds it)"
    try:
        tight, fallback = accountant.tight_bound(unit)
    except ImportError:
        return "(install dp-accounting, a dependency of dprec, for a tighter bound)"
    if fallback:
        return f"(basic composition is the bound here: {fallback})"
    scope = " in scope" if scoped else ""
    return (f"tighter (dp-accounting PLD): ε ≤ {_number(tight)} for every user{scope} at "
            f"δ = {delta + TIGHT_DELTA:.3g} ({_tag(accountant, unit, guarantee)})")
