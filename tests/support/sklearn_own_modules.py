"""scikit-learn's own array-API test modules on ``shardarray.array_api``: a pytest plugin injecting our namespace.

scikit-learn's test modules parametrize their array-API tests over ``yield_namespaces()`` /
``yield_namespace_device_dtype_combinations()`` (``sklearn/utils/_array_api.py``) and turn each namespace
name into a module with ``_array_api_for_tests(namespace, device)`` (``sklearn/utils/_testing.py``). This plugin
replaces those three before any test module imports them, so the modules' own test functions run unchanged
with ``"shardarray.array_api"`` as their only namespace::

    SCIPY_ARRAY_API=1 python -m pytest -p sklearn_own_modules -c /dev/null --rootdir <site-packages> \\
        <site-packages>/sklearn/utils/tests/test_array_api.py ...      # with tests/support on PYTHONPATH

- ``yield_namespaces()`` yields ``"shardarray.array_api"`` only; ``yield_namespace_device_dtype_combinations()``
  yields it with device ``None`` and dtypes ``"float64"`` and ``"float32"`` (as for array-api-strict;
  ``SKLEARN_OWN_MODULES_DTYPES=float64`` for one of them).
- ``_array_api_for_tests(...)`` returns ``(shardarray.array_api, None)``: device ``None`` is the default mesh,
  ``row=2,col=2`` (``SKLEARN_OWN_MODULES_MESH="row=3,col=2"`` for another), over which ``xp.asarray`` splits
  axis k over mesh axis k, with uneven and empty blocks for small arrays.
- Only the tests parametrized with our namespace are selected (their id names ``shardarray.array_api``); the
  rest of each module (NumPy-only tests, mixed-namespace permutations naming other libraries) is deselected.
- scikit-learn's own conftest applies (``global_random_seed``, ``global_dtype``, ...); SciPy reads
  ``SCIPY_ARRAY_API=1`` when first imported, so it is set here before scikit-learn (and SciPy) are imported.

The environment:

- ``SHARDARRAY_TEST_BACKEND=cupy``: the mesh on CuPy shards (the strict stand-in of ``strict_cupy.py`` without
  a GPU).
- ``SKLEARN_OWN_MODULES_REPORT=<path>``: every selected test's outcome as JSON (``own_suite_outcomes``).
- A test that gathers warns ``sa.GatherWarning`` (e.g. ``linalg.eigh`` on a split matrix: a warned fallback, by
  design); it still runs to its end, and a passing one has the warning's first line as its message
  (``"gathered: ..."``), so the caller can count and check them.
- ``SKLEARN_OWN_MODULES_PER_TEST=k``: only the first ``k`` parametrizations of each test function (CI size).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

os.environ.setdefault("SCIPY_ARRAY_API", "1")  # before SciPy is imported (scikit-learn imports it)

import own_suite_outcomes
import pytest
import sklearn.utils._array_api as sk_array_api
import sklearn.utils._testing as sk_testing
import sklearn.utils.estimator_checks as sk_checks
import strict_cupy
from helpers import EnvMeshes, gpu_available

import shardarray as sa
import shardarray.array_api as sxp

NS = "shardarray.array_api"
_MESHES: dict[str, Any] = {}
#: test id -> the first ``sa.GatherWarning`` (a warned gather: by design) it raised
_GATHERS: dict[str, str] = {}


def yield_namespaces(include_numpy_namespaces: bool = True) -> Iterator[str]:
    """Our namespace only (it is no NumPy namespace, so ``include_numpy_namespaces`` keeps it)."""
    yield NS


def yield_namespace_device_dtype_combinations(include_numpy_namespaces: bool = True) -> Iterator[tuple]:
    """Our namespace on the default mesh (device ``None``), in float64 and float32 (``SKLEARN_OWN_MODULES_DTYPES``)."""
    for dtype_name in os.environ.get("SKLEARN_OWN_MODULES_DTYPES", "float64,float32").split(","):
        yield NS, None, dtype_name


def _array_api_for_tests(array_namespace: str, device_name: Any = None, dtype_name: Any = None) -> tuple:
    """``(shardarray.array_api, None)``: device ``None`` is the default mesh."""
    return sxp, None


for _module in (sk_array_api, sk_testing, sk_checks):
    for _name, _value in (
        ("yield_namespaces", yield_namespaces),
        ("yield_namespace_device_dtype_combinations", yield_namespace_device_dtype_combinations),
        ("_array_api_for_tests", _array_api_for_tests),
    ):
        if hasattr(_module, _name):
            setattr(_module, _name, _value)


def _backend() -> str:
    return os.environ.get("SHARDARRAY_TEST_BACKEND", "numpy")


def _mesh() -> sa.Mesh:
    spec = os.environ.get("SKLEARN_OWN_MODULES_MESH", "row=2,col=2")
    if spec not in _MESHES:
        shape = {name: int(size) for name, size in (part.split("=") for part in spec.split(","))}
        _MESHES[spec] = sa.Mesh(shape, backend=_backend())
    return _MESHES[spec]


def pytest_configure(config: pytest.Config) -> None:
    if _backend() == "cupy":
        if not gpu_available():
            strict_cupy.install_session(gpus=8)
        sys.modules["shardarray.default_mesh"]._ENV_CACHE = EnvMeshes("cupy")  # type: ignore[attr-defined]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    keep, drop = [], []
    cap = int(os.environ.get("SKLEARN_OWN_MODULES_PER_TEST", "0"))
    seen: dict[str, int] = {}
    for item in items:
        base = item.nodeid.split("[", 1)[0]
        ours = NS in item.nodeid
        if ours:
            seen[base] = seen.get(base, 0) + 1
        (keep if ours and (not cap or seen[base] <= cap) else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


@pytest.fixture(autouse=True)
def _shardarray_default_mesh() -> Iterator[None]:
    """Every test on the 2x2 default mesh."""
    with sa.default_mesh(_mesh()):
        yield


def pytest_warning_recorded(warning_message: Any, when: str, nodeid: str, location: Any) -> None:
    if nodeid and issubclass(warning_message.category, sa.GatherWarning):
        _GATHERS.setdefault(nodeid, str(warning_message.message).splitlines()[0][:300])


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    own_suite_outcomes.record(report)


def pytest_sessionfinish(session: pytest.Session) -> None:
    for nodeid, message in _GATHERS.items():  # a passing test that gathered (warned): the warning is its message
        if own_suite_outcomes.OUTCOMES.get(nodeid, [""])[0] == "passed":
            own_suite_outcomes.OUTCOMES[nodeid] = ["passed", f"gathered: {message}"]
    own_suite_outcomes.write("SKLEARN_OWN_MODULES_REPORT")
