r"""The one base of dprec's private models: their accountant, their budget, and the
refusal of every call before `fit`.

Every private model ([`DPBaseline`][dprec.DPBaseline], [`DPItemKNN`][dprec.DPItemKNN],
[`LocalKNN`][dprec.LocalKNN], [`DPALS`][dprec.DPALS],
[`MallowsRanker`][dprec.MallowsRanker], [`PrivateKNN`][dprec.PrivateKNN]) inherits
[`PrivateModel`][dprec.accountant.private_model.PrivateModel] before `surprise.AlgoBase`.  It holds
the fitted model's [`PrivacyAccountant`][dprec.PrivacyAccountant] (`_accountant`, set
last at `fit`: the model is fitted once it exists), returns it as `privacy_report()`,
and refuses every answer before `fit` with one error,
[`NotFittedError`][dprec.accountant.private_model.NotFittedError] (scikit-learn's: a
`ValueError` and an `AttributeError`).

**The budget.**  Every model takes `budget=(ε, δ)`, stored as given and checked at
`fit` (scikit-learn's convention).  A model whose releases are all made at `fit` (the
end-to-end models, [`MallowsRanker`][dprec.MallowsRanker]) computes what they spend
per user and unit before any noise is drawn — a public function of its parameters and
lists — and `_refuse_past_budget` refuses the fit when that is past the budget
(`BudgetExceededError`, a `ValueError`), the model left as it was.  The accountant is
given the budget too (`privacy_report().budget`) and refuses any charge past it:
[`PrivateKNN`][dprec.PrivateKNN]'s queries are charged as they are answered, and a
refused query raises the same error.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..utils._rng import NoiseSource
from ..utils._validation import check_budget
from .ledger import BudgetExceededError, PrivacyAccountant, Unit, past_budget

__all__ = ["NotFittedError", "PrivateModel"]


class NotFittedError(ValueError, AttributeError):
    """A model asked for an answer before `fit`.

    scikit-learn's pattern (`sklearn.exceptions.NotFittedError`): a `ValueError` and an
    `AttributeError` at once, so code that caught either keeps working.  Every dprec
    model raises it before `fit`; exported as `dprec.NotFittedError`.
    """


class PrivateModel:
    """Mixin of a private model: its accountant, its budget, the refusal before `fit`.

    A model inherits it before `surprise.AlgoBase`, stores `budget` as given in its
    `__init__`, and sets `_accountant` last at `fit` (built by `_open_accountant`).

    Attributes
    ----------
    budget : (float, float) or None
        A per-user `(ε, δ)` budget, per unit (see the module docstring); `None` for none.
    """

    budget: tuple[float, float] | None
    _accountant: PrivacyAccountant

    def _check_fitted(self) -> None:
        """Raise [`NotFittedError`][dprec.accountant.private_model.NotFittedError] (a
        `ValueError` and an `AttributeError`) unless the model is fitted (its accountant exists)."""
        if not hasattr(self, "_accountant"):
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet: call fit "
                                 "first")

    def privacy_report(self) -> PrivacyAccountant:
        """The fitted model's privacy accountant (`print` it to read it): what each
        mechanism claims, per user, composed over everything released so far, and the
        `budget`."""
        self._check_fitted()
        return self._accountant

    def predict(self, uid, iid, r_ui=None, clip=True, verbose=False):
        """Surprise's `predict` (raw ids), once the model is fitted."""
        self._check_fitted()
        return super().predict(uid, iid, r_ui, clip, verbose)

    def get_neighbors(self, iid: int, k: int) -> list[int]:
        """Surprise's `get_neighbors`, for a model without neighbours.

        Raises
        ------
        TypeError
            Always: the model chooses no neighbours.
        """
        self._check_fitted()
        raise TypeError(f"{type(self).__name__} has no neighbours (it is not a neighbourhood "
                        "model): get_neighbors is for PrivateKNN, DPItemKNN and LocalKNN")

    def compute_similarities(self):
        """Surprise's `compute_similarities`, for a model without similarities.

        Raises
        ------
        TypeError
            Always: the model computes no similarities.
        """
        raise TypeError(f"{type(self).__name__} computes no similarities (it is not a "
                        "neighbourhood model)")

    def default_prediction(self) -> float:
        """Surprise's answer where a prediction is impossible, once the model is fitted."""
        self._check_fitted()
        return super().default_prediction()

    # ------------------------------------------------------------ the budget
    def _checked_budget(self) -> tuple[float, float] | None:
        """`budget` validated (`check_budget`), or `None`.

        Raises
        ------
        TypeError, ValueError
            For a budget that is not a pair `(ε > 0, 0 <= δ < 1)`, naming `budget`.
        """
        return None if self.budget is None else check_budget(self.budget)

    def _refuse_past_budget(self, spent: Iterable[Sequence[float]], unit: Unit) -> None:
        """Refuse a fit whose releases, each `(ε, δ)` of `spent` charged once to the most
        exposed user, compose (basic composition, as the accountant adds them) past the
        budget for `unit`.  Called before any noise is drawn and before the model is
        changed, so a refused fit leaves it as it was.

        Raises
        ------
        BudgetExceededError
            A `ValueError` starting with `budget`, with what the fit needs and the budget.
        TypeError, ValueError
            For an invalid budget (`_checked_budget`).
        """
        budget = self._checked_budget()
        if budget is None:
            return
        epsilon = delta = 0.0
        for eps, dlt in spent:               # in the accountant's order: the same sums
            epsilon, delta = epsilon + eps, delta + dlt
        delta = min(delta, 1.0)
        if past_budget(epsilon, delta, budget):
            raise BudgetExceededError(
                f"budget (ε = {budget[0]:.10g}, δ = {budget[1]:.3g}) is below what this "
                f"{type(self).__name__}'s fit spends, ε = {epsilon:.10g}, δ = {delta:.3g} "
                f"for {unit}: the fit is refused before any noise is drawn and the model "
                "is unchanged")

    def _open_accountant(self, users: Sequence, model: str,
                         seeded: bool | NoiseSource) -> PrivacyAccountant:
        """A new accountant for `users` (ids, in the model's order) with the `budget`: it
        refuses any charge past it.  `seeded` is where the noise came from
        (`dprec.utils._rng.is_seeded(random_state)`: fresh, the caller's generator, an int
        seed), which sets the status of every entry that holds (see
        [`PrivacyAccountant`][dprec.PrivacyAccountant])."""
        return PrivacyAccountant(users, budget=self.budget, model=model, seeded=seeded)
