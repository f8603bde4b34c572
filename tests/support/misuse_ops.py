"""Misuse cases of the ops: take, one_hot, softmax, reductions, where, einsum, relayout, elementwise, nn layers.

Each call is a mistake a new user makes; the error must name the culprit
(dims, sizes, dtype, argument) and the way out.
"""

from __future__ import annotations

import numpy as np

import shardarray as sa
from misuse import Case

MESH = sa.Mesh({"row": 2, "col": 2})
OTHER = sa.Mesh({"a": 4})


def _x(dtype="float64", mesh=MESH):
    return sa.asarray(np.arange(12).reshape(3, 4).astype(dtype), dims=("batch", "vocab"), mesh=mesh,
                      layout={"vocab": mesh.axis_names[-1]})


def _ids(values=(1, 2, 0), dtype="int64", dims=("batch",)):
    return sa.asarray(np.array(values, dtype=dtype), dims=dims, mesh=MESH)


def _w():
    return sa.asarray(np.ones((4, 5)), dims=("vocab", "hidden"), mesh=MESH)


def _ln():
    x = sa.ones(MESH, {"batch": 2, "d_model": 4}, "float64")
    return x, sa.ones(MESH, {"d_model": 4}, "float64"), sa.zeros(MESH, {"d_model": 4}, "float64")


