"""Misuse of the core API: creation, conversion, autograd, show, the planner and hardware profiles."""

from __future__ import annotations

import numpy as np

import shardarray as sa
from misuse import Case

M = sa.Mesh({"row": 2, "col": 2})
X = sa.ones(M, {"a": 4, "b": 6}, layout={"a": "row"})
W = sa.asarray(np.arange(4.0), dims=("io",), mesh=M, layout={"io": "col"})


def _grad_of(fn, params=W):
    return lambda: sa.grad(fn)(params)


def _pullback_twice():
    _, pullback = sa.vjp(lambda w: w * 2.0, W)
    pullback(sa.ones(M, {"io": 4}, dtype="float64"))
    pullback(sa.ones(M, {"io": 4}, dtype="float64"))


STEP = sa.plan.mlp_step(batch=8, d_io=4, d_hidden=8)

CASES = [
    # creation
    Case("zeros-sizes-list", lambda: sa.zeros(M, [4, 6]), sa.DimensionError, ("[4, 6]",), ("{dim: size}",)),
    Case("zeros-negative-size", lambda: sa.zeros(M, {"a": -1}), sa.DimensionError, ("'a'", "-1"), (">= 0",)),
    Case("zeros-float-size", lambda: sa.zeros(M, {"a": 2.5}), sa.DimensionError, ("'a'", "2.5"), ("integer",)),
    Case("zeros-unknown-dtype", lambda: sa.zeros(M, {"a": 2}, dtype="float128x"), sa.DTypeError,
         ("'float128x'",), ("float32",)),
    Case("zeros-object-dtype", lambda: sa.zeros(M, {"a": 2}, dtype=object), sa.DTypeError, ("object",), ("float32",)),
    Case("zeros-layout-string", lambda: sa.zeros(M, {"a": 2}, layout="row"), sa.LayoutError, ("'row'",), ("{dim: axis",)),
    Case("zeros-mesh-dict", lambda: sa.zeros({"row": 2}, {"a": 2}), sa.MeshError, ("dict",), ("sa.Mesh({'row': 2})",)),
    Case("full-array-fill", lambda: sa.full(M, {"a": 2}, [1.0, 2.0]), sa.DTypeError, ("fill_value", "(2,)"),
         ("sa.asarray",)),
    Case("asarray-no-dims", lambda: sa.asarray(np.ones((2, 3)), mesh=M), sa.DimensionError, ("(2, 3)",), ("dims=",)),
    Case("asarray-no-mesh", lambda: sa.asarray(np.ones((2, 3)), dims=("a", "b")), sa.MeshError, ("None",),
         ("sa.Mesh(",)),
    Case("asarray-dims-count", lambda: sa.asarray(np.ones((2, 3)), dims=("a",), mesh=M), sa.DimensionError,
         ("('a',)", "(2, 3)"), ()),
    Case("asarray-strings", lambda: sa.asarray(np.array(["x", "y"]), dims=("a",), mesh=M), sa.DTypeError,
         ("str",), ("float32",)),
    # (asarray of a ShardArray onto another mesh now reshards: its misuse is asarray-other-mesh-bad-layout in
    # misuse_reshard.py)
    Case("asarray-shardarray-dims-count", lambda: sa.asarray(X, dims=("p",)), sa.DimensionError,
         ("('p',)", "{'a': 4, 'b': 6}"), ("one name per dim",)),
    Case("random-seed-string", lambda: sa.random.normal(M, {"a": 2}, seed="x"), sa.DTypeError, ("'x'",), ("integer",)),
    Case("random-normal-int-dtype", lambda: sa.random.normal(M, {"a": 2}, dtype="int32"), sa.DTypeError,
         ("'int32'",), ("float",)),
    Case("random-normal-negative-std", lambda: sa.random.normal(M, {"a": 2}, std=-1.0), sa.ArgumentError,
         ("std=-1.0",), (">= 0",)),
    # structure
    Case("rename-unknown-dim", lambda: X.rename({"zz": "q"}), sa.DimensionError, ("'zz'", "('a', 'b')"), ()),
    Case("rename-clash", lambda: X.rename({"a": "b"}), sa.DimensionError, ("'b'",), ("Rename one",)),
    Case("transpose-not-a-permutation", lambda: X.transpose("a"), sa.DimensionError, ("('a', 'b')",),
         ("name each dim once",)),
    Case("astype-unknown", lambda: X.astype("float128x"), sa.DTypeError, ("'float128x'",), ("float32",)),
    Case("broadcast-to-drops-a-dim", lambda: sa.broadcast_to(X, {"a": 4}), sa.DimensionError, ("'b'", "6"), ()),
    Case("show-numpy", lambda: sa.show(np.ones(3)), sa.DTypeError, ("ndarray", "(3,)"), ("sa.asarray",)),
    Case("stop-gradient-list", lambda: sa.stop_gradient([1.0, 2.0]), sa.DTypeError, ("list",), ("sa.asarray",)),
    # conversions
    Case("float-of-a-matrix", lambda: float(X), sa.DimensionError, ("a=4, b=6", "24 elements"), ("x.sum()",)),
    Case("bool-of-a-matrix", lambda: bool(X), sa.DimensionError, ("a=4, b=6",), ("x.sum()",)),
    Case("index-with-a-float-array", lambda: [1, 2][sa.ones(M, {})], sa.DTypeError, ("float32",), ("int(x)",)),
    Case("sum-position-out-of-range", lambda: X.sum(2), sa.DimensionError, ("position 2", "('a', 'b')"),
         ("dim name",)),
    Case("sum-unknown-dim", lambda: X.sum("zz"), sa.DimensionError, ("'zz'", "('a', 'b')"), ()),
    Case("sum-float-axis", lambda: X.sum(1.5), sa.DimensionError, ("1.5", "('a', 'b')"), ("dim name",)),
    Case("np-sum-out", lambda: np.sum(X, out=np.empty(())), sa.DTypeError, ("out=",), ("returned array",)),
    Case("numpy-on-meta", lambda: sa.ones(sa.Mesh({"a": 2}, backend="meta"), {"q": 2}).numpy(), sa.BackendError,
         ("meta",), ()),
    # autograd
    Case("grad-numpy-inside", _grad_of(lambda w: w.sum() * float(w.numpy()[0])), sa.TapeError,
         ("numpy()", "io=4"), ("sa.stop_gradient",)),
    Case("grad-float-inside", _grad_of(lambda w: w.sum() * float(w.sum())), sa.TapeError, ("float(x)",),
         ("sa.stop_gradient", "has_aux=True")),
    Case("grad-bool-inside", _grad_of(lambda w: w.sum() if bool(w.max()) else w.sum()), sa.TapeError,
         ("bool(x)",), ("sa.stop_gradient",)),
    Case("grad-not-a-scalar", _grad_of(lambda w: w * 2.0), sa.DimensionError, ("{'io': 4}",), ("loss.sum()",)),
    Case("grad-returns-a-float", _grad_of(lambda w: 3.0), sa.DTypeError, ("float",), ("has_aux=True",)),
    Case("grad-aux-not-a-pair", lambda: sa.grad(lambda w: w.sum(), has_aux=True)(W), sa.DTypeError,
         ("ShardArray",), ("(loss, aux)",)),
    Case("grad-int-param", lambda: sa.grad(lambda w: w.sum())(sa.ones(M, {"a": 2}, dtype="int64")), sa.DTypeError,
         ("int64", "{'a': 2}"), ("later arguments",)),
    Case("grad-numpy-param", lambda: sa.grad(lambda w: w[0].sum())([np.ones(3)]), sa.DTypeError,
         ("params[0]", "ndarray"), ("ShardArrays",)),
    Case("grad-nested", _grad_of(lambda w: sa.grad(lambda v: v.sum())(w).sum()), sa.ShardArrayError,
         ("inside value_and_grad",), ("outside",)),
    Case("vjp-cotangent-wrong-size", lambda: sa.vjp(lambda w: w * 2.0, W)[1](sa.ones(M, {"io": 3})),
         sa.DimensionError, ("{'io': 4}", "{'io': 3}"), ()),
    Case("vjp-cotangent-int", lambda: sa.vjp(lambda w: w * 2.0, W)[1](sa.ones(M, {"io": 4}, dtype="int32")),
         sa.DTypeError, ("int32",), (".astype('float64')",)),
    Case("vjp-pullback-twice", _pullback_twice, sa.ShardArrayError, ("already called",), ("once",)),
    # einsum algorithms
    Case("einsum-summa-one-operand", lambda: sa.einsum(X, algorithm="summa"), sa.LayoutError,
         ("algorithm='summa'", "got 1"), ("algorithm='auto'",)),
    Case("einsum-unknown-algorithm", lambda: sa.einsum(X, X, algorithm="cannon"), sa.LayoutError,
         ("'cannon'",), ("'summa'",)),
    # planner and hardware
    Case("plan-step-not-callable", lambda: sa.plan.evaluate_layout(3, {"rows": 2}, {}), sa.DTypeError,
         ("int",), ("sa.plan.mlp_step",)),
    Case("plan-mesh-not-a-dict", lambda: sa.plan.evaluate_layout(STEP, [2, 2], {}), sa.MeshError, ("[2, 2]",),
         ("{'rows': 2, 'cols': 4}",)),
    Case("plan-unknown-hardware", lambda: sa.plan.evaluate_layout(STEP, {"rows": 2}, {}, hardware="tpu9"),
         sa.ArgumentError, ("'tpu9'",), ("a100",)),
    Case("plan-rule-unknown-axis", lambda: sa.plan.evaluate_layout(STEP, {"rows": 2}, {"batch": "zz"}),
         sa.LayoutError, ("'zz'",), ("('rows',)",)),
    Case("plan-search-top-k", lambda: sa.plan.search_layouts(STEP, {"rows": 2}, top_k=0), sa.ArgumentError,
         ("top_k",), (">= 1",)),
    Case("plan-search-negative-memory", lambda: sa.plan.search_layouts(STEP, {"rows": 2}, memory_limit_bytes=-5),
         sa.ArgumentError, ("-5",), ("positive",)),
    Case("plan-search-nothing-fits", lambda: sa.plan.search_layouts(STEP, {"rows": 2}, memory_limit_bytes=5),
         sa.ArgumentError, ("memory limit",), ("Raise memory_limit_bytes",)),
    Case("plan-mlp-step-negative", lambda: sa.plan.mlp_step(-8, 16, 32), sa.DimensionError, ("batch=-8",),
         ("positive integer",)),
    Case("profile-on-update-not-callable", lambda: sa.profile(on_update=3), sa.DTypeError, ("int",),
         ("function",)),
]

