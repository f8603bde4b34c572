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
from .base import Backend, reduceat_ranges
from .contract import contract2

_F32 = np.dtype(np.float32)
#: blocks smaller than this (elements) sum with ``np.sum`` itself: the fast paths' extra calls cost more there
FAST_SUM_MIN = 1 << 14
#: ``sum_leading`` reads the block as rows of about this many elements (several of the block's rows each)
LEADING_ROW = 512
#: ``sum_trailing`` takes rows of at most this many elements (NumPy's own loop is fine for longer rows)
TRAILING_MAX = 32
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

    def sum(self, x: Any, axis: tuple[int, ...], dtype: Any = None) -> Any:
        """``np.sum(x, axis=axis, dtype=dtype)``, faster for the two shapes NumPy's reduction is slow on.

        NumPy calls its inner loop once per row of the reduced or the kept axes, so a sum whose rows are short
        spends most of its time in loop calls: over the leading axes of a tall C-contiguous block with few
        columns (a column sum of an (N, 8) block: ``sum_leading``, about 7x faster) and over the trailing axes
        of one with short rows (a row sum of an (N, 16) block: ``sum_trailing``, about 3x). Integer and bool
        sums are exact either way; float sums add in another order, as accurate as NumPy's (see the two).
        """
        if type(x) is np.ndarray and x.size >= FAST_SUM_MIN and x.flags.c_contiguous and x.dtype.kind in "biufc":
            out = sum_leading(x, axis, dtype)
            if out is None:
                out = sum_trailing(x, axis, dtype)
            if out is not None:
                return out
        return np.sum(x, axis=axis, dtype=dtype)

    def apply_at(self, table: Any, rows: Any, values: Any, op: str) -> Any:
        """``Backend.apply_at`` by NumPy's own unbuffered ``np.<op>.at`` (the pairs in the given order), in place;
        bfloat16 tables (no ``ufunc.at`` loops) in the base class's rounds."""
        if table.dtype == BFLOAT16:
            return super().apply_at(table, rows, values, op)
        ufunc = getattr(np, op)
        if values is None:
            ufunc.at(table, rows)
        else:
            ufunc.at(table, rows, values)
        return table

    def reduceat_rows(self, block: Any, starts: Any, stops: Any, op: str, axis: int) -> Any | None:
        """``Backend.reduceat_rows`` by NumPy's ``np.<op>.reduceat``, for every ufunc (NumPy's loops: complex
        extremes in its lexicographic order); bfloat16 blocks are left to the caller."""
        if block.dtype == BFLOAT16:
            return None
        return reduceat_ranges(np, getattr(np, op), block, starts, stops, axis, np.asarray)

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


def _split_at(x: np.ndarray, axis: tuple[int, ...], leading: bool) -> tuple[int, int] | None:
    """``(rows, cols)``: ``x`` as a 2-D array whose rows are summed (``leading``: ``axis`` is ``(0, ..., j-1)``)
    or whose columns are (``axis`` is ``(j, ..., ndim-1)``), for some axes but not all; else None."""
    j, nd = len(axis), x.ndim
    if not 0 < j < nd or tuple(sorted(axis)) != (tuple(range(j)) if leading else tuple(range(nd - j, nd))):
        return None
    rows = 1
    for n in x.shape[: j if leading else nd - j]:
        rows *= n
    return rows, x.size // rows if rows else 0


def sum_leading(x: np.ndarray, axis: tuple[int, ...], dtype: Any = None) -> np.ndarray | None:
    """``np.sum(x, axis, dtype)`` over the leading axes ``(0, ..., j-1)`` of the C-contiguous ``x``, when the
    kept axes hold fewer than ``LEADING_ROW / 2`` elements and the block is tall; else None.

    The block is read as rows of ``r * cols`` elements (``r`` of its rows each, ``r * cols`` about
    ``LEADING_ROW``): NumPy sums those long rows into one row (one loop call per ``r`` rows instead of one per
    row), whose ``r`` parts are then added, and the leftover rows are added last. Each output element is the sum
    of ``r`` partial sums of about ``rows / r`` values each: its rounding error is at most that of NumPy's, which
    adds the ``rows`` values one after the other (bound ``(rows / r + r) u`` against ``rows u``); integer and
    bool sums are exact (wrapping as NumPy's).

    Example:
        >>> x = np.arange(40000.0).reshape(5000, 8)
        >>> bool((sum_leading(x, (0,)) == x.sum(axis=0)).all())
        True
    """
    at = _split_at(x, axis, leading=True)
    if at is None:
        return None
    rows, cols = at
    r = LEADING_ROW // cols if cols else 0
    if r < 2 or rows < 4 * r:
        return None
    q = rows // r
    flat = x.reshape(rows, cols)
    out = flat[: q * r].reshape(q, r * cols).sum(axis=0, dtype=dtype).reshape(r, cols).sum(axis=0)
    if q * r < rows:
        out += flat[q * r :].sum(axis=0, dtype=dtype)
    return out.reshape(x.shape[len(axis) :])


def sum_trailing(x: np.ndarray, axis: tuple[int, ...], dtype: Any = None) -> np.ndarray | None:
    """``np.sum(x, axis, dtype)`` over the trailing axes of the C-contiguous ``x`` when they hold at most
    ``TRAILING_MAX`` elements (short rows); else None.

    ``np.einsum`` sums each short row in one vectorized loop (NumPy's reduction calls its loop once per row).
    Its order of addition differs from NumPy's pairwise one; over at most ``TRAILING_MAX`` values both are
    blocked sums with a few accumulators (NumPy's pairwise recursion starts above 128 values), so the
    rounding error is of the same size (a few ulps of the sum of magnitudes); integer and bool sums are exact.

    Example:
        >>> x = np.arange(64000).reshape(4000, 16)
        >>> bool((sum_trailing(x, (1,)) == x.sum(axis=1)).all())
        True
    """
    at = _split_at(x, axis, leading=False)
    if at is None:
        return None
    rows, cols = at
    if cols > TRAILING_MAX or cols < 2:
        return None
    acc = _sum_dtype(x.dtype) if dtype is None else dtype
    out = np.einsum("ij->i", x.reshape(rows, cols), dtype=acc, casting="unsafe")
    return out.reshape(x.shape[: x.ndim - len(axis)])


@functools.cache
def _sum_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype ``np.sum`` gives for ``dtype`` (bool and narrow integers widen)."""
    return np.sum(np.zeros(1, dtype)).dtype


@functools.cache
def _fft_module() -> Any:
    try:
        import scipy.fft
    except ImportError:  # SciPy is optional (the ``fft`` extra): NumPy's own transforms, the same results
        return np.fft
    return scipy.fft
