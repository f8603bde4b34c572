"""``take_along_dim``: entries of ``x`` at integer ids along one named dim, matched elementwise on the others.

Built on ``sa.take`` (which matches dims by name): the ids' own ``dim`` is
renamed to a fresh name so that it becomes the lookup dim, the other dims
are shared (elementwise). When ``dim`` is split each device looks up only
the ids that fall in its own block of ``x`` (zeros elsewhere) and **one
allreduce** over ``dim``'s mesh axes of the result block (the ids' block
size, not ``x``'s) completes it: ``x`` is never gathered. Ids split over
``dim``'s axes themselves are routed to the owners (``take_routed.py``), or,
below ``take.ROUTE_MIN_IDS`` a device, allgathered over those axes and the
rows returned by a **reduce-scatter** over them (one per axis): either way the result is
split like the ids. The VJP is
``take``'s: a scatter-add of the cotangent into each device's block of ``x``
(no communication beyond bringing the cotangent to the ids' layout).

On a meta mesh the result and the collectives are those of NumPy shards; for ids split over ``dim``'s axes with
at least ``take.ROUTE_MIN_IDS`` a device, ``take`` routes there too, with the counts of ids spread uniformly
over the owners' rows (``route.Route``'s model: the bytes of random ids, not of skewed ones).
"""

from __future__ import annotations

from typing import Any

from ...array import ShardArray
from ...core.common import dims_arg, require_array, require_ids
from ...core.relayout import resolve_to
from ...errors import DimensionError
from ..elementwise import arithmetic as ew
from ..manipulation.structure import rename, transpose
from .take import take


def _fresh(names: tuple[str, ...], base: str) -> str:
    name = f"{base}__along"
    while name in names:
        name += "_"
    return name


def take_along_dim(x: ShardArray, ids: ShardArray, dim: Any) -> ShardArray:
    """``x`` at integer ``ids`` along ``dim`` (``np.take_along_axis`` by name; negative ids count from the end).

    ``ids`` has ``dim`` (of any length, e.g. k from ``sa.top_k`` or n from
    ``sa.argsort``) and otherwise a subset of ``x``'s other dims with the same
    sizes; dims of ``x`` that ``ids`` lacks broadcast. The result has the
    ids' dims, then the remaining dims of ``x``, in ``x``'s order where both.

    Collectives: none when ``dim`` is unsplit; else one allreduce over
    ``dim``'s mesh axes of the result block (each device contributes the
    entries whose ids fall in its block); ids split over those axes too are
    routed to the owners, or (few ids a device) allgathered over them with one
    reduce-scatter of the result back (the result split like the ids).
    Differentiable in ``x``.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.array([[5.0, 1.0, 4.0], [2.0, 8.0, 3.0]]), dims=("b", "seq"), mesh=mesh,
        ...                layout={"b": "row", "seq": "col"})
        >>> ids = sa.asarray(np.array([[1, 2, 0], [0, 2, 1]]), dims=("b", "seq"), mesh=mesh)
        >>> sa.take_along_dim(x, ids, "seq").numpy()
        array([[1., 4., 5.],
               [2., 3., 8.]])
    """
    x = require_array(x, "sa.take_along_dim")
    ids = require_ids(ids, "sa.take_along_dim")
    dim = dims_arg(x, dim, "take_along_dim")[0]
    if dim not in ids.dims:
        raise DimensionError(
            f"take_along_dim: ids {ids.sizes} must have the dim {dim!r} it indexes along; "
            f"rename its dim with ids.rename({{old: {dim!r}}})"
        )
    for d in ids.dims:
        if d != dim and d not in x.dims:
            raise DimensionError(
                f"take_along_dim: ids dim {d!r} ({ids.sizes}) is not a dim of x {x.sizes}; ids may only have x's dims"
            )
        if d != dim and ids.sizes[d] != x.sizes[d]:
            raise DimensionError(
                f"take_along_dim: dim {d!r} has size {ids.sizes[d]} in ids but {x.sizes[d]} in x; "
                f"sizes must match (use sa.broadcast_to on the ids)"
            )
    n = x.sizes[dim]
    own = _fresh(x.dims + ids.dims, dim)
    tmp = rename(ids, {dim: own})
    if tmp.dtype.kind == "i":
        tmp = ew.where(ew.less(tmp, 0), ew.add(tmp, n), tmp)
    out = take(x, tmp, dim)
    out = resolve_to(out) if out.pending else out
    out = rename(out, {own: dim})
    order = [d for d in x.dims if d in out.dims]
    return transpose(out, tuple(order))


__all__ = ["take_along_dim"]
