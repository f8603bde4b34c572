"""NumPy's sort order on every array module, complex values included, from one key transform.

NumPy orders complex values lexicographically (real part, then imaginary part) and sorts NaNs last:
``R+Rj < R+nanj < nan+Rj < nan+nanj`` (``R`` not NaN), values of one of these kinds by their non-NaN parts
(``np.sort``'s documentation). ``order_keys`` turns an array into real keys whose lexicographic order is that
order: ``(kind, real part, imaginary part)``, the NaN parts zeroed; every sorting op of the package (sample
sort, argsort, searchsorted, argmax/argmin, max/min, top_k, unique) orders complex values through it, so they
agree with NumPy and with each other on every array module. (CuPy's own complex comparisons put ``1+nanj``
below ``2+0j``: ``cupy/_core/include/cupy/complex/arithmetic.h``.) Real values are their own key.

The helpers take the array module ``xp`` (NumPy or CuPy) and run on it; NumPy's own complex sort and search
(the reference order) are used directly where ``xp`` is NumPy.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...dtypes import wide_dtype


def to_bits(a: Any) -> Any:
    """``a`` (a NumPy or CuPy array) as int64 words that ``from_bits`` turns back exactly."""
    return a.astype(wide_dtype(a.dtype), copy=False).view(np.int64)


def from_bits(bits: Any, dtype: Any) -> Any:
    """The values ``to_bits`` packed (an int64 array of either array module), in ``dtype``."""
    return bits.view(wide_dtype(dtype)).astype(dtype, copy=False)


def width(dtype: Any) -> int:
    """int64 words per value in ``words``: 2 for complex (real and imaginary parts), else 1."""
    return 2 if np.dtype(dtype).kind == "c" else 1


def words(xp: Any, a: Any) -> Any:
    """The 1-D ``a`` as ``(len(a), width)`` int64 words that ``from_words`` turns back exactly (complex values
    as their two parts, exactly: NaN payloads and signed zeros included).

    Example:
        >>> from_words(np, words(np, np.array([1 - 2j], dtype=np.complex64)), np.complex64).tolist()
        [(1-2j)]
    """
    if a.ndim == 2:  # rows: their columns' words side by side
        return xp.concatenate(
            [words(xp, a[:, j]) for j in range(a.shape[1])] or [xp.zeros((len(a), 0), dtype=np.int64)], axis=1
        )
    if a.dtype.kind == "c":
        return xp.stack([to_bits(a.real), to_bits(a.imag)], axis=1)
    return to_bits(a)[:, None]


def from_words(xp: Any, w: Any, dtype: Any, cols: int | None = None) -> Any:
    """The values ``words`` packed in the first ``width(dtype)`` columns of the 2-D int64 ``w``, in ``dtype``
    (rows of ``cols`` values where ``cols`` is not None)."""
    dtype = np.dtype(dtype)
    if cols is not None:
        k = width(dtype)
        if cols == 0:
            return xp.zeros((w.shape[0], 0), dtype=dtype)
        return xp.stack([from_words(xp, w[:, j * k : (j + 1) * k], dtype) for j in range(cols)], axis=1)
    if dtype.kind != "c":
        return from_bits(w[:, 0], dtype)
    part = np.finfo(dtype).dtype
    return xp.stack([from_bits(w[:, 0], part), from_bits(w[:, 1], part)], axis=-1).view(dtype).reshape(-1)


def key_dtype(dtype: Any) -> np.dtype:
    """The dtype keys of ``dtype`` are sorted and searched in: float32 for bfloat16 (exact; CuPy's thrust
    sorts have no bfloat16), else ``dtype`` itself."""
    dtype = np.dtype(dtype)
    return np.dtype(np.float32) if dtype.name == "bfloat16" else dtype


def sort_keys(a: Any) -> Any:
    """``a`` in ``key_dtype`` (itself unless bfloat16): what ``xp.sort``, ``argsort`` and ``searchsorted`` take.

    Example:
        >>> sort_keys(np.array([2.0, 1.0], dtype="bfloat16")).dtype
        dtype('float32')
    """
    kd = key_dtype(a.dtype)
    return a if kd == a.dtype else a.astype(kd)


def stable_sort(xp: Any, keys: Any, axis: int = -1) -> Any:
    """``keys`` sorted along ``axis``, equal values in their input order (the array API's stable sort), at the
    speed of the array module's default sort.

    CuPy's sort is stable (CUB's radix sort). NumPy's default (its SIMD quicksort) is not, and its stable sort
    (timsort) is 5-10x slower on random floats; but of the real floats a sort treats as equal only two kinds
    can be told apart: zeros (-0.0 and 0.0) and NaNs (by sign and payload), each of which ends up as one run
    per row. So NumPy's quicksort runs, then each such run gets the input's zeros (NaNs) in their input order:
    the k-th zero of a row in the output is the row's k-th zero in the input. Where a run is empty (found by a
    binary search in 1-D), that costs nothing. Complex keys take NumPy's stable sort.

    Example:
        >>> np.signbit(stable_sort(np, np.array([0.0, -0.0, 1.0, -0.0, 0.0]))).tolist()
        [False, True, True, False, False]
    """
    if xp is np and keys.dtype.kind == "c":  # (complex values with NaN parts tie in many runs: timsort)
        return xp.sort(keys, axis=axis, kind="stable")
    out = xp.sort(keys, axis=axis)
    if xp is not np or keys.dtype.kind != "f" or out.size == 0:  # (CuPy: stable; ints: ties look alike)
        return out
    a, o = xp.moveaxis(keys, axis, -1), xp.moveaxis(out, axis, -1)  # (views: writes into ``o`` reach ``out``)
    if o.ndim > 1:
        zeros = True  # (the mask below finds them)
    else:  # one sorted row: its zeros, if any, start where 0.0 would go
        i = int(xp.searchsorted(o, o.dtype.type(0)))  # (of the array's dtype: a Python 0.0 casts the array)
        zeros = i < o.size and o[i] == 0
    if zeros:
        _in_input_order(o, a, o == 0, a == 0)
    if bool(xp.isnan(o[..., -1]).any()):  # (NaNs sort last)
        _in_input_order(o, a, xp.isnan(o), xp.isnan(a))
    return out


def _in_input_order(out: Any, keys: Any, in_out: Any, in_keys: Any) -> None:
    """Write the entries of ``keys`` at ``in_keys`` into ``out`` at ``in_out``, row by row in order (each row
    of both masks has as many entries: equal values, whose run in ``out`` gets them in the input's order)."""
    if in_out.any():
        out[in_out] = keys[in_keys]


def lex_order(xp: Any, keys: Sequence[Any], axis: int = -1) -> Any:
    """Positions that sort along ``axis`` by ``keys[-1]``, ties by ``keys[-2]``, ..., then by position.

    ``np.lexsort(keys, axis=axis)``'s order, built from stable argsorts (least significant key first), which
    every array module has (CuPy's ``lexsort`` takes one 2-D array of one dtype and no axis).

    Args:
        xp: the array module.
        keys: arrays of one shape (any dtypes), the primary key last.
        axis: the axis to sort along.

    Example:
        >>> lex_order(np, [np.array([1, 0, 1]), np.array([2, 2, 1])]).tolist()
        [2, 1, 0]
    """
    order = xp.argsort(keys[0], axis=axis, kind="stable")
    for key in keys[1:]:
        inner = xp.argsort(xp.take_along_axis(key, order, axis=axis), axis=axis, kind="stable")
        order = xp.take_along_axis(order, inner, axis=axis)
    return order


def order_keys(xp: Any, a: Any) -> list[Any]:
    """Real arrays of ``a``'s shape, least significant first, whose lexicographic order is NumPy's sort order.

    ``[a]`` (bfloat16 as float32) for real arrays; for complex ones ``[imag, real, kind]`` with ``kind`` 0 (no
    NaN part), 1 (imaginary part NaN), 2 (real part NaN), 3 (both NaN) and the NaN parts made 0.

    Example:
        >>> [k.tolist() for k in order_keys(np, np.array([1 + 2j, complex(np.nan, 3)]))]
        [[2.0, 3.0], [1.0, 0.0], [0, 2]]
    """
    if a.dtype.kind != "c":
        return [sort_keys(a)]
    re, im = a.real, a.imag
    re_nan, im_nan = xp.isnan(re), xp.isnan(im)
    zero = re.dtype.type(0)
    kind = re_nan.astype(np.int8) * 2 + im_nan.astype(np.int8)
    return [xp.where(im_nan, zero, im), xp.where(re_nan, zero, re), kind]


def seq_keys(xp: Any, a: Any) -> list[Any]:
    """``order_keys`` of the 1-D ``a``, or of the 2-D ``a`` read as rows compared lexicographically (first
    column most significant, as NumPy orders the rows of ``np.unique(..., axis=)``)."""
    if a.ndim != 2:
        return order_keys(xp, a)
    if a.shape[1] == 0:  # (rows of nothing: all equal)
        return [xp.zeros(a.shape[0], dtype=np.int8)]
    return [k for j in reversed(range(a.shape[1])) for k in order_keys(xp, a[:, j])]


def seq_argsort(xp: Any, a: Any) -> Any:
    """The stable argsort of the 1-D ``a`` (``argsort``) or of the rows of the 2-D ``a`` (lexicographic)."""
    return lex_order(xp, seq_keys(xp, a)) if a.ndim == 2 else argsort(xp, a)


def seq_sort(xp: Any, a: Any) -> Any:
    """The 1-D ``a`` sorted (``sort``), or the rows of the 2-D ``a`` sorted lexicographically (stable)."""
    return a[seq_argsort(xp, a)] if a.ndim == 2 else sort(xp, a)


def argsort(xp: Any, a: Any, axis: int = -1) -> Any:
    """The stable argsort of ``a`` along ``axis`` in NumPy's order (complex values too), on ``xp``.

    Example:
        >>> argsort(np, np.array([complex(1, np.nan), 2 + 0j, 1 + 5j])).tolist()
        [2, 1, 0]
    """
    if a.dtype.kind == "c" and xp is not np:
        return lex_order(xp, order_keys(xp, a), axis=axis)
    return xp.argsort(sort_keys(a), axis=axis, kind="stable")


def sort(xp: Any, a: Any, axis: int = -1) -> Any:
    """``a`` sorted along ``axis`` (stable; NumPy's order, complex values too), in ``a``'s key dtype, on ``xp``.

    Example:
        >>> sort(np, np.array([complex(np.nan, 0), 1 + 1j, complex(1, np.nan)])).tolist()
        [(1+1j), (1+nanj), (nan+0j)]
    """
    if a.dtype.kind != "c":
        return stable_sort(xp, sort_keys(a), axis)
    if xp is np:
        return np.sort(a, axis=axis, kind="stable")
    return xp.take_along_axis(a, argsort(xp, a, axis), axis=axis)


def below(xp: Any, a: Any, b: Any) -> Any:
    """``a < b`` elementwise in NumPy's sort order (NaN above everything); of rows
    (lexicographically) where ``a`` and ``b`` are 2-D.

    Example:
        >>> below(np, np.array([1 + 1j, complex(1, np.nan)]), np.array([complex(1, np.nan), 2 + 0j])).tolist()
        [True, False]
    """
    ka, kb = seq_keys(xp, a), seq_keys(xp, b)
    out = _less(xp, ka[0], kb[0])
    for x, y in zip(ka[1:], kb[1:]):  # least significant first: each key decides where the more significant ones tie
        out = _less(xp, x, y) | (_equal(xp, x, y) & out)
    return out


def _less(xp: Any, x: Any, y: Any) -> Any:
    """``x < y`` with a NaN above every number (real keys)."""
    if x.dtype.kind != "f":
        return x < y
    return (x < y) | (~xp.isnan(x) & xp.isnan(y))


def _equal(xp: Any, x: Any, y: Any) -> Any:
    """``x == y`` with NaNs equal (real keys)."""
    if x.dtype.kind != "f":
        return x == y
    return (x == y) | (xp.isnan(x) & xp.isnan(y))


def searchsorted(xp: Any, s: Any, v: Any, side: str = "left") -> Any:
    """``np.searchsorted(s, v, side)`` (int64) of the sorted 1-D ``s``, in NumPy's order, on ``xp``; where ``s``
    and ``v`` are 2-D, of their rows (lexicographic order).

    Complex values on another array module than NumPy take a binary search of all of ``v`` at once, ``below``
    deciding each step, in a host-known number of steps (no device sync): CuPy's ``searchsorted`` compares
    complex values with its own ``operator<`` and places every complex NaN alike.

    Example:
        >>> s = np.array([1 + 0j, 2 + 0j, complex(1, np.nan), complex(np.nan, 0)])
        >>> searchsorted(np, s, np.array([2 + 1j, complex(0, np.nan), complex(np.nan, -1)])).tolist()
        [2, 2, 3]
    """
    rows = s.ndim == 2
    if s.dtype.kind != "c" and v.dtype.kind != "c" and not rows:
        return xp.searchsorted(sort_keys(s), sort_keys(v), side=side).astype(np.int64)
    if xp is np and not rows:
        return np.searchsorted(s, v, side="left" if side == "left" else "right").astype(np.int64)
    if not rows and v.ndim != 1:  # (the search below runs on a 1-D v: a complex key is two words per value)
        return searchsorted(xp, s, v.reshape(-1), side).reshape(v.shape)
    if s.dtype != v.dtype:  # (NumPy's rule: both in their common type)
        common = np.result_type(*(key_dtype(a.dtype) for a in (s, v)))
        s, v = s.astype(common), v.astype(common)
    n = int(s.shape[0])
    lo = xp.zeros(v.shape[:1] if rows else v.shape, dtype=np.int64)
    hi = xp.full(v.shape[:1] if rows else v.shape, n, dtype=np.int64)
    for _ in range(n.bit_length()):  # each step at least halves every open interval
        mid = (lo + hi) // 2
        active = lo < hi
        at = s[xp.minimum(mid, n - 1)]
        right = active & (below(xp, at, v) if side == "left" else ~below(xp, v, at))
        lo, hi = xp.where(right, mid + 1, lo), xp.where(active & ~right, mid, hi)
    return lo


__all__ = [
    "argsort",
    "below",
    "from_bits",
    "from_words",
    "key_dtype",
    "lex_order",
    "order_keys",
    "searchsorted",
    "seq_argsort",
    "seq_keys",
    "seq_sort",
    "sort",
    "sort_keys",
    "stable_sort",
    "to_bits",
    "width",
    "words",
]
