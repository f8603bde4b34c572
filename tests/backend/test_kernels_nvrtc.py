"""The fused CUDA kernels compiled by NVRTC from the package index, as CuPy 14.2 compiles them on a GPU.

No GPU is needed. For each ``kernels/*.cu``, the source and options that
``backend/cuda_kernels.py`` hands to ``cupy.RawModule`` (recorded through a
stand-in ``cupy`` module) are compiled by the libnvrtc of CUDA 12 and of CUDA
13 (``tests/support/nvrtc.py``) with the options CuPy adds, for sm_80 (A100)
and sm_90 (H100), to a CUBIN (CuPy's default) and to PTX (CuPy under
``CUPY_COMPILE_WITH_PTX=1``). Each must compile with an empty log (a warning
fails) and define every kernel the launcher looks up.

``pip install -e ".[nvrtc]"`` installs the two NVRTCs. Without them these tests
skip, unless ``SHARDARRAY_REQUIRE_NVRTC=1`` (CI sets it): then a missing NVRTC
fails.
"""

from __future__ import annotations

import os
import re
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import nvrtc  # tests/support/nvrtc.py
import pytest

from shardarray.backend import cuda_kernels

ARCHS = (80, 90)  # A100, H100


@dataclass
class RawModuleCall:
    """One ``cupy.RawModule(...)`` the launcher made: its source, its options and any other argument."""

    code: str
    options: tuple[str, ...]
    other: dict[str, Any] = field(default_factory=dict)


def _record_launcher_modules() -> dict[str, RawModuleCall]:
    """The ``RawModule`` the launcher makes for each of ``cuda_kernels.SOURCES``, through its public ``supports``.

    A stand-in ``cupy`` (``Device`` and a ``RawModule`` that records and compiles nothing) is in ``sys.modules``
    meanwhile, and the launcher's caches are empty, so every source is built afresh.
    """
    calls: list[RawModuleCall] = []

    class RawModule:
        def __init__(self, code: str = "", options: tuple[str, ...] = (), **other: Any) -> None:
            calls.append(RawModuleCall(code, tuple(options), other))

        def compile(self) -> None:
            pass

    class Device:
        def __init__(self, gpu: int | None = None) -> None:
            self.id = gpu or 0

        def __enter__(self) -> Device:
            return self

        def __exit__(self, *exc: object) -> None:
            return None

    cupy = types.ModuleType("cupy")
    cupy.RawModule = RawModule  # type: ignore[attr-defined]
    cupy.cuda = types.SimpleNamespace(Device=Device)  # type: ignore[attr-defined]
    recorded: dict[str, RawModuleCall] = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(sys.modules, "cupy", cupy)
        mp.delenv("SHARDARRAY_KERNELS", raising=False)
        for cache in ("_MODULES", "_FUNCTIONS", "_BROKEN"):
            mp.setattr(cuda_kernels, cache, {})
        for name in cuda_kernels.SOURCES:
            assert cuda_kernels.supports(cupy, np.float32, name), cuda_kernels._BROKEN
            assert len(calls) == 1, f"kernels/{name}.cu made {len(calls)} RawModules, not one"
            recorded[name] = calls.pop()
    return recorded


def _looked_up() -> dict[str, set[str]]:
    """The functions the launcher gets from each source's module: ``_fn(source, kernel, dtype)`` looks up
    ``<kernel>_<suffix>`` for the dtype's suffix (bf16, f16, f32, f64)."""
    text = Path(cuda_kernels.__file__).read_text()
    names: dict[str, set[str]] = {name: set() for name in cuda_kernels.SOURCES}
    for source, kernel in re.findall(r'_fn\(\s*"(\w+)",\s*"(\w+)"', text):
        names[source] |= {f"{kernel}_{suffix}" for suffix in cuda_kernels._SUFFIX.values()}
    # kernels of no float type, looked up by name: _function(cupy, source, kernel)
    for source, kernel in re.findall(r'_function\(\s*\w+,\s*"(\w+)",\s*"(\w+)"\)', text):
        names[source].add(kernel)
    names["elementwise"] |= set(cuda_kernels.CASTS.values())  # _function(xp, "elementwise", kernel) from CASTS
    return names


LOOKED_UP = _looked_up()


