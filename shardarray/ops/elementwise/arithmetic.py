"""Elementwise ops with broadcasting by name.

Operands are matched by dim name: a dim missing from one operand broadcasts,
and the result has the dims of the first operand followed by the new dims of
the others (``where(cond, x, y)``: of ``x`` first, see ``where``). Operands are
brought to one computation layout first, chosen by traffic (``core.leader.cheapest``):
each operand is tried as the one that decides (``merged_axes`` with it first), and
the layout whose moves receive the fewest entries per device wins, the first
operand on a tie. So operands that do not conflict get ``merged_axes`` in order
(each dim split like the first operand that splits it), and of ``x{n: a}`` and a large
``y{m: a, n}`` the small ``x`` is allgathered and the result is split like ``y``
(not ``y`` alltoalled to ``n: a``). An operand with a pending sum keeps the first
operand's rule (``merged_axes`` in order), as an einsum does. Inside
``core.leader.keep_first()`` (for an in-place write, whose result goes back
into its left operand's layout) the first operand's layout decides, whole.

Each op declares the dtypes it is defined for (``dtypes.check_domain``):
float-only ops (exp, log, tanh, sqrt, gelu) refuse bool and integer arrays,
ordering ops (maximum, minimum, relu, ``<``, ``>``) refuse complex ones, with
a ``DTypeError`` naming the op, the dims and the dtype.

Linear ops keep a pending sum (add/subtract of arrays pending over the same
axes, multiply by an unpending operand, divide a pending numerator, negate);
every other op resolves it first, and so do a scalar factor that is not
finite and a scalar divisor 0 (each device's zero partial sum would give
``0 * inf = nan`` where the whole sum gives ``inf``), and a bool or integer
sum whose dtype the op changes (a bool sum is an OR and an integer sum wraps
in its dtype: ``p * 0.5`` of an int8 sum halves the wrapped int8 value).
"""

from __future__ import annotations

import cmath
import math
import numbers
from collections.abc import Callable
from typing import Any

import numpy as np

from ...array import ShardArray
from ...backend import cuda_kernels, host_buffers
from ...backend.meta import MetaArray
from ...core import leader, plans
from ...core.common import (
    any_pending,
    check_rules,
    common_mesh,
    has_infinity,
    holds_anywhere,
    map_blocks,
    merged_axes,
    mesh_order,
    union_dims,
    wrap_hint,
)
from ...core.relayout import resolve_to, to_axes
from ...core.tape import differentiable, nondifferentiable
from ...dtypes import check_domain, check_scalar_domain, is_bfloat16, is_complex, is_real_float, promote
from ...errors import ArgumentError, CastError, DTypeError, ShardArrayError
from ...layout import Layout, block_bounds
from ..fused import dispatch as fused
from ..manipulation.structure import stop_gradient

Scalar = (numbers.Number, np.generic)


def _check_args(name: str, args: tuple[Any, ...]) -> list[ShardArray]:
    arrays = []
    for a in args:
        if isinstance(a, ShardArray):
            arrays.append(a)
        elif not isinstance(a, Scalar):
            raise DTypeError(
                f"{name}: operands must be ShardArrays or Python/NumPy scalars; got {type(a).__name__}. "
                f"Wrap arrays with " + wrap_hint(args)
            )
    if not arrays:
        raise DTypeError(f"{name}: at least one operand must be a ShardArray")
    return arrays


def _scales_exactly(kind: str | None, args: tuple[Any, ...]) -> bool:
    """Whether the other operands of a ``"mul"``/``"div"`` op scale a pending sum part by part exactly.

    Multiplying each device's partial sum by an infinite scalar gives ``0 * inf = nan`` where a partial is 0 (a
    device with an empty block of the contracted dim, or cancelling terms) though the sum times ``inf`` is
    ``+-inf``; dividing the partials by 0 gives ``0 / 0 = nan`` likewise. Such scalars resolve the sum first, and
    so do float arrays holding an infinity (a factor) or a zero (a divisor) anywhere: ``core.common.holds_anywhere``,
    one read of a flag per device (one host reduction under MPI), only for ops with a pending operand. Every float
    dtype counts, bfloat16 too (its NumPy kind is ``"V"``).
    """
    if kind not in ("mul", "div"):
        return True
    factors = []  # (the array operands that scale the pending one: a divisor, or a factor that is not pending)
    for i, a in enumerate(args):
        if isinstance(a, ShardArray):
            if (i == 1 if kind == "div" else not a.pending) and (a.dtype.kind in "fc" or is_real_float(a.dtype)):
                factors.append(a)
            continue
        try:
            if (kind == "div" and i == 1 and a == 0) or not (isinstance(a, numbers.Integral) or cmath.isfinite(a)):
                return False
        except TypeError:  # not a number: refused by ``_plan`` with its message
            continue
    return not holds_anywhere(factors, _divides_by_zero if kind == "div" else has_infinity)


def _divides_by_zero(xp: Any, block: Any) -> Any:
    return xp.any(block == 0)


