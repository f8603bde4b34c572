"""The ``meta`` backend: shards are shapes and dtypes, with no data at all.

A 5-billion-parameter model on a 512-device mesh can be stepped on a laptop:
every op computes only the shape and dtype of its result, and collectives
still log their volumes. ``numpy()`` on a meta array raises ``BackendError``,
and so does a block function the namespace lacks (``MetaNamespace``: the
ufuncs, reductions, shape functions and ``linalg`` factorizations the ops use).
Decisions that depend on the data take their data-free branch on meta (a split
positive-definite matrix is priced by the replicated path: ``linalg.spd``).
"""

from __future__ import annotations

import math
import string
from functools import lru_cache
from typing import Any

import numpy as np

from ..errors import BackendError
from .base import Backend


class NoMetaFunction(BackendError, AttributeError):
    """A block function the meta namespace lacks: a typed ``BackendError`` that is also an ``AttributeError``, so
    that ``hasattr``/``getattr(xp, name, default)`` probes of the namespace keep working."""


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

    def copy(self) -> MetaArray:
        return MetaArray(self.shape, self.dtype)

    @property
    def T(self) -> MetaArray:
        return self.transpose(tuple(reversed(range(self.ndim))))

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

    def __matmul__(self, o: Any) -> MetaArray:
        return META.matmul(self, o)

    def __rmatmul__(self, o: Any) -> MetaArray:
        return META.matmul(o, self)

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


@lru_cache(maxsize=256)
def _linalg_dtypes(name: str, dtype: np.dtype, args: tuple = ()) -> tuple[np.dtype, ...]:
    """The dtypes of ``np.linalg.<name>``'s results for ``dtype`` (of a 1x1 identity: cheap whatever the shapes)."""
    got = getattr(np.linalg, name)(np.eye(1, dtype=dtype), *args)
    return tuple(np.asarray(r).dtype for r in (got if isinstance(got, tuple) else (got,)))


def _complex_of(dtype: np.dtype) -> np.dtype:
    return np.result_type(dtype, np.complex64)


class _MetaLinalg:
    """``xp.linalg`` on shapes: each factorization's results by NumPy's shape rules, their dtypes NumPy's (those of
    a 1x1 probe; ``eig``/``eigvals`` complex, the type the library asks for). Batch dims lead, as NumPy's."""

    @staticmethod
    def _split(a: MetaArray) -> tuple[tuple[int, ...], int, int]:
        *batch, m, n = a.shape
        return tuple(batch), m, n

    def qr(self, a: MetaArray, mode: str = "reduced") -> Any:
        b, m, n = self._split(a)
        (dt,) = _linalg_dtypes("inv", a.dtype)
        k = m if mode == "complete" else min(m, n)
        r = MetaArray((*b, k, n), dt)
        return r if mode == "r" else (MetaArray((*b, m, k), dt), r)

    def svd(self, a: MetaArray, full_matrices: bool = True, compute_uv: bool = True) -> Any:
        b, m, n = self._split(a)
        k = min(m, n)
        (real,) = _linalg_dtypes("svd", a.dtype, (False, False))
        s = MetaArray((*b, k), real)
        if not compute_uv:
            return s
        um, uk, vk, vn = (m, m, n, n) if full_matrices else (m, k, k, n)
        return MetaArray((*b, um, uk), a.dtype), s, MetaArray((*b, vk, vn), a.dtype)

    def svdvals(self, a: MetaArray) -> MetaArray:
        return self.svd(a, compute_uv=False)

    def cholesky(self, a: MetaArray, upper: bool = False) -> MetaArray:
        return MetaArray(a.shape, _linalg_dtypes("cholesky", a.dtype)[0])

    def inv(self, a: MetaArray) -> MetaArray:
        return MetaArray(a.shape, _linalg_dtypes("inv", a.dtype)[0])

    def det(self, a: MetaArray) -> MetaArray:
        return MetaArray(a.shape[:-2], _linalg_dtypes("det", a.dtype)[0])

    def slogdet(self, a: MetaArray) -> tuple[MetaArray, MetaArray]:
        sign, logabs = _linalg_dtypes("slogdet", a.dtype)
        return MetaArray(a.shape[:-2], sign), MetaArray(a.shape[:-2], logabs)

    def solve(self, a: MetaArray, b: Any) -> MetaArray:
        dt = np.result_type(a.dtype, _probe(b).dtype if isinstance(b, MetaArray) else np.asarray(b).dtype)
        (dt,) = _linalg_dtypes("inv", dt)
        bs = _shape(b)
        if len(bs) == 1:
            return MetaArray(bs, dt)
        return MetaArray((*np.broadcast_shapes(a.shape[:-2], bs[:-2]), *bs[-2:]), dt)

    def eigh(self, a: MetaArray, UPLO: str = "L") -> tuple[MetaArray, MetaArray]:
        w, v = _linalg_dtypes("eigh", a.dtype)
        return MetaArray(a.shape[:-1], w), MetaArray(a.shape, v)

    def eigvalsh(self, a: MetaArray, UPLO: str = "L") -> MetaArray:
        return self.eigh(a)[0]

    def eig(self, a: MetaArray) -> tuple[MetaArray, MetaArray]:
        dt = _complex_of(_linalg_dtypes("inv", a.dtype)[0])
        return MetaArray(a.shape[:-1], dt), MetaArray(a.shape, dt)

    def eigvals(self, a: MetaArray) -> MetaArray:
        return self.eig(a)[0]


