"""xarray's own array-API and duck-array tests on ``shardarray.array_api``: a pytest plugin.

xarray ships its tests inside the package (``xarray/tests``). The ones that run xarray's machinery on a
non-NumPy namespace take it from three places, each answered here by ``shardarray.array_api`` (positional
arrays on a 2x2 default mesh, ``row`` x ``col``: every ``asarray`` splits axis k over mesh axis k, with
uneven and empty blocks for their small arrays)::

    python -m pytest -p xarray_own_suite -c /dev/null --rootdir <site-packages> \\
        <site-packages>/xarray/tests/test_array_api.py ...      # with tests/support on PYTHONPATH

- ``array_api_strict`` (``test_array_api.py``, ``test_namedarray.py``, ``test_dtypes.py``): the module
  name answers our namespace, ``array_api_strict._array_object.Array`` is ``shardarray.array_api.Array``.
  Installed in ``sys.modules`` when this plugin is imported, before ``xarray.tests`` evaluates its
  ``requires_array_api_strict``. array-api-strict is not installed in this environment; if it is, the
  plugin still shadows it for the subprocess it runs in.
- ``test_duck_array_wrapping.py``'s ``NAMESPACE_ARRAYS``/``NAMESPACES``: a new namespace
  ``shardarray.array_api`` (its ``Array``, its ``asarray``), with no xfails of theirs; the other
  namespaces' tests (CuPy, Dask, JAX, pint, sparse) are deselected.

Their conftest (``xarray/tests/conftest.py``) stays: this suite's conftest does not apply (the rootdir is
site-packages). Every test runs with the 2x2 mesh as the default mesh (setup, call and teardown).

The environment:

- ``SHARDARRAY_TEST_BACKEND=cupy``: the mesh on CuPy shards (the strict stand-in of ``strict_cupy.py``
  without a GPU).
- ``XARRAY_OWN_SUITE_REPORT=<path>``: every selected test's outcome as JSON, ``{nodeid: [outcome,
  message]}``, outcome ``passed``, ``failed``, ``skipped``, ``xfailed`` or ``xpassed``, message the
  failure's first line or the skip's reason.
- ``XARRAY_OWN_SUITE_MESH="row=3,col=2"``: another default mesh (exploring; 2x2 by default).
"""

from __future__ import annotations

import os
import sys
import types
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np
import own_suite_outcomes
import pytest
from helpers import EnvMeshes, gpu_available

import shardarray as sa
import shardarray.array_api as sxp

#: the name their duck-array tests import (``importlib.import_module``)
NAMESPACE = "shardarray.array_api"
#: tests of theirs that take array-api-strict (our namespace here); the duck-array ones are parametrized
STRICT_TESTS = (
    "xarray/tests/test_array_api.py::",
    "xarray/tests/test_namedarray.py::TestNamedArray::test_duck_array_class_array_api",
    "xarray/tests/test_dtypes.py::test_isdtype[array_api-",
)

#: ``XARRAY_OWN_SUITE_VALUES=0``: their duck-array tests check types only (values against NumPy by default)
_VALUES = os.environ.get("XARRAY_OWN_SUITE_VALUES", "1") != "0"

_MESHES: dict[str, sa.Mesh] = {}
_OUTCOMES = own_suite_outcomes.OUTCOMES
_RECORDS: dict[str, list[np.ndarray]] = {}


class _Recorder:
    """Their ``self.Array``: ``isinstance(result.data, self.Array)`` checks the type and records the value."""

    def __init__(self, cls: type, into: list[np.ndarray]) -> None:
        self.cls, self.into = cls, into

    def __instancecheck__(self, instance: Any) -> bool:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", sa.GatherWarning)  # the check's own gather, not theirs
            self.into.append(instance.numpy() if isinstance(instance, sxp.Array) else np.asarray(instance))
        return isinstance(instance, self.cls)


class _StrictNamespace(types.ModuleType):
    """``array_api_strict`` as their tests import it: ``shardarray.array_api`` under that name."""

    __version__ = "2.4"

    def __getattr__(self, name: str) -> Any:
        return getattr(sxp, name)


def _install_namespace() -> None:
    """``import array_api_strict`` (and ``array_api_strict._array_object``) answers our namespace."""
    strict = _StrictNamespace("array_api_strict")
    array_object = types.ModuleType("array_api_strict._array_object")
    array_object.Array = sxp.Array  # type: ignore[attr-defined]
    strict._array_object = array_object  # type: ignore[attr-defined]
    sys.modules["array_api_strict"] = strict
    sys.modules["array_api_strict._array_object"] = array_object


