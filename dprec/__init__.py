"""dprec: private, attack-resistant neighbourhood recommenders for Surprise."""

# _environment first: it fixes SURPRISE_DATA_FOLDER before Surprise's import would crash on it
from . import _environment, datasets, mechanisms, metrics  # noqa: F401
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

__all__ = ["BetaKNNAttack", "DPALS", "DPBaseline", "DPItemKNN", "ImplicitKNN", "LocalKNN",
           "MallowsRanker", "NotFittedError", "PrivacyAccountant", "PrivateKNN",
           "PrivateKNNBaseline", "PrivateKNNWithMeans", "PrivateKNNWithZScore",
           "PrivatePopularity", "__version__", "datasets", "mechanisms", "metrics"]


def __getattr__(name: str):
    if name == "PrivacyLedger":  # the name before the accountant (0.1.0)
        import warnings

        warnings.warn("dprec.PrivacyLedger is now dprec.PrivacyAccountant", DeprecationWarning,
                      stacklevel=2)
        return PrivacyAccountant
    raise AttributeError(f"module 'dprec' has no attribute {name!r}")
