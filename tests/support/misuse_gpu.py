"""Misuse cases of the GPU path (NCCL communicator, fused kernels, GPU placement), runnable without a GPU.

NCCL is played by ``tests/support/fake_nccl.py`` and CuPy by ``tests/support/fake_gpu.py``;
every case is refused before any NCCL call or kernel launch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import fake_nccl
import shardarray as sa
from fake_gpu import FakeCupy
from misuse import Case
from shardarray.backend.numpy_backend import NumpyBackend
from shardarray.comm.nccl import NcclCommunicator


class _PerDevice(NumpyBackend):
    """NumPy shards owned per device, one stream each: what NcclCommunicator drives on GPUs."""

    per_device = True

    def __init__(self, n: int) -> None:
        self.gpus = tuple(range(n))

    def stream_ptr(self, device: int) -> int:
        return 0x100 + device


def _nccl(call: Callable[[Any], Any]) -> Callable[[], Any]:
    """``call(communicator)`` on a 2x2 mesh whose collectives go through NcclCommunicator and the fake NCCL."""

    def run() -> Any:
        mesh = sa.Mesh({"row": 2, "col": 2}, backend=_PerDevice(4))
        mesh.comm = NcclCommunicator(mesh, lib=fake_nccl)
        fake_nccl.reset()
        try:
            return call(mesh.comm)
        finally:
            assert not fake_nccl.hangs()

    return run


def _gpu(call: Callable[[Any], Any], gpus: int = 1) -> Callable[[], Any]:
    """``call(cupy)`` with CuPy played by the fake (``gpus`` GPUs)."""

    def run() -> Any:
        with pytest.MonkeyPatch.context() as mp:
            FakeCupy(gpus=gpus).install(mp)
            import cupy

            return call(cupy)

    return run


def _kernels() -> Any:
    from shardarray.backend import cuda_kernels

    return cuda_kernels


def _adam(cupy: Any, p: str, moments: str) -> Any:
    x, m = cupy.zeros(4, p), cupy.zeros(4, moments)
    return _kernels().adam(cupy, x, x, m, m, 0.9, 0.999, 1e-3, 0.1, 1e-8, 1.0)


_ONES = [np.ones(3)] * 4
CASES = [
    Case("gpu-nccl_unsupported_dtype", _nccl(lambda c: c.allreduce([np.zeros(3, "datetime64[s]")] * 4, ("col",))),
         sa.DTypeError, names=("allreduce", "datetime64[s]"), fix=(".astype", "float32")),
    Case("gpu-nccl_shapes_differ_in_a_group", _nccl(lambda c: c.allreduce([np.ones(3), np.ones(4)] + _ONES[:2], ("col",))),
         sa.DimensionError, names=("allreduce", "('col',)", "devices [0, 1]", "(3,)", "(4,)"),
         fix=("same shape", "pad")),
    Case("gpu-nccl_dtypes_differ_in_a_group",
         _nccl(lambda c: c.allreduce([np.ones(3), np.ones(3, np.float32)] + _ONES[:2], ("col",))),
         sa.DTypeError, names=("devices [0, 1]", "float64", "float32"), fix=(".astype",)),
    Case("gpu-nccl_max_of_complex", _nccl(lambda c: c.allreduce([np.ones(3, np.complex64)] * 4, ("col",), "max")),
         sa.DTypeError, names=("max", "complex64"), fix=("abs(x)", "op='sum'")),
    Case("gpu-nccl_min_of_complex128", _nccl(lambda c: c.reduce([np.ones(2, np.complex128)] * 4, ("row",), 0, "min")),
         sa.DTypeError, names=("min", "complex128"), fix=("abs(x)",)),
    Case("gpu-nccl_allgather_other_dims_differ",
         _nccl(lambda c: c.allgather([np.ones((2, 3))] * 3 + [np.ones((2, 4))], ("col",), dim=0)),
         sa.DimensionError, names=("allgather", "devices [2, 3]", "(2, 4)"), fix=("except along array axes [0]",)),
    Case("gpu-nccl_reduce_scatter_shapes_differ",
         _nccl(lambda c: c.reduce_scatter([np.ones((4, 2))] * 3 + [np.ones((6, 2))], ("row",), dim=0)),
         sa.DimensionError, names=("reduce_scatter", "('row',)", "(6, 2)"), fix=("same shape",)),
    Case("gpu-nccl_alltoall_ranks_differ",
         _nccl(lambda c: c.alltoall([np.ones((2, 2))] * 3 + [np.ones((2, 2, 1))], ("col",), 0, 1)),
         sa.DimensionError, names=("alltoall", "(2, 2, 1)"), fix=("same shape",)),
    Case("gpu-kernel_for_an_integer_dtype", _gpu(lambda cp: _kernels().gelu(cp, cp.zeros(3, np.int32))),
         sa.DTypeError, names=("gelu", "int32"), fix=("float16, float32 or float64", ".astype", "SHARDARRAY_KERNELS=0")),
    Case("gpu-kernel_softmax_of_complex", _gpu(lambda cp: _kernels().softmax_rows(cp, cp.zeros((2, 3), np.complex64))),
         sa.DTypeError, names=("softmax", "complex64"), fix=(".astype",)),
    Case("gpu-adam_float16_moments", _gpu(lambda cp: _adam(cp, "float16", "float16")),
         sa.DTypeError, names=("float16 parameters", "got float16 for m"), fix=("float32", "moment_dtype")),
    Case("gpu-adam_float32_params_float64_moments", _gpu(lambda cp: _adam(cp, "float32", "float64")),
         sa.DTypeError, names=("float32 parameters", "float64"), fix=("moment_dtype",)),
    Case("gpu-kernel_source_unknown", _gpu(lambda cp: _kernels().supports(cp, np.float32, "attention")),
         sa.BackendError, names=("kernels/attention.cu",), fix=("softmax", "layer_norm")),
    Case("gpu-devices_name_a_missing_gpu",
         _gpu(lambda cp: sa.Mesh({"row": 1, "col": 2}, backend="cupy", devices=[0, 5]), gpus=2),
         sa.MeshError, names=("devices=[0, 5]", "[5]", "2 GPU(s)"), fix=("one GPU id per mesh device",)),
]
