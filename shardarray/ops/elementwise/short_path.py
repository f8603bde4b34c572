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
import operator
from collections.abc import Callable
from typing import Any, Literal, TypeVar

import numpy as np

from ... import profiler
from ...array import ShardArray
from ...backend import cuda_kernels, host_buffers
from ...comm.job import _State  # (``comm.notes.noting()``, inlined)
from ...core import plans
from ...core.common import map_blocks
from ...memo_hook import OP_MEMO
from .arithmetic import (
    POOLED,
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
# (module-level names of the hot path: ``plans.SHORT`` clears its dict in place, so ``_PLANS`` stays its dict)
_SHORT = plans.SHORT
_PLANS = _SHORT._plans
_ENABLED, _TAPE = plans._ENABLED, plans._TAPE


class _ShortPlan:
    """What the short path runs on every call, for one operand signature: ``_plan``'s parts it needs, how it runs
    small blocks inline (``reps``, ``pick``, ``run``) and the layouts its key names by ``id`` (``held``:
    so that no other object takes their ids while it is stored)."""

    __slots__ = ("block", "classes", "float_ints", "held", "local", "max_bytes", "mesh", "out_bytes", "pick", "reps",
                 "run", "scalars", "size", "used", "xp")  # fmt: skip
    block: Callable[..., Any]
    classes: Any  # (``mesh.replica_classes``; None: device scopes, ``map_blocks``)
    float_ints: bool
    held: tuple[Any, ...]
    local: int
    max_bytes: int
    mesh: Any
    out_bytes: int
    pick: Callable[[tuple[Any, ...]], Any] | None  # the class results -> every device's block (None: they are)
    reps: tuple[int, ...] | None  # one device a class (None: no classes, device scopes: ``map_blocks``)
    run: Callable[..., Any]  # ``block`` without ``xp``: ``operator.mul`` for ``_mul_block``...
    scalars: bool  # (a 0-d array: a NumPy block may come back as a NumPy scalar)
    size: int
    used: frozenset[str]
    xp: Any


def scalar_op(op: Any, x: ShardArray, c: Any, reflected: bool, cls: type[_A]) -> _A | None:
    """``op(x, c)`` (``op(c, x)`` when ``reflected``) of an array ``x`` and a Python scalar ``c``, as a ``cls``
    array, on a short path; None where it does not apply (the caller then runs ``op`` itself).

    The short path applies to the ops of ``FAST`` when nothing records the op (no autograd tape traces ``x``, no
    profiler, no layout search, no SPMD check notes), ``x`` has no pending sum and the op moves nothing. Its result
    is ``op``'s: the same plan (``_plan``, which also checks the operands and raises the op's typed errors), the same
    blocks computed once per replica class (big ones on the copy pool), the Python scalar weak as NumPy takes it.
    What it skips is the op mechanism's wrapper (named views of positional arrays, the tape's checks, the result's
    kind) and ``apply``'s general plan key. A scalar the blocks refuse (a Python int beyond the dtype's range, an
    integer to a negative integer power) leaves the op to raise its typed error.

    Plans are kept in ``plans.SHORT`` per operand signature by value, and per the *identity* of the operands'
    layout objects (``id``: no hash of a layout) and by their dtypes' values (a CuPy array's dtype objects need
    not be NumPy's shared ones); the result takes ``x``'s layout object, so each op of a chain finds the plan of the
    one before.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.arange(4.0), dims=("a",), mesh=mesh, layout={"a": "row"})
        >>> scalar_op(multiply, x, 2, True, sa.ShardArray).numpy()
        array([0., 2., 4., 6.])
    """
    spec = FAST.get(op)
    ctype = type(c)
    if spec is None or ctype not in PY_SCALARS or x.pending or profiler.ACTIVE or _State.noting:
        return None
    node = x._node
    if OP_MEMO.get() is not None or (node is not None and _TAPE.get() is not None):
        return None
    layout, dtype = x._layout, x.dtype
    key = (spec[0], reflected, ctype, id(x.mesh), id(layout), dtype)
    plan = _PLANS.get(key) if _ENABLED.get() else None  # (``plans.SHORT.get``, inlined)
    if plan is None:
        plan = _short_plan(key, spec, (c, x) if reflected else (x, c), (layout,), (4,))
    else:
        _SHORT.hits += 1
    if plan is False:
        return None
    shards = x._shards if node is None else x.shards  # (the property's checks need a tape node)
    if plan.float_ints:
        c = _device_scalar(c)
    try:
        reps = plan.reps
        if reps is not None and plan.max_bytes < plans.MIN_BYTES:  # small blocks: computed inline, once a class
            f, n = plan.run, len(reps)  # (one or two classes unrolled: a comprehension is a call in Python 3.11)
            if n == 1:
                rs: tuple[Any, ...] = (f(c, shards[reps[0]]) if reflected else f(shards[reps[0]], c),)
            elif n == 2:
                a, b = shards[reps[0]], shards[reps[1]]
                rs = (f(c, a), f(c, b)) if reflected else (f(a, c), f(b, c))
            else:
                rs = tuple(f(c, shards[i]) for i in reps) if reflected else tuple(f(shards[i], c) for i in reps)
            if plan.scalars:
                rs = tuple(_as_block(r) for r in rs)
            out = rs if plan.pick is None else plan.pick(rs)
        else:
            out = _blocks(plan, functools.partial(_scalar_first if reflected else _scalar_second, plan.block,
                                                  plan.xp, c), (shards,))  # fmt: skip
    except (OverflowError, ValueError):
        return None
    return cls._trusted(plan.mesh, layout, out[plan.local].dtype, out, ())  # type: ignore[return-value]


def arrays_op(op: Any, arrays: tuple[ShardArray, ...], cls: type[_A]) -> _A | None:
    """``op(*arrays)`` of one array, or of two arrays of one layout (dims, sizes and mesh axes) on one mesh, as a
    ``cls`` array, on the short path of ``scalar_op`` (which says when it applies and what it skips); None where it
    does not."""
    spec = FAST.get(op)
    if spec is None or profiler.ACTIVE or _State.noting or OP_MEMO.get() is not None:
        return None
    x = arrays[0]
    one = len(arrays) == 1
    y = x if one else arrays[1]
    if x.pending or y.pending:
        return None
    if (x._node is not None or y._node is not None) and _TAPE.get() is not None:
        return None
    layout = x._layout
    if one:
        key: tuple[Any, ...] = (spec[0], id(x.mesh), id(layout), x.dtype)
    else:
        if y.mesh is not x.mesh:
            return None
        key = (spec[0], id(x.mesh), id(layout), x.dtype, id(y._layout), y.dtype)
    plan = _PLANS.get(key) if _ENABLED.get() else None
    if plan is None:
        if one:
            plan = _short_plan(key, spec, arrays, (layout,), (2,))
        else:
            plan = _short_plan(key, spec, arrays, (layout, y._layout), (2, 4))
    else:
        _SHORT.hits += 1
    if plan is False:
        return None
    s0 = x._shards if x._node is None else x.shards
    s1 = s0 if one else y._shards if y._node is None else y.shards
    try:
        reps = plan.reps
        if reps is not None and plan.max_bytes < plans.MIN_BYTES:
            f, n = plan.run, len(reps)
            if n == 1:
                i = reps[0]
                rs: tuple[Any, ...] = (f(s0[i]) if one else f(s0[i], s1[i]),)
            elif n == 2:
                i, j = reps
                rs = (f(s0[i]), f(s0[j])) if one else (f(s0[i], s1[i]), f(s0[j], s1[j]))
            else:
                rs = tuple(f(s0[i]) for i in reps) if one else tuple(f(s0[i], s1[i]) for i in reps)
            if plan.scalars:
                rs = tuple(_as_block(r) for r in rs)
            out = rs if plan.pick is None else plan.pick(rs)
        else:
            out = _blocks(plan, functools.partial(plan.block, plan.xp), (s0,) if one else (s0, s1))
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
    held: tuple[Any, ...],
    at: tuple[int, ...],
) -> _ShortPlan | Literal[False]:
    """The short path's plan where none is stored under ``key`` (whose items ``at`` are the ids of the operands'
    layouts and dtypes, ``held``): the plan stored under those objects themselves (equal ones, other objects), else a
    new one, then stored under ``key`` too (holding them); False where the short path does not apply."""
    if not _ENABLED.get():  # plans off in this context: planned afresh
        return _new_short_plan(spec, args)
    parts = list(key)
    for i, o in zip(at, held):
        parts[i] = o
    by_value = tuple(parts)
    plan = _SHORT.get(by_value)
    if plan is None:
        plan = _new_short_plan(spec, args)
        _SHORT.put(by_value, plan)
    if plan is not False:
        plan = copy.copy(plan)
        plan.held = held
        _SHORT.put(key, plan)
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
    if p.xp is np and p.max_bytes >= host_buffers.MIN_BYTES:  # (big NumPy results: into reused host buffers)
        block = POOLED.get(block, block)
    plan = _ShortPlan()
    plan.block, plan.xp, plan.mesh, plan.used, plan.held = block, p.xp, p.mesh, p.used, ()
    plan.classes, plan.float_ints, plan.size, plan.local = p.classes, p.float_ints, p.mesh.size, p.mesh.local_device
    plan.max_bytes, plan.out_bytes = p.max_bytes, p.out_bytes
    plan.run = _direct(block, p.xp)
    plan.scalars = not arrays[0].dims
    plan.reps, plan.pick = _inline(p.classes, p.mesh.size)
    return plan


