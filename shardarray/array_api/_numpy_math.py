"""NumPy's math and polynomial extras beyond the array API standard: ``exp2``, ``heaviside``, ``sinc``,
``nan_to_num``, ``polyval``, ``kron``, ``diag``, ``convolve``, ``correlate`` and ``cross``.

Each takes NumPy's arguments and gives NumPy's result (NumPy's dtypes: ``exp2``/``heaviside`` of integers are
floating, as their ufunc loops are), composed of the namespace's own functions, whose collectives and gradients it
inherits; none gathers a split axis. ``np.exp2``/``np.heaviside`` (ufuncs) and the others (``__array_function__``)
dispatch here by name.
"""

from __future__ import annotations

import math
from typing import Any, cast

import numpy as np

from ..array import ShardArray
from ..dtypes import compute_dtype
from ..errors import ArgumentError, DimensionError, DTypeError
from ._array import Array
from ._creation import asarray, eye, zeros, zeros_like
from ._dtypes import astype, finfo
from ._elementwise import conj, cos, divide, imag, isfinite, isnan, logical_and, logical_not, pow, real, sin
from ._elementwise import where as _where
from ._manipulation import flip, moveaxis, reshape
from ._numpy_extras import pad
from ._statistical import _check
from .linalg import cross as _cross3
from .linalg import diagonal

_MODES = ("full", "same", "valid")


def _loop_dtype(ufunc: np.ufunc, operands: list[Any], what: str) -> np.dtype | None:
    """The dtype of NumPy's loop of ``ufunc`` for these operands (arrays strong, Python scalars weak); None where
    NumPy has no promotion rule for a dtype (bfloat16), so the operands stay as they are."""
    keys = [
        a.dtype
        if isinstance(a, ShardArray)
        else np.dtype(bool)
        if isinstance(a, bool)
        else next((t for t in (int, float, complex) if isinstance(a, t)), None)
        for a in operands
    ]
    if any(k is None for k in keys):
        bad = next(a for a, k in zip(operands, keys) if k is None)
        raise DTypeError(f"{what}: operands must be arrays or Python scalars; got {type(bad).__name__}")
    try:
        return np.dtype(ufunc.resolve_dtypes((*keys, None))[-1])
    except TypeError as e:
        if any(isinstance(k, np.dtype) and k.name == "bfloat16" for k in keys):
            return None
        names = ", ".join(str(k) if isinstance(k, np.dtype) else k.__name__ for k in keys)  # type: ignore[union-attr]
        raise DTypeError(f"{what}: not defined for operands of {names} (as in NumPy): {e}") from None


def where(condition: Array, x1: Any, x2: Any) -> Array:
    """The namespace's three-argument ``where`` (one array)."""
    return cast(Array, _where(condition, x1, x2))


def _astype(x: Array, dtype: Any) -> Array:
    return cast(Array, astype(x, dtype))


def _strong(v: Any, ref: ShardArray) -> Any:
    """A NumPy scalar or 0-d NumPy array as a 0-d array of its own dtype on ``ref``'s mesh (NEP 50: not weak)."""
    if isinstance(v, np.generic) or (isinstance(v, np.ndarray) and v.ndim == 0):
        return asarray(v, device=ref.mesh)
    return v


def _as(x: Any, dtype: np.dtype | None) -> Any:
    """An array operand cast to ``dtype`` (None, or a scalar: unchanged)."""
    return astype(x, dtype) if isinstance(x, ShardArray) and dtype is not None and x.dtype != dtype else x


def exp2(x: Array, /) -> Array:
    """``2 ** x`` elementwise, as ``np.exp2`` (a NumPy extra; integers and bools give NumPy's floating dtype).

    ``pow(2, x)``: elementwise, no collectives. Differentiable (``2 ** x * log 2``).

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.exp2(xp.asarray([[0.0, 1.0], [3.0, -1.0]])).numpy()
        array([[1. , 2. ],
               [8. , 0.5]])
    """
    x = _check(x, "exp2")
    x = _as(x, _loop_dtype(np.exp2, [x], "exp2"))
    if x.dtype.kind != "c":
        return pow(2.0, x)
    # NumPy's complex exp2 is C99's cexp of (re ln 2, im ln 2): where a part is not finite, complex pow gives NaN
    # parts that cexp does not, so those entries take cexp's values: 2**re (cos t + i sin t), t = im ln 2
    re, im = real(x), imag(x)
    with np.errstate(invalid="ignore"):  # (the entries that give NaN here are replaced below, or NaN in NumPy too)
        t = im * math.log(2.0)
        polar = pow(2.0, re) * (cos(t) + sin(t) * 1j)
    odd_im = logical_not(isfinite(im))
    out = where(logical_and(re == math.inf, odd_im), complex(math.inf, math.nan), polar)
    out = where(logical_and(re == -math.inf, odd_im), 0j, out)
    out = where(im == 0, _astype(pow(2.0, re), x.dtype), out)  # (a real argument: exp2 of the real part)
    return where(logical_and(isfinite(re), isfinite(im)), pow(2.0, x), out)


