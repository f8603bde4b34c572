"""The device a benchmark runs on: its name, synchronisation, and the array module."""

from __future__ import annotations

import os
import platform
from typing import Any

from ..backend.cupy_backend import import_cupy


def device_name(backend: str) -> str:
    """A readable name of the device shards live on (the GPU's name for cupy)."""
    if backend == "cupy":
        cupy = import_cupy()
        props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
        name = props["name"]
        return name.decode() if isinstance(name, bytes) else str(name)
    if backend == "meta":
        return "meta (shapes only, nothing runs)"
    return f"{platform.processor() or platform.machine()} CPU ({os.cpu_count()} cores)"


def synchronize(backend: str) -> None:
    """Wait for queued device work (a no-op off the GPU)."""
    if backend == "cupy":
        import_cupy().cuda.Device().synchronize()


def array_module(backend: str) -> Any:
    """NumPy or CuPy for a data-holding backend."""
    if backend == "cupy":
        return import_cupy()
    import numpy

    return numpy
