"""SPMD jobs that never hang: abort hooks, departures and the hang watchdog.

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

The failure exchange of ``comm.header`` (``fail_together``) counts as a collective like any other; it meets whichever
collective the other processes enter next, so a notice of a process stuck in it never counts as a deadlock. A process
that waits there while another exits ends the job printing its own error (it could not tell the others); one that has
waited there ``SHARDARRAY_HANG_CHECK_S`` seconds prints its error once and goes on waiting.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
import threading
import time
from typing import Any, cast

from ..errors import ArgumentError
from .job import FAILED_OP, _describe, _mpi_if_initialized, _rank, _State
from .notes import _take_notes, notes_mismatch

_TAG = 31_415  # below 32767, the least MPI_TAG_UB the standard allows
_STUCK_TAG = 31_416  # the watchdogs' "stuck in collective #s" notices
_HANG_CHECK_S = 10.0  # SHARDARRAY_HANG_CHECK_S's default
_POLL_S = 0.05  # how often the watchdog looks for departure notices
_FORWARD_S = 0.2  # pause before aborting, so that the launcher forwards the last output


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
            if sig is not None and str(sig[1]).startswith(FAILED_OP):
                _still_telling(me, sig, limit)
            _judge_notices(me, size)
        _State.stop.wait(_POLL_S)


def _still_telling(me: int, sig: tuple, limit: float) -> None:
    """Say (once per error) that this process has waited ``limit`` seconds to tell the others of its error
    (``comm.header.fail_together``): they are still computing, or wait somewhere no header reaches (a collective of
    the program's own on ``COMM_WORLD``), and the error would otherwise stay unseen while they do."""
    print(
        f"shardarray: process {me} has waited {limit:g} s to tell the other processes of its error "
        f"{str(sig[1])[len(FAILED_OP) + 1 :]}; none has entered a collective of shardarray's since (still "
        f"computing, or waiting in a collective of the program's own on COMM_WORLD, which never ends)",
        file=sys.stderr,
        flush=True,
    )


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
    """Whether two processes' signatures of one numbered collective name the same call (op, axes, group), or one of
    them is a failing process's exchange of its error (``comm.header.fail_together``), which meets any collective."""
    if str(a[1]).startswith(FAILED_OP) or str(b[1]).startswith(FAILED_OP):
        return True
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
    if seq > entered and str(cast("tuple", current)[1]).startswith(FAILED_OP):  # (this process failed: its error)
        print(
            f"shardarray: process {_rank()} failed where other processes did not, and process {rank} exited after "
            f"{entered} collective(s) before it could be told; ending the MPI job. Process {_rank()}'s error: "
            f"{str(cast('tuple', current)[1])[len(FAILED_OP) + 2 : -1]}",
            file=sys.stderr,
        )
        abort_job(1)
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
    if me != 0:  # (the launcher ends the job at the first exit: process 0's message must be out by then)
        time.sleep(2 * _FORWARD_S)
    os._exit(1)
