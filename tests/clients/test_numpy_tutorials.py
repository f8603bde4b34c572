"""The official NumPy tutorials (github.com/numpy/numpy-tutorials, ``content/*.md``) on positional arrays.

Each tutorial section's array code is a function of a NumPy-like module ``np_`` and its inputs
(``numpy_tutorials_cases.py``). It runs once on NumPy and once on a 2x2 mesh: the inputs are
``xp.asarray(...)`` (axis k split over mesh axis k, uneven blocks where the sizes are odd), ``np_`` is
``numpy`` except for the creation functions, which make arrays of the mesh with NEP 35's ``like=`` (``np.zeros``,
``np.arange``, ``np.array``...; ``xp.linspace`` for ``np.linspace``). Everything else is NumPy's own function,
method or operator, dispatched through ``__array_function__``/``__array_ufunc__``; the results (gathered value,
dtype, shape; an array where NumPy gives one) must be NumPy's, and nothing gathers without the documented
``sa.GatherWarning``.

Per tutorial (what the sections need beyond the cases, in the tests below):

* air quality: runs as written, except ``np.vectorize(compute_indices)``: a Python function per element,
  which NumPy runs on ``np.asarray`` of its argument (the explicit gather: a NumPy result), so the case
  computes the same sub-indices with ``np.searchsorted``/``np.take``; ``datetime64`` dates are hour numbers
  (no datetime dtypes); SciPy's t distribution is left out.
* Moore's law: ``np.polynomial.Polynomial.fit`` converts its data with ``np.asarray`` (a gather: NumPy
  coefficients, the same fit), so the case fits by ``np.linalg.lstsq``; ``np.savez``/``np.savetxt`` of the
  results: see save/load below.
* fractals: runs as written (24x24 planes, fewer iterations); a ``Polynomial`` object called on an array
  converts it with ``np.asarray`` (a NumPy result, which the masked write then refuses to mix), so Newton's
  polynomial is evaluated by ``np.polynomial.polynomial.polyval`` of its coefficients, which computes on
  the mesh.
* static equilibrium: runs as written (the solve of the prose's equations added: ``np.linalg.solve`` of a
  general matrix split over the mesh gathers it, the documented ``ReplicatedFallbackWarning``).
* SVD: ``img_array @ [0.2126, 0.7152, 0.0722]`` (a Python list beside a distributed array) is refused
  (``sa.DTypeError`` naming ``xp.asarray`` from ``np.matmul``; Python's TypeError from the operator); the
  weights are an array here. ``np.fill_diagonal`` is a counterpart added for this tutorial;
  ``np.fill_diagonal(Sigma[j, :, :], ...)`` writes through a view, and a getitem here is a copy (as JAX's:
  that write would be lost), so that case fills each ``Sigma[j]`` whole and writes it back. The SVD of a
  matrix split over the mesh gathers each matrix (the documented ``ReplicatedFallbackWarning``).
* X-ray: the NumPy parts (SciPy's ``ndimage`` filters are left out; ``np.gradient`` stands for the Sobel
  filter, ``np.histogram`` for ``ndimage.histogram``).
* MNIST: the per-image training loop and the test evaluation, on the same seeds (synthetic images).
* masked arrays: ``np.ma`` has no counterpart; its functions convert with ``np.asarray`` (a NumPy masked
  array of the gathered values). The case computes the tutorial's masked sums on the mesh with ``where=``.
* save/load: ``np.save``/``np.savez``/``np.savez_compressed``/``np.savetxt`` of a distributed array raise
  ``sa.DTypeError`` (a TypeError; nothing is written or gathered) naming the ways: ``sa.io.write_npy`` (no
  gather; ``np.load`` and ``sa.io.read_npy`` read the file) and ``np.save(f, x.numpy())``.
"""

from __future__ import annotations

import io
import warnings

import numpy as np
import numpy_tutorials_cases as tc
import pytest
from clients import Book, leaves, positional, same, values
from clients import mesh as mesh  # (the fixture: a 2x2 mesh, the default one of xp.asarray)
from fuzzing import cached_meshes, fuzz
from helpers import layouts
from hypothesis import given
from hypothesis import strategies as st

import shardarray as sa
import shardarray.array_api as xp

_POLLUTANTS = tc.air_averages(np, tc.AIR)[3]  # (the 24-hour and 8-hour means of the section before)
_AQI = tc.air_quality_index(np, _POLLUTANTS)[1]

