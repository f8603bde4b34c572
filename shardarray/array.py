"""ShardArray: a tensor with named dims, split over a mesh by its layout."""

from __future__ import annotations

import math
import operator
import sys
import threading
from collections.abc import Mapping, Sequence
from threading import get_ident
from types import FrameType
from typing import Any

import numpy as np

from . import copies, host_reads, profiler
from .backend.classlist import ClassList
from .errors import ArgumentError, BackendError, DimensionError, DTypeError, OutOfBoundsError, TapeError, ZeroDimError
from .layout import Layout, block_slices
from .mesh import AxesSpec, Mesh


class OpTable:
    """The operations ``ShardArray``'s methods and operators run, filled in from above.

    ``shardarray.ops.methods`` puts the ops here when ``shardarray.ops`` is
    imported, ``shardarray.numpy_protocol`` its NumPy hooks and
    ``shardarray.array_api`` its namespace: this module imports nothing above
    the ground floor, and a method reads one attribute to find its op.
    """

    def __setattr__(self, name: str, op: Any) -> None:  # the layers above fill the table by name
        object.__setattr__(self, name, op)

    def __getattr__(self, name: str) -> Any:  # only for a name nobody has filled in
        raise AttributeError(f"the table of ops has no {name!r}: the package fills it in on import (import shardarray)")


