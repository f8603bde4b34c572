"""NumPy's ``ndarray`` methods for positional arrays: ``x.argmax(axis=1)``, ``x.max(axis=0, keepdims=True)``, ...

Each method is the NumPy function of the same name applied to the array
(``x.argmax(axis=1)`` is ``np.argmax(x, axis=1)``), so it dispatches through
``positional_functions`` with NumPy's semantics and the namespace's
distributed algorithms; ``shardarray.array_api.Array`` takes them as its
methods. A dim name where NumPy takes an axis (``x.sum("dim0")``, or the named
API's ``dims=``) is accepted too, for code written against named arrays.
NumPy's in-place methods (``x.sort()``, ``x.partition(kth)``, ``x.fill(v)``) write into the array
(``x[...] = ...``), as NumPy does; ``x.tolist()`` is an explicit gather, as
``np.asarray(x)`` is. ``x.astype(dtype, casting=...)`` refuses a cast the rule
forbids with ``sa.DTypeError`` (NumPy's TypeError).

Example:
    >>> import shardarray.array_api as xp
    >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
    ...     x = xp.asarray([[1.0, 5.0, 3.0], [4.0, 2.0, 6.0]])
    >>> x.argmax(axis=1).tolist(), x.max(axis=1, keepdims=True).shape, x.reshape(3, 2).shape
    ([1, 2], (2, 1), (3, 2))
    >>> x.sort(axis=1); x.tolist()
    [[1.0, 3.0, 5.0], [2.0, 4.0, 6.0]]
"""

from __future__ import annotations

import inspect
import operator
from collections.abc import Callable
from typing import Any, cast

import numpy as np

from ..array import ShardArray
from ..dtypes import as_dtype
from ..errors import ArgumentError, DimensionError, DTypeError
from ..ops.indexing.writes import rebind
from .positional_args import refuse, signature

#: NumPy ndarray methods that are the NumPy function of the same name applied to the array
FUNCTION_METHODS: tuple[str, ...] = (
    *("argmax", "argmin", "max", "min", "sum", "mean", "prod", "std", "var", "all", "any", "cumsum", "cumprod"),
    *("clip", "round", "repeat", "take", "nonzero", "searchsorted", "diagonal", "trace", "swapaxes", "argsort"),
    *("dot", "ravel", "squeeze", "copy", "conj", "conjugate", "choose", "argpartition"),
)

#: methods that return the array itself for a real dtype, as NumPy's do
REAL_IDENTITY = frozenset({"conj", "conjugate"})


def _axis(x: ShardArray, value: Any) -> Any:
    """An ``axis`` value with dim names (the named API's spelling) turned into positions."""
    if isinstance(value, str):
        if value not in x.dims:
            raise DimensionError(f"{value!r} is not a dim of the array; its dims are {x.dims}")
        return x.dims.index(value)
    if isinstance(value, (tuple, list)) and any(isinstance(v, str) for v in value):
        return tuple(_axis(x, v) for v in value)
    return value


def numpy_method(name: str) -> Callable[..., Any]:
    """``x.<name>(*args, **kwargs)`` as ``np.<name>(x, *args, **kwargs)`` (dim names accepted as axes)."""
    func = getattr(np, name)
    params = list(signature(func).parameters)
    at = params.index("axis") - 1 if "axis" in params else None

    def method(self: ShardArray, *args: Any, **kwargs: Any) -> Any:
        if name in REAL_IDENTITY and np.dtype(self.dtype).kind != "c" and not args and not kwargs:
            return self  # NumPy's x.conj() of a real array is x itself (np.conj of bools would be int8)
        if "dims" in kwargs and "axis" not in kwargs:
            kwargs["axis"] = kwargs.pop("dims")
        if at is not None and len(args) > at:
            args = (*args[:at], _axis(self, args[at]), *args[at + 1 :])
        elif "axis" in kwargs:
            kwargs["axis"] = _axis(self, kwargs["axis"])
        return func(self, *args, **kwargs)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = (
        f"NumPy's ``ndarray.{name}``: ``np.{name}(x, ...)`` with NumPy's semantics on the positional array "
        f"(see ``shardarray.numpy_protocol``); a dim name is accepted where NumPy takes an axis."
    )
    try:
        sig = signature(func)
        first, *rest = sig.parameters.values()
        method.__signature__ = sig.replace(  # type: ignore[attr-defined]
            parameters=[first.replace(name="self"), *rest], return_annotation=inspect.Signature.empty
        )
    except (TypeError, ValueError):  # pragma: no cover - NumPy's functions have signatures
        pass
    return method


