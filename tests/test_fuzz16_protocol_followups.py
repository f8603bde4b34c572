"""NumPy's protocol on positional arrays, round-16 follow-ups found by the clients' own suites: ``np.may_share_memory``
/ ``np.shares_memory`` (scikit-learn's ``check_array(copy=True)``), a 0-d Array tolerance of ``np.isclose`` next to
host operands (``numpy.testing.assert_allclose(..., atol=x)``), ``np.average``'s host ``a`` next to Array weights,
the methods ``x.partition``/``x.argpartition``/``x.compress``, ``np.unravel_index``, ``np.histogram_bin_edges``,
the printing functions' typed refusal, a ufunc that is not NumPy's own (``scipy.special.round``) refused, and
``np.apply_along_axis``; each against NumPy on the gathered value on the test meshes (1, 2x2, 4, 2x2x2, 3x2) with
uneven and empty blocks.

``FUZZ16_EXAMPLES=<n>`` runs each fuzzer with ``n`` examples.
"""

from __future__ import annotations

import numpy as np
import pytest
from fuzzing import cached_mesh, cached_meshes, fuzz
from helpers import layouts
from hypothesis import given
from hypothesis import strategies as st

import shardarray as sa
import shardarray.array_api as xp

ENV = "FUZZ16_EXAMPLES"

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

SHAPES = st.lists(st.integers(0, 5), min_size=1, max_size=3).map(tuple)


def _placed(data, mesh, h):
    dims = tuple(f"d{i}" for i in range(h.ndim))
    return xp.asarray(sa.asarray(h, dims=dims, mesh=mesh, layout=data.draw(layouts(mesh, dims))))


def _host(data, shape, dtype="float64"):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    return rng.integers(-5, 6, shape).astype(dtype)


def _same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype, got.shape, want.shape)
    np.testing.assert_array_equal(got, want)


# ----------------------------------------------------------------------------------------- 1. memory


@fuzz(30, ENV)
@given(st.data(), cached_meshes(), SHAPES)
def test_may_share_memory_of_blocks(data, mesh, shape):
    """The old code raised NumPy's bare TypeError ('no implementation found for numpy.may_share_memory')."""
    x = _placed(data, mesh, _host(data, shape))
    h = x.numpy()
    assert np.may_share_memory(h, x) is False and np.may_share_memory(x, h) is False
    assert np.shares_memory(h, x, max_work=None) is False
    assert np.may_share_memory(x, x) is (h.size > 0) and np.shares_memory(x, x) is (h.size > 0)
    assert np.may_share_memory(x, x + 1) is False
    if mesh.backend.name == "numpy":  # a view of a block is host memory of the array
        block = next((b for b in x.shards if b.size), None)
        if block is not None:
            assert np.may_share_memory(block[...], x) is True and np.shares_memory(x, block) is True


# ----------------------------------------------------------------------------------------- 2. tolerances


def test_isclose_with_a_zero_d_array_tolerance():
    """The old code raised an untyped AttributeError ('NoneType' object has no attribute 'mesh')."""
    mesh = cached_mesh({"row": 2, "col": 2})
    tol = xp.asarray(0.1, device=mesh)
    for a, b in ((np.float64(1), np.float64(1.05)), (np.float64(1), np.float64(1.5)), (np.ones(3), np.ones(3) * 1.2)):
        _same(np.isclose(a, b, atol=tol), np.isclose(a, b, atol=0.1))
        assert np.allclose(a, b, atol=tol) == np.allclose(a, b, atol=0.1)
        _same(np.isclose(a, b, rtol=tol, atol=0), np.isclose(a, b, rtol=0.1, atol=0))
    np.testing.assert_allclose(np.float64(1), np.float64(1.05), atol=tol)
    x = xp.asarray(np.array([1.0, 1.05, 2.0]), device=mesh)
    _same(np.isclose(x, 1.0, atol=tol).numpy(), np.isclose(np.array([1.0, 1.05, 2.0]), 1.0, atol=0.1))
    with pytest.raises(sa.DTypeError, match=r"atol\.numpy\(\)"):
        np.isclose(1.0, 1.0, atol=xp.asarray(np.array([0.1, 0.2]), device=mesh))


def test_average_names_its_host_operand():
    """The old message was the namespace's 'astype takes an array; got ndarray'."""
    w = xp.asarray(np.ones(4), device=cached_mesh({"row": 2, "col": 2}))
    with pytest.raises(sa.DTypeError, match=r"np\.average: operand a is a NumPy array.*xp\.asarray"):
        np.average(np.ones(4, dtype=int), weights=w)


# ----------------------------------------------------------------------------------------- 3. methods


@fuzz(30, ENV)
@given(st.data(), cached_meshes(), st.lists(st.integers(1, 5), min_size=1, max_size=3).map(tuple))
def test_partition_argpartition_compress_methods(data, mesh, shape):
    """The old code had none of the three methods (AttributeError)."""
    h = _host(data, shape)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    kth = data.draw(st.integers(0, shape[axis] - 1))
    x = _placed(data, mesh, h)
    assert x.partition(kth, axis=axis) is None
    got = x.numpy()
    np.testing.assert_array_equal(np.sort(got, axis=axis), np.sort(h, axis=axis))
    pivot = np.take(np.sort(h, axis=axis), [kth], axis=axis)
    np.testing.assert_array_equal(np.take(got, [kth], axis=axis), pivot)
    assert (np.take(got, range(kth), axis=axis) <= pivot).all() and (
        np.take(got, range(kth, shape[axis]), axis=axis) >= pivot
    ).all()
    y = _placed(data, mesh, h)
    idx = y.argpartition(kth, axis=axis).numpy()
    np.testing.assert_array_equal(np.take_along_axis(h, idx, axis=axis), np.partition(h, kth, axis=axis))
    cond = data.draw(st.lists(st.booleans(), min_size=0, max_size=shape[axis]))
    _same(y.compress(cond, axis=axis).numpy(), h.compress(cond, axis=axis))
    flat = data.draw(st.lists(st.booleans(), min_size=0, max_size=h.size))
    _same(y.compress(flat).numpy(), h.compress(flat))