CASES += [
    Case("grad-of-a-number", lambda: sa.grad(3), sa.DTypeError, ("int",), ("sa.grad(loss_fn)",)),
    Case("value-and-grad-of-none", lambda: sa.value_and_grad(None), sa.DTypeError, ("NoneType",),
         ("sa.value_and_grad(loss_fn)",)),
    Case("vjp-of-a-string", lambda: sa.vjp("f", W), sa.DTypeError, ("str",), ("sa.vjp(loss_fn)",)),
    Case("vjp-returns-a-tuple", lambda: sa.vjp(lambda w: (w, w), W), sa.DTypeError, ("tuple",), ("floating-point",)),
    Case("grad-params-none", lambda: sa.grad(lambda p: W.sum())(None), sa.DTypeError, ("params", "NoneType"),
         ("separate arguments",)),
    Case("take-float-ids", lambda: sa.take(X, sa.ones(M, {"q": 2}), "a"), sa.DTypeError, ("{'q': 2}", "float32"),
         ('astype("int64")',)),
    Case("add-a-string", lambda: X + "a", sa.DTypeError, ("str",), ("sa.asarray",)),
    Case("relayout-axis-twice", lambda: X.relayout({"a": "row", "b": "row"}), sa.LayoutError,
         ("'a'", "'b'", "'row'"), ()),
    Case("rename-a-list", lambda: X.rename(["a", "b"]), sa.DimensionError, ("['a', 'b']",), ("{old: new}",)),
]

CASES += [
    Case("dim-name-with-a-space", lambda: sa.zeros(M, {"a b": 2}), sa.DimensionError, ("'a b'",), ("'a_b'",)),
    Case("dim-name-with-an-arrow", lambda: sa.zeros(M, {"a->b": 2}), sa.DimensionError, ("'a->b'",), ("'a_b'",)),
    Case("layout-unknown-dim", lambda: sa.zeros(M, {"a": 2}, layout={"zz": "row"}), sa.LayoutError,
         ("'zz'", "('a',)"), ("name only the array's dims",)),
]
