"""The ``meta`` backend: shards are shapes and dtypes, with no data at all.

A 5-billion-parameter model on a 512-device mesh can be stepped on a laptop:
every op computes only the shape and dtype of its result, and collectives
still log their volumes. ``numpy()`` on a meta array raises ``BackendError``.
"""

from __future__ import annotations

import math
import string
from functools import lru_cache
from typing import Any

import numpy as np

from ..errors import BackendError
from .base import Backend


class MetaArray:
    """A shape and a dtype standing in for a shard."""

    __slots__ = ("dtype", "shape")
    __array_priority__ = 1000

    def __init__(self, shape: tuple[int, ...], dtype: Any) -> None:
        self.shape = tuple(int(s) for s in shape)
        self.dtype = np.dtype(dtype)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    def astype(self, dtype: Any, copy: bool = True) -> MetaArray:
        return MetaArray(self.shape, dtype)

    def reshape(self, *shape: Any) -> MetaArray:
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return MetaArray(np.empty(self.shape, dtype=np.bool_).reshape(shape).shape, self.dtype)

    def transpose(self, *perm: Any) -> MetaArray:
        if len(perm) == 1 and isinstance(perm[0], (tuple, list)):
            perm = tuple(perm[0])
        return MetaArray(tuple(self.shape[p] for p in perm), self.dtype)

    def __getitem__(self, index: Any) -> MetaArray:
        probe = np.lib.stride_tricks.as_strided(np.zeros(1, np.bool_), self.shape, (0,) * self.ndim)
        return MetaArray(probe[index].shape, self.dtype)

    def __repr__(self) -> str:
        return f"MetaArray(shape={self.shape}, dtype={self.dtype})"

    def __array__(self, *args: Any, **kwargs: Any) -> np.ndarray:
        raise BackendError("a meta shard has no values; build the mesh with backend='numpy' or 'cupy' to compute them")

    # arithmetic defers to the namespace
    def __add__(self, o: Any) -> MetaArray:
        return META.add(self, o)

    def __radd__(self, o: Any) -> MetaArray:
        return META.add(o, self)

    def __sub__(self, o: Any) -> MetaArray:
        return META.subtract(self, o)

    def __rsub__(self, o: Any) -> MetaArray:
        return META.subtract(o, self)

    def __mul__(self, o: Any) -> MetaArray:
        return META.multiply(self, o)

    def __rmul__(self, o: Any) -> MetaArray:
        return META.multiply(o, self)

    def __truediv__(self, o: Any) -> MetaArray:
        return META.true_divide(self, o)

    def __rtruediv__(self, o: Any) -> MetaArray:
        return META.true_divide(o, self)

    def __pow__(self, o: Any) -> MetaArray:
        return META.power(self, o)

    def __rpow__(self, o: Any) -> MetaArray:
        return META.power(o, self)

    def __neg__(self) -> MetaArray:
        return META.negative(self)

    def __gt__(self, o: Any) -> MetaArray:
        return META.greater(self, o)

    def __ge__(self, o: Any) -> MetaArray:
        return META.greater_equal(self, o)

    def __lt__(self, o: Any) -> MetaArray:
        return META.less(self, o)

    def __le__(self, o: Any) -> MetaArray:
        return META.less_equal(self, o)

    def __and__(self, o: Any) -> MetaArray:
        return META.bitwise_and(self, o)

    def __rand__(self, o: Any) -> MetaArray:
        return META.bitwise_and(o, self)

    def __or__(self, o: Any) -> MetaArray:
        return META.bitwise_or(self, o)

    def __ror__(self, o: Any) -> MetaArray:
        return META.bitwise_or(o, self)

    def __invert__(self) -> MetaArray:
        return META.invert(self)

    def __setitem__(self, key: Any, value: Any) -> None:
        """A write into a block (``block[idx] = v``): nothing changes in a shape."""


def _probe(x: Any) -> Any:
    """A zero-size NumPy stand-in with the same dtype (Python scalars stay as they are)."""
    if isinstance(x, MetaArray):
        return np.empty(0, x.dtype)
    return x


def _shape(x: Any) -> tuple[int, ...]:
    return x.shape if isinstance(x, MetaArray) else np.shape(x)


def _axes(axis: Any, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, int):
        axis = (axis,)
    return tuple(a % ndim for a in axis)


