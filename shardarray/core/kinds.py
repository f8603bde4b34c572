"""The kind of an op's result, by construction: positional in, positional out.

An array is *named* (``ShardArray``: dims matched and broadcast by name) or *positional* (a subclass whose
``positional`` is True: ``shardarray.array_api``'s ``Array``, NumPy's rules by position). Every op declared
through ``core.tape`` (``differentiable``, ``nondifferentiable``) runs on named views of its array arguments, so
its code (which broadcasts, reduces and indexes by dim name, operators and methods included) means the same
whatever kind it was given. Its array results are then of the positional kind when any array argument was
positional (at the top level, or one level into a list or tuple, as ``concat`` takes them), named otherwise;
named tuples (``QRResult``, ``UniqueAllResult``, ...), tuples and lists of results are converted item by item.

A view shares its array's blocks, pending axes, cached resolution and tape node, so the autograd sees one array
either way. What an op leaves on a view goes back to the array (``carry_back``): a pending sum's cached
resolution (the allreduce is not repeated), and, while ``value_and_grad`` records, the note that a recorded op
was given it (``Tape.held``: a later write into the array in place is refused, as for a named array).

Example (2×2 mesh):
    >>> import numpy as np, shardarray as sa, shardarray.array_api as xp
    >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
    ...     a = xp.asarray(np.arange(16.0).reshape(4, 4))            # dims dim0, dim1
    ...     s = sa.sum(a, "dim1")                                    # a named op on a positional array
    ...     type(s).__name__, s.numpy()
    ('Array', array([ 6., 22., 38., 54.]))
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

from ..array import ShardArray, as_kind

#: the kind of the positional arrays the running op was given (None: named arrays), for what its code says rather
#: than computes: messages name ``xp`` functions to a positional caller (``core.common.wrap_hint``)
GIVEN: ContextVar[type[ShardArray] | None] = ContextVar("shardarray_given_kind", default=None)


def kind_of(args: tuple[Any, ...], kwargs: dict[str, Any]) -> type[ShardArray] | None:
    """The positional kind of the first positional array among ``args`` and ``kwargs`` (top level, or one level
    into a list or tuple), or None when every array is named (the common case: a few attribute reads)."""
    for a in (*args, *kwargs.values()) if kwargs else args:
        if isinstance(a, ShardArray):
            if a.positional:
                return type(a)
        elif type(a) is list or type(a) is tuple:
            for b in a:
                if isinstance(b, ShardArray) and b.positional:
                    return type(b)
    return None


def _view(x: Any, pairs: list[tuple[ShardArray, ShardArray]]) -> Any:
    """``x`` as a named view when it is a positional array (lists and tuples: item by item); others unchanged.
    An array given twice (``y * y``) gets one view, so the op sees one array (one resolution of its sum)."""
    if isinstance(x, ShardArray):
        if not x.positional:
            return x
        for a, v in pairs:
            if a is x:
                return v
        v = as_kind(x, ShardArray)
        pairs.append((x, v))
        return v
    if (type(x) is list or type(x) is tuple) and any(isinstance(b, ShardArray) and b.positional for b in x):
        return type(x)([_view(b, pairs) if isinstance(b, ShardArray) else b for b in x])
    return x


def named_views(
    args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any], list[tuple[ShardArray, ShardArray]]]:
    """``args`` and ``kwargs`` with every positional array replaced by a named view of it, and the
    ``(array, view)`` pairs made (for ``carry_back``)."""
    pairs: list[tuple[ShardArray, ShardArray]] = []
    out_args = tuple([_view(a, pairs) for a in args])
    out_kwargs = {k: _view(v, pairs) for k, v in kwargs.items()} if kwargs else kwargs
    return out_args, out_kwargs, pairs


def carry_back(pairs: list[tuple[ShardArray, ShardArray]], tape: Any) -> None:
    """What an op left on the named views goes back to their arrays: a cached resolution of a pending sum, and
    ``tape``'s note that a recorded op was given the view (``Tape.held``; the array is then kept alive with the
    tape, as the op's context keeps the view)."""
    for x, v in pairs:
        if v._resolved is not None and x._resolved is None:
            x._resolved = v._resolved
        if tape is not None and id(v) in tape.held:
            tape.held.add(id(x))
            tape.kept.append(x)


def of_kind(kind: type[ShardArray], out: Any) -> Any:
    """``out`` with every named array in it (itself, or the items of a named tuple, tuple or list) as ``kind``."""
    if isinstance(out, ShardArray):
        return out if out.positional else as_kind(out, kind)
    if isinstance(out, tuple) and hasattr(out, "_make"):  # a named tuple of results
        return out._make(of_kind(kind, o) for o in out)
    if type(out) is tuple or type(out) is list:
        return type(out)(of_kind(kind, o) for o in out)
    return out
