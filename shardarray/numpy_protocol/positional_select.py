"""NumPy's selections by a condition on positional arrays, composed without a gather: ``np.extract``,
``np.compress``, ``np.argwhere``, ``np.piecewise``; and ``np.repeat`` with per-entry counts, ``np.ravel`` and
``np.reshape`` in Fortran order.

Each handler registers in ``positional_compose.COMPOSED`` and builds its result from the namespace's
distributed ops (``xp.nonzero``, ``xp.take``, ``xp.repeat``, ``xp.permute_dims``, ``xp.reshape``), whose
collectives are the call's:

* ``np.extract(condition, arr)`` is ``xp.take(ravel(arr), nonzero(ravel(condition)))``, NumPy's definition: a
  condition of any shape, non-bool entries read as ``!= 0``, entries past ``arr``'s size an
  ``sa.OutOfBoundsError`` if true (NumPy's IndexError), ignored if false;
* ``np.compress(condition, a, axis)`` is the boolean take along ``axis`` (``axis=None``: of the flattened
  array); the 1-D condition may be shorter than the axis (the rest is left out) or longer with false entries
  only, as in NumPy;
* ``np.argwhere`` of a 0-d array is NumPy's ``(1, 0)`` (a true value) or ``(0, 0)`` array of int64;
* ``np.repeat(a, repeats)`` takes a list of counts (one per entry along the axis, or one for all) as NumPy
  does: the counts become a replicated array on ``a``'s mesh;
* ``np.ravel(a, order="F")`` (and ``x.flatten("F")``) is the reversed-axes transpose of ``a`` flattened;
  ``"A"`` and ``"K"`` read the array in C order, as NumPy reads a C-contiguous array (a distributed array has
  no memory order to follow).
* ``np.reshape(a, shape, order="F")`` (and ``x.reshape(shape, order="F")``) is NumPy's definition of Fortran
  order: the axes reversed, a C-order reshape to the reversed shape, the axes reversed again (distributed
  transposes and a distributed reshape, no gather); ``"A"`` is ``"C"`` (these arrays read as C-contiguous) and
  ``"K"`` raises ``ArgumentError``, as NumPy's ValueError. ``copy=False`` never raises: no result shares writable
  storage with ``a`` (``x[...] = v`` replaces blocks), as ``xp.reshape`` documents.

A condition or count list is host data NumPy takes as a Python list or a distributed array; a NumPy array there
is refused like any host array operand (``common.mixing_error``: convert it with ``xp.asarray``).

Example:
    >>> import shardarray.array_api as xp
    >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
    ...     a = xp.asarray([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    >>> np.asarray(np.extract(a > 2.5, a)), np.asarray(np.compress([False, True], a, axis=0))
    (array([3., 4., 5., 6.]), array([[4., 5., 6.]]))
    >>> np.argwhere(a[0, 0]).shape, np.asarray(np.ravel(a, order="F"))
    ((1, 0), array([1., 4., 2., 5., 3., 6.]))
    >>> np.asarray(a.reshape((3, 2), order="F"))
    array([[1., 5.],
           [4., 3.],
           [2., 6.]])
"""

from __future__ import annotations

import operator
from builtins import bool as builtins_bool
from typing import Any

import numpy as np

from ..array import ShardArray
from ..errors import ArgumentError, DimensionError, DTypeError, OutOfBoundsError
from .common import mixing_error, short
from .positional_args import axes_of, host_setting, host_value, write_out
from .positional_compose import composed


def _flat(xp: Any, a: ShardArray) -> ShardArray:
    """``a`` as 1-D (itself when it is)."""
    return a if a.ndim == 1 else xp.reshape(a, (-1,))


def _host_operand(what: str, value: Any, key: str, ref: Any) -> Exception:
    """The error for an array operand that is not a distributed array beside a distributed condition ``ref``."""
    if isinstance(value, np.ndarray):
        return mixing_error(what, value, key, ref)
    return DTypeError(f"{what}: {key} must be an array (xp.asarray(value, device=x.device)); got {short(value)}")


