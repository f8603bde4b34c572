"""Host buffers reused once the arrays on them are gone: the MPI communicator's receives and the big NumPy
results of elementwise ops.

Every collective fills new blocks (the pieces it receives, a send buffer it packs), and every elementwise op a
new result block. A new big NumPy array is fresh memory from the kernel (glibc maps every block over 32 MiB
anew and unmaps it when freed), and the first write to each page faults: ``x * x`` of a 64 MB block took about
20 ms here where the same product into a buffer already touched takes 5 ms. On a virtual machine that hands the
guest's free memory back to its host (virtio-balloon free page reporting, on the machines this project is
measured on), a page freed for about two seconds is the host's again, and touching it faults on the host too:
measured here, a 128 MiB ``Allgatherv`` into fresh memory took 0.23 to 0.32 s after three idle seconds, 0.03 s
into memory the process had kept. That is the case of any program that calls a collective now and then (a
step, then other work), and of a benchmark that interleaves frameworks.

So, as CuPy's memory pool and PyTorch's caching host allocator do, the communicator takes its big buffers
(``MIN_BYTES`` and over) from a pool (``empty``), and the elementwise ops write big NumPy results into the pool's
buffers (``ufunc``: a NumPy ufunc with ``out=``, ``astype``: a cast with ``np.copyto``; the same loops, so the
same values bit for bit; CuPy blocks have CuPy's own pool). A buffer is an ``np.uint8`` array that owns its memory;
what the collective returns is a view of it, so NumPy keeps the buffer (every view's ``base``) alive as long
as any array made from it lives. The pool holds every buffer it made, and one whose reference count shows
that no array uses it any more is free: ``empty`` hands it out again for a request of its size class (sizes
rounded up to a quarter of a power of two, so at most 25% more than asked). Free buffers beyond ``limit()``
bytes (``SHARDARRAY_BUFFER_CACHE``, bytes, default 1 GiB; 0 turns the pool off) are dropped, the oldest first.

The cost: up to ``limit()`` bytes stay mapped in the process after the arrays on them are gone (as with
any caching allocator). The results are the same: only where the bytes live differs.

Example (the MPI communicator and the elementwise ops call these; any code can):
    >>> from shardarray.backend import host_buffers
    >>> a = host_buffers.empty((1024, 1024), "float64")
    >>> a.shape, a.dtype.name
    ((1024, 1024), 'float64')
    >>> start = a.__array_interface__["data"][0]
    >>> del a  # its buffer is free again ...
    >>> b = host_buffers.ufunc(np.add, np.ones((1024, 1024)), 1.0)
    >>> b.__array_interface__["data"][0] == start, float(b[0, 0])  # ... and holds the next big result
    (True, 2.0)
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any

import numpy as np

MIN_BYTES = 1 << 20
"""Requests smaller than this get plain ``np.empty``: the pool is for blocks whose pages cost."""

_DEFAULT_LIMIT = 1 << 30
ENV = "SHARDARRAY_BUFFER_CACHE"

_LOCK = threading.Lock()
_BUFFERS: dict[int, list[np.ndarray]] = {}  # size class (bytes) -> the buffers of that class, oldest first


def _refs(bufs: list[np.ndarray], i: int) -> int:
    """The reference count of ``bufs[i]``, read the one way every check here reads it (calibrated below)."""
    return sys.getrefcount(bufs[i])


def _calibrate() -> int:
    """What ``_refs`` reads for a listed buffer no array uses, on this Python (each view adds its ``base``)."""
    return _refs([np.empty(1, dtype=np.uint8)], 0)


_FREE_REFS = _calibrate()


def _unused(bufs: list[np.ndarray], i: int) -> bool:
    """Whether no array uses ``bufs[i]``: no view's ``base`` holds it."""
    return _refs(bufs, i) <= _FREE_REFS


def limit() -> int:
    """The most bytes of free buffers the pool keeps (``SHARDARRAY_BUFFER_CACHE``; 0: no pool)."""
    raw = os.environ.get(ENV, "").strip()
    if not raw:
        return _DEFAULT_LIMIT
    try:
        return max(0, int(float(raw)))
    except ValueError:
        return _DEFAULT_LIMIT


