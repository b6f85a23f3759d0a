"""Random-state handling: Surprise's convention plus numpy Generators.

Two kinds of randomness live in dprec:

* **Fit-time randomness** (hash functions, sketch noise, tie breaking) comes
  from a `numpy.random.Generator` built by `check_random_state`
  inside ``fit``.  ``random_state`` is stored verbatim by constructors, as in
  Surprise and scikit-learn, so refitting an int-seeded model reproduces it.
* **Query-time randomness** follows "one query, one draw":
  the noise used to answer query ``(u, i)`` is a pure function of the model's
  seed and the query's ids.  `keyed_uniform` is a counter-based
  generator (SplitMix64 mixing, Steele et al., OOPSLA 2014) evaluated for
  whole arrays of keys at once, so ``test()`` and ``predict()`` agree, a
  reloaded model answers the same, and repeating a query reveals nothing new.
"""

from __future__ import annotations

import enum
import hashlib
import numbers
from dataclasses import dataclass, field

import numpy as np

RandomStateLike = None | int | np.integer | np.random.RandomState | np.random.Generator

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MUL1 = np.uint64(0xBF58476D1CE4E5B9)
_MUL2 = np.uint64(0x94D049BB133111EB)


def check_random_state(random_state: RandomStateLike,
                       name: str = "random_state") -> np.random.Generator:
    """Turn ``random_state`` into a `numpy.random.Generator`.

    Parameters
    ----------
    random_state : None, int, numpy.random.RandomState or numpy.random.Generator
        ``None`` gives fresh OS entropy; an int seeds a new Generator (the same
        int, the same stream); a ``RandomState`` is consumed (as Surprise
        consumes it) to seed a Generator; a ``Generator`` is used as is.
    name : str
        Parameter name used in error messages.

    Raises
    ------
    TypeError
        For any other type (``bool`` included).
    ValueError
        For a negative integer seed.
    """
    if random_state is None:
        return np.random.default_rng()
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(0, 2**32, size=4, dtype=np.uint64))
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        if random_state < 0:
            raise ValueError(f"{name} must be a non-negative integer, got {random_state}")
        return np.random.default_rng(int(random_state))
    raise TypeError(
        f"{name} must be None, an int, a numpy RandomState or a numpy Generator, "
        f"got {type(random_state).__name__}"
    )


def validate_random_state(random_state: RandomStateLike, name: str = "random_state") -> None:
    """Check the type of ``random_state`` without consuming it (for constructors)."""
    if random_state is None or isinstance(random_state,
                                          (np.random.RandomState, np.random.Generator)):
        return
    check_random_state(random_state, name)


class NoiseSource(enum.IntEnum):
    """Where a model's noise comes from, as its ``random_state`` says (see `noise_source`).

    Falsy only for `FRESH`: ``if is_seeded(random_state)`` reads "the caller fixed the
    noise".  The privacy accountant turns it into each entry's status
    (``PrivacyAccountant(seeded=)``): `FRESH` keeps *holds*, `GENERATOR` makes it
    conditional on the generator's state being secret, `SEED` voids it.
    """

    FRESH = 0
    """``random_state=None``: fresh OS entropy at each fit, known to no one."""
    GENERATOR = 1
    """A caller's `numpy.random.RandomState` or `numpy.random.Generator`: whoever knows its
    state (e.g. the seed it was built from) reproduces the noise bit for bit."""
    SEED = 2
    """An int: reproducible, for experiments; a small int is found by brute force."""


def noise_source(random_state: RandomStateLike) -> NoiseSource:
    """Where the noise of a model with this ``random_state`` comes from.

    Parameters
    ----------
    random_state : None, int, numpy.random.RandomState or numpy.random.Generator
        Surprise's convention (`check_random_state`).

    Returns
    -------
    NoiseSource
        `NoiseSource.FRESH` for ``None``, `NoiseSource.SEED` for an int (``bool``
        excluded), `NoiseSource.GENERATOR` for a ``RandomState`` or ``Generator``.

    Raises
    ------
    TypeError
        For any other type, naming ``random_state``.
    """
    if random_state is None:
        return NoiseSource.FRESH
    if isinstance(random_state, (np.random.RandomState, np.random.Generator)):
        return NoiseSource.GENERATOR
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        return NoiseSource.SEED
    raise TypeError(
        f"random_state must be None, an int, a numpy RandomState or a numpy Generator, "
        f"got {type(random_state).__name__}"
    )


