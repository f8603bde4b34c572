"""Misuse cases of mixed-precision training: compute dtype, master copies, clipping, the loss scale."""

from __future__ import annotations

import shardarray as sa
from misuse import Case


def _mesh():
    return sa.Mesh({"row": 2, "col": 2})


def _grads():
    return {"w": sa.ones(_mesh(), {"i": 4}, layout={"i": "col"})}


def _two_meshes():
    return sa.optim.clip_by_global_norm(
        {"a": sa.ones(_mesh(), {"i": 4}), "b": sa.ones(sa.Mesh({"all": 4}), {"i": 4})}, 1.0)


def _stale_master():
    w16 = {"w": sa.ones(_mesh(), {"i": 4}, dtype="float16")}
    state = sa.optim.Adam(master_dtype=None).init(w16)
    return sa.optim.Adam().update(w16, w16, state)


CASES = [
    Case("mixed-compute-dtype-int", lambda: sa.nn.TransformerConfig(compute_dtype="int8"), sa.DTypeError,
         names=("compute_dtype", "int8"), fix=("'bfloat16'",)),
    Case("mixed-compute-dtype-not-string", lambda: sa.nn.TransformerConfig(compute_dtype=16), sa.DTypeError,
         names=("compute_dtype=16",), fix=("bfloat16", "float16")),
    Case("mixed-master-dtype-narrow", lambda: sa.optim.Adam(master_dtype="float16"), sa.DTypeError,
         names=("master_dtype", "float16"), fix=("'float32'", "None")),
    Case("mixed-master-dtype-sgd", lambda: sa.optim.SGD(master_dtype="int32"), sa.DTypeError,
         names=("SGD", "master_dtype", "int32"), fix=("'float32'",)),
    Case("mixed-state-without-master", _stale_master, sa.DTypeError,
         names=("['w']", "float16", "master"), fix=("opt.init(params)",)),
    Case("mixed-clip-negative", lambda: sa.optim.clip_by_global_norm(_grads(), -1.0), sa.ArgumentError,
         names=("max_norm=-1.0",), fix=("max_norm >= 0",)),
    Case("mixed-clip-two-meshes", _two_meshes, sa.MeshError,
         names=("clip_by_global_norm", "different meshes"), fix=("one mesh",)),
    Case("mixed-scale-factor", lambda: sa.optim.DynamicLossScale(factor=1.0), sa.ArgumentError,
         names=("factor=1.0",), fix=("> 1",)),
    Case("mixed-scale-interval", lambda: sa.optim.DynamicLossScale(growth_interval=0), sa.ArgumentError,
         names=("growth_interval=0",), fix=("integer >= 1",)),
    Case("mixed-scale-init", lambda: sa.optim.DynamicLossScale(init_scale=0.5), sa.ArgumentError,
         names=("init_scale=0.5",), fix=("[min_scale, max_scale]",)),
    Case("mixed-scale-bad-state", lambda: sa.optim.DynamicLossScale().unscale(_grads(), {}), sa.DTypeError,
         names=("unscale", "state"), fix=("scaler.init()",)),
    Case("mixed-scale-apply-max-norm", lambda: sa.optim.DynamicLossScale().apply(
        sa.optim.SGD(), _grads(), _grads(), sa.optim.SGD().init(_grads()), sa.optim.DynamicLossScale().init(),
        max_norm=float("nan")), sa.ArgumentError, names=("max_norm=nan",), fix=("e.g. 1.0",)),
]
