"""scikit-learn's array API mode on ``shardarray.array_api`` arrays: estimators, metrics, kernels, a pipeline."""

import warnings

import numpy as np
import pytest

import shardarray as sa
import shardarray.array_api as xp
from clients import gathers, mesh, values  # noqa: F401 (mesh: the fixture)

sklearn = pytest.importorskip("sklearn")
from sklearn.decomposition import PCA  # noqa: E402
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis  # noqa: E402
from sklearn.linear_model import LogisticRegression, PoissonRegressor, Ridge  # noqa: E402
from sklearn.metrics import accuracy_score, mean_squared_error, pairwise, r2_score, roc_curve  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import MinMaxScaler, StandardScaler  # noqa: E402

N, D = 42, 6  # 42 samples over 'row' (blocks 21, 21)


def _data():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(N, D))
    return a, (a[:, 0] + 0.3 * a[:, 1] > 0).astype(np.int64), a @ np.arange(1.0, D + 1)


def _pca(m, a, y, t):
    z = PCA(n_components=3, svd_solver="full").fit_transform(m(a))
    return np.abs(values(z))  # components are defined up to sign


CASES = {
    "pca": _pca,
    "ridge": lambda m, a, y, t: Ridge(alpha=1.0).fit(m(a), m(t)).predict(m(a)),
    # (both read __array_namespace_info__().dtypes() by x.dtype: np.dtype keys, as NumPy's info gives)
    "logistic": lambda m, a, y, t: LogisticRegression().fit(m(a), m(y)).predict_proba(m(a)),
    "poisson": lambda m, a, y, t: PoissonRegressor().fit(m(a), m(np.abs(t) + 0.1)).predict(m(a)),
    "lda": lambda m, a, y, t: LinearDiscriminantAnalysis().fit(m(a), m(y)).predict_proba(m(a)),
    "standard_scaler": lambda m, a, y, t: StandardScaler().fit_transform(m(a)),
    "minmax_scaler": lambda m, a, y, t: MinMaxScaler().fit_transform(m(a)),
    "rbf_kernel": lambda m, a, y, t: pairwise.rbf_kernel(m(a), gamma=0.1),
    "polynomial_kernel": lambda m, a, y, t: pairwise.polynomial_kernel(m(a), degree=2),
    "cosine_similarity": lambda m, a, y, t: pairwise.cosine_similarity(m(a)),
    "euclidean_distances": lambda m, a, y, t: pairwise.euclidean_distances(m(a)),
    # (xp.diff(x, 2) with n by position and logical_or of float differences, as NumPy takes them)
    "roc_curve": lambda m, a, y, t: roc_curve(m(y), m(a[:, 0] + 0.5 * a[:, 2]))[1],
    "accuracy": lambda m, a, y, t: accuracy_score(m(y), m((a[:, 1] > 0).astype(np.int64))),
    "r2": lambda m, a, y, t: r2_score(m(t), m(t + a[:, 2])),
    "mse": lambda m, a, y, t: mean_squared_error(m(t), m(t + a[:, 2])),
    "pipeline": lambda m, a, y, t: make_pipeline(StandardScaler(), Ridge(alpha=0.5)).fit(m(a), m(t)).predict(m(a)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_sklearn_array_api_mode_matches_numpy(mesh, name, monkeypatch):
    # scikit-learn refuses array API mode unless SciPy's is announced (it reads the variable when configured)
    monkeypatch.setenv("SCIPY_ARRAY_API", "1")
    a, y, t = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = CASES[name](np.asarray, a, y, t)
        with sklearn.config_context(array_api_dispatch=True), sa.comm_log() as log:
            got = CASES[name](xp.asarray, a, y, t)
    if not np.isscalar(got) and not isinstance(got, float):
        assert isinstance(got, (xp.Array, np.ndarray)), type(got)
    np.testing.assert_allclose(values(got), values(expected), rtol=1e-8, atol=1e-10)
    # no allgather of the samples: at most the (small) per-feature or per-class statistics move
    assert not gathers(log, min_elements=N * D // 4 + 1), [(r.op, r.elements) for r in gathers(log)]
