"""The MPI Communicator: SPMD, one process per mesh device (``sa.Mesh(shape, comm="mpi")``).

Run a script under ``mpiexec -n <mesh size>`` (or ``srun``): process ``rank``
owns device ``rank`` of the mesh and holds only that shard; the shard lists the
ops pass around have ``None`` for the other devices. Each axis group is an
``MPI.Comm.Split`` of ``COMM_WORLD`` made once and cached, with members ranked
by their position along the axes, so ``root`` means the same member as on an
emulated mesh. Data moves with buffer-based calls (``Allreduce``,
``Allgatherv``, ``Reduce_scatter``, ``Alltoallv``, ``Bcast``, ``Reduce``) on
contiguous NumPy buffers; only small shape tuples travel pickled. float16 is
reduced in float32 (MPI has no half-precision sum). bfloat16, which MPI has
no type for, moves as 16-bit payloads (the data-moving collectives send raw
bytes: 2 per element); its reductions (sum, max, min: ``Allreduce``,
``Reduce_scatter``, ``Reduce``) upcast to float32, reduce as float32 (4 bytes
per element on the wire) and round the result to bfloat16 once.

No process hangs when another fails: an uncaught exception on any rank aborts
the whole job (``MPI.COMM_WORLD.Abort``), a rank that exits while others wait
for it ends the job. Every collective first compares the job's header over
``COMM_WORLD`` (one small allgather: the collective and a digest of the
outermost op that issued it with its host arguments, ``comm.header.exchange_header``),
so processes that an argument sent different ways raise ``CommError`` instead
of waiting in different collectives, and an op that fails on some processes only
is told to the others there (``comm.header.fail_together``; ``job_header``).
Every array made is compared over the job (global
sizes, dtype: ``check_array``) and every collective's group compares a small
header (op, dtype, block shape, root, and a crc of the host arguments an op
noted to agree on, e.g. ``top_k``'s ``k``: ``comm.notes.note``) before its data
moves, so processes that disagree raise ``CommError`` instead of crashing MPI
("Message truncated") or mixing their blocks; ``SHARDARRAY_CHECK_SPMD=1`` also
compares every collective's op, axes, dtype and block shapes, and the host
arguments of the ops run since the last collective, over the whole job
(``comm.spmd``).
Converting a replicated array (``float(loss)``) needs no communication.

Shards must be NumPy arrays (``backend="numpy"``); GPU shards across processes
go through NCCL (``NcclCommunicator``).
"""

from __future__ import annotations

import functools
import math
import numbers
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any, TypeVar, cast

import numpy as np

from ..backend import host_buffers as buffers
from ..chunks import group_chunk
from ..dtypes import BFLOAT16
from ..errors import BackendError, CommError, MeshError
from .agree import blocks_extra, creation_extra, enter
from .base import REDUCE_OPS, Communicator
from .job import _State, settle
from .log import _ACTIVE, record
from .notes import notes_mismatch, take_agreed
from .watchdog import leave, start_watchdog

_F = TypeVar("_F", bound=Callable[..., Any])


def collective(fn: _F) -> _F:
    """``fn`` (a collective of the job) marks its end for the deadlock check (``comm.watchdog.leave``): a process
    counts as waiting in its last collective only while inside it. An error raised after its header passed (the
    others may be inside its data movement with this process, where no header reaches them) is not told to the
    others at the end of the op (``comm.job.settle``): it ends the job uncaught, or the watchdog does."""

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        before = _State.seq
        try:
            return fn(*args, **kwargs)
        except Exception as e:
            if _State.inflight > before:  # (its header passed: the others may be moving its data with this process)
                settle(e)  # (not told at the op's end, ``comm.header.fail_together``: the watchdog ends such a job)
            raise
        finally:
            leave()

    return cast("_F", run)


def _mpi() -> Any:
    try:
        from mpi4py import MPI
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError(
            "sa.Mesh(..., comm='mpi') needs mpi4py and an MPI library: pip install 'shardarray[mpi]' "
            "(mpi4py and the mpich wheel), then run the script under mpiexec -n <mesh size>"
        ) from e
    return MPI


def contiguous(x: Any, dtype: Any = None) -> np.ndarray:
    """``x`` as a C-contiguous NumPy array of the same shape (``np.ascontiguousarray`` makes 0-d arrays 1-d); a
    copy, where one is needed, on a reused buffer (``backend.host_buffers``)."""
    a = np.asarray(x)
    dt = a.dtype if dtype is None else np.dtype(dtype)
    if a.dtype == dt and a.flags.c_contiguous:
        return a
    out = buffers.empty(a.shape, dt)
    np.copyto(out, a, casting="unsafe")
    return out


