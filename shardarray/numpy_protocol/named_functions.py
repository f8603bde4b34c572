"""NumPy functions on named ShardArrays: ``np.sum(x, axis=0)`` is ``sa.sum(x, x.dims[0])``.

``FUNCTIONS`` has one row per NumPy function, naming the ``shardarray``
function by attribute name, looked up when called (an op added to
``shardarray`` later works as soon as it exists). Positional axes become dim
names: axis ``k`` of ``x`` is ``x.dims[k]``. A function without a row runs
through the positional dispatch on the same blocks when its result keeps its
dims (``named_bridge.BRIDGED``: ``np.median``, ``np.isclose``, ``np.fft.rfft``,
``np.linalg.inv``, ...; the writers ``np.copyto``/``putmask``/``place`` in place:
``named_bridge.WRITES``); any other raises ``sa.DTypeError`` (a TypeError, as
NumPy's refusal) naming the positional view ``xp.asarray(x)`` and the ``sa``
function (``named_bridge.refusal``); nothing is gathered. (Positional arrays,
``shardarray.array_api``, use ``positional_functions``: derived from the
namespace, not listed.)

NumPy's file writers (``np.save``, ``np.savez``, ``np.savez_compressed``, ``np.savetxt``) of a distributed
array (named or positional) raise ``sa.DTypeError`` (a TypeError, as NumPy's own refusal) that names the
ways to write it (``writer_error``): ``sa.io.write_npy`` writes each block once, no gather, and ``np.load``
reads the file; ``np.save(file, x.numpy())`` writes the explicitly gathered copy. They do not gather
implicitly: under MPI every process would write the whole array to the same file.

Example:
    >>> mesh = sa.Mesh({"row": 2, "col": 2})
    >>> x = sa.asarray(np.arange(8.0).reshape(4, 2), dims=("batch", "io"), mesh=mesh, layout={"batch": "row"})
    >>> s = np.sum(x, axis=0)              # sa.sum(x, "batch"): pending over row, resolved when read
    >>> s.dims, np.asarray(s)
    (('io',), array([12., 16.]))
"""

from __future__ import annotations

import inspect
import operator
import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..array import ShardArray, like_kind
from ..errors import ArgumentError, DimensionError, DTypeError, OutOfBoundsError
from ..layout import Layout
from ..ops.creation.basic import from_blocks, full
from ..ops.manipulation.structure import astype, rename, transpose
from .common import HOOKS, same, short
from .named_bridge import BRIDGED, WHY, WRITES, broadcast_to_shape, call_function, call_write, refusal, tile_by_reps
from .named_ufuncs import dims_of, one_dim
from .python_protocols import round_array


@dataclass(frozen=True)
class Entry:
    """One ``__array_function__`` table row: call ``shardarray.<name>`` after adapting NumPy's arguments.

    ``kind``: ``"reduce"`` (``(a, axis=None, dtype=, ...)`` -> ``fn(x, dims)``), ``"axis"`` (one axis, NumPy's
    default ``default_axis`` -> ``fn(x, dim)``), ``"dims"`` (several axes or None -> ``fn(x, dims)``),
    ``"seq"`` (``(arrays, axis)`` -> ``fn(arrays, dim)``), ``"pass"`` (arguments forwarded as given) or
    ``"custom"`` (``handler`` does it all).
    """

    name: str
    kind: str = "pass"
    default_axis: Any = None
    handler: Callable[..., Any] | None = None


# NumPy keyword -> the shardarray parameter of the same meaning
KWARG_NAMES = {"ddof": "correction", "a_min": "min", "a_max": "max", "condition": "cond"}


def _neutral(param: inspect.Parameter, value: Any) -> bool:
    """Whether an explicitly passed NumPy keyword is a no-op (its default, or False/None/True as NumPy treats it)."""
    if value is param.default or value is np._NoValue:
        return True
    if param.name in ("keepdims", "overwrite_input") and value is False:
        return True
    if param.name == "where" and value is True:
        return True
    if param.name in ("out", "dtype", "initial") and value is None:
        return True
    if param.name in ("ddof", "correction") and same(value, 0):
        return True
    return same(value, param.default)


