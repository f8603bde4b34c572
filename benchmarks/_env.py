"""What every benchmark JSON records about the machine it ran on, and where it may write.

``environment()`` gives the core count (affinity), the CPU's model and vector
extensions, whether freed memory goes back to a hypervisor (free page reporting), the BLAS pool and the library's thread setting, and the load average; call it before and after a
run (``{"before": ..., "after": ...}``). ``output_path()`` keeps the committed
results safe: the default path is under ``/tmp``, and a path inside
``benchmarks/results/`` that already exists is only overwritten with ``--force``.
"""

from __future__ import annotations

import os
import platform
import tempfile
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"


def environment() -> dict[str, Any]:
    """Cores, thread settings and load right now."""
    from threadpoolctl import threadpool_info

    import shardarray as sa

    setting = sa.threads.last_setting()
    return {
        "cores_available": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "cpu": _cpu(),
        "free_page_reporting": _free_page_reporting(),
        "loadavg": list(os.getloadavg()),
        "blas": [{k: p.get(k) for k in ("internal_api", "num_threads", "version")} for p in threadpool_info()
                 if p.get("user_api") == "blas"],
        "shardarray_blas_setting": None if setting is None else {"threads": setting.threads, "reason": setting.reason},
        "thread_variables": {v: os.environ[v] for v in ("SHARDARRAY_BLAS_THREADS", "OPENBLAS_NUM_THREADS",
                                                        "OMP_NUM_THREADS", "MKL_NUM_THREADS") if v in os.environ},
    }


def _cpu() -> dict[str, Any]:
    """The CPU's model and its vector extensions (``/proc/cpuinfo``; what NumPy's sort and BLAS pick their
    kernels by, so two runs' NumPy baselines differ between CPUs that differ here)."""
    info: dict[str, Any] = {"machine": platform.machine()}
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return info
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "model name" and "model" not in info:
            info["model"] = value.strip()
        elif key.strip() == "flags" and "simd" not in info:
            info["simd"] = sorted(f for f in value.split() if f.startswith(("avx", "fma", "sse4", "amx")))
    return info


def _free_page_reporting() -> bool | None:
    """Whether the kernel hands free memory back to a hypervisor (virtio-balloon free page reporting): then a
    page freed for about two seconds faults on the host when touched again, and every fresh big allocation
    after idle time costs (``shardarray.backend.host_buffers`` says how much). None where it cannot be told."""
    devices = Path("/sys/bus/virtio/devices")
    if not devices.is_dir():
        return None if not Path("/sys/module").is_dir() else False
    for dev in devices.iterdir():
        try:
            if (dev / "device").read_text().strip() == "0x0005":  # a virtio balloon
                features = (dev / "features").read_text().strip()
                return len(features) > 5 and features[5] == "1"  # VIRTIO_BALLOON_F_REPORTING (bit 5)
        except OSError:
            continue
    return False


def default_output(name: str) -> str:
    """``/tmp/shardarray-bench/<name>.json`` (never the committed results)."""
    return str(Path(tempfile.gettempdir()) / "shardarray-bench" / f"{name}.json")


def output_path(path: str, force: bool) -> Path:
    """``path`` checked: an existing file under ``benchmarks/results/`` needs ``force``; exits with a message otherwise."""
    p = Path(path).resolve()
    if p.exists() and RESULTS in p.parents and not force:
        raise SystemExit(
            f"{path} is a committed result; pass --force to overwrite it, or --json PATH to write elsewhere"
        )
    p.parent.mkdir(parents=True, exist_ok=True)
    return p
