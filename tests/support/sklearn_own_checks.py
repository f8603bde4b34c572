"""scikit-learn's own array API checks, driven with ``shardarray.array_api`` (tests/clients/test_sklearn_own_checks.py).

scikit-learn ships the checks it runs on every estimator and metric that declares array API support
(``sklearn.utils.estimator_checks.check_array_api_*``; ``sklearn/metrics/tests/test_common.py``'s
``array_api_metric_checkers`` and ``test_mixed_array_api_namespace_input_compliance``). They take a namespace by
its importable name, so ``"shardarray.array_api"`` goes in where scikit-learn's own suite passes ``"cupy"`` or
``"torch"`` (device ``None``: the default mesh, 2x2 in the test, over which ``xp.asarray`` splits the samples).

What runs:

* the estimators: scikit-learn's own test instances (``_tested_estimators``) whose tags declare array API
  support, and the parameter variants whose tags declare it too (``EXTRA_ESTIMATORS``), each under every check of
  ``ESTIMATOR_CHECKS`` with scikit-learn's per-check parameters (``_yield_instances_for_check``);
* the metrics: every (metric, checker) pair of ``array_api_metric_checkers``, with the device and dtype
  scikit-learn passes for a namespace without its own (``None``, ``None``), and every metric of
  ``METRICS_SUPPORTING_MIXED_NAMESPACE`` with NumPy and shardarray inputs, both ways round.

``estimator_verdict`` says, for each pair that does not pass, why: ``BUG`` (shardarray's: the test is a strict
xfail naming the reproducer, so the fix flips it) or ``SKIP`` (scikit-learn calls something outside the standard
that shardarray refuses by design, assumes what a distributed array cannot give, or xfails the check itself).
``HOST_MIXING`` lists the metric checks whose metric, called with shardarray inputs and array API dispatch *off*
(scikit-learn's NumPy path: ``np.asarray`` works on the arrays), puts a NumPy array and one of ours into one
NumPy function (``np.unique(y_true) == np.array([0, 1])`` in ``_check_pos_label_consistency``; ``np.average`` of
the converted ``y`` with our ``sample_weight``): shardarray refuses that by design, with a typed ``sa.DTypeError``
(a host array never mixes with a distributed one implicitly). ``refusing_host_mixing`` checks that the refusal
comes and makes those calls again on the gathered inputs, so the rest of scikit-learn's check (the dispatch path)
still runs.

SciPy reads ``SCIPY_ARRAY_API=1`` once, when first imported (scikit-learn's losses call ``scipy.special.xlogy``
on the arrays, which only then dispatches), and the rest of the suite may have imported it already: the test runs
every case in one subprocess, this file as a script (``python tests/support/sklearn_own_checks.py numpy|cupy``,
SCIPY_ARRAY_API=1), which prints ``{case id: [passed, message]}`` as JSON on its last line.
"""

from __future__ import annotations

import functools
import json
import re
import sys
import traceback
import warnings
from typing import Any

import numpy as np
import strict_cupy
from helpers import gpu_available
from sklearn import get_config
from sklearn.calibration import CalibratedClassifierCV
from sklearn.decomposition import PCA
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.metrics.tests import test_common as metric_tests
from sklearn.mixture import GaussianMixture
from sklearn.utils import get_tags
from sklearn.utils._array_api import NamespaceAndDevice
from sklearn.utils._test_common.instance_generator import (
    PER_ESTIMATOR_XFAIL_CHECKS,
    _get_check_estimator_ids,
    _tested_estimators,
    _yield_instances_for_check,
)
from sklearn.utils.estimator_checks import (
    check_array_api_input,
    check_array_api_input_and_values,
    check_array_api_mixed_inputs,
    check_array_api_same_namespace,
)

import shardarray as sa
import shardarray.array_api as xp

NS = "shardarray.array_api"
OURS, NUMPY = NamespaceAndDevice(NS, None), NamespaceAndDevice("numpy", None)