@pytest.fixture(scope="module")
def launcher_modules() -> dict[str, RawModuleCall]:
    """The launcher's ``RawModule`` call for each source (``_record_launcher_modules``), made once per module."""
    return _record_launcher_modules()


@pytest.fixture(scope="module", params=sorted(nvrtc.DISTRIBUTIONS), ids=lambda cuda: f"cuda{cuda}")
def compiler(request: pytest.FixtureRequest) -> nvrtc.Nvrtc:
    """The NVRTC of CUDA 12 or 13 from its wheel; a skip (a failure under ``SHARDARRAY_REQUIRE_NVRTC=1``)
    when the wheel is not installed."""
    cuda = request.param
    found = nvrtc.installed(cuda)
    if found is None:
        reason = (
            f"needs {nvrtc.DISTRIBUTIONS[cuda]} (the NVRTC of CUDA {cuda}, no GPU needed): pip install -e '.[nvrtc]'"
        )
        if os.environ.get("SHARDARRAY_REQUIRE_NVRTC") == "1":
            pytest.fail(f"{reason}; SHARDARRAY_REQUIRE_NVRTC=1 makes a missing NVRTC a failure")
        pytest.skip(reason)
    lib = nvrtc.Nvrtc(found.path)
    assert lib.version[0] == cuda, f"{found.distribution} {found.version} loads NVRTC {lib.version}"
    return lib


def test_every_kernel_file_is_built_by_the_launcher() -> None:
    """Every ``.cu`` file of ``kernels/`` is one of the launcher's sources, and each source's kernels are looked up."""
    files = {path.stem for path in cuda_kernels.source_dir().glob("*.cu")}
    assert files == set(cuda_kernels.SOURCES)
    assert all(LOOKED_UP[name] for name in cuda_kernels.SOURCES), LOOKED_UP


def test_the_launcher_compiles_what_this_test_reproduces(launcher_modules: dict[str, RawModuleCall]) -> None:
    """The launcher's ``RawModule`` calls are what ``nvrtc.cupy_options`` reproduces: NVRTC (CuPy's default
    backend), no name expressions or jitify, and sources without ``#include`` (so CuPy's ``-I`` options, left
    out here, change nothing)."""
    for name, call in launcher_modules.items():
        assert call.code == cuda_kernels.source(name)
        assert not call.other, f"kernels/{name}.cu: RawModule{tuple(call.other)} is not reproduced by this test"
        assert not re.search(r"^\s*#\s*include", call.code, re.MULTILINE), (
            f"kernels/{name}.cu includes a header: add the CUDA headers' wheel to the nvrtc extra and CuPy's -I "
            f"options to tests/support/nvrtc.py's cupy_options"
        )


@pytest.mark.parametrize("output", ["cubin", "ptx"])
@pytest.mark.parametrize("arch", ARCHS, ids=lambda arch: f"sm_{arch}")
@pytest.mark.parametrize("name", cuda_kernels.SOURCES)
def test_kernels_compile_without_warnings(
    launcher_modules: dict[str, RawModuleCall], compiler: nvrtc.Nvrtc, name: str, arch: int, output: str
) -> None:
    """``kernels/<name>.cu`` compiles as CuPy compiles it for ``arch``, with an empty log, and defines every kernel
    the launcher looks up (by its unmangled ``extern "C"`` name)."""
    assert arch in compiler.supported_archs, f"NVRTC {compiler.version} does not compile for sm_{arch}"
    call = launcher_modules[name]
    options = nvrtc.cupy_options(call.options, arch, ptx=output == "ptx")
    result = compiler.compile(call.code, options, name=f"{name}.cu")
    common = (cuda_kernels.source_dir() / "common.cuh").read_text().count("\n") + 1
    where = (
        f"kernels/{name}.cu (the log's line numbers count common.cuh's {common} first) by NVRTC {compiler.version} "
        f"with {' '.join(options)}"
    )
    assert result.ok, f"{where}: {result.status}\n{result.log}"
    assert not result.log, f"{where}: warnings\n{result.log}"
    missing = LOOKED_UP[name] - result.kernels()
    assert not missing, f"{where}: the launcher looks up {sorted(missing)}, which the {output} does not define"
