"""ops.causal_softmax: value and gradient against NumPy on every layout; the kernel dispatch on a fake GPU."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import shardarray as sa
from fake_gpu import FakeCupy
from gradcheck import check_grad
from helpers import layouts, meshes, rand
from shardarray.ops.reduction.causal_softmax import causal_softmax

DIMS = ("b", "seq", "kseq")


def reference(s: np.ndarray, scale: float) -> np.ndarray:
    n = s.shape[-1]
    x = np.where(np.tril(np.ones((n, n), bool)), scale * s, -np.inf)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@settings(max_examples=25, deadline=None)
@given(data=st.data(), b=st.integers(0, 3), n=st.integers(1, 6))
def test_matches_numpy_on_every_layout(data, b, n):
    mesh = data.draw(meshes())
    layout = data.draw(layouts(mesh, DIMS))
    s = rand((b, n, n), seed=n)
    x = sa.asarray(s, dims=DIMS, mesh=mesh, layout=layout)
    got = causal_softmax(x, 0.7)
    assert got.dims == DIMS and got.layout == x.layout and got.dtype == x.dtype
    np.testing.assert_allclose(got.numpy(), reference(s, 0.7), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("shape,layout", [({"d": 1}, {}), ({"row": 2, "col": 2}, {"b": "row", "kseq": "col"}),
                                          ({"all": 4}, {"seq": "all"}), ({"p": 3, "q": 2}, {"b": "q", "kseq": "p"})])
def test_gradient_against_finite_differences(shape, layout):
    mesh = sa.Mesh(shape)
    x = sa.asarray(rand((3, 5, 5)), dims=DIMS, mesh=mesh, layout=layout)
    w = sa.asarray(rand((3, 5, 5), seed=1), dims=DIMS, mesh=mesh)
    check_grad(lambda p: (causal_softmax(p["x"], 0.4) * w).sum(), {"x": x})


def test_low_precision_scores_normalize_in_float32():
    """bfloat16 scores: scaled and normalized in float32, probabilities rounded once to bfloat16."""
    s = rand((2, 6, 6)) * 8
    x = sa.asarray(s, dims=DIMS, mesh=sa.Mesh({"row": 2, "col": 2}), layout={"b": "row"}).astype("bfloat16")
    got = causal_softmax(x, 0.125)
    assert got.dtype == np.dtype("bfloat16")
    wide = x.numpy().astype(np.float32)
    np.testing.assert_array_equal(got.numpy(), reference(wide, np.float32(0.125)).astype(np.float32).astype(got.dtype))


def test_bad_input_is_refused_with_the_dims():
    mesh = sa.Mesh({"d": 1})
    x = sa.zeros(mesh, {"b": 2, "seq": 3, "kseq": 4})
    with pytest.raises(sa.DimensionError, match=r"seq has 3 and kseq has 4"):
        causal_softmax(x)
    with pytest.raises(sa.DimensionError, match=r"lack the dim\(s\) \['q'\]"):
        causal_softmax(x, dims=("q", "kseq"))
    with pytest.raises(sa.DTypeError):
        causal_softmax(sa.zeros(mesh, {"seq": 2, "kseq": 2}, dtype="int32"))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the fake launches no kernel: the values are junk
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_cupy_shards_take_one_kernel_each_way(monkeypatch, dtype):
    """Unsplit (seq, kseq) on CuPy shards: one causal_softmax_fwd launch per block forward, one _bwd backward;
    no mask, where, scale or widening kernel of the array path."""
    gpu = FakeCupy(gpus=1).install(monkeypatch)
    mesh = sa.Mesh({"row": 2, "col": 2}, backend="cupy")
    x = sa.asarray(rand((4, 3, 3)), dims=DIMS, mesh=mesh, layout={"b": ("row", "col")}).astype(dtype)
    gpu.launches.clear()
    loss, grad = sa.value_and_grad(lambda x: causal_softmax(x, 0.5).sum())(x)
    names = [launch["name"] for launch in gpu.launches]
    suffix = "bf16" if dtype == "bfloat16" else "f32"
    assert names.count(f"causal_softmax_fwd_{suffix}") == 4 and names.count(f"causal_softmax_bwd_{suffix}") == 4
    assert grad.dims == DIMS and grad.dtype == x.dtype
