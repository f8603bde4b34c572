"""Unary elementwise math: rounding, trigonometric, hyperbolic, logarithmic and classification functions.

Every function runs the NumPy (or CuPy) ufunc of the same name on each block,
with no communication; a pending sum is resolved first (an allreduce over the
pending axes), since none of these is linear. Results follow NumPy, special
values included (``round`` rounds half to even, keeping ``-0.0``; ``sign(nan)`` is nan).

Dtype domains (``dtypes.check_domain``): the transcendental functions take
floating-point arrays only (cast integers with ``.astype("float32")``);
rounding functions take integer and real float arrays (integers come back
unchanged); ``sign`` and ``square`` any numeric array; ``isnan``/``isinf``/
``isfinite`` any array; ``signbit`` real ones.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...array import ShardArray
from ...core.common import require_array
from ...core.tape import differentiable, nondifferentiable
from ...dtypes import check_domain
from .arithmetic import apply

__all__ = [
    "acos",
    "acosh",
    "asin",
    "asinh",
    "atan",
    "atanh",
    "ceil",
    "cos",
    "cosh",
    "expm1",
    "floor",
    "isfinite",
    "isinf",
    "isnan",
    "log1p",
    "log2",
    "log10",
    "positive",
    "reciprocal",
    "round",
    "sign",
    "signbit",
    "sin",
    "sinh",
    "square",
    "tan",
    "trunc",
]

_EXAMPLE = """

    Runs ``{ufunc}`` on every block (no communication).

    Example:
        >>> mesh = sa.Mesh({{"row": 2, "col": 2}})
        >>> x = sa.asarray(np.array([[{a}, {b}], [{c}, {d}]]), dims=("a", "b"), mesh=mesh, layout={{"a": "row"}})
        >>> y = sa.{name}(x)
        >>> y.dims, y.layout, np.array_equal(y.numpy(), np.{ufunc}(x.numpy()), equal_nan=True)
        (('a', 'b'), {{'a': ('row',)}}, True)
    """


def _make(
    name: str,
    ufunc: str,
    domain: str | None,
    doc: str,
    values: tuple[str, ...] = ("0.25", "-0.5", "0.75", "0.0"),
    differentiable_: bool = True,
) -> Callable[[ShardArray], ShardArray]:
    """One unary op ``name`` running ``xp.<ufunc>`` per block, registered with the autograd when differentiable."""

    def op(x: ShardArray) -> ShardArray:
        return apply(name, _BLOCK.get(name) or (lambda xp, a: getattr(xp, ufunc)(a)), (x,), domain=domain)

    op.__name__ = op.__qualname__ = name
    op.__module__ = __name__
    op.__doc__ = doc + _EXAMPLE.format(name=name, ufunc=ufunc, a=values[0], b=values[1], c=values[2], d=values[3])
    op.__annotations__ = {"x": "ShardArray", "return": "ShardArray"}
    return differentiable(name, resolve_inputs=True)(op) if differentiable_ else nondifferentiable(name)(op)


# blocks not computed by the ufunc of the same name: round is rint (half to even) on floats, identity on integers
_BLOCK: dict[str, Callable[[Any, Any], Any]] = {"round": lambda xp, a: a if a.dtype.kind in "iu" else xp.rint(a)}
_INT = ("1", "-2", "3", "0")
_RND = ("0.5", "-1.5", "2.5", "-0.0")
_SPECIAL = ("np.nan", "1.0", "-np.inf", "0.0")

# rounding: zero gradient almost everywhere (registered, so a gradient through them is an explicit zero)
sign = _make("sign", "sign", "numeric", "Elementwise sign: -1, 0 or 1 (0 for ``±0.0``; nan stays nan).", _RND)
floor = _make("floor", "floor", "real_numeric", "Elementwise floor (the largest integer not above x).", _RND)
ceil = _make("ceil", "ceil", "real_numeric", "Elementwise ceiling (the smallest integer not below x).", _RND)
trunc = _make("trunc", "trunc", "real_numeric", "Elementwise truncation toward zero.", _RND)
round = _make(
    "round", "round", "numeric", "Elementwise rounding to the nearest integer, halves to even (as NumPy).", _RND
)
square = _make("square", "square", "numeric", "Elementwise ``x * x``.", _INT)
reciprocal = _make(
    "reciprocal",
    "reciprocal",
    "inexact",
    "Elementwise ``1 / x`` (floating-point arrays).",
    ("0.25", "-0.5", "0.75", "2.0"),
)

sin = _make("sin", "sin", "inexact", "Elementwise sine (radians).")
cos = _make("cos", "cos", "inexact", "Elementwise cosine (radians).")
tan = _make("tan", "tan", "inexact", "Elementwise tangent (radians).")
asin = _make("asin", "arcsin", "inexact", "Elementwise inverse sine (NumPy's ``arcsin``).")
acos = _make("acos", "arccos", "inexact", "Elementwise inverse cosine (NumPy's ``arccos``).")
atan = _make("atan", "arctan", "inexact", "Elementwise inverse tangent (NumPy's ``arctan``).")
sinh = _make("sinh", "sinh", "inexact", "Elementwise hyperbolic sine.")
cosh = _make("cosh", "cosh", "inexact", "Elementwise hyperbolic cosine.")
asinh = _make("asinh", "arcsinh", "inexact", "Elementwise inverse hyperbolic sine (NumPy's ``arcsinh``).")
acosh = _make(
    "acosh",
    "arccosh",
    "inexact",
    "Elementwise inverse hyperbolic cosine (NumPy's ``arccosh``).",
    ("1.5", "2.0", "1.0", "3.0"),
)
atanh = _make("atanh", "arctanh", "inexact", "Elementwise inverse hyperbolic tangent (NumPy's ``arctanh``).")
expm1 = _make("expm1", "expm1", "inexact", "Elementwise ``exp(x) - 1``, accurate for small x.")
log1p = _make("log1p", "log1p", "inexact", "Elementwise ``log(1 + x)``, accurate for small x.")
log2 = _make("log2", "log2", "inexact", "Elementwise base-2 logarithm.", ("0.25", "2.0", "8.0", "1.0"))
log10 = _make("log10", "log10", "inexact", "Elementwise base-10 logarithm.", ("0.25", "10.0", "100.0", "1.0"))


def _predicate(
    name: str, domain: str | None, doc: str, values: tuple[str, ...] = _SPECIAL
) -> Callable[[ShardArray], ShardArray]:
    """A classification function ``name`` (NumPy's of the same name; a bool array, not differentiable)."""
    return _make(name, name, domain, doc, values, differentiable_=False)


isnan = _predicate("isnan", None, "Elementwise test for NaN (a bool array).")
isinf = _predicate("isinf", None, "Elementwise test for ±inf (a bool array).")
isfinite = _predicate("isfinite", None, "Elementwise test for finite values (a bool array).")
signbit = _predicate(
    "signbit",
    "real",
    "Elementwise test of the sign bit (true for -0.0 and negatives).",
    ("-0.0", "1.0", "-np.inf", "0.0"),
)


def positive(x: ShardArray) -> ShardArray:
    """``+x``: a new array of ``x``'s value, sharing its blocks (no op writes a block, so no data is copied;
    a write in place into ``x`` later leaves it unchanged, as NumPy's copy); refused for bool arrays.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.array([[1.0, -2.0], [3.0, 0.0]]), dims=("a", "b"), mesh=mesh, layout={"b": "col"})
        >>> y = sa.positive(x)
        >>> x[{"a": 0}] = 9.0
        >>> y.numpy()[0]
        array([ 1., -2.])
    """

    x = require_array(x, "positive")
    check_domain("positive", [x], "numeric")
    return x.__copy__()
