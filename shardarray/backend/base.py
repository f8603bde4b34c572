"""The backend interface shared by numpy, cupy and meta."""

from __future__ import annotations

import contextlib
import functools
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from functools import lru_cache
from typing import Any

import numpy as np
import opt_einsum

from ..dtypes import is_real_float
from .contract import contract2

_NO_SCOPE = contextlib.nullcontext()


@lru_cache(maxsize=4096)
def contraction(equation: str, shapes: tuple[tuple[int, ...], ...]) -> Any:
    """opt-einsum ``contract_expression`` for one equation and set of shard shapes (cached)."""
    return opt_einsum.contract_expression(equation, *shapes)


#: the dtypes CuPy's ``add.at`` (scatter-add) takes; ``Backend.scatter_rows`` adds others in a wider one
_SCATTER_DTYPES = frozenset({"float16", "float32", "float64", "int32", "int64", "uint32", "uint64"})
#: the ufuncs whose ``at`` CuPy has beyond add/maximum/minimum (its scatter kernels), and the dtypes they take
_NATIVE_AT = {
    "bitwise_and": frozenset({"int32", "int64", "uint32", "uint64"}),
    "bitwise_or": frozenset({"int32", "int64", "uint32", "uint64"}),
    "bitwise_xor": frozenset({"int32", "int64", "uint32", "uint64"}),
}


