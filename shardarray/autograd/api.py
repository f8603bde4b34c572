"""``value_and_grad`` and ``grad``: reverse-mode differentiation of a scalar loss."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

from ..array import ShardArray, like_kind
from ..core.relayout import resolve_to, to_axes
from ..core.tape import STATE, Tape, backward
from ..dtypes import is_real_float
from ..errors import DimensionError, DTypeError, MeshError, TapeError
from ..memo_hook import OP_MEMO
from ..ops.creation.basic import ones, zeros_like
from ..ops.manipulation.structure import astype, rename, transpose
from ..tree import tree_flatten, tree_unflatten


def _check_leaf(x: ShardArray, i: int) -> None:
    if x.dtype.kind == "c":  # a complex gradient's convention is the optimizer's business: refuse, name the way
        raise DTypeError(
            f"value_and_grad: parameter {i} {x.sizes} has complex dtype {x.dtype}; parameters must be real "
            f"floating-point arrays. Differentiate its real and imaginary parts as two real parameters "
            f"(z = re + 1j * im inside the function)"
        )
    if not is_real_float(x.dtype):
        raise DTypeError(
            f"value_and_grad: parameter {i} {x.sizes} has dtype {x.dtype}; only floating-point arrays can be "
            "differentiated "
            f"(pass integer inputs such as token ids as later arguments)"
        )


def _finish(g: ShardArray | None, x: ShardArray) -> ShardArray:
    """The gradient of leaf ``x`` in exactly ``x``'s dims, layout and dtype, no pending sum."""
    return _finisher()(g, x)


def _finisher() -> Callable[[ShardArray | None, ShardArray], ShardArray]:
    """``_finish`` with the ops it needs imported (once per call of this function: they import the autograd)."""

    return functools.partial(_finish_with, zeros_like, to_axes, astype, transpose)


def _finish_with(
    zeros_like: Any, to_axes: Any, astype: Any, transpose: Any, g: ShardArray | None, x: ShardArray
) -> ShardArray:
    if g is None:  # x does not reach the loss: zeros, of x's kind as every gradient
        return like_kind(zeros_like(x), x)
    if g.pending or g.spec != x.spec:  # (already in x's dims, sizes and layout, resolved: nothing to move)
        # sa.relayout(g, x.layout) without re-validating x's own layout: resolve into it, then move
        g = to_axes(transpose(g, x.dims), x.spec.axes, False)
    g = g if g.dtype == x.dtype else astype(g, x.dtype)
    return like_kind(g, x)  # positional (shardarray.array_api's Array) for a positional parameter


def _record(what: str, fn: Callable[..., Any], params: Any, args: Any, kwargs: Any) -> tuple[Tape, list, Any]:
    """Run ``fn(params, *args)`` on a new tape: ``(tape, traced leaves, result)``."""
    if STATE.tape is not None:
        raise TapeError(
            f"{what} cannot run inside value_and_grad or vjp (higher-order gradients are not supported); "
            f"call it outside them"
        )
    leaves, treedef = tree_flatten(params)
    for i, x in enumerate(leaves):
        _check_leaf(x, i)
    tape = Tape()
    STATE.tape = tape
    tape.owner = threading.get_ident()
    try:
        traced = [tape.leaf(x) for x in leaves]
        return tape, traced, fn(tree_unflatten(treedef, traced), *args, **kwargs)
    finally:
        STATE.tape = None
        tape.owner = None


def _pull(tape: Tape, traced: list, params: Any, out: ShardArray, cotangent: ShardArray) -> Any:
    """The gradients of ``params`` (a tree like it) for cotangent ``cotangent`` of ``out``."""
    leaves, treedef = tree_flatten(params)
    found = backward(tape, out, cotangent) if tape.traced(out) else {}
    finish = _finisher()
    memo = OP_MEMO.get()
    if memo is not None:  # a layout search (plan.memo): each gradient's finish is one memoised op
        finish = functools.partial(_finish_memo, memo, finish)
    return tree_unflatten(treedef, [finish(found.get(id(t._node)), x) for t, x in zip(traced, leaves)])


def _finish_memo(memo: Any, finish: Any, g: ShardArray | None, x: ShardArray) -> ShardArray:
    return memo.call("grad_finish", finish, (g, x), {})


