"""``xp.fft``: the array API standard's fft extension (2024.12), positionally, over ``sa.fft``.

``axis``/``axes`` pick dims by position. Collectives are those of ``sa.fft``:
none along an unsplit axis; two alltoalls over the axis's mesh axes (there and
back, ``(k-1)/k`` of a block each) along a split axis; a split 1-D array (or an
axis whose split no other axis takes evenly) takes the four-step algorithm, or
Bluestein's for a prime length past 64 KiB (``sa.fft.fft``). The
1-D transforms keep the input's layout.

``fftn``/``ifftn`` leave the result's layout to the algorithm (a layout is not
part of a positional array's meaning, as JAX leaves an output's sharding to the
compiler): unsplit axes are transformed first, then each split axis with **one**
alltoall that moves its split onto another axis, and no alltoall back. A 2-D
FFT of a row-split array is one alltoall, and its result is split along its
columns (``sa.fft.fftn`` keeps the input's layout: two alltoalls per split dim).

NumPy's 2-D forms ``fft2``/``ifft2``/``rfft2``/``irfft2`` (not in the standard) are the n-D forms over
``axes=(-2, -1)`` by default. Where the standard is silent the n-D forms and the shifts do what NumPy does: ``s``
without ``axes`` transforms the last ``len(s)`` axes; an axis named twice in ``axes``
is transformed twice (shifted twice), one 1-D transform per entry in NumPy's order;
an ``s`` entry of -1 means the input's size.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import fft as _f
from ..array import ShardArray
from ..core.tape import boundaries as _boundaries
from ..dtypes import as_dtype
from ..errors import ArgumentError, DTypeError
from ..fft.transforms import c2c_any_layout, is_minus_one
from ._align import at_least_1d, axes_dims, axis_dim
from ._array import Array, wrap
from ._creation import _mesh


def _example_dtype(name: str) -> str:
    """The dtype of a docstring example's input: real for the transforms of real input, else complex."""
    return "float64" if name in ("rfft", "rfftn", "ihfft") else "complex128"


def _one(fn: Any, name: str) -> Any:
    def op(x: ShardArray, /, *, n: int | None = None, axis: int = -1, norm: str = "backward") -> Array:
        x = at_least_1d(x, f"fft.{name}")
        return wrap(fn(x, axis_dim(x, axis, f"fft.{name}"), n=n, norm=norm))

    op.__name__ = op.__qualname__ = name
    op.__doc__ = (
        f"``{name}`` of the standard along ``axis``; see ``sa.fft.{name}``.\n\n    Example:\n"
        f"        >>> import shardarray.array_api as xp\n"
        f'        >>> with sa.default_mesh(sa.Mesh({{"row": 2, "col": 2}})):\n'
        f"        ...     y = xp.fft.{name}(xp.ones((4, 4), dtype=xp.{_example_dtype(name)}))\n"
    )
    return op


def _many(fn: Any, name: str) -> Any:
    def op(
        x: ShardArray, /, *, s: Sequence[int] | None = None, axes: Sequence[int] | None = None, norm: str = "backward"
    ) -> Array:
        x = at_least_1d(x, f"fft.{name}")
        s = _lengths(s, f"fft.{name}")
        if axes is None and s is not None:  # (NumPy's and JAX's rule: the last len(s) axes)
            axes = tuple(range(-len(s), 0))
        if axes is not None:
            dims = tuple(axis_dim(x, a, f"fft.{name}") for a in _seq(axes))
            if len(set(dims)) != len(dims):
                return wrap(_repeated(x, name, dims, s, norm))
        return wrap(fn(x, None if axes is None else axes_dims(x, tuple(_seq(axes)), f"fft.{name}"), s=s, norm=norm))

    op.__name__ = op.__qualname__ = name
    free = name in ("fftn", "ifftn")
    layout_note = (
        " The result's layout is the algorithm's: one alltoall per split axis, whose split moves onto "
        "another axis (the module docstring)."
        if free
        else ""
    )
    op.__doc__ = (
        f"``{name}`` of the standard over ``axes`` (default all); see ``sa.fft.{name}``.{layout_note}\n\n"
        f"    Example:\n"
        f"        >>> import shardarray.array_api as xp\n"
        f'        >>> with sa.default_mesh(sa.Mesh({{"row": 2, "col": 2}})):\n'
        f"        ...     y = xp.fft.{name}(xp.ones((4, 4), dtype=xp.{_example_dtype(name)}))\n"
    )
    return op


