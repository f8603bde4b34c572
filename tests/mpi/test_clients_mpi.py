"""The client libraries on ``shardarray.array_api`` under MPI: ``mpiexec -n 2`` and ``-n 4`` jobs.

scikit-learn (``array_api_dispatch=True``: PCA with the full, covariance_eigh and randomized solvers and a fraction of
variance, Ridge and RidgeCV, LinearDiscriminantAnalysis, GaussianNB, GaussianMixture to convergence, the scalers,
LabelEncoder/LabelBinarizer, Nystroem, a pipeline, train_test_split, classification and regression metrics, curves,
pairwise kernels and distances), SciPy (``SCIPY_ARRAY_API=1``: special, stats, integrate, fft, signal, cluster.vq),
array-api-extra, einops and xarray, and the host reads these libraries make (``float(xp.max(x))``,
``bool(xp.any(...))``, ``int(xp.sum(mask))``, data-dependent shapes of ``unique_*``, masks and ``nonzero``): every
process of the job runs the same script on its own blocks (``tests/support/mpi_clients_cases.py``; 37 samples:
blocks 19, 18 over 2 processes, 10, 10, 10, 7 over 4; some cases 3 samples: an empty block over 4). The 2-process
job runs every case on ``{"row": 2}``; the 4-process job every case on ``{"row": 2, "col": 2}`` and, on ``{"row":
4}``, the cases of 3 samples, the host reads and a selection of the rest (CI's time). Each result is gathered and
compared with the same call on NumPy arrays on every process, and the processes compare digests of what they
gathered: a data-dependent host read that differed between processes shows as a divergence, a collective that one
process never joined as a hang (the job's per-case limit ends it; the test names the case each process was in). The
jobs are launched from the test session outside MPI (CI's MPI step runs ``tests/mpi`` inside one 4-process job, where
these tests skip: they start jobs of their own).

Not run, by design or the library's: scikit-learn's ``KMeans`` does not declare array API support (it mixes a NumPy
array with the input's namespace); ``silhouette_score`` adds NumPy ``bincount`` results into array API arrays;
xarray's ``where(cond, drop=True)`` with a condition on a NumPy coordinate calls ``xp.astype`` on a NumPy array (a
host array never enters the mesh implicitly).
"""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest
from mpi_jobs import ROOT, JobHung, mpiexec
from spmd import WORLD

CLIENTS = ("sklearn", "scipy", "array_api_extra", "einops", "xarray", "mpi4py")
HAVE = shutil.which("mpiexec") is not None and all(importlib.util.find_spec(m) is not None for m in CLIENTS)
pytestmark = [
    pytest.mark.skipif(WORLD > 1 or not HAVE, reason="launches mpiexec itself: needs mpiexec, mpi4py and the clients"),
    pytest.mark.numpy_only("the jobs run NumPy shards in processes of their own: --backend=cupy would repeat them"),
]
JOB = str(ROOT / "tests" / "support" / "mpi_clients_cases.py")
SPMD_CASES = ("sk_standard_scaler", "sk_lda", "st_quantile", "xr_sum")  # (each passes a NumPy scalar type to an op)
JOB_S = 300  # the whole job; a single case that hangs ends it sooner (mpi_clients_cases.CASE_S)

#: outcomes by design or of the library, the same on every process and mesh: (outcome, part of the message)
EXPECTED = {
    # sklearn's _estimate_gaussian_covariances_full adds reg_covar into covariances[k, :, :] in place, through
    # NumPy's view; shardarray has no views (as JAX; sa.CopyWriteWarning names the lost write), so the covariance
    # lacks reg_covar and its Cholesky fails on every process alike (the diag and spherical cases run)
    "sk_gaussian_mixture_full": ("raised", "ill-defined empirical covariance"),
}


def _read(out: Path, n: int) -> list[list[list[str]]]:
    """Each process's lines, split at tabs (a process that wrote nothing: no lines)."""
    files = [out / f"rank{r}.txt" for r in range(n)]
    return [[w.split("\t") for w in f.read_text().splitlines()] if f.exists() else [] for f in files]


def _last(ranks: list[list[list[str]]]) -> list[str]:
    """Each process's last line (a hang: the case it had started, or its outcome before the exchange)."""
    return [f"process {r}: {' '.join(lines[-1]) if lines else 'nothing'}"[:400] for r, lines in enumerate(ranks)]


def _run(n: int, out: Path, cases: tuple[str, ...] = (), env: dict[str, str] | None = None) -> None:
    """The job of ``n`` processes on ``cases`` (default: all): every outcome ok (or as ``EXPECTED``) on every
    process, no divergence, no hang."""
    try:
        proc = mpiexec(n, JOB, str(out), *cases, timeout=JOB_S, env=env)
    except JobHung as e:
        pytest.fail(f"the job hung: {_last(_read(out, n))}\n{e}"[:4000])
    ranks = _read(out, n)
    assert proc.returncode == 0, f"{_last(ranks)}\n{proc.stdout[-1500:]}\n{proc.stderr[-3000:]}"
    wrong = []
    for r, lines in enumerate(ranks):
        assert lines and lines[-1] == ["done"], _last(ranks)
        results = [w for w in lines if w[0] not in ("cases", "start", "done")]
        assert sum(w[0] != "diverged" for w in results) == int(lines[0][1]), (r, len(results), lines[0])
        for outcome, mesh, case, _, message in results:
            want = EXPECTED.get(case)
            if (outcome, want) != ("ok", None) and (want is None or outcome != want[0] or want[1] not in message):
                wrong.append(f"process {r} {mesh} {case}: {outcome} {message}"[:600])
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("n", [2, 4])
def test_every_client_case_matches_numpy_and_agrees_on_every_process(n, tmp_path):
    """Every case on every process: NumPy's dtype, shape and values (1e-8), the same gathered bytes on all
    processes, no hang and no exception (but for ``EXPECTED``, which must stay as it is, on every process)."""
    _run(n, tmp_path)


def test_client_cases_under_the_spmd_argument_check(tmp_path):
    """``SHARDARRAY_CHECK_SPMD=1`` (every op's host arguments compared between processes): clients that pass a
    NumPy scalar type as a dtype (scikit-learn's scalers and LDA, SciPy's quantile, xarray's sum) run as without it
    (``comm.job.show`` read ``np.float64`` as an array and raised TypeError on every process: fixed)."""
    _run(2, tmp_path, SPMD_CASES, env={"SHARDARRAY_CHECK_SPMD": "1"})
