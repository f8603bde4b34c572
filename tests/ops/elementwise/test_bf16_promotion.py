"""bfloat16 with NumPy scalars and with dtypes NumPy has no rule for, alike on every backend (left from fuzz round 6's
elementwise report): ``x_bf16 * np.float32(2)`` is float32 (NEP 50: a NumPy scalar is not weak; it was bfloat16, and
on CuPy shards ``x_bf16 * np.float64(2)`` was bfloat16 where NumPy shards gave float64); ``where(c, x_bf16, int16)``
computes in float32 on CuPy shards too (NumPy's raw DTypePromotionError); the meta backend agrees (``x_bf16 * 1.0``
was float32 there, bfloat16 on the others)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import shardarray as sa
import shardarray.array_api as xp

BF16 = np.dtype(ml_dtypes.bfloat16)


@pytest.fixture(params=[{"r": 2, "c": 2}, {"all": 4}, {"r": 3, "c": 2}], ids=lambda s: "x".join(map(str, s.values())))
def mesh(request: pytest.FixtureRequest):
    m = sa.Mesh(request.param)
    with sa.default_mesh(m):
        yield m


def _x() -> xp.Array:
    return xp.asarray(np.linspace(-2, 3, 15).reshape(5, 3).astype(BF16))


@pytest.mark.parametrize(
    ("scalar", "want"),
    [(2.0, BF16), (np.float32(2), np.dtype("float32")), (np.float64(2), np.dtype("float64")), (2, BF16)],
    ids=repr,
)
def test_numpy_scalars_are_strong(mesh: sa.Mesh, scalar: object, want: np.dtype) -> None:
    x = _x()
    got = x * scalar
    assert got.dtype == want
    np.testing.assert_allclose(np.asarray(got).astype(np.float64), np.asarray(x).astype(np.float64) * 2, rtol=1e-2)
    meta = sa.Mesh(dict(zip(mesh.axis_names, mesh.shape.values())), backend="meta")
    with sa.default_mesh(meta):
        assert (xp.zeros((5, 3), dtype="bfloat16") * scalar).dtype == want


@pytest.mark.parametrize("other", ["int16", "int32", "uint16", "float16"])
def test_where_and_add_with_dtypes_numpy_has_no_rule_for(mesh: sa.Mesh, other: str) -> None:
    x, y = _x(), xp.asarray(np.arange(15).reshape(5, 3).astype(other))
    want = np.dtype("float32") if other in ("int16", "uint16", "float16") else np.dtype("float64")
    for got, ref in (
        (xp.where(x > 0, x, y), np.where(np.asarray(x) > 0, np.asarray(x).astype(np.float64), np.asarray(y))),
        (x + y, np.asarray(x).astype(np.float64) + np.asarray(y)),
    ):
        assert got.dtype == want
        np.testing.assert_allclose(np.asarray(got).astype(np.float64), ref, rtol=1e-2)
