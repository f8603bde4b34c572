"""Atomic commits: a save writes a temporary sibling directory and renames it onto the final path.

Protocol (process 0 does the directory work; under MPI the others wait at barriers):

1. leftovers of interrupted saves (``.<name>.tmp-*``, ``.<name>.old-*``) are removed;
2. every file is written into ``.<name>.tmp-<token>`` and fsynced, then the directory;
3. one rename makes it ``<name>``: a fresh path by ``rename``; an existing one
   (``overwrite=True``) by an atomic exchange (Linux ``renameat2(RENAME_EXCHANGE)``)
   after which the old checkpoint sits in the temporary name and is removed;
   where the exchange is unavailable, by two renames (the old one to
   ``.<name>.old-<token>`` first), and a load of a path that is missing in
   between reads that old copy;
4. the parent directory is fsynced.

A kill at any moment leaves either the old or the new complete checkpoint at
``<name>``, never a partial one.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import re
import shutil
import socket
import time
import uuid
from pathlib import Path

from .stfile import fsync_dir

RENAME_EXCHANGE = 2
AT_FDCWD = -100
RUN_PREFIX = "ckpt-"


def temp_path(path: Path, token: str) -> Path:
    return path.parent / f".{path.name}.tmp-{token}"


def old_copies(path: Path) -> list[Path]:
    """Copies an interrupted two-rename overwrite left behind (newest last)."""
    return sorted(path.parent.glob(f".{path.name}.old-*"), key=lambda p: p.stat().st_mtime)


def _host() -> str:
    """This machine's name as it appears in tokens (letters, digits and ``_``)."""
    return "".join(c if c.isalnum() else "_" for c in socket.gethostname())[:40] or "host"


def new_token() -> str:
    """A save's token: ``<host>-<pid>-<random>``, so a later save can tell a dead save's leftovers (its process
    is gone) from a live one's."""
    return f"{_host()}-{os.getpid()}-{uuid.uuid4().hex[:12]}"


def _dead(token: str) -> bool:
    """Whether the save that made ``token`` has certainly ended: it ran on this host and its process is gone
    (tokens of other hosts, or without a pid, never count as dead here)."""
    host, _, rest = token.partition("-")
    pid_text = rest.partition("-")[0]
    if host != _host() or not pid_text.isdigit():
        return False
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, another user's
        pass
    return False


def stale(p: Path) -> bool:
    """Whether the leftover ``p`` (a ``.tmp-`` or ``.old-`` folder) belongs to a save that has certainly ended:
    its process is gone (``_dead``), or it has not been touched for an hour (another host's, or an older token)."""
    token = p.name.rpartition(".tmp-")[2] if ".tmp-" in p.name else p.name.rpartition(".old-")[2]
    if _dead(token):
        return True
    try:
        return time.time() - p.stat().st_mtime > 3600
    except OSError:
        return False


def clean_leftovers(path: Path) -> None:
    """Remove temporary directories of interrupted saves of ``path``; restore an old copy if ``path`` is gone.

    Only what is provably dead is removed: the leftovers of a save whose process is gone (or, from another host,
    untouched for an hour). A save of the same path running at the same time keeps its temporary directory."""
    olds = old_copies(path)
    if olds and not path.exists():
        os.rename(olds.pop(), path)
    for p in [*path.parent.glob(f".{path.name}.tmp-*"), *olds]:
        if stale(p):
            shutil.rmtree(p, ignore_errors=True)


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two directories (Linux renameat2); False where the system cannot."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return False
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    return fn(AT_FDCWD, os.fsencode(a), AT_FDCWD, os.fsencode(b), RENAME_EXCHANGE) == 0


def commit(tmp: Path, path: Path, token: str) -> None:
    """Make the finished directory ``tmp`` the checkpoint at ``path`` in one atomic step (see the module doc).

    Another save of the same path may commit between this one's look and its rename (``path`` appears, or is
    swapped): the step is then retried against what is there now, so both saves commit, the later one last.
    """
    fsync_dir(tmp)
    for _ in range(16):
        if path.exists():
            if _exchange(tmp, path):
                fsync_dir(path.parent)
                shutil.rmtree(tmp, ignore_errors=True)
                return
            old = path.parent / f".{path.name}.old-{token}"
            try:
                os.rename(path, old)
            except FileNotFoundError:  # moved away by another save meanwhile: look again
                continue
            os.rename(tmp, path)
            fsync_dir(path.parent)
            shutil.rmtree(old, ignore_errors=True)
            return
        try:
            os.rename(tmp, path)
        except OSError as e:
            if e.errno in (errno.ENOTEMPTY, errno.EEXIST):  # another save committed first: replace it
                continue
            raise
        fsync_dir(path.parent)
        return
    raise OSError(errno.EBUSY, f"{path} kept changing while this save committed (other saves of the same path)")


def run_entries(run: Path) -> list[Path]:
    """The committed checkpoints ``ckpt-<n>`` of a run directory, oldest first."""
    if not run.is_dir():
        return []
    found = [
        (int(m.group(1)), p)
        for p in run.iterdir()
        if (m := re.fullmatch(rf"{RUN_PREFIX}(\d+)", p.name)) and (p / "manifest.json").is_file()
    ]
    return [p for _, p in sorted(found)]


def next_in_run(run: Path) -> Path:
    """The path of the next checkpoint of a run directory (``ckpt-00000001`` after none)."""
    nums = [
        int(m.group(1))
        for p in (run.iterdir() if run.is_dir() else ())
        if (m := re.fullmatch(rf"(?:\.)?{RUN_PREFIX}(\d+)(?:\..*)?", p.name))
    ]
    return run / f"{RUN_PREFIX}{max(nums, default=0) + 1:08d}"


def commit_in_run(tmp: Path, run: Path, target: Path) -> Path:
    """Make the finished directory ``tmp`` the newest checkpoint of the run directory ``run``; return its path.

    ``target`` (``next_in_run`` when the save began) is taken unless another save of the run committed that
    number or a later one meanwhile: the checkpoint then takes the number after the newest committed one, so
    the last save to commit is the one ``load(run)`` reads, and no save replaces another's checkpoint (a rename
    onto a committed, non-empty ``ckpt-<n>`` fails, and the next number is tried).
    """
    fsync_dir(tmp)
    start = int(target.name[len(RUN_PREFIX) :])
    for _ in range(64):
        newest = max((int(p.name[len(RUN_PREFIX) :]) for p in run_entries(run)), default=0)
        path = run / f"{RUN_PREFIX}{max(start, newest + 1):08d}"
        try:
            os.rename(tmp, path)
        except OSError as e:
            if e.errno in (errno.ENOTEMPTY, errno.EEXIST):  # another save committed this number first
                start = max(start, newest + 1) + 1
                continue
            raise
        fsync_dir(run)
        return path
    raise OSError(errno.EBUSY, f"{run} kept changing while this save committed (other saves of the same run)")


def prune(run: Path, keep: int) -> None:
    """Remove all but the newest ``keep`` checkpoints of a run directory (oldest first, each by one rename).

    A checkpoint another save of the run is pruning at the same time (gone before this rename) is skipped.
    """
    for p in run_entries(run)[:-keep]:
        doomed = p.parent / f".{p.name}.old-{new_token()}"  # a killed prune's leftover is provably dead later
        try:
            os.rename(p, doomed)
        except FileNotFoundError:
            continue
        shutil.rmtree(doomed, ignore_errors=True)