CASES = [
    # ---------------------------------------------------------------- take
    Case("ops-take-unknown-dim", lambda: sa.take(_x(), _ids(), "vocabulary"), sa.DimensionError,
         names=("'vocabulary'",), fix=("'batch'", "'vocab'")),
    Case("ops-take-ids-have-the-dim", lambda: sa.take(_x(), _ids(dims=("vocab",)), "vocab"), sa.DimensionError,
         names=("'vocab'",), fix=("rename",)),
    Case("ops-take-float-ids", lambda: sa.take(_x(), _ids(dtype="float32"), "vocab"), sa.DTypeError,
         names=("float32",), fix=("astype",)),
    Case("ops-take-negative-id", lambda: sa.take(_x(), _ids((1, -1, 0)), "vocab"), sa.DimensionError,
         names=("'vocab'", "-1"), fix=("[0, 4)", "% 4")),
    Case("ops-take-id-too-large", lambda: sa.take(_x(), _ids((1, 4, 0)), "vocab"), sa.DimensionError,
         names=("'vocab'", "to 4"), fix=("[0, 4)",)),
    Case("ops-take-numpy-ids", lambda: sa.take(_x(), np.array([1, 2, 0]), "vocab"), sa.DTypeError,
         names=("ndarray",), fix=("sa.asarray",)),
    Case("ops-take-other-mesh", lambda: sa.take(_x(), sa.asarray(np.array([1]), dims=("s",), mesh=OTHER), "vocab"),
         sa.MeshError, names=("Mesh({'a': 4}",), fix=("sa.reshard",)),
    # ---------------------------------------------------------------- one_hot
    Case("ops-one-hot-negative-size", lambda: sa.one_hot(_ids(), "classes", -3), sa.DimensionError,
         names=("'classes'", "-3"), fix=(">= 1",)),
    Case("ops-one-hot-zero-size", lambda: sa.one_hot(_ids(), "classes", 0), sa.DimensionError,
         names=("'classes'", "is 0"), fix=(">= 1",)),
    Case("ops-one-hot-float-size", lambda: sa.one_hot(_ids(), "classes", 2.5), sa.DimensionError,
         names=("'classes'", "2.5"), fix=("integer",)),
    Case("ops-one-hot-existing-dim", lambda: sa.one_hot(_ids(), "batch", 3), sa.DimensionError,
         names=("'batch'",), fix=("name the new dim differently",)),
    Case("ops-one-hot-float-ids", lambda: sa.one_hot(_ids(dtype="float64"), "classes", 3), sa.DTypeError,
         names=("float64",), fix=('astype("int64")',)),
    # ---------------------------------------------------------------- float-only ops
    Case("ops-softmax-bool", lambda: sa.softmax(_x("bool"), "vocab"), sa.DTypeError,
         names=("softmax", "bool", "'vocab'"), fix=('.astype("float32")',)),
    Case("ops-softmax-int", lambda: sa.softmax(_x("int32"), "vocab"), sa.DTypeError,
         names=("softmax", "int32"), fix=('.astype("float32")',)),
    Case("ops-logsumexp-int", lambda: sa.logsumexp(_x("int64"), "vocab"), sa.DTypeError,
         names=("logsumexp", "int64"), fix=('.astype("float32")',)),
    Case("ops-exp-int", lambda: sa.exp(_x("int64")), sa.DTypeError,
         names=("exp", "int64", "'batch'"), fix=('.astype("float32")',)),
    Case("ops-gelu-bool", lambda: sa.gelu(_x("bool")), sa.DTypeError,
         names=("gelu", "bool"), fix=('.astype("float32")',)),
    Case("ops-softmax-unknown-dim", lambda: sa.softmax(_x(), "vocabs"), sa.DimensionError,
         names=("softmax", "'vocabs'"), fix=("'vocab'",)),
    Case("ops-logsumexp-unknown-dim", lambda: sa.logsumexp(_x(), ("batch", "v")), sa.DimensionError,
         names=("logsumexp", "'v'"), fix=("'batch', 'vocab'",)),
    # ---------------------------------------------------------------- reductions
    Case("ops-sum-unknown-dim", lambda: _x().sum("hidden"), sa.DimensionError,
         names=("sum", "'hidden'"), fix=("'batch', 'vocab'",)),
    Case("ops-mean-unknown-dim", lambda: _x().mean(("batch", "seq")), sa.DimensionError,
         names=("mean", "'seq'"), fix=("'batch', 'vocab'",)),
    Case("ops-max-unknown-dim", lambda: _x().max("d"), sa.DimensionError,
         names=("max", "'d'"), fix=("'batch', 'vocab'",)),
    Case("ops-min-repeated-dims", lambda: _x().min(("batch", "batch")), sa.DimensionError,
         names=("min", "'batch', 'batch'", "twice"), fix=("the array's dims are",)),
    # ---------------------------------------------------------------- where
    Case("ops-where-float-condition", lambda: sa.where(_x(), 1.0, 0.0), sa.DTypeError,
         names=("where", "float64", "'vocab'"), fix=("x > 0",)),
    Case("ops-where-numpy-condition", lambda: sa.where(np.ones(3, bool), _x(), 0.0), sa.DTypeError,
         names=("ndarray",), fix=("sa.asarray",)),
    # ---------------------------------------------------------------- einsum
    Case("ops-einsum-operand-count", lambda: sa.einsum("batch vocab, vocab hidden -> batch hidden", _x()),
         sa.DimensionError, names=("2 operand(s)", "1 were given"), fix=("one comma-separated term",)),
    Case("ops-einsum-wrong-term", lambda: sa.einsum("batch io, vocab hidden -> batch hidden", _x(), _w()),
         sa.DimensionError, names=("'batch io'", "('batch', 'vocab')"), fix=("each term lists its operand's dim",)),
    Case("ops-einsum-unknown-output", lambda: sa.einsum(_x(), _w(), out=("batch", "heads")), sa.DimensionError,
         names=("'heads'",), fix=("every output dim must come from an input",)),
    Case("ops-einsum-size-mismatch",
         lambda: sa.einsum(_x(), sa.ones(MESH, {"vocab": 5, "hidden": 2}, "float64"), out=("batch", "hidden")),
         sa.DimensionError, names=("'vocab'", "size 4", "size 5"), fix=("rename",)),
    Case("ops-einsum-numpy-operand", lambda: sa.einsum(_x(), np.ones((4, 5))), sa.DTypeError,
         names=("operand 1", "ndarray"), fix=("sa.asarray",)),
    # ---------------------------------------------------------------- relayout
    Case("ops-relayout-unknown-dim", lambda: _x().relayout({"seq": "row"}), sa.LayoutError,
         names=("'seq'",), fix=("('batch', 'vocab')",)),
    Case("ops-relayout-unknown-axis", lambda: _x().relayout({"batch": "rows"}), sa.LayoutError,
         names=("'rows'",), fix=("'row'",)),
    Case("ops-relayout-axis-twice", lambda: _x().relayout({"batch": "row", "vocab": "row"}), sa.LayoutError,
         names=("'batch'", "'vocab'", "'row'"), fix=("Map one of the two dims to another axis",)),
    # ---------------------------------------------------------------- elementwise
    Case("ops-add-size-mismatch", lambda: _x() + sa.ones(MESH, {"vocab": 5}, "float64"), sa.DimensionError,
         names=("'vocab'", "size 4", "size 5"), fix=("rename",)),
    Case("ops-add-other-mesh", lambda: _x() + _x(mesh=OTHER), sa.MeshError,
         names=("Mesh({'a': 4}",), fix=("sa.reshard",)),
    Case("ops-add-list", lambda: _x() + [1.0, 2.0], sa.DTypeError,
         names=("list",), fix=("sa.asarray",)),
    # ---------------------------------------------------------------- nn layers
    Case("ops-layer-norm-missing-dim", lambda: sa.nn.layer_norm(*_ln(), dim="hidden"), sa.DimensionError,
         names=("layer_norm", "'hidden'", "'batch', 'd_model'"), fix=("rename",)),
    Case("ops-layer-norm-gain-extra-dim",
         lambda: sa.nn.layer_norm(_ln()[0], sa.ones(MESH, {"hidden": 4}, "float64"), _ln()[2]), sa.DimensionError,
         names=("gain", "'hidden'"), fix=("over 'd_model' only",)),
    Case("ops-layer-norm-int", lambda: sa.nn.layer_norm(_ln()[0].astype("int64"), *_ln()[1:]), sa.DTypeError,
         names=("layer_norm", "int64"), fix=('.astype("float32")',)),
    Case("ops-cross-entropy-missing-dim", lambda: sa.nn.cross_entropy(_x(), _ids(), dim="classes"),
         sa.DimensionError, names=("cross_entropy", "'classes'", "'batch', 'vocab'"), fix=("rename",)),
    Case("ops-cross-entropy-float-targets", lambda: sa.nn.cross_entropy(_x(), _ids(dtype="float32")), sa.DTypeError,
         names=("cross_entropy", "float32"), fix=('astype("int64")',)),
    Case("ops-cross-entropy-targets-extra-dim",
         lambda: sa.nn.cross_entropy(_x(), _ids([[1, 2, 0]], dims=("seq", "batch"))), sa.DimensionError,
         names=("cross_entropy", "'seq'"), fix=("except 'vocab'",)),
    Case("ops-accuracy-missing-dim", lambda: sa.nn.accuracy(_x(), _ids(), dim="classes"), sa.DimensionError,
         names=("accuracy", "'classes'"), fix=("rename",)),
    Case("ops-attention-missing-seq",
         lambda: sa.nn.attention(sa.ones(MESH, {"batch": 2, "d_model": 4}, "float64"), {}, "layer0.attn."),
         sa.DimensionError, names=("attention", "'seq'"), fix=("rename",)),
    # ---------------------------------------------------------------- complex
    Case("ops-complex-softmax", lambda: sa.softmax(_x("complex64"), "vocab"), sa.DTypeError,
         names=("softmax", "complex64"), fix=("real part",)),
    Case("ops-complex-grad", lambda: sa.value_and_grad(lambda x: x.sum())(_x("complex128")), sa.DTypeError,
         names=("complex128",), fix=("floating-point",)),
    Case("ops-complex-astype-real", lambda: _x("complex64").astype("float32"), sa.DTypeError,
         names=("complex64", "float32", "imaginary"), fix=("real part",)),
    Case("ops-astype-unknown-dtype", lambda: _x().astype("float8"), sa.DTypeError,
         names=("'float8'",), fix=("float32",)),
]
