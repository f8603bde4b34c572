"""The fused CUDA kernels of ``kernels/*.cu``: compiled with ``cupy.RawModule`` on first use, per GPU.

Each launcher takes CuPy arrays on the current device (made contiguous
here), launches on the current stream and returns new arrays; inputs are
never written (shards may be shared between replicas). Row kernels work on
the last axis: one thread block per row. bfloat16 and float16 are computed
in float32 (loaded widened, stored rounded once), float32 in float32, float64
in float64. bfloat16 needs CuPy >= 14 (its bfloat16 is ml_dtypes'); the
sources convert it with integer bit operations, so no CUDA header is needed.

The sources live in the top-level ``kernels/`` of a source checkout and in
``shardarray/kernels/`` of an installed wheel. ``SHARDARRAY_KERNELS=0`` turns
them off (every op then runs the CuPy array path); a source that fails to
compile is reported once with a ``RuntimeWarning`` and that op falls back.

Each source is compiled once per GPU, with that GPU current (``supports``
compiles on every GPU of the mesh's backend, so an MPI process never makes
a context on a GPU it does not use), and each kernel function is looked up
once per (GPU, kernel, dtype). Adam keeps float32 moments for float16
parameters (``moment_dtype``).
"""

from __future__ import annotations

import math
import os
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from ..callsite import user_stacklevel
from ..dtypes import BFLOAT16, accumulation_dtype
from ..errors import BackendError, DTypeError
from . import host_buffers

SOURCES = ("softmax", "layer_norm", "gelu", "adam", "gemm_pointers", "elementwise")
_SUFFIX = {BFLOAT16: "bf16", np.dtype(np.float16): "f16", np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}
_MODULES: dict[tuple[str, int], Any] = {}  # (source, GPU) -> compiled RawModule
_FUNCTIONS: dict[tuple[int, str, str], Any] = {}  # (GPU, kernel, dtype suffix) -> its function
_BROKEN: dict[str, str] = {}
_THREADS = 256


def source_dir() -> Path:
    """Where the ``.cu`` files are: ``shardarray/kernels`` (wheel) or ``<checkout>/kernels``."""
    here = Path(__file__).resolve().parent.parent
    for candidate in (here / "kernels", here.parent / "kernels"):
        if (candidate / "common.cuh").is_file():
            return candidate
    raise FileNotFoundError(
        f"shardarray's CUDA sources (common.cuh, ...) are in neither {here / 'kernels'} "
        f"nor {here.parent / 'kernels'}; reinstall shardarray"
    )


def source(name: str) -> str:
    """The text NVRTC compiles for ``kernels/<name>.cu``: common.cuh followed by the file."""
    d = source_dir()
    return (d / "common.cuh").read_text() + "\n" + (d / f"{name}.cu").read_text()


def enabled() -> bool:
    """False when ``SHARDARRAY_KERNELS=0``."""
    return os.environ.get("SHARDARRAY_KERNELS", "1") != "0"


def supports(where: Any, dtype: Any, name: str) -> bool:
    """Whether the kernels of ``kernels/<name>.cu`` run for CuPy shards of ``dtype`` (compiling them once per GPU).

    Args:
        where: a backend (the kernels are compiled on each of its GPUs, under
            that GPU's scope) or an array namespace (``cupy``: the current GPU).
        dtype: the shards' dtype: bfloat16, float16, float32 or float64 have kernels.
        name: one of ``SOURCES``.

    Example (NumPy shards never take the kernels):
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> supports(mesh.backend, "float32", "softmax"), supports(np, "float32", "softmax")
        (False, False)
    """
    if name not in SOURCES:
        raise BackendError(f"there is no kernels/{name}.cu; the fused kernels are {list(SOURCES)}")
    xp = getattr(where, "xp", where)
    if getattr(xp, "__name__", "") != "cupy" or not enabled() or np.dtype(dtype) not in _SUFFIX:
        return False
    if name in _BROKEN:
        return False
    gpus = getattr(where, "gpus", None)
    try:
        for gpu in sorted(set(gpus)) if gpus else [None]:
            _module(name, gpu)
    except Exception as e:  # a compile or load failure: fall back to the array path, say so once
        _BROKEN[name] = str(e)
        warnings.warn(
            f"shardarray: the fused CUDA kernels of kernels/{name}.cu could not be built ({e}); "
            f"that op runs through CuPy array operations instead",
            RuntimeWarning,
            stacklevel=user_stacklevel(),
        )
        return False
    return True


