"""A differential fuzz under MPI (``sa.Mesh(..., comm="mpi")``, one device per process) of fuzzing round 11's new
collective paths, against NumPy on the gathered values.

Covered: elementwise ops choosing their layout by traffic (``core/leader.py``: operands splitting different dims
over one mesh axis, size-skewed, two and three operands, ``where``, in-place ``x += y`` on positional arrays);
``take``/``take_along_dim`` with few split ids (looked up, then one reduce-scatter back) and with many (routed
alltoallv, reached by lowering ``take.ROUTE_MIN_IDS``); ``repeat`` of a split axis (one alltoallv) and its
gradient; ``tile`` of a short split axis and by 0; ``x.to_device(other_mesh)``, ``sa.reshard`` and
``xp.astype(x, dtype, device=other)`` between meshes of other shapes over the same processes; ``np.intersect1d``/
``union1d``/``setdiff1d``/``setxor1d``, ``sa.top_k(x, 0)``, complex ``var`` and ``nanargmax``; and
``sa.checkpoint.save(run, tree, keep=N)`` (every process returns the same committed path) with the newest loaded.

Each case checks, on every process: values, dtype and shape against NumPy; that every process got the same answer
(a digest of the gathered result) and the same comm log (op, axes, group size, elements, bytes of each record);
and that an error is the same typed ``sa`` exception on EVERY process. Every process draws the same hypothesis
examples and every check is decided collectively (``tests/support/mpi_fuzzing.py``), so all processes fail
together; a hang ends the job after ``mpi_fuzzing.HANG_S`` seconds with every thread's traceback.

Also: pending sums as operands (a matmul's split contraction), matmul/einsum with conflicting layouts (the leader
of ``matmul/allreduce.py``), named operands over other dims (an outer result), out-of-range ids and negative
repeat counts (the same typed error on every process), float16/bool/int8 data, and a save whose planned number
another save of the run took first (``commit_in_run``: every process returns the number it got).

No process ever ended otherwise than the others, hung or logged other collectives; no value differed from
NumPy's. The refusals the fuzz meets are deliberate and documented: complex to real ``astype`` and in-place ops
that would promote ``x`` (array API), 2-D ids in ``xp.take`` (array API; ``np.take`` takes them), complex
arrays in checkpoints (safetensors), and complex ``intersect1d``/``setdiff1d``/``setxor1d`` (``isin`` refuses a
complex array test set; accepted here as a ``DTypeError`` until that is lifted).

``FUZZ11_EXAMPLES=<n>`` runs every fuzzer with ``n`` examples. Outside an MPI job of 2 or more processes the file
is skipped.
"""

from __future__ import annotations

import itertools
import shutil
import warnings

import numpy as np
import pytest
from helpers import layouts
from hypothesis import given
from hypothesis import strategies as st
from mpi_fuzzing import SHAPES, agree, meshes, mpi_fuzz, no_hang  # noqa: F401  (no_hang: an autouse fixture)
from mpi_fuzzing import digest as _digest
from mpi_fuzzing import gathered as _gathered
from mpi_fuzzing import mpi_mesh as _mesh
from mpi_fuzzing import quiet as _quiet
from mpi_fuzzing import world as _world
from spmd import WORLD

import shardarray as sa
import shardarray.array_api as xp
from shardarray.array import as_kind
from shardarray.checkpoint import commit
from shardarray.ops.indexing import take as take_mod
from shardarray.ops.indexing.route import GATHER_WARN_BYTES

pytestmark = [
    pytest.mark.skipif(WORLD < 2, reason="needs an MPI job of 2 or more processes (mpiexec -n 4, see .ci/run)"),
    pytest.mark.filterwarnings("ignore::RuntimeWarning", "ignore::UserWarning"),
]

#: meshes of the job's size with other shapes or axis names (reshard targets): the same processes
OTHERS = [{"other": WORLD}, *([{"col": 2, "row": 2}, {"p": 2, "q": 2}] if WORLD == 4 else [])]
LONG = (0, 1, 2, 3, 5, 7, 13)  # (split axes: uneven blocks, processes holding nothing)


def fuzz(n: int):
    """A fuzzer's settings: ``n`` examples (``FUZZ11_EXAMPLES`` overrides), the same on every process."""
    return mpi_fuzz(n, "FUZZ11_EXAMPLES")


