"""Rougier's "100 NumPy exercises" (github.com/rougier/numpy-100) on positional shardarray arrays.

Each exercise's solution is a function of a NumPy-like module ``np_`` and the exercise's input arrays
(``numpy100_cases.py``, numbered as the exercises). It runs once on NumPy (``np_`` is ``numpy``, NumPy
inputs) and once on a 2x2 mesh: the inputs are ``xp.asarray(...)`` (axis k split over mesh axis k), and
``np_`` is ``numpy`` itself except for the creation functions, which make arrays of the mesh as a NumPy
script makes arrays of another kind: NEP 35's ``like=`` for those that take it (``np.zeros(n, like=ref)``,
``np.array``, ``np.arange``, ``np.eye``, ``np.fromiter``...), the namespace's ``xp.linspace`` and
``xp.indices`` for the two that do not. Everything else is NumPy's own function or method, dispatched
through ``__array_function__``/``__array_ufunc__``. The results (gathered value, dtype and shape; an array
where NumPy gives one) must be NumPy's, with no ``sa.GatherWarning``.

Refused (``REFUSED``; the test asserts the typed error and what its message says to do):

* 66 (``np.dot(I, [1, 256, 65536])``) and 80 (``np.maximum(list, x)``): a Python list beside a distributed
  array is host data that is not copied onto the mesh implicitly (as CuPy and JAX refuse it):
  ``sa.DTypeError`` naming ``xp.asarray``.

47's ``np.linalg.det`` of a matrix split by rows gathers it, with the ``sa.GatherWarning`` the README documents
(``GATHERS``); every other case runs without one.

Skipped (not run; no array solution, or NumPy internals):

* 1, 2, 4, 5, 49: importing, version, configuration, memory size, ``np.info``, print options;
* 17, 20, 26 (its Python ``sum``), 32's scalar form, 48: expressions on Python/NumPy scalars only, ``iinfo``
  and ``finfo`` (26 runs as ``np.sum(np.arange(5), -1)``, 32 on an array);
* 23, 46's and 51's structured dtypes, 73's and 96's record/void views, 91 (record arrays): ``dtype`` records;
* 33, 34: ``datetime64`` (shardarray has no datetime dtypes);
* 43 (``flags.writeable``), 63 and 85 (``ndarray`` subclasses): NumPy's memory and class internals;
* 54: reading a text file (``np.genfromtxt``); 52's SciPy ``cdist`` (SciPy's, not NumPy's);
* 62 (``np.nditer``), 76's, 81's and 84's ``as_strided``: NumPy's iterator and strides (their
  ``sliding_window_view`` solutions run);
* 88 (the Game of Life): ``Z[1:-1, 1:-1][birth | survive] = 1`` writes through a view into ``Z``; a
  getitem result here is a copy (as JAX's), which refuses the write with ``sa.ArgumentError`` (it was lost
  silently before round 16; ``tests/test_fuzz16_followups.py``);
* 92's ``%timeit``: timing (its three expressions run).

What the exercises needed, tested beyond their inputs below: ``np.emath`` (it ran ``xp.sqrt``, so a negative
number gave NaN where NumPy gives a complex root), ``np.array``/``asanyarray``/``ascontiguousarray``/
``fromiter``/``fromfunction`` with ``like=``, ``x.flat``, ``xp.indices``, ``xp.unpackbits``/``packbits`` and a
0-d array endpoint of ``xp.linspace``.
"""

from __future__ import annotations

import numpy as np
import pytest
from clients import Book, positional, values
from clients import mesh as mesh  # (the fixture: a 2x2 mesh, the default one of xp.asarray)
from fuzzing import cached_meshes, fuzz
from helpers import layouts
from hypothesis import given
from hypothesis import strategies as st
from numpy100_cases import CASES

import shardarray as sa
import shardarray.array_api as xp

#: the typed error and a regex of what its message says to do
REFUSED: dict[str, tuple[type[Exception], str]] = {
    "66": (sa.DTypeError, r"xp\.asarray"),
    "80": (sa.DTypeError, r"xp\.asarray"),
}