def _sums_through(kind: str, args: tuple[Any, ...], pend: list[ShardArray]) -> bool:
    """Whether the result of a linear op on the pending operands' partial sums adds up to the result on their sums.

    Floating-point partials do (a wider result dtype only rounds differently). Bool and integer ones only when the
    result keeps their dtype: a bool sum is an OR (``True + True`` is ``True``, but ``2 * True + 2 * True`` is 4)
    and an integer sum wraps in its dtype (int8 ``100 + 100`` is ``-56``, but ``0.5 * 100 + 0.5 * 100`` is 100),
    so ``p * 0.5``, ``p / 2`` or ``p * int16_array`` of such a sum resolve it first.
    """
    if all(is_real_float(a.dtype) or is_complex(a.dtype) for a in pend):
        return True
    if kind == "div":  # true division of integers and bools gives floats
        return False
    try:  # Python scalars are weak, as in the op itself
        out = np.result_type(*(a.dtype if isinstance(a, ShardArray) else a for a in args))
    except TypeError:  # no NumPy promotion rule (bfloat16 with some dtypes): refused or promoted by the op
        return False
    return all(a.dtype == out for a in pend)


def _settled(args: tuple[Any, ...]) -> tuple[Any, ...]:
    """``args`` with every pending operand replaced by its sum, when an earlier consumer already reduced each of
    them in its own layout (``relayout.resolve`` keeps that result); else ``args`` itself."""
    out = []
    for a in args:
        if isinstance(a, ShardArray) and a.pending:
            done = a._resolved
            if done is None or done[0] != a._layout.axes:
                return args
            a = done[1]
        out.append(a)
    return tuple(out)


def _with_sum(out: ShardArray, name: str, fn: Callable[..., Any], settled: tuple[Any, ...], **how: Any) -> None:
    """Give the pending result ``out`` of a linear op its sum, computed locally from the ``settled`` operands.

    The result stays pending (its partial sums are valid, and ``pending`` does not depend on what was resolved
    before), but resolving it reads this sum, where it would reduce the same partial sums again: in
    ``where(p > 0, p, -p)`` the comparison reduces ``p`` and ``-p`` costs no second allreduce.
    """
    total = apply(name, fn, settled, **how)
    if total._layout == out._layout and total.dtype == out.dtype:
        out._resolved = (out._layout.axes, total)


def _keeps_pending(kind: str | None, args: tuple[Any, ...], arrays: list[ShardArray], exact: bool | None) -> bool:
    """Whether op ``kind`` may run on the partial sums of its pending operands and leave the result pending
    (``exact``: ``_scales_exactly``'s answer where the caller has it; it reads data, so it runs once a call)."""
    pend = [a for a in arrays if a.pending]
    if not pend or kind is None or not _sums_through(kind, args, pend):
        return False
    if not (_scales_exactly(kind, args) if exact is None else exact):
        return False
    if kind == "add":
        return len(pend) == len(args) and all(set(a.pending) == set(pend[0].pending) for a in pend)
    if kind == "mul":
        return len(pend) == 1
    if kind == "div":
        return len(pend) == 1 and args[0] is pend[0]
    return kind == "neg"


class _Plan:
    """What ``apply`` works out for one operand signature (see ``plans``): everything but the per-shard work."""

    __slots__ = (
        "bf16",
        "bf16_wide",
        "classes",
        "direct",
        "float_ints",
        "layout",
        "max_bytes",
        "mesh",
        "moves",
        "out_bytes",
        "pending",
        "scalar_at",
        "scalars",
        "slots",
        "template",
        "used",
        "xp",
    )

    def __init__(self, **kw: Any) -> None:
        for k, v in kw.items():
            setattr(self, k, v)


