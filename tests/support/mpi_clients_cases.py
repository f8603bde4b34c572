"""Client libraries on ``shardarray.array_api`` under MPI, case by case (``tests/mpi/test_clients_mpi.py``).

Run as a job: ``mpiexec -n 2 python tests/support/mpi_clients_cases.py OUTDIR [CASE ...]``. Every process builds the
same global data, runs each case on a ``comm="mpi"`` mesh (``{"row": n}``; under ``-n 4`` every case on ``{"row": 2,
"col": 2}`` and the ``ROW4`` selection on ``{"row": 4}``; the mesh is the namespace's default, so ``xp.asarray``
splits axis ``k`` over mesh axis ``k``) and the same call on NumPy arrays, and compares the gathered result with
NumPy's (dtype, shape, values to 1e-8; float32 to 1e-5). Then the processes exchange their outcome and a digest of
what each gathered (on a communicator of this script's own): a result that differs between processes is a divergence
(a host read that disagreed). Every buffer a collective fills comes from the reused pool (``backend.host_buffers.MIN_BYTES =
0``, as in tests/mpi), so a result that a later collective overwrote would show. Each process writes
``OUTDIR/rank<r>.txt``, one tab-separated line per event: ``start <mesh> <case>`` before a case, then ``<outcome>
<mesh> <case> <seconds> <message>`` with outcome ``ok``, ``wrong`` (NumPy's value differs), ``raised`` (an
exception), or ``type`` (an array result that is not an ``Array``), written before the exchange, and after it
``diverged <mesh> <case> 0 <what each process said>`` where the processes disagree. A case that hangs ends the job
after ``CASE_S`` seconds (faulthandler prints every thread's stack): each process's last line then names the case
(its ``start``, or its outcome where it went on to the exchange while others waited in a collective).

The clients: scikit-learn with ``array_api_dispatch=True`` (estimators that declare array API support, metrics,
kernels, ``train_test_split``/``shuffle``), SciPy with ``SCIPY_ARRAY_API=1`` (set here before SciPy is imported:
scikit-learn requires it too), array-api-extra, einops, xarray, and the host reads these libraries make
(``float(xp.max(x))``, ``bool(xp.any(...))``, ``int(...)``, data-dependent shapes of ``unique_*``, masks and
``nonzero``). The samples are 37 (blocks 19, 18 over 2 processes; 10, 10, 10, 7 over 4) and 3 (an empty block
over 4).
"""

from __future__ import annotations

import os

os.environ["SCIPY_ARRAY_API"] = "1"  # (read once, when SciPy is first imported; scikit-learn requires it)

import faulthandler
import hashlib
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import array_api_extra as xpx
import einops.array_api as ea
import numpy as np
import scipy.cluster.vq as vq
import scipy.fft as sfft
import scipy.integrate as si
import scipy.signal as ss
import scipy.special as sp
import scipy.stats as st
import sklearn
import xarray as xr
from mpi4py import MPI
from sklearn import metrics
from sklearn.decomposition import PCA
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
from sklearn.kernel_approximation import Nystroem
from sklearn.linear_model import Ridge, RidgeCV
from sklearn.metrics import pairwise
from sklearn.mixture import GaussianMixture
from sklearn.model_selection import train_test_split
from sklearn.naive_bayes import GaussianNB
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import (
    KernelCenterer,
    LabelBinarizer,
    LabelEncoder,
    MaxAbsScaler,
    MinMaxScaler,
    Normalizer,
    PolynomialFeatures,
    StandardScaler,
)
from sklearn.utils import shuffle
from sklearn.utils.multiclass import type_of_target, unique_labels

import shardarray as sa
import shardarray.array_api as xp
from shardarray.backend import host_buffers as buffers

