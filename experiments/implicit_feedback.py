"""Implicit-feedback kNN experiment (see dprec.experiments.implicit_feedback)."""

import sys

from dprec.experiments.implicit_feedback import main

if __name__ == "__main__":
    sys.exit(main())
