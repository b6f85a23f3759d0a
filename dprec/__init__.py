"""dprec: private, attack-resistant neighbourhood recommenders for Surprise."""

from .knn import PrivateKNN
from .ledger import PrivacyLedger

__version__ = "0.1.0"

__all__ = ["PrivacyLedger", "PrivateKNN", "__version__"]
