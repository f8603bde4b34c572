"""Misuse cases of the NumPy/Python protocols and the default mesh.

Each call is a mistake a new user makes; the error must name the culprit
(the keyword, axis, dims or variable) and the way out.
"""

from __future__ import annotations

import os

import numpy as np
from misuse import Case

import shardarray as sa

MESH = sa.Mesh({"row": 2, "col": 2})


def _x():
    return sa.asarray(np.arange(12.0).reshape(4, 3), dims=("batch", "io"), mesh=MESH, layout={"batch": "row"})


def _scalar():
    return sa.sum(_x())


def _with_env(value):
    def call():
        old = os.environ.get("SHARDARRAY_MESH")
        os.environ["SHARDARRAY_MESH"] = value
        try:
            return sa.get_default_mesh()
        finally:
            if old is None:
                del os.environ["SHARDARRAY_MESH"]
            else:
                os.environ["SHARDARRAY_MESH"] = old

    return call


def _enter(mesh):
    with sa.default_mesh(mesh):
        pass


CASES = [
    # ---------------------------------------------------------------- ufuncs
    Case("protocols-ufunc-out", lambda: np.exp(_x(), out=np.empty((4, 3))), sa.DTypeError,
         names=("np.exp", "out="), fix=("returned array",)),
    Case("protocols-ufunc-where", lambda: np.add(_x(), 1.0, where=np.ones((4, 3), bool)), sa.ArgumentError,
         names=("np.add", "where="), fix=("without where=",)),
    Case("protocols-ufunc-numpy-operand", lambda: np.add(_x(), np.ones((4, 3))), sa.DTypeError,
         names=("np.add", "operand 1", "(4, 3)"), fix=("sa.asarray", "np.asarray(x)")),
    Case("protocols-ndarray-plus-shardarray", lambda: np.ones(3) + _x(), sa.DTypeError,
         names=("operand 0", "(3,)"), fix=("sa.asarray",)),
    # ---------------------------------------------------------------- functions
    Case("protocols-sum-keepdims", lambda: np.sum(_x(), axis=0, keepdims=True), sa.ArgumentError,
         names=("np.sum", "keepdims=True"), fix=("without keepdims=",)),
    Case("protocols-sum-out", lambda: np.sum(_x(), axis=0, out=np.empty(3)), sa.DTypeError,
         names=("np.sum", "out="), fix=("returned array",)),
    Case("protocols-mean-axis-out-of-range", lambda: np.mean(_x(), axis=2), sa.DimensionError,
         names=("position 2", "('batch', 'io')"), fix=("dim name",)),
    Case("protocols-argmax-flatten", lambda: np.argmax(_x()), sa.ArgumentError,
         names=("np.argmax", "axis=None", "('batch', 'io')"), fix=("give axis=", "merge_dims")),
    Case("protocols-concatenate-axis-none", lambda: np.concatenate([_x(), _x()], axis=None), sa.ArgumentError,
         names=("np.concatenate", "axis=None"), fix=("give axis=",)),
    Case("protocols-stack-axis", lambda: np.stack([_x(), _x()], axis=5), sa.DimensionError,
         names=("np.stack", "axis 5", "('batch', 'io')"), fix=("0..2",)),
    Case("protocols-expand-dims-axis", lambda: np.expand_dims(_x(), 7), sa.DimensionError,
         names=("np.expand_dims", "7", "('batch', 'io')"), fix=("-3..2",)),
    Case("protocols-transpose-axes", lambda: np.transpose(_x(), (0,)), sa.DimensionError,
         names=("np.transpose", "(0,)", "('batch', 'io')"), fix=("every axis",)),
    Case("protocols-einsum-terms", lambda: np.einsum("ij,jk->ik", _x()), sa.ArgumentError,
         names=("np.einsum", "'ij,jk->ik'"), fix=("one term per operand", "sa.einsum")),
    Case("protocols-einsum-term-length", lambda: np.einsum("i->i", _x()), sa.DimensionError,
         names=("'i'", "('batch', 'io')"), fix=("each of the 2 axes",)),
    Case("protocols-zeros-like-shape", lambda: np.zeros_like(_x(), shape=(2,)), sa.ArgumentError,
         names=("np.zeros_like", "shape=(2,)", "(4, 3)"), fix=("sa.full",)),
    Case("protocols-round-ndigits", lambda: round(_x(), "2"), sa.ArgumentError,
         names=("ndigits", "'2'"), fix=("integer",)),
    # ---------------------------------------------------------------- Python protocols
    Case("protocols-len-0d", lambda: len(_scalar()), sa.DimensionError,
         names=("len()", "0-d"), fix=("x.item()",)),
    Case("protocols-iter-0d", lambda: iter(_scalar()), sa.DimensionError,
         names=("iteration", "0-d"), fix=("x.item()",)),
    # ---------------------------------------------------------------- default mesh
    Case("protocols-env-mesh-no-size", _with_env("row,col=2"), sa.MeshError,
         names=("SHARDARRAY_MESH", "'row'"), fix=('SHARDARRAY_MESH="row=2,col=2"',)),
    Case("protocols-env-mesh-bad-size", _with_env("row=two"), sa.MeshError,
         names=("SHARDARRAY_MESH", "'two'", "'row'"), fix=("integer", "row=2,col=2")),
    Case("protocols-env-mesh-zero", _with_env("row=0"), sa.MeshError,
         names=("SHARDARRAY_MESH", "size 0"), fix=(">= 1",)),
    Case("protocols-env-mesh-repeated", _with_env("a=2,a=2"), sa.MeshError,
         names=("SHARDARRAY_MESH", "'a'", "twice"), fix=("once",)),
    Case("protocols-default-mesh-dict", lambda: _enter({"row": 2}), sa.MeshError,
         names=("sa.default_mesh", "dict"), fix=("sa.Mesh(",)),
    Case("protocols-set-default-mesh-str", lambda: sa.set_default_mesh("row=2"), sa.MeshError,
         names=("sa.set_default_mesh", "str"), fix=("sa.Mesh(",)),
]