def one_buffer(pieces: Sequence[np.ndarray]) -> tuple[np.ndarray, list[int]] | None:
    """The one C-contiguous buffer that C-contiguous ``pieces`` all lie in, as bytes, and each piece's byte offset
    in it (the send buffer and displacements of an ``Alltoallv`` without a copy); None if there is none.

    Example:
        >>> base = np.arange(6.0)
        >>> buf, offsets = one_buffer([base[:2], base[2:5], base[5:]])
        >>> buf.nbytes, offsets
        (48, [0, 16, 40])
    """
    if not pieces:
        return None
    roots = []
    for p in pieces:
        r = p
        while isinstance(r.base, np.ndarray):
            r = r.base
        roots.append(r)
    root = roots[0]
    if any(r is not root for r in roots) or not root.flags.c_contiguous:
        return None
    if not all(p.flags.c_contiguous for p in pieces):
        return None
    start = root.__array_interface__["data"][0]
    offsets = [p.__array_interface__["data"][0] - start for p in pieces]
    if any(o < 0 or o + p.nbytes > root.nbytes for o, p in zip(offsets, pieces)):
        return None
    return root.reshape(-1).view(np.uint8), offsets


def _whole(sl: tuple[slice, ...], shape: tuple[int, ...]) -> bool:
    return all(len(range(*s.indices(n))) == n for s, n in zip(sl, shape))


@collective
def gather_blocks(
    world: Any, local: np.ndarray, slices: Sequence[tuple[slice, ...]], shape: tuple[int, ...], dtype: Any
) -> np.ndarray:
    """The global array on every rank from each rank's block (``slices[rank]``), with one Allgatherv.

    When every block is the whole array (a replicated array) this is the
    local block and no communication: every process, or only some, may call it.
    Otherwise it is a collective over the whole job, which first checks that
    every process converts an array of the same global shape and dtype, split
    into the same blocks (a digest of ``slices`` travels in the same check:
    processes that made the array with different layouts would otherwise
    assemble a scrambled one).
    """
    dtype = np.dtype(dtype)
    if all(_whole(sl, shape) for sl in slices):
        return np.array(local, dtype=dtype, copy=True).reshape(shape)
    local = contiguous(local, dtype=dtype)
    enter(world, "numpy", (), local, whole=tuple(shape), extra=blocks_extra(slices, shape), check=True)
    counts = [int(np.prod([len(range(*s.indices(n))) for s, n in zip(sl, shape)])) for sl in slices]
    flat = buffers.empty(sum(counts), dtype)
    world.Allgatherv(local.reshape(-1).view(np.uint8), [flat.view(np.uint8), [c * flat.itemsize for c in counts]])
    out = np.empty(shape, dtype=dtype)
    start = 0
    for sl, c in zip(slices, counts):
        out[sl] = flat[start : start + c].reshape(out[sl].shape)
        start += c
    return out


def mpi_world(mesh: Any) -> Any:
    """``MPI.COMM_WORLD`` after checking that the job has one process per mesh device.

    Also makes an uncaught exception on any rank, or a rank that exits while
    others wait for it, end the whole job (see ``comm.watchdog``).
    """
    MPI = _mpi()
    world = MPI.COMM_WORLD
    start_watchdog(world)
    if world.Get_size() != mesh.size:
        raise MeshError(
            f"a mesh with comm='mpi' needs one process per device: mesh {mesh.shape} has {mesh.size} devices but "
            f"the job has {world.Get_size()} process(es); run it as mpiexec -n {mesh.size} python <script>"
        )
    return world


def log_spmd(
    world: Any,
    op: str,
    axes: tuple[str, ...],
    n: int,
    local: Any,
    *,
    group: Sequence[int] | None = None,
    dim: int | None = None,
    check: bool = False,
    header: bool = True,
    root: int = -1,
) -> None:
    """Enter one collective of an SPMD job and record it: the largest buffer over every process.

    Entering counts it (so a process that exits without joining it ends the
    job instead of hanging it) and, with ``SHARDARRAY_CHECK_SPMD=1``, compares
    its signature over the job; ``group`` (this process's group, by rank) and
    ``dim`` (the array axis along which the members' blocks may differ)
    sharpen that check (see ``comm.agree.enter``). ``check`` compares, over the
    job, only that every process enters this collective now (its op and
    axes: ``MpiCommunicator._ready``). ``header``: compare the job's header first (``comm.header.exchange_header``:
    the collective and the outermost op that issued it, with its host arguments; False for NCCL's collectives).
    ``root``: a broadcast's or reduce's root (-1: none), compared with the collective.
    """
    if n > 1:
        extra = (f"root {root}", f"to/from root {root}") if root >= 0 else None
        enter(world, op, axes, local, group=group, dim=dim, extra=extra, check=check, order_only=True, header=header)
        if _ACTIVE:
            mine, most = np.array([local.size], dtype=np.int64), np.empty(1, dtype=np.int64)
            world.Allreduce(mine, most, op=_mpi().MAX)  # (a buffer call: mpi4py's object allreduce holds the GIL)
            size = int(most[0])
            record(op, axes, n, size, local.dtype.itemsize, str(local.dtype))


