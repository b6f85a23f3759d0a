"""The contract of the sketch backends: [`Sketch`][], [`SketchBackend`][], helpers.

Every sketch backend is a *local* mechanism: each user turns their own data
into a short privatised sketch on their own device, using only

* their own row of the data,
* the public hash functions (random projection), drawn from the public
  ``hash_seed`` so that every user of one model shares them, item by item
  from the item's public key (``columns``, see [`check_columns`][]), never
  from its position in the data; the seed is published (``hash_seed_``) and is
  independent of the noise: when not given, it is derived one-way (SHA-256)
  from a draw of ``random_state`` (`dprec.utils._rng.derive_seed`), and
* noise from ``random_state`` only: the uniforms of row ``u`` are
  `dprec.utils._rng.keyed_uniform` ``(noise_seed, key_u)`` with ``key_u`` the
  row's key (its index by default), so a row's sketch never depends on
  another row.  ``random_state=None`` (the default) draws fresh entropy for
  each release; an int makes the noise reproducible, for experiments only
  (anyone who knows or guesses the seed can reproduce it: a small int is found
  by brute force from the published ``hash_seed_``), so the backend's entry
  is then [`Status.VOID`][dprec.accountant.ledger.Status]
  (`dprec.accountant.ledger.SEEDED`), wherever it is charged.

Why the hash functions must be random: the MinHash family's δ is the
probability, over the hash functions, that neighbouring sets differ in more
than ``L`` coordinates.  Hash functions fixed before the data (a constant
``hash_seed``) let an adversary choose neighbouring sets that differ in many
coordinates; the guarantee then assumes the data were chosen independently of
the seed (the privacy report says so).

The curator only sees the sketches and estimates all pairwise similarities
from them with matrix products.  The backends (registered by ``name`` in
`dprec.similarity.SKETCH_BACKENDS`):

* ``"minhash"``: [`MinHash`][dprec.similarity.MinHash], Jaccard, no privacy (the baseline);
* ``"rr_minhash"``: [`RRMinHash`][dprec.similarity.RRMinHash], Jaccard, (ε, δ), α items of a set;
* ``"noisy_minhash"``: [`NoisyMinHash`][dprec.similarity.NoisyMinHash], Jaccard, (ε, δ), α items;
* ``"sjlt"``: [`PrivateSJLT`][dprec.similarity.PrivateSJLT], cosine, pure ε, one rating;
* ``"gaussian_jl"``: [`GaussianJL`][dprec.similarity.GaussianJL], cosine, (ε, δ), one rating.

Each backend has two jobs, ``sketch(X)`` (all users at once, as their devices
would) and ``estimate(S)`` (all pairs), plus ``similarity_matrix(ratings)``
for [`dprec.PrivateKNN`][], ``privacy()`` (a [`dprec.accountant.ledger.LedgerEntry`][])
and ``from_options(sim_options, random_state)``.

References
----------
- M. Aumüller, A. Bourgeat and J. Schmurr, "Differentially Private Sketches
  for Jaccard Similarity Estimation", SISAP 2020.
- N. M. Stausholm, "Improved Differentially Private Euclidean Distance
  Approximation", PODS 2021.
"""

from __future__ import annotations

import abc
import inspect
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, ClassVar, NamedTuple

import numpy as np
import scipy.sparse as sp

from ..accountant.ledger import SEEDED, LedgerEntry, Status
from ..utils._linalg import gram
from ..utils._rng import (
    NoiseSource,
    RandomStateLike,
    check_seed,
    derive_seed,
    fit_entropy,
    is_seeded,
    validate_random_state,
)

__all__ = ["MAX_WIDTH", "Sketch", "SketchBackend", "SketchRelease"]

#: The largest sketch ``width`` (values per user): MinHash's match counts are exact float32
#: sums up to ``2**24``, and a release holds ``n_users × width`` values.
MAX_WIDTH = 1 << 24


