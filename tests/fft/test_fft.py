"""sa.fft and xp.fft against numpy.fft on every test mesh, with uneven and empty blocks; traffic vs the formula."""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers import layouts, meshes
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import shardarray as sa
import shardarray.array_api as xp

SETTINGS = settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
NORMS = ("backward", "ortho", "forward")
ONE_D = ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")
REAL_IN = ("rfft", "ihfft", "rfftn")


def _data(shape, kind, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape)
    return a if kind == "real" else a + 1j * rng.standard_normal(shape)


@st.composite
def cases(draw, ndim_min=1):
    mesh = draw(meshes())
    ndim = draw(st.integers(ndim_min, 3))
    dims = ("a", "b", "c")[:ndim]
    shape = tuple(draw(st.integers(2, 7)) for _ in dims)
    return mesh, dims, shape, draw(layouts(mesh, dims))


@SETTINGS
@given(c=cases(), fn=st.sampled_from(ONE_D), norm=st.sampled_from(NORMS), data=st.data())
def test_one_dim_matches_numpy(c, fn, norm, data):
    mesh, dims, shape, layout = c
    k = data.draw(st.integers(0, len(dims) - 1))
    n = data.draw(st.none() | st.integers(1, 9))
    if fn in ("irfft", "hfft") and n is None and shape[k] < 2:
        n = 2
    a = _data(shape, "real" if fn in REAL_IN else "complex", 0)
    x = sa.asarray(a, dims=dims, mesh=mesh, layout=layout)
    y = getattr(sa.fft, fn)(x, dims[k], n=n, norm=norm)
    want = getattr(np.fft, fn)(a, n=n, axis=k, norm=norm)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-10, atol=1e-10)
    assert y.layout == x.layout and y.dims == x.dims and y.dtype == want.dtype


@SETTINGS
@given(c=cases(), fn=st.sampled_from(("fftn", "ifftn", "rfftn", "irfftn")), norm=st.sampled_from(NORMS),
       data=st.data())
def test_n_dim_matches_numpy(c, fn, norm, data):
    mesh, dims, shape, layout = c
    axes = data.draw(st.lists(st.integers(0, len(dims) - 1), min_size=1, unique=True))
    s = data.draw(st.none() | st.tuples(*[st.integers(2, 8) for _ in axes]))
    a = _data(shape, "real" if fn in REAL_IN else "complex", 1)
    x = sa.asarray(a, dims=dims, mesh=mesh, layout=layout)
    y = getattr(sa.fft, fn)(x, [dims[i] for i in axes], s=s, norm=norm)
    want = getattr(np.fft, fn)(a, s=s, axes=axes, norm=norm)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-10, atol=1e-10)
    assert y.layout == x.layout


@pytest.mark.parametrize("shape", [{"d": 1}, {"row": 2, "col": 2}, {"all": 4}, {"x": 2, "y": 2, "z": 2},
                                   {"p": 3, "q": 2}])
def test_single_precision_and_split_1d(shape):
    mesh = sa.Mesh(shape)
    axes = tuple(mesh.axis_names)
    a = _data((7,), "complex", 2).astype(np.complex64)
    x = sa.asarray(a, dims=("t",), mesh=mesh, layout={"t": axes})
    y = sa.fft.fft(x, "t")
    assert y.dtype == np.complex64 and y.layout == x.layout
    np.testing.assert_allclose(y.numpy(), np.fft.fft(a), rtol=1e-5, atol=1e-5)
    r = sa.asarray(a.real, dims=("t",), mesh=mesh, layout={"t": axes})
    assert sa.fft.rfft(r, "t").dtype == np.complex64 and sa.fft.irfft(y, "t").dtype == np.float32


