"""``sa.random``: counter-based random arrays, identical on every mesh and layout."""

from .core.tape import boundaries as _boundaries
from .ops.creation.random import normal, randint, uniform

__all__ = ["normal", "randint", "uniform"]

_boundaries(globals(), __all__)  # each function an op boundary of an MPI job (``core.tape.boundary``)