#: name -> (the section's function, its inputs); the names say the tutorial and the section
CASES = {
    "air_quality/averages": (tc.air_averages, [tc.AIR]),
    "air_quality/aqi": (tc.air_quality_index, [_POLLUTANTS]),
    "air_quality/t_test": (tc.air_lockdown, [_AQI, np.array([0, 3, 1, 5, 7, 8, 2, 10])]),
    "mooreslaw/regression": (tc.moore_regression, [tc.TRANSISTORS]),
    "mooreslaw/2017": (tc.moore_2017, [tc.TRANSISTORS]),
    "fractals/warmup": (tc.fractal_iterations, [np.array([0.4 + 0.4j, 0.41 + 0.4j, 0.4 + 0.41j])]),
    "fractals/julia": (tc.julia_sets, []),
    "fractals/mandelbrot": (tc.mandelbrot, []),
    "fractals/newton_and_own": (tc.newton_fractals, []),
    "static_equilibrium/forces": (tc.equilibrium_forces, [np.array([1, 0, 0]), np.array([0, 1, 0])]),
    "static_equilibrium/beam": (
        tc.equilibrium_beam,
        [np.array([[0, 0, 0], [0, 3, 0], [0, 6, 0], [1.5, 0, -3], [1.5, 0, 3], [-3, 0, 2]])],
    ),
    "svd/gray": (tc.svd_gray, [tc.IMAGE, tc.GRAY_WEIGHTS]),
    "svd/color": (tc.svd_color, [tc.IMAGE]),
    "x_ray/edges": (tc.xray_edges, [tc.XRAYS]),
    "x_ray/statistics": (tc.xray_statistics, [tc.XRAYS]),
    "mnist/training": (
        tc.mnist_training,
        [
            tc.MNIST_TRAIN,
            tc.MNIST_TRAIN_LABELS,
            tc.MNIST_TEST,
            tc.MNIST_TEST_LABELS,
            tc.MNIST_W1,
            tc.MNIST_W2,
            tc.MNIST_DROPOUT,
        ],
    ),
    "ma/without_masked_arrays": (tc.ma_without_masked_arrays, [tc.CASES_BY_LOCATION]),
}

#: the documented gathers (``ReplicatedFallbackWarning``): the SVD of matrices split over the mesh, the solve
#: of a general (not positive definite) system split over the mesh
GATHERS = {"svd/gray": "svd", "svd/color": "svd", "static_equilibrium/beam": "solve"}


#: every float and complex result to ``(rtol, atol)``
TOL = (1e-9, 1e-9)
#: the creation functions are the mesh's (``clients.OnMesh``: ``like=``, or ``xp.linspace``)
BOOK = Book(CASES, gathers=GATHERS, tol=TOL)


def _same(got, want, label=""):
    same(got, want, label, tol=TOL)


@pytest.mark.parametrize("name", BOOK.params())
@pytest.mark.usefixtures("mesh")
def test_tutorial_section_matches_numpy(name):
    BOOK.run_on_2x2(name)


# ---------------------------------------------------------------- what the tutorials needed, and their refusals


@fuzz(40)
@given(data=st.data(), on=cached_meshes())
def test_fill_diagonal_matches_numpy(data, on):
    """tutorial-svd.md, "Operations on an axis": ``np.fill_diagonal(Sigma, s)`` had no implementation
    (NumPy's TypeError); it writes in place as NumPy's, on split arrays (``val`` host or distributed)."""
    if data.draw(st.booleans(), label="square n-d"):
        n = data.draw(st.integers(0, 4), label="n")
        shape = (n,) * data.draw(st.integers(2, 3), label="ndim")
    else:
        shape = tuple(data.draw(st.lists(st.integers(0, 6), min_size=2, max_size=2), label="shape"))
    dims = tuple(f"dim{k}" for k in range(len(shape)))
    lay = data.draw(layouts(on, dims), label="layout")
    dtype = data.draw(st.sampled_from([np.float64, np.int32, np.complex128, np.bool_]), label="dtype")
    rng = np.random.default_rng(sum(shape) + len(shape))
    a = (rng.standard_normal(shape) * 4).astype(dtype)
    k = data.draw(st.integers(0, 5), label="values")
    host = (rng.standard_normal(k) * 3 + 0.5).astype(np.float64 if dtype != np.complex128 else dtype)
    val = data.draw(st.sampled_from(["scalar", "list", "array"]), label="val kind") if k else "list"
    val_host = {"scalar": host[:1].item() if k else 1.5, "list": host.tolist(), "array": host}[val]
    val_ours = positional(host, on, {}) if val == "array" else val_host
    wrap = data.draw(st.booleans(), label="wrap")
    want = a.copy()
    np.fill_diagonal(want, val_host, wrap=wrap)
    x = positional(a, on, lay)
    assert np.fill_diagonal(x, val_ours, wrap=wrap) is None
    _same(x, want)


