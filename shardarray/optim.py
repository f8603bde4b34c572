"""Functional optimizers: ``state = opt.init(params)``; ``params, state = opt.update(params, grads, state)``.

The state (moments) lives in the parameters' layouts, so an update is local
to each shard: no communication. ``lr`` is a number or a schedule
``step -> lr`` (the step counts from 1). Params, grads and state are paired
by key path (``sa.tree``), so a dict in another key order updates each
parameter with its own gradient. Moments and update arithmetic of a
low-precision parameter (a float narrower than float32: float16, bfloat16)
are float32; the new parameter is rounded once to its dtype.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .array import ShardArray
from .backend import cuda_kernels
from .dtypes import accumulation_dtype
from .errors import ArgumentError, DimensionError, DTypeError
from .ops import fused
from .ops.creation import full
from .ops.elementwise import apply
from .tree import tree_flatten, tree_leaves_like, tree_paths, tree_unflatten

LR = float | Callable[[int], float]
_FIX = "make the state from these params with state = opt.init(params)"


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
    if isinstance(step, bool) or not isinstance(step, (int, np.integer)) or step < 0:
        raise DTypeError(f"{owner}.update: state['step'] is {step!r}, not an integer >= 0; {_FIX}")


def _check(params: Any, grads: Any) -> tuple[list[ShardArray], list[ShardArray], list[str], Any]:
    """Leaves of params and grads paired by key path, their paths and the params' structure."""
    p, treedef = tree_flatten(params)
    paths = tree_paths(params, "")
    g = tree_leaves_like(params, grads, "grads", "params",
                         hint="Pass the gradients of these params, e.g. from sa.value_and_grad(loss)(params, ...)")
    for path, a, b in zip(paths, p, g):
        if a.dims != b.dims or a.shape != b.shape:
            raise DimensionError(
                f"grads{path} has sizes {b.sizes} but params{path} has {a.sizes}: pass the gradients of these "
                f"params, e.g. from sa.value_and_grad(loss)(params, ...)"
            )
    return p, g, paths, treedef


def _moments(params: Any, p: list[ShardArray], paths: list[str], tree: Any, name: str) -> list[ShardArray]:
    """The moment leaves ``state[name]``, paired with the params by key path and checked against them."""
    what = f"state[{name!r}]"
    out = tree_leaves_like(params, tree, what, "params", hint=_FIX[0].upper() + _FIX[1:])
    for path, x, m in zip(paths, p, out):
        if m.dims != x.dims or m.shape != x.shape:
            raise DimensionError(
                f"{what}{path} has sizes {m.sizes} but params{path} has {x.sizes}: "
                f"the state belongs to other params; {_FIX}"
            )
    return out


def _zeros_for(x: ShardArray) -> ShardArray:
    """A zero moment for parameter ``x``: its sizes and layout, the moment dtype."""
    return full(x.mesh, x.sizes, 0, moment_dtype(x.dtype), x.layout)


def _axpby(x: Any, a: float, y: Any, b: float) -> Any:
    """``a x + b y`` with one temporary."""
    out = x * a
    out += y * b if b != 1.0 else y
    return out


def _up(xp: Any, a: Any, dtype: np.dtype) -> Any:
    """``a`` in the arithmetic dtype (a no-op when it already has it)."""
    return a if a.dtype == dtype else a.astype(dtype)


