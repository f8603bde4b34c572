"""An MPI job (``mpiexec -n 2|4 python mpi_fuzz16_jobs.py [CASE]``) whose round-16 ops get an argument wrong on
process 1 only (``tests/mpi/test_fuzz16_mpi.py`` runs it).

Run with the hang watchdog far away (``SHARDARRAY_HANG_CHECK_S=300``) and without ``SHARDARRAY_CHECK_SPMD``: only the
failure exchange (``comm.header.fail_together``: every public function is an op boundary) can end a case in time.
Each case makes one argument wrong on process 1 only (an axis out of range of ``xp.cross``/``xp.linalg.cross``, a
negative count among ``xp.repeat``'s host counts or as its integer count, counts of another length, an ``axis`` out
of range of ``xp.logspace``, a 1-D fill to ``xp.full``, an unknown dtype to ``xp.arange`` with a 0-d bound or to
``sa.random.normal``, a dim that is not one to ``sa.fft.fft``/``sa.linalg.vector_norm``, a quantile out of range
of ``np.nanquantile``, an axis out of range of ``np.bitwise_xor.reduce``, an ``out=`` of another shape to
``np.sum``, float data to ``np.bitwise_count``): process 1 raises its own typed error, every other process
``CommError`` naming process 1, its error type and the op, within seconds. Each process prints one line per case:
``CASE own <ErrorType> <seconds>``, ``CASE comm <seconds>`` or ``CASE wrong ...``; then ``aligned <collectives
entered>`` when the job is still in step after it. Without ``CASE`` it runs every case but ``UNTOLD`` (those the
test runs one per job, marked xfail), then ``same_*`` (a negative count among a distributed array of counts, read
by every process through one allreduce: ``CASE own ArgumentError`` on every process) and ``copies``: writes into
a basic index's copy freed unread warn ``sa.CopyWriteWarning`` on every process alike (``copies warned <n>``),
then ``diverge_*``: host arguments valid on each process but different on process 1 (``NAME mismatch <seconds>``
on every process: the job's header finds them).
"""

from __future__ import annotations

import sys
import time
import warnings

import numpy as np
from mpi4py import MPI

import shardarray as sa
import shardarray.array_api as xp
from shardarray.comm import spmd

size = MPI.COMM_WORLD.Get_size()
mesh = sa.Mesh({"row": size}, comm="mpi", backend="numpy")
r = mesh.process_index
H = np.arange(21.0).reshape(7, 3) - 5
x = xp.asarray(H, device=mesh)  # (axis 0 split over the mesh: 7 rows, uneven blocks)
ints = xp.asarray(H.astype(np.int64), device=mesh)
v = xp.asarray(np.arange(15.0).reshape(5, 3), device=mesh)
zero_d = xp.asarray(np.float64(2.0), device=mesh)
named = sa.asarray(H, dims=("a", "b"), mesh=mesh, layout={"a": "row"})
counts3, counts7 = xp.asarray(np.array([1, 0, 2]), device=mesh), xp.asarray(np.arange(7) % 3, device=mesh)
row = v[0]  # (a getitem: a collective every process enters before the cases)
outs = {n: xp.zeros((n,), dtype=xp.float32, device=mesh) for n in (3, 4)}  # (made alike on every process)
float(xp.sum(x))  # (warm: the sub-communicators exist)


