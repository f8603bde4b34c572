"""``.npy`` files, memory-mapped: each device reads only its block; each process writes only its own blocks.

NumPy's format is a header and the array's bytes; a memory map of the file
(``np.lib.format.open_memmap``) lets a device copy out just its block (the
pages of its rows), and lets the processes of an MPI job write their blocks
into one file side by side: process 0 writes the header (and sizes the
file), every process then writes its distinct blocks into the map. The map
is of a temporary sibling that one rename makes the file (see ``write_npy``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from tokenize import TokenError
from typing import Any

import numpy as np
from numpy.lib.format import open_memmap

from ..array import ShardArray
from ..dtypes import BFLOAT16
from ..errors import ArgumentError, DTypeError
from ..layout import Layout
from ..mesh import AxesSpec, Mesh
from . import blocks, checks


def _open(path: Path, what: str) -> np.memmap:
    try:
        return open_memmap(path, mode="r")
    except (ValueError, OSError, EOFError, SyntaxError, TokenError) as e:  # (a damaged header: NumPy tokenizes it)
        raise ArgumentError(
            f"{what}: {path} is not a readable .npy file ({e}); read .npy files written by np.save or sa.io.write_npy"
        ) from None


def read_npy(
    path: str | os.PathLike[str],
    mesh: Mesh | None,
    layout: Mapping[Any, AxesSpec] | Layout | None = None,
    *,
    dims: Sequence[str] | None = None,
    shape: Sequence[int] | None = None,
    dtype: Any = None,
) -> ShardArray:
    """Read a ``.npy`` file onto ``mesh``: each device copies only its block out of a memory map of the file.

    Under MPI (``comm="mpi"``) every process maps the file and reads its own
    device's block; on an emulated mesh the process reads each distinct block
    once (replicas share it). No data moves between devices.

    Collectives: none (under MPI, one allgather of a few bytes that agrees on errors).

    Args:
        path: the ``.npy`` file (as written by ``np.save`` or ``write_npy``).
        mesh: the mesh (None: the default mesh, ``sa.get_default_mesh()``).
        layout: ``{dim or axis number: mesh axis | (axes) | None}`` or a ``Layout``.
            None splits axis ``k`` over mesh axis ``k`` (as ``xp.zeros`` does;
            named dims the mesh's rules map follow the rules).
        dims: dim names: a named ``ShardArray``. Without them the result is a
            positional ``shardarray.array_api`` ``Array`` (dims ``dim0, dim1, ...``).
        shape: the shape expected (checked, not a reshape).
        dtype: the dtype expected (checked, not a cast); ``"bfloat16"`` also reads
            the 2-byte void items NumPy writes for ml_dtypes' bfloat16.

    Raises:
        ArgumentError: no file at ``path``, not a ``.npy`` file, or a block that cannot be read.
        DimensionError: the file's shape is not ``shape``; ``dims`` of the wrong length.
        DTypeError: the file's dtype is not ``dtype``, or not one shardarray supports.
        LayoutError: a layout that names unknown dims or axes.

    Example:
        >>> import tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "x.npy")
        >>> np.save(path, np.arange(15.0).reshape(5, 3))
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.io.read_npy(path, mesh, {0: "row"})           # positional, rows split over "row"
        >>> x.shape, x.layout, x.shards[2].shape
        ((5, 3), {'dim0': ('row',)}, (2, 3))
        >>> y = sa.io.read_npy(path, mesh, dims=("batch", "io"))  # named; default split: batch/row, io/col
        >>> y.layout
        {'batch': ('row',), 'io': ('col',)}
    """
    what = "sa.io.read_npy"
    mesh = blocks.default(mesh, what)
    procs = checks.job(mesh)

    def open_checked() -> tuple[np.memmap, np.dtype, tuple[int, ...]]:
        p = checks.existing(path, what, ".npy file")
        mm = _open(p, what)
        return (mm, *checks.file_meta(mm.dtype, mm.shape, dtype, shape, p, what))

    mm, dt, found = checks.together(procs, open_checked, what)
    lay, positional = blocks.target(mesh, found, dims, layout, what)
    view = dt == BFLOAT16 and mm.dtype.kind == "V"

    def read(bounds: blocks.Bounds) -> np.ndarray:
        part = mm[blocks.slices(bounds)]
        return np.array(part).view(dt) if view else np.array(part, dtype=dt)  # a copy: never the map itself

    return blocks.build(mesh, lay, dt, positional, read, what, path)


def write_npy(path: str | os.PathLike[str], x: ShardArray, *, overwrite: bool = False) -> Path:
    """Write ``x`` to a ``.npy`` file: the header once, then each process writes its own blocks into a memory map.

    Each distinct block is written once, by the process of the lowest device
    that holds it (replicas are not written twice). Under MPI (``comm="mpi"``)
    process 0 writes the header and sizes the file, then every process maps it
    and writes its blocks (every process must call ``write_npy`` with the same
    path, on a shared file system). ``np.load`` reads the result; bfloat16 is
    saved as NumPy saves it (2-byte void items: ``read_npy(..., dtype="bfloat16")``).

    Collectives: a pending sum is resolved first (an allreduce); otherwise no array data moves
    (under MPI, three allgathers of a few bytes that agree on errors and act as barriers).

    The blocks go into a hidden sibling ``.<name>.writing`` that one rename then makes ``path``
    (``os.replace``, atomic): a write that fails half-way (on any process) leaves what was at ``path``
    as it was, the temporary file removed, and ``np.load`` never sees a partly written file. (NumPy's
    ``np.save`` writes in place; two jobs writing the same path at once are not supported.)

    Args:
        path: the file to write.
        x: the array (named or positional).
        overwrite: replace an existing file.

    Returns:
        The path written.

    Raises:
        ArgumentError: ``path`` exists and ``overwrite`` is False; ``path`` is a directory or cannot be written.
        BackendError: ``x`` lives on the meta backend (no values).

    Example:
        >>> import tempfile, os
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.arange(12.0).reshape(4, 3), dims=("a", "b"), mesh=mesh, layout={"a": "row"})
        >>> path = sa.io.write_npy(os.path.join(tempfile.mkdtemp(), "x.npy"), x)
        >>> np.load(path)[3]
        array([ 9., 10., 11.])
    """
    what = "sa.io.write_npy"
    x = blocks.writable(x, what)
    p = checks.user_path(path, what)
    procs = checks.job(x.mesh)
    if x.dtype.kind == "O":  # pragma: no cover - shards never hold objects
        raise DTypeError(f"{what}: {p}: object arrays cannot be written")

    dest = checks.link_target(p)  # (a symbolic link: the file it points to is replaced, as np.save writes it)
    tmp = checks.staging(dest)
    made: list[Path] = []  # folders this write made on the way to ``p`` (removed again if it fails)

    def create() -> None:
        if procs.rank == 0:
            if p.is_dir():  # first: overwrite=True would not replace it either
                raise ArgumentError(
                    f"{what}: {p} is a directory, and write_npy replaces only files; write to a file path"
                )
            checks.absent(p, overwrite, what)
            first = checks.first_missing(dest.parent)
            made.extend([first] if first is not None else [])
            try:
                dest.parent.mkdir(parents=True, exist_ok=True)
                checks.discard(tmp)  # (a killed write's leftover)
                mm = open_memmap(tmp, mode="w+", dtype=x.dtype, shape=x.shape)
                mm.flush()
                del mm
            except OSError as e:
                raise ArgumentError(f"{what}: cannot create {p} ({type(e).__name__}: {e})") from None

    def fill() -> None:
        mine = blocks.my_blocks(x, procs.rank)
        if not mine:
            return
        try:
            mm = open_memmap(tmp, mode="r+")
        except (OSError, ValueError) as e:
            raise ArgumentError(
                f"{what}: process {procs.rank} cannot open {p} (as {tmp.name}) to write its blocks "
                f"({type(e).__name__}: {e})"
            ) from None
        into = mm.view(x.dtype) if mm.dtype != x.dtype else mm  # bfloat16: the file holds 2-byte void items
        for b, host in mine:
            into[b.slices()] = host
        mm.flush()
        del mm

    def commit() -> None:
        if procs.rank == 0:
            try:
                os.replace(tmp, dest)
            except OSError as e:
                raise ArgumentError(f"{what}: cannot rename {tmp} to {dest} ({type(e).__name__}: {e})") from None

    try:
        checks.together(procs, create, what)
        checks.together(procs, fill, what)
        checks.together(procs, commit, what)
    except BaseException as e:  # nothing half-written is left, and what was at ``p`` is kept
        checks.undo_write(procs, e, tmp, made)
        raise
    return p


__all__ = ["read_npy", "write_npy"]
