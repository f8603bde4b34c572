"""Misuse that one process alone sees, or that only the layout reveals, raises alike on every process.

* ``sa.from_local`` with a block of the wrong shape on one process: every
  process raises the same ``DimensionError`` (the error travels in the
  creation check's allgather, no extra collective).
* Arrays made with different layouts on different processes (same global
  shape and dtype): the creation check of ``from_local`` and the conversion
  ``numpy()`` compare the layout / block bounds and raise the same
  ``CommError`` everywhere, instead of assembling a scrambled array.

The MPI tests run inside a 4-process job (``mpiexec -n 4 python -m pytest -q
tests/mpi``) and are skipped otherwise; the tests of ``comm.spmd``'s
signature comparison run anywhere.
"""

from __future__ import annotations

import os
import re

import numpy as np
import pytest

import shardarray as sa
from shardarray.comm import spmd

WORLD = int(os.environ.get("PMI_SIZE", os.environ.get("OMPI_COMM_WORLD_SIZE", "0")))
mpi4 = pytest.mark.skipif(WORLD != 4, reason="needs mpiexec -n 4 (see .ci/run)")

CHECKED = [False, True]  # without and with SHARDARRAY_CHECK_SPMD=1


def _check(monkeypatch, on):
    if on:
        monkeypatch.setenv("SHARDARRAY_CHECK_SPMD", "1")
    else:
        monkeypatch.delenv("SHARDARRAY_CHECK_SPMD", raising=False)


def _in_step(mesh):
    """The processes are still in step: a collective after the error gives the right answer on every one."""
    y = sa.ones(mesh, {"m": 8, "k": 3}, layout={"m": tuple(mesh.axis_names)})
    assert float(y.sum()) == 24.0
    np.testing.assert_array_equal(y.numpy(), np.ones((8, 3)))


# ---------------------------------------------------------------- from_local: an error on one process
@mpi4
@pytest.mark.parametrize("on", CHECKED, ids=["plain", "check_spmd"])
def test_from_local_wrong_block_raises_the_same_error_on_every_process(monkeypatch, on):
    _check(monkeypatch, on)
    mesh = sa.Mesh({"x": 4}, comm="mpi")
    r = mesh.process_index
    host = np.arange(16.0).reshape(8, 2)
    blk = host[2 * r : 2 * r + 2] if r != 1 else host[2:3]  # process 1's block is one row short
    with pytest.raises(sa.DimensionError) as info:
        sa.from_local(mesh, blk, ("a", "b"), (8, 2), {"a": "x"})
    text = str(info.value)
    assert "device 1 {'x': 1} (process 1)" in text
    assert "shape (1, 2)" in text and "has shape (2, 2)" in text and "dim 'a' differs" in text
    # the same message on every process
    every = mesh.comm.world.allgather(text)
    assert all(t == text for t in every)
    _in_step(mesh)
    # and the right blocks still work, with one collective (the creation check) and no more
    before = spmd._State.seq
    x = sa.from_local(mesh, host[2 * r : 2 * r + 2], ("a", "b"), (8, 2), {"a": "x"})
    assert spmd._State.seq == before + 1
    np.testing.assert_array_equal(x.numpy(), host)


