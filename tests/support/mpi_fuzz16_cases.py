"""Round 16's new code under MPI, case by case (``tests/mpi/test_fuzz16_mpi.py``; run as a job by itself:
``mpiexec -n 2 python tests/support/mpi_fuzz16_cases.py`` prints ``ok <case>`` or ``wrong: <case> ...`` per case).

Each case builds the same global input on every process, runs the op on the MPI mesh and on the emulated mesh of the
same shape (in this process), and is judged against NumPy on the gathered value (dtype, shape, values bit for bit,
signed zeros included) and against the emulated mesh's comm log. Blocks are uneven and some empty (7 rows over 4
devices, 2 over 4). The cases: ``xp.repeat`` by an Array of counts (a scan, two scalar allreduces, a routed
``searchsorted`` and ``take``) and by a large integer (``repeat_fetch``), ``xp.logspace``, ``xp.cross``,
``xp.full``/``full_like`` with a 0-d array fill, ``xp.arange`` with 0-d bounds, ``np.bitwise_count`` (and its
``at``), ``np.bitwise_and/or/xor.reduce`` and ``np.logical_xor.reduce``, reductions, scans and moments into an
``out=`` of another dtype, complex ``np.nanvar`` of infinite values and the nan-quantiles' signed zeros.

The one difference the comm logs may show: the nan-reductions' ``any_true`` (``array_api/_nanfuncs.py``) reads a
flag on the host of an emulated mesh (no collective) and allreduces it under MPI (one 1-byte bool, so that every
process warns alike); such records are left out of the MPI log before the comparison (``_any_true_flag``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from mpi_case_jobs import Record, check_case, differs, placed, run_cases
from mpi_case_jobs import run_on as _run_on

import shardarray as sa
import shardarray.array_api as xp

H = np.arange(21.0).reshape(7, 3) - 5  # (7 rows: uneven over 2 and 4 devices)
HI = (np.arange(21).reshape(7, 3) * 37 - 300).astype(np.int64)
COUNTS = np.array([0, 2, 1, 0, 3, 1, 0])
V3 = np.array([[1.0, 2, 3], [0, 0, 1], [-1, 4, 0.5], [2, 2, 2], [0, -3, 1]])
W3 = np.array([[4.0, 5, 6], [1, 0, 0], [0, 1, 0], [-2, 2, 7], [3, 3, -1]])
HZ = np.array([[-0.0, np.nan, 1.0], [-0.0, -0.0, np.nan], [np.nan, 0.0, -2.0], [-0.0, np.nan, 2.0]])
HC = np.array([[1 + 1j, np.inf, 2j], [np.nan, 3 - 1j, 1j], [2.0, 1 + np.inf * 1j, -1], [0j, 0j, np.nan]])


def _first(axes: tuple[str, ...]) -> tuple[str, ...]:
    return axes[:1]


def _last(axes: tuple[str, ...]) -> tuple[str, ...] | None:
    return axes[1:] or None


def _out_case(fn: Callable, h: np.ndarray, shape: tuple[int, ...], dtype: Any, **kw: Any) -> tuple[Callable, Callable]:
    """``fn(x, out=o, **kw)`` with ``o`` of another dtype than ``x`` (NumPy computes through ``o``)."""

    def run(m: sa.Mesh, a: tuple[str, ...]) -> Any:
        o = xp.zeros(shape, dtype=dtype, device=m)
        r = fn(placed(h, m, [a] + [None] * (h.ndim - 1)), out=o, **kw)
        return [o, r]

    def want() -> Any:
        o = np.zeros(shape, dtype=dtype)
        r = fn(h, out=o, **kw)
        return [o, r]

    return run, want


def _at_count(m: sa.Mesh, a: tuple[str, ...]) -> Any:
    x = placed(HI, m, [a])
    np.bitwise_count.at(x, ([0, 6, 6, 2], [1, 0, 0, 2]))
    return x


def _want_at_count() -> Any:
    w = HI.copy()
    np.bitwise_count.at(w, ([0, 6, 6, 2], [1, 0, 0, 2]))
    return w


def _sizes(m: sa.Mesh, a: tuple[str, ...]) -> Any:
    """``itemsize``/``nbytes`` of split arrays (global figures; no collective)."""
    got = []
    for h in (H, HI.astype(np.int8), np.zeros((0, 3), np.complex64), HZ.astype(np.float32)):
        x = placed(h, m, [a] + [None] * (h.ndim - 1))
        got.append(np.array([x.itemsize, x.nbytes]))
    return got


def _repeat_cases(c: dict[str, tuple[Callable, Callable]]) -> None:
    c["repeat_counts"] = (
        lambda m, a: xp.repeat(placed(H, m, [a]), placed(COUNTS, m, [a]), axis=0),
        lambda: np.repeat(H, COUNTS, axis=0),
    )
    c["repeat_counts_other_layout"] = (
        lambda m, a: xp.repeat(placed(H, m, [_first(a), _last(a)]), placed(np.array([3, 0, 2]), m, [None]), axis=1),
        lambda: np.repeat(H, [3, 0, 2], axis=1),
    )
    c["repeat_counts_unsplit_x"] = (
        lambda m, a: xp.repeat(placed(H, m, [None, None]), placed(COUNTS, m, [a]), axis=0),
        lambda: np.repeat(H, COUNTS, axis=0),
    )
    c["repeat_counts_flat"] = (
        lambda m, a: xp.repeat(placed(H[:2], m, [a]), placed(np.arange(6) % 3, m, [a])),
        lambda: np.repeat(H[:2], np.arange(6) % 3),
    )
    c["repeat_counts_one"] = (
        lambda m, a: xp.repeat(placed(H, m, [a]), placed(np.array([2]), m, [a]), axis=0),
        lambda: np.repeat(H, [2], axis=0),
    )
    c["repeat_counts_zero"] = (
        lambda m, a: xp.repeat(placed(H, m, [a]), placed(np.zeros(7, np.int32), m, [a]), axis=0),
        lambda: np.repeat(H, np.zeros(7, np.int32), axis=0),
    )
    c["repeat_counts_empty"] = (
        lambda m, a: xp.repeat(placed(H[:0], m, [a]), placed(np.zeros(0, np.int64), m, [a]), axis=0),
        lambda: np.repeat(H[:0], np.zeros(0, np.int64), axis=0),
    )
    c["repeat_counts_two_entries"] = (  # (2 rows over 4 devices: empty blocks of x and of the counts)
        lambda m, a: xp.repeat(placed(H[:2], m, [a]), placed(np.array([5, 1]), m, [a]), axis=0),
        lambda: np.repeat(H[:2], [5, 1], axis=0),
    )
    c["repeat_many"] = (  # (repeat_fetch: each device fetches the entries covering its block)
        lambda m, a: xp.repeat(placed(np.array([2.0, -3.0]), m, [a]), 45),
        lambda: np.repeat([2.0, -3.0], 45),
    )
    c["repeat_many_rows"] = (
        lambda m, a: xp.repeat(placed(H, m, [a]), 9, axis=0),
        lambda: np.repeat(H, 9, axis=0),
    )
    c["repeat_few"] = (lambda m, a: xp.repeat(placed(H, m, [a]), 2, axis=0), lambda: np.repeat(H, 2, axis=0))
    c["repeat_many_2d_mesh_axis"] = (
        lambda m, a: xp.repeat(placed(H, m, [_first(a), _last(a)]), 7, axis=1),
        lambda: np.repeat(H, 7, axis=1),
    )


def _creation_cases(c: dict[str, tuple[Callable, Callable]]) -> None:
    for args, kw in (
        ((0, 2, 7), {}),
        ((0.5, -2, 9), {"base": 3.5, "dtype": np.float32}),
        ((-1, 1.5, 5), {"endpoint": False}),
        ((1, 1, 0), {}),
        ((0, 3, 4), {"dtype": np.int64}),
    ):
        c[f"logspace_{args}_{sorted(kw)}"] = (
            lambda m, a, args=args, kw=kw: xp.logspace(*args, **kw, device=m),
            lambda args=args, kw=kw: np.logspace(*args, **kw),
        )
    c["logspace_0d"] = (
        lambda m, a: xp.logspace(
            xp.asarray(0.0, device=m), xp.asarray(2.0, device=m), 5, base=xp.asarray(2.0, device=m)
        ),
        lambda: np.logspace(0.0, 2.0, 5, base=2.0),
    )
    for label, fill in (("f32", np.float32(-2.5)), ("i8", np.int8(-3)), ("bool", np.True_), ("negzero", -0.0)):
        c[f"full_0d_{label}"] = (
            lambda m, a, f=fill: xp.full((7, 3), xp.asarray(f, device=m), device=m),
            lambda f=fill: np.full((7, 3), f),
        )
        c[f"full_like_0d_{label}"] = (
            lambda m, a, f=fill: xp.full_like(placed(H, m, [a]), xp.asarray(f, device=m)),
            lambda f=fill: np.full_like(H, f),
        )
    c["full_0d_dtype"] = (
        lambda m, a: xp.full((2, 5), xp.asarray(np.float64(1.25), device=m), dtype=xp.float32, device=m),
        lambda: np.full((2, 5), 1.25, dtype=np.float32),
    )
    for label, args in (("int", (1, 9, 2)), ("float", (0.5, 3.7, 0.4)), ("neg", (5, -2, -3)), ("stop", (7,))):
        c[f"arange_0d_{label}"] = (
            lambda m, a, args=args: xp.arange(*(xp.asarray(v, device=m) for v in args), device=m),
            lambda args=args: np.arange(*args),
        )


def _protocol_cases(c: dict[str, tuple[Callable, Callable]]) -> None:
    c["cross"] = (
        lambda m, a: xp.cross(placed(V3, m, [a]), placed(W3, m, [a])),
        lambda: np.cross(V3, W3),
    )
    c["cross_vectors_split"] = (  # (the vector axis split: single elements move)
        lambda m, a: xp.cross(placed(V3.T.copy(), m, [a]), placed(W3.T.copy(), m, [a]), axis=0),
        lambda: np.cross(V3.T, W3.T, axis=0),
    )
    c["cross_broadcast_axisc"] = (
        lambda m, a: xp.cross(placed(V3, m, [_first(a), _last(a)]), xp.asarray(W3[1], device=m), axisc=0),
        lambda: np.cross(V3, W3[1], axisc=0),
    )
    c["np_cross"] = (lambda m, a: np.cross(placed(V3, m, [a]), placed(W3, m, [None])), lambda: np.cross(V3, W3))
    c["linalg_cross"] = (
        lambda m, a: xp.linalg.cross(placed(V3, m, [a]), placed(W3, m, [None, a])),
        lambda: np.cross(V3, W3),
    )
    for dt in ("int8", "uint16", "int64"):
        h = HI.astype(dt)
        c[f"bitwise_count_{dt}"] = (
            lambda m, a, h=h: np.bitwise_count(placed(h, m, [a])),
            lambda h=h: np.bitwise_count(h),
        )
    c["bitwise_count_at"] = (_at_count, _want_at_count)
    for uf in ("bitwise_and", "bitwise_or", "bitwise_xor", "logical_xor"):
        for ax in (0, 1, None, (0, 1)):
            c[f"{uf}_reduce_{ax}"] = (
                lambda m, a, uf=uf, ax=ax: getattr(np, uf).reduce(placed(HI, m, [_first(a), _last(a)]), axis=ax),
                lambda uf=uf, ax=ax: getattr(np, uf).reduce(HI, axis=ax),
            )
    c["bitwise_or_reduce_empty_blocks"] = (
        lambda m, a: np.bitwise_or.reduce(placed(HI[:2], m, [a]), axis=0),
        lambda: np.bitwise_or.reduce(HI[:2], axis=0),
    )
    c["out_sum_int32"] = _out_case(np.sum, H, (3,), np.int32, axis=0)
    c["out_mean_float32"] = _out_case(np.mean, HI, (3,), np.float32, axis=0)
    c["out_var_float32"] = _out_case(np.var, H, (3,), np.float32, axis=0)
    c["out_std_float16"] = _out_case(np.std, HI, (7,), np.float16, axis=1)
    c["out_cumsum_float32"] = _out_case(np.cumsum, HI, (7, 3), np.float32, axis=0)
    c["out_prod_int8"] = _out_case(np.prod, H, (7,), np.int8, axis=1)
    c["out_nansum_float32"] = _out_case(np.nansum, HZ, (3,), np.float32, axis=0)
    c["out_add_reduce_int16"] = _out_case(np.add.reduce, HI, (3,), np.int16, axis=0)
    c["nanvar_complex_inf"] = (lambda m, a: np.nanvar(placed(HC, m, [a]), axis=0), lambda: np.nanvar(HC, axis=0))
    c["nanvar_complex_inf_all"] = (lambda m, a: np.nanvar(placed(HC, m, [a])), lambda: np.nanvar(HC))
    c["nanstd_complex_inf"] = (lambda m, a: np.nanstd(placed(HC, m, [a]), axis=1), lambda: np.nanstd(HC, axis=1))
    for f in ("nanmedian", "nanquantile", "nanpercentile"):
        q = () if f == "nanmedian" else (50 if f == "nanpercentile" else 0.5,)
        for ax in (0, 1):
            c[f"{f}_signed_zero_{ax}"] = (
                lambda m, a, f=f, q=q, ax=ax: getattr(np, f)(placed(HZ, m, [a]), *q, axis=ax),
                lambda f=f, q=q, ax=ax: getattr(np, f)(HZ, *q, axis=ax),
            )
    c["itemsize_nbytes"] = (
        _sizes,
        lambda: [
            np.array([h.itemsize, h.nbytes])
            for h in (H, HI.astype(np.int8), np.zeros((0, 3), np.complex64), HZ.astype(np.float32))
        ],
    )


def _cases() -> dict[str, tuple[Callable, Callable]]:
    c: dict[str, tuple[Callable, Callable]] = {}
    _repeat_cases(c)
    _creation_cases(c)
    _protocol_cases(c)
    return c


CASES = _cases()


def _any_true_flag(record: Record) -> bool:
    """``any_true``'s flag: an allreduce of one bool under MPI, a host read on the emulated mesh (not compared)."""
    return record[0] == "allreduce" and record[3:] == (1, 1)


