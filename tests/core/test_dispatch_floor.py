"""The dispatch-floor cuts (benchmarks/dispatch_floor.py) change no result.

The training step of the README main job's model, at the floor's sizes (every
size 4), must give the losses and comm log recorded before the cuts; with the
dispatch plans on (warm caches, other layouts and dtypes planned in between)
and off, the losses, gradients and comm logs must be bit-identical; and the
fast paths (contract2's skipped identity transposes, the comm log's dtype
names, transpose/match/_finish on arrays already in place) must agree with
the general ones.
"""

from __future__ import annotations

import cProfile
import pstats

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import shardarray as sa
from shardarray.backend.contract import contract2
from shardarray.core import plans
from shardarray.ops.manipulation.structure import transpose
from helpers import EINSUM_EQUATIONS as EQUATIONS
from helpers import device_blocks, host
from helpers import ref_contract as _ref_contract

FLOOR = {"vocab": 4, "d_model": 4, "heads": 4, "d_kv": 4, "d_ff": 4, "seq_len": 4}
# losses of the first 4 floor steps (2x2 mesh2d, Adam lr 1e-3, seed 0), recorded before the dispatch cuts
FLOOR_LOSSES = ["0x1.9447600000000p+0", "0x1.81ac6e0000000p+0", "0x1.6bc1f00000000p+0", "0x1.5b07640000000p+0"]


def _setup(strategy: str = "mesh2d", shape: dict | None = None, dtype: str = "float32", sizes: dict | None = None,
           **mesh_kw):
    shape = shape or {"rows": 2, "cols": 2}
    cfg = sa.nn.TransformerConfig(n_layers=2, **(sizes or FLOOR))
    mesh = sa.Mesh(shape, rules=sa.nn.strategy_rules(strategy, shape), **mesh_kw)
    params = sa.nn.init_transformer(cfg, mesh, seed=0)
    if dtype != "float32":
        params = {k: v.astype(dtype) for k, v in params.items()}
    tok, tgt = sa.nn.data.pattern_batch(np.random.default_rng(0), 4, cfg.seq_len, cfg.vocab)
    tok = sa.asarray(tok, dims=("batch", "seq"), mesh=mesh)
    tgt = sa.asarray(tgt, dims=("batch", "seq"), mesh=mesh)
    return cfg, params, tok, tgt


def _train(steps: int, **kw) -> tuple[list[float], list, dict]:
    """Losses, comm records and the last gradients of ``steps`` Adam steps."""
    cfg, params, tok, tgt = _setup(**kw)
    opt = sa.optim.Adam(lr=1e-3)
    state = opt.init(params)
    losses = []
    with sa.comm_log() as log:
        for _ in range(steps):
            loss, grads = sa.value_and_grad(sa.nn.transformer_loss)(params, tok, tgt, cfg)
            params, state = opt.update(params, grads, state)
            losses.append(float(np.asarray(loss.numpy())))
    records = [(r.op, r.axes, r.group_size, r.elements, r.bytes, r.dtype) for r in log.records]
    return losses, records, {k: (g.numpy(), g.layout, g.dtype) for k, g in grads.items()}


def test_floor_step_matches_the_recorded_losses_and_comm_log():
    losses, records, _ = _train(4)
    np.testing.assert_allclose(losses, [float.fromhex(h) for h in FLOOR_LOSSES], rtol=1e-6)
    per_step = len(records) // 4
    assert per_step == 43 and len(records) == 4 * per_step
    first = records[:per_step]
    assert all(records[i * per_step:(i + 1) * per_step] == first for i in range(4))
    ops = [(op, axes) for op, axes, *_ in first]
    assert ops.count(("allreduce", ("rows",))) == 30 and ops.count(("allreduce", ("cols",))) == 13
    assert sum(r[3] for r in first) == 717  # elements per device and step
    assert {r[5] for r in first} == {"float32"}


CASES = [
    {},
    {"strategy": "megatron", "shape": {"data": 2, "model": 2}},
    {"strategy": "data", "shape": {"data": 4}},
    {"dtype": "float64"},
    {"strategy": "mesh2d", "shape": {"rows": 3, "cols": 2}},  # uneven blocks (size 4 over 3 devices)
]


def test_plans_on_and_off_are_bit_identical_across_layouts_and_dtypes():
    """Warm caches, filled by other layouts and dtypes first: a plan keyed too coarsely would be reused wrongly."""
    plans.clear_plans()
    warm = [_train(2, **kw) for kw in CASES]  # every case plans once, then hits in its second step
    again = [_train(2, **kw) for kw in reversed(CASES)][::-1]  # now every op of every case is a cache hit
    assert plans.plan_stats()["einsum"]["hits"] > 0 and plans.plan_stats()["elementwise"]["hits"] > 0
    with plans.disabled():
        cold = [_train(2, **kw) for kw in CASES]
    for kw, a, b, c in zip(CASES, warm, again, cold):
        for x in (a, b):
            assert x[0] == c[0], kw  # losses, bit for bit
            assert x[1] == c[1], kw  # comm logs
            assert x[2].keys() == c[2].keys()
            for k in c[2]:
                np.testing.assert_array_equal(x[2][k][0], c[2][k][0], err_msg=f"{kw} {k}")
                assert x[2][k][1:] == c[2][k][1:], (kw, k)


