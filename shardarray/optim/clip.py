"""Gradient clipping by the global norm of all gradients together, with one allreduce."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..array import ShardArray, like_kind
from ..core.relayout import resolve_to
from ..dtypes import is_complex, is_real_float
from ..errors import DTypeError
from ..tree import tree_flatten, tree_paths, tree_unflatten
from .common import _in_range
from .reduce_tree import allreduce_tree, scale_leaves


def _resolved(grads: Any, what: str, scaled: bool = False) -> tuple[list[ShardArray], Any]:
    """The leaves of ``grads`` (ShardArrays, pending sums resolved, each of its kind) and the tree's structure.

    ``scaled``: the leaves are to be scaled (``clip_by_global_norm``, a loss scale's unscaling), so each must be
    floating point, real or complex (``DTypeError``): an integer or bool gradient would be truncated, to zeros for
    a factor below 1."""
    leaves, treedef = tree_flatten(grads)
    for x in leaves:
        if not isinstance(x, ShardArray):
            raise DTypeError(f"{what}: every leaf must be a ShardArray; got {type(x).__name__}")
    if scaled:
        for path, x in zip(tree_paths(grads, ""), leaves):
            if not (is_real_float(x.dtype) or is_complex(x.dtype)):
                raise DTypeError(
                    f"{what}: grads{path} has dtype {x.dtype}; scaling it would truncate it (to 0 for a factor below "
                    f"1). Gradients are floating point: pass the ones sa.value_and_grad returns, or cast it: "
                    f"g.astype('float32')"
                )
    return [like_kind(resolve_to(x), x) if x.pending else x for x in leaves], treedef  # each keeps its kind


def _wide(block: Any) -> Any:
    """The block in float64 (complex128 for complex blocks: an astype to float64 would drop the imaginary part)."""
    wide = np.complex128 if block.dtype.kind == "c" else np.float64
    return block if block.dtype == wide else block.astype(wide)


def _sum_squares(xp: Any, block: Any) -> Any:
    """The block's sum of squared magnitudes in float64 (``|z|²`` for complex entries: their real and imaginary
    parts as two floats): finite for every finite block of 32 bits or fewer (a float32 sum of squares overflows
    from about 1e19 per element)."""
    a = _wide(block).ravel()
    if a.dtype.kind == "c":
        a = xp.ascontiguousarray(a).view(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is detected (and handled) by the caller
        return xp.dot(a, a)


def _max_abs(xp: Any, block: Any) -> Any:
    """The block's largest magnitude, in float64: a complex64 entry's ``|z|`` computed in complex64 overflows to inf
    (``3.4e38+3.4e38j``), which would read as a non-finite gradient."""
    if block.size == 0:
        return xp.zeros((), dtype=np.float64)
    return xp.asarray(xp.abs(_wide(block)).max(), dtype=np.float64)  # (on the device: no sync)


#: below this norm float64 squares may have underflowed (values under about 1e-154 square to subnormals or 0)
_TINY_NORM = 1e-146


def _norm(leaves: list[ShardArray], what: str) -> float:
    """The global L2 norm: one allreduce; two more only where float64 squares overflow (values beyond 1e154) or
    underflow (a norm under 1e-146: values of 6e-170 squared to 0 and gave a norm of 0), which are then summed
    scaled by the largest magnitude. Non-finite gradients give a non-finite norm."""
    norm = math.sqrt(allreduce_tree(leaves, _sum_squares, "sum", what))
    if math.isfinite(norm) and norm >= _TINY_NORM:
        return norm
    top = allreduce_tree(leaves, _max_abs, "max", what)
    if not math.isfinite(top) or top == 0.0:
        return norm  # an inf or NaN among the gradients
    scaled = allreduce_tree(leaves, lambda xp, b: _sum_squares(xp, _wide(b) / top), "sum", what)
    return top * math.sqrt(scaled)


def global_norm(grads: Any) -> float:
    """The L2 norm of all the leaves of ``grads`` together, with ONE allreduce (sum, one float64).

    Each device sums the squares of its blocks in float64 (finite for any
    finite 32-bit gradients; float64 ones beyond 1e154, or a norm under
    1e-146 whose squares may have underflowed, all-zero gradients included,
    are summed scaled by the largest magnitude: one or two more allreduces);
    a block held by several
    devices counts once; one allreduce over all mesh axes adds the partials.

    Communication: one ``allreduce`` of 1 float64 element over all mesh axes
    (none on a 1-device mesh), whatever the number of leaves and their layouts.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> g = {"a": sa.full(mesh, {"i": 4}, 1.0, layout={"i": "col"}), "b": sa.full(mesh, {"j": 5}, 2.0)}
        >>> sa.optim.global_norm(g)   # sqrt(4 * 1 + 5 * 4)
        4.898979485566356
    """
    leaves, _ = _resolved(grads, "global_norm")
    return _norm(leaves, "global_norm")


def clip_by_global_norm(grads: Any, max_norm: float, *, return_norm: bool = False) -> Any:
    """Scale all gradients by ``min(1, max_norm / norm)``, ``norm`` their global L2 norm.

    Returns the clipped grads in the same tree structure, layouts and dtypes
    (``grads = sa.optim.clip_by_global_norm(grads, 1.0)``, as in DESIGN.md);
    with ``return_norm=True``, ``(clipped grads, norm)`` with the norm before
    clipping (a Python float) for logging, at no extra communication. When
    ``norm`` is not finite the grads come back unchanged (a loss scale's
    ``unscale`` catches that case and skips the step).

    Communication: ONE ``allreduce`` of a single float64 over all mesh axes,
    for all gradients together (see ``global_norm``); the scaling is local.

    Raises:
        ArgumentError: ``max_norm`` negative or not finite.
        DTypeError: a leaf that is not a floating-point ShardArray (an integer one would be truncated).
        MeshError: leaves on different meshes.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> g = {"w": sa.full(mesh, {"i": 4}, 3.0, layout={"i": ("row", "col")})}
        >>> clipped, norm = sa.optim.clip_by_global_norm(g, 1.0, return_norm=True)
        >>> norm, clipped["w"].numpy()
        (6.0, array([0.5, 0.5, 0.5, 0.5], dtype=float32))
    """
    _in_range("clip_by_global_norm", "max_norm", max_norm, 0.0, None, "[0, inf) (max_norm >= 0, finite, e.g. 1.0)")
    leaves, treedef = _resolved(grads, "clip_by_global_norm", scaled=True)
    norm = _norm(leaves, "clip_by_global_norm")
    if math.isfinite(norm) and norm > max_norm:
        leaves = scale_leaves(leaves, float(max_norm) / norm)
    out = tree_unflatten(treedef, leaves)
    return (out, norm) if return_norm else out