@dataclass(frozen=True)
class Sketch:
    """The privatised sketches of a batch of users, one row each.

    Attributes
    ----------
    values : numpy.ndarray of shape (n_users, width)
        Row ``u`` is user ``u``'s released sketch: bucket codes in
        ``0..B-1`` (int64) for [`MinHash`][dprec.similarity.MinHash] and
        [`RRMinHash`][dprec.similarity.RRMinHash], real numbers (float64) for the others.
        Rows of invalid users are all ``-1`` (codes) or all ``0.0`` (reals).
        Read-only.
    valid : numpy.ndarray of bool, shape (n_users,)
        False for a user who released nothing: an empty set, or a set
        smaller than ``τ`` excluded with ``small_users="exclude"``.
    backend : str
        The ``name`` of the backend that made it (checked by ``estimate``).
    params : Mapping[str, float]
        The noise parameters the sketches were made with (``keep_probability``,
        ``scale``, ``sigma``, ``tau``...): ``estimate`` reads them from here,
        so it always matches the release.  Read-only.
    """

    values: np.ndarray
    valid: np.ndarray
    backend: str
    params: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        values, valid = np.asarray(self.values), np.asarray(self.valid, dtype=bool)
        if values.ndim != 2 or valid.shape != (values.shape[0],):
            raise ValueError(f"a Sketch needs values of shape (n, width) and valid of shape "
                             f"(n,), got {values.shape} and {valid.shape}")
        for name, arr in (("values", values), ("valid", valid)):
            arr = arr.view()
            arr.flags.writeable = False
            object.__setattr__(self, name, arr)
        object.__setattr__(self, "params", MappingProxyType(dict(self.params)))

    def __len__(self) -> int:
        return int(self.values.shape[0])

    def __reduce__(self):
        """Pickled as its arrays and a plain dict of ``params`` (a mapping proxy is not
        picklable): sketches travel to Dask workers with a blocked model."""
        return (Sketch, (np.array(self.values), np.array(self.valid), self.backend,
                         dict(self.params)))

    def __getitem__(self, rows) -> Sketch:
        """The sketches of ``rows`` (an index array, slice or boolean mask)."""
        values = self.values[rows]
        if values.ndim != 2:
            raise IndexError("index a Sketch with an array, slice or mask of rows")
        return Sketch(values, self.valid[rows], self.backend, self.params)

    @property
    def width(self) -> int:
        """Coordinates per sketch (the backend's ``width``)."""
        return int(self.values.shape[1])

    @property
    def hash_seed(self) -> int | None:
        """The seed of the public hash functions (or projection) the sketches were made
        with: sketches of different seeds are not comparable ([`pair_operands`][])."""
        return self.params.get("hash_seed")


class SketchRelease(NamedTuple):
    """What a model's users released through a sketch backend.

    Attributes
    ----------
    entry : LedgerEntry
        The guarantee of one user's release ([`SketchBackend.privacy`][]).
    released : numpy.ndarray of bool
        Who released a sketch (the rest were excluded or had no data).
    outside : tuple of (numpy.ndarray of bool, str)
        Users outside the guarantee although they released, each mask with its
        reason: e.g. the MinHash sets at the τ boundary, whom one item less
        would exclude (empty by default).
    conditions : tuple of str
        What the guarantee assumes of the release (e.g. "τ is public"), stated
        beside it in the model's report.
    """

    entry: LedgerEntry
    released: np.ndarray
    outside: tuple[tuple[np.ndarray, str], ...] = ()
    conditions: tuple[str, ...] = ()

    def charge(self, accountant, entry: LedgerEntry | None = None) -> int:
        """Register ``entry`` (default `entry`) with a model's ``accountant``,
        charge it once to every user who released a sketch, mark the others out of its
        unit's scope (their exclusion depends on their data), and `outside` too,
        and state the `conditions`; returns the entry's index."""
        entry = self.entry if entry is None else entry
        index = accountant.register(entry)
        accountant.charge({index: self.released.astype(np.int64)})
        accountant.out_of_scope(entry.unit, ~self.released,
                                "released no sketch: a set smaller than τ, or empty")
        for users, reason in self.outside:
            accountant.out_of_scope(entry.unit, users, reason)
        for condition in self.conditions:
            accountant.add_condition(condition)
        return index


