"""Regressions found by a differential fuzzer of the named API (random programs on meshes 1, 2x2, 4, 2x2x2, 3x2
against NumPy on the gathered values; the bug each test pins is in its docstring)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import shardarray as sa


def pending_of(values, mesh, axis, k=3):
    """``values`` (dims ``("a",)``) as the pending result of an einsum contracting a dim split over ``axis``:
    one device's partial holds the values, the others hold zeros."""
    parts = np.zeros(values.shape + (k,))
    parts[..., 0] = values
    x = sa.asarray(parts, dims=("a", "z"), mesh=mesh, layout={"z": axis})
    ones = sa.asarray(np.ones(k), dims=("z",), mesh=mesh, layout={"z": axis})
    y = sa.einsum(x, ones, out=("a",))
    assert y.pending == (axis,)
    return y


def test_einsum_contracts_bool_and_integer_operands_in_the_result_dtype():
    """``i, i, j -> j`` of two bool vectors and a float32 one gave 1 (the bools were multiplied as ``and`` and
    added as ``or``), and two int8 vectors of 100s with a float32 one 48 (the int8 product wrapped), where NumPy
    gives 3 and 30000; an int32 einsum that summed a dim locally came back int64."""
    mesh = sa.Mesh({"row": 2, "col": 2})
    t = sa.asarray(np.ones(3, bool), dims=("i",), mesh=mesh, layout={"i": "row"})
    f = sa.asarray(np.ones(2, np.float32), dims=("j",), mesh=mesh)
    y = sa.einsum(t, t, f, out=("j",))
    assert y.dtype == np.float32 and y.numpy().tolist() == [3.0, 3.0]
    big = sa.asarray(np.full(3, 100, np.int8), dims=("i",), mesh=mesh)
    assert sa.einsum(big, big, f, out=("j",)).numpy().tolist() == [30000.0, 30000.0]
    m = sa.asarray(np.arange(6, dtype=np.int32).reshape(2, 3), dims=("i", "k"), mesh=mesh, layout={"k": "col"})
    s = sa.einsum(m, sa.asarray(np.ones(3, np.int32), dims=("k",), mesh=mesh), out=())
    assert s.dtype == np.int32 and int(s) == 15
    both = sa.einsum(t, t, out=())  # all bool: NumPy's einsum gives a bool (any of the products)
    assert both.dtype == np.bool_ and bool(both)


def test_pending_sum_times_infinity_or_over_zero_is_not_nan():
    """A pending sum times ``inf`` (or divided by 0) scaled each device's partial sum: the zero partials gave
    ``0 * inf = nan`` where NumPy gives ``+-inf``."""
    mesh = sa.Mesh({"row": 2, "col": 2})
    y = pending_of(np.array([1.0, -2.0, 3.0]), mesh, "col")
    with np.errstate(all="ignore"):
        assert (y * np.inf).numpy().tolist() == [np.inf, -np.inf, np.inf]
        assert (y / 0.0).numpy().tolist() == [np.inf, -np.inf, np.inf]
        assert (y / 0).numpy().tolist() == [np.inf, -np.inf, np.inf]
    assert (y * 2.0).pending == ("col",) and (y / 4).pending == ("col",)  # finite scalars still keep it pending


@pytest.mark.parametrize(
    "make",
    [
        lambda b, i: b - b,
        lambda b, i: b - True,
        lambda b, i: -b,
        lambda b, i: i ** sa.asarray(np.array([-1, 2, 3]), dims=("a",), mesh=i.mesh),
        lambda b, i: 2**-i,
        lambda b, i: i.astype("uint8") + (-1),
        lambda b, i: sa.maximum(i.astype("int8"), 1000),
    ],
    ids=["bool-bool", "bool-True", "neg-bool", "int-pow-neg-array", "scalar-pow-neg", "uint8+-1", "int8-vs-1000"],
)
def test_elementwise_refusals_are_typed(make):
    """These raised NumPy's own ``TypeError`` / ``ValueError`` / ``OverflowError`` from inside a shard op."""
    mesh = sa.Mesh({"row": 2, "col": 2})
    b = sa.asarray(np.array([True, False, True]), dims=("a",), mesh=mesh, layout={"a": "row"})
    i = sa.asarray(np.array([1, 2, 3]), dims=("a",), mesh=mesh, layout={"a": "col"})
    with pytest.raises(sa.ShardArrayError, match=r"\{'a': 3\}"):
        make(b, i)


def test_bool_minus_int_and_relu_of_bool_keep_numpys_dtypes():
    """``relu`` of a bool array gave int64 (NumPy's ``maximum(x, False)`` is bool); bool minus an int stays
    allowed (int64, as NumPy)."""
    mesh = sa.Mesh({"row": 2, "col": 2})
    b = sa.asarray(np.array([True, False, True]), dims=("a",), mesh=mesh, layout={"a": "row"})
    assert sa.relu(b).dtype == np.bool_ and sa.relu(b).numpy().tolist() == [True, False, True]
    assert (b - 1).numpy().tolist() == [0, -1, 0]


