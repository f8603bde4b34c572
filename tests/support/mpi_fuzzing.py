"""What the MPI differential fuzzers share (``tests/mpi/test_fuzz*_mpi.py``): settings every process draws alike,
the hang guard, collective verdicts, the job's meshes, and the gathered results' digest.

Every process must draw the same hypothesis examples (``derandomize``, no database, no shrinking: a shrink that
timed out on one process only would leave the others waiting) and decide every check together (``agree``), so all
processes fail together; a case that hangs ends the job after ``HANG_S`` seconds with every thread's traceback
(``no_hang``, imported into a test module as an autouse fixture).
"""

from __future__ import annotations

import faulthandler
import hashlib
import os
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from spmd import WORLD

import shardarray as sa

HANG_S = 240  # (a whole fuzzer's time: far beyond its run; only a hang gets there)
#: the mesh shapes of the job's size: every process holds one device
SHAPES = {2: [{"row": 2}], 3: [{"row": 3}], 4: [{"row": 4}, {"row": 2, "col": 2}]}.get(WORLD, [{"row": WORLD}])


def mpi_fuzz(n: int, env: str) -> settings:
    """A fuzzer's settings: ``n`` examples (the environment variable ``env`` overrides), the same on every process."""
    given = os.environ.get(env)
    return settings(
        max_examples=int(given) if given else n,
        deadline=None,
        derandomize=True,
        database=None,
        phases=(Phase.explicit, Phase.generate),
        suppress_health_check=list(HealthCheck),
        print_blob=False,
    )


@pytest.fixture(autouse=True)
def no_hang():
    """A test that hangs (a collective some process never enters) ends the job, with tracebacks."""
    faulthandler.dump_traceback_later(HANG_S, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


def world():
    from mpi4py import MPI

    return MPI.COMM_WORLD


def agree(message: str | None) -> None:
    """Fail on every process when any one has a ``message`` (a check failed there), naming them all."""
    seen = world().allgather(message)
    bad = {r: m for r, m in enumerate(seen) if m is not None}
    if bad:
        raise AssertionError("; ".join(f"process {r}: {m}" for r, m in bad.items()))


_MESHES: dict = {}


def mpi_mesh(shape: dict) -> sa.Mesh:
    """The MPI mesh of ``shape`` (NumPy shards), built once per shape."""
    key = tuple(shape.items())
    if key not in _MESHES:
        _MESHES[key] = sa.Mesh(dict(shape), comm="mpi", backend="numpy")
    return _MESHES[key]


@st.composite
def meshes(draw):
    """One of the job's meshes (``SHAPES``), from the cache."""
    return mpi_mesh(draw(st.sampled_from(SHAPES)))


def gathered(got):
    """The result as NumPy values (``numpy()`` of each array: a collective every process enters)."""
    if isinstance(got, (tuple, list)):
        return type(got)(gathered(g) for g in got)
    if isinstance(got, sa.ShardArray):
        return got.numpy()
    return got


def digest(values, h=None) -> str:
    """A hash of gathered values (types, dtypes, shapes and bytes): every process must compute the same."""
    h = hashlib.sha256() if h is None else h
    for v in values if isinstance(values, (tuple, list)) else (values,):
        if isinstance(v, (tuple, list)):
            digest(v, h)
            continue
        a = np.asarray(v)
        h.update(f"{type(v).__name__}{a.dtype}{a.shape}".encode())
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def quiet(fn):
    """``fn()`` with warnings and floating-point errors silenced."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return fn()
