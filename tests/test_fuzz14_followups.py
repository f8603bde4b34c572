"""Round 14's follow-ups found by the helpers in files no helper owned: NumPy's einsum broadcasting of a size-0
against a size-1 ``...`` axis, ``np.pad``'s complex statistic modes, odd reflections of bools, ``linear_ramp`` on
the meta backend, and the message of an out-of-range NumPy integer written into an array."""

import numpy as np
import pytest

import shardarray as sa
import shardarray.array_api as xp
from fuzzing import cached_mesh

MESH = {"row": 2, "col": 2}


def _on(h):
    return xp.asarray(h, device=cached_mesh(MESH))


@pytest.mark.parametrize(
    "subscripts, a, b",
    [
        ("...j,...j->...", (0, 2), (1, 2)),
        ("...j,...j->...", (1, 2), (0, 2)),
        ("ij,ij->i", (0, 2), (1, 2)),
        ("...j,...j->...", (3, 2), (1, 2)),
    ],
)
def test_einsum_broadcasts_a_size_one_axis_against_a_size_zero_one_as_numpy(subscripts, a, b):
    """A size-1 axis broadcasts against one of size 0 (the result is empty), as NumPy's einsum; it raised a
    DimensionError (the larger size won, so 1 beat 0)."""
    ha, hb = np.ones(a), np.arange(np.prod(b), dtype=float).reshape(b)
    got = np.einsum(subscripts, _on(ha), _on(hb))
    want = np.einsum(subscripts, ha, hb)
    assert got.shape == want.shape
    np.testing.assert_array_equal(np.asarray(got), want)


def test_bool_vecdot_of_batches_zero_and_one_as_numpy():
    a, b = np.ones((0, 0), bool), np.ones((0, 1), bool)
    got = np.linalg.vecdot(_on(a), _on(b), axis=-2)
    assert got.shape == np.linalg.vecdot(a, b, axis=-2).shape


@pytest.mark.parametrize("mode", ["minimum", "maximum"])
@pytest.mark.parametrize("widths, stat", [((8, 4), 1), ((2, 3), 2)])
def test_pad_statistics_of_complex_values_with_a_stat_length(mode, widths, stat):
    """The masked entries were filled with True/False (the real identities' stand-in) instead of the least or
    greatest complex value: ``minimum`` with ``stat_length=1`` put 1 on the right where NumPy puts 2."""
    h = np.array([1 + 0j, -1 + 1j, 2 + 0j, 0.5 - 3j, 2 + 1j])
    got = xp.pad(_on(h), widths, mode=mode, stat_length=stat)
    np.testing.assert_array_equal(np.asarray(got), np.pad(h, widths, mode=mode, stat_length=stat))


@pytest.mark.parametrize("mode", ["reflect", "symmetric"])
def test_pad_odd_reflection_of_bools_stays_bool_as_numpy(mode):
    """``2 * edge - reflection`` of bools was int64 (values 2 among them); NumPy's result is bool."""
    h = np.array([True, False, True, True, False])
    got = xp.pad(_on(h), (6, 4), mode=mode, reflect_type="odd")
    want = np.pad(h, (6, 4), mode=mode, reflect_type="odd")
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(np.asarray(got), want)


def test_pad_linear_ramp_answers_shapes_on_meta():
    """Its "any step is 0" branch read data, so the meta backend raised BackendError."""
    mesh = sa.Mesh(MESH, backend="meta")
    x = xp.zeros((5, 3), device=mesh)
    assert xp.pad(x, (2, 3), mode="linear_ramp", end_values=1.0).shape == (10, 8)


def test_an_out_of_range_numpy_integer_write_names_itself():
    """Refused as a Python integer is (NumPy raises for some and wraps others); the message said "Python integer"."""
    x = _on(np.zeros(4, np.uint8))
    with pytest.raises(sa.CastError, match="the NumPy integer -2 is out of range for uint8"):
        x[...] = np.int32(-2)