def _seq(axes: Any) -> list[Any]:
    """``axes``: an int, or a sequence of them (a tuple, list, range or 1-D NumPy array, as NumPy takes them)."""
    if isinstance(axes, np.ndarray) and axes.ndim == 1:
        return axes.tolist()
    return list(axes) if isinstance(axes, (tuple, list, range)) else [axes]


def _lengths(s: Any, what: str) -> Any:
    """``s`` (None, or a tuple, list, range or 1-D NumPy array of lengths) as None or a tuple; anything else is
    NumPy's ``TypeError`` (a ``DTypeError``)."""
    if s is None or isinstance(s, (tuple, list)):
        return s
    if isinstance(s, range) or (isinstance(s, np.ndarray) and s.ndim == 1):
        return tuple(s.tolist() if isinstance(s, np.ndarray) else s)
    raise DTypeError(f"{what}: s must be a tuple of lengths (NumPy's TypeError); got s={s!r}")


def _repeated(x: ShardArray, name: str, dims: tuple[str, ...], s: Any, norm: str) -> ShardArray:
    """An n-D transform whose ``axes`` name an axis more than once, as NumPy computes it: one 1-D transform per
    entry of ``axes`` (the same axis again transforms the result again), in NumPy's order (``fftn``/``ifftn``/
    ``rfftn`` from the last entry, ``irfftn`` from the first with ``irfft`` last), each ``s`` default the input's
    size (``irfftn``'s last ``2*(m-1)``). The standard leaves repeated axes unspecified."""
    what = f"fft.{name}"
    if s is None:
        s = [x.sizes[d] for d in dims]
        if name == "irfftn":
            s[-1] = 2 * (x.sizes[dims[-1]] - 1)
    elif not isinstance(s, (tuple, list)):
        raise DTypeError(f"{what}: s must be a tuple of lengths (NumPy's TypeError); got s={s!r}")
    elif len(s) != len(dims):
        raise ArgumentError(f"{what}: s must give one length per entry of axes ({len(dims)}); got s={s!r}")
    ns = [x.sizes[d] if is_minus_one(v) else v for v, d in zip(s, dims)]
    k = len(dims)
    if name in ("fftn", "ifftn"):
        one = _f.ifft if name == "ifftn" else _f.fft
        for i in reversed(range(k)):
            x = one(x, dims[i], n=ns[i], norm=norm)
        return x
    if name == "rfftn":
        x = _f.rfft(x, dims[-1], n=ns[-1], norm=norm)
        for i in reversed(range(k - 1)):
            x = _f.fft(x, dims[i], n=ns[i], norm=norm)
        return x
    for i in range(k - 1):  # irfftn
        x = _f.ifft(x, dims[i], n=ns[i], norm=norm)
    return _f.irfft(x, dims[-1], n=ns[-1], norm=norm)


fft = _one(_f.fft, "fft")
ifft = _one(_f.ifft, "ifft")
rfft = _one(_f.rfft, "rfft")
irfft = _one(_f.irfft, "irfft")
hfft = _one(_f.hfft, "hfft")
ihfft = _one(_f.ihfft, "ihfft")
fftn = _many(functools.partial(c2c_any_layout, inverse=False, what="fftn"), "fftn")
ifftn = _many(functools.partial(c2c_any_layout, inverse=True, what="ifftn"), "ifftn")
rfftn = _many(_f.rfftn, "rfftn")
irfftn = _many(_f.irfftn, "irfftn")


