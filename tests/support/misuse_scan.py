"""Misuse cases of scans, top_k, take_along_dim, nonzero and boolean masks."""

from __future__ import annotations

import numpy as np

import shardarray as sa
import shardarray.array_api as xp
from misuse import Case

MESH = sa.Mesh({"row": 2, "col": 2})


def _x():
    return sa.asarray(np.arange(12.0).reshape(3, 4), dims=("b", "s"), mesh=MESH, layout={"s": "col"})


def _set_mask(mask, v):
    def run():
        x = _x()
        sa.mask_assign(x, mask, v)
    return run


def _positional_cumsum():
    with sa.default_mesh(MESH):
        xp.cumulative_sum(xp.ones((2, 3)))


CASES = [
    Case("scan-cumsum-needs-dim", lambda: sa.cumsum(_x()), sa.DimensionError, ("{'b': 3, 's': 4}",),
         ("merge_dims",)),
    Case("scan-cumsum-unknown-dim", lambda: sa.cumsum(_x(), "t"), sa.DimensionError, ("'t'", "('b', 's')"),
         ("pass one of those",)),
    Case("scan-cumprod-two-dims", lambda: sa.cumprod(_x(), ("b", "s")), sa.DimensionError, ("('b', 's')",),
         ("one dim",)),
    Case("scan-cumulative-sum-axis-required", _positional_cumsum, sa.DimensionError, ("2 dimensions", "(2, 3)"),
         ("axis is required",)),
    Case("scan-top-k-too-large", lambda: sa.top_k(_x(), 5, "s"), sa.ArgumentError, ("k=5", "'s'"), ("1..4",)),
    Case("scan-top-k-name-clash", lambda: sa.top_k(_x(), 2, "s", new_dim="b"), sa.DimensionError, ("'b'",),
         ("new_dim='s_top'",)),
    Case("scan-take-along-float-ids", lambda: sa.take_along_dim(_x(), _x(), "s"), sa.DTypeError, ("float64",),
         ('astype("int64")',)),
    Case("scan-take-along-missing-dim",
         lambda: sa.take_along_dim(_x(), sa.asarray(np.zeros(3, dtype=np.int64), dims=("b",), mesh=MESH), "s"),
         sa.DimensionError, ("'s'", "{'b': 3}"), ("rename",)),
    Case("scan-mask-not-bool", lambda: sa.select(_x(), _x()), sa.DTypeError, ("float64",), ("x > 0",)),
    Case("scan-mask-size", lambda: sa.select(_x(), sa.asarray(np.ones(5, bool), dims=("s",), mesh=MESH)),
         sa.DimensionError, ("'s'", "size 5", "4"), ("must match",)),
    Case("scan-mask-unknown-dim", lambda: sa.select(_x(), sa.asarray(np.ones(4, bool), dims=("t",), mesh=MESH)),
         sa.DimensionError, ("'t'",), ("some of the array's dims",)),
    Case("scan-mask-assign-length", _set_mask(sa.asarray(np.ones(4, bool), dims=("s",), mesh=MESH),
                                              sa.asarray(np.ones(5), dims=("sel",), mesh=MESH)),
         sa.DimensionError, ("selects 4", "(5,)"), ("value of shape (4, 3)",)),
    Case("scan-nonzero-0d", lambda: sa.nonzero(sa.asarray(np.float64(1.0), dims=(), mesh=MESH)),
         sa.DimensionError, ("0-d",), ("expand_dims",)),
]
