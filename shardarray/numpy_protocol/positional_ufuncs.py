"""NumPy ufuncs on positional arrays (``shardarray.array_api``): derived from the namespace, NumPy's semantics.

``np.<ufunc>(...)`` calls the namespace's function of the same name, or of the
standard's spelling (``np.arcsin`` -> ``xp.asin``, ``common.UFUNC_ALIASES``),
with NumPy's right-aligned broadcasting and NumPy's dtypes: the operands are
cast to the input dtypes of the loop NumPy picks for them
(``ufunc.resolve_dtypes``), so ``np.sqrt`` of integers is float64 (float16 for
int8), ``np.rint`` of integers float64, ``np.square`` of bools int8; the
``logical_*`` ufuncs read a non-bool operand as ``x != 0``, and ``np.floor``/
``ceil``/``trunc`` of bools return the bools, as NumPy's loops do. Operands are
typed as NEP 50 types them: Python scalars are weak (``int8_array + 2`` stays
int8), NumPy scalars and 0-d NumPy arrays keep their dtype (``int8_array +
np.int64(2)`` is int64): they become 0-d arrays on the array's mesh
(``scalar_operand``). ``out=`` writes into a positional array in place,
``dtype=`` picks the loop as NumPy's ``signature=(None, ..., dtype)`` does
(operands cast under ``same_kind``; one NumPy refuses is a ``DTypeError``).
The methods:

* ``reduce`` of ``add``/``multiply``/``maximum``/``minimum``/``logical_and``/
  ``logical_or`` is ``xp.sum``/``prod``/``max``/``min``/``all``/``any``, of ``fmax``/``fmin``
  ``xp.nanmax``/``nanmin`` (NaN skipped; an all-NaN slice NaN without a warning) (NumPy's
  default ``axis=0``; ``axis=None``, ``keepdims``, ``dtype``, ``initial``, ``out``,
  ``where`` (the left-out entries filled with the reduction's identity, or
  ``initial`` for ``maximum``/``minimum``, which NumPy then asks for); of ``bitwise_and``/``bitwise_or``/
  ``bitwise_xor``/``logical_xor`` ``positional_bits.SEGMENT_REDUCTIONS`` (one ``reduceat`` segment per axis);
  with ``out=`` and no ``dtype=`` in NumPy's loop for ``out``'s dtype and the array's
  (``common.out_loop``: ``np.add.reduce(float32_x, out=float64_out)`` sums in float64; no loop is NumPy's
  TypeError);
  ``initial`` is cast to the result's dtype as NumPy casts it (out of range:
  ``CastError``) and combined with the result by the ufunc, and a ``maximum``/
  ``minimum`` reduction over an empty axis is ``initial``, as in NumPy);
* ``accumulate`` of ``add``/``multiply`` is ``xp.cumulative_sum``/
  ``cumulative_prod``; of ``maximum``/``minimum``/``fmax``/``fmin``, the
  ``logical_*`` and the ``bitwise_*`` ufuncs the running value of
  ``ops.reduction.scan.accumulate`` (NaN, complex order and dtypes as NumPy's
  loops; the running extremes differentiable); ``axis=0`` by default (None for
  1-D), ``dtype`` (the operand cast to it first, as NumPy's loop of that dtype
  reads it; ``logical_*`` compute in bool only), ``out``;
* ``outer(a, b)`` is the ufunc on ``a`` reshaped to ``a.shape + (1,) * b.ndim``
  and ``b`` (the broadcast NumPy defines it by); a Python scalar operand is an
  array of NumPy's default dtype there, as NumPy's ``outer`` makes it
  (``np.add.outer(int32_array, 2)`` is int64).

``__call__`` takes NumPy's ``out=`` (a positional array, or a tuple of one per
output: ``np.divmod(x, 3, out=(q, r))``), ``where=`` with ``out=`` (the other
entries of ``out`` kept; without ``out=`` NumPy leaves them uninitialized: an
``ArgumentError``), ``dtype=`` and ``casting=`` (the rule for the operands'
casts to the loop, for the loop ``dtype=`` picks, and for the write into
``out``).

``ufunc.at`` of every unary and binary ufunc with a counterpart writes into a positional array in
place (``np.add.at``/``np.subtract.at``/``np.maximum.at``/``np.minimum.at`` from ``Array.__array_ufunc__``, the
others from ``ufunc_at`` here; ``np.multiply.at``, ``np.divide.at``, ``np.bitwise_or.at``, ``np.negative.at``,
...): integer-array keys are routed to the owners of the rows, repeated indices combine every time, in key
order where the result depends on it; the ufunc's result must cast back to the array's dtype under
``same_kind``. ``ufunc.reduceat`` of ``add``/``multiply``, the extremes, ``logical_*`` and ``bitwise_*`` is
``ops.reduction.segment.segment_reduce`` (``reduceat`` here: along a split axis one alltoallv of the segments'
partials, no gather). The gufuncs ``np.matmul``,
``np.matvec``, ``np.vecmat`` and ``np.vecdot`` are ``positional_products``'s (bools
too, ``axes=``). A ufunc or method without a counterpart (``np.subtract.reduceat``,
``np.subtract.accumulate``, ``np.divmod.at``, a gufunc's methods)
returns NotImplemented: NumPy raises its TypeError, nothing is gathered. The
collectives are those of the namespace function called.

Example:
    >>> import shardarray.array_api as xp
    >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
    ...     x = xp.asarray([[1.0, 5.0, 3.0], [4.0, 2.0, 6.0]])
    >>> np.asarray(np.maximum.reduce(x, axis=1)), np.asarray(np.add.accumulate(x))[1]
    (array([5., 6.]), array([5., 7., 9.]))
    >>> np.asarray(np.maximum.accumulate(x, axis=1))
    array([[1., 5., 5.],
           [4., 4., 6.]])
    >>> np.asarray(np.add.reduceat(x, [0, 2], axis=1))
    array([[6., 3.],
           [6., 6.]])
"""

