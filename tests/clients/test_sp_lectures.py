"""The Scientific Python Lectures' NumPy chapter (1.3, "NumPy: creating and manipulating numerical data",
lectures.scientific-python.org) on positional arrays.

Each example is a function of a NumPy-like module ``np_`` and its inputs (``sp_lectures_cases.py``). It runs once on
NumPy and once on a 2x2 mesh: the inputs are ``xp.asarray(...)`` (axis k split over mesh axis k; the sizes after
``@`` and the ``_odd`` inputs give uneven blocks), ``np_`` is ``numpy`` except for the creation functions, which make
arrays of the mesh with NEP 35's ``like=`` (``np.zeros``, ``np.arange``, ``np.array``...; ``xp.linspace`` for
``np.linspace``). Everything else is NumPy's own function, method, ufunc or operator, dispatched through
``__array_function__``/``__array_ufunc__``; the results (gathered value, dtype, shape; an array where NumPy gives
one) must be NumPy's, and nothing may warn ``sa.GatherWarning``.

The classes of what does not match (the tables below the cases):

* (a) a shardarray gap: ``XFAILS``, ``xfail(strict=True)`` naming the reproducer, so that a fix flips it. The
  four this check found are fixed: a tuple or a ``range`` inside an index (the fancy indexing figure's
  ``a[(0, 1, 2, 3, 4), (1, 2, 3, 4, 5)]``, the face's ``face[range(400), range(400)] = 255``), ``ndarray.resize``
  (in place), ``np.roots`` (``poly1d.roots``).
* (b) refused by design, run (``REFUSED``: the typed error and its hint): string arrays (shardarray's dtypes are
  numbers and bool).
* (b) by design, run with what it says (``WARNS``): ``np.linalg.eig`` of a split matrix (no distributed algorithm:
  it gathers each matrix, warning ``ReplicatedFallbackWarning`` with the bytes; the values are NumPy's).
* (b) host results by design, run (``HOST``: values compared, NumPy arrays allowed): ``np.ma`` and
  ``np.polynomial``'s classes are NumPy's host types, which read an array whole through ``__array__`` (the explicit
  gather ``np.asarray(x)`` is); ``np.ogrid`` makes NumPy arrays (no ``like=``).
* (b) by design, not run (``SKIPPED``): writes through a view (``b = a[::2]; b[0] = 12``, a ``reshape`` or a
  ``transpose`` written into: a getitem result is a copy here, as JAX's; a write into one that is then freed unread
  warns ``sa.CopyWriteWarning``).
* (c) not applicable, not written: ``np.random``'s host generators (their arrays are the inputs here),
  ``np.loadtxt``/``np.save`` and the image files, plots, ``%timeit``, ``print``, ``np.iinfo``/``np.finfo`` and
  NumPy scalars (host), structured dtypes (refused, as test_pdsh.py's 02.09 checks), ``np.lookfor``/``np.info``.

``test_lectures_example_on_meshes_and_layouts`` runs the examples that take inputs on the other test meshes (1, 4,
2x2x2, 3x2) with random layouts (empty blocks where a dim is shorter than its mesh axes).
"""

from __future__ import annotations

import numpy as np
import pytest
import sp_lectures_cases as sc
from clients import Book, sized
from clients import mesh as mesh  # (the fixture: a 2x2 mesh, the default one of xp.asarray)
from fuzzing import cached_meshes, fuzz
from hypothesis import given
from hypothesis import strategies as st

import shardarray as sa
from shardarray.linalg import ReplicatedFallbackWarning

