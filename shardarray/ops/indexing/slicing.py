"""Selecting along named dims: ``isel`` (ints, slices, integer arrays) and its pieces.

* a **slice** of an unsplit dim is a local slice of every block; slices of
  split dims are ``slice_box.slice_dims``: one ``alltoallv`` over the axes of
  every split dim whose selected entries change device, rebalancing them into
  the canonical ceil-block layout, each device sending at most its own block
  (never the whole dim; none when every selected entry stays put);
* an **int** drops the dim: on an unsplit dim a local pick; on a split dim
  the row lies in one device's block, which **broadcasts** it over the dim's
  axes (one row per device, ``elements`` = the row), except on a dim of
  size 1, where the int is ``sa.squeeze``: the dim's axes move onto the
  remaining dim with the largest block by one alltoall (the result stays
  split, each device receiving only its new block);
* an **integer array** (a list, a NumPy array or an integer ShardArray) is
  ``sa.take``: on a split dim each device picks the ids in its block and the
  pending sum is resolved by one allreduce of the result over the dim's axes.

Negative ints, ids and slice bounds count from the end as in NumPy; an int
or id out of range raises ``DimensionError``. A 1-D boolean mask for a dim
selects along it (``ops/indexing/mask.py``: an allgather of counts and one alltoallv).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ...array import ShardArray
from ...core.common import require_array
from ...core.relayout import resolve_to
from ...core.tape import boundary
from ...errors import ArgumentError, DimensionError, DTypeError, IndexingError, IndexTypeError, OutOfBoundsError
from ..creation.basic import asarray
from ..elementwise import arithmetic as ew
from ..manipulation.concat import new_dim
from ..manipulation.dims import squeeze
from ..manipulation.structure import rename, transpose
from .basic import host_ids, normalize_int, normalize_slice, pick, slice_dim
from .mask import select_along
from .slice_box import slice_dims
from .take import take


def _take_ids(x: ShardArray, dim: str, ids: Any) -> ShardArray:
    """``x`` indexed along ``dim`` by integer ids (list, NumPy or ShardArray): ``sa.take`` + resolve."""
    n = x.sizes[dim]
    if isinstance(ids, ShardArray):
        if ids.dtype.kind == "b":
            return select_along(x, dim, ids)
        if ids.dtype.kind not in "iu":
            raise DTypeError(
                f"ids {ids.sizes} indexing dim {dim!r} must be integers; got {ids.dtype}; use ids.astype('int64')"
            )
        tmp = ids if dim not in ids.dims else rename(ids, {dim: f"{dim}__ids"})
        tmp = ew.where(ew.less(tmp, 0), ew.add(tmp, n), tmp)
    else:
        arr = np.asarray(ids)
        if arr.ndim > 1:  # a list or NumPy array names no dims for its own axes: flattening it was silently wrong
            raise DimensionError(
                f"isel: ids for dim {dim!r} of the array {x.sizes} given as a list or NumPy array must be 1-D; got "
                f"shape {arr.shape}. Give a ShardArray of ids with named dims (sa.asarray(ids, dims=(...), "
                f"mesh=x.mesh)), whose dims take the place of {dim!r}"
            )
        if arr.dtype.kind == "b":
            return select_along(x, dim, arr)
        if arr.dtype.kind not in "iu" and arr.size:
            raise DTypeError(f"ids {ids!r:.60} indexing dim {dim!r} must be integers; got {arr.dtype}; use int indices")
        arr = host_ids(arr).reshape(-1)
        bad = arr[(arr < -n) | (arr >= n)]
        if bad.size:
            raise OutOfBoundsError(
                f"index {int(bad[0])} is out of range for dim {dim!r} of size {n} "
                f"(array {x.sizes}); use 0..{n - 1} or -{n}..-1"
            )
        arr = np.where(arr < 0, arr + n, arr)
        tmp = asarray(arr, dims=(f"{dim}__ids",), mesh=x.mesh)
    out = take(x, tmp, dim)
    out = resolve_to(out) if out.pending else out
    renamed = f"{dim}__ids" in out.dims
    if renamed:
        out = rename(out, {f"{dim}__ids": dim})
    ids_dims = tuple(dim if d == f"{dim}__ids" else d for d in tmp.dims)
    own = tuple(d for d in ids_dims if d not in x.dims or d == dim)
    order: list[str] = []
    for d in x.dims:
        if d == dim:
            order.extend(own)
        elif d in out.dims and d not in order:
            order.append(d)
    return transpose(out, tuple(order))


@boundary
def isel(x: ShardArray, indexers: Mapping[str, Any] | None = None, /, **dims: Any) -> ShardArray:
    """Select along named dims: ``{dim: int | slice | integer ids}``.

    An int drops its dim; a slice (any step, negative too) keeps it; integer
    ids (a list, a NumPy array or an integer ShardArray, whose dims take the
    place of ``dim``) pick entries. See the module docstring for the
    collectives: the slices of split dims are one ``alltoallv`` together (traffic
    at most the device's block; none when nothing changes device), ints of split dims one ``broadcast`` of the row
    (of split size-1 dims one ``alltoall``: ``sa.squeeze``, the result stays split),
    ids of split dims one ``allreduce`` of the result. Nothing is gathered.

    Args:
        x: the array.
        indexers: ``{dim: index}`` (or give them as keywords).

    Raises:
        DimensionError: an unknown dim, or an int/id out of range.
        DTypeError: a float index. ArgumentError: step 0, a boolean mask.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.arange(24.0).reshape(6, 4), dims=("batch", "seq"), mesh=mesh,
        ...                layout={"batch": "row", "seq": "col"})
        >>> y = x.isel(batch=slice(0, 4), seq=3)
        >>> y.dims, y.numpy()
        (('batch',), array([ 3.,  7., 11., 15.]))
    """
    x = require_array(x, "isel")
    items = dict(indexers or {})
    for k, v in dims.items():
        if k in items:
            raise DimensionError(f"isel: dim {k!r} is given twice")
        items[k] = v
    for d in items:
        if not isinstance(d, str) or d not in x.dims:
            raise DimensionError(
                f"isel: {d!r} is not a dim of the array; its dims are {x.sizes}: index one of those names"
            )
    checked: list[tuple[str, str, Any]] = []
    for d, v in items.items():  # validate everything before moving any data
        if isinstance(v, slice):
            checked.append(("slice", d, normalize_slice(x, d, v)))
        elif isinstance(v, (bool, np.bool_)):
            raise ArgumentError(
                f"isel: boolean index {v!r} for dim {d!r} is not an index; use an int, a slice, "
                f"or a boolean mask array of the dim's length"
            )
        elif isinstance(v, (int, np.integer)) or (
            isinstance(v, np.ndarray) and v.ndim == 0 and v.dtype.kind in "iu"
        ):  # a 0-d NumPy integer array is an int, as in NumPy (the dim goes)
            checked.append(("int", d, normalize_int(x, d, int(v))))
        elif isinstance(v, (float, np.floating, complex)):
            raise IndexTypeError(f"isel: index {v!r} for dim {d!r} is not an integer; use int({v!r}) or a slice")
        elif isinstance(v, (ShardArray, list, tuple, np.ndarray)):
            checked.append(("ids", d, v))
        else:
            raise IndexTypeError(
                f"isel: index {v!r:.60} for dim {d!r} must be an int, a slice or integer ids; got {type(v).__name__}"
            )
    boxes = [(d, *v) for kind, d, v in checked if kind == "slice" and v != (0, 1, x.sizes[d])]
    out = slice_dims(x, boxes) if boxes else x
    ones = tuple(d for kind, d, v in checked if kind == "int" and x.sizes[d] == 1)
    if ones:  # an int on a size-1 dim is a squeeze: split, one alltoall and the result stays split
        out = squeeze(out, ones)
    for kind, d, v in checked:
        if kind == "int" and d not in ones:
            out = pick(out, d, v)
    for kind, d, v in checked:
        if kind == "ids":
            out = _take_ids(out, d, v)
    # a selection of everything (x[...], x[:], x.isel()) is a new array too: a write into x must leave it as it
    # was, as it leaves every other slice (the copy shares the blocks, which no op writes in place)
    return out.__copy__() if out is x else out


def parse_key(x: ShardArray, key: Any) -> tuple[dict[str, Any], list[int]]:
    """A positional (or dict) key as ``({dim: index}, output positions of new size-1 dims)``.

    Positional keys follow NumPy: ints, slices (any step), one Ellipsis, one
    integer array (list, NumPy or ShardArray), and ``None``, which inserts a
    new size-1 dim at that place of the result, named ``"new{position}"``
    (``"new{position}_"`` and so on if that name is taken).
    """
    if isinstance(key, Mapping):
        return dict(key), []
    if not isinstance(key, tuple):
        key = (key,)
    if sum(k is Ellipsis for k in key) > 1:
        raise IndexingError(f"x[{key!r:.80}]: an index may hold at most one Ellipsis (...)")
    real = [k for k in key if k is not None and k is not Ellipsis]
    if len(real) > x.ndim:
        raise IndexingError(
            f"too many indices: {len(real)} given for the array with {x.ndim} dim(s) {x.sizes}; "
            f"give at most {x.ndim}, or index by name with x[{{dim: index}}]"
        )
    arrays = [k for k in real if isinstance(k, (list, np.ndarray, ShardArray)) and not isinstance(k, str)]
    if len(arrays) > 1:
        raise ArgumentError(
            f"x[...]: {len(arrays)} integer-array indices; positional indexing takes at most one "
            f"(NumPy would broadcast them together); index one dim at a time or use x.isel(...)"
        )
    items: dict[str, Any] = {}
    new: list[int] = []
    pos = out = 0
    for k in key:
        if k is Ellipsis:
            skip = x.ndim - len(real)
            pos += skip
            out += skip
        elif k is None:
            new.append(out)
            out += 1
        else:
            items[x.dims[pos]] = k
            pos += 1
            if not isinstance(k, (int, np.integer)) or isinstance(k, (bool, np.bool_)):
                out += 1
    return items, new


@boundary
def getitem(x: ShardArray, key: Any) -> ShardArray:
    """``x[key]``: a dict ``{dim: index}`` (named) or a positional key (see ``parse_key``), via ``isel``."""
    items, new = parse_key(x, key)
    out = isel(x, items)
    for p in new:
        name = f"new{p}"
        while name in out.dims:
            name += "_"
        out = new_dim(out, name, min(p, out.ndim))
    return out


__all__ = ["getitem", "isel", "normalize_int", "normalize_slice", "parse_key", "pick", "slice_dim"]
