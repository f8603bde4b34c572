"""``ClassList``: a per-device shard sequence stored once per distinct block (meta backend).

A meta array on a 128x128 mesh has 16,384 shards but only a handful of
distinct ones (block-shape classes). ``ClassList`` holds the distinct blocks
(``values``) and, per device, the index of its block (``index``, an int NumPy
array): indexing and iteration behave like the tuple of per-device shards,
while the meta fast paths (``core.common._map_meta``, the emulated
communicator, the comm log, the profiler) work on ``values`` and ``index``
and so cost per class, not per device.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np


class ClassList(Sequence):
    """An immutable sequence ``[values[index[d]] for d in range(len(index))]``.

    Args:
        values: the distinct blocks (any objects; a class may be unused).
        index: per device, the position of its block in ``values`` (an int array, not copied: never mutate it).

    Example:
        >>> from shardarray.backend.meta import MetaArray
        >>> a, b = MetaArray((2, 3), "float32"), MetaArray((1, 3), "float32")
        >>> s = ClassList((a, b), np.array([0, 0, 1, 1]))   # a 2x2 mesh, uneven rows
        >>> len(s), s[2] is b, list(s) == [a, a, b, b]
        (4, True, True)
    """

    __slots__ = ("_tuple", "index", "values")

    # the per-device class array shadows ``Sequence.index`` (a method) on purpose: it is this class's data
    index: np.ndarray  # type: ignore[assignment]

    def __init__(self, values: Sequence[Any], index: np.ndarray) -> None:
        self.values = tuple(values)
        self.index = index
        self._tuple: tuple[Any, ...] | None = None

    def __len__(self) -> int:
        return len(self.index)

    def as_tuple(self) -> tuple[Any, ...]:
        """The per-device tuple (built once, on first use)."""
        if self._tuple is None:
            table = np.empty(len(self.values), dtype=object)
            for i, v in enumerate(self.values):  # item by item: a slice assignment would call __array__
                table[i] = v
            self._tuple = tuple(table[self.index].tolist())
        return self._tuple

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return self.as_tuple()[i]
        return self.values[self.index[i]]

    def __iter__(self) -> Iterator[Any]:
        return iter(self.as_tuple())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (ClassList, tuple, list)):
            return tuple(self) == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.as_tuple())

    def __add__(self, other: Any) -> tuple[Any, ...]:
        return self.as_tuple() + tuple(other)

    def used(self) -> list[int]:
        """Positions in ``values`` that some device holds, in order of their first device."""
        u, first = np.unique(self.index, return_index=True)
        return u[np.argsort(first, kind="stable")].tolist()

    def __repr__(self) -> str:
        return f"ClassList({len(self.values)} classes over {len(self.index)} devices)"


def class_ids(shards: Sequence[Any]) -> tuple[np.ndarray, tuple[Any, ...]]:
    """``(index, values)`` of any shard sequence: a ``ClassList``'s own, else by object identity."""
    if isinstance(shards, ClassList):
        return shards.index, shards.values
    ids = np.fromiter(map(id, shards), dtype=np.uintp, count=len(shards))
    _, first, inverse = np.unique(ids, return_index=True, return_inverse=True)
    return inverse.reshape(-1).astype(np.intp), tuple(shards[int(f)] for f in first)


def by_value(values: Sequence[Any]) -> ClassList:
    """Per-device plain values (hashable: ints, tuples) as a ``ClassList``, equal values one class.

    A block function that reads a per-device value (the start of the device's block, say) takes it through
    this instead of the device number, so that on the meta backend devices with equal values share one call.

    Example:
        >>> s = by_value([0, 0, 4, 4])
        >>> s.values, s[3]
        ((0, 4), 4)
    """
    seen: dict[Any, int] = {}
    index = np.fromiter((seen.setdefault(v, len(seen)) for v in values), dtype=np.intp, count=len(values))
    return ClassList(tuple(seen), intern_index(index))


_INTERNED: dict[bytes, np.ndarray] = {}
_INTERNED_IDS: set[int] = set()


def intern_index(index: np.ndarray) -> np.ndarray:
    """One shared read-only array per distinct device->class map, so that memos keyed by identity hit."""
    key = index.tobytes()
    hit = _INTERNED.get(key)
    if hit is None:
        if len(_INTERNED) > 1024:
            _INTERNED.clear()
            _INTERNED_IDS.clear()
        index.flags.writeable = False
        hit = _INTERNED[key] = index
        _INTERNED_IDS.add(id(index))
    return hit


def is_interned(index: np.ndarray) -> bool:
    """Whether ``index`` is a canonical (interned, kept alive) array."""
    return id(index) in _INTERNED_IDS  # interned arrays stay alive, so their ids are theirs


def compact(values: Sequence[Any], index: np.ndarray) -> ClassList:
    """A ClassList with each distinct object (by identity) once, the index interned."""
    ids = np.fromiter(map(id, values), dtype=np.uintp, count=len(values))
    _, first, inverse = np.unique(ids, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")  # keep the values in their first-seen order
    rank = np.empty(len(order), dtype=np.intp)
    rank[order] = np.arange(len(order))
    kept = [values[int(f)] for f in first[order].tolist()]
    return ClassList(kept, intern_index(rank[inverse.reshape(-1)][index]))
