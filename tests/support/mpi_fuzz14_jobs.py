"""An MPI job (``mpiexec -n 4 python mpi_fuzz14_jobs.py CASE``) whose processes pass an op different host arguments
and then go different ways: every process must raise the same ``CommError`` (run with the hang watchdog off,
``SHARDARRAY_HANG_CHECK_S=0``, and without ``SHARDARRAY_CHECK_SPMD``: the job's header alone must catch it).

Cases (``r``: the process index): ``reshape`` (``xp.reshape`` of a split array to ``(3, 8)`` on process 1, to
``(8, 3)`` elsewhere, then ``numpy()``: process 1 entered an ``Alltoallv`` over the mesh axis, the others
``numpy()``'s check of ``COMM_WORLD``, and the job hung). Prints ``typed`` on every process that caught the error and
whose next collective gave the right answer.
"""

from __future__ import annotations

import sys

import numpy as np

import shardarray as sa
import shardarray.array_api as xp

case = sys.argv[1]
mesh = sa.Mesh({"row": 4}, comm="mpi", backend="numpy")
r = mesh.process_index
x = xp.asarray(np.arange(24.0).reshape(8, 3), device=mesh)
float(xp.sum(x))  # (warm: the sub-communicators exist)
if case == "reshape":
    try:
        xp.reshape(x, (3, 8) if r == 1 else (8, 3)).numpy()
    except sa.CommError as e:
        ok = "SPMD mismatch" in str(e) and float(xp.sum(x)) == 276.0
        print("typed" if ok else f"wrong: {e}", flush=True)
else:
    raise SystemExit(f"unknown case {case!r}")
