"""``x[mask]`` and ``x[mask] = v`` against their traffic formula: no device receives more than its share.

A mask over several dims moved the mask's mesh axes onto the first mask dim longer than 1; where that dim is
shorter than the group, a few devices received many blocks (2x2x2, (2, 64, 4) split over the 64: two devices got
256 entries against a 64-entry block). Now the mask dims' row-major order is chunked evenly over the mask axes
(``route.RowMajor``): each device receives at most ``ceil(N / p)`` rows of its other dims' block, then its block of
the selection. Each fuzz case checks the value against NumPy (``x[mask]`` order, writes of a scalar, of the
selection's length and broadcast values) and what every device receives in every alltoallv (counted per receiver by
wrapping the mesh's communicator) against that formula, on meshes 1, 2x2, 4, 2x2x2, 3x2 with uneven and empty
blocks.

``FUZZ9_EXAMPLES=<n>`` runs every fuzzer with ``n`` examples.
"""

from __future__ import annotations

import contextlib
import math

import numpy as np
from fuzzing import cached_mesh as _mesh
from fuzzing import cached_meshes as meshes
from fuzzing import fuzz
from helpers import layouts
from hypothesis import given
from hypothesis import strategies as st

import shardarray as sa
import shardarray.array_api as xp
from shardarray.array import as_kind
from shardarray.chunks import group_chunk
from shardarray.layout import block_bounds

ENV = "FUZZ9_EXAMPLES"
SIDES = (0, 1, 2, 3, 5, 8, 13)
FEW = 8


def _size(piece) -> int:
    return sum(int(p.size) for p in piece) if isinstance(piece, (list, tuple)) else int(piece.size)


@contextlib.contextmanager
def receipts(mesh):
    """Per collective call, the most elements any device receives: from the *other* members of its group in an
    alltoallv (``alltoallv_boxes`` too), its whole new block in an alltoall or allgather (an upper bound)."""
    comm = mesh.comm
    got: list[int] = []

    def spy_v(name):
        inner = getattr(comm, name)

        def spy(send, axes, *args):
            most = 0
            for group in mesh.groups(axes):
                if any(send[d] is None for d in group):
                    continue
                for i, _ in enumerate(group):
                    most = max(most, sum(_size(send[j][i]) for k, j in enumerate(group) if k != i))
            got.append(most)
            return inner(send, axes, *args)

        return spy

    def spy_block(name):
        inner = getattr(comm, name)

        def spy(*args, **kwargs):
            out = inner(*args, **kwargs)
            got.append(max((int(b.size) for b in out if b is not None), default=0))
            return out

        return spy

    names = {"alltoallv": spy_v, "alltoallv_boxes": spy_v, "alltoall": spy_block, "allgather": spy_block}
    for name, make in names.items():
        setattr(comm, name, make(name))
    try:
        yield got
    finally:
        for name in names:
            delattr(comm, name)


def _block(x) -> int:
    """The most elements any device holds of ``x``."""
    return max((math.prod(hi - lo for lo, hi in b) for b in block_bounds(x.mesh, x.spec)), default=0)


def chunk_cap(x, mdims) -> int:
    """The most entries of ``x`` a device holds once the mask dims' row-major order is chunked over their axes:
    ``ceil(N / p)`` rows (``group_chunk``) of its other dims' block (at least one entry a row: the mask's)."""
    axes = [a for d in mdims for a in x.layout.get(d, ())]
    radix = [x.mesh.axis_size(a) for a in axes]
    n = math.prod(x.sizes[d] for d in mdims)
    rows = max(hi - lo for lo, hi in (group_chunk(0, n, radix, j) for j in range(math.prod(radix))))
    rest = [k for k, d in enumerate(x.dims) if d not in mdims]
    return rows * max(max(math.prod(b[k][1] - b[k][0] for k in rest), 1) for b in block_bounds(x.mesh, x.spec))


def _case(data, mesh):
    """``(x, a, mdims, keep, mask)``: an array in a random layout, a mask over a random ordered subset of its dims."""
    ndim = data.draw(st.integers(1, 3))
    dims = ("i", "j", "k")[:ndim]
    sizes = {d: data.draw(st.sampled_from(SIDES)) for d in dims}
    seed = data.draw(st.integers(0, 2**31))
    rng = np.random.default_rng(seed)
    a = rng.integers(-50, 50, tuple(sizes.values())).astype(data.draw(st.sampled_from(("float64", "int32"))))
    x = sa.asarray(a, dims=dims, mesh=mesh, layout=data.draw(layouts(mesh, dims)))
    mdims = tuple(data.draw(st.permutations(dims))[: data.draw(st.integers(1, ndim))])
    keep = rng.random(tuple(sizes[d] for d in mdims)) < data.draw(st.sampled_from((0.0, 0.5, 1.0)))
    mlay = {d: ax for d, ax in x.layout.items() if d in mdims} if data.draw(st.booleans()) else {}
    mask = sa.asarray(keep, dims=mdims, mesh=mesh, layout=mlay)
    return x, a, mdims, keep, mask


def _numpy_select(a, dims, mdims, keep):
    rest = [d for d in dims if d not in mdims]
    return np.transpose(a, [dims.index(d) for d in (*mdims, *rest)])[keep]


