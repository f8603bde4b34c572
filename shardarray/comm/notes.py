"""Check mode: ops note their host arguments, and a collective compares the notes over the job.

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
"""

from __future__ import annotations

import hashlib
import inspect
import zlib
from collections.abc import Mapping, Sequence
from typing import Any, cast

from .job import _SHOW, _grouped, _mesh_of, _State, check_enabled, show

_NOTES = 32  # how many noted ops a process keeps for a message (the digest covers every one)


def noting() -> bool:
    """Whether ops note their host arguments now (``SHARDARRAY_CHECK_SPMD=1`` in a job of several processes, as
    read at this process's last collective): a caller may skip building ``note``'s arguments otherwise."""
    return _State.noting


def note_op(name: str, args: Sequence[Any], kwargs: Mapping[str, Any], fn: Any = None) -> None:
    """``note`` the host arguments of the op ``name`` called with ``args`` and ``kwargs`` (its arrays are left out:
    their collectives compare them), on the mesh of its first array; for the op mechanism, with
    ``SHARDARRAY_CHECK_SPMD=1`` (``noting``). Given the op's function ``fn``, the arguments go by its parameters'
    names (``key=0, value=5.0`` of ``x[0] = 5.0``), else by position (``arg1=0``)."""
    if not _State.noting:
        return
    mesh = _mesh_of((*args, *kwargs.values()))
    if mesh is None or getattr(mesh, "comm_kind", None) != "mpi":
        return
    pairs = [(f"arg{i}", a) for i, a in enumerate(args)] + list(kwargs.items())
    if fn is not None:
        try:
            pairs = list(inspect.signature(fn).bind_partial(*args, **kwargs).arguments.items())
        except (TypeError, ValueError):  # (arguments the op itself refuses; a builtin without a signature)
            pass
    host = [(k, v) for k, v in pairs if _mesh_of((v,)) is None]
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
