"""Helpers of the client tests (tests/clients/): a 2x2 mesh fixture, gathered values, allgather records.

Each test runs one client call on a 2x2 mesh with a split axis (uneven blocks
where the shape allows), compares with the same call on NumPy arrays, and
where it is meaningful checks the comm log for an allgather (a silent gather
of the array) or that the result stays split.
"""

import numpy as np
import pytest

import shardarray as sa
import shardarray.array_api as xp


@pytest.fixture
def mesh():
    """The 2x2 mesh the clients run on; also the default mesh of ``xp.asarray``."""
    m = sa.Mesh({"row": 2, "col": 2})
    with sa.default_mesh(m):
        yield m


def values(x):
    """``x`` as NumPy: a shardarray's global value, a NumPy array or scalar as it is."""
    if hasattr(x, "numpy") and callable(x.numpy):
        return x.numpy()
    return np.asarray(x)


def gathers(log, min_elements=0):
    """The allgather records of ``log`` that move at least ``min_elements`` per device."""
    return [r for r in log.records if r.op == "allgather" and r.elements >= min_elements]


def leaves(result):
    """The arrays and values of a result, tuples and lists flattened (a book case's result is compared leaf by leaf)."""
    if isinstance(result, (tuple, list)):
        return [leaf for item in result for leaf in leaves(item)]
    return [result]


def same(got, want, label="", host=False):
    """``got`` (ours) matches NumPy's ``want``: dtypes and strings equal; an array result is a positional Array (unless
    ``host``: a NumPy type the library returns on the host by design) of NumPy's dtype, shape and values (float64 to
    1e-10, float32 and complex64 to 1e-5, NaN where NumPy's is NaN)."""
    if isinstance(want, (np.dtype, str)):
        assert got == want, (label, got, want)
        return
    if isinstance(want, np.ndarray) and want.ndim and not host:
        assert isinstance(got, xp.Array), (label, type(got))
    got, want = np.asarray(values(got)), np.asarray(want)
    assert (got.dtype, got.shape) == (want.dtype, want.shape), (label, got.dtype, got.shape, want.dtype, want.shape)
    if want.dtype.kind in "fc":
        single = want.dtype in (np.float32, np.complex64)
        rtol, atol = (1e-5, 1e-6) if single else (1e-10, 1e-12)
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True, err_msg=label)
    else:
        np.testing.assert_array_equal(got, want, err_msg=label)