def _pos(a: np.ndarray, mesh: sa.Mesh, lay: dict, prefix: str = "dim") -> xp.Array:
    """``a`` on ``mesh`` as a positional array, ``lay`` its layout (by dim index); size-1 dims stay whole."""
    dims = tuple(f"{prefix}{k}" for k in range(a.ndim))
    lay = {dims[k]: v for k, v in lay.items() if a.shape[k] > 1}
    return as_kind(sa.asarray(a, dims=dims, mesh=mesh, layout=lay), xp.Array)


@st.composite
def _layout(draw, mesh: sa.Mesh, ndim: int) -> dict:
    """A random legal layout by dim index."""
    lay = draw(layouts(mesh, tuple(range(ndim))))
    return lay


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


# --------------------------------------------------------------------------------------------- checks


def _same(g, e) -> None:
    g, e = np.asarray(g), np.asarray(e)
    assert g.shape == e.shape, f"shape {g.shape}, NumPy {e.shape}"
    assert g.dtype == e.dtype, f"dtype {g.dtype}, NumPy {e.dtype}"
    np.testing.assert_allclose(g, e, rtol=1e-5 if g.dtype.kind in "fc" else 0, atol=1e-6 if g.dtype.kind in "fc" else 0)


def _records(log) -> list:
    return [(r.op, r.axes, r.group_size, r.elements, r.bytes) for r in log.records]


def run(np_call, sa_call, compare=None, label="", check=None, raises=()):
    """NumPy's ``np_call()`` against ``sa_call()`` on every process of the job.

    Every process must end the same way: the same result (digest of the gathered values), the same comm log, or
    the same typed ``sa`` error where NumPy raises too (or one of ``raises``: a deliberate refusal).
    ``compare(values, expected)`` replaces the comparison; ``check(records)`` returns a message on a comm log it
    refuses.
    """
    try:
        expected, np_error = _quiet(np_call), None
    except Exception as e:
        expected, np_error = None, e
    with warnings.catch_warnings(), np.errstate(all="ignore"), sa.comm_log() as log:
        warnings.simplefilter("ignore")
        warnings.simplefilter("error", sa.GatherWarning)
        try:
            got, error = sa_call(), None
        except Exception as e:  # (judged below, collectively)
            got, error = None, e
    kind = None if error is None else f"{type(error).__module__}.{type(error).__name__}"
    kinds = _world().allgather(kind)
    if len(set(kinds)) != 1:
        agree(label + f"ended as {kind}: {error!r:.300}; the processes ended as {kinds}")
    if error is not None:
        if not isinstance(error, sa.ShardArrayError):
            agree(label + f"raised a raw {kind}: {error!r:.300}")
        if np_error is None and not isinstance(error, raises):
            agree(label + f"NumPy gave a result; shardarray raised {kind}: {error!r:.300}")
        return None
    if np_error is not None:
        agree(label + f"NumPy raised {type(np_error).__name__}: {np_error}; shardarray gave a result")
    records = _records(log)
    logs = _world().allgather(_digest([repr(records)]))
    values = _quiet(lambda: _gathered(got))
    digests = _world().allgather(_digest(values))
    message = None
    if len(set(logs)) != 1:
        message = f"the processes logged different collectives (this one: {records})"
    elif len(set(digests)) != 1:
        message = "the processes got different results"
    elif check is not None:
        message = check(records)
    if message is None:
        try:
            if compare is not None:
                compare(values, expected)
            elif isinstance(expected, tuple):
                assert isinstance(values, tuple) and len(values) == len(expected), "not NumPy's tuple"
                for g, e in zip(values, expected):
                    _same(g, e)
            else:
                _same(values, expected)
        except AssertionError as e:
            message = str(e)[:2000]
    agree(None if message is None else label + message)
    return got


def _no_allgather(records) -> str | None:
    big = [r for r in records if r[0] == "allgather"]
    return f"allgathered: {big}" if big else None


def _no_big_allgather(records) -> str | None:
    """No allgather past the size the library gathers silently (``route.GATHER_WARN_BYTES``): ``repeat`` by an array
    of counts scans the counts (one total per device) and searches the scan, whose small sorted arrays are
    broadcast whole (round 16: it read the counts to the host before)."""
    big = [r for r in records if r[0] == "allgather" and r[4] > GATHER_WARN_BYTES]
    return f"allgathered: {big}" if big else None


# =============================================================================================== 1. elementwise


