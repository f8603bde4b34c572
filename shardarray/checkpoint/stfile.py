"""Writing safetensors files block by block, and the dtype names the format uses.

The safetensors format is an 8-byte little-endian header length, a JSON header
``{key: {"dtype", "shape", "data_offsets"}, "__metadata__": {str: str}}``
and the raw C-order little-endian bytes. The format names no complex dtype
that every reader knows (``C64`` came in safetensors 0.7, and there is no
``C128``), so a complex64 (complex128) block is stored as its float32
(float64) pairs: the same bytes, with a trailing axis of 2 holding the real
and imaginary parts, as ``torch.view_as_real`` gives (``as_stored``;
``from_stored`` undoes it). The checkpoint's manifest keeps the complex dtype. ``safetensors.numpy.save_file``
needs every tensor as one ``bytes`` object first (a copy of the whole file in
memory); ``write_file`` streams each block from its own buffer instead, so a
save needs no memory beyond the arrays themselves. The files are read with the
``safetensors`` package (``safe_open``, ``load_file``).
"""

from __future__ import annotations

import hashlib
import json
import os
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from ..dtypes import as_dtype
from ..errors import CheckpointError

if TYPE_CHECKING:
    from typing_extensions import Buffer  # NumPy's stubs give ndarray ``__buffer__`` only from Python 3.12

ST_DTYPES = {
    "bool": "BOOL",
    "uint8": "U8",
    "int8": "I8",
    "uint16": "U16",
    "int16": "I16",
    "uint32": "U32",
    "int32": "I32",
    "uint64": "U64",
    "int64": "I64",
    "float16": "F16",
    "bfloat16": "BF16",
    "float32": "F32",
    "float64": "F64",
}
FROM_ST = {v: k for k, v in ST_DTYPES.items()}
#: complex dtypes a checkpoint holds, stored as pairs of this real dtype (see the module doc)
COMPLEX_PAIRS = {"complex64": "float32", "complex128": "float64"}
#: safetensors dtypes read but never written: ``C64`` (complex64, safetensors >= 0.7; ``safetensors.torch`` writes a
#: complex64 tensor so), read from plain files of weights
READ_ONLY_ST = {"C64": "complex64"}
CHUNK = 64 << 20  # bytes hashed and written per call (bounded temporaries for large blocks)
PIECE = 2 << 20  # bytes per read or write call; a piece is hashed right after its read (still in cache)


def st_dtype(dtype: np.dtype, what: str) -> str:
    """The safetensors name of ``dtype``; CheckpointError for dtypes the format has no name for."""
    name = np.dtype(dtype).name
    if name not in ST_DTYPES:
        raise CheckpointError(
            f"{what} has dtype {name}, which safetensors cannot store; save x.astype(...) in one of {sorted(ST_DTYPES)}"
        )
    return ST_DTYPES[name]


def check_storable(dtype: np.dtype, what: str) -> None:
    """CheckpointError unless a checkpoint can hold ``dtype``: a safetensors dtype, or complex64/complex128 (as
    float pairs)."""
    if np.dtype(dtype).name not in COMPLEX_PAIRS:
        st_dtype(dtype, what)


def np_dtype(st: str) -> np.dtype | None:
    """The dtype of the safetensors dtype name ``st`` (``READ_ONLY_ST`` too); None for a name shardarray does not
    read."""
    name = FROM_ST.get(st, READ_ONLY_ST.get(st))
    return None if name is None else as_dtype(name)


def stored_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype a block of ``dtype`` is stored in: the real dtype of a complex one's pairs, else ``dtype``."""
    name = np.dtype(dtype).name
    return as_dtype(COMPLEX_PAIRS[name]) if name in COMPLEX_PAIRS else np.dtype(dtype)


def stored_shape(shape: Sequence[int], dtype: np.dtype) -> list[int]:
    """The shape a block of ``shape`` and ``dtype`` is stored with: a trailing 2 for a complex one's pairs."""
    return [*shape, 2] if np.dtype(dtype).name in COMPLEX_PAIRS else list(shape)


def as_stored(a: np.ndarray) -> np.ndarray:
    """``a`` as stored: a complex block as its real pairs (``torch.view_as_real``: a trailing axis of 2, the same
    bytes), any other as it is."""
    if a.dtype.kind != "c":
        return a
    shape = a.shape  # (before ascontiguousarray, which makes a 0-d array 1-d)
    return np.ascontiguousarray(a).reshape(-1).view(stored_dtype(a.dtype)).reshape((*shape, 2))


