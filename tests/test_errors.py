"""One test per misuse case: the exception type, and a message that names the culprit."""

from __future__ import annotations

import numpy as np
import pytest

import shardarray as sa


@pytest.fixture
def mesh():
    return sa.Mesh({"row": 2, "col": 2})


def x_of(mesh, **kw):
    return sa.zeros(mesh, {"batch": 4, "io": 6}, **kw)


def test_unknown_axis_in_layout(mesh):
    with pytest.raises(sa.LayoutError, match=r"'planes'.*\('row', 'col'\)"):
        x_of(mesh, layout={"batch": "planes"})


def test_unknown_dim_in_layout(mesh):
    with pytest.raises(sa.LayoutError, match=r"'hidden'.*\('batch', 'io'\)"):
        x_of(mesh, layout={"hidden": "row"})


def test_one_axis_used_twice(mesh):
    with pytest.raises(sa.LayoutError, match=r"'batch'.*'io'.*'row'.*8\.5"):
        x_of(mesh, layout={"batch": "row", "io": "row"})


def test_axis_repeated_within_a_dim(mesh):
    with pytest.raises(sa.LayoutError, match=r"dim 'batch', repeats a mesh axis \('row', 'row'\)"):
        x_of(mesh, layout={"batch": ("row", "row")})


def test_duplicate_dims(mesh):
    with pytest.raises(sa.DimensionError, match=r"repeat \['a'\]"):
        sa.asarray(np.zeros((2, 2)), dims=("a", "a"), mesh=mesh)


def test_size_mismatch_of_same_named_dims(mesh):
    a = sa.zeros(mesh, {"batch": 4})
    b = sa.zeros(mesh, {"batch": 5})
    with pytest.raises(sa.DimensionError, match=r"'batch' has size 4.*size 5"):
        a + b
    with pytest.raises(sa.DimensionError, match="'batch'"):
        sa.einsum(a, b)


def test_mesh_mismatch(mesh):
    other = sa.Mesh({"all": 4})
    with pytest.raises(sa.MeshError, match=r"Mesh\(\{'all': 4\}(, backend='cupy')?\)"):  # either session backend
        x_of(mesh) + x_of(other)


def test_dims_ndim_mismatch(mesh):
    with pytest.raises(sa.DimensionError, match=r"\('a',\).*shape \(2, 3\)"):
        sa.asarray(np.zeros((2, 3)), dims=("a",), mesh=mesh)


def test_asarray_without_dims(mesh):
    with pytest.raises(sa.DimensionError, match="needs dims"):
        sa.asarray(np.zeros((2, 3)), mesh=mesh)


def test_einsum_output_naming_no_input_dim(mesh):
    with pytest.raises(sa.DimensionError, match="output dim 'hidden'"):
        sa.einsum(x_of(mesh), out=("batch", "hidden"))


def test_einsum_term_not_matching_operand(mesh):
    with pytest.raises(sa.DimensionError, match=r"'batch model'.*\('batch', 'io'\)"):
        sa.einsum("batch model -> batch", x_of(mesh))


def test_einsum_operand_count(mesh):
    with pytest.raises(sa.DimensionError, match="names 2 operand"):
        sa.einsum("batch io, io h -> batch", x_of(mesh))


def test_mesh_bad_axis_size():
    with pytest.raises(sa.MeshError, match="'row' has size 0"):
        sa.Mesh({"row": 0})


def test_mesh_duplicate_axis():
    with pytest.raises(sa.MeshError, match="'a' appears twice"):
        sa.Mesh([("a", 2), ("a", 2)])


def test_unknown_backend():
    with pytest.raises(sa.MeshError, match="unknown backend 'tpu'"):
        sa.Mesh({"a": 2}, backend="tpu")


def test_rules_with_unknown_axis():
    with pytest.raises(sa.LayoutError, match="'batch' -> 'rows'.*'rows'"):
        sa.Mesh({"row": 2}, rules={"batch": "rows"})


def test_numpy_on_meta_backend():
    m = sa.Mesh({"row": 2, "col": 2}, backend="meta")
    with pytest.raises(sa.BackendError, match="meta"):
        x_of(m).numpy()
    with pytest.raises(sa.BackendError):
        np.asarray(x_of(m))


