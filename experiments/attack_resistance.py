"""β-kNN attack resistance of the neighbour selectors (see dprec.experiments.attack_resistance)."""

from dprec.experiments.attack_resistance import main

if __name__ == "__main__":
    main()