def _pending(rng, mesh: sa.Mesh, shape: tuple, dtype, lay: dict) -> tuple[xp.Array, np.ndarray]:
    """A ``shape`` array pending a sum over some mesh axes (a matmul whose contraction is split over the axes
    ``lay`` leaves free), and its NumPy value."""
    free = tuple(a for a in mesh.axis_names if all(a not in v for v in lay.values()))
    rows, cols = _values(rng, (shape[0], 4), str(dtype)), _values(rng, (4, shape[1]), str(dtype))
    lr = {0: lay[0]} if 0 in lay else {}
    lc = {1: lay[1]} if 1 in lay else {}
    if free:
        lr[1] = lc[0] = free
    return _pos(rows, mesh, lr) @ _pos(cols, mesh, lc), rows @ cols


@fuzz(25)
@given(meshes(), st.data())
def test_fuzz_elementwise_conflicting_layouts(mesh, data):
    """Operands splitting different dims over one axis (and size-skewed ones: a short vector against a matrix),
    two or three of them, ``where``, and the in-place ``x += y`` (the result in ``x``'s layout)."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    shape = (data.draw(st.sampled_from(LONG)), data.draw(st.sampled_from(LONG)))
    axes = tuple(mesh.axis_names)
    n_ops = data.draw(st.integers(2, 3))
    arrays, xs = [], []
    for k in range(n_ops):
        skew = k > 0 and data.draw(st.integers(0, 3)) == 0
        shp = shape[1:] if skew else shape
        a = _values(rng, shp, data.draw(st.sampled_from(["float64", "float32", "int64"])))
        if data.draw(st.booleans()):  # a conflict: the first operand splits dim0 over the axes, others dim1
            lay = {0: axes} if k == 0 else {len(shp) - 1: axes}
        else:
            lay = data.draw(_layout(mesh, len(shp)))
        if len(shp) == 2 and a.dtype.kind == "f" and data.draw(st.integers(0, 3)) == 0:  # a pending sum over axes
            x, a = _pending(rng, mesh, shp, a.dtype, data.draw(_layout(mesh, 2)))
        else:
            x = _pos(a, mesh, lay)
        arrays.append(a)
        xs.append(x)
    op = data.draw(st.sampled_from(["add", "multiply", "subtract", "maximum", "where", "iadd"]))
    if op == "where":
        c = arrays[0] > 0
        cx = xs[0] > 0
        other = arrays[-1]
        run(lambda: np.where(c, arrays[1], other), lambda: xp.where(cx, xs[1], xs[-1]), label="where: ")
        run(lambda: np.where(c, arrays[1], other), lambda: np.where(cx, xs[1], xs[-1]), label="np.where: ")
    elif op == "iadd":
        iop = data.draw(st.sampled_from(["__iadd__", "__imul__", "__isub__"]))

        def want():  # (an in-place op that would promote x's dtype is refused, as the array API says)
            if np.result_type(arrays[0], arrays[1]) != arrays[0].dtype:
                raise TypeError("would change x's dtype")
            out = arrays[0].copy()
            out = getattr(out, iop)(arrays[1])  # (NumPy's same_kind cast; a broadcast x refused)
            return out

        def inplace():
            return getattr(xs[0], iop)(xs[1])

        lay = xs[0].layout
        got = run(want, inplace, label=f"x {iop}: ")
        if got is not None:
            agree(None if got.layout == lay else f"x {iop} y: layout {got.layout}, was {lay}")
    else:
        f = getattr(np, op)
        want = lambda: f(f(arrays[0], arrays[1]), arrays[2]) if n_ops == 3 else f(arrays[0], arrays[1])  # noqa: E731
        g = getattr(xp, op)
        run(want, lambda: g(g(xs[0], xs[1]), xs[2]) if n_ops == 3 else g(xs[0], xs[1]), label=f"{op}: ")
        if n_ops == 3 and op == "add":  # (one expression of three operands)
            run(want, lambda: xs[0] + xs[1] + xs[2], label="x + y + z: ")


@fuzz(20)
@given(meshes(), st.data())
def test_fuzz_named_elementwise_outer(mesh, data):
    """Named operands over other dims (``x{i}``, ``y{j}``, ``z{i, j}``: an outer result), splitting different
    dims over one axis, and the in-place ``x += y`` of named arrays (the result in ``x``'s layout)."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    sizes = {"i": data.draw(st.sampled_from(LONG)), "j": data.draw(st.sampled_from(LONG))}
    axes = tuple(mesh.axis_names)
    picks = data.draw(st.lists(st.sampled_from([("i",), ("j",), ("i", "j"), ("j", "i")]), min_size=2, max_size=3))
    arrays, xs = [], []
    for dims in picks:
        a = _values(rng, tuple(sizes[d] for d in dims), data.draw(st.sampled_from(["float64", "int64"])))
        lay = {data.draw(st.sampled_from(dims)): axes} if data.draw(st.booleans()) else data.draw(layouts(mesh, dims))
        lay = {d: v for d, v in lay.items() if sizes[d] > 1}
        arrays.append(np.einsum(f"{''.join(dims)}->{''.join(sorted(dims))}", a))  # (NumPy: dims in i, j order)
        xs.append(sa.asarray(a, dims=dims, mesh=mesh, layout=lay))

    def np_value(vals):
        if all(p == picks[0] for p in picks[: len(vals)]) and len(picks[0]) == 1:  # (1-D: no outer)
            full = list(vals)
        else:
            full = [
                v if v.ndim == 2 else (v[:, None] if picks[k] == ("i",) else v[None, :]) for k, v in enumerate(vals)
            ]
        out = full[0]
        for v in full[1:]:
            out = out + v
        return out

    def sa_value():
        out = xs[0]
        for v in xs[1:]:
            out = out + v
        return out.transpose("i", "j") if out.ndim == 2 else out

    want = np_value(arrays)
    run(lambda: want, sa_value, label=f"{picks}: ")
    if len(picks[0]) == 2 and np.result_type(arrays[0], arrays[1]) == arrays[0].dtype:
        x, lay = xs[0], xs[0].layout

        def inplace():
            y = x
            y += xs[1]
            return y.transpose("i", "j")

        got = run(lambda: np_value(arrays[:2]), inplace, label="named x += y: ")
        if got is not None:
            agree(None if x.layout == lay else f"named x += y: layout {x.layout}, was {lay}")


@fuzz(20)
@given(meshes(), st.data())
def test_fuzz_matmul_conflicting_layouts(mesh, data):
    """``x @ w`` and ``einsum`` whose operands split different dims over one axis (the leader chosen by traffic,
    ``matmul/allreduce.py``), a long contraction of small operands among them (a pending sum over the axis)."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    m, k, n = (data.draw(st.sampled_from(s)) for s in ((1, 2, 5), (1, 3, 13, 40), (1, 2, 7)))
    a = _values(rng, (m, k), data.draw(st.sampled_from(["float64", "int64"])))
    b = _values(rng, (k, n), data.draw(st.sampled_from(["float64", "float32"])))
    axes = tuple(mesh.axis_names)
    conflict = data.draw(st.sampled_from(["mn", "mk", "kn", "random"]))
    if conflict == "random":
        la, lb = data.draw(_layout(mesh, 2)), data.draw(_layout(mesh, 2))
    else:
        la = {0: axes} if conflict[0] == "m" else {1: axes}
        lb = {1: axes} if conflict[1] == "n" else {0: axes}
    x, w = _pos(a, mesh, la), _pos(b, mesh, lb)
    run(lambda: a @ b, lambda: x @ w, label=f"matmul {conflict}: ")
    run(lambda: np.einsum("ij,jk->ik", a, b), lambda: np.einsum("ij,jk->ik", x, w), label="einsum: ")
    run(lambda: (a @ b).sum(0), lambda: xp.sum(x @ w, axis=0), label="sum of matmul: ")


# =============================================================================================== 2. take


@fuzz(25)
@given(meshes(), st.data())
def test_fuzz_take_split_ids(mesh, data):
    """``take`` along a split axis by ids split over the same axes (few: looked up, then one reduce-scatter back;
    many: routed, ``ROUTE_MIN_IDS`` lowered) or replicated, positionally and by name; ``take_along_dim``."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    n = data.draw(st.sampled_from([1, 2, 3, 5, 13]))
    cols = data.draw(st.sampled_from([1, 2, 3]))
    a = _values(
        rng, (n, cols), data.draw(st.sampled_from(["float64", "int64", "complex64", "float16", "bool", "int8"]))
    )
    axes = tuple(mesh.axis_names)
    xlay = {0: axes} if data.draw(st.booleans()) else data.draw(_layout(mesh, 2))
    x = _pos(a, mesh, xlay)
    if a.dtype == np.float64 and data.draw(st.integers(0, 3)) == 0:  # a pending sum
        x, a = _pending(rng, mesh, a.shape, a.dtype, xlay)
    m = data.draw(st.sampled_from([0, 1, 3, 6, 17]))
    ishape = (m,) if data.draw(st.booleans()) else (m, 2)
    ids = rng.integers(-n, n, ishape) if data.draw(st.booleans()) else rng.integers(0, n, ishape)
    if ids.size and data.draw(st.integers(0, 5)) == 0:  # out of range on one device's block: every one raises
        ids.flat[rng.integers(ids.size)] = data.draw(st.sampled_from([n, -n - 1, n + 7]))
    ilay = {0: axes} if data.draw(st.booleans()) else data.draw(_layout(mesh, len(ishape)))
    ix = _pos(ids, mesh, ilay, prefix="q")
    routed = data.draw(st.booleans())
    kept, take_mod.ROUTE_MIN_IDS = take_mod.ROUTE_MIN_IDS, (1 if routed else take_mod.ROUTE_MIN_IDS)
    try:
        take = xp.take if ids.ndim == 1 else np.take  # (the array API's take: 1-D indices; NumPy's: any)
        run(lambda: np.take(a, ids, axis=0), lambda: take(x, ix, axis=0), label=f"take (routed {routed}): ")
        if m and ids.min() >= 0 and n:
            xn = as_kind(x, sa.ShardArray)
            idn = as_kind(ix, sa.ShardArray)
            run(lambda: np.take(a, ids, axis=0), lambda: sa.take(xn, idn, "dim0"), label="sa.take: ")
        # take_along_dim: ids of the same shape as x but for the dim taken along
        k = data.draw(st.sampled_from([1, 4]))
        along = rng.integers(0, max(n, 1), (k, cols)) if n else np.zeros((k, cols), np.int64)
        if data.draw(st.integers(0, 5)) == 0:
            along[-1, -1] = n + data.draw(st.sampled_from([0, 3]))
        alay = {0: axes} if data.draw(st.booleans()) else data.draw(_layout(mesh, 2))
        ax = _pos(along, mesh, alay)
        if n:
            run(
                lambda: np.take_along_axis(a, along, axis=0),
                lambda: xp.take_along_axis(x, ax, axis=0),
                label="take_along_axis: ",
            )
            xn, an = as_kind(x, sa.ShardArray), as_kind(ax, sa.ShardArray)
            run(
                lambda: np.take_along_axis(a, along, axis=0),
                lambda: sa.take_along_dim(xn, an, "dim0"),
                label="take_along_dim: ",
            )
    finally:
        take_mod.ROUTE_MIN_IDS = kept


# =============================================================================================== 3. repeat, tile


def _repeat_grad(a: np.ndarray, r, w: np.ndarray) -> np.ndarray:
    """NumPy's gradient of ``sum(repeat(a, r, axis=0) * w)``: each row's repeats of ``w`` summed."""
    src = np.repeat(np.arange(a.shape[0]), r)
    out = np.zeros(a.shape, np.float64)
    np.add.at(out, src, w)
    return out


@fuzz(25)
@given(meshes(), st.data())
def test_fuzz_repeat_tile_split(mesh, data):
    """``repeat`` along a split axis (int and array counts, zeros among them), its gradient; ``tile`` of a short
    split axis and by 0."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    n = data.draw(st.sampled_from(LONG))
    cols = data.draw(st.sampled_from([1, 2, 3]))
    a = _values(rng, (n, cols), data.draw(st.sampled_from(["float64", "int64", "float32", "float16", "bool", "uint8"])))
    axes = tuple(mesh.axis_names)
    lay = {0: axes} if data.draw(st.booleans()) else data.draw(_layout(mesh, 2))
    x = _pos(a, mesh, lay)
    if a.dtype.kind == "f" and data.draw(st.integers(0, 3)) == 0:  # a pending sum
        x, a = _pending(rng, mesh, a.shape, a.dtype, lay)
    if data.draw(st.booleans()):
        r = data.draw(st.sampled_from([0, 1, 2, 3]))
        rx = r
    else:
        r = rng.integers(0, 4, n)
        if n and data.draw(st.integers(0, 6)) == 0:  # a negative count: NumPy's ValueError, a typed one here
            r[-1] = -1
        rx = _pos(r, mesh, data.draw(_layout(mesh, 1)))
    run(lambda: np.repeat(a, r, axis=0), lambda: xp.repeat(x, rx, axis=0), label="repeat: ", check=_no_big_allgather)
    if isinstance(rx, int):  # (flattened first: NumPy's axis=None)
        run(lambda: np.repeat(a, r), lambda: xp.repeat(x, rx), label="repeat axis None: ")
    if a.dtype == np.float64:
        total = int(np.sum(np.broadcast_to(r, (n,))))
        if total < 0 or np.min(r, initial=0) < 0:
            return
        w = _values(rng, (total, cols), "float64")
        wx = _pos(w, mesh, data.draw(_layout(mesh, 2)))
        loss = lambda p: xp.sum(xp.repeat(p, rx, axis=0) * wx)  # noqa: E731
        run(lambda: _repeat_grad(a, r, w), lambda: sa.grad(loss)(x), label="grad of repeat: ")
    reps = data.draw(st.sampled_from([(0, 1), (2, 1), (3, 2), (4, 1), (5, 2), (1, 0), (0,), (2,), (2, 1, 1), (1, 4)]))
    run(lambda: np.tile(a, reps), lambda: xp.tile(x, reps), label=f"tile {reps}: ")


# =============================================================================================== 4. between meshes


def _cast(a: np.ndarray, dtype: str) -> np.ndarray:
    """NumPy's cast, but complex to real refused (the array API leaves it unspecified; ``xp.astype`` refuses it, a
    ``DTypeError`` naming ``sa.real``/``sa.abs``)."""
    if a.dtype.kind == "c" and np.dtype(dtype).kind != "c":
        raise TypeError("complex to real")
    return a.astype(dtype)


@fuzz(20)
@given(meshes(), st.data())
def test_fuzz_reshard_between_meshes(mesh, data):
    """``x.to_device(other)``, ``sa.reshard(x, other, layout)`` and ``xp.astype(x, dtype, device=other)``: a mesh
    of another shape (or axis names) over the same processes."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    shape = (data.draw(st.sampled_from(LONG)), data.draw(st.sampled_from([1, 2, 5])))
    a = _values(rng, shape, data.draw(st.sampled_from(["float64", "int32", "complex128", "bool", "float16", "int8"])))
    x = _pos(a, mesh, data.draw(_layout(mesh, 2)))
    if a.dtype.kind in "fc" and data.draw(st.booleans()):  # a pending sum over the mesh (a split contraction)
        ones = np.ones((3, shape[1]), a.dtype)
        rows = _values(rng, (shape[0], 3), "float64")
        a = rows @ ones
        x = _pos(rows, mesh, {1: tuple(mesh.axis_names)}) @ _pos(ones, mesh, {0: tuple(mesh.axis_names)})
    other = _mesh(data.draw(st.sampled_from([s for s in [*SHAPES, *OTHERS] if s != dict(mesh.shape)])))

    def on(y, target):
        if y.mesh is not target:
            raise AssertionError(f"on {y.mesh}, not {target}")
        return y

    run(lambda: a, lambda: on(x.to_device(other), other), label="to_device: ")
    lay = {k: v for k, v in data.draw(layouts(other, ("dim0", "dim1"))).items() if shape[int(k[-1])] > 1}
    run(lambda: a, lambda: on(sa.reshard(x, other, lay), other), label=f"reshard {lay}: ")
    dtype = data.draw(st.sampled_from(["float32", "int64", "complex64"]))
    run(lambda: _cast(a, dtype), lambda: on(xp.astype(x, dtype, device=other), other), label="astype(device=): ")
    y = sa.reshard(x, other, lay)
    run(lambda: a + a, lambda: x.to_device(other) + y, label="on the other mesh: ")
    back = sa.reshard(y, mesh)
    run(lambda: a + a, lambda: x + back, label="and back: ")


