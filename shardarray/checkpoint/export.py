"""``export_safetensors``: one plain safetensors file of global arrays from a checkpoint."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, cast

from ..dtypes import as_dtype
from ..errors import CheckpointError
from .manifest import EXPORT_KEY
from .paths import user_path
from .reader import _Files, _read_block
from .source import open_source
from .stfile import as_stored, stored_dtype, stored_shape, write_file

if TYPE_CHECKING:
    from collections.abc import Iterator

    import numpy as np

#: the header key the safetensors format keeps for the file's metadata: no tensor can have this name
RESERVED = "__metadata__"


def export_safetensors(path: str | os.PathLike[str], file: str | os.PathLike[str], *, verify: bool = True) -> Path:
    """Write the arrays of the checkpoint at ``path`` as global tensors into one safetensors ``file``.

    Tensor names are the arrays' tree paths joined by ``/`` (``"params/embed"``);
    ``safetensors.numpy.load_file(file)`` reads it, as does any safetensors
    reader. The file's ``__metadata__["shardarray"]`` holds the tree, the dim
    names, which arrays are positional and which are complex as JSON, so
    ``sa.checkpoint.load(file, mesh=mesh)`` restores the whole tree (positional
    arrays positional, complex ones complex); ``load(file, target)`` works for
    any safetensors file.

    Complex arrays: safetensors has no complex dtype every reader knows (``C64``
    only from safetensors 0.7, no ``C128``), so a complex64 (complex128) array is
    exported under its own name as a float32 (float64) tensor of its shape plus
    a trailing axis of 2, the real and imaginary parts: PyTorch's
    ``torch.view_as_real`` layout, which ``torch.view_as_complex(t)`` (or NumPy's
    ``t.view(np.complex64)[..., 0]``) turns back, and which every safetensors
    version reads. The metadata's ``"complex"`` entry (``{name: dtype}``) lets
    ``sa.checkpoint.load`` give the complex array back.

    Runs in one process, reading the block files directly (no mesh, no
    collectives). Memory: one global array at a time; the file is written to
    a temporary sibling, fsynced and renamed (atomic).

    Args:
        path: a checkpoint directory (or run directory: its newest checkpoint).
        file: the safetensors file to write (replaced if it exists).
        verify: check every block's checksum while reading.

    Returns:
        The path of the written file.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> sa.checkpoint.save("/tmp/ck3", {"w": sa.ones(mesh, {"a": 4, "b": 6}, layout={"a": "row"})},
        ...                    overwrite=True)
        PosixPath('/tmp/ck3')
        >>> out = sa.checkpoint.export_safetensors("/tmp/ck3", "/tmp/ck3.safetensors")
        >>> import safetensors.numpy
        >>> safetensors.numpy.load_file(out)["w"].shape
        (4, 6)
    """
    src = open_source(user_path(path, "sa.checkpoint.export_safetensors"))
    if src.plain:
        raise CheckpointError(
            f"export_safetensors: {path} is already a plain safetensors file; pass a checkpoint "
            f"directory that sa.checkpoint.save wrote"
        )
    out = user_path(file, "sa.checkpoint.export_safetensors: file")
    base = src.base.resolve()
    where = out.resolve()
    if out.is_dir():
        into = base.parent if where == base or base in where.parents else out  # (never inside the checkpoint)
        raise CheckpointError(
            f"export_safetensors: the output {file} is a folder; give the path of the file to write, outside the "
            f"checkpoint, e.g. {into / (base.name + '.safetensors')}"
        )
    if where == base or base in where.parents:
        raise CheckpointError(
            f"export_safetensors: the output {file} is inside the checkpoint {src.base}; writing there would replace "
            f"a file of the checkpoint. Give a file path outside it, e.g. {base.parent / (base.name + '.safetensors')}"
        )
    m = src.manifest
    names = list(m["arrays"])
    if RESERVED in names:
        raise CheckpointError(
            f"export_safetensors: the checkpoint {path} holds an array named {RESERVED!r} (tree[{RESERVED!r}]), "
            f"the key safetensors reserves for the file's metadata, so the exported file could not be read; "
            f"rename that key in the tree and save again (the checkpoint itself loads as it is)"
        )
    positional = [n for n in names if m["arrays"][n].get("kind") == "positional"]
    complex_ = {n: m["arrays"][n]["dtype"] for n in names if as_dtype(m["arrays"][n]["dtype"]).kind == "c"}
    meta = {
        EXPORT_KEY: json.dumps(
            {
                "tree": m["tree"],
                "dims": {n: m["arrays"][n]["dims"] for n in names},
                "positional": positional,
                **({"complex": complex_} if complex_ else {}),
            }
        )
    }
    tmp = out.parent / f".{out.name}.tmp-{os.getpid()}"
    out.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.ExitStack() as stack:
        files = _Files(src, stack)
        for n in names:
            files.check(n, m["arrays"][n])

        class _Lazy:
            """Global arrays read one at a time while the file is written."""

            def __iter__(self) -> Iterator[tuple[str, np.ndarray]]:
                for n in names:
                    entry = m["arrays"][n]
                    block = _read_block(files, n, entry, tuple((0, s) for s in entry["sizes"]), verify)
                    yield n, as_stored(block)  # (complex: its real pairs, as the header says)

        tensors = [(n, _Shape(m["arrays"][n])) for n in names]
        try:
            # the _Shape stand-ins give the header only: the data comes from source
            write_file(tmp, cast("list[tuple[str, np.ndarray]]", tensors), meta, source=iter(_Lazy()))
            os.replace(tmp, out)
        finally:
            if tmp.exists():
                tmp.unlink()
    return out


class _Shape:
    """Shape and dtype of a tensor whose data comes later (for the file header)."""

    def __init__(self, entry: dict) -> None:
        dtype = as_dtype(entry["dtype"])
        self.shape = tuple(stored_shape(entry["sizes"], dtype))  # (complex: its real pairs, a trailing 2)
        self.dtype = stored_dtype(dtype)
        self.size = 1
        for s in self.shape:
            self.size *= s
