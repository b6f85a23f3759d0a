"""Ranking differential privacy experiment (see dprec.experiments.ranking_dp)."""

import sys

from dprec.experiments.ranking_dp import main

if __name__ == "__main__":
    sys.exit(main())
