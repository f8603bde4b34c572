"""Whole-array reads that NumPy's own Python code makes of a split array warn ``sa.GatherWarning``
(``shardarray.host_reads``); your own ``np.asarray(x)`` and ``numpy.testing``'s asserts stay silent."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import shardarray as sa
import shardarray.array_api as xp
from shardarray.host_reads import numpy_caller

N = 20_000  # 160,000 bytes of float64: past the 64 KiB threshold


def _split(n: int = N):
    mesh = sa.Mesh({"row": 2, "col": 2})
    return xp.asarray(sa.asarray(np.arange(n, dtype=np.float64), dims=("a",), mesh=mesh, layout={"a": "row"}))


def _gathers(fn) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    return [str(w.message) for w in caught if issubclass(w.category, sa.GatherWarning) and w.filename == __file__]


@pytest.mark.parametrize(
    "call, entry",
    [
        (lambda x: np.ma.masked_array(x, mask=np.zeros(N, bool)), "MaskedArray.__new__"),
        (lambda x: np.ma.masked_invalid(x), "masked_invalid"),
        (lambda x: np.vectorize(lambda v: v + 1.0)(x), "vectorize.__call__"),
        (lambda x: np.polynomial.Polynomial(x), "ABCPolyBase.__init__"),
    ],
)
def test_numpy_code_reading_a_split_array_warns_at_the_callers_line(call, entry):
    """np.ma, np.vectorize and np.polynomial's classes bypass the protocols and gather: the warning names the NumPy
    function called, the bytes, and points at this file's line."""
    x = _split()
    got = _gathers(lambda: call(x))
    assert got, "no GatherWarning at the caller's line"
    assert entry in got[0] and f"{N * 8} bytes" in got[0] and "a=20000" in got[0], got[0]


def test_the_users_own_reads_and_small_or_whole_arrays_stay_silent():
    x = _split()
    assert not _gathers(lambda: np.asarray(x))  # the explicit gather
    assert not _gathers(lambda: np.testing.assert_allclose(x, np.arange(N, dtype=np.float64)))
    assert not _gathers(lambda: np.ma.masked_array(_split(100)))  # 800 bytes: a handful of values
    mesh = sa.Mesh({"row": 2, "col": 2})
    whole = xp.asarray(sa.asarray(np.arange(N, dtype=np.float64), dims=("a",), mesh=mesh, layout={}))
    assert not _gathers(lambda: np.ma.masked_array(whole))  # replicated: every device holds it, nothing gathered


def test_the_values_are_numpys():
    """The warning changes nothing about the result: NumPy's function on the gathered data."""
    x = _split()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sa.GatherWarning)
        m = np.ma.masked_greater(x, 10.0)
    want = np.ma.masked_greater(np.arange(N, dtype=np.float64), 10.0)
    np.testing.assert_array_equal(m.mask, want.mask)
    assert m.sum() == want.sum()


def test_a_stack_shallower_than_asked_is_not_numpys():
    """``__array__`` called from C with no Python frames above (a thread of an extension): no NumPy caller."""
    assert numpy_caller(10_000) is None
