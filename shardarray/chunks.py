"""Chunk arithmetic: the block of ``[start, stop)`` a device holds, ceil-sized and nested (Mesh-TF's even split,
uneven where the size does not divide). A leaf module: the layouts and the communicators both use it.

Example:
    >>> chunk(0, 10, 4, 3), nested_chunk(0, 10, (2, 2), (1, 0)), group_chunk(0, 10, (2, 2), 2)
    ((9, 10), (5, 8), (5, 8))
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def chunk(start: int, stop: int, parts: int, index: int) -> tuple[int, int]:
    """Block ``index`` of ``[start, stop)`` cut into ``parts`` ceil-sized chunks."""
    c = -(-(stop - start) // parts)
    lo = min(stop, start + index * c)
    return lo, min(stop, lo + c)


def nested_chunk(start: int, stop: int, parts: Iterable[int], index: Iterable[int]) -> tuple[int, int]:
    """Chunk ``[start, stop)`` into ``parts[0]`` ceil-chunks, take ``index[0]``, chunk that again, and so on."""
    for k, i in zip(parts, index):
        start, stop = chunk(start, stop, k, i)
    return start, stop


def group_chunk(start: int, stop: int, radix: Sequence[int], member: int) -> tuple[int, int]:
    """Block of group member ``member`` (mixed radix ``radix``, major first), nested-chunked."""
    coords = []
    for k in reversed(radix):
        coords.append(member % k)
        member //= k
    return nested_chunk(start, stop, radix, reversed(coords))


__all__ = ["chunk", "group_chunk", "nested_chunk"]
