"""ShardArray: a tensor with named dims, split over a mesh by its layout."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from . import profiler
from .errors import DimensionError, DTypeError, TapeError
from .layout import Layout, block_slices
from .mesh import AxesSpec, Mesh


class ShardArray:
    """A distributed array: one shard per device of a mesh.

    Each dim has a name; ``layout`` says which mesh axes split which dims.
    After an einsum that contracts a split dim the array may carry a *pending*
    sum over some mesh axes (``pending``): each device holds a partial sum,
    resolved lazily by an allreduce (or a reduce-scatter when the consumer
    splits a dim over that axis).

    Arrays are immutable: every op returns a new array, and replicas may share
    one buffer on emulated backends.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.arange(8.0).reshape(4, 2), dims=("batch", "io"), mesh=mesh, layout={"batch": "row"})
        >>> x.dims, x.shape, x.layout
        (('batch', 'io'), (4, 2), {'batch': ('row',)})
        >>> (x * 2).sum("io").numpy()
        array([ 2., 10., 18., 26.])
    """

    __slots__ = ("mesh", "_layout", "dtype", "shards", "pending", "_node", "_resolved", "host_range", "__weakref__")
    __array_priority__ = 100

    def __init__(
        self, mesh: Mesh, layout: Layout, dtype: Any, shards: Sequence[Any], pending: tuple[str, ...] = ()
    ) -> None:
        self.mesh = mesh
        self._layout = layout
        self.dtype = np.dtype(dtype)
        self.shards = tuple(shards)
        self.pending: tuple[str, ...] = pending
        self._node: Any = None  # set by the autograd tape while value_and_grad records
        self._resolved: Any = None  # (target axes, resolved array): a pending sum is reduced once
        # (min, max) of an integer array known on the host where it was made (sa.asarray of host data), else
        # None; lets id range checks (sa.take) skip a device-to-host transfer
        self.host_range: tuple[int, int] | None = None
        if profiler.ACTIVE:
            profiler.on_array(self)

    # ------------------------------------------------------------- metadata
    @property
    def dims(self) -> tuple[str, ...]:
        return self._layout.dims

    @property
    def shape(self) -> tuple[int, ...]:
        return self._layout.sizes

    @property
    def sizes(self) -> dict[str, int]:
        return dict(zip(self._layout.dims, self._layout.sizes))

    @property
    def ndim(self) -> int:
        return len(self._layout.dims)

    @property
    def size(self) -> int:
        return math.prod(self._layout.sizes)

    @property
    def layout(self) -> dict[str, tuple[str, ...]]:
        """``{dim: mesh axes}`` of the split dims (major axis first)."""
        return self._layout.as_dict()

    @property
    def spec(self) -> Layout:
        """The full ``Layout`` record (every dim, split or not)."""
        return self._layout

    @property
    def nbytes_per_device(self) -> int:
        """Largest shard in bytes (the device holding the biggest block)."""
        return max(int(math.prod(s.shape)) for s in self.shards if s is not None) * self.dtype.itemsize

    def __repr__(self) -> str:
        sizes = ", ".join(f"{d}={n}" for d, n in zip(self.dims, self.shape))
        pend = f", pending={self.pending}" if self.pending else ""
        return f"ShardArray({sizes}; dtype={self.dtype}, layout={self.layout}{pend}, mesh={self.mesh})"

    def __len__(self) -> int:
        if not self.dims:
            raise TypeError("len() of a 0-d ShardArray")
        return self.shape[0]

    # ------------------------------------------------------------- values
    def numpy(self) -> np.ndarray:
        """The global value as a NumPy array (resolves a pending sum first).

        Under MPI (``comm="mpi"``) this is a collective when the array is split
        or has a pending sum (every process must call it); a replicated array
        with no pending sum converts locally, with no communication.

        Raises:
            BackendError: on the ``meta`` backend, which holds no values.
            ShardArrayError: inside ``sa.value_and_grad``/``grad``/``vjp`` on
                an array being differentiated (its gradient would silently
                be zero); read ``sa.stop_gradient(x).numpy()`` instead.
        """
        self._check_off_tape("numpy()")
        backend = self.mesh.backend
        if not backend.has_data:
            backend.to_numpy(None)  # raises BackendError with the explanation
        x = self.resolve()
        return x.mesh.comm.assemble(x.shards, block_slices(x.mesh, x._layout), x.shape, x.dtype, x._layout.used_axes)

    def _check_off_tape(self, what: str) -> None:
        """Refuse to hand a value being differentiated to the host: its gradient would be lost."""
        node = self._node
        if node is not None and node.tape.recording():
            raise TapeError(
                f"{what} on {self._describe()} inside sa.value_and_grad/grad/vjp: the value would leave the tape "
                f"and its gradient would silently be zero. Compute with ShardArray ops instead; to read the value "
                f"(e.g. for logging) convert sa.stop_gradient(x), or return it as aux with has_aux=True"
            )

    def _describe(self) -> str:
        sizes = ", ".join(f"{d}={n}" for d, n in zip(self.dims, self.shape))
        return f"the {self.dtype} array ({sizes or '0-d'})"

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        self._check_off_tape("np.asarray(x)")
        out = self.numpy()
        return out if dtype is None else out.astype(dtype)

    def _scalar(self, what: str) -> Any:
        """The single value as a NumPy scalar, after checking (without communication) that there is one."""
        self._check_off_tape(what)
        if self.size != 1:
            raise DimensionError(
                f"{what} needs an array of exactly one element; got {self._describe()} with {self.size} elements. "
                f"Reduce it first (x.sum(), x.mean(), x.max()) or pick one element (x.numpy()[...])"
            )
        return self.numpy().reshape(()).item()

    def item(self) -> Any:
        """The single value of a size-1 array as a Python scalar (a collective under MPI if split)."""
        return self._scalar("item()")

    def __float__(self) -> float:
        return float(self._scalar("float(x)"))

    def __int__(self) -> int:
        return int(self._scalar("int(x)"))

    def __index__(self) -> int:
        if self.dtype.kind not in "iub":
            raise DTypeError(
                f"only integer arrays can be used as an index; got {self._describe()}. Use int(x) to truncate"
            )
        return int(self._scalar("operator.index(x)"))

    def __bool__(self) -> bool:
        return bool(self._scalar("bool(x)"))

    def __complex__(self) -> complex:
        return complex(self._scalar("complex(x)"))

    def __format__(self, spec: str) -> str:
        """``f"{loss:.3f}"`` formats the value of a one-element array; other arrays format their repr."""
        if spec and self.size == 1:
            return format(self._scalar(f"format(x, {spec!r})"), spec)
        return format(repr(self), spec)

    # ------------------------------------------------------------- layout
    def relayout(self, layout: Mapping[str, AxesSpec] | None) -> ShardArray:
        """The same values under another layout (Mesh-TF §6.1: slice, allgather, alltoall).

        Args:
            layout: ``{dim: axis | (axes) | None}``; dims left out are not split;
                ``None`` follows the mesh rules.

        Example:
            >>> x = sa.zeros(sa.Mesh({"row": 2, "col": 2}), {"batch": 8, "io": 4}, layout={"batch": "row"})
            >>> x.relayout({"io": "row"}).layout     # an alltoall over row
            {'io': ('row',)}
        """
        return _relayout.relayout(self, layout)

    def resolve(self, layout: Mapping[str, AxesSpec] | None = None) -> ShardArray:
        """Resolve a pending sum now (allreduce, or reduce-scatter into ``layout``).

        Without ``layout`` the array keeps its own layout and the pending axes
        are allreduced; with one it is the same as ``relayout(layout)``.
        """
        return _relayout.resolve_to(self, layout)

    def rename(self, names: Mapping[str, str]) -> ShardArray:
        """New dim names ``{old: new}``; layout, values and shards unchanged."""
        return _structure.rename(self, names)

    def transpose(self, *dims: str) -> ShardArray:
        """Reorder the dims (no communication); no argument reverses them."""
        return _structure.transpose(self, dims)

    def astype(self, dtype: Any) -> ShardArray:
        """Cast every shard (a pending sum is resolved first)."""
        return _structure.astype(self, dtype)

    # ------------------------------------------------------------- reductions
    def _reduce_args(self, what: str, dims: Any, axis: Any, dtype: Any, out: Any) -> tuple[ShardArray, Any]:
        """``(array to reduce, dims)`` from the named form (``dims``) or NumPy's keywords (``axis``, ``dtype``)."""
        if out is not None:
            raise DTypeError(
                f"{what}: out= is not supported (ShardArrays are immutable); use the returned array. "
                f"Array: {self._describe()}"
            )
        if axis is not None:
            if dims is not None:
                raise DimensionError(f"{what}: give the dims to reduce once, as dims={dims!r} or axis={axis!r}")
            dims = axis
        return (self if dtype is None else self.astype(dtype)), dims

    def sum(self, dims: Any = None, *, axis: Any = None, dtype: Any = None, out: Any = None) -> ShardArray:
        """Sum over ``dims`` (names, positions, or all); split dims leave a pending sum.

        ``axis`` and ``dtype`` are NumPy's spelling, so ``np.sum(x, axis=0)``
        works and returns a ShardArray.
        """
        x, dims = self._reduce_args("sum", dims, axis, dtype, out)
        return _reduce.sum(x, dims)

    def mean(self, dims: Any = None, *, axis: Any = None, dtype: Any = None, out: Any = None) -> ShardArray:
        """Mean over ``dims`` (names, positions, or all)."""
        x, dims = self._reduce_args("mean", dims, axis, dtype, out)
        return _reduce.mean(x, dims)

    def max(self, dims: Any = None, *, axis: Any = None, out: Any = None) -> ShardArray:
        """Maximum over ``dims`` (max-allreduce across split dims)."""
        x, dims = self._reduce_args("max", dims, axis, None, out)
        return _reduce.max(x, dims)

    def min(self, dims: Any = None, *, axis: Any = None, out: Any = None) -> ShardArray:
        """Minimum over ``dims`` (min-allreduce across split dims)."""
        x, dims = self._reduce_args("min", dims, axis, None, out)
        return _reduce.min(x, dims)

    # ------------------------------------------------------------- arithmetic
    def __add__(self, other: Any) -> ShardArray: return _ew.add(self, other)
    def __radd__(self, other: Any) -> ShardArray: return _ew.add(other, self)
    def __sub__(self, other: Any) -> ShardArray: return _ew.subtract(self, other)
    def __rsub__(self, other: Any) -> ShardArray: return _ew.subtract(other, self)
    def __mul__(self, other: Any) -> ShardArray: return _ew.multiply(self, other)
    def __rmul__(self, other: Any) -> ShardArray: return _ew.multiply(other, self)
    def __truediv__(self, other: Any) -> ShardArray: return _ew.divide(self, other)
    def __rtruediv__(self, other: Any) -> ShardArray: return _ew.divide(other, self)
    def __pow__(self, other: Any) -> ShardArray: return _ew.power(self, other)
    def __rpow__(self, other: Any) -> ShardArray: return _ew.power(other, self)
    def __neg__(self) -> ShardArray: return _ew.negative(self)
    def __pos__(self) -> ShardArray: return self
    def __gt__(self, other: Any) -> ShardArray: return _ew.greater(self, other)
    def __ge__(self, other: Any) -> ShardArray: return _ew.greater_equal(self, other)
    def __lt__(self, other: Any) -> ShardArray: return _ew.less(self, other)
    def __le__(self, other: Any) -> ShardArray: return _ew.less_equal(self, other)
    def __eq__(self, other: Any) -> ShardArray: return _ew.equal(self, other)  # type: ignore[override]
    def __ne__(self, other: Any) -> ShardArray: return _ew.not_equal(self, other)  # type: ignore[override]

    __hash__ = object.__hash__

    # ------------------------------------------------------------- more operators (elementwise engineer)

    # ------------------------------------------------------------- indexing (indexing engineer)

    # ------------------------------------------------------------- manipulation (manipulation engineer)

    # ------------------------------------------------------------- protocols (protocols engineer)


from .ops import elementwise as _ew  # noqa: E402  (ops need the class defined above)
from .ops import reduce as _reduce  # noqa: E402
from .ops import relayout as _relayout  # noqa: E402
from .ops import structure as _structure  # noqa: E402