#: the ops the methods of ``ShardArray`` call (see ``OpTable``)
OPS = OpTable()


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

    __slots__ = (
        *("__weakref__", "_layout", "_node", "_resolved", "_shards", "dtype", "host_range", "mesh", "pending"),
        "_copy_of",  # (a positional basic index's result only: ``copies.mark``'s (expression, source); else unset)
    )
    __array_priority__ = 100
    #: whether arrays of this class are positional (``shardarray.array_api``'s ``Array``: NumPy's broadcasting
    #: and indexing) rather than named; kept by gradients, optimizers, resharding and checkpoints
    positional = False

    def __init__(
        self, mesh: Mesh, layout: Layout, dtype: Any, shards: Sequence[Any], pending: tuple[str, ...] = ()
    ) -> None:
        self.mesh = mesh
        self._layout = layout
        self.dtype = np.dtype(dtype)
        self._shards = shards if type(shards) is ClassList else tuple(shards)  # meta: per-class
        self.pending: tuple[str, ...] = pending
        self._node: Any = None  # set by the autograd tape while value_and_grad records
        self._resolved: Any = None  # (target axes, resolved array): a pending sum is reduced once
        # (min, max) of an integer array known on the host where it was made (sa.asarray of host data), else
        # None; lets id range checks (sa.take) skip a device-to-host transfer
        self.host_range: tuple[int, int] | None = None
        if profiler.ACTIVE:
            profiler.on_array(self)

    @classmethod
    def _trusted(
        cls, mesh: Mesh, layout: Layout, dtype: np.dtype, shards: Sequence[Any], pending: tuple[str, ...] = ()
    ) -> ShardArray:
        """A ShardArray from parts already validated (a dispatch plan's layout, a ``np.dtype``, mesh-ordered
        ``pending``): ``__init__`` without the conversions, for the ops' hot paths."""
        self = cls.__new__(cls)
        self.mesh = mesh
        self._layout = layout
        self.dtype = dtype
        self._shards = shards if type(shards) is ClassList else tuple(shards)  # meta: per-class
        self.pending = pending
        self._node = None
        self._resolved = None
        self.host_range = None
        if profiler.ACTIVE:
            profiler.on_array(self)
        return self

    # ------------------------------------------------------------- shards
    @property
    def shards(self) -> Any:
        """The per-device blocks (one per mesh device; ``None`` on devices of other processes under MPI).

        Reading them from an array being differentiated, outside an op that is recorded on the tape, raises
        ``TapeError``: whatever is computed from them would be a constant, and its gradient silently zero. Every
        op reads its inputs' shards inside the op mechanism (``core.tape.differentiable``), which allows it.
        """
        node = self._node
        if node is not None:  # (Tape.recording and Tape.elsewhere inlined: this is every op's hot path)
            tape = node.tape
            owner = tape.owner
            if (owner is not None and owner != get_ident()) or (not tape.paused and tape.current.get() is tape):
                _untracked_read(self)
        return self._shards

    @shards.setter
    def shards(self, value: Any) -> None:
        """Every in-place write ends here (``x[...] = v``, ``x += y``, ``out=``, ``np.add.at``, ``.flat``, ...): a
        write into a positional basic index's copy is watched for being lost (``copies.written``)."""
        self._shards = value
        copies.written(self)

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
    def itemsize(self) -> int:
        """Bytes per element, as NumPy's ``ndarray.itemsize``."""
        return int(self.dtype.itemsize)

    @property
    def nbytes(self) -> int:
        """Bytes of the whole array (``size * itemsize``, the global figure as NumPy's and JAX's ``nbytes``; a
        device holds ``nbytes_per_device``). Nothing is gathered."""
        return math.prod(self._layout.sizes) * int(self.dtype.itemsize)

    @property
    def nbytes_per_device(self) -> int:
        """Largest shard in bytes (the device holding the biggest block)."""
        return max(int(math.prod(s.shape)) for s in self.shards if s is not None) * self.dtype.itemsize

    def __repr__(self) -> str:
        """Values, dims, dtype, layout and mesh of a small array (an explicit gather, see ``ops.show.array_repr``);
        a summary of a large one."""
        if self.mesh.deferred:  # as numpy(): reported here, where the values gather would otherwise swallow it
            self.mesh.report_deferred()
        return OPS.array_repr(self)

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """Pickling (``pickle``, ``multiprocessing``, ``joblib``, ``copy``'s fallbacks): the array of a mesh that
        lives in this process (``comm="emulated"``: NumPy, CuPy or meta shards), rebuilt on an equal mesh with
        the same layout, pending sum, dtype and kind (a positional array stays positional).

        Each distinct block is written once, as a NumPy array (a CuPy block is copied to the host, then back
        onto its device when loaded); replicas share it. The autograd tape is not pickled. An array of an MPI
        or NCCL mesh, whose blocks live in other processes or GPUs' communicators, raises ``BackendError``:
        save it with ``sa.checkpoint.save`` (each process writes its blocks) or pickle ``x.numpy()`` (a gather).

        Example (2×2 mesh):
            >>> import pickle
            >>> x = sa.asarray(np.arange(6.0), dims=("i",), mesh=sa.Mesh({"row": 2, "col": 2}), layout={"i": "row"})
            >>> y = pickle.loads(pickle.dumps(x))
            >>> y.layout, y.numpy()
            ({'i': ('row',)}, array([0., 1., 2., 3., 4., 5.]))
        """
        mesh = self.mesh
        if mesh.comm_kind != "emulated":
            raise BackendError(
                f"the array {self.sizes} lives on {mesh} (comm={mesh.comm_kind!r}): its blocks are in other "
                f"processes or GPUs, so it is not pickled. Save it with sa.checkpoint.save(path, tree) (each process "
                f"writes its own blocks) and load it with sa.checkpoint.load, or pickle x.numpy() (a gather)"
            )
        backend = mesh.backend
        host: dict[int, Any] = {}  # id(block) -> the block on the host, so that replicas are written once
        blocks = []
        for b in self._shards:
            if id(b) not in host:
                host[id(b)] = b if not backend.has_data else backend.to_numpy(b)
            blocks.append(host[id(b)])
        return _unpickle, (type(self), mesh, self._layout, self.dtype, blocks, self.pending)

    def __copy__(self) -> ShardArray:
        """A new array of the same value, kind, layout and autograd identity. It shares the blocks: no op writes a
        block in place (``x[idx] = v`` replaces its own array's blocks), so the copy and ``self`` stay
        independent, as NumPy's copies are."""
        out = type(self)._trusted(self.mesh, self._layout, self.dtype, self._shards, self.pending)
        out._node, out.host_range = self._node, self.host_range
        return out

    def __deepcopy__(self, memo: dict[int, Any]) -> ShardArray:
        """As ``__copy__`` (the blocks are never written in place, so sharing them is a deep copy's meaning), on
        the same mesh: ``copy.deepcopy`` of a parameter tree or an xarray object works and moves no data."""
        return self.__copy__()

    def __len__(self) -> int:
        """The size of the first dim (``len(x) == x.shape[0]``); a 0-d array has no length."""
        if not self.dims:
            raise ZeroDimError(
                f"len() of a 0-d ShardArray ({self.dtype}) is undefined: it has no dims. "
                f"Use x.item() or float(x) for its value"
            )
        return self.shape[0]

    def __contains__(self, value: Any) -> bool:
        """``value in x``: whether any element equals ``value``, NumPy's ``(x == value).any()`` (one allreduce),
        for every shape: a 0-d array included, and no iteration over rows."""
        return bool((self == value).any())

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
        mesh = self.mesh
        backend = mesh.backend
        if not backend.has_data:
            backend.to_numpy(None)  # raises BackendError with the explanation
        if mesh.deferred:  # checks ops left on the devices (sa.take's id range): read and raised here, once
            mesh.report_deferred()
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
        """``np.asarray(x)``: the explicit gather, a new NumPy array (``copy=False`` raises: it needs a copy)."""
        if copy is False:
            raise ArgumentError(
                f"np.asarray(x, copy=False): {self._describe()} is distributed over the mesh, so a NumPy array of it "
                f"is always a copy (a gather); use np.asarray(x) or copy=None"
            )
        self._check_off_tape("np.asarray(x)")
        host_reads.warn_if_numpy_reads(self._describe(), self.nbytes, any(self._layout.axes) or bool(self.pending))
        out = self.numpy()
        return out if dtype is None else out.astype(dtype)

    def _scalar(self, what: str) -> Any:
        """The single value as a NumPy scalar, after checking (without communication) that there is one (any
        one-element array has one, as in PyTorch: ``float(x)`` of a ``(1,)`` array, which NumPy 2 refuses)."""
        self._check_off_tape(what)
        if self.size != 1:
            raise DimensionError(
                f"{what} needs an array of exactly one element; got {self._describe()} with {self.size} elements. "
                f"Reduce it first (x.sum(), x.mean(), x.max()) or pick one element (x.numpy()[...])"
            )
        return self.numpy().reshape(()).item()

    def item(self, *args: Any) -> Any:
        """One element as a Python scalar, as ``numpy.ndarray.item`` (a collective under MPI if split).

        ``x.item()``: the single value of a size-1 array; ``x.item(i)``: element ``i`` of the flattened array (the
        dims in order, C order; negative from the end); ``x.item(i, j)`` or ``x.item((i, j))``: the element at that
        index, one per dim. Only that element moves: an ``isel``, then a read of one value.

        Example:
            >>> x = sa.asarray(np.arange(6.0).reshape(2, 3), dims=("a", "b"), mesh=sa.Mesh({"row": 2, "col": 2}))
            >>> x.item(4), x.item(1, -1), x.item((0, 1))
            (4.0, 5.0, 1.0)

        Raises:
            DimensionError: no index and more than one element, or an index out of range or of the wrong length.
        """
        if not args:
            return self._scalar("item()")
        index = args[0] if len(args) == 1 and isinstance(args[0], tuple) else args
        what = f"item{tuple(index)!r}" if len(index) != 1 else f"item({index[0]!r})"
        try:
            ids = [operator.index(i) for i in index]
        except TypeError:
            raise DTypeError(f"{what}: the index must be integers; got {index!r}") from None
        shape = self.shape
        if len(ids) == 1 and self.ndim != 1:  # a flat index
            n = math.prod(shape)
            if not -n <= ids[0] < n:
                raise OutOfBoundsError(f"{what}: index {ids[0]} is out of range for {self._describe()} ({n} elements)")
            ids = [int(i) for i in np.unravel_index(ids[0] % n, shape)]
        elif len(ids) != self.ndim:
            raise DimensionError(
                f"{what}: {self._describe()} has {self.ndim} dims; give one index per dim or one flat index"
            )
        for d, i, n in zip(self.dims, ids, shape):
            if not -n <= i < n:
                raise OutOfBoundsError(f"{what}: index {i} is out of range for dim {d!r} of size {n}")
        return self.isel({d: i % n for d, i, n in zip(self.dims, ids, shape)})._scalar(what)

    def __float__(self) -> float:
        self._check_real("float(x)")
        return float(self._scalar("float(x)"))

    def __int__(self) -> int:
        self._check_real("int(x)")
        return int(self._scalar("int(x)"))

    def _check_real(self, what: str) -> None:
        """Refuse a complex array where a real number is asked for (``DTypeError``, NumPy's TypeError)."""
        if self.dtype.kind == "c":
            raise DTypeError(
                f"{what} of {self._describe()}: a complex value has no real conversion; take x.real, abs(x) or "
                f"complex(x)"
            )

    def __index__(self) -> int:
        if self.dtype.kind not in "iu":  # (bools too, as NumPy 2 and the array API standard refuse them)
            raise DTypeError(
                f"only integer arrays can be used as an index; got {self._describe()}. Use int(x) to convert"
            )
        return int(self._scalar("operator.index(x)"))

    def __bool__(self) -> bool:
        return bool(self._scalar("bool(x)"))

    def __complex__(self) -> complex:
        return complex(self._scalar("complex(x)"))

    def __format__(self, spec: str) -> str:
        """``f"{loss:.3f}"`` formats the value of a one-element array; other arrays format as their repr with an
        empty spec, and refuse any other spec (``DTypeError``, a ``TypeError``, as ``numpy.ndarray.__format__``)."""
        if spec and self.size == 1:
            return format(self._scalar(f"format(x, {spec!r})"), spec)
        if spec:
            raise DTypeError(
                f"format(x, {spec!r}): a format spec applies to one value, and {self._describe()} has {self.size} "
                f"elements; format one element (x.item(i)) or x.numpy() with np.array2string"
            )
        return repr(self)

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
        return OPS.relayout(self, layout)

    def resolve(self, layout: Mapping[str, AxesSpec] | None = None) -> ShardArray:
        """Resolve a pending sum now (allreduce, or reduce-scatter into ``layout``).

        Without ``layout`` the array keeps its own layout and the pending axes
        are allreduced; with one it is the same as ``relayout(layout)``. The
        result is a new array object (its blocks shared, as every copy's), so a
        write into it leaves ``self`` (whose resolution is kept) as it was.
        """
        return OPS.resolve_to(self, layout).__copy__()

    def rename(self, names: Mapping[str, str]) -> ShardArray:
        """New dim names ``{old: new}``; layout, values and shards unchanged."""
        return OPS.rename(self, names)

    def transpose(self, *dims: str) -> ShardArray:
        """Reorder the dims (no communication); no argument reverses them."""
        return OPS.transpose(self, dims)

    def astype(self, dtype: Any, *, copy: bool = True) -> ShardArray:
        """Cast every shard (a pending sum is resolved first).

        As NumPy's ``astype``, the result is a new array unless ``copy=False`` and ``dtype`` is already the
        array's: a write into it (``y[...] = v``) leaves ``self`` as it was.
        """
        out = OPS.astype(self, dtype)
        return out.__copy__() if copy and out is self else out

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
        return OPS.sum(x, dims)

    def mean(self, dims: Any = None, *, axis: Any = None, dtype: Any = None, out: Any = None) -> ShardArray:
        """Mean over ``dims`` (names, positions, or all)."""
        x, dims = self._reduce_args("mean", dims, axis, dtype, out)
        return OPS.mean(x, dims)

    def max(self, dims: Any = None, *, axis: Any = None, out: Any = None) -> ShardArray:
        """Maximum over ``dims`` (max-allreduce across split dims)."""
        x, dims = self._reduce_args("max", dims, axis, None, out)
        return OPS.max(x, dims)

    def min(self, dims: Any = None, *, axis: Any = None, out: Any = None) -> ShardArray:
        """Minimum over ``dims`` (min-allreduce across split dims)."""
        x, dims = self._reduce_args("min", dims, axis, None, out)
        return OPS.min(x, dims)

    # ------------------------------------------------------------- arithmetic
    def __add__(self, other: Any) -> ShardArray:
        return OPS.add(self, other)

    def __radd__(self, other: Any) -> ShardArray:
        return OPS.add(other, self)

    def __sub__(self, other: Any) -> ShardArray:
        return OPS.subtract(self, other)

    def __rsub__(self, other: Any) -> ShardArray:
        return OPS.subtract(other, self)

    def __mul__(self, other: Any) -> ShardArray:
        return OPS.multiply(self, other)

    def __rmul__(self, other: Any) -> ShardArray:
        return OPS.multiply(other, self)

    def __truediv__(self, other: Any) -> ShardArray:
        return OPS.divide(self, other)

    def __rtruediv__(self, other: Any) -> ShardArray:
        return OPS.divide(other, self)

    def __pow__(self, other: Any) -> ShardArray:
        return OPS.power(self, other)

    def __rpow__(self, other: Any) -> ShardArray:
        return OPS.power(other, self)

    def __neg__(self) -> ShardArray:
        return OPS.negative(self)

    def __pos__(self) -> ShardArray:
        """``+x``: a new array of the same value (``sa.positive``; refused for bool arrays, as NumPy's)."""
        return OPS.positive(self)

    def __gt__(self, other: Any) -> ShardArray:
        return OPS.greater(self, other)

    def __ge__(self, other: Any) -> ShardArray:
        return OPS.greater_equal(self, other)

    def __lt__(self, other: Any) -> ShardArray:
        return OPS.less(self, other)

    def __le__(self, other: Any) -> ShardArray:
        return OPS.less_equal(self, other)

    def __eq__(self, other: Any) -> ShardArray:  # type: ignore[override]  # elementwise, as NumPy's ==
        return OPS.equal(self, other)

    def __ne__(self, other: Any) -> ShardArray:  # type: ignore[override]  # elementwise, as NumPy's !=
        return OPS.not_equal(self, other)

    __hash__ = object.__hash__

    # ------------------------------------------------------------- more operators
    # (no __iadd__ etc.: ``x += y`` falls back to ``x = x + y``, a new array, since arrays are immutable)
    def __floordiv__(self, other: Any) -> ShardArray:
        return OPS.floor_divide(self, other)

    def __rfloordiv__(self, other: Any) -> ShardArray:
        return OPS.floor_divide(other, self)

    def __mod__(self, other: Any) -> ShardArray:
        return OPS.remainder(self, other)

    def __rmod__(self, other: Any) -> ShardArray:
        return OPS.remainder(other, self)

    def __and__(self, other: Any) -> ShardArray:
        return OPS.bitwise_and(self, other)

    def __rand__(self, other: Any) -> ShardArray:
        return OPS.bitwise_and(other, self)

    def __or__(self, other: Any) -> ShardArray:
        return OPS.bitwise_or(self, other)

    def __ror__(self, other: Any) -> ShardArray:
        return OPS.bitwise_or(other, self)

    def __xor__(self, other: Any) -> ShardArray:
        return OPS.bitwise_xor(self, other)

    def __rxor__(self, other: Any) -> ShardArray:
        return OPS.bitwise_xor(other, self)

    def __lshift__(self, other: Any) -> ShardArray:
        return OPS.bitwise_left_shift(self, other)

    def __rlshift__(self, other: Any) -> ShardArray:
        return OPS.bitwise_left_shift(other, self)

    def __rshift__(self, other: Any) -> ShardArray:
        return OPS.bitwise_right_shift(self, other)

    def __rrshift__(self, other: Any) -> ShardArray:
        return OPS.bitwise_right_shift(other, self)

    def __invert__(self) -> ShardArray:
        return OPS.bitwise_invert(self)

    def __abs__(self) -> ShardArray:
        return OPS.abs(self)

    def __matmul__(self, other: Any) -> ShardArray:
        """``x @ y`` is ``sa.einsum(x, y)``: contracts the dims the two share (named, not positional)."""
        return OPS.matmul(self, other)

    def __rmatmul__(self, other: Any) -> ShardArray:
        return OPS.matmul(other, self)

    def prod(self, dims: Any = None, *, axis: Any = None, dtype: Any = None, out: Any = None) -> ShardArray:
        """Product over ``dims`` (names, positions, or all); see ``sa.prod``."""
        x, dims = self._reduce_args("prod", dims, axis, dtype, out)
        return OPS.prod(x, dims)

    def var(
        self, dims: Any = None, *, axis: Any = None, correction: float = 0.0, ddof: float | None = None, out: Any = None
    ) -> ShardArray:
        """Variance over ``dims`` (``ddof`` is NumPy's name for ``correction``); see ``sa.var``."""
        x, dims = self._reduce_args("var", dims, axis, None, out)
        return OPS.var(x, dims, correction if ddof is None else ddof)

    def std(
        self, dims: Any = None, *, axis: Any = None, correction: float = 0.0, ddof: float | None = None, out: Any = None
    ) -> ShardArray:
        """Standard deviation over ``dims`` (``ddof`` is NumPy's name for ``correction``); see ``sa.std``."""
        x, dims = self._reduce_args("std", dims, axis, None, out)
        return OPS.std(x, dims, correction if ddof is None else ddof)

    def all(self, dims: Any = None, *, axis: Any = None, out: Any = None) -> ShardArray:
        """Whether all elements over ``dims`` are true; see ``sa.all``."""
        x, dims = self._reduce_args("all", dims, axis, None, out)
        return OPS.all(x, dims)

    def any(self, dims: Any = None, *, axis: Any = None, out: Any = None) -> ShardArray:
        """Whether any element over ``dims`` is true; see ``sa.any``."""
        x, dims = self._reduce_args("any", dims, axis, None, out)
        return OPS.any(x, dims)

    # ------------------------------------------------------------- indexing
    def isel(self, indexers: Mapping[str, Any] | None = None, /, **dims: Any) -> ShardArray:
        """Select along named dims: ints drop a dim, slices keep it, integer ids pick; see ``sa.isel``.

        Example:
            >>> x = sa.zeros(sa.Mesh({"row": 2, "col": 2}), {"batch": 8, "seq": 4}, layout={"batch": "row"})
            >>> x.isel(batch=slice(0, 4), seq=3).sizes
            {'batch': 4}
        """
        return OPS.isel(self, indexers, **dims)

    def __getitem__(self, key: Any) -> ShardArray:
        """``x[{"batch": slice(0, 4), "seq": 3}]`` by name, or ``x[0:4, 3]`` by position (NumPy rules).

        Slices of split dims rebalance into the canonical layout (one alltoallv), an int of a split dim
        broadcasts its row, integer ids are ``sa.take``; ``None`` adds a size-1 dim ``"new{k}"``.
        """
        return OPS.getitem(self, key)

    def __setitem__(self, key: Any, value: Any) -> None:
        """``x[idx] = v`` in place (ints and slices; v a scalar or a ShardArray); see ``ops/indexing/setitem.py``."""
        OPS.setitem(self, key, value)

    # ------------------------------------------------------------- manipulation
    def split_dim(self, dim: Any, sizes: Mapping[str, int]) -> ShardArray:
        """Split ``dim`` into the dims of ``sizes`` (``{name: size}``, major first, one may be -1): ``sa.split_dim``.

        A split dim keeps its mesh axes on the first new dim, with no collective when the blocks allow.

        Example:
            >>> x = sa.zeros(sa.Mesh({"row": 2, "col": 2}), {"batch": 2, "hidden": 8}, layout={"hidden": "col"})
            >>> x.split_dim("hidden", {"heads": 2, "d_kv": 4}).layout
            {'heads': ('col',)}
        """
        return OPS.split_dim(self, dim, sizes)

    def merge_dims(self, dims: Sequence[Any], new: str) -> ShardArray:
        """Merge ``dims`` (major first) into one dim ``new``; see ``sa.merge_dims``.

        Example:
            >>> x = sa.zeros(sa.Mesh({"row": 2, "col": 2}), {"heads": 2, "d_kv": 4}, layout={"heads": "col"})
            >>> x.merge_dims(("heads", "d_kv"), "hidden").layout
            {'hidden': ('col',)}
        """
        return OPS.merge_dims(self, dims, new)

    def squeeze(self, dims: Any = None) -> ShardArray:
        """Drop size-1 ``dims`` (all size-1 dims when None); see ``sa.squeeze``."""
        return OPS.squeeze(self, dims)

    def expand_dims(self, dim: str, position: int = 0) -> ShardArray:
        """Add an unsplit size-1 dim ``dim`` at ``position``; see ``sa.expand_dims``."""
        return OPS.expand_dims(self, dim, position)

    def argmax(self, dim: Any = None) -> ShardArray:
        """Index (int64) of the largest value along ``dim``; one allgather of (value, index) pairs if it is split."""
        return OPS.argmax(self, dim)

    def argmin(self, dim: Any = None) -> ShardArray:
        """Index (int64) of the smallest value along ``dim``; one allgather of (value, index) pairs if it is split."""
        return OPS.argmin(self, dim)

    # ------------------------------------------------------------- protocols
    def __array_namespace__(self, /, *, api_version: str | None = None) -> Any:
        """The array API namespace, ``shardarray.array_api`` (positional: axis ``i`` is the ``i``-th dim)."""
        return OPS.array_namespace(api_version)

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        """NumPy ufuncs return ShardArrays: ``np.exp(x)`` is ``sa.exp(x)``; one without a counterpart raises
        TypeError (never a silent gather). See ``shardarray.numpy_protocol``."""
        return OPS.array_ufunc(ufunc, method, *inputs, **kwargs)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        """NumPy functions with a counterpart return ShardArrays (``np.sum(x, axis=0)``, ``np.concatenate``...);
        others raise TypeError. ``np.asarray(x)`` stays the explicit gather. See ``shardarray.numpy_protocol``."""
        return OPS.array_function(func, types, args, kwargs)

    def __iter__(self) -> Any:
        """Iterate over the first dim: yields ``x[{dim: i}]`` (each a ShardArray without that dim).

        Each step is an indexing op (see ``ShardArray.__getitem__`` for its traffic on a split dim).
        """
        return OPS.iterate(self)

    def __round__(self, ndigits: int | None = None) -> ShardArray:
        """``round(x)`` / ``round(x, 2)``: elementwise rounding (half to even, as NumPy), a new ShardArray."""
        return OPS.round_array(self, ndigits)

    @property
    def flat(self) -> FlatIndexer:
        """NumPy's ``x.flat``: the elements in row-major order of the dims, indexed as a 1-D array.

        ``x.flat[k]`` reads ``np.ravel(x)[k]`` (a distributed reshape, then the indexing op) and
        ``x.flat[k] = v`` writes in place through ``np.put(x, k, v)`` (``k`` an integer, a slice, a list, a host
        or distributed integer array), so ``x`` changes as NumPy's does. A copy, not NumPy's iterator object over
        the memory: ``len`` and iteration are those of ``np.ravel(x)``. For positional (``shardarray.array_api``)
        arrays; a named array has no ``np.ravel`` (NumPy's TypeError: merge its dims with ``merge_dims``).
        """
        return FlatIndexer(self)