class SketchBackend(abc.ABC):
    """Abstract base class of the sketch backends.

    Subclasses set `name`, `similarity`, `score_range` and
    `option_defaults`, and implement [`sketch`][], [`estimate`][],
    [`privacy`][] and [`similarity_input`][]; the registry
    `dprec.similarity.SKETCH_BACKENDS` lists them by `name`.
    """

    #: the ``sim_options["name"]`` of the backend
    name: ClassVar[str] = ""
    #: ``"jaccard"`` or ``"cosine"``: what `estimate` estimates
    similarity: ClassVar[str] = ""
    #: width of the range of similarity values (1 for Jaccard, 2 for cosine);
    #: the sensitivity private selectors use for these scores
    score_range: ClassVar[float] = 1.0
    #: `from_options` defaults of constructor parameters that have none
    option_defaults: ClassVar[dict[str, Any]] = {}
    #: parameters with a ``None`` default (for the deprecated names) that must be given
    required: ClassVar[tuple[str, ...]] = ()
    #: deprecated parameter (and attribute) names → their current names
    renamed: ClassVar[Mapping[str, str]] = MappingProxyType({})

    # ------------------------------------------------------------ interface
    @abc.abstractmethod
    def sketch(self, X, keys=None, columns=None) -> Sketch:
        """Every user's privatised sketch (one row of ``X`` per user; ``columns`` the
        public keys of its columns, see [`check_columns`][])."""

    @abc.abstractmethod
    def estimate(self, S: Sketch, other: Sketch | None = None, clip: bool = True) -> np.ndarray:
        """The matrix of estimated similarities between the rows of ``S`` (and ``other``)."""

    def estimate_rows(self, S: Sketch, rows: np.ndarray) -> np.ndarray:
        """``estimate(S[rows], S)``: the rows ``rows`` of the similarity matrix of ``S``
        (without its diagonal of 1), for a model that keeps ``S`` and asks for a block
        of rows at a time ([`SketchRows`][dprec.similarity.SketchRows]).  A backend may
        prepare what depends on ``S`` alone once and reuse it across blocks."""
        return self.estimate(S[rows], S)

    @abc.abstractmethod
    def privacy(self) -> LedgerEntry:
        """The guarantee of one release of a user's sketch (component ``"similarity"``),
        through `_seeded` (void for an int ``random_state``)."""

    @abc.abstractmethod
    def similarity_input(self, ratings: sp.csr_matrix) -> sp.csr_matrix:
        """What a user sketches, from their rating row: the set of rated (or liked) items
        for the MinHash family, the raw rating vector for the projections."""

    # ------------------------------------------------------------ shared
    def _release_seeds(self) -> tuple[int, int]:
        """``(hash seed, noise seed)`` of one release.

        The noise comes from ``random_state`` only; the public hash functions
        from ``hash_seed``, or, when it is None, from a seed derived one-way
        (`dprec.utils._rng.derive_seed`) from the same draw: publishing it
        reveals nothing of the noise unless ``random_state`` can be guessed.
        The hash seed used is kept in ``hash_seed_`` (public).  With an int
        ``random_state`` both seeds follow from that int, which a brute force over
        small ints finds from ``hash_seed_``: `_seeded` voids the entry.
        """
        entropy = fit_entropy(self.random_state)
        hash_seed = self.hash_seed if self.hash_seed is not None else \
            derive_seed(entropy, "hash")
        self.hash_seed_ = hash_seed
        return hash_seed, derive_seed(entropy, "noise")

    def _seeded(self, entry: LedgerEntry) -> LedgerEntry:
        """``entry``, void with the reason `dprec.accountant.ledger.SEEDED` when it holds and
        ``random_state`` is an int (`dprec.utils._rng.is_seeded`): the noise is then a
        function of a seed anyone can guess, and nothing is guaranteed.  Every
        backend's [`privacy`][] passes its entry through it, so the entry is void
        wherever it is charged (a model's accountant, ``release_``, ``LocalKNN``).

        A ``Generator`` is left as it is: the models hand their backend one derived from
        their own entropy, and their accountant, which knows where that entropy came
        from (``random_state=None``, the caller's generator, an int), sets the entry's
        status when it is charged (``PrivacyAccountant(seeded=)``)."""
        if is_seeded(self.random_state) is NoiseSource.SEED and entry.status is Status.HOLDS:
            return replace(entry, status=Status.VOID,
                           note=SEEDED + (f"; {entry.note}" if entry.note else ""))
        return entry

    def _scope(self) -> tuple[tuple[tuple[np.ndarray, str], ...], tuple[str, ...]]:
        """``(outside, conditions)`` of the last release ([`SketchRelease`][]): none by
        default (every user who released is within the guarantee)."""
        return (), ()

    def _hash_seed_used(self) -> int | None:
        """The seed of the last hash functions drawn (``hash_seed`` before any)."""
        return getattr(self, "hash_seed_", self.hash_seed)

    def _current_names(self, deprecated: Mapping[str, Any], stacklevel: int = 4,
                       **given) -> dict[str, Any]:
        """``given`` (current names) updated with the values passed under `renamed`
        names (a ``DeprecationWarning`` each, for the caller ``stacklevel`` frames up);
        any other unknown name is a ``TypeError``."""
        for old, value in deprecated.items():
            if old not in self.renamed:
                raise TypeError(f"{type(self).__name__}() got an unexpected keyword "
                                f"argument {old!r}")
            warnings.warn(f"{type(self).__name__}: {old!r} is deprecated, use "
                          f"{self.renamed[old]!r}", DeprecationWarning, stacklevel=stacklevel)
            given[self.renamed[old]] = value
        return given

    def __getattr__(self, name: str):
        """Deprecated attribute names (`renamed`) read their current attribute."""
        renamed = type(self).renamed
        if name in renamed:
            warnings.warn(f"{type(self).__name__}.{name} is deprecated, use "
                          f"{renamed[name]}", DeprecationWarning, stacklevel=2)
            return getattr(self, renamed[name])
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def _init_seeds(self, hash_seed, random_state) -> None:
        self.hash_seed = check_seed(hash_seed, "hash_seed")
        self.random_state = check_random_state_type(random_state)

    def similarity_matrix(self, ratings, columns=None) -> np.ndarray:
        """``estimate(sketch(X))`` for the users' rating rows, ready for kNN.

        ``X`` is derived from ``ratings`` as each backend documents (the set
        of rated or liked items for the MinHash family, the raw rating
        vectors for the projections).  The diagonal is 1, values lie in the
        backend's range (``[0, 1]`` or ``[-1, 1]``), never NaN; users without
        a sketch (excluded or empty) have similarity 0 to everybody.

        Parameters
        ----------
        ratings : scipy.sparse matrix, users × items
            E.g. [`dprec.datasets.user_item_matrix`][] of a trainset (not
            modified).
        columns : 1-D integer array, optional
            The public key of each item (column), see [`check_columns`][].

        Returns
        -------
        numpy.ndarray of shape (n_users, n_users), float64.  What was
        released is kept in ``release_`` (a [`SketchRelease`][]).
        """
        sims = self.estimate(self.release(ratings, columns))
        np.fill_diagonal(sims, 1.0)
        return sims

    def release(self, ratings, columns=None) -> Sketch:
        """Every user's privatised sketch of their rating row (as
        [`similarity_matrix`][] makes them), recorded in ``release_``: what a
        model keeps to estimate its similarity rows on demand
        ([`SketchRows`][dprec.similarity.SketchRows])."""
        sketches = self.sketch(self.similarity_input(as_csr(ratings, "ratings")),
                               columns=columns)
        self.release_ = SketchRelease(self.privacy(), np.asarray(sketches.valid).copy(),
                                      *self._scope())
        return sketches

    @classmethod
    def from_options(cls, options: Mapping, random_state: RandomStateLike = None):
        """Build the backend from Surprise-style ``sim_options``.

        Keys are the constructor's parameter names (``random_state`` comes
        separately), plus ``"name"`` (must be `name` when given) and
        ``"user_based"`` (must be True).  Parameters not given take the
        constructor's default, else `option_defaults`; ``epsilon`` (and
        ``rating_bound``) have no default: a privacy level is never chosen
        silently.  Deprecated names (`renamed`) are read as their
        current names, with a ``DeprecationWarning``.

        Raises
        ------
        TypeError
            If ``options`` is not a mapping.
        ValueError
            For unknown keys (named), a wrong ``name``, a missing required
            parameter, or any invalid parameter value (the message starts
            ``sim_options for '<name>': ``, then the constructor's).
        """
        if not isinstance(options, Mapping):
            raise TypeError(f"sim_options must be a dict, got {type(options).__name__}")
        options = dict(options)
        name = options.pop("name", cls.name)
        if not isinstance(name, str) or name.lower() != cls.name:
            raise ValueError(f"sim_options['name'] must be {cls.name!r} for "
                             f"{cls.__name__}, got {name!r}")
        if options.pop("user_based", True) is not True:
            raise ValueError("sim_options['user_based'] must be True: sketches are per user")
        for old in set(options) & set(cls.renamed):
            warnings.warn(f"sim_options[{old!r}] is deprecated for {cls.name!r}, use "
                          f"{cls.renamed[old]!r}", DeprecationWarning, stacklevel=3)
            options[cls.renamed[old]] = options.pop(old)
        params = cls._parameters()
        allowed = {p.name for p in params}
        unknown = sorted(set(options) - allowed)
        if unknown:
            raise ValueError(f"sim_options has unknown option(s) {unknown} for {cls.name!r}; "
                             f"allowed: {sorted(allowed | {'name', 'user_based'})}")
        kwargs = {}
        for p in params:
            if p.name in options:
                kwargs[p.name] = options[p.name]
            elif p.name in cls.option_defaults:
                kwargs[p.name] = cls.option_defaults[p.name]
            elif p.default is inspect.Parameter.empty or p.name in cls.required:
                raise ValueError(f"sim_options for {cls.name!r} must give {p.name!r}")
        try:
            return cls(**kwargs, random_state=random_state)
        except (TypeError, ValueError) as error:     # named as the user gave it
            raise type(error)(f"sim_options for {cls.name!r}: {error}") from None

    @classmethod
    def _parameters(cls) -> list[inspect.Parameter]:
        """The constructor's named parameters but ``random_state``."""
        return [p for p in inspect.signature(cls.__init__).parameters.values()
                if p.name not in ("self", "random_state")
                and p.kind is not inspect.Parameter.VAR_KEYWORD]

    def get_params(self) -> dict[str, Any]:
        """The constructor's parameters (as given, by their current names)."""
        return {**{p.name: getattr(self, p.name) for p in self._parameters()},
                "random_state": self.random_state}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"


