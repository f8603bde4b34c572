"""NumPy's functions and ufunc methods on named ShardArrays through the positional dispatch, dims kept by name.

The named tables (``named_functions``, ``named_ufuncs``) map the NumPy names that have an ``sa`` function. The
others that keep each axis's meaning run here: the named operands are aligned by dim name (the dims of the first
operand, then each other operand's new dims in order, as ``x + y`` orders them; a missing dim becomes a size-1
dim), viewed positionally (``xp.asarray(x)``: the same blocks, no copy), given to the positional dispatch
(the positional array's own hooks: ``positional_functions``, ``positional_ufuncs``, NumPy's arguments and
dtypes, no gather) and the results viewed
as named again. Axis ``k`` is the ``k``-th dim of that aligned order (of the array itself for one operand), as
everywhere in the named tables. A result dim keeps its operand's name (``np.fft.rfft(x, axis=0)``: the same dim,
a new size); the entries run here are those whose results have no new dims (``BRIDGED``), and ``np.<ufunc>.outer``
of operands with distinct dims (the result's dims: the first operand's, then the second's).

A NumPy function or ufunc method with no named meaning (one that flattens, reshapes or makes new axes: their names
would be invented) is refused with ``sa.DTypeError`` (a TypeError, as NumPy's own refusal) naming the positional
view, ``np.<name>(xp.asarray(x), ...)``, and the ``sa`` function of that name where there is one (``refusal``).

Example:
    >>> mesh = sa.Mesh({"row": 2, "col": 2})
    >>> x = sa.asarray(np.arange(6.0).reshape(2, 3), dims=("batch", "io"), mesh=mesh, layout={"batch": "row"})
    >>> m = np.median(x, axis=1)           # positional axis 1 is "io"
    >>> m.dims, np.asarray(m)
    (('batch',), array([1., 4.]))
"""

from __future__ import annotations

import inspect
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from ..array import OPS, ShardArray, as_kind
from ..errors import ArgumentError, DimensionError, DTypeError
from ..ops.manipulation.dims import expand_dims
from ..ops.manipulation.structure import rename, transpose
from .common import HOOKS

#: NumPy functions (by ``np[.space]`` name) whose named meaning is NumPy's on the dims in order, result dims kept:
#: elementwise ones (operands aligned by name), reductions and scans along axes, transforms along axes
BRIDGED = frozenset(
    {
        # elementwise, any number of operands aligned by name
        "isclose", "allclose", "array_equal", "array_equiv", "nan_to_num", "fix", "i0", "sinc", "isreal",
        "iscomplex", "isposinf", "isneginf", "real_if_close", "copy", "astype", "may_share_memory",
        "shares_memory", "unravel_index", "cross", "can_cast", "result_type",
        # reductions and scans along axes (scalar q)
        "median", "nanmedian", "ptp", "average", "trapezoid", "nanargmax", "nanargmin", "nancumsum", "nancumprod",
        "cumulative_sum", "cumulative_prod", "unwrap", "partition", "argpartition", "sort_complex", "flipud",
        "fliplr", "percentile", "quantile", "nanpercentile", "nanquantile",
        # along axes: np.fft and np.linalg's batched matrices
        "fft.fft", "fft.ifft", "fft.rfft", "fft.irfft", "fft.hfft", "fft.ihfft", "fft.fft2", "fft.ifft2",
        "fft.fftn", "fft.ifftn", "fft.rfft2", "fft.irfft2", "fft.rfftn", "fft.irfftn", "fft.fftshift",
        "fft.ifftshift", "linalg.inv", "linalg.det", "linalg.slogdet", "linalg.cholesky", "linalg.norm",
        "linalg.matrix_norm", "linalg.vector_norm", "linalg.cond", "linalg.matrix_rank", "linalg.matrix_power",
        "linalg.pinv", "linalg.cross", "trace", "linalg.trace", "tril", "triu", "matrix_transpose",
        "linalg.matrix_transpose", "broadcast_arrays",
    }
)  # fmt: skip


