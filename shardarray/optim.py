"""Functional optimizers: ``state = opt.init(params)``; ``params, state = opt.update(params, grads, state)``.

The state (moments) lives in the parameters' layouts, so an update is local
to each shard: no communication. ``lr`` is a number or a schedule
``step -> lr`` (the step counts from 1).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .array import ShardArray
from .errors import DTypeError
from .backend import cuda_kernels
from .ops import fused
from .ops.creation import zeros_like
from .ops.elementwise import apply
from .tree import tree_flatten, tree_unflatten

LR = float | Callable[[int], float]


def _lr(lr: LR, step: int) -> float:
    return float(lr(step)) if callable(lr) else float(lr)


def _check(params: Any, grads: Any) -> tuple[list[ShardArray], list[ShardArray], Any]:
    p, treedef = tree_flatten(params)
    g, gdef = tree_flatten(grads, "grads")
    if gdef != treedef:
        raise DTypeError(f"update: grads have structure {gdef} but params have {treedef}")
    for i, (a, b) in enumerate(zip(p, g)):
        if a.dims != b.dims or a.shape != b.shape:
            raise DTypeError(f"update: gradient {i} has dims {b.sizes} but its parameter has {a.sizes}")
    return p, g, treedef


def _axpby(x: Any, a: float, y: Any, b: float) -> Any:
    """``a x + b y`` with one temporary."""
    out = x * a
    out += y * b if b != 1.0 else y
    return out


@dataclass(frozen=True)
class SGD:
    """Stochastic gradient descent with optional momentum and decoupled weight decay.

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

    def init(self, params: Any) -> dict[str, Any]:
        p, treedef = tree_flatten(params)
        velocity = tree_unflatten(treedef, [zeros_like(x) for x in p]) if self.momentum else None
        return {"step": 0, "velocity": velocity}

    def update(self, params: Any, grads: Any, state: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        p, g, treedef = _check(params, grads)
        step = state["step"] + 1
        lr, mu, wd = _lr(self.lr, step), self.momentum, self.weight_decay
        new_p, new_v = [], []
        vel = tree_flatten(state["velocity"], "velocity")[0] if mu else [None] * len(p)
        for x, dx, v in zip(p, g, vel):
            if mu:
                v = apply("sgd_momentum", lambda xp, v, d: mu * v + d, (v, dx))
                dx = v
                new_v.append(v)
            new_p.append(apply("sgd", lambda xp, a, d: a * (1.0 - lr * wd) - lr * d, (x, dx)).astype(x.dtype))
        velocity = tree_unflatten(treedef, new_v) if mu else None
        return tree_unflatten(treedef, new_p), {"step": step, "velocity": velocity}


@dataclass(frozen=True)
class Adam:
    """Adam (Kingma & Ba) with decoupled weight decay (AdamW, Loshchilov & Hutter).

    ``p -= lr * (m_hat / (sqrt(v_hat) + eps) + weight_decay * p)``, with bias-corrected moments.

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

    def init(self, params: Any) -> dict[str, Any]:
        p, treedef = tree_flatten(params)
        return {
            "step": 0,
            "m": tree_unflatten(treedef, [zeros_like(x) for x in p]),
            "v": tree_unflatten(treedef, [zeros_like(x) for x in p]),
        }

    def update(self, params: Any, grads: Any, state: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        p, g, treedef = _check(params, grads)
        step = state["step"] + 1
        lr, b1, b2, eps, wd = _lr(self.lr, step), self.b1, self.b2, self.eps, self.weight_decay
        c1, c2 = 1.0 - b1**step, 1.0 - b2**step
        step_size = lr / c1
        m_all = tree_flatten(state["m"], "m")[0]
        v_all = tree_flatten(state["v"], "v")[0]
        new_p, new_m, new_v = [], [], []
        for x, dx, m, v in zip(p, g, m_all, v_all):
            if _fused(x, m, v):  # one kernel per block (kernels/adam.cu)
                outs = fused.map_rows_multi(
                    x.resolve(), 3, lambda xp, a, d, m, v: cuda_kernels.adam(
                        xp, a, d, m, v, b1, b2, step_size, c2, eps, 1.0 - lr * wd),
                    fused.like(dx, x), m, v,
                )
                for out, shards in zip((new_p, new_m, new_v), outs):
                    out.append(ShardArray(x.mesh, x.spec, x.dtype, shards))
                continue
            m = apply("adam_m", lambda xp, m, d: _axpby(m, b1, d, 1.0 - b1), (m, dx))
            v = apply("adam_v", lambda xp, v, d: _axpby(v, b2, d * d, 1.0 - b2), (v, dx))

            def step_fn(xp: Any, a: Any, m: Any, v: Any) -> Any:
                den = xp.sqrt(v * (1.0 / c2))
                den += eps
                upd = m * -step_size
                upd /= den
                return _axpby(a, 1.0 - lr * wd, upd, 1.0) if wd else a + upd

            new_p.append(apply("adam", step_fn, (x, m, v)).astype(x.dtype))
            new_m.append(m)
            new_v.append(v)
        state = {"step": step, "m": tree_unflatten(treedef, new_m), "v": tree_unflatten(treedef, new_v)}
        return tree_unflatten(treedef, new_p), state


def _fused(x: ShardArray, m: ShardArray, v: ShardArray) -> bool:
    """Adam's update as one kernel: CuPy shards, and moments laid out and typed like the parameter."""
    return fused.kernels_for(x, "adam") and all(
        s.spec == x.spec and s.dtype == x.dtype and not s.pending for s in (m, v)
    )


def cosine_schedule(peak: float, total_steps: int, warmup: int = 0, final: float = 0.0) -> Callable[[int], float]:
    """Linear warm-up to ``peak`` over ``warmup`` steps, then cosine decay to ``final`` at ``total_steps``.

    Example:
        >>> lr = sa.optim.cosine_schedule(1e-3, 100, warmup=10)
        >>> lr(5), lr(10), round(lr(100), 12)
        (0.0005, 0.001, 0.0)
    """

    def lr(step: int) -> float:
        if warmup and step < warmup:
            return peak * step / warmup
        t = min(1.0, (step - warmup) / max(1, total_steps - warmup))
        return final + 0.5 * (peak - final) * (1.0 + math.cos(math.pi * t))

    return lr


__all__ = ["SGD", "Adam", "cosine_schedule"]
