"""What the test modules of the MPI case jobs share (``tests/mpi/test_fuzz15b_mpi.py``, ``test_fuzz16_mpi.py``): the
markers of where a test runs, the hang guard, collective verdicts, the in-step check, and the two tests of a case
module (``case_tests``: each case inside the MPI job; the module as a job of its own, ``mpi_case_jobs.run_cases``).

A test module imports ``guard`` (``from mpi_case_tests import guard as guard``) to put its tests under the guard.
"""

from __future__ import annotations

import faulthandler
import importlib.util
import shutil
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pytest
from mpi_fuzzing import SHAPES
from mpi_fuzzing import agree as _agree_job
from mpi_jobs import ROOT, mpiexec
from spmd import WORLD

import shardarray as sa
import shardarray.array_api as xp

HAVE_MPI = shutil.which("mpiexec") is not None and importlib.util.find_spec("mpi4py") is not None
inmpi = pytest.mark.skipif(WORLD < 2, reason="runs inside an MPI job (mpiexec -n 2 or -n 4)")
outside = pytest.mark.skipif(WORLD > 1 or not HAVE_MPI, reason="launches mpiexec itself: needs mpiexec and mpi4py")
GUARD_S = 120  # a test that takes this long hangs: the job ends with every thread's traceback


@pytest.fixture(autouse=True)
def guard():
    """A test that hangs past ``GUARD_S`` ends the job, with every thread's traceback."""
    faulthandler.dump_traceback_later(GUARD_S, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


def agree(message: str | None) -> None:
    """Fail on every process when any one has a ``message`` (outside MPI: fail here; mpi4py is not started)."""
    if WORLD > 1:
        _agree_job(message)
    else:
        assert message is None, message


def in_step(mesh: sa.Mesh) -> None:
    """The processes are still in step: the next collectives give the right answers on every process."""
    x = xp.asarray(sa.asarray(np.arange(8.0), dims=("i",), mesh=mesh, layout={"i": mesh.axis_names}))
    agree(None if float(xp.sum(x)) == 28.0 and x.numpy()[7] == 7.0 else "out of step")


def _every_case_ok(module: str, cases: int, n: int = 2) -> None:
    """``tests/support/<module>.py`` as a job of ``n`` processes: it ends well, no case is wrong, ``cases`` are ok."""
    proc = mpiexec(n, str(ROOT / "tests" / "support" / f"{module}.py"), timeout=180)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert not [w for w in lines if w.startswith("wrong")], proc.stdout[-3000:]
    assert sum(w.startswith("ok ") for w in lines) == cases, proc.stdout[-3000:]


def case_tests(
    cases: Mapping[str, Any], check: Callable[[str, dict], str | None], module: str
) -> tuple[Callable[..., None], Callable[[], None]]:
    """The two tests of the case module ``tests/support/<module>.py`` (its ``cases`` and ``check(name, shape)``), for
    its test module to bind as ``test_each_feature_matches_numpy_and_the_emulated_comm_log`` and
    ``test_every_case_under_mpiexec_n_2``: each case on the job's meshes (``SHAPES``) inside an MPI job, judged on
    every process together; outside one, the module run as a job of 2 processes (CI runs tests/mpi with 4)."""

    @inmpi
    @pytest.mark.parametrize("name", sorted(cases))
    def each_case(name: str) -> None:
        for shape in SHAPES:
            agree(check(name, shape))

    @outside
    def every_case_under_mpiexec_n_2() -> None:
        """The same cases in a job of 2 processes (CI runs tests/mpi with 4)."""
        _every_case_ok(module, len(cases))

    return each_case, every_case_under_mpiexec_n_2