CASE_S = 60  # a case still running after this long hangs: the job ends with every thread's stack
N, D = 37, 5
_RNG = np.random.default_rng(7)
A = _RNG.normal(size=(N, D))
A32 = A.astype(np.float32)
ANAN = np.where(A > 1.2, np.nan, A)
ANAN_LAST, AINF_FIRST = A.copy(), A.copy()
ANAN_LAST[36, 2], AINF_FIRST[0, 4] = np.nan, np.inf
Y = ((A[:, 0] > 0.3).astype(np.int64) + (A[:, 1] > 0)).astype(np.int64)  # 3 classes
YHAT = (A[:, 1] > 0.2).astype(np.int64) + (A[:, 0] > 0.5)
YB = (Y > 0).astype(np.int64)
T = A @ np.arange(1.0, D + 1) + 0.1 * _RNG.normal(size=N)
T2 = np.stack([T, -T + A[:, 0]], axis=1)
P = _RNG.uniform(0.1, 2.0, size=(N, D))
SCORE = A[:, 0] + 0.5 * A[:, 2]
PROBA = np.exp(A[:, :3]) / np.exp(A[:, :3]).sum(axis=1, keepdims=True)

Case = Callable[[Any], Any]  # ``case(m)``: m is ``np`` or ``xp``


def _sk(fn: Callable[[Any], Any]) -> Case:
    """A scikit-learn case: array API dispatch on for shardarray's namespace."""

    def run(m: Any) -> Any:
        if m is np:
            return fn(m)
        with sklearn.config_context(array_api_dispatch=True):
            return fn(m)

    return run


def _sklearn_cases(c: dict[str, Case]) -> None:
    def pca(k: Any, solver: str = "full", **kw: Any) -> Case:
        return _sk(lambda m: m.abs(PCA(k, svd_solver=solver, random_state=0, **kw).fit_transform(m.asarray(A))))

    c["sk_pca_full"] = pca(3)
    c["sk_pca_covariance_eigh"] = pca(3, "covariance_eigh")
    c["sk_pca_randomized_qr"] = pca(3, "randomized", power_iteration_normalizer="QR")
    c["sk_pca_variance_fraction"] = pca(0.8)  # (the number of components: a host read of a cumulative sum)
    c["sk_pca_whiten_float32"] = _sk(lambda m: m.abs(PCA(2, whiten=True).fit_transform(m.asarray(A32))))
    c["sk_pca_attributes"] = _sk(
        lambda m: [(p := PCA(3).fit(m.asarray(A))).explained_variance_ratio_, p.singular_values_, p.mean_]
    )
    c["sk_ridge"] = _sk(lambda m: Ridge(alpha=1.0).fit(m.asarray(A), m.asarray(T)).predict(m.asarray(A)))
    c["sk_ridge_coef_multi"] = _sk(lambda m: Ridge(alpha=0.5).fit(m.asarray(A), m.asarray(T2)).coef_)
    c["sk_ridge_cv"] = _sk(lambda m: RidgeCV(alphas=(0.1, 1.0, 10.0)).fit(m.asarray(A), m.asarray(T)).alpha_)
    c["sk_lda"] = _sk(
        lambda m: [(e := _fit(LinearDiscriminantAnalysis(), m, Y)).predict_proba(m.asarray(A)), e.predict(m.asarray(A))]
    )
    c["sk_gaussian_nb"] = _sk(lambda m: _fit(GaussianNB(), m, Y).predict_proba(m.asarray(A)))
    c["sk_gaussian_mixture_full"] = _sk(lambda m: _gmm(m, "full", max_iter=3).means_)
    c["sk_gaussian_mixture_diag"] = _sk(
        lambda m: [(g := _gmm(m, "diag", max_iter=3)).means_, g.covariances_, g.predict_proba(m.asarray(A))]
    )
    # (EM until the change of the lower bound, a host read each iteration, is below tol: 14 iterations, on every
    # process alike)
    c["sk_gaussian_mixture_converged"] = _sk(
        lambda m: [(g := _gmm(m, "spherical", tol=1e-6)).means_, g.n_iter_, g.converged_, g.lower_bound_]
    )
    c["sk_standard_scaler"] = _sk(lambda m: StandardScaler().fit_transform(m.asarray(A)))
    c["sk_standard_scaler_partial_fit"] = _sk(
        lambda m: (StandardScaler().partial_fit(m.asarray(A[:20])).partial_fit(m.asarray(A[20:]))).transform(
            m.asarray(A)
        )
    )
    c["sk_minmax_scaler"] = _sk(lambda m: MinMaxScaler().fit_transform(m.asarray(A)))
    c["sk_minmax_scaler_3_samples"] = _sk(lambda m: MinMaxScaler().fit_transform(m.asarray(A[:3])))
    c["sk_maxabs_scaler"] = _sk(lambda m: MaxAbsScaler().fit_transform(m.asarray(A)))
    c["sk_normalizer"] = _sk(lambda m: Normalizer().fit_transform(m.asarray(A)))
    c["sk_polynomial_features"] = _sk(lambda m: PolynomialFeatures(2).fit_transform(m.asarray(A[:, :3])))
    c["sk_label_encoder"] = _sk(lambda m: [(e := LabelEncoder()).fit_transform(m.asarray(Y * 3 + 1)), e.classes_])
    c["sk_label_binarizer"] = _sk(lambda m: LabelBinarizer().fit_transform(m.asarray(Y)))
    c["sk_kernel_centerer"] = _sk(lambda m: KernelCenterer().fit_transform(m.asarray(A @ A.T)))
    c["sk_nystroem"] = _sk(lambda m: Nystroem(n_components=8, random_state=0).fit_transform(m.asarray(A)))
    c["sk_pipeline"] = _sk(
        lambda m: make_pipeline(StandardScaler(), PCA(2), Ridge()).fit(m.asarray(A), m.asarray(T)).predict(m.asarray(A))
    )
    c["sk_train_test_split"] = _sk(lambda m: train_test_split(m.asarray(A), m.asarray(T), random_state=0))
    # (a NaN or an infinity in one process's block only: scikit-learn's finiteness check, a host read, must raise on
    # every process)
    c["sk_nan_in_last_block_raises"] = _sk(lambda m: _raised(lambda: Ridge().fit(m.asarray(ANAN_LAST), m.asarray(T))))
    c["sk_inf_in_first_block_raises"] = _sk(lambda m: _raised(lambda: StandardScaler().fit(m.asarray(AINF_FIRST))))
    c["sk_type_of_target"] = _sk(lambda m: [type_of_target(m.asarray(v)) for v in (T, Y, YB, Y[:3])])
    c["sk_shuffle"] = _sk(lambda m: list(shuffle(m.asarray(A), m.asarray(Y), random_state=0)))


