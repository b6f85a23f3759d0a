"""End-to-end DP configurations against ε (see dprec.experiments.end_to_end)."""

from dprec.experiments.end_to_end import main

if __name__ == "__main__":
    main()