def _extra_kwargs(func: Callable[..., Any], fn: Callable[..., Any], rest: dict[str, Any], what: str) -> dict[str, Any]:
    """The NumPy keywords that remain after adapting: forwarded when ``fn`` takes them, dropped when neutral."""
    try:
        accepted: Mapping[str, inspect.Parameter] = inspect.signature(fn).parameters
    except (TypeError, ValueError):  # pragma: no cover - every shardarray function has a signature
        accepted = {}
    try:
        np_params: Mapping[str, inspect.Parameter] = inspect.signature(func).parameters
    except (TypeError, ValueError):  # pragma: no cover
        np_params = {}
    out: dict[str, Any] = {}
    for key, value in rest.items():
        if key == "out" and value is not None:
            raise DTypeError(
                f"{what}: out= is not supported on ShardArrays (they are immutable); use the returned array"
            )
        if key in accepted:
            out[key] = value
        elif KWARG_NAMES.get(key) in accepted:
            out[KWARG_NAMES[key]] = value
        elif key in np_params and _neutral(np_params[key], value):
            continue
        else:
            raise ArgumentError(
                f"{what}: {key}={short(value)} is not supported on ShardArrays by "
                f"sa.{getattr(fn, '__name__', '?')}; "
                f"call it without {key}= (or gather explicitly with np.asarray(x) and use NumPy)"
            )
    return out


def _bind(func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], what: str) -> dict[str, Any]:
    try:
        return dict(inspect.signature(func).bind(*args, **kwargs).arguments)
    except TypeError as e:
        raise ArgumentError(f"{what}: {e}; see help({what})") from None