def apply(
    name: str,
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kind: str | None = None,
    domain: str | None = None,
    lead: int = 0,
) -> ShardArray:
    """Run ``fn(xp, *local_operands)`` on every block, broadcasting by name.

    What does not depend on the values (result dims and layout, moves of the
    operands, broadcasters, replica classes) is planned once per operand
    signature and reused (``plans.ELEMENTWISE``); the moves (slices,
    allgathers, resolutions of pending sums) run on every call.

    Args:
        name: the op's name (in error messages and profiles).
        fn: ``fn(xp, *blocks_and_scalars)``, the op on local blocks.
        args: the operands: ShardArrays and scalars.
        kind: how a pending sum passes through (``"add"``, ``"mul"``, ``"div"``, ``"neg"``; None: resolved).
        domain: the dtypes the op is defined for (``dtypes.check_domain``; None: any).
        lead: the index, among the array operands, of the one whose dims come first
            in the result and whose layout wins a tie of traffic (0: the first array).
    """
    # the key: the op, the dispatch context, the layout rule (``leader.choose``) and plans.array_key per array
    # operand, inlined; two operands (most ops) without the list a comprehension builds (about 1.3 us, as much as
    # the rest of the key)
    context, keep_first = plans.context_key(), leader.KEEP_FIRST.get()
    if len(args) == 2:
        a, b = args
        key: Any = (
            name,
            kind,
            domain,
            lead,
            context,
            keep_first,
            (id(a.mesh), a._layout, a.dtype, a.pending) if isinstance(a, ShardArray) else type(a),
            (id(b.mesh), b._layout, b.dtype, b.pending) if isinstance(b, ShardArray) else type(b),
        )
    else:
        key = (
            name,
            kind,
            domain,
            lead,
            context,
            keep_first,
            *[(id(a.mesh), a._layout, a.dtype, a.pending) if isinstance(a, ShardArray) else type(a) for a in args],
        )
    exact = None
    if (kind == "mul" or kind == "div") and any_pending(args):
        exact = _scales_exactly(kind, args)  # whether a pending sum passes depends on the other operands' values
        key = (*key, exact)
    plan = plans.ELEMENTWISE.get(key)
    if plan is None:
        plan = _plan(name, args, kind, domain, lead, exact)
        plans.ELEMENTWISE.put(key, plan)
    shard_lists = []
    for i, move in zip(plan.slots, plan.moves):
        a = args[i]
        shard_lists.append((a if move is None else to_axes(a, move[0], move[1])).shards)
    xp = plan.xp
    if xp is np and plan.max_bytes >= host_buffers.MIN_BYTES:  # (big NumPy results: into reused host buffers)
        fn = POOLED.get(fn, fn)
    block: Callable[..., Any]
    if plan.direct:

        def direct(*shards: Any) -> Any:
            return fn(xp, *shards)

        block = direct
    elif plan.scalar_at is not None:  # (an array and a scalar, as they are: the operators' common case)
        c = _device_scalar(args[plan.scalar_at]) if plan.float_ints else args[plan.scalar_at]

        def array_scalar(s: Any) -> Any:
            return fn(xp, s, c)

        def scalar_array(s: Any) -> Any:
            return fn(xp, c, s)

        block = array_scalar if plan.scalar_at else scalar_array
    else:
        template = list(plan.template)
        for i in plan.scalars:
            template[i] = _device_scalar(args[i]) if plan.float_ints else args[i]
        slots = plan.slots

        def general(*shards: Any) -> Any:
            vals = list(template)
            for i, s in zip(slots, shards):
                vals[i] = s if template[i] is None else template[i](s)
            return fn(xp, *vals)

        block = general
        if plan.bf16 is not None:
            block = (_in_float32 if plan.bf16_wide else _rounded)(block, plan.bf16)
    mesh = plan.mesh
    try:
        if plan.classes is None:
            shards = map_blocks(mesh, plan.used, block, *shard_lists)
        else:
            # (operands too small for the copy pool in any case: no pool checks on every call)
            pool = mesh.backend if plan.max_bytes >= plans.MIN_BYTES else None
            shards = plans.map_classes(mesh.size, plan.classes, block, shard_lists, pool, out_bytes=plan.out_bytes)
    except OverflowError as e:  # NumPy 2 (and CuPy): a Python int scalar outside the array dtype's range
        if isinstance(e, ShardArrayError):
            raise
        raise CastError(
            f"{name}: the scalar operand(s) {[a for a in args if not isinstance(a, ShardArray)]} do not fit the "
            f"dtype of the array operand(s) {_describe(args)} ({e}); cast the array first, e.g. "
            f'x.astype("int64"), or give a scalar in its range'
        ) from e
    out = ShardArray._trusted(mesh, plan.layout, np.dtype(shards[mesh.local_device].dtype), shards, plan.pending)
    if plan.pending:
        settled = _settled(args)
        if settled is not args:
            _with_sum(out, name, fn, settled, kind=kind, domain=domain, lead=lead)
    return out


def _describe(args: tuple[Any, ...]) -> str:
    """The array operands of ``args`` as ``{dims: sizes} dtype`` for messages."""
    return ", ".join(f"{a.sizes} {a.dtype}" for a in args if isinstance(a, ShardArray))


