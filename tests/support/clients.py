"""Helpers of the client tests (tests/clients/): a 2x2 mesh fixture, gathered values, allgather records.

Each test runs one client call on a 2x2 mesh with a split axis (uneven blocks
where the shape allows), compares with the same call on NumPy arrays, and
where it is meaningful checks the comm log for an allgather (a silent gather
of the array) or that the result stays split.
"""

import numpy as np
import pytest

import shardarray as sa


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
