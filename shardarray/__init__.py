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
from .autograd.api import grad, value_and_grad, vjp
from .graphs import graphed
from .comm import CommLog, CommRecord, comm_log
from .errors import (
    ArgumentError,
    BackendError,
    CastError,
    CommError,
    CopyWriteWarning,
    DimensionError,
    DivisionByZeroError,
    DTypeError,
    ExistingFileError,
    ExportError,
    GatherWarning,
    GraphError,
    IndexingError,
    IndexTypeError,
    LayoutError,
    MeshError,
    MissingFileError,
    OutOfBoundsError,
    ShardArrayError,
    TapeError,
)
from .layout import Layout
from .mesh import Mesh
from .ops.creation.basic import asarray, full, ones, zeros
from .ops.einsum import einsum
from .ops.elementwise.arithmetic import (
    abs,
    conj,
    equal,
    exp,
    gelu,
    log,
    not_equal,
    relu,
    imag,
    real,
    sqrt,
    tanh,
    where,
)
from .ops.reduction.reduce import max, mean, min, sum
from .ops.indexing.take import one_hot, take
from .core.relayout import relayout
from .core import tape as _core_tape
from .ops.show import show
from .ops.reduction.softmax import logsumexp, softmax
from .ops.manipulation.structure import broadcast_to, stop_gradient
from .profiler import Profile, profile

# ---- elementwise and reductions
from .ops.elementwise.arithmetic import negative
from .ops.elementwise.logical import greater, greater_equal, less, less_equal
from .ops.elementwise.math_binary import maximum, minimum
from .ops.elementwise.math_unary import (
    acos,
    acosh,
    asin,
    asinh,
    atan,
    atanh,
    ceil,
    cos,
    cosh,
    expm1,
    floor,
    isfinite,
    isinf,
    isnan,
    log1p,
    log2,
    log10,
    positive,
    reciprocal,
    round,
    sign,
    signbit,
    sin,
    sinh,
    square,
    tan,
    trunc,
)
from .ops.elementwise.math_binary import (
    atan2,
    clip,
    copysign,
    floor_divide,
    hypot,
    ldexp,
    logaddexp,
    nextafter,
    remainder,
)
from .ops.elementwise.logical import (
    bitwise_and,
    bitwise_invert,
    bitwise_left_shift,
    bitwise_or,
    bitwise_right_shift,
    bitwise_xor,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
)

# (x @ y is shardarray.ops.elementwise.operators.matmul; sa.matmul stays the distributed-matmul subpackage)
from .ops.reduction.reduce import all, any, prod, std, var

_import_module(".autograd.vjp_math", __name__)  # (registers the VJPs of the ops above)


# ---- indexing, concatenation
from .ops.manipulation.concat import concat, stack
from .ops.indexing.slicing import isel

_import_module(".autograd.vjp_slicing", __name__)  # (registers their VJPs)


# ---- manipulation and search
from .ops.manipulation.diff import diff
from .ops.manipulation.dims import expand_dims, squeeze
from .ops.manipulation.flip import flip, pad, roll
from .ops.manipulation.repeat import repeat, tile
from .ops.manipulation.reshape import merge_dims, split_dim
from .ops.reduction.search import argmax, argmin

_import_module(".autograd.vjp_shape", __name__)  # (registers their VJPs)


# ---- the default mesh and NumPy's protocols
from .default_mesh import default_mesh, get_default_mesh, set_default_mesh
from . import numpy_protocol


# ---- BLAS threads
from . import threads

# ---- reshard and process-local data
from .ops.creation.from_local import from_local
from .ops.manipulation.reshard import reshard

# ---- scans, top_k, take_along_dim, nonzero, boolean masks
from .ops.reduction.scan import cumprod, cumsum
from .ops.sorting.topk import top_k
from .ops.indexing.take_along import take_along_dim
from .ops.indexing.nonzero import count_nonzero, nonzero
from .ops.indexing.mask import mask_assign, select

_import_module(".autograd.vjp_scan", __name__)  # (registers their VJPs)


# ---- sorting: sort, argsort, unique_*, searchsorted
from .ops.sorting.sort import argsort, sort
from .ops.sorting.unique import unique, unique_all, unique_counts, unique_inverse, unique_values
from .ops.sorting.searchsorted import searchsorted

# ---- checkpoints: save, load, export_safetensors
from . import checkpoint
from .errors import CheckpointError


# ---- reductions that skip NaN (np.nansum & co., xarray's skipna)
from .ops.reduction.nanreduce import nanmax, nanmean, nanmin, nanprod, nanstd, nansum, nanvar


# ---- fft: sa.fft.* along named dims
from . import fft

_import_module(".autograd.vjp_fft", __name__)  # (registers the FFT VJPs)

# ---- linalg: sa.linalg (qr/svd by TSQR, cholesky, solve, eigh, norms, ...)
from . import linalg