def _plan(
    name: str, args: tuple[Any, ...], kind: str | None, domain: str | None, lead: int, exact: bool | None = None
) -> _Plan:
    """Check the operands of ``apply`` and plan it (raises on bad input; see ``apply``)."""
    arrays = _check_args(name, args)
    check_domain(name, arrays, domain)
    if domain is not None and len(arrays) < len(args):  # (int_array & 1.5: a weak scalar leaves the domain)
        check_scalar_domain(name, [a.dtype for a in arrays], [a for a in args if not isinstance(a, ShardArray)], domain)
    if name == "subtract" and all(
        a.dtype == np.bool_ if isinstance(a, ShardArray) else isinstance(a, (bool, np.bool_)) for a in args
    ):
        raise DTypeError(
            f"subtract: both operands are bool ({_describe(args)}), and a difference of bools is not defined; "
            f'use sa.logical_xor(x, y), or cast first with x.astype("int64")'
        )
    mesh = common_mesh(arrays, name)
    xp = mesh.backend.xp
    keep = _keeps_pending(kind, args, arrays, exact)
    if len(arrays) == 1:
        x = arrays[0]
        dims, sizes, axes = x.dims, x.sizes, dict(zip(x.dims, x.spec.axes))
        resolve_x = bool(x.pending) and not keep
        moves: list[Any] = [(x.spec.axes, False) if resolve_x else None]
        template: list[Any] = [None if isinstance(a, ShardArray) else a for a in args]
        pending = () if resolve_x else x.pending
    else:
        if lead:  # (sizes checked in the call's order first, so that a message numbers the operands as the call)
            union_dims(arrays, name)
        order = [arrays[lead], *(a for i, a in enumerate(arrays) if i != lead)] if lead else arrays
        dims, sizes = union_dims(order, name)
        check_rules(mesh, dims, sizes, f"the result of {name}")
        # by traffic (each operand tried as the one that decides, the first on a tie); a pending operand keeps the
        # first operand's rule, as an einsum's does: whether its sum passes through depends on the layout
        axes = merged_axes(order, dims) if any(a.pending for a in arrays) else leader.choose(order, dims)
        if keep:
            pend_axes = next(a for a in arrays if a.pending).pending
            keep = not any(set(ax).intersection(pend_axes) for ax in axes.values())
        moves = []
        template = []
        pending = ()
        for a in args:
            if isinstance(a, ShardArray):
                target = tuple(axes[d] for d in a.dims)
                moved = (a.pending and not keep) or target != a.spec.axes
                moves.append((target, keep) if moved else None)
                pending = pending or (a.pending if keep else ())
                template.append(_broadcaster(xp, a.dims, dims))
            else:
                template.append(a)
    slots = tuple(i for i, a in enumerate(args) if isinstance(a, ShardArray))
    scalars = tuple(i for i, a in enumerate(args) if not isinstance(a, ShardArray))
    bf16 = None
    bf16_wide = False
    # NumPy scalars count (NEP 50: np.float32(2) is no weak scalar; a bfloat16 one beside an int8 array makes
    # bfloat16, which CuPy gave as float32); where NumPy has no rule for the dtypes (bfloat16 with int16, float16,
    # ...), every backend computes the bfloat16 operands in float32
    dts = [a.dtype for a in arrays] + [a.dtype for a in args if isinstance(a, np.generic)]
    if any(is_bfloat16(d) for d in dts) and mesh.backend.name in ("numpy", "cupy", "meta"):
        bf16 = promote(*dts)
        bf16_wide = xp is np or not _has_rule(dts)
    used = {a for ax in axes.values() for a in ax}.union(pending)
    fast = mesh.backend.has_data and mesh.backend.device_scope is None
    classes = mesh.replica_classes(used) if fast else None
    layout = Layout(dims, tuple(sizes[d] for d in dims), tuple(axes.get(d, ()) for d in dims))
    out_bytes = _out_bytes(mesh, layout, classes, arrays) if classes is not None else 0
    direct = not scalars and bf16 is None and all(template[i] is None for i in slots)
    alone = not direct and bf16 is None and len(args) == 2 and len(slots) == 1 and template[slots[0]] is None
    return _Plan(
        mesh=mesh,
        xp=xp,
        slots=slots,
        moves=tuple(moves),
        template=tuple(t if i in slots else None for i, t in enumerate(template)),
        scalars=scalars,
        direct=direct,
        scalar_at=scalars[0] if alone else None,
        bf16=bf16,
        bf16_wide=bf16_wide,
        float_ints=xp is not np and (kind == "div" or _inexact(arrays)),  # (true division: a float result)
        classes=classes,
        # the most bytes ``map_classes`` can see (every operand whole, per class, and the result's blocks): below the
        # copy pool's threshold the pool is not asked
        max_bytes=len(classes or ()) * sum(a.size * a.dtype.itemsize for a in arrays) + out_bytes,
        out_bytes=out_bytes,
        used=frozenset(used),
        layout=layout,
        pending=mesh_order(mesh, pending),
    )


def _out_bytes(mesh: Any, layout: Layout, classes: Any, arrays: list[ShardArray]) -> int:
    """The bytes of the result blocks ``map_classes`` computes (one per replica class), counted with the operands'
    toward the copy pool's threshold: a broadcast (``lab[:, None] == arange(k)``) writes far more than it reads.

    The result's dtype is not known before the blocks are computed; the array operands' widest item size stands for
    it (a comparison's bool result is counted as wide as its operands: an estimate, which only moves the threshold).
    """
    if len(classes) < 2:  # one class: no pool
        return 0
    bounds = block_bounds(mesh, layout)
    itemsize = max(a.dtype.itemsize for a in arrays)
    return itemsize * sum(math.prod(hi - lo for lo, hi in bounds[rep]) for rep, _ in classes)


def _inexact(arrays: list[ShardArray]) -> bool:
    """Whether the array operands promote to a float or complex dtype (bfloat16 included)."""
    try:
        dt = promote(*(a.dtype for a in arrays))
    except TypeError:  # (no promotion rule: the op names the operands)
        return False
    return is_real_float(dt) or is_complex(dt)


_CSCALAR_INTS = (-(2**63), 2**63)  # the Python ints taken as they are: int64's (CuPy's ``CScalar`` takes them)


def _device_scalar(v: Any) -> Any:
    """A Python int scalar beside float (or complex) arrays as CuPy's kernels can take it: a float where it is
    beyond int64.

    NumPy converts such a weak Python int to the array's float dtype (``x // 2**70`` of float16 ``x`` divides by
    ``inf``); CuPy first packs every Python int into an int64 or uint64 ``CScalar``
    (``cupy/_core/_scalar.pyx``) and raised ``OverflowError`` beyond uint64, and a bfloat16 block refused one
    beyond int64 (``2**63``: ml_dtypes' "expected number, got int"). Its float value is the one NumPy converts it
    to (a float dtype takes a Python int through a double). An int too large even for a double stays as it is:
    NumPy refuses it too (``OverflowError``, which ``apply`` reports as a ``CastError``).
    """
    if type(v) is int and not _CSCALAR_INTS[0] <= v < _CSCALAR_INTS[1]:
        try:
            return float(v)
        except OverflowError:
            return v
    return v


def _has_rule(dtypes: list[np.dtype]) -> bool:
    """Whether NumPy (with ml_dtypes) promotes ``dtypes`` itself (it has no rule for bfloat16 with float16,
    int16/32/64 or uint16/32/64)."""
    try:
        np.result_type(*dtypes)
    except TypeError:
        return False
    return True


