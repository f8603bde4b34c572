"""Fuzz round 14 of the FFT module: Bluestein's algorithm for a split dim whose length has no four-step factors.

A prime length, or a product of two primes too small for the split, along a split 1-D array or a split dim whose
other dims are too short to take the split, used to gather the dim (the allgather of a 1-D array, or the
transposition piling the array on a few devices). Past ``four_step.GATHER_MAX_BYTES`` it now runs Bluestein's
chirp-z algorithm (``fft/bluestein.py``): nine alltoalls of about a block of the length-``m`` transform each.
The fuzzers set that threshold to 0, so every such length takes Bluestein; ``xp.fft``, ``np.fft`` and ``sa.fft``
on meshes 1, 2x2, 4, 2x2x2, 3x2 with uneven and empty blocks, every norm, ``n`` padding and cropping, the six 1-D
transforms and ``fftn``, against ``numpy.fft`` in float64 (``rtol ~ 1e-10·log n`` of the largest entry) and
single precision (``1e-4``); traffic with a spy counting what each device receives; gradients against float64
finite differences; the comm log on the meta backend.

``FUZZ14_EXAMPLES=<n>`` runs every fuzzer with ``n`` examples.
"""

from __future__ import annotations

import contextlib
import math
import warnings

import numpy as np
import pytest
from fuzzing import cached_mesh as _mesh
from fuzzing import cached_meshes as meshes
from fuzzing import fuzz
from gradcheck import check_grad
from hypothesis import given
from hypothesis import strategies as st

import shardarray as sa
import shardarray.array_api as xp
from shardarray.array_api._array import wrap
from shardarray.fft import four_step
from shardarray.fft.bluestein import conv_length
from shardarray.layout import block_bounds
from shardarray.ops.indexing import route

ENV = "FUZZ14_EXAMPLES"
ONE = ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")
REAL_IN = ("rfft", "ihfft")
PRIMES = (7, 11, 13, 97, 257, 1009)
SMALL_PRODUCTS = (15, 21, 35, 33)  # two primes below the split's 4, 6 or 8 devices: no four-step factors
SHORT = (1, 2, 3)  # partner dims shorter than the devices: the transposition would pile the array


def _data(rng, shape, dtype):
    a = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(dtype)


@contextlib.contextmanager
def bluestein_always():
    """``four_step.GATHER_MAX_BYTES`` at 0: every length without four-step factors takes Bluestein."""
    old = four_step.GATHER_MAX_BYTES
    four_step.GATHER_MAX_BYTES = 0
    try:
        yield
    finally:
        four_step.GATHER_MAX_BYTES = old


def _size(piece):
    return sum(int(p.size) for p in piece) if isinstance(piece, (list, tuple)) else int(piece.size)


@contextlib.contextmanager
def receipts(mesh):
    """Per device, the elements it receives from the others over all collectives (a spy on the communicator)."""
    comm = mesh.comm
    got = np.zeros(mesh.size, np.int64)

    def spy_v(inner):
        def spy(send, axes, *args, **kwargs):
            for group in mesh.groups(axes):
                for i, d in enumerate(group):
                    got[d] += sum(_size(send[j][i]) for k, j in enumerate(group) if k != i and send[j] is not None)
            return inner(send, axes, *args, **kwargs)

        return spy

    def spy_block(inner, name):
        def spy(shards, axes, *args, **kwargs):
            out = inner(shards, axes, *args, **kwargs)
            k = mesh.axes_size(axes)
            for d, b in enumerate(out):
                if b is not None and k > 1:
                    mine = int(shards[d].size) if name == "allgather" else int(b.size) // k
                    got[d] += int(b.size) - mine
            return out

        return spy

    names = ("alltoallv", "alltoall", "allgather")
    for name in names:
        setattr(comm, name, spy_v(getattr(comm, name)) if name == "alltoallv" else spy_block(getattr(comm, name), name))
    try:
        yield got
    finally:
        for name in names:
            delattr(comm, name)


