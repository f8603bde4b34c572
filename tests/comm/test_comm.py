"""The emulated Communicator and the CommLog: results and volumes against the formulas."""

from __future__ import annotations

import numpy as np
import pytest

import shardarray as sa
from shardarray.comm import wire_bytes
from shardarray.comm.header import JOB
from shardarray.comm.job import show
from helpers import device_blocks, host, rand


def per_device(mesh, fn):
    """One block of ``mesh``'s backend per device, with ``fn(d)``'s values; the results come back as NumPy."""
    return device_blocks(mesh, fn)


def to_host(blocks):
    return [host(b) for b in blocks]


@pytest.fixture
def mesh():
    return sa.Mesh({"x": 2, "y": 3})


def test_allreduce_sum_max_min(mesh):
    bufs = per_device(mesh, lambda d: np.full((2, 2), float(d)))
    with sa.comm_log() as log:
        s = to_host(mesh.comm.allreduce(bufs, ("y",)))
        m = to_host(mesh.comm.allreduce(bufs, ("y",), op="max"))
        n = to_host(mesh.comm.allreduce(bufs, ("x", "y"), op="min"))
    # groups along y: (0,1,2) and (3,4,5)
    assert s[1][0, 0] == 0 + 1 + 2 and s[4][0, 0] == 3 + 4 + 5
    assert m[0][0, 0] == 2 and m[5][0, 0] == 5
    assert all(b[0, 0] == 0 for b in n)
    r = log.records[0]
    assert (r.op, r.axes, r.group_size, r.elements, r.bytes) == ("allreduce", ("y",), 3, 4, 32)
    assert r.wire_bytes == pytest.approx(2 * 2 / 3 * 32)
    assert log.records[2].group_size == 6


def test_allgather_multi_axis_order(mesh):
    bufs = per_device(mesh, lambda d: np.array([d]))
    with sa.comm_log() as log:
        out = to_host(mesh.comm.allgather(bufs, ("y", "x"), dim=0))
    # group ordered y-major, x-minor: devices 0,3,1,4,2,5
    np.testing.assert_array_equal(out[0], [0, 3, 1, 4, 2, 5])
    r = log.records[0]
    assert (r.op, r.group_size, r.elements) == ("allgather", 6, 1)
    assert r.wire_bytes == 5 * 8


def test_reduce_scatter_uneven(mesh):
    bufs = per_device(mesh, lambda d: np.arange(7.0) * (d + 1))
    with sa.comm_log() as log:
        out = to_host(mesh.comm.reduce_scatter(bufs, ("y",), dim=0))
    total = np.arange(7.0) * (1 + 2 + 3)
    np.testing.assert_array_equal(out[0], total[0:3])
    np.testing.assert_array_equal(out[1], total[3:6])
    np.testing.assert_array_equal(out[2], total[6:7])
    r = log.records[0]
    assert r.elements == 7 and r.wire_bytes == pytest.approx(2 / 3 * 56)


def test_alltoall(mesh):
    bufs = per_device(mesh, lambda d: np.arange(6.0).reshape(1, 6) + 10 * d)
    with sa.comm_log() as log:
        out = to_host(mesh.comm.alltoall(bufs, ("y",), split_dim=1, concat_dim=0))
    # member i of the y group (0,1,2) gets columns 2i:2i+2 of every member, stacked by member
    np.testing.assert_array_equal(out[1], np.array([[2, 3], [12, 13], [22, 23]], dtype=float))
    assert log.records[0].op == "alltoall" and log.records[0].wire_bytes == pytest.approx(2 / 3 * 48)


def test_broadcast_and_reduce(mesh):
    bufs = per_device(mesh, lambda d: np.array([float(d)]))
    with sa.comm_log() as log:
        b = to_host(mesh.comm.broadcast(bufs, ("x",), root=1))
        r = to_host(mesh.comm.reduce(bufs, ("x",), root=0))
    assert [v[0] for v in b] == [3, 4, 5, 3, 4, 5]
    assert [v[0] for v in r] == [3, 5, 7, 3, 4, 5]   # roots (x=0) hold the sums, others keep theirs
    assert [rec.wire_bytes for rec in log.records] == [8, 8]
    with pytest.raises(sa.MeshError, match="root 2"):
        mesh.comm.broadcast(bufs, ("x",), root=2)


def test_group_of_one_is_free():
    mesh = sa.Mesh({"d": 1, "e": 2})
    bufs = per_device(mesh, lambda d: np.ones(3))
    with sa.comm_log() as log:
        mesh.comm.allreduce(bufs, ("d",))
    assert log.records == []


