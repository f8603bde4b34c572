"""HDF5 datasets (through h5py; the ``[hdf5]`` extra): each device reads its block as a hyperslab.

A read selects the device's block of the dataset (a hyperslab) and reads it
straight into the block's buffer (``Dataset.read_direct``): only the block's
bytes (or, for a chunked dataset, the chunks overlapping it) are read. A
write needs no MPI-enabled HDF5: process 0 creates the dataset, then the
processes take turns, each opening the file and writing its own blocks.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..array import ShardArray
from ..errors import ArgumentError, DimensionError, DTypeError, ExistingFileError, ShardArrayError
from ..layout import Layout
from ..mesh import AxesSpec, Mesh
from . import blocks, checks


@contextlib.contextmanager
def _damaged(path: Path, what: str, doing: str) -> Iterator[None]:
    """An ``ArgumentError`` for what h5py raises on a damaged file (a ``KeyError`` or ``RuntimeError`` from HDF5's
    checks of its structures, an ``OSError``); ``sa``'s own errors pass through."""
    try:
        yield
    except ShardArrayError:
        raise
    except (KeyError, RuntimeError, OSError, ValueError, TypeError) as e:
        raise ArgumentError(
            f"{what}: {doing} of {path} failed ({type(e).__name__}: {e}); the file is damaged or not HDF5: restore "
            f"it, or write it again"
        ) from None


def _datasets(h5py: Any, f: Any) -> list[str]:
    names: list[str] = []
    f.visititems(lambda name, obj: names.append(name) if isinstance(obj, h5py.Dataset) else None)
    return names


def _name(dataset: Any, what: str, optional: bool = False) -> None:
    """ArgumentError unless ``dataset`` is a dataset path (a non-empty string; None where ``optional``)."""
    if dataset is None and optional:
        return
    if not isinstance(dataset, str) or not dataset.strip("/"):
        raise ArgumentError(
            f"{what}: dataset={dataset!r} is not a dataset path; pass its name in the file as a string, e.g. "
            f"dataset='data' or dataset='group/x'"
        )


def _chunks(chunks: Any, shape: tuple[int, ...], what: str) -> tuple[int, ...] | None:
    """``chunks`` checked: None, or one int >= 1 per dim (DimensionError otherwise)."""
    if chunks is None:
        return None
    given = tuple(chunks) if isinstance(chunks, (tuple, list)) else None
    if (
        given is None
        or len(given) != len(shape)
        or not all(isinstance(c, (int, np.integer)) and not isinstance(c, bool) and c >= 1 for c in given)
    ):
        raise DimensionError(
            f"{what}: chunks={chunks!r} for an array of shape {shape}: give one integer >= 1 per dim "
            f"({len(shape)}), or None for a contiguous dataset"
        )
    return tuple(int(c) for c in given)


def _dataset(h5py: Any, f: Any, dataset: str | None, path: Path, what: str) -> Any:
    if dataset is None:
        names = _datasets(h5py, f)
        if len(names) != 1:
            raise ArgumentError(
                f"{what}: {path} holds {len(names)} datasets {names[:10]}; pass dataset=<name> to pick one"
            )
        dataset = names[0]
    obj = f.get(dataset)
    if not isinstance(obj, h5py.Dataset):
        kind = "nothing" if obj is None else "a group"
        raise ArgumentError(
            f"{what}: {path} has {kind} at {dataset!r}; its datasets are {_datasets(h5py, f)[:10]}: pass one as "
            f"dataset="
        )
    return obj


def _replaceable(h5py: Any, f: Any, dataset: str, path: Path, what: str) -> None:
    """ArgumentError unless the object at ``f[dataset]`` is a dataset, which ``overwrite=True`` may replace: a
    group (and every dataset under it) is never deleted to make room for one array."""
    obj = f.get(dataset)
    if not isinstance(obj, h5py.Dataset):
        inside = sorted(_datasets(h5py, obj)) if isinstance(obj, h5py.Group) else []
        raise ArgumentError(
            f"{what}: {path} holds a group at {dataset!r} (datasets {inside[:10]}), not a dataset; write_hdf5 "
            f"replaces only a dataset (overwrite=True would delete the whole group): pass another dataset=, e.g. "
            f"{dataset.rstrip('/') + '/data'!r}"
        )


def _discard(h5py: Any, p: Path, dataset: str, made: list[Path], created: list[bool]) -> None:
    """Remove what a failed ``write_hdf5`` left: the file (and folders) when it made it, else the dataset it
    created (partly written: zeros where blocks are missing), so that a reader finds no dataset rather than wrong
    values."""
    try:
        if made and made[0] == p:
            p.unlink(missing_ok=True)
            for folder in made[1:]:
                checks.remove_if_empty(folder)
        elif created:
            with h5py.File(p, "r+") as f:
                if dataset in f:
                    del f[dataset]
    except (OSError, KeyError, RuntimeError, ValueError):  # only tidying: the error being raised is the one to report
        pass