_import_module(".autograd.vjp_linalg", __name__)  # (registers the linalg VJPs: inv, det, solve, qr, ...)

_import_module(".autograd.vjp_elementwise", __name__)  # (registers the VJPs)
_import_module(".autograd.vjp_reduce", __name__)
_import_module(".autograd.vjp_structure", __name__)

# ShardArray's methods and protocols: their ops put into its table from above (array.py imports none of them)
_import_module(".ops.methods", __name__)
_import_module(".array_api", __name__)

# ---- files: sa.io (.npy, Zarr, HDF5; each process reads and writes its own blocks)
from . import io

numpy_protocol.NAMESPACE = _import_module(__name__)  # np.<function>(x) finds sa.<function> here

del _import_module

__version__ = "0.1.0"  # the one source of the version (pyproject.toml reads it: [tool.hatch.version])

__all__ = [
    "ArgumentError",
    "BackendError",
    "CastError",
    "CheckpointError",
    "CommError",
    "CommLog",
    "CommRecord",
    "CopyWriteWarning",
    "DTypeError",
    "DimensionError",
    "DivisionByZeroError",
    "ExistingFileError",
    "ExportError",
    "GatherWarning",
    "GraphError",
    "IndexTypeError",
    "IndexingError",
    "Layout",
    "LayoutError",
    "Mesh",
    "MeshError",
    "MissingFileError",
    "OutOfBoundsError",
    "Profile",
    "ShardArray",
    "ShardArrayError",
    "TapeError",
    "abs",
    "acos",
    "acosh",
    "all",
    "any",
    "argmax",
    "argmin",
    "argsort",
    "asarray",
    "asin",
    "asinh",
    "atan",
    "atan2",
    "atanh",
    "bitwise_and",
    "bitwise_invert",
    "bitwise_left_shift",
    "bitwise_or",
    "bitwise_right_shift",
    "bitwise_xor",
    "broadcast_to",
    "ceil",
    "checkpoint",
    "clip",
    "comm_log",
    "concat",
    "conj",
    "copysign",
    "cos",
    "cosh",
    "count_nonzero",
    "cumprod",
    "cumsum",
    "default_mesh",
    "diff",
    "einsum",
    "equal",
    "exp",
    "expand_dims",
    "expm1",
    "fft",
    "flip",
    "floor",
    "floor_divide",
    "from_local",
    "full",
    "gelu",
    "get_default_mesh",
    "grad",
    "graphed",
    "greater",
    "greater_equal",
    "hardware",
    "hypot",
    "imag",
    "io",
    "isel",
    "isfinite",
    "isinf",
    "isnan",
    "ldexp",
    "less",
    "less_equal",
    "linalg",
    "log",
    "log1p",
    "log2",
    "log10",
    "logaddexp",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "logsumexp",
    "mask_assign",
    "matmul",
    "max",
    "maximum",
    "mean",
    "merge_dims",
    "min",
    "minimum",
    "nanmax",
    "nanmean",
    "nanmin",
    "nanprod",
    "nanstd",
    "nansum",
    "nanvar",
    "negative",
    "nextafter",
    "nn",
    "nonzero",
    "not_equal",
    "one_hot",
    "ones",
    "optim",
    "pad",
    "plan",
    "positive",
    "prod",
    "profile",
    "profiler",
    "random",
    "real",
    "reciprocal",
    "relayout",
    "relu",
    "remainder",
    "repeat",
    "reshard",
    "roll",
    "round",
    "searchsorted",
    "select",
    "set_default_mesh",
    "show",
    "sign",
    "signbit",
    "sin",
    "sinh",
    "softmax",
    "sort",
    "split_dim",
    "sqrt",
    "square",
    "squeeze",
    "stack",
    "std",
    "stop_gradient",
    "sum",
    "take",
    "take_along_dim",
    "tan",
    "tanh",
    "threads",
    "tile",
    "top_k",
    "tree",
    "trunc",
    "unique",
    "unique_all",
    "unique_counts",
    "unique_inverse",
    "unique_values",
    "value_and_grad",
    "var",
    "vjp",
    "where",
    "zeros",
]

# Every function of the namespace is an op boundary of an MPI job (``core.tape.boundary``), as the positional
# namespace's are: ``sa.concat``'s dim and ``sa.isel``'s indices are checked before any op runs, and an error raised
# on some processes only then reaches the others as a ``CommError`` naming it. Not the functions that take the
# program's own functions (their repr differs between processes), that only manage state, or that make an array
# from per-process arguments, which agree over the job themselves first (``Communicator.check_spmd``, naming each
# process's global shape).
_core_tape.boundaries(
    globals(),
    set(__all__)
    - {"comm_log", "default_mesh", "get_default_mesh", "grad", "profile", "set_default_mesh", "value_and_grad", "vjp"}
    - {"asarray", "from_local", "full", "ones", "zeros"},
)