#: name -> (the example's function, its inputs); the names say the section, ``@n`` a size, ``_odd`` odd sizes
CASES = {
    "1.3.1/creation_manual": (sc.creation_manual, []),
    "1.3.1/creation_functions": (sc.creation_functions, []),
    "1.3.1/creation_exercise": (sc.creation_exercise, []),
    "1.3.1/dtypes_basic": (sc.dtypes_basic, []),
    "1.3.1/dtypes_strings": (sc.dtypes_strings, []),
    "1.3.1/indexing": (sc.indexing_basic, []),
    "1.3.1/slicing@10": (sized(sc.slicing, 10), []),
    "1.3.1/slicing@13": (sized(sc.slicing, 13), []),
    "1.3.1/slicing_figure": (sc.slicing_figure, []),
    "1.3.1/views_write": (sc.views_write, []),
    "1.3.1/copies": (sc.copies, []),
    "1.3.1/sieve@100": (sized(sc.sieve, 100), []),
    "1.3.1/sieve@101": (sized(sc.sieve, 101), []),
    "1.3.1/sieve_of@53": (sc.sieve_of, [np.ones(53, dtype=bool)]),
    "1.3.1/fancy_mask": (sc.fancy_mask, [sc.RAND15]),
    "1.3.1/fancy_integers": (sc.fancy_integers, []),
    "1.3.1/fancy_figure": (sc.fancy_figure, []),
    "1.3.1/fancy_writes": (sc.fancy_writes, []),
    "1.3.1/fancy_range": (sc.fancy_range, []),
    "1.3.2/elementwise": (sc.elementwise, []),
    "1.3.2/comparisons": (sc.comparisons, []),
    "1.3.2/transcendental": (sc.transcendental, []),
    "1.3.2/shape_mismatch": (sc.shape_mismatch, []),
    "1.3.2/transposition": (sc.transposition, []),
    "1.3.2/reductions": (sc.reductions, [sc.RAND222]),
    "1.3.2/extrema_logical": (sc.extrema_logical, []),
    "1.3.2/statistics": (sc.statistics, []),
    "1.3.2/statistics_of": (sc.statistics_of, [sc.STATS_X, sc.STATS_Y]),
    "1.3.2/population_data": (sc.population_data, [sc.POPULATIONS]),
    "1.3.2/population_exercise": (sc.population_exercise, [sc.POPULATIONS]),
    "1.3.2/random_walk": (sc.random_walk, [sc.STEPS]),
    "1.3.2/random_walk_odd": (sc.random_walk, [sc.STEPS_ODD]),
    "1.3.2/broadcasting": (sc.broadcasting, []),
    "1.3.2/city_distances": (sc.city_distances, []),
    "1.3.2/distances_of": (sc.distances_of, [sc.MILEPOSTS]),
    "1.3.2/distances_of_odd": (sc.distances_of, [sc.MILEPOSTS[:7]]),
    "1.3.2/ogrid_distances": (sc.ogrid_distances, []),
    "1.3.2/flatten_reshape": (sc.shape_flatten_reshape, []),
    "1.3.2/reshape_view": (sc.shape_reshape_view, []),
    "1.3.2/transpose": (sc.shape_transpose, []),
    "1.3.2/transpose_view": (sc.shape_transpose_view, []),
    "1.3.2/resize": (sc.shape_resize, []),
    "1.3.2/shape_exercise": (sc.shape_exercise, []),
    "1.3.2/sorting": (sc.sorting, []),
    "1.3.2/sorting_of": (sc.sorting_of, [sc.SORT_2x3]),
    "1.3.2/sorting_exercise": (sc.sorting_exercise, [sc.SORT_5x7]),
    "1.3.2/sorting_of_odd": (sc.sorting_of, [sc.SORT_5x7]),
    "1.3.3/casting": (sc.casting, []),
    "1.3.3/sized_dtypes": (sc.sized_dtypes, []),
    "1.3.3/masked_arrays": (sc.masked_arrays, []),
    "1.3.3/poly1d": (sc.poly1d, []),
    "1.3.3/polyfit": (sc.polyfit, [sc.POLY_NOISE]),
    "1.3.3/polynomial_classes": (sc.polynomial_classes, [sc.CHEB_NOISE]),
    "1.3.5/array_manipulations": (sc.array_manipulations, [sc.RAND10x3]),
    "1.3.5/array_manipulations_odd": (sc.array_manipulations, [sc.RAND11x3]),
    "1.3.5/picture": (sc.picture, [sc.FACE]),
    "1.3.5/picture_odd": (sc.picture, [sc.FACE_ODD]),
    "1.3.5/picture_diagonal": (sc.picture_diagonal, [sc.FACE_ODD]),
    "1.3.5/mandelbrot@20x20": (sized(sc.mandelbrot, 20, 20), []),
    "1.3.5/mandelbrot@21x19": (sized(sc.mandelbrot, 21, 19), []),
    "1.3.5/mandelbrot_of": (sc.mandelbrot_of, [np.linspace(-2, 1, 13), np.linspace(-1.5, 1.5, 9)]),
    "1.3.5/markov_power": (sc.markov_power, [sc.MARKOV_P, sc.MARKOV_P0]),
    "1.3.5/markov_eig": (sc.markov_eig, [sc.MARKOV_P, sc.MARKOV_P0]),
    "1.3.5/crude_integral@24x12x6": (sized(sc.crude_integral, 24, 12, 6), []),
    "1.3.5/crude_integral@25x13x7": (sized(sc.crude_integral, 25, 13, 7), []),
    "1.3.5/crude_integral_of": (
        sc.crude_integral_of,
        [np.linspace(0, 1, 24), np.linspace(0, 1, 12), np.linspace(0, 1, 6)],
    ),
}

