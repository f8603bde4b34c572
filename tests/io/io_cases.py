"""Shared cases of the sa.io tests: meshes (1, 2×2, 4, 2×2×2, 3×2), shapes with uneven and empty blocks, layouts."""

from __future__ import annotations

import numpy as np

import shardarray as sa
from shardarray.layout import block_bounds

MESHES = [{"all": 1}, {"row": 2, "col": 2}, {"all": 4}, {"row": 2, "col": 2, "dep": 2}, {"row": 3, "col": 2}]
MESH_IDS = ["1", "2x2", "4", "2x2x2", "3x2"]
#: uneven everywhere; (3,) and (2, 5) leave empty blocks on 4-way splits; (0, 4) is empty
SHAPES = [(7, 5), (3,), (2, 5), (5, 3, 2), (0, 4)]
SHAPE_IDS = ["7x5", "3", "2x5", "5x3x2", "0x4"]


def data(shape: tuple[int, ...], dtype: str = "float64", seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind in "iu":
        return rng.integers(-50 if np.dtype(dtype).kind == "i" else 0, 50, size=shape).astype(dtype)
    if np.dtype(dtype).kind == "b":
        return rng.random(shape) > 0.5
    if np.dtype(dtype).kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def layouts(mesh: sa.Mesh, ndim: int) -> dict[str, object]:
    """The layouts to test: the default, the first dim over every mesh axis (nested, uneven), and the last dim
    over the first mesh axis (when there is a dim)."""
    out: dict[str, object] = {"default": None}
    if ndim:
        out["nested"] = {0: tuple(mesh.axis_names)}
        out["last"] = {ndim - 1: mesh.axis_names[0]}
    return out


def check_blocks(x: sa.ShardArray, value: np.ndarray, mesh: sa.Mesh) -> None:
    """``x`` holds ``value``, each local device its block, on the mesh backend."""
    from helpers import host, is_shard

    assert x.shape == value.shape
    bounds = block_bounds(mesh, x.spec)
    for d in mesh.local_devices:
        shard = x.shards[d]
        assert is_shard(shard, mesh), type(shard)
        np.testing.assert_array_equal(host(shard), value[tuple(slice(s, e) for s, e in bounds[d])])