def read_hdf5(
    path: str | os.PathLike[str],
    mesh: Mesh | None,
    layout: Mapping[Any, AxesSpec] | Layout | None = None,
    *,
    dataset: str | None = None,
    dims: Sequence[str] | None = None,
    shape: Sequence[int] | None = None,
    dtype: Any = None,
) -> ShardArray:
    """Read an HDF5 dataset onto ``mesh``: each device reads its block as one hyperslab.

    Under MPI (``comm="mpi"``) every process opens the file read-only and
    reads its own device's block (no MPI-enabled HDF5 needed); on an emulated
    mesh the process reads each distinct block once (replicas share it).

    Collectives: none (under MPI, one allgather of a few bytes that agrees on errors).

    Args:
        path: the HDF5 file.
        mesh: the mesh (None: the default mesh, ``sa.get_default_mesh()``).
        layout: ``{dim or axis number: mesh axis | (axes) | None}`` or a ``Layout``.
            None splits axis ``k`` over mesh axis ``k`` (as ``xp.zeros`` does;
            named dims the mesh's rules map follow the rules).
        dataset: the dataset's path in the file (None: the file's only dataset).
        dims: dim names: a named ``ShardArray``. Without them the result is a
            positional ``shardarray.array_api`` ``Array`` (dims ``dim0, dim1, ...``).
        shape: the shape expected (checked, not a reshape).
        dtype: the dtype expected (checked, not a cast); ``"bfloat16"`` also reads
            the 2-byte opaque items h5py (and ``write_hdf5``) store for bfloat16.

    Raises:
        ImportError: h5py is not installed (``pip install 'shardarray[hdf5]'``).
        ArgumentError: no file at ``path``, not an HDF5 file, no such dataset (the message lists them), a
            dataset that holds no array (a null dataspace), a block that cannot be read (a damaged chunk).
        DimensionError: the dataset's shape is not ``shape``; ``dims`` of the wrong length.
        DTypeError: the dataset's dtype is not ``dtype``, or not one shardarray supports.

    Example:
        >>> import tempfile, os, h5py
        >>> path = os.path.join(tempfile.mkdtemp(), "x.h5")
        >>> with h5py.File(path, "w") as f:
        ...     _ = f.create_dataset("x", data=np.arange(10.0))
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.io.read_hdf5(path, mesh, dims=("batch",))     # batch split over row; col holds replicas
        >>> x.layout, x.shards[2]
        ({'batch': ('row',)}, array([5., 6., 7., 8., 9.]))
    """
    what = "sa.io.read_hdf5"
    h5py = checks.require("h5py", "hdf5", what)
    mesh = blocks.default(mesh, what)

    def open_checked() -> tuple[Path, np.dtype, tuple[int, ...]]:
        _name(dataset, what, optional=True)
        p = checks.existing(path, what, "HDF5 file")
        try:
            f = h5py.File(p, "r")
        except OSError as e:
            raise ArgumentError(f"{what}: {p} is not a readable HDF5 file ({e})") from None
        with _damaged(p, what, "reading its metadata"), f:  # (closing a damaged file can fail too)
            ds = _dataset(h5py, f, dataset, p, what)
            if ds.shape is None:
                raise ArgumentError(
                    f"{what}: {p}[{ds.name}] holds no array (an HDF5 null dataspace, h5py.Empty, dtype {ds.dtype}); "
                    f"read a dataset that holds an array"
                )
            return (p, *checks.file_meta(ds.dtype, ds.shape, dtype, shape, f"{p}[{ds.name}]", what))

    p, dt, found = checks.together(checks.job(mesh), open_checked, what)
    lay, positional = blocks.target(mesh, found, dims, layout, what)
    # the file opened once, at the first block this process reads, and closed after the last
    with _damaged(p, what, "reading the blocks"), contextlib.ExitStack() as stack:
        opened: list[Any] = []

        def read(bounds: blocks.Bounds) -> np.ndarray:
            if not opened:
                opened.append(_dataset(h5py, stack.enter_context(h5py.File(p, "r")), dataset, p, what))
            out = np.empty(blocks.shape_of(bounds), dtype=dt)
            if out.size:
                opened[0].read_direct(out, blocks.slices(bounds) if out.ndim else None)
            return out

        return blocks.build(mesh, lay, dt, positional, read, what, f"{p}[{dataset}]" if dataset else p)