_MERGE = "it merges or splits axes by position; use x.merge_dims(dims, name) or x.split_dim(dim, sizes)"
_JOIN = "it joins along an axis by position; use sa.concat(arrays, dim) or sa.stack(arrays, dim)"
_CONTRACT = "it contracts axes by position; contract dims by name with x @ y or sa.einsum"
_NEW = "its result has axes NumPy makes, with no dim name"
#: why a NumPy function has no named meaning, where the refusal says more than that
WHY: dict[str, str] = {
    **dict.fromkeys(("reshape", "ravel", "resize", "atleast_1d", "atleast_2d", "atleast_3d"),
                    _MERGE),
    **dict.fromkeys(("append", "block", "column_stack", "dstack", "hstack", "vstack", "split", "array_split",
                     "hsplit", "vsplit", "unstack", "insert", "delete"), _JOIN),
    **dict.fromkeys(("dot", "vdot", "inner", "outer", "tensordot", "kron", "matmul", "multi_dot", "vecdot"),
                    _CONTRACT),
    **dict.fromkeys(("histogram", "histogram2d", "histogram_bin_edges", "bincount", "roots", "polyfit", "vander",
                     "meshgrid", "corrcoef", "cov", "convolve", "correlate", "argwhere", "flatnonzero", "ix_",
                     "diag", "diagonal", "rot90", "take", "take_along_axis", "compress",
                     "extract", "ediff1d", "packbits", "logspace", "unique_all", "unique_counts", "unique_inverse",
                     "unique_values", "intersect1d", "union1d", "setdiff1d", "setxor1d", "isin", "polyval",
                     "apply_along_axis", "eig", "eigh", "qr", "svd", "svdvals", "lstsq", "solve"), _NEW),
    **dict.fromkeys(("put", "put_along_axis", "fill_diagonal"),
                    "it writes in place by position"),
}  # fmt: skip


#: the result dims of the bridged functions whose positional results take new names (``np.linalg.inv``'s
#: ``dim0``, ``dim1``): from the operands' aligned dims and NumPy's bound arguments
RESULT_DIMS: dict[str, Callable[[tuple[str, ...], dict[str, Any]], tuple[str, ...]]] = {
    **dict.fromkeys(
        ("linalg.inv", "linalg.cholesky", "linalg.matrix_power", "cross", "linalg.cross", "tril", "triu",
         "broadcast_arrays"),
        lambda d, b: d,
    ),
    **dict.fromkeys(
        ("linalg.pinv", "matrix_transpose", "linalg.matrix_transpose"), lambda d, b: (*d[:-2], d[-1], d[-2])
    ),
    "trace": lambda d, b: _without(d, b.get("axis1", 0), b.get("axis2", 1)),
    "linalg.trace": lambda d, b: d[:-2],
}  # fmt: skip


def _without(dims: tuple[str, ...], *axes: Any) -> tuple[str, ...]:
    """``dims`` without those at the positions ``axes`` (negative ones count from the end)."""
    gone = {operator.index(a) % len(dims) for a in axes}
    return tuple(d for i, d in enumerate(dims) if i not in gone)


#: the bridged functions of a ``q``: a scalar one only (an array ``q`` makes a new leading axis)
QUANTILES = frozenset({"percentile", "quantile", "nanpercentile", "nanquantile"})

#: the bridged functions along one axis that flatten for ``axis=None`` (named arrays do not, beyond 1-D)
ONE_AXIS = frozenset({"nancumsum", "nancumprod", "nanargmax", "nanargmin"})


def namespace() -> Any:
    """``shardarray.array_api`` (filled in above this module: ``ShardArray.__array_namespace__``'s table)."""
    return OPS.array_namespace(None)


