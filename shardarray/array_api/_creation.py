"""Creation functions of the standard: each device builds only its own block.

Arrays made here have dims ``dim0, dim1, ...``; axis ``k`` is split over mesh
axis ``k`` where both exist, on ``device`` (a Mesh) or else the default mesh
(``sa.get_default_mesh()``). ``arange``, ``linspace``, ``eye`` and the masks of
``tril``/``triu`` are computed per block from the block's global index range
(no device builds the global array); ``asarray`` of host data slices the given
global array. Default dtypes: ``float64``, ``int64``, ``complex128``, ``bool``.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..array import ShardArray
from ..default_mesh import get_default_mesh
from ..dtypes import as_dtype, is_real_float, scalar_for_write
from ..errors import ArgumentError, CastError, DimensionError, DTypeError, MeshError, OutOfBoundsError
from ..layout import Layout, check_sizes, make_layout
from ..mesh import Mesh
from ..ops.creation import basic as _cr
from ..ops.elementwise.arithmetic import where
from ..ops.manipulation import structure
from ..ops.manipulation.reshard import reshard
from ..ops.manipulation.structure import astype, broadcast_to, rename
from ._align import in_order
from ._array import Array, wrap
from ._elementwise import pow as _pow

_DEFAULT = {"b": np.dtype("bool"), "i": np.dtype("int64"), "f": np.dtype("float64"), "c": np.dtype("complex128")}


# ----------------------------------------------------------------- helpers
def _mesh(device: Any, what: str) -> Mesh:
    """``device`` as a Mesh (None: the default mesh)."""
    if device is None:
        return get_default_mesh()
    if isinstance(device, Mesh):
        return device
    raise MeshError(
        f"{what}: device must be a sa.Mesh (this namespace's devices are meshes) or None for the default mesh; "
        f"got {type(device).__name__} {device!r:.80}"
    )


def _dims(n: int) -> tuple[str, ...]:
    return tuple(f"dim{k}" for k in range(n))


def _layout(mesh: Mesh, dims: Sequence[str]) -> dict[str, str]:
    """Axis ``k`` over mesh axis ``k`` where both exist."""
    return dict(zip(dims, mesh.axis_names))


def _shape(shape: Any, what: str) -> tuple[int, ...]:
    """The standard's ``shape`` argument (an int or a tuple of ints) as a tuple."""
    items = shape if isinstance(shape, (tuple, list)) else (shape,)
    out = []
    for n in items:
        if isinstance(n, bool):
            raise DimensionError(f"{what}: shape {shape!r} holds a bool; sizes are integers")
        try:
            n = operator.index(n)
        except TypeError:
            raise DimensionError(f"{what}: shape must be an int or a tuple of ints; got {shape!r}") from None
        if n < 0:
            raise DimensionError(f"{what}: shape {shape!r} has a negative size; sizes must be >= 0")
        out.append(n)
    return tuple(out)


def _scalar_dtype(value: Any) -> np.dtype:
    """The default dtype of a Python scalar (bool, int64, float64, complex128; uint64 for an integer in
    [2**63, 2**64), as NumPy 2); a NumPy scalar keeps its dtype."""
    if isinstance(value, (bool, np.bool_)):
        return _DEFAULT["b"]
    if isinstance(value, (int, np.integer)):
        if isinstance(value, np.integer):
            return np.dtype(value.dtype)
        # NumPy 2's dtype of a Python integer: int64, or uint64 for one in [2**63, 2**64) (np.asarray(2**63))
        return np.dtype(np.uint64) if 2**63 <= value < 2**64 else _DEFAULT["i"]
    if isinstance(value, (float, np.floating)):
        return np.dtype(value.dtype) if isinstance(value, np.floating) else _DEFAULT["f"]
    if isinstance(value, (complex, np.complexfloating)):
        return np.dtype(value.dtype) if isinstance(value, np.complexfloating) else _DEFAULT["c"]
    raise DTypeError(f"expected a bool, int, float or complex scalar; got {type(value).__name__} {value!r:.80}")


def _copy(x: ShardArray) -> Array:
    """A copy of ``x`` (every shard copied; same dims, layout and pending sum; differentiable)."""
    return wrap(structure.copy(x))


def _build(
    mesh: Mesh,
    shape: tuple[int, ...],
    dtype: np.dtype,
    make: Callable[[tuple[tuple[int, int], ...]], np.ndarray],
    what: str,
    values: dict[str, Any],
) -> Array:
    """An array of ``shape`` on ``mesh`` whose block is ``make(bounds)`` (NumPy, moved to the block's device).

    Under MPI the processes compare the shape, dtype and ``values`` (the arguments that decide the data: ``arange``'s
    start and step, ``eye``'s diagonal) where the array is made (``Communicator.check_spmd``, one small allgather, as
    every creation function): a start of each process's own would fill each one's blocks from its own values."""
    dims = _dims(len(shape))
    shape = check_sizes(dims, shape, f"array of shape {shape}")  # (sizes and element counts within int64)
    lay = make_layout(mesh, dims, shape, _layout(mesh, dims), what=f"array of shape {shape}")
    mesh.comm.check_spmd(what, dict(zip(dims, shape)), dtype, layout=lay, values=values)
    backend = mesh.backend
    if not backend.has_data:  # shapes only: no values to compute
        return wrap(_cr.from_blocks(mesh, lay, dtype, lambda b: backend.xp.full(_block_shape(b), 0, dtype=dtype)))
    return wrap(_cr.from_blocks(mesh, lay, dtype, lambda b: backend.from_numpy(np.ascontiguousarray(make(b)))))


