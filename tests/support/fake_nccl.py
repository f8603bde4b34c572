"""A host-memory stand-in for ``cupy.cuda.nccl``, to test NcclCommunicator without GPUs.

It keeps NCCL's contract: buffers are raw addresses with a count and a type
constant; a communicator clique made by ``initAll`` only runs when every
member has posted (a collective on a clique of several members outside
``groupStart/groupEnd`` would deadlock one thread, so it raises); calls are
matched in issue order per clique; send/recv pairs must agree on count and
type; at ``groupEnd`` everything runs. Numbers are the real NCCL enum values.

It also models how real NCCL fails *silently*, so tests can see it:

* two ranks of one communicator posting on one CUDA stream in a group raise
  (on one GPU their kernels would run one after the other, each waiting for
  the other: a deadlock);
* a group whose clique did not post on every rank (a call that failed half
  way, a rank that skipped) does not raise at ``groupEnd``, as real NCCL
  would not: those calls are launched and never complete. ``hangs()`` lists
  such cliques until every member is ``abort()``-ed, and a group left open
  (``groupStart`` without ``groupEnd``) is a hang too. ``reset()`` clears
  the module state between tests.
"""

from __future__ import annotations

import ctypes
from collections import defaultdict
from typing import Any

import ml_dtypes  # noqa: F401  (registers np.dtype("bfloat16"))
import numpy as np

NCCL_INT8, NCCL_UINT8, NCCL_INT32, NCCL_UINT32, NCCL_INT64, NCCL_UINT64 = 0, 1, 2, 3, 4, 5
NCCL_FLOAT16, NCCL_FLOAT32, NCCL_FLOAT64 = 6, 7, 8
NCCL_SUM, NCCL_PROD, NCCL_MAX, NCCL_MIN = 0, 1, 2, 3
available = True

_TYPES = {0: np.int8, 1: np.uint8, 2: np.int32, 3: np.uint32, 4: np.int64, 5: np.uint64,
          6: np.float16, 7: np.float32, 8: np.float64, 9: np.dtype("bfloat16")}  # 9: ncclBfloat16 (ml_dtypes)
_REDUCE = {0: np.add, 1: np.multiply, 2: np.maximum, 3: np.minimum}


class NcclError(RuntimeError):
    pass


def _view(ptr: int, count: int, dtype: int) -> np.ndarray:
    t = np.dtype(_TYPES[dtype])
    if count == 0:
        return np.empty(0, t)
    return np.frombuffer((ctypes.c_char * (count * t.itemsize)).from_address(ptr), dtype=t)


class _Clique:
    def __init__(self, size: int) -> None:
        self.size = size
        self.members: list[NcclCommunicator] = []

    def aborted(self) -> bool:
        return all(m.is_aborted for m in self.members)


_DEPTH = [0]
_QUEUE: list[tuple[Any, ...]] = []
_HUNG: list[tuple[_Clique, str]] = []  # launched calls that wait forever, and why
STATS: dict[str, int] = defaultdict(int)


def hangs() -> list[str]:
    """What would hang on a real GPU now: cliques waiting for a member that never posted, and an open group."""
    out = [why for clique, why in _HUNG if not clique.aborted()]
    if _DEPTH[0]:
        out.append(f"a group left open (groupStart without groupEnd) holding {len(_QUEUE)} posted call(s)")
    return out


def reset() -> None:
    """Forget every group, queue and hang (between tests)."""
    _DEPTH[0] = 0
    _QUEUE.clear()
    _HUNG.clear()
    STATS.clear()


def groupStart() -> None:
    _DEPTH[0] += 1


def groupEnd() -> None:
    if _DEPTH[0] <= 0:
        raise NcclError("groupEnd without groupStart")
    _DEPTH[0] -= 1
    if _DEPTH[0] == 0:
        queue = list(_QUEUE)
        _QUEUE.clear()
        _run(queue)


def _post(comm: NcclCommunicator, kind: str, stream: int, *args: Any) -> None:
    if comm.is_aborted:
        raise NcclError(f"{kind} on rank {comm.rank} of an aborted communicator; make a new one")
    STATS[kind] += 1
    _QUEUE.append((comm, kind, args, stream))
    if _DEPTH[0] == 0:
        if comm.clique.size > 1:
            _QUEUE.clear()
            _HUNG.append((comm.clique, f"{kind} posted by rank {comm.rank} alone outside a group"))
            raise NcclError(f"{kind} on a {comm.clique.size}-rank clique outside groupStart/groupEnd would hang")
        queue = list(_QUEUE)
        _QUEUE.clear()
        _run(queue)


def _check_streams(queue: list[tuple[Any, ...]]) -> None:
    """Two ranks of one clique on one stream: their kernels serialize and each waits for the other."""
    seen: dict[tuple[_Clique, int], int] = {}
    for comm, kind, _, stream in queue:
        other = seen.setdefault((comm.clique, stream), comm.rank)
        if other != comm.rank and comm.clique.size > 1:
            raise NcclError(f"ranks {other} and {comm.rank} of one communicator posted {kind} on the same stream "
                            f"{stream:#x} in one group: their kernels would wait on each other forever (deadlock); "
                            f"give every rank its own stream")


