"""``sa.profile()``: flops, collective bytes and memory against hand counts, on the meta and numpy backends."""

from __future__ import annotations

import math

import pytest

import shardarray as sa

BACKENDS = ["meta", "numpy"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_einsum_flops_and_memory_by_hand(backend):
    mesh = sa.Mesh({"rows": 2, "cols": 2}, backend=backend)
    b, io, h = 8, 16, 32
    x = sa.ones(mesh, {"batch": b, "io": io}, layout={"batch": "rows"})
    w = sa.ones(mesh, {"io": io, "hidden": h}, layout={"hidden": "cols"})
    with sa.profile() as prof:
        y = sa.einsum("batch io, io hidden -> batch hidden", x, w)
    assert prof.flops_per_device == 2 * (b / 2) * io * (h / 2)
    assert prof.flops_by_dtype == {"float32": prof.flops_per_device}
    assert prof.comm_bytes_per_device == 0 and prof.records == []
    # x and w were made before the block: they count from its start, with y's block
    assert prof.peak_memory_bytes_per_device == 4 * (b / 2 * io + io * h / 2 + b / 2 * h / 2)
    assert prof.ops["einsum"].calls == 1 and prof.ops["einsum"].flops == prof.flops_per_device
    assert prof.written_bytes_per_device == 0  # an einsum's output is compute, not memory traffic
    del y


@pytest.mark.parametrize("backend", BACKENDS)
def test_collective_bytes_by_hand(backend):
    mesh = sa.Mesh({"rows": 2, "cols": 2}, backend=backend)
    b, io, h = 8, 16, 32
    x = sa.ones(mesh, {"batch": b, "io": io}, layout={"io": "cols"})
    w = sa.ones(mesh, {"io": io, "hidden": h}, layout={"io": "cols"})
    with sa.profile() as prof:
        y = sa.einsum("batch io, io hidden -> batch hidden", x, w).resolve()
        z = sa.relayout(y, {"batch": "rows"})   # a slice: no communication
        g = sa.relayout(z, {})                   # an allgather over rows
    (ar, ag) = prof.records
    assert (ar.op, ar.axes, ar.elements, ar.bytes) == ("allreduce", ("cols",), b * h, 4 * b * h)
    assert ar.wire_bytes == 2 * (2 - 1) / 2 * 4 * b * h
    assert (ag.op, ag.axes, ag.elements) == ("allgather", ("rows",), b // 2 * h)
    assert ag.wire_bytes == (2 - 1) * 4 * b // 2 * h
    assert prof.comm_bytes_per_device == ar.bytes + ag.bytes
    assert prof.wire_bytes_per_device == ar.wire_bytes + ag.wire_bytes
    assert prof.flops_per_device == 2 * b * (io / 2) * h
    # the einsum leaves a pending sum; resolve() and both relayouts run the relayout op
    assert prof.ops["einsum"].comm_bytes == 0 and prof.ops["relayout"].comm_bytes == ar.bytes + ag.bytes
    assert prof.ops["relayout"].calls == 3
    del g


def test_parameter_memory_by_hand():
    cfg = sa.nn.TransformerConfig(vocab=64, d_model=16, heads=4, d_kv=8, d_ff=64, n_layers=2, seq_len=8)
    shape = {"rows": 2, "cols": 4}
    rules = sa.nn.strategy_rules("mesh2d", shape)
    mesh = sa.Mesh(shape, backend="meta", rules=rules)
    with sa.profile() as prof:
        params = sa.nn.init_transformer(cfg, mesh, dtype="float32")
    split = {"heads": 4, "d_ff": 4, "vocab": 4}
    expected = sum(
        4 * math.prod(cfg.sizes[d] // split.get(d, 1) for d in dims) for dims in sa.nn.param_shapes(cfg).values()
    )
    assert prof.memory_bytes == expected  # what stays live: the parameters' blocks
    assert prof.peak_memory_bytes_per_device >= expected
    assert set(prof.dims) >= {"vocab", "d_model", "heads", "d_kv", "d_ff", "seq"}
    del params


def test_meta_and_numpy_profiles_agree_on_a_training_step():
    cfg = sa.nn.TransformerConfig(vocab=32, d_model=8, heads=2, d_kv=4, d_ff=16, n_layers=1, seq_len=6)
    step = sa.plan.transformer_step(cfg, 4)
    for rules in ({}, {"batch": "rows", "heads": "cols", "d_ff": "cols", "vocab": "cols"},
                  {"batch": ("rows", "cols")}, {"d_model": "rows", "vocab": "cols"}):
        meta = sa.plan.evaluate_layout(step, {"rows": 2, "cols": 2}, rules)
        real = sa.plan.evaluate_layout(step, {"rows": 2, "cols": 2}, rules, backend="numpy")
        assert meta == real
        assert meta.ops == real.ops
        assert {"einsum", "einsum.grad", "causal_softmax", "layer_norm"} <= set(meta.ops)


def test_arrays_freed_inside_the_block_leave_the_live_total():
    mesh = sa.Mesh({"x": 2}, backend="meta")
    with sa.profile() as prof:
        a = sa.zeros(mesh, {"n": 1000}, layout={"n": "x"})
        b = a + 1.0
        del a
        c = b * 2.0
    block = 500 * 4  # float32
    assert prof.peak_memory_bytes_per_device == 2 * block  # a and b, then b and c: never three
    assert prof.memory_bytes == 2 * block
    assert prof.written_bytes_per_device == 3 * block
    del b, c


def test_einsum_flops_formula():
    assert sa.profiler.einsum_flops("mk,kn->mn", [(4, 6), (6, 8)]) == 2 * 4 * 6 * 8
    assert sa.profiler.einsum_flops("bmk,bkn->bmn", [(3, 4, 6), (3, 6, 8)]) == 2 * 3 * 4 * 6 * 8
    # a dim only one operand has is summed first: one flop per element
    assert sa.profiler.einsum_flops("mkz,kn->mn", [(4, 6, 5), (6, 8)]) == 2 * 4 * 6 * 8 + 4 * 6 * 5
    assert sa.profiler.einsum_flops("ab->a", [(3, 4)]) == 12


def test_summa_flops_are_counted_per_step():
    mesh = sa.Mesh({"row": 2, "col": 2}, backend="meta")
    m, k, n = 8, 12, 16
    a = sa.ones(mesh, {"m": m, "k": k}, layout={"m": "row", "k": "col"})
    b = sa.ones(mesh, {"k": k, "n": n}, layout={"k": "row", "n": "col"})
    with sa.profile() as prof:
        sa.einsum("m k, k n -> m n", a, b, algorithm="summa")
    assert prof.flops_per_device == 2 * m * k * n / 4
    assert {r.op for r in prof.records} == {"broadcast"}


def test_summary_and_repr():
    mesh = sa.Mesh({"x": 2}, backend="meta")
    x = sa.ones(mesh, {"a": 4, "b": 4}, layout={"a": "x"})
    with sa.profile() as prof:
        sa.softmax(x, "b")
    text = prof.summary()
    assert "softmax" in text and "peak memory" in text
    assert "Profile(" in repr(prof)
    assert prof.peak_memory_bytes_per_device >= 2 * (2 * 4 * 4)  # the input block and the output block