def _block_shape(bounds: tuple[tuple[int, int], ...]) -> tuple[int, ...]:
    return tuple(e - s for s, e in bounds)


def _full(shape: Any, fill_value: Any, dtype: Any, device: Any, what: str) -> Array:
    mesh = _mesh(device, what)
    shp = _shape(shape, what)
    dt = _scalar_dtype(fill_value) if dtype is None else as_dtype(dtype)
    dims = _dims(len(shp))
    return wrap(_cr.full(mesh, dict(zip(dims, shp)), fill_value, dt, _layout(mesh, dims)))


def _like(x: Any, fill_value: Any, dtype: Any, device: Any, what: str) -> Array:
    if not isinstance(x, ShardArray):
        raise DTypeError(f"{what} takes an array; got {type(x).__name__}. Make one first with xp.asarray")
    dt = x.dtype if dtype is None else as_dtype(dtype)
    if device is None or device is x.mesh or device == x.mesh:
        return wrap(_cr.full(x.mesh, x.sizes, fill_value, dt, x.layout))
    mesh = _mesh(device, what)
    return wrap(_cr.full(mesh, x.sizes, fill_value, dt, _layout(mesh, x.dims)))


# ----------------------------------------------------------------- asarray
def _is_scalar(obj: Any) -> bool:
    return isinstance(obj, (bool, int, float, complex, np.generic)) or (isinstance(obj, np.ndarray) and obj.ndim == 0)


def asarray(obj: Any, /, *, dtype: Any = None, device: Any = None, copy: bool | None = None) -> Array:
    """An array from host data (nested lists, scalars, NumPy arrays, buffers) or an array.

    Host data is the global array: each device keeps its block (axis ``k`` split
    over mesh axis ``k``). A ShardArray is wrapped as it is (its dims and
    layout kept), cast when ``dtype`` differs, copied when ``copy`` is True.

    Args:
        obj: the data.
        dtype: the dtype (default: the data's; Python ``bool``/``int``/``float``/
            ``complex`` give bool, int64, float64, complex128).
        device: the mesh (default: the array's own, else the default mesh). A
            ShardArray on another mesh is moved there as ``x.to_device(mesh)``
            moves it (``sa.reshard``: block to block, the namespace's default
            split on the target, no host round trip), then cast to ``dtype``
            (before the move when that makes it smaller).
        copy: True always copies; False never does (a ``ValueError`` where a
            copy is needed: a cast, a move to another mesh, or host data,
            which is always copied onto the devices); None copies only when
            needed.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     a = xp.asarray([[1, 2, 3], [4, 5, 6]])
        >>> a.dtype, a.dims, a.layout
        (dtype('int64'), ('dim0', 'dim1'), {'dim0': ('row',), 'dim1': ('col',)})
    """
    if copy is not None and not isinstance(copy, (bool, np.bool_)):
        raise ArgumentError(f"asarray: copy must be True, False or None; got {copy!r}")
    if isinstance(obj, ShardArray):
        dt = None if dtype is None else as_dtype(dtype)
        mesh = obj.mesh if device is None else _mesh(device, "asarray")
        if mesh is not obj.mesh and mesh != obj.mesh:
            if copy is False:
                raise ArgumentError(
                    f"asarray: copy=False, but the array {obj.sizes} lives on {obj.mesh} and moving it to "
                    f"device={mesh} needs a copy; pass copy=None (or True)"
                )
            if dt is not None and dt != obj.dtype and dt.itemsize < obj.dtype.itemsize:
                obj = astype(obj, dt)  # (cast first: less to move)
            moved = reshard(obj, mesh)
            return wrap(moved if dt is None or dt == moved.dtype else astype(moved, dt))
        if dt is not None and dt != obj.dtype:
            if copy is False:
                raise ArgumentError(
                    f"asarray: copy=False, but casting the array {obj.sizes} from {obj.dtype} to {dt} needs a copy; "
                    f"pass copy=None (or True)"
                )
            return wrap(astype(obj, dt))
        return _copy(obj) if copy else wrap(obj)
    if copy is False:
        raise ArgumentError(
            f"asarray: copy=False, but {type(obj).__name__} data lives on the host and is always copied onto the "
            f"mesh's devices; pass copy=None (or True)"
        )
    mesh = _mesh(device, "asarray")
    if dtype is None and isinstance(obj, (bool, int, float, complex)):
        dt = _scalar_dtype(obj)
    else:
        dt = None if dtype is None else as_dtype(dtype)
    if hasattr(obj, "__dlpack__") and not isinstance(obj, np.ndarray) and not hasattr(obj, "__array__"):
        obj = np.from_dlpack(obj)
    if dt is not None and _is_scalar(obj):
        scalar_for_write(obj, dt, "asarray")  # a Python integer out of dt's range, NaN into integers, complex into real
    host = _cr.host_array(obj, dt, "asarray", copy=bool(copy))
    if host.ndim == 0:  # sa.asarray's blocks host[()] would be NumPy scalars, not 0-d arrays
        return wrap(_cr.full(mesh, {}, host[()], host.dtype))
    dims = _dims(host.ndim)
    return wrap(_cr.asarray(host, dims=dims, mesh=mesh, layout=_layout(mesh, dims)))