def value_and_grad(fn: Callable[..., Any], has_aux: bool = False) -> Callable[..., Any]:
    """Make a function returning ``(fn(params, *args), grad of fn with respect to params)``.

    ``fn`` must return a 0-d floating-point ShardArray (a scalar loss), or
    ``(loss, aux)`` with ``has_aux=True``. ``params`` is a ShardArray or a dict,
    list or tuple tree of them; the gradients come back in the same tree, each
    in exactly its parameter's dims, layout and dtype, with no pending sum.
    Collectives of the backward pass follow from the layouts (the VJP of an
    einsum is an einsum; of a relayout, the inverse relayout).

    Parameters are real floating-point arrays: complex ones raise ``DTypeError``
    (pass the real and imaginary parts as two real parameters), and so do
    integer and bool ones, as ``jax.grad`` refuses them (pass integer inputs
    such as token ids as later arguments). Complex values inside ``fn``
    follow JAX's convention: a complex value's cotangent is ``dL/dx - i dL/dy``
    for ``z = x + iy``, so the gradients of the real parts that reach the
    parameters are the plain partial derivatives. At ties the cotangent is
    shared as in JAX (``max``/``min`` reductions: equally among the maxima;
    ``maximum``/``minimum``: half to each side; ``sort``: along the stable
    order, descending too; ``top_k``: the lower index first; ``clip``: all to
    ``x`` at its bounds, as PyTorch's ``clamp``). Where a function has no
    derivative, ``abs`` and ``sign`` take 0 at 0 and a real ``std`` 0 where the
    spread is 0 (PyTorch's choices; JAX's real ``abs`` takes 1), while
    ``sqrt`` takes ``inf`` at 0 and the 2-norm of a zero vector NaN (JAX's).

    Inside ``fn``, an in-place operator (``x += v`` on a positional array) is
    recorded like ``x = x + v``, every name bound to ``x`` seeing the new
    value as in NumPy; ``x[idx] = v`` (NumPy's ``out=`` and ``np.copyto``
    too) into an array the gradient depends on, or of a traced ``v`` into a
    constant, raises ``TapeError`` (as JAX's immutable arrays refuse it):
    build the new array with ``where``.

    Args:
        fn: ``fn(params, *args) -> loss`` (or ``(loss, aux)``).
        has_aux: ``fn`` returns ``(loss, aux)``; the result is then ``((loss, aux), grads)``.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> w = sa.asarray(np.array([1.0, 2.0, 3.0, 4.0]), dims=("io",), mesh=mesh, layout={"io": "col"})
        >>> loss, g = sa.value_and_grad(lambda w: (w * w).sum())(w)
        >>> float(loss), g.numpy(), g.layout
        (30.0, array([2., 4., 6., 8.]), {'io': ('col',)})
    """

    _check_fn(fn, "value_and_grad")

    @functools.wraps(fn)
    def run(params: Any, *args: Any, **kwargs: Any) -> Any:
        tape, traced, result = _record("value_and_grad", fn, params, args, kwargs)
        try:
            loss, aux = _split_result(result, has_aux)
            grads = _pull(tape, traced, params, loss, _seed(loss))
        finally:
            tape.release()
        loss = like_kind(resolve_to(loss), loss)  # a positional loss stays positional
        return ((loss, aux), grads) if has_aux else (loss, grads)

    return run


def grad(fn: Callable[..., Any], has_aux: bool = False) -> Callable[..., Any]:
    """Like ``value_and_grad`` but returns only the gradients (and ``aux`` with ``has_aux``).

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> w = sa.asarray(np.array([1.0, -1.0]), dims=("io",), mesh=mesh, layout={"io": "row"})
        >>> sa.grad(lambda w: (w ** 3).sum())(w).numpy()
        array([3., 3.])
    """
    _check_fn(fn, "grad")
    vg = value_and_grad(fn, has_aux)

    @functools.wraps(fn)
    def run(params: Any, *args: Any, **kwargs: Any) -> Any:
        (value, grads) = vg(params, *args, **kwargs)
        return (grads, value[1]) if has_aux else grads

    return run


