"""Round 15's follow-ups in files no helper owned: ``ufunc.at`` of subtract through the generic path (NumPy's
wrap-around for unsigned values), float repeats of ``np.add.at`` applied in key order, ``x.flat`` writes."""

from __future__ import annotations

import numpy as np
import pytest

import shardarray as sa
import shardarray.array_api as xp


@pytest.fixture
def mesh():
    return sa.Mesh({"row": 2, "col": 2})


@pytest.mark.parametrize("dtype, value", [(np.uint8, 2), (np.int32, True), (np.float64, 0.5), (np.int8, [1, 2, 3])])
def test_subtract_at_as_numpy(mesh, dtype, value):
    a = np.array([1, 5, 7], dtype)
    x = xp.asarray(a, device=mesh)
    np.subtract.at(a, [0, 0, 2], value)  # uint8: 1 - 2 - 2 wraps to 253, as NumPy (a CastError before)
    np.subtract.at(x, [0, 0, 2], value)
    np.testing.assert_array_equal(x.numpy(), a)
    assert x.dtype == a.dtype


def test_add_at_float_repeats_in_key_order(mesh):
    a = np.array([1e16, 0.0, 3.0, 1.0])
    x = xp.asarray(a, device=mesh)
    key, value = [0, 0, 3, 0], np.array([-1.0, -1.0, 2.0, 4.0])
    np.add.at(a, key, value)  # 1e16 - 1 rounds back to 1e16 each time; summed first the -2 would show
    np.add.at(x, key, xp.asarray(value, device=mesh))
    np.testing.assert_array_equal(x.numpy(), a)


@pytest.mark.parametrize("key", [3, -1, slice(1, None, 3), [0, -2], np.array([1, 5]), np.arange(12) % 3 == 0])
def test_flat_writes_name_only_the_positions(mesh, key):
    a = np.arange(12.0).reshape(3, 4)
    x = xp.asarray(a, device=mesh)
    a.flat[key] = -7
    x.flat[key] = -7
    np.testing.assert_array_equal(x.numpy(), a)
    np.testing.assert_array_equal(np.asarray(x.flat[key]), a.flat[key])


def test_a_masked_array_operand_is_refused_not_gathered(mesh):
    """``x + masked``: NumPy's ufunc protocol refuses the mix (a host array), where ``np.ma``'s reflected operator
    read the Array whole through ``__array__`` and returned a host MaskedArray."""
    x = xp.asarray(np.array([1.0, 2.0]), device=mesh)
    masked = np.ma.masked_values(np.array([1.0, -1.0]), -1.0)
    with pytest.raises(sa.DTypeError, match=r"xp\.asarray"):
        _ = x + masked
    with pytest.raises(sa.DTypeError, match=r"xp\.asarray"):
        _ = x * np.array([1.0, 2.0])


@pytest.mark.parametrize("reflected", [False, True])
def test_matmul_with_a_python_list_names_xp_asarray(mesh, reflected):
    x = xp.asarray(np.array([1.0, 2.0]), device=mesh)
    with pytest.raises(sa.DTypeError, match=r"xp\.asarray"):
        _ = [1.0, 2.0] @ x if reflected else x @ [1.0, 2.0]


def test_asarray_like_makes_a_positional_array(mesh):
    with sa.default_mesh(mesh):
        ref = xp.asarray(np.zeros(1))
        got = np.asarray(np.array([1.0, 2.0]), like=ref)
    assert isinstance(got, xp.Array)
    np.testing.assert_array_equal(got.numpy(), [1.0, 2.0])
