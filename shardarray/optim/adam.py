"""Adam / AdamW: a local update of each shard (one fused kernel per block on GPUs), no communication."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..array import ShardArray, like_kind
from ..backend import cuda_kernels
from ..core.relayout import resolve_to
from ..errors import ArgumentError
from ..ops.elementwise.arithmetic import apply
from ..ops.fused import dispatch as fused
from ..ops.fused import numpy_paths as fused_numpy
from ..tree import tree_unflatten
from .common import (
    LR,
    _axpby,
    _check,
    _check_lr,
    _in_range,
    _moments,
    _number,
    _state,
    _up,
    _zeros_for,
    componentwise,
    float_params,
    moment_dtype,
    next_step,
    real_dtype,
)
from .master import check_master_dtype, finish, init_master, working_dtype, working_values


@dataclass(frozen=True)
class Adam:
    """Adam (Kingma & Ba) with decoupled weight decay (AdamW, Loshchilov & Hutter).

    ``p -= lr * (m_hat / (sqrt(v_hat) + eps) + weight_decay * p)``, with bias-corrected moments.
    For parameters narrower than float32 (float16, bfloat16) the moments ``m``,
    ``v`` and the arithmetic are float32 (``eps`` = 1e-8 would round to 0 and
    ``v`` underflow in float16). Such parameters are also updated through a
    float32 master copy in the state (``master_dtype="float32"``, the default;
    see ``shardarray.optim.master``), and the returned parameter is the master
    rounded once; ``master_dtype=None`` turns the copy off.

    Complex parameters (complex64, complex128) are updated as PyTorch's Adam
    does: as two real parameters, the real and imaginary parts (Adam on
    ``torch.view_as_real(p)``). Their gradient is ``dL/dRe + 1j * dL/dIm``
    (PyTorch's ``z.grad``; ``jax.grad`` gives the conjugate, so pass
    ``sa.conj(g)`` of a JAX-convention gradient); ``m`` is complex, and so is
    ``v``, holding the two parts' second moments ``Re(g)**2 + 1j * Im(g)**2``
    (not ``|g|**2``), so each part takes its own step ``m_hat / (sqrt(v_hat) + eps)``.
    ``sa.value_and_grad`` differentiates real parameters only: differentiate
    the parts as two real parameters and pass ``g_re + 1j * g_im``.

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
    master_dtype: str | None = "float32"

    def __post_init__(self) -> None:
        _check_lr("Adam", self.lr)
        _in_range("Adam", "b1", self.b1, 0.0, 1.0, "[0, 1)")
        _in_range("Adam", "b2", self.b2, 0.0, 1.0, "[0, 1)")
        eps = _number("Adam", "eps", self.eps)
        if not (math.isfinite(eps) and eps > 0):
            raise ArgumentError(f"Adam(eps={self.eps!r}): eps must be > 0 and finite (e.g. 1e-8)")
        _in_range("Adam", "weight_decay", self.weight_decay, 0.0, None, "[0, inf) (weight_decay >= 0, finite)")
        check_master_dtype("Adam", self.master_dtype)

    def init(self, params: Any) -> dict[str, Any]:
        p, treedef = float_params(params, "Adam.init")
        master = check_master_dtype("Adam", self.master_dtype)
        return {
            "step": 0,
            "m": tree_unflatten(treedef, [_zeros_for(x, working_dtype(x.dtype, master)) for x in p]),
            "v": tree_unflatten(treedef, [_zeros_for(x, working_dtype(x.dtype, master)) for x in p]),
            "master": init_master(params, master),
        }

    def update(self, params: Any, grads: Any, state: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        """New params and state; params, grads and the moments are paired by key path."""
        _state(state, ("step", "m", "v"), "Adam")
        p, g, paths, treedef = _check(params, grads, "Adam.update")
        step, lr = next_step(state["step"], self.lr, "Adam.update")
        b1, b2, eps, wd = self.b1, self.b2, self.eps, self.weight_decay
        if isinstance(step, ShardArray):  # counted on the device: the step's scalars are 0-d float64 arrays there
            t = step.astype("float64")
            step_size: Any = lr / (1.0 - b1**t)
            c2: Any = 1.0 - b2**t
            decay: Any = 1.0 - lr * wd if isinstance(lr, ShardArray) else t * 0.0 + (1.0 - lr * wd)
            scalars: tuple[Any, ...] = (step_size, c2, decay)
        else:
            c2 = 1.0 - b2**step
            step_size = lr / (1.0 - b1**step)
            decay = 1.0 - lr * wd
            scalars = ()
        m_all = _moments(params, p, paths, state["m"], "m")
        v_all = _moments(params, p, paths, state["v"], "v")
        master = check_master_dtype("Adam", self.master_dtype)
        new_p: list[ShardArray] = []
        new_m: list[ShardArray] = []
        new_v: list[ShardArray] = []
        for x, dx, m, v in zip(working_values(p, paths, state, master, "Adam"), g, m_all, v_all):
            if _fused(x, m, v):  # one kernel per block (kernels/adam.cu), one NumPy pass (ops/fused/numpy_paths.py)
                kernels = fused_numpy if fused_numpy.is_numpy(x) else cuda_kernels
                outs = fused.map_rows_multi(
                    resolve_to(x),
                    3,
                    lambda xp, a, d, m, v, *sc, kernels=kernels: kernels.adam(
                        xp, a, d, m, v, b1, b2, *(sc[:2] or (step_size, c2)), eps, sc[2] if sc else decay
                    ),
                    fused.like(dx, x),
                    m,
                    v,
                    *(s.shards for s in scalars),
                )
                for out, shards, dt in zip((new_p, new_m, new_v), outs, (x.dtype, m.dtype, v.dtype)):
                    out.append(ShardArray(x.mesh, x.spec, dt, shards))
                continue
            ct = moment_dtype(x.dtype)
            m = apply("adam_m", lambda xp, m, d, ct=ct: _axpby(_up(xp, m, ct), b1, _up(xp, d, ct), 1.0 - b1), (m, dx))

            def v_fn(xp: Any, v: Any, d: Any, ct: Any = ct) -> Any:
                d = componentwise(xp, lambda d: d * d, _up(xp, d, ct))  # (complex: re² + 1j im², view_as_real's)
                return _axpby(_up(xp, v, ct), b2, d, 1.0 - b2)

            v = apply("adam_v", v_fn, (v, dx))

            def step_fn(xp: Any, a: Any, m: Any, v: Any, *sc: Any, ct: Any = ct) -> Any:
                size, c, dec = (step_size, c2, decay) if not sc else (s.astype(real_dtype(ct)) for s in sc)

                def real_step(a: Any, m: Any, v: Any) -> Any:
                    den = xp.sqrt(v * (1.0 / c))
                    den += eps
                    upd = m * -size
                    upd /= den
                    return a * dec + upd if wd else a + upd

                return componentwise(xp, real_step, _up(xp, a, ct), m, v)  # (complex: its parts as two reals)

            new_p.append(apply("adam", step_fn, (x, m, v, *scalars)))
            new_m.append(m)
            new_v.append(v)
        new_p, copies = finish(p, paths, new_p, master)
        new_p, new_m, new_v = ([like_kind(o, x) for o, x in zip(outs, p)] for outs in (new_p, new_m, new_v))
        state = {
            "step": step,
            "m": tree_unflatten(treedef, new_m),
            "v": tree_unflatten(treedef, new_v),
            "master": copies,
        }
        return tree_unflatten(treedef, new_p), state


def _fused(x: ShardArray, m: ShardArray, v: ShardArray) -> bool:
    """Adam's update fused per block: moments laid out like the parameter and of its moment dtype, and CuPy
    shards (the kernel) or NumPy float32/float64 shards (``ops.fused_numpy.adam``)."""
    if x.dtype.kind == "c" or not (fused_numpy.is_numpy(x) or fused.kernels_for(x, "adam")):
        return False  # (complex: the kernels square a real gradient; the unfused path splits the parts)
    ct = moment_dtype(x.dtype)
    return (m.spec == x.spec and m.dtype == ct and not m.pending) and (
        v.spec == x.spec and v.dtype == ct and not v.pending
    )
