"""NumPy's multidimensional histograms beyond the array API standard: ``histogramdd`` and ``histogram2d``.

Each sample's bin along each coordinate is searched locally in that coordinate's edges (host edges become
replicated arrays; ``searchsorted``), the coordinates' bins make one flat bin number, and the flat bins are
counted as ``histogram`` counts (``_numpy_counts._counts``: one-hot sums over each device's block, one allreduce of
the bins). Traffic: the bins' count per device (and one allreduce of a min and a max per coordinate whose range is
computed from the data), never the samples.
"""

from __future__ import annotations

import math
from typing import Any, cast

import numpy as np

from ..array import ShardArray
from ..errors import ArgumentError, DimensionError, DTypeError
from ._array import Array, wrap
from ._elementwise import equal, greater_equal, less_equal, logical_and, where
from ._manipulation import reshape
from ._numpy_counts import _any_true, _counts, _host, _like, _moving_edges, _on, _outer_edges
from ._sorting import searchsorted
from ._statistical import _check
from ._statistical import sum as _sum

__all__ = ["histogram2d", "histogramdd"]


def _columns(sample: Any, what: str) -> list[Array]:
    """The ``D`` coordinates of ``sample``: the columns of an ``(N, D)`` array, or a sequence of ``D`` 1-D arrays
    of one length (NumPy's two forms)."""
    if isinstance(sample, ShardArray):
        s = _check(sample, what)
        if s.ndim != 2:
            raise DimensionError(
                f"{what}: sample must be an (N, D) array or a sequence of D 1-D arrays; got an array of shape {s.shape}"
            )
        return [wrap(s[:, i]) for i in range(s.shape[1])]
    if not isinstance(sample, (list, tuple)) or not sample:
        raise DTypeError(
            f"{what}: sample must be an (N, D) array or a sequence of D 1-D arrays of shardarray.array_api; got "
            f"{type(sample).__name__}"
        )
    cols = [_check(c, what) for c in sample]
    for c in cols:
        if c.ndim != 1 or c.shape != cols[0].shape:
            raise DimensionError(
                f"{what}: the coordinates must be 1-D arrays of one length; got shapes {[c.shape for c in cols]}"
            )
    common = np.result_type(*(c.dtype for c in cols))  # (NumPy stacks them into one sample of one dtype)
    return [c if c.dtype == common else wrap(c.astype(common)) for c in cols]


def _scalar(v: Any) -> bool:
    """Whether a ``bins`` entry is one number (not edges): never converts a container (no gather)."""
    if isinstance(v, (list, tuple)):
        return False
    return getattr(v, "ndim", 0) == 0


def _per_coordinate(value: Any, d: int, name: str, what: str) -> list[Any]:
    """``bins`` or ``range`` as one entry per coordinate (a scalar ``bins`` for every coordinate)."""
    if value is None:
        return [None] * d
    if name == "bins" and _scalar(value):
        return [value] * d
    try:
        entries = list(value)
    except TypeError:
        raise ArgumentError(f"{what}: {name} must be one entry per coordinate; got {value!r:.80}") from None
    if len(entries) != d:
        raise ArgumentError(
            f"{what}: {name} must have one entry per coordinate of the sample ({d}); got {len(entries)}"
        )
    return entries


def _coordinate_edges(c: Array, bins: Any, rng: Any, i: int, what: str) -> tuple[Any, Array]:
    """Coordinate ``i``'s edges as NumPy makes them (host values or the array given) and as a replicated array
    (computed edges move with the data's min and max, as ``histogram``'s)."""
    if isinstance(bins, ShardArray) and bins.ndim == 0:
        bins = int(bins)
    if _scalar(bins):
        if isinstance(bins, bool) or not isinstance(bins, (int, np.integer)):
            raise ArgumentError(f"{what}: bins[{i}] must be an integer, when a scalar; got {bins!r:.80}")
        if bins < 1:
            raise ArgumentError(f"{what}: bins[{i}] must be positive, when an integer; got {bins}")
        first, last, extremes = _outer_edges(c, rng)
        computed = np.linspace(first, last, int(bins) + 1)  # (NumPy's histogramdd: linspace's own dtype)
        edges = _on(computed, c.mesh)
        return computed, edges if extremes is None else _moving_edges(edges, *extremes)
    e: Any = wrap(bins) if isinstance(bins, ShardArray) else np.asarray(bins)
    if e.ndim != 1:
        raise DimensionError(f"{what}: bins[{i}] must be a scalar or 1-D edges; got shape {e.shape}")
    if e.shape[0] and bool(_any_true(e[1:] < e[:-1])):
        raise ArgumentError(f"{what}: bins[{i}] must be monotonically increasing, when an array")
    return e, _on(e, c.mesh)