def heaviside(x1: Array | float, x2: Array | float, /) -> Array:
    """The Heaviside step of ``x1``: 0 below zero, 1 above, ``x2`` at zero (NaN stays NaN), as ``np.heaviside``.

    Local ``where``s on the broadcast operands (NumPy's loop dtype: integers give float64, Python scalars are
    weak, NumPy scalars keep their dtype, as NEP 50 has it); either operand may be a scalar, the other an array.
    No collectives but ``where``'s aligning of an array ``x2`` laid out otherwise than ``x1``.
    Differentiable: the gradient is 0 for ``x1`` and flows to ``x2`` where ``x1 == 0``.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.heaviside(xp.asarray([-1.5, 0.0, 2.0]), 0.5).numpy()
        array([0. , 0.5, 1. ])
    """
    ref = cast(Array, _check(x2 if isinstance(x2, ShardArray) and not isinstance(x1, ShardArray) else x1, "heaviside"))
    x1, x2 = _strong(x1, ref), _strong(x2, ref)
    dt = _loop_dtype(np.heaviside, [x1, x2], "heaviside")
    x1, x2 = _as(x1, dt), _as(x2, dt)
    if not isinstance(x1, ShardArray):  # (a scalar x1, an array x2: a 0-d array, broadcast by the wheres)
        x1 = asarray(x1, dtype=dt, device=ref.mesh)
    step = where(x1 > 0, 1.0, where(x1 == 0, x2, zeros_like(x1)))
    return where(isnan(x1), math.nan, step)


def sinc(x: Array) -> Array:
    """The normalized sinc, ``sin(pi x) / (pi x)`` and 1 at 0, as ``np.sinc`` (a NumPy extra).

    NumPy's formula (``pi x`` replaced by the dtype's eps at 0); integers give float64, bfloat16 is computed in
    float32 and rounded once (``dtypes.compute_dtype``; NumPy with ml_dtypes gives float32 there). Elementwise, no
    collectives. Differentiable (0 at 0).

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.sinc(xp.asarray([0.0, 0.5, 1.5])).numpy().round(6)
        array([ 1.      ,  0.63662 , -0.212207])
    """
    x = _check(x, "sinc")
    wide = compute_dtype(x.dtype)
    if wide is not None:
        return _astype(sinc(_astype(x, wide)), x.dtype)
    if x.dtype.kind in "biu":
        x = _astype(x, np.float64)
    y = math.pi * x
    eps = float(finfo(y.dtype).eps) if y.dtype.kind == "f" else 1e-20
    y = where(y != 0, y, eps)
    return divide(sin(y), y)


def _fixed(d: Array, nan: Any, posinf: Any, neginf: Any) -> Array:
    """A real floating ``d`` with NaN, +inf and -inf replaced."""
    big = float(finfo(d.dtype).max)
    hi = big if posinf is None else posinf
    lo = -big if neginf is None else neginf
    up, down = d == math.inf, d == -math.inf  # (NumPy's masks are of the input: a NaN made inf stays inf)
    d = where(isnan(d), nan, d)
    return where(up, hi, where(down, lo, d))


def _complex(re: Array, im: Array, dtype: Any) -> Array:
    """``re + i im`` of ``dtype`` exactly, also for infinite or NaN parts (a product with ``1j`` would make
    ``inf * 0`` a NaN real part); the sum of complex values adds the parts apart."""
    finite = _astype(where(isfinite(im), im, 0.0), dtype) * 1j
    odd = where(
        im == math.inf, complex(0, math.inf), where(im == -math.inf, complex(0, -math.inf), complex(0, math.nan))
    )
    return _astype(re, dtype) + where(isfinite(im), finite, odd)


