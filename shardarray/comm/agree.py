"""The signature check: processes compare a collective's op, axes, dtype, block shapes and layout, and errors.

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

A check may also carry this process's own error (``enter(..., failure=e)``):
an argument that only one process finds wrong (``from_local``'s block shape)
then raises the same error on every process instead of leaving the others
waiting in their next collective.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from .. import errors as _errors
from ..errors import ArgumentError, CommError, ShardArrayError
from .header import exchange_header
from .job import _allgather, _describe, _State, count, settle
from .notes import _take_notes, notes_mismatch, take_agreed
from .watchdog import leave


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
        gone = count(sig)
        if not _State.job:  # (a job of several processes: one process alone runs its ops without the job's checks)
            _State.job = world.Get_size() > 1
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
    except BaseException as e:
        leave(seq)
        if e is not failure or check:  # (a verdict every process reaches alike: nothing to tell them)
            settle(e)
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