@pytest.mark.usefixtures("mesh")
def test_fill_diagonal_refuses_as_numpy():
    """NumPy's ValueErrors (``sa.DimensionError``): a 1-d array, an n-d one of unequal sizes."""
    with pytest.raises(sa.DimensionError, match=r"at least 2-d.*\(3,\)"):
        np.fill_diagonal(xp.asarray(np.zeros(3)), 1.0)
    with pytest.raises(sa.DimensionError, match=r"sizes.*equal.*\(3, 3, 2\)"):
        np.fill_diagonal(xp.asarray(np.zeros((3, 3, 2))), 1.0)


@pytest.mark.usefixtures("mesh")
def test_svd_list_operand_is_refused():
    """tutorial-svd.md, "Shape, axis and array properties": ``img_array @ [0.2126, 0.7152, 0.0722]``: a Python
    list beside a distributed array is refused (host data is not copied onto the mesh implicitly, as CuPy and
    JAX). ``np.matmul``'s refusal named a 0-d operand ("has 0 dims", a wrong reason); it names the list and
    ``xp.asarray`` now, as ``np.dot``'s."""
    img = xp.asarray(tc.IMAGE / 255)
    for call in (np.matmul, np.vecdot):
        with pytest.raises(sa.DTypeError, match=r"Python list \(3 items\).*xp\.asarray"):
            call(img, [0.2126, 0.7152, 0.0722])
    with pytest.raises(TypeError):  # (the operator's TypeError: Python's, without the hint)
        img @ [0.2126, 0.7152, 0.0722]
    _same(img @ xp.asarray(tc.GRAY_WEIGHTS), tc.IMAGE / 255 @ tc.GRAY_WEIGHTS)
    s, vt = xp.asarray(np.ones(12)), xp.asarray(np.ones((16, 16)))
    with pytest.raises(ValueError, match=r"12 with 16"):  # ("s @ Vt": the tutorial's ValueError, raises-exception)
        s @ vt


@pytest.mark.usefixtures("mesh")
def test_save_load_refuses_numpy_writers(tmp_path):
    """save-load-arrays.md: ``np.save``/``np.savez``/``np.savez_compressed``/``np.savetxt`` of distributed
    arrays (positional and named) raise ``sa.DTypeError`` (a TypeError, as NumPy's own refusal was, which named
    no way out) naming ``sa.io.write_npy`` and the explicit gather; nothing is written. The two ways then give
    the tutorial's files: ``np.load`` reads both, ``np.block`` of the columns as the tutorial's."""
    x = xp.asarray(np.arange(10))
    y = x**2
    named = sa.asarray(np.arange(10.0), dims=("i",), mesh=x.mesh)
    for a in (x, named):
        for write in (
            lambda a=a: np.save(tmp_path / "x.npy", a),
            lambda a=a: np.savez(tmp_path / "x_y-squared.npz", x_axis=a, y_axis=y),
            lambda a=a: np.savez_compressed(io.BytesIO(), a),
            lambda a=a: np.savetxt(tmp_path / "x_y-squared.csv", a),
        ):
            with pytest.raises(sa.DTypeError, match=r"sa\.io\.write_npy\(path, x\).*\(file, x\.numpy\(\)\)"):
                write()
    assert list(tmp_path.iterdir()) == []
    path = sa.io.write_npy(tmp_path / "x.npy", x)
    np.testing.assert_array_equal(np.load(path), np.arange(10))
    np.savez(tmp_path / "x_y-squared.npz", x_axis=x.numpy(), y_axis=y.numpy())
    load_xy = np.load(tmp_path / "x_y-squared.npz")
    assert load_xy.files == ["x_axis", "y_axis"]
    back_x, back_y = xp.asarray(load_xy["x_axis"]), xp.asarray(load_xy["y_axis"])
    out = np.block([back_x[:, np.newaxis], back_y[:, np.newaxis]])
    _same(out, np.block([np.arange(10)[:, np.newaxis], (np.arange(10) ** 2)[:, np.newaxis]]))
    _same(sa.io.read_npy(path, x.mesh), np.arange(10))


