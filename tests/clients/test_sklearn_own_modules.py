"""scikit-learn's OWN array-API test modules, run unchanged with ``shardarray.array_api`` as their namespace.

scikit-learn 1.9's test modules parametrize their array-API tests over ``yield_namespaces()`` /
``yield_namespace_device_dtype_combinations()`` and call ``_array_api_for_tests(namespace, device)``; the
plugin ``tests/support/sklearn_own_modules.py`` makes those yield and return ``shardarray.array_api`` (device
``None``: a 2x2 default mesh), selects the tests parametrized with it, and records every outcome per test id.
One subprocess (``python -m pytest -p sklearn_own_modules``, ``SCIPY_ARRAY_API=1`` before SciPy is imported,
scikit-learn's own conftest applying): the rest of this suite has imported SciPy already, and their fixtures and
parametrizations need their own session. Under ``--backend=cupy`` the subprocess puts the mesh on CuPy shards
(the strict stand-in without a GPU).

CI size: every module of ``MODULES`` in float64 only (``DTYPES``; 481 tests, about 35 s of CPU). With both dtypes
(as for array-api-strict: ``SKLEARN_OWN_MODULES_DTYPES=float64,float32`` in the plugin's environment) 961 tests ran
in round 16, on NumPy and CuPy shards alike: 920 pass, 2 skip (``mpmath`` missing), 39 fail, none for a shardarray
bug (the same on a 3x2 and a 1-D 4-device default mesh, ``SKLEARN_OWN_MODULES_MESH``); every failure is in
``BY_DESIGN`` with its class and the message it must fail with:

- (b) host mixing: with array API dispatch on, scikit-learn's metrics still put a NumPy array and ours into one
  NumPy function (``np.unique(y_true) == np.array([0, 1])`` in ``_check_pos_label_consistency``; ``np.average``
  of a converted ``y`` with our weights); shardarray refuses with a typed ``sa.DTypeError`` (also in
  ``test_sklearn_own_checks.py``'s ``HOST_MIXING``).
- (b) no views: ``_estimate_gaussian_covariances_full`` adds ``reg_covar`` with
  ``_add_to_diagonal(covariances[k, :, :], ...)``, in place into a getitem result: a copy here (as in JAX; the
  standard leaves views unspecified), so the write is lost (``sa.CopyWriteWarning``) and the covariances lack
  ``reg_covar``: values off by 1e-6, or a singular covariance for ``random_from_data``.
- (b) QR signs: ``xp.linalg.qr`` makes ``R``'s diagonal non-negative on every layout (documented in
  ``shardarray/linalg/tsqr.py``); their test compares ``Q`` elementwise with LAPACK's Householder signs.

Gathers: the tests calling ``linalg.eigh``/``eigvalsh`` on a split matrix, or ``linalg.solve`` on a triangular
one, pass with a ``ReplicatedFallbackWarning`` (a warned gather, by design); ``test_only_linalg_gathers`` checks
that no other gather appears.
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import backend_name

sklearn = pytest.importorskip("sklearn")

ROOT = Path(__file__).resolve().parents[2]
SITE = Path(sklearn.__file__).resolve().parent.parent
DTYPES = "float64"

#: their test modules with array-API tests (sklearn/...), the ones of the brief first
MODULES = [
    "utils/tests/test_array_api.py",
    "metrics/tests/test_common.py",
    "metrics/tests/test_pairwise.py",
    "preprocessing/tests/test_data.py",
    "preprocessing/tests/test_label.py",
    "decomposition/tests/test_pca.py",
    "linear_model/tests/test_ridge.py",
    "mixture/tests/test_gaussian_mixture.py",
    "metrics/tests/test_classification.py",
    "metrics/cluster/tests/test_common.py",
    "metrics/cluster/tests/test_supervised.py",
    "_loss/tests/test_loss.py",
    "_loss/tests/test_link.py",
    "preprocessing/tests/test_polynomial.py",
    "tests/test_pipeline.py",
    "tests/test_calibration.py",
    "tests/test_kernel_approximation.py",
    "tests/test_naive_bayes.py",
    "utils/tests/test_validation.py",
    "utils/tests/test_multiclass.py",
    "utils/tests/test_indexing.py",
    "utils/tests/test_extmath.py",
    "utils/tests/test_optimize.py",
    "utils/tests/test_stats.py",
    "linear_model/tests/test_logistic.py",
    "linear_model/_glm/tests/test_glm.py",
    "model_selection/tests/test_split.py",
    "model_selection/tests/test_search.py",
    "model_selection/tests/test_validation.py",
]

#: under ``--backend=cupy`` (the CuPy stand-in, slower) the first eight, the modules of the brief
RUN = MODULES[:8] if backend_name() == "cupy" else MODULES

_HOST_MIXING = "NumPy arrays do not mix with an Array"
_CONTINUOUS = "|".join(f"{kind}_continuous_classification_metric" for kind in ("binary", "multiclass", "multilabel"))

#: their tests that fail by design: (test id regex, message regex, class and reason)
BY_DESIGN = [
    (
        r"metrics/tests/test_common\.py::test_array_api_compliance\[(det_curve|precision_recall_curve|roc_curve)"
        r"-check_array_api_binary_classification_metric-",
        _HOST_MIXING,
        "(b) np.unique(y_true) == np.array([0, 1]) in _check_pos_label_consistency: NumPy mixed with ours",
    ),
    (
        r"metrics/tests/test_common\.py::test_array_api_compliance\[(brier_score_loss|log_loss|d2_brier_score"
        rf"|d2_log_loss_score)-check_array_api_({_CONTINUOUS})-",
        _HOST_MIXING,
        "(b) np.average of a converted NumPy y with our arrays: NumPy mixed with ours",
    ),
    (
        r"metrics/tests/test_common\.py::test_array_api_compliance\[root_mean_squared_error"
        r"-check_array_api_regression_metric_multioutput-",
        _HOST_MIXING,
        "(b) np.average of a NumPy array with our weights: NumPy mixed with ours",
    ),
    (
        r"mixture/tests/test_gaussian_mixture\.py::test_gaussian_mixture_array_api_compliance\[(True|False)"
        r"-shardarray\.array_api-None-float64-full-random(_from_data)?\]"
        r"|mixture/tests/test_gaussian_mixture\.py::test_gaussian_mixture_array_api_compliance\[False"
        r"-shardarray\.array_api-None-float32-full-random_from_data\]",
        r"AssertionError|ill-defined empirical covariance",
        "(b) _add_to_diagonal(covariances[k, :, :], reg_covar): an in-place write into a getitem copy is lost",
    ),
    (
        r"utils/tests/test_extmath\.py::test_randomized_range_finder_array_api_compliance\[",
        r"AssertionError",
        "(b) xp.linalg.qr's R has a non-negative diagonal; their Q is compared with LAPACK's signs",
    ),
]

#: the gathers their tests may make (a ReplicatedFallbackWarning: a warned fallback of a split matrix)
LINALG_GATHER = re.compile(r"gathered: sa\.linalg\.(eigh|eigvalsh|solve): ")


def _by_design(nodeid):
    for pattern, message, reason in BY_DESIGN:
        if re.search(pattern, nodeid):
            return message, reason
    return None


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    """Every selected test of theirs: ``{nodeid: [outcome, message]}`` (nodeids relative to site-packages)."""
    report = tmp_path_factory.mktemp("sklearn_own_modules") / "outcomes.json"
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([str(ROOT / "tests" / "support"), os.environ.get("PYTHONPATH", "")]),
        SCIPY_ARRAY_API="1",
        SHARDARRAY_TEST_BACKEND=backend_name(),
        SKLEARN_OWN_MODULES_REPORT=str(report),
        SKLEARN_OWN_MODULES_DTYPES=DTYPES,
    )
    env.pop("PYTEST_ADDOPTS", None)  # this session's options (--backend=...) are not theirs
    command = [
        sys.executable, "-m", "pytest", "-p", "sklearn_own_modules", "-c", os.devnull, "--rootdir", str(SITE),
        "-p", "no:cacheprovider", "-q", *(str(SITE / "sklearn" / module) for module in RUN),
    ]  # fmt: skip
    proc = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert report.exists(), (proc.stdout[-3000:], proc.stderr[-3000:])
    return json.loads(report.read_text())


@pytest.mark.parametrize("module", RUN)
def test_sklearn_own_module_passes(outcomes, module):
    """Every test of theirs passes on shardarray, but those failing by design, which fail as they should."""
    mine = {nodeid: result for nodeid, result in outcomes.items() if nodeid.startswith(f"sklearn/{module}::")}
    unexpected = {}
    for nodeid, (outcome, message) in mine.items():
        design = _by_design(nodeid)
        if design is None and outcome not in ("passed", "skipped"):
            unexpected[nodeid] = message
        elif design is not None and not (outcome == "failed" and re.search(design[0], message)):
            unexpected[nodeid] = f"{outcome} {message!r}: expected to fail by design, {design[1]}"
    assert not unexpected, unexpected
    assert any(outcome == "passed" for outcome, _ in mine.values()), f"{module}: nothing ran on shardarray"


def test_only_linalg_gathers(outcomes):
    """A passing test that gathered did it in a warned linalg fallback, nowhere else."""
    gathers = {nodeid: message for nodeid, (outcome, message) in outcomes.items() if message.startswith("gathered")}
    assert all(LINALG_GATHER.match(message) for message in gathers.values()), gathers
    assert gathers, "no eigh/eigvalsh/solve fallback any more: update this test and the module docstring"


def test_sklearn_own_modules_ran_broadly(outcomes):
    passed = sum(outcome == "passed" for outcome, _ in outcomes.values())
    least = 420 if RUN is MODULES else 250
    assert passed >= least, f"only {passed} of their tests passed on shardarray: did the plugin deselect them?"
