"""An MPI job (``mpiexec -n 2|4 python mpi_fuzz15_jobs.py MODE``) whose op fails on some processes only.

Run with the hang watchdog far away (``SHARDARRAY_HANG_CHECK_S=300``) and without ``SHARDARRAY_CHECK_SPMD``: only the
failure exchange (``comm.header.fail_together``) can end each case in time. Modes:

* ``cases``: each case makes one argument wrong on process 1 only: a named reshape (``split_dim``) to sizes that do
  not fit, a dim that is not one (``sum``, ``cumsum``), an unknown dtype (``astype``), ``einsum`` subscripts that
  name no dim, a ``k`` out of range (``top_k``), and the positional ``xp.reshape``, ``xp.sum(axis=)`` and
  ``xp.astype``, which check their arguments before their op (every function of the namespace is an op
  boundary: ``core.tape.boundary``);
  then every process fails alike (each raises its own error) and, with 4 processes, processes 1 and 3 fail (both
  named). Each process prints one line per case:
  ``CASE own <ErrorType> <seconds>`` (the failing process, its own error), ``CASE comm <seconds>`` (a process that did
  not fail: ``CommError`` naming the failing process, its error type and the op) or ``CASE wrong ...``; then
  ``aligned <collectives entered>`` when, after every case, the job is still in step (the next collectives give the
  right answers and every process entered as many).
* ``exit``: process 1 fails, catches its error and exits; the others catch their ``CommError`` and go on to a
  collective that process 1 never joins: the job must end (non-zero, with a message), never hang. ``gone``: process
  1 fails where the others send nothing, and they exit: process 1, waiting to tell them, ends the job likewise.
"""

from __future__ import annotations

import sys
import time

import numpy as np
from mpi4py import MPI

import shardarray as sa
import shardarray.array_api as xp
from shardarray.comm import spmd

mode = sys.argv[1]
mesh = sa.Mesh({"row": MPI.COMM_WORLD.Get_size()}, comm="mpi", backend="numpy")
r = mesh.process_index
size = MPI.COMM_WORLD.Get_size()
n = sa.asarray(np.arange(24.0).reshape(8, 3), dims=("a", "b"), mesh=mesh, layout={"a": "row"})
x = xp.asarray(np.arange(24.0).reshape(8, 3), device=mesh)  # (axis 0 split over the mesh)
float(n.sum())  # (warm: the sub-communicators exist)


def cases(bad: bool) -> dict:
    """name -> (op, the error type the failing process raises, the op's name in the others' message)."""
    return {
        "reshape": (lambda: sa.split_dim(n, "a", {"c": 5 if bad else 4, "d": 2}), sa.DimensionError, "split_dim"),
        "dim": (lambda: n.sum("z" if bad else "a"), sa.DimensionError, "sum"),
        "cumsum": (lambda: sa.cumsum(n, "z" if bad else "a"), sa.DimensionError, "cumsum"),
        "dtype": (lambda: n.astype("bogus" if bad else "float32"), sa.DTypeError, "astype"),
        "einsum": (lambda: sa.einsum("a b -> z" if bad else "a b -> b", n), sa.DimensionError, "einsum"),
        "top_k": (lambda: sa.top_k(n, 9 if bad else 2, "a")[0], sa.ArgumentError, "top_k"),
        # (the positional namespace checks these before it calls its op: each of its functions is a boundary)
        "xp_reshape": (lambda: xp.reshape(x, (5, -1) if bad else (4, -1)), sa.DimensionError, "reshape"),
        "xp_axis": (lambda: xp.sum(x, axis=2 if bad else 0), sa.OutOfBoundsError, "sum"),
        "xp_dtype": (lambda: xp.astype(x, "bogus" if bad else xp.float32), sa.DTypeError, "astype"),
        # (round 16: indexing, concat and the submodules' functions check before their first op too)
        "getitem": (lambda: x[9 if bad else 1], sa.OutOfBoundsError, "getitem"),
        "named_getitem": (lambda: n[{"a": 9 if bad else 1}], sa.OutOfBoundsError, "getitem"),
        "isel": (lambda: n.isel(a=9 if bad else 1), sa.OutOfBoundsError, "isel"),
        "setitem": (lambda: _set(x, 9 if bad else 1), sa.OutOfBoundsError, "setitem"),
        "concat": (lambda: sa.concat([n, n], "z" if bad else "a"), sa.DimensionError, "concat"),
        "xp_fft": (lambda: xp.fft.fft(x, axis=5 if bad else 0), sa.OutOfBoundsError, "fft"),
    }


def _set(a, i):
    """``a[i] = 0`` on a copy; the copy (its own op) is returned."""
    b = xp.asarray(a, copy=True)
    b[i] = 0.0
    return b


def run(name: str, failing: set[int]) -> None:
    op, kind, opname = cases(r in failing)[name]
    start = time.monotonic()
    try:
        op().numpy()  # (a process whose op sent nothing meets the failure at numpy()'s collective)
        said = "wrong: returned"
    except sa.CommError as e:
        text = str(e)
        named = all(f"process {f}" in text for f in failing) and kind.__name__ in text and opname in text
        said = "comm" if r not in failing and named else f"wrong: {text[:300]}"
    except kind as e:
        said = f"own {type(e).__name__}" if r in failing else f"wrong: {e!r:.300}"
    say(f"{name} {said} {time.monotonic() - start:.2f}")


def say(line: str) -> None:
    sys.stdout.write(f"{line}\n")  # (one write: the lines of the processes do not interleave)
    sys.stdout.flush()


def in_step() -> str:
    good = float(n.sum()) == 276.0 and n.numpy()[7, 2] == 23.0 and float(n.sum("a").numpy()[1]) == 92.0
    counts = MPI.COMM_WORLD.allgather(spmd.JOB.seq)
    return f"aligned {counts[0]}" if good and len(set(counts)) == 1 else f"wrong: out of step {counts}"


if mode == "cases":
    for name in cases(False):
        run(name, {1})
        say(in_step())
    run("dim", set(range(size)))  # (every process fails alike: each its own error)
    say(in_step())
    if size >= 4:
        run("reshape", {1, 3})
        say(in_step())
elif mode == "exit":
    try:
        n.astype("bogus" if r == 1 else "float32").numpy()
    except sa.DTypeError:
        sys.exit(0)  # (process 1: caught, and gone)
    except sa.CommError:
        say("comm")
    n.numpy()  # (process 1 exited: the job ends here, with a message)
    say("wrong: returned")
elif mode == "gone":
    try:
        n.astype("bogus" if r == 1 else "float32")  # (no collective on the others: process 1 waits to tell them)
    except sa.DTypeError:
        say("wrong: returned")  # (process 1 never returns: the others exit without another collective)
else:
    raise SystemExit(f"unknown mode {mode!r}")
