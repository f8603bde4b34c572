"""Misuse cases of writes into an existing dtype (NumPy 2's rule: a Python integer out of range, NaN or inf into
integers raise) and of checkpoint loads that would cast to a lower kind."""

from __future__ import annotations

import numpy as np
from misuse import Case

import shardarray as sa
import shardarray.array_api as xp


def _mesh():
    return sa.Mesh({"row": 2, "col": 2})


def _named(dtype):
    return sa.asarray(np.zeros(6, dtype), dims=("i",), mesh=_mesh(), layout={"i": "row"})


def _pos(dtype):
    return xp.asarray(np.zeros((2, 3), dtype), device=_mesh())


def _set(x, key, v):
    x[key] = v


def _load_into(tmp_dtype, target_dtype, tmp=[]):  # noqa: B006  (one directory for the module's cases)
    import tempfile

    if not tmp:
        tmp.append(tempfile.mkdtemp())
    path = f"{tmp[0]}/ck-{tmp_dtype}"
    values = np.array([np.nan, 1e10, 3.5, -2.0]) if np.dtype(tmp_dtype).kind == "f" else np.array([0, 7, 3, -2])
    w = sa.asarray(values.astype(tmp_dtype), dims=("i",), mesh=_mesh())
    sa.checkpoint.save(path, {"w": w}, overwrite=True)
    return sa.checkpoint.load(path, target={"w": sa.zeros(_mesh(), {"i": 4}, dtype=target_dtype)})


RANGE_FIX = ("astype('int64')",)
NAN_FIX = ("astype('float32')",)

CASES = [
    Case("write-int8-300", lambda: _set(_named("int8"), {"i": 2}, 300), sa.CastError, ("300", "int8", "[-128, 127]"),
         RANGE_FIX),
    Case("write-int8-minus-129", lambda: _set(_named("int8"), {"i": 0}, -129), sa.CastError, ("-129", "int8"),
         RANGE_FIX),
    Case("write-uint8-minus-1", lambda: _set(_named("uint8"), {"i": 1}, -1), sa.CastError, ("-1", "uint8", "[0, 255]"),
         RANGE_FIX),
    Case("write-uint16-70000-slice", lambda: _set(_named("uint16"), {"i": slice(0, 3)}, 70000), sa.CastError,
         ("70000", "uint16"), RANGE_FIX),
    Case("write-int32-nan", lambda: _set(_named("int32"), {"i": 2}, float("nan")), sa.CastError, ("nan", "int32"),
         NAN_FIX),
    Case("write-int64-inf", lambda: _set(_named("int64"), {"i": 2}, float("inf")), sa.CastError, ("inf", "int64"),
         NAN_FIX),
    Case("write-int16-numpy-nan", lambda: _set(_named("int16"), {"i": 2}, np.float64("nan")), sa.CastError,
         ("nan", "int16"), NAN_FIX),
    Case("write-bool-nan", lambda: _set(_named("bool"), {"i": 2}, float("nan")), sa.CastError, ("nan", "bool"),
         NAN_FIX),
    Case("mask-write-uint8-minus-1", lambda: sa.mask_assign(_named("uint8"), _named("uint8") == 0, -1), sa.CastError,
         ("-1", "uint8"), RANGE_FIX),
    Case("mask-write-int8-nan", lambda: sa.mask_assign(_named("int8"), _named("int8") == 0, float("nan")),
         sa.CastError, ("nan", "int8"), NAN_FIX),
    Case("xp-write-int8-300", lambda: _set(_pos("int8"), (0, 1), 300), sa.CastError, ("300", "int8"), RANGE_FIX),
    Case("xp-write-uint8-mask", lambda: _set(_pos("uint8"), _pos("uint8") == 0, 256), sa.CastError,
         ("256", "uint8"), RANGE_FIX),
    Case("xp-write-uint8-float-300", lambda: _set(_pos("uint8"), (0, 1), 300.0), sa.CastError,
         ("300.0", "truncates to 300", "uint8", "[0, 255]"), RANGE_FIX),
    Case("xp-write-uint8-float-minus-1.5-slice", lambda: _set(_pos("uint8"), (slice(None), 0), -1.5), sa.CastError,
         ("-1.5", "truncates to -1", "uint8"), RANGE_FIX),
    Case("write-int8-float-128-mask", lambda: sa.mask_assign(_named("int8"), _named("int8") == 0, 128.0),
         sa.CastError, ("128.0", "int8"), RANGE_FIX),
    Case("xp-write-int32-inf-slice", lambda: _set(_pos("int32"), (slice(None), 0), -float("inf")), sa.CastError,
         ("-inf", "int32"), NAN_FIX),
    Case("xp-write-complex-into-float", lambda: _set(_pos("float64"), (0, 0), 1 + 2j), sa.DTypeError,
         ("complex", "float64"), ("v.real",)),
    Case("load-float-into-int8", lambda: _load_into("float32", "int8"), sa.CheckpointError,
         ("'w'", "float32", "int8"), ("casting='unsafe'",)),
    Case("load-int-into-bool", lambda: _load_into("int32", "bool"), sa.CheckpointError, ("int32", "bool"),
         ("casting='unsafe'",)),
    Case("load-float-into-bool", lambda: _load_into("float64", "bool"), sa.CheckpointError, ("float64", "bool"),
         ("casting='unsafe'",)),
]

CASES += [
    Case("xp-arange-1e20", lambda: xp.arange(0, 1e20, device=_mesh()), sa.ArgumentError,
         ("arange(0, 1e+20, 1)", "elements"), ("larger step",)),
    Case("xp-arange-int-1e20", lambda: xp.arange(0, 10**20, device=_mesh()), sa.ArgumentError,
         ("arange(0, 100000000000000000000, 1)",), ("larger step",)),
    Case("xp-arange-inf", lambda: xp.arange(0, float("inf"), device=_mesh()), sa.ArgumentError,
         ("arange(0, inf, 1)", "finite"), ()),
    Case("xp-arange-nan-step", lambda: xp.arange(0.0, 1.0, float("nan"), device=_mesh()), sa.ArgumentError,
         ("nan", "finite"), ()),
]


def _square(dtype):
    return sa.asarray(np.eye(4) * 2, dims=("i", "j"), mesh=_mesh()).astype(dtype)


CASES += [
    Case("linalg-inv-bfloat16", lambda: sa.linalg.inv(_square("bfloat16")), sa.DTypeError,
         ("sa.linalg.inv", "bfloat16 is floating-point", "16-bit"), ("astype('float32')",)),
    Case("linalg-cholesky-float16", lambda: sa.linalg.cholesky(_square("float16")), sa.DTypeError,
         ("cholesky", "float16 is floating-point"), ("astype('float32')",)),
    Case("linalg-svd-bfloat16", lambda: sa.linalg.svd(_square("bfloat16")), sa.DTypeError,
         ("svd", "bfloat16"), ("astype('float32')",)),
    Case("xp-linalg-det-float16", lambda: xp.linalg.det(xp.astype(xp.asarray(np.eye(3), device=_mesh()), "float16")),
         sa.DTypeError, ("linalg.det", "float16 is floating-point"), ("xp.float32",)),
]
