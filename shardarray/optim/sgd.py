"""Stochastic gradient descent: a local update of each shard, no communication."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..array import ShardArray, like_kind
from ..errors import ArgumentError, DTypeError
from ..ops.elementwise.arithmetic import apply
from ..tree import tree_unflatten
from .common import (
    _FIX,
    LR,
    _axpby,
    _check,
    _check_lr,
    _in_range,
    _moments,
    _state,
    _up,
    _zeros_for,
    float_params,
    moment_dtype,
    next_step,
    real_dtype,
)
from .master import check_master_dtype, finish, init_master, working_dtype, working_values


@dataclass(frozen=True)
class SGD:
    """Stochastic gradient descent with optional momentum (heavy ball, or Nesterov's) and decoupled weight decay.

    With ``momentum`` μ the velocity is ``v = μ v + g`` and the step ``-lr v``, or ``-lr (g + μ v)`` with
    ``nesterov=True`` (PyTorch's ``SGD(nesterov=True)``, optax's ``sgd(nesterov=True)``).

    Complex parameters (complex64, complex128) take a complex gradient ``dL/dRe + 1j * dL/dIm`` (PyTorch's
    ``z.grad``; pass ``sa.conj(g)`` of a ``jax.grad``-convention one) and a complex velocity: every step is linear
    with real coefficients, so it is SGD on the real and imaginary parts as two real parameters (PyTorch's).

    Parameters narrower than ``master_dtype`` (float16, bfloat16 under the
    default "float32") are updated through a float32 master copy kept in the
    state (see ``shardarray.optim.master``); ``master_dtype=None`` turns it off.

    Raises:
        ArgumentError: at construction, ``lr`` < 0, ``momentum`` outside [0, 1),
            ``weight_decay`` < 0 (the message names the parameter and the range), or ``nesterov`` without
            momentum.

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
    master_dtype: str | None = "float32"
    nesterov: bool = False

    def __post_init__(self) -> None:
        _check_lr("SGD", self.lr)
        _in_range("SGD", "momentum", self.momentum, 0.0, 1.0, "[0, 1)")
        if not isinstance(self.nesterov, (bool, np.bool_)):
            raise ArgumentError(f"SGD(nesterov={self.nesterov!r}): nesterov must be True or False")
        if self.nesterov and not self.momentum:
            raise ArgumentError(
                "SGD(nesterov=True) needs a momentum in (0, 1), e.g. SGD(lr, momentum=0.9, nesterov=True)"
            )
        _in_range("SGD", "weight_decay", self.weight_decay, 0.0, None, "[0, inf) (weight_decay >= 0, finite)")
        check_master_dtype("SGD", self.master_dtype)

    def init(self, params: Any) -> dict[str, Any]:
        p, treedef = float_params(params, "SGD.init")
        master = check_master_dtype("SGD", self.master_dtype)
        velocity = (
            tree_unflatten(treedef, [_zeros_for(x, working_dtype(x.dtype, master)) for x in p])
            if self.momentum
            else None
        )
        return {"step": 0, "velocity": velocity, "master": init_master(params, master)}

    def update(self, params: Any, grads: Any, state: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        """New params and state; params, grads and the velocity are paired by key path."""
        _state(state, ("step", "velocity"), "SGD")
        p, g, paths, treedef = _check(params, grads, "SGD.update")
        step, lr = next_step(state["step"], self.lr, "SGD.update")
        mu, wd = self.momentum, self.weight_decay
        if mu and state["velocity"] is None:
            raise DTypeError(f"SGD.update: state['velocity'] is None (a state of SGD without momentum); {_FIX}")
        vel = _moments(params, p, paths, state["velocity"], "velocity") if mu else [None] * len(p)
        master = check_master_dtype("SGD", self.master_dtype)
        new_p, new_v = [], []
        for x, dx, v in zip(working_values(p, paths, state, master, "SGD"), g, vel):
            ct = moment_dtype(x.dtype)
            if mu:
                v = apply(
                    "sgd_momentum", lambda xp, v, d, ct=ct: _axpby(_up(xp, v, ct), mu, _up(xp, d, ct), 1.0), (v, dx)
                )
                new_v.append(v)
                if self.nesterov:  # the step looks ahead along the velocity: g + mu v
                    dx = apply("sgd_nesterov", lambda xp, d, v, ct=ct: _axpby(_up(xp, d, ct), 1.0, v, mu), (dx, v))
                else:
                    dx = v
            if isinstance(lr, ShardArray):  # a schedule's rate computed on the device: a 0-d operand of the update

                def sgd(xp: Any, a: Any, d: Any, rate: Any, ct: Any = ct) -> Any:
                    rate = rate.astype(real_dtype(ct))
                    out = _up(xp, a, ct) * (1.0 - rate * wd)
                    out -= _up(xp, d, ct) * rate
                    return out

                new_p.append(apply("sgd", sgd, (x, dx, lr)))
                continue
            new_p.append(
                apply(
                    "sgd", lambda xp, a, d, ct=ct: _axpby(_up(xp, a, ct), 1.0 - lr * wd, _up(xp, d, ct), -lr), (x, dx)
                )
            )
        velocity = tree_unflatten(treedef, [like_kind(v, x) for v, x in zip(new_v, p)]) if mu else None
        new_p, copies = finish(p, paths, new_p, master)
        new_p = [like_kind(o, x) for o, x in zip(new_p, p)]
        return tree_unflatten(treedef, new_p), {"step": step, "velocity": velocity, "master": copies}
