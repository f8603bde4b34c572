"""The suite's options and markers: ``--backend``, ``gpu`` and ``numpy_only`` tests, hypothesis profiles.

``--backend=numpy`` (default; or ``SHARDARRAY_TEST_BACKEND=numpy``) runs the suite on NumPy shards.
``--backend=cupy`` runs it on CuPy shards: every ``sa.Mesh(...)`` made without ``backend=`` (and the
positional namespace's default mesh) gets ``backend="cupy"``, on a real GPU when CuPy finds one, else on
the strict stand-in of ``tests/support/strict_cupy.py`` (8 fake GPUs) installed for the whole session;
meshes that ask for ``"numpy"`` or ``"meta"`` keep them. Tests marked ``numpy_only(reason)`` test
NumPy-only behaviour and skip under ``--backend=cupy``, as do the package doctests whose expected output is a NumPy
mesh's (``NUMPY_MESH_DOCTESTS``); tests marked ``gpu`` skip without a real GPU.
"""

import faulthandler
import functools
import os

import pytest
from hypothesis import settings

# the same examples on every run (CI included); HYPOTHESIS_PROFILE=explore draws new ones
settings.register_profile("ci", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

import helpers  # noqa: E402
from helpers import gpu_available  # noqa: E402
from spmd import WORLD  # noqa: E402

# helpers, fakes, misuse cases and job scripts: imported by the tests, never collected (not even for doctests)
collect_ignore = ["support"]

BACKENDS = ("numpy", "cupy")
_UNDO: list = []

#: a test of an MPI job (``mpiexec -n 4 ... tests/mpi``) still running after this many seconds dumps every
#: thread's stack and exits its process, and mpiexec then ends the whole job: a collective that one process
#: never joins fails the run instead of hanging it (the longest test there takes a few seconds)
MPI_TEST_TIMEOUT_S = 120


@pytest.fixture(autouse=True)
def _mpi_test_timeout():
    if WORLD <= 1:
        yield
        return
    faulthandler.dump_traceback_later(MPI_TEST_TIMEOUT_S, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


@pytest.fixture(autouse=True)
def _mpi_buffers_pooled(monkeypatch):
    """In an MPI job every buffer a collective fills comes from the reused pool (``backend.host_buffers``), however small:
    the job's tests then check that no array a collective returned is ever written by a later one."""
    if WORLD > 1:
        from shardarray.backend import host_buffers as buffers

        monkeypatch.setattr(buffers, "MIN_BYTES", 0)
    yield


def pytest_addoption(parser):
    parser.addoption(
        "--backend", choices=BACKENDS, default=os.environ.get("SHARDARRAY_TEST_BACKEND", "numpy"),
        help="the backend of meshes made without backend=: numpy (default) or cupy (a real GPU when CuPy finds "
             "one, else the strict CuPy stand-in, tests/support/strict_cupy.py); env SHARDARRAY_TEST_BACKEND",
    )


def pytest_configure(config):
    config.addinivalue_line("markers", "numpy_only(reason): tests NumPy-only behaviour; skipped under --backend=cupy")
    backend = config.getoption("--backend", default="numpy")
    if backend not in BACKENDS:
        raise pytest.UsageError(f"--backend={backend!r} (or SHARDARRAY_TEST_BACKEND): choose one of {BACKENDS}")
    helpers._SESSION["backend"] = backend
    helpers._SESSION["real_gpu"] = False
    if backend == "cupy":
        _UNDO.append(_use_cupy())


def pytest_unconfigure(config):
    while _UNDO:
        _UNDO.pop().undo()


def _use_cupy():
    """Make ``backend="cupy"`` the session's default mesh backend, on a GPU or on the strict stand-in."""
    from fake_gpu import FakeCupy

    if gpu_available():
        mp = pytest.MonkeyPatch()
        helpers._SESSION["real_gpu"] = True
    else:
        from strict_cupy import install_session

        mp = install_session(gpus=8)  # enough for a 2 x 2 x 2 mesh with one GPU per device
    mp.setattr(FakeCupy, "default_strict", True)  # fakes a test installs itself are strict too
    _default_backend(mp, "cupy")
    return mp


def _default_backend(mp, name):
    """``sa.Mesh(shape, ...)`` without ``backend=`` -> ``backend=name``; also the default mesh of the namespace."""
    import importlib

    from shardarray.mesh import Mesh

    default_mesh = importlib.import_module("shardarray.default_mesh")  # (sa.default_mesh is the function)

    init = Mesh.__init__

    @functools.wraps(init)
    def __init__(self, shape, *args, **kwargs):
        if not args and "backend" not in kwargs:
            kwargs["backend"] = name
        init(self, shape, *args, **kwargs)

    mp.setattr(Mesh, "__init__", __init__)

    mp.setattr(default_mesh, "_ENV_CACHE", helpers.EnvMeshes(name))  # SHARDARRAY_MESH meshes on the backend too


#: doctests of the package whose expected output is a NumPy mesh's (a mesh repr without ``backend=``, NumPy blocks
#: handed to a default mesh's communicator, ``False`` where CuPy shards take a kernel): skipped under --backend=cupy,
#: where a mesh made without ``backend=`` is a CuPy one. The docstrings stay as they are: they document the default.
NUMPY_MESH_DOCTESTS = frozenset({
    "shardarray.backend.cuda_kernels.supports",
    "shardarray.comm.base.Communicator.alltoallv",
    "shardarray.comm.base.Communicator.alltoallv_boxes",
    "shardarray.ops.fused.dispatch",
    "shardarray.ops.show.array_repr",
})


#: the planner's tests run on the ``meta`` backend only (shapes, no shards): under --backend=cupy they would run
#: the same again, so they skip there, except the files that hold meta's figures against real shards
META_ONLY_DIR = "tests/plan/"
META_AGAINST_SHARDS = frozenset({"tests/plan/test_meta.py", "tests/plan/test_meta_scale.py"})


def pytest_collection_modifyitems(config, items):
    if config.getoption("--backend", default="numpy") == "cupy":
        doctest_skip = pytest.mark.skip(reason="the example shows a NumPy mesh's output")
        meta_skip = pytest.mark.skip(reason="runs on the meta backend only: the same under --backend=numpy")
        for item in items:
            path = item.nodeid.split("::", 1)[0]
            if path.startswith(META_ONLY_DIR) and path not in META_AGAINST_SHARDS:
                item.add_marker(meta_skip)
            marker = item.get_closest_marker("numpy_only")
            if marker is not None:
                reason = marker.args[0] if marker.args else marker.kwargs.get("reason", "tests NumPy shards")
                item.add_marker(pytest.mark.skip(reason=f"numpy_only: {reason}"))
            if item.name in NUMPY_MESH_DOCTESTS:  # a doctest item's name is its object's dotted path
                item.add_marker(doctest_skip)
    if gpu_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU with CuPy (pip install 'shardarray[cuda13]')")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
