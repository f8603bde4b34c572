"""Logical and bitwise elementwise ops, broadcasting by dim name (no communication beyond aligning layouts).

Logical ops take bool arrays only (compare first: ``x != 0``), as the array
API specifies; bitwise and/or/xor/invert take integer or bool arrays, shifts
integer arrays only. A float operand is refused with a ``DTypeError`` that
says how to cast it. None of them is differentiable (their results are
integers or bools). Python scalars combine with arrays as in NumPy.

The orderings ``less``, ``less_equal``, ``greater``, ``greater_equal`` take complex operands too, in NumPy's
order (real parts first, then imaginary parts; a NaN part makes every ordering False), with NumPy's results bit for
bit on every array module: the block kernels here (``complex_compare``, ``complex_choose``, ``complex_clip``, used
by ``math_binary``'s ``maximum``/``minimum``/``fmax``/``fmin``/``clip`` too) compare the parts as integers made from
their bits (``ordered_bits``), so CuPy's own complex comparisons and its flush of float32 subnormals to zero play
no part. Real operands take ``arithmetic``'s ops.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...array import ShardArray
from ...backend.meta import MetaArray
from ...core.tape import nondifferentiable
from . import arithmetic as ew
from .arithmetic import apply

__all__ = [
    "bitwise_and",
    "bitwise_invert",
    "bitwise_left_shift",
    "bitwise_or",
    "bitwise_right_shift",
    "bitwise_xor",
    "complex_choose",
    "complex_clip",
    "complex_compare",
    "complex_operands",
    "greater",
    "greater_equal",
    "less",
    "less_equal",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
]


@nondifferentiable("logical_not")
def logical_not(x: ShardArray) -> ShardArray:
    """Elementwise ``not x`` of a bool array.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> m = sa.asarray(np.array([[True, False], [False, True]]), dims=("a", "b"), mesh=mesh, layout={"a": "row"})
        >>> sa.logical_not(m).numpy()
        array([[False,  True],
               [ True, False]])
    """
    return apply("logical_not", lambda xp, a: xp.logical_not(a), (x,), domain="bool")


@nondifferentiable("logical_and")
def logical_and(x: Any, y: Any) -> ShardArray:
    """Elementwise ``x and y`` of bool arrays, broadcasting by dim name.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> m = sa.asarray(np.array([[True, False], [False, True]]), dims=("a", "b"), mesh=mesh, layout={"a": "row"})
        >>> n = sa.asarray(np.array([True, False]), dims=("b",), mesh=mesh, layout={"b": "col"})
        >>> sa.logical_and(m, n).numpy(), sa.logical_or(m, n).numpy()[1], sa.logical_xor(m, n).numpy()[1]
        (array([[ True, False],
               [False, False]]), array([ True,  True]), array([ True,  True]))
    """
    return apply("logical_and", lambda xp, a, b: xp.logical_and(a, b), (x, y), domain="bool")


@nondifferentiable("logical_or")
def logical_or(x: Any, y: Any) -> ShardArray:
    """Elementwise ``x or y`` of bool arrays, broadcasting by dim name (see ``logical_and``).

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> m = sa.asarray(np.array([[True, False], [False, False]]), dims=("a", "b"), mesh=mesh, layout={"a": "row"})
        >>> sa.logical_or(m, True).numpy()
        array([[ True,  True],
               [ True,  True]])
    """
    return apply("logical_or", lambda xp, a, b: xp.logical_or(a, b), (x, y), domain="bool")


@nondifferentiable("logical_xor")
def logical_xor(x: Any, y: Any) -> ShardArray:
    """Elementwise ``x != y`` of bool arrays, broadcasting by dim name (see ``logical_and``).

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> m = sa.asarray(np.array([[True, False], [False, False]]), dims=("a", "b"), mesh=mesh, layout={"a": "row"})
        >>> sa.logical_xor(m, True).numpy()
        array([[False,  True],
               [ True,  True]])
    """
    return apply("logical_xor", lambda xp, a, b: xp.logical_xor(a, b), (x, y), domain="bool")


@nondifferentiable("bitwise_and")
def bitwise_and(x: Any, y: Any) -> ShardArray:
    """Elementwise ``x & y`` of integer or bool arrays, broadcasting by dim name.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.array([[12, 10], [7, -1]]), dims=("a", "b"), mesh=mesh, layout={"b": "col"})
        >>> (x & 6).numpy(), (x | 1).numpy(), (x ^ 3).numpy(), (~x).numpy()
        (array([[4, 2],
               [6, 6]]), array([[13, 11],
               [ 7, -1]]), array([[15,  9],
               [ 4, -4]]), array([[-13, -11],
               [ -8,   0]]))
    """
    return apply("bitwise_and", lambda xp, a, b: xp.bitwise_and(a, b), (x, y), domain="integer_or_bool")


@nondifferentiable("bitwise_or")
def bitwise_or(x: Any, y: Any) -> ShardArray:
    """Elementwise ``x | y`` of integer or bool arrays (see ``bitwise_and``).

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.array([[12, 10], [7, -1]]), dims=("a", "b"), mesh=mesh, layout={"b": "col"})
        >>> sa.bitwise_or(x, 1).numpy()
        array([[13, 11],
               [ 7, -1]])
    """
    return apply("bitwise_or", lambda xp, a, b: xp.bitwise_or(a, b), (x, y), domain="integer_or_bool")


@nondifferentiable("bitwise_xor")
def bitwise_xor(x: Any, y: Any) -> ShardArray:
    """Elementwise ``x ^ y`` of integer or bool arrays (see ``bitwise_and``).

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.array([[12, 10], [7, -1]]), dims=("a", "b"), mesh=mesh, layout={"b": "col"})
        >>> sa.bitwise_xor(x, 3).numpy()
        array([[15,  9],
               [ 4, -4]])
    """
    return apply("bitwise_xor", lambda xp, a, b: xp.bitwise_xor(a, b), (x, y), domain="integer_or_bool")


@nondifferentiable("bitwise_invert")
def bitwise_invert(x: ShardArray) -> ShardArray:
    """Elementwise ``~x`` of an integer or bool array (see ``bitwise_and``).

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.array([[12, 10], [7, -1]]), dims=("a", "b"), mesh=mesh, layout={"b": "col"})
        >>> sa.bitwise_invert(x).numpy()
        array([[-13, -11],
               [ -8,   0]])
    """
    return apply("bitwise_invert", lambda xp, a: xp.invert(a), (x,), domain="integer_or_bool")


@nondifferentiable("bitwise_left_shift")
def bitwise_left_shift(x: Any, y: Any) -> ShardArray:
    """Elementwise ``x << y`` of integer arrays, broadcasting by dim name.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.array([[1, 2], [3, -8]]), dims=("a", "b"), mesh=mesh, layout={"a": "row"})
        >>> (x << 2).numpy(), (x >> 1).numpy()
        (array([[  4,   8],
               [ 12, -32]]), array([[ 0,  1],
               [ 1, -4]]))
    """
    return apply("bitwise_left_shift", lambda xp, a, b: xp.left_shift(a, b), (x, y), domain="integer")


@nondifferentiable("bitwise_right_shift")
def bitwise_right_shift(x: Any, y: Any) -> ShardArray:
    """Elementwise ``x >> y`` (arithmetic shift) of integer arrays (see ``bitwise_left_shift``).

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.array([[12, 10], [7, -1]]), dims=("a", "b"), mesh=mesh, layout={"b": "col"})
        >>> sa.bitwise_right_shift(x, 2).numpy()
        array([[ 3,  2],
               [ 1, -1]])
    """
    return apply("bitwise_right_shift", lambda xp, a, b: xp.right_shift(a, b), (x, y), domain="integer")


# ------------------------------------------------------------------ orderings, complex values in NumPy's order
def complex_operands(*args: Any) -> bool:
    """Whether an operand of an elementwise op is complex: a complex ShardArray, or a complex Python or NumPy
    scalar (``float_array < 1j`` compares complex values, as in NumPy)."""
    for a in args:
        dt = a.dtype if isinstance(a, (ShardArray, np.generic)) else None
        if (dt is not None and dt.kind == "c") or isinstance(a, complex):
            return True
    return False


def _common(*vals: Any) -> np.dtype:
    """The complex dtype NumPy's loop of blocks (or scalars) ``vals`` runs in (Python scalars weak, NEP 50)."""
    dts = [v.dtype if hasattr(v, "dtype") and not isinstance(v, (bool, int, float, complex)) else v for v in vals]
    dt = np.result_type(*dts)
    return dt if dt.kind == "c" else np.result_type(dt, np.complex64)


