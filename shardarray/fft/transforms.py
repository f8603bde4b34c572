"""Discrete Fourier transforms along named dims: fft, ifft, rfft, irfft, hfft, ihfft and their n-D forms.

Every 1-D transform along ``dim`` runs the backend's FFT module (``Backend.fft``: ``scipy.fft`` on NumPy
shards when SciPy is installed, else ``numpy.fft``; ``cupy.fft`` on GPUs) on blocks that hold all of ``dim``
(see ``pencil.along``):

- ``dim`` unsplit: local, no communication.
- ``dim`` split over mesh axes ``A`` (``k`` devices): one alltoall over ``A``
  moves the split onto another dim, the transform runs locally, one alltoall
  back restores the input's layout. Per device each alltoall sends
  ``(k-1)/k`` of its block (input block there, output block back).
- a 1-D array split over ``A``, or one whose other dims are too short to take
  the split evenly (the transposition would pile the array on a few devices:
  ``pencil.crowding``): the four-step algorithm (``four_step.py``), three
  alltoalls over ``A`` of at most a block each, the other dims a batch. A
  length ``n`` with no factors ``n1·n2`` both ``>= k`` (prime, or too small)
  takes Bluestein's algorithm (``bluestein.py``: a circular convolution of
  length ``m >= 2n - 1`` by two four-step transforms and a pointwise product,
  nine alltoalls of about a block of the length-``m`` transform each) when the
  fallback would hold more than ``four_step.GATHER_MAX_BYTES`` (64 KiB) on a
  device; below that the fallback stays (fewer bytes and collectives): a 1-D
  array gathers the dim (one allgather, each device keeping its own output
  block), a short partner dim takes the transposition. A large prime split
  dim never gathers.

The result always has the input's layout (the array API user's expectation),
with a dim whose size changed (``n``, rfft's ``n//2+1``) in canonical
ceil-blocks. Single precision stays single (complex64 in, complex64 out;
float32 real input gives complex64); float16 is computed in single precision
and, as in NumPy 2, gives complex64, or float16 from irfft/hfft of float16.
``norm`` is "backward" (default: no
scaling forward, ``1/n`` inverse), "ortho" (``1/sqrt(n)`` both ways) or
"forward" (``1/n`` forward). All are differentiable (``autograd/vjp_fft.py``).
An n-D form's ``s`` entry of -1 means the input's size along that dim (the
array API's and NumPy's rule, irfftn's last dim included).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..array import ShardArray
from ..core.common import dims_arg, require_array
from ..core.relayout import resolve_to
from ..core.tape import differentiable
from ..dtypes import BFLOAT16
from ..errors import ArgumentError, DimensionError, DTypeError
from ..ops.manipulation.structure import astype
from . import split1d
from .four_step import applies
from .pencil import along, resize, splits

NORMS = ("backward", "ortho", "forward")
DUAL = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


def complex_dtype(dt: Any) -> np.dtype:
    """The complex dtype of a transform of ``dt`` (single stays single)."""
    dt = np.dtype(dt)
    return np.dtype(np.complex64) if dt in (np.float16, np.float32, np.complex64) else np.dtype(np.complex128)


def real_dtype(dt: Any) -> np.dtype:
    """The real dtype a complex-to-real transform of ``dt`` computes in."""
    return np.dtype(np.float32) if complex_dtype(dt) == np.complex64 else np.dtype(np.float64)


def c2r_dtype(dt: Any) -> np.dtype:
    """The result dtype of a complex-to-real transform (irfft, hfft) of ``dt``: NumPy 2's ``result_type(dt.real,
    1.0)``, so float16 input gives float16 (computed in single precision), complex64 float32, float32 float32."""
    return np.dtype(np.float16) if np.dtype(dt) == np.float16 else real_dtype(dt)


def check_norm(norm: Any, what: str) -> str:
    if norm is None:
        return "backward"
    if norm not in NORMS:
        raise ArgumentError(f"{what}: norm must be one of {NORMS}; got norm={norm!r}. Use norm='backward' (default)")
    return norm


def check_n(n: Any, what: str, name: str = "n", type_error: bool = True) -> int | None:
    """``n`` (a transform length, or None) as an int: a non-integer is a ``DTypeError`` (NumPy's ``TypeError``;
    ``type_error=False``: an ``ArgumentError``, as ``numpy.fft.fftfreq``'s ``ValueError``), ``n < 1`` an
    ``ArgumentError`` (NumPy's ``ValueError``)."""
    if n is None:
        return None
    integer = isinstance(n, (int, np.integer)) and not isinstance(n, (bool, np.bool_))
    if not integer and type_error:
        raise DTypeError(
            f"{what}: {name} must be an integer (the transform length) or None; got {name}={n!r} of type "
            f"{type(n).__name__} (NumPy's TypeError). Pass int({name}), e.g. {name}=8"
        )
    if not integer or n < 1:
        raise ArgumentError(
            f"{what}: {name} must be a positive integer (the transform length) or None; got "
            f"{name}={n!r}. Pass the number of points, e.g. {name}=8"
        )
    return int(n)


def _input(x: Any, what: str, kinds: str, expect: str) -> ShardArray:
    x = require_array(x, what)
    if x.dtype == BFLOAT16:  # no bfloat16 FFT anywhere: computed in float32 (complex64 out), as float16 is
        return astype(x, "float32")
    if x.dtype.kind not in kinds:
        raise DTypeError(
            f"{what}: expects {expect} input; got dtype {x.dtype}. Convert first, e.g. "
            f"x.astype('{'complex128' if 'c' in kinds else 'float64'}')"
        )
    return x


def _one_dim(x: ShardArray, dim: Any, what: str) -> str:
    names = dims_arg(x, dim, what)
    if len(names) != 1:
        raise DimensionError(
            f"{what}: transforms along one dim; got dim={dim!r} ({names}). Use the n-D form ({what}n) for several dims"
        )
    return names[0]


def _length(x: ShardArray, dim: str, n: int | None, what: str, default: int | None = None) -> int:
    if n is not None:
        return n
    m = x.sizes[dim] if default is None else default
    if m < 1:
        raise ArgumentError(
            f"{what}: dim {dim!r} of size {x.sizes[dim]} gives an empty transform ({m} points); "
            f"pass n >= 1 (the input is zero-padded) or transform a non-empty dim"
        )
    return m


# ------------------------------------------------------------------ primitives (one VJP each)
@differentiable("fft_c2c")
def c2c(
    x: ShardArray, dim: str, n: int, norm: str, inverse: bool, avoid: tuple[str, ...] = (), back: bool = True
) -> ShardArray:
    """Complex-to-complex DFT of length ``n`` along ``dim`` (``inverse``: ifft); ``back=False`` leaves a split
    ``dim``'s axes on the partner dim (one alltoall instead of two; ``pencil.along``)."""
    fft = x.mesh.backend.fft
    dt = complex_dtype(x.dtype)
    name = "ifft" if inverse else "fft"

    def local(b: Any, axis: int) -> Any:
        return getattr(fft, name)(b.astype(dt, copy=False), n=n, axis=axis, norm=norm)

    x = resolve_to(x) if x.pending else x
    if applies(x, dim, n, avoid):  # a split 1-D array (or no even partner): the four-step algorithm (or Bluestein)
        return split1d.c2c(x, dim, n, norm, inverse, n, dt)
    return along(x, dim, local, n, dt, avoid, back, need=n)


@differentiable("fft_r2c")
def r2c(x: ShardArray, dim: str, n: int, norm: str, hermitian: bool, avoid: tuple[str, ...] = ()) -> ShardArray:
    """Real-to-complex DFT (rfft; ``hermitian``: ihfft): ``n//2 + 1`` outputs along ``dim``."""
    fft = x.mesh.backend.fft
    name = "ihfft" if hermitian else "rfft"
    rt = real_dtype(x.dtype)

    def local(b: Any, axis: int) -> Any:
        return getattr(fft, name)(b.astype(rt, copy=False), n=n, axis=axis, norm=norm)

    x = resolve_to(x) if x.pending else x
    if applies(x, dim, n, avoid):  # rfft = fft[:n//2+1], ihfft = ifft[:n//2+1] of the real input (same norm)
        return split1d.r2c(x, dim, n, norm, hermitian, n // 2 + 1, complex_dtype(x.dtype), n // 2 + 1)
    return along(x, dim, local, n // 2 + 1, complex_dtype(x.dtype), avoid, need=n)


@differentiable("fft_c2r")
def c2r(x: ShardArray, dim: str, n: int, norm: str, hermitian: bool, avoid: tuple[str, ...] = ()) -> ShardArray:
    """Complex-to-real DFT of ``n`` outputs along ``dim`` (irfft; ``hermitian``: hfft)."""
    fft, xp = x.mesh.backend.fft, x.mesh.backend.xp
    name = "hfft" if hermitian else "irfft"
    ct = complex_dtype(x.dtype)

    def local(b: Any, axis: int) -> Any:
        if not b.shape[axis]:  # numpy.fft's irfft/hfft pad an empty axis with uninitialized memory: zeros here
            b = resize(xp, b, axis, 1)
        return getattr(fft, name)(b.astype(ct, copy=False), n=n, axis=axis, norm=norm)

    x = resolve_to(x) if x.pending else x
    if applies(x, dim, n, avoid):  # irfft = Re(ifft(w·x)), hfft = Re(fft(w·x)), w = 1, 2, ..., 2, 1 (same norm)
        return split1d.c2r(x, dim, n, norm, not hermitian, c2r_dtype(x.dtype), ct)
    return along(x, dim, local, n, c2r_dtype(x.dtype), avoid, need=n // 2 + 1)


# ------------------------------------------------------------------ 1-D public forms
def _c2c_public(x: Any, dim: Any, n: Any, norm: Any, inverse: bool, what: str) -> ShardArray:
    x = _input(x, what, "fc", "floating-point (complex or real)")
    d = _one_dim(x, dim, what)
    return c2c(x, d, _length(x, d, check_n(n, what), what), check_norm(norm, what), inverse)


def _r2c_public(x: Any, dim: Any, n: Any, norm: Any, hermitian: bool, what: str) -> ShardArray:
    x = _input(x, what, "f", "real floating-point")
    d = _one_dim(x, dim, what)
    return r2c(x, d, _length(x, d, check_n(n, what), what), check_norm(norm, what), hermitian)


def _c2r_public(x: Any, dim: Any, n: Any, norm: Any, hermitian: bool, what: str) -> ShardArray:
    """irfft's and hfft's checks; ``n`` defaults to ``2*(m-1)`` for ``m`` inputs."""
    x = _input(x, what, "fc", "floating-point (complex or real)")
    d = _one_dim(x, dim, what)
    return c2r(x, d, _length(x, d, check_n(n, what), what, 2 * (x.sizes[d] - 1)), check_norm(norm, what), hermitian)


def fft(x: ShardArray, dim: Any, n: int | None = None, norm: str = "backward") -> ShardArray:
    """The 1-D discrete Fourier transform along ``dim``, as ``numpy.fft.fft``.

    Args:
        x: a floating-point array (real input is transformed as complex).
        dim: the dim (name or position).
        n: the transform length (``x`` truncated or zero-padded along ``dim``); default its size.
        norm: "backward" (default), "ortho" or "forward".

    Collectives: none when ``dim`` is unsplit; else two alltoalls over its
    axes, each ``(k-1)/k`` of a device's block (see the module docstring); a
    split 1-D array, or a split dim whose other dims are too short to take the
    split evenly: three alltoalls (four-step), or nine (Bluestein) when ``n``
    has no factors ``n1·n2`` both ``>= k`` (prime), each at most a block of
    the transform; one allgather instead (a 1-D array) while the gathered
    transform is at most 64 KiB (``four_step.GATHER_MAX_BYTES``). The result
    has ``x``'s layout.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.ones((4, 4)), dims=("t", "c"), mesh=mesh, layout={"t": "row", "c": "col"})
        >>> sa.fft.fft(x, "t").numpy()[:, 0]
        array([4.+0.j, 0.+0.j, 0.+0.j, 0.+0.j])
    """
    return _c2c_public(x, dim, n, norm, False, "fft")


def ifft(x: ShardArray, dim: Any, n: int | None = None, norm: str = "backward") -> ShardArray:
    """The inverse of ``fft`` along ``dim``, as ``numpy.fft.ifft`` (same arguments and collectives).

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.ones((4, 4)), dims=("t", "c"), mesh=mesh, layout={"t": "row", "c": "col"})
        >>> sa.fft.ifft(sa.fft.fft(x, "t"), "t").numpy().real[0]
        array([1., 1., 1., 1.])
    """
    return _c2c_public(x, dim, n, norm, True, "ifft")


def rfft(x: ShardArray, dim: Any, n: int | None = None, norm: str = "backward") -> ShardArray:
    """The DFT of real input along ``dim``: ``n//2 + 1`` non-negative frequencies, as ``numpy.fft.rfft``.

    Collectives as ``fft``: the alltoall back carries the ``n//2 + 1`` outputs.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.ones((4, 6)), dims=("t", "c"), mesh=mesh, layout={"t": "row", "c": "col"})
        >>> sa.fft.rfft(x, "c").shape
        (4, 4)
    """
    return _r2c_public(x, dim, n, norm, False, "rfft")


def irfft(x: ShardArray, dim: Any, n: int | None = None, norm: str = "backward") -> ShardArray:
    """The inverse of ``rfft``: ``n`` real outputs (default ``2*(m-1)``) along ``dim``, as ``numpy.fft.irfft``.

    Collectives as ``fft``.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.ones((4, 6)), dims=("t", "c"), mesh=mesh, layout={"t": "row", "c": "col"})
        >>> sa.fft.irfft(sa.fft.rfft(x, "c"), "c", n=6).numpy()[0]
        array([1., 1., 1., 1., 1., 1.])
    """
    return _c2r_public(x, dim, n, norm, False, "irfft")


def hfft(x: ShardArray, dim: Any, n: int | None = None, norm: str = "backward") -> ShardArray:
    """The DFT of a Hermitian-symmetric signal given by its first half: ``n`` real outputs, as ``numpy.fft.hfft``.

    Collectives as ``fft``.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.ones((4, 3), complex), dims=("t", "c"), mesh=mesh, layout={"c": "col"})
        >>> sa.fft.hfft(x, "c").numpy()[0]
        array([4., 0., 0., 0.])
    """
    return _c2r_public(x, dim, n, norm, True, "hfft")


def ihfft(x: ShardArray, dim: Any, n: int | None = None, norm: str = "backward") -> ShardArray:
    """The inverse of ``hfft`` for real input: ``n//2 + 1`` outputs, as ``numpy.fft.ihfft``. Collectives as ``fft``.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.ones((4, 4)), dims=("t", "c"), mesh=mesh, layout={"c": "col"})
        >>> sa.fft.ihfft(x, "c").numpy()[0].real
        array([1., 0., 0.])
    """
    return _r2c_public(x, dim, n, norm, True, "ihfft")


# ------------------------------------------------------------------ n-D forms
def distinct_dims(x: ShardArray, dims: Any, what: str) -> tuple[str, ...]:
    """``dims`` (None: all of ``x``'s; a name, a position or a tuple of them) as distinct dim names."""
    raw = dims if isinstance(dims, (tuple, list)) else (dims,)
    if dims is not None and len(set(raw)) != len(raw):
        raise DimensionError(f"{what}: dims {tuple(raw)} repeat a dim; name each dim once")
    names = x.dims if dims is None else dims_arg(x, tuple(raw), what)
    if len(set(names)) != len(names):
        raise DimensionError(f"{what}: dims {tuple(raw)} name a dim twice ({names}); name each dim once")
    return names


def _dims_s(x: ShardArray, dims: Any, s: Any, what: str) -> tuple[tuple[str, ...], list[int | None]]:
    names = distinct_dims(x, dims, what)
    if not names:
        raise DimensionError(f"{what}: needs at least one dim to transform; got dims={dims!r} on {x.dims}")
    if s is None:
        return names, [None] * len(names)
    if not isinstance(s, (tuple, list)):
        raise DTypeError(f"{what}: s must be a tuple of lengths (NumPy's TypeError); got s={s!r}. Pass s=({s!r},)")
    if len(s) != len(names):
        raise ArgumentError(
            f"{what}: s must give one length per transformed dim {names}; got s={s!r}. "
            f"Pass a tuple of {len(names)} positive integers (or s=None)"
        )
    # -1: the whole input along that dim (the array API's and NumPy's rule; irfftn's last dim included)
    return names, [check_n(x.sizes[d] if is_minus_one(v) else v, what, "s") for v, d in zip(s, names)]


def is_minus_one(v: Any) -> bool:
    """Whether ``v`` is the int -1 (an ``s`` entry asking for the input's whole length)."""
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) and v == -1


def _nd_c2c(x: Any, dims: Any, s: Any, norm: Any, inverse: bool, what: str) -> ShardArray:
    x = _input(x, what, "fc", "floating-point (complex or real)")
    names, ns = _dims_s(x, dims, s, what)
    norm = check_norm(norm, what)
    for k in reversed(range(len(names))):
        d = names[k]
        x = c2c(x, d, _length(x, d, ns[k], what), norm, inverse, names[:k])
    return x


def c2c_any_layout(x: Any, dims: Any, s: Any, norm: Any, inverse: bool, what: str) -> ShardArray:
    """``fftn``/``ifftn`` with the result's layout left to the algorithm (the positional namespace's ``xp.fft``,
    where a layout is not part of an array's meaning, as JAX leaves an output's sharding to the compiler).

    The 1-D transforms commute, so the unsplit dims go first (no traffic), then each split dim with **one**
    alltoall moving its axes onto a partner dim (preferably one not transformed yet, or a batch dim) and no
    alltoall back: a 2-D transform of a row-split array costs one alltoall instead of two, and its result is
    split along the other dim. The named ``fftn`` keeps the input's layout (two alltoalls per split dim).
    """
    x = _input(x, what, "fc", "floating-point (complex or real)")
    names, ns = _dims_s(x, dims, s, what)
    norm = check_norm(norm, what)
    lengths = {d: _length(x, d, ns[k], what) for k, d in enumerate(names)}
    left = list(reversed(names))
    while left:
        d = next((d for d in left if splits(x, d) == 1), left[0])
        left.remove(d)
        x = c2c(x, d, lengths[d], norm, inverse, tuple(left), False)
    return x


def fftn(x: ShardArray, dims: Any = None, s: Sequence[int] | None = None, norm: str = "backward") -> ShardArray:
    """The n-D DFT over ``dims`` (default all), as ``numpy.fft.fftn``: one 1-D ``fft`` per dim, last first.

    On a 2-D mesh this is the pencil decomposition: each split dim costs two
    alltoalls over its axes (``(k-1)/k`` of a block each); unsplit dims none.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.ones((4, 4)), dims=("a", "b"), mesh=mesh, layout={"a": "row", "b": "col"})
        >>> complex(sa.fft.fftn(x).numpy()[0, 0])
        (16+0j)
    """
    return _nd_c2c(x, dims, s, norm, False, "fftn")


def ifftn(x: ShardArray, dims: Any = None, s: Sequence[int] | None = None, norm: str = "backward") -> ShardArray:
    """The inverse of ``fftn``, as ``numpy.fft.ifftn`` (collectives as ``fftn``).

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.ones((4, 4)), dims=("a", "b"), mesh=mesh, layout={"a": "row", "b": "col"})
        >>> sa.fft.ifftn(sa.fft.fftn(x)).numpy().real[0]
        array([1., 1., 1., 1.])
    """
    return _nd_c2c(x, dims, s, norm, True, "ifftn")


def rfftn(x: ShardArray, dims: Any = None, s: Sequence[int] | None = None, norm: str = "backward") -> ShardArray:
    """The n-D DFT of real input, as ``numpy.fft.rfftn``: ``rfft`` on the last of ``dims``, ``fft`` on the rest.

    Collectives as ``fftn``.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.ones((4, 4)), dims=("a", "b"), mesh=mesh, layout={"a": "row", "b": "col"})
        >>> sa.fft.rfftn(x).shape
        (4, 3)
    """
    x = _input(x, "rfftn", "f", "real floating-point")
    names, ns = _dims_s(x, dims, s, "rfftn")
    norm = check_norm(norm, "rfftn")
    last = names[-1]
    x = r2c(x, last, _length(x, last, ns[-1], "rfftn"), norm, False, names[:-1])
    for k in reversed(range(len(names) - 1)):
        d = names[k]
        x = c2c(x, d, _length(x, d, ns[k], "rfftn"), norm, False, names[:k])
    return x


def irfftn(x: ShardArray, dims: Any = None, s: Sequence[int] | None = None, norm: str = "backward") -> ShardArray:
    """The inverse of ``rfftn``, as ``numpy.fft.irfftn``: ``ifft`` on all of ``dims`` but the last, then
    ``irfft`` there (``n`` = ``s[-1]``, default ``2*(m-1)``). Collectives as ``fftn``.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.ones((4, 4)), dims=("a", "b"), mesh=mesh, layout={"a": "row", "b": "col"})
        >>> sa.fft.irfftn(sa.fft.rfftn(x), s=(4, 4)).numpy()[0]
        array([1., 1., 1., 1.])
    """
    x = _input(x, "irfftn", "fc", "floating-point (complex or real)")
    names, ns = _dims_s(x, dims, s, "irfftn")
    norm = check_norm(norm, "irfftn")
    last = names[-1]
    n_last = _length(x, last, ns[-1], "irfftn", 2 * (x.sizes[last] - 1))
    for k in reversed(range(len(names) - 1)):
        d = names[k]
        x = c2c(x, d, _length(x, d, ns[k], "irfftn"), norm, True, names[:k] + (last,))
    return c2r(x, last, n_last, norm, False, ())


__all__ = ["fft", "fftn", "hfft", "ifft", "ifftn", "ihfft", "irfft", "irfftn", "rfft", "rfftn"]