#: documented gathers: the determinant of a general (not positive definite) matrix split over a mesh axis
#: gathers the matrix (``ReplicatedFallbackWarning``, a ``GatherWarning`` naming its bytes)
GATHERS = {"47": "det"}

#: the creation functions are the mesh's (``clients.OnMesh``: ``like=``, or ``xp.linspace``/``xp.indices``); every
#: float result to 1e-10 (float32 too)
BOOK = Book(CASES, refused=REFUSED, gathers=GATHERS, tol=(1e-10, 1e-12))


@pytest.mark.parametrize("name", BOOK.params())
@pytest.mark.usefixtures("mesh")
def test_exercise_matches_numpy(name):
    BOOK.run_on_2x2(name)


# ---------------------------------------------------------------- the counterparts the exercises needed


def _same(got, want, label=""):
    got, want = values(got), np.asarray(want)
    assert (got.dtype, got.shape) == (want.dtype, want.shape), (label, got.dtype, got.shape, want.dtype, want.shape)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, equal_nan=True, err_msg=label)


EMATH_DATA = [
    np.array([-4.0, 0.25, 9.0]),
    np.array([0.5, 4.0]),
    np.array([-4, 4, 7], dtype=np.int8),
    np.array([4, 9], dtype=np.uint16),
    np.array([-0.5, 2.0, 0.0], dtype=np.float32),
    np.array([1 + 1j, -2 + 0j]),
]


@pytest.mark.parametrize("data", EMATH_DATA, ids=lambda a: str(a.dtype))
@pytest.mark.usefixtures("mesh")
def test_emath_gives_numpy_complex_results(data):
    x = xp.asarray(data)
    with np.errstate(all="ignore"):
        for f in ("sqrt", "log", "log2", "log10", "arccos", "arcsin", "arctanh"):
            _same(getattr(np.emath, f)(x), getattr(np.emath, f)(data), f)
        for n in (2, -2, np.float32(3)):
            _same(np.emath.logn(n, x), np.emath.logn(n, data), f"logn {n!r}")
        for p in (2, -2, 0.5):
            _same(np.emath.power(x, p), np.emath.power(data, p), f"power {p!r}")
        _same(
            np.emath.power(x, xp.asarray(np.arange(-1, data.size - 1))),
            np.emath.power(data, np.arange(-1, data.size - 1)),
        )


@pytest.mark.usefixtures("mesh")
def test_creation_with_like_makes_positional_arrays():
    ref = xp.asarray(np.zeros(2))
    cases = [
        (lambda m: m.array([[1, 2], [3, 4]], **m.kw), 1),
        (lambda m: m.array([1.5, 2.0], dtype=np.float32, ndmin=3, **m.kw), 1),
        (lambda m: m.asanyarray([1, 2, 3], **m.kw), 1),
        (lambda m: m.ascontiguousarray([[1.0], [2.0]], **m.kw), 1),
        (lambda m: m.asfortranarray([1, 2], **m.kw), 1),
        (lambda m: m.fromiter((k * k for k in range(7)), dtype=np.int32, **m.kw), 1),
        (lambda m: m.fromfunction(lambda i, j: i * 10 + j, (5, 3), dtype=np.int64, **m.kw), 1),
        (lambda m: m.fromfunction(lambda i, j: i >= j, (4, 4), **m.kw), 1),
    ]

    class Mod:
        def __init__(self, kw):
            self.kw = kw

        def __getattr__(self, name):
            return getattr(np, name)

    for k, (make, _) in enumerate(cases):
        got = make(Mod({"like": ref}))
        assert isinstance(got, xp.Array), (k, type(got))
        _same(got, make(Mod({})), f"case {k}")
    with pytest.raises(sa.ArgumentError, match="order"):
        np.array([1, 2], order="F", like=ref)


