"""The module paths before the packages (0.1): they still import, warn, and give the same
objects as the new paths (`dprec.utils._moved`)."""

from __future__ import annotations

import importlib
import pickle
import subprocess
import sys
import warnings

import pytest

from dprec.utils._moved import MOVED, SILENT


def _fresh_import(old: str):
    sys.modules.pop(old, None)
    return importlib.import_module(old)


@pytest.mark.parametrize("old", sorted(set(MOVED) - SILENT))
def test_an_old_path_warns_and_is_the_new_module(old):
    with pytest.warns(DeprecationWarning, match=f"^{old} is now {MOVED[old]};"):
        module = _fresh_import(old)
    assert module is importlib.import_module(MOVED[old])
    assert module.__name__ == module.__spec__.name == MOVED[old]


def test_the_old_classes_are_the_new_ones():
    from dprec.endtoend.dp_baseline import DPBaseline
    from dprec.evaluation.topn import recommend_batch

    with pytest.warns(DeprecationWarning, match="dprec.dp_baseline is now"):
        old = _fresh_import("dprec.dp_baseline")
    assert old.DPBaseline is DPBaseline
    with pytest.warns(DeprecationWarning, match="dprec.topn is now"):
        sys.modules.pop("dprec.topn", None)
        from dprec.topn import recommend_batch as old_recommend_batch
    assert old_recommend_batch is recommend_batch


def test_a_pickle_naming_an_old_module_loads():
    from dprec import DPBaseline

    data = pickle.dumps(DPBaseline(epsilon=2.0), protocol=0).replace(   # a text pickle
        b"dprec.endtoend.dp_baseline", b"dprec.dp_baseline")
    assert b"dprec.dp_baseline" in data
    sys.modules.pop("dprec.dp_baseline", None)
    with pytest.warns(DeprecationWarning):
        model = pickle.loads(data)
    assert type(model) is DPBaseline and model.epsilon == 2.0


def test_the_public_submodules_import_silently():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        from dprec import audit, datasets, metrics
        sys.modules.pop("dprec.metrics", None)
        import dprec.metrics
    assert metrics is dprec.metrics is importlib.import_module("dprec.evaluation.metrics")
    assert audit.__name__ == "dprec.audit" and datasets.__name__ == "dprec.datasets"


def test_an_unknown_old_name_still_fails():
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("dprec.no_such_module")


def test_the_finder_leaves_import_dprec_light():
    code = ("import sys, dprec, dprec.cli; "
            "print(sorted(m for m in ('numpy', 'surprise', 'numba', 'pandas') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"