def _direct(block: Callable[..., Any], xp: Any) -> Callable[..., Any]:
    """``block`` without its ``xp`` argument: the operator it applies, or NumPy's ufunc it calls on NumPy blocks (one C
    call a block instead of a Python call around it), else ``block`` with ``xp`` bound (another array module's
    function is looked up at each call, as the block does)."""
    if block is cuda_kernels.add and xp is np:  # (NumPy blocks: ``a + b``; CuPy ones may take the fused kernel)
        return operator.add
    op = _OPERATORS.get(block)
    if op is not None:
        return op
    name = _XP_FUNCTIONS.get(block)
    return getattr(xp, name) if name is not None and xp is np else functools.partial(block, xp)


def _inline(classes: Any, size: int) -> tuple[tuple[int, ...] | None, Callable[[tuple[Any, ...]], Any] | None]:
    """How small blocks run inline: the representative device of each replica class, and the function from their
    results (one a class) to every device's block (None: the results are every device's blocks already; None for
    the devices no class lists, an MPI process's others); (None, None) on device scopes (no classes)."""
    if classes is None:
        return None, None
    reps = tuple(rep for rep, _ in classes)
    of = {d: k for k, (_, devices) in enumerate(classes) for d in devices}
    order = tuple(of.get(d, len(reps)) for d in range(size))  # (``len(reps)``: no class lists the device)
    if order == tuple(range(len(reps))):
        return reps, None
    get = operator.itemgetter(*order)  # (two devices at least here: a tuple of blocks)
    return reps, (get if len(reps) not in order else functools.partial(_with_others, get))