def run_on(mesh: sa.Mesh, fn: Callable) -> tuple[list[Record] | None, Any, str | None]:
    """``fn(mesh, axes)`` with its comm log (less ``any_true``'s flag under MPI) and gathered value, or the error it
    raised (type name)."""
    return _run_on(mesh, fn, _any_true_flag)


def _bits_differ(got: Any, want: Any) -> str | None:
    """Dtype, shape and values as NumPy's (floats to 1e-12: a reduction's order may move the last bit), signs of
    zeros included (a NaN's sign is the hardware's: not compared)."""
    if isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            return differs(got, want)
        return next((m for m in map(_bits_differ, got, want) if m), None)
    g, w = np.asarray(got), np.asarray(want)
    if g.dtype != w.dtype or g.shape != w.shape:
        return f"got {g.dtype}{g.shape}, NumPy {w.dtype}{w.shape}"
    if g.dtype.kind not in "fc":
        return None if np.array_equal(g, w) else f"got {g!r:.300}, NumPy {w!r:.300}"
    close = np.allclose(g, w, rtol=1e-12, atol=0, equal_nan=True)
    signs = np.array_equal(*(np.signbit(v.real) & ~np.isnan(v.real) for v in (g, w)))
    return None if close and signs else f"got {g!r:.300}, NumPy {w!r:.300}"


def check(name: str, shape: dict) -> str | None:
    """Case ``name`` on the MPI mesh of ``shape`` against NumPy (``_bits_differ``) and the emulated mesh's log: None,
    or what is wrong (on this process)."""
    return check_case(name, CASES[name], shape, _bits_differ, _any_true_flag)


if __name__ == "__main__":
    run_cases(CASES, check)
