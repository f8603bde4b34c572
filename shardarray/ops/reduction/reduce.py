"""Reductions over named dims: sum, mean (pending sums) and max, min (allreduce).

Low-precision floats (float16, bfloat16; any float narrower than 32 bits, see
``dtypes.accumulation_dtype``) are summed in float32 and rounded once, so the
result is the same on every layout: ``x.sum(dims)`` equals
``x.astype("float32").sum(dims).astype(x.dtype)`` and ``x.mean(dims)`` rounds
the float32 mean once (an overflowing sum does not spoil the mean). A
low-precision sum over a split dim is **resolved eagerly**: the float32
partial sums are allreduced (the comm log shows the float32 payload) before
the one rounding, rather than left pending as float16 partial sums, which
would be rounded before they are added. Such sums are not pending, so a
consumer that splits the result over the reduced axis gets an allreduce and a
slice instead of a reduce-scatter.
"""

from __future__ import annotations

import builtins
import math
from typing import Any

import numpy as np

from ...array import ShardArray
from ...backend.meta import MetaArray
from ...core import plans
from ...core.common import dims_arg, map_blocks, mesh_order, new_array
from ...core.relayout import resolve
from ...core.tape import differentiable, nondifferentiable
from ...dtypes import accumulation_dtype, check_domain, compute_dtype, is_real_float
from ...errors import ArgumentError
from ...layout import Layout
from ..elementwise import arithmetic as ew
from ..manipulation.dims import squeeze
from ..manipulation.structure import astype
from .search import complex_extreme