# ============================================================================================ 5. sets, top_k, complex


@fuzz(20)
@given(meshes(), st.data())
def test_fuzz_set_ops(mesh, data):
    """``np.intersect1d``/``union1d``/``setdiff1d``/``setxor1d`` of split arrays (duplicates, NaN, empty)."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    dtype = data.draw(st.sampled_from(["float64", "int64", "complex128"]))
    a = _values(rng, (data.draw(st.sampled_from(LONG)),), dtype)
    b = _values(rng, (data.draw(st.sampled_from(LONG)),), data.draw(st.sampled_from([dtype, "int32", "float32"])))
    if dtype != "int64" and a.size and data.draw(st.booleans()):
        a[0] = np.nan
    if b.size % 2 == 0 and b.size and data.draw(st.booleans()):  # (2-D: flattened, as NumPy)
        b = b.reshape(2, -1)
    ax, bx = (_pos(v, mesh, data.draw(_layout(mesh, v.ndim))) for v in (a, b))
    name = data.draw(st.sampled_from(["intersect1d", "union1d", "setdiff1d", "setxor1d"]))
    f = getattr(np, name)
    refused = ()  # (complex values too: isin of an array test set sorts and searches them as reals)
    run(lambda: f(a, b), lambda: f(ax, bx), label=f"{name}: ", raises=refused)
    if name in ("intersect1d", "setdiff1d", "setxor1d"):
        run(
            lambda: f(np.unique(a), np.unique(b), assume_unique=True),
            lambda: f(xp.unique_values(ax), xp.unique_values(bx), assume_unique=True),
            label=f"{name} assume_unique: ",
            raises=refused,
        )
    if name == "intersect1d" and data.draw(st.booleans()):
        run(
            lambda: f(a, b, return_indices=True),
            lambda: f(ax, bx, return_indices=True),
            label="intersect1d indices: ",
            raises=refused,
        )


@fuzz(20)
@given(meshes(), st.data())
def test_fuzz_top_k_var_nanargmax_complex(mesh, data):
    """``sa.top_k(x, 0)`` (empty, as PyTorch/JAX), complex ``var`` and ``nanargmax`` over split axes."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    shape = (data.draw(st.sampled_from(LONG)), data.draw(st.sampled_from([1, 3])))
    axes = tuple(mesh.axis_names)
    dtype = data.draw(st.sampled_from(["complex128", "complex64"]))
    a = _values(rng, shape, dtype)
    if a.size and data.draw(st.booleans()):
        a.flat[rng.integers(a.size)] = complex(np.nan, 1)
    if a.size and data.draw(st.integers(0, 4)) == 0:  # an all-NaN line: NumPy's ValueError, a typed one here
        a[:, 0] = complex(np.nan, 0)
    lay = {0: axes} if data.draw(st.booleans()) else data.draw(_layout(mesh, 2))
    x = _pos(a, mesh, lay)
    axis = data.draw(st.sampled_from([0, 1, None]))
    dim = "dim0" if axis is None else f"dim{axis}"
    empty = np.zeros(tuple(0 if d == (axis or 0) else s for d, s in enumerate(shape)), a.dtype)
    run(
        lambda: (np.moveaxis(empty, axis or 0, -1), np.zeros(np.moveaxis(empty, axis or 0, -1).shape, np.int64)),
        lambda: sa.top_k(x, 0, dim),
        compare=lambda v, e: [_same(np.asarray(g).reshape(w.shape), w) for g, w in zip(v, e)],
        label="top_k 0: ",
    )
    ddof = data.draw(st.sampled_from([0, 1]))
    run(lambda: np.var(a, axis=axis, ddof=ddof), lambda: xp.var(x, axis=axis, correction=ddof), label="var: ")
    run(lambda: np.var(a, axis=axis), lambda: np.var(x, axis=axis), label="np.var: ")
    if axis is not None or a.ndim == 1:
        run(lambda: np.nanargmax(a, axis=axis), lambda: np.nanargmax(x, axis=axis), label="nanargmax: ")
        run(lambda: np.nanargmin(a, axis=axis), lambda: np.nanargmin(x, axis=axis), label="nanargmin: ")


