"""Dynamic loss scaling for float16 training (PyTorch's GradScaler, jmp's DynamicLossScale), functional."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..array import ShardArray, like_kind
from ..autograd.api import value_and_grad
from ..dtypes import is_real_float
from ..errors import ArgumentError, DTypeError
from ..ops.manipulation.structure import astype
from ..tree import tree_unflatten
from .clip import _norm, _resolved
from .common import _in_range, _number
from .reduce_tree import allreduce_tree, scale_leaves


def _nonfinite(xp: Any, block: Any) -> Any:
    """1.0 when the block holds an inf or NaN, else 0.0."""
    if block.size == 0:
        return xp.zeros((), dtype=np.float64)
    return xp.asarray(xp.logical_not(xp.all(xp.isfinite(block))), dtype=np.float64)  # (on the device: no sync)


@dataclass(frozen=True)
class DynamicLossScale:
    """Scale the loss so float16 gradients do not underflow; skip steps whose gradients overflow.

    The state is a plain dict, like the optimizers': ``{"scale": float,
    "good_steps": int, "skipped": int, "finite": bool}`` (``finite``: whether
    the last step's gradients were finite, i.e. it was applied). After a step
    with a non-finite gradient the step is skipped and the scale divided by
    ``factor`` (not below ``min_scale``); after ``growth_interval`` good steps
    in a row it is multiplied by ``factor`` (not above ``max_scale``).

    A training loop::

        scaler = sa.optim.DynamicLossScale()
        ls = scaler.init()
        loss, grads = scaler.value_and_grad(loss_fn)(ls, params, batch)   # loss unscaled, grads scaled
        params, opt_state, ls = scaler.apply(opt, params, grads, opt_state, ls, max_norm=1.0)

    or, piece by piece: ``scaled = scaler.scale(loss, ls)`` inside the
    differentiated function, ``grads, finite = scaler.unscale(grads, ls)``,
    ``ls = scaler.adjust(ls, finite)``, and ``opt.update`` only when finite.

    Communication: ``unscale`` is ONE ``allreduce`` (max) of one float64 flag
    over all mesh axes for all gradients together; ``apply`` with ``max_norm``
    is ONE ``allreduce`` (sum) of one float64 (the squared norm, computed in
    float64, is finite exactly when every gradient is, so it serves as the
    flag and as the clipping norm; float64 gradients beyond 1e154, whose
    squares overflow, take two more, as in ``global_norm``); the unscaling is local.

    Raises:
        ArgumentError: at construction, ``init_scale`` or ``min_scale`` not
            positive and finite, ``factor`` <= 1, ``growth_interval`` < 1,
            ``max_scale`` below ``min_scale``.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> w = {"w": sa.ones(mesh, {"i": 4}, layout={"i": "col"})}
        >>> scaler, opt = sa.optim.DynamicLossScale(init_scale=8.0, growth_interval=2), sa.optim.SGD(lr=0.1)
        >>> ls, st = scaler.init(), opt.init(w)
        >>> bad = {"w": sa.full(mesh, {"i": 4}, np.inf, layout={"i": "col"})}
        >>> w, st, ls = scaler.apply(opt, w, bad, st, ls)     # skipped, scale halved
        >>> ls["scale"], ls["finite"], w["w"].numpy()
        (4.0, False, array([1., 1., 1., 1.], dtype=float32))
    """

    init_scale: float = 2.0**15
    growth_interval: int = 2000
    factor: float = 2.0
    min_scale: float = 1.0
    max_scale: float = 2.0**24

    def __post_init__(self) -> None:
        pos = "(0, inf) (> 0 and finite)"
        for name in ("init_scale", "min_scale", "max_scale"):
            v = _number("DynamicLossScale", name, getattr(self, name))
            if not (math.isfinite(v) and v > 0):
                raise ArgumentError(f"DynamicLossScale({name}={getattr(self, name)!r}): {name} must be in {pos}")
        f = _number("DynamicLossScale", "factor", self.factor)
        if not (math.isfinite(f) and f > 1):
            raise ArgumentError(f"DynamicLossScale(factor={self.factor!r}): factor must be > 1 and finite, e.g. 2")
        n = self.growth_interval
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise ArgumentError(
                f"DynamicLossScale(growth_interval={n!r}): growth_interval must be an integer >= 1 (good steps "
                f"before the scale grows), e.g. 2000"
            )
        if self.max_scale < self.min_scale:
            raise ArgumentError(
                f"DynamicLossScale(min_scale={self.min_scale!r}, max_scale={self.max_scale!r}): max_scale must be "
                f">= min_scale"
            )
        _in_range(
            "DynamicLossScale",
            "init_scale",
            self.init_scale,
            self.min_scale,
            self.max_scale * (1 + 1e-12),
            f"[min_scale, max_scale] = [{self.min_scale}, {self.max_scale}]",
        )

    def init(self) -> dict[str, Any]:
        """The first state: ``init_scale``, no good steps, nothing skipped."""
        return {"scale": float(self.init_scale), "good_steps": 0, "skipped": 0, "finite": True}

    def _check_state(self, state: Any, what: str) -> float:
        if not isinstance(state, dict) or not {"scale", "good_steps", "skipped"} <= set(state):
            got = sorted(state) if isinstance(state, dict) else type(state).__name__
            raise DTypeError(
                f"DynamicLossScale.{what}: the state must be the dict from scaler.init() (keys scale, good_steps, "
                f"skipped, finite); got {got}. Make it with ls = scaler.init()"
            )
        s = state["scale"]
        if (
            isinstance(s, bool)
            or not isinstance(s, (int, float, np.integer, np.floating))
            or not (math.isfinite(float(s)) and float(s) > 0)
        ):
            raise ArgumentError(
                f"DynamicLossScale.{what}: state['scale'] is {s!r}; it must be a positive finite number. The state "
                f"is damaged (or was edited): start again from scaler.init(), or restore a saved state"
            )
        for key in ("good_steps", "skipped"):
            n = state[key]
            if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
                raise ArgumentError(f"DynamicLossScale.{what}: state[{key!r}] is {n!r}; it must be an integer >= 0")
        return float(s)

    def scale(self, loss: Any, state: dict[str, Any]) -> Any:
        """``loss * scale`` (differentiate this; its gradients are the true ones times the scale)."""
        return loss * self._check_state(state, "scale")

    def unscale(self, grads: Any, state: dict[str, Any]) -> tuple[Any, bool]:
        """``(grads / scale, finite)``: ``finite`` is False when any unscaled gradient holds an inf or NaN.

        The division is computed in float32 at least (a 16-bit ``1 / scale`` would overflow) and rounded to each
        gradient's dtype; finiteness is judged on that result, so a 16-bit gradient that overflows only when
        unscaled skips the step rather than reaching the parameters. One ``allreduce`` (max) of one float64
        flag over all mesh axes, for all the gradients.
        """
        s = self._check_state(state, "unscale")
        leaves, treedef = _resolved(grads, "DynamicLossScale.unscale", scaled=True)
        unscaled = scale_leaves(leaves, 1.0 / s)
        finite = allreduce_tree(unscaled, _nonfinite, "max", "DynamicLossScale.unscale") == 0.0
        return tree_unflatten(treedef, unscaled), finite

    def adjust(self, state: dict[str, Any], finite: bool) -> dict[str, Any]:
        """The next state: halve (``/ factor``) after an overflow, grow after ``growth_interval`` good steps."""
        s = self._check_state(state, "adjust")
        if not finite:
            return {
                "scale": max(self.min_scale, s / self.factor),
                "good_steps": 0,
                "skipped": int(state["skipped"]) + 1,
                "finite": False,
            }
        good = int(state["good_steps"]) + 1
        if good >= self.growth_interval:
            s, good = min(self.max_scale, s * self.factor), 0
        return {"scale": s, "good_steps": good, "skipped": int(state["skipped"]), "finite": True}

    def value_and_grad(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """``f(state, params, *args) -> (loss, scaled grads)``: the loss unscaled, the gradients of ``loss * scale``.

        ``fn(params, *args)`` returns the loss, as for ``sa.value_and_grad``;
        pass the scaled gradients to ``apply`` (or ``unscale``). A float16 or
        bfloat16 loss is scaled in float32 (as PyTorch's GradScaler scales the
        float32 loss autocast makes): the scaled value does not overflow (a
        float16 loss of 2 times the default scale 2**15 is beyond float16's
        65504), and the loss returned is the unscaled one, in its own dtype.
        The gradients flow back in the model's dtypes, scaled, and overflow
        there when they must (``apply`` then skips the step).
        """

        def scaled_fn(params: Any, s: float, *args: Any, **kwargs: Any) -> Any:
            loss = fn(params, *args, **kwargs)
            if not isinstance(loss, ShardArray):
                raise DTypeError(
                    f"DynamicLossScale.value_and_grad: fn must return the loss, a 0-d ShardArray; got "
                    f"{type(loss).__name__} (a (loss, aux) pair: compute aux apart, or scale the loss yourself "
                    f"with scaler.scale(loss, ls) inside sa.value_and_grad(fn, has_aux=True))"
                )
            dtype = loss.dtype
            if is_real_float(dtype) and dtype.itemsize < 4:
                loss = astype(loss, "float32")  # (its VJP rounds the cotangent, the scale, to the loss's dtype)
            return loss * s, dtype

        vg = value_and_grad(scaled_fn, has_aux=True)

        def wrapped(state: dict[str, Any], params: Any, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
            s = self._check_state(state, "value_and_grad")
            (loss, dtype), grads = vg(params, s, *args, **kwargs)
            loss = loss * (1.0 / s)
            return (like_kind(astype(loss, dtype), loss) if loss.dtype != dtype else loss), grads

        return wrapped

    def apply(
        self, opt: Any, params: Any, grads: Any, opt_state: Any, state: dict[str, Any], max_norm: float | None = None
    ) -> tuple[Any, Any, dict[str, Any]]:
        """Unscale (and clip to ``max_norm``) the scaled ``grads``, update, or skip the step on overflow.

        Returns ``(params, opt_state, state)``; a skipped step returns the
        params and optimizer state unchanged (``state["finite"]`` is False).
        One allreduce for all gradients: a max of the flags, or, with
        ``max_norm``, a sum of float64 squared norms (the flag and the norm).

        Raises:
            DTypeError: ``opt`` is no optimizer, ``state`` is no loss-scale state, a gradient is not a float.
            ArgumentError: ``max_norm`` negative or not finite.
        """
        if isinstance(opt, dict) or not (
            callable(getattr(opt, "update", None)) and callable(getattr(opt, "init", None))
        ):
            raise DTypeError(
                f"DynamicLossScale.apply: opt must be an optimizer (sa.optim.SGD, sa.optim.Adam, ...: init(params) "
                f"and update(params, grads, state)); got {type(opt).__name__}. Call "
                f"scaler.apply(opt, params, grads, opt_state, ls)"
            )
        s = self._check_state(state, "apply")
        if max_norm is None:
            grads, finite = self.unscale(grads, state)
        else:
            _in_range("DynamicLossScale.apply", "max_norm", max_norm, 0.0, None, "[0, inf) (e.g. 1.0)")
            leaves, treedef = _resolved(grads, "DynamicLossScale.apply", scaled=True)
            norm = _norm(leaves, "DynamicLossScale.apply") / s  # (float64 gradients whose squares overflow: rescaled)
            finite = math.isfinite(norm)
            if finite:
                factor = min(1.0, float(max_norm) / norm) if norm > 0 else 1.0
                scaled = scale_leaves(leaves, factor / s)
                if any(x.dtype.itemsize < 4 for x in scaled):  # 16-bit results of a large max_norm may overflow
                    finite = allreduce_tree(scaled, _nonfinite, "max", "DynamicLossScale.apply") == 0.0
                grads = tree_unflatten(treedef, scaled)
        if finite:
            params, opt_state = opt.update(params, grads, opt_state)
        return params, opt_state, self.adjust(state, finite)
