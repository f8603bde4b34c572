"""The one lock of in-place writes (``x[...] = v``, ``x[mask] = v``, ``x += y``), and the swap they end with.

No op writes a block in place; these writes read an array's blocks, write
copies and swap them in. Two threads doing that on one array
would each swap in blocks made from the old ones, and one write would be
lost; holding ``WRITES`` for the whole read-modify-write serializes them
(it is re-entrant: a positional mask write calls the named one). Every other
op makes new arrays and needs no lock.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Mapping
from typing import Any, ParamSpec, TypeVar

import numpy as np

from ...array import ShardArray
from ...comm.notes import note, noting
from ...core.relayout import to_axes
from ...core.tape import refuse_write
from ...errors import CastError, DTypeError
from ..manipulation.structure import astype, rename, transpose

WRITES = threading.RLock()

P = ParamSpec("P")
R = TypeVar("R")


def serialized(fn: Callable[P, R]) -> Callable[P, R]:
    """``fn`` run while holding ``WRITES``."""

    @functools.wraps(fn)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        with WRITES:
            return fn(*args, **kwargs)

    return run


def check_host_value(v: Any, what: str) -> None:
    """Raise ``DTypeError`` for a ragged list or tuple value of a write (NumPy's raw ValueError, 'setting an array
    element with a sequence', came out of the write instead)."""
    if isinstance(v, (list, tuple)):
        try:
            np.asarray(v)
        except ValueError:
            raise DTypeError(
                f"{what}: the value {v!r:.80} is not a rectangular array (its nested sequences differ in length); "
                f"give a scalar, an array, or nested lists of equal lengths"
            ) from None


def typed_host_value(x: ShardArray, value: Any, what: str) -> Any:
    """A host list or tuple value of a write converted to ``x``'s dtype as NumPy's assignment converts it
    (``np.asarray(value, dtype=x.dtype)``): a Python integer out of range, or NaN into integers, raises
    ``CastError`` (NumPy's OverflowError/ValueError), a float truncates into integers; a complex list into a real
    array is left to the write's ``DTypeError``. Other values as given."""
    if not isinstance(value, (list, tuple)):
        return value
    check_host_value(value, what)
    host = np.asarray(value)
    if host.dtype.kind not in "biufc" or (host.dtype.kind == "c" and x.dtype.kind != "c"):
        return value
    try:
        return np.asarray(value, dtype=x.dtype)
    except (OverflowError, ValueError) as e:
        raise CastError(
            f"{what}: the value {value!r:.60} does not convert to the array's dtype {x.dtype} ({e}); write values "
            f"in range, or cast the array to a wider dtype first (x.astype('int64'), x.astype('float64'))"
        ) from None


def note_write(x: ShardArray, items: Mapping[str, Any], v: Any) -> None:
    """Note the host index and value of ``x[items] = v`` for the SPMD checks (``comm.spmd.note``): every process of
    an MPI job must write the same entries with the same value, or the blocks of ``x`` silently mix (each process
    writes its own index or value into the part it holds).

    A write that moves data (an array value, integer ids, a mask) compares them always, at the next collective that
    compares anything (a group's header, a check over the job: usually its own); a scalar written at ints and
    slices, which each device writes locally with no collective, compares them with ``SHARDARRAY_CHECK_SPMD=1`` at
    the next collective.
    """
    moves = isinstance(v, ShardArray) or not all(isinstance(k, (int, np.integer, slice)) for k in items.values())
    if moves or noting():
        note(x.mesh, "x[...] = v", agree=moves, index=items, value=v)


def rebind(x: ShardArray, new: ShardArray, what: str) -> None:
    """Make ``x`` hold ``new`` whole, its shape and layout too (NumPy's ``x.resize``): under ``WRITES``, refused
    inside a gradient that depends on ``x`` (``core.tape.refuse_write``), the blocks swapped in through the
    ``shards`` setter (the end of every in-place write). ``new`` has ``x``'s dtype and mesh."""
    with WRITES:
        refuse_write(x, what, "build the new array with xp.reshape / xp.concat and bind it to a name")
        x._layout = new._layout
        x.shards, x.pending = new.shards, new.pending
        x.host_range = None
        x._resolved = None


def swap_in(x: ShardArray, new: ShardArray) -> None:
    """Make ``x`` hold ``new``'s value: ``new`` (``x``'s shape; its dims matched to ``x``'s by name, else by
    position) in ``x``'s layout and dtype, its blocks swapped in, ``x``'s caches reset. No block is written: an
    array that shared ``x``'s old blocks keeps its value. Moves ``new`` to ``x``'s layout if it differs (the
    relayout's collectives); call it holding ``WRITES``."""
    if set(new.dims) != set(x.dims):  # a positional result may name its dims otherwise
        tmp = {d: f"__swap{i}" for i, d in enumerate(new.dims)}
        new = rename(rename(new, tmp), {f"__swap{i}": d for i, d in enumerate(x.dims)})
    if new.dims != x.dims:
        new = transpose.__wrapped__(new, x.dims)
    new = to_axes(new, x.spec.axes, False)
    if new.dtype != x.dtype:
        new = astype(new, x.dtype)
    x.shards, x.pending = new.shards, ()
    x.host_range = None
    x._resolved = None