def _raised(fn: Callable[[], Any]) -> str:
    """The type of the exception ``fn()`` raised (or "nothing")."""
    try:
        fn()
    except Exception as e:  # (the type is the result)
        return type(e).__name__
    return "nothing"


def _fit(est: Any, m: Any, y: np.ndarray) -> Any:
    return est.fit(m.asarray(A), m.asarray(y))


def _gmm(m: Any, kind: str, **kw: Any) -> Any:
    g = GaussianMixture(2, covariance_type=kind, init_params="random_from_data", random_state=0, **kw)
    return g.fit(m.asarray(A))


def _metric_cases(c: dict[str, Case]) -> None:
    def two(f: Callable[..., Any], a: np.ndarray, b: np.ndarray, **kw: Any) -> Case:
        return _sk(lambda m: f(m.asarray(a), m.asarray(b), **kw))

    c["sk_accuracy"] = two(metrics.accuracy_score, Y, YHAT)
    c["sk_accuracy_3_samples"] = two(metrics.accuracy_score, Y[:3], YHAT[:3])
    c["sk_accuracy_weighted"] = _sk(
        lambda m: metrics.accuracy_score(m.asarray(Y), m.asarray(YHAT), sample_weight=m.asarray(P[:, 0]))
    )
    c["sk_r2"] = two(metrics.r2_score, T, T + A[:, 2])
    c["sk_r2_3_samples"] = two(metrics.r2_score, T[:3], T[:3] + A[:3, 2])
    c["sk_r2_raw_values"] = two(metrics.r2_score, A[:, :2], A[:, 2:4], multioutput="raw_values")
    c["sk_mse"] = two(metrics.mean_squared_error, T, T + A[:, 2])
    c["sk_mse_weighted"] = _sk(
        lambda m: metrics.mean_squared_error(m.asarray(T), m.asarray(T + A[:, 2]), sample_weight=m.asarray(P[:, 0]))
    )
    c["sk_median_absolute_error"] = two(metrics.median_absolute_error, T, T + A[:, 2])
    c["sk_max_error"] = two(metrics.max_error, T, T + A[:, 2])
    c["sk_d2_tweedie"] = two(metrics.d2_tweedie_score, np.abs(T) + 1, np.abs(T + A[:, 2]) + 1, power=1.5)
    c["sk_confusion_matrix"] = two(metrics.confusion_matrix, Y, YHAT)
    c["sk_confusion_matrix_labels"] = _sk(
        lambda m: metrics.confusion_matrix(m.asarray(Y), m.asarray(YHAT), labels=m.asarray(np.array([2, 0])))
    )
    c["sk_multilabel_confusion_matrix"] = two(metrics.multilabel_confusion_matrix, Y, YHAT)
    c["sk_f1_macro"] = two(metrics.f1_score, Y, YHAT, average="macro")
    c["sk_matthews"] = two(metrics.matthews_corrcoef, Y, YHAT)
    c["sk_log_loss"] = two(metrics.log_loss, YB, 1 / (1 + np.exp(-SCORE)))
    c["sk_roc_curve"] = _sk(lambda m: list(metrics.roc_curve(m.asarray(YB), m.asarray(SCORE))))
    c["sk_precision_recall_curve"] = _sk(
        lambda m: list(metrics.precision_recall_curve(m.asarray(YB), m.asarray(SCORE)))
    )
    c["sk_top_k_accuracy"] = two(metrics.top_k_accuracy_score, Y, PROBA, k=2)
    c["sk_unique_labels"] = _sk(lambda m: unique_labels(m.asarray(Y), m.asarray(YHAT + 1)))
    for k in ("rbf_kernel", "polynomial_kernel", "laplacian_kernel", "chi2_kernel"):
        c[f"sk_{k}"] = _sk(lambda m, k=k: getattr(pairwise, k)(m.asarray(P), m.asarray(P[:7])))
    c["sk_cosine_similarity"] = _sk(lambda m: pairwise.cosine_similarity(m.asarray(A)))
    c["sk_euclidean_distances"] = _sk(lambda m: pairwise.euclidean_distances(m.asarray(A)))
    c["sk_nan_euclidean_distances"] = _sk(lambda m: pairwise.nan_euclidean_distances(m.asarray(ANAN)))
    c["sk_paired_distances"] = _sk(lambda m: pairwise.paired_distances(m.asarray(A), m.asarray(P)))
    c["sk_pairwise_distances_argmin_min"] = _sk(
        lambda m: list(pairwise.pairwise_distances_argmin_min(m.asarray(A), m.asarray(A[:5] + 0.1)))
    )