#: scikit-learn's estimator checks: every input ours (its default float dtype; float32; the values compared), X ours
#: and y/sample_weight NumPy and the reverse (with sample weights), predict/transform refusing NumPy after fit
ESTIMATOR_CHECKS = {
    "input": functools.partial(check_array_api_input, array_namespace=NS),
    "input_float32": functools.partial(check_array_api_input, array_namespace=NS, dtype_name="float32"),
    "values": functools.partial(check_array_api_input_and_values, array_namespace=NS),
    "mixed_X_ours": functools.partial(check_array_api_mixed_inputs, X_ns_and_device=OURS, other_ns_and_device=NUMPY),
    "mixed_X_numpy": functools.partial(check_array_api_mixed_inputs, X_ns_and_device=NUMPY, other_ns_and_device=OURS),
    "same_namespace": functools.partial(check_array_api_same_namespace, array_namespace=NS),
}
#: the checks whose X is ours (the others give X as NumPy)
X_OURS = ("input", "input_float32", "values", "mixed_X_ours", "same_namespace")

#: parameter variants, beyond scikit-learn's test instances, whose tags declare array API support
EXTRA_ESTIMATORS = (
    PCA(svd_solver="covariance_eigh"),
    PCA(svd_solver="randomized", power_iteration_normalizer="QR"),
    PCA(n_components=3, whiten=True),
    LinearDiscriminantAnalysis(solver="lsqr"),
    LinearDiscriminantAnalysis(solver="eigen"),
    GaussianMixture(init_params="random", n_init=2, max_iter=5),
    GaussianMixture(init_params="random_from_data", n_init=2, max_iter=5),
    CalibratedClassifierCV(LogisticRegression(), method="temperature", cv=2),
    Ridge(solver="svd"),
)

BUG, SKIP = "bug", "skip"

SK_SAME_NAMESPACE = (
    "scikit-learn xfails check_array_api_same_namespace for it itself ('check_same_namespace not yet added'): its "
    "transform/predict does not check the namespace, so a NumPy X either runs or meets shardarray's typed "
    "refusal to mix host and mesh arrays (a DTypeError, not scikit-learn's message)"
)
SK_NO_SAME_NAMESPACE = (
    "Binarizer", "FeatureUnion", "GaussianNB", "KernelCenterer", "MinMaxScaler", "Normalizer", "Nystroem",
    "PoissonRegressor", "PolynomialFeatures", "StandardScaler",
)  # fmt: skip
SK_MIXED = (
    "scikit-learn xfails check_array_api_mixed_inputs for it itself ('mixed array API input support not added "
    "yet'): y/sample_weight are not moved to X's namespace (outputs in y's namespace, or NumPy meeting our Array)"
)
SK_NO_MIXED = ("GaussianNB", "LinearDiscriminantAnalysis", "CalibratedClassifierCV")
PCA_SINGULAR = (
    "scikit-learn xfails check_array_api_input for PCA() itself (gh-33205, 'linalg.inv fails because input is "
    "singular'): with n_components=n_features the noise variance is 0 and score() inverts the covariance of "
    "make_classification's rank-8 data, exactly singular or not as rounding goes (ours is, with NumPy shards and "
    "the CuPy stand-in alike; NumPy's inv refuses our covariance too, 4e-15 from NumPy's); and (c) components_ 8-9 "
    "span that null space, where any orthonormal basis is right and the distributed SVD/eigh picks another than "
    "LAPACK's. PCA(n_components=3, whiten=True) runs every check"
)
PCA_FULL_RANK_CHECKS = ("input", "input_float32", "values", "mixed_X_ours")
SVD_SIGN = (
    "(c) LinearDiscriminantAnalysis(solver='svd').scalings_ are singular vectors, defined up to sign; the distributed "
    "SVD returns the opposite sign of LAPACK's for some (NumPy documents no sign convention)"
)
LDA_NUMPY_SOLVERS = (
    "(c) scikit-learn: solvers 'lsqr' and 'eigen' are NumPy code (discriminant_analysis._class_cov: "
    "np.zeros(...) += the Array's covariance), though the tag declares support for every solver (only 'svd' is "
    "array API code, as its docstring says); shardarray refuses the host/mesh mix by design (sa.DTypeError)"
)
VIEW_WRITES = (
    "(b) scikit-learn's GaussianMixture writes reg_covar into covariances[k, :, :] through _add_to_diagonal, "
    "relying on basic indexing returning a view (mixture/_gaussian_mixture.py, "
    "_estimate_gaussian_covariances_full); the standard leaves views implementation-defined and shardarray's "
    "indexing returns a new array (JAX's value semantics, documented); the write into that copy raises "
    "sa.ArgumentError since round 16 (before, reg_covar was lost silently and the rank-8 covariance failed Cholesky)"
)
CALIBRATED_SAME_NAMESPACE = (
    "(c) scikit-learn: CalibratedClassifierCV.predict_proba reaches LogisticRegression.decision_function's "
    "namespace check, whose message names LogisticRegression, not the CalibratedClassifierCV the check expects"
)
LABEL_ENCODER = (
    "(c) scikit-learn's own checks never run LabelEncoder: its tags say input_tags.two_d_array=False (fit(y) "
    "takes no X), so the checks' fit(X, y) does not apply"
)