def _select(xp: Any, what: str, x: ShardArray, k: int, condition: Any) -> ShardArray:
    """The entries of ``x`` along axis ``k`` where the flattened ``condition`` is true (nonzero), NumPy's rule for
    a condition of another length: a shorter one leaves the rest out, a longer one may only be false past the
    axis (else ``OutOfBoundsError``, NumPy's IndexError).

    A distributed condition is a mask on the axis moved to the front (``x[mask]``: a count per device and one
    exchange of the kept entries, no gather of the condition or of ``x``); host data gives the positions on the
    host, and ``xp.take`` reads them.
    """
    cond = host_value(what, condition, "condition", x)
    n = x.shape[k]
    if isinstance(cond, ShardArray):
        c = _flat(xp, cond)
        c = c if c.dtype == np.bool_ else xp.not_equal(c, 0)
        if c.shape[0] > n:
            if bool(xp.any(c[n:])):  # (one replicated bool read)
                raise _past_end(what, n, k)
            c = c[:n]
        elif c.shape[0] < n:
            c = xp.concat([c, xp.zeros((n - c.shape[0],), dtype=xp.bool, device=x.mesh)])
        moved = xp.moveaxis(x, k, 0) if k else x
        picked = moved[c]
        return xp.moveaxis(picked, 0, k) if k else picked
    host = np.asarray(cond)
    if host.dtype.kind not in "biufc":
        raise DTypeError(f"{what}: condition must hold numbers or bools; got {short(cond)}")
    ids = np.flatnonzero(host).astype(np.int64)
    if ids.size and ids[-1] >= n:
        raise _past_end(what, n, k)
    return xp.take(x, ids, axis=k)


def _past_end(what: str, n: int, k: int) -> OutOfBoundsError:
    return OutOfBoundsError(
        f"{what}: the condition is true past the end of axis {k} (size {n}), as NumPy's IndexError; make it "
        f"false there, or at most {n} long"
    )


@composed("extract")
def _extract(xp: Any, what: str, condition: Any, arr: Any) -> Any:
    if not isinstance(arr, ShardArray):
        raise _host_operand(what, arr, "arr", condition)
    return _select(xp, what, _flat(xp, arr), 0, condition)


@composed("compress")
def _compress(xp: Any, what: str, condition: Any, a: Any, axis: Any = None, out: Any = None) -> Any:
    if not isinstance(a, ShardArray):
        raise _host_operand(what, a, "a", condition)
    cond = host_value(what, condition, "condition", a)
    if np.ndim(cond) != 1:
        raise DimensionError(f"{what}: condition must be a 1-d array (as in NumPy); got shape {np.shape(cond)}")
    x = _flat(xp, a) if axis is None or a.ndim == 0 else a  # (NumPy reads a 0-d array as 1-D here)
    (k,) = axes_of(0 if axis is None else axis, x.ndim, what)
    return write_out(out, _select(xp, what, x, k, cond), what)


@composed("piecewise")
def _piecewise(xp: Any, what: str, x: Any, condlist: Any, funclist: Any, *args: Any, **kw: Any) -> Any:
    """NumPy's ``np.piecewise``: ``y = zeros_like(x)``, then for each condition in order ``y[cond] = f(x[cond],
    *args, **kw)`` (a callable, called only where some entry is selected) or ``y[cond] = f`` (a value); with one
    function more than conditions, the last one applies where no condition holds. Boolean masks on the mesh
    (``x[cond]`` and ``y[cond] = v``: a count per device and one exchange of the selected entries, no gather)."""
    if not isinstance(x, ShardArray):
        raise _host_operand(what, x, "x", condlist)
    # NumPy's reading of condlist: a bool, or a sequence whose first entry is a scalar (a bare 1-D array, a list
    # of bools) is one condition; an array of more dims is the list of its rows
    if isinstance(condlist, (bool, np.bool_)) or (isinstance(condlist, ShardArray) and condlist.ndim == 0):
        condlist = [condlist]
    elif isinstance(condlist, ShardArray):
        condlist = [condlist] if condlist.ndim == 1 and x.ndim != 0 else list(condlist)
    elif isinstance(condlist, (list, tuple)) and condlist and x.ndim != 0:
        if not isinstance(condlist[0], (ShardArray, list, tuple)):
            condlist = [condlist]
    funcs = list(funclist) if isinstance(funclist, (list, tuple)) else [funclist]
    if len(funcs) not in (len(condlist), len(condlist) + 1):
        raise ArgumentError(
            f"{what}: with {len(condlist)} condition(s), either {len(condlist)} or {len(condlist) + 1} functions "
            f"are expected (NumPy's ValueError); got {len(funcs)}"
        )
    conds = [_condition(xp, what, c, x) for c in condlist]
    if len(funcs) == len(conds) + 1:
        rest = conds[0] if conds else xp.zeros(x.shape, dtype=xp.bool, device=x.mesh)
        for c in conds[1:]:
            rest = xp.logical_or(rest, c)
        conds.append(xp.logical_not(rest))
    y = xp.zeros_like(x)
    for cond, f in zip(conds, funcs):
        if not callable(f):
            y[cond] = f
        else:
            vals = x[cond]
            if vals.size:
                y[cond] = f(vals, *args, **kw)
    return y


