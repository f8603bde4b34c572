"""The job's header: every collective of an MPI mesh first compares its op and the outermost op that issued it.

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

* **An op that fails on some processes only** (an argument only they find wrong: a ``split_dim`` size, a dim name, a
  dtype, ``einsum`` subscripts, ``top_k``'s ``k``): they raised before the op's collective, and the others waited in
  it (or met them at a later collective with a message about something else). When an exception leaves the
  outermost op (``as_op``) and the op's arguments hold an array (or a mesh) of an MPI mesh
  (``Communicator.job_header``), the failing process joins the job's header once more, as a collective of its own,
  with a header that says "failed: <type>: <message>, in <op>(<arguments>)" (``fail_together``), then raises its own
  error. The others meet it where they wait, in the op's first collective or their next one, and raise
  ``CommError`` naming the process, its error and the op (``peer_failed``). Every process consumed one header, so the
  counts stay in step: a program that catches the errors alike on every process goes on. Processes that all failed
  meet each other's headers and each raises its own error (one small allgather, on the error path only). Not told:
  an error an op catches inside itself (only the outermost op's boundary counts); an error a check raised on every
  process alike, or one raised inside a collective whose data may be moving with the others (``settle``: the first
  is everyone's already, the second could not reach them, which the watchdog or the uncaught error's abort ends); an
  error of an emulated mesh's op (each process may raise on its own) or of an NCCL mesh's (no header: the watchdog);
  an error raised before any op runs (every function of the positional namespace counts as an op:
  ``core.tape.boundary``; indexing and ``sa.concat`` check some arguments first): the processes then meet at the
  failing process's next collective, where the header differs. A process that fails and
  then exits, or waits to tell processes that exit, is ended by the watchdog's departure notices with a message.
"""

from __future__ import annotations

import hashlib
import inspect
import threading
import zlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

from ..errors import CommError
from .job import (
    _SHOW,
    FAILED_OP,
    _allgather,
    _describe,
    _grouped,
    _is_array,
    _mpi_if_initialized,
    _State,
    count,
    settle,
    settled,
    show,
)
from .notes import _take_notes, note_op, take_agreed
from .watchdog import leave

_MAGIC = 0x5348_4152_4441  # ("SHARDA") marks the header of a collective of shardarray's among the program's own
_MANY = 64  # items of a host list or tuple an op's digest lists one by one (a longer one: its length only)
_FAILED = -2  # the header's op code of a process that failed (``fail_together``)
_ERROR = 1000  # characters of a failing process's message its header carries (only on the error path)


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
    every op (outermost or not) is also noted (``note_op``). An exception that leaves the outermost op, given an array
    or a mesh of an MPI mesh, is told to the other processes first (``fail_together``), unless ``settle`` marked it;
    it is then raised as it is.
    """
    if _State.noting:
        note_op(name, args, kwargs, fn)
    here = _OP
    if here.current is not None:
        return run(*args, **kwargs)
    here.current = [name, fn, args, kwargs, None]
    try:
        return run(*args, **kwargs)
    except Exception as e:
        if not settled(e):  # (a check's verdict, reached by every process alike, or an error inside a collective)
            mesh = _job_mesh((*args, *kwargs.values()))
            if mesh is not None:
                fail_together(mesh.comm.world, e)
        raise
    finally:
        here.current = None


def _job_mesh(values: Any) -> Any:
    """The mesh of the first array (or mesh) among ``values`` (one level into lists and tuples) whose collectives
    compare the job's header (``Communicator.job_header``: an MPI mesh of NumPy blocks), or None."""
    for v in values:
        for w in v if isinstance(v, (list, tuple)) else (v,):
            mesh = getattr(w, "mesh", None) if _is_array(w) else w
            if getattr(getattr(mesh, "comm", None), "job_header", False) is True:
                return mesh
    return None


