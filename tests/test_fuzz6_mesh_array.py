"""Regressions found by a differential fuzzer of meshes, layouts, resharding and the array object's Python protocols
(``in``, ``int``/``float``/``operator.index``, ``astype``; ``Mesh`` construction and lookups) on meshes 1, 2x2, 4,
2x2x2, 3x2, named and positional arrays, against NumPy; the bug each test pins is in its docstring."""

from __future__ import annotations

import operator

import numpy as np
import pytest
from helpers import MESH_SHAPES

import shardarray as sa
import shardarray.array_api as xp

SHAPES = [*MESH_SHAPES, {"p": 3, "q": 2}]
MESHES = pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s.values())))


def named(values, shape):
    """``values`` as a named array with its first dim split (unevenly) over the mesh's first axis."""
    values = np.asarray(values)
    mesh = sa.Mesh(shape)
    dims = ("i", "j", "k")[: values.ndim]
    return sa.asarray(values, dims=dims, mesh=mesh, layout={"i": mesh.axis_names[0]} if dims else {})


@MESHES
@pytest.mark.parametrize("ndim", [0, 1, 2, 3])
def test_in_on_a_named_array_is_numpys_any_of_equal(shape, ndim):
    """``v in x`` on a named array iterated over its rows and took ``bool`` of each, so a 0-d array raised Python's
    "not iterable" TypeError and an array of 2+ dims a DimensionError; NumPy answers ``(x == v).any()``."""
    shape_ = (5, 3, 2)[:ndim]
    values = np.arange(float(np.prod(shape_))).reshape(shape_)
    values.reshape(-1)[-1] = np.nan
    x = named(values, shape)
    for v in (values.reshape(-1)[0], values.reshape(-1)[values.size // 2], 1000.0, np.nan):
        assert (v in x) == (v in values)


@MESHES
@pytest.mark.parametrize("positional", [False, True])
def test_operator_index_refuses_bool_arrays_as_numpy(shape, positional):
    """``operator.index`` of a bool array returned 0 or 1; NumPy 2 (and the array API standard) take only integer
    arrays, so ``range(x)`` or ``seq[x]`` with a mask value raised nothing."""
    mesh = sa.Mesh(shape)
    x = xp.asarray(True, device=mesh) if positional else sa.asarray(np.array(True), dims=(), mesh=mesh)
    with pytest.raises(TypeError):
        operator.index(np.array(True))
    with pytest.raises(sa.DTypeError, match="integer arrays"):
        operator.index(x)
    three = xp.asarray(3, device=mesh) if positional else sa.asarray(np.array(3), dims=(), mesh=mesh)
    assert operator.index(three) == 3


@MESHES
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_int_and_float_of_a_complex_array_are_typed_errors(shape, dtype):
    """``int(x)``/``float(x)`` of a complex array raised Python's bare TypeError from inside ``ShardArray``; now a
    ``DTypeError`` (a TypeError, as NumPy's) that says what to do. ``complex(x)`` still works."""
    x = named(np.array(1.5 + 2j, dtype=dtype), shape)
    for f in (int, float):
        with pytest.raises(TypeError):
            f(np.array(1.5 + 2j, dtype=dtype))
        with pytest.raises(sa.DTypeError, match="complex"):
            f(x)
    assert complex(x) == 1.5 + 2j


@MESHES
def test_astype_to_the_same_dtype_is_a_copy(shape):
    """A named array's ``x.astype(x.dtype)`` returned ``x`` itself, so a write into the "copy" changed ``x``
    (NumPy's ``astype`` copies unless ``copy=False``); ``copy=`` was refused with a bare TypeError."""
    values = np.arange(15.0).reshape(5, 3)
    x = named(values, shape)
    y = x.astype("float64")
    y[{"i": 0}] = -1.0
    np.testing.assert_array_equal(x.numpy(), values)
    assert x.astype(np.float64, copy=False) is x
    z = x.astype("float32", copy=False)
    assert z.dtype == np.float32 and type(z) is sa.ShardArray
    np.testing.assert_array_equal(z.numpy(), values.astype("float32"))


@MESHES
def test_mesh_lookups_with_bad_arguments_raise_typed_errors(shape):
    """``coords``, ``device_at``, ``axis_size`` and ``axes_size`` raised a bare TypeError or KeyError for a
    non-integer device or coordinate, a non-dict, an unhashable or unknown axis; ``axes_size("ab")`` multiplied
    the sizes of axes ``a`` and ``b`` (a string iterated by character)."""
    mesh = sa.Mesh(shape)
    first = mesh.axis_names[0]
    zero = {a: 0 for a in mesh.axis_names}
    for bad in (1.5, "1", None, True):
        with pytest.raises(sa.MeshError):
            mesh.coords(bad)
    assert mesh.coords(np.int64(mesh.size - 1)) == mesh.coords(mesh.size - 1)
    for bad in (None, [0], {**zero, first: "0"}, {**zero, first: 0.5}, {**zero, "nope": 0}):
        with pytest.raises(sa.MeshError):
            mesh.device_at(bad)
    assert mesh.device_at({a: np.int64(0) for a in mesh.axis_names}) == 0
    with pytest.raises(sa.LayoutError, match="nope"):
        mesh.axes_size(["nope"])
    with pytest.raises(sa.LayoutError):
        mesh.axis_size([first])
    with pytest.raises(sa.LayoutError, match="'ab'"):
        sa.Mesh({"a": 2, "b": 3}).axes_size("ab")
    assert mesh.axes_size(first) == mesh.shape[first]
    assert mesh.axes_size(mesh.axis_names) == mesh.size


def test_mesh_axis_names_are_python_strings():
    """A ``np.str_`` axis name (from a NumPy array of names) was kept as it was, so the mesh's repr, shape and
    layouts spelled ``np.str_('row')`` and the repr did not evaluate back to the mesh."""
    names = np.array(["row", "col"])
    mesh = sa.Mesh({names[0]: 2, names[1]: 2})
    assert all(type(a) is str for a in mesh.axis_names)
    assert repr(mesh).startswith("Mesh({'row': 2, 'col': 2}")
    assert eval(repr(mesh), {"Mesh": sa.Mesh}) == mesh


@MESHES
def test_a_set_of_mesh_axes_is_refused_in_layouts_and_rules(shape):
    """A layout value or rule given as a set of axes was accepted in the set's iteration order, which differs
    between processes (string hashing), so the major axis of a split, and the blocks each process holds, were
    arbitrary; it is now a ``LayoutError`` asking for a tuple. A one-axis tuple or name works as before."""
    mesh = sa.Mesh(shape)
    axes = set(mesh.axis_names[:2])
    with pytest.raises(sa.LayoutError, match="set"):
        sa.zeros(mesh, {"i": 6, "j": 4}, layout={"i": axes})
    with pytest.raises(sa.LayoutError, match="set"):
        sa.Mesh(shape, rules={"i": frozenset(axes)})
    x = sa.asarray(np.arange(24.0).reshape(6, 4), dims=("i", "j"), mesh=mesh, layout={"i": mesh.axis_names[:2]})
    assert x.layout == {"i": tuple(mesh.axis_names[:2])}
    with pytest.raises(sa.LayoutError, match="set"):
        sa.relayout(x, {"j": axes})
    np.testing.assert_array_equal(sa.relayout(x, {"j": mesh.axis_names[0]}).numpy(), np.arange(24.0).reshape(6, 4))


def test_reshard_to_an_equal_mesh_with_other_rules_lives_on_the_target() -> None:
    """Meshes equal but for their rules: the result is on the target mesh, so later ops follow its rules (it stayed
    on the source mesh, with the target's layout)."""
    m1 = sa.Mesh({"row": 2, "col": 2}, rules={"batch": "row"})
    m2 = sa.Mesh({"row": 2, "col": 2}, rules={"batch": "col"})
    x = sa.asarray(np.arange(8.0), dims=("batch",), mesh=m1)
    y = sa.reshard(x, m2)
    assert y.mesh is m2 and y.layout == {"batch": ("col",)} and (y + 1).layout == {"batch": ("col",)}
    np.testing.assert_array_equal(y.numpy(), np.arange(8.0))
    g = sa.grad(lambda p: (sa.reshard(p, m2) * 2.0).sum())(x)
    assert g.mesh is m1
    np.testing.assert_array_equal(g.numpy(), np.full(8, 2.0))


def test_numpy_string_dim_names_are_python_strings() -> None:
    """Dims given as a NumPy string array (or np.str_ in einsum's out=) are stored as str, as the axis names are."""
    mesh = sa.Mesh({"row": 2, "col": 2})
    x = sa.asarray(np.ones((2, 3)), dims=np.array(["a", "b"]), mesh=mesh, layout={"a": "row"})
    assert all(type(d) is str for d in x.dims) and "np.str_" not in repr(x)
    y = sa.einsum(x, sa.ones(mesh, {"b": 3}), out=np.array(["a"]))
    assert all(type(d) is str for d in y.dims) and all(type(d) is str for d in y.layout)
