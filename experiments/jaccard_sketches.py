"""Jaccard sketches experiment (see dprec.experiments.jaccard_sketches)."""

import sys

from dprec.experiments.jaccard_sketches import main

if __name__ == "__main__":
    sys.exit(main())
