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
#: deepest tree a checkpoint may hold (deeper ones are refused on save and on load: rebuilding them would exhaust
#: the stack)
MAX_DEPTH = 200


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

    def walk(node: Any, name: str, path: str, depth: int = 0) -> Node:
        if depth > MAX_DEPTH:
            raise bad(
                path[:80] + "...",
                f"nested deeper than {MAX_DEPTH} levels",
                "flatten the tree (e.g. join the inner keys into one string key)",
            )
        if isinstance(node, ShardArray):
            if name in seen:
                raise bad(
                    path,
                    f"an array named {name!r}, like the array at tree{seen[name]}",
                    "array names join the key path with '/': rename one of the keys",
                )
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
                    raise bad(
                        f"{path}[{k!r}]",
                        f"under a dict key of type {type(k).__name__}",
                        "checkpoint dict keys must be strings or ints",
                    )
                items.append([k, walk(v, _join(name, k), f"{path}[{k!r}]", depth + 1)])
            return {"dict": items}
        if _is_namedtuple(node):
            return {
                "namedtuple": type(node).__name__,
                "fields": list(node._fields),
                "items": [walk(v, _join(name, f), f"{path}.{f}", depth + 1) for f, v in zip(node._fields, node)],
            }
        if isinstance(node, (list, tuple)):
            kind = "list" if isinstance(node, list) else "tuple"
            return {kind: [walk(v, _join(name, i), f"{path}[{i}]", depth + 1) for i, v in enumerate(node)]}
        if dataclasses.is_dataclass(node):
            raise bad(
                path,
                f"a {type(node).__name__} dataclass",
                "pass dataclasses.asdict(value) (and rebuild it after loading)",
            )
        raise bad(
            path,
            f"a {type(node).__name__} ({node!r:.40})",
            "a checkpoint tree holds ShardArrays and None/bool/int/float/str in dicts, lists and tuples",
        )

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


def check_spec(spec: Any, arrays: Any, where: str) -> None:
    """Refuse a JSON tree that is not one this module writes (``CheckpointError`` naming the place): every node a
    dict with one known form, array names that the manifest lists (each once), at most ``MAX_DEPTH`` levels.

    Walks iteratively, so a hostile manifest nested 100,000 deep is refused, not a ``RecursionError``.
    """

    def bad(path: str, why: str) -> CheckpointError:
        return CheckpointError(
            f"checkpoint {where}: the manifest's tree at {path or 'the root'} {why}; the file is damaged"
        )

    seen: set[str] = set()
    stack: list[tuple[Any, str, int]] = [(spec, "", 0)]
    while stack:
        node, path, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise bad(path[:80] + "...", f"is nested deeper than {MAX_DEPTH} levels")
        if not isinstance(node, dict):
            raise bad(path, f"holds {type(node).__name__} {node!r:.40} instead of a node")
        forms = [k for k in ("array", "value", "float", "dict", "list", "tuple", "namedtuple") if k in node]
        if len(forms) != 1:
            raise bad(path, f"holds the node {node!r:.60}, which has {'no' if not forms else 'more than one'} form")
        form = forms[0]
        if form == "array":
            name = node["array"]
            if not isinstance(name, str) or not isinstance(arrays, dict) or name not in arrays:
                raise bad(path, f"names the array {name!r:.60}, which the manifest's arrays do not hold")
            if name in seen:
                raise bad(path, f"names the array {name!r} a second time")
            seen.add(name)
        elif form == "float":
            if node["float"] not in ("nan", "inf", "-inf"):
                raise bad(path, f"holds the float {node['float']!r:.40}")
        elif form == "value":
            if not (node["value"] is None or isinstance(node["value"], (bool, int, float, str))):
                raise bad(path, f"holds the value {node['value']!r:.40}")
        elif form == "dict":
            items = node["dict"]
            if not isinstance(items, list) or not all(isinstance(kv, list) and len(kv) == 2 for kv in items):
                raise bad(path, "holds a dict that is not a list of [key, node] pairs")
            for k, v in items:
                if isinstance(k, bool) or not isinstance(k, (str, int)):
                    raise bad(path, f"holds the dict key {k!r:.40}")
                stack.append((v, f"{path}[{k!r}]", depth + 1))
        else:
            items = node["items"] if form == "namedtuple" else node[form]
            if not isinstance(items, list):
                raise bad(path, f"holds a {form} that is not a list")
            if form == "namedtuple" and (
                not isinstance(node.get("fields"), list)
                or len(node["fields"]) != len(items)
                or not all(isinstance(f, str) for f in node["fields"])
            ):
                raise bad(path, "holds a namedtuple whose fields do not match its items")
            for i, v in enumerate(items):
                stack.append((v, f"{path}[{i}]", depth + 1))
    if isinstance(arrays, dict):
        unused = [n for n in arrays if n not in seen]
        if unused:
            raise bad("", f"does not place the arrays {unused[:4]}, which the manifest lists")
