"""NumPy shards: the emulated CPU mesh.

bfloat16 shards (``ml_dtypes.bfloat16``) are contracted in float32: the
operands are upcast, multiplied by float32 BLAS and the result is rounded to
bfloat16 once, as tensor cores do (ml_dtypes' own loops have no BLAS and
round differently).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..dtypes import BFLOAT16, promote
from .base import Backend
from .contract import contract2

_F32 = np.dtype(np.float32)
# float16 too: NumPy's float16 einsum has no BLAS (about 100x slower than float32) and accumulates in float16
_NARROW = (BFLOAT16, np.dtype(np.float16))


class NumpyBackend(Backend):
    name = "numpy"
    xp = np

    @property
    def fft(self) -> Any:
        """``scipy.fft`` when SciPy is installed, else ``numpy.fft`` (the same functions and arguments).

        SciPy's pocketfft transforms several rows at once with SIMD and in the input's precision: on this
        project's 2-core CPU about 3.5× ``numpy.fft`` along the last axis of a complex64 block and 2.8× along the
        first. Its complex64 results differ from NumPy's (which computes them in double precision) by about
        1e-7 relative; ``pip install "shardarray[fft]"`` installs it. One thread per call (``workers``
        unset), as every other block op.
        """
        return _fft_module()

    def from_numpy(self, array: np.ndarray) -> np.ndarray:
        array = np.asarray(array)
        # ascontiguousarray would turn a 0-d array into shape (1,)
        return np.array(array) if array.ndim == 0 else np.ascontiguousarray(array)

    def to_numpy(self, array: Any) -> np.ndarray:
        return np.asarray(array)

    def einsum_fn(self, equation: str, dtypes: Sequence[Any]) -> Callable[..., Any]:
        """Two operands of no narrow dtype: ``contract2`` itself (what ``einsum`` runs for them)."""
        if len(dtypes) == 2 and not any(np.dtype(d) in _NARROW for d in dtypes):
            return functools.partial(contract2, np, equation)
        return super().einsum_fn(equation, dtypes)

    def einsum(self, equation: str, *arrays: Any) -> Any:
        """``Backend.einsum``; bfloat16 and float16 operands are upcast to float32 and the result rounded once."""
        if not any(a.dtype in _NARROW for a in arrays):
            return super().einsum(equation, *arrays)
        wide = [a.astype(_F32) if a.dtype in _NARROW else a for a in arrays]
        out = super().einsum(equation, *wide)
        return np.asarray(out).astype(promote(*(a.dtype for a in arrays)), copy=False)


@functools.cache
def _fft_module() -> Any:
    try:
        import scipy.fft
    except ImportError:  # SciPy is optional (the ``fft`` extra): NumPy's own transforms, the same results
        return np.fft
    return scipy.fft
