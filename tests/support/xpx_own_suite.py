"""array-api-extra's and einops' own tests on ``shardarray.array_api``: a pytest plugin standing in for their conftests.

array-api-extra ships its tests inside the package (``array_api_extra/tests/main``); their conftest
parametrizes an ``xp`` fixture over its ``Backend`` enum, which cannot take a new member. This plugin
replaces that conftest (run it with ``--noconftest``) with fixtures of the same names, so the suite's
own test functions run unchanged on the positional namespace::

    python -m pytest -p xpx_own_suite --noconftest -c /dev/null \\
        .venv/lib/python3.11/site-packages/array_api_extra/tests/main      # with tests/support on PYTHONPATH

- ``library`` is one parameter, id ``shardarray``: an object equal to no ``Backend`` member whose
  ``like(...)`` is always False, so no test takes another library's branch, skip or xfail.
- ``xp`` is ``shardarray.array_api`` with a 2x2 mesh (``row`` x ``col``) as the default mesh: every
  ``xp.asarray`` splits its axis k over mesh axis k, with uneven and empty blocks for small arrays.
- ``device`` is another mesh (4 devices in one axis ``dev``), not the default one, as theirs asks.
- ``infinity`` is float64's largest value (their NumPy value).
- Tests that take only ``da``/``jnp``/``torch`` (Dask, JAX, PyTorch-only) or no backend at all are
  deselected: they test no namespace of ours.
- Their assertion helpers turn arrays into NumPy with ``np.from_dlpack`` and fall back to ``np.asarray``
  on ``TypeError``/``BufferError``: a split array's ``__dlpack__`` raises ``sa.ExportError``, a
  ``BufferError`` (it raised a ``LayoutError`` before round 16, and every split-array assertion failed),
  so they run as they are. ``tests/clients/test_xpx_own_suite.py`` checks the refusal's type on its own.

einops' array-API tests (``einops/tests/test_ops.py::test_*_array_api``,
``test_packing.py::test_pack_unpack_array_api``) import ``numpy as xp`` inside the function: they run
with that import answered by ``shardarray.array_api`` (its ``__version__`` the standard's version, so
their NumPy >= 2 check passes) on the same default mesh. Their ``einops.array_api.asnumpy`` is
``np.from_dlpack``, which a split array refuses by design: with ``XPX_OWN_SUITE_EINOPS_GATHER=1`` it
gathers explicitly (``np.asarray``) instead, so their values are checked.

The environment:

- ``SHARDARRAY_TEST_BACKEND=cupy``: both meshes on CuPy shards (the strict stand-in of ``strict_cupy.py``
  without a GPU).
- ``XPX_OWN_SUITE_REPORT=<path>``: every selected test's outcome as JSON, ``{nodeid: [outcome,
  message]}``, outcome ``passed``, ``failed``, ``skipped`` or ``xfailed``/``xpassed`` (their own xfails),
  message the failure's first line or the skip's reason.
- ``XPX_OWN_SUITE_PER_TEST=k``: only the first ``k`` parametrizations of each test function (CI size).
- ``XPX_OWN_SUITE_MESH="row=3,col=2"``: another default mesh (exploring; 2x2 by default).
- ``XPX_OWN_SUITE_EXAMPLES=n`` (10 by default), ``XPX_OWN_SUITE_EXPLORE=1``: hypothesis examples per
  test, drawn anew on every run (fixed examples by default).
"""

from __future__ import annotations

import builtins
import functools
import os
import sys
import types
from typing import Any

import einops.array_api
import numpy as np
import own_suite_outcomes
import pytest
from array_api_extra.testing import _testing
from helpers import EnvMeshes, gpu_available
from hypothesis import settings

import shardarray as sa
import shardarray.array_api as sxp

settings.register_profile(
    "xpx_own_suite",
    derandomize=not os.environ.get("XPX_OWN_SUITE_EXPLORE"),
    max_examples=int(os.environ.get("XPX_OWN_SUITE_EXAMPLES", "10")),
    deadline=None,
)
settings.load_profile("xpx_own_suite")

#: fixtures of their conftest for one other library: tests taking them test no namespace of ours
OTHER_LIBRARY_FIXTURES = frozenset({"da", "jnp", "torch"})
#: a test runs on our namespace when it takes one of these
OUR_FIXTURES = frozenset({"xp", "library", "device"})

#: einops' tests of its array-API module (not parametrized: ``import numpy as xp`` in the function)
EINOPS_TESTS = frozenset(
    {
        "test_rearrange_array_api",
        "test_reduce_array_api",
        "test_repeat_array_api",
        "test_pack_unpack_array_api",
    }
)

_MESHES: dict[str, Any] = {}
_OUTCOMES = own_suite_outcomes.OUTCOMES
_AS_NUMPY = _testing._as_numpy_array