def declared_estimators() -> list:
    """Every estimator instance whose tags declare array API support: scikit-learn's test instances, then ours."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (deprecated estimators warn when made)
        return [e for e in (*_tested_estimators(), *EXTRA_ESTIMATORS) if get_tags(e).array_api_support]


def estimator_cases() -> list[tuple[str, Any, str]]:
    """``(id, estimator, check)`` for every declared estimator, check and scikit-learn's per-check parameters."""
    cases = []
    for est in declared_estimators():
        for check, fn in ESTIMATOR_CHECKS.items():
            for inst in _yield_instances_for_check(fn, est):
                cases.append((f"{_get_check_estimator_ids(inst)}-{check}", inst, check))
    return cases


def estimator_verdict(est: Any, check: str) -> tuple[str, str] | None:
    """Why ``check`` fails on ``est`` (``(BUG, reproducer)`` or ``(SKIP, reason)``), or None: it passes."""
    name, params = type(est).__name__, est.get_params(deep=False)
    if name == "LabelEncoder":
        return SKIP, LABEL_ENCODER
    if check == "same_namespace" and name in SK_NO_SAME_NAMESPACE:
        assert "check_array_api_same_namespace" in PER_ESTIMATOR_XFAIL_CHECKS[type(est)]
        return SKIP, SK_SAME_NAMESPACE
    if name == "LinearDiscriminantAnalysis" and params["solver"] != "svd":
        return SKIP, LDA_NUMPY_SOLVERS
    if check.startswith("mixed") and name in SK_NO_MIXED:
        assert "check_array_api_mixed_inputs" in PER_ESTIMATOR_XFAIL_CHECKS[type(est)]
        return SKIP, SK_MIXED
    if name == "GaussianMixture" and check in X_OURS:
        return SKIP, VIEW_WRITES
    if name == "CalibratedClassifierCV" and check == "same_namespace":
        return SKIP, CALIBRATED_SAME_NAMESPACE
    if name == "PCA" and params["n_components"] is None and check in PCA_FULL_RANK_CHECKS:
        return SKIP, PCA_SINGULAR
    if name == "LinearDiscriminantAnalysis" and check == "values":
        return SKIP, SVD_SIGN
    return None


#: the estimators whose fit warns sa.GatherWarning, and the op: RidgeCV's and PCA(svd_solver='covariance_eigh')'s
#: eigh of the n_features x n_features Gram/covariance matrix, split over 'col' (eigh has no distributed algorithm;
#: 10x10 here, 800 bytes); nothing of n_samples size is ever gathered
GATHERING = {"RidgeCV": "sa.linalg.eigh", "RidgeClassifierCV": "sa.linalg.eigh", "PCA": "sa.linalg.eigh"}


def metric_name(metric: Any) -> str:
    """``roc_curve``, ``mean_tweedie_deviance(power=1.5)``."""
    if isinstance(metric, functools.partial):
        return f"{metric.func.__name__}({','.join(f'{k}={v}' for k, v in metric.keywords.items())})"
    return metric.__name__


def metric_cases() -> list[tuple[str, Any, Any]]:
    """``(id, metric, checker)`` for every pair of scikit-learn's ``array_api_metric_checkers``."""
    return [
        (f"{metric_name(m)}-{re.sub('^check_array_api_', '', c.__name__)}", m, c)
        for m, c in metric_tests.yield_metric_checker_combinations()
    ]


#: (metric, checker) pairs whose dispatch-off calls with shardarray inputs meet shardarray's refusal to mix a NumPy
#: array with an Array (module docstring)
HOST_MIXING = {
    *((m, "binary_classification_metric") for m in ("det_curve", "precision_recall_curve", "roc_curve")),
    *(
        (m, f"{kind}_continuous_classification_metric")
        for m in ("brier_score_loss", "log_loss", "d2_brier_score", "d2_log_loss_score")
        for kind in ("binary", "multiclass", "multilabel")
    ),
    ("root_mean_squared_error", "regression_metric_multioutput"),
}


def _gathered(v: Any) -> Any:
    return np.asarray(v) if isinstance(v, xp.Array) else v


