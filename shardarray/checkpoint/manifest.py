"""The checkpoint manifest (``manifest.json``): schema, format version and validation.

A checkpoint is a directory::

    manifest.json               # this schema (JSON, no pickle)
    blocks-00000.safetensors    # the blocks process 0 wrote
    blocks-00001.safetensors    # ... one file per process that owned blocks

The manifest::

    {"format": "shardarray-checkpoint", "version": 2,
     "tree": <JSON tree, see treespec>,
     "arrays": {name: {"dims": [...], "sizes": [...], "dtype": "float32",
                       "mesh": {axis: size}, "layout": {dim: [axes]},
                       "blocks": [{"offset": [...], "shape": [...], "file": "blocks-00000.safetensors",
                                   "key": "name@offsets", "checksum": "gridsum:<hex>"}]}}}

The blocks of an array tile it exactly (each distinct block of the saved
layout once). A block's ``shape`` is its shape in the array; a complex64
(complex128) array's blocks are stored in the files as float32 (float64)
tensors of that shape plus a trailing axis of 2 (real and imaginary parts,
``torch.view_as_real``'s layout: the same bytes, so the checksum is that of
the complex block's bytes), and the entry's ``dtype`` stays the complex one.
A plain safetensors file (``export_safetensors``, or weights from elsewhere)
reads as the same structure with one block per array.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any

from ..errors import CheckpointError
from .stfile import ALGORITHMS, COMPLEX_PAIRS, ST_DTYPES
from .treespec import check_spec

FORMAT = "shardarray-checkpoint"
#: 4: version 3 with complex arrays (their blocks stored as float pairs); written only by a checkpoint that holds
#: one, so a shardarray that reads up to 3 still reads every other checkpoint and names the version for these;
#: 3: the manifest checksums itself ("checksum": "sha256:<hex>" of the rest) and every block has a checksum;
#: 2: block checksums "gridsum:<hex>" (see stfile.GridSum); 1: "crc32:<hex>"
VERSION = 4
READABLE = (1, 2, 3, 4)  # versions this shardarray loads (a block's checksum names its algorithm)
MANIFEST = "manifest.json"
EXPORT_KEY = "shardarray"  # safetensors __metadata__ key of an exported file: {"tree", "dims", "positional"} as JSON


def manifest_checksum(m: dict[str, Any]) -> str:
    """``"sha256:<hex>"`` of the manifest without its own ``checksum`` field, in a canonical JSON form (sorted
    keys, no spaces): any changed character of the tree (a saved scalar), a dtype, a size or a block checksum
    changes it."""
    body = {k: v for k, v in m.items() if k != "checksum"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=True)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def read_manifest(path: Path) -> dict[str, Any]:
    """The validated manifest of the checkpoint directory ``path``.

    Raises:
        CheckpointError: no manifest, unreadable JSON, another format or an
            unknown version, or an array entry that breaks the schema.
    """
    file = path / MANIFEST
    try:
        text = file.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise CheckpointError(
            f"checkpoint {path}: {MANIFEST} is not UTF-8 text ({e.reason} at byte {e.start}); the file is damaged"
        ) from None
    except FileNotFoundError:
        raise CheckpointError(
            f"checkpoint {path}: no {MANIFEST}; this is not a complete shardarray checkpoint (an interrupted save "
            f"never leaves one at the final path). Pass the directory sa.checkpoint.save wrote"
        ) from None
    try:
        m = json.loads(text)
    except ValueError as e:
        raise CheckpointError(f"checkpoint {path}: {MANIFEST} is not valid JSON ({e}); the file is damaged") from None
    except RecursionError:
        raise CheckpointError(
            f"checkpoint {path}: {MANIFEST} is nested too deeply to read; the file is damaged"
        ) from None
    if not isinstance(m, dict) or m.get("format") != FORMAT:
        raise CheckpointError(
            f"checkpoint {path}: {MANIFEST} is not a {FORMAT!r} manifest (format "
            f"{m.get('format') if isinstance(m, dict) else None!r})"
        )
    if m.get("version") not in READABLE:
        raise CheckpointError(
            f"checkpoint {path}: format version {m.get('version')!r} is unknown to this shardarray, which reads "
            f"versions {list(READABLE)}; load it with the shardarray version that wrote it (or a newer one)"
        )
    if m["version"] >= 3:
        if m.get("checksum") != manifest_checksum(m):
            raise CheckpointError(
                f"checkpoint {path}: {MANIFEST} fails its checksum ({m.get('checksum')!r:.80} != "
                f"{manifest_checksum(m)}); the file is damaged or was edited: restore it or use an older checkpoint"
            )
    validate(m, path)
    return m


def _int_list(v: Any, n: int | None) -> bool:
    return (
        isinstance(v, list)
        and all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in v)
        and (n is None or len(v) == n)
    )


def validate(m: dict[str, Any], path: Path) -> None:
    """Check the manifest's arrays against the schema; the blocks must lie inside and tile their array."""
    if not isinstance(m.get("arrays"), dict) or not isinstance(m.get("tree"), dict):
        raise CheckpointError(f"checkpoint {path}: {MANIFEST} lacks 'arrays' or 'tree'; the file is damaged")
    check_spec(m["tree"], m["arrays"], str(path))
    for name, a in m["arrays"].items():

        def bad(why: str, name: str = name) -> CheckpointError:
            return CheckpointError(f"checkpoint {path}: array {name!r} in {MANIFEST}: {why}; the file is damaged")

        if not isinstance(a, dict) or not _int_list(a.get("sizes"), None):
            raise bad("no valid 'sizes'")
        nd = len(a["sizes"])
        if a.get("dims") is not None and (not isinstance(a["dims"], list) or len(a["dims"]) != nd):
            raise bad(f"dims {a.get('dims')!r} do not match sizes {a['sizes']}")
        if a.get("dims") is not None and (
            not all(isinstance(d, str) and d for d in a["dims"]) or len(set(a["dims"])) != nd
        ):
            raise bad(f"dims {a['dims']!r} are not {nd} distinct non-empty names")
        if a.get("dtype") not in ST_DTYPES and a.get("dtype") not in COMPLEX_PAIRS:
            raise bad(f"unknown dtype {a.get('dtype')!r}")
        covered = 0
        for b in a.get("blocks", []):
            ok = (
                isinstance(b, dict)
                and _int_list(b.get("offset"), nd)
                and _int_list(b.get("shape"), nd)
                and isinstance(b.get("file"), str)
                and isinstance(b.get("key"), str)
            )
            if not ok or "/" in b["file"] or b["file"].startswith("."):
                raise bad(f"malformed block {b!r:.120}")
            if any(o + s > n for o, s, n in zip(b["offset"], b["shape"], a["sizes"])):
                raise bad(f"block at {b['offset']} of shape {b['shape']} lies outside sizes {a['sizes']}")
            ck = b.get("checksum")
            if ck is None and m.get("version", 0) >= 3:
                raise bad(f"block {b['key']!r} has no checksum (every block of a version-3 checkpoint has one)")
            if ck is not None and (not isinstance(ck, str) or ck.partition(":")[0] not in ALGORITHMS):
                raise CheckpointError(
                    f"checkpoint {path}: array {name!r} in {MANIFEST}: block {b['key']!r} has checksum {ck!r:.60}, "
                    f"of an algorithm this shardarray does not know (it knows {list(ALGORITHMS)}); load it with the "
                    f"shardarray version that wrote it (or a newer one)"
                )
            covered += math.prod(b["shape"])
        if covered != math.prod(a["sizes"]):
            raise bad(f"its blocks hold {covered} elements, not the {math.prod(a['sizes'])} of sizes {a['sizes']}")
        hole = _grid_gap(a["blocks"], a["sizes"]) if covered else None
        if hole:
            raise bad(hole)