def _two(nd: Any, name: str) -> Any:
    """NumPy's 2-D form of the n-D transform ``nd``: ``axes`` defaults to the last two (not in the standard)."""

    def op(
        x: ShardArray, /, *, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1), norm: str = "backward"
    ) -> Array:
        return nd(x, s=s, axes=axes, norm=norm)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = (
        f"``numpy.fft.{name}``: ``{nd.__name__}`` over ``axes`` (default the last two; NumPy's extra, not in the "
        f"standard).\n\n    Example:\n"
        f"        >>> import shardarray.array_api as xp\n"
        f'        >>> with sa.default_mesh(sa.Mesh({{"row": 2, "col": 2}})):\n'
        f"        ...     y = xp.fft.{name}(xp.ones((3, 4, 4), dtype=xp.{_example_dtype(nd.__name__)}))\n"
    )
    return op


fft2 = _two(fftn, "fft2")
ifft2 = _two(ifftn, "ifft2")
rfft2 = _two(rfftn, "rfft2")
irfft2 = _two(irfftn, "irfft2")


def fftfreq(n: int, /, *, d: float = 1.0, dtype: Any = None, device: Any = None) -> Array:
    """The ``n`` DFT sample frequencies, split like any new 1-D array (no communication); see ``sa.fft.fftfreq``.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.fft.fftfreq(4).numpy()
        array([ 0.  ,  0.25, -0.5 , -0.25])
    """
    return _freq(_f.fftfreq, n, d, dtype, device, "fftfreq")


def rfftfreq(n: int, /, *, d: float = 1.0, dtype: Any = None, device: Any = None) -> Array:
    """The ``n//2 + 1`` non-negative DFT sample frequencies (no communication); see ``sa.fft.rfftfreq``.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.fft.rfftfreq(4).numpy()
        array([0.  , 0.25, 0.5 ])
    """
    return _freq(_f.rfftfreq, n, d, dtype, device, "rfftfreq")


def _freq(fn: Any, n: int, d: float, dtype: Any, device: Any, what: str) -> Array:
    mesh = _mesh(device, f"fft.{what}")
    layout = mesh.axis_names[0] if mesh.axis_names else None
    dt = None if dtype is None else as_dtype(dtype)
    return wrap(fn(mesh, n, d, dim="dim0", dtype=dt, layout=layout))


def fftshift(x: ShardArray, /, *, axes: int | Sequence[int] | None = None) -> Array:
    """``x`` rolled by ``n//2`` along ``axes`` (default all); see ``sa.fft.fftshift`` (one alltoallv per split axis).

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.fft.fftshift(xp.fft.fftfreq(5)).numpy()
        array([-0.4, -0.2,  0. ,  0.2,  0.4])
    """
    x = at_least_1d(x, "fft.fftshift")
    return wrap(_shift(x, axes, _f.fftshift, "fft.fftshift"))


def ifftshift(x: ShardArray, /, *, axes: int | Sequence[int] | None = None) -> Array:
    """The inverse of ``fftshift``; see ``sa.fft.ifftshift``.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.fft.ifftshift(xp.fft.fftshift(xp.fft.fftfreq(5))).numpy()
        array([ 0. ,  0.2,  0.4, -0.4, -0.2])
    """
    x = at_least_1d(x, "fft.ifftshift")
    return wrap(_shift(x, axes, _f.ifftshift, "fft.ifftshift"))


def _shift(x: ShardArray, axes: Any, fn: Any, what: str) -> ShardArray:
    """``fn`` (a named shift) along ``axes``; an axis named twice is shifted twice (``np.roll``'s rule)."""
    if axes is None:
        return fn(x, None)
    dims = tuple(axis_dim(x, a, what) for a in _seq(axes))
    if len(set(dims)) == len(dims):
        return fn(x, dims)
    for d in dims:
        x = fn(x, (d,))
    return x


__all__ = sorted([*_f.__all__, "fft2", "ifft2", "irfft2", "rfft2"])  # each named one, and NumPy's 2-D forms

_boundaries(globals(), __all__)  # each function an op boundary of an MPI job (``core.tape.boundary``)
