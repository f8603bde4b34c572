"""A pytest plugin that runs SciPy's own array API tests with ``shardarray.array_api`` as the ``xp`` backend.

SciPy's tests take their namespace from the ``xp`` fixture of ``scipy/conftest.py``, parametrized
over a fixed table of libraries (NumPy, array-api-strict, torch, CuPy, JAX, Dask). This plugin
imports that conftest first (pytest then reuses the module from ``sys.modules``), adds
``"shardarray.array_api"`` to its table of known backends (so ``np_only``/``skip_xp_backends``
markers apply to it as to any non-NumPy library) and replaces the ``xp`` fixture by one with
the same body whose only parameter is our namespace, on a 2x2 emulated mesh made the process's
default mesh (``sa.set_default_mesh``). ``SHARDARRAY_TEST_BACKEND=cupy`` gives that mesh CuPy
shards on the strict stand-in (``strict_cupy.py``), as ``tests/conftest.py`` does.

With ``SCIPY_OWN_SUITE_REPORT=path`` the plugin writes each SciPy test's outcome there as JSON
(``{test id: [outcome, message, host reads, seconds]}``); "host reads" name the SciPy functions that
read a whole Array through ``np.asarray`` (the explicit gather: SciPy's NumPy fallbacks, or a read
inside shardarray, then ``"<SciPy function> via <shardarray function>"``) and each ``sa.GatherWarning``.

Use it in a process that set ``SCIPY_ARRAY_API=1`` before SciPy was first imported::

    SCIPY_ARRAY_API=1 PYTHONPATH=tests/support python -m pytest -p scipy_own_suite \
        --pyargs scipy.special.tests.test_logsumexp
"""

from __future__ import annotations

import json
import os
import sys
from types import FrameType
from typing import Any

import pytest
import scipy.conftest as scipy_conftest  # (imported here first: pytest then reuses this module as SciPy's conftest)

import shardarray as sa
import shardarray.array_api as sxp

NAME = sxp.__name__  # "shardarray.array_api": the id in SciPy's backend table and in the test ids
MESH_SHAPE = {"row": 2, "col": 2}
CUPY = os.environ.get("SHARDARRAY_TEST_BACKEND", "numpy") == "cupy"


if CUPY:  # (the helpers load only under the CuPy backend: the stand-in takes seconds to import)
    from helpers import gpu_available
    from strict_cupy import install_session

    if not gpu_available():
        install_session(gpus=8)  # the strict stand-in, for the process's life (as tests/conftest.py's --backend=cupy)
MESH = sa.Mesh(MESH_SHAPE, backend="cupy" if CUPY else "numpy")
sa.set_default_mesh(MESH)
scipy_conftest.xp_known_backends.add(NAME)


@pytest.fixture(params=[pytest.param(sxp, id=NAME, marks=pytest.mark.array_api_backends)])
def xp(request):
    """SciPy's ``xp`` fixture (``scipy/conftest.py``) with ``shardarray.array_api`` as its only backend."""
    scipy_conftest.skip_or_xfail_xp_backends(request, "skip")
    scipy_conftest.skip_or_xfail_xp_backends(request, "xfail")
    ns = scipy_conftest.array_namespace(request.param.empty(0))
    with scipy_conftest.patch_lazy_xp_functions(request=request, xp=request.param):
        with scipy_conftest.default_xp(ns):
            yield ns


scipy_conftest.xp = xp


_OUTCOMES: dict[str, list] = {}  # node id -> [outcome, message, host reads, seconds]
_HOST_READS: list[str] = []  # who read a whole Array through np.asarray in the running test
#: SciPy's test helpers (``scipy._lib._array_api``): their reads are the test's comparison, not the function's
_TEST_HELPERS = frozenset(
    {
        "xp_assert_close",
        "xp_assert_equal",
        "xp_assert_less",
        "xp_assert_close_nulp",
        "_strict_check",
        "_xp_copy_to_numpy",
        "assert_array_almost_equal",
        "assert_almost_equal",
    }
)


def _host_read_caller() -> str | None:
    """Who reads a whole Array through ``np.asarray``: the SciPy function (``module.function``), followed by
    ``via <shardarray function>`` when the read is inside shardarray; None for the test's own comparisons."""
    frame: FrameType | None = sys._getframe(2)
    inner = ""
    while frame is not None:
        mod, name = frame.f_globals.get("__name__", ""), frame.f_code.co_name
        if mod.startswith(("numpy.testing", "_pytest")) or ".tests." in mod or name in _TEST_HELPERS:
            return None
        if mod.startswith("shardarray") and not inner and name != "wrapper":
            inner = f" via {mod}.{name}"
        elif not mod.startswith(("shardarray", "numpy", "contextlib", "functools")):
            return f"{mod}.{name}{inner}"
        frame = frame.f_back
    return None


_ARRAY = sa.ShardArray.__array__


def _counting_array(self: sa.ShardArray, *args: Any, **kwargs: Any) -> Any:
    """``ShardArray.__array__`` that notes who called it (``_host_read_caller``) before gathering."""
    caller = _host_read_caller()
    if caller is not None and self.size > 1:
        _HOST_READS.append(caller)
    return _ARRAY(self, *args, **kwargs)


sa.ShardArray.__array__ = _counting_array  # type: ignore[method-assign]


def pytest_runtest_setup(item):
    """Start each test with no host reads counted."""
    _HOST_READS.clear()


def pytest_warning_recorded(warning_message, when, nodeid, location):
    """Count each ``sa.GatherWarning`` (a fallback that gathers a split array) as a host read of its test."""
    if issubclass(warning_message.category, sa.GatherWarning) and nodeid in _OUTCOMES:
        reads = _OUTCOMES[nodeid][2]
        reads.append(f"GatherWarning: {str(warning_message.message)[:120]}")


def pytest_runtest_logreport(report):
    """Record each test's outcome (``passed``/``failed``/``skipped``/``xfailed``) and the error's last line."""
    if report.when != "call" and not (report.failed or report.skipped):
        return
    outcome = "xfailed" if hasattr(report, "wasxfail") and report.skipped else report.outcome
    msg = ""
    if report.failed:
        crash = getattr(report.longrepr, "reprcrash", None)
        msg = crash.message if crash is not None else str(report.longrepr)[-300:]
    elif report.skipped and isinstance(report.longrepr, tuple):
        msg = str(report.longrepr[2])
    _OUTCOMES[report.nodeid] = [outcome, msg[:400], sorted(set(_HOST_READS)), round(report.duration, 3)]
    _HOST_READS.clear()


def pytest_sessionfinish(session):
    """Write the outcomes as JSON to ``$SCIPY_OWN_SUITE_REPORT`` when it is set."""
    path = os.environ.get("SCIPY_OWN_SUITE_REPORT")
    if path:
        with open(path, "w") as f:
            json.dump(_OUTCOMES, f, indent=0)
