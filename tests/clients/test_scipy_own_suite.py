"""SciPy's OWN array API tests (its ``xp``-parametrized tests) with ``shardarray.array_api`` as the backend.

``tests/clients/test_scipy.py`` calls a hand-picked list of SciPy functions; this file runs a CI-sized
selection of SciPy's own test functions, as SciPy ships them (``scipy/*/tests``), with our namespace as
their ``xp``, on a 2x2 emulated mesh (rows and columns split, uneven blocks where the sizes are odd).

Why a subprocess: SciPy reads ``SCIPY_ARRAY_API=1`` once, when it is first imported (the rest of our
suite may have imported it without), and its tests need SciPy's own ``conftest.py`` (the ``xp``
fixture, the ``skip_xp_backends`` markers, its hypothesis profile), which belongs to a pytest session
rooted in the installed package, not to ours. So one ``python -m pytest`` run over the selected SciPy
test files, with the plugin ``tests/support/scipy_own_suite.py`` (it makes our namespace SciPy's only
backend and records each SciPy test's outcome, and every ``np.asarray`` of a whole array that a SciPy
function makes, as JSON), and the tests here read that record per SciPy file and per known gap. Under
``SHARDARRAY_TEST_BACKEND=cupy`` the subprocess inherits the variable and the mesh gets CuPy shards
(the strict stand-in without a GPU); a smaller selection runs there, the stand-in being slower.

``GAPS`` are SciPy tests that fail because of a shardarray gap (class (a)); each is a strict xfail
naming a NumPy reproducer, so a fix flips it. ``NOT_OURS`` are the SciPy tests that fail for other
reasons (a SciPy call outside the standard that we refuse by design, a test assumption that a
distributed array cannot meet); they are deselected, with the reason. ``HOST_READS`` are the SciPy
functions that read a whole array through ``np.asarray`` (SciPy's own NumPy fallback, the explicit
gather); any other read fails its file's test. The lists were drawn up against SciPy 1.17.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

scipy = pytest.importorskip("scipy")

SCIPY = Path(scipy.__file__).parent
SUPPORT = Path(__file__).resolve().parents[1] / "support"
CUPY = os.environ.get("SHARDARRAY_TEST_BACKEND", "numpy") == "cupy"
P = "[shardarray.array_api"  # the start of every test id's backend parameter

#: SciPy test files (relative to the installed ``scipy`` package), or parts of them, that run; the second
#: field says whether they also run under the CuPy stand-in (slower: a smaller selection)
FILES: dict[str, bool] = {
    "special/tests/test_logsumexp.py": True,
    "fft/tests/test_basic.py::TestFFT": True,
    "fft/tests/test_helper.py": False,
    "fft/tests/test_real_transforms.py::test_orthogonalize_default": False,
    "cluster/tests/test_vq.py::TestVq": True,
    "cluster/tests/test_hierarchy.py::TestLinkage": False,
    "_lib/tests/test_array_api.py::TestArrayAPI": True,
    "stats/tests/test_stats.py::TestXP_Mean": True,
    "stats/tests/test_entropy.py::TestEntropy": True,
    "stats/tests/test_stats.py::TestXP_Var": False,
    "stats/tests/test_stats.py::TestMoments": False,
    "stats/tests/test_variation.py": False,
    "stats/tests/test_rank.py::TestRankData": False,
}

#: SciPy tests left out for time (they pass): hundreds of parametrizations of one check
SLOW = (
    "special/tests/test_logsumexp.py::TestLogSumExp::test_gh22601_infinite_elements",
    "special/tests/test_logsumexp.py::TestLogSumExp::test_logsumexp[",
)

#: class (a): shardarray gaps; SciPy test id -> the NumPy reproducer (strict xfail until fixed)
GAPS: dict[str, str] = {}

#: SciPy tests that failed on a shardarray gap this suite found and that a fix made pass (they run and must pass)
FIXED: dict[str, str] = {
    "integrate/tests/test_quadrature.py::TestQMCQuad::test_basic[shardarray.array_api-8-256]": (
        "np.isclose(np.float64(1.0), np.float64(1.05), atol=xp.asarray(0.1)) raised AttributeError (only the "
        "tolerance an Array, as numpy.testing.assert_allclose passes it)"
    ),
    "stats/tests/test_continued_fraction.py::TestContinuedFraction::test_maxiter[shardarray.array_api]": (
        "xp.full(3, xp.asarray(1.0)) raised DTypeError (a 0-d array fill_value)"
    ),
    "stats/tests/test_hypotests.py::TestCvm::test_low_p[shardarray.array_api]": (
        "xp.arange(1, xp.asarray(4.0)) raised DTypeError (a 0-d array bound)"
    ),
    "stats/tests/test_stats.py::TestMode::test_keepdims_nonempty[shardarray.array_api]": (
        "a write into a basic index's copy (xpx.at(x[..., 0])[mask].set(0), read afterwards) was refused by an "
        "early form of round 16's guard; it now warns only when the written copy is freed unread (sa.copies)"
    ),
    "stats/tests/test_rank.py::TestRankData::test_big_tie[shardarray.array_api-1000000]": (
        "left out for time (SLOW): xp.repeat(xp.asarray([1.5]), n) on a split axis moved n one-element segments "
        "(about 1 s per 10**5 copies); each device now fetches the entries covering its block (0.5 s for 10**6)"
    ),
    "stats/tests/test_rank.py::TestRankData::test_basic[shardarray.array_api]": (
        "HOST_READ_GAPS: xp.repeat(x, counts) with an Array counts read counts to the host (twice, np.asarray) "
        "and built the output's index vector there; it now scans the counts on the mesh (TestRankData's files "
        "fail on any host read)"
    ),
}

#: not shardarray bugs: SciPy test id prefix -> its class and reason (deselected)
NOT_OURS: dict[str, str] = {
    "special/tests/test_logsumexp.py::TestSoftmax::test_softmax_int_array": (
        "(b) xp.exp of an integer array is refused by design (the standard defines exp for floats; SciPy "
        "xfails it for array_api_strict too)"
    ),
    "special/tests/test_logsumexp.py::TestLogSoftmax::test_log_softmax_int_array": "(b) as above",
    "cluster/tests/test_vq.py::TestKMeans::test_krandinit": (
        "(c) a statistical check with a fixed sample: our SVD's singular vectors may differ in sign from LAPACK's "
        "(both valid), which draws another sample whose covariance misses atol by 6e-4"
    ),
    "stats/tests/test_stats.py::TestXP_Mean::test_dtype": (
        "(c) asserts NumPy's float32 overflow in mean([max, max]); the split mean scales each block's sum "
        "before the allreduce and returns max"
    ),
}

#: SciPy functions (prefixes of ``module.function``) that read a whole array to the host (``np.asarray``, the
#: explicit gather) by SciPy's design: its NumPy fallback for a backend without a native implementation (class (b))
HOST_READS = (
    "scipy.special._support_alternative_backends.",  # special functions: np.asarray, SciPy's ufunc, xp.asarray
    "scipy.fft._realtransforms_backend._execute",  # dct/dst (no array API counterpart)
    "scipy._lib.array_api_extra._lib._lazy.wrapper",  # xpx.lazy_apply (hierarchy's compiled code)
    "scipy.spatial.distance.cdist",  # compiled distances (vq)
    "scipy.cluster.vq.vq",
)

#: class (a): whole arrays that shardarray itself reads to the host without a GatherWarning, as
#: ``"<SciPy caller> via <shardarray function>"`` -> the reproducer (strict xfail until fixed)
HOST_READ_GAPS: dict[str, str] = {}


def _known_read(read: str) -> bool:
    """Whether a host read is SciPy's own fallback (``HOST_READS``) or a known gap (``HOST_READ_GAPS``)."""
    return read in HOST_READ_GAPS or (" via " not in read and read.startswith(HOST_READS))


