"""``Array``: a ShardArray seen positionally, as the array API standard sees arrays.

The namespace's functions return ``Array``s. An ``Array`` *is* a ShardArray
(same shards, dims, layout and mesh: the named API works on it unchanged);
what differs is its operators: ``a + b`` broadcasts right-aligned by position
as NumPy does (``_align``), ``a @ b`` is the standard's matmul, ``a[...]`` is
positional indexing. A plain ShardArray meeting an ``Array`` in an operator is
treated positionally too (Python asks the subclass first).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from .. import copies
from ..array import OpTable, ShardArray, as_kind
from ..core import leader
from ..core.relayout import relayout
from ..core.tape import boundary, in_use
from ..errors import DimensionError, DTypeError, ExportError, MeshError
from ..mesh import Mesh
from ..numpy_protocol import ndarray_methods as _methods
from ..numpy_protocol import ndarray_views as _views
from ..numpy_protocol import positional_functions, positional_ufuncs
from ..ops.elementwise import arithmetic as ew
from ..ops.elementwise import logical, math_binary, math_unary, short_path
from ..ops.indexing.mask import bool_key, bool_lead, getitem_mask, setitem_mask
from ..ops.indexing.writes import WRITES, swap_in
from ..ops.manipulation.reshard import reshard
from ..ops.manipulation.structure import astype, transpose
from . import _ew_special as special
from ._align import align, in_order


def wrap(x: Any) -> Any:
    """``x`` as an ``Array`` (no copy of data; the autograd identity is kept); other values unchanged."""
    if type(x) is Array or not isinstance(x, ShardArray):
        return x
    return as_kind(x, Array)  # the same array (and tape node), another type


_np_method = _methods.numpy_method


def _view_of(method: Callable[..., Any], text: str) -> Callable[..., Any]:
    """``method`` (``ravel``, ``reshape``, ``transpose``, ``T``...: a view of ``x`` in NumPy, a new array here) with
    its new result tagged as a copy of ``x`` (``copies.mark``): a write into it freed unread warns
    ``sa.CopyWriteWarning``, as one into ``x[1:3]`` does (the book's ``Z_ = Z.ravel(); Z_[ids] = 1``)."""

    @functools.wraps(method)
    def tagged(self: Any, *args: Any, **kwargs: Any) -> Any:
        out = method(self, *args, **kwargs)
        return copies.mark(out, text, self) if isinstance(out, ShardArray) else out

    return tagged


def _wrap_all(out: Any) -> Any:
    """``wrap`` applied to a result or to each item of a tuple/list of results."""
    if isinstance(out, tuple) and hasattr(out, "_make"):  # a named tuple (QRResult, SVDResult, ...)
        return out._make(wrap(o) for o in out)
    if isinstance(out, (tuple, list)):
        return type(out)(wrap(o) for o in out)
    return wrap(out)


def elementwise(fn: Callable[..., ShardArray], *args: Any, what: str) -> Array:
    """``fn(*args)`` with NumPy's positional broadcasting of the array arguments (scalars pass through).

    An untraced array with a Python scalar, one array, or two arrays of one layout take the op's short path where
    it has one (``short_path.scalar_op``, ``short_path.arrays_op``: the same result, without the op mechanism's
    wrapper); the rest run ``fn`` itself.
    """
    if len(args) == 1 and isinstance(args[0], ShardArray):  # (a unary function: no alignment)
        out = short_path.arrays_op(fn, args, Array)  # (None: not on the short path)
        return out if out is not None else wrap(in_order(fn(*args), args[0].dims))
    if len(args) == 2:  # (an array and a Python scalar, or two arrays of one layout: the operators' common case)
        a, b = args
        if type(a) is Array and type(b) is Array and a._layout.dims == b._layout.dims:
            if a._layout.sizes == b._layout.sizes:  # two arrays of one shape: nothing to align
                return _same_shape(fn, args)
        fast = _real_form(fn, a, b) if fn in _REAL_FORMS else fn  # (the op as the short path knows it, or None)
        out = short_path.binary(fast, a, b, Array)  # (None: not on the short path)
        if out is not None:
            return out
        if not isinstance(b, ShardArray):  # (one array and a scalar: nothing to align)
            return wrap(in_order(fn(a, b), a.dims))
        if not isinstance(a, ShardArray):
            return wrap(in_order(fn(a, b), b.dims))
    idx = [i for i, a in enumerate(args) if isinstance(a, ShardArray)]
    if not idx:
        raise DimensionError(f"{what} needs at least one array argument")
    first = args[idx[0]]
    if all(args[i].dims == first.dims and args[i].shape == first.shape for i in idx[1:]):
        # one array and scalars, or arrays of one shape and dims: already aligned (the common case, kept cheap)
        return wrap(in_order(fn(*args), first.dims))
    aligned, dims, _ = align([args[i] for i in idx], what)
    full = list(args)
    for i, a in zip(idx, aligned):
        full[i] = a
    return wrap(in_order(fn(*full), dims))


#: the functions whose real form is another op (``logical.less`` and ``math_binary.maximum`` of complex values are
#: NumPy's order; of real ones, ``arithmetic.less`` and ``arithmetic.maximum``)
_REAL_FORMS = {logical.less: ew.less, logical.less_equal: ew.less_equal, logical.greater: ew.greater,
               logical.greater_equal: ew.greater_equal, math_binary.maximum: ew.maximum,
               math_binary.minimum: ew.minimum}  # fmt: skip


def _same_shape(fn: Callable[..., ShardArray], args: tuple[Any, ...]) -> Array:
    """``fn(*args)`` of two ``Array``s of one dims and shape: the op's short path (``short_path.arrays_op``), else
    ``fn`` itself (nothing to align). The operators run the same inline (``_binary``)."""
    a, b = args
    fast = fn if fn not in _REAL_FORMS else None if "c" in (a.dtype.kind, b.dtype.kind) else _REAL_FORMS[fn]
    out = short_path.arrays_op(fast, args, Array) if fast is not None else None
    return out if out is not None else wrap(in_order(fn(*args), a.dims))


def _real_form(fn: Any, a: Any, b: Any) -> Any:
    """``fn`` as the short path knows it for operands ``a`` and ``b``: its real form (``_REAL_FORMS``) where neither
    is complex, None where one is (the complex form has no short path), ``fn`` itself for the other ops."""
    real = _REAL_FORMS.get(fn)
    if real is None:
        return fn
    for v in (a, b):
        if (v.dtype.kind == "c") if isinstance(v, ShardArray) else isinstance(v, complex):
            return None
    return real


#: the NumPy ufunc of each operator, for NumPy scalar operands (``_binary``)
_UFUNCS = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.true_divide, "pow": np.power,
    "floor_divide": np.floor_divide, "remainder": np.remainder, "bitwise_and": np.bitwise_and,
    "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor, "bitwise_left_shift": np.left_shift,
    "bitwise_right_shift": np.right_shift, "equal": np.equal, "not_equal": np.not_equal, "less": np.less,
    "less_equal": np.less_equal, "greater": np.greater, "greater_equal": np.greater_equal,
}  # fmt: skip