def histogramdd(
    sample: Any, bins: Any = 10, range: Any = None, density: Any = None, weights: Any = None
) -> tuple[Array, list[Array]]:
    """The ``D``-dimensional histogram of ``N`` samples: ``(hist, edges)``, as ``np.histogramdd`` (a NumPy extra).

    ``sample``: an ``(N, D)`` array or a sequence of ``D`` 1-D arrays. ``bins``: a number of equal bins for every
    coordinate, or one entry per coordinate (a number, or 1-D increasing edges: host data or an array); ``range``:
    one ``(min, max)`` (or None: the data's, an allreduce each) per coordinate. Each bin is half-open but the last
    along each coordinate, which is closed; samples outside (NaN included) count nowhere. ``hist``: float64 of
    shape ``(len(edges[0]) - 1, ...)``, the counts or the sums of ``weights`` (shape ``(N,)``); ``density=True``
    divides by the total and the bins' volumes. ``edges``: a list of ``D`` arrays, replicated (an array given as
    edges is returned as it is). Collectives: each device bins its samples locally and one allreduce of the bins
    completes the counts. Differentiable in ``weights`` and in computed edges' min and max (as ``histogram``).

    Raises:
        ArgumentError: bins or range of another length than ``D``, a bins count below 1 or not an integer, edges
            not increasing, a bad or non-finite range.
        DimensionError: a sample neither ``(N, D)`` nor ``D`` 1-D arrays of one length, edges not 1-D,
            ``weights`` of another shape than ``(N,)``.
        DTypeError: complex samples or weights.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     s = xp.asarray([[0.0, 1.0], [0.5, 0.2], [1.0, 1.0], [0.2, 0.7]])
        ...     hist, edges = xp.histogramdd(s, bins=2)
        >>> hist.numpy(), edges[1].numpy()
        (array([[0., 2.],
               [1., 1.]]), array([0.2, 0.6, 1. ]))
    """
    what = "histogramdd"
    cols = _columns(sample, what)
    d = len(cols)
    if any(c.dtype.kind == "c" for c in cols):
        raise DTypeError(f"{what}: complex samples have no order to bin by; pass their real and imaginary parts")
    w = None if weights is None else _like(weights, cols[0], f"{what}: weights")
    if w is not None and w.dtype.kind == "c":
        raise DTypeError(f"{what}: weights must be real (NumPy's bincount); got {w.dtype}")
    given = _per_coordinate(bins, d, "bins", what)  # (once: an array of counts is read entry by entry)
    host_edges, edges = [], []
    for i, (c, b, r) in enumerate(zip(cols, given, _per_coordinate(range, d, "range", what))):
        e, ea = _coordinate_edges(c, b, r, i, what)
        host_edges.append(e)
        edges.append(ea)
    counts = [max(int(e.shape[0]) - 1, 0) for e in host_edges]
    flat: Any = None
    keep: Any = None
    for c, e, ea, n in zip(cols, host_edges, edges, counts):
        ct = np.result_type(c.dtype, ea.dtype)
        v = c if c.dtype == ct else c.astype(ct)
        lookup = ea if ea.dtype == ct else ea.astype(ct)
        k = searchsorted(lookup, v, side="right")  # 0: below, 1..n: the bins, n + 1: above (NaN there too)
        if n:
            last = e[-1] if isinstance(e, np.ndarray) else lookup[-1]
            k = cast(Array, where(equal(v, last), k - 1, k))  # the last edge belongs to the last bin
        inside = logical_and(greater_equal(k, 1), less_equal(k, n))
        flat = k - 1 if flat is None else flat * n + (k - 1)
        keep = inside if keep is None else logical_and(keep, inside)
    total = math.prod(counts)
    hist = _counts(cast(Array, where(keep, flat, -1)), total, w, np.dtype(np.float64))
    hist = reshape(hist, tuple(counts))
    if density:
        # the counts summed first: a pending sum divided part by part would make a count over a zero-width bin
        # NaN (0/0 + 1/0) where NumPy's is inf
        hist = wrap(hist.resolve()) if hist.pending else hist
        volume = _sum(hist)
        for i, (e, ea) in enumerate(zip(host_edges, edges)):
            widths = _host(np.diff(e), hist.mesh) if isinstance(e, np.ndarray) else ea[1:] - ea[:-1]
            shape = [1] * d
            shape[i] = counts[i]
            hist = hist / reshape(widths, tuple(shape))
        hist = hist / volume
    # (an array given as edges is returned as it is; a 0-d array is a count, whose edges were computed)
    out = [wrap(b) if isinstance(b, ShardArray) and b.ndim == 1 else ea for b, ea in zip(given, edges)]
    return hist, out


def histogram2d(
    x: Any, y: Any, bins: Any = 10, range: Any = None, density: Any = None, weights: Any = None
) -> tuple[Array, Array, Array]:
    """The 2-D histogram of the points ``(x[k], y[k])``: ``(hist, xedges, yedges)``, as ``np.histogram2d``.

    ``bins``: a number of bins for both coordinates, a pair (numbers or edges), or one array of edges for both;
    the rest as ``histogramdd``, which computes it (``hist`` float64 of shape ``(len(xedges) - 1,
    len(yedges) - 1)``). Collectives: one allreduce of the bins (and of a min and a max per computed range).

    Raises:
        ArgumentError, DimensionError, DTypeError: as ``histogramdd``.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     x, y = xp.asarray([0.0, 0.5, 1.0, 0.2]), xp.asarray([1.0, 0.2, 1.0, 0.7])
        ...     hist, xe, ye = xp.histogram2d(x, y, bins=2, range=[(0, 1), (0, 1)])
        >>> hist.numpy()
        array([[0., 2.],
               [1., 1.]])
    """
    try:
        n = len(bins)
    except TypeError:
        n = 1
    if n not in (1, 2):  # one array of edges for both coordinates (NumPy's rule)
        bins = [bins, bins]
    hist, edges = histogramdd([x, y], bins, range, density, weights)
    return hist, edges[0], edges[1]