def _scipy_cases(c: dict[str, Case]) -> None:
    c["sp_logsumexp_0"] = lambda m: sp.logsumexp(m.asarray(A), axis=0)
    c["sp_logsumexp_all"] = lambda m: sp.logsumexp(m.asarray(A))
    c["sp_logsumexp_b"] = lambda m: sp.logsumexp(m.asarray(A), axis=1, b=m.asarray(P))
    c["sp_logsumexp_sign"] = lambda m: list(sp.logsumexp(m.asarray(A), axis=0, b=m.asarray(A), return_sign=True))
    c["sp_softmax"] = lambda m: sp.softmax(m.asarray(A), axis=1)
    c["sp_log_softmax"] = lambda m: sp.log_softmax(m.asarray(A), axis=0)
    c["st_describe"] = lambda m: list(_leaves(st.describe(m.asarray(A), axis=0)))
    c["st_moment"] = lambda m: st.moment(m.asarray(A), order=3, axis=0)
    c["st_zscore"] = lambda m: st.zscore(m.asarray(A), axis=0)
    c["st_entropy"] = lambda m: st.entropy(m.asarray(P), axis=0)
    c["st_entropy_qk"] = lambda m: st.entropy(m.asarray(P), m.asarray(P[::-1].copy()), axis=0)
    c["st_iqr"] = lambda m: st.iqr(m.asarray(P), axis=0)
    c["st_median_abs_deviation"] = lambda m: st.median_abs_deviation(m.asarray(P), axis=0)
    c["st_rankdata"] = lambda m: st.rankdata(m.asarray(np.round(A)), axis=0)
    c["st_mode"] = lambda m: list(st.mode(m.asarray(np.round(A)), axis=0))
    c["st_quantile"] = lambda m: st.quantile(m.asarray(A), m.asarray(0.3), axis=0)
    c["st_ttest_ind"] = lambda m: list(st.ttest_ind(m.asarray(A[:, 0]), m.asarray(A[:, 1]))[:2])
    c["st_pearsonr"] = lambda m: list(st.pearsonr(m.asarray(A[:, 0]), m.asarray(A[:, 1]))[:2])
    c["integrate_trapezoid"] = lambda m: si.trapezoid(m.asarray(A), axis=0)
    c["integrate_cumulative_trapezoid"] = lambda m: si.cumulative_trapezoid(m.asarray(A), axis=0)
    c["fft_fft"] = lambda m: sfft.fft(m.asarray(A), axis=0)
    c["fft_fft_1d"] = lambda m: sfft.fft(m.asarray(T))
    c["fft_rfft"] = lambda m: sfft.rfft(m.asarray(A), axis=0)
    c["fft_irfft"] = lambda m: sfft.irfft(m.asarray(A + 1j * P), axis=0)
    c["fft_fftn_complex"] = lambda m: sfft.fftn(m.asarray(A + 1j * P))
    c["fft_dct"] = lambda m: sfft.dct(m.asarray(A), axis=0)
    c["signal_fftconvolve"] = lambda m: ss.fftconvolve(m.asarray(T), m.asarray(A[:5, 0]))
    c["signal_detrend"] = lambda m: ss.detrend(m.asarray(A), axis=0)
    c["vq_whiten"] = lambda m: vq.whiten(m.asarray(A))
    c["vq_vq"] = lambda m: list(vq.vq(m.asarray(A), m.asarray(A[:3])))