def _host_operand(name: str, other: list[Any] | tuple[Any, ...]) -> DTypeError:
    """The error for a Python list or tuple operand of an operator (``x * [1, 2]``, ``x @ [1, 2]``)."""
    return DTypeError(
        f"{name}: the other operand is a Python {type(other).__name__}: host data does not mix with an "
        f"Array implicitly (as NumPy arrays do not). Convert it with xp.asarray(value, device=x.device)"
    )


def _binary(fn: Callable[..., ShardArray], name: str, reflected: bool = False) -> Callable[[Array, Any], Any]:
    """The operator ``name`` of ``Array`` (``__add__``; ``__radd__`` when ``reflected``): ``fn`` with NumPy's
    operands and broadcasting. A Python scalar, or an ``Array`` of the same dims and shape, tries the op's short path
    first (``short_path.scalar_op``, ``arrays_op``: the same result), then runs ``fn`` with nothing to align."""
    ufunc = _UFUNCS[name]
    real = fn in _REAL_FORMS  # (decided once: the operators' hot path)
    py_scalars = short_path.PY_SCALARS

    def op(self: Array, other: Any) -> Any:
        kind = type(other)
        if kind in py_scalars:  # a Python scalar: the short path, else the op (nothing to align)
            out = short_path.scalar_op(_real_form(fn, self, other) if real else fn, self, other, reflected, Array)
            return (
                out if out is not None else wrap(in_order(fn(other, self) if reflected else fn(self, other), self.dims))
            )
        args = (other, self) if reflected else (self, other)
        if kind is Array and type(self) is Array:
            mine, its = self._layout, other._layout
            if mine.dims == its.dims and mine.sizes == its.sizes:  # (``_same_shape``, inlined: the hot path)
                fast = fn if not real else None if "c" in (self.dtype.kind, other.dtype.kind) else _REAL_FORMS[fn]
                out = short_path.arrays_op(fast, args, Array) if fast is not None else None
                return out if out is not None else wrap(in_order(fn(*args), args[0].dims))
        if isinstance(other, (np.number, np.bool_)) and not isinstance(other, (int, float, complex)):
            # a NumPy scalar is a typed operand (NEP 50): NumPy's ufunc protocol decides its dtype, as for
            # ``np.add(x, np.float32(2))``, and a loop NumPy lacks (``x // np.complex64(1j)``) is a typed error
            # rather than Python's bare "unsupported operand" (the scalar's own operator gives up on an Array)
            return ufunc(other, self) if reflected else ufunc(self, other)
        if not isinstance(other, (ShardArray, bool, int, float, complex)):
            if isinstance(other, (list, tuple)):  # host data, as a NumPy array is (and x == [...] is not False)
                raise _host_operand(name, other)
            if isinstance(other, np.ndarray):  # (NumPy's ufunc, whose protocol refuses the mix: a subclass's own
                return ufunc(*args)  # operator, np.ma's, would read the Array whole through __array__ instead)
            return NotImplemented
        return elementwise(fn, *args, what=name)

    op.__name__ = name
    op.__doc__ = f"``{name}`` with NumPy's right-aligned broadcasting (see ``shardarray.array_api``)."
    return op


