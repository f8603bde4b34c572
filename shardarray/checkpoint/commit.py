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
import os
import re
import shutil
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


def clean_leftovers(path: Path) -> None:
    """Remove temporary directories of interrupted saves of ``path``; restore an old copy if ``path`` is gone."""
    olds = old_copies(path)
    if olds and not path.exists():
        os.rename(olds.pop(), path)
    for p in [*path.parent.glob(f".{path.name}.tmp-*"), *olds]:
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
    """Make the finished directory ``tmp`` the checkpoint at ``path`` in one atomic step (see the module doc)."""
    fsync_dir(tmp)
    if path.exists():
        if _exchange(tmp, path):
            fsync_dir(path.parent)
            shutil.rmtree(tmp, ignore_errors=True)
            return
        old = path.parent / f".{path.name}.old-{token}"
        os.rename(path, old)
        os.rename(tmp, path)
        fsync_dir(path.parent)
        shutil.rmtree(old, ignore_errors=True)
        return
    os.rename(tmp, path)
    fsync_dir(path.parent)


def run_entries(run: Path) -> list[Path]:
    """The committed checkpoints ``ckpt-<n>`` of a run directory, oldest first."""
    if not run.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in run.iterdir()
             if (m := re.fullmatch(rf"{RUN_PREFIX}(\d+)", p.name)) and (p / "manifest.json").is_file()]
    return [p for _, p in sorted(found)]


def next_in_run(run: Path) -> Path:
    """The path of the next checkpoint of a run directory (``ckpt-00000001`` after none)."""
    nums = [int(m.group(1)) for p in (run.iterdir() if run.is_dir() else ())
            if (m := re.fullmatch(rf"(?:\.)?{RUN_PREFIX}(\d+)(?:\..*)?", p.name))]
    return run / f"{RUN_PREFIX}{max(nums, default=0) + 1:08d}"


def prune(run: Path, keep: int) -> None:
    """Remove all but the newest ``keep`` checkpoints of a run directory (oldest first, each by one rename)."""
    for p in run_entries(run)[:-keep]:
        doomed = p.parent / f".{p.name}.old-prune"
        os.rename(p, doomed)
        shutil.rmtree(doomed, ignore_errors=True)