from __future__ import annotations

import math
import types
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from ..array import OPS, ShardArray
from ..dtypes import SUPPORTED, is_real_float, scalar_for_write
from ..errors import ArgumentError, BackendError, DimensionError, DTypeError
from ..ops.indexing.id_writes import value_dtype
from ..ops.indexing.writes import check_host_value
from ..ops.reduction.scan import ACCUMULATES, accumulate
from ..ops.reduction.scan import LOGICAL as LOGICAL_SCANS
from ..ops.reduction.segment import REDUCEATS, segment_reduce
from .common import (
    UFUNC_ALIASES,
    UFUNC_REDUCTIONS,
    dtype_loop,
    foreign,
    loop_key,
    mixing_error,
    not_numpys,
    out_loop,
)
from .positional_args import axes_of, host_value, is_neutral, refuse, signature, write_out
from .positional_bits import COMPOSED_UFUNCS, SEGMENT_REDUCTIONS, identity
from .positional_products import GUFUNCS, call_gufunc

#: ufunc.reduce of the NaN-skipping extrema -> the namespace's reduction (their all-NaN slice: NaN, no warning)
NAN_REDUCTIONS: dict[str, str] = {"fmax": "nanmax", "fmin": "nanmin"}
# ufunc.accumulate -> the namespace's scan (ufunc.reduce: common.UFUNC_REDUCTIONS)
ACCUMULATE: dict[str, str] = {"add": "cumulative_sum", "multiply": "cumulative_prod"}
#: ufuncs on truth values: NumPy reads a non-bool operand as ``x != 0``
LOGICAL = frozenset({"logical_and", "logical_or", "logical_xor", "logical_not"})
#: ufuncs whose bool loop returns the operand (``np.floor(b)`` is ``b``), where the namespace's refuse bools
BOOL_IDENTITY = frozenset({"floor", "ceil", "trunc"})


def counterpart(ns: Any, name: str) -> Callable[..., Any] | None:
    """The function ``name`` of the namespace module ``ns`` (one of the package's functions; None if absent)."""
    fn = getattr(ns, name, None) if ns is not None and not name.startswith("_") else None
    if fn is None or isinstance(fn, (type, types.ModuleType)) or not callable(fn):
        return None
    return fn if str(getattr(fn, "__module__", "")).startswith("shardarray") else None


def elementwise(xp: Any, name: str) -> Callable[..., Any] | None:
    """The namespace's function for the ufunc ``name`` (by NumPy's name or the standard's spelling), else its
    composition from the namespace's functions (``positional_bits.COMPOSED_UFUNCS``: ``np.bitwise_count``)."""
    fn = counterpart(xp, name) or (counterpart(xp, UFUNC_ALIASES[name]) if name in UFUNC_ALIASES else None)
    return fn if fn is not None or xp is None else COMPOSED_UFUNCS.get(name)


def _same_kind_result(value: np.dtype, ref: np.dtype) -> bool:
    """Whether ``ref op value`` (NEP 50: a NumPy scalar is strong) casts back to ``ref`` under ``same_kind``, as
    NumPy's in-place operators ask: ``int8 += np.int64(2)`` does, ``int8 |= np.uint64(1)`` (float64) does not."""
    try:
        return bool(np.can_cast(np.result_type(ref, value), ref, "same_kind"))
    except TypeError:  # (no NumPy promotion rule: bfloat16 with some dtypes)
        return bool(np.can_cast(value, ref, "same_kind"))


def scalar_operand(xp: Any, value: Any, ref: ShardArray | None, *, inplace: bool = False) -> Any:
    """A NumPy scalar or 0-d NumPy array operand typed as NEP 50 types it; other values unchanged.

    It keeps its dtype (NEP 50 types NumPy scalars strongly, unlike Python
    scalars): it becomes a 0-d positional array of that dtype on ``ref``'s mesh
    (replicated), so ``int8_array + np.int64(2)`` is int64 and ``float32_array
    + np.float64(2)`` float64, as in NumPy. A dtype the library does not hold
    (``np.longdouble``) stays a Python scalar.

    Args:
        xp: The positional namespace (``shardarray.array_api``).
        value: The operand.
        ref: The array operand it meets (its mesh is the result's); None leaves ``value`` unchanged.
        inplace: For ``x op= value``: a value whose dtype casts to ``ref``'s under
            ``same_kind`` becomes a Python scalar, so the result keeps ``ref``'s
            dtype as NumPy's in-place operators do (``float32_array +=
            np.float64(1)``); any other keeps its dtype, and the in-place
            operator's dtype check refuses the result.

    Returns:
        A 0-d positional array, a Python scalar, or ``value`` itself.
    """
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if ref is None or not isinstance(value, np.generic):
        return value
    if (inplace and _same_kind_result(value.dtype, ref.dtype)) or value.dtype.name not in SUPPORTED:
        return value.item()
    return xp.asarray(value, device=ref.mesh)


