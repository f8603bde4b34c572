"""Round 15's new features under MPI (``mpiexec -n 2`` and ``-n 4``) against NumPy and the emulated mesh.

``np.<ufunc>.reduceat`` (one alltoallv of boundary partials), ``np.<ufunc>.at`` (pairs applied in key order on the
owner), a pending sum meeting an infinity or a zero divisor (``core.common.holds_anywhere``: one host reduction every
process enters), ``np.emath`` (one replicated bool read), ``x.flat`` reads and writes, ``xp.indices``,
``xp.packbits``/``unpackbits``, ``xp.linspace`` with 0-d endpoints, ``np.array(obj, like=x)``, the scans'
``block_scan``, and the failure exchange (``comm.header.fail_together``) for these ops. Every process builds the same
global input; each case runs on the MPI mesh and on the emulated mesh of the same shape in the same process, and is
compared with NumPy on the gathered value and with the emulated mesh's comm log (``tests/support/
mpi_fuzz15b_cases.py`` has the cases; run by itself under ``mpiexec -n 2`` by the test outside MPI). Blocks are uneven
and some empty. Every test runs under a hang guard (``GUARD_S``) and decides its checks together (``agree``).

Found here: ``np.power.at`` of a signed integer array with a negative exponent raised NumPy's raw ``ValueError`` on
the owner of the row only (the other processes went on: an MPI job with some processes failed, the array half
written); now ``ArgumentError`` on every process before anything moves. ``x.flat[mask] = v`` with a boolean mask on
the mesh raised ``DTypeError`` (NumPy's mask; a host mask of another shape was taken as positions).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from mpi_case_jobs import gathered, mesh_of, placed, quiet, run_on
from mpi_case_tests import agree, case_tests, in_step, inmpi
from mpi_case_tests import guard as guard  # (autouse: the hang guard)
from mpi_fuzz15b_cases import CASES, check
from mpi_fuzzing import SHAPES, mpi_fuzz
from mpi_fuzzing import world as _world
from spmd import WORLD

import shardarray as sa
import shardarray.array_api as xp


def _outcome(call) -> str:
    try:
        call()
    except Exception as e:  # (judged collectively)
        return type(e).__name__
    return "returned"


# =============================================================================================== 1. each case


#: inside an MPI job each case on the job's meshes; outside one, ``mpi_fuzz15b_cases.py`` as a job of 2 processes
test_each_feature_matches_numpy_and_the_emulated_comm_log, test_every_case_under_mpiexec_n_2 = case_tests(
    CASES, check, "mpi_fuzz15b_cases"
)


# =============================================================================================== 2. the fuzzer

KINDS = ("reduceat", "at", "scan", "flat", "packbits", "pending", "emath")
DTYPES = ("float64", "int64", "int8", "uint8", "bool")
AT_OPS = ("add", "multiply", "subtract", "divide", "maximum", "bitwise_or", "power", "fmin", "remainder")


def _host(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    v = rng.integers(-4, 5, shape)
    if dtype == "bool":
        return v > 0
    if np.dtype(dtype).kind == "u":
        v = np.abs(v)
    if dtype == "float64":
        return np.where(v == 4, np.inf, v).astype(dtype)
    return v.astype(dtype)


def _draw_case(data, axes: tuple[str, ...]):
    """``(run(mesh, axes), numpy())`` of a drawn op on a drawn array and layout, or None where it has no case."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    kind = data.draw(st.sampled_from(KINDS))
    shape = tuple(data.draw(st.sampled_from([0, 1, 2, 3, 5, 7])) for _ in range(data.draw(st.integers(1, 2))))
    dtype = data.draw(st.sampled_from(DTYPES))
    h = _host(rng, shape, dtype)
    lay = [None] * len(shape)
    for a in axes:
        k = data.draw(st.integers(-1, len(shape) - 1))
        if k >= 0:
            lay[k] = (lay[k] or ()) + (a,)
    ax = data.draw(st.integers(0, len(shape) - 1))
    if kind == "reduceat":
        op = getattr(
            np, data.draw(st.sampled_from(["add", "multiply", "maximum", "fmax", "logical_and", "bitwise_or"]))
        )
        idx = rng.integers(0, max(shape[ax], 1), data.draw(st.integers(0, 6)) if shape[ax] else 0)
        return (lambda m, a: op.reduceat(placed(h, m, lay), idx.tolist(), axis=ax)), (lambda: op.reduceat(h, idx, ax))
    if kind == "at":
        op = getattr(np, data.draw(st.sampled_from(AT_OPS)))
        if not shape[0]:
            return None
        ids = rng.integers(-shape[0], shape[0], data.draw(st.integers(0, 8)))
        v = _host(rng, ids.shape + shape[1:], dtype)
        if op.__name__ in ("divide", "remainder", "power") and dtype != "bool":
            v = np.abs(np.where(np.isinf(v), 1, v)).astype(dtype) + (op.__name__ != "power")
        on_mesh = data.draw(st.booleans())

        def run_at(m, a):
            x = placed(h, m, lay)
            op.at(x, ids, xp.asarray(v, device=m) if on_mesh else v)
            return x

        def want_at():
            w = h.copy()
            op.at(w, ids, v)
            return w

        return run_at, want_at
    if kind == "scan":
        name = data.draw(st.sampled_from(["cumsum", "cumprod", "maximum", "fmin", "logical_or"]))
        f = getattr(np, name) if name.startswith("cum") else getattr(np, name).accumulate
        return (lambda m, a: f(placed(h, m, lay), axis=ax)), (lambda: f(h, axis=ax))
    if kind == "flat":
        if not h.size:
            return None
        key = rng.integers(-h.size, h.size, data.draw(st.integers(0, 4))).tolist()
        if data.draw(st.booleans()):
            return (lambda m, a: placed(h, m, lay).flat[key]), (lambda: h.flat[key])

        def run_flat(m, a):
            x = placed(h, m, lay)
            x.flat[key] = h.flat[0]
            return x

        def want_flat():
            w = h.copy()
            w.flat[key] = h.flat[0]
            return w

        return run_flat, want_flat
    if kind == "packbits":
        hb = h != 0 if dtype == "float64" else h
        order = data.draw(st.sampled_from(["big", "little"]))
        return (lambda m, a: xp.packbits(placed(hb, m, lay), axis=ax, bitorder=order)), (
            lambda: np.packbits(hb, axis=ax, bitorder=order)
        )
    if kind == "pending":
        hx = _host(rng, (shape[0], 3), "float64")
        hx[np.isinf(hx)] = 0
        hy = _host(rng, (3,), "float64")
        div = data.draw(st.booleans())

        def run_pending(m, a):
            x = sa.asarray(hx, dims=("k", "j"), mesh=m, layout={"k": a})
            y = sa.asarray(hy, dims=("j",), mesh=m, layout={"j": lay[0]} if lay[0] else {})
            return x.sum("k") / y if div else x.sum("k") * y

        return run_pending, (lambda: hx.sum(0) / hy if div else hx.sum(0) * hy)
    fn = getattr(np.emath, data.draw(st.sampled_from(["sqrt", "log", "arccos", "log10"])))
    hh = h.astype(np.int8) if dtype == "bool" else h
    return (lambda m, a: fn(placed(hh, m, lay))), (lambda: fn(hh))