def _divmod(reflected: bool) -> Callable[[Array, Any], Any]:
    """``divmod(x, y)``: ``(x // y, x % y)``, as NumPy's ``np.divmod`` (two passes over the operands)."""
    floor, rem = (
        _binary(special.floor_divide, "floor_divide", reflected),
        _binary(math_binary.remainder, "remainder", reflected),
    )

    def op(self: Array, other: Any) -> Any:
        q = floor(self, other)
        return q if q is NotImplemented else (q, rem(self, other))

    op.__name__ = "__rdivmod__" if reflected else "__divmod__"
    op.__doc__ = "``divmod``: the floor quotient and the remainder, as NumPy's ``np.divmod``."
    return op


def _inplace(fn: Callable[..., ShardArray], name: str) -> Callable[[Array, Any], Any]:
    """``x op= y``: ``x op y`` written into ``x`` in place, as NumPy does; the result keeps ``x``'s shape and dtype.

    Every name bound to ``x`` sees the new value (``def f(buf): buf += 1`` changes the caller's array), as
    ``x[...] = v`` does; arrays that only shared ``x``'s blocks (a slice taken before) keep theirs. The write
    holds the lock of in-place writes (``ops.indexing.writes``: two threads' ``x += 1`` both count).

    Inside ``sa.value_and_grad``/``grad``/``vjp``, where ``x`` or ``y`` is being differentiated or an op
    recorded there was given ``x``, ``x`` takes the result's blocks and its place on the tape, so every name
    bound to ``x`` still sees the new value and the gradient flows through it (``a = y; y += p`` gives ``a``
    the sum, as in NumPy); the ops recorded before keep the old blocks, so their gradients read the values they
    were given. A parameter being differentiated is the exception: its name is rebound to a new array, as
    JAX's arrays always are (a parameter's value is the point the gradient is taken at).

    The standard forbids an in-place operator to change the shape or dtype of
    its left operand: ``x += y`` with a ``y`` that broadcasts ``x`` to a bigger
    shape raises a ``DimensionError``. A ``y`` that promotes ``x`` to another
    dtype of the same kind (``int8 += int16``, ``float32 += float64``) is cast
    back to ``x``'s dtype, as NumPy's and PyTorch's in-place operators do
    (``same_kind``; integers wrap as NumPy's do); one of another kind
    (``int += 1.5``, ``float += complex``) raises ``DTypeError`` (NumPy: a
    TypeError too).
    """

    def op(self: Array, other: Any) -> Any:
        # a NumPy scalar that casts to x's dtype under same_kind acts as a Python scalar: NumPy's in-place rule
        other = positional_ufuncs.scalar_operand(HOOKS.namespace(), other, self, inplace=True)
        if not isinstance(other, (ShardArray, bool, int, float, complex)):
            return NotImplemented
        return _write_back(self, other, lambda: elementwise(fn, self, other, what=name), name)

    op.__name__ = name
    op.__doc__ = f"``{name}`` in place: the result written into the left operand (see ``shardarray.array_api``)."
    return op


