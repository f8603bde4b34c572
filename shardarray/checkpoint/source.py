"""Where a load reads from: a checkpoint directory, a run directory (its newest checkpoint) or a safetensors file."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import CheckpointError
from . import commit as _commit
from .manifest import EXPORT_KEY, MANIFEST, read_manifest, validate
from .stfile import COMPLEX_PAIRS, FROM_ST, READ_ONLY_ST, np_dtype


@dataclass
class Source:
    """A validated manifest and the directory its block files are in."""

    where: Path
    base: Path
    manifest: dict[str, Any]
    plain: bool  # a plain safetensors file: dims may be unknown, no checksums
    foreign: bool = False  # a plain file without shardarray's tree: arrays are matched by tree path


def open_source(path: Path) -> Source:
    """The checkpoint at ``path`` (see the module doc); CheckpointError when there is none."""
    if path.is_file():
        return _plain_file(path)
    if path.is_dir() and not (path / MANIFEST).exists():
        runs = _commit.run_entries(path)
        if runs:
            path = runs[-1]
    elif not path.exists():
        olds = _commit.old_copies(path)  # an overwrite interrupted between its two renames
        if olds and (olds[-1] / MANIFEST).is_file():
            path = olds[-1]
        else:
            raise CheckpointError(
                f"checkpoint {path} does not exist; pass the directory sa.checkpoint.save wrote "
                f"(or a .safetensors file)"
            )
    return Source(path, path, read_manifest(path), plain=False)


def _plain_file(file: Path) -> Source:
    """A plain safetensors file as a manifest with one block per array (names: the file's keys)."""
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(str(file), framework="np") as f:
            meta = f.metadata() or {}
            keys = f.keys()
            entries = {k: (f.get_slice(k).get_shape(), f.get_slice(k).get_dtype()) for k in keys}
    except (SafetensorError, OSError, ValueError) as e:  # a damaged file, or not safetensors
        hint = f"; pass the checkpoint's folder {file.parent}" if file.name == MANIFEST else ""
        raise CheckpointError(
            f"checkpoint {file}: not a readable safetensors file ({type(e).__name__}: {e}); "
            f"the file is truncated or damaged, or not safetensors{hint}"
        ) from None
    extra: dict[str, Any] = {}
    if EXPORT_KEY in meta:
        try:
            extra = json.loads(meta[EXPORT_KEY])
        except ValueError:
            extra = {}
    dims = extra.get("dims", {}) if isinstance(extra, dict) else {}
    positional = extra.get("positional", []) if isinstance(extra, dict) else []
    complex_ = extra.get("complex", {}) if isinstance(extra, dict) else {}
    if not isinstance(dims, dict) or not isinstance(positional, list) or not isinstance(complex_, dict):
        dims, positional, complex_ = {}, [], {}
    arrays = {}
    for key, (shape, st) in entries.items():
        readable = np_dtype(st)
        if readable is None:
            raise CheckpointError(
                f"checkpoint {file}: tensor {key!r} has safetensors dtype {st}, which shardarray "
                f"cannot load; convert it to one of {sorted([*FROM_ST, *READ_ONLY_ST])}"
            )
        dtype = readable.name
        if key in complex_:  # an exported complex array: its real pairs (export_safetensors' doc)
            if COMPLEX_PAIRS.get(complex_[key]) != dtype or not shape or shape[-1] != 2:
                raise CheckpointError(
                    f"checkpoint {file}: tensor {key!r} is {st} {list(shape)}, but the file's metadata says it holds "
                    f"a {complex_[key]!r} array as real pairs (a trailing axis of 2); the file is damaged"
                )
            dtype, shape = complex_[key], shape[:-1]
        arrays[key] = {
            **({"kind": "positional"} if key in positional else {}),
            "dims": dims.get(key),
            "sizes": list(shape),
            "dtype": dtype,
            "blocks": [
                {"offset": [0] * len(shape), "shape": list(shape), "file": file.name, "key": key, "checksum": None}
            ],
        }
    tree = extra.get("tree") if isinstance(extra, dict) else None
    manifest = {
        "tree": tree if isinstance(tree, dict) else {"dict": [[k, {"array": k}] for k in arrays]},
        "arrays": arrays,
    }
    validate(manifest, file)
    return Source(file, file.parent, manifest, plain=True, foreign=not isinstance(tree, dict))
