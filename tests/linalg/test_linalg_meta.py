"""Every ``sa.linalg`` op runs on the ``meta`` backend (shapes only) as it runs on NumPy shards: the same result
dims, shapes, dtypes and layouts, and the same collectives with the same volumes. It raised a bare
``AttributeError`` ("the meta backend has no function 'linalg'"), so a model using linear algebra could not be
profiled or planned."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import shardarray as sa

L = sa.linalg
SQUARE = {"b": 4, "i": 6, "j": 6}
CASES = {
    "qr": (SQUARE, {"b": "row"}, lambda x, r: L.qr(x, ("i", "j"))),
    "qr_complete": (SQUARE, {"b": "row"}, lambda x, r: L.qr(x, ("i", "j"), mode="complete")),
    "qr_tall_split": ({"i": 16, "j": 3}, {"i": ("row", "col")}, lambda x, r: L.qr(x, ("i", "j"))),
    "qr_tall_2d": ({"i": 16, "j": 4}, {"i": "row", "j": "col"}, lambda x, r: L.qr(x, ("i", "j"))),
    "svd": (SQUARE, {"b": "row"}, lambda x, r: L.svd(x, ("i", "j"))),
    "svd_tall_split": ({"i": 16, "j": 3}, {"i": ("row", "col")}, lambda x, r: L.svd(x, ("i", "j"))),
    "svdvals": (SQUARE, {"b": "row"}, lambda x, r: L.svdvals(x, ("i", "j"))),
    "pinv": ({"i": 16, "j": 3}, {"i": "row"}, lambda x, r: L.pinv(x, ("i", "j"))),
    "matrix_rank": (SQUARE, {"b": "row"}, lambda x, r: L.matrix_rank(x, ("i", "j"))),
    "cholesky": (SQUARE, {"b": "row"}, lambda x, r: L.cholesky(x, ("i", "j"))),
    "inv": (SQUARE, {"b": "row"}, lambda x, r: L.inv(x, ("i", "j"))),
    "det": (SQUARE, {"b": "row"}, lambda x, r: L.det(x, ("i", "j"))),
    "slogdet": (SQUARE, {"b": "row"}, lambda x, r: L.slogdet(x, ("i", "j"))),
    "solve": (SQUARE, {"b": "row"}, lambda x, r: L.solve(x, r, ("i", "j"))),
    "eigh": (SQUARE, {"b": "row"}, lambda x, r: L.eigh(x, ("i", "j"))),
    "eigvalsh": (SQUARE, {"b": "row"}, lambda x, r: L.eigvalsh(x, ("i", "j"))),
    "eig": (SQUARE, {"b": "row"}, lambda x, r: L.eig(x, ("i", "j"))),
    "eig_split": (SQUARE, {"i": "row", "j": "col"}, lambda x, r: L.eig(x, ("i", "j"))),
    "eigvals": (SQUARE, {"b": "row"}, lambda x, r: L.eigvals(x, ("i", "j"))),
    "matrix_norm_2": ({"i": 16, "j": 3}, {"i": "row"}, lambda x, r: L.matrix_norm(x, ("i", "j"), ord=2)),
    "vector_norm": (SQUARE, {"b": "row"}, lambda x, r: L.vector_norm(x, "j")),
}


def _spd(sizes):
    """A batch of symmetric positive-definite matrices (the Cholesky paths take them; the others any matrix)."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal(tuple(sizes.values()))
    if sizes.get("i") == sizes.get("j"):
        a = a @ np.swapaxes(a, -1, -2) + 8 * np.eye(sizes["i"])
    return a


def _run(backend, sizes, layout, op, dtype):
    mesh = sa.Mesh({"row": 2, "col": 2}, backend=backend)
    value = _spd(sizes).astype(dtype)
    x = sa.asarray(value, dims=tuple(sizes), mesh=mesh, layout=layout)
    rhs = sa.asarray(np.ones((4, 6, 2), dtype=dtype), dims=("b", "j", "k"), mesh=mesh, layout={"b": "row"})
    if backend == "meta":
        x = sa.zeros(mesh, sizes, dtype=dtype, layout=layout)
        rhs = sa.zeros(mesh, {"b": 4, "j": 6, "k": 2}, dtype=dtype, layout={"b": "row"})
    with warnings.catch_warnings(), sa.comm_log() as log:
        warnings.simplefilter("ignore", L.ReplicatedFallbackWarning)
        out = op(x, rhs)
    outs = out if isinstance(out, tuple) else (out,)
    described = [(o.dims, o.shape, o.dtype, dict(o.layout), o.pending) for o in outs]
    return described, [(r.op, r.axes, r.bytes) for r in log.records]


@pytest.mark.numpy_only(reason="compares the meta backend with NumPy shards")
@pytest.mark.parametrize("dtype", ["float64", "float32", "complex128"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_linalg_runs_on_meta_as_on_numpy(name, dtype):
    sizes, layout, op = CASES[name]
    meta, numpy = _run("meta", sizes, layout, op, dtype), _run("numpy", sizes, layout, op, dtype)
    assert meta[0] == numpy[0]
    assert meta[1] == numpy[1]


@pytest.mark.numpy_only(reason="compares the meta backend with NumPy shards")
def test_a_split_spd_matrix_is_priced_by_the_replicated_path_on_meta():
    """``inv``/``solve`` of a split matrix choose their path on the data (the 2-D Cholesky's positive-definiteness
    test), which a meta array has not: on ``meta`` they run the replicated path (``spd.is_split``), so their results
    come back unsplit, with the allgather that path makes. ``cholesky`` has no other path (a matrix that is not
    positive definite fails on any): on meta too it runs the 2-D algorithm, its result split as on NumPy shards."""
    mesh = sa.Mesh({"row": 2, "col": 2}, backend="meta")
    x = sa.zeros(mesh, {"i": 8, "j": 8}, layout={"i": "row", "j": "col"})
    with warnings.catch_warnings(), sa.comm_log() as log:
        warnings.simplefilter("ignore", L.ReplicatedFallbackWarning)
        out = L.inv(x, ("i", "j"))
    assert out.shape == (8, 8) and out.layout == {}
    assert {r.op for r in log.records} == {"allgather"}
    low = L.cholesky(x, ("i", "j"))
    assert low.shape == (8, 8) and low.layout == {"i": ("row",), "j": ("col",)}
