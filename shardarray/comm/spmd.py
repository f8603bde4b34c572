"""SPMD jobs that never hang: abort hooks, departures, and the per-collective consistency check.

Under an MPI launcher every process runs the same script and issues the same
collectives in the same order (SPMD). Three things break that and would leave
the other processes waiting forever inside a collective; this module turns
each into a job that ends non-zero with a message naming the culprit.

* **An uncaught exception** (main thread or a worker thread): ``sys.excepthook``
  and ``threading.excepthook`` print it and end the job, with
  ``MPI.COMM_WORLD.Abort`` when MPI is initialised, else by killing this
  process (SIGKILL, after flushing its output), which MPI launchers (mpiexec/Hydra, Open MPI's mpirun)
  answer by ending every process (under Slurm, ``srun --kill-on-bad-exit``).
  The hooks are installed when shardarray is imported under a launcher that
  started more than one process, so a rank that fails before it makes a mesh
  (before MPI exists in it) still ends the job; mpi4py is not imported for that.
* **A process that exits while others still wait for it** (``sys.exit``, the end
  of its script; ``SystemExit`` never reaches an excepthook): at exit every
  process tells every other one how many collectives it has entered (a
  synchronous message on ``COMM_WORLD`` with a reserved tag, so the exchange
  also ends only when every process exits). A watchdog thread (started with
  the first ``comm="mpi"`` mesh; needs ``MPI.THREAD_MULTIPLE``, mpi4py's
  default) receives these notices: a process waiting in collective number
  ``s`` of the job learns that process ``r`` left after ``c < s`` collectives,
  i.e. will never join, and ends the job naming ``r`` and the collective. A
  collective entered after such a notice raises ``CommError`` at once.
* **Processes stuck in different collectives** (an argument that differs between
  processes sent some into an allreduce over one mesh axis and the others into
  ``numpy()``'s check of ``COMM_WORLD``: different communicators, so nothing
  below ever compares them): a process that has waited in collective ``#s``
  for ``SHARDARRAY_HANG_CHECK_S`` seconds (10 by default; 0: off) has its
  watchdog send the signature of ``#s`` (op, axes, group) to the other members
  of ``#s`` (a point-to-point message with another reserved tag: nothing while
  no process is stuck). A process whose own ``#s`` was another collective, of
  which one of the two is a member, ends the job naming both collectives. Only
  facts are compared (which collective each process entered as its ``#s``; a
  notice of a ``#s`` not reached yet waits until it is), so a process that is
  merely slow, or waits for a third one, is never taken for a deadlock. The
  collectives of ``MpiCommunicator`` and (across processes) ``NcclCommunicator`` mark their end (``leave``);
  a process counts as stuck only while inside one.
* **Processes that disagree** on the op, axes, dtype or block shapes of a
  collective (e.g. arrays of different global sizes): always, arrays are
  compared where they are made (``check_array``) and each MPI collective's
  group compares a small header (op, dtype, block shape) before the data
  moves (``MpiCommunicator._agree``); with ``SHARDARRAY_CHECK_SPMD=1`` every
  collective first compares a signature over the whole job (one extra small
  allgather each), so different sequences of collectives are named too. Each
  raises ``CommError`` on every process it concerns, naming which processes
  ran what. Conversions of split arrays (``x.numpy()``) always compare the
  global shape, the dtype and how the array is split (a digest of every
  device's block bounds: processes that made the same array with different
  layouts would otherwise assemble a scrambled one); creation checks compare
  the layout where the caller gives it (``from_local``).

* **Processes that go different ways** (an op given a host argument that differs between processes: a reshape to a
  per-process shape, a slice bound, an axis, ``keepdims``, ``einsum`` subscripts, a dim name, a roll's shift, a concat
  axis, a reshard's target layout, ``take``'s host indices): one process entered an ``Alltoallv`` over a mesh axis
  while another entered ``numpy()``'s check of ``COMM_WORLD``, or none, or the same collective with blocks of another
  array. Always, every collective of an MPI mesh first compares the job's header over ``COMM_WORLD``
  (``exchange_header``: one small pickled allgather, which also carries the check over the job where one follows, so
  that a collective checked over the job costs no more than before): the collective's number, op and axes (and a
  broadcast's root) and a digest of the **outermost op** that issued it with its small host arguments (ints, floats,
  strings, tuples, slices, None, dtypes, dim names; an array of the mesh not by itself, since its collectives compare
  its shapes and dtype, except a small one every process holds whole, by its values: ``xp.take``'s host list of
  indices; a NumPy array, per-process data such as ``sa.from_local``'s block, not at all; a list of more than 64 items
  by its length). The op mechanism keeps a reference to the outermost op each thread runs (``as_op``, in a job of
  several processes only); the digest is computed when a collective is sent, once per op. Processes whose headers
  differ raise ``CommError`` there, all of them with one message: the op and only the arguments that differ on each
  process when they issued the same collective, else each process's collective and op. They stay in step (each
  consumed the same header) and no process waits in another collective. A process that issued no collective in that op
  meets the others with its next collective (another op, or ``numpy()`` outside any op): named the same way. An op
  that differs between processes but sends nothing (a value printed on process 0 only) is compared by nothing: legal
  SPMD. NCCL's collectives (``NcclCommunicator``) do not pay the header: their data moves on the GPUs, and the extra
  host round trip would cost every step; the watchdog covers them.

* **Processes that pass an op different host arguments** (``x + r``, ``x[r] = v``, ``x[2] = r``,
  ``sa.top_k(x, k=r + 1)``, an axis, shape, dtype, ``keepdims``, slice bound or dim name computed from the
  process index or drawn per process): each process computes something else and the blocks of one array
  silently mix, with no collective to tell. Ops note their host arguments (``note``; the op mechanism notes
  every op's through ``note_op``). With ``SHARDARRAY_CHECK_SPMD=1`` each process keeps a digest of the notes
  since its last collective, and that collective's job-wide check compares it (no extra message per op; a
  second small allgather only when the digests differ, for the message): ``CommError`` on every process
  naming the op and each process's arguments. A mismatch after the last collective ends the job at exit
  (status 1, the message on process 0). Always on, and free (a crc in the header that travels anyway), where
  the op's own collective follows: ``top_k``'s ``k`` over a split dim, the index and value of a write that
  moves data (an array value, integer ids, a mask) are compared by that collective's group
  (``note(agree=True)``). A scalar written at ints and slices, which each device writes locally, is
  compared with the check on only. With the check on, ops that some processes run on purpose (a value printed
  under ``if mesh.process_index == 0``) count as a mismatch too; ops on meshes of this process alone
  (``comm="emulated"``) are never noted.

A check may also carry this process's own error (``enter(..., failure=e)``):
an argument that only one process finds wrong (``from_local``'s block shape)
then raises the same error on every process instead of leaving the others
waiting in their next collective.

Collectives are counted only when their group has more than one member
(the mesh decides that, so every process counts the same ones).
"""