@collective
def check_array(
    world: Any,
    what: str,
    sizes: Mapping[str, int],
    dtype: Any,
    *,
    layout: Any = None,
    values: Mapping[str, Any] | None = None,
    failure: BaseException | None = None,
) -> None:
    """Every process makes an array of these dims, sizes and dtype (and ``layout`` and ``values``, when given), or
    each raises ``CommError`` naming who differs (see ``Communicator.check_spmd``): one small allgather, always on. With
    ``failure`` (this process's error making the array) every process raises the lowest failing process's error
    (``comm.agree.enter``); the other arguments are then not compared."""
    dims = tuple(sizes)
    enter(
        world,
        f"{what} of dims {dims}",
        (),
        SimpleNamespace(dtype=np.dtype(dtype) if dtype is not None else "?"),
        whole=tuple(int(sizes[d]) for d in dims),
        extra=creation_extra(layout, values),
        check=True,
        failure=failure,
    )


#: the collectives' codes in the header (``MpiCommunicator._agree``)
_OPS = ("allreduce", "allgather", "reduce_scatter", "alltoall", "broadcast", "reduce", "alltoallv")
#: int64s in a header: op, dtype, ndim, up to 8 dims (a ninth and later dims are not compared), a crc32 of the
#: host arguments noted to agree on since the last comparison (``comm.notes.note``; 0: none), then the root
#: (broadcast, reduce; else -1)
HEADER = 13
_DIMS = HEADER - 5  # dims in a header
_DTYPE_NAMES: dict[int, str] = {}  # code -> name, for the messages (every dtype a shard can have is listed)


def _dtype_code(dtype: np.dtype) -> int:
    name = dtype.name
    code = zlib.crc32(name.encode())
    _DTYPE_NAMES.setdefault(code, name)
    return code


for _dt in (
    BFLOAT16,
    *map(np.dtype, "bool int8 int16 int32 int64 uint8 uint16 uint32 uint64".split()),
    *map(np.dtype, "float16 float32 float64 complex64 complex128".split()),
):
    _dtype_code(_dt)


def _header(op: str, x: np.ndarray, root: int = -1, agreed: int = 0) -> np.ndarray:
    h = np.full(HEADER, -1, dtype=np.int64)
    h[0], h[1], h[2] = _OPS.index(op), _dtype_code(x.dtype), x.ndim
    shape = x.shape[:_DIMS]
    h[3 : 3 + len(shape)] = shape
    h[-2], h[-1] = agreed, root
    return h


def _describe_header(h: np.ndarray) -> str:
    op = _OPS[int(h[0])] if 0 <= h[0] < len(_OPS) else f"collective {int(h[0])}"
    dtype = _DTYPE_NAMES.get(int(h[1]), f"dtype #{int(h[1])}")
    shape = tuple(int(n) for n in h[3 : 3 + min(int(h[2]), _DIMS)])
    root = f" to/from root {int(h[-1])}" if h[-1] >= 0 else ""
    return f"{op}{root} of a {dtype} block of shape {shape}"


def reduce_op(op: str, dtype: Any = None) -> Any:
    """The MPI reduction for ``op`` (sum, max or min) of blocks of ``dtype``.

    Floating-point max and min are NumPy's ``maximum``/``minimum`` (``_nan_op``): MPI's MAX and MIN compare
    with ``<``, so a NaN survives or not depending on the order the operands meet in, and processes could even
    get different results, where NumPy's reduction (and the emulated mesh) gives NaN. Booleans reduce with
    ``LOR`` (sum and max: NumPy's ``True + True`` is ``True``) and ``LAND`` (min): MPI defines no SUM, MAX or
    MIN of ``C_BOOL``.
    """
    MPI = _mpi()
    ops = {"sum": MPI.SUM, "max": MPI.MAX, "min": MPI.MIN}
    if op not in ops:
        raise ValueError(f"unknown reduction {op!r}; one of {REDUCE_OPS}")
    if dtype is not None and np.dtype(dtype) == np.bool_:
        return MPI.LAND if op == "min" else MPI.LOR
    if op != "sum" and dtype is not None and np.dtype(dtype).kind in "fc":
        return _nan_op(op)
    return ops[op]


