"""Round 16 follow-ups found by SciPy's own tests (``rankdata``, ``differentiate``): ``repeat`` and two NumPy names.

* ``xp.repeat(x, counts)`` with an Array ``counts`` read the counts to the host (twice, ``np.asarray``, no
  ``sa.GatherWarning``) and built the output's index vector there; it now stays distributed (a scan of the
  counts, two scalar allreduces, a routed ``searchsorted`` and a routed ``take``).
* ``xp.repeat(xp.asarray([2.0]), 40000)`` on a split axis moved 40000 one-element strided segments (about 0.6 s of
  CPU, the owner of the entry sending almost the whole result); each device now fetches the few input entries
  covering its output block (``repeat_fetch``) and repeats them locally (about 1 ms).
* ``xp.logspace`` (NumPy's extension) and ``xp.float16`` (NumPy's half dtype) were missing from the namespace.

Values are compared with NumPy on the gathered result, on the test meshes (1, 2x2, 4, 2x2x2, 3x2) with random
layouts, uneven and empty blocks; gradients against central differences.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from fuzzing import cached_mesh, cached_meshes, fuzz
from gradcheck import check_grad
from helpers import layouts
from hypothesis import given
from hypothesis import strategies as st

import shardarray as sa
import shardarray.array_api as xp
from shardarray.array import as_kind
from shardarray.layout import block_bounds

ENV = "FUZZ16_EXAMPLES"


def _largest_block(x: sa.ShardArray) -> int:
    return max(math.prod(b - a for a, b in dev) for dev in block_bounds(x.mesh, x.spec))


def _received(r) -> int:
    if r.op == "allgather":
        return (r.group_size - 1) * r.elements
    return r.elements


def _traced(fn):
    """``(fn(), records, host_reads)``: its collectives, and the arrays of more than one element read on the host
    (``ShardArray.__array__``) or gathered with a ``sa.GatherWarning``."""
    reads = []
    original = sa.ShardArray.__array__

    def spy(self, *args, **kwargs):
        if self.size > 1:
            reads.append(self.shape)
        return original(self, *args, **kwargs)

    sa.ShardArray.__array__ = spy
    try:
        with warnings.catch_warnings(record=True) as caught, sa.comm_log() as log:
            warnings.simplefilter("always", sa.GatherWarning)
            out = fn()
    finally:
        sa.ShardArray.__array__ = original
    reads += [str(w.message) for w in caught if issubclass(w.category, sa.GatherWarning)]
    return out, [r for r in log.records if r.group_size > 1], reads


@st.composite
def _repeat_cases(draw):
    mesh = draw(cached_meshes())
    n, m = draw(st.integers(0, 7)), draw(st.integers(1, 3))
    layout = draw(layouts(mesh, ("i", "j")))
    r = draw(st.sampled_from([0, 1, 2, 3, 5, 8, 13, 40]))
    return mesh, n, m, layout, r


@fuzz(40, ENV)
@given(_repeat_cases())
def test_repeat_by_an_integer_matches_numpy_and_moves_at_most_a_block(case):
    mesh, n, m, layout, r = case
    a = np.arange(n * m, dtype=np.float64).reshape(n, m)
    x = sa.asarray(a, dims=("i", "j"), mesh=mesh, layout=layout)
    y, records, reads = _traced(lambda: sa.repeat(x, r, "i"))
    np.testing.assert_array_equal(y.numpy(), np.repeat(a, r, axis=0))
    assert y.layout == x.layout and not reads
    cap = 2 * max(_largest_block(x), _largest_block(y)) + 8
    assert all(_received(rec) <= cap for rec in records), (cap, records)


@st.composite
def _count_cases(draw):
    mesh = draw(cached_meshes())
    n, m = draw(st.integers(0, 7)), draw(st.integers(1, 3))
    axis = draw(st.sampled_from([0, 1]))
    layout = draw(layouts(mesh, ("dim0", "dim1")))
    k = (n, m)[axis]
    counts = np.asarray(draw(st.lists(st.integers(0, 4), min_size=k, max_size=k)), dtype=np.int64)
    clayout = draw(layouts(mesh, ("dim0",)))
    return mesh, n, m, axis, layout, counts, clayout


@fuzz(40, ENV)
@given(_count_cases())
def test_repeat_by_an_array_of_counts_matches_numpy_with_no_host_read(case):
    mesh, n, m, axis, layout, counts, clayout = case
    a = np.arange(n * m, dtype=np.float64).reshape(n, m) - 3.5
    x = as_kind(sa.asarray(a, dims=("dim0", "dim1"), mesh=mesh, layout=layout), xp.Array)
    c = as_kind(sa.asarray(counts, dims=("dim0",), mesh=mesh, layout=clayout), xp.Array)
    y, records, reads = _traced(lambda: xp.repeat(x, c, axis=axis))
    np.testing.assert_array_equal(y.numpy(), np.repeat(a, counts, axis=axis))
    assert not reads, reads
    cap = 4 * max(_largest_block(x), _largest_block(y), _largest_block(c)) + 16
    assert all(_received(rec) <= cap for rec in records), (cap, records)


def test_repeat_by_counts_broadcasts_one_count_and_refuses_bad_counts():
    mesh = cached_mesh({"row": 2, "col": 2})
    with sa.default_mesh(mesh):
        a = np.arange(6.0).reshape(3, 2)
        x = xp.asarray(a)
        np.testing.assert_array_equal(xp.repeat(x, xp.asarray([2]), axis=0).numpy(), np.repeat(a, [2], axis=0))
        np.testing.assert_array_equal(xp.repeat(x, xp.asarray([0, 0, 0]), axis=0).numpy(), np.repeat(a, [0, 0, 0], 0))
        np.testing.assert_array_equal(
            xp.repeat(x, xp.asarray([1, 0, 2, 0, 1, 3])).numpy(), np.repeat(a, [1, 0, 2, 0, 1, 3])
        )
        with pytest.raises(sa.ArgumentError, match="-1"):
            xp.repeat(x, xp.asarray([1, -1, 2]), axis=0)
        with pytest.raises(sa.DTypeError, match="integers"):
            xp.repeat(x, xp.asarray([1.0, 2.0, 0.0]), axis=0)
        with pytest.raises(sa.DimensionError, match="one per element"):
            xp.repeat(x, xp.asarray([1, 2]), axis=0)


def test_repeat_many_times_fetches_the_covering_entries_only():
    """Each device receives the one entry its output block repeats, not its block (the old move sent 40000
    one-element segments: 0.6 s of CPU, the owner sending 3/4 of the result); values as NumPy's."""
    mesh = cached_mesh({"row": 2, "col": 2})
    x = sa.asarray(np.array([2.0]), dims=("i",), mesh=mesh, layout={"i": "row"})
    y, records, _ = _traced(lambda: sa.repeat(x, 40000, "i"))
    np.testing.assert_array_equal(y.numpy(), np.repeat([2.0], 40000))
    assert y.layout == {"i": ("row",)}
    assert records and all(_received(r) <= 2 for r in records), records
    z = sa.asarray(np.arange(7.0), dims=("i",), mesh=cached_mesh({"p": 3, "q": 2}), layout={"i": ("q", "p")})
    np.testing.assert_array_equal(sa.repeat(z, 1001, "i").numpy(), np.repeat(np.arange(7.0), 1001))


