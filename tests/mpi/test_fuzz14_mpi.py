"""Fuzzing round 14 under MPI: a per-process argument never hangs a job, even without ``SHARDARRAY_CHECK_SPMD``.

Without the check, a host argument computed from ``mesh.process_index`` sent the processes different ways: a
reshape to a per-process shape, a slice bound, an axis, ``einsum`` subscripts, a roll's shift, a concat axis, a
reshard's target layout, ``take``'s host indices. One process entered an ``Alltoallv`` over a mesh axis while another
entered ``numpy()``'s check of ``COMM_WORLD`` (or none): different communicators, so nothing compared them, and the
job waited until the hang watchdog killed it (no typed error), or the processes exchanged blocks of different
arrays. Now every collective of an MPI mesh first compares the job's header over ``COMM_WORLD``: the collective's
number, op and axes and a digest of the outermost op that issued it with its small host arguments
(``comm.spmd.exchange_header``), computed only when a collective is sent. Processes that differ raise ``CommError``
there, each naming every process's collective and op with its arguments, and stay in step. An op that differs
between processes but sends nothing (a value printed on process 0) is not flagged.

Every test runs under a hang guard (``GUARD_S``): a hang fails it. ``FUZZ14_EXAMPLES=<n>`` runs the fuzzer with ``n``
examples.
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
from shardarray.comm import spmd as comm_spmd

HAVE_MPI = shutil.which("mpiexec") is not None and importlib.util.find_spec("mpi4py") is not None
mpi4 = pytest.mark.skipif(WORLD != 4, reason="needs mpiexec -n 4 (see .ci/run)")
outside = pytest.mark.skipif(WORLD > 1 or not HAVE_MPI, reason="launches mpiexec itself: needs mpiexec and mpi4py")
GUARD_S = 60  # a test that takes this long hangs: the job ends with every thread's traceback


@pytest.fixture(autouse=True)
def guard(monkeypatch):
    """No check mode (the header alone must do it) and a hang guard."""
    monkeypatch.delenv("SHARDARRAY_CHECK_SPMD", raising=False)
    faulthandler.dump_traceback_later(GUARD_S, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


_MESHES: dict = {}


def _mesh(shape: dict) -> sa.Mesh:
    key = tuple(shape.items())
    if key not in _MESHES:
        _MESHES[key] = sa.Mesh(dict(shape), comm="mpi", backend="numpy")
    return _MESHES[key]


def _every_process_raises(call, match: tuple[str, ...] = ()) -> str:
    """``call()`` raises ``CommError`` on every process, with one message everywhere containing each of ``match``."""
    text = ""
    try:
        call()
        said = "returned"
    except sa.CommError as e:
        text = str(e)
        missing = [m for m in match if m not in text]
        said = f"raised {e!r:.600} without {missing}" if missing else None
    except Exception as e:
        said = f"raised {type(e).__name__}: {e!s:.600}"
    agree(said)
    agree(None if len(set(_world().allgather(text))) == 1 else "the messages differ between processes")
    return text


def _in_step(mesh: sa.Mesh) -> None:
    """The processes are still in step: collectives after the error give the right answers on every process."""
    x = sa.asarray(np.arange(24.0).reshape(8, 3), dims=("a", "b"), mesh=mesh, layout={"a": mesh.axis_names})
    good = float(x.sum()) == 276.0 and x.numpy()[7, 2] == 23.0 and float(x.sum("a").numpy()[1]) == 92.0
    agree(None if good else "out of step")


def _gather(v):
    return [_gather(u) for u in v] if isinstance(v, (tuple, list)) else v.numpy()


def _cases(x, n, mesh, alt):
    """``name -> (op given the per-process choice alt (bool), NumPy's answer for alt=False)``: each op's argument
    depends on ``alt``; with the same ``alt`` everywhere it is a valid SPMD program."""
    a = np.arange(float(x.shape[0] * x.shape[1])).reshape(x.shape)
    rows, cols = x.shape
    half = rows // 2
    return {
        "reshape": (lambda: xp.reshape(x, (cols, rows) if alt else (rows, cols)), a),
        "slice_start": (lambda: x[1 if alt else 0 :], a),
        "slice_stop": (lambda: x[: rows - 1 if alt else rows], a),
        "axis": (lambda: xp.sum(x, axis=1 if alt else 0), a.sum(axis=0)),
        "keepdims": (lambda: xp.sum(x, axis=0, keepdims=alt), a.sum(axis=0)),
        "einsum": (lambda: sa.einsum("a b -> b" if alt else "a b -> a", n), a.sum(axis=1)),
        "dims": (lambda: n.sum("b" if alt else "a"), a.sum(axis=0)),
        "dtype": (lambda: xp.astype(x, xp.float32 if alt else xp.float64), a),
        "reshard": (lambda: sa.reshard(x, mesh, {x.dims[0]: None} if alt else {x.dims[1]: mesh.axis_names[0]}), a),
        "concat_axis": (lambda: xp.concat([x, x], axis=1 if alt else 0), np.concatenate([a, a], axis=0)),
        "roll": (lambda: xp.roll(x, 2 if alt else 1, axis=0), np.roll(a, 1, axis=0)),
        "take_list": (lambda: xp.take(x, [0, half] if alt else [half, 0], axis=0), a[[half, 0]]),
    }


CASES = sorted(_cases(np.zeros((2, 2)), None, None, False))


def _named(mesh: sa.Mesh, shape: tuple[int, int]) -> sa.ShardArray:
    a = np.arange(float(shape[0] * shape[1])).reshape(shape)
    return sa.asarray(a, dims=("a", "b"), mesh=mesh, layout={"a": mesh.axis_names})


# =============================================================================================== 1. each case


@mpi4
@pytest.mark.parametrize("name", CASES)
def test_a_per_process_argument_raises_one_commerror_without_the_check(name):
    """Process 1 alone passes the other argument: ``CommError`` on every process (it hung until the watchdog killed
    the job, or mixed blocks silently), the same message everywhere, naming the op; then the job goes on in step."""
    mesh = _mesh({"row": 4})
    n = _named(mesh, (8, 3))
    x = as_kind(n, xp.Array)
    op, _ = _cases(x, n, mesh, mesh.process_index == 1)[name]
    _every_process_raises(lambda: _gather(op()), match=("SPMD mismatch", "process 1"))
    _in_step(mesh)


@mpi4
def test_the_message_names_the_op_and_the_arguments_that_differ():
    """The same collective from the same op with another argument: the message names the op and, per process, only
    the arguments that differ."""
    mesh = _mesh({"row": 2, "col": 2})
    x = as_kind(_named(mesh, (8, 3)), xp.Array)
    r = mesh.process_index
    text = _every_process_raises(
        lambda: xp.roll(x, 1 + r % 2, axis=0).numpy(), match=("ran roll with different arguments", "shift=1", "shift=2")
    )
    agree(None if "dim=" not in text.split("arguments in collective")[1].split("Every process")[0] else text)
    _in_step(mesh)


# =============================================================================================== 2. the fuzzer


@mpi4
@mpi_fuzz(24, "FUZZ14_EXAMPLES")
@given(
    st.sampled_from([{"row": 4}, {"row": 2, "col": 2}]),
    st.sampled_from([(8, 3), (5, 4), (4, 6)]),
    st.sampled_from(CASES),
    st.lists(st.booleans(), min_size=4, max_size=4),
)
def test_fuzz_per_process_arguments_raise_everywhere_or_agree_with_numpy(shape, size, name, alts):
    """Which processes take the other argument is drawn: when they differ, ``CommError`` on every process (never a
    hang, never a silent mix) and the job stays in step; when all take the same, the result is NumPy's."""
    mesh = _mesh(shape)
    n = _named(mesh, size)
    x = as_kind(n, xp.Array)
    alt = alts[mesh.process_index]
    op, want = _cases(x, n, mesh, alt)[name]
    if len(set(alts)) == 2:
        _every_process_raises(lambda: _gather(op()), match=("SPMD mismatch",))
        _in_step(mesh)
    elif not alt:
        got = _gather(op())
        agree(None if np.array_equal(np.asarray(got, dtype=float), want) else f"{name}: {got} != {want}")


# =============================================================================================== 3. what is not flagged


@mpi4
def test_an_op_that_differs_between_processes_but_sends_nothing_is_not_flagged():
    """Legal SPMD: process 0 alone computes (and prints) something, with no collective; then every process runs the
    same collectives, which compare nothing of that op."""
    mesh = _mesh({"row": 2, "col": 2})
    n = _named(mesh, (8, 3))
    x = as_kind(n, xp.Array)
    if mesh.process_index == 0:
        y = x * 3.0 + 1.0
        z = n.sum("b")  # (b is not split: no collective)
        assert y.shape == (8, 3) and z.shape == (8,)
    r = mesh.process_index
    w = xp.roll(x, r, axis=1) if r else x  # (b not split: a per-process local op, no collective)
    assert w.shape == (8, 3)
    agree(None if float(xp.sum(x)) == 276.0 else "sum")
    rolled = np.roll(np.arange(24.0).reshape(8, 3), 1, 0)
    agree(None if np.array_equal(xp.roll(x, 1, axis=0).numpy(), rolled) else "roll")


@mpi4
def test_ops_of_one_argument_everywhere_cost_one_header_and_log_nothing_more():
    """The header moves no data of the array: the comm log records the op's own collectives only."""
    mesh = _mesh({"row": 4})
    x = as_kind(_named(mesh, (8, 3)), xp.Array)
    xp.roll(x, 1, axis=0)
    with sa.comm_log() as log:
        y = xp.roll(x, 3, axis=0)
    agree(None if [r.op for r in log.records] in (["alltoall"], ["allgather"]) else f"{log.records}")
    agree(None if np.array_equal(y.numpy(), np.roll(np.arange(24.0).reshape(8, 3), 3, 0)) else "roll")


# =============================================================================================== 4. a whole job


@outside
def test_a_per_process_reshape_ends_in_commerror_with_the_watchdog_off():
    """``mpiexec -n 4`` with the hang watchdog off (``SHARDARRAY_HANG_CHECK_S=0``) and no check mode: the reshape to a
    per-process shape hung forever; now every process catches the same ``CommError`` and the job ends 0."""
    env = {"SHARDARRAY_HANG_CHECK_S": "0", "SHARDARRAY_CHECK_SPMD": "0"}
    proc = mpiexec(4, str(ROOT / "tests" / "support" / "mpi_fuzz14_jobs.py"), "reshape", timeout=60, env=env)
    assert proc.returncode == 0 and proc.stdout.count("typed") == 4, proc.stdout[-2000:] + proc.stderr[-3000:]


# =============================================================================================== 5. the digest's rules


@pytest.fixture
def op_state(monkeypatch):
    monkeypatch.setattr(comm_spmd._OP, "current", None)


@pytest.mark.skipif(WORLD > 1, reason="changes this process's SPMD state: one process")
def test_the_digest_is_the_outermost_op_and_is_computed_only_when_asked(op_state):
    seen = []

    def inner():
        seen.append(comm_spmd.op_digest())
        return 1

    def outer(shape, *, axis):
        return comm_spmd.as_op("inner_op", inner, inner, (), {})

    comm_spmd.as_op("reshape", outer, outer, ((3, 8),), {"axis": 0})
    comm_spmd.as_op("reshape", outer, outer, ((8, 3),), {"axis": 0})
    assert seen[0][1] == "reshape(arg0=(3, 8), axis=0)" and seen[0][0] > 0 and seen[0][0] != seen[1][0]
    assert comm_spmd._OP.current is None and comm_spmd.op_digest() == (0, "")


@pytest.mark.skipif(WORLD > 1, reason="changes this process's SPMD state: one process")
def test_the_digest_leaves_out_per_process_data(op_state):
    """A NumPy array (``from_local``'s block) is not compared; a long host list by its length; an array of the mesh
    split over it not by itself (its collectives compare its shape and dtype)."""
    mesh = sa.Mesh({"r": 2})
    here = sa.asarray(np.zeros((2, 3)), dims=("i", "j"), mesh=mesh, layout={"i": "r"})
    digests = []
    for block in (np.zeros((2, 2)), np.ones((3, 2))):
        comm_spmd.as_op("op", len, lambda *a: digests.append(comm_spmd.op_digest()), (block, here, list(range(99))), {})
    assert digests[0] == digests[1]
    assert digests[0][1] == "op(arg0=<ndarray>, arg1=<array>, arg2=<list of 99>)"


@pytest.mark.skipif(WORLD > 1, reason="changes this process's SPMD state: one process")
def test_a_small_array_every_process_holds_whole_is_compared_by_its_values(op_state):
    """``xp.take(x, [r, 0])``: the host list became a replicated array of the mesh before the op saw it; its values
    must be the same on every process, so the digest lists them (an array split over the mesh, or a big one, is
    compared by its global shape and dtype only; GPU blocks are not read)."""
    mesh = sa.Mesh({"r": 2}, backend="numpy")
    got = []
    for ids in ([1, 0], [0, 1]):
        held = sa.asarray(np.array(ids), dims=("k",), mesh=mesh)
        comm_spmd.as_op("take", len, lambda *a: got.append(comm_spmd.op_digest()), (held,), {})
    assert got[0][0] != got[1][0] and got[0][1] == "take(arg0=<array [1, 0]>)"
    big = sa.asarray(np.zeros(65), dims=("k",), mesh=mesh)
    assert comm_spmd._brief(big) == "<array>" and comm_spmd._brief(big, shown=True) == "<array (65,) float64>"
    assert comm_spmd._brief(held, shown=True) == "<array (2,) int64 [0, 1]>"


def test_the_message_names_the_differing_arguments_only():
    args = [[("x", "<array>"), ("shift", str(s)), ("dim", "'a'")] for s in (1, 2, 1)]
    rows = [("alltoall over axes ('row',)", f"alltoall of shape ({i},)", ("roll", a)) for i, a in enumerate(args)]
    text = comm_spmd.ops_mismatch(rows, 7)
    assert "ran roll with different arguments in collective #7" in text
    assert "processes 0, 2: shift=1; process 1: shift=2" in text and "dim=" not in text.split("Every")[0]
    rows = [("alltoall", "alltoall over axes ('row',)", ("reshape", [("shape", "(3, 8)")])), ("numpy", "numpy", None)]
    text = comm_spmd.ops_mismatch(rows, 3)
    assert "different collectives" in text and "process 1: numpy outside any op" in text
    assert "process 0: alltoall over axes ('row',) in reshape(shape=(3, 8))" in text
