"""NumPy functions on positional arrays that read memory, index arithmetic, edges, printing or a Python callback.

Each registers in ``positional_compose.COMPOSED`` (imported by ``positional_functions``). The choices for
distributed arrays:

* ``np.may_share_memory(a, b)`` / ``np.shares_memory(a, b, max_work=None)``: whether any pair of blocks may share
  (or do share) memory, asked of the backend's array module per device (``mesh.backend.xp``, inside
  ``mesh.backend.scope(d)``). A NumPy array against an Array: True only where a NumPy-backend block of the Array
  may share memory with it (``np.may_share_memory(np.asarray(x), x)`` is False: the gather is a new array); CuPy
  or meta blocks never share host memory (False). Two Arrays: their blocks on the same device (every pair for
  NumPy blocks, which all live in host memory). Nothing is read or moved: the answer is metadata.
* ``np.unravel_index(indices, shape, order="C")``: NumPy's divmod by the strides of ``shape``, elementwise on the
  distributed integer indices (a tuple of int64 Arrays of the indices' shape); an index out of bounds raises
  ``sa.OutOfBoundsError`` (NumPy's ValueError; one boolean read).
* ``np.histogram_bin_edges(a, bins=10, range=None, weights=None)``: the edges ``np.histogram`` returns (the
  namespace's ``histogram``: computed edges cost the data's min and max, an allreduce each; the counts it also
  computes cost one allreduce of the bins). ``weights`` only matter to NumPy's estimators, which are refused.
* ``np.array2string``, ``np.array_str``, ``np.array_repr``: printing the values gathers the array, so they raise
  ``sa.DTypeError`` naming the explicit gather ``x.numpy()`` (``repr(x)`` shows the metadata).
* ``np.roots(p)``: the companion matrix's eigenvalues, built from the coefficients read whole (a polynomial's
  handful; ``sa.GatherWarning`` past 64 KiB per device), ``xp.linalg.eigvals`` on it replicated.
* ``np.apply_along_axis(func1d, axis, arr, *args, **kwargs)``: NumPy's loop. ``func1d`` receives each 1-D slice
  along ``axis`` as an Array (a distributed slice: one call and one getitem per slice, so its cost grows with the
  number of slices: prefer a vectorized expression of the namespace, ``xp.sum(x, axis=axis)``, where one exists);
  its results (Arrays, or host values copied onto the array's mesh) are stacked in NumPy's order and cast to the
  first result's dtype, as NumPy's output buffer is.

Example:
    >>> import shardarray.array_api as xp
    >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
    ...     x = xp.asarray([[1.0, 5.0, 3.0], [4.0, 2.0, 6.0]])
    >>> np.may_share_memory(np.asarray(x), x), [int(i) for i in np.unravel_index(xp.argmax(x), (2, 3))]
    (False, [1, 2])
"""

from __future__ import annotations

import itertools
import math
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from ..array import ShardArray, like_kind
from ..errors import ArgumentError, DimensionError, DTypeError, OutOfBoundsError
from ..ops.creation.basic import asarray as from_host
from ..ops.indexing.route import moved_to
from .common import short
from .positional_args import axes_of, host_setting
from .positional_compose import _array, _ref, composed

# ------------------------------------------------------------------ memory


def _blocks(x: ShardArray) -> list[tuple[int, Any]]:
    """The (device, block) pairs of ``x`` held in this process (a memory query: the blocks' addresses, not their
    values, so it reads them off the tape); none on a meta mesh."""
    if not x.mesh.backend.has_data:
        return []
    return [(d, b) for d, b in enumerate(x._shards) if b is not None]