def _condition(xp: Any, what: str, c: Any, x: ShardArray) -> ShardArray:
    """One condition of ``np.piecewise`` as a bool array of ``x``'s shape (NumPy's ``asarray(c, dtype=bool)``)."""
    if isinstance(c, (bool, np.bool_)):
        return xp.full(x.shape, builtins_bool(c), dtype=xp.bool, device=x.mesh)
    if isinstance(c, (list, tuple)):
        c = xp.asarray(np.asarray(c, dtype=bool), device=x.mesh)
    elif not isinstance(c, ShardArray):
        raise _host_operand(what, c, "condlist", x)
    c = c if c.dtype == np.bool_ else xp.not_equal(c, 0)
    if c.shape != x.shape:
        raise DimensionError(
            f"{what}: each condition must have x's shape {x.shape} (NumPy indexes x with it); got {c.shape}"
        )
    return c


@composed("argwhere")
def _argwhere(xp: Any, what: str, a: Any) -> Any:
    if a.ndim == 0:  # NumPy's: the indices of the 1-D view, with no columns ((1, 0) if true, (0, 0) if not)
        return xp.stack(list(xp.nonzero(xp.reshape(a, (1,)))), axis=1)[:, :0]
    return xp.stack(list(xp.nonzero(a)), axis=1)


@composed("repeat")
def _repeat(xp: Any, what: str, a: Any, repeats: Any, axis: Any = None) -> Any:
    if not isinstance(a, ShardArray):
        return NotImplemented
    counts = host_value(what, repeats, "repeats", a)
    if axis is None or a.ndim == 0:  # (NumPy reads a 0-d array as 1-D here)
        a = _flat(xp, a)
    (k,) = axes_of(0 if axis is None else axis, a.ndim, what)
    if isinstance(counts, (list, tuple)):  # host counts: the repeated positions made on the host, one take
        host = np.asarray(counts)
        if host.ndim != 1 or (host.size and host.dtype.kind not in "iub"):
            raise DTypeError(f"{what}: repeats must be an integer or a 1-D sequence of integers; got {short(counts)}")
        if host.shape[0] not in (1, a.shape[k]):
            raise DimensionError(
                f"{what}: {host.shape[0]} repeats for an axis of {a.shape[k]} entries; give one count, or one per entry"
            )
        if (host < 0).any():
            raise ArgumentError(f"{what}: repeats must be >= 0; got {short(counts)}")
        if host.shape[0] != 1:
            return xp.take(a, np.repeat(np.arange(a.shape[k], dtype=np.int64), host.astype(np.int64)), axis=k)
        counts = int(host[0])
    elif not isinstance(counts, ShardArray):
        try:
            counts = operator.index(counts)
        except TypeError:
            raise DTypeError(
                f"{what}: repeats must be an integer or a sequence of integers; got {short(counts)}"
            ) from None
    return xp.repeat(a, counts, axis=k)


@composed("ravel")
def _ravel(xp: Any, what: str, a: Any, order: str = "C") -> Any:
    if order not in ("C", "F", "A", "K", None):
        raise ArgumentError(f"{what}: order must be one of 'C', 'F', 'A' or 'K'; got {order!r}")
    if order == "F" and a.ndim > 1:
        a = xp.permute_dims(a, tuple(reversed(range(a.ndim))))
    return xp.reshape(a, (-1,))


def _reversed(xp: Any, a: ShardArray) -> ShardArray:
    """``a`` with its axes in reverse order (itself when it has at most one)."""
    return a if a.ndim < 2 else xp.permute_dims(a, tuple(reversed(range(a.ndim))))


@composed("reshape")
def _reshape(xp: Any, what: str, a: Any, shape: Any = None, order: str = "C", *, copy: bool | None = None) -> Any:
    if not isinstance(a, ShardArray):
        return NotImplemented
    if shape is None:
        raise ArgumentError(f"{what}: the new shape is required (np.reshape(a, shape))")
    shape = host_setting(shape)  # (a NumPy array of sizes: its values, as NumPy reads it)
    try:
        shape = (operator.index(shape),)
    except TypeError:
        pass
    if order not in ("C", "F", "A"):
        raise ArgumentError(
            f"{what}: order must be 'C', 'F' or 'A' (NumPy does not reshape in order 'K'); got {short(order)}"
        )
    if order != "F":
        return xp.reshape(a, shape, copy=copy)
    try:
        back = tuple(reversed(tuple(shape)))
    except TypeError:
        raise DimensionError(
            f"{what}: shape must be an integer or a sequence of integers; got {short(shape)}"
        ) from None
    return _reversed(xp, xp.reshape(_reversed(xp, a), back, copy=copy))
