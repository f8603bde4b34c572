"""Fuzzing round 13 under MPI: a host argument that differs between processes never mixes silently, and never hangs.

Under ``mpiexec`` every process runs the same ops; a Python scalar, index, ``k``, axis or dim name computed from
``mesh.process_index`` (or drawn per process) made each process compute something else, and the blocks of one array
mixed without an error:

* ``sa.top_k(x, k=r + 1)`` over a split dim: each process kept its own number of candidates and the exchange returned
  a scrambled answer. ``k`` now travels in the exchange's header (``comm.spmd.note(agree=True)``, always on, a few
  bytes in a header that travels anyway): ``CommError`` on every process naming each process's ``k``.
* ``x[r] = v`` / ``x[2] = r`` (a scalar: each device writes locally, no collective) and a write of an array value at a
  per-process index: with ``SHARDARRAY_CHECK_SPMD=1`` each process notes the host arguments of the ops it runs since
  its last collective, and that collective's check compares their digest (``CommError`` naming the op and each
  process's arguments); an array value's write compares them always, in its first collective. A mismatch with no
  collective after it ends the job at exit, naming it (``tests/support/mpi_fuzz13_jobs.py``).
* The NCCL communicator's collectives mark their end for the hang watchdog (``comm.spmd.leave``), as MPI's do.

**A misuse fuzz**: per-process axes, shapes, dtypes, ``keepdims``, slice bounds, dim names, ``descending``, ``k``,
seeds and bounds of ``sa.random`` and scalar operands in other ops must raise one typed error on every process with
``SHARDARRAY_CHECK_SPMD=1`` (in plain mode they hit the always-on checks or the deadlock watchdog). The cases that
only the op mechanism's notes catch (``core.tape`` calling ``comm.spmd.note_op``: ``x ** r``, ``clip``, ``std``'s
``correction``, ``roll``, ``rename``, ...) run where it does (``OPS_NOTED``). Every test runs under a hang guard
(``GUARD_S``): a hang fails it. ``FUZZ13_EXAMPLES=<n>`` runs each case with ``n`` examples.
"""

from __future__ import annotations

import faulthandler
import importlib.util
import shutil

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from mpi_fuzzing import agree, mpi_fuzz
from mpi_fuzzing import world as _world
from mpi_jobs import ROOT, mpiexec
from spmd import WORLD

import shardarray as sa
import shardarray.array_api as xp
from shardarray.array import as_kind
from shardarray.comm import mpi as mpi_comm
from shardarray.comm import spmd as comm_spmd
from shardarray.core import tape

HAVE_MPI = shutil.which("mpiexec") is not None and importlib.util.find_spec("mpi4py") is not None
mpi4 = pytest.mark.skipif(WORLD != 4, reason="needs mpiexec -n 4 (see .ci/run)")
outside = pytest.mark.skipif(WORLD > 1 or not HAVE_MPI, reason="launches mpiexec itself: needs mpiexec and mpi4py")
#: the op mechanism notes every op's host arguments (``core.tape`` calls ``comm.spmd.note_op``)
OPS_NOTED = hasattr(tape, "note_op")
GUARD_S = 60  # a test that takes this long hangs: the job ends with every thread's traceback


