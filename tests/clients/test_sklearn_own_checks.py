"""scikit-learn's OWN array API checks on ``shardarray.array_api`` arrays, for every estimator and metric that
declares array API support: what runs, and why each failure is skipped or xfailed, is in
tests/support/sklearn_own_checks.py.

scikit-learn's checks make the arrays themselves (``xp.asarray(X, device=None)``) on a 2x2 default mesh, which
splits them over 'row' and 'col'; the estimators fit 30 samples, the metrics take 4 to 6. SciPy reads
``SCIPY_ARRAY_API=1`` only when first imported, so every case runs in one subprocess that sets it first (on this
session's backend: NumPy, or CuPy shards on a GPU or the strict stand-in), and each test reads its case's result.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import backend_name

pytest.importorskip("sklearn")
own = pytest.importorskip("sklearn_own_checks")  # (tests/support; it imports scikit-learn's own test modules)

ROOT = Path(__file__).resolve().parents[2]


class KnownBug(AssertionError):
    """A case failing for the shardarray bug its xfail names (any other failure fails the test)."""


@pytest.fixture(scope="module")
def results():
    script = ROOT / "tests" / "support" / "sklearn_own_checks.py"
    path = os.pathsep.join([str(ROOT), str(script.parent), os.environ.get("PYTHONPATH", "")])
    env = dict(os.environ, SCIPY_ARRAY_API="1", PYTHONPATH=path)
    proc = subprocess.run(
        [sys.executable, str(script), backend_name()], env=env, cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _estimator_param(case_id, est, check):
    verdict = own.estimator_verdict(est, check)
    if verdict is None:
        return pytest.param(case_id, id=case_id)
    kind, reason = verdict
    if kind == own.BUG:
        return pytest.param(case_id, id=case_id, marks=pytest.mark.xfail(strict=True, raises=KnownBug, reason=reason))
    return pytest.param(case_id, id=case_id, marks=pytest.mark.skip(reason=reason))


def test_every_declared_estimator_and_metric_is_checked():
    names = {type(e).__name__ for e in own.declared_estimators()}
    # some of scikit-learn 1.9's array API estimators (a new one is picked up by its tags and checked below)
    assert {"LinearDiscriminantAnalysis", "LogisticRegression", "PCA", "Ridge", "RidgeCV", "StandardScaler"} <= names
    assert len(own.metric_cases()) >= 100 and len(own.mixed_metric_cases()) >= 60


@pytest.mark.parametrize("case", [_estimator_param(*case) for case in own.estimator_cases()])
def test_estimator_check(results, case):
    passed, message = results[case]
    if not passed and own.BUG_MATCH in message:
        raise KnownBug(message)
    assert passed, message


@pytest.mark.parametrize("case", [case_id for case_id, *_ in own.metric_cases()])
def test_metric_check(results, case):
    passed, message = results[case]
    assert passed, message


@pytest.mark.parametrize("case", [case_id for case_id, *_ in own.mixed_metric_cases()])
def test_metric_mixed_namespaces(results, case):
    passed, message = results[case]
    assert passed, message