def _selected() -> list[str]:
    return [f for f, on_cupy in FILES.items() if on_cupy or not CUPY]


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    """SciPy's pytest run over the selection: {test id: [outcome, message, host reads, seconds]}."""
    tmp = tmp_path_factory.mktemp("scipy_own_suite")
    report, ini = tmp / "outcomes.json", tmp / "pytest.ini"
    ini.write_text("[pytest]\n")
    env = dict(
        os.environ,
        SCIPY_ARRAY_API="1",
        SCIPY_OWN_SUITE_REPORT=str(report),
        PYTHONPATH=os.pathsep.join([str(SUPPORT), os.environ.get("PYTHONPATH", "")]),
    )
    args = [str(SCIPY / f) for f in [*_selected(), *GAPS, *FIXED]]
    args += [a for prefix in [*NOT_OURS, *SLOW] for a in ("--deselect", prefix)]
    cmd = [sys.executable, "-m", "pytest", "-c", str(ini), "--rootdir", str(SCIPY), "-p", "scipy_own_suite"]
    cmd += ["-p", "no:cacheprovider", "-q", "-m", "array_api_backends", *args]
    proc = subprocess.run(cmd, env=env, cwd=tmp, capture_output=True, text=True, timeout=600)
    if not report.exists():
        pytest.fail(
            f"SciPy's test run left no record (exit {proc.returncode}):\n{proc.stdout[-3000:]}{proc.stderr[-2000:]}"
        )
    return json.loads(report.read_text())


