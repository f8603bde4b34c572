"""Which device writes which distinct block of an array, and how saved blocks overlap target blocks.

A layout cuts an array into blocks; devices that differ only along mesh axes
the layout does not use hold the same block (replicas). A checkpoint stores
each distinct non-empty block once, written by the lowest-numbered device
that holds it (one writer per replica class). Every process can compute this
plan from the layout alone, without data, so process 0 writes the manifest
for blocks other processes write.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..array import ShardArray
from ..layout import block_bounds

Bounds = tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class Block:
    """One distinct block: its global ``offset`` and ``shape``, and the device that writes it."""

    offset: tuple[int, ...]
    shape: tuple[int, ...]
    writer: int

    @property
    def key_suffix(self) -> str:
        return ",".join(map(str, self.offset))

    def slices(self) -> tuple[slice, ...]:
        return tuple(slice(o, o + n) for o, n in zip(self.offset, self.shape))


def distinct_blocks(x: ShardArray) -> list[Block]:
    """The distinct non-empty blocks of ``x``, each with its writer device (the lowest device holding it).

    Example:
        >>> x = sa.zeros(sa.Mesh({"row": 2, "col": 2}), {"a": 3, "b": 4}, layout={"a": "row"})
        >>> [(b.offset, b.shape, b.writer) for b in distinct_blocks(x)]   # col replicas written once
        [((0, 0), (2, 4), 0), ((2, 0), (1, 4), 2)]
    """
    seen: dict[Bounds, int] = {}
    for d, bounds in enumerate(block_bounds(x.mesh, x.spec)):
        if all(b > a for a, b in bounds) and bounds not in seen:
            seen[bounds] = d
    return [Block(tuple(a for a, _ in b), tuple(e - s for s, e in b), d) for b, d in seen.items()]


def process_of(x: ShardArray, device: int) -> int:
    """The process that holds ``device``'s shard: itself under MPI (device == rank), else process 0."""
    return device if x.mesh.comm_kind == "mpi" else 0


def overlap(a_off: tuple[int, ...], a_shape: tuple[int, ...], b: Bounds) -> Bounds | None:
    """The global ``(start, stop)`` per dim where block ``a`` meets the region ``b``, or None if they do not meet."""
    out = []
    for o, n, (s, e) in zip(a_off, a_shape, b):
        lo, hi = max(o, s), min(o + n, e)
        if hi <= lo:
            return None
        out.append((lo, hi))
    return tuple(out)


def whole(ov: Bounds, shape: Sequence[int]) -> bool:
    """Whether the overlap ``ov`` (from ``overlap``) is the whole of a block of ``shape``."""
    return all(hi - lo == n for (lo, hi), n in zip(ov, shape))


def checker(block: dict[str, Any], targets: Sequence[Bounds]) -> int | None:
    """The device whose process checks a saved block's checksum on load, among the devices in ``targets``.

    ``targets[d]`` is device ``d``'s target block. A saved block read by
    several processes (replicas, or target blocks that each take part of it)
    needs its checksum computed once: the bytes come from the same file
    range, and a mismatch on the checking process fails the load on all
    (``Procs.agree``). The checker is the lowest device that reads the block
    whole (its checksum then costs no extra read), else the lowest that
    reads part of it (it then reads the rest to check it); None when no
    device reads it.

    Example:
        >>> checker({"offset": [0], "shape": [4]}, [((0, 4),), ((0, 4),), ((4, 8),)])   # replicas 0, 1
        0
    """
    off, shape = tuple(block["offset"]), tuple(block["shape"])
    part = None
    for d, bounds in enumerate(targets):
        ov = overlap(off, shape, bounds)
        if ov is None:
            continue
        if whole(ov, shape):
            return d
        part = d if part is None else part
    return part


def volume(shape: tuple[int, ...]) -> int:
    return math.prod(shape)
