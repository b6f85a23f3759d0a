"""The accuracy-against-security frontier (see dprec.experiments.frontier)."""

from dprec.experiments.frontier import main

if __name__ == "__main__":
    main()