def from_dlpack(x: Any, /, *, device: Any = None, copy: bool | None = None) -> Array:
    """An array from any object with ``__dlpack__`` (a NumPy, CuPy or torch array, ...): see ``asarray``.

    The data is read through ``np.from_dlpack`` (on the host) and split over the
    mesh; an array of this namespace is returned as ``asarray`` returns it.
    """
    if isinstance(x, ShardArray):
        return asarray(x, device=device, copy=copy)
    if not hasattr(x, "__dlpack__"):
        raise DTypeError(f"from_dlpack takes an object with __dlpack__; got {type(x).__name__}")
    return asarray(np.from_dlpack(x), device=device, copy=copy)


# ----------------------------------------------------------------- ranges
def arange(
    start: float, /, stop: float | None = None, step: float = 1, *, dtype: Any = None, device: Any = None
) -> Array:
    """Evenly spaced values in ``[start, stop)``: each device computes its own block ``start + i * step``.

    The length is NumPy's, ``ceil((stop - start) / step)`` (0 when negative). Integer ``start``/``stop``/``step``
    are exact in an integer dtype (uint64 included, with a negative step or values beyond int64). Otherwise the
    values are NumPy's float64 ones, ``start + i * delta`` with ``delta = (start + step) - start`` (the second
    value is ``start + step``: NumPy fills from the difference of its first two values), so float64 results equal
    NumPy's bit for bit; they are cast to ``dtype`` once: a float32, float16 or bfloat16 result is that value
    correctly rounded (NumPy's float32 and float16 ``arange`` do their arithmetic in the narrow dtype and may
    differ by an ulp), and an integer ``dtype`` truncates each value toward zero (``arange(0.5, 3.7, 0.4,
    dtype=int64)`` is ``[0, 0, 1, 1, 2, 2, 2, 3]``; NumPy's fills from the difference of its first two truncated
    values and gives all zeros there). A complex ``dtype`` holds the real values (``np.arange(3, dtype=complex)``,
    as NumPy; ``start``/``stop``/``step`` stay real numbers).

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     a = xp.arange(1, 10, 2)
        >>> a.numpy(), a.layout, a.shards[2]
        (array([1, 3, 5, 7, 9]), {'dim0': ('row',)}, array([7, 9]))
    """
    if device is None:  # (0-d array bounds: their mesh, as xp.full's 0-d fill_value)
        device = _array_mesh(start, stop, step)
    start, stop, step = (_host_bound(v) for v in (start, stop, step))
    if stop is None:
        start, stop = 0, start
    for name, v in (("start", start), ("stop", stop), ("step", step)):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
            raise DTypeError(f"arange: {name} must be a real number; got {v!r}")
    if step == 0:
        raise ArgumentError("arange: step must not be 0")
    ints = all(isinstance(v, (int, np.integer)) for v in (start, stop, step))
    dt = (_DEFAULT["i"] if ints else _DEFAULT["f"]) if dtype is None else as_dtype(dtype)
    if dt.kind not in "iuc" and not is_real_float(dt):
        raise DTypeError(f"arange makes integer, real or complex floating-point values; got dtype {dt.name}")
    mesh = _mesh(device, "arange")
    if ints:
        start, stop, step = int(start), int(stop), int(step)
        # len(range(...)) without range's limit (an OverflowError past 2**63)
        n = max(0, (stop - start + step - 1) // step) if step > 0 else max(0, (start - stop - step - 1) // -step)
    else:
        f_start, f_stop, f_step = (_finite(v, start, stop, step) for v in (start, stop, step))
        n = max(math.ceil((f_stop - f_start) / f_step), 0)
    if n > np.iinfo(np.int64).max:
        raise ArgumentError(
            f"arange({start!r}, {stop!r}, {step!r}) would have {n:.3g} elements, more than an array "
            f"can index (2**63 - 1); narrow the range or use a larger step"
        )
    exact = ints and dt.kind in "iu"  # integer values in an integer dtype; others are computed in float64
    if n <= 1:
        step = 1  # one value (start) at most: a step beyond int64 must not overflow the block's arithmetic
    if not exact:  # NumPy's float64 values: the second is start + step, the others step by their difference
        first = _finite(start, start, stop, step)
        second = first + _finite(step, start, stop, step)
        delta = second - first
    if n and dt.kind in "iu":
        last = start + (n - 1) * step if exact else (second if n == 2 else first + (n - 1) * delta)
        ends = (int(start), int(last)) if exact else (math.trunc(first), math.trunc(last))
        _check_fits(dt, ends, "arange")

    def make(b: tuple[tuple[int, int], ...]) -> np.ndarray:
        lo, hi = b[0]
        i = np.arange(lo, hi, dtype=np.int64)
        if exact:  # modulo 2**64: every value fits dt (checked above), so the wrapped uint64 arithmetic is exact
            return (np.uint64(start % 2**64) + i.astype(np.uint64) * np.uint64(step % 2**64)).astype(dt)
        y = first + i.astype(np.float64) * delta
        if lo <= 1 < hi:
            y[1 - lo] = second
        return y.astype(dt)

    return _build(mesh, (n,), dt, make, "arange", {"start": start, "step": step})


def _array_mesh(*values: Any) -> Mesh | None:
    """The mesh of the first array among ``values`` (0-d array bounds or endpoints), or None."""
    for v in values:
        if isinstance(v, ShardArray):
            return v.mesh
    return None


def _host_bound(v: Any) -> Any:
    """An ``arange`` bound given as a 0-d array (NumPy takes ``np.arange(1, np.asarray(4.0))``; SciPy passes them)
    as the Python number it holds (read to the host: the length depends on it), an int for an integer dtype; others
    as given."""
    if isinstance(v, ShardArray) and v.ndim == 0 and np.dtype(v.dtype).kind in "iuf":
        return int(v) if np.dtype(v.dtype).kind in "iu" else float(v)
    return v


def _finite(v: Any, start: Any, stop: Any, step: Any) -> float:
    """``arange``'s argument ``v`` as a finite float.

    Raises:
        ArgumentError: ``v`` is NaN or infinite, or an integer beyond the range of a float64.
    """
    try:
        f = float(v)
    except OverflowError:
        f = math.inf
    if not math.isfinite(f):
        raise ArgumentError(
            f"arange({start!r:.40}, {stop!r:.40}, {step!r:.40}): start, stop and step must be finite float64 "
            f"values; got {v!r:.40}"
        )
    return f


def _short_int(v: int) -> str:
    """``v`` for a message: its digits, or their first few and their count for a long one (a float's 300)."""
    digits = str(v)
    return digits if len(digits) <= 24 else f"{digits[:8]}...({len(digits.lstrip('-'))} digits)"


def _check_fits(dt: np.dtype, values: tuple[int, ...], what: str) -> None:
    """Refuse integer ``values`` outside the range of the integer dtype ``dt`` (a cast would wrap them silently)."""
    info = np.iinfo(dt)
    for v in values:
        if not info.min <= v <= info.max:
            raise CastError(
                f"{what}: the value {_short_int(v)} does not fit {dt} [{info.min}, {info.max}]; give a wider dtype, "
                f"or a range inside [{info.min}, {info.max}]"
            )


def linspace(
    start: complex, stop: complex, /, num: int, *, dtype: Any = None, device: Any = None, endpoint: bool = True
) -> Array:
    """``num`` evenly spaced values from ``start`` to ``stop``; each device computes its own block.

    Values are ``start + i * (stop - start) / div`` (``div`` is ``num - 1``
    with the endpoint, else ``num``), as NumPy computes them, in NumPy's
    dtype (float64 or complex128 for Python numbers; a NumPy scalar keeps its
    float dtype, as NEP 50: ``np.float32`` endpoints compute and give float32);
    the last is exactly ``stop`` when ``endpoint``. An integer ``dtype``
    floors the values as NumPy 2 does (``linspace(-5, 5, 4, dtype=int64)`` is
    ``[-5, -2, 1, 5]``); values it cannot hold (beyond its range, NaN) are a
    ``CastError`` rather than NumPy's silent wrap. A bool ``dtype`` is
    ``values != 0``, as NumPy's cast. A 0-d array endpoint (``r.max()``) is
    read as the NumPy scalar of its value, as NumPy and JAX take it (its dtype
    kept, NEP 50); ``np.linspace`` with arrays of more dims is NumPy's own
    (``numpy_protocol.positional_creation``).

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.linspace(0.0, 1.0, 5).numpy()
        array([0.  , 0.25, 0.5 , 0.75, 1.  ])
    """
    try:
        num = operator.index(num)
    except TypeError:
        raise DimensionError(f"linspace: num must be an integer; got {num!r}") from None
    if num < 0:
        raise DimensionError(f"linspace: num must be >= 0; got {num}")
    if device is None:  # (0-d array endpoints: their mesh, as xp.full's 0-d fill_value)
        device = _array_mesh(start, stop)
    start, stop = _endpoint(start), _endpoint(stop)
    for name, v in (("start", start), ("stop", stop)):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, complex, np.number)):
            raise DTypeError(f"linspace: {name} must be a real or complex number; got {type(v).__name__} {v!r:.80}")
    start, stop = _weak_float(start, "start"), _weak_float(stop, "stop")
    work = _linspace_dtype(start, stop)
    dt = work if dtype is None else as_dtype(dtype)
    if dt.kind not in "iubc" and not is_real_float(dt):
        raise DTypeError(f"linspace makes numbers; got dtype {dt.name}")
    if work.kind == "c" and dt.kind != "c":
        raise DTypeError(f"linspace: complex start/stop need a complex dtype; got {dt.name}")
    a, z = work.type(start), work.type(stop)
    div = (num - 1) if endpoint else num
    with np.errstate(all="ignore"):  # (inf - inf is NaN, as NumPy's; NumPy warns in its own arithmetic)
        delta = z - a
        step = delta / div if div > 0 else delta * np.nan

    def values(i: np.ndarray) -> np.ndarray:
        """The samples at the indices ``i``, in ``work`` (NumPy's arithmetic; the ``dtype`` cast not done)."""
        w = i.astype(work)  # (NumPy's np.arange(num, dtype=work); i itself finds the last sample)
        with np.errstate(all="ignore"):
            if div > 0 and step == 0:  # (NumPy's handling of subnormal steps)
                y = (w / div) * delta + a
            elif div > 0:
                y = w * step + a
            else:
                y = w * delta + a
        y = np.asarray(y, dtype=work)
        if endpoint and num > 1:
            y = np.where(i == num - 1, z, y)
        if dt.kind in "iu":
            y = np.floor(y)
        return y

    if dt.kind in "iu" and num:
        ends = values(np.asarray([0, num - 1], dtype=np.int64))
        if not np.isfinite(ends).all():
            raise CastError(
                f"linspace({start!r}, {stop!r}, {num}) holds {ends[~np.isfinite(ends)][0]}, which {dt.name} cannot "
                f"hold (no NaN or inf); give a float dtype or finite start and stop"
            )
        _check_fits(dt, tuple(int(v) for v in ends), "linspace")
    mesh = _mesh(device, "linspace")

    def make(b: tuple[tuple[int, int], ...]) -> np.ndarray:
        lo, hi = b[0]
        return values(np.arange(lo, hi, dtype=np.int64)).astype(dt)

    return _build(mesh, (num,), dt, make, "linspace", {"start": start, "stop": stop, "endpoint": endpoint})