def fail_together(world: Any, error: BaseException) -> None:
    """Tell the other processes of the job that this process's outermost op raised ``error`` (``as_op``, when the
    error leaves it and the op's arguments involve an MPI mesh); the caller then raises ``error`` itself.

    This process enters one collective of the job (counted like any other) and joins the job's header over
    ``world`` (one small allgather) with a header that says "failed: <type>: <message>, in <op>(<arguments>)". The
    other processes meet it where they wait (in the op's first collective, or their next one: another op, or
    ``numpy()``) and raise ``CommError`` naming this process, its error and the op (``exchange_header``), so that no
    process waits for this one forever; every process consumed one header, so the collective counts stay in step
    and a program that catches the errors alike on every process goes on. Processes that all failed meet each
    other's headers and each raises its own error. Nothing is sent where a process already exited (the watchdog
    ends the job) or in a job of one process. ``error`` is marked (``settle``): no later boundary tells it again.
    """
    settle(error)
    MPI = _mpi_if_initialized()
    if MPI is None or not isinstance(world, MPI.Comm) or world.Get_size() < 2:
        return
    try:
        text = f"{type(error).__name__}: {error!s:.{_ERROR}}, in {_op_text()}"
    except Exception:  # (an argument or message that cannot be shown: the others must still be told)
        text = f"{type(error).__name__}, in {_OP.current[0] if _OP.current else 'an op'}"
    with _State.lock:
        _State.seq += 1
        sig = (_State.seq, f"{FAILED_OP} ({text})", (), "?", None, None, None, None, None)
        gone = count(sig)
        _State.before = _take_notes()  # (the others take theirs at the header they meet this one in)
    take_agreed()
    try:
        if not gone:
            _allgather(world, (_MAGIC, sig[0], _FAILED, 0, False, text), sig)
    except CommError:  # (a process out of step sent something else: this process's own error says more)
        pass
    finally:
        leave(sig[0])


def _op_text() -> str:
    """``name(parameter=value, ...)`` of the outermost op this thread runs (``as_op``), for a message."""
    cur = _OP.current
    if cur is None:  # pragma: no cover - only called inside an op
        return "an op"
    args = ", ".join(f"{k}={v}" for k, v in _host_pairs(cur[1], cur[2], cur[3], True))
    return f"{cur[0]}({args:.{2 * _SHOW}})"


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
    peers = [(r, row[5]) for r, row in enumerate(rows) if row[2] == _FAILED]
    if peers:  # (this process did not fail: ``fail_together`` sends those headers)
        take_agreed()  # (every process takes them here, as the failing ones did)
        raise settle(CommError(peer_failed(peers, sig)))
    whats = {row[2] for row in rows} - {-1}
    # (a process that failed the step a check is about sends placeholders for its op: the op's digest too is not
    # compared then, so that the check that follows tells every process that process's error: ``enter``)
    same = {(row[1], row[4]) if -1 in {r[2] for r in rows} else (row[1], row[3], row[4]) for row in rows}
    if len(whats) <= 1 and len(same) == 1:
        return [row[5] for row in rows] if payload is not None else None
    take_agreed()  # (every process raises here: the notes to agree on before it are void alike)
    cur = _OP.current
    mine_op = None if cur is None else (cur[0], _host_pairs(cur[1], cur[2], cur[3], True))
    more = f" {sig[8][1]}" if extra else ""
    short = f"{sig[1]}{f' over axes {sig[2]}' if sig[2] else ''}{more}"  # (the same on every process that agrees)
    every = world.allgather((short, _describe(sig), mine_op))
    raise CommError(ops_mismatch(every, int(rows[0][1])))


def peer_failed(failed: Sequence[tuple[int, str]], sig: tuple) -> str:
    """The message for a process whose collective ``sig`` met the headers of processes that failed (``failed``:
    ``(process, "<type>: <message>, in <op>")``, ``fail_together``)."""
    ranks = ", ".join(str(r) for r, _ in failed)
    said = "; ".join(f"process {r}: {text}" for r, text in failed)
    return (
        f"process{'es' if len(failed) > 1 else ''} {ranks} of the MPI job failed where this process did not "
        f"({said}); collective {_describe(sig)} cannot go on without {'them' if len(failed) > 1 else 'it'}. "
        f"The failing process raises its own error, every other process this CommError, at the same point of the "
        f"job (a program that catches them alike on every process can go on). Look for an argument that only "
        f"some processes find wrong: a shape, an index, an axis, a dtype or einsum subscripts computed from "
        f"mesh.process_index, drawn at random per process or read from a per-process file"
    )


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
