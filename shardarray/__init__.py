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

from . import hardware, matmul, nn, optim, plan, profiler, random, tree
from .array import ShardArray
from .autograd import grad, value_and_grad, vjp
from .comm import CommLog, CommRecord, comm_log
from .errors import (
    ArgumentError,
    BackendError,
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

# ---- elementwise and reductions (elementwise engineer)

# ---- indexing (indexing engineer)

# ---- manipulation and search (manipulation engineer)

# ---- protocols (protocols engineer)

from .autograd import vjp_elementwise, vjp_reduce, vjp_structure  # noqa: E402,F401  (registers the VJPs)

__version__ = "0.1.0"

__all__ = [
    "Mesh", "ShardArray", "Layout", "asarray", "zeros", "ones", "full", "random", "einsum", "relayout",
    "exp", "log", "equal", "not_equal", "take", "one_hot", "broadcast_to", "stop_gradient",
    "value_and_grad", "grad", "vjp", "tree", "nn", "matmul", "hardware", "optim", "tanh", "sqrt", "relu", "gelu", "maximum", "minimum", "where",
    "abs", "real", "imag", "conj",
    "sum", "mean", "max", "min", "logsumexp", "softmax", "show", "comm_log", "CommLog", "CommRecord",
    "profile", "Profile", "profiler", "plan",
    "ShardArrayError", "CommError", "LayoutError", "DimensionError", "MeshError", "BackendError", "DTypeError",
    "TapeError", "ArgumentError",
]
