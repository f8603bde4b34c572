"""``ufunc.at`` of every binary (and unary) ufunc and ``ufunc.reduceat`` of the reducible ones on positional arrays
(NumPy's TypeError before round 15), against NumPy on the gathered value on the test meshes (1, 2x2, 4, 2x2x2, 3x2)
with uneven and empty blocks, random layouts and dtypes: ``at`` unbuffered (every repeat applied, in key order for
the ops whose result depends on it: subtract, divide, power, float multiply), the library's same_kind rule for the
values; ``reduceat`` with repeated, unsorted and decreasing indices on a split axis, NumPy's dtypes and errors. The
traffic: ``reduceat`` along a split axis is one alltoallv of the partials held elsewhere (nothing for evenly
sized segments aligned with the blocks, a partial per block edge for the others), nothing along an unsplit one; the
meta backend logs what the data path does."""

import numpy as np
import pytest
from fuzzing import cached_mesh, cached_meshes, fuzz
from helpers import layouts
from hypothesis import given
from hypothesis import strategies as st

import shardarray as sa
import shardarray.array_api as xp
from shardarray.ops.indexing.id_writes import ordered

ENV = "FUZZ15_EXAMPLES"

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

REDUCEAT = ("add", "multiply", "maximum", "minimum", "fmax", "fmin", "logical_and", "logical_or", "logical_xor",
            "bitwise_and", "bitwise_or", "bitwise_xor")  # fmt: skip
#: (np.subtract.at is Array.__array_ufunc__'s add of -v, checked elsewhere)
AT = ("multiply", "divide", "power", "fmax", "fmin", "logical_or", "logical_xor", "bitwise_or",
      "bitwise_xor", "floor_divide", "remainder", "arctan2", "gcd", "less", "copysign")  # fmt: skip
DTYPES = ("float64", "float32", "int64", "int32", "int8", "uint8", "bool", "complex128")


def _host(rng, shape, dtype, low=-4):
    v = rng.integers(low, 5, shape)
    if dtype == "bool":
        return v > 0
    if np.dtype(dtype).kind == "u":
        v = np.abs(v)
    if np.dtype(dtype).kind == "c":
        return (v + 1j * rng.integers(-2, 3, shape)).astype(dtype)
    return v.astype(dtype)


def _placed(data, mesh, h):
    dims = tuple(f"d{i}" for i in range(h.ndim))
    lay = data.draw(layouts(mesh, dims))
    return xp.asarray(sa.asarray(h, dims=dims, mesh=mesh, layout=lay))


def _same(got, want):
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    if want.dtype.kind in "fc":
        np.testing.assert_allclose(got, want, rtol=1e-12 if want.dtype.itemsize >= 8 else 1e-5)
    else:
        np.testing.assert_array_equal(got, want)


# ------------------------------------------------------------------------------------------------ reduceat