def _share(x: ShardArray, other: Any, ask: Callable[[Any, Any, Any], bool]) -> bool:
    """Whether a block of ``x`` shares memory with ``other`` (a NumPy array, or another Array) by ``ask``."""
    backend = x.mesh.backend
    if not isinstance(other, ShardArray):
        if backend.name != "numpy":  # (device or meta blocks: never host memory)
            return False
        host = np.asarray(other)
        for d, b in _blocks(x):
            with backend.scope(d):
                if ask(backend.xp, b, host):
                    return True
        return False
    if other.mesh.backend.name != backend.name:
        return False
    theirs = _blocks(other)
    for d, b in _blocks(x):
        for e, c in theirs:
            if backend.name == "numpy" or (d == e and other.mesh.backend is backend):
                with backend.scope(d):
                    if ask(backend.xp, b, c):
                        return True
    return False


def _memory(what: str, a: Any, b: Any, ask: Callable[[Any, Any, Any], bool]) -> bool:
    if isinstance(a, ShardArray):
        return _share(a, b, ask)
    if isinstance(b, ShardArray):
        return _share(b, a, ask)
    raise DTypeError(f"{what}: neither operand is an Array; got {short(a)} and {short(b)}")


@composed("may_share_memory")
def _may_share_memory(xp: Any, what: str, a: Any, b: Any, max_work: Any = None) -> bool:
    return _memory(what, a, b, lambda m, u, v: bool(m.may_share_memory(u, v, max_work=max_work)))


@composed("shares_memory")
def _shares_memory(xp: Any, what: str, a: Any, b: Any, max_work: Any = None) -> bool:
    return _memory(what, a, b, lambda m, u, v: bool(m.shares_memory(u, v, max_work=max_work)))


# ------------------------------------------------------------------ index arithmetic and edges


