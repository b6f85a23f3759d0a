"""Accuracy against the number of users (see dprec.experiments.users_scaling)."""

from dprec.experiments.users_scaling import main

if __name__ == "__main__":
    main()
