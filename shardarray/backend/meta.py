"""The ``meta`` backend: shards are shapes and dtypes, with no data at all.

A 5-billion-parameter model on a 512-device mesh can be stepped on a laptop:
every op computes only the shape and dtype of its result, and collectives
still log their volumes. ``numpy()`` on a meta array raises ``BackendError``,
and so does a block function the namespace lacks (``MetaNamespace``: the
ufuncs, reductions, shape functions and ``linalg`` factorizations the ops use).
A meta block follows NumPy's shape rules (indexing, reshape, ``matmul``,
comparisons elementwise) without allocating an array of its size; a value of
it (``bool``, ``float``, a boolean mask's count) raises ``BackendError``
naming the op the user called, never a guess.
Decisions that depend on the data take their data-free branch on meta (a split
positive-definite matrix is priced by the replicated path: ``linalg.spd``); a
check of the input read to the host (``truth``) is skipped after the
collectives that compute it, which are logged as on real shards.
"""

from __future__ import annotations

import math
import os
import string
import sys
from functools import lru_cache
from typing import Any

import numpy as np

from ..dtypes import promote
from ..errors import BackendError
from .base import Backend

#: the package's folder (frames of files under it are the library's own) and the names of its wrappers' frames
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_WRAPPERS = frozenset({
    "wrapper", "first", "named", "inner", "<lambda>", "<listcomp>", "<genexpr>", "<dictcomp>", "__call__",
    "__array_function__", "__array_ufunc__",
})  # fmt: skip


def _called() -> str:
    """The library function the user called, as ``name (file under shardarray/)``: the outermost library frame
    (not a decorator's wrapper) below the user's code; ``""`` when there is none. Names the op in the meta
    backend's "needs values" errors, which are raised deep inside it."""
    frame, found = sys._getframe(1), ""
    while frame is not None:
        path = frame.f_code.co_filename
        if not path.startswith(_PACKAGE):
            if found:
                break
        elif frame.f_code.co_name not in _WRAPPERS:
            found = f"{frame.f_code.co_name} (shardarray/{path[len(_PACKAGE) :]})"
        frame = frame.f_back  # type: ignore[assignment]
    return found


def _needs_values(what: str) -> BackendError:
    """The error of a meta shard asked for values: it names the op the user called."""
    op = _called()
    return BackendError(
        f"{op + ': ' if op else ''}{what}, but the meta backend holds shapes and dtypes only (the result depends on "
        f"the data); run it on a mesh with backend='numpy' (or 'cupy')"
    )


