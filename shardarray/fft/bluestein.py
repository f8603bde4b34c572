"""Bluestein's algorithm (chirp-z) along a split dim: a length with no four-step factors, without a gather.

A length-``n`` DFT ``X[k] = Σ_j x[j]·e^{s·2πi·jk/n}`` (``s = -1``; the inverse ``s = +1``) is, with
``jk = (j² + k² - (k-j)²)/2`` and the chirp ``w(t) = e^{s·πi·t²/n}``, the circular convolution

    X[k] = w(k) · Σ_j (x[j]·w(j)) · conj(w(k - j)),   k < n,

of length ``m >= 2n - 1``: ``X = w · IDFT_m(DFT_m(x·w) · DFT_m(b))`` with ``b[t] = conj(w(t))`` for
``t < n``, ``b[m - t] = conj(w(t))`` for ``0 < t < n`` and zeros between. ``m`` is chosen so that the four-step
algorithm (``four_step.py``) takes it on the ``k`` devices of the split: ``m = k²·s`` with ``s`` the smallest
5-smooth number giving ``m >= 2n - 1`` (both four-step factors are multiples of ``k``: even blocks, local FFTs of
smooth lengths). Along a dim split over mesh axes ``A`` (``k`` devices), every other dim a batch:

1. ``A_m = DFT_m(x·w)``: one four-step transform; the zero-padding of the dim to ``m`` is folded into its first
   alltoall (an input entry ``>= min(n, lim)`` is not sent, a missing one is a zero: no gather, no padded copy),
   the chirp multiplied right after it from global indices (``weights``: a real input travels real).
2. ``B_m = DFT_m(b)``: the chirp generated on each device's block from global indices (no traffic) and one
   four-step transform of that 1-D array (three alltoalls of ``m/k`` entries, no batch), once per call.
3. ``A_m · B_m``: local, block by block (the same canonical ceil-blocks of ``m``).
4. ``IDFT_m`` by the four-step, its last alltoall folding the cropping to the first ``n`` outputs (``keep``,
   ``size``), then ``w(k)`` and the ``norm`` scale locally.

Collectives: nine alltoalls (``alltoallv``) over ``A``, each sending at most a device's block of the length-``m``
transform (about ``m/k`` entries per batch column): traffic and memory per device stay proportional to its
block. The phases ``t² mod 2n`` are exact integers, so float64 keeps NumPy's accuracy (``~eps·log n``).

This costs more bytes than the fallback's one allgather of ``(k-1)/k`` of the dim for fewer than about a dozen
devices, and nine collective latencies instead of one; but that allgather puts the whole transform on every
device. ``four_step.applies`` therefore keeps the fallback while what a device would gather or receive is at
most ``four_step.GATHER_MAX_BYTES`` (64 KiB) and takes Bluestein past it: a large prime split dim never gathers.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ..array import ShardArray
from ..layout import Layout
from .four_step import Pre, _chunks, factor, four_step, per_block, scale


@functools.lru_cache(maxsize=256)
def conv_length(n: int, k: int) -> int:
    """The convolution length ``m``: ``k²·s >= 2n - 1`` with ``s`` the smallest 5-smooth number that reaches it
    (so ``four_step.factor(m, k)`` gives factors that are multiples of ``k``)."""
    need = -(-(2 * n - 1) // (k * k))
    s = need
    while True:
        r = s
        for p in (2, 3, 5):
            while r % p == 0:
                r //= p
        if r == 1 and factor(k * k * s, k) is not None:
            return k * k * s
        s += 1


def chirp(n: int, t: np.ndarray, sign: float) -> np.ndarray:
    """``w(t) = exp(sign·πi·t²/n)`` at the int64 indices ``t`` (complex128, exact phases: ``t² mod 2n`` in
    integers)."""
    t = t % (2 * n)
    return np.exp((sign * 1j * np.pi / n) * ((t * t) % (2 * n)))


def _kernel_values(n: int, m: int, start: int, count: int, sign: float) -> np.ndarray:
    """``b[t]`` for ``t = start, ..., start + count - 1``: ``conj(w(min(t, m - t)))`` where that is ``< n``, else 0."""
    t = np.arange(start, start + count, dtype=np.int64)
    d = np.minimum(t, m - t)
    out = np.zeros(count, np.complex128)
    near = d < n
    if near.any():
        dd = d[near] % (2 * n)
        out[near] = np.exp((-sign * 1j * np.pi / n) * ((dd * dd) % (2 * n)))
    return out


def _kernel(x: ShardArray, dim: str, n: int, m: int, sign: float, dtype: np.dtype) -> ShardArray:
    """``DFT_m(b)`` as a 1-D array ``(dim,)`` of ``m`` split over ``dim``'s axes, present where ``x`` has shards:
    ``b`` generated per block (no traffic), then one four-step transform."""
    mesh = x.mesh
    xp, data = mesh.backend.xp, mesh.backend.has_data
    axes = x.spec.axes[x.dims.index(dim)]
    chunks = _chunks(m, tuple(mesh.axis_size(a) for a in axes))
    shards: list[Any] = [None] * mesh.size
    for group in mesh.groups(axes):
        for j, d in enumerate(group):
            if x.shards[d] is None:
                continue
            lo, hi = chunks[j]
            with mesh.backend.scope(d):
                if data:
                    shards[d] = xp.asarray(_kernel_values(n, m, lo, hi - lo, sign).astype(dtype))
                else:
                    shards[d] = xp.zeros((hi - lo,), dtype=dtype)
    b = ShardArray(mesh, Layout((dim,), (m,), (axes,)), dtype, shards)
    return four_step(b, dim, m, False, "backward", m, dtype=dtype)


def _times(a: ShardArray, dim: str, b: ShardArray) -> ShardArray:
    """``a · b`` block by block: ``b`` the 1-D kernel along ``dim`` (the same blocks of ``dim`` as ``a``)."""
    mesh = a.mesh
    if not mesh.backend.has_data:
        return a
    i = a.dims.index(dim)
    shards: list[Any] = [None] * mesh.size
    for d, blk in enumerate(a.shards):
        if blk is None:
            continue
        with mesh.backend.scope(d):
            shards[d] = blk * b.shards[d].reshape((-1,) + (1,) * (blk.ndim - i - 1))
    return ShardArray(mesh, a.spec, a.dtype, shards)


def bluestein(
    x: ShardArray,
    dim: str,
    n: int,
    inverse: bool,
    norm: str,
    size: int,
    keep: int | None = None,
    lim: int | None = None,
    pre: Pre | None = None,
    dtype: Any = np.complex128,
) -> ShardArray:
    """The length-``n`` DFT along the split dim ``dim`` of ``x`` (inverse: the IDFT), as ``size`` entries there.

    The same contract as ``four_step.four_step`` (input entries ``>= min(n, lim)`` ignored, output entry
    ``t < min(n, keep, size)`` is ``X[t]`` and the rest zeros, ``pre`` a local map of input blocks, ``dtype``
    the complex dtype, the result in ``x``'s layout) for any ``n``, prime included.

    Collectives: nine alltoalls over ``dim``'s axes (three four-step transforms of length ``m``, the module
    docstring), each sending at most a device's block of the length-``m`` transform; none other.
    """
    xp = x.mesh.backend.xp
    i = x.dims.index(dim)
    k = x.mesh.axes_size(x.spec.axes[i])
    dtype = np.dtype(dtype)
    m = conv_length(n, k)
    sign = 1.0 if inverse else -1.0
    width = x.shape[i]
    lim = min(width, n, width if lim is None else lim)
    keep = min(n, size, size if keep is None else keep)

    def weights(j: np.ndarray) -> np.ndarray:
        return chirp(n, j, sign)

    a = four_step(x, dim, m, False, "backward", m, lim=lim, pre=pre, dtype=dtype, weights=weights)
    c = _times(a, dim, _kernel(x, dim, n, m, sign, dtype))
    y = four_step(c, dim, m, True, "backward", size, keep=keep, dtype=dtype)  # (the 1/m of the convolution)
    s = scale(n, norm, inverse)

    def post(b: Any, start: int) -> Any:
        w = chirp(n, np.arange(start, start + b.shape[0], dtype=np.int64), sign) * s
        return b * xp.asarray(w.astype(dtype).reshape(w.shape + (1,) * (b.ndim - 1)))

    return per_block(y, dim, post, dtype)


__all__ = ["bluestein", "chirp", "conv_length"]
