"""``xp.fft``: the array API standard's fft extension (2024.12), positionally, over ``sa.fft``.

``axis``/``axes`` pick dims by position. Collectives are those of ``sa.fft``:
none along an unsplit axis; two alltoalls over the axis's mesh axes (there and
back, ``(k-1)/k`` of a block each) along a split axis; a split 1-D array takes
the four-step algorithm. The 1-D transforms keep the input's layout.

``fftn``/``ifftn`` leave the result's layout to the algorithm (a layout is not
part of a positional array's meaning, as JAX leaves an output's sharding to the
compiler): unsplit axes are transformed first, then each split axis with **one**
alltoall that moves its split onto another axis, and no alltoall back. A 2-D
FFT of a row-split array is one alltoall, and its result is split along its
columns (``sa.fft.fftn`` keeps the input's layout: two alltoalls per split dim).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from .. import fft as _f
from ..array import ShardArray
from ..dtypes import as_dtype
from ..fft.transforms import c2c_any_layout
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
        dims = None if axes is None else axes_dims(x, tuple(axes), f"fft.{name}")
        return wrap(fn(x, dims, s=s, norm=norm))

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
    return wrap(_f.fftshift(x, None if axes is None else axes_dims(x, axes, "fft.fftshift")))


def ifftshift(x: ShardArray, /, *, axes: int | Sequence[int] | None = None) -> Array:
    """The inverse of ``fftshift``; see ``sa.fft.ifftshift``.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.fft.ifftshift(xp.fft.fftshift(xp.fft.fftfreq(5))).numpy()
        array([ 0. ,  0.2,  0.4, -0.4, -0.2])
    """
    x = at_least_1d(x, "fft.ifftshift")
    return wrap(_f.ifftshift(x, None if axes is None else axes_dims(x, axes, "fft.ifftshift")))


__all__ = list(_f.__all__)  # one positional function for each named one