def size_class(nbytes: int) -> int:
    """``nbytes`` rounded up to 1, 1.25, 1.5 or 1.75 times a power of two.

    Example:
        >>> size_class(1_000_000), size_class(1 << 20), size_class((1 << 20) + 1)
        (1048576, 1048576, 1310720)
    """
    if nbytes <= 4:
        return max(nbytes, 1)
    step = 1 << (int(nbytes - 1).bit_length() - 3)  # a quarter of the power of two below
    return -(-nbytes // step) * step


def empty(shape: Any, dtype: Any) -> np.ndarray:
    """``np.empty(shape, dtype)``, C-contiguous, on a reused buffer when it is ``MIN_BYTES`` or more.

    Args:
        shape: the array's shape (an int or a tuple).
        dtype: its dtype.

    Returns:
        An array that no other live array shares memory with (its contents are arbitrary, as ``np.empty``'s).
    """
    dt = np.dtype(dtype)
    shape = (int(shape),) if np.ndim(shape) == 0 else tuple(int(s) for s in shape)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
    cap = limit()
    if nbytes < MIN_BYTES or cap <= 0 or dt.hasobject:
        return np.empty(shape, dtype=dt)
    cls = size_class(nbytes)
    with _LOCK:
        buf = _free(cls)
        if buf is None:
            buf = np.empty(cls, dtype=np.uint8)
            _BUFFERS.setdefault(cls, []).append(buf)
            _trim(cap)
    return buf[:nbytes].view(dt).reshape(shape)


def _free(cls: int) -> np.ndarray | None:
    """A buffer of class ``cls`` no array uses (moved to the end of its list: the newest), or None."""
    bufs = _BUFFERS.get(cls)
    if not bufs:
        return None
    for i in range(len(bufs)):
        if _unused(bufs, i):
            buf = bufs.pop(i)
            bufs.append(buf)
            return buf
    return None


def _trim(cap: int) -> None:
    """Drop free buffers, the oldest first, until at most ``cap`` bytes of them are left."""
    total = sum(cls for cls, bufs in _BUFFERS.items() for i in range(len(bufs)) if _unused(bufs, i))
    for cls in list(_BUFFERS):
        bufs = _BUFFERS[cls]
        kept = []
        for i in range(len(bufs)):  # (each class's list is oldest first)
            if total > cap and _unused(bufs, i):
                total -= cls
            else:
                kept.append(bufs[i])
        if kept:
            _BUFFERS[cls] = kept
        else:
            del _BUFFERS[cls]


def ufunc(fn: np.ufunc, *operands: Any) -> Any:
    """``fn(*operands)`` (NumPy arrays and Python or NumPy scalars, broadcast as NumPy does), a result of
    ``MIN_BYTES`` or more written into a pooled buffer: the same loop, values and dtype as ``fn(*operands)``."""
    kinds = tuple(o.dtype if isinstance(o, np.ndarray) else type(o) for o in operands)
    try:
        dt = fn.resolve_dtypes((*kinds, None))[-1]
        shape = np.broadcast_shapes(*(np.shape(o) for o in operands))
    except (TypeError, ValueError):  # (no loop, shapes that do not broadcast: the ufunc raises its own error)
        return fn(*operands)
    if int(np.prod(shape, dtype=np.int64)) * dt.itemsize < MIN_BYTES or dt.hasobject:
        return fn(*operands)
    return fn(*operands, out=empty(shape, dt))


def astype(x: np.ndarray, dtype: Any) -> np.ndarray:
    """``x.astype(dtype)``, a result of ``MIN_BYTES`` or more in a pooled buffer (NumPy's own numeric dtypes:
    ``np.copyto(..., casting="unsafe")``, the cast loop of ``astype``'s default)."""
    dt = np.dtype(dtype)
    if x.size * dt.itemsize < MIN_BYTES or dt.kind not in "biufc" or x.dtype.kind not in "biufc":
        return x.astype(dt)
    out = empty(x.shape, dt)
    np.copyto(out, x, casting="unsafe")
    return out


def cached_bytes() -> tuple[int, int]:
    """``(free, in_use)``: the bytes of the pool's buffers no array uses, and of those some array uses."""
    with _LOCK:
        free = used = 0
        for cls, bufs in _BUFFERS.items():
            for i in range(len(bufs)):
                if _unused(bufs, i):
                    free += cls
                else:
                    used += cls
        return free, used


def clear() -> None:
    """Forget every buffer (those in use stay valid: their arrays hold them)."""
    with _LOCK:
        _BUFFERS.clear()


__all__ = ["ENV", "MIN_BYTES", "astype", "cached_bytes", "clear", "empty", "limit", "size_class", "ufunc"]
