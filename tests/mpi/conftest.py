"""Fixtures of the multi-process tests (``mpiexec -n 4 python -m pytest -q tests/mpi``)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def shared_dir(tmp_path):
    """One directory every process agrees on (process 0's tmp_path, sent as bytes)."""
    from mpi4py import MPI

    from shardarray.checkpoint.procs import Procs

    return Path(Procs(MPI.COMM_WORLD).bcast(str(tmp_path)))
