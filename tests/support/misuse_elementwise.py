"""Misuse cases of the elementwise math, logical/bitwise ops, operators and the new reductions (issue 14)."""

from __future__ import annotations

import numpy as np

import shardarray as sa
from misuse import Case

MESH = sa.Mesh({"row": 2, "col": 2})
OTHER = sa.Mesh({"a": 4})


def _f(dtype="float64", mesh=MESH):
    return sa.asarray(np.arange(6).reshape(2, 3).astype(dtype), dims=("batch", "io"), mesh=mesh,
                      layout={"io": mesh.axis_names[-1]})


def _b():
    return _f() > 2


CASES = [
    Case("ew-bitwise-and-floats", lambda: sa.bitwise_and(_f(), _f()), sa.DTypeError,
         names=("bitwise_and", "float64", "'batch'"), fix=("astype(\"int64\")",)),
    Case("ew-invert-float", lambda: ~_f(), sa.DTypeError, names=("bitwise_invert", "float64"), fix=("x > 0",)),
    Case("ew-shift-float", lambda: _f() << 2, sa.DTypeError, names=("bitwise_left_shift", "float64"),
         fix=("x * 2**k",)),
    Case("ew-shift-bool", lambda: _b() >> 1, sa.DTypeError, names=("bitwise_right_shift", "bool"),
         fix=("astype(\"int64\")",)),
    Case("ew-logical-and-ints", lambda: sa.logical_and(_f("int64"), _b()), sa.DTypeError,
         names=("logical_and", "int64"), fix=("x != 0",)),
    Case("ew-logical-not-float", lambda: sa.logical_not(_f()), sa.DTypeError, names=("logical_not", "float64"),
         fix=("x != 0",)),
    Case("ew-floor-divide-complex", lambda: _f("complex128") // 2, sa.DTypeError,
         names=("floor_divide", "complex128"), fix=("sa.real(x)",)),
    Case("ew-remainder-bool", lambda: sa.remainder(_b(), _b()), sa.DTypeError, names=("remainder", "bool"),
         fix=("astype(\"int64\")",)),
    Case("ew-sin-int", lambda: sa.sin(_f("int32")), sa.DTypeError, names=("sin", "int32", "'io'"),
         fix=("astype(\"float32\")",)),
    Case("ew-atan2-ints", lambda: sa.atan2(_f("int64"), 1.0), sa.DTypeError, names=("atan2", "int64"),
         fix=("astype(\"float32\")",)),
    Case("ew-sign-bool", lambda: sa.sign(_b()), sa.DTypeError, names=("sign", "bool"), fix=("astype(\"int64\")",)),
    Case("ew-clip-not-an-array", lambda: sa.clip(np.ones(3), 0, 1), sa.DTypeError, names=("clip", "ndarray"),
         fix=("sa.asarray",)),
    Case("ew-clip-bound-size-mismatch",
         lambda: sa.clip(_f(), sa.asarray(np.zeros(4), dims=("io",), mesh=MESH), 1.0), sa.DimensionError,
         names=("'io'", "3", "4"), fix=("rename",)),
    Case("ew-floordiv-other-mesh", lambda: _f() // _f(mesh=OTHER), sa.MeshError, names=("floor_divide",),
         fix=("sa.reshard",)),
    Case("ew-matmul-numpy", lambda: _f() @ np.ones((3, 2)), sa.DTypeError, names=("@", "ndarray"),
         fix=("sa.asarray", "einsum")),
    Case("ew-var-int", lambda: sa.var(_f("int64"), "io"), sa.DTypeError, names=("var", "int64"),
         fix=("astype(\"float32\")",)),
    Case("ew-var-bad-correction", lambda: sa.var(_f(), "io", correction="1"), sa.ArgumentError,
         names=("var", "correction", "'1'"), fix=("0 or 1",)),
    Case("ew-std-unknown-dim", lambda: sa.std(_f(), "hidden"), sa.DimensionError, names=("std", "'hidden'"),
         fix=("'batch'", "'io'")),
    Case("ew-prod-position-out-of-range", lambda: _f().prod(axis=2), sa.DimensionError, names=("prod", "position 2"),
         fix=("0..1",)),
    Case("ew-all-unknown-dim", lambda: sa.all(_b(), "vocab"), sa.DimensionError, names=("all", "'vocab'"),
         fix=("'batch'", "'io'")),
    Case("ew-any-out", lambda: _b().any("io", out=np.zeros(2)), sa.DTypeError, names=("any", "out="),
         fix=("returned array",)),
]
