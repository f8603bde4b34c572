"""The 1-D transforms along a split dim by the four-step algorithm (``four_step.py``: a split 1-D array, or a
dim whose split no other dim takes evenly), for the primitives and their VJPs: complex, real-input (truncated
output) and Hermitian (weighted input, real output) forms.

Each is one ``dft``: the four-step (three alltoalls over the dim's axes) when the length has two factors ``>=``
the dim's devices, else Bluestein's algorithm (``bluestein.py``: nine alltoalls, each at most a block of the
length-``m`` transform, ``m >= 2n - 1``), plus local per-block maps (the other dims are a batch; the maps see
blocks with the dim first).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..array import ShardArray
from .bluestein import bluestein
from .four_step import factor, four_step, per_block


def dft(x: ShardArray, dim: str, n: int, inverse: bool, norm: str, size: int, **kw: Any) -> ShardArray:
    """``four_step.four_step`` when ``n`` has two factors ``>=`` the devices of ``dim``, else ``bluestein`` (the
    same contract: ``keep``, ``lim``, ``pre``, ``dtype``)."""
    k = x.mesh.axes_size(x.spec.axes[x.dims.index(dim)])
    run = four_step if factor(n, k) is not None else bluestein
    return run(x, dim, n, inverse, norm, size, **kw)


def hermitian_weights(n: int) -> Any:
    """``w(f)`` for global indices ``f``: 1 at 0 (and ``n/2`` for even ``n``), else 2 (the c2r fold)."""

    def w(f: np.ndarray) -> np.ndarray:
        out = np.full(f.shape, 2.0)
        out[f == 0] = 1.0
        if n % 2 == 0:
            out[f == n // 2] = 1.0
        return out

    return w


def _weigh(xp: Any, n: int, conj: bool = False) -> Any:
    w = hermitian_weights(n)

    def pre(b: Any, start: int) -> Any:
        b = xp.conj(b) if conj else b
        v = w(np.arange(start, start + b.shape[0])).astype(b.real.dtype)
        return b * xp.asarray(v.reshape(v.shape + (1,) * (b.ndim - 1)))

    return pre


def c2c(
    x: ShardArray, dim: str, n: int, norm: str, inverse: bool, size: int, dtype: Any, real_out: Any = None
) -> ShardArray:
    """DFT (or IDFT) of length ``n``; output resized to ``size``; ``real_out``: keep the real part (that dtype)."""
    y = dft(x, dim, n, inverse, norm, size, dtype=dtype)
    return y if real_out is None else per_block(y, dim, lambda b, s: b.real.astype(real_out), real_out)


def r2c(
    x: ShardArray,
    dim: str,
    n: int,
    norm: str,
    inverse: bool,
    size: int,
    dtype: Any,
    keep: int,
    conj: bool = False,
    real_out: Any = None,
) -> ShardArray:
    """The first ``keep`` outputs of the DFT/IDFT of ``x`` (``conj``: of ``conj(x)``), resized to ``size``."""
    xp = x.mesh.backend.xp
    pre = (lambda b, s: xp.conj(b)) if conj else None
    y = dft(x, dim, n, inverse, norm, size, keep=keep, pre=pre, dtype=dtype)
    return y if real_out is None else per_block(y, dim, lambda b, s: b.real.astype(real_out), real_out)


def c2r(x: ShardArray, dim: str, n: int, norm: str, inverse: bool, real_dtype: Any, dtype: Any) -> ShardArray:
    """``Re`` of the DFT/IDFT of length ``n`` of the Hermitian half ``x[:n//2+1]`` weighted 1, 2, ..., 2, 1:
    ``irfft`` (inverse) or ``hfft`` (forward)."""
    xp = x.mesh.backend.xp
    y = dft(x, dim, n, inverse, norm, n, lim=n // 2 + 1, pre=_weigh(xp, n), dtype=dtype)
    return per_block(y, dim, lambda b, s: b.real.astype(real_dtype), real_dtype)


def weigh_out(y: ShardArray, dim: str, n: int, conj: bool, real_out: Any, dtype: Any) -> ShardArray:
    """The irfft VJP's output map: Hermitian weights from global indices, then ``conj``/real part."""
    xp = y.mesh.backend.xp
    pre = _weigh(xp, n, conj)

    def fn(b: Any, s: int) -> Any:
        b = pre(b, s)
        return b.real.astype(real_out) if real_out is not None else b.astype(dtype)

    return per_block(y, dim, fn, real_out if real_out is not None else dtype)


__all__ = ["c2c", "c2r", "dft", "hermitian_weights", "r2c", "weigh_out"]