def refusal(
    what: str, name: str, dims: tuple[str, ...] | None = None, why: str = "", positional: bool = True
) -> DTypeError:
    """The TypeError of a NumPy function or ufunc method ``what`` with no named meaning, naming the alternatives
    (``positional=False``: the positional side has no counterpart either)."""
    alt = f"sa.{name} (by dim name), or " if HOOKS.lookup(name) is not None else ""
    of = f" (dims {dims})" if dims else ""
    if not positional:
        return DTypeError(
            f"{what} has no counterpart for ShardArrays{of}, named or positional (shardarray.array_api lacks it "
            f"too); use {alt}NumPy on the explicitly gathered copy, {what}(x.numpy(), ...)"
        )
    return DTypeError(
        f"{what} has no named meaning for a ShardArray{of}{': ' + why if why else ''}; use {alt}the positional "
        f"view, which follows NumPy's axes: {what}(xp.asarray(x), ...) with import shardarray.array_api as xp "
        f"(the same blocks, no copy; shardarray.array_api has NumPy's functions)"
    )


def aligned(values: list[Any]) -> tuple[list[Any], tuple[str, ...]]:
    """The named arrays among ``values`` over one dim order (each array's dims in it, a missing one size 1), and
    that order: the first array's dims, then each other's new ones (as ``x + y``). Other values pass through."""
    union: list[str] = []
    for v in values:
        if isinstance(v, ShardArray):
            union.extend(d for d in v.dims if d not in union)
    return [align_to(v, tuple(union)) for v in values], tuple(union)


def align_to(v: Any, dims: tuple[str, ...]) -> Any:
    """The named array ``v`` over ``dims`` (its own dims among them, in that order; a missing one size 1, local);
    another value as it is."""
    if not isinstance(v, ShardArray) or v.dims == dims:
        return v
    order = tuple(d for d in dims if d in v.dims)
    a = v if order == v.dims else transpose(v, order)
    for pos, d in enumerate(dims):
        if d not in v.dims:
            a = expand_dims(a, d, pos)
    return a


def positional(v: Any, kind: type) -> Any:
    """``v`` (or each item of a list or tuple) viewed as a positional array when it is a named one."""
    if isinstance(v, ShardArray):
        return as_kind(v, kind)
    if isinstance(v, (list, tuple)) and any(isinstance(e, ShardArray) for e in v):
        return type(v)(positional(e, kind) for e in v)
    return v


def named(out: Any, what: str, dims: tuple[str, ...], expect: tuple[str, ...] | None = None) -> Any:
    """The positional results ``out`` viewed as named (tuples item by item), its dims ``expect`` when given (and of
    that number); a result dim outside ``dims`` is a dim NumPy made, with no name: refused."""
    if isinstance(out, ShardArray):
        if expect is not None and out.ndim == len(expect) and out.dims != expect:
            out = rename(out, {d: e for d, e in zip(out.dims, expect) if d != e})
        extra = [d for d in out.dims if d not in dims]
        if extra:  # (BRIDGED lists the functions whose results keep their dims: a new one is another call's)
            raise DimensionError(
                f"{what}: this call makes new axes {extra} with no dim name on a ShardArray with dims {dims}; call it "
                f"on the positional view, {what}(xp.asarray(x), ...) with import shardarray.array_api as xp"
            )
        return as_kind(out, ShardArray)
    if isinstance(out, tuple) and hasattr(out, "_make"):  # a named tuple (SlogdetResult, ...)
        return out._make(named(o, what, dims, expect) for o in out)
    if isinstance(out, (tuple, list)):
        return type(out)(named(o, what, dims, expect) for o in out)
    return out


def _align_list(v: Any, dims: tuple[str, ...]) -> Any:
    if isinstance(v, (list, tuple)) and any(isinstance(e, ShardArray) for e in v):
        return type(v)(align_to(e, dims) for e in v)
    return v


