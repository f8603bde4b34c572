"""Fuzzing round 12 under MPI: no hang, no silent disagreement (``sa.Mesh(..., comm="mpi")``, one device per process).

**A differential fuzz** of ops the earlier MPI fuzzers leave out, against NumPy on the gathered values, on the job's
meshes (``{"row": 4}``, ``{"row": 2, "col": 2}`` under ``-n 4``) with uneven and empty blocks: ``squeeze`` of a split
size-1 dim, ``expand_dims``, ``concat``/``stack`` of differently laid out arrays, boolean-mask reads and writes,
integer-array writes (an out-of-range id in one process's block: the same typed error everywhere), cumulative sums
and products along split axes, real ``sort``/``unique_counts``/``searchsorted`` of split values, complex
``var``/``std``, ``linalg.solve``/``qr`` of split rows and FFTs of prime lengths along split axes. Each case checks on
every process: NumPy's values, dtype and shape; one answer and one comm log on every process; an error of the same
typed ``sa`` class on every process (``mpi_fuzzing``'s rules: derandomized, decided collectively, a hang guard).

**Misuse that one process alone sees** raises on every process, or ends the job naming it, and never hangs:

* ``x[i]`` of a split positional array with an ``i`` that differs between processes: each process's broadcast named
  another root and every process silently returned process 0's element (``x[2 * r]`` gave ``0.0`` everywhere). The
  group's header now carries the root: ``CommError`` on every process (also ``reduce``).
* The first collective over some mesh axes splits ``COMM_WORLD`` (``MPI.Comm.Split``, a collective of the job) before
  anything was compared: a process elsewhere on ``COMM_WORLD`` (``numpy()``'s check, after ``x[r:]`` needed no
  communication on process 0 only) unpickled the Split's bytes and raised a raw ``MemoryError`` while the others waited
  forever. The Split is now preceded by a checked collective (once per axes): ``CommError`` on every process; the
  check's allgather turns what does not unpickle into ``CommError`` too.
* Processes waiting in different collectives on different communicators (``xp.sum(x, axis=r % 2)``: half of them in
  an allreduce, the others in ``numpy()``'s check; ``roll``, ``cumulative_sum``, ``reshard`` by a per-process
  argument) hung forever. Each process's watchdog now tells the other members of a collective it has waited in for
  ``SHARDARRAY_HANG_CHECK_S`` seconds (10 by default) which collective that is (its number and signature); a process
  whose collective of that number was another one ends the job, naming both (tests launching ``mpiexec`` themselves,
  ``tests/support/mpi_fuzz12_hang.py``; a merely slow process is not taken for a deadlock).

``FUZZ12_EXAMPLES=<n>`` runs every fuzzer with ``n`` examples. The fuzz and misuse tests run inside an MPI job of 4
processes (``mpiexec -n 4 python -m pytest -q tests/mpi``); the ``mpiexec``-launching ones and the watchdog's unit
tests run outside one.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import time
import warnings

import numpy as np
import pytest
from helpers import layouts
from hypothesis import given
from hypothesis import strategies as st
from mpi_fuzzing import agree, meshes, mpi_fuzz, no_hang  # noqa: F401  (no_hang: an autouse fixture)
from mpi_fuzzing import digest as _digest
from mpi_fuzzing import gathered as _gathered
from mpi_fuzzing import quiet as _quiet
from mpi_fuzzing import world as _world
from mpi_jobs import ROOT, mpiexec
from spmd import WORLD

import shardarray as sa
import shardarray.array_api as xp
from shardarray.array import as_kind
from shardarray.comm import mpi as mpi_comm
from shardarray.comm import spmd as comm_spmd
from shardarray.comm import watchdog as comm_watchdog

HAVE_MPI = shutil.which("mpiexec") is not None and importlib.util.find_spec("mpi4py") is not None
mpi4 = pytest.mark.skipif(WORLD != 4, reason="needs mpiexec -n 4 (see .ci/run)")
outside = pytest.mark.skipif(WORLD > 1 or not HAVE_MPI, reason="launches mpiexec itself: needs mpiexec and mpi4py")
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning", "ignore::UserWarning")
LONG = (0, 1, 2, 3, 5, 7)  # (split axes: uneven blocks, processes holding nothing)


def fuzz(n: int):
    """A fuzzer's settings: ``n`` examples (``FUZZ12_EXAMPLES`` overrides), the same on every process."""
    return mpi_fuzz(n, "FUZZ12_EXAMPLES")


