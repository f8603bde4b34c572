"""The NCCL Communicator: one GPU per mesh device, collectives per axis group.

Two ways to run it:

* **one process, several GPUs** (``sa.Mesh(shape, backend="cupy", devices=[0, 1, 2, 3])``):
  for every group along some axes, ``NcclCommunicator.initAll(group's GPUs)``
  once, cached; every collective issues one call per device inside
  ``groupStart()/groupEnd()`` (one thread drives every GPU).
* **SPMD across processes** (``sa.Mesh(shape, backend="cupy", comm="mpi")`` under
  ``mpiexec -n size``): each process owns one device; each axis group is an
  ``MPI.Comm.Split`` whose member 0 makes ``nccl.get_unique_id()`` and
  broadcasts it, then every member joins with ``NcclCommunicator(n, id, position)``.

Members are ranked by their position along the axes, so ``root`` means the
same member as on an emulated mesh. Calls are ordered on each mesh device's
stream (``backend.stream_ptr``); driving several ranks from one process needs
a backend whose every mesh device owns its buffers and its stream, even where
two devices share a GPU (two ranks of one communicator on one stream wait on
each other forever), so the communicator asks for ``backend.as_ranks()``.
CuPy's NCCL has no alltoall: it is grouped send/recv. Uneven blocks
(ceil-chunked layouts) use grouped broadcasts for allgather and a padded
reduce-scatter. bool travels as uint8 (a sum is a max, i.e. a logical or, as
on the emulated mesh); complex64/complex128 travel as float32/float64
(real, imag) pairs (a sum is the sum of both parts; max and min of complex
numbers are refused); int16/uint16, which NCCL has no type for, travel as
byte pairs and reduce in int32/uint32, cast back once (exact: a sum wraps
as in int16). Empty buffers are not sent (every member knows every
size, so all skip together).

Nothing is posted before every argument is known good: dtypes, reductions
and, where this process sees them, the buffers of every member of each
group (one process: always; SPMD: the shapes exchanged for allgather,
alltoall and broadcast) are checked first, and every address, count and
stream is computed before ``groupStart``. A call that still fails inside a
group ends the group, aborts that axis group's communicators (launched
calls would otherwise wait forever for the missing one), drops them from
the cache (the next collective makes new ones) and raises ``sa.CommError``
naming the collective, the axes and the mesh. Under SPMD only this
process's communicator is aborted: the peers are not told (as with NCCL
itself), so the uncaught CommError must end the job (mpiexec then stops
every process). Under SPMD each collective marks its end for the hang
watchdog (``comm.watchdog.leave``, as ``MpiCommunicator``'s do): a process counts
as stuck only while inside one, so a long computation after it is not
reported as waiting in it. They skip the job's header over ``COMM_WORLD``
that MPI's collectives compare first (``comm.header.exchange_header``): a host
round trip per collective would cost every step of a GPU job.
"""

from __future__ import annotations

import itertools
import os
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, cast

import numpy as np

from ..chunks import group_chunk
from ..errors import CommError, DimensionError, DTypeError, ShardArrayError
from .base import REDUCE_OPS, Communicator
from .mpi import check_array, collective, gather_blocks, host_allreduce, log_spmd

#: numpy dtype name -> the name of NCCL's type constant in ``cupy.cuda.nccl``
DTYPES = {
    "int8": "NCCL_INT8",
    "uint8": "NCCL_UINT8",
    "int32": "NCCL_INT32",
    "uint32": "NCCL_UINT32",
    "int64": "NCCL_INT64",
    "uint64": "NCCL_UINT64",
    "float16": "NCCL_FLOAT16",
    "float32": "NCCL_FLOAT32",
    "float64": "NCCL_FLOAT64",
    "bfloat16": "NCCL_BFLOAT16",
}
#: ``ncclDataType_t`` values from nccl.h for the constants older CuPy builds do not export
#: (``ncclBfloat16 = 9`` since NCCL 2.10; bfloat16 moves as 2 bytes and NCCL reduces it natively)
FALLBACK = {"NCCL_BFLOAT16": 9}
#: dtypes NCCL has no type for -> (the dtype they travel as, elements per value)
WIRE = {
    "bool": ("uint8", 1),
    "complex64": ("float32", 2),
    "complex128": ("float64", 2),
    "int16": ("int8", 2),
    "uint16": ("uint8", 2),
}
#: dtypes whose wire form NCCL cannot reduce -> the dtype their reductions run in (then cast back)
WIDE = {"int16": "int32", "uint16": "uint32"}
_OPS = {"sum": "NCCL_SUM", "max": "NCCL_MAX", "min": "NCCL_MIN"}


