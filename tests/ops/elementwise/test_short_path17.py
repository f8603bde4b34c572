"""The short path's per-op cost (issue 30, round 17): small ops of a chain run few Python frames, and give what the
op gives through its wrapper.

``short_path`` runs small blocks inline with the operator or array-module function of each block function
(``_direct``), one result a replica class spread to the devices (``_inline``), under a key of the layout's and
dtype's ids that the plan holds; ``Array``'s operators take two arrays of one shape to ``arrays_op`` directly. Each
case here compares the short path with the op through its wrapper (``FAST`` emptied) bit for bit, and with NumPy.
"""

from __future__ import annotations

import gc
import operator
import os
import sys
import warnings
from unittest import mock

import numpy as np
import pytest
from fuzzing import cached_mesh, cached_meshes, fuzz
from helpers import layouts
from hypothesis import given
from hypothesis import strategies as st

import shardarray as sa
import shardarray.array_api as xp
from shardarray.comm.header import JOB
from shardarray.array import as_kind
from shardarray.core import plans
from shardarray.ops.elementwise import short_path

SCALAR_OPS = {"*": operator.mul, "+": operator.add, "-": operator.sub, "/": operator.truediv, "<": operator.lt,
              "==": operator.eq, "**": operator.pow}  # fmt: skip
ARRAY_OPS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "<": operator.lt, ">=": operator.ge,
             "max": xp.maximum, "xp.add": xp.add, "==": operator.eq}  # fmt: skip
UNARY_OPS = {"neg": operator.neg, "abs": operator.abs, "exp": xp.exp, "sqrt": xp.sqrt}
NP_FORMS = {"max": np.maximum, "xp.add": np.add, "exp": np.exp, "sqrt": np.sqrt}
DTYPES = ("bool", "int64", "float32", "float64", "complex128", ">f8")


def _outcome(fn, *args):
    """``fn(*args)``'s kind, dims, dtype, layout, pending axes, value and blocks, or its error's type and message."""
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            out = fn(*args)
    except Exception as e:  # (compared by the caller)
        return ("error", type(e), str(e))
    on_host = out.mesh.backend.xp is np  # (a CuPy stand-in's blocks are compared through the gathered value)
    blocks = tuple((np.asarray(s).dtype, np.asarray(s).tobytes()) for s in out.shards) if on_host else ()
    return ("ok", type(out), out.dims, out.dtype, out.layout, out.pending, np.asarray(out.numpy()).tobytes(), blocks)


def _positional(value, mesh, layout):
    dims = tuple(f"d{i}" for i in range(value.ndim))
    return as_kind(sa.asarray(value, dims=dims, mesh=mesh, layout=layout), xp.Array)


@st.composite
def chains(draw):
    """A mesh, a shape (0-d, empty and uneven blocks too), a layout, a dtype and a chain of 1 to 5 steps: a scalar op
    (either side), an op with a second array of the same layout (either side) or a unary op."""
    mesh = draw(cached_meshes())
    shape = tuple(draw(st.integers(0, 5)) for _ in range(draw(st.integers(0, 2))))
    layout = draw(layouts(mesh, tuple(f"d{i}" for i in range(len(shape)))))
    steps = []
    for _ in range(draw(st.integers(1, 5))):
        kind = draw(st.sampled_from(["scalar", "array", "unary"]))
        table = {"scalar": SCALAR_OPS, "array": ARRAY_OPS, "unary": UNARY_OPS}[kind]
        c = draw(st.sampled_from([2, -1, 0.5, True, 1j, 2**70])) if kind == "scalar" else None
        steps.append((kind, draw(st.sampled_from(sorted(table))), c, draw(st.booleans())))
    return mesh, shape, layout, draw(st.sampled_from(DTYPES)), steps


def _run(steps, x, y):
    """The chain of ``steps`` from ``x`` (``y``: the second array), each step's outcome."""
    seen = []
    for kind, name, c, reflected in steps:
        if kind == "unary":
            fn, args = UNARY_OPS[name], (x,)
        elif kind == "scalar":
            fn, args = SCALAR_OPS[name], ((c, x) if reflected else (x, c))
        else:
            fn, args = ARRAY_OPS[name], ((y, x) if reflected else (x, y))
        seen.append(_outcome(fn, *args))
        if seen[-1][0] == "ok":
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                x = fn(*args)
    return seen