_NAN_OPS: dict[str, Any] = {}


def _nan_op(op: str) -> Any:
    """An MPI op of ``np.maximum`` (``op="max"``) or ``np.minimum``: NaN wins, whatever the order (commutative)."""
    got = _NAN_OPS.get(op)
    if got is None:
        from mpi4py.util.dtlib import to_numpy_dtype

        fn = np.maximum if op == "max" else np.minimum

        def combine(inbuf: Any, inoutbuf: Any, datatype: Any) -> None:
            dtype = to_numpy_dtype(datatype)
            acc = np.frombuffer(inoutbuf, dtype)
            fn(np.frombuffer(inbuf, dtype), acc, out=acc)

        got = _NAN_OPS[op] = _mpi().Op.Create(combine, commute=True)
    return got


def host_allreduce(world: Any, value: Any, op: str, header: bool = True) -> Any:
    """``op`` of a host scalar over ``world``, in one allgather, the same on every process: floats by NumPy's rules
    (a NaN anywhere gives NaN everywhere), sums in rank order. Entered first as a collective of the job
    (``comm.agree.enter``; ``header``: compare the job's header first, False for NCCL's).

    Not MPI's reduction of Python objects: mpi4py runs it holding the interpreter lock, so the watchdog
    (``comm.watchdog``) could not see a process stuck in it. A process out of step (in another collective of
    ``COMM_WORLD``) sends something that is no number: ``CommError``, not a NumPy error of the reduction.
    """
    enter(world, f"host_reduce({op})", (), np.asarray(value), header=header)
    if op not in REDUCE_OPS:
        raise ValueError(f"unknown reduction {op!r}; one of {REDUCE_OPS}")
    floating = isinstance(value, (float, np.floating))
    values = world.allgather(float(value) if floating else value)
    if not all(isinstance(v, (numbers.Real, np.bool_)) for v in values):
        kinds = sorted({type(v).__name__ for v in values})
        raise CommError(
            f"SPMD mismatch: a host {op} over the job received {kinds} from the processes where each sends a "
            f"number: a process is out of step, in another collective of COMM_WORLD. Every process must run the same "
            f"ops in the same order; look for an argument that differs between processes or an error that only "
            f"some of them raised and caught"
        )
    if floating and op != "sum":
        every = np.asarray(values, dtype=np.float64)
        return float(every.max() if op == "max" else every.min())
    if op == "sum":
        total = values[0]
        for v in values[1:]:
            total = total + v
        return total
    return max(values) if op == "max" else min(values)


#: (world, groups along some axes) -> (this process's sub-communicator, its position in it), for every mesh
_SUBS: dict[tuple[Any, tuple[tuple[int, ...], ...]], tuple[Any, int]] = {}


