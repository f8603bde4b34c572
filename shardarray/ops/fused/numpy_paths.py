"""NumPy versions of the fused row kernels: the same launchers as ``backend.cuda_kernels``, one block at a time.

Each function takes NumPy blocks (the last axis is the row) and returns new
arrays; inputs are never written (shards may be shared between replicas).
They make as few passes as NumPy allows: one mean/variance pass and an
einsum-free backward for layer norm, one exponential pass for the
cross-entropy. float16 and bfloat16 rows are computed in float32 and rounded
once, float32 in float32, float64 in float64 (as the CUDA kernels).

``rows_kernels(x)`` picks the module whose launchers run for ``x``'s shards:
``cuda_kernels`` on CuPy shards with the kernels built, this module on NumPy
shards, None otherwise (meta shards: the array path).

Example:
    >>> x = np.array([[1.0, 3.0]])
    >>> y, mean, rstd = layer_norm_rows(np, x, np.ones(2), np.zeros(2), 0.0)
    >>> y, mean
    (array([[-1.,  1.]]), array([2.]))
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import profiler


def _acc(dtype: Any) -> Any:
    return np.float64 if np.dtype(dtype) == np.float64 else np.float32


def is_numpy(x: Any) -> bool:
    """Whether ``x``'s shards are NumPy arrays of float32 or float64 (the dtypes these launchers take).

    False inside this thread's ``sa.profile()``: a profile records the array path, the one
    ``sa.plan`` models on meta shards, so meta and NumPy profiles agree.
    """
    backend = x.mesh.backend
    xp = backend.xp
    return (
        not (profiler.ACTIVE and profiler.profiling())
        and backend.has_data
        and (xp is np or getattr(xp, "__name__", "") == "numpy")
        and np.dtype(x.dtype) in _FLOATS
    )


_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _dot_rows(a: Any, b: Any) -> Any:
    """``sum(a * b)`` over the last axis without the product's temporary (a 0-d array for 1-d rows: NumPy's
    reductions give a scalar there, which ``out=`` cannot write into)."""
    return np.asarray(np.einsum("...i,...i->...", a, b))


# ------------------------------------------------------------------ layer norm
def inverse_count(n: int) -> float:
    """``1 / n`` for the mean of ``n`` entries; NaN for none (the mean of no entries, as ``np.mean``'s: the rows
    are empty then, and so is the result). The layer norm of ``sa.nn`` scales by it on every path."""
    return 1.0 / n if n else float("nan")


def layer_norm_rows(xp: Any, x: Any, gain: Any, bias: Any, eps: float) -> tuple[Any, Any, Any]:
    """``(y, mean, rstd)`` of layer norm over the last axis; ``gain``/``bias`` have that axis only."""
    acc = _acc(x.dtype)
    n = x.shape[-1]
    mean = np.asarray(np.mean(x, axis=-1, dtype=acc))
    xc = np.subtract(x, mean[..., None], dtype=acc)
    rstd = _dot_rows(xc, xc)
    rstd *= inverse_count(n)
    rstd += eps
    np.sqrt(rstd, out=rstd)
    np.divide(1.0, rstd, out=rstd)
    xc *= rstd[..., None]
    xc *= gain
    xc += bias
    return xc.astype(x.dtype, copy=False), mean, rstd


def layer_norm_rows_grad(xp: Any, g: Any, x: Any, gain: Any, mean: Any, rstd: Any) -> tuple[Any, Any]:
    """``(dx, g * x_hat)`` of layer norm over the last axis."""
    acc = _acc(x.dtype)
    n = x.shape[-1]
    xhat = np.subtract(x, mean[..., None], dtype=acc)
    xhat *= rstd[..., None]
    gh = np.multiply(g, gain, dtype=acc)
    m1 = np.asarray(gh.sum(axis=-1))
    inv_n = inverse_count(n)
    m1 *= inv_n
    m2 = _dot_rows(gh, xhat)
    m2 *= inv_n
    gxh = np.multiply(g, xhat, dtype=acc)
    xhat *= m2[..., None]  # dx = rstd (gh - m1 - xhat m2), built in gh
    gh -= xhat
    gh -= m1[..., None]
    gh *= rstd[..., None]
    return gh.astype(x.dtype, copy=False), gxh.astype(x.dtype, copy=False)


# ------------------------------------------------------------------ softmax cross-entropy
def cross_entropy_rows(xp: Any, x: Any, t: Any) -> tuple[Any, Any]:
    """``(logsumexp(x) - x[t], logsumexp(x))`` over the last axis, ``t`` of shape ``x.shape[:-1]``.

    The shift is the row maximum, 0 where it is not finite (``scipy.special.logsumexp``) or where the rows have
    no entries (an empty last axis, which only an array of no rows has: the results are empty then).
    """
    acc = _acc(x.dtype)
    m = np.asarray(np.max(x, axis=-1, initial=-np.inf), dtype=acc)
    m = np.where(np.isfinite(m), m, acc(0))
    e = np.subtract(x, m[..., None], dtype=acc)
    np.exp(e, out=e)
    lse = np.asarray(np.log(e.sum(axis=-1)) + m, dtype=acc)
    picked = np.take_along_axis(x, np.asarray(t, dtype=np.intp)[..., None], axis=-1)[..., 0]
    return np.asarray(lse - picked, dtype=x.dtype), lse


def cross_entropy_rows_grad(xp: Any, g: Any, x: Any, t: Any, lse: Any) -> Any:
    """``g (softmax(x) - onehot(t))`` over the last axis (``g``, ``t``, ``lse`` per row)."""
    acc = _acc(x.dtype)
    p = np.subtract(x, np.asarray(lse)[..., None], dtype=acc)
    np.exp(p, out=p)
    if p.size:  # (no rows, or rows of no entries: nothing to pick, and no reshape to (-1, 0))
        rows = p.reshape(-1, p.shape[-1])
        rows[np.arange(rows.shape[0]), np.asarray(t, dtype=np.intp).reshape(-1)] -= 1
    p *= np.asarray(g, dtype=acc)[..., None]
    return p.astype(x.dtype, copy=False)


# ------------------------------------------------------------------ Adam
def adam(
    xp: Any, p: Any, g: Any, m: Any, v: Any, b1: float, b2: float, step_size: float, c2: float, eps: float, decay: float
) -> tuple[Any, Any, Any]:
    """One Adam step, new ``(p, m, v)``, in one pass per parameter with two temporaries (``cuda_kernels.adam``).

    The same operations, in the same order, as ``sa.optim.Adam``'s array path
    (so the results are equal bit for bit); the moments have ``p``'s dtype.
    """
    step_size, c2, decay = float(step_size), float(c2), float(decay)  # 0-d arrays: a step counted on the devices
    if not isinstance(g, np.ndarray) or g.dtype != m.dtype or g.shape != p.shape:
        g = np.broadcast_to(np.asarray(g, dtype=m.dtype), p.shape)  # a float16 gradient of a float32 master: widened
    m2 = np.multiply(m, b1, out=np.empty_like(m))  # (out=: an array for 0-d blocks too, where * gives a scalar)
    t = np.multiply(g, 1.0 - b1, out=np.empty_like(m))
    m2 += t
    v2 = np.multiply(v, b2, out=np.empty_like(v))
    np.multiply(g, g, out=t)
    t *= 1.0 - b2
    v2 += t
    np.multiply(v2, 1.0 / c2, out=t)
    np.sqrt(t, out=t)
    t += eps
    upd = np.multiply(m2, -step_size, out=np.empty_like(m2))
    upd /= t
    if decay != 1.0:
        np.multiply(p, decay, out=t)
        t += upd
        return t, m2, v2
    return np.add(p, upd, out=upd), m2, v2
