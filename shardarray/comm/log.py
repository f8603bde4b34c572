"""Communication accounting: every collective appends one ``CommRecord``.

A record stands for one collective issued by the whole mesh at once, every
group along ``axes`` running it side by side, so summing ``elements`` over the
records gives the traffic of one device. ``elements`` is the buffer each
participating device puts in (allgather: its local shard); with uneven blocks
it is the largest such buffer, the device on the critical path.
``wire_bytes`` is what that device sends under NCCL's ring algorithms; for an
uneven exchange (``alltoallv``), whose ``elements`` already count only the
pieces that leave the device, its bytes.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

OPS = ("allreduce", "allgather", "reduce_scatter", "alltoall", "broadcast", "reduce")


def wire_bytes(op: str, group_size: int, nbytes: int) -> float:
    """Bytes one device sends for ``op`` on a ring of ``group_size`` with buffer ``nbytes``."""
    n = group_size
    if n <= 1:
        return 0.0
    if op == "allreduce":
        return 2.0 * (n - 1) / n * nbytes
    if op == "allgather":
        return float((n - 1) * nbytes)
    if op in ("reduce_scatter", "alltoall"):
        return (n - 1) / n * nbytes
    if op in ("broadcast", "reduce"):
        return float(nbytes)
    raise ValueError(f"unknown collective {op!r}; one of {OPS}")


@dataclass(frozen=True)
class CommRecord:
    """One collective: ``op`` over groups along ``axes``, volumes per device."""

    op: str
    axes: tuple[str, ...]
    group_size: int
    elements: int
    bytes: int
    wire_bytes: float
    dtype: str = ""


class CommLog:
    """Collects the records of every collective issued while it is active.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.ones(mesh, {"batch": 4, "io": 6}, layout={"io": "col"})
        >>> with sa.comm_log() as log:
        ...     _ = x.sum("io").numpy()
        >>> [(r.op, r.axes, r.elements) for r in log.records]
        [('allreduce', ('col',), 4)]
    """

    def __init__(self) -> None:
        self.records: list[CommRecord] = []

    def __enter__(self) -> CommLog:
        _ACTIVE.append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        _ACTIVE.remove(self)

    def __iter__(self) -> Iterator[CommRecord]:
        return iter(self.records)

    def __len__(self) -> int:
        return len(self.records)

    def total(self, field: str = "elements", op: str | None = None) -> float:
        """Sum of ``field`` over the records (optionally of one ``op``): per-device traffic."""
        return sum(getattr(r, field) for r in self.records if op is None or r.op == op)

    def add(self, record: CommRecord) -> None:
        """Append one record (subclasses may watch them go by)."""
        self.records.append(record)

    def clear(self) -> None:
        self.records.clear()

    def grouped(self) -> list[tuple[tuple[str, tuple[str, ...], str], int, int, int, float]]:
        """Records aggregated by ``(op, axes, dtype)``, in order of first appearance.

        Returns:
            ``[((op, axes, dtype), count, elements, bytes, wire_bytes), ...]``,
            totals per device over the records of each key.
        """
        acc: dict[tuple[str, tuple[str, ...], str], list[Any]] = {}
        for r in self.records:
            a = acc.setdefault((r.op, r.axes, r.dtype), [0, 0, 0, 0.0])
            a[0] += 1
            a[1] += r.elements
            a[2] += r.bytes
            a[3] += r.wire_bytes
        return [(k, c, e, b, w) for k, (c, e, b, w) in acc.items()]

    def summary(self, per_record: bool = False) -> str:
        """A plain-text table: one line per ``(op, axes, dtype)`` with counts and totals, then the grand total.

        Args:
            per_record: one line per collective instead (the raw log).

        Example (a 2×2 mesh, 3 reductions over ``col``):
            >>> mesh = sa.Mesh({"row": 2, "col": 2})
            >>> x = sa.ones(mesh, {"batch": 4, "io": 6}, layout={"io": "col"})
            >>> with sa.comm_log() as log:
            ...     for _ in range(3):
            ...         _ = x.sum("io").numpy()
            >>> print(log.summary().splitlines()[2])
            allreduce      col             float32        3            12            48            48
        """
        if per_record:
            head = f"{'op':<15}{'axes':<16}{'dtype':<10}{'group':>6}{'elements':>14}{'bytes':>14}{'wire bytes':>14}"
            lines = [head, "-" * len(head)]
            for r in self.records:
                lines.append(
                    f"{r.op:<15}{','.join(r.axes):<16}{r.dtype:<10}{r.group_size:>6}{r.elements:>14}{r.bytes:>14}"
                    f"{r.wire_bytes:>14.0f}"
                )
        else:
            head = f"{'op':<15}{'axes':<16}{'dtype':<10}{'calls':>6}{'elements':>14}{'bytes':>14}{'wire bytes':>14}"
            lines = [head, "-" * len(head)]
            for (op, axes, dtype), count, elements, nbytes, wire in self.grouped():
                lines.append(
                    f"{op:<15}{','.join(axes):<16}{dtype:<10}{count:>6}{elements:>14}{nbytes:>14}{wire:>14.0f}"
                )
        lines.append(
            f"{'total':<41}{len(self.records):>6}{self.total('elements'):>14}{self.total('bytes'):>14}"
            f"{self.total('wire_bytes'):>14.0f}"
        )
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"CommLog({len(self.records)} records, {self.total('elements')} elements per device)"


class ThreadStack:
    """A stack that each thread (each ``contextvars`` context) sees on its own.

    ``sa.comm_log()``, ``sa.profile()`` and the autograd tape keep their active
    objects in these, so a log opened in one thread never collects another
    thread's collectives. Truthiness, iteration and ``append``/``remove`` act on
    the calling thread's items only.
    """

    __slots__ = ("_var",)

    def __init__(self, name: str) -> None:
        self._var: ContextVar[tuple[Any, ...]] = ContextVar(name, default=())

    def get(self) -> tuple[Any, ...]:
        return self._var.get()

    def append(self, item: Any) -> None:
        self._var.set((*self._var.get(), item))

    def remove(self, item: Any) -> None:
        items = list(self._var.get())
        for i in range(len(items) - 1, -1, -1):
            if items[i] is item:
                del items[i]
                break
        self._var.set(tuple(items))

    def pop(self) -> Any:
        items = self._var.get()
        self._var.set(items[:-1])
        return items[-1]

    def __bool__(self) -> bool:
        return bool(self._var.get())

    def __iter__(self) -> Iterator[Any]:
        return iter(self._var.get())

    def __len__(self) -> int:
        return len(self._var.get())

    def __getitem__(self, i: int) -> Any:
        return self._var.get()[i]


_ACTIVE = ThreadStack("shardarray_comm_logs")  # this thread's open CommLogs


def comm_log() -> CommLog:
    """A new ``CommLog``; use it as a context manager around the code to account.

    A log collects the collectives of the thread that opened it (logs are
    per thread, so two threads can each account their own work).
    """
    return CommLog()


def record(
    op: str, axes: tuple[str, ...], group_size: int, elements: int, itemsize: int, dtype: str = "", sent: bool = False
) -> None:
    """Append one record to every active log.

    ``sent``: ``elements`` is already what the device sends to the others (an uneven exchange, ``alltoallv``,
    counts only the pieces that travel), so its wire bytes are its bytes; otherwise they follow the ring formula
    (``wire_bytes``) from the buffer the device puts in.
    """
    if not _ACTIVE:
        return
    nbytes = elements * itemsize
    wire = float(nbytes) if sent and group_size > 1 else wire_bytes(op, group_size, nbytes)
    rec = CommRecord(op, tuple(axes), group_size, elements, nbytes, wire, dtype)
    for log in _ACTIVE:
        log.add(rec)