def cases(bad: bool) -> dict:
    """name -> (op, the error type the failing process raises, the op's name in the others' message)."""
    counts = [1, -1, 2, 0, 1, 1, 1] if bad else [1, 1, 2, 0, 1, 1, 1]
    return {
        "cross": (lambda: xp.cross(v, v[::-1], axis=2 if bad else -1), sa.DimensionError, "cross"),
        "linalg_cross": (lambda: xp.linalg.cross(v, v, axis=0 if bad else 1), sa.DimensionError, "cross"),
        "repeat_counts": (lambda: xp.repeat(x, counts, axis=0), sa.ArgumentError, "repeat"),
        "repeat_shape": (lambda: xp.repeat(x, [1, 2] if bad else [2], axis=0), sa.DimensionError, "repeat"),
        "repeat_int": (lambda: xp.repeat(x, -3 if bad else 30, axis=0), sa.ArgumentError, "repeat"),
        "logspace": (lambda: xp.logspace(0, 2, 5, axis=1 if bad else 0, device=mesh), sa.OutOfBoundsError, "logspace"),
        "full": (lambda: xp.full((5, 3), row if bad else zero_d, device=mesh), sa.DTypeError, "full"),
        "arange": (
            lambda: xp.arange(zero_d, 9.0, dtype="bogus" if bad else None, device=mesh),
            sa.DTypeError,
            "arange",
        ),
        # (NumPy's functions and ufuncs on Arrays: ``__array_function__``/``__array_ufunc__``)
        "random_normal": (
            lambda: sa.random.normal(mesh, {"a": 9}, dtype="bogus" if bad else "float32", layout={"a": "row"}),
            sa.DTypeError,
            "normal",
        ),
        "bitwise_reduce": (
            lambda: np.bitwise_xor.reduce(ints, axis=2 if bad else 0),
            sa.OutOfBoundsError,
            "bitwise_xor",
        ),
        "sum_out": (
            lambda: np.sum(x, axis=0, out=outs[4 if bad else 3]),
            sa.DimensionError,
            "sum",
        ),
        "sa_fft": (lambda: sa.fft.fft(named, "z" if bad else "a"), sa.DimensionError, "fft"),
        "sa_norm": (lambda: sa.linalg.vector_norm(named, "z" if bad else "a"), sa.DimensionError, "vector_norm"),
        "nanquantile": (lambda: np.nanquantile(x, 1.5 if bad else 0.5, axis=0), sa.ArgumentError, "quantile"),
        "bitwise_count": (lambda: np.bitwise_count(x if bad else ints), sa.DTypeError, "bitwise_count"),
    }


#: cases whose failing process does not raise its own error with ``CommError`` on the others (none left: round 16
#: made NumPy's protocol entry points op boundaries, checks ``xp.full``'s fill before its header, and compares a failed
#: process's header without the op's digest)
UNTOLD: tuple[str, ...] = ()
#: cases whose every process raises the failing process's error (``ops/creation/random.py``'s ``_make`` agrees on
#: the arguments first: ``raise_agreed``); the others print ``CASE agreed <ErrorType>``
AGREED = ("random_normal",)


def same_cases() -> dict:
    """Arguments wrong alike on every process (data on the mesh): every process raises its own error, in step."""
    neg = xp.asarray(np.array([1, 1, 2, 0, 1, -1, 1]), device=mesh)
    return {"same_repeat_counts": (lambda: xp.repeat(x, neg, axis=0), sa.ArgumentError, "repeat")}


def diverging(odd: bool) -> dict:
    """name -> an op whose host arguments differ on process 1 but are valid on each (a count, a length, an axis, a
    shape, a bound, a quantile, ``ufunc.at`` indices): every process raises ``CommError`` (an SPMD mismatch found
    by the job's header), at once, and the job stays in step."""
    return {
        "diverge_repeat_int": lambda: xp.repeat(x, 40 if odd else 30, axis=0),
        "diverge_repeat_few": lambda: xp.repeat(x, 2 if odd else 3, axis=0),
        "diverge_repeat_host_counts": lambda: xp.repeat(x, [1, 2, 0, 1, 3, 1, 1 + odd], axis=0),
        "diverge_repeat_axis": lambda: xp.repeat(x, counts3, axis=1) if odd else xp.repeat(x, counts7, axis=0),
        "diverge_logspace": lambda: xp.logspace(0, 2, 7 if odd else 9, device=mesh),
        "diverge_cross_axisc": lambda: xp.cross(v, v, axisc=0 if odd else 1),
        "diverge_full": lambda: xp.full((5, 3) if odd else (3, 5), zero_d, device=mesh),
        "diverge_arange": lambda: xp.arange(zero_d, 9.0 if odd else 10.0, device=mesh),
        "diverge_xor_reduce": lambda: np.bitwise_xor.reduce(ints, axis=0 if odd else 1),
        "diverge_nanquantile": lambda: np.nanquantile(x, 0.3 if odd else 0.5, axis=0),
        "diverge_bitwise_count_at": lambda: np.bitwise_count.at(ints, [0, 5 + odd]) or ints,
    }


