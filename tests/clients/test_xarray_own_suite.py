"""xarray's OWN array-API and duck-array tests on ``shardarray.array_api`` arrays.

Their tests run unchanged, in one subprocess: ``python -m pytest -p xarray_own_suite`` on four test files
shipped in ``xarray/tests``, the plugin ``tests/support/xarray_own_suite.py`` answering their
array-API namespaces with ours (positional arrays on a 2x2 default mesh; see its docstring):

- ``test_array_api.py`` (all 13: arithmetic, reductions, astype, broadcast, concat, indexing, stack,
  unstack, where, each compared with NumPy by their own assertions), ``test_namedarray.py``'s
  ``test_duck_array_class_array_api`` and ``test_dtypes.py``'s ``test_isdtype[array_api-*]``: their
  ``array_api_strict`` is our namespace;
- ``test_duck_array_wrapping.py`` (the tests they run on CuPy, Dask, JAX, pint and sparse: top-level
  functions and about 60 ``DataArray`` methods, 90 tests): ``shardarray.array_api`` is one more of their
  namespaces. Their tests only check the result's type; the plugin also records each checked result and
  compares it with the same test on NumPy (shape, dtype, values).

A subprocess, not their functions called from here: their fixtures, parametrizations and conftest need
their own pytest session and rootdir (site-packages), and this suite's conftest must not apply to theirs.
As in their CI, warnings are errors (``-W error``: a ``sa.GatherWarning`` fails a test). Their own xfails
(``ffill``/``bfill``/``rank``/``rolling_exp``: bottleneck or numbagg; ``interp``/``interpolate_na``: NumPy
and SciPy; ``polyfit``: ``np.empty`` plus ``np.apply_along_axis``) stay theirs: with ``--runxfail`` they
fail on NumPy too, or return NumPy arrays by their design. Under ``--backend=cupy`` the subprocess puts
the mesh on CuPy shards (the strict stand-in without a GPU).

``SHARDARRAY_BUGS``: their tests failing on a gap of shardarray, each ``xfail(strict=True)`` with its
reproducer, so that the fix flips them.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from clients import mesh  # noqa: F401 (the fixture)
from helpers import backend_name

import shardarray.array_api as xp

xr = pytest.importorskip("xarray")

ROOT = Path(__file__).resolve().parents[2]
SITE = Path(xr.__file__).resolve().parent.parent
THEIR_FILES = ("test_array_api.py", "test_namedarray.py", "test_dtypes.py", "test_duck_array_wrapping.py")
WRAPPING = "xarray/tests/test_duck_array_wrapping.py::"

#: their tests failing on a shardarray gap: test id -> the reproducer (``xfail(strict=True)`` below). None left:
#: ``xr.cross`` called ``xp.cross`` (NumPy's signature), which the namespace lacked (round 16 added it).
SHARDARRAY_BUGS: dict[str, str] = {}


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    """Every selected test of theirs: ``{nodeid: [outcome, message]}`` (nodeids from site-packages)."""
    report = tmp_path_factory.mktemp("xarray_own_suite") / "outcomes.json"
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([str(ROOT / "tests" / "support"), os.environ.get("PYTHONPATH", "")]),
        SHARDARRAY_TEST_BACKEND=backend_name(),
        XARRAY_OWN_SUITE_REPORT=str(report),
    )
    env.pop("PYTEST_ADDOPTS", None)  # this session's options (--backend=...) are not theirs
    command = [
        sys.executable, "-m", "pytest", "-p", "xarray_own_suite", "-c", os.devnull, "--rootdir", str(SITE),
        "-p", "no:cacheprovider", "-q", "-W", "error", "-o", "xfail_strict=true",
        *(str(SITE / "xarray" / "tests" / name) for name in THEIR_FILES),
    ]  # fmt: skip
    proc = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert report.exists(), (proc.stdout[-3000:], proc.stderr[-3000:])
    return json.loads(report.read_text())


def _failures(results):
    return {nodeid: message for nodeid, (outcome, message) in results.items() if outcome not in ("passed", "xfailed")}


@pytest.mark.parametrize("module", THEIR_FILES)
def test_xarray_own_tests_pass(outcomes, module):
    prefix = f"xarray/tests/{module}::"
    mine = {nodeid: result for nodeid, result in outcomes.items() if nodeid.startswith(prefix)}
    failures = {nodeid: message for nodeid, message in _failures(mine).items() if nodeid not in SHARDARRAY_BUGS}
    assert not failures, failures
    assert any(outcome == "passed" for outcome, _ in mine.values()), f"{module}: nothing ran on shardarray"


def test_xarray_own_suite_ran_broadly(outcomes):
    passed = sum(outcome == "passed" for outcome, _ in outcomes.values())
    assert passed >= 100, f"only {passed} of their tests passed on shardarray: did the plugin deselect them?"
    assert all(outcomes[n][0] == "passed" for n in outcomes if n.startswith("xarray/tests/test_array_api.py::"))


def test_xarray_cross_runs_on_the_mesh(outcomes):
    """``xr.cross`` (their ``test_cross``) needs ``xp.cross``: it raised AttributeError before round 16."""
    assert outcomes[f"{WRAPPING}TestTopLevelMethods::test_cross[shardarray.array_api]"][0] == "passed"


@pytest.mark.usefixtures("mesh")
def test_cross_in_the_namespace():
    """xarray's ``duck_array_ops.cross``: ``get_array_namespace(a, b).cross(a, b)``, NumPy's signature."""
    a, b = np.array([[1.0, 2, 3], [0, 1, 0]]), np.array([[4.0, 5, 6], [1, 0, 0]])
    got = xp.cross(xp.asarray(a), xp.asarray(b))
    np.testing.assert_array_equal(got.numpy(), np.cross(a, b))
    np.testing.assert_array_equal(xp.cross(xp.asarray(a), xp.asarray(b), axis=-1).numpy(), np.cross(a, b))
