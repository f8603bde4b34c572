"""The state of an SPMD job that every check of ``comm`` shares: what this process entered, and how to show it.

Under an MPI launcher every process runs the same script and issues the same collectives in the same order (SPMD).
``_State`` holds this process's account of the job (the collectives it entered, the notes it took, the notices of
other processes' departures), read and written by the watchdog (``comm.watchdog``), the notes (``comm.notes``), the
op header (``comm.header``) and the signature check (``comm.agree``). This module holds what they all use: the state,
how a value and a collective are shown in a message (``show``, ``_describe``) and the job-wide allgather that turns a
process out of step into a ``CommError`` (``_allgather``). See ``comm.spmd`` for the overview.

Collectives are counted only when their group has more than one member
(the mesh decides that, so every process counts the same ones).
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, cast

from ..errors import CommError

_HISTORY = 64  # how many of its last collectives' signatures a process keeps (to judge others' notices)
_SHOW = 120  # characters of one op's host arguments kept for a message
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")  # an object's address in its repr (differs between processes)
#: the op of the collective a process enters to tell the others its error (``comm.header.fail_together``), as its
#: signature names it: it meets whichever collective the others enter next
FAILED_OP = "the exchange of its own error"
_SETTLED = "_shardarray_settled"  # the attribute ``settle`` sets on an error


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
    ndim = getattr(value, "ndim", None)  # (a class such as ``np.float64``: its ``ndim`` is a descriptor, and true)
    if ndim and not isinstance(value, type) and hasattr(value, "__array_interface__"):  # a NumPy array (not a scalar)
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


def _grouped(texts: Sequence[str], ranks: Sequence[int]) -> str:
    """``"processes 0, 2: a; process 1: b"``: the processes (``ranks[i]`` said ``texts[i]``) grouped by their text."""
    by: dict[str, list[int]] = {}
    for rank, text in zip(ranks, texts):
        by.setdefault(text, []).append(rank)
    return "; ".join(f"process{'es' if len(r) > 1 else ''} {', '.join(map(str, r))}: {t}" for t, r in by.items())


def count(sig: tuple) -> dict[int, int]:
    """Count collective ``sig`` (its number: ``_State.seq``, incremented by the caller) as the one this process is
    in (for the watchdog); returns the processes that already exited before it ``{process: collectives it had
    entered}``. Call holding ``_State.lock``."""
    seq = sig[0]
    _State.current = sig
    _State.history[seq] = sig
    if len(_State.history) > _HISTORY:
        for old in [k for k in _State.history if k <= seq - _HISTORY]:
            del _State.history[old]
    _State.inflight, _State.since = seq, time.monotonic()
    return {r: c for r, c in _State.departed.items() if c < seq}


def settle(error: BaseException) -> BaseException:
    """Mark ``error`` as one the other processes need not be told of when it leaves the outermost op
    (``comm.header.as_op``): a check raised it on every process alike (a mismatch, an agreed error, a process that
    already exited), or it was raised inside a collective whose data may be moving (the others could not hear of it:
    the watchdog ends such a job). Returns ``error``."""
    try:
        setattr(error, _SETTLED, True)
    except AttributeError:  # pragma: no cover - an exception class with __slots__
        pass
    return error


def settled(error: BaseException) -> bool:
    """Whether ``settle`` marked ``error``."""
    return getattr(error, _SETTLED, False) is True


def _describe(sig: tuple, number: bool = True) -> str:
    seq, op, axes, dtype, shape, _group, _dim, whole, extra = sig
    where = f" over axes {axes}" if axes else ""
    what = f" on a {dtype} block of shape {shape}" if shape is not None else f" ({dtype})" if dtype != "?" else ""
    glob = f" of a global {whole}" if whole is not None else ""
    more = f" {extra[1]}" if extra is not None else ""
    return f"{f'#{seq} ' if number else ''}{op}{where}{what}{glob}{more}"


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
