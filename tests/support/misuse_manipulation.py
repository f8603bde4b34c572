"""Misuse cases of split_dim, merge_dims, squeeze, expand_dims, tile, repeat, argmax and argmin.

Each call is a mistake a new user makes; the error must name the culprit
(dims, sizes, dtype, argument) and the way out.
"""

from __future__ import annotations

import numpy as np

import shardarray as sa
from misuse import Case

MESH = sa.Mesh({"row": 2, "col": 2})


def _x(dtype="float64"):
    return sa.asarray(np.arange(24).reshape(2, 12).astype(dtype), dims=("batch", "hidden"), mesh=MESH,
                      layout={"hidden": "col"})


CASES = [
    Case("manip-split-sizes-do-not-multiply", lambda: _x().split_dim("hidden", {"heads": 5, "d_kv": 2}),
         sa.DimensionError, names=("'hidden'", "12", "10"), fix=("-1",)),
    Case("manip-split-two-inferred", lambda: _x().split_dim("hidden", {"heads": -1, "d_kv": -1}),
         sa.DimensionError, names=("'heads'", "'d_kv'", "-1"), fix=("at most one",)),
    Case("manip-split-infer-not-a-divisor", lambda: _x().split_dim("hidden", {"heads": 5, "d_kv": -1}),
         sa.DimensionError, names=("'d_kv'", "12", "5"), fix=("multiple",)),
    Case("manip-split-dim-none-on-2d", lambda: _x().split_dim(None, {"heads": 3, "d_kv": 4}),
         sa.DimensionError, names=("'batch'", "'hidden'", "12"), fix=("name the dim", "merge_dims")),
    Case("manip-split-unknown-dim", lambda: _x().split_dim("hiden", {"heads": 3, "d_kv": 4}),
         sa.DimensionError, names=("'hiden'",), fix=("'hidden'",)),
    Case("manip-split-sizes-not-a-dict", lambda: _x().split_dim("hidden", (3, 4)),
         sa.DimensionError, names=("(3, 4)",), fix=("{name: size}",)),
    Case("manip-split-new-name-clashes", lambda: _x().split_dim("hidden", {"batch": 3, "d_kv": 4}),
         sa.DimensionError, names=("'batch'",), fix=("other names",)),
    Case("manip-split-size-not-integer", lambda: _x().split_dim("hidden", {"heads": 2.0, "d_kv": 6}),
         sa.DimensionError, names=("'heads'", "2.0"), fix=("integer",)),
    Case("manip-merge-unknown-dim", lambda: _x().merge_dims(("batch", "seq"), "flat"),
         sa.DimensionError, names=("'seq'",), fix=("'batch'", "'hidden'")),
    Case("manip-merge-dims-a-string", lambda: _x().merge_dims("batch", "flat"),
         sa.DimensionError, names=("'batch'",), fix=("tuple",)),
    Case("manip-merge-name-taken", lambda: _x().expand_dims("one").merge_dims(("one", "batch"), "hidden"),
         sa.DimensionError, names=("'hidden'",), fix=("another name",)),
    Case("manip-squeeze-not-size-one", lambda: sa.squeeze(_x(), "batch"),
         sa.DimensionError, names=("'batch'", "2"), fix=("size 1", "x.sum")),
    Case("manip-expand-existing-name", lambda: sa.expand_dims(_x(), "batch"),
         sa.DimensionError, names=("'batch'",), fix=("new name",)),
    Case("manip-expand-position-out-of-range", lambda: sa.expand_dims(_x(), "one", 5),
         sa.DimensionError, names=("5", "3 dims"), fix=("-3..2",)),
    Case("manip-repeat-negative", lambda: sa.repeat(_x(), -1, "batch"),
         sa.ArgumentError, names=("'batch'", "-1"), fix=(">= 0",)),
    Case("manip-argmax-empty-dim", lambda: sa.argmax(sa.zeros(MESH, {"batch": 2, "vocab": 0}), "vocab"),
         sa.DimensionError, names=("'vocab'", "size 0"), fix=("empty",)),
    Case("manip-argmax-no-dim-on-2d", lambda: sa.argmax(_x()),
         sa.DimensionError, names=("'batch'", "'hidden'"), fix=("merge_dims",)),
    Case("manip-argmax-several-dims", lambda: sa.argmax(_x(), ("batch", "hidden")),
         sa.DimensionError, names=("('batch', 'hidden')",), fix=("one dim",)),
    Case("manip-argmin-not-an-array", lambda: sa.argmin(np.arange(3), "x"),
         sa.DTypeError, names=("ndarray",), fix=("sa.asarray",)),
]