def _in_float32(block: Callable[..., Any], target: np.dtype) -> Callable[..., Any]:
    """``block`` on bfloat16 NumPy blocks upcast to float32, its float result rounded once to ``target``.

    ml_dtypes' bfloat16 ufunc loops are 3-40x slower than float32 ones, and a
    Python float scalar would promote them to float32 anyway.
    """
    wide = np.dtype(np.float32)

    def run(*shards: Any) -> Any:
        out = block(*(s.astype(wide) if is_bfloat16(s.dtype) else s for s in shards))
        return out.astype(target) if out.dtype == wide and target != wide else out

    return run


def _rounded(block: Callable[..., Any], target: np.dtype) -> Callable[..., Any]:
    """``block`` with a wider float result rounded to ``target``: CuPy computes bfloat16 with a Python float (an
    operand, or a constant inside ``fn``) in float32 or float64 (ml_dtypes' bfloat16 is no NumPy float kind, so the
    scalar is not weak), where the array API keeps bfloat16.

    Without it, ``q * 0.125`` of bfloat16 ``q`` on CuPy shards became a float32 array, and every product after it
    ran in float32 (measured on an H200: most of a bfloat16 training step's gemms).
    """

    def run(*shards: Any) -> Any:
        out = block(*shards)
        return out.astype(target) if out.dtype != target and out.dtype.kind == "f" else out  # bfloat16's kind is "V"

    return run


def _broadcaster(xp: Any, have: tuple[str, ...], want: tuple[str, ...]) -> Callable[[Any], Any] | None:
    """A function putting a block with dims ``have`` into the dim order ``want`` (size-1 for missing)."""
    perm = tuple(have.index(d) for d in want if d in have)
    missing = tuple(i for i, d in enumerate(want) if d not in have)
    if perm == tuple(range(len(have))) and not missing:
        return None
    if xp is np:  # a view by indexing (None adds the missing axes): no np.expand_dims/np.transpose wrappers
        index = tuple(slice(None) if d in have else None for d in want)
        if perm == tuple(range(len(have))):
            return lambda s: s[index]
        return lambda s: s.transpose(perm)[index]
    if not missing:
        return lambda s: xp.transpose(s, perm)
    return lambda s: xp.expand_dims(xp.transpose(s, perm), missing)


# the block functions of the ops with a short path (module level: ``FAST`` names them)
def _sub_block(xp: Any, a: Any, b: Any) -> Any:
    return a - b


def _mul_block(xp: Any, a: Any, b: Any) -> Any:
    return a * b


def _div_block(xp: Any, a: Any, b: Any) -> Any:
    return a / b


def _eq_block(xp: Any, a: Any, b: Any) -> Any:
    return xp.equal(a, b)


def _ne_block(xp: Any, a: Any, b: Any) -> Any:
    return xp.not_equal(a, b)


def _gt_block(xp: Any, a: Any, b: Any) -> Any:
    return a > b


def _ge_block(xp: Any, a: Any, b: Any) -> Any:
    return a >= b


def _lt_block(xp: Any, a: Any, b: Any) -> Any:
    return a < b


def _le_block(xp: Any, a: Any, b: Any) -> Any:
    return a <= b


def _neg_block(xp: Any, a: Any) -> Any:
    return -a


def _exp_block(xp: Any, a: Any) -> Any:
    return xp.exp(a)


def _log_block(xp: Any, a: Any) -> Any:
    return xp.log(a)


def _sqrt_block(xp: Any, a: Any) -> Any:
    return xp.sqrt(a)


def _abs_block(xp: Any, a: Any) -> Any:
    return xp.abs(a)


# ------------------------------------------------------------------ binary
@differentiable("add")
def add(x: Any, y: Any) -> ShardArray:
    """``x + y``, broadcasting by dim name."""
    return apply("add", cuda_kernels.add, (x, y), "add")  # CuPy blocks: one vectorized kernel where it applies


@differentiable("subtract")
def subtract(x: Any, y: Any) -> ShardArray:
    """``x - y``, broadcasting by dim name; not defined for two bool operands (as in NumPy)."""
    return apply("subtract", _sub_block, (x, y), "add")


@differentiable("multiply")
def multiply(x: Any, y: Any) -> ShardArray:
    """``x * y``, broadcasting by dim name."""
    return apply("multiply", _mul_block, (x, y), "mul")


@differentiable("divide")
def divide(x: Any, y: Any) -> ShardArray:
    """``x / y``, broadcasting by dim name."""
    return apply("divide", _div_block, (x, y), "div")


@differentiable("power")
def power(x: Any, y: Any) -> ShardArray:
    """``x ** y``, broadcasting by dim name.

    Raises:
        ArgumentError: an integer base to a negative integer power (NumPy refuses it; cast to a float first).
    """
    try:
        return apply("power", _power_block, (x, y))
    except ValueError as e:  # NumPy: "Integers to negative integer powers are not allowed."
        if isinstance(e, ShardArrayError) or not all(_integral(a) for a in (x, y)):
            raise
        raise ArgumentError(
            f"power: {e} (operands {_describe((x, y))}{', ' if _scalars((x, y)) else ''}{_scalars((x, y))}); "
            f'cast the base to a float first, e.g. x.astype("float64") ** y'
        ) from e


