"""Misuse cases of sort, argsort, unique_*, searchsorted (named and positional)."""

from __future__ import annotations

import numpy as np
from misuse import Case

import shardarray as sa
import shardarray.array_api as xp

MESH = sa.Mesh({"row": 2, "col": 2})


def _x(dtype="float64"):
    return sa.asarray(np.arange(12).reshape(2, 6).astype(dtype), dims=("batch", "seq"), mesh=MESH,
                      layout={"seq": "col"})


def _sorted():
    return sa.asarray(np.arange(6.0), dims=("i",), mesh=MESH, layout={"i": "row"})


def _meta():
    return sa.zeros(sa.Mesh({"row": 2, "col": 2}, backend="meta"), {"i": 8}, layout={"i": "row"})


def _positional(fn):
    def call():
        with sa.default_mesh(MESH):
            return fn()
    return call


CASES = [
    Case("sort-unknown-dim", lambda: sa.sort(_x(), "sq"), sa.DimensionError, names=("'sq'", "'seq'"),
         fix=("pass one of those names",)),
    Case("sort-no-dim", lambda: sa.sort(_x(), None), sa.DimensionError, names=("None", "'batch'", "'seq'"),
         fix=("name one dim",)),
    Case("sort-two-dims", lambda: sa.argsort(_x(), ("batch", "seq")), sa.DimensionError,
         names=("('batch', 'seq')",), fix=("name one dim",)),
    Case("sort-descending-not-bool", lambda: sa.sort(_x(), "seq", descending="yes"), sa.ArgumentError,
         names=("descending", "'yes'"), fix=("True or False",)),
    Case("sort-stable-not-bool", lambda: sa.argsort(_x(), "seq", stable=None), sa.ArgumentError,
         names=("stable", "None"), fix=("True or False",)),
    Case("sort-numpy-input", lambda: sa.argsort(np.arange(3.0), 0), sa.DTypeError, names=("ndarray", "(3,)"),
         fix=("sa.asarray",)),
    Case("sort-unique-numpy-input", lambda: sa.unique_values(np.arange(4)), sa.DTypeError, names=("ndarray", "(4,)"),
         fix=("sa.asarray",)),
    Case("sort-unique-axis", lambda: np.unique(_x(), axis=5), sa.OutOfBoundsError, names=("5", "('batch', 'seq')"),
         fix=("0..1",)),
    Case("sort-unique-meta", lambda: sa.unique_counts(_meta()), sa.BackendError, names=("meta", "'i': 8"),
         fix=("NumPy or CuPy mesh",)),
    Case("searchsorted-side", lambda: sa.searchsorted(_sorted(), _sorted(), side="middle"), sa.ArgumentError,
         names=("'middle'",), fix=("'left'", "'right'")),
    Case("searchsorted-2d", lambda: sa.searchsorted(_x(), _sorted()), sa.DimensionError,
         names=("'batch': 2", "'seq': 6"), fix=("merge_dims",)),
    Case("searchsorted-values-not-array", lambda: sa.searchsorted(_sorted(), [1.0, 2.0]), sa.DTypeError,
         names=("values", "list"), fix=("sa.asarray",)),
    Case("sort-positional-0d", _positional(lambda: xp.sort(xp.asarray(1.0))), sa.DimensionError,
         names=("0-d",), fix=("xp.reshape",)),
    Case("sort-positional-axis", _positional(lambda: xp.argsort(xp.asarray([1.0, 2.0]), axis=3)),
         sa.DimensionError, names=("axis 3",), fix=("out of bounds",)),
    Case("searchsorted-positional-sorter", _positional(
        lambda: xp.searchsorted(xp.asarray([1.0, 2.0]), xp.asarray([1.5]), sorter=xp.asarray([0.0, 1.0]))),
         sa.DTypeError, names=("sorter", "float64"), fix=("xp.argsort(x1)",)),
]