def moment_dtype(dtype: Any) -> np.dtype:
    """The dtype of Adam's moments m, v for parameters of ``dtype`` (the rule of ``sa.optim.moment_dtype``).

    Floats narrower than float32 keep float32 moments; others their own dtype.

    Example:
        >>> moment_dtype("float16"), moment_dtype("float64")
        (dtype('float32'), dtype('float64'))
    """
    dtype = np.dtype(dtype)
    return accumulation_dtype(dtype) or dtype


def _module(name: str, gpu: int | None = None) -> Any:
    """``kernels/<name>.cu`` compiled and loaded on ``gpu`` (None: the current GPU), once per GPU."""
    import cupy

    if gpu is None:
        gpu = cupy.cuda.Device().id
    key = (name, gpu)
    mod = _MODULES.get(key)
    if mod is None:
        with cupy.cuda.Device(gpu):  # the module (and its context) belongs to this GPU
            mod = cupy.RawModule(code=source(name), options=("--std=c++17",))
            mod.compile()
        _MODULES[key] = mod
    return mod


def _fn(name: str, kernel: str, dtype: Any) -> Any:
    """The function ``<kernel>_<bf16|f16|f32|f64>`` of ``kernels/<name>.cu`` on the current GPU (looked up once)."""
    import cupy

    suffix = _SUFFIX.get(np.dtype(dtype))
    if suffix is None:
        raise DTypeError(
            f"the fused {name} kernel {kernel} has no {np.dtype(dtype)} version; it takes bfloat16, "
            f"float16, float32 or float64 arrays: cast with .astype first (or set SHARDARRAY_KERNELS=0)"
        )
    return _function(cupy, name, kernel, suffix)


def _function(cupy: Any, name: str, kernel: str, suffix: str = "") -> Any:
    """The function ``<kernel>[_<suffix>]`` of ``kernels/<name>.cu`` on the current GPU, looked up once."""
    gpu = cupy.cuda.Device().id
    key = (gpu, kernel, suffix)
    fn = _FUNCTIONS.get(key)
    if fn is None:
        fn = _FUNCTIONS[key] = _module(name, gpu).get_function(f"{kernel}_{suffix}" if suffix else kernel)
    return fn


def _acc(dtype: Any) -> Any:
    return np.float64 if np.dtype(dtype) == np.float64 else np.float32


def _contig(xp: Any, *arrays: Any, dtype: Any = None) -> list[Any]:
    """C-contiguous copies (where needed) of ``arrays``, each keeping its shape: CuPy's ``ascontiguousarray`` makes
    a 0-d array 1-d (shape (1,)), so a kernel's outputs made ``empty_like`` it were 1-d too."""
    out = [xp.ascontiguousarray(a, dtype=dtype) for a in arrays]
    return [c if c.ndim == a.ndim else c.reshape(a.shape) for a, c in zip(arrays, out)]


def _rows_launch(kernel: Any, rows: int, n: int, args: tuple) -> None:
    if rows and n:
        threads = min(1024, max(32, 1 << (max(n, 1) - 1).bit_length()), 2 * _THREADS)
        kernel((rows,), (threads,), args)


def _flat_launch(kernel: Any, n: int, args: tuple) -> None:
    if n:
        kernel((min(math.ceil(n / _THREADS), 1 << 16),), (_THREADS,), args)


def _vector_launch(kernel: Any, n: int, args: tuple) -> None:
    """A kernel of ``n`` elements taken eight per thread (``Stride`` in ``kernels/common.cuh``)."""
    _flat_launch(kernel, math.ceil(n / 8), args)