@pytest.mark.parametrize("shape", [{"d": 1}, {"row": 2, "col": 2}, {"dep": 2, "row": 2, "col": 2}])
def test_gradients_of_repeat_by_many_and_by_counts(shape):
    mesh = cached_mesh(shape)
    lay = {"a": mesh.axis_names[-1]} if len(shape) > 1 else {}
    rng = np.random.default_rng(0)
    x = sa.asarray(rng.normal(size=(5, 3)), dims=("a", "b"), mesh=mesh, layout=lay)
    w = sa.asarray(rng.normal(size=(45, 3)), dims=("a", "b"), mesh=mesh, layout=lay)
    check_grad(lambda p: sa.sum(sa.repeat(p, 9, "a") * w), x, rtol=1e-5, atol=1e-7)
    counts = as_kind(
        sa.asarray(np.array([2, 0, 3, 1, 4]), dims=("c",), mesh=mesh, layout=lay and {"c": lay["a"]}), xp.Array
    )
    v = xp.asarray(rng.normal(size=(10, 3)), device=mesh)

    def loss(p):
        y = xp.repeat(as_kind(p, xp.Array), counts, axis=0)
        return sa.sum(as_kind(y, sa.ShardArray) * as_kind(v, sa.ShardArray).rename({"dim0": "a", "dim1": "b"}))

    check_grad(loss, x, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize(
    "args,kwargs",
    [
        ((0, 2), {}),
        ((np.float32(0), np.float32(1), 3), {}),
        ((0, 3, 4), {"dtype": np.int64}),
        ((0, 1, 3), {"base": 2}),
        ((0, 2, 3), {"base": np.float32(2)}),
        ((-1, 1.5, 7), {"endpoint": False}),
        ((1, 1, 0), {}),
        ((0, 1, 5), {"axis": -1}),
        ((0.5, -2, 9), {"base": 3.5, "dtype": np.float32}),
    ],
)
def test_logspace_matches_numpy(args, kwargs):
    for shape in ({"d": 1}, {"row": 2, "col": 2}, {"p": 3, "q": 2}):
        y = xp.logspace(*args, **kwargs, device=cached_mesh(shape))
        want = np.logspace(*args, **kwargs)
        assert y.dtype == want.dtype and y.shape == want.shape
        np.testing.assert_array_equal(y.numpy(), want)


def test_logspace_takes_0d_arrays_and_refuses_bad_axes():
    with sa.default_mesh(cached_mesh({"row": 2, "col": 2})):
        y = xp.logspace(xp.asarray(0.0), xp.asarray(2.0), 5, base=xp.asarray(2.0))
        np.testing.assert_array_equal(y.numpy(), np.logspace(0.0, 2.0, 5, base=2.0))
        with pytest.raises(sa.OutOfBoundsError, match="axis 1"):
            xp.logspace(0, 1, 3, axis=1)
        with pytest.raises(sa.DimensionError, match="base"):
            xp.logspace(0, 1, 3, base=xp.asarray([2.0, 3.0]))


def test_float16_is_a_real_floating_extension_dtype():
    assert xp.float16 is np.float16
    assert xp.isdtype(xp.float16, "real floating") and not xp.isdtype(xp.float16, "integral")
    assert xp.finfo(xp.float16).bits == 16
    assert "float16" not in xp.__array_namespace_info__().dtypes()  # (the standard's dtypes only, as NumPy's info)
    with sa.default_mesh(cached_mesh({"row": 2, "col": 2})):
        y = xp.asarray([1.0, 2.5, 3.0], dtype=xp.float16)
        assert y.dtype == xp.float16
        np.testing.assert_array_equal((y * 2).numpy(), np.asarray([1.0, 2.5, 3.0], np.float16) * 2)
