"""NumPy's running sums and covariance beyond the array API standard: ``cumsum``, ``cumprod``, ``cov``.

Clients that take duck arrays call them on the namespace (xarray's ``cumsum``/``cumprod`` of integer and bool
data call ``xp.cumsum``; scikit-learn's ``empirical_covariance`` calls ``np.cov``, which the NumPy protocol sends
here). Each takes NumPy's arguments and gives NumPy's result, composed of the namespace's own functions, whose
collectives and gradients it inherits; none gathers a split axis.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ..backend.meta import truth
from ..callsite import user_stacklevel
from ..errors import ArgumentError, DimensionError, DivisionByZeroError, DTypeError
from . import _scans
from ._align import no_out
from ._array import Array
from ._creation import asarray
from ._dtypes import result_type
from ._elementwise import conj, floor
from ._linalg import matmul, matrix_transpose
from ._manipulation import concat, reshape
from ._statistical import _check
from ._statistical import all as _all
from ._statistical import any as _any
from ._statistical import sum as _sum


def numpy_scan(x: Array, axis: Any, dtype: Any, op: str) -> Array:
    """``cumulative_sum`` (``op="sum"``) or ``cumulative_prod`` of a checked ``x`` with NumPy's axis default: the
    flattened array for ``axis=None`` (``cumsum``/``cumprod`` here, ``nancumsum``/``nancumprod`` in ``_nanfuncs``)."""
    if axis is None:
        x, axis = reshape(x, (-1,)), 0
    fn = _scans.cumulative_sum if op == "sum" else _scans.cumulative_prod
    return fn(x, axis=axis, dtype=dtype)


def _scan(x: Any, axis: Any, dtype: Any, out: Any, what: str) -> Array:
    no_out(out, what)
    return numpy_scan(_check(x, what), axis, dtype, "sum" if what == "cumsum" else "prod")


def cumsum(x: Array, /, axis: int | None = None, dtype: Any = None, out: Any = None) -> Array:
    """The cumulative sum along ``axis``, as ``np.cumsum`` (a NumPy extra; ``axis=None`` scans the flattened array).

    The standard's ``cumulative_sum`` with NumPy's flattening default: along a split axis a local scan, one
    allgather of the block totals over the axis's mesh axes and a local add. Differentiable.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.cumsum(xp.asarray([[1, 2], [3, 4]])).numpy()
        array([ 1,  3,  6, 10])
    """
    return _scan(x, axis, dtype, out, "cumsum")


def cumprod(x: Array, /, axis: int | None = None, dtype: Any = None, out: Any = None) -> Array:
    """The cumulative product along ``axis``, as ``np.cumprod`` (see ``cumsum``; an allgather of block products)."""
    return _scan(x, axis, dtype, out, "cumprod")


def _weights(w: Any, n: int, name: str, integral: bool, device: Any) -> Array:
    w = _check(w if isinstance(w, Array) else asarray(w, device=device), f"cov: {name}")
    if w.ndim != 1 or w.shape[0] != n:
        raise DimensionError(f"cov: {name} must be 1-D with one weight per observation ({n}); got shape {w.shape}")
    if integral and w.dtype.kind == "f" and not truth(_all(w == floor(w)), True):
        raise DTypeError("cov: fweights must be integers (whole numbers)")
    if w.dtype.kind not in "iuf":
        raise DTypeError(f"cov: {name} must be real numbers; got {w.dtype}")
    if truth(_any(w < 0), False):  # (meta: no values, the weights taken as valid)
        raise ArgumentError(f"cov: {name} must be non-negative")
    return w


def cov(
    m: Array,
    y: Array | None = None,
    rowvar: bool = True,
    bias: bool = False,
    ddof: int | None = None,
    fweights: Any = None,
    aweights: Any = None,
    *,
    dtype: Any = None,
) -> Array:
    """The covariance matrix of the variables in ``m`` (and ``y``), as ``np.cov`` (a NumPy extra).

    Each row of a 2-D ``m`` is a variable and each column an observation (``rowvar=False``: the other way round);
    ``y`` adds variables. The deviations from the (weighted) means times their conjugate transpose, over
    ``N - ddof`` (``ddof`` defaults to 1, or 0 with ``bias=True``; NumPy's weighted normalization with
    ``fweights``/``aweights``). Collectives: the means' sums (an allreduce over the observations' mesh axes) and
    the product's (one more allreduce of the variables × variables result). Differentiable.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.cov(xp.asarray([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]])).numpy()
        array([[ 1., -1.],
               [-1.,  1.]])
    """
    m = _check(m, "cov")
    if m.ndim > 2:
        raise DimensionError(f"cov: m must be 1-D or 2-D; got shape {m.shape}")
    if ddof is not None and (isinstance(ddof, bool) or not isinstance(ddof, (int, np.integer))):
        raise ArgumentError(f"cov: ddof must be an integer; got {ddof!r}")
    parts = [m] if y is None else [m, _check(y, "cov: y")]
    want = result_type(*parts, np.float64) if dtype is None else dtype
    rows = []
    for i, p in enumerate(parts):  # (NumPy's rule: m turns with rowvar=False unless 1-D, y unless it is one row)
        if p.ndim > 2:
            raise DimensionError(f"cov: y must be 1-D or 2-D; got shape {p.shape}")
        turn = not rowvar and (p.ndim != 1 if i == 0 else p.ndim == 2 and p.shape[0] != 1)
        p = reshape(p, (1, -1)) if p.ndim == 1 else (matrix_transpose(p) if turn else p)
        rows.append(p.astype(want) if p.dtype != np.dtype(want) else p)
    if rows[0].shape[0] == 0:  # (NumPy: no variables, an empty 0 x 0 result)
        return reshape(rows[0][:, :0], (0, 0))
    x = rows[0] if len(rows) == 1 else concat(rows, axis=0)
    n = x.shape[1]
    w = None
    real = np.dtype(np.float64) if np.dtype(want).kind != "f" else np.dtype(want)  # (weights are real, as NumPy's)
    if fweights is not None:
        w = _weights(fweights, n, "fweights", True, x.device).astype(real)
    if aweights is not None:
        a = _weights(aweights, n, "aweights", False, x.device).astype(real)
        w = a if w is None else w * a
    if w is None:
        avg = _sum(x, axis=1, keepdims=True) / n
        fact = n - (0 if bias else 1) if ddof is None else n - ddof
    else:
        v1 = _sum(w)
        if truth(v1 == 0, False):  # (one number read: NumPy's ZeroDivisionError, before any division; meta: no)
            names = " * ".join(k for k, v in (("fweights", fweights), ("aweights", aweights)) if v is not None)
            raise DivisionByZeroError(
                f"cov: the weights ({names}) of the {n} observations sum to zero, so the weighted mean is undefined "
                f"(a ZeroDivisionError, as NumPy's); give weights with a positive sum"
            )
        avg = _sum(x * w, axis=1, keepdims=True) / v1
        d = (0 if bias else 1) if ddof is None else ddof
        fact = v1 - d * _sum(w * a) / v1 if aweights is not None and d else v1 - d
    # (NumPy: a warning, then 0 degrees of freedom, so inf or nan; a weighted count is read, one number)
    if fact <= 0 if isinstance(fact, (int, float)) else truth(fact <= 0, False):
        warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=user_stacklevel())
        fact = 0.0
    dev = x - avg
    left = dev if w is None else dev * w
    c = matmul(left, matrix_transpose(conj(dev))) / fact
    return reshape(c, ()) if c.shape == (1, 1) else c  # (NumPy squeezes: one variable gives a 0-d variance)


__all__ = ["cov", "cumprod", "cumsum"]
