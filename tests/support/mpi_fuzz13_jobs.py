"""An MPI job (``mpiexec -n 4 python mpi_fuzz13_jobs.py CASE``) whose processes pass an op different host arguments
where no collective of the script follows: the job must end non-zero naming the op, never hang nor end silently.

Cases (``r``: the process index): ``exit`` (with ``SHARDARRAY_CHECK_SPMD=1``: ``x[0] = r`` of a replicated ``x``, then
the script ends: the processes compare their notes at exit, and the job ends with status 1 naming the write),
``exit_ok`` (the same write of one value everywhere: the job ends 0), ``empty`` (with the check: ``x[:0]`` on
process 0, ``x[:4]`` elsewhere: process 0's conversion needs no collective, it exits while the others wait, and the
job ends naming the slice's arguments), ``top_k0`` (``sa.top_k`` with ``k=0`` on
process 0 only, over a split dim: process 0 needs no exchange and leaves, the others wait in it; the job ends naming
the collective). Prints ``done`` on every process that got through.
"""

from __future__ import annotations

import sys

import numpy as np

import shardarray as sa

case = sys.argv[1]
mesh = sa.Mesh({"row": 4}, comm="mpi", backend="numpy")
r = mesh.process_index
x = sa.asarray(np.arange(8.0), dims=("a",), mesh=mesh, layout={"a": "row"})
float(x.sum())  # (warm: the sub-communicators exist)
if case in ("exit", "exit_ok"):
    y = sa.asarray(np.arange(8.0), dims=("a",), mesh=mesh)  # replicated: converting it needs no collective
    y[{"a": 0}] = float(r if case == "exit" else 7)
    print(float(y.numpy()[0]), "done", flush=True)
elif case == "empty":  # (with the check: process 0's slice is empty, needs no collective, and it exits)
    y = sa.asarray(np.arange(8.0), dims=("a",), mesh=mesh, layout={"a": "row"})[{"a": slice(0, 4 if r else 0)}]
    print(y.numpy().shape, "done", flush=True)
elif case == "top_k0":
    v, _ = sa.top_k(x, 0 if r == 0 else 1, dim="a")
    print(v.shape, "done", flush=True)
else:
    raise SystemExit(f"unknown case {case!r}")