@pytest.mark.parametrize("selector", _selected())
def test_scipy_own_tests_pass(outcomes, selector):
    """Every SciPy test of the selection passes (or is skipped by SciPy's own markers), known gaps aside."""
    mine = {k: v for k, v in outcomes.items() if k.startswith(selector) and P in k and k not in GAPS}
    assert any(v[0] == "passed" for v in mine.values()), f"no SciPy test of {selector} ran: {sorted(mine)[:5]}"
    failed = {k: v[1] for k, v in mine.items() if v[0] == "failed"}
    assert not failed, json.dumps(failed, indent=1)[:4000]
    reads = {k: [r for r in v[2] if not _known_read(r)] for k, v in mine.items()}
    reads = {k: v for k, v in reads.items() if v}
    assert not reads, f"whole arrays read to the host: {json.dumps(reads, indent=1)[:3000]}"


def test_scipy_own_tests_known_gaps_ran(outcomes):
    """Every known gap's SciPy test ran (a renamed one would otherwise hide in its strict xfail)."""
    missing = [k for k in GAPS if k not in outcomes]
    assert not missing, f"not in SciPy {scipy.__version__}'s tests (renamed?): {missing}"


@pytest.mark.parametrize("test_id", FIXED)
def test_scipy_own_tests_of_fixed_gaps_pass(outcomes, test_id):
    """The SciPy tests whose failures were shardarray gaps fixed since (``FIXED``)."""
    assert outcomes.get(test_id, ["missing", ""])[0] == "passed", (FIXED[test_id], outcomes.get(test_id))


@pytest.mark.parametrize(
    "test_id", [pytest.param(k, marks=pytest.mark.xfail(strict=True, reason=v)) for k, v in GAPS.items()]
)
def test_scipy_own_tests_known_gaps(outcomes, test_id):
    """The SciPy tests that fail because of a shardarray gap; each flips to passing when the gap is fixed."""
    assert outcomes.get(test_id, ["missing", ""])[0] == "passed", outcomes.get(test_id)


@pytest.mark.parametrize(
    "read", [pytest.param(k, marks=pytest.mark.xfail(strict=True, reason=v)) for k, v in HOST_READ_GAPS.items()]
)
def test_scipy_own_tests_known_host_reads(outcomes, read):
    """The whole-array host reads inside shardarray that SciPy's tests meet; each flips when it is removed."""
    if CUPY:
        pytest.xfail("the reading tests run under the NumPy backend only")  # (keeps the strict xfail's outcome)
    seen = [k for k, v in outcomes.items() if read in v[2]]
    assert not seen, f"{read}: in {len(seen)} SciPy tests, e.g. {seen[:3]}"
