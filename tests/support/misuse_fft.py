"""Misuse cases of sa.fft and xp.fft."""

from __future__ import annotations

import numpy as np
from misuse import Case

import shardarray as sa
import shardarray.array_api as xp

MESH = sa.Mesh({"row": 2, "col": 2})


def _x(dtype="complex128", shape=(4, 6)):
    return sa.asarray(np.ones(shape, dtype=dtype), dims=("t", "c"), mesh=MESH, layout={"t": "row"})


def _positional(fn):
    def call():
        with sa.default_mesh(MESH):
            return fn()
    return call


CASES = [
    Case("fft-bad-norm", lambda: sa.fft.fft(_x(), "t", norm="unitary"), sa.ArgumentError,
         names=("norm", "unitary"), fix=("backward",)),
    Case("fft-bad-n", lambda: sa.fft.fft(_x(), "t", n=0), sa.ArgumentError, names=("n=0",), fix=("positive",)),
    Case("fft-unknown-dim", lambda: sa.fft.fft(_x(), "freq"), sa.DimensionError, names=("freq",)),
    Case("fft-two-dims", lambda: sa.fft.fft(_x(), ("t", "c")), sa.DimensionError, names=("'t'", "'c'"),
         fix=("fftn",)),
    Case("fft-int-input", lambda: sa.fft.fft(_x("int64"), "t"), sa.DTypeError, names=("int64",), fix=("astype",)),
    Case("rfft-complex-input", lambda: sa.fft.rfft(_x(), "c"), sa.DTypeError, names=("complex128", "rfft"),
         fix=("astype",)),
    Case("irfft-size-one", lambda: sa.fft.irfft(_x(shape=(4, 1)), "c"), sa.ArgumentError,
         names=("'c'", "size 1"), fix=("pass n",)),
    Case("fftn-s-length", lambda: sa.fft.fftn(_x(), ("t", "c"), s=(4,)), sa.ArgumentError,
         names=("s=(4,)", "('t', 'c')"), fix=("tuple of 2",)),
    Case("fftn-repeated-dim", lambda: sa.fft.fftn(_x(), ("t", "t")), sa.DimensionError, names=("('t', 't')",),
         fix=("once",)),
    Case("fftfreq-zero-spacing", lambda: sa.fft.fftfreq(MESH, 4, 0.0), sa.ArgumentError, names=("d=0.0",)),
    Case("fftfreq-int-dtype", lambda: sa.fft.fftfreq(MESH, 4, dtype="int32"), sa.DTypeError, names=("int32",),
         fix=("float64",)),
    Case("xp-fft-axis-out-of-range", _positional(lambda: xp.fft.fft(xp.asarray(np.ones(4) + 0j), axis=3)),
         sa.DimensionError, names=("axis 3",)),
    Case("xp-fft-not-an-array", _positional(lambda: xp.fft.fft(np.ones(4))), sa.DTypeError, names=("ndarray",),
         fix=("xp.asarray",)),
    Case("xp-fft-0d", _positional(lambda: xp.fft.fft(xp.asarray(1.0 + 0j))), sa.DimensionError, names=("0-d",),
         fix=("xp.reshape",)),
]
