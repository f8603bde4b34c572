"""NumPy's protocols on distributed arrays: ``np.exp(x)``, ``np.sum(x, axis=0)``, ``np.concatenate([x, y])``.

``__array_ufunc__`` and ``__array_function__`` of both kinds of array:

* **positional** arrays (``shardarray.array_api``'s ``Array``): NumPy's
  meaning, derived from the namespace, not listed. ``np.X`` is ``xp.X``
  (``np.linalg.X`` is ``xp.linalg.X``, ``np.fft.X`` is ``xp.fft.X``) with NumPy's
  arguments adapted (``axis=None`` flattening where NumPy flattens,
  ``keepdims=``, ``dtype=``, ``out=`` into a positional array), plus NumPy-only
  names composed from the namespace (``np.dot``, ``np.isclose``, ``np.vstack``,
  ``np.extract``, ``np.compress``...): ``positional_functions``,
  ``positional_compose`` (the registry) with ``positional_shapes``, ``positional_creation``,
  ``positional_compare``, ``positional_indexing``, ``positional_elementwise``, ``positional_reductions``,
  ``positional_select``, ``positional_linalg`` (``np.linalg``'s own
  arguments: ``rcond``, ``hermitian``, ``tol``, ``UPLO``, ``mode='r'``), ``ndarray_views`` (``np.put``; NumPy's
  ``x.view``), ``positional_extras`` (``np.may_share_memory``, ``np.unravel_index``,
  ``np.histogram_bin_edges``, ``np.apply_along_axis``; the printing functions' refusal); ufuncs and their
  ``reduce``/``accumulate``/``outer``: ``positional_ufuncs``; the products (bools, ``np.matvec``/``np.vecmat``,
  the gufuncs' ``axes=``): ``positional_products``.
* **named** ShardArrays: a table of NumPy functions mapped to ``sa`` functions,
  axis ``k`` being ``x.dims[k]`` (``named_functions``, ``named_ufuncs``); the positional side's other functions
  and ufunc methods where every dim keeps its name (``np.fmax`` aligned by name, ``np.median(x, axis=0)``,
  ``np.copyto``, ``np.putmask``, ``np.add.at``): the positional view's answer, named again
  (``named_bridge``); the rest (reshapes, joins, contractions, new unnamed axes) raise ``sa.DTypeError`` naming
  ``xp.asarray(x)`` and the ``sa`` function where one exists.

A ufunc or function without a counterpart on either side returns ``NotImplemented``, so NumPy
raises its ``TypeError``: nothing is gathered silently. A ufunc that is not
NumPy's own (``scipy.special.gamma``: ``np.<its name>`` is another function or
none) raises ``sa.DTypeError`` (a TypeError) naming ``SCIPY_ARRAY_API=1`` and
``x.numpy()``: its name says nothing of its meaning, so it is not dispatched by
name. ``np.asarray(x)``
(``x.__array__``, ``x.numpy()``) stays the one explicit gather. The
collectives of each call are those of the ops it maps to (see their
docstrings); the dispatch itself moves nothing.

Example:
    >>> import shardarray.array_api as xp
    >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
    ...     a = xp.asarray([[1.0, 5.0, 3.0], [4.0, 2.0, 6.0]])
    >>> type(np.exp(a)).__name__, int(np.argmax(a)), np.asarray(np.argmax(a, axis=1))
    ('Array', 5, array([1, 2]))
    >>> mesh = sa.Mesh({"row": 2, "col": 2})
    >>> x = sa.asarray(np.arange(8.0).reshape(4, 2), dims=("batch", "io"), mesh=mesh, layout={"batch": "row"})
    >>> s = np.sum(x, axis=0)              # named: sa.sum(x, "batch"), pending over row, resolved when read
    >>> s.dims, np.asarray(s)
    (('io',), array([12., 16.]))
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

from ..array import OPS
from . import (
    ndarray_views,
    positional_functions,
    positional_linalg,
    positional_products,
    positional_select,
    positional_ufuncs,
)
from .common import HOOKS, UFUNC_ALIASES
from .named_functions import FUNCTIONS, KWARG_NAMES, Entry, array_function
from .named_ufuncs import UFUNC_ACCUMULATIONS, UFUNC_OPERATORS, UFUNC_REDUCTIONS, array_ufunc
from .python_protocols import iterate, round_array

#: the ``shardarray`` namespace, where ``lookup`` finds the counterparts of NumPy's functions for named arrays
#: (the package sets it when it has imported everything: it sits above this module)
NAMESPACE: types.ModuleType | None = None


def lookup(name: str) -> Callable[..., Any] | None:
    """The public ``shardarray`` function called ``name`` now (None when there is none; modules don't count)."""
    fn = getattr(NAMESPACE, name, None)
    if fn is None or isinstance(fn, (types.ModuleType, type)) or not callable(fn):
        return None
    return fn


HOOKS.lookup = lookup

# ShardArray's NumPy hooks (``__array_ufunc__``, ``__array_function__``, ``__iter__``, ``__round__``) call these
OPS.array_ufunc, OPS.array_function, OPS.iterate, OPS.round_array = array_ufunc, array_function, iterate, round_array

__all__ = [
    "FUNCTIONS",
    "KWARG_NAMES",
    "NAMESPACE",
    "UFUNC_ACCUMULATIONS",
    "UFUNC_ALIASES",
    "UFUNC_OPERATORS",
    "UFUNC_REDUCTIONS",
    "Entry",
    "array_function",
    "array_ufunc",
    "iterate",
    "lookup",
    "ndarray_views",
    "positional_functions",
    "positional_linalg",
    "positional_products",
    "positional_select",
    "positional_ufuncs",
    "round_array",
]