# ----------------------------------------------------------------------------
# helpers shared by the backends
# ----------------------------------------------------------------------------

def as_csr(X, name: str = "X") -> sp.csr_matrix:
    """``X`` as a CSR matrix of real numbers in canonical form, never modifying ``X``.

    Accepts any scipy sparse matrix or array, or a dense 2-D array; duplicate
    entries are summed (on a copy).
    """
    if sp.issparse(X) or (isinstance(X, np.ndarray) and X.ndim == 2):
        matrix = sp.csr_matrix(X)
    else:
        raise TypeError(f"{name} must be a scipy sparse matrix or a 2-D numpy array, "
                        f"got {type(X).__name__}")
    if matrix.dtype.kind not in "biuf":
        raise TypeError(f"{name} must hold real numbers, got dtype {matrix.dtype}")
    if not matrix.has_canonical_format:
        matrix = matrix.copy()
        matrix.sum_duplicates()
    if not np.isfinite(matrix.data).all():
        raise ValueError(f"{name} must be finite (no NaN or infinity)")
    return matrix


def set_matrix(X, name: str = "X") -> sp.csr_matrix:
    """The 0/1 set matrix of ``X``: member = a stored non-zero entry (``X`` not modified)."""
    matrix = as_csr(X, name)
    keep = matrix.data != 0
    if not keep.all():
        matrix = matrix.copy()
        matrix.data = keep.astype(np.int8)
        matrix.eliminate_zeros()
    return matrix