def _xpx_cases(c: dict[str, Case]) -> None:
    c["xpx_at_set_slice"] = lambda m: xpx.at(m.asarray(A.copy()))[1:30:3].set(0.0)
    c["xpx_at_add_mask"] = lambda m: xpx.at(m.asarray(A.copy()))[m.asarray(A > 0)].add(1.0)
    c["xpx_at_set_mask_values"] = lambda m: xpx.at(m.asarray(A.copy()))[m.asarray(A > 0.5)].set(
        m.asarray(A)[m.asarray(A > 0.5)] * 2
    )
    c["xpx_at_multiply_cols"] = lambda m: xpx.at(m.asarray(A.copy()))[:, ::2].multiply(2.0)
    c["xpx_at_add_index"] = lambda m: xpx.at(m.asarray(A.copy()))[m.asarray(np.array([0, 36, 11]))].add(1.0)
    c["xpx_at_add_repeated_index"] = lambda m: xpx.at(m.asarray(A.copy()))[m.asarray(np.array([1, 1, 30]))].add(1.0)
    c["xpx_at_set_negative_index"] = lambda m: xpx.at(m.asarray(A.copy()))[m.asarray(np.array([-1, -37]))].set(5.0)
    c["xpx_at_min_mask"] = lambda m: xpx.at(m.asarray(A.copy()))[m.asarray(A < 0)].min(-0.5)
    c["xpx_pad"] = lambda m: xpx.pad(m.asarray(A), 2)
    c["xpx_pad_value"] = lambda m: xpx.pad(m.asarray(A), ((3, 0), (1, 2)), constant_values=-1.0)
    c["xpx_setdiff1d"] = lambda m: xpx.setdiff1d(m.asarray(Y * 7 + YHAT), m.asarray(np.array([0, 8, 15])))
    c["xpx_setdiff1d_3_samples"] = lambda m: xpx.setdiff1d(m.asarray(Y[:3]), m.asarray(np.arange(3)))
    c["xpx_cov"] = lambda m: xpx.cov(m.asarray(A.T.copy()))
    c["xpx_nunique"] = lambda m: xpx.nunique(m.asarray(np.round(A)))
    c["xpx_nunique_3_samples"] = lambda m: xpx.nunique(m.asarray(Y[:3]))
    c["xpx_isin"] = lambda m: xpx.isin(m.asarray(np.round(A)), m.asarray(np.array([0.0, 2.0])))
    c["xpx_union1d"] = lambda m: xpx.union1d(m.asarray(Y), m.asarray(YHAT + 2))
    c["xpx_one_hot"] = lambda m: xpx.one_hot(m.asarray(Y), 3)
    c["xpx_kron"] = lambda m: xpx.kron(m.asarray(A[:3, :2]), m.asarray(A[:4, :2]))
    c["xpx_partition"] = lambda m: xpx.partition(m.asarray(A), 2, axis=1)[:, 2]
    c["xpx_argpartition"] = lambda m: m.take_along_axis(
        m.asarray(A), xpx.argpartition(m.asarray(A), 1, axis=0), axis=0
    )[1]
    c["xpx_nanmax"] = lambda m: xpx.nanmax(m.asarray(ANAN), axis=0)
    c["xpx_apply_where"] = lambda m: xpx.apply_where(m.asarray(A) > 0, m.asarray(A), lambda q: q**0.5, fill_value=0.0)
    c["xpx_nan_to_num"] = lambda m: xpx.nan_to_num(m.asarray(ANAN))
    c["xpx_searchsorted"] = lambda m: xpx.searchsorted(m.asarray(np.sort(T)), m.asarray(A[:, 0]))
    c["xpx_unravel_index"] = lambda m: list(xpx.unravel_index(m.asarray(Y * 7 + YHAT), (4, 5)))


