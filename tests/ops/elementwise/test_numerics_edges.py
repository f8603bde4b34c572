"""Numerics and op edges: nothing silently wrong (inf/NaN, low precision, 0-d ids, dtypes, complex).

Every value is compared with NumPy/SciPy on the gathered result, on the test
meshes, with the interesting dim split and unsplit.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.special as ss

import shardarray as sa
import shardarray.array_api as xp
from shardarray.array import as_kind
from shardarray.backend import cuda_kernels
from shardarray.ops.fused import dispatch as fused
from shardarray.ops.elementwise import arithmetic as ew
from shardarray.ops.indexing import take as indexing
from helpers import HYPOTHESIS_SHAPES

MESHES = [pytest.param(s, id="x".join(f"{k}{v}" for k, v in s.items())) for s in HYPOTHESIS_SHAPES]
INF = np.inf


def layouts_of(mesh, dim):
    """``dim`` unsplit, split over the first axis, and over every axis (major first)."""
    names = mesh.axis_names
    return [{}, {dim: names[0]}, {dim: names}]


# ------------------------------------------------------------------ 1. take selects, never multiplies
def _nonfinite_table(n_vocab=7):
    """Rows of logits with +-inf and NaN at every block start of a split vocab."""
    a = np.arange(4 * n_vocab, dtype=np.float64).reshape(4, n_vocab) / 10.0
    a[0, :] = -INF
    a[0, 3] = 1.0
    a[1, ::2] = INF
    a[2, ::3] = np.nan
    a[3, 1::2] = -INF
    return a


@pytest.mark.parametrize("shape", MESHES)
def test_take_ignores_nonfinite_entries_of_other_blocks(shape):
    mesh = sa.Mesh(shape)
    a = _nonfinite_table()
    ids = np.array([3, 1, 4, 2])                 # all finite entries
    for lay in layouts_of(mesh, "v"):
        x = sa.asarray(a, dims=("b", "v"), mesh=mesh, layout=lay)
        t = sa.asarray(ids, dims=("b",), mesh=mesh)
        got = sa.take(x, t, "v").numpy()
        np.testing.assert_array_equal(got, a[np.arange(4), ids])
        # a table lookup (ids with their own dim) too
        e = sa.take(x, sa.asarray(np.array([3, 5]), dims=("s",), mesh=mesh), "v").numpy()
        np.testing.assert_array_equal(e, a[:, [3, 5]].T)


@pytest.mark.parametrize("shape", MESHES)
def test_cross_entropy_of_masked_logits_is_exact(shape):
    mesh = sa.Mesh(shape)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((5, 9))
    a[:, ::2] = -INF                             # masked logits, including every block's first entry
    targets = np.array([1, 3, 5, 7, 1])
    expect = ss.logsumexp(a, axis=1) - a[np.arange(5), targets]
    grad_expect = (ss.softmax(a, axis=1) - np.eye(9)[targets]) / 5
    for lay in layouts_of(mesh, "vocab"):
        x = sa.asarray(a, dims=("batch", "vocab"), mesh=mesh, layout=lay)
        t = sa.asarray(targets, dims=("batch",), mesh=mesh)
        np.testing.assert_allclose(sa.nn.cross_entropy(x, t).numpy(), expect, rtol=1e-12)
        loss, g = sa.value_and_grad(lambda x: sa.nn.cross_entropy(x, t).mean())(x)
        assert np.isfinite(g.numpy()).all()
        np.testing.assert_allclose(g.numpy(), grad_expect, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("shape", MESHES)
def test_take_vjp_with_infinite_cotangent_touches_only_its_row(shape):
    mesh = sa.Mesh(shape)
    a = np.zeros((6, 2))
    ids = np.array([4, 1])
    cot = np.array([[INF, 1.0], [2.0, 3.0]])
    expect = np.zeros((6, 2))
    np.add.at(expect, ids, cot)
    for lay in layouts_of(mesh, "v"):
        x = sa.asarray(a, dims=("v", "d"), mesh=mesh, layout=lay)
        t = sa.asarray(ids, dims=("s",), mesh=mesh)
        _, pullback = sa.vjp(lambda x: sa.take(x, t, "v"), x)
        g = pullback(sa.asarray(cot, dims=("s", "d"), mesh=mesh)).numpy()
        np.testing.assert_array_equal(g, expect)


# ------------------------------------------------------------------ 2. softmax, logsumexp: SciPy's conventions
ROWS = np.array([
    [0.5, -1.0, 2.0, 0.0, 1.5, -0.5, 3.0],
    [INF, 1.0, 2.0, 0.0, 1.0, 0.0, 1.0],        # +inf
    [1.0, 2.0, INF, 0.0, INF, 0.0, 1.0],        # two +inf
    [-INF, 1.0, -INF, 0.0, 2.0, -INF, -INF],    # some -inf
    [-INF] * 7,                                 # all -inf
    [0.0, np.nan, 1.0, 2.0, 0.0, 1.0, 0.0],     # NaN
    [INF, -INF, 0.0, 0.0, 1.0, 1.0, 0.0],       # +inf and -inf
    [1000.0, 999.0, -1000.0, 0.0, 0.0, 0.0, 0.0],
])
FINITE_MAX = [0, 3, 7]                          # rows whose SciPy/JAX gradients are finite


@pytest.mark.parametrize("shape", MESHES)
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_logsumexp_softmax_cross_entropy_follow_scipy(shape):
    mesh = sa.Mesh(shape)
    lse = ss.logsumexp(ROWS, axis=1)
    sm = ss.softmax(ROWS, axis=1)
    targets = np.array([2, 1, 3, 4, 0, 2, 4, 0])
    ce = lse - ROWS[np.arange(len(ROWS)), targets]
    for lay in [*layouts_of(mesh, "v"), {"b": mesh.axis_names[0]}]:
        x = sa.asarray(ROWS, dims=("b", "v"), mesh=mesh, layout=lay)
        np.testing.assert_allclose(sa.logsumexp(x, "v").numpy(), lse, rtol=1e-12)
        np.testing.assert_allclose(sa.softmax(x, "v").numpy(), sm, rtol=1e-12)
        t = sa.asarray(targets, dims=("b",), mesh=mesh)
        np.testing.assert_allclose(sa.nn.cross_entropy(x, t, "v").numpy(), ce, rtol=1e-12)


@pytest.mark.parametrize("shape", MESHES)
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_gradients_are_finite_where_scipy_and_jax_are(shape):
    mesh = sa.Mesh(shape)
    rows = ROWS[FINITE_MAX]
    r = np.random.default_rng(1).standard_normal(rows.shape)
    sm = ss.softmax(rows, axis=1)
    for lay in layouts_of(mesh, "v"):
        x = sa.asarray(rows, dims=("b", "v"), mesh=mesh, layout=lay)
        w = sa.asarray(r, dims=("b", "v"), mesh=mesh)
        g_lse = sa.grad(lambda x: sa.logsumexp(x, "v").sum())(x).numpy()
        np.testing.assert_allclose(g_lse, sm, rtol=1e-12, atol=1e-300)
        g_sm = sa.grad(lambda x: (sa.softmax(x, "v") * w).sum())(x).numpy()
        np.testing.assert_allclose(g_sm, sm * (r - (sm * r).sum(1, keepdims=True)), rtol=1e-10, atol=1e-15)


# ------------------------------------------------------------------ 3. low-precision sums: float32 accumulation
def _f16_case():
    a = np.full((10000, 3), 3.0, np.float16)
    a[:, 1] = np.arange(10000) % 7
    return a


@pytest.mark.parametrize("shape", MESHES)
@pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")
def test_float16_sum_and_mean_round_once_on_every_layout(shape):
    mesh = sa.Mesh(shape)
    a = _f16_case()
    wide = a.astype(np.float32)
    names = mesh.axis_names
    lays = [{}, {"v": names[0]}, {"v": names}, {"b": names[0]}]
    if len(names) > 1:
        lays.append({"b": names[-1], "v": names[0]})
    for lay in lays:
        x = sa.asarray(a, dims=("v", "b"), mesh=mesh, layout=lay)
        for dims, axis in (("v", 0), (None, None), (("b", "v"), None)):
            s, m = x.sum(dims), x.mean(dims)
            assert s.dtype == np.float16 and m.dtype == np.float16
            np.testing.assert_array_equal(s.numpy(), wide.sum(axis).astype(np.float16))
            np.testing.assert_array_equal(m.numpy(), (wide.sum(axis) / (a.size if axis is None else 10000))
                                          .astype(np.float16))
        np.testing.assert_array_equal(x.sum("b").numpy(), wide.sum(1).astype(np.float16))


@pytest.mark.parametrize("shape", [{"row": 2, "col": 2}, {"all": 4}])
def test_split_float16_sum_communicates_float32(shape):
    mesh = sa.Mesh(shape)
    a = np.full((3, 30000), 3.0, np.float16)       # the sum, 90000, overflows float16; the mean does not
    x = sa.asarray(a, dims=("b", "v"), mesh=mesh, layout={"v": mesh.axis_names[-1]})
    with sa.comm_log() as log:
        m = x.mean("v").numpy()
    np.testing.assert_array_equal(m, np.full(3, 3.0, np.float16))
    reductions = [r for r in log.records if r.op in ("allreduce", "reduce_scatter")]
    assert reductions and all(r.bytes == 4 * r.elements for r in reductions)
    assert np.isinf(x.sum("v").numpy()).all()       # as NumPy: the rounded sum overflows


def test_float16_sum_gradient_flows():
    mesh = sa.Mesh({"row": 2, "col": 2})
    x = sa.asarray(np.ones((4, 6), np.float16), dims=("a", "b"), mesh=mesh, layout={"b": "col"})
    g = sa.grad(lambda x: x.mean("b").astype("float32").sum())(x)
    assert g.dtype == np.float16
    np.testing.assert_allclose(g.numpy(), np.full((4, 6), 1 / 6), rtol=1e-3)


# ------------------------------------------------------------------ 4. negative sizes
def test_one_hot_refuses_sizes_below_one():
    mesh = sa.Mesh({"row": 2, "col": 2})
    ids = sa.asarray(np.array([0, 1]), dims=("b",), mesh=mesh)
    for size in (-3, 0):
        with pytest.raises(sa.DimensionError, match=rf"'vocab'.*{size}"):
            sa.one_hot(ids, "vocab", size)
    with pytest.raises(sa.DimensionError, match="'vocab'"):
        sa.one_hot(ids, "vocab", 2.5)


# ------------------------------------------------------------------ 5. 0-d ids
@pytest.mark.parametrize("shape", MESHES)
def test_take_with_a_scalar_id_drops_the_dim(shape):
    mesh = sa.Mesh(shape)
    a = np.arange(30.0).reshape(5, 6)
    for lay in [*layouts_of(mesh, "v"), {"b": mesh.axis_names[0]}]:
        x = sa.asarray(a, dims=("v", "b"), mesh=mesh, layout=lay)
        for i in (0, 3, 4):
            got = sa.take(x, sa.asarray(np.array(i), dims=(), mesh=mesh), "v")
            assert got.dims == ("b",)
            np.testing.assert_array_equal(got.numpy(), np.take(a, i, axis=0))
        x = x.transpose("b", "v")
        got = sa.take(x, sa.asarray(np.array(2), dims=(), mesh=mesh), "v")
        np.testing.assert_array_equal(got.numpy(), np.take(a.T, 2, axis=1))
        g = sa.grad(lambda x: sa.take(x, sa.asarray(np.array(2), dims=(), mesh=mesh), "v").sum())(x)
        np.testing.assert_array_equal(g.numpy(), (np.arange(5) == 2)[None, :] * np.ones((6, 1)))
        # a 0-d id made by a reduction (its blocks are NumPy scalars, not arrays)
        top = sa.asarray(np.array([1, 4, 2]), dims=("s",), mesh=mesh, layout={"s": mesh.axis_names[-1]}).max("s")
        np.testing.assert_array_equal(sa.take(x, top, "v").numpy(), np.take(a.T, 4, axis=1))
        logits = sa.asarray(a[:, 0], dims=("v",), mesh=mesh, layout={k: v for k, v in lay.items() if k == "v"})
        ce = sa.nn.cross_entropy(logits, top, "v").numpy()
        np.testing.assert_allclose(ce, ss.logsumexp(a[:, 0]) - a[4, 0], rtol=1e-12)
        g = sa.grad(lambda l: sa.nn.cross_entropy(l, top, "v"))(logits).numpy()
        np.testing.assert_allclose(g, ss.softmax(a[:, 0]) - (np.arange(5) == 4), rtol=1e-12, atol=1e-15)


# ------------------------------------------------------------------ 6. float-only ops on bool / int
FLOAT_ONLY = {
    "exp": sa.exp, "log": sa.log, "tanh": sa.tanh, "sqrt": sa.sqrt, "gelu": sa.gelu,
    "softmax": lambda x: sa.softmax(x, "v"), "logsumexp": lambda x: sa.logsumexp(x, "v"),
}


@pytest.mark.parametrize("name", sorted(FLOAT_ONLY))
@pytest.mark.parametrize("dtype", ["bool", "int32", "uint8"])
def test_float_only_ops_refuse_bool_and_int(name, dtype):
    mesh = sa.Mesh({"row": 2, "col": 2})
    x = sa.asarray(np.array([1, 0, 1]).astype(dtype), dims=("v",), mesh=mesh, layout={"v": "col"})
    with pytest.raises(sa.DTypeError) as info:
        FLOAT_ONLY[name](x)
    msg = str(info.value)
    for word in (name, "'v'", dtype, '.astype("float32")'):
        assert word in msg, msg
    # ops defined on integers keep working
    np.testing.assert_array_equal(sa.relu(x).numpy(), np.maximum(np.array([1, 0, 1]).astype(dtype), 0))


# ------------------------------------------------------------------ 7. layers name missing dims
def test_nn_layers_name_missing_dims():
    mesh = sa.Mesh({"row": 2, "col": 2})
    x = sa.zeros(mesh, {"batch": 2, "hidden": 4}, "float64")
    one, zero = sa.ones(mesh, {"d_model": 4}, "float64"), sa.zeros(mesh, {"d_model": 4}, "float64")
    with pytest.raises(sa.DimensionError, match=r"layer_norm.*'d_model'.*'batch', 'hidden'"):
        sa.nn.layer_norm(x, one, zero)
    t = sa.zeros(mesh, {"batch": 2}, "int64")
    for fn in (sa.nn.cross_entropy, sa.nn.accuracy):
        with pytest.raises(sa.DimensionError, match=rf"{fn.__name__}.*'vocab'.*'hidden'"):
            fn(x, t)


# ------------------------------------------------------------------ 8. one device-to-host transfer per range check
class _OnDevice(np.ndarray):
    """A NumPy array standing in for a GPU buffer: every conversion to a host value is counted."""

    syncs = 0

    def __array_wrap__(self, arr, context=None, return_scalar=False):
        return np.asarray(arr).view(_OnDevice)      # results stay "on the device", even 0-d ones

    def _host(self):
        _OnDevice.syncs += 1
        return self.view(np.ndarray)

    def __int__(self):
        return int(self._host())

    def __float__(self):
        return float(self._host())

    def __index__(self):
        return int(self._host())

    def __bool__(self):
        return bool(self._host())

    def item(self, *args):
        return self._host().item(*args)

    def tolist(self):
        return self._host().tolist()


@pytest.mark.parametrize("shape", [{"row": 2, "col": 2}, {"x": 2, "y": 2, "z": 2}, {"p": 3, "q": 2}])
def test_range_check_transfers_once(shape, monkeypatch):
    """The immediate check (NumPy shards standing for device arrays; on GPUs the check is deferred instead:
    tests/ops/indexing/test_take_deferred.py)."""
    mesh = sa.Mesh(shape, backend="numpy")
    backend = mesh.backend

    def to_numpy(a):
        _OnDevice.syncs += 1
        return np.asarray(a).view(np.ndarray)

    monkeypatch.setattr(backend, "to_numpy", to_numpy)
    names = mesh.axis_names
    ids = sa.asarray(np.arange(12).reshape(4, 3) % 5, dims=("batch", "seq"), mesh=mesh,
                     layout={"batch": names[0], "seq": names[1]})
    ids = sa.ShardArray(mesh, ids.spec, ids.dtype, [s.view(_OnDevice) for s in ids.shards])
    assert len(mesh.replica_classes(ids.spec.used_axes)) >= 4
    table = sa.zeros(mesh, {"vocab": 5, "d_model": 2}, "float64", layout={"vocab": names[-1]})
    _OnDevice.syncs = 0
    indexing._check_range(ids, 5, "vocab")
    assert _OnDevice.syncs == 1
    _OnDevice.syncs = 0
    sa.take(table, ids, "vocab")
    assert _OnDevice.syncs == 1
    bad = sa.ShardArray(mesh, ids.spec, ids.dtype, [(s + 3).view(_OnDevice) for s in ids.shards])
    _OnDevice.syncs = 0
    with pytest.raises(sa.DimensionError, match=r"\[0, 5\).*from 3 to 7"):
        indexing._check_range(bad, 5, "vocab")
    assert _OnDevice.syncs == 1


def test_ids_made_from_host_data_are_checked_on_the_host(monkeypatch):
    """Tokens and targets from sa.asarray carry their range: a training step's lookups transfer nothing (the
    immediate check of NumPy shards; on GPUs derived ids are checked on the devices: test_take_deferred.py)."""
    mesh = sa.Mesh({"rows": 2, "cols": 2}, backend="numpy", rules=sa.nn.strategy_rules("mesh2d", {"rows": 2, "cols": 2}))
    syncs = []
    monkeypatch.setattr(mesh.backend, "to_numpy", lambda a: syncs.append(1) or np.asarray(a))
    cfg = sa.nn.TransformerConfig(vocab=8, d_model=8, heads=2, d_kv=4, d_ff=16, n_layers=1, seq_len=4)
    params = sa.nn.init_transformer(cfg, mesh, seed=0)
    seqs = np.random.default_rng(0).integers(0, cfg.vocab, size=(4, cfg.seq_len + 1))
    tokens = sa.asarray(seqs[:, :-1], dims=("batch", "seq"), mesh=mesh)
    targets = sa.asarray(seqs[:, 1:], dims=("batch", "seq"), mesh=mesh)
    assert tokens.host_range == (int(seqs[:, :-1].min()), int(seqs[:, :-1].max()))
    sa.value_and_grad(sa.nn.transformer_loss)(params, tokens, targets, cfg)
    assert syncs == []
    with pytest.raises(sa.DimensionError, match=r"\[0, 8\).*from 0 to 9"):
        sa.nn.transformer_loss(params, sa.asarray(seqs[:, :-1] + (seqs[:, :-1] == 7) * 2, dims=("batch", "seq"),
                                                  mesh=mesh), targets, cfg)
    assert syncs == []
    moved = tokens.relayout({"seq": "cols"})  # a derived array carries no range: checked on the device, once
    assert moved.host_range is None
    sa.take(params["embed"], moved, "vocab")
    assert len(syncs) == 1


# ------------------------------------------------------------------ 9. where keeps x's dim order: attention's softmax is fused
def test_where_result_follows_the_first_value_operand():
    mesh = sa.Mesh({"row": 2, "col": 2})
    c = sa.asarray(np.tril(np.ones((3, 4), bool)), dims=("s", "k"), mesh=mesh)
    x = sa.asarray(np.arange(24.0).reshape(2, 3, 4), dims=("b", "s", "k"), mesh=mesh, layout={"b": "row"})
    y = sa.asarray(np.arange(4.0), dims=("k",), mesh=mesh, layout={"k": "col"})
    out = sa.where(c, x, -1.0)
    assert out.dims == ("b", "s", "k") and out.layout == {"b": ("row",)}
    np.testing.assert_array_equal(out.numpy(), np.where(np.tril(np.ones((3, 4), bool)), x.numpy(), -1.0))
    out = sa.where(c, 0.0, y)
    assert out.dims == ("k", "s")
    np.testing.assert_array_equal(out.numpy(), np.where(np.tril(np.ones((3, 4), bool)), 0.0, y.numpy()).T)
    assert sa.where(c, 1.0, 0.0).dims == ("s", "k")


def test_attention_softmax_takes_the_fused_kernel(monkeypatch):
    mesh = sa.Mesh({"rows": 2, "cols": 2})
    cfg = sa.nn.TransformerConfig(vocab=16, d_model=8, heads=2, d_kv=4, d_ff=16, n_layers=1, seq_len=4)
    params = sa.nn.init_transformer(cfg, mesh, strategy="mesh2d", seed=0, dtype="float64")
    x = sa.random.normal(mesh, {"batch": 2, "seq": 4, "d_model": 8}, layout={"batch": "rows"}, dtype="float64")
    plain = sa.nn.attention(x, params, "layer0.attn.").numpy()
    calls = []

    def causal_softmax_rows(xp, a, scale):  # what kernels/softmax.cu's causal_softmax_fwd computes
        calls.append(a.shape)
        n = a.shape[-1]
        s = xp.where(xp.tril(xp.ones((n, n), dtype=bool)), scale * a, -xp.inf)  # on the shards' own backend
        e = xp.exp(s - s.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    monkeypatch.setattr(fused, "kernels_for", lambda x, name: name == "softmax")
    monkeypatch.setattr(cuda_kernels, "causal_softmax_rows", causal_softmax_rows)
    fast = sa.nn.attention(x, params, "layer0.attn.").numpy()
    assert calls and all(s[-1] == 4 for s in calls)
    np.testing.assert_allclose(fast, plain, rtol=1e-12)


# ------------------------------------------------------------------ 10. complex numbers
@pytest.mark.parametrize("shape", MESHES)
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_ops_match_numpy(shape, dtype):
    mesh = sa.Mesh(shape)
    rng = np.random.default_rng(2)
    a = (rng.standard_normal((5, 3)) + 1j * rng.standard_normal((5, 3))).astype(dtype)
    w = (rng.standard_normal((3, 4)) - 2j * rng.standard_normal((3, 4))).astype(dtype)
    tol = 1e-5 if dtype == "complex64" else 1e-12
    names = mesh.axis_names
    for lay in [{}, {"m": names[0]}, {"k": names[-1]}, {"m": names[0], "k": names[-1]} if len(names) > 1 else {}]:
        x = sa.asarray(a, dims=("m", "k"), mesh=mesh, layout=lay)
        y = sa.asarray(w, dims=("k", "n"), mesh=mesh, layout={"n": names[0]})
        assert x.dtype == np.dtype(dtype)
        np.testing.assert_allclose((x * 2 + x * x - 1j).numpy(), a * 2 + a * a - 1j, rtol=tol)
        np.testing.assert_allclose((x / (x + 3)).numpy(), a / (a + 3), rtol=tol)
        np.testing.assert_allclose(sa.exp(x).numpy(), np.exp(a), rtol=tol)
        np.testing.assert_allclose(x.sum("k").numpy(), a.sum(1), rtol=tol)
        np.testing.assert_allclose(x.mean().numpy(), a.mean(), rtol=tol)
        np.testing.assert_allclose(sa.einsum("m k, k n -> m n", x, y).numpy(), a @ w, rtol=tol)
        np.testing.assert_array_equal(x.relayout({"k": names[0]}).numpy(), a)
        ids = sa.asarray(np.array([2, 0, 1]), dims=("s",), mesh=mesh)
        np.testing.assert_array_equal(sa.take(x, ids, "k").numpy(), a[:, [2, 0, 1]].T)
        np.testing.assert_array_equal((x == x).numpy(), np.ones((5, 3), bool))
    z = sa.zeros(mesh, {"a": 3}, dtype) + sa.full(mesh, {"a": 3}, 2j, dtype)
    np.testing.assert_array_equal(z.numpy(), np.full(3, 2j, dtype))
    r = sa.asarray(np.ones(3, np.float32), dims=("a",), mesh=mesh) + 1j
    assert r.dtype == np.complex64 and r.numpy()[0] == 1 + 1j


@pytest.mark.parametrize("shape", [{"row": 2, "col": 2}, {"p": 3, "q": 2}])
def test_complex_parts_match_numpy(shape):
    mesh = sa.Mesh(shape)
    a = np.array([[1 + 2j, -3j, 4.0], [0.5 - 0.5j, 2.0, -1 + 1j]], np.complex64)
    x = sa.asarray(a, dims=("m", "k"), mesh=mesh, layout={"k": mesh.axis_names[-1]})
    for fn, ref in ((ew.real, np.real), (ew.imag, np.imag), (ew.conj, np.conj), (ew.abs, np.abs)):
        got = fn(x)
        assert got.dtype == ref(a).dtype
        np.testing.assert_allclose(got.numpy(), ref(a), rtol=1e-6)
    r = sa.asarray(a.real.astype(np.float64), dims=("m", "k"), mesh=mesh)
    assert ew.real(r) is r and ew.conj(r) is r
    np.testing.assert_array_equal(ew.imag(r).numpy(), np.zeros((2, 3)))
    g = sa.grad(lambda r: ew.abs(r).sum())(r).numpy()
    np.testing.assert_array_equal(g, np.sign(a.real))


def test_complex_on_meta_backend():
    mesh = sa.Mesh({"row": 2, "col": 2}, backend="meta")
    x = sa.zeros(mesh, {"m": 4, "k": 6}, "complex64", layout={"k": "col"})
    y = sa.zeros(mesh, {"k": 6, "n": 2}, "complex64", layout={"k": "col"})
    out = sa.einsum(x, y, out=("m", "n")) * 2 + 1j
    assert out.dtype == np.complex64 and out.shape == (4, 2)
    assert x.sum("k").dtype == np.complex64
    assert ew.real(x).dtype == np.float32 and ew.abs(x).dtype == np.float32 and ew.imag(x).shape == (4, 6)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # (NumPy's own comparisons of the NaN on the host)
def test_complex_orderings_in_numpys_order_and_gradients_refused():
    """The elementwise orderings of complex values follow NumPy's order (lexicographic; test_fuzz10_complex_compare),
    as the reductions and sorts do (tests/test_fuzz9_complex_order.py); softmax and relu of complex values and
    gradients in complex parameters are refused (typed)."""
    mesh = sa.Mesh({"row": 2, "col": 2})
    a = np.array([1 + 1j, 2.0, complex(1, np.nan)])
    x = sa.asarray(a, dims=("v",), mesh=mesh, layout={"v": "col"})
    np.testing.assert_array_equal(x.max("v").numpy(), np.max(a))  # (the NaN propagates)
    p = as_kind(x, xp.Array)
    np.testing.assert_array_equal(xp.less(p, 1.5).numpy(), np.less(a, 1.5))
    np.testing.assert_array_equal(np.greater_equal(p, 1 + 1j).numpy(), np.greater_equal(a, 1 + 1j))
    np.testing.assert_array_equal(xp.maximum(p, 1.5 + 0j).numpy(), np.maximum(a, 1.5 + 0j))
    np.testing.assert_array_equal(sa.clip(x, 1.5, 1.5 + 1j).numpy(), np.clip(a, 1.5, 1.5 + 1j))
    np.testing.assert_array_equal((x < 1.5).numpy(), np.less(a, 1.5))
    np.testing.assert_array_equal((p > p).numpy(), np.zeros(3, bool))
    np.testing.assert_array_equal(sa.minimum(x, x).numpy(), a)
    for fn, name in ((lambda: sa.softmax(x, "v"), "softmax"), (lambda: sa.relu(x), "relu")):
        with pytest.raises(sa.DTypeError, match=rf"{name}.*complex128"):
            fn()
    with pytest.raises(sa.DTypeError, match="complex128"):
        sa.value_and_grad(lambda x: (x * x).sum())(x)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "bfloat16"])
def test_gelu_and_its_gradient_saturate_without_nan(dtype):
    """Where |x| is large, x^3 overflows (float16 from 256 on): GELU is x or 0 and its derivative 1 or 0,
    never NaN (inf * (1 - tanh^2) was NaN in the gradient), and no overflow warning escapes."""
    big = {"float16": 6e4, "bfloat16": 1e30}.get(dtype, 1e20)
    host = np.array([-big, -300.0, -30.0, 1.0, 30.0, 300.0, big], dtype=np.float64)
    x = sa.asarray(host.astype(dtype), dims=("v",), mesh=sa.Mesh({"x": 2}))
    with np.errstate(all="raise"):
        y = sa.gelu(x).numpy().astype(np.float64)
        g = sa.grad(lambda x: sa.gelu(x).astype("float64").sum())(x).numpy().astype(np.float64)
    xs = host.astype(dtype).astype(np.float64)
    np.testing.assert_array_equal(y[[0, 1, 2, 4, 5, 6]], [0, 0, 0, *xs[[4, 5, 6]]])
    np.testing.assert_array_equal(g[[0, 1, 2, 4, 5, 6]], [0, 0, 0, 1, 1, 1])
    assert abs(g[3] - 1.0829641) < 1e-2 and np.isfinite(g).all()


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("layout", [{}, {"v": "col"}])
def test_cross_entropy_of_16_bit_logits_is_computed_in_float32(dtype, layout):
    """A confident row: in float16 logsumexp(x) - x[t] rounded to 0 (and the target's gradient with it), where
    the fused kernels compute in float32 and round once; every path does so now (split vocab: the array path)."""
    mesh = sa.Mesh({"row": 2, "col": 2})
    host = np.array([[0.0, 0.0, 8.0, 0.0, 2.0], [1.0, -3.0, 0.5, 0.0, 0.0]])
    x = sa.asarray(host.astype(dtype), dims=("b", "v"), mesh=mesh, layout=layout)
    t = sa.asarray(np.array([2, 0]), dims=("b",), mesh=mesh)
    loss, grad = sa.value_and_grad(lambda x: sa.nn.cross_entropy(x, t, dim="v").astype("float32").sum())(x)
    xs = host.astype(dtype).astype(np.float64)
    lse = np.log(np.exp(xs).sum(-1))
    want = (lse - xs[[0, 1], [2, 0]]).astype(dtype).astype(np.float64)
    assert float(loss) == pytest.approx(want.sum(), rel=1e-3)
    soft = np.exp(xs - lse[:, None])
    soft[[0, 1], [2, 0]] -= 1
    np.testing.assert_allclose(grad.numpy().astype(np.float64), soft, rtol=2e-2, atol=1e-4)
