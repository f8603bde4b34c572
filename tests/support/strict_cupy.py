"""A strict CuPy stand-in, built to CuPy 14.2's API, to run shardarray's CuPy path without a GPU.

``tests/support/fake_gpu.py``'s arrays are NumPy arrays, so ``np.asarray(shard)``
and every ``np.*`` call on a shard succeed there. Here they fail the way real
CuPy fails:

* ``ndarray`` wraps a NumPy array (it is *not* an ``np.ndarray``) and
  remembers its GPU (``.device.id``); ``.data.ptr`` is the host address of its
  data (what the fake cuBLAS and NCCL read); ``.get()`` copies it to the host.
  ``__array__`` raises CuPy's ``TypeError`` ("Implicit conversion to a NumPy
  array is not allowed ..."); ``__array_ufunc__`` / ``__array_function__``
  dispatch ``np.<name>(device_array)`` to ``cupy.<name>`` as CuPy does, and
  fail where CuPy has no counterpart.
* The ``cupy`` namespace has only the names CuPy 14.2 has, with CuPy's
  parameters (``FUNCTIONS`` below, derived from CuPy's source), each carried
  out by NumPy on the wrapped arrays. NumPy arrays as operands are refused
  with CuPy's ``TypeError("Unsupported type <class 'numpy.ndarray'>")``,
  except where CuPy takes host data (``asarray``, ``array``, ``asanyarray``,
  ``asnumpy``, ``ndarray.set``, index arrays, ``take``'s indices, values
  assigned through an advanced index) and Python/NumPy scalars everywhere.
* CuPy's semantics where they differ from NumPy's: ufuncs take only ``out``,
  ``dtype``, ``casting`` (no ``where``) and never warn; ``ufunc.reduce`` /
  ``accumulate`` exist for ``add`` and ``multiply`` only, ``reduceat`` for
  ``add``, ``at`` for the scatter ufuncs with their dtypes
  (``UFUNC_METHODS``); ``lexsort(keys)`` takes one 2-D array and no
  ``axis``; sort ``kind`` is None or ``"stable"``; an in-place ``sort``/``partition`` of a view that is not
  C-contiguous raises; partitions take ``kth`` as a Python int or a sequence (a NumPy integer raises) and
  ``argpartition`` of an empty axis has shape ``(0,)``; integer array indices
  (``x[idx]``, ``take``, ``take_along_axis``) wrap around instead of raising;
  ``x[basic] = host_array`` raises (non-scalar fill); ``cupy.linalg`` does not
  raise ``LinAlgError`` for singular or non positive definite input (CuPy's
  default: ``cholesky`` returns LAPACK's partial factor, ``solve``/``inv``
  NaN); ``cupy.fft`` keeps single precision; ``cupy.allclose`` returns an
  array; reductions return 0-d arrays, never scalars; ``searchsorted`` runs
  CuPy's kernel (an early exit past ``a[-1]``, CuPy's complex comparisons,
  every NaN value alike) and ``argmax``/``argmin`` return the last of
  several NaNs (CuPy's reduction trees pick any).
* CuPy's own elementwise arithmetic (``_CUPY_UFUNC_MODELS``): float
  ``floor_divide``/``remainder`` as ``floor(a / b)`` and ``a - floor(a / b) * b``;
  integer ``power`` of a negative exponent gives 0 (or +-1), not NumPy's
  ``ValueError``; float32 comparisons read subnormals as zero (``-ftz=true``);
  a Python int operand outside ``[-2**63, 2**64)`` raises ``OverflowError``.
* ``RawModule`` kernels of ``kernels/*.cu`` are checked as in ``fake_gpu``
  and then *run*: ``KERNEL_MODELS`` carry out each kernel's arithmetic in
  NumPy, step by step as the CUDA source does (accumulation type, ``fmax``
  that skips NaN, the shift by the row maximum), so the fused ops give
  values on the stand-in.
* ``cupy.cuda``: devices, streams, events, ``runtime``, ``cublas``, ``nccl``
  from ``FakeCupy``; a memory pool.
* The library's rules, beyond CuPy's: a NumPy function a ``shardarray`` module applies to a device array (which
  CuPy takes, through ``__array_function__``) is recorded in ``NUMPY_ON_DEVICE``, or raises where
  ``NUMPY_DISPATCH = "raise"``; its implicit device-to-host reads (``bool``/``int``/``float``/``complex`` of a
  device array, ``.item()``, ``.tolist()``: each a sync on a GPU) are recorded in ``HOST_SYNCS``.

Entry points:

* ``StrictCupy(gpus=8).install(monkeypatch)``: as ``FakeCupy``, with strict
  arrays. ``FakeCupy(...)`` itself builds a ``StrictCupy`` while
  ``FakeCupy.default_strict`` is True (``--backend=cupy`` sets it).
* ``install_session(gpus=8)``: installs one for a whole pytest session and
  returns the ``pytest.MonkeyPatch`` that undoes it.
* ``python tests/support/strict_cupy.py --derive <cupy git dir> [rev]``
  prints the API tables below from CuPy's source (``fetch github:cupy/cupy``).

What it cannot check: timing, concurrency between streams, GPU memory limits,
numerics of real CUDA kernels beyond the models here, and NVRTC compilation.
"""

from __future__ import annotations

import ast
import functools
import inspect
import re
import subprocess
import sys
import types
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import fake_gpu
import ml_dtypes  # noqa: F401  (registers np.dtype("bfloat16"))
import numpy as np
from fake_gpu import FakeCupy
from numpy.lib.array_utils import normalize_axis_index

# ==================================================================================================== the API (data)
#: where the tables below come from: ``python tests/support/strict_cupy.py --derive <git dir> v14.2.0``
CUPY_VERSION = "14.2.0"
CUPY_SOURCE = "github.com/cupy/cupy tag v14.2.0 (commit dc1552a32f5489bdf6a5a721dfd952a92d47d934)"