def _einops_cases(c: dict[str, Case]) -> None:
    t = A[:36].reshape(9, 4, D)
    c["einops_rearrange_merge"] = lambda m: ea.rearrange(m.asarray(t), "a b c -> (a b) c")
    c["einops_rearrange_split"] = lambda m: ea.rearrange(m.asarray(t), "(a1 a2) b c -> a2 b a1 c", a1=3)
    c["einops_rearrange_transpose"] = lambda m: ea.rearrange(m.asarray(A[:35]), "(a b) d -> b (a d)", a=7)
    c["einops_reduce_mean"] = lambda m: ea.reduce(m.asarray(t), "a b c -> a c", "mean")
    c["einops_reduce_max_pool"] = lambda m: ea.reduce(m.asarray(t), "a (b 2) c -> a b c", "max")
    c["einops_reduce_sum"] = lambda m: ea.reduce(m.asarray(A), "n d -> d", "sum")
    c["einops_repeat"] = lambda m: ea.repeat(m.asarray(A), "n d -> (r n) d", r=3)
    c["einops_pack_unpack"] = lambda m: ea.unpack(
        ea.pack([m.asarray(t), m.asarray(t[..., :3])], "a b *")[0], [(5,), (3,)], "a b *"
    )


def _xarray_cases(c: dict[str, Case]) -> None:
    def da(m: Any) -> Any:
        return xr.DataArray(m.asarray(A), dims=("t", "y"), coords={"t": np.arange(N), "y": np.arange(D)})

    c["xr_sum"] = lambda m: da(m).sum("t").data
    c["xr_std"] = lambda m: da(m).std("t", ddof=1).data
    c["xr_where"] = lambda m: da(m).where(da(m) > 0).data
    c["xr_cumsum"] = lambda m: da(m).cumsum("t").data
    c["xr_quantile"] = lambda m: da(m).quantile(0.3, dim="t").data
    c["xr_median"] = lambda m: da(m).median("t").data
    c["xr_argmax"] = lambda m: da(m).argmax("t").data
    c["xr_isel"] = lambda m: da(m).isel(t=slice(3, 30, 4)).data
    c["xr_rolling"] = lambda m: da(m).rolling(t=3).mean().data
    c["xr_groupby"] = lambda m: da(m).groupby(xr.DataArray(np.arange(N) % 3, dims="t")).mean().data
    c["xr_coarsen"] = lambda m: da(m).coarsen(t=4, boundary="trim").mean().data
    c["xr_dot"] = lambda m: xr.dot(da(m), da(m), dim="y").data
    c["xr_std_all_dims"] = lambda m: da(m).std(("y", "t")).data
    c["xr_dataset_mean"] = lambda m: [v.data for v in xr.Dataset({"a": da(m), "b": da(m) * 2}).mean("t").values()]


