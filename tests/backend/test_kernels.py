"""The fused-kernel sources and their dispatch, on any machine (the GPU runs are in test_gpu.py)."""

from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pytest

import shardarray as sa
from fake_gpu import FakeCupy
from shardarray.backend import cuda_kernels
from shardarray.backend.cupy_backend import on_devices
from shardarray.ops.fused import dispatch as fused

LAUNCHED = {"softmax": ["softmax_fwd", "softmax_bwd", "xent_fwd", "xent_bwd", "causal_softmax_fwd", "causal_softmax_bwd"], "layer_norm": ["ln_fwd", "ln_bwd"],
            "gelu": ["gelu_fwd", "gelu_bwd"], "adam": ["adam", "adam_dev"], "gemm_pointers": [],
            "elementwise": ["add_vec"]}


def test_every_launched_kernel_is_defined_for_every_float_type():
    assert set(LAUNCHED) == set(cuda_kernels.SOURCES)
    launcher = open(cuda_kernels.__file__).read()
    for name, kernels in LAUNCHED.items():
        src = cuda_kernels.source(name)
        for k in kernels:
            assert f'_fn("{name}", "{k}"' in launcher, k
            macro = re.search(rf'__global__ void {k}_##S\(', src)
            assert macro, f"{k} is not instantiated in kernels/{name}.cu"
        assert re.search(r"FOR_FLOATS\(\w+\)", src) or name in ("adam", "gemm_pointers")
    # the one kernel of no float type: the matrix addresses of a batched gemm
    assert '_function(xp, "gemm_pointers", "batch_pointers")' in launcher
    assert 'extern "C" __global__ void batch_pointers(uptr_t* out,' in cuda_kernels.source("gemm_pointers")


#: Adam's instantiations: (suffix, parameter and gradient type, moment type): float16 moments lose the update
ADAM_TYPES = [("f16", "half_t", "float"), ("f32", "float", "float"), ("f64", "double", "double")]