_install_namespace()


def _backend() -> str:
    return os.environ.get("SHARDARRAY_TEST_BACKEND", "numpy")


def _mesh() -> sa.Mesh:
    spec = os.environ.get("XARRAY_OWN_SUITE_MESH", "row=2,col=2")
    if spec not in _MESHES:
        shape = {name: int(size) for name, size in (part.split("=") for part in spec.split(","))}
        _MESHES[spec] = sa.Mesh(shape, backend=_backend())
    return _MESHES[spec]


def _add_duck_array_namespace() -> None:
    """Our namespace in ``test_duck_array_wrapping``'s table, before pytest parametrizes its classes."""
    import xarray.tests.test_duck_array_wrapping as wrapping  # the module pytest collects (same name)

    wrapping.NAMESPACE_ARRAYS[NAMESPACE] = {"attrs": {"array": "Array", "constructor": "asarray"}, "xfails": {}}
    if NAMESPACE not in wrapping.NAMESPACES:
        wrapping.NAMESPACES.append(NAMESPACE)
    if _VALUES:  # NumPy's own results, the reference of ours
        wrapping.NAMESPACE_ARRAYS["numpy"] = {"attrs": {"array": "ndarray", "constructor": "asarray"}, "xfails": {}}
        wrapping.NAMESPACES.append("numpy")


def pytest_configure(config: pytest.Config) -> None:
    if _backend() == "cupy":
        if not gpu_available():
            from strict_cupy import install_session  # only on the CuPy run

            install_session(gpus=8)
        sys.modules["shardarray.default_mesh"]._ENV_CACHE = EnvMeshes("cupy")  # type: ignore[attr-defined]
    _add_duck_array_namespace()


def _params(nodeid: str) -> list[str]:
    return nodeid.rstrip("]").split("[", 1)[1].split("-") if "[" in nodeid else []


def _ours(nodeid: str) -> bool:
    if "test_duck_array_wrapping.py::" in nodeid:
        return NAMESPACE in _params(nodeid) or (_VALUES and "numpy" in _params(nodeid))
    return nodeid.startswith(STRICT_TESTS)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    keep = [item for item in items if _ours(item.nodeid)]
    drop = [item for item in items if not _ours(item.nodeid)]
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    with sa.default_mesh(_mesh()):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> Iterator[Any]:
    instance = getattr(pyfuncitem, "instance", None)
    if _VALUES and "test_duck_array_wrapping.py::" in pyfuncitem.nodeid and hasattr(instance, "Array"):
        instance.Array = _Recorder(instance.Array, _RECORDS.setdefault(pyfuncitem.nodeid, []))
    return (yield)


def _mismatch(got: list[np.ndarray], expected: list[np.ndarray]) -> str:
    """Why ``got`` (ours, gathered) differs from ``expected`` (NumPy's), or ``""``."""
    if len(got) != len(expected):
        return f"{len(got)} results checked, NumPy's test {len(expected)}"
    for k, (g, e) in enumerate(zip(got, expected, strict=True)):
        if g.shape != e.shape or g.dtype != e.dtype:
            return f"result {k}: shape {g.shape} dtype {g.dtype}, NumPy's {e.shape} {e.dtype}"
        close = np.allclose if e.dtype.kind in "fc" else np.array_equal
        if not close(g, e, equal_nan=True):
            return f"result {k}: {g.ravel()[:8].tolist()}, NumPy's {e.ravel()[:8].tolist()}"
    return ""


def _check_values() -> None:
    """Each of our passing duck-array tests against the same test on NumPy; NumPy's outcomes leave the report."""
    for nodeid in [n for n in _OUTCOMES if "numpy" in _params(n) and "test_duck_array_wrapping.py::" in n]:
        reference = _OUTCOMES.pop(nodeid)
        ours = nodeid.replace("-numpy]", f"-{NAMESPACE}]").replace("[numpy", f"[{NAMESPACE}")
        if reference[0] != "passed" or _OUTCOMES.get(ours, [""])[0] != "passed":
            continue
        why = _mismatch(_RECORDS.get(ours, []), _RECORDS.get(nodeid, []))
        if why:
            _OUTCOMES[ours] = ["failed", f"value differs from NumPy's: {why}"]


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    own_suite_outcomes.record(report)


def pytest_sessionfinish(session: pytest.Session) -> None:
    _check_values()
    own_suite_outcomes.write("XARRAY_OWN_SUITE_REPORT")