def _as(xp: Any, v: Any, dt: np.dtype) -> Any:
    """Block or scalar ``v`` as a block of complex ``dt`` (a scalar converted on the host: a weak Python scalar
    takes ``dt`` as NumPy converts it, ``1e300`` is ``inf`` in complex64)."""
    if hasattr(v, "shape") and not isinstance(v, np.generic):
        return v.astype(dt, copy=False)
    with np.errstate(over="ignore"):
        return xp.asarray(np.asarray(v).astype(dt))


def ordered_bits(xp: Any, part: Any) -> tuple[Any, Any]:
    """A real float block (float32 or float64) as (integers in the order of its values, both zeros 0; its NaNs).

    Made from the bit patterns, without a float comparison: CuPy compiles its kernels with ``-ftz=true``, so a
    float32 comparison reads a subnormal as zero (``1e-40 < 2e-40`` would be False).
    """
    c = part if part.flags.c_contiguous else xp.ascontiguousarray(part)
    size = part.dtype.itemsize
    bits = c.view(np.int32 if size == 4 else np.int64)
    magnitude = bits & ((1 << (8 * size - 1)) - 1)
    inf = 0x7F800000 if size == 4 else 0x7FF0000000000000
    return xp.where(bits < 0, -magnitude, magnitude), magnitude > inf


