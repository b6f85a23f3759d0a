"""dprec: private, attack-resistant neighbourhood recommenders for Surprise.

The models and submodules are imported when first used (``from dprec import DPBaseline``,
``dprec.datasets``): ``import dprec`` alone, and the command line's ``dprec --help``,
load neither Numba nor Surprise nor pandas.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

# _environment first: it fixes SURPRISE_DATA_FOLDER before Surprise's import would crash on it
from . import _environment  # noqa: F401

if TYPE_CHECKING:      # what the names below resolve to, for readers and type checkers
    from . import datasets, mechanisms, metrics
    from .attacks import BetaKNNAttack
    from .dp_als import DPALS
    from .dp_baseline import DPBaseline
    from .dp_item_knn import DPItemKNN
    from .implicit_knn import ImplicitKNN
    from .implicit_popularity import PrivatePopularity
    from .knn import PrivateKNN, PrivateKNNBaseline, PrivateKNNWithMeans, PrivateKNNWithZScore
    from .ledger import PrivacyAccountant
    from .local_knn import LocalKNN
    from .private_model import NotFittedError
    from .ranking import MallowsRanker

__version__ = "0.1.0"

#: every public name of the package -> the submodule that defines it (imported on first use)
_LAZY = {"BetaKNNAttack": "attacks", "DPALS": "dp_als", "DPBaseline": "dp_baseline",
         "DPItemKNN": "dp_item_knn", "ImplicitKNN": "implicit_knn", "LocalKNN": "local_knn",
         "MallowsRanker": "ranking", "PrivacyAccountant": "ledger", "PrivateKNN": "knn",
         "PrivateKNNBaseline": "knn", "PrivateKNNWithMeans": "knn",
         "PrivateKNNWithZScore": "knn", "PrivatePopularity": "implicit_popularity",
         "NotFittedError": "private_model"}
#: the submodules reachable as attributes of ``dprec`` without their own import
_SUBMODULES = ("audit", "datasets", "mechanisms", "metrics")

__all__ = ["BetaKNNAttack", "DPALS", "DPBaseline", "DPItemKNN", "ImplicitKNN", "LocalKNN",
           "MallowsRanker", "NotFittedError", "PrivacyAccountant", "PrivateKNN",
           "PrivateKNNBaseline", "PrivateKNNWithMeans", "PrivateKNNWithZScore",
           "PrivatePopularity", "__version__", "datasets", "mechanisms", "metrics"]


def __getattr__(name: str):
    """A public name (`_LAZY`) or submodule (`_SUBMODULES`), imported on first use."""
    if name in _LAZY:
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f".{name}", __name__)
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