class _MetaFFT:
    """``xp.fft``'s 1-D transforms on shapes (``n`` outputs along ``axis``; rfft/ihfft ``n // 2 + 1``), in the
    input's precision as ``scipy.fft``/``cupy.fft`` give them."""

    @staticmethod
    def _along(a: MetaArray, axis: int, length: int, dtype: Any) -> MetaArray:
        shape = list(a.shape)
        shape[axis] = length
        return MetaArray(tuple(shape), dtype)

    def _c(self, a: MetaArray, n: int | None, axis: int) -> MetaArray:
        return self._along(a, axis, a.shape[axis] if n is None else n, _complex_of(a.dtype))

    def _r2c(self, a: MetaArray, n: int | None, axis: int) -> MetaArray:
        return self._along(a, axis, (a.shape[axis] if n is None else n) // 2 + 1, _complex_of(a.dtype))

    def _c2r(self, a: MetaArray, n: int | None, axis: int) -> MetaArray:
        real = np.empty(0, _complex_of(a.dtype)).real.dtype
        return self._along(a, axis, 2 * (a.shape[axis] - 1) if n is None else n, real)

    def fft(self, a: MetaArray, n: int | None = None, axis: int = -1, norm: Any = None) -> MetaArray:
        return self._c(a, n, axis)

    ifft = fft

    def rfft(self, a: MetaArray, n: int | None = None, axis: int = -1, norm: Any = None) -> MetaArray:
        return self._r2c(a, n, axis)

    ihfft = rfft

    def irfft(self, a: MetaArray, n: int | None = None, axis: int = -1, norm: Any = None) -> MetaArray:
        return self._c2r(a, n, axis)

    hfft = irfft


class MetaNamespace:
    """The subset of the NumPy namespace the ops use, on shapes and dtypes."""

    linalg = _MetaLinalg()
    fft = _MetaFFT()

    def __getattr__(self, name: str) -> Any:
        ufunc = getattr(np, name, None)
        if not isinstance(ufunc, np.ufunc):
            raise NoMetaFunction(
                f"the meta backend has no function {name!r}: this op cannot run on shapes alone; run it on "
                f"backend='numpy' (or 'cupy') shards to compute it"
            )

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
    def swapaxes(a: MetaArray, axis1: int, axis2: int) -> MetaArray:
        perm = list(range(a.ndim))
        perm[axis1], perm[axis2] = perm[axis2], perm[axis1]
        return a.transpose(perm)

    @staticmethod
    def matmul(a: MetaArray, b: MetaArray) -> MetaArray:
        lead = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        return MetaArray((*lead, a.shape[-2], b.shape[-1]), np.result_type(a.dtype, b.dtype))

    @staticmethod
    def diagonal(a: MetaArray, offset: int = 0, axis1: int = 0, axis2: int = 1) -> MetaArray:
        return MetaArray(np.diagonal(np.empty(a.shape, np.bool_), offset, axis1, axis2).shape, a.dtype)

    @staticmethod
    def real(a: Any) -> Any:
        return MetaArray(a.shape, np.real(_probe(a)).dtype) if isinstance(a, MetaArray) else np.real(a)

    @staticmethod
    def imag(a: Any) -> Any:
        return MetaArray(a.shape, np.imag(_probe(a)).dtype) if isinstance(a, MetaArray) else np.imag(a)

    @staticmethod
    def iscomplexobj(a: Any) -> bool:
        return np.dtype(a.dtype).kind == "c" if isinstance(a, MetaArray) else bool(np.iscomplexobj(a))

    def all(self, a: MetaArray, axis: Any = None, keepdims: bool = False) -> MetaArray:
        return self._reduce(a, axis, keepdims, np.bool_)

    def any(self, a: MetaArray, axis: Any = None, keepdims: bool = False) -> MetaArray:
        return self._reduce(a, axis, keepdims, np.bool_)

    @staticmethod
    def tril(a: MetaArray, k: int = 0) -> MetaArray:
        return a

    triu = tril

    @staticmethod
    def eye(n: int, m: int | None = None, k: int = 0, dtype: Any = float) -> MetaArray:
        return MetaArray((n, n if m is None else m), dtype)

    @staticmethod
    def arange(*args: Any, dtype: Any = None) -> MetaArray:
        probe = np.arange(*args, dtype=dtype) if len(args) and all(np.ndim(a) == 0 for a in args) else None
        return MetaArray(probe.shape if probe is not None else (0,), probe.dtype if probe is not None else dtype)

    @staticmethod
    def stack(arrays: Any, axis: int = 0) -> MetaArray:
        arrays = list(arrays)
        shape = list(arrays[0].shape)
        shape.insert(axis if axis >= 0 else len(shape) + 1 + axis, len(arrays))
        return MetaArray(tuple(shape), np.result_type(*(a.dtype for a in arrays)))

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