def from_stored(a: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """A block of ``dtype`` from the stored array ``a`` (a complex block from its real pairs, with no copy where
    ``a`` is contiguous)."""
    if np.dtype(dtype).kind != "c" or a.dtype.kind == "c":
        return a
    shape = a.shape[:-1]
    return np.ascontiguousarray(a).reshape(-1).view(np.dtype(dtype)).reshape(shape)


def _bytes(a: np.ndarray) -> memoryview:
    a = np.ascontiguousarray(a)
    if a.dtype.byteorder == ">":
        a = a.astype(a.dtype.newbyteorder("<"))
    return memoryview(cast("Buffer", a.reshape(-1).view(np.uint8)))


GRID = 256  # a gridsum chunk is GRID x GRID little-endian uint64 words (512 KiB: stays in cache while hashed)
GRID_BYTES = GRID * GRID * 8
FLUSH = 16  # chunks whose sums are hashed together (64 KiB of sums)
ALGORITHMS = ("gridsum", "crc32")  # what checksums a manifest may name (per block: "<algorithm>:<hex>")


class GridSum:
    """The ``gridsum`` checksum: wrapping 64-bit row and column sums of 512 KiB grids, hashed.

    The bytes are cut into chunks of 256 x 256 little-endian uint64 words
    (the last one zero-padded); for each chunk the 256 row sums and 256
    column sums (mod 2**64, NumPy's vectorised adds on cache-sized chunks:
    ~10 GB/s per core, 3x zlib's CRC-32, needing nothing beyond NumPy) go
    into a BLAKE2b stream (1.6% of the bytes), which ends with the total
    length. Any change confined to at most 3 words of a
    chunk (any corrupted byte, bit flip or swapped pair of words) changes a
    row or column sum and so the digest, deterministically; a truncation
    changes the length; other accidents (torn pages, misplaced chunks) pass
    with probability about 2**-64. Like CRC-32, it is no defence against
    deliberate tampering.

    ``update`` takes the bytes in pieces of any size, in order.
    """

    name = "gridsum"

    def __init__(self) -> None:
        self._hash = hashlib.blake2b(digest_size=8)
        self._sums = np.empty((FLUSH, 2, GRID), np.uint64)  # the sums of the chunks not yet hashed
        self._done = 0
        self._tail: list[np.ndarray] = []  # the bytes of a partial chunk (views of the caller's pieces)
        self._fill = 0
        self._total = 0

    def _chunk(self, grid: np.ndarray) -> None:
        np.add.reduce(grid, axis=0, out=self._sums[self._done, 0])
        np.add.reduce(grid, axis=1, out=self._sums[self._done, 1])
        self._advance()

    def _advance(self) -> None:
        self._done += 1
        if self._done == FLUSH:  # hash the sums of several chunks at once (fewer, larger hash calls)
            self._hash.update(cast("Buffer", self._sums))
            self._done = 0

    def update(self, data: memoryview | np.ndarray) -> None:
        buf = np.frombuffer(data, np.uint8) if not isinstance(data, np.ndarray) else data.reshape(-1).view(np.uint8)
        self._total += len(buf)
        if self._fill:
            take = min(len(buf), GRID_BYTES - self._fill)
            self._tail.append(buf[:take])
            self._fill += take
            buf = buf[take:]
            if self._fill < GRID_BYTES:
                return
            self._chunk(np.concatenate(self._tail).view("<u8").reshape(GRID, GRID))
            self._tail, self._fill = [], 0
        whole = len(buf) // GRID_BYTES * GRID_BYTES
        for lo in range(0, whole, GRID_BYTES):
            self._chunk(buf[lo : lo + GRID_BYTES].view("<u8").reshape(GRID, GRID))
        if whole < len(buf):
            self._tail, self._fill = [buf[whole:]], len(buf) - whole

    def _last(self) -> None:
        """The sums of the final partial chunk, as if zero-padded to a whole one (without the padding)."""
        data = np.concatenate(self._tail) if len(self._tail) > 1 else self._tail[0]
        if len(data) % 8:
            data = np.concatenate([data, np.zeros(8 - len(data) % 8, np.uint8)])
        words = data.view("<u8")
        full = len(words) // GRID
        body, rest = words[: full * GRID].reshape(full, GRID), words[full * GRID :]
        cols, rows = self._sums[self._done]
        np.add.reduce(body, axis=0, out=cols)
        cols[: len(rest)] += rest
        rows[:] = 0
        np.add.reduce(body, axis=1, out=rows[:full])
        if len(rest):
            rows[full] = rest.sum(dtype=np.uint64)
        self._advance()

    def hexdigest(self) -> str:
        if self._fill:
            self._last()
            self._tail, self._fill = [], 0
        self._hash.update(cast("Buffer", self._sums[: self._done]))
        self._done = 0
        self._hash.update(self._total.to_bytes(8, "little"))
        return f"gridsum:{self._hash.hexdigest()}"


try:  # ISA-L's CRC-32 (optional package ``isal``): the same values as zlib's, ~6x faster
    from isal.isal_zlib import crc32 as _crc32
except ImportError:  # pragma: no cover - depends on the environment
    _crc32 = zlib.crc32


class Crc32:
    """CRC-32 (zlib's polynomial), the checksum of format-version-1 checkpoints: ``"crc32:<8 hex>"``."""

    name = "crc32"

    def __init__(self) -> None:
        self._crc = 0

    def update(self, data: memoryview | np.ndarray) -> None:
        self._crc = _crc32(data if not isinstance(data, np.ndarray) else _bytes(data), self._crc)

    def hexdigest(self) -> str:
        return f"crc32:{self._crc:08x}"


def hasher(algorithm: str = "gridsum") -> GridSum | Crc32:
    """A fresh streaming checksum of ``algorithm`` (one of ``ALGORITHMS``)."""
    return GridSum() if algorithm == "gridsum" else Crc32()


def checksum(a: np.ndarray, algorithm: str = "gridsum") -> str:
    """``"<algorithm>:<hex>"`` of the block's C-order little-endian bytes (see ``GridSum``)."""
    h = hasher(algorithm)
    buf = _bytes(a)
    for lo in range(0, len(buf), CHUNK):
        h.update(buf[lo : lo + CHUNK])
    return h.hexdigest()


def read_header(path: Path) -> tuple[int, dict[str, Any]]:
    """``(offset of the data, header)`` of a safetensors file (8-byte length, JSON)."""
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        return 8 + n, json.loads(f.read(n))


def read_into(path: Path, offset: int, out: np.ndarray, check: GridSum | Crc32 | None = None) -> None:
    """Fill the C-contiguous ``out`` with the bytes at ``offset`` of ``path`` (no temporary).

    The bytes are read in pieces of ``PIECE`` (2 MiB: measured faster under
    ``mpiexec -n 4`` than one read of a whole 12.5 MiB block, and than 512
    KiB pieces); with ``check``, each piece goes into the checksum right
    after its read, while it is still in cache.
    """
    view = memoryview(cast("Buffer", out.reshape(-1).view(np.uint8)))
    with open(path, "rb", buffering=0) as f:
        f.seek(offset)
        got = 0
        while got < len(view):
            end = min(got + PIECE, len(view))
            n = f.readinto(view[got:end])
            if not n:
                raise OSError(f"{path} ends {len(view) - got} bytes early (truncated)")
            if check is not None:
                check.update(view[got : got + n])
            got += n


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_file(
    path: Path,
    tensors: Sequence[tuple[str, np.ndarray]],
    metadata: dict[str, str] | None = None,
    checksums: dict[str, str] | None = None,
    source: Iterator[tuple[str, np.ndarray]] | None = None,
) -> None:
    """Write ``tensors`` (``(key, array)`` pairs) as one safetensors file, fsynced before it returns.

    ``checksums``: a dict that receives ``{key: checksum(array)}`` (``GridSum``),
    each piece hashed just before it is written, while it is in cache.
    With ``source``, ``tensors`` give only shapes and dtypes (the header) and
    the data comes from ``source``, one array at a time, in the same order.
    """
    header: dict[str, Any] = {}
    if metadata:
        header["__metadata__"] = metadata
    pos = 0
    for key, a in tensors:
        n = int(a.size) * a.dtype.itemsize
        header[key] = {
            "dtype": st_dtype(a.dtype, f"tensor {key!r}"),
            "shape": list(a.shape),
            "data_offsets": [pos, pos + n],
        }
        pos += n
    head = json.dumps(header, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)  # the format pads the header to 8 bytes
    with open(path, "wb") as f:
        f.write(len(head).to_bytes(8, "little"))
        f.write(head)
        for key, a in source if source is not None else tensors:
            buf = _bytes(a)
            if checksums is None:
                f.writelines(buf[lo : lo + CHUNK] for lo in range(0, len(buf), CHUNK))
                continue
            h = GridSum()
            for lo in range(0, len(buf), PIECE):
                h.update(buf[lo : lo + PIECE])
                f.write(buf[lo : lo + PIECE])
            checksums[key] = h.hexdigest()
        f.flush()
        os.fsync(f.fileno())
