"""The short path of untraced small ops (issue 30): ``x * 2.0``, ``x + y`` of one layout, ``-x``, ``exp(x)``.

A chain of small positional ops spends most of each op in the op mechanism's wrapper (named views of positional
arrays, the tape's checks, the result's kind) and in ``apply``'s general plan key, not in NumPy. ``scalar_op``
(an array and a Python scalar) and ``arrays_op`` (one array, or two arrays of one layout) run the ops of ``FAST``
without them where nothing records the op: the same plan as ``arithmetic.apply`` (``_plan``, which checks the
operands and raises the op's typed errors), the same blocks once per replica class, the same result. Where the
short path does not apply they answer None and the caller runs the op itself.

Collectives: none (an op that would move data, or resolve a pending sum, is not on the short path).
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from typing import Any, Literal, TypeVar

import numpy as np

from ... import profiler
from ...array import ShardArray
from ...backend import cuda_kernels
from ...comm.notes import noting
from ...core import plans
from ...core.common import map_blocks
from ...layout import Layout
from ...memo_hook import OP_MEMO
from .arithmetic import (
    _abs_block,
    _device_scalar,
    _div_block,
    _eq_block,
    _exp_block,
    _ge_block,
    _gt_block,
    _le_block,
    _log_block,
    _lt_block,
    _max_block,
    _min_block,
    _mul_block,
    _ne_block,
    _neg_block,
    _plan,
    _power_block,
    _sqrt_block,
    _sub_block,
    abs,
    add,
    divide,
    equal,
    exp,
    greater,
    greater_equal,
    less,
    less_equal,
    log,
    maximum,
    minimum,
    multiply,
    negative,
    not_equal,
    power,
    sqrt,
    subtract,
)

#: the ops with a short path (``scalar_op``, ``arrays_op``): op -> ``(name, block, kind, domain)``, the arguments
#: each op gives ``apply`` (the positional comparisons of real operands are ``less`` and the others here)
FAST: dict[Any, tuple[str, Callable[..., Any], str | None, str | None]] = {
    add: ("add", cuda_kernels.add, "add", None),
    subtract: ("subtract", _sub_block, "add", None),
    multiply: ("multiply", _mul_block, "mul", None),
    divide: ("divide", _div_block, "div", None),
    power: ("power", _power_block, None, None),
    equal: ("equal", _eq_block, None, None),
    not_equal: ("not_equal", _ne_block, None, None),
    greater: ("greater", _gt_block, None, "real"),
    greater_equal: ("greater_equal", _ge_block, None, "real"),
    less: ("less", _lt_block, None, "real"),
    less_equal: ("less_equal", _le_block, None, "real"),
    negative: ("negative", _neg_block, "neg", "numeric"),
    exp: ("exp", _exp_block, None, "inexact"),
    log: ("log", _log_block, None, "inexact"),
    sqrt: ("sqrt", _sqrt_block, None, "inexact"),
    abs: ("abs", _abs_block, None, None),
    maximum: ("maximum", _max_block, None, "real"),
    minimum: ("minimum", _min_block, None, "real"),
}
#: the Python scalar types the short path takes as operands (weak, as NumPy takes them)
PY_SCALARS = frozenset((bool, int, float, complex))
_A = TypeVar("_A", bound=ShardArray)


class _ShortPlan:
    """What the short path runs on every call, for one operand signature: ``_plan``'s parts it needs, and the
    layout objects its key names by ``id`` (held, so that no other object takes their ids while it is stored)."""

    __slots__ = ("block", "classes", "float_ints", "layouts", "local", "max_bytes", "mesh", "out_bytes", "size",
                 "used", "xp")  # fmt: skip
    block: Callable[..., Any]
    classes: Any  # (``mesh.replica_classes``; None: device scopes, ``map_blocks``)
    float_ints: bool
    layouts: tuple[Layout, ...]
    local: int
    max_bytes: int
    mesh: Any
    out_bytes: int
    size: int
    used: frozenset[str]
    xp: Any


def scalar_op(op: Any, x: ShardArray, c: Any, reflected: bool, cls: type[_A]) -> _A | None:
    """``op(x, c)`` (``op(c, x)`` when ``reflected``) of an array ``x`` and a Python scalar ``c``, as a ``cls``
    array, on a short path; None where it does not apply (the caller then runs ``op`` itself).

    The short path applies to the ops of ``FAST`` when nothing records the op (no autograd tape traces ``x``, no
    profiler, no layout search), ``x`` has no pending sum and the op moves nothing. Its result is ``op``'s: the same
    plan (``_plan``, which also checks the operands and raises the op's typed errors), the same blocks computed
    once per replica class (big ones on the copy pool), the Python scalar weak as NumPy takes it. What it skips is
    the op mechanism's wrapper (named views of positional arrays, the tape's checks, the result's kind) and
    ``apply``'s general plan key. A scalar the blocks refuse (a Python int beyond the dtype's range, an integer to a
    negative integer power) leaves the op to raise its typed error.

    Plans are kept in ``plans.SHORT`` per operand signature by value, and per the *identity* of the operands'
    layout objects (``id``: no hash of a layout); the result takes ``x``'s layout object, so each op of a chain finds
    the plan of the one before.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.arange(4.0), dims=("a",), mesh=mesh, layout={"a": "row"})
        >>> scalar_op(multiply, x, 2, True, sa.ShardArray).numpy()
        array([0., 2., 4., 6.])
    """
    spec = FAST.get(op)
    if spec is None or type(c) not in PY_SCALARS or x.pending or profiler.ACTIVE or noting():
        return None
    if (x._node is not None and plans._TAPE.get() is not None) or OP_MEMO.get() is not None:
        return None
    layout = x._layout
    key = (spec[0], reflected, type(c), id(x.mesh), id(layout), x.dtype)
    plan = plans.SHORT._plans.get(key) if plans._ENABLED.get() else None  # (``plans.SHORT.get``, inlined)
    if plan is None:
        plan = _short_plan(key, spec, (c, x) if reflected else (x, c), (layout,), (4,))
    else:
        plans.SHORT.hits += 1
    if plan is False:
        return None
    fn, xp, classes, shards = plan.block, plan.xp, plan.classes, x.shards
    if plan.float_ints:
        c = _device_scalar(c)
    try:
        if classes is not None and plan.max_bytes < plans.MIN_BYTES:  # small NumPy blocks: map_classes' loop inlined
            out: list[Any] = [None] * plan.size
            for rep, devices in classes:
                r = fn(xp, c, shards[rep]) if reflected else fn(xp, shards[rep], c)
                if isinstance(r, np.generic):  # (a 0-d block gives a NumPy scalar)
                    r = np.asarray(r)
                for d in devices:
                    out[d] = r
        else:
            out = _blocks(plan, functools.partial(_scalar_first if reflected else _scalar_second, fn, xp, c), (shards,))
    except (OverflowError, ValueError):
        return None
    return cls._trusted(plan.mesh, layout, out[plan.local].dtype, out, ())  # type: ignore[return-value]


def arrays_op(op: Any, arrays: tuple[ShardArray, ...], cls: type[_A]) -> _A | None:
    """``op(*arrays)`` of one array, or of two arrays of one layout (dims, sizes and mesh axes) on one mesh, as a
    ``cls`` array, on the short path of ``scalar_op`` (which says when it applies and what it skips); None where it
    does not."""
    spec = FAST.get(op)
    if spec is None or profiler.ACTIVE or OP_MEMO.get() is not None or noting():
        return None
    taped = plans._TAPE.get() is not None
    for a in arrays:
        if a.pending or (taped and a._node is not None):
            return None
    x = arrays[0]
    layout = x._layout
    if len(arrays) == 1:
        key: tuple[Any, ...] = (spec[0], id(x.mesh), id(layout), x.dtype)
    else:
        y = arrays[1]
        if y.mesh is not x.mesh:
            return None
        key = (spec[0], id(x.mesh), id(layout), x.dtype, id(y._layout), y.dtype)
    plan = plans.SHORT._plans.get(key) if plans._ENABLED.get() else None
    if plan is None:
        if len(arrays) == 1:
            plan = _short_plan(key, spec, arrays, (layout,), (2,))
        else:
            plan = _short_plan(key, spec, arrays, (layout, arrays[1]._layout), (2, 4))
    else:
        plans.SHORT.hits += 1
    if plan is False:
        return None
    fn, xp, classes = plan.block, plan.xp, plan.classes
    try:
        if classes is not None and plan.max_bytes < plans.MIN_BYTES:
            out: list[Any] = [None] * plan.size
            s0, s1 = x.shards, arrays[-1].shards  # (``s1`` unread for one array)
            for rep, devices in classes:
                r = fn(xp, s0[rep]) if len(arrays) == 1 else fn(xp, s0[rep], s1[rep])
                if isinstance(r, np.generic):
                    r = np.asarray(r)
                for d in devices:
                    out[d] = r
        else:
            out = _blocks(plan, functools.partial(fn, xp), tuple(a.shards for a in arrays))
    except (OverflowError, ValueError):
        return None
    return cls._trusted(plan.mesh, layout, out[plan.local].dtype, out, ())  # type: ignore[return-value]


def binary(op: Any, x: Any, y: Any, cls: type[_A], otherwise: Callable[[Any, Any], Any] | None = None) -> Any:
    """``op(x, y)`` as a ``cls`` array on the short path where one operand is a ``cls`` array (that very type) and
    the other a Python scalar (``scalar_op``) or a ``cls`` array of the same dims and shape (``arrays_op``).
    Elsewhere, and where those answer None: ``otherwise(x, y)``, or None without it (the caller then runs ``op``).
    ``op`` None: no short path. ``functools.partial(binary, op, cls=..., otherwise=op)`` is ``op`` with the short
    path in front (a named array's operators, ``ops.methods``), one Python call deep."""
    out = None
    if type(x) is cls:
        if type(y) in PY_SCALARS:
            out = scalar_op(op, x, y, False, cls)
        elif type(y) is cls and x.dims == y.dims and x.shape == y.shape:
            out = arrays_op(op, (x, y), cls)
    elif type(y) is cls and type(x) in PY_SCALARS:
        out = scalar_op(op, y, x, True, cls)
    return otherwise(x, y) if out is None and otherwise is not None else out


def _scalar_first(fn: Callable[..., Any], xp: Any, c: Any, s: Any) -> Any:
    return fn(xp, c, s)


def _scalar_second(fn: Callable[..., Any], xp: Any, c: Any, s: Any) -> Any:
    return fn(xp, s, c)


def _blocks(plan: _ShortPlan, block: Callable[..., Any], shard_lists: tuple[Any, ...]) -> list[Any]:
    """The result blocks of a short-path op on device scopes (one GPU per device), or big enough for the copy pool."""
    if plan.classes is None:
        return map_blocks(plan.mesh, plan.used, block, *shard_lists)
    pool = plan.mesh.backend if plan.max_bytes >= plans.MIN_BYTES else None
    return plans.map_classes(plan.size, plan.classes, block, shard_lists, pool, out_bytes=plan.out_bytes)


def _short_plan(
    key: tuple[Any, ...],
    spec: tuple[str, Callable[..., Any], str | None, str | None],
    args: tuple[Any, ...],
    layouts: tuple[Layout, ...],
    at: tuple[int, ...],
) -> _ShortPlan | Literal[False]:
    """The short path's plan where none is stored under ``key`` (whose items ``at`` are the ids of the operands'
    ``layouts``): the plan stored under the layouts themselves (equal layouts, other objects), else a new one, then
    stored under ``key`` too (holding ``layouts``); False where the short path does not apply."""
    cache = plans.SHORT
    if not plans._ENABLED.get():  # plans off in this context: planned afresh
        return _new_short_plan(spec, args)
    parts = list(key)
    for i, o in zip(at, layouts):
        parts[i] = o
    by_value = tuple(parts)
    plan = cache.get(by_value)
    if plan is None:
        plan = _new_short_plan(spec, args)
        cache.put(by_value, plan)
    if plan is not False:
        plan = copy.copy(plan)
        plan.layouts = layouts
        cache.put(key, plan)
    return plan


def _new_short_plan(
    spec: tuple[str, Callable[..., Any], str | None, str | None], args: tuple[Any, ...]
) -> _ShortPlan | Literal[False]:
    """A short-path plan from ``apply``'s (``_plan``: raises on bad operands), or False where the short path does not
    apply (bfloat16 arithmetic, moves, broadcasting, a pending result, the meta backend)."""
    name, block, kind, domain = spec
    p: Any = _plan(name, args, kind, domain, 0)  # (a ``_Plan``: its parts are set by keyword)
    arrays = [a for a in args if isinstance(a, ShardArray)]
    simple = p.scalar_at is not None if len(arrays) < len(args) else p.direct
    if not simple or p.bf16 is not None or any(p.moves) or p.pending or not p.mesh.backend.has_data:
        return False
    if p.layout != arrays[0]._layout:  # (the result takes the first operand's layout object)
        return False
    plan = _ShortPlan()
    plan.block, plan.xp, plan.mesh, plan.used, plan.layouts = block, p.xp, p.mesh, p.used, ()
    plan.classes, plan.float_ints, plan.size, plan.local = p.classes, p.float_ints, p.mesh.size, p.mesh.local_device
    plan.max_bytes, plan.out_bytes = p.max_bytes, p.out_bytes
    return plan