def _with_others(get: Callable[[tuple[Any, ...]], Any], results: tuple[Any, ...]) -> Any:
    """Every device's block, None for those no class lists (``_inline``)."""
    return get((*results, None))


def _as_block(r: Any) -> Any:
    """A block of a 0-d array: NumPy's ufuncs give a NumPy scalar for a 0-d block, the blocks are 0-d arrays."""
    return np.asarray(r) if isinstance(r, np.generic) else r


#: the block functions of ``FAST`` that are one Python operator on their blocks (``_mul_block`` is ``a * b``)
_OPERATORS: dict[Callable[..., Any], Callable[..., Any]] = {
    _sub_block: operator.sub, _mul_block: operator.mul, _div_block: operator.truediv, _gt_block: operator.gt,
    _ge_block: operator.ge, _lt_block: operator.lt, _le_block: operator.le, _neg_block: operator.neg,
}  # fmt: skip
#: the block functions of ``FAST`` that are one function of the array module (``_exp_block`` is ``xp.exp(a)``): NumPy's
_XP_FUNCTIONS: dict[Callable[..., Any], str] = {
    _eq_block: "equal", _ne_block: "not_equal", _exp_block: "exp", _log_block: "log", _sqrt_block: "sqrt",
    _abs_block: "abs", _max_block: "maximum", _min_block: "minimum",
}  # fmt: skip