# =============================================================================================== 6. checkpoints


def test_checkpoint_keep_returns_one_path_and_loads_the_newest(shared_dir):
    """``sa.checkpoint.save(run, tree, keep=N)``: every process returns the same committed path (process 0's,
    broadcast), older ones pruned to ``N``; the newest loads back on another mesh."""
    mesh = _mesh(SHAPES[-1])
    axes = tuple(mesh.axis_names)
    run_dir = shared_dir / "run"
    seen = []
    for step in range(4):
        a = np.arange(7 * 3, dtype=np.float64).reshape(7, 3) + step
        x = _pos(a, mesh, {0: axes})
        path = sa.checkpoint.save(run_dir, {"x": x, "step": step}, keep=2)
        paths = _world().allgather(str(path))
        agree(None if len(set(paths)) == 1 else f"save {step} returned {paths}")
        seen.append(path)
    _world().Barrier()
    left = sorted(p.name for p in run_dir.iterdir() if p.name.startswith("ckpt-"))
    agree(None if left == sorted(p.name for p in seen[-2:]) else f"kept {left}, saved {[p.name for p in seen]}")
    other = _mesh(OTHERS[0])
    target = {"x": sa.zeros(other, {"dim0": 7, "dim1": 3}, "float64", {"dim0": tuple(other.axis_names)}), "step": 0}
    out = sa.checkpoint.load(run_dir, target)  # (a run directory: its newest checkpoint)
    want = np.arange(7 * 3, dtype=np.float64).reshape(7, 3) + 3
    message = None if out["step"] == 3 and np.array_equal(out["x"].numpy(), want) else f"loaded {out}"
    agree(message)


