"""The computation layout of an op by traffic: each operand tried as the one that decides.

An op over several operands (an elementwise op, a layout-driven einsum) brings
them to one computation layout, ``merged_axes`` of the operands in some order:
the first operand that splits a dim decides its axes. Where their layouts
conflict (two operands split different dims over one mesh axis, or one dim over
different axes) the order matters, and one of them must move. ``candidates``
are the layouts with each operand first; ``move_cost`` prices one by what a
device receives moving the operands there (per moved operand the most entries
a device lacks of its new block, summed over the operands); ``cheapest`` takes
the least, the earlier operand on a tie, so an op whose operands do not
conflict, or cost the same, keeps the first operand's layout.

Inside ``keep_first()`` the first operand's layout decides instead, whole
(``first_decides``): what an in-place write ``x op= y`` needs, whose result is
written back in ``x``'s layout (a layout of its own would cost a second move).

Example (4 devices, ``x`` of 64 entries split like ``y``'s 64 columns, ``y`` of 4096 x 64 split by rows):
    >>> mesh = sa.Mesh({"a": 4})
    >>> x = sa.zeros(mesh, {"n": 64}, layout={"n": "a"})
    >>> y = sa.zeros(mesh, {"m": 4096, "n": 64}, layout={"m": "a"})
    >>> [move_cost([x, y], c) for c in candidates([x, y], ("n", "m"))]  # y alltoalled, or x allgathered
    [49152, 48]
    >>> cheapest([x, y], ("n", "m"))
    {'n': (), 'm': ('a',)}
"""

from __future__ import annotations

import contextlib
import contextvars
import math
from collections.abc import Iterator, Sequence

from ..array import ShardArray
from ..layout import Layout, block_bounds
from ..mesh import Mesh
from .common import merged_axes

Axes = dict[str, tuple[str, ...]]


def block(mesh: Mesh, sizes: Sequence[int], axes: Sequence[tuple[str, ...]]) -> int:
    """The largest block of an array of ``sizes`` split over ``axes`` (per dim): nested ceil-chunks."""
    return math.prod(-(-n // math.prod(mesh.axis_size(a) for a in ax)) for n, ax in zip(sizes, axes))


def receives(op: ShardArray, target: tuple[tuple[str, ...], ...]) -> int:
    """The most entries a device receives moving ``op`` to the per-dim axes ``target``: its new block less the
    part of it that it holds (``move_axes``'s bound)."""
    old = block_bounds(op.mesh, op.spec)
    new = block_bounds(op.mesh, Layout(op.dims, op.shape, target))
    most = 0
    for have, want in zip(old, new):
        size = math.prod(b - a for a, b in want)
        held = math.prod(max(0, min(b, d) - max(a, c)) for (a, b), (c, d) in zip(want, have))
        most = max(most, size - held)
    return most


def real(mesh: Mesh, axes: tuple[str, ...]) -> tuple[str, ...]:
    """``axes`` without those of size 1 (an axis of size 1 moves nothing)."""
    return tuple(a for a in axes if mesh.axis_size(a) > 1)


def moves_data(op: ShardArray, target: tuple[tuple[str, ...], ...]) -> bool:
    """Whether bringing ``op`` to the per-dim axes ``target`` moves data: some dim gives up an axis (of size > 1)
    rather than only splitting further (a local slice)."""
    mesh = op.mesh
    return any(real(mesh, t)[: len(c)] != c for c, t in zip((real(mesh, c) for c in op.spec.axes), target))


def candidates(operands: Sequence[ShardArray], dims: Sequence[str]) -> list[Axes]:
    """The distinct layouts ``merged_axes`` gives with each operand first (the others in their order), in the
    operands' order: one layout when they do not conflict."""
    out: list[Axes] = []
    for i in range(len(operands)):
        axes = merged_axes([operands[i], *operands[:i], *operands[i + 1 :]], dims)
        if axes not in out:
            out.append(axes)
    return out


def move_cost(operands: Sequence[ShardArray], axes: Axes) -> int:
    """What a device receives bringing ``operands`` to the computation layout ``axes``: for each operand whose
    data moves (``moves_data``) the most entries a device lacks of its new block, summed over the operands."""
    total = 0
    for op in operands:
        target = tuple(axes[d] for d in op.dims)
        if moves_data(op, target):
            total += receives(op, target)
    return total


#: whether ``keep_first`` is in effect in this context (read by the ops' plans, part of their cache keys)
KEEP_FIRST: contextvars.ContextVar[bool] = contextvars.ContextVar("shardarray_keep_first", default=False)


@contextlib.contextmanager
def keep_first() -> Iterator[None]:
    """Within it, ``choose`` gives ``first_decides``: the first operand's layout, whole, for the dims it has.

    For an in-place write (``x op= y``): its result goes back into ``x``'s layout, so computing it there moves
    only the other operands, where a cheaper layout of their own would move the result back after.
    """
    token = KEEP_FIRST.set(True)
    try:
        yield
    finally:
        KEEP_FIRST.reset(token)


def first_decides(operands: Sequence[ShardArray], dims: Sequence[str]) -> Axes:
    """The first operand's axes for its dims (split or not); each other dim split like the first other operand
    that splits it over axes still free (as ``merged_axes``)."""
    first = operands[0]
    out: Axes = {d: () for d in dims}
    out.update(zip(first.dims, first.spec.axes))
    taken = {a for ax in first.spec.axes for a in ax}
    for op in operands[1:]:
        for d, axes in zip(op.dims, op.spec.axes):
            if axes and d not in first.dims and not out[d] and not taken.intersection(axes):
                out[d] = axes
                taken.update(axes)
    return out


def choose(operands: Sequence[ShardArray], dims: Sequence[str]) -> Axes:
    """The computation layout of an op over ``operands``: ``cheapest``, or ``first_decides`` inside
    ``keep_first()``."""
    if KEEP_FIRST.get():
        return first_decides(operands, dims)
    return cheapest(operands, dims)


def cheapest(operands: Sequence[ShardArray], dims: Sequence[str]) -> Axes:
    """The computation layout of ``candidates`` with the least ``move_cost``; the earlier operand on a tie (so
    ``merged_axes(operands, dims)`` whenever the operands do not conflict or their moves cost the same)."""
    options = candidates(operands, dims)
    if len(options) == 1:
        return options[0]
    return min(options, key=lambda axes: move_cost(operands, axes))  # (min keeps the first of the cheapest)


__all__ = [
    "KEEP_FIRST",
    "block",
    "candidates",
    "cheapest",
    "choose",
    "first_decides",
    "keep_first",
    "move_cost",
    "moves_data",
    "real",
    "receives",
]
