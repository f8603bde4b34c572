"""The default mesh: the mesh that positional creation functions (``shardarray.array_api``) use.

Looked up in this order:

1. the innermost ``with sa.default_mesh(mesh):`` block of this thread (a
   ``contextvars`` variable: each thread, and each asyncio task, has its own);
2. the process-wide mesh of ``sa.set_default_mesh(mesh)``;
3. the environment variable ``SHARDARRAY_MESH`` (``"row=2,col=2"``: axis
   names and sizes, an emulated mesh with NumPy shards), read when it is
   needed, so a change of the variable takes effect on the next lookup;
4. else one NumPy device, ``sa.Mesh({"d": 1})``.

Example:
    >>> mesh = sa.Mesh({"row": 2, "col": 2})
    >>> with sa.default_mesh(mesh):
    ...     sa.get_default_mesh().shape
    {'row': 2, 'col': 2}
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from .errors import MeshError
from .mesh import Mesh

ENV = "SHARDARRAY_MESH"
_EXAMPLE = 'SHARDARRAY_MESH="row=2,col=2"'

_CONTEXT: ContextVar[Mesh | None] = ContextVar("shardarray_default_mesh", default=None)
_GLOBAL: list[Mesh | None] = [None]  # set_default_mesh's mesh (process-wide)
_LOCK = threading.Lock()
_ENV_CACHE: dict[str, Mesh] = {}  # SHARDARRAY_MESH text -> its mesh (one Mesh per spelling)


def _require_mesh(mesh: object, what: str) -> Mesh:
    if not isinstance(mesh, Mesh):
        raise MeshError(
            f"{what} needs a sa.Mesh; got {type(mesh).__name__} {mesh!r:.60}. "
            f"Make one with sa.Mesh({{'row': 2, 'col': 2}})"
        )
    return mesh


@contextmanager
def default_mesh(mesh: Mesh) -> Iterator[Mesh]:
    """Make ``mesh`` the default mesh inside a ``with`` block (this thread only; blocks nest).

    Args:
        mesh: the mesh positional creation functions use inside the block.

    Yields:
        ``mesh``.

    Raises:
        MeshError: when ``mesh`` is not a ``sa.Mesh``.

    Example:
        >>> outer, inner = sa.Mesh({"row": 2, "col": 2}), sa.Mesh({"all": 4})
        >>> with sa.default_mesh(outer):
        ...     with sa.default_mesh(inner):
        ...         print(sa.get_default_mesh().shape)
        ...     print(sa.get_default_mesh().shape)
        {'all': 4}
        {'row': 2, 'col': 2}
    """
    token = _CONTEXT.set(_require_mesh(mesh, "sa.default_mesh(mesh)"))
    try:
        yield mesh
    finally:
        _CONTEXT.reset(token)


def set_default_mesh(mesh: Mesh | None) -> None:
    """Set the process-wide default mesh (every thread); ``None`` clears it.

    A ``with sa.default_mesh(...)`` block still takes precedence inside it.

    Raises:
        MeshError: when ``mesh`` is neither a ``sa.Mesh`` nor None.

    Example:
        >>> sa.set_default_mesh(sa.Mesh({"row": 2, "col": 2}))
        >>> sa.get_default_mesh().shape
        {'row': 2, 'col': 2}
        >>> sa.set_default_mesh(None)
    """
    with _LOCK:
        _GLOBAL[0] = None if mesh is None else _require_mesh(mesh, "sa.set_default_mesh(mesh)")


def parse_mesh_env(text: str) -> dict[str, int]:
    """``"row=2,col=2"`` -> ``{"row": 2, "col": 2}``; MeshError naming ``SHARDARRAY_MESH`` otherwise.

    Example:
        >>> from shardarray.default_mesh import parse_mesh_env
        >>> parse_mesh_env("x=3, y=2")
        {'x': 3, 'y': 2}
    """
    shape: dict[str, int] = {}
    items = [t.strip() for t in text.split(",")]
    if not text.strip() or any(not t for t in items):
        raise MeshError(
            f"{ENV}={text!r} is malformed: it lists mesh axes as name=size separated by commas, e.g. {_EXAMPLE}"
        )
    for item in items:
        name, eq, size = (s.strip() for s in item.partition("="))
        if not eq or not name or not name.isidentifier():
            raise MeshError(
                f"{ENV}={text!r}: {item!r} is not name=size (an identifier, '=', an integer); e.g. {_EXAMPLE}"
            )
        try:
            n = int(size)
        except ValueError:
            raise MeshError(
                f"{ENV}={text!r}: the size {size!r} of mesh axis {name!r} is not an integer; e.g. {_EXAMPLE}"
            ) from None
        if n < 1:
            raise MeshError(f"{ENV}={text!r}: mesh axis {name!r} has size {n}; sizes are >= 1, e.g. {_EXAMPLE}")
        if name in shape:
            raise MeshError(f"{ENV}={text!r}: mesh axis {name!r} appears twice; name each axis once, e.g. {_EXAMPLE}")
        shape[name] = n
    return shape


def get_default_mesh() -> Mesh:
    """The default mesh: the innermost ``sa.default_mesh`` block, else ``sa.set_default_mesh``'s, else the
    environment's ``SHARDARRAY_MESH`` (NumPy backend), else one device ``sa.Mesh({"d": 1})``.

    Raises:
        MeshError: when ``SHARDARRAY_MESH`` is set but malformed (the message names it and gives an example).

    Example:
        >>> isinstance(sa.get_default_mesh(), sa.Mesh)   # {'d': 1} when nothing is set
        True
    """
    mesh = _CONTEXT.get()
    if mesh is not None:
        return mesh
    mesh = _GLOBAL[0]
    if mesh is not None:
        return mesh
    text = os.environ.get(ENV, "").strip() or "d=1"
    with _LOCK:
        cached = _ENV_CACHE.get(text)
        if cached is None:
            cached = _ENV_CACHE[text] = Mesh(parse_mesh_env(text), backend="numpy")
        return cached
