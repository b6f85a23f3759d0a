"""dprec: private, attack-resistant neighbourhood recommenders for Surprise.

The models and submodules are imported when first used (``from dprec import DPBaseline``,
``dprec.datasets``): ``import dprec`` alone, and the command line's ``dprec --help``,
load neither Numba nor Surprise nor pandas.

One package per family: the models (`knn`, `endtoend`, `implicit`, `ranking`), their parts
(`similarity`, `selectors`, `mechanisms`, `accountant`), `attacks`, `audit`, `datasets`,
`evaluation`, `experiments`, and the private helpers in `utils`; ``docs/development.md``
maps them and who may import whom.  The module paths before 0.2 (``dprec.dp_baseline``,
``dprec.topn``, ``dprec.ledger``, ...) still import, with a `DeprecationWarning`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

# _environment first: it fixes SURPRISE_DATA_FOLDER before Surprise's import would crash on it
from .utils import (
    _environment,  # noqa: F401
    _moved,
)

_moved.install()   # the modules' paths before 0.2 (dprec.dp_baseline, ...): they warn

if TYPE_CHECKING:      # what the names below resolve to, for readers and type checkers
    from . import datasets, mechanisms
    from .accountant.ledger import PrivacyAccountant
    from .accountant.private_model import NotFittedError
    from .attacks import BetaKNNAttack
    from .endtoend.dp_als import DPALS
    from .endtoend.dp_baseline import DPBaseline
    from .endtoend.dp_item_knn import DPItemKNN
    from .endtoend.local_knn import LocalKNN
    from .evaluation import metrics
    from .implicit.knn import ImplicitKNN
    from .implicit.popularity import PrivatePopularity
    from .knn import PrivateKNN, PrivateKNNBaseline, PrivateKNNWithMeans, PrivateKNNWithZScore
    from .ranking import MallowsRanker

__version__ = "0.1.0"

#: every public name of the package -> the submodule that defines it (imported on first use)
_LAZY = {"BetaKNNAttack": "attacks", "DPALS": "endtoend.dp_als",
         "DPBaseline": "endtoend.dp_baseline", "DPItemKNN": "endtoend.dp_item_knn",
         "ImplicitKNN": "implicit.knn", "LocalKNN": "endtoend.local_knn",
         "MallowsRanker": "ranking", "PrivacyAccountant": "accountant.ledger",
         "PrivateKNN": "knn", "PrivateKNNBaseline": "knn", "PrivateKNNWithMeans": "knn",
         "PrivateKNNWithZScore": "knn", "PrivatePopularity": "implicit.popularity",
         "NotFittedError": "accountant.private_model"}
#: the submodules reachable as attributes of ``dprec`` without their own import
_SUBMODULES = {"audit": "audit", "datasets": "datasets", "mechanisms": "mechanisms",
               "metrics": "evaluation.metrics"}

__all__ = ["BetaKNNAttack", "DPALS", "DPBaseline", "DPItemKNN", "ImplicitKNN", "LocalKNN",
           "MallowsRanker", "NotFittedError", "PrivacyAccountant", "PrivateKNN",
           "PrivateKNNBaseline", "PrivateKNNWithMeans", "PrivateKNNWithZScore",
           "PrivatePopularity", "__version__", "datasets", "mechanisms", "metrics"]


def __getattr__(name: str):
    """A public name (`_LAZY`) or submodule (`_SUBMODULES`), imported on first use."""
    if name in _LAZY:
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f".{_SUBMODULES[name]}", __name__)
    elif name == "PrivacyLedger":  # the name before the accountant (0.1.0)
        import warnings

        warnings.warn("dprec.PrivacyLedger is now dprec.PrivacyAccountant", DeprecationWarning,
                      stacklevel=2)
        return __getattr__("PrivacyAccountant")
    else:
        raise AttributeError(f"module 'dprec' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY, *_SUBMODULES})
