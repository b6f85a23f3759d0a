"""Surprise's `KNNWithMeans`, `KNNWithZScore` and `KNNBaseline` as `PrivateKNN` with their
prediction rule (`KNNBasic` is `PrivateKNN` itself)."""

from __future__ import annotations

from collections.abc import Mapping

from .model import PrivateKNN


class PrivateKNNWithMeans(PrivateKNN):
    """`PrivateKNN` with `prediction="means"`: Surprise's `KNNWithMeans`."""

    def __init__(self, k: int = 40, min_k: int = 1, sim_options: Mapping | None = None,
                 **kwargs) -> None:
        super().__init__(k, min_k, sim_options, prediction="means", **kwargs)


class PrivateKNNWithZScore(PrivateKNN):
    """`PrivateKNN` with `prediction="zscore"`: Surprise's `KNNWithZScore`."""

    def __init__(self, k: int = 40, min_k: int = 1, sim_options: Mapping | None = None,
                 **kwargs) -> None:
        super().__init__(k, min_k, sim_options, prediction="zscore", **kwargs)


class PrivateKNNBaseline(PrivateKNN):
    """`PrivateKNN` with `prediction="baseline"`: Surprise's `KNNBaseline`
    (`bsl_options` as Surprise's)."""

    def __init__(self, k: int = 40, min_k: int = 1, sim_options: Mapping | None = None,
                 bsl_options: Mapping | None = None, **kwargs) -> None:
        super().__init__(k, min_k, sim_options, prediction="baseline", bsl_options=bsl_options,
                         **kwargs)