def test_checkpoint_keep_agrees_on_the_number_another_save_took(shared_dir, monkeypatch):
    """A save of the run committed the number this one planned (between ``next_in_run`` and the rename, on
    process 0): the checkpoint takes the next number and every process returns that path (not the planned one);
    loading the run reads it."""
    mesh = _mesh(SHAPES[0])
    run_dir = shared_dir / "raced"
    x = _pos(np.arange(10.0).reshape(5, 2), mesh, {0: tuple(mesh.axis_names)})
    first = sa.checkpoint.save(run_dir, {"x": x, "step": 0}, keep=3)
    planned = []
    real = commit.next_in_run

    def raced(run):  # (process 0 only: it alone plans and commits)
        p = real(run)
        shutil.copytree(first, p)  # another save's checkpoint, committed at once
        planned.append(p)
        return p

    monkeypatch.setattr(commit, "next_in_run", raced)
    got = sa.checkpoint.save(run_dir, {"x": x * 2, "step": 1}, keep=3)
    paths = _world().allgather(str(got))
    agree(None if len(set(paths)) == 1 else f"the processes returned {paths}")
    agree(None if not planned or got.name > planned[0].name else f"returned {got}, planned {planned}")
    out = sa.checkpoint.load(run_dir, {"x": sa.zeros(mesh, {"dim0": 5, "dim1": 2}, "float64"), "step": 0})
    want = np.arange(10.0).reshape(5, 2) * 2
    agree(None if out["step"] == 1 and np.array_equal(out["x"].numpy(), want) else f"loaded {out}")


