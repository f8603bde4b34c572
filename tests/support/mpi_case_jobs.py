"""What the MPI case modules share (``mpi_fuzz15b_cases.py``, ``mpi_fuzz16_cases.py``): the job's meshes, inputs
placed on them, gathered values, a case run on the MPI mesh and on the emulated mesh of the same shape with its comm
log and judged against NumPy (``check_case``), and the job that runs every case (``run_cases``: ``mpiexec -n 2
python tests/support/<module>.py`` prints ``ok <case>`` or ``wrong: ...`` per case).

A case is ``(run(mesh, axes), numpy())``: ``run`` builds the same global input on every process and runs the op on
``mesh`` (``axes``: its axis names), ``numpy`` runs it on NumPy. No pytest here: the modules run as jobs by
themselves (``tests/support/mpi_case_tests.py`` has what their test modules share).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

import shardarray as sa
import shardarray.array_api as xp

#: a case: (run it on a mesh and its axis names, run it on NumPy)
Case = tuple[Callable[[sa.Mesh, tuple[str, ...]], Any], Callable[[], Any]]
#: a comm log record as compared: (op, axes, group size, elements, bytes)
Record = tuple[Any, ...]

_MESHES: dict = {}


def mesh_of(shape: dict, comm: str) -> sa.Mesh:
    """The mesh of ``shape`` with ``comm`` ("mpi" or "emulated"), NumPy shards, built once."""
    key = (tuple(shape.items()), comm)
    if key not in _MESHES:
        _MESHES[key] = sa.Mesh(dict(shape), comm=comm, backend="numpy")
    return _MESHES[key]


def placed(h: np.ndarray, mesh: sa.Mesh, layout: list[Any]) -> Any:
    """``h`` as a positional array on ``mesh``, axis ``k`` split over ``layout[k]`` (mesh axes, or None)."""
    dims = tuple(f"d{i}" for i in range(h.ndim))
    lay = {d: tuple(a) for d, a in zip(dims, layout) if a}
    return xp.asarray(sa.asarray(h, dims=dims, mesh=mesh, layout=lay))


def gathered(v: Any) -> Any:
    """NumPy values of a result (``numpy()`` of each array: a collective every process enters)."""
    if isinstance(v, (list, tuple)):
        return [gathered(u) for u in v]
    return v.numpy() if isinstance(v, sa.ShardArray) else np.asarray(v)


def quiet(fn: Callable[[], Any]) -> Any:
    """``fn()`` with warnings and floating-point errors silenced."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return fn()


def differs(got: Any, want: Any) -> str | None:
    """What differs between ``got`` and NumPy's ``want`` (lists item by item): dtype, shape, values exactly (NaN
    where NumPy's is NaN), or None."""
    if isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            return f"got {type(got).__name__} of {len(got)}; NumPy a list of {len(want)}"
        return next((m for m in (differs(g, w) for g, w in zip(got, want)) if m), None)
    g, w = np.asarray(got), np.asarray(want)
    if g.dtype != w.dtype or g.shape != w.shape:
        return f"got {g.dtype}{g.shape}, NumPy {w.dtype}{w.shape}"
    if not np.array_equal(g, w, equal_nan=g.dtype.kind in "fc"):
        return f"got {g!r:.300}, NumPy {w!r:.300}"
    return None


def run_on(
    mesh: sa.Mesh, fn: Callable, leave_out: Callable[[Record], bool] | None = None
) -> tuple[list[Record] | None, Any, str | None]:
    """``fn(mesh, axes)`` with its comm log and gathered value, or the error it raised (type name).

    ``leave_out``: the records of an MPI mesh's log not compared (what only MPI runs as a collective, where the
    emulated mesh reads the host); None keeps them all.
    """
    try:
        with sa.comm_log() as log:
            got = quiet(lambda: fn(mesh, tuple(mesh.axis_names)))
        records = [(r.op, r.axes, r.group_size, r.elements, r.bytes) for r in log.records]
        if leave_out is not None and mesh.comm_kind == "mpi":
            records = [r for r in records if not leave_out(r)]
        return records, quiet(lambda: gathered(got)), None
    except Exception as e:  # (judged by the caller: the emulated mesh must raise the same)
        return None, None, f"{type(e).__name__}: {e!s:.200}"


def check_case(
    name: str,
    case: Case,
    shape: dict,
    judge: Callable[[Any, Any], str | None] = differs,
    leave_out: Callable[[Record], bool] | None = None,
) -> str | None:
    """Case ``name`` on the MPI mesh of ``shape`` against NumPy (``judge(got, want)``) and the emulated mesh's log:
    None, or what is wrong (on this process)."""
    fn, want = case
    log_e, _, err_e = run_on(mesh_of(shape, "emulated"), fn, leave_out)
    log_m, got, err_m = run_on(mesh_of(shape, "mpi"), fn, leave_out)
    if err_m or err_e:
        return f"{name}: raised on MPI {err_m}, emulated {err_e}"
    if log_m != log_e:
        return f"{name}: comm log {log_m}, emulated {log_e}"
    wrong = judge(got, quiet(want))
    return None if wrong is None else f"{name}: {wrong}"


def run_cases(cases: Mapping[str, Case], check: Callable[[str, dict], str | None]) -> None:
    """The job: every case (``check(name, shape)``) on each mesh of the job's size; prints ``ok <case>`` or
    ``wrong: ...`` per case."""
    from mpi4py import MPI  # (only the job itself starts MPI)

    world = MPI.COMM_WORLD
    n = world.Get_size()
    shapes = [{"row": n}] + ([{"row": 2, "col": n // 2}] if n % 2 == 0 and n > 2 else [])
    for shape in shapes:
        for name in cases:
            said = world.allgather(check(name, shape))
            bad = [f"process {r}: {m}" for r, m in enumerate(said) if m]
            if world.Get_rank() == 0:
                print(f"wrong: {shape} {'; '.join(bad)}" if bad else f"ok {name}", flush=True)
