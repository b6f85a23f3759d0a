"""The experiments behind dprec's documentation and notebooks, importable and testable.

Each module has a ``run(...)`` function returning a pandas DataFrame, a
``plot(...)`` function, and a ``main(argv)`` command line (the scripts in the
repository's ``experiments/`` folder and the ``dprec`` subcommands call it).

Floor 6 of the package map in ``docs/development.md``. May import: `dprec.utils`,
`dprec.accountant`, `dprec.mechanisms`, `dprec.datasets`, `dprec.evaluation`,
`dprec.similarity`, `dprec.selectors`, `dprec.knn`, `dprec.endtoend`, `dprec.ranking`,
`dprec.attacks`, `dprec.audit`, `dprec.implicit`.
"""