def call_function(func: Callable[..., Any], key: str, args: tuple[Any, ...], kw: dict[str, Any]) -> Any:
    """``np.<key>(*args, **kw)`` of named arrays through the positional dispatch (``key`` in ``BRIDGED``)."""
    what = f"np.{key}"
    if kw.get("out") is not None:
        raise DTypeError(f"{what}: out= is not supported on named ShardArrays; use the returned array")
    xp = namespace()
    flat = [*args, *kw.values()]
    every = [a for v in flat for a in (v if isinstance(v, (list, tuple)) else (v,)) if isinstance(a, ShardArray)]
    _, dims = aligned(every)
    if len({a.dims for a in every}) > 1:  # each array argument over the one dim order (the arrays of a list too)
        args = tuple(align_to(a, dims) if isinstance(a, ShardArray) else _align_list(a, dims) for a in args)
        kw = {k: align_to(v, dims) if isinstance(v, ShardArray) else _align_list(v, dims) for k, v in kw.items()}
    pos_args = tuple(positional(a, xp.Array) for a in args)
    pos_kw = {k: positional(v, xp.Array) for k, v in kw.items()}
    if key in ONE_AXIS:
        _one_axis(func, what, args, kw)
    if key in QUANTILES and np.ndim(inspect.signature(func).bind(*args, **kw).arguments.get("q", 0)) > 0:
        raise refusal(what, key, dims, "an array q makes a new leading axis with no dim name; give one q per call")
    out = xp.Array.__array_function__(_first(pos_args, pos_kw), func, (xp.Array,), pos_args, pos_kw)
    if out is NotImplemented:
        raise refusal(what, key.rpartition(".")[2], dims, positional=False)
    if key not in RESULT_DIMS:
        return named(out, what, dims)
    return named(out, what, dims, RESULT_DIMS[key](dims, inspect.signature(func).bind(*args, **kw).arguments))