def _power_block(xp: Any, a: Any, b: Any) -> Any:
    """``a ** b`` of blocks or scalars, refusing an integer base to a negative integer power as NumPy does.

    The same values on every array module and layout:

    * A Python scalar exponent follows NumPy's ``**``, which computes a float or complex base to the power ``-1``,
      ``0.5`` or ``2`` (a Python int -1 or 2, the float 0.5) as its ``reciprocal``, ``sqrt`` or ``square``
      (``(-inf) ** 0.5`` is NaN, ``(inf + 0j) ** -1`` is 0, where ``power`` and CuPy's ``**`` give inf and NaN).
    * An array (or NumPy scalar) exponent follows ``power``, the standard's (and C's) special values:
      ``(-inf) ** 0.5`` is inf and ``(-0.0) ** 0.5`` is 0.0. NumPy's float32/float64 loop takes ``sqrt``'s values
      where the exponent's stride is 0 (a block one element wide along a broadcast axis), so they depended on
      the layout.
    * A bool base to a Python int power is ``power(a, b)``, int64 (NEP 50) for every exponent: NumPy's ``**`` takes
      ``bool_array ** 2`` as ``square`` (int8), CuPy's gives int64.

    CuPy's integer loop gives 0 (or 1, -1 for a base of 1, -1) there instead of raising (``integral_power`` in
    ``cupy/_core/_routines_math.pyx``), so on other array modules than NumPy a signed integer exponent beside an
    integer base is read: once, its minimum (one reduction and one device sync; none for a scalar exponent).
    """
    if xp is not np and _negative_int_exponent(a, b):
        raise ValueError("Integers to negative integer powers are not allowed.")
    kind = getattr(getattr(a, "dtype", None), "kind", None)
    if type(b) is int and kind == "b":
        return xp.power(a, b)
    if xp is not np and type(b) in (int, float) and (kind == "c" or (kind is not None and is_real_float(a.dtype))):
        fast = _FAST_POWERS.get((type(b), b))
        if fast is not None:
            return getattr(xp, fast)(a)
    out = a**b
    if xp is np and isinstance(b, (np.ndarray, np.generic)) and out.dtype.kind == "f":
        return _power_of_half(a, b, out)
    return out


#: the Python scalar exponents NumPy's ``**`` computes another way for a float or complex array
#: (``fast_scalar_power``: the ints -1 and 2 and the float 0.5; ``x ** 2.0`` and ``x ** -1.0`` are ``power``)
_FAST_POWERS = {(int, -1): "reciprocal", (float, 0.5): "sqrt", (int, 2): "square"}


def _power_of_half(a: Any, b: Any, out: np.ndarray) -> np.ndarray:
    """``out`` (``a ** b`` of NumPy values, real floats) with ``power``'s values where ``b`` is 0.5 and ``a`` is
    ``-inf`` (inf) or ``-0.0`` (0.0), which NumPy's loop gives as ``sqrt``'s (NaN, -0.0) for a stride-0 exponent."""
    half = np.equal(b, 0.5)
    if not half.any():
        return out
    a = np.asarray(a if isinstance(a, (np.ndarray, np.generic, float)) else 1.0)  # (only a float is -inf or -0.0)
    fix = half & (np.isneginf(a) | ((a == 0) & np.signbit(a)))
    if not fix.any():
        return out
    return np.where(fix, np.where(a == 0, out.dtype.type(0), out.dtype.type(np.inf)), out).astype(out.dtype)


def _negative_int_exponent(a: Any, b: Any) -> bool:
    """Whether integer (or bool) ``a`` meets a signed integer exponent ``b`` with a negative value, in an integer
    power (``np.uint64(5) ** int8_x`` is float64: no integer power).

    A Python int out of the range the other operand's dtype gives it raises ``OverflowError`` first, as NumPy
    checks it first (``int8_x ** -300``: out of bounds for int8, not a negative power).
    """
    kinds = [v.dtype.kind if hasattr(v, "dtype") else "i" if isinstance(v, (bool, int)) else "f" for v in (a, b)]
    if kinds[0] not in "biu" or kinds[1] != "i" or isinstance(a, MetaArray) or isinstance(b, MetaArray):
        return False
    for v, other in ((a, b), (b, a)):
        if type(v) is int and hasattr(other, "dtype"):
            info = np.iinfo(other.dtype if other.dtype.kind in "iu" else np.int64)  # (a bool takes it as int64)
            if not info.min <= v <= info.max:
                raise OverflowError(f"Python integer {v} out of bounds for {other.dtype}")
    try:
        if np.result_type(*(v.dtype if hasattr(v, "dtype") else v for v in (a, b))).kind not in "iu":
            return False
    except TypeError:  # (no promotion rule: the power itself reports it)
        return False
    if not hasattr(b, "shape") or isinstance(b, np.generic):
        return bool(b < 0)
    return b.size > 0 and bool(b.min() < 0)


def _integral(a: Any) -> bool:
    """Whether ``a`` is an integer (or bool) array or scalar (``np.True_`` too: no ``numbers.Integral``)."""
    if isinstance(a, ShardArray):
        return a.dtype.kind in "biu"
    return isinstance(a, (numbers.Integral, np.integer, np.bool_))


def _scalars(args: tuple[Any, ...]) -> str:
    return ", ".join(repr(a) for a in args if not isinstance(a, ShardArray))


@differentiable("negative")
def negative(x: ShardArray) -> ShardArray:
    """``-x``; not defined for bool arrays (use ``sa.logical_not``)."""
    return apply("negative", _neg_block, (x,), "neg", domain="numeric")


