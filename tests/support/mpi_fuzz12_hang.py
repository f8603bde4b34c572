"""An MPI job (``mpiexec -n 4 python mpi_fuzz12_hang.py CASE``) whose processes disagree on an op's argument after
their sub-communicators exist, so that they wait in different collectives: the watchdogs must end the job, naming
the collectives (``comm.spmd``'s deadlock check, ``SHARDARRAY_HANG_CHECK_S`` seconds after they got stuck).

Cases (``r``: the process index): ``sum_axis`` (``xp.sum(x, axis=r % 2)``: processes 0 and 2 allreduce, 1 and 3 go
on to ``numpy()``), ``roll`` (``xp.roll(x, r)``: 0 returns at once), ``cumsum`` (``cumulative_sum`` along
``r % 2``), ``reshard`` (a layout that differs on process 0) and ``slow`` (process 0 sleeps past the limit before
a collective the others wait in: no deadlock, the job ends 0). Prints ``done`` on every process that got through.
"""

from __future__ import annotations

import sys
import time

import numpy as np

import shardarray as sa
import shardarray.array_api as xp
from shardarray.array import as_kind

case = sys.argv[1]
mesh = sa.Mesh({"row": 4}, comm="mpi", backend="numpy")
r = mesh.process_index
x = as_kind(sa.asarray(np.arange(8.0).reshape(4, 2), dims=("a", "b"), mesh=mesh, layout={"a": "row"}), xp.Array)
float(xp.sum(x))  # (warm: the sub-communicators of the mesh exist, so no Split check meets the disagreement)
if case == "sum_axis":
    y = xp.sum(x, axis=r % 2)
elif case == "roll":
    y = xp.roll(x, r, axis=0)
elif case == "cumsum":
    y = xp.cumulative_sum(x, axis=r % 2)
elif case == "reshard":
    y = sa.reshard(as_kind(x, sa.ShardArray), mesh, {"a": "row"} if r else {"b": "row"})
elif case == "slow":
    if r == 0:
        time.sleep(3 * float(sys.argv[2]))  # (the others wait in the allreduce meanwhile: slow, not stuck)
    y = xp.sum(x, axis=0)
else:
    raise SystemExit(f"unknown case {case!r}")
print(y.numpy().tolist(), "done", flush=True)
