"""Misuse cases of bfloat16: misspelt and unsupported dtype names, non-float dtypes where a float is made.

Each error names the dtype given and the dtypes to pass instead (bfloat16 among them).
"""

from __future__ import annotations

import numpy as np

import shardarray as sa
from misuse import Case, CliCase

MESH = sa.Mesh({"row": 2, "col": 2})
BENCH = ("-m", "shardarray.bench")  # test_misuse runs it with this Python


def _x():
    return sa.asarray(np.ones((2, 3), np.float32), dims=("a", "b"), mesh=MESH, layout={"b": "col"}).astype("bfloat16")


CASES = [
    Case("bf16-misspelt-zeros", lambda: sa.zeros(MESH, {"a": 2}, dtype="bfloat61"), sa.DTypeError,
         ("'bfloat61'",), ("bfloat16", "float32")),
    Case("bf16-misspelt-astype", lambda: _x().astype("bf16"), sa.DTypeError, ("'bf16'",), ("bfloat16",)),
    Case("bf16-float8-unsupported", lambda: _x().astype("float8_e4m3fn"), sa.DTypeError,
         ("float8_e4m3fn",), ("bfloat16", "float16")),
    Case("bf16-random-normal-int", lambda: sa.random.normal(MESH, {"a": 2}, dtype="int32"), sa.DTypeError,
         ("sa.random.normal", "'int32'"), ("'bfloat16'", "'float32'")),
    Case("bf16-random-uniform-bool", lambda: sa.random.uniform(MESH, {"a": 2}, dtype="bool"), sa.DTypeError,
         ("sa.random.uniform", "'bool'"), ("'bfloat16'",)),
    Case("bf16-exp-int", lambda: sa.exp(_x().astype("int32")), sa.DTypeError, ("exp", "int32"), ("astype",)),
    CliCase("bf16-bench-matmul-dtype-misspelt", (*BENCH, "matmul", "--dtype", "bfloat61"), ("--dtype", "bfloat61"),
            ("bfloat16",)),
]
