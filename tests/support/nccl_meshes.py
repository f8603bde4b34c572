"""Meshes whose collectives go through ``NcclCommunicator`` on the fake NCCL (``fake_nccl.py``), NumPy shards per device."""

from __future__ import annotations

import contextlib

import fake_nccl
import numpy as np

import shardarray as sa
from shardarray.backend.numpy_backend import NumpyBackend
from shardarray.comm.nccl import NcclCommunicator


class PerDeviceNumpy(NumpyBackend):
    """NumPy shards that never share a buffer between devices, as GPUs would not; one stream per device."""

    per_device = True

    def __init__(self, n: int, gpus: tuple[int, ...] | None = None) -> None:
        self.gpus = tuple(range(n)) if gpus is None else gpus
        self.scoped: list[int] = []

        def scope(d: int):
            self.scoped.append(d)
            return contextlib.nullcontext()

        self.device_scope = scope

    def stream_ptr(self, device: int) -> int:
        return 0x100 + device


def nccl_mesh(shape, rules=None, backend=None):
    n = int(np.prod(list(shape.values())))
    mesh = sa.Mesh(shape, backend=backend or PerDeviceNumpy(n), rules=rules)
    mesh.comm = NcclCommunicator(mesh, lib=fake_nccl)
    return mesh