@composed("unravel_index")
def _unravel_index(xp: Any, what: str, indices: Any, shape: Any, order: str = "C") -> tuple[Any, ...]:
    """NumPy's ``unravel_index``: ``(indices // stride_k) % shape[k]`` for each axis ``k`` (C or F strides)."""
    idx = _array(xp, what, indices, "indices", _ref(indices))
    try:
        dims = tuple(operator.index(n) for n in np.atleast_1d(host_setting(shape)))
    except TypeError:
        raise DTypeError(f"{what}: shape must be a tuple of integers; got {short(shape)}") from None
    if order not in ("C", "F"):
        raise ArgumentError(f"{what}: order must be 'C' or 'F'; got {order!r:.40}")
    if np.dtype(idx.dtype).kind not in "iu":
        raise DTypeError(
            f"{what}: indices must be integers (NumPy: only int indices permitted); got {idx.dtype}. Cast them "
            f"first with xp.astype(indices, xp.int64)"
        )
    if any(n < 0 for n in dims):
        raise ArgumentError(f"{what}: shape {dims} has a negative dimension")
    size = math.prod(dims)
    idx = xp.astype(idx, xp.int64) if idx.dtype != np.int64 else idx
    if idx.size and bool(xp.any(xp.logical_or(idx < 0, idx >= size))):
        raise OutOfBoundsError(
            f"{what}: an index of the array of shape {idx.shape} is out of bounds for an array of size {size} "
            f"(shape {dims}); the indices must lie in [0, {size})"
        )
    strides = [math.prod(dims[k + 1 :]) if order == "C" else math.prod(dims[:k]) for k in range(len(dims))]
    return tuple(idx // s % n if n > 0 else idx for s, n in zip(strides, dims, strict=True))


@composed("histogram_bin_edges")
def _histogram_bin_edges(xp: Any, what: str, a: Any, bins: Any = 10, range: Any = None, weights: Any = None) -> Any:
    x = _array(xp, what, a, "a", _ref(a, bins))
    if weights is not None:
        w = _array(xp, what, weights, "weights", x)
        if w.shape != x.shape:
            raise DimensionError(f"{what}: weights of shape {w.shape} differ from the array's {x.shape}")
    return xp.histogram(x, bins=bins, range=range)[1]


# ------------------------------------------------------------------ printing


def _printing(xp: Any, what: str, a: Any, *args: Any, **kwargs: Any) -> Any:
    raise DTypeError(
        f"{what}: printing the values of {short(a)} would gather the distributed array; gather it explicitly with "
        f"{what}(x.numpy(), ...) (repr(x) shows the metadata without a gather)"
    )


for _name in ("array2string", "array_str", "array_repr"):
    composed(_name)(_printing)


# ------------------------------------------------------------------ a Python callback per slice


@composed("apply_along_axis")
def _apply_along_axis(xp: Any, what: str, func1d: Any, axis: Any, arr: Any, *args: Any, **kwargs: Any) -> Any:
    a = _array(xp, what, arr, "arr", _ref(arr))
    (k,) = axes_of(axis, a.ndim, what)
    moved = xp.moveaxis(a, k, -1)
    outer = moved.shape[:-1]
    if any(n == 0 for n in outer):
        raise ArgumentError(
            f"{what}: the array of shape {a.shape} has an empty axis besides axis {k}, so there is no slice to "
            f"call func1d on (NumPy's ValueError: cannot apply_along_axis when any iteration dimensions are 0)"
        )
    results: list[ShardArray] = []
    for idx in itertools.product(*map(range, outer)):
        got = func1d(moved[idx], *args, **kwargs)
        r = got if isinstance(got, ShardArray) else xp.asarray(np.asarray(got), device=a.mesh)
        if results and r.shape != results[0].shape:
            raise DimensionError(
                f"{what}: func1d returned shapes {results[0].shape} and {r.shape} for two slices; NumPy needs one "
                f"shape for every slice"
            )
        results.append(r if not results or r.dtype == results[0].dtype else xp.astype(r, results[0].dtype))
    rshape = results[0].shape
    out = xp.reshape(xp.stack(results, axis=0), (*outer, *rshape))
    n, m = len(outer), len(rshape)
    perm = (*range(k), *range(n, n + m), *range(k, n))
    return out if perm == tuple(range(n + m)) else xp.permute_dims(out, perm)


# ------------------------------------------------------------------ polynomial roots


@composed("roots")
def _roots(xp: Any, what: str, p: Any) -> Any:
    """``np.roots(p)``: the eigenvalues of the companion matrix of ``p``'s coefficients (highest power first), as
    NumPy's, with NumPy's trimming (leading zeros dropped, trailing zeros roots at 0) and dtype (complex only when
    a root is: one boolean read). The coefficients, a polynomial's handful, are brought whole to every device
    (``moved_to``: ``sa.GatherWarning`` past 64 KiB per device) and read to the host, which builds the companion
    matrix; ``xp.linalg.eigvals`` runs on it replicated (no communication), and the roots come back replicated."""
    c = _array(xp, what, p, "p", _ref(p))
    if c.ndim != 1:
        raise DimensionError(f"{what}: the coefficients must be a 1-D array; got shape {c.shape}")
    host = moved_to(what, c, [()], "np.roots reads its coefficients whole").numpy()
    nz = np.flatnonzero(host)
    trailing = 0 if nz.size == 0 else host.size - 1 - int(nz[-1])
    host = host[int(nz[0]) : int(nz[-1]) + 1] if nz.size else host[:0]
    dt = np.result_type(host.dtype, np.float64)
    n = max(host.size - 1, 0)
    companion = np.eye(n, k=-1, dtype=dt)
    if n:
        companion[0, :] = -host[1:] / host[0]

    def replicated(values: np.ndarray) -> Any:
        return like_kind(from_host(values, dims=tuple(f"dim{k}" for k in range(values.ndim)), mesh=c.mesh), c)

    roots = xp.linalg.eigvals(replicated(companion)) if n else replicated(np.zeros(0, dtype=np.complex128))
    if not bool(xp.any(xp.imag(roots) != 0)):
        roots = xp.real(roots)
    return xp.concat([roots, replicated(np.zeros(trailing, dtype=roots.dtype))]) if trailing else roots
