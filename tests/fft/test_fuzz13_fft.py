"""Fuzz round 13 of the FFT module against ``numpy.fft`` at the edges.

``xp.fft`` (positional: the standard's extension and NumPy's 2-D forms), ``np.fft`` on positional arrays (the
``__array_function__`` dispatch) and ``sa.fft`` (named) on meshes 1, 2x2, 4, 2x2x2, 3x2 with uneven and empty
blocks, the transformed axes split or not (the four-step path of split 1-D arrays and of split dims whose other
dims are too short to take the split): ``n``/``s`` cropping and zero-padding, odd, prime, 1 and 0 lengths (NumPy's
errors), ``axes`` negative, repeated and in any order, every ``norm``, float16/float32/complex64 (NumPy 2's result
dtypes) and integer input through ``np.fft``; the shifts on split axes; the sample frequencies. Values are compared
in float64 with tolerances of ``n·eps``; gradients against float64 finite differences; traffic with a spy counting
what each device receives. Regressions of the bugs found close the file.

``FUZZ13_EXAMPLES=<n>`` runs every fuzzer with ``n`` examples.
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
from helpers import layouts
from hypothesis import given
from hypothesis import strategies as st

import shardarray as sa
import shardarray.array_api as xp
from shardarray.array_api._array import wrap
from shardarray.layout import block_bounds
from shardarray.ops.indexing import route

ENV = "FUZZ13_EXAMPLES"
NORMS = (None, "backward", "ortho", "forward")
ONE = ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")
REAL_IN = ("rfft", "ihfft", "rfftn", "rfft2")
SIDES = (0, 1, 2, 3, 5, 7, 8)
LONG = (16, 36, 37, 40, 48)  # four-step lengths on every test mesh (k <= 8 needs n >= 64: 37 and 48 fall back)
DTYPES = ("float64", "float32", "complex128", "complex64", "float16")


def _data(rng, shape, dtype):
    a = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(dtype)


@st.composite
def arrays(draw, real=False, long_dims=False):
    """``(mesh, a, x)``: NumPy data and the named array of it in a random layout (dims ``d0, d1, ...``); often one
    long dim with short others, split over every mesh axis (the four-step's crowded partners)."""
    mesh = draw(meshes())
    ndim = draw(st.integers(1, 3))
    shape = [draw(st.sampled_from(SIDES)) for _ in range(ndim)]
    dims = tuple(f"d{i}" for i in range(ndim))
    layout = draw(layouts(mesh, dims))
    if long_dims or draw(st.booleans()):
        i = draw(st.integers(0, ndim - 1))
        shape[i] = draw(st.sampled_from(LONG))
        if draw(st.booleans()):
            layout = {dims[i]: tuple(draw(st.permutations(mesh.axis_names)))}
    dtype = draw(st.sampled_from([d for d in DTYPES if not (real and d.startswith("complex"))]))
    a = _data(np.random.default_rng(draw(st.integers(0, 2**16))), tuple(shape), dtype)
    return mesh, a, sa.asarray(a, dims=dims, mesh=mesh, layout=layout)


def _close(got, a, ref, name, kw, length):
    """``got`` equals NumPy's ``ref`` (dtype, shape) and its float64 value within ``n·eps`` of the result dtype."""
    g = got.numpy()
    assert g.dtype == ref.dtype and g.shape == ref.shape, (g.dtype, ref.dtype, g.shape, ref.shape)
    wide = a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        exact = getattr(np.fft, name)(wide, **kw)
    if not a.size:  # (NumPy's irfft pads an empty axis with uninitialized memory: the transform of zeros is 0)
        exact = np.zeros_like(exact)
    eps = np.finfo(ref.dtype).eps
    tol = 4 * eps * max(2, length) * max(1.0, float(np.abs(exact).max(initial=0)))
    np.testing.assert_allclose(g, exact, rtol=0, atol=tol)


def _numpy(name, a, kw):
    """NumPy's result, or the exception it raises."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            return getattr(np.fft, name)(a, **kw)
        except (ValueError, TypeError, IndexError) as e:
            return e


@fuzz(50, ENV)
@given(st.data())
def test_fuzz_one_dim_transforms(data):
    """The six 1-D transforms, positional (``xp.fft``, ``np.fft``) and named, as NumPy: value, dtype, errors."""
    name = data.draw(st.sampled_from(ONE))
    _, a, x = data.draw(arrays(real=name in REAL_IN))
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    n = data.draw(st.sampled_from([None, None, 1, 2, 5, 7, 9, 16, 36, 64]))
    norm = data.draw(st.sampled_from(NORMS))
    kw = {"n": n, "axis": axis, "norm": norm}
    ref = _numpy(name, a, kw)
    calls = [
        lambda: getattr(xp.fft, name)(wrap(x), **kw),
        lambda: getattr(np.fft, name)(wrap(x), **kw),
        lambda: getattr(sa.fft, name)(x, x.dims[axis], n=n, norm=norm),
    ]
    for call in calls:
        if isinstance(ref, Exception):
            with pytest.raises(type(ref)) as err:
                call()
            assert isinstance(err.value, sa.errors.ShardArrayError), err.value
            continue
        got = call()
        _close(got, a, ref, name, kw, 2 * max(a.shape[axis], n or 0))
        assert got.layout == x.layout


N_D = ("fftn", "ifftn", "rfftn", "irfftn", "fft2", "ifft2", "rfft2", "irfft2")


@fuzz(50, ENV)
@given(st.data())
def test_fuzz_n_dim_transforms(data):
    """The n-D and 2-D transforms with ``axes`` negative, repeated and in any order and ``s`` cropping, padding or
    -1 (the input's size): ``xp.fft`` and ``np.fft`` as NumPy, ``sa.fft`` for distinct dims."""
    name = data.draw(st.sampled_from(N_D))
    _, a, x = data.draw(arrays(real=name in REAL_IN))
    kw = {"norm": data.draw(st.sampled_from(NORMS))}
    k = data.draw(st.integers(1, x.ndim + 1))
    if data.draw(st.booleans()) or name.endswith("2"):
        kw["axes"] = tuple(data.draw(st.integers(-x.ndim, x.ndim - 1)) for _ in range(k))
    if data.draw(st.booleans()):
        k = len(kw.get("axes", ())) or min(k, x.ndim)
        kw["s"] = tuple(data.draw(st.sampled_from([-1, 1, 2, 3, 6, 9])) for _ in range(k))
        if "axes" not in kw and not name.endswith("2"):
            kw["axes"] = tuple(range(-k, 0))  # (NumPy 2 deprecates s without axes; its meaning: the last len(s))
    ref = _numpy(name, a, kw)
    calls = [lambda: getattr(xp.fft, name)(wrap(x), **kw), lambda: getattr(np.fft, name)(wrap(x), **kw)]
    axes = kw.get("axes", (-2, -1) if name.endswith("2") else tuple(range(x.ndim)))
    distinct = len({ax % x.ndim for ax in axes}) == len(axes) if all(-x.ndim <= ax < x.ndim for ax in axes) else False
    if distinct and not name.endswith("2"):
        dims = tuple(x.dims[ax] for ax in axes)
        calls.append(lambda: getattr(sa.fft, name)(x, dims, s=kw.get("s"), norm=kw["norm"]))
    for call in calls:
        if isinstance(ref, Exception):
            with pytest.raises(type(ref)) as err:
                call()
            assert isinstance(err.value, sa.errors.ShardArrayError), err.value
            continue
        _close(call(), a, ref, name, kw, max(max(a.shape, default=1), *kw.get("s", (1,))))


@fuzz(30, ENV)
@given(meshes(), st.data())
def test_fuzz_shifts_and_frequencies(mesh, data):
    """``fftshift``/``ifftshift`` on split axes (axes: None, an int, tuples with negative and repeated entries) and
    ``fftfreq``/``rfftfreq`` with ``d``, ``dtype`` and ``device``, as NumPy."""
    ndim = data.draw(st.integers(1, 3))
    shape = tuple(data.draw(st.sampled_from(SIDES)) for _ in range(ndim))
    a = np.arange(math.prod(shape), dtype=np.float64).reshape(shape) - 3.5
    dims = tuple(f"d{i}" for i in range(ndim))
    x = wrap(sa.asarray(a, dims=dims, mesh=mesh, layout=data.draw(layouts(mesh, dims))))
    axis = st.integers(-ndim, ndim - 1)
    axes = data.draw(st.none() | axis | st.lists(axis, max_size=3).map(tuple))
    for name in ("fftshift", "ifftshift"):
        want = getattr(np.fft, name)(a, axes=axes)
        for got in (getattr(xp.fft, name)(x, axes=axes), getattr(np.fft, name)(x, axes=axes)):
            np.testing.assert_array_equal(got.numpy(), want)
            assert got.layout == x.layout
    n = data.draw(st.integers(1, 13))
    d = data.draw(st.sampled_from([1.0, 0.1, 3, -2.5]))
    dtype = data.draw(st.sampled_from([None, xp.float32, xp.float64]))
    for name in ("fftfreq", "rfftfreq"):
        got = getattr(xp.fft, name)(n, d=d, dtype=dtype, device=mesh)
        want = getattr(np.fft, name)(n, d)
        assert got.dtype == (np.float64 if dtype is None else dtype) and got.device == mesh
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6 if dtype == xp.float32 else 1e-15)


# --------------------------------------------------------------------------------------------- traffic


def _size(piece):
    return sum(int(p.size) for p in piece) if isinstance(piece, (list, tuple)) else int(piece.size)


@contextlib.contextmanager
def receipts(mesh):
    """Per device, the elements it receives from the others over all collectives (a spy on the communicator): an
    alltoallv's pieces addressed to it, ``(k-1)/k`` of an alltoall's new block, an allgather's other shards."""
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
        inner = getattr(comm, name)
        setattr(comm, name, spy_v(inner) if name == "alltoallv" else spy_block(inner, name))
    try:
        yield got
    finally:
        for name in names:
            delattr(comm, name)


def _block(x):
    """The most elements any device holds of ``x``."""
    return max((math.prod(hi - lo for lo, hi in b) for b in block_bounds(x.mesh, x.spec)), default=0)


def _received(mesh, fn):
    """``(fn(), per-device receipts, warned)``, with ``route.GATHER_WARN_BYTES`` at 0 (every gather announced)."""
    old = route.GATHER_WARN_BYTES
    route.GATHER_WARN_BYTES = 0
    try:
        with warnings.catch_warnings(record=True) as caught, receipts(mesh) as got:
            warnings.simplefilter("always", sa.GatherWarning)
            out = fn()
    finally:
        route.GATHER_WARN_BYTES = old
    return out, got, any(issubclass(w.category, sa.GatherWarning) for w in caught)


SLACK, FEW = 3, 8


@fuzz(120, ENV)
@given(st.data())
def test_fuzz_split_dim_traffic_scales_with_the_block(data):
    """A transform along a split dim (crowded partners, padding and cropping ``n`` included) never makes a device
    receive more than a few blocks of its input (zero-padded to ``n``) or output unless it warned
    ``sa.GatherWarning``: the transposition method's two alltoalls, the four-step's three."""
    name = data.draw(st.sampled_from(ONE))
    mesh = _mesh(data.draw(st.sampled_from([{"x": 2, "y": 2, "z": 2}, {"p": 3, "q": 2}, {"r": 2, "c": 2}, {"a": 4}])))
    ndim = data.draw(st.integers(1, 3))
    sizes = [data.draw(st.sampled_from((1, 2, 3, 0, 5, 9))) for _ in range(ndim)]
    i = data.draw(st.integers(0, ndim - 1))
    sizes[i] = data.draw(st.sampled_from((64, 36, 72, 96)))
    dims = tuple(f"d{j}" for j in range(ndim))
    layout = {dims[i]: mesh.axis_names} if data.draw(st.integers(0, 3)) else data.draw(layouts(mesh, dims))
    a = _data(np.random.default_rng(i), tuple(sizes), "float64" if name in REAL_IN else "complex128")
    x = sa.asarray(a, dims=dims, mesh=mesh, layout=layout)
    dim = data.draw(st.sampled_from([dims[i]] * 2 + list(dims)))
    n = data.draw(st.sampled_from([None, 64, 72, 36, 5]))
    try:
        y, got, warned = _received(mesh, lambda: getattr(sa.fft, name)(x, dim, n=n))
    except sa.ArgumentError:  # an empty transform (NumPy's error too)
        return
    if warned:
        return
    padded = _block(x) * max(1.0, (n or 0) / max(1, x.sizes[dim]))  # (the length-n transform's own blocks)
    cap = SLACK * max(padded, _block(y)) + FEW
    assert got.max(initial=0) <= cap, (got.tolist(), _block(x), _block(y), x.layout)


@pytest.mark.parametrize("name", ONE)
@pytest.mark.parametrize("shape", [(1, 96), (2, 96), (2, 2, 96)], ids=str)
def test_split_dim_whose_partner_is_short_takes_the_four_step(shape, name):
    """A dim split over 8 devices whose other dims are shorter than 8: the transposition method moved the split
    onto a dim of 1 or 2 entries, so one or two devices received the whole array (94 of 96 entries for a
    12-entry block). Now the four-step algorithm runs with the other dims as a batch: three alltoalls of at most
    a block each, the input's layout, NumPy's values."""
    mesh = _mesh({"x": 2, "y": 2, "z": 2})
    dims = tuple(f"d{i}" for i in range(len(shape)))
    a = _data(np.random.default_rng(1), shape, "float64" if name in REAL_IN else "complex128")
    x = sa.asarray(a, dims=dims, mesh=mesh, layout={dims[-1]: ("x", "y", "z")})
    n = 90 if name in ("irfft", "hfft") else None
    with sa.comm_log() as log:
        y, got, warned = _received(mesh, lambda: getattr(sa.fft, name)(x, dims[-1], n=n))
    assert not warned and [r.op for r in log.records] == ["alltoall"] * 3
    assert got.max() <= 3 * max(_block(x), _block(y)), got.tolist()
    assert y.layout == x.layout
    np.testing.assert_allclose(y.numpy(), getattr(np.fft, name)(a, n=n, axis=-1), atol=1e-12 * 96)


def test_split_dim_with_a_short_partner_and_a_prime_length_warns():
    """No four-step for a prime length: the transposition piles the array on one device, announced by a
    ``sa.GatherWarning`` (past ``route.GATHER_WARN_BYTES``) naming the bytes."""
    mesh = _mesh({"x": 2, "y": 2, "z": 2})
    a = _data(np.random.default_rng(2), (1, 96), "complex128")
    x = sa.asarray(a, dims=("b", "t"), mesh=mesh, layout={"t": ("x", "y", "z")})
    y, _, warned = _received(mesh, lambda: sa.fft.fft(x, "t", n=97))
    assert warned
    np.testing.assert_allclose(y.numpy(), np.fft.fft(a, n=97), atol=1e-11)
    with warnings.catch_warnings():
        warnings.simplefilter("error", sa.GatherWarning)  # (the default threshold: 1.5 KiB is not worth a warning)
        sa.fft.fft(x, "t", n=97)


@pytest.mark.parametrize("name,n,reads", [("fft", 5, 5), ("rfft", 7, 7), ("irfft", 7, 4), ("hfft", 9, 5)])
def test_split_1d_fallback_gathers_only_the_entries_it_reads(name, n, reads):
    """A split 1-D array and a length with no four-step factors: the fallback allgathered the whole array (84 of
    96 entries per device) though a transform cropped to ``n`` reads its first ``n`` entries (``n//2 + 1`` for
    irfft/hfft). Now it allgathers those only, and its warning names those bytes."""
    mesh = _mesh({"x": 2, "y": 2, "z": 2})
    a = _data(np.random.default_rng(7), (96,), "float64" if name in REAL_IN else "complex128")
    x = sa.asarray(a, dims=("t",), mesh=mesh, layout={"t": ("x", "y", "z")})
    with sa.comm_log() as log:
        y, got, warned = _received(mesh, lambda: getattr(sa.fft, name)(x, "t", n=n))
    assert [r.op for r in log.records] == ["allgather"] and got.max() <= reads and warned
    assert y.layout == x.layout
    np.testing.assert_allclose(y.numpy(), getattr(np.fft, name)(a, n=n), atol=1e-12)


# --------------------------------------------------------------------------------------------- gradients

GRADS = {  # rfft/irfft with odd n and n cropping or padding; the crowded four-step
    "rfft_odd_crop": lambda x: sa.fft.irfft(sa.fft.rfft(x, "t", n=7), "t", n=9, norm="ortho"),
    "rfft_odd_pad": lambda x: sa.fft.irfft(sa.fft.rfft(x, "t", n=45), "t", n=11),
    "irfft_odd": lambda x: sa.fft.irfft(sa.fft.fft(x, "t"), "t", n=37, norm="forward"),
    "hfft_ihfft": lambda x: sa.fft.hfft(sa.fft.ihfft(x, "t", n=36), "t", n=13, norm="ortho"),
    "fft_crop": lambda x: sa.fft.irfft(sa.fft.ifft(x, "t", n=5), "t", n=40),
    "fft_pad_four_step": lambda x: sa.fft.irfft(sa.fft.fft(x, "t", n=36), "t", n=48, norm="ortho"),
    "rfftn_irfftn": lambda x: sa.fft.irfftn(sa.fft.rfftn(x, ("b", "t"), s=(3, 36)), s=(2, 9)),
}


@pytest.mark.parametrize("name", sorted(GRADS))
@pytest.mark.parametrize(
    "shape", [{"x": 2, "y": 2, "z": 2}, {"p": 3, "q": 2}], ids=lambda s: "x".join(map(str, s.values()))
)
def test_gradients_match_finite_differences(shape, name):
    """VJPs of the transforms against float64 finite differences: a (2, 40) array whose 40 entries are split over
    every device (the batch of 2 too short for the transposition: the four-step for 36 and 48)."""
    mesh = _mesh(shape)
    rng = np.random.default_rng(3)
    x = sa.asarray(rng.standard_normal((2, 40)), dims=("b", "t"), mesh=mesh, layout={"t": tuple(mesh.axis_names)})
    fn = GRADS[name]
    w = rng.standard_normal(fn(x).shape)

    def loss(p):
        y = fn(p["x"])
        return (y * sa.asarray(w, dims=y.dims, mesh=mesh, layout=y.layout)).sum()

    grads = check_grad(loss, {"x": x})
    assert grads["x"].layout == x.layout and grads["x"].dtype == np.float64


# --------------------------------------------------------------------------------------------- dtypes and errors


@pytest.mark.parametrize(
    "name,kw",
    [
        ("irfft", {}),
        ("hfft", {"n": 7}),
        ("irfftn", {"axes": (1,)}),
        ("irfft2", {}),
        ("irfftn", {}),
        ("rfft", {}),
        ("fft", {}),
    ],
)
def test_float16_input_gives_numpy2_dtypes(name, kw):
    """NumPy 2: irfft/hfft of float16 are float16 (``result_type(float16, 1.0)``; computed in single precision
    here); was float32. Over several axes the complex intermediate is complex64, so float32 (as NumPy)."""
    mesh = _mesh({"row": 2, "col": 2})
    a = np.random.default_rng(4).standard_normal((4, 6)).astype(np.float16)
    x = xp.asarray(a, device=mesh)
    want = getattr(np.fft, name)(a, **kw)
    for got in (getattr(xp.fft, name)(x, **kw), getattr(np.fft, name)(x, **kw)):
        assert got.dtype == want.dtype
        wide = got.numpy().astype(np.result_type(want.dtype, np.float64))
        np.testing.assert_allclose(wide, want, rtol=0, atol=4e-3 * np.abs(want).max())
    one = name in ONE and not kw
    if one:
        named = getattr(sa.fft, name)(sa.asarray(a, dims=("i", "t"), mesh=mesh, layout={"t": "row"}), "t")
        assert named.dtype == want.dtype


def test_float16_irfft_gradient_is_float16():
    """The VJP of a float16 irfft (float16 out, float16 cotangent) is float16, the float64 one's value rounded."""
    mesh = _mesh({"row": 2, "col": 2})
    a = np.random.default_rng(5).standard_normal((4, 6))
    w = np.random.default_rng(6).standard_normal((4, 9))
    grads = []
    for dt in ("float16", "float64"):
        x = sa.asarray(a.astype(dt), dims=("i", "t"), mesh=mesh, layout={"t": "row"})
        v = sa.asarray(w.astype(dt), dims=("i", "t"), mesh=mesh)
        grads.append(sa.grad(lambda p, v=v: (sa.fft.irfft(p, "t", n=9) * v).sum())(x))
    assert grads[0].dtype == np.float16 and grads[0].layout == grads[1].layout
    np.testing.assert_allclose(grads[0].numpy().astype(float), grads[1].numpy(), atol=1e-2)


@pytest.mark.parametrize(
    "call,numpy_error",
    [
        (lambda f, x: f.fft(x, n=2.0), TypeError),
        (lambda f, x: f.irfft(x, n=np.float64(4)), TypeError),
        (lambda f, x: f.fftn(x, s=3), TypeError),
        (lambda f, x: f.fftn(x, s=(2.0, 3), axes=(0, 1)), TypeError),
        (lambda f, x: f.fft(x, n=0), ValueError),
        (lambda f, x: f.rfftn(x, s=(0, 3), axes=(0, 1)), ValueError),
        (lambda f, x: f.fft(x, norm="bad"), ValueError),
        (lambda f, x: f.fft(x, axis=2), IndexError),
        (lambda f, x: f.fftn(x, s=(2,), axes=(0, 1)), ValueError),
    ],
)
def test_errors_are_numpys_kinds(call, numpy_error):
    """A non-integer ``n``/``s`` is NumPy's ``TypeError`` (was a ``ValueError``); the rest NumPy's kinds."""
    mesh = _mesh({"row": 2, "col": 2})
    a = np.ones((4, 6))
    with pytest.raises(numpy_error):
        call(np.fft, a)
    for f in (xp.fft, np.fft):
        with pytest.raises(numpy_error) as err:
            call(f, xp.asarray(a, device=mesh))
        assert isinstance(err.value, sa.errors.ShardArrayError)
    with pytest.raises(ValueError):  # (NumPy's fftfreq(4.0): "n should be an integer", a ValueError)
        xp.fft.fftfreq(4.0)


@pytest.mark.parametrize("name", ["fftn", "ifftn", "rfftn", "irfftn", "fft2", "rfft2"])
def test_s_and_axes_as_ranges_and_numpy_arrays(name):
    """NumPy takes ``s`` and ``axes`` as any sequence (a range, a 1-D NumPy array): ``xp.fft`` refused them."""
    mesh = _mesh({"row": 2, "col": 2})
    a = np.random.default_rng(8).standard_normal((3, 4, 5))
    x = xp.asarray(a, device=mesh)
    for kw in ({"s": np.array([4, 6]), "axes": np.array([0, 2])}, {"s": range(3, 5), "axes": range(1, 3)}):
        want = getattr(np.fft, name)(a, **kw)
        np.testing.assert_allclose(getattr(xp.fft, name)(x, **kw).numpy(), want, atol=1e-12)


@pytest.mark.parametrize("name", ["fft", "rfft", "irfft", "hfft", "ihfft", "fftn", "rfft2", "irfftn"])
@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8", "bool"])
def test_integer_input_through_numpy_is_float64(name, dtype):
    """``np.fft`` on integer and bool arrays computes in float64 (NumPy's promotion: complex128 / float64 results);
    ``xp.fft`` refuses them (the standard's floating-point input) with NumPy's ``TypeError`` kind."""
    mesh = _mesh({"p": 3, "q": 2})
    a = (np.arange(35).reshape(5, 7) % 4).astype(dtype)
    x = wrap(sa.asarray(a, dims=("i", "t"), mesh=mesh, layout={"i": "q", "t": "p"}))
    want = getattr(np.fft, name)(a)
    got = getattr(np.fft, name)(x)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got.numpy(), want, atol=1e-12 * 35)
    with pytest.raises(TypeError):
        getattr(xp.fft, name)(x)