def test_reduce_over_unknown_dim(mesh):
    with pytest.raises(sa.DimensionError, match=r"'hidden'.*\('batch', 'io'\)"):
        x_of(mesh).sum("hidden")


def test_rename_errors(mesh):
    with pytest.raises(sa.DimensionError, match="'nope'"):
        x_of(mesh).rename({"nope": "x"})
    with pytest.raises(sa.DimensionError, match=r"repeat \['io'\]"):
        x_of(mesh).rename({"batch": "io"})


def test_transpose_not_a_permutation(mesh):
    with pytest.raises(sa.DimensionError, match="not a permutation"):
        x_of(mesh).transpose("batch", "batch")


def test_unknown_dtype(mesh):
    with pytest.raises(sa.DTypeError, match="'object'"):
        x_of(mesh, dtype="object")
    with pytest.raises(sa.DTypeError, match="unknown dtype"):
        x_of(mesh, dtype="floaty")


def test_random_needs_float_dtype(mesh):
    with pytest.raises(sa.DTypeError, match="'int32' is not a float"):
        sa.random.normal(mesh, {"a": 3}, dtype="int32")


def test_negative_size(mesh):
    with pytest.raises(sa.DimensionError, match="'a'.*-1"):
        sa.zeros(mesh, {"a": -1})


def test_where_needs_bool_condition(mesh):
    x = x_of(mesh)
    with pytest.raises(sa.DTypeError, match="bool"):
        sa.where(x, x, 0.0)


def test_bad_operand_type(mesh):
    with pytest.raises(sa.DTypeError, match="str"):
        x_of(mesh) + "a"


def test_sizes_not_a_dict(mesh):
    with pytest.raises(sa.DimensionError, match="dict"):
        sa.zeros(mesh, [4, 6])


def test_mesh_argument_not_a_mesh():
    with pytest.raises(sa.MeshError, match="needs a sa.Mesh"):
        sa.zeros({"row": 2}, {"a": 2})


def test_errors_are_value_or_type_errors():
    assert issubclass(sa.LayoutError, ValueError) and issubclass(sa.DimensionError, ValueError)
    assert issubclass(sa.MeshError, ValueError) and issubclass(sa.DTypeError, TypeError)
    assert issubclass(sa.BackendError, TypeError)


def test_out_of_bounds_indices_and_axes_are_index_errors(mesh):
    """An index or axis out of range raises ``sa.OutOfBoundsError``: a ``DimensionError`` that is also the
    ``IndexError`` NumPy raises there, so code written for NumPy (``except IndexError``) catches it. (They were
    ``DimensionError`` only.)"""
    import shardarray.array_api as xp

    h = np.arange(12.0).reshape(3, 4)
    x = sa.asarray(h, dims=("a", "b"), mesh=mesh, layout={"a": "row"})
    with sa.default_mesh(mesh):
        a = xp.asarray(h)
        cases = {
            "a[5]": (lambda: a[5], lambda: h[5]),
            "a[:, -9]": (lambda: a[:, -9], lambda: h[:, -9]),
            "a[[0, 5]]": (lambda: a[[0, 5]], lambda: h[[0, 5]]),
            # (ids made on a GPU are checked there, and the error raised at the next read of a value)
            "take": (lambda: xp.take(a, xp.asarray([7]), axis=0).numpy(), lambda: np.take(h, [7], axis=0)),
            "np.take": (lambda: np.take(a, [-9], axis=1), lambda: np.take(h, [-9], axis=1)),
            "item": (lambda: a.item(99), lambda: h.item(99)),
            "sum axis": (lambda: xp.sum(a, axis=3), lambda: np.sum(h, axis=3)),
            "expand_dims": (lambda: xp.expand_dims(a, axis=5), lambda: np.expand_dims(h, axis=5)),
            "delete": (lambda: np.delete(a, 7, axis=0), lambda: np.delete(h, 7, axis=0)),
            "named isel": (lambda: x.isel({"a": 3}), lambda: h[3]),
            "named item": (lambda: x.item(0, 4), lambda: h.item(0, 4)),
        }
        for label, (ours, numpys) in cases.items():
            with pytest.raises(IndexError):
                numpys()
            with pytest.raises(sa.OutOfBoundsError) as e:
                ours()
            assert isinstance(e.value, sa.DimensionError) and isinstance(e.value, IndexError), label