def nan_to_num(x: Array, copy: bool = True, nan: Any = 0.0, posinf: Any = None, neginf: Any = None) -> Array:
    """``x`` with NaN replaced by ``nan`` and infinities by ``posinf``/``neginf`` (default: the dtype's largest
    finite values), as ``np.nan_to_num``; complex arrays have their real and imaginary parts replaced apart.

    Integer and bool arrays are returned as they are (a copy); ``copy=False`` writes into ``x`` in place and
    returns it, as NumPy. Local ``where``s, no collectives. Differentiable (1 where ``x`` is finite, else 0).

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.nan_to_num(xp.asarray([xp.nan, -xp.inf, 1.5]), posinf=9.0, neginf=-9.0).numpy()
        array([ 0. , -9. ,  1.5])
    """
    x = _check(x, "nan_to_num")
    for name, v in (("nan", nan), ("posinf", posinf), ("neginf", neginf)):
        if not (v is None and name != "nan") and not isinstance(v, (int, float, np.number, ShardArray)):
            raise DTypeError(f"nan_to_num: {name} must be a real number or an array; got {type(v).__name__}")
    if x.dtype.kind not in "fc" and x.dtype.name != "bfloat16":
        return cast(Array, astype(x, x.dtype, copy=True)) if copy else x
    if x.dtype.kind == "c":
        re, im = real(x), imag(x)
        fixed_re, fixed_im = _fixed(re, nan, posinf, neginf), _fixed(im, nan, posinf, neginf)
        rebuilt = _complex(fixed_re, fixed_im, x.dtype)
        result = where(logical_and(isfinite(re), isfinite(im)), x, rebuilt)
    else:
        result = _fixed(x, nan, posinf, neginf)
    result = _as(result, x.dtype)
    if copy:
        return result
    x[...] = result
    return x


def _operand(v: Any, ref: ShardArray | None, what: str) -> ShardArray:
    """``v`` as an array: an array as it is, host data (a list, a NumPy array) moved onto ``ref``'s mesh."""
    if isinstance(v, ShardArray):
        return v
    if ref is None:
        raise DTypeError(f"{what}: expects an array; got {type(v).__name__}. Make one with xp.asarray(...)")
    host = np.asarray(v)
    if host.dtype.kind not in "biufc":
        raise DTypeError(f"{what}: expects numbers; got data of dtype {host.dtype}")
    return asarray(host, device=ref.mesh)


def polyval(p: Any, x: Any) -> Array:
    """The polynomial with coefficients ``p`` (highest power first) at ``x``, as ``np.polyval`` (a NumPy extra).

    Horner's rule as NumPy's (``y = y * x + p[i]`` from ``y = 0``, so NumPy's dtype: ``x``'s promoted with
    ``p``'s). ``p``: a 1-D array of the namespace, or host data (a list, a NumPy array; as NumPy, a 2-D ``p``
    is a sequence of coefficient rows broadcast against ``x``); ``x``: an array, or a number when ``p`` is one.
    Elementwise, no collectives but one broadcast of each coefficient of a split ``p``. Differentiable in ``x``
    and ``p``.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.polyval([3.0, 0.0, 1.0], xp.asarray([0.0, 1.0, 5.0])).numpy()
        array([ 1.,  4., 76.])
    """
    ref = x if isinstance(x, ShardArray) else p if isinstance(p, ShardArray) else None
    if ref is None:
        raise DTypeError("polyval: expects an array for p or x; got host data only. Make one with xp.asarray(...)")
    x = _operand(x, ref, "polyval: x")
    coef: Any = p if isinstance(p, ShardArray) else np.asarray(p)
    if coef.ndim == 0:
        raise DTypeError("polyval: p must be a sequence of coefficients (as in NumPy); got a 0-d value")
    if coef.ndim > 1 and not isinstance(coef, ShardArray):  # (NumPy's rows of coefficients, broadcast against x)
        coef = _operand(coef, ref, "polyval: p")
    if coef.dtype.kind not in "biufc":
        raise DTypeError(f"polyval: p must hold numbers; got dtype {coef.dtype}")
    y = zeros_like(x)
    if coef.shape[0] == 0:
        return y
    dt = np.result_type(x.dtype, coef.dtype)
    y = _as(y * x, dt)  # (NumPy's first step, 0 * x, in x's dtype: 0 * inf is NaN, not NaN + NaN j for complex p)
    x = _as(x, dt)
    for i in range(coef.shape[0]):
        c = coef[i] if isinstance(coef, ShardArray) else coef[i].item()
        y = (y if i == 0 else y * x) + c
    return _as(y, dt)


