"""``np.maximum.at`` / ``np.minimum.at`` on positional arrays (NumPy's TypeError before round 14): unbuffered, every
repeat of an index combined, against NumPy on the gathered value on every test mesh with uneven and empty blocks;
integer-array keys (host or on the mesh, with slices beside them), boolean masks, ints and slices; NaN propagating
as ``np.maximum``'s; the dtypes CuPy's ``maximum.at`` lacks (float16, bfloat16, int8, bool) combined in a wider one;
the routed write's traffic (alltoallv, no gather) and the meta backend's log; complex values and floats into
integers refused with a typed error."""

import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import shardarray as sa
import shardarray.array_api as xp
from fuzzing import cached_meshes, fuzz

ENV = "FUZZ14_EXAMPLES"
DTYPES = ("float64", "float32", "float16", "bfloat16", "int64", "int8", "uint8", "uint64", "bool")


def _host(rng, shape, dtype):
    v = rng.integers(-6, 7, shape)
    if dtype == "bool":
        return v > 0
    if np.dtype(dtype).kind == "u":
        v = np.abs(v)
    out = v.astype(dtype)
    if np.dtype(dtype).kind == "f" and out.size and rng.random() < 0.3:
        out.flat[rng.integers(0, out.size)] = np.nan
    return out


@fuzz(40, ENV)
@given(cached_meshes(), st.data())
def test_fuzz_maximum_and_minimum_at_match_numpy(mesh, data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    dtype = data.draw(st.sampled_from(DTYPES))
    shape = (data.draw(st.sampled_from([0, 1, 3, 7])), data.draw(st.sampled_from([1, 2, 5])))
    ufunc = data.draw(st.sampled_from([np.maximum, np.minimum]))
    h = _host(rng, shape, dtype)
    kind = data.draw(st.sampled_from(["ids", "ids_on_mesh", "ids_slice", "mask", "int_slice"]))
    n = data.draw(st.integers(0, 9))
    if kind == "mask":
        key = rng.random(shape[0]) < 0.5
        k = int(key.sum())
        vshape = data.draw(st.sampled_from([(k, shape[1]), (shape[1],), ()]))
    elif kind == "int_slice":
        if not shape[0]:
            return
        key = (int(rng.integers(0, shape[0])), slice(0, shape[1], 2))
        vshape = data.draw(st.sampled_from([(len(range(0, shape[1], 2)),), ()]))
    else:
        if not shape[0]:
            return
        ids = rng.integers(-shape[0], shape[0], n)  # (repeats, negative ids)
        key = (ids, slice(None, None, -1)) if kind == "ids_slice" else ids
        vshape = data.draw(st.sampled_from([(n, shape[1]), (shape[1],), ()]))
    v = _host(rng, vshape, dtype)
    want = h.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ufunc.at(want, key, v)
    x = xp.asarray(h, device=mesh)
    mkey = xp.asarray(key, device=mesh) if kind == "ids_on_mesh" else key
    value = v if not vshape or data.draw(st.booleans()) else xp.asarray(v, device=mesh)
    ufunc.at(x, mkey, value)
    got = np.asarray(x)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_repeats_combine_and_nan_propagates_as_numpy():
    mesh = sa.Mesh({"row": 2, "col": 2})
    h = np.array([0.0, 5.0, 1.0, -2.0, 3.0, 4.0])
    ids = np.array([1, 1, 3, 3, 3, 0])
    v = np.array([7.0, 2.0, -1.0, np.nan, 9.0, -5.0])
    for ufunc in (np.maximum, np.minimum):
        want = h.copy()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            ufunc.at(want, ids, v)
        x = xp.asarray(h, device=mesh)
        with sa.comm_log() as log:
            ufunc.at(x, xp.asarray(ids, device=mesh), xp.asarray(v, device=mesh))
        np.testing.assert_array_equal(np.asarray(x), want)
        assert {r.op for r in log.records} == {"alltoall"}, log.summary()  # (routed: no gather)


def test_meta_logs_the_routed_write():
    """The meta backend runs the same alltoallvs (modeled counts) and leaves the shapes."""
    data, meta = sa.Mesh({"row": 2, "col": 2}), sa.Mesh({"row": 2, "col": 2}, backend="meta")
    ops = []
    for mesh in (data, meta):
        x = xp.zeros((8, 3), device=mesh)
        with sa.comm_log() as log:
            ids = np.array([1, 6, 6, 2]) if mesh is data else np.zeros(4, np.int64)
            np.maximum.at(x, xp.asarray(ids, device=mesh), 1.0)
        ops.append([r.op for r in log.records])
        assert x.shape == (8, 3)
    assert ops[0] == ops[1]


def test_complex_values_and_floats_into_integers_are_refused():
    mesh = sa.Mesh({"row": 2})
    x = xp.asarray(np.zeros(4, complex), device=mesh)
    with pytest.raises(sa.DTypeError, match="complex"):
        np.maximum.at(x, [0, 1], 1.0)
    y = xp.asarray(np.zeros(4, np.int32), device=mesh)
    with pytest.raises(sa.DTypeError, match="same_kind"):
        np.minimum.at(y, [0, 1], 0.5)
    np.testing.assert_array_equal(np.asarray(y), np.zeros(4, np.int32))
