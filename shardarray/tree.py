"""Trees of arrays (dicts, lists, tuples, namedtuples nested): flatten to a list of leaves and back.

Used by ``value_and_grad`` (params and grads share one structure) and by the
optimizers (state mirrors the params). Two trees are paired **by key path**
(dict keys, list and tuple indices, namedtuple fields), never by position: a
dict with the same keys in another order pairs each leaf with the leaf of the
same name, and trees that differ raise an error naming the first path where
they differ and what each tree has there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from .array import ShardArray
from .errors import ArgumentError, DTypeError

TreeDef = Any


def _is_namedtuple(node: Any) -> bool:
    return isinstance(node, tuple) and hasattr(type(node), "_fields")


def _children(node: Any) -> Iterator[tuple[Any, str]]:
    """``(key, path suffix)`` of each child of a container, in its order."""
    if isinstance(node, dict):
        for k in node:
            yield k, f"[{k!r}]"
    elif _is_namedtuple(node):
        for i, f in enumerate(node._fields):
            yield i, f".{f}"
    else:
        for i in range(len(node)):
            yield i, f"[{i}]"


def _container(node: Any) -> bool:
    return isinstance(node, (dict, list, tuple))


#: plain (non-array) leaves that ``tree_map`` walks: the optimizer state's int ``step``, hyperparameters, names
PLAIN = (bool, int, float, complex, str, np.generic)


def _plain(node: Any) -> bool:
    return isinstance(node, PLAIN)


def _describe(node: Any) -> str:
    """What a tree holds at one place, in words (for error messages)."""
    if isinstance(node, ShardArray):
        return f"an array {node.sizes} {node.dtype}"
    if node is None:
        return "None"
    if isinstance(node, dict):
        keys = list(node)
        shown = ", ".join(repr(k) for k in keys[:6]) + (", ..." if len(keys) > 6 else "")
        return f"a dict with keys [{shown}]"
    if _is_namedtuple(node):
        return f"a {type(node).__name__} namedtuple with fields {node._fields}"
    if isinstance(node, list):
        return f"a list of {len(node)}"
    if isinstance(node, tuple):
        return f"a tuple of {len(node)}"
    return f"a {type(node).__name__} ({node!r:.40})"


def _not_allowed(node: Any, path: str) -> DTypeError:
    return DTypeError(
        f"{path} is a {type(node).__name__}; a tree of arrays may only hold ShardArrays in dicts, "
        f"lists and tuples (pass other values as separate arguments)"
    )


def tree_flatten(tree: Any, what: str = "params", plain: bool = False) -> tuple[list[Any], TreeDef]:
    """The ShardArray leaves of ``tree`` in a fixed order, and its structure.

    With ``plain=True`` plain values (ints, floats, bools, strings, NumPy
    scalars) are leaves too and ``None`` is an empty subtree (as in JAX);
    otherwise only ShardArrays may be leaves (what gradients and optimizers need).

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> leaves, treedef = sa.tree.tree_flatten({"w": sa.zeros(mesh, {"a": 2}), "b": [sa.ones(mesh, {"a": 2})]})
        >>> len(leaves), treedef
        (2, {'w': '*', 'b': ['*']})
    """
    leaves: list[Any] = []
    return leaves, _flatten(tree, what, leaves, plain)


# The walks are module functions, not closures that call themselves: such a closure is a reference cycle that keeps
# what it reads (the leaves: a step's parameters and gradients) for the garbage collector instead of freeing them.


def _flatten(node: Any, path: str, leaves: list[Any], plain: bool) -> TreeDef:
    """``tree_flatten``'s walk: ``node``'s structure, its leaves appended to ``leaves``."""
    if isinstance(node, ShardArray) or (plain and _plain(node)):
        leaves.append(node)
        return "*"
    if plain and node is None:
        return None
    if isinstance(node, dict):
        return {k: _flatten(v, f"{path}[{k!r}]", leaves, plain) for k, v in node.items()}
    if isinstance(node, (list, tuple)):
        defs = [_flatten(v, path + suffix, leaves, plain) for v, (_, suffix) in zip(node, _children(node))]
        return defs if isinstance(node, list) else (type(node), tuple(defs))
    raise _not_allowed(node, path)


def tree_paths(tree: Any, what: str = "params") -> list[str]:
    """The path of every leaf of ``tree``, in ``tree_flatten``'s order.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> sa.tree.tree_paths({"w": sa.zeros(mesh, {"a": 2}), "b": [sa.ones(mesh, {"a": 2})]})
        ["params['w']", "params['b'][0]"]
    """
    paths: list[str] = []
    _paths(tree, what, paths)
    return paths


def _paths(node: Any, path: str, paths: list[str]) -> None:
    """``tree_paths``'s walk."""
    if isinstance(node, ShardArray):
        paths.append(path)
    elif _container(node):
        for key, suffix in _children(node):
            _paths(node[key], path + suffix, paths)
    else:
        raise _not_allowed(node, path)


