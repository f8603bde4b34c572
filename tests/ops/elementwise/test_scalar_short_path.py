"""The short path of untraced small ops (``short_path.scalar_op`` and ``arrays_op``, issue 30): ``x * 2.0``,
``x + y``, ``-x`` or ``xp.exp(x)`` of untraced positional arrays skip the op mechanism's wrapper, and must give
exactly what the op gives through it.

Each case runs once on the short path and once with it off (``FAST`` emptied: the op through its wrapper), and
compares the two bit for bit: the result's kind, dtype, layout and blocks, or the error's type and message; the
value is also NumPy's on the gathered array where NumPy computes the dtype itself. The autograd tape, the profiler
and pending sums keep the op mechanism; the copy pool's threshold counts the bytes an op writes.
"""

from __future__ import annotations

import operator
import warnings
from unittest import mock

import ml_dtypes  # noqa: F401 - registers the name "bfloat16" with NumPy
import numpy as np
import pytest
from fuzzing import cached_mesh, cached_meshes, fuzz
from helpers import layouts
from hypothesis import given
from hypothesis import strategies as st

import shardarray as sa
import shardarray.array_api as xp
from shardarray.array import as_kind
from shardarray.core import plans
from shardarray.ops.elementwise import short_path

DTYPES = ("bool", "int8", "uint8", "int64", "float16", "float32", "float64", "complex64", "complex128", "bfloat16")
SCALARS = (True, 0, 3, -7, 200, 2**40, 2**70, 1.5, -0.0, float("inf"), float("nan"), 2 - 1j)
OPS = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv, "**": operator.pow,
    "==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
    "add": xp.add, "multiply": xp.multiply, "less": xp.less, "greater_equal": xp.greater_equal,
    "maximum": xp.maximum, "minimum": xp.minimum,
}  # fmt: skip
UNARY = {
    "neg": operator.neg,
    "abs": operator.abs,
    "exp": xp.exp,
    "log": xp.log,
    "sqrt": xp.sqrt,
    "negative": xp.negative,
}
NP_OPS = {"add": np.add, "multiply": np.multiply, "less": np.less, "exp": np.exp, "log": np.log, "sqrt": np.sqrt,
          "negative": np.negative, "greater_equal": np.greater_equal, "maximum": np.maximum,
          "minimum": np.minimum}  # fmt: skip
EXACT = ("bool", "int64", "float64", "complex128")  # dtypes whose values NumPy gives the same on every backend


def _positional(value: np.ndarray, mesh: sa.Mesh, layout: dict) -> xp.Array:
    dims = tuple(f"d{i}" for i in range(value.ndim))
    return as_kind(sa.asarray(value, dims=dims, mesh=mesh, layout=layout), xp.Array)


def _outcome(fn, *args):
    """``fn(*args)`` as what can be compared: the result's parts (kind, dims, dtype, layout, pending axes, value and
    every block), or the error's type and message."""
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            out = fn(*args)
    except Exception as e:  # (compared below)
        return ("error", type(e), str(e))
    blocks = tuple(np.asarray(s).tobytes() for s in out.shards) if out.mesh.backend.xp is np else ()
    return ("ok", type(out), out.dims, out.dtype, out.layout, out.pending, np.asarray(out.numpy()).tobytes(), blocks)


@st.composite
def cases(draw):
    mesh = draw(cached_meshes())
    ndim = draw(st.integers(0, 2))
    shape = tuple(draw(st.integers(0, 5)) for _ in range(ndim))
    dims = tuple(f"d{i}" for i in range(ndim))
    layout = draw(layouts(mesh, dims))
    # the other operand: a Python scalar, an array of the same layout or of a drawn one, or none (a unary op)
    other = draw(st.sampled_from(["scalar", "same", "other", "none"]))
    if other == "none":
        return mesh, shape, layout, draw(st.sampled_from(DTYPES)), None, draw(st.sampled_from(sorted(UNARY))), False
    c = (
        draw(st.sampled_from(SCALARS))
        if other == "scalar"
        else (draw(st.sampled_from(DTYPES)), layout if other == "same" else draw(layouts(mesh, dims)))
    )
    return mesh, shape, layout, draw(st.sampled_from(DTYPES)), c, draw(st.sampled_from(sorted(OPS))), \
        draw(st.booleans())  # fmt: skip


def _value(shape, dtype, seed):
    return np.random.default_rng(seed).integers(-4, 5, shape).astype(np.dtype(dtype))


@fuzz(80, "SHORT_PATH_EXAMPLES")
@given(cases())
def test_short_path_is_the_op(case):
    mesh, shape, layout, dtype, c, name, reflected = case
    value = _value(shape, dtype, 0)
    x = _positional(value, mesh, layout)
    if isinstance(c, tuple):  # an array operand: (dtype, layout)
        cv = _value(shape, c[0], 1)
        c = _positional(cv, mesh, c[1])
    else:
        cv = c
    op = UNARY[name] if c is None and name in UNARY else OPS[name]
    args = (x,) if c is None else (c, x) if reflected else (x, c)
    short = _outcome(op, *args)
    with mock.patch.dict(short_path.FAST, clear=True):
        full = _outcome(op, *args)
    assert short == full
    if short[0] == "ok" and dtype in EXACT and (c is None or isinstance(cv, (bool, int, float, complex))):
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            np_op = NP_OPS.get(name, op)
            want = np.asarray(np_op(value) if c is None else np_op(cv, value) if reflected else np_op(value, cv))
            got = xp.asarray(op(*args))
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got.numpy(), want)


