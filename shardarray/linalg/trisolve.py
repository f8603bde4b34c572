"""Distributed triangular solves with a 2-D split Cholesky factor ``L`` (forward and back substitution).

``L`` (``n x n``) has its rows split over the axes ``R`` and its columns over
``C`` (the layout ``cholesky_2d`` returns); the right-hand side has ``k``
columns (unsplit). Both solves go panel by panel (the panels of
``cholesky2d.make_grid``; owner ``(r_k, c_k)``, width ``b``):

* **forward** ``Y = L^{-1} B`` (``B``'s rows over ``R``): each device of row
  block ``r_k`` multiplies its part of the panel's rows of ``L`` with the
  solved ``Y`` it holds; **one reduce** over ``C`` (root ``c_k``, ``b·k``
  elements) gives the owner the sum, it solves its diagonal block, and **one
  broadcast** over ``R`` (root ``r_k``, ``b·k`` elements) hands ``Y_k`` down the
  column group. ``Y`` comes back with its rows over ``C`` (replicated over ``R``).
* **backward** ``X = L^{-H} Y`` (``Y``'s rows over ``C``): the same with the
  roles swapped, last panel first: **reduce** over ``R`` (root ``r_k``) and
  **broadcast** over ``C`` (root ``c_k``), ``b·k`` elements each. ``X`` comes
  back with its rows over ``R``.

Over a whole solve a device sends/receives ``O(n·k)`` elements in messages of
``b·k``: the right-hand side's size, never the matrix's.
"""

from __future__ import annotations

from typing import Any

from .cholesky2d import Grid, _allreduce, _bcast, _h  # noqa: F401  (shared helpers of the 2-D factorization)


def _reduce(g: Grid, vals: dict[int, Any], axes: tuple[str, ...], root: int) -> dict[int, Any]:
    if g.mesh.axes_size(axes) == 1:
        return vals
    out = g.mesh.comm.reduce([vals.get(d) for d in range(g.mesh.size)], axes, root, "sum")
    return {d: out[d] for d in g.devs}


def _zeros(xp: Any, like: Any, rows: int) -> Any:
    """Zeros of ``rows`` rows in the batch and column shape and dtype of the right-hand side block ``like``."""
    return xp.zeros(like.shape[:-2] + (rows, like.shape[-1]), dtype=like.dtype)


def _diagonal(g: Grid, L: dict[int, Any], d: int, s: int, e: int) -> Any:
    """Device ``d``'s part of the diagonal block ``L[s:e, s:e]`` of panel ``[s, e)`` (all of it on its owner)."""
    (r0, _), (c0, _) = g.rows(d), g.cols(d)
    return L[d][..., s - r0 : e - r0, s - c0 : e - c0]


def forward(g: Grid, L: dict[int, Any], B: dict[int, Any]) -> dict[int, Any]:
    """``Y = L^{-1} B``: ``B[d]`` holds rows ``g.rows(d)``; returns ``Y[d]`` with rows ``g.cols(d)``."""
    xp = g.mesh.backend.xp
    Y = {d: _zeros(xp, B[d], g.cols(d)[1] - g.cols(d)[0]) for d in g.devs}
    for s, e, rk, ck in g.panels:
        part = {}
        for d in g.devs:
            (r0, _), (c0, c1) = g.rows(d), g.cols(d)
            if g.rm[d] == rk:
                j = min(max(s - c0, 0), c1 - c0)
                part[d] = L[d][..., s - r0 : e - r0, :j] @ Y[d][..., :j, :]
            else:
                part[d] = _zeros(xp, B[d], e - s)
        part = _reduce(g, part, g.caxes, ck)
        for d in g.devs:
            if g.rm[d] == rk and g.cm[d] == ck:
                r0 = g.rows(d)[0]
                part[d] = xp.linalg.solve(_diagonal(g, L, d, s, e), B[d][..., s - r0 : e - r0, :] - part[d])
        part = _bcast(g, part, g.raxes, rk)
        for d in g.devs:
            if g.cm[d] == ck:
                c0 = g.cols(d)[0]
                Y[d][..., s - c0 : e - c0, :] = part[d]
    return Y


def backward(g: Grid, L: dict[int, Any], Y: dict[int, Any]) -> dict[int, Any]:
    """``X = L^{-H} Y``: ``Y[d]`` holds rows ``g.cols(d)``; returns ``X[d]`` with rows ``g.rows(d)``."""
    xp = g.mesh.backend.xp
    X = {d: _zeros(xp, Y[d], g.rows(d)[1] - g.rows(d)[0]) for d in g.devs}
    for s, e, rk, ck in reversed(g.panels):
        part = {}
        for d in g.devs:
            (r0, r1), (c0, _) = g.rows(d), g.cols(d)
            if g.cm[d] == ck:
                i = min(max(e - r0, 0), r1 - r0)
                part[d] = _h(xp, L[d][..., i:, s - c0 : e - c0]) @ X[d][..., i:, :]
            else:
                part[d] = _zeros(xp, Y[d], e - s)
        part = _reduce(g, part, g.raxes, rk)
        for d in g.devs:
            if g.rm[d] == rk and g.cm[d] == ck:
                c0 = g.cols(d)[0]
                part[d] = xp.linalg.solve(_h(xp, _diagonal(g, L, d, s, e)), Y[d][..., s - c0 : e - c0, :] - part[d])
        part = _bcast(g, part, g.caxes, ck)
        for d in g.devs:
            if g.rm[d] == rk:
                r0 = g.rows(d)[0]
                X[d][..., s - r0 : e - r0, :] = part[d]
    return X
