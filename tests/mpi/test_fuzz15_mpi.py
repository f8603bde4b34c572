"""Fuzzing round 15 under MPI: an op that fails on some processes only never leaves the others waiting.

An argument that only some processes find wrong (a per-process reshape size, a dim that is not one, an unknown dtype,
``einsum`` subscripts, ``top_k``'s ``k``) raised the typed error on those processes alone, before any collective; the
others entered the op's collective (or their next one) and waited for them until the hang watchdog ended the job, or
met them later in another collective with a message about something else. Now the error leaving the outermost op of
an MPI mesh is told to the others in the job's header (``comm.header.fail_together``): they raise ``CommError`` naming
the process, its error and the op, at once; the failing process raises its own error; every process counted one
collective, so a program that catches the errors alike on every process goes on in step. Processes that all failed
each raise their own error.

The jobs run in subprocesses (``mpiexec -n 2`` and ``-n 4``) with the hang watchdog far away
(``SHARDARRAY_HANG_CHECK_S=300``): only the failure exchange can end a case in time. The unit tests check which errors
are told (only those leaving the outermost op of an MPI mesh, once). ``tests/support/mpi_fuzz15_jobs.py`` has the jobs.
"""

from __future__ import annotations

import importlib.util
import shutil
import time
from collections import Counter
from types import SimpleNamespace

import numpy as np
import pytest
from mpi_fuzzing import agree, mpi_mesh
from mpi_jobs import ROOT, mpiexec
from spmd import WORLD

import shardarray as sa
from shardarray.comm import header, job, watchdog
from shardarray.comm import mpi as mpi_comm
from shardarray.core import tape

HAVE_MPI = shutil.which("mpiexec") is not None and importlib.util.find_spec("mpi4py") is not None
outside = pytest.mark.skipif(WORLD > 1 or not HAVE_MPI, reason="launches mpiexec itself: needs mpiexec and mpi4py")
mpi4 = pytest.mark.skipif(WORLD != 4, reason="needs mpiexec -n 4 (see .ci/run)")
one = pytest.mark.skipif(WORLD > 1, reason="changes this process's SPMD state: one process")
JOBS = str(ROOT / "tests" / "support" / "mpi_fuzz15_jobs.py")
ENV = {"SHARDARRAY_HANG_CHECK_S": "300", "SHARDARRAY_CHECK_SPMD": "0"}  # (the watchdog cannot end a case in time)
CASES = (
    *("reshape", "dim", "cumsum", "dtype", "einsum", "top_k", "xp_reshape", "xp_axis", "xp_dtype"),
    *("getitem", "named_getitem", "isel", "setitem", "concat", "xp_fft"),
)
QUICK_S = 5.0  # a case that takes longer waited for something


# =============================================================================================== 1. whole jobs


@outside
@pytest.mark.parametrize("n", [2, 4])
def test_an_op_failing_on_some_processes_raises_commerror_on_the_others_at_once(n):
    """Each case fails on process 1 only: it raises its own typed error, every other process ``CommError`` naming it
    (its error type and the op), within seconds; after each case the job is in step (the next collectives give the
    right answers, every process entered as many). Then every process fails alike (each its own error) and, with 4
    processes, processes 1 and 3 fail (both named)."""
    proc = mpiexec(n, JOBS, "cases", timeout=120, env=ENV)
    out = proc.stdout
    assert proc.returncode == 0, out[-2000:] + proc.stderr[-3000:]
    lines = [line.split() for line in out.splitlines() if line.strip()]
    assert not [w for w in lines if "wrong:" in w], out[-3000:]
    said = Counter((w[0], w[1]) for w in lines if w[0] in CASES)
    for case in CASES:
        assert said[(case, "own")] == 1 + (case == "dim") * n + 2 * (case == "reshape" and n == 4), (case, said)
        assert said[(case, "comm")] == n - 1 + (case == "reshape" and n == 4) * (n - 2), (case, said)
    assert all(float(w[-1]) < QUICK_S for w in lines if w[0] in CASES), out
    steps = [w[1] for w in lines if w[0] == "aligned"]
    assert len(steps) == n * (len(CASES) + 1 + (n == 4)) and all(steps.count(s) == n for s in steps), out


