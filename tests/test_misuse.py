"""The misuse sweep: every public function, the CLIs and MPI jobs, given what a new user gets wrong.

Each case must raise a typed ``sa`` error (a ``ShardArrayError`` that is also a
``ValueError`` or ``TypeError``) whose message names the culprit and the way
out; a CLI must exit non-zero with a short message and no traceback; an MPI
job must end non-zero within its time limit instead of hanging. The cases live
in ``tests/support/misuse_*.py``, one module per area (see ``tests/support/misuse.py``).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import shardarray as sa
from misuse import Case, CliCase, MpiCase
from mpi_jobs import JobHung, mpiexec

HERE = Path(__file__).parent
ROOT = HERE.parent
MODULES = sorted(p.stem for p in (HERE / "support").glob("misuse_*.py"))
ALL = [c for m in MODULES for c in importlib.import_module(m).CASES]
CASES = [c for c in ALL if isinstance(c, Case)]
CLI = [c for c in ALL if isinstance(c, CliCase)]
MPI = [c for c in ALL if isinstance(c, MpiCase)]
INSIDE_MPI = int(os.environ.get("PMI_SIZE", os.environ.get("OMPI_COMM_WORLD_SIZE", "0"))) > 1
HAVE_MPI = shutil.which("mpiexec") is not None and importlib.util.find_spec("mpi4py") is not None


def test_the_sweep_is_broad():
    ids = [c.id for c in ALL]
    assert len(set(ids)) == len(ids), "case ids must be unique"
    assert len(ALL) >= 120


def _says(text: str, case) -> None:
    for word in (*case.names, *case.fix):
        assert word in text, f"the message should name {word!r}; it is: {text}"


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_in_process(case: Case):
    assert issubclass(case.error, sa.ShardArrayError)
    with pytest.raises(case.error) as info:
        case.call()
    err = info.value
    assert isinstance(err, sa.ShardArrayError) and isinstance(err, (ValueError, TypeError)), type(err)
    _says(str(err), case)


@pytest.mark.parametrize("case", CLI, ids=lambda c: c.id)
def test_cli(case: CliCase):
    env = {**os.environ, "PYTHONPATH": str(ROOT), **case.env}
    proc = subprocess.run([sys.executable, *case.argv], capture_output=True, text=True, timeout=120, env=env,
                          cwd=ROOT)
    assert proc.returncode != 0, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    _says(proc.stderr, case)


@pytest.mark.skipif(INSIDE_MPI or not HAVE_MPI, reason="needs mpiexec and mpi4py, run outside an MPI job")
@pytest.mark.parametrize("case", MPI, ids=lambda c: c.id)
def test_mpi_job_ends(case: MpiCase, tmp_path):
    script = tmp_path / "job.py"
    script.write_text(case.script)
    try:  # a hung job is killed with every process it started (see tests/support/mpi_jobs.py)
        proc = mpiexec(case.n, str(script), timeout=case.timeout, env=case.env)
    except JobHung as e:
        pytest.fail(f"the MPI job {case.id} hung: {e}")
    assert proc.returncode != 0, proc.stdout + proc.stderr
    _says(proc.stdout + proc.stderr, case)