# BEGIN DERIVED API (python tests/support/strict_cupy.py --derive)
# from CuPy v14.2.0 (dc1552a32f5489bdf6a5a721dfd952a92d47d934):
# cupy/__init__.py, cupy/{linalg,fft,random}/__init__.py and the modules they import; ndarray from
# cupy/_core/core.pyx; ufunc methods from cupy/_core/_kernel.pyx and _routines_indexing.pyx.
#: the functions of ``cupy``, ``cupy.linalg``, ``cupy.fft``, ``cupy.random``: name -> CuPy's parameters
FUNCTIONS: dict[str, str] = {
    'is_available': '',
    'astype': 'x, dtype, /, *, copy=True',
    'empty': "shape, dtype=float, order='C'",
    'empty_like': "prototype, dtype=None, order='K', subok=None, shape=None",
    'eye': "N, M=None, k=0, dtype=float, order='C'",
    'full': "shape, fill_value, dtype=None, order='C'",
    'full_like': "a, fill_value, dtype=None, order='K', subok=None, shape=None",
    'identity': 'n, dtype=float',
    'ones': "shape, dtype=float, order='C'",
    'ones_like': "a, dtype=None, order='K', subok=None, shape=None",
    'zeros': "shape, dtype=float, order='C'",
    'zeros_like': "a, dtype=None, order='K', subok=None, shape=None",
    'copy': "a, order='K'",
    'array': "obj, dtype=None, copy=True, order='K', subok=False, ndmin=0, *, blocking=False",
    'asanyarray': 'a, dtype=None, order=None, *, copy=None, blocking=False',
    'asarray': 'a, dtype=None, order=None, *, copy=None, blocking=False',
    'ascontiguousarray': 'a, dtype=None',
    'fromfile': '*args, **kwargs',
    'fromfunction': '*args, **kwargs',
    'fromiter': '*args, **kwargs',
    'frombuffer': '*args, **kwargs',
    'fromstring': '*args, **kwargs',
    'loadtxt': '*args, **kwargs',
    'genfromtxt': '*args, **kwargs',
    'arange': 'start, stop=None, step=1, dtype=None',
    'linspace': 'start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0',
    'logspace': 'start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0',
    'meshgrid': '*xi, **kwargs',
    'diag': 'v, k=0',
    'diagflat': 'v, k=0',
    'tri': 'N, M=None, k=0, dtype=float',
    'tril': 'm, k=0',
    'triu': 'm, k=0',
    'vander': 'x, N=None, increasing=False',
    'piecewise': 'x, condlist, funclist',
    'apply_along_axis': 'func1d, axis, arr, *args, **kwargs',
    'apply_over_axes': 'func, a, axes',
    'put_along_axis': 'arr, indices, values, axis',
    'copyto': "dst, src, casting='same_kind', where=None",
    'shape': 'a',
    'ravel': "a, order='C'",
    'reshape': "a, newshape, order='C', *, copy=None",
    'moveaxis': 'a, source, destination',
    'rollaxis': 'a, axis, start=0',
    'swapaxes': 'a, axis1, axis2',
    'transpose': 'a, axes=None',
    'matrix_transpose': 'x, /',
    'atleast_1d': '*arys',
    'atleast_2d': '*arys',
    'atleast_3d': '*arys',
    'broadcast_arrays': '*args',
    'broadcast_to': 'array, shape',
    'expand_dims': 'a, axis',
    'squeeze': 'a, axis=None',
    'column_stack': 'tup',
    'concatenate': "tup, axis=0, out=None, *, dtype=None, casting='same_kind'",
    'dstack': 'tup',
    'hstack': "tup, *, dtype=None, casting='same_kind'",
    'row_stack': "tup, *, dtype=None, casting='same_kind'",
    'stack': "tup, axis=0, out=None, *, dtype=None, casting='same_kind'",
    'vstack': "tup, *, dtype=None, casting='same_kind'",
    'asarray_chkfinite': 'a, dtype=None, order=None',
    'asfarray': 'a, dtype=cupy.float64',
    'asfortranarray': 'a, dtype=None',
    'require': 'a, dtype=None, requirements=None',
    'array_split': 'ary, indices_or_sections, axis=0',
    'dsplit': 'ary, indices_or_sections',
    'hsplit': 'ary, indices_or_sections',
    'split': 'ary, indices_or_sections, axis=0',
    'vsplit': 'ary, indices_or_sections',
    'repeat': 'a, repeats, axis=None',
    'tile': 'A, reps',
    'delete': 'arr, indices, axis=None',
    'append': 'arr, values, axis=None',
    'resize': 'a, new_shape',
    'unique': 'ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *, equal_nan=True',
    'unique_all': 'x',
    'unique_counts': 'x',
    'unique_values': 'x',
    'unique_inverse': 'x',
    'trim_zeros': "filt, trim='fb'",
    'flip': 'a, axis=None',
    'fliplr': 'a',
    'flipud': 'a',
    'roll': 'a, shift, axis=None',
    'rot90': 'a, k=1, axes=(0, 1)',
    'packbits': "a, axis=None, bitorder='big'",
    'unpackbits': "a, axis=None, bitorder='big'",
    'binary_repr': 'num, width=None',
    'can_cast': "from_, to, casting='safe'",
    'common_type': '*arrays',
    'result_type': '*arrays_and_dtypes',
    'min_scalar_type': 'a',
    'indices': 'dimensions, dtype=int',
    'ix_': '*args',
    'mask_indices': 'n, mask_func, k=0',
    'tril_indices': 'n, k=0, m=None',
    'tril_indices_from': 'arr, k=0',
    'triu_indices': 'n, k=0, m=None',
    'triu_indices_from': 'arr, k=0',
    'ravel_multi_index': "multi_index, dims, mode='wrap', order='C'",
    'unravel_index': "indices, dims, order='C'",
    'choose': "a, choices, out=None, mode='raise'",
    'compress': 'condition, a, axis=None, out=None',
    'diagonal': 'a, offset=0, axis1=0, axis2=1',
    'extract': 'condition, a',
    'select': 'condlist, choicelist, default=0',
    'take': 'a, indices, axis=None, out=None',
    'take_along_axis': 'a, indices, axis',
    'place': 'arr, mask, vals',
    'put': "a, ind, v, mode='wrap'",
    'putmask': 'a, mask, values',
    'fill_diagonal': 'a, val, wrap=False',
    'diag_indices': 'n, ndim=2',
    'diag_indices_from': 'arr',
    'load': 'file, mmap_mode=None, allow_pickle=None',
    'save': 'file, arr, allow_pickle=None',
    'savez': 'file, *args, **kwds',
    'savez_compressed': 'file, *args, **kwds',
    'array_repr': 'arr, max_line_width=None, precision=None, suppress_small=None',
    'array_str': 'arr, max_line_width=None, precision=None, suppress_small=None',
    'array2string': 'a, *args, **kwargs',
    'format_float_positional': 'x, *args, **kwargs',
    'format_float_scientific': 'x, *args, **kwargs',
    'savetxt': 'fname, X, *args, **kwargs',
    'base_repr': 'number, base=2, padding=0',
    'einsum': '*operands, **kwargs',
    'cross': 'a, b, axisa=-1, axisb=-1, axisc=-1, axis=None',
    'dot': 'a, b, out=None',
    'inner': 'a, b',
    'kron': 'a, b',
    'outer': 'a, b, out=None',
    'tensordot': 'a, b, axes=2',
    'vdot': 'a, b',
    'trace': 'a, offset=0, axis1=0, axis2=1, dtype=None, out=None',
    'allclose': 'a, b, rtol=1e-05, atol=1e-08, equal_nan=False',
    'array_equal': 'a1, a2, equal_nan=False',
    'array_equiv': 'a1, a2',
    'isclose': 'a, b, rtol=1e-05, atol=1e-08, equal_nan=False',
    'isneginf': 'x, out=None',
    'isposinf': 'x, out=None',
    'in1d': 'ar1, ar2, assume_unique=False, invert=False',
    'isin': 'element, test_elements, assume_unique=False, invert=False',
    'iscomplex': 'x',
    'iscomplexobj': 'x',
    'isfortran': 'a',
    'isreal': 'x',
    'isrealobj': 'x',
    'intersect1d': 'arr1, arr2, assume_unique=False, return_indices=False',
    'setdiff1d': 'ar1, ar2, assume_unique=False',
    'setxor1d': 'ar1, ar2, assume_unique=False',
    'union1d': 'arr1, arr2',
    'isscalar': 'element',
    'all': 'a, axis=None, out=None, keepdims=False',
    'any': 'a, axis=None, out=None, keepdims=False',
    'poly': 'seq_of_zeros',
    'polyadd': 'a1, a2',
    'polysub': 'a1, a2',
    'polymul': 'a1, a2',
    'polyfit': 'x, y, deg, rcond=None, full=False, w=None, cov=False',
    'polyval': 'p, x',
    'roots': 'p',
    'unwrap': 'p, discont=None, axis=-1, *, period=2 * numpy.pi',
    'around': 'a, decimals=0, out=None',
    'round': 'a, decimals=0, out=None',
    'round_': 'a, decimals=0, out=None',
    'prod': 'a, axis=None, dtype=None, out=None, keepdims=False',
    'product': 'a, axis=None, dtype=None, out=None, keepdims=False',
    'sum': 'a, axis=None, dtype=None, out=None, keepdims=False',
    'cumprod': 'a, axis=None, dtype=None, out=None',
    'cumproduct': 'a, axis=None, dtype=None, out=None',
    'cumulative_prod': 'x, /, *, axis=None, dtype=None, out=None, include_initial=False',
    'cumulative_sum': 'x, /, *, axis=None, dtype=None, out=None, include_initial=False',
    'cumsum': 'a, axis=None, dtype=None, out=None',
    'ediff1d': 'arr, to_end=None, to_begin=None',
    'nancumprod': 'a, axis=None, dtype=None, out=None',
    'nancumsum': 'a, axis=None, dtype=None, out=None',
    'nansum': 'a, axis=None, dtype=None, out=None, keepdims=False',
    'nanprod': 'a, axis=None, dtype=None, out=None, keepdims=False',
    'diff': 'a, n=1, axis=-1, prepend=None, append=None',
    'gradient': 'f, *varargs, axis=None, edge_order=1',
    'trapezoid': 'y, x=None, dx=1.0, axis=-1',
    'bartlett': 'M',
    'blackman': 'M',
    'hamming': 'M',
    'hanning': 'M',
    'kaiser': 'M, beta',
    'angle': 'z, deg=False',
    'imag': 'val',
    'real': 'val',
    'clip': 'a, a_min, a_max, out=None',
    'interp': 'x, xp, fp, left=None, right=None, period=None',
    'nan_to_num': 'x, copy=True, nan=0.0, posinf=None, neginf=None',
    'real_if_close': 'a, tol=100',
    'convolve': "a, v, mode='full'",
    'byte_bounds': 'a',
    'may_share_memory': 'a, b, max_work=None',
    'shares_memory': 'a, b, max_work=None',
    'who': 'vardict=None',
    'pad': "array, pad_width, mode='constant', **kwargs",
    'count_nonzero': 'a, axis=None',
    'argmax': 'a, axis=None, dtype=None, out=None, keepdims=False',
    'argmin': 'a, axis=None, dtype=None, out=None, keepdims=False',
    'argwhere': 'a',
    'flatnonzero': 'a',
    'nanargmax': 'a, axis=None, dtype=None, out=None, keepdims=False',
    'nanargmin': 'a, axis=None, dtype=None, out=None, keepdims=False',
    'nonzero': 'a',
    'searchsorted': "a, v, side='left', sorter=None",
    'where': 'condition, x=None, y=None',
    'argpartition': 'a, kth, axis=-1',
    'argsort': 'a, axis=-1, kind=None',
    'lexsort': 'keys',
    'msort': 'a',
    'sort_complex': 'a',
    'partition': 'a, kth, axis=-1',
    'sort': 'a, axis=-1, kind=None',
    'corrcoef': 'a, y=None, rowvar=True, bias=None, ddof=None, *, dtype=None',
    'cov': 'a, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *, dtype=None',
    'correlate': "a, v, mode='valid'",
    'amax': 'a, axis=None, out=None, keepdims=False',
    'amin': 'a, axis=None, out=None, keepdims=False',
    'nanmax': 'a, axis=None, out=None, keepdims=False',
    'nanmin': 'a, axis=None, out=None, keepdims=False',
    'percentile':
        "a, q, axis=None, out=None, overwrite_input=False, method='linear', keepdims=False, *, interpolation=None",
    'ptp': 'a, axis=None, out=None, keepdims=False',
    'quantile':
        "a, q, axis=None, out=None, overwrite_input=False, method='linear', keepdims=False, *, interpolation=None",
    'median': 'a, axis=None, out=None, overwrite_input=False, keepdims=False',
    'average': 'a, axis=None, weights=None, returned=False, *, keepdims=False',
    'mean': 'a, axis=None, dtype=None, out=None, keepdims=False',
    'std': 'a, axis=None, dtype=None, out=None, ddof=0, keepdims=False',
    'var': 'a, axis=None, dtype=None, out=None, ddof=0, keepdims=False',
    'nanmedian': 'a, axis=None, out=None, overwrite_input=False, keepdims=False',
    'nanmean': 'a, axis=None, dtype=None, out=None, keepdims=False',
    'nanstd': 'a, axis=None, dtype=None, out=None, ddof=0, keepdims=False',
    'nanvar': 'a, axis=None, dtype=None, out=None, ddof=0, keepdims=False',
    'bincount': 'x, weights=None, minlength=None',
    'digitize': 'x, bins, right=False',
    'histogram': 'x, bins=10, range=None, density=False, weights=None',
    'histogram2d': 'x, y, bins=10, range=None, weights=None, density=None',
    'histogramdd': 'sample, bins=10, range=None, weights=None, density=False',
    'size': 'a, axis=None',
    'ndim': 'a',
    'clear_memo': '',
    'memoize': 'for_each_device=False',
    'make_aligned_dtype': 'dtype, *, alignment=-1, recurse=True',
    'fromDlpack': 'dltensor',
    'from_dlpack': 'array, *, device=None, copy=None',
    'asnumpy': "a, stream=None, order='C', out=None, *, blocking=True",
    'get_array_module': '*args',
    'get_default_memory_pool': '',
    'get_default_pinned_memory_pool': '',
    'show_config': '*, _full=False',
    'issubclass_': 'arg1, arg2',
    'obj2sctype': 'rep, default=None',
    'issubsctype': 'arg1, arg2',
    'sctype2char': 'sctype',
    'issctype': 'rep',
    'find_common_type': '*args, **kwds',
    'set_string_function': '*args, **kwds',
    'get_array_wrap': '*args, **kwds',
    'disp': '*args, **kwds',
    'safe_eval': '*args, **kwds',
    'linalg.matrix_power': 'M, n',
    'linalg.cross': 'x1, x2, /, *, axis=-1',
    'linalg.matrix_transpose': 'a',
    'linalg.cholesky': 'a',
    'linalg.qr': "a, mode='reduced'",
    'linalg.svd': 'a, full_matrices=True, compute_uv=True',
    'linalg.eigh': "a, UPLO='L'",
    'linalg.eig': 'a',
    'linalg.eigvalsh': "a, UPLO='L'",
    'linalg.eigvals': 'a',
    'linalg.norm': 'x, ord=None, axis=None, keepdims=False',
    'linalg.cond': 'x, p=None',
    'linalg.det': 'a',
    'linalg.matrix_rank': 'M, tol=None',
    'linalg.slogdet': 'a',
    'linalg.solve': 'a, b',
    'linalg.tensorsolve': 'a, b, axes=None',
    'linalg.lstsq': 'a, b, rcond=None',
    'linalg.inv': 'a',
    'linalg.pinv': 'a, rcond=1e-15',
    'linalg.tensorinv': 'a, ind=2',
    'fft.fft': 'a, n=None, axis=-1, norm=None',
    'fft.fft2': 'a, s=None, axes=(-2, -1), norm=None',
    'fft.fftfreq': 'n, d=1.0',
    'fft.fftn': 'a, s=None, axes=None, norm=None',
    'fft.fftshift': 'x, axes=None',
    'fft.hfft': 'a, n=None, axis=-1, norm=None',
    'fft.ifft': 'a, n=None, axis=-1, norm=None',
    'fft.ifft2': 'a, s=None, axes=(-2, -1), norm=None',
    'fft.ifftn': 'a, s=None, axes=None, norm=None',
    'fft.ifftshift': 'x, axes=None',
    'fft.ihfft': 'a, n=None, axis=-1, norm=None',
    'fft.irfft': 'a, n=None, axis=-1, norm=None',
    'fft.irfft2': 'a, s=None, axes=(-2, -1), norm=None',
    'fft.irfftn': 'a, s=None, axes=None, norm=None',
    'fft.rfft': 'a, n=None, axis=-1, norm=None',
    'fft.rfft2': 'a, s=None, axes=(-2, -1), norm=None',
    'fft.rfftfreq': 'n, d=1.0',
    'fft.rfftn': 'a, s=None, axes=None, norm=None',
    'random.bytes': 'length',
    'random.default_rng': 'seed=None',
    'random.beta': 'a, b, size=None, dtype=float',
    'random.binomial': 'n, p, size=None, dtype=int',
    'random.chisquare': 'df, size=None, dtype=float',
    'random.dirichlet': 'alpha, size=None, dtype=float',
    'random.exponential': 'scale, size=None, dtype=float',
    'random.f': 'dfnum, dfden, size=None, dtype=float',
    'random.gamma': 'shape, scale=1.0, size=None, dtype=float',
    'random.geometric': "p, size=None, dtype='l'",
    'random.gumbel': 'loc=0.0, scale=1.0, size=None, dtype=float',
    'random.hypergeometric': "ngood, nbad, nsample, size=None, dtype='l'",
    'random.laplace': 'loc=0.0, scale=1.0, size=None, dtype=float',
    'random.logistic': 'loc=0.0, scale=1.0, size=None, dtype=float',
    'random.lognormal': 'mean=0.0, sigma=1.0, size=None, dtype=float',
    'random.logseries': "p, size=None, dtype='l'",
    'random.multivariate_normal':
        "mean, cov, size=None, check_valid='ignore', tol=1e-08, method='cholesky', dtype=float",
    'random.negative_binomial': 'n, p, size=None, dtype=int',
    'random.noncentral_chisquare': 'df, nonc, size=None, dtype=float',
    'random.noncentral_f': 'dfnum, dfden, nonc, size=None, dtype=float',
    'random.normal': 'loc=0.0, scale=1.0, size=None, dtype=float',
    'random.pareto': 'a, size=None, dtype=float',
    'random.poisson': "lam=1.0, size=None, dtype='l'",
    'random.power': 'a, size=None, dtype=float',
    'random.rayleigh': 'scale=1.0, size=None, dtype=float',
    'random.standard_cauchy': 'size=None, dtype=float',
    'random.standard_exponential': 'size=None, dtype=float',
    'random.standard_gamma': 'shape, size=None, dtype=float',
    'random.standard_normal': 'size=None, dtype=float',
    'random.standard_t': 'df, size=None, dtype=float',
    'random.triangular': 'left, mode, right, size=None, dtype=float',
    'random.uniform': 'low=0.0, high=1.0, size=None, dtype=float',
    'random.vonmises': 'mu, kappa, size=None, dtype=float',
    'random.wald': 'mean, scale, size=None, dtype=float',
    'random.weibull': 'a, size=None, dtype=float',
    'random.zipf': 'a, size=None, dtype=int',
    'random.get_random_state': '',
    'random.reset_states': '',
    'random.seed': 'seed=None',
    'random.set_random_state': 'rs',
    'random.permutation': 'a',
    'random.shuffle': 'a',
    'random.choice': 'a, size=None, replace=True, p=None',
    'random.multinomial': 'n, pvals, size=None',
    'random.rand': '*size, **kwarg',
    'random.randint': "low, high=None, size=None, dtype='l'",
    'random.randn': '*size, **kwarg',
    'random.random_integers': 'low, high=None, size=None',
    'random.random_sample': 'size=None, dtype=float',
}
#: the names bound to ``cupy.ufunc`` objects
UFUNCS: tuple[str, ...] = (
    'bitwise_and', 'bitwise_or', 'bitwise_xor', 'bitwise_not', 'bitwise_count', 'invert', 'left_shift', 'right_shift',
    'isfinite', 'isinf', 'isnan', 'logical_and', 'logical_not', 'logical_or', 'logical_xor', 'equal', 'greater',
    'greater_equal', 'less', 'less_equal', 'not_equal', 'arccos', 'arcsin', 'arctan', 'arctan2', 'cos', 'deg2rad',
    'degrees', 'hypot', 'rad2deg', 'radians', 'sin', 'tan', 'arccosh', 'arcsinh', 'arctanh', 'cosh', 'sinh', 'tanh',
    'ceil', 'fix', 'floor', 'rint', 'trunc', 'exp', 'exp2', 'expm1', 'log', 'log10', 'log1p', 'log2', 'logaddexp',
    'logaddexp2', 'i0', 'sinc', 'copysign', 'frexp', 'ldexp', 'nextafter', 'signbit', 'gcd', 'lcm', 'add', 'divide',
    'divmod', 'floor_divide', 'float_power', 'fmod', 'modf', 'multiply', 'negative', 'positive', 'power',
    'reciprocal', 'remainder', 'subtract', 'true_divide', 'conjugate', 'absolute', 'cbrt', 'fabs', 'fmax', 'fmin',
    'maximum', 'minimum', 'sign', 'heaviside', 'sqrt', 'square',
)
#: names bound to another name's object (``abs`` is ``absolute``)
ALIASES: dict[str, str] = {
    'PINF': 'inf',
    'Inf': 'inf',
    'Infinity': 'inf',
    'infty': 'inf',
    'NAN': 'nan',
    'NaN': 'nan',
    'permute_dims': 'transpose',
    'concat': 'concatenate',
    'bitwise_left_shift': 'left_shift',
    'bitwise_right_shift': 'right_shift',
    'bitwise_invert': 'invert',
    'atan': 'arctan',
    'atan2': 'arctan2',
    'asin': 'arcsin',
    'acos': 'arccos',
    'acosh': 'arccosh',
    'asinh': 'arcsinh',
    'atanh': 'arctanh',
    'mod': 'remainder',
    'pow': 'power',
    'conj': 'conjugate',
    'abs': 'absolute',
    'max': 'amax',
    'min': 'amin',
    'alltrue': 'all',
    'sometrue': 'any',
    'trapz': 'trapezoid',
    'random.random': 'random.random_sample',
    'random.ranf': 'random.random_sample',
    'random.sample': 'random.random_sample',
}
#: names CuPy re-exports from NumPy (dtypes, constants, dtype helpers): name -> NumPy's path
FROM_NUMPY: dict[str, str] = {
    'e': 'e',
    'euler_gamma': 'euler_gamma',
    'inf': 'inf',
    'nan': 'nan',
    'newaxis': 'newaxis',
    'pi': 'pi',
    'complexfloating': 'complexfloating',
    'floating': 'floating',
    'generic': 'generic',
    'inexact': 'inexact',
    'integer': 'integer',
    'number': 'number',
    'signedinteger': 'signedinteger',
    'unsignedinteger': 'unsignedinteger',
    'bool_': 'bool_',
    'byte': 'byte',
    'short': 'short',
    'intc': 'intc',
    'int_': 'int_',
    'longlong': 'longlong',
    'intp': 'intp',
    'int8': 'int8',
    'int16': 'int16',
    'int32': 'int32',
    'int64': 'int64',
    'ubyte': 'ubyte',
    'ushort': 'ushort',
    'uintc': 'uintc',
    'uint': 'uint',
    'ulonglong': 'ulonglong',
    'uintp': 'uintp',
    'uint8': 'uint8',
    'uint16': 'uint16',
    'uint32': 'uint32',
    'uint64': 'uint64',
    'half': 'half',
    'single': 'single',
    'double': 'double',
    'float_': 'float64',
    'float16': 'float16',
    'float32': 'float32',
    'float64': 'float64',
    'csingle': 'csingle',
    'singlecomplex': 'complex64',
    'cdouble': 'cdouble',
    'cfloat': 'complex128',
    'complex_': 'complex128',
    'complex64': 'complex64',
    'complex128': 'complex128',
    'broadcast_shapes': 'broadcast_shapes',
    'promote_types': 'promote_types',
    'dtype': 'dtype',
    'finfo': 'finfo',
    'iinfo': 'iinfo',
    'issubdtype': 'issubdtype',
    'isdtype': 'isdtype',
    'mintypecode': 'mintypecode',
    'typename': 'typename',
    'index_exp': 'index_exp',
    'ndindex': 'ndindex',
    's_': 's_',
    'get_printoptions': 'get_printoptions',
    'set_printoptions': 'set_printoptions',
    'printoptions': 'printoptions',
    'iterable': 'iterable',
    'bool': 'bool',
    'long': 'long',
    'ulong': 'ulong',
    'format_parser': 'rec.format_parser',
    'DataSource': 'lib.npyio.DataSource',
    'linalg.LinAlgError': 'linalg.LinAlgError',
}
#: CuPy names this stand-in does not provide (classes, grids, kernels, fusion)
NOT_MODELLED: dict[str, str] = {
    'ndarray': 'unknown: ndarray in cupy/_core/core.pyx',
    'ufunc': 'unknown: ufunc in cupy/_core/_kernel.pyx',
    'NINF': '-inf',
    'PZERO': '0.0',
    'NZERO': '-0.0',
    'mgrid': 'other: nd_grid',
    'ogrid': 'other: nd_grid',
    'vectorize': 'class: None',
    'broadcast': 'unknown: broadcast in cupy/_core/_routines_manipulation.pyx',
    'c_': 'other: CClass',
    'r_': 'other: RClass',
    'flatiter': 'class: None',
    'matmul': 'other: _GUFunc',
    'poly1d': 'unknown: poly1d in cupy/lib/_polynomial.pyx',
    'AxisError': 'unknown: AxisError in cupy/exceptions/__init__.py',
    'ComplexWarning': 'unknown: ComplexWarning in cupy/exceptions/__init__.py',
    'ModuleDeprecationWarning': 'unknown: ModuleDeprecationWarning in cupy/exceptions/__init__.py',
    'RankWarning': 'unknown: RankWarning in cupy/exceptions/__init__.py',
    'TooHardError': 'unknown: TooHardError in cupy/exceptions/__init__.py',
    'VisibleDeprecationWarning': 'unknown: VisibleDeprecationWarning in cupy/exceptions/__init__.py',
    'ElementwiseKernel': 'unknown: ElementwiseKernel in cupy/_core/_kernel.pyx',
    'RawKernel': 'unknown: RawKernel in cupy/_core/raw.pyx',
    'RawModule': 'unknown: RawModule in cupy/_core/raw.pyx',
    'ReductionKernel': 'unknown: ReductionKernel in cupy/_core/_reduction.pyx',
    'fuse': '_core.fusion.fuse',
    'disable_experimental_feature_warning': 'False',
    'linalg.annotations': 'unknown: __future__',
    'linalg.matmul': 'other: _GUFunc',
    'fft.config': 'other: _FFTConfig',
    'random.annotations': 'unknown: __future__',
    'random.RandomState': 'class: None',
    'random.BitGenerator': 'unknown: BitGenerator in cupy/random/_bit_generator.pyx',
    'random.XORWOW': 'unknown: XORWOW in cupy/random/_bit_generator.pyx',
    'random.MRG32k3a': 'unknown: MRG32k3a in cupy/random/_bit_generator.pyx',
    'random.Philox4x3210': 'unknown: Philox4x3210 in cupy/random/_bit_generator.pyx',
}
#: ``cupy.ndarray``'s public methods (``_ndarray_base``): name -> parameters
NDARRAY_METHODS: dict[str, str] = {
    'mdspan': '*, index_type, allow_unsafe=False',
    'item': '',
    'tolist': '',
    'tobytes': "order='C'",
    'tofile': "fid, sep='', format='%s'",
    'dump': 'file',
    'dumps': '',
    'astype': "dtype, order='K', casting=None, subok=None, copy=True",
    'byteswap': 'inplace=False',
    'copy': "order='C'",
    'view': 'dtype=None, array_class=None',
    'fill': 'value',
    'reshape': "*shape, order='C', copy=None",
    'transpose': '*axes',
    'swapaxes': 'axis1, axis2',
    'flatten': "order='C'",
    'ravel': "order='C'",
    'squeeze': 'axis=None',
    'take': 'indices, axis=None, out=None',
    'put': "indices, values, mode='wrap'",
    'repeat': 'repeats, axis=None',
    'choose': "choices, out=None, mode='raise'",
    'sort': 'axis=-1, kind=None',
    'argsort': 'axis=-1, kind=None',
    'partition': 'kth, axis=-1',
    'argpartition': 'kth, axis=-1',
    'searchsorted': "v, side='left', sorter=None",
    'nonzero': '',
    'compress': 'condition, axis=None, out=None',
    'diagonal': 'offset=0, axis1=0, axis2=1',
    'max': 'axis=None, out=None, keepdims=False',
    'argmax': 'axis=None, out=None, dtype=None, keepdims=False',
    'min': 'axis=None, out=None, keepdims=False',
    'argmin': 'axis=None, out=None, dtype=None, keepdims=False',
    'ptp': 'axis=None, out=None, keepdims=False',
    'clip': 'min=None, max=None, out=None',
    'round': 'decimals=0, out=None',
    'trace': 'offset=0, axis1=0, axis2=1, dtype=None, out=None',
    'sum': 'axis=None, dtype=None, out=None, keepdims=False',
    'cumsum': 'axis=None, dtype=None, out=None',
    'mean': 'axis=None, dtype=None, out=None, keepdims=False',
    'var': 'axis=None, dtype=None, out=None, ddof=0, keepdims=False',
    'std': 'axis=None, dtype=None, out=None, ddof=0, keepdims=False',
    'prod': 'axis=None, dtype=None, out=None, keepdims=None',
    'cumprod': 'axis=None, dtype=None, out=None',
    'all': 'axis=None, out=None, keepdims=False',
    'any': 'axis=None, out=None, keepdims=False',
    'conj': '',
    'conjugate': '',
    'real': 'value',
    'imag': 'value',
    'scatter_add': 'slices, value',
    'scatter_max': 'slices, value',
    'scatter_min': 'slices, value',
    'dot': 'b, out=None',
    'get': "stream=None, order='C', out=None, blocking=True",
    'set': 'arr, stream=None',
    'reduced_view': 'dtype=None',
    'toDlpack': '',
}
#: ``cupy.ndarray``'s properties (plus ``size``, ``dtype``, ``data``, ``base`` from core.pxd)
NDARRAY_PROPERTIES: tuple[str, ...] = (
    '__cuda_array_interface__', 'flags', 'shape', 'strides', 'ndim', 'itemsize', 'nbytes', 'T', 'mT', 'flat',
    'cstruct', 'real', 'imag', 'device',
)
#: the ufunc methods CuPy has, per ufunc: reduce/accumulate/reduceat -> the ndarray method that
#: does it; at -> the dtypes its scatter kernel takes (every other ufunc raises NotImplementedError)
UFUNC_METHODS: dict[str, dict[str, Any]] = {
    'reduce': {'add': 'sum', 'multiply': 'prod'},
    'accumulate': {'add': 'cumsum', 'multiply': 'cumprod'},
    'reduceat': {'add': '_add_reduceat'},
    'at': {
        'add': ('float16', 'float32', 'float64', 'int32', 'int64', 'uint32', 'uint64'),
        'subtract': ('int32', 'uint32'),
        'maximum': ('float32', 'float64', 'int32', 'int64', 'uint32', 'uint64'),
        'minimum': ('float32', 'float64', 'int32', 'int64', 'uint32', 'uint64'),
        'bitwise_and': ('int32', 'int64', 'uint32', 'uint64'),
        'bitwise_or': ('int32', 'int64', 'uint32', 'uint64'),
        'bitwise_xor': ('int32', 'int64', 'uint32', 'uint64'),
    },
}
# END DERIVED API

