"""The emulated Communicator: collectives as array arithmetic on one host.

Works for every backend (NumPy, CuPy on one GPU, meta shapes). Groups whose
members hold the very same buffers (replicas along other axes) are computed
once and share the result; buffers are never modified in place.

Reductions of bfloat16 buffers (sum, max, min) add in float32 and round the
result once, as the MPI communicator does (and NCCL, whose bfloat16 sums
accumulate in float32 inside each step): the answer does not depend on the
order the members are added in.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, cast

import numpy as np

from ..backend import cuda_kernels
from ..backend.classlist import ClassList, compact, is_interned
from ..chunks import group_chunk
from ..dtypes import BFLOAT16
from .base import REDUCE_OPS, Communicator, fill_block
from .parallel import run_all

_Ids = tuple[int, ...]  # a group's devices, or the ids of their send lists (the key of what a group sends)
_Keyed = tuple[_Ids, _Ids]  # (a group's devices, its key)


def _take(array: Any, dim: int, lo: int, hi: int) -> Any:
    index = [slice(None)] * array.ndim
    index[dim] = slice(lo, hi)
    return array[tuple(index)]


class EmulatedCommunicator(Communicator):
    """Collectives computed directly on the shards of every device."""

    def _reducer(self, op: str) -> Callable[[Any, Any], Any]:
        xp = self.mesh.backend.xp
        if op == "sum":  # CuPy blocks of one shape and float dtype: one vectorized kernel (cuda_kernels.add)
            return functools.partial(cuda_kernels.add, xp) if self.mesh.backend.name == "cupy" else xp.add
        if op == "max":
            return xp.maximum
        if op == "min":
            return xp.minimum
        raise ValueError(f"unknown reduction {op!r}; one of {REDUCE_OPS}")

    def _total(self, members: list[Any], reducer: Callable[[Any, Any], Any]) -> Any:
        """``reducer`` folded over the group's buffers; bfloat16 ones in float32, rounded once."""
        first = members[0]
        has_data = self.mesh.backend.has_data
        if not has_data:  # meta: the distinct buffers give the same shape and dtype
            distinct = list({id(m): m for m in members}.values())
            members = distinct if len(distinct) > 1 or len(members) == 1 else distinct * 2  # a new buffer
        if has_data and first.dtype == BFLOAT16:  # a dtype comparison, not the dtype's name (built per call)
            if len(members) == 2 and self.mesh.backend.name == "cupy":
                # one launch: the sum kernel (cuda_kernels.add) adds in float32 and rounds once, so it gives the
                # casts' result bit for bit (and max/min are exact in bfloat16)
                return reducer(*members)
            xp = self.mesh.backend.xp
            total = functools.reduce(reducer, [cuda_kernels.cast(xp, b, np.float32) for b in members])
            return cuda_kernels.cast(xp, total, first.dtype)
        total = functools.reduce(reducer, members)
        # (NumPy reduces 0-d arrays to NumPy scalars, which later ops promote as values, not arrays: keep a block)
        return np.asarray(total) if isinstance(total, np.generic) else total

    def _per_group(
        self, shards: Sequence[Any], axes: tuple[str, ...], fn: Callable[[list[Any]], list[Any]]
    ) -> list[Any]:
        scope = self.mesh.backend.device_scope
        if isinstance(shards, ClassList) and scope is None and not self.mesh.backend.has_data:
            # a meta ClassList stands in for the per-device list (read like one, never mutated)
            return cast("list[Any]", self._per_group_class(shards, axes, fn))
        out: list[Any] = list(shards)
        done: dict[tuple[int, ...], list[Any]] = {}
        for group in self.mesh.groups(axes):
            members = [shards[d] for d in group]
            key = tuple(map(id, members))
            result = done.get(key)
            if result is None:
                if scope is None:
                    result = done[key] = fn(members)
                else:  # every shard on one GPU (devices=[g, g, ...]): compute there
                    with scope(group[0]):
                        result = done[key] = fn(members)
            for d, r in zip(group, result):
                out[d] = r
        return out

    def _per_group_class(
        self, shards: ClassList, axes: tuple[str, ...], fn: Callable[[list[Any]], list[Any]]
    ) -> ClassList:
        """``_per_group`` on a meta ``ClassList``: ``fn`` once per distinct row of member classes."""
        groups = self.mesh.group_array(axes)
        memo = self.mesh.__dict__.setdefault("_meta_group_rows", {})
        key = (tuple(axes), id(shards.index))
        hit = memo.get(key) if is_interned(shards.index) else None  # interned arrays stay alive: ids are theirs
        if hit is None:
            rows = shards.index[groups]  # (n_groups, n): each member's class
            _, first, inverse = np.unique(rows, axis=0, return_index=True, return_inverse=True)
            hit = (rows, first, inverse.reshape(-1))
            if is_interned(shards.index):
                if len(memo) > 1024:
                    memo.clear()
                memo[key] = hit
        rows, first, inverse = hit
        n = groups.shape[1]
        values: list[Any] = [None] * (len(first) * n)
        by_shapes: dict[tuple, list[Any]] = {}  # meta results depend on the members' shapes and dtypes only
        for u in np.argsort(first, kind="stable").tolist():  # in order of the groups' first devices
            members = [shards.values[c] for c in rows[first[u]].tolist()]
            shape_key = tuple((m.shape, m.dtype) for m in members)
            result = by_shapes.get(shape_key)
            if result is None:
                result = by_shapes[shape_key] = fn(members)
            values[u * n : (u + 1) * n] = result
        index = np.empty(self.mesh.size, dtype=np.intp)
        index[groups] = inverse[:, None] * n + np.arange(n)
        return compact(values, index)

    def allreduce(self, shards: Sequence[Any], axes: tuple[str, ...], op: str = "sum") -> list[Any]:
        reducer = self._reducer(op)
        n = self._log("allreduce", axes, shards)
        if n == 1:
            return list(shards)
        return self._per_group(shards, axes, lambda m: [self._total(m, reducer)] * len(m))

    def allgather(self, shards: Sequence[Any], axes: tuple[str, ...], dim: int) -> list[Any]:
        n = self._log("allgather", axes, shards)
        if n == 1:
            return list(shards)
        xp = self.mesh.backend.xp
        return self._per_group(shards, axes, lambda m: [xp.concatenate(m, axis=dim)] * len(m))

    def reduce_scatter(self, shards: Sequence[Any], axes: tuple[str, ...], dim: int, op: str = "sum") -> list[Any]:
        reducer = self._reducer(op)
        n = self._log("reduce_scatter", axes, shards)
        if n == 1:
            return list(shards)

        radix = [self.mesh.axis_size(a) for a in axes]

        def run(m: list[Any]) -> list[Any]:
            total = self._total(m, reducer)
            size = total.shape[dim]
            return [_take(total, dim, *group_chunk(0, size, radix, i)) for i in range(n)]

        return self._per_group(shards, axes, run)

    def alltoall(self, shards: Sequence[Any], axes: tuple[str, ...], split_dim: int, concat_dim: int) -> list[Any]:
        n = self._log("alltoall", axes, shards)
        if n == 1:
            return list(shards)
        xp = self.mesh.backend.xp
        radix = [self.mesh.axis_size(a) for a in axes]

        def run(m: list[Any]) -> list[Any]:
            jobs = []
            for i in range(n):
                pieces = [_take(s, split_dim, *group_chunk(0, s.shape[split_dim], radix, i)) for s in m]
                jobs.append(functools.partial(xp.concatenate, pieces, axis=concat_dim))
            return run_all(jobs, sum(int(s.size) * s.dtype.itemsize for s in m), self.mesh.backend)

        return self._per_group(shards, axes, run)

    def broadcast(self, shards: Sequence[Any], axes: tuple[str, ...], root: int) -> list[Any]:
        n = self._rooted(axes, root)
        roots = [g[root] for g in self.mesh.groups(axes)]
        self._log("broadcast", axes, shards, roots)
        if n == 1:
            return list(shards)
        return self._per_group(shards, axes, lambda m: [m[root]] * len(m))

    def reduce(self, shards: Sequence[Any], axes: tuple[str, ...], root: int, op: str = "sum") -> list[Any]:
        reducer = self._reducer(op)
        n = self._rooted(axes, root)
        self._log("reduce", axes, shards)
        if n == 1:
            return list(shards)

        def run(m: list[Any]) -> list[Any]:
            out = list(m)
            out[root] = self._total(m, reducer)
            return out

        return self._per_group(shards, axes, run)

    def alltoallv(self, send: Sequence[Any], axes: tuple[str, ...], dim: int) -> list[Any]:
        """Member i gets ``concatenate([send[member j][i] for j], dim)`` (see ``Communicator.alltoallv``). Groups
        sending the very same pieces (replicas) share results; the receivers' blocks are joined on the copy pool
        when they are big (``comm.parallel``), as real devices would at once."""
        self._log_alltoallv(send, axes)
        xp = self.mesh.backend.xp
        members, firsts = self._distinct_groups(send, axes)
        jobs = {
            key: [functools.partial(_join, xp, [send[j][i] for j in group], dim) for i in range(len(group))]
            for key, group in firsts.items()
        }
        nbytes = sum(int(getattr(p, "nbytes", 0)) for group in firsts.values() for d in group for p in send[d])
        flat = [job for group_jobs in jobs.values() for job in group_jobs]
        return _spread(len(send), members, jobs, run_all(flat, nbytes, self.mesh.backend))

    def alltoallv_boxes(
        self,
        send: Sequence[Any],
        axes: tuple[str, ...],
        boxes: Sequence[Any],
        shapes: Sequence[Any],
        dtype: Any,
    ) -> list[Any]:
        """Every piece written straight into its box of the receiver's new block (see
        ``Communicator.alltoallv_boxes``): one copy per entry, none for a block that is exactly one piece.
        Groups whose devices share their ``send`` lists (replicas) are computed once."""
        self._log_alltoallv(send, axes, dtype)
        xp = self.mesh.backend.xp
        scope = self.mesh.backend.device_scope
        members, firsts = self._distinct_groups(send, axes)
        jobs = {
            key: self._place(xp, [send[d] for d in group], [boxes[d] for d in group], [shapes[d] for d in group], dtype)
            for key, group in firsts.items()
        }
        flat = [job for group_jobs in jobs.values() for job in group_jobs]
        if not flat:
            blocks = []
        elif scope is None:
            nbytes = sum(int(np.prod(shapes[d])) for group, _ in members for d in group) * np.dtype(dtype).itemsize
            blocks = run_all(flat, nbytes, self.mesh.backend)
        else:  # every shard on one GPU (devices=[g, g, ...]): fill there
            with scope(members[0][0][0]):
                blocks = [job() for job in flat]
        return _spread(len(send), members, jobs, blocks)

    def _distinct_groups(self, send: Sequence[Any], axes: tuple[str, ...]) -> tuple[list[_Keyed], dict[_Ids, _Ids]]:
        """The groups along ``axes`` whose devices all hold their ``send`` lists, as ``(devices, key)`` (the key: the
        ids of the members' lists), and ``{key: its first group}``: groups sending the very same lists (replicas along
        other axes) compute one result."""
        members: list[_Keyed] = []
        firsts: dict[_Ids, _Ids] = {}
        for group in self.mesh.groups(axes):
            if any(send[d] is None for d in group):
                continue
            key = tuple(id(send[d]) for d in group)
            members.append((group, key))
            firsts.setdefault(key, group)
        return members, firsts

    @staticmethod
    def _place(xp: Any, send: list[Any], boxes: list[Any], shapes: list[Any], dtype: Any) -> list[Callable[[], Any]]:
        """The group's new blocks, one job each: member i's block gets ``send[j][i][k]`` at ``boxes[i][j][k]``."""
        return [
            functools.partial(
                fill_block,
                xp,
                [(box, piece) for j in range(len(send)) for box, piece in zip(boxes[i][j], send[j][i])],
                shape,
                dtype,
            )
            for i, shape in enumerate(shapes)
        ]


def _spread(size: int, members: list[_Keyed], jobs: dict[_Ids, list[Any]], blocks: Sequence[Any]) -> list[Any]:
    """The ``size`` devices' results (None where no group of ``members`` serves one): ``blocks``, the results of
    ``jobs``'s lists in order, each group of ``members`` taking its key's, member by member."""
    out: list[Any] = [None] * size
    results = iter(blocks)
    done = {key: [next(results) for _ in group_jobs] for key, group_jobs in jobs.items()}
    for group, key in members:
        for d, block in zip(group, done[key]):
            out[d] = block
    return out


def _join(xp: Any, pieces: list[Any], dim: int) -> Any:
    """A receiver's block from its pieces (the one piece itself when it gets one)."""
    return pieces[0] if len(pieces) == 1 else xp.concatenate(pieces, axis=dim)