def run_diverging(name: str) -> None:
    start = time.monotonic()
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            diverging(r == 1)[name]().numpy()
        said = "wrong: returned"
    except sa.CommError as e:
        said = "mismatch" if "SPMD mismatch" in str(e) else f"wrong: {e!s:.300}"
    except Exception as e:  # (any other error is wrong: printed for the test)
        said = f"wrong: {e!r:.300}"
    say(f"{name} {said} {time.monotonic() - start:.2f}")


def say(line: str) -> None:
    sys.stdout.write(f"{line}\n")  # (one write: the lines of the processes do not interleave)
    sys.stdout.flush()


def run(name: str, op, kind, opname: str, failing: set[int]) -> None:
    start = time.monotonic()
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            got = op()
            got.numpy()  # (a process whose op sent nothing meets the failure at numpy()'s collective)
        said = "wrong: returned"
    except sa.CommError as e:
        text = str(e)
        kinds = kind if isinstance(kind, tuple) else (kind,)
        named = all(f"process {f}" in text for f in failing) and any(k.__name__ in text for k in kinds)
        said = "comm" if r not in failing and named and opname in text else f"wrong: {text[:400]}"
    except kind as e:
        agreed = name in AGREED and r not in failing  # (the failing process's error, raised by every process)
        said = (
            f"own {type(e).__name__}"
            if r in failing
            else f"agreed {type(e).__name__}"
            if agreed
            else f"wrong: {e!r:.300}"
        )
    except Exception as e:  # (any other error is wrong: printed for the test)
        said = f"wrong: {e!r:.300}"
    say(f"{name} {said} {time.monotonic() - start:.2f}")


def in_step() -> str:
    try:
        good = float(xp.sum(x)) == 105.0 and x.numpy()[6, 2] == 15.0
    except sa.CommError as e:  # (a process that met another's failure only here: out of step)
        return f"wrong: out of step: {e!s:.300}"
    counts = MPI.COMM_WORLD.allgather(spmd.JOB.seq)
    return f"aligned {counts[0]}" if good and len(set(counts)) == 1 else f"wrong: out of step {counts}"


def copies() -> None:
    """Writes into a basic index's copy freed unread: every process warns alike, and the job stays in step."""
    z = xp.asarray(np.zeros((6, 5)), device=mesh)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        z[1:3][0] = 5.0
        np.multiply(z[:3], 2.0, out=z[::2])
        np.add.at(z[0:3], [0, 0], 1.0)
        kept = z[1:3]
        kept[0] = 1.0
        seen = float(xp.sum(kept))  # (read after the write: no warning)
    n = sum(issubclass(w.category, sa.CopyWriteWarning) for w in caught)
    lost = not z.numpy().any() and seen == 5.0
    say(f"copies warned {n}" if lost else f"copies wrong: z written or the kept copy {seen}")


if __name__ == "__main__":
    for name in sys.argv[1:] or [c for c in cases(False) if c not in UNTOLD]:
        op, kind, opname = cases(r == 1)[name]
        run(name, op, kind, opname, {1})
        say(in_step())
    if sys.argv[1:]:
        sys.exit(0)
    for name, (op, kind, opname) in same_cases().items():
        run(name, op, kind, opname, set(range(size)))
        say(in_step())
    copies()
    say(in_step())
    for name in diverging(False):
        run_diverging(name)
        say(in_step())