class MetaNamespace:
    """The subset of the NumPy namespace the ops use, on shapes and dtypes."""

    def __getattr__(self, name: str) -> Any:
        ufunc = getattr(np, name, None)
        if not isinstance(ufunc, np.ufunc):
            raise AttributeError(f"the meta backend has no function {name!r}")

        def apply(*args: Any, **kwargs: Any) -> MetaArray:
            shape = np.broadcast_shapes(*(_shape(a) for a in args))
            dtype = ufunc(*(_probe(a) for a in args)).dtype
            return MetaArray(shape, dtype)

        apply.__name__ = name
        return apply

    @staticmethod
    def where(cond: Any, x: Any, y: Any) -> MetaArray:
        shape = np.broadcast_shapes(_shape(cond), _shape(x), _shape(y))
        return MetaArray(shape, np.where(True, _probe(x), _probe(y)).dtype)

    @staticmethod
    def _reduce(a: MetaArray, axis: Any, keepdims: bool, dtype: Any) -> MetaArray:
        axes = _axes(axis, a.ndim)
        shape = tuple(1 if i in axes else s for i, s in enumerate(a.shape) if keepdims or i not in axes)
        return MetaArray(shape, dtype)

    def sum(self, a: MetaArray, axis: Any = None, keepdims: bool = False, dtype: Any = None) -> MetaArray:
        return self._reduce(a, axis, keepdims, dtype or np.sum(_probe(a)).dtype)

    def max(self, a: MetaArray, axis: Any = None, keepdims: bool = False, initial: Any = None) -> MetaArray:
        return self._reduce(a, axis, keepdims, a.dtype)

    def min(self, a: MetaArray, axis: Any = None, keepdims: bool = False, initial: Any = None) -> MetaArray:
        return self._reduce(a, axis, keepdims, a.dtype)

    @staticmethod
    def _scan(a: MetaArray, axis: Any, dtype: Any, probe: Any) -> MetaArray:
        shape = (math.prod(a.shape),) if axis is None else a.shape
        return MetaArray(shape, dtype if dtype is not None else probe(np.empty(0, a.dtype)).dtype)

    def cumsum(self, a: MetaArray, axis: Any = None, dtype: Any = None) -> MetaArray:
        return self._scan(a, axis, dtype, np.cumsum)

    def cumprod(self, a: MetaArray, axis: Any = None, dtype: Any = None) -> MetaArray:
        return self._scan(a, axis, dtype, np.cumprod)

    @staticmethod
    def zeros_like(a: MetaArray, dtype: Any = None) -> MetaArray:
        return MetaArray(a.shape, a.dtype if dtype is None else dtype)

    ones_like = zeros_like
    empty_like = zeros_like

    @staticmethod
    def put_along_axis(a: MetaArray, indices: Any, values: Any, axis: int) -> None:
        """In place, as NumPy's: nothing changes in a shape."""

    @staticmethod
    def transpose(a: MetaArray, axes: Any = None) -> MetaArray:
        return a.transpose(tuple(reversed(range(a.ndim))) if axes is None else axes)

    @staticmethod
    def reshape(a: MetaArray, shape: Any) -> MetaArray:
        return a.reshape(shape)

    @staticmethod
    def expand_dims(a: MetaArray, axis: Any) -> MetaArray:
        axes = _axes(axis, a.ndim + (1 if isinstance(axis, int) else len(axis)))
        it = iter(a.shape)
        return MetaArray(tuple(1 if i in axes else next(it) for i in range(a.ndim + len(axes))), a.dtype)

    @staticmethod
    def broadcast_to(a: MetaArray, shape: Any) -> MetaArray:
        return MetaArray(tuple(shape), a.dtype)

    @staticmethod
    def concatenate(arrays: Any, axis: int = 0) -> MetaArray:
        arrays = list(arrays)
        shape = list(arrays[0].shape)
        shape[axis] = sum(a.shape[axis] for a in arrays)
        return MetaArray(tuple(shape), np.result_type(*(a.dtype for a in arrays)))

    @staticmethod
    def zeros(shape: Any, dtype: Any = float) -> MetaArray:
        return MetaArray(tuple(shape), dtype)

    ones = zeros
    empty = zeros

    @staticmethod
    def full(shape: Any, fill_value: Any, dtype: Any = None) -> MetaArray:
        return MetaArray(tuple(shape), dtype if dtype is not None else np.asarray(fill_value).dtype)

    @staticmethod
    def ascontiguousarray(a: MetaArray, dtype: Any = None) -> MetaArray:
        return a if dtype is None else a.astype(dtype)

    @staticmethod
    def asarray(a: Any, dtype: Any = None) -> MetaArray:
        if isinstance(a, MetaArray):
            return a if dtype is None else a.astype(dtype)
        a = np.asarray(a)
        return MetaArray(a.shape, dtype or a.dtype)


META = MetaNamespace()


@lru_cache(maxsize=4096)
def _einsum_shape(equation: str, shapes: tuple[tuple[int, ...], ...]) -> tuple[int, ...]:
    lhs, out = equation.split("->")
    size: dict[str, int] = {}
    for term, shape in zip(lhs.split(","), shapes):
        for c, n in zip(term, shape):
            size[c] = n
    return tuple(size[c] for c in out if c in string.ascii_letters)


class MetaBackend(Backend):
    name = "meta"
    xp = META
    has_data = False

    def from_numpy(self, array: np.ndarray) -> MetaArray:
        return MetaArray(array.shape, array.dtype)

    def to_numpy(self, array: Any) -> np.ndarray:
        raise BackendError(
            "arrays on the 'meta' backend hold shapes only; numpy() needs data: "
            "build the mesh with backend='numpy' (or 'cupy') to compute values"
        )

    def take_rows(self, table: Any, ids: Any) -> MetaArray:
        return MetaArray((table.shape[0], ids.shape[1], table.shape[2]), table.dtype)

    def scatter_rows(self, ids: Any, values: Any, n: int) -> MetaArray:
        return MetaArray((values.shape[0], n, values.shape[2]), values.dtype)

    def einsum(self, equation: str, *arrays: Any) -> MetaArray:
        shape = _einsum_shape(equation, tuple(a.shape for a in arrays))
        return MetaArray(shape, np.result_type(*(a.dtype for a in arrays)))