def tree_unflatten(treedef: TreeDef, leaves: list[Any]) -> Any:
    """Rebuild a tree of ``treedef``'s structure from ``leaves`` (inverse of ``tree_flatten``)."""
    # an ArgumentError when the leaves are more or fewer than the places (as JAX's ValueError); a DTypeError
    # (from _pair) when treedef is not a structure tree_flatten returns
    it = iter(leaves)
    try:
        tree = _build(treedef, it)
        if next(it, _END) is _END:
            return tree
    except StopIteration:  # fewer leaves than places
        pass
    given = len(leaves) if hasattr(leaves, "__len__") else "another number of"
    raise ArgumentError(f"tree_unflatten: the structure has {_places(treedef)} leaves; got {given} leaves")


_END = object()  # the end of the leaves, for tree_unflatten


def _build(d: TreeDef, it: Iterator[Any]) -> Any:
    """``tree_unflatten``'s walk: the subtree of ``d``, its leaves taken from ``it`` in order."""
    if isinstance(d, str):
        return next(it)
    if d is None:
        return None
    if isinstance(d, dict):
        return {k: _build(v, it) for k, v in d.items()}
    if isinstance(d, list):
        return [_build(v, it) for v in d]
    cls, defs = _pair(d)
    items = [_build(v, it) for v in defs]
    return cls(*items) if hasattr(cls, "_fields") else cls(items)


def _pair(d: TreeDef) -> tuple[type, tuple[TreeDef, ...]]:
    """A tuple's treedef ``(tuple type, item treedefs)``; anything else is not a treedef."""
    ok = isinstance(d, tuple) and len(d) == 2 and isinstance(d[0], type) and issubclass(d[0], tuple)
    if not (ok and isinstance(d[1], tuple)):
        raise DTypeError(f"tree_unflatten: {d!r:.80} is not a tree structure; pass the treedef tree_flatten returns")
    return d


def _places(d: TreeDef) -> int:
    """How many leaves the structure ``d`` holds."""
    if isinstance(d, str):
        return 1
    if d is None:
        return 0
    if isinstance(d, dict):
        return sum(_places(v) for v in d.values())
    if isinstance(d, list):
        return sum(_places(v) for v in d)
    return sum(_places(v) for v in _pair(d)[1])