def logspace(
    start: Any,
    stop: Any,
    num: int = 50,
    endpoint: bool = True,
    base: Any = 10.0,
    dtype: Any = None,
    axis: int = 0,
    *,
    device: Any = None,
) -> Array:
    """``base ** linspace(start, stop, num, endpoint=endpoint)``, as ``np.logspace`` (a NumPy extension).

    The exponents are ``linspace``'s (NumPy's values, bit for bit; scalar or 0-d array endpoints) and the
    power is ``pow``'s, elementwise on each device's block (no communication). The dtype is NumPy's: a
    Python number ``base`` is weak (``float32`` endpoints give float32), a NumPy scalar or 0-d array
    ``base`` keeps its dtype; ``dtype`` casts the powers at the end (an integer ``dtype`` truncates, as
    NumPy's ``astype``). The result is 1-D, so ``axis`` is 0 or -1 (NumPy's ``AxisError`` otherwise, an
    ``OutOfBoundsError`` here); ``np.logspace`` of endpoint arrays with dims is NumPy's own
    (``numpy_protocol.positional_creation``).

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.logspace(0, 3, 4).numpy()
        array([   1.,   10.,  100., 1000.])
    """
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, (int, np.integer)) or axis not in (0, -1):
        raise OutOfBoundsError(f"logspace: axis {axis!r} is out of bounds for the 1-D result; use 0 or -1")
    y = linspace(start, stop, num, endpoint=endpoint, device=device)
    if isinstance(base, ShardArray):
        if base.ndim:
            raise DimensionError(
                f"logspace: base must be a scalar or a 0-d array; got shape {base.shape} (np.logspace broadcasts "
                f"array bases)"
            )
        base = _endpoint(base)
    if isinstance(base, (bool, np.bool_)) or not isinstance(base, (int, float, complex, np.number)):
        raise DTypeError(f"logspace: base must be a real or complex number; got {type(base).__name__} {base!r:.80}")
    b: Any = base  # (a NumPy scalar keeps its dtype in ``pow``, as in NumPy's ``power``)
    out = _pow(b, y)
    return out if dtype is None else wrap(astype(out, as_dtype(dtype)))


