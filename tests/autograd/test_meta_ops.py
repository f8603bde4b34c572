"""Every op of the gradient registry runs on the ``meta`` backend, forward and backward (the planner traces steps
there): the result and the gradient have the shapes and dtypes of the same op on NumPy shards.

Found by the planner's fuzzer: ``sa.cumsum`` raised a raw ``AttributeError`` on meta shards (the meta namespace had
no ``cumsum``; a scan of a split dim then lost its blocks), and ``max``'s VJP and ``sa.equal`` compared blocks with
``==``, which meta blocks answer with a Python bool.
"""

from __future__ import annotations

import numpy as np
import pytest
import test_op_registry_gradients as registry

import shardarray as sa

SHAPE = {"row": 2, "col": 2}


def _pair(backend):
    mesh = sa.Mesh(SHAPE, backend=backend)
    x = sa.asarray(np.random.default_rng(0).uniform(0.2, 0.9, (5, 6)), dims=("a", "b"), mesh=mesh,
                   layout={"a": "row", "b": "col"})
    return mesh, x


def _run(loss):
    """(value shape and dtype, gradient sizes, layout and dtype) of ``loss`` on meta and on NumPy shards."""
    out = []
    for backend in ("meta", "numpy"):
        _, x = _pair(backend)
        value, grad = sa.value_and_grad(loss)(x)
        out.append((value.sizes, value.dtype, grad.sizes, grad.layout, grad.dtype))
    return out


def _float(y):
    """A floating loss term of ``y`` (a bool or integer result weights ``p``; a result without a gradient rule
    is taken as a constant)."""
    return y.astype("float64") if y.dtype.kind in "biu" else y


def _unary(n):
    return lambda p: (_float(getattr(sa, n)(p)) * p).sum()


def _binary(n):
    if n in NO_RULE:
        return lambda p: (getattr(sa, n)(sa.stop_gradient(p), 0.5) * p).sum()
    return lambda p: getattr(sa, n)(p, p * 0.5 + 0.25).sum()


NO_RULE = {"nextafter"}  # not differentiable: its result is taken as a constant here
CASES = {f"unary-{n}": _unary(n) for n in registry.UNARY if hasattr(sa, n)}
CASES.update({f"binary-{n}": _binary(n) for n in registry.BINARY if hasattr(sa, n)})
CASES.update({f"reduce-{n}": (lambda n: lambda p: getattr(sa, n)(p, "a").sum())(n) for n in registry.REDUCE})
CASES.update({f"structural-{n}": (lambda f: lambda p: f(p).sum())(f) for n, f in registry.STRUCTURAL.items()})
CASES["equal-not_equal"] = lambda p: sa.where(sa.equal(p, p) & sa.not_equal(p, 0.5), p, 0.0).sum()


@pytest.mark.numpy_only(reason="compares the meta backend with NumPy shards")
@pytest.mark.parametrize("name", sorted(CASES))
def test_an_op_runs_on_meta_shards_as_on_numpy_shards(name):
    meta, numpy = _run(CASES[name])
    assert meta == numpy