def tree_leaves_like(
    like: Any, tree: Any, what: str = "tree", like_what: str = "params", hint: str = "", plain: bool = False
) -> list[Any]:
    """The leaves of ``tree`` in the order of ``like``'s leaves, paired by key path.

    With ``plain=True`` a plain value of ``like`` (see ``tree_flatten``) pairs
    with a plain value of ``tree`` and ``None`` with ``None``. Dict keys are
    matched by name (their order may differ), list and tuple
    items by index, namedtuple items by field.

    Raises:
        DTypeError: the trees differ (a missing or extra key, another container
            type or length, a leaf against a subtree, a non-array leaf); the
            message names the first path where they differ and what each has.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> a, b = sa.zeros(mesh, {"a": 2}), sa.ones(mesh, {"a": 2})
        >>> leaves = sa.tree.tree_leaves_like({"w": a, "b": b}, {"b": b * 3.0, "w": a + 1.0}, "grads")
        >>> [float(x.numpy()[0]) for x in leaves]
        [1.0, 3.0]
    """
    out: list[ShardArray] = []

    def differ(path: str, mine: str, theirs: str) -> DTypeError:
        return DTypeError(
            f"{what} differs in structure from {like_what} at {what}{path}: {like_what} has {mine} there, "
            f"{what} has {theirs}" + (f". {hint}" if hint else "")
        )

    def walk(a: Any, b: Any, path: str) -> None:
        if plain and (_plain(a) or a is None):
            if (a is None) != (b is None) or not (b is None or _plain(b)):
                raise differ(path, _describe(a), _describe(b))
            if a is not None:
                out.append(b)
            return
        if isinstance(a, ShardArray):
            if isinstance(b, ShardArray):
                out.append(b)
                return
            if not _container(b):
                raise differ(path, _describe(a), _describe(b) + "; a tree of arrays may only hold ShardArrays")
            raise differ(path, _describe(a), _describe(b))
        if not _container(a):
            raise _not_allowed(a, like_what + path)
        same_kind = (isinstance(a, dict) and isinstance(b, dict)) or (type(a) is type(b) and not isinstance(a, dict))
        if not same_kind:
            raise differ(path, _describe(a), _describe(b))
        if isinstance(a, dict):
            for k in a:
                if k not in b:
                    raise differ(f"{path}[{k!r}]", _describe(a[k]), f"nothing (no key {k!r})")
                walk(a[k], b[k], f"{path}[{k!r}]")
            for k in b:
                if k not in a:
                    raise differ(f"{path}[{k!r}]", f"nothing (no key {k!r})", _describe(b[k]))
            return
        for key, suffix in _children(a):
            if key >= len(b):
                raise differ(path + suffix, _describe(a[key]), f"nothing ({_describe(b)})")
            walk(a[key], b[key], path + suffix)
        if len(b) > len(a):
            suffix = f"[{len(a)}]"
            raise differ(path + suffix, f"nothing ({_describe(a)})", _describe(b[len(a)]))

    try:
        walk(like, tree, "")
    finally:
        walk = None  # type: ignore[assignment]  # (a closure that calls itself is a cycle: break it, see _flatten)
    return out


def tree_map(fn: Callable[..., Any], tree: Any, *rest: Any) -> Any:
    """``fn`` applied leaf by leaf to ``tree`` and trees of the same structure, paired by key path.

    Leaves are ShardArrays and plain values (ints, floats, bools, strings,
    NumPy scalars: e.g. the optimizer state's ``step``), as in JAX; ``None``
    is an empty subtree and stays ``None``. The result has ``tree``'s structure and key order; the other trees may
    hold their dict keys in any order.

    Raises:
        DTypeError: another tree differs from ``tree``; the message names the
            first differing path (e.g. ``tree 1['layer1.ln1.gain']``).

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> t = sa.tree.tree_map(lambda x: x * 2, {"w": sa.ones(mesh, {"a": 2}, layout={"a": "row"})})
        >>> t["w"].numpy()
        array([2., 2.], dtype=float32)
    """
    if not callable(fn):
        raise DTypeError(f"tree_map takes a function of the leaves first; got {type(fn).__name__} {fn!r:.60}")
    leaves, treedef = tree_flatten(tree, "tree 0", plain=True)
    others = []
    for i, r in enumerate(rest, start=1):
        try:
            others.append(
                tree_leaves_like(
                    tree,
                    r,
                    f"tree {i}",
                    "tree 0",
                    hint="Give every tree the structure of the first (the same keys, "
                    "containers and lengths; dict keys may be in any order)",
                    plain=True,
                )
            )
        except DTypeError as e:
            counts = _count(r)
            if counts is not None and counts != len(leaves):
                raise DTypeError(
                    f"tree_map: {e} (in all, tree {i} has {counts} arrays but the first has {len(leaves)})"
                ) from None
            raise DTypeError(f"tree_map: {e}") from None
    return tree_unflatten(treedef, [fn(*xs) for xs in zip(leaves, *others)])


def _count(tree: Any) -> int | None:
    try:
        return len(tree_flatten(tree, plain=True)[0])
    except DTypeError:
        return None


__all__ = ["tree_flatten", "tree_leaves_like", "tree_map", "tree_paths", "tree_unflatten"]
