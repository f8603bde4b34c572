"""NumPy's ``x.view(dtype)``, ``x.put(ind, v, mode)`` / ``np.put`` and ``np.fill_diagonal`` on positional arrays.

``x.view(dtype)`` reinterprets the bytes of every block, as NumPy's view does
(each block is C-contiguous on its device): a dtype of the same itemsize
(``float32`` <-> ``int32``/``uint32``, ``int64`` <-> ``float64``, ``bool`` <->
``int8``/``uint8``) keeps the shape and layout; one of another itemsize
changes the length of the last axis by the ratio of the itemsizes (NumPy's
rule: its bytes must divide evenly), which each block can do alone only when
the last axis is not split, so a split last axis raises ``sa.LayoutError``.
Nothing moves between devices (a pending sum is resolved first).

*Sharing* (NumPy's view shares memory; the choice here): the view holds the
same blocks as ``x``, no copy, but the library's in-place writes
(``x[...] = v``, ``x += 1``, ``x.put``) replace the blocks of the array written
into instead of mutating them, so a later write into ``x`` is not seen
through the view, nor one into the view through ``x``: arrays that only share
blocks behave as JAX's immutable arrays do (as a slice taken before a write
does here). ``x.view()`` (no dtype) is a new Array of ``x``'s dtype on the same
blocks. ``x.view(np.ndarray)`` (a NumPy array type) raises ``sa.DTypeError``:
a NumPy array of a distributed array is the explicit gather ``np.asarray(x)``.

``np.put(x, ind, v, mode="raise")`` (and ``x.put``) writes ``v`` at the flat
(row-major) positions ``ind`` of ``x``, in place, with NumPy's semantics:
``ind`` and ``v`` are flattened, ``v`` repeats cyclically to ``ind``'s length
(its extra entries are unused), a position written several times keeps the
last value, the values are cast to ``x``'s dtype as NumPy's ``put`` casts
(unsafely: ``2.7`` into ``int8`` is ``2``; a Python int out of the dtype's
range or a complex into a real dtype raises ``sa.DTypeError``, as NumPy's
OverflowError/TypeError); ``mode="raise"`` allows negative positions from the
end and raises ``sa.OutOfBoundsError`` (an IndexError) for the others out of
range, ``"wrap"`` takes them modulo ``x.size``, ``"clip"`` clips them to
``[0, x.size - 1]`` (negative ones to 0, as NumPy). An empty ``v`` writes
nothing, positions unchecked (NumPy's no-op); an empty ``x`` with positions raises. The
positions become coordinates (``np.unravel_index`` for host indices, integer
arithmetic on a distributed index array) and the write is the routed
integer-array write of ``x[coords] = v`` (``ops/indexing/id_writes.py``: the
(position, value) pairs travel to the devices owning them, no gather of
``x``). Host indices (a list, a NumPy array) are index-like host data, taken
as ``x[idx]`` takes them; float or boolean indices raise ``sa.DTypeError``
(NumPy casts floats silently).

``np.fill_diagonal(x, val, wrap=False)`` writes ``val`` on the main diagonal of ``x``, in place, as NumPy's
(which is ``x.flat[:end:step] = val``): a 2-d ``x`` of any shape gets ``x[i, i]`` for ``i < min(n, m)``, a
tall one with ``wrap=True`` the diagonal restarting every ``m + 1`` rows; an ``x`` of 3 or more dims must
have all its sizes equal (else ``sa.DimensionError``, NumPy's ValueError) and gets ``x[i, i, ..., i]``; a
1-d or 0-d ``x`` raises ``sa.DimensionError``. ``val`` is flattened and repeats cyclically, cast as
``np.put`` casts: it is ``np.put`` at those flat positions (host positions, the routed write; no gather).

NumPy's file writers (``np.save``, ``np.savez``...) refuse a distributed array here as for named arrays
(``named_functions.writer_error``: ``sa.io.write_npy``, or the writer on ``x.numpy()``).

Example:
    >>> import shardarray.array_api as xp
    >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
    ...     x = xp.asarray([[1.0, 2.0], [3.0, 4.0]], dtype=xp.float32)
    >>> bool(np.asarray(x.view(xp.int32))[0, 0] == np.float32(1.0).view(np.int32)), x.view(xp.int32).layout
    (True, {'dim0': ('row',), 'dim1': ('col',)})
    >>> x.relayout({"dim1": None}).view(np.float16).shape  # (another itemsize: the last axis unsplit)
    (2, 4)
    >>> x.put([0, 3, 3], [9.0, 7.0, 8.0]); np.asarray(x)
    array([[9., 2.],
           [3., 8.]], dtype=float32)
    >>> np.fill_diagonal(x, -1); np.asarray(x)
    array([[-1.,  2.],
           [ 3., -1.]], dtype=float32)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..array import ShardArray
from ..backend.meta import MetaArray
from ..core.common import map_blocks
from ..core.relayout import resolve
from ..core.tape import nondifferentiable
from ..dtypes import as_dtype
from ..errors import ArgumentError, DimensionError, DTypeError, LayoutError, OutOfBoundsError
from ..layout import Layout
from .common import short
from .named_functions import FILE_WRITERS, writer_error
from .positional_compose import composed

MODES = ("raise", "wrap", "clip")


@nondifferentiable("view")
def view_blocks(x: ShardArray, dtype: np.dtype) -> ShardArray:
    """``x``'s blocks reinterpreted as ``dtype`` on their devices (the checks are ``view``'s); a dtype of another
    itemsize scales the last dim's length, which no mesh axis of more than one device splits."""
    if x.pending:
        x = resolve(x, x.spec.axes)
    xpb, old, layout = x.mesh.backend.xp, x.dtype.itemsize, x.spec
    if dtype.itemsize != old:
        layout = Layout(layout.dims, (*layout.sizes[:-1], layout.sizes[-1] * old // dtype.itemsize), layout.axes)

    def block(s: Any) -> Any:
        if isinstance(s, MetaArray):  # (the meta backend: shapes only)
            return MetaArray((*s.shape[:-1], s.shape[-1] * old // dtype.itemsize) if s.ndim else (), dtype)
        return s.view(dtype) if dtype.itemsize == old else xpb.ascontiguousarray(s).view(dtype)

    return ShardArray(x.mesh, layout, dtype, map_blocks(x.mesh, layout.used_axes, block, x.shards))


def view(self: ShardArray, dtype: Any = None, type: Any = None) -> Any:
    """NumPy's ``x.view(dtype)``: the bytes of every block reinterpreted as ``dtype`` (module docstring: a new array
    on the same blocks; later in-place writes into either are not seen by the other)."""
    if isinstance(dtype, builtin_type) and issubclass(dtype, (np.ndarray, ShardArray)):
        dtype, type = None, dtype
    if type is not None and not (isinstance(type, builtin_type) and isinstance(self, type)):
        raise DTypeError(
            f"x.view: type={short(type)} is not supported: a distributed array is not viewed as another array "
            f"type; np.asarray(x) is the explicit gather into a NumPy array"
        )
    dt = self.dtype if dtype is None else as_dtype(dtype)
    if dt.itemsize != self.dtype.itemsize:
        _check_resize(self, dt)
    return view_blocks(self, dt)


builtin_type = type


def _check_resize(x: ShardArray, dt: np.dtype) -> None:
    """Raise where a view as ``dt`` (another itemsize than ``x``'s) cannot change the last axis' length."""
    what = f"x.view({dt})"
    if x.ndim == 0:
        raise DimensionError(
            f"{what}: a 0-d array of {x.dtype} ({x.dtype.itemsize} bytes) can only be viewed as a dtype of the same "
            f"itemsize (as in NumPy); reshape it to 1-D first (x.reshape(1))"
        )
    d, n = x.dims[-1], x.shape[-1]
    if (n * x.dtype.itemsize) % dt.itemsize:
        raise DimensionError(
            f"{what}: the last axis (size {n}) holds {n * x.dtype.itemsize} bytes per row, not a multiple of "
            f"{dt}'s itemsize {dt.itemsize} (NumPy's rule); view a dtype whose itemsize divides it"
        )
    axes = x.spec.of(d)
    if x.mesh.axes_size(axes) > 1:
        raise LayoutError(
            f"{what}: the last axis (dim {d!r}, size {n}) is split over mesh axes {axes}; a view as a dtype of "
            f"another itemsize ({x.dtype} is {x.dtype.itemsize} bytes, {dt} {dt.itemsize}) changes that axis' "
            f"length in every block, so it must not be split: move the split off it first "
            f"(x = x.relayout({{{d!r}: None}})), or view as a dtype of itemsize {x.dtype.itemsize}"
        )


# ----------------------------------------------------------------------------------------------- put
def put(self: ShardArray, ind: Any, v: Any, mode: str = "raise") -> None:
    """NumPy's ``x.put(ind, v, mode="raise")``: ``np.put(x, ind, v, mode)`` (module docstring), in place."""
    np.put(self, ind, v, mode=mode)  # type: ignore[arg-type]


@composed("put")
def _put(xp: Any, what: str, a: Any, ind: Any, v: Any, mode: str = "raise") -> None:
    if not isinstance(a, ShardArray):
        raise DTypeError(
            f"{what}: the array written into is a {builtin_type(a).__name__}, not a distributed array; writing "
            f"distributed values into it would be a silent gather: convert them with np.asarray(v) first"
        )
    if mode not in MODES:
        raise ArgumentError(f"{what}: mode must be one of 'raise', 'wrap' or 'clip'; got {short(mode)}")
    if isinstance(v, ShardArray):
        vals = xp.reshape(v, (-1,)) if v.ndim != 1 else v
        if vals.dtype.kind == "c" and a.dtype.kind != "c":
            raise DTypeError(f"{what}: complex values ({vals.dtype}) do not go into an array of {a.dtype}")
        vals = xp.astype(vals, a.dtype) if vals.dtype != a.dtype else vals
    else:
        try:
            vals = np.asarray(v, dtype=a.dtype).reshape(-1)
        except (TypeError, ValueError, OverflowError) as e:
            raise DTypeError(f"{what}: the values {short(v)} do not cast to the array's dtype {a.dtype}: {e}") from None
    if isinstance(ind, ShardArray):
        flat = _flat_ids_device(xp, what, a, ind, mode, vals.shape[0] == 0)
    else:
        flat = _flat_ids_host(what, a, ind, mode, vals.shape[0] == 0)
    if flat is None:
        return
    m = flat.shape[0]
    if vals.shape[0] != m:  # (v repeats cyclically to ind's length, as NumPy's put)
        cycle = np.arange(m, dtype=np.int64) % vals.shape[0]
        vals = xp.take(vals, cycle, axis=0) if isinstance(vals, ShardArray) else vals[cycle]
    if a.ndim == 0:  # (every position is 0: the last write wins)
        a[...] = vals[-1]
        return
    if isinstance(flat, ShardArray):
        coords: list[Any] = []
        for n in reversed(a.shape[1:]):
            coords.insert(0, flat % n)
            flat = flat // n
        coords.insert(0, flat)
    else:
        coords = list(np.unravel_index(flat, a.shape))
    a[tuple(coords)] = vals


@composed("fill_diagonal")
def _fill_diagonal(xp: Any, what: str, a: Any, val: Any, wrap: Any = False) -> None:
    """``np.fill_diagonal(a, val, wrap)``: ``np.put`` at the diagonal's flat positions (module docstring). (NumPy
    dispatches on ``a`` alone: ``a`` is a positional array here.)"""
    if a.ndim < 2:
        raise DimensionError(f"{what}: the array must be at least 2-d; got shape {a.shape}")
    if a.ndim == 2:
        step, end = a.shape[1] + 1, (a.size if wrap else min(a.size, a.shape[1] * a.shape[1]))
    elif len(set(a.shape)) != 1:
        raise DimensionError(
            f"{what}: all the sizes of an array of {a.ndim} dims must be equal (NumPy's rule); got shape {a.shape}"
        )
    else:
        step, end = 1 + sum(math.prod(a.shape[: k + 1]) for k in range(a.ndim - 1)), a.size
    _put(xp, what, a, np.arange(0, end, step, dtype=np.int64), val)


@composed(*FILE_WRITERS)
def _refuse_writer(xp: Any, what: str, *args: Any, **kwargs: Any) -> None:
    """``np.save``/``savez``/``savez_compressed``/``savetxt``: refused, naming ``sa.io.write_npy`` and the
    explicit gather (``named_functions.writer_error``)."""
    raise writer_error(what)


def _empty_target(what: str, a: ShardArray) -> OutOfBoundsError:
    return OutOfBoundsError(f"{what}: cannot write into an empty array (shape {a.shape}): it has no positions")


def _flat_ids_host(what: str, a: ShardArray, ind: Any, mode: str, no_values: bool) -> Any:
    """Host flat positions as an int64 NumPy array in ``[0, a.size)`` (``mode`` applied), or None when nothing is
    written (no positions, or ``no_values``: NumPy checks only that an empty array is not written into then)."""
    arr = np.asarray(ind)
    if arr.size == 0:
        return None
    if arr.dtype.kind not in "iu":
        raise DTypeError(f"{what}: the flat positions must be integers; got {arr.dtype} ({short(ind)})")
    n = a.size
    if n == 0:
        raise _empty_target(what, a)
    if no_values:
        return None
    flat = arr.reshape(-1).astype(np.int64)
    if mode == "wrap":
        return flat % n
    if mode == "clip":
        return np.clip(flat, 0, n - 1)
    bad = (flat < -n) | (flat >= n)
    if bad.any():
        raise OutOfBoundsError(
            f"{what}: position {int(flat[bad][0])} is out of bounds for an array of size {n} (shape {a.shape}); "
            f"positions count from -{n} to {n - 1}, or pass mode='wrap' or mode='clip'"
        )
    return np.where(flat < 0, flat + n, flat)


def _flat_ids_device(xp: Any, what: str, a: ShardArray, ind: ShardArray, mode: str, no_values: bool) -> Any:
    """A distributed index array's flat positions as a 1-D int64 array in ``[0, a.size)``, or None when nothing is
    written (as ``_flat_ids_host``)."""
    if ind.dtype.kind not in "iu":
        raise DTypeError(f"{what}: the flat positions must be an integer array; got {ind.dtype}")
    if ind.size == 0:
        return None
    n = a.size
    if n == 0:
        raise _empty_target(what, a)
    if no_values:
        return None
    flat = xp.reshape(ind, (-1,)) if ind.ndim != 1 else ind
    flat = xp.astype(flat, xp.int64) if flat.dtype != np.int64 else flat
    if mode == "wrap":
        return flat % n
    if mode == "clip":
        return xp.clip(flat, 0, n - 1)
    if bool(xp.any((flat < -n) | (flat >= n))):
        lo, hi = int(xp.min(flat)), int(xp.max(flat))
        raise OutOfBoundsError(
            f"{what}: positions from {lo} to {hi} include some out of bounds for an array of size {n} (shape "
            f"{a.shape}); positions count from -{n} to {n - 1}, or pass mode='wrap' or mode='clip'"
        )
    return xp.where(flat < 0, flat + n, flat)
