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
same member as on an emulated mesh. Calls are ordered on each GPU's stream
(``backend.stream_ptr``). CuPy's NCCL has no alltoall: it is grouped
send/recv. Uneven blocks (ceil-chunked layouts) use grouped broadcasts for
allgather and a padded reduce-scatter. bool travels as uint8 (a sum is a
max, i.e. a logical or, as on the emulated mesh). Empty buffers are not sent
(every member knows every size, so all skip together).

NCCL errors become ``sa.CommError`` naming the collective, the axes and the mesh.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import CommError, DTypeError, ShardArrayError
from ..layout import group_chunk
from .base import REDUCE_OPS, Communicator

#: numpy dtype name -> the name of NCCL's type constant in ``cupy.cuda.nccl``
DTYPES = {
    "int8": "NCCL_INT8", "uint8": "NCCL_UINT8", "int32": "NCCL_INT32", "uint32": "NCCL_UINT32",
    "int64": "NCCL_INT64", "uint64": "NCCL_UINT64", "float16": "NCCL_FLOAT16", "float32": "NCCL_FLOAT32",
    "float64": "NCCL_FLOAT64", "bfloat16": "NCCL_BFLOAT16", "bool": "NCCL_UINT8",
}
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


@dataclass
class _Member:
    """One local device's place in one axis group."""

    comm: Any  # the NCCL communicator of this device in this group
    pos: int  # its rank in the group
    group: tuple[int, ...]  # the mesh devices of the group, in rank order
    sub: Any = None  # the group's MPI communicator (SPMD only), for sizes


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

    # ---------------------------------------------------------------- set-up
    @property
    def _local(self) -> tuple[int, ...]:
        return self.mesh.local_devices if self.world is not None else tuple(range(self.mesh.size))

    def _fail(self, what: str, axes: tuple[str, ...], group: Sequence[int] | None, error: Exception) -> CommError:
        gpus = self.mesh.backend.gpus
        where = f" (devices {list(group)} on GPUs {[gpus[d] for d in group]})" if group and gpus else ""
        hint = ""
        if gpus and group and len({gpus[d] for d in group}) < len(group):
            hint = (". Several ranks on one GPU need NCCL >= 2.30 with NCCL_MULTI_RANK_GPU_ENABLE=1; "
                    "otherwise put every shard on one GPU (the emulated communicator) or one shard per GPU")
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
        gpus = self.mesh.backend.gpus
        for color, group in enumerate(self.mesh.groups(axes)):
            mine = [d for d in group if d in local]
            if not mine:
                continue
            if self.world is None:  # never inside groupStart/groupEnd
                comms = self._guard("communicator set-up (initAll)", axes, group,
                                    lambda: self.lib.NcclCommunicator.initAll([gpus[d] for d in group]))
                for pos, (d, c) in enumerate(zip(group, comms)):
                    found[d] = _Member(c, pos, group)
            else:
                (d,) = mine
                pos = group.index(d)
                sub = self.world.Split(color, pos)
                uid = sub.bcast(self.lib.get_unique_id() if pos == 0 else None, root=0)

                def init() -> Any:
                    with self.mesh.backend.scope(d):
                        return self.lib.NcclCommunicator(len(group), uid, pos)

                found[d] = _Member(self._guard("communicator set-up (initRank)", axes, group, init), pos, group, sub)
        self._members[axes] = found
        return found

    def _grouped(self, what: str, axes: tuple[str, ...], calls: list[Callable[[], Any]]) -> None:
        """Issue ``calls`` (one or more per local device) inside one groupStart/groupEnd."""
        if not calls:
            return

        def run() -> None:
            self.lib.groupStart()
            try:
                for call in calls:
                    call()
            finally:
                self.lib.groupEnd()

        self._guard(what, axes, None, run)

    # ---------------------------------------------------------------- buffers
    def _type(self, dtype: Any, what: str) -> int:
        name = np.dtype(dtype).name
        const = DTYPES.get(name)
        if const is None or not hasattr(self.lib, const):
            known = sorted(k for k, v in DTYPES.items() if hasattr(self.lib, v))
            raise DTypeError(f"NCCL {what} cannot move dtype {name}; NCCL here moves {known}. Cast with .astype first")
        return getattr(self.lib, const)

    def _op(self, op: str, dtype: Any) -> int:
        if op not in _OPS:
            raise ValueError(f"unknown reduction {op!r}; one of {REDUCE_OPS}")
        if np.dtype(dtype) == np.bool_ and op == "sum":
            op = "max"  # a sum of booleans is a logical or
        return getattr(self.lib, _OPS[op])

    def _wire(self, x: Any) -> Any:
        """A contiguous buffer NCCL can read (bool as uint8)."""
        xp = self.mesh.backend.xp
        x = xp.asarray(x)  # NumPy reductions may give scalars
        if not x.flags.c_contiguous:
            x = xp.ascontiguousarray(x).reshape(x.shape)
        return x.view(np.uint8) if x.dtype == np.bool_ else x

    def _ptr(self, x: Any) -> int:
        return self.mesh.backend.pointer(x)

    def _stream(self, d: int) -> int:
        return self.mesh.backend.stream_ptr(d)

    def _shapes(self, m: _Member, shards: Sequence[Any], d: int) -> list[tuple[int, ...]]:
        """The shard shapes of every member of ``d``'s group."""
        if m.sub is None:
            return [tuple(shards[e].shape) for e in m.group]
        return [tuple(s) for s in m.sub.allgather(tuple(shards[d].shape))]

    def _log(self, op: str, axes: tuple[str, ...], shards: Sequence[Any], devices: Sequence[int] | None = None) -> int:
        if self.world is None:
            return super()._log(op, axes, shards, devices)
        from .mpi import log_spmd

        n = self.mesh.axes_size(axes)
        log_spmd(self.world, op, axes, n, shards[self.rank])
        return n

    # ------------------------------------------------------------ host side
    def host_reduce(self, value: float, op: str) -> float:
        if self.world is None:
            return value
        from .mpi import reduce_op

        return self.world.allreduce(value, op=reduce_op(op))

    def assemble(
        self, shards: Sequence[Any], slices: Sequence[tuple[slice, ...]], shape: tuple[int, ...], dtype: Any,
        used_axes: Any,
    ) -> np.ndarray:
        backend = self.mesh.backend
        if self.world is not None:
            from .mpi import gather_blocks

            return gather_blocks(self.world, backend.to_numpy(shards[self.rank]), slices, shape, dtype)
        out = np.empty(shape, dtype=dtype)
        rest = tuple(a for a in self.mesh.axis_names if a not in set(used_axes))
        for group in self.mesh.groups(rest):  # one replica of every block
            out[slices[group[0]]] = backend.to_numpy(shards[group[0]])
        return out

    # ------------------------------------------------------------ collectives
    def allreduce(self, shards: Sequence[Any], axes: tuple[str, ...], op: str = "sum") -> list[Any]:
        n = self._log("allreduce", axes, shards)
        if n == 1:
            return list(shards)
        out, calls = list(shards), []
        for d, m in self.members(axes).items():
            x = shards[d]
            dt, red = self._type(x.dtype, "allreduce"), self._op(op, x.dtype)
            with self.mesh.backend.scope(d):
                send = self._wire(x)
                recv = self.mesh.backend.xp.empty_like(send)
            out[d] = recv.view(x.dtype)
            if send.size:
                calls.append(lambda c=m.comm, s=send, r=recv, d=d: c.allReduce(
                    self._ptr(s), self._ptr(r), s.size, dt, red, self._stream(d)))
        self._grouped("allreduce", axes, calls)
        return out

    def allgather(self, shards: Sequence[Any], axes: tuple[str, ...], dim: int) -> list[Any]:
        n = self._log("allgather", axes, shards)
        if n == 1:
            return list(shards)
        xp = self.mesh.backend.xp
        out, calls = list(shards), []
        for d, m in self.members(axes).items():
            x = shards[d]
            dt = self._type(x.dtype, "allgather")
            lengths = [s[dim] for s in self._shapes(m, shards, d)]
            offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(int)
            with self.mesh.backend.scope(d):
                front = self._wire(xp.moveaxis(x, dim, 0))
                recv = xp.empty((int(offsets[-1]),) + front.shape[1:], dtype=front.dtype)
            rest = int(np.prod(front.shape[1:], dtype=np.int64))
            if len(set(lengths)) == 1:
                if front.size:
                    calls.append(lambda c=m.comm, s=front, r=recv, d=d: c.allGather(
                        self._ptr(s), self._ptr(r), s.size, dt, self._stream(d)))
            else:  # uneven blocks: member i broadcasts its block into slot i
                for root, (lo, hi) in enumerate(zip(offsets[:-1], offsets[1:])):
                    if hi > lo and rest:
                        slot = recv[int(lo):int(hi)]
                        src = front if root == m.pos else slot
                        calls.append(lambda c=m.comm, s=src, r=slot, root=root, d=d: c.broadcast(
                            self._ptr(s), self._ptr(r), r.size, dt, root, self._stream(d)))
            out[d] = xp.moveaxis(recv.view(x.dtype), 0, dim)
        self._grouped("allgather", axes, calls)
        return out

    def reduce_scatter(self, shards: Sequence[Any], axes: tuple[str, ...], dim: int, op: str = "sum") -> list[Any]:
        n = self._log("reduce_scatter", axes, shards)
        if n == 1:
            return list(shards)
        xp = self.mesh.backend.xp
        radix = [self.mesh.axis_size(a) for a in axes]
        out, calls = list(shards), []
        for d, m in self.members(axes).items():
            x = shards[d]
            dt, red = self._type(x.dtype, "reduce_scatter"), self._op(op, x.dtype)
            size = x.shape[dim]
            bounds = [group_chunk(0, size, radix, i) for i in range(n)]
            lengths = [hi - lo for lo, hi in bounds]
            width = max(lengths)
            with self.mesh.backend.scope(d):
                front = self._wire(xp.moveaxis(x, dim, 0))
                if len(set(lengths)) > 1:  # pad every chunk to the longest; the padding is dropped after
                    padded = xp.zeros((n, width) + front.shape[1:], dtype=front.dtype)
                    for i, (lo, hi) in enumerate(bounds):
                        padded[i, : hi - lo] = front[lo:hi]
                    front = padded
                recv = xp.empty((width,) + front.shape[front.ndim - x.ndim + 1:], dtype=front.dtype)
            if recv.size:
                calls.append(lambda c=m.comm, s=front, r=recv, d=d: c.reduceScatter(
                    self._ptr(s), self._ptr(r), r.size, dt, red, self._stream(d)))
            out[d] = xp.moveaxis(recv[: lengths[m.pos]].view(x.dtype), 0, dim)
        self._grouped("reduce_scatter", axes, calls)
        return out

    def alltoall(self, shards: Sequence[Any], axes: tuple[str, ...], split_dim: int, concat_dim: int) -> list[Any]:
        n = self._log("alltoall", axes, shards)
        if n == 1:
            return list(shards)
        xp = self.mesh.backend.xp
        radix = [self.mesh.axis_size(a) for a in axes]
        out, calls, parts = list(shards), [], {}
        for d, m in self.members(axes).items():
            x = shards[d]
            dt = self._type(x.dtype, "alltoall")
            shapes = self._shapes(m, shards, d)
            pieces = []
            with self.mesh.backend.scope(d):
                for i in range(n):
                    lo, hi = group_chunk(0, x.shape[split_dim], radix, i)
                    index = (slice(None),) * split_dim + (slice(lo, hi),)
                    pieces.append(self._wire(x[index]))
                received = []
                for j, shape in enumerate(shapes):  # what member j sends me: its chunk number m.pos
                    lo, hi = group_chunk(0, shape[split_dim], radix, m.pos)
                    got = shape[:split_dim] + (hi - lo,) + shape[split_dim + 1:]
                    received.append(pieces[j] if j == m.pos else xp.empty(got, dtype=pieces[j].dtype))
            for j in range(n):
                if j == m.pos:
                    continue
                if pieces[j].size:
                    calls.append(lambda c=m.comm, s=pieces[j], j=j, d=d: c.send(
                        self._ptr(s), s.size, dt, j, self._stream(d)))
                if received[j].size:
                    calls.append(lambda c=m.comm, r=received[j], j=j, d=d: c.recv(
                        self._ptr(r), r.size, dt, j, self._stream(d)))
            parts[d] = [r.view(x.dtype) for r in received]
        self._grouped("alltoall", axes, calls)
        for d, received in parts.items():  # queued after the receives on the same stream
            with self.mesh.backend.scope(d):
                out[d] = xp.concatenate(received, axis=concat_dim)
        return out

    def broadcast(self, shards: Sequence[Any], axes: tuple[str, ...], root: int) -> list[Any]:
        n = self.mesh.axes_size(axes)
        self._check_root(root, axes, n)
        self._log("broadcast", axes, shards, [g[root] for g in self.mesh.groups(axes)])
        if n == 1:
            return list(shards)
        xp = self.mesh.backend.xp
        out, calls = list(shards), []
        for d, m in self.members(axes).items():
            x = shards[d]
            dt = self._type(x.dtype, "broadcast")
            shape = self._shapes(m, shards, d)[root]
            with self.mesh.backend.scope(d):
                buf = self._wire(x) if m.pos == root else xp.empty(shape, dtype=_wire_dtype(x.dtype))
            if buf.size:
                calls.append(lambda c=m.comm, b=buf, d=d: c.broadcast(
                    self._ptr(b), self._ptr(b), b.size, dt, root, self._stream(d)))
            out[d] = buf.view(x.dtype)
        self._grouped("broadcast", axes, calls)
        return out

    def reduce(self, shards: Sequence[Any], axes: tuple[str, ...], root: int, op: str = "sum") -> list[Any]:
        n = self.mesh.axes_size(axes)
        self._check_root(root, axes, n)
        self._log("reduce", axes, shards)
        if n == 1:
            return list(shards)
        out, calls = list(shards), []
        for d, m in self.members(axes).items():
            x = shards[d]
            dt, red = self._type(x.dtype, "reduce"), self._op(op, x.dtype)
            with self.mesh.backend.scope(d):
                send = self._wire(x)
                recv = self.mesh.backend.xp.empty_like(send) if m.pos == root else send
            if send.size:
                calls.append(lambda c=m.comm, s=send, r=recv, d=d: c.reduce(
                    self._ptr(s), self._ptr(r), s.size, dt, red, root, self._stream(d)))
            if m.pos == root:
                out[d] = recv.view(x.dtype)
        self._grouped("reduce", axes, calls)
        return out


def _wire_dtype(dtype: Any) -> np.dtype:
    return np.dtype(np.uint8) if np.dtype(dtype) == np.bool_ else np.dtype(dtype)
