"""Regressions found by differential fuzzing of einsum, the matmul algorithms, relayout and the fused kernels
(round 6)."""

from __future__ import annotations

import numpy as np
import pytest

import shardarray as sa

MESHES = [{"x": 1}, {"row": 2, "col": 2}, {"a": 4}, {"row": 2, "col": 2, "dep": 2}, {"row": 3, "col": 2}]


@pytest.mark.parametrize("shape", MESHES, ids=str)
@pytest.mark.parametrize("sizes", [(0, 0), (0, 2, 0)], ids=str)
@pytest.mark.parametrize("split", [False, True])
def test_fused_cross_entropy_of_no_rows_of_no_entries_is_empty(shape, sizes, split):
    # logits (batch 0, vocab 0): np.max of a block with an empty last axis raised NumPy's ValueError in the fused
    # NumPy path, and its gradient's reshape to (-1, 0) another; the loss is empty and the gradient empty, as the
    # unfused path and the CUDA kernel give
    mesh = sa.Mesh(shape)
    dims = ("batch", "vocab") if len(sizes) == 2 else ("batch", "seq", "vocab")
    layout = {"batch": next(iter(shape))} if split else {}
    logits = sa.asarray(np.zeros(sizes), dims=dims, mesh=mesh, layout=layout)
    targets = sa.asarray(np.zeros(sizes[:-1], dtype=np.int64), dims=dims[:-1], mesh=mesh, layout=layout)
    loss = sa.nn.cross_entropy(logits, targets)
    assert loss.dims == dims[:-1] and loss.shape == sizes[:-1] and loss.dtype == np.float64
    value, grad = sa.value_and_grad(lambda x: sa.nn.cross_entropy(x, targets).sum())(logits)
    assert float(value.numpy()) == 0.0
    assert grad.shape == sizes and grad.layout == logits.layout


@pytest.mark.parametrize("shape", [{"row": 2, "col": 2}, {"row": 2, "col": 2, "dep": 2}], ids=str)
@pytest.mark.parametrize("algorithm", ["auto", "summa", "allreduce"])
def test_einsum_over_more_dims_than_letters_is_a_dimension_error_for_every_algorithm(shape, algorithm):
    # SUMMA's pattern with 55 extra size-1 dims: its local equations ran out of letters (a raw IndexError from
    # summa.equations) where the allreduce algorithm refused the einsum with a DimensionError
    mesh = sa.Mesh(shape)
    extra = tuple(f"e{i}" for i in range(55))
    a = sa.asarray(np.ones((2, 2) + (1,) * 55), dims=("m", "k", *extra), mesh=mesh, layout={"m": "row", "k": "col"})
    b = sa.asarray(np.ones((2, 2)), dims=("k", "n"), mesh=mesh, layout={"k": "row", "n": "col"})
    with pytest.raises(sa.DimensionError, match="at most 52"):
        sa.einsum(a, b, algorithm=algorithm)