@mpi4
def test_from_local_lowest_failing_process_wins_and_other_errors_travel(monkeypatch):
    monkeypatch.delenv("SHARDARRAY_CHECK_SPMD", raising=False)
    mesh = sa.Mesh({"row": 2, "col": 2}, comm="mpi")
    r = mesh.process_index
    # processes 2 and 3 both give wrong blocks (of different shapes): all raise process 2's error
    blk = np.zeros((2, 2)) if r < 2 else np.zeros((r + 1, 2))
    first = r"device 2 \{'row': 1, 'col': 0\} \(process 2\) .* block of shape \(3, 2\)"
    with pytest.raises(sa.DimensionError, match=first):
        sa.from_local(mesh, blk, ("a", "b"), (4, 2), {"a": "row"})

    # an error that is not shardarray's (the data source failed) on process 3: every process raises one class, an
    # ArgumentError naming it (on process 3 raised from its own OSError), so an ``except`` takes one branch everywhere
    def source(device):
        if device == 3:
            raise OSError("disk on fire")
        return np.zeros((2, 1))

    with pytest.raises(sa.ArgumentError, match="process 3 raised OSError: disk on fire") as info:
        sa.from_local(mesh, source, ("a", "b"), (4, 2), {"a": "row", "b": "col"})
    assert isinstance(info.value.__cause__, OSError) == (r == 3)
    # a bad argument on one process only (here: sizes that do not fit the layout's mesh axis)
    with pytest.raises(sa.ShardArrayError) as info:
        sa.from_local(mesh, np.zeros((2, 2)), ("a", "b"), (4, 2), {"a": "row" if r != 0 else "nope"})
    assert len(set(mesh.comm.world.allgather((type(info.value).__name__, str(info.value))))) == 1
    _in_step(mesh)


