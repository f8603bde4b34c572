"""One collective for a whole tree of arrays: the per-device partials of all leaves in one small buffer.

Used by ``clip_by_global_norm`` (the sum of squares of every gradient) and
``DynamicLossScale.unscale`` (whether any gradient is non-finite). Each device
reduces its own blocks to one number; a block that several devices hold (a
leaf replicated over some mesh axes) counts once: only the device with
coordinate 0 on every axis that does not split the leaf contributes it. One
allreduce of that one number over all the mesh's axes then gives the exact
total, whatever mix of layouts the leaves have.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..array import ShardArray
from ..core.common import map_blocks
from ..errors import MeshError
from ..mesh import Mesh


def leaves_on_one_mesh(leaves: list[ShardArray], what: str) -> Mesh | None:
    """The leaves' mesh (None for no leaves), with pending sums resolved by the caller; ``MeshError`` for two meshes."""
    if not leaves:
        return None
    mesh = leaves[0].mesh
    for x in leaves[1:]:
        if x.mesh != mesh:
            raise MeshError(
                f"{what}: the arrays live on different meshes ({mesh} and {x.mesh}); one reduction needs them on one "
                f"mesh: build every array on one mesh, or call {what} once per mesh's arrays"
            )
    return mesh


def allreduce_tree(leaves: list[ShardArray], block_fn: Callable[[Any, Any], Any], op: str, what: str) -> float:
    """``op`` ("sum" or "max") over every distinct block of every leaf of ``block_fn(xp, block)``, in ONE allreduce.

    ``block_fn`` maps one block to a 0-d float64 value (a backend scalar).
    Leaves with a pending sum must be resolved first. Returns a Python float,
    the same on every device and process.
    """
    mesh = leaves_on_one_mesh(leaves, what)
    if mesh is None:
        return 0.0
    xp = mesh.backend.xp
    bufs: list[Any] = [None] * mesh.size
    for d in range(mesh.size):
        if leaves[0].shards[d] is None:  # another process's device (MPI)
            continue
        coords = mesh.coords(d)
        acc = None
        for x in leaves:
            used = x.spec.used_axes
            if any(coords[a] != 0 for a in mesh.axis_names if a not in used):
                continue  # a replica: the device at coordinate 0 counts this block
            v = block_fn(xp, x.shards[d])
            acc = v if acc is None else (acc + v if op == "sum" else xp.maximum(acc, v))
        bufs[d] = xp.zeros(1, dtype=np.float64) if acc is None else xp.reshape(xp.asarray(acc, dtype=np.float64), (1,))
    out = mesh.comm.allreduce(bufs, mesh.axis_names, op)
    mine = next(b for b in out if b is not None)
    return float(mesh.backend.to_numpy(mine)[0])


def _normal_in(factor: float, dtype: Any) -> bool:
    """Whether ``factor`` is 0 or a normal number of ``dtype`` (float32/float64, or their complex types)."""
    info = np.finfo(dtype)
    return factor == 0.0 or float(info.tiny) <= abs(factor) <= float(info.max)


def _times(s: Any, factor: float) -> Any:
    """``s * factor`` rounded to ``s``'s dtype, multiplied in a type where ``factor`` is a normal number: float32 at
    least (a 16-bit ``factor``, ``1 / scale`` of a small loss scale, would itself overflow to inf), float64 where
    it is subnormal in float32 (``1 / 9.5e38``, clipping gradients near float32's largest value): CuPy compiles
    its kernels with ``-ftz=true``, so a float32 kernel reads a subnormal factor as 0."""
    if s.dtype.itemsize >= 4 and s.dtype.kind in "fc" and _normal_in(factor, s.dtype):
        return s * s.dtype.type(factor)  # a NumPy scalar: CuPy takes it as an operand, unlike a NumPy array
    wide: Any = np.float32 if s.dtype.itemsize < 4 and _normal_in(factor, np.float32) else np.float64
    if s.dtype.kind == "c":
        wide = np.complex128
    with np.errstate(over="ignore"):  # an overflow to inf is what the loss scale's finiteness check looks for
        return (s.astype(wide) * wide(factor)).astype(s.dtype)


def scale_leaves(leaves: list[ShardArray], factor: float) -> list[ShardArray]:
    """Every leaf times ``factor`` in its own dtype, layout, blocks and kind (local: no communication)."""
    out = []
    for g in leaves:
        shards = map_blocks(g.mesh, g.spec.used_axes, lambda s: _times(s, factor), g.shards)
        out.append(type(g)(g.mesh, g.spec, g.dtype, shards))  # a positional gradient stays positional
    return out