def test_adam_keeps_float32_moments_for_float16_parameters():
    """kernels/adam.cu: m and v are float32 for float16 parameters (math in float32, only p rounded)."""
    from fake_gpu import _signatures

    sigs = _signatures(cuda_kernels.source("adam"))
    for suffix, t, m in ADAM_TYPES:
        assert [c for c, _ in sigs[f"adam_{suffix}"][:7]] == [t, t, m, m, t, m, m], suffix
        assert [c for c, _ in sigs[f"adam_dev_{suffix}"][:7]] == [t, t, m, m, t, m, m], suffix


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc (the CUDA toolkit)")
def test_adam_instantiations_have_the_moment_types(tmp_path):
    """nvcc checks the exact C++ types of every Adam instantiation (static_assert on the kernel's type)."""
    checks = "".join(
        f"static_assert(std::is_same<decltype(&adam_{s}), void (*)(const {t}*, const {t}*, const {m}*, const {m}*, "
        f"{t}*, {m}*, {m}*, index_t, double, double, double, double, double, double)>::value, \"adam_{s}\");\n"
        for s, t, m in ADAM_TYPES
    )
    path = tmp_path / "adam_types.cu"
    path.write_text(cuda_kernels.source("adam") + "\n#include <type_traits>\n" + checks)
    run = subprocess.run(["nvcc", "--std=c++17", "-arch=sm_80", "-c", str(path), "-o", str(tmp_path / "a.o")],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc (the CUDA toolkit) to compile the sources")
@pytest.mark.parametrize("name", cuda_kernels.SOURCES)
def test_sources_compile(tmp_path, name):
    """What NVRTC compiles on the GPU, compiled by nvcc for Ampere and Hopper: syntax and types hold."""
    path = tmp_path / f"{name}.cu"
    path.write_text(cuda_kernels.source(name))
    for arch in ("sm_80", "sm_90"):
        run = subprocess.run(["nvcc", "--std=c++17", f"-arch={arch}", "-c", str(path), "-o", str(tmp_path / "k.o")],
                             capture_output=True, text=True)
        assert run.returncode == 0, run.stderr


def test_numpy_shards_take_the_array_path():
    mesh = sa.Mesh({"row": 2, "col": 2}, backend="numpy")  # the subject is NumPy shards, on every --backend
    x = sa.zeros(mesh, {"batch": 4, "vocab": 6}, layout={"batch": "row"})
    assert not cuda_kernels.supports(np, np.float32, "softmax")
    assert not fused.kernels_for(x, "softmax")
    assert not fused.kernels_for(sa.zeros(sa.Mesh({"d": 1}, backend="meta"), {"v": 3}), "gelu")


def test_row_kernels_need_the_dim_last_and_unsplit():
    mesh = sa.Mesh({"row": 2, "col": 2})
    x = sa.zeros(mesh, {"batch": 4, "vocab": 6}, layout={"batch": "row"})
    assert fused.rows_ready(x, "vocab")
    assert not fused.rows_ready(x, "batch")  # not the last dim
    assert not fused.rows_ready(x.relayout({"vocab": "col"}), "vocab")  # split: the array path allreduces
    assert fused.single_dim(("vocab",)) == "vocab" and fused.single_dim(("a", "b")) is None


def test_the_switch_turns_kernels_off(monkeypatch):
    monkeypatch.setenv("SHARDARRAY_KERNELS", "0")
    assert not cuda_kernels.enabled()
    monkeypatch.setenv("SHARDARRAY_KERNELS", "1")
    assert cuda_kernels.enabled()


# ---------------------------------------------------------------- on a fake GPU (tests/support/fake_gpu.py)
def test_kernels_compile_on_the_gpus_of_the_mesh(monkeypatch):
    """supports() compiles under each of the backend's GPUs, never on the current one (GPU 0) by accident."""
    gpu = FakeCupy(gpus=4).install(monkeypatch)
    backend = on_devices((2, 3))
    assert cuda_kernels.supports(backend, np.float32, "softmax")
    assert sorted(d for d, _ in gpu.compiles) == [2, 3]
    assert gpu.current() == (0, 0)  # the scope was left
    spmd = on_devices((1,) * 4)  # an MPI process whose GPU is 1
    assert cuda_kernels.supports(spmd, np.float16, "gelu")
    assert [d for d, _ in gpu.compiles[2:]] == [1]
    import cupy

    with cupy.cuda.Device(3):  # no mesh GPUs given: the current GPU
        assert cuda_kernels.supports(cupy, np.float64, "adam")
    assert gpu.compiles[-1][0] == 3
    assert cuda_kernels.supports(backend, np.float32, "softmax")  # compiled once per GPU
    assert len(gpu.compiles) == 4


def test_kernel_functions_are_looked_up_once_per_device_and_dtype(monkeypatch):
    gpu = FakeCupy(gpus=2).install(monkeypatch)
    backend = on_devices((0, 1))
    import cupy

    for d in (0, 1):
        with backend.scope(d):
            x = cupy.asarray(np.ones((3, 5), np.float32))
            for _ in range(3):
                cuda_kernels.softmax_rows(cupy, x)
                cuda_kernels.gelu(cupy, x)
            cuda_kernels.gelu(cupy, x.astype(np.float16))
    assert sorted(gpu.functions) == [(0, "gelu_fwd_f16"), (0, "gelu_fwd_f32"), (0, "softmax_fwd_f32"),
                                     (1, "gelu_fwd_f16"), (1, "gelu_fwd_f32"), (1, "softmax_fwd_f32")]
    assert len(gpu.launches) == 14
    assert {(l["device"], l["stream"]) for l in gpu.launches} == {(d, backend.stream_ptr(d)) for d in (0, 1)}


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_every_kernel_is_launched_with_its_parameter_types(monkeypatch, dtype):
    """Each launcher passes the dtypes its kernel declares (the fake checks them against the C signature)."""
    gpu = FakeCupy(gpus=1).install(monkeypatch)
    import cupy

    rng = np.random.default_rng(0)
    x = cupy.asarray(rng.standard_normal((4, 6)).astype(dtype))
    w = cupy.asarray(rng.standard_normal(6).astype(dtype))
    t = cupy.asarray(rng.integers(0, 6, 4))
    y = cuda_kernels.softmax_rows(cupy, x)
    cuda_kernels.softmax_rows_grad(cupy, x, y)
    sq = cupy.asarray(rng.standard_normal((2, 3, 3)).astype(dtype))
    p = cuda_kernels.causal_softmax_rows(cupy, sq, 0.5)
    cuda_kernels.causal_softmax_rows_grad(cupy, sq, p, 0.5)
    loss, lse = cuda_kernels.cross_entropy_rows(cupy, x, t)
    cuda_kernels.cross_entropy_rows_grad(cupy, loss, x, t, lse)
    out, mean, rstd = cuda_kernels.layer_norm_rows(cupy, x, w, w, 1e-5)
    cuda_kernels.layer_norm_rows_grad(cupy, x, x, w, mean, rstd)
    cuda_kernels.gelu(cupy, x)
    cuda_kernels.gelu_grad(cupy, x, x)
    moments = cuda_kernels.moment_dtype(dtype)
    m = cupy.zeros((4, 6), moments)
    p2, m2, v2 = cuda_kernels.adam(cupy, x, x, m, m, 0.9, 0.999, 1e-3, 0.1, 1e-8, 1.0)
    assert p2.dtype == np.dtype(dtype) and m2.dtype == v2.dtype == np.dtype(moments)
    assert cuda_kernels.add(cupy, x, x).dtype == np.dtype(dtype)
    launches = 12
    if dtype == "float16":  # the casts between float32 and float16 (and bfloat16: tests/backend/test_kernels_elementwise)
        assert cuda_kernels.cast(cupy, x, "float32").dtype == np.float32
        assert cuda_kernels.cast(cupy, x.astype(np.float32), dtype).dtype == np.float16
        launches += 2
    assert len(gpu.launches) == launches


def test_adam_moments_of_float16_parameters_are_float32(monkeypatch):
    FakeCupy(gpus=1).install(monkeypatch)
    import cupy

    assert cuda_kernels.moment_dtype(np.float16) == np.float32
    assert cuda_kernels.moment_dtype(np.float64) == np.float64
    p = cupy.zeros((3,), np.float16)
    with pytest.raises(sa.DTypeError, match=r"moments m, v of float16 parameters are float32.*got float16"):
        cuda_kernels.adam(cupy, p, p, p, p, 0.9, 0.999, 1e-3, 0.1, 1e-8, 1.0)


def test_kernels_for_an_unsupported_dtype_are_refused(monkeypatch):
    FakeCupy(gpus=1).install(monkeypatch)
    import cupy

    assert not cuda_kernels.supports(cupy, np.int32, "softmax")
    assert not cuda_kernels.supports(cupy, np.complex64, "gelu")
    with pytest.raises(sa.DTypeError, match=r"gelu.*int32.*float16, float32 or float64"):
        cuda_kernels.gelu(cupy, cupy.zeros(3, np.int32))
    with pytest.raises(sa.BackendError, match=r"kernels/nope.cu.*softmax"):
        cuda_kernels.supports(cupy, np.float32, "nope")


def test_an_op_on_gpus_2_and_3_compiles_nothing_on_gpu_0(monkeypatch):
    """The whole softmax op on a fake 4-GPU machine: modules are built on the mesh's GPUs only."""
    gpu = FakeCupy(gpus=4).install(monkeypatch)
    mesh = sa.Mesh({"row": 1, "col": 2}, backend="cupy", devices=[2, 3])
    x = sa.asarray(np.ones((4, 6), np.float32), dims=("b", "v"), mesh=mesh, layout={"b": "col"})
    sa.softmax(x, "v")
    assert [(l["device"], l["stream"]) for l in gpu.launches] == [(2, mesh.backend.stream_ptr(0)),
                                                                  (3, mesh.backend.stream_ptr(1))]
    assert sorted(d for d, _ in gpu.compiles) == [2, 3]