#: what CuPy binds to objects the derivation does not read as functions (a ``_GUFunc``, constants, exceptions)
_HAND_WRITTEN_FUNCTIONS = {"matmul": "x1, x2, /, out=None, **kwargs", "linalg.matmul": "x1, x2, /, out=None, **kwargs"}
_CONSTANTS = {"NINF": -np.inf, "PZERO": 0.0, "NZERO": -0.0, "AxisError": np.exceptions.AxisError,
              "ComplexWarning": np.exceptions.ComplexWarning, "RankWarning": np.exceptions.RankWarning,
              "TooHardError": np.exceptions.TooHardError,
              "VisibleDeprecationWarning": np.exceptions.VisibleDeprecationWarning}

#: the CuPy names whose NumPy counterpart has another name (or is gone from NumPy 2)
_NUMPY_NAMES = {"product": "prod", "cumproduct": "cumprod", "round_": "round", "in1d": "isin", "amax": "max",
                "amin": "min", "linalg.matrix_transpose": "matrix_transpose"}

#: ``cupy.ndarray.__module__`` etc.
_UNSUPPORTED = "Unsupported type {}"
_IMPLICIT = ("Implicit conversion to a NumPy array is not allowed. "
             "Please use `.get()` to construct a NumPy array explicitly.")


# ==================================================================================================== helpers
def _current_gpu() -> int:
    """The GPU that is current on the installed fake (0 when none is installed)."""
    active = FakeCupy.active
    return active.device if active is not None else 0


def _cuda() -> Any:
    """``cupy.cuda`` of the installed fake (devices and streams are per fake machine)."""
    active = FakeCupy.active
    return active.module.cuda if active is not None else _MODULE.cuda


def _is_scalar(x: Any) -> bool:
    """What CuPy's kernels take besides arrays: Python and NumPy scalars (``CScalar``)."""
    return isinstance(x, (int, float, complex, np.generic))


def _refuse_host(values: Any) -> None:
    """CuPy's ``TypeError`` for a NumPy array among ``values`` (nested in lists and tuples too)."""
    for v in values:
        if isinstance(v, np.ndarray):
            raise TypeError(_UNSUPPORTED.format(type(v)))
        if type(v) in (list, tuple):
            _refuse_host(v)


def _unwrap(x: Any) -> Any:
    """Device arrays -> their NumPy data, through lists and tuples."""
    t = type(x)
    if t is ndarray:
        return x._a
    if t is list:
        return [_unwrap(v) for v in x]
    if t is tuple:
        return tuple(_unwrap(v) for v in x)
    return x


def _originals(values: Any, into: dict[int, ndarray] | None = None) -> dict[int, ndarray]:
    """``{id(data): device array}`` of the device arrays among ``values`` (results that are one of them keep it)."""
    into = {} if into is None else into
    for v in values:
        if type(v) is ndarray:
            into[id(v._a)] = v
        elif type(v) in (list, tuple):
            _originals(v, into)
    return into


def _wrap(r: Any, keep: dict[int, ndarray] | None = None, gpu: int | None = None) -> Any:
    """NumPy results -> device arrays (NumPy scalars become 0-d arrays, as CuPy returns them).

    Args:
        r: the NumPy result.
        keep: the device arrays among the inputs (``_originals``): a result that is one of them is returned as
            that array, a view of one's memory lives on its GPU.
        gpu: the GPU of new arrays (None: the current one).
    """
    if isinstance(r, np.ndarray):
        if keep:
            same = keep.get(id(r))
            if same is not None and same._a is r:
                return same
            for source in keep.values():  # a view of an input stays on the input's GPU
                if np.may_share_memory(r, source._a):
                    return ndarray._new(r, source._gpu)
        return ndarray._new(r, gpu)
    if isinstance(r, np.generic):
        return ndarray._new(np.asarray(r), gpu)
    if isinstance(r, tuple):
        items = [_wrap(v, keep, gpu) for v in r]
        return type(r)(*items) if hasattr(r, "_fields") else tuple(items)
    if isinstance(r, list):
        return [_wrap(v, keep, gpu) for v in r]
    return r


#: ``"record"``: each NumPy function the library (a ``shardarray`` module) applies to a device array is appended to
#: ``NUMPY_ON_DEVICE``; ``"raise"``: it raises ``TypeError`` instead (tests/test_fuzz12_cupy_paths.py sets it). CuPy
#: itself takes such calls (``__array_function__``/``__array_ufunc__`` send them to ``cupy.<name>``), but the
#: library's rule is that shards go through ``mesh.backend.xp`` only: a NumPy function on a shard reaches CuPy only
#: where CuPy has that function with those arguments, and dispatches through NumPy's protocol on every call.
NUMPY_DISPATCH = "record"
#: ``(NumPy function, "module:line")`` of each such call seen in ``"record"`` mode
NUMPY_ON_DEVICE: list[tuple[str, str]] = []
#: ``(conversion, "module:line")`` of each implicit device-to-host read by the library: ``bool(a)``, ``int(a)``,
#: ``float(a)``, ``complex(a)``, ``a.item()``, ``a.tolist()`` (each a device sync on a GPU; the explicit copies,
#: ``a.get()`` and ``cupy.asnumpy``, which ``backend.to_numpy`` makes, are not recorded). Always recorded: a test
#: clears it, runs an op, and reads where the op waited on the device.
HOST_SYNCS: list[tuple[str, str]] = []


def _library_frame(depth: int) -> str | None:
    """``"module:line"`` of the caller ``depth`` frames up, past NumPy's frames, where it is the library's."""
    frame = sys._getframe(depth + 1)
    while frame is not None and frame.f_globals.get("__name__", "").partition(".")[0] in ("numpy", "ml_dtypes"):
        frame = frame.f_back
    module = "" if frame is None else frame.f_globals.get("__name__", "")
    if module.partition(".")[0] != "shardarray":
        return None
    return f"{module}:{frame.f_lineno}"  # type: ignore[union-attr]


def _host_sync(what: str) -> None:
    """Note an implicit device-to-host read made by the library's code (``HOST_SYNCS``)."""
    where = _library_frame(2)
    if where is not None:
        HOST_SYNCS.append((what, where))


def _numpy_on_device(name: str) -> None:
    """Note (or refuse, ``NUMPY_DISPATCH``) ``numpy.<name>`` applied to a device array by the library's code.

    The caller is the first frame outside NumPy above NumPy's dispatch; the stand-in's own operators (``x + 1``
    reaches ``np.add`` as CuPy's operators do) and calls from tests are not the library's.
    """
    where = _library_frame(2)
    if where is None:
        return
    if NUMPY_DISPATCH == "raise":
        raise TypeError(f"numpy.{name} applied to a cupy.ndarray at {where}: the library sends shards through "
                        f"mesh.backend.xp (tests/support/strict_cupy.py, NUMPY_DISPATCH)")
    NUMPY_ON_DEVICE.append((name, where))


class _Default(str):
    """A default value as CuPy's source spells it (shown as written: ``axis=None``)."""

    def __repr__(self) -> str:
        return str(self)


def _placed(r: Any, source: ndarray) -> int:
    """The GPU of a method's result: ``source``'s for a view of its memory, else the current one (CuPy allocates
    new arrays on the current device)."""
    if isinstance(r, np.ndarray) and np.may_share_memory(r, source._a):
        return source._gpu
    return _current_gpu()


def _signature(params: str) -> inspect.Signature:
    """An ``inspect.Signature`` from CuPy's parameter text (defaults kept as text: only names and kinds matter)."""
    tree = ast.parse(f"def f({params}): pass").body[0]
    assert isinstance(tree, ast.FunctionDef)
    a = tree.args
    P = inspect.Parameter
    out: list[inspect.Parameter] = []
    positional = [*a.posonlyargs, *a.args]
    defaults = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
    for i, (arg, d) in enumerate(zip(positional, defaults)):
        kind = P.POSITIONAL_ONLY if i < len(a.posonlyargs) else P.POSITIONAL_OR_KEYWORD
        out.append(P(arg.arg, kind, default=P.empty if d is None else _Default(ast.unparse(d))))
    if a.vararg:
        out.append(P(a.vararg.arg, P.VAR_POSITIONAL))
    for arg, d in zip(a.kwonlyargs, a.kw_defaults):
        out.append(P(arg.arg, P.KEYWORD_ONLY, default=P.empty if d is None else _Default(ast.unparse(d))))
    if a.kwarg:
        out.append(P(a.kwarg.arg, P.VAR_KEYWORD))
    return inspect.Signature(out)


def _binder(name: str, params: str) -> Callable[..., None]:
    """A check that a call fits CuPy's parameters of ``name`` (a ``TypeError`` naming them otherwise)."""
    sig = _signature(params)

    def check(*args: Any, **kwargs: Any) -> None:
        try:
            sig.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"cupy.{name}{sig}: {e} (CuPy {CUPY_VERSION} has no such parameter or form)") from None

    return check


class _Quiet:
    """NumPy's floating-point warnings off: CuPy's kernels never warn (0/0 is NaN without a RuntimeWarning)."""

    def __enter__(self) -> None:
        self._old = np.seterr(all="ignore")

    def __exit__(self, *exc: Any) -> None:
        np.seterr(**self._old)


_QUIET = _Quiet()


def _wrap_indices(index: tuple, shape: tuple[int, ...]) -> tuple:
    """Integer index arrays taken modulo their axis' length: CuPy wraps around out-of-bounds indices."""
    consumed = []
    for s in index:
        if s is None:
            consumed.append(0)
        elif s is Ellipsis:
            consumed.append(-1)
        elif isinstance(s, np.ndarray) and s.dtype == np.bool_:
            consumed.append(max(s.ndim, 1))
        else:
            consumed.append(1)
    rest = len(shape) - sum(c for c in consumed if c > 0)
    out, axis = [], 0
    for s, c in zip(index, consumed):
        if c == -1:
            axis += max(rest, 0)
        elif (isinstance(s, np.ndarray) and s.dtype.kind in "iu" and axis < len(shape) and shape[axis] > 0
              and s.size):
            s = np.mod(s, shape[axis])
        out.append(s)
        axis += max(c, 0)
    return tuple(out)


def _prepare_index(slices: Any) -> tuple[tuple, bool]:
    """CuPy's ``_prepare_slice_list``: (the index as a tuple of NumPy objects, whether it has an advanced part)."""
    items = list(slices) if isinstance(slices, tuple) else [slices]
    advanced = False
    for i, s in enumerate(items):
        if s is None or s is Ellipsis or isinstance(s, slice):
            continue
        if type(s) is ndarray:
            items[i], advanced = s._a, True
            continue
        if isinstance(s, (list, tuple)):
            arr = np.asarray(_unwrap(s))
            items[i], advanced = (arr.astype(np.int32) if arr.size == 0 else arr), True
            continue
        if np.isscalar(s) and not isinstance(s, (bool, np.bool_)):
            continue
        arr = np.asarray(s)
        if arr.dtype.kind not in "biu":
            raise IndexError(f"arrays used as indices must be of integer or boolean type (actual: {arr.dtype.type})")
        items[i], advanced = arr, True
    return tuple(items), advanced


# ==================================================================================================== ndarray
class _Flags:
    """CuPy's ``ndarray.flags``: ``c_contiguous``, ``f_contiguous``, ``owndata`` (read-only; indexable by name)."""

    def __init__(self, c: bool, f: bool, own: bool) -> None:
        self.c_contiguous, self.f_contiguous, self.owndata = c, f, own

    def __getitem__(self, name: str) -> bool:
        key = {"C_CONTIGUOUS": "c_contiguous", "F_CONTIGUOUS": "f_contiguous", "OWNDATA": "owndata",
               "C": "c_contiguous", "F": "f_contiguous"}[name]
        return getattr(self, key)

    def __repr__(self) -> str:
        return f"  C_CONTIGUOUS : {self.c_contiguous}\n  F_CONTIGUOUS : {self.f_contiguous}\n  OWNDATA : {self.owndata}"


class MemoryPointer:
    """``ndarray.data``: the (here: host) address of the first element, and the GPU it belongs to."""

    def __init__(self, ptr: int, device_id: int) -> None:
        self.ptr, self.device_id = ptr, device_id

    @property
    def device(self) -> Any:
        return _cuda().Device(self.device_id)

    def __int__(self) -> int:
        return self.ptr


