"""Round 16's new code under MPI (``mpiexec -n 2`` and ``-n 4``) against NumPy and the emulated mesh.

``xp.repeat`` by an Array of counts (data-dependent length: a scan, two scalar allreduces, a routed searchsorted
and take) and by a large integer (``repeat_fetch``), ``xp.logspace``, ``xp.cross``, ``xp.full``/``full_like`` with
a 0-d array fill, ``xp.arange`` with 0-d bounds, ``x.itemsize``/``x.nbytes``, ``np.bitwise_count`` (and ``.at``),
``np.bitwise_and/or/xor.reduce`` and ``np.logical_xor.reduce``, reductions, scans and moments into an ``out=`` of
another dtype, complex ``np.nanvar`` of infinite values and the nan-quantiles' signed zeros: every process builds
the same global input; each case runs on the MPI mesh and on the emulated mesh of the same shape in the same
process, and is compared with NumPy on the gathered value and with the emulated mesh's comm log
(``tests/support/mpi_fuzz16_cases.py``; run by itself under ``mpiexec -n 2`` by the test outside MPI). Blocks are
uneven and some empty. Then the failure exchange for these functions (``tests/support/mpi_fuzz16_jobs.py``, jobs
of 2 and 4 processes with the hang watchdog far away): an argument wrong on one process only raises that process's
typed error and ``CommError`` on the others at once, and the job stays in step; ``sa.CopyWriteWarning`` is raised
on every process alike.

Found here and fixed: an error raised by NumPy's protocol on an Array (``np.bitwise_xor.reduce`` with an axis out of
range, ``np.sum`` with an ``out=`` of another shape, ``np.bitwise_count`` of floats) on one process only was not told
to the others (``Array.__array_ufunc__``/``__array_function__`` are op boundaries now); ``xp.full`` with a fill that
is not 0-d and ``sa.random.normal`` with an unknown dtype on one process sent their creation header before the check
(``full`` checks first now; a failed process's header is compared without the op's digest, so ``random.normal``'s
agreed check tells every process the failing one's error).
"""

from __future__ import annotations

import warnings
from collections import Counter

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from mpi_case_jobs import mesh_of, placed, quiet
from mpi_case_tests import agree, case_tests, in_step, inmpi, outside
from mpi_case_tests import guard as guard  # (autouse: the hang guard)
from mpi_fuzz16_cases import CASES, _bits_differ, check, run_on
from mpi_fuzzing import SHAPES, mpi_fuzz
from mpi_jobs import ROOT, mpiexec

import shardarray as sa
import shardarray.array_api as xp

FAIL_JOB = str(ROOT / "tests" / "support" / "mpi_fuzz16_jobs.py")
ENV = {"SHARDARRAY_HANG_CHECK_S": "300", "SHARDARRAY_CHECK_SPMD": "0"}  # (the watchdog cannot end a case in time)
QUICK_S = 5.0  # a case that takes longer waited for something
TOLD = (
    *("cross", "linalg_cross", "repeat_counts", "repeat_shape", "repeat_int", "logspace", "arange"),
    *("sa_fft", "sa_norm", "nanquantile", "full", "bitwise_reduce", "sum_out", "bitwise_count"),
)
AGREED = ("random_normal",)  # (every process raises the failing process's own error: ``_make`` agrees first)
DIVERGING = 11  # (the job's diverge_* cases)


# =============================================================================================== 1. each case


#: inside an MPI job each case on the job's meshes; outside one, ``mpi_fuzz16_cases.py`` as a job of 2 processes
test_each_feature_matches_numpy_and_the_emulated_comm_log, test_every_case_under_mpiexec_n_2 = case_tests(
    CASES, check, "mpi_fuzz16_cases"
)


# =============================================================================================== 2. the fuzzer


def _draw(data, axes: tuple[str, ...]):
    """``(run(mesh, axes), numpy())``: ``xp.repeat`` of a drawn array (uneven, empty) by drawn counts (an Array of
    them, split or not, one or one per element; or an integer, many or few), along a drawn axis and layout."""
    rows = data.draw(st.sampled_from([0, 1, 2, 3, 5, 7]))
    cols = data.draw(st.integers(1, 3))
    h = np.arange(rows * cols, dtype=np.float64).reshape(rows, cols) - 3
    lay = [None, None]
    for a in axes:
        k = data.draw(st.integers(-1, 1))
        if k >= 0:
            lay[k] = (lay[k] or ()) + (a,)
    axis = data.draw(st.sampled_from([0, 1, None]))
    n = h.size if axis is None else h.shape[axis]
    kind = data.draw(st.sampled_from(["counts", "one", "int"]))
    if kind == "int":
        k = data.draw(st.sampled_from([0, 1, 2, 3, 9, 40]))
        return (lambda m, a: xp.repeat(placed(h, m, lay), k, axis=axis)), (lambda: np.repeat(h, k, axis=axis))
    counts = np.array([data.draw(st.integers(0, 4)) for _ in range(1 if kind == "one" else n)], dtype=np.int64)
    split = data.draw(st.booleans())
    return (
        lambda m, a: xp.repeat(placed(h, m, lay), placed(counts, m, [a if split else None]), axis=axis),
        lambda: np.repeat(h, counts, axis=axis),
    )


