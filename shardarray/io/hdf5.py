"""HDF5 datasets (through h5py; the ``[hdf5]`` extra): each device reads its block as a hyperslab.

A read selects the device's block of the dataset (a hyperslab) and reads it
straight into the block's buffer (``Dataset.read_direct``): only the block's
bytes (or, for a chunked dataset, the chunks overlapping it) are read. A
write needs no MPI-enabled HDF5: process 0 creates the dataset, then the
processes take turns, each opening the file and writing its own blocks.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..array import ShardArray
from ..errors import ArgumentError, DTypeError, ExistingFileError
from ..layout import Layout
from ..mesh import AxesSpec, Mesh
from . import blocks, checks


def _datasets(h5py: Any, f: Any) -> list[str]:
    names: list[str] = []
    f.visititems(lambda name, obj: names.append(name) if isinstance(obj, h5py.Dataset) else None)
    return names


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
        ArgumentError: no file at ``path``, not an HDF5 file, no such dataset (the message lists them).
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
        p = checks.existing(path, what, "HDF5 file")
        try:
            f = h5py.File(p, "r")
        except OSError as e:
            raise ArgumentError(f"{what}: {p} is not a readable HDF5 file ({e})") from None
        with f:
            ds = _dataset(h5py, f, dataset, p, what)
            return (p, *checks.file_meta(ds.dtype, ds.shape, dtype, shape, f"{p}[{ds.name}]", what))

    p, dt, found = checks.together(checks.job(mesh), open_checked, what)
    lay, positional = blocks.target(mesh, found, dims, layout, what)
    boxes = blocks.local_boxes(mesh, lay) if mesh.backend.has_data else []
    host: dict[blocks.Bounds, np.ndarray] = {}
    with h5py.File(p, "r") as f:  # the boxes this process reads, with the file open once
        ds = _dataset(h5py, f, dataset, p, what)
        for bounds in boxes:
            if bounds in host:  # (a per-device backend lists every replica)
                continue
            out = np.empty(blocks.shape_of(bounds), dtype=dt)
            if out.size:
                ds.read_direct(out, blocks.slices(bounds) if out.ndim else None)
            host[bounds] = out
    return blocks.build(mesh, lay, dt, positional, host.__getitem__, what)


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
        ArgumentError: the dataset exists and ``overwrite`` is False; ``path`` is not an HDF5 file.
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
    p = Path(path)
    procs = checks.job(x.mesh)

    def create() -> None:
        if procs.rank != 0:
            return
        p.parent.mkdir(parents=True, exist_ok=True)
        try:
            f = h5py.File(p, "a")
        except OSError as e:
            raise ArgumentError(f"{what}: cannot open {p} as an HDF5 file to add dataset {dataset!r} ({e})") from None
        with f:
            if dataset in f:
                if not overwrite:
                    raise ExistingFileError(
                        f"{what}: {p} already holds {dataset!r}; pass overwrite=True to replace it, or another dataset="
                    )
                del f[dataset]
            try:
                f.create_dataset(
                    dataset, shape=x.shape, dtype=x.dtype, chunks=None if chunks is None else tuple(chunks)
                )
            except TypeError as e:
                raise DTypeError(
                    f"{what}: {p}: HDF5 cannot store dtype {x.dtype.name} ({e}); cast first, e.g. x.astype('float32'), "
                    f"or write .npy (sa.io.write_npy keeps bfloat16)"
                ) from None
            except ValueError as e:
                raise ArgumentError(
                    f"{what}: {p}: cannot create dataset {dataset!r} of shape {x.shape} with chunks={chunks!r} ({e})"
                ) from None

    def turn(rank: int) -> None:
        if procs.rank != rank:
            return
        mine = blocks.my_blocks(x, rank)
        if not mine:
            return
        with h5py.File(p, "r+") as f:
            ds = f[dataset]
            for b, host in mine:
                ds.write_direct(np.ascontiguousarray(host), dest_sel=b.slices() if host.ndim else None)

    checks.together(procs, create, what)
    for rank in range(procs.size):
        checks.together(procs, lambda r=rank: turn(r), what)  # type: ignore[misc]
    return p


__all__ = ["read_hdf5", "write_hdf5"]
