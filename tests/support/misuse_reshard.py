"""Misuse of sa.reshard, sa.asarray(x, mesh=other) and sa.from_local (issue 16)."""

from __future__ import annotations

import numpy as np

import shardarray as sa
from misuse import Case

A = sa.Mesh({"row": 2, "col": 2})
B = sa.Mesh({"model": 4})
X = sa.asarray(np.arange(8.0).reshape(4, 2), dims=("batch", "io"), mesh=A, layout={"batch": "row"})
META = sa.zeros(sa.Mesh({"row": 2, "col": 2}, backend="meta"), {"batch": 4})


def _rows(device):
    return np.zeros((2, 2))  # every device gives 2 rows, but device 2's block of 5 rows split 3 ways has 1


CASES = [
    Case("reshard-not-a-mesh", lambda: sa.reshard(X, {"model": 4}), sa.MeshError, ("dict",), ("sa.Mesh(",)),
    Case("reshard-not-an-array", lambda: sa.reshard(np.zeros(3), B), sa.DTypeError, ("ndarray",), ("sa.asarray",)),
    Case("reshard-axis-of-the-source-mesh", lambda: sa.reshard(X, B, {"batch": "row"}), sa.LayoutError,
         ("'row'", "'batch'"), ("('model',)",)),
    Case("reshard-meta-to-values", lambda: sa.reshard(META, B), sa.BackendError, ("meta", "{'batch': 4}"),
         ("backend='numpy'",)),
    Case("asarray-other-mesh-bad-layout", lambda: sa.asarray(X, mesh=B, layout={"io": "col"}), sa.LayoutError,
         ("'col'", "'io'"), ("('model',)",)),
    Case("from_local-block-shape", lambda: sa.from_local(sa.Mesh({"p": 3}), _rows, ("batch", "io"), (5, 2),
                                                        {"batch": "p"}),
         sa.DimensionError, ("device 2", "'batch'", "(2, 2)", "(1, 2)"), ("exactly its block",)),
    Case("from_local-missing-device", lambda: sa.from_local(A, {0: np.zeros((4, 2))}, ("batch", "io"), (4, 2)),
         sa.ArgumentError, ("device 1", "{'row': 0, 'col': 1}"), ("callable",)),
    Case("from_local-one-array-emulated", lambda: sa.from_local(A, np.zeros((2, 2)), ("batch", "io"), (4, 2),
                                                              {"batch": "row"}),
         sa.ArgumentError, ("4 devices",), ("callable device -> block",)),
    Case("from_local-sizes-count", lambda: sa.from_local(A, _rows, ("batch", "io"), (4,)), sa.DimensionError,
         ("('batch', 'io')", "(4,)"), ("one global size per dim",)),
    Case("from_local-dtypes-differ", lambda: sa.from_local(B, lambda d: np.zeros(1, "float32" if d else "int64"),
                                                            ("i",), (4,), {"i": "model"}),
         sa.DTypeError, ("float32", "int64"), ("dtype=",)),
]