@pytest.mark.usefixtures("mesh")
def test_host_only_functions_read_the_gathered_array():
    """What has no counterpart on the mesh and reads its argument with ``np.asarray`` (the explicit gather: the
    values are NumPy's, the result a NumPy array on the host, no ``GatherWarning``): ``np.ma``'s constructors
    (tutorial-ma.md, "Missing data"), ``np.vectorize`` (tutorial-air-quality-analysis.md), ``Polynomial``
    objects and ``Polynomial.fit`` (mooreslaw-tutorial.md, tutorial-plotting-fractals.md "Newton fractals"),
    ``Generator.choice`` of an array (tutorial-air-quality-analysis.md). None gives a wrong value."""
    nbcases = np.delete(tc.CASES_BY_LOCATION, tc.TOTALS_ROW, axis=0)
    ours = xp.asarray(nbcases)
    masked, want = np.ma.masked_values(ours, -1), np.ma.masked_values(nbcases, -1)
    assert type(masked) is np.ma.MaskedArray
    np.testing.assert_array_equal(masked.mask, want.mask)
    rows = np.delete(tc.IN_COUNTRY, tc.TOTALS_ROW)
    np.testing.assert_array_equal(masked[rows].sum(axis=0), want[rows].sum(axis=0))
    got_sum = values(np.sum(ours[rows], axis=0, where=ours[rows] != -1))
    np.testing.assert_array_equal(got_sum, want[rows].sum(axis=0).filled(0))

    col = _POLLUTANTS[:, 0]
    vcompute = np.vectorize(tc.compute_indices)
    got = vcompute("PM2.5", xp.asarray(col))
    assert type(got) is np.ndarray
    np.testing.assert_allclose(got, vcompute("PM2.5", col), rtol=1e-12)

    year, count = tc.TRANSISTORS[:, 1], tc.TRANSISTORS[:, 0]
    fit = np.polynomial.Polynomial.fit(xp.asarray(year), np.log(xp.asarray(count)), deg=1).convert()
    np.testing.assert_allclose(fit.coef, np.polynomial.Polynomial.fit(year, np.log(count), deg=1).convert().coef)
    z = tc.fractal_mesh(np, 6).ravel()
    np.testing.assert_allclose(tc.NEWTON_P(xp.asarray(z)), tc.NEWTON_P(z), rtol=1e-12)
    picked = np.random.default_rng(5).choice(xp.asarray(col), size=4, replace=False)
    np.testing.assert_array_equal(picked, np.random.default_rng(5).choice(col, size=4, replace=False))


def _outcome(call):
    """``call()``'s result and the RankWarnings it raised, or the exception it raised."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out = call()
        except Exception as e:
            return e, []
    return out, [w for w in caught if issubclass(w.category, np.exceptions.RankWarning)]


@fuzz(40)
@given(data=st.data(), on=cached_meshes())
def test_polyfit_matches_numpy(data, on):
    """mooreslaw-tutorial.md, "Calculating the historical growth curve": the degree-1 least squares fit of
    ``log(count)`` by year; ``np.polyfit`` had no implementation (NumPy's TypeError). NumPy's results, dtypes and
    ``RankWarning`` (``w=``, ``full=``, ``cov=``, a 2-d ``y``, too few points for the degree)."""
    n, deg = data.draw(st.integers(1, 7), label="n"), data.draw(st.integers(0, 3), label="deg")
    kw = data.draw(
        st.sampled_from([{}, {"full": True}, {"cov": True}, {"cov": "unscaled"}, {"rcond": 1e-3}]), label="kw"
    )
    n = max(n, deg + 1) if "cov" in kw else n  # (the covariance of a short rank is the inverse of a singular matrix)
    cols = data.draw(st.sampled_from([None, 1, 2]), label="y columns")
    dtype = data.draw(st.sampled_from([np.float64, np.float32, np.int64]), label="dtype")
    rng = np.random.default_rng(n * 10 + deg)
    x = (rng.permutation(np.arange(-3, 5))[:n] if dtype == np.int64 else rng.uniform(-2, 2, n)).astype(dtype)
    y = (rng.standard_normal(n if cols is None else (n, cols)) * 3).astype(dtype)
    w = rng.uniform(0.5, 2.0, n) if data.draw(st.booleans(), label="w") else None
    lay_x, lay_y = data.draw(layouts(on, ("dim0",)), label="lay x"), data.draw(layouts(on, ("dim0", "dim1")[: y.ndim]))
    want, want_warned = _outcome(lambda: np.polyfit(x, y, deg, w=w, **kw))
    got, warned = _outcome(
        lambda: np.polyfit(
            positional(x, on, lay_x), positional(y, on, lay_y), deg, w=None if w is None else positional(w, on, {}),
            **kw,
        )
    )  # fmt: skip
    if isinstance(want, Exception):
        assert isinstance(got, sa.ShardArrayError) and isinstance(got, ValueError), (want, got)
        return
    assert not isinstance(got, Exception), got
    assert bool(warned) == bool(want_warned), (warned, want_warned)
    tol = 1e-4 if dtype == np.float32 else 1e-7
    for k, (g, v) in enumerate(zip(leaves(got), leaves(want), strict=True)):
        g, v = np.asarray(values(g)), np.asarray(v)
        assert (g.dtype, g.shape) == (v.dtype, v.shape), (k, g.dtype, g.shape, v.dtype, v.shape)
        np.testing.assert_allclose(g, v, rtol=tol, atol=tol, err_msg=f"result {k}")
