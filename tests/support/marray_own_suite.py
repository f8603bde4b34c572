"""marray's own tests on ``shardarray.array_api``: a pytest plugin for the subprocess that runs them.

marray (``marray.masked_namespace(xp)``, the masked arrays of SciPy's masked statistics) ships its tests in
the package (``marray/tests/test_marray.py``). Each test takes a namespace ``xp`` from a module list,
``@pytest.mark.parametrize('xp', xps)`` with ``xps = [np, array_api_strict (, torch)]``. This plugin runs
them unchanged on ours::

    python -m pytest -p marray_own_suite -c /dev/null --rootdir <site-packages> \\
        <site-packages>/marray/tests/test_marray.py      # with tests/support on PYTHONPATH

- ``xps`` becomes ``[shardarray.array_api]`` (id ``shardarray``), replaced in place before pytest
  parametrizes the first test, so every ``xp`` test runs on our namespace only. Tests without ``xp``
  (NumPy-only or array-api-strict-only checks of marray itself) are deselected.
- ``import array_api_strict`` (their module's import; array-api-strict is not installed here) answers an
  empty placeholder module when it is missing, not our namespace: their tests skip reflected operators
  when ``'strict' in str(xp)``, and ours run them.
- Every test runs with a 2x2 mesh (``row`` x ``col``) as the default mesh: ``xp.asarray`` of their NumPy
  data splits axis k over mesh axis k, with uneven and empty blocks for their sizes 1..19.
- Their random data comes from ``seed=None`` (fresh entropy each run); here each test gets a fixed seed
  (a hash of its id), so the CI is deterministic. Their failure messages name the seed.
- Their ``pass_exceptions`` turns a test's exception into an xfail when its message holds one of the wordings
  it knows (array-api-strict's "Only floating-point dtypes are allowed in sin", NumPy's, torch's) and into
  ``AssertionError(seed)`` otherwise. Our ``sa.DTypeError`` for the same refusals (the standard's dtype
  categories, which we follow as array-api-strict does) has its own wording: ``standard_refusal`` checks the
  refused function and the test's dtype against ``STANDARD_KINDS`` and xfails those only, with the reason
  ``(b) the standard's dtype refusal, ...``. Any other exception stays a failure, its cause in the report.
- Warnings as in their ``pyproject.toml`` (marray's own warnings are errors, NumPy's floating-point
  ``RuntimeWarning``\\ s of their references ignored), and ``sa.GatherWarning`` is an error: a silent
  whole-array gather fails a test.

The environment:

- ``SHARDARRAY_TEST_BACKEND=cupy``: the mesh on CuPy shards (the strict stand-in without a GPU).
- ``MARRAY_OWN_SUITE_REPORT=<path>``: every selected test's outcome as JSON, ``{nodeid: [outcome,
  message]}`` (``own_suite_outcomes``).
- ``MARRAY_OWN_SUITE_SAMPLE=k``: only ``k`` parametrizations of each test function, evenly spaced over
  its list (dtypes, functions), the CI size; ``0`` (default) runs all of them.
- ``MARRAY_OWN_SUITE_ONLY=name,name``: only these test functions.
- ``MARRAY_OWN_SUITE_XFAIL='{"<nodeid>": "<reproducer>"}'``: their tests failing on a shardarray bug, each in
  the selection (sampled or not) as a strict xfail, so that the fix flips it.
- ``MARRAY_OWN_SUITE_KEEP='["<nodeid>", ...]'``: their tests that failed on a shardarray gap since fixed, each in
  the selection (sampled or not), to pass.
- ``MARRAY_OWN_SUITE_MESH="row=3,col=2"``: another default mesh (exploring; 2x2 by default).
- ``MARRAY_OWN_SUITE_EXPLORE=1``: their own fresh random seeds (``seed=None``) instead of fixed ones.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import os
import re
import sys
import types
import zlib
from collections.abc import Generator, Iterator
from typing import Any

import own_suite_outcomes
import pytest
from helpers import EnvMeshes, gpu_available

import shardarray as sa
import shardarray.array_api as sxp

#: the id of our namespace in their parametrizations
NAMESPACE_ID = "shardarray"
#: their pytest configuration's warning filters (``pyproject.toml``), and a gather is an error here
FILTERWARNINGS = (
    "error:::marray.*",
    "ignore:invalid value encountered:RuntimeWarning",
    "ignore:divide by zero encountered:RuntimeWarning",
    "ignore:overflow encountered:RuntimeWarning",
    "error::shardarray.GatherWarning",
    # (b) their references: ``np.ma.masked_array(<our array>)`` of a test reads it whole by design
    "ignore:numpy.ma.core.MaskedArray.__new__ read:shardarray.GatherWarning",
)

_FLOATING = ("real floating", "complex floating")
_NUMERIC = ("integral", *_FLOATING)
#: the standard's dtype categories of the functions whose other dtypes ``shardarray.array_api`` refuses with an
#: ``sa.DTypeError``, as array-api-strict does (their tests expect array-api-strict's wording, "Only
#: floating-point dtypes are allowed in sin", or NumPy's and torch's, in ``pass_exceptions(allowed=...)``)
STANDARD_KINDS: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(
        "acos acosh asin asinh atan atanh cos cosh exp expm1 log log1p log2 log10 reciprocal sin sinh sqrt tan "
        "tanh".split(),
        _FLOATING,
    ),
    **dict.fromkeys("atan2 copysign hypot logaddexp nextafter signbit".split(), ("real floating",)),
    **dict.fromkeys("ceil floor trunc floor_divide remainder".split(), ("integral", "real floating")),
    **dict.fromkeys("bitwise_left_shift bitwise_right_shift".split(), ("integral",)),
    **dict.fromkeys("arange negative positive round sign square subtract".split(), _NUMERIC),
}

_MESHES: dict[str, sa.Mesh] = {}
_CAUSES: dict[str, str] = {}


def _install_strict_placeholder() -> None:
    """``import array_api_strict`` succeeds: an empty module when array-api-strict is not installed."""
    if "array_api_strict" not in sys.modules and importlib.util.find_spec("array_api_strict") is None:
        sys.modules["array_api_strict"] = types.ModuleType(
            "array_api_strict", "placeholder: not installed; marray's tests run on shardarray.array_api only"
        )


def _backend() -> str:
    return os.environ.get("SHARDARRAY_TEST_BACKEND", "numpy")


def _mesh() -> sa.Mesh:
    spec = os.environ.get("MARRAY_OWN_SUITE_MESH", "row=2,col=2")
    if spec not in _MESHES:
        shape = {name: int(size) for name, size in (part.split("=") for part in spec.split(","))}
        _MESHES[spec] = sa.Mesh(shape, backend=_backend())
    return _MESHES[spec]


def pytest_configure(config: pytest.Config) -> None:
    _install_strict_placeholder()
    for line in FILTERWARNINGS:
        config.addinivalue_line("filterwarnings", line)
    if _backend() == "cupy":
        if not gpu_available():
            from strict_cupy import install_session  # only on the CuPy run

            install_session(gpus=8)
        sys.modules["shardarray.default_mesh"]._ENV_CACHE = EnvMeshes("cupy")  # type: ignore[attr-defined]


@pytest.hookimpl(tryfirst=True)
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Their ``xps`` (the list their ``parametrize('xp', xps)`` marks hold) is ``[shardarray.array_api]``."""
    xps = getattr(metafunc.module, "xps", None)
    if isinstance(xps, list) and not (len(xps) == 1 and getattr(xps[0], "id", None) == NAMESPACE_ID):
        xps[:] = [pytest.param(sxp, id=NAMESPACE_ID)]