def kron(a: Any, b: Any) -> Array:
    """The Kronecker product of ``a`` and ``b``, as ``np.kron`` (a NumPy extra; any number of dims).

    NumPy's construction: the shapes equalised with leading 1s, ``a`` with a unit axis after each of its axes
    and ``b`` before each of its, their broadcast product reshaped to ``a.shape * b.shape``. Collectives: the
    reshapes' where a split axis is merged (an ``alltoallv`` of at most a block, or an ``allgather`` of the blocks
    along a mesh axis, as ``xp.reshape`` chooses). Differentiable.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.kron(xp.asarray([[1, 2], [3, 4]]), xp.asarray([[0, 1], [1, 0]])).numpy()
        array([[0, 1, 0, 2],
               [1, 0, 2, 0],
               [0, 3, 0, 4],
               [3, 0, 4, 0]])
    """
    ref = a if isinstance(a, ShardArray) else b if isinstance(b, ShardArray) else None
    a, b = _operand(a, ref, "kron: a"), _operand(b, ref, "kron: b")
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    nd = max(a.ndim, b.ndim)
    sa_ = (1,) * (nd - a.ndim) + a.shape
    sb = (1,) * (nd - b.ndim) + b.shape
    a2 = reshape(a, tuple(n for s in sa_ for n in (s, 1)))
    b2 = reshape(b, tuple(n for s in sb for n in (1, s)))
    return reshape(a2 * b2, tuple(m * n for m, n in zip(sa_, sb)))


def diag(v: Array, k: int = 0) -> Array:
    """The ``k``-th diagonal of a 2-D ``v``, or a 2-D array with the 1-D ``v`` on its ``k``-th diagonal, as
    ``np.diag`` (a NumPy extra).

    2-D: ``linalg.diagonal`` (each device takes the diagonal entries its block holds, a sum pending over the
    matrix's axes; an ``allreduce`` of the diagonal, never of the matrix, resolves it). 1-D: ``v`` padded by
    ``|k|`` zeros into the column whose ``i``-th entry belongs in row ``i`` (one ``move`` of at most a block),
    then a local ``where`` with an ``eye`` mask made on each device (the column broadcast along the rows it is
    split with); no gather. Differentiable.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.diag(xp.asarray([1.0, 2.0]), k=1).numpy()
        array([[0., 1., 0.],
               [0., 0., 2.],
               [0., 0., 0.]])
    """
    v = _check(v, "diag")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise ArgumentError(f"diag: k must be an integer; got {k!r}")
    k = int(k)
    if v.ndim == 2:
        return diagonal(v, offset=k)
    if v.ndim != 1:
        raise DimensionError(f"diag: v must be 1-D or 2-D (as in NumPy); got shape {v.shape}")
    n = v.shape[0] + abs(k)
    col = pad(v, (0, k) if k >= 0 else (-k, 0)) if k else v  # (row i of the result holds col[i] or zeros)
    mask = eye(n, n, k=k, dtype=np.bool_, device=v.device)
    return where(mask, reshape(col, (n, 1)), zeros((), dtype=v.dtype, device=v.device))


def _span(n: int, m: int, mode: str) -> tuple[int, int]:
    """(first index, length) of the full convolution's entries that ``mode`` keeps (``n >= m``)."""
    if mode == "full":
        return 0, n + m - 1
    if mode == "same":
        return (m - 1) // 2, n
    return m - 1, n - m + 1


def convolve(a: Any, v: Any, mode: str = "full") -> Array:
    """The discrete linear convolution of two 1-D arrays, as ``np.convolve`` (a NumPy extra; modes ``full``,
    ``same``, ``valid``).

    Shifted products: with ``m`` the shorter length, the longer array (zero-padded by ``m - 1`` at most) is sliced
    ``m`` times, each slice times one entry of the shorter, and the ``m`` products summed (NumPy's direct sum, so
    integers stay exact). Collectives: each slice of a split array is an ``alltoallv`` of at most a block, and
    each entry of a split short array one ``broadcast`` of a scalar: ``m`` of each, so meant for short kernels.
    Differentiable in both.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     xp.convolve(xp.asarray([1.0, 2.0, 3.0]), xp.asarray([0.0, 1.0, 0.5])).numpy()
        array([0. , 1. , 2.5, 4. , 1.5])
    """
    if mode not in _MODES:
        raise ArgumentError(f"convolve: mode must be one of {_MODES}; got {mode!r}")
    ref = a if isinstance(a, ShardArray) else v if isinstance(v, ShardArray) else None
    a, v = _operand(a, ref, "convolve: a"), _operand(v, ref, "convolve: v")
    a, v = (reshape(t, (1,)) if t.ndim == 0 else t for t in (a, v))
    if a.ndim != 1 or v.ndim != 1:
        raise DimensionError(f"convolve: a and v must be 1-D; got shapes {a.shape} and {v.shape}")
    if a.shape[0] == 0 or v.shape[0] == 0:
        raise DimensionError(f"convolve: a and v must not be empty; got lengths {a.shape[0]} and {v.shape[0]}")
    if v.shape[0] > a.shape[0]:
        a, v = v, a
    dt = np.result_type(a.dtype, v.dtype)
    work = np.dtype(np.int64) if dt == np.bool_ else dt
    a, v = _as(a, work), _as(v, work)
    n, m = a.shape[0], v.shape[0]
    start, length = _span(n, m, mode)
    before, after = max(0, m - 1 - start), max(0, start + length - n)
    ap = pad(a, (before, after)) if before or after else a
    out: Any = None
    for j in range(m):
        s = start - j + before
        term = ap[s : s + length] * v[j]
        out = term if out is None else out + term
    return out != 0 if dt == np.bool_ else _as(out, dt)