def _write_back(x: Array, other: Any, compute: Callable[[], ShardArray], name: str) -> Any:
    """``compute()`` (``x op other``) checked to keep ``x``'s shape and dtype and written into ``x`` (returned),
    under the lock of in-place writes; the result itself where the tape depends on ``x`` or on it (``_inplace``)."""
    with WRITES, leader.keep_first():  # computed in x's layout: the result goes back there (core.leader)
        out = _check_inplace(x, other, compute(), name)
        if in_use(x) or in_use(out):
            if (x._node is not None and x._node.name is None) or set(out.dims) != set(x.dims):
                return out  # a parameter (or dims named otherwise): a new array, x's name rebound (JAX's way)
            # recorded ops were given named views of x (their own references to its blocks): x takes out's
            # blocks and tape node in place, so every name bound to x sees the new value, on the tape
            if out.spec != x.spec:
                out = relayout(transpose(out, x.dims) if out.dims != x.dims else out, x.layout)
            x._layout, x._shards, x.pending = out._layout, out._shards, out.pending
            x._node, x._resolved, x.host_range = out._node, out._resolved, out.host_range
            return x
        swap_in(x, out)
    return x


def _check_inplace(x: ShardArray, other: Any, out: ShardArray, name: str) -> ShardArray:
    """``out`` (``x op other``) in ``x``'s dtype, cast as NumPy's in-place operators cast (``same_kind``:
    ``int32 += int64`` and ``float32 += float64`` keep the left operand's dtype); raise where the operator would
    change ``x``'s shape, or its dtype beyond ``same_kind`` (``int += 1.5``, ``float += complex``)."""
    if out.shape != x.shape:
        raise DimensionError(
            f"{name}: the in-place operator would change the left operand's shape {x.shape} to {out.shape} "
            f"(the right operand has shape {getattr(other, 'shape', ())}); use the binary operator (x = x op y)"
        )
    if out.dtype != x.dtype:
        if np.can_cast(out.dtype, x.dtype, "same_kind"):
            return astype(out, x.dtype)
        raise DTypeError(
            f"{name}: the in-place operator would change the left operand's dtype {x.dtype} to {out.dtype} "
            f"(the right operand is {getattr(other, 'dtype', type(other).__name__)}), which NumPy's same_kind "
            f"rule does not cast back; use the binary operator (x = x op y) or cast the right operand to {x.dtype}"
        )
    return out