class FlatIndexer:
    """``x.flat`` (``ShardArray.flat``): reads through ``np.ravel(x)``, writes in place through ``np.put``."""

    def __init__(self, base: ShardArray) -> None:
        self.base = base

    def __getitem__(self, key: Any) -> Any:
        return np.ravel(self.base)[key]

    def __setitem__(self, key: Any, value: Any) -> None:
        """``x.flat[key] = value``: a boolean ``key`` (host or distributed) is a mask of ``x.size`` entries, as
        NumPy's (its positions, ``np.flatnonzero``: a distributed one on the mesh, no gather); other keys are
        positions (``np.put``).

        Raises:
            OutOfBoundsError: a boolean key that is not 1-D of ``x.size`` entries (NumPy's IndexError).
        """
        if isinstance(key, slice):  # the positions it names (only those: no host array of the whole size)
            key = np.arange(*key.indices(self.base.size))
        elif (key.dtype if isinstance(key, ShardArray) else np.asarray(key).dtype) == np.bool_:
            shape = tuple(key.shape) if isinstance(key, ShardArray) else np.shape(key)
            if shape != (self.base.size,):
                raise OutOfBoundsError(
                    f"x.flat[mask] = v: the boolean mask of shape {shape} does not match the flat array of "
                    f"{self.base.size} entries (x of shape {self.base.shape}); give a 1-D mask of {self.base.size}"
                )
            key = np.flatnonzero(key)
        np.put(self.base, key, value)  # type: ignore[arg-type]

    def __len__(self) -> int:
        return self.base.size

    def __iter__(self) -> Any:
        return iter(np.ravel(self.base))