class Backend(ABC):
    """Base class: subclasses set ``name``, ``xp`` and ``per_device``.

    ``per_device`` is True where every device must own its own buffer (one GPU
    each); emulated backends share one block between replicas instead.
    """

    name: str = ""
    xp: Any = np
    per_device: bool = False
    has_data: bool = True
    #: ``device_scope(d)``: a context manager that makes mesh device ``d``'s GPU and
    #: stream current (per-device backends); None where every shard lives in one place.
    device_scope: Callable[[int], AbstractContextManager[Any]] | None = None
    #: ``(gpu of every mesh device)`` for per-device GPU backends, else None
    gpus: tuple[int, ...] | None = None
    #: whether ``xp.linalg`` raises ``LinAlgError`` itself where a factorization fails (NumPy); CuPy returns
    #: garbage instead, and ``sa.linalg`` tests the results on the devices (``linalg/_checks.py``)
    linalg_raises: bool = True

    @property
    def fft(self) -> Any:
        """The FFT module the blocks transform with (``numpy.fft``'s functions and arguments): ``xp.fft`` here."""
        return self.xp.fft

    @abstractmethod
    def from_numpy(self, array: np.ndarray) -> Any:
        """A NumPy array moved to this backend."""

    @abstractmethod
    def to_numpy(self, array: Any) -> np.ndarray:
        """A shard of this backend as a NumPy array."""

    def scope(self, device: int) -> AbstractContextManager[Any]:
        """``with backend.scope(d):`` run on mesh device ``d``'s GPU and stream (a no-op where shards share one place).

        Hot loops test ``device_scope is None`` first and skip the ``with`` altogether.
        """
        return _NO_SCOPE if self.device_scope is None else self.device_scope(device)

    def pointer(self, array: Any) -> int:
        """The address of a contiguous shard's first element (what NCCL calls take)."""
        return int(array.ctypes.data)

    def stream_ptr(self, device: int) -> int:
        """The stream that mesh device ``device``'s work is ordered on (0: the default stream)."""
        return 0

    def copy_between(self, array: Any, src: int, dst: int) -> Any:
        """``array``, made on mesh device ``src``, usable on device ``dst`` (GPU to GPU where they differ, no host).

        Here every device shares one memory: the array itself. GPU backends copy it
        once ``src``'s stream has finished making it.
        """
        return array

    def as_ranks(self) -> Backend:
        """This backend for a communicator that drives every mesh device as its own rank (NCCL in one process).

        Each device must then own its buffers and its stream, also where two
        devices share a GPU: two ranks of one NCCL communicator on one stream
        wait on each other forever. Backends that already do so return themselves.
        """
        return self

    def read_together(self, parts: Sequence[tuple[int, Any]]) -> list[np.ndarray]:
        """Host copies of the small 1-D arrays ``parts`` (``(mesh device, array made on it)``), in **one**
        device-to-host read: the arrays are copied to the first part's device (GPU to GPU where they differ,
        ``copy_between``), concatenated there and read once. The sources stay alive in ``parts`` until then."""
        if not parts:
            return []
        xp, first = self.xp, parts[0][0]
        moved = [self.copy_between(a, d, first) for d, a in parts]
        with self.scope(first):
            host = self.to_numpy(moved[0] if len(moved) == 1 else xp.concatenate(moved))
        out, at = [], 0
        for m in moved:
            out.append(host[at : at + m.size])
            at += m.size
        return out

    def first_flags(self, flags: Mapping[int, Any]) -> dict[int, int]:
        """Per device of ``flags`` (mesh device -> a boolean array made on it; a shared block may repeat: its
        first device stands for it), the flat index of its first True entry, or -1; in **one** device-to-host
        read.

        Each device reduces its own flags to one int64, and those are read together (``read_together``). This
        is how a check that ran on the devices (a failed factorization, a singular matrix) reaches the host once
        per op, not per block, and still names the matrix that failed.
        """
        xp, seen, parts = self.xp, set(), []
        for d, f in flags.items():
            if f is not None and id(f) not in seen and f.size:
                seen.add(id(f))
                with self.scope(d):
                    flat = xp.reshape(f, (-1,))
                    first = xp.where(xp.any(flat), xp.argmax(flat), -1).astype(xp.int64)
                    parts.append((d, xp.reshape(first, (1,))))
        return {d: int(h[0]) for (d, _), h in zip(parts, self.read_together(parts))}

    def einsum(self, equation: str, *arrays: Any) -> Any:
        """Contract local shards: two operands as (batched) matmuls, more with a cached opt-einsum plan."""
        if len(arrays) == 2:
            return contract2(self.xp, equation, *arrays)
        expr = contraction(equation, tuple(tuple(a.shape) for a in arrays))
        return expr(*arrays, backend=self.name)

    def sum(self, x: Any, axis: tuple[int, ...], dtype: Any = None) -> Any:
        """``xp.sum(x, axis=axis, dtype=dtype)`` of one block (backends may have a faster way for some shapes)."""
        return self.xp.sum(x, axis=axis, dtype=dtype)

    def einsum_fn(self, equation: str, dtypes: Sequence[Any]) -> Callable[..., Any]:
        """The function ``einsum(equation, *arrays)`` amounts to for operands of ``dtypes``, for callers that
        decide once (a dispatch plan) and call it on every block."""
        return functools.partial(self.einsum, equation)

    def take_rows(self, table: Any, ids: Any) -> Any:
        """``out[s, o, :] = table[s, ids[s, o], :]`` for a (S, V, R) table and (S, O) ids."""
        if table.shape[0] == 1:
            return table[0][ids[0]][None]
        return table[self.xp.arange(table.shape[0])[:, None], ids]

    def extreme_at(self, table: Any, rows: Any, values: Any, op: str) -> Any:
        """``table`` (n, R) with each ``values[o]`` combined into row ``rows[o]`` by ``op`` (``"maximum"`` or
        ``"minimum"``: NumPy's ``ufunc.at``, every repeat combined; NaN propagates as ``np.maximum``'s).

        ``xp.<op>.at`` does it. CuPy's takes float32/64 and 32/64-bit integers only: another real dtype is combined
        in float32 (floats) or int64 (integers, bools) and cast back, exact for a maximum or minimum of values of
        ``table``'s dtype. Returns the combined table (``table`` itself where no cast was needed).
        """
        xp = self.xp
        dt = table.dtype
        fits = dt.name in _SCATTER_DTYPES and dt.name != "float16"
        acc = dt if fits else (np.dtype("float32") if is_real_float(dt) else np.dtype("int64"))
        t = table if acc == dt else table.astype(acc)
        getattr(xp, op).at(t, rows, values.astype(acc))
        return t if acc == dt else t.astype(dt)

    def apply_at(self, table: Any, rows: Any, values: Any, op: str) -> Any:
        """``table`` (n, R) with the ufunc ``op`` applied at row ``rows[o]`` for every ``o``, in the given order:
        NumPy's unbuffered ``np.<op>.at(table, rows, values)`` (``values`` (len(rows), R), or None for a unary
        ``op``), every repeat applied after the ones before it, each result cast back to ``table``'s dtype.

        Where the array module has ``<op>.at`` for the dtype (CuPy: the ``bitwise_*`` ops on 32/64-bit integers;
        the order of their repeats does not matter) it does it; otherwise in rounds: the pairs sorted by row
        (stably, so each row's keep their order), round ``k`` applies every row's ``k``-th pair (distinct rows:
        one gather, one elementwise ``op``, one write), as many rounds as a row has pairs at most (one host read
        of that count). Returns the table (``table`` itself, changed in place, where possible).
        """
        xp = self.xp
        if op in _NATIVE_AT and table.dtype.name in _NATIVE_AT[op] and values is not None:
            getattr(xp, op).at(table, rows, values.astype(table.dtype))
            return table
        k = rows.shape[0]
        if k == 0:
            return table
        fn = getattr(xp, op)
        order = xp.argsort(rows, kind="stable")
        rs = rows[order]
        vs = None if values is None else values[order]
        new = xp.concatenate([xp.ones((1,), dtype=bool), rs[1:] != rs[:-1]])
        starts = xp.flatnonzero(new)
        rank = xp.arange(k, dtype=np.int64) - starts[xp.cumsum(new) - 1]
        rounds = int(self.to_numpy(rank.max())) + 1
        for j in range(rounds):
            sel = xp.flatnonzero(rank == j)
            r = rs[sel]
            got = fn(table[r]) if vs is None else fn(table[r], vs[sel])
            table[r] = got.astype(table.dtype, copy=False)
        return table

    def reduceat_rows(self, block: Any, starts: Any, stops: Any, op: str, axis: int) -> Any | None:
        """The ``op`` reduction of ``block`` over each range ``[starts[k], stops[k])`` along ``axis`` (each range
        nonempty, ``stops[k] <= block.shape[axis]``; host int arrays) where the array module's ``<op>.reduceat``
        does it (CuPy's: ``add`` only), else None (the caller composes it). NumPy's loop in the block's dtype.

        One ``reduceat`` of the ranges' ends interleaved (``[s0, e0, s1, e1, ...]``, every other result kept),
        the block padded by one entry where a range ends at its end.
        """
        if op != "add":
            return None
        return reduceat_ranges(self.xp, self.xp.add, block, starts, stops, axis, self.from_numpy)

    def scatter_rows(self, ids: Any, values: Any, n: int) -> Any:
        """The transpose of ``take_rows``: a (S, n, R) array with ``values[s, o]`` added at row ``ids[s, o]``.

        ``xp.add.at`` does the adding. CuPy's takes float16/32/64 and 32/64-bit integers only (its scatter-add
        kernels): a complex array is added as its real and imaginary parts, and any other dtype (bfloat16, the
        embedding gradient of a bfloat16 model) is added in float32 (integers in int64) and rounded once.
        """
        xp = self.xp
        dt = values.dtype
        if dt.kind == "c":
            real = dt.type(0).real.dtype
            parts = (
                self.scatter_rows(ids, xp.real(values).astype(real), n),
                self.scatter_rows(ids, xp.imag(values).astype(real), n),
            )
            return parts[0] + 1j * parts[1] if dt == xp.complex128 else (parts[0] + 1j * parts[1]).astype(dt)
        acc = dt if dt.name in _SCATTER_DTYPES else (np.dtype("float32") if is_real_float(dt) else np.dtype("int64"))
        v = values if acc == dt else values.astype(acc)
        s, _, r = v.shape
        out = xp.zeros((s, n, r), dtype=acc)
        if s == 1:
            xp.add.at(out[0], ids[0], v[0])
        else:
            xp.add.at(out, (xp.arange(s)[:, None], ids), v)
        return out if acc == dt else out.astype(dt)

    def __repr__(self) -> str:
        return f"<backend {self.name}>"


def reduceat_ranges(xp: Any, ufunc: Any, block: Any, starts: Any, stops: Any, axis: int, put: Any) -> Any:
    """``ufunc.reduceat`` of ``block`` over the nonempty ranges ``[starts[k], stops[k])`` along ``axis`` (host int
    arrays; ``put`` makes a host array a device one): the ends interleaved, every other result kept."""
    n = block.shape[axis]
    if len(starts) and int(stops.max()) >= n:  # (reduceat's indices must be < n: one entry more, never read)
        pre = (slice(None),) * axis
        block = xp.concatenate([block, block[pre + (slice(0, 1),)]], axis=axis)
    ends = np.stack([np.asarray(starts, np.int64), np.asarray(stops, np.int64)], axis=1).reshape(-1)
    out = ufunc.reduceat(block, put(ends), axis=axis)
    return out[(slice(None),) * axis + (slice(0, None, 2),)]
