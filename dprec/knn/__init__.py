"""`PrivateKNN`: Surprise's kNN family with private neighbour selection and similarity.

One algorithm class, composed of a similarity backend (`dprec.similarity`), a
neighbour selector (`dprec.selectors`) and one of Surprise's kNN prediction
rules (`KNNBasic`, `KNNWithMeans`, `KNNWithZScore`, `KNNBaseline`), user- or
item-based.  With the exact similarities and the top-k selector it reproduces
the corresponding Surprise class prediction for prediction, computed for whole
test sets at once.

The package, one idea per module (each imports only those below it):

| module | its job |
| --- | --- |
| `family` | `KNNWithMeans`, `KNNWithZScore`, `KNNBaseline` as `PrivateKNN` with their rule |
| `model` | `PrivateKNN`: parameters, `fit` as orchestration, Surprise's API |
| `queries` | the kNN API: `kneighbors`, `estimate_arrays`, `estimate_rules`, top-N, selections |
| `parameters` | what each parameter may be, and `check_params` |
| `biases` | the baselines $b_u$, $b_i$, as Surprise's `compute_baselines` fits them |
| `neighbourhoods` | `neighbourhood=`: the engines' one interface |
| `item_neighbourhood` | the neighbours of $u$ among the raters of $i$, per query |
| `user_neighbourhood` | one neighbour set per user, chosen once and kept |
| `accounting` | what the model may release, and the charge of each new query |
| `selection` | the selector's choice among sorted candidates, with α, β, partitions |
| `rules` | the rules: basic, means, zscore, baseline, centred; min_sim, fallback, shrinkage |
| `storage` | `storage=`: the whole matrix, or rows on demand (threads or Dask) |
| `answers` | the chosen neighbours, batches of estimates, the selections' totals |
| `blocks` | how queries are cut into blocks, summed so that padding changes no bit |

See [How PrivateKNN answers](../knn_internals.md) for the data's way from `fit` to a
`Prediction`, [Prediction rules](../prediction_rules.md) for the rules and
[Neighbour selectors](../selectors.md) for the selectors.

Floor 3 of the package map in ``docs/development.md``. May import: `dprec.utils`,
`dprec.accountant`, `dprec.mechanisms`, `dprec.datasets`, `dprec.evaluation`,
`dprec.similarity`, `dprec.selectors`.
"""

from __future__ import annotations

from .family import PrivateKNNBaseline, PrivateKNNWithMeans, PrivateKNNWithZScore
from .model import PrivateKNN
from .neighbourhoods import NEIGHBOURHOODS
from .rules import FALLBACKS, PREDICTIONS, RULE_PARAMETERS
from .storage import BACKENDS, DENSE_SIMILARITY_BYTES, STORAGES

__all__ = ["BACKENDS", "DENSE_SIMILARITY_BYTES", "FALLBACKS", "NEIGHBOURHOODS", "PREDICTIONS",
           "RULE_PARAMETERS", "STORAGES", "PrivateKNN", "PrivateKNNBaseline",
           "PrivateKNNWithMeans", "PrivateKNNWithZScore"]