def size_one(x: ShardArray, dims: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """``(ones, rest)`` when the dims of ``dims`` split over mesh axes (of size > 1) all have size 1, else None.

    A reduction over such dims is a squeeze of ``ones`` after the (local) reduction over ``rest``: each of
    them holds its one entry on the devices of its first block, so reducing it needs no collective, and
    ``squeeze`` moves its mesh axes onto the remaining dim with the largest block by one alltoall (a 0-d
    result: one broadcast) instead of an allreduce that leaves the result replicated over them.
    """
    if 1 not in x.shape:  # (the common case, at once)
        return None
    mesh = x.mesh
    ones = tuple(
        d for d, axes in zip(x.dims, x.spec.axes) if d in dims and builtins.any(mesh.axis_size(a) > 1 for a in axes)
    )
    if not ones or builtins.any(x.sizes[d] != 1 for d in ones):
        return None
    return ones, tuple(d for d in dims if d not in ones)


def plus_zero(y: ShardArray) -> ShardArray:
    """``y + 0.0`` for a float or complex ``y`` (not pending): a sum or mean of one entry as NumPy's, whose sum
    starts from its identity ``+0.0``, so that ``-0.0`` gives ``0.0`` (a split size-1 dim's squeeze alone would
    keep ``-0.0``, where the same dim unsplit gives ``0.0``); other dtypes and pending sums as they are."""
    if y.pending or not (is_real_float(y.dtype) or y.dtype.kind == "c"):
        return y
    return ew.add(y, 0.0)


def _split(x: ShardArray, dims: tuple[str, ...]) -> tuple[tuple[int, ...], tuple[str, ...], dict[str, tuple[str, ...]]]:
    index = tuple(x.dims.index(d) for d in dims)
    keep = tuple(d for d in x.dims if d not in dims)
    axes = {d: a for d, a in zip(x.dims, x.spec.axes) if d in keep}
    return index, keep, axes


@differentiable("sum")
def sum(x: ShardArray, dims: Any = None) -> ShardArray:
    """Sum over ``dims`` (one name, several, or all when None).

    Reducing a split dim leaves a partial sum on every device, pending over
    that dim's axes; it is allreduced when the value is needed. When every
    split reduced dim has size 1 the sum is a ``squeeze`` of them (one
    alltoall, see ``size_one``; a pending sum stays pending), in the sum's
    dtype (int64 for bool and narrow integers). Low-precision
    floats are summed in float32 and rounded once, their split sums resolved
    eagerly in float32 (see the module doc).

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.ones(mesh, {"batch": 4, "io": 6}, dtype="float64", layout={"batch": "row", "io": "col"})
        >>> s = x.sum("io")
        >>> s.pending, s.numpy()
        (('col',), array([6., 6., 6., 6.]))
    """
    try:
        narrow = x.pending and x.dtype.kind in "biu" and x.dtype.itemsize < 8
    except AttributeError:  # (not an array: refused below, with its message)
        narrow = False
    if narrow:
        x = resolve(x, x.spec.axes)  # (a bool or narrow-int sum's partials add in its dtype: OR, wrapping)
    if isinstance(x, ShardArray) and 1 in x.shape:  # (dims_arg only then: sum is on every hot path)
        picked = size_one(x, dims_arg(x, dims, "sum"))
        if picked is not None:  # split size-1 dims: a squeeze (one alltoall), with the sum's dtype (see size_one)
            out = squeeze(sum.__wrapped__(x, picked[1]), picked[0])
            return out if picked[1] else plus_zero(out)
    key = _dims_key(dims)
    if key is not None:
        key = ("sum", key, plans.context_key(), *plans.array_key(x))
    plan = plans.REDUCE.get(key)
    if plan is None:
        plan = _sum_plan(x, dims_arg(x, dims, "sum"))
        plans.REDUCE.put(key, plan)
    if plan.index is None:  # a sum over no dims: x itself, in the dtype a sum gives (int64 for bool, as NumPy)
        return x if plan.acc is None else astype(x, plan.acc)
    backend = x.mesh.backend
    index, acc = plan.index, plan.acc

    def block(s: Any) -> Any:
        return backend.sum(s, index, acc)

    if plan.classes is None:
        shards = map_blocks(x.mesh, plan.used, block, x.shards)
    else:
        shards = plans.map_classes(x.mesh.size, plan.classes, block, (x.shards,), backend)
    dtype = acc if acc is not None else np.dtype(shards[x.mesh.local_device].dtype)
    out = ShardArray._trusted(x.mesh, plan.layout, dtype, shards, plan.pending)
    return out if acc is None else _round(out, x.dtype)


class _SumPlan:
    """What ``sum`` works out for one signature: axis indices, accumulation dtype, result layout and pending axes."""

    __slots__ = ("acc", "classes", "index", "layout", "mesh", "pending", "used")

    def __init__(self, **kw: Any) -> None:
        for k, v in kw.items():
            setattr(self, k, v)


def _dims_key(dims: Any) -> Any:
    """``dims`` as a cache key when None, a str/int, or a tuple of them (exact types: no bool or float), else None."""
    if dims is None or type(dims) in (str, int):
        return (type(dims), dims)
    if type(dims) is tuple and builtins.all(type(d) in (str, int) for d in dims):
        return ("tuple", *((type(d), d) for d in dims))
    return None


def _sum_plan(x: ShardArray, dims: tuple[str, ...]) -> Any:
    """Plan ``sum`` of ``x`` over the (checked) ``dims``: the same arithmetic as ``_partial_sum``."""
    if not dims:  # x itself, cast where a sum changes the dtype (bool and narrow integers, as np.sum)
        out = np.sum(np.zeros(0, x.dtype)).dtype if x.dtype.kind in "biu" else x.dtype
        return _SumPlan(index=None, acc=None if out == x.dtype else out, mesh=x.mesh)
    acc = accumulation_dtype(x.dtype)
    index, keep, axes = _split(x, dims)
    reduced_axes = [a for d in dims for a in x.spec.of(d)]
    used = x.spec.used_axes.union(x.pending)
    mesh = x.mesh
    fast = mesh.backend.has_data and mesh.backend.device_scope is None
    sizes = x.sizes
    return _SumPlan(
        index=index,
        acc=acc,
        used=used,
        classes=mesh.replica_classes(used) if fast else None,
        layout=Layout(keep, tuple(sizes[d] for d in keep), tuple(axes.get(d, ()) for d in keep)),
        pending=mesh_order(mesh, set(x.pending).union(reduced_axes)),
        mesh=mesh,
    )


def _partial_sum(x: ShardArray, dims: tuple[str, ...], acc: np.dtype | None) -> ShardArray:
    """The local sums over ``dims`` (in ``acc`` when given), pending over the axes of split reduced dims."""
    index, keep, axes = _split(x, dims)
    backend = x.mesh.backend
    reduced_axes = [a for d in dims for a in x.spec.of(d)]
    used = x.spec.used_axes.union(x.pending)
    shards = map_blocks(x.mesh, used, lambda s: backend.sum(s, index, acc), x.shards)
    pending = mesh_order(x.mesh, set(x.pending).union(reduced_axes))
    return new_array(x.mesh, keep, x.sizes, axes, shards, pending, dtype=acc)


def _round(wide: ShardArray, dtype: np.dtype) -> ShardArray:
    """Resolve a wide (float32) sum, then round it once to ``dtype``."""
    wide = resolve(wide, wide.spec.axes)
    xp = wide.mesh.backend.xp

    def narrow(s: Any) -> Any:
        with np.errstate(over="ignore"):  # a sum beyond the dtype's range is inf, as in NumPy
            return xp.asarray(s).astype(dtype)

    shards = map_blocks(wide.mesh, wide.spec.used_axes, narrow, wide.shards)
    return ShardArray(wide.mesh, wide.spec, dtype, shards)


@differentiable("mean")
def mean(x: ShardArray, dims: Any = None) -> ShardArray:
    """Mean over ``dims`` (see ``sum``; a pending sum stays pending).

    Over split dims each device's partial sum is divided by the count before
    the sum is resolved (the division is linear: it keeps the sum pending, so
    a consumer can still take it as a reduce-scatter), so the result can be an
    ulp or so from NumPy's, as any other order of summation is: the mean of six
    ones split unevenly over 2×2 devices is ``0.9999999999999999``. Call
    ``x.sum(dims).resolve() / count`` for one rounding after the allreduce.
    Integers and bools are summed in float64 and resolved first, then divided
    once, as NumPy (exact, NumPy's quotient, while the sum is below 2**53).

    Low-precision floats are averaged in float32 and rounded once, as NumPy
    does: the mean of 30000 float16 threes is 3, though their sum overflows.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.full(mesh, {"batch": 2, "io": 30000}, 3.0, dtype="float16", layout={"io": "col"})
        >>> x.mean("io").numpy(), x.sum("io").numpy()
        (array([3., 3.], dtype=float16), array([inf, inf], dtype=float16))
    """
    dims = dims_arg(x, dims, "mean")
    picked = size_one(x, dims)
    if picked is not None:  # split size-1 dims: a squeeze (one alltoall; see size_one)
        out = squeeze(mean.__wrapped__(x, picked[1]), picked[0])
        return out if picked[1] else plus_zero(out)
    count = math.prod(x.sizes[d] for d in dims)  # divided by, as NumPy: `* (1 / 9)` makes the mean of 14s 13.999...
    if x.dtype.kind in "biu":  # float64 partial sums, as np.mean: no integer overflow
        if x.pending:  # (its value is the sum wrapped in its dtype, which float partials would not wrap)
            x = resolve(x, x.spec.axes)
        total = _partial_sum(x, dims, np.dtype(np.float64))
        # (resolved, then divided once, as NumPy: exact sums of integers while below 2**53, NumPy's quotient)
        return (resolve(total, total.spec.axes) if total.pending else total) / count
    acc = accumulation_dtype(x.dtype)
    if acc is None:
        return sum.__wrapped__(x, dims) / count
    wide = _partial_sum(x, dims, acc) if dims else astype(x, acc)
    return _round(wide / count, x.dtype)


def _identity(dtype: np.dtype, op: str) -> Any:
    if is_real_float(dtype):
        return -np.inf if op == "max" else np.inf
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return info.min if op == "max" else info.max
    return op != "max"


def _extreme(x: ShardArray, dims: Any, op: str) -> ShardArray:
    dims = dims_arg(x, dims, op)
    picked = size_one(x, dims)
    if picked is not None:  # split size-1 dims: a squeeze (one alltoall; see size_one)
        return squeeze(_extreme(x, picked[1], op), picked[0])
    if x.dtype.kind == "c":  # NumPy's order: lexicographic, a NaN part propagates (search.complex_extreme)
        return complex_extreme(x, dims, op) if dims else x
    check_domain(op, [x], "real")
    if not dims:
        return x
    x = resolve(x, x.spec.axes)
    index, keep, axes = _split(x, dims)
    xp = x.mesh.backend.xp
    reducer = xp.max if op == "max" else xp.min
    ident = _identity(x.dtype, op)

    wide = compute_dtype(x.dtype) if x.mesh.backend.name == "numpy" else None

    def local(s: Any) -> Any:
        if builtins.any(s.shape[i] == 0 for i in index):
            shape = tuple(n for i, n in enumerate(s.shape) if i not in index)
            return xp.full(shape, ident, dtype=x.dtype)
        if wide is not None:  # exact in float32; ml_dtypes' bfloat16 max loop is ~30x slower
            return xp.asarray(reducer(s.astype(wide), axis=index)).astype(x.dtype)
        return reducer(s, axis=index)

    shards = map_blocks(x.mesh, x.spec.used_axes, local, x.shards)
    red_axes = mesh_order(x.mesh, [a for d in dims for a in x.spec.of(d)])
    if red_axes:
        shards = x.mesh.comm.allreduce(shards, red_axes, op=op)
    return new_array(x.mesh, keep, x.sizes, axes, shards, dtype=x.dtype)


@differentiable("max", resolve_inputs=True)
def max(x: ShardArray, dims: Any = None) -> ShardArray:
    """Maximum over ``dims``: local max, then a max-allreduce over split dims' axes.

    When every split reduced dim has size 1: a local max, then a ``squeeze`` of those dims (one alltoall, not
    an allreduce; see ``size_one``).

    Complex values compare as NumPy's ``np.max`` compares them: lexicographically (real part, then imaginary
    part), the first in row-major order of the values with a NaN part propagating; over split dims each device's
    partial extreme is allgathered with its row-major position (three int64 per output element per device) and
    the first extreme of the array wins (``search.complex_extreme``), as NCCL has no complex
    max. Over an empty dim the result is the identity of ``max`` (``-inf`` for floats, the dtype's least value for
    integers), as ``jax.lax.reduce_max`` gives, so ``logsumexp`` and ``softmax`` of empty dims need no special case;
    ``xp.max`` and ``np.max`` raise there, as NumPy does.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.arange(6.0).reshape(2, 3), dims=("a", "b"), mesh=mesh, layout={"b": "col"})
        >>> x.max("b").numpy()
        array([2., 5.])
    """
    return _extreme(x, dims, "max")


@differentiable("min", resolve_inputs=True)
def min(x: ShardArray, dims: Any = None) -> ShardArray:
    """Minimum over ``dims`` (see ``max``; over an empty dim: ``inf``, or the dtype's greatest value)."""
    return _extreme(x, dims, "min")


# ------------------------------------------------------------------ prod, all, any, var, std
def _on_meta(s: Any, index: tuple[int, ...], dtype: Any, lead: int = 0) -> MetaArray:
    """The meta block (shape and dtype only) of a reduction of ``s`` over ``index``, with ``lead`` new leading axes."""
    return MetaArray((4,) * lead + tuple(n for i, n in enumerate(s.shape) if i not in index), np.dtype(dtype))


def _reduced_axes(x: ShardArray, dims: tuple[str, ...]) -> tuple[str, ...]:
    return mesh_order(x.mesh, [a for d in dims for a in x.spec.of(d)])


def _gather_partials(x: ShardArray, red_axes: tuple[str, ...], shards: list[Any]) -> list[Any]:
    """Every device's partial results stacked along a new leading axis (one allgather over ``red_axes``)."""
    xp = x.mesh.backend.xp
    used = x.spec.used_axes
    lead = map_blocks(x.mesh, used, lambda s: xp.expand_dims(s, 0), shards)
    return x.mesh.comm.allgather(lead, red_axes, 0)


def _fold_product(s: Any) -> Any:
    """``s[0] * s[1] * ...`` along the leading axis, without NumPy's identity first: ``xp.prod`` starts from
    ``1 + 0j``, and ``(1+0j) * (inf+infj)`` is NaN, so a partial product of ``inf+infj`` would turn into NaN where
    NumPy's own product of the data keeps it."""
    out = s[0]
    for k in range(1, s.shape[0]):
        out = out * s[k]
    return out


@differentiable("prod", resolve_inputs=True)
def prod(x: ShardArray, dims: Any = None) -> ShardArray:
    """Product over ``dims`` (names, positions, or all when None), as ``np.prod``.

    Each device multiplies its block; over split dims the per-device partial
    products (one value per output element per device) are **allgathered**
    over the reduced dims' axes and multiplied locally, an exact product with
    no logarithms (the communicators reduce by sum, max and min only). When
    every split reduced dim has size 1: a ``squeeze`` of them instead (one
    alltoall; see ``size_one``).
    Low-precision floats multiply in float32 and are rounded once; integer
    and bool arrays give NumPy's dtype (int64 for narrow integers). Complex
    values with infinite parts may differ from NumPy's (NaN parts where
    NumPy has infinities, or the reverse): complex multiplication with
    infinities is not associative, and the blocks' partial products are
    multiplied in another order than NumPy's left-to-right one.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.array([[1.0, 2.0, 3.0], [-1.0, 0.5, 4.0]]), dims=("a", "b"), mesh=mesh,
        ...                layout={"b": "col"})
        >>> sa.prod(x, "b").numpy(), x.prod().numpy()
        (array([ 6., -2.]), array(-12.))
    """
    dims = dims_arg(x, dims, "prod")
    picked = size_one(x, dims)
    if picked is not None:  # split size-1 dims: a squeeze (one alltoall; see size_one)
        return squeeze(prod.__wrapped__(x, picked[1]), picked[0])
    x = resolve(x, x.spec.axes)
    acc = accumulation_dtype(x.dtype)
    index, keep, axes = _split(x, dims)
    xp = x.mesh.backend.xp
    out_dtype = np.prod(np.ones(1, x.dtype), dtype=acc).dtype

    def local(s: Any) -> Any:
        return _on_meta(s, index, out_dtype) if isinstance(s, MetaArray) else xp.prod(s, axis=index, dtype=acc)

    shards = map_blocks(x.mesh, x.spec.used_axes, local, x.shards)
    red_axes = _reduced_axes(x, dims)
    if red_axes:
        gathered = _gather_partials(x, red_axes, shards)
        shards = map_blocks(
            x.mesh,
            x.spec.used_axes,
            lambda s: _on_meta(s, (0,), s.dtype) if isinstance(s, MetaArray) else _fold_product(s),
            gathered,
        )
    out = new_array(x.mesh, keep, x.sizes, axes, shards)
    return out if acc is None else astype(out, x.dtype)


def _logical(x: ShardArray, dims: Any, op: str) -> ShardArray:
    dims = dims_arg(x, dims, op)
    picked = size_one(x, dims)
    if picked is not None:  # split size-1 dims: a squeeze (one alltoall; see size_one)
        return squeeze(_logical(x, picked[1], op), picked[0])
    x = resolve(x, x.spec.axes)
    index, keep, axes = _split(x, dims)
    xp = x.mesh.backend.xp
    red_axes = _reduced_axes(x, dims)
    # over split dims one byte per output element: a min (all) or max (any) allreduce of uint8 truth values
    dtype = np.uint8 if red_axes else np.bool_

    def local(s: Any) -> Any:
        if isinstance(s, MetaArray):
            return _on_meta(s, index, dtype)
        return xp.asarray((xp.all if op == "all" else xp.any)(s, axis=index)).astype(dtype)

    shards = map_blocks(x.mesh, x.spec.used_axes, local, x.shards)
    if not red_axes:
        return new_array(x.mesh, keep, x.sizes, axes, shards, dtype=np.bool_)
    shards = x.mesh.comm.allreduce(shards, red_axes, op="min" if op == "all" else "max")
    shards = map_blocks(x.mesh, x.spec.used_axes, lambda s: s.astype(np.bool_), shards)
    return new_array(x.mesh, keep, x.sizes, axes, shards, dtype=np.bool_)


@nondifferentiable("all")
def all(x: ShardArray, dims: Any = None) -> ShardArray:
    """Whether every element over ``dims`` is true (nonzero), as ``np.all``: a bool array.

    Over split dims: a local ``all``, then a min-allreduce of one byte per
    output element over the reduced dims' axes (when every split reduced dim
    has size 1: a ``squeeze`` of them, one alltoall). Empty dims give True.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.array([[1.0, 2.0], [0.0, 3.0]]), dims=("a", "b"), mesh=mesh, layout={"b": "col"})
        >>> sa.all(x, "b").numpy(), sa.any(x == 0, "b").numpy(), sa.all(x).numpy()
        (array([ True, False]), array([False,  True]), array(False))
    """
    return _logical(x, dims, "all")


@nondifferentiable("any")
def any(x: ShardArray, dims: Any = None) -> ShardArray:
    """Whether some element over ``dims`` is true (nonzero), as ``np.any``: a bool array.

    Over split dims: a local ``any``, then a max-allreduce of one byte per
    output element (see ``all``). Empty dims give False.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.array([[0, 0], [0, 3]]), dims=("a", "b"), mesh=mesh, layout={"a": "row", "b": "col"})
        >>> sa.any(x, "b").numpy(), x.any().numpy()
        (array([False,  True]), array(True))
    """
    return _logical(x, dims, "any")


def _moments(x: ShardArray, dims: tuple[str, ...], correction: float, what: str, root: bool = False) -> ShardArray:
    """The variance over ``dims``: one pass of per-device moments, one allgather, Chan's combination."""
    check_domain(what, [x], "real_float")
    if not isinstance(correction, (int, float, np.integer, np.floating)) or isinstance(correction, bool):
        raise ArgumentError(f"{what}: correction must be a number (0 or 1 usually); got {correction!r}")
    picked = size_one(x, dims)
    if picked is not None:  # split size-1 dims: a squeeze (one alltoall; see size_one); N is the same
        return squeeze(_moments(x, picked[1], correction, what, root), picked[0])
    x = resolve(x, x.spec.axes)
    acc = accumulation_dtype(x.dtype) or x.dtype
    index, keep, axes = _split(x, dims)
    xp = x.mesh.backend.xp
    total = math.prod(x.sizes[d] for d in dims)

    def local(s: Any) -> Any:
        # (count n, shift m = the block's mean rounded, S1 = sum(x - m), S2 = sum((x - m)^2)) per output element
        if isinstance(s, MetaArray):
            return _on_meta(s, index, acc, lead=1)
        s = xp.asarray(s, dtype=acc)
        n = math.prod(s.shape[i] for i in index)
        kept = tuple(k for i, k in enumerate(s.shape) if i not in index)
        if n == 0:
            z = xp.zeros(kept, dtype=acc)
            return xp.stack([z, z, z, z])
        m = xp.mean(s, axis=index, keepdims=True)
        d = s - m
        return xp.stack(
            [xp.full(kept, n, dtype=acc), xp.reshape(m, kept), xp.sum(d, axis=index), xp.sum(d * d, axis=index)]
        )

    red_axes = _reduced_axes(x, dims)
    used = x.spec.used_axes
    parts = map_blocks(x.mesh, used, local, x.shards)
    if red_axes:
        parts = _gather_partials(x, red_axes, parts)
    else:
        parts = map_blocks(x.mesh, used, lambda p: xp.expand_dims(p, 0), parts)
    denom = builtins.max(total - correction, 0)

    def combine(p: Any) -> Any:
        # Chan et al.'s parallel combination in shifted form: with r the shift of the largest block,
        # T1 = sum(x - r) = sum S1_i + n_i (m_i - r),
        # T2 = sum((x - r)^2) = sum S2_i + 2 (m_i - r) S1_i + n_i (m_i - r)^2,
        # M2 = T2 - T1^2 / N. The block means' rounding cancels exactly (the corrected two-pass algorithm).
        if isinstance(p, MetaArray):
            return _on_meta(p, (0, 1), x.dtype)
        n, m, s1, s2 = p[:, 0], p[:, 1], p[:, 2], p[:, 3]
        if not total:
            return xp.full(m.shape[1:], np.nan, dtype=x.dtype)
        r = xp.take_along_axis(m, xp.argmax(n, axis=0)[None], 0)
        e = m - r
        t1 = xp.sum(s1 + n * e, axis=0)
        t2 = xp.sum(s2 + e * (2 * s1 + n * e), axis=0)
        m2_all = xp.maximum(t2 - t1 * (t1 / total), 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            var = m2_all / acc.type(denom)
        return (xp.sqrt(var) if root else var).astype(x.dtype)

    shards = map_blocks(x.mesh, used, combine, parts)
    return new_array(x.mesh, keep, x.sizes, axes, shards, dtype=x.dtype)


def var(x: ShardArray, dims: Any = None, correction: float = 0.0) -> ShardArray:
    """Variance over ``dims`` divided by ``N - correction`` (NumPy's ``ddof``), as ``np.var``.

    Numerically stable in one pass: each device computes its block's count,
    mean ``m`` and the sums of deviations and squared deviations from ``m``;
    over split dims these four values per output element are **allgathered**
    once over the reduced dims' axes (one collective; the communicators have
    no reduction that combines moments) and combined with Chan et al.'s
    parallel formula in shifted form, which also cancels the rounding of the
    block means (more accurate than NumPy's float32 ``var`` of large offsets).
    Low-precision floats are computed in float32 and rounded once. Complex
    values give NumPy's real variance, the mean of ``|x - mean|^2``: the
    variance of the real parts plus that of the imaginary parts (two such
    allgathers; ``float32`` for ``complex64``). When every split reduced
    dim has size 1: no allgather, a ``squeeze`` of them (one alltoall; see
    ``size_one``). Differentiable.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.array([[1.0, 2.0, 3.0, 4.0], [2.0, 2.0, 2.0, 2.0]]), dims=("a", "b"), mesh=mesh,
        ...                layout={"b": "col"})
        >>> sa.var(x, "b").numpy(), sa.var(x, "b", correction=1).numpy()
        (array([1.25, 0.  ]), array([1.66666667, 0.        ]))
    """
    if isinstance(x, ShardArray) and x.dtype.kind == "c":
        return _complex_spread(x, dims_arg(x, dims, "var"), correction, root=False)
    return _var(x, dims, correction)


@differentiable("var", resolve_inputs=True)
def _var(x: ShardArray, dims: Any = None, correction: float = 0.0) -> ShardArray:
    """``var`` of real values (the recorded op)."""
    return _moments(x, dims_arg(x, dims, "var"), correction, "var")


def _complex_spread(x: ShardArray, dims: tuple[str, ...], correction: float, root: bool) -> ShardArray:
    """NumPy's variance of complex values, real: that of the real parts plus that of the imaginary parts (two
    ``var``), over ``max(N - correction, 0)`` once (NumPy's inf, not the parts' inf + NaN); its square root for
    ``std``. Differentiable through the parts."""
    spread = ew.add(_var(ew.real(x), dims), _var(ew.imag(x), dims))
    if correction:
        n = math.prod(x.sizes[d] for d in dims)
        spread = ew.multiply(spread, n / (n - correction) if n > correction else math.inf)
    return spread_sqrt(spread) if root else spread


@differentiable("spread_sqrt", resolve_inputs=True)
def spread_sqrt(v: ShardArray) -> ShardArray:
    """``sqrt`` of a spread (a variance: real, never negative) whose gradient is 0 where the spread is 0, as
    ``std``'s (PyTorch's choice; ``sqrt``'s own would be ``0 * inf = NaN`` there): the square root of complex
    ``var`` and of ``nanvar`` (``nanstd``)."""
    return ew.sqrt.__wrapped__(v)


def std(x: ShardArray, dims: Any = None, correction: float = 0.0) -> ShardArray:
    """Standard deviation over ``dims``: ``sqrt(var(x, dims, correction))`` (one collective, see ``var``; complex
    values as there).

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.array([[1.0, 3.0, 1.0, 3.0]]), dims=("a", "b"), mesh=mesh, layout={"b": "col"})
        >>> sa.std(x, "b").numpy()
        array([1.])
    """
    if isinstance(x, ShardArray) and x.dtype.kind == "c":
        return _complex_spread(x, dims_arg(x, dims, "std"), correction, root=True)
    return _std(x, dims, correction)


@differentiable("std", resolve_inputs=True)
def _std(x: ShardArray, dims: Any = None, correction: float = 0.0) -> ShardArray:
    """``std`` of real values (the recorded op)."""
    return _moments(x, dims_arg(x, dims, "std"), correction, "std", root=True)
