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


# ------------------------------------------------------------ the constructor's arguments
def test_numpy_integer_axis_sizes_are_accepted():
    mesh = sa.Mesh({"row": np.int64(2), "col": np.int32(2)})
    assert mesh.shape == {"row": 2, "col": 2} and all(type(n) is int for n in mesh.shape.values())
    assert mesh == sa.Mesh({"row": 2, "col": 2})


@pytest.mark.parametrize("size,words", [(True, ["'row'", "True"]), (2.0, ["'row'", "2.0", "integer"]),
                                        (0, ["'row'", "0", ">= 1"]), (-2, ["'row'", "-2", ">= 1"]),
                                        (np.float64(2), ["'row'", "2.0"]), ("2", ["'row'", "'2'"])])
def test_bad_axis_sizes_name_the_axis_and_value(size, words):
    with pytest.raises(sa.MeshError) as info:
        sa.Mesh({"row": size})
    for w in words:
        assert w in str(info.value)
    assert "every axis size must be an integer >= 1" not in str(info.value) or size in (0, -2)


def test_rules_must_be_a_dict():
    with pytest.raises(sa.MeshError, match=r"rules.*\{dim: axis"):
        sa.Mesh({"batch_axis": 2}, rules=["batch"])


def test_explicit_emulated_comm_refuses_distinct_gpus():
    """Checked before the backend exists, so it needs no CuPy."""
    with pytest.raises(sa.MeshError, match=r"devices=\[0, 1\].*comm='nccl'"):
        sa.Mesh({"x": 2}, backend="cupy", devices=[0, 1], comm="emulated")


def test_default_comm_follows_the_launcher():
    from shardarray.mesh import default_comm

    numpy = {"backend": "numpy", "gpus": None}
    assert default_comm(1, {"x": 4}, 4, **numpy) == "emulated"
    assert default_comm(4, {"x": 4}, 4, **numpy) == "mpi"
    assert default_comm(4, {"x": 4}, 4, backend="meta", gpus=None) == "emulated"
    assert default_comm(1, {"x": 2}, 2, backend="cupy", gpus=(0, 1)) == "nccl"
    assert default_comm(2, {"x": 2}, 2, backend="cupy", gpus=(0, 1)) == "mpi"
    with pytest.warns(UserWarning, match=r"4 processes.*comm='emulated'.*mpiexec -n 2"):
        assert default_comm(4, {"x": 2}, 2, **numpy) == "emulated"
    with pytest.raises(sa.MeshError, match=r"devices=\[0, 1\].*4 processes"):
        default_comm(4, {"x": 2}, 2, backend="cupy", gpus=(0, 1))


def test_a_mesh_needs_an_axis():
    """``sa.Mesh({})`` was accepted, and every array made on it failed in NumPy's reshape."""
    with pytest.raises(sa.MeshError, match="no axes"):
        sa.Mesh({})
