"""array-api-extra's OWN test suite, and einops' array-API tests, on ``shardarray.array_api`` arrays.

Their tests run unchanged, in one subprocess: ``python -m pytest -p xpx_own_suite --noconftest`` on
their test files, the plugin ``tests/support/xpx_own_suite.py`` standing in for their conftest (its
``xp`` is our namespace with a 2x2 default mesh, ``device`` another mesh; see its docstring). A
subprocess, not their functions called from here: their fixtures, parametrizations, markers and
monkeypatches need their own pytest session, rootdir and ``--noconftest`` (this suite's conftest must
not apply to theirs, nor theirs to ours); the plugin writes every outcome per test id as JSON, and the
tests here check them per test module of theirs. As in their CI, warnings are errors (``-W error``:
a ``sa.GatherWarning`` fails a test) and hypothesis draws fixed examples (10 per test).

CI size: the first ``PER_TEST`` parametrizations of each of their test functions (about 320 tests);
``XPX_OWN_SUITE_PER_TEST=0`` in the plugin's environment runs all of them (1,267 from array-api-extra
0.11.5, all passing but the two of ``NOT_OURS``). Under ``--backend=cupy`` the subprocess puts the
meshes on CuPy shards too (the strict stand-in without a GPU).

``NOT_OURS``: their tests that fail for a reason outside shardarray's bugs, deselected with the reason.
``test_split_array_dlpack_refusal_is_a_buffer_error`` is the one shardarray bug the suite found (their
assertion helpers on a split array: ``__dlpack__`` raised a ``LayoutError`` where the DLPack protocol says
``BufferError``; now ``sa.ExportError``, both).
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

xpx = pytest.importorskip("array_api_extra")
einops_array_api = pytest.importorskip("einops.array_api")
xpx_testing = pytest.importorskip("array_api_extra.testing")

ROOT = Path(__file__).resolve().parents[2]
SITE = Path(xpx.__file__).resolve().parent.parent
XPX_TESTS = Path(xpx.__file__).resolve().parent / "tests" / "main"
EINOPS_TESTS = Path(einops_array_api.__file__).resolve().parent / "tests"
PER_TEST = 2

XPX_MODULES = sorted(p.name for p in XPX_TESTS.glob("test_*.py"))
EINOPS_IDS = [
    "einops/tests/test_ops.py::test_rearrange_array_api",
    "einops/tests/test_ops.py::test_reduce_array_api",
    "einops/tests/test_ops.py::test_repeat_array_api",
    "einops/tests/test_packing.py::test_pack_unpack_array_api",
]

#: their tests failing for a reason that is not a shardarray bug (deselected): test id -> reason
NOT_OURS = {
    "array_api_extra/tests/main/test_set.py::TestNUnique::test_delegates[shardarray]": (
        "(d) their premise: xpx.nunique delegates to unique_counts only for the namespaces it names "
        "(NumPy, CuPy, torch, mparray, JAX); others take the agnostic fallback, which the test forbids "
        "(their conftest skips it for array-api-strict for that reason)"
    ),
    "array_api_extra/tests/main/test_testing.py::test_lazy_xp_function_cython_ufuncs[shardarray]": (
        "(b) scipy.special.erf(x), a ufunc with no namespace counterpart: Array.__array_ufunc__ returns "
        "NotImplemented by design and NumPy raises its TypeError (array-api-strict raises too; their "
        "test expects that only for array-api-strict and JAX)"
    ),
}


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    """Every selected test of theirs: ``{nodeid: [outcome, message]}`` (nodeids from site-packages)."""
    report = tmp_path_factory.mktemp("xpx_own_suite") / "outcomes.json"
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([str(ROOT / "tests" / "support"), os.environ.get("PYTHONPATH", "")]),
        SHARDARRAY_TEST_BACKEND=backend_name(),
        XPX_OWN_SUITE_REPORT=str(report),
        XPX_OWN_SUITE_PER_TEST=str(PER_TEST),
        XPX_OWN_SUITE_EINOPS_GATHER="1",  # their asnumpy is np.from_dlpack, refused by a split array by design
        EINOPS_TEST_BACKENDS="numpy",
    )
    env.pop("PYTEST_ADDOPTS", None)  # this session's options (--backend=...) are not theirs
    deselect = [arg for nodeid in NOT_OURS for arg in ("--deselect", nodeid)]
    command = [
        sys.executable, "-m", "pytest", "-p", "xpx_own_suite", "--noconftest", "-c", os.devnull,
        "--rootdir", str(SITE), "-p", "no:cacheprovider", "-q", "-W", "error", "-o", "xfail_strict=true",
        *deselect, str(XPX_TESTS), *(str(SITE / nodeid) for nodeid in EINOPS_IDS),
    ]  # fmt: skip
    proc = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert report.exists(), (proc.stdout[-3000:], proc.stderr[-3000:])
    return json.loads(report.read_text())


def _failures(results):
    return {nodeid: message for nodeid, (outcome, message) in results.items() if outcome not in ("passed", "skipped")}


@pytest.mark.parametrize("module", XPX_MODULES)
def test_xpx_own_tests_pass(outcomes, module):
    prefix = f"array_api_extra/tests/main/{module}::"
    mine = {nodeid: result for nodeid, result in outcomes.items() if nodeid.startswith(prefix)}
    assert not _failures(mine), _failures(mine)
    if module not in ("test_deprecation.py", "test_public_api.py", "test_version.py"):  # no namespace in them
        assert any(outcome == "passed" for outcome, _ in mine.values()), f"{module}: nothing ran on shardarray"


def test_xpx_own_suite_ran_broadly(outcomes):
    passed = sum(outcome == "passed" for outcome, _ in outcomes.values())
    assert passed >= 250, f"only {passed} of their tests passed on shardarray: did the plugin deselect them?"


@pytest.mark.parametrize("nodeid", EINOPS_IDS)
def test_einops_own_array_api_tests_pass(outcomes, nodeid):
    assert outcomes.get(nodeid, ["not run", ""])[0] == "passed", outcomes.get(nodeid)


@pytest.mark.usefixtures("mesh")
def test_split_array_dlpack_refusal_is_a_buffer_error():
    """Their assertion helpers on a split array, unpatched: the one failure of their whole suite that is ours."""
    x = xp.asarray(np.arange(6.0))
    assert x.layout  # split over 'row'
    with pytest.raises(BufferError):
        np.from_dlpack(x)
    xpx_testing.assert_equal(x, xp.asarray(np.arange(6.0)))
