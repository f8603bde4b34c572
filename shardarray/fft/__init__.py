"""``sa.fft``: discrete Fourier transforms along named dims of distributed arrays.

A transform along an unsplit dim is local (the backend's FFT module per block:
``scipy.fft`` on NumPy shards when SciPy is installed, else ``numpy.fft``;
``cupy.fft``); along a split dim it is the transposition method (one alltoall
moves the split to another dim, local FFT, one alltoall back), so an n-D FFT on
a 2-D mesh is the pencil decomposition; a split dim no other dim takes evenly (a 1-D array) takes the four-step
algorithm, or Bluestein's for a length without two factors ``>=`` its devices (a prime). Results keep the
input's layout.
"""

from ..core.tape import boundaries as _boundaries
from .freq import fftfreq, rfftfreq
from .shift import fftshift, ifftshift
from .transforms import fft, fftn, hfft, ifft, ifftn, ihfft, irfft, irfftn, rfft, rfftn

__all__ = [
    "fft",
    "fftfreq",
    "fftn",
    "fftshift",
    "hfft",
    "ifft",
    "ifftn",
    "ifftshift",
    "ihfft",
    "irfft",
    "irfftn",
    "rfft",
    "rfftfreq",
    "rfftn",
]

_boundaries(globals(), __all__)  # each function an op boundary of an MPI job (``core.tape.boundary``)
