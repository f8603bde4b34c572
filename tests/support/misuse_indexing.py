"""Misuse cases of indexing: isel, x[...], x[...] = v, concat, stack."""

from __future__ import annotations

import numpy as np

import shardarray as sa
from misuse import Case

MESH = sa.Mesh({"row": 2, "col": 2})
OTHER = sa.Mesh({"a": 4})


def _x(mesh=MESH, shape=(4, 3), dims=("batch", "io")):
    return sa.asarray(np.arange(float(np.prod(shape))).reshape(shape), dims=dims, mesh=mesh,
                      layout={dims[0]: mesh.axis_names[0]})


def _set(key, value):
    def run():
        x = _x()
        x[key] = value
    return run


CASES = [
    Case("isel-int-out-of-range", lambda: _x()[4], sa.DimensionError, ("4", "'batch'", "size 4"), ("0..3",)),
    Case("isel-negative-out-of-range", lambda: _x().isel(io=-4), sa.DimensionError, ("-4", "'io'", "size 3"),
         ("-3..-1",)),
    Case("isel-too-many-indices", lambda: _x()[0, 1, 2], sa.DimensionError, ("too many indices", "3"),
         ("at most 2",)),
    Case("isel-unknown-dim", lambda: _x().isel(seq=0), sa.DimensionError, ("'seq'", "batch"), ("one of those",)),
    Case("getitem-unknown-dim", lambda: _x()[{"seq": 0}], sa.DimensionError, ("'seq'", "io"), ("one of those",)),
    Case("isel-float-index", lambda: _x()[1.5], sa.DTypeError, ("1.5", "'batch'"), ("int(",)),
    Case("isel-float-slice-bound", lambda: _x()[0.5:2], sa.DTypeError, ("start", "'batch'"), ("int(",)),
    Case("isel-step-zero", lambda: _x()[::0], sa.ArgumentError, ("step 0", "'batch'"), ("step of 1",)),
    Case("isel-boolean-mask-length", lambda: _x()[np.array([True, False, True])], sa.DimensionError,
         ("boolean mask", "'batch'", "size 4"), ("1-D of that length",)),
    Case("isel-id-out-of-range", lambda: _x()[:, [0, 3]], sa.DimensionError, ("3", "'io'", "size 3"), ("0..2",)),
    Case("getitem-two-ellipses", lambda: _x()[..., ...], sa.IndexingError, ("Ellipsis",), ()),
    Case("concat-other-dims", lambda: sa.concat([_x(), _x(dims=("batch", "hidden"))], "batch"),
         sa.DimensionError, ("hidden", "io"), ("rename",)),
    Case("concat-other-sizes", lambda: sa.concat([_x(), _x(shape=(4, 5))], "batch"), sa.DimensionError,
         ("'io'", "3", "5"), ("only dim 'batch' may differ",)),
    Case("concat-other-mesh", lambda: sa.concat([_x(), _x(mesh=OTHER)], "batch"), sa.MeshError,
         ("operand 1",), ("sa.reshard",)),
    Case("concat-missing-dim", lambda: sa.concat([_x(), _x()], "seq"), sa.DimensionError, ("'seq'",),
         ("sa.stack",)),
    Case("concat-not-a-list", lambda: sa.concat(_x(), "batch"), sa.DimensionError, ("list",), ("[x, y]",)),
    Case("stack-existing-dim", lambda: sa.stack([_x(), _x()], "batch"), sa.DimensionError, ("'batch'",),
         ("sa.concat",)),
    Case("stack-other-sizes", lambda: sa.stack([_x(), _x(shape=(5, 3))], "layer"), sa.DimensionError,
         ("'batch'", "4", "5"), ("equal sizes",)),
    Case("setitem-wrong-size", _set(slice(0, 2), sa.asarray(np.ones((3, 3)), dims=("batch", "io"), mesh=MESH)),
         sa.DimensionError, ("size 3", "'batch'", "2 entries"), ("give v that size",)),
    Case("setitem-numpy-value", _set(0, np.ones(3)), sa.DTypeError, ("ndarray", "(3,)"), ("sa.asarray",)),
    Case("setitem-other-mesh", _set(0, sa.asarray(np.ones(3), dims=("io",), mesh=OTHER)), sa.MeshError,
         ("operand 1",), ("sa.reshard",)),
    Case("setitem-out-of-range", _set(7, 1.0), sa.DimensionError, ("7", "'batch'", "size 4"), ("0..3",)),
]