def import_nccl() -> Any:
    """``cupy.cuda.nccl``, or an ImportError that names the extra to install."""
    hint = "pip install 'shardarray[cuda13]' (or [cuda12]): CuPy and the nvidia-nccl wheel"
    try:
        from cupy.cuda import nccl
    except ImportError as e:  # pragma: no cover - depends on the machine
        raise ImportError(f"comm='nccl' needs CuPy with NCCL: {hint}") from e
    if not getattr(nccl, "available", True):  # pragma: no cover
        raise ImportError(f"CuPy cannot load the NCCL library: {hint}")
    return nccl


def wire(dtype: Any) -> tuple[np.dtype, int]:
    """``(the dtype a buffer of dtype travels as, elements per value)``: bool as uint8, complex as float pairs.

    Example:
        >>> wire("complex64"), wire("bool"), wire("float16")
        ((dtype('float32'), 2), (dtype('uint8'), 1), (dtype('float16'), 1))
    """
    dtype = np.dtype(dtype)
    name, per = WIRE.get(dtype.name, (dtype.name, 1))
    return np.dtype(name), per


@dataclass
class _Member:
    """One local device's place in one axis group."""

    comm: Any  # the NCCL communicator of this device in this group
    pos: int  # its rank in the group
    group: tuple[int, ...]  # the mesh devices of the group, in rank order
    sub: Any = None  # the group's MPI communicator (SPMD only), for sizes


class _Call(NamedTuple):
    """One NCCL call, every argument computed: posted between groupStart and groupEnd as ``fn(*args)``.

    ``keep`` holds the buffers behind the raw addresses in ``args``: NCCL
    enqueues grouped calls at ``groupEnd``, so they must outlive the loop
    that made them (a freed temporary's memory could be handed out again).
    """

    fn: Callable[..., Any]
    args: tuple[Any, ...]
    keep: tuple[Any, ...]


