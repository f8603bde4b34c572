"""``sa.linalg``: linear algebra on named dims (the array API ``linalg`` extension's named forms).

Distributed algorithms: ``qr``/``svd``/``svdvals`` of matrices split along
their rows by CholeskyQR2 (two allreduces of the small ``n x n`` Gram matrix),
checked, and TSQR (one allgather of the ``n x n`` R factors) where the check fails;
``cholesky`` of a matrix split in 2-D by the blocked right-looking algorithm
(broadcasts of panels, a SUMMA-style trailing update), and through it
``solve``/``inv``/``det``/``slogdet`` of Hermitian positive-definite matrices
(distributed triangular solves; others: the replicated LU fallback with
``ReplicatedFallbackWarning``); norms as distributed reductions. ``eigh``,
``eigvalsh``, ``eig`` and ``eigvals`` gather a split matrix (``ReplicatedFallbackWarning``). On a split
batch dim every op runs per device with no communication.
Products are ``sa.einsum``/``sa.matmul``. ``LinAlgError`` where NumPy raises
one, on CuPy shards too (checked on the devices, read once per op:
``_checks``).
"""

from ..core.tape import boundaries as _boundaries
from ..errors import LinAlgError, MatrixShapeError
from ._matrix import ReplicatedFallbackWarning
from .dense import EighResult, SlogdetResult, cholesky, det, eigh, eigvalsh, inv, slogdet, solve
from .eig import EigResult, eig, eigvals
from .norms import matrix_norm, vector_norm
from .pinv import matrix_rank, pinv
from .svd import SVDResult, svd, svdvals
from .tsqr import QRResult, qr

__all__ = [
    "EigResult",
    "EighResult",
    "LinAlgError",
    "MatrixShapeError",
    "QRResult",
    "ReplicatedFallbackWarning",
    "SVDResult",
    "SlogdetResult",
    "cholesky",
    "det",
    "eig",
    "eigh",
    "eigvals",
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

_boundaries(globals(), __all__)  # each function an op boundary of an MPI job (``core.tape.boundary``)