class ndarray:
    """A CuPy array on one GPU: a NumPy array underneath, never handed to NumPy implicitly.

    Args:
        shape: the shape of a new, uninitialised array (CuPy's constructor).
        dtype: its dtype.
        memptr: unsupported here (must be None).
        strides: unsupported here (must be None).
        order: ``"C"`` or ``"F"``.
    """

    __slots__ = ("__weakref__", "_a", "_gpu")
    __array_priority__ = 100  # CuPy's ``_ndarray_base`` has none; NumPy reads it only without __array_ufunc__
    __hash__ = None  # type: ignore[assignment]  # CuPy's ndarray is unhashable

    def __init__(self, shape: Any, dtype: Any = float, memptr: Any = None, strides: Any = None,
                 order: str = "C") -> None:
        if memptr is not None or strides is not None:
            raise NotImplementedError("the CuPy stand-in makes ndarrays from a shape and dtype only")
        self._a = np.empty(shape, dtype=dtype, order=order)
        self._gpu = _current_gpu()

    @classmethod
    def _new(cls, data: np.ndarray, gpu: int | None = None) -> ndarray:
        out = object.__new__(cls)
        if data.dtype.kind in "OUSMmV" and data.dtype != np.dtype("bfloat16"):
            raise ValueError(f"Unsupported dtype {data.dtype}")
        out._a = data
        out._gpu = _current_gpu() if gpu is None else gpu
        return out

    # ------------------------------------------------------------------ attributes
    @property
    def shape(self) -> tuple[int, ...]:
        return self._a.shape

    @shape.setter
    def shape(self, value: Any) -> None:
        view = self._a.view()
        view.shape = value  # raises where NumPy (and CuPy) cannot reshape without a copy
        self._a = view

    dtype = property(lambda self: self._a.dtype)
    size = property(lambda self: self._a.size)
    ndim = property(lambda self: self._a.ndim)
    strides = property(lambda self: self._a.strides)
    itemsize = property(lambda self: self._a.itemsize)
    nbytes = property(lambda self: self._a.nbytes)
    T = property(lambda self: ndarray._new(self._a.T, self._gpu))
    mT = property(lambda self: ndarray._new(self._a.mT, self._gpu))

    @property
    def flags(self) -> _Flags:
        f = self._a.flags
        return _Flags(f.c_contiguous, f.f_contiguous, f.owndata)

    @property
    def base(self) -> ndarray | None:
        base = self._a.base
        return ndarray._new(base, self._gpu) if isinstance(base, np.ndarray) else None

    @property
    def data(self) -> MemoryPointer:
        return MemoryPointer(self._a.ctypes.data, self._gpu)

    @property
    def device(self) -> Any:
        return _cuda().Device(self._gpu)

    @property
    def real(self) -> ndarray:
        return ndarray._new(self._a.real, self._gpu)

    @real.setter
    def real(self, value: Any) -> None:
        _refuse_host([value])
        self._a.real = _unwrap(value)

    @property
    def imag(self) -> ndarray:
        return ndarray._new(self._a.imag if self._a.dtype.kind == "c" else np.zeros_like(self._a), self._gpu)

    @imag.setter
    def imag(self, value: Any) -> None:
        _refuse_host([value])
        self._a.imag = _unwrap(value)

    @property
    def flat(self) -> Iterator[ndarray]:
        return (self.ravel()[i] for i in range(self.size))

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        a = self._a
        return {"shape": a.shape, "typestr": a.dtype.str, "descr": a.dtype.descr, "version": 3,
                "data": (a.ctypes.data, False), "strides": None if a.flags.c_contiguous else a.strides,
                "stream": 1}

    def __dlpack_device__(self) -> tuple[int, int]:
        return 2, self._gpu  # kDLCUDA

    def __dlpack__(self, **kwargs: Any) -> Any:
        # CuPy raises BufferError where it cannot export to what the consumer asks (np.from_dlpack asks for host
        # memory without a copy); the stand-in exports no capsule at all, and says so the same way, so consumers that
        # fall back on BufferError (np.asarray: the explicit gather) do as they would on a GPU
        raise BufferError("the CuPy stand-in exports no DLPack capsule (a real GPU exports device memory)")

    # ------------------------------------------------------------------ host transfers
    def get(self, stream: Any = None, order: str = "C", out: np.ndarray | None = None, blocking: bool = True) -> Any:
        """A copy on the host (``out``: written into that NumPy array and returned)."""
        _refuse_in_capture("a device-to-host copy")
        if out is not None:
            if not isinstance(out, np.ndarray):
                raise TypeError("Only numpy.ndarray can be obtained from cupy.ndarray")
            if out.shape != self.shape or out.dtype != self.dtype:
                raise ValueError(f"Shape mismatch or dtype mismatch: {out.shape} {out.dtype}")
            out[...] = self._a
            return out
        return np.array(self._a, order="F" if order == "A" and self._a.flags.f_contiguous else order)

    def set(self, arr: np.ndarray, stream: Any = None) -> None:
        """Copy a NumPy array of the same shape and dtype into this array."""
        _refuse_in_capture("a host-to-device copy")
        if not isinstance(arr, np.ndarray):
            raise TypeError(f"Only numpy.ndarray can be set to cupy.ndarray, got {type(arr)}")
        if arr.shape != self.shape:
            raise ValueError(f"Shape mismatch. Old shape: {self.shape}, new shape: {arr.shape}")
        if arr.dtype != self.dtype:
            raise TypeError(f"{arr.dtype} array cannot be set to {self.dtype} array")
        self._a[...] = arr

    def item(self) -> Any:
        _host_sync("item()")
        return self._a.item()

    def tolist(self) -> Any:
        _host_sync("tolist()")
        return self._a.tolist()

    def tobytes(self, order: str = "C") -> bytes:
        return self._a.tobytes(order)

    # ------------------------------------------------------------------ implicit conversions
    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        raise TypeError(_IMPLICIT)

    def __bool__(self) -> bool:
        _host_sync("bool()")
        if self.size == 0:
            warnings.warn("The truth value of an empty array is ambiguous. Returning False, but in future this "
                          "will result in an error. Use `array.size > 0` to check that an array is not empty.",
                          DeprecationWarning, stacklevel=2)
            return False
        if self.size == 1:
            return bool(self._a.copy())
        raise ValueError("The truth value of an array with more than one element is ambiguous. Use a.any() or "
                         "a.all()")

    def __int__(self) -> int:
        _host_sync("int()")
        return int(self._a.copy())

    def __float__(self) -> float:
        _host_sync("float()")
        return float(self._a.copy())

    def __complex__(self) -> complex:
        _host_sync("complex()")
        return complex(self._a.copy())

    def __len__(self) -> int:
        if self._a.ndim == 0:
            raise TypeError("len() of unsized object")
        return self._a.shape[0]

    def __iter__(self) -> Iterator[ndarray]:
        if self._a.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self._a.shape[0]))

    def __repr__(self) -> str:
        return repr(self._a)

    def __str__(self) -> str:
        return str(self._a)

    def __format__(self, spec: str) -> str:
        return format(self._a.copy(), spec)

    def __copy__(self) -> ndarray:
        return self.copy()

    def __deepcopy__(self, memo: dict) -> ndarray:
        with _cuda().Device(self._gpu):
            return self.copy()

    def __reduce__(self) -> tuple:
        return _MODULE.array, (self.get(order="A"),)

    def __class_getitem__(cls, item: Any) -> Any:
        return types.GenericAlias(cls, item)

    # ------------------------------------------------------------------ indexing
    def __getitem__(self, slices: Any) -> ndarray:
        index, advanced = _prepare_index(slices)
        if advanced:
            index = _wrap_indices(index, self._a.shape)
        r = self._a[index]
        if isinstance(r, np.generic):  # CuPy returns a 0-d view, not a scalar
            r = self._a[(*index, Ellipsis)]
        return ndarray._new(r, _placed(r, self))

    def __setitem__(self, slices: Any, value: Any) -> None:
        index, advanced = _prepare_index(slices)
        if type(value) is ndarray:
            value = value._a
        elif advanced:  # CuPy's scatter copies the value to the device (core.array(value))
            value = np.asarray(value)
        elif not _is_scalar(value):
            v = np.asarray(value, dtype=self.dtype)
            if v.shape != ():
                raise ValueError("non-scalar numpy.ndarray cannot be used for fill")
        if advanced:
            index = _wrap_indices(index, self._a.shape)
        with _QUIET:
            self._a[index] = value

    # ------------------------------------------------------------------ NumPy's protocols (CuPy's dispatch)
    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        """``np.<ufunc>(device array)`` -> ``cupy.<ufunc>`` (CuPy's ``_ndarray_base.__array_ufunc__``)."""
        _numpy_on_device(ufunc.__name__ if method == "__call__" else f"{ufunc.__name__}.{method}")
        inout = inputs
        if "out" in kwargs:
            out = kwargs["out"]
            if len(out) != 1:
                raise ValueError("The 'out' parameter must have exactly one array value")
            inout += out
            kwargs["out"] = out[0]
        if method not in ("__call__", "outer", "at", "reduce", "accumulate", "reduceat"):
            return NotImplemented
        func = getattr(_MODULE, ufunc.__name__, None)
        if func is None:
            return NotImplemented
        if method != "__call__":
            func = getattr(func, method, None)
            if func is None:
                return NotImplemented
        for x in inout:
            if not (_is_scalar(x) or isinstance(x, (ndarray, np.ndarray)) or hasattr(x, "__cuda_array_interface__")):
                return NotImplemented
        if ufunc.__name__ in ("greater", "greater_equal", "less", "less_equal", "equal", "not_equal"):
            inputs = tuple(x.item() if isinstance(x, np.ndarray) and x.ndim == 0 else x for x in inputs)
        return func(*inputs, **kwargs)

    def __array_function__(self, func: Any, types_: Any, args: Any, kwargs: Any) -> Any:
        """``np.<function>(device array)`` -> ``cupy.<function>`` where CuPy has it (``__array_function__``)."""
        _numpy_on_device(func.__name__)
        try:
            module = functools.reduce(getattr, func.__module__.split(".")[1:], _MODULE)
            cupy_func = getattr(module, func.__name__)
        except AttributeError:
            return NotImplemented
        if cupy_func is func:
            return NotImplemented
        for t in types_:
            if not issubclass(t, (ndarray, np.ndarray)):
                return NotImplemented
        return cupy_func(*args, **kwargs)

    # ------------------------------------------------------------------ methods with CuPy's own rules
    def fill(self, value: Any) -> None:
        """Fill with a scalar (a 0-d device array, a Python or NumPy scalar)."""
        if type(value) is ndarray:
            if value.shape != ():
                raise ValueError("non-scalar cupy.ndarray cannot be used for fill")
            value = value._a
        elif np.asarray(value).shape != ():
            raise ValueError("non-scalar numpy.ndarray cannot be used for fill")
        self._a.fill(value)

    def reshape(self, *shape: Any, order: str = "C", copy: Any = None) -> ndarray:
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        r = self._a.reshape(shape, order=order) if copy is None else self._a.reshape(shape, order=order, copy=copy)
        return ndarray._new(r, _placed(r, self))

    def transpose(self, *axes: Any) -> ndarray:
        return ndarray._new(self._a.transpose(*axes), self._gpu)

    def view(self, dtype: Any = None, array_class: Any = None) -> ndarray:
        if array_class is not None and array_class is not ndarray:
            raise NotImplementedError("the CuPy stand-in has no ndarray subclasses")
        return ndarray._new(self._a.view() if dtype is None else self._a.view(dtype), self._gpu)

    def copy(self, order: str = "C") -> ndarray:
        return ndarray._new(self._a.copy(order=order), _current_gpu())

    def astype(self, dtype: Any, order: str = "K", casting: Any = None, subok: Any = None,
               copy: bool = True) -> ndarray:
        kw: dict[str, Any] = {"order": order, "copy": copy}
        if casting is not None:
            kw["casting"] = casting
        with _QUIET:
            r = self._a.astype(dtype, **kw)
        return self if r is self._a else ndarray._new(r, _current_gpu())

    def _check_kind(self, kind: Any) -> None:
        if kind is not None and kind != "stable":
            raise ValueError("kind can only be None or 'stable'")

    def sort(self, axis: int = -1, kind: Any = None) -> None:
        """In place; CuPy sorts only arrays with their own C-contiguous data (``_ndarray_sort``)."""
        self._check_kind(kind)
        _own_data(self, "Sorting")
        self._a.sort(axis=axis, kind="stable")

    def partition(self, kth: Any, axis: int = -1) -> None:
        """In place, as ``_ndarray_partition``: C-contiguous arrays only, CuPy's ``kth`` (``_kth``)."""
        _own_data(self, "Sorting")
        axis = normalize_axis_index(axis, self.ndim)
        self._a.partition(_kth(kth, self._a.shape[axis]), axis=axis)

    def argpartition(self, kth: Any, axis: Any = -1) -> ndarray:
        """As ``_ndarray_argpartition``: CuPy's ``kth``; an empty axis gives shape ``(0,)``, whatever the array's."""
        data = self._a.reshape(-1) if axis is None else self._a
        axis = normalize_axis_index(-1 if axis is None else axis, data.ndim)
        if data.shape[axis] == 0:
            return ndarray._new(np.empty((0,), dtype=np.int64), _current_gpu())
        ks = _kth(kth, data.shape[axis])
        return ndarray._new(np.argpartition(data, ks, axis=axis).astype(np.int64), _current_gpu())

    def argsort(self, axis: Any = -1, kind: Any = None) -> ndarray:
        self._check_kind(kind)
        return ndarray._new(self._a.argsort(axis=axis, kind="stable"), _current_gpu())

    def argmax(self, axis: Any = None, out: Any = None, dtype: Any = None, keepdims: bool = False) -> Any:
        return _MODULE.argmax(self, axis, dtype, out, keepdims)  # (CuPy's method: the same reduction)

    def argmin(self, axis: Any = None, out: Any = None, dtype: Any = None, keepdims: bool = False) -> Any:
        return _MODULE.argmin(self, axis, dtype, out, keepdims)

    def searchsorted(self, v: Any, side: str = "left", sorter: Any = None) -> Any:
        return _MODULE.searchsorted(self, v, side, sorter)  # (CuPy's method calls cupy.searchsorted)

    def take(self, indices: Any, axis: Any = None, out: Any = None) -> ndarray:
        return _MODULE.take(self, indices, axis, out)

    def dot(self, b: ndarray, out: ndarray | None = None) -> ndarray:
        if type(b) is not ndarray or (out is not None and type(out) is not ndarray):
            raise TypeError(f"Argument 'b' has incorrect type (expected cupy._core.core._ndarray_base, "
                            f"got {type(b).__name__})")
        return _MODULE.dot(self, b, out)

    def scatter_add(self, slices: Any, value: Any) -> None:
        _MODULE.add.at(self, slices, value)

    def scatter_max(self, slices: Any, value: Any) -> None:
        _MODULE.maximum.at(self, slices, value)

    def scatter_min(self, slices: Any, value: Any) -> None:
        _MODULE.minimum.at(self, slices, value)

    def _add_reduceat(self, indices: Any, axis: Any, dtype: Any, out: Any) -> ndarray:
        return _wrap(np.add.reduceat(self._a, _unwrap(indices), axis=axis, dtype=dtype, out=_unwrap(out)),
                     _originals([out]))

    def reduced_view(self, dtype: Any = None) -> ndarray:
        return self

    def toDlpack(self) -> Any:
        return self.__dlpack__()


def _own_data(a: ndarray, what: str) -> None:
    """CuPy's in-place sorts: a 0-d array has no axis; a view that is not C-contiguous is refused."""
    if a.ndim == 0:
        raise np.exceptions.AxisError(f"{what} arrays with the rank of zero is not supported")
    if not a._a.flags.c_contiguous:
        raise NotImplementedError(f"{what} non-contiguous array is not supported.")


def _kth(kth: Any, length: int) -> list[int]:
    """``kth`` as CuPy's partitions read it (``cdef Py_ssize_t k``, v14.2.0): a Python int (``isinstance(kth,
    int)``), else iterated, so a NumPy integer or a 0-d array raises ``TypeError`` (NumPy takes both); each in
    ``[-length, length)``."""
    ks = (kth,) if isinstance(kth, int) else kth
    out = []
    for k in ks:  # (a NumPy integer: "'numpy.int64' object is not iterable")
        if not isinstance(k, (int, np.integer)):
            raise TypeError(f"an integer is required (kth holds {type(k).__name__})")
        k = int(k) + length if k < 0 else int(k)
        if not 0 <= k < length:
            raise ValueError(f"kth(={k}) out of bounds {length}")
        out.append(k)
    return out


def _method(name: str, params: str) -> Callable[..., Any]:
    """``ndarray.<name>`` with CuPy's parameters, carried out by NumPy's method on the wrapped array."""
    check = _binder(f"ndarray.{name}", params)
    np_method = getattr(np.ndarray, name)

    def method(self: ndarray, *args: Any, **kwargs: Any) -> Any:
        check(*args, **kwargs)
        _refuse_host(args)
        _refuse_host(kwargs.values())
        keep = _originals((*args, *kwargs.values()))
        with _QUIET:
            r = np_method(self._a, *_unwrap(args), **{k: _unwrap(v) for k, v in kwargs.items()})
        return _wrap(r, keep, _placed(r, self))

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"CuPy's ``ndarray.{name}({params})``."
    return method