class NcclCommunicator(Communicator):
    """Collectives through NCCL (see the module docstring).

    Args:
        mesh: the mesh; its backend places device ``d`` on GPU ``backend.gpus[d]``.
        lib: the NCCL module (``cupy.cuda.nccl`` by default).
        world: ``MPI.COMM_WORLD`` for SPMD across processes; None drives every device from this process.
    """

    def __init__(self, mesh: Any, lib: Any = None, world: Any = None) -> None:
        super().__init__(mesh)
        self.lib = lib if lib is not None else import_nccl()
        self.world = world
        self.rank = world.Get_rank() if world is not None else 0
        self._members: dict[tuple[str, ...], dict[int, _Member]] = {}
        if world is None:  # every mesh device is a rank of this process: its own buffers and stream
            mesh.backend = mesh.backend.as_ranks()

    # ---------------------------------------------------------------- set-up
    @property
    def _local(self) -> tuple[int, ...]:
        return self.mesh.local_devices if self.world is not None else tuple(range(self.mesh.size))

    def _fail(
        self, what: str, axes: tuple[str, ...], group: Sequence[int] | None, error: Exception, aborted: bool = False
    ) -> CommError:
        gpus = self.mesh.backend.gpus
        hint = ""
        if aborted:
            hint += (
                f"; the NCCL communicators of axes {axes} were aborted (calls already launched would wait "
                f"forever) and the next collective makes new ones"
            )
        if self.world is not None:  # SPMD: this process knows its own GPU only (gpus repeats it)
            (mine,) = self._local
            on_gpu = f" on GPU {gpus[mine]}" if gpus else ""
            where = f" (devices {list(group or ())}; this process drives device {mine}{on_gpu})"
            return CommError(f"NCCL {what} over mesh axes {axes} of {self.mesh}{where} failed: {error}{hint}")
        where = f" (devices {list(group)} on GPUs {[gpus[d] for d in group]})" if group and gpus else ""
        if gpus and len(set(gpus[d] for d in (group or range(len(gpus))))) < len(group or gpus):
            hint += (
                ". Several ranks on one GPU need NCCL >= 2.30 with NCCL_MULTI_RANK_GPU_ENABLE=1; "
                "otherwise put every shard on one GPU (the emulated communicator) or one shard per GPU"
            )
        return CommError(f"NCCL {what} over mesh axes {axes} of {self.mesh}{where} failed: {error}{hint}")

    def _guard(self, what: str, axes: tuple[str, ...], group: Sequence[int] | None, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except ShardArrayError:
            raise
        except Exception as e:
            raise self._fail(what, axes, group, e) from e

    def members(self, axes: tuple[str, ...]) -> dict[int, _Member]:
        """``{local device: its communicator and rank}`` for the groups along ``axes`` (made once)."""
        found = self._members.get(axes)
        if found is not None:
            return found
        found = {}
        local = set(self._local)
        gpus = cast("tuple[int, ...]", self.mesh.backend.gpus)  # NCCL meshes place devices on GPUs (as_ranks)
        for color, group in enumerate(self.mesh.groups(axes)):
            mine = [d for d in group if d in local]
            if not mine:
                continue
            if self.world is None:  # never inside groupStart/groupEnd
                comms = self._guard(
                    "communicator set-up (initAll)",
                    axes,
                    group,
                    # mypy cannot infer a lambda with a default argument against Callable[[], Any]
                    lambda group=group: self.lib.NcclCommunicator.initAll([gpus[d] for d in group]),  # type: ignore[misc]
                )
                for pos, (d, c) in enumerate(zip(group, comms)):
                    found[d] = _Member(c, pos, group)
            else:
                (d,) = mine
                pos = group.index(d)
                sub = self.world.Split(color, pos)
                self._refuse_shared_gpus(sub, d, axes, group)
                uid = self._unique_id(sub, pos, axes, group)

                def init(d: int = d, group: tuple = group, uid: Any = uid, pos: int = pos) -> Any:
                    with self.mesh.backend.scope(d):
                        return self.lib.NcclCommunicator(len(group), uid, pos)

                found[d] = _Member(self._guard("communicator set-up (initRank)", axes, group, init), pos, group, sub)
        self._members[axes] = found
        return found

    def _gpu_of(self, d: int) -> str | None:
        """Where device ``d``'s GPU is, comparable between processes (host and PCI bus id); None without a GPU."""
        gpus = self.mesh.backend.gpus
        if not gpus:
            return None
        return f"{socket.gethostname()}/{self.mesh.backend.xp.cuda.Device(gpus[d]).pci_bus_id}"

    def _refuse_shared_gpus(self, sub: Any, d: int, axes: tuple[str, ...], group: Sequence[int]) -> None:
        """Raise on every member alike when two ranks of the group share a GPU that this NCCL cannot share.

        NCCL before 2.30 (and 2.30 without ``NCCL_MULTI_RANK_GPU_ENABLE=1``) fails such a communicator's set-up
        with a bare "invalid usage" on some ranks; one allgather of the members' GPUs over the group's MPI
        communicator names the cause instead (the job's first collective on each axis group pays it once).
        """
        places = sub.allgather(self._gpu_of(d))
        if None in places or len(set(places)) == len(places):
            return
        version = int(getattr(self.lib, "get_version", lambda: 0)())
        if version >= 23000 and os.environ.get("NCCL_MULTI_RANK_GPU_ENABLE") == "1":
            return
        shared = sorted({p for p in places if places.count(p) > 1})
        need = "NCCL >= 2.30" if version < 23000 else "NCCL_MULTI_RANK_GPU_ENABLE=1 (NCCL reads it at start-up)"
        raise CommError(
            f"mesh axes {axes} of {self.mesh}: the processes driving devices {list(group)} share GPU(s) "
            f"{', '.join(shared)}, and several NCCL ranks on one GPU need {need} (this NCCL is "
            f"{version // 10000}.{version // 100 % 100}.{version % 100}). Run one process per GPU "
            f"(mpiexec -n <GPUs per node> per node), or put every shard on one GPU in one process (the emulated "
            f"communicator: sa.Mesh(shape, backend='cupy', devices=[0] * n))"
        )

    def _unique_id(self, sub: Any, pos: int, axes: tuple[str, ...], group: Sequence[int]) -> Any:
        """The group's NCCL id, made by its member 0 and broadcast over ``sub`` (the group's MPI communicator).

        Member 0 broadcasts its failure instead of an id, so that every member raises the same ``CommError``
        (the others would otherwise wait forever in the broadcast, or in their next collective).
        """
        made: tuple[Any, str | None] = (None, None)
        if pos == 0:
            try:
                made = (self.lib.get_unique_id(), None)
            except Exception as e:
                made = (None, f"{type(e).__name__}: {e}")
        uid, failure = sub.bcast(made, root=0)
        if failure is not None:
            where = "" if pos == 0 else f" on the process of device {group[0]}"
            raise self._fail("communicator set-up (get_unique_id)", axes, group, RuntimeError(failure + where))
        return uid

    def _abort(self, axes: tuple[str, ...]) -> None:
        """Abort and forget the communicators of ``axes`` (their pending calls end instead of waiting forever)."""
        for m in self._members.pop(axes, {}).values():
            try:
                m.comm.abort()
            except Exception:  # already broken: nothing more to stop
                pass

    def _pairwise(self, m: Any, d: int, dt: int, pieces: Sequence[Any], received: Sequence[Any]) -> list[_Call]:
        """Member ``m`` (mesh device ``d``) sends ``pieces[j]`` to and receives ``received[j]`` from every other
        member ``j`` (empty pieces are not posted): the calls of an alltoall(v) as grouped send/recv."""
        calls = []
        for j in range(len(pieces)):
            if j == m.pos:
                continue
            for fn, buf in ((m.comm.send, pieces[j]), (m.comm.recv, received[j])):
                if buf.size:
                    calls.append(_Call(fn, (self._ptr(buf), self._count(buf), dt, j, self._stream(d)), (buf,)))
        return calls

    def _grouped(self, what: str, axes: tuple[str, ...], calls: list[_Call]) -> None:
        """Post ``calls`` (every argument already computed) between one groupStart and groupEnd.

        A call that fails still ends the group, then the axis group's
        communicators are aborted and dropped: NCCL would otherwise launch the
        calls posted before it, and they would wait forever for the missing one.
        """
        if not calls:
            return
        self._guard(what, axes, None, self.lib.groupStart)
        try:
            for call in calls:
                call.fn(*call.args)
        except Exception as e:
            try:
                self.lib.groupEnd()
            finally:
                self._abort(axes)
            raise self._fail(what, axes, None, e, aborted=True) from e
        try:
            self.lib.groupEnd()
        except Exception as e:
            self._abort(axes)
            raise self._fail(what, axes, None, e, aborted=True) from e

    # ---------------------------------------------------------------- checks
    def _type(self, dtype: Any, what: str) -> int:
        dtype = np.dtype(dtype)
        const = DTYPES.get(wire(dtype)[0].name)
        value = None if const is None else getattr(self.lib, const, FALLBACK.get(const))
        if value is None:
            known = sorted(
                k
                for k in (*DTYPES, *WIRE)
                if hasattr(self.lib, DTYPES[WIRE.get(k, (k,))[0]]) or DTYPES[WIRE.get(k, (k,))[0]] in FALLBACK
            )
            raise DTypeError(f"NCCL {what} cannot move dtype {dtype}; NCCL here moves {known}. Cast with .astype first")
        return int(value)

    def _op(self, op: str, dtype: Any, what: str) -> int:
        if op not in _OPS:
            raise ValueError(f"unknown reduction {op!r}; one of {REDUCE_OPS}")
        dtype = np.dtype(dtype)
        if dtype.kind == "c" and op != "sum":
            raise DTypeError(
                f"NCCL {what}: the {op} of {dtype} buffers is not defined (complex numbers are not "
                f"ordered); reduce abs(x) or x.real instead, or use op='sum'"
            )
        if dtype == np.bool_ and op == "sum":
            op = "max"  # a sum of booleans is a logical or
        return getattr(self.lib, _OPS[op])

    def _check(
        self,
        what: str,
        axes: tuple[str, ...],
        shards: Sequence[Any],
        free: Sequence[int] | None = (),
        op: str | None = None,
    ) -> tuple[int, int | None]:
        """Refuse what NCCL cannot do, before any call: ``(type constant, reduction constant or None)``.

        Every member of a group this process sees must pass the same dtype,
        and (except along the array axes ``free``) the same shape; with a
        broadcast (``free`` = None) only the dtypes must agree.
        """
        local = [d for d in self._local if shards[d] is not None]
        dtype = np.dtype(shards[local[0]].dtype)
        dt = self._type(WIDE.get(dtype.name, dtype) if op is not None else dtype, what)
        red = self._op(op, dtype, what) if op is not None else None
        if self.world is not None:
            return dt, red
        for group in self.mesh.groups(axes):
            dtypes = [np.dtype(shards[d].dtype) for d in group]
            if len(set(dtypes)) > 1:
                raise DTypeError(
                    f"NCCL {what} over mesh axes {axes}: the buffers of devices {list(group)} have dtypes "
                    f"{[str(t) for t in dtypes]}; every member of a group must pass one dtype: cast with .astype first"
                )
            shapes = [tuple(shards[d].shape) for d in group]
            if free is None:
                continue
            keep = [tuple(n for i, n in enumerate(s) if i not in free) for s in shapes]
            if len({len(s) for s in shapes}) > 1 or len(set(keep)) > 1:
                along = f" except along array axes {list(free)}" if free else ""
                raise DimensionError(
                    f"NCCL {what} over mesh axes {axes}: the buffers of devices {list(group)} have shapes {shapes}; "
                    f"every member of a group must pass the same shape{along}. Pass the blocks of one array laid "
                    f"out on the mesh (their shapes agree), or reshape/pad the odd one"
                )
        return dt, red

    # ---------------------------------------------------------------- buffers
    def _contig(self, x: Any) -> Any:
        """``x`` as a contiguous array (NumPy reductions may give scalars)."""
        xp = self.mesh.backend.xp
        x = xp.asarray(x)
        return x if x.flags.c_contiguous else xp.ascontiguousarray(x).reshape(x.shape)

    def _reducible(self, x: Any) -> Any:
        """``x`` contiguous, in the dtype NCCL reduces it in (``WIDE``: int16 as int32)."""
        x = self._contig(x)
        wide = WIDE.get(np.dtype(x.dtype).name)
        return x if wide is None else x.astype(wide)

    def _narrow(self, out: list[Any], dtype: Any, devices: Sequence[int]) -> list[Any]:
        """``out`` with the results on ``devices`` cast back from ``WIDE``'s dtype to ``dtype`` (after the group)."""
        if np.dtype(dtype).name in WIDE:
            for d in devices:
                with self.mesh.backend.scope(d):
                    out[d] = out[d].astype(dtype)
        return out

    @staticmethod
    def _count(x: Any) -> int:
        """How many wire elements ``x`` is (complex: two per value)."""
        return int(x.size) * wire(x.dtype)[1]

    def _ptr(self, x: Any) -> int:
        return self.mesh.backend.pointer(x)

    def _stream(self, d: int) -> int:
        return self.mesh.backend.stream_ptr(d)

    def _shapes(
        self, m: _Member, shards: Sequence[Any], d: int, what: str, axes: tuple[str, ...], free: Sequence[int] | None
    ) -> list[tuple[int, ...]]:
        """The shard shapes of every member of ``d``'s group (SPMD: exchanged, then checked on every member)."""
        if m.sub is None:
            return [tuple(shards[e].shape) for e in m.group]
        seen = m.sub.allgather((tuple(shards[d].shape), np.dtype(shards[d].dtype).str))
        shapes, dtypes = [tuple(s) for s, _ in seen], [np.dtype(t) for _, t in seen]
        if len(set(dtypes)) > 1:
            raise DTypeError(
                f"NCCL {what} over mesh axes {axes}: the processes of group {list(m.group)} pass dtypes "
                f"{[str(t) for t in dtypes]}; pass one dtype on every process (cast with .astype)"
            )
        if free is not None:
            keep = {tuple(n for i, n in enumerate(s) if i not in free) for s in shapes}
            if len(keep) > 1 or len({len(s) for s in shapes}) > 1:
                raise DimensionError(
                    f"NCCL {what} over mesh axes {axes}: the processes of group {list(m.group)} "
                    f"pass shapes {shapes}; they must agree except along array axes {list(free)}"
                )
        return shapes

    def _log(
        self,
        op: str,
        axes: tuple[str, ...],
        shards: Sequence[Any],
        devices: Sequence[int] | None = None,
        dim: int | None = None,
    ) -> int:
        if self.world is None:
            return super()._log(op, axes, shards, devices)

        n = self.mesh.axes_size(axes)
        group = next(g for g in self.mesh.groups(axes) if self.rank in g) if n > 1 else None
        log_spmd(self.world, op, axes, n, shards[self.rank], group=group, dim=dim, header=False)
        return n

    # ------------------------------------------------------------ host side
    def check_spmd(
        self,
        what: str,
        sizes: Any,
        dtype: Any,
        *,
        layout: Any = None,
        values: Any = None,
        failure: BaseException | None = None,
    ) -> None:
        if self.world is not None:
            check_array(self.world, what, sizes, dtype, layout=layout, values=values, failure=failure)
        elif failure is not None:
            raise failure

    @collective
    def host_reduce(self, value: float, op: str) -> float:
        return value if self.world is None else host_allreduce(self.world, value, op, header=False)

    @collective
    def assemble(
        self,
        shards: Sequence[Any],
        slices: Sequence[tuple[slice, ...]],
        shape: tuple[int, ...],
        dtype: Any,
        used_axes: Any,
    ) -> np.ndarray:
        backend = self.mesh.backend
        if self.world is not None:
            return gather_blocks(self.world, backend.to_numpy(shards[self.rank]), slices, shape, dtype)
        out = np.empty(shape, dtype=dtype)
        rest = tuple(a for a in self.mesh.axis_names if a not in set(used_axes))
        for group in self.mesh.groups(rest):  # one replica of every block
            out[slices[group[0]]] = backend.to_numpy(shards[group[0]])
        return out

    # ------------------------------------------------------------ collectives
    @collective
    def allreduce(self, shards: Sequence[Any], axes: tuple[str, ...], op: str = "sum") -> list[Any]:
        n = self._log("allreduce", axes, shards)
        if n == 1:
            return list(shards)
        return self._reduction("allreduce", axes, shards, op)

    @collective
    def allgather(self, shards: Sequence[Any], axes: tuple[str, ...], dim: int) -> list[Any]:
        n = self._log("allgather", axes, shards, dim=dim)
        if n == 1:
            return list(shards)
        dt, _ = self._check("allgather", axes, shards, free=(dim,))
        xp = self.mesh.backend.xp
        out, calls = list(shards), []
        for d, m in self.members(axes).items():
            x = shards[d]
            lengths = [s[dim] for s in self._shapes(m, shards, d, "allgather", axes, (dim,))]
            offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(int)
            with self.mesh.backend.scope(d):
                front = self._contig(xp.moveaxis(x, dim, 0))
                recv = xp.empty((int(offsets[-1]),) + front.shape[1:], dtype=front.dtype)
            rest = int(np.prod(front.shape[1:], dtype=np.int64))
            if len(set(lengths)) == 1:
                if front.size:
                    calls.append(
                        _Call(
                            m.comm.allGather,
                            (self._ptr(front), self._ptr(recv), self._count(front), dt, self._stream(d)),
                            (front, recv),
                        )
                    )
            else:  # uneven blocks: member i broadcasts its block into slot i
                for root, (lo, hi) in enumerate(itertools.pairwise(offsets)):
                    if hi > lo and rest:
                        slot = recv[int(lo) : int(hi)]
                        src = front if root == m.pos else slot
                        calls.append(
                            _Call(
                                m.comm.broadcast,
                                (self._ptr(src), self._ptr(slot), self._count(slot), dt, root, self._stream(d)),
                                (src, slot, recv),
                            )
                        )
            out[d] = xp.moveaxis(recv, 0, dim)
        self._grouped("allgather", axes, calls)
        return out

    @collective
    def reduce_scatter(self, shards: Sequence[Any], axes: tuple[str, ...], dim: int, op: str = "sum") -> list[Any]:
        n = self._log("reduce_scatter", axes, shards)
        if n == 1:
            return list(shards)
        dt, red = self._check("reduce_scatter", axes, shards, op=op)
        xp = self.mesh.backend.xp
        radix = [self.mesh.axis_size(a) for a in axes]
        out, calls = list(shards), []
        members = self.members(axes)
        for d, m in members.items():
            x = shards[d]
            size = x.shape[dim]
            bounds = [group_chunk(0, size, radix, i) for i in range(n)]
            lengths = [hi - lo for lo, hi in bounds]
            width = max(lengths)
            with self.mesh.backend.scope(d):
                front = self._reducible(xp.moveaxis(x, dim, 0))
                if len(set(lengths)) > 1:  # pad every chunk to the longest; the padding is dropped after
                    padded = xp.zeros((n, width) + front.shape[1:], dtype=front.dtype)
                    for i, (lo, hi) in enumerate(bounds):
                        padded[i, : hi - lo] = front[lo:hi]
                    front = padded
                recv = xp.empty((width,) + front.shape[front.ndim - x.ndim + 1 :], dtype=front.dtype)
            if recv.size:
                calls.append(
                    _Call(
                        m.comm.reduceScatter,
                        (self._ptr(front), self._ptr(recv), self._count(recv), dt, red, self._stream(d)),
                        (front, recv),
                    )
                )
            out[d] = xp.moveaxis(recv[: lengths[m.pos]], 0, dim)
        self._grouped("reduce_scatter", axes, calls)
        return self._narrow(out, shards[next(iter(members))].dtype, list(members))

    @collective
    def alltoall(self, shards: Sequence[Any], axes: tuple[str, ...], split_dim: int, concat_dim: int) -> list[Any]:
        n = self._log("alltoall", axes, shards, dim=concat_dim)
        if n == 1:
            return list(shards)
        free = (split_dim, concat_dim)
        dt, _ = self._check("alltoall", axes, shards, free=free)
        xp = self.mesh.backend.xp
        radix = [self.mesh.axis_size(a) for a in axes]
        out, calls, parts = list(shards), [], {}
        for d, m in self.members(axes).items():
            x = shards[d]
            shapes = self._shapes(m, shards, d, "alltoall", axes, free)
            pieces = []
            with self.mesh.backend.scope(d):
                for i in range(n):
                    lo, hi = group_chunk(0, x.shape[split_dim], radix, i)
                    index = (slice(None),) * split_dim + (slice(lo, hi),)
                    pieces.append(self._contig(x[index]))
                received = []
                for j, shape in enumerate(shapes):  # what member j sends me: its chunk number m.pos
                    lo, hi = group_chunk(0, shape[split_dim], radix, m.pos)
                    got = shape[:split_dim] + (hi - lo,) + shape[split_dim + 1 :]
                    received.append(pieces[j] if j == m.pos else xp.empty(got, dtype=x.dtype))
            calls.extend(self._pairwise(m, d, dt, pieces, received))
            parts[d] = received
        self._grouped("alltoall", axes, calls)
        for d, received in parts.items():  # queued after the receives on the same stream
            with self.mesh.backend.scope(d):
                out[d] = xp.concatenate(received, axis=concat_dim)
        return out

    @collective
    def broadcast(self, shards: Sequence[Any], axes: tuple[str, ...], root: int) -> list[Any]:
        n = self._rooted(axes, root)
        self._log("broadcast", axes, shards, [g[root] for g in self.mesh.groups(axes)])
        if n == 1:
            return list(shards)
        dt, _ = self._check("broadcast", axes, shards, free=None)
        xp = self.mesh.backend.xp
        out, calls = list(shards), []
        for d, m in self.members(axes).items():
            x = shards[d]
            shape = self._shapes(m, shards, d, "broadcast", axes, None)[root]
            with self.mesh.backend.scope(d):
                buf = self._contig(x) if m.pos == root else xp.empty(shape, dtype=x.dtype)
            if buf.size:
                calls.append(
                    _Call(
                        m.comm.broadcast,
                        (self._ptr(buf), self._ptr(buf), self._count(buf), dt, root, self._stream(d)),
                        (buf,),
                    )
                )
            out[d] = buf
        self._grouped("broadcast", axes, calls)
        return out

    @collective
    def reduce(self, shards: Sequence[Any], axes: tuple[str, ...], root: int, op: str = "sum") -> list[Any]:
        n = self._rooted(axes, root)
        self._log("reduce", axes, shards)
        if n == 1:
            return list(shards)
        return self._reduction("reduce", axes, shards, op, root)

    def _reduction(
        self, what: str, axes: tuple[str, ...], shards: Sequence[Any], op: str, root: int | None = None
    ) -> list[Any]:
        """An allreduce (``root`` None: ``allReduce``, every member gets the reduction) or a reduce (``reduce``
        to member ``root``; the others keep their buffers), in ``WIDE``'s dtype and cast back."""
        dt, red = self._check(what, axes, shards, op=op)
        xp = self.mesh.backend.xp
        out, calls, got = list(shards), [], []
        members = self.members(axes)
        for d, m in members.items():
            gets = root is None or m.pos == root
            with self.mesh.backend.scope(d):
                send = self._reducible(shards[d])
                recv = xp.empty_like(send) if gets else send
            if send.size:
                fn, to = (m.comm.allReduce, ()) if root is None else (m.comm.reduce, (root,))
                args = (self._ptr(send), self._ptr(recv), self._count(send), dt, red, *to, self._stream(d))
                calls.append(_Call(fn, args, (send, recv)))
            if gets:
                out[d] = recv
                got.append(d)
        self._grouped(what, axes, calls)
        return self._narrow(out, shards[next(iter(members))].dtype, got)

    @collective
    def alltoallv(self, send: Sequence[Any], axes: tuple[str, ...], dim: int) -> list[Any]:
        """Grouped send/recv of the pieces of any size (see ``Communicator.alltoallv``); empty pieces post nothing.

        The receive sizes come from the senders' pieces (SPMD: their shapes are exchanged pickled over the
        group's MPI communicator first); logged as ``"alltoall"`` like the emulated communicator.
        """
        n = self.mesh.axes_size(axes)
        local = [d for d in self._local if send[d] is not None]
        if n == 1:
            return [None if s is None else s[0] for s in send]
        dtype = np.dtype(send[local[0]][0].dtype)
        if self.world is None:
            self._log_alltoallv(send, axes)
        else:
            d = self.rank
            group = next(g for g in self.mesh.groups(axes) if d in g)
            pos = group.index(d)
            mine = sum(int(p.size) for j, p in enumerate(send[d]) if j != pos)
            log_spmd(self.world, "alltoall", axes, n, np.empty(mine, dtype=dtype), group=group, dim=0, header=False)
        dt = self._type(dtype, "alltoallv")
        xp = self.mesh.backend.xp
        out: list[Any] = [None] * len(send)
        calls, parts = [], {}
        for d, m in self.members(axes).items():
            with self.mesh.backend.scope(d):
                pieces = [self._contig(p) for p in send[d]]
            if m.sub is None:
                shapes = [tuple(send[e][m.pos].shape) for e in m.group]
            else:
                shapes = [tuple(s) for s in m.sub.alltoall([tuple(p.shape) for p in pieces])]
            with self.mesh.backend.scope(d):
                received = [pieces[j] if j == m.pos else xp.empty(shape, dtype=dtype) for j, shape in enumerate(shapes)]
            calls.extend(self._pairwise(m, d, dt, pieces, received))
            parts[d] = received
        self._grouped("alltoallv", axes, calls)
        for d, received in parts.items():
            with self.mesh.backend.scope(d):
                out[d] = xp.concatenate(received, axis=dim)
        return out
