"""Counter-based random numbers: the value at a global index depends only on (seed, index).

The same seed gives the same global array on every mesh, layout and backend;
each device hashes the global indices of its own block (splitmix64), so the
global array is never built. The draws are named arrays (``sizes`` names
the dims); ``xp.asarray(x)`` views one positionally, with the same blocks.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ...array import ShardArray
from ...dtypes import as_dtype, as_float_dtype
from ...errors import ArgumentError, DTypeError
from ...layout import make_layout
from ...memo_hook import memoisable
from .basic import _check_mesh, _sizes_arg, from_blocks

_TWO64 = 1 << 64
_MASK = _TWO64 - 1
_GOLDEN = 0x9E3779B97F4A7C15
_M1 = 0xBF58476D1CE4E5B9
_M2 = 0x94D049BB133111EB
_ROUND = 0xD2B74407B1CE6E93  # spaces the keys of randint's rejection rounds


def _mix_int(z: int) -> int:
    z = (z ^ (z >> 30)) * _M1 & _MASK
    z = (z ^ (z >> 27)) * _M2 & _MASK
    return z ^ (z >> 31)


#: the seeds taken: 64-bit integers, signed or not (a negative seed is its two's complement, as JAX's int64 seeds)
SEED_RANGE = (-(1 << 63), _TWO64)


def _key(seed: int, stream: int, what: str) -> int:
    """The key of ``stream`` for ``seed``.

    Raises:
        DTypeError: ``seed`` is not an integer.
        ArgumentError: ``seed`` is outside [-2**63, 2**64): it would be taken modulo 2**64, so ``2**64`` would
            draw what ``0`` draws.
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise DTypeError(f"{what}: seed must be an integer; got {seed!r}")
    if not SEED_RANGE[0] <= int(seed) < SEED_RANGE[1]:
        raise ArgumentError(
            f"{what}: seed={seed} is outside the 64-bit seeds [-2**63, 2**64) (it would draw what seed % 2**64 draws); "
            f"pass seed % 2**64, or derive seeds in range (e.g. with hash(...) % 2**64)"
        )
    return _mix_int((int(seed) * _GOLDEN + stream * 0xD1B54A32D192ED03) & _MASK)


def _hash(xp: Any, index: Any, key: int) -> Any:
    u = xp.uint64
    z = index * u(_GOLDEN) + u(key)
    z = (z ^ (z >> u(30))) * u(_M1)
    z = (z ^ (z >> u(27))) * u(_M2)
    return z ^ (z >> u(31))


def _index(xp: Any, bounds: tuple[tuple[int, int], ...], sizes: tuple[int, ...]) -> Any:
    """Row-major global linear index of every element of a block."""
    idx = xp.zeros((), dtype=xp.uint64)
    for (lo, hi), n in zip(bounds, sizes):
        idx = idx[..., None] * xp.uint64(n) + xp.arange(lo, hi, dtype=xp.uint64)
    return idx


def _block(xp: Any, bounds: tuple[tuple[int, int], ...], sizes: tuple[int, ...], dtype: np.dtype, sample: Any) -> Any:
    """One block: ``sample`` of its global indices, flat while hashed, then in the block's shape.

    Flat (1-D) so that a 0-d block is hashed as an array: NumPy wraps array
    integers silently but warns when a scalar product wraps, and the hash
    wraps by design.
    """
    idx = _index(xp, bounds, sizes)
    with np.errstate(over="ignore"):  # normal samples beyond a narrow dtype's range round to +-inf, as documented
        return sample(xp, idx.reshape(-1)).astype(dtype).reshape(idx.shape)


def _real(value: Any, name: str, what: str) -> float:
    """``value`` (a real number: Python or NumPy int, float or bool) as a float.

    Raises:
        DTypeError: ``value`` is not a real number (a string, a complex number, an array).
        ArgumentError: it is an integer too large for a float.
    """
    if not isinstance(value, (numbers.Real, np.bool_)):
        raise DTypeError(f"{what} takes {name} as a real number; got {type(value).__name__} {value!r:.60}")
    try:
        return float(value)
    except OverflowError:
        raise ArgumentError(f"{what}: {name}={value!r:.60} is beyond the range of a float") from None