def _host_read_cases(c: dict[str, Case]) -> None:
    c["host_float_max"] = lambda m: float(m.max(m.asarray(A)))
    c["host_float_max_empty_block"] = lambda m: [float(m.max(m.asarray(T[:3]))), float(m.min(m.asarray(T[:2])))]
    c["host_bool_any_all"] = lambda m: [bool(m.any(m.asarray(A) > 2.5)), bool(m.all(m.asarray(A) > -9))]
    c["host_bool_empty_block"] = lambda m: [bool(m.any(m.asarray(Y[:3]) > 5)), bool(m.all(m.asarray(Y[:2]) >= 0))]
    c["host_int_sum"] = lambda m: int(m.sum(m.asarray(Y) == 2))
    c["host_int_argmax"] = lambda m: [int(m.argmax(m.asarray(A))), int(m.argmin(m.asarray(A[:, 2])))]
    c["host_count_nonzero"] = lambda m: int(m.count_nonzero(m.asarray(A) > 0))
    c["host_item"] = lambda m: float(m.asarray(A)[5, 3])
    c["host_loop_bound"] = lambda m: [float(m.sum(m.asarray(A)[i])) for i in range(int(m.sum(m.asarray(Y[:5]))))]
    c["host_top3"] = lambda m: [int(i) for i in m.argsort(m.asarray(T))[:3]]
    c["host_unique_values"] = lambda m: [
        m.sort(m.unique_values(m.asarray(Y * 7 + YHAT))),
        m.unique_values(m.asarray(A[:, 0] > 0)).shape,
    ]
    c["host_unique_counts"] = lambda m: list(m.unique_counts(m.asarray(Y * 7 + YHAT)))
    c["host_unique_inverse"] = lambda m: m.unique_inverse(m.asarray(np.round(A)))[1]
    c["host_mask"] = lambda m: [(v := m.asarray(A)[m.asarray(A) > 0.5]), v.shape[0]]
    c["host_mask_rows"] = lambda m: m.asarray(A)[m.asarray(A[:, 0] > 0)]
    c["host_mask_cols"] = lambda m: m.asarray(A)[:, m.asarray(np.array([True, False, True, True, False]))]
    c["host_mask_write"] = lambda m: _set(m.asarray(A.copy()), m.asarray(A) > 1, 0.0)
    c["host_nonzero"] = lambda m: list(m.nonzero(m.asarray(A) > 1))
    c["host_nonzero_3_samples"] = lambda m: list(m.nonzero(m.asarray(A[:3]) > 0))
    c["host_sort_3_samples"] = lambda m: m.sort(m.asarray(T[:3]))
    c["host_searchsorted"] = lambda m: m.searchsorted(m.asarray(np.sort(T)), m.asarray(A[:, 0]))
    c["host_argsort_stable"] = lambda m: m.argsort(m.asarray(np.round(A, 1)), axis=0, stable=True)


def _set(x: Any, key: Any, v: Any) -> Any:
    x[key] = v
    return x


def _cases() -> dict[str, Case]:
    c: dict[str, Case] = {}
    for add in (_sklearn_cases, _metric_cases, _scipy_cases, _xpx_cases, _einops_cases, _xarray_cases):
        add(c)
    _host_read_cases(c)
    return c


CASES = _cases()


def _leaves(v: Any) -> list[Any]:
    if isinstance(v, (list, tuple)):
        return [leaf for item in v for leaf in _leaves(item)]
    return [v]


def _host(v: Any) -> np.ndarray:
    """A result's gathered value (``numpy()`` of a split array: a collective every process enters)."""
    return v.numpy() if isinstance(v, sa.ShardArray) else np.asarray(v)


def _differs(got: list[Any], hosts: list[np.ndarray], want: list[Any]) -> str | None:
    """What differs between our results (``got``, gathered: ``hosts``) and NumPy's ``want``, or None."""
    if len(got) != len(want):
        return f"got {len(got)} results, NumPy {len(want)}"
    for k, (g, gh, w) in enumerate(zip(got, hosts, want)):
        wh = np.asarray(w)
        if isinstance(w, np.ndarray) and w.ndim and not isinstance(g, xp.Array):
            return f"result {k}: got a {type(g).__name__}, not an Array"
        if (gh.dtype, gh.shape) != (wh.dtype, wh.shape):
            return f"result {k}: got {gh.dtype}{gh.shape}, NumPy {wh.dtype}{wh.shape}"
        if wh.dtype.kind in "fc":
            single = wh.dtype in (np.float32, np.complex64)
            ok = np.allclose(gh, wh, rtol=1e-5 if single else 1e-8, atol=1e-5 if single else 1e-10, equal_nan=True)
        else:
            ok = np.array_equal(gh, wh)
        if not ok:
            return f"result {k}: got {gh!r:.200}, NumPy {wh!r:.200}"
    return None