def _operators() -> None:
    """CuPy's operators: an operand that is a device array goes straight to the ufunc; others through NumPy's
    ufunc (which comes back to ``__array_ufunc__``, so a NumPy array operand is refused there)."""

    def use_rop(y: Any) -> bool:  # CuPy's ``_should_use_rop``
        y_ufunc = getattr(y, "__array_ufunc__", _MISSING)
        if y_ufunc is not _MISSING:
            return y_ufunc is None
        return 100 < getattr(y, "__array_priority__", 0)

    def binary(ufunc_name: str) -> tuple[Callable, Callable, Callable]:
        def op(x: ndarray, y: Any) -> Any:
            if type(y) is ndarray:
                return getattr(_MODULE, ufunc_name)(x, y)
            if use_rop(y):
                return NotImplemented
            return getattr(np, ufunc_name)(x, y)

        def rop(x: ndarray, y: Any) -> Any:
            return getattr(_MODULE, ufunc_name)(y, x)

        def iop(x: ndarray, y: Any) -> Any:
            return getattr(_MODULE, ufunc_name)(x, y, out=x)

        return op, rop, iop

    for dunder, ufunc_name in (("add", "add"), ("sub", "subtract"), ("mul", "multiply"), ("truediv", "true_divide"),
                               ("floordiv", "floor_divide"), ("mod", "remainder"), ("pow", "power"),
                               ("lshift", "left_shift"), ("rshift", "right_shift"), ("and", "bitwise_and"),
                               ("or", "bitwise_or"), ("xor", "bitwise_xor"), ("matmul", "matmul"),
                               ("divmod", "divmod")):
        op, rop, iop = binary(ufunc_name)
        setattr(ndarray, f"__{dunder}__", op)
        setattr(ndarray, f"__r{dunder}__", rop)
        if dunder != "divmod":
            setattr(ndarray, f"__i{dunder}__", iop)

    def compare(ufunc_name: str, default: bool | None) -> Callable:
        def op(x: ndarray, y: Any) -> Any:
            if type(y) is ndarray:
                return getattr(_MODULE, ufunc_name)(x, y)
            if use_rop(y):
                return NotImplemented
            if isinstance(y, np.ndarray) and y.ndim == 0:
                y = y.item()
            if default is not None and (y is None or type(y).__eq__ is object.__eq__):
                return (_MODULE.ones if default else _MODULE.zeros)(x.shape, dtype=np.bool_)
            return getattr(np, ufunc_name)(x, y)

        return op

    for dunder, ufunc_name, default in (("lt", "less", None), ("le", "less_equal", None), ("eq", "equal", False),
                                        ("ne", "not_equal", True), ("gt", "greater", None),
                                        ("ge", "greater_equal", None)):
        setattr(ndarray, f"__{dunder}__", compare(ufunc_name, default))
    ndarray.__neg__ = lambda self: _MODULE.negative(self)  # type: ignore[method-assign]
    ndarray.__pos__ = lambda self: _MODULE.positive(self)  # type: ignore[method-assign]
    ndarray.__abs__ = lambda self: _MODULE.absolute(self)  # type: ignore[method-assign]
    ndarray.__invert__ = lambda self: _MODULE.invert(self)  # type: ignore[method-assign]


_MISSING = object()


def _ftz_scalar_operands(name: str, args: list[Any]) -> list[Any]:
    """CuPy compiles every kernel with ``-ftz=true`` (cupy/cuda/compiler.py v14.2.0, ``_compile_with_cache_cuda``):
    single-precision arithmetic reads a subnormal operand as 0. Modeled for the scalar operand of a float32 or
    complex64 ``multiply``/``divide`` (the kernel takes it in the loop's dtype): a factor below
    ``finfo(float32).tiny`` (``1 / 9.5e38``) scales to 0 on a GPU, where NumPy's product is normal. Subnormal
    array data and subnormal results are not modeled."""
    if name not in ("multiply", "true_divide", "divide") or not any(_is_scalar(a) for a in args):
        return args
    try:
        dt = np.result_type(*args)
    except TypeError:
        return args
    if dt not in (np.float32, np.complex64):
        return args
    tiny = np.finfo(np.float32).tiny

    def flush(v: Any) -> Any:
        with np.errstate(all="ignore"):  # a Python float beyond float32's range: inf, as the kernel's cast
            parts = np.array([v], dtype=dt).view(np.float32)
        low = (parts != 0) & (np.abs(parts) < tiny)
        if not low.any():
            return v
        parts[low] = 0
        return parts.view(dt)[0]

    return [flush(a) if _is_scalar(a) and not isinstance(a, (bool, np.bool_, int, np.integer)) else a for a in args]


def _check_cscalar_ints(args: Any) -> None:
    """CuPy packs every Python int operand of a kernel into an int64 ``CScalar`` (uint64 from ``2**63`` on) before
    it looks at the other operands (``_preprocess_arg`` in cupy/_core/_kernel.pyx, ``CScalar.__init__`` in
    cupy/_core/_scalar.pyx, v14.2.0): an int outside ``[-2**63, 2**64)`` raises ``OverflowError`` even beside a
    float array, where NumPy converts the weak int to the float dtype (``x // 2**70``)."""
    for a in args:
        if type(a) is int and not -(2**63) <= a < 2**64:
            raise OverflowError("Python int too large to convert to C long")


def _loop_dtype(args: list[Any], kw: dict[str, Any]) -> np.dtype | None:
    """The dtype a CuPy ufunc's loop computes in for NumPy operands ``args`` (None: no NumPy promotion rule)."""
    try:
        return np.dtype(kw["dtype"]) if kw.get("dtype") is not None else np.result_type(*args)
    except TypeError:
        return None


def _into_out(value: np.ndarray, kw: dict[str, Any]) -> np.ndarray:
    """``value`` written into the ufunc's ``out`` (a tuple or an array in ``kw``), or as it is."""
    out = kw.get("out")
    if out is None:
        return value
    o = out[0] if isinstance(out, tuple) else out
    np.copyto(o, value, casting="unsafe")
    return o


def _cupy_float_floor(name: str) -> Callable[..., Any]:
    """``cupy.floor_divide`` / ``cupy.remainder``: NumPy's for integers; for floats CuPy's kernels (v14.2.0:
    ``_floor_divide`` in cupy/_core/include/cupy/carray.cuh and bfloat16.cuh, the loops in
    cupy/_core/_routines_math.pyx) compute ``floor(a / b)`` and ``a - floor(a / b) * b``, where NumPy's
    ``npy_divmod`` corrects ``fmod(a, b)``: ``1.0 // 0.1`` is 10 (NumPy 9), ``1.0 % 0.1`` 0 (NumPy 0.0999...),
    ``inf // 2`` inf (NumPy NaN), ``1 % inf`` NaN (NumPy 1). float16 and bfloat16 compute in float32, rounded once
    (the half types convert to ``float``). Each operation rounds here; nvcc may contract the remainder's
    ``a - q * b`` into an FMA (not modeled)."""
    np_func = getattr(np, name)

    def call(*args: Any, **kw: Any) -> Any:
        dt = np_func(*args, **{k: v for k, v in kw.items() if k != "out"}).dtype  # (ml_dtypes' loop: weak scalars)
        if not (dt.kind == "f" or dt.name == "bfloat16"):
            return np_func(*args, **kw)
        wide = np.dtype(np.float32) if dt.itemsize < 4 else dt
        a, b = (np.asarray(v).astype(dt).astype(wide) for v in args)
        q = np.floor(a / b)
        return _into_out((q if name == "floor_divide" else a - q * b).astype(dt), kw)

    call.__name__ = name
    return call


def _cupy_integral_power(*args: Any, **kw: Any) -> Any:
    """``cupy.power``: NumPy's, except integers to negative integer powers, which NumPy refuses (``ValueError``)
    and CuPy's ``integral_power`` (cupy/_core/_routines_math.pyx, v14.2.0) computes: ``(-1) ** n`` is ``±1``,
    ``1 ** n`` 1, any other base 0."""
    dt = _loop_dtype(list(args), kw)
    b = np.asarray(args[1])
    if dt is None or dt.kind not in "iu" or b.dtype.kind != "i" or not (b < 0).any():
        return np.power(*args, **kw)
    a, b = np.asarray(args[0]).astype(dt), b.astype(dt)
    neg = b < 0
    r = np.power(a, np.where(neg, 0, b).astype(dt))
    small = np.where(a == -1, np.where(b & 1, -1, 1), np.where(a == 1, 1, 0))
    return _into_out(np.where(neg, small, r).astype(dt), kw)


def _cupy_power(*args: Any, **kw: Any) -> Any:
    """``cupy.power``: CUDA's inexact double ``pow`` (``_cuda_pow_of_two``), CuPy's integer powers
    (``_cupy_integral_power``), else NumPy's."""
    if _loop_dtype(list(args), kw) == np.float64:
        return _cuda_pow_of_two(*args, **kw)
    return _cupy_integral_power(*args, **kw)


def _cuda_pow_of_two(*args: Any, **kw: Any) -> Any:
    """CUDA's double ``pow`` is accurate to 2 ulp, not correctly rounded, even where the result is exact: on an
    H200 ``2.0 ** -4.0`` came back one ulp below 0.0625 (``x * 2.0**-4`` three times was three ulps off). Modeled
    as: a base of exactly 2 to a negative integral exponent, one ulp toward zero."""
    r = np.power(*args, **kw)
    a, b = (np.asarray(v, dtype=np.float64) for v in args[:2])
    off = (a == 2.0) & (b < 0) & (b == np.floor(b)) & (r != 0) & np.isfinite(r)
    if not np.any(off):
        return r
    return _into_out(np.where(off, np.nextafter(r, 0.0), r), kw)


def _ftz_compare(name: str) -> Callable[..., Any]:
    """CuPy's float32 comparisons under ``-ftz=true`` (cupy/cuda/compiler.py v14.2.0): a subnormal operand reads
    as a (signed) zero, so ``9.2e-41 > 0`` is False and ``9.2e-41 == 0`` True. Modeled for the six comparison
    ufuncs of a float32 loop (bfloat16 loops and float32 arithmetic are not)."""
    np_func = getattr(np, name)

    def call(*args: Any, **kw: Any) -> Any:
        if _loop_dtype(list(args), kw) != np.float32:
            return np_func(*args, **kw)
        flushed = []
        for v in args:
            f = np.array(v, dtype=np.float32)
            sub = (f != 0) & (np.abs(f) < np.finfo(np.float32).tiny)
            flushed.append(np.where(sub, np.copysign(np.float32(0), f), f) if sub.any() else v)
        return np_func(*flushed, **kw)

    call.__name__ = name
    return call


#: CuPy's own arithmetic where it is not NumPy's (``ufunc.__call__`` runs these in place of NumPy's ufunc)
_CUPY_UFUNC_MODELS: dict[str, Callable[..., Any]] = {
    "floor_divide": _cupy_float_floor("floor_divide"), "remainder": _cupy_float_floor("remainder"),
    "power": _cupy_power,
    **{n: _ftz_compare(n) for n in ("less", "less_equal", "greater", "greater_equal", "equal", "not_equal")},
}


# ==================================================================================================== ufunc
class ufunc:
    """A CuPy ufunc: inputs are device arrays or scalars, keywords ``out``, ``dtype``, ``casting`` only, and the
    methods CuPy has (``UFUNC_METHODS``).

    Args:
        name: the NumPy name (``"add"``); ``__name__`` is CuPy's (``"cupy_add"``).
    """

    def __init__(self, name: str) -> None:
        self._np = getattr(np, _NUMPY_NAMES.get(name, name))
        self._short = name
        self.name = self.__name__ = f"cupy_{name}"
        self.nin = getattr(self._np, "nin", 1)
        self.nout = getattr(self._np, "nout", 1)
        self.nargs = self.nin + self.nout

    def __repr__(self) -> str:
        return f"<ufunc '{self.name}'>"

    @property
    def types(self) -> list[str]:
        return list(getattr(self._np, "types", []))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        out = kwargs.pop("out", None)
        where = kwargs.pop("_where", None)
        dtype = kwargs.pop("dtype", None)
        casting = kwargs.pop("casting", None)
        if kwargs:
            raise TypeError(f"Wrong arguments {kwargs}")
        if not self.nin <= len(args) <= self.nargs:
            raise TypeError(f"Wrong number of arguments for {self.name!r}. It must be either {self.nin} or "
                            f"{self.nargs} (with outputs), but given {len(args)}.")
        ins, outs = args[: self.nin], args[self.nin:]
        if out is not None:
            if outs:
                raise ValueError("Cannot specify 'out' as both a positional and keyword argument")
            if isinstance(out, tuple):
                if len(out) != self.nout:
                    raise ValueError("The 'out' tuple must have exactly one entry per ufunc output")
                outs = out
            elif self.nout != 1:
                raise ValueError("'out' must be a tuple of arrays")
            else:
                outs = (out,)
        for a in (*ins, *(() if where is None else (where,))):
            if type(a) is not ndarray and not _is_scalar(a):
                raise TypeError(_UNSUPPORTED.format(type(a)))
        _check_cscalar_ints(ins)
        for o in outs:
            if o is not None and type(o) is not ndarray:
                raise TypeError("Output arguments must be cupy.ndarray")
        kw: dict[str, Any] = {}
        if dtype is not None:
            kw["dtype"] = dtype
        if casting is not None:
            kw["casting"] = casting
        if where is not None:
            kw["where"] = _unwrap(where)
        if any(o is not None for o in outs):
            kw["out"] = tuple(None if o is None else o._a for o in outs)
            if not isinstance(self._np, np.ufunc):
                kw["out"] = kw["out"][0]
        gpu = _current_gpu()
        with _QUIET:
            run = _CUPY_UFUNC_MODELS.get(self._short, self._np)
            r = run(*_ftz_scalar_operands(self._short, [_unwrap(a) for a in ins]), **kw)
        return _wrap(r, _originals(outs), gpu)

    # ------------------------------------------------------------------ methods (CuPy's limits)
    def _unsupported(self, method: str) -> NotImplementedError:
        return NotImplementedError(f"`{self.name}.{method}` is not supported yet")

    def reduce(self, array: Any, axis: Any = 0, dtype: Any = None, out: Any = None, keepdims: bool = False) -> Any:
        method = UFUNC_METHODS["reduce"].get(self._short)
        if method is None:
            raise self._unsupported("reduce")
        return getattr(array, method)(axis, dtype, out, keepdims)

    def accumulate(self, array: Any, axis: Any = 0, dtype: Any = None, out: Any = None) -> Any:
        method = UFUNC_METHODS["accumulate"].get(self._short)
        if method is None:
            raise self._unsupported("accumulate")
        return getattr(array, method)(axis, dtype, out)

    def reduceat(self, array: Any, indices: Any, axis: Any = 0, dtype: Any = None, out: Any = None) -> Any:
        method = UFUNC_METHODS["reduceat"].get(self._short)
        if method is None:
            raise self._unsupported("reduceat")
        return getattr(array, method)(indices, axis, dtype, out)

    def outer(self, A: Any, B: Any, **kwargs: Any) -> Any:
        A, B = _MODULE.array(A), _MODULE.array(B)
        return self(A.reshape(A.shape + (1,) * B.ndim), B.reshape((1,) * A.ndim + B.shape), **kwargs)

    def at(self, a: Any, indices: Any, b: Any = None) -> None:
        dtypes = UFUNC_METHODS["at"].get(self._short)
        if dtypes is None:
            raise self._unsupported("at")
        if type(a) is not ndarray:
            raise AttributeError(f"'{type(a).__name__}' object has no attribute '_scatter_op'")
        if a.dtype.name not in dtypes:
            raise TypeError(f"cupy.{self._short}.at only supports {', '.join(dtypes)} as data type")
        index, _ = _prepare_index(indices)
        index = _wrap_indices(index, a._a.shape)
        value = b._a if type(b) is ndarray else np.asarray(b)
        with _QUIET:
            self._np.at(a._a, index if len(index) > 1 else index[0], value.astype(a.dtype))


# ==================================================================================================== functions
def _function(name: str, params: str, np_func: Callable[..., Any], *, array_result: bool = False) -> Callable[..., Any]:
    """``cupy.<name>`` with CuPy's parameters, carried out by ``np_func`` on the wrapped arrays.

    Args:
        name: the CuPy name (``"linalg.solve"``).
        params: CuPy's parameter list.
        np_func: what does the work, on NumPy arrays.
        array_result: a Python scalar result becomes a 0-d array (CuPy computes it on the device).
    """
    check = _binder(name, params)

    def call(*args: Any, **kwargs: Any) -> Any:
        check(*args, **kwargs)
        _refuse_host(args)
        _refuse_host(kwargs.values())
        keep = _originals((*args, *kwargs.values()))
        gpu = _current_gpu()
        with _QUIET:
            r = np_func(*_unwrap(args), **{k: _unwrap(v) for k, v in kwargs.items()})
        if array_result and isinstance(r, (bool, int, float, complex)):
            r = np.asarray(r)
        return _wrap(r, keep, gpu)

    short = name.rpartition(".")[2]
    call.__name__ = call.__qualname__ = short
    call.__module__ = "cupy" + ("." + name.rpartition(".")[0] if "." in name else "")
    call.__doc__ = f"CuPy's ``{name}({params})``, carried out by NumPy on the device arrays' data."
    call.__signature__ = _signature(params)  # type: ignore[attr-defined]
    return call


def _device_level(name: str, params: str, impl: Callable[..., Any]) -> Callable[..., Any]:
    """``cupy.<name>`` with CuPy's parameters, ``impl`` called with the arguments as given."""
    check = _binder(name, params)

    def call(*args: Any, **kwargs: Any) -> Any:
        check(*args, **kwargs)
        return impl(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    call.__module__ = "cupy"
    call.__doc__ = f"CuPy's ``{name}({params})``."
    call.__signature__ = _signature(params)  # type: ignore[attr-defined]
    return call


def _gap(name: str) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"cupy.{name} exists in CuPy {CUPY_VERSION} but not in this stand-in "
                                  f"(tests/support/strict_cupy.py)")

    call.__name__ = name
    return call


