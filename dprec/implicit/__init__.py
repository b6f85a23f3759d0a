"""The implicit-feedback models (sets of items, no ratings) and their reports.

`base` (`ImplicitModel`: the item list, the trainset's sets and top-N lists), `knn`
([`ImplicitKNN`][dprec.ImplicitKNN]: kNN on sets), `popularity`
([`PrivatePopularity`][dprec.PrivatePopularity]), `scores` (the arithmetic of set
similarities and score sums) and `set_reports` (each user's set released by randomised
response).

Floor 5 of the package map in ``docs/development.md``. May import: `dprec.utils`,
`dprec.accountant`, `dprec.mechanisms`, `dprec.datasets`, `dprec.evaluation`,
`dprec.similarity`, `dprec.selectors`, `dprec.knn`, `dprec.endtoend`, `dprec.ranking`,
`dprec.audit`.
"""
