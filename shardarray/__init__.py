"""shardarray: a NumPy-like distributed ndarray with named dims on a named device mesh.

Example (an emulated 2×2 mesh of NumPy shards):
    >>> import numpy as np, shardarray as sa
    >>> mesh = sa.Mesh({"row": 2, "col": 2})
    >>> x = sa.random.normal(mesh, {"batch": 8, "io": 4}, layout={"batch": "row"})
    >>> w = sa.random.normal(mesh, {"io": 4, "hidden": 6}, layout={"hidden": "col"}, seed=1)
    >>> y = sa.einsum("batch io, io hidden -> batch hidden", x, w)
    >>> y.layout
    {'batch': ('row',), 'hidden': ('col',)}
    >>> np.allclose(y.numpy(), x.numpy() @ w.numpy(), atol=1e-5)
    True
"""

from importlib import import_module as _import_module  # the VJP modules register themselves (nothing bound here)

from . import hardware, matmul, nn, optim, plan, profiler, random, tree
from .array import ShardArray
from .autograd import grad, value_and_grad, vjp
from .comm import CommLog, CommRecord, comm_log
from .errors import (
    ArgumentError,
    BackendError,
    CastError,
    CommError,
    DimensionError,
    DTypeError,
    LayoutError,
    MeshError,
    ShardArrayError,
    TapeError,
)
from .layout import Layout
from .mesh import Mesh
from .ops.creation import asarray, full, ones, zeros
from .ops.einsum import einsum
from .ops.elementwise import (
    abs,
    conj,
    equal,
    exp,
    gelu,
    log,
    maximum,
    minimum,
    not_equal,
    relu,
    imag,
    real,
    sqrt,
    tanh,
    where,
)
from .ops.reduce import max, mean, min, sum
from .ops.indexing import one_hot, take
from .ops.relayout import relayout
from .ops.show import show
from .ops.softmax import logsumexp, softmax
from .ops.structure import broadcast_to, stop_gradient
from .profiler import Profile, profile

# ---- elementwise and reductions
from .ops.elementwise import greater, greater_equal, less, less_equal, negative  # noqa: E402
from .ops.math_unary import (  # noqa: E402
    acos, acosh, asin, asinh, atan, atanh, ceil, cos, cosh, expm1, floor, isfinite, isinf, isnan, log1p, log2,
    log10, positive, reciprocal, round, sign, signbit, sin, sinh, square, tan, trunc,
)
from .ops.math_binary import atan2, clip, copysign, floor_divide, hypot, logaddexp, nextafter, remainder  # noqa: E402
from .ops.logical import (  # noqa: E402
    bitwise_and, bitwise_invert, bitwise_left_shift, bitwise_or, bitwise_right_shift, bitwise_xor, logical_and,
    logical_not, logical_or, logical_xor,
)
# (x @ y is shardarray.ops.operators.matmul; sa.matmul stays the distributed-matmul subpackage)
from .ops.reduce import all, any, prod, std, var  # noqa: E402
_import_module(".autograd.vjp_math", __name__)  # (registers the VJPs of the ops above)


# ---- indexing, concatenation
from .ops.concat import concat, stack  # noqa: E402
from .ops.slicing import isel  # noqa: E402
_import_module(".autograd.vjp_slicing", __name__)  # (registers their VJPs)


# ---- manipulation and search
from .ops.diff import diff  # noqa: E402
from .ops.dims import expand_dims, squeeze  # noqa: E402
from .ops.flip import flip, pad, roll  # noqa: E402
from .ops.repeat import repeat, tile  # noqa: E402
from .ops.reshape import merge_dims, split_dim  # noqa: E402
from .ops.search import argmax, argmin  # noqa: E402
_import_module(".autograd.vjp_shape", __name__)  # (registers their VJPs)


# ---- the default mesh and NumPy's protocols
from .default_mesh import default_mesh, get_default_mesh, set_default_mesh  # noqa: E402
from . import numpy_protocol  # noqa: E402,F401  (ShardArray.__array_ufunc__/__array_function__ tables)


# ---- BLAS threads
from . import threads  # noqa: E402  (sa.threads: the BLAS pool, set at the first mesh)

# ---- reshard and process-local data
from .ops.from_local import from_local  # noqa: E402
from .ops.reshard import reshard  # noqa: E402