# ------------------------------------------------------------------ functions whose CuPy rules differ from NumPy's
def _array(obj: Any, dtype: Any = None, copy: Any = True, order: Any = "K", subok: bool = False, ndmin: int = 0, *,
           blocking: bool = False) -> ndarray:
    """``cupy.array``: host or device data -> a new array on the current GPU (``copy=False``: where it can)."""
    if type(obj) is ndarray:
        if copy is False or copy is None:
            r = obj._a if dtype is None or np.dtype(dtype) == obj.dtype else obj._a.astype(dtype)
            if ndmin > r.ndim:
                r = r.reshape((1,) * (ndmin - r.ndim) + r.shape)
            return obj if r is obj._a else ndarray._new(r)
        return ndarray._new(np.array(obj._a, dtype=dtype, copy=True, order=order, ndmin=ndmin))
    _refuse_in_capture("a host-to-device copy")
    return ndarray._new(np.array(_unwrap(obj), dtype=dtype, copy=True, order=order, ndmin=ndmin))


def _asarray(a: Any, dtype: Any = None, order: Any = None, *, copy: Any = None, blocking: bool = False) -> ndarray:
    if type(a) is ndarray:
        if copy:
            return ndarray._new(np.array(a._a, dtype=dtype, order=order or "K", copy=True))
        if (dtype is None or np.dtype(dtype) == a.dtype) and order in (None, "K", "A"):
            return a
        if copy is False:
            raise ValueError("Unable to avoid copy while creating an array as requested.")
        return ndarray._new(np.asarray(a._a, dtype=dtype, order=order))
    _refuse_in_capture("a host-to-device copy")
    return ndarray._new(np.array(_unwrap(a), dtype=dtype, order=order or "K", copy=True))


def _ascontiguousarray(a: Any, dtype: Any = None) -> ndarray:
    if type(a) is not ndarray:
        raise TypeError(f"Argument 'a' has incorrect type (expected cupy._core.core._ndarray_base, "
                        f"got {type(a).__module__}.{type(a).__name__})")
    if a._a.flags.c_contiguous and (dtype is None or np.dtype(dtype) == a.dtype):
        # CuPy (cupy/_core/core.pyx, ascontiguousarray): a 0-d array comes back raveled, shape (1,), as a copy does
        return a if a.ndim else ndarray._new(a._a.reshape(1), a._gpu)
    return ndarray._new(np.ascontiguousarray(a._a, dtype=dtype))


def _refuse_in_capture(what: str) -> None:
    """Raise as CUDA does for a host transfer while the installed fake GPU captures a graph."""
    fake = getattr(FakeCupy, "active", None)
    if fake is not None:
        fake.refuse_in_capture(what)


def _asnumpy(a: Any, stream: Any = None, order: str = "C", out: Any = None, *, blocking: bool = True) -> np.ndarray:
    if type(a) is ndarray:
        return a.get(stream=stream, order=order, out=out, blocking=blocking)
    temp = np.asarray(a, order=order)
    if out is not None:
        out[...] = temp
        return out
    return temp


def _fill_value(value: Any, what: str = "copyto") -> Any:
    """``copyto``'s source rules: a device array, a scalar, or a NumPy array of size 1 (used as its scalar)."""
    if type(value) is ndarray:
        return value._a
    if isinstance(value, np.ndarray):
        if value.size != 1:
            raise ValueError(f"non-scalar numpy.ndarray cannot be used for {what}")
        return value.squeeze()[()]
    _refuse_host([value])
    return value


def _full(shape: Any, fill_value: Any, dtype: Any = None, order: str = "C") -> ndarray:
    """``cupy.full``: ``ndarray(shape)`` then ``copyto(a, fill_value, casting='unsafe')``."""
    if dtype is None:
        dtype = fill_value.dtype if type(fill_value) is ndarray else np.array(fill_value).dtype
    return ndarray._new(np.full(shape, _fill_value(fill_value), dtype=dtype, order=order))


def _full_like(a: Any, fill_value: Any, dtype: Any = None, order: str = "K", subok: Any = None,
               shape: Any = None) -> ndarray:
    _refuse_host([a])
    return ndarray._new(np.full_like(a._a, _fill_value(fill_value), dtype=dtype, order=order, shape=shape))


def _copyto(dst: Any, src: Any, casting: str = "same_kind", where: Any = None) -> None:
    if type(dst) is not ndarray:
        raise TypeError(f"Argument 'dst' has incorrect type (expected cupy.ndarray, got {type(dst).__name__})")
    _refuse_host([where])
    with _QUIET:
        np.copyto(dst._a, _fill_value(src), casting=casting, where=True if where is None else _unwrap(where))


def _lexsort(keys: Any) -> Any:
    """CuPy's ``lexsort(keys)``: ``keys`` one (k, N) device array, no ``axis``."""
    if type(keys) is not ndarray:
        raise AttributeError(f"'{type(keys).__name__}' object has no attribute 'ndim' (cupy.lexsort takes one "
                             f"(k, N) cupy.ndarray of keys)")
    if keys.ndim == 0:
        raise TypeError("need sequence of keys with len > 0 in lexsort")
    if keys.ndim == 1:
        return ndarray._new(np.array(0, dtype=np.intp))
    if keys.ndim > 2:
        raise NotImplementedError("Keys with the rank of three or more is not supported in lexsort")
    return ndarray._new(np.lexsort(keys._a))


def _partition(a: Any, kth: Any, axis: Any = -1) -> Any:
    """``cupy.partition``: a copy (flattened for ``axis=None``), partitioned in place (``ndarray.partition``)."""
    _refuse_host([a])
    ret = a.flatten() if axis is None else a.copy()
    ret.partition(kth, axis=-1 if axis is None else axis)
    return ret


def _argpartition(a: Any, kth: Any, axis: Any = -1) -> Any:
    """``cupy.argpartition``: ``a.argpartition(kth, axis=axis)``."""
    _refuse_host([a])
    return a.argpartition(kth, axis=axis)


def _take(a: Any, indices: Any, axis: Any = None, out: Any = None) -> Any:
    """``cupy.take``: host indices accepted; out-of-range indices wrap around."""
    _refuse_host([a, out])
    idx = _unwrap(indices)
    base = a._a
    n = base.size if axis is None else base.shape[axis]
    if n:
        idx = np.mod(idx, n)
    r = np.take(base, idx, axis=axis, out=_unwrap(out))
    return _wrap(r, _originals([out]))


def _sort(a: Any, axis: Any = -1, kind: Any = None) -> Any:
    if kind is not None and kind != "stable":
        raise ValueError("kind can only be None or 'stable'")
    return np.sort(a, axis=axis, kind="stable")


def _argsort(a: Any, axis: Any = -1, kind: Any = None) -> Any:
    if kind is not None and kind != "stable":
        raise ValueError("kind can only be None or 'stable'")
    return np.argsort(a, axis=axis, kind="stable")


def _cupy_compare(lhs: Any, rhs: Any, op: str) -> Any:
    """C's ``<``, ``<=``, ``>``, ``>=`` as CuPy's kernels apply them; for complex values CuPy's ``operator<`` etc.
    (cupy/_core/include/cupy/complex/arithmetic.h, v14.2.0): ``==``, else by real part, then imaginary part,
    NaN parts compared as C compares NaN (so ``1+nanj < 2+0j``, where NumPy's sort order puts ``1+nanj`` last)."""
    lhs, rhs = np.asarray(lhs), np.asarray(rhs)
    if lhs.dtype.kind != "c" and rhs.dtype.kind != "c":
        return {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal}[op](lhs, rhs)
    lhs, rhs = lhs.astype(np.complex128), rhs.astype(np.complex128)
    eq = lhs == rhs
    if op[0] == "<":
        strict = (lhs.real < rhs.real) | ((lhs.real == rhs.real) & (lhs.imag < rhs.imag))
    else:
        strict = (lhs.real > rhs.real) | ((lhs.real == rhs.real) & (lhs.imag > rhs.imag))
    return (strict | eq) if op.endswith("=") else strict


def _searchsorted(a: Any, v: Any, side: str = "left", sorter: Any = None) -> Any:
    """``cupy.searchsorted`` as CuPy 14.2's kernel computes it (cupy/_sorting/search.py, ``_searchsorted_code``
    with ``assume_increasing``), per value ``x`` of ``v``:

    * ``x != x`` (a NaN; a complex one with either part NaN): the end (``right``), or before the trailing run
      of NaN bins (``left``), whichever NaN it is;
    * ``x > bins[-1]`` (``>=`` for ``right``): the end, without a search;
    * else a binary search of ``bins`` with ``bins[m] < x`` (``<=`` for ``right``), ``_cupy_compare``'s.

    On sorted real bins that is NumPy's answer. It is not on unsorted bins (the early exit at ``bins[-1]``: an
    H200 gave ``[7, 7]`` where NumPy's search gives ``[1, 7]``), nor for complex values with NaN parts (NumPy
    orders ``R+Rj < R+nanj < nan+Rj < nan+nanj``; CuPy's comparisons put ``1+nanj`` below ``2+0j`` and treat
    every complex NaN ``x`` alike).
    """
    a, v = np.asarray(a), np.asarray(v)
    if a.ndim > 1:
        raise ValueError("object too deep for desired array")
    if a.ndim < 1:
        raise ValueError("object of too small depth for desired array")
    if a.size == 0:
        return np.zeros(v.shape, dtype=np.int64)
    if sorter is not None:
        sorter = np.asarray(sorter)
        if sorter.dtype.kind not in "iu":
            raise TypeError("sorter must be of integer type")
        if sorter.size != a.size:
            raise ValueError("sorter.size must equal a.size")
        a = a[np.mod(sorter, a.size)]  # (``a.take(sorter)``: indices wrap)
    right, n, x = side == "right", a.size, v.reshape(-1)
    y = np.zeros(x.size, dtype=np.int64)
    nan_x = x != x
    valid = np.flatnonzero(a == a)  # (``_isnan``: ``val != val``)
    y[nan_x] = n if right else (valid[-1] + 1 if valid.size else 0)
    done = nan_x | _cupy_compare(x, a[-1], ">=" if right else ">")
    y[done & ~nan_x] = n
    lo, hi = np.zeros(x.size, dtype=np.int64), np.full(x.size, n - 1, dtype=np.int64)
    active = ~done & (lo < hi)
    while active.any():
        m = lo + (hi - lo) // 2
        look_right = _cupy_compare(a[m], x, "<=" if right else "<")
        lo, hi = np.where(active & look_right, m + 1, lo), np.where(active & ~look_right, m, hi)
        active = ~done & (lo < hi)
    y[~done] = hi[~done]
    return y.reshape(v.shape)


def _arg_search(name: str) -> Callable[..., Any]:
    """``cupy.argmax`` / ``argmin``: NumPy's, except where a float or complex row holds several NaNs.

    CuPy's reductions (``my_argmax_float`` / ``my_argmin_float`` in cupy/_core/_routines_statistics.pyx, and
    CUB's ``ArgMax`` / ``ArgMin`` specialisations in cupy/cuda/cupy_cub.cu, v14.2.0) keep the *left* operand
    when both are NaN, with no look at the indices, and a reduction tree's left operand is not always the lower
    index: which NaN wins depends on the launch (an H200 gave 4 for ``argmax([2, 0, -1, nan, nan])``, NumPy 3).
    Modelled as the last NaN of the row, a choice CuPy can make and NumPy never does. Ties of equal non-NaN
    values keep the least index (the ``a.value == b.value`` branch), as NumPy.
    """
    np_func = getattr(np, name)

    def call(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False) -> Any:
        r = np.asarray(np_func(a, axis=axis, keepdims=keepdims))
        if (a.dtype.kind in "fc" or a.dtype.name == "bfloat16") and a.size:
            b, ax = (a.reshape(-1), 0) if axis is None else (a, axis)
            nan = np.isnan(b)
            last = b.shape[ax] - 1 - np.argmax(np.flip(nan, ax), axis=ax)
            r = np.where(nan.sum(axis=ax) > 1, last, r.reshape(last.shape)).reshape(r.shape)
        r = r.astype(np.int64 if dtype is None else dtype)
        if out is not None:
            np.copyto(out, r, casting="unsafe")
            return out
        return r

    call.__name__ = name
    return call


def _result_type(*arrays_and_dtypes: Any) -> np.dtype:
    return np.result_type(*[a.dtype if type(a) is ndarray else a for a in arrays_and_dtypes])


def _can_cast(from_: Any, to: Any, casting: str = "safe") -> bool:
    return np.can_cast(from_.dtype if type(from_) is ndarray else from_, to, casting=casting)


def _get_array_module(*args: Any) -> Any:
    return _MODULE if any(type(a) is ndarray for a in args) else np


def _ndim(a: Any) -> int:
    return a.ndim if type(a) is ndarray else np.ndim(a)


def _cholesky(a: np.ndarray) -> np.ndarray:
    """cuSOLVER's potrf as CuPy returns it: no LinAlgError; a failing matrix keeps LAPACK's partial factor."""
    try:
        return np.linalg.cholesky(a)
    except np.linalg.LinAlgError:
        pass
    out = np.array(a, dtype=np.result_type(a.dtype, np.float32), copy=True)
    flat = out.reshape(-1, *out.shape[-2:])
    for m in flat:
        n = m.shape[0]
        for k in range(n):  # right-looking, stopping at the first pivot that is not positive (info = k + 1)
            d = m[k, k].real if np.iscomplexobj(m) else m[k, k]
            if not d > 0:
                break
            m[k, k] = np.sqrt(d)
            m[k + 1:, k] /= m[k, k]
            m[k + 1:, k + 1:] -= np.outer(m[k + 1:, k], m[k + 1:, k].conj())
    return np.tril(out)


def _solve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """getrf + getrs without CuPy's (off by default) info check: a singular matrix gives NaN, not LinAlgError."""
    try:
        return np.linalg.solve(a, b)
    except np.linalg.LinAlgError:
        shape = np.linalg.solve(np.broadcast_to(np.eye(a.shape[-1], dtype=a.dtype), a.shape), b).shape
        return np.full(shape, np.nan, dtype=np.result_type(a.dtype, b.dtype, np.float32))


def _inv(a: np.ndarray) -> np.ndarray:
    try:
        return np.linalg.inv(a)
    except np.linalg.LinAlgError:
        if a.ndim >= 3:
            return _batched_inv_getri(a)
        return np.full(a.shape, np.nan, dtype=np.result_type(a.dtype, np.float32))


def _batched_inv_getri(a: np.ndarray) -> np.ndarray:
    """``cupy.linalg.inv`` of a stack NumPy finds singular: CuPy's ``_batched_inv`` (cupy/linalg/_solve.py,
    v14.2.0) runs cuBLAS ``getrfBatched`` + ``getriBatched`` on ``a.astype(order='C')`` read column-major, i.e.
    on each matrix's **transpose**, and GPU code fuses the LU's update ``a - l*u`` into one FMA. That LU can
    meet a pivot of rounding size where LAPACK's LU of ``a`` (NumPy's) meets an exact zero: a finite inverse of
    size ``1/eps``, no NaN (an H200: the repeated-row matrix of tests/linalg/test_linalg_errors.py, pivots
    ``±5.6e-16``). Modeled per real matrix NumPy finds singular: that LU (partial pivoting, multipliers by the
    reciprocal pivot as LAPACK's getf2, each update one exact FMA rounded once through ``fractions``), then the
    inverse from its factors; an exact zero pivot (a zero row or column stays zero) gives NaN, as getri's
    division by it. Complex matrices: NaN."""
    from fractions import Fraction

    dt = np.result_type(a.dtype, np.float32)
    out = np.array(a, dtype=dt, copy=True)
    flat = out.reshape(-1, *out.shape[-2:])
    for i, m in enumerate(flat):
        try:
            flat[i] = np.linalg.inv(m)
            continue
        except np.linalg.LinAlgError:
            pass
        if dt.kind == "c":
            flat[i] = np.nan
            continue
        lu, n = m.T.astype(np.float64), m.shape[-1]
        perm = np.arange(n)
        for k in range(n):
            p = k + int(np.argmax(np.abs(lu[k:, k])))
            lu[[k, p]], perm[[k, p]] = lu[[p, k]], perm[[p, k]]
            if lu[k, k] == 0:
                break
            lu[k + 1:, k] *= 1.0 / lu[k, k]
            for r in range(k + 1, n):
                for c in range(k + 1, n):  # fl(a - l*u), one rounding (then to the dtype)
                    lu[r, c] = float(Fraction(lu[r, c]) - Fraction(lu[r, k]) * Fraction(lu[k, c]))
            lu[k + 1:, k + 1:] = lu[k + 1:, k + 1:].astype(dt).astype(np.float64)
        if np.any(np.diag(lu) == 0):
            flat[i] = np.nan
            continue
        low, up = np.tril(lu, -1) + np.eye(n), np.triu(lu)
        inv_t = np.linalg.inv(up) @ np.linalg.inv(low) @ np.eye(n)[perm]  # (P a^T = L U)^-1
        flat[i] = inv_t.T
    return out


def _single_fft(np_func: Callable[..., Any], real_out: bool) -> Callable[..., Any]:
    """cuFFT keeps single precision: float32/complex64 in, complex64 (or float32) out; NumPy returns 128 bits."""

    @functools.wraps(np_func)
    def call(a: Any, *args: Any, **kwargs: Any) -> Any:
        r = np_func(a, *args, **kwargs)
        if isinstance(a, np.ndarray) and a.dtype in (np.float32, np.complex64, np.float16):
            r = r.astype(np.float32 if real_out else np.complex64)
        return r

    return call


