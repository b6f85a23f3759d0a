"""The privacy accountant: what a release spends, how it composes, and the printed report.

`ledger` ([`PrivacyAccountant`][dprec.PrivacyAccountant]: the entries a model charges and
their composition), `entries` (the vocabulary of an entry: what was released, by which
mechanism, at what ε, δ or ρ, and whether it is covered), `report` (the report text) and
`private_model` ([`PrivateModel`][dprec.accountant.private_model.PrivateModel], the one
base of the private models: their accountant, their budget and
[`NotFittedError`][dprec.NotFittedError]).

Floor 1 of the package map in ``docs/development.md``. May import: `dprec.utils`.
"""