def vjp(
    fn: Callable[..., Any], params: Any, *args: Any, **kwargs: Any
) -> tuple[ShardArray, Callable[[ShardArray], Any]]:
    """``fn(params, *args)`` and a function that pulls a cotangent of it back to ``params`` (as ``jax.vjp``).

    ``fn`` may return any floating-point ShardArray (not only a scalar). The
    returned ``pullback(cotangent)`` takes an array with the output's dims
    (any layout; for a positional output, a positional array of its shape,
    matched by position) and returns the gradients in ``params``' tree, dims
    and layouts. It can be called once: the recorded ops are released after it.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.ones(mesh, {"m": 4, "k": 2}, layout={"m": "row", "k": "col"})
        >>> w = sa.ones(mesh, {"k": 2, "n": 4}, layout={"k": "row", "n": "col"})
        >>> y, pullback = sa.vjp(lambda p: sa.einsum("m k, k n -> m n", p[0], p[1]), (x, w))
        >>> dx, dw = pullback(sa.ones(mesh, {"m": 4, "n": 4}))
        >>> dx.numpy()[0].tolist(), dw.layout
        ([4.0, 4.0], {'k': ('row',), 'n': ('col',)})
    """
    _check_fn(fn, "vjp")
    tape, traced, out = _record("vjp", fn, params, args, kwargs)
    if not isinstance(out, ShardArray) or not is_real_float(out.dtype):
        tape.release()
        got = f"a {type(out).__name__}" if not isinstance(out, ShardArray) else f"a {out.dtype} array {out.sizes}"
        raise DTypeError(
            f"vjp: fn must return one floating-point ShardArray; got {got}. Return a single array "
            f"(call sa.vjp once per output)"
        )

    called = False  # (not ``tape.nodes``: a tree without leaves records nothing, yet its pullback may be called)

    def pullback(cotangent: ShardArray) -> Any:
        nonlocal called
        if called:
            raise TapeError(
                "vjp: the pullback was already called; it can be called once (its recorded ops are released). "
                "Call sa.vjp again for another cotangent"
            )
        cotangent = _aligned(cotangent, out)
        if cotangent.mesh != out.mesh:
            raise MeshError(f"vjp: the cotangent lives on {cotangent.mesh} but the output on {out.mesh}; make it there")
        if not is_real_float(cotangent.dtype):
            raise DTypeError(
                f"vjp: the cotangent {cotangent.sizes} has dtype {cotangent.dtype}; it must be floating point "
                f"(.astype({str(out.dtype)!r}))"
            )
        called = True
        try:
            return _pull(tape, traced, params, out, cotangent)
        finally:
            tape.release()

    return out, pullback


def _aligned(cotangent: Any, out: ShardArray) -> ShardArray:
    """``cotangent`` in ``out``'s dim names: matched by position when both are positional (their dim names are
    internal), by name otherwise; a typed error when the shapes or dims differ."""
    if isinstance(cotangent, ShardArray) and cotangent.positional and out.positional:
        if cotangent.shape != out.shape:
            raise DimensionError(
                f"vjp: the cotangent must have the output's shape {out.shape}; got shape {cotangent.shape}"
            )
        return rename.__wrapped__(cotangent, dict(zip(cotangent.dims, out.dims)))
    if not isinstance(cotangent, ShardArray) or sorted(cotangent.sizes.items()) != sorted(out.sizes.items()):
        raise DimensionError(
            f"vjp: the cotangent must be a ShardArray with the output's dims and sizes {out.sizes} "
            f"(any order and layout); got {getattr(cotangent, 'sizes', type(cotangent).__name__)}"
        )
    return cotangent


def _check_fn(fn: Any, what: str) -> None:
    if not callable(fn):
        raise DTypeError(
            f"sa.{what} takes the function to differentiate, fn(params, *args) -> loss; got {type(fn).__name__} "
            f"{fn!r:.60}. Pass the function itself, e.g. sa.{what}(loss_fn)"
        )


def _split_result(result: Any, has_aux: bool) -> tuple[ShardArray, Any]:
    if has_aux:
        if not (isinstance(result, tuple) and len(result) == 2):
            raise DTypeError(f"value_and_grad(has_aux=True): fn must return (loss, aux); got {type(result).__name__}")
        loss, aux = result
    else:
        loss, aux = result, None
    if not isinstance(loss, ShardArray):
        raise DTypeError(
            f"value_and_grad: fn must return a 0-d ShardArray (the loss); got {type(loss).__name__}"
            + ("" if has_aux else " (use has_aux=True to return (loss, aux))")
        )
    if loss.dims:
        raise DimensionError(
            f"value_and_grad: the loss must be a scalar (0-d) ShardArray; got dims {loss.sizes}. "
            f"Reduce it first, e.g. loss.mean() or loss.sum()"
        )
    if not is_real_float(loss.dtype):
        raise DTypeError(f"value_and_grad: the loss has dtype {loss.dtype}; it must be floating point")
    return loss, aux


def _seed(loss: ShardArray) -> ShardArray:

    return ones(loss.mesh, {}, dtype=loss.dtype, layout={})


__all__ = ["grad", "value_and_grad", "vjp"]