def _random(name: str) -> Callable[..., Any]:
    np_func = getattr(np.random, name)

    def call(*args: Any, dtype: Any = None, **kwargs: Any) -> Any:
        r = np_func(*args, **kwargs)
        return np.asarray(r if dtype is None else np.asarray(r).astype(dtype))

    return call


#: functions that take the device arrays themselves (they check, convert and wrap on their own)
_DEVICE_LEVEL: dict[str, Callable[..., Any]] = {
    "array": _array, "asarray": _asarray, "asanyarray": _asarray, "ascontiguousarray": _ascontiguousarray,
    "asnumpy": _asnumpy, "lexsort": _lexsort, "take": _take, "result_type": _result_type, "can_cast": _can_cast,
    "get_array_module": _get_array_module, "ndim": _ndim, "is_available": lambda: True, "full": _full,
    "full_like": _full_like, "copyto": _copyto, "partition": _partition, "argpartition": _argpartition,
}
#: functions carried out on the NumPy data by something other than NumPy's function of the same name
_OVERRIDES: dict[str, Callable[..., Any]] = {
    "sort": _sort, "argsort": _argsort, "shape": np.shape, "isscalar": np.isscalar,
    "asfarray": lambda a, dtype=np.float64: np.asarray(a, dtype=dtype), "msort": lambda a: np.sort(a, axis=0),
    "linalg.cholesky": _cholesky, "linalg.solve": _solve, "linalg.inv": _inv,
    "searchsorted": _searchsorted, "argmax": _arg_search("argmax"), "argmin": _arg_search("argmin"),
}
#: CuPy computes these on the device: a 0-d array where NumPy returns a Python bool
_ARRAY_RESULTS = {"allclose", "array_equal", "array_equiv", "count_nonzero"}


def _testing_module() -> types.ModuleType:
    """``cupy.testing``'s comparisons: ``numpy.testing``'s on ``cupy.asnumpy`` of both sides."""
    testing = _namespace_module("cupy.testing")
    for name in ("assert_allclose", "assert_array_almost_equal", "assert_array_almost_equal_nulp",
                 "assert_array_max_ulp", "assert_array_equal", "assert_array_less"):
        np_check = getattr(np.testing, name)

        def check(x: Any, y: Any, *args: Any, _np_check: Callable[..., Any] = np_check, **kwargs: Any) -> None:
            kwargs.pop("strides_check", None)
            _np_check(_asnumpy(x), _asnumpy(y), *args, **kwargs)

        check.__name__ = name
        setattr(testing, name, check)
    return testing


# ==================================================================================================== the module
class _MemoryPool:
    """``cupy.cuda.MemoryPool``: counts nothing (host memory), answers CuPy's questions."""

    def __init__(self) -> None:
        self._limit = 0

    def used_bytes(self) -> int:
        return 0

    def total_bytes(self) -> int:
        return 0

    def free_bytes(self) -> int:
        return 0

    def n_free_blocks(self) -> int:
        return 0

    def free_all_blocks(self, stream: Any = None) -> None:
        return None

    def set_limit(self, size: int | None = None, fraction: float | None = None) -> None:
        self._limit = int(size or 0)

    def malloc(self, size: int) -> Any:  # the stand-in's arrays are host memory: never called for them
        raise RuntimeError("the CuPy stand-in allocates no device memory")

    def get_limit(self) -> int:
        return self._limit