@fuzz(50, ENV)
@given(cached_meshes(), st.data())
def test_fuzz_reduceat_matches_numpy(mesh, data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    shape = tuple(data.draw(st.sampled_from([0, 1, 3, 7, 10])) for _ in range(data.draw(st.integers(1, 3))))
    dtype = data.draw(st.sampled_from(DTYPES))
    op = getattr(np, data.draw(st.sampled_from(REDUCEAT)))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    n = shape[axis]
    idx = rng.integers(0, max(n, 1), data.draw(st.integers(0, 7) if n else st.just(0)))
    if n and data.draw(st.booleans()):
        idx = np.sort(idx)  # (the CSR case)
    if data.draw(st.integers(0, 9)) == 0:
        idx = np.append(idx, data.draw(st.sampled_from([-1, n])))  # (out of range: NumPy's IndexError)
    kw = {"dtype": data.draw(st.sampled_from([np.float64, np.int64]))} if data.draw(st.integers(0, 4)) == 0 else {}
    h = _host(rng, shape, dtype)
    x = _placed(data, mesh, h)
    given_idx = idx.tolist() if data.draw(st.booleans()) else xp.asarray(idx, device=mesh)
    try:
        want = op.reduceat(h, idx, axis=axis, **kw)
    except (TypeError, IndexError) as e:
        with pytest.raises(type(e)):
            op.reduceat(x, given_idx, axis=axis, **kw)
        return
    with sa.comm_log() as log:
        got = op.reduceat(x, given_idx, axis=axis, **kw)
    assert isinstance(got, xp.Array)
    _same(np.asarray(got), want)
    assert {r.op for r in log.records} <= {"alltoall"}, log.summary()  # (no gather: partials only)
    split = x.layout.get(x.dims[axis])
    if not split or mesh.axes_size(split) == 1:
        assert not log.records  # (an unsplit axis: local)
    elif log.records:  # each device sends at most a partial of every segment it touches, one per line
        line = int(np.prod([s for k, s in enumerate(shape) if k != axis % len(shape)]))
        assert log.records[0].elements <= max(len(idx), 1) * line


def test_reduceat_csr_rows_move_only_the_partials_at_block_edges():
    """Segments of equal lengths: each device sends at most its two edge partials per line (here one value)."""
    mesh = cached_mesh({"row": 2, "col": 2})
    v = np.arange(40.0)
    x = xp.asarray(sa.asarray(v, dims=("nnz",), mesh=mesh, layout={"nnz": ("row", "col")}))
    for step, most in ((5, 0), (4, 2)):
        indptr = np.arange(0, 41, step)
        with sa.comm_log() as log:
            got = np.add.reduceat(x, indptr[:-1])
        np.testing.assert_array_equal(np.asarray(got), np.add.reduceat(v, indptr[:-1]))
        assert [r.op for r in log.records] == ["alltoall"]
        assert log.records[0].elements <= most, log.summary()
        assert got.layout == x.layout


def test_reduceat_other_axes_split_move_nothing_and_decreasing_indices():
    mesh = cached_mesh({"row": 2, "col": 2})
    h = np.arange(35).reshape(5, 7) % 6
    x = xp.asarray(sa.asarray(h, dims=("a", "b"), mesh=mesh, layout={"b": ("row", "col")}))
    for op in (np.add, np.maximum, np.bitwise_or, np.logical_and):
        with sa.comm_log() as log:
            got = op.reduceat(x, [3, 1, 1, 4, 0], axis=0)
        np.testing.assert_array_equal(np.asarray(got), op.reduceat(h, [3, 1, 1, 4, 0], axis=0))
        assert not log.records
    out = xp.zeros((5, 2), dtype=xp.float64, device=mesh)
    np.multiply.reduceat(x, [2, 5], axis=1, out=out)
    np.testing.assert_array_equal(np.asarray(out), np.multiply.reduceat(h, [2, 5], axis=1).astype(float))


def test_reduceat_meta_logs_the_data_path_and_refuses_typed():
    data, meta = cached_mesh({"row": 2, "col": 2}), sa.Mesh({"row": 2, "col": 2}, backend="meta")
    logs = []
    for mesh in (data, meta):
        x = xp.asarray(sa.zeros(mesh, {"i": 9, "j": 3}, dtype="float32", layout={"i": "row", "j": "col"}))
        with sa.comm_log() as log:
            y = np.maximum.reduceat(x, [0, 4, 2, 8])
        assert y.shape == (4, 3) and y.dtype == np.float32 and y.layout == x.layout
        logs.append([(r.op, r.elements) for r in log.records])
    assert logs[0] == logs[1] and logs[0]
    x = xp.asarray(np.arange(6.0), device=data)
    with pytest.raises(IndexError, match="out of bounds"):
        np.add.reduceat(x, [0, 6])
    with pytest.raises(IndexError):
        np.add.reduceat(x, [-1])
    with pytest.raises(TypeError):
        np.add.reduceat(x, [0.5])
    with pytest.raises(TypeError):  # (no counterpart: NumPy's TypeError, nothing gathered)
        np.subtract.reduceat(x, [0, 2])
    with pytest.raises(TypeError):
        np.bitwise_or.reduceat(x, [0, 2])
    with pytest.raises(sa.TapeError):
        sa.grad(lambda v: sa.sum(np.add.reduceat(xp.asarray(v), [0, 2])))(x)


# ------------------------------------------------------------------------------------------------ at


@fuzz(50, ENV)
@given(cached_meshes(), st.data())
def test_fuzz_ufunc_at_matches_numpy(mesh, data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    dtype = data.draw(st.sampled_from(DTYPES))
    name = data.draw(st.sampled_from(AT if dtype != "complex128" else ("multiply", "divide", "power")))
    ufunc = getattr(np, name)
    shape = (data.draw(st.sampled_from([1, 3, 7])), data.draw(st.sampled_from([1, 2, 5])))[
        : data.draw(st.integers(1, 2))
    ]
    h = _host(rng, shape, dtype)
    low = 0 if name == "power" else 1 if name in ("divide", "floor_divide", "remainder", "gcd") else -4
    k = data.draw(st.integers(0, 9))
    ids = rng.integers(-shape[0], shape[0], k)  # (repeats, negative ids)
    if data.draw(st.booleans()):
        ids = ids.reshape(-1, 1) if k else ids  # (a 2-D key)
    scalar = data.draw(st.booleans())  # (a Python int: weak, NEP 50)
    vshape = () if scalar else data.draw(st.sampled_from([ids.shape + shape[1:], shape[1:], ()]))
    v = int(rng.integers(max(low, 1), 4)) if scalar else _host(rng, vshape, dtype, low)
    if dtype == "bool" and not scalar:
        v = v | (low > 0)
    want = h.copy()
    try:
        for operands in ((h.dtype, h.dtype), (h.dtype, int if scalar else h.dtype)):  # (the library's rule:
            if not np.can_cast(ufunc.resolve_dtypes((*operands, None))[-1], h.dtype, "same_kind"):  # x op= v's)
                raise TypeError("the result does not cast back under same_kind")
        if not np.can_cast(np.result_type(h.dtype, v), h.dtype, "same_kind"):
            raise TypeError("the value does not cast under same_kind")
        with np.errstate(all="ignore"):
            ufunc.at(want, ids, v)
    except (TypeError, ValueError):
        x = xp.asarray(h, device=mesh)
        with pytest.raises((TypeError, ValueError)):
            ufunc.at(x, ids, v)
        return
    x = _placed(data, mesh, h)
    key = xp.asarray(ids, device=mesh) if data.draw(st.booleans()) else ids
    value = v if scalar or not data.draw(st.booleans()) else xp.asarray(v, device=mesh)
    with sa.comm_log() as log:
        ufunc.at(x, key, value)
    got = np.asarray(x)
    assert got.dtype == want.dtype
    if want.dtype.kind in "fc" and name in ("arctan2", "power"):
        np.testing.assert_allclose(got, want, rtol=1e-6)  # (the backend's transcendental loops)
    else:
        np.testing.assert_array_equal(got, want)  # (same ops, same order: bit for bit)
    if not isinstance(key, xp.Array) and not isinstance(value, xp.Array):  # (split ones may be moved first)
        assert {r.op for r in log.records} <= {"alltoall"}, log.summary()


def test_at_applies_repeats_in_key_order_across_devices():
    """A row's pairs come from several devices (a 2-D key split along its second axis: they arrive column block by
    column block): the owner applies them in the
    key's row-major order, as NumPy (divide, power, copysign and float multiply depend on it)."""
    mesh = cached_mesh({"row": 2, "col": 2})
    ids = np.array([[2, 0, 2], [2, 1, 2], [0, 2, 1]])  # (row 2's pairs arrive as (0,0) (1,0) (2,1) (0,2) (1,2))
    vals = np.array([[3.0, 2.0, 0.5], [7.0, 1.5, 0.25], [4.0, -1.0, 1e16]])
    for name in ("divide", "power", "multiply", "copysign", "nextafter"):
        h = np.array([1e16, 3.0, 2.0, 5.0])
        want = h.copy()
        getattr(np, name).at(want, ids, vals)
        x = xp.asarray(sa.asarray(h, dims=("i",), mesh=mesh, layout={"i": "row"}))
        key = xp.asarray(sa.asarray(ids, dims=("a", "b"), mesh=mesh, layout={"b": "row"}))
        val = xp.asarray(sa.asarray(vals, dims=("a", "b"), mesh=mesh, layout={"b": "row"}))
        with sa.comm_log() as log:
            getattr(np, name).at(x, key, val)
        np.testing.assert_array_equal(np.asarray(x), want, err_msg=name)
        assert [r.op for r in log.records] == ["alltoall"] * 4, log.summary()  # counts, rows, positions, values
    assert ordered("multiply", np.float64) and not ordered("multiply", np.int32)


def test_unary_at_slices_and_masks_and_meta_log():
    mesh = cached_mesh({"row": 2, "col": 2})
    h = np.arange(-6, 6).reshape(4, 3)
    for call in (
        lambda a: np.negative.at(a, [1, 1, 2, 3]),
        lambda a: np.negative.at(a, (slice(0, 3), 1)),
        lambda a: np.multiply.at(a, np.array([True, False, True, True]), 3),
        lambda a: np.bitwise_xor.at(a, (2, slice(None)), [1, 2, 3]),
        lambda a: np.square.at(a, [0, 0]),
    ):
        want, x = h.copy(), xp.asarray(h, device=mesh)
        call(want)
        call(x)
        np.testing.assert_array_equal(np.asarray(x), want)
    logs = []
    for m in (mesh, sa.Mesh({"row": 2, "col": 2}, backend="meta")):
        x = xp.asarray(sa.zeros(m, {"i": 8, "j": 3}, dtype="float64", layout={"i": "row"}))
        with sa.comm_log() as log:
            np.divide.at(x, xp.asarray(np.array([1, 6, 6, 2]) if m is mesh else np.zeros(4, np.int64), device=m), 2.0)
        logs.append([r.op for r in log.records])
        assert x.shape == (8, 3)
    assert logs[0] == logs[1] == ["alltoall"] * 3  # counts, rows, positions (a scalar value does not travel)


def test_at_refusals_are_typed():
    mesh = cached_mesh({"row": 2})
    y = xp.asarray(np.arange(4), device=mesh)
    with pytest.raises(sa.DTypeError, match="same_kind"):
        np.divide.at(y, [0, 1], 2)  # (NumPy truncates every quotient)
    with pytest.raises(sa.DTypeError, match="same_kind"):
        np.multiply.at(y, [0], 2.5)
    with pytest.raises(sa.DTypeError, match="loop"):
        np.bitwise_or.at(xp.asarray(np.zeros(3), device=mesh), [0], 1.0)
    np.testing.assert_array_equal(np.asarray(y), np.arange(4))
