"""Misuse of sa.linalg and xp.linalg: wrong dims, non-square matrices, int dtypes, bad modes and orders."""

from __future__ import annotations

import numpy as np
from misuse import Case

import shardarray as sa
import shardarray.array_api as xp

M = sa.Mesh({"row": 2, "col": 2})
A = sa.asarray(np.ones((4, 3)), dims=("i", "j"), mesh=M, layout={"i": "row"})
SQ = sa.asarray(np.eye(3), dims=("i", "j"), mesh=M)
V = sa.asarray(np.ones(4), dims=("i",), mesh=M)
I = sa.asarray(np.ones((3, 3), dtype=np.int64), dims=("i", "j"), mesh=M)
B = sa.asarray(np.ones((4, 1)), dims=("j", "k"), mesh=M)
NPD = sa.asarray(-np.eye(4), dims=("i", "j"), mesh=M, layout={"i": "row", "j": "col"})
W = sa.asarray(np.ones((3, 4)), dims=("i", "j"), mesh=M)

CASES = [
    Case("linalg-qr-vector", lambda: sa.linalg.qr(V), sa.DimensionError, ("'i': 4", "at least 2 dims"), ("sa.expand_dims",)),
    Case("linalg-qr-int", lambda: sa.linalg.qr(I), sa.DTypeError, ("int64",), ("astype",)),
    Case("linalg-qr-mode", lambda: sa.linalg.qr(A, mode="full"), sa.ArgumentError, ("'full'",), ("'reduced'", "'complete'")),
    Case("linalg-qr-new-taken", lambda: sa.linalg.qr(A, new="i"), sa.DimensionError, ("new='i'",), ("another name",)),
    Case("linalg-svd-new-taken", lambda: sa.linalg.svd(sa.linalg.qr(A).R), sa.DimensionError,
         ("new='j_k'", "'j_k': 3"), ("another name",)),
    Case("linalg-svdvals-new-taken", lambda: sa.linalg.svdvals(A, new="i"), sa.DimensionError, ("new='i'",),
         ("another name",)),
    Case("linalg-svd-full-new-taken", lambda: sa.linalg.svd(A.rename({"i": "k_u"}), full_matrices=True, new="k"),
         sa.DimensionError, ("'k_u'", "full_matrices=True"), ("another name",)),
    Case("linalg-dims-three", lambda: sa.linalg.svd(A, ("i", "j", "i")), sa.DimensionError, ("'i'",), ()),
    Case("linalg-dims-unknown", lambda: sa.linalg.svdvals(A, ("i", "zz")), sa.DimensionError, ("'zz'",), ("names or positions",)),
    Case("linalg-inv-not-square", lambda: sa.linalg.inv(A), sa.DimensionError, ("'i' (4)", "'j' (3)"), ("pinv",)),
    Case("linalg-solve-rows", lambda: sa.linalg.solve(SQ, B), sa.DimensionError, ("'j'", "size 4"), ("must match",)),
    Case("linalg-solve-not-array", lambda: sa.linalg.solve(SQ, np.ones((3, 1))), sa.DTypeError, ("b", "ndarray"), ("sa.asarray",)),
    Case("linalg-matrix-norm-ord", lambda: sa.linalg.matrix_norm(A, ord=3), sa.ArgumentError, ("got 3",), ("'fro'", "'nuc'")),
    Case("linalg-vector-norm-ord", lambda: sa.linalg.vector_norm(A, ord="fro"), sa.ArgumentError, ("'fro'",), ("a number",)),
    Case("xp-linalg-cholesky-1d", lambda: xp.linalg.cholesky(xp.asarray(np.ones(3), device=M)), sa.DimensionError,
         ("(3,)",), ("at least 2",)),
    Case("xp-linalg-cross-size", lambda: xp.linalg.cross(xp.asarray(np.ones(4), device=M), xp.asarray(np.ones(4), device=M)),
         sa.DimensionError, ("(4,)",), ("size 3",)),
    Case("xp-linalg-power-n", lambda: xp.linalg.matrix_power(xp.asarray(np.eye(2), device=M), 1.5), sa.ArgumentError,
         ("1.5",), ("an int",)),
    Case("linalg-cholesky-panel", lambda: sa.linalg.cholesky(SQ, panel=0), sa.ArgumentError, ("panel", "0"),
         ("positive int",)),
    Case("linalg-cholesky-not-pd", lambda: sa.linalg.cholesky(NPD), sa.linalg.LinAlgError, ("4x4", "not positive definite"),
         ("eigh", "solve")),
    Case("linalg-qr-grad-wide", lambda: sa.grad(lambda p: sa.sum(sa.linalg.qr(p).R))(W), sa.ArgumentError,
         ("3x4", "'i'", "'j'"), ("mode='reduced'", "sa.stop_gradient")),
    Case("xp-linalg-det-int", lambda: xp.linalg.det(xp.asarray(np.eye(2, dtype=np.int64), device=M)), sa.DTypeError,
         ("int64",), ("xp.astype",)),
]
