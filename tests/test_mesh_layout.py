"""Mesh coordinates and groups; layout block bounds; show."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import shardarray as sa
from shardarray.layout import block_bounds, make_layout


def test_mesh_basics():
    mesh = sa.Mesh({"x": 2, "y": 3, "z": 2})
    assert mesh.shape == {"x": 2, "y": 3, "z": 2} and mesh.axis_names == ("x", "y", "z") and mesh.size == 12
    for d in range(mesh.size):
        assert mesh.device_at(mesh.coords(d)) == d
    assert mesh.coords(7) == {"x": 1, "y": 0, "z": 1}
    groups = mesh.groups(("z", "x"))
    assert len(groups) == 3 and all(len(g) == 4 for g in groups)
    # ordered z-major, x-minor
    assert groups[0] == (0, 6, 1, 7)
    assert sorted(itertools.chain(*groups)) == list(range(12))
    assert mesh.groups(()) == tuple((d,) for d in range(12))
    assert mesh == sa.Mesh([("x", 2), ("y", 3), ("z", 2)]) and mesh != sa.Mesh({"x": 12})


@pytest.mark.parametrize("n", [0, 1, 5, 7, 8, 13])
def test_nested_ceil_chunking_partitions_the_dim(n):
    mesh = sa.Mesh({"a": 2, "b": 3})
    for axes in [("a",), ("b",), ("a", "b"), ("b", "a")]:
        lay = make_layout(mesh, ("i",), (n,), {"i": axes})
        blocks = sorted({b[0] for b in block_bounds(mesh, lay)})
        covered = [i for lo, hi in blocks for i in range(lo, hi)]
        assert covered == list(range(n))
        k = mesh.axes_size(axes[:1])
        first = block_bounds(mesh, make_layout(mesh, ("i",), (n,), {"i": axes[:1]}))[0][0]
        assert first == (0, min(n, -(-n // k)))


def test_uneven_trailing_blocks_smaller_or_empty():
    mesh = sa.Mesh({"all": 4})
    x = sa.asarray(np.arange(5.0), dims=("i",), mesh=mesh, layout={"i": "all"})
    assert [s.shape[0] for s in x.shards] == [2, 2, 1, 0]
    assert x.sum().item() == 10.0 and x.max().item() == 4.0 and x.min().item() == 0.0


def test_show_any_mesh_rank():
    x = sa.zeros(sa.Mesh({"row": 2, "col": 2}), {"batch": 8, "io": 4}, layout={"batch": "row"})
    text = sa.show(x)
    assert "row=1" in text and "col=1" in text and text.count("batch[4:8]") == 2
    m3 = sa.Mesh({"x": 2, "y": 2, "z": 2})
    y = sa.zeros(m3, {"a": 5, "b": 3, "c": 2}, layout={"a": ("x", "z"), "b": "y"})
    text = sa.show(y)
    assert "x=1,y=1" in text and "z=1" in text and "a[4:5] b[2:3]" in text
    z = sa.einsum(y, out=("b",))
    assert "+partial" in sa.show(z) and "pending sum over x+z" in sa.show(z)
    assert "all" in sa.show(sa.zeros(sa.Mesh({"d": 1}), {"a": 2}))
    s = sa.show(sa.zeros(sa.Mesh({"d": 1}), {}))
    assert "(scalar)" in s


def test_auto_is_emulated_outside_a_launcher(monkeypatch):
    for name in ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SLURM_NTASKS", "4")  # a batch script's own process is not an MPI job
    mesh = sa.Mesh({"row": 2, "col": 2}, comm="auto")
    assert mesh.comm_kind == "emulated" and mesh.process_index == 0 and mesh.local_devices == (0, 1, 2, 3)
    with pytest.raises(sa.MeshError, match="'emulated', 'nccl', 'mpi' or 'auto'"):
        sa.Mesh({"row": 2}, comm="gloo")
