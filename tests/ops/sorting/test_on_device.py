"""sort, argsort, unique, top_k, searchsorted and their VJPs keep every shard on the mesh's backend and read
only their counts to the host.

Under ``--backend=cupy`` the meshes hold CuPy shards (the strict stand-in of ``tests/support/strict_cupy.py``
without a GPU), where a NumPy function on a shard, or a NumPy array among a CuPy function's operands, fails.
These tests check what the others do not: every shard of every result is the backend's array (no NumPy
shard inside a CuPy array), the host reads (``backend.to_numpy``: a device sync each on a GPU) are the
counts the docstrings name and nothing else, and a mesh with one GPU per device and NCCL collectives (both
faked) gives NumPy's values.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradcheck import check_grad
from helpers import HYPOTHESIS_SHAPES, host, is_shard, rand

import shardarray as sa
from shardarray.ops.sorting import samplesort


def _arrays(result):
    """The ShardArrays in an op's result (an array, or a tuple of them)."""
    return [r for r in (result if isinstance(result, tuple) else (result,)) if isinstance(r, sa.ShardArray)]


def _ops(mesh):
    """name -> a call of each sorting op on data split over every axis of ``mesh`` (sample sort where it can)."""
    axes = tuple(mesh.axis_names)
    rng = np.random.default_rng(0)
    a = rng.integers(-4, 5, 23).astype(float)
    a[[2, 9]] = np.nan
    x = sa.asarray(a, dims=("s",), mesh=mesh, layout={"s": axes})
    m = sa.asarray(rng.integers(0, 5, (3, 10)), dims=("b", "s"), mesh=mesh, layout={"s": axes})
    c = sa.asarray((a[:20] + 1j * a[3:]).reshape(4, 5), dims=("b", "s"), mesh=mesh, layout={"s": axes[-1:]})
    return {
        "sort": lambda: sa.sort(x, "s"),
        "argsort": lambda: sa.argsort(x, "s", descending=True),
        "sort rows": lambda: sa.argsort(m.astype("float32"), "s"),
        "unique_all": lambda: sa.unique_all(m),
        "unique_all complex": lambda: sa.unique_all(c),
        "unique replicated x": lambda: sa.unique_counts(x.relayout({"s": None})),
        "np.unique": lambda: np.unique(x, return_index=True, return_inverse=True, return_counts=True),
        "top_k": lambda: sa.top_k(m, 3, "s"),
        "searchsorted": lambda: sa.searchsorted(sa.sort(x, "s"), m),
        "sort vjp": lambda: sa.grad(lambda y: (sa.sort(y, "s") * y).sum())(sa.asarray(np.nan_to_num(a), dims=("s",),
                                                                                    mesh=mesh, layout={"s": axes})),
        "top_k vjp": lambda: sa.grad(lambda y: (sa.top_k(y, 3, "s")[0] ** 2).sum())(m.astype("float64")),
    }


@pytest.mark.parametrize("shape", HYPOTHESIS_SHAPES, ids=str)
def test_every_result_shard_is_the_backends_array(shape):
    mesh = sa.Mesh(shape)
    for name, op in _ops(mesh).items():
        for r in _arrays(op()):
            kinds = {type(s).__name__ for s in r.shards if not is_shard(s, mesh)}
            assert not kinds, f"{name}: shards of type {kinds} on a {mesh.backend.name} mesh"


def _count_reads(monkeypatch, mesh):
    """The sizes of the arrays ``mesh.backend.to_numpy`` reads from now on."""
    reads: list[int] = []
    read = mesh.backend.to_numpy

    def counting(a):
        reads.append(int(a.size))
        return read(a)

    monkeypatch.setattr(mesh.backend, "to_numpy", counting)
    return reads


