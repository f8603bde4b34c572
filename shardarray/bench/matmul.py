"""``shardarray-bench matmul``: run each algorithm on each mesh, forward and backward, and measure it.

Every row comes from one real run on the chosen backend: the comm log gives
the communication per device, the hardware profile turns it and the matmul
flops into a modeled time, and on numpy/cupy the run is also timed (median
of ``repeat`` runs after a warm-up). A ``single`` row times the same problem
as plain ``xp.matmul`` calls (NumPy or CuPy) on one device, the reference for
the emulated meshes' measured times.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import shardarray as sa

from ..hardware import HardwareProfile, comm_time, compute_time
from .device import array_module, synchronize
from .workload import Problem, build, memory_bytes


def run_row(
    problem: Problem, algorithm: str, shape: dict[str, int], backend: str, hw: HardwareProfile, repeat: int
) -> dict[str, Any]:
    """Measure one algorithm on one mesh."""
    mesh = sa.Mesh(shape, backend=backend)
    params, forward, cotangent = build(problem, algorithm, mesh)
    with sa.comm_log() as fwd_log:
        y, pullback = sa.vjp(forward, params)
    with sa.comm_log() as bwd_log:
        pullback(cotangent)
    synchronize(backend)
    flops = problem.matmul_flops / mesh.size
    # forward: 1/3 of the matmul flops, backward 2/3 (dX and dW)
    fwd_s = comm_time(fwd_log.records, mesh, hw) + compute_time(flops / 3, problem.dtype, hw)
    bwd_s = comm_time(bwd_log.records, mesh, hw) + compute_time(2 * flops / 3, problem.dtype, hw)
    row: dict[str, Any] = {
        "algorithm": algorithm,
        "mesh": dict(shape),
        "devices": mesh.size,
        "comm_bytes_per_device": fwd_log.total("bytes") + bwd_log.total("bytes"),
        "comm_bytes_forward_per_device": fwd_log.total("bytes"),
        "wire_bytes_per_device": fwd_log.total("wire_bytes") + bwd_log.total("wire_bytes"),
        "collectives": len(fwd_log) + len(bwd_log),
        "flops_per_device": flops,
        "memory_bytes_per_device": memory_bytes(problem, algorithm, shape),
        "modeled_forward_s": fwd_s,
        "modeled_backward_s": bwd_s,
        "modeled_time_s": fwd_s + bwd_s,
        "time_s": None,
        "output_layout": {d: list(a) for d, a in y.layout.items()},
    }
    if mesh.backend.has_data:

        def once() -> None:
            _, pull = sa.vjp(forward, params)
            pull(cotangent)

        row["time_s"] = _timed(once, backend, repeat)
    return row


def _timed(fn: Callable[[], Any], backend: str, repeat: int) -> float:
    fn()  # warm-up: plans, kernels, allocator
    synchronize(backend)
    times = []
    for _ in range(max(repeat, 1)):
        t0 = time.perf_counter()
        fn()
        synchronize(backend)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _gelu(xp: Any, h: Any) -> tuple[Any, Any]:
    c = np.sqrt(2.0 / np.pi).astype(h.dtype)
    t = xp.tanh(c * (h + h.dtype.type(0.044715) * h**3))
    return 0.5 * h * (1 + t), t


def single_row(problem: Problem, backend: str, repeat: int) -> dict[str, Any]:
    """The whole problem as plain matmuls on one device of ``backend`` (forward and backward)."""
    xp = array_module(backend)
    rng = np.random.default_rng(0)
    s = problem.sizes

    def arr(*shape: int) -> Any:
        return xp.asarray(rng.standard_normal(shape, dtype=np.float32).astype(problem.dtype))

    if problem.kind == "matmul":
        x, w, dy = arr(s["m"], s["k"]), arr(s["k"], s["n"]), arr(s["m"], s["n"])

        def once() -> None:
            _ = x @ w
            _ = dy @ w.T
            _ = x.T @ dy
    else:
        b, h = s["batch"] * s["seq"], s["hidden"]
        x, w1, w2, dy = arr(b, h), arr(h, 4 * h), arr(4 * h, h), arr(b, h)

        def once() -> None:
            pre = x @ w1
            act, t = _gelu(xp, pre)
            _ = act @ w2
            dact = dy @ w2.T
            _ = act.T @ dy
            c = np.sqrt(2.0 / np.pi).astype(pre.dtype)
            dpre = dact * (0.5 * (1 + t) + 0.5 * pre * (1 - t * t) * c * (1 + 3 * 0.044715 * pre * pre))
            _ = x.T @ dpre
            _ = dpre @ w1.T

    return {
        "algorithm": "single",
        "mesh": {},
        "devices": 1,
        "flops_per_device": problem.matmul_flops,
        "time_s": _timed(once, backend, repeat),
        "what": f"{xp.__name__}.matmul of the whole problem on one device",
    }


def run(
    problem: Problem,
    plan: Sequence[tuple[str, dict[str, int]]],
    backend: str,
    hw: HardwareProfile,
    repeat: int = 3,
    progress: Callable[[int, str], None] | None = None,
    baseline: bool = True,
) -> dict[str, Any]:
    """All rows of a sweep: ``plan`` lists ``(algorithm, mesh shape)`` pairs."""
    rows, skipped = [], []
    for i, (algorithm, shape) in enumerate(plan):
        if progress:
            progress(i, f"{algorithm} {list(shape.values())}")
        try:
            rows.append(run_row(problem, algorithm, shape, backend, hw, repeat))
        except sa.LayoutError as e:  # sizes that do not divide into this mesh's blocks
            skipped.append({"algorithm": algorithm, "mesh": dict(shape), "reason": str(e).split(". ")[0]})
    single = single_row(problem, backend, repeat) if baseline and backend != "meta" else None
    if single is not None:
        for r in rows:
            r["time_vs_single"] = r["time_s"] / single["time_s"]
    return {"rows": rows, "single": single, "skipped": skipped}
