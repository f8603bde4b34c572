"""A checkpoint's tree structure as JSON: containers, plain values and array names (no pickle).

A tree holds ShardArrays and plain values (``None``, bools, ints, floats,
strings; NumPy scalars are stored as the Python value) in dicts (string or
int keys), lists, tuples and namedtuples. Each node becomes a small JSON
object: ``{"array": name}``, ``{"value": v}``, ``{"dict": [[key, node], ...]}``,
``{"list": [...]}``, ``{"tuple": [...]}`` or ``{"namedtuple": type name,
"fields": [...], "items": [...]}``. An array's name is its key path joined by
``/`` (``"params/layer0.attn.wq"``, ``"opt/m/embed"``, ``"layers/0/w"``).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from ..array import ShardArray
from ..errors import CheckpointError

Node = dict[str, Any]


def _is_namedtuple(node: Any) -> bool:
    return isinstance(node, tuple) and hasattr(type(node), "_fields")


def _join(prefix: str, key: Any) -> str:
    return f"{prefix}/{key}" if prefix else str(key)


def encode(tree: Any, where: str) -> tuple[Node, list[tuple[str, ShardArray]]]:
    """``(JSON tree, [(array name, array)])`` of ``tree``, arrays in tree order.

    Raises:
        CheckpointError: a leaf that is neither an array nor a plain value, a
            dict key that is not a string or int, or two arrays of one name.
    """
    arrays: list[tuple[str, ShardArray]] = []
    seen: dict[str, str] = {}

    def bad(path: str, what: str, fix: str) -> CheckpointError:
        return CheckpointError(f"checkpoint {where}: tree{path or ' (the root)'} is {what}; {fix}")

    def walk(node: Any, name: str, path: str) -> Node:
        if isinstance(node, ShardArray):
            if name in seen:
                raise bad(path, f"an array named {name!r}, like the array at tree{seen[name]}",
                          "array names join the key path with '/': rename one of the keys")
            seen[name] = path
            arrays.append((name, node))
            return {"array": name}
        if node is None or isinstance(node, (bool, str)):
            return {"value": node}
        if isinstance(node, (int, np.integer)) and not isinstance(node, np.bool_):
            return {"value": int(node)}
        if isinstance(node, np.bool_):
            return {"value": bool(node)}
        if isinstance(node, (float, np.floating)):
            v = float(node)
            return {"value": v} if math.isfinite(v) else {"float": repr(v)}
        if isinstance(node, dict):
            items = []
            for k, v in node.items():
                if isinstance(k, bool) or not isinstance(k, (str, int)):
                    raise bad(f"{path}[{k!r}]", f"under a dict key of type {type(k).__name__}",
                              "checkpoint dict keys must be strings or ints")
                items.append([k, walk(v, _join(name, k), f"{path}[{k!r}]")])
            return {"dict": items}
        if _is_namedtuple(node):
            return {"namedtuple": type(node).__name__, "fields": list(node._fields),
                    "items": [walk(v, _join(name, f), f"{path}.{f}") for f, v in zip(node._fields, node)]}
        if isinstance(node, (list, tuple)):
            kind = "list" if isinstance(node, list) else "tuple"
            return {kind: [walk(v, _join(name, i), f"{path}[{i}]") for i, v in enumerate(node)]}
        if dataclasses.is_dataclass(node):
            raise bad(path, f"a {type(node).__name__} dataclass",
                      "pass dataclasses.asdict(value) (and rebuild it after loading)")
        raise bad(path, f"a {type(node).__name__} ({node!r:.40})",
                  "a checkpoint tree holds ShardArrays and None/bool/int/float/str in dicts, lists and tuples")

    return walk(tree, "", ""), arrays


def value_of(node: Node) -> Any:
    """The plain value of a ``{"value": v}`` or ``{"float": "nan"}`` node."""
    return float(node["float"]) if "float" in node else node["value"]


def names(spec: Node) -> list[str]:
    """The array names of a JSON tree, in tree order."""
    out: list[str] = []

    def walk(n: Node) -> None:
        if "array" in n:
            out.append(n["array"])
        for child in children(n):
            walk(child)

    walk(spec)
    return out


def children(n: Node) -> list[Node]:
    if "dict" in n:
        return [v for _, v in n["dict"]]
    for kind in ("list", "tuple", "items"):
        if kind in n:
            return list(n[kind])
    return []


def describe(n: Node) -> str:
    """What a JSON tree holds at one place, in words (for error messages)."""
    if "array" in n:
        return f"the array {n['array']!r}"
    if "value" in n or "float" in n:
        return f"the value {value_of(n)!r}"
    if "dict" in n:
        return f"a dict with keys {[k for k, _ in n['dict']][:6]}"
    if "namedtuple" in n:
        return f"a {n['namedtuple']} namedtuple"
    kind = "list" if "list" in n else "tuple"
    return f"a {kind} of {len(n[kind])}"


def build(spec: Node, arrays: dict[str, Any]) -> Any:
    """The tree of ``spec`` with its arrays from ``arrays`` (namedtuples come back as dicts of their fields)."""
    if "array" in spec:
        return arrays[spec["array"]]
    if "value" in spec or "float" in spec:
        return value_of(spec)
    if "dict" in spec:
        return {k: build(v, arrays) for k, v in spec["dict"]}
    if "namedtuple" in spec:
        return {f: build(v, arrays) for f, v in zip(spec["fields"], spec["items"])}
    if "list" in spec:
        return [build(v, arrays) for v in spec["list"]]
    return tuple(build(v, arrays) for v in spec["tuple"])
