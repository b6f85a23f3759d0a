"""Sjlt variance experiment (see dprec.experiments.sjlt_variance)."""

import sys

from dprec.experiments.sjlt_variance import main

if __name__ == "__main__":
    sys.exit(main())