class MpiCommunicator(Communicator):
    """Collectives over MPI sub-communicators, one per axis group (see the module docstring)."""

    job_header = True  # every collective first compares the job's header over COMM_WORLD (``comm.header``)

    def __init__(self, mesh: Any) -> None:
        super().__init__(mesh)
        self.world = mpi_world(mesh)
        self.rank = self.world.Get_rank()
        if mesh.backend.name != "numpy":
            raise BackendError(
                f"comm='mpi' moves NumPy shards; got backend {mesh.backend.name!r}. "
                f"Use backend='numpy' (GPU shards across processes use NCCL)"
            )
        self._subs: dict[tuple[str, ...], tuple[Any, int]] = {}

    # ---------------------------------------------------------------- helpers
    def _sub(self, axes: tuple[str, ...]) -> tuple[Any, int]:
        """``(communicator of this rank's group along axes, this rank's position in it)``.

        The sub-communicators are shared by every mesh whose groups along ``axes`` are the same processes
        (``_SUBS``): a program that makes a mesh per step would otherwise split a new one each time, and MPI
        runs out of them after about 2,000 (the split is collective, so they cannot be freed when a mesh is
        collected on one process). Under SPMD every process makes the same meshes in the same order, so all
        find or split the same one."""
        found = self._subs.get(axes)
        if found is None:
            groups = tuple(tuple(g) for g in self.mesh.groups(axes))
            key = (self.world.py2f(), groups)
            found = _SUBS.get(key)
            if found is None:
                # (Split is a collective of COMM_WORLD: the collective that needs it was entered with a check over
                # the job, see ``_ready``)
                for color, group in enumerate(groups):
                    if self.rank in group:
                        pos = group.index(self.rank)
                        sub = self.world.Split(color, pos)
                        sub.Set_errhandler(_mpi().ERRORS_RETURN)  # MPI errors raise (then CommError), not abort
                        found = _SUBS[key] = (sub, pos)
                        break
            found = cast("tuple[Any, int]", found)  # this rank is in exactly one group along any axes
            self._subs[axes] = found
        return found

    def _ready(self, axes: tuple[str, ...]) -> bool:
        """Whether this process has the sub-communicator of ``axes`` already.

        When it has not, the collective that needs it is entered with a check over the whole job (one small
        allgather, once per axes: ``log_spmd(check=True)``) before ``_sub`` splits ``COMM_WORLD``: a process
        elsewhere on ``COMM_WORLD`` (e.g. in ``numpy()``'s check, after an argument that differs between
        processes) then raises ``CommError`` with the others, instead of unpickling the Split's bytes (a raw
        ``MemoryError`` there, the others waiting forever)."""
        if axes in self._subs:
            return True
        return (self.world.py2f(), tuple(tuple(g) for g in self.mesh.groups(axes))) in _SUBS

    _op = staticmethod(reduce_op)

    def _group(self, axes: tuple[str, ...]) -> tuple[int, ...]:
        return next(g for g in self.mesh.groups(axes) if self.rank in g)

    def _log(
        self,
        op: str,
        axes: tuple[str, ...],
        shards: Sequence[Any],
        devices: Sequence[int] | None = None,
        dim: int | None = None,
        root: int = -1,
    ) -> int:
        n = self.mesh.axes_size(axes)
        group = self._group(axes) if n > 1 else None
        check = n > 1 and not self._ready(axes)
        log_spmd(self.world, op, axes, n, shards[self.rank], group=group, dim=dim, check=check, root=root)
        return n

    @contextmanager
    def _calling(self, op: str, axes: tuple[str, ...], x: np.ndarray) -> Iterator[None]:
        """Turn an MPI error (e.g. "Message truncated": the processes' buffers differ) into a ``CommError``."""
        try:
            yield
        except _mpi().Exception as e:
            raise CommError(
                f"MPI {op} over axes {axes} of mesh {self.mesh} failed on process {self.rank} with a {x.dtype} "
                f"block of shape {x.shape}: {e}. The processes probably disagree on the op or the array sizes; "
                f"run with SHARDARRAY_CHECK_SPMD=1 to compare them before every collective"
            ) from e

    def _agree(
        self, sub: Any, op: str, axes: tuple[str, ...], x: np.ndarray, free: int | None = None, root: int = -1
    ) -> None:
        """Every member of the group enters the same collective on the same dtype, with the same ``root`` (and
        block shape, but along ``free``; ``free=-1``: any shape), or each raises the same ``CommError`` naming the
        members.

        One ``Allgather`` of a small header (op, dtype, shape, root: ``HEADER`` int64s) before the data moves,
        always on: members that disagree would otherwise crash MPI ("Message truncated"), wait forever, or (a
        broadcast whose members name different roots, e.g. ``x[i]`` of a split array with an ``i`` that differs
        between processes) return other processes' values without an error.
        """
        crc, agreed = take_agreed()
        mine = _header(op, x, root, crc)
        every = np.empty((sub.Get_size(), mine.size), dtype=np.int64)
        with self._calling(op, axes, x):
            sub.Allgather(mine, every)
        if len(set(every[:, -2].tolist())) > 1:  # (every member sees it: all exchange their notes for the message)
            group = self._group(axes)
            where = f"in {op} over axes {axes} of mesh {self.mesh} (group {group})"
            text = notes_mismatch(sub.allgather((agreed, len(agreed))), where, group)
            leave()  # (no data moves: the op's end tells the other groups, ``comm.header.fail_together``)
            raise CommError(text)
        keep = np.ones(mine.size, dtype=bool)
        if free == -1:
            keep[2 : 3 + _DIMS] = False
        elif free is not None and free < _DIMS:
            keep[3 + free] = False
        if (every[:, keep] == every[0, keep]).all():
            return
        leave()  # (as above: the group raises alike, no data moves)
        raise self._mismatch(
            op, axes, [_describe_header(h) for h in every], "in the collective, its root, dtype or shape"
        )

    def _mismatch(self, op: str, axes: tuple[str, ...], shapes: Sequence[Any], what: str) -> CommError:
        group = self._group(axes)
        listed = "; ".join(f"process {d}: {s}" for d, s in zip(group, shapes))
        return CommError(
            f"SPMD mismatch in {op} over axes {axes} of mesh {self.mesh}: the blocks of group {group} differ {what} "
            f"({listed}). Every process must build its arrays with the same global sizes and dtypes"
        )

    def _out(self, value: Any) -> list[Any]:
        out: list[Any] = [None] * self.mesh.size
        out[self.rank] = value
        return out

    @staticmethod
    def _wide(x: np.ndarray) -> np.ndarray:
        """``x`` as a contiguous buffer MPI can reduce: float16 and bfloat16 (no MPI type) as float32."""
        return contiguous(x, dtype=np.float32 if x.dtype == np.float16 or x.dtype.name == "bfloat16" else x.dtype)

    # ------------------------------------------------------------ collectives
    def check_spmd(
        self,
        what: str,
        sizes: Mapping[str, int],
        dtype: Any,
        *,
        layout: Any = None,
        values: Mapping[str, Any] | None = None,
        failure: BaseException | None = None,
    ) -> None:
        check_array(self.world, what, sizes, dtype, layout=layout, values=values, failure=failure)

    @collective
    def host_reduce(self, value: float, op: str) -> float:
        return host_allreduce(self.world, value, op)

    @collective
    def assemble(
        self,
        shards: Sequence[Any],
        slices: Sequence[tuple[slice, ...]],
        shape: tuple[int, ...],
        dtype: Any,
        used_axes: Any,
    ) -> np.ndarray:
        """The global value: this process's shard when the array is replicated (no communication), else
        a collective over the whole job (see ``gather_blocks``)."""
        return gather_blocks(self.world, shards[self.rank], slices, shape, dtype)

    @collective
    def allreduce(self, shards: Sequence[Any], axes: tuple[str, ...], op: str = "sum") -> list[Any]:
        n = self._log("allreduce", axes, shards)
        if n == 1:
            return list(shards)
        sub, _ = self._sub(axes)
        x = shards[self.rank]
        self._agree(sub, "allreduce", axes, x)
        send = self._wide(x)
        recv = buffers.empty(send.shape, send.dtype)
        with self._calling("allreduce", axes, x):
            sub.Allreduce(send, recv, op=self._op(op, send.dtype))
        return self._out(recv.astype(x.dtype, copy=False))

    @collective
    def allgather(self, shards: Sequence[Any], axes: tuple[str, ...], dim: int) -> list[Any]:
        n = self._log("allgather", axes, shards, dim=dim)
        if n == 1:
            return list(shards)
        sub, _ = self._sub(axes)
        x = shards[self.rank]
        self._agree(sub, "allgather", axes, x, free=dim)
        front = contiguous(np.moveaxis(x, dim, 0))
        shapes = sub.allgather((front.shape, x.dtype.str))
        if len({(s[1:], t) for s, t in shapes}) > 1:
            raise self._mismatch(
                "allgather",
                axes,
                [(s[1 : dim + 1] + s[:1] + s[dim + 1 :], np.dtype(t).name) for s, t in shapes],
                f"beyond dim {dim}",
            )
        lengths = [s[0] for s, _ in shapes]
        rest = int(np.prod(front.shape[1:]))
        recv = buffers.empty((sum(lengths),) + front.shape[1:], x.dtype)
        with self._calling("allgather", axes, x):
            sub.Allgatherv(
                front.reshape(-1).view(np.uint8),
                [recv.reshape(-1).view(np.uint8), [n_ * rest * x.itemsize for n_ in lengths]],
            )
        return self._out(np.moveaxis(recv, 0, dim))

    @collective
    def reduce_scatter(self, shards: Sequence[Any], axes: tuple[str, ...], dim: int, op: str = "sum") -> list[Any]:
        n = self._log("reduce_scatter", axes, shards)
        if n == 1:
            return list(shards)
        sub, pos = self._sub(axes)
        x = shards[self.rank]
        self._agree(sub, "reduce_scatter", axes, x)
        front = self._wide(np.moveaxis(x, dim, 0))
        radix = [self.mesh.axis_size(a) for a in axes]
        size, rest = front.shape[0], int(np.prod(front.shape[1:]))
        bounds = [group_chunk(0, size, radix, i) for i in range(n)]
        recv = buffers.empty((bounds[pos][1] - bounds[pos][0],) + front.shape[1:], front.dtype)
        with self._calling("reduce_scatter", axes, x):
            sub.Reduce_scatter(
                front.reshape(-1),
                recv.reshape(-1),
                [(hi - lo) * rest for lo, hi in bounds],
                op=self._op(op, front.dtype),
            )
        return self._out(np.moveaxis(recv.astype(x.dtype, copy=False), 0, dim))

    @collective
    def alltoall(self, shards: Sequence[Any], axes: tuple[str, ...], split_dim: int, concat_dim: int) -> list[Any]:
        n = self._log("alltoall", axes, shards, dim=concat_dim)
        if n == 1:
            return list(shards)
        sub, pos = self._sub(axes)
        x = np.asarray(shards[self.rank])
        self._agree(sub, "alltoall", axes, x, free=-1)  # (the pieces' shapes are compared below)
        radix = [self.mesh.axis_size(a) for a in axes]
        lead = (slice(None),) * split_dim
        pieces = [x[lead + (slice(*group_chunk(0, x.shape[split_dim], radix, i)),)] for i in range(n)]
        shapes = sub.alltoall([(p.shape, x.dtype.str) for p in pieces])
        if len({(s[:concat_dim] + s[concat_dim + 1 :], t) for s, t in shapes}) > 1:
            raise self._mismatch(
                "alltoall", axes, [(s, np.dtype(t).name) for s, t in shapes], f"beyond dim {concat_dim}"
            )
        shapes = [tuple(s) for s, _ in shapes]
        # one copy each way: the others' pieces packed straight into the send buffer, the received ones (and
        # this rank's own piece, which never goes through MPI) straight into their place in the result
        send_counts = [0 if i == pos else p.size for i, p in enumerate(pieces)]
        recv_counts = [0 if i == pos else math.prod(sh) for i, sh in enumerate(shapes)]
        send = buffers.empty(sum(send_counts), x.dtype)
        start = 0
        for p, c in zip(pieces, send_counts):
            if c:
                np.copyto(send[start : start + c].reshape(p.shape), p)
                start += c
        recv = buffers.empty(sum(recv_counts), x.dtype)
        with self._calling("alltoall", axes, x):
            sub.Alltoallv(
                [send.view(np.uint8), [c * x.itemsize for c in send_counts]],
                [recv.view(np.uint8), [c * x.itemsize for c in recv_counts]],
            )
        out_shape = list(shapes[0])
        out_shape[concat_dim] = sum(sh[concat_dim] for sh in shapes)
        out = buffers.empty(tuple(out_shape), x.dtype)
        start = lo = 0
        for i, (sh, c) in enumerate(zip(shapes, recv_counts)):
            place = out[(slice(None),) * concat_dim + (slice(lo, lo + sh[concat_dim]),)]
            np.copyto(place, pieces[pos] if i == pos else recv[start : start + c].reshape(sh))
            start += c
            lo += sh[concat_dim]
        return self._out(out)

    @collective
    def broadcast(self, shards: Sequence[Any], axes: tuple[str, ...], root: int) -> list[Any]:
        n = self._rooted(axes, root)
        self._log("broadcast", axes, shards, root=root)
        if n == 1:
            return list(shards)
        sub, pos = self._sub(axes)
        x = shards[self.rank]
        self._agree(sub, "broadcast", axes, x, free=-1, root=root)  # (the receivers take the root's shape)
        # the dtype by name: ml_dtypes' bfloat16 has str "<V2", which would come back as raw void bytes
        shape, dtype = sub.bcast((x.shape, x.dtype.name) if pos == root else None, root=root)
        buf = contiguous(x) if pos == root else buffers.empty(shape, np.dtype(dtype))
        with self._calling("broadcast", axes, x):
            sub.Bcast(buf.reshape(-1).view(np.uint8), root=root)  # (reshape first: a 0-d array has no byte view)
        return self._out(buf)

    @collective
    def reduce(self, shards: Sequence[Any], axes: tuple[str, ...], root: int, op: str = "sum") -> list[Any]:
        n = self._rooted(axes, root)
        self._log("reduce", axes, shards, root=root)
        if n == 1:
            return list(shards)
        sub, pos = self._sub(axes)
        x = shards[self.rank]
        self._agree(sub, "reduce", axes, x, root=root)
        send = self._wide(x)
        recv = buffers.empty(send.shape, send.dtype) if pos == root else None
        with self._calling("reduce", axes, x):
            sub.Reduce(send, recv, op=self._op(op, send.dtype), root=root)
        return self._out(cast("np.ndarray", recv).astype(x.dtype, copy=False) if pos == root else x)

    @collective
    def alltoallv(self, send: Sequence[Any], axes: tuple[str, ...], dim: int) -> list[Any]:
        """One ``Alltoallv`` per group with per-pair byte counts; only the pieces' shapes travel pickled."""
        n = self.mesh.axes_size(axes)
        pieces = [contiguous(p) for p in send[self.rank]]
        if n == 1:
            return self._out(pieces[0])
        group = self._group(axes)
        pos = group.index(self.rank)
        mine = sum(int(p.size) for j, p in enumerate(pieces) if j != pos)
        dtype = pieces[0].dtype
        check = not self._ready(axes)  # (see ``_ready``)
        log_spmd(self.world, "alltoall", axes, n, np.empty(mine, dtype=dtype), group=group, dim=0, check=check)
        sub, _ = self._sub(axes)
        self._agree(sub, "alltoallv", axes, pieces[pos], free=-1)  # (the pieces' shapes are compared below)
        shapes = sub.alltoall([(p.shape, p.dtype.str) for p in pieces])
        rest = {(s[:dim] + s[dim + 1 :], t) for s, t in shapes}
        if len(rest) > 1:
            raise self._mismatch("alltoallv", axes, [(s, np.dtype(t).name) for s, t in shapes], f"beyond dim {dim}")
        send_counts = [p.size * dtype.itemsize for p in pieces]
        within = one_buffer(pieces)  # (pieces cut from one buffer, as a sort's buckets are: sent from it, no copy)
        if within is None:
            packed = buffers.empty(sum(int(p.size) for p in pieces), dtype)
            np.concatenate([p.reshape(-1) for p in pieces], out=packed)
            send = [packed.view(np.uint8), send_counts]
        else:
            send = [within[0], (send_counts, within[1])]
        recv_counts = [int(np.prod(s)) for s, _ in shapes]
        recv = buffers.empty(sum(recv_counts), dtype)
        with self._calling("alltoallv", axes, pieces[pos]):
            sub.Alltoallv(send, [recv.view(np.uint8), [c * dtype.itemsize for c in recv_counts]])
        if dim == 0:  # the pieces in order along the first dim are the received bytes as they are
            rest_shape = shapes[0][0][1:]
            return self._out(recv.reshape((sum(s[0] for s, _ in shapes), *rest_shape)))
        parts, start = [], 0
        for (s, _), c in zip(shapes, recv_counts):
            parts.append(recv[start : start + c].reshape(s))
            start += c
        joined = list(parts[0].shape)
        joined[dim] = sum(int(p.shape[dim]) for p in parts)
        out = buffers.empty(joined, dtype)
        np.concatenate(parts, axis=dim, out=out)
        return self._out(out)