@pytest.mark.parametrize("shape", [{"all": 4}, {"x": 2, "y": 2, "z": 2}, {"p": 3, "q": 2}], ids=str)
def test_host_reads_are_the_counts_only(monkeypatch, shape):
    """Sample sort: per device the p - 1 cuts and the p gathered lengths; unique: p cuts and u, then p lengths
    (+ p + 1 sender bounds for the inverse); top_k, searchsorted and the VJPs: nothing."""
    mesh = sa.Mesh(shape)
    p = mesh.size
    axes = tuple(shape)
    a = np.random.default_rng(1).standard_normal(300)
    x = sa.asarray(a, dims=("s",), mesh=mesh, layout={"s": axes})
    m = sa.asarray(np.random.default_rng(2).integers(0, 40, (4, 50)), dims=("b", "s"), mesh=mesh, layout={"s": axes})
    reads = _count_reads(monkeypatch, mesh)
    y = sa.sort(x, "s")
    assert len(reads) <= 2 * p and max(reads) <= p  # at most 2 reads a device (replicas share the gathered one)
    assert sorted(set(reads)) == [p - 1, p]
    reads.clear()
    sa.unique_inverse(m)
    assert len(reads) <= 2 * p and max(reads) <= 2 * p + 1
    reads.clear()
    sa.top_k(m, 5, "s")
    sa.searchsorted(y, m)
    sa.grad(lambda v: (sa.top_k(v, 5, "s")[0] ** 2).sum())(m.astype("float64"))
    assert reads == []
    monkeypatch.undo()
    np.testing.assert_array_equal(y.numpy(), np.sort(a))


@pytest.mark.parametrize("shape", [{"row": 2, "col": 2}, {"all": 4}, {"x": 2, "y": 2, "z": 2}, {"p": 3, "q": 2}],
                         ids=str)
@pytest.mark.parametrize("n", [1, 3, 7])
def test_top_k_vjp_with_empty_blocks(shape, n):
    """Blocks of the searched dim that are empty (n smaller than the devices) get a zero gradient block."""
    mesh = sa.Mesh(shape)
    a = rand((2, n), seed=n)
    x = sa.asarray(a, dims=("b", "v"), mesh=mesh, layout={"v": tuple(shape)})
    k = min(2, n)
    w = sa.asarray(rand((2, k), seed=9), dims=("b", "k"), mesh=mesh)
    g = check_grad(lambda p: (sa.top_k(p, k, "v")[0] * w).sum(), x)
    want = np.zeros_like(a)
    np.put_along_axis(want, np.argsort(-a, axis=1, kind="stable")[:, :k], w.numpy(), axis=1)
    np.testing.assert_allclose(g.numpy(), want)


def test_top_k_key_orders_floats_as_numpy():
    """top_k's integer key of a float: NaN after +inf after the finite values, -0.0 equal to 0.0."""
    from shardarray.ops.sorting.topk import _key

    v = np.array([np.nan, -np.inf, 3.0, -0.0, 0.0, np.inf, -2.5, -np.nan, 5e-324], dtype=np.float64)
    key = _key(np, v)
    assert key.dtype == np.int64
    np.testing.assert_array_equal(np.argsort(key, kind="stable"), np.argsort(-v, kind="stable"))
    assert key[3] == key[4] and key[0] == key[7]


def test_lex_order_is_numpys_lexsort():
    rng = np.random.default_rng(0)
    keys = [rng.integers(0, 3, (4, 9)), rng.standard_normal((4, 9)).round(0), rng.integers(0, 2, (4, 9)) > 0]
    for axis in (0, 1):
        np.testing.assert_array_equal(samplesort.lex_order(np, keys, axis=axis), np.lexsort(keys, axis=axis))