def test_partition_method_refuses_axis_none():
    x = xp.asarray(np.array([3.0, 1.0, 2.0]), device=cached_mesh({"row": 2, "col": 2}))
    with pytest.raises(sa.DTypeError, match=r"np\.partition\(x, kth, axis=None\)"):
        x.partition(1, axis=None)


# ----------------------------------------------------------------------------------------- 4. indices, edges, printing


@fuzz(40, ENV)
@given(st.data(), cached_meshes(), st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple), SHAPES)
def test_unravel_index(data, mesh, dims, shape):
    """The old code raised NumPy's bare TypeError ('no implementation found for numpy.unravel_index')."""
    size = int(np.prod(dims))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    h = rng.integers(0, size, shape).astype(data.draw(st.sampled_from(["int64", "int32", "uint8"])))
    order = data.draw(st.sampled_from(["C", "F"]))
    got = np.unravel_index(_placed(data, mesh, h), dims, order=order)
    want = np.unravel_index(h, dims, order=order)
    assert isinstance(got, tuple) and len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        _same(g.numpy(), w)
    if h.size:
        bad = h.astype(np.int64)
        bad.flat[data.draw(st.integers(0, h.size - 1))] = data.draw(st.sampled_from([-1, size]))
        with pytest.raises(sa.OutOfBoundsError, match="out of bounds"):
            np.unravel_index(_placed(data, mesh, bad), dims, order=order)


def test_unravel_index_of_argmax():
    mesh = cached_mesh({"row": 2, "col": 2})
    h = np.array([[1.0, 5.0, 3.0], [4.0, 2.0, 6.0]])
    got = np.unravel_index(xp.argmax(xp.asarray(h, device=mesh)), (2, 3))
    assert tuple(int(g) for g in got) == np.unravel_index(np.argmax(h), (2, 3))
    with pytest.raises(sa.DTypeError, match="integers"):
        np.unravel_index(xp.asarray(np.array([1.0]), device=mesh), (2, 3))


@fuzz(25, ENV)
@given(st.data(), cached_meshes(), SHAPES, st.sampled_from([1, 3, 4, [-1.0, 0.0, 2.5, 6.0]]), st.booleans())
def test_histogram_bin_edges(data, mesh, shape, bins, ranged):
    """The old code raised NumPy's bare TypeError ('no implementation found for numpy.histogram_bin_edges')."""
    h = _host(data, shape)
    rng = (-2.0, 3.0) if ranged else None
    _same(
        np.histogram_bin_edges(_placed(data, mesh, h), bins=bins, range=rng).numpy(),
        np.histogram_bin_edges(h, bins, rng),
    )


@pytest.mark.parametrize("fn", [np.array2string, np.array_str, np.array_repr])
def test_printing_names_the_explicit_gather(fn):
    """The old code raised NumPy's bare TypeError ('no implementation found')."""
    x = xp.asarray(np.arange(4.0), device=cached_mesh({"row": 2, "col": 2}))
    with pytest.raises(sa.DTypeError, match=r"x\.numpy\(\)"):
        fn(x)


# ----------------------------------------------------------------------------------------- 5. ufuncs not NumPy's


def test_a_ufunc_not_numpys_is_refused():
    """``scipy.special.round`` rounds half away from zero: the old code dispatched it by name to the namespace's
    ``round`` (-0.0 for -0.5, where SciPy gives 0.0), and ``scipy.special.exp2`` of complex computed where SciPy
    raises."""
    special = pytest.importorskip("scipy.special")
    mesh = cached_mesh({"row": 2, "col": 2})
    x = xp.asarray(np.array([-0.5, 0.5, 2.5]), device=mesh)
    named = sa.asarray(np.array([-0.5, 0.5]), dims=("i",), mesh=mesh)
    for ufunc in (special.round, special.gamma, special.exp2):
        for arr in (x, named):
            with pytest.raises(sa.DTypeError, match=r"not NumPy's own.*SCIPY_ARRAY_API=1.*x\.numpy\(\)"):
                ufunc(arr)
    _same(np.rint(x).numpy(), np.rint(np.array([-0.5, 0.5, 2.5])))  # NumPy's own still dispatch


# ----------------------------------------------------------------------------------------- 6. apply_along_axis


def _twice(v):
    return v * 2


def _outer(v):
    return v[:, None] * v[None, :]


@fuzz(25, ENV)
@given(
    st.data(),
    cached_meshes(),
    st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple),
    st.sampled_from([np.sum, np.max, _twice, _outer, len]),
)
def test_apply_along_axis(data, mesh, shape, func):
    """The old code raised NumPy's bare TypeError ('no implementation found for numpy.apply_along_axis')."""
    h = _host(data, shape)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    got = np.apply_along_axis(func, axis, _placed(data, mesh, h))
    _same(got.numpy(), np.apply_along_axis(func, axis, h))


def test_apply_along_axis_refuses_an_empty_iteration_axis():
    x = xp.asarray(np.ones((0, 3)), device=cached_mesh({"row": 2, "col": 2}))
    with pytest.raises(sa.ArgumentError, match="empty axis"):
        np.apply_along_axis(np.sum, 1, x)
