"""Writing safetensors files block by block, and the dtype names the format uses.

The safetensors format is an 8-byte little-endian header length, a JSON header
``{key: {"dtype", "shape", "data_offsets"}, "__metadata__": {str: str}}``
and the raw C-order little-endian bytes. ``safetensors.numpy.save_file``
needs every tensor as one ``bytes`` object first (a copy of the whole file in
memory); ``write_file`` streams each block from its own buffer instead, so a
save needs no memory beyond the arrays themselves. The files are read with the
``safetensors`` package (``safe_open``, ``load_file``).
"""

from __future__ import annotations

import json
import os
import zlib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..dtypes import as_dtype
from ..errors import CheckpointError

ST_DTYPES = {
    "bool": "BOOL", "uint8": "U8", "int8": "I8", "uint16": "U16", "int16": "I16", "uint32": "U32", "int32": "I32",
    "uint64": "U64", "int64": "I64", "float16": "F16", "bfloat16": "BF16", "float32": "F32", "float64": "F64",
}
FROM_ST = {v: k for k, v in ST_DTYPES.items()}
CHUNK = 64 << 20  # bytes hashed and written per call (bounded temporaries for large blocks)


def st_dtype(dtype: np.dtype, what: str) -> str:
    """The safetensors name of ``dtype``; CheckpointError for dtypes the format has no name for."""
    name = np.dtype(dtype).name
    if name not in ST_DTYPES:
        raise CheckpointError(
            f"{what} has dtype {name}, which safetensors cannot store; save x.astype(...) in one of "
            f"{sorted(ST_DTYPES)} (a complex array: its real and imaginary parts as two arrays)"
        )
    return ST_DTYPES[name]


def np_dtype(st: str) -> np.dtype:
    return as_dtype(FROM_ST[st])


def _bytes(a: np.ndarray) -> memoryview:
    a = np.ascontiguousarray(a)
    if a.dtype.byteorder == ">":
        a = a.astype(a.dtype.newbyteorder("<"))
    return memoryview(a.reshape(-1).view(np.uint8))


def checksum(a: np.ndarray, start: int = 0) -> str:
    """``"crc32:<hex>"`` of the block's C-order bytes (continuing from ``start``, a previous crc value).

    CRC-32 detects truncation, bit flips and torn writes (accidents), at
    about 2 GB/s per core; it is not a defence against deliberate tampering.
    """
    return f"crc32:{crc32(a, start):08x}"


def crc32(a: np.ndarray, start: int = 0) -> int:
    buf = _bytes(a)
    for lo in range(0, len(buf), CHUNK):
        start = zlib.crc32(buf[lo:lo + CHUNK], start)
    return start


def read_header(path: Path) -> tuple[int, dict[str, Any]]:
    """``(offset of the data, header)`` of a safetensors file (8-byte length, JSON)."""
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        return 8 + n, json.loads(f.read(n))


def read_into(path: Path, offset: int, out: np.ndarray) -> None:
    """Fill the C-contiguous ``out`` with the bytes at ``offset`` of ``path`` (one read, no temporary)."""
    view = memoryview(out.reshape(-1).view(np.uint8))
    with open(path, "rb", buffering=0) as f:
        f.seek(offset)
        got = 0
        while got < len(view):
            n = f.readinto(view[got:])
            if not n:
                raise OSError(f"{path} ends {len(view) - got} bytes early (truncated)")
            got += n


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_file(path: Path, tensors: Sequence[tuple[str, np.ndarray]], metadata: dict[str, str] | None = None,
               on_write: Callable[[str, np.ndarray], None] | None = None,
               source: Iterator[tuple[str, np.ndarray]] | None = None) -> None:
    """Write ``tensors`` (``(key, array)`` pairs) as one safetensors file, fsynced before it returns.

    ``on_write(key, array)`` runs after each tensor's bytes are written (checksums, freeing memory).
    With ``source``, ``tensors`` give only shapes and dtypes (the header) and
    the data comes from ``source``, one array at a time, in the same order.
    """
    header: dict[str, Any] = {}
    if metadata:
        header["__metadata__"] = metadata
    pos = 0
    for key, a in tensors:
        n = int(a.size) * a.dtype.itemsize
        header[key] = {"dtype": st_dtype(a.dtype, f"tensor {key!r}"), "shape": list(a.shape),
                       "data_offsets": [pos, pos + n]}
        pos += n
    head = json.dumps(header, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)  # the format pads the header to 8 bytes
    with open(path, "wb") as f:
        f.write(len(head).to_bytes(8, "little"))
        f.write(head)
        for key, a in (source if source is not None else tensors):
            buf = _bytes(a)
            f.writelines(buf[lo:lo + CHUNK] for lo in range(0, len(buf), CHUNK))
            if on_write is not None:
                on_write(key, a)
        f.flush()
        os.fsync(f.fileno())