def _run(queue: list[tuple[Any, ...]]) -> None:
    _check_streams(queue)
    colls: dict[_Clique, dict[int, list]] = defaultdict(lambda: defaultdict(list))
    sends: dict[tuple, list] = defaultdict(list)
    recvs: dict[tuple, list] = defaultdict(list)
    for comm, kind, args, _ in queue:
        if kind == "send":
            sends[(comm.clique, comm.rank, args[3])].append(args)
        elif kind == "recv":
            recvs[(comm.clique, args[3], comm.rank)].append(args)
        else:
            colls[comm.clique][comm.rank].append((kind, args))
    hung = set()
    for clique, by_rank in colls.items():
        counts = {r: len(c) for r, c in by_rank.items()}
        if len(by_rank) != clique.size or len(set(counts.values())) != 1:  # launched; waits for the missing ranks
            _HUNG.append((clique, f"collectives posted by ranks {counts} of a {clique.size}-rank clique never complete"))
            hung.add(clique)
            continue
        for k in range(next(iter(counts.values()))):
            _collective([by_rank[r][k] for r in range(clique.size)])
    for key in set(sends) ^ set(recvs):  # a send without its recv (or the reverse) waits forever
        _HUNG.append((key[0], f"send/recv between ranks {key[1]} -> {key[2]} has no partner"))
        hung.add(key[0])
    for key, posted in sends.items():
        got = recvs[key]
        if key[0] in hung or not got:
            continue
        if len(got) != len(posted):
            raise NcclError(f"{len(posted)} sends but {len(got)} receives for {key[1:]}")
        for (sptr, scount, stype, _), (rptr, rcount, rtype, _) in zip(posted, got):
            if (scount, stype) != (rcount, rtype):
                raise NcclError(f"send of {scount} type {stype} met recv of {rcount} type {rtype}")
            _view(rptr, rcount, rtype)[:] = _view(sptr, scount, stype)


def _collective(calls: list[tuple[str, tuple]]) -> None:
    kinds = {k for k, _ in calls}
    if len(kinds) != 1:
        raise NcclError(f"ranks disagree on the collective: {kinds}")
    kind = calls[0][0]
    args = [a for _, a in calls]
    n = len(args)
    if kind == "allReduce":
        (count, dtype, op) = args[0][2:5]
        if any(a[2:5] != (count, dtype, op) for a in args):
            raise NcclError("allReduce arguments differ between ranks")
        total = _view(args[0][0], count, dtype).copy()
        for a in args[1:]:
            total = _REDUCE[op](total, _view(a[0], count, dtype))
        for a in args:
            _view(a[1], count, dtype)[:] = total
    elif kind == "allGather":
        count, dtype = args[0][2:4]
        parts = [_view(a[0], count, dtype).copy() for a in args]
        for a in args:
            _view(a[1], count * n, dtype)[:] = np.concatenate(parts)
    elif kind == "reduceScatter":
        count, dtype, op = args[0][2:5]
        total = _view(args[0][0], count * n, dtype).copy()
        for a in args[1:]:
            total = _REDUCE[op](total, _view(a[0], count * n, dtype))
        for r, a in enumerate(args):
            _view(a[1], count, dtype)[:] = total[r * count:(r + 1) * count]
    elif kind == "broadcast":
        count, dtype, root = args[0][2:5]
        if any(a[2:5] != (count, dtype, root) for a in args):
            raise NcclError("broadcast arguments differ between ranks")
        value = _view(args[root][0], count, dtype).copy()
        for a in args:
            _view(a[1], count, dtype)[:] = value
    elif kind == "reduce":
        count, dtype, op, root = args[0][2:6]
        total = _view(args[0][0], count, dtype).copy()
        for a in args[1:]:
            total = _REDUCE[op](total, _view(a[0], count, dtype))
        _view(args[root][1], count, dtype)[:] = total
    else:
        raise NcclError(f"unknown collective {kind}")


class NcclCommunicator:
    """One rank of a clique (made by ``initAll``)."""

    def __init__(self, clique: _Clique, rank: int, device: int) -> None:
        self.clique, self.rank, self.device = clique, rank, device
        self.is_aborted = False
        clique.members.append(self)

    def abort(self) -> None:
        """``ncclCommAbort``: stop this rank's pending work and free the communicator."""
        STATS["abort"] += 1
        self.is_aborted = True

    def destroy(self) -> None:
        self.is_aborted = True

    @staticmethod
    def initAll(devices: list[int]) -> list[NcclCommunicator]:
        if _DEPTH[0]:
            raise NcclError("initAll inside groupStart/groupEnd")
        if not isinstance(devices, list):
            raise ValueError('"devices" should be an int or a list of int.')
        STATS["initAll"] += 1
        clique = _Clique(len(devices))
        return [NcclCommunicator(clique, r, g) for r, g in enumerate(devices)]

    def allReduce(self, send: int, recv: int, count: int, dtype: int, op: int, stream: int) -> None:
        _post(self, "allReduce", stream, send, recv, count, dtype, op)

    def allGather(self, send: int, recv: int, count: int, dtype: int, stream: int) -> None:
        _post(self, "allGather", stream, send, recv, count, dtype)

    def reduceScatter(self, send: int, recv: int, count: int, dtype: int, op: int, stream: int) -> None:
        _post(self, "reduceScatter", stream, send, recv, count, dtype, op)

    def broadcast(self, send: int, recv: int, count: int, dtype: int, root: int, stream: int) -> None:
        _post(self, "broadcast", stream, send, recv, count, dtype, root)

    def reduce(self, send: int, recv: int, count: int, dtype: int, op: int, root: int, stream: int) -> None:
        _post(self, "reduce", stream, send, recv, count, dtype, op, root)

    def send(self, buf: int, count: int, dtype: int, peer: int, stream: int) -> None:
        _post(self, "send", stream, buf, count, dtype, peer)

    def recv(self, buf: int, count: int, dtype: int, peer: int, stream: int) -> None:
        _post(self, "recv", stream, buf, count, dtype, peer)