def _endpoint(v: Any) -> Any:
    """A 0-d array endpoint of ``linspace`` (``xp.linspace(0, r.max(), 200)``, as NumPy and JAX take it) as the
    NumPy scalar of its value and dtype (a replicated value read on the host; a NumPy 0-d array alike); others as
    they are."""
    if isinstance(v, ShardArray) and v.ndim == 0:
        return v.numpy()[()]
    if isinstance(v, np.ndarray) and v.ndim == 0:
        return v[()]
    return v


def _weak_float(v: Any, name: str) -> Any:
    """``linspace``'s Python integer endpoint as the Python float it is computed in (one beyond int64 too: NumPy
    makes an object array of it and fails); other values as they are.

    Raises:
        ArgumentError: an integer beyond the range of a float64.
    """
    if not isinstance(v, int):
        return v
    try:
        return float(v)
    except OverflowError:
        raise ArgumentError(
            f"linspace: {name}={_short_int(v)} is beyond the range of a float64; give a smaller value"
        ) from None


def _linspace_dtype(start: Any, stop: Any) -> np.dtype:
    """NumPy's dtype of ``linspace``'s arithmetic: the result type of ``start`` and ``stop`` (Python numbers weak,
    NumPy scalars strong, as NEP 50), float64 where that is not a float or complex dtype."""
    dt = np.result_type(start, stop)
    return dt if dt.kind in "fc" else _DEFAULT["f"]