def _batch_block(x, dim):
    """The most entries any device holds of ``x``'s other dims (its batch columns)."""
    i = x.dims.index(dim)
    return max(
        (math.prod(hi - lo for j, (lo, hi) in enumerate(b) if j != i) for b in block_bounds(x.mesh, x.spec)), default=0
    )


def _close(got, ref, wide_ref, n):
    g = np.asarray(got)
    assert g.dtype == ref.dtype and g.shape == ref.shape, (g.dtype, ref.dtype, g.shape, ref.shape)
    single = ref.dtype in (np.complex64, np.float32, np.float16)
    rtol = 1e-4 if single else 1e-12 * max(2.0, math.log2(max(2, n)))
    np.testing.assert_allclose(g, wide_ref, rtol=0, atol=rtol * max(1.0, float(np.abs(wide_ref).max(initial=0))))


@st.composite
def cases(draw):
    """``(mesh, a, x, dim)``: a 1-D array, or a long dim with short others, the long dim split over every mesh
    axis (or a random layout), its length prime or a product of two small primes."""
    mesh = draw(meshes())
    ndim = draw(st.integers(1, 3))
    i = draw(st.integers(0, ndim - 1))
    shape = [draw(st.sampled_from(SHORT)) for _ in range(ndim)]
    shape[i] = draw(st.sampled_from(PRIMES + SMALL_PRODUCTS))
    dims = tuple(f"d{j}" for j in range(ndim))
    layout = {dims[i]: tuple(draw(st.permutations(mesh.axis_names)))}
    if draw(st.integers(0, 4)) == 0:  # sometimes a short dim takes one of the axes
        axes = list(layout[dims[i]])
        if ndim > 1 and axes:
            layout = {dims[i]: tuple(axes[1:]), dims[(i + 1) % ndim]: (axes[0],)}
    dtype = draw(st.sampled_from(("complex128", "float64", "complex64", "float32")))
    a = _data(np.random.default_rng(draw(st.integers(0, 2**16))), tuple(shape), dtype)
    return mesh, a, sa.asarray(a, dims=dims, mesh=mesh, layout=layout), dims[i]


