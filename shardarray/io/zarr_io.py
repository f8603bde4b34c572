"""Zarr arrays (v3, through zarr-python; the ``[zarr]`` extra): chunk-aligned reads, writes by block.

A device reads its block with one selection of the Zarr array, so zarr-python
fetches and decodes exactly the chunks that overlap the block (when the
chunks tile the layout's blocks, only the device's own chunks). ``write_zarr``
chunks the array by the blocks of ``x``'s layout unless told otherwise, so
each process writes whole chunks that no other process touches: two
processes writing parts of one chunk would each read, modify and write the
whole chunk, and one of the writes would be lost.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..array import ShardArray
from ..checkpoint import commit as _commit
from ..errors import ArgumentError, DimensionError, DTypeError, LayoutError
from ..layout import Layout
from ..mesh import AxesSpec, Mesh
from . import blocks, checks

PathOrStore = str | os.PathLike[str] | Any


def _local(path: PathOrStore, what: str) -> Path | None:
    """``path`` as a local Path when it is one (not a zarr store object or a URL); ``None`` (which zarr-python
    would take for a new in-memory store) or bytes is an ``ArgumentError``."""
    if path is None or isinstance(path, (bytes, bool, int, float)):
        raise ArgumentError(
            f"{what}: the path must be a str, a pathlib.Path or a zarr-python store; got {type(path).__name__} {path!r}"
        )
    if isinstance(path, os.PathLike) or (isinstance(path, str) and "://" not in path):
        return Path(path)
    return None


def _open(zarr: Any, path: PathOrStore, mode: str, what: str) -> Any:
    local = _local(path, what)
    if local is not None and mode == "r":
        checks.existing(local, what, "Zarr array")
    try:
        return zarr.open_array(store=local if local is not None else path, mode=mode)
    except (FileNotFoundError, zarr.errors.NodeTypeValidationError, zarr.errors.ArrayNotFoundError) as e:
        hint = ""
        try:
            group = zarr.open_group(store=local if local is not None else path, mode="r")
            hint = f"; it holds a Zarr group with arrays {sorted(group.array_keys())}: pass the array's path inside it"
        except Exception:  # only a hint
            pass
        raise ArgumentError(f"{what}: no Zarr array at {path} ({e}){hint}") from None
    except (ValueError, KeyError, TypeError, OSError) as e:  # metadata that is not JSON, or lacks a field
        raise ArgumentError(
            f"{what}: {path} is not a readable Zarr array ({type(e).__name__}: {e}); its metadata is damaged, or "
            f"it is not a Zarr store"
        ) from None


def _replaceable(zarr: Any, local: Path, what: str) -> None:
    """ArgumentError unless ``local`` may be replaced by ``overwrite=True``: nothing, an empty folder or a Zarr
    array. zarr-python's overwrite deletes every file under the path, so a folder of other files (or a file, or a
    Zarr group and its arrays) is never replaced."""
    if not local.exists():
        return
    if not local.is_dir():
        raise ArgumentError(
            f"{what}: {local} is a file, not a Zarr array; write_zarr(overwrite=True) replaces only a Zarr array: "
            f"remove the file or write to another path"
        )
    if not any(local.iterdir()):
        return
    try:
        zarr.open_array(store=local, mode="r")
    except Exception:  # whatever zarr-python raises for something that is not an array: only a probe
        raise ArgumentError(
            f"{what}: {local} holds files but no Zarr array; write_zarr(overwrite=True) replaces only a Zarr array "
            f"(zarr-python would delete everything under the path): remove the folder or write to another path"
        ) from None


def read_zarr(
    path: PathOrStore,
    mesh: Mesh | None,
    layout: Mapping[Any, AxesSpec] | Layout | None = None,
    *,
    dims: Sequence[str] | None = None,
    shape: Sequence[int] | None = None,
    dtype: Any = None,
) -> ShardArray:
    """Read a Zarr array onto ``mesh``: each device reads only the chunks that overlap its block.

    Under MPI (``comm="mpi"``) every process opens the array and reads its own
    device's block (one selection: zarr-python fetches and decodes the chunks
    that overlap it, concurrently); on an emulated mesh the process reads each
    distinct block once (replicas share it). Chunks that tile the layout's
    blocks (what ``write_zarr`` makes) are read by one device each; other
    chunkings work too, a chunk that straddles two blocks being read by both.
    Zarr v2 arrays read as well.

    Collectives: none (under MPI, one allgather of a few bytes that agrees on errors).

    Args:
        path: the array's directory, or any store zarr-python opens (a URL, a ``zarr.storage`` store).
        mesh: the mesh (None: the default mesh, ``sa.get_default_mesh()``).
        layout: ``{dim or axis number: mesh axis | (axes) | None}`` or a ``Layout``.
            None splits axis ``k`` over mesh axis ``k`` (as ``xp.zeros`` does;
            named dims the mesh's rules map follow the rules).
        dims: dim names: a named ``ShardArray``. Without them the result is a
            positional ``shardarray.array_api`` ``Array`` (dims ``dim0, dim1, ...``).
        shape: the shape expected (checked, not a reshape).
        dtype: the dtype expected (checked, not a cast).

    Raises:
        ImportError: zarr-python is not installed (``pip install 'shardarray[zarr]'``).
        ArgumentError: no Zarr array at ``path`` (a group: the message lists its arrays), damaged metadata, or a
            chunk that cannot be read or decoded.
        DimensionError: the array's shape is not ``shape``; ``dims`` of the wrong length.
        DTypeError: the array's dtype is not ``dtype``, or not one shardarray supports.

    Example:
        >>> import tempfile, os, zarr
        >>> path = os.path.join(tempfile.mkdtemp(), "x.zarr")
        >>> z = zarr.create_array(store=path, shape=(6, 4), chunks=(3, 2), dtype="float32")
        >>> z[:] = np.arange(24, dtype=np.float32).reshape(6, 4)
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.io.read_zarr(path, mesh)          # positional; device (r, c) reads chunk (r, c) only
        >>> x.layout, x.shards[3]
        ({'dim0': ('row',), 'dim1': ('col',)}, array([[14., 15.],
               [18., 19.],
               [22., 23.]], dtype=float32))
    """
    what = "sa.io.read_zarr"
    zarr = checks.require("zarr", "zarr", what)
    mesh = blocks.default(mesh, what)

    def open_checked() -> tuple[Any, np.dtype, tuple[int, ...]]:
        arr = _open(zarr, path, "r", what)
        return (arr, *checks.file_meta(arr.dtype, arr.shape, dtype, shape, path, what))

    arr, dt, found = checks.together(checks.job(mesh), open_checked, what)
    lay, positional = blocks.target(mesh, found, dims, layout, what)

    def read(bounds: blocks.Bounds) -> np.ndarray:
        return np.asarray(arr[blocks.slices(bounds)], dtype=dt)

    return blocks.build(mesh, lay, dt, positional, read, what, path)


def _chunk_dim(key: Any, x: ShardArray, chunks: Mapping[Any, Any], what: str) -> str:
    """The dim a key of a ``chunks`` dict names: a dim name, or an axis number (negative from the end), as the
    readers' layouts take them."""
    if isinstance(key, (int, np.integer)) and not isinstance(key, (bool, np.bool_)) and -x.ndim <= key < x.ndim:
        return x.dims[int(key)]
    if isinstance(key, str) and key in x.dims:
        return key
    raise DimensionError(
        f"{what}: chunks={dict(chunks)} names {[key]}, not dims of the array {x.sizes}: use its dim names or axis "
        f"numbers 0..{x.ndim - 1}"
    )


def _chunks(x: ShardArray, chunks: Any, processes: int, path: Any, what: str) -> tuple[int, ...]:
    """The chunk shape: ``chunks`` checked (ints >= 1, one per dim; a dict gives some dims and the blocks the
    rest), or the largest that tiles every block; chunks that do not tile the blocks only from one process."""
    tiled = blocks.tiling_chunks(x)
    if chunks is None:
        return tiled
    if isinstance(chunks, Mapping):
        by_dim = {_chunk_dim(k, x, chunks, what): c for k, c in chunks.items()}
        if len(by_dim) < len(chunks):
            raise DimensionError(f"{what}: chunks={dict(chunks)} names one dim twice (by name and by axis number)")
        given = tuple(by_dim.get(d, c) for d, c in zip(x.dims, tiled))
    elif isinstance(chunks, (int, np.integer)) and not isinstance(chunks, (bool, np.bool_)):
        given = (chunks,) * x.ndim
    else:
        given = tuple(chunks) if isinstance(chunks, Iterable) and not isinstance(chunks, (str, bytes)) else ()
    if len(given) != x.ndim or not all(
        isinstance(c, (int, np.integer)) and not isinstance(c, (bool, np.bool_)) and c >= 1 for c in given
    ):
        raise DimensionError(
            f"{what}: chunks={chunks!r} for the array {x.sizes}: give one integer >= 1 per dim ({x.ndim}), a dict "
            f"{{dim: size}}, or None for the blocks of the layout ({tiled})"
        )
    given = tuple(int(c) for c in given)
    bad = blocks.untiled(x, given)
    if bad is not None and processes > 1:
        k, start, c = bad
        raise LayoutError(
            f"{what}: {path}: chunks {given} do not tile the blocks of the array {x.sizes} with layout "
            f"{x.layout} on mesh {x.mesh}: a block of dim {x.dims[k]!r} starts at {start}, inside a chunk of "
            f"{c}. Under MPI each process writes its own blocks, and two processes writing parts of one chunk "
            f"each rewrite the whole chunk, so one's data is lost. Pass chunks=None (the blocks: {tiled}), chunks "
            f"that divide them, or write from one process (an emulated mesh)"
        )
    return given


def _open_for_blocks(zarr: Any, store: Any, dtype: np.dtype) -> Any:
    """The array at ``store`` opened to write blocks into, every chunk stored as written.

    Zarr skips a chunk equal to the fill value (``write_empty_chunks=False``), and for complex dtypes it compares
    with ``==``, so a chunk of ``-0.0+0j`` (equal to the fill value ``0j``) was never written and read back as
    ``0j``. Complex arrays are therefore opened with ``write_empty_chunks=True``; other dtypes keep Zarr's default
    (their chunks are compared bit for bit).
    """
    if dtype.kind != "c":
        return zarr.open_array(store=store, mode="r+")
    with zarr.config.set({"array.write_empty_chunks": True}):
        return zarr.open_array(store=store, mode="r+")


def _create(zarr: Any, store: Any, x: ShardArray, grid: tuple[int, ...], overwrite: bool, path: Any, what: str) -> None:
    """Create the Zarr array (its metadata) that ``write_zarr`` fills; a typed error for what zarr-python refuses."""
    try:
        zarr.create_array(
            store=store,
            shape=x.shape,
            chunks=grid,
            dtype=x.dtype,
            dimension_names=None if x.positional else x.dims,
            overwrite=overwrite,
        )
    except zarr.errors.ContainsArrayError:
        raise ArgumentError(
            f"{what}: an array exists at {path}; pass overwrite=True to replace it, or write to a new path"
        ) from None
    except ValueError as e:
        if "data type" in str(e):
            raise DTypeError(
                f"{what}: {path}: Zarr cannot store dtype {x.dtype.name} ({e}); cast first, e.g. "
                f"x.astype('float32'), or write .npy (sa.io.write_npy keeps bfloat16)"
            ) from None
        raise ArgumentError(
            f"{what}: zarr-python cannot create the array {x.sizes} (dtype {x.dtype.name}, chunks {grid}) at {path} "
            f"({e}); write to another path or with other chunks"
        ) from None
    except OSError as e:  # a parent that is a file; no permission
        raise ArgumentError(f"{what}: cannot create a Zarr array at {path} ({type(e).__name__}: {e})") from None


def write_zarr(
    path: PathOrStore,
    x: ShardArray,
    chunks: Sequence[int] | Mapping[str, int] | int | None = None,
    *,
    overwrite: bool = False,
) -> Any:
    """Write ``x`` as a Zarr v3 array, by block: each process writes whole chunks of the blocks it owns.

    Process 0 writes the array's metadata (named arrays record their dims as
    Zarr's ``dimension_names``), then each distinct block is written once, by
    the process of the lowest device that holds it (replicas are not written
    twice). By default the chunks are the blocks of ``x``'s layout (for a dim
    split over several mesh axes with uneven blocks, the largest size that
    tiles them), so no two processes touch one chunk. Under MPI every process
    must call ``write_zarr`` with the same path, on a shared file system.

    A local array is written into a hidden sibling folder ``.<name>.writing``
    that process 0 then makes ``path`` by one rename (an atomic exchange with
    the array it replaces, as a checkpoint's commit): a write that fails
    half-way (on any process) keeps what was at ``path`` and removes the
    partial copy. A zarr-python store or URL is written in place (with
    ``overwrite=True``, zarr-python deletes the old array first).

    Collectives: a pending sum is resolved first (an allreduce); otherwise no array data moves
    (under MPI, four allgathers of a few bytes that agree on errors and act as barriers).

    Args:
        path: the array's directory, or a zarr-python store.
        x: the array (named or positional).
        chunks: the chunk shape: one int per dim, one int for every dim, a dict
            ``{dim or axis number: size}`` (other dims: their block size), or None (the blocks).
            Under MPI they must tile the blocks.
        overwrite: replace an existing Zarr array (or fill an empty folder); anything else at ``path`` is refused.

    Returns:
        The written ``zarr.Array``.

    Raises:
        ImportError: zarr-python is not installed (``pip install 'shardarray[zarr]'``).
        LayoutError: under MPI, chunks that do not tile the blocks (the message says why).
        ArgumentError: an array exists at ``path`` and ``overwrite`` is False; with ``overwrite=True``, ``path``
            holds something other than a Zarr array or an empty folder (never deleted); ``path`` cannot be written.
        DTypeError: a dtype Zarr cannot store (bfloat16).
        BackendError: ``x`` lives on the meta backend (no values).

    Example:
        >>> import tempfile, os, zarr
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.arange(20.0).reshape(5, 4), dims=("a", "b"), mesh=mesh, layout={"a": "row", "b": "col"})
        >>> z = sa.io.write_zarr(os.path.join(tempfile.mkdtemp(), "x.zarr"), x)
        >>> z.chunks, z.metadata.dimension_names          # one chunk per block
        ((3, 2), ('a', 'b'))
        >>> z[4]
        array([16., 17., 18., 19.])
    """
    what = "sa.io.write_zarr"
    zarr = checks.require("zarr", "zarr", what)
    local = _local(path, what)
    x = blocks.writable(x, what)
    procs = checks.job(x.mesh)
    grid = _chunks(x, chunks, procs.size, path, what)
    store = local if local is not None else path
    # a local array is written into a hidden sibling folder that one rename (an atomic exchange) makes ``path``
    dest = checks.link_target(local) if local is not None else None  # (a link: the folder it points to is replaced)
    tmp = checks.staging(dest) if dest is not None else None
    into = tmp if tmp is not None else store
    made: list[Path] = []  # folders this write made on the way to ``path`` (removed again if it fails)

    def create() -> None:
        if procs.rank != 0:
            return
        if local is not None and tmp is not None:  # first what overwrite=True would not replace either, then what
            _replaceable(zarr, local, what)  # it would
            checks.absent(local, overwrite, what)
            first = checks.first_missing(tmp.parent)
            made.extend([first] if first is not None else [])
            checks.discard(tmp)  # a killed write's leftover
        _create(zarr, into, x, grid, overwrite or tmp is not None, path, what)

    def fill() -> Any:
        try:
            arr = _open_for_blocks(zarr, into, x.dtype)
            for b, host in blocks.my_blocks(x, procs.rank):
                arr[b.slices()] = host
        except OSError as e:
            raise ArgumentError(
                f"{what}: process {procs.rank} cannot write its blocks into {path} ({type(e).__name__}: {e})"
            ) from None
        return arr

    def commit() -> None:
        if procs.rank == 0 and dest is not None and tmp is not None:
            try:
                _commit.commit(tmp, dest, _commit.new_token())
            except OSError as e:
                raise ArgumentError(f"{what}: cannot rename {tmp} to {dest} ({type(e).__name__}: {e})") from None

    try:
        checks.together(procs, create, what)
        arr = checks.together(procs, fill, what)
        if local is None:
            return arr
        checks.together(procs, commit, what)
    except BaseException as e:  # what was at ``path`` is kept; the half-written copy and the folders made removed
        checks.undo_write(procs, e, tmp, made)
        raise
    return checks.together(procs, lambda: _open_for_blocks(zarr, store, x.dtype), what)


__all__ = ["read_zarr", "write_zarr"]
