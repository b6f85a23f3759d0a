"""Odd constructor arguments for every public model, one at a time, through `fit` and
`test` (#53): each must either give finite estimates or raise a `TypeError`/`ValueError`
that names the parameter.  Prints every other answer (a crash, an unnamed message, a
non-finite estimate) and exits 1 if there is one.

    python tools/fuzz_arguments.py [Model ...]

The test suite runs a small form of it (`tests/test_odd_inputs.py`).
"""

from __future__ import annotations

import inspect
import sys
import warnings

import numpy as np

import dprec
from dprec import datasets

#: the public models
MODELS = ("DPALS", "DPBaseline", "DPItemKNN", "ImplicitKNN", "LocalKNN", "MallowsRanker",
          "PrivateKNN", "PrivateKNNBaseline", "PrivateKNNWithMeans", "PrivateKNNWithZScore",
          "PrivatePopularity")
#: the odd values tried for every parameter
VALUES = ("basic", -1, -1.5, float("nan"), float("inf"), [1], 0, 1e308, 1e-308, 10**20,
          True, {"a": 1}, (1, 2, 3))
#: (model, parameter, value) that only take long (a valid number of passes): not tried;
#: nor `verbose` (read as a truth value, any value prints)
SKIPPED = [("MallowsRanker", "n_epochs", VALUES[9])]


def parameters(model: type) -> list[str]:
    """The keyword parameters of `model`'s constructor."""
    return [p.name for p in inspect.signature(model.__init__).parameters.values()
            if p.name != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)]


def answer(model: type, name: str, value, trainset) -> str | None:
    """None if `model(name=value)` fits with finite estimates or raises a `TypeError` /
    `ValueError` naming `name`; else what went wrong."""
    kwargs = {name: value}
    if name != "random_state":
        kwargs["random_state"] = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            fitted = model(**kwargs).fit(trainset)
            est = np.array([p.est for p in fitted.test(trainset.build_testset()[:30])])
        except (TypeError, ValueError) as error:
            return None if name in str(error) else f"unnamed {type(error).__name__}: {error}"
        except Exception as error:       # noqa: BLE001 - what the harness looks for
            return f"{type(error).__name__}: {error}"
    return None if np.isfinite(est).all() else "non-finite estimates"


def main(names: list[str]) -> int:
    trainset = datasets.synthetic(30, 40, 400, random_state=0).build_full_trainset()
    found = 0
    for model_name in names or MODELS:
        model = getattr(dprec, model_name)
        for name in parameters(model):
            for value in VALUES:
                if name == "verbose" or any((m, n) == (model_name, name) and value is v
                                            for m, n, v in SKIPPED):
                    continue
                problem = answer(model, name, value, trainset)
                if problem is not None:
                    found += 1
                    print(f"{model_name}({name}={value!r}): {problem[:200]}", flush=True)
    print(f"{found} finding(s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
