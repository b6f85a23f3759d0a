"""Private similarity backends under cross-validation (see dprec.experiments.backends_cv)."""

from dprec.experiments.backends_cv import main

if __name__ == "__main__":
    main()