@pytest.mark.parametrize("shape", [{"all": 4}, {"row": 2, "col": 2}], ids=str)
def test_one_gpu_per_device_with_nccl(monkeypatch, shape):
    """A CuPy mesh with one (fake) GPU per device and NCCL collectives (fake): per-device buffers, the
    exchanges through NCCL's send/recv, and NumPy's values."""
    import fake_nccl
    from fake_gpu import FakeCupy

    FakeCupy(gpus=4).install(monkeypatch)
    mesh = sa.Mesh(shape, backend="cupy", devices=[0, 1, 2, 3], comm="nccl")
    axes = tuple(shape)
    rng = np.random.default_rng(5)
    a = rng.integers(-3, 4, 37).astype(float)
    a[[4, 20]] = np.nan
    b = rng.integers(0, 6, (3, 9))
    x = sa.asarray(a, dims=("s",), mesh=mesh, layout={"s": axes})
    m = sa.asarray(b, dims=("b", "s"), mesh=mesh, layout={"s": axes})
    fake_nccl.STATS.clear()
    np.testing.assert_array_equal(host(sa.sort(x, "s")), np.sort(a))
    np.testing.assert_array_equal(host(sa.argsort(x, "s")), np.argsort(a, kind="stable"))
    assert fake_nccl.STATS["send"] > 0  # the buckets went through NCCL
    r = sa.unique_all(m)
    v, i, inv, c = np.unique(b, return_index=True, return_inverse=True, return_counts=True)
    for got, want in zip((r.values, r.indices, r.inverse_indices, r.counts), (v, i, inv.reshape(b.shape), c)):
        np.testing.assert_array_equal(host(got), want)
    vals, idx = sa.top_k(m, 4, "s")
    np.testing.assert_array_equal(host(idx), np.argsort(-b, axis=1, kind="stable")[:, :4])
    np.testing.assert_array_equal(host(sa.searchsorted(sa.sort(x, "s"), m)), np.searchsorted(np.sort(a), b))
    g = sa.grad(lambda y: (sa.top_k(y, 4, "s")[0] * 2.0).sum())(m.astype("float64"))
    want = np.zeros(b.shape)
    np.put_along_axis(want, np.argsort(-b, axis=1, kind="stable")[:, :4], 2.0, axis=1)
    np.testing.assert_array_equal(host(g), want)
    for arr in (vals, idx, g, r.values, r.inverse_indices):
        assert all(is_shard(s, mesh) for s in arr.shards)


@pytest.mark.parametrize("shape", [{"d": 1}, {"row": 2, "col": 2}, {"p": 3, "q": 2}], ids=str)
def test_bfloat16_never_reaches_a_sort(monkeypatch, shape):
    """CuPy's sorts (thrust) have no bfloat16 (``ValueError: Unsupported dtype``): bfloat16 keys are sorted
    and searched as float32 (exact), with the values and the traffic still bfloat16."""
    mesh = sa.Mesh(shape)
    axes = tuple(shape)
    rng = np.random.default_rng(7)
    a = rng.integers(-6, 7, (3, 13)).astype("bfloat16")
    a[0, 3] = a[2, 7] = np.nan
    f = a.astype(np.float32)
    x = sa.asarray(a, dims=("b", "s"), mesh=mesh, layout={"s": axes})
    flat = sa.asarray(a.reshape(-1), dims=("s",), mesh=mesh, layout={"s": axes})
    want = {"sort": np.sort(f, axis=1), "sort b": np.sort(f, axis=0), "argsort": np.argsort(f, axis=1, kind="stable"),
            "1-d": np.sort(f.reshape(-1)), "unique": np.unique(f, equal_nan=False),
            "top_k": np.argsort(-f, axis=1, kind="stable")[:, :4],
            "search": np.searchsorted(np.sort(f.reshape(-1)), f)}
    xp = mesh.backend.xp
    for name in ("sort", "argsort", "lexsort", "searchsorted"):
        real = getattr(xp, name)

        def refusing(*args, _real=real, **kwargs):
            if any(getattr(v, "dtype", None) is not None and v.dtype.name == "bfloat16" for v in args):
                raise ValueError("Unsupported dtype (bfloat16)")
            return _real(*args, **kwargs)

        monkeypatch.setattr(xp, name, refusing)
    with sa.comm_log() as log:
        s1 = sa.sort(flat, "s")
    if mesh.size > 1:
        assert log.records[1].dtype == "bfloat16"  # the buckets travel as bfloat16
    got = {"sort": sa.sort(x, "s"), "sort b": sa.sort(x, "b"), "argsort": sa.argsort(x, "s"), "1-d": s1,
           "unique": sa.unique_values(x), "top_k": sa.top_k(x, 4, "s")[1], "search": sa.searchsorted(s1, x)}
    finite = sa.asarray(np.nan_to_num(f).astype("bfloat16"), dims=("b", "s"), mesh=mesh, layout={"s": axes})
    g = sa.grad(lambda y: (sa.sort(y, "s") * sa.sort(y, "s")).sum())(finite)
    monkeypatch.undo()
    for name, w in want.items():
        assert got[name].dtype == ("bfloat16" if name in ("sort", "sort b", "1-d", "unique") else np.int64), name
        np.testing.assert_array_equal(host(got[name]).astype(w.dtype), w, err_msg=name)
    np.testing.assert_array_equal(host(g).astype(np.float32), 2 * np.nan_to_num(f))