def truth(flag: Any, assumed: bool) -> bool:
    """``bool(flag)`` of a 0-d array (a check of the input, a branch on the data); ``assumed`` on a mesh without
    data (``backend="meta"``).

    The collectives that computed ``flag`` have run, and are logged, on every backend; only the host read is
    skipped on meta, which takes the branch of ``assumed``: the one valid input takes (no error raised), or the
    branch the caller documents as the planner's model (e.g. increasing bins, full rank). The result's shapes
    never depend on it, or the caller says so.

    Example:
        >>> m = sa.Mesh({"row": 2}, backend="meta")
        >>> truth(sa.any(sa.zeros(m, {"i": 4}, dtype="bool"), "i"), False)
        False
    """
    mesh = getattr(flag, "mesh", None)
    if mesh is not None and not mesh.backend.has_data:
        return assumed
    return bool(flag)


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

    def reshape(self, *shape: Any, **kwargs: Any) -> MetaArray:
        if "shape" in kwargs:
            shape = (kwargs.pop("shape"),)
        if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
            shape = tuple(shape[0])
        return MetaArray(_reshaped(self.shape, shape), self.dtype)

    def transpose(self, *perm: Any) -> MetaArray:
        if len(perm) == 1 and isinstance(perm[0], (tuple, list)):
            perm = tuple(perm[0])
        return MetaArray(tuple(self.shape[p] for p in perm), self.dtype)

    def __getitem__(self, index: Any) -> MetaArray:
        return MetaArray(_indexed(self.shape, index), self.dtype)

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object (a 0-d meta shard)")
        return self.shape[0]

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def mT(self) -> MetaArray:
        return META.swapaxes(self, -1, -2)

    @property
    def real(self) -> MetaArray:
        return META.real(self)

    @property
    def imag(self) -> MetaArray:
        return META.imag(self)

    def conj(self) -> MetaArray:
        return META.conjugate(self)

    conjugate = conj

    def ravel(self) -> MetaArray:
        return MetaArray((self.size,), self.dtype)

    flatten = ravel

    def squeeze(self, axis: Any = None) -> MetaArray:
        return META.squeeze(self, axis)

    def sum(self, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> MetaArray:
        return META.sum(self, axis=axis, keepdims=keepdims, dtype=dtype)

    def max(self, axis: Any = None, keepdims: bool = False) -> MetaArray:
        return META.max(self, axis=axis, keepdims=keepdims)

    def min(self, axis: Any = None, keepdims: bool = False) -> MetaArray:
        return META.min(self, axis=axis, keepdims=keepdims)

    def any(self, axis: Any = None, keepdims: bool = False) -> MetaArray:
        return META.any(self, axis=axis, keepdims=keepdims)

    def all(self, axis: Any = None, keepdims: bool = False) -> MetaArray:
        return META.all(self, axis=axis, keepdims=keepdims)

    def _no_value(self, what: str) -> Any:
        raise _needs_values(f"{what} of a meta shard {self.shape} {self.dtype} is asked for")

    def __bool__(self) -> bool:
        return bool(self._no_value("the truth value"))

    def __float__(self) -> float:
        return float(self._no_value("float()"))

    def __int__(self) -> int:
        return int(self._no_value("int()"))

    def __complex__(self) -> complex:
        return complex(self._no_value("complex()"))

    def __index__(self) -> int:
        return int(self._no_value("an index"))

    def item(self, *args: Any) -> Any:
        return self._no_value("item()")

    def tolist(self) -> Any:
        return self._no_value("tolist()")

    def __repr__(self) -> str:
        return f"MetaArray(shape={self.shape}, dtype={self.dtype})"

    def __array__(self, *args: Any, **kwargs: Any) -> np.ndarray:
        raise _needs_values(f"a meta shard {self.shape} {self.dtype} is converted to a NumPy array")

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

    def __xor__(self, o: Any) -> MetaArray:
        return META.bitwise_xor(self, o)

    def __rxor__(self, o: Any) -> MetaArray:
        return META.bitwise_xor(o, self)

    def __lshift__(self, o: Any) -> MetaArray:
        return META.left_shift(self, o)

    def __rlshift__(self, o: Any) -> MetaArray:
        return META.left_shift(o, self)

    def __rshift__(self, o: Any) -> MetaArray:
        return META.right_shift(self, o)

    def __rrshift__(self, o: Any) -> MetaArray:
        return META.right_shift(o, self)

    def __floordiv__(self, o: Any) -> MetaArray:
        return META.floor_divide(self, o)

    def __rfloordiv__(self, o: Any) -> MetaArray:
        return META.floor_divide(o, self)

    def __mod__(self, o: Any) -> MetaArray:
        return META.remainder(self, o)

    def __rmod__(self, o: Any) -> MetaArray:
        return META.remainder(o, self)

    def __abs__(self) -> MetaArray:
        return META.absolute(self)

    def __pos__(self) -> MetaArray:
        return META.positive(self)

    # elementwise, as NumPy's (a Python bool from ``==`` would silently take one branch); identity hash kept
    def __eq__(self, o: Any) -> MetaArray:  # type: ignore[override]
        return META.equal(self, o)

    def __ne__(self, o: Any) -> MetaArray:  # type: ignore[override]
        return META.not_equal(self, o)

    __hash__ = object.__hash__

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


def _as_shape(shape: Any) -> tuple[int, ...]:
    """A shape argument as NumPy reads it: an int is a 1-D shape."""
    return (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(n) for n in shape)


def _dtype_of(x: Any) -> np.dtype:
    return x.dtype if isinstance(x, MetaArray) else np.asarray(x).dtype


def _view(shape: tuple[int, ...]) -> np.ndarray:
    """A bool array of ``shape`` that holds one byte (every stride 0): indexing and transposing it are views, so
    the shapes of huge blocks come out without allocating them."""
    return np.lib.stride_tricks.as_strided(np.zeros(1, np.bool_), shape, (0,) * len(shape))


def _reshaped(shape: tuple[int, ...], new: Any) -> tuple[int, ...]:
    """``new`` (one ``-1`` allowed) checked against ``shape``'s size, as ``numpy.reshape``, without an array."""
    new = _as_shape(new)
    size = math.prod(shape)
    if new.count(-1) > 1 or any(n < -1 for n in new):
        raise ValueError(
            f"cannot reshape a meta shard of shape {shape} into shape {new}: one -1 at most, no other negative sizes"
        )
    if -1 in new:
        rest = math.prod(n for n in new if n != -1)
        if rest == 0 or size % rest:
            raise ValueError(f"cannot reshape a meta shard of size {size} into shape {new}")
        new = tuple(size // rest if n == -1 else n for n in new)
    if math.prod(new) != size:
        raise ValueError(f"cannot reshape a meta shard of size {size} into shape {new}")
    return new


def _advanced(k: Any) -> np.ndarray | MetaArray | None:
    """An index entry that is an integer or boolean array (NumPy's advanced indexing), else None."""
    if isinstance(k, MetaArray):
        return k
    if isinstance(k, (list, np.ndarray)):
        a = np.asarray(k)
        return a if a.ndim else None  # (a 0-d array indexes as a scalar does: the probe takes it)
    return None


def _consumed(k: Any) -> int:
    """How many of the block's dims a basic index entry takes (``None``, ``...`` and a 0-d bool take none)."""
    return 0 if k is None or k is Ellipsis or isinstance(k, (bool, np.bool_)) or _is_bool0(k) else 1


def _is_bool0(k: Any) -> bool:
    return isinstance(k, np.ndarray) and k.ndim == 0 and k.dtype == np.bool_


def _indexed(shape: tuple[int, ...], index: Any) -> tuple[int, ...]:
    """The shape of ``block[index]`` for a block of ``shape``, by NumPy's rules, allocating nothing of its size.

    Basic entries (ints, slices, ``None``, ``...``) index a zero-strided probe (views only). Integer arrays (meta
    or NumPy) broadcast together, and their result dims go where the first one stands when they (and any ints
    between them) are adjacent, else first, as NumPy's advanced indexing places them. A NumPy bool mask counts
    its True entries; a meta bool mask is refused (``BackendError``): how many it selects depends on the data.
    """
    key = index if isinstance(index, tuple) else (index,)
    adv = [_advanced(k) for k in key]
    if all(a is None for a in adv):
        return _view(shape)[index].shape
    # taken: per key entry, how many of the probe's result dims it stands for (None: a basic entry)
    shapes: list[tuple[int, ...]] = []
    probe_key: list[Any] = []
    taken: list[int | None] = []
    for k, a in zip(key, adv):
        if a is None and (isinstance(k, (bool, np.bool_)) or _is_bool0(k)):
            shapes.append((int(bool(k)),))  # a scalar bool among arrays: a 0-d mask, 1 or 0 entries, no dim taken
            taken.append(0)
            continue
        if a is None and (isinstance(k, (int, np.integer)) or (isinstance(k, np.ndarray) and k.dtype.kind in "iu")):
            a = np.asarray(k)  # an int among arrays is an advanced index too (a 0-d array)
        if a is None:
            probe_key.append(k)
            taken.append(None)
            continue
        if a.dtype == np.bool_:
            if isinstance(a, MetaArray):
                raise BackendError(
                    f"a boolean mask {a.shape} of a meta shard {shape}: how many elements it selects depends on the "
                    f"data, which the meta backend does not hold; build the mesh with backend='numpy' (or 'cupy')"
                )
            shapes.append((int(np.count_nonzero(a)),))
            probe_key.extend([slice(None)] * a.ndim)
            taken.append(a.ndim)
        else:
            shapes.append(tuple(a.shape))
            probe_key.append(slice(None))
            taken.append(1)
    full = _view(shape)[tuple(probe_key)].shape
    given = sum(_consumed(k) if t is None else t for k, t in zip(key, taken))
    at, p = 0, 0
    drop: set[int] = set()
    first: int | None = None
    last = -1
    for pos, (k, t) in enumerate(zip(key, taken)):
        if t is not None:
            drop.update(range(at, at + t))
            if first is None:
                first, p = pos, at
            last = pos
            at += t
        elif k is None or isinstance(k, slice) or _is_bool0(k) or isinstance(k, (bool, np.bool_)):
            at += 1
        elif k is Ellipsis:
            at += len(shape) - given
    rest = tuple(n for i, n in enumerate(full) if i not in drop)
    b = tuple(np.broadcast_shapes(*shapes))
    adjacent = first is None or all(taken[i] is not None for i in range(first, last + 1))
    return rest[:p] + b + rest[p:] if adjacent else b + rest


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


#: NumPy names the meta namespace hands out as they are: constants and dtype helpers read no array data (NumPy's
#: scalar types, ``xp.float32`` and the like, pass too)
_PASSTHROUGH = frozenset({
    "nan", "inf", "pi", "e", "newaxis", "dtype", "finfo", "iinfo", "result_type", "can_cast", "promote_types",
    "issubdtype", "errstate",
})  # fmt: skip


class MetaNamespace:
    """The subset of the NumPy namespace the ops use, on shapes and dtypes.

    Shape functions follow NumPy's rules (``matmul`` with 1-D operands, ``concatenate(axis=None)``, an int shape
    for ``zeros``); a function that would need values (a boolean mask's count) raises ``BackendError``.
    """

    linalg = _MetaLinalg()
    fft = _MetaFFT()

    def __getattr__(self, name: str) -> Any:
        ufunc = getattr(np, name, None)
        if name in _PASSTHROUGH or (isinstance(ufunc, type) and issubclass(ufunc, np.generic)):
            return ufunc  # dtypes, constants and dtype helpers: no data in them
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
    def matmul(a: Any, b: Any) -> MetaArray:
        """NumPy's rules: a 1-D first operand gains a leading 1 and a 1-D second one a trailing 1, each dropped
        from the result again; the batch dims broadcast."""
        sa, sb = _shape(a), _shape(b)
        if not sa or not sb:
            raise ValueError(f"matmul: a 0-d operand (shapes {sa} and {sb}); use multiply for scalars")
        a2 = sa if len(sa) > 1 else (1, *sa)
        b2 = sb if len(sb) > 1 else (*sb, 1)
        if a2[-1] != b2[-2]:
            raise ValueError(f"matmul: the contracted dims differ: {sa} @ {sb} ({a2[-1]} vs {b2[-2]})")
        lead = np.broadcast_shapes(a2[:-2], b2[:-2])
        out = (*lead, *((a2[-2],) if len(sa) > 1 else ()), *((b2[-1],) if len(sb) > 1 else ()))
        return MetaArray(out, promote(_dtype_of(a), _dtype_of(b)))

    @staticmethod
    def diagonal(a: MetaArray, offset: int = 0, axis1: int = 0, axis2: int = 1) -> MetaArray:
        return MetaArray(np.diagonal(_view(a.shape), offset, axis1, axis2).shape, a.dtype)

    @staticmethod
    def moveaxis(a: MetaArray, source: Any, destination: Any) -> MetaArray:
        return MetaArray(np.moveaxis(_view(a.shape), source, destination).shape, a.dtype)

    @staticmethod
    def squeeze(a: MetaArray, axis: Any = None) -> MetaArray:
        return MetaArray(np.squeeze(_view(a.shape), axis).shape, a.dtype)

    @staticmethod
    def flip(a: MetaArray, axis: Any = None) -> MetaArray:
        return MetaArray(a.shape, a.dtype)

    @staticmethod
    def roll(a: MetaArray, shift: Any, axis: Any = None) -> MetaArray:
        return MetaArray(a.shape, a.dtype)

    @staticmethod
    def sort(a: MetaArray, axis: Any = -1, **kwargs: Any) -> MetaArray:
        return MetaArray(a.shape if axis is not None else (a.size,), a.dtype)

    @staticmethod
    def argsort(a: MetaArray, axis: Any = -1, **kwargs: Any) -> MetaArray:
        return MetaArray(a.shape if axis is not None else (a.size,), np.intp)

    @staticmethod
    def searchsorted(a: Any, v: Any, side: str = "left", sorter: Any = None) -> MetaArray:
        """Positions of ``v`` in the sorted 1-D ``a``: ``v``'s shape, ``intp`` (NumPy's)."""
        return MetaArray(_shape(v), np.intp)

    def argmax(self, a: MetaArray, axis: Any = None, keepdims: bool = False) -> MetaArray:
        return self._reduce(a, axis, keepdims, np.intp)

    argmin = argmax

    def count_nonzero(self, a: MetaArray, axis: Any = None, keepdims: bool = False) -> MetaArray:
        return self._reduce(a, axis, keepdims, np.intp)

    def prod(self, a: MetaArray, axis: Any = None, keepdims: bool = False, dtype: Any = None) -> MetaArray:
        return self._reduce(a, axis, keepdims, dtype or np.prod(_probe(a)).dtype)

    def mean(self, a: MetaArray, axis: Any = None, keepdims: bool = False, dtype: Any = None) -> MetaArray:
        return self._reduce(a, axis, keepdims, dtype or np.mean(np.zeros(1, a.dtype)).dtype)

    @staticmethod
    def clip(a: Any, a_min: Any = None, a_max: Any = None) -> MetaArray:
        shape = np.broadcast_shapes(*(_shape(v) for v in (a, a_min, a_max) if v is not None))
        return MetaArray(shape, np.clip(_probe(a), _probe(a_min), _probe(a_max)).dtype)

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
        return MetaArray(tuple(shape), promote(*(a.dtype for a in arrays)))

    @staticmethod
    def concatenate(arrays: Any, axis: Any = 0, dtype: Any = None) -> MetaArray:
        arrays = list(arrays)
        dt = dtype if dtype is not None else promote(*(a.dtype for a in arrays))
        if axis is None:  # NumPy: the operands flattened
            return MetaArray((sum(a.size for a in arrays),), dt)
        shape = list(arrays[0].shape)
        shape[axis] = sum(a.shape[axis] for a in arrays)
        return MetaArray(tuple(shape), dt)

    @staticmethod
    def zeros(shape: Any, dtype: Any = float) -> MetaArray:
        return MetaArray(_as_shape(shape), dtype)

    ones = zeros
    empty = zeros

    @staticmethod
    def full(shape: Any, fill_value: Any, dtype: Any = None) -> MetaArray:
        return MetaArray(_as_shape(shape), dtype if dtype is not None else _dtype_of(fill_value))

    @staticmethod
    def ascontiguousarray(a: MetaArray, dtype: Any = None) -> MetaArray:
        return a if dtype is None else a.astype(dtype)

    @staticmethod
    def asarray(a: Any, dtype: Any = None) -> MetaArray:
        if isinstance(a, MetaArray):
            return a if dtype is None else a.astype(dtype)
        a = np.asarray(a)
        return MetaArray(a.shape, dtype or a.dtype)

    @staticmethod
    def array(a: Any, dtype: Any = None, copy: Any = True) -> MetaArray:
        """``numpy.array``: a new meta array (there is nothing to copy)."""
        if isinstance(a, MetaArray):
            return MetaArray(a.shape, a.dtype if dtype is None else dtype)
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
        """Refused (``BackendError``, naming the op the user called): a meta array has no values to read."""
        raise _needs_values("values are read to the host (numpy(), float(), bool() or a data-dependent branch)")

    def take_rows(self, table: Any, ids: Any) -> MetaArray:
        return MetaArray((table.shape[0], ids.shape[1], table.shape[2]), table.dtype)

    def scatter_rows(self, ids: Any, values: Any, n: int) -> MetaArray:
        return MetaArray((values.shape[0], n, values.shape[2]), values.dtype)

    def extreme_at(self, table: Any, rows: Any, values: Any, op: str) -> Any:
        return table

    def apply_at(self, table: Any, rows: Any, values: Any, op: str) -> Any:
        return table

    def reduceat_rows(self, block: Any, starts: Any, stops: Any, op: str, axis: int) -> MetaArray:
        return MetaArray(block.shape[:axis] + (len(starts),) + block.shape[axis + 1 :], block.dtype)

    def einsum(self, equation: str, *arrays: Any) -> MetaArray:
        shape = _einsum_shape(equation, tuple(a.shape for a in arrays))
        return MetaArray(shape, promote(*(a.dtype for a in arrays)))  # (np.result_type: no bfloat16 + float16)
