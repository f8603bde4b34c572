"""Shared test helpers: the test meshes, hypothesis strategies, random data, and what a shard is on this run.

``pytest --backend=cupy`` (or ``SHARDARRAY_TEST_BACKEND=cupy``) runs the suite on CuPy shards (the strict
stand-in of ``strict_cupy.py`` without a GPU): tests ask ``host``, ``is_shard``, ``shard_type`` and
``backend_name`` instead of assuming NumPy arrays, and make the blocks they hand to a mesh's communicator or
backend with ``on_device``/``device_blocks``.
"""

from __future__ import annotations

from typing import Any

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
    """A real CUDA GPU with a real CuPy (the stand-ins of ``fake_gpu``/``strict_cupy`` are not one)."""
    try:
        import cupy

        if getattr(cupy, "__stand_in__", False):
            return False
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


#: the backend this test session runs on (set by tests/conftest.py from ``--backend``)
_SESSION = {"backend": "numpy"}


def backend_name() -> str:
    """``"numpy"`` or ``"cupy"``: the backend meshes made without ``backend=`` get in this session."""
    return _SESSION["backend"]


def on_real_cupy() -> bool:
    """This session's meshes hold real CuPy shards on a GPU (``--backend=cupy`` with a GPU), not the stand-in."""
    return backend_name() == "cupy" and gpu_available()


def holds_subnormal32(*values: Any) -> bool:
    """Whether any of ``values`` (arrays or scalars) is a float32, bfloat16 or complex64 value whose magnitude (or a
    part's) is subnormal in float32: real CuPy's kernels, built with ``-ftz=true``, flush such values to zero in
    arithmetic, casts and comparisons (docs/guides/parallel.md, "Real CuPy is not NumPy"), so a test that checks
    NumPy's subnormal results skips them on a GPU."""
    tiny = float(np.finfo(np.float32).tiny)
    for v in values:
        if v is None:
            continue
        for a in v if isinstance(v, tuple) else (v,):
            a = np.asarray(a)
            if a.dtype.kind not in "fcV" or a.dtype.itemsize > 8 or a.dtype == np.float64:
                continue
            if a.dtype == np.complex64:
                parts = [np.abs(a.real.astype(np.float64)), np.abs(a.imag.astype(np.float64))]
            elif a.dtype.kind in "fV":
                parts = [np.abs(a.astype(np.float64))]
            else:
                continue
            if any(((p > 0) & (p < tiny)).any() for p in parts):
                return True
    return False


def shard_type(mesh: Any) -> type:
    """The array type of ``mesh``'s shards: ``np.ndarray`` on NumPy meshes, ``cupy.ndarray`` on CuPy ones,
    ``MetaArray`` on meta meshes."""
    xp = mesh.backend.xp
    return xp.ndarray if hasattr(xp, "ndarray") else type(xp.empty((0,)))


def is_shard(obj: Any, mesh: Any) -> bool:
    """Whether ``obj`` is a shard of ``mesh``'s backend (a NumPy array on NumPy meshes, a CuPy array on CuPy)."""
    return isinstance(obj, shard_type(mesh))


def host(a: Any) -> np.ndarray:
    """``a`` as a NumPy array: a ShardArray's (or positional Array's) global value, a device shard copied to
    the host with ``.get()``, a NumPy array or scalar as it is.

    Example:
        >>> host(np.arange(3))
        array([0, 1, 2])
    """
    if isinstance(a, np.ndarray):
        return a
    if hasattr(a, "numpy") and callable(a.numpy):
        return a.numpy()
    if hasattr(a, "get") and hasattr(a, "__cuda_array_interface__"):
        return a.get()
    return np.asarray(a)


def on_device(mesh: Any, array: Any, device: int = 0) -> Any:
    """``array`` (NumPy data) as a block of ``mesh``'s backend on mesh device ``device`` (on its GPU and
    stream where devices have their own): what a communicator's collectives and device kernels take.

    Example:
        >>> on_device(sa.Mesh({"d": 2}, backend="numpy"), np.arange(3), 1)
        array([0, 1, 2])
    """
    with mesh.backend.scope(device):
        return mesh.backend.from_numpy(np.asarray(array))


def device_blocks(mesh: Any, fn: Any) -> list:
    """``[fn(d) for every mesh device d]``, each made a block of ``mesh``'s backend on device ``d``."""
    return [on_device(mesh, fn(d), d) for d in range(mesh.size)]


@st.composite
def meshes(draw, backend=None):
    """A mesh of one of ``HYPOTHESIS_SHAPES``, on ``backend`` (None: the session's default backend)."""
    shape = draw(st.sampled_from(HYPOTHESIS_SHAPES))
    return sa.Mesh(shape) if backend is None else sa.Mesh(shape, backend=backend)


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


def random_layout(rng: np.random.Generator, mesh: Any, dims: Any) -> dict[str, tuple[str, ...]]:
    """A random layout of ``dims`` on ``mesh`` (a seeded fuzz case's): each mesh axis, in random order, splits a
    random dim or none."""
    per: dict[str, list[str]] = {d: [] for d in dims}
    for a in rng.permutation(list(mesh.axis_names)):
        c = rng.integers(len(dims) + 1)
        if c < len(dims):
            per[dims[c]].append(str(a))
    return {d: tuple(v) for d, v in per.items() if v}


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
    "bshk,bthk->bhst",  # the model's attention: batch dims b, h not adjacent in q, k, v (products per slice)
    "bhst,bthk->bshk",
    "bhst,bshk->bthk",
    "ki,kj->ij",  # a transposed operand
    "ik,kj->ji",  # a transposed result
    "iak,kj->ij",  # a dim summed first
    "sbk,kh->bsh",
    "ab,ab->a",  # a batch dim, nothing left or right
]


class EnvMeshes(dict):
    """A stand-in for ``shardarray.default_mesh._ENV_CACHE`` whose ``SHARDARRAY_MESH`` meshes are made on
    ``backend`` (one Mesh per spelling): the namespace's default mesh on CuPy shards (``tests/conftest.py``'s
    ``--backend=cupy``, ``cupy_array_api.py``)."""

    def __init__(self, backend):
        super().__init__()
        self.backend = backend

    def get(self, text, default=None):
        if text not in self:
            from shardarray.default_mesh import parse_mesh_env

            self[text] = sa.Mesh(parse_mesh_env(text), backend=self.backend)
        return self[text]