@settings(max_examples=40, deadline=None)
@given(eq=st.sampled_from(EQUATIONS), data=st.data())
def test_contract2_equals_einsum(eq, data):
    lhs, out = eq.split("->")
    ta, tb = lhs.split(",")
    size = {c: data.draw(st.integers(0, 3)) for c in sorted(set(ta + tb))}
    rng = np.random.default_rng(0)
    a = rng.standard_normal([size[c] for c in ta])
    b = rng.standard_normal([size[c] for c in tb])
    got = contract2(np, eq, a, b)
    assert got.shape == tuple(size[c] for c in out)
    np.testing.assert_allclose(got, _ref_contract(eq, a, b), rtol=1e-12, atol=1e-12)


def test_comm_log_names_each_dtype():
    """The dtype names the comm log keeps per dtype (bfloat16 is ml_dtypes'; int and float of one width differ)."""
    mesh = sa.Mesh({"row": 2, "col": 2})
    for dtype in ["float32", "int32", "float64", "bfloat16", "float16", "int64", "float32"]:
        dt = sa.dtypes.as_dtype(dtype)
        with sa.comm_log() as log:
            out = mesh.comm.allreduce(device_blocks(mesh, lambda d, dt=dt: np.ones(3, dtype=dt)), ("col",))
        assert [(r.op, r.dtype, r.elements, r.bytes) for r in log.records] == [("allreduce", dtype, 3, 3 * dt.itemsize)]
        assert all(o.dtype == dt and float(host(o)[0]) == 2.0 for o in out)


def test_transpose_to_the_same_order_is_the_array_itself():
    mesh = sa.Mesh({"row": 2, "col": 2})
    x = sa.ones(mesh, {"a": 3, "b": 5}, layout={"a": "row"})
    assert transpose(x, ("a", "b")) is x
    y = transpose(x, ("b", "a"))
    assert y.dims == ("b", "a") and y.layout == {"a": ("row",)}
    np.testing.assert_array_equal(y.numpy(), x.numpy().T)


def test_gradients_come_back_in_each_parameters_layout_and_dtype():
    """``_finish``'s fast path (a gradient already in place) and its general path (pending, another order)."""
    mesh = sa.Mesh({"row": 2, "col": 2})
    rng = np.random.default_rng(1)
    w = sa.asarray(rng.standard_normal((4, 6)), dims=("io", "hidden"), mesh=mesh, layout={"io": "col"})
    b = sa.asarray(rng.standard_normal(6), dims=("hidden",), mesh=mesh, layout={"hidden": "row"})
    x = sa.asarray(rng.standard_normal((5, 4)), dims=("batch", "io"), mesh=mesh, layout={"io": "col"})

    def f(p):
        h = sa.einsum("batch io, io hidden -> batch hidden", x, p["w"]) + p["b"]
        return (h * h).sum() + (p["b"] * 2.0).sum()

    _, g = sa.value_and_grad(f)({"w": w, "b": b})
    h = x.numpy() @ w.numpy() + b.numpy()
    np.testing.assert_allclose(g["w"].numpy(), x.numpy().T @ (2 * h), rtol=1e-10)
    np.testing.assert_allclose(g["b"].numpy(), (2 * h).sum(0) + 2.0, rtol=1e-10)
    assert g["w"].layout == w.layout and g["b"].layout == b.layout
    assert not g["w"].pending and not g["b"].pending and g["w"].dtype == w.dtype


def test_floor_step_python_calls_stay_cut():
    """cProfile's call count (load-independent): 28,593 per floor step before the cuts, 21,371 at 8dee244, about
    22,000 since every op checks the kind of its arguments (``core.kinds.kind_of``: one call and a few
    ``isinstance`` per op, about 550 calls a step; named arrays pay nothing else).

    On NumPy shards, whatever the session's backend: the bound is the NumPy floor's (a CuPy stand-in's wrappers
    add Python calls of their own).
    """
    cfg, params, tok, tgt = _setup(backend="numpy")
    opt = sa.optim.Adam(lr=1e-3)
    state = opt.init(params)

    def step(params, state):
        _, grads = sa.value_and_grad(sa.nn.transformer_loss)(params, tok, tgt, cfg)
        return opt.update(params, grads, state)

    for _ in range(2):
        params, state = step(params, state)
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(3):
        params, state = step(params, state)
    prof.disable()
    calls = pstats.Stats(prof).total_calls / 3
    assert calls < 23_000, f"a floor step makes {calls:.0f} Python calls (was 28,593 before the dispatch cuts)"