@pytest.mark.parametrize("op,n,expect", [
    ("allreduce", 4, 2 * 3 / 4), ("allgather", 4, 3), ("reduce_scatter", 4, 3 / 4),
    ("alltoall", 4, 3 / 4), ("broadcast", 4, 1), ("reduce", 4, 1), ("allreduce", 1, 0),
])
def test_wire_formulas(op, n, expect):
    assert wire_bytes(op, n, 1000) == pytest.approx(1000 * expect)


def test_relayout_transitions_and_volumes():
    """Mesh-TF §6.1: slice is free, split->unsplit allgathers, an axis changing dims is an alltoall."""
    mesh = sa.Mesh({"row": 2, "col": 2})
    a = rand((8, 6))
    x = sa.asarray(a, dims=("batch", "io"), mesh=mesh)
    with sa.comm_log() as log:
        y = x.relayout({"batch": "row"})
    assert log.records == []
    with sa.comm_log() as log:
        z = y.relayout({"io": "row"})
    assert [(r.op, r.axes, r.elements) for r in log.records] == [("alltoall", ("row",), 4 * 6)]
    with sa.comm_log() as log:
        w = z.relayout({})
    assert [(r.op, r.axes, r.elements) for r in log.records] == [("allgather", ("row",), 8 * 3)]
    with sa.comm_log() as log:
        v = y.relayout({"batch": ("row", "col")}).relayout({"batch": None, "io": ("row", "col")})
    # both axes move together: one alltoall over the (row, col) group
    assert [(r.op, r.axes) for r in log.records] == [("alltoall", ("row", "col"))]
    for arr in (y, z, w, v):
        np.testing.assert_array_equal(arr.numpy(), a)


def test_pending_sum_semantics_and_reduce_scatter():
    mesh = sa.Mesh({"row": 2, "col": 2})
    a, b = rand((4, 6)), rand((6, 8), 1)
    x = sa.asarray(a, dims=("batch", "io"), mesh=mesh, layout={"io": "col"})
    w = sa.asarray(b, dims=("io", "hidden"), mesh=mesh, layout={"io": "col"})
    with sa.comm_log() as log:
        h = sa.einsum(x, w)
        assert h.pending == ("col",)
        kept = -(2.0 * h + h) / 3.0          # linear ops keep the sum pending
        assert kept.pending == ("col",)
        assert log.records == []
        rs = kept.relayout({"hidden": "col"})  # consumer splits hidden over the pending axis
        assert [(r.op, r.axes, r.elements) for r in log.records] == [("reduce_scatter", ("col",), 32)]
        log.clear()
        biased = h + sa.ones(mesh, {"hidden": 8}, dtype="float64")    # a bias resolves with an allreduce
        assert [(r.op, r.axes, r.elements) for r in log.records] == [("allreduce", ("col",), 32)]
        log.clear()
        sa.exp(h)
        assert log.records == []          # h was resolved once already: the reduction is reused
        sa.exp(sa.einsum(x, w))
        assert [r.op for r in log.records] == ["allreduce"]
    np.testing.assert_allclose(rs.numpy(), -(a @ b), rtol=1e-12)
    np.testing.assert_allclose(biased.numpy(), a @ b + 1, rtol=1e-12)
    assert rs.layout == {"hidden": ("col",)} and rs.pending == ()
    # reduce-scatter costs half the wire bytes of the allreduce it replaces
    with sa.comm_log() as l1:
        h.relayout({"hidden": "col"})
    with sa.comm_log() as l2:
        sa.einsum(x, w).resolve()
    assert l1.total("wire_bytes") * 2 == l2.total("wire_bytes")


def test_einsum_layout_argument_reduce_scatters():
    mesh = sa.Mesh({"model": 4})
    x = sa.asarray(rand((6, 8)), dims=("batch", "d_ff"), mesh=mesh, layout={"d_ff": "model"})
    w = sa.asarray(rand((8, 5), 1), dims=("d_ff", "d_model"), mesh=mesh, layout={"d_ff": "model"})
    with sa.comm_log() as log:
        y = sa.einsum(x, w, layout={"batch": "model"})
    assert [r.op for r in log.records] == ["reduce_scatter"]
    np.testing.assert_allclose(y.numpy(), x.numpy() @ w.numpy(), rtol=1e-12)


def test_log_summary_and_totals():
    mesh = sa.Mesh({"all": 4})
    x = sa.ones(mesh, {"b": 4, "h": 8}, layout={"h": "all"})
    with sa.comm_log() as log:
        x.sum("h").numpy()
    assert log.total() == 4 and log.total("bytes", op="allreduce") == 16
    assert "allreduce" in log.summary() and "total" in log.summary()


