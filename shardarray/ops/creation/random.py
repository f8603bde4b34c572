"""Counter-based random numbers: the value at a global index depends only on (seed, index).

The same seed gives the same global array on every mesh, layout and backend;
each device hashes the global indices of its own block (splitmix64), so the
global array is never built.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from ...array import ShardArray
from ...dtypes import as_dtype, as_float_dtype
from ...errors import ArgumentError, DTypeError
from ...layout import make_layout
from ...memo_hook import memoisable
from .basic import _check_mesh, _sizes_arg, from_blocks

_MASK = (1 << 64) - 1
_GOLDEN = 0x9E3779B97F4A7C15
_M1 = 0xBF58476D1CE4E5B9
_M2 = 0x94D049BB133111EB


def _mix_int(z: int) -> int:
    z = (z ^ (z >> 30)) * _M1 & _MASK
    z = (z ^ (z >> 27)) * _M2 & _MASK
    return z ^ (z >> 31)


def _key(seed: int, stream: int) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise DTypeError(f"seed must be an integer; got {seed!r}")
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


def _unit(xp: Any, h: Any, open_zero: bool) -> Any:
    """Float64 in [0, 1) (or (0, 1] with ``open_zero``) from the top 53 bits."""
    v = (h >> xp.uint64(11)).astype(xp.float64)
    return (v + 1.0 if open_zero else v) * (1.0 / 9007199254740992.0)


def _make(mesh: Any, sizes: Mapping[str, int], layout: Any, dtype: np.dtype, what: str, sample: Any) -> ShardArray:
    mesh = _check_mesh(mesh, what)
    dims, shape = _sizes_arg(sizes, what)
    lay = make_layout(mesh, dims, shape, layout, what=f"array {dict(zip(dims, shape))}")
    mesh.comm.check_spmd(what, dict(zip(dims, shape)), dtype, layout=lay)
    backend = mesh.backend
    xp = backend.xp
    if not backend.has_data:
        return from_blocks(mesh, lay, dtype, lambda b: xp.zeros(tuple(e - s for s, e in b), dtype))
    return from_blocks(mesh, lay, dtype, lambda b: sample(xp, _index(xp, b, shape)).astype(dtype))


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

    Example:
        >>> a = sa.random.uniform(sa.Mesh({"row": 2, "col": 2}), {"i": 5, "j": 3}, seed=7, layout={"i": "row"})
        >>> b = sa.random.uniform(sa.Mesh({"d": 1}), {"i": 5, "j": 3}, seed=7)
        >>> bool((a.numpy() == b.numpy()).all())
        True
    """
    dt = as_float_dtype(dtype, "sa.random.uniform")
    key = _key(seed, 1)
    return _make(
        mesh,
        sizes,
        layout,
        dt,
        "sa.random.uniform",
        lambda xp, i: _below(xp, low + (high - low) * _unit(xp, _hash(xp, i, key), False), dt, low, high),
    )


def _below(xp: Any, v: Any, dtype: np.dtype, low: float, high: float) -> Any:
    """``v`` rounded to ``dtype``, the values that round up to ``high`` moved to the largest one below it.

    A float64 sample just under ``high`` rounds to ``high`` itself in a
    narrow dtype (bfloat16 has 8 significant bits: 0.999 -> 1.0); the
    interval stays half-open.
    """
    out = v.astype(dtype)
    if not high > low:
        return out
    top = np.asarray(high).astype(dtype)[()]
    return xp.where(out >= top, np.nextafter(top, np.asarray(low).astype(dtype)[()]), out)


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
    """Normal samples (Box-Muller on two hashed streams), identical for every mesh and layout.

    Example:
        >>> x = sa.random.normal(sa.Mesh({"row": 2, "col": 2}), {"batch": 8, "io": 4}, seed=0, layout={"io": "col"})
        >>> x.shape, x.dtype
        ((8, 4), dtype('float32'))
    """
    dt = as_float_dtype(dtype, "sa.random.normal")
    if not std >= 0:
        raise ArgumentError(f"sa.random.normal needs std >= 0 (a standard deviation); got std={std!r}")
    k1, k2 = _key(seed, 2), _key(seed, 3)

    def sample(xp: Any, i: Any) -> Any:
        u1 = _unit(xp, _hash(xp, i, k1), True)
        u2 = _unit(xp, _hash(xp, i, k2), False)
        return mean + std * (xp.sqrt(-2.0 * xp.log(u1)) * xp.cos((2.0 * math.pi) * u2))

    return _make(mesh, sizes, layout, dt, "sa.random.normal", sample)


def randint(
    mesh: Any,
    sizes: Mapping[str, int],
    low: int,
    high: int,
    seed: int = 0,
    dtype: Any = "int64",
    layout: Any = None,
) -> ShardArray:
    """Integers in [low, high) (e.g. token ids), identical for every mesh and layout.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> t = sa.random.randint(mesh, {"batch": 4, "seq": 8}, 0, 256, layout={"batch": "row"})
        >>> t.dtype, bool((t.numpy() < 256).all())
        (dtype('int64'), True)
    """
    dt = as_dtype(dtype)
    if dt.kind not in "iu":
        raise DTypeError(f"sa.random.randint makes integers; dtype {dt.name!r} is not an integer dtype")
    if not high > low:
        raise ArgumentError(f"sa.random.randint needs high > low; got low={low}, high={high}")
    span = int(high) - int(low)
    key = _key(seed, 4)
    return _make(
        mesh,
        sizes,
        layout,
        dt,
        "sa.random.randint",
        lambda xp, i: (_hash(xp, i, key) % xp.uint64(span)).astype(xp.int64) + int(low),
    )