@pytest.mark.usefixtures("mesh")
def test_flat_reads_and_writes_as_numpy():
    data = np.arange(15.0).reshape(5, 3)
    x, want = xp.asarray(data), data.copy()
    for key in (4, -1, slice(2, 11, 3), [0, 14, 7]):
        _same(x.flat[key], want.flat[key], repr(key))
    _same(x.flat[xp.argmin(xp.abs(x - 6.2))], want.flat[np.abs(want - 6.2).argmin()])
    for key, v in ((3, -1.0), ([0, 5], 9.0), (slice(-2, None), 7.0), (np.array([1]), 100.0)):
        x.flat[key] = v
        want.flat[key] = v
    x.flat[xp.asarray(np.array([2, 6]))] = xp.asarray(np.array([-5.0, -6.0]))
    want.flat[[2, 6]] = [-5.0, -6.0]
    _same(x, want)
    assert len(x.flat) == 15 and [float(v) for v in x.flat] == want.ravel().tolist()


@pytest.mark.usefixtures("mesh")
def test_linspace_takes_0d_array_endpoints():
    r = xp.asarray(np.array([0.5, 3.0, 2.0], dtype=np.float32))
    _same(xp.linspace(0, r.max(), 7), np.linspace(0, np.float32(3.0), 7))
    _same(
        xp.linspace(np.array(1.0), xp.asarray(np.array(-2)), 4, endpoint=False), np.linspace(1.0, -2, 4, endpoint=False)
    )


@fuzz(30)
@given(data=st.data(), on=cached_meshes())
def test_unpackbits_packbits_match_numpy(data, on):
    shape = data.draw(st.lists(st.integers(0, 5), min_size=1, max_size=3).map(tuple), label="shape")
    dims = tuple(f"dim{k}" for k in range(len(shape)))
    lay = data.draw(layouts(on, dims), label="layout")
    axis = data.draw(st.none() | st.integers(-len(shape), len(shape) - 1), label="axis")
    bitorder = data.draw(st.sampled_from(["big", "little"]), label="bitorder")
    rng = np.random.default_rng(len(shape) + sum(shape))
    v = rng.integers(0, 256, shape).astype(np.uint8)
    n = 8 * (v.size if axis is None else shape[axis])
    count = data.draw(st.none() | st.integers(-n, n + 9), label="count") if n else None
    _same(xp.unpackbits(positional(v, on, lay), axis=axis, count=count, bitorder=bitorder),
          np.unpackbits(v, axis=axis, count=count, bitorder=bitorder), "unpackbits")  # fmt: skip
    b = rng.integers(0, 3, shape).astype(data.draw(st.sampled_from([np.int64, np.uint8, np.bool_]), label="dtype"))
    _same(np.packbits(positional(b, on, lay), axis=axis, bitorder=bitorder),
          np.packbits(b, axis=axis, bitorder=bitorder), "packbits")  # fmt: skip


@fuzz(25)
@given(data=st.data(), on=cached_meshes())
def test_indices_matches_numpy(data, on):
    shape = data.draw(st.lists(st.integers(0, 5), max_size=3).map(tuple), label="shape")
    dtype = data.draw(st.sampled_from([int, np.int32, np.float64]), label="dtype")
    sparse = data.draw(st.booleans(), label="sparse")
    got, want = xp.indices(shape, dtype=dtype, sparse=sparse, device=on), np.indices(shape, dtype, sparse)
    for g, w in zip(got, want) if sparse else [(got, want)]:
        assert isinstance(g, xp.Array) and g.mesh is on
        _same(g, w)
    assert len(got) == len(want)


@pytest.mark.usefixtures("mesh")
def test_string_functions_do_not_run_numeric_namesakes():
    """``np.char.equal`` and ``np.strings.multiply`` are string operations, not ``xp.equal``/``xp.multiply``:
    NumPy's TypeError, as NumPy raises for numbers."""
    x = xp.asarray(np.array([1, 2, 3]))
    for call in (lambda: np.char.equal(x, x), lambda: np.char.less(x, x), lambda: np.strings.multiply(x, 2)):
        with pytest.raises(TypeError):
            call()