@dataclass(frozen=True)
class SGD:
    """Stochastic gradient descent with optional momentum and decoupled weight decay.

    Raises:
        ArgumentError: at construction, ``lr`` < 0, ``momentum`` outside [0, 1) or
            ``weight_decay`` < 0 (the message names the parameter and the range).

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> w = sa.ones(mesh, {"io": 4}, dtype="float64", layout={"io": "col"})
        >>> opt = sa.optim.SGD(lr=0.5)
        >>> state = opt.init(w)
        >>> w, state = opt.update(w, w * 2.0, state)
        >>> w.numpy(), w.layout
        (array([0., 0., 0., 0.]), {'io': ('col',)})
    """

    lr: LR = 1e-2
    momentum: float = 0.0
    weight_decay: float = 0.0

    def __post_init__(self) -> None:
        _check_lr("SGD", self.lr)
        _in_range("SGD", "momentum", self.momentum, 0.0, 1.0, "[0, 1)")
        _in_range("SGD", "weight_decay", self.weight_decay, 0.0, None, "[0, inf) (weight_decay >= 0, finite)")

    def init(self, params: Any) -> dict[str, Any]:
        p, treedef = tree_flatten(params)
        velocity = tree_unflatten(treedef, [_zeros_for(x) for x in p]) if self.momentum else None
        return {"step": 0, "velocity": velocity}

    def update(self, params: Any, grads: Any, state: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        """New params and state; params, grads and the velocity are paired by key path."""
        _state(state, ("step", "velocity"), "SGD")
        p, g, paths, treedef = _check(params, grads)
        step = state["step"] + 1
        lr, mu, wd = _lr(self.lr, step), self.momentum, self.weight_decay
        if mu and state["velocity"] is None:
            raise DTypeError(f"SGD.update: state['velocity'] is None (a state of SGD without momentum); {_FIX}")
        vel = _moments(params, p, paths, state["velocity"], "velocity") if mu else [None] * len(p)
        new_p, new_v = [], []
        for x, dx, v in zip(p, g, vel):
            ct = moment_dtype(x.dtype)
            if mu:
                v = apply("sgd_momentum", lambda xp, v, d: _axpby(_up(xp, v, ct), mu, _up(xp, d, ct), 1.0), (v, dx))
                dx = v
                new_v.append(v)
            new_p.append(apply(
                "sgd", lambda xp, a, d: _axpby(_up(xp, a, ct), 1.0 - lr * wd, _up(xp, d, ct), -lr), (x, dx)
            ).astype(x.dtype))
        velocity = tree_unflatten(treedef, new_v) if mu else None
        return tree_unflatten(treedef, new_p), {"step": step, "velocity": velocity}


@dataclass(frozen=True)
class Adam:
    """Adam (Kingma & Ba) with decoupled weight decay (AdamW, Loshchilov & Hutter).

    ``p -= lr * (m_hat / (sqrt(v_hat) + eps) + weight_decay * p)``, with bias-corrected moments.
    For parameters narrower than float32 (float16, bfloat16) the moments ``m``,
    ``v`` and the arithmetic are float32 (``eps`` = 1e-8 would round to 0 and
    ``v`` underflow in float16); the new parameter is rounded once.

    Raises:
        ArgumentError: at construction, ``b1`` or ``b2`` outside [0, 1),
            ``eps`` <= 0, ``lr`` < 0 or ``weight_decay`` < 0 (the message names
            the parameter, its value and the range); at ``update``, a schedule
            that returns a non-finite or negative lr.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> w = sa.ones(mesh, {"io": 4}, dtype="float64", layout={"io": "col"})
        >>> opt = sa.optim.Adam(lr=0.1)
        >>> state = opt.init(w)
        >>> w, state = opt.update(w, w * 3.0, state)   # the first step moves by lr
        >>> np.round(w.numpy(), 6), state["m"].layout
        (array([0.9, 0.9, 0.9, 0.9]), {'io': ('col',)})
    """

    lr: LR = 1e-3
    b1: float = 0.9
    b2: float = 0.999
    eps: float = 1e-8
    weight_decay: float = 0.0

    def __post_init__(self) -> None:
        _check_lr("Adam", self.lr)
        _in_range("Adam", "b1", self.b1, 0.0, 1.0, "[0, 1)")
        _in_range("Adam", "b2", self.b2, 0.0, 1.0, "[0, 1)")
        eps = _number("Adam", "eps", self.eps)
        if not (math.isfinite(eps) and eps > 0):
            raise ArgumentError(f"Adam(eps={self.eps!r}): eps must be > 0 and finite (e.g. 1e-8)")
        _in_range("Adam", "weight_decay", self.weight_decay, 0.0, None, "[0, inf) (weight_decay >= 0, finite)")

    def init(self, params: Any) -> dict[str, Any]:
        p, treedef = tree_flatten(params)
        return {
            "step": 0,
            "m": tree_unflatten(treedef, [_zeros_for(x) for x in p]),
            "v": tree_unflatten(treedef, [_zeros_for(x) for x in p]),
        }

    def update(self, params: Any, grads: Any, state: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        """New params and state; params, grads and the moments are paired by key path."""
        _state(state, ("step", "m", "v"), "Adam")
        p, g, paths, treedef = _check(params, grads)
        step = state["step"] + 1
        lr, b1, b2, eps, wd = _lr(self.lr, step), self.b1, self.b2, self.eps, self.weight_decay
        c1, c2 = 1.0 - b1**step, 1.0 - b2**step
        step_size = lr / c1
        m_all = _moments(params, p, paths, state["m"], "m")
        v_all = _moments(params, p, paths, state["v"], "v")
        new_p, new_m, new_v = [], [], []
        for x, dx, m, v in zip(p, g, m_all, v_all):
            if _fused(x, m, v):  # one kernel per block (kernels/adam.cu)
                outs = fused.map_rows_multi(
                    x.resolve(), 3, lambda xp, a, d, m, v: cuda_kernels.adam(
                        xp, a, d, m, v, b1, b2, step_size, c2, eps, 1.0 - lr * wd),
                    fused.like(dx, x), m, v,
                )
                for out, shards, dt in zip((new_p, new_m, new_v), outs, (x.dtype, m.dtype, v.dtype)):
                    out.append(ShardArray(x.mesh, x.spec, dt, shards))
                continue
            ct = moment_dtype(x.dtype)
            m = apply("adam_m", lambda xp, m, d: _axpby(_up(xp, m, ct), b1, _up(xp, d, ct), 1.0 - b1), (m, dx))

            def v_fn(xp: Any, v: Any, d: Any) -> Any:
                d = _up(xp, d, ct)
                return _axpby(_up(xp, v, ct), b2, d * d, 1.0 - b2)

            v = apply("adam_v", v_fn, (v, dx))

            def step_fn(xp: Any, a: Any, m: Any, v: Any) -> Any:
                den = xp.sqrt(v * (1.0 / c2))
                den += eps
                upd = m * -step_size
                upd /= den
                a = _up(xp, a, ct)
                return _axpby(a, 1.0 - lr * wd, upd, 1.0) if wd else a + upd

            new_p.append(apply("adam", step_fn, (x, m, v)).astype(x.dtype))
            new_m.append(m)
            new_v.append(v)
        state = {"step": step, "m": tree_unflatten(treedef, new_m), "v": tree_unflatten(treedef, new_v)}
        return tree_unflatten(treedef, new_p), state


def _fused(x: ShardArray, m: ShardArray, v: ShardArray) -> bool:
    """Adam's update as one kernel: CuPy shards, moments laid out like the parameter and of its moment dtype."""
    return fused.kernels_for(x, "adam") and all(
        s.spec == x.spec and s.dtype == moment_dtype(x.dtype) and not s.pending for s in (m, v)
    )


def cosine_schedule(peak: float, total_steps: int, warmup: int = 0, final: float = 0.0) -> Callable[[int], float]:
    """Linear warm-up to ``peak`` over ``warmup`` steps, then cosine decay to ``final`` at ``total_steps``.

    Raises:
        ArgumentError: ``peak`` or ``final`` negative or not finite,
            ``total_steps`` < 1 or ``warmup`` < 0.

    Example:
        >>> lr = sa.optim.cosine_schedule(1e-3, 100, warmup=10)
        >>> lr(5), lr(10), round(lr(100), 12)
        (0.0005, 0.001, 0.0)
    """
    _in_range("cosine_schedule", "peak", peak, 0.0, None, "[0, inf) (peak >= 0, finite)")
    _in_range("cosine_schedule", "final", final, 0.0, None, "[0, inf) (final >= 0, finite)")
    for name, value, least in (("total_steps", total_steps, 1), ("warmup", warmup, 0)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least:
            raise ArgumentError(f"cosine_schedule({name}={value!r}): {name} must be an integer >= {least}")

    def lr(step: int) -> float:
        if warmup and step < warmup:
            return peak * step / warmup
        t = min(1.0, (step - warmup) / max(1, total_steps - warmup))
        return final + 0.5 * (peak - final) * (1.0 + math.cos(math.pi * t))

    return lr


__all__ = ["SGD", "Adam", "cosine_schedule", "moment_dtype"]