def is_seeded(random_state: RandomStateLike) -> NoiseSource:
    """Whether the caller fixed the noise: `noise_source` of ``random_state``, falsy only
    for ``None`` (fresh OS entropy).

    An int seed (`NoiseSource.SEED`) and a caller's ``RandomState`` or ``Generator``
    (`NoiseSource.GENERATOR`) are both truthy: anyone who knows the seed or the
    generator's state reproduces the noise.  Passed to ``PrivacyAccountant(seeded=)``,
    the first voids every entry that holds, the second makes it hold only if the
    generator's state is secret.
    """
    return noise_source(random_state)


def draw_seed(rng: np.random.Generator) -> int:
    """Draw a 64-bit seed (for `keyed_uniform`) from ``rng``."""
    return int(rng.integers(0, 2**63, dtype=np.int64))


def fit_entropy(random_state: RandomStateLike) -> bytes:
    """128 bits drawn from ``random_state`` at the start of a fit (fresh OS entropy for None)."""
    return check_random_state(random_state).bytes(16)


#: the mark of a `FitNoise` drawn from a ``random_state`` (or derived from one)
_DRAWN = object()


@dataclass(frozen=True)
class FitNoise:
    """The randomness of one fit — 128 bits — and where they came from.

    `FitNoise.draw(random_state)` draws them (fresh OS entropy for ``None``: `NoiseSource.FRESH`);
    `derive(purpose)` hands a model's part its own, from the same source.  Bytes a
    caller chose are never fresh noise (whoever knows them reproduces every release):
    a `FitNoise` built from them, or `of` given them, has at least the source
    `NoiseSource.GENERATOR` — *holds only if they are secret*.

    Attributes
    ----------
    entropy : bytes
    source : NoiseSource
    """

    entropy: bytes
    source: NoiseSource
    _mark: object = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.source is NoiseSource.FRESH and self._mark is not _DRAWN:
            object.__setattr__(self, "source", NoiseSource.GENERATOR)

    @classmethod
    def draw(cls, random_state: RandomStateLike) -> FitNoise:
        """128 bits drawn from ``random_state`` (`fit_entropy`) and its `noise_source`."""
        return cls(fit_entropy(random_state), noise_source(random_state), _DRAWN)

    @classmethod
    def of(cls, noise: FitNoise | bytes | None, random_state: RandomStateLike,
           source: NoiseSource | bool | None = None) -> FitNoise:
        """A part's noise: `noise` as given, drawn from ``random_state`` when None, or a
        caller's bytes, whose `source` (default: none said; ``True``: an int seed, as
        the accountant's ``seeded=True``) is raised to at least `NoiseSource.GENERATOR`."""
        if noise is None:
            return cls.draw(random_state)
        if isinstance(noise, FitNoise):
            return noise
        said = NoiseSource.SEED if source is True else NoiseSource(int(source or 0))
        return cls(bytes(noise), max(said, NoiseSource.GENERATOR))

    def derive(self, purpose: str) -> FitNoise:
        """The noise of a part of the fit, for ``purpose``, from the same source."""
        return FitNoise(derive_generator(self.entropy, purpose).bytes(16), self.source, _DRAWN)

    def generator(self, purpose: str) -> np.random.Generator:
        """`derive_generator` of this noise for ``purpose``."""
        return derive_generator(self.entropy, purpose)


def derive_generator(entropy: bytes, purpose: str) -> np.random.Generator:
    """A Generator seeded with 128 bits derived (SHA-256) from ``entropy`` for ``purpose``:
    hands a component its own randomness without narrowing it to a 63-bit seed."""
    digest = hashlib.sha256(purpose.encode() + b"\0" + bytes(entropy)).digest()
    return np.random.default_rng(int.from_bytes(digest[:16], "little"))


def derive_seed(entropy: bytes, purpose: str) -> int:
    """A 63-bit seed for ``purpose`` (``"noise"``, ``"hash"``, ``"queries"``...) from ``entropy``.

    SHA-256 of the purpose and the entropy: seeds for different purposes are
    independent for all practical purposes, and a *public* one (the hash
    seed of a sketch) reveals nothing about the others unless the entropy
    itself can be guessed (as a small int ``random_state`` can: seeded
    noise is for experiments).
    """
    digest = hashlib.sha256(purpose.encode() + b"\0" + bytes(entropy)).digest()
    return int.from_bytes(digest[:8], "little") >> 1


def check_seed(seed, name: str) -> int | None:
    """``None`` or a non-negative int seed (for public seeds such as ``hash_seed``)."""
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"{name} must be None or a non-negative int, got {type(seed).__name__}")
    if seed < 0:
        raise ValueError(f"{name} must be a non-negative int, got {seed}")
    return int(seed)


def _mix64(x: np.ndarray) -> np.ndarray:
    """SplitMix64 finaliser, elementwise on a uint64 array (wrapping arithmetic)."""
    x = (x ^ (x >> np.uint64(30))) * _MUL1
    x = (x ^ (x >> np.uint64(27))) * _MUL2
    return x ^ (x >> np.uint64(31))