def _integer(value: Any, name: str, what: str) -> int:
    """``value`` (a real number, truncated toward zero as NumPy's ``integers`` does) as an int.

    Raises:
        DTypeError: ``value`` is not a real number.
        ArgumentError: it is NaN or infinite.
    """
    if isinstance(value, (numbers.Integral, np.bool_)):
        return int(value)
    v = _real(value, name, what)
    if not math.isfinite(v):
        raise ArgumentError(f"{what} needs finite integer bounds; got {name}={value!r}")
    return int(v)


def _unit(xp: Any, h: Any, open_zero: bool) -> Any:
    """Float64 in [0, 1) (or (0, 1] with ``open_zero``) from the top 53 bits."""
    v = (h >> xp.uint64(11)).astype(xp.float64)
    return (v + 1.0 if open_zero else v) * (1.0 / 9007199254740992.0)


def _make(
    mesh: Any,
    sizes: Mapping[str, int],
    layout: Any,
    what: str,
    prepare: Callable[[], tuple[np.dtype, Any]],
    values: Mapping[str, Any],
) -> ShardArray:
    """The array of samples: ``prepare()`` checks the arguments and gives ``(dtype, sample)``. An argument that
    one process finds bad is an error on every process of an MPI job (``comm.spmd.raise_agreed``); ``values`` (the
    seed and the distribution's parameters) differing between processes is a ``CommError`` on every process."""
    mesh = _check_mesh(mesh, what)
    try:
        dtype, sample = prepare()
        dims, shape = _sizes_arg(sizes, what)
        lay = make_layout(mesh, dims, shape, layout, what=f"array {dict(zip(dims, shape))}")
    except Exception as e:
        mesh.comm.check_spmd(what, {}, None, failure=e)
        raise
    mesh.comm.check_spmd(what, dict(zip(dims, shape)), dtype, layout=lay, values=values)
    backend = mesh.backend
    xp = backend.xp
    if not backend.has_data:
        return from_blocks(mesh, lay, dtype, lambda b: xp.zeros(tuple(e - s for s, e in b), dtype))
    return from_blocks(mesh, lay, dtype, lambda b: _block(xp, b, shape, dtype, sample))


def uniform(
    mesh: Any,
    sizes: Mapping[str, int],
    low: float = 0.0,
    high: float = 1.0,
    seed: int = 0,
    dtype: Any = "float32",
    layout: Any = None,
) -> ShardArray:
    """Uniform samples in [low, high), identical for every mesh, layout and backend.

    Args:
        mesh: the mesh.
        sizes: ``{dim: size}`` in dim order (``{}``: one sample, a 0-d array).
        low, high: the bounds, real numbers; ``high < low`` gives samples in (high, low], ``high == low`` gives
            ``low`` (as NumPy's ``uniform``). A sample that rounds onto ``high`` in ``dtype`` is moved to the value
            of ``dtype`` nearest ``high`` inside the interval.
        seed: an integer in [-2**63, 2**64): the values depend only on (seed, global index).
        dtype: a real float dtype; None is the default, float32 (as ``sa.full``'s floats).
        layout: ``{dim: axes}``; None follows the mesh's rules.

    Raises:
        DTypeError: a non-float ``dtype``, a non-integer ``seed``, bounds that are not real numbers.
        ArgumentError: non-finite bounds or span, bounds that overflow ``dtype``, a seed out of range.

    Example:
        >>> a = sa.random.uniform(sa.Mesh({"row": 2, "col": 2}), {"i": 5, "j": 3}, seed=7, layout={"i": "row"})
        >>> b = sa.random.uniform(sa.Mesh({"d": 1}), {"i": 5, "j": 3}, seed=7)
        >>> bool((a.numpy() == b.numpy()).all())
        True
    """

    def prepare() -> tuple[np.dtype, Any]:
        dt = as_float_dtype("float32" if dtype is None else dtype, "sa.random.uniform")
        lo, hi = _uniform_bounds(low, high, dt)
        key = _key(seed, 1, "sa.random.uniform")
        return dt, lambda xp, i: _below(xp, lo + (hi - lo) * _unit(xp, _hash(xp, i, key), False), dt, lo, hi)

    return _make(mesh, sizes, layout, "sa.random.uniform", prepare, {"low": low, "high": high, "seed": seed})