_RUNS = itertools.count()


@fuzz(6)
@given(mesh=meshes(), data=st.data())
def test_fuzz_checkpoint_keep(shared_dir, mesh, data):
    """Saves of random arrays (split, pending, positional or named, other dtypes) into a run directory with a
    random ``keep``: every process returns the same path, the newest ``keep`` are left, and the run loads back
    (its newest) by mesh alone, on this mesh and another (positional arrays stay positional)."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    run_dir = shared_dir / f"run-{next(_RUNS)}"  # (a fresh run directory per example, the same on every process)
    keep = data.draw(st.integers(1, 3))
    saves = data.draw(st.integers(1, 4))
    paths, trees = [], []
    for step in range(saves):
        shape = (data.draw(st.sampled_from(LONG)), data.draw(st.sampled_from([1, 3])))
        a = _values(rng, shape, data.draw(st.sampled_from(["float64", "float32", "int64", "float16", "bool"])))
        x = _pos(a, mesh, data.draw(_layout(mesh, 2)))
        if a.dtype.kind == "f" and data.draw(st.booleans()):
            x, a = _pending(rng, mesh, shape, a.dtype, data.draw(_layout(mesh, 2)))
        named = data.draw(st.booleans())
        tree = {"x": as_kind(x, sa.ShardArray) if named else x, "step": step}
        got = sa.checkpoint.save(run_dir, tree, keep=keep)
        seen = _world().allgather(str(got))
        agree(None if len(set(seen)) == 1 else f"save {step} returned {seen}")
        paths.append(got)
        trees.append((a, named))
    _world().Barrier()
    left = sorted(p.name for p in run_dir.iterdir() if p.name.startswith("ckpt-"))
    agree(None if left == [p.name for p in paths[-keep:]] else f"left {left}, saved {[p.name for p in paths]}")
    a, named = trees[-1]
    out = sa.checkpoint.load(run_dir, mesh=mesh)
    x = out["x"]
    message = None
    if out["step"] != saves - 1 or x.positional == named or not np.array_equal(x.numpy(), a):
        message = f"loaded step {out['step']}, positional {x.positional}, {x.numpy()!r} for {a!r}"
    agree(message)
    other = _mesh(OTHERS[0])
    out = sa.checkpoint.load(run_dir, mesh=other)
    agree(None if out["x"].mesh is other and np.array_equal(out["x"].numpy(), a) else f"onto {other}: {out}")
