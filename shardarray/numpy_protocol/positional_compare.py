"""NumPy's comparisons of whole arrays composed from the namespace's: ``np.isclose`` and its reductions.

Registered in ``positional_compose.COMPOSED``. ``np.allclose``, ``np.array_equal`` and ``np.array_equiv`` return
a Python bool as NumPy does: the one value read is a replicated 0-d reduction, not a gather of the arrays.
``np.isclose`` is NumPy's formula (``|a - b| <= atol + rtol * |b|`` where ``b`` is finite, or ``a == b``) in the
operands' float dtype (float64 for integers).

Example:
    >>> import shardarray.array_api as xp
    >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
    ...     a = xp.asarray([1.0, 2.0, float("nan")])
    >>> np.asarray(np.isclose(a, a + 1e-9)).tolist(), np.array_equal(a, a, equal_nan=True), np.array_equiv(a, a[:1])
    ([True, True, False], True, False)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..array import ShardArray
from ..errors import DTypeError
from .positional_compose import _arrays, _ref, composed


@composed("isclose")
def _isclose(
    xp: Any, what: str, a: Any, b: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False
) -> Any:
    """0-d Array tolerances are read as Python floats (a 0-d read); where neither ``a`` nor ``b`` is an Array
    (``numpy.testing.assert_allclose(host, host, atol=xp_scalar)``) the result is NumPy's on the host values."""
    host = _ref(a, b) is None
    rtol, atol = (_tolerance(what, name, v, host) for name, v in (("rtol", rtol), ("atol", atol)))
    if host:
        return np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)
    x, y = _arrays(xp, what, [a, b])
    x, y = (v if np.dtype(v.dtype).kind in "fc" else xp.astype(v, xp.float64) for v in (x, y))
    result = xp.logical_or(
        xp.logical_and(xp.less_equal(xp.abs(x - y), atol + rtol * xp.abs(y)), xp.isfinite(y)), xp.equal(x, y)
    )
    if equal_nan:
        result = xp.logical_or(result, xp.logical_and(xp.isnan(x), xp.isnan(y)))
    return result


def _tolerance(what: str, name: str, value: Any, host: bool) -> Any:
    """A tolerance of ``np.isclose``: a 0-d Array as its Python value, an n-d one next to Arrays as it is (one next
    to host operands only is refused: its values would be gathered implicitly)."""
    if not isinstance(value, ShardArray) or (value.ndim and not host):
        return value
    if value.ndim == 0:
        return value.item()
    raise DTypeError(
        f"{what}: {name} is an Array of shape {value.shape}; an array of tolerances does not mix with host "
        f"operands, nor is it read implicitly: pass {name}={name}.numpy() (an explicit gather) or a scalar"
    )


@composed("allclose")
def _allclose(
    xp: Any, what: str, a: Any, b: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False
) -> bool:
    return bool(np.all(_isclose(xp, what, a, b, rtol, atol, equal_nan)))


@composed("array_equal")
def _array_equal(xp: Any, what: str, a1: Any, a2: Any, equal_nan: bool = False) -> bool:
    x, y = _arrays(xp, what, [a1, a2])
    if x.shape != y.shape:
        return False
    same = xp.equal(x, y)
    if equal_nan and np.dtype(x.dtype).kind in "fc" and np.dtype(y.dtype).kind in "fc":
        same = xp.logical_or(same, xp.logical_and(xp.isnan(x), xp.isnan(y)))
    return bool(xp.all(same))


@composed("array_equiv")
def _array_equiv(xp: Any, what: str, a1: Any, a2: Any) -> bool:
    x, y = _arrays(xp, what, [a1, a2])
    try:
        np.broadcast_shapes(x.shape, y.shape)  # shapes only
    except ValueError:
        return False
    return bool(xp.all(xp.equal(x, y)))