def _grid_gap(blocks: list[dict[str, Any]], sizes: list[int]) -> str | None:
    """Why ``blocks`` do not tile ``sizes`` as a grid, or None when they do.

    A layout cuts each dim into consecutive intervals and an array into their
    products, so a saved array's blocks are a grid: per dim, the blocks'
    ``(offset, length)`` intervals must run from 0 to the size without gaps
    or overlaps, and every combination must appear once. Checked in one pass
    over the blocks, so a manifest whose blocks overlap (leaving part of the
    array unwritten while the element count still adds up) is refused instead
    of loading uninitialised memory.
    """
    nd = len(sizes)
    cuts: list[dict[int, int]] = [{} for _ in range(nd)]
    for b in blocks:
        for d in range(nd):
            if cuts[d].setdefault(b["offset"][d], b["shape"][d]) != b["shape"][d]:
                return f"two blocks start at {b['offset'][d]} along axis {d} with different lengths (they overlap)"
    for d in range(nd):
        end = 0
        for start in sorted(cuts[d]):
            if start != end:
                return f"along axis {d} the blocks {'overlap' if start < end else 'leave a gap'} at {min(start, end)}"
            end = start + cuts[d][start]
        if end != sizes[d]:
            return f"along axis {d} the blocks end at {end}, not at the size {sizes[d]}"
    corners = {tuple(b["offset"]) for b in blocks}
    if len(corners) != len(blocks) or len(blocks) != math.prod(len(c) for c in cuts):
        return "its blocks do not form a grid (some appear twice or are missing)"
    return None