def _digest(hosts: list[np.ndarray]) -> str:
    h = hashlib.sha1()
    for a in hosts:
        h.update(f"{a.dtype}{a.shape}".encode())
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def run_case(name: str) -> tuple[str, str, str]:
    """``(outcome, message, digest)`` of case ``name`` on the default mesh (see the module's docstring)."""
    case = CASES[name]
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        want = _leaves(case(np))
        try:
            got = _leaves(case(xp))
            hosts = [_host(v) for v in got]
        except Exception as e:  # (reported per case)
            return "raised", f"{type(e).__name__}: {e}"[:400].replace("\n", " "), ""
        wrong = _differs(got, hosts, want)
    if wrong is None:
        return "ok", "", _digest(hosts)
    return ("type" if "not an Array" in wrong else "wrong"), wrong.replace("\n", " "), _digest(hosts)


#: the cases a 4-process row runs besides those of 3 samples (an empty block) and the host reads (CI's time: the 2x2
#: mesh of the same job runs every case, the 2-process job's row every case)
ROW4 = {
    *("sk_pca_full", "sk_pca_variance_fraction", "sk_ridge", "sk_lda", "sk_gaussian_mixture_converged"),
    *("sk_standard_scaler", "sk_label_encoder", "sk_train_test_split", "sk_accuracy", "sk_r2", "sk_confusion_matrix"),
    *("sk_roc_curve", "sk_rbf_kernel", "sp_logsumexp_0", "st_describe", "st_rankdata", "fft_fft", "xpx_at_add_mask"),
    *("xpx_setdiff1d", "xpx_nunique", "einops_rearrange_split", "xr_quantile", "sk_gaussian_mixture_full"),
    *("sk_nan_in_last_block_raises", "sk_inf_in_first_block_raises", "sk_type_of_target"),
}


def _on_row4(name: str) -> bool:
    return name in ROW4 or name.startswith("host_") or "3_samples" in name


def main() -> None:
    """The job (see the module's docstring): ``argv[1]`` the outcome folder, then case names (default: all)."""
    out = Path(sys.argv[1])
    names = sys.argv[2:] or list(CASES)
    buffers.MIN_BYTES = 0  # (as in tests/mpi: every buffer a collective fills is reused once free, so a result
    # that a later collective overwrote would show)
    world = MPI.COMM_WORLD.Dup()  # (our own exchanges never meet the library's collectives)
    n, rank = world.Get_size(), world.Get_rank()
    runs = {f"row{n}": ({"row": n}, names)}
    if n == 4:  # (the 2x2 mesh runs every case; the 4-process row the cases of 3 samples and a sample of the rest)
        runs = {"2x2": ({"row": 2, "col": 2}, names), "row4": ({"row": 4}, [k for k in names if _on_row4(k)])}
    with open(out / f"rank{rank}.txt", "w", buffering=1) as f:
        f.write(f"cases\t{sum(len(v[1]) for v in runs.values())}\n")
        for label, (shape, these) in runs.items():
            mesh = sa.Mesh(shape, comm="mpi", backend="numpy")
            with sa.default_mesh(mesh):
                for name in these:
                    f.write(f"start\t{label}\t{name}\n")
                    faulthandler.dump_traceback_later(CASE_S, exit=True)
                    t0 = time.monotonic()
                    outcome, message, digest = run_case(name)
                    f.write(f"{outcome}\t{label}\t{name}\t{time.monotonic() - t0:.2f}\t{message}\n")
                    said = world.allgather((outcome, digest))
                    faulthandler.cancel_dump_traceback_later()
                    if len(set(said)) > 1:
                        f.write(f"diverged\t{label}\t{name}\t0\tprocesses' (outcome, digest): {said}\n")
        f.write("done\n")


if __name__ == "__main__":
    main()
