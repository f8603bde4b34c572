"""marray's OWN test suite (``marray/tests/test_marray.py``) on ``shardarray.array_api`` arrays.

marray (``marray.masked_namespace(xp)``: the masked arrays SciPy's masked statistics use) tests every function
of its masked namespace against ``np.ma`` on random data of every dtype, parametrized over a list of
namespaces. Their tests run unchanged, in one subprocess: ``python -m pytest -p marray_own_suite`` on their
test file, the plugin ``tests/support/marray_own_suite.py`` making our namespace their only ``xp`` (2x2 default
mesh: their arrays split with uneven and empty blocks; see its docstring). A subprocess, not their functions
called from here: their parametrizations and module globals need their own pytest session and rootdir
(site-packages), and this suite's conftest must not apply to theirs. Warnings as in their configuration, and
a ``sa.GatherWarning`` fails a test.

The whole suite (``MARRAY_OWN_SUITE_SAMPLE=0`` in the plugin's environment, marray 0.0.12): 3,899 tests on
our namespace, about 45 s of CPU here: 3,387 pass, 150 skip (their own skips), 21 xfail by their own
``pass_exceptions`` (integer negative powers, marray's sentinel values) and the rest have a class:

- ``(a)`` shardarray gaps: none left. The 4 tests of ``astype`` of a complex array to bool, which the standard
  defines (``0 + 0j`` is False) and we refused, pass since the fix (``FIXED``: in every selection).
- ``(b)`` by design, 337 tests: 324 are the standard's dtype refusals (``sin`` of an integer array, ``atan2``
  of a complex one, ``astype`` of complex to real, ``-`` of bools...), which we raise as ``sa.DTypeError``
  as array-api-strict does; their ``pass_exceptions`` xfails such a refusal only in the wordings it knows
  (array-api-strict's, NumPy's, torch's), so the plugin xfails ours after checking each against the
  standard's dtype categories (``standard_refusal``). 13 are ``test_dlpack``: ``__dlpack__`` of a split
  array raises ``sa.ExportError`` (a ``BufferError``; all 13 pass on a 1-device mesh): deselected, and
  checked here on its own. And their references ``np.ma.masked_array(<our array>)`` (``test_manipulation``)
  read our arrays whole with NumPy: that ``sa.GatherWarning`` is ignored (16 tests), every other one fails.
- No ``(c)`` or ``(d)``: no wrong value, no other exception from our code, no other gather. The same holds
  on the 3x2, 4, 2x2x2 and 1-device meshes with fresh seeds, and on CuPy shards (the strict stand-in).

CI size: ``SAMPLE`` parametrizations of each of their test functions, evenly spaced over dtypes and functions
(about 640 tests, 11 s of CPU); under ``--backend=cupy`` ``CUPY_SAMPLE`` (about 230 tests, 7 s).
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from clients import mesh  # noqa: F401 (the fixture)
from helpers import backend_name
from marray_own_suite import standard_refusal

import shardarray as sa
import shardarray.array_api as xp

marray = pytest.importorskip("marray")

ROOT = Path(__file__).resolve().parents[2]
SITE = Path(marray.__file__).resolve().parent.parent
THEIR_FILE = "marray/tests/test_marray.py"
SAMPLE = 20
CUPY_SAMPLE = 6

#: their tests deselected for a reason outside shardarray's bugs: node id prefix -> reason
NOT_OURS = {
    f"{THEIR_FILE}::test_dlpack": (
        "(b) __dlpack__ of a split array raises sa.ExportError, a BufferError (no single buffer holds it); "
        "test_split_masked_array_refuses_dlpack checks it"
    ),
}
ASTYPE_COMPLEX_TO_BOOL = (
    "(a, fixed) xp.astype(xp.asarray(np.array([0j, 1j, 2 + 0j])), xp.bool) raised sa.DTypeError ('would drop its "
    "imaginary part'); the standard (astype, since 2022.12) and NumPy give [False, True, True]: "
    "shardarray/ops/manipulation/structure.py astype refuses every complex -> non-complex cast, bool included"
)
#: their tests failing on a shardarray gap: node id -> the reproducer (each a strict xfail, in every selection)
SHARDARRAY_BUGS: dict[str, str] = {}
#: their tests that failed on a shardarray gap, fixed since: node id -> what it was (each in every selection, to pass)
FIXED: dict[str, str] = {
    f"{THEIR_FILE}::test_astype[shardarray-{copy}-bool-{dtype}]": ASTYPE_COMPLEX_TO_BOOL
    for copy in (False, True)
    for dtype in ("complex64", "complex128")
}

#: their test functions (``def test_*``) that run on a namespace: each must pass somewhere in the selection
THEIR_FUNCTIONS = sorted(re.findall(r"^def (test_\w+)\([^)]*\bxp\b(?!=)", (SITE / THEIR_FILE).read_text(), re.M))


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    """Every selected test of theirs: ``{nodeid: [outcome, message]}`` (node ids from site-packages)."""
    report = tmp_path_factory.mktemp("marray_own_suite") / "outcomes.json"
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([str(ROOT / "tests" / "support"), os.environ.get("PYTHONPATH", "")]),
        SHARDARRAY_TEST_BACKEND=backend_name(),
        MARRAY_OWN_SUITE_REPORT=str(report),
        MARRAY_OWN_SUITE_SAMPLE=str(CUPY_SAMPLE if backend_name() == "cupy" else SAMPLE),
        MARRAY_OWN_SUITE_XFAIL=json.dumps(SHARDARRAY_BUGS),
        MARRAY_OWN_SUITE_KEEP=json.dumps(list(FIXED)),
    )
    env.pop("PYTEST_ADDOPTS", None)  # this session's options (--backend=...) are not theirs
    env.pop("MARRAY_OWN_SUITE_EXPLORE", None)
    deselect = [arg for nodeid in NOT_OURS for arg in ("--deselect", nodeid)]
    command = [
        sys.executable, "-m", "pytest", "-p", "marray_own_suite", "-c", os.devnull, "--rootdir", str(SITE),
        "-p", "no:cacheprovider", "-q", "-o", "xfail_strict=true", *deselect, str(SITE / THEIR_FILE),
    ]  # fmt: skip
    proc = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert report.exists(), (proc.stdout[-3000:], proc.stderr[-3000:])
    return json.loads(report.read_text())


def _function(nodeid):
    return nodeid.split("::", 1)[1].split("[", 1)[0]


@pytest.mark.parametrize("function", THEIR_FUNCTIONS)
def test_marray_own_tests_pass(outcomes, function):
    mine = {nodeid: result for nodeid, result in outcomes.items() if _function(nodeid) == function}
    if f"{THEIR_FILE}::{function}" in NOT_OURS:
        assert not mine, f"{function} should be deselected: {NOT_OURS[f'{THEIR_FILE}::{function}']}"
        return
    failures = {
        nodeid: message
        for nodeid, (outcome, message) in mine.items()
        if outcome not in ("passed", "skipped", "xfailed") and nodeid not in SHARDARRAY_BUGS
    }
    assert not failures, failures
    assert any(outcome == "passed" for outcome, _ in mine.values()), f"{function}: nothing passed on shardarray"


def test_marray_own_suite_ran_broadly(outcomes):
    passed = sum(outcome == "passed" for outcome, _ in outcomes.values())
    least = 180 if backend_name() == "cupy" else 500
    assert passed >= least, f"only {passed} of their tests passed on shardarray: did the plugin deselect them?"


def test_xfails_are_theirs_or_the_standards_refusals(outcomes):
    """An xfail is their own (``pass_exceptions`` on a wording it knows) or a refusal ``standard_refusal`` checked."""
    xfails = {nodeid: message for nodeid, (outcome, message) in outcomes.items() if outcome == "xfailed"}
    known = (
        "(a) ",  # SHARDARRAY_BUGS
        "(b) the standard's dtype refusal",  # the plugin's, checked
        "Integers to negative integer powers are not allowed",  # their allowed wording (NumPy's), ours too
        "value of the data's dtype is included",  # marray's own NotImplementedError (sentinel values)
    )
    assert all(any(k in message for k in known) for message in xfails.values()), xfails


def test_shardarray_bugs_are_strict_xfails(outcomes):
    """Each of ``SHARDARRAY_BUGS`` ran and failed; a fix makes it an XPASS(strict), a failure: drop it then."""
    assert {nodeid: outcomes.get(nodeid, ["not run"])[0] for nodeid in SHARDARRAY_BUGS} == dict.fromkeys(
        SHARDARRAY_BUGS, "xfailed"
    )


@pytest.mark.parametrize("nodeid", FIXED)
def test_their_tests_of_fixed_gaps_pass(outcomes, nodeid):
    assert outcomes.get(nodeid, ["not run"])[0] == "passed", (FIXED[nodeid], outcomes.get(nodeid))


@pytest.mark.usefixtures("mesh")
def test_astype_complex_to_bool_is_the_standards_cast():
    """The standard's astype: a complex value casts to bool as ``value != 0`` (NumPy's too)."""
    z = np.array([0j, 1j, 2 + 0j, -0.0 + 0j, complex(np.nan, 0)])
    got = xp.astype(xp.asarray(z), xp.bool)
    np.testing.assert_array_equal(np.asarray(got), z.astype(bool))


@pytest.mark.usefixtures("mesh")
def test_standard_refusal_tells_the_standards_refusals_from_bugs():
    """The plugin xfails an ``sa.DTypeError`` only for a dtype outside the standard's categories of the function."""
    ints = xp.asarray(np.arange(6))
    with pytest.raises(sa.DTypeError) as sin_of_int:
        xp.sin(ints)
    assert "sin of int64" in standard_refusal(sin_of_int.value, {"dtype": "int64"})
    assert standard_refusal(sin_of_int.value, {"dtype": "float64"}) is None  # the test's dtype is allowed: a bug
    assert standard_refusal(sin_of_int.value, {"dtype": "int8"}) is None  # not the test's array: a bug
    with pytest.raises(sa.DTypeError) as sin_of_uint8:
        xp.sin(xp.asarray(np.arange(6, dtype=np.uint8)))
    assert standard_refusal(sin_of_uint8.value, {"dtype": "int8"}) is None  # int8 is not named by uint8
    assert standard_refusal(ValueError("sin: int64"), {"dtype": "int64"}) is None  # not a typed refusal
    with pytest.raises(sa.DTypeError) as cast:
        xp.astype(xp.asarray(np.arange(6) + 1j), xp.float64)
    assert standard_refusal(cast.value, {"dtype_in": "complex128", "dtype_out": "float64"})
    assert standard_refusal(cast.value, {"dtype_in": "float64", "dtype_out": "complex128"}) is None
    assert standard_refusal(cast.value, {"dtype_in": "complex128", "dtype_out": "bool"}) is None  # the standard's


@pytest.mark.usefixtures("mesh")
def test_split_masked_array_refuses_dlpack():
    """Their ``test_dlpack`` on a split array: the refusal is a ``BufferError`` (``sa.ExportError``), by design."""
    mxp = marray.masked_namespace(xp)
    x = mxp.asarray(xp.asarray(np.arange(6.0)), mask=xp.asarray(np.arange(6) % 2 == 0))
    assert x.data.layout  # split over the mesh
    with pytest.raises(BufferError):
        x.__dlpack__()
    with pytest.raises(sa.ExportError):
        x.__dlpack__()
    np.testing.assert_array_equal(np.asarray(x.data), np.arange(6.0))