def _sample(items: list[pytest.Item], k: int) -> list[pytest.Item]:
    """``k`` of ``items`` (one test function's parametrizations), evenly spaced, first and last included."""
    if not k or len(items) <= k:
        return items
    if k == 1:
        return items[:1]
    return [items[round(i * (len(items) - 1) / (k - 1))] for i in range(k)]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    k = int(os.environ.get("MARRAY_OWN_SUITE_SAMPLE", "0"))
    bugs: dict[str, str] = json.loads(os.environ.get("MARRAY_OWN_SUITE_XFAIL", "{}"))
    only = {name for name in os.environ.get("MARRAY_OWN_SUITE_ONLY", "").split(",") if name}
    groups: dict[str, list[pytest.Item]] = {}
    for item in items:
        callspec = getattr(item, "callspec", None)
        ours = callspec is not None and callspec.params.get("xp") is sxp
        if ours and (not only or getattr(item, "originalname", "") in only):
            groups.setdefault(item.nodeid.split("[", 1)[0], []).append(item)
    keep = {id(item) for group in groups.values() for item in _sample(group, k)}
    fixed = set(json.loads(os.environ.get("MARRAY_OWN_SUITE_KEEP", "[]")))
    for item in items:
        if item.nodeid in fixed:
            keep.add(id(item))
        if item.nodeid in bugs:  # in every selection, each a strict xfail naming its reproducer
            item.add_marker(pytest.mark.xfail(strict=True, reason=bugs[item.nodeid]))
            keep.add(id(item))
    drop = [item for item in items if id(item) not in keep]
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = [item for item in items if id(item) in keep]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    with sa.default_mesh(_mesh()):
        return (yield)


