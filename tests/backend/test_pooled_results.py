"""Big NumPy results of the elementwise ops and casts go into reused host buffers (``backend.host_buffers``:
``ufunc``, ``astype``): the same values bit for bit, and never a buffer something still reads."""

from __future__ import annotations

import numpy as np
import pytest

import shardarray as sa
import shardarray.array_api as xp
from shardarray.backend import host_buffers
from shardarray.dtypes import BFLOAT16
from shardarray.ops.elementwise import arithmetic

BIG = (512, 300)  # 1.2 MB of float64: past MIN_BYTES


def _address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def _root(a: np.ndarray) -> np.ndarray:
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


@pytest.mark.parametrize("fn", list(arithmetic.POOLED), ids=lambda f: arithmetic.POOLED[f].__name__)
def test_every_pooled_block_is_its_ufunc_bit_for_bit(fn):
    """The pooled form of each block function gives the plain one's values and dtype (arrays, scalars, broadcasts)."""
    rng = np.random.default_rng(0)
    a = np.abs(rng.standard_normal(BIG)) + 0.5
    b = np.abs(rng.standard_normal(BIG[1])) + 0.5
    pooled = arithmetic.POOLED[fn]
    unary = pooled.__name__ in {f"pooled_{u}" for u in ("negative", "exp", "log", "sqrt", "absolute")}
    cases = [(a,)] if unary else [(a, a), (a, b), (a, 2.0), (3, a), (a.astype(np.float32), 2.0)]
    for operands in cases:
        want = fn(np, *operands)
        got = pooled(np, *operands)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
        assert (got.base is not None) == (got.nbytes >= host_buffers.MIN_BYTES)  # (big: a view of a pooled buffer)


def test_a_buffer_is_not_reused_while_a_block_or_a_view_of_it_lives():
    a = np.ones(BIG)
    first = host_buffers.ufunc(np.multiply, a, 2.0)
    view = first[::2, 1:]  # (a view of the block holds the buffer too)
    del first
    second = host_buffers.ufunc(np.add, a, a)
    assert not np.shares_memory(second, view)
    second[...] = -1.0
    assert (view == 2.0).all()
    root = _address(_root(view))
    del view
    third = host_buffers.ufunc(np.subtract, a, 5.0)  # the first buffer is free now: reused
    assert _address(_root(third)) == root
    assert (third == -4.0).all() and (second == -1.0).all()


def test_array_results_on_the_mesh_reuse_the_buffers_of_dead_ones():
    """``x - y`` of big blocks on an emulated mesh: NumPy's values, and a chain reuses the buffers of the results it
    dropped (no fresh pages per op), while every array still held keeps its own values."""
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((1024, 600)), rng.standard_normal(600)
    mesh = sa.Mesh({"row": 2, "col": 2})
    x, y = xp.asarray(a, device=mesh), xp.asarray(b, device=mesh)
    if type(x.shards[0]) is not np.ndarray:
        pytest.skip("CuPy blocks: CuPy's own memory pool reuses device memory; this pool is for NumPy blocks")
    kept = x - y
    roots = set()
    for _ in range(4):
        z = x - y
        roots.add(_address(_root(z.shards[0])))
        del z
    assert len(roots) == 1  # (each dropped result's buffer takes the next)
    assert _address(_root(kept.shards[0])) not in roots
    z = (x - y) - (x - y)
    np.testing.assert_array_equal(z.numpy(), np.zeros_like(a))
    np.testing.assert_array_equal(kept.numpy(), a - b)


def test_small_results_and_refused_operands_are_numpys_own():
    assert host_buffers.ufunc(np.multiply, np.ones(10), 2.0).base is None
    with pytest.raises(TypeError):  # (no loop: the ufunc's own error)
        host_buffers.ufunc(np.add, np.ones(BIG), "a")
    with pytest.raises(ValueError):  # (shapes that do not broadcast: NumPy's error)
        host_buffers.ufunc(np.add, np.ones(BIG), np.ones(7))


@pytest.mark.parametrize("src, dst", [("float64", "float32"), ("float64", "int32"), ("bool", "float64"),
                                      ("int64", "uint8"), ("complex128", "bool"), ("float32", "bfloat16")])  # fmt: skip
def test_astype_is_numpys_cast_bit_for_bit(src, dst):
    rng = np.random.default_rng(2)
    a = (rng.standard_normal((4 * BIG[0], BIG[1])) * 300).astype(src)
    want = a.astype(BFLOAT16 if dst == "bfloat16" else dst)
    got = host_buffers.astype(a, want.dtype)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))
    pooled = want.dtype.kind in "biufc" and want.nbytes >= host_buffers.MIN_BYTES  # (NumPy's dtypes, big results)
    assert (got.base is not None) == pooled