# ---- scans, top_k, take_along_dim, nonzero, boolean masks
from .ops.scan import cumprod, cumsum  # noqa: E402
from .ops.topk import top_k  # noqa: E402
from .ops.take_along import take_along_dim  # noqa: E402
from .ops.nonzero import count_nonzero, nonzero  # noqa: E402
from .ops.mask import mask_assign, select  # noqa: E402
_import_module(".autograd.vjp_scan", __name__)  # (registers their VJPs)


# ---- sorting: sort, argsort, unique_*, searchsorted
from .ops.sort import argsort, sort  # noqa: E402  (the sort VJP registers with the op)
from .ops.unique import unique, unique_all, unique_counts, unique_inverse, unique_values  # noqa: E402
from .ops.searchsorted import searchsorted  # noqa: E402

# ---- checkpoints: save, load, export_safetensors
from . import checkpoint  # noqa: E402
from .errors import CheckpointError  # noqa: E402


# ---- reductions that skip NaN (np.nansum & co., xarray's skipna)
from .ops.nanreduce import nanmax, nanmean, nanmin, nanprod, nanstd, nansum, nanvar  # noqa: E402


# ---- fft: sa.fft.* along named dims
from . import fft  # noqa: E402
_import_module(".autograd.vjp_fft", __name__)  # (registers the FFT VJPs)

# ---- linalg: sa.linalg (qr/svd by TSQR, cholesky, solve, eigh, norms, ...)
from . import linalg  # noqa: E402


_import_module(".autograd.vjp_elementwise", __name__)  # (registers the VJPs)
_import_module(".autograd.vjp_reduce", __name__)
_import_module(".autograd.vjp_structure", __name__)

del _import_module

__version__ = "0.1.0"  # the one source of the version (pyproject.toml reads it: [tool.hatch.version])

__all__ = [
    'Mesh', 'ShardArray', 'Layout', 'asarray', 'zeros', 'ones', 'full', 'random',
    'einsum', 'relayout', 'exp', 'log', 'equal', 'not_equal', 'take', 'one_hot',
    'broadcast_to', 'stop_gradient', 'value_and_grad', 'grad', 'vjp', 'tree', 'nn', 'matmul',
    'hardware', 'optim', 'tanh', 'sqrt', 'relu', 'gelu', 'maximum', 'minimum',
    'where', 'abs', 'real', 'imag', 'conj', 'sum', 'mean', 'max',
    'min', 'logsumexp', 'softmax', 'show', 'comm_log', 'CommLog', 'CommRecord', 'profile',
    'Profile', 'profiler', 'plan', 'ShardArrayError', 'CastError', 'CommError', 'LayoutError', 'DimensionError', 'MeshError',
    'BackendError', 'DTypeError', 'TapeError', 'ArgumentError', 'greater', 'greater_equal', 'less', 'less_equal',
    'negative', 'positive', 'sign', 'floor', 'ceil', 'trunc', 'round', 'square',
    'reciprocal', 'sin', 'cos', 'tan', 'asin', 'acos', 'atan', 'sinh',
    'cosh', 'asinh', 'acosh', 'atanh', 'expm1', 'log1p', 'log2', 'log10',
    'isnan', 'isinf', 'isfinite', 'signbit', 'floor_divide', 'remainder', 'atan2', 'hypot',
    'copysign', 'logaddexp', 'nextafter', 'clip', 'logical_not', 'logical_and', 'logical_or', 'logical_xor',
    'bitwise_and', 'bitwise_or', 'bitwise_xor', 'bitwise_invert', 'bitwise_left_shift', 'bitwise_right_shift', 'prod', 'var',
    'std', 'all', 'any', 'concat', 'stack', 'isel', 'split_dim', 'merge_dims',
    'squeeze', 'expand_dims', 'argmax', 'argmin', 'tile', 'repeat', 'flip', 'roll',
    'pad', 'diff', 'default_mesh', 'set_default_mesh', 'get_default_mesh',
    "threads",
    'reshard', 'from_local',
    'cumsum', 'cumprod', 'top_k', 'take_along_dim', 'nonzero', 'count_nonzero', 'select', 'mask_assign',
    'sort', 'argsort', 'unique_values', 'unique_counts', 'unique_inverse', 'unique_all',
    'searchsorted', 'unique',
    'checkpoint', 'CheckpointError',
    'nansum', 'nanmean', 'nanprod', 'nanmax', 'nanmin', 'nanvar', 'nanstd',
    'fft',
    'linalg',
]