def _uniform_bounds(low: Any, high: Any, dtype: np.dtype) -> tuple[float, float]:
    """``uniform``'s ``(low, high)`` as floats, checked: finite, with a finite span, and finite in ``dtype``.

    ``high < low`` stays allowed (samples in (high, low]) and ``high == low`` gives ``low``, as NumPy's ``uniform``.

    Raises:
        DTypeError: ``low`` or ``high`` is not a real number.
        ArgumentError: ``low``, ``high`` or ``high - low`` is not finite (NumPy raises too), or ``low`` or
            ``high`` overflows ``dtype`` (1e6 in float16 gave infinities).
    """
    what = "sa.random.uniform"
    lo, hi = _real(low, "low", what), _real(high, "high", what)
    if not (math.isfinite(lo) and math.isfinite(hi) and math.isfinite(hi - lo)):
        raise ArgumentError(f"{what} needs finite low, high and high - low; got low={low!r}, high={high!r}")
    with np.errstate(over="ignore"):
        fits = bool(np.isfinite(np.asarray([lo, hi]).astype(dtype).astype(np.float64)).all())
    if not fits:
        raise ArgumentError(
            f"{what}: low={low!r} or high={high!r} overflows {dtype.name}; pass a wider dtype (e.g. float32)"
        )
    return lo, hi


def _below(xp: Any, v: Any, dtype: np.dtype, low: float, high: float) -> Any:
    """``v`` rounded to ``dtype``, the values that round onto ``high`` (or past it) moved to the value of ``dtype``
    nearest ``high`` on ``low``'s side.

    A float64 sample just under ``high`` rounds to ``high`` itself in a
    narrow dtype (bfloat16 has 8 significant bits: 0.999 -> 1.0); the
    interval stays half-open, [low, high) or, for ``high < low``, (high, low].
    A value of ``dtype`` strictly inside stays a possible sample: in float16,
    [1, 1.001) holds 1 and 1.0009765625 (``high`` rounds to the latter).
    """
    out = v.astype(dtype)
    if high == low:
        return out
    up = high > low
    edge = np.asarray(high).astype(dtype)[()]  # the value of dtype nearest high, then the last inside the interval
    if float(edge) >= high if up else float(edge) <= high:
        edge = np.nextafter(edge, np.asarray(-np.inf if up else np.inf).astype(dtype)[()])
    return xp.where(out > edge, edge, out) if up else xp.where(out < edge, edge, out)


# the layout search replays it (shardarray.plan.memo; the seed changes values only); a no-op elsewhere
@memoisable("normal", values_only={"seed": (0, lambda s: isinstance(s, (int, np.integer)) and not isinstance(s, bool))})
def normal(
    mesh: Any,
    sizes: Mapping[str, int],
    mean: float = 0.0,
    std: float = 1.0,
    seed: int = 0,
    dtype: Any = "float32",
    layout: Any = None,
) -> ShardArray:
    """Normal samples (Box-Muller on two hashed streams), identical for every mesh, layout and backend.

    Args:
        mesh: the mesh.
        sizes: ``{dim: size}`` in dim order (``{}``: one sample, a 0-d array).
        mean, std: real numbers, ``std >= 0`` (``std == 0`` gives ``mean``; infinite ones give infinities, as NumPy's
            ``normal``).
        seed: an integer in [-2**63, 2**64): the values depend only on (seed, global index).
        dtype: a real float dtype; None is the default, float32. Samples beyond its range round to +-inf.
        layout: ``{dim: axes}``; None follows the mesh's rules.

    Raises:
        DTypeError: a non-float ``dtype``, a non-integer ``seed``, ``mean`` or ``std`` not a real number.
        ArgumentError: ``std`` negative or NaN, a seed out of range.

    Example:
        >>> x = sa.random.normal(sa.Mesh({"row": 2, "col": 2}), {"batch": 8, "io": 4}, seed=0, layout={"io": "col"})
        >>> x.shape, x.dtype
        ((8, 4), dtype('float32'))
    """

    def prepare() -> tuple[np.dtype, Any]:
        dt = as_float_dtype("float32" if dtype is None else dtype, "sa.random.normal")
        mu, sigma = _real(mean, "mean", "sa.random.normal"), _real(std, "std", "sa.random.normal")
        if not sigma >= 0:
            raise ArgumentError(f"sa.random.normal needs std >= 0 (a standard deviation); got std={std!r}")
        k1, k2 = _key(seed, 2, "sa.random.normal"), _key(seed, 3, "sa.random.normal")

        def sample(xp: Any, i: Any) -> Any:
            u1 = _unit(xp, _hash(xp, i, k1), True)
            u2 = _unit(xp, _hash(xp, i, k2), False)
            return mu + sigma * (xp.sqrt(-2.0 * xp.log(u1)) * xp.cos((2.0 * math.pi) * u2))

        return dt, sample

    return _make(mesh, sizes, layout, "sa.random.normal", prepare, {"mean": mean, "std": std, "seed": seed})