@fuzz(40, "SHORT_PATH17_EXAMPLES")
@given(chains())
def test_a_chain_on_the_short_path_is_the_op_and_numpys(case):
    mesh, shape, layout, dtype, steps = case
    value = (np.arange(int(np.prod(shape))).reshape(shape) % 5 - 2).astype(dtype)
    other = (np.arange(int(np.prod(shape))).reshape(shape) % 3 + 1).astype(dtype)
    x, y = _positional(value, mesh, layout), _positional(other, mesh, layout)
    short = _run(steps, x, y)
    with mock.patch.dict(short_path.FAST, clear=True):
        full = _run(steps, x, y)
    assert short == full
    kind, name, c, reflected = steps[0]  # (the first step against NumPy: the later ones take a computed dtype)
    if short[0][0] == "ok" and dtype != ">f8":
        np_fn = NP_FORMS.get(name) or {"scalar": SCALAR_OPS, "array": ARRAY_OPS, "unary": UNARY_OPS}[kind][name]
        args = (value,) if kind == "unary" else (c, value) if kind == "scalar" and reflected else (value, c)
        if kind == "array":
            args = (other, value) if reflected else (value, other)
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            want = np.asarray(np_fn(*args))
        got = np.frombuffer(short[0][6], dtype=short[0][3]).reshape(want.shape)
        assert short[0][3] == want.dtype
        np.testing.assert_array_equal(got, want)


def _test_blocks(xp_module):
    """Blocks of several dtypes (a 0-d one too) of the array module ``xp_module``, with a Python scalar."""
    out = []
    for dtype in ("bool", "int8", "int64", "float32", "float64", "complex128"):
        a = xp_module.asarray((np.arange(6) % 4 - 1).astype(dtype))
        b = xp_module.asarray((np.arange(6) % 3 + 1).astype(dtype))
        out += [(a, b), (a, 2), (3, a), (a, 1.5), (xp_module.asarray(np.asarray(2, dtype=dtype)), -1)]
    return out


@pytest.mark.parametrize("op", sorted(short_path.FAST, key=lambda f: short_path.FAST[f][0]), ids=lambda f: f.__name__)
def test_each_direct_block_function_is_its_block(op):
    """``_direct(block, xp)`` is ``block(xp, ...)`` for every op of ``FAST``: the same values, dtypes and errors,
    on the test backend's array module."""
    mesh = cached_mesh({"row": 2, "col": 2})
    module = mesh.backend.xp
    name, block, _, _ = short_path.FAST[op]
    direct = short_path._direct(block, module)
    unary = name in ("negative", "exp", "log", "sqrt", "abs")
    for a, b in _test_blocks(module):
        args = (a,) if unary else (a, b)
        if unary and not hasattr(a, "dtype"):
            continue
        outcomes = []
        for fn in (direct, lambda *v: block(module, *v)):
            try:
                with warnings.catch_warnings(), np.errstate(all="ignore"):
                    warnings.simplefilter("ignore")
                    r = fn(*args)
                host = np.asarray(module.asnumpy(r) if hasattr(module, "asnumpy") else r)
                outcomes.append(("ok", type(r), host.dtype, host.tobytes()))
            except Exception as e:  # (compared below)
                outcomes.append(("error", type(e), str(e)))
        assert outcomes[0] == outcomes[1], (name, args)


def test_inline_spreads_one_result_a_class_to_every_device():
    assert short_path._inline(None, 4) == (None, None)  # device scopes: map_blocks
    assert short_path._inline(((0, (0,)),), 1) == ((0,), None)
    assert short_path._inline(((0, (0,)), (1, (1,)), (2, (2,))), 3) == ((0, 1, 2), None)
    reps, pick = short_path._inline(((0, (0, 1)), (2, (2, 3))), 4)
    assert reps == (0, 2) and pick(("a", "b")) == ("a", "a", "b", "b")
    reps, pick = short_path._inline(((0, (0, 2)), (1, (1, 3))), 4)
    assert reps == (0, 1) and pick(("a", "b")) == ("a", "b", "a", "b")
    reps, pick = short_path._inline(((0, (0, 1, 2, 3)),), 4)
    assert reps == (0,) and pick(("a",)) == ("a",) * 4
    reps, pick = short_path._inline(((1, (1,)),), 3)  # an MPI process: its own device, None for the others
    assert reps == (1,) and pick(("a",)) == (None, "a", None)


