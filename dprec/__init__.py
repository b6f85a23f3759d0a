"""dprec: private, attack-resistant neighbourhood recommenders for Surprise."""

from . import datasets, mechanisms, metrics
from .attacks import BetaKNNAttack
from .knn import PrivateKNN
from .ledger import PrivacyLedger
from .ranking import MallowsRanker

__version__ = "0.1.0"

__all__ = ["BetaKNNAttack", "MallowsRanker", "PrivacyLedger", "PrivateKNN", "__version__",
           "datasets", "mechanisms", "metrics"]
