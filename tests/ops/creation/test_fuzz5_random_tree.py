"""Regressions of the round-5 fuzzer of random numbers and trees (sa.random, sa.tree).

Random arrays: a 0-d array is hashed without NumPy's scalar-overflow warning; randint refuses bounds outside
its dtype (NumPy's "high is out of bounds"), takes every span up to 2**64 and is unbiased for huge spans;
bounds and moments of the wrong type or out of range are typed errors. Trees: tree_unflatten with too few or
too many leaves, or a structure tree_flatten never returns, and tree_map of a non-function are typed errors.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from helpers import HYPOTHESIS_SHAPES

import shardarray as sa

MESHES = [pytest.param(shape, id="x".join(map(str, shape.values()))) for shape in HYPOTHESIS_SHAPES]


def _one(fn, sizes, **kw):
    return fn(sa.Mesh({"d": 1}), sizes, **kw).numpy()


@pytest.mark.parametrize("shape", MESHES)
@pytest.mark.parametrize("fn, kw", [
    (sa.random.normal, {}),
    (sa.random.uniform, {"low": -1.0, "high": 2.0}),
    (sa.random.randint, {"low": 0, "high": 7}),
])
def test_zero_dim_random_array_warns_nothing_and_is_the_same_on_every_mesh(shape, fn, kw):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the hash wraps: NumPy warned on a 0-d block's scalar products
        got = fn(sa.Mesh(shape), {}, seed=5, **kw).numpy()
        want = _one(fn, {}, seed=5, **kw)
    assert got.shape == () and got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("low, high, dtype", [
    (0, 1000, "int8"),  # wrapped silently to negative values
    (-5, 5, "uint8"),  # wrapped to 251..255
    (0, 2**32 + 1, "uint32"),
    (-(2**63) - 1, 0, "int64"),
])
def test_randint_bounds_outside_the_dtype_are_an_argument_error(low, high, dtype):
    with pytest.raises(sa.ArgumentError, match=f"out of bounds for {dtype}"):
        sa.random.randint(sa.Mesh({"row": 2, "col": 2}), {"a": 10}, low, high, dtype=dtype)


@pytest.mark.parametrize("shape", MESHES)
@pytest.mark.parametrize("low, high, dtype", [
    (-(2**63), 2**63, "int64"),  # span 2**64: raised OverflowError
    (0, 2**64, "uint64"),
    (2**63, 2**64, "uint64"),  # low beyond int64: raised OverflowError
    (-128, 128, "int8"),
    (0, 256, "uint8"),
])
def test_randint_full_width_spans_are_the_same_on_every_mesh(shape, low, high, dtype):
    mesh = sa.Mesh(shape)
    lay = {"a": mesh.axis_names[0], "b": mesh.axis_names[-1]} if len(mesh.axis_names) > 1 else {"a": mesh.axis_names[0]}
    got = sa.random.randint(mesh, {"a": 5, "b": 3}, low, high, seed=2, dtype=dtype, layout=lay).numpy()
    want = _one(sa.random.randint, {"a": 5, "b": 3}, low=low, high=high, seed=2, dtype=dtype)
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, want)
    values = [int(v) for v in got.ravel()]
    assert all(low <= v < high for v in values)


@pytest.mark.parametrize("low, dtype", [(0, "uint64"), (-(2**63), "int64")])
def test_randint_is_unbiased_for_a_huge_span(low, dtype):
    """hash % span gave the lowest 2**62 values of a span of 3 * 2**62 half of the mass instead of a third."""
    span = 3 * 2**62
    t = sa.random.randint(sa.Mesh({"all": 4}), {"i": 20000}, low, low + span, seed=1, dtype=dtype, layout={"i": "all"})
    offsets = t.numpy().astype(object) - low
    assert all(0 <= v < span for v in offsets)
    assert abs(np.mean([v < 2**62 for v in offsets]) - 1 / 3) < 0.02  # SE 0.0033


def test_randint_small_spans_keep_their_values_and_statistics():
    t = _one(sa.random.randint, {"i": 60000}, low=-3, high=7, seed=4)
    counts = np.bincount(t + 3, minlength=10)
    assert t.min() == -3 and t.max() == 6 and np.all(np.abs(counts / 6000 - 1) < 0.06)


@pytest.mark.parametrize("call, error, match", [
    (lambda m: sa.random.randint(m, {"a": 3}, "0", 3), sa.DTypeError, "low as a real number"),
    (lambda m: sa.random.randint(m, {"a": 3}, 0, float("inf")), sa.ArgumentError, "finite"),
    (lambda m: sa.random.uniform(m, {"a": 3}, "0", 1.0), sa.DTypeError, "low as a real number"),
    (lambda m: sa.random.uniform(m, {"a": 3}, 1j, 1.0), sa.DTypeError, "low as a real number"),
    (lambda m: sa.random.uniform(m, {"a": 3}, np.zeros(3), 1.0), sa.DTypeError, "low as a real number"),
    (lambda m: sa.random.uniform(m, {"a": 3}, 0.0, float("inf")), sa.ArgumentError, "finite"),
    (lambda m: sa.random.uniform(m, {"a": 3}, float("nan"), 1.0), sa.ArgumentError, "finite"),
    (lambda m: sa.random.uniform(m, {"a": 3}, -1e308, 1e308, dtype="float64"), sa.ArgumentError, "finite"),
    (lambda m: sa.random.uniform(m, {"a": 3}, 0, 10**400), sa.ArgumentError, "range of a float"),
    (lambda m: sa.random.uniform(m, {"a": 3}, 0.0, 1e6, dtype="float16"), sa.ArgumentError, "overflows float16"),
    (lambda m: sa.random.uniform(m, {"a": 3}, -1e39, 0.0, dtype="bfloat16"), sa.ArgumentError, "overflows"),
    (lambda m: sa.random.normal(m, {"a": 3}, std="1"), sa.DTypeError, "std as a real number"),
    (lambda m: sa.random.normal(m, {"a": 3}, mean=np.ones(3)), sa.DTypeError, "mean as a real number"),
])
def test_random_arguments_of_the_wrong_type_or_range_are_typed(call, error, match):
    with pytest.raises(error, match=match):
        call(sa.Mesh({"row": 2, "col": 2}))


def test_uniform_bounds_that_fit_the_dtype_still_work():
    mesh = sa.Mesh({"row": 2, "col": 2})
    u = sa.random.uniform(mesh, {"a": 4000}, -60000.0, 60000, dtype="float16", layout={"a": "row"}).numpy()
    assert np.isfinite(u).all() and u.min() >= -60000 and u.max() < 60000
    assert np.all(sa.random.uniform(mesh, {"a": 3}, np.float32(2), 2).numpy() == 2)  # NumPy scalars, low == high


def _tree(mesh):
    x = sa.ones(mesh, {"a": 3}, layout={"a": mesh.axis_names[0]})
    return {"w": x, "b": [x * 2, (x, None)]}


@pytest.mark.parametrize("shape", MESHES)
def test_tree_unflatten_checks_the_number_of_leaves(shape):
    leaves, treedef = sa.tree.tree_flatten(_tree(sa.Mesh(shape)), plain=True)
    back = sa.tree.tree_unflatten(treedef, leaves)
    assert back["b"][1][1] is None and back["w"] is leaves[0]
    with pytest.raises(sa.ArgumentError, match="has 3 leaves; got 2"):  # raised StopIteration
        sa.tree.tree_unflatten(treedef, leaves[:-1])
    with pytest.raises(sa.ArgumentError, match="has 3 leaves; got 4"):  # dropped the extra leaf silently
        sa.tree.tree_unflatten(treedef, [*leaves, leaves[0]])


@pytest.mark.parametrize("treedef", [5, ("*",), (list, ("*",)), (tuple, "*")])
def test_tree_unflatten_of_something_else_than_a_treedef_is_a_dtype_error(treedef):
    with pytest.raises(sa.DTypeError, match="not a tree structure"):
        sa.tree.tree_unflatten(treedef, [1])


def test_tree_map_of_a_non_function_is_a_dtype_error():
    with pytest.raises(sa.DTypeError, match="function of the leaves"):
        sa.tree.tree_map(3, {"a": 1})


def test_format_spec_of_several_elements_is_refused_as_numpy():
    """``format(x, ".3f")`` of a multi-element array formatted its repr string with a float spec (a raw
    ``ValueError``); NumPy refuses a spec for an array of several values with a ``TypeError``."""
    mesh = sa.Mesh({"row": 2, "col": 2})
    x = sa.asarray(np.array([3.5, 1.0]), dims=("a",), mesh=mesh, layout={"a": "col"})
    with pytest.raises(sa.DTypeError, match="2 elements"):
        format(x, ".3f")
    assert f"{x}" == repr(x) and f"{x.sum():.2f}" == "4.50"
