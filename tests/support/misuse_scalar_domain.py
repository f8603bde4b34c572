"""Misuse cases of a Python scalar that takes an op's operands out of the dtypes it is defined for
(``dtypes.check_scalar_domain``): NumPy raises its own ``TypeError`` there, ``sa`` a ``DTypeError`` naming the
scalar."""

from __future__ import annotations

import numpy as np
from misuse import Case

import shardarray as sa
import shardarray.array_api as xp


def _mesh():
    return sa.Mesh({"row": 2, "col": 2})


def _ints():
    return xp.asarray(np.arange(6).reshape(2, 3), device=_mesh())


def _named_ints():
    return sa.asarray(np.arange(6), dims=("i",), mesh=_mesh(), layout={"i": "row"})


KIND = ("of the array's kind",)

CASES = [
    Case("xp-bitwise-and-float", lambda: xp.bitwise_and(_ints(), 1.5), sa.DTypeError, ("1.5", "float64", "integer"),
         KIND),
    Case("xp-left-shift-float", lambda: _ints() << 0.5, sa.DTypeError, ("0.5", "bitwise_left_shift"), KIND),
    Case("xp-remainder-complex", lambda: xp.remainder(_ints(), 1j), sa.DTypeError, ("1j", "complex128"), KIND),
    Case("named-and-float", lambda: _named_ints() & 1.5, sa.DTypeError, ("1.5", "bitwise_and"), KIND),
]

# reported by the fuzzers of round 5 beside their own areas: raw AttributeError/TypeError/OverflowError before
CASES += [
    Case("named-sum-of-numpy", lambda: sa.sum(np.ones(3)), sa.DTypeError, ("ShardArray", "ndarray"), ("sa.asarray",)),
    Case("named-mean-of-numpy", lambda: sa.mean(np.ones(3)), sa.DTypeError, ("mean", "ndarray"), ("sa.asarray",)),
    Case("np-transpose-of-none-axes", lambda: np.transpose(xp.asarray(np.ones((2, 3)), device=_mesh()), (None, 1)),
         sa.DimensionError, ("transpose",), ("integers",)),
    Case("xp-astype-unknown", lambda: xp.asarray(np.ones(3), device=_mesh()).astype("dim0"), sa.DTypeError,
         ("dim0",), ("float32",)),
    Case("xp-full-of-a-huge-int", lambda: xp.full((2,), 2**1100, dtype=xp.float64, device=_mesh()), sa.CastError,
         ("too large", "float64"), ("in range",)),
    Case("xp-zeros-beyond-int64", lambda: xp.zeros(2**70, device=_mesh()), sa.DimensionError, ("int64",), ("2**63",)),
]
CASES += [
    Case("mesh-beyond-2**24-devices", lambda: sa.Mesh({"a": 2**63}, backend="meta"), sa.MeshError,
         ("9223372036854775808 devices",), ("at most 16777216",)),
]
CASES += [
    Case("meta-array-beyond-2**63-elements", lambda: sa.zeros(sa.Mesh({"a": 1}, backend="meta"), {"m": 2**62, "k": 4}),
         sa.DimensionError, ("18446744073709551616 elements",), ("at most 2**63 - 1",)),
]
CASES += [
    Case(f"xp-{name}-beyond-int64", fn, sa.DimensionError, ("sizes must fit an int64",), ("2**63",))
    for name, fn in [
        ("eye", lambda: xp.eye(2**70, device=_mesh())),
        ("linspace", lambda: xp.linspace(0, 1, 2**70, device=_mesh())),
        ("tile", lambda: xp.tile(xp.ones(3, device=_mesh()), (2**70,))),
        ("pad", lambda: sa.pad(_named_ints(), "i", 2**70, 0)),
    ]
]
