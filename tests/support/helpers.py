"""Shared test helpers: the test meshes, hypothesis strategies, random data."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import shardarray as sa

MESH_SHAPES = [
    {"d": 1},
    {"row": 2, "col": 2},
    {"all": 4},
    {"x": 2, "y": 2, "z": 2},
]
# hypothesis also draws an uneven 3 x 2 mesh, where the order of axes in a group matters
HYPOTHESIS_SHAPES = MESH_SHAPES + [{"p": 3, "q": 2}]


def gpu_available() -> bool:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


@st.composite
def meshes(draw, backend="numpy"):
    return sa.Mesh(draw(st.sampled_from(HYPOTHESIS_SHAPES)), backend=backend)


@st.composite
def layouts(draw, mesh, dims):
    """A random legal layout: each mesh axis splits one dim or none, in random order."""
    per_dim = {d: [] for d in dims}
    axes = list(mesh.axis_names)
    order = draw(st.permutations(axes))
    for a in order:
        choice = draw(st.sampled_from([None, *dims]))
        if choice is not None:
            per_dim[choice].append(a)
    return {d: tuple(a) for d, a in per_dim.items() if a}


def sizes_strategy(dims, min_size=0, max_size=7):
    return st.tuples(*[st.integers(min_size, max_size) for _ in dims])


def rand(shape, seed=0, dtype=np.float64):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


# two-operand einsums every contraction path is checked on (tests/core/test_dispatch_floor.py, tests/backend/test_gpu_host.py)
def ref_contract(equation: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.einsum(equation, a.astype(np.float64), b.astype(np.float64))


EINSUM_EQUATIONS = [
    "ik,kj->ij",  # plain 2-D product
    "bik,bkj->bij",  # identity permutations everywhere: no transposes
    "bhsk,bhtk->bhst",  # attention scores
    "bhst,bhtk->bhsk",
    "ki,kj->ij",  # a transposed operand
    "ik,kj->ji",  # a transposed result
    "iak,kj->ij",  # a dim summed first
    "sbk,kh->bsh",
    "ab,ab->a",  # a batch dim, nothing left or right
]
