"""The checks every reader and writer shares: the file exists, its shape and dtype are the ones expected, the
optional library is installed; ``together``, which makes an error on one MPI process an error on all; and the
writers' staging copy and its removal after a failed write (``staging``, ``undo_write``).

Every error is one of ``sa``'s typed errors (a ``ValueError`` or ``TypeError``)
whose message names the path, the shape and dtype found and what to do.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from ..checkpoint.paths import user_path
from ..checkpoint.procs import Procs
from ..comm import spmd
from ..dtypes import BFLOAT16, SUPPORTED, as_dtype
from ..errors import DimensionError, DTypeError, ExistingFileError, MissingFileError, ShardArrayError

T = TypeVar("T")


def require(module: str, extra: str, what: str) -> Any:
    """``import module``, or an ImportError naming the extra that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise ImportError(
            f"{what} needs the {module!r} package, which is not installed ({e}); install it with "
            f"pip install 'shardarray[{extra}]'"
        ) from e


def existing(path: str | os.PathLike[str], what: str, kind: str) -> Path:
    """``path`` as a Path, or ArgumentError when it is not a path or nothing is there."""
    p = user_path(path, what)
    if not p.exists():
        near = _near(p)
        hint = f" ({p.parent} holds {near})" if near else ""
        raise MissingFileError(f"{what}: no {kind} at {p}{hint}; check the path (write one with its write_ function)")
    return p


def _near(p: Path) -> list[str]:
    """Up to 5 names in ``p``'s folder that end like ``p`` (its suffix), for a hint; [] when it cannot be listed.

    Compared as plain text, never as a glob pattern: a suffix such as ``.**`` or ``.[`` is a file name like any
    other (``Path.glob`` raised ``ValueError`` on it)."""
    try:
        return sorted(q.name for q in p.parent.iterdir() if q.name.endswith(p.suffix))[:5]
    except OSError:  # no such folder, or one this process may not list: only a hint
        return []


def absent(path: Path, overwrite: bool, what: str) -> None:
    """ExistingFileError (an ArgumentError) when ``path`` exists and ``overwrite`` is False."""
    if path.exists() and not overwrite:
        raise ExistingFileError(f"{what}: {path} exists; pass overwrite=True to replace it, or write to a new path")


def first_missing(local: Path) -> Path | None:
    """The outermost folder of ``local``'s path that does not exist yet (``local`` itself at most), or None."""
    missing = None
    for p in (local, *local.parents):
        if p.exists():
            return missing
        missing = p
    return missing


def remove_if_empty(folder: Path) -> None:
    """Remove ``folder`` (made by a create that then failed) when it holds folders only, no file."""
    try:
        if folder.is_dir() and not any(p.is_file() or p.is_symlink() for p in folder.rglob("*")):
            shutil.rmtree(folder)
    except OSError:  # only tidying: the error being raised is the one to report
        pass


def link_target(path: Path) -> Path:
    """``path``, or the path a symbolic link there points to (followed to the end): what a write replaces, so that
    writing through a link updates the file it names (as ``np.save`` does) instead of replacing the link."""
    try:
        return path.resolve() if path.is_symlink() else path
    except OSError:  # (a folder on the way this process may not search: the write reports it)
        return path


def staging(dest: Path) -> Path:
    """The hidden sibling ``.<name>.writing`` a write fills before one rename makes it ``dest`` (the same name on
    every process: no agreement needed)."""
    return dest.parent / f".{dest.name}.writing"


def tidies(procs: Procs, error: BaseException) -> bool:
    """Whether this process removes what a write that failed with ``error`` left: process 0, once every process is
    past its writes (the error was agreed on, a ``ShardArrayError`` from ``together``, or there is only this one)."""
    return procs.rank == 0 and (procs.size == 1 or isinstance(error, ShardArrayError))


def undo_write(procs: Procs, error: BaseException, tmp: Path | None, made: Iterable[Path]) -> None:
    """After a write that failed with ``error``, the half-written copy ``tmp`` and the folders ``made`` on the way to
    the path removed (by one process: ``tidies``); what was at the path is kept."""
    if tidies(procs, error):
        if tmp is not None:
            discard(tmp)
        for folder in made:
            remove_if_empty(folder)


def discard(path: Path) -> None:
    """Remove the file or folder ``path`` (a failed write's temporary copy) if it is there; quietly, as the error
    being raised is the one to report."""
    try:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)
    except OSError:
        pass