@inmpi
@mpi_fuzz(50, "FUZZ15B_EXAMPLES")
@given(st.sampled_from(SHAPES), st.data())
def test_fuzz_new_features_match_numpy_and_the_emulated_log(shape, data):
    """Drawn ops, shapes (empty and uneven blocks), dtypes and layouts: NumPy's value and dtype (its error where it
    raises one: the same typed error on every process), the emulated mesh's comm log. ``ufunc.at`` refusals the
    library documents (a result that does not cast back under ``same_kind``) are accepted as typed errors."""
    case = _draw_case(data, tuple(shape))
    if case is None:
        return
    fn, want = case
    log_e, _, err_e = run_on(mesh_of(shape, "emulated"), fn)
    log_m, got, err_m = run_on(mesh_of(shape, "mpi"), fn)
    try:
        expected, np_err = quiet(want), None
    except Exception as e:
        expected, np_err = None, e
    kinds = _world().allgather(err_m and err_m.split(":")[0])
    if len(set(kinds)) != 1:
        agree(f"the processes ended differently: {kinds}")
    if err_m or err_e:
        same = (err_e or "").split(":")[0] == (err_m or "").split(":")[0]
        typed = err_m is not None and err_m.split(":")[0] in dir(sa)
        documented = np_err is None and "same_kind" in (err_m or "")
        agree(None if same and typed and (np_err is not None or documented) else f"MPI {err_m}, emulated {err_e}")
        return
    agree(None if np_err is None else f"NumPy raised {np_err!r}; shardarray gave a result")
    if log_m != log_e:
        agree(f"comm log {log_m}, emulated {log_e}")
    g, w = np.asarray(got), np.asarray(expected)
    ok = g.dtype == w.dtype and g.shape == w.shape and np.allclose(g, w, rtol=1e-12, equal_nan=True)
    agree(None if ok else f"got {g!r:.300}, NumPy {w!r:.300}")


