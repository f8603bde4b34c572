"""Misuse cases of differentiation and optimizer numerics: ops without a gradient on arrays being differentiated
(a ``TapeError`` naming the op and ``sa.stop_gradient``, never a silent zero), optimizers on integer parameters,
damaged loss-scale states."""

from __future__ import annotations

import numpy as np
from misuse import Case

import shardarray as sa


def _mesh():
    return sa.Mesh({"row": 2, "col": 2})


def _x():
    return sa.asarray(np.arange(12.0).reshape(4, 3) - 5.5, dims=("a", "b"), mesh=_mesh(), layout={"a": "row"})


def _grad_of(f):
    return lambda: sa.grad(lambda p: f(p))(_x())


def _sum0(out):
    return (out[0] if isinstance(out, tuple) else out).astype("float64").sum()


def _ints():
    return {"w": sa.ones(_mesh(), {"i": 4}, dtype="int32", layout={"i": "col"})}


def _scaler_state(**bad):
    return {**sa.optim.DynamicLossScale().init(), **bad}


def _grads():
    return {"w": sa.ones(_mesh(), {"i": 4}, dtype="float16", layout={"i": "col"})}


def _forgetful(p):
    """What an op that forgot the tape does: compute from the shards and wrap the result."""
    return sa.ShardArray(p.mesh, p.spec, p.dtype, [None if s is None else s * 2 for s in p.shards], p.pending).sum()


TAPE_FIX = ("sa.stop_gradient",)

CASES = [
    # floating results without a gradient
    Case("grad-unique-values", _grad_of(lambda p: _sum0(sa.unique_values(p))), sa.TapeError,
         ("unique_values", "a=4, b=3"), TAPE_FIX),
    Case("grad-unique-counts", _grad_of(lambda p: _sum0(sa.unique_counts(p))), sa.TapeError,
         ("unique_counts",), TAPE_FIX),
    Case("grad-unique-inverse", _grad_of(lambda p: _sum0(sa.unique_inverse(p))), sa.TapeError,
         ("unique_inverse",), TAPE_FIX),
    Case("grad-unique-all", _grad_of(lambda p: _sum0(sa.unique_all(p))), sa.TapeError, ("unique_all",), TAPE_FIX),
    Case("grad-unique", _grad_of(lambda p: _sum0(sa.unique(p))), sa.TapeError, ("unique",), TAPE_FIX),
    Case("grad-nextafter", _grad_of(lambda p: _sum0(sa.nextafter(p, 0.0))), sa.TapeError, ("nextafter",), TAPE_FIX),
    Case("grad-nextafter-second", _grad_of(lambda p: _sum0(sa.nextafter(0.5, p))), sa.TapeError, ("nextafter",),
         TAPE_FIX),
    # code that reads a traced array's blocks outside the tape
    Case("grad-forgetful-op", _grad_of(_forgetful), sa.TapeError, ("_forgetful", "no gradient rule"), TAPE_FIX),
    Case("grad-np-asarray-of-traced", _grad_of(lambda p: p.sum() * float(np.asarray(p).sum())), sa.TapeError,
         ("np.asarray", "a=4, b=3"), TAPE_FIX),
    # optimizers on integer or bool parameters
    Case("adam-init-int-params", lambda: sa.optim.Adam(1e-3).init(_ints()), sa.DTypeError,
         ("Adam.init", "params['w']", "int32"), ("astype('float32')",)),
    Case("sgd-init-bool-params", lambda: sa.optim.SGD(1e-3).init(
        {"m": sa.ones(_mesh(), {"i": 4}, dtype="bool")}), sa.DTypeError, ("SGD.init", "params['m']", "bool"),
        ("astype('float32')",)),
    Case("adam-update-int-params", lambda: sa.optim.Adam(1e-3).update(
        _ints(), _ints(), {"step": 0, "m": _ints(), "v": _ints(), "master": None}), sa.DTypeError,
        ("Adam.update", "int32"), ("astype('float32')",)),
    Case("sgd-update-int-params", lambda: sa.optim.SGD(1e-3).update(
        _ints(), _ints(), {"step": 0, "velocity": None, "master": None}), sa.DTypeError, ("SGD.update", "int32"),
        ("astype('float32')",)),
    # damaged loss-scale states
    Case("loss-scale-nan", lambda: sa.optim.DynamicLossScale().unscale(_grads(), _scaler_state(scale=float("nan"))),
         sa.ArgumentError, ("state['scale']", "nan"), ("scaler.init()",)),
    Case("loss-scale-zero", lambda: sa.optim.DynamicLossScale().unscale(_grads(), _scaler_state(scale=0.0)),
         sa.ArgumentError, ("state['scale']", "0.0"), ("scaler.init()",)),
    Case("loss-scale-negative", lambda: sa.optim.DynamicLossScale().scale(1.0, _scaler_state(scale=-8.0)),
         sa.ArgumentError, ("state['scale']", "-8.0"), ("scaler.init()",)),
    Case("loss-scale-inf", lambda: sa.optim.DynamicLossScale().adjust(_scaler_state(scale=float("inf")), True),
         sa.ArgumentError, ("state['scale']", "inf"), ("scaler.init()",)),
    Case("loss-scale-string", lambda: sa.optim.DynamicLossScale().unscale(_grads(), _scaler_state(scale="8")),
         sa.ArgumentError, ("state['scale']", "'8'"), ("scaler.init()",)),
    Case("loss-scale-negative-steps", lambda: sa.optim.DynamicLossScale().adjust(_scaler_state(good_steps=-1), True),
         sa.ArgumentError, ("state['good_steps']", "-1"), ()),
]