# ------------------------------------------------------------------ softmax
def softmax_rows(xp: Any, x: Any) -> Any:
    """``softmax`` over the last axis."""
    (x,) = _contig(xp, x)
    y = xp.empty_like(x)
    n = x.shape[-1] if x.ndim else 1
    _rows_launch(_fn("softmax", "softmax_fwd", x.dtype), x.size // max(n, 1), n, (x, y, np.int64(n)))
    return y


def softmax_rows_grad(xp: Any, g: Any, y: Any, scale: float = 1.0) -> Any:
    """``scale y (g - sum(g y))`` over the last axis (a scale other than 1: attention's scores, with no separate pass
    to scale them)."""
    g, y = _contig(xp, g, y, dtype=y.dtype)
    dx = xp.empty_like(y)
    n = y.shape[-1]
    args = (g, y, dx, np.int64(n), _acc(y.dtype)(scale))
    _rows_launch(_fn("softmax", "softmax_bwd", y.dtype), y.size // max(n, 1), n, args)
    return dx


def _causal_launch(kernel: Any, x: Any, arrays: tuple, scale: float) -> None:
    """``kernel`` on the rows of ``x`` (..., n): one warp per row, ``_THREADS // 32`` rows per block; the kernel's
    trailing scalars are ``rows, n, scale``."""
    n = x.shape[-1]
    rows = x.size // max(n, 1)
    if rows and n:
        args = (*arrays, np.int64(rows), np.int64(n), _acc(x.dtype)(scale))
        kernel((math.ceil(rows / (_THREADS // 32)),), (_THREADS,), args)


def causal_softmax_rows(xp: Any, x: Any, scale: float) -> Any:
    """``softmax(scale x + causal mask)`` over the last axis of ``x`` (..., n, n): row ``i`` sees keys ``0..i``."""
    (x,) = _contig(xp, x)
    p = xp.empty_like(x)
    _causal_launch(_fn("softmax", "causal_softmax_fwd", x.dtype), x, (x, p), scale)
    return p


def causal_softmax_rows_grad(xp: Any, g: Any, x: Any, scale: float) -> Any:
    """``scale p (g - sum(g p))`` over the last axis, the VJP of ``causal_softmax_rows``: ``p`` is recomputed from
    the scores ``x`` in float32 (not read back rounded to 16 bits)."""
    x, g = _contig(xp, x, g, dtype=x.dtype)
    dx = xp.empty_like(x)
    _causal_launch(_fn("softmax", "causal_softmax_bwd", x.dtype), x, (g, x, dx), scale)
    return dx


def cross_entropy_rows(xp: Any, x: Any, t: Any) -> tuple[Any, Any]:
    """``(logsumexp(x) - x[t], logsumexp(x))`` over the last axis, ``t`` of shape ``x.shape[:-1]``."""
    (x,) = _contig(xp, x)
    (t,) = _contig(xp, t, dtype=np.int64)
    n = x.shape[-1]
    loss = xp.empty(x.shape[:-1], dtype=x.dtype)
    lse = xp.empty(x.shape[:-1], dtype=_acc(x.dtype))
    _rows_launch(_fn("softmax", "xent_fwd", x.dtype), loss.size, n, (x, t, loss, lse, np.int64(n)))
    return loss, lse


def cross_entropy_rows_grad(xp: Any, g: Any, x: Any, t: Any, lse: Any) -> Any:
    """``g (softmax(x) - onehot(t))`` over the last axis (``g``, ``t``, ``lse`` per row)."""
    x, g = _contig(xp, x, g, dtype=x.dtype)
    (t,) = _contig(xp, t, dtype=np.int64)
    (lse,) = _contig(xp, lse, dtype=_acc(x.dtype))
    dx = xp.empty_like(x)
    n = x.shape[-1]
    _rows_launch(_fn("softmax", "xent_bwd", x.dtype), g.size, n, (g, x, t, lse, dx, np.int64(n)))
    return dx


# ------------------------------------------------------------------ layer norm
def layer_norm_rows(xp: Any, x: Any, gain: Any, bias: Any, eps: float) -> tuple[Any, Any, Any]:
    """``(y, mean, rstd)`` of layer norm over the last axis; ``gain``/``bias`` have that axis only."""
    x, gain, bias = _contig(xp, x, gain, bias, dtype=x.dtype)
    n = x.shape[-1]
    y = xp.empty_like(x)
    mean = xp.empty(x.shape[:-1], dtype=_acc(x.dtype))
    rstd = xp.empty_like(mean)
    _rows_launch(
        _fn("layer_norm", "ln_fwd", x.dtype), mean.size, n, (x, gain, bias, y, mean, rstd, np.int64(n), np.float64(eps))
    )
    return y, mean, rstd


def layer_norm_rows_grad(xp: Any, g: Any, x: Any, gain: Any, mean: Any, rstd: Any) -> tuple[Any, Any]:
    """``(dx, g * x_hat)`` of layer norm over the last axis."""
    g, x, gain = _contig(xp, g, x, gain, dtype=x.dtype)
    mean, rstd = _contig(xp, mean, rstd, dtype=_acc(x.dtype))
    n = x.shape[-1]
    dx, gxh = xp.empty_like(x), xp.empty_like(x)
    _rows_launch(_fn("layer_norm", "ln_bwd", x.dtype), mean.size, n, (g, x, gain, mean, rstd, dx, gxh, np.int64(n)))
    return dx, gxh


# ------------------------------------------------------------------ elementwise
def gelu(xp: Any, x: Any) -> Any:
    """GELU (tanh form), elementwise."""
    (x,) = _contig(xp, x)
    y = xp.empty_like(x)
    _vector_launch(_fn("gelu", "gelu_fwd", x.dtype), x.size, (x, y, np.int64(x.size)))
    return y


def gelu_grad(xp: Any, g: Any, x: Any) -> Any:
    """``g * gelu'(x)``, elementwise (``g`` broadcast to ``x``'s shape)."""
    (x,) = _contig(xp, x)
    (g,) = _contig(xp, xp.broadcast_to(g, x.shape), dtype=x.dtype)
    dx = xp.empty_like(x)
    _vector_launch(_fn("gelu", "gelu_bwd", x.dtype), x.size, (g, x, dx, np.int64(x.size)))
    return dx


def adam(
    xp: Any, p: Any, g: Any, m: Any, v: Any, b1: float, b2: float, step_size: Any, c2: Any, eps: float, decay: Any
) -> tuple[Any, Any, Any]:
    """One Adam step: new ``(p, m, v)`` (see ``kernels/adam.cu``); ``m``, ``v`` are of ``moment_dtype(p.dtype)``.

    ``step_size``, ``c2`` and ``decay`` are numbers, or 0-d float64 arrays on the device (a step counted on the
    device, as under ``sa.graphed``): the kernel ``adam_dev`` then reads them there, so no host value is frozen
    into a launch.
    """
    on_device = not isinstance(step_size, (int, float, np.floating))
    fn = _fn("adam", "adam_dev", p.dtype) if on_device else _fn("adam", "adam", p.dtype)
    moments = moment_dtype(p.dtype)
    for label, s in (("m", m), ("v", v)):
        if np.dtype(s.dtype) != moments:
            raise DTypeError(
                f"Adam's moments m, v of {np.dtype(p.dtype)} parameters are {moments} "
                f"(cuda_kernels.moment_dtype); got {np.dtype(s.dtype)} for {label}. Keep the optimizer "
                f"state in {moments}"
            )
    p, g = _contig(xp, p, xp.broadcast_to(g, p.shape), dtype=p.dtype)
    m, v = _contig(xp, m, v, dtype=moments)
    p2, m2, v2 = xp.empty_like(p), xp.empty_like(m), xp.empty_like(v)
    if on_device:
        step_size, c2, decay = _contig(xp, step_size, c2, decay, dtype=np.float64)
        args = (
            p,
            g,
            m,
            v,
            p2,
            m2,
            v2,
            np.int64(p.size),
            np.float64(b1),
            np.float64(b2),
            step_size,
            c2,
            np.float64(eps),
            decay,
        )
    else:
        args = (p, g, m, v, p2, m2, v2, np.int64(p.size), *map(np.float64, (b1, b2, step_size, c2, eps, decay)))
    _vector_launch(fn, p.size, args)
    return p2, m2, v2


# ------------------------------------------------------------------ add and casts
#: the casts of ``kernels/elementwise.cu``: (from, to) -> its kernel
CASTS = {
    (np.dtype(np.float32), BFLOAT16): "cast_f32_bf16",
    (np.dtype(np.float32), np.dtype(np.float16)): "cast_f32_f16",
    (BFLOAT16, np.dtype(np.float32)): "cast_bf16_f32",
    (np.dtype(np.float16), np.dtype(np.float32)): "cast_f16_f32",
}


def _flat_arrays(xp: Any, *arrays: Any) -> bool:
    """Whether every one of ``arrays`` is an ``xp.ndarray`` laid out C-contiguously (the kernels read them flat)."""
    kind = getattr(xp, "ndarray", None)
    return kind is not None and all(type(a) is kind and a.flags.c_contiguous for a in arrays)


def add(xp: Any, a: Any, b: Any) -> Any:
    """``a + b`` by ``kernels/elementwise.cu`` for C-contiguous CuPy arrays of one float dtype (eight elements per
    thread; CuPy's own add takes one): ``add_vec`` for one shape, ``add_rows`` where one of them is repeated along
    the other's leading axes (its shape is the other's trailing shape, after size-1 axes). Else ``a + b`` itself.

    Example (NumPy blocks are added by NumPy):
        >>> add(np, np.ones(3), np.ones(3))
        array([2., 2., 2.])
    """
    if xp is np or not (_flat_arrays(xp, a, b) and a.dtype == b.dtype):  # (NumPy first: its hot path)
        return a + b
    if a.shape == b.shape:
        if supports(xp, a.dtype, "elementwise"):
            y = xp.empty_like(a)
            _vector_launch(_fn("elementwise", "add_vec", a.dtype), a.size, (a, b, y, np.int64(a.size)))
            return y
        return a + b
    try:
        shape = np.broadcast_shapes(a.shape, b.shape)  # shapes only: no block is touched
    except ValueError:
        return a + b  # CuPy's own error
    if b.shape == shape:
        a, b = b, a  # the sum is the same either way round
    tail = tuple(b.shape)
    while tail and tail[0] == 1:
        tail = tail[1:]
    if a.shape != shape or tail != shape[len(shape) - len(tail) :] or not supports(xp, a.dtype, "elementwise"):
        return a + b
    y = xp.empty_like(a)
    args = (a, b, y, np.int64(a.size), np.int64(b.size))
    _vector_launch(_fn("elementwise", "add_rows", a.dtype), a.size, args)
    return y


def cast(xp: Any, x: Any, dtype: Any) -> Any:
    """``x.astype(dtype)``: a kernel of ``kernels/elementwise.cu`` (``CASTS``) for a C-contiguous CuPy array cast
    between float32 and bfloat16 or float16 (eight elements per thread), else ``x.astype(dtype)`` itself.

    Example (NumPy blocks are cast by NumPy):
        >>> cast(np, np.ones(2), "float32")
        array([1., 1.], dtype=float32)
    """
    if xp is np:  # (NumPy first: its hot path; a big result into a reused host buffer)
        return host_buffers.astype(x, dtype)
    dtype = np.dtype(dtype)
    kernel = CASTS.get((np.dtype(x.dtype), dtype)) if _flat_arrays(xp, x) else None
    if kernel is not None and supports(xp, np.float32, "elementwise"):
        y = xp.empty(x.shape, dtype=dtype)
        _vector_launch(_function(xp, "elementwise", kernel), x.size, (x, y, np.int64(x.size)))
        return y
    return x.astype(dtype)


# ------------------------------------------------------------------ gemm pointers
def batch_pointers(
    xp: Any, nb: int, n2: int, a: tuple[int, int, int], b: tuple[int, int, int], c: tuple[int, int, int]
) -> Any:
    """The (3, nb) uint64 device array of matrix addresses for ``cublasGemmBatchedEx`` (``kernels/gemm_pointers.cu``):
    row ``w`` holds ``base + (i // n2) * s1 + (i % n2) * s2`` for each ``(base, s1, s2)`` (bytes) of A, B and C."""
    fn = _function(xp, "gemm_pointers", "batch_pointers")
    out = xp.empty((3, nb), dtype=np.uint64)
    args: tuple[Any, ...] = (out, np.int64(nb), np.int64(n2))
    for base, s1, s2 in (a, b, c):
        args += (np.uint64(base), np.int64(s1), np.int64(s2))
    _flat_launch(fn, nb, args)
    return out
