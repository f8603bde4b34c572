"""CuPy shards: every shard on the current GPU, or one GPU per mesh device (``devices=[...]``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import MeshError
from .base import Backend
from .contract import contract2


def import_cupy() -> Any:
    """Import CuPy or raise an ImportError that names the extra to install."""
    try:
        import cupy
    except ImportError as e:  # pragma: no cover - depends on the machine
        raise ImportError(
            "the 'cupy' backend needs CuPy: pip install 'shardarray[cuda12]' (CUDA 12) "
            "or 'shardarray[cuda13]' (CUDA 13)"
        ) from e
    return cupy


class CupyBackend(Backend):
    """Every shard of an emulated mesh on the current GPU (``sa.Mesh(shape, backend="cupy")``).

    Two-operand float16 contractions with a batch dim go to cuBLAS's strided
    batched gemm with float32 accumulation (tensor cores); CuPy's own batched
    ``matmul`` would upcast them to float32 first.
    """

    name = "cupy"

    def __init__(self) -> None:
        self.xp = import_cupy()

    def from_numpy(self, array: np.ndarray) -> Any:
        array = np.asarray(array)
        return self.xp.asarray(np.array(array) if array.ndim == 0 else np.ascontiguousarray(array))

    def to_numpy(self, array: Any) -> np.ndarray:
        return self.xp.asnumpy(array)

    def pointer(self, array: Any) -> int:
        return int(array.data.ptr)

    def einsum(self, equation: str, *arrays: Any) -> Any:
        if len(arrays) == 2:
            from .cublas import batched_matmul

            return contract2(self.xp, equation, *arrays, matmul=batched_matmul)
        return super().einsum(equation, *arrays)


class _Scope:
    """``with``: make one GPU and its stream current (re-entrant, cheap)."""

    __slots__ = ("device", "stream")

    def __init__(self, device: Any, stream: Any) -> None:
        self.device, self.stream = device, stream

    def __enter__(self) -> _Scope:
        self.device.__enter__()
        self.stream.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stream.__exit__(*exc)
        self.device.__exit__(*exc)


class CupyDevicesBackend(CupyBackend):
    """One GPU per mesh device: ``sa.Mesh(shape, backend="cupy", devices=[0, 1, 2, 3])``.

    Mesh device ``d``'s shards are allocated and its kernels run on GPU
    ``gpus[d]``, in order on one stream per GPU (a blocking stream, so host
    copies on the default stream wait for it). With several GPUs every device
    owns its own buffers (``per_device``): replicas are not shared across GPUs.
    """

    def __init__(self, gpus: tuple[int, ...]) -> None:
        super().__init__()
        cupy = self.xp
        count = cupy.cuda.runtime.getDeviceCount()
        bad = [g for g in gpus if not 0 <= g < count]
        if bad:
            raise MeshError(
                f"devices={list(gpus)} name GPU(s) {bad}, but this machine has {count} GPU(s) "
                f"(ids 0..{count - 1}); list one GPU id per mesh device"
            )
        self.gpus = gpus
        self.per_device = len(set(gpus)) > 1
        self._scopes: dict[int, _Scope] = {}
        for g in sorted(set(gpus)):
            with cupy.cuda.Device(g):
                self._scopes[g] = _Scope(cupy.cuda.Device(g), cupy.cuda.Stream(non_blocking=False))
        self.device_scope = self._scope

    def _scope(self, device: int) -> _Scope:
        return self._scopes[self.gpus[device]]

    def stream_ptr(self, device: int) -> int:
        return int(self._scopes[self.gpus[device]].stream.ptr)

    def to_numpy(self, array: Any) -> np.ndarray:
        with self._scopes[array.device.id]:
            return array.get()  # on this GPU's stream: waits for the work that made it

    def __repr__(self) -> str:
        return f"<backend cupy on GPUs {list(self.gpus)}>"


_ON_DEVICES: dict[tuple[int, ...], CupyDevicesBackend] = {}


def on_devices(gpus: tuple[int, ...]) -> CupyDevicesBackend:
    """The per-device backend for this GPU list (one per list, so equal meshes share streams)."""
    if gpus not in _ON_DEVICES:
        _ON_DEVICES[gpus] = CupyDevicesBackend(gpus)
    return _ON_DEVICES[gpus]
