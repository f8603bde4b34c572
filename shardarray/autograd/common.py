"""Shared by the VJPs: bring a cotangent to the dims and layout of the primal it belongs to."""

from __future__ import annotations

from typing import Any

from ..array import ShardArray
from ..ops import reduce as red
from ..ops.relayout import to_axes
from ..ops.structure import expand, transpose


def match(g: ShardArray, x: Any) -> ShardArray | None:
    """The cotangent ``g`` reshaped for primal ``x`` (None when ``x`` is not an array).

    Dims of ``g`` that ``x`` lacks were broadcast in the forward pass and are
    summed; dims ``x`` has and ``g`` lacks were summed and are broadcast. The
    result has ``x``'s dim order and axes; a pending sum stays pending unless
    ``x``'s layout uses a pending axis (then it is reduce-scattered into it).
    """
    if not isinstance(x, ShardArray):
        return None
    extra = tuple(d for d in g.dims if d not in x.dims)
    if extra:
        g = red.sum.__wrapped__(g, extra)
    if len(g.dims) < len(x.dims):
        return expand(g, x.spec)
    g = transpose.__wrapped__(g, x.dims)
    keep = not set(g.pending).intersection(x.spec.used_axes)
    return to_axes(g, x.spec.axes, keep)
