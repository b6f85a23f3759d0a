"""The experiments behind dprec's documentation and notebooks, importable and testable.

Each module has a ``run(...)`` function returning a pandas DataFrame, a
``plot(...)`` function, and a ``main(argv)`` command line (the scripts in the
repository's ``experiments/`` folder and the ``dprec`` subcommands call it).
"""