def file_dtype(found: np.dtype, expected: Any, path: Any, shape: tuple[int, ...], what: str) -> np.dtype:
    """The dtype the shards get for a file of dtype ``found``: a native-order supported dtype, checked against
    ``expected`` (the user's ``dtype=``; its byte order is ignored, as the file's is: ``dtype='>f8'`` expects
    float64 items stored either way). Items of 2 bytes of no type (``'|V2'``) are how NumPy and h5py store
    bfloat16: read as bfloat16 when ``expected`` says so."""
    want = None if expected is None else _native(as_dtype(expected))  # (byte order is how a file stores items)
    untyped = found.kind == "V" and found.itemsize == 2 and not found.names
    if untyped and want == BFLOAT16:
        return BFLOAT16
    native = _native(found)
    if native.name not in SUPPORTED:
        hint = " (np.save, h5py and sa.io store bfloat16 this way: pass dtype='bfloat16')" if untyped else ""
        shown = found.descr if found.names else found.str  # (a record's fields, not its '|V<n>' items)
        raise DTypeError(
            f"{what}: {path} holds an array of shape {shape} and dtype {shown!r}{hint}, which shardarray does "
            f"not support; shards take one of {SUPPORTED}"
        )
    dt = as_dtype(native)
    if want is not None and want != dt:
        raise DTypeError(
            f"{what}: {path} holds an array of dtype {dt.name} (shape {shape}), not the dtype={want.name} expected; "
            f"pass dtype={dt.name!r} (or leave dtype out) and cast after reading with .astype({want.name!r})"
        )
    return dt


def _native(dt: np.dtype) -> np.dtype:
    """``dt`` in this machine's byte order (``'>f8'`` -> ``float64``)."""
    return dt.newbyteorder("=") if dt.byteorder not in ("=", "|") else dt


def file_shape(found: Sequence[int], expected: Any, path: Any, dtype: Any, what: str) -> tuple[int, ...]:
    """``found`` as a tuple, checked against ``expected`` (the user's ``shape=``)."""
    shape = tuple(int(n) for n in found)
    if expected is not None:
        want = _expected_shape(expected, shape, what)
        if want != shape:
            raise DimensionError(
                f"{what}: {path} holds an array of shape {shape} (dtype {dtype}), not the shape={want} expected; "
                f"check the path, or pass shape={shape} (or leave shape out)"
            )
    return shape


def _expected_shape(expected: Any, shape: tuple[int, ...], what: str) -> tuple[Any, ...]:
    """The user's ``shape=`` as a tuple: an int (Python or NumPy) is a 1-d shape; anything that is not a sequence
    of ints (a float, a bool, ``(4.0, 6)``) is a ``DimensionError``."""
    if isinstance(expected, (int, np.integer)) and not isinstance(expected, (bool, np.bool_)):
        return (int(expected),)
    given = (
        None
        if isinstance(expected, (bool, np.bool_, str, bytes)) or not isinstance(expected, Iterable)
        else tuple(expected)
    )
    if given is None or not all(
        isinstance(n, (int, np.integer)) and not isinstance(n, (bool, np.bool_)) for n in given
    ):  # a float size (4.0) is refused, as np.zeros((4.0,)) refuses it
        raise DimensionError(
            f"{what}: shape={expected!r} is not a shape; give a tuple of ints (the file holds shape={shape}), "
            f"or leave shape out"
        )
    return tuple(int(n) for n in given)


def file_meta(
    found_dtype: Any, found_shape: Sequence[int], dtype: Any, shape: Any, where: Any, what: str
) -> tuple[np.dtype, tuple[int, ...]]:
    """A file's (dtype the shards get, shape), each checked against the caller's ``dtype=``/``shape=``."""
    found_dtype = np.dtype(found_dtype)
    found = tuple(found_shape)
    dt = file_dtype(found_dtype, dtype, where, found, what)
    return dt, file_shape(found, shape, where, found_dtype.str, what)


def job(mesh: Any) -> Procs:
    """The processes of ``mesh``'s job: MPI's world under ``comm="mpi"``, else this process alone."""
    world = getattr(mesh.comm, "world", None) if mesh.comm_kind == "mpi" else None
    return Procs(world)


def together(procs: Procs, step: Callable[[], T], what: str) -> T:
    """``step()`` on every process of the job, then one small allgather of error messages (a barrier too): an
    error on any process raises on all of them, so no process waits forever in the next collective.

    Every process raises the error of the lowest process that failed, one class everywhere
    (``comm.spmd.raise_agreed``, the rule every agreement of the job follows): an error that is not one of
    ``sa``'s becomes an ``ArgumentError`` naming its type, so an ``except`` takes the same branch everywhere.
    With one process: ``step()`` alone.
    """
    if procs.size == 1:
        return step()
    result: Any = None
    failure: BaseException | None = None
    text = ""
    try:
        result = step()
    except Exception as e:
        failure = e
        text = json.dumps(spmd.error_note(e, procs.rank, what))
    said = procs.allgather(text)
    spmd.raise_agreed([tuple(json.loads(s)) if s else None for s in said], procs.rank, failure)
    return result