def keyed_bits(seed: int, keys: tuple[np.ndarray, ...] | np.ndarray, n_draws: int,
               stream: int = 0) -> np.ndarray:
    """64 random bits per draw that depend only on their key (see `keyed_uniform`).

    Returns
    -------
    numpy.ndarray of shape (n_queries, n_draws), uint64.
    """
    if isinstance(keys, np.ndarray):
        keys = (keys,)
    with np.errstate(over="ignore"):
        state = _mix64(np.full(1, seed & 0xFFFFFFFFFFFFFFFF, dtype=np.uint64)
                       + np.uint64(stream + 1) * _GOLDEN)
        state = np.broadcast_to(state, np.shape(keys[0])).astype(np.uint64)
        for key in keys:
            key = np.asarray(key).astype(np.int64).view(np.uint64)
            state = _mix64(state ^ _mix64(key + _GOLDEN))
        counters = (np.arange(1, n_draws + 1, dtype=np.uint64) * _GOLDEN)[None, :]
        return _mix64(state[:, None] + counters)


def stable_keys(ids, name: str = "item ids") -> np.ndarray:
    """A 64-bit key per id (raw user or item ids), the same in every process and run.

    BLAKE2b of ``str(id)``: public functions of the ids alone (not of their
    order in the data), for public hash functions keyed by item.

    Raises
    ------
    ValueError
        For two ids that read the same as text (``1`` and ``"1"``), naming them.
    """
    ids = list(ids)
    texts = [str(i) for i in ids]
    if len(set(texts)) != len(texts):
        first: dict[str, int] = {}
        a, b = next((ids[first[t]], ids[n]) for n, t in enumerate(texts)
                    if first.setdefault(t, n) != n)
        raise ValueError(f"{name} {a!r} and {b!r} read the same as text ({str(a)!r}), and the "
                         f"sketches key their public hash functions by str(id): make the "
                         f"{name} distinct as text (e.g. all of them str)")
    digests = b"".join(hashlib.blake2b(t.encode(), digest_size=8).digest() for t in texts)
    return np.frombuffer(digests, dtype="<i8").astype(np.int64)


def keyed_uniform(seed: int, keys: tuple[np.ndarray, ...] | np.ndarray, n_draws: int,
                  stream: int = 0) -> np.ndarray:
    """Uniform numbers in the open interval (0, 1) that depend only on their key.

    Row ``q`` of the result is ``n_draws`` numbers that are a deterministic
    function of ``(seed, stream, keys[0][q], keys[1][q], ...)``: query ``q``'s
    own draw, whatever other queries are answered with it or in which order.

    Parameters
    ----------
    seed : int
        The model's seed (see `draw_seed`).
    keys : tuple of integer arrays of equal length, or one integer array
        The query ids, e.g. ``(inner_user_ids, inner_item_ids)``.
    n_draws : int
        Numbers per query.
    stream : int
        Separates independent uses of the same query (selection, weight noise).

    Returns
    -------
    numpy.ndarray of shape (n_queries, n_draws), float64, in (0, 1).
    """
    bits = keyed_bits(seed, keys, n_draws, stream)
    # (j + 0.5) * 2**-53 rounds to exactly 1.0 for j = 2**53 - 1 (ties to even), so
    # cap at the largest double below 1 to keep the interval open.
    u = ((bits >> np.uint64(11)).astype(np.float64) + 0.5) * 2.0**-53
    return np.minimum(u, 1.0 - 2.0**-53, out=u)


class QueryNoise:
    """The randomness of a batch of queries, one independent stream per query.

    Parameters
    ----------
    seed : int
        The fitted model's seed.
    keys : tuple of integer arrays
        The queries' ids (e.g. inner user and item ids), one entry per query.

    Examples
    --------
    >>> noise = QueryNoise(7, (np.array([0, 1]), np.array([5, 5])))
    >>> noise.uniform(3).shape
    (2, 3)
    """

    def __init__(self, seed: int, keys: tuple[np.ndarray, ...]) -> None:
        self.seed = seed
        self.keys = tuple(np.asarray(k, dtype=np.int64) for k in keys)

    def __len__(self) -> int:
        return len(self.keys[0])

    def uniform(self, n_draws: int, stream: int = 0) -> np.ndarray:
        """``(n_queries, n_draws)`` uniforms in (0, 1); see `keyed_uniform`."""
        return keyed_uniform(self.seed, self.keys, n_draws, stream)

    def subset(self, rows: np.ndarray) -> QueryNoise:
        """The noise of the queries ``rows`` (same numbers as in the full batch)."""
        return QueryNoise(self.seed, tuple(k[rows] for k in self.keys))