def eye(n_rows: int, n_cols: int | None = None, /, *, k: int = 0, dtype: Any = None, device: Any = None) -> Array:
    """Ones on the ``k``-th diagonal, zeros elsewhere; each device builds its own block.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     e = xp.eye(3, 4, k=1)
        >>> e.numpy()[0], e.layout
        (array([0., 1., 0., 0.]), {'dim0': ('row',), 'dim1': ('col',)})
    """
    shp = _shape((n_rows, n_rows if n_cols is None else n_cols), "eye")
    k = _offset(k, "eye")
    dt = _DEFAULT["f"] if dtype is None else as_dtype(dtype)
    mesh = _mesh(device, "eye")
    far = abs(k) > shp[0] + shp[1]

    def make(b: tuple[tuple[int, int], ...]) -> np.ndarray:
        (r0, r1), (c0, c1) = b
        if far:
            return np.zeros((r1 - r0, c1 - c0), dtype=dt)
        return (np.arange(c0, c1)[None, :] - np.arange(r0, r1)[:, None] == k).astype(dt)

    return _build(mesh, shp, dt, make, "eye", {"k": k})


def tri(N: int, M: int | None = None, k: int = 0, dtype: Any = None, *, device: Any = None) -> Array:
    """Ones at and below the ``k``-th diagonal of an ``N x M`` array (``M`` defaults to ``N``), as ``np.tri``.

    The default dtype is the default floating-point dtype (NumPy's ``float``); each device builds its own block
    (no collective). ``np.tri(..., like=x)`` dispatches here.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.tri(3, 4, k=1, dtype=xp.int64).numpy()
        array([[1, 1, 0, 0],
               [1, 1, 1, 0],
               [1, 1, 1, 1]])
    """
    shp = _shape((N, N if M is None else M), "tri")
    k = _offset(k, "tri")
    dt = _DEFAULT["f"] if dtype is None else as_dtype(dtype)

    def make(b: tuple[tuple[int, int], ...]) -> np.ndarray:
        (r0, r1), (c0, c1) = b
        return (np.arange(c0, c1)[None, :] - np.arange(r0, r1)[:, None] <= k).astype(dt)

    return _build(_mesh(device, "tri"), shp, dt, make, "tri", {"k": k})


def identity(n: int, dtype: Any = None, *, device: Any = None) -> Array:
    """The ``n x n`` identity, as ``np.identity`` (``eye(n)``; ``np.identity(n, like=x)`` dispatches here).

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.identity(2).numpy()
        array([[1., 0.],
               [0., 1.]])
    """
    return eye(n, dtype=dtype, device=device)


def _offset(k: Any, what: str) -> int:
    """The diagonal offset ``k`` as an int."""
    if isinstance(k, (bool, np.bool_)):
        raise ArgumentError(f"{what}: k must be an integer diagonal offset; got {k!r}")
    try:
        return operator.index(k)
    except TypeError:
        raise ArgumentError(f"{what}: k must be an integer diagonal offset; got {k!r}") from None


def _triangle(x: Any, k: int, lower: bool, what: str) -> Array:
    """``x`` with the entries above (``tril``) or below (``triu``) the ``k``-th diagonal zeroed."""
    if not isinstance(x, ShardArray):
        raise DTypeError(f"{what} takes an array; got {type(x).__name__}")
    if x.ndim < 2:
        raise DimensionError(f"{what} needs an array of at least 2 dimensions; got shape {x.shape}")
    k = _offset(k, what)
    mesh = x.mesh
    dims = x.dims[-2:]
    lay = Layout(dims, tuple(x.sizes[d] for d in dims), tuple(x.spec.of(d) for d in dims))
    far = abs(k) > sum(lay.sizes)
    backend = mesh.backend

    def make(b: tuple[tuple[int, int], ...]) -> Any:
        if not backend.has_data:  # shapes only
            return backend.xp.full(_block_shape(b), True, dtype=bool)
        (r0, r1), (c0, c1) = b
        if far:
            m = np.full((r1 - r0, c1 - c0), (k > 0) == lower, dtype=bool)
        else:
            d = np.arange(c0, c1)[None, :] - np.arange(r0, r1)[:, None]
            m = d <= k if lower else d >= k
        return backend.from_numpy(m)

    mask = _cr.from_blocks(mesh, lay, np.dtype(bool), make)
    zero = np.zeros((), dtype=x.dtype)[()]
    out = where(mask, x, zero)
    if out.dtype != x.dtype:
        out = astype(out, x.dtype)
    return wrap(in_order(out, x.dims))