#: (b) refused by design, run: the typed error and what its message says
REFUSED: dict[str, tuple[type[Exception], str]] = {
    # string arrays: shardarray's dtypes are numbers and bool; the message says what to give
    "1.3.1/dtypes_strings": (sa.DTypeError, "give numbers"),
}

#: (b) by design, run: the warning the example must give (its values are still NumPy's)
WARNS: dict[str, type[Warning]] = {
    # np.linalg.eig has no distributed algorithm: a split matrix is gathered whole, with the bytes in the warning
    "1.3.5/markov_eig": ReplicatedFallbackWarning,
}

#: (b) host results by design, run: values compared, NumPy arrays allowed where NumPy gives arrays
HOST = frozenset(
    {
        "1.3.2/ogrid_distances",  # np.ogrid[0:5, 0:5] is NumPy's index trick (no like=): host arrays
        "1.3.3/masked_arrays",  # np.ma.array(x) is NumPy's host subclass, reading x through __array__
        "1.3.3/polynomial_classes",  # np.polynomial's classes keep NumPy coefficients (np.array of x)
    }
)

#: (b) by design, not run: the reason
_VIEW = (
    "(b) a write into a getitem result does not reach the array: a getitem is a copy here, as JAX's "
    "(docs/guides/numpy_style.md); freed unread, the copy warns sa.CopyWriteWarning"
)
SKIPPED = {
    "1.3.1/views_write": f"{_VIEW}; a[::2] = ... writes it (np.may_share_memory(a, a[::2]) is False here)",
    "1.3.2/reshape_view": f"{_VIEW}; a reshape is a new array too: a[0, 0] = 99 writes it",
    "1.3.2/transpose_view": f"{_VIEW}; a transpose is a new array too: a[0, 2, 1] = -1 writes it",
}

#: (a) shardarray gaps: xfail(strict=True) naming the reproducer, so that a fix flips them
XFAILS: dict[str, str] = {}  # (none left: a tuple or range inside an index, x.resize and np.roots came in round 16)


BOOK = Book(CASES, refused=REFUSED, skipped=SKIPPED, xfails=XFAILS, warns=WARNS, host=HOST)


@pytest.mark.parametrize("name", BOOK.params())
@pytest.mark.usefixtures("mesh")
def test_lectures_example_matches_numpy(name):
    BOOK.run_on_2x2(name)


@fuzz(60)
@given(data=st.data(), on=cached_meshes())
def test_lectures_example_on_meshes_and_layouts(data, on):
    """On the other meshes a ``WARNS`` case may warn (its inputs may be unsplit there) and need not."""
    BOOK.run_laid_out(data, on, split=False)
