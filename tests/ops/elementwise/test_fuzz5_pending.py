"""Regressions found by a differential fuzzer of pending sums through the elementwise ops (random programs on sums
over split dims, einsums and matmuls, on meshes 1, 2x2, 4, 2x2x2, 3x2, against NumPy on the gathered values and the
comm log; the bug each test pins is in its docstring)."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import MESH_SHAPES

import shardarray as sa

SHAPES = [*MESH_SHAPES, {"p": 3, "q": 2}]
MESHES = pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s.values())))


def contracted(a, b, shape):
    """``einsum("ik,k->i", a, b)`` on a mesh of ``shape`` with ``k`` split over every mesh axis (uneven for 3x2):
    a sum pending over all of them, in the operands' dtype (an integer one wraps, a bool one is an OR)."""
    mesh = sa.Mesh(shape)
    axes = mesh.axis_names
    x = sa.asarray(a, dims=("i", "k"), mesh=mesh, layout={"k": axes})
    y = sa.asarray(b, dims=("k",), mesh=mesh, layout={"k": axes})
    return sa.einsum(x, y, out=("i",))


def check(got, ref):
    value = got.numpy()
    assert value.dtype == ref.dtype
    np.testing.assert_array_equal(value, ref)


@MESHES
def test_an_integer_sum_resolves_before_an_op_changes_its_dtype(shape):
    """An int8 sum pending over split ``k`` times 0.5 (or over 2, or times an int16 array) kept it pending: each
    device's partial sum was scaled and widened before the sum, so ``100 + 100 + 100 + 100``, which wraps to -112 in
    int8 (NumPy's einsum), came out 200.0 instead of -56.0."""
    a, b = np.full((2, 4), 100, np.int8), np.ones(4, np.int8)
    ref = np.einsum("ik,k->i", a, b)
    mesh = sa.Mesh(shape)
    w = sa.asarray(np.array([1, 3], np.int16), dims=("i",), mesh=mesh)
    with np.errstate(over="ignore"):
        check(contracted(a, b, shape) * 0.5, ref * 0.5)
        check(contracted(a, b, shape) / 2, ref / 2)
        check(contracted(a, b, shape) * w, ref * np.array([1, 3], np.int16))
        for op in (lambda p: p * 3, lambda p: -p, lambda p: p + p):  # int8 stays int8: linear in its own ring
            p = contracted(a, b, shape)
            r = op(p)
            assert r.pending == p.pending
            check(r, op(ref))


@MESHES
def test_a_bool_sum_resolves_unless_the_result_stays_bool(shape):
    """A bool einsum over split ``k`` is pending as an OR of partial results; ``p * 2`` (int64) and ``p * 0.5``
    summed the scaled partials, so four devices' ``True`` gave 8 and 2.0 where NumPy gives 2 and 0.5."""
    a, b = np.ones((2, 4), bool), np.ones(4, bool)
    ref = np.einsum("ik,k->i", a, b)
    check(contracted(a, b, shape) * 2, ref * 2)
    check(contracted(a, b, shape) * 0.5, ref * 0.5)
    check(contracted(a, b, shape) / True, ref / True)
    for op in (lambda p: p * True, lambda p: p + p):  # bool AND and OR distribute over the OR of the partials
        p = contracted(a, b, shape)
        r = op(p)
        assert r.pending == p.pending
        check(r, op(ref))


