"""Edges of the core API: values leaving the tape, vjp cotangents, asarray of a ShardArray, NumPy's reduction keywords."""

from __future__ import annotations

import numpy as np
import pytest

import shardarray as sa
from helpers import MESH_SHAPES


@pytest.fixture
def mesh():
    return sa.Mesh({"row": 2, "col": 2})


def _w(mesh):
    return sa.asarray(np.array([1.0, 2.0, 3.0, 4.0]), dims=("io",), mesh=mesh, layout={"io": "col"})


@pytest.mark.parametrize("convert", [
    lambda y: y.numpy(), lambda y: float(y), lambda y: bool(y), lambda y: y.item(), lambda y: np.asarray(y),
    lambda y: int(y), lambda y: f"{y:.3f}",
])
def test_a_value_leaving_the_tape_is_an_error_not_a_zero_gradient(mesh, convert):
    def loss(w):
        s = (w * w).sum()
        convert(s.resolve())
        return s

    with pytest.raises(sa.TapeError, match=r"inside sa.value_and_grad.*sa.stop_gradient"):
        sa.grad(loss)(_w(mesh))
    with pytest.raises(sa.TapeError):
        sa.vjp(lambda w: w * float(w.sum()), _w(mesh))


def test_stop_gradient_reads_a_value_inside_grad(mesh):
    seen = []

    def loss(w):
        s = (w * w).sum()
        seen.append(float(sa.stop_gradient(s)))
        return s

    g = sa.grad(loss)(_w(mesh))
    np.testing.assert_allclose(g.numpy(), [2.0, 4.0, 6.0, 8.0])
    assert seen == [30.0]


def test_after_grad_returns_its_arrays_convert_freely(mesh):
    loss, g = sa.value_and_grad(lambda w: (w * w).sum())(_w(mesh))
    assert float(loss) == 30.0 and g.numpy().tolist() == [2.0, 4.0, 6.0, 8.0]
    (loss, aux), _ = sa.value_and_grad(lambda w: ((w * w).sum(), w * 2.0), has_aux=True)(_w(mesh))
    assert aux.numpy().tolist() == [2.0, 4.0, 6.0, 8.0]


def test_vjp_refuses_a_cotangent_of_the_wrong_size(mesh):
    x = sa.ones(mesh, {"m": 4, "k": 2}, layout={"m": "row"})
    y, pullback = sa.vjp(lambda x: x * 2.0, x)
    with pytest.raises(sa.DimensionError, match=r"'m': 4, 'k': 2.*'m': 3"):
        pullback(sa.ones(mesh, {"m": 3, "k": 2}))
    with pytest.raises(sa.DTypeError, match="floating point"):
        pullback(sa.ones(mesh, {"k": 2, "m": 4}, dtype="int64"))
    dx = pullback(sa.ones(mesh, {"k": 2, "m": 4}, layout={"k": "col"}))  # other order and layout: fine
    np.testing.assert_allclose(dx.numpy(), 2.0)


@pytest.mark.parametrize("shape", MESH_SHAPES, ids=str)
def test_asarray_of_a_shardarray_honours_dims_layout_and_dtype(shape):
    mesh = sa.Mesh(shape)
    axis = mesh.axis_names[0]
    value = np.arange(15.0).reshape(5, 3)
    x = sa.asarray(value, dims=("a", "b"), mesh=mesh, layout={"a": axis})
    y = sa.asarray(x, dims=("p", "q"), mesh=mesh, layout={"q": axis}, dtype="float32")
    assert y.dims == ("p", "q") and y.layout == {"q": (axis,)} and y.dtype == np.float32
    np.testing.assert_array_equal(y.numpy(), value)
    assert sa.asarray(x, mesh=sa.Mesh(shape)).dims == ("a", "b")  # an equal mesh is the same mesh


def test_asarray_moves_a_shardarray_to_another_mesh_by_reshard(mesh):
    x = sa.asarray(np.arange(4.0), dims=("a",), mesh=mesh, layout={"a": "row"})
    y = sa.asarray(x, dims=("a",), mesh=sa.Mesh({"all": 4}), layout={"a": "all"})  # issue 16: sa.reshard
    assert y.mesh == sa.Mesh({"all": 4}) and y.layout == {"a": ("all",)}
    np.testing.assert_array_equal(y.numpy(), np.arange(4.0))
    with pytest.raises(sa.DimensionError, match=r"\('p', 'q'\).*\{'a': 4\}"):
        sa.asarray(x, dims=("p", "q"))


@pytest.mark.parametrize("shape", MESH_SHAPES, ids=str)
def test_numpy_reduction_keywords_and_positions(shape):
    mesh = sa.Mesh(shape)
    value = np.arange(24.0).reshape(2, 3, 4)
    x = sa.asarray(value, dims=("a", "b", "c"), mesh=mesh, layout={"c": mesh.axis_names[-1]})
    np.testing.assert_allclose(np.sum(x, axis=0).numpy(), value.sum(0))
    np.testing.assert_allclose(x.sum(-1).numpy(), value.sum(-1))
    np.testing.assert_allclose(x.mean((0, "c")).numpy(), value.mean((0, 2)))
    np.testing.assert_allclose(np.max(x, axis=1).numpy(), value.max(1))
    np.testing.assert_allclose(x.min(axis=(0, 1, 2)).numpy(), value.min())
    s = np.sum(x)
    assert isinstance(s, sa.ShardArray) and float(s) == value.sum()
    assert np.sum(x, dtype="float32").dtype == np.float32
    with pytest.raises(sa.DimensionError, match=r"position 3 is out of range.*\('a', 'b', 'c'\)"):
        x.sum(3)
    with pytest.raises(sa.DTypeError, match="out="):
        np.sum(x, out=np.empty(()))


def test_scalar_conversions_check_the_size_without_communication(mesh):
    x = sa.ones(mesh, {"a": 4, "b": 6}, layout={"a": "row", "b": "col"})
    for convert in (float, bool, int):
        with sa.comm_log() as log, pytest.raises(sa.DimensionError, match=r"a=4, b=6.*24 elements.*x.sum\(\)"):
            convert(x)
        assert len(log) == 0
    one = sa.ones(mesh, {"a": 1}, layout={"a": "row"})
    assert float(one) == 1.0 and bool(one) and f"{one.sum():.2f}" == "1.00"
    assert [0, 1, 2][sa.asarray(np.int64(2), mesh=mesh)] == 2


def test_einsum_with_a_matmul_algorithm_needs_two_operands(mesh):
    x = sa.ones(mesh, {"m": 4, "k": 4})
    with pytest.raises(sa.LayoutError, match=r"algorithm='summa'.*exactly two operands; got 1"):
        sa.einsum(x, algorithm="summa")


def test_show_and_stop_gradient_of_a_numpy_array_say_how_to_make_a_shardarray():
    with pytest.raises(sa.DTypeError, match=r"ndarray of shape \(3,\).*sa.asarray"):
        sa.show(np.ones(3))
    with pytest.raises(sa.DTypeError, match=r"sa.stop_gradient.*sa.asarray"):
        sa.stop_gradient(np.ones(3))
