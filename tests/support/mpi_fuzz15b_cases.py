"""Round 15's new features under MPI, case by case (``tests/mpi/test_fuzz15b_mpi.py``; run as a job by itself:
``mpiexec -n 2 python tests/support/mpi_fuzz15b_cases.py`` prints ``ok <case>`` or ``wrong: <case> ...`` per case).

Each case builds the same global input on every process, runs the op on the MPI mesh and on the emulated mesh of the
same shape (in this process), and is judged against NumPy on the gathered value (dtype, shape, values; bit for bit
where the op promises it) and against the emulated mesh's comm log (``sa.comm_log()``: every process must log what
the emulated mesh logs for the same op). Blocks are uneven and some empty (7 rows over 4 devices, 2 over 4).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from mpi_case_jobs import check_case, placed, run_cases

import shardarray as sa
import shardarray.array_api as xp


def _inplace(op: Callable[[Any], None], make: Callable[[], Any]) -> Any:
    x = make()
    op(x)
    return x


def _first(axes: tuple[str, ...]) -> tuple[str, ...]:
    return axes[:1]


def _last(axes: tuple[str, ...]) -> tuple[str, ...] | None:
    return axes[1:] or None


H = np.arange(21.0).reshape(7, 3) - 5  # (7 rows: uneven over 2 and 4 devices)
HF = np.array([1e16, 3.0, 2.0, 5.0, -1.5, 0.25, 7.0])
KEY, VAL = [6, 0, 0, 3, 6, 1, 0], np.array([-1.0, -1.0, 2.0, 4.0, 0.5, 3.0, 0.125])
BITS = np.arange(21) % 3 == 0
U8 = (np.arange(9) * 37 % 256).astype(np.uint8)
A12 = np.arange(12.0).reshape(3, 4)
MASK = np.arange(12) % 5 == 0
HS = np.array([[1.0, np.inf, 2, 0], [3, -1, np.nan, 4], [0.5, 2, 2, 1], [1, 1, 1, 1], [2, 0, -3, 5]])


def _at_case(name: str, h: np.ndarray, key: Any, v: Any, spread: bool = False) -> tuple[Callable, Callable]:
    """``np.<name>.at(x, key, v)`` of ``h`` split over every mesh axis (``spread``: the key and values on the mesh,
    split too, so a row's pairs come from several devices and the owner must apply them in key order)."""
    uf = getattr(np, name)

    def run(m: sa.Mesh, axes: tuple[str, ...]) -> Any:
        def op(x: Any) -> None:
            k = placed(np.asarray(key), m, [axes]) if spread else key
            w = v if v is None or not spread else placed(np.asarray(v), m, [axes])
            uf.at(x, k, *(() if v is None else (w,)))

        return _inplace(op, lambda: placed(h, m, [axes] + [None] * (h.ndim - 1)))

    def want() -> Any:
        w = h.copy()
        uf.at(w, key, *(() if v is None else (v,)))
        return w

    return run, want


def _pending(kind: str) -> tuple[Callable, Callable]:
    """A pending sum (rows split over the first mesh axis, one row per device at most) times an array holding
    ``inf``, or divided by one holding 0: NumPy's ``inf`` and NaN, not each device's ``0 * inf``."""
    hx = np.array([[1.0, 0.0, 2.0], [-1.0, 0.0, 0.0]])
    hy = np.array([np.inf, 1.0, 0.0])

    def run(m: sa.Mesh, axes: tuple[str, ...]) -> Any:
        x = sa.asarray(hx, dims=("k", "j"), mesh=m, layout={"k": axes})
        y = sa.asarray(hy, dims=("j",), mesh=m, layout={"j": _first(axes)} if kind == "split" else {})
        s = x.sum("k")
        if kind == "einsum":
            return sa.einsum("j, j -> j", s, y)
        return s / y if kind == "div" else s * y

    def want() -> Any:
        s = hx.sum(0)
        return s / hy if kind == "div" else s * hy

    return run, want


def _flat_write(key: Any, value: Any, on_mesh: bool = False) -> tuple[Callable, Callable]:
    def run(m: sa.Mesh, axes: tuple[str, ...]) -> Any:
        x = placed(A12, m, [_first(axes), _last(axes)])
        k = placed(np.asarray(key), m, [axes]) if on_mesh else key
        x.flat[k] = placed(np.asarray(value), m, [axes]) if on_mesh and np.ndim(value) else value
        return x

    def want() -> Any:
        w = A12.copy()
        w.flat[key] = value
        return w

    return run, want


def _like(m: sa.Mesh, axes: tuple[str, ...]) -> list[Any]:
    with sa.default_mesh(m):
        ref = placed(H, m, [axes])
        return [
            np.array([[1, 2], [3, 4]], like=ref),
            np.asanyarray([1.5, 2.5], like=ref),
            np.fromfunction(lambda i, j: i * 10 + j, (3, 2), like=ref),
            np.array(5, like=ref, ndmin=2),
            np.fromiter(range(5), float, like=ref),
        ]


def _cases() -> dict[str, tuple[Callable, Callable]]:
    c: dict[str, tuple[Callable, Callable]] = {}
    for op, h, idx in (
        ("add", H, [0, 3, 1, 1, 6]),
        ("multiply", H, [5]),
        ("maximum", H, [0, 2, 4, 6]),
        ("fmin", np.where(H == 1, np.nan, H), [6, 0, 2]),
        ("logical_xor", H, [0, 3, 1]),
        ("bitwise_or", H.astype(np.int64), [0, 4]),
    ):
        c[f"reduceat_{op}"] = (
            lambda m, a, op=op, h=h, idx=idx: getattr(np, op).reduceat(placed(h, m, [a]), idx, axis=0),
            lambda op=op, h=h, idx=idx: getattr(np, op).reduceat(h, idx, axis=0),
        )
    c["reduceat_empty_blocks"] = (
        lambda m, a: np.add.reduceat(placed(np.ones((2, 3)), m, [a]), [1, 0], axis=0),
        lambda: np.add.reduceat(np.ones((2, 3)), [1, 0], axis=0),
    )
    c["reduceat_other_axis_split"] = (
        lambda m, a: np.add.reduceat(placed(H, m, [_first(a), _last(a)]), [0, 2], axis=1),
        lambda: np.add.reduceat(H, [0, 2], axis=1),
    )
    c["reduceat_indices_on_mesh"] = (
        lambda m, a: np.add.reduceat(placed(H, m, [a]), placed(np.array([0, 4, 2]), m, [a]), axis=0),
        lambda: np.add.reduceat(H, [0, 4, 2], axis=0),
    )
    for name in ("add", "multiply", "divide", "power", "subtract", "copysign", "maximum"):
        c[f"at_{name}"] = _at_case(name, HF, KEY, VAL)
        c[f"at_{name}_spread"] = _at_case(name, HF, KEY, VAL, spread=True)
    c["at_negative"] = _at_case("negative", HF, [1, 1, 5], None)
    c["at_gcd"] = _at_case("gcd", np.arange(1, 8), [0, 6, 6], 4)
    c["at_subtract_uint8"] = _at_case("subtract", np.array([1, 5, 7], np.uint8), [0, 0, 2], 2)
    c["at_power_int"] = _at_case("power", np.arange(1, 8), [6, 6, 0], np.array([2, 3, 0]), spread=True)
    c["at_rows"] = _at_case("multiply", H, [0, 6, 6, 2], 2.0)
    for kind in ("mul", "div", "split", "einsum"):
        c[f"pending_{kind}"] = _pending(kind)
    for fn in ("sqrt", "log", "arcsin"):
        for label, h in (("neg", np.array([4.0, -4, 0.5, 9, 1, 2, 3])), ("pos", np.array([4.0, 1, 0.5, 9, 1, 2, 3]))):
            c[f"emath_{fn}_{label}"] = (
                lambda m, a, f=fn, h=h: getattr(np.emath, f)(placed(h, m, [a])),
                lambda f=fn, h=h: getattr(np.emath, f)(h),
            )
    c["emath_sqrt_int8"] = (
        lambda m, a: np.emath.sqrt(placed(np.array([1, 4, -9], np.int8), m, [a])),
        lambda: np.emath.sqrt(np.array([1, 4, -9], np.int8)),
    )
    c["emath_power"] = (
        lambda m, a: np.emath.power(placed(np.array([-2.0, 3, 4]), m, [a]), 2),
        lambda: np.emath.power(np.array([-2.0, 3, 4]), 2),
    )
    for label, key in (("int", -1), ("slice", slice(1, None, 3)), ("list", [0, -2, 11]), ("mask", MASK)):
        c[f"flat_read_{label}"] = (
            lambda m, a, key=key: placed(A12, m, [_first(a), _last(a)]).flat[key],
            lambda key=key: A12.flat[key],
        )
        c[f"flat_write_{label}"] = _flat_write(key, -7.0)
    c["flat_write_on_mesh"] = _flat_write(np.array([0, 11, 5]), np.array([1.5, 2.5, 3.5]), on_mesh=True)
    c["flat_write_mask_on_mesh"] = _flat_write(MASK, np.array([1.5, 2.5, 3.5]), on_mesh=True)
    for dims in ((2, 3), (7,), (0, 3)):
        c[f"indices_{dims}"] = (lambda m, a, d=dims: xp.indices(d, device=m), lambda d=dims: np.indices(d))
    c["indices_sparse"] = (
        lambda m, a: list(xp.indices((3, 1, 2), sparse=True, device=m)),
        lambda: list(np.indices((3, 1, 2), sparse=True)),
    )
    c["packbits_flat"] = (lambda m, a: xp.packbits(placed(BITS, m, [a])), lambda: np.packbits(BITS))
    c["packbits_axis0"] = (
        lambda m, a: xp.packbits(placed(BITS.reshape(7, 3), m, [a]), axis=0),
        lambda: np.packbits(BITS.reshape(7, 3), axis=0),
    )
    c["packbits_little"] = (
        lambda m, a: xp.packbits(placed(BITS.reshape(3, 7), m, [None, a]), axis=1, bitorder="little"),
        lambda: np.packbits(BITS.reshape(3, 7), axis=1, bitorder="little"),
    )
    c["unpackbits"] = (lambda m, a: xp.unpackbits(placed(U8, m, [a])), lambda: np.unpackbits(U8))
    c["unpackbits_count"] = (
        lambda m, a: xp.unpackbits(placed(U8.reshape(3, 3), m, [a]), axis=1, count=-3),
        lambda: np.unpackbits(U8.reshape(3, 3), axis=1, count=-3),
    )
    c["linspace_0d"] = (
        lambda m, a: xp.linspace(xp.asarray(np.float64(1.0), device=m), xp.asarray(np.float64(2.0), device=m), 7),
        lambda: np.linspace(1.0, 2.0, 7),
    )
    c["linspace_0d_float32"] = (
        lambda m, a: xp.linspace(xp.asarray(np.float32(1.0), device=m), 3.0, 5, device=m),
        lambda: np.linspace(np.float32(1.0), 3.0, 5),
    )
    c["like"] = (
        _like,
        lambda: [
            np.array([[1, 2], [3, 4]]),
            np.asanyarray([1.5, 2.5]),
            np.fromfunction(lambda i, j: i * 10 + j, (3, 2)),
            np.array(5, ndmin=2),
            np.fromiter(range(5), float),
        ],
    )
    for f in ("cumsum", "cumprod"):
        c[f"scan_{f}"] = (
            lambda m, a, f=f: getattr(np, f)(placed(HS, m, [a]), axis=0),
            lambda f=f: getattr(np, f)(HS, 0),
        )
    for uf, h in (("maximum", HS), ("fmin", HS), ("logical_or", HS), ("bitwise_xor", np.arange(20).reshape(5, 4))):
        c[f"scan_{uf}"] = (
            lambda m, a, uf=uf, h=h: getattr(np, uf).accumulate(placed(h, m, [a]), axis=0),
            lambda uf=uf, h=h: getattr(np, uf).accumulate(h, axis=0),
        )
    hc = np.array([1 + 1j, np.inf + 0j, 2 - 1j])
    c["scan_cumprod_complex_empty_block"] = (lambda m, a: np.cumprod(placed(hc, m, [a])), lambda: np.cumprod(hc))
    c["scan_cumulative_sum_initial"] = (
        lambda m, a: xp.cumulative_sum(placed(np.arange(2.0), m, [a]), include_initial=True),
        lambda: np.array([0.0, 0.0, 1.0]),
    )
    c["scan_named"] = (
        lambda m, a: sa.cumsum(sa.asarray(HS, dims=("i", "j"), mesh=m, layout={"i": a}), "i"),
        lambda: np.cumsum(HS, axis=0),
    )
    return c


CASES = _cases()


def check(name: str, shape: dict) -> str | None:
    """Case ``name`` on the MPI mesh of ``shape`` against NumPy (values exactly) and the emulated mesh's log: None,
    or what is wrong (on this process)."""
    return check_case(name, CASES[name], shape)


if __name__ == "__main__":
    run_cases(CASES, check)
