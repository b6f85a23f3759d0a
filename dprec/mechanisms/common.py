r"""What the mechanism modules share: the uniforms they are driven by, variates with exact
tails, and the overflow check.

Every sampler of [`dprec.mechanisms`][dprec.mechanisms] has a ``*_from_uniform`` core that
turns uniforms in the open interval $(0, 1)$ into the sample;
[`UNIFORMS_PER_DRAW`][dprec.mechanisms.common.UNIFORMS_PER_DRAW] says how many each core
consumes per output value, and [`open_uniform`][dprec.mechanisms.common.open_uniform] is
how the seeded samplers draw them.

**Exact tails.**  A 53-bit uniform takes $2^{53}$ values, so every function of a fixed
number of them is bounded ($-\ln U \le 37.4$, $-\ln(-\ln U) \le 36.7$) and an event of
probability below about $2^{-53}$ gets probability 0: a sampler built that way cannot
produce every output once the privacy parameter is large, and has no pure-DP guarantee
there.  [`log_uniform_from_words`][dprec.mechanisms.common.log_uniform_from_words] and
[`gumbel_from_words`][dprec.mechanisms.common.gumbel_from_words] draw a uniform as a
floating-point number whose exponent takes as many random bits as it needs, so that
$\ln U$ (the Mallows sampler's input) and a standard Gumbel variate (the exponential
mechanism's keys) keep their exact tail probabilities, to a factor $e^{\pm|t|\,2^{-52}}$
for an event of probability $e^{t}$ (the float64 rounding of $\ln U$), down to
$e^{-\mathrm{TAIL\_LIMIT}}$ ($\mathrm{TAIL\_LIMIT} \approx 3.2 \cdot 10^{18}$).  They are
deterministic functions of random words (uint64), one per variate plus a rare few:
[`log_uniform`][dprec.mechanisms.common.log_uniform] and
`standard_gumbel` take the words from a
Generator, `keyed_gumbel` from
[`keyed_bits`][dprec.utils._rng.keyed_bits] (one query, one draw).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from types import MappingProxyType

import numpy as np

from ..utils._rng import keyed_bits

__all__ = [
    "MAX_ZERO_BITS",
    "TAIL_LIMIT",
    "TINY",
    "UNIFORMS_PER_DRAW",
    "finite_sum",
    "gumbel_from_words",
    "keyed_gumbel",
    "keyed_log_uniform",
    "log_uniform",
    "log_uniform_from_words",
    "open_uniform",
    "standard_gumbel",
    "words_for",
]

#: Uniforms each ``*_from_uniform`` core consumes per output value (last axis
#: of its ``uniforms`` argument; ``exponential_top_k``: one per candidate).
UNIFORMS_PER_DRAW = MappingProxyType({
    "laplace": 3,
    "discrete_laplace": 3,
    "gaussian": 2,
    "randomized_response": 1,
    "exponential_top_k": 1,
})

#: Smallest uniform handed to a core, ``2**-54`` (the same floor as
#: `dprec.utils._rng.keyed_uniform`): ``log u`` stays finite.
TINY = 2.0**-54

#: Most leading zero bits [`log_uniform_from_words`][dprec.mechanisms.common.log_uniform_from_words]
#: counts ($2^{62}$, an int64 count that cannot wrap); reaching it has probability $2^{-2^{62}}$.
MAX_ZERO_BITS = 2**62
#: The exact-tail samplers resolve $U$ and $1 - U$ down to $e^{-\mathrm{TAIL\_LIMIT}}$,
#: $\mathrm{TAIL\_LIMIT} = (2^{62} + 2)\ln 2 \approx 3.2 \cdot 10^{18}$: every event of
#: larger probability keeps it, to a relative $2^{-52}$.
TAIL_LIMIT = (MAX_ZERO_BITS + 2) * math.log(2.0)

_HEAD_BITS = 11                 # bits 62..52 of the first word: the start of J's bit stream
_HEAD_MASK = np.uint64(2**_HEAD_BITS - 1)
_MANTISSA = np.uint64(2**52 - 1)
_SIGN = np.uint64(2**63)
_SIGN_AND_MANTISSA = _SIGN | _MANTISSA
_EXPONENT = np.uint64(0x7FF << 52)
_ONE_AND_2_52 = np.uint64((1075 << 52) | 1)   # the bits of 2.0**52, and head | 1
_BLOCK = 1 << 15                # elements per block of the vectorised core (stays in cache)
_LN2 = math.log(2.0)

#: ``more(level, index)``: further random words for the flat positions ``index`` (uint64,
#: one per position), ``level`` = 1, 2, ... the how-many-th extra word of each.
WordSource = Callable[[int, np.ndarray], np.ndarray]


def open_uniform(rng: np.random.Generator, shape: int | tuple[int, ...]) -> np.ndarray:
    """Uniforms in ``[2**-54, 1 - 2**-53]``, i.e. in the open interval (0, 1).

    ``max(U, 2**-54)`` with ``U`` from ``rng.random``, whose values are the
    multiples of ``2**-53`` in ``[0, 1)``: only ``U = 0`` is moved.
    """
    return np.maximum(rng.random(shape), TINY)


def finite_sum(x: np.ndarray, noise: np.ndarray) -> np.ndarray:
    """``x + noise``, refusing a result that overflows.

    Raises
    ------
    ValueError
        If any element of the sum is not finite.
    """
    out = x + noise
    if not np.isfinite(out).all():
        raise ValueError("values are too large for the noise (overflow)")
    return out


# ------------------------------------------------------------ exact tails
def _check_words(words, name: str, shape: tuple[int, ...] | None = None) -> np.ndarray:
    arr = np.asarray(words)
    if arr.dtype != np.uint64:
        raise TypeError(f"{name} must be an array of uint64 random words, got dtype {arr.dtype}")
    if shape is not None and arr.shape != shape:
        raise ValueError(f"{name} must have shape {shape}, got {arr.shape}")
    return arr


def _log_u_shallow(flat: np.ndarray, out: np.ndarray, gumbel: bool) -> np.ndarray:
    r"""$\ln U$ (or $-\ln(-\ln U)$) of the words whose 11 head bits are not all zero, into
    ``out``, by blocks that stay in cache; returns the positions of the others ("deep").

    The head's leading one sets the exponent of $W = 2^{-(J+2)}(1 + f 2^{-52})$: the
    float of the head $h$ (made as $(2^{52} + h) - 2^{52}$) has exponent $10 - J$, moved
    to $-(J + 2)$; the word's bit 63 becomes the sign, so ``sw`` is $W$ ($U = W$) or
    $-W$ ($U = 1 - W$).  Then
    $r = \mathrm{fl}(U)$ and, for $U = 1 - W$, its rounding error $e = (1 - r) - W$ is
    exact (Fast2Sum; $e = 0$ for $U = W$), so $\ln U = \ln r + e / r$ keeps the
    relative precision of $W$ on both sides with one logarithm.
    """
    deep = []
    for lo in range(0, len(flat), _BLOCK):
        f = flat[lo:lo + _BLOCK]
        head = (f >> np.uint64(52)) & _HEAD_MASK
        deep.append(np.flatnonzero(head == 0) + lo)
        head |= _ONE_AND_2_52                       # 2**52 + head, head | 1 (0 is deep)
        value = head.view(np.float64)
        value -= 2.0**52                            # the head as a float: exact
        bits = value.view(np.uint64)
        bits &= _EXPONENT                           # 2**(10 - J), the head's leading one
        bits -= np.uint64(12 << 52)                 # -> 2**-(J + 2)
        bits |= f & _SIGN_AND_MANTISSA
        sw = bits.view(np.float64)
        side = np.signbit(sw)
        r = side + sw
        err = side - r
        err += sw
        err /= r
        o = out[lo:lo + _BLOCK]
        np.log(r, out=o)
        o += err
        if gumbel:
            np.negative(o, out=o)
            np.log(o, out=o)
            np.negative(o, out=o)
    return np.concatenate(deep) if deep else np.zeros(0, np.int64)


def _deep(flat: np.ndarray, deep: np.ndarray,
          more: WordSource) -> tuple[np.ndarray, np.ndarray]:
    r"""$\ln W = \ln(1 + F) - (J + 2)\ln 2$ and $W$ (0 once it underflows) at the deep
    positions, $J \ge 11$ counted on in the further words (53 bits of each) until a one."""
    zeros = np.full(len(deep), _HEAD_BITS, dtype=np.int64)
    todo = np.arange(len(deep))
    level = 0
    while len(todo):
        level += 1
        extra = _check_words(more(level, deep[todo]), "more(level, index)", todo.shape)
        top = (extra >> np.uint64(11)).astype(np.float64)  # 53 bits, converted exactly
        found = 53 - np.frexp(top)[1].astype(np.int64)      # frexp(0) = (0, 0): 53 zeros
        zeros[todo] = np.minimum(zeros[todo] + found, MAX_ZERO_BITS)
        todo = todo[(found == 53) & (zeros[todo] < MAX_ZERO_BITS)]
    fraction = (flat[deep] & _MANTISSA).astype(np.float64) * 2.0**-52
    w = np.ldexp(1.0 + fraction, -np.minimum(zeros + 2, 1100).astype(np.int32))
    return np.log1p(fraction) - (zeros + 2) * _LN2, w


def log_uniform_from_words(words: np.ndarray, more: WordSource) -> np.ndarray:
    r"""$\ln U$ for uniforms $U$ on $(0, 1)$ drawn from random words, exact in both tails.

    $U$ is split by a fair bit into $W = \min(U, 1 - U)$ and its side, and $W$, uniform
    on $(0, \tfrac12)$, is drawn as a floating-point number:
    $W = 2^{-(J+2)}\,(1 + F)$, where $J$ is the number of leading zero bits of an endless
    stream of random bits and $F = f\,2^{-52}$ for 52 random bits $f$.

    **Why it is exact.**  $P(J = j) = 2^{-(j+1)}$ is exactly the probability that a
    uniform $W$ on $(0, \tfrac12)$ falls in the binade $[2^{-(j+2)}, 2^{-(j+1)})$, and
    within its binade $W$ takes $2^{52}$ equally spaced values with equal probability.
    So $P(W \le x) = 2x$ to a relative $2^{-52}$ for *every* $x$, however small: $\ln U$
    has no bound (but [`TAIL_LIMIT`][dprec.mechanisms.common.TAIL_LIMIT]) and every event
    $\{\ln U \le t\}$ keeps its probability $e^{t}$ to a relative $2^{-52}$ of $W$ and
    the rounding of $\ln U$ in float64, a factor $e^{\pm|t|\,2^{-52}}$ in all, for
    $t \ge -\mathrm{TAIL\_LIMIT}$.  Deep in the tail $\ln W = \ln(1 + F) - (J + 2)\ln 2$
    is computed in log space (no underflow).  The upper side ($U = 1 - W$) is resolved
    the same way, $\ln U = \ln(1 - W) \approx -W$ to the relative precision of $W$
    (the Gumbel keys' upper tail).

    Each word supplies the side (bit 63), the first 11 bits of $J$'s stream (bits 62-52)
    and $f$ (bits 51-0).  Only when those 11 bits are all zero (probability $2^{-11}$)
    does the stream go on, with 53 bits of each further word from ``more``: one word per
    variate, and a vanishing number of extra ones.

    Parameters
    ----------
    words : uint64 array
        One random word per variate (any shape).
    more : callable ``(level, index) -> uint64 array``
        Further random words for the flat positions ``index`` (one each), asked for only
        where the bits so far were all zero; ``level`` counts the extra words of a
        position (1, 2, ...).  A run of zero words is cut at
        [`MAX_ZERO_BITS`][dprec.mechanisms.common.MAX_ZERO_BITS] (probability
        $2^{-2^{62}}$).

    Returns
    -------
    numpy.ndarray of float64, the shape of ``words``, $\le 0$.
    """
    arr = _check_words(words, "words")
    flat = arr.ravel()
    out = np.empty(flat.shape)
    deep = _log_u_shallow(flat, out, gumbel=False)
    if len(deep):
        log_w, w = _deep(flat, deep, more)
        upper = flat[deep] >= _SIGN
        out[deep] = np.where(upper, np.log1p(-w), log_w)
    return out.reshape(arr.shape)


def gumbel_from_words(words: np.ndarray, more: WordSource) -> np.ndarray:
    r"""Standard Gumbel variates $G = -\ln(-\ln U)$ from random words, exact in both tails.

    $U$ as in [`log_uniform_from_words`][dprec.mechanisms.common.log_uniform_from_words]
    (the same words give the same $U$).  The upper tail of $G$ is $U \to 1$: there
    $-\ln U = -\ln(1 - W) \approx W$ keeps the relative precision of $W$, and deep in it
    $G = -\ln W - \ln\frac{-\ln(1 - W)}{W}$ is computed from $\ln W$, so $G$ reaches any
    size with $P(G > g) = 1 - e^{-e^{-g}}$ to a relative $2^{-52}$ (for
    $g \le \mathrm{TAIL\_LIMIT}$).  The lower tail is $U = W \to 0$,
    $G = -\ln(-\ln W)$.

    Returns
    -------
    numpy.ndarray of float64, the shape of ``words``.
    """
    arr = _check_words(words, "words")
    flat = arr.ravel()
    out = np.empty(flat.shape)
    deep = _log_u_shallow(flat, out, gumbel=True)
    if len(deep):
        log_w, w = _deep(flat, deep, more)
        ratio = np.ones_like(w)                              # -ln(1 - W) / W, 1 as W -> 0
        np.divide(-np.log1p(-w), w, out=ratio, where=w > 0.0)
        upper = flat[deep] >= _SIGN
        out[deep] = np.where(upper, -log_w - np.log(ratio), -np.log(-log_w))
    return out.reshape(arr.shape)


def _rng_words(rng: np.random.Generator) -> WordSource:
    def more(level: int, index: np.ndarray) -> np.ndarray:
        return rng.integers(0, 2**64, len(index), dtype=np.uint64)
    return more


def log_uniform(rng: np.random.Generator, shape: int | tuple[int, ...]) -> np.ndarray:
    r"""$\ln U$ exact in both tails, from ``rng`` (one ``rng.integers`` word per
    variate, rarely more: the same seed gives the same numbers); see
    [`log_uniform_from_words`][dprec.mechanisms.common.log_uniform_from_words]."""
    return log_uniform_from_words(rng.integers(0, 2**64, shape, dtype=np.uint64),
                                  _rng_words(rng))


def standard_gumbel(rng: np.random.Generator, shape: int | tuple[int, ...]) -> np.ndarray:
    """Standard Gumbel variates exact in both tails, from ``rng`` (words drawn as by
    [`log_uniform`][dprec.mechanisms.common.log_uniform]); see
    [`gumbel_from_words`][dprec.mechanisms.common.gumbel_from_words]."""
    return gumbel_from_words(rng.integers(0, 2**64, shape, dtype=np.uint64), _rng_words(rng))


def _keyed_words(seed: int, keys: tuple[np.ndarray, ...] | np.ndarray, n_draws: int,
                 stream: int) -> tuple[np.ndarray, WordSource]:
    """The first words ``keyed_bits(seed, keys, n_draws, stream)`` and the source of the
    rare further ones, keyed by the query's ids, the draw and the level."""
    keys = (keys,) if isinstance(keys, np.ndarray) else tuple(keys)
    keys = tuple(np.asarray(k) for k in keys)

    def more(level: int, index: np.ndarray) -> np.ndarray:
        row, column = np.divmod(index, n_draws)
        deeper = tuple(k[row] for k in keys) + (column,)
        return keyed_bits(seed, deeper, 1, stream + (level << 32))[:, 0]

    return keyed_bits(seed, keys, n_draws, stream), more


def keyed_gumbel(seed: int, keys: tuple[np.ndarray, ...] | np.ndarray, n_draws: int,
                 stream: int = 0) -> np.ndarray:
    r"""Standard Gumbel variates exact in both tails that depend only on their key.

    The exact-tailed counterpart of $-\ln(-\ln u)$ for
    [`keyed_uniform`][dprec.utils._rng.keyed_uniform] ("one query, one draw"): row $q$ is a
    function of ``(seed, stream, keys[·][q])`` only.  The first word of draw $j$ is
    ``keyed_bits(seed, keys, n_draws, stream)[q, j]``; its rare further words are keyed
    by the query's ids, $j$ and the level, on streams of their own.

    Returns
    -------
    numpy.ndarray of shape ``(n_queries, n_draws)``, float64.
    """
    return gumbel_from_words(*_keyed_words(seed, keys, n_draws, stream))


def keyed_log_uniform(seed: int, keys: tuple[np.ndarray, ...] | np.ndarray, n_draws: int,
                      stream: int = 0) -> np.ndarray:
    r"""$\ln U$ exact in both tails, keyed as
    [`keyed_gumbel`][dprec.mechanisms.common.keyed_gumbel] (the same words give the same
    $U$); see [`log_uniform_from_words`][dprec.mechanisms.common.log_uniform_from_words].

    Returns
    -------
    numpy.ndarray of shape ``(n_queries, n_draws)``, float64, $\le 0$.
    """
    return log_uniform_from_words(*_keyed_words(seed, keys, n_draws, stream))


def words_for(w: np.ndarray, upper: np.ndarray) -> tuple[np.ndarray, WordSource]:
    r"""The random words that make the cores draw $W = $ ``w`` on the side ``upper``.

    The inverse of the construction of
    [`log_uniform_from_words`][dprec.mechanisms.common.log_uniform_from_words]: every
    normal float ``w`` in $(0, \tfrac12)$ is one of its values $2^{-(J+2)}(1 + f 2^{-52})$,
    and $U = W$ (``upper`` False) or $U = 1 - W$ (``upper`` True).  For audits of the
    cores' exact law (the probability of $W \le w$ is $2\,\mathrm{nextafter}(w, 1)$) and
    for tests that feed them the extreme inputs.

    Returns
    -------
    words : uint64 array of the shape of ``w``
    more : the further words, for the second argument of the cores.
    """
    w = np.asarray(w, dtype=np.float64)
    if not ((w >= 2.0**-1022) & (w < 0.5)).all():
        raise ValueError("w must hold normal floats in (0, 1/2)")
    upper = np.broadcast_to(np.asarray(upper, dtype=bool), w.shape)
    mantissa, exponent = np.frexp(w)                         # w = mantissa 2**exponent
    j = (-exponent - 1).astype(np.int64).ravel()
    f = ((2.0 * mantissa - 1.0) * 2.0**52).astype(np.uint64).ravel()
    head = np.where(j <= 10, np.left_shift(1, np.maximum(10 - j, 0)), 0).astype(np.uint64)
    words = (upper.ravel().astype(np.uint64) << np.uint64(63)) | (head << np.uint64(52)) | f
    rest = j - _HEAD_BITS

    def more(level: int, index: np.ndarray) -> np.ndarray:
        left = rest[index] - 53 * (level - 1)
        bit = np.uint64(63) - np.minimum(left, 52).astype(np.uint64)
        return np.where(left >= 53, np.uint64(0), np.left_shift(np.uint64(1), bit))

    return words.reshape(w.shape), more
