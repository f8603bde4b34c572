"""A differential fuzz, against NumPy, of NumPy's complex order on split arrays: ``sort``/``argsort`` (stable,
descending), ``argmax``/``argmin``, ``max``/``min``, ``searchsorted`` and ``top_k`` of complex64/complex128 data
with NaN and inf in either part, -0.0 and many ties, on meshes 1, 2x2, 4, 2x2x2, 3x2 and random layouts (uneven
and empty blocks), positionally and through NumPy's dispatch; gradients of ``sort``/``max`` of complex values;
``np.unique(x, axis=k)`` (``unique_along_axis``: distinct slices, first indices, inverse, counts) with no gather.

NumPy's order: lexicographic (real part, then imaginary part), ``R+Rj < R+nanj < nan+Rj < nan+nanj``.
``FUZZ9_EXAMPLES=<n>`` runs every fuzzer with ``n`` examples.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from fuzzing import cached_meshes, fuzz
from gradcheck import check_grad
from helpers import layouts
from hypothesis import given
from hypothesis import strategies as st

import shardarray as sa
import shardarray.array_api as xp
from shardarray.array import as_kind
from shardarray.array_api._set import unique_along_axis

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

PARTS = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0, -1.0, 2.0, 0.5])
SIDES = (0, 1, 2, 3, 5, 7, 13)


def _complex(rng: np.random.Generator, shape: tuple, dtype: str) -> np.ndarray:
    """Parts drawn from few values (ties), NaN/inf/-0.0 among them, in either part."""
    n = int(np.prod(shape))
    special = rng.random() < 0.7
    pool = PARTS if special else PARTS[3:]
    out = np.empty(n, dtype)
    out.real = rng.choice(pool, n)
    out.imag = rng.choice(pool, n)
    if n and rng.random() < 0.3:  # a NaN of another payload / sign: stable sorts keep them in input order
        out.real[rng.integers(n)] = -np.nan
    return out.reshape(shape)


@st.composite
def cases(draw, min_dims=1, max_dims=2, min_side=0):
    mesh = draw(cached_meshes())
    nd = draw(st.integers(min_dims, max_dims))
    shape = tuple(draw(st.sampled_from([s for s in SIDES if s >= min_side])) for _ in range(nd))
    dtype = draw(st.sampled_from(["complex128", "complex64"]))
    a = _complex(np.random.default_rng(draw(st.integers(0, 2**32 - 1))), shape, dtype)
    dims = tuple(f"dim{k}" for k in range(nd))
    lay = {d: v for d, v in draw(layouts(mesh, dims)).items() if shape[dims.index(d)] > 1}
    x = as_kind(sa.asarray(a, dims=dims, mesh=mesh, layout=lay), xp.Array)
    return a, x


def _bits(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    return a.view(np.uint8)


def same_bits(got, expected) -> None:
    g, e = np.asarray(got.numpy() if hasattr(got, "numpy") else got), np.asarray(expected)
    assert g.shape == e.shape and g.dtype == e.dtype, (g.shape, g.dtype, e.shape, e.dtype)
    assert np.array_equal(_bits(g), _bits(e)), (g, e)


def no_big_gather(log, limit: int = 64) -> None:
    big = [r for r in log.records if r.op == "allgather" and r.elements > limit]
    assert not big, big


@fuzz(60, "FUZZ9_EXAMPLES")
@given(cases(), st.data())
def test_sort_argsort_complex(case, data):
    a, x = case
    axis = data.draw(st.sampled_from(range(-a.ndim, a.ndim)))
    desc = data.draw(st.booleans())
    if desc:  # the array API's stable descending order: the reversed ascending order of the reversed array
        flip = np.flip(a, axis)
        want = np.flip(np.sort(flip, axis=axis, kind="stable"), axis)
        want_i = a.shape[axis] - 1 - np.flip(np.argsort(flip, axis=axis, kind="stable"), axis)
    else:
        want, want_i = np.sort(a, axis=axis, kind="stable"), np.argsort(a, axis=axis, kind="stable")
    with sa.comm_log() as log, warnings.catch_warnings():
        warnings.simplefilter("error", sa.GatherWarning)
        got = xp.sort(x, axis=axis, descending=desc)
        got_i = xp.argsort(x, axis=axis, descending=desc)
    no_big_gather(log)
    same_bits(got, want)
    np.testing.assert_array_equal(got_i.numpy(), want_i)
    if not desc:
        same_bits(np.sort(x, axis=axis), np.sort(a, axis=axis, kind="stable"))
        np.testing.assert_array_equal(np.argsort(x, axis=axis, kind="stable").numpy(), want_i)


@fuzz(60, "FUZZ9_EXAMPLES")
@given(cases(min_side=1), st.data())
def test_argmax_argmin_max_min_complex(case, data):
    a, x = case
    axis = data.draw(st.sampled_from([None, *range(-a.ndim, a.ndim)]))
    keep = data.draw(st.booleans())
    # (the flat argmax of a 2-D array, array_api/_statistical.py's _flat_search, still refuses complex values)
    names = ("max", "min") if axis is None and a.ndim > 1 else ("argmax", "argmin", "max", "min")
    with sa.comm_log() as log:
        got = {name: getattr(xp, name)(x, axis=axis, keepdims=keep) for name in names}
    no_big_gather(log, 3 * max(1, a.size // max(1, a.shape[axis or 0])) * 8)
    for name, g in got.items():
        want = getattr(np, name)(a, axis=axis, keepdims=keep)
        np.testing.assert_array_equal(g.numpy(), want, err_msg=name)
        assert g.numpy().dtype == np.asarray(want).dtype, name
    if "argmax" in names:
        np.testing.assert_array_equal(np.argmax(x, axis=axis).numpy(), np.argmax(a, axis=axis))
    np.testing.assert_array_equal(np.min(x, axis=axis).numpy(), np.min(a, axis=axis))


@fuzz(60, "FUZZ9_EXAMPLES")
@given(cases(max_dims=1), st.data())
def test_searchsorted_complex(case, data):
    a, x = case
    s = np.sort(a)
    mesh = x.mesh
    lay = data.draw(layouts(mesh, ("i",)))
    sx = as_kind(sa.asarray(s, dims=("i",), mesh=mesh, layout=lay if len(s) > 1 else {}), xp.Array)
    real = data.draw(st.booleans())
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    n = data.draw(st.sampled_from([0, 1, 5, 9]))
    v = rng.choice(PARTS, n) if real else _complex(rng, (n,), data.draw(st.sampled_from(["complex64", "complex128"])))
    vlay = data.draw(layouts(mesh, ("q",)))
    vx = as_kind(sa.asarray(v, dims=("q",), mesh=mesh, layout=vlay if n > 1 else {}), xp.Array)
    side = data.draw(st.sampled_from(["left", "right"]))
    np.testing.assert_array_equal(xp.searchsorted(sx, vx, side=side).numpy(), np.searchsorted(s, v, side=side))
    np.testing.assert_array_equal(np.searchsorted(sx, vx, side=side).numpy(), np.searchsorted(s, v, side=side))
    if s.size:  # a real sorted array searched for complex values: both in their common complex type
        r = np.sort(s.real)
        rx = as_kind(sa.asarray(r, dims=("i",), mesh=mesh, layout=lay if len(r) > 1 else {}), xp.Array)
        np.testing.assert_array_equal(xp.searchsorted(rx, vx, side=side).numpy(), np.searchsorted(r, v, side=side))


@pytest.mark.parametrize("op", ["sort", "sort-descending", "max", "min", "top_k"])
@pytest.mark.parametrize("layout", [{}, {"j": ("row", "col")}, {"i": "row", "j": "col"}], ids=str)
def test_gradients_through_complex_sort_and_max(op, layout):
    """``sort`` and ``max``/``min`` of complex values route the (complex) cotangent back through the permutation
    or to the extreme (the real VJPs, extended): checked against finite differences of a real parameter."""
    mesh = sa.Mesh({"row": 2, "col": 2})
    rng = np.random.default_rng(7)
    b = sa.asarray(rng.standard_normal((3, 9)), dims=("i", "j"), mesh=mesh, layout=layout)
    c = sa.asarray(rng.standard_normal(9) + 1j * rng.standard_normal(9), dims=("j",), mesh=mesh)
    w = sa.asarray(rng.standard_normal((3, 9)) + 1j * rng.standard_normal((3, 9)), dims=("i", "j"), mesh=mesh)

    def loss(p):
        z = p * c
        if op.startswith("sort"):
            return sa.real(sa.sort(z, "j", descending=op.endswith("descending")) * w).sum()
        if op == "top_k":
            return sa.real(
                sa.top_k(z, 4, "j", new_dim="k")[0] * sa.isel(w, {"j": slice(0, 4)}).rename({"j": "k"})
            ).sum()
        red = sa.max(z, "j") if op == "max" else sa.min(z, "j")
        return sa.real(red * sa.isel(w, {"j": 0})).sum()

    check_grad(loss, b)


@fuzz(40, "FUZZ9_EXAMPLES")
@given(cases(min_side=1), st.data())
def test_top_k_complex(case, data):
    a, x = case
    axis = data.draw(st.sampled_from(range(a.ndim)))
    k = data.draw(st.integers(1, a.shape[axis]))
    with sa.comm_log() as log:
        v, i = sa.top_k(x, k, x.dims[axis], new_dim="top")
    no_big_gather(log, 3 * k * a.size)
    want_i = np.take(np.argsort(-a, axis=axis, kind="stable"), range(k), axis=axis)
    np.testing.assert_array_equal(i.numpy(), want_i)
    same_bits(v, np.take_along_axis(a, want_i, axis=axis))


@st.composite
def unique_cases(draw):
    mesh = draw(cached_meshes())
    nd = draw(st.integers(1, 3))
    shape = tuple(draw(st.sampled_from((0, 1, 2, 3, 6, 9) if nd < 3 else (0, 1, 2, 3))) for _ in range(nd))
    dtype = draw(st.sampled_from(["float64", "int64", "complex128", "complex64", "float32"]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n = int(np.prod(shape))
    if dtype.startswith("complex"):
        a = _complex(rng, shape, dtype)
        if draw(st.booleans()):  # (fewer NaNs: equal slices to merge)
            a = (rng.integers(0, 2, shape) + 1j * rng.integers(0, 2, shape)).astype(dtype)
    elif dtype.startswith("int"):
        a = rng.integers(-1, 2, shape).astype(dtype)
    else:
        a = rng.choice(PARTS if draw(st.booleans()) else np.array([-0.0, 0.0, 1.0]), n).astype(dtype).reshape(shape)
    dims = tuple(f"dim{k}" for k in range(nd))
    lay = {d: v for d, v in draw(layouts(mesh, dims)).items() if shape[dims.index(d)] > 1}
    return a, as_kind(sa.asarray(a, dims=dims, mesh=mesh, layout=lay), xp.Array)


@fuzz(50, "FUZZ9_EXAMPLES")
@given(unique_cases(), st.data())
def test_unique_along_axis(case, data):
    """``np.unique(x, axis=k)``: NumPy's distinct slices (lexicographic; a slice with a NaN distinct), first
    indices, 1-D inverse and counts, with no gather of the array."""
    a, x = case
    axis = data.draw(st.sampled_from(range(-a.ndim, a.ndim)))
    flags = [data.draw(st.booleans()) for _ in range(3)]
    want = np.unique(a, axis=axis, return_index=flags[0], return_inverse=flags[1], return_counts=flags[2])
    with sa.comm_log() as log, warnings.catch_warnings():
        warnings.simplefilter("error", sa.GatherWarning)
        got = unique_along_axis(x, axis, *flags)
    cols = a.size // max(1, a.shape[axis])
    no_big_gather(log, 8 * (2 * cols + 3) * x.mesh.size)
    got, want = (got, want) if isinstance(want, tuple) else ((got,), (want,))
    assert len(got) == len(want)
    v = got[0].numpy()
    assert v.dtype == want[0].dtype and v.shape == want[0].shape, (v.shape, want[0].shape)
    np.testing.assert_array_equal(v, want[0])  # (values: -0.0 and 0.0 slices merge; NumPy keeps either)
    for g, w in zip(got[1:], want[1:]):
        np.testing.assert_array_equal(g.numpy(), w)
        assert g.numpy().dtype == np.int64 and g.ndim == 1