@nondifferentiable("greater")
def greater(x: Any, y: Any) -> ShardArray:
    """``x > y`` elementwise (a bool array); not defined for complex arrays."""
    return apply("greater", _gt_block, (x, y), domain="real")


@nondifferentiable("greater_equal")
def greater_equal(x: Any, y: Any) -> ShardArray:
    """``x >= y`` elementwise (a bool array); not defined for complex arrays."""
    return apply("greater_equal", _ge_block, (x, y), domain="real")


@nondifferentiable("less")
def less(x: Any, y: Any) -> ShardArray:
    """``x < y`` elementwise (a bool array); not defined for complex arrays."""
    return apply("less", _lt_block, (x, y), domain="real")


@nondifferentiable("less_equal")
def less_equal(x: Any, y: Any) -> ShardArray:
    """``x <= y`` elementwise (a bool array); not defined for complex arrays."""
    return apply("less_equal", _le_block, (x, y), domain="real")


@nondifferentiable("equal")
def equal(x: Any, y: Any) -> ShardArray:
    """``x == y`` elementwise (a bool array), broadcasting by dim name."""
    return apply("equal", _eq_block, (x, y))


@nondifferentiable("not_equal")
def not_equal(x: Any, y: Any) -> ShardArray:
    """``x != y`` elementwise (a bool array), broadcasting by dim name."""
    return apply("not_equal", _ne_block, (x, y))


@differentiable("maximum")
def maximum(x: Any, y: Any) -> ShardArray:
    """Elementwise maximum, broadcasting by dim name.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.array([[1.0, -2.0], [3.0, -4.0]]), dims=("a", "b"), mesh=mesh, layout={"a": "row"})
        >>> sa.maximum(x, 0.0).numpy()
        array([[1., 0.],
               [3., 0.]])
    """
    return apply("maximum", _max_block, (x, y), domain="real")


def _max_block(xp: Any, a: Any, b: Any) -> Any:
    return xp.maximum(a, b)


@differentiable("minimum")
def minimum(x: Any, y: Any) -> ShardArray:
    """Elementwise minimum, broadcasting by dim name (see ``maximum``)."""
    return apply("minimum", _min_block, (x, y), domain="real")


def _min_block(xp: Any, a: Any, b: Any) -> Any:
    return xp.minimum(a, b)


@differentiable("where")
def where(cond: ShardArray, x: Any, y: Any) -> ShardArray:
    """``x`` where ``cond`` is true, else ``y``; all three broadcast by name.

    The result has the dims of ``x`` first (then the new dims of ``y`` and
    ``cond``) and ``x``'s layout; when ``x`` is a scalar, ``y``'s; when both
    are, ``cond``'s. So ``where(mask, scores, -inf)`` keeps the dim order of
    ``scores`` whatever the mask's order. Where the operands' layouts conflict,
    the layout is the one whose moves receive least (the module docstring):
    a large ``cond`` or ``y`` may decide where moving ``x`` costs less.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.array([[1.0, -2.0], [3.0, -4.0]]), dims=("a", "b"), mesh=mesh, layout={"b": "col"})
        >>> sa.where(x > 0, x, 0.0).numpy()
        array([[1., 0.],
               [3., 0.]])
    """
    if isinstance(cond, ShardArray) and cond.dtype != np.bool_:
        raise DTypeError(
            f"where: the condition with dims {cond.sizes} has dtype {cond.dtype}; it must be bool: "
            f"compare first (e.g. where(x > 0, x, y) or where(c != 0, x, y))"
        )
    if not isinstance(cond, ShardArray):
        raise DTypeError(
            f"where: the condition must be a bool ShardArray; got {type(cond).__name__}; "
            f"make one with a comparison (e.g. x > 0) or sa.asarray(mask, dims=..., mesh=...)"
        )
    lead = 1 if isinstance(x, ShardArray) or isinstance(y, ShardArray) else 0  # the first value array
    return apply("where", lambda xp, c, a, b: xp.where(c, a, b), (cond, x, y), lead=lead)


# ------------------------------------------------------------------ unary
@differentiable("exp", resolve_inputs=True)
def exp(x: ShardArray) -> ShardArray:
    """Elementwise ``e**x`` (see ``maximum`` for a 2×2-mesh example)."""
    return apply("exp", _exp_block, (x,), domain="inexact")


@differentiable("log", resolve_inputs=True)
def log(x: ShardArray) -> ShardArray:
    """Elementwise natural logarithm."""
    return apply("log", _log_block, (x,), domain="inexact")


@differentiable("tanh", resolve_inputs=True)
def tanh(x: ShardArray) -> ShardArray:
    """Elementwise hyperbolic tangent."""
    return apply("tanh", lambda xp, a: xp.tanh(a), (x,), domain="inexact")


@differentiable("sqrt", resolve_inputs=True)
def sqrt(x: ShardArray) -> ShardArray:
    """Elementwise square root."""
    return apply("sqrt", _sqrt_block, (x,), domain="inexact")


@differentiable("relu", resolve_inputs=True)
def relu(x: ShardArray) -> ShardArray:
    """``max(x, 0)`` elementwise."""
    return apply("relu", lambda xp, a: xp.maximum(a, a.dtype.type(0)), (x,), domain="real")  # bool stays bool