def randint(
    mesh: Any,
    sizes: Mapping[str, int],
    low: int,
    high: int | None = None,
    seed: int = 0,
    dtype: Any = "int64",
    layout: Any = None,
) -> ShardArray:
    """Integers in [low, high) (e.g. token ids), identical for every mesh, layout and backend, all equally likely.

    Args:
        mesh: the mesh.
        sizes: ``{dim: size}`` in dim order.
        low, high: integer bounds (real numbers are truncated toward zero, as NumPy's ``integers``); with ``high``
            None the integers are in [0, low), as NumPy's ``integers(low)``.
        seed: an integer in [-2**63, 2**64): the values depend only on (seed, global index).
        dtype: an integer dtype holding [low, high); None is the default, int64.
        layout: ``{dim: axes}``; None follows the mesh's rules.

    Raises:
        DTypeError: a non-integer ``dtype`` or ``seed``, bounds that are not real numbers.
        ArgumentError: ``high <= low``, bounds outside ``dtype`` or not finite, a seed out of range.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> t = sa.random.randint(mesh, {"batch": 4, "seq": 8}, 0, 256, layout={"batch": "row"})
        >>> t.dtype, bool((t.numpy() < 256).all())
        (dtype('int64'), True)
    """
    what = "sa.random.randint"

    def prepare() -> tuple[np.dtype, Any]:
        dt = as_dtype("int64" if dtype is None else dtype)
        if dt.kind not in "iu":
            raise DTypeError(f"{what} makes integers; dtype {dt.name!r} is not an integer dtype")
        lo, hi = (
            (0, _integer(low, "low", what))
            if high is None
            else (_integer(low, "low", what), _integer(high, "high", what))
        )
        if not hi > lo:
            got = f"low={low}, high={high}" if high is not None else f"high=None and low={low}: [0, {low})"
            raise ArgumentError(f"{what} needs high > low; got {got}")
        info = np.iinfo(dt)
        if lo < int(info.min) or hi - 1 > int(info.max):
            raise ArgumentError(
                f"{what}: [low, high) = [{lo}, {hi}) is out of bounds for {dt.name}, whose values are "
                f"{info.min}..{info.max}; pass a wider dtype or bounds inside it"
            )
        span, offset = hi - lo, lo % _TWO64
        key = _key(seed, 4, what)
        return dt, lambda xp, i: _below_span(xp, i, key, span) + xp.uint64(offset)  # uint64 wraps: lo may be < 0

    return _make(mesh, sizes, layout, what, prepare, {"low": low, "high": high, "seed": seed})


def _below_span(xp: Any, index: Any, key: int, span: int) -> Any:
    """Unbiased uint64 integers in [0, ``span``) at the flat global ``index`` (1 <= span <= 2**64).

    Rejection sampling: a hash at or above the largest multiple of ``span``
    below 2**64 is replaced by the hash of the next round (a key of its own)
    until none is left, so every value is equally likely (a plain ``hash % span``
    favours the small values: twice as likely for a span of 3·2**62). A round
    rejects less than half of what is left, and less than 2**-32 of it for
    spans up to 2**32; the result still depends only on (seed, index).
    """
    h = _hash(xp, index, key)
    if span == _TWO64:
        return h
    limit = _TWO64 - _TWO64 % span
    if limit < _TWO64:
        top = xp.uint64(limit)
        bad = xp.nonzero(h >= top)[0]
        rnd = 0
        while bad.size:
            rnd += 1
            h[bad] = _hash(xp, index[bad], _mix_int((key + rnd * _ROUND) & _MASK))
            bad = bad[h[bad] >= top]
    return h % xp.uint64(span)
