"""CuPy shards: every shard on the current GPU, or one GPU per mesh device (``devices=[...]``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..dtypes import is_bfloat16, promote
from ..errors import MeshError
from .base import Backend
from .contract import contract2
from .cublas import batched_matmul, matmul_two_batch_dims, sum_leading


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

    Two-operand contractions of one floating dtype go to cuBLAS's strided
    batched gemm (``backend/cublas.py``): float16 and bfloat16 on tensor cores
    with float32 accumulation, where CuPy's own ``matmul`` would upcast
    bfloat16 (and batched float16) to float32, and transposed operands read
    in place rather than copied.
    """

    name = "cupy"
    linalg_raises = False  # cupyx.errstate(linalg='ignore'), CuPy's default: no LinAlgError, no device read

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
        """Two operands: ``contract2`` on cuBLAS (bfloat16 included). One or three and more: opt-einsum's plan
        on ``cupy.einsum``, which has no bfloat16 loops: bfloat16 operands are upcast to float32 and the result
        rounded once (as the NumPy backend does)."""
        if len(arrays) == 2:
            return contract2(self.xp, equation, *arrays, matmul=batched_matmul, matmul2=matmul_two_batch_dims)
        if not any(is_bfloat16(a.dtype) for a in arrays):
            return super().einsum(equation, *arrays)
        wide = [a.astype(np.float32) if is_bfloat16(a.dtype) else a for a in arrays]
        return super().einsum(equation, *wide).astype(promote(*(a.dtype for a in arrays)), copy=False)

    def sum(self, x: Any, axis: tuple[int, ...], dtype: Any = None) -> Any:
        """``cupy.sum``, except a float sum over the leading axes of a C-contiguous block, which is one cuBLAS
        product with a vector of ones (``cublas.sum_leading``).

        CuPy's reduction kernel reads such a sum (a bias or layer-norm gain gradient: (batch, seq, d_model)
        summed over batch and seq) with strided accesses: about 80 µs for 4096 x 1024 float32 on an H200, where
        the product reads it once at memory speed.
        """

        out = sum_leading(x, axis, dtype)
        return self.xp.sum(x, axis=axis, dtype=dtype) if out is None else out


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
    """Mesh devices placed on GPUs: ``sa.Mesh(shape, backend="cupy", devices=[0, 1, 2, 3])``.

    Mesh device ``d``'s shards are allocated and its kernels run on GPU
    ``gpus[d]``, in order on a blocking stream (host copies on the default
    stream wait for it). Streams: one per GPU (``ranks=False``: every mesh
    device of one GPU shares it, as the emulated communicator, which mixes
    their shards, needs), or one per mesh device (``ranks=True``: each device
    is an NCCL rank, and two ranks of one communicator on one stream would
    wait on each other forever). With distinct GPUs both are the same. Where
    the devices are separate ranks or on separate GPUs, each owns its
    buffers (``per_device``): replicas are not shared between them.

    Args:
        gpus: the GPU of every mesh device.
        ranks: one stream and separate buffers per mesh device, even where GPUs repeat.
    """

    gpus: tuple[int, ...]  # always set here (``Backend.gpus`` is None for the other backends)

    def __init__(self, gpus: tuple[int, ...], ranks: bool = False) -> None:
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
        self.ranks = ranks or len(set(gpus)) == len(gpus)
        self.per_device = self.ranks or len(set(gpus)) > 1
        self._scopes: list[_Scope] = []  # per mesh device
        self._on_gpu: dict[int, list[_Scope]] = {}  # every distinct scope of a GPU
        shared: dict[int, _Scope] = {}
        for g in gpus:
            scope = None if self.ranks else shared.get(g)
            if scope is None:
                with cupy.cuda.Device(g):
                    scope = _Scope(cupy.cuda.Device(g), cupy.cuda.Stream(non_blocking=False))
                shared[g] = scope
                self._on_gpu.setdefault(g, []).append(scope)
            self._scopes.append(scope)
        self.device_scope = self._scopes.__getitem__

    def stream_ptr(self, device: int) -> int:
        return int(self._scopes[device].stream.ptr)

    def copy_between(self, array: Any, src: int, dst: int) -> Any:
        """A copy of ``array`` (made on device ``src``) on device ``dst``'s GPU, ordered after ``src``'s stream."""
        if self._scopes[src] is self._scopes[dst]:
            return array
        cupy = self.xp
        with self._scopes[src]:
            done = cupy.cuda.Event()
            done.record()
        with self._scopes[dst]:
            cupy.cuda.get_current_stream().wait_event(done)
            return cupy.array(array, copy=True)

    def as_ranks(self) -> CupyDevicesBackend:
        return self if self.ranks else on_devices(self.gpus, ranks=True)

    def to_numpy(self, array: Any) -> np.ndarray:
        scopes = self._on_gpu[array.device.id]
        for other in scopes[1:]:  # the array may come from any rank's stream on this GPU
            other.stream.synchronize()
        with scopes[0]:
            return array.get()  # on this GPU's stream: waits for the work that made it

    def __repr__(self) -> str:
        return f"<backend cupy on GPUs {list(self.gpus)}{', a stream per device' if self.ranks else ''}>"


_ON_DEVICES: dict[tuple[tuple[int, ...], bool], CupyDevicesBackend] = {}


def on_devices(gpus: tuple[int, ...], ranks: bool = False) -> CupyDevicesBackend:
    """The backend for this GPU list (one per list and stream policy, so equal meshes share streams).

    ``ranks=True``: one stream per mesh device even where GPUs repeat (NCCL ranks); see ``CupyDevicesBackend``.
    """
    key = (tuple(gpus), bool(ranks) or len(set(gpus)) == len(gpus))
    if key not in _ON_DEVICES:
        _ON_DEVICES[key] = CupyDevicesBackend(key[0], ranks=key[1])
    return _ON_DEVICES[key]
