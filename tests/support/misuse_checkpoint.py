"""Misuse of sa.checkpoint.save / load / export_safetensors (issue 16): each raises CheckpointError naming the path and array."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from misuse import Case

import shardarray as sa
from shardarray.checkpoint.manifest import manifest_checksum

MESH = sa.Mesh({"row": 2, "col": 2})


def _w(sizes=None, dims=("a", "b")):
    sizes = sizes or {"a": 4, "b": 6}
    return sa.ones(MESH, dict(zip(dims, sizes.values())), layout={dims[0]: "row"})


def _saved() -> Path:
    path = Path(tempfile.mkdtemp(prefix="ckmis")) / "ck"
    sa.checkpoint.save(path, {"w": _w(), "step": 7})
    return path


def _damage(how: str) -> Path:
    path = _saved()
    block = path / "blocks-00000.safetensors"
    data = bytearray(block.read_bytes())
    if how == "truncate":
        block.write_bytes(bytes(data[:-40]))
    elif how == "flip":
        data[-5] ^= 0xFF
        block.write_bytes(bytes(data))
    elif how == "remove":
        block.unlink()
    elif how == "manifest":
        (path / "manifest.json").unlink()
    elif how == "overlap":  # both blocks of w at rows 0-1: the element count still adds up, rows 2-3 unwritten
        m = json.loads((path / "manifest.json").read_text())
        m["arrays"]["w"]["blocks"][1]["offset"] = [0, 0]
        m["checksum"] = manifest_checksum(m)  # consistent, so the schema check itself is what refuses it
        (path / "manifest.json").write_text(json.dumps(m))
    elif how in ("repeated-dims", "number-dims"):
        m = json.loads((path / "manifest.json").read_text())
        m["arrays"]["w"]["dims"] = ["a", "a"] if how == "repeated-dims" else [0, 1]
        m["checksum"] = manifest_checksum(m)
        (path / "manifest.json").write_text(json.dumps(m))
    elif how == "edited-scalar":
        f = path / "manifest.json"
        m = json.loads(f.read_text())
        m["tree"] = json.loads(json.dumps(m["tree"]).replace("7", "8"))
        f.write_text(json.dumps(m))
    elif how == "version":
        m = json.loads((path / "manifest.json").read_text())
        m["version"] = 99
        (path / "manifest.json").write_text(json.dumps(m))
    return path


def _load(path: Path, target=None):
    return sa.checkpoint.load(path, target if target is not None else {"w": _w(), "step": 0})


CASES = [
    Case("checkpoint-exists", lambda: sa.checkpoint.save(_saved(), {"x": 1}), sa.CheckpointError,
         ("ck", "exists"), ("overwrite=True",)),
    Case("checkpoint-no-manifest", lambda: _load(_damage("manifest")), sa.CheckpointError,
         ("ck", "manifest.json"), ("sa.checkpoint.save wrote",)),
    Case("checkpoint-missing-file", lambda: _load(_damage("remove")), sa.CheckpointError,
         ("'w'", "blocks-00000.safetensors", "missing"), ("copy every file",)),
    Case("checkpoint-truncated", lambda: _load(_damage("truncate")), sa.CheckpointError,
         ("'w'", "blocks-00000.safetensors", "truncated"), ("older checkpoint",)),
    Case("checkpoint-corrupted", lambda: _load(_damage("flip")), sa.CheckpointError,
         ("'w'", "checksum", "blocks-00000.safetensors"), ("older checkpoint",)),
    Case("checkpoint-overlapping-blocks", lambda: _load(_damage("overlap")), sa.CheckpointError,
         ("ck", "'w'", "end at 2, not at the size 4"), ("damaged",)),
    Case("checkpoint-edited-manifest", lambda: _load(_damage("edited-scalar")), sa.CheckpointError,
         ("ck", "manifest.json fails its checksum"), ("restore it",)),
    Case("checkpoint-repeated-dims", lambda: _load(_damage("repeated-dims")), sa.CheckpointError,
         ("ck", "'w'", "['a', 'a']", "distinct"), ("damaged",)),
    Case("checkpoint-number-dims", lambda: _load(_damage("number-dims")), sa.CheckpointError,
         ("ck", "'w'", "[0, 1]"), ("damaged",)),
    Case("checkpoint-unknown-version", lambda: _load(_damage("version")), sa.CheckpointError,
         ("ck", "version 99"), ("shardarray version that wrote it",)),
    Case("checkpoint-missing-array", lambda: _load(_saved(), {"w": _w(), "step": 0, "bias": _w()}),
         sa.CheckpointError, ("ck", "['bias']", "no key 'bias'"), ("mesh=",)),
    Case("checkpoint-extra-array", lambda: _load(_saved(), {"step": 0}), sa.CheckpointError,
         ("ck", "['w']", "the array 'w'", "extra"), ("saved structure",)),
    Case("checkpoint-size-mismatch", lambda: _load(_saved(), {"w": _w({"a": 4, "b": 5}), "step": 0}),
         sa.CheckpointError, ("'w'", "'b': 6", "'b': 5"), ("saved sizes",)),
    Case("checkpoint-dims-mismatch", lambda: _load(_saved(), {"w": _w(dims=("x", "b")), "step": 0}),
         sa.CheckpointError, ("'w'", "('a', 'b')", "('x', 'b')"), ("rename after loading",)),
    Case("checkpoint-array-vs-value", lambda: _load(_saved(), {"w": 0, "step": 0}), sa.CheckpointError,
         ("['w']", "the array 'w'", "plain value 0"), ("saved structure",)),
    Case("checkpoint-bad-leaf", lambda: sa.checkpoint.save(tempfile.mkdtemp() + "/c", {"f": open}),
         sa.CheckpointError, ("['f']", "builtin_function_or_method"), ("ShardArrays and None/bool/int/float/str",)),
    Case("checkpoint-complex", lambda: sa.checkpoint.load(  # (complex saves; into a real target it is refused)
        sa.checkpoint.save(tempfile.mkdtemp() + "/c", {"z": _w().astype("complex64")}), {"z": _w()}),
         sa.CheckpointError, ("'z'", "complex64", "float32", "imaginary parts"), ("casting='unsafe'",)),
    Case("checkpoint-keep-zero", lambda: sa.checkpoint.save(tempfile.mkdtemp(), {"x": 1}, keep=0),
         sa.CheckpointError, ("keep=0",), (">= 1",)),
    Case("checkpoint-target-and-mesh", lambda: sa.checkpoint.load(_saved(), {"w": _w()}, mesh=MESH),
         sa.CheckpointError, ("both",), ("exactly one of target=",)),
    Case("checkpoint-no-path", lambda: sa.checkpoint.load("/nonexistent/ck", mesh=MESH), sa.CheckpointError,
         ("/nonexistent/ck", "does not exist"), ("sa.checkpoint.save wrote",)),
    Case("checkpoint-export-plain", lambda: sa.checkpoint.export_safetensors(
        sa.checkpoint.export_safetensors(_saved(), tempfile.mkdtemp() + "/m.safetensors"), "/tmp/x.safetensors"),
        sa.CheckpointError, ("m.safetensors", "plain safetensors"), ("checkpoint directory",)),
    Case("checkpoint-dataclass", lambda: sa.checkpoint.save(tempfile.mkdtemp() + "/c", {"o": sa.optim.Adam()}),
         sa.CheckpointError, ("['o']", "Adam dataclass"), ("dataclasses.asdict",)),
]

def _export_into(name: str) -> Path:
    """Export a checkpoint to ``name`` inside itself (the checkpoint folder itself for "")."""
    path = _saved()
    return sa.checkpoint.export_safetensors(path, path / name if name else path)


CASES += [
    Case("export-into-itself", lambda: _export_into(""), sa.CheckpointError, ("export_safetensors", "a folder"),
         ("outside",)),
    Case("export-over-own-manifest", lambda: _export_into("manifest.json"), sa.CheckpointError,
         ("manifest.json", "inside the checkpoint"), ("outside",)),
    Case("export-over-own-blocks", lambda: _export_into("blocks-00000.safetensors"), sa.CheckpointError,
         ("blocks-00000", "inside the checkpoint"), ("outside",)),
]


def _file_at() -> Path:
    path = Path(tempfile.mkdtemp(prefix="ckmis")) / "notes.txt"
    path.write_text("my notes")
    return path


def _folder_at() -> Path:
    path = Path(tempfile.mkdtemp(prefix="ckmis")) / "results"
    path.mkdir()
    (path / "table.csv").write_text("1,2")
    return path


CASES += [
    Case("save-over-a-file", lambda: sa.checkpoint.save(_file_at(), {"w": _w()}, overwrite=True), sa.CheckpointError,
         ("notes.txt", "a file of that name exists"), ("save to another path",)),
    Case("save-over-a-folder", lambda: sa.checkpoint.save(_folder_at(), {"w": _w()}, overwrite=True),
         sa.CheckpointError, ("results", "no manifest.json"), ("save to another path",)),
    Case("save-run-over-a-file", lambda: sa.checkpoint.save(_file_at(), {"w": _w()}, keep=2), sa.CheckpointError,
         ("notes.txt", "a file of that name exists"), ("save to another path",)),
]


def _hostile(edit) -> Path:
    """A checkpoint whose manifest was edited consistently (its checksum recomputed): the schema must refuse it."""
    path = _saved()
    f = path / "manifest.json"
    m = json.loads(f.read_text())
    edit(m)
    m["checksum"] = manifest_checksum(m)
    f.write_text(json.dumps(m))
    return path


def _raw_manifest(data: bytes) -> Path:
    path = _saved()
    (path / "manifest.json").write_bytes(data)
    return path


_DEEP = ('{"format": "shardarray-checkpoint", "version": 2, "arrays": {}, "tree": '
         + '{"list": [' * 100_000 + '{"value": 1}' + ']}' * 100_000 + "}").encode()

CASES += [
    Case("manifest-missing-array", lambda: _load(_hostile(lambda m: m["arrays"].pop("w")), {"w": _w(), "step": 0}),
         sa.CheckpointError, ("ck", "'w'", "do not hold"), ("damaged",)),
    Case("manifest-empty-node", lambda: _load(_hostile(lambda m: m.__setitem__("tree", {}))), sa.CheckpointError,
         ("ck", "the root", "no form"), ("damaged",)),
    Case("manifest-two-forms", lambda: _load(_hostile(lambda m: m.__setitem__("tree", {"value": 1, "list": []}))),
         sa.CheckpointError, ("ck", "more than one form"), ("damaged",)),
    Case("manifest-unplaced-array", lambda: _load(_hostile(lambda m: m.__setitem__("tree", {"value": 1}))),
         sa.CheckpointError, ("ck", "does not place the arrays", "'w'"), ("damaged",)),
    Case("manifest-bad-dict", lambda: _load(_hostile(lambda m: m.__setitem__("tree", {"dict": [["a"]]}))),
         sa.CheckpointError, ("ck", "[key, node] pairs"), ("damaged",)),
    Case("manifest-deep-nesting", lambda: _load(_raw_manifest(_DEEP)), sa.CheckpointError,
         ("ck", "nested too deeply"), ("damaged",)),
    Case("manifest-not-utf8", lambda: _load(_raw_manifest(b"\xff\xfe\x00garbage")), sa.CheckpointError,
         ("ck", "not UTF-8"), ("damaged",)),
    Case("manifest-wrong-block-shape", lambda: _load(_hostile(
        lambda m: m["arrays"]["w"]["blocks"][0].__setitem__("shape", [4]))), sa.CheckpointError,
        ("ck", "'w'", "malformed block"), ("damaged",)),
]


def _nest(levels: int) -> dict:
    node: dict = {"value": 1}
    for _ in range(levels):
        node = {"list": [node]}
    return node


CASES += [
    Case("manifest-too-deep", lambda: _load(_hostile(lambda m: m.__setitem__(
        "tree", {"dict": [["w", {"array": "w"}], ["deep", _nest(300)]]}))), sa.CheckpointError,
        ("ck", "deeper than 200 levels"), ("damaged",)),
]

CASES += [
    Case("save-too-deep", lambda: sa.checkpoint.save(Path(tempfile.mkdtemp()) / "ck", {"w": _w(), "n": _nest(250)}),
         sa.CheckpointError, ("deeper than 200 levels",), ("flatten the tree",)),
]