# =============================================================================================== 3. regressions


@pytest.mark.parametrize("on_mesh", [False, True])
def test_power_at_of_integers_to_negative_powers_is_refused_typed_before_anything_moves(on_mesh):
    """NumPy refuses integers to negative integer powers (ValueError): ``np.power.at`` raised NumPy's raw error out
    of the owner's block, and under MPI on that process only. Now ``ArgumentError`` everywhere, ``x`` unchanged."""
    mesh = mesh_of(SHAPES[0], "mpi") if WORLD > 1 else sa.Mesh({"row": 2, "col": 2})
    x = xp.asarray(sa.asarray(np.arange(1, 8), dims=("i",), mesh=mesh, layout={"i": mesh.axis_names}))
    v = np.array([2, -1, 3])
    said = _outcome(lambda: np.power.at(x, [0, 6, 6], xp.asarray(v, device=mesh) if on_mesh else v))
    said2 = _outcome(lambda: np.power.at(x, [6], -2))
    if WORLD > 1:
        agree(None if (said, said2) == ("ArgumentError", "ArgumentError") else f"{said}, {said2}")
        agree(None if np.array_equal(x.numpy(), np.arange(1, 8)) else "written")
        in_step(mesh)
        return
    assert (said, said2) == ("ArgumentError", "ArgumentError")
    np.testing.assert_array_equal(x.numpy(), np.arange(1, 8))
    with pytest.raises(ValueError, match="negative integer powers"):
        np.power.at(x, [1], -1)
    np.power.at(x, [1, 2], np.array([2, 0]))  # (non-negative ones as NumPy)
    np.testing.assert_array_equal(x.numpy(), [1, 4, 1, 4, 5, 6, 7])
    y = xp.asarray(np.array([2.0, 4.0]), device=mesh)
    np.power.at(y, [1], -1)  # (floats: NumPy's reciprocal)
    np.testing.assert_array_equal(y.numpy(), [2.0, 0.25])


def test_flat_write_through_a_boolean_mask_on_the_mesh_as_numpy():
    """``x.flat[mask] = v`` with ``mask`` a boolean array on the mesh (a ``DTypeError`` before); a mask that is not
    1-D of ``x.size`` entries is NumPy's IndexError (a host one was taken as positions)."""
    mesh = mesh_of(SHAPES[0], "mpi") if WORLD > 1 else sa.Mesh({"row": 2, "col": 2})
    a = np.arange(12.0).reshape(3, 4)
    mask = np.arange(12) % 5 == 0
    x = placed(a, mesh, [tuple(mesh.axis_names), None])
    x.flat[xp.asarray(mask, device=mesh)] = xp.asarray(np.array([-7.0, -8.0, -9.0]), device=mesh)
    want = a.copy()
    want.flat[mask] = [-7.0, -8.0, -9.0]
    got = gathered(x)
    agree(None if np.array_equal(got, want) else f"{got} != {want}")
    for bad in (mask.reshape(3, 4), mask[:3], xp.asarray(mask.reshape(3, 4), device=mesh)):
        said = _outcome(lambda bad=bad: x.flat.__setitem__(bad, 1.0))
        agree(None if said == "OutOfBoundsError" else f"mask {np.shape(bad)}: {said}")
    agree(None if np.array_equal(gathered(x), want) else "a refused mask wrote")