profiler.ARRAY_TYPES = (ShardArray,)  # the profiler counts the memory of these (it sits below this module)


def _unpickle(
    kind: type[ShardArray], mesh: Mesh, layout: Layout, dtype: Any, blocks: list[Any], pending: tuple[str, ...]
) -> ShardArray:
    """A pickled array (``ShardArray.__reduce__``) rebuilt: each distinct block onto its device once."""
    backend = mesh.backend
    if backend.has_data:
        placed: dict[int, Any] = {}
        shards = []
        for d, b in enumerate(blocks):
            if id(b) not in placed:
                with backend.scope(d):
                    placed[id(b)] = backend.from_numpy(b)
            shards.append(placed[id(b)])
        blocks = shards
    return kind(mesh, layout, dtype, blocks, pending)


def like_kind(out: ShardArray, ref: Any) -> ShardArray:
    """``out`` as an array of ``ref``'s kind: positional (``shardarray.array_api``'s ``Array``) when ``ref`` is one,
    named otherwise. The same data and tape node; a non-array ``ref`` leaves ``out`` as it is.

    Functions that return arrays derived from their inputs' values (gradients, optimizer updates, clipping,
    loss scaling, resharding) use it, so a positional array never comes back named, where ``+`` would broadcast
    by dim name and ``@`` contract every matching name.
    """
    if type(ref) is type(out) or not isinstance(ref, ShardArray):
        return out
    return as_kind(out, type(ref))


