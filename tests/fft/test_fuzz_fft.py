"""Regressions found by the differential fuzzer of ``sa.fft`` / ``xp.fft`` against NumPy, and a small seeded
sweep of it (random meshes, layouts, lengths, norms; the four-step path of split 1-D arrays included)."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import random_layout as _layout

import shardarray as sa
import shardarray.array_api as xp
from shardarray.array_api._array import wrap

MESHES = [{"d": 1}, {"row": 2, "col": 2}, {"all": 4}, {"x": 2, "y": 2, "z": 2}, {"p": 3, "q": 2}]


@pytest.mark.parametrize("name", ["fftshift", "ifftshift"])
def test_shift_along_dims_of_size_one_is_a_new_array(name):
    """With nothing to roll (every dim shifted has size <= 1) ``fftshift`` returned ``x`` itself: a write to
    the result changed ``x`` (NumPy's ``fftshift`` always returns a new array)."""
    mesh = sa.Mesh({"row": 2, "col": 2})
    x = xp.asarray(np.arange(3.0).reshape(1, 3), device=mesh)
    y = getattr(xp.fft, name)(x, axes=0)
    assert y is not x and isinstance(y, xp.Array)
    y[0, 0] = 100.0
    assert x.numpy()[0, 0] == 0.0 and y.numpy()[0, 0] == 100.0
    n = sa.asarray(np.ones((1, 1)), dims=("a", "b"), mesh=mesh)
    assert getattr(sa.fft, name)(n) is not n


@pytest.mark.parametrize("seed", range(3))
def test_seeded_sweep_against_numpy(seed):
    """Every 1-D transform on every test mesh, random layout, ``n`` and ``norm``, named and positional."""
    rng = np.random.default_rng(seed)
    for mshape in MESHES:
        mesh = sa.Mesh(mshape)
        for name in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft"):
            shape = [(36,), (7, 5), (3, 0, 4), (4, 9)][rng.integers(4)]
            real = name in ("rfft", "ihfft")
            dt = ["float32", "float64"][rng.integers(2)] if real else ["complex64", "float64"][rng.integers(2)]
            a = rng.standard_normal(shape).astype(dt)
            axis = int(rng.integers(len(shape)))
            n = [None, 1, 6, 49][rng.integers(4)]
            norm = ["backward", "ortho", "forward"][rng.integers(3)]
            dims = tuple(f"dim{i}" for i in range(len(shape)))
            x = sa.asarray(a, dims=dims, mesh=mesh, layout=_layout(rng, mesh, dims))
            # NumPy's irfft/hfft of an empty axis padded to n read uninitialized memory: pad it here (zeros)
            padded = a if a.shape[axis] or n is None else np.zeros(a.shape[:axis] + (1,) + a.shape[axis + 1 :], dt)
            try:
                ref = getattr(np.fft, name)(padded, n=n, axis=axis, norm=norm)
            except ValueError:
                with pytest.raises(sa.ArgumentError):
                    getattr(sa.fft, name)(x, dims[axis], n=n, norm=norm)
                continue
            got = getattr(sa.fft, name)(x, dims[axis], n=n, norm=norm)
            assert got.dtype == ref.dtype and got.layout == x.layout
            tol = 1e-4 if dt in ("float32", "complex64") else 1e-10
            np.testing.assert_allclose(got.numpy(), ref, atol=tol * max(1.0, np.abs(ref).max(initial=0)))
            pos = getattr(xp.fft, name)(wrap(x), n=n, axis=axis, norm=norm)
            np.testing.assert_allclose(pos.numpy(), ref, atol=tol * max(1.0, np.abs(ref).max(initial=0)))


@pytest.mark.parametrize("name", ["irfft", "hfft"])
@pytest.mark.parametrize("layout", [{}, {"t": "row", "c": "col"}])
def test_c2r_of_an_empty_dim_padded_to_n_is_zero_with_numpy_fft(monkeypatch, name, layout):
    """``numpy.fft`` (the backend's FFT module without SciPy; the CuPy stand-in's too) pads an empty axis of
    ``irfft``/``hfft`` with uninitialized memory (NumPy 2.4): the result was garbage instead of zeros."""
    from shardarray.backend.numpy_backend import NumpyBackend

    monkeypatch.setattr(NumpyBackend, "fft", property(lambda self: np.fft))
    mesh = sa.Mesh({"row": 2, "col": 2}, backend="numpy")
    np.fft.irfft(np.zeros((3, 0, 4)), n=1000, axis=1)  # leave non-zero garbage in freed memory, as a run would
    x = sa.asarray(np.zeros((3, 0, 4), complex), dims=("b", "t", "c"), mesh=mesh, layout=layout)
    for n in (1, 4, 7):
        got = getattr(sa.fft, name)(x, "t", n=n).numpy()
        np.testing.assert_array_equal(got, np.zeros((3, n, 4)))
