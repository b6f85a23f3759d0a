"""The end-to-end private models and the parts they share.

The models ([`DPBaseline`][dprec.DPBaseline] in `dp_baseline`,
[`DPItemKNN`][dprec.DPItemKNN] in `dp_item_knn`, [`DPALS`][dprec.DPALS] in `dp_als`,
[`LocalKNN`][dprec.LocalKNN] in `local_knn`) release everything they answer from under one
ε.  Their parts: `rating_space` (the canonical lists of users and items, and Surprise's
answers over them; the implicit-feedback models use them too), `item_selection` (a private
item list fixed before any user reports), `effects_release` and `noisy_effects` (the
released effects and what is read from them), `covariance_release` (DPItemKNN's integer
releases), `pairwise` (items × items matrices computed from one vector per item),
`partitions` (the sums over users, on threads or Dask).

Floor 4 of the package map in ``docs/development.md``. May import: `dprec.utils`,
`dprec.accountant`, `dprec.mechanisms`, `dprec.datasets`, `dprec.evaluation`,
`dprec.similarity`, `dprec.selectors`, `dprec.knn`.
"""