def correlate(a: Any, v: Any, mode: str = "valid") -> Array:
    """The cross-correlation of two 1-D arrays, as ``np.correlate`` (``c[k] = sum_n a[n + k] * conj(v[n])``; modes
    ``valid`` (NumPy's default), ``same``, ``full``): ``convolve(a, conj(flip(v)), mode)``, which is NumPy's
    definition for either length order, complex values included. Its collectives are ``convolve``'s (meant for
    short kernels) and ``flip``'s; differentiable in both.

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     c = xp.correlate(xp.asarray([0.0, 1, 2, 3, 4]), xp.asarray([1.0, 2]))
        >>> c.numpy()
        array([ 2.,  5.,  8., 11.])
    """
    ref = a if isinstance(a, ShardArray) else v if isinstance(v, ShardArray) else None
    w = _operand(v, ref, "correlate")
    if w.ndim != 1:
        raise DimensionError(f"correlate: v must be 1-D; got shape {w.shape}")
    w = flip(w)
    return convolve(a, conj(w) if np.dtype(w.dtype).kind == "c" else w, mode)


def cross(a: Array, b: Array, axisa: int = -1, axisb: int = -1, axisc: int = -1, axis: int | None = None) -> Array:
    """NumPy's ``cross``: the cross product of 3-vectors along ``axisa`` of ``a`` and ``axisb`` of ``b`` (``axis``
    sets all three), broadcasting the other axes, the vectors along ``axisc`` of the result (``xp.linalg.cross``,
    the standard's form with one ``axis``, on the vectors moved last; its collectives: a split vector axis
    exchanges single elements). xarray's ``xr.cross`` calls it on a namespace.

    Raises:
        DimensionError: a 0-d operand, an axis out of range, or vectors of another length than 3 (NumPy 2
            deprecated its 2-vector form; pad a zero z component: ``xp.pad(a, [(0, 0)] * (a.ndim - 1) + [(0, 1)])``).

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     c = xp.cross(xp.asarray([[1.0, 2, 3], [0, 0, 1]]), xp.asarray([4.0, 5, 6]))
        >>> c.numpy()
        array([[-3.,  6., -3.],
               [-5.,  4.,  0.]])
    """
    if axis is not None:
        axisa = axisb = axisc = axis
    ref = a if isinstance(a, ShardArray) else b if isinstance(b, ShardArray) else None
    x, y = _operand(a, ref, "cross"), _operand(b, ref, "cross")
    for v, ax, name in ((x, axisa, "axisa"), (y, axisb, "axisb")):
        if v.ndim == 0 or not -v.ndim <= ax < v.ndim:
            raise DimensionError(f"cross: {name}={ax} is out of range for an operand of shape {v.shape}")
        if v.shape[ax] != 3:
            raise DimensionError(
                f"cross: the vectors along {name}={ax} of the operand of shape {v.shape} have {v.shape[ax]} "
                f"components; cross takes 3-vectors (pad a 2-vector with a zero z component)"
            )
    out = _cross3(moveaxis(x, axisa, -1), moveaxis(y, axisb, -1), axis=-1)
    if out.ndim > 1:
        if not -out.ndim <= axisc < out.ndim:
            raise DimensionError(f"cross: axisc={axisc} is out of range for a result of {out.ndim} dims")
        out = moveaxis(out, -1, axisc)
    return out


__all__ = ["convolve", "correlate", "cross", "diag", "exp2", "heaviside", "kron", "nan_to_num", "polyval", "sinc"]