def _pos(a: np.ndarray, mesh: sa.Mesh, lay: dict, prefix: str = "dim") -> xp.Array:
    """``a`` on ``mesh`` as a positional array, ``lay`` its layout by dim index (size-1 dims may be split too)."""
    dims = tuple(f"{prefix}{k}" for k in range(a.ndim))
    return as_kind(sa.asarray(a, dims=dims, mesh=mesh, layout={dims[k]: v for k, v in lay.items()}), xp.Array)


@st.composite
def _layout(draw, mesh: sa.Mesh, ndim: int, split0: bool = False) -> dict:
    """A random legal layout by dim index (``split0``: dim 0 over every mesh axis, half the time)."""
    if split0 and draw(st.booleans()):
        return {0: tuple(mesh.axis_names)}
    return draw(layouts(mesh, tuple(range(ndim))))


def _values(rng: np.random.Generator, shape: tuple, dtype: str) -> np.ndarray:
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    if dt.kind in "iu":
        return rng.integers(-3, 4, shape).astype(dt)
    v = rng.integers(-4, 5, shape) / 2
    if dt.kind == "c":
        v = v + 1j * (rng.integers(-4, 5, shape) / 2)
    return v.astype(dt)


def _same(g, e, tol: float = 0.0) -> None:
    g, e = np.asarray(g), np.asarray(e)
    assert g.shape == e.shape, f"shape {g.shape}, NumPy {e.shape}"
    assert g.dtype == e.dtype, f"dtype {g.dtype}, NumPy {e.dtype}"
    exact = g.dtype.kind not in "fc"
    np.testing.assert_allclose(g, e, rtol=0 if exact else max(tol, 1e-5), atol=0 if exact else max(tol, 1e-6))


def run(np_call, sa_call, label: str, compare=None, tol: float = 0.0):
    """NumPy's ``np_call()`` against ``sa_call()`` on every process: the same result and comm log everywhere, NumPy's
    values (``compare(values, expected)`` when given), or, where NumPy raises, one typed ``sa`` error everywhere."""
    try:
        expected, np_error = _quiet(np_call), None
    except Exception as e:
        expected, np_error = None, e
    with warnings.catch_warnings(), np.errstate(all="ignore"), sa.comm_log() as log:
        warnings.simplefilter("ignore")
        try:
            got, error = sa_call(), None
        except Exception as e:  # (judged below, collectively)
            got, error = None, e
    kind = None if error is None else type(error).__name__
    kinds = _world().allgather(kind)
    if len(set(kinds)) != 1:
        agree(f"{label}ended as {kind}: {error!r:.300}; the processes ended as {kinds}")
    if error is not None:
        bad = not isinstance(error, sa.ShardArrayError) or np_error is None
        agree(f"{label}raised {kind}: {error!r:.300} (NumPy: {np_error!r:.100})" if bad else None)
        return
    if np_error is not None:
        agree(f"{label}NumPy raised {type(np_error).__name__}: {np_error}; shardarray gave a result")
    records = [(r.op, r.axes, r.group_size, r.elements, r.bytes) for r in log.records]
    values = _quiet(lambda: _gathered(got))
    logs, digests = zip(*_world().allgather((_digest([repr(records)]), _digest(values))))
    message = None
    if len(set(logs)) != 1:
        message = f"the processes logged different collectives (this one: {records})"
    elif len(set(digests)) != 1:
        message = "the processes got different results"
    else:
        try:
            if compare is not None:
                compare(values, expected)
            elif isinstance(expected, tuple):
                assert isinstance(values, tuple) and len(values) == len(expected), "not NumPy's tuple"
                for g, e in zip(values, expected):
                    _same(g, e, tol)
            else:
                _same(values, expected, tol)
        except AssertionError as e:
            message = str(e)[:2000]
    agree(None if message is None else label + message)


# =============================================================================================== 1. manipulation