#: what ``Array``'s indexing, ``@`` and namespace protocol call, filled in by the modules above this one:
#: ``getitem``/``setitem`` (``_indexing.py``), ``matmul`` (``_linalg.py``), ``namespace`` (the package)
HOOKS = OpTable()


class Array(ShardArray):
    """A ShardArray with the array API standard's positional operators (see the module docstring).

    Example:
        >>> import shardarray.array_api as xp
        >>> with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        ...     a = xp.asarray([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
        ...     b = xp.asarray([10.0, 20.0, 30.0])
        ...     (a + b).shape, a.dims, a.layout
        ((2, 3), ('dim0', 'dim1'), {'dim0': ('row',), 'dim1': ('col',)})
    """

    __slots__ = ()
    __hash__ = ShardArray.__hash__
    positional = True

    # ------------------------------------------------------------- attributes
    @property
    def shape(self) -> tuple[int, ...]:
        """The global shape; assigning one reshapes the array in place, as NumPy's ``x.shape = s``
        (``ndarray_methods.set_shape``)."""
        return self._layout.sizes

    @shape.setter
    def shape(self, value: Any) -> None:
        _methods.set_shape(self, value)

    @property
    def device(self) -> Any:
        """The mesh the array lives on (the standard's device)."""
        return self.mesh

    @property
    @functools.partial(_view_of, text="x.mT")
    def mT(self) -> Array:
        """The last two axes swapped (a local transpose)."""
        if self.ndim < 2:
            raise DimensionError(f"mT needs an array of at least 2 dimensions; got shape {self.shape}")
        d = self.dims
        return wrap(transpose(self, (*d[:-2], d[-1], d[-2])))

    @property
    @functools.partial(_view_of, text="x.T")
    def T(self) -> Array:
        """The transpose of a 2-D array (the standard defines ``T`` for 2 dimensions only)."""
        if self.ndim != 2:
            raise DimensionError(
                f"T is defined for 2-D arrays; got shape {self.shape}. Use mT or permute_dims for more dims"
            )
        return wrap(transpose(self, tuple(reversed(self.dims))))

    def to_device(self, device: Any, /, *, stream: Any = None) -> Array:
        """The array on ``device`` (a Mesh): itself when it is this array's mesh, else a copy there.

        The copy is ``sa.reshard(x, device)``: block to block, with the namespace's default split on the
        target (axis ``k`` over mesh axis ``k``), no host round trip of the whole array, differentiable;
        both meshes in this process, or both MPI meshes over the same processes. ``stream`` is accepted
        and ignored (each device's stream orders its own work).

        Example:
            >>> import shardarray.array_api as xp
            >>> x = xp.asarray(np.arange(4.0), device=sa.Mesh({"a": 2}))
            >>> y = x.to_device(sa.Mesh({"b": 4}))
            >>> y.layout, y.shards[3]
            ({'dim0': ('b',)}, array([3.]))
        """
        if device is self.mesh or device == self.mesh:
            return self
        if not isinstance(device, Mesh):
            raise MeshError(
                f"to_device: device must be a sa.Mesh (the array lives on {self.mesh}); got "
                f"{type(device).__name__} {device!r:.80}"
            )
        return wrap(reshard(self, device))

    def __dlpack_device__(self) -> tuple[int, int]:
        """DLPack's (device type, id) of the local shard: (1, 0) on CPU meshes, (2, gpu) for CuPy shards."""
        shard = self.shards[self.mesh.local_device]
        if hasattr(shard, "__dlpack_device__"):
            return tuple(shard.__dlpack_device__())
        return (1, 0)

    def __dlpack__(
        self, /, *, stream: Any = None, max_version: Any = None, dl_device: Any = None, copy: bool | None = None
    ) -> Any:
        """Export by DLPack: only a whole array lives in one buffer, so the array must not be split.

        A replicated array (no split dim, no pending sum) exports its local shard with no copy
        unless ``copy=True``; a split array raises ``sa.ExportError``, a ``BufferError`` as the standard's DLPack
        protocol says (``np.asarray(x)`` is the explicit gather).
        """
        if self.mesh.axes_size(self._layout.used_axes) > 1 or self.mesh.axes_size(self.pending) > 1:
            raise ExportError(
                f"__dlpack__: the array {self.sizes} is split over mesh axes {self.layout or self.pending}, so no "
                f"single buffer holds it; gather it explicitly with np.asarray(x), or make it replicated first "
                f"with x.relayout({{}})"
            )
        shard = self.shards[self.mesh.local_device]
        if copy:
            shard = shard.copy()
        kwargs: dict[str, Any] = {}
        if stream is not None:
            kwargs["stream"] = stream
        if max_version is not None:
            kwargs["max_version"] = max_version
        if dl_device is not None:
            kwargs["dl_device"] = dl_device
        return shard.__dlpack__(**kwargs)

    # ------------------------------------------------------------- NumPy protocols
    @boundary
    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        """NumPy ufuncs on Arrays with NumPy's meaning: the namespace's function of that name (positional
        broadcasting), ``reduce``/``accumulate``/``outer`` by the namespace's reductions and scans, ``out=`` into
        an Array; ``ufunc.at`` (``np.add.at``, ``np.maximum.at``, ``np.multiply.at``, ...) into an Array in place
        (repeated indices combine every time, in key order); one without a counterpart raises NumPy's TypeError
        (all of it ``numpy_protocol.positional_ufuncs``, one path)."""
        return _wrap_all(positional_ufuncs.array_ufunc(HOOKS.namespace(), ufunc, method, *inputs, **kwargs))

    @boundary
    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        """NumPy functions on Arrays with NumPy's meaning: ``np.X`` is ``xp.X`` (``np.linalg``, ``np.fft`` too) or
        composed from the namespace; others raise TypeError (``numpy_protocol.positional_functions``)."""
        return _wrap_all(positional_functions.array_function(HOOKS.namespace(), func, types, args, kwargs))

    # ------------------------------------------------------------- NumPy's ndarray methods (NumPy's semantics)
    argmax, argmin = _np_method("argmax"), _np_method("argmin")
    max, min = _np_method("max"), _np_method("min")
    sum, mean, prod = _np_method("sum"), _np_method("mean"), _np_method("prod")
    std, var = _np_method("std"), _np_method("var")
    all, any = _np_method("all"), _np_method("any")
    cumsum, cumprod = _np_method("cumsum"), _np_method("cumprod")
    clip, round, repeat, take = _np_method("clip"), _np_method("round"), _np_method("repeat"), _np_method("take")
    nonzero, searchsorted = _np_method("nonzero"), _np_method("searchsorted")
    diagonal, trace = _np_method("diagonal"), _np_method("trace")
    swapaxes = _view_of(_np_method("swapaxes"), "x.swapaxes(...)")
    argsort, dot = _np_method("argsort"), _np_method("dot")
    ravel, squeeze = _view_of(_np_method("ravel"), "x.ravel()"), _view_of(_np_method("squeeze"), "x.squeeze(...)")
    copy, conj, conjugate = _np_method("copy"), _np_method("conj"), _np_method("conjugate")
    choose, argpartition = _np_method("choose"), _np_method("argpartition")
    reshape, transpose = _view_of(_methods.reshape, "x.reshape(...)"), _view_of(_methods.transpose, "x.transpose(...)")
    flatten, astype = _methods.flatten, _methods.astype
    sort, fill, tolist = _methods.sort, _methods.fill, _methods.tolist
    partition, compress, resize = _methods.partition, _methods.compress, _methods.resize
    view, put = _views.view, _views.put
    real, imag = property(_methods.real), property(_methods.imag)

    def __array_namespace__(self, /, *, api_version: str | None = None) -> Any:
        return HOOKS.namespace(api_version)

    # ------------------------------------------------------------- operators
    __add__, __radd__ = _binary(ew.add, "add"), _binary(ew.add, "add", True)
    __sub__, __rsub__ = _binary(ew.subtract, "subtract"), _binary(ew.subtract, "subtract", True)
    __mul__, __rmul__ = _binary(ew.multiply, "multiply"), _binary(ew.multiply, "multiply", True)
    __truediv__, __rtruediv__ = _binary(ew.divide, "divide"), _binary(ew.divide, "divide", True)
    __pow__, __rpow__ = _binary(ew.power, "pow"), _binary(ew.power, "pow", True)
    __floordiv__ = _binary(special.floor_divide, "floor_divide")
    __rfloordiv__ = _binary(special.floor_divide, "floor_divide", True)
    __mod__, __rmod__ = _binary(math_binary.remainder, "remainder"), _binary(math_binary.remainder, "remainder", True)
    __divmod__, __rdivmod__ = _divmod(False), _divmod(True)
    __and__, __rand__ = _binary(logical.bitwise_and, "bitwise_and"), _binary(logical.bitwise_and, "bitwise_and", True)
    __or__, __ror__ = _binary(logical.bitwise_or, "bitwise_or"), _binary(logical.bitwise_or, "bitwise_or", True)
    __xor__, __rxor__ = _binary(logical.bitwise_xor, "bitwise_xor"), _binary(logical.bitwise_xor, "bitwise_xor", True)
    __lshift__ = _binary(logical.bitwise_left_shift, "bitwise_left_shift")
    __rlshift__ = _binary(logical.bitwise_left_shift, "bitwise_left_shift", True)
    __rshift__ = _binary(logical.bitwise_right_shift, "bitwise_right_shift")
    __rrshift__ = _binary(logical.bitwise_right_shift, "bitwise_right_shift", True)
    __eq__ = _binary(ew.equal, "equal")
    __ne__ = _binary(ew.not_equal, "not_equal")
    __lt__, __le__ = _binary(logical.less, "less"), _binary(logical.less_equal, "less_equal")
    __gt__, __ge__ = _binary(logical.greater, "greater"), _binary(logical.greater_equal, "greater_equal")

    __iadd__, __isub__ = _inplace(ew.add, "add"), _inplace(ew.subtract, "subtract")
    __imul__, __itruediv__ = _inplace(ew.multiply, "multiply"), _inplace(ew.divide, "divide")
    __ipow__, __ifloordiv__ = _inplace(ew.power, "pow"), _inplace(special.floor_divide, "floor_divide")
    __imod__, __iand__ = _inplace(math_binary.remainder, "remainder"), _inplace(logical.bitwise_and, "bitwise_and")
    __ior__, __ixor__ = _inplace(logical.bitwise_or, "bitwise_or"), _inplace(logical.bitwise_xor, "bitwise_xor")
    __ilshift__ = _inplace(logical.bitwise_left_shift, "bitwise_left_shift")
    __irshift__ = _inplace(logical.bitwise_right_shift, "bitwise_right_shift")

    def __imatmul__(self, other: Any) -> Any:
        """``x @= y``: ``x @ y`` written into ``x`` in place, as the other in-place operators (``_inplace``)."""
        if not isinstance(other, ShardArray):
            return NotImplemented
        # a named ShardArray is accepted as it is (the namespace's rule)
        return _write_back(self, other, lambda: HOOKS.matmul(self, other), "matmul")

    def __matmul__(self, other: Any) -> Any:
        if isinstance(other, (list, tuple)):
            raise _host_operand("matmul", other)
        return HOOKS.matmul(self, other) if isinstance(other, ShardArray) else NotImplemented

    def __rmatmul__(self, other: Any) -> Any:
        if isinstance(other, (list, tuple)):
            raise _host_operand("matmul", other)
        return HOOKS.matmul(other, self) if isinstance(other, ShardArray) else NotImplemented

    def __contains__(self, value: Any) -> bool:
        """``value in x``: whether any element equals ``value`` (NumPy's ``(x == value).any()``; one allreduce)."""
        return bool(HOOKS.namespace().any(self == value))

    def __neg__(self) -> Array:
        out = short_path.arrays_op(ew.negative, (self,), Array)  # (None: not on the short path)
        return out if out is not None else wrap(ew.negative(self))

    def __pos__(self) -> Array:
        return wrap(math_unary.positive(self))

    def __abs__(self) -> Array:
        out = short_path.arrays_op(ew.abs, (self,), Array)
        return out if out is not None else wrap(ew.abs(self))

    def __invert__(self) -> Array:
        return wrap(logical.bitwise_invert(self))

    # ------------------------------------------------------------- indexing
    def __iter__(self) -> Any:
        """``iter(x)``: ``x[0]``, ``x[1]``, ... along the first axis (NumPy's rows), each a copy tagged as a basic
        index's is (``copies.mark``): ``r0, r1 = x`` then a write into ``r0`` freed unread warns
        ``sa.CopyWriteWarning`` (NumPy's row is a view of ``x``)."""
        rows = super().__iter__()  # (0-d: the typed error, at once)
        return (copies.mark(row, f"x[{i}]", self) for i, row in enumerate(rows))

    @boundary
    def __getitem__(self, key: Any) -> Array:
        """Positional indexing (NumPy rules): ints, slices, Ellipsis, None, integer arrays (0-d ones are ints).

        A basic index's result (ints, slices, ``...``, ``None``) of one or more dims is a copy where NumPy's is a
        view: a write into it does not change ``x``, and one the program never reads warns ``sa.CopyWriteWarning``
        when the copy is freed (``shardarray.copies``: ``x[1:3][0] = 5``). A dict key indexes by name
        (``ShardArray.__getitem__``). New axes get fresh names; a boolean mask over the leading axes (``x[mask]``,
        ``x[mask, ...]``) is ``ops/indexing/mask.py``, and a mask followed by basic indices (``x[mask, :]``,
        ``x[mask, 1]``) is ``x[mask][:, ...]``.
        See ``_indexing.getitem`` for the data movement.
        """
        if isinstance(key, Mapping):
            return wrap(super().__getitem__(key))
        if bool_key(key) is not None:  # a boolean mask over the leading axes (ops/indexing/mask.py)
            return wrap(getitem_mask(self, bool_key(key)))
        lead = bool_lead(key)
        if lead is not None:  # x[mask, 1:3]: x[mask][:, 1:3], as NumPy gives
            masked = wrap(getitem_mask(self, lead[0]))
            return wrap(HOOKS.getitem(masked, (slice(None), *lead[1])))
        out = wrap(HOOKS.getitem(self, key))
        text = basic_key_text(key)
        # NumPy's result of a basic index is a view: a write into this copy that is never read was lost (``copies``)
        return copies.mark(out, text, self) if text is not None else out

    @boundary
    def __setitem__(self, key: Any, value: Any) -> None:
        """``x[key] = value`` in place; an array value broadcasts right-aligned by position."""
        if isinstance(key, Mapping):
            super().__setitem__(key, value)
            return
        if bool_key(key) is not None:  # a boolean mask over the leading axes (ops/indexing/mask.py)
            setitem_mask(self, bool_key(key), value, whole=not (isinstance(key, tuple) and len(key) == 2))
            return
        HOOKS.setitem(self, key, value)


def basic_key_text(key: Any) -> str | None:
    """``key`` as NumPy code (``"x[1:-1, ::2]"``) when it is a basic index (ints, slices, ``...``, ``None``: NumPy's
    result is a view), else None (an integer array or a mask: NumPy's result is a copy too)."""
    items = key if isinstance(key, tuple) else (key,)
    parts = []
    for k in items:
        if isinstance(k, slice):
            parts.append(":".join("" if v is None else str(v) for v in (k.start, k.stop, k.step)).rstrip(":") or ":")
        elif k is Ellipsis:
            parts.append("...")
        elif k is None:
            parts.append("None")
        elif isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_)):
            parts.append(str(int(k)))
        else:
            return None
    return f"x[{', '.join(parts) or '()'}]"