class _Keys:
    """The parts of a complex block as ``ordered_bits`` keys: ``re``/``im`` (ordered integers) and their NaNs."""

    __slots__ = ("im", "im_nan", "nan", "re", "re_nan")

    def __init__(self, xp: Any, c: Any) -> None:
        self.re, self.re_nan = ordered_bits(xp, c.real)
        self.im, self.im_nan = ordered_bits(xp, c.imag)
        self.nan = self.re_nan | self.im_nan


def _numpy_compare(op: str, p: _Keys, q: _Keys) -> Any:
    """NumPy's complex ``op`` of ``p`` and ``q`` (``CLT``, ``CLE``, ``CGT``, ``CGE`` of its ufunc loops):
    ``(pr < qr and neither imaginary part NaN) or (pr == qr and pi < qi)``, the comparisons of a NaN False."""
    real_nan, imag_nan = p.re_nan | q.re_nan, p.im_nan | q.im_nan
    first = (p.re < q.re) if op.startswith("less") else (p.re > q.re)
    tie = {"less": p.im < q.im, "less_equal": p.im <= q.im, "greater": p.im > q.im}.get(op, p.im >= q.im)
    return (first & ~real_nan & ~imag_nan) | ((p.re == q.re) & ~real_nan & tie & ~imag_nan)


def complex_compare(xp: Any, op: str, a: Any, b: Any) -> Any:
    """``a op b`` of blocks or scalars (one complex at least) in NumPy's order, ``op`` one of ``"less"``,
    ``"less_equal"``, ``"greater"``, ``"greater_equal"``: NumPy's bool results bit for bit on any array module.

    Example:
        >>> complex_compare(np, "less", np.array([1 + 5j, 1 + 1j, complex(0, np.nan)]), 1 + 2j).tolist()
        [False, True, False]
    """
    if isinstance(a, MetaArray) or isinstance(b, MetaArray):
        return xp.equal(a, b)
    dt = _common(a, b)
    return _numpy_compare(op, _Keys(xp, _as(xp, a, dt)), _Keys(xp, _as(xp, b, dt)))


def complex_choose(xp: Any, op: str, a: Any, b: Any, weights: bool = False) -> Any:
    """NumPy's complex ``maximum``/``minimum``/``fmax``/``fmin`` (``op``) of blocks or scalars, bit for bit.

    ``maximum(a, b)`` is ``a`` where ``a`` has a NaN part or ``a >= b``, else ``b`` (so a NaN propagates, the first
    one where both have one); ``fmax(a, b)`` is ``a`` where ``b`` has a NaN part or ``a >= b``, else ``b`` (a NaN
    only where both have one: then ``a``); ties (``0j`` and ``-0j``) take ``a``; ``minimum``/``fmin`` with ``<=``.
    With ``weights``, the share of the cotangent that goes to ``a`` instead (float: 1 where ``a`` is taken, 0.5
    where the values are equal, else 0; ``b`` gets the rest).

    Example:
        >>> complex_choose(np, "maximum", np.array([1 + 5j, 2j, complex(np.nan, 1)]), 1 + 2j).tolist()
        [(1+5j), (1+2j), (nan+1j)]
    """
    if isinstance(a, MetaArray) or isinstance(b, MetaArray):
        return xp.maximum(a, b)
    dt = _common(a, b)
    ca, cb = _as(xp, a, dt), _as(xp, b, dt)
    p, q = _Keys(xp, ca), _Keys(xp, cb)
    take = (p.nan if op in ("maximum", "minimum") else q.nan) | _numpy_compare(
        "greater_equal" if op.endswith("max") or op == "maximum" else "less_equal", p, q
    )
    if not weights:
        return xp.where(take, ca, cb)
    tie = (p.re == q.re) & (p.im == q.im) & ~p.nan & ~q.nan
    return xp.where(tie, 0.5, take.astype(dt.type(0).real.dtype))