#: the messages of shardarray's refusals to mix a NumPy array with an Array (np.average's when its ``a`` is NumPy)
REFUSALS = ("NumPy arrays do not mix with an Array", "takes an array; got ndarray")


def refusing_host_mixing(metric: Any, refused: list) -> Any:
    """``metric``, whose dispatch-off calls with shardarray inputs that shardarray refuses (a ``sa.DTypeError``:
    scikit-learn's NumPy path mixed a NumPy array with one of them) append the message to ``refused`` and run again
    on the gathered inputs, as a user converting explicitly would."""

    @functools.wraps(metric)
    def call(*args: Any, **kwargs: Any) -> Any:
        if get_config()["array_api_dispatch"] or not any(isinstance(v, xp.Array) for v in [*args, *kwargs.values()]):
            return metric(*args, **kwargs)
        try:
            return metric(*args, **kwargs)
        except sa.DTypeError as e:
            if not any(r in str(e) for r in REFUSALS):
                raise
            refused.append(str(e))
        return metric(*map(_gathered, args), **{k: _gathered(v) for k, v in kwargs.items()})

    return call


def _check_refusing(checker: Any, metric: Any) -> None:
    """Run scikit-learn's ``checker`` on ``metric`` (a HOST_MIXING pair): the refusal must come, and the rest pass."""
    refused: list = []
    checker(refusing_host_mixing(metric, refused), NS, None, None)
    if not refused:
        raise AssertionError(f"{metric_name(metric)}: no refusal to mix NumPy and shardarray inputs (dispatch off)")


def mixed_metric_cases() -> list[tuple[str, str, Any, Any]]:
    """``(id, metric name, other inputs' namespace, y_pred's)`` for scikit-learn's mixed-namespace metric test."""
    ways = {"y_pred_ours": (NUMPY, OURS), "y_pred_numpy": (OURS, NUMPY)}
    names = sorted(metric_tests.METRICS_SUPPORTING_MIXED_NAMESPACE)
    return [(f"{name}-{way}", name, *ways[way]) for name in names for way in sorted(ways)]


#: a failure of a BUG case is the known bug when its message holds this
BUG_MATCH = "may_share_memory"


def _outcome(run: Any, allowed_gather: str | None = None) -> list:
    """``[passed, message]`` of ``run()``: an exception, or a GatherWarning other than ``allowed_gather``'s op."""
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            run()
    except Exception as e:  # reported per case
        where = traceback.extract_tb(e.__traceback__)[-1]
        return [False, f"{type(e).__name__}: {e} (at {where.filename}:{where.lineno})"[:1500]]
    gathered = [str(w.message) for w in caught if issubclass(w.category, sa.GatherWarning)]
    bad = [m for m in gathered if not (allowed_gather and m.startswith(allowed_gather))]
    return [not bad, f"GatherWarning: {bad[0]}"[:1500] if bad else ""]


def run_all() -> dict[str, list]:
    """Every case not skipped, on the default mesh: ``{id: [passed, message]}``."""
    out: dict[str, list] = {}
    for case_id, est, check in estimator_cases():
        verdict = estimator_verdict(est, check)
        if verdict is None or verdict[0] == BUG:
            run = functools.partial(ESTIMATOR_CHECKS[check], type(est).__name__, est)
            out[case_id] = _outcome(run, GATHERING.get(type(est).__name__))
    for case_id, metric, checker in metric_cases():
        if (metric_name(metric), checker.__name__.removeprefix("check_array_api_")) in HOST_MIXING:
            out[case_id] = _outcome(functools.partial(_check_refusing, checker, metric))
        else:
            out[case_id] = _outcome(functools.partial(checker, metric, NS, None, None))
    for case_id, name, other, y_pred in mixed_metric_cases():
        test = metric_tests.test_mixed_array_api_namespace_input_compliance
        out[case_id] = _outcome(functools.partial(test, name, other, y_pred))
    return out


def _main(backend: str) -> None:
    """Run every case on a 2x2 mesh of ``backend`` (``cupy``: a real GPU, else the strict stand-in); print JSON."""
    if backend == "cupy" and not gpu_available():
        strict_cupy.install_session(gpus=4)
    with sa.default_mesh(sa.Mesh({"row": 2, "col": 2}, backend=backend)):
        results = run_all()
    print(json.dumps(results))


if __name__ == "__main__":
    _main(sys.argv[1])
