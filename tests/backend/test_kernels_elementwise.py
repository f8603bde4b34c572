"""kernels/elementwise.cu on the strict CuPy stand-in: which blocks take ``add_vec`` and the casts, their launch, and
the values through ``sa`` ops against NumPy shards (the GPU runs are in test_gpu.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers import rand
from strict_cupy import StrictCupy

import shardarray as sa
from shardarray.backend import cuda_kernels


@pytest.fixture
def gpu(monkeypatch):
    monkeypatch.delenv("SHARDARRAY_KERNELS", raising=False)
    return StrictCupy(gpus=4).install(monkeypatch)


def _names(gpu) -> list[str]:
    return [launch["name"] for launch in gpu.launches]


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32", "float64"])
@pytest.mark.parametrize("n", [0, 1, 9, 1000])
def test_add_takes_the_kernel_for_blocks_of_one_shape_and_dtype(gpu, dtype, n):
    import cupy

    a, b = rand((n, 3), seed=1).astype(dtype), rand((n, 3), seed=2).astype(dtype)
    got = cuda_kernels.add(cupy, cupy.asarray(a), cupy.asarray(b))
    np.testing.assert_array_equal(cupy.asnumpy(got).astype(np.float64), (a + b).astype(np.float64))
    suffix = cuda_kernels._SUFFIX[np.dtype(dtype)]
    assert _names(gpu) == ([f"add_vec_{suffix}"] if n else [])  # an empty array launches nothing
    if n:
        threads = gpu.launches[0]["grid"][0] * gpu.launches[0]["block"][0]
        assert threads >= math.ceil(3 * n / 8)  # eight elements a thread


@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
@pytest.mark.parametrize(
    "a,b",
    [((4, 16), (1, 16)), ((1, 16), (4, 16)), ((2, 3, 8), (1, 1, 8)), ((2, 3, 5), (3, 5)), ((3, 5), (1, 3, 5))],
)
def test_add_of_an_array_repeated_along_leading_axes_takes_add_rows(gpu, dtype, a, b):
    """A bias or a positional table added to activations: one ``add_rows`` launch, NumPy's value and shape."""
    import cupy

    x, y = rand(a, seed=1).astype(dtype), rand(b, seed=2).astype(dtype)
    got = cupy.asnumpy(cuda_kernels.add(cupy, cupy.asarray(x), cupy.asarray(y)))
    assert got.shape == (x + y).shape
    np.testing.assert_array_equal(got.astype(np.float64), (x + y).astype(np.float64))
    assert _names(gpu) == [f"add_rows_{cuda_kernels._SUFFIX[np.dtype(dtype)]}"]


def test_add_leaves_other_blocks_to_cupy(gpu):
    """Broadcasting along trailing or middle axes, a result of neither operand's shape, mixed dtypes,
    integers, non-contiguous blocks and scalars are added by CuPy itself."""
    import cupy

    x = cupy.asarray(rand((4, 6)).astype(np.float32))
    cases = [
        (x, x[:, :1]),  # broadcast along the last axis
        (x.reshape(4, 2, 3), x.reshape(4, 2, 3)[:, :1].copy()),  # (4, 2, 3) + (4, 1, 3): along a middle axis
        (x[:1], x[:, :1][None]),  # (1, 6) + (1, 4, 1): neither operand has the result's shape
        (x, x.astype(np.float64)),  # mixed dtypes
        (x.astype(np.int32), x.astype(np.int32)),  # no kernel for integers
        (x[:, ::2], x[:, ::2]),  # not contiguous
        (x, 2.0),  # a scalar
    ]
    for a, b in cases:
        got = cuda_kernels.add(cupy, a, b)
        np.testing.assert_array_equal(cupy.asnumpy(got), cupy.asnumpy(a + b))
    assert _names(gpu) == []