@collective
def exchange_flat(
    world: Any,
    send: Sequence[np.ndarray],
    recv_counts: Sequence[int],
    dtype: Any,
    axes: tuple[str, ...],
    elements: int,
) -> list[np.ndarray]:
    """A personalized exchange of flat buffers over the whole job (``sa.reshard`` between two MPI meshes).

    ``send[p]`` is the 1-D buffer this process sends process ``p`` (the one
    for itself is not used); ``recv_counts[p]`` the number of elements it
    receives from ``p`` (every process knows them from the shared plan, so
    only bytes travel: one ``Alltoallv`` of raw bytes, any dtype). Returns
    the received buffers, one per process. Logged as one ``"alltoall"``
    record over ``axes`` (the target mesh's) with ``elements``: the most any
    process sends to the others (the caller's plan knows it for every process).

    Example:
        Under ``mpiexec -n 2``, process 0 sending ``[1., 2.]`` to process 1:
        ``exchange_flat(COMM_WORLD, [empty, array([1., 2.])], [0, 0], "float64", ("model",), 2)`` on
        process 0 and ``exchange_flat(COMM_WORLD, [empty, empty], [2, 0], ...)`` on process 1,
        which receives ``[array([1., 2.]), array([])]``.
    """
    dtype = np.dtype(dtype)
    rank, size = world.Get_rank(), world.Get_size()
    bufs = [np.empty(0, dtype) if p == rank else contiguous(send[p], dtype=dtype).reshape(-1) for p in range(size)]
    if size > 1:
        # (checked: a process elsewhere on COMM_WORLD would meet this Alltoallv with other bytes, or none)
        enter(world, "alltoall", tuple(axes), np.empty(0, dtype), check=True)
        if elements:
            record("alltoall", tuple(axes), size, int(elements), dtype.itemsize, str(dtype), sent=True)
    counts = [0 if p == rank else int(c) for p, c in enumerate(recv_counts)]
    recv = buffers.empty(sum(counts), dtype)
    flat = buffers.empty(sum(int(b.size) for b in bufs), dtype)
    np.concatenate(bufs, out=flat)  # (one buffer per process: never an empty list)
    try:
        world.Alltoallv(
            [flat.view(np.uint8), [b.size * dtype.itemsize for b in bufs]],
            [recv.view(np.uint8), [c * dtype.itemsize for c in counts]],
        )
    except _mpi().Exception as e:
        raise CommError(
            f"MPI Alltoallv of a reshard over the whole job failed on process {rank} ({dtype}, sending "
            f"{[b.size for b in bufs]} and receiving {counts} elements): {e}. The processes probably disagree on "
            f"the array or the target mesh; run with SHARDARRAY_CHECK_SPMD=1 to compare them"
        ) from e
    out, start = [], 0
    for c in counts:
        out.append(recv[start : start + c])
        start += c
    return out
