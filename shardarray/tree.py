"""Trees of arrays (dicts, lists, tuples nested): flatten to a list of leaves and back.

Used by ``value_and_grad`` (params and grads share one structure) and by the
optimizers (state mirrors the params).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .array import ShardArray
from .errors import DTypeError

TreeDef = Any


def tree_flatten(tree: Any, what: str = "params") -> tuple[list[ShardArray], TreeDef]:
    """The ShardArray leaves of ``tree`` in a fixed order, and its structure.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> leaves, treedef = sa.tree.tree_flatten({"w": sa.zeros(mesh, {"a": 2}), "b": [sa.ones(mesh, {"a": 2})]})
        >>> len(leaves), treedef
        (2, {'w': '*', 'b': ['*']})
    """
    leaves: list[ShardArray] = []

    def walk(node: Any, path: str) -> TreeDef:
        if isinstance(node, ShardArray):
            leaves.append(node)
            return "*"
        if isinstance(node, dict):
            return {k: walk(v, f"{path}[{k!r}]") for k, v in node.items()}
        if isinstance(node, (list, tuple)):
            defs = [walk(v, f"{path}[{i}]") for i, v in enumerate(node)]
            return defs if isinstance(node, list) else (type(node), tuple(defs))
        raise DTypeError(
            f"{path} is a {type(node).__name__}; a tree of arrays may only hold ShardArrays in dicts, "
            f"lists and tuples (pass other values as separate arguments)"
        )

    return leaves, walk(tree, what)


def tree_unflatten(treedef: TreeDef, leaves: list[Any]) -> Any:
    """Rebuild a tree of ``treedef``'s structure from ``leaves`` (inverse of ``tree_flatten``)."""
    it = iter(leaves)

    def build(d: TreeDef) -> Any:
        if isinstance(d, str):
            return next(it)
        if isinstance(d, dict):
            return {k: build(v) for k, v in d.items()}
        if isinstance(d, list):
            return [build(v) for v in d]
        cls, defs = d
        items = [build(v) for v in defs]
        return cls(*items) if hasattr(cls, "_fields") else cls(items)

    return build(treedef)


def tree_map(fn: Callable[..., Any], tree: Any, *rest: Any) -> Any:
    """``fn`` applied leaf by leaf to ``tree`` and trees of the same structure.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> t = sa.tree.tree_map(lambda x: x * 2, {"w": sa.ones(mesh, {"a": 2}, layout={"a": "row"})})
        >>> t["w"].numpy()
        array([2., 2.], dtype=float32)
    """
    leaves, treedef = tree_flatten(tree)
    others = [tree_flatten(r)[0] for r in rest]
    for i, o in enumerate(others):
        if len(o) != len(leaves):
            raise DTypeError(f"tree_map: tree {i + 1} has {len(o)} arrays but the first has {len(leaves)}")
    return tree_unflatten(treedef, [fn(*xs) for xs in zip(leaves, *others)])


__all__ = ["tree_flatten", "tree_unflatten", "tree_map"]