from __future__ import annotations

import atexit
import hashlib
import inspect
import os
import re
import signal
import sys
import threading
import time
import zlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, cast

from .. import errors as _errors
from ..errors import ArgumentError, CommError, ShardArrayError

_TAG = 31_415  # below 32767, the least MPI_TAG_UB the standard allows
_STUCK_TAG = 31_416  # the watchdogs' "stuck in collective #s" notices
_HISTORY = 64  # how many of its last collectives' signatures a process keeps (to judge others' notices)
_HANG_CHECK_S = 10.0  # SHARDARRAY_HANG_CHECK_S's default
_POLL_S = 0.05  # how often the watchdog looks for departure notices
_FORWARD_S = 0.2  # pause before aborting, so that the launcher forwards the last output
_NOTES = 32  # how many noted ops a process keeps for a message (the digest covers every one)
_SHOW = 120  # characters of one op's host arguments kept for a message
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")  # an object's address in its repr (differs between processes)
_MAGIC = 0x5348_4152_4441  # ("SHARDA") marks the header of a collective of shardarray's among the program's own
_MANY = 64  # items of a host list or tuple an op's digest lists one by one (a longer one: its length only)


class _State:
    lock = threading.Lock()
    seq = 0  # collectives entered by this process (group size > 1)
    current: tuple | None = None  # the signature of the collective entered last (described only for a message)
    departed: ClassVar[dict[int, int]] = {}  # process -> the collectives it had entered when it exited
    inflight = 0  # the collective this process is inside (0: none; ``leave`` ends it)
    since = 0.0  # when it entered it (time.monotonic())
    reported = 0  # the last collective this process told its group it is stuck in
    history: ClassVar[dict[int, tuple]] = {}  # collective number -> its signature, the last _HISTORY
    notices: ClassVar[dict[int, tuple]] = {}  # process -> the signature of the collective it said it is stuck in
    hooks = False
    watchdog: threading.Thread | None = None
    stop = threading.Event()
    job = False  # this process is one of a job of several (a comm="mpi" mesh was made): ``note`` keeps agreed notes
    noting = False  # SHARDARRAY_CHECK_SPMD=1 in such a job, as read at the last collective: ``note`` records
    notes: ClassVar[list[tuple[str, str]]] = []  # (op, host arguments) since the last collective: the first _NOTES
    noted = 0  # how many were noted since the last collective
    digest: Any = None  # a blake2b of every note since the last collective (None: nothing noted)
    agreed: ClassVar[list[tuple[str, str]]] = []  # ``note(agree=True)``s not compared yet (the first _NOTES)
    agreed_crc = 0  # a crc32 over all of them (0: none)
    exit_notes: ClassVar[dict[int, tuple]] = {}  # process -> (digest, notes) it sent when it exited (the check on)
    before: tuple[str | None, Any] = (None, ([], 0))  # (digest, notes) of the ops run before the last collective


def check_enabled() -> bool:
    """Whether ``SHARDARRAY_CHECK_SPMD=1`` asks for the per-collective signature check."""
    return os.environ.get("SHARDARRAY_CHECK_SPMD", "") not in ("", "0")


def _mpi_if_initialized() -> Any:
    """The MPI module when this process has initialised MPI (and not finalised it), else None."""
    MPI = sys.modules.get("mpi4py.MPI")
    if MPI is None:
        return None
    try:
        return MPI if MPI.Is_initialized() and not MPI.Is_finalized() else None
    except Exception:  # pragma: no cover - a broken MPI library
        return None


def _rank() -> str:
    MPI = _mpi_if_initialized()
    if MPI is not None:
        return str(MPI.COMM_WORLD.Get_rank())
    return os.environ.get("PMI_RANK", os.environ.get("OMPI_COMM_WORLD_RANK", "?"))


