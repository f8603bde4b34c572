"""Shared by the VJPs (the rules beside their ops and those in ``autograd``): bring a cotangent to the dims and layout
of the primal it belongs to."""

from __future__ import annotations

from typing import Any

from ..array import ShardArray
from ..core.relayout import to_axes
from .elementwise.arithmetic import _real_part
from .manipulation.structure import expand, transpose
from .reduction import reduce as red


def match(g: ShardArray, x: Any) -> ShardArray | None:
    """The cotangent ``g`` reshaped for primal ``x`` (None when ``x`` is not an array).

    Dims of ``g`` that ``x`` lacks were broadcast in the forward pass and are
    summed; dims ``x`` has and ``g`` lacks were summed and are broadcast. The
    result has ``x``'s dim order and axes; a pending sum stays pending unless
    ``x``'s layout uses a pending axis (then it is reduce-scattered into it).
    A complex ``g`` for a real ``x`` (promoted in the forward pass) gives its real part, as ``jax.vjp`` and
    PyTorch do.
    """
    if not isinstance(x, ShardArray):
        return None
    if g.dtype.kind == "c" and x.dtype.kind != "c":  # x was promoted to complex: only the real part flows back
        g = _real_part.__wrapped__(g)
    spec = x.spec
    if g.dims != spec.dims:  # (same dims in the same order: no sum, broadcast or transpose to make)
        extra = tuple(d for d in g.dims if d not in spec.dims)
        if extra:
            g = red.sum.__wrapped__(g, extra)
        if len(g.dims) < len(spec.dims):
            return expand(g, spec)
        g = transpose.__wrapped__(g, spec.dims)
    keep = not g.pending or not set(g.pending).intersection(spec.used_axes)
    if keep and g.spec.axes == spec.axes:  # already laid out like x: to_axes would return g itself
        return g
    return to_axes(g, spec.axes, keep)
