"""Every public signature and docstring, held against a snapshot (``tests/signatures.json``).

The public surface is ``sa.__all__`` (and, for its modules, their ``__all__``),
``shardarray.array_api.__all__`` (with ``linalg`` and ``fft``) and the public
attributes of ``ShardArray``. A restructuring must leave all of it as it was:
a changed signature or docstring fails here, naming it. After a deliberate
change, record the new snapshot with ``python tests/test_signatures.py --update``
and say why in the commit.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import sys
import types
from pathlib import Path
from typing import Any

import shardarray as sa
import shardarray.array_api as xp
from shardarray.array import ShardArray

SNAPSHOT = Path(__file__).with_name("signatures.json")


def _describe(obj: Any) -> dict[str, str]:
    try:
        sig = str(inspect.signature(obj))
    except (TypeError, ValueError):  # builtins, classes without a Python __init__, data
        sig = "" if callable(obj) else f"<{type(obj).__name__}>"
    doc = inspect.getdoc(obj) or ""
    return {"signature": sig, "doc": hashlib.sha256(doc.encode()).hexdigest()[:16]}


def _module(prefix: str, module: types.ModuleType, names: list[str], out: dict[str, Any]) -> None:
    for name in names:
        obj = getattr(module, name)
        key = f"{prefix}.{name}"
        if isinstance(obj, types.ModuleType):
            sub = getattr(obj, "__all__", None)
            if sub is not None and obj.__name__.startswith("shardarray"):
                _module(key, obj, sorted(sub), out)
            continue
        if isinstance(obj, (int, float, str, tuple, frozenset, type(None))) or not (callable(obj) or inspect.isclass(obj)):
            out[key] = {"signature": f"<{type(obj).__name__}>", "doc": ""}
            continue
        out[key] = _describe(obj)


def surface() -> dict[str, Any]:
    """``{qualified name: {"signature": ..., "doc": docstring hash}}`` of the whole public surface."""
    out: dict[str, Any] = {}
    _module("sa", sa, sorted(sa.__all__), out)
    _module("xp", xp, sorted(xp.__all__), out)
    for ext in ("linalg", "fft"):
        mod = getattr(xp, ext)
        _module(f"xp.{ext}", mod, sorted(getattr(mod, "__all__", [n for n in dir(mod) if not n.startswith("_")])), out)
    for name in sorted(n for n in dir(ShardArray) if not n.startswith("_") or n in ("__init__", "__getitem__")):
        attr = inspect.getattr_static(ShardArray, name)
        if isinstance(attr, property):
            out[f"ShardArray.{name}"] = {"signature": "<property>", "doc": _describe(attr)["doc"]}
        elif callable(attr) or isinstance(attr, (staticmethod, classmethod)):
            out[f"ShardArray.{name}"] = _describe(getattr(ShardArray, name))
    return out


def test_public_signatures_and_docstrings_are_unchanged():
    recorded = json.loads(SNAPSHOT.read_text())
    now = surface()
    missing = sorted(set(recorded) - set(now))
    added = sorted(set(now) - set(recorded))
    changed = sorted(k for k in set(now) & set(recorded) if now[k] != recorded[k])
    assert not missing, f"public names gone: {missing}"
    assert not changed, "changed: " + "; ".join(f"{k}: {recorded[k]} -> {now[k]}" for k in changed[:20])
    assert not added, f"new public names (record them with python tests/test_signatures.py --update): {added}"


def test_the_snapshot_covers_the_surface():
    recorded = json.loads(SNAPSHOT.read_text())
    assert len(recorded) > 400
    assert {"sa.einsum", "sa.value_and_grad", "xp.matmul", "xp.linalg.solve", "ShardArray.numpy"} <= set(recorded)


if __name__ == "__main__":
    if sys.argv[1:] == ["--update"]:
        SNAPSHOT.write_text(json.dumps(surface(), indent=1, sort_keys=True) + "\n")
        print(f"wrote {SNAPSHOT}")