def test_a_plan_holds_the_objects_its_key_names_by_id():
    """A dtype equal to float64 but another object (metadata), dropped after its op: the plan stored under its id
    keeps it alive, so no later dtype takes the id and the plan."""
    mesh = cached_mesh({"row": 2, "col": 2})
    plans.clear_plans()
    for i in range(3):
        dtype = np.dtype("float64", metadata={"i": i})
        x = xp.asarray(np.arange(6, dtype=dtype), device=mesh)
        np.testing.assert_array_equal((x * 2.0).numpy(), np.arange(6) * 2.0)
        np.testing.assert_array_equal((x + x).numpy(), np.arange(6) * 2.0)
    for key, plan in list(plans.SHORT._plans.items()):
        if plan is False or not plan.held:
            continue
        held = {id(o) for o in plan.held}
        ids = [k for k in key[1:] if type(k) is int and k != id(mesh)]
        assert ids and all(k in held for k in ids)


def _python_frames(fn, *args):
    """The shardarray functions ``fn(*args)`` runs (Python frames: properties and block functions too), with the
    garbage collector off and the result kept until the count ends (no finalizer counted)."""
    names: list[str] = []
    package = os.path.dirname(sa.__file__)

    def profile(frame, event, arg):
        if event == "call" and frame.f_code.co_filename.startswith(package):
            names.append(frame.f_code.co_name)

    gc.disable()
    sys.setprofile(profile)
    try:
        out = fn(*args)
    finally:
        sys.setprofile(None)
        gc.enable()
    del out
    return names


def test_the_hot_path_runs_few_python_frames(monkeypatch):
    """Once planned, ``x * c``, ``x + y``, ``-x`` and ``xp.exp(x)`` of small blocks run the operator, the short path
    and the result's constructor: no block function, no ``shards`` property, no second dispatch (were 7 frames for
    ``x * c``, 14 for ``x + y``, 8 for ``-x``, 11 for ``xp.exp(x)``, 18 for ``xp.add(x, y)``)."""
    mesh = cached_mesh({"row": 2, "col": 2})
    if mesh.backend.xp is not np:
        pytest.skip("counts the NumPy blocks' frames (a CuPy stand-in's arrays run Python operators)")
    monkeypatch.setattr(JOB, "job", False)  # (one process alone: a job of several adds its checks' frames)
    x = xp.asarray(np.arange(64.0), device=mesh)
    y = xp.asarray(np.ones(64), device=mesh)
    cases = {
        "x * c": (operator.mul, (x, 1.0001)),
        "c - x": (operator.sub, (0.5, x)),
        "x + y": (operator.add, (x, y)),
        "x < y": (operator.lt, (x, y)),
        "-x": (operator.neg, (x,)),
    }
    for name, (fn, args) in cases.items():
        fn(*args)  # (planned)
        frames = _python_frames(fn, *args)
        assert len(frames) <= 3, (name, frames)
        assert "shards" not in frames and "_trusted" in frames, (name, frames)
    xp.exp(x)
    frames = _python_frames(xp.exp, x)
    assert len(frames) <= 6 and "_exp_block" not in frames and "shards" not in frames, frames
    xp.add(x, y)
    frames = _python_frames(xp.add, x, y)  # (the namespace's checks, then ``arrays_op`` with no second dispatch)
    assert len(frames) <= 9 and "binary" not in frames and "shards" not in frames, frames


def test_two_arrays_on_the_operators_shortcut_keep_the_tape_and_complex_order():
    """``x + y`` of two Arrays of one shape goes to ``arrays_op`` from the operator: a traced operand keeps the op
    mechanism (the gradient flows), complex operands of ``<`` take NumPy's order through the op."""
    mesh = cached_mesh({"row": 2, "col": 2})
    a, b = np.arange(6.0), np.linspace(1, 2, 6)
    y = xp.asarray(b, device=mesh)
    value, grad = sa.value_and_grad(lambda x: xp.sum((x + y) * (y - x) + y * y))(xp.asarray(a, device=mesh))
    np.testing.assert_allclose(np.asarray(value.numpy()), np.sum((a + b) * (b - a) + b * b))
    np.testing.assert_allclose(grad.numpy(), -2 * a)
    assert type(grad) is xp.Array
    za, zb = a + 1j * (a % 2), a[::-1] + 0j
    z, w = xp.asarray(za, device=mesh), xp.asarray(zb, device=mesh)
    np.testing.assert_array_equal((z < w).numpy(), za < zb)
    np.testing.assert_array_equal((w >= z).numpy(), zb >= za)
    with sa.profile():
        hits = plans.SHORT.hits
        np.testing.assert_array_equal((y + y).numpy(), b + b)
        assert plans.SHORT.hits == hits  # (a profile records every op: the op mechanism)
