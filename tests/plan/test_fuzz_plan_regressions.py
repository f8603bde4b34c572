"""Regressions found by a differential fuzzer of the planner (op-graph pricing against full traces, the search
against brute force, the explanation, ``strategy="auto"`` and the ``plan`` CLI on odd inputs).

Each test is one bug: the figures of a memoised or graph-priced trace that differed from the plain trace, and
odd inputs that crashed with a raw ``KeyError``/``TypeError``/``ValueError`` instead of a ``shardarray.errors``
error, or gave a message whose numbers did not tell the sizes apart.
"""

from __future__ import annotations

import json

import pytest

import shardarray as sa
from shardarray.hardware import get_profile
from shardarray.plan.graph import GraphSet
from shardarray.plan.memo import OpMemo

_CFG = sa.nn.TransformerConfig(vocab=8, d_model=4, heads=2, d_kv=2, d_ff=8, n_layers=1, seq_len=4)


def _same_dims_two_orders(seen: list):
    """Two creation calls whose shape maps hold the same items in another order: ``(c, b)`` then ``(b, c)``."""

    def step(mesh):
        a = sa.random.normal(mesh, {"c": 4, "b": 2}, seed=1)
        b = sa.random.normal(mesh, {"b": 2, "c": 4}, seed=2)
        x = sa.random.normal(mesh, {"c": 4}, seed=3)
        seen.append((a.dims, b.dims))
        return sa.value_and_grad(lambda ps: sa.sum(x * ps[0]))([b])

    return step


def test_the_op_memo_keeps_the_order_of_a_shape_map():
    """The memo keyed a dict argument by its sorted items, so ``normal(mesh, {"b": 2, "c": 4})`` replayed the entry
    of ``normal(mesh, {"c": 4, "b": 2})``: an array of dims ``(c, b)``, and every figure after it priced on that."""
    seen: list = []
    step, mesh, hw = _same_dims_two_orders(seen), {"x": 2}, get_profile("a100")
    plain = sa.plan.evaluate_layout(step, mesh, {}, hw)
    memo = sa.plan.evaluate_layout(step, mesh, {}, hw, memo=OpMemo())
    fig = GraphSet(step, mesh, hw).figures({})
    assert seen == [(("c", "b"), ("b", "c"))] * 3
    assert memo.memory_bytes_per_device == fig.memory_bytes == plain.memory_bytes_per_device
    assert memo.memory_time_s == fig.memory_time_s == pytest.approx(plain.memory_time_s, rel=1e-12)
    assert memo.ops == plain.ops


def _pending_products(n: int):
    """``y = x * sum(p_i, c)`` for ``i < n``, loss ``sum(y * y)``: with ``c`` split, ``x * sum(p_0)`` stays a pending
    sum, ``y * sum(p_1)`` resolves two pending operands, and for ``n = 3`` the loss's ``y * y`` is one pending array
    twice, of the signatures of the second product's two."""

    def step(mesh):
        ps = [sa.random.normal(mesh, {"a": 1, "d": 3, "c": 2}, seed=i) for i in range(n)]
        x = sa.random.normal(mesh, {"a": 1, "d": 3}, seed=99)

        def loss(ps):
            y = x
            for p in ps:
                y = y * sa.sum(p, ["c"])
            return sa.sum(y * y)

        return sa.value_and_grad(loss)(ps)

    return step


def test_a_call_on_one_array_twice_is_keyed_apart_from_one_on_two():
    """``y * y`` resolves its pending operand once (the resolution is cached on the array), ``y1 * s1`` two arrays of
    the same signatures twice; the memo keyed both alike, so the first replayed the second's two allreduces (comm
    bytes 72 against the trace's 60), and the graph walk failed with a raw ``KeyError`` on the second's cached
    resolutions."""
    step, mesh, rules, hw = _pending_products(3), {"x": 2}, {"c": "x"}, get_profile("a100")
    plain = sa.plan.evaluate_layout(step, mesh, rules, hw)
    memo = sa.plan.evaluate_layout(step, mesh, rules, hw, memo=OpMemo())
    fig = GraphSet(step, mesh, hw).figures(rules)
    assert plain.comm_bytes_per_device == 60.0
    assert memo.comm_bytes_per_device == fig.comm_bytes == plain.comm_bytes_per_device
    assert memo.step_time_s == fig.step_time_s == pytest.approx(plain.step_time_s, rel=1e-12)
    assert memo.memory_bytes_per_device == fig.memory_bytes == plain.memory_bytes_per_device