def tril(x: ShardArray, /, *, k: int = 0) -> Array:
    """The lower triangle of the last two axes (entries above the ``k``-th diagonal zeroed); no communication.

    Each device masks its own block by its global row/column range.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.tril(xp.ones((3, 3))).numpy()
        array([[1., 0., 0.],
               [1., 1., 0.],
               [1., 1., 1.]])
    """
    return _triangle(x, k, True, "tril")


def triu(x: ShardArray, /, *, k: int = 0) -> Array:
    """The upper triangle of the last two axes (entries below the ``k``-th diagonal zeroed); no communication."""
    return _triangle(x, k, False, "triu")


# ----------------------------------------------------------------- filled arrays
def empty(shape: int | tuple[int, ...], *, dtype: Any = None, device: Any = None) -> Array:
    """An array of ``shape`` (its values are zeros: blocks are allocated filled)."""
    return _full(shape, 0, _DEFAULT["f"] if dtype is None else dtype, device, "empty")


def zeros(shape: int | tuple[int, ...], *, dtype: Any = None, device: Any = None) -> Array:
    """Zeros of ``shape`` (default float64), axis ``k`` split over mesh axis ``k``.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     z = xp.zeros((4, 6), dtype=xp.int32)
        >>> z.shards[0].shape, z.layout
        ((2, 3), {'dim0': ('row',), 'dim1': ('col',)})
    """
    return _full(shape, 0, _DEFAULT["f"] if dtype is None else dtype, device, "zeros")


def ones(shape: int | tuple[int, ...], *, dtype: Any = None, device: Any = None) -> Array:
    """Ones of ``shape`` (default float64); see ``zeros``."""
    return _full(shape, 1, _DEFAULT["f"] if dtype is None else dtype, device, "ones")


def full(shape: int | tuple[int, ...], fill_value: bool | complex, *, dtype: Any = None, device: Any = None) -> Array:
    """An array of ``shape`` filled with ``fill_value`` (dtype from the value: bool, int64, float64, complex128).

    A 0-d array ``fill_value`` (NumPy's ``np.full(3, np.asarray(1.0))``; SciPy passes them) fills with its value
    and dtype, read on the devices (no host read), on its mesh unless ``device`` names another."""
    if isinstance(fill_value, ShardArray):
        _zero_d(fill_value)  # (before the array is made: under MPI, a check each process makes alike)
        return _filled(_full(shape, False, dtype or fill_value.dtype, device or fill_value.mesh, "full"), fill_value)
    if np.ndim(fill_value) != 0:
        raise DTypeError(f"full: fill_value must be a Python scalar or a 0-d array; got {type(fill_value).__name__}")
    return _full(shape, fill_value, dtype, device, "full")


def _zero_d(fill: ShardArray) -> None:
    """Refuse an array ``fill_value`` that is not 0-d (``DTypeError``)."""
    if fill.ndim != 0:
        raise DTypeError(f"full: an array fill_value must be 0-d (a scalar); got shape {fill.shape}")


def _filled(template: Array, fill: ShardArray) -> Array:
    """``template``'s shape, layout and dtype, every entry ``fill`` (a 0-d array): ``where(True, fill, fill)``, one
    elementwise op on each device's block (signed zeros and NaN payload classes as ``fill``'s)."""
    f = fill if fill.dtype == template.dtype else astype(fill, template.dtype)
    return wrap(where(template == False, f, f))  # noqa: E712  # (a bool array of the layout: True everywhere)


def empty_like(x: ShardArray, /, *, dtype: Any = None, device: Any = None) -> Array:
    """An array like ``x`` (its mesh, dims and layout; its values are zeros)."""
    return _like(x, 0, dtype, device, "empty_like")


def zeros_like(x: ShardArray, /, *, dtype: Any = None, device: Any = None) -> Array:
    """Zeros like ``x``: its mesh, dims, layout and (default) dtype."""
    return _like(x, 0, dtype, device, "zeros_like")


def ones_like(x: ShardArray, /, *, dtype: Any = None, device: Any = None) -> Array:
    """Ones like ``x``: its mesh, dims, layout and (default) dtype."""
    return _like(x, 1, dtype, device, "ones_like")


def full_like(x: ShardArray, /, fill_value: bool | complex, *, dtype: Any = None, device: Any = None) -> Array:
    """``fill_value`` everywhere, like ``x``: its mesh, dims, layout and (default) dtype (a 0-d array
    ``fill_value``: its value, as ``full``)."""
    if isinstance(fill_value, ShardArray):
        _zero_d(fill_value)
        return _filled(_like(x, False, dtype or x.dtype, device, "full_like"), fill_value)
    if np.ndim(fill_value) != 0:
        raise DTypeError(
            f"full_like: fill_value must be a Python scalar or a 0-d array; got {type(fill_value).__name__}"
        )
    return _like(x, fill_value, dtype, device, "full_like")