def reshape(self: ShardArray, *shape: Any, order: str = "C", copy: bool | None = None) -> Any:
    """NumPy's ``x.reshape(2, 3)`` or ``x.reshape((2, 3))`` (``np.reshape``: a distributed reshape); ``order="F"``
    reshapes in Fortran order and ``"A"`` as ``"C"``, as ``np.reshape`` does (``positional_select``)."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    return np.reshape(self, tuple(operator.index(n) for n in shape), order=order, copy=copy)  # type: ignore[call-overload]


def astype(
    self: ShardArray, dtype: Any, order: str = "K", casting: str = "unsafe", subok: bool = True, copy: bool = True
) -> Any:
    """NumPy's ``x.astype(dtype)``: a cast copy (``copy=False`` returns the array itself when the dtype matches);
    a cast that ``casting`` forbids (``"safe"``, ``"same_kind"``, ...) raises ``DTypeError``, as NumPy's TypeError.
    ``order`` is NumPy's memory order of the copy, which a distributed array does not have: any of NumPy's values
    (``"K"``, ``"C"``, ``"A"``, ``"F"``) gives the same values, as in NumPy."""
    if order not in ("K", "C", "A", "F"):
        raise refuse("x.astype", "order", order)
    dtype = as_dtype(dtype)  # (a name NumPy does not know: sa's DTypeError)
    if not np.can_cast(self.dtype, dtype, casting):  # type: ignore[arg-type]
        raise DTypeError(
            f"x.astype: cannot cast {self.dtype} to {np.dtype(dtype)} under casting={casting!r}; "
            f"pass casting='unsafe' (the default) to cast anyway"
        )
    return np.astype(self, dtype, copy=copy)  # type: ignore[call-overload]


def flatten(self: ShardArray, order: str = "C") -> Any:
    """NumPy's ``x.flatten()``: the array as 1-D (a new array, as ``np.ravel``)."""
    return np.ravel(self, order=order)  # type: ignore[call-overload]


def transpose(self: ShardArray, *axes: Any) -> Any:
    """NumPy's ``x.transpose()``, ``x.transpose(1, 0)`` or ``x.transpose((1, 0))``; dim names (the named
    API's ``x.transpose("io", "batch")``) reorder by name."""
    if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
        axes = tuple(axes[0])
    if axes and all(isinstance(a, str) for a in axes):
        return ShardArray.transpose(self, *axes)
    return np.transpose(self, tuple(_axis(self, a) for a in axes) if axes else None)


def sort(self: ShardArray, axis: Any = -1, kind: Any = None, order: Any = None, *, stable: Any = None) -> None:
    """NumPy's ``x.sort(axis=-1)``: sorts in place (the sorted array written into ``x``) along one axis.

    ``axis=None`` raises ``DTypeError`` (a TypeError), as NumPy's ``ndarray.sort`` does: an in-place sort
    keeps the array's shape, so it cannot sort the flattened array; ``np.sort(x, axis=None)`` returns that.
    """
    if axis is None:
        raise DTypeError(
            "x.sort: axis=None is not an axis (NumPy's ndarray.sort sorts in place along one axis and raises "
            "TypeError for None); sort the flattened array with np.sort(x, axis=None), which returns a new 1-D array"
        )
    self[...] = np.sort(self, axis=_axis(self, axis), kind=kind, order=order, stable=stable)


