"""The import paths of the modules that moved into packages in 0.2 (issue 54).

``import dprec.dp_baseline``, ``from dprec.topn import recommend_batch`` and every other
path of the table below still import, for one release, the module they became (the very
same module object: the same classes, so ``isinstance`` and pickles made before the move
keep working) with a `DeprecationWarning` naming the new path.  No file is left at the old
place: a finder on ``sys.meta_path`` (installed by ``dprec/__init__``) answers the old
names.  ``dprec.metrics`` stays a public name (``from dprec import metrics``) and imports
without a warning.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

#: old dotted name -> the module it is now
MOVED = {
    "dprec._arrays": "dprec.utils._arrays",
    "dprec._environment": "dprec.utils._environment",
    "dprec._kernels": "dprec.utils._kernels",
    "dprec._linalg": "dprec.utils._linalg",
    "dprec._plotting": "dprec.utils._plotting",
    "dprec._progress": "dprec.utils._progress",
    "dprec._ratings": "dprec.utils._ratings",
    "dprec._rng": "dprec.utils._rng",
    "dprec._surprise": "dprec.utils._surprise",
    "dprec._threads": "dprec.utils._threads",
    "dprec._validation": "dprec.utils._validation",
    "dprec.ledger": "dprec.accountant.ledger",
    "dprec.ledger_entries": "dprec.accountant.entries",
    "dprec.ledger_text": "dprec.accountant.report",
    "dprec.private_model": "dprec.accountant.private_model",
    "dprec.dp_baseline": "dprec.endtoend.dp_baseline",
    "dprec.dp_item_knn": "dprec.endtoend.dp_item_knn",
    "dprec.dp_als": "dprec.endtoend.dp_als",
    "dprec.local_knn": "dprec.endtoend.local_knn",
    "dprec.rating_space": "dprec.endtoend.rating_space",
    "dprec.noisy_effects": "dprec.endtoend.noisy_effects",
    "dprec.effects_release": "dprec.endtoend.effects_release",
    "dprec.covariance_release": "dprec.endtoend.covariance_release",
    "dprec.item_selection": "dprec.endtoend.item_selection",
    "dprec.implicit_base": "dprec.implicit.base",
    "dprec.implicit_knn": "dprec.implicit.knn",
    "dprec.implicit_popularity": "dprec.implicit.popularity",
    "dprec.implicit_scores": "dprec.implicit.scores",
    "dprec.set_reports": "dprec.implicit.set_reports",
    "dprec.metrics": "dprec.evaluation.metrics",
    "dprec.topn": "dprec.evaluation.topn",
    "dprec.baselines": "dprec.evaluation.baselines",
    "dprec.dataset_files": "dprec.datasets.files",
    "dprec.ratings_table": "dprec.datasets.ratings_table",
    "dprec.rating_generator": "dprec.datasets.generator",
    "dprec.surface_audit": "dprec.audit.surface",
    "dprec.data_usage": "dprec.audit.data_usage",
}
#: old names that stay public: they import silently
SILENT = frozenset({"dprec.metrics"})


class _Alias(importlib.abc.Loader):
    """Loads an old name as the module it became (imported under its new name)."""

    def __init__(self, old: str, new: str) -> None:
        self.old, self.new = old, new
        self._spec = None

    def create_module(self, spec):
        module = importlib.import_module(self.new)
        self._spec = module.__spec__
        return module

    def exec_module(self, module) -> None:
        # the import system set the alias's spec on the module: give it its own back
        module.__spec__ = self._spec
        if self.old not in SILENT:
            warnings.warn(f"{self.old} is now {self.new}; the old path will be removed "
                          "in the next release", DeprecationWarning, stacklevel=2)


class MovedModules(importlib.abc.MetaPathFinder):
    """Finds the old names of `MOVED`."""

    def find_spec(self, fullname, path=None, target=None):
        new = MOVED.get(fullname)
        if new is None:
            return None
        return importlib.util.spec_from_loader(fullname, _Alias(fullname, new))


def install() -> None:
    """Put the finder first on ``sys.meta_path`` (once): before any path-based finder (an
    editable install's maps every ``dprec.*`` name to its source tree)."""
    if not any(isinstance(finder, MovedModules) for finder in sys.meta_path):
        sys.meta_path.insert(0, MovedModules())