def loop_operands(
    xp: Any, ufunc: np.ufunc, args: list[Any], dtype: Any = None, casting: str = "same_kind"
) -> list[Any]:
    """The operands of ``ufunc`` cast to the input dtypes of the loop NumPy picks for them.

    ``ufunc.resolve_dtypes`` picks the loop from the array operands' dtypes
    and the Python scalars' types (weak, NEP 50): ``np.sqrt`` of int64 runs
    the float64 loop, ``np.add`` of int8 and ``2.5`` float64. Python scalars
    are passed on as they are. ``dtype=`` fixes the loop's output dtype as
    NumPy's ``signature=(None, ..., dtype)`` does, under ``same_kind``
    casting of the operands. The ``logical_*`` ufuncs read a non-bool operand
    as ``x != 0``. Without ``dtype``, operands NumPy has no loop for are
    returned unchanged (the namespace's function then raises its own error).

    Args:
        xp: The positional namespace (``shardarray.array_api``).
        ufunc: The NumPy ufunc.
        args: Its operands: positional arrays and Python scalars.
        dtype: NumPy's ``dtype=`` (None: the loop of the operands' dtypes).
        casting: NumPy's ``casting=``: the rule each array operand's cast to the loop's input dtype must follow
            (``"no"``/``"equiv"``/``"safe"`` refuse ``int64 + 1.5``'s cast of the integers; Python scalars are
            weak and exempt, as in NumPy); with ``dtype=``, the rule the loop is picked under.

    Returns:
        The operands, arrays cast where the loop's dtype differs.

    Raises:
        DTypeError: ``dtype`` names a loop NumPy refuses for these operands, or ``casting`` forbids an
            operand's cast (NumPy's TypeError).
    """
    given = args
    if dtype is not None:
        loop = dtype_loop(ufunc, args, dtype, casting)
        args = [xp.astype(a, dt) if isinstance(a, ShardArray) and a.dtype != dt else a for a, dt in zip(args, loop)]
    if ufunc.__name__ in LOGICAL:
        return [xp.not_equal(a, 0) if isinstance(a, ShardArray) and a.dtype != np.bool_ else a for a in args]
    try:
        loop = ufunc.resolve_dtypes((*map(loop_key, args), *(None,) * ufunc.nout))
    except (TypeError, ValueError):
        return args
    if casting not in ("same_kind", "unsafe"):  # (the default loops cast their operands safely)
        for i, (a, dt) in enumerate(zip(given, loop)):
            if isinstance(a, ShardArray) and not np.can_cast(a.dtype, dt, casting):  # type: ignore[arg-type]
                raise DTypeError(
                    f"np.{ufunc.__name__}: cannot cast operand {i} from {a.dtype} to the loop's {dt} under "
                    f"casting={casting!r} (NumPy's UFuncTypeError); cast it first or pass a looser casting="
                )
    cast = [xp.astype(a, dt) if isinstance(a, ShardArray) and a.dtype != dt else a for a, dt in zip(args, loop)]
    return _pinned_scalars(xp, ufunc, cast, loop)


def _pinned_scalars(xp: Any, ufunc: np.ufunc, args: list[Any], loop: tuple[np.dtype, ...]) -> list[Any]:
    """``args`` (cast to ``loop``'s inputs), with each Python scalar made a 0-d array of its input dtype on the
    arrays' mesh where the cast operands would pick another loop: ``np.ldexp(2, bools)`` runs NumPy's float64
    loop (``(int, bool)`` -> ``dd``... ``di->d``), but ``(int, int32)``, once the bools are int32, would pick
    the float16 one (``ei->e``); the scalar as a float64 array keeps NumPy's."""
    ref = next((a for a in args if isinstance(a, ShardArray)), None)
    if ref is None or not any(_python_scalar(a) for a in args):
        return args
    try:
        again = ufunc.resolve_dtypes((*map(loop_key, args), *(None,) * ufunc.nout))
    except (TypeError, ValueError):
        again = None
    if again is not None and tuple(again) == tuple(loop):
        return args
    return [xp.asarray(a, dtype=dt, device=ref.mesh) if _python_scalar(a) else a for a, dt in zip(args, loop)]


def _python_scalar(value: Any) -> bool:
    """Whether ``value`` is a Python bool, int, float or complex (NEP 50's weak scalars)."""
    return isinstance(value, (bool, int, float, complex))