@outside
@pytest.mark.parametrize("mode", ["exit", "gone"])
def test_a_process_that_fails_and_exits_ends_the_job_with_a_message(mode):
    """``exit``: process 1 fails, catches its error and exits; process 0 caught its ``CommError`` and waits in a
    collective process 1 never joins. ``gone``: process 1 fails where process 0 sends nothing, and process 0 exits
    while process 1 waits to tell it. Either way the job ends non-zero, naming the process that left, never hangs."""
    start = time.monotonic()
    proc = mpiexec(2, JOBS, mode, timeout=120, env=ENV)
    assert proc.returncode != 0 and "wrong" not in proc.stdout, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert "exited after" in proc.stderr and time.monotonic() - start < 100, proc.stderr[-3000:]
    if mode == "exit":
        assert proc.stdout.split() == ["comm"], proc.stdout
    else:
        assert "process 1 failed where other processes did not" in proc.stderr, proc.stderr[-3000:]
        assert "Process 1's error: DTypeError: unknown dtype 'bogus'" in proc.stderr, proc.stderr[-3000:]


@mpi4
def test_inside_a_job_the_failing_process_raises_its_error_and_the_others_commerror():
    """In this 4-process job: process 2 sums over a dim that is not one, the others over a split dim (an allreduce,
    where they waited for process 2); then every process goes on in step."""
    mesh = mpi_mesh({"row": 2, "col": 2})
    n = sa.asarray(np.arange(24.0).reshape(8, 3), dims=("a", "b"), mesh=mesh, layout={"a": ("row", "col")})
    r = mesh.process_index
    try:
        n.sum("z" if r == 2 else "a").numpy()
        said = "returned"
    except sa.DimensionError as e:
        said = None if r == 2 else f"{e!r:.300}"
    except sa.CommError as e:
        said = None if r != 2 and "process 2" in str(e) and "DimensionError" in str(e) else f"{e!r:.300}"
    agree(said)
    agree(None if float(n.sum()) == 276.0 and n.numpy()[7, 2] == 23.0 else "out of step")


# =============================================================================================== 2. what is told


class _Comm:
    def __init__(self, header: bool) -> None:
        self.job_header = header
        self.world = object()


class _Array:
    """Stands for a ShardArray (``comm.job._is_array`` asks its class for ``shards`` and ``dims``)."""

    shards = dims = None

    def __init__(self, comm: _Comm) -> None:
        self.mesh = SimpleNamespace(comm=comm)


@pytest.fixture
def told(monkeypatch):
    """The errors ``as_op`` tells the other processes (``fail_together`` recorded, not sent)."""
    seen: list[BaseException] = []
    monkeypatch.setattr(header._OP, "current", None)
    monkeypatch.setattr(header, "fail_together", lambda world, e: seen.append(e))
    return seen


def _fail(error: BaseException):
    def op(*args, **kwargs):
        raise error

    return op


@one
def test_an_error_leaving_the_outermost_op_of_an_mpi_mesh_is_told_once_and_reraised(told):
    error = sa.DimensionError("bad")
    x = _Array(_Comm(True))
    with pytest.raises(sa.DimensionError) as got:
        header.as_op("reshape", _fail(error), _fail(error), ([x], (5, -1)), {})
    assert got.value is error and told == [error]


@one
def test_a_function_marked_as_a_boundary_tells_its_error_in_a_job(told, monkeypatch):
    """``core.tape.boundary``: a public function that checks its arguments before its ops (the positional
    namespace's) tells an error it raises in a job, as an op does; outside a job it is the function itself."""
    error = sa.DimensionError("cannot reshape")

    @tape.boundary
    def reshape(x, shape):
        raise error

    x = _Array(_Comm(True))
    with pytest.raises(sa.DimensionError):
        reshape(x, (5, -1))
    assert told == []
    monkeypatch.setattr(header.JOB, "job", True)
    with pytest.raises(sa.DimensionError) as got:
        reshape(x, (5, -1))
    assert got.value is error and told == [error]