def check_keys(keys, n_rows: int) -> np.ndarray:
    """Row keys for the noise: ``arange(n_rows)`` by default, else unique integers."""
    if keys is None:
        return np.arange(n_rows, dtype=np.int64)
    arr = np.asarray(keys)
    if arr.dtype.kind not in "iu" or arr.shape != (n_rows,):
        raise ValueError(f"keys must be {n_rows} integers (one per row of X), got "
                         f"{arr.dtype} array of shape {arr.shape}")
    if np.unique(arr).size != n_rows:
        raise ValueError("keys must be unique: two rows with one key would share their noise")
    return arr.astype(np.int64)


def check_columns(columns, n_columns: int) -> np.ndarray:
    """The public key of each column of ``X`` (the items): ``arange(n_columns)`` by default.

    The public hash functions and projections are drawn per key, so one item
    gets the same hash values whatever else the data holds.  Give the keys of
    the raw item ids (`dprec.utils._rng.stable_keys`, what [`dprec.PrivateKNN`][]
    does) whenever the columns are not a fixed public catalogue: an index that
    follows the order of the data would let one user's data change everyone's
    hash functions.
    """
    if columns is None:
        return np.arange(n_columns, dtype=np.int64)
    arr = np.asarray(columns)
    if arr.dtype.kind not in "iu" or arr.shape != (n_columns,):
        raise ValueError(f"columns must be {n_columns} integer keys (one per column of X), "
                         f"got {arr.dtype} array of shape {arr.shape}")
    if np.unique(arr).size != n_columns:
        raise ValueError("columns must be unique: two items with one key would share hashes")
    return arr.astype(np.int64)