@fuzz(40, ENV)
@given(st.data())
def test_fuzz_prime_lengths_on_a_split_dim(data):
    """The six 1-D transforms of a split dim of prime (or awkward) length, positional and named, as NumPy (values
    and dtypes, every norm, ``n`` padding and cropping), the input's layout, no allgather, and no device receiving
    more than nine blocks of the length-``m`` transform (Bluestein's nine alltoalls)."""
    mesh, a, x, dim = data.draw(cases())
    name = data.draw(st.sampled_from(ONE))
    if name in REAL_IN and a.dtype.kind == "c":
        a = a.real.copy()
        x = sa.asarray(a, dims=x.dims, mesh=mesh, layout=x.layout)
    length = x.sizes[dim]
    n = data.draw(st.sampled_from([None, None, length + 2, max(1, length - 3)]))
    norm = data.draw(st.sampled_from(("backward", "ortho", "forward")))
    axis = x.dims.index(dim)
    kw = {"n": n, "axis": axis, "norm": norm}
    ref = getattr(np.fft, name)(a, **kw)
    wide = getattr(np.fft, name)(a.astype(np.complex128 if a.dtype.kind == "c" else np.float64), **kw)
    big = max(length, n or 0)
    calls = [
        ("sa", lambda: getattr(sa.fft, name)(x, dim, n=n, norm=norm)),
        ("xp", lambda: getattr(xp.fft, name)(wrap(x), **kw)),
        ("np", lambda: getattr(np.fft, name)(wrap(x), **kw)),
    ]
    which, call = calls[data.draw(st.integers(0, 2))]
    with bluestein_always(), sa.comm_log() as log, receipts(mesh) as got:
        y = call()
    _close(y.numpy(), ref, wide, big)
    assert y.layout == x.layout, (which, y.layout, x.layout)
    ops = [r.op for r in log.records]
    assert "allgather" not in ops, ops
    k = mesh.axes_size(x.spec.axes[axis])
    if k > 1 and ops:
        m = max(conv_length(t, k) for t in (n or length, length))
        cap = 9 * -(-m // k) * max(1, _batch_block(x, dim))
        assert got.max() <= cap, (got.tolist(), cap, x.layout)


@fuzz(15, ENV)
@given(st.data())
def test_fuzz_fftn_over_a_prime_split_dim(data):
    """``fftn``/``ifftn`` (named: the input's layout; positional: the algorithm's) over a prime split dim and its
    short partner, as NumPy, without an allgather."""
    mesh, a, x, _ = data.draw(cases())
    if a.dtype.kind != "c":
        a = a.astype(np.complex128)
        x = sa.asarray(a, dims=x.dims, mesh=mesh, layout=x.layout)
    name = data.draw(st.sampled_from(("fftn", "ifftn")))
    norm = data.draw(st.sampled_from(("backward", "ortho", "forward")))
    positional = data.draw(st.booleans())
    with bluestein_always(), sa.comm_log() as log:
        y = getattr(xp.fft, name)(wrap(x), norm=norm) if positional else getattr(sa.fft, name)(x, norm=norm)
    ref = getattr(np.fft, name)(a, norm=norm)
    _close(y.numpy(), ref, getattr(np.fft, name)(a.astype(np.complex128), norm=norm), a.size)
    assert "allgather" not in [r.op for r in log.records]
    if not positional:
        assert y.layout == x.layout


@pytest.mark.parametrize("dtype,n", [("complex128", 4099), ("float32", 8209)])
@pytest.mark.parametrize("shape", [(), (2,)], ids=("1d", "short_batch"))
def test_large_prime_split_dim_does_not_gather(shape, dtype, n):
    """A prime length past ``four_step.GATHER_MAX_BYTES`` (64 KiB) on 8 devices: the allgather fallback put the
    whole transform on every device (the 1-D array; ``sa.GatherWarning``), or the transposition piled a short
    batch on two devices. Now Bluestein: nine alltoalls, each device receiving about ``9·m/k`` entries per
    batch column (``m = conv_length(n, 8)``), NumPy's values, no warning."""
    mesh = _mesh({"x": 2, "y": 2, "z": 2})
    dims = ("b", "t")[-len(shape) - 1 :]
    a = _data(np.random.default_rng(5), shape + (n,), dtype)
    x = sa.asarray(a, dims=dims, mesh=mesh, layout={"t": ("x", "y", "z")})
    name = "rfft" if dtype == "float32" else "fft"
    old = route.GATHER_WARN_BYTES
    route.GATHER_WARN_BYTES = 0
    try:
        with warnings.catch_warnings(), sa.comm_log() as log, receipts(mesh) as got:
            warnings.simplefilter("error", sa.GatherWarning)
            y = getattr(sa.fft, name)(x, "t")
    finally:
        route.GATHER_WARN_BYTES = old
    assert [r.op for r in log.records] == ["alltoall"] * 9
    m = conv_length(n, 8)
    assert got.max() <= 9 * -(-m // 8) * max(1, math.prod(shape)), got.tolist()
    ref = getattr(np.fft, name)(a.astype(np.float64 if name == "rfft" else np.complex128))
    _close(y.numpy(), getattr(np.fft, name)(a), ref, n)
    assert y.layout == x.layout


def test_small_prime_keeps_the_gather_below_the_threshold():
    """Below ``four_step.GATHER_MAX_BYTES`` the fallback's one allgather stays (fewer bytes and collectives than
    Bluestein's nine alltoalls on 8 devices); its values are NumPy's."""
    mesh = _mesh({"x": 2, "y": 2, "z": 2})
    a = _data(np.random.default_rng(6), (97,), "complex128")
    x = sa.asarray(a, dims=("t",), mesh=mesh, layout={"t": ("x", "y", "z")})
    with sa.comm_log() as log:
        y = sa.fft.fft(x, "t")
    assert [r.op for r in log.records] == ["allgather"]
    np.testing.assert_allclose(y.numpy(), np.fft.fft(a), atol=1e-11)


GRADS = {
    "fft": lambda x: sa.real(sa.fft.fft(x, "t")),
    "ifft_pad_ortho": lambda x: sa.imag(sa.fft.ifft(x, "t", n=17, norm="ortho")),
    "rfft_crop": lambda x: sa.real(sa.fft.rfft(x, "t", n=11, norm="forward")),
    "irfft": lambda x: sa.fft.irfft(x, "t", n=13),
    "hfft_ihfft": lambda x: sa.fft.hfft(sa.fft.ihfft(x, "t", n=11), "t", n=7, norm="ortho"),
}


@pytest.mark.parametrize("name", sorted(GRADS))
@pytest.mark.parametrize("shape", [(13,), (2, 13)], ids=("1d", "batch"))
def test_gradients_of_bluestein_match_finite_differences(shape, name):
    """VJPs through Bluestein (the VJP of a transform is a transform of the same awkward length, Bluestein too):
    13 entries split over the 3x2 mesh, against float64 finite differences."""
    mesh = _mesh({"p": 3, "q": 2})
    rng = np.random.default_rng(3)
    dims = ("b", "t")[-len(shape) :]
    x = sa.asarray(rng.standard_normal(shape), dims=dims, mesh=mesh, layout={"t": ("p", "q")})
    fn = GRADS[name]
    with bluestein_always():
        w = rng.standard_normal(fn(x).shape)

        def loss(p):
            y = fn(p["x"])
            return (y * sa.asarray(w, dims=y.dims, mesh=mesh, layout=y.layout)).sum()

        with sa.comm_log() as log:
            grads = check_grad(loss, {"x": x})
    assert "allgather" not in [r.op for r in log.records]
    assert grads["x"].layout == x.layout and grads["x"].dtype == np.float64


META = {
    "fft_1d": lambda a: sa.fft.fft(a["c1"], "t", n=29),
    "rfft_batch": lambda a: sa.fft.rfft(a["r2"], "t", norm="ortho"),
    "irfft_batch": lambda a: sa.fft.irfft(a["c2"], "t", n=21),
    "hfft_1d_single": lambda a: sa.fft.hfft(a["c1"], "t", n=13),
}
SPECS = (("c1", {"t": 23}, "c"), ("r2", {"b": 1, "t": 23}, "r"), ("c2", {"b": 1, "t": 23}, "c"))


@pytest.mark.parametrize("case", sorted(META))
def test_meta_backend_models_the_same_collectives(case):
    """On the ``meta`` backend Bluestein logs the collectives it runs on NumPy shards (ops, axes, volumes), with
    the same result shape, dtype and layout."""
    fn = META[case]
    runs = []
    for backend in ("numpy", "meta"):
        mesh = sa.Mesh({"row": 2, "col": 2}, backend=backend)
        arrays = {}
        for key, sizes, kind in SPECS:
            dt = {"c": "complex64" if "single" in case else "complex128", "r": "float64"}[kind]
            if backend == "meta":
                arrays[key] = sa.zeros(mesh, sizes, dtype=dt, layout={"t": ("row", "col")})
            else:
                data = _data(np.random.default_rng(0), tuple(sizes.values()), dt)
                arrays[key] = sa.asarray(data, dims=tuple(sizes), mesh=mesh, layout={"t": ("row", "col")})
        with bluestein_always(), sa.comm_log() as log:
            y = fn(arrays)
        records = [(r.op, r.axes, r.group_size, r.elements, r.bytes) for r in log.records]
        runs.append((records, y.shape, y.dtype, y.layout))
    assert runs[0][0] and all(r[0] == "alltoall" for r in runs[0][0])
    assert runs[0] == runs[1]