@MESHES
def test_a_linear_op_on_a_resolved_sum_does_not_reduce_it_again(shape):
    """``where(p > 0, p, -p)`` reduced the partial sums of ``p`` twice: ``p > 0`` resolved ``p``, then ``-p`` was a
    new pending sum of the same partials, reduced again by ``where`` (one allreduce per use); likewise
    ``exp(p) + 2 * p`` and ``(3 * p - p / 2).numpy()`` after ``p.numpy()``."""
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((5, 7)), rng.standard_normal(7)
    ref = a @ b
    programs = [
        (lambda p: sa.where(p > 0, p, -p), np.abs),
        (lambda p: sa.exp(p) + 2 * p, lambda v: np.exp(v) + 2 * v),
        (lambda p: (p.numpy(), 3 * p - p / 2)[1], lambda v: 3 * v - v / 2),
    ]
    for program, numpy_program in programs:
        p = contracted(a, b, shape)
        with sa.comm_log() as log:
            r = program(p)
            value = r.numpy()
        assert len(log.records) == (1 if p.mesh.size > 1 else 0), log.records  # groups of one are not logged
        np.testing.assert_allclose(value, numpy_program(ref), rtol=1e-12, atol=1e-12)
    p = contracted(a, b, shape)
    p.resolve()
    assert (-p).pending == p.pending and (p * 2.0).pending == p.pending  # still pending, only not reduced twice


def test_sum_and_mean_of_a_narrow_integer_or_bool_pending_sum_resolve_it_first():
    """``p.sum()``/``p.mean()`` of an int8 or bool pending sum added the widened partial sums (int64, float64),
    where the value is the sum wrapped in int8 (or an OR for bools): 400 where NumPy gives -112."""
    mesh = sa.Mesh({"all": 4})
    a, b = np.full((2, 4), 100, np.int8), np.ones(4, np.int8)
    p = sa.einsum(
        sa.asarray(a, dims=("i", "k"), mesh=mesh, layout={"k": "all"}),
        sa.asarray(b, dims=("k",), mesh=mesh, layout={"k": "all"}),
        out=("i",),
    )
    assert p.pending
    want = np.einsum("ik,k->i", a, b)
    assert p.sum().numpy() == want.sum() and p.mean().numpy() == want.mean()
    ones = sa.asarray(np.ones(4, bool), dims=("k",), mesh=mesh, layout={"k": "all"})
    q = sa.einsum(ones, ones, out=())
    assert q.sum().numpy() == np.einsum("k,k->", np.ones(4, bool), np.ones(4, bool)).sum()


def test_a_write_into_what_resolve_returned_leaves_the_pending_array_as_it_was():
    """``p.resolve()`` returned the array ``p`` keeps as its resolution: a write into it changed ``p``'s value."""
    mesh = sa.Mesh({"row": 2, "col": 2})
    x = sa.asarray(np.ones((4, 4)), dims=("i", "k"), mesh=mesh, layout={"k": "col"})
    p = x.sum("k")
    r = p.resolve()
    r[{"i": 0}] = 100.0
    np.testing.assert_array_equal(p.numpy(), [4.0] * 4)
    np.testing.assert_array_equal(r.numpy(), [100.0, 4.0, 4.0, 4.0])


def test_unary_plus_is_a_new_array_and_refuses_bools():
    """``+x`` returned ``x`` itself (a later write into one showed in the other) and took bools (NumPy refuses)."""
    mesh = sa.Mesh({"row": 2})
    x = sa.asarray(np.arange(3.0), dims=("i",), mesh=mesh)
    y = +x
    x[{"i": 0}] = 9.0
    assert y is not x and y.numpy()[0] == 0.0
    with pytest.raises(sa.DTypeError):
        +sa.asarray(np.array([True]), dims=("i",), mesh=mesh)


def test_a_resolved_0d_sum_keeps_array_blocks_and_its_dtype():
    """The emulated allreduce of 0-d blocks gave NumPy scalars as blocks, which later ops promote as Python-like
    values: ``(p.resolve() ** 2)`` of an int8 sum came back int64."""
    mesh = sa.Mesh({"all": 4})
    b = sa.asarray(np.ones(4, np.int8), dims=("k",), mesh=mesh, layout={"k": "all"})
    r = sa.einsum(b, b, out=()).resolve()
    assert all(isinstance(s, np.ndarray) for s in r.shards if s is not None) or not isinstance(r.shards[0], np.generic)
    assert (r**2).dtype == np.int8 and (r**2).numpy() == 16