def _broadcast_to_out(xp: Any, result: Any, out: Any) -> Any:
    """The result broadcast to ``out``'s shape, as NumPy's ufuncs broadcast their outputs
    (``np.add(row, 1, out=matrix)`` fills every row); other shapes are left for ``write_out`` to refuse."""
    if isinstance(result, tuple):
        outs = out if isinstance(out, tuple) else (None,) * len(result)
        return tuple(_broadcast_to_out(xp, r, o) for r, o in zip(result, outs))
    o = out[0] if isinstance(out, tuple) and len(out) == 1 else out
    if not isinstance(o, ShardArray) or not isinstance(result, ShardArray) or o.shape == result.shape:
        return result
    try:
        if np.broadcast_shapes(result.shape, o.shape) != o.shape:
            return result
    except ValueError:
        return result
    return xp.broadcast_to(result, o.shape)


def _signature(ufunc: np.ufunc, what: str, sig: Any, dtype: Any) -> tuple[Any, ...] | None:
    """NumPy's ``signature=`` as a tuple of one dtype (or None) per operand and output: a tuple, or a string of
    type codes (``"dd->d"``); None when not given."""
    if sig is None:
        return None
    if dtype is not None:
        raise ArgumentError(f"{what}: give dtype= or signature=, not both (as NumPy)")
    if isinstance(sig, str):
        ins, arrow, outs = sig.partition("->")
        codes = list(ins) + list(outs) if arrow else []
        if len(codes) != ufunc.nin + ufunc.nout:
            raise ArgumentError(f"{what}: signature {sig!r} must name {ufunc.nin} input and {ufunc.nout} output types")
        sig = tuple(codes)
    if not isinstance(sig, (tuple, list)) or len(sig) != ufunc.nin + ufunc.nout:
        raise ArgumentError(
            f"{what}: signature= must be a tuple of {ufunc.nin + ufunc.nout} dtypes (or None) or a string like "
            f"'dd->d'; got {sig!r}"
        )
    try:
        return tuple(None if d is None else np.dtype(d) for d in sig)
    except TypeError:
        raise DTypeError(f"{what}: signature={sig!r} names an unknown dtype") from None


def _signature_operands(
    xp: Any, ufunc: np.ufunc, args: list[Any], sig: tuple[Any, ...], casting: str, what: str
) -> list[Any]:
    """The operands cast to the inputs of the loop NumPy picks for ``signature=sig`` under ``casting``."""
    keys = (*map(loop_key, args), *(None,) * ufunc.nout)
    try:
        loop = ufunc.resolve_dtypes(keys, signature=sig, casting=casting)  # type: ignore[arg-type]
    except (TypeError, ValueError) as e:
        raise DTypeError(f"{what}: signature= does not fit these operands under casting={casting!r}: {e}") from None
    return [xp.astype(a, dt) if isinstance(a, ShardArray) and a.dtype != dt else a for a, dt in zip(args, loop)]


#: NumPy's ``casting=`` values
CASTINGS = ("no", "equiv", "safe", "same_kind", "unsafe")


def _casting(what: str, casting: Any) -> str:
    """NumPy's ``casting=`` checked (an unknown rule is NumPy's ValueError: an ``ArgumentError``)."""
    if casting not in CASTINGS:
        raise ArgumentError(f"{what}: casting must be one of {CASTINGS}; got {casting!r}")
    return str(casting)


def masked_write(xp: Any, out: Any, result: Any, where: Any, what: str, casting: str) -> Any:
    """A ufunc's result written into ``out`` where ``where`` holds (``out`` keeps its values elsewhere), NumPy's
    ``np.add(x, y, out=o, where=mask)``: the result cast to ``out``'s dtype (under ``casting``), then one local
    ``where``, written in place. Without ``out`` NumPy leaves the other entries uninitialized: refused, with
    ``out=`` named.

    Raises:
        ArgumentError: ``where=`` without ``out=``.
    """
    outs = out if isinstance(out, tuple) else (out,)
    if any(o is None for o in outs):
        raise ArgumentError(
            f"{what}: where= without out= leaves the unselected entries uninitialized (NumPy warns so); pass out= "
            f"(a positional array holding the values to keep there), or use xp.where(mask, {what}(...), other)"
        )
    results = result if isinstance(result, tuple) else (result,)
    kept = []
    for o, r in zip(outs, results):
        if isinstance(o, ShardArray) and isinstance(r, ShardArray):
            if not np.can_cast(r.dtype, o.dtype, casting):  # type: ignore[arg-type]
                write_out(o, r, what, casting)  # (its DTypeError names the rule)
            mask = where_mask(xp, where, o, what)
            r = xp.where(mask, r if r.dtype == o.dtype else xp.astype(r, o.dtype), o)
        kept.append(r)
    return write_out(out, tuple(kept) if isinstance(result, tuple) else kept[0], what, casting)


