"""``sa.linalg``: linear algebra on named dims (the array API ``linalg`` extension's named forms).

Distributed algorithms: ``qr``/``svd``/``svdvals`` of matrices split along
their rows by TSQR (one allgather of the small ``n x n`` R factors);
norms as distributed reductions. ``cholesky``, ``solve``, ``inv``, ``det``,
``slogdet``, ``eigh``, ``eigvalsh`` run batched per device on a split batch
dim; on a split matrix they gather it (``ReplicatedFallbackWarning``).
Products are ``sa.einsum``/``sa.matmul``.
"""

from ..autograd import vjp_linalg as _vjp_linalg  # noqa: F401  (registers the VJPs of inv, det, solve)
from ._matrix import ReplicatedFallbackWarning
from .dense import EighResult, SlogdetResult, cholesky, det, eigh, eigvalsh, inv, slogdet, solve
from .norms import matrix_norm, vector_norm
from .pinv import matrix_rank, pinv
from .svd import SVDResult, svd, svdvals
from .tsqr import QRResult, qr

__all__ = [
    "EighResult",
    "QRResult",
    "ReplicatedFallbackWarning",
    "SVDResult",
    "SlogdetResult",
    "cholesky",
    "det",
    "eigh",
    "eigvalsh",
    "inv",
    "matrix_norm",
    "matrix_rank",
    "pinv",
    "qr",
    "slogdet",
    "solve",
    "svd",
    "svdvals",
    "vector_norm",
]