def test_a_chain_finds_its_plan_by_the_layout_object():
    mesh = cached_mesh({"row": 2, "col": 2})
    x = xp.asarray(np.arange(10.0), device=mesh)
    y = x * 2.0 + 1.0  # plans the two ops
    hits = plans.SHORT.hits
    for _ in range(3):
        y = y * 2.0 + 1.0
    assert plans.SHORT.hits == hits + 6
    assert y._layout is x._layout and type(y) is xp.Array
    want = np.arange(10.0) * 2 + 1
    for _ in range(3):
        want = want * 2 + 1
    np.testing.assert_array_equal(y.numpy(), want)
    with plans.disabled():  # planned afresh, the same value
        np.testing.assert_array_equal((x * 2.0 + 1.0).numpy(), np.arange(10.0) * 2 + 1)
    z = xp.asarray(np.ones(10), device=mesh)  # an equal layout, another object: found by value, then by id
    w = xp.exp(-(y + z))  # plans the three ops
    hits = plans.SHORT.hits
    w = xp.exp(-(y + z))
    assert plans.SHORT.hits == hits + 3 and w._layout is y._layout
    np.testing.assert_allclose(w.numpy(), np.exp(-(want + 1)))


def test_traced_arrays_keep_the_op_mechanism():
    mesh = cached_mesh({"row": 2, "col": 2})
    x = xp.asarray(np.arange(4.0), device=mesh)
    c = xp.asarray(np.ones(4), device=mesh)

    def loss(x):
        d = c * 2.0  # an untraced constant inside the recording: the short path, no gradient
        return xp.sum((3.0 * x - 1.0 + d) ** 2)

    value, grad = sa.value_and_grad(loss)(x)
    a = np.arange(4.0)
    np.testing.assert_allclose(np.asarray(value.numpy()), np.sum((3 * a + 1) ** 2))
    np.testing.assert_allclose(grad.numpy(), 6 * (3 * a + 1))
    assert type(grad) is xp.Array


def test_profiles_and_pending_sums_keep_the_op_mechanism():
    mesh = cached_mesh({"row": 2, "col": 2})
    x = xp.asarray(np.arange(8.0), device=mesh)
    hits = plans.SHORT.hits
    with sa.profile() as prof:
        y = x * 2.0
    assert plans.SHORT.hits == hits and prof.peak_memory_bytes_per_device > 0
    np.testing.assert_array_equal(y.numpy(), np.arange(8.0) * 2)
    a = sa.asarray(np.ones((4, 6)), dims=("i", "j"), mesh=mesh, layout={"i": "row", "j": "col"})
    w = sa.asarray(np.ones(6), dims=("j",), mesh=mesh, layout={"j": "col"})
    p = as_kind(sa.einsum(a, w), xp.Array)  # a sum over j pending on col
    assert p.pending == ("col",)
    q = p * 2.0
    assert q.pending == ("col",)  # a linear op keeps the pending sum, as through the wrapper
    np.testing.assert_array_equal(q.numpy(), np.full(4, 12.0))


def test_a_broadcast_counts_the_bytes_it_writes_toward_the_copy_pool(monkeypatch):
    """``lab[:, None] == arange(k)`` reads little and writes a lot: its blocks go to the copy pool (once ran
    serially, the threshold counting the operands only)."""
    seen: list[int] = []

    def spy(jobs, nbytes, backend):
        seen.append(nbytes)
        return [job() for job in jobs]

    monkeypatch.setattr(plans, "MIN_BYTES", 1 << 16)
    monkeypatch.setattr(plans, "run_all", spy)
    monkeypatch.setattr(plans, "usable", lambda backend: True)
    plans.clear_plans()
    mesh = cached_mesh({"row": 2, "col": 2})
    lab = np.arange(512) % 64
    with plans.disabled():  # (plans made under the lowered threshold are not kept)
        onehot = xp.asarray(lab, device=mesh)[:, None] == xp.arange(64, device=mesh)[None, :]
    if mesh.backend.name == "numpy":
        assert seen and max(seen) >= 512 * 64  # the result's bytes counted (the operands' are 4.5 KiB)
    np.testing.assert_array_equal(onehot.numpy(), lab[:, None] == np.arange(64)[None, :])


@pytest.mark.parametrize("c", [2**70, -(2**70)])
def test_an_out_of_range_int_is_the_ops_typed_error(c):
    x = xp.asarray(np.arange(3, dtype=np.int8), device=cached_mesh({"row": 2, "col": 2}))
    with pytest.raises(sa.CastError, match="do not fit"):
        x + c
    with pytest.raises(sa.ArgumentError, match="negative integer powers"):
        x**-1


NAMED_OPS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv, "**": operator.pow,
             "==": operator.eq, "!=": operator.ne}  # fmt: skip


@fuzz(60, "SHORT_PATH_EXAMPLES")
@given(cases())
def test_named_operators_take_the_short_path_as_the_op(case):
    """The operators of plain named arrays (``ShardArray.__mul__`` and the others, ``ops.methods._operator``) on the
    short path give what the op gives with the short path off: result, dims, layout, blocks and errors."""
    mesh, shape, layout, dtype, c, name, reflected = case
    dims = tuple(f"d{i}" for i in range(len(shape)))
    x = sa.asarray(_value(shape, dtype, 0), dims=dims, mesh=mesh, layout=layout)
    if isinstance(c, tuple):
        c = sa.asarray(_value(shape, c[0], 1), dims=dims, mesh=mesh, layout=c[1])
    if c is None:
        op, args = operator.neg, (x,)
    else:
        op = NAMED_OPS.get(name, operator.add)
        args = (c, x) if reflected else (x, c)
    short = _outcome(op, *args)
    with mock.patch.dict(short_path.FAST, clear=True):
        full = _outcome(op, *args)
    assert short == full