# ----------------------------------------------------------------- indices
def indices(dimensions: Sequence[int], dtype: Any = int, sparse: bool = False, *, device: Any = None) -> Any:
    """The grid of indices of an array of shape ``dimensions``, as ``np.indices``: ``out[k][i0, i1, ...]`` is
    ``ik``, in an array of shape ``(len(dimensions), *dimensions)`` (dtype ``int64`` by default; any real
    ``dtype``). Each device builds its own block from the block's index ranges (no collective), axis ``k`` split
    over mesh axis ``k`` as every creation function's; ``np.fromfunction(f, shape, like=x)`` calls ``f`` on it.

    With ``sparse=True`` a tuple of ``len(dimensions)`` arrays comes back, the ``k``-th of shape
    ``(1, ..., dimensions[k], ..., 1)`` (NumPy's broadcastable grid).

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     grid = xp.indices((2, 3))
        >>> grid.shape, grid.numpy()[1].tolist()
        ((2, 2, 3), [[0, 1, 2], [0, 1, 2]])
    """
    try:
        dims = tuple(dimensions)
    except TypeError:
        raise DimensionError(f"indices: dimensions must be a sequence of sizes; got {dimensions!r:.80}") from None
    shp = _shape(dims, "indices")
    dt = as_dtype(dtype)
    if dt.kind not in "iuf":
        raise DTypeError(f"indices: dtype must be a real numeric dtype; got {dt.name}")
    mesh = _mesh(device, "indices")
    n = len(shp)

    def ramp(b: tuple[tuple[int, int], ...], k: int, first: int) -> np.ndarray:
        """Index ``k`` over the block ``b[first:]`` of the grid."""
        line = np.arange(*b[first + k], dtype=dt).reshape([-1 if i == k else 1 for i in range(n)])
        return np.broadcast_to(line, _block_shape(b[first:]))

    if sparse:

        def axis_of(k: int) -> Array:
            one = tuple(shp[j] if j == k else 1 for j in range(n))
            return _build(mesh, one, dt, lambda b: ramp(b, k, 0), "indices", {})

        return tuple(axis_of(k) for k in range(n))

    def make(b: tuple[tuple[int, int], ...]) -> np.ndarray:
        out = np.empty(_block_shape(b), dtype=dt)
        for k in range(*b[0]):
            out[k - b[0][0]] = ramp(b, k, 1)
        return out

    return _build(mesh, (n, *shp), dt, make, "indices", {})


# ----------------------------------------------------------------- meshgrid
def meshgrid(*arrays: ShardArray, indexing: str = "xy") -> list[Array]:
    """Coordinate arrays from 1-D arrays: each input broadcast over the others' lengths.

    With ``indexing="xy"`` the first two output axes are swapped (Cartesian),
    with ``"ij"`` they are not (matrix). Each output is the named
    ``broadcast_to`` of its input into dims ``dim0..`` laid out axis ``k`` over
    mesh axis ``k``: every device builds its block from its own rows of the input.
    Each output keeps its input's dtype, as NumPy's ``meshgrid`` (the standard
    asks for one dtype; inputs of several dtypes are not refused).

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     X, Y = xp.meshgrid(xp.arange(3), xp.arange(2))
        >>> X.numpy()
        array([[0, 1, 2],
               [0, 1, 2]])
    """
    if not isinstance(indexing, str) or indexing not in ("xy", "ij"):
        raise ArgumentError(f"meshgrid: indexing must be 'xy' or 'ij'; got {indexing!r}")
    for i, a in enumerate(arrays):
        if not isinstance(a, ShardArray):
            raise DTypeError(f"meshgrid takes arrays; argument {i} is {type(a).__name__}")
        if a.ndim != 1:
            raise DimensionError(f"meshgrid takes 1-D arrays; argument {i} has shape {a.shape}")
    if not arrays:
        return []
    mesh = arrays[0].mesh
    for a in arrays[1:]:
        if a.mesh is not mesh and a.mesh != mesh:
            raise MeshError(f"meshgrid: the arrays live on different meshes ({mesh} and {a.mesh}); use one mesh")
    n = len(arrays)
    pos = list(range(n))  # pos[i]: the output axis of input i
    if indexing == "xy" and n > 1:
        pos[0], pos[1] = 1, 0
    shape = [0] * n
    for i, a in enumerate(arrays):
        shape[pos[i]] = a.shape[0]
    dims = _dims(n)
    sizes = dict(zip(dims, shape))
    lay = _layout(mesh, dims)
    out = []
    for i, a in enumerate(arrays):
        named = a if a.dims == (dims[pos[i]],) else rename(a, {a.dims[0]: dims[pos[i]]})
        out.append(wrap(broadcast_to(named, sizes, lay)))
    return out


__all__ = [
    "arange",
    "asarray",
    "empty",
    "empty_like",
    "eye",
    "from_dlpack",
    "full",
    "full_like",
    "identity",
    "indices",
    "linspace",
    "logspace",
    "meshgrid",
    "ones",
    "ones_like",
    "tri",
    "tril",
    "triu",
    "zeros",
    "zeros_like",
]