def write_hdf5(
    path: str | os.PathLike[str],
    x: ShardArray,
    dataset: str = "data",
    *,
    chunks: Sequence[int] | None = None,
    overwrite: bool = False,
) -> Path:
    """Write ``x`` as a dataset of an HDF5 file, each process writing its own blocks (in turn).

    Process 0 creates the file (or opens an existing one) and the dataset;
    then the processes take turns in rank order, each opening the file and
    writing the distinct blocks it owns (each written once, by the process of
    the lowest device that holds it). Taking turns needs no MPI-enabled HDF5.
    Under MPI every process must call ``write_hdf5`` with the same path, on a
    shared file system. bfloat16 is stored as h5py stores it, 2-byte opaque
    items (``read_hdf5(..., dtype="bfloat16")`` reads them).

    Collectives: a pending sum is resolved first (an allreduce); otherwise no array data moves
    (under MPI, one allgather of a few bytes per process's turn, which orders the turns).

    An existing dataset is replaced in place, as h5py's ``del f[name]`` and ``create_dataset`` do: HDF5
    reuses the space it frees only while the file stays open, so a copy written first and renamed would
    grow the file by the dataset's size on every overwrite. A write that fails half-way (on any process)
    removes the dataset it created (partly written: a reader finds no dataset, never zeros), or the
    file when the write created it; other datasets of the file are kept. (``write_npy`` and
    ``write_zarr`` keep the old array instead: they write a copy and rename it.)

    Args:
        path: the HDF5 file (created if missing; other datasets in it are kept).
        x: the array (named or positional).
        dataset: the dataset's path in the file.
        chunks: HDF5's chunk shape (None: a contiguous dataset).
        overwrite: replace an existing dataset of that name.

    Returns:
        The path written.

    Raises:
        ImportError: h5py is not installed (``pip install 'shardarray[hdf5]'``).
        ArgumentError: the dataset exists and ``overwrite`` is False; ``path`` is not an HDF5 file (or cannot
            be created); ``dataset`` is not a name; chunks HDF5 refuses (larger than the array).
        DimensionError: ``chunks`` that are not one integer >= 1 per dim.
        BackendError: ``x`` lives on the meta backend (no values).

    Example:
        >>> import tempfile, os, h5py
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.arange(12.0).reshape(4, 3), dims=("a", "b"), mesh=mesh, layout={"a": "row"})
        >>> path = sa.io.write_hdf5(os.path.join(tempfile.mkdtemp(), "x.h5"), x, "x")
        >>> with h5py.File(path, "r") as f:
        ...     f["x"][3]
        array([ 9., 10., 11.])
    """
    what = "sa.io.write_hdf5"
    h5py = checks.require("h5py", "hdf5", what)
    x = blocks.writable(x, what)
    _name(dataset, what)
    grid = _chunks(chunks, x.shape, what)
    p = checks.user_path(path, what)
    procs = checks.job(x.mesh)

    made: list[Path] = []  # the file and folders this write made (removed again if the write fails)
    created: list[bool] = []  # whether the dataset was created (removed again if the write fails)

    def create() -> None:
        if procs.rank != 0:
            return
        first = checks.first_missing(p.parent)
        made.extend([first] if first is not None else [])
        try:
            p.parent.mkdir(parents=True, exist_ok=True)
            if not p.exists():
                made.insert(0, p)
            f = h5py.File(p, "a")
        except OSError as e:
            raise ArgumentError(f"{what}: cannot open {p} as an HDF5 file to add dataset {dataset!r} ({e})") from None
        with _damaged(p, what, f"adding dataset {dataset!r}"), f:
            if dataset in f:
                _replaceable(h5py, f, dataset, p, what)
                if not overwrite:
                    raise ExistingFileError(
                        f"{what}: {p} already holds {dataset!r}; pass overwrite=True to replace it, or another dataset="
                    )
                old = True
            else:
                old = False
            try:
                h5py.h5t.py_create(x.dtype, logical=True)
            except TypeError as e:
                raise DTypeError(
                    f"{what}: {p}: HDF5 cannot store dtype {x.dtype.name} ({e}); cast first, e.g. x.astype('float32'), "
                    f"or write .npy (sa.io.write_npy keeps bfloat16)"
                ) from None
            if old:  # replaced in place, as h5py's del + create: the space it frees is reused by the new one (a
                del f[dataset]  # copy written first and renamed would grow the file by the dataset on every overwrite)
            try:
                f.create_dataset(dataset, shape=x.shape, dtype=x.dtype, chunks=grid)
                created.append(True)
            except (TypeError, ValueError, OSError) as e:  # a chunk larger than the array; a dataset on the path
                raise ArgumentError(
                    f"{what}: {p}: cannot create dataset {dataset!r} of shape {x.shape} with chunks={chunks!r} ({e})"
                ) from None

    def turn(rank: int) -> None:
        if procs.rank != rank:
            return
        mine = blocks.my_blocks(x, rank)
        if not mine:
            return
        try:
            f = h5py.File(p, "r+")
        except OSError as e:
            raise ArgumentError(f"{what}: process {rank} cannot open {p} to write its blocks ({e})") from None
        with _damaged(p, what, f"process {rank} writing its blocks"), f:
            ds = f[dataset]
            for b, host in mine:
                ds.write_direct(np.ascontiguousarray(host), dest_sel=b.slices() if host.ndim else None)

    try:
        checks.together(procs, create, what)
        for rank in range(procs.size):
            checks.together(procs, lambda r=rank: turn(r), what)  # type: ignore[misc]
    except BaseException as e:  # the half-written dataset (or the file, when this write made it) is removed
        if checks.tidies(procs, e):
            _discard(h5py, p, dataset, made, created)
        raise
    return p


__all__ = ["read_hdf5", "write_hdf5"]