@pytest.mark.parametrize(
    "dtype, want", [("bool", "int64"), ("uint8", "uint64"), ("int32", "int64"), ("float16", "float16")]
)
def test_sum_over_no_dims_has_the_dtype_of_a_sum(dtype, want):
    """``sa.sum(x, ())`` returned ``x`` itself: bool and narrow integer arrays kept their dtype, though a sum
    over any dim (and ``np.sum(x, axis=())``) gives int64/uint64."""
    mesh = sa.Mesh({"row": 2, "col": 2})
    x = sa.asarray(np.ones((3, 2), dtype), dims=("a", "b"), mesh=mesh, layout={"a": "col"})
    assert np.sum(np.ones((3, 2), dtype), axis=()).dtype == want
    for y in (sa.sum(x, ()), x.sum(()), sa.nansum(x, ())):
        assert y.dtype == want and y.dims == ("a", "b") and y.numpy().tolist() == np.ones((3, 2)).tolist()


def test_isel_refuses_multidimensional_numpy_ids():
    """``x.isel(a=ids)`` (and ``x[ids]``) with a 2-D NumPy array flattened the ids: shape (4, 4) instead of
    NumPy's (2, 2, 4), with no error."""
    mesh = sa.Mesh({"row": 2, "col": 2})
    x = sa.asarray(np.arange(12.0).reshape(3, 4), dims=("a", "b"), mesh=mesh, layout={"a": "row"})
    ids = np.array([[0, 1], [2, 2]])
    for index in (lambda: x.isel(a=ids), lambda: x[ids], lambda: x.isel(a=[[0]])):
        with pytest.raises(sa.DimensionError, match=r"must be 1-D.*\(2, 2\)|must be 1-D.*\(1, 1\)"):
            index()
    named = x.isel(a=sa.asarray(ids, dims=("p", "q"), mesh=mesh))  # the way: ids with named dims
    assert named.dims == ("p", "q", "b") and np.array_equal(named.numpy(), np.arange(12.0).reshape(3, 4)[ids])


@pytest.mark.parametrize("value", ["a", None])
def test_writes_refuse_values_that_are_not_numbers(value):
    """``x[{d: 0}] = "a"`` raised NumPy's ``ValueError``; ``sa.mask_assign(x, mask, None)`` wrote NaN silently."""
    mesh = sa.Mesh({"row": 2, "col": 2})
    x = sa.asarray(np.arange(6.0), dims=("a",), mesh=mesh, layout={"a": "row"})
    with pytest.raises(sa.DTypeError, match=r"\{'a': 6\}"):
        x[{"a": 0}] = value
    with pytest.raises(sa.DTypeError, match=r"\{'a': 6\}"):
        sa.mask_assign(x, x > 3.5, value)
    assert x.numpy().tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]


def test_layer_norm_over_an_empty_dim():
    """The fused NumPy path of ``sa.nn.layer_norm`` raised ``ZeroDivisionError`` (``1.0 / n``) for a dim of
    size 0, forward and backward; the result is empty like its input."""
    mesh = sa.Mesh({"row": 2, "col": 2})
    x = sa.asarray(np.zeros((2, 0)), dims=("a", "d"), mesh=mesh, layout={"a": "row"})
    gain = sa.asarray(np.zeros(0), dims=("d",), mesh=mesh)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's mean of an empty slice warns (CuPy's does not)
        y = sa.nn.layer_norm(x, gain, gain, "d")
        loss, g = sa.value_and_grad(lambda p: sa.sum(sa.nn.layer_norm(p, gain, gain, "d")))(x)
    assert y.shape == (2, 0) and float(loss) == 0.0 and g.shape == (2, 0)


@pytest.mark.parametrize("dtype", ["float16", "float64"])
def test_layer_norm_over_an_empty_split_dim(dtype):
    """The array path of ``sa.nn.layer_norm`` (a split normalised dim, or a 16-bit input) raised
    ``ZeroDivisionError`` (``1.0 / n``) for a dim of size 0, forward and backward."""
    mesh = sa.Mesh({"row": 2, "col": 2})
    x = sa.asarray(np.zeros((2, 0), dtype), dims=("a", "d"), mesh=mesh, layout={"d": "row"})
    gain = sa.asarray(np.zeros(0, dtype), dims=("d",), mesh=mesh)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's mean of an empty slice warns
        y = sa.nn.layer_norm(x, gain, gain, "d")
        if dtype == "float64":
            loss, g = sa.value_and_grad(lambda p: sa.sum(sa.nn.layer_norm(p, gain, gain, "d")))(x)
            assert float(loss) == 0.0 and g.shape == (2, 0)
    assert y.shape == (2, 0)


def test_isel_with_a_zero_d_numpy_integer_drops_the_dim():
    """``x.isel(a=np.array(1))`` kept dim ``a`` at size 1; a 0-d integer index is an int, as in NumPy."""
    mesh = sa.Mesh({"row": 2, "col": 2})
    host = np.arange(12.0).reshape(3, 4)
    x = sa.asarray(host, dims=("a", "b"), mesh=mesh, layout={"a": "row"})
    y = x.isel(a=np.array(1))
    assert y.sizes == {"b": 4}
    np.testing.assert_array_equal(y.numpy(), host[np.array(1)])