def test_the_planner_refuses_a_mesh_without_axes():
    """``{}`` reached the array code and failed there with numpy's raw ``ValueError`` (cannot reshape)."""
    step = sa.plan.mlp_step(batch=4, d_io=4, d_hidden=4, layers=1)
    for call in (
        lambda: sa.plan.evaluate_layout(step, {}, {}),
        lambda: sa.plan.search_layouts(step, {}),
        lambda: sa.plan.explain_layout(step, {}, {}),
        lambda: sa.plan.named_plans(_CFG, 4, {}),
        lambda: sa.nn.auto_choice(_CFG, {}, 4),
    ):
        with pytest.raises(sa.errors.MeshError, match="at least one axis"):
            call()


@pytest.mark.parametrize("limit", ["1GiB", True, [1]])
def test_a_memory_limit_that_is_not_a_number_is_refused(limit):
    """A string limit raised a raw ``TypeError`` from ``>``, a list one from hashing the auto cache key, and
    ``True`` was taken as a limit of one byte."""
    step = sa.plan.mlp_step(batch=4, d_io=4, d_hidden=4, layers=1)
    with pytest.raises(sa.errors.ArgumentError, match="memory_limit_bytes"):
        sa.plan.search_layouts(step, {"x": 2}, limit)
    with pytest.raises(sa.errors.ArgumentError, match="memory_limit_bytes"):
        sa.nn.auto_choice(_CFG, {"x": 2}, 4, memory_limit_bytes=limit)
    with pytest.raises(sa.errors.ArgumentError, match="top_k"):
        sa.nn.auto_choice(_CFG, {"x": 2}, 4, top_k=[1])


@pytest.mark.parametrize("dims", ["batch", 3])
def test_dims_must_be_a_collection_of_names(dims):
    """``dims="batch"`` searched the dims ``b``, ``a``, ``t``, ... (none): only the replicated layout; ``3`` raised a
    raw ``TypeError``."""
    step = sa.plan.mlp_step(batch=4, d_io=4, d_hidden=4, layers=1)
    with pytest.raises(sa.errors.ArgumentError, match="dims"):
        sa.plan.search_layouts(step, {"x": 2}, dims=dims)
    with pytest.raises(sa.errors.ArgumentError, match="dims"):
        sa.plan.candidates(step, {"x": 2}, dims)


def test_the_no_fit_message_tells_the_limit_from_the_least_memory():
    """Both were printed as ``0.000 GiB`` for any limit under half a MiB: as if the least memory fit the limit."""
    step = sa.plan.mlp_step(batch=4, d_io=4, d_hidden=4, layers=1)
    least = min(p.memory_bytes_per_device for p in sa.plan.search_layouts(step, {"x": 2}, top_k=50))
    with pytest.raises(sa.errors.ArgumentError) as e:
        sa.plan.search_layouts(step, {"x": 2}, 16)
    text = str(e.value)
    assert "limit of 16 bytes" in text and f"least memory is {least:,} bytes" in text and "0.000" not in text


def test_transformer_step_needs_a_config():
    """A dict for the config raised a raw ``AttributeError`` (``n_layers``), also from ``explain_transformer``."""
    with pytest.raises(sa.errors.DTypeError, match="TransformerConfig"):
        sa.plan.transformer_step({"vocab": 8}, 4)
    with pytest.raises(sa.errors.DTypeError, match="TransformerConfig"):
        sa.plan.explain_transformer({"vocab": 8}, 4, {"x": 2}, {})


def test_save_rules_checks_the_rules_and_the_context(tmp_path):
    """A rule of a number raised a raw ``TypeError`` (``list(3)``), a context not JSON-ready another."""
    path = tmp_path / "rules.json"
    with pytest.raises(sa.errors.ArgumentError, match="rule"):
        sa.nn.save_rules(path, {"batch": 3})
    with pytest.raises(sa.errors.ArgumentError, match="JSON"):
        sa.nn.save_rules(path, {"batch": "x"}, mesh=object())
    assert not path.exists()
    sa.nn.save_rules(path, {"batch": "rows", "d_ff": ("cols", "rows"), "heads": None})
    assert json.loads(path.read_text())["rules"] == {"batch": ["rows"], "d_ff": ["cols", "rows"], "heads": []}
    assert sa.nn.load_rules(path) == {"batch": ("rows",), "d_ff": ("cols", "rows"), "heads": ()}