@pytest.fixture(autouse=True)
def guard():
    faulthandler.dump_traceback_later(GUARD_S, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


def _check(monkeypatch, on: bool) -> None:
    if on:
        monkeypatch.setenv("SHARDARRAY_CHECK_SPMD", "1")
    else:
        monkeypatch.delenv("SHARDARRAY_CHECK_SPMD", raising=False)


def _mesh(shape: dict) -> sa.Mesh:
    return sa.Mesh(dict(shape), comm="mpi", backend="numpy")


def _named(mesh: sa.Mesh, n: int = 8, m: int = 3) -> sa.ShardArray:
    """An ``(a, b)`` array of ``n * m`` values, ``a`` split over every mesh axis."""
    return sa.asarray(np.arange(float(n * m)).reshape(n, m), dims=("a", "b"), mesh=mesh, layout={"a": mesh.axis_names})


def _every_process_raises(call, error=sa.CommError, match: tuple[str, ...] = ()) -> str:
    """``call()`` raises ``error`` on every process, with one message everywhere containing each of ``match``."""
    text = ""
    try:
        call()
        said = "returned"
    except error as e:
        text = str(e)
        missing = [m for m in match if m not in text]
        said = f"raised {e!r:.400} without {missing}" if missing else None
    except Exception as e:
        said = f"raised {type(e).__name__}: {e!s:.400}"
    agree(said)
    agree(None if len(set(_world().allgather(text))) == 1 else "the messages differ between processes")
    return text


def _in_step(mesh: sa.Mesh) -> None:
    """The processes are still in step: a collective after the error gives the right answer on every one."""
    x = _named(mesh)
    agree(None if float(x.sum()) == float(np.arange(24.0).sum()) and x.numpy()[7, 2] == 23.0 else "out of step")


# =============================================================================================== 1. top_k's k


@mpi4
@pytest.mark.parametrize("shape", [{"row": 4}, {"row": 2, "col": 2}], ids=str)
@pytest.mark.parametrize("first", [True, False], ids=["first-exchange", "warm"])
def test_top_k_with_a_k_that_differs_between_processes_raises_everywhere(monkeypatch, shape, first):
    """``sa.top_k(x, k=r + 1)`` over a split dim: process ``r`` kept ``r + 1`` candidates and the exchange scrambled
    them (process 0 returned 1 value, process 3 four). Now ``CommError`` on every process naming each ``k``, whether
    the exchange is the first over its axes (checked over the job) or not (the group's header), without the check."""
    _check(monkeypatch, False)
    mesh = _mesh(shape)
    if first:
        monkeypatch.setattr(mpi_comm, "_SUBS", {})  # (no sub-communicator yet, as in a fresh job)
    x = _named(mesh)
    if not first:
        sa.top_k(x, 2, dim="a")
    r = mesh.process_index
    _every_process_raises(lambda: sa.top_k(x, r % 2 + 1, dim="a"), match=("top_k", "k=1", "k=2", "processes 1, 3"))
    values, ids = sa.top_k(x, 2, dim="a")
    agree(None if ids.numpy().tolist() == [[7] * 3, [6] * 3] and values.numpy()[1, 0] == 18.0 else "top_k after it")
    _in_step(mesh)


@mpi4
def test_top_k_with_the_same_k_compares_nothing_more():
    """One ``k`` on every process: one allgather, as before (the header's few bytes carry ``k``)."""
    mesh = _mesh({"row": 4})
    x = _named(mesh)
    sa.top_k(x, 1, dim="a")
    with sa.comm_log() as log:
        v, i = sa.top_k(x, 3, dim="a")
    agree(None if [r.op for r in log.records] == ["allgather"] else f"collectives {log.records}")
    same = i.numpy().tolist() == [[7] * 3, [6] * 3, [5] * 3] and v.numpy()[:, 2].tolist() == [23, 20, 17]
    agree(None if same else f"top_k gave {v.numpy()} at {i.numpy()}")


# =============================================================================================== 2. writes


@mpi4
@pytest.mark.parametrize("case", ["index", "value", "slice", "named"])
def test_a_scalar_write_that_differs_between_processes_is_named_by_the_check(monkeypatch, case):
    """``x[r] = 5.0``, ``x[2] = r``, ``x[r:] = 1.0``, ``x[{"a": r}] = 1.0``: each device wrote locally, the blocks mixed
    silently (``x[r] = 5`` wrote index 0 only). With ``SHARDARRAY_CHECK_SPMD=1``: ``CommError`` at the next
    collective (here ``numpy()``) on every process, naming the write (``setitem``, an op boundary since round 16) and
    each process's key or value."""
    _check(monkeypatch, True)
    mesh = _mesh({"row": 4})
    x = as_kind(_named(mesh), xp.Array)
    r = mesh.process_index
    y = xp.asarray(x, copy=True)
    if case == "index":
        y[r] = 5.0
        want = ("key=0", "key=1")
    elif case == "value":
        y[2] = float(r)
        want = ("value=0.0", "value=1.0")
    elif case == "slice":
        y[r:, 0] = 1.0
        want = ("slice(0, None, None)", "slice(1, None, None)")
    else:
        z = as_kind(y, sa.ShardArray)
        z[{"b": r % 3}] = 1.0
        want = ("key={'b': 0}", "key={'b': 1}")
    _every_process_raises(lambda: y.numpy(), match=("ran setitem", "different arguments", *want))
    _in_step(mesh)


@mpi4
@pytest.mark.parametrize("case", ["array_value", "named_ids"])
def test_a_write_that_moves_data_at_an_index_that_differs_is_refused_without_the_check(monkeypatch, case):
    """``x[:, r % 3] = v`` with an array ``v`` (moving the value needs no collective along the unsplit dim, and each
    process wrote its own column), ``x[{"b": np.array([r % 2])}] = 1.0`` (host ids: each process sent its own). The
    write's host arguments travel in the next collective's check or header (``note(agree=True)``): ``CommError``
    on every process without ``SHARDARRAY_CHECK_SPMD``."""
    _check(monkeypatch, False)
    mesh = _mesh({"row": 4})
    x = as_kind(_named(mesh), xp.Array)
    r = mesh.process_index
    y = xp.asarray(x, copy=True)
    if case == "array_value":
        y[:, r % 3] = xp.full((8,), -1.0, device=mesh)
        want = ("'b': 0}", "'b': 1}")
    else:
        z = as_kind(y, sa.ShardArray)
        _every_process_raises(lambda: z.__setitem__({"b": np.array([r % 2])}, -1.0), match=("x[...] = v", "<ndarray"))
        want = None
    if want is not None:
        _every_process_raises(lambda: y.numpy(), match=("x[...] = v", *want))
    y = xp.asarray(x, copy=True)
    y[:, 1] = xp.full((8,), -1.0, device=mesh)  # (the same index everywhere: no error)
    agree(None if y.numpy()[:, 1].tolist() == [-1.0] * 8 else "write")
    _in_step(mesh)


@mpi4
def test_writes_of_one_value_everywhere_pass_the_check(monkeypatch):
    _check(monkeypatch, True)
    mesh = _mesh({"row": 2, "col": 2})
    x = as_kind(_named(mesh), xp.Array)
    y = xp.asarray(x, copy=True)
    y[3] = 5.0
    y[1:7:2, 2] = -1.0
    want = np.arange(24.0).reshape(8, 3)
    want[3], want[1:7:2, 2] = 5.0, -1.0
    agree(None if np.array_equal(y.numpy(), want) else "writes")


# =============================================================================================== 3. the op mechanism


@mpi4
@pytest.mark.skipif(not OPS_NOTED, reason="needs core.tape's call of comm.spmd.note_op (the op mechanism's notes)")
@pytest.mark.parametrize("case", ["add", "clip", "std", "take_int", "roll"])
def test_a_host_argument_of_an_op_that_differs_is_named_by_the_check(monkeypatch, case):
    """``x + r``, ``xp.clip(x, r)``, ``xp.std(x, correction=r % 2)`` (each process returned its own replicated
    result), ``x[:, r % 2]``, ``xp.roll(x, r, axis=1)``: silent; with the check, ``CommError`` naming the op."""
    _check(monkeypatch, True)
    mesh = _mesh({"row": 4})
    x = as_kind(_named(mesh), xp.Array)
    r = mesh.process_index
    ops = {
        "add": lambda: x + r,
        "clip": lambda: xp.clip(x, float(r), None),
        "std": lambda: xp.std(x, axis=0, correction=r % 2),
        "take_int": lambda: x[:, r % 2],
        "roll": lambda: xp.roll(x, r, axis=1),
    }
    _every_process_raises(lambda: ops[case]().numpy(), match=("SPMD mismatch", "different arguments"))
    _in_step(mesh)


# =============================================================================================== 4. misuse fuzz


def _cases(x, n, mesh, r):
    """Ops given a host argument that differs between processes (``r``: the process index); each returns arrays."""
    return {
        "keepdims": lambda: xp.sum(x, axis=1, keepdims=bool(r % 2)),
        "reshape": lambda: xp.reshape(x, x.shape[::-1] if r % 2 else x.shape),
        "astype": lambda: x.astype(xp.float32 if r % 2 else xp.float64),
        "slice_stop": lambda: x[: max(1, x.shape[0] - r)],  # (not empty: see test_an_empty_result_on_one_process_...)
        "slice_step": lambda: x[:: 1 + r % 2],
        "int_index": lambda: x[r],
        "concat_axis": lambda: xp.concat([x, x], axis=r % 2),
        "flip_axis": lambda: xp.flip(x, axis=r % 2),
        "expand_dims": lambda: xp.expand_dims(x, axis=r % 2),
        "permute": lambda: xp.permute_dims(x, (1, 0) if r % 2 else (0, 1)),
        "sort_descending": lambda: xp.sort(x, axis=0, descending=bool(r % 2)),
        "argsort_axis": lambda: xp.argsort(x, axis=r % 2),
        "max_axis": lambda: xp.max(x, axis=r % 2),
        "cumsum_initial": lambda: xp.cumulative_sum(x, axis=0, include_initial=bool(r % 2)),
        "diff_n": lambda: xp.diff(x, axis=0, n=1 + r % 2),
        "tile": lambda: xp.tile(x, (1 + r % 2, 1)),
        "repeat": lambda: xp.repeat(x, 1 + r % 2, axis=0),
        "top_k": lambda: sa.top_k(n, 1 + r % 2, dim="a")[0],
        "top_k_dim": lambda: sa.top_k(n, 2, dim="a" if r % 2 else "b")[0],
        "softmax_dim": lambda: sa.softmax(n, "a" if r % 2 else "b"),
        "sum_dim": lambda: n.sum("a" if r % 2 else "b"),
        "einsum": lambda: sa.einsum("a b -> a" if r % 2 else "a b -> b", n),
        "full_like": lambda: xp.full_like(x, float(r)),
        "asarray_dims": lambda: sa.asarray(np.zeros((8, 3)), dims=("a", "b") if r % 2 else ("c", "b"), mesh=mesh),
        "normal_seed": lambda: sa.random.normal(mesh, {"a": 6}, seed=r % 2, layout={"a": mesh.axis_names}),
        "normal_mean": lambda: sa.random.normal(mesh, {"a": 6}, mean=float(r % 2)),
        "uniform_low": lambda: sa.random.uniform(mesh, {"a": 6}, low=-float(r % 2), layout={"a": mesh.axis_names}),
        "randint_low_seed": lambda: sa.random.randint(mesh, {"a": 6}, r % 2, 9, seed=r),
        "zeros_dims": lambda: sa.zeros(mesh, {"a" if r % 2 else "c": 8}, layout={"a" if r % 2 else "c": "row"}),
        "write_index": lambda: _written(x, r % 2, 5.0),
        "write_value": lambda: _written(x, 1, float(r % 2)),
    }


#: the cases that the op mechanism's notes name (the others are caught without them)
NEED_OPS_NOTED = {"pow", "clip", "rename", "roll_b", "std_correction", "searchsorted_side", "greater", "int_index_b"}


def _more_cases(x, n, mesh, r):
    return {
        "pow": lambda: x ** (r % 2 + 1),
        "greater": lambda: x > r % 2,
        "clip": lambda: xp.clip(x, float(r % 2), None),
        "std_correction": lambda: xp.std(x, axis=0, correction=r % 2),
        "int_index_b": lambda: x[:, r % 2],
        "roll_b": lambda: xp.roll(x, r % 2, axis=1),
        "rename": lambda: n.rename({"a": "c" if r % 2 else "d"}),
        "searchsorted_side": lambda: xp.searchsorted(xp.sort(x[:, 0]), x[:, 1], side="left" if r % 2 else "right"),
    }


def _written(x, index, value):
    y = xp.asarray(x, copy=True)
    y[index] = value
    return y


def _gather(v):
    return [_gather(u) for u in v] if isinstance(v, (tuple, list)) else v.numpy()


NAMES = sorted(_cases(None, None, None, 0)) + sorted(NEED_OPS_NOTED if OPS_NOTED else ())


@mpi4
@pytest.mark.parametrize("name", NAMES)
@mpi_fuzz(2, "FUZZ13_EXAMPLES")
@given(st.sampled_from([{"row": 4}, {"row": 2, "col": 2}]), st.sampled_from([(8, 3), (5, 4), (3, 2)]))
def test_fuzz_a_host_argument_that_differs_raises_one_typed_error_with_the_check(name, shape, size):
    """With ``SHARDARRAY_CHECK_SPMD=1`` every case raises one typed error on every process (here ``CommError``; without
    the check some hang until the watchdog ends the job, others mix silently), and the job goes on in step."""
    with pytest.MonkeyPatch.context() as mp:
        _check(mp, True)
        mesh = _mesh(shape)
        a = np.arange(float(size[0] * size[1])).reshape(size)
        n = sa.asarray(a, dims=("a", "b"), mesh=mesh, layout={"a": mesh.axis_names})
        x, r = as_kind(n, xp.Array), mesh.process_index
        case = {**_cases(x, n, mesh, r), **_more_cases(x, n, mesh, r)}[name]
        _every_process_raises(lambda: _gather(case()), match=("SPMD mismatch",))
        _in_step(mesh)


# ========================================================================================= 5. NCCL, the watchdog


@mpi4
@pytest.mark.parametrize("shape", [{"x": 4}, {"row": 2, "col": 2}], ids=str)
def test_nccl_collectives_mark_their_end_for_the_watchdog(shape):
    """The NCCL communicator's collectives (SPMD over MPI: here ``fake_nccl_mpi``) left this process counted as inside
    its last one after it returned, so a long computation after it looked stuck to the hang watchdog. Now each
    marks its end (``comm.spmd.leave``), as ``MpiCommunicator``'s do."""
    import fake_nccl_mpi
    from mpi4py import MPI

    from shardarray.comm.nccl import NcclCommunicator

    mesh = _mesh(shape)
    mesh.comm = NcclCommunicator(mesh, lib=fake_nccl_mpi, world=MPI.COMM_WORLD)
    axes = tuple(shape)
    x = sa.asarray(np.arange(16.0).reshape(8, 2), dims=("a", "b"), mesh=mesh, layout={"a": axes})
    comm = mesh.comm
    shards = list(x.shards)
    calls = {
        "allreduce": lambda: comm.allreduce(shards, axes),
        "allgather": lambda: comm.allgather(shards, axes, 0),
        "reduce_scatter": lambda: comm.reduce_scatter(shards, axes, 1),
        "alltoall": lambda: comm.alltoall(shards, axes, 1, 0),
        "broadcast": lambda: comm.broadcast(shards, axes, 1),
        "reduce": lambda: comm.reduce(shards, axes, 0),
        "relayout": lambda: x.relayout({"b": axes}),
        "host_reduce": lambda: comm.host_reduce(1.5, "max"),
    }
    left = []
    for name, call in calls.items():
        call()
        if comm_spmd._State.inflight:
            left.append(name)
    agree(f"still inside after {left}" if left else None)
    np.testing.assert_array_equal(x.relayout({"b": axes}).numpy(), np.arange(16.0).reshape(8, 2))


def _job(case: str, check: bool):
    env = {"SHARDARRAY_HANG_CHECK_S": "0.5", "SHARDARRAY_CHECK_SPMD": "1" if check else "0"}
    return mpiexec(4, str(ROOT / "tests" / "support" / "mpi_fuzz13_jobs.py"), case, timeout=90, env=env)


@outside
def test_a_mismatch_with_no_collective_after_it_ends_the_job_at_exit():
    """``y[0] = r`` of a replicated ``y``, then the script ends: with the check, every process printed its own value
    and the job ended 0. Now it ends 1, naming the write and each process's value (the same write everywhere: 0)."""
    bad = _job("exit", check=True)
    assert bad.returncode != 0, bad.stdout[-2000:]
    assert "at exit" in bad.stderr and "value=0.0" in bad.stderr and "value=3.0" in bad.stderr, bad.stderr[-3000:]
    good = _job("exit_ok", check=True)
    assert good.returncode == 0 and good.stdout.count("done") == 4, good.stderr[-3000:]


@outside
@pytest.mark.skipif(not OPS_NOTED, reason="needs core.tape's call of comm.spmd.note_op (the op mechanism's notes)")
def test_an_empty_result_on_one_process_names_the_op_when_it_leaves():
    """``x[:0]`` on process 0, ``x[:4]`` elsewhere: process 0's empty array converts with no collective, and it exits
    while the others wait in the slice's exchange. The job ends (as before), and with the check the message now
    names the op whose arguments differ (each process's notes travel with its exit notice)."""
    proc = _job("empty", check=True)
    assert proc.returncode != 0 and "exited after" in proc.stderr, proc.stderr[-3000:]
    assert "slice_dims with different arguments" in proc.stderr, proc.stderr[-3000:]


@outside
def test_top_k_with_k_0_on_one_process_ends_the_job():
    """Process 0 passes ``k=0`` (no exchange) while the others exchange: the job ends naming the collective, never
    hangs."""
    proc = _job("top_k0", check=False)
    assert proc.returncode != 0 and "collective #" in proc.stderr, proc.stderr[-3000:]


# =============================================================================================== 6. the notes' rules


class _World:
    """A stand-in for COMM_WORLD: ``allgather`` returns the next of ``answers`` with this process's payload at
    ``rank``."""

    def __init__(self, rank: int, answers: list):
        self.rank, self.answers = rank, answers

    def Get_rank(self):
        return self.rank

    def allgather(self, mine):
        every = list(self.answers.pop(0))
        every.insert(self.rank, mine)
        return every


@pytest.fixture
def notes(monkeypatch):
    """``spmd``'s notes, emptied and turned on (as in a job with the check) for a unit test."""
    for name, value in (("notes", []), ("noted", 0), ("digest", None), ("agreed", []), ("agreed_crc", 0)):
        monkeypatch.setattr(comm_spmd._State, name, value)
    monkeypatch.setattr(comm_spmd._State, "noting", True)
    monkeypatch.setattr(comm_spmd._State, "job", True)
    monkeypatch.setenv("SHARDARRAY_CHECK_SPMD", "1")


class _MpiMesh:
    comm_kind = "mpi"


@pytest.mark.skipif(WORLD > 1, reason="changes this process's SPMD state: one process")
def test_enter_compares_the_digest_of_the_notes_and_names_the_op(notes):
    comm_spmd.note(_MpiMesh(), "add", scalars=[1])
    seq = comm_spmd._State.seq + 1
    sig = (seq, "numpy", (), "float64", (2,), None, None, (8,), None)
    theirs = (sig, None, (0, "0123456789abcdef"))
    their_notes = ([("add", "scalars=[2]")], 1)
    with pytest.raises(sa.CommError, match=r"ran add with different arguments \(process 0: scalars=\[1\]; process 1"):
        comm_spmd.enter(_World(0, [[theirs], [their_notes]]), "numpy", (), np.zeros(2), whole=(8,), check=True)
    assert comm_spmd._State.notes == [] and comm_spmd._State.digest is None  # (taken: the next collective starts anew)


@pytest.mark.skipif(WORLD > 1, reason="changes this process's SPMD state: one process")
def test_agreed_notes_are_compared_without_the_check(notes, monkeypatch):
    monkeypatch.setattr(comm_spmd._State, "noting", False)
    monkeypatch.delenv("SHARDARRAY_CHECK_SPMD")
    comm_spmd.note(_MpiMesh(), "top_k", agree=True, k=2)
    crc, agreed = comm_spmd.take_agreed()
    assert crc and agreed == [("top_k", "k=2")] and comm_spmd.take_agreed() == (0, [])
    comm_spmd.note(_MpiMesh(), "top_k", agree=True, k=2)
    seq = comm_spmd._State.seq + 1
    theirs = ((seq, "x", (), "float64", (1,), None, None, None, None), None, (0, None))
    with pytest.raises(sa.CommError, match=r"ran different ops \(process 0: top_k\(k=2\); process 1: nothing more"):
        comm_spmd.enter(_World(0, [[theirs], [([], 0)]]), "x", (), np.zeros(1), check=True)


def test_notes_are_kept_only_for_meshes_of_several_processes(notes):
    class Emulated:
        comm_kind = "emulated"

    comm_spmd.note(Emulated(), "add", agree=True, scalars=[1])
    here = sa.asarray(np.zeros(2), dims=("i",), mesh=sa.Mesh({"r": 2}, comm="emulated"))  # (an emulated mesh)
    comm_spmd.note_op("add", (as_kind(here, xp.Array), 1), {})
    assert comm_spmd._State.notes == [] and comm_spmd._State.agreed == []


def test_show_compares_what_every_process_can_reproduce():
    assert comm_spmd.show({"a": slice(1, None), "b": 3}) == "{'a': slice(1, None, None), 'b': 3}"
    assert comm_spmd.show({"y", "x", "z"}) == "{'x', 'y', 'z'}"  # (sorted: set order follows per-process hashes)
    assert comm_spmd.show(np.sum) == f"<{np.sum.__module__}.sum>"  # (a function by name, not by address)
    assert comm_spmd.show((np.arange(3),)).startswith("(<ndarray (3,) int64 ")
    assert comm_spmd.show(np.arange(3)) != comm_spmd.show(np.arange(1, 4))

    class Plain:
        pass

    assert " at 0x" not in comm_spmd.show(Plain())
    here = sa.asarray(np.zeros((2, 3)), dims=("i", "j"), mesh=sa.Mesh({"r": 2}, comm="emulated"))
    assert comm_spmd.show(here) == "<array (2, 3) float64>"


def test_the_messages_name_the_first_difference():
    same = [("add", "scalars=[1]")]
    text = comm_spmd.notes_mismatch([(same + [("clip", "arg1=0")], 2), (same + [("clip", "arg1=1")], 2)], "here")
    assert "after 1 op(s) alike; process 0: arg1=0; process 1: arg1=1" in text and "ran clip" in text
    text = comm_spmd.notes_mismatch([(same, 1), (same, 1), ([], 0)], "here", ranks=[1, 3, 5])
    assert "processes 1, 3: add(scalars=[1]); process 5: nothing more" in text
    text = comm_spmd.notes_mismatch([(same, 40), (same, 41)], "at exit")
    assert "more than 1 noted op(s) alike" in text and "process 0: 40 op(s) noted" in text


def test_payloads_with_and_without_notes_are_payloads():
    sig = (1, "numpy", (), "float64", (2,), None, None, None, None)
    assert comm_spmd._is_payload((sig, None)) and comm_spmd._is_payload((sig, None, (0, None)))
    assert comm_spmd._is_payload((sig, None, (5, "ab")))
    assert not comm_spmd._is_payload((sig, None, "ab")) and not comm_spmd._is_payload((sig, None, (None, None)))


def test_the_header_carries_the_agreed_notes_and_the_root():
    h = mpi_comm._header("broadcast", np.zeros((2, 3)), root=1, agreed=77)
    assert h.size == mpi_comm.HEADER and h[-2] == 77 and h[-1] == 1 and h[3:5].tolist() == [2, 3]
    assert mpi_comm._describe_header(h) == "broadcast to/from root 1 of a float64 block of shape (2, 3)"


# ========================================================================== 5. creation and positional host ids


@mpi4
@pytest.mark.parametrize("case", ["arange", "linspace", "eye"])
def test_array_api_creation_with_a_value_that_differs_raises_everywhere(monkeypatch, case):
    """``xp.arange(r, r + 8)``, ``xp.linspace(0, r, 8)``, ``xp.eye(4, k=r % 2)``: the same shape everywhere, so each
    process filled its blocks from its own value, silently. Their creation check compares those values, always
    (one small allgather, as every creation function)."""
    _check(monkeypatch, False)
    mesh = _mesh({"row": 4})
    r = mesh.process_index
    make = {
        "arange": lambda: xp.arange(r, r + 8, device=mesh),
        "linspace": lambda: xp.linspace(0.0, float(r), 8, device=mesh),
        "eye": lambda: xp.eye(4, k=r % 2, device=mesh),
    }[case]
    _every_process_raises(make, match=(case,))
    same = {"arange": lambda: xp.arange(8, device=mesh), "linspace": lambda: xp.linspace(0.0, 1.0, 8, device=mesh),
            "eye": lambda: xp.eye(4, device=mesh)}[case]()  # fmt: skip
    agree(None if same.shape[0] in (4, 8) else "creation")
    _in_step(mesh)


@mpi4
def test_asarray_of_host_data_that_differs_is_named_by_the_check(monkeypatch):
    """``xp.asarray(np.array([r, 0]))``: each process put its own data in its blocks. With ``SHARDARRAY_CHECK_SPMD=1``
    the creation check compares a digest of the host data."""
    _check(monkeypatch, True)
    mesh = _mesh({"row": 4})
    r = mesh.process_index
    _every_process_raises(lambda: xp.asarray(np.array([float(r), 0.0, 1.0, 2.0]), device=mesh), match=("asarray",))
    agree(None if xp.asarray(np.arange(4.0), device=mesh).numpy().tolist() == [0.0, 1.0, 2.0, 3.0] else "asarray")
    _in_step(mesh)


@mpi4
def test_a_positional_write_at_host_ids_that_differ_is_refused(monkeypatch):
    """``x[np.array([r % 2])] = -1.0`` on a positional array: the host ids travel in the write's check, always."""
    _check(monkeypatch, False)
    mesh = _mesh({"row": 4})
    x = as_kind(_named(mesh), xp.Array)
    r = mesh.process_index
    y = xp.asarray(x, copy=True)

    def write():
        y[np.array([r % 2])] = -1.0
        y.numpy()

    _every_process_raises(write, match=("x[...] = v",))
    _in_step(mesh)
