r"""Every privacy label of the command line and the experiments, read from the report.

``dprec demo``, ``dprec cv``, ``dprec endtoend``, the frontier, the implicit-feedback
experiment and the notebooks label a model by what the privacy report of the *fitted*
model computes for its worst user
([`PrivacyAccountant.headline`][dprec.PrivacyAccountant.headline]): its ε, δ and unit,
and the status of that ε.  Never by the ``epsilon`` given to the
constructor, which says neither how many times it was spent, nor for whom, nor whether
it holds: a model whose report says ε = ∞ or *void* is never labelled *holds*.

* [`privacy_label`][dprec.experiments.privacy_labels.privacy_label]: the report's
  headline as text, e.g. ``"ε = 1, δ = 1e-05 per user, holds"``,
  ``"ε = ∞ per user: no guarantee for 12 users; ε = 1 for the others, holds"`` or
  ``"ε = 7598, δ = 1 per rating, as published"``;
* [`guarantee_label`][dprec.experiments.privacy_labels.guarantee_label]: its category,
  one of `LABELS` (the frontier's colours);
* [`fresh_labels`][dprec.experiments.privacy_labels.fresh_labels]: both, for a copy of
  a model fitted with fresh noise (``random_state=None``: the experiments' own runs are
  seeded for reproducibility, and a seeded fit guarantees nothing, so its report says
  *void*) and, given a test set, having answered it (what a cross-validation fold
  releases).

The number of users outside the guarantee in a label is a count of the data: the
curator's, for these tables of research results; the model's printed report, a shared
release, gives the rule only.
"""

from __future__ import annotations

import copy
import math
import warnings

from surprise.model_selection import KFold

from ..accountant.ledger import Status

__all__ = ["LABELS", "NOT_PRIVATE", "first_fold", "fresh_labels", "guarantee_label",
           "privacy_label"]

#: the categories of `guarantee_label`, from the strongest
LABELS = ("holds", "conditional", "in part", "as published", "none")
#: the label of a model without a privacy report, or whose report has no mechanism
NOT_PRIVATE = "not private"


def privacy_label(algo) -> str:
    """The headline of a fitted model's privacy report, as text: per unit, the worst
    user's ε (and δ when not 0), the unit, and the status of that ε; when some users are
    outside the guarantee, ε = ∞ and how many, then the others' ε and status.

    Parameters
    ----------
    algo : Surprise algorithm
        Fitted; any algorithm without ``privacy_report`` (or whose report registered no
        private mechanism) is `NOT_PRIVATE`.

    Examples
    --------
    >>> from dprec import DPBaseline, datasets
    >>> trainset = datasets.synthetic(200, 20, 4000, random_state=0).build_full_trainset()
    >>> privacy_label(DPBaseline(epsilon=1.0).fit(trainset))
    'ε = 1, δ = 1e-05 per user, holds'
    """
    if not hasattr(algo, "privacy_report"):
        return NOT_PRIVATE
    heads = algo.privacy_report().headline()
    return "; ".join(str(head) for head in heads) if heads else NOT_PRIVATE


def guarantee_label(algo) -> str:
    """What a fitted model's privacy report guarantees, as one of `LABELS`.

    ``"holds"``: every user has an unconditional guarantee, at a finite ε, for
    everything released (every unit of the headline holds, no user outside);
    ``"conditional"``: the same, if the caller's generator has a secret state;
    ``"as published"``: a paper's claim dprec reproduces but does not guarantee;
    ``"in part"``: a guarantee for some outputs only, or for some users only;
    ``"none"``: nothing (no mechanism, void entries, or every user outside).  Read it
    from a model fitted with ``random_state=None`` ([`fresh_labels`][]): every entry
    of a seeded model is void (`dprec.accountant.ledger.SEEDED`).
    """
    if not hasattr(algo, "privacy_report"):
        return "none"
    heads = algo.privacy_report().headline()
    if heads and all(head.holds for head in heads):
        return "holds"
    statuses = {head.status for head in heads}
    conditional = str(Status.CONDITIONAL)
    if heads and statuses == {conditional} and all(
            head.outside == 0 and math.isfinite(head.epsilon) for head in heads):
        return "conditional"
    if str(Status.AS_PUBLISHED) in statuses:
        return "as published"
    guaranteed = (str(Status.HOLDS), conditional, "in part")
    if any(head.status in guaranteed and math.isfinite(head.others[0]) for head in heads):
        return "in part"
    return "none"


def fresh_labels(algo, trainset, testset=None) -> tuple[str, str]:
    """``(privacy_label, guarantee_label)`` of a copy of ``algo`` fitted with fresh noise
    (``random_state=None``) on ``trainset`` and, given ``testset``, having answered it.

    ``algo`` itself is left as it is (unfitted or not).  An algorithm without
    ``privacy_report`` is not fitted: ``(NOT_PRIVATE, "none")``.
    """
    if not hasattr(algo, "privacy_report"):
        return NOT_PRIVATE, "none"
    fresh = copy.deepcopy(algo)
    if hasattr(fresh, "random_state"):
        fresh.random_state = None
    with warnings.catch_warnings():      # the fit's warnings were shown by the scored runs
        warnings.simplefilter("ignore")
        fresh.fit(trainset)
        if testset:
            fresh.test(testset)
    return privacy_label(fresh), guarantee_label(fresh)


def first_fold(data, n_folds: int, seed: int) -> tuple:
    """``(trainset, testset)`` of the first of the ``n_folds`` folds seeded ``seed``
    (Surprise's ``KFold``): the split a cross-validation table scores first, on which
    [`fresh_labels`][] reads what a fold's model releases."""
    return next(KFold(n_splits=n_folds, random_state=seed).split(data))