def test_split_dim_costs_two_alltoalls_of_a_block():
    """(k-1)/k of the block there (input) and back (output), over the dim's axes only."""
    mesh = sa.Mesh({"row": 2, "col": 2})
    a = _data((8, 12), "complex", 3)
    x = sa.asarray(a, dims=("a", "b"), mesh=mesh, layout={"a": "row", "b": "col"})
    with sa.comm_log() as log:
        y = sa.fft.fft(x, "a", n=6)
    recs = [(r.op, r.axes) for r in log.records]
    assert recs == [("alltoall", ("row",)), ("alltoall", ("row",))]
    block_in, block_out = 4 * 6, 3 * 6  # a: 8 -> 6 rows over row (2), b: 12 over col (2)
    assert [r.elements for r in log.records] == [block_in, block_out]  # the buffer each device puts in
    assert [r.wire_bytes for r in log.records] == [block_in * 16 // 2, block_out * 16 // 2]  # (k-1)/k of it
    np.testing.assert_allclose(y.numpy(), np.fft.fft(a, n=6, axis=0))


def test_pencil_fft2_traffic_matches_formula():
    """2-D FFT split on both dims of a 2x2 mesh: per split dim two alltoalls of half a block each."""
    mesh = sa.Mesh({"row": 2, "col": 2})
    n = 16
    a = _data((n, n), "complex", 4)
    x = sa.asarray(a, dims=("a", "b"), mesh=mesh, layout={"a": "row", "b": "col"})
    with sa.comm_log() as log:
        y = sa.fft.fftn(x)
    block = (n // 2) * (n // 2)
    assert [r.op for r in log.records] == ["alltoall"] * 4
    assert [r.elements for r in log.records] == [block] * 4
    assert sum(r.wire_bytes for r in log.records) == 4 * block * 16 // 2  # 2 blocks sent per device in all
    np.testing.assert_allclose(y.numpy(), np.fft.fft2(a), rtol=1e-10, atol=1e-9)


def test_unsplit_dim_is_local():
    mesh = sa.Mesh({"row": 2, "col": 2})
    a = _data((6, 5), "complex", 5)
    x = sa.asarray(a, dims=("a", "b"), mesh=mesh, layout={"a": ("row", "col")})
    with sa.comm_log() as log:
        y = sa.fft.ifft(x, "b", n=3)
    assert log.records == []
    np.testing.assert_allclose(y.numpy(), np.fft.ifft(a, n=3, axis=1))


@SETTINGS
@given(mesh=meshes(), n=st.integers(1, 12), d=st.sampled_from([1.0, 0.5, 3.0]))
def test_freqs_and_shifts(mesh, n, d):
    axes = tuple(mesh.axis_names)
    f = sa.fft.fftfreq(mesh, n, d, layout=axes)
    np.testing.assert_allclose(f.numpy(), np.fft.fftfreq(n, d))
    np.testing.assert_allclose(sa.fft.rfftfreq(mesh, n, d, layout=axes).numpy(), np.fft.rfftfreq(n, d))
    np.testing.assert_allclose(sa.fft.fftshift(f).numpy(), np.fft.fftshift(np.fft.fftfreq(n, d)))
    np.testing.assert_allclose(sa.fft.ifftshift(f).numpy(), np.fft.ifftshift(np.fft.fftfreq(n, d)))


def test_shift_on_split_dims_is_one_alltoallv_each():
    mesh = sa.Mesh({"row": 2, "col": 2})
    a = _data((5, 6), "real", 6)
    x = sa.asarray(a, dims=("a", "b"), mesh=mesh, layout={"a": "row", "b": "col"})
    with sa.comm_log() as log:
        y = sa.fft.fftshift(x)
    assert [r.op for r in log.records] == ["alltoall", "alltoall"]
    np.testing.assert_allclose(y.numpy(), np.fft.fftshift(a))
    np.testing.assert_allclose(sa.fft.ifftshift(y, "a").numpy(), np.fft.ifftshift(np.fft.fftshift(a), axes=0))


def test_positional_namespace():
    with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        a = _data((5, 3), "complex", 7)
        x = xp.asarray(a)
        np.testing.assert_allclose(xp.fft.fft(x, axis=0, n=4).numpy(), np.fft.fft(a, axis=0, n=4))
        np.testing.assert_allclose(xp.fft.irfftn(x, axes=(0, 1), s=(4, 4)).numpy(),
                                   np.fft.irfftn(a, axes=(0, 1), s=(4, 4)))
        np.testing.assert_allclose(xp.fft.fftshift(x, axes=1).numpy(), np.fft.fftshift(a, axes=1))
        f = xp.fft.rfftfreq(7, d=2.0, dtype=xp.float32)
        assert f.dtype == np.float32 and isinstance(f, xp.Array)
        np.testing.assert_allclose(f.numpy(), np.fft.rfftfreq(7, 2.0), rtol=1e-6)
        assert type(xp.fft.fftn(x)) is xp.Array and math.isclose(xp.fft.fftn(x).numpy()[0, 0].real, a.sum().real)


MESH_SHAPES = [{"d": 1}, {"row": 2, "col": 2}, {"all": 4}, {"x": 2, "y": 2, "z": 2}, {"p": 3, "q": 2}]


def _owners(n, radix):
    """Member owning each index of a size-n dim in canonical nested ceil-blocks (independent of the library)."""
    own = np.zeros(n, int)
    for i in range(math.prod(radix)):
        lo, hi = 0, n
        coords = np.unravel_index(i, radix)
        for k, c in zip(radix, coords):
            step = -(-(hi - lo) // k)
            lo, hi = min(hi, lo + c * step), min(hi, lo + (c + 1) * step)
        own[lo:hi] = i
    return own


def _alltoall_elements(m, n, size, radix, lim=None):
    """Most entries any member sends others in each of the four-step's three alltoalls (by index ownership)."""
    from shardarray.fft.four_step import factor
    n1, n2 = factor(n, math.prod(radix))
    f = np.arange(min(m, n, m if lim is None else lim))
    steps = [(_owners(m, radix)[f], _owners(n2, radix)[f % n2])]
    k1, j2 = np.divmod(np.arange(n), n2)  # (k1, j2) row-major
    steps.append((_owners(n2, radix)[j2], _owners(n1, radix)[k1]))
    g = np.arange(min(n, size))
    steps.append((_owners(n1, radix)[g % n1], _owners(size, radix)[g]))
    return [int(max(np.bincount(s[s != d], minlength=1).max(initial=0), 0)) for s, d in steps]


@SETTINGS
@given(shape=st.sampled_from(MESH_SHAPES), m=st.integers(1, 80), n=st.none() | st.integers(1, 90),
       fn=st.sampled_from(ONE_D), norm=st.sampled_from(NORMS))
def test_split_1d_four_step_matches_numpy(shape, m, n, fn, norm):
    """A 1-D array split over all mesh axes, uneven and empty blocks, composite and prime n, every norm."""
    from shardarray.fft.four_step import factor
    mesh = sa.Mesh(shape)
    axes = tuple(mesh.axis_names)
    if fn in ("irfft", "hfft") and n is None and m < 2:
        n = 2
    a = _data((m,), "real" if fn in REAL_IN else "complex", 8)
    x = sa.asarray(a, dims=("t",), mesh=mesh, layout={"t": axes})
    with sa.comm_log() as log:
        y = getattr(sa.fft, fn)(x, "t", n=n, norm=norm)
    want = getattr(np.fft, fn)(a, n=n, norm=norm)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-10, atol=1e-10)
    assert y.layout == x.layout and y.dtype == want.dtype
    k, length = mesh.size, (n if n is not None else (m if fn not in ("irfft", "hfft") else 2 * (m - 1)))
    ops = [r.op for r in log.records]
    if k == 1:
        assert ops == []
    elif factor(length, k) is None:  # prime or too small: the documented fallback
        assert ops == ["allgather"]
    else:
        assert ops == ["alltoall"] * 3


@pytest.mark.parametrize("shape", MESH_SHAPES[1:])
@pytest.mark.parametrize("m,n,fn", [(64, None, "fft"), (37, 64, "ifft"), (101, 96, "fft"), (50, 72, "rfft"),
                                    (30, 80, "irfft"), (45, 64, "hfft"), (90, None, "ihfft")])
def test_four_step_traffic_matches_formula(shape, m, n, fn):
    """Exactly three alltoalls over the dim's axes, each the entries whose owner changes (no allgather)."""
    mesh = sa.Mesh(shape)
    axes = tuple(mesh.axis_names)
    radix = tuple(mesh.shape.values())
    a = _data((m,), "real" if fn in REAL_IN else "complex", 9)
    x = sa.asarray(a, dims=("t",), mesh=mesh, layout={"t": axes})
    with sa.comm_log() as log:
        y = getattr(sa.fft, fn)(x, "t", n=n)
    length = n or m
    size = length // 2 + 1 if fn in ("rfft", "ihfft") else length
    lim = length // 2 + 1 if fn in ("irfft", "hfft") else None  # only the Hermitian half x[:n//2+1] is sent
    assert [(r.op, r.axes) for r in log.records] == [("alltoall", axes)] * 3
    got = [r.elements for r in log.records]
    assert got == _alltoall_elements(m, length, size, radix, lim)
    # wire_bytes: the logged entries are those that leave the device (an uneven exchange); after the first
    # exchange (real input: 8-byte entries) they are 16-byte complex entries
    assert [r.wire_bytes for r in log.records][1:] == [e * 16 for e in got[1:]]
    assert [r.wire_bytes for r in log.records] == [float(r.bytes) for r in log.records]
    np.testing.assert_allclose(y.numpy(), getattr(np.fft, fn)(a, n=n), rtol=1e-10, atol=1e-10)


def test_four_step_even_blocks_send_three_quarter_blocks():
    """n = 256 on 4 devices (k² | n): each alltoall sends (k-1)/k of a 64-entry block per device."""
    mesh = sa.Mesh({"all": 4})
    a = _data((256,), "complex", 10).astype(np.complex64)
    x = sa.asarray(a, dims=("t",), mesh=mesh, layout={"t": "all"})
    with sa.comm_log() as log:
        y = sa.fft.ifft(x, "t", norm="ortho")
    assert [r.elements for r in log.records] == [48] * 3
    assert [r.bytes for r in log.records] == [48 * 8] * 3  # complex64 stays complex64 on the wire
    assert y.dtype == np.complex64
    np.testing.assert_allclose(y.numpy(), np.fft.ifft(a, norm="ortho"), rtol=1e-5, atol=1e-5)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(meshes(), st.integers(1, 7), st.integers(1, 7), st.integers(1, 3), st.data())
def test_positional_fftn_one_alltoall_per_split_axis(mesh, m, n, b, data):
    """xp.fft.fftn/ifftn leave the layout to the algorithm: unsplit axes first, then one alltoall per split axis
    (its split moves onto another axis and stays there), the values NumPy's on every mesh, uneven blocks too."""
    import shardarray.fft.pencil as pencil

    rng = np.random.default_rng(m * 10 + n)
    a = rng.standard_normal((b, m, n)) + 1j * rng.standard_normal((b, m, n))
    lay = data.draw(layouts(mesh, ("b", "i", "j")))
    x = xp.asarray(sa.asarray(a, dims=("b", "i", "j"), mesh=mesh, layout=lay))
    axes = data.draw(st.sampled_from([(1, 2), (0, 1, 2), (2,), (0, 2)]))
    split = [i for i in axes if pencil.splits(x, x.dims[i]) > 1]
    with sa.comm_log() as log:
        y = xp.fft.fftn(x, axes=axes)
    assert [r.op for r in log.records] == ["alltoall"] * len(split)
    assert isinstance(y, xp.Array)
    np.testing.assert_allclose(np.asarray(y), np.fft.fftn(a, axes=axes), atol=1e-12 * max(1, a.size))
    np.testing.assert_allclose(np.asarray(xp.fft.ifftn(y, axes=axes)), a, atol=1e-12 * max(1, a.size))


def test_positional_fft2_row_split_is_one_alltoall_named_keeps_two():
    mesh = sa.Mesh({"row": 2})
    a = _data((8, 6), "complex", 3)
    x = xp.asarray(a, device=mesh)
    with sa.comm_log() as log:
        y = xp.fft.fftn(x)
    assert [r.op for r in log.records] == ["alltoall"]
    assert y.layout == {y.dims[1]: ("row",)}  # the split moved to the columns
    with sa.comm_log() as log:
        z = sa.fft.fftn(sa.asarray(a, dims=("i", "j"), mesh=mesh, layout={"i": "row"}))
    assert [r.op for r in log.records] == ["alltoall", "alltoall"] and z.layout == {"i": ("row",)}
    np.testing.assert_allclose(np.asarray(y), z.numpy())


@pytest.mark.parametrize("shape", [{"row": 2}, {"row": 2, "col": 2}, {"p": 3, "q": 2}], ids=str)
def test_positional_fftn_gradient_returns_to_the_input_layout(shape):
    from gradcheck import check_grad

    mesh = sa.Mesh(shape)
    rng = np.random.default_rng(5)
    x = xp.asarray(rng.standard_normal((6, 5)), device=mesh)
    w = xp.asarray(rng.standard_normal((6, 5)), device=mesh)

    def loss(p):
        y = xp.fft.ifftn(xp.fft.fftn(p["x"], norm="ortho") * (1 + 0.5j), axes=(0,))
        return xp.sum(xp.real(y) * w)

    grads = check_grad(loss, {"x": x})
    assert isinstance(grads["x"], xp.Array) and grads["x"].layout == x.layout


# --------------------------------------------------------------------------------------- the block FFT module
def test_numpy_shards_transform_with_scipy_fft_when_installed_else_numpy_fft(monkeypatch):
    """``NumpyBackend.fft``: ``scipy.fft`` (the ``fft`` extra) when importable, else ``numpy.fft``; both give
    NumPy's values (complex64 within single precision) and the dtype ``numpy.fft`` gives."""
    import sys

    from shardarray.backend import numpy_backend

    scipy_fft = pytest.importorskip("scipy.fft")
    mesh = sa.Mesh({"row": 2, "col": 2}, backend="numpy")
    a = _data((6, 10), "complex", 3).astype(np.complex64)
    x = sa.asarray(a, dims=("i", "t"), mesh=mesh, layout={"i": "row", "t": "col"})
    want = np.fft.fft2(a.astype(np.complex128))
    numpy_backend._fft_module.cache_clear()
    try:
        assert mesh.backend.fft is scipy_fft
        got = sa.fft.fftn(x, ("i", "t"))
        assert got.dtype == np.complex64
        np.testing.assert_allclose(got.numpy(), want, rtol=2e-6, atol=2e-5)
        monkeypatch.setitem(sys.modules, "scipy.fft", None)  # SciPy missing: NumPy's transforms
        numpy_backend._fft_module.cache_clear()
        assert mesh.backend.fft is np.fft
        got = sa.fft.fftn(x, ("i", "t"))
        assert got.dtype == np.complex64
        np.testing.assert_allclose(got.numpy(), want, rtol=2e-6, atol=2e-5)
    finally:
        numpy_backend._fft_module.cache_clear()