def check_random_state_type(random_state: RandomStateLike) -> RandomStateLike:
    """Validate ``random_state`` without consuming it; return it unchanged."""
    validate_random_state(random_state)
    return random_state


def check_clip(clip) -> bool:
    if not isinstance(clip, (bool, np.bool_)):
        raise TypeError(f"clip must be True or False, got {type(clip).__name__}")
    return bool(clip)


def pair_operands(S: Sketch, other: Sketch | None, backend: str,
                  width: int) -> tuple[Sketch, Sketch]:
    """Check ``S`` (and ``other``) come from ``backend`` with ``width`` columns.

    ``other`` must have been made with the same hash functions (``hash_seed``)
    and noise parameters as ``S``: sketches of different hash functions are not
    comparable (as datasketch's ``MinHash.jaccard`` refuses them).
    """
    operands = (S,) if other is None else (S, other)
    for label, sk in zip(("S", "other"), operands):
        if not isinstance(sk, Sketch):
            raise TypeError(f"{label} must be a Sketch (from {backend}.sketch), "
                            f"got {type(sk).__name__}")
        if sk.backend != backend:
            raise ValueError(f"{label} was made by {sk.backend!r}, not {backend!r}")
        if sk.width != width:
            raise ValueError(f"{label} has {sk.width} coordinates, this backend makes {width}")
    if other is not None and other.hash_seed != S.hash_seed:
        raise ValueError(f"S and other were made with different hash functions (hash_seed "
                         f"{S.hash_seed} and {other.hash_seed}): "
                         "their coordinates are not comparable")
    if other is not None and dict(other.params) != dict(S.params):
        raise ValueError(f"S and other were made with different noise parameters "
                         f"({dict(S.params)} and {dict(other.params)})")
    return S, (S if other is None else other)


def finish_estimate(sims: np.ndarray, valid_a: np.ndarray, valid_b: np.ndarray,
                    same: bool, low: float, high: float, clip: bool) -> np.ndarray:
    """Clip to ``[low, high]`` if asked, zero pairs with an invalid user, diagonal 1."""
    if clip:
        np.clip(sims, low, high, out=sims)
    sims[~valid_a, :] = 0.0
    sims[:, ~valid_b] = 0.0
    if same:
        np.fill_diagonal(sims, 1.0)
    if not np.isfinite(sims).all():  # pragma: no cover - guarded by construction
        raise FloatingPointError("non-finite similarity estimate")
    return sims


def squared_distances(A: np.ndarray, C: np.ndarray | None = None) -> np.ndarray:
    """``‖a_u − c_v‖²`` for all pairs of rows, from the Gram matrix (``C = A`` if None).

    ``‖a‖² + ‖c‖² − 2⟨a, c⟩``; the diagonal of the ``C = A`` case is exactly 0.
    """
    sq_a = np.einsum("ij,ij->i", A, A)
    if C is None:
        products, sq_c = gram(A), sq_a
    else:
        products, sq_c = gram(A, C), np.einsum("ij,ij->i", C, C)
    out = sq_a[:, None] + sq_c[None, :]
    out -= 2.0 * products
    if C is None:
        np.fill_diagonal(out, 0.0)
    return out
