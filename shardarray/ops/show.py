"""``sa.show``: draw which device holds which block of an array."""

from __future__ import annotations

import itertools

import numpy as np

from ..array import ShardArray
from ..core.common import require_array
from ..layout import block_bounds


def _cell(x: ShardArray, device: int) -> str:
    bounds = block_bounds(x.mesh, x.spec)[device]
    parts = [f"{d}[{lo}:{hi}]" for d, axes, (lo, hi) in zip(x.dims, x.spec.axes, bounds) if axes]
    text = " ".join(parts) if parts else "all"
    return text + (" +partial" if x.pending else "")


MAX_PICTURE_DEVICES = 64  # larger meshes get a summary instead of one cell per device


def _ranges(bounds: list[tuple[int, int]]) -> str:
    """``[0:4] [4:8] ... [28:32]``: the first two and last block ranges of a split dim."""
    shown = [f"[{lo}:{hi}]" for lo, hi in bounds]
    return " ".join(shown) if len(shown) <= 4 else " ".join(shown[:2] + ["...", shown[-1]])


def _summary(x: ShardArray, head: str) -> str:
    """What ``show`` prints for a mesh of more than ``MAX_PICTURE_DEVICES`` devices: per split dim, then blocks."""
    bounds = block_bounds(x.mesh, x.spec)
    lines = [head, f"{x.mesh.size} devices: summary (a picture is drawn up to {MAX_PICTURE_DEVICES} devices)"]
    for i, (d, axes) in enumerate(zip(x.dims, x.spec.axes)):
        if not axes:
            lines.append(f"  {d}: not split (every device holds [0:{x.sizes[d]}])")
            continue
        distinct = sorted({b[i] for b in bounds})
        lines.append(f"  {d}: split over {'+'.join(axes)} into {len(distinct)} blocks {_ranges(distinct)}")
    shapes: dict[tuple[int, ...], int] = {}
    for b in bounds:
        shape = tuple(hi - lo for lo, hi in b)
        shapes[shape] = shapes.get(shape, 0) + 1
    text = ", ".join(f"{shape} on {n}" for shape, n in sorted(shapes.items(), key=lambda kv: -kv[1]))
    lines.append(f"  block shapes: {text}" + (" (+partial: a sum is pending)" if x.pending else ""))
    return "\n".join(lines)


def show(x: ShardArray) -> str:
    """A plain-text picture of the blocks each device holds (a summary on meshes of more than 64 devices).

    The mesh's first half of axes index the rows of the picture, the rest the
    columns; each cell lists the global index range of every split dim
    (``all`` for a replicated array, ``+partial`` while a sum is pending).
    Above ``MAX_PICTURE_DEVICES`` devices (a 16×32 mesh would need 512 cells)
    it lists, per dim, the axes that split it and its block ranges, and the
    distinct block shapes with their device counts.

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
    lay = ", ".join(f"{d}: {'+'.join(a)}" for d, a in x.layout.items())
    pend = f", pending sum over {'+'.join(x.pending)}" if x.pending else ""
    head = (
        f"ShardArray {' '.join(f'{d}={n}' for d, n in x.sizes.items()) or '(scalar)'} {x.dtype}, "
        f"layout {{{lay}}}{pend}, mesh {{{', '.join(f'{a}: {s}' for a, s in sizes.items())}}}"
    )
    if mesh.size > MAX_PICTURE_DEVICES:
        return _summary(x, head)
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
    body = ["  ".join(cell.ljust(w) for cell, w in zip(t, widths)).rstrip() for t in table]
    return "\n".join([head] + body)


REPR_MAX_ELEMENTS = 1000  # arrays up to this many elements show their values in repr()


def values_shown(x: ShardArray) -> bool:
    """Whether ``repr(x)`` gathers and shows the values (small arrays, where that is safe on this process).

    Not on the ``meta`` backend (no values), not for an array being differentiated on a recording tape, and under
    MPI (``comm="mpi"``) only for a replicated array with no pending sum (its conversion is local: repr may run on
    one process only, so it must never start a collective).
    """
    if not x.mesh.backend.has_data or x.size > REPR_MAX_ELEMENTS:
        return False
    node = x._node
    if node is not None and node.tape.recording():
        return False
    return not (x.mesh.comm_kind == "mpi" and (x.layout or x.pending))


def array_repr(x: ShardArray) -> str:
    """``repr(x)``: the values of a small array (like NumPy and JAX) with its dims, layout and mesh; else a summary.

    Showing the values is an explicit gather of at most ``REPR_MAX_ELEMENTS`` elements (``x.numpy()``): no
    collective on an emulated mesh (a pending sum is resolved first, an allreduce), none under MPI either
    (there only replicated arrays show values). Large arrays, ``meta`` arrays, arrays being differentiated and
    split arrays under MPI show ``ShardArray(dim=size, ...; dtype=..., layout=..., mesh=...)``. A positional array
    (``shardarray.array_api``) shows as ``Array(...)``, its type.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> sa.asarray(np.arange(4.0).reshape(2, 2), dims=("batch", "io"), mesh=mesh, layout={"batch": "row"})
        ShardArray([[0., 1.],
                    [2., 3.]], dims=('batch', 'io'), dtype=float64, layout={'batch': ('row',)},
                    mesh=Mesh({'row': 2, 'col': 2}))
        >>> sa.zeros(mesh, {"batch": 100, "io": 20}, layout={"batch": "row"})
        ShardArray(batch=100, io=20; dtype=float32, layout={'batch': ('row',)}, mesh=Mesh({'row': 2, 'col': 2}))
    """
    pend = f", pending={x.pending}" if x.pending else ""
    name = "Array" if x.positional else "ShardArray"  # (a positional array is a shardarray.array_api.Array)
    if values_shown(x):
        try:
            text = np.array2string(x.numpy(), separator=", ", prefix=f"{name}(", threshold=REPR_MAX_ELEMENTS + 1)
        except Exception:
            text = None
        if text is not None:
            return f"{name}({text}, dims={x.dims}, dtype={x.dtype}, layout={x.layout}{pend}, mesh={x.mesh})"
    sizes = ", ".join(f"{d}={n}" for d, n in zip(x.dims, x.shape)) or "0-d"
    return f"{name}({sizes}; dtype={x.dtype}, layout={x.layout}{pend}, mesh={x.mesh})"