@mpi4
@fuzz(10)
@given(meshes(), st.data())
def test_fuzz_squeeze_expand_concat_stack(mesh, data):
    """``squeeze`` of a split size-1 dim (one process holds it, the others nothing), ``expand_dims``, and
    ``concat``/``stack`` of two arrays laid out differently (split along other dims or axes)."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    n, m = data.draw(st.sampled_from(LONG)), data.draw(st.sampled_from([1, 2, 3]))
    dtype = data.draw(st.sampled_from(["float64", "int32", "bool", "complex64", "float16"]))
    a = _values(rng, (n, 1, m), dtype)
    x = _pos(a, mesh, data.draw(_layout(mesh, 3)))
    run(lambda: np.squeeze(a, axis=1), lambda: xp.squeeze(x, axis=1), "squeeze: ")
    run(lambda: np.squeeze(a), lambda: np.squeeze(x), "np.squeeze: ")
    at = data.draw(st.integers(-4, 3))
    run(lambda: np.expand_dims(a, at), lambda: xp.expand_dims(x, axis=at), f"expand_dims {at}: ")
    b = _values(rng, (n, m), data.draw(st.sampled_from([dtype, "float32", "int64"])))
    c = _values(rng, (n, m), dtype)
    bx, cx = (_pos(v, mesh, data.draw(_layout(mesh, 2, split0=True))) for v in (b, c))
    axis = data.draw(st.integers(-2, 1))
    run(lambda: np.concatenate([b, c], axis=axis), lambda: xp.concat([bx, cx], axis=axis), f"concat {axis}: ")
    run(lambda: np.stack([b, c], axis=axis), lambda: xp.stack([bx, cx], axis=axis), f"stack {axis}: ")
    run(lambda: np.concatenate([b, c], axis=None), lambda: xp.concat([bx, cx], axis=None), "concat None: ")


# =============================================================================================== 2. writes


@mpi4
@fuzz(10)
@given(meshes(), st.data())
def test_fuzz_mask_and_integer_array_writes(mesh, data):
    """``x[mask]`` (a split mask), ``x[mask] = v`` (scalar, or as many values as the mask selects), and
    ``x[ids] = v`` along a split axis with distinct ids (negative among them; an out-of-range id in one process's
    block: NumPy's IndexError, one typed error on every process), on copies so every process writes alike."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    n, m = data.draw(st.sampled_from(LONG)), data.draw(st.sampled_from([1, 3]))
    dtype = data.draw(st.sampled_from(["float64", "int64", "float32", "complex128"]))
    a = _values(rng, (n, m), dtype)
    lay = data.draw(_layout(mesh, 2, split0=True))
    mask = a.real > 0 if a.dtype.kind == "c" else a > 0
    x, mx = _pos(a, mesh, lay), _pos(mask, mesh, data.draw(_layout(mesh, 2, split0=True)))
    run(lambda: a[mask], lambda: x[mx], "x[mask]: ")

    def written(key, keyx, value, valuex):
        def want():
            out = a.copy()
            out[key] = value
            return out

        def got():
            out = xp.asarray(x, copy=True)
            out[keyx] = valuex
            return out

        return want, got

    want, got = written(mask, mx, 7, 7)
    run(want, got, "x[mask] = 7: ")
    k = int(mask.sum())
    v = _values(rng, (k,), dtype)
    want, got = written(mask, mx, v, xp.asarray(v, device=mesh))
    run(want, got, "x[mask] = values: ")
    if n:
        ids = rng.permutation(n)[: data.draw(st.integers(1, n))]
        ids = np.where(rng.integers(0, 2, ids.size) == 1, ids - n, ids)  # (negative ids, still distinct rows)
        if data.draw(st.integers(0, 4)) == 0:
            ids[rng.integers(ids.size)] = data.draw(st.sampled_from([n, -n - 1]))
        vals = _values(rng, (ids.size, m), dtype)
        idx = _pos(ids, mesh, data.draw(_layout(mesh, 1, split0=True)), prefix="q")
        want, got = written(ids, idx, vals, _pos(vals, mesh, data.draw(_layout(mesh, 2))))
        run(want, got, "x[ids] = values: ")


# =============================================================================================== 3. scans, order


@mpi4
@fuzz(10)
@given(meshes(), st.data())
def test_fuzz_cumulative_sort_unique_searchsorted(mesh, data):
    """``cumulative_sum``/``cumulative_prod`` (``include_initial``) and ``np.cumsum`` along a split axis; real
    ``sort`` (descending, NaN, ties), ``unique_counts`` and ``searchsorted`` (both sides) of split values."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    n, m = data.draw(st.sampled_from(LONG)), data.draw(st.sampled_from([1, 2]))
    dtype = data.draw(st.sampled_from(["float64", "int64", "float32", "int8", "complex128"]))
    a = _values(rng, (n, m), dtype)
    x = _pos(a, mesh, data.draw(_layout(mesh, 2, split0=True)))
    axis = data.draw(st.sampled_from([0, 1]))
    first = data.draw(st.booleans())
    for name, f in (("sum", np.cumsum), ("prod", np.cumprod)):

        def want(f=f, name=name):
            out = f(a, axis=axis)
            if not first:
                return out
            zero = np.full_like(out, 0 if name == "sum" else 1, shape=(1, m) if axis == 0 else (n, 1))
            return np.concatenate([zero, out], axis=axis)

        xf = getattr(xp, f"cumulative_{name}")
        run(want, lambda xf=xf: xf(x, axis=axis, include_initial=first), f"cumulative_{name} {axis} {first}: ")
    run(lambda: np.cumsum(a, axis=axis), lambda: np.cumsum(x, axis=axis), "np.cumsum: ")
    if dtype == "complex128":
        return
    flat = a[:, 0].astype(np.float64)
    if flat.size and data.draw(st.booleans()):
        flat[rng.integers(flat.size)] = np.nan
    fx = _pos(flat, mesh, data.draw(_layout(mesh, 1, split0=True)))
    descending = data.draw(st.booleans())
    want = np.sort(flat)[::-1] if descending else np.sort(flat)  # (descending: the ascending order reversed, NaN first)
    run(lambda: want, lambda: xp.sort(fx, descending=descending), "sort: ")
    run(lambda: np.unique(flat, return_counts=True), lambda: tuple(xp.unique_counts(fx)), "unique_counts: ")
    s = np.sort(flat)
    sx = _pos(s, mesh, data.draw(_layout(mesh, 1, split0=True)))
    q = np.array([-3.0, -0.5, 0.0, 1.0, 2.5, np.nan])[: data.draw(st.integers(0, 6))]
    side = data.draw(st.sampled_from(["left", "right"]))
    qx = _pos(q, mesh, data.draw(_layout(mesh, 1, split0=True)), prefix="v")
    run(lambda: np.searchsorted(s, q, side=side), lambda: xp.searchsorted(sx, qx, side=side), f"searchsorted {side}: ")


# =============================================================================================== 4. math


def _qr_compare(values, expected) -> None:
    """Q and R are unique up to the signs of R's diagonal: Q R equals A, Q is orthonormal, R upper triangular."""
    (q, r), (q0, r0) = values, expected
    assert q.shape == q0.shape and r.shape == r0.shape, f"shapes {q.shape} {r.shape}, NumPy {q0.shape} {r0.shape}"
    assert q.dtype == q0.dtype and r.dtype == r0.dtype, f"dtypes {q.dtype} {r.dtype}, NumPy {q0.dtype} {r0.dtype}"
    np.testing.assert_allclose(q @ r, q0 @ r0, rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(q.T @ q, np.eye(q.shape[1]), atol=1e-8)
    np.testing.assert_allclose(np.abs(r), np.abs(r0), rtol=1e-8, atol=1e-8)


@mpi4
@fuzz(10)
@given(meshes(), st.data())
def test_fuzz_var_std_complex_linalg_fft(mesh, data):
    """Complex ``var``/``std`` (``correction``) over split axes; ``linalg.solve`` and ``qr`` of split rows; ``fft``,
    ``ifft`` and ``rfft`` of prime lengths along a split axis."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    name = data.draw(st.sampled_from(["var", "linalg", "fft"]))
    if name == "var":
        a = _values(rng, (data.draw(st.sampled_from(LONG)), 3), data.draw(st.sampled_from(["complex128", "complex64"])))
        x = _pos(a, mesh, data.draw(_layout(mesh, 2, split0=True)))
        axis, ddof = data.draw(st.sampled_from([0, 1, None])), data.draw(st.sampled_from([0, 1]))
        for f in ("var", "std"):
            run(
                lambda f=f: getattr(np, f)(a, axis=axis, ddof=ddof),
                lambda f=f: getattr(xp, f)(x, axis=axis, correction=ddof),
                f"{f} {axis} {ddof}: ",
                tol=1e-4 if a.dtype == np.complex64 else 0,
            )
    elif name == "linalg":
        k = data.draw(st.sampled_from([1, 2, 3, 5]))
        a = rng.standard_normal((k, k)) + k * np.eye(k)
        b = rng.standard_normal((k,) if data.draw(st.booleans()) else (k, 2))
        ax = _pos(a, mesh, data.draw(_layout(mesh, 2, split0=True)))
        bx = _pos(b, mesh, data.draw(_layout(mesh, b.ndim, split0=True)), prefix="b")
        run(lambda: np.linalg.solve(a, b), lambda: xp.linalg.solve(ax, bx), "solve: ", tol=1e-8)
        rows = data.draw(st.sampled_from([k, k + 2, 7]))
        t = rng.standard_normal((rows, k))
        tx = _pos(t, mesh, data.draw(_layout(mesh, 2, split0=True)))
        run(lambda: tuple(np.linalg.qr(t)), lambda: tuple(xp.linalg.qr(tx)), "qr: ", compare=_qr_compare)
    else:
        n = data.draw(st.sampled_from([1, 2, 3, 5, 7, 11, 13]))
        dtype = data.draw(st.sampled_from(["complex128", "float64", "float32", "complex64"]))
        a = _values(rng, (n, 2), dtype)
        x = _pos(a, mesh, data.draw(_layout(mesh, 2, split0=True)))
        tol = 1e-4 if a.dtype.itemsize * (2 if a.dtype.kind == "f" else 1) <= 8 else 1e-9
        cast = np.complex64 if dtype in ("float32", "complex64") else np.complex128  # (NumPy's fft is complex128)
        run(lambda: np.fft.fft(a, axis=0).astype(cast), lambda: xp.fft.fft(x, axis=0), f"fft {n}: ", tol=tol)
        run(lambda: np.fft.ifft(a, axis=0).astype(cast), lambda: xp.fft.ifft(x, axis=0), f"ifft {n}: ", tol=tol)
        if a.dtype.kind == "f":
            run(lambda: np.fft.rfft(a, axis=0).astype(cast), lambda: xp.fft.rfft(x, axis=0), f"rfft {n}: ", tol=tol)


# =============================================================================================== 5. misuse in the job


def _split(mesh: sa.Mesh, n: int = 8) -> xp.Array:
    return _pos(np.arange(float(n)), mesh, {0: tuple(mesh.axis_names)})


def _every_process_raises(call, error=sa.CommError, match: str = "") -> None:
    """``call()`` raises ``error`` on every process (and the job goes on in step)."""
    try:
        call()
        said = "returned"
    except error as e:
        said = None if match in str(e) else f"raised {e!r:.300} without {match!r}"
    except Exception as e:
        said = f"raised {type(e).__name__}: {e!s:.300}"
    agree(said)


@mpi4
@pytest.mark.parametrize("shape", [{"row": 4}, {"row": 2, "col": 2}])
def test_an_index_that_differs_between_processes_raises_everywhere(shape):
    """``x[2 * r]`` of a split array: every process's broadcast named its own root, and each silently returned
    process 0's element. Now ``CommError`` everywhere, naming the roots; the job goes on."""
    mesh = sa.Mesh(shape, comm="mpi", backend="numpy")
    x = _split(mesh)
    r = mesh.process_index
    _every_process_raises(lambda: float(x[2 * r]), match="root")
    agree(None if float(x[5]) == 5.0 and x.numpy().tolist() == list(range(8)) else "out of step afterwards")


@mpi4
@pytest.mark.parametrize("op", ["broadcast", "reduce"])
def test_a_broadcast_or_reduce_whose_processes_name_other_roots_raises(op):
    """The communicator's ``broadcast``/``reduce`` called with a root that differs between processes."""
    mesh = sa.Mesh({"row": 4}, comm="mpi", backend="numpy")
    r = mesh.process_index
    shards = [np.full(3, float(r)) if d == r else None for d in range(4)]
    _every_process_raises(lambda: getattr(mesh.comm, op)(shards, ("row",), r % 2), match="root")
    out = mesh.comm.broadcast(shards, ("row",), 1)[r]  # (the same root: in step)
    agree(None if out.tolist() == [1.0] * 3 else f"broadcast gave {out}")


@mpi4
@pytest.mark.parametrize("case", ["slice", "roll"])
def test_the_first_collective_over_new_axes_meets_a_process_elsewhere(monkeypatch, case):
    """``x[r:]`` (``roll(x, r)``) needs no communication on process 0 only, which goes on to ``numpy()``'s check while
    the others split ``COMM_WORLD`` for their first exchange over the mesh's axes: process 0 raised a raw
    ``MemoryError`` (the Split's bytes unpickled) and the others waited forever. Now ``CommError`` everywhere."""
    monkeypatch.setattr(mpi_comm, "_SUBS", {})  # (no sub-communicator yet, as in a fresh job)
    mesh = sa.Mesh({"row": 4}, comm="mpi", backend="numpy")
    x = _split(mesh)
    r = mesh.process_index
    op = (lambda: x[r:]) if case == "slice" else (lambda: xp.roll(x, r))
    _every_process_raises(lambda: op().numpy(), match="SPMD mismatch")
    agree(None if xp.roll(x, 1).numpy().tolist() == np.roll(np.arange(8.0), 1).tolist() else "out of step afterwards")


@mpi4
@pytest.mark.parametrize("value", [1.5, 3])
def test_a_host_reduction_that_meets_a_check_raises_everywhere(value):
    """Process 0 reduces a host number (``take``'s bounds, a linalg check) while the others convert a split array:
    process 0 raised a raw ``ValueError`` from NumPy (a float: the others' check payloads in its list), or (an int:
    mpi4py's object allreduce, which also holds the GIL, so no watchdog could see it) waited forever. Now
    ``CommError`` on every process, and the job goes on."""
    mesh = sa.Mesh({"row": 4}, comm="mpi", backend="numpy")
    x = _split(mesh)
    float(xp.sum(x))
    _every_process_raises(lambda: mesh.comm.host_reduce(value, "max") if mesh.process_index == 0 else x.numpy())
    got = [mesh.comm.host_reduce(v, op) for v, op in ((value, "max"), (mesh.process_index, "sum"), (-2, "min"))]
    agree(None if got == [value, 6, -2] else f"host reductions gave {got}")


# =============================================================================================== 6. deadlocks


def _job(case: str, limit: float = 0.5):
    return mpiexec(
        4, str(ROOT / "tests" / "support" / "mpi_fuzz12_hang.py"), case, str(limit),
        timeout=90, env={"SHARDARRAY_HANG_CHECK_S": str(limit)},
    )  # fmt: skip


@outside
@pytest.mark.parametrize("case", ["sum_axis", "roll"])
def test_processes_stuck_in_different_collectives_end_the_job(case):
    """Half the processes allreduce while the others wait in ``numpy()``'s check (or an exchange against a check): it
    hung forever. The watchdogs then ended the job about ``SHARDARRAY_HANG_CHECK_S`` seconds later, naming both;
    since round 14 the collectives' header over the job meets them first (``SPMD mismatch``, one ``CommError`` on
    every process, uncaught here): either way the job ends naming the collectives."""
    start = time.monotonic()
    proc = _job(case)
    assert proc.returncode != 0, proc.stdout[-2000:]
    named = "SPMD deadlock" in proc.stderr or "SPMD mismatch" in proc.stderr
    assert named and "collective #" in proc.stderr, proc.stderr[-3000:]
    assert time.monotonic() - start < 60


@outside
def test_a_slow_process_is_no_deadlock():
    """Process 0 computes for 3 limits before a collective the others wait in: the job ends normally."""
    proc = _job("slow")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.count("done") == 4 and "SPMD deadlock" not in proc.stderr


# ========================================================================================= 7. the watchdog's rules


def _sig(seq: int, op: str, group=None, axes=()) -> tuple:
    return (seq, op, axes, "float64", (2,), group, None, None, None)


@pytest.fixture
def judged(monkeypatch):
    """``spmd``'s state, emptied for a unit test, and the list the job's end (``abort_job``) is recorded in."""
    ended: list[int] = []
    monkeypatch.setattr(comm_spmd._State, "history", {})
    monkeypatch.setattr(comm_spmd._State, "notices", {})
    monkeypatch.setattr(comm_spmd._State, "inflight", 0)
    monkeypatch.setattr(comm_watchdog, "abort_job", lambda code=1: ended.append(code))  # (its caller)
    return ended


@pytest.mark.skipif(WORLD > 1, reason="changes this process's SPMD state: one process")
def test_notices_of_another_collective_of_the_same_number_end_the_job(judged, capsys):
    comm_spmd._State.history[5] = _sig(5, "allreduce", (0, 1, 2, 3), ("row",))
    comm_spmd._State.notices[1] = _sig(5, "numpy")
    comm_spmd._judge_notices(0, 4)
    assert judged == [1] and "process 1 waits in collective #5 (numpy" in capsys.readouterr().err


@pytest.mark.skipif(WORLD > 1, reason="changes this process's SPMD state: one process")
def test_notices_that_prove_nothing_are_kept_or_dropped(judged):
    comm_spmd._State.history.update({5: _sig(5, "allreduce", (0, 1), ("x",)), 6: _sig(6, "allreduce", (0, 1), ("x",))})
    comm_spmd._State.notices.update(
        {
            1: _sig(5, "allreduce", (0, 1), ("x",)),  # the same collective: only slow
            2: _sig(6, "allreduce", (2, 3), ("x",)),  # another collective, but neither needs the other
            3: _sig(9, "numpy"),  # not reached here yet: kept
        }
    )
    comm_spmd._judge_notices(0, 4)
    assert judged == [] and list(comm_spmd._State.notices) == [3]
    comm_spmd._State.history[9] = _sig(9, "allgather", (0, 1, 2, 3), ("x",))  # reached, and it is another collective
    comm_spmd._judge_notices(0, 4)
    assert judged == [1]


@pytest.mark.parametrize("text", ["abc", "-1", "inf", "nan"])
def test_a_bad_hang_check_setting_is_refused(monkeypatch, text):
    monkeypatch.setenv("SHARDARRAY_HANG_CHECK_S", text)
    with pytest.raises(sa.ArgumentError, match="SHARDARRAY_HANG_CHECK_S"):
        comm_spmd.hang_check_s()


def test_hang_check_settings(monkeypatch):
    monkeypatch.delenv("SHARDARRAY_HANG_CHECK_S", raising=False)
    assert comm_spmd.hang_check_s() == 10.0
    monkeypatch.setenv("SHARDARRAY_HANG_CHECK_S", " 0 ")
    assert comm_spmd.hang_check_s() == 0.0
    monkeypatch.setenv("SHARDARRAY_HANG_CHECK_S", "2.5")
    assert comm_spmd.hang_check_s() == 2.5
    assert os.environ["SHARDARRAY_HANG_CHECK_S"] == "2.5"


@mpi4
@pytest.mark.parametrize(
    "make",
    [
        lambda m, r: sa.full(m, {"i": 8}, float(r), layout={"i": "row"}),
        lambda m, r: sa.random.uniform(m, {"i": 8}, seed=r, layout={"i": "row"}),
        lambda m, r: sa.random.normal(m, {"i": 8}, std=1.0 + r, layout={"i": "row"}),
        lambda m, r: sa.random.randint(m, {"i": 8}, 0, 10 + r, layout={"i": "row"}),
    ],
    ids=["full", "uniform-seed", "normal-std", "randint-high"],
)
def test_a_fill_value_or_seed_that_differs_between_processes_raises_everywhere(make):
    """``sa.full`` with a per-process fill value, ``sa.random`` with a per-process seed or bounds: each process
    filled its blocks with its own values, silently (replicas of one block disagreed). Now ``CommError`` on every
    process where the array is made, naming the values; the same arguments go on."""
    mesh = sa.Mesh({"row": 4}, comm="mpi", backend="numpy")
    r = mesh.process_index
    _every_process_raises(lambda: make(mesh, r), match="from ")
    same = make(mesh, 0).numpy()
    agree(None if same.shape == (8,) else f"shape {same.shape}")