def array_ufunc(xp: Any, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
    """``Array.__array_ufunc__``: the ufunc or method as the namespace's function, or NotImplemented."""
    name = ufunc.__name__
    what = f"np.{name}" if method == "__call__" else f"np.{name}.{method}"
    if foreign(inputs):
        return NotImplemented
    if getattr(np, name, None) is not ufunc:
        raise not_numpys(ufunc, "an Array")
    outs = kwargs.get("out") or ()
    ref = next((a for a in (*inputs, *outs) if isinstance(a, ShardArray)), None)
    if ufunc.signature is not None:  # a gufunc: the products of positional_products, called (no methods)
        if method != "__call__" or name not in GUFUNCS or len(inputs) != 2:
            return NotImplemented
        args = [host_value(what, scalar_operand(xp, a, ref), i, ref) for i, a in enumerate(inputs)]
        args = loop_operands(xp, ufunc, args, kwargs.pop("dtype", None))
        return call_gufunc(xp, ufunc, what, args, kwargs)
    fn = elementwise(xp, name)
    if method in ("__call__", "outer"):
        if fn is None or (method == "outer" and len(inputs) != 2):
            return NotImplemented
        out, dtype = kwargs.pop("out", None), kwargs.pop("dtype", None)
        where, casting = kwargs.pop("where", True), _casting(what, kwargs.pop("casting", "same_kind"))
        if kwargs.get("order") in ("C", "F", "A", "K"):
            kwargs.pop("order")  # (the output's memory order: the same values)
        loop_sig = _signature(ufunc, what, kwargs.pop("signature", None), dtype)
        params = signature(fn).parameters
        extra = {k: v for k, v in kwargs.items() if k in params}
        for key, value in kwargs.items():
            if key not in params and not is_neutral(key, value):
                raise refuse(what, key, value)
        args = [host_value(what, scalar_operand(xp, a, ref), i, ref) for i, a in enumerate(inputs)]
        if method == "outer" and ref is not None:  # NumPy's outer makes arrays of its operands: no weak scalars
            args = [xp.asarray(np.asarray(a), device=ref.mesh) if _python_scalar(a) else a for a in args]
        if loop_sig is not None:
            args = _signature_operands(xp, ufunc, args, loop_sig, casting, what)
            dtype = None
        args = loop_operands(xp, ufunc, args, dtype, casting)
        if name in BOOL_IDENTITY and isinstance(args[0], ShardArray) and args[0].dtype == np.bool_:
            result = xp.astype(args[0], args[0].dtype, copy=True)
        else:
            if method == "outer":
                a, b = args
                if isinstance(a, ShardArray):
                    args[0] = xp.reshape(a, a.shape + (1,) * (b.ndim if isinstance(b, ShardArray) else 0))
            result = fn(*args, **extra)
        result = _broadcast_to_out(xp, result, out)
        if not is_neutral("where", where):
            return masked_write(xp, out, result, where, what, casting)
        return write_out(out, result, what, casting)
    if method == "at":
        return NotImplemented if fn is None else ufunc_at(ufunc, what, inputs, kwargs)
    if method == "reduceat":
        if name not in REDUCEATS or len(inputs) != 2 or not isinstance(inputs[0], ShardArray):
            return NotImplemented
        return reduceat(what, inputs[0], inputs[1], **kwargs)
    if method not in ("reduce", "accumulate") or len(inputs) != 1 or not isinstance(inputs[0], ShardArray):
        return NotImplemented
    table = {**UFUNC_REDUCTIONS, **NAN_REDUCTIONS} if method == "reduce" else ACCUMULATE
    target = counterpart(xp, table[name]) if name in table else None
    if method == "accumulate" and name in ACCUMULATES:
        target = RUNNING[name]
    if method == "reduce" and name in SEGMENT_REDUCTIONS:
        target = SEGMENT_REDUCTIONS[name]
    if target is None:
        return NotImplemented
    return _reduce_or_scan(xp, target, fn, method, inputs[0], what, **kwargs)


def ufunc_at(ufunc: np.ufunc, what: str, inputs: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``np.<ufunc>.at(x, key[, value])`` into the positional array ``x`` in place (``_indexing.ufunc_at``: the
    pairs routed to the rows' owners, applied in key order), for a unary or binary ufunc with one output.

    NumPy's loop must exist for ``x``'s dtype and the value's, and its result must cast back to ``x``'s dtype
    under ``same_kind`` (as ``x op= value`` asks: ``np.divide.at`` of integers is refused, where NumPy truncates
    each quotient): a ``DTypeError`` otherwise; a ufunc the backend's array module lacks (CuPy's ``spacing``) is a
    ``BackendError`` (a TypeError). Returns None, or NotImplemented (NumPy's TypeError) for another
    call (keywords, a gufunc, a second output, a missing or extra operand).
    """
    x = inputs[0]
    if kwargs or not isinstance(x, ShardArray) or ufunc.nout != 1 or len(inputs) != ufunc.nin + 1:
        return NotImplemented
    if ufunc.nin not in (1, 2):
        return NotImplemented
    key, value = inputs[1], (inputs[2] if ufunc.nin == 2 else None)
    if ufunc.nin == 2:
        check_host_value(value, what)  # (a ragged list: a typed error, not NumPy's)
        value = np.asarray(value) if isinstance(value, (list, tuple)) else value
        OPS.positional_at_check(x, value, what)  # (x op= value's same_kind rule, first: its message names it)
    applied = value_dtype(ufunc.__name__, x.dtype)  # (the values' dtype on the devices: x's, ldexp's int64)
    kinds = [(x.dtype,)] if ufunc.nin == 1 else [(x.dtype, _dtype_key(value)), (x.dtype, applied)]
    for i, operands in enumerate(kinds):
        try:
            out = ufunc.resolve_dtypes((*operands, None))[-1]
        except (TypeError, ValueError):
            if i == 1:  # (np.ldexp: NumPy's loop for the values' dtype, not for x's own)
                raise DTypeError(
                    f"{what}: the values are applied in the array's dtype {x.dtype} here, and NumPy's "
                    f"{ufunc.__name__} has no loop for two {x.dtype} operands; compute x[key] = "
                    f"np.{ufunc.__name__}(x[key], values) with unique indices instead"
                ) from None
            raise DTypeError(
                f"{what}: NumPy has no {ufunc.__name__} loop for {' and '.join(map(_type_name, operands))} (the array "
                f"{x.shape} and the values), as NumPy's TypeError says; cast them first"
            ) from None
        if not np.can_cast(out, x.dtype, "same_kind"):
            raise DTypeError(
                f"{what}: the result dtype {out} does not cast back to the array's {x.dtype} under same_kind (as "
                f"x op= v refuses it; NumPy's at truncates every step silently); cast the array to {out} first"
            )
    backend = x.mesh.backend
    if backend.has_data and getattr(backend.xp, ufunc.__name__, None) is None:  # (CuPy has no np.spacing)
        raise BackendError(
            f"{what}: the {backend.name} backend's array module has no {ufunc.__name__} ufunc to apply on the "
            f"devices; compute x[key] = np.{ufunc.__name__}(x[key], ...) with unique indices instead"
        )
    OPS.positional_ufunc_at(x, key, value, ufunc.__name__)
    return None


def _type_name(key: Any) -> str:
    """A dtype, or a Python scalar's type (``float``), as a message names it."""
    return key.__name__ if isinstance(key, type) else str(key)


def _dtype_key(value: Any) -> Any:
    """A ``ufunc.at`` value as ``ufunc.resolve_dtypes`` takes it: a dtype, or a Python scalar's type (weak)."""
    dtype = getattr(value, "dtype", None)
    return np.dtype(dtype) if dtype is not None else loop_key(value)


def reduceat(what: str, x: ShardArray, indices: Any, axis: Any = 0, dtype: Any = None, out: Any = None) -> Any:
    """``np.<op>.reduceat(x, indices, axis=0, dtype=None, out=None)`` of a positional array (``op`` one of
    ``segment.REDUCEATS``): ``ops.reduction.segment.segment_reduce`` along axis ``axis``, NumPy's semantics and
    dtype; ``indices`` a list, a NumPy array or a positional array (read to the host: ``len(indices)`` ints).

    Along a split axis the result's axis (``len(indices)`` long) is split over the same mesh axes, and one
    alltoallv moves the partials of segments a device touches but does not hold (no gather); along an unsplit
    one nothing moves.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     v = xp.asarray([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
        >>> np.asarray(np.add.reduceat(v, [0, 2, 5])), np.asarray(np.maximum.reduceat(v, [4, 1]))
        (array([ 3., 12.,  6.]), array([5., 6.]))

    Raises:
        DTypeError: a 0-d array (NumPy's TypeError), or no loop for the dtype.
        OutOfBoundsError: an index outside ``[0, n)`` (NumPy's IndexError).
    """
    if x.ndim == 0:
        raise DTypeError(f"{what}: cannot reduceat a 0-d array (NumPy's TypeError); reshape it to 1-D first")
    if axis is None or isinstance(axis, (tuple, list)):
        raise refuse(what, "axis", axis)  # (NumPy's reduceat takes one axis)
    k = axes_of(axis, x.ndim, what)[0]
    host = np.asarray(indices.numpy() if isinstance(indices, ShardArray) else indices)
    starts: Any = host  # (segment_reduce refuses what is not 1-D ints, typed)
    if host.dtype.kind in "iu" and host.ndim == 1:
        starts = tuple(int(i) for i in host.tolist())  # (host ints: a job's processes compare them in its headers)
    result = segment_reduce(x, x.dims[k], starts, what.split(".")[1], None if dtype is None else np.dtype(dtype))
    return write_out(out, result, what, "unsafe")


def _running(op: str) -> Callable[..., Any]:
    """The namespace-style target of ``np.<op>.accumulate`` (``scan.ACCUMULATES``): ``target(x, axis=k)``."""

    def target(x: ShardArray, axis: int) -> Any:
        return accumulate(x, x.dims[axis], op)  # (positional in, positional out: the op keeps the kind)

    return target


#: ufunc.accumulate of the other associative ufuncs -> its target (built once: ``signature`` caches by function)
RUNNING: dict[str, Callable[..., Any]] = {op: _running(op) for op in ACCUMULATES}


def where_mask(xp: Any, where: Any, x: ShardArray, what: str) -> ShardArray:
    """NumPy's ``where=`` of a reduction of ``x``: a bool array (or a bool, or a list of bools: host data)
    broadcast to ``x``'s shape on its mesh; a NumPy array is refused (``common.mixing_error``)."""
    if isinstance(where, np.ndarray) and where.ndim == 0:
        where = where[()]
    if isinstance(where, (bool, np.bool_)):
        return xp.full(x.shape, bool(where), dtype=xp.bool, device=x.mesh)
    if isinstance(where, np.ndarray):
        raise mixing_error(what, where, "where", x)
    if isinstance(where, (list, tuple)):
        where = xp.asarray(np.asarray(where), device=x.mesh)
    if not isinstance(where, ShardArray) or where.dtype != np.bool_:
        kind = where.dtype if isinstance(where, ShardArray) else type(where).__name__
        raise DTypeError(f"{what}: where= must be a bool array (as NumPy, which casts it under 'safe'); got {kind}")
    if where.ndim > x.ndim:
        raise DimensionError(f"{what}: where= of shape {where.shape} has more dims than the array {x.shape}")
    return xp.broadcast_to(where, x.shape) if where.shape != x.shape else where


#: ufunc.reduce -> the identity that fills the entries ``where=`` leaves out (maximum/minimum: ``initial``)
WHERE_IDENTITY: dict[str, int] = {"add": 0, "multiply": 1, "logical_or": 0, "logical_and": 1}


def masked_operand(xp: Any, name: str, x: ShardArray, where: Any, initial: Any, what: str) -> ShardArray:
    """``x`` with the entries ``where=`` leaves out replaced by the identity of the ufunc ``name``'s reduction
    (``maximum``/``minimum`` have none: by ``initial``, which NumPy asks for), so the plain reduction is NumPy's
    masked one: a local ``where``, no collective beyond the reduction's."""
    mask = where_mask(xp, where, x, what)
    if name in SEGMENT_REDUCTIONS:
        fill: Any = identity(name, x.dtype if name != "logical_xor" else np.dtype(np.bool_))
    elif name in WHERE_IDENTITY:
        fill = WHERE_IDENTITY[name]
        fill = bool(fill) if x.dtype == np.bool_ else fill
        fill = -0.0 if name == "add" and is_real_float(x.dtype) else fill  # (x + -0.0 is x: -0.0 keeps its sign)
    elif initial is np._NoValue or initial is None:
        raise ArgumentError(
            f"{what}: where= needs initial= here (NumPy's rule: the reduction has no identity to fill the masked "
            f"entries with); pass initial=, e.g. initial=-np.inf for a maximum"
        )
    else:
        fill = scalar_for_write(initial, x.dtype, f"{what}: initial").item()
        fill = _least(x.dtype, name in ("maximum", "fmax"), fill)  # (initial joins after: fn(initial, result))
        fill = math.nan if name in NAN_REDUCTIONS and is_real_float(x.dtype) else fill  # (skipped, as NaN are)
    return xp.where(mask, x, fill)


def _least(dtype: np.dtype, maximum: bool, fill: Any) -> Any:
    """The value that never wins a ``maximum`` (``minimum``: flipped) of real ``dtype``: -inf, the least integer,
    False; so that a left-out entry does not stand in a tie of signed zeros (``initial`` joins the result after, as
    NumPy's loop starts from it). Complex values (lexicographic: no such value) keep ``fill``."""
    if is_real_float(dtype):
        return -math.inf if maximum else math.inf
    if dtype.kind in "iu":
        return int(np.iinfo(dtype).min if maximum else np.iinfo(dtype).max)
    return (not maximum) if dtype.kind == "b" else fill


def _reduce_or_scan(
    xp: Any,
    target: Callable[..., Any],
    fn: Callable[..., Any] | None,
    method: str,
    x: ShardArray,
    what: str,
    axis: Any = 0,
    dtype: Any = None,
    out: Any = None,
    keepdims: bool = False,
    initial: Any = np._NoValue,
    where: Any = True,
) -> Any:
    """``ufunc.reduce`` / ``ufunc.accumulate`` with NumPy's keywords, through the namespace's ``target``.

    NumPy's TypeErrors are ``DTypeError`` here: ``accumulate`` of a 0-d array, and a ``dtype=`` other than bool
    for ``logical_and``/``logical_or`` (they have bool loops only; other reductions cast to any ``dtype=``).
    """
    name = what.split(".")[1]
    if method == "accumulate" and x.ndim == 0:
        raise DTypeError(f"{what}: cannot accumulate on a 0-d array (NumPy's TypeError); reshape it to 1-D first")
    params = signature(target).parameters
    kw: dict[str, Any] = {}
    o = out[0] if isinstance(out, tuple) and len(out) == 1 else out  # (NumPy passes a method's out= as a tuple)
    if dtype is None and isinstance(o, ShardArray):  # (NumPy's loop for out='s dtype and x's: f32 into f64)
        _out_has_loop(getattr(np, name), what, x.dtype, o.dtype)
        if name not in LOGICAL:  # (the logical ufuncs compute in bool, whatever out= is)
            dtype = out_loop(getattr(np, name), x.dtype, o, any_kind=True)
    if dtype is not None:
        if name in LOGICAL_SCANS and method == "accumulate" and np.dtype(dtype) != np.bool_:
            raise DTypeError(
                f"{what}: dtype={np.dtype(dtype)} has no loop: NumPy's {name} computes in bool only; omit dtype="
            )
        if "dtype" in params and not (is_real_float(dtype) and not is_real_float(x.dtype)):
            kw["dtype"] = dtype
        else:  # (before the mask: initial fills it in the loop's dtype, 2.5 stays 2.5; a float loop's -0.0 too)
            x = xp.astype(x, dtype)
    if not is_neutral("where", where):
        if method != "reduce":
            raise refuse(what, "where", where)
        x = masked_operand(xp, name, x, where, initial, what)
    if method == "accumulate":
        if axis is None and x.ndim == 1:
            axis = 0  # NumPy takes None for the one axis of a 1-D array
        if axis is None or isinstance(axis, (tuple, list)):
            raise refuse(what, "axis", axis)  # NumPy's accumulate takes one axis
        if keepdims or initial is not np._NoValue:
            raise refuse(what, "keepdims" if keepdims else "initial", keepdims if keepdims else initial)
        return write_out(out, target(x, axis=axes_of(axis, x.ndim, what)[0], **kw), what, "unsafe")
    zero_d = x.ndim == 0 and isinstance(axis, int) and axis in (0, -1)  # NumPy reduces a 0-d array over axis 0
    axes = () if zero_d else axes_of(axis, x.ndim, what)
    if dtype is not None and name in LOGICAL and np.dtype(dtype) != np.bool_:
        raise DTypeError(
            f"{what}: dtype={np.dtype(dtype)} has no loop: NumPy's {name} computes in bool only; omit dtype="
        )
    given = initial is not np._NoValue and initial is not None
    if given and target in (xp.max, xp.min, xp.nanmax, xp.nanmin) and any(x.shape[k] == 0 for k in axes):
        shape = tuple(1 if k in axes else n for k, n in enumerate(x.shape) if keepdims or k not in axes)
        value = scalar_for_write(initial, x.dtype, f"{what}: initial").item()  # nothing to compare: initial
        return write_out(out, xp.full(shape, value, dtype=x.dtype, device=x.mesh), what, "unsafe")
    with warnings.catch_warnings():
        if name in NAN_REDUCTIONS:  # (np.fmax.reduce of an all-NaN slice is NaN, silently)
            warnings.filterwarnings("ignore", "All-NaN slice", RuntimeWarning)
        result = target(x, axis=axes, keepdims=bool(keepdims), **kw)
    if given:
        if fn is None:  # pragma: no cover - every reduction's ufunc has a counterpart
            return NotImplemented
        # NumPy casts it to the result's dtype, refusing a Python integer out of its range, NaN into integers
        start = scalar_for_write(initial, result.dtype, f"{what}: initial").item()
        result = _with_initial(xp, fn, name, start, x, axes, bool(keepdims), result)
    return write_out(out, result, what, "unsafe")  # (NumPy's reductions cast into out= unsafely)


def _out_has_loop(ufunc: np.ufunc, what: str, x: np.dtype, out: np.dtype) -> None:
    """Raise NumPy's TypeError (a ``DTypeError``) where a reduction or scan of ``x`` values into an ``out=`` of
    dtype ``out`` has no loop: NumPy picks it for the two dtypes (``np.bitwise_or.reduce(ints, out=floats)``)."""
    if "bfloat16" in (x.name, out.name):  # (no NumPy promotion for it: the plain path's own rules)
        return
    try:
        ufunc.resolve_dtypes((out, x, None))
    except (TypeError, ValueError):
        raise DTypeError(
            f"{what}: NumPy has no {ufunc.__name__} loop for out= of dtype {out} and the array's {x} (a reduction "
            f"or scan into out= computes in a loop for both, as NumPy's TypeError says); give dtype= or another out="
        ) from None


def _with_initial(
    xp: Any,
    fn: Callable[..., Any],
    name: str,
    start: Any,
    x: ShardArray,
    axes: tuple[int, ...],
    keep: bool,
    result: Any,
) -> Any:
    """The reduction ``result`` of ``x`` over ``axes`` combined with ``initial=`` (``start``) as NumPy's loop does,
    from ``initial``: ``fn(start, result)``, so that a tie of signed zeros gives NumPy's (``np.max([-0.0],
    initial=0.0)`` is ``-0.0``: its ``maximum`` keeps the later operand of equal ones). A sum from a real
    ``initial=-0.0`` is ``-0.0`` where every entry is ``-0.0`` (the entries ``where=`` leaves out are ``-0.0``
    too: ``masked_operand``), as NumPy's running sum from it, where the sum alone is ``+0.0``."""
    out = fn(start, result)
    if name != "add" or not isinstance(start, float) or start != 0.0 or not math.copysign(1.0, start) < 0:
        return out
    if not (isinstance(result, ShardArray) and is_real_float(result.dtype) and is_real_float(x.dtype)):
        return out
    negative_zero = xp.logical_and(xp.equal(x, 0), xp.signbit(x))
    return xp.where(xp.all(negative_zero, axis=axes, keepdims=keep), -0.0, out)