def _call(entry: Entry, func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    what = f"np.{func.__name__}"
    if entry.kind == "custom":
        assert entry.handler is not None  # the table's own invariant, not user input
        return entry.handler(func, what, *args, **kwargs)
    fn = HOOKS.lookup(entry.name)
    if fn is None:
        return NotImplemented
    if entry.kind == "pass":
        return fn(*args, **_extra_kwargs(func, fn, kwargs, what))
    bound = _bind(func, args, kwargs, what)
    if entry.kind == "seq":
        arrays = list(bound.pop(next(iter(bound))))
        if not arrays or not all(isinstance(a, ShardArray) for a in arrays):
            return NotImplemented
        axis = bound.pop("axis", 0)
        if entry.name == "stack":
            return _stack(fn, arrays, axis, what, _extra_kwargs(func, fn, bound, what))
        return fn(arrays, one_dim(arrays[0], axis, what), **_extra_kwargs(func, fn, bound, what))
    x = bound.pop(next(iter(bound)))
    if not isinstance(x, ShardArray):
        return NotImplemented
    axis = bound.pop("axis", entry.default_axis)
    if entry.kind == "reduce":
        dtype = bound.pop("dtype", None)
        if dtype is not None:
            x = astype(x, dtype)
        out = fn(x, dims_of(x, axis, what), **_extra_kwargs(func, fn, bound, what))
        if dtype is None or out.dtype == np.dtype(dtype):
            return out
        return astype(out, dtype)  # NumPy's result has the dtype= (np.sum(x, dtype=np.int8), np.mean(x, dtype=int))
    if entry.kind == "axis":
        return fn(x, one_dim(x, axis, what), **_extra_kwargs(func, fn, bound, what))
    if entry.kind == "dims":
        return fn(x, dims_of(x, axis, what), **_extra_kwargs(func, fn, bound, what))
    raise AssertionError(f"unknown table kind {entry.kind!r}")  # pragma: no cover - the table's own invariant


def _stack(fn: Callable[..., Any], arrays: list[ShardArray], axis: Any, what: str, extra: dict[str, Any]) -> Any:
    """``np.stack(arrays, axis)``: a new dim (named ``stack``, or ``stack_1``... if taken) at position ``axis``."""
    dims = arrays[0].dims
    name, k = "stack", 0
    while name in dims:
        k += 1
        name = f"stack_{k}"
    try:
        pos = operator.index(axis)
    except TypeError:
        raise DTypeError(f"{what}: axis must be an integer (NumPy's TypeError); got {axis!r}") from None
    if not -len(dims) - 1 <= pos <= len(dims):
        raise OutOfBoundsError(
            f"{what}: axis {pos} is out of range for stacking arrays with dims {dims}; use 0..{len(dims)}"
        )
    pos = pos % (len(dims) + 1)
    out = fn(arrays, name, **extra)
    order = [d for d in out.dims if d != name]
    order.insert(pos, name)
    return out if tuple(order) == out.dims else transpose(out, tuple(order))


# custom handlers: (numpy function, "np.name", *numpy args, **numpy kwargs)

#: NumPy's file writers, refused with ``writer_error``
FILE_WRITERS = ("save", "savez", "savez_compressed", "savetxt")


def writer_error(what: str) -> DTypeError:
    """The refusal of NumPy's file writer ``what`` (``np.save``...) on a distributed array, naming the ways."""
    return DTypeError(
        f"{what}: NumPy's writers do not take a distributed array (that would gather it onto one host; under MPI "
        f"every process would write the whole file). Write it with sa.io.write_npy(path, x) (each block written "
        f"once, no gather; np.load reads the file, sa.io.read_npy reads it back onto a mesh), or write the "
        f"explicitly gathered copy: {what}(file, x.numpy())"
    )


def _refuse_writer(func: Any, what: str, *args: Any, **kwargs: Any) -> Any:
    raise writer_error(what)


def _transpose(func: Any, what: str, a: Any, axes: Any = None) -> Any:
    if not isinstance(a, ShardArray):
        return NotImplemented
    if axes is None:
        return transpose(a, ())
    names = dims_of(a, tuple(axes), what)
    if names is None or len(names) != a.ndim:
        raise DimensionError(f"{what}: axes {axes!r} must list every axis of the array once; its dims are {a.dims}")
    return transpose(a, tuple(names))


def _moveaxis(func: Any, what: str, a: Any, source: Any, destination: Any) -> Any:
    if not isinstance(a, ShardArray):
        return NotImplemented
    src = dims_of(a, source, what) or ()
    dst = [
        operator.index(d) % a.ndim if -a.ndim <= operator.index(d) < a.ndim else None
        for d in (destination if isinstance(destination, (tuple, list)) else (destination,))
    ]
    if len(src) != len(dst) or None in dst:
        raise DimensionError(
            f"{what}: source {source!r} and destination {destination!r} must name the same number "
            f"of axes of the array with dims {a.dims}"
        )
    order = [d for d in a.dims if d not in src]
    for pos, d in sorted(zip(dst, src)):
        order.insert(pos, d)  # type: ignore[arg-type]
    return transpose(a, tuple(order))


def _swapaxes(func: Any, what: str, a: Any, axis1: Any, axis2: Any) -> Any:
    if not isinstance(a, ShardArray):
        return NotImplemented
    d1, d2 = one_dim(a, axis1, what), one_dim(a, axis2, what)
    order = [d2 if d == d1 else d1 if d == d2 else d for d in a.dims]
    return transpose(a, tuple(order))


def _expand_dims(func: Any, what: str, a: Any, axis: Any) -> Any:
    """``np.expand_dims(x, axis)``: ``sa.expand_dims`` with a new dim named ``new`` (``new_1``... if taken)."""
    fn = HOOKS.lookup("expand_dims")
    if fn is None or not isinstance(a, ShardArray):
        return NotImplemented
    axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    ndim = a.ndim + len(axes)
    try:
        positions = sorted(operator.index(p) % ndim if -ndim <= operator.index(p) < ndim else -1 - ndim for p in axes)
    except TypeError:
        raise DTypeError(
            f"{what}: axis must be an integer or a tuple of integers (NumPy's TypeError); got {axis!r}"
        ) from None
    if positions[0] < 0 or len(set(positions)) != len(positions):
        raise DimensionError(
            f"{what}: axis {axis!r} is out of range or repeated for a result with {ndim} dims "
            f"(the array's dims are {a.dims}); use distinct positions in -{ndim}..{ndim - 1}"
        )
    out, k = a, 0
    for pos in positions:
        name = "new"
        while name in out.dims:
            k += 1
            name = f"new_{k}"
        out = fn(out, name, pos)
    return out


def _where(func: Any, what: str, condition: Any, *xy: Any) -> Any:
    """``np.where(cond, x, y)`` -> ``sa.where``; ``np.where(cond)`` alone is ``np.nonzero`` -> ``sa.nonzero``."""
    fn = HOOKS.lookup("where" if xy else "nonzero")
    if fn is None:
        return NotImplemented
    if len(xy) not in (0, 2):
        raise ArgumentError(
            f"{what}: give either the condition alone or the condition, x and y; got {1 + len(xy)} arguments"
        )
    return fn(condition, *xy)


def _roll(func: Any, what: str, a: Any, shift: Any, axis: Any = None) -> Any:
    """``np.roll(x, shift, axis)`` -> ``sa.roll(x, dim, shift)`` per axis (shifts and axes paired as NumPy pairs
    them); ``axis=None`` rolls a 1-D array (NumPy's flattening, which named arrays do not do, otherwise)."""
    fn = HOOKS.lookup("roll")
    if fn is None or not isinstance(a, ShardArray):
        return NotImplemented
    if axis is None and a.ndim == 0:
        return a  # NumPy: rolling a 0-d array gives its value
    if axis is None and np.ndim(shift) == 0:
        return fn(a, one_dim(a, None, what), operator.index(shift))
    try:
        pairs = np.broadcast(np.asarray(shift), np.asarray(axis))
    except ValueError:
        raise ArgumentError(f"{what}: shift {shift!r} and axis {axis!r} do not pair up (NumPy pairs them)") from None
    out = a
    for s, k in pairs:
        out = fn(out, one_dim(a, operator.index(k), what), operator.index(s))
    return out


def _flip(func: Any, what: str, m: Any, axis: Any = None) -> Any:
    """``np.flip(x, axis)`` -> ``sa.flip`` along each dim ``axis`` names (an int, a tuple; None: every dim, as
    NumPy flips every axis)."""
    fn = HOOKS.lookup("flip")
    if fn is None or not isinstance(m, ShardArray):
        return NotImplemented
    dims = m.dims if axis is None else (dims_of(m, axis, what) or ())
    out = m
    for dim in dims:
        out = fn(out, dim)
    return out


def _repeat(func: Any, what: str, a: Any, repeats: Any, axis: Any = None) -> Any:
    """``np.repeat(x, repeats, axis)`` -> ``sa.repeat(x, repeats, dim)``; ``axis=None`` repeats a 1-D array."""
    fn = HOOKS.lookup("repeat")
    if fn is None or not isinstance(a, ShardArray):
        return NotImplemented
    return fn(a, repeats, one_dim(a, axis, what))


def _pad(func: Any, what: str, array: Any, pad_width: Any, mode: Any = "constant", **kwargs: Any) -> Any:
    """``np.pad(x, pad_width)`` with zeros -> ``sa.pad`` along each dim; other modes and values are refused (the
    positional ``xp.pad`` has them all)."""
    fn = HOOKS.lookup("pad")
    if fn is None or not isinstance(array, ShardArray):
        return NotImplemented
    values = kwargs.pop("constant_values", 0)
    if mode != "constant" or kwargs or np.any(np.asarray(values, dtype=object) != 0):
        raise ArgumentError(
            f"{what}: named arrays pad with constant zeros only (sa.pad); got mode={mode!r}, "
            f"constant_values={short(values)}{', ' + ', '.join(kwargs) if kwargs else ''}. Use the positional "
            f"shardarray.array_api.pad, which has NumPy's modes"
        )
    try:
        widths = np.broadcast_to(np.asarray(pad_width), (array.ndim, 2))
        if widths.dtype.kind not in "iu":
            raise TypeError
    except (TypeError, ValueError):
        raise ArgumentError(
            f"{what}: pad_width must be an int, (before, after), or one (before, after) per axis of the array "
            f"with dims {array.dims}; got {short(pad_width)}"
        ) from None
    out = array
    for dim, (before, after) in zip(array.dims, widths.tolist()):
        out = fn(out, dim, before, after) if before or after else out
    return out


def _round(func: Any, what: str, a: Any, decimals: Any = 0, out: Any = None) -> Any:
    if not isinstance(a, ShardArray):
        return NotImplemented
    if out is not None:
        raise DTypeError(f"{what}: out= is not supported on ShardArrays (they are immutable); use the returned array")
    return round_array(a, decimals or None)


def _meta(attr: str) -> Callable[..., Any]:
    def handler(func: Any, what: str, a: Any, *rest: Any) -> Any:
        if not isinstance(a, ShardArray):
            return NotImplemented
        if attr == "size" and rest and rest[0] is not None:
            return a.shape[operator.index(rest[0])]
        return getattr(a, attr)

    return handler


def _like(fill: Any) -> Callable[..., Any]:
    def handler(func: Any, what: str, a: Any, *args: Any, **kwargs: Any) -> Any:

        if not isinstance(a, ShardArray):
            return NotImplemented
        bound = _bind(func, (a, *args), kwargs, what)
        value = bound.pop("fill_value", fill)
        dtype = bound.pop("dtype", None)
        shape = bound.pop("shape", None)
        for key, v in bound.items():
            if key not in ("a", "prototype", "order", "subok", "device") or (key == "order" and v not in ("K", "C")):
                raise ArgumentError(f"{what}: {key}={v!r} is not supported on ShardArrays; call it without {key}=")
        if shape is not None and tuple(np.atleast_1d(shape)) != a.shape:
            raise ArgumentError(
                f"{what}: shape={shape!r} differs from the array's {a.shape}; use sa.full(mesh, "
                f"sizes, value) for a new shape"
            )
        return full(a.mesh, a.sizes, value, a.dtype if dtype is None else dtype, a.layout)

    return handler


def einsum_by_letters(func: Any, what: str, *operands: Any, **kwargs: Any) -> Any:
    """``np.einsum("ij,jk->ik", x, w)``: letters become the operands' dim names (a shared letter renames to one)."""
    fn = HOOKS.lookup("einsum")
    if fn is None or not operands or not isinstance(operands[0], str):
        return NotImplemented
    spec, arrays = operands[0].replace(" ", ""), list(operands[1:])
    if not all(isinstance(a, ShardArray) for a in arrays):
        return NotImplemented
    extra = {k: v for k, v in kwargs.items() if k != "optimize" and not (k == "out" and v is None)}
    if extra:
        raise ArgumentError(f"{what}: {', '.join(extra)}= is not supported on ShardArrays; call it without")
    lhs, arrow, rhs = spec.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(arrays):
        raise ArgumentError(
            f"{what}: {operands[0]!r} must have one term per operand ({len(arrays)}); or use the named form "
            f"sa.einsum(x, w, out=(...))"
        )
    terms, arrays, out_letters = _explicit(what, terms, arrays, rhs if arrow else None)
    lhs = ",".join(terms)
    names: dict[str, str] = {}  # letter -> dim name: the operand's own name, or a fresh one when it is taken
    every = {d for a in arrays for d in a.dims}
    renamed = []
    for i, (term, a) in enumerate(zip(terms, arrays)):
        if len(term) != a.ndim or len(set(term)) != len(term):
            raise DimensionError(
                f"{what}: term {term!r} must name each of the {a.ndim} axes {a.dims} of operand {i} once"
            )
        mapping = {}
        for letter, d in zip(term, a.dims):
            if letter not in names:
                target, k = d, 0
                while target in names.values():
                    k += 1
                    target = f"{d}_{k}"
                    target = target if target not in every else target + "_"
                names[letter] = target
            if names[letter] != d:
                mapping[d] = names[letter]
        renamed.append(rename(a, mapping) if mapping else a)
    equation = (
        ", ".join(" ".join(names[c] for c in t) for t in terms) + " -> " + " ".join(names[c] for c in out_letters)
    )
    return fn(equation, *renamed)


def _explicit(
    what: str, terms: list[str], arrays: list[ShardArray], rhs: str | None
) -> tuple[list[str], list[ShardArray], str]:
    """NumPy's einsum subscripts made plain: ``(terms, arrays, output letters)`` with no ``...`` and no letter twice in
    one term, for the same result.

    ``...`` stands for an operand's leading axes beyond its letters, right-aligned across operands as NumPy
    broadcasts them (each gets a fresh letter; a size-1 axis against a longer one is dropped: the product then
    broadcasts over it). A letter repeated within a term takes a diagonal (``ii->i``) or a trace (``ii``): the
    repeat gets a fresh letter, and an identity matrix over the two letters joins the operands (one einsum still,
    with its algorithm and collectives; the identity is built block by block, laid out as the operand's dims).
    Without ``->`` the output is NumPy's implicit one: the ``...`` letters, then every letter used once, sorted.
    """
    used = set("".join(terms) + (rhs or ""))
    fresh = iter(c for c in string.ascii_letters if c not in used)
    widths = [a.ndim - (len(t) - 3) if "..." in t else 0 for t, a in zip(terms, arrays)]
    if (
        any(w < 0 for w in widths)
        or any(t.replace("...", "").count(".") for t in terms)
        or (rhs and "." in rhs.replace("...", ""))
    ):
        raise DimensionError(f"{what}: each '...' must stand for 0 or more axes of its operand; got terms {terms}")
    ell = [next(fresh) for _ in range(max(widths, default=0))]
    sizes: dict[str, int] = {}
    for t, a, w in zip(terms, arrays, widths):
        if "..." in t:
            k = t.index("...")
            for c, n in zip(ell[len(ell) - w :], a.shape[k : k + w]):
                if sizes.get(c, 1) == 1:  # (a size-1 axis broadcasts against any other, 0 included)
                    sizes[c] = n
    for t, a, w in zip(terms, arrays, widths):  # the plain letters' sizes: a size-1 axis broadcasts, as NumPy's
        k = t.index("...") if "..." in t else len(t)
        for c, n in zip(t[:k] + t[k + 3 :], a.shape[:k] + a.shape[k + w :]):
            if sizes.get(c, 1) == 1:
                sizes[c] = n
    singles = "".join(sorted(c for c in used if c.isalpha() and "".join(terms).count(c) == 1))
    if rhs is None:
        out = "".join(ell) + singles
    elif "..." in rhs:
        out = rhs.replace("...", "".join(ell))
    elif ell:  # (some operand's '...' stands for axes)
        raise DimensionError(
            f"{what}: the output has no '...' for the {len(ell)} axes the operands' '...' stand for; write '...' "
            f"in the output (e.g. '...ij->...i') or sum them first"
        )
    else:
        out = rhs
    new_terms, new_arrays = [], []
    for i, (t, a, w) in enumerate(zip(terms, arrays, widths)):
        if "..." in t:
            k = t.index("...")
            mine = ell[len(ell) - w :]
            drop = [a.dims[k + j] for j, c in enumerate(mine) if a.shape[k + j] == 1 and sizes[c] != 1]
            letters = [c for j, c in enumerate(mine) if a.dims[k + j] not in drop]
            a = a.isel({d: 0 for d in drop}) if drop else a
            t = t[:k] + "".join(letters) + t[k + 3 :]
        # a letter's size-1 axis against a longer one elsewhere broadcasts (NumPy's einsum): drop it here
        ones: list[int] = []
        if len(t) == a.ndim:  # (a term of another length is refused by the caller)
            ones = [j for j, c in enumerate(t) if a.shape[j] == 1 and sizes.get(c, 1) != 1 and t.count(c) == 1]
        if ones:
            a = a.isel({a.dims[j]: 0 for j in ones})
            t = "".join(c for j, c in enumerate(t) if j not in ones)
        extra = []
        for j, c in enumerate(t):
            if c in t[:j]:
                first = t.index(c)
                if a.shape[first] != a.shape[j]:
                    raise DimensionError(
                        f"{what}: operand {i}'s axes {first} and {j} (both '{c}') differ in size "
                        f"({a.shape[first]} != {a.shape[j]}); a repeated letter takes a diagonal of equal sizes"
                    )
                c2 = next(fresh)
                t = t[:j] + c2 + t[j + 1 :]
                extra.append((c + c2, _identity(a, a.dims[first], a.dims[j])))
        new_terms.append(t)
        new_arrays.append(a)
        for term, e in extra:
            new_terms.append(term)
            new_arrays.append(e)
    return new_terms, new_arrays, out


def _identity(a: ShardArray, d1: str, d2: str) -> ShardArray:
    """The identity matrix over ``a``'s dims ``d1`` and ``d2`` (equal sizes), in ``a``'s dtype and layout of the
    two; each device builds its own block."""
    lay = a._layout
    axes = dict(zip(lay.dims, lay.axes))
    n = a.sizes[d1]
    layout = Layout((d1, d2), (n, n), (axes[d1], axes[d2]))
    backend = a.mesh.backend

    def make(bounds: tuple[tuple[int, int], ...]) -> Any:
        (r0, r1), (c0, c1) = bounds
        if not backend.has_data:
            return backend.xp.full((r1 - r0, c1 - c0), 0, dtype=a.dtype)
        return backend.from_numpy((np.arange(c0, c1)[None, :] == np.arange(r0, r1)[:, None]).astype(a.dtype))

    return like_kind(from_blocks(a.mesh, layout, a.dtype, make), a)


FUNCTIONS: dict[Callable[..., Any], Entry] = {
    # reductions: axis= (positions or names) -> dims; dtype= casts first; out= refused
    np.sum: Entry("sum", "reduce"),
    np.mean: Entry("mean", "reduce"),
    np.prod: Entry("prod", "reduce"),
    np.max: Entry("max", "reduce"),
    np.amax: Entry("max", "reduce"),
    np.min: Entry("min", "reduce"),
    np.amin: Entry("min", "reduce"),
    np.std: Entry("std", "reduce"),
    np.var: Entry("var", "reduce"),
    np.all: Entry("all", "reduce"),
    np.any: Entry("any", "reduce"),
    np.count_nonzero: Entry("count_nonzero", "reduce"),
    np.nansum: Entry("nansum", "reduce"),
    np.nanmean: Entry("nanmean", "reduce"),
    np.nanprod: Entry("nanprod", "reduce"),
    np.nanmax: Entry("nanmax", "reduce"),
    np.nanmin: Entry("nanmin", "reduce"),
    np.nanvar: Entry("nanvar", "reduce"),
    np.nanstd: Entry("nanstd", "reduce"),
    # along one axis
    np.argmax: Entry("argmax", "axis"),
    np.argmin: Entry("argmin", "axis"),
    np.cumsum: Entry("cumsum", "axis"),
    np.cumprod: Entry("cumprod", "axis"),
    np.sort: Entry("sort", "axis", default_axis=-1),
    np.argsort: Entry("argsort", "axis", default_axis=-1),
    np.diff: Entry("diff", "axis", default_axis=-1),
    # several axes or all
    np.squeeze: Entry("squeeze", "dims"),
    np.flip: Entry("flip", "custom", handler=_flip),
    # sequences of arrays
    np.concatenate: Entry("concat", "seq"),
    np.stack: Entry("stack", "seq"),
    # forwarded as given
    np.where: Entry("where", "custom", handler=_where),
    np.clip: Entry("clip"),
    np.real: Entry("real"),
    np.imag: Entry("imag"),
    np.roll: Entry("roll", "custom", handler=_roll),
    np.tile: Entry("tile", "custom", handler=tile_by_reps),
    np.repeat: Entry("repeat", "custom", handler=_repeat),
    np.broadcast_to: Entry("broadcast_to", "custom", handler=broadcast_to_shape),
    np.nonzero: Entry("nonzero"),
    np.unique: Entry("unique"),
    np.pad: Entry("pad", "custom", handler=_pad),
    np.searchsorted: Entry("searchsorted"),
    # custom adapters
    np.transpose: Entry("transpose", "custom", handler=_transpose),
    np.moveaxis: Entry("moveaxis", "custom", handler=_moveaxis),
    np.swapaxes: Entry("swapaxes", "custom", handler=_swapaxes),
    np.shape: Entry("shape", "custom", handler=_meta("shape")),
    np.ndim: Entry("ndim", "custom", handler=_meta("ndim")),
    np.size: Entry("size", "custom", handler=_meta("size")),
    np.zeros_like: Entry("zeros_like", "custom", handler=_like(0)),
    np.ones_like: Entry("ones_like", "custom", handler=_like(1)),
    np.full_like: Entry("full_like", "custom", handler=_like(None)),
    np.empty_like: Entry("empty_like", "custom", handler=_like(0)),  # (zeros: nothing is left uninitialised)
    np.einsum: Entry("einsum", "custom", handler=einsum_by_letters),
    np.expand_dims: Entry("expand_dims", "custom", handler=_expand_dims),
    np.round: Entry("round", "custom", handler=_round),
    np.around: Entry("round", "custom", handler=_round),
    # refused with the ways to write a distributed array
    **{getattr(np, name): Entry(name, "custom", handler=_refuse_writer) for name in FILE_WRITERS},
}


def array_function(func: Callable[..., Any], types_: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``ShardArray.__array_function__``: the NumPy function as a shardarray op, or NotImplemented (TypeError)."""
    if not all(issubclass(t, (ShardArray, np.ndarray)) for t in types_):
        return NotImplemented
    entry = FUNCTIONS.get(func)
    if entry is None:
        module, name = str(getattr(func, "__module__", "")), str(getattr(func, "__name__", ""))
        space = "linalg" if module.startswith("numpy.linalg") else "fft" if module.startswith("numpy.fft") else ""
        key = f"{space}.{name}" if space else name
        if key in BRIDGED:
            return call_function(func, key, args, kwargs)
        if key in WRITES:
            return call_write(func, key, args, kwargs)
        flat = (a for v in (*args, *kwargs.values()) for a in (v if isinstance(v, (list, tuple)) else (v,)))
        ref = next((a for a in flat if isinstance(a, ShardArray)), None)
        raise refusal(f"np.{key}", name, ref.dims if ref is not None else None, WHY.get(name, ""))
    return _call(entry, func, args, kwargs)