def as_kind(out: ShardArray, kind: type[ShardArray]) -> ShardArray:
    """``out`` as an instance of ``kind`` (``ShardArray`` or a subclass): the same blocks, cached values and tape
    node, so it is the same array to the autograd, seen named or positionally."""
    y = kind.__new__(kind)  # (no __init__: the parts are out's, already checked; this runs for every op of a kind)
    y.mesh, y._layout, y.dtype, y._shards, y.pending = out.mesh, out._layout, out.dtype, out._shards, out.pending
    y._node, y.host_range, y._resolved = out._node, out.host_range, out._resolved
    if profiler.ACTIVE:
        profiler.on_array(y)
    return y


def _untracked_read(x: ShardArray) -> None:
    """Raise ``TapeError`` for a read of a traced array's shards by code the tape does not record, naming the
    outermost function of the package on the call stack (the public op the user called)."""

    def ours(f: Any) -> bool:
        module = f.f_globals.get("__name__", "")
        return bool(module == "shardarray" or module.startswith("shardarray."))

    frame: FrameType | None = sys._getframe(2)  # the function that read .shards
    if frame is not None and not ours(frame):
        where = f"the function {frame.f_code.co_name!r}"  # code outside the package
    else:
        op = None
        while frame is not None and ours(frame):  # the outermost frame of the package: the op the user called
            name = frame.f_code.co_name
            module = frame.f_globals.get("__name__", "")
            if name in ("__array_function__", "__array_ufunc__"):  # NumPy's function or ufunc, as the user named it
                func = frame.f_locals.get("func", frame.f_locals.get("ufunc"))
                space = {"numpy.linalg": "np.linalg.", "numpy.fft": "np.fft."}.get(
                    getattr(func, "__module__", ""), "np."
                )
                op = f"{space}{getattr(func, '__name__', name)}"
            elif module != "shardarray.core.tape":  # (the tape's wrappers and runners are not the op)
                op = name
            frame = frame.f_back
        where = f"sa op {op!r}" if op else "an op"
    node = x._node
    if node is not None and node.tape.elsewhere():
        raise TapeError(
            f"{where} was given {x._describe()} in the thread {threading.current_thread().name!r}, while another "
            f"thread differentiates it (sa.value_and_grad/grad/vjp): the tape records the thread that called it "
            f"only, so this computation would be a constant with a silently zero gradient. Compute the loss in the "
            f"thread that calls value_and_grad (or call value_and_grad inside the worker thread)"
        )
    raise TapeError(
        f"{where} was given {x._describe()}, which is being differentiated (inside sa.value_and_grad/grad/vjp), "
        f"but it has no gradient rule: its result would be a constant and the gradient silently zero. Use ops "
        f"that are differentiable here, or pass sa.stop_gradient(x) to treat the value as a constant"
    )