@pytest.mark.parametrize(
    "src,dst", [("float32", "bfloat16"), ("float32", "float16"), ("bfloat16", "float32"), ("float16", "float32")]
)
def test_casts_between_float32_and_16_bit_floats_take_the_kernel(gpu, src, dst):
    import cupy

    x = (rand((5, 7), seed=3) * 100).astype(src)
    got = cuda_kernels.cast(cupy, cupy.asarray(x), dst)
    assert got.dtype == np.dtype(dst)
    np.testing.assert_array_equal(cupy.asnumpy(got).view(np.uint8), x.astype(dst).view(np.uint8))
    assert _names(gpu) == [cuda_kernels.CASTS[np.dtype(src), np.dtype(dst)]]


def test_other_casts_are_cupys(gpu):
    import cupy

    x = cupy.asarray(rand((3, 4)).astype(np.float32))
    for a, dst in [(x, "float64"), (x, "int32"), (x.astype(np.float64), "bfloat16"), (x.T, "bfloat16")]:
        np.testing.assert_array_equal(cupy.asnumpy(cuda_kernels.cast(cupy, a, dst)), cupy.asnumpy(a).astype(dst))
    assert _names(gpu) == []


def test_kernels_off_leaves_add_and_casts_to_cupy(gpu, monkeypatch):
    import cupy

    monkeypatch.setenv("SHARDARRAY_KERNELS", "0")
    x = cupy.asarray(rand(16).astype(np.float32))
    cuda_kernels.add(cupy, x, x)
    cuda_kernels.cast(cupy, x, "bfloat16")
    assert _names(gpu) == []


@pytest.mark.parametrize("shape", [{"d": 1}, {"row": 2, "col": 2}])
def test_ops_add_and_astype_on_cupy_shards_match_numpy_shards(gpu, shape):
    """``x + y``, ``astype`` and the gradient through them (cotangents meet at ``x``) on CuPy shards equal NumPy's."""
    layout = {"b": "row", "f": "col"} if "row" in shape else {}

    def run(backend: str) -> tuple[np.ndarray, np.ndarray]:
        mesh = sa.Mesh(shape, backend=backend)
        x = sa.asarray(rand((6, 10), seed=7).astype(np.float32), ("b", "f"), mesh, layout=layout)
        y = sa.asarray(rand((6, 10), seed=8).astype(np.float32), ("b", "f"), mesh, layout=layout)

        def f(x: sa.ShardArray) -> sa.ShardArray:
            h = x.astype("bfloat16")
            z = h + y.astype("bfloat16") + h
            return (z.astype("float32") * x).sum()

        value, grad = sa.value_and_grad(f)(x)
        return np.asarray(float(value)), grad.numpy()

    want = run("numpy")
    got = run("cupy")
    names = set(_names(gpu))
    assert {"add_vec_bf16", "cast_f32_bf16", "cast_bf16_f32"} <= names, names
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("op", ["sum", "max"])
def test_emulated_bfloat16_reduction_of_two_members_is_one_launch(gpu, op):
    """An allreduce over a 2-device axis of an emulated CuPy mesh: one ``add_vec_bf16`` (float32 sum, one
    rounding), no casts, and the NumPy mesh's value bit for bit (max: CuPy's own, exact in bfloat16)."""
    x = rand((4, 6), seed=9).astype("bfloat16")

    def run(backend: str) -> np.ndarray:
        mesh = sa.Mesh({"row": 2, "col": 2}, backend=backend)
        a = sa.asarray(x, ("b", "f"), mesh, layout={"b": "row", "f": "col"})
        w = sa.asarray(rand((6, 3), seed=10).astype("bfloat16"), ("f", "g"), mesh, layout={"f": "col"})
        with sa.comm_log() as log:  # a bfloat16 product over the split f: its partial sums allreduced
            out = sa.einsum("b f, f g -> b g", a, w) if op == "sum" else sa.max(a, "f")
            got = out.numpy()
        assert out.dtype == np.dtype("bfloat16") and log.records[0].dtype == "bfloat16"
        assert [r.op for r in log] == ["allreduce"]
        return got

    want = run("numpy")
    got = run("cupy")
    np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))
    names = _names(gpu)
    assert not any(n.startswith("cast_") for n in names), names
    assert names.count("add_vec_bf16") == (2 if op == "sum" else 0), names  # one per group of two