def _seed(nodeid: str) -> int:
    """A fixed seed per test id (their ``seed`` when a test fails is this number)."""
    return zlib.crc32(nodeid.encode()) * 7919 + 1


def _kind(dtype: str) -> str:
    if dtype == "bool":
        return "bool"
    return {"i": "integral", "u": "integral", "f": "real floating", "c": "complex floating"}[dtype[0]]


def _names(dtype: str, text: str) -> bool:
    """``text`` names ``dtype`` (``int8``, not the ``int8`` of ``uint8``)."""
    return re.search(rf"\b{dtype}\b", text) is not None


def standard_refusal(error: BaseException, params: dict[str, Any]) -> str | None:
    """Why ``error`` is the standard's own dtype refusal of the test's dtype (as array-api-strict's), or None.

    ``error`` must be an ``sa.DTypeError`` naming a function of ``STANDARD_KINDS`` and the test's dtype, a dtype
    outside that function's categories; or ``astype`` of a complex array to a real-valued dtype (the standard:
    "should not be permitted"). Not complex to bool: the standard defines it (``0 + 0j`` is False, every other
    value True), though array-api-strict refuses it too.
    """
    if not isinstance(error, sa.DTypeError):
        return None
    text = str(error)
    name = text.split(":", 1)[0].split(" ", 1)[0]
    if name == "astype":  # (complex to bool is the standard's: 0 + 0j is False, all others True)
        dtype_in, dtype_out = str(params.get("dtype_in")), str(params.get("dtype_out"))
        if (
            dtype_in.startswith("complex")
            and _kind(dtype_out) in ("integral", "real floating")
            and _names(dtype_in, text)
        ):
            return f"astype of {dtype_in} to {dtype_out}"
        return None
    dtype = str(params.get("dtype"))
    if name in STANDARD_KINDS and _names(dtype, text) and _kind(dtype) not in STANDARD_KINDS[name]:
        return f"{name} of {dtype} (the standard: {' or '.join(STANDARD_KINDS[name])})"
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool:
    """Their test, with ``seed=<fixed>`` when it takes one (``seed=None``, fresh entropy, in theirs).

    Their ``pass_exceptions`` xfails the standard's dtype refusals in the wordings it knows; ours (checked by
    ``standard_refusal``) xfail too, and every other exception stays a failure.
    """
    args = {name: pyfuncitem.funcargs[name] for name in pyfuncitem._fixtureinfo.argnames}
    if not os.environ.get("MARRAY_OWN_SUITE_EXPLORE") and "seed" in inspect.signature(pyfuncitem.obj).parameters:
        args["seed"] = _seed(pyfuncitem.nodeid)
    try:
        pyfuncitem.obj(**args)
    except AssertionError as failure:
        params = getattr(getattr(pyfuncitem, "callspec", None), "params", {})
        why = standard_refusal(failure.__cause__, params) if failure.__cause__ is not None else None
        if why is None:
            raise
        raise pytest.xfail.Exception(f"(b) the standard's dtype refusal, {why}: {failure.__cause__}"[:300]) from None
    return True


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Their ``pass_exceptions`` turns every exception into ``AssertionError(seed)``: keep the cause's line."""
    report = yield
    cause = call.excinfo.value.__cause__ if call.excinfo is not None else None
    if cause is not None and report.failed:
        line = (str(cause).strip().splitlines() or [""])[0]
        _CAUSES[item.nodeid] = f"{type(cause).__module__}.{type(cause).__qualname__}: {line}"[:300]
    return report


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    own_suite_outcomes.record(report)
    outcome = own_suite_outcomes.OUTCOMES.get(report.nodeid)
    if outcome and outcome[0] == "failed" and report.nodeid in _CAUSES and "<-" not in outcome[1]:
        outcome[1] += f" <- {_CAUSES[report.nodeid]}"


def pytest_sessionfinish(session: pytest.Session) -> None:
    own_suite_outcomes.write("MARRAY_OWN_SUITE_REPORT")
