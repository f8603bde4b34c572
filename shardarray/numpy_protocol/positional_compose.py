"""The registry of NumPy functions composed from the namespace's functions, and the operand helpers they share.

A NumPy function without a same-named counterpart in ``shardarray.array_api`` (``np.vstack``, ``np.isclose``,
``np.average``) has a handler in ``COMPOSED[(submodule, name)]``, registered with ``@composed(name)``. Each handler
takes ``(xp, what, *numpy_args, **numpy_kwargs)`` with NumPy's signature and builds the result from ``xp``
functions only (their collectives are the call's; nothing is gathered). Where NumPy's semantics need a choice for
distributed arrays, the choice is an experienced NumPy user's; each module names its own. The handlers live by
category:

* ``positional_shapes``: metadata (``np.shape``, ``np.ndim``, ``np.size``), axes (``np.transpose``,
  ``np.swapaxes``, ``np.atleast_2d``), joining and splitting (``np.vstack``, ``np.split``, ``np.append``),
  flips, ``np.trace``/``np.diagonal``/``np.cross``;
* ``positional_creation``: ``np.linspace``/``np.logspace``/``np.geomspace``/``np.meshgrid`` of arrays, and
  NEP 35's ``like=`` creation (``np.array(obj, like=x)``, ``np.fromfunction``);
* ``positional_compare``: ``np.isclose``, ``np.allclose``, ``np.array_equal``, ``np.array_equiv``;
* ``positional_indexing``: ``np.where``, ``np.take``, ``np.flatnonzero``, ``np.put_along_axis``;
* ``positional_elementwise``: ``np.round``, ``np.copy``, ``np.emath``;
* ``positional_reductions``: ``np.ptp``, ``np.average``, ``np.unique``;
* ``positional_dots`` (``np.dot``: ``matmul`` for arrays of at most 2 dims, ``tensordot`` over the last axis
  of ``a`` and the second-to-last of ``b`` above, NumPy's definition; the other products, ``np.einsum``,
  ``np.choose``), ``positional_select``, ``positional_linalg``, ``positional_extras``, ``positional_writes``
  and ``ndarray_views``.

Each registers when imported (``positional_functions`` imports the categories above, ``positional_dots``,
``positional_extras`` and ``positional_writes``; the package's ``__init__`` the others), and
``positional_functions`` looks NumPy's calls up in ``COMPOSED``. The operand helpers (``_array``, ``_arrays``)
keep the dtype of NumPy scalars and 0-d arrays (NEP 50: ``np.hstack((x, np.int16(1)))`` is int16 for an int16
``x``) and refuse host lists (no implicit copy onto the mesh, as CuPy and JAX refuse it).

Example:
    >>> import shardarray.array_api as xp
    >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
    ...     a = xp.asarray([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    >>> np.vstack([a, a]).shape, np.asarray(np.dot(a, a.T))[0], np.allclose(a, a + 1e-9)
    ((6, 2), array([ 5., 11., 17.]), True)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

import numpy as np

from ..array import ShardArray
from ..errors import DTypeError
from .common import short
from .positional_args import host_value, is_neutral, refuse

#: (NumPy submodule, NumPy name) -> handler(xp, what, *args, **kwargs)
COMPOSED: dict[tuple[str, str], Callable[..., Any]] = {}


def composed(*names: str, space: str = "") -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register a handler for ``np[.space].<name>`` for each of ``names``."""

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        for name in names:
            COMPOSED[(space, name)] = fn
        return fn

    return register


def _array(xp: Any, what: str, value: Any, i: int | str, ref: Any) -> ShardArray:
    """An operand as an array of the namespace: arrays as they are, Python/NumPy scalars as 0-d arrays (a NumPy
    scalar or 0-d array keeps its dtype, as NumPy's ``asanyarray`` does: ``np.hstack((x, np.int16(1)))``)."""
    if isinstance(value, np.generic) or (isinstance(value, np.ndarray) and value.ndim == 0):
        return cast(ShardArray, xp.asarray(value, device=ref.mesh))
    value = host_value(what, value, i, ref)
    if isinstance(value, ShardArray):
        return value
    if isinstance(value, (bool, int, float, complex)):
        return xp.asarray(value, device=ref.mesh)
    if isinstance(value, (list, tuple)):
        raise DTypeError(
            f"{what}: operand {i} is a Python {type(value).__name__} ({len(value)} items): host data does not mix "
            f"with an Array implicitly (that would copy it onto the mesh), as CuPy and JAX refuse it too. Convert it "
            f"with xp.asarray(values, device=x.device) (import shardarray.array_api as xp)"
        )
    raise DTypeError(f"{what}: operand {i} must be an array or a scalar; got {short(value)}")


def _ref(*values: Any) -> Any:
    """The first distributed array among ``values`` (searching one level into sequences)."""
    for v in values:
        if isinstance(v, ShardArray):
            return v
        if isinstance(v, (list, tuple)):
            found = _ref(*v)
            if found is not None:
                return found
    return None


def _arrays(xp: Any, what: str, values: Sequence[Any]) -> list[ShardArray]:
    ref = _ref(*values)
    return [_array(xp, what, v, i, ref) for i, v in enumerate(values)]


def _no_kwargs(what: str, **kwargs: Any) -> None:
    for key, value in kwargs.items():
        if not is_neutral(key, value):
            raise refuse(what, key, value)