def abort_job(code: int = 1) -> None:
    """End every process of the job now (flushes this process's output first)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # pragma: no cover - a closed stream
            pass
    time.sleep(_FORWARD_S)  # give the launcher a moment to forward what this process printed before it is killed
    MPI = _mpi_if_initialized()
    if MPI is not None:
        MPI.COMM_WORLD.Abort(code)  # MPICH may return from it when called from a thread other than main
    # no MPI here (or Abort returned): a death by signal makes the launcher end the other processes
    os.kill(os.getpid(), signal.SIGKILL)
    os._exit(code)  # pragma: no cover - SIGKILL ends the process first


def install_hooks() -> None:
    """Make an uncaught exception (any thread) and an early exit end the whole job. Idempotent.

    Imports no MPI: called when shardarray is imported under a launcher that
    started more than one process, and again by every ``comm="mpi"`` mesh.
    """
    with _State.lock:
        if _State.hooks:
            return
        _State.hooks = True
    previous = sys.excepthook
    previous_thread = threading.excepthook

    def hook(kind: Any, value: Any, tb: Any) -> None:
        previous(kind, value, tb)
        print(f"shardarray: process {_rank()} raised {kind.__name__}; ending the MPI job", file=sys.stderr)
        abort_job(1)

    def thread_hook(args: Any) -> None:
        previous_thread(args)
        if args.exc_type is SystemExit:
            return
        name = getattr(args.thread, "name", "?")
        print(
            f"shardarray: process {_rank()} raised {args.exc_type.__name__} in thread {name!r}; ending the MPI job",
            file=sys.stderr,
        )
        abort_job(1)

    sys.excepthook = hook
    threading.excepthook = thread_hook
    atexit.register(_at_exit)


# ------------------------------------------------------------------ departures
def start_watchdog(world: Any) -> None:
    """Start the thread that receives other processes' exit and stuck notices and tells the others when this
    process is stuck (once; needs MPI.THREAD_MULTIPLE).

    Raises:
        ArgumentError: ``SHARDARRAY_HANG_CHECK_S`` is no number of seconds (``hang_check_s``).
    """
    install_hooks()
    limit = hang_check_s()
    with _State.lock:
        _State.job = _State.job or world.Get_size() > 1
        if _State.watchdog is not None:
            return
        MPI = sys.modules["mpi4py.MPI"]
        if MPI.Query_thread() < MPI.THREAD_MULTIPLE:  # pragma: no cover - mpi4py asks for MULTIPLE by default
            return
        _State.watchdog = threading.Thread(
            target=_watch, args=(world, MPI, limit), name="shardarray-spmd-watchdog", daemon=True
        )
        _State.watchdog.start()


def hang_check_s() -> float:
    """Seconds a process waits inside one collective before its watchdog tells its group (``SHARDARRAY_HANG_CHECK_S``;
    10 by default, 0 turns the deadlock check off).

    Raises:
        ArgumentError: the variable is set to something other than a non-negative number of seconds.
    """
    text = os.environ.get("SHARDARRAY_HANG_CHECK_S", "").strip()
    if not text:
        return _HANG_CHECK_S
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0 or value == float("inf"):
        raise ArgumentError(
            f"SHARDARRAY_HANG_CHECK_S={text!r} is not a number of seconds: set it to a non-negative number (e.g. 10; "
            f"0 turns the check for processes stuck in different collectives off) or unset it"
        )
    return value


def _watch(world: Any, MPI: Any, limit: float) -> None:
    status = MPI.Status()
    me, size = world.Get_rank(), world.Get_size()
    sends: list[Any] = []
    while not _State.stop.is_set():
        while world.Iprobe(source=MPI.ANY_SOURCE, tag=_TAG, status=status):
            source = status.Get_source()
            _departed(source, world.recv(source=source, tag=_TAG))
        while world.Iprobe(source=MPI.ANY_SOURCE, tag=_STUCK_TAG, status=status):
            source = status.Get_source()
            notice = world.recv(source=source, tag=_STUCK_TAG)  # (the signature of the collective it is stuck in)
            if isinstance(notice, tuple) and len(notice) == 9:
                with _State.lock:
                    _State.notices[source] = notice
        if limit > 0:
            sends = [r for r in sends if not r.Test()]
            sig, members = _stuck_in(me, size, limit)
            sends.extend(world.isend(sig, dest=rank, tag=_STUCK_TAG) for rank in members)
            _judge_notices(me, size)
        _State.stop.wait(_POLL_S)


def leave(seq: int | None = None) -> None:
    """Collective ``seq`` (``enter``'s number; None: whichever it is in) is over on this process: it no longer
    waits in it."""
    with _State.lock:
        if seq is None or _State.inflight == seq:
            _State.inflight = 0


def _members(sig: tuple, size: int) -> set[int]:
    """The processes a collective of signature ``sig`` needs: its group, or the whole job."""
    group = sig[5]
    return set(range(size)) if group is None else set(group)


def _stuck_in(me: int, size: int, limit: float) -> tuple[tuple | None, list[int]]:
    """The signature of the collective this process has waited in for over ``limit`` seconds and its other members,
    when it has not told them yet (it then counts as told); else ``(None, [])``."""
    with _State.lock:
        seq = _State.inflight
        if not seq or seq == _State.reported or time.monotonic() - _State.since < limit or seq not in _State.history:
            return None, []
        _State.reported = seq
        sig = _State.history[seq]
        return sig, sorted(_members(sig, size) - {me})


def _judge_notices(me: int, size: int) -> None:
    """End the job when a process said it is stuck in collective #s, and this process's #s was another collective
    that one of the two needs the other for: they wait in different collectives, and neither will ever return.

    A notice of a collective this process has not reached yet is kept until it does; older ones than the kept
    history are dropped. Only facts are compared (which collective each process entered as its #s), so a process
    that is merely slow (computing, or waiting for a third one) is never taken for a deadlock."""
    with _State.lock:
        oldest = min(_State.history, default=0)
        verdict = None
        for rank, theirs in list(_State.notices.items()):
            seq = theirs[0]
            mine = _State.history.get(seq)
            if mine is None:
                if seq < oldest:
                    del _State.notices[rank]
                continue
            del _State.notices[rank]
            if _same_collective(mine, theirs):
                continue
            if rank in _members(mine, size) or me in _members(theirs, size):
                verdict = (rank, seq, mine, theirs, _State.inflight == seq)
                break
    if verdict is None:
        return
    rank, seq, mine, theirs, waiting = verdict
    print(
        f"shardarray: SPMD deadlock: process {rank} waits in collective #{seq} ({_describe(theirs, number=False)}) "
        f"but process {me}'s collective #{seq} was {_describe(mine, number=False)}"
        f"{' (it waits there)' if waiting else ''}; neither can return, ending the MPI job. Every process must run "
        f"the same collectives in the same order: look for an argument that differs between processes (an index, "
        f"an axis, a size or layout computed from the process index, a random value drawn per process) or for an "
        f"error that only some processes raised and caught",
        file=sys.stderr,
    )
    abort_job(1)


def _same_collective(a: tuple, b: tuple) -> bool:
    """Whether two processes' signatures of one numbered collective name the same call (op, axes, group)."""
    return a[1:3] == b[1:3] and a[5] == b[5]


def _departed(rank: int, notice: Any) -> None:
    """Process ``rank`` exited (``_at_exit``'s notice: the collectives it entered, or ``(entered, digest, notes)``
    with ``SHARDARRAY_CHECK_SPMD=1``)."""
    entered = notice[0] if isinstance(notice, tuple) else int(notice)
    with _State.lock:
        _State.departed[rank] = entered
        if isinstance(notice, tuple):
            _State.exit_notes[rank] = notice[1:]
        seq, current, before = _State.seq, _State.current, _State.before
    if seq > entered:  # we wait in collective `seq` (so one was entered), which `rank` never joined
        why = ""
        if isinstance(notice, tuple) and entered == seq - 1 and before[0] is not None and before[0] != notice[1]:
            # (both ran the same collectives before this one, and then different ops: the likely cause)
            me = int(_rank()) if _rank().isdigit() else -1
            why = f" {notes_mismatch([before[1], notice[2]], 'since collective #' + str(entered), [me, rank])}."
        print(
            f"shardarray: process {rank} exited after {entered} collective(s) while process {_rank()} waits "
            f"for it in collective #{seq} ({_describe(cast('tuple', current), number=False)}); ending the MPI job. "
            f"Every process must run the same collectives (SPMD): look for an early sys.exit/return or a collective "
            f"(a split array's numpy(), a sum over a split dim) inside `if mesh.process_index == ...`{why}",
            file=sys.stderr,
        )
        abort_job(1)


def _at_exit() -> None:
    """Tell every other process how many collectives this one entered; wait until each has said the same."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # pragma: no cover
            pass
    try:
        from mpi4py import MPI  # initialises MPI if this process never did, so that peers in MPI_Init go on
    except ImportError:  # pragma: no cover - no MPI: nothing can wait for us
        return
    if not MPI.Is_initialized() or MPI.Is_finalized():
        return
    _State.stop.set()
    if _State.watchdog is not None:
        _State.watchdog.join()
    world = MPI.COMM_WORLD
    me, n = world.Get_rank(), world.Get_size()
    with _State.lock:
        entered, known = _State.seq, set(_State.departed)
        digest, noted = _take_notes()  # (None unless SHARDARRAY_CHECK_SPMD=1 now)
    notice = entered if digest is None else (entered, digest, noted)
    requests = [world.issend(notice, dest=r, tag=_TAG) for r in range(n) if r != me]
    receives = {r: world.irecv(source=r, tag=_TAG) for r in range(n) if r != me and r not in known}
    for r, request in receives.items():
        got = request.wait()
        if isinstance(got, tuple):
            with _State.lock:
                _State.exit_notes[r] = got[1:]
    MPI.Request.waitall(requests)
    if digest is not None:
        _exit_notes(me, n, (digest, noted))


def _exit_notes(me: int, n: int, mine: tuple[str, Any]) -> None:
    """With ``SHARDARRAY_CHECK_SPMD=1``: when the processes' notes since their last collective differ (``note``: an
    op whose host arguments differ, with no collective after it, e.g. ``float(x + r)`` of a replicated ``x``), the
    lowest process prints which, and every process ends with status 1 (each compares the same notices)."""
    with _State.lock:
        every = {**_State.exit_notes, me: mine}
    if len(every) < n or len({every[r][0] for r in range(n)}) == 1:
        return
    if me == 0:
        text = notes_mismatch([every[r][1] for r in range(n)], "at exit (after the last collective)")
        print(f"shardarray: {text}", file=sys.stderr)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # pragma: no cover
            pass
    os._exit(1)


# ------------------------------------------------------------------ host arguments of ops
def noting() -> bool:
    """Whether ops note their host arguments now (``SHARDARRAY_CHECK_SPMD=1`` in a job of several processes, as
    read at this process's last collective): a caller may skip building ``note``'s arguments otherwise."""
    return _State.noting


def show(value: Any) -> str:
    """``value`` as ``note`` compares it: its ``repr``, a NumPy array by its shape, dtype and a digest of its bytes,
    an array of the mesh by its global shape and dtype (its values are compared by its own collectives), a
    mapping, list or tuple item by item."""
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k!r}: {show(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        inner = ", ".join(show(v) for v in value)
        return f"[{inner}]" if isinstance(value, list) else f"({inner}{',' if len(value) == 1 else ''})"
    if _is_array(value):
        return f"<array {tuple(getattr(value, 'shape', ()))} {getattr(value, 'dtype', '?')}>"
    ndim = getattr(value, "ndim", None)
    if ndim and hasattr(value, "__array_interface__"):  # a NumPy array (not a scalar)
        data = hashlib.blake2b(value.tobytes(), digest_size=4).hexdigest()
        return f"<ndarray {value.shape} {value.dtype} {data}>"
    if isinstance(value, (set, frozenset)):  # (in an order of their own: string hashes differ between processes)
        return "{" + ", ".join(sorted(show(v) for v in value)) + "}"
    if callable(value) and not isinstance(value, type):  # (a function: by name, not by its address)
        return f"<{getattr(value, '__module__', '?')}.{getattr(value, '__qualname__', type(value).__name__)}>"
    return _ADDRESS.sub("", repr(value))


def _is_array(value: Any) -> bool:
    """Whether ``value`` is a ``ShardArray`` (which ``comm`` cannot import), asked of its class: reading ``shards``
    of an array being differentiated raises ``TapeError``."""
    return hasattr(type(value), "shards") and hasattr(type(value), "dims")


def _mesh_of(values: Any) -> Any:
    """The mesh of the first array of the mesh among ``values`` (one level into lists and tuples), or None."""
    for v in values:
        for w in v if isinstance(v, (list, tuple)) else (v,):
            if _is_array(w):
                return getattr(w, "mesh", None)
    return None


def note_op(name: str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> None:
    """``note`` the host arguments of the op ``name`` called with ``args`` and ``kwargs`` (its arrays are left out:
    their collectives compare them), on the mesh of its first array; for the op mechanism, with
    ``SHARDARRAY_CHECK_SPMD=1`` (``noting``)."""
    if not _State.noting:
        return
    mesh = _mesh_of((*args, *kwargs.values()))
    if mesh is None or getattr(mesh, "comm_kind", None) != "mpi":
        return
    host = [(f"arg{i}", a) for i, a in enumerate(args) if _mesh_of((a,)) is None]
    host += [(k, v) for k, v in kwargs.items() if _mesh_of((v,)) is None]
    _record(name, ", ".join(f"{k}={show(v)}" for k, v in host), False)


def note(mesh: Any, op: str, /, agree: bool = False, **values: Any) -> None:
    """Note that this process runs ``op`` with these host arguments (Python scalars, indices, axes, sizes, names):
    every process of the job must pass the same ones.

    With ``SHARDARRAY_CHECK_SPMD=1`` every note since this process's last collective goes into a digest that the
    next collective's job-wide check compares (``enter``): processes that ran ``x + r`` with an ``r`` of their
    own raise ``CommError`` there, naming the op and each process's arguments. ``agree=True`` also compares
    them without the check, at the next collective whose group compares a header (``MpiCommunicator._agree``) or
    that is checked over the job: for an op whose own collective follows (``top_k``'s ``k`` over a split dim), where
    the comparison costs nothing more than a few bytes in a header that travels anyway. An op on a mesh of this
    process alone (not ``comm="mpi"``), outside a job of several processes, or without the check and ``agree``,
    notes nothing.

    Args:
        mesh: the op's mesh.
        op: the op, as a message names it (``"add"``, ``"top_k"``, ``"x[...] = v"``).
        agree: compare at the op's own collective, always (see above).
        values: the host arguments, by name (``show`` says how each is compared).
    """
    if not (_State.noting or (agree and _State.job)) or getattr(mesh, "comm_kind", None) != "mpi":
        return
    _record(op, ", ".join(f"{k}={show(v)}" for k, v in values.items()), agree)


def _record(op: str, text: str, agree: bool) -> None:
    """Keep the note ``op(text)`` (see ``note``)."""
    with _State.lock:
        if _State.noting:
            if _State.digest is None:
                _State.digest = hashlib.blake2b(digest_size=8)
            _State.digest.update(f"{op}({text})\0".encode())
            if _State.noted < _NOTES:
                _State.notes.append((op, text[:_SHOW]))
            _State.noted += 1
        if agree and _State.job:
            _State.agreed_crc = zlib.crc32(f"{op}({text})\0".encode(), _State.agreed_crc) or 1
            if len(_State.agreed) < _NOTES:
                _State.agreed.append((op, text[:_SHOW]))


def _take_notes() -> tuple[str | None, tuple[list[tuple[str, str]], int]]:
    """The digest of the notes since the last collective (None: without ``SHARDARRAY_CHECK_SPMD=1``) and the notes,
    for ``enter``; forgets them and reads the variable again (call holding the lock)."""
    checking = check_enabled()
    digest = None
    if checking:  # (turned on since the last collective: nothing noted yet, on every process alike)
        digest = _State.digest.hexdigest() if _State.noting and _State.digest is not None else ""
    taken = (_State.notes, _State.noted)
    _State.notes, _State.noted, _State.digest = [], 0, None
    _State.noting = checking
    return digest, taken


def take_agreed() -> tuple[int, list[tuple[str, str]]]:
    """``(a crc32 of the notes to agree on that no collective compared yet, those notes)``, then forgets them: for
    a collective that compares them over its group (0 and ``[]``: none). Every process takes them at the same
    collectives (a group's header, a check over the job), so they stay in step."""
    with _State.lock:
        taken = (_State.agreed_crc, _State.agreed)
        _State.agreed, _State.agreed_crc = [], 0
    return taken


def notes_mismatch(lists: Sequence[Any], where: str, ranks: Sequence[int] | None = None) -> str:
    """The message for processes whose notes (``lists[i]``: ``(notes, how many)`` of process ``ranks[i]``, by default
    ``i``) differ, ``where`` naming the collective that compared them: the first op whose arguments differ, each
    process's arguments."""
    rows = [(list(n), int(c)) for n, c in lists]
    ranks = list(range(len(rows))) if ranks is None else list(ranks)
    first = 0
    while all(first < len(n) for n, _ in rows) and len({n[first] for n, _ in rows}) == 1:
        first += 1
    here = [n[first] if first < len(n) else None for n, _ in rows]
    ops = {h[0] for h in here if h is not None}
    if len(ops) == 1 and None not in here:
        (op,) = ops
        lead = f"the processes ran {op} with different arguments"
        by = _grouped([h[1] for h in cast("list[tuple[str, str]]", here)], ranks)
    elif all(h is None for h in here):
        lead = f"the processes ran more than {first} noted op(s) alike, then others"
        by = _grouped([f"{c} op(s) noted" for _, c in rows], ranks)
    else:
        lead = "the processes ran different ops"
        by = _grouped(["nothing more" if h is None else f"{h[0]}({h[1]})" for h in here], ranks)
    return (
        f"SPMD mismatch {where}: {lead} ({'' if not first else f'after {first} op(s) alike; '}{by}). Every process "
        f"must run the same ops with the same host arguments (Python scalars, indices, k, axes, sizes, dim names, "
        f"seeds): a value computed from mesh.process_index, drawn at random per process or read from a "
        f"per-process file makes each process compute something else, and the blocks of one array silently mix. "
        f"Compute such values alike on every process (per-process data belongs in an array: sa.from_local). Ops "
        f"run on purpose on some processes only (a value printed under `if mesh.process_index == 0`) count too "
        f"with SHARDARRAY_CHECK_SPMD=1: run them on every process"
    )


def _grouped(texts: Sequence[str], ranks: Sequence[int]) -> str:
    """``"processes 0, 2: a; process 1: b"``: the processes (``ranks[i]`` said ``texts[i]``) grouped by their text."""
    by: dict[str, list[int]] = {}
    for rank, text in zip(ranks, texts):
        by.setdefault(text, []).append(rank)
    return "; ".join(f"process{'es' if len(r) > 1 else ''} {', '.join(map(str, r))}: {t}" for t, r in by.items())


# ------------------------------------------------------------------ the outermost op, in every collective's header
class _Op(threading.local):
    """The outermost op this thread runs in a job of several processes (``as_op``): ``[name, its function, args,
    kwargs, None]``, the last ``(digest, text)`` once a collective of the op needed them; None outside any op."""

    current: list[Any] | None = None


_OP = _Op()
#: what the op mechanism reads on every op (``core.tape``): ``JOB.job`` is True in a job of several processes
JOB = _State


def as_op(name: str, fn: Callable[..., Any], run: Callable[..., Any], args: tuple, kwargs: dict[str, Any]) -> Any:
    """``run(*args, **kwargs)``: the op ``name`` (its function ``fn``) in a job of several processes (``JOB.job``).

    The outermost op a thread runs is kept (a reference, nothing computed) until it returns: a collective it issues
    puts a digest of its name and host arguments into the job's header (``exchange_header``), so that processes
    that passed the op different arguments raise ``CommError`` there instead of waiting in different collectives
    or mixing their blocks. An op that issues no collective costs nothing more. With ``SHARDARRAY_CHECK_SPMD=1``
    every op (outermost or not) is also noted (``note_op``).
    """
    if _State.noting:
        note_op(name, args, kwargs)
    here = _OP
    if here.current is not None:
        return run(*args, **kwargs)
    here.current = [name, fn, args, kwargs, None]
    try:
        return run(*args, **kwargs)
    finally:
        here.current = None


def _brief(value: Any, depth: int = 0, shown: bool = False) -> str:
    """``value`` as the header's digest compares it: a small host value by its ``repr`` (``show``), an array of the
    mesh not by itself (its shape and dtype are its collectives' to compare, with their own messages) but a small
    one that every process holds whole by its values (``_mesh_array``), a NumPy array not at all (``<ndarray>``:
    per-process data, e.g. ``sa.from_local``'s block), a list or tuple of more than ``_MANY`` items by its length
    only. ``shown``: for a message (an array of the mesh with its global shape and dtype)."""
    if isinstance(value, (list, tuple)):
        if len(value) > _MANY or depth > 3:
            return f"<{type(value).__name__} of {len(value)}>"
        inner = ", ".join(_brief(v, depth + 1, shown) for v in value)
        return f"[{inner}]" if isinstance(value, list) else f"({inner}{',' if len(value) == 1 else ''})"
    if isinstance(value, Mapping):
        if len(value) > _MANY or depth > 3:
            return f"<{type(value).__name__} of {len(value)}>"
        return "{" + ", ".join(f"{k!r}: {_brief(v, depth + 1, shown)}" for k, v in value.items()) + "}"
    if _is_array(value):
        return _mesh_array(value, show(value) if shown else "<array>")
    if getattr(value, "ndim", 0) and hasattr(value, "__array_interface__"):
        return "<ndarray>"
    return show(value)


def _mesh_array(value: Any, text: str) -> str:
    """``text`` (``<...>``: an array of the mesh) with the values of a small array that every process holds whole (at
    most ``_MANY`` values, no dim split, no pending sum, NumPy blocks): host data an op turned into an array
    (``xp.take``'s host list of indices) must be the same everywhere."""
    if value.size > _MANY or value.pending or value.layout:
        return text
    block: Any = next((b for b in value._shards if b is not None), None)  # (as they are: no tape check)
    if block is None or type(block).__module__ != "numpy":  # (no block here; GPU blocks are not read)
        return text
    return f"{text[:-1]} {block.tolist()}>"


def _host_pairs(fn: Any, args: tuple, kwargs: Mapping[str, Any], named: bool) -> list[tuple[str, str]]:
    """``[(parameter, _brief(value))]`` of an op's arguments (``named``: by the names of ``fn``'s parameters, for a
    message; else ``arg0``, ``arg1``...)."""
    pairs = [(f"arg{i}", v) for i, v in enumerate(args)] + list(kwargs.items())
    if named:
        try:
            bound = inspect.signature(fn).bind_partial(*args, **kwargs).arguments
            pairs = list(bound.items())
        except (TypeError, ValueError):  # (the op's own call refuses such arguments; a builtin without signature)
            pass
    return [(k, _brief(v, shown=True)[:_SHOW] if named else _brief(v)) for k, v in pairs]


def op_digest() -> tuple[int, str]:
    """``(digest, text)`` of the outermost op this thread runs (``as_op``): a positive 63-bit hash of its name and
    host arguments (``_brief``) and ``name(arguments)``; ``(0, "")`` outside any op. Computed once per op, when its
    first collective needs it."""
    cur = _OP.current
    if cur is None:
        return 0, ""
    if cur[4] is None:
        text = f"{cur[0]}({', '.join(f'{k}={v}' for k, v in _host_pairs(cur[1], cur[2], cur[3], False))})"
        code = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little") >> 1
        cur[4] = (code or 1, text)
    return cast("tuple[int, str]", cur[4])


def exchange_header(world: Any, sig: tuple, payload: Any, failed: bool = False) -> list[Any] | None:
    """Compare the job's header of collective ``sig`` over ``world`` (one small allgather, always on): a mark, the
    collective's number, a crc of its op and axes (and ``extra``, e.g. a broadcast's root, where no check over the
    job follows), the outermost op's digest (``op_digest``) and ``payload``, the check over the job that follows
    (``enter``; None: none). Raise ``CommError`` on every process when they differ, naming each process's collective
    and op with its arguments (one more small allgather, for the message only). Returns every process's
    ``payload`` when one was given (the check rides in the header: no second exchange), else None.

    Every collective of an MPI mesh enters the job with this same call on ``COMM_WORLD``, so processes that went
    different ways (a reshape to a per-process shape, a slice, an axis, an einsum's subscripts) meet in it, whichever
    collectives they were about to run, and none waits forever. It is mpi4py's pickled ``allgather`` (a count, then
    the bytes), as the program's own ``COMM_WORLD.allgather`` is: a process out of step in one of those meets it and
    both return (``CommError`` here), where buffers of another size would end the job in MPI. Nothing is compared on
    a stand-in for ``world`` (no MPI communicator) or in a job of one process (None). ``failed``: this process
    failed the step that the check in ``payload`` is about (``enter(failure=...)``), and its op and axes may be
    placeholders: not compared.
    """
    MPI = _mpi_if_initialized()
    if MPI is None or not isinstance(world, MPI.Comm) or world.Get_size() < 2:
        return None
    code, _ = op_digest()
    extra = sig[8][0] if sig[8] is not None and payload is None else ""  # (a check that follows compares it)
    what = -1 if failed else zlib.crc32(f"{sig[1]}|{sig[2]}|{extra}".encode())
    mine = (_MAGIC, sig[0], what, code, payload is not None)
    rows = _allgather(world, (*mine, payload), sig)
    foreign = [r for r, row in enumerate(rows) if not (isinstance(row, tuple) and len(row) == 6 and row[0] == _MAGIC)]
    if foreign:
        take_agreed()  # (every process raises here: the notes to agree on before it are void alike)
        raise CommError(
            f"SPMD mismatch: collective {_describe(sig)} met something else on process(es) {foreign} (a collective "
            f"of the program's own on COMM_WORLD, of {type(rows[foreign[0]]).__name__}): the processes are out of "
            f"step, e.g. after an error that only some of them raised and caught. Every process must run the same "
            f"ops in the same order; let an error end the job (uncaught) or raise it on every process"
        )
    whats = {row[2] for row in rows} - {-1}
    if len(whats) <= 1 and len({(row[1], row[3], row[4]) for row in rows}) == 1:
        return [row[5] for row in rows] if payload is not None else None
    take_agreed()  # (every process raises here: the notes to agree on before it are void alike)
    cur = _OP.current
    mine_op = None if cur is None else (cur[0], _host_pairs(cur[1], cur[2], cur[3], True))
    more = f" {sig[8][1]}" if extra else ""
    short = f"{sig[1]}{f' over axes {sig[2]}' if sig[2] else ''}{more}"  # (the same on every process that agrees)
    every = world.allgather((short, _describe(sig), mine_op))
    raise CommError(ops_mismatch(every, int(rows[0][1])))


def ops_mismatch(rows: Sequence[tuple[str, str, Any]], seq: int) -> str:
    """The message for processes whose headers differ at collective ``seq`` (``rows[r]``: process ``r``'s collective,
    briefly and in full, and ``(op, [(parameter, value)])`` of its outermost op, or None outside any op): the op and
    the arguments that differ, when every process runs the same op and collective; else each process's collective
    and op."""
    ops = {None if row[2] is None else row[2][0] for row in rows}
    where = {row[0] for row in rows}
    every = [dict(row[2][1]) if row[2] is not None else {} for row in rows]
    keys = [k for e in every for k in e]
    differ = [k for k in dict.fromkeys(keys) if len({e.get(k, "(not given)") for e in every}) > 1]
    if len(ops) == 1 and None not in ops and len(where) == 1 and differ:
        (name,) = ops
        lead = f"the processes ran {name} with different arguments in collective #{seq} ({rows[0][0]})"
        texts = [", ".join(f"{k}={e.get(k, '(not given)')}" for k in differ) for e in every]
    else:
        lead = f"the processes reached different collectives as collective #{seq} of the job"
        inside = [None if op is None else f"{op[0]}({', '.join(f'{k}={v}' for k, v in op[1])})" for _, _, op in rows]
        texts = [f"{full} {'outside any op' if op is None else 'in ' + op}" for (_, full, _), op in zip(rows, inside)]
    return (
        f"SPMD mismatch: {lead} ({_grouped(texts, range(len(rows)))}). Every process must run the same ops with the "
        f"same host arguments (shapes, slice bounds, axes, keepdims, dtypes, dim names, einsum subscripts, layouts, "
        f"indices, shifts): a value computed from mesh.process_index, drawn at random per process or read from a "
        f"per-process file sends the processes different ways. Compute such values alike on every process "
        f"(per-process data belongs in an array: sa.from_local)"
    )


# ------------------------------------------------------------------ collectives
def _describe(sig: tuple, number: bool = True) -> str:
    seq, op, axes, dtype, shape, _group, _dim, whole, extra = sig
    where = f" over axes {axes}" if axes else ""
    what = f" on a {dtype} block of shape {shape}" if shape is not None else f" ({dtype})" if dtype != "?" else ""
    glob = f" of a global {whole}" if whole is not None else ""
    more = f" {extra[1]}" if extra is not None else ""
    return f"{f'#{seq} ' if number else ''}{op}{where}{what}{glob}{more}"


def layout_extra(layout: Any) -> tuple[str, str]:
    """The ``extra`` of ``enter`` for an array made with ``layout`` (a ``Layout`` or ``{dim: axes}``): compared
    as its ``{dim: axes}`` of the split dims, shown as ``with layout {...}``."""
    split = layout.as_dict() if hasattr(layout, "as_dict") else {d: a for d, a in dict(layout).items() if a}
    text = repr({d: tuple(a) if isinstance(a, (tuple, list)) else a for d, a in split.items()})
    return text, f"with layout {text}"


def creation_extra(layout: Any, values: Mapping[str, Any] | None) -> tuple[str, str] | None:
    """The ``extra`` of ``enter`` for an array made with ``layout`` and from ``values`` (its fill value, seed,
    bounds: compared by their ``repr``, shown as ``from fill_value=...``); None when neither is given."""
    parts = [layout_extra(layout)] if layout is not None else []
    if values:
        text = ", ".join(f"{k}={v!r:.40}" for k, v in values.items())
        parts.append((repr(sorted((k, repr(v)) for k, v in values.items())), f"from {text}"))
    if not parts:
        return None
    return " | ".join(p[0] for p in parts), " ".join(p[1] for p in parts)


def blocks_extra(slices: Sequence[tuple[slice, ...]], shape: Sequence[int]) -> tuple[str, str]:
    """The ``extra`` of ``enter`` for a collective on the blocks ``slices`` (``slices[d]``: device d's block of
    an array of ``shape``): compared as a 16-hex-digit digest of every block's bounds, shown as the array axes
    that are split and that digest (the same on processes that agree, so that a message groups them)."""
    bounds = tuple(tuple(s.indices(n)[:2] for s, n in zip(sl, shape)) for sl in slices)
    token = hashlib.blake2b(repr(bounds).encode(), digest_size=8).hexdigest()
    split = tuple(i for i, n in enumerate(shape) if any(b[i] != (0, n) for b in bounds))
    return token, f"split along array axes {split} into blocks {token}"


def error_note(failure: BaseException, rank: int, what: str = "") -> tuple[str, str]:
    """``(error class name, message)`` of this process's ``failure``, for the other processes: its nearest class
    in ``shardarray.errors`` and its message (another exception: an ``ArgumentError`` naming it and ``rank``).
    ``what``: the step that failed, put before the message when given."""
    lead = f"{what} failed on process {rank}: " if what else ""
    for cls in type(failure).__mro__:
        if getattr(_errors, cls.__name__, None) is cls and issubclass(cls, ShardArrayError):
            return cls.__name__, f"{lead}{failure}"
    return ArgumentError.__name__, f"{lead or f'process {rank} '}raised {type(failure).__name__}: {failure}"


def raise_agreed(notes: Sequence[tuple[str, str] | None], rank: int, failure: BaseException | None) -> None:
    """Raise on every process the error of the lowest process that failed, of one class everywhere.

    ``notes``: each process's ``error_note`` (None: it did not fail), in rank order. Every process raises the class
    of the lowest failing process's note, so an ``except`` takes the same branch everywhere: that process re-raises
    its own error where it is one of ``sa``'s (else the ``ArgumentError`` of its note, from it), the others raise
    that class with its message. Nothing is raised when no process failed.
    """
    failed = [(r, n) for r, n in enumerate(notes) if n is not None]
    if not failed:
        return
    first, (kind, text) = failed[0]
    if failure is not None and first == rank and isinstance(failure, ShardArrayError):
        raise failure
    cls = getattr(_errors, kind, None)
    if not (isinstance(cls, type) and issubclass(cls, ShardArrayError)):  # pragma: no cover - never sent
        cls = ArgumentError
    raise cls(text) from failure


def enter(
    world: Any,
    op: str,
    axes: tuple[str, ...],
    local: Any,
    *,
    group: Sequence[int] | None = None,
    dim: int | None = None,
    whole: tuple[int, ...] | None = None,
    extra: tuple[str, str] | None = None,
    check: bool = False,
    failure: BaseException | None = None,
    order_only: bool = False,
    header: bool = True,
) -> int:
    """Count one collective of the job on this process, before it communicates; returns its number.

    Raises ``CommError`` when a process of the job has already exited without
    joining it, and, with ``check`` or ``SHARDARRAY_CHECK_SPMD=1``, when the
    processes disagree on it (see the module docstring).

    Args:
        world: ``MPI.COMM_WORLD``.
        op: the collective's name, as in the comm log.
        axes: the mesh axes of its groups.
        local: this process's buffer (its ``dtype`` and ``shape`` are compared; an object without
            ``shape`` compares the dtype only).
        group: the processes of this process's group (shapes are compared within groups).
        dim: an array axis along which group members' shapes may differ (uneven blocks).
        whole: the global shape, when the collective assembles a whole array.
        extra: ``(token, text)``: ``token`` must be equal on every process (e.g. the layout, or a digest of
            every device's block bounds: ``layout_extra``, ``blocks_extra``), ``text`` describes it in a message.
        check: compare signatures even without ``SHARDARRAY_CHECK_SPMD=1``.
        failure: this process's error from the step the collective checks (only with ``check=True``: the
            processes must agree on whether they exchange): it travels with the signature, and every process
            raises the error of the lowest process that failed, one class everywhere (``raise_agreed``), so that
            no process goes on alone. The other fields may then be placeholders.
        order_only: with ``check`` (and without ``SHARDARRAY_CHECK_SPMD=1``), compare only the collective's number,
            op, axes and group: that every process enters this collective now (its dtype and block shapes are
            the group's to compare, e.g. ``MpiCommunicator._agree``).
        header: first compare the job's header over ``world`` (an MPI communicator; ``exchange_header``): the
            collective's number, op and axes and the outermost op that issued it with its host arguments, one
            small ``Allgather``. False for a collective whose data moves elsewhere (NCCL's), which does not pay it.
    """
    sig_dtype, shape = str(getattr(local, "dtype", "?")), getattr(local, "shape", None)
    shape = tuple(shape) if shape is not None else None
    with _State.lock:
        _State.seq += 1
        seq = _State.seq
        sig = (seq, op, tuple(axes), sig_dtype, shape, tuple(group) if group is not None else None, dim, whole, extra)
        _State.current = sig
        _State.history[seq] = sig
        if len(_State.history) > _HISTORY:
            for old in [k for k in _State.history if k <= seq - _HISTORY]:
                del _State.history[old]
        _State.inflight, _State.since = seq, time.monotonic()
        gone = {r: c for r, c in _State.departed.items() if c < seq}
        _State.job = True
        digest, noted = _take_notes()
        _State.before = (digest, noted)
    try:
        if gone:
            names = ", ".join(f"process {r} (after {c} collective(s))" for r, c in sorted(gone.items()))
            raise CommError(
                f"collective {_describe(sig)} needs every process of the job, but {names} already exited; "
                f"every process must run the same collectives (SPMD)"
            ) from failure
        if failure is not None and not check:
            raise failure
        follow = check or digest is not None  # (digest: SHARDARRAY_CHECK_SPMD=1)
        payload: Any = None
        if follow:
            crc, agreed = take_agreed()
            failed = None if failure is None else error_note(failure, world.Get_rank())
            payload = (sig, failed, (crc, digest))
        every = exchange_header(world, sig, payload, failed=failure is not None) if header else None
        if follow:
            every = _allgather(world, payload, sig) if every is None else every
            check_payloads(every, sig)
            raise_agreed([p[1] for p in every], world.Get_rank(), failure)
            try:
                compare([p[0] for p in every], order_only=order_only and digest is None)
            except CommError as e:
                _compare_notes(world, every, (agreed, len(agreed)), noted, e)
                raise
            _compare_notes(world, every, (agreed, len(agreed)), noted, None)
    except BaseException:
        leave(seq)
        raise
    return seq


def _compare_notes(
    world: Any, every: Sequence[Any], agreed: tuple[list, int], noted: tuple[list, int], then: CommError | None
) -> None:
    """Raise ``CommError`` on every process when the processes' notes since their last collective differ (``note``):
    those to agree on (always), or with ``SHARDARRAY_CHECK_SPMD=1`` (every process sent a digest) all of them.
    Then one more allgather of the notes themselves, for the message (every process saw the same payloads).
    ``then``: the signatures' mismatch (``compare``), which the host arguments probably caused: appended."""
    crcs = [p[2][0] if len(p) > 2 else 0 for p in every]
    digests = [p[2][1] if len(p) > 2 else None for p in every]
    if None not in digests and len(set(digests)) > 1:
        lists = world.allgather(noted)
    elif len(set(crcs)) > 1:
        lists = world.allgather(agreed)
    else:
        return
    first = every[0][0]  # (process 0's signature: one message on every process)
    text = notes_mismatch(lists, f"before collective {_describe(first)} (process 0's)")
    raise CommError(text if then is None else f"{text}. Then: {then}") from then


def _allgather(world: Any, payload: Any, sig: tuple) -> list[Any]:
    """``world.allgather(payload)``; ``CommError`` when what came back is no list of payloads (a process out of step
    sent the bytes of another collective of ``COMM_WORLD``, which do not unpickle, or not into as much memory)."""
    try:
        return cast("list[Any]", world.allgather(payload))
    except Exception as e:
        raise CommError(
            f"SPMD mismatch: collective {_describe(sig)} received something else than the other processes' check "
            f"({type(e).__name__}: {e!s:.200}): a process is out of step, in another collective of COMM_WORLD (one "
            f"of shardarray's, or the program's own). Every process must run the same ops in the same order; look "
            f"for an argument that differs between processes or an error that only some of them raised and caught"
        ) from e


def _is_payload(item: Any) -> bool:
    """Whether ``item`` is what ``enter`` sends: ``(signature, None or an error_note, (crc of the notes to agree on,
    digest of the notes or None))`` (the last may be absent)."""
    if not (isinstance(item, tuple) and len(item) in (2, 3) and isinstance(item[0], tuple) and len(item[0]) == 9):
        return False
    if len(item) == 3 and not (isinstance(item[2], tuple) and len(item[2]) == 2 and isinstance(item[2][0], int)):
        return False
    note = item[1]
    return note is None or (isinstance(note, tuple) and len(note) == 2 and all(isinstance(t, str) for t in note))


def check_payloads(every: Sequence[Any], sig: tuple) -> None:
    """Raise ``CommError`` on every process when some process sent something other than a check's payload.

    That process ran a collective of its own on ``COMM_WORLD`` (the program's, not shardarray's) where the others
    ran the check of ``sig``: the processes are out of step, e.g. after an error caught on some of them only.
    """
    foreign = [r for r, item in enumerate(every) if not _is_payload(item)]
    if foreign:
        raise CommError(
            f"SPMD mismatch: collective {_describe(sig)} met something else on process(es) {foreign} (a "
            f"collective of the program's own on COMM_WORLD, of {type(every[foreign[0]]).__name__}): the processes "
            f"are out of step, e.g. after an error that only some of them raised and caught. Every process must run "
            f"the same ops in the same order; let an error end the job (uncaught) or raise it on every process"
        )


def compare(sigs: Sequence[tuple], *, order_only: bool = False) -> None:
    """Raise ``CommError`` (on every process alike) when the processes' collective signatures disagree.

    ``order_only``: compare only the collectives' numbers, ops and axes (``enter(order_only=True)``); the message
    still shows every process's whole signature."""

    def key(sig: tuple, token: bool = True) -> tuple:
        seq, op, axes, dtype, shape, _group, dim, whole, extra = sig
        if order_only:
            return seq, op, axes
        tok = extra[0] if token and extra is not None else None
        return seq, op, axes, dtype, None if shape is None else len(shape), dim, whole, tok

    if order_only:
        if len({key(s) for s in sigs}) > 1:
            raise CommError(
                f"SPMD mismatch in {sigs[0][1]} over axes {sigs[0][2]} (process 0's collective #{sigs[0][0]}, "
                f"checked over the job): the processes enter different collectives: {_by_process(sigs)}. Every "
                f"process must run the same ops in the same order on arrays of the same global sizes, dtypes and "
                f"layouts; look for an argument that differs between processes"
            )
        return
    problem = ""
    if len({key(s, token=False) for s in sigs}) > 1:
        problem = "the op, axes, dtype or global shape"
    elif len({key(s) for s in sigs}) > 1:
        problem = "the layout (how the array is split into blocks)"
    else:
        for sig in sigs:
            group, dim = sig[5], sig[6]
            if group is None or sig[4] is None or sig[1] == "broadcast":
                continue
            shapes = {tuple(n for i, n in enumerate(sigs[r][4]) if i != dim) for r in group if r < len(sigs)}
            if len(shapes) > 1:
                problem = f"the block shapes within group {tuple(group)}"
                break
    if not problem:
        return
    raise CommError(
        f"SPMD mismatch: the processes disagree on {problem} of a collective: {_by_process(sigs)}. Every process "
        f"must run the same ops in the same order on arrays of the same global sizes, dtypes and layouts (build "
        f"them from the same data or seed on every process)"
    )


def _by_process(sigs: Sequence[tuple]) -> str:
    """``"processes 0, 2: <signature>; process 1: <signature>"``: the processes grouped by signature."""
    by_sig: dict[str, list[int]] = {}
    for rank, sig in enumerate(sigs):
        by_sig.setdefault(_describe(sig), []).append(rank)
    return "; ".join(f"process{'es' if len(r) > 1 else ''} {', '.join(map(str, r))}: {d}" for d, r in by_sig.items())