def _one_axis(func: Callable[..., Any], what: str, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    """``axis=None`` (NumPy: flatten first) of a function along one axis: only for a 1-d named array."""
    bound = inspect.signature(func).bind(*args, **kw).arguments
    x = bound.get(next(iter(inspect.signature(func).parameters)))
    if isinstance(x, ShardArray) and x.ndim > 1 and bound.get("axis") is None:
        raise ArgumentError(
            f"{what}: axis=None flattens the array in NumPy, which a named array with dims {x.dims} ({x.sizes}) "
            f"does not do implicitly; give axis= (0..{x.ndim - 1}), or merge the dims first with "
            f"x.merge_dims({x.dims}, 'flat') (positional arrays, shardarray.array_api, flatten as NumPy)"
        )


def call_ufunc(ufunc: np.ufunc, method: str, inputs: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``np.<ufunc>.<method>`` of named arrays through the positional dispatch: ``__call__`` of operands aligned
    by name; ``reduce``/``accumulate``/``reduceat`` along the array's axes (a ``where=`` mask aligned to it);
    ``outer`` of operands with distinct dims; ``at`` into the first operand in place (``_ufunc_at``)."""
    name = ufunc.__name__
    what = f"np.{name}" if method == "__call__" else f"np.{name}.{method}"
    arrays = [a for a in inputs if isinstance(a, ShardArray)]
    if not arrays:
        raise refusal(what, name)
    if method == "at":
        return _ufunc_at(ufunc, what, inputs, kwargs)
    if method == "outer":
        shared = set(inputs[0].dims if isinstance(inputs[0], ShardArray) else ()) & set(
            inputs[1].dims if len(inputs) > 1 and isinstance(inputs[1], ShardArray) else ()
        )
        if shared:
            raise DimensionError(
                f"{what}: the operands share the dims {sorted(shared)}; an outer product's result has every dim of "
                f"both, so rename one first (y.rename({{{next(iter(sorted(shared)))!r}: 'other'}}))"
            )
        dims = tuple(d for a in arrays for d in a.dims)
    elif method == "__call__":
        inputs_list, dims = aligned(list(inputs))
        inputs = tuple(inputs_list)
    else:
        dims = arrays[0].dims
        where = kwargs.get("where")
        if isinstance(where, ShardArray):
            if set(where.dims) - set(dims):
                raise DimensionError(f"{what}: where= has dims {where.dims} that the array (dims {dims}) lacks")
            kwargs = {**kwargs, "where": align_to(where, dims)}
    out_arg = kwargs.get("out")
    if out_arg is not None and any(o is not None for o in (out_arg if isinstance(out_arg, tuple) else (out_arg,))):
        raise DTypeError(f"{what}: out= is not supported on named ShardArrays (they are immutable); use the result")
    kwargs = {k: v for k, v in kwargs.items() if k != "out"}
    xp = namespace()
    pos_in = [positional(a, xp.Array) for a in inputs]
    pos_kw = {k: positional(v, xp.Array) for k, v in kwargs.items()}
    out = xp.Array.__array_ufunc__(_first(pos_in, pos_kw), ufunc, method, *pos_in, **pos_kw)
    if out is NotImplemented:
        raise refusal(what, name, dims, positional=False)
    return named(out, what, dims, _result_dims(method, dims, kwargs))


def _ufunc_at(ufunc: np.ufunc, what: str, inputs: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``np.<ufunc>.at(x, indices[, b])`` into the named array ``x`` in place: ``indices`` select along ``x``'s
    dims in order (an index array or a tuple of them, NumPy's reading: the first dim first), ``b`` a scalar, host
    data or a named array over the selection (aligned to ``x``'s dims by name when it has them all, else read by
    position). The positional ``ufunc.at`` writes the view ``xp.asarray(x)``; its value is written into ``x``."""
    x = inputs[0]
    if not isinstance(x, ShardArray):
        raise refusal(what, ufunc.__name__, None, "write into a named array, the first operand")
    xp = namespace()
    rest = [positional(align_to(b, x.dims) if _over(b, x) else b, xp.Array) for b in inputs[1:]]
    return write_back(
        x,
        lambda view: xp.Array.__array_ufunc__(view, ufunc, "at", view, *rest, **kwargs),
        what,
        ufunc.__name__,
    )


def _over(b: Any, x: ShardArray) -> bool:
    """Whether ``b`` is a named array over ``x``'s dims (each of its dims one of ``x``'s, as many)."""
    return isinstance(b, ShardArray) and b.ndim == x.ndim and set(b.dims) == set(x.dims)


def _result_dims(method: str, dims: tuple[str, ...], kwargs: dict[str, Any]) -> tuple[str, ...] | None:
    """The dims of a ufunc method's result by NumPy's rules (a positional result made afresh, of an empty array,
    has new names: these replace them): ``reduce`` drops its axes (unless ``keepdims``); the others keep them."""
    if method != "reduce":
        return dims
    axis = kwargs.get("axis", 0)
    if kwargs.get("keepdims"):
        return dims
    if axis is None:
        return ()
    try:
        axes = {operator.index(a) % len(dims) for a in (axis if isinstance(axis, (tuple, list)) else (axis,))}
    except (TypeError, ZeroDivisionError):
        return None  # (the positional dispatch has refused such an axis already)
    return tuple(d for i, d in enumerate(dims) if i not in axes)


def tile_by_reps(func: Any, what: str, A: Any, reps: Any) -> Any:
    """``np.tile(x, reps)`` -> ``sa.tile``: ``reps`` (an int or a tuple) pairs with the last dims, as NumPy pairs it
    with the last axes; more reps than dims would make new leading axes, with no names: refused (``sa.tile`` of
    ``{dim: count}`` or the positional view)."""
    fn = HOOKS.lookup("tile")
    if fn is None or not isinstance(A, ShardArray):
        return NotImplemented
    try:
        counts = [operator.index(r) for r in (reps if isinstance(reps, (tuple, list)) else (reps,))]
    except TypeError:
        raise DTypeError(f"{what}: reps must be an int or a tuple of ints (NumPy's TypeError); got {reps!r}") from None
    if len(counts) > A.ndim:
        raise refusal(
            what, "tile", A.dims, f"{len(counts)} reps for {A.ndim} dims make new leading axes with no dim name"
        )
    return fn(A, dict(zip(A.dims[A.ndim - len(counts) :], counts))) if counts else A


def broadcast_to_shape(func: Any, what: str, array: Any, shape: Any, subok: bool = False) -> Any:
    """``np.broadcast_to(x, shape)``: ``x`` itself for its own shape; another shape makes new axes (or widens size-1
    ones) with no dim names: refused, naming ``sa.broadcast_to(x, {dim: size, ...})``, which names them."""
    if not isinstance(array, ShardArray):
        return NotImplemented
    target = tuple(int(n) for n in np.atleast_1d(np.asarray(shape, dtype=np.intp)))
    if target == array.shape:
        return array
    raise refusal(
        what,
        "broadcast_to",
        array.dims,
        f"shape {target} makes or widens axes with no dim name; name them with "
        f"sa.broadcast_to(x, {{'new': n, **x.sizes}})",
    )


#: NumPy's in-place writers run on the positional view of the named array written, then written back into it
WRITES = frozenset({"copyto", "putmask", "place"})


def call_write(func: Callable[..., Any], key: str, args: tuple[Any, ...], kw: dict[str, Any]) -> Any:
    """``np.copyto(x, src, where=mask)``, ``np.putmask(x, mask, values)``, ``np.place(x, mask, vals)`` into the
    named array ``x`` in place: its named operands aligned to ``x``'s dims by name (a missing dim broadcasts; a dim
    ``x`` lacks is a ``DimensionError``), host data by position as NumPy reads it (``putmask``'s short values and
    ``place``'s ``vals`` cycle in the C order of ``x``'s dims). The positional writer writes the view
    ``xp.asarray(x)`` (``positional_writes``), whose value is then written into ``x`` (``x[...] = view``: the lock,
    the tape's refusal and ``copies``' watch of a write; no data moves, the layouts agree)."""
    what = f"np.{key}"
    params = list(inspect.signature(func).parameters)
    bound = inspect.signature(func).bind(*args, **kw).arguments
    dst = bound[params[0]]
    if not isinstance(dst, ShardArray):
        return NotImplemented  # (a NumPy destination: NumPy's TypeError, nothing gathered into it)
    xp = namespace()
    for name, v in bound.items():
        if name != params[0] and isinstance(v, ShardArray):
            if set(v.dims) - set(dst.dims):
                raise DimensionError(
                    f"{what}: {name}= has dims {v.dims}, the array written has {dst.dims}; its dims must be among "
                    f"them (a missing one broadcasts)"
                )
            bound[name] = positional(align_to(v, dst.dims), xp.Array)
    given = {n: bound[n] for n in params[1:] if n in bound}
    return write_back(dst, lambda view: func(view, **given), what, key)


def write_back(dst: ShardArray, write: Callable[[Any], Any], what: str, name: str) -> Any:
    """``write(view)`` into the positional view of ``dst`` (NumPy's writer of positional arrays), then the view's
    value into ``dst`` in place; NumPy's refusal of the writer becomes ``refusal``'s."""
    xp = namespace()
    view = as_kind(dst, xp.Array)
    out = write(view)
    if out is NotImplemented:
        raise refusal(what, name, dst.dims, positional=False)
    dst[...] = as_kind(view, ShardArray)
    return out


def _first(args: Any, kw: dict[str, Any]) -> Any:
    """The first positional array among ``args`` and ``kw`` (the lists' arrays too): whose hook NumPy would call."""
    flat = (a for v in (*args, *kw.values()) for a in (v if isinstance(v, (list, tuple)) else (v,)))
    return next(a for a in flat if isinstance(a, ShardArray))