def _namespace_module(name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__stand_in__ = True  # type: ignore[attr-defined]
    return module


def build_module() -> types.ModuleType:
    """The ``cupy`` namespace: CuPy 14.2's names (``FUNCTIONS``, ``UFUNCS``, ``ALIASES``, ``FROM_NUMPY``).

    ``StrictCupy`` adds ``cupy.cuda``, ``RawModule`` and the memory pool.
    """
    cupy = _namespace_module("cupy")
    subs = {"linalg": _namespace_module("cupy.linalg"), "fft": _namespace_module("cupy.fft"),
            "random": _namespace_module("cupy.random")}
    for sub, module in subs.items():
        setattr(cupy, sub, module)
    cupy.__version__ = CUPY_VERSION  # type: ignore[attr-defined]
    cupy.ndarray = ndarray  # type: ignore[attr-defined]
    cupy.ufunc = ufunc  # type: ignore[attr-defined]

    def place(name: str, value: Any) -> None:
        sub, _, short = name.rpartition(".")
        setattr(subs[sub] if sub else cupy, short, value)

    for name, path in FROM_NUMPY.items():
        obj: Any = np
        for part in path.split("."):
            obj = getattr(obj, part, None)
        if obj is not None:
            place(name, obj)
    for name in UFUNCS:
        place(name, ufunc(name))
    np_modules = {"": np, "linalg": np.linalg, "fft": np.fft, "random": np.random}
    for name, params in {**FUNCTIONS, **_HAND_WRITTEN_FUNCTIONS}.items():
        sub, _, short = name.rpartition(".")
        if name in _DEVICE_LEVEL:
            place(name, _device_level(name, params, _DEVICE_LEVEL[name]))
            continue
        impl = _OVERRIDES.get(name) or getattr(np_modules[sub], _NUMPY_NAMES.get(name, short).rpartition(".")[2], None)
        if name not in _OVERRIDES and impl is not None:
            if sub == "random":
                impl = _random(short)
            elif sub == "fft" and "freq" not in short and "shift" not in short:
                impl = _single_fft(impl, real_out=short.startswith("irfft") or short == "hfft")
        if impl is None:
            place(name, _gap(name))
            continue
        place(name, _function(name, params, impl, array_result=name in _ARRAY_RESULTS))
    for name, target in ALIASES.items():
        sub, _, short = target.rpartition(".")
        module = subs[sub] if sub else cupy
        if hasattr(module, short):
            place(name, getattr(module, short))
    for name, value in _CONSTANTS.items():
        setattr(cupy, name, value)
    cupy.testing = _testing_module()  # type: ignore[attr-defined]
    return cupy


#: the namespace the arrays dispatch to (``__array_ufunc__``, operators): one for every stand-in
_MODULE: Any = None


# ==================================================================================================== kernels
def _acc(dtype: np.dtype) -> type:
    return np.float64 if dtype == np.float64 else np.float32


def _rows(a: ndarray, n: int, acc: type) -> np.ndarray:
    return a._a.reshape(-1, n).astype(acc)


def _shift_sum(x: np.ndarray, finite_only: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """``row_shift_sum``: m = fmax over the row (NaN skipped, -inf start; 0 for an all -inf row, or with
    ``finite_only`` for any maximum that is not finite), s = sum exp(x - m)."""
    m = np.fmax.reduce(x, axis=1, initial=-np.inf, keepdims=True)
    m = np.where((m == -np.inf) | (finite_only & ~np.isfinite(m)), 0, m).astype(x.dtype)
    return m, np.exp(x - m).sum(axis=1, keepdims=True, dtype=x.dtype)


def _store(out: ndarray, value: np.ndarray) -> None:
    out._a.reshape(value.shape)[...] = value.astype(out.dtype)


def _softmax_fwd(x: ndarray, y: ndarray, n: Any) -> None:
    n = int(n)
    a = _rows(x, n, _acc(x.dtype))
    m, s = _shift_sum(a)
    _store(y, np.exp(a - m) / s)


def _softmax_bwd(g: ndarray, y: ndarray, dx: ndarray, n: Any, scale: Any) -> None:
    n, acc = int(n), _acc(y.dtype)
    gr, yr = _rows(g, n, acc), _rows(y, n, acc)
    s = (gr * yr).sum(axis=1, keepdims=True, dtype=acc)
    _store(dx, acc(scale) * ((gr - s) * yr))


def _xent_fwd(x: ndarray, t: ndarray, loss: ndarray, lse: ndarray, n: Any) -> None:
    n = int(n)
    a = _rows(x, n, _acc(x.dtype))
    m, s = _shift_sum(a, finite_only=True)
    l_ = (np.log(s) + m)[:, 0]
    lse._a.reshape(-1)[...] = l_
    picked = np.take_along_axis(a, np.mod(t._a.reshape(-1, 1), n), axis=1)[:, 0]
    _store(loss, l_ - picked)


def _xent_bwd(g: ndarray, x: ndarray, t: ndarray, lse: ndarray, dx: ndarray, n: Any) -> None:
    n, acc = int(n), _acc(x.dtype)
    a = _rows(x, n, acc)
    onehot = (np.arange(n)[None, :] == t._a.reshape(-1, 1)).astype(acc)
    gr = g._a.reshape(-1, 1).astype(acc)
    _store(dx, gr * (np.exp(a - lse._a.reshape(-1, 1).astype(acc)) - onehot))


def _causal(x: ndarray, n: int, scale: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(scaled rows, visible mask, m, 1/s) of ``causal_shift_sum`` (one warp per row)."""
    acc = _acc(x.dtype)
    a = acc(scale) * _rows(x, n, acc)
    visible = np.arange(n)[None, :] <= (np.arange(a.shape[0]) % n)[:, None]
    m = np.fmax.reduce(np.where(visible, a, -np.inf), axis=1, initial=-np.inf, keepdims=True).astype(acc)
    s = np.where(visible, np.exp(a - m), 0).sum(axis=1, keepdims=True, dtype=acc)
    return a, visible, m, (acc(1) / s).astype(acc)


def _causal_softmax_fwd(x: ndarray, p: ndarray, rows: Any, n: Any, scale: Any) -> None:
    a, visible, m, inv = _causal(x, int(n), scale)
    _store(p, np.where(visible, np.exp(a - m) * inv, 0))


def _causal_softmax_bwd(g: ndarray, x: ndarray, dx: ndarray, rows: Any, n: Any, scale: Any) -> None:
    n = int(n)
    acc = _acc(x.dtype)
    a, visible, m, inv = _causal(x, n, scale)
    p = np.where(visible, np.exp(a - m) * inv, 0)
    gr = _rows(g, n, acc)
    gp = (gr * p).sum(axis=1, keepdims=True, dtype=acc)
    _store(dx, np.where(visible, acc(scale) * (gr - gp) * p, 0))


def _ln_fwd(x: ndarray, gain: ndarray, bias: ndarray, y: ndarray, mean: ndarray, rstd: ndarray, n: Any,
            eps: Any) -> None:
    n, acc = int(n), _acc(x.dtype)
    a = _rows(x, n, acc)
    mu = (a.sum(axis=1, keepdims=True, dtype=acc) / acc(n)).astype(acc)
    c = a - mu
    rs = (acc(1) / np.sqrt((c * c).sum(axis=1, keepdims=True, dtype=acc) / acc(n) + acc(eps))).astype(acc)
    _store(y, c * rs * gain._a.astype(acc) + bias._a.astype(acc))
    mean._a.reshape(-1)[...] = mu[:, 0]
    rstd._a.reshape(-1)[...] = rs[:, 0]


def _ln_bwd(g: ndarray, x: ndarray, gain: ndarray, mean: ndarray, rstd: ndarray, dx: ndarray, gxh: ndarray,
            n: Any) -> None:
    n, acc = int(n), _acc(x.dtype)
    gi, a = _rows(g, n, acc), _rows(x, n, acc)
    mu, rs = mean._a.reshape(-1, 1).astype(acc), rstd._a.reshape(-1, 1).astype(acc)
    h = (a - mu) * rs
    gh = gi * gain._a.astype(acc)
    m1 = gh.sum(axis=1, keepdims=True, dtype=acc) / acc(n)
    m2 = (gh * h).sum(axis=1, keepdims=True, dtype=acc) / acc(n)
    _store(dx, (gh - m1 - h * m2) * rs)
    _store(gxh, gi * h)


_GELU_C = 0.7978845608028654


def _gelu_fwd(x: ndarray, y: ndarray, n: Any) -> None:
    acc = _acc(x.dtype)
    a = x._a.reshape(-1).astype(acc)
    with np.errstate(over="ignore"):  # (a^3 overflows where |a| is large: tanh of it is ±1, as on the GPU)
        t = np.tanh(acc(_GELU_C) * (a + acc(0.044715) * a * a * a))
    _store(y, acc(0.5) * a * (acc(1) + t))


def _gelu_bwd(g: ndarray, x: ndarray, dx: ndarray, n: Any) -> None:
    acc = _acc(x.dtype)
    a = x._a.reshape(-1).astype(acc)
    with np.errstate(over="ignore", invalid="ignore"):
        t = np.tanh(acc(_GELU_C) * (a + acc(0.044715) * a * a * a))
        u = acc(1) - t * t
        mid = np.where(u == 0, acc(0), a * u * acc(_GELU_C) * (acc(1) + acc(3 * 0.044715) * a * a))
    _store(dx, acc(0.5) * g._a.reshape(-1).astype(acc) * (acc(1) + t + mid))


def _adam(p: ndarray, g: ndarray, m: ndarray, v: ndarray, p_out: ndarray, m_out: ndarray, v_out: ndarray, n: Any,
          b1: Any, b2: Any, step: Any, c2: Any, eps: Any, decay: Any) -> None:
    acc = _acc(p.dtype)
    gi = g._a.reshape(-1).astype(acc)
    mi = acc(b1) * m._a.reshape(-1).astype(acc) + acc(1.0 - b1) * gi
    vi = acc(b2) * v._a.reshape(-1).astype(acc) + acc(1.0 - b2) * gi * gi
    den = np.sqrt(vi * acc(1.0 / c2)) + acc(eps)
    _store(m_out, mi)
    _store(v_out, vi)
    _store(p_out, p._a.reshape(-1).astype(acc) * acc(decay) - acc(step) * mi / den)


def _adam_dev(p: ndarray, g: ndarray, m: ndarray, v: ndarray, p_out: ndarray, m_out: ndarray, v_out: ndarray,
              n: Any, b1: Any, b2: Any, step: ndarray, c2: ndarray, eps: Any, decay: ndarray) -> None:
    if step.size != 1 or c2.size != 1 or decay.size != 1:
        raise ValueError(f"adam_dev reads one step_size, c2 and decay, got arrays of {step.size}, {c2.size}, "
                         f"{decay.size}")
    _adam(p, g, m, v, p_out, m_out, v_out, n, b1, b2, float(step._a.reshape(-1)[0]), float(c2._a.reshape(-1)[0]),
          eps, float(decay._a.reshape(-1)[0]))


def _batch_pointers(out: ndarray, nb: Any, n2: Any, a: Any, a1: Any, a2: Any, b: Any, b1: Any, b2: Any, c: Any,
                    c1: Any, c2: Any) -> None:
    if not out._a.flags.c_contiguous or out.size != 3 * int(nb):
        raise ValueError(f"batch_pointers writes 3 x {nb} addresses into a contiguous array, got {out.shape}")
    out._a.reshape(-1)[...] = fake_gpu.batch_pointers(nb, n2, a, a1, a2, b, b1, b2, c, c1, c2)


def _add_vec(a: ndarray, b: ndarray, y: ndarray, n: Any) -> None:
    acc = _acc(a.dtype)
    _store(y, a._a.reshape(-1).astype(acc) + b._a.reshape(-1).astype(acc))


def _add_rows(a: ndarray, b: ndarray, y: ndarray, n: Any, nb: Any) -> None:
    if a.size != int(n) or b.size != int(nb) or int(n) % max(int(nb), 1):
        raise ValueError(f"add_rows of {n} and {nb} elements launched on arrays of {a.size} and {b.size}")
    acc = _acc(a.dtype)
    _store(y, (a._a.reshape(-1, max(int(nb), 1)).astype(acc) + b._a.reshape(-1).astype(acc)).reshape(-1))


def _cast(x: ndarray, y: ndarray, n: Any) -> None:
    if x.size != int(n) or y.size != int(n):
        raise ValueError(f"a cast kernel of {n} elements launched on arrays of {x.size} and {y.size}")
    _store(y, x._a.reshape(-1).astype(np.float32))


#: what each kernel of ``kernels/*.cu`` computes (by name without the dtype suffix), in NumPy
KERNEL_MODELS: dict[str, Callable[..., None]] = {
    "softmax_fwd": _softmax_fwd, "softmax_bwd": _softmax_bwd, "xent_fwd": _xent_fwd, "xent_bwd": _xent_bwd,
    "causal_softmax_fwd": _causal_softmax_fwd, "causal_softmax_bwd": _causal_softmax_bwd,
    "ln_fwd": _ln_fwd, "ln_bwd": _ln_bwd, "gelu_fwd": _gelu_fwd, "gelu_bwd": _gelu_bwd, "adam": _adam,
    "adam_dev": _adam_dev, "batch_pointers": _batch_pointers, "add_vec": _add_vec, "add_rows": _add_rows,
    "cast_f32": _cast, "cast_bf16": _cast, "cast_f16": _cast,  # cast_<from>_<to>, less the <to> suffix
}


# ==================================================================================================== the machine
class StrictCupy(FakeCupy):
    """``FakeCupy`` with strict arrays (this module's ``ndarray``), a CuPy-shaped namespace and running kernels.

    Args:
        gpus: how many GPUs the fake machine has.
        strict: ignored (always strict); accepted so that ``FakeCupy(gpus, strict=True)`` can build one.
    """

    def __init__(self, gpus: int = 8, strict: bool | None = True) -> None:
        super().__init__(gpus, strict=True)

    def _array_namespace(self) -> types.ModuleType:
        global _MODULE
        module = build_module()
        if _MODULE is None:
            _MODULE = module
        return module

    def _build(self) -> Any:
        cupy = super()._build()
        pool, pinned = _MemoryPool(), _MemoryPool()
        cupy.get_default_memory_pool = lambda: pool
        cupy.get_default_pinned_memory_pool = lambda: pinned
        cuda = cupy.cuda
        cuda.MemoryPool = cuda.PinnedMemoryPool = _MemoryPool
        cuda.set_allocator = cuda.set_pinned_memory_allocator = lambda allocator=None: None
        cuda.is_available = lambda: True
        cuda.memory = types.SimpleNamespace(MemoryPointer=MemoryPointer, MemoryPool=_MemoryPool)
        runtime = cuda.runtime
        runtime.getDevice = lambda: self.device
        runtime.setDevice = lambda gpu: setattr(self, "device", int(gpu))
        runtime.deviceSynchronize = lambda: self.synchronized.append(-1 - self.device)
        runtime.memGetInfo = lambda: (80 << 30, 80 << 30)
        runtime.runtimeGetVersion = runtime.driverGetVersion = lambda: 13000
        runtime.CUDARuntimeError = RuntimeError
        props = runtime.getDeviceProperties
        runtime.getDeviceProperties = lambda gpu: {**props(gpu), "totalGlobalMem": 80 << 30, "major": 9, "minor": 0,
                                                   "multiProcessorCount": 132}
        return cupy

    def install(self, monkeypatch: Any) -> StrictCupy:
        """``FakeCupy.install``, plus ``cupy.linalg``, ``cupy.fft``, ``cupy.random``, ``cupy.testing`` as modules."""
        super().install(monkeypatch)
        for sub in ("linalg", "fft", "random", "testing"):
            monkeypatch.setitem(sys.modules, f"cupy.{sub}", getattr(self.module, sub))
        return self

    def _launch_arg(self, arg: Any) -> tuple[str, int | None, bool]:
        """(dtype or type name, GPU, C-contiguous) of a kernel argument; a NumPy array is refused as CuPy does."""
        if isinstance(arg, np.ndarray):
            raise TypeError(_UNSUPPORTED.format(type(arg)))
        if type(arg) is ndarray:
            return arg.dtype.name, arg._gpu, arg._a.flags.c_contiguous
        return type(arg).__name__, None, True

    def _run_kernel(self, name: str, args: tuple) -> None:
        base = re.sub(r"_(bf16|f16|f32|f64)$", "", name)
        model = KERNEL_MODELS.get(base)
        if model is None:
            raise NotImplementedError(f"kernel {name}: the CuPy stand-in has no model of it (add one to "
                                      f"KERNEL_MODELS in tests/support/strict_cupy.py)")
        with _QUIET:
            model(*args)


def install_session(gpus: int = 8) -> Any:
    """Install a ``StrictCupy`` for a whole pytest session and make ``FakeCupy(...)`` strict too.

    Returns:
        the ``pytest.MonkeyPatch`` whose ``undo()`` removes it.
    """
    import pytest

    mp = pytest.MonkeyPatch()
    mp.setattr(FakeCupy, "default_strict", True)
    StrictCupy(gpus=gpus).install(mp)
    return mp


def is_stand_in(module: Any) -> bool:
    """Whether ``module`` (an imported ``cupy``) is one of the fakes rather than real CuPy."""
    return bool(getattr(module, "__stand_in__", False))


# ==================================================================================================== derivation
_UFUNC_FACTORY = re.compile(r"_?create_\w*ufunc|create_arithmetic|create_comparison|_create_bit_op")


class _Source:
    """Files of one CuPy revision, read from a bare git directory."""

    def __init__(self, git_dir: str, rev: str) -> None:
        self.git_dir, self.rev = git_dir, rev

    def show(self, path: str) -> str | None:
        run = subprocess.run(["git", "--git-dir", self.git_dir, "show", f"{self.rev}:{path}"],
                             capture_output=True, text=True)
        return run.stdout if run.returncode == 0 else None

    def module(self, name: str) -> tuple[str, str] | tuple[None, None]:
        base = name.replace(".", "/")
        for path in (base + ".py", base + "/__init__.py", base + ".pyx"):
            text = self.show(path)
            if text is not None:
                return path, text
        return None, None

    def grep(self, pattern: str) -> list[str]:
        run = subprocess.run(["git", "--git-dir", self.git_dir, "grep", "-l", pattern, self.rev, "--", "cupy"],
                             capture_output=True, text=True)
        return [line.split(":", 1)[1] for line in run.stdout.splitlines()]


def _params(args: ast.arguments) -> str:
    for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg):
        if a is not None:
            a.annotation = None
    return ast.unparse(args)


def _cython_params(text: str) -> str:
    """``self, _ndarray_base a, int axis=-1`` -> ``a, axis=-1`` (C types dropped)."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    out = []
    for p in parts:
        name, eq, default = " ".join(p.split()).partition("=")
        words = name.split()
        if words and words[-1] not in ("self", "cls"):
            out.append(words[-1].split(">")[-1] + (f"={default.strip()}" if eq else ""))
    return ", ".join(out)


def _resolve(src: _Source, module: str, name: str, depth: int = 0) -> tuple[str, str | None]:
    """What ``module.name`` is in CuPy's source: ("function", params) | ("ufunc", None) | (other kind, note)."""
    path, text = src.module(module)
    if path is None or text is None or depth > 8:
        return "unknown", module
    if path.endswith(".pyx"):
        m = re.search(rf"^(?:cpdef|def)\s+(?:[\w.]+\s+)*?{name}\s*\(([^)]*)\)", text, re.M | re.S)
        if m:
            return "function", _cython_params(m.group(1))
        m = re.search(rf"^(?:cdef\s+)?{name}\s*=\s*([\w.]+)", text, re.M)
        if m is None:
            return "unknown", f"{name} in {path}"
        target = m.group(1)
        if _UFUNC_FACTORY.fullmatch(target.split(".")[-1]):
            return "ufunc", None
        if "." not in target and target != name:
            return _resolve(src, module, target, depth + 1)
        return "other", target
    tree = ast.parse(text)
    imports: dict[str, tuple[str, str | None]] = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module:
            imports.update({a.asname or a.name: (node.module, a.name) for a in node.names})
        elif isinstance(node, ast.Import):
            imports.update({a.asname or a.name: (a.name, None) for a in node.names})
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return "function", _params(node.args)
        if isinstance(node, ast.ClassDef) and node.name == name:
            return "class", None
        targets: list[ast.expr] = []
        value: ast.expr | None = None
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        if value is None or not any(isinstance(t, ast.Name) and t.id == name for t in targets):
            continue
        if isinstance(value, ast.Call):
            callee = ast.unparse(value.func).split(".")[-1]
            return ("ufunc", None) if _UFUNC_FACTORY.fullmatch(callee) else ("other", callee)
        ref = ast.unparse(value)
        head, _, attr = ref.rpartition(".")
        if not head:
            if ref in imports:
                return _resolve(src, imports[ref][0], imports[ref][1] or ref, depth + 1)
            return _resolve(src, module, ref, depth + 1)
        if head in imports:
            mod, sub = imports[head]
            return _resolve(src, mod if sub is None else f"{mod}.{sub}", attr, depth + 1)
        return "other", ref
    if name in imports and imports[name][1] is not None:
        return _resolve(src, imports[name][0], imports[name][1] or name, depth + 1)
    return "unknown", f"{name} in {path}"


def _namespace(src: _Source, module: str) -> dict[str, tuple[str, ...]]:
    """The public names a namespace module binds: ("from", module, name) | ("def", params) | ("alias", expr)."""
    _, text = src.module(module)
    out: dict[str, tuple[str, ...]] = {}

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.If):  # both branches of the NumPy-version tests (NumPy 2's comes last)
                visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for a in node.names:
                    if not (a.asname or a.name).startswith("_"):
                        out[a.asname or a.name] = ("from", node.module, a.name)
            elif isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
                out[node.name] = ("def", _params(node.args))
            elif isinstance(node, ast.Assign):
                for t in node.targets:
                    if isinstance(t, ast.Name) and not t.id.startswith("_"):
                        out[t.id] = ("alias", ast.unparse(node.value))

    visit(ast.parse(text or "").body)
    return out


def derive_api(git_dir: str, rev: str = "v14.2.0") -> dict[str, Any]:
    """The tables of this module, read from CuPy's source at ``rev`` (see ``--derive``)."""
    src = _Source(git_dir, rev)
    api: dict[str, Any] = {"FUNCTIONS": {}, "UFUNCS": [], "ALIASES": {}, "FROM_NUMPY": {}, "NOT_MODELLED": {}}
    skip = {"fft", "linalg", "random", "cuda", "polynomial", "exceptions", "testing", "annotations"}
    for sub in ("", "linalg", "fft", "random"):
        prefix = f"{sub}." if sub else ""
        entries = _namespace(src, "cupy" + (f".{sub}" if sub else ""))
        for name, entry in entries.items():
            key = prefix + name
            if name in skip and not sub:
                continue
            if entry[0] == "from" and entry[1].split(".")[0] == "numpy":
                sub_np = entry[1].partition(".")[2]
                api["FROM_NUMPY"][key] = f"{sub_np}.{entry[2]}" if sub_np else entry[2]
            elif entry[0] == "def":
                api["FUNCTIONS"][key] = entry[1]
            elif entry[0] == "alias":
                target = entry[1]
                if target in entries or target in ("inf", "nan"):
                    api["ALIASES"][key] = prefix + target if target in entries else target
                else:
                    api["NOT_MODELLED"][key] = target
            else:
                kind, note = _resolve(src, entry[1], entry[2])
                if entry[2] != name and entry[2] in entries:  # ``absolute as abs``: the same object
                    api["ALIASES"][key] = prefix + entry[2]
                elif kind == "function":
                    api["FUNCTIONS"][key] = note
                elif kind == "ufunc":
                    api["UFUNCS"].append(key)
                else:
                    api["NOT_MODELLED"][key] = f"{kind}: {note}"
    core = src.show("cupy/_core/core.pyx") or ""
    body = core[core.index("cdef class _ndarray_base:"):]
    body = body[: body.index("\ncdef ", 10)]
    methods, props = {}, []
    for m in re.finditer(r"^    (?:@property\n    def (\w+)\(self\)|property (\w+):|(?:cpdef|def)\s+(?:[\w.]+\s+)*?"
                         r"(\w+)\s*\(([^)]*)\))", body, re.M | re.S):
        if m.group(1) or m.group(2):
            props.append(m.group(1) or m.group(2))
        elif not m.group(3).startswith("_"):
            methods[m.group(3)] = _cython_params(m.group(4))
    api["NDARRAY_METHODS"] = methods
    api["NDARRAY_PROPERTIES"] = props
    kernel = src.show("cupy/_core/_kernel.pyx") or ""
    ufunc_methods: dict[str, dict[str, Any]] = {}
    for method in ("reduce", "accumulate", "reduceat"):
        text = kernel[kernel.index(f"    def {method}(self"):]
        text = text[: text.index("\n    def ", 10)] if "\n    def " in text[10:] else text
        ufunc_methods[method] = dict(re.findall(r"if self\.name == 'cupy_(\w+)':\s*return array\.(\w+)\(", text))
    scatter_ops: dict[str, str] = {}  # scatter op -> ufunc
    for path in src.grep("scatter_op='"):
        text = src.show(path) or ""
        for m in re.finditer(r"scatter_op='(\w+)'", text):
            before = text[: m.start()]
            call = list(re.finditer(r"(?:create_\w+|_create_bit_op)\(\s*'(?:cupy_)?(\w+)'", before))
            if call:
                scatter_ops[m.group(1)] = call[-1].group(1)
    indexing = src.show("cupy/_core/_routines_indexing.pyx") or ""
    single = indexing[indexing.index("cdef _scatter_op_single("):]
    single = single[: single.index("\ncdef ", 10)]
    at: dict[str, tuple[str, ...]] = {}
    for m in re.finditer(r"op == '(\w+)':\s*(?:#[^\n]*\n\s*)*if not issubclass\(v\.dtype\.type,\s*\(([^)]*)\)", single):
        names = sorted({np.dtype(getattr(np, t.strip().removeprefix("numpy."))).name
                        for t in m.group(2).split(",") if t.strip()})
        if m.group(1) in scatter_ops:
            at[scatter_ops[m.group(1)]] = tuple(names)
    ufunc_methods["at"] = at
    api["UFUNC_METHODS"] = ufunc_methods
    return api


def format_api(api: dict[str, Any], git_dir: str, rev: str) -> str:
    """The derived tables as the Python source between this module's ``BEGIN/END DERIVED API`` lines."""
    commit = subprocess.run(["git", "--git-dir", git_dir, "rev-parse", f"{rev}^{{commit}}"], capture_output=True,
                            text=True).stdout.strip()
    lines = [f"# from CuPy {rev} ({commit}):",
             "# cupy/__init__.py, cupy/{linalg,fft,random}/__init__.py and the modules they import; ndarray from",
             "# cupy/_core/core.pyx; ufunc methods from cupy/_core/_kernel.pyx and _routines_indexing.pyx."]

    def block(name: str, doc: str, value: Any, annotation: str) -> None:
        lines.append(f"#: {doc}")
        if isinstance(value, dict):
            lines.append(f"{name}: {annotation} = {{")
            for k, v in value.items():
                line = f"    {k!r}: {v!r},"
                lines.extend([line] if len(line) <= 120 else [f"    {k!r}:", f"        {v!r},"])
            lines.append("}")
        else:
            lines.append(f"{name}: {annotation} = (")
            row = "   "
            for v in value:
                if len(row) + len(repr(v)) + 2 > 118:
                    lines.append(row)
                    row = "   "
                row += f" {v!r},"
            lines.append(row)
            lines.append(")")

    block("FUNCTIONS", "the functions of ``cupy``, ``cupy.linalg``, ``cupy.fft``, ``cupy.random``: name -> CuPy's "
          "parameters", api["FUNCTIONS"], "dict[str, str]")
    block("UFUNCS", "the names bound to ``cupy.ufunc`` objects", api["UFUNCS"], "tuple[str, ...]")
    block("ALIASES", "names bound to another name's object (``abs`` is ``absolute``)", api["ALIASES"],
          "dict[str, str]")
    block("FROM_NUMPY", "names CuPy re-exports from NumPy (dtypes, constants, dtype helpers): name -> NumPy's path",
          api["FROM_NUMPY"], "dict[str, str]")
    block("NOT_MODELLED", "CuPy names this stand-in does not provide (classes, grids, kernels, fusion)",
          api["NOT_MODELLED"], "dict[str, str]")
    block("NDARRAY_METHODS", "``cupy.ndarray``'s public methods (``_ndarray_base``): name -> parameters",
          api["NDARRAY_METHODS"], "dict[str, str]")
    block("NDARRAY_PROPERTIES", "``cupy.ndarray``'s properties (plus ``size``, ``dtype``, ``data``, ``base`` from "
          "core.pxd)", api["NDARRAY_PROPERTIES"], "tuple[str, ...]")
    lines.append("#: the ufunc methods CuPy has, per ufunc: reduce/accumulate/reduceat -> the ndarray method that")
    lines.append("#: does it; at -> the dtypes its scatter kernel takes (every other ufunc raises NotImplementedError)")
    lines.append("UFUNC_METHODS: dict[str, dict[str, Any]] = {")
    for method, table in api["UFUNC_METHODS"].items():
        if method != "at":
            lines.append(f"    {method!r}: {table!r},")
    lines.append("    'at': {")
    lines.extend(f"        {k!r}: {v!r}," for k, v in api["UFUNC_METHODS"]["at"].items())
    lines.append("    },")
    lines.append("}")
    return "\n".join(lines)


def _attach_methods() -> None:
    """``ndarray``'s methods from ``NDARRAY_METHODS`` that the class does not define itself."""
    for name, params in NDARRAY_METHODS.items():
        if name.startswith("__") or name in ndarray.__dict__ or name in NDARRAY_PROPERTIES:
            continue
        if not hasattr(np.ndarray, name):
            continue
        setattr(ndarray, name, _method(name, params))
    ndarray.__module__ = "cupy"
    ndarray.__qualname__ = "ndarray"


if "NDARRAY_METHODS" in globals():
    _attach_methods()
    _operators()


if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[1] != "--derive":
        sys.exit("usage: python tests/support/strict_cupy.py --derive <cupy git dir> [rev]")
    git, tag = sys.argv[2], (sys.argv[3] if len(sys.argv) > 3 else "v14.2.0")
    print(format_api(derive_api(git, tag), git, tag))


__all__ = ["CUPY_SOURCE", "CUPY_VERSION", "HOST_SYNCS", "KERNEL_MODELS", "NUMPY_DISPATCH", "NUMPY_ON_DEVICE",
           "StrictCupy", "build_module", "derive_api", "install_session", "is_stand_in", "ndarray", "ufunc"]