def partition(self: ShardArray, kth: Any, axis: Any = -1, kind: str = "introselect", order: Any = None) -> None:
    """NumPy's ``x.partition(kth, axis=-1)``: partitions in place (``np.partition``'s result written into ``x``),
    as ``x.sort()`` sorts in place. ``axis=None`` raises ``DTypeError`` (a TypeError), as NumPy's method does:
    the in-place partition keeps the array's shape; ``np.partition(x, kth, axis=None)`` returns the 1-D one."""
    if axis is None:
        raise DTypeError(
            "x.partition: axis=None is not an axis (NumPy's ndarray.partition works in place along one axis and "
            "raises TypeError for None); partition the flattened array with np.partition(x, kth, axis=None)"
        )
    self[...] = np.partition(self, kth, axis=_axis(self, axis), kind=kind, order=order)  # type: ignore[call-overload]


def compress(self: ShardArray, condition: Any, axis: Any = None, out: Any = None) -> Any:
    """NumPy's ``x.compress(condition, axis=None, out=None)``: ``np.compress(condition, x, axis, out)`` (the
    method takes the condition first and the array as ``self``; ``axis=None`` selects from the flattened array)."""
    return np.compress(condition, self, axis=_axis(self, axis), out=out)


def resize(self: ShardArray, *new_shape: Any, refcheck: bool = True) -> None:
    """NumPy's ``x.resize(new_shape)``: ``x`` itself takes ``new_shape``, its values in C order cut to the new size
    or followed by zeros (``np.reshape(x, -1)``, ``np.concatenate`` with zeros, ``np.reshape``: their collectives),
    rebound in place (``ops.indexing.writes.rebind``). ``refcheck`` is accepted and has nothing to check: no array
    here is a view of another, so no other array refers to ``x``'s blocks (NumPy's check refuses a resize of an
    array a view refers to).

    Raises:
        ArgumentError: a negative size. DTypeError: a size that is not an integer.
    """
    shape = new_shape[0] if len(new_shape) == 1 and not isinstance(new_shape[0], (int, np.integer)) else new_shape
    try:
        dims = tuple(operator.index(n) for n in (shape if isinstance(shape, (tuple, list)) else (shape,)))
    except TypeError:
        raise DTypeError(f"x.resize: the new shape must be integers; got {shape!r:.80}") from None
    if any(n < 0 for n in dims):
        raise ArgumentError(f"x.resize: negative dimensions are not allowed; got {dims}")
    size = int(np.prod(dims, dtype=np.int64))
    flat = np.reshape(self, (-1,))
    if size > self.size:
        flat = np.concatenate([flat, np.zeros(size - self.size, dtype=self.dtype, like=self)])
    elif size < self.size:
        flat = flat[:size]
    rebind(self, cast(ShardArray, np.reshape(flat, dims)), "x.resize(...)")


def set_shape(self: ShardArray, shape: Any) -> None:
    """NumPy's ``x.shape = s``: ``x`` reshaped in place, ``np.reshape(x, s)`` (one ``-1`` allowed; its collectives)
    rebound into ``x`` (``ops.indexing.writes.rebind``, as ``x.resize``). NumPy refuses it where the reshape would
    need a copy; here no array is a view, so it never does."""
    rebind(self, cast(ShardArray, np.reshape(self, shape)), "x.shape = ...")


def fill(self: ShardArray, value: Any) -> None:
    """NumPy's ``x.fill(value)``: every element set to ``value``, in place."""
    self[...] = value


def tolist(self: ShardArray) -> Any:
    """NumPy's ``x.tolist()``: nested Python lists of the values (an explicit gather, as ``np.asarray(x)``)."""
    return self.numpy().tolist()


def real(self: ShardArray) -> Any:
    """NumPy's ``x.real``: the real part (the array itself for a real dtype, as NumPy's view)."""
    return np.real(self) if np.dtype(self.dtype).kind == "c" else self


def imag(self: ShardArray) -> Any:
    """NumPy's ``x.imag``: the imaginary part (zeros of the array's dtype for a real dtype)."""
    return np.imag(self) if np.dtype(self.dtype).kind == "c" else np.zeros_like(self)
