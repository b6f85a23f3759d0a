"""Neighbour selectors under cross-validation (see dprec.experiments.selectors_cv)."""

from dprec.experiments.selectors_cv import main

if __name__ == "__main__":
    main()