@fuzz(40, ENV)
@given(st.data())
def test_fuzz_select_receives_a_chunk(data):
    """``sa.select(x, mask)`` over any ordered subset of dims: NumPy's row-major order; every alltoallv receives at
    most a chunk of rows (the flattening) or the receiver's block of the selection."""
    mesh = data.draw(meshes())
    x, a, mdims, keep, mask = _case(data, mesh)
    positional = mdims == x.dims[: len(mdims)] and data.draw(st.booleans())  # x[keep], NumPy's leading axes
    with receipts(mesh) as got:
        y = as_kind(x, xp.Array)[keep] if positional else sa.select(x, mask)
    e = _numpy_select(a, x.dims, mdims, keep)
    np.testing.assert_array_equal(y.numpy(), e)
    assert y.numpy().dtype == e.dtype
    cap = max(chunk_cap(x, mdims), _block(y)) + FEW
    assert all(g <= cap for g in got), (got, cap, x.sizes, x.layout, mdims)


@fuzz(40, ENV)
@given(st.data())
def test_fuzz_mask_assign_receives_a_chunk(data):
    """``x[mask] = v`` (v a scalar, the selection's length, or broadcast along it): NumPy's write; every alltoallv
    receives at most a chunk of rows, the receiver's block of x, or its share of v."""
    mesh = data.draw(meshes())
    x, a, mdims, keep, mask = _case(data, mesh)
    e = a.copy()
    ev = np.transpose(e, [x.dims.index(d) for d in (*mdims, *(d for d in x.dims if d not in mdims))])
    sel = _numpy_select(a, x.dims, mdims, keep)
    kind = data.draw(st.sampled_from(("scalar", "full", "row")))
    if kind == "scalar":
        v = 7
        ev[keep] = 7
    elif kind == "full":
        vals = (np.arange(sel.size) % 11 - 5).reshape(sel.shape).astype(a.dtype)
        rest = tuple(d for d in x.dims if d not in mdims)
        lay = {d: x.layout[d] for d in rest if d in x.layout}  # select's output layout, or replicated
        lay["__s"] = tuple(a for d in mdims for a in x.layout.get(d, ()))
        v = sa.asarray(vals, dims=("__s", *rest), mesh=mesh, layout=lay if data.draw(st.booleans()) else {})
        ev[keep] = vals
    else:  # one row of the kept dims, broadcast along the selection (NumPy's rule, by position)
        vals = (np.arange(math.prod(sel.shape[1:])) - 3).reshape((1,) + sel.shape[1:]).astype(a.dtype)
        v = vals
        ev[keep] = vals
    mlay = dict(x.layout)
    positional = mdims == x.dims[: len(mdims)] and kind != "full" and data.draw(st.booleans())
    z = as_kind(x, xp.Array) if positional else x  # the positional array is another object: check it
    with receipts(mesh) as got:
        if positional:
            z[keep] = v
        else:
            sa.mask_assign(z, mask, v)
    np.testing.assert_array_equal(z.numpy(), e)
    assert z.layout == mlay
    cap = max(chunk_cap(x, mdims), _block(x)) + FEW
    assert all(g <= cap for g in got), (got, cap, x.sizes, x.layout, mdims)


def test_mask_over_a_short_leading_dim_spreads_the_rows():
    """2x2x2 mesh, x (2, 64, 4) split ``{j: (x, y, z)}``, mask over (i, j): the mask axes moved onto i (size 2),
    so two devices received 256 entries each against a 64-entry block (and sent their selection on). Now each
    device receives at most 16 rows of 4 (its chunk of the 128 row-major positions) and its block of the selection."""
    mesh = _mesh({"x": 2, "y": 2, "z": 2})
    a = np.arange(512.0).reshape(2, 64, 4)
    keep = (np.arange(128).reshape(2, 64) * 7) % 5 < 3
    x = sa.asarray(a, dims=("i", "j", "k"), mesh=mesh, layout={"j": ("x", "y", "z")})
    mask = sa.asarray(keep, dims=("i", "j"), mesh=mesh, layout={"j": ("x", "y", "z")})
    with receipts(mesh) as got, sa.comm_log() as log:
        y = sa.select(x, mask)
    np.testing.assert_array_equal(y.numpy(), a[keep])
    assert [r.op for r in log.records] == ["alltoall", "alltoall", "allgather", "alltoall"], log.records
    sel = -(-int(keep.sum()) // 8) * 4
    assert got[0] <= 16 * 4 and got[1] <= 16 and got[2] <= sel, got
    with receipts(mesh) as got:
        x[mask] = -y
    expect = a.copy()
    expect[keep] = -a[keep]
    np.testing.assert_array_equal(x.numpy(), expect)
    assert max(got) <= 64, got  # the selection, then the chunks back to their blocks: a block at most
    g = sa.grad(lambda p: (sa.select(p, mask) ** 2).sum())(x)  # the VJP: the same plan backwards
    np.testing.assert_array_equal(g.numpy(), 2 * expect * keep[:, :, None])


def test_mask_in_row_major_runs_moves_no_rows():
    """A mask whose dims are laid out in row-major runs already (one split dim after size-1 ones, unsplit dims
    after it) moves nothing but the selection: one allgather of counts and one alltoallv."""
    mesh = _mesh({"row": 2, "col": 2})
    a = np.arange(60.0).reshape(1, 10, 6)
    keep = (np.arange(60).reshape(1, 10, 6) % 3) == 0
    x = sa.asarray(a, dims=("i", "j", "k"), mesh=mesh, layout={"j": ("row", "col")})
    with sa.comm_log() as log:
        y = sa.select(x, sa.asarray(keep, dims=("i", "j", "k"), mesh=mesh, layout={"j": ("row", "col")}))
    np.testing.assert_array_equal(y.numpy(), a[keep])
    assert [r.op for r in log.records if r.group_size > 1] == ["allgather", "alltoall"], log.records
