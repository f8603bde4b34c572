"""The fused-kernel sources and their dispatch, on any machine (the GPU runs are in test_gpu.py)."""

from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pytest

import shardarray as sa
from shardarray.backend import cuda_kernels
from shardarray.ops import fused

LAUNCHED = {"softmax": ["softmax_fwd", "softmax_bwd", "xent_fwd", "xent_bwd"], "layer_norm": ["ln_fwd", "ln_bwd"],
            "gelu": ["gelu_fwd", "gelu_bwd"], "adam": ["adam"]}


def test_every_launched_kernel_is_defined_for_every_float_type():
    assert set(LAUNCHED) == set(cuda_kernels.SOURCES)
    launcher = open(cuda_kernels.__file__).read()
    for name, kernels in LAUNCHED.items():
        src = cuda_kernels.source(name)
        for k in kernels:
            assert f'_fn("{name}", "{k}"' in launcher, k
            macro = re.search(rf'__global__ void {k}_##S\(', src)
            assert macro, f"{k} is not instantiated in kernels/{name}.cu"
        assert re.search(r"FOR_FLOATS\(\w+\)", src)


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
    mesh = sa.Mesh({"row": 2, "col": 2})
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
