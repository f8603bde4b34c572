"""NumPy's in-place writes on positional arrays: ``np.copyto`` (``where=`` too), ``np.putmask``, ``np.place``.

Each registers in ``positional_compose.COMPOSED`` (imported by ``positional_functions``) and ends in the array's own
write (``dst[...] = ...``: the lock of in-place writes, the tape's refusal, ``copies``' watch). A write takes host
data for its values and masks, as ``x[mask] = v`` does. The choices for distributed arrays:

* ``np.copyto(dst, src, casting="same_kind", where=True)``: ``dst[...] = src`` (broadcast, cast under ``casting``);
  with a mask, ``xp.where(mask, src, dst)``, one elementwise op per block.
* ``np.putmask(a, mask, values)``: ``a.flat[n] = values.flat[n % values.size]`` where the mask is set: the values
  laid out on ``a``'s shape (a routed ``take`` when they are shorter), then ``xp.where``.
* ``np.place(arr, mask, vals)``: the k-th set entry (C order) takes ``vals[k % len(vals)]``: the ranks are a
  distributed scan of the flattened mask (``xp.cumulative_sum``), then a routed ``take`` of the values.

Example:
    >>> import shardarray.array_api as xp
    >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
    ...     a = xp.asarray([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    ...     np.place(a, a > 2.5, [-1.0, -2.0])
    >>> a.numpy()
    array([[ 1.,  2., -1.],
           [-2., -1., -2.]])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..array import ShardArray
from ..errors import ArgumentError, DimensionError, DTypeError
from .common import mixing_error
from .positional_args import host_value
from .positional_compose import composed


@composed("copyto")
def _copyto(xp: Any, what: str, dst: Any, src: Any, casting: str = "same_kind", where: Any = True) -> Any:
    """``np.copyto(dst, src)`` is the write ``dst[...] = src``: like positional writes it takes host data for
    ``src`` (a NumPy array too, broadcast and cast under ``casting``); a NumPy ``dst`` is refused (filling it
    would gather ``src``). ``where=mask`` (an array or host booleans broadcast to ``dst``'s shape) writes
    ``xp.where(mask, src, dst)``: one elementwise op per block, the entries where the mask is False unchanged."""
    if isinstance(dst, np.ndarray):
        raise mixing_error(what, dst, "dst", src)
    if not isinstance(dst, ShardArray):
        return NotImplemented
    value = src if isinstance(src, np.ndarray) and src.ndim else host_value(what, src, "src", dst)
    dtype = value.dtype if isinstance(value, ShardArray) else np.result_type(value)
    if not np.can_cast(dtype, dst.dtype, casting):  # type: ignore[arg-type]
        raise DTypeError(f"{what}: cannot cast {dtype} to {dst.dtype} under casting={casting!r}")
    if where is True:
        dst[...] = value
        return None
    # (host booleans too: a write takes host data, as ``src`` and ``dst[mask] = v`` do)
    mask = where if isinstance(where, ShardArray) else xp.asarray(np.asarray(where), device=dst.mesh)
    if mask.dtype != np.bool_:
        raise DTypeError(f"{what}: where= must be booleans; got dtype {mask.dtype}")
    v = value if isinstance(value, ShardArray) else xp.asarray(np.asarray(value, dtype=dst.dtype), device=dst.mesh)
    dst[...] = xp.where(xp.broadcast_to(mask, dst.shape), xp.astype(v, dst.dtype), dst)
    return None


def _cycled(xp: Any, what: str, values: Any, ranks: Any, dst: ShardArray) -> Any:
    """``values`` (flattened; host data or an array) at ``ranks % values.size`` (an int64 array): NumPy's repetition
    of a short ``values`` in ``putmask``/``place`` (a routed ``take`` of the values, the size of ``ranks``)."""
    v = values if isinstance(values, ShardArray) else xp.asarray(np.asarray(values, dtype=dst.dtype), device=dst.mesh)
    v = xp.reshape(v, (-1,))
    if v.size == 0:
        raise ArgumentError(f"{what}: the values are empty; give at least one value to write (NumPy's ValueError)")
    return xp.take(xp.astype(v, dst.dtype), ranks % v.size, axis=0)


def _write_mask(xp: Any, what: str, a: Any, mask: Any) -> tuple[ShardArray, Any]:
    """``putmask``/``place``'s array (an Array, written in place) and its mask as a boolean Array of its shape (host
    booleans too: a write takes host data)."""
    if not isinstance(a, ShardArray):
        raise mixing_error(what, a, "a", mask)
    m = mask if isinstance(mask, ShardArray) else xp.asarray(np.asarray(mask), device=a.mesh)
    if m.dtype != np.bool_:
        m = xp.not_equal(m, 0)  # (NumPy reads any mask by its truth)
    if m.shape != a.shape:
        raise DimensionError(f"{what}: the mask has shape {m.shape}, the array {a.shape}; they must be the same")
    return a, m


@composed("putmask")
def _putmask(xp: Any, what: str, a: Any, mask: Any, values: Any) -> None:
    """``np.putmask(a, mask, values)``: ``a.flat[n] = values.flat[n % values.size]`` where ``mask.flat[n]``, in place
    (``xp.where`` of the values laid out on ``a``'s shape: one routed ``take`` when ``values`` is shorter)."""
    a, m = _write_mask(xp, what, a, mask)
    size = a.size
    src = values if isinstance(values, ShardArray) and values.shape == a.shape else None
    if src is None:
        flat = _cycled(xp, what, values, xp.arange(size, dtype=xp.int64, device=a.mesh), a)
        src = xp.reshape(flat, a.shape)
    a[...] = xp.where(m, xp.astype(src, a.dtype), a)


@composed("place")
def _place(xp: Any, what: str, arr: Any, mask: Any, vals: Any) -> None:
    """``np.place(arr, mask, vals)``: the k-th True entry of ``mask`` (in C order) takes ``vals[k % len(vals)]``, in
    place (the ranks are a distributed scan of the flattened mask: ``xp.cumulative_sum``; then a routed ``take``)."""
    arr, m = _write_mask(xp, what, arr, mask)
    flat = xp.reshape(m, (-1,))
    if not bool(xp.any(flat)):
        return None
    ranks = xp.cumulative_sum(xp.astype(flat, xp.int64)) - 1
    src = _cycled(xp, what, vals, xp.where(flat, ranks, 0), arr)
    arr[...] = xp.where(m, xp.reshape(src, arr.shape), arr)
    return None