# ---------------------------------------------------------------- different layouts on different processes
@mpi4
@pytest.mark.parametrize("on", CHECKED, ids=["plain", "check_spmd"])
@pytest.mark.parametrize("shape", [(8, 4), (6, 5)], ids=["even", "uneven"])
def test_from_local_layouts_that_differ_raise_commerror_everywhere(monkeypatch, on, shape):
    _check(monkeypatch, on)
    mesh = sa.Mesh({"x": 4}, comm="mpi")
    r = mesh.process_index
    host = np.arange(float(np.prod(shape))).reshape(shape)
    layout = {"a": "x"} if r != 2 else {"b": "x"}  # process 2 splits the other dim
    dim = 0 if r != 2 else 1
    step = -(-shape[dim] // 4)
    blk = np.take(host, range(step * r, min(step * r + step, shape[dim])), axis=dim)
    with pytest.raises(sa.CommError, match=r"disagree on the layout.*process 2: .*with layout \{'b': \('x',\)\}"):
        sa.from_local(mesh, blk, ("a", "b"), shape, layout)
    _in_step(mesh)


@mpi4
@pytest.mark.parametrize("on", CHECKED, ids=["plain", "check_spmd"])
@pytest.mark.parametrize("shape", [(6, 4), (6, 5)], ids=["even", "uneven"])
@pytest.mark.parametrize("mesh_shape", [{"x": 4}, {"row": 2, "col": 2}], ids=str)
def test_numpy_of_arrays_made_with_different_layouts_raises_commerror(monkeypatch, on, shape, mesh_shape):
    """The fuzzer's case: the same global shape and dtype, blocks split differently: asarray refuses it on every
    process; an array made unchecked is refused by numpy() (no scrambled gather)."""
    _check(monkeypatch, on)
    mesh = sa.Mesh(mesh_shape, comm="mpi")
    r = mesh.process_index
    axes = tuple(mesh_shape)
    host = np.arange(float(np.prod(shape))).reshape(shape)
    if len(axes) == 1:
        layout = {"a": axes[0]} if r != 1 else {"b": axes[0]}
    else:  # both split "a" in two, along different mesh axes: the same block shapes, other blocks
        layout = {"a": "row"} if r != 1 else {"a": "col"}
    with pytest.raises(sa.CommError, match=r"disagree on the layout.*process 1: #\d+ asarray") as made:
        sa.asarray(host, dims=("a", "b"), mesh=mesh, layout=layout)  # caught where the array is made
    assert len(set(mesh.comm.world.allgather(str(made.value)))) == 1
    _in_step(mesh)
    monkeypatch.setattr(mesh.comm, "check_spmd", lambda *a, **k: None)  # made unchecked: numpy() catches it
    x = sa.asarray(host, dims=("a", "b"), mesh=mesh, layout=layout)
    pattern = r"disagree on the layout.*process 1: #\d+ numpy on a float64 block of shape \(\d+, \d+\) of a global"
    with pytest.raises(sa.CommError, match=pattern) as info:
        x.numpy()
    assert len(set(re.findall(r"into blocks ([0-9a-f]{16})", str(info.value)))) == 2  # process 1's and the others'
    assert len(set(mesh.comm.world.allgather(str(info.value)))) == 1  # the same message everywhere
    _in_step(mesh)


@mpi4
def test_numpy_of_a_split_array_is_one_collective(monkeypatch):
    monkeypatch.delenv("SHARDARRAY_CHECK_SPMD", raising=False)
    mesh = sa.Mesh({"row": 2, "col": 2}, comm="mpi")
    host = np.arange(30.0).reshape(6, 5)
    x = sa.asarray(host, dims=("a", "b"), mesh=mesh, layout={"a": "row", "b": "col"})
    before = spmd._State.seq
    np.testing.assert_array_equal(x.numpy(), host)
    assert spmd._State.seq == before + 1


# ---------------------------------------------------------------- the comparison itself (any process count)
class _World:
    """A stand-in for COMM_WORLD whose allgather returns what the other processes would have sent."""

    def __init__(self, rank, others):
        self.rank, self.others = rank, others

    def Get_rank(self):
        return self.rank

    def Get_size(self):
        return len(self.others) + 1

    def allgather(self, mine):
        every = list(self.others)
        every.insert(self.rank, mine)
        return every


def _sig(seq, extra):
    return (seq, "numpy", (), "float64", (3, 4), None, None, (6, 4), extra)


def test_compare_names_a_layout_difference():
    a = spmd.blocks_extra([(slice(0, 3), slice(0, 4)), (slice(3, 6), slice(0, 4))], (6, 4))
    b = spmd.blocks_extra([(slice(0, 6), slice(0, 2)), (slice(0, 6), slice(2, 4))], (6, 4))
    assert a[0] != b[0] and a[1] == f"split along array axes (0,) into blocks {a[0]}" and "axes (1,)" in b[1]
    spmd.compare([_sig(1, (a[0], "x")), _sig(1, (a[0], "y"))])  # the same token: fine (the text may differ)
    with pytest.raises(sa.CommError, match=r"disagree on the layout .*process 0: .*axes \(0,\).*process 1: "):
        spmd.compare([_sig(1, a), _sig(1, b)])
    assert spmd.layout_extra({"a": ("x",), "b": ()}) == ("{'a': ('x',)}", "with layout {'a': ('x',)}")


def test_enter_relays_the_lowest_failing_processes_error(monkeypatch):
    monkeypatch.setattr(spmd._State, "job", spmd._State.job)  # (the stand-in job of several ends with the test)
    fail = ("DimensionError", "from_local: device 1 supplied a block of shape (3, 2)")
    ok = (_sig(spmd._State.seq + 1, None), None)
    with pytest.raises(sa.DimensionError, match=r"device 1 supplied a block of shape \(3, 2\)"):
        spmd.enter(_World(0, [(ok[0], fail), (ok[0], None)]), "numpy", (), np.zeros((3, 4)), check=True)
    mine = sa.DimensionError("my own")
    with pytest.raises(sa.DimensionError, match="my own") as info:  # the lowest failing process re-raises its own
        spmd.enter(_World(1, [ok, (ok[0], fail)]), "x", (), np.zeros(1), check=True, failure=mine)
    assert info.value is mine
    raw = KeyError("k")  # not one of sa's: the failing process raises its note's ArgumentError too, from its own
    with pytest.raises(sa.ArgumentError, match="process 1 raised KeyError") as info:
        spmd.enter(_World(1, [ok]), "x", (), np.zeros(1), check=True, failure=raw)
    assert info.value.__cause__ is raw
    with pytest.raises(sa.ArgumentError, match="process 0 raised KeyError"):
        spmd.enter(_World(1, [(ok[0], spmd.error_note(KeyError("k"), 0))]), "x", (), np.zeros(1), check=True)
    with pytest.raises(RuntimeError, match="alone"):  # no exchange (check=False): raised here only
        spmd.enter(_World(0, []), "x", (), np.zeros(1), failure=RuntimeError("alone"))
