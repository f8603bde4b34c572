"""VJPs of the FFT primitives (``shardarray/fft/transforms.py``): transposed transforms along the same dim.

Complex cotangents follow JAX's convention, as every VJP of the library
(``real``, ``imag``, ``conj``, products): ``g = dL/dRe(y) - i dL/dIm(y)``,
and the VJP of a linear map ``A`` is its transpose ``A^T g``. The transforms
below are written as adjoints ``A^H`` (``dL/dRe + i dL/dIm`` in, out), so each
VJP conjugates the cotangent on the way in and the gradient on the way out
(``A^T g = conj(A^H conj(g))``); a real input gets the real part. With
``dual`` = the other normalisation (backward <-> forward, ortho stays), for
input length ``m`` and transform length ``n``:

- ``fft``/``ifft``: ``ifft``/``fft`` of ``g`` with the dual norm, truncated or
  zero-padded back to ``m`` (the adjoint of the padding/truncation).
- ``rfft``: ``Re(ifft(g zero-padded to n))`` (dual norm), resized to ``m``;
  ``ihfft`` (= conj of rfft with swapped norm) the same on ``conj(g)``.
- ``irfft``: ``w * rfft(g)`` (dual norm) with the Hermitian weights
  ``w = 1, 2, ..., 2, (1 if n even)``, resized to ``m``; ``hfft`` (= irfft of
  ``conj(x)``, swapped norm): the conjugate of that.

Each runs as one ``pencil.along`` over the dim, so its collectives are the
forward op's (two alltoalls when the dim is split); on a split 1-D array (or a
split dim no other dim takes evenly) the adjoint is itself a four-step
transform (``fft/split1d.py``: three alltoalls), or Bluestein's (nine) for a
length with no four-step factors (``fft/bluestein.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..array import ShardArray
from ..core.relayout import move_axes
from ..core.tape import Context, register_vjp
from ..fft import split1d
from ..fft.four_step import applies
from ..fft.pencil import along, resize
from ..fft.transforms import DUAL, complex_dtype, real_dtype
from ..ops.elementwise.arithmetic import conj


def _rest(ctx: Context) -> list[Any]:
    return [None] * (len(ctx.args) - 1)


def _transposed(adjoint: Callable[[Context, ShardArray], list[Any]]) -> Callable[[Context, ShardArray], list[Any]]:
    """The VJP ``A^T g`` (JAX's convention) from the adjoint ``A^H``: ``conj(A^H conj(g))`` (the module docstring)."""

    def vjp(ctx: Context, g: ShardArray) -> list[Any]:
        grads = adjoint(ctx, conj(g) if g.dtype.kind == "c" else g)
        return [conj(d) if isinstance(d, ShardArray) and d.dtype.kind == "c" else d for d in grads]

    vjp.__doc__ = adjoint.__doc__
    return vjp


@register_vjp("fft_c2c")
@_transposed
def _c2c(ctx: Context, g: ShardArray) -> list[Any]:
    x, dim, n, norm, inverse = ctx.args[:5]
    m, xp = x.sizes[dim], g.mesh.backend.xp
    name = "fft" if inverse else "ifft"
    dt = complex_dtype(x.dtype)

    real = x.dtype.kind != "c"

    def local(b: Any, axis: int) -> Any:
        out = resize(xp, getattr(g.mesh.backend.fft, name)(b, n=n, axis=axis, norm=DUAL[norm]), axis, m)
        return out.real if real else out

    if applies(g, dim, n):
        return [split1d.c2c(g, dim, n, DUAL[norm], not inverse, m, dt, x.dtype if real else None)] + _rest(ctx)
    out = along(g, dim, local, m, x.dtype if real else dt)
    if out.spec.axes != x.spec.axes:  # a forward with back=False left the split on the partner dim: return it
        out = move_axes(out, x.spec.axes)
    return [out] + _rest(ctx)


@register_vjp("fft_r2c")
@_transposed
def _r2c(ctx: Context, g: ShardArray) -> list[Any]:
    x, dim, n, norm, hermitian = ctx.args[:5]
    m, xp = x.sizes[dim], g.mesh.backend.xp
    inner = DUAL[DUAL[norm]] if hermitian else DUAL[norm]  # ihfft = conj(rfft(x, swapped norm))

    def local(b: Any, axis: int) -> Any:
        b = xp.conj(b) if hermitian else b
        full = g.mesh.backend.fft.ifft(resize(xp, b, axis, n), n=n, axis=axis, norm=inner)
        return resize(xp, full.real, axis, m)

    if applies(g, dim, n):
        y = split1d.r2c(g, dim, n, inner, True, m, complex_dtype(x.dtype), n, hermitian, x.dtype)
        return [y] + _rest(ctx)
    return [along(g, dim, local, m, x.dtype)] + _rest(ctx)


@register_vjp("fft_c2r")
@_transposed
def _c2r(ctx: Context, g: ShardArray) -> list[Any]:
    x, dim, n, norm, hermitian = ctx.args[:5]
    m, xp = x.sizes[dim], g.mesh.backend.xp
    inner = DUAL[DUAL[norm]] if hermitian else DUAL[norm]  # hfft = irfft(conj(x), swapped norm)
    h = n // 2 + 1

    def local(b: Any, axis: int) -> Any:
        y = g.mesh.backend.fft.rfft(b.astype(real_dtype(b.dtype), copy=False), n=n, axis=axis, norm=inner)
        w = xp.full((h,), 2.0, dtype=real_dtype(b.dtype))
        w[0] = 1.0
        if n % 2 == 0:
            w[-1] = 1.0
        y = y * w.reshape((h,) + (1,) * (b.ndim - axis - 1))
        y = resize(xp, xp.conj(y) if hermitian else y, axis, m)
        return y.real if real else y

    real = x.dtype.kind != "c"
    if applies(g, dim, n):
        y = split1d.r2c(g, dim, n, inner, False, m, complex_dtype(x.dtype), h)
        return [split1d.weigh_out(y, dim, n, hermitian, x.dtype if real else None, complex_dtype(x.dtype))] + _rest(ctx)
    return [along(g, dim, local, m, x.dtype if real else complex_dtype(x.dtype))] + _rest(ctx)
