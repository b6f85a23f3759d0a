"""The private plumbing every package shares, as `sklearn.utils`: nothing here is public.

`_validation` (parameter checks and their messages), `_rng` (seeds and noise sources),
`_arrays` (sparse and dense array helpers), `_ratings` (a trainset's ratings as arrays),
`_surprise` (the one adapter to Surprise's internals), `_kernels` (the Numba kernels),
`_linalg`, `_threads`, `_progress`, `_plotting`, `_environment` (the data folder, fixed
before Surprise is imported) and `_moved` (the module paths before 0.2, which warn).

Floor 0 of the package map in ``docs/development.md``. May import: nothing of dprec (the
standard library, NumPy, SciPy, Numba and Surprise only).
"""