@pytest.mark.parametrize("axes", [("p", "q"), ("q", "p")])
@pytest.mark.parametrize("n", [5, 6, 7, 13])
def test_multi_axis_alltoall_on_uneven_mesh(axes, n):
    """Two axes moving together between dims, on a 3 x 2 mesh with uneven sizes."""
    mesh = sa.Mesh({"p": 3, "q": 2})
    a = rand((n, n + 2))
    x = sa.asarray(a, dims=("i", "j"), mesh=mesh, layout={"i": axes})
    with sa.comm_log() as log:
        y = x.relayout({"j": axes})
    assert [(r.op, r.axes) for r in log.records] == [("alltoall", axes)]
    ref = sa.asarray(a, dims=("i", "j"), mesh=mesh, layout={"j": axes})
    for d in range(mesh.size):
        np.testing.assert_array_equal(host(y.shards[d]), host(ref.shards[d]))
    # and a pending sum scattered over both axes
    w = sa.asarray(rand((n + 2, 4), 2), dims=("j", "k"), mesh=mesh, layout={"j": axes})
    z = sa.einsum(y, w, layout={"i": axes})
    np.testing.assert_allclose(z.numpy(), a @ w.numpy(), rtol=1e-12)


def test_public_relayout_and_resolve_into_layout():
    mesh = sa.Mesh({"row": 2, "col": 2})
    a = rand((6, 5))
    x = sa.asarray(a, dims=("i", "j"), mesh=mesh, layout={"i": "row", "j": "col"})
    y = sa.relayout(x, {"i": ("col", "row")})
    assert y.layout == {"i": ("col", "row")}
    np.testing.assert_array_equal(y.numpy(), a)
    s = x.sum("i")                                  # pending over row
    with sa.comm_log() as log:
        r = s.resolve({"j": ("col", "row")})        # scatters the sum into j's next axis
    assert [rec.op for rec in log.records] == ["reduce_scatter"]
    np.testing.assert_allclose(r.numpy(), a.sum(axis=0), rtol=1e-12)


def test_one_buffer_finds_the_buffer_pieces_are_cut_from():
    """``comm.mpi.one_buffer``: an ``Alltoallv`` sends pieces cut from one buffer (a sort's buckets) from it, by
    byte offsets, without concatenating them; anything else is concatenated (None)."""
    from shardarray.comm.mpi import one_buffer

    base = np.arange(10, dtype=np.float32)
    buf, offsets = one_buffer([base[:3], base[3:3], base[3:10]])  # (an empty piece's offset sends nothing)
    assert buf.dtype == np.uint8 and buf.nbytes == base.nbytes and (offsets[0], offsets[2]) == (0, 12)
    _, offsets = one_buffer([base[6:], base[:2]])  # out of order, with a gap: displacements say where each is
    assert offsets == [24, 0]
    two = base.reshape(2, 5)
    assert one_buffer([two[1], two[0, 1:3]])[1] == [20, 4]  # views of views: the root buffer
    assert one_buffer([base[:3], np.arange(3.0)]) is None  # two buffers
    assert one_buffer([base[::2]]) is None  # a strided piece
    assert one_buffer([np.asfortranarray(np.ones((3, 2)))[:, 0]]) is None  # a root that is not C-contiguous
    assert one_buffer([]) is None


def test_spmd_check_shows_numpy_scalar_types_by_name():
    """``SHARDARRAY_CHECK_SPMD=1`` compares every op's arguments across processes with ``comm.job.show``: a NumPy
    scalar type (``xp.astype(x, np.float64)``, ``np.sum(x, dtype=np.float64)``) is a class whose ``ndim`` is a
    true descriptor, and it was read as an array (``np.float64.tobytes()``: a TypeError on every process)."""
    assert show(np.float64) == repr(np.float64)
    assert show((np.float32, np.arange(3.0)))[:30] == "(<class 'numpy.float32'>, <nda"


def test_one_process_alone_is_not_a_job_of_several():
    """A collective on a one-process ``comm="mpi"`` mesh left ``JOB.job`` set for the rest of the process, and every
    later op ran through the job's checks (``comm.header.as_op``: a frame and a try more per op), with nobody to
    agree with."""
    mpi = pytest.importorskip("mpi4py.MPI")
    if mpi.COMM_WORLD.Get_size() > 1:
        pytest.skip("inside a job of several processes")
    mesh = sa.Mesh({"row": 1}, comm="mpi")
    x = sa.asarray(np.arange(4.0), dims=("a",), mesh=mesh, layout={"a": "row"})
    assert float(x.sum()) == 6.0
    assert JOB.job is False