def _greater_plain(p: _Keys, q: _Keys) -> Any:
    """``p > q`` as NumPy's ``clip`` loop orders complex values (``clip.cpp``): by the imaginary parts where the
    real parts are equal, else by the real parts, a NaN part comparing False."""
    eq = (p.re == q.re) & ~p.re_nan & ~q.re_nan
    gt_re = (p.re > q.re) & ~p.re_nan & ~q.re_nan
    gt_im = (p.im > q.im) & ~p.im_nan & ~q.im_nan
    return (eq & gt_im) | (~eq & gt_re)


def complex_clip(xp: Any, a: Any, lo: Any, hi: Any, taken: bool = False) -> Any:
    """NumPy's ``clip(a, lo, hi)`` of complex blocks or scalars (its ufunc loop, ``clip.cpp``), bit for bit:
    ``m = a`` where ``a`` has a NaN part or ``a > lo`` (else ``lo``), then ``m`` where ``m`` has a NaN part or
    ``hi > m`` (else ``hi``); ``>`` compares the real parts, or the imaginary parts where those are equal. With
    ``taken``, which value each entry took instead (int8: 0 ``a``, 1 ``lo``, 2 ``hi``), for the VJP.

    Example:
        >>> complex_clip(np, np.array([1 + 5j, -2j, 3 + 0j]), 0j, 2 + 1j).tolist()
        [(1+5j), 0j, (2+1j)]
    """
    if isinstance(a, MetaArray):
        return xp.maximum(xp.maximum(a, lo), hi)
    dt = _common(a, lo, hi)
    ca, clo, chi = _as(xp, a, dt), _as(xp, lo, dt), _as(xp, hi, dt)
    p, lo_keys = _Keys(xp, ca), _Keys(xp, clo)
    took_lo = ~(p.nan | _greater_plain(p, lo_keys))
    m = xp.where(took_lo, clo, ca)
    k, hi_keys = _Keys(xp, m), _Keys(xp, chi)
    keep = k.nan | _greater_plain(hi_keys, k)
    if taken:
        return xp.where(keep, took_lo.astype(np.int8), np.int8(2))
    return xp.where(keep, m, chi)


@nondifferentiable("less")
def _less_complex(x: Any, y: Any) -> ShardArray:
    return apply("less", lambda xp, a, b: complex_compare(xp, "less", a, b), (x, y))


@nondifferentiable("less_equal")
def _less_equal_complex(x: Any, y: Any) -> ShardArray:
    return apply("less_equal", lambda xp, a, b: complex_compare(xp, "less_equal", a, b), (x, y))


@nondifferentiable("greater")
def _greater_complex(x: Any, y: Any) -> ShardArray:
    return apply("greater", lambda xp, a, b: complex_compare(xp, "greater", a, b), (x, y))


@nondifferentiable("greater_equal")
def _greater_equal_complex(x: Any, y: Any) -> ShardArray:
    return apply("greater_equal", lambda xp, a, b: complex_compare(xp, "greater_equal", a, b), (x, y))


def less(x: Any, y: Any) -> ShardArray:
    """``x < y`` elementwise (a bool array), broadcasting by dim name; complex values in NumPy's order.

    Real operands compare as ``arithmetic.less``. Complex ones (or a complex scalar) compare as NumPy's ``np.less``:
    by the real parts, then by the imaginary parts where the real parts are equal; an operand with a NaN part
    makes the result False (``-0.0`` and ``0.0`` are equal). Not differentiable. Each block is computed where it
    lives (no collective beyond aligning the layouts).

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> z = sa.asarray(np.array([[1 + 5j, 2j], [complex(1, np.nan), 1 - 1j]]), dims=("a", "b"), mesh=mesh,
        ...                layout={"a": "row"})
        >>> less(z, 1 + 0j).numpy(), greater_equal(z, 1 + 0j).numpy()
        (array([[False,  True],
               [False,  True]]), array([[ True, False],
               [False, False]]))
    """
    return _less_complex(x, y) if complex_operands(x, y) else ew.less(x, y)


def less_equal(x: Any, y: Any) -> ShardArray:
    """``x <= y`` elementwise, complex values in NumPy's order (see ``less``)."""
    return _less_equal_complex(x, y) if complex_operands(x, y) else ew.less_equal(x, y)


def greater(x: Any, y: Any) -> ShardArray:
    """``x > y`` elementwise, complex values in NumPy's order (see ``less``)."""
    return _greater_complex(x, y) if complex_operands(x, y) else ew.greater(x, y)


def greater_equal(x: Any, y: Any) -> ShardArray:
    """``x >= y`` elementwise, complex values in NumPy's order (see ``less``)."""
    return _greater_equal_complex(x, y) if complex_operands(x, y) else ew.greater_equal(x, y)
