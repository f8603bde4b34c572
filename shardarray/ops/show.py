"""``sa.show``: draw which device holds which block of an array."""

from __future__ import annotations

import itertools

from ..array import ShardArray
from ..layout import block_bounds
from .common import require_array


def _cell(x: ShardArray, device: int) -> str:
    bounds = block_bounds(x.mesh, x.spec)[device]
    parts = [f"{d}[{lo}:{hi}]" for d, axes, (lo, hi) in zip(x.dims, x.spec.axes, bounds) if axes]
    text = " ".join(parts) if parts else "all"
    return text + (" +partial" if x.pending else "")


def show(x: ShardArray) -> str:
    """A plain-text picture of the blocks each device holds.

    The mesh's first half of axes index the rows of the picture, the rest the
    columns; each cell lists the global index range of every split dim
    (``all`` for a replicated array, ``+partial`` while a sum is pending).

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> print(sa.show(sa.zeros(mesh, {"batch": 8, "io": 4}, layout={"batch": "row"})))
        ShardArray batch=8 io=4 float32, layout {batch: row}, mesh {row: 2, col: 2}
                  col=0       col=1
        row=0     batch[0:4]  batch[0:4]
        row=1     batch[4:8]  batch[4:8]
    """
    x = require_array(x, "sa.show")
    mesh = x.mesh
    names = mesh.axis_names
    half = (len(names) + 1) // 2
    row_axes, col_axes = names[:half], names[half:]
    sizes = mesh.shape
    rows = list(itertools.product(*(range(sizes[a]) for a in row_axes)))
    cols = list(itertools.product(*(range(sizes[a]) for a in col_axes)))
    label = lambda axes, c: ",".join(f"{a}={i}" for a, i in zip(axes, c)) or "-"  # noqa: E731
    table = [[""] + [label(col_axes, c) for c in cols]]
    for r in rows:
        line = [label(row_axes, r)]
        for c in cols:
            line.append(_cell(x, mesh.device_at(dict(zip(row_axes + col_axes, r + c)))))
        table.append(line)
    widths = [max(len(t[i]) for t in table) for i in range(len(table[0]))]
    lay = ", ".join(f"{d}: {'+'.join(a)}" for d, a in x.layout.items())
    pend = f", pending sum over {'+'.join(x.pending)}" if x.pending else ""
    head = (
        f"ShardArray {' '.join(f'{d}={n}' for d, n in x.sizes.items()) or '(scalar)'} {x.dtype}, "
        f"layout {{{lay}}}{pend}, mesh {{{', '.join(f'{a}: {s}' for a, s in sizes.items())}}}"
    )
    body = ["  ".join(cell.ljust(w) for cell, w in zip(t, widths)).rstrip() for t in table]
    return "\n".join([head] + body)