# ================================================================ 4. failures and per-process arguments


@inmpi
def test_reduceat_failing_on_one_process_tells_the_others_and_stays_in_step():
    """``np.add.reduceat`` with an index out of range on process 1 only: process 1 raises its ``OutOfBoundsError``,
    every other process ``CommError`` naming it, at once (``fail_together``); then the job goes on in step."""
    mesh = mesh_of(SHAPES[-1], "mpi")
    x = placed(np.arange(8.0), mesh, [tuple(mesh.axis_names)])
    r = mesh.process_index
    said = _outcome(lambda: np.add.reduceat(x, [0, 9 if r == 1 else 3]).numpy())
    agree(None if said == ("OutOfBoundsError" if r == 1 else "CommError") else said)
    in_step(mesh)


@inmpi
@pytest.mark.parametrize("what", ["reduceat", "flat_read", "flat_write", "indices", "add_at", "multiply_at"])
def test_a_per_process_argument_of_a_new_op_raises_commerror_everywhere(what):
    """A host argument that differs between processes (a segment start, a flat position, a grid shape): every
    process raises ``CommError`` (the job's header), none waits or mixes blocks; then the job goes on in step."""
    mesh = mesh_of(SHAPES[-1], "mpi")
    r = mesh.process_index

    def call():
        x = placed(np.arange(8.0), mesh, [tuple(mesh.axis_names)])
        if what == "reduceat":
            np.add.reduceat(x, [0, 2 + r % 2]).numpy()
        elif what == "flat_read":
            x.flat[[r % 2, 3]].numpy()
        elif what == "flat_write":
            x.flat[[r % 2]] = 5.0
            x.numpy()
        elif what in ("add_at", "multiply_at"):  # (host ids that differ: each process wrote its own, silently)
            getattr(np, what[:-3]).at(x, [r % 2, 7], 2.0)
            x.numpy()
        else:
            xp.indices((2, 3) if r % 2 else (3, 2), device=mesh).numpy()

    said = _outcome(call)
    agree(None if said == "CommError" else said)
    in_step(mesh)


@pytest.mark.parametrize("kind", ["mul", "div"])
def test_a_pending_sum_meeting_a_bfloat16_infinity_or_zero_resolves_first(kind):
    """A float32 pending sum (rows split: one device's partial is 0) times a bfloat16 array holding ``inf``, or
    divided by one holding 0: ``inf`` as NumPy's (the dtype's kind is ``"V"``, so the check skipped it: NaN)."""
    mesh = mesh_of(SHAPES[0], "mpi") if WORLD > 1 else sa.Mesh({"row": 2, "col": 2})
    hx = np.array([[1.0, 2.0], [0.0, 0.0]], np.float32)
    hy = np.array([np.inf, 1.0] if kind == "mul" else [0.0, 1.0], np.float32)
    s = sa.asarray(hx, dims=("k", "j"), mesh=mesh, layout={"k": mesh.axis_names[0]}).sum("k")
    y = sa.asarray(hy, dims=("j",), mesh=mesh).astype("bfloat16")
    got = quiet(lambda: gathered(s * y if kind == "mul" else s / y))
    want = quiet(lambda: hx.sum(0) * hy if kind == "mul" else hx.sum(0) / hy)
    agree(None if got.dtype == want.dtype and np.array_equal(got, want) else f"{got} != {want}")