@one
@pytest.mark.parametrize(
    "args, kwargs",
    [((_Array(_Comm(False)), 3), {}), ((3,), {"x": _Array(_Comm(False))}), ((3, "a"), {})],
    ids=["emulated-or-nccl", "keyword", "no-mesh"],
)
def test_errors_of_ops_on_other_meshes_are_not_told(told, args, kwargs):
    """A mesh of this process alone, or NCCL's (``job_header`` False), or no mesh at all: each process may raise on
    its own (NCCL's collectives are left to the watchdog)."""
    with pytest.raises(sa.ArgumentError):
        header.as_op("op", len, _fail(sa.ArgumentError("bad")), args, kwargs)
    assert told == []


@one
def test_an_error_caught_inside_the_op_or_settled_is_not_told(told):
    """Only an error that leaves the outermost op is told: a nested op's error the outer op catches is not, nor one a
    check raised on every process alike (``settle``)."""
    x = _Array(_Comm(True))

    def outer(a):
        try:
            header.as_op("inner", len, _fail(sa.DTypeError("inner")), (a,), {})
        except sa.DTypeError:
            return "recovered"

    assert header.as_op("outer", outer, outer, (x,), {}) == "recovered"
    with pytest.raises(sa.CommError):
        header.as_op("op", len, _fail(job.settle(sa.CommError("mismatch"))), (x,), {})
    assert told == []


@one
def test_an_error_inside_a_collective_whose_data_may_move_is_not_told(monkeypatch):
    """An error raised after a collective's header passed (the others may be inside its data movement with this
    process, where no header reaches them) is settled, left to the uncaught abort or the watchdog; a group's verdict
    raised before any data moves (``MpiCommunicator._agree`` leaves the collective first) is told."""
    monkeypatch.setattr(job._State, "seq", 10)
    monkeypatch.setattr(job._State, "inflight", 0)

    def entered() -> None:  # (what ``enter`` leaves behind when the header passed)
        job._State.seq += 1
        job._State.inflight = job._State.seq

    @mpi_comm.collective
    def moving():
        entered()
        raise sa.CommError("MPI error while the data moves")

    @mpi_comm.collective
    def refused():
        entered()
        watchdog.leave()
        raise sa.CommError("the group's blocks differ")

    with pytest.raises(sa.CommError) as inside:
        moving()
    with pytest.raises(sa.CommError) as before:
        refused()
    assert job.settled(inside.value) and not job.settled(before.value) and job._State.inflight == 0


@one
def test_the_failure_exchange_meets_any_collective_for_the_watchdog():
    """A process stuck in its failure exchange waits for whichever collective the others enter next: never judged a
    deadlock against it (``_same_collective``)."""
    failed = (5, f"{job.FAILED_OP} (DTypeError: bad, in astype())", (), "?", None, None, None, None, None)
    other = (5, "numpy", (), "float64", (2,), None, None, (4,), None)
    assert watchdog._same_collective(failed, other) and watchdog._same_collective(other, failed)
    assert not watchdog._same_collective(other, (5, "allreduce", ("row",), "float64", (2,), (0, 1), None, None, None))


@one
def test_a_process_that_waits_long_to_tell_its_error_prints_it(capsys):
    """After ``SHARDARRAY_HANG_CHECK_S`` seconds in its failure exchange a process prints its error once (the others
    may be computing, or in a collective of the program's own, which never meets it) and goes on waiting."""
    failed = (5, f"{job.FAILED_OP} (DTypeError: bad, in astype())", (), "?", None, None, None, None, None)
    watchdog._still_telling(1, failed, 10.0)
    err = capsys.readouterr().err
    assert "process 1 has waited 10 s to tell the other processes of its error (DTypeError: bad, in astype())" in err


def test_the_message_names_each_failing_process_its_error_and_the_op():
    sig = (7, "allreduce", ("row",), "float64", (2, 3), (0, 1), None, None, None)
    text = header.peer_failed([(1, "DimensionError: bad size, in split_dim(x=<array>)"), (3, "DTypeError: d")], sig)
    assert "processes 1, 3" in text and "process 1: DimensionError: bad size, in split_dim" in text
    assert "process 3: DTypeError: d" in text and "#7 allreduce over axes ('row',)" in text


def test_settle_marks_an_error():
    e = ValueError("x")
    assert not job.settled(e) and job.settle(e) is e and job.settled(e)
