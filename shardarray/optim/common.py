"""Shared pieces of the optimizers: argument checks, state checks, moments and the update arithmetic."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..array import ShardArray, like_kind
from ..core.relayout import to_axes
from ..dtypes import accumulation_dtype, is_complex, is_real_float
from ..errors import ArgumentError, DimensionError, DTypeError, MeshError
from ..ops.creation.basic import full
from ..ops.manipulation.structure import rename, transpose
from ..tree import tree_flatten, tree_leaves_like, tree_paths

LR = float | Callable[[int], float]
_FIX = "make the state from these params with state = opt.init(params)"
_GRAD_FIX = "pass the gradients of these params, e.g. from sa.value_and_grad(loss)(params, ...)"


def moment_dtype(dtype: Any) -> np.dtype:
    """The dtype of optimizer moments and update arithmetic for parameters of ``dtype``.

    Floats narrower than float32 (float16, bfloat16) get float32; others keep their dtype.

    Example:
        >>> sa.optim.moment_dtype("float16"), sa.optim.moment_dtype("float64")
        (dtype('float32'), dtype('float64'))
    """
    dt = np.dtype(dtype)
    return accumulation_dtype(dt) or dt


def _lr(lr: LR, step: int) -> float:
    if not callable(lr):
        return float(lr)
    value = lr(step)
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise DTypeError(f"the lr schedule returned {value!r} at step {step}; it must return a number >= 0") from None
    if not math.isfinite(out) or out < 0:
        raise ArgumentError(
            f"the lr schedule returned {out!r} at step {step}; it must return a finite number >= 0 "
            f"(check the schedule's arguments, e.g. cosine_schedule(peak, total_steps))"
        )
    return out


def _number(owner: str, name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise DTypeError(f"{owner}({name}={value!r}): {name} must be a number")
    return float(value)


def _in_range(owner: str, name: str, value: Any, lo: float, hi: float | None, legal: str) -> None:
    """Raise unless ``lo <= value`` (and ``value < hi``); ``legal`` spells the range for the message."""
    v = _number(owner, name, value)
    if not (math.isfinite(v) and v >= lo and (hi is None or v < hi)):
        raise ArgumentError(f"{owner}({name}={value!r}): {name} must be in {legal}")


def _check_lr(owner: str, lr: Any) -> None:
    if callable(lr):
        return
    if isinstance(lr, bool) or not isinstance(lr, (int, float, np.integer, np.floating)):
        raise DTypeError(f"{owner}(lr={lr!r}): lr must be a number >= 0 or a callable schedule step -> lr")
    _in_range(owner, "lr", lr, 0.0, None, "[0, inf) (lr >= 0, finite), or a callable schedule step -> lr")


def _state(state: Any, keys: tuple[str, ...], owner: str) -> None:
    """The state is a dict with ``keys`` (the optimizer's own), and an integer step."""
    if not isinstance(state, dict):
        raise DTypeError(f"{owner}.update: state is {type(state).__name__}, not an optimizer state dict; {_FIX}")
    missing = [k for k in keys if k not in state]
    if missing:
        raise DTypeError(
            f"{owner}.update: state has keys {sorted(state)} but {owner}'s state needs {list(keys)} "
            f"(missing {missing[0]!r}): is it another optimizer's state? {_FIX}"
        )
    step = state["step"]
    if isinstance(step, ShardArray):  # counted on the device (sa.graphed): a 0-d integer array
        if step.dims or np.dtype(step.dtype).kind not in "iu":
            raise DTypeError(
                f"{owner}.update: state['step'] is an array {step.sizes} of {step.dtype}; a step counted on the "
                f"device is a 0-d integer array (sa.asarray(0, mesh=mesh)); {_FIX}"
            )
        return
    if isinstance(step, bool) or not isinstance(step, (int, np.integer)) or step < 0:
        raise DTypeError(f"{owner}.update: state['step'] is {step!r}, not an integer >= 0; {_FIX}")


def next_step(step: Any, lr: LR, owner: str) -> tuple[Any, Any]:
    """The step after ``step`` and the learning rate at it.

    ``step`` is an int, or a 0-d integer array on the devices (as ``sa.graphed`` makes it, so a CUDA graph's
    replays count on): its successor is computed there, and so is the rate of a schedule, which must then
    take that array and return a 0-d float array (``cosine_schedule`` does); a constant rate stays a number.
    A schedule that needs a Python int (it would read the step to the host, or a graph would freeze its value
    at the captured step) is refused.
    """
    if not isinstance(step, ShardArray):
        return step + 1, _lr(lr, step + 1)
    step = step + 1
    if not callable(lr):
        return step, float(lr)
    value: Any
    try:
        value = lr(step)
    except Exception as e:  # a host-only schedule (math.cos of an array, int(step), ...)
        value = e
    if not (isinstance(value, ShardArray) and not value.dims and is_real_float(value.dtype)):
        raise ArgumentError(
            f"{owner}: state['step'] is counted on the device (a 0-d array, as under sa.graphed), but the lr "
            f"schedule did not return a 0-d float array for it (got {value!r:.80}): write it with array ops "
            f"(sa.cos, sa.where, ... as sa.optim.cosine_schedule is), pass a constant lr, or keep the step a "
            f"Python int and run the update eagerly"
        )
    return step, value


def float_params(params: Any, what: str) -> tuple[list[Any], Any]:
    """The leaves and structure of ``params``, refusing any that is not a floating-point ShardArray, real or
    complex: an update of an integer or bool parameter would be truncated to nothing without a word."""
    p, treedef = tree_flatten(params)
    for path, x in zip(tree_paths(params, ""), p):
        if isinstance(x, ShardArray) and not (is_real_float(x.dtype) or is_complex(x.dtype)):
            raise DTypeError(
                f"{what}: params{path} has dtype {x.dtype}; gradient updates need floating-point parameters (an "
                f"integer update would be truncated). Keep it out of the optimized tree, or cast it: "
                f"x.astype('float32')"
            )
    return p, treedef


def _check(
    params: Any, grads: Any, what: str = "optimizer update"
) -> tuple[list[ShardArray], list[ShardArray], list[str], Any]:
    """Leaves of params and grads paired by key path (and inside, by ``paired``), their paths and the params'
    structure."""
    p, treedef = float_params(params, what)
    paths = tree_paths(params, "")
    g = tree_leaves_like(
        params,
        grads,
        "grads",
        "params",
        hint=_GRAD_FIX[0].upper() + _GRAD_FIX[1:],
    )
    out = []
    for path, a, b in zip(paths, p, g):
        b = paired(b, a, f"grads{path}", path, _GRAD_FIX)
        _float_like(b, a, f"grads{path}", f"params{path}", f"{_GRAD_FIX}, or cast it: g.astype(params_dtype)")
        out.append(in_layout_of(b, a, f"grads{path}", path))
    return p, out, paths, treedef


def _moments(params: Any, p: list[ShardArray], paths: list[str], tree: Any, name: str) -> list[ShardArray]:
    """The moment leaves ``state[name]``, paired with the params by key path (and inside, by ``paired``) and
    checked against them."""
    what = f"state[{name!r}]"
    leaves = tree_leaves_like(params, tree, what, "params", hint=_FIX[0].upper() + _FIX[1:])
    out = []
    for path, x, m in zip(paths, p, leaves):
        m = paired(m, x, f"{what}{path}", path, f"the state belongs to other params; {_FIX}")
        _float_like(m, x, f"{what}{path}", f"params{path}", f"the state is damaged or belongs to other params; {_FIX}")
        out.append(in_layout_of(m, x, f"{what}{path}", path))
    return out


def _real_float(a: ShardArray, name: str, param: str, fix: str) -> None:
    """``DTypeError`` unless ``a`` (a gradient, moment or master copy of ``param``) is real floating point: an
    update from a complex one would drop its imaginary part (NumPy's ComplexWarning at best), and an integer or
    bool one is no gradient or state the optimizers ever make."""
    if not is_real_float(a.dtype):
        raise DTypeError(f"{name} has dtype {a.dtype}, but {param}'s update needs a real floating-point one; {fix}")


def _float_like(a: ShardArray, x: ShardArray, name: str, param: str, fix: str) -> None:
    """``DTypeError`` unless ``a`` (a gradient or moment of parameter ``x``) is floating point of ``x``'s kind:
    complex for a complex parameter (a real one would leave its imaginary part unchanged without a word: a
    gradient of the real part alone?), real otherwise (``_real_float``)."""
    if not is_complex(x.dtype):
        _real_float(a, name, param, fix)
    elif not is_complex(a.dtype):
        what = (
            "the gradient of a complex parameter is dL/dRe + 1j * dL/dIm, of its real and imaginary parts "
            "(PyTorch's z.grad): g_re + 1j * g_im from sa.value_and_grad of the two parts"
            if name.startswith("grads")
            else fix
        )
        raise DTypeError(
            f"{name} has dtype {a.dtype}, but {param} is {x.dtype} and its update needs a complex one; {what}"
        )


def real_dtype(dtype: Any) -> np.dtype:
    """The real dtype of ``dtype``'s parts: float32 for complex64, float64 for complex128; a real dtype itself."""
    dt = np.dtype(dtype)
    return np.finfo(dt).dtype if dt.kind == "c" else dt


def componentwise(xp: Any, fn: Callable[..., Any], *args: Any) -> Any:
    """``fn`` (an update of real blocks) applied to the real parts and to the imaginary parts of the complex
    blocks among ``args`` separately, combined into a complex block: a complex parameter updated as two real ones
    (PyTorch's optimizers on ``torch.view_as_real``); ``fn(*args)`` when none is complex. Real arrays and scalars
    among ``args`` go to both calls as they are."""
    if not any(getattr(a, "dtype", None) is not None and a.dtype.kind == "c" for a in args):
        return fn(*args)
    re = fn(*(a.real if getattr(a, "dtype", None) is not None and a.dtype.kind == "c" else a for a in args))
    im = fn(*(a.imag if getattr(a, "dtype", None) is not None and a.dtype.kind == "c" else a for a in args))
    out = xp.empty(re.shape, dtype=np.result_type(re.dtype, np.complex64))
    out.real = re
    out.imag = im
    return out


def paired(a: ShardArray, x: ShardArray, name: str, path: str, fix: str) -> ShardArray:
    """``a`` (a gradient, moment or master copy of parameter ``x``) with ``x``'s dims, in ``x``'s dim order.

    Positional arrays (``shardarray.array_api``'s) pair by axis, as NumPy's and optax's updates do: when either
    is positional and the shapes are equal, ``a`` takes ``x``'s dim names (a positional array's dim names are
    internal: ``g = w.T.T`` or ``xp.reshape(g, w.shape)`` name them otherwise). Named arrays pair by dim name:
    ``a`` with ``x``'s dims in another order is transposed to ``x``'s order (local, no communication).

    Raises:
        DimensionError: the shapes (positional) or the ``{dim: size}`` (named) differ; the message names both.
    """
    if a.dims == x.dims and a.shape == x.shape:
        return a
    if type(a) is not ShardArray or type(x) is not ShardArray:  # positional: by axis
        if a.shape == x.shape:
            return like_kind(rename(a, dict(zip(a.dims, x.dims))), a)
        raise DimensionError(f"{name} has shape {a.shape} but params{path} has shape {x.shape}: {fix}")
    if a.sizes == x.sizes:  # the same dims in another order
        return like_kind(transpose(a, x.dims), a)
    raise DimensionError(f"{name} has sizes {a.sizes} but params{path} has {x.sizes}: {fix}")


def in_layout_of(a: ShardArray, x: ShardArray, name: str, path: str) -> ShardArray:
    """``a`` (a gradient, moment or master copy of parameter ``x``) in ``x``'s layout, resolved, of its own kind.

    The update is then local to each of ``x``'s blocks and the new parameter and state keep ``x``'s layout (an
    elementwise op would take a split of ``a`` that ``x`` lacks). Arrays already in it (as ``sa.value_and_grad``
    and ``opt.init`` make them) are returned as they are; others are relaid out (a relayout's communication).

    Raises:
        MeshError: ``a`` lives on another mesh than ``x``.
    """
    mesh, spec = a.mesh, a._layout  # (identity first: the training step's common case costs no call)
    if mesh is not x.mesh and mesh != x.mesh:
        raise MeshError(
            f"{name} lives on {a.mesh} but params{path} on {x.mesh}; move it first with "
            f"sa.reshard(a, params_mesh, layout)"
        )
    if (spec is x._layout or spec == x._layout) and not a.pending:
        return a
    return like_kind(to_axes(a, x._layout.axes, False), a)


def _zeros_for(x: ShardArray, dtype: np.dtype) -> ShardArray:
    """A zero moment for parameter ``x``: its sizes, layout and kind (positional or named), of ``dtype`` (the dtype
    of its update arithmetic, ``master.working_dtype``)."""
    return like_kind(full(x.mesh, x.sizes, 0, dtype, x.layout), x)


def _axpby(x: Any, a: float, y: Any, b: float) -> Any:
    """``a x + b y`` with one temporary."""
    out = x * a
    out += y * b if b != 1.0 else y
    return out


def _up(xp: Any, a: Any, dtype: np.dtype) -> Any:
    """``a`` in the arithmetic dtype (a no-op when it already has it)."""
    return a if a.dtype == dtype else a.astype(dtype)