@inmpi
@mpi_fuzz(40, "FUZZ16_MPI_EXAMPLES")
@given(st.sampled_from(SHAPES), st.data())
def test_fuzz_repeat_matches_numpy_and_the_emulated_log(shape, data):
    """Drawn arrays, counts and layouts: NumPy's value and dtype, the emulated mesh's comm log, the same on every
    process (the result's length is data-dependent: every process must read the same total)."""
    fn, want = _draw(data, tuple(shape))
    log_e, _, err_e = run_on(mesh_of(shape, "emulated"), fn)
    log_m, got, err_m = run_on(mesh_of(shape, "mpi"), fn)
    agree(None if err_m is None and err_e is None else f"MPI {err_m}, emulated {err_e}")
    agree(None if log_m == log_e else f"comm log {log_m}, emulated {log_e}")
    agree(_bits_differ(got, quiet(want)))


# ================================================================ 3. failures and per-process arguments


def _lines(proc) -> list[list[str]]:
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    lines = [line.split() for line in proc.stdout.splitlines() if line.strip()]
    assert not [w for w in lines if "wrong:" in w], proc.stdout[-3000:]
    return lines


@outside
@pytest.mark.parametrize("n", [2, 4])
def test_an_argument_wrong_on_one_process_raises_its_error_there_and_commerror_elsewhere(n):
    """Each case fails on process 1 only: it raises its own typed error, every other process ``CommError`` naming
    it (its error type and the op), within seconds, and the job is in step after each case (the next collectives
    give the right answers, every process entered as many). Counts wrong alike on every process (a distributed
    array holding a negative count): every process raises ``ArgumentError``. Writes into copies freed unread: every
    process warns alike (three times). Host arguments valid on each process but different on process 1 (a count,
    a length, an axis, a shape, a bound, a quantile, ``ufunc.at`` indices): ``CommError`` (an SPMD mismatch) on
    every process at once."""
    lines = _lines(mpiexec(n, FAIL_JOB, timeout=120, env=ENV))
    said = Counter((w[0], w[1]) for w in lines if w[0] in TOLD or w[0].startswith("same_"))
    for case in TOLD:
        assert said[(case, "own")] == 1 and said[(case, "comm")] == n - 1, (case, said)
    agreed = Counter((w[0], w[1]) for w in lines if w[0] in AGREED)
    for case in AGREED:
        assert agreed[(case, "own")] == 1 and agreed[(case, "agreed")] == n - 1, (case, agreed)
    assert said[("same_repeat_counts", "own")] == n, said
    assert all(float(w[-1]) < QUICK_S for w in lines if w[0] in TOLD), lines
    assert [w for w in lines if w[0] == "copies"] == [["copies", "warned", "3"]] * n, lines
    diverged = [w for w in lines if w[0].startswith("diverge_")]
    assert len(diverged) == n * DIVERGING and all(w[1] == "mismatch" and float(w[2]) < QUICK_S for w in diverged)
    steps = [w[1] for w in lines if w[0] == "aligned"]
    assert len(steps) == n * (len(TOLD) + len(AGREED) + 2 + DIVERGING) and all(steps.count(s) == n for s in steps)


@inmpi
def test_repeat_counts_wrong_on_one_process_tells_the_others_and_stays_in_step():
    """In this job (the watchdog at its default): host counts with a negative entry on process 1 only; process 1
    raises ``ArgumentError``, the others ``CommError`` naming it, before the watchdog could; then in step."""
    mesh = mesh_of(SHAPES[-1], "mpi")
    x = placed(np.arange(7.0), mesh, [tuple(mesh.axis_names)])
    r = mesh.process_index
    try:
        xp.repeat(x, [1, 2, -1 if r == 1 else 1, 0, 1, 1, 3]).numpy()
        said = "returned"
    except sa.ArgumentError as e:
        said = None if r == 1 else repr(e)[:300]
    except sa.CommError as e:
        said = None if r != 1 and "process 1" in str(e) and "ArgumentError" in str(e) else str(e)[:300]
    agree(said)
    in_step(mesh)


@inmpi
def test_writes_into_copies_freed_unread_warn_alike_on_every_process():
    """``sa.CopyWriteWarning`` comes from each process's own finalizer (no collective): every process warns once per
    lost write, a copy read after its write warns nowhere, and the job stays in step."""
    mesh = mesh_of(SHAPES[-1], "mpi")
    z = placed(np.zeros((6, 5)), mesh, [tuple(mesh.axis_names), None])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        z[1:3][0] = 5.0
        z[:, 1].flat[::2] = 7.0
        kept = z[2:4]
        kept[1] = 1.0
        seen = float(xp.sum(kept))
    n = sum(issubclass(w.category, sa.CopyWriteWarning) for w in caught)
    agree(None if (n, seen, bool(z.numpy().any())) == (2, 5.0, False) else f"warned {n}, kept {seen}")
    in_step(mesh)
