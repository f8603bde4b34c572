"""A host-memory stand-in for ``cupy.cuda.nccl``, to test NcclCommunicator without GPUs.

It keeps NCCL's contract: buffers are raw addresses with a count and a type
constant; a communicator clique made by ``initAll`` only runs when every
member has posted (a collective on a clique of several members outside
``groupStart/groupEnd`` would deadlock one thread, so it raises); calls are
matched in issue order per clique; send/recv pairs must agree on count and
type; at ``groupEnd`` everything runs. Numbers are the real NCCL enum values.
"""

from __future__ import annotations

import ctypes
from collections import defaultdict
from typing import Any

import numpy as np

NCCL_INT8, NCCL_UINT8, NCCL_INT32, NCCL_UINT32, NCCL_INT64, NCCL_UINT64 = 0, 1, 2, 3, 4, 5
NCCL_FLOAT16, NCCL_FLOAT32, NCCL_FLOAT64 = 6, 7, 8
NCCL_SUM, NCCL_PROD, NCCL_MAX, NCCL_MIN = 0, 1, 2, 3
available = True

_TYPES = {0: np.int8, 1: np.uint8, 2: np.int32, 3: np.uint32, 4: np.int64, 5: np.uint64,
          6: np.float16, 7: np.float32, 8: np.float64}
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


_DEPTH = [0]
_QUEUE: list[tuple[Any, ...]] = []
STATS: dict[str, int] = defaultdict(int)


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


def _post(comm: NcclCommunicator, kind: str, *args: Any) -> None:
    STATS[kind] += 1
    _QUEUE.append((comm, kind, args))
    if _DEPTH[0] == 0:
        if comm.clique.size > 1:
            _QUEUE.clear()
            raise NcclError(f"{kind} on a {comm.clique.size}-rank clique outside groupStart/groupEnd would hang")
        queue = list(_QUEUE)
        _QUEUE.clear()
        _run(queue)


def _run(queue: list[tuple[Any, ...]]) -> None:
    colls: dict[_Clique, dict[int, list]] = defaultdict(lambda: defaultdict(list))
    sends: dict[tuple, list] = defaultdict(list)
    recvs: dict[tuple, list] = defaultdict(list)
    for comm, kind, args in queue:
        if kind == "send":
            sends[(comm.clique, comm.rank, args[3])].append(args)
        elif kind == "recv":
            recvs[(comm.clique, args[3], comm.rank)].append(args)
        else:
            colls[comm.clique][comm.rank].append((kind, args))
    for clique, by_rank in colls.items():
        counts = {r: len(c) for r, c in by_rank.items()}
        if len(by_rank) != clique.size or len(set(counts.values())) != 1:
            raise NcclError(f"ranks posted different collectives: {counts} of {clique.size}")
        for k in range(next(iter(counts.values()))):
            _collective([by_rank[r][k] for r in range(clique.size)])
    if set(sends) != set(recvs):
        raise NcclError(f"unmatched send/recv pairs: {set(sends) ^ set(recvs)}")
    for key, posted in sends.items():
        got = recvs[key]
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
        _post(self, "allReduce", send, recv, count, dtype, op)

    def allGather(self, send: int, recv: int, count: int, dtype: int, stream: int) -> None:
        _post(self, "allGather", send, recv, count, dtype)

    def reduceScatter(self, send: int, recv: int, count: int, dtype: int, op: int, stream: int) -> None:
        _post(self, "reduceScatter", send, recv, count, dtype, op)

    def broadcast(self, send: int, recv: int, count: int, dtype: int, root: int, stream: int) -> None:
        _post(self, "broadcast", send, recv, count, dtype, root)

    def reduce(self, send: int, recv: int, count: int, dtype: int, op: int, root: int, stream: int) -> None:
        _post(self, "reduce", send, recv, count, dtype, op, root)

    def send(self, buf: int, count: int, dtype: int, peer: int, stream: int) -> None:
        _post(self, "send", buf, count, dtype, peer)

    def recv(self, buf: int, count: int, dtype: int, peer: int, stream: int) -> None:
        _post(self, "recv", buf, count, dtype, peer)