class ShardarrayBackend:
    """The ``library`` their tests see: equal to no ``Backend`` member, ``like`` nothing."""

    name = "SHARDARRAY"
    value = modname = "shardarray.array_api"

    def like(self, *others: object) -> bool:
        """No other library's branch applies."""
        return False

    def __repr__(self) -> str:
        return "shardarray"


def _backend() -> str:
    return os.environ.get("SHARDARRAY_TEST_BACKEND", "numpy")


def _install_backend() -> None:
    """On ``SHARDARRAY_TEST_BACKEND=cupy`` without a GPU: the strict CuPy stand-in, for the process's life."""
    if _backend() != "cupy":
        return
    if not gpu_available():
        from strict_cupy import install_session  # only on the CuPy run

        install_session(gpus=8)
    sys.modules["shardarray.default_mesh"]._ENV_CACHE = EnvMeshes("cupy")  # type: ignore[attr-defined]


def _default_shape() -> dict[str, int]:
    """``XPX_OWN_SUITE_MESH`` (``"row=3,col=2"``), by default ``row=2,col=2``."""
    spec = os.environ.get("XPX_OWN_SUITE_MESH", "row=2,col=2")
    return {name: int(size) for name, size in (part.split("=") for part in spec.split(","))}


def _mesh(shape: dict[str, int]) -> sa.Mesh:
    key = repr(shape)
    if key not in _MESHES:
        _MESHES[key] = sa.Mesh(shape, backend=_backend())
    return _MESHES[key]


class _EinopsNamespace(types.ModuleType):
    """``shardarray.array_api`` as einops' tests import it: the module, with a ``__version__``."""

    __version__ = sxp.__array_api_version__

    def __getattr__(self, name: str) -> Any:
        return getattr(sxp, name)


def _einops_import(name: str, *args: Any, **kwargs: Any) -> Any:
    if name == "numpy" and not (args[2:3] and args[2]):  # ``import numpy as xp``, not ``from numpy import ...``
        return _EinopsNamespace("numpy")
    return builtins.__import__(name, *args, **kwargs)


def _on_shardarray(test: Any) -> Any:
    """``test`` with ``import numpy`` in its body answered by ``shardarray.array_api``; module names stay NumPy's."""
    scope = dict(test.__globals__, __builtins__=dict(vars(builtins), __import__=_einops_import))
    clone = types.FunctionType(test.__code__, scope, test.__name__, test.__defaults__, test.__closure__)
    return functools.update_wrapper(clone, test)


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    if pyfuncitem.originalname not in EINOPS_TESTS:
        return None
    with sa.default_mesh(_mesh(_default_shape())):
        _on_shardarray(pyfuncitem.obj)()
    return True


def pytest_configure(config: pytest.Config) -> None:
    for name in ("skip_xp_backend", "xfail_xp_backend", "thread_unsafe"):
        config.addinivalue_line("markers", f"{name}: array-api-extra's marker (no Backend member is ours)")
    _install_backend()
    if os.environ.get("XPX_OWN_SUITE_EINOPS_GATHER"):
        einops.array_api.asnumpy = np.asarray


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    keep, drop = [], []
    cap = int(os.environ.get("XPX_OWN_SUITE_PER_TEST", "0"))
    seen: dict[str, int] = {}
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        ours = names & OUR_FIXTURES and not names & OTHER_LIBRARY_FIXTURES
        ours = ours or getattr(item, "originalname", None) in EINOPS_TESTS
        base = item.nodeid.split("[", 1)[0]
        seen[base] = seen.get(base, 0) + 1
        (keep if ours and (not cap or seen[base] <= cap) else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


@pytest.fixture(params=[ShardarrayBackend()], ids=["shardarray"])
def library(request: pytest.FixtureRequest) -> ShardarrayBackend:
    """The one library: ``shardarray``."""
    return request.param


@pytest.fixture
def xp(library: ShardarrayBackend, request: pytest.FixtureRequest) -> Any:
    """``shardarray.array_api`` with the 2x2 mesh as the default mesh."""
    with sa.default_mesh(_mesh(_default_shape())), _testing.patch_lazy_xp_functions(request, xp=sxp):
        yield sxp


@pytest.fixture
def device(library: ShardarrayBackend, xp: Any) -> sa.Mesh:
    """A mesh that is not the default one: 4 devices in one axis."""
    return _mesh({"dev": 4})


@pytest.fixture
def infinity(library: ShardarrayBackend) -> float:
    """float64's largest value, as for NumPy."""
    return 1.7976931348623157e308


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    own_suite_outcomes.record(report)


def pytest_sessionfinish(session: pytest.Session) -> None:
    own_suite_outcomes.write("XPX_OWN_SUITE_REPORT")