def real(x: ShardArray) -> ShardArray:
    """The real part of a complex array (a real array is returned as it is).

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> z = sa.asarray(np.array([1 + 2j, 3 - 1j]), dims=("a",), mesh=mesh, layout={"a": "col"})
        >>> real(z).numpy(), imag(z).numpy(), conj(z).numpy()
        (array([1., 3.]), array([ 2., -1.]), array([1.-2.j, 3.+1.j]))
    """
    return _real_part(x) if is_complex(x.dtype) else x


@differentiable("real")
def _real_part(x: ShardArray) -> ShardArray:
    return apply("real", lambda xp, a: _part(a, "real"), (x,))


def imag(x: ShardArray) -> ShardArray:
    """The imaginary part of a complex array (zeros for a real one; see ``real``).

    Gradients, in JAX's convention for complex values (the cotangent of
    ``z = x + iy`` is ``dL/dx - i dL/dy``): ``real`` passes the cotangent
    ``g`` back as ``g + 0j``, ``imag`` as ``-1j * g``, ``conj`` as
    ``conj(g)``; for a real array ``imag`` is a constant zero.
    """
    if is_complex(x.dtype):
        return _imag_part(x)
    # a constant zero (its derivative is 0 everywhere), so computed from the value alone
    return apply("imag", lambda xp, a: xp.zeros(a.shape, dtype=a.dtype), (stop_gradient(x),))


@differentiable("imag")
def _imag_part(x: ShardArray) -> ShardArray:
    return apply("imag", lambda xp, a: _part(a, "imag"), (x,))


def _part(a: Any, which: str) -> Any:
    """The real or imaginary part of a complex block, as a contiguous real block."""
    if isinstance(a, MetaArray):
        return a.astype(np.empty(0, a.dtype).real.dtype)
    return (a.real if which == "real" else a.imag).copy()


def conj(x: ShardArray) -> ShardArray:
    """The complex conjugate (a real array is returned as it is; see ``real``)."""
    return _conj(x) if is_complex(x.dtype) else x


@differentiable("conj")
def _conj(x: ShardArray) -> ShardArray:
    return apply("conj", lambda xp, a: xp.conj(a), (x,))


@differentiable("abs", resolve_inputs=True)
def abs(x: ShardArray) -> ShardArray:
    """Elementwise absolute value; the magnitude (a real array) of a complex one.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> abs(sa.asarray(np.array([3 + 4j, -2.0]), dims=("a",), mesh=mesh, layout={"a": "col"})).numpy()
        array([5., 2.])
    """
    return apply("abs", _abs_block, (x,))


_GELU_C = math.sqrt(2.0 / math.pi)


def _gelu_tanh(xp: Any, a: Any) -> Any:
    """``tanh(sqrt(2/pi) (a + 0.044715 a^3))``, in place on one temporary (``a^3`` may overflow to inf where
    ``|a|`` is large, as in float16 from 256 on: tanh of it is the exact ``±1``, so NumPy's warning is quieted)."""
    with np.errstate(over="ignore"):
        u = a * a
        u *= 0.044715 * _GELU_C
        u += _GELU_C
        u *= a
    return xp.tanh(u)


@differentiable("gelu", resolve_inputs=True, saves=True)
def gelu(x: ShardArray) -> Any:
    """GELU, tanh form: ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.array([[0.0, 1.0]]), dims=("a", "b"), mesh=mesh, layout={"b": "col"})
        >>> np.round(sa.gelu(x).numpy(), 4)
        array([[0.    , 0.8412]])
    """
    check_domain("gelu", [x], "real_float")
    if fused.kernels_for(x, "gelu"):  # one kernel; the VJP recomputes tanh from x (saved: None)
        return fused.map_like(resolve_to(x), cuda_kernels.gelu), None
    t = apply("gelu_tanh", _gelu_tanh, (x,))
    return apply("gelu", lambda xp, a, t: (0.5 * a) * (1.0 + t), (x, t)), t


def _pooled_block(ufunc: np.ufunc) -> Callable[..., Any]:
    """A block function computing ``ufunc`` of NumPy blocks into a reused host buffer (``backend.host_buffers``)."""

    def block(xp: Any, *operands: Any) -> Any:
        return host_buffers.ufunc(ufunc, *operands)

    block.__name__ = f"pooled_{ufunc.__name__}"
    return block


#: block functions that are one NumPy ufunc (the operators' and the common math ops'): ``apply`` runs big NumPy
#: blocks through the ufunc with ``out=`` a reused host buffer (``backend.host_buffers``: no page faults of a fresh
#: result; the same values, the ufunc's own loop)
POOLED: dict[Callable[..., Any], Callable[..., Any]] = {
    fn: _pooled_block(ufunc)
    for fn, ufunc in (
        (cuda_kernels.add, np.add),
        (_sub_block, np.subtract),
        (_mul_block, np.multiply),
        (_div_block, np.divide),
        (_eq_block, np.equal),
        (_ne_block, np.not_equal),
        (_gt_block, np.greater),
        (_ge_block, np.greater_equal),
        (_lt_block, np.less),
        (_le_block, np.less_equal),
        (_neg_block, np.negative),
        (_exp_block, np.exp),
        (_log_block, np.log),
        (_sqrt_block, np.sqrt),
        (_abs_block, np.abs),
        (_max_block, np.maximum),
        (_min_block, np.minimum),
    )
}
